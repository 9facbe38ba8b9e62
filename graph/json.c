/* json.c: the JSON model format ("format": "tasc-model", version 1): loading and saving.
 *
 * Loading parses with jansson, then resolves names in passes: leaves (inputs, weights), node
 * names, node output names (explicit, then default, then automatic names), input references;
 * sorts the nodes topologically (lowest file position first) and adds them through the builder,
 * which checks parameters and shapes. Every problem is one line naming the file and the place.
 * Saving is deterministic: fixed key order, nodes in topological order, every declared parameter,
 * floats in the shortest form that reads back to the same bits, a temporary file then a rename.
 * Weights with values of their own (DATA blobs, FILE data) go to the sidecar weights file (format
 * in graph.h); the JSON is written from a clone whose such weights name the sidecar, and both
 * files are renamed into place only once both are complete. Loading knows only FILE weights.
 * Returned graphs and strings belong to the caller. The text buffer and string escaping (json.h)
 * are exported: the rule files' writer uses the same ones.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "graph_impl.h"
#include "json.h"

#define JL_MAX_FILE_BYTES (INT64_C(1) << 30) /* a model file larger than this is refused */
#define JS_WIDTH 140                          /* containers that fit on one line are written inline */

/* d rounded to float as a conversion would, without the undefined behaviour of converting an
 * out-of-range value: values that round to +-FLT_MAX are accepted, larger ones refused. */
static int js_to_float(double d, float *out) {
    const double lim = 0x1.fffffefp+127; /* FLT_MAX plus half an ulp: from here on, rounding gives inf */
    if (!(fabs(d) < lim))
        return -1; /* also NaN */
    if (fabs(d) > (double)FLT_MAX)
        d = d < 0 ? -(double)FLT_MAX : (double)FLT_MAX;
    *out = (float)d;
    return 0;
}

/* =============================================================================================
 * loading
 */
typedef struct {
    const char *name;                       /* borrowed from the JSON tree, or autoname */
    char *autoname;                         /* owned: "<op>_<k>" for a node without a name */
    json_t *obj;
    ops_type op;
    ops_params p;
    int32_t n_in, n_out;
    const char *in_names[OPS_MAX_INPUTS];   /* borrowed from the JSON tree */
    const char *out_names[OPS_MAX_OUTPUTS]; /* borrowed from the JSON tree, or own_out */
    char *own_out[OPS_MAX_OUTPUTS];         /* owned default names */
    int explicit_outs;                      /* "outputs" was given */
    int32_t out_ids[OPS_MAX_OUTPUTS];       /* tensor ids once added */
} jl_node;

typedef struct {
    const char *where;
    char *err;
    size_t errlen;
    graph *g;
    jl_node *nodes;
    int32_t n_nodes;
    graph_name_set tnames; /* tensor names: a = -1 for a leaf (b = tensor id), else node index (b = output) */
    graph_name_set nnames; /* node names: a = node index */
} jl_ctx;

GRAPH_PRINTF(3, 4)
static void jl_fail(jl_ctx *c, const char *label, const char *fmt, ...) {
    char m[GRAPH_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    base_vfail(m, sizeof m, fmt, ap);
    va_end(ap);
    if (label)
        base_fail_line(c->err, c->errlen, "%s: %s: %s", c->where, label, m);
    else
        base_fail_line(c->err, c->errlen, "%s: %s", c->where, m);
}

static const char *jl_type(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a JSON value";
}

/* Refuse keys of obj outside allowed (a NULL-terminated list). */
static int jl_keys(jl_ctx *c, const char *label, json_t *obj, const char *const *allowed) {
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        if (!ok) {
            char list[256];
            size_t used = 0;
            list[0] = '\0';
            for (const char *const *a = allowed; *a; a++) {
                int w = snprintf(list + used, sizeof list - used, "%s%s", a == allowed ? "" : ", ", *a);
                if (w < 0 || (size_t)w >= sizeof list - used)
                    break;
                used += (size_t)w;
            }
            jl_fail(c, label, "unknown key '%s' (expected %s)", key, list);
            return -1;
        }
    }
    return 0;
}

/* A string member: required or optional (*out NULL when absent). */
static int jl_string(jl_ctx *c, const char *label, json_t *obj, const char *key, int required, const char **out) {
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v) {
        if (required) {
            jl_fail(c, label, "missing \"%s\"", key);
            return -1;
        }
        return 0;
    }
    if (!json_is_string(v)) {
        jl_fail(c, label, "\"%s\" must be a string, got %s", key, jl_type(v));
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

/* A name member: a valid name string. */
static int jl_name(jl_ctx *c, const char *label, json_t *obj, int required, const char **out) {
    if (jl_string(c, label, obj, "name", required, out) < 0)
        return -1;
    char m[GRAPH_ERR_LEN];
    if (*out && graph_impl_check_name(*out, m, sizeof m) < 0) {
        jl_fail(c, label, "\"name\": %s", m);
        return -1;
    }
    return 0;
}

/* A finite number that fits a float. */
static int jl_float(jl_ctx *c, const char *label, const char *what, json_t *v, float *out) {
    if (!json_is_number(v)) {
        jl_fail(c, label, "%s must be a number, got %s", what, jl_type(v));
        return -1;
    }
    if (js_to_float(json_number_value(v), out) < 0) {
        jl_fail(c, label, "%s is %g, outside the float32 range", what, json_number_value(v));
        return -1;
    }
    return 0;
}

static int jl_shape(jl_ctx *c, const char *label, json_t *obj, ops_shape *s) {
    json_t *v = json_object_get(obj, "shape");
    if (!v) {
        jl_fail(c, label, "missing \"shape\"");
        return -1;
    }
    if (!json_is_array(v)) {
        jl_fail(c, label, "\"shape\" must be an array of positive integers, got %s", jl_type(v));
        return -1;
    }
    size_t n = json_array_size(v);
    if (n > OPS_MAX_DIMS) {
        jl_fail(c, label, "\"shape\" has %zu dims, more than the limit of %d", n, OPS_MAX_DIMS);
        return -1;
    }
    memset(s, 0, sizeof *s);
    s->rank = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(v, i);
        if (!json_is_integer(d)) {
            jl_fail(c, label, "shape[%zu] must be a positive integer, got %s", i, jl_type(d));
            return -1;
        }
        json_int_t x = json_integer_value(d);
        if (x <= 0) {
            jl_fail(c, label, "shape[%zu] is %lld (dims must be positive)", i, (long long)x);
            return -1;
        }
        s->dims[i] = (int64_t)x;
    }
    char m[GRAPH_ERR_LEN];
    if (graph_impl_check_shape(c->g, s, m, sizeof m) < 0) {
        jl_fail(c, label, "%s", m);
        return -1;
    }
    return 0;
}

static void jl_describe(const jl_ctx *c, const graph_name_ent *e, char *buf, size_t len) {
    if (e->a < 0)
        snprintf(buf, len, "%s '%s'", c->g->tensors[e->b].kind == GRAPH_T_INPUT ? "input" : "weight", e->key);
    else
        snprintf(buf, len, "an output of node '%s'", c->nodes[e->a].name);
}

