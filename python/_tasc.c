/* _tasc.c: the C extension of the Python package `tasc` (python/tasc/__init__.py), written with the
 * CPython C API over the public C API alone (<tasc.h>, linked from libtasc.a).
 *
 * Handles travel as capsules ("tasc.model", "tasc.rules") whose destructors free them; the Python
 * layer wraps them in classes. Arrays cross by the buffer protocol, without numpy's headers: inputs
 * are read in place (float32, C-contiguous: zero copies), outputs are written into buffers the
 * caller allocated. Long calls (run, optimize, generate, verify, bench) release the GIL; the C
 * library's last error is per thread, and is read on the thread that made the call.
 * A failed call raises the exception class of its status (tasc.InputError, UsageError,
 * ResourceError, InternalError, all tasc.Error) with the library's message and `.status`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include <tasc.h>

#define MODEL_CAPSULE "tasc.model"
#define RULES_CAPSULE "tasc.rules"

static PyObject *err_base, *err_class[5]; /* [status]: 0 unused */

/* Raises the exception of status s with the library's message; returns NULL. */
static PyObject *raise_status(tasc_status s) {
    const char *msg = tasc_last_error();
    PyObject *cls = s >= TASC_ERR_INPUT && s <= TASC_ERR_INTERNAL ? err_class[s] : err_class[TASC_ERR_INTERNAL];
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    PyObject *exc = text ? PyObject_CallOneArg(cls, text) : NULL;
    Py_XDECREF(text);
    if (!exc)
        return NULL;
    PyObject *code = PyLong_FromLong((long)s);
    if (code && PyObject_SetAttrString(exc, "status", code) == 0)
        PyErr_SetObject(cls, exc);
    Py_XDECREF(code);
    Py_DECREF(exc);
    return NULL;
}

/* --- capsules ------------------------------------------------------------------------------------ */

static void model_capsule_free(PyObject *cap) { tasc_model_free(PyCapsule_GetPointer(cap, MODEL_CAPSULE)); }
static void rules_capsule_free(PyObject *cap) { tasc_rules_free(PyCapsule_GetPointer(cap, RULES_CAPSULE)); }

static PyObject *wrap_model(tasc_model *m) {
    PyObject *cap = PyCapsule_New(m, MODEL_CAPSULE, model_capsule_free);
    if (!cap)
        tasc_model_free(m);
    return cap;
}

static PyObject *wrap_rules(tasc_rules *r) {
    PyObject *cap = PyCapsule_New(r, RULES_CAPSULE, rules_capsule_free);
    if (!cap)
        tasc_rules_free(r);
    return cap;
}

/* "O&" converters: a capsule of the right kind into its pointer. */
static int conv_model(PyObject *o, void *out) {
    *(tasc_model **)out = PyCapsule_GetPointer(o, MODEL_CAPSULE);
    return *(tasc_model **)out != NULL;
}

static int conv_rules_or_none(PyObject *o, void *out) {
    if (o == Py_None) {
        *(tasc_rules **)out = NULL;
        return 1;
    }
    *(tasc_rules **)out = PyCapsule_GetPointer(o, RULES_CAPSULE);
    return *(tasc_rules **)out != NULL;
}

/* A str or None into a borrowed UTF-8 pointer (NULL for None). */
static int conv_str_or_none(PyObject *o, void *out) {
    if (o == Py_None) {
        *(const char **)out = NULL;
        return 1;
    }
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected str or None, got %.80s", Py_TYPE(o)->tp_name);
        return 0;
    }
    *(const char **)out = PyUnicode_AsUTF8(o);
    return *(const char **)out != NULL;
}

/* --- models ---------------------------------------------------------------------------------------- */

