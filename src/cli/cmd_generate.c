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

static void generate_usage(void) {
    printf("usage: tasc generate --max-ops N [--ops LIST] [--threads T] [--verify] --out FILE\n"
           "\n"
           "Enumerate every graph of up to N operators over the op table's generation set and a\n"
           "fixed pool of small input tensors, pair graphs that compute the same values (exact\n"
           "integer fingerprints, then a float re-test), prune redundant pairs, and write the\n"
           "candidate substitutions to FILE (JSON, rules/README.md). Same options, same bytes,\n"
           "whatever the thread count.\n"
           "\n"
           "options:\n"
           "  --max-ops N   operators per graph, 1..%d\n"
           "  --ops LIST    comma-separated ops (default: every generation op; tasc ops lists them)\n"
           "  --threads T   worker threads, 1..1024 (default: all cores)\n"
           "  --out FILE    the rule file to write\n"
           "  --verify      prove the candidates as tasc verify does and write only the proved rules;\n"
           "                the others go to FILE's .quarantine.json (verifier/verify.h)\n"
           "  --fp-bits B   keep B bits of each fingerprint, 1..64 (default 64); fewer bits force\n"
           "                hash collisions, which the float re-test must remove (a testing aid)\n"
           "  -h, --help    this text\n"
           "\n"
           "exit codes: 0 ok, 1 generation failed or FILE cannot be written, 2 bad command line\n",
           GEN_MAX_OPS);
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

int cmd_generate(int argc, char **argv) {
    const char *cmd = "generate";
    if (cmd_wants_help(argc, argv)) {
        generate_usage();
        return TASC_EXIT_OK;
    }
    gen_config cfg;
    gen_config_default(&cfg);
    const char *out = NULL, *ops = NULL, *val = NULL;
    long long max_ops = -1, threads = 0, bits = 64;
    int verify = 0;
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--verify")) {
            verify = 1;
        } else if ((r = cmd_opt_value(cmd, argc, argv, &i, "--max-ops", &val)) != 0) {
            if (r < 0 || cmd_parse_i64(cmd, "--max-ops", val, 1, GEN_MAX_OPS, &max_ops) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value(cmd, argc, argv, &i, "--threads", &val)) != 0) {
            if (r < 0 || cmd_parse_i64(cmd, "--threads", val, 1, 1024, &threads) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value(cmd, argc, argv, &i, "--fp-bits", &val)) != 0) {
            if (r < 0 || cmd_parse_i64(cmd, "--fp-bits", val, 1, 64, &bits) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value(cmd, argc, argv, &i, "--ops", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            ops = val;
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
        } else {
            cmd_error(cmd, "unexpected argument '%s' (tasc generate --help)", argv[i]);
            return TASC_EXIT_USAGE;
        }
    }
    if (max_ops < 0) {
        cmd_error(cmd, "missing --max-ops N (tasc generate --help)");
        return TASC_EXIT_USAGE;
    }
    if (!out) {
        cmd_error(cmd, "missing --out FILE (tasc generate --help)");
        return TASC_EXIT_USAGE;
    }
    char err[512];
    if (ops && gen_parse_ops(&cfg, ops, err, sizeof err) < 0) {
        cmd_error(cmd, "%s", err);
        return TASC_EXIT_USAGE;
    }
    cfg.max_ops = (int32_t)max_ops;
    cfg.threads = (int32_t)threads;
    cfg.fp_bits = (int32_t)bits;
    gen_bar bar = {isatty(STDERR_FILENO), 0};
    cfg.progress = generate_progress;
    cfg.progress_ctx = &bar;

    /* open the output first: a bad path fails before minutes of work */
    cmd_tmpfile tf;
    if (cmd_tmp_open(cmd, out, &tf) < 0)
        return TASC_EXIT_INPUT;
    rules_set *rs = NULL;
    gen_stats st;
    int rc = gen_run(&cfg, &rs, &st, err, sizeof err);
    if (bar.drawn)
        fprintf(stderr, "\n");
    if (rc < 0) {
        cmd_tmp_abort(&tf);
        cmd_error(cmd, "%s", err);
        return TASC_EXIT_INPUT;
    }
    char line[1024];
    int n = snprintf(line, sizeof line, "tasc generate --max-ops %lld", max_ops);
    if (ops)
        n += snprintf(line + n, sizeof line - (size_t)n, " --ops %s", ops);
    if (bits != 64)
        n += snprintf(line + n, sizeof line - (size_t)n, " --fp-bits %lld", bits);
    if (verify)
        snprintf(line + n, sizeof line - (size_t)n, " --verify");
    rs->tool = malloc(strlen("tasc " TASC_VERSION) + 1);
    rs->generator = malloc(strlen(line) + 1);
    char *text = NULL;
    if (rs->tool && rs->generator) {
        strcpy(rs->tool, "tasc " TASC_VERSION);
        strcpy(rs->generator, line);
        /* --verify: only the proved rules are written (src/cmd_verify.c) */
        if (verify && (rc = cmd_verify_generated(cmd, &rs, out)) != 0) {
            cmd_tmp_abort(&tf);
            rules_set_free(rs);
            return rc;
        }
        text = rules_to_json_string(rs);
    }
    if (!text) {
        cmd_tmp_abort(&tf);
        rules_set_free(rs);
        cmd_error(cmd, "%s: out of memory", out);
        return TASC_EXIT_INPUT;
    }
    fputs(text, tf.f);
    free(text);
    if (cmd_tmp_commit(cmd, &tf) < 0) {
        rules_set_free(rs);
        return TASC_EXIT_INPUT;
    }
    printf("tasc generate: %d rules written to %s\n\n", (int)rs->n_rules, out);
    printf("  %-34s %12s\n", "stage", "count");
    printf("  %-34s %12llu\n", "graphs enumerated", (unsigned long long)st.graphs);
    printf("  %-34s %12llu\n", "distinct fingerprints", (unsigned long long)st.fingerprints);
    printf("  %-34s %12llu\n", "candidate pairs", (unsigned long long)st.pairs);
    printf("  %-34s %12llu\n", "after float re-test", (unsigned long long)st.after_float);
    printf("  %-34s %12llu\n", "after renaming", (unsigned long long)st.after_rename);
    printf("  %-34s %12llu\n", "after common-subgraph pruning", (unsigned long long)st.after_common);
    printf("  %-34s %12llu\n", "after common-supergraph pruning", (unsigned long long)st.after_super);
    printf("  %-34s %12llu\n", "after specialization pruning", (unsigned long long)st.after_special);
    printf("  %-34s %12llu\n", "after generality test (rules)", (unsigned long long)st.after_general);
    printf("  %-34s %12.2f s (enumerate %.2f, sort %.2f, pairs and rules %.2f)\n", "time", st.t_total_s, st.t_enum_s,
           st.t_sort_s, st.t_pairs_s);
    printf("  %-34s %12.1f MiB\n", "peak memory (getrusage)", peak_mib());
    rules_set_free(rs);
    return TASC_EXIT_OK;
}
