/* cmd_generate.c: `tasc generate --max-ops N [--ops LIST] [--threads T] --out FILE`: enumerate
 * graphs and write the candidate substitutions (rules/README.md) through a temporary file and a
 * rename. A progress bar goes to stderr when it is a terminal; the summary table (every stage's
 * count, time, peak memory) to stdout. The file does not depend on the thread count: the command
 * recorded in it leaves --threads and --out out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cmd.h"
#include "gen.h"
#include "rules.h"

/* src/cmd_verify.c: the verification step of --verify (until src/cmd.h lists it). */
int cmd_verify_generated(const char *cmd, rules_set **rs, const char *out);

#ifndef TASC_VERSION
#define TASC_VERSION "dev"
#endif

typedef struct {
    int64_t max_ops, threads, bits;
    const char *ops, *out;
    int verify;
} generate_args;

static const cmd_opt generate_opts[] = {
    CMD_I64("--max-ops", "N", offsetof(generate_args, max_ops), 1, GEN_MAX_OPS, "operators per graph, %L..%H"),
    CMD_STR("--ops", "LIST", offsetof(generate_args, ops),
            "comma-separated ops (default: every generation op; tasc ops lists them)"),
    CMD_I64("--threads", "T", offsetof(generate_args, threads), 1, 1024,
            "worker threads, %L..%H (default: all cores)"),
    CMD_NONEMPTY("--out", "FILE", offsetof(generate_args, out), "a file name", "the rule file to write"),
    CMD_FLAG("--verify", offsetof(generate_args, verify),
             "prove the candidates as tasc verify does and write only the proved rules; the others go to FILE's "
             ".quarantine.json (verifier/verify.h)"),
    CMD_I64("--fp-bits", "B", offsetof(generate_args, bits), 1, 64,
            "keep B bits of each fingerprint, %L..%H (default %D); fewer bits force hash collisions, which the "
            "float re-test must remove (a testing aid)"),
    CMD_OPT_END,
};

static void generate_usage(const generate_args *defaults) {
    printf("usage: tasc generate --max-ops N [--ops LIST] [--threads T] [--verify] --out FILE\n"
           "\n"
           "Enumerate every graph of up to N operators over the op table's generation set and a\n"
           "fixed pool of small input tensors, pair graphs that compute the same values (exact\n"
           "integer fingerprints, then a float re-test), prune redundant pairs, and write the\n"
           "candidate substitutions to FILE (JSON, rules/README.md). Same options, same bytes,\n"
           "whatever the thread count.\n"
           "\n"
           "options:\n");
    cmd_opts_help(generate_opts, defaults);
    printf("\n"
           "exit codes: 0 ok, 1 generation failed or FILE cannot be written, 2 bad command line\n");
}

/* Progress bar on a terminal: phase, share done, graphs, graphs/s, ETA. */
typedef struct {
    int tty;
    int drawn;
} gen_bar;

static void generate_progress(void *ctx, const gen_progress *p) {
    gen_bar *b = ctx;
    if (!b->tty)
        return;
    double frac = p->total ? (double)p->done / (double)p->total : 0.0;
    int width = 30, fill = (int)(frac * width + 0.5);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '=' : ' ';
    bar[width] = '\0';
    double rate = p->elapsed_s > 0 ? (double)p->graphs / p->elapsed_s : 0.0;
    char eta[32] = "";
    if (frac > 0.02 && frac < 1.0) {
        /* the phase started when the first unit began; the rest at the pace so far */
        snprintf(eta, sizeof eta, " ETA %.0fs", p->elapsed_s * (1.0 - frac) / frac);
    }
    fprintf(stderr, "\r%-9s [%s] %5.1f%%  %llu graphs  %.0f graphs/s%s   ", p->phase, bar, 100.0 * frac,
            (unsigned long long)p->graphs, rate, eta);
    fflush(stderr);
    b->drawn = 1;
}

