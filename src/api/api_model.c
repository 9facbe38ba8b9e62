/* api_model.c: models in the public API -- loading (onnx_load_model, the loader the CLI uses),
 * saving, ONNX export, JSON and DOT text, the inputs and outputs, and the figures of `tasc info`.
 *
 * A tasc_model owns its graph; names handed out (tasc_tensor_info.name, tasc_model_name) point
 * into it. Text results are malloc'd and freed by the caller with tasc_free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "onnx.h"

#define API_CHECK(cond, ...) \
    do { \
        if (!(cond)) \
            return api_fail(TASC_ERR_USAGE, __VA_ARGS__); \
    } while (0)

TASC_API void tasc_load_opts_default(tasc_load_opts *o) {
    if (o)
        memset(o, 0, sizeof *o);
}

TASC_API tasc_status tasc_model_load(const char *path, const tasc_load_opts *o, tasc_model **out) {
    API_CHECK(out, "tasc_model_load: out is NULL");
    API_CHECK(path && *path, "tasc_model_load: no path given");
    onnx_import_opts oo;
    onnx_import_opts_default(&oo);
    if (o) {
        API_CHECK(o->max_elements >= 0, "max_elements: %lld is negative", (long long)o->max_elements);
        API_CHECK(o->n_dims >= 0 && (o->n_dims == 0 || (o->dim_names && o->dim_values)),
                  "dims: %d names and values, without the arrays", (int)o->n_dims);
        for (int32_t i = 0; i < o->n_dims; i++)
            API_CHECK(o->dim_names[i] && *o->dim_names[i] && o->dim_values[i] > 0,
                      "dim %d: a name and a positive value are needed", (int)i);
        oo.random_weights = o->random_weights;
        oo.seed = o->weights_seed;
        oo.n_dims = o->n_dims;
        oo.dim_names = o->dim_names;
        oo.dim_values = o->dim_values;
        oo.max_elements = o->max_elements;
        oo.allow_outside_paths = o->allow_outside_paths;
    }
    char err[API_ERR_LEN];
    graph *g = onnx_load_model(path, &oo, err, sizeof err);
    if (!g)
        return api_fail(TASC_ERR_INPUT, "%s", err);
    *out = api_model_wrap(g);
    return TASC_OK;
}

TASC_API tasc_status tasc_model_from_json(const char *text, const char *where, tasc_model **out) {
    API_CHECK(out, "tasc_model_from_json: out is NULL");
    API_CHECK(text, "tasc_model_from_json: text is NULL");
    char err[API_ERR_LEN];
    graph *g = graph_load_json_string(text, where ? where : "(string)", 0, err, sizeof err);
    if (!g)
        return api_fail(TASC_ERR_INPUT, "%s", err);
    *out = api_model_wrap(g);
    return TASC_OK;
}

TASC_API void tasc_model_free(tasc_model *m) {
    if (!m)
        return;
    graph_free(m->g);
    free(m);
}

TASC_API tasc_status tasc_model_clone(const tasc_model *m, tasc_model **out) {
    API_CHECK(m && out, "tasc_model_clone: NULL argument");
    *out = api_model_wrap(graph_clone(m->g));
    return TASC_OK;
}

TASC_API tasc_status tasc_model_save(const tasc_model *m, const char *path) {
    API_CHECK(m && path && *path, "tasc_model_save: NULL model or no path");
    char err[API_ERR_LEN];
    if (graph_save_json(m->g, path, err, sizeof err) < 0)
        return api_fail(TASC_ERR_INPUT, "%s", err);
    return TASC_OK;
}

TASC_API tasc_status tasc_model_export_onnx(const tasc_model *m, const char *path) {
    API_CHECK(m && path && *path, "tasc_model_export_onnx: NULL model or no path");
    char err[API_ERR_LEN];
    if (onnx_export(m->g, path, err, sizeof err) < 0)
        return api_fail(TASC_ERR_INPUT, "%s", err);
    return TASC_OK;
}

TASC_API tasc_status tasc_model_to_json(const tasc_model *m, char **text) {
    API_CHECK(m && text, "tasc_model_to_json: NULL argument");
    char *s = graph_to_json_string(m->g);
    if (!s)
        return api_fail(TASC_ERR_INPUT, "%s: weights held in memory (an imported or optimized model) can only be "
                        "written by tasc_model_save, into a sidecar file", m->g->name ? m->g->name : "model");
    *text = s;
    return TASC_OK;
}

TASC_API tasc_status tasc_model_to_dot(const tasc_model *m, char **text) {
    API_CHECK(m && text, "tasc_model_to_dot: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return api_fail(TASC_ERR_INTERNAL, "out of memory writing DOT");
    graph_write_dot(m->g, f);
    if (fclose(f) != 0) {
        free(buf);
        return api_fail(TASC_ERR_INTERNAL, "out of memory writing DOT");
    }
    *text = buf;
    return TASC_OK;
}

TASC_API const char *tasc_model_name(const tasc_model *m) { return m && m->g->name ? m->g->name : ""; }
TASC_API int32_t tasc_model_num_inputs(const tasc_model *m) { return m ? m->g->n_inputs : 0; }
TASC_API int32_t tasc_model_num_outputs(const tasc_model *m) { return m ? m->g->n_outputs : 0; }

static void api_tensor_info(const graph_tensor *t, tasc_tensor_info *info) {
    memset(info, 0, sizeof *info);
    info->name = t->name;
    info->dtype = t->dtype == GRAPH_DT_I64 ? TASC_INT64 : TASC_FLOAT32;
    info->rank = t->shape.rank;
    for (int32_t d = 0; d < t->shape.rank; d++)
        info->dims[d] = t->shape.dims[d];
    info->numel = ops_shape_numel(&t->shape);
}

TASC_API tasc_status tasc_model_input(const tasc_model *m, int32_t i, tasc_tensor_info *info) {
    API_CHECK(m && info, "tasc_model_input: NULL argument");
    API_CHECK(i >= 0 && i < m->g->n_inputs, "input %d: the model has %d inputs", (int)i, (int)m->g->n_inputs);
    api_tensor_info(&m->g->tensors[m->g->inputs[i]], info);
    return TASC_OK;
}

TASC_API tasc_status tasc_model_output(const tasc_model *m, int32_t j, tasc_tensor_info *info) {
    API_CHECK(m && info, "tasc_model_output: NULL argument");
    API_CHECK(j >= 0 && j < m->g->n_outputs, "output %d: the model has %d outputs", (int)j, (int)m->g->n_outputs);
    api_tensor_info(&m->g->tensors[m->g->outputs[j]], info);
    return TASC_OK;
}

TASC_API tasc_status tasc_model_stats_get(const tasc_model *m, tasc_model_stats *st) {
    API_CHECK(m && st, "tasc_model_stats_get: NULL argument");
    const graph *g = m->g;
    graph_stats gs;
    graph_get_stats(g, &gs);
    memset(st, 0, sizeof *st);
    st->nodes = gs.n_nodes;
    st->inputs = g->n_inputs;
    st->outputs = g->n_outputs;
    st->weights = g->n_weights;
    st->flops = gs.flops;
    st->param_bytes = gs.param_bytes;
    st->activation_bytes = gs.act_bytes;
    for (int32_t i = 0; i < g->n_weights; i++) {
        int64_t n = ops_shape_numel(&g->tensors[g->weights[i]].shape);
        if (n > 0)
            st->params += n;
    }
    for (int32_t i = 0; i < g->n_nodes; i++)
        st->multiply_adds += graph_node_macs(g, &g->nodes[i]);
    return TASC_OK;
}

TASC_API int32_t tasc_op_count(void) { return OP_COUNT; }
TASC_API const char *tasc_op_name(int32_t k) { return k >= 0 && k < OP_COUNT ? ops_table[k].name : NULL; }

TASC_API int32_t tasc_model_op_nodes(const tasc_model *m, int32_t k) {
    if (!m || k < 0 || k >= OP_COUNT)
        return 0;
    int32_t n = 0;
    for (int32_t i = 0; i < m->g->n_nodes; i++)
        n += m->g->nodes[i].op == (ops_type)k;
    return n;
}
