/* cmd_optimize.c: `tasc optimize MODEL [--rules FILE] --out OUT` -- the optimizer's command: greedy
 * built-in rewrites, cost-based backtracking search over the rule set and the built-in merges,
 * constant folding (src/search.h), then the numerical check, and only if it passes the optimized
 * model is written (JSON, plus a sidecar of the folded weights' values).
 *
 * stdout: the summary (nodes, predicted cost before and after, rewrites applied with counts,
 * search statistics, the check per output, what was written, times). stderr: progress lines and
 * errors. Predicted costs come from the cost model named by --cost: the analytic H100 roofline
 * (src/optimizer/cost.h) or, in a CUDA build on a GPU, the measured times of
 * src/runtime/rt_cost.h (rt_cost_model_new).
 * Without --rules the shipped rule set is used (opt_default_rules says where it is looked for).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cost.h"
#include "exec.h"
#include "graph.h"
#include "rules.h"
#include "search.h"

#ifdef TASC_HAVE_CUDA
#include "rt.h"
#endif

#define OPT_ERR_LEN 1024
#define OPT_DEFAULT_SEEDS 3
#define OPT_DEFAULT_TOL 1e-4
#define OPT_RULES_FILE "verified-4.json" /* the shipped rule set (rules/MANIFEST) */
#ifndef TASC_RULES_DIR
#define TASC_RULES_DIR "" /* the source tree's rules/, set by CMake */
#endif

typedef struct {
    search_opts so;
    const char *rules, *out, *cost, *dot, *stats, *builtins, *search;
    int64_t eq_iters, eq_nodes, eq_exact;
    int check, quiet;
    int64_t seeds;
    double tol;
    cost_analytic_config acfg;
    cmd_model_opts mo;
} opt_args;

static int opt_no_rules(const char *cmd, const char *name, char *value, void *field) {
    *(const char **)field = "none";
    return 0;
}

static const cmd_opt opt_opts[] = {
    CMD_NONEMPTY("--rules", "FILE", offsetof(opt_args, rules), "a file, or none",
                 "rule file (rules/README.md), or none: built-in rewrites only. Default: $TASC_RULES if set, "
                 "else rules/" OPT_RULES_FILE " of the source tree tasc was built from, else rules/" OPT_RULES_FILE
                 " beside the executable or one folder up"),
    CMD_CALL("--no-rules", NULL, offsetof(opt_args, rules), opt_no_rules, "the same as --rules none"),
    CMD_NONEMPTY("--out", "OUT", offsetof(opt_args, out), "a file", "the optimized model (required)"),
    CMD_CHOICE("--builtins", "SET", offsetof(opt_args, builtins), "all|minimal",
               "built-in rewrites: all (default), or minimal: only what is not a substitution (common "
               "subexpressions and batchnorm folding, greedily, and folding of weight-only nodes); fusions, "
               "merges and split-concat must then come from the rule file (rules/README.md)"),
    CMD_CHOICE("--search", "KIND", offsetof(opt_args, search), "backtrack|eqsat",
               "backtrack: TASO's cost-based backtracking search (default); eqsat: equality saturation "
               "(Tensat): the rules applied to an e-graph of the model until it saturates or a limit below is "
               "reached, then the cheapest cycle-free graph extracted (greedy with a local search, and exact "
               "with Z3 when the e-graph is small: the summary says which); --alpha and --budget are "
               "backtracking's, --time-limit bounds both"),
    CMD_I64("--eqsat-iters", "N", offsetof(opt_args, eq_iters), 1, 1000,
            "eqsat: rounds of matching at most (default %D)"),
    CMD_I64("--eqsat-nodes", "N", offsetof(opt_args, eq_nodes), 1, 10000000,
            "eqsat: no round starts once the e-graph has N e-nodes, and a round stops adding at 2N (default %D)"),
    CMD_I64("--eqsat-exact", "N", offsetof(opt_args, eq_exact), 0, 1000000,
            "eqsat: exact extraction (Z3) when the e-graph reachable from the outputs has at most N e-nodes "
            "(default %D; 0: never)"),
    CMD_F64("--alpha", "A", offsetof(opt_args, so.alpha), 1.0, 10.0,
            "keep graphs costing up to A times the best found (default %D; %L..%H)"),
    CMD_I64("--budget", "B", offsetof(opt_args, so.budget), 0, INT64_C(1000000000),
            "expand at most B graphs (default %D)"),
    CMD_F64("--time-limit", "S", offsetof(opt_args, so.time_limit_s), 0.0, 1e6,
            "stop the search after S seconds (default %D; 0: no limit). The result is deterministic unless "
            "this limit ends the search (the summary says so)"),
    CMD_CHOICE("--cost", "MODEL", offsetof(opt_args, cost), "analytic|measured",
               "analytic: FLOPs and bytes on the H100 roofline (default); measured: each node timed on this "
               "machine's GPU (CUDA builds), cached in TASC_COST_CACHE (default ~/.cache/tasc/cost_measured.txt)"),
    CMD_CALL("--cost-set", "NAME=V", offsetof(opt_args, acfg), cmd_opt_cost_set,
             "a constant of the analytic model (repeatable; `tasc cost --help` lists them and their defaults, "
             "`tasc cost fit` fits them)"),
    CMD_FLAG_SET("--no-check", offsetof(opt_args, check), 0, "skip the numerical check"),
    CMD_I64("--seeds", "N", offsetof(opt_args, seeds), 1, 100, "seeds of the check, %L..%H (default %D)"),
    CMD_F64("--tol", "T", offsetof(opt_args, tol), 0.0, 1.0, "largest relative L2 error accepted (default %D)"),
    CMD_NONEMPTY("--dot", "FILE", offsetof(opt_args, dot), "a file",
                 "also write the optimized graph as Graphviz DOT, the nodes that rewrites made filled (written "
                 "with OUT, after the check)"),
    CMD_NONEMPTY("--stats", "FILE", offsetof(opt_args, stats), "a file",
                 "also write the search's rule usage as JSON: per rule and direction (and per built-in) the "
                 "matches found, those that type-checked, those queued, the applications on the way to the "
                 "result and the time spent (written with OUT; `tasc rules usage` sums it over models)"),
    CMD_FLAG("--quiet", offsetof(opt_args, quiet), "no progress lines on stderr"),
    CMD_MODEL_OPTS(offsetof(opt_args, mo)),
    CMD_OPT_END,
};

