/* cmd_bench.c: `tasc bench MODEL [OPTIMIZED]` -- run a model (and its optimized version) on the GPU
 * runtime (ops/cuda/rt.h) and report, side by side: median latency over many runs after warm-up,
 * the speedup, device memory, and the numerical agreement of the GPU outputs with each other and
 * with the CPU executor (relative L2 error per output).
 *
 * Both graphs get the same inputs (the CPU executor's generated inputs for --seed). Contexts are
 * created for both before either runs (the runtime's rule, rt.h), and the timed runs alternate
 * between the two graphs run by run, each run timed alone with CUDA events, so drift in clocks or
 * temperature hits both alike. Without CUDA compiled in, or without a GPU, it says so in one line
 * and exits with TASC_EXIT_RESOURCE.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph.h"


#define BENCH_ERR_LEN 1024

static void bench_usage(void) {
    printf("usage: tasc bench MODEL [OPTIMIZED | --optimize [--rules FILE] [--time-limit S] [--cost C]]\n"
           "                  [--reps N] [--warmup N] [--seed S] [--tol T]\n"
           "                  [--no-graph] [--no-fold] [--no-cpu] [--check-nodes T] [--json FILE]\n"
           "                  [--profile] [--verbose] [ONNX options]\n"
           "\n"
           "Run MODEL, and OPTIMIZED when given (the same model after `tasc optimize`; with --optimize,\n"
           "MODEL as the optimizer leaves it, made here without writing files), on the GPU:\n"
           "memory planned once, weight-only nodes computed once, every run one CUDA graph replay,\n"
           "FP32 with TF32 off. Prints per graph the median latency of the timed runs, the device\n"
           "memory the runtime holds, the speedup of OPTIMIZED over MODEL, and for every output the\n"
           "relative L2 error between the two GPU results and against the CPU executor on MODEL.\n"
           "Timed runs alternate between the two graphs; each is timed alone with CUDA events.\n"
           "\n"
           "options:\n"
           "  --optimize         optimize MODEL in memory (search_optimize: built-in rewrites, the rules\n"
           "                     of --rules FILE if given, folding) and bench it as OPTIMIZED\n"
           "  --rules FILE       the optimizer's rule file (rules/README.md)\n"
           "  --time-limit S     the optimizer's search time limit in seconds (default its own)\n"
           "  --cost C           the optimizer's cost model: analytic (default) or measured (this GPU)\n"
           "  --reps N           timed runs per graph, median reported (default 200, at least 100\n"
           "                     for reported numbers)\n"
           "  --warmup N         untimed runs per graph first (default 20)\n"
           "  --seed S           inputs as `tasc run --seed S` generates them (default 0)\n"
           "  --tol T            largest relative L2 error accepted between the results (default 1e-3)\n"
           "  --no-graph         launch the nodes one by one instead of replaying a CUDA graph\n"
           "  --no-fold          run weight-only nodes in every run instead of once at setup\n"
           "  --no-cpu           skip the CPU executor (no agreement with it is reported)\n"
           "  --check-nodes T    during setup, compare every node with its CPU reference and name\n"
           "                     those over relative L2 error T (slow: a debugging aid)\n"
           "  --json FILE        also write the results as JSON to FILE\n"
           "  --profile          also time every node alone (its own CUDA graph) and print the time per\n"
           "                     op type and the slowest nodes\n"
           "  --verbose          the runtime's per-node choices (convolution algorithms) on stderr\n" CMD_MODEL_OPTS_HELP
           "  -h, --help         this text\n"
           "\n"
           "environment: TASC_RT_WORKSPACE_MB  cap of the runtime's scratch memory (default 256)\n"
           "             TASC_TUNE_TABLE       the matmul tuning table (tasc kernels tune)\n"
           "exit codes: 0 ok, 1 a bad model, a graph the GPU runtime cannot run, or results that\n"
           "            disagree beyond --tol, 2 bad command line, 3 no CUDA in this build or no GPU\n");
}

#ifndef TASC_HAVE_CUDA

int cmd_bench(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        bench_usage();
        return TASC_EXIT_OK;
    }
    cmd_error("bench", "this tasc was built without CUDA: no GPU runtime");
    return TASC_EXIT_RESOURCE;
}

#else

#include "cost.h"
#include "exec.h"
#include "rt.h"
#include "rt_cost.h"
#include "rules.h"
#include "search.h"

typedef struct {
    const char *path;
    graph *g;
    rt_ctx *ctx;
    rt_info info;
    double *ms;        /* [reps] */
    double med, min, p90;
    float **out;       /* [n_outputs] GPU results */
} bench_graph;

