/* cmd_axioms.c: `tasc axioms check|list`: the axiom file checked against the CPU references
 * (every axiom instantiated on small shapes and evaluated on random values), a redundancy report
 * and a consistency probe (verifier/verify.h); or the axioms listed with their comments. The
 * report goes to stdout; the exit status says whether the check passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "verify.h"

static int axioms_parse_seconds(const char *cmd, const char *opt, const char *val, double *out) {
    char *end = NULL;
    errno = 0;
    double v = (val && *val) ? strtod(val, &end) : 0;
    if (!val || !*val || errno || !end || *end || !(v > 0) || v > 86400.0) {
        cmd_error(cmd, "bad value for %s: '%s' (seconds, > 0 and <= 86400)", opt, val ? val : "");
        return -1;
    }
    *out = v;
    return 0;
}

static void axioms_usage(void) {
    printf("usage: tasc axioms check [--axioms FILE] [--max-dim N] [--max-instances N]\n"
           "                         [--redundancy-timeout S | --no-redundancy] [--threads T]\n"
           "       tasc axioms list [--axioms FILE]\n"
           "\n"
           "check: instantiate every axiom on small shapes (each dim 1..N, kernels 1 and 3, strides 1\n"
           "and 2, both pad modes) wherever its trigger terms are well typed and its side conditions\n"
           "hold; every term must then be well typed and both sides equal on random values through\n"
           "the op table's CPU references. Then a redundancy report (which axioms the others imply,\n"
           "per-query timeout) and a consistency probe (known false equalities must not be proved).\n"
           "list: the axioms with their one-line comments.\n"
           "\n"
           "options:\n"
           "  --axioms FILE           the axiom file (default: $TASC_AXIOMS or verifier/axioms.smt2)\n"
           "  --max-dim N             largest dim of a variable, 1..8 (default 4)\n"
           "  --max-instances N       evaluate at most N instantiations per axiom, spread evenly\n"
           "                          over all of them (default 0: every one)\n"
           "  --redundancy-timeout S  seconds per redundancy query (default 2)\n"
           "  --no-redundancy         skip the redundancy report\n"
           "  --threads T             worker threads (default: all cores)\n"
           "  -h, --help              this text\n"
           "\n"
           "exit codes: 0 every axiom passed and no false equality was proved, 1 the check failed or\n"
           "the axiom file is bad, 2 bad command line, 3 the axiom file is missing\n");
}

static const char *red_name(verify_red r) {
    switch (r) {
    case VERIFY_RED_SKIPPED: return "-";
    case VERIFY_RED_IMPLIED: return "implied";
    case VERIFY_RED_INDEPENDENT: return "independent";
    case VERIFY_RED_UNKNOWN: return "unknown";
    }
    return "?";
}

int cmd_axioms(int argc, char **argv) {
    const char *cmd = "axioms";
    if (cmd_wants_help(argc, argv)) {
        axioms_usage();
        return TASC_EXIT_OK;
    }
    if (argc < 2 || (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "list") != 0)) {
        cmd_error(cmd, "expected 'check' or 'list' (tasc axioms --help)");
        return TASC_EXIT_USAGE;
    }
    int list = !strcmp(argv[1], "list");
    verify_check_config cfg;
    verify_check_config_default(&cfg);
    const char *axp = NULL, *val = NULL;
    long long v;
    for (int i = 2; i < argc; i++) {
        int r;
        if ((r = cmd_opt_value(cmd, argc, argv, &i, "--axioms", &val)) != 0) {
            if (r < 0 || !*val) {
                if (r > 0)
                    cmd_error(cmd, "empty file name");
                return TASC_EXIT_USAGE;
            }
            axp = val;
        } else if (!list && (r = cmd_opt_value(cmd, argc, argv, &i, "--max-dim", &val)) != 0) {
            if (r < 0 || cmd_parse_i64(cmd, "--max-dim", val, 1, 8, &v) < 0)
                return TASC_EXIT_USAGE;
            cfg.max_dim = v;
        } else if (!list && (r = cmd_opt_value(cmd, argc, argv, &i, "--max-instances", &val)) != 0) {
            if (r < 0 || cmd_parse_i64(cmd, "--max-instances", val, 0, 1000000000, &v) < 0)
                return TASC_EXIT_USAGE;
            cfg.max_instances = v;
        } else if (!list && (r = cmd_opt_value(cmd, argc, argv, &i, "--redundancy-timeout", &val)) != 0) {
            if (r < 0 || axioms_parse_seconds(cmd, "--redundancy-timeout", val, &cfg.redundancy_timeout_s) < 0)
                return TASC_EXIT_USAGE;
        } else if (!list && !strcmp(argv[i], "--no-redundancy")) {
            cfg.redundancy_timeout_s = 0;
        } else if (!list && (r = cmd_opt_value(cmd, argc, argv, &i, "--threads", &val)) != 0) {
            if (r < 0 || cmd_parse_i64(cmd, "--threads", val, 1, 1024, &v) < 0)
                return TASC_EXIT_USAGE;
            cfg.threads = (int32_t)v;
        } else if (argv[i][0] == '-') {
            return cmd_bad_option(cmd, argv[i]);
        } else {
            cmd_error(cmd, "unexpected argument '%s' (tasc axioms --help)", argv[i]);
            return TASC_EXIT_USAGE;
        }
    }
    char apath[4096], err[1024];
    if (!axp && !(axp = verify_axioms_default_path(apath, sizeof apath))) {
        cmd_error(cmd, "the axiom file is missing (set TASC_AXIOMS or use --axioms FILE)");
        return TASC_EXIT_RESOURCE;
    }
    verify_axioms *ax = verify_axioms_load(axp, err, sizeof err);
    if (!ax) {
        cmd_error(cmd, "%s", err);
        return access(axp, R_OK) == 0 ? TASC_EXIT_INPUT : TASC_EXIT_RESOURCE;
    }
    if (list) {
        printf("%d axioms in %s (hash %s)\n", (int)verify_axioms_count(ax), axp, verify_axioms_hash(ax));
        for (int32_t i = 0; i < verify_axioms_count(ax); i++)
            printf("  %-28s %s\n", verify_axiom_name(ax, i), verify_axiom_doc(ax, i));
        verify_axioms_free(ax);
        return TASC_EXIT_OK;
    }
    verify_check_report *rep = malloc(sizeof *rep);
    if (!rep) {
        cmd_error(cmd, "out of memory");
        verify_axioms_free(ax);
        return TASC_EXIT_INTERNAL;
    }
    int rc = verify_axioms_check(ax, &cfg, rep, err, sizeof err);
    if (rc < 0) {
        cmd_error(cmd, "%s", err);
        free(rep);
        verify_axioms_free(ax);
        return TASC_EXIT_INPUT;
    }
    printf("tasc axioms check: %s (%d axioms, hash %s), dims 1..%lld, kernels 1 and 3\n\n", axp, (int)rep->n_axioms,
           verify_axioms_hash(ax), (long long)cfg.max_dim);
    printf("  %-28s %10s %10s %9s %8s  %-12s %s\n", "axiom", "instances", "evaluated", "max err", "time s",
           "redundancy", "result");
    int64_t tot_i = 0, tot_e = 0, implied = 0;
    for (int32_t i = 0; i < rep->n_axioms; i++) {
        const verify_axiom_report *a = &rep->axioms[i];
        tot_i += a->instances;
        tot_e += a->evaluated;
        implied += a->redundancy == VERIFY_RED_IMPLIED;
        printf("  %-28s %10lld %10lld %9.1e %8.2f  %-12s %s%s%s\n", a->name, (long long)a->instances,
               (long long)a->evaluated, a->max_rel_err, a->time_s, red_name(a->redundancy),
               a->failures ? "FAIL: " : "ok", a->failures ? a->first_failure : "",
               a->redundancy == VERIFY_RED_IMPLIED ? "" : "");
        if (a->redundancy == VERIFY_RED_IMPLIED)
            printf("  %-28s implied by: %s\n", "", a->implied_by);
    }
    printf("\n  consistency probe (false equalities; none may be proved):\n");
    for (int32_t k = 0; k < rep->n_probes; k++)
        printf("    %-36s %-8s %s\n", rep->probes[k].name, rep->probes[k].outcome == VERIFY_PROVED ? "FAIL" : "ok",
               rep->probes[k].reason);
    printf("\n  %lld instantiations, %lld evaluated; %d of %d axioms failed; %lld implied by the others; %d of %d "
           "probes proved\n",
           (long long)tot_i, (long long)tot_e, (int)rep->failed_axioms, (int)rep->n_axioms, (long long)implied,
           (int)rep->failed_probes, (int)rep->n_probes);
    printf("  time: evaluation %.2f s, probes %.2f s, redundancy %.2f s\n", rep->eval_s, rep->probe_s,
           rep->redundancy_s);
    int code = rc ? TASC_EXIT_INPUT : TASC_EXIT_OK;
    fflush(stdout);
    if (rc)
        cmd_error(cmd, "%d axioms failed, %d false equalities proved", (int)rep->failed_axioms, (int)rep->failed_probes);
    free(rep);
    verify_axioms_free(ax);
    return code;
}
