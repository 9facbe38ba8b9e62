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

typedef struct {
    int64_t batch;
    const char *out;
    int list;
} model_args;

static const cmd_opt model_opts[] = {
    CMD_I64("--batch", "B", offsetof(model_args, batch), 1, 65536, "batch size, %L..%H (default %D)"),
    CMD_NONEMPTY("--out", "FILE", offsetof(model_args, out), "a file name", "write to FILE instead of stdout"),
    CMD_FLAG("--list", offsetof(model_args, list), "list the zoo's model names"),
    CMD_OPT_END,
};

static void model_usage(const model_args *defaults) {
    printf("usage: tasc model NAME [--batch B] [--out FILE]\n"
           "       tasc model --list\n"
           "\n"
           "Build model NAME of the zoo and write it as JSON (weights are seeded initialisers,\n"
           "not data). The same NAME and B always give the same bytes.\n"
           "\n"
           "options:\n");
    cmd_opts_help(model_opts, defaults);
    printf("\n"
           "exit codes: 0 ok, 1 the model cannot be built or FILE cannot be written,\n"
           "            2 bad command line (including an unknown NAME)\n");
}

/* --list; an exit code. */
static int model_list(const char *name, const char *out) {
    if (name || out) {
        cmd_error("model", "--list takes no NAME or --out (tasc model --help)");
        return TASC_EXIT_USAGE;
    }
    const char *const *names = zoo_names();
    for (int k = 0; names && names[k]; k++)
        printf("%s\n", names[k]);
    return TASC_EXIT_OK;
}

/* 0 if name is a model of the zoo, else TASC_EXIT_USAGE after the message. */
static int model_check_name(const char *name) {
    if (!name) {
        cmd_error("model", "missing NAME (tasc model --list shows them)");
        return TASC_EXIT_USAGE;
    }
    const char *const *names = zoo_names();
    for (int k = 0; names && names[k]; k++)
        if (!strcmp(names[k], name))
            return TASC_EXIT_OK;
    cmd_error("model", "unknown model '%s' (tasc model --list shows them)", name);
    return TASC_EXIT_USAGE;
}

/* g as JSON into out (through a temporary and a rename), or on stdout; an exit code. */
static int model_write(const graph *g, const char *name, const char *out) {
    char err[GRAPH_ERR_LEN + 64];
    if (out) {
        if (graph_save_json(g, out, err, sizeof err) < 0) {
            if (!strncmp(err, out, strlen(out)))
                cmd_error("model", "%s", err);
            else
                cmd_error("model", "%s: %s", out, err);
            return TASC_EXIT_INPUT;
        }
        return TASC_EXIT_OK;
    }
    char *s = graph_to_json_string(g);
    if (!s) {
        cmd_error("model", "%s: out of memory writing JSON", name);
        return TASC_EXIT_INTERNAL;
    }
    fputs(s, stdout);
    size_t n = strlen(s);
    if (n == 0 || s[n - 1] != '\n')
        fputc('\n', stdout);
    free(s);
    return TASC_EXIT_OK;
}

int cmd_model(int argc, char **argv) {
    model_args a = {.batch = 1};
    if (cmd_wants_help(argc, argv)) {
        model_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *name = NULL;
    if (cmd_opts_parse("model", model_opts, &a, argc, argv, 1, &name, 1) < 0)
        return TASC_EXIT_USAGE;
    if (a.list)
        return model_list(name, a.out);
    int rc = model_check_name(name);
    if (rc)
        return rc;
    char err[GRAPH_ERR_LEN + 64];
    err[0] = '\0';
    graph *g = zoo_build(name, (int32_t)a.batch, err, sizeof err);
    if (!g) {
        cmd_error("model", "%s (batch %lld): %s", name, (long long)a.batch, err[0] ? err : "cannot build");
        return TASC_EXIT_INPUT;
    }
    rc = model_write(g, name, a.out);
    graph_free(g);
    return rc;
}