static int bench_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_parse_f(const char *opt, const char *val, double lo, double *out) {
    char *end = NULL;
    double v = val ? strtod(val, &end) : NAN;
    if (!val || end == val || *end || !isfinite(v) || v < lo) {
        cmd_error("bench", "bad value for %s: %s", opt, val ? val : "(none)");
        return -1;
    }
    *out = v;
    return 0;
}

/* Same inputs and outputs (count and shapes), so results can be compared. */
static int bench_same_io(const graph *a, const graph *b, char *err, size_t errlen) {
    char s1[96], s2[96];
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs) {
        snprintf(err, errlen, "the graphs differ in their inputs or outputs (%d/%d vs %d/%d)", (int)a->n_inputs,
                 (int)a->n_outputs, (int)b->n_inputs, (int)b->n_outputs);
        return -1;
    }
    for (int32_t i = 0; i < a->n_inputs; i++) {
        const ops_shape *x = &a->tensors[a->inputs[i]].shape, *y = &b->tensors[b->inputs[i]].shape;
        if (!ops_shape_eq(x, y)) {
            snprintf(err, errlen, "input %d has shape %s in one graph and %s in the other", (int)i,
                     ops_shape_str(x, s1, sizeof s1), ops_shape_str(y, s2, sizeof s2));
            return -1;
        }
    }
    for (int32_t j = 0; j < a->n_outputs; j++) {
        const ops_shape *x = &a->tensors[a->outputs[j]].shape, *y = &b->tensors[b->outputs[j]].shape;
        if (!ops_shape_eq(x, y)) {
            snprintf(err, errlen, "output %d has shape %s in one graph and %s in the other", (int)j,
                     ops_shape_str(x, s1, sizeof s1), ops_shape_str(y, s2, sizeof s2));
            return -1;
        }
    }
    return 0;
}

static double bench_mib(int64_t b) { return (double)b / 1048576.0; }

static void bench_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void bench_json_graph(FILE *f, const char *role, const bench_graph *b, int32_t reps) {
    fprintf(f, "    {\"role\": \"%s\", \"model\": ", role);
    bench_json_str(f, b->path);
    fprintf(f, ",\n     \"median_ms\": %.6f, \"min_ms\": %.6f, \"p90_ms\": %.6f, \"runs\": %d,\n", b->med, b->min,
            b->p90, (int)reps);
    fprintf(f, "     \"cuda_graph\": %s, \"nodes_run\": %d, \"nodes_folded\": %d, \"nodes_aliased\": %d,\n",
            b->info.graph ? "true" : "false", (int)b->info.nodes_run, (int)b->info.nodes_folded,
            (int)b->info.nodes_aliased);
    fprintf(f,
            "     \"device_bytes\": %lld, \"arena_bytes\": %lld, \"unplanned_bytes\": %lld, \"weight_bytes\": %lld, "
            "\"input_bytes\": %lld, \"workspace_bytes\": %lld}",
            (long long)b->info.device_bytes, (long long)b->info.arena_bytes, (long long)b->info.unplanned_bytes,
            (long long)b->info.weight_bytes, (long long)b->info.input_bytes, (long long)b->info.workspace_bytes);
}

