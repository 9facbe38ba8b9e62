/* cmd_verify.c: `tasc verify CANDIDATES --out RULES`: prove candidate rules with Z3 from the axioms
 * (verifier/verify.h) and write the proved ones; the others go to a quarantine file with the
 * reason. A summary table goes to stdout, a progress bar to stderr when it is a terminal. The
 * rule file does not depend on the thread count or the cache (only the proof times in it are
 * measurements, taken from the cache on a re-run). Also the verification step of
 * `tasc generate --verify` (cmd_verify_generated).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cmd.h"
#include "rules.h"
#include "verify.h"

/* tasc generate --verify (src/cmd_generate.c): prove the generated set *rs, replace it by the proved
 * rules, write the others to OUT's quarantine file, print the summary. Returns an exit code.
 * Declared here and in cmd_generate.c until src/cmd.h lists it. */
int cmd_verify_generated(const char *cmd, rules_set **rs, const char *out);


typedef struct {
    verify_config cfg;
    const char *out, *quar, *axp, *cache;
    int no_cache, require_all;
    int64_t threads;
} verify_args;

static const cmd_opt verify_opts[] = {
    CMD_STR("--out", "FILE", offsetof(verify_args, out), "the proved rules"),
    CMD_STR("--quarantine", "FILE", offsetof(verify_args, quar),
            "the rules not proved (default: RULES with .quarantine.json)"),
    CMD_SECONDS("--timeout", "S", offsetof(verify_args, cfg.timeout_s), 86400.0, "seconds per query (default %D)"),
    CMD_I64("--threads", "T", offsetof(verify_args, threads), 1, 1024,
            "worker threads, each with its own Z3 context (default: all cores)"),
    CMD_STR("--axioms", "FILE", offsetof(verify_args, axp),
            "the axiom file (default: $TASC_AXIOMS or verifier/axioms.smt2)"),
    CMD_STR("--cache", "FILE", offsetof(verify_args, cache),
            "outcomes keyed by (op set, axioms, candidate); a re-run with nothing changed proves nothing again "
            "(default: $TASC_CACHE_DIR/verify.cache, else ~/.cache/tasc/verify.cache)"),
    CMD_FLAG("--no-cache", offsetof(verify_args, no_cache), "neither read nor write a cache"),
    CMD_FLAG_SET("--no-numeric", offsetof(verify_args, cfg.numeric_check), 0,
                 "skip the check on random values before Z3"),
    CMD_FLAG("--require-all", offsetof(verify_args, require_all),
             "exit 1 unless every candidate is proved (for CI)"),
    CMD_FLAG("--mark-free-splits", offsetof(verify_args, cfg.mark_free_splits),
             "prove each proved rule's two-way splits of equal parts again with a free cut and mark those that "
             "hold \"split_sizes\": \"free\" (rules/match.h: the matcher then binds splits of any two sizes)"),
    CMD_OPT_END,
};

static void verify_usage(const verify_args *defaults) {
    printf("usage: tasc verify CANDIDATES --out RULES [--quarantine FILE] [--timeout S] [--threads T]\n"
           "                  [--axioms FILE] [--cache FILE | --no-cache] [--no-numeric] [--require-all]\n"
           "                  [--mark-free-splits]\n"
           "\n"
           "Prove each candidate rule of CANDIDATES (a rule file, rules/README.md) with Z3 from the\n"
           "operator axioms: the rule holds when \"some mapped output differs\" is unsatisfiable under\n"
           "the axioms, for every shape of its variables where both sides are well typed. Each\n"
           "candidate ends proved, refuted (a counterexample on random values, or a Z3 model) or\n"
           "unknown (timeout, incomplete reasoning, an op outside the axioms). Proved rules go to\n"
           "RULES with their proof (time, the axioms of the unsat core); the others go to the\n"
           "quarantine file with the reason. Output order is candidate order.\n"
           "\n"
           "options:\n");
    cmd_opts_help(verify_opts, defaults);
    printf("\n"
           "exit codes: 0 ok, 1 bad input or (--require-all) a candidate not proved, 2 bad command\n"
           "line, 3 the axiom file is missing\n");
}

static const char *verify_cache_path(char *buf, size_t len) {
    const char *d = getenv("TASC_CACHE_DIR");
    const char *x = getenv("XDG_CACHE_HOME");
    const char *h = getenv("HOME");
    if (d && *d)
        snprintf(buf, len, "%s/verify.cache", d);
    else if (x && *x)
        snprintf(buf, len, "%s/tasc/verify.cache", x);
    else if (h && *h)
        snprintf(buf, len, "%s/.cache/tasc/verify.cache", h);
    else
        return NULL;
    return base_mkdirs_for(buf, NULL, 0) == 0 ? buf : NULL;
}

typedef struct {
    int tty, drawn;
} verify_bar;

