/* cmd_axioms.c: `tasc axioms check|list`: the axiom file checked against the CPU references
 * (every axiom instantiated on small shapes and evaluated on random values), on ill-shaped
 * instantiations (a size or dim off by one: the sides must keep equal dims where the side
 * conditions let them through), a redundancy report and a consistency probe (verifier/verify.h);
 * or the axioms listed with their comments. The report goes to stdout; the exit status says
 * whether the check passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "verify.h"

typedef struct {
    verify_check_config cfg;
    const char *axp;
    int64_t threads;
} axioms_args;

static int axioms_no_redundancy(const char *cmd, const char *name, char *value, void *field) {
    (void)cmd, (void)name, (void)value;
    *(double *)field = 0;
    return 0;
}

static const cmd_opt axioms_check_opts[] = {
    CMD_STR("--axioms", "FILE", offsetof(axioms_args, axp),
            "the axiom file (default: $TASC_AXIOMS or verifier/axioms.smt2)"),
    CMD_I64("--max-dim", "N", offsetof(axioms_args, cfg.max_dim), 1, 8,
            "largest dim of a variable, %L..%H (default %D)"),
    CMD_I64("--max-instances", "N", offsetof(axioms_args, cfg.max_instances), 0, 1000000000,
            "evaluate at most N instantiations per axiom, spread evenly over all of them (default 0: every one)"),
    CMD_I64("--ill-shaped", "N", offsetof(axioms_args, cfg.ill_bases), 0, 1000000000,
            "make at most N well-typed instantiations per axiom ill-shaped, each size and dim off by one in "
            "turn (default %D; 0 skips the ill-shaped pass)"),
    CMD_SECONDS("--redundancy-timeout", "S", offsetof(axioms_args, cfg.redundancy_timeout_s), 86400.0,
                "seconds per redundancy query (default %D)"),
    CMD_CALL("--no-redundancy", NULL, offsetof(axioms_args, cfg.redundancy_timeout_s), axioms_no_redundancy,
             "skip the redundancy report"),
    CMD_I64("--threads", "T", offsetof(axioms_args, threads), 1, 1024, "worker threads (default: all cores)"),
    CMD_OPT_END,
};

static const cmd_opt axioms_list_opts[] = {
    CMD_STR("--axioms", "FILE", offsetof(axioms_args, axp),
            "the axiom file (default: $TASC_AXIOMS or verifier/axioms.smt2)"),
    CMD_OPT_END,
};

static void axioms_usage(const axioms_args *defaults) {
    printf("usage: tasc axioms check [--axioms FILE] [--max-dim N] [--max-instances N] [--ill-shaped N]\n"
           "                         [--redundancy-timeout S | --no-redundancy] [--threads T]\n"
           "       tasc axioms list [--axioms FILE]\n"
           "\n"
           "check: instantiate every axiom on small shapes (each dim 1..N, kernels 1 and 3, strides 1\n"
           "and 2, both pad modes) wherever its trigger terms are well typed and its side conditions\n"
           "hold; every term must then be well typed and both sides equal on random values through\n"
           "the op table's CPU references. Ill-shaped pass: the same instantiations with one size or\n"
           "dim off by one, so that a trigger term is ill typed; where the side conditions do not\n"
           "exclude such an instance, both sides must have the same dims as the dim_* axioms give\n"
           "them for any term (else Z3 could derive 2 = 3 from an ill-shaped term). Then a\n"
           "redundancy report (which axioms the others imply, per-query timeout) and a consistency\n"
           "probe (known false equalities must not be proved).\n"
           "list: the axioms with their one-line comments.\n"
           "\n"
           "options:\n");
    cmd_opts_help(axioms_check_opts, defaults);
    printf("\n"
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

static int axioms_list(const char *axp, const verify_axioms *ax) {
    printf("%d axioms in %s (hash %s)\n", (int)verify_axioms_count(ax), axp, verify_axioms_hash(ax));
    for (int32_t i = 0; i < verify_axioms_count(ax); i++)
        printf("  %-28s %s\n", verify_axiom_name(ax, i), verify_axiom_doc(ax, i));
    return TASC_EXIT_OK;
}

/* One line per axiom: counts, redundancy, and the first failure of each pass. */
static void axioms_report_axiom(const verify_axiom_report *a) {
    printf("  %-28s %10lld %10lld %10lld %9lld %9.1e %8.2f  %-12s %s%s\n", a->name, (long long)a->instances,
           (long long)a->evaluated, (long long)a->ill_instances, (long long)a->ill_excluded, a->max_rel_err, a->time_s,
           red_name(a->redundancy),
           a->failures ? "FAIL: " : a->ill_failures ? "FAIL (ill-shaped): " : "ok",
           a->failures ? a->first_failure : a->ill_failures ? a->ill_first_failure : "");
    if (a->failures && a->ill_failures)
        printf("  %-28s FAIL (ill-shaped): %s\n", "", a->ill_first_failure);
    if (a->redundancy == VERIFY_RED_IMPLIED)
        printf("  %-28s implied by: %s\n", "", a->implied_by);
}

