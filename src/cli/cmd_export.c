/* cmd_export.c: `tasc export MODEL --out MODEL.onnx` -- a model (JSON, or ONNX for a round trip)
 * written as an ONNX model (opset 17) with its weights as initializers, through a temporary file
 * and a rename.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "graph.h"
#include "onnx.h"

static const cmd_opt export_opts[] = {
    CMD_STR("--out", "FILE", offsetof(cmd_model_out, out), "the ONNX file to write (required)"),
    CMD_MODEL_OPTS(offsetof(cmd_model_out, mo)),
    CMD_OPT_END,
};

static void export_usage(const cmd_model_out *defaults) {
    printf("usage: tasc export MODEL --out FILE.onnx [--random-weights] [--weights-seed S] [--dim NAME=N]\n"
           "\n"
           "Write a model (.json, or .onnx) as an ONNX model: ir_version 8, opset %d, every weight an\n"
           "initializer with its values, fused activations as standard nodes (GELU as its Erf form),\n"
           "the generator-only constant operators as initializers. The result passes onnx.checker and\n"
           "runs in onnxruntime with the outputs of `tasc run` (tests/onnx_ort_check.py checks that).\n"
           "\n"
           "options:\n",
           ONNX_EXPORT_OPSET);
    cmd_opts_help(export_opts, defaults);
    printf("\n"
           "exit codes: 0 ok, 1 bad model or unreadable weights, 2 bad command line\n");
}

int cmd_export(int argc, char **argv) {
    cmd_model_out a;
    memset(&a, 0, sizeof a);
    if (cmd_wants_help(argc, argv)) {
        export_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *model;
    int ar = cmd_model_out_args("export", export_opts, argc, argv, "tasc export MODEL --out FILE.onnx", &model, &a);
    if (ar != TASC_EXIT_OK)
        return ar;
    graph *g = cmd_load_model_opts("export", model, &a.mo);
    if (!g)
        return TASC_EXIT_INPUT;
    char err[GRAPH_ERR_LEN + 256];
    int rc = onnx_export(g, a.out, err, sizeof err);
    if (rc < 0)
        cmd_error("export", "%s", err);
    else
        printf("exported %s: %d nodes, %d weights; wrote %s\n", model, (int)g->n_nodes, (int)g->n_weights, a.out);
    graph_free(g);
    return rc < 0 ? TASC_EXIT_INPUT : TASC_EXIT_OK;
}
