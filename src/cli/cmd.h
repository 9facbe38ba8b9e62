/* cmd.h: the tasc subcommands. Each takes the arguments after its name (argv[0] is the
 * subcommand) and returns the process exit code (see EXIT CODES in README.md):
 *   0 success, 1 bad input or a failed check (message on stderr), 2 bad command line,
 *   3 a needed resource is missing (no GPU, missing data file), 4 internal error.
 * Every subcommand answers --help on stdout with exit 0.
 */
#ifndef TASC_CMD_H
#define TASC_CMD_H

#include <stdio.h>

enum { TASC_EXIT_OK = 0, TASC_EXIT_INPUT = 1, TASC_EXIT_USAGE = 2, TASC_EXIT_RESOURCE = 3, TASC_EXIT_INTERNAL = 4 };

int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_dot(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_import(int argc, char **argv);   /* src/cmd_import.c: .onnx -> .json + sidecar weights */
int cmd_export(int argc, char **argv);   /* src/cmd_export.c: model -> .onnx */
int cmd_generate(int argc, char **argv); /* src/cmd_generate.c: rule generation (enumerator/) */
int cmd_verify(int argc, char **argv);   /* src/cmd_verify.c: Z3 proofs of candidate rules */
int cmd_axioms(int argc, char **argv);   /* src/cmd_axioms.c: tasc axioms check|list */
int cmd_rules(int argc, char **argv);    /* src/cmd_rules.c: tasc rules export --egg */
int cmd_optimize(int argc, char **argv); /* src/cmd_optimize.c: search + numerical check */
int cmd_bench(int argc, char **argv);    /* src/cmd_bench.c: GPU latency, original vs optimized */
int cmd_cost(int argc, char **argv);     /* src/cmd_cost.c: analytic vs measured node times */

/* Shared helpers for the subcommands (src/cmd_util.c). */
/* Load a model file (.json, or .onnx through graph/onnx.h) with the element limit from the
 * environment; prints the one-line error to stderr and returns NULL on failure. */
struct graph *cmd_load_model(const char *path);
/* 1 if argv[i] is "--help" or "-h" anywhere in argv. */
int cmd_wants_help(int argc, char **argv);
/* Parse a non-negative integer option value; prints "tasc CMD: bad value for OPT: V" on error. */
int cmd_parse_i64(const char *cmd, const char *opt, const char *val, long long lo, long long hi, long long *out);

/* The same as cmd_load_model, naming the subcommand in the message: "tasc CMD: FILE:...". */
struct graph *cmd_load_model_as(const char *cmd, const char *path);

/* How .onnx models are read (graph/onnx.h); every field zero: real weights only. */
#define CMD_MAX_DIM_VALUES 16
typedef struct {
    int random_weights;                          /* --random-weights: seeded values for missing data */
    unsigned long long seed;                     /* --weights-seed S */
    int n_dims;                                  /* --dim NAME=N: values of symbolic input dims */
    const char *dim_names[CMD_MAX_DIM_VALUES];   /* borrowed from argv */
    long long dim_values[CMD_MAX_DIM_VALUES];
} cmd_model_opts;
/* If argv[*i] is one of the model options above, parse it into o (stepping *i over a separate
 * value) and return 1; 0 if it is something else; -1 after printing a one-line error. */
int cmd_model_opt(const char *cmd, int argc, char **argv, int *i, cmd_model_opts *o);
/* cmd_load_model_as with model options (o NULL: defaults). */
struct graph *cmd_load_model_opts(const char *cmd, const char *path, const cmd_model_opts *o);
/* The arguments of a command of the form `tasc CMD MODEL [model options] --out FILE`: 0, or
 * TASC_EXIT_USAGE after printing the one-line error ("usage: USAGE (tasc CMD --help)" when MODEL or
 * --out is missing). */
int cmd_model_out_args(const char *cmd, int argc, char **argv, const char *usage, const char **model,
                       const char **out, cmd_model_opts *mo);
/* The help lines of the model options, for the subcommands' --help. */
#define CMD_MODEL_OPTS_HELP \
    "  --random-weights      .onnx: seeded random values for weights whose external data is missing\n" \
    "  --weights-seed S      .onnx: seed of those random weights (default 0)\n" \
    "  --dim NAME=N          .onnx: value of the symbolic input dimension NAME (repeatable)\n"
/* Print "tasc CMD: <message>" as exactly one line on stderr (newlines in it become spaces). */
void cmd_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Options: if argv[*i] is "--NAME VALUE" or "--NAME=VALUE", set *val (stepping *i over a separate
 * value) and return 1; 0 if argv[*i] is something else; -1 with a message if the value is missing. */
int cmd_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **val);
/* "tasc CMD: unknown option 'ARG' (tasc CMD --help)"; returns TASC_EXIT_USAGE. */
int cmd_bad_option(const char *cmd, const char *arg);

/* A file written through a temporary in the target's folder: nothing appears at path unless
 * cmd_tmp_commit succeeds. Each returns 0, or -1 after printing "tasc CMD: PATH: ...". */
typedef struct {
    FILE *f;
    char *tmp;   /* owned: the temporary's name */
    char *path;  /* owned: the final name */
} cmd_tmpfile;
int cmd_tmp_open(const char *cmd, const char *path, cmd_tmpfile *t);
int cmd_tmp_commit(const char *cmd, cmd_tmpfile *t); /* close, check, rename; aborts on failure */
void cmd_tmp_abort(cmd_tmpfile *t);                   /* close and remove the temporary */

#endif
