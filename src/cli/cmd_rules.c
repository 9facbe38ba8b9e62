/* cmd_rules.c: `tasc rules export --egg RULES [--out FILE]`: a rule file as the S-expression
 * rewrites of Tensat/egg, one "lhs=>rhs" per line (verifier/verify.h), so other tools can
 * cross-check the rules. Written to stdout, or through a temporary and a rename to FILE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "rules.h"
#include "verify.h"

typedef struct {
    int egg;
    const char *out;
} rules_args;

static const cmd_opt rules_opts[] = {
    CMD_FLAG("--egg", offsetof(rules_args, egg), "the Tensat/egg format (the only one so far)"),
    CMD_NONEMPTY("--out", "FILE", offsetof(rules_args, out), "a file name", "write to FILE instead of stdout"),
    CMD_OPT_END,
};

static void rules_usage(const rules_args *defaults) {
    printf("usage: tasc rules export --egg RULES [--out FILE]\n"
           "\n"
           "Write the rules of RULES (a rule file) as Tensat/egg rewrites, one \"lhs=>rhs\" line per\n"
           "mapped output, terms in the language of verifier/axioms.smt2 (integer parameters first,\n"
           "then inputs; variables ?name). An output egg cannot take in either direction is left out\n"
           "and counted on stderr.\n"
           "\n"
           "options:\n");
    cmd_opts_help(rules_opts, defaults);
    printf("\n"
           "exit codes: 0 ok, 1 bad input, 2 bad command line\n");
}

/* The egg text of the rule file in; NULL after the message. Caller frees. */
static char *rules_egg_text(const char *in, int64_t *skipped) {
    char err[1024];
    rules_set *rs = rules_load(in, err, sizeof err);
    if (!rs) {
        cmd_error("rules", "%s", err);
        return NULL;
    }
    char *text = verify_export_egg(rs, skipped, err, sizeof err);
    rules_set_free(rs);
    if (!text)
        cmd_error("rules", "%s", err);
    return text;
}

int cmd_rules(int argc, char **argv) {
    const char *cmd = "rules";
    rules_args a = {0};
    if (cmd_wants_help(argc, argv)) {
        rules_usage(&a);
        return TASC_EXIT_OK;
    }
    if (argc < 2 || strcmp(argv[1], "export") != 0) {
        cmd_error(cmd, "expected 'export' (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    const char *in = NULL;
    if (cmd_opts_parse(cmd, rules_opts, &a, argc, argv, 2, &in, 1) < 0)
        return TASC_EXIT_USAGE;
    if (!a.egg) {
        cmd_error(cmd, "missing the format: --egg (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    if (!in) {
        cmd_error(cmd, "missing RULES (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    int64_t skipped = 0;
    char *text = rules_egg_text(in, &skipped);
    if (!text)
        return TASC_EXIT_INPUT;
    int rc = TASC_EXIT_OK;
    if (a.out) {
        if (cmd_write_text(cmd, a.out, text) < 0)
            rc = TASC_EXIT_INPUT;
    } else {
        fputs(text, stdout);
        if (fflush(stdout) != 0) {
            cmd_error(cmd, "cannot write to stdout");
            rc = TASC_EXIT_INPUT;
        }
    }
    if (skipped)
        fprintf(stderr, "tasc rules: %lld outputs left out (a bare variable on the left, or a right-side variable "
                        "missing on the left)\n", (long long)skipped);
    free(text);
    return rc;
}