/* Time every node alone; print the total per op type and the slowest nodes. */
static int bench_profile(bench_graph *b, const char *role) {
    enum { TOP = 15 };
    char err[BENCH_ERR_LEN], sh[96];
    const int32_t n = b->info.nodes_run;
    int32_t *ids = calloc((size_t)n + 1, sizeof *ids), *order = calloc((size_t)n + 1, sizeof *order);
    double *us = calloc((size_t)n + 1, sizeof *us);
    if (!ids || !us || !order) {
        free(ids);
        free(us);
        free(order);
        cmd_error("bench", "out of memory");
        return -1;
    }
    if (rt_profile(b->ctx, 20, ids, us, err, sizeof err) < 0) {
        cmd_error("bench", "%s: %s", b->path, err);
        free(ids);
        free(us);
        free(order);
        return -1;
    }
    double per_op[OP_COUNT] = {0}, total = 0.0;
    int32_t cnt[OP_COUNT] = {0};
    for (int32_t k = 0; k < n; k++) {
        ops_type op = b->g->nodes[ids[k]].op;
        if (isfinite(us[k])) {
            per_op[op] += us[k];
            total += us[k];
        }
        cnt[op]++;
        order[k] = k;
    }
    printf("\nprofile (%s): every node timed alone, sum %.1f us vs %.1f us per whole run\n", role, total,
           b->med * 1000.0);
    for (int op = 0; op < OP_COUNT; op++)
        if (cnt[op])
            printf("  %-14s %4d nodes %10.1f us %5.1f%%\n", ops_table[op].name, (int)cnt[op], per_op[op],
                   total > 0 ? 100.0 * per_op[op] / total : 0.0);
    for (int32_t i = 0; i < n; i++) /* slowest first (a few passes of selection suffice) */
        for (int32_t j = i + 1; j < n && i < TOP; j++)
            if (us[order[j]] > us[order[i]]) {
                int32_t t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    for (int32_t i = 0; i < n && i < TOP; i++) {
        const graph_node *nd = &b->g->nodes[ids[order[i]]];
        printf("  %9.1f us  %-12s %-40s -> %s\n", us[order[i]], ops_table[nd->op].name, nd->name,
               ops_shape_str(&b->g->tensors[nd->out[0]].shape, sh, sizeof sh));
    }
    free(ids);
    free(us);
    free(order);
    return 0;
}

/* --cost measured: rt_cost's per-node GPU times; the cache is saved when the model is freed. */
typedef struct {
    rt_cost_cache *cache;
    char path[4096];
} bench_measured;

static int bench_measured_node(void *impl, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
                               int32_t n_out, const ops_shape *out, double *us, char *err, size_t errlen) {
    bench_measured *m = impl;
    return rt_cost_measure(m->cache, op, p, n_in, in, us, err, errlen);
}

static void bench_measured_free(void *impl) {
    bench_measured *m = impl;
    char err[BENCH_ERR_LEN];
    if (rt_cost_cache_save(m->cache, m->path, err, sizeof err) < 0)
        cmd_error("bench", "cost cache not saved: %s", err);
    rt_cost_cache_free(m->cache);
    free(m);
}

/* g optimized in memory; prints the optimizer's summary. NULL after a message. */
static graph *bench_optimize(const graph *g, const char *rules_path, double time_limit, const char *cost) {
    char err[BENCH_ERR_LEN];
    cost_model *cm = NULL;
    rules_set *rs = NULL;
    graph *best = NULL;
    search_result res;
    memset(&res, 0, sizeof res);
    if (!strcmp(cost, "measured")) {
        bench_measured *m = calloc(1, sizeof *m);
        if (!m || !(m->cache = rt_cost_cache_new())) {
            free(m);
            cmd_error("bench", "out of memory");
            return NULL;
        }
        rt_cost_default_path(m->path, sizeof m->path);
        if (rt_cost_cache_load(m->cache, m->path, 1, err, sizeof err) < 0) {
            cmd_error("bench", "%s", err);
            rt_cost_cache_free(m->cache);
            free(m);
            return NULL;
        }
        cm = cost_model_new("measured", bench_measured_node, bench_measured_free, m);
    } else {
        cm = cost_analytic_new(NULL);
    }
    if (!cm) {
        cmd_error("bench", "out of memory");
        return NULL;
    }
    if (rules_path && !(rs = rules_load(rules_path, err, sizeof err))) {
        cmd_error("bench", "%s", err);
        cost_model_free(cm);
        return NULL;
    }
    search_opts so;
    search_opts_default(&so);
    if (time_limit >= 0)
        so.time_limit_s = time_limit;
    if (search_optimize(g, rs, cm, &so, &best, &res, err, sizeof err) < 0) {
        cmd_error("bench", "optimize: %s", err);
        best = NULL;
    } else {
        printf("optimized in memory: %d -> %d nodes, cost model %s: %.1f us -> %.1f us predicted (%.3fx), "
               "%.2f s%s\n  rewrites:",
               (int)res.nodes_before, (int)res.nodes_after, cost_model_name(cm), res.cost_before, res.cost_after,
               res.cost_after > 0 ? res.cost_before / res.cost_after : 1.0, res.seconds,
               res.time_limited ? " (stopped by the time limit)" : "");
        for (int32_t i = 0; i < res.n_applied; i++)
            printf(" %s%s x%d", res.applied[i].name, res.applied[i].reverse ? " (reverse)" : "",
                   (int)res.applied[i].count);
        printf("%s; rules: %s\n\n", res.n_applied ? "" : " none", rules_path ? rules_path : "none (built-in only)");
    }
    search_result_free(&res);
    rules_set_free(rs);
    cost_model_free(cm);
    return best;
}

int cmd_bench(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        bench_usage();
        return TASC_EXIT_OK;
    }
    const char *rules_path = NULL, *cost = "analytic";
    double time_limit = -1.0;
    int optimize = 0;
    const char *paths[2] = {NULL, NULL}, *json = NULL, *val = NULL;
    long long reps = 200, warmup = 20, seed = 0;
    double tol = 1e-3, check = 0.0;
    int no_graph = 0, no_fold = 0, no_cpu = 0, verbose = 0, profile = 0, n_paths = 0;
    cmd_model_opts mo;
    memset(&mo, 0, sizeof mo);
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--no-graph")) {
            no_graph = 1;
        } else if (!strcmp(argv[i], "--no-fold")) {
            no_fold = 1;
        } else if (!strcmp(argv[i], "--no-cpu")) {
            no_cpu = 1;
        } else if (!strcmp(argv[i], "--verbose")) {
            verbose = 1;
        } else if (!strcmp(argv[i], "--profile")) {
            profile = 1;
        } else if (!strcmp(argv[i], "--optimize")) {
            optimize = 1;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--rules", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            rules_path = val;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--time-limit", &val)) != 0) {
            if (r < 0 || bench_parse_f("--time-limit", val, 0.0, &time_limit) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--cost", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            if (strcmp(val, "analytic") && strcmp(val, "measured")) {
                cmd_error("bench", "bad value for --cost: '%s' (analytic or measured)", val);
                return TASC_EXIT_USAGE;
            }
            cost = val;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--reps", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("bench", "--reps", val, 1, 1000000, &reps) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--warmup", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("bench", "--warmup", val, 0, 1000000, &warmup) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--seed", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("bench", "--seed", val, 0, INT64_MAX, &seed) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--tol", &val)) != 0) {
            if (r < 0 || bench_parse_f("--tol", val, 0.0, &tol) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--check-nodes", &val)) != 0) {
            if (r < 0 || bench_parse_f("--check-nodes", val, 1e-30, &check) < 0)
                return TASC_EXIT_USAGE;
        } else if ((r = cmd_opt_value("bench", argc, argv, &i, "--json", &val)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
            json = val;
        } else if ((r = cmd_model_opt("bench", argc, argv, &i, &mo)) != 0) {
            if (r < 0)
                return TASC_EXIT_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cmd_bad_option("bench", argv[i]);
        } else if (n_paths < 2) {
            paths[n_paths++] = argv[i];
        } else {
            cmd_error("bench", "too many models: '%s' (tasc bench MODEL [OPTIMIZED])", argv[i]);
            return TASC_EXIT_USAGE;
        }
    }
    if (!n_paths) {
        cmd_error("bench", "no model given (tasc bench MODEL [OPTIMIZED])");
        return TASC_EXIT_USAGE;
    }
    if (optimize && n_paths == 2) {
        cmd_error("bench", "--optimize makes OPTIMIZED itself: give MODEL only");
        return TASC_EXIT_USAGE;
    }
    if (!optimize && (rules_path || time_limit >= 0 || strcmp(cost, "analytic"))) {
        cmd_error("bench", "--rules, --time-limit and --cost go with --optimize");
        return TASC_EXIT_USAGE;
    }
    char err[BENCH_ERR_LEN];
    if (!rt_available(err, sizeof err)) {
        cmd_error("bench", "%s: the GPU runtime needs one", err);
        return TASC_EXIT_RESOURCE;
    }

    int rc = TASC_EXIT_INPUT;
    bench_graph b[2];
    memset(b, 0, sizeof b);
    float **in = NULL, **cpu = NULL;
    const graph *g0 = NULL;
    for (int k = 0; k < n_paths; k++) {
        b[k].path = paths[k];
        if (!(b[k].g = cmd_load_model_opts("bench", paths[k], &mo)))
            goto done;
    }
    g0 = b[0].g;
    if (optimize) {
        b[1].path = paths[1] = "(optimized in memory)";
        if (!(b[1].g = bench_optimize(g0, rules_path, time_limit, cost)))
            goto done;
        n_paths = 2;
    }
    if (n_paths == 2 && bench_same_io(g0, b[1].g, err, sizeof err) < 0) {
        cmd_error("bench", "%s vs %s: %s", paths[0], paths[1], err);
        goto done;
    }
    in = calloc((size_t)g0->n_inputs + 1, sizeof *in);
    cpu = calloc((size_t)g0->n_outputs + 1, sizeof *cpu);
    if (!in || !cpu) {
        cmd_error("bench", "out of memory");
        rc = TASC_EXIT_INTERNAL;
        goto done;
    }
    if (rt_make_inputs(g0, (uint64_t)seed, in, err, sizeof err) < 0) {
        cmd_error("bench", "%s: %s", paths[0], err);
        goto done;
    }
    rt_opts o;
    memset(&o, 0, sizeof o);
    o.no_graph = no_graph;
    o.no_fold = no_fold;
    o.check_tol = check;
    o.verbose = verbose;
    /* every context exists before any runs (rt.h) */
    for (int k = 0; k < n_paths; k++) {
        if (!(b[k].ctx = rt_ctx_new(b[k].g, &o, err, sizeof err))) {
            cmd_error("bench", "%s: %s", paths[k], err);
            goto done;
        }
        for (int32_t i = 0; i < g0->n_inputs; i++)
            if (rt_set_input(b[k].ctx, i, in[i], err, sizeof err) < 0) {
                cmd_error("bench", "%s: %s", paths[k], err);
                goto done;
            }
        b[k].ms = calloc((size_t)reps, sizeof(double));
        b[k].out = calloc((size_t)g0->n_outputs + 1, sizeof(float *));
        if (!b[k].ms || !b[k].out) {
            cmd_error("bench", "out of memory");
            rc = TASC_EXIT_INTERNAL;
            goto done;
        }
    }
    for (int k = 0; k < n_paths; k++) /* the first run captures the graph */
        if (rt_time(b[k].ctx, (int32_t)warmup + 1, 0, NULL, err, sizeof err) < 0) {
            cmd_error("bench", "%s: %s", paths[k], err);
            goto done;
        }
    for (long long r = 0; r < reps; r++)
        for (int k = 0; k < n_paths; k++)
            if (rt_time(b[k].ctx, 0, 1, &b[k].ms[r], err, sizeof err) < 0) {
                cmd_error("bench", "%s: %s", paths[k], err);
                goto done;
            }
    for (int k = 0; k < n_paths; k++) {
        qsort(b[k].ms, (size_t)reps, sizeof(double), bench_cmp_d);
        b[k].med = reps % 2 ? b[k].ms[reps / 2] : 0.5 * (b[k].ms[reps / 2 - 1] + b[k].ms[reps / 2]);
        b[k].min = b[k].ms[0];
        b[k].p90 = b[k].ms[(reps * 9) / 10 < reps ? (reps * 9) / 10 : reps - 1];
        rt_get_info(b[k].ctx, &b[k].info);
        for (int32_t j = 0; j < g0->n_outputs; j++) {
            int64_t n = ops_shape_numel(&g0->tensors[g0->outputs[j]].shape);
            b[k].out[j] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
            if (!b[k].out[j] || rt_get_output(b[k].ctx, j, b[k].out[j], err, sizeof err) < 0) {
                cmd_error("bench", "%s: %s", paths[k], b[k].out[j] ? err : "out of memory");
                goto done;
            }
        }
    }
    if (!no_cpu && exec_cpu_run(g0, (const float *const *)in, (uint64_t)seed, cpu, err, sizeof err) < 0) {
        cmd_error("bench", "%s: CPU executor: %s", paths[0], err);
        goto done;
    }

    /* report */
    const int two = n_paths == 2;
    printf("tasc bench: %s (%s), FP32 (TF32 off), seed %lld\n", rt_device_name(), rt_versions(), seed);
    printf("runs: %s; median of %lld timed runs per graph after %lld warm-up runs, alternating between graphs\n",
           no_graph ? "node-by-node launches (--no-graph)" : "one CUDA graph replay each", reps, warmup);
    printf("\n%-34s %16s", "", "original");
    if (two)
        printf(" %16s", "optimized");
    printf("\n");
#define BENCH_ROW(label, fmt, expr0, expr1) do { \
        printf("%-34s " fmt, label, expr0); \
        if (two) \
            printf(" " fmt, expr1); \
        printf("\n"); \
    } while (0)
    BENCH_ROW("latency median (ms)", "%16.4f", b[0].med, b[1].med);
    BENCH_ROW("latency min (ms)", "%16.4f", b[0].min, b[1].min);
    BENCH_ROW("latency p90 (ms)", "%16.4f", b[0].p90, b[1].p90);
    BENCH_ROW("nodes per run", "%16d", (int)b[0].info.nodes_run, (int)b[1].info.nodes_run);
    BENCH_ROW("nodes folded at setup", "%16d", (int)b[0].info.nodes_folded, (int)b[1].info.nodes_folded);
    BENCH_ROW("reshapes made aliases", "%16d", (int)b[0].info.nodes_aliased, (int)b[1].info.nodes_aliased);
    BENCH_ROW("CUDA graph", "%16s", b[0].info.graph ? "yes" : "no", b[1].info.graph ? "yes" : "no");
    BENCH_ROW("device memory (MiB)", "%16.2f", bench_mib(b[0].info.device_bytes), bench_mib(b[1].info.device_bytes));
    BENCH_ROW("  activations, planned (MiB)", "%16.2f", bench_mib(b[0].info.arena_bytes),
              bench_mib(b[1].info.arena_bytes));
    BENCH_ROW("  activations, without reuse (MiB)", "%16.2f", bench_mib(b[0].info.unplanned_bytes),
              bench_mib(b[1].info.unplanned_bytes));
    BENCH_ROW("  weights and folded values (MiB)", "%16.2f", bench_mib(b[0].info.weight_bytes),
              bench_mib(b[1].info.weight_bytes));
    BENCH_ROW("  inputs (MiB)", "%16.2f", bench_mib(b[0].info.input_bytes), bench_mib(b[1].info.input_bytes));
    BENCH_ROW("  workspace (MiB)", "%16.2f", bench_mib(b[0].info.workspace_bytes),
              bench_mib(b[1].info.workspace_bytes));