/* dims: None or {name: positive int} into the load options (names borrowed from the dict). */
static int load_dims(PyObject *dims, tasc_load_opts *o, const char ***names, int64_t **values) {
    if (dims == Py_None)
        return 0;
    if (!PyDict_Check(dims)) {
        PyErr_SetString(PyExc_TypeError, "dims must be a dict {name: int} or None");
        return -1;
    }
    Py_ssize_t n = PyDict_Size(dims), pos = 0, k = 0;
    PyObject *key, *val;
    *names = PyMem_Calloc((size_t)n + 1, sizeof **names);
    *values = PyMem_Calloc((size_t)n + 1, sizeof **values);
    if (!*names || !*values) {
        PyErr_NoMemory();
        return -1;
    }
    while (PyDict_Next(dims, &pos, &key, &val)) {
        if (!PyUnicode_Check(key) || !PyLong_Check(val)) {
            PyErr_SetString(PyExc_TypeError, "dims must map str names to int values");
            return -1;
        }
        (*names)[k] = PyUnicode_AsUTF8(key);
        (*values)[k] = PyLong_AsLongLong(val);
        if (!(*names)[k] || PyErr_Occurred())
            return -1;
        k++;
    }
    o->n_dims = (int32_t)n;
    o->dim_names = *names;
    o->dim_values = *values;
    return 0;
}

static PyObject *py_load(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "random_weights", "weights_seed", "dims", "max_elements", "allow_outside_paths",
                             NULL};
    PyObject *path = NULL, *dims = Py_None;
    int random_weights = 0, outside = 0;
    unsigned long long seed = 0;
    long long max_elements = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|pKOLp", kwlist, PyUnicode_FSConverter, &path, &random_weights, &seed,
                                     &dims, &max_elements, &outside))
        return NULL;
    tasc_load_opts o;
    tasc_load_opts_default(&o);
    o.allow_outside_paths = outside;
    o.random_weights = random_weights;
    o.weights_seed = seed;
    o.max_elements = max_elements;
    const char **names = NULL;
    int64_t *values = NULL;
    PyObject *res = NULL;
    if (load_dims(dims, &o, &names, &values) == 0) {
        tasc_model *m = NULL;
        tasc_status s;
        Py_BEGIN_ALLOW_THREADS
        s = tasc_model_load(PyBytes_AS_STRING(path), &o, &m);
        Py_END_ALLOW_THREADS
        res = s == TASC_OK ? wrap_model(m) : raise_status(s);
    }
    PyMem_Free(names);
    PyMem_Free(values);
    Py_DECREF(path);
    return res;
}

static PyObject *py_from_json(PyObject *self, PyObject *args) {
    const char *text, *where = NULL;
    if (!PyArg_ParseTuple(args, "s|z", &text, &where))
        return NULL;
    tasc_model *m = NULL;
    tasc_status s = tasc_model_from_json(text, where, &m);
    return s == TASC_OK ? wrap_model(m) : raise_status(s);
}

/* save / export_onnx: (model, path) -> None */
static PyObject *model_write(PyObject *args, tasc_status (*fn)(const tasc_model *, const char *)) {
    tasc_model *m;
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "O&O&", conv_model, &m, PyUnicode_FSConverter, &path))
        return NULL;
    tasc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = fn(m, PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (s != TASC_OK)
        return raise_status(s);
    Py_RETURN_NONE;
}

static PyObject *py_save(PyObject *self, PyObject *args) { return model_write(args, tasc_model_save); }
static PyObject *py_export_onnx(PyObject *self, PyObject *args) { return model_write(args, tasc_model_export_onnx); }

/* to_json / to_dot: (model) -> str */
static PyObject *model_text(PyObject *args, tasc_status (*fn)(const tasc_model *, char **)) {
    tasc_model *m;
    if (!PyArg_ParseTuple(args, "O&", conv_model, &m))
        return NULL;
    char *text = NULL;
    tasc_status s = fn(m, &text);
    if (s != TASC_OK)
        return raise_status(s);
    PyObject *r = PyUnicode_FromString(text);
    tasc_free(text);
    return r;
}

static PyObject *py_to_json(PyObject *self, PyObject *args) { return model_text(args, tasc_model_to_json); }
static PyObject *py_to_dot(PyObject *self, PyObject *args) { return model_text(args, tasc_model_to_dot); }

