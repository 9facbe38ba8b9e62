/* cmd_optimize.c: `tasc optimize MODEL [--rules FILE] --out OUT` -- the optimizer's command: greedy
 * built-in rewrites, cost-based backtracking search over the rule set and the built-in merges,
 * constant folding (src/search.h), then the numerical check, and only if it passes the optimized
 * model is written (JSON, plus a sidecar of the folded weights' values).
 *
 * stdout: the summary (nodes, predicted cost before and after, rewrites applied with counts,
 * search statistics, the check per output, what was written, times). stderr: progress lines and
 * errors. Predicted costs come from the cost model named by --cost: the analytic H100 roofline
 * (src/cost.h) or, in a CUDA build on a GPU, the measured times of src/../ops/cuda/rt_cost.h.
 * Without --rules the shipped rule set is used (opt_default_rules says where it is looked for).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "cost.h"
#include "exec.h"
#include "graph.h"
#include "rules.h"
#include "search.h"

#ifdef TASC_HAVE_CUDA
#include "rt.h"
#include "rt_cost.h"
#endif

#define OPT_ERR_LEN 1024
#define OPT_DEFAULT_SEEDS 3
#define OPT_DEFAULT_TOL 1e-4
#define OPT_RULES_FILE "verified-4.json" /* the shipped rule set (rules/MANIFEST) */
#ifndef TASC_RULES_DIR
#define TASC_RULES_DIR "" /* the source tree's rules/, set by CMake */
#endif

static void opt_usage(void) {
    search_opts d;
    search_opts_default(&d);
    printf("usage: tasc optimize MODEL [--rules FILE|none] --out OUT [--alpha A] [--budget B] [--time-limit S]\n"
           "                          [--cost analytic|measured] [--cost-set NAME=V ...] [--no-check]\n"
           "                          [--seeds N] [--tol T]\n"
           "                          [--dot FILE] [--quiet] [ONNX options]\n"
           "\n"
           "Optimize MODEL with the substitution rules in FILE (default: the shipped, Z3-verified set\n"
           "rules/" OPT_RULES_FILE ") and the built-in rewrites, and write the result to OUT (JSON;\n"
           "folded weights go to the sidecar OUT.weights.bin). Steps:\n"
           "greedy built-in rewrites (common subexpressions, conv+batchnorm folding, bias and relu/gelu\n"
           "fused into conv2d and matmul, a concat of a whole split undone), folding of weight-only\n"
           "nodes into weights, TASO's cost-based\n"
           "backtracking search over every rule (both directions) and the built-in merges of sibling\n"
           "matmuls and convolutions, the greedy rewrites again, folding again.\n"
           "Then the numerical check: MODEL and the result run on the CPU executor on the same\n"
           "generated inputs for seeds 0..N-1; per output the relative L2 error and max abs error\n"
           "are printed, and an error above --tol or any NaN/Inf fails the command: nothing is written.\n"
           "\n"
           "options:\n"
           "  --rules FILE       rule file (rules/README.md). Default: $TASC_RULES if set, else\n"
           "                     rules/" OPT_RULES_FILE " of the source tree tasc was built from, else\n"
           "                     rules/" OPT_RULES_FILE " beside the executable or one folder up\n"
           "  --rules none, --no-rules\n"
           "                     no rule file: built-in rewrites only\n"
           "  --out OUT          the optimized model (required)\n"
           "  --alpha A          keep graphs costing up to A times the best found (default %.2f; 1..10)\n"
           "  --budget B         expand at most B graphs (default %lld)\n"
           "  --time-limit S     stop the search after S seconds (default %.0f; 0: no limit). The result\n"
           "                     is deterministic unless this limit ends the search (the summary says so)\n"
           "  --cost MODEL       analytic: FLOPs and bytes on the H100 roofline (default); measured:\n"
           "                     each node timed on this machine's GPU (CUDA builds), cached in\n"
           "                     TASC_COST_CACHE (default ~/.cache/tasc/cost_measured.txt)\n"
           "  --cost-set NAME=V  a constant of the analytic model (repeatable; `tasc cost --help`\n"
           "                     lists them and their defaults, `tasc cost fit` fits them)\n"
           "  --no-check         skip the numerical check\n"
           "  --seeds N          seeds of the check, 1..100 (default %d)\n"
           "  --tol T            largest relative L2 error accepted (default %g)\n"
           "  --dot FILE         also write the optimized graph as Graphviz DOT, the nodes that rewrites\n"
           "                     made filled (written with OUT, after the check)\n"
           "  --quiet            no progress lines on stderr\n" CMD_MODEL_OPTS_HELP
           "  -h, --help         this text\n"
           "\n"
           "exit codes: 0 ok, 1 bad model or rule file, or the check failed (nothing written),\n"
           "            2 bad command line, 3 --cost measured without CUDA or a GPU, or no default\n"
           "            rule file found, 4 internal error\n",
           d.alpha, (long long)d.budget, d.time_limit_s, OPT_DEFAULT_SEEDS, OPT_DEFAULT_TOL);
}

