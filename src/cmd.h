/* cmd.h: the tasc subcommands. Each takes the arguments after its name (argv[0] is the
 * subcommand) and returns the process exit code (see EXIT CODES in README.md):
 *   0 success, 1 bad input or a failed check (message on stderr), 2 bad command line,
 *   3 a needed resource is missing (no GPU, missing data file), 4 internal error.
 * Every subcommand answers --help on stdout with exit 0.
 */
#ifndef TASC_CMD_H
#define TASC_CMD_H

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

#endif
