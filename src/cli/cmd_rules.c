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

static void rules_usage(void) {
    printf("usage: tasc rules export --egg RULES [--out FILE]\n"
           "\n"
           "Write the rules of RULES (a rule file) as Tensat/egg rewrites, one \"lhs=>rhs\" line per\n"
           "mapped output, terms in the language of verifier/axioms.smt2 (integer parameters first,\n"
           "then inputs; variables ?name). An output egg cannot take in either direction is left out\n"
           "and counted on stderr.\n"
           "\n"
           "options:\n"
           "  --egg        the Tensat/egg format (the only one so far)\n"
           "  --out FILE   write to FILE instead of stdout\n"
           "  -h, --help   this text\n"
           "\n"
           "exit codes: 0 ok, 1 bad input, 2 bad command line\n");
}

int cmd_rules(int argc, char **argv) {
    const char *cmd = "rules";
    if (cmd_wants_help(argc, argv)) {
        rules_usage();
        return TASC_EXIT_OK;
    }
    if (argc < 2 || strcmp(argv[1], "export") != 0) {
        cmd_error(cmd, "expected 'export' (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    const char *in = NULL, *out = NULL, *val = NULL;
    int egg = 0;
    for (int i = 2; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--egg")) {
            egg = 1;
        } else if ((r = cmd_opt_value(cmd, argc, argv, &i, "--out", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (!*val) {
                cmd_error(cmd, "bad value for --out: '' (a file name)");
                return TASC_EXIT_USAGE;
            }
            out = val;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cmd_bad_option(cmd, argv[i]);
        } else if (!in) {
            in = argv[i];
        } else {
            cmd_error(cmd, "unexpected argument '%s' (tasc rules --help)", argv[i]);
            return TASC_EXIT_USAGE;
        }
    }
    if (!egg) {
        cmd_error(cmd, "missing the format: --egg (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    if (!in) {
        cmd_error(cmd, "missing RULES (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    char err[1024];
    rules_set *rs = rules_load(in, err, sizeof err);
    if (!rs) {
        cmd_error(cmd, "%s", err);
        return TASC_EXIT_INPUT;
    }
    int64_t skipped = 0;
    char *text = verify_export_egg(rs, &skipped, err, sizeof err);
    rules_set_free(rs);
    if (!text) {
        cmd_error(cmd, "%s", err);
        return TASC_EXIT_INPUT;
    }
    int rc = TASC_EXIT_OK;
    if (out) {
        cmd_tmpfile tf;
        if (cmd_tmp_open(cmd, out, &tf) < 0) {
            rc = TASC_EXIT_INPUT;
        } else {
            fputs(text, tf.f);
            if (cmd_tmp_commit(cmd, &tf) < 0)
                rc = TASC_EXIT_INPUT;
        }
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