static PyObject *tensor_tuple(const tasc_tensor_info *ti) {
    PyObject *shape = PyTuple_New(ti->rank);
    if (!shape)
        return NULL;
    for (int32_t d = 0; d < ti->rank; d++)
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(ti->dims[d]));
    return Py_BuildValue("(ssN)", ti->name, ti->dtype == TASC_INT64 ? "int64" : "float32", shape);
}

/* io(model) -> (name, [(input name, dtype, shape)], [(output ...)]) */
static PyObject *py_io(PyObject *self, PyObject *args) {
    tasc_model *m;
    if (!PyArg_ParseTuple(args, "O&", conv_model, &m))
        return NULL;
    int32_t n[2] = {tasc_model_num_inputs(m), tasc_model_num_outputs(m)};
    PyObject *lists[2] = {PyList_New(n[0]), PyList_New(n[1])};
    for (int k = 0; k < 2 && lists[0] && lists[1]; k++)
        for (int32_t i = 0; i < n[k]; i++) {
            tasc_tensor_info ti;
            tasc_status s = k ? tasc_model_output(m, i, &ti) : tasc_model_input(m, i, &ti);
            PyObject *t = s == TASC_OK ? tensor_tuple(&ti) : raise_status(s);
            if (!t) {
                Py_DECREF(lists[0]);
                Py_DECREF(lists[1]);
                return NULL;
            }
            PyList_SET_ITEM(lists[k], i, t);
        }
    if (!lists[0] || !lists[1]) {
        Py_XDECREF(lists[0]);
        Py_XDECREF(lists[1]);
        return NULL;
    }
    return Py_BuildValue("(sNN)", tasc_model_name(m), lists[0], lists[1]);
}

/* stats(model) -> dict of tasc_model_stats, with op_counts {op: nodes} */
static PyObject *py_stats(PyObject *self, PyObject *args) {
    tasc_model *m;
    if (!PyArg_ParseTuple(args, "O&", conv_model, &m))
        return NULL;
    tasc_model_stats st;
    tasc_status s = tasc_model_stats_get(m, &st);
    if (s != TASC_OK)
        return raise_status(s);
    PyObject *ops = PyDict_New();
    for (int32_t k = 0; ops && k < tasc_op_count(); k++) {
        int32_t c = tasc_model_op_nodes(m, k);
        if (!c)
            continue;
        PyObject *v = PyLong_FromLong(c);
        int bad = !v || PyDict_SetItemString(ops, tasc_op_name(k), v) < 0;
        Py_XDECREF(v);
        if (bad)
            Py_CLEAR(ops);
    }
    if (!ops)
        return NULL;
    return Py_BuildValue("{s:i,s:N,s:d,s:d,s:L,s:L,s:L,s:i}", "nodes", (int)st.nodes, "op_counts", ops, "flops",
                         st.flops, "multiply_adds", st.multiply_adds, "params", (long long)st.params, "param_bytes",
                         (long long)st.param_bytes, "activation_bytes", (long long)st.activation_bytes, "weights",
                         (int)st.weights);
}

/* --- running ---------------------------------------------------------------------------------------- */

/* Buffers of a list of arrays (None: no data) as tasc_buffers; views[] are released by
 * release_views. writable: outputs. -1 with an exception set. */
static int get_buffers(PyObject *list, int writable, Py_buffer *views, uint8_t *held, tasc_buffer *bufs, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        memset(&bufs[i], 0, sizeof bufs[i]);
        if (o == Py_None && !writable)
            continue;
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(o, &views[i], flags) < 0)
            return -1;
        held[i] = 1;
        const char *f = views[i].format ? views[i].format : "B";
        if (views[i].itemsize != 4 || !(f[0] == 'f' || ((f[0] == '<' || f[0] == '=') && f[1] == 'f'))) {
            PyErr_Format(PyExc_TypeError, "%s %zd: float32 data needed, got format '%s'", writable ? "output" : "input",
                         i, f);
            return -1;
        }
        if (views[i].ndim > TASC_MAX_RANK) {
            PyErr_Format(PyExc_ValueError, "%s %zd: rank %d is over %d", writable ? "output" : "input", i,
                         views[i].ndim, TASC_MAX_RANK);
            return -1;
        }
        bufs[i].data = views[i].buf;
        bufs[i].rank = views[i].ndim;
        for (int d = 0; d < views[i].ndim; d++)
            bufs[i].dims[d] = views[i].shape[d];
    }
    return 0;
}

