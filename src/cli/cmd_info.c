/* cmd_info.c: `tasc info MODEL [--json]` -- what a model is made of: inputs and outputs with
 * shapes, node count, operator counts in op-table order, FLOPs, multiply-adds, parameters and
 * activation bytes. Text for people, --json (jansson, fixed key order) for scripts; both are
 * deterministic. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph.h"

static const char *const info_dtype_names[GRAPH_DT_COUNT] = {[GRAPH_DT_F32] = "float32", [GRAPH_DT_I64] = "int64"};

typedef struct {
    int json;
    cmd_model_opts mo;
} info_args;

static const cmd_opt info_opts[] = {
    CMD_FLAG("--json", offsetof(info_args, json), "one JSON object on stdout instead of text"),
    CMD_MODEL_OPTS(offsetof(info_args, mo)),
    CMD_OPT_END,
};

static void info_usage(const info_args *defaults) {
    printf("usage: tasc info MODEL [--json] [ONNX options]\n"
           "\n"
           "Print what a model is made of: its inputs and outputs with shapes, the node count,\n"
           "the operator counts (in op-table order), total FLOPs (a multiply-add counts 2; bias\n"
           "adds and activations 1 per element), the multiply-adds of conv2d and matmul (the\n"
           "figure papers publish), the parameter count and bytes (float32), and the bytes of all\n"
           "intermediate tensors.\n"
           "\n"
           "options:\n");
    cmd_opts_help(info_opts, defaults);
    printf("\n"
           "environment: TASC_MAX_ELEMENTS  per-tensor element limit when loading\n"
           "exit codes: 0 ok, 1 bad model file, 2 bad command line\n");
}

typedef struct {
    graph_stats st;
    int64_t n_params;   /* elements of all weights */
    double macs;        /* multiply-adds of conv2d and matmul (the figure papers publish) */
} info_totals;

static void info_compute(const graph *g, info_totals *t) {
    memset(t, 0, sizeof *t);
    graph_get_stats(g, &t->st);
    for (int32_t i = 0; i < g->n_weights; i++) {
        int64_t n = ops_shape_numel(&g->tensors[g->weights[i]].shape);
        if (n > 0)
            t->n_params += n;
    }
    for (int32_t i = 0; i < g->n_nodes; i++)
        t->macs += graph_node_macs(g, &g->nodes[i]);
}

static json_t *info_tensor_list(const graph *g, const int32_t *ids, int32_t n) {
    json_t *arr = json_array();
    for (int32_t i = 0; i < n; i++) {
        const graph_tensor *ts = &g->tensors[ids[i]];
        json_t *o = json_object();
        json_t *dims = json_array();
        for (int32_t d = 0; d < ts->shape.rank; d++)
            json_array_append_new(dims, json_integer(ts->shape.dims[d]));
        json_object_set_new(o, "name", json_string(ts->name));
        json_object_set_new(o, "dtype", json_string(info_dtype_names[ts->dtype]));
        json_object_set_new(o, "shape", dims);
        json_array_append_new(arr, o);
    }
    return arr;
}

static int info_json(const graph *g, const char *path) {
    info_totals t;
    info_compute(g, &t);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(g->name ? g->name : ""));
    json_object_set_new(o, "file", json_string(path));
    json_object_set_new(o, "inputs", info_tensor_list(g, g->inputs, g->n_inputs));
    json_object_set_new(o, "outputs", info_tensor_list(g, g->outputs, g->n_outputs));
    json_object_set_new(o, "nodes", json_integer(t.st.n_nodes));
    json_t *ops = json_object();
    for (int op = 0; op < OP_COUNT; op++)
        if (t.st.op_count[op])
            json_object_set_new(ops, ops_table[op].name, json_integer(t.st.op_count[op]));
    json_object_set_new(o, "op_counts", ops);
    json_object_set_new(o, "flops", json_real(t.st.flops));
    json_object_set_new(o, "multiply_adds", json_real(t.macs));
    json_object_set_new(o, "params", json_integer(t.n_params));
    json_object_set_new(o, "param_bytes", json_integer(t.st.param_bytes));
    json_object_set_new(o, "activation_bytes", json_integer(t.st.act_bytes));
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!s) {
        cmd_error("info", "%s: out of memory writing JSON", path);
        return TASC_EXIT_INTERNAL;
    }
    printf("%s\n", s);
    free(s);
    return TASC_EXIT_OK;
}

static void info_bytes(char *buf, size_t len, int64_t b) {
    if (b >= (INT64_C(1) << 30))
        snprintf(buf, len, "%lld (%.2f GiB)", (long long)b, (double)b / (1 << 30));
    else if (b >= (INT64_C(1) << 20))
        snprintf(buf, len, "%lld (%.2f MiB)", (long long)b, (double)b / (1 << 20));
    else
        snprintf(buf, len, "%lld (%.2f KiB)", (long long)b, (double)b / (1 << 10));
}

static int info_text(const graph *g, const char *path) {
    info_totals t;
    info_compute(g, &t);
    char sh[128], b[64];
    printf("model: %s (%s)\n", g->name ? g->name : "", path);
    printf("inputs:\n");
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const graph_tensor *ts = &g->tensors[g->inputs[i]];
        printf("  %-24s %-7s %s\n", ts->name, info_dtype_names[ts->dtype], ops_shape_str(&ts->shape, sh, sizeof sh));
    }
    printf("outputs:\n");
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const graph_tensor *ts = &g->tensors[g->outputs[i]];
        printf("  %-24s %-7s %s\n", ts->name, info_dtype_names[ts->dtype], ops_shape_str(&ts->shape, sh, sizeof sh));
    }
    printf("nodes: %d\n", (int)t.st.n_nodes);
    printf("ops:\n");
    for (int op = 0; op < OP_COUNT; op++)
        if (t.st.op_count[op])
            printf("  %-16s %d\n", ops_table[op].name, (int)t.st.op_count[op]);
    printf("flops: %.0f (%.4f G)\n", t.st.flops, t.st.flops / 1e9);
    printf("multiply-adds (conv2d, matmul): %.0f (%.4f G)\n", t.macs, t.macs / 1e9);
    info_bytes(b, sizeof b, t.st.param_bytes);
    printf("params: %lld\n", (long long)t.n_params);
    printf("param bytes: %s\n", b);
    info_bytes(b, sizeof b, t.st.act_bytes);
    printf("activation bytes: %s\n", b);
    return TASC_EXIT_OK;
}

int cmd_info(int argc, char **argv) {
    info_args a;
    memset(&a, 0, sizeof a);
    if (cmd_wants_help(argc, argv)) {
        info_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *model = NULL;
    if (cmd_opts_parse("info", info_opts, &a, argc, argv, 1, &model, 1) < 0)
        return TASC_EXIT_USAGE;
    if (!model) {
        cmd_error("info", "missing MODEL (tasc info --help)");
        return TASC_EXIT_USAGE;
    }
    graph *g = cmd_load_model_opts("info", model, &a.mo);
    if (!g)
        return TASC_EXIT_INPUT;
    int rc = a.json ? info_json(g, model) : info_text(g, model);
    graph_free(g);
    return rc;
}