/* Register a tensor name; a duplicate is an error naming the first user. */
static int jl_add_tname(jl_ctx *c, const char *label, const char *name, int32_t a, int32_t b) {
    graph_name_ent *dup = NULL;
    graph_name_ent *e = graph_nameset_add(&c->tnames, name, &dup);
    if (!e) {
        char d[GRAPH_ERR_LEN];
        jl_describe(c, dup, d, sizeof d);
        jl_fail(c, label, "duplicate tensor name '%s' (also %s)", name, d);
        return -1;
    }
    e->a = a;
    e->b = b;
    return 0;
}

static int jl_inputs(jl_ctx *c, json_t *arr) {
    static const char *const keys[] = {"name", "shape", "dtype", NULL};
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        char label[GRAPH_ERR_LEN];
        snprintf(label, sizeof label, "inputs[%zu]", i);
        if (!json_is_object(o)) {
            jl_fail(c, label, "must be an object, got %s", jl_type(o));
            return -1;
        }
        const char *name, *dt;
        if (jl_name(c, label, o, 1, &name) < 0)
            return -1;
        snprintf(label, sizeof label, "input '%s'", name);
        if (jl_keys(c, label, o, keys) < 0)
            return -1;
        ops_shape s;
        if (jl_shape(c, label, o, &s) < 0 || jl_string(c, label, o, "dtype", 0, &dt) < 0)
            return -1;
        graph_dtype dtype = GRAPH_DT_F32;
        if (dt && !strcmp(dt, "int64"))
            dtype = GRAPH_DT_I64;
        else if (dt && strcmp(dt, "float32")) {
            jl_fail(c, label, "unknown dtype '%s' (expected float32 or int64)", dt);
            return -1;
        }
        if (jl_add_tname(c, label, name, -1, c->g->n_tensors) < 0)
            return -1;
        char m[GRAPH_ERR_LEN];
        if (graph_impl_add_leaf(c->g, name, GRAPH_T_INPUT, dtype, &s, NULL, 0, m, sizeof m) < 0) {
            jl_fail(c, label, "%s", m);
            return -1;
        }
    }
    return 0;
}

static int jl_init(jl_ctx *c, const char *label, json_t *o, graph_init *init) {
    static const char *const k_random[] = {"kind", "seed", "mean", "std", NULL};
    static const char *const k_const[] = {"kind", "value", NULL};
    static const char *const k_file[] = {"kind", "path", "offset", NULL};
    json_t *v = json_object_get(o, "init");
    memset(init, 0, sizeof *init);
    if (!v) {
        jl_fail(c, label, "missing \"init\"");
        return -1;
    }
    if (!json_is_object(v)) {
        jl_fail(c, label, "\"init\" must be an object, got %s", jl_type(v));
        return -1;
    }
    char il[GRAPH_ERR_LEN + 8]; /* label (< GRAPH_ERR_LEN) + ": init" */
    snprintf(il, sizeof il, "%s: init", label);
    const char *kind;
    if (jl_string(c, il, v, "kind", 1, &kind) < 0)
        return -1;
    json_t *x;
    if (!strcmp(kind, "random")) {
        if (jl_keys(c, il, v, k_random) < 0)
            return -1;
        init->kind = GRAPH_INIT_RANDOM;
        x = json_object_get(v, "seed");
        if (!x) {
            jl_fail(c, il, "missing \"seed\"");
            return -1;
        }
        if (!json_is_integer(x)) {
            jl_fail(c, il, "\"seed\" must be an integer, got %s", jl_type(x));
            return -1;
        }
        init->seed = (uint64_t)(int64_t)json_integer_value(x); /* negatives: modulo 2^64 */
        init->std = 1.0f;
        if ((x = json_object_get(v, "mean")) && jl_float(c, il, "\"mean\"", x, &init->mean) < 0)
            return -1;
        if ((x = json_object_get(v, "std")) && jl_float(c, il, "\"std\"", x, &init->std) < 0)
            return -1;
    } else if (!strcmp(kind, "constant")) {
        if (jl_keys(c, il, v, k_const) < 0)
            return -1;
        init->kind = GRAPH_INIT_CONSTANT;
        x = json_object_get(v, "value");
        if (!x) {
            jl_fail(c, il, "missing \"value\"");
            return -1;
        }
        if (jl_float(c, il, "\"value\"", x, &init->value) < 0)
            return -1;
    } else if (!strcmp(kind, "file")) {
        if (jl_keys(c, il, v, k_file) < 0)
            return -1;
        init->kind = GRAPH_INIT_FILE;
        const char *path;
        if (jl_string(c, il, v, "path", 1, &path) < 0)
            return -1;
        init->path = (char *)path; /* borrowed: graph_impl_add_leaf copies it */
        if ((x = json_object_get(v, "offset"))) {
            if (!json_is_integer(x) || json_integer_value(x) < 0) {
                jl_fail(c, il, "\"offset\" must be a non-negative integer");
                return -1;
            }
            init->offset = (int64_t)json_integer_value(x);
        }
    } else {
        jl_fail(c, il, "unknown kind '%s' (expected random, constant or file)", kind);
        return -1;
    }
    char m[GRAPH_ERR_LEN];
    if (graph_impl_check_init(init, m, sizeof m) < 0) {
        jl_fail(c, il, "%s", m);
        return -1;
    }
    return 0;
}

static int jl_weights(jl_ctx *c, json_t *arr) {
    static const char *const keys[] = {"name", "shape", "init", NULL};
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        char label[GRAPH_ERR_LEN];
        snprintf(label, sizeof label, "weights[%zu]", i);
        if (!json_is_object(o)) {
            jl_fail(c, label, "must be an object, got %s", jl_type(o));
            return -1;
        }
        const char *name;
        if (jl_name(c, label, o, 1, &name) < 0)
            return -1;
        snprintf(label, sizeof label, "weight '%s'", name);
        ops_shape s;
        graph_init init;
        if (jl_keys(c, label, o, keys) < 0 || jl_shape(c, label, o, &s) < 0 || jl_init(c, label, o, &init) < 0)
            return -1;
        if (init.kind == GRAPH_INIT_FILE) { /* the path policy, checked now for a message at load */
            char *full = NULL, m[GRAPH_ERR_LEN];
            int rc = graph_path_resolve(c->g->base_dir, c->g->allow_outside_paths, init.path, &full, m, sizeof m);
            free(full);
            if (rc < 0) {
                jl_fail(c, label, "%s", m);
                return -1;
            }
        }
        if (jl_add_tname(c, label, name, -1, c->g->n_tensors) < 0)
            return -1;
        char m[GRAPH_ERR_LEN];
        if (graph_impl_add_leaf(c->g, name, GRAPH_T_WEIGHT, GRAPH_DT_F32, &s, &init, 0, m, sizeof m) < 0) {
            jl_fail(c, label, "%s", m);
            return -1;
        }
    }
    return 0;
}

static void jl_node_label(const jl_ctx *c, int32_t i, char *buf, size_t len) {
    json_t *nm = json_object_get(c->nodes[i].obj, "name");
    if (json_is_string(nm))
        snprintf(buf, len, "node '%s'", json_string_value(nm));
    else
        snprintf(buf, len, "nodes[%d]", (int)i);
}

