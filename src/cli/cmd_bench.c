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

typedef struct {
    const char *rules, *cost, *json, *precision;
    double time_limit, tol, check;
    int optimize, no_graph, no_fold, no_cpu, verbose, profile, no_autotune, no_scatter, no_fuse;
    int64_t reps, warmup, seed, block;
    cmd_model_opts mo;
} bench_args;

static const cmd_opt bench_opts[] = {
    CMD_FLAG("--optimize", offsetof(bench_args, optimize),
             "optimize MODEL in memory (search_optimize: built-in rewrites, the rules of --rules FILE if given, "
             "folding) and bench it as OPTIMIZED"),
    CMD_STR("--rules", "FILE", offsetof(bench_args, rules), "the optimizer's rule file (rules/README.md)"),
    CMD_F64("--time-limit", "S", offsetof(bench_args, time_limit), 0.0, HUGE_VAL,
            "the optimizer's search time limit in seconds (default its own)"),
    CMD_CHOICE("--cost", "C", offsetof(bench_args, cost), "analytic|measured",
               "the optimizer's cost model: analytic (default) or measured (this GPU)"),
    CMD_I64("--reps", "N", offsetof(bench_args, reps), 1, 1000000,
            "timed runs per graph, median reported (default %D, at least 100 for reported numbers)"),
    CMD_I64("--warmup", "N", offsetof(bench_args, warmup), 0, 1000000, "untimed runs per graph first (default %D)"),
    CMD_I64("--block", "N", offsetof(bench_args, block), 1, 1000000,
            "timed runs of one graph before the other's turn (default %D; 1: alternate run by run, where each run "
            "follows the other graph and pays for the switch)"),
    CMD_I64("--seed", "S", offsetof(bench_args, seed), 0, INT64_MAX,
            "inputs as `tasc run --seed S` generates them (default %D)"),
    CMD_F64("--tol", "T", offsetof(bench_args, tol), 0.0, HUGE_VAL,
            "largest relative L2 error accepted between the results (default %D)"),
    CMD_CHOICE("--precision", "P", offsetof(bench_args, precision), "fp32|3xtf32",
               "matmuls and the convolutions' GEMM path in strict FP32 (default) or 3xTF32: three TF32 "
               "tensor-core products per FP32 product, FP32-accurate"),
    CMD_FLAG("--no-graph", offsetof(bench_args, no_graph), "launch the nodes one by one instead of replaying a CUDA graph"),
    CMD_FLAG("--no-fold", offsetof(bench_args, no_fold), "run weight-only nodes in every run instead of once at setup"),
    CMD_FLAG("--no-cpu", offsetof(bench_args, no_cpu), "skip the CPU executor (no agreement with it is reported)"),
    CMD_FLAG("--no-autotune", offsetof(bench_args, no_autotune),
             "run matmul shapes the tuning tables lack on the heuristic (one notice line says how many) instead of "
             "tuning them on first use (about 2 s each, kept in the per-device cache); also TASC_NO_AUTOTUNE=1"),
    CMD_FLAG("--no-scatter", offsetof(bench_args, no_scatter),
             "run every transpose, split and gather that reads a matmul's output as a kernel of its own, and "
             "transposes that move no element too (default: the matmul's store writes their results and the "
             "latter are aliases; for A/B measurement); also TASC_NO_SCATTER=1"),
    CMD_FLAG("--no-fuse", offsetof(bench_args, no_fuse),
             "run every node the runtime fuses as a kernel of its own (default: a convolution whose output only "
             "an add reads, the add's other operand made earlier, adds it and applies the relu that alone reads "
             "the sum in its epilogue; a softmax computes the smul by a constant before it and a layernorm the "
             "add before it, where nothing else reads those; for A/B measurement); also TASC_NO_FUSE=1"),
    CMD_F64("--check-nodes", "T", offsetof(bench_args, check), 1e-30, HUGE_VAL,
            "during setup, compare every node with its CPU reference and name those over relative L2 error T "
            "(slow: a debugging aid)"),
    CMD_STR("--json", "FILE", offsetof(bench_args, json), "also write the results as JSON to FILE"),
    CMD_FLAG("--profile", offsetof(bench_args, profile),
             "also time every node alone (its own CUDA graph) and in the run (the whole run less the run without "
             "it), and print both per op type, the slowest nodes and those that cost most more in the run"),
    CMD_FLAG("--verbose", offsetof(bench_args, verbose),
             "the runtime's per-node choices (convolution algorithms) on stderr"),
    CMD_MODEL_OPTS(offsetof(bench_args, mo)),
    CMD_OPT_END,
};