static void opt_defaults(opt_args *a) {
    memset(a, 0, sizeof *a);
    search_opts_default(&a->so);
    a->cost = "analytic";
    a->builtins = "all";
    a->search = "backtrack";
    a->eq_iters = a->so.eqsat_iters;
    a->eq_nodes = a->so.eqsat_nodes;
    a->eq_exact = a->so.eqsat_exact;
    a->check = 1;
    a->seeds = OPT_DEFAULT_SEEDS;
    a->tol = OPT_DEFAULT_TOL;
    cost_analytic_defaults(&a->acfg);
}

static void opt_usage(const opt_args *defaults) {
    printf("usage: tasc optimize MODEL [--rules FILE|none] --out OUT [--builtins all|minimal] [--alpha A]\n"
           "                          [--budget B] [--time-limit S] [--search backtrack|eqsat]\n"
           "                          [--eqsat-iters N] [--eqsat-nodes N] [--eqsat-exact N]\n"
           "                          [--cost analytic|measured] [--cost-set NAME=V ...] [--no-check]\n"
           "                          [--seeds N] [--tol T]\n"
           "                          [--dot FILE] [--stats FILE] [--quiet] [ONNX options]\n"
           "\n"
           "Optimize MODEL with the substitution rules in FILE (default: the shipped, Z3-verified set\n"
           "rules/" OPT_RULES_FILE ") and the built-in rewrites, and write the result to OUT (JSON;\n"
           "folded weights go to the sidecar OUT.weights.bin). Steps:\n"
           "greedy built-in rewrites (common subexpressions, conv+batchnorm folding, bias and relu/gelu\n"
           "fused into conv2d and matmul, a concat of a whole split undone), folding of weight-only\n"
           "nodes into weights, TASO's cost-based\n"
           "backtracking search over every rule (both directions) and the built-in merges of sibling\n"
           "matmuls and convolutions, the greedy rewrites again, folding again. With --builtins minimal\n"
           "only common subexpressions, batchnorm folding and weight folding are built in.\n"
           "With --search eqsat the search is equality saturation instead (the same rules and built-in\n"
           "moves, the same cost model, the same steps around it).\n"
           "Then the numerical check: MODEL and the result run on the CPU executor on the same\n"
           "generated inputs for seeds 0..N-1; per output the relative L2 error and max abs error\n"
           "are printed, and an error above --tol fails the command: nothing is written. NaN/Inf must\n"
           "agree: where the original gives NaN/Inf (inputs outside its domain) the result must too,\n"
           "and those values are left out of the error; anywhere else a NaN/Inf fails the check.\n"
           "\n"
           "options:\n");
    cmd_opts_help(opt_opts, defaults);
    printf("\n"
           "exit codes: 0 ok, 1 bad model or rule file, or the check failed (nothing written),\n"
           "            2 bad command line, 3 --cost measured without CUDA or a GPU, or no default\n"
           "            rule file found, 4 internal error\n");
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

/* What one optimize run holds; opt_free releases it. */
typedef struct {
    const opt_args *a;
    const char *model;
    const char *rules;  /* NULL: built-in rewrites only */
    int rules_default;  /* rules came from opt_default_rules */
    graph *g, *best;
    rules_set *rs;
    cost_model *cm;
    exec_diff *worst;
    search_result res;
    double t_start, t_loaded, t_opt;
} opt_run;

static void opt_free(opt_run *r) {
    search_result_free(&r->res);
    free(r->worst);
    graph_free(r->best);
    graph_free(r->g);
    rules_set_free(r->rs);
    cost_model_free(r->cm);
}

/* The cost model of --cost into r->cm; an exit code. */
static int opt_cost_model(opt_run *r) {
    if (strcmp(r->a->cost, "measured") != 0) {
        r->cm = cost_analytic_new(&r->a->acfg);
        return TASC_EXIT_OK;
    }
#ifdef TASC_HAVE_CUDA
    char err[512];
    if (!rt_available(err, sizeof err)) {
        cmd_error("optimize", "--cost measured needs a GPU: %s", err);
        return TASC_EXIT_RESOURCE;
    }
    r->cm = cmd_measured_model("optimize");
    return r->cm ? TASC_EXIT_OK : TASC_EXIT_INPUT;
#else
    cmd_error("optimize", "--cost measured needs the GPU runtime: this tasc was built without CUDA");
    return TASC_EXIT_RESOURCE;
#endif
}

/* The cost model, the model and the rules into r; an exit code. */
static int opt_load(opt_run *r) {
    char err[OPT_ERR_LEN];
    int rc = opt_cost_model(r);
    if (rc != TASC_EXIT_OK)
        return rc;
    if (!(r->g = cmd_load_model_opts("optimize", r->model, &r->a->mo)))
        return TASC_EXIT_INPUT;
    if (r->rules && !(r->rs = rules_load(r->rules, err, sizeof err))) {
        cmd_error("optimize", "%s", err);
        return TASC_EXIT_INPUT;
    }
    r->t_loaded = base_now();
    return TASC_EXIT_OK;
}

/* The search line of the summary: backtracking's counts, or the e-graph's. */
static void opt_summary_search(const opt_run *r) {
    const search_result *res = &r->res;
    if (!strcmp(r->a->search, "eqsat")) {
        printf("search: eqsat: %d rounds%s, %d e-nodes in %d e-classes, %lld matches, %lld refused, %lld unions; "
               "extraction: %s%s\n",
               (int)res->eq_iters, res->eq_saturated ? " (saturated)" : "", (int)res->eq_nodes, (int)res->eq_classes,
               (long long)res->candidates, (long long)res->rejected, (long long)res->queued,
               res->eq_extraction ? res->eq_extraction : "none",
               res->time_limited ? "; stopped by --time-limit (the result may depend on machine speed)" : "");
        return;
    }
    printf("search: %lld graphs expanded, %lld candidates, %lld queued; dropped: %lld cost, %lld size, "
           "%lld duplicate; %lld refused%s\n",
           (long long)res->expanded, (long long)res->candidates, (long long)res->queued, (long long)res->dropped_cost,
           (long long)res->dropped_size, (long long)res->dropped_dup, (long long)res->rejected,
           res->time_limited ? "; stopped by --time-limit (the result may depend on machine speed)" : "");
}

static void opt_summary(const opt_run *r) {
    const search_result *res = &r->res;
    printf("model: %s (%s)\n", r->g->name, r->model);
    if (r->rules)
        printf("rules: %s%s\n", r->rules, r->rules_default ? " (default)" : "");
    else
        printf("rules: (none: built-in rewrites only)\n");
    if (r->rs)
        printf("  %d rules\n", (int)r->rs->n_rules);
    if (!strcmp(r->a->builtins, "minimal"))
        printf("built-ins: minimal (cse and bn-fold greedily, weight folding; no built-in search move)\n");
    printf("cost model: %s\n", cost_model_name(r->cm));
    printf("nodes: %d -> %d\n", (int)res->nodes_before, (int)res->nodes_after);
    printf("cost: %.2f us -> %.2f us (predicted speedup %.3fx)\n", res->cost_before, res->cost_after,
           res->cost_after > 0 ? res->cost_before / res->cost_after : 1.0);
    printf("rewrites applied:%s\n", res->n_applied ? "" : " none");
    for (int32_t i = 0; i < res->n_applied; i++)
        printf("  %-28s %s%d\n", res->applied[i].name, res->applied[i].reverse ? "(dst->src) " : "",
               (int)res->applied[i].count);
    opt_summary_search(r);
    printf("folded into weights: %d tensors\n", (int)res->folded);
    printf("load time: %.2f s (model and rules)\n", r->t_loaded - r->t_start);
    printf("optimize time: %.2f s (search %.2f s)\n", res->seconds, res->search_seconds);
}

/* The numerical check of r->best against r->g; an exit code. */
static int opt_check(opt_run *r) {
    const opt_args *a = r->a;
    const graph *g = r->g;
    char err[OPT_ERR_LEN];
    if (!a->quiet)
        fprintf(stderr, "optimize: numerical check, %lld seeds on the CPU executor\n", (long long)a->seeds);
    r->worst = base_xcalloc((size_t)g->n_outputs + 1, sizeof *r->worst);
    int c = exec_check(g, r->best, (int32_t)a->seeds, a->tol, r->worst, err, sizeof err);
    if (c == EXEC_CHECK_BAD_ORIGINAL) { /* the model cannot run (an unreadable weight file): as `run` says */
        cmd_error("optimize", "%s: %s", r->model, err);
        return TASC_EXIT_INPUT;
    }
    if (c < 0) {
        cmd_error("optimize", "%s", err);
        return TASC_EXIT_INTERNAL;
    }
    printf("check: %lld seeds, CPU executor, tolerance %g (relative L2)\n", (long long)a->seeds, a->tol);
    for (int32_t i = 0; i < g->n_outputs; i++)
        printf("  %-24s rel L2 %.3e  max abs %.3e%s\n", g->tensors[g->outputs[i]].name, r->worst[i].rel_l2,
               r->worst[i].max_abs, r->worst[i].nan_count ? "  NaN/Inf!" : "");
    if (c > 0) {
        printf("check: FAILED\n");
        if (err[0])
            cmd_error("optimize", "numerical check failed: %s: %s; nothing written", r->model, err);
        else
            cmd_error("optimize", "numerical check failed: the optimized model differs from %s beyond %g; "
                      "nothing written", r->model, a->tol);
        return TASC_EXIT_INPUT;
    }
    printf("check: passed\n");
    printf("check time: %.2f s\n", base_now() - r->t_opt);
    return TASC_EXIT_OK;
}

/* --stats FILE: the search's rule usage as JSON; 0, or -1 after the message. */
static int opt_write_stats(const opt_run *r) {
    cmd_tmpfile tf;
    if (cmd_tmp_open("optimize", r->a->stats, &tf) < 0)
        return -1;
    search_stats_write_json(tf.f, r->rs, &r->res, r->model, r->rules);
    if (cmd_tmp_commit("optimize", &tf) < 0)
        return -1;
    printf("wrote: %s (rule usage statistics)\n", r->a->stats);
    return 0;
}

/* OUT (and --dot, --stats) from r->best; an exit code. */
static int opt_write(const opt_run *r) {
    const char *out = r->a->out, *dot = r->a->dot;
    char err[OPT_ERR_LEN];
    if (graph_save_json(r->best, out, err, sizeof err) < 0) {
        cmd_error("optimize", "%s", err);
        return TASC_EXIT_INPUT;
    }
    if (dot) {
        cmd_tmpfile tf;
        if (cmd_tmp_open("optimize", dot, &tf) < 0)
            return TASC_EXIT_INPUT;
        graph_write_dot(r->best, tf.f);
        if (cmd_tmp_commit("optimize", &tf) < 0)
            return TASC_EXIT_INPUT;
    }
    if (graph_has_sidecar_weights(r->best)) {
        char *side = graph_sidecar_path(out);
        printf("wrote: %s (weights: %s)\n", out, side ? side : "?");
        free(side);
    } else {
        printf("wrote: %s\n", out);
    }
    if (dot)
        printf("wrote: %s (DOT, rewritten nodes filled)\n", dot);
    if (r->a->stats && opt_write_stats(r) < 0)
        return TASC_EXIT_INPUT;
    printf("total time: %.2f s\n", base_now() - r->t_start);
    return TASC_EXIT_OK;
}

/* Load, search, summary, check, write; an exit code. */
static int opt_optimize(opt_run *r) {
    char err[OPT_ERR_LEN];
    search_opts so = r->a->so;
    so.progress = r->a->quiet ? NULL : stderr;
    so.stats = r->a->stats != NULL;
    search_opts_builtins(&so, strcmp(r->a->builtins, "minimal") ? SEARCH_BUILTINS_ALL : SEARCH_BUILTINS_MINIMAL);
    so.eqsat = !strcmp(r->a->search, "eqsat");
    so.eqsat_iters = (int32_t)r->a->eq_iters;
    so.eqsat_nodes = (int32_t)r->a->eq_nodes;
    so.eqsat_exact = (int32_t)r->a->eq_exact;
    r->t_start = base_now();
    int rc = opt_load(r);
    if (rc != TASC_EXIT_OK)
        return rc;
    if (!r->a->quiet)
        fprintf(stderr, "optimize: %s: %d nodes, %d rules, cost model %s\n", r->model, (int)r->g->n_nodes,
                r->rs ? (int)r->rs->n_rules : 0, cost_model_name(r->cm));
    if (search_optimize(r->g, r->rs, r->cm, &so, &r->best, &r->res, err, sizeof err) < 0) {
        cmd_error("optimize", "%s: %s", r->model, err);
        return TASC_EXIT_INPUT;
    }
    r->t_opt = base_now();
    opt_summary(r);
    if (r->a->check) {
        if ((rc = opt_check(r)) != TASC_EXIT_OK)
            return rc;
    } else {
        printf("check: skipped (--no-check)\n");
    }
    return opt_write(r);
}

int cmd_optimize(int argc, char **argv) {
    opt_args a;
    opt_defaults(&a);
    if (cmd_wants_help(argc, argv)) {
        opt_usage(&a);
        return TASC_EXIT_OK;
    }
    opt_run r;
    memset(&r, 0, sizeof r);
    r.a = &a;
    if (cmd_opts_parse("optimize", opt_opts, &a, argc, argv, 1, &r.model, 1) < 0)
        return TASC_EXIT_USAGE;
    if (!r.model) {
        cmd_error("optimize", "missing MODEL (tasc optimize --help)");
        return TASC_EXIT_USAGE;
    }
    if (!a.out) {
        cmd_error("optimize", "missing --out OUT (tasc optimize --help)");
        return TASC_EXIT_USAGE;
    }
    char default_rules[4096];
    r.rules = a.rules;
    r.rules_default = !r.rules;
    if (r.rules_default) {
        if (opt_default_rules(default_rules, sizeof default_rules) < 0)
            return TASC_EXIT_RESOURCE;
        r.rules = default_rules;
    }
    if (!strcmp(r.rules, "none") || !*r.rules)
        r.rules = NULL; /* built-in rewrites only */
    int rc = opt_optimize(&r);
    opt_free(&r);
    return rc;
}