/* Comma-separated JSON names of the op's parameters. */
static void jl_param_list(ops_type op, char *buf, size_t len) {
    const ops_desc *od = &ops_table[op];
    size_t used = 0;
    buf[0] = '\0';
    if (!od->n_params)
        snprintf(buf, len, "none");
    for (int32_t i = 0; i < od->n_params; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", graph_impl_param_name(&od->params[i]));
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
}

static int jl_enum(jl_ctx *c, const char *label, const char *pname, json_t *v, const char *const *names,
                   int count, int64_t *out) {
    /* names only: the integer codes are internal (the README documents the names) */
    if (json_is_string(v)) {
        for (int i = 0; i < count; i++)
            if (!strcmp(names[i], json_string_value(v))) {
                *out = i;
                return 0;
            }
    }
    char list[256];
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; i < count; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= sizeof list - used)
            break;
        used += (size_t)w;
    }
    if (json_is_string(v))
        jl_fail(c, label, "parameter '%s': unknown value '%s' (one of: %s)", pname, json_string_value(v), list);
    else
        jl_fail(c, label, "parameter '%s' must be a name, got %s (one of: %s)", pname, jl_type(v), list);
    return -1;
}

static int jl_params(jl_ctx *c, const char *label, jl_node *nd, json_t *params) {
    const ops_desc *od = &ops_table[nd->op];
    ops_params_default(nd->op, &nd->p);
    uint8_t given[OPS_MAX_OP_PARAMS] = {0};
    if (params) {
        if (!json_is_object(params)) {
            jl_fail(c, label, "\"params\" must be an object, got %s", jl_type(params));
            return -1;
        }
        const char *key;
        json_t *v;
        json_object_foreach(params, key, v) {
            int32_t i = 0;
            while (i < od->n_params && strcmp(graph_impl_param_name(&od->params[i]), key))
                i++;
            if (i == od->n_params) {
                char list[256];
                jl_param_list(nd->op, list, sizeof list);
                jl_fail(c, label, "unknown parameter '%s' for op '%s' (it takes: %s)", key, od->name, list);
                return -1;
            }
            given[i] = 1;
            ops_param_key k = od->params[i].key;
            switch (ops_param_table[k].kind) {
            case OPS_PK_INT:
                if (!json_is_integer(v)) {
                    jl_fail(c, label, "parameter '%s' must be an integer, got %s", key, jl_type(v));
                    return -1;
                }
                nd->p.v[k] = (int64_t)json_integer_value(v);
                break;
            case OPS_PK_FLOAT: {
                char what[128];
                float f;
                snprintf(what, sizeof what, "parameter '%s'", key);
                /* infinities (a Clip bound that is absent in ONNX) as the strings "inf" and "-inf" */
                const char *sv = json_is_string(v) ? json_string_value(v) : NULL;
                if (sv && (!strcmp(sv, "inf") || !strcmp(sv, "-inf")))
                    f = sv[0] == '-' ? -INFINITY : INFINITY;
                else if (jl_float(c, label, what, v, &f) < 0)
                    return -1;
                nd->p.v[k] = ops_f2p(f);
                break;
            }
            case OPS_PK_ACT:
                if (jl_enum(c, label, key, v, ops_act_names, OPS_ACT_COUNT, &nd->p.v[k]) < 0)
                    return -1;
                break;
            case OPS_PK_PADMODE:
                if (jl_enum(c, label, key, v, ops_padmode_names, OPS_PAD_COUNT, &nd->p.v[k]) < 0)
                    return -1;
                break;
            case OPS_PK_LIST: {
                if (!json_is_array(v)) {
                    jl_fail(c, label, "parameter '%s' must be an array of integers, got %s", key, jl_type(v));
                    return -1;
                }
                size_t n = json_array_size(v);
                if (n > OPS_MAX_LIST) {
                    jl_fail(c, label, "parameter '%s' has %zu values, more than the limit of %d", key, n, OPS_MAX_LIST);
                    return -1;
                }
                nd->p.n_list = (int32_t)n;
                for (size_t j = 0; j < OPS_MAX_LIST; j++)
                    nd->p.list[j] = 0;
                for (size_t j = 0; j < n; j++) {
                    json_t *e = json_array_get(v, j);
                    if (!json_is_integer(e)) {
                        jl_fail(c, label, "parameter '%s': element %zu must be an integer, got %s", key, j, jl_type(e));
                        return -1;
                    }
                    nd->p.list[j] = (int64_t)json_integer_value(e);
                }
                break;
            }
            }
        }
    }
    for (int32_t i = 0; i < od->n_params; i++)
        if (od->params[i].required && !given[i]) {
            jl_fail(c, label, "missing required parameter '%s' for op '%s'", graph_impl_param_name(&od->params[i]),
                    od->name);
            return -1;
        }
    char m[GRAPH_ERR_LEN];
    m[0] = '\0';
    if (ops_params_check(nd->op, &nd->p, m, sizeof m) < 0) {
        jl_fail(c, label, "%s", m[0] ? m : "bad parameter");
        return -1;
    }
    return 0;
}

/* Parse node i up to names: op, params, input names, number and explicit names of outputs. */
static int jl_node_parse(jl_ctx *c, int32_t i, json_t *o) {
    static const char *const keys[] = {"name", "op", "inputs", "params", "outputs", NULL};
    jl_node *nd = &c->nodes[i];
    nd->obj = o;
    char label[GRAPH_ERR_LEN];
    snprintf(label, sizeof label, "nodes[%d]", (int)i);
    if (!json_is_object(o)) {
        jl_fail(c, label, "must be an object, got %s", jl_type(o));
        return -1;
    }
    if (jl_name(c, label, o, 0, &nd->name) < 0)
        return -1;
    jl_node_label(c, i, label, sizeof label);
    const char *opname;
    if (jl_keys(c, label, o, keys) < 0 || jl_string(c, label, o, "op", 1, &opname) < 0)
        return -1;
    int op = ops_find(opname);
    if (op < 0) {
        jl_fail(c, label, "unknown op '%s' (tasc ops lists the operators)", opname);
        return -1;
    }
    nd->op = (ops_type)op;
    const ops_desc *od = &ops_table[op];

    json_t *ins = json_object_get(o, "inputs");
    if (!ins) {
        jl_fail(c, label, "missing \"inputs\"");
        return -1;
    }
    if (!json_is_array(ins)) {
        jl_fail(c, label, "\"inputs\" must be an array of tensor names, got %s", jl_type(ins));
        return -1;
    }
    size_t n_in = json_array_size(ins);
    int32_t max_in = od->max_in < 0 ? OPS_MAX_INPUTS : od->max_in;
    if (n_in < (size_t)od->min_in || n_in > (size_t)max_in) {
        if (od->min_in == max_in)
            jl_fail(c, label, "op '%s' takes %d input%s, got %zu", od->name, (int)od->min_in,
                    od->min_in == 1 ? "" : "s", n_in);
        else
            jl_fail(c, label, "op '%s' takes %d to %d inputs, got %zu", od->name, (int)od->min_in, (int)max_in, n_in);
        return -1;
    }
    nd->n_in = (int32_t)n_in;
    for (size_t k = 0; k < n_in; k++) {
        json_t *s = json_array_get(ins, k);
        if (!json_is_string(s)) {
            jl_fail(c, label, "inputs[%zu] must be a tensor name, got %s", k, jl_type(s));
            return -1;
        }
        nd->in_names[k] = json_string_value(s);
    }

    if (jl_params(c, label, nd, json_object_get(o, "params")) < 0)
        return -1;
    int64_t n_out = od->n_out >= 0 ? od->n_out : nd->p.v[PM_PARTS];
    if (n_out < 1 || n_out > OPS_MAX_OUTPUTS) {
        jl_fail(c, label, "%lld outputs (1 to %d allowed)", (long long)n_out, OPS_MAX_OUTPUTS);
        return -1;
    }
    nd->n_out = (int32_t)n_out;

    json_t *outs = json_object_get(o, "outputs");
    if (outs) {
        if (!json_is_array(outs)) {
            jl_fail(c, label, "\"outputs\" must be an array of tensor names, got %s", jl_type(outs));
            return -1;
        }
        if (json_array_size(outs) != (size_t)n_out) {
            jl_fail(c, label, "\"outputs\" has %zu names, the node makes %d output%s", json_array_size(outs),
                    (int)n_out, n_out == 1 ? "" : "s");
            return -1;
        }
        for (int32_t k = 0; k < nd->n_out; k++) {
            json_t *s = json_array_get(outs, (size_t)k);
            char m[GRAPH_ERR_LEN];
            if (!json_is_string(s)) {
                jl_fail(c, label, "outputs[%d] must be a tensor name, got %s", (int)k, jl_type(s));
                return -1;
            }
            if (graph_impl_check_name(json_string_value(s), m, sizeof m) < 0) {
                jl_fail(c, label, "outputs[%d]: %s", (int)k, m);
                return -1;
            }
            nd->out_names[k] = json_string_value(s);
        }
        nd->explicit_outs = 1;
    }
    return 0;
}