static void bench_defaults(bench_args *a) {
    memset(a, 0, sizeof *a);
    a->cost = "analytic";
    a->precision = "fp32";
    a->time_limit = -1.0;
    a->tol = 1e-3;
    a->reps = 200;
    a->warmup = 20;
    a->block = 1;
}

static void bench_usage(const bench_args *defaults) {
    printf("usage: tasc bench MODEL [OPTIMIZED | --optimize [--rules FILE] [--time-limit S] [--cost C]]\n"
           "                  [--reps N] [--warmup N] [--block N] [--seed S] [--tol T] [--precision fp32|3xtf32]\n"
           "                  [--no-graph] [--no-fold] [--no-cpu] [--no-autotune] [--no-scatter] [--no-fuse]\n"
           "                  [--check-nodes T]\n"
           "                  [--json FILE] [--profile] [--verbose] [ONNX options]\n"
           "\n"
           "Run MODEL, and OPTIMIZED when given (the same model after `tasc optimize`; with --optimize,\n"
           "MODEL as the optimizer leaves it, made here without writing files), on the GPU:\n"
           "memory planned once, weight-only nodes computed once, every run one CUDA graph replay,\n"
           "FP32 with TF32 off (--precision 3xtf32: FP32-accurate tensor-core matmuls). Prints per\n"
           "graph the median latency of the timed runs, the device memory the runtime holds, the\n"
           "speedup of OPTIMIZED over MODEL, and for every output the relative L2 error between the\n"
           "two GPU results and against the CPU executor on MODEL.\n"
           "Timed runs alternate between the two graphs; each is timed alone with CUDA events.\n"
           "\n"
           "options:\n");
    cmd_opts_help(bench_opts, defaults);
    printf("\n"
           "environment: TASC_RT_WORKSPACE_MB  cap of the runtime's scratch memory (default 256)\n"
           "             TASC_TUNE_TABLE       a matmul tuning table read besides the shipped ones and the\n"
           "                                   per-device cache (TASC_CACHE_DIR, default ~/.cache/tasc)\n"
           "             TASC_NO_AUTOTUNE=1    as --no-autotune\n"
           "             TASC_CONV_CACHE=off   measure every convolution's paths in this process; by default\n"
           "                                   the choices of earlier runs on this device are read from, and\n"
           "                                   new ones added to, TASC_CACHE_DIR/conv-DEVICE.txt\n"
           "             TASC_NO_SCATTER=1     as --no-scatter\n"
           "             TASC_NO_FUSE=1        as --no-fuse\n"
           "exit codes: 0 ok, 1 a bad model, a graph the GPU runtime cannot run, or results that\n"
           "            disagree beyond --tol, 2 bad command line, 3 no CUDA in this build or no GPU\n");
}

#ifndef TASC_HAVE_CUDA

int cmd_bench(int argc, char **argv) {
    bench_args a;
    bench_defaults(&a);
    if (cmd_wants_help(argc, argv)) {
        bench_usage(&a);
        return TASC_EXIT_OK;
    }
    cmd_error("bench", "this tasc was built without CUDA: no GPU runtime");
    return TASC_EXIT_RESOURCE;
}

#else

#include "cost.h"
#include "exec.h"
#include "rt.h"
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
    fprintf(f, "     \"nodes_scattered\": %d, \"scatter_stores\": %d, \"nodes_fused\": %d,\n",
            (int)b->info.nodes_scattered, (int)b->info.scatter_stores, (int)b->info.nodes_fused);
    fprintf(f,
            "     \"device_bytes\": %lld, \"arena_bytes\": %lld, \"unplanned_bytes\": %lld, \"weight_bytes\": %lld, "
            "\"input_bytes\": %lld, \"workspace_bytes\": %lld}",
            (long long)b->info.device_bytes, (long long)b->info.arena_bytes, (long long)b->info.unplanned_bytes,
            (long long)b->info.weight_bytes, (long long)b->info.input_bytes, (long long)b->info.workspace_bytes);
}

