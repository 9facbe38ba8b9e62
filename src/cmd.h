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

/* Shared helpers for the subcommands (src/cmd_util.c). */
/* Load a model file (.json) with the element limit from the environment; prints the one-line
 * error to stderr and returns NULL on failure. */
struct graph *cmd_load_model(const char *path);
/* 1 if argv[i] is "--help" or "-h" anywhere in argv. */
int cmd_wants_help(int argc, char **argv);
/* Parse a non-negative integer option value; prints "tasc CMD: bad value for OPT: V" on error. */
int cmd_parse_i64(const char *cmd, const char *opt, const char *val, long long lo, long long hi, long long *out);

/* The same as cmd_load_model, naming the subcommand in the message: "tasc CMD: FILE:...". */
struct graph *cmd_load_model_as(const char *cmd, const char *path);
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
