/* main.c: the `tasc` command-line entry point; dispatches to the subcommands in src/cmd_*.c
 * through one table. Errors go to stderr, results to stdout; exit codes are in cmd.h. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

#ifndef TASC_VERSION
#define TASC_VERSION "dev"
#endif

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"info",    cmd_info,    "op counts, FLOPs and parameter bytes of a model"},
    {"run",     cmd_run,     "run a model on the CPU reference executor"},
    {"dot",     cmd_dot,     "write a model as Graphviz DOT"},
    {"model",   cmd_model,   "write a model of the zoo (resnet50, bert, ...) as JSON"},
    {"ops",     cmd_ops,     "list the operator table"},
    {"import",  cmd_import,  "import an ONNX model as JSON plus a sidecar weights file"},
    {"export",  cmd_export,  "export a model to ONNX"},
    {"generate", cmd_generate, "enumerate operator graphs and write candidate substitutions"},
    {"verify",  cmd_verify,  "prove candidate substitutions with Z3; write the proved rules"},
    {"axioms",  cmd_axioms,  "the verifier's operator axioms: check against the CPU reference, list"},
    {"rules",   cmd_rules,   "rule sets: export to the Tensat/egg S-expression format"},
    {"optimize", cmd_optimize, "optimize a model with a rule set (cost-based backtracking search)"},
    {"cost",    cmd_cost,    "the analytic cost model against GPU-measured node times: compare, fit"},
    {"bench",   cmd_bench,   "GPU latency of a model and its optimized version"},
    {"kernels", cmd_kernels, "GPU matmul kernels: bench, tune, list"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: tasc <command> [options]   (tasc <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nexit codes: 0 ok, 1 bad input or failed check, 2 bad command line,\n"
               "            3 missing resource (GPU, data file), 4 internal error\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? TASC_EXIT_USAGE : TASC_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tasc %s\n", TASC_VERSION);
        return TASC_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tasc: unknown command '%s' (tasc --help lists them)\n", argv[1]);
    return TASC_EXIT_USAGE;
}