/* The TOP nodes of n with the largest key[k] (NAN last), as indexes into ids/key: order[0..]. */
static void bench_top(const double *key, int32_t n, int32_t top, int32_t *order) {
    for (int32_t k = 0; k < n; k++)
        order[k] = k;
    for (int32_t i = 0; i < n && i < top; i++) /* a few passes of selection suffice */
        for (int32_t j = i + 1; j < n; j++)
            if (isfinite(key[order[j]]) && (!isfinite(key[order[i]]) || key[order[j]] > key[order[i]])) {
                int32_t t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
}

static void bench_profile_line(const bench_graph *b, int32_t id, double a, double r) {
    char sh[96];
    const graph_node *nd = &b->g->nodes[id];
    printf("  %9.1f us %9.1f us  %-12s %-40s -> %s\n", a, r, ops_table[nd->op].name, nd->name,
           ops_shape_str(&b->g->tensors[nd->out[0]].shape, sh, sizeof sh));
}

/* Per op type: the nodes' times alone and in the run; then the slowest nodes alone, and the nodes
 * that cost the most more in the run than alone. */
static void bench_profile_print(const bench_graph *b, const char *role, const int32_t *ids, const double *alone,
                                const double *in_run, double whole_us, int32_t *order) {
    enum { TOP = 15 };
    const int32_t n = b->info.nodes_run;
    double per_op[OP_COUNT] = {0}, per_run[OP_COUNT] = {0}, total = 0.0, total_run = 0.0;
    int32_t cnt[OP_COUNT] = {0};
    for (int32_t k = 0; k < n; k++) {
        ops_type op = b->g->nodes[ids[k]].op;
        per_op[op] += isfinite(alone[k]) ? alone[k] : 0.0;
        per_run[op] += isfinite(in_run[k]) ? in_run[k] : 0.0;
        total += isfinite(alone[k]) ? alone[k] : 0.0;
        total_run += isfinite(in_run[k]) ? in_run[k] : 0.0;
        cnt[op]++;
    }
    printf("\nprofile (%s): every node timed alone (repeated in its own CUDA graph), sum %.1f us, and in the run\n"
           "(the whole run, %.1f us here, less the run without the node), sum %.1f us; %.1f us per whole run timed\n",
           role, total, whole_us, total_run, b->med * 1000.0);
    printf("  %-14s %5s %12s %12s\n", "op", "nodes", "alone us", "in run us");
    for (int op = 0; op < OP_COUNT; op++)
        if (cnt[op])
            printf("  %-14s %5d %12.1f %12.1f\n", ops_table[op].name, (int)cnt[op], per_op[op], per_run[op]);
    printf("  slowest alone:    alone      in run\n");
    bench_top(alone, n, TOP, order);
    for (int32_t i = 0; i < n && i < TOP; i++)
        bench_profile_line(b, ids[order[i]], alone[order[i]], in_run[order[i]]);
    double *extra = malloc((size_t)n * sizeof *extra);
    if (!extra)
        return;
    for (int32_t k = 0; k < n; k++)
        extra[k] = in_run[k] - alone[k];
    printf("  most more in the run than alone:\n");
    bench_top(extra, n, TOP, order);
    for (int32_t i = 0; i < n && i < TOP; i++)
        bench_profile_line(b, ids[order[i]], alone[order[i]], in_run[order[i]]);
    free(extra);
}

/* Time every node alone and in the run (rt_profile, rt_profile_in_run); print them. */
static int bench_profile(bench_graph *b, const char *role) {
    char err[BENCH_ERR_LEN];
    const int32_t n = b->info.nodes_run;
    int32_t *ids = calloc((size_t)n + 1, sizeof *ids), *order = calloc((size_t)n + 1, sizeof *order);
    double *us = calloc((size_t)n + 1, sizeof *us), *in_run = calloc((size_t)n + 1, sizeof *in_run), whole = 0.0;
    int rc = -1;
    if (!ids || !us || !order || !in_run)
        cmd_error("bench", "out of memory");
    else if (rt_profile(b->ctx, 20, ids, us, err, sizeof err) < 0 ||
             rt_profile_in_run(b->ctx, 30, in_run, &whole, err, sizeof err) < 0)
        cmd_error("bench", "%s: %s", b->path, err);
    else {
        bench_profile_print(b, role, ids, us, in_run, whole, order);
        rc = 0;
    }
    free(ids);
    free(us);
    free(in_run);
    free(order);
    return rc;
}

static void bench_print_optimized(const search_result *res, const cost_model *cm, const char *rules_path) {
    printf("optimized in memory: %d -> %d nodes, cost model %s: %.1f us -> %.1f us predicted (%.3fx), "
           "%.2f s%s\n  rewrites:",
           (int)res->nodes_before, (int)res->nodes_after, cost_model_name(cm), res->cost_before, res->cost_after,
           res->cost_after > 0 ? res->cost_before / res->cost_after : 1.0, res->seconds,
           res->time_limited ? " (stopped by the time limit)" : "");
    for (int32_t i = 0; i < res->n_applied; i++)
        printf(" %s%s x%d", res->applied[i].name, res->applied[i].reverse ? " (reverse)" : "",
               (int)res->applied[i].count);
    printf("%s; rules: %s\n\n", res->n_applied ? "" : " none", rules_path ? rules_path : "none (built-in only)");
}

/* g optimized in memory; prints the optimizer's summary. NULL after a message. */
static graph *bench_optimize(const graph *g, const bench_args *a) {
    char err[BENCH_ERR_LEN];
    rules_set *rs = NULL;
    graph *best = NULL;
    search_result res;
    memset(&res, 0, sizeof res);
    cost_model *cm = strcmp(a->cost, "measured") ? cost_analytic_new(NULL) : cmd_measured_model("bench");
    if (!cm)
        return NULL;
    if (a->rules && !(rs = rules_load(a->rules, err, sizeof err))) {
        cmd_error("bench", "%s", err);
        cost_model_free(cm);
        return NULL;
    }
    search_opts so;
    search_opts_default(&so);
    if (a->time_limit >= 0)
        so.time_limit_s = a->time_limit;
    if (search_optimize(g, rs, cm, &so, &best, &res, err, sizeof err) < 0) {
        cmd_error("bench", "optimize: %s", err);
        best = NULL;
    } else {
        bench_print_optimized(&res, cm, a->rules);
    }
    search_result_free(&res);
    rules_set_free(rs);
    cost_model_free(cm);
    return best;
}

/* What one bench holds: the graphs (b[1] only with OPTIMIZED), the inputs, the CPU results. */
typedef struct {
    const bench_args *a;
    int n;             /* graphs: 1 or 2 */
    bench_graph b[2];
    const graph *g0;   /* b[0].g */
    float **in;        /* [g0 inputs] */
    float **cpu;       /* [g0 outputs] */
} bench_run;

static void bench_free(bench_run *r) {
    for (int k = 0; k < 2; k++) {
        bench_graph *b = &r->b[k];
        rt_ctx_free(b->ctx);
        for (int32_t j = 0; b->out && b->g && j < b->g->n_outputs; j++)
            free(b->out[j]);
        free(b->out);
        free(b->ms);
        graph_free(b->g);
    }
    for (int32_t i = 0; r->in && i < r->g0->n_inputs; i++)
        free(r->in[i]);
    free(r->in);
    for (int32_t j = 0; r->cpu && j < r->g0->n_outputs; j++)
        free(r->cpu[j]);
    free(r->cpu);
}

/* The command line's consistency; an exit code. */
static int bench_check_args(const bench_args *a, int n_paths, const char *const *paths) {
    if (!n_paths) {
        cmd_error("bench", "no model given (tasc bench MODEL [OPTIMIZED])");
        return TASC_EXIT_USAGE;
    }
    if (n_paths > 2) {
        cmd_error("bench", "too many models: '%s' (tasc bench MODEL [OPTIMIZED])", paths[2]);
        return TASC_EXIT_USAGE;
    }
    if (a->optimize && n_paths == 2) {
        cmd_error("bench", "--optimize makes OPTIMIZED itself: give MODEL only");
        return TASC_EXIT_USAGE;
    }
    if (!a->optimize && (a->rules || a->time_limit >= 0 || strcmp(a->cost, "analytic"))) {
        cmd_error("bench", "--rules, --time-limit and --cost go with --optimize");
        return TASC_EXIT_USAGE;
    }
    return TASC_EXIT_OK;
}

/* The graphs (loaded, or optimized here) and the inputs; 0, or -1 after the message. */
static int bench_load(bench_run *r, const char *const *paths, int n_paths) {
    char err[BENCH_ERR_LEN];
    for (int k = 0; k < n_paths; k++) {
        r->b[k].path = paths[k];
        if (!(r->b[k].g = cmd_load_model_opts("bench", paths[k], &r->a->mo)))
            return -1;
    }
    r->n = n_paths;
    r->g0 = r->b[0].g;
    if (r->a->optimize) {
        r->b[1].path = "(optimized in memory)";
        if (!(r->b[1].g = bench_optimize(r->g0, r->a)))
            return -1;
        r->n = 2;
    }
    if (r->n == 2 && bench_same_io(r->g0, r->b[1].g, err, sizeof err) < 0) {
        cmd_error("bench", "%s vs %s: %s", r->b[0].path, r->b[1].path, err);
        return -1;
    }
    r->in = base_xcalloc((size_t)r->g0->n_inputs + 1, sizeof *r->in);
    r->cpu = base_xcalloc((size_t)r->g0->n_outputs + 1, sizeof *r->cpu);
    if (rt_make_inputs(r->g0, (uint64_t)r->a->seed, r->in, err, sizeof err) < 0) {
        cmd_error("bench", "%s: %s", r->b[0].path, err);
        return -1;
    }
    return 0;
}

/* Every context, made before any runs (rt.h), with the inputs set; 0, or -1 after the message. */
static int bench_setup(bench_run *r) {
    char err[BENCH_ERR_LEN];
    rt_opts o;
    memset(&o, 0, sizeof o);
    o.no_graph = r->a->no_graph;
    o.no_fold = r->a->no_fold;
    o.no_scatter = r->a->no_scatter;
    o.no_fuse = r->a->no_fuse;
    o.check_tol = r->a->check;
    o.verbose = r->a->verbose;
    o.autotune = r->a->no_autotune ? RT_AUTOTUNE_REFUSED : RT_AUTOTUNE_ON;
    o.precision = strcmp(r->a->precision, "3xtf32") ? RT_PRECISION_FP32 : RT_PRECISION_3XTF32;
    for (int k = 0; k < r->n; k++) {
        bench_graph *b = &r->b[k];
        if (!(b->ctx = rt_ctx_new(b->g, &o, err, sizeof err))) {
            cmd_error("bench", "%s: %s", b->path, err);
            return -1;
        }
        for (int32_t i = 0; i < r->g0->n_inputs; i++)
            if (rt_set_input(b->ctx, i, r->in[i], err, sizeof err) < 0) {
                cmd_error("bench", "%s: %s", b->path, err);
                return -1;
            }
        b->ms = base_xcalloc((size_t)r->a->reps, sizeof(double));
        b->out = base_xcalloc((size_t)r->g0->n_outputs + 1, sizeof(float *));
    }
    return 0;
}

/* Median, min and p90 of b's times, its info and its outputs; 0, or -1 after the message. */
static int bench_collect(bench_run *r, bench_graph *b) {
    char err[BENCH_ERR_LEN];
    int64_t reps = r->a->reps;
    qsort(b->ms, (size_t)reps, sizeof(double), bench_cmp_d);
    b->med = reps % 2 ? b->ms[reps / 2] : 0.5 * (b->ms[reps / 2 - 1] + b->ms[reps / 2]);
    b->min = b->ms[0];
    b->p90 = b->ms[(reps * 9) / 10 < reps ? (reps * 9) / 10 : reps - 1];
    rt_get_info(b->ctx, &b->info);
    for (int32_t j = 0; j < r->g0->n_outputs; j++) {
        int64_t n = ops_shape_numel(&r->g0->tensors[r->g0->outputs[j]].shape);
        b->out[j] = base_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        if (rt_get_output(b->ctx, j, b->out[j], err, sizeof err) < 0) {
            cmd_error("bench", "%s: %s", b->path, err);
            return -1;
        }
    }
    return 0;
}

/* Warm-up, the timed runs alternating between the graphs, the CPU executor; 0, or -1. */
static int bench_time(bench_run *r) {
    char err[BENCH_ERR_LEN];
    const bench_args *a = r->a;
    for (int k = 0; k < r->n; k++) /* the first run captures the graph */
        if (rt_time(r->b[k].ctx, (int32_t)a->warmup + 1, 0, NULL, err, sizeof err) < 0) {
            cmd_error("bench", "%s: %s", r->b[k].path, err);
            return -1;
        }
    for (int64_t i0 = 0; i0 < a->reps; i0 += a->block) /* turns of `block` runs per graph */
        for (int k = 0; k < r->n; k++)
            for (int64_t i = i0; i < i0 + a->block && i < a->reps; i++)
                if (rt_time(r->b[k].ctx, 0, 1, &r->b[k].ms[i], err, sizeof err) < 0) {
                    cmd_error("bench", "%s: %s", r->b[k].path, err);
                    return -1;
                }
    for (int k = 0; k < r->n; k++)
        if (bench_collect(r, &r->b[k]) < 0)
            return -1;
    if (!a->no_cpu &&
        exec_cpu_run(r->g0, (const float *const *)r->in, (uint64_t)a->seed, r->cpu, err, sizeof err) < 0) {
        cmd_error("bench", "%s: CPU executor: %s", r->b[0].path, err);
        return -1;
    }
    return 0;
}

/* The side-by-side table of the graphs. */
static void bench_table(const bench_run *r) {
    const bench_graph *b = r->b;
    const int two = r->n == 2;
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
    BENCH_ROW("reshapes, splits, concats as views", "%16d", (int)b[0].info.nodes_aliased, (int)b[1].info.nodes_aliased);
    BENCH_ROW("moves in matmul stores", "%16d", (int)b[0].info.nodes_scattered, (int)b[1].info.nodes_scattered);
    BENCH_ROW("nodes fused into others", "%16d", (int)b[0].info.nodes_fused, (int)b[1].info.nodes_fused);
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
}

/* The header, the table, the notes and the speedup. */
static void bench_report(const bench_run *r) {
    const bench_args *a = r->a;
    printf("tasc bench: %s (%s), %s, seed %lld\n", rt_device_name(), rt_versions(),
           strcmp(a->precision, "3xtf32") ? "FP32 (TF32 off)" : "3xTF32 matmuls (FP32-accurate; TF32 off elsewhere)",
           (long long)a->seed);
    printf("runs: %s; median of %lld timed runs per graph after %lld warm-up runs, alternating between graphs",
           a->no_graph ? "node-by-node launches (--no-graph)" : "one CUDA graph replay each", (long long)a->reps,
           (long long)a->warmup);
    if (a->block > 1)
        printf(" in turns of %lld runs", (long long)a->block);
    printf("\n");
    bench_table(r);
    for (int k = 0; k < r->n; k++)
        if (!r->b[k].info.graph && !a->no_graph)
            printf("note: %s runs node by node: %s\n", k ? "optimized" : "original", r->b[k].info.graph_note);
    if (a->check > 0)
        for (int k = 0; k < r->n; k++)
            printf("node check (%s): %d nodes over %g, worst %.3g at '%s'\n", k ? "optimized" : "original",
                   (int)r->b[k].info.check_failed, a->check, r->b[k].info.check_worst, r->b[k].info.check_worst_node);
    if (r->n == 2)
        printf("\nspeedup (original median / optimized median): %.3fx\n", r->b[0].med / r->b[1].med);
}

/* The agreement table; 1 if some error is over --tol. */
static int bench_agreement(const bench_run *r) {
    const graph *g0 = r->g0;
    const int two = r->n == 2, cpu = !r->a->no_cpu;
    const double tol = r->a->tol;
    int bad = 0;
    printf("\nagreement (relative L2 error per output):\n");
    for (int32_t j = 0; j < g0->n_outputs; j++) {
        int64_t n = ops_shape_numel(&g0->tensors[g0->outputs[j]].shape);
        const float *o0 = r->b[0].out[j], *o1 = two ? r->b[1].out[j] : NULL;
        printf("  %-24s", g0->tensors[g0->outputs[j]].name);
        double e[3] = {two ? exec_compare(o1, o0, n).rel_l2 : 0.0, cpu ? exec_compare(o0, r->cpu[j], n).rel_l2 : 0.0,
                       two && cpu ? exec_compare(o1, r->cpu[j], n).rel_l2 : 0.0};
        if (two)
            printf("  optimized vs original %.3g", e[0]);
        if (cpu)
            printf("  original vs CPU %.3g", e[1]);
        if (two && cpu)
            printf("  optimized vs CPU %.3g", e[2]);
        printf("\n");
        bad |= (two && !(e[0] <= tol)) || (cpu && !(e[1] <= tol)) || (two && cpu && !(e[2] <= tol));
    }
    return bad;
}

/* The results as JSON into f. */
static void bench_json(const bench_run *r, FILE *f) {
    const bench_args *a = r->a;
    const graph *g0 = r->g0;
    const int two = r->n == 2;
    fprintf(f, "{\n  \"device\": ");
    bench_json_str(f, rt_device_name());
    fprintf(f, ",\n  \"precision\": \"%s\", \"reps\": %lld, \"warmup\": %lld, \"block\": %lld, \"seed\": %lld, "
            "\"cuda_graph_requested\": %s,\n",
            a->precision, (long long)a->reps, (long long)a->warmup, (long long)a->block, (long long)a->seed,
            a->no_graph ? "false" : "true");
    fprintf(f, "  \"graphs\": [\n");
    for (int k = 0; k < r->n; k++) {
        bench_json_graph(f, k ? "optimized" : "original", &r->b[k], (int32_t)a->reps);
        fprintf(f, "%s\n", k + 1 < r->n ? "," : "");
    }
    fprintf(f, "  ],\n  \"speedup\": %.6f,\n  \"outputs\": [\n", two ? r->b[0].med / r->b[1].med : 1.0);
    for (int32_t j = 0; j < g0->n_outputs; j++) {
        int64_t n = ops_shape_numel(&g0->tensors[g0->outputs[j]].shape);
        const float *o0 = r->b[0].out[j], *o1 = two ? r->b[1].out[j] : NULL;
        fprintf(f, "    {\"name\": ");
        bench_json_str(f, g0->tensors[g0->outputs[j]].name);
        /* the bits, to compare runs: the same kernels give the same hash (conv choices: cached) */
        const size_t bytes = (size_t)n * sizeof(float);
        fprintf(f, ", \"original_fnv1a64\": \"%016llx\"", (unsigned long long)base_fnv1a(BASE_FNV_INIT, o0, bytes));
        if (two)
            fprintf(f, ", \"optimized_fnv1a64\": \"%016llx\", \"optimized_vs_original\": %.6g",
                    (unsigned long long)base_fnv1a(BASE_FNV_INIT, o1, bytes), exec_compare(o1, o0, n).rel_l2);
        if (!a->no_cpu) {
            fprintf(f, ", \"original_vs_cpu\": %.6g", exec_compare(o0, r->cpu[j], n).rel_l2);
            if (two)
                fprintf(f, ", \"optimized_vs_cpu\": %.6g", exec_compare(o1, r->cpu[j], n).rel_l2);
        }
        fprintf(f, "}%s\n", j + 1 < g0->n_outputs ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
}

/* Load, set up, time, report; an exit code. */
static int bench_bench(bench_run *r, const char *const *paths, int n_paths) {
    const bench_args *a = r->a;
    if (bench_load(r, paths, n_paths) < 0 || bench_setup(r) < 0 || bench_time(r) < 0)
        return TASC_EXIT_INPUT;
    bench_report(r);
    int bad = bench_agreement(r);
    for (int k = 0; a->profile && k < r->n; k++)
        if (bench_profile(&r->b[k], k ? "optimized" : "original") < 0)
            return TASC_EXIT_INPUT;
    if (a->json) {
        cmd_tmpfile t;
        if (cmd_tmp_open("bench", a->json, &t) < 0)
            return TASC_EXIT_INPUT;
        bench_json(r, t.f);
        if (cmd_tmp_commit("bench", &t) < 0)
            return TASC_EXIT_INPUT;
    }
    if (bad) {
        cmd_error("bench", "results disagree beyond --tol %g (see the agreement table)", a->tol);
        return TASC_EXIT_INPUT;
    }
    return TASC_EXIT_OK;
}

int cmd_bench(int argc, char **argv) {
    bench_args a;
    bench_defaults(&a);
    if (cmd_wants_help(argc, argv)) {
        bench_usage(&a);
        return TASC_EXIT_OK;
    }
    const char **paths = base_xcalloc((size_t)argc, sizeof *paths);
    int n_paths = cmd_opts_parse("bench", bench_opts, &a, argc, argv, 1, paths, argc);
    int rc = n_paths < 0 ? TASC_EXIT_USAGE : bench_check_args(&a, n_paths, paths);
    char err[BENCH_ERR_LEN];
    if (rc == TASC_EXIT_OK && !rt_available(err, sizeof err)) {
        cmd_error("bench", "%s: the GPU runtime needs one", err);
        rc = TASC_EXIT_RESOURCE;
    }
    if (rc == TASC_EXIT_OK) {
        bench_run r;
        memset(&r, 0, sizeof r);
        r.a = &a;
        rc = bench_bench(&r, paths, n_paths);
        bench_free(&r);
    }
    free(paths);
    return rc;
}

#endif