static void release_views(Py_buffer *views, const uint8_t *held, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (held[i])
            PyBuffer_Release(&views[i]);
}

/* run(model, inputs list, outputs list, seed, threads, gpu) -> None; outputs are filled. */
static PyObject *py_run(PyObject *self, PyObject *args) {
    tasc_model *m;
    PyObject *ins, *outs;
    unsigned long long seed = 0;
    int threads = 0, gpu = 0;
    if (!PyArg_ParseTuple(args, "O&O!O!|Kip", conv_model, &m, &PyList_Type, &ins, &PyList_Type, &outs, &seed, &threads,
                          &gpu))
        return NULL;
    Py_ssize_t ni = PyList_GET_SIZE(ins), no = PyList_GET_SIZE(outs), n = ni + no;
    Py_buffer *views = PyMem_Calloc((size_t)n + 1, sizeof *views);
    uint8_t *held = PyMem_Calloc((size_t)n + 1, 1);
    tasc_buffer *bufs = PyMem_Calloc((size_t)n + 1, sizeof *bufs);
    PyObject *res = NULL;
    if (!views || !held || !bufs) {
        PyErr_NoMemory();
    } else if (get_buffers(ins, 0, views, held, bufs, ni) == 0 &&
               get_buffers(outs, 1, views + ni, held + ni, bufs + ni, no) == 0) {
        tasc_run_opts o;
        tasc_run_opts_default(&o);
        o.seed = seed;
        o.threads = threads;
        tasc_status s;
        Py_BEGIN_ALLOW_THREADS
        s = gpu ? tasc_gpu_run(m, bufs, (int32_t)ni, bufs + ni, (int32_t)no)
                : tasc_run(m, bufs, (int32_t)ni, bufs + ni, (int32_t)no, &o);
        Py_END_ALLOW_THREADS
        res = s == TASC_OK ? Py_NewRef(Py_None) : raise_status(s);
    }
    if (views && held)
        release_views(views, held, n);
    PyMem_Free(views);
    PyMem_Free(held);
    PyMem_Free(bufs);
    return res;
}

/* bench(model, warmup, reps, seed, no_graph) -> dict */
static PyObject *py_bench(PyObject *self, PyObject *args) {
    tasc_model *m;
    tasc_bench_opts o;
    tasc_bench_opts_default(&o);
    unsigned long long seed = 0;
    int warmup = o.warmup, reps = o.reps, no_graph = 0;
    if (!PyArg_ParseTuple(args, "O&|iiKp", conv_model, &m, &warmup, &reps, &seed, &no_graph))
        return NULL;
    o.warmup = warmup;
    o.reps = reps;
    o.seed = seed;
    o.no_graph = no_graph;
    tasc_bench_stats st;
    tasc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = tasc_gpu_bench(m, &o, &st);
    Py_END_ALLOW_THREADS
    if (s != TASC_OK)
        return raise_status(s);
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:L,s:i,s:O,s:s}", "median_ms", st.median_ms, "min_ms", st.min_ms, "p90_ms",
                         st.p90_ms, "mean_ms", st.mean_ms, "device_bytes", (long long)st.device_bytes, "nodes_run",
                         (int)st.nodes_run, "cuda_graph", st.cuda_graph ? Py_True : Py_False, "device", st.device);
}

/* --- optimizing -------------------------------------------------------------------------------------- */

/* A sequence of str as a list (*keep, which the caller holds while the pointers are used) and a
 * PyMem array of borrowed UTF-8 pointers (*n entries); -1 with an exception. */