static void verify_progress_bar(void *ctx, const verify_progress *p) {
    verify_bar *b = ctx;
    if (!b || !b->tty)
        return;
    double frac = p->total ? (double)p->done / (double)p->total : 1.0;
    int width = 30, fill = (int)(frac * width + 0.5);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '=' : ' ';
    bar[width] = '\0';
    fprintf(stderr, "\r%s [%s] %5.1f%%  %lld/%lld  proved %lld  refuted %lld  unknown %lld  %.0fs   ", p->phase, bar,
            100.0 * frac, (long long)p->done, (long long)p->total, (long long)p->proved, (long long)p->refuted,
            (long long)p->unknown, p->elapsed_s);
    fflush(stderr);
    b->drawn = 1;
}

static int verify_save(const char *cmd, const rules_set *rs, const char *path) {
    char *text = rules_to_json_string(rs);
    if (!text) {
        cmd_error(cmd, "%s: out of memory", path);
        return -1;
    }
    int rc = cmd_write_text(cmd, path, text);
    free(text);
    return rc;
}

static double verify_peak_mib(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : -1.0;
}

static void verify_summary(const verify_stats *st, const verify_config *cfg, const char *out, const char *quar,
                           const char *axp, const verify_axioms *ax) {
    printf("tasc verify: %lld of %lld candidates proved, written to %s; %lld quarantined in %s\n\n",
           (long long)st->proved, (long long)st->candidates, out, (long long)(st->refuted + st->unknown), quar);
    printf("  %-30s %12lld\n", "candidates", (long long)st->candidates);
    printf("  %-30s %12lld\n", "from the cache", (long long)st->cached);
    printf("  %-30s %12lld\n", "proved", (long long)st->proved);
    printf("  %-30s %12lld\n", "refuted", (long long)st->refuted);
    printf("  %-30s %12lld\n", "unknown", (long long)st->unknown);
    printf("  %-30s %12lld\n", "  of which timeouts", (long long)st->timeouts);
    printf("  %-30s %12.2f s\n", "wall time", st->wall_s);
    printf("  %-30s %12.2f s\n", "solver time (sum)", st->solver_s);
    printf("  %-30s %12.3f s\n", "slowest query", st->max_query_s);
    printf("  %-30s %12d\n", "threads", (int)st->threads);
    printf("  %-30s %12g s\n", "timeout per query", cfg->timeout_s);
    printf("  %-30s %12.1f MiB\n", "peak memory (getrusage)", verify_peak_mib());
    printf("  %-30s %s (%s)\n", "axioms", axp, verify_axioms_hash(ax));
    if (cfg->cache_path)
        printf("  %-30s %s\n", "cache", cfg->cache_path);
}

/* The quarantine file that goes with OUT: OUT without .json, plus .quarantine.json. */
static int verify_quarantine_name(const char *out, char *buf, size_t len) {
    size_t n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".json"))
        n -= 5;
    return snprintf(buf, len, "%.*s.quarantine.json", (int)n, out) < (int)len ? 0 : -1;
}

int cmd_verify_generated(const char *cmd, rules_set **rs, const char *out) {
    char apath[4096], cbuf[4096], qpath[4096], err[1024];
    const char *axp = verify_axioms_default_path(apath, sizeof apath);
    if (!axp) {
        cmd_error(cmd, "the axiom file is missing (set TASC_AXIOMS)");
        return TASC_EXIT_RESOURCE;
    }
    if (verify_quarantine_name(out, qpath, sizeof qpath) < 0) {
        cmd_error(cmd, "--out name too long");
        return TASC_EXIT_USAGE;
    }
    verify_axioms *ax = verify_axioms_load(axp, err, sizeof err);
    if (!ax) {
        cmd_error(cmd, "%s", err);
        return TASC_EXIT_INPUT;
    }
    verify_config cfg;
    verify_config_default(&cfg);
    cfg.cache_path = verify_cache_path(cbuf, sizeof cbuf);
    verify_bar bar = {isatty(STDERR_FILENO), 0};
    cfg.progress = verify_progress_bar;
    cfg.progress_ctx = &bar;
    rules_set *proved = NULL, *quarantine = NULL;
    verify_stats st;
    int rc = verify_run(ax, &cfg, *rs, &proved, &quarantine, &st, err, sizeof err);
    if (bar.drawn)
        fprintf(stderr, "\n");
    if (rc < 0) {
        cmd_error(cmd, "%s", err);
        verify_axioms_free(ax);
        return TASC_EXIT_INPUT;
    }
    if (verify_save(cmd, quarantine, qpath) < 0) {
        rules_set_free(proved);
        rules_set_free(quarantine);
        verify_axioms_free(ax);
        return TASC_EXIT_INPUT;
    }
    verify_summary(&st, &cfg, out, qpath, axp, ax);
    printf("\n");
    rules_set_free(quarantine);
    rules_set_free(*rs);
    *rs = proved;
    verify_axioms_free(ax);
    return TASC_EXIT_OK;
}

/* The checks of the options after parsing; quar and axp get their defaults (qbuf and abuf hold
 * them). An exit code. */
