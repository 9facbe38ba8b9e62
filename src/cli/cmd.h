/* cmd.h: the tasc subcommands. Each takes the arguments after its name (argv[0] is the
 * subcommand) and returns the process exit code (see EXIT CODES in README.md):
 *   0 success, 1 bad input or a failed check (message on stderr), 2 bad command line,
 *   3 a needed resource is missing (no GPU, missing data file), 4 internal error.
 * Every subcommand answers --help on stdout with exit 0. Options are declared in one table per
 * command (cmd_opt, src/cli/cmd_opts.c): the same table parses argv and prints the options part
 * of --help.
 */
#ifndef TASC_CMD_H
#define TASC_CMD_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base.h"

enum { TASC_EXIT_OK = 0, TASC_EXIT_INPUT = 1, TASC_EXIT_USAGE = 2, TASC_EXIT_RESOURCE = 3, TASC_EXIT_INTERNAL = 4 };

int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_dot(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_import(int argc, char **argv);   /* cmd_import.c: .onnx -> .json + sidecar weights */
int cmd_export(int argc, char **argv);   /* cmd_export.c: model -> .onnx */
int cmd_generate(int argc, char **argv); /* cmd_generate.c: rule generation (enumerator/) */
int cmd_verify(int argc, char **argv);   /* cmd_verify.c: Z3 proofs of candidate rules */
int cmd_axioms(int argc, char **argv);   /* cmd_axioms.c: tasc axioms check|list */
int cmd_rules(int argc, char **argv);    /* cmd_rules.c: tasc rules export --egg */
int cmd_optimize(int argc, char **argv); /* cmd_optimize.c: search + numerical check */
int cmd_bench(int argc, char **argv);    /* cmd_bench.c: GPU latency, original vs optimized */
int cmd_cost(int argc, char **argv);     /* cmd_cost.c: analytic vs measured node times */

/* --- option tables (cmd_opts.c) ---------------------------------------------------------------
 * A command keeps its options in one struct; its table says, per option, the name, the value's
 * placeholder, the kind, the field (offsetof in that struct) and one help text. Both `--opt V` and
 * `--opt=V` are accepted for options with a value; a flag takes no "=". */
typedef enum {
    CMD_OPT_FLAG,   /* int field = ilo */
    CMD_OPT_STR,    /* const char * field; with `what`, an empty value is "bad value ... (WHAT)" */
    CMD_OPT_CHOICE, /* const char * field, one of the '|'-separated words in `what` */
    CMD_OPT_I64,    /* int64_t field in [ilo, ihi] */
    CMD_OPT_F64,    /* double field in [lo, hi] (lo excluded when lo_open); `what` names the unit */
    CMD_OPT_LIST,   /* cmd_list field: every value given, in order (repeatable) */
    CMD_OPT_CALL,   /* fn(cmd, name, value, field); a flag when arg is NULL (value NULL) */
} cmd_opt_kind;

/* Parses value (NULL for a flag) into field; 0, or -1 after printing the one-line message.
 * value points into argv: writable, alive while the command runs. */
typedef int (*cmd_opt_fn)(const char *cmd, const char *name, char *value, void *field);

typedef struct {
    const char *name;   /* "--seed"; NULL ends a table */
    const char *arg;    /* the value's placeholder in --help ("S"); NULL: takes no value */
    cmd_opt_kind kind;
    size_t off;         /* the field: offsetof in the command's option struct */
    int64_t ilo, ihi;   /* I64: the range; FLAG: the value set */
    double lo, hi;      /* F64: the range */
    int lo_open;        /* F64: lo itself is not allowed */
    const char *what;   /* STR, CHOICE, F64: see cmd_opt_kind */
    cmd_opt_fn fn;      /* CALL */
    const char *help;   /* one text, wrapped by --help; "%D", "%L", "%H": the default, lo and hi of an
                         * I64 or F64 option. NULL: not listed (an alias) */
} cmd_opt;

/* A repeatable option's values (CMD_OPT_LIST); v is owned by the command (free(v)). */
typedef struct {
    const char **v;
    int32_t n, cap;
} cmd_list;

#define CMD_FLAG(n, o, h) {.name = (n), .kind = CMD_OPT_FLAG, .off = (o), .ilo = 1, .help = (h)}
#define CMD_FLAG_SET(n, o, v, h) {.name = (n), .kind = CMD_OPT_FLAG, .off = (o), .ilo = (v), .help = (h)}
#define CMD_STR(n, a, o, h) {.name = (n), .arg = (a), .kind = CMD_OPT_STR, .off = (o), .help = (h)}
/* A string that must not be empty: "bad value for NAME: '' (WHAT)". */
#define CMD_NONEMPTY(n, a, o, w, h) {.name = (n), .arg = (a), .kind = CMD_OPT_STR, .off = (o), .what = (w), .help = (h)}
#define CMD_CHOICE(n, a, o, w, h) {.name = (n), .arg = (a), .kind = CMD_OPT_CHOICE, .off = (o), .what = (w), .help = (h)}
#define CMD_I64(n, a, o, l, u, h) \
    {.name = (n), .arg = (a), .kind = CMD_OPT_I64, .off = (o), .ilo = (l), .ihi = (u), .help = (h)}
#define CMD_F64(n, a, o, l, u, h) {.name = (n), .arg = (a), .kind = CMD_OPT_F64, .off = (o), .lo = (l), .hi = (u), .help = (h)}
/* Seconds, > 0 and <= u (HUGE_VAL: no upper bound). */
#define CMD_SECONDS(n, a, o, u, h) \
    {.name = (n), .arg = (a), .kind = CMD_OPT_F64, .off = (o), .lo = 0, .lo_open = 1, .hi = (u), .what = "seconds", \
     .help = (h)}
#define CMD_LIST(n, a, o, h) {.name = (n), .arg = (a), .kind = CMD_OPT_LIST, .off = (o), .help = (h)}
#define CMD_CALL(n, a, o, f, h) {.name = (n), .arg = (a), .kind = CMD_OPT_CALL, .off = (o), .fn = (f), .help = (h)}
#define CMD_OPT_END {.name = NULL}

/* max_pos of cmd_opts_parse: every argument not starting with '-' is an unknown option. */
#define CMD_POS_NONE (-1)

/* Parses argv[first..argc) against opts into the struct at args. Arguments that are not options
 * (not starting with '-', or "-" alone) go to pos, at most max_pos of them. Returns their count,
 * or -1 after printing one line: "unknown option 'ARG' (tasc CMD --help)", "option NAME needs a
 * value", "bad value for NAME: 'V' (...)", "unexpected argument 'ARG' (tasc CMD --help)". */
int cmd_opts_parse(const char *cmd, const cmd_opt *opts, void *args, int argc, char **argv, int first,
                   const char **pos, int max_pos);
/* The options part of --help: one entry per listed option, then "-h, --help"; help texts wrapped
 * at 100 columns. defaults: the option struct as the command starts (for %D). */
void cmd_opts_help(const cmd_opt *opts, const void *defaults);
/* The same for several tables as one block (one column width), ended by NULL. */
void cmd_opts_help_n(const cmd_opt *const *tables, const void *const *defaults);

/* 1 if argv[i] is "--help" or "-h" anywhere in argv. */
int cmd_wants_help(int argc, char **argv);
/* Parse an integer in [lo, hi]; prints "tasc CMD: bad value for OPT: 'V' (an integer in [lo, hi])"
 * and returns -1 on error. */
int cmd_parse_i64(const char *cmd, const char *opt, const char *val, int64_t lo, int64_t hi, int64_t *out);
/* "tasc CMD: unknown option 'ARG' (tasc CMD --help)"; returns TASC_EXIT_USAGE. */
int cmd_bad_option(const char *cmd, const char *arg);
/* Print "tasc CMD: <message>" as exactly one line on stderr (newlines in it become spaces). */
void cmd_error(const char *cmd, const char *fmt, ...) BASE_PRINTF(2, 3);

/* --- models (cmd_util.c) ------------------------------------------------------------------------ */

/* How .onnx models are read (graph/onnx.h); every field zero: real weights only. */
#define CMD_MAX_DIM_VALUES 16
typedef struct {
    int random_weights;                          /* --random-weights: seeded values for missing data */
    const char *weights_init;                    /* --weights-init scaled|legacy (NULL: scaled) */
    int64_t seed;                                /* --weights-seed S */
    int n_dims;                                  /* --dim NAME=N: values of symbolic input dims */
    const char *dim_names[CMD_MAX_DIM_VALUES];   /* borrowed from argv */
    int64_t dim_values[CMD_MAX_DIM_VALUES];
    int allow_outside_paths;                     /* --allow-outside-paths: files outside the model's folder */
} cmd_model_opts;
/* The --dim NAME=N option (CMD_OPT_CALL, field a cmd_model_opts). */
int cmd_opt_dim(const char *cmd, const char *name, char *value, void *field);
/* The model options' table entries, for a cmd_model_opts at offset off of the option struct. */
#define CMD_MODEL_OPTS(off) \
    CMD_FLAG("--random-weights", (off) + offsetof(cmd_model_opts, random_weights), \
             ".onnx: seeded random values for weights whose external data is missing"), \
    CMD_CHOICE("--weights-init", "KIND", (off) + offsetof(cmd_model_opts, weights_init), "scaled|legacy", \
               ".onnx: the values of --random-weights: scaled (default: by each weight's role, variance " \
               "preserving: kernels normal with std sqrt(gain/fan-in), residual branches scaled down, " \
               "normalisation scale 1, shift, mean and biases 0, variance 1) or legacy (std " \
               "sqrt(2/(numel/dims[0])), 0.1 for 1-D)"), \
    CMD_I64("--weights-seed", "S", (off) + offsetof(cmd_model_opts, seed), 0, INT64_MAX, \
            ".onnx: seed of those random weights (default 0)"), \
    CMD_CALL("--dim", "NAME=N", (off), cmd_opt_dim, ".onnx: value of the symbolic input dimension NAME (repeatable)"), \
    CMD_FLAG("--allow-outside-paths", (off) + offsetof(cmd_model_opts, allow_outside_paths), \
             "let the model's weight files and external data lie outside its folder (refused by default)")

/* Load a model file (.json, or .onnx through graph/onnx.h) with the element limit from the
 * environment and the model options (o NULL: defaults); prints "tasc CMD: FILE:..." on stderr and
 * returns NULL on failure. The caller owns the graph. */
struct graph *cmd_load_model_opts(const char *cmd, const char *path, const cmd_model_opts *o);

/* The options of a command of the form `tasc CMD MODEL [model options] --out FILE`. */
typedef struct {
    const char *out;
    cmd_model_opts mo;
} cmd_model_out;
/* Parses such a command line against opts (a table over cmd_model_out): 0, or TASC_EXIT_USAGE
 * after printing the one-line error ("usage: USAGE (tasc CMD --help)" when MODEL or --out is
 * missing). */
int cmd_model_out_args(const char *cmd, const cmd_opt *opts, int argc, char **argv, const char *usage,
                       const char **model, cmd_model_out *a);

/* An analytic cost-model constant, NAME=V (--cost-set, --set: CMD_OPT_CALL, field a
 * cost_analytic_config); "tasc CMD: OPT: why" on error. */
int cmd_opt_cost_set(const char *cmd, const char *name, char *value, void *field);

#ifdef TASC_HAVE_CUDA
/* The measured cost model (rt_cost_model_new, src/runtime/rt_cost.h) over the default cache file;
 * a failed save when it is freed prints "tasc CMD: cost cache not saved: ...". NULL after
 * "tasc CMD: why" (no GPU, a bad cache file). Caller owns (cost_model_free). */
struct cost_model *cmd_measured_model(const char *cmd);
#endif

/* --- output files (cmd_util.c) ------------------------------------------------------------------
 * A file written through a temporary in the target's folder (base_afile): nothing appears at path
 * unless cmd_tmp_commit succeeds. A path naming a device or a pipe (/dev/stdout, a fifo) is written
 * directly (tmp NULL): renaming a temporary over it would replace the node. Each returns 0, or -1
 * after printing "tasc CMD: PATH: ...". */
typedef base_afile cmd_tmpfile;
int cmd_tmp_open(const char *cmd, const char *path, cmd_tmpfile *t);
int cmd_tmp_commit(const char *cmd, cmd_tmpfile *t); /* close, check, rename; aborts on failure */
void cmd_tmp_abort(cmd_tmpfile *t);                   /* close and remove the temporary */
/* TEXT into a new file at path through cmd_tmp_*: 0, or -1 after the message. */
int cmd_write_text(const char *cmd, const char *path, const char *text);

#endif