static int str_array(PyObject *seq, PyObject **keep, const char ***out, int32_t *n) {
    *keep = PySequence_List(seq);
    if (!*keep)
        return -1;
    Py_ssize_t k = PyList_GET_SIZE(*keep);
    *out = PyMem_Calloc((size_t)k + 1, sizeof **out);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *s = PyList_GET_ITEM(*keep, i);
        (*out)[i] = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
        if (!(*out)[i]) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "cost_set entries must be 'NAME=V' strings");
            return -1;
        }
    }
    *n = (int32_t)k;
    return 0;
}

static PyObject *opt_stats_dict(const tasc_opt_result *r) {
    tasc_opt_stats st;
    tasc_opt_result_stats(r, &st);
    int32_t n = tasc_opt_result_num_rewrites(r);
    PyObject *list = PyList_New(n);
    for (int32_t i = 0; list && i < n; i++) {
        const char *name = NULL;
        int reverse = 0;
        int32_t count = 0;
        tasc_opt_result_rewrite(r, i, &name, &reverse, &count);
        PyObject *t = Py_BuildValue("(sOi)", name, reverse ? Py_True : Py_False, (int)count);
        if (!t) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, t);
    }
    if (!list)
        return NULL;
    return Py_BuildValue("{s:d,s:d,s:i,s:i,s:L,s:L,s:L,s:L,s:O,s:i,s:d,s:d,s:d,s:d,s:N}", "cost_before_us",
                         st.cost_before_us, "cost_after_us", st.cost_after_us, "nodes_before", (int)st.nodes_before,
                         "nodes_after", (int)st.nodes_after, "rewrites_applied", (long long)st.rewrites, "expanded",
                         (long long)st.expanded, "candidates", (long long)st.candidates, "queued", (long long)st.queued,
                         "time_limited", st.time_limited ? Py_True : Py_False, "folded", (int)st.folded, "search_s",
                         st.search_s, "optimize_s", st.optimize_s, "check_s", st.check_s, "check_error",
                         st.check_error, "rewrites", list);
}

/* optimize(model, rules, builtins, search, alpha, budget, time_limit, cost, cost_set, check,
 *          check_seeds, check_tol, progress) -> (model, stats dict) */
static PyObject *py_optimize(PyObject *self, PyObject *args) {
    tasc_model *m;
    tasc_rules *rules;
    tasc_opt_opts o;
    tasc_opt_opts_default(&o);
    PyObject *cost_set;
    long long budget;
    int check_seeds;
    if (!PyArg_ParseTuple(args, "O&O&O&O&dLdO&Opidp", conv_model, &m, conv_rules_or_none, &rules, conv_str_or_none,
                          &o.builtins, conv_str_or_none, &o.search, &o.alpha, &budget, &o.time_limit_s,
                          conv_str_or_none, &o.cost, &cost_set, &o.check, &check_seeds, &o.check_tol, &o.progress))
        return NULL;
    o.rules = rules;
    o.budget = budget;
    o.check_seeds = check_seeds;
    const char **set = NULL;
    PyObject *keep = NULL;
    if (str_array(cost_set, &keep, &set, &o.n_cost_set) < 0) {
        PyMem_Free(set);
        Py_XDECREF(keep);
        return NULL;
    }
    o.cost_set = set;
    tasc_opt_result *r = NULL;
    tasc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = tasc_optimize(m, &o, &r);
    Py_END_ALLOW_THREADS
    PyMem_Free(set);
    Py_DECREF(keep);
    if (s != TASC_OK)
        return raise_status(s);
    tasc_model *best = NULL;
    PyObject *res = NULL;
    if ((s = tasc_model_clone(tasc_opt_result_model(r), &best)) != TASC_OK)
        raise_status(s);
    else
        res = Py_BuildValue("(NN)", wrap_model(best), opt_stats_dict(r));
    tasc_opt_result_free(r);
    return res;
}

/* --- rules -------------------------------------------------------------------------------------------- */

static PyObject *py_load_rules(PyObject *self, PyObject *args) {
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
        return NULL;
    tasc_rules *r = NULL;
    tasc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = tasc_rules_load(PyBytes_AS_STRING(path), &r);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    return s == TASC_OK ? wrap_rules(r) : raise_status(s);
}