static int verify_check_args(verify_args *a, char *qbuf, char *abuf, size_t len) {
    const char *cmd = "verify";
    if (!a->out || !*a->out) {
        cmd_error(cmd, "missing --out RULES (tasc verify --help)");
        return TASC_EXIT_USAGE;
    }
    if ((a->quar && !*a->quar) || (a->cache && !*a->cache) || (a->axp && !*a->axp)) {
        cmd_error(cmd, "empty file name");
        return TASC_EXIT_USAGE;
    }
    if (a->cache && a->no_cache) {
        cmd_error(cmd, "--cache and --no-cache together");
        return TASC_EXIT_USAGE;
    }
    if (!a->quar) {
        if (verify_quarantine_name(a->out, qbuf, len) < 0) {
            cmd_error(cmd, "--out name too long");
            return TASC_EXIT_USAGE;
        }
        a->quar = qbuf;
    }
    if (!a->axp && !(a->axp = verify_axioms_default_path(abuf, len))) {
        cmd_error(cmd, "the axiom file is missing (set TASC_AXIOMS or use --axioms FILE)");
        return TASC_EXIT_RESOURCE;
    }
    return TASC_EXIT_OK;
}

/* The command recorded in both files: what decides their content. */
static void verify_record(const verify_config *cfg, const rules_set *cands, rules_set *proved, rules_set *quarantine) {
    char line[2048];
    snprintf(line, sizeof line, "%s%stasc verify%s", cands->generator ? cands->generator : "",
             cands->generator ? "; " : "", cfg->numeric_check ? "" : " --no-numeric");
    if (cfg->timeout_s != VERIFY_DEFAULT_TIMEOUT_S) {
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, " --timeout %g", cfg->timeout_s);
    }
    for (int k = 0; k < 2; k++) {
        rules_set *rs = k ? quarantine : proved;
        free(rs->generator);
        rs->generator = base_xstrdup(line);
    }
}

/* Proves cands, writes both files and prints the summary; an exit code. */
static int verify_prove(const verify_args *a, verify_config *cfg, verify_axioms *ax, rules_set *cands) {
    const char *cmd = "verify";
    char err[1024];
    verify_bar bar = {isatty(STDERR_FILENO), 0};
    cfg->progress = verify_progress_bar;
    cfg->progress_ctx = &bar;
    rules_set *proved = NULL, *quarantine = NULL;
    verify_stats st;
    int rc = verify_run(ax, cfg, cands, &proved, &quarantine, &st, err, sizeof err);
    if (bar.drawn)
        fprintf(stderr, "\n");
    if (rc < 0) {
        cmd_error(cmd, "%s", err);
        return TASC_EXIT_INPUT;
    }
    int code = TASC_EXIT_INPUT;
    verify_record(cfg, cands, proved, quarantine);
    if (verify_save(cmd, proved, a->out) < 0 || verify_save(cmd, quarantine, a->quar) < 0)
        goto done;
    verify_summary(&st, cfg, a->out, a->quar, a->axp, ax);
    code = TASC_EXIT_OK;
    if (a->require_all && st.proved != st.candidates) {
        cmd_error(cmd, "%lld of %lld candidates not proved (see %s)", (long long)(st.candidates - st.proved),
                  (long long)st.candidates, a->quar);
        code = TASC_EXIT_INPUT;
    }
done:
    rules_set_free(proved);
    rules_set_free(quarantine);
    return code;
}

int cmd_verify(int argc, char **argv) {
    const char *cmd = "verify";
    verify_args a;
    memset(&a, 0, sizeof a);
    verify_config_default(&a.cfg);
    if (cmd_wants_help(argc, argv)) {
        verify_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *in = NULL;
    if (cmd_opts_parse(cmd, verify_opts, &a, argc, argv, 1, &in, 1) < 0)
        return TASC_EXIT_USAGE;
    if (!in) {
        cmd_error(cmd, "missing CANDIDATES (tasc verify --help)");
        return TASC_EXIT_USAGE;
    }
    char qbuf[4096], apath[4096], cbuf[4096], err[1024];
    int rc = verify_check_args(&a, qbuf, apath, sizeof qbuf);
    if (rc != TASC_EXIT_OK)
        return rc;
    verify_config cfg = a.cfg;
    cfg.threads = (int32_t)a.threads;
    if (!a.no_cache)
        cfg.cache_path = a.cache ? a.cache : verify_cache_path(cbuf, sizeof cbuf);
    verify_axioms *ax = verify_axioms_load(a.axp, err, sizeof err);
    if (!ax) {
        cmd_error(cmd, "%s", err);
        return access(a.axp, R_OK) == 0 ? TASC_EXIT_INPUT : TASC_EXIT_RESOURCE;
    }
    rules_set *cands = rules_load(in, err, sizeof err);
    if (!cands) {
        cmd_error(cmd, "%s", err);
        verify_axioms_free(ax);
        return TASC_EXIT_INPUT;
    }
    rc = verify_prove(&a, &cfg, ax, cands);
    rules_set_free(cands);
    verify_axioms_free(ax);
    return rc;
}