#undef BENCH_ROW
    for (int k = 0; k < n_paths; k++)
        if (!b[k].info.graph && !no_graph)
            printf("note: %s runs node by node: %s\n", k ? "optimized" : "original", b[k].info.graph_note);
    if (check > 0)
        for (int k = 0; k < n_paths; k++)
            printf("node check (%s): %d nodes over %g, worst %.3g at '%s'\n", k ? "optimized" : "original",
                   (int)b[k].info.check_failed, check, b[k].info.check_worst, b[k].info.check_worst_node);
    double speedup = two ? b[0].med / b[1].med : 1.0;
    if (two)
        printf("\nspeedup (original median / optimized median): %.3fx\n", speedup);
    printf("\nagreement (relative L2 error per output):\n");
    int bad = 0;
    exec_diff d[3];
    for (int32_t j = 0; j < g0->n_outputs; j++) {
        int64_t n = ops_shape_numel(&g0->tensors[g0->outputs[j]].shape);
        printf("  %-24s", g0->tensors[g0->outputs[j]].name);
        if (two) {
            d[0] = exec_compare(b[1].out[j], b[0].out[j], n);
            printf("  optimized vs original %.3g", d[0].rel_l2);
            bad |= !(d[0].rel_l2 <= tol);
        }
        if (!no_cpu) {
            d[1] = exec_compare(b[0].out[j], cpu[j], n);
            printf("  original vs CPU %.3g", d[1].rel_l2);
            bad |= !(d[1].rel_l2 <= tol);
            if (two) {
                d[2] = exec_compare(b[1].out[j], cpu[j], n);
                printf("  optimized vs CPU %.3g", d[2].rel_l2);
                bad |= !(d[2].rel_l2 <= tol);
            }
        }
        printf("\n");
    }
    for (int k = 0; profile && k < n_paths; k++)
        if (bench_profile(&b[k], k ? "optimized" : "original") < 0)
            goto done;
    if (json) {
        cmd_tmpfile t;
        if (cmd_tmp_open("bench", json, &t) < 0)
            goto done;
        FILE *f = t.f;
        fprintf(f, "{\n  \"device\": ");
        bench_json_str(f, rt_device_name());
        fprintf(f, ",\n  \"reps\": %lld, \"warmup\": %lld, \"seed\": %lld, \"cuda_graph_requested\": %s,\n", reps,
                warmup, seed, no_graph ? "false" : "true");
        fprintf(f, "  \"graphs\": [\n");
        for (int k = 0; k < n_paths; k++) {
            bench_json_graph(f, k ? "optimized" : "original", &b[k], (int32_t)reps);
            fprintf(f, "%s\n", k + 1 < n_paths ? "," : "");
        }
        fprintf(f, "  ],\n  \"speedup\": %.6f,\n  \"outputs\": [\n", speedup);
        for (int32_t j = 0; j < g0->n_outputs; j++) {
            int64_t n = ops_shape_numel(&g0->tensors[g0->outputs[j]].shape);
            fprintf(f, "    {\"name\": ");
            bench_json_str(f, g0->tensors[g0->outputs[j]].name);
            if (two)
                fprintf(f, ", \"optimized_vs_original\": %.6g", exec_compare(b[1].out[j], b[0].out[j], n).rel_l2);
            if (!no_cpu) {
                fprintf(f, ", \"original_vs_cpu\": %.6g", exec_compare(b[0].out[j], cpu[j], n).rel_l2);
                if (two)
                    fprintf(f, ", \"optimized_vs_cpu\": %.6g", exec_compare(b[1].out[j], cpu[j], n).rel_l2);
            }
            fprintf(f, "}%s\n", j + 1 < g0->n_outputs ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        if (cmd_tmp_commit("bench", &t) < 0)
            goto done;
    }
    if (bad) {
        cmd_error("bench", "results disagree beyond --tol %g (see the agreement table)", tol);
        rc = TASC_EXIT_INPUT;
    } else {
        rc = TASC_EXIT_OK;
    }
done:
    for (int k = 0; k < 2; k++) {
        rt_ctx_free(b[k].ctx);
        if (b[k].out)
            for (int32_t j = 0; b[k].g && j < b[k].g->n_outputs; j++)
                free(b[k].out[j]);
        free(b[k].out);
        free(b[k].ms);
        graph_free(b[k].g);
    }
    if (in)
        for (int32_t i = 0; i < g0->n_inputs; i++)
            free(in[i]);
    free(in);
    if (cpu)
        for (int32_t j = 0; j < g0->n_outputs; j++)
            free(cpu[j]);
    free(cpu);
    return rc;
}

#endif