static PyObject *py_save_rules(PyObject *self, PyObject *args) {
    tasc_rules *r;
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "O&O&", conv_rules_or_none, &r, PyUnicode_FSConverter, &path))
        return NULL;
    tasc_status s = tasc_rules_save(r, PyBytes_AS_STRING(path));
    Py_DECREF(path);
    if (s != TASC_OK)
        return raise_status(s);
    Py_RETURN_NONE;
}

static PyObject *py_rules_count(PyObject *self, PyObject *args) {
    tasc_rules *r;
    if (!PyArg_ParseTuple(args, "O&", conv_rules_or_none, &r))
        return NULL;
    return PyLong_FromLong(tasc_rules_count(r));
}

static PyObject *py_default_rules_path(PyObject *self, PyObject *noargs) {
    char buf[4096];
    tasc_status s = tasc_default_rules_path(buf, sizeof buf);
    return s == TASC_OK ? PyUnicode_DecodeFSDefault(buf) : raise_status(s);
}

/* generate_rules(max_ops, ops, threads) -> (rules, stats dict) */
static PyObject *py_generate_rules(PyObject *self, PyObject *args) {
    tasc_generate_opts o;
    tasc_generate_opts_default(&o);
    int max_ops, threads;
    if (!PyArg_ParseTuple(args, "iO&i", &max_ops, conv_str_or_none, &o.ops, &threads))
        return NULL;
    o.max_ops = max_ops;
    o.threads = threads;
    tasc_rules *r = NULL;
    tasc_generate_stats st;
    tasc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = tasc_rules_generate(&o, &r, &st);
    Py_END_ALLOW_THREADS
    if (s != TASC_OK)
        return raise_status(s);
    return Py_BuildValue("(N{s:K,s:K,s:K,s:K,s:d})", wrap_rules(r), "graphs", (unsigned long long)st.graphs,
                         "fingerprints", (unsigned long long)st.fingerprints, "pairs", (unsigned long long)st.pairs,
                         "rules", (unsigned long long)st.rules, "seconds", st.seconds);
}

/* verify_rules(rules, timeout, threads, numeric_check, axioms, cache) -> (proved, quarantine, stats) */
static PyObject *py_verify_rules(PyObject *self, PyObject *args) {
    tasc_rules *cands;
    tasc_verify_opts o;
    tasc_verify_opts_default(&o);
    int threads;
    if (!PyArg_ParseTuple(args, "O&dipO&O&", conv_rules_or_none, &cands, &o.timeout_s, &threads, &o.numeric_check,
                          conv_str_or_none, &o.axioms, conv_str_or_none, &o.cache))
        return NULL;
    o.threads = threads;
    tasc_rules *proved = NULL, *quar = NULL;
    tasc_verify_stats st;
    tasc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = tasc_rules_verify(cands, &o, &proved, &quar, &st);
    Py_END_ALLOW_THREADS
    if (s != TASC_OK)
        return raise_status(s);
    return Py_BuildValue("(NN{s:L,s:L,s:L,s:L,s:L,s:d})", wrap_rules(proved), wrap_rules(quar), "candidates",
                         (long long)st.candidates, "proved", (long long)st.proved, "refuted", (long long)st.refuted,
                         "unknown", (long long)st.unknown, "cached", (long long)st.cached, "seconds", st.seconds);
}

/* --- the module ----------------------------------------------------------------------------------------- */

static PyObject *py_version(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(tasc_version()); }
static PyObject *py_has_cuda(PyObject *self, PyObject *noargs) { return PyBool_FromLong(tasc_has_cuda()); }

static PyObject *py_gpu_available(PyObject *self, PyObject *noargs) {
    tasc_status s = tasc_gpu_available();
    return s == TASC_OK ? Py_NewRef(Py_None) : raise_status(s);
}

