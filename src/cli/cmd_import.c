/* cmd_import.c: `tasc import MODEL.onnx --out MODEL.json` -- an ONNX model into a JSON model with
 * its real weights in the sidecar file MODEL.weights.bin (graph_save_json; format in graph/graph.h).
 * Both files are written through temporaries and renames: on any error nothing is left at the
 * output paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph.h"
#include "onnx.h"

static const cmd_opt import_opts[] = {
    CMD_STR("--out", "FILE", offsetof(cmd_model_out, out), "the JSON model to write (required)"),
    CMD_MODEL_OPTS(offsetof(cmd_model_out, mo)),
    CMD_OPT_END,
};

static void import_usage(const cmd_model_out *defaults) {
    printf("usage: tasc import MODEL.onnx --out MODEL.json [--random-weights] [--weights-seed S] [--dim NAME=N]\n"
           "\n"
           "Read an ONNX model (default-domain opsets %d to %d), map every node onto the op table\n"
           "(constant and shape-only subgraphs are evaluated here, with static shapes), and write it\n"
           "as a JSON model. Weights with real values go to the sidecar file MODEL.weights.bin next to\n"
           "the JSON: raw little-endian float32, one weight after another in declaration order, each\n"
           "at a multiple of %d bytes; the JSON names the file and the byte offset of each weight.\n"
           "Initializers in external data files are read from the model's folder. An operator or\n"
           "attribute the op table cannot express is an error listing every such op type.\n"
           "\n"
           "options:\n",
           ONNX_OPSET_MIN, ONNX_OPSET_MAX, ONNX_SIDECAR_ALIGN);
    cmd_opts_help(import_opts, defaults);
    printf("\n"
           "environment: TASC_MAX_ELEMENTS  per-tensor element limit\n"
           "exit codes: 0 ok, 1 bad or unsupported model, 2 bad command line\n");
}

int cmd_import(int argc, char **argv) {
    cmd_model_out a;
    memset(&a, 0, sizeof a);
    if (cmd_wants_help(argc, argv)) {
        import_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *model;
    int ar = cmd_model_out_args("import", import_opts, argc, argv, "tasc import MODEL.onnx --out MODEL.json", &model,
                                &a);
    if (ar != TASC_EXIT_OK)
        return ar;
    const char *out = a.out;
    size_t n = strlen(model);
    if (n < 5 || strcmp(model + n - 5, ".onnx") != 0) {
        cmd_error("import", "%s: not an .onnx file", model);
        return TASC_EXIT_USAGE;
    }
    graph *g = cmd_load_model_opts("import", model, &a.mo);
    if (!g)
        return TASC_EXIT_INPUT;
    char err[GRAPH_ERR_LEN + 256];
    if (graph_save_json(g, out, err, sizeof err) < 0) {
        cmd_error("import", "%s", err);
        graph_free(g);
        return TASC_EXIT_INPUT;
    }
    graph_stats st;
    graph_get_stats(g, &st);
    char *side = graph_sidecar_path(out);
    int have_file = graph_has_sidecar_weights(g);
    printf("imported %s: %d nodes, %d weights (%lld bytes); wrote %s%s%s\n", model, (int)st.n_nodes,
           (int)g->n_weights, (long long)st.param_bytes, out, have_file ? " and " : "", have_file ? side : "");
    free(side);
    graph_free(g);
    return TASC_EXIT_OK;
}