static double peak_mib(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1.0;
    return (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
}

/* The command recorded in the rule file: what decides its content (not --threads or --out). */
static void generate_line(const generate_args *a, char *line, size_t len) {
    int n = snprintf(line, len, "tasc generate --max-ops %lld", (long long)a->max_ops);
    if (a->ops)
        n += snprintf(line + n, len - (size_t)n, " --ops %s", a->ops);
    if (a->bits != 64)
        n += snprintf(line + n, len - (size_t)n, " --fp-bits %lld", (long long)a->bits);
    if (a->verify)
        snprintf(line + n, len - (size_t)n, " --verify");
}

static void generate_summary(const rules_set *rs, const gen_stats *st, const char *out) {
    printf("tasc generate: %d rules written to %s\n\n", (int)rs->n_rules, out);
    printf("  %-34s %12s\n", "stage", "count");
    printf("  %-34s %12llu\n", "graphs enumerated", (unsigned long long)st->graphs);
    printf("  %-34s %12llu\n", "distinct fingerprints", (unsigned long long)st->fingerprints);
    printf("  %-34s %12llu\n", "candidate pairs", (unsigned long long)st->pairs);
    printf("  %-34s %12llu\n", "after float re-test", (unsigned long long)st->after_float);
    printf("  %-34s %12llu\n", "after renaming", (unsigned long long)st->after_rename);
    printf("  %-34s %12llu\n", "after common-subgraph pruning", (unsigned long long)st->after_common);
    printf("  %-34s %12llu\n", "after common-supergraph pruning", (unsigned long long)st->after_super);
    printf("  %-34s %12llu\n", "after specialization pruning", (unsigned long long)st->after_special);
    printf("  %-34s %12llu\n", "after generality test (rules)", (unsigned long long)st->after_general);
    printf("  %-34s %12.2f s (enumerate %.2f, sort %.2f, pairs and rules %.2f)\n", "time", st->t_total_s,
           st->t_enum_s, st->t_sort_s, st->t_pairs_s);
    printf("  %-34s %12.1f MiB\n", "peak memory (getrusage)", peak_mib());
}

/* The options into cfg; 0, or TASC_EXIT_USAGE after the message. */
static int generate_config(const generate_args *a, gen_config *cfg) {
    char err[512];
    if (a->max_ops < 0) {
        cmd_error("generate", "missing --max-ops N (tasc generate --help)");
        return TASC_EXIT_USAGE;
    }
    if (!a->out) {
        cmd_error("generate", "missing --out FILE (tasc generate --help)");
        return TASC_EXIT_USAGE;
    }
    gen_config_default(cfg);
    if (a->ops && gen_parse_ops(cfg, a->ops, err, sizeof err) < 0) {
        cmd_error("generate", "%s", err);
        return TASC_EXIT_USAGE;
    }
    cfg->max_ops = (int32_t)a->max_ops;
    cfg->threads = (int32_t)a->threads;
    cfg->fp_bits = (int32_t)a->bits;
    return TASC_EXIT_OK;
}

/* The generated set, named and (--verify) proved, into the open file; an exit code. */
static int generate_finish(const generate_args *a, rules_set **rs, cmd_tmpfile *tf) {
    char line[1024];
    generate_line(a, line, sizeof line);
    (*rs)->tool = base_xstrdup("tasc " TASC_VERSION);
    (*rs)->generator = base_xstrdup(line);
    int rc;
    /* --verify: only the proved rules are written (cmd_verify.c) */
    if (a->verify && (rc = cmd_verify_generated("generate", rs, a->out)) != 0)
        return rc;
    char *text = rules_to_json_string(*rs);
    if (!text) {
        cmd_error("generate", "%s: out of memory", a->out);
        return TASC_EXIT_INPUT;
    }
    fputs(text, tf->f);
    free(text);
    return TASC_EXIT_OK;
}

int cmd_generate(int argc, char **argv) {
    generate_args a = {.max_ops = -1, .bits = 64};
    if (cmd_wants_help(argc, argv)) {
        generate_usage(&a);
        return TASC_EXIT_OK;
    }
    gen_config cfg;
    int rc;
    if (cmd_opts_parse("generate", generate_opts, &a, argc, argv, 1, NULL, 0) < 0)
        return TASC_EXIT_USAGE;
    if ((rc = generate_config(&a, &cfg)) != TASC_EXIT_OK)
        return rc;
    gen_bar bar = {isatty(STDERR_FILENO), 0};
    cfg.progress = generate_progress;
    cfg.progress_ctx = &bar;

    /* open the output first: a bad path fails before minutes of work */
    cmd_tmpfile tf;
    if (cmd_tmp_open("generate", a.out, &tf) < 0)
        return TASC_EXIT_INPUT;
    rules_set *rs = NULL;
    gen_stats st;
    char err[512];
    rc = gen_run(&cfg, &rs, &st, err, sizeof err);
    if (bar.drawn)
        fprintf(stderr, "\n");
    if (rc < 0) {
        cmd_tmp_abort(&tf);
        cmd_error("generate", "%s", err);
        return TASC_EXIT_INPUT;
    }
    if ((rc = generate_finish(&a, &rs, &tf)) != TASC_EXIT_OK)
        cmd_tmp_abort(&tf);
    else if (cmd_tmp_commit("generate", &tf) < 0)
        rc = TASC_EXIT_INPUT;
    else
        generate_summary(rs, &st, a.out);
    rules_set_free(rs);
    return rc;
}