static PyMethodDef methods[] = {
    {"load", (PyCFunction)(void (*)(void))py_load, METH_VARARGS | METH_KEYWORDS,
     "load(path, random_weights=False, weights_seed=0, dims=None, max_elements=0, allow_outside_paths=False)"},
    {"from_json", py_from_json, METH_VARARGS, "from_json(text, where=None) -> model capsule"},
    {"save", py_save, METH_VARARGS, "save(model, path)"},
    {"export_onnx", py_export_onnx, METH_VARARGS, "export_onnx(model, path)"},
    {"to_json", py_to_json, METH_VARARGS, "to_json(model) -> str"},
    {"to_dot", py_to_dot, METH_VARARGS, "to_dot(model) -> str"},
    {"io", py_io, METH_VARARGS, "io(model) -> (name, inputs, outputs) as (name, dtype, shape) tuples"},
    {"stats", py_stats, METH_VARARGS, "stats(model) -> dict"},
    {"run", py_run, METH_VARARGS, "run(model, inputs, outputs, seed=0, threads=0, gpu=False)"},
    {"bench", py_bench, METH_VARARGS, "bench(model, warmup, reps, seed, no_graph) -> dict"},
    {"optimize", py_optimize, METH_VARARGS, "optimize(model, rules, builtins, search, ...) -> (model, stats)"},
    {"load_rules", py_load_rules, METH_VARARGS, "load_rules(path) -> rules capsule"},
    {"save_rules", py_save_rules, METH_VARARGS, "save_rules(rules, path)"},
    {"rules_count", py_rules_count, METH_VARARGS, "rules_count(rules) -> int"},
    {"default_rules_path", py_default_rules_path, METH_NOARGS, "default_rules_path() -> str"},
    {"generate_rules", py_generate_rules, METH_VARARGS, "generate_rules(max_ops, ops, threads) -> (rules, stats)"},
    {"verify_rules", py_verify_rules, METH_VARARGS, "verify_rules(rules, timeout, threads, numeric, axioms, cache)"},
    {"version", py_version, METH_NOARGS, "the C library's version"},
    {"has_cuda", py_has_cuda, METH_NOARGS, "True if the library was built with CUDA"},
    {"gpu_available", py_gpu_available, METH_NOARGS, "None if a GPU is usable, else raises ResourceError"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tasc", "tasc's C extension (python/_tasc.c) over the public C API <tasc.h>.", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* tasc.Error and one subclass per status; each also derives from the built-in exception that
 * says the same to Python code (ValueError for bad input and usage, RuntimeError otherwise). */
static int add_errors(PyObject *mod) {
    static const struct {
        const char *name, *doc;
        int status;
    } kinds[] = {
        {"tasc.InputError", "Bad input: a bad model, rule or data file, bad shapes, a failed check (status 1).", 1},
        {"tasc.UsageError", "Bad usage: an unknown option value or an argument out of range (status 2).", 2},
        {"tasc.ResourceError", "A missing resource: no CUDA in this build, no GPU, a missing file (status 3).", 3},
        {"tasc.InternalError", "An internal error of the library (status 4).", 4},
    };
    err_base = PyErr_NewExceptionWithDoc("tasc.Error", "Every error of tasc; .status is the C status.", NULL, NULL);
    if (!err_base || PyModule_AddObjectRef(mod, "Error", err_base) < 0)
        return -1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        PyObject *bases = Py_BuildValue("(OO)", err_base, kinds[i].status <= 2 ? PyExc_ValueError : PyExc_RuntimeError);
        PyObject *cls = bases ? PyErr_NewExceptionWithDoc(kinds[i].name, kinds[i].doc, bases, NULL) : NULL;
        Py_XDECREF(bases);
        if (!cls || PyModule_AddObjectRef(mod, strchr(kinds[i].name, '.') + 1, cls) < 0)
            return -1;
        err_class[kinds[i].status] = cls;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__tasc(void); /* the module's one exported symbol */
PyMODINIT_FUNC PyInit__tasc(void) {
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    if (add_errors(mod) < 0 || PyModule_AddIntConstant(mod, "MAX_RANK", TASC_MAX_RANK) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