/* Output names of a node from its (final) name, unless given explicitly. */
static void jl_default_outs(jl_node *nd) {
    if (nd->explicit_outs)
        return;
    size_t n = strlen(nd->name) + 16;
    for (int32_t k = 0; k < nd->n_out; k++) {
        nd->own_out[k] = base_xmalloc(n);
        if (nd->n_out == 1)
            snprintf(nd->own_out[k], n, "%s", nd->name);
        else
            snprintf(nd->own_out[k], n, "%s:%d", nd->name, (int)k);
        nd->out_names[k] = nd->own_out[k];
    }
}

static int jl_register_outs(jl_ctx *c, int32_t i) {
    char label[GRAPH_ERR_LEN];
    jl_node_label(c, i, label, sizeof label);
    for (int32_t k = 0; k < c->nodes[i].n_out; k++)
        if (jl_add_tname(c, label, c->nodes[i].out_names[k], i, k) < 0)
            return -1;
    return 0;
}

static int jl_nodes(jl_ctx *c, json_t *arr) {
    int32_t n = c->n_nodes;
    for (int32_t i = 0; i < n; i++)
        if (jl_node_parse(c, i, json_array_get(arr, (size_t)i)) < 0)
            return -1;
    /* explicit node names, then outputs of named nodes, then automatic names for the rest */
    for (int32_t i = 0; i < n; i++) {
        if (!c->nodes[i].name)
            continue;
        graph_name_ent *dup = NULL, *e = graph_nameset_add(&c->nnames, c->nodes[i].name, &dup);
        if (!e) {
            char label[GRAPH_ERR_LEN];
            jl_node_label(c, i, label, sizeof label);
            jl_fail(c, label, "duplicate node name (also nodes[%d])", (int)dup->a);
            return -1;
        }
        e->a = i;
    }
    for (int32_t i = 0; i < n; i++)
        if (c->nodes[i].name) {
            jl_default_outs(&c->nodes[i]);
            if (jl_register_outs(c, i) < 0)
                return -1;
        }
    int32_t op_seen[OP_COUNT] = {0}; /* nodes before i of each op: counted as i goes, not rescanned */
    for (int32_t i = 0; i < n; i++) {
        jl_node *nd = &c->nodes[i];
        op_seen[nd->op]++;
        if (nd->name)
            continue;
        const char *opname = ops_table[nd->op].name;
        size_t len = strlen(opname) + 24;
        nd->autoname = base_xmalloc(len);
        int32_t k = op_seen[nd->op] - 1;
        for (;; k++) {
            snprintf(nd->autoname, len, "%s_%d", opname, (int)k);
            if (graph_nameset_find(&c->nnames, nd->autoname))
                continue;
            int free_outs = 1;
            for (int32_t o = 0; o < nd->n_out && free_outs && !nd->explicit_outs; o++) {
                char ob[128];
                if (nd->n_out == 1)
                    snprintf(ob, sizeof ob, "%s", nd->autoname);
                else
                    snprintf(ob, sizeof ob, "%s:%d", nd->autoname, (int)o);
                free_outs = !graph_nameset_find(&c->tnames, ob);
            }
            if (free_outs)
                break;
        }
        nd->name = nd->autoname;
        graph_nameset_add(&c->nnames, nd->name, NULL)->a = i;
        jl_default_outs(nd);
        if (jl_register_outs(c, i) < 0)
            return -1;
    }

    /* resolve inputs into dependencies, sort, add */
    int32_t *pstart = base_xcalloc((size_t)n + 1, sizeof *pstart);
    int32_t *pred = base_xmalloc(((size_t)n * OPS_MAX_INPUTS + 1) * sizeof *pred);
    int32_t *order = base_xmalloc((size_t)n * sizeof *order);
    int rc = -1;
    int32_t e = 0;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t k = 0; k < c->nodes[i].n_in; k++) {
            graph_name_ent *t = graph_nameset_find(&c->tnames, c->nodes[i].in_names[k]);
            if (!t) {
                char label[GRAPH_ERR_LEN];
                jl_node_label(c, i, label, sizeof label);
                jl_fail(c, label, "input '%s' names no tensor", c->nodes[i].in_names[k]);
                goto done;
            }
            if (t->a >= 0)
                pred[e++] = t->a;
        }
        pstart[i + 1] = e;
    }
    int32_t cnt = graph_impl_kahn(n, pstart, pred, order);
    if (cnt < n) {
        int32_t *cyc = base_xmalloc((size_t)n * sizeof *cyc);
        const char **names = base_xmalloc((size_t)n * sizeof *names);
        for (int32_t i = 0; i < n; i++)
            names[i] = c->nodes[i].name;
        int32_t len = graph_impl_find_cycle(n, pstart, pred, order, cnt, cyc);
        char path[GRAPH_ERR_LEN], label[GRAPH_ERR_LEN];
        graph_impl_cycle_str(names, cyc, len, path, sizeof path);
        jl_node_label(c, len ? cyc[0] : 0, label, sizeof label);
        jl_fail(c, label, "the nodes form a cycle: %s", path);
        free(cyc);
        free(names);
        goto done;
    }
    for (int32_t j = 0; j < n; j++) {
        jl_node *nd = &c->nodes[order[j]];
        int32_t in[OPS_MAX_INPUTS];
        for (int32_t k = 0; k < nd->n_in; k++) {
            graph_name_ent *t = graph_nameset_find(&c->tnames, nd->in_names[k]);
            in[k] = t->a < 0 ? t->b : c->nodes[t->a].out_ids[t->b];
        }
        char m[GRAPH_ERR_LEN];
        if (graph_impl_add_node(c->g, nd->name, nd->op, &nd->p, nd->n_in, in, nd->out_names, 0, nd->out_ids, m,
                                sizeof m) < 0) {
            char label[GRAPH_ERR_LEN];
            jl_node_label(c, order[j], label, sizeof label);
            jl_fail(c, label, "%s", m);
            goto done;
        }
    }
    rc = 0;
