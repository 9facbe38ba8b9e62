/* cmd_model.c: `tasc model NAME [--batch B] [--out FILE]` and `tasc model --list` -- build a
 * model of the zoo (models/) and write it as JSON, on stdout or into FILE (graph_save_json writes
 * through a temporary and a rename). The JSON is deterministic: same name and batch, same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph.h"
#include "zoo.h"

static void model_usage(void) {
    printf("usage: tasc model NAME [--batch B] [--out FILE]\n"
           "       tasc model --list\n"
           "\n"
           "Build model NAME of the zoo and write it as JSON (weights are seeded initialisers,\n"
           "not data). The same NAME and B always give the same bytes.\n"
           "\n"
           "options:\n"
           "  --batch B   batch size, 1..65536 (default 1)\n"
           "  --out FILE  write to FILE instead of stdout\n"
           "  --list      list the zoo's model names\n"
           "  -h, --help  this text\n"
           "\n"
           "exit codes: 0 ok, 1 the model cannot be built or FILE cannot be written,\n"
           "            2 bad command line (including an unknown NAME)\n");
}

int cmd_model(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        model_usage();
        return TASC_EXIT_OK;
    }
    const char *name = NULL, *out = NULL, *val = NULL;
    long long batch = 1;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--list")) {
            list = 1;
        } else if ((r = cmd_opt_value("model", argc, argv, &i, "--batch", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("model", "--batch", val, 1, 65536, &batch) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("model", argc, argv, &i, "--out", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (!*val) {
                cmd_error("model", "bad value for --out: '' (a file name)");
                return TASC_EXIT_USAGE;
            }
            out = val;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cmd_bad_option("model", argv[i]);
        } else if (!name) {
            name = argv[i];
        } else {
            cmd_error("model", "unexpected argument '%s' (tasc model --help)", argv[i]);
            return TASC_EXIT_USAGE;
        }
    }
    const char *const *names = zoo_names();
    if (list) {
        if (name || out) {
            cmd_error("model", "--list takes no NAME or --out (tasc model --help)");
            return TASC_EXIT_USAGE;
        }
        for (int k = 0; names && names[k]; k++)
            printf("%s\n", names[k]);
        return TASC_EXIT_OK;
    }
    if (!name) {
        cmd_error("model", "missing NAME (tasc model --list shows them)");
        return TASC_EXIT_USAGE;
    }
    int known = 0;
    for (int k = 0; names && names[k]; k++)
        if (!strcmp(names[k], name))
            known = 1;
    if (!known) {
        cmd_error("model", "unknown model '%s' (tasc model --list shows them)", name);
        return TASC_EXIT_USAGE;
    }
    char err[GRAPH_ERR_LEN + 64];
    err[0] = '\0';
    graph *g = zoo_build(name, (int32_t)batch, err, sizeof err);
    if (!g) {
        cmd_error("model", "%s (batch %lld): %s", name, batch, err[0] ? err : "cannot build");
        return TASC_EXIT_INPUT;
    }
    int rc = TASC_EXIT_OK;
    if (out) {
        if (graph_save_json(g, out, err, sizeof err) < 0) {
            if (!strncmp(err, out, strlen(out)))
                cmd_error("model", "%s", err);
            else
                cmd_error("model", "%s: %s", out, err);
            rc = TASC_EXIT_INPUT;
        }
    } else {
        char *s = graph_to_json_string(g);
        if (!s) {
            cmd_error("model", "%s: out of memory writing JSON", name);
            rc = TASC_EXIT_INTERNAL;
        } else {
            fputs(s, stdout);
            size_t n = strlen(s);
            if (n == 0 || s[n - 1] != '\n')
                fputc('\n', stdout);
            free(s);
        }
    }
    graph_free(g);
    return rc;
}
