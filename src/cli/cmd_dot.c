/* cmd_dot.c: `tasc dot MODEL [--out FILE]` -- a model as Graphviz DOT (graph_write_dot), on
 * stdout or into FILE through a temporary and a rename, so a failure leaves no partial file. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "graph.h"

static void dot_usage(void) {
    printf("usage: tasc dot MODEL [--out FILE] [ONNX options]\n"
           "\n"
           "Write MODEL as a Graphviz DOT graph (render with: dot -Tsvg FILE > model.svg).\n"
           "Nodes made by a rewrite are filled.\n"
           "\n"
           "options:\n"
           "  --out FILE            write to FILE instead of stdout\n"
           CMD_MODEL_OPTS_HELP
           "  -h, --help            this text\n"
           "\n"
           "environment: TASC_MAX_ELEMENTS  per-tensor element limit when loading\n"
           "exit codes: 0 ok, 1 bad model file or cannot write FILE, 2 bad command line\n");
}

int cmd_dot(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        dot_usage();
        return TASC_EXIT_OK;
    }
    const char *model = NULL, *out = NULL, *val = NULL;
    cmd_model_opts mo;
    memset(&mo, 0, sizeof mo);
    for (int i = 1; i < argc; i++) {
        int r = cmd_model_opt("dot", argc, argv, &i, &mo);
        if (r < 0)
            return TASC_EXIT_USAGE;
        if (r > 0)
            continue;
        r = cmd_opt_value("dot", argc, argv, &i, "--out", &val);
        if (r < 0)
            return TASC_EXIT_USAGE;
        if (r > 0) {
            if (!*val) {
                cmd_error("dot", "bad value for --out: '' (a file name)");
                return TASC_EXIT_USAGE;
            }
            out = val;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cmd_bad_option("dot", argv[i]);
        } else if (!model) {
            model = argv[i];
        } else {
            cmd_error("dot", "unexpected argument '%s' (tasc dot --help)", argv[i]);
            return TASC_EXIT_USAGE;
        }
    }
    if (!model) {
        cmd_error("dot", "missing MODEL (tasc dot --help)");
        return TASC_EXIT_USAGE;
    }
    graph *g = cmd_load_model_opts("dot", model, &mo);
    if (!g)
        return TASC_EXIT_INPUT;
    int rc = TASC_EXIT_OK;
    if (out) {
        cmd_tmpfile t;
        if (cmd_tmp_open("dot", out, &t) < 0) {
            rc = TASC_EXIT_INPUT;
        } else {
            graph_write_dot(g, t.f);
            if (cmd_tmp_commit("dot", &t) < 0)
                rc = TASC_EXIT_INPUT;
        }
    } else {
        graph_write_dot(g, stdout);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cmd_error("dot", "cannot write to stdout");
            rc = TASC_EXIT_INPUT;
        }
    }
    graph_free(g);
    return rc;
}