static double opt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The default rule file into path: $TASC_RULES (as given: a missing file is reported by the
 * loader; "none": no rules, path set to ""), else the first readable of TASC_RULES_DIR/FILE (the
 * source tree, known at build time), <exe dir>/rules/FILE and <exe dir>/../rules/FILE. Returns 0,
 * or -1 after a one-line message when none is found. */
static int opt_default_rules(char *path, size_t len) {
    const char *env = getenv("TASC_RULES");
    if (env && *env) {
        snprintf(path, len, "%s", strcmp(env, "none") ? env : "");
        return 0;
    }
    char tried[3][1024];
    int n = 0;
    if (TASC_RULES_DIR[0])
        snprintf(tried[n++], sizeof tried[0], "%s/%s", TASC_RULES_DIR, OPT_RULES_FILE);
    char exe[800];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(tried[n++], sizeof tried[0], "%s/rules/%s", exe, OPT_RULES_FILE);
            snprintf(tried[n++], sizeof tried[0], "%s/../rules/%s", exe, OPT_RULES_FILE);
        }
    }
    for (int i = 0; i < n; i++)
        if (access(tried[i], R_OK) == 0) {
            snprintf(path, len, "%s", tried[i]);
            return 0;
        }
    char list[3200] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", tried[i]);
    cmd_error("optimize", "the shipped rule file %s was not found (tried: %s); give --rules FILE or --rules none, "
              "or set TASC_RULES", OPT_RULES_FILE, n ? list : "nothing");
    return -1;
}

