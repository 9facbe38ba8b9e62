/* cmd_dot.c: `tasc dot MODEL [--out FILE]` -- a model as Graphviz DOT (graph_write_dot), on
 * stdout or into FILE through a temporary and a rename, so a failure leaves no partial file. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "graph.h"

typedef struct {
    const char *out;
    cmd_model_opts mo;
} dot_args;

static const cmd_opt dot_opts[] = {
    CMD_NONEMPTY("--out", "FILE", offsetof(dot_args, out), "a file name", "write to FILE instead of stdout"),
    CMD_MODEL_OPTS(offsetof(dot_args, mo)),
    CMD_OPT_END,
};

static void dot_usage(const dot_args *defaults) {
    printf("usage: tasc dot MODEL [--out FILE] [ONNX options]\n"
           "\n"
           "Write MODEL as a Graphviz DOT graph (render with: dot -Tsvg FILE > model.svg).\n"
           "Nodes made by a rewrite are filled.\n"
           "\n"
           "options:\n");
    cmd_opts_help(dot_opts, defaults);
    printf("\n"
           "environment: TASC_MAX_ELEMENTS  per-tensor element limit when loading\n"
           "exit codes: 0 ok, 1 bad model file or cannot write FILE, 2 bad command line\n");
}

/* g as DOT into out, or on stdout when out is NULL; an exit code. */
static int dot_write(const graph *g, const char *out) {
    if (out) {
        cmd_tmpfile t;
        if (cmd_tmp_open("dot", out, &t) < 0)
            return TASC_EXIT_INPUT;
        graph_write_dot(g, t.f);
        return cmd_tmp_commit("dot", &t) < 0 ? TASC_EXIT_INPUT : TASC_EXIT_OK;
    }
    graph_write_dot(g, stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cmd_error("dot", "cannot write to stdout");
        return TASC_EXIT_INPUT;
    }
    return TASC_EXIT_OK;
}

int cmd_dot(int argc, char **argv) {
    dot_args a;
    memset(&a, 0, sizeof a);
    if (cmd_wants_help(argc, argv)) {
        dot_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *model = NULL;
    if (cmd_opts_parse("dot", dot_opts, &a, argc, argv, 1, &model, 1) < 0)
        return TASC_EXIT_USAGE;
    if (!model) {
        cmd_error("dot", "missing MODEL (tasc dot --help)");
        return TASC_EXIT_USAGE;
    }
    graph *g = cmd_load_model_opts("dot", model, &a.mo);
    if (!g)
        return TASC_EXIT_INPUT;
    int rc = dot_write(g, a.out);
    graph_free(g);
    return rc;
}