done:
    free(pstart);
    free(pred);
    free(order);
    return rc;
}

static int jl_outputs(jl_ctx *c, json_t *arr) {
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *s = json_array_get(arr, i);
        char label[64];
        snprintf(label, sizeof label, "outputs[%zu]", i);
        if (!json_is_string(s)) {
            jl_fail(c, label, "must be a tensor name, got %s", jl_type(s));
            return -1;
        }
        graph_name_ent *t = graph_nameset_find(&c->tnames, json_string_value(s));
        if (!t) {
            jl_fail(c, label, "'%s' names no tensor", json_string_value(s));
            return -1;
        }
        int32_t id = t->a < 0 ? t->b : c->nodes[t->a].out_ids[t->b];
        char m[GRAPH_ERR_LEN];
        if (graph_impl_mark_output(c->g, id, m, sizeof m) < 0) {
            jl_fail(c, label, "%s", m);
            return -1;
        }
    }
    return 0;
}

/* A top-level member that must be an array (required, or empty when absent). */
static int jl_array(jl_ctx *c, json_t *root, const char *key, int required, json_t **out) {
    *out = json_object_get(root, key);
    if (!*out) {
        if (required) {
            jl_fail(c, NULL, "missing \"%s\"", key);
            return -1;
        }
        return 0;
    }
    if (!json_is_array(*out)) {
        jl_fail(c, NULL, "\"%s\" must be an array, got %s", key, jl_type(*out));
        return -1;
    }
    return 0;
}

/* The model name when the file gives none: the file name without folder and extension. */
static char *jl_stem(const char *where) {
    const char *b = strrchr(where, '/');
    b = b ? b + 1 : where;
    char *s = base_xstrdup(b);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

/* base_dir: the model's folder (NULL for a string); o: the options, never NULL. */
static graph *jl_load(const char *text, size_t len, const char *where, const char *base_dir,
                      const graph_load_opts *o, char *err, size_t errlen) {
    static const char *const keys[] = {"format", "version", "name", "inputs", "weights", "nodes", "outputs", NULL};
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (je.line > 0)
            base_fail_line(err, errlen, "%s:%d:%d: %s", where, je.line, je.column > 0 ? je.column : 1, je.text);
        else
            base_fail_line(err, errlen, "%s: %s", where, je.text);
        return NULL;
    }
    jl_ctx c;
    memset(&c, 0, sizeof c);
    c.where = where;
    c.err = err;
    c.errlen = errlen;
    graph *result = NULL;
    json_t *inputs = NULL, *weights = NULL, *nodes = NULL, *outputs = NULL;
    const char *fmt, *name;
    if (!json_is_object(root)) {
        jl_fail(&c, NULL, "the top level must be an object, got %s", jl_type(root));
        goto out;
    }
    if (jl_string(&c, NULL, root, "format", 1, &fmt) < 0)
        goto out;
    if (strcmp(fmt, "tasc-model")) {
        jl_fail(&c, NULL, "\"format\" is '%s', expected 'tasc-model'", fmt);
        goto out;
    }
    json_t *ver = json_object_get(root, "version");
    if (!ver) {
        jl_fail(&c, NULL, "missing \"version\"");
        goto out;
    }
    if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
        if (json_is_integer(ver))
            jl_fail(&c, NULL, "unsupported version %lld (this tasc reads version 1)", (long long)json_integer_value(ver));
        else
            jl_fail(&c, NULL, "\"version\" must be an integer, got %s", jl_type(ver));
        goto out;
    }
    if (jl_keys(&c, NULL, root, keys) < 0 || jl_string(&c, NULL, root, "name", 0, &name) < 0 ||
        jl_array(&c, root, "inputs", 0, &inputs) < 0 || jl_array(&c, root, "weights", 0, &weights) < 0 ||
        jl_array(&c, root, "nodes", 1, &nodes) < 0 || jl_array(&c, root, "outputs", 1, &outputs) < 0)
        goto out;
    if (!json_array_size(nodes)) {
        jl_fail(&c, NULL, "\"nodes\" is empty: a model needs at least one node");
        goto out;
    }
    if (!json_array_size(outputs)) {
        jl_fail(&c, NULL, "\"outputs\" is empty: a model needs at least one output");
        goto out;
    }
    if (json_array_size(nodes) > (size_t)(INT32_MAX / OPS_MAX_INPUTS)) {
        jl_fail(&c, NULL, "too many nodes (%zu)", json_array_size(nodes));
        goto out;
    }

    if (name) {
        c.g = graph_new(name);
    } else {
        char *stem = jl_stem(where);
        c.g = graph_new(stem);
        free(stem);
    }
    if (o->max_elements > 0)
        c.g->max_elements = o->max_elements;
    c.g->base_dir = base_dir ? base_xstrdup(base_dir) : NULL;
    c.g->allow_outside_paths = o->allow_outside_paths != 0;
    c.n_nodes = (int32_t)json_array_size(nodes);
    c.nodes = base_xcalloc((size_t)c.n_nodes, sizeof *c.nodes);
    size_t n_names = json_array_size(inputs) + json_array_size(weights) + (size_t)c.n_nodes * OPS_MAX_OUTPUTS;
    graph_nameset_init(&c.tnames, n_names);
    graph_nameset_init(&c.nnames, (size_t)c.n_nodes);
    if (jl_inputs(&c, inputs) < 0 || jl_weights(&c, weights) < 0 || jl_nodes(&c, nodes) < 0 ||
        jl_outputs(&c, outputs) < 0)
        goto out;
    result = c.g;
    c.g = NULL;
out:
    graph_free(c.g);
    for (int32_t i = 0; i < c.n_nodes && c.nodes; i++) {
        free(c.nodes[i].autoname);
        for (int32_t k = 0; k < OPS_MAX_OUTPUTS; k++)
            free(c.nodes[i].own_out[k]);
    }
    free(c.nodes);
    if (c.tnames.pool)
        graph_nameset_free(&c.tnames);
    if (c.nnames.pool)
        graph_nameset_free(&c.nnames);
    json_decref(root);
    return result;
}

graph *graph_load_json_string(const char *text, const char *where, int64_t max_elements, char *err, size_t errlen) {
    if (!where)
        where = "<string>";
    if (!text) {
        base_fail_line(err, errlen, "%s: no text", where);
        return NULL;
    }
    graph_load_opts o = {.max_elements = max_elements};
    return jl_load(text, strlen(text), where, NULL, &o, err, errlen);
}

graph *graph_load_json(const char *path, int64_t max_elements, char *err, size_t errlen) {
    graph_load_opts o = {.max_elements = max_elements};
    return graph_load_json_opts(path, &o, err, errlen);
}