static int opt_parse_double(const char *opt, const char *val, double lo, double hi, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || *end || errno || !isfinite(v) || v < lo || v > hi) {
        cmd_error("optimize", "bad value for %s: '%s' (a number in %g..%g)", opt, val, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

#ifdef TASC_HAVE_CUDA
/* The measured model: rt_cost's per-node GPU times, its cache saved when the model is freed. */
typedef struct {
    rt_cost_cache *cache;
    char path[1024];
} opt_measured;

static int opt_measured_node(void *impl, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
                             int32_t n_out, const ops_shape *out, double *us, char *err, size_t errlen) {
    opt_measured *m = impl;
    (void)n_out;
    (void)out;
    return rt_cost_measure(m->cache, op, p, n_in, in, us, err, errlen);
}

static void opt_measured_free(void *impl) {
    opt_measured *m = impl;
    char err[512];
    if (rt_cost_cache_save(m->cache, m->path, err, sizeof err) < 0)
        cmd_error("optimize", "cost cache not saved: %s", err);
    rt_cost_cache_free(m->cache);
    free(m);
}

static cost_model *opt_measured_new(int *rc) {
    char err[512];
    if (!rt_available(err, sizeof err)) {
        cmd_error("optimize", "--cost measured needs a GPU: %s", err);
        *rc = TASC_EXIT_RESOURCE;
        return NULL;
    }
    rt_register_ops();
    opt_measured *m = calloc(1, sizeof *m);
    if (!m) {
        *rc = TASC_EXIT_INTERNAL;
        return NULL;
    }
    m->cache = rt_cost_cache_new();
    rt_cost_default_path(m->path, sizeof m->path);
    if (rt_cost_cache_load(m->cache, m->path, 1, err, sizeof err) < 0) {
        cmd_error("optimize", "%s", err);
        rt_cost_cache_free(m->cache);
        free(m);
        *rc = TASC_EXIT_INPUT;
        return NULL;
    }
    return cost_model_new("measured", opt_measured_node, opt_measured_free, m);
}
#endif

int cmd_optimize(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        opt_usage();
        return TASC_EXIT_OK;
    }
    search_opts so;
    search_opts_default(&so);
    const char *model = NULL, *rules_path = NULL, *out = NULL, *cost_name = "analytic", *val = NULL, *dot = NULL;
    int check = 1, quiet = 0, r;
    long long budget = so.budget, seeds = OPT_DEFAULT_SEEDS;
    double tol = OPT_DEFAULT_TOL;
    cmd_model_opts mo;
    memset(&mo, 0, sizeof mo);
    cost_analytic_config acfg;
    cost_analytic_defaults(&acfg);
    for (int i = 1; i < argc; i++) {
        if ((r = cmd_model_opt("optimize", argc, argv, &i, &mo)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--rules", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (!*val) {
                cmd_error("optimize", "bad value for --rules: '' (a file, or none)");
                return TASC_EXIT_USAGE;
            }
            rules_path = val;
        } else if (!strcmp(argv[i], "--no-rules")) {
            rules_path = "none";
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--out", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (!*val) {
                cmd_error("optimize", "bad value for --out: '' (a file)");
                return TASC_EXIT_USAGE;
            }
            out = val;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--dot", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (!*val) {
                cmd_error("optimize", "bad value for --dot: '' (a file)");
                return TASC_EXIT_USAGE;
            }
            dot = val;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--alpha", &val)) != 0) {
            if (r < 0 || opt_parse_double("--alpha", val, 1.0, 10.0, &so.alpha) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--budget", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("optimize", "--budget", val, 0, INT64_C(1000000000), &budget) < 0)
                return TASC_EXIT_USAGE;
            so.budget = budget;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--time-limit", &val)) != 0) {
            if (r < 0 || opt_parse_double("--time-limit", val, 0.0, 1e6, &so.time_limit_s) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--cost", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (strcmp(val, "analytic") != 0 && strcmp(val, "measured") != 0) {
                cmd_error("optimize", "bad value for --cost: '%s' (analytic or measured)", val);
                return TASC_EXIT_USAGE;
            }
            cost_name = val;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--cost-set", &val)) != 0) {
            char why[512];
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (cost_analytic_set(&acfg, val, why, sizeof why) < 0) {
                cmd_error("optimize", "--cost-set: %s", why);
                return TASC_EXIT_USAGE;
            }
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--seeds", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("optimize", "--seeds", val, 1, 100, &seeds) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("optimize", argc, argv, &i, "--tol", &val)) != 0) {
            if (r < 0 || opt_parse_double("--tol", val, 0.0, 1.0, &tol) < 0)
                return TASC_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--no-check")) {
            check = 0;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cmd_bad_option("optimize", argv[i]);
        } else if (!model) {
            model = argv[i];
        } else {
            cmd_error("optimize", "unexpected argument '%s' (tasc optimize --help)", argv[i]);
            return TASC_EXIT_USAGE;
        }
    }
    if (!model) {
        cmd_error("optimize", "missing MODEL (tasc optimize --help)");
        return TASC_EXIT_USAGE;
    }
    if (!out) {
        cmd_error("optimize", "missing --out OUT (tasc optimize --help)");
        return TASC_EXIT_USAGE;
    }
    so.progress = quiet ? NULL : stderr;
    char default_rules[4096];
    int rules_default = !rules_path;
    if (rules_default) {
        if (opt_default_rules(default_rules, sizeof default_rules) < 0)
            return TASC_EXIT_RESOURCE;
        rules_path = default_rules;
    }
    if (!strcmp(rules_path, "none") || !*rules_path)
        rules_path = NULL; /* built-in rewrites only */

    int rc = TASC_EXIT_INPUT;
    char err[OPT_ERR_LEN];
    double t_start = opt_now();
    graph *g = NULL, *best = NULL;
    rules_set *rs = NULL;
    cost_model *cm = NULL;
    exec_diff *worst = NULL;
    search_result res;
    memset(&res, 0, sizeof res);

    if (!strcmp(cost_name, "measured")) {
#ifdef TASC_HAVE_CUDA
        cm = opt_measured_new(&rc);
        if (!cm)
            goto done;
#else
        cmd_error("optimize", "--cost measured needs the GPU runtime: this tasc was built without CUDA");
        rc = TASC_EXIT_RESOURCE;
        goto done;
#endif
    } else {
        cm = cost_analytic_new(&acfg);
    }
    g = cmd_load_model_opts("optimize", model, &mo);
    if (!g)
        goto done;
    if (rules_path) {
        rs = rules_load(rules_path, err, sizeof err);
        if (!rs) {
            cmd_error("optimize", "%s", err);
            goto done;
        }
    }
    double t_loaded = opt_now();
    if (!quiet)
        fprintf(stderr, "optimize: %s: %d nodes, %d rules, cost model %s\n", model, (int)g->n_nodes,
                rs ? (int)rs->n_rules : 0, cost_model_name(cm));
    if (search_optimize(g, rs, cm, &so, &best, &res, err, sizeof err) < 0) {
        cmd_error("optimize", "%s: %s", model, err);
        goto done;
    }
    double t_opt = opt_now();

    printf("model: %s (%s)\n", g->name, model);
    if (rules_path)
        printf("rules: %s%s\n", rules_path, rules_default ? " (default)" : "");
    else
        printf("rules: (none: built-in rewrites only)\n");
    if (rs)
        printf("  %d rules\n", (int)rs->n_rules);
    printf("cost model: %s\n", cost_model_name(cm));
    printf("nodes: %d -> %d\n", (int)res.nodes_before, (int)res.nodes_after);
    printf("cost: %.2f us -> %.2f us (predicted speedup %.3fx)\n", res.cost_before, res.cost_after,
           res.cost_after > 0 ? res.cost_before / res.cost_after : 1.0);
    printf("rewrites applied:%s\n", res.n_applied ? "" : " none");
    for (int32_t i = 0; i < res.n_applied; i++)
        printf("  %-28s %s%d\n", res.applied[i].name, res.applied[i].reverse ? "(dst->src) " : "",
               (int)res.applied[i].count);
    printf("search: %lld graphs expanded, %lld candidates, %lld queued; dropped: %lld cost, %lld size, "
           "%lld duplicate; %lld refused%s\n",
           (long long)res.expanded, (long long)res.candidates, (long long)res.queued, (long long)res.dropped_cost,
           (long long)res.dropped_size, (long long)res.dropped_dup, (long long)res.rejected,
           res.time_limited ? "; stopped by --time-limit (the result may depend on machine speed)" : "");
    printf("folded into weights: %d tensors\n", (int)res.folded);
    printf("load time: %.2f s (model and rules)\n", t_loaded - t_start);
    printf("optimize time: %.2f s (search %.2f s)\n", res.seconds, res.search_seconds);

    if (check) {
        if (!quiet)
            fprintf(stderr, "optimize: numerical check, %lld seeds on the CPU executor\n", seeds);
        worst = calloc((size_t)g->n_outputs + 1, sizeof *worst);
        if (!worst) {
            rc = TASC_EXIT_INTERNAL;
            goto done;
        }
        int c = exec_check(g, best, (int32_t)seeds, tol, worst, err, sizeof err);
        if (c < 0) {
            cmd_error("optimize", "%s", err);
            rc = TASC_EXIT_INTERNAL;
            goto done;
        }
        printf("check: %lld seeds, CPU executor, tolerance %g (relative L2)\n", seeds, tol);
        for (int32_t i = 0; i < g->n_outputs; i++)
            printf("  %-24s rel L2 %.3e  max abs %.3e%s\n", g->tensors[g->outputs[i]].name, worst[i].rel_l2,
                   worst[i].max_abs, worst[i].nan_count ? "  NaN/Inf!" : "");
        if (c > 0) {
            printf("check: FAILED\n");
            if (err[0])
                cmd_error("optimize", "numerical check failed: %s: %s; nothing written", model, err);
            else
                cmd_error("optimize", "numerical check failed: the optimized model differs from %s beyond %g; "
                          "nothing written", model, tol);
            rc = TASC_EXIT_INPUT;
            goto done;
        }
        printf("check: passed\n");
        printf("check time: %.2f s\n", opt_now() - t_opt);
    } else {
        printf("check: skipped (--no-check)\n");
    }
    if (graph_save_json(best, out, err, sizeof err) < 0) {
        cmd_error("optimize", "%s", err);
        goto done;
    }
    if (dot) {
        cmd_tmpfile tf;
        if (cmd_tmp_open("optimize", dot, &tf) < 0)
            goto done;
        graph_write_dot(best, tf.f);
        if (cmd_tmp_commit("optimize", &tf) < 0)
            goto done;
    }
    if (graph_has_sidecar_weights(best)) {
        char *side = graph_sidecar_path(out);
        printf("wrote: %s (weights: %s)\n", out, side ? side : "?");
        free(side);
    } else {
        printf("wrote: %s\n", out);
    }
    if (dot)
        printf("wrote: %s (DOT, rewritten nodes filled)\n", dot);
    printf("total time: %.2f s\n", opt_now() - t_start);
    rc = TASC_EXIT_OK;
done:
    search_result_free(&res);
    free(worst);
    graph_free(best);
    graph_free(g);
    rules_set_free(rs);
    cost_model_free(cm);
    return rc;
}