static void axioms_report(const char *axp, const verify_axioms *ax, const verify_check_config *cfg,
                          const verify_check_report *rep) {
    printf("tasc axioms check: %s (%d axioms, hash %s), dims 1..%lld, kernels 1 and 3\n\n", axp, (int)rep->n_axioms,
           verify_axioms_hash(ax), (long long)cfg->max_dim);
    printf("  %-28s %10s %10s %10s %9s %9s %8s  %-12s %s\n", "axiom", "instances", "evaluated", "ill-shaped",
           "excluded", "max err", "time s", "redundancy", "result");
    int64_t tot_i = 0, tot_e = 0, tot_ill = 0, tot_ex = 0, implied = 0;
    for (int32_t i = 0; i < rep->n_axioms; i++) {
        const verify_axiom_report *a = &rep->axioms[i];
        tot_i += a->instances;
        tot_e += a->evaluated;
        tot_ill += a->ill_instances;
        tot_ex += a->ill_excluded;
        implied += a->redundancy == VERIFY_RED_IMPLIED;
        axioms_report_axiom(a);
    }
    printf("\n  consistency probe (false equalities; none may be proved):\n");
    for (int32_t k = 0; k < rep->n_probes; k++)
        printf("    %-36s %-8s %s\n", rep->probes[k].name, rep->probes[k].outcome == VERIFY_PROVED ? "FAIL" : "ok",
               rep->probes[k].reason);
    printf("\n  ill-shaped pass (a size or dim off by one; sides whose dims differ where the side conditions let\n"
           "  the instance through; none may):\n");
    if (cfg->ill_bases <= 0)
        printf("    skipped (--ill-shaped 0)\n");
    else if (rep->failed_ill == 0)
        printf("    none\n");
    for (int32_t i = 0; i < rep->n_axioms; i++)
        if (rep->axioms[i].ill_failures)
            printf("    %-28s FAIL  %lld of %lld differ; %s\n", rep->axioms[i].name,
                   (long long)rep->axioms[i].ill_failures,
                   (long long)(rep->axioms[i].ill_instances - rep->axioms[i].ill_excluded),
                   rep->axioms[i].ill_first_failure);
    printf("\n  %lld instantiations, %lld evaluated; %d of %d axioms failed; %lld implied by the others; %d of %d "
           "probes proved\n",
           (long long)tot_i, (long long)tot_e, (int)rep->failed_axioms, (int)rep->n_axioms, (long long)implied,
           (int)rep->failed_probes, (int)rep->n_probes);
    printf("  %lld ill-shaped instantiations, %lld excluded by side conditions; %d of %d axioms failed them\n",
           (long long)tot_ill, (long long)tot_ex, (int)rep->failed_ill, (int)rep->n_axioms);
    printf("  time: evaluation %.2f s (both passes), probes %.2f s, redundancy %.2f s\n", rep->eval_s, rep->probe_s,
           rep->redundancy_s);
}

static int axioms_check(const char *axp, const verify_axioms *ax, const verify_check_config *cfg) {
    const char *cmd = "axioms";
    char err[1024];
    verify_check_report *rep = base_xmalloc(sizeof *rep);
    int rc = verify_axioms_check(ax, cfg, rep, err, sizeof err);
    if (rc < 0) {
        cmd_error(cmd, "%s", err);
        free(rep);
        return TASC_EXIT_INPUT;
    }
    axioms_report(axp, ax, cfg, rep);
    fflush(stdout);
    if (rc)
        cmd_error(cmd, "%d axioms failed, %d false equalities proved", (int)rep->failed_axioms, (int)rep->failed_probes);
    free(rep);
    return rc ? TASC_EXIT_INPUT : TASC_EXIT_OK;
}

int cmd_axioms(int argc, char **argv) {
    const char *cmd = "axioms";
    axioms_args a;
    memset(&a, 0, sizeof a);
    verify_check_config_default(&a.cfg);
    if (cmd_wants_help(argc, argv)) {
        axioms_usage(&a);
        return TASC_EXIT_OK;
    }
    if (argc < 2 || (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "list") != 0)) {
        cmd_error(cmd, "expected 'check' or 'list' (tasc axioms --help)");
        return TASC_EXIT_USAGE;
    }
    int list = !strcmp(argv[1], "list");
    if (cmd_opts_parse(cmd, list ? axioms_list_opts : axioms_check_opts, &a, argc, argv, 2, NULL, 0) < 0)
        return TASC_EXIT_USAGE;
    if (a.axp && !*a.axp) {
        cmd_error(cmd, "empty file name");
        return TASC_EXIT_USAGE;
    }
    if (a.threads)
        a.cfg.threads = (int32_t)a.threads;
    char apath[4096], err[1024];
    if (!a.axp && !(a.axp = verify_axioms_default_path(apath, sizeof apath))) {
        cmd_error(cmd, "the axiom file is missing (set TASC_AXIOMS or use --axioms FILE)");
        return TASC_EXIT_RESOURCE;
    }
    verify_axioms *ax = verify_axioms_load(a.axp, err, sizeof err);
    if (!ax) {
        cmd_error(cmd, "%s", err);
        return access(a.axp, R_OK) == 0 ? TASC_EXIT_INPUT : TASC_EXIT_RESOURCE;
    }
    int rc = list ? axioms_list(a.axp, ax) : axioms_check(a.axp, ax, &a.cfg);
    verify_axioms_free(ax);
    return rc;
}