graph *graph_load_json_opts(const char *path, const graph_load_opts *o, char *err, size_t errlen) {
    graph_load_opts def = {0};
    if (!o)
        o = &def;
    FILE *f = fopen(path, "rb");
    if (!f) {
        base_fail_line(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        base_fail_line(err, errlen, "%s: is a directory, not a model file", path);
        fclose(f);
        return NULL;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (int64_t)st.st_size > JL_MAX_FILE_BYTES) {
        base_fail_line(err, errlen, "%s: %lld bytes, larger than the limit of %lld for a model file", path,
                       (long long)st.st_size, (long long)JL_MAX_FILE_BYTES);
        fclose(f);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = base_xmalloc(cap);
    for (;;) {
        if (len == cap) {
            if ((int64_t)cap >= JL_MAX_FILE_BYTES) {
                base_fail_line(err, errlen, "%s: larger than the limit of %lld bytes for a model file", path,
                               (long long)JL_MAX_FILE_BYTES);
                free(buf);
                fclose(f);
                return NULL;
            }
            cap *= 2;
            buf = base_xrealloc(buf, cap);
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        base_fail_line(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    char *dir = base_dirname(path);
    graph *g = jl_load(buf, len, path, dir, o, err, errlen);
    free(dir);
    free(buf);
    return g;
}

/* =============================================================================================
 * saving
 */
void graph_json_put(graph_json_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + n + 1 > cap)
            cap *= 2;
        b->s = base_xrealloc(b->s, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void js_puts(graph_json_buf *b, const char *s) { graph_json_put(b, s, strlen(s)); }

static void js_indent(graph_json_buf *b, int n) {
    for (int i = 0; i < n; i++)
        graph_json_put(b, " ", 1);
}

void graph_json_put_str(graph_json_buf *b, const char *s, int upper_hex) {
    graph_json_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        switch (*c) {
        case '"': graph_json_put(b, "\\\"", 2); break;
        case '\\': graph_json_put(b, "\\\\", 2); break;
        case '\b': graph_json_put(b, "\\b", 2); break;
        case '\f': graph_json_put(b, "\\f", 2); break;
        case '\n': graph_json_put(b, "\\n", 2); break;
        case '\r': graph_json_put(b, "\\r", 2); break;
        case '\t': graph_json_put(b, "\\t", 2); break;
        default:
            if (*c < 0x20) {
                snprintf(esc, sizeof esc, upper_hex ? "\\u%04X" : "\\u%04x", *c);
                graph_json_put(b, esc, strlen(esc));
            } else {
                graph_json_put(b, (const char *)c, 1);
            }
        }
    }
    graph_json_put(b, "\"", 1);
}

/* The shortest decimal that reads back (strtod, then to float) to the same float bits; always
 * with a '.' or an exponent so that it reads as a real. */
static void js_float_str(float f, char *buf, size_t len) {
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, (double)f);
        float back;
        if (js_to_float(strtod(buf, NULL), &back) == 0 && memcmp(&back, &f, sizeof f) == 0)
            break;
    }
    if (!strpbrk(buf, ".eE"))
        strncat(buf, ".0", len - strlen(buf) - 1);
}

static int js_is_container(const json_t *v) { return json_is_object(v) || json_is_array(v); }

static void js_scalar(graph_json_buf *b, const json_t *v) {
    char tmp[64];
    switch (json_typeof(v)) {
    case JSON_STRING: graph_json_put_str(b, json_string_value(v), 0); break;
    case JSON_INTEGER:
        snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(v));
        js_puts(b, tmp);
        break;
    case JSON_REAL: /* every real in a model is a float32 */
        js_float_str((float)json_real_value(v), tmp, sizeof tmp);
        js_puts(b, tmp);
        break;
    case JSON_TRUE: js_puts(b, "true"); break;
    case JSON_FALSE: js_puts(b, "false"); break;
    case JSON_NULL: js_puts(b, "null"); break;
    case JSON_OBJECT:
    case JSON_ARRAY: break;
    }
}

static void js_inline(graph_json_buf *b, const json_t *v) {
    if (json_is_object(v)) {
        const char *key;
        json_t *x;
        int first = 1;
        graph_json_put(b, "{", 1);
        json_object_foreach((json_t *)v, key, x) {
            if (!first)
                graph_json_put(b, ", ", 2);
            first = 0;
            graph_json_put_str(b, key, 0);
            graph_json_put(b, ": ", 2);
            js_inline(b, x);
        }
        graph_json_put(b, "}", 1);
    } else if (json_is_array(v)) {
        graph_json_put(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                graph_json_put(b, ", ", 2);
            js_inline(b, json_array_get(v, i));
        }
        graph_json_put(b, "]", 1);
    } else {
        js_scalar(b, v);
    }
}

/* Write v at column 'col' (indent of its line is 'indent'): on one line if it fits in JS_WIDTH
 * columns (counting a trailing comma), else one member per line, indented by two more. */
static void js_emit(graph_json_buf *b, const json_t *v, int indent, size_t col, int top) {
    if (!js_is_container(v)) {
        js_scalar(b, v);
        return;
    }
    graph_json_buf one = {0};
    js_inline(&one, v);
    size_t size = json_is_object(v) ? json_object_size(v) : json_array_size(v);
    if (size == 0 || (!top && col + one.n + 1 <= JS_WIDTH)) {
        graph_json_put(b, one.s, one.n);
        free(one.s);
        return;
    }
    free(one.s);
    if (json_is_object(v)) {
        const char *key;
        json_t *x;
        size_t i = 0;
        graph_json_put(b, "{\n", 2);
        json_object_foreach((json_t *)v, key, x) {
            js_indent(b, indent + 2);
            size_t before = b->n;
            graph_json_put_str(b, key, 0);
            graph_json_put(b, ": ", 2);
            js_emit(b, x, indent + 2, (size_t)indent + 2 + (b->n - before), 0);
            js_puts(b, ++i < size ? ",\n" : "\n");
        }
        js_indent(b, indent);
        graph_json_put(b, "}", 1);
    } else {
        graph_json_put(b, "[\n", 2);
        for (size_t i = 0; i < size; i++) {
            js_indent(b, indent + 2);
            js_emit(b, json_array_get(v, i), indent + 2, (size_t)indent + 2, 0);
            js_puts(b, i + 1 < size ? ",\n" : "\n");
        }
        js_indent(b, indent);
        graph_json_put(b, "]", 1);
    }
}

typedef struct {
    int bad;
    char *err;
    size_t errlen;
} js_ctx;

/* json_string that records an error for text jansson refuses (not UTF-8). */
static json_t *js_str(js_ctx *c, const char *s, const char *what) {
    json_t *v = json_string(s ? s : "");
    if (!v) {
        if (!c->bad)
            base_fail_line(c->err, c->errlen, "%s is not valid UTF-8", what);
        c->bad = 1;
        return json_null();
    }
    return v;
}

static json_t *js_shape(const ops_shape *s) {
    json_t *a = json_array();
    for (int32_t d = 0; d < s->rank; d++)
        json_array_append_new(a, json_integer((json_int_t)s->dims[d]));
    return a;
}

static json_t *js_real(js_ctx *c, float f, const char *what) {
    if (!isfinite(f)) {
        if (!c->bad)
            base_fail_line(c->err, c->errlen, "%s is %g, not a finite number", what, (double)f);
        c->bad = 1;
        return json_null();
    }
    return json_real((double)f);
}

static json_t *js_params(js_ctx *c, const graph_node *nd) {
    const ops_desc *od = &ops_table[nd->op];
    json_t *o = json_object();
    for (int32_t i = 0; i < od->n_params; i++) {
        ops_param_key k = od->params[i].key;
        const char *pn = graph_impl_param_name(&od->params[i]);
        int64_t v = nd->p.v[k];
        json_t *x = NULL;
        switch (ops_param_table[k].kind) {
        case OPS_PK_INT: x = json_integer((json_int_t)v); break;
        case OPS_PK_FLOAT: {
            char what[GRAPH_ERR_LEN];
            snprintf(what, sizeof what, "node '%s': parameter '%s'", nd->name, pn);
            float f = ops_p2f(v);
            x = isinf(f) ? json_string(f > 0 ? "inf" : "-inf") : js_real(c, f, what);
            break;
        }
        case OPS_PK_ACT:
            x = v >= 0 && v < OPS_ACT_COUNT ? json_string(ops_act_names[v]) : json_integer((json_int_t)v);
            break;
        case OPS_PK_PADMODE:
            x = v >= 0 && v < OPS_PAD_COUNT ? json_string(ops_padmode_names[v]) : json_integer((json_int_t)v);
            break;
        case OPS_PK_LIST:
            x = json_array();
            for (int32_t j = 0; j < nd->p.n_list && j < OPS_MAX_LIST; j++)
                json_array_append_new(x, json_integer((json_int_t)nd->p.list[j]));
            break;
        }
        json_object_set_new(o, pn, x);
    }
    return o;
}

static json_t *js_init(js_ctx *c, const graph_tensor *ts) {
    json_t *o = json_object();
    char what[GRAPH_ERR_LEN];
    snprintf(what, sizeof what, "weight '%s': init", ts->name);
    switch (ts->init.kind) {
    case GRAPH_INIT_RANDOM:
        json_object_set_new(o, "kind", json_string("random"));
        json_object_set_new(o, "seed", json_integer((json_int_t)(int64_t)ts->init.seed));
        json_object_set_new(o, "mean", js_real(c, ts->init.mean, what));
        json_object_set_new(o, "std", js_real(c, ts->init.std, what));
        break;
    case GRAPH_INIT_CONSTANT:
        json_object_set_new(o, "kind", json_string("constant"));
        json_object_set_new(o, "value", js_real(c, ts->init.value, what));
        break;
    case GRAPH_INIT_FILE:
        json_object_set_new(o, "kind", json_string("file"));
        json_object_set_new(o, "path", js_str(c, ts->init.path, what));
        json_object_set_new(o, "offset", json_integer((json_int_t)ts->init.offset));
        break;
    case GRAPH_INIT_DATA: /* never inline: graph_save_json moves these to the sidecar first */
        if (!c->bad)
            base_fail_line(c->err, c->errlen, "weight '%s' holds values in memory, which only graph_save_json "
                           "can write (into the sidecar weights file)", ts->name);
        c->bad = 1;
        break;
    case GRAPH_INIT_COUNT:
        break;
    }
    return o;
}

/* The model as JSON text (caller frees), or NULL with a message. */
static char *js_text(const graph *g, char *err, size_t errlen) {
    if (graph_validate(g, err, errlen) < 0)
        return NULL;
    int32_t *order = base_xmalloc((size_t)g->n_nodes * sizeof *order);
    if (graph_topo_order(g, order, err, errlen) < 0) {
        free(order);
        return NULL;
    }
    js_ctx c = {0, err, errlen};
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string("tasc-model"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "name", js_str(&c, g->name, "the model name"));

    json_t *ins = json_array();
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const graph_tensor *ts = &g->tensors[g->inputs[i]];
        json_t *o = json_object();
        json_object_set_new(o, "name", js_str(&c, ts->name, "an input name"));
        json_object_set_new(o, "shape", js_shape(&ts->shape));
        json_object_set_new(o, "dtype", json_string(ts->dtype == GRAPH_DT_I64 ? "int64" : "float32"));
        json_array_append_new(ins, o);
    }
    json_object_set_new(root, "inputs", ins);

    json_t *ws = json_array();
    for (int32_t i = 0; i < g->n_weights; i++) {
        const graph_tensor *ts = &g->tensors[g->weights[i]];
        json_t *o = json_object();
        json_object_set_new(o, "name", js_str(&c, ts->name, "a weight name"));
        json_object_set_new(o, "shape", js_shape(&ts->shape));
        json_object_set_new(o, "init", js_init(&c, ts));
        json_array_append_new(ws, o);
    }
    json_object_set_new(root, "weights", ws);

    json_t *ns = json_array();
    for (int32_t j = 0; j < g->n_nodes; j++) {
        const graph_node *nd = &g->nodes[order[j]];
        json_t *o = json_object();
        json_object_set_new(o, "name", js_str(&c, nd->name, "a node name"));
        json_object_set_new(o, "op", json_string(ops_table[nd->op].name));
        json_t *in = json_array();
        for (int32_t k = 0; k < nd->n_in; k++)
            json_array_append_new(in, js_str(&c, g->tensors[nd->in[k]].name, "a tensor name"));
        json_object_set_new(o, "inputs", in);
        if (ops_table[nd->op].n_params)
            json_object_set_new(o, "params", js_params(&c, nd));
        /* output names only where they differ from the default naming */
        int deflt = 1;
        size_t nl = strlen(nd->name) + 16;
        char *dn = base_xmalloc(nl);
        for (int32_t k = 0; k < nd->n_out && deflt; k++) {
            if (nd->n_out == 1)
                snprintf(dn, nl, "%s", nd->name);
            else
                snprintf(dn, nl, "%s:%d", nd->name, (int)k);
            deflt = !strcmp(dn, g->tensors[nd->out[k]].name);
        }
        free(dn);
        if (!deflt) {
            json_t *outs = json_array();
            for (int32_t k = 0; k < nd->n_out; k++)
                json_array_append_new(outs, js_str(&c, g->tensors[nd->out[k]].name, "a tensor name"));
            json_object_set_new(o, "outputs", outs);
        }
        json_array_append_new(ns, o);
    }
    json_object_set_new(root, "nodes", ns);

    json_t *outs = json_array();
    for (int32_t i = 0; i < g->n_outputs; i++)
        json_array_append_new(outs, js_str(&c, g->tensors[g->outputs[i]].name, "a tensor name"));
    json_object_set_new(root, "outputs", outs);
    free(order);

    char *text = NULL;
    if (!c.bad) {
        graph_json_buf b = {0};
        js_emit(&b, root, 0, 0, 1);
        graph_json_put(&b, "\n", 1);
        text = b.s;
    }
    json_decref(root);
    return text;
}

char *graph_to_json_string(const graph *g) { return js_text(g, NULL, 0); }

char *graph_sidecar_path(const char *json_path) {
    size_t n = strlen(json_path);
    size_t stem = n >= 5 && !strcmp(json_path + n - 5, ".json") ? n - 5 : n;
    char *p = base_xmalloc(stem + sizeof ".weights.bin");
    memcpy(p, json_path, stem);
    memcpy(p + stem, ".weights.bin", sizeof ".weights.bin");
    return p;
}

static int js_in_sidecar(const graph_tensor *ts) {
    return ts->init.kind == GRAPH_INIT_DATA || ts->init.kind == GRAPH_INIT_FILE;
}

int graph_has_sidecar_weights(const graph *g) {
    for (int32_t i = 0; i < g->n_weights; i++)
        if (js_in_sidecar(&g->tensors[g->weights[i]]))
            return 1;
    return 0;
}

/* fwrite all of buf; -1 with a message naming path. */
static int js_write_all(FILE *f, const void *buf, size_t len, const char *path, char *err, size_t errlen) {
    if (len && fwrite(buf, 1, len, f) != len)
        return base_fail_line(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

/* Write n float32 values little-endian, through a bounded buffer. */
static int js_write_le(FILE *f, const float *v, int64_t n, const char *path, char *err, size_t errlen) {
    uint8_t buf[1 << 16];
    for (int64_t at = 0; at < n;) {
        int64_t m = n - at < (int64_t)sizeof buf / 4 ? n - at : (int64_t)sizeof buf / 4;
        for (int64_t j = 0; j < m; j++) {
            uint32_t u;
            memcpy(&u, &v[at + j], 4);
            buf[4 * j] = (uint8_t)u;
            buf[4 * j + 1] = (uint8_t)(u >> 8);
            buf[4 * j + 2] = (uint8_t)(u >> 16);
            buf[4 * j + 3] = (uint8_t)(u >> 24);
        }
        if (js_write_all(f, buf, (size_t)m * 4, path, err, errlen) < 0)
            return -1;
        at += m;
    }
    return 0;
}

/* The sidecar's layout: off[i] = the byte offset of weight i (declaration order) in the sidecar,
 * -1 for weights that stay in the JSON; src[i] = i for a weight stored here, else the earlier
 * weight whose values it shares. Returns the sidecar's size in bytes. */
static int64_t js_sidecar_layout(const graph *g, int64_t *off, int32_t *src) {
    int64_t at = 0;
    for (int32_t i = 0; i < g->n_weights; i++) {
        const graph_tensor *ts = &g->tensors[g->weights[i]];
        off[i] = -1;
        src[i] = i;
        if (!js_in_sidecar(ts))
            continue;
        int64_t n = ops_shape_numel(&ts->shape);
        for (int32_t j = 0; j < i && off[i] < 0; j++) {
            const graph_tensor *o = &g->tensors[g->weights[j]];
            if (o->init.kind != ts->init.kind || ops_shape_numel(&o->shape) != n)
                continue;
            int same = ts->init.kind == GRAPH_INIT_DATA
                           ? o->init.blob == ts->init.blob
                           : o->init.offset == ts->init.offset && !strcmp(o->init.path, ts->init.path);
            if (same) {
                off[i] = off[j];
                src[i] = src[j];
            }
        }
        if (off[i] >= 0)
            continue;
        at += (GRAPH_SIDECAR_ALIGN - at % GRAPH_SIDECAR_ALIGN) % GRAPH_SIDECAR_ALIGN;
        off[i] = at;
        at += 4 * n;
    }
    return at;
}

/* Write the sidecar's values (layout above) to f; path names it in messages. */
static int js_sidecar_write(const graph *g, const int64_t *off, const int32_t *src, FILE *f, const char *path,
                            char *err, size_t errlen) {
    static const uint8_t zeros[GRAPH_SIDECAR_ALIGN];
    int64_t at = 0;
    for (int32_t i = 0; i < g->n_weights; i++) {
        if (off[i] < 0 || src[i] != i)
            continue;
        const graph_tensor *ts = &g->tensors[g->weights[i]];
        int64_t n = ops_shape_numel(&ts->shape);
        if (js_write_all(f, zeros, (size_t)(off[i] - at), path, err, errlen) < 0)
            return -1;
        at = off[i];
        const float *v = NULL;
        float *buf = NULL;
        if (ts->init.kind == GRAPH_INIT_DATA) {
            v = graph_blob_data(ts->init.blob);
        } else {
            buf = malloc((size_t)n * sizeof *buf);
            if (!buf) {
                base_fail_line(err, errlen, "%s: out of memory for the %lld values of weight '%s'", path,
                               (long long)n, ts->name);
                return -1;
            }
            char m[GRAPH_ERR_LEN];
            if (graph_weight_values(g, g->weights[i], buf, m, sizeof m) < 0) {
                base_fail_line(err, errlen, "%s: %s", path, m);
                free(buf);
                return -1;
            }
            v = buf;
        }
        int rc = js_write_le(f, v, n, path, err, errlen);
        free(buf);
        if (rc < 0)
            return -1;
        at += 4 * n;
    }
    return 0;
}

static int js_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int graph_save_json(const graph *g, const char *path, char *err, size_t errlen) {
    int rc = -1;
    char m[GRAPH_ERR_LEN];
    char *side = NULL, *text = NULL;
    base_afile side_f = {0}, json_f = {0};
    int64_t *off = NULL;
    int32_t *src = NULL;
    graph *c = NULL;
    int side_placed = 0;
    /* refused before anything is written: the last rename would fail after the sidecar's */
    if (js_is_dir(path)) {
        base_fail_line(err, errlen, "%s: not saved: it is a folder", path);
        return -1;
    }
    const graph *out = g;
    if (graph_has_sidecar_weights(g)) {
        side = graph_sidecar_path(path);
        if (js_is_dir(side)) {
            base_fail_line(err, errlen, "%s: not saved: its weights file %s is a folder", path, side);
            goto done;
        }
        const char *slash = strrchr(side, '/');
        const char *side_rel = slash ? slash + 1 : side; /* the JSON's folder is the sidecar's */
        off = base_xmalloc(((size_t)g->n_weights + 1) * sizeof *off);
        src = base_xmalloc(((size_t)g->n_weights + 1) * sizeof *src);
        js_sidecar_layout(g, off, src);
        /* the JSON is written from a clone whose sidecar weights name the sidecar */
        c = graph_clone(g);
        for (int32_t i = 0; i < c->n_weights; i++) {
            if (off[i] < 0)
                continue;
            graph_init *in = &c->tensors[c->weights[i]].init;
            free(in->path);
            graph_blob_unref(in->blob);
            in->blob = NULL;
            in->kind = GRAPH_INIT_FILE;
            in->path = base_xstrdup(side_rel);
            in->offset = off[i];
        }
        out = c;
    }
    text = js_text(out, m, sizeof m);
    if (!text) {
        base_fail_line(err, errlen, "%s: not saved: %s", path, m);
        goto done;
    }
    /* both files are complete before either is renamed into place */
    if (side && (base_afile_open(&side_f, side, err, errlen) < 0 ||
                 js_sidecar_write(g, off, src, side_f.f, side, err, errlen) < 0))
        goto done;
    if (base_afile_open(&json_f, path, err, errlen) < 0 ||
        js_write_all(json_f.f, text, strlen(text), path, err, errlen) < 0)
        goto done;
    if (side) {
        if (base_afile_commit(&side_f, err, errlen) < 0)
            goto done;
        side_placed = 1;
    }
    if (base_afile_commit(&json_f, err, errlen) < 0)
        goto done;
    rc = 0;
done:
    base_afile_abort(&side_f); /* no-ops once committed */
    base_afile_abort(&json_f);
    if (rc < 0 && side_placed)
        unlink(side); /* no sidecar without its JSON */
    free(side);
    free(text);
    free(off);
    free(src);
    graph_free(c);
    return rc;
}
