/* gpu_test_ops.c: the GPU runtime (ops/cuda/rt.h) and every op's CUDA implementation.
 *
 * Host part (runs everywhere): the memory planner (no two buffers alive at a common step share a
 * byte; reuse happens; deterministic), the registration of a CUDA entry for every op, and the
 * runtime's generated inputs against the CPU executor's.
 * Device part: every op of the table on random inputs, each as a one-node graph through the whole
 * runtime (plan, setup run, CUDA graph capture, replay), against the op's CPU reference called
 * directly on the same inputs: relative L2 error <= 1e-5 (our kernels and the matmul), <= 1e-4
 * (cuDNN convolutions); replays bitwise reproducible; the node-by-node path equal to the graph.
 * The implicit-GEMM convolutions (conv3: 3xtf32, convf: FP32) and the conv on the wgmma matmul
 * (convw: gathered split columns, Hopper) also alone, over every tile configuration and split-K,
 * against the CPU reference.
 * Edge cases: odd sizes, broadcasts, asymmetric padding, groups, dilation, every activation,
 * out-of-range gather ids; an op without a case of its own gets one from the table's defaults
 * (test_table_defaults), so a new op is covered from the start. Runtime features: folding of
 * weight-only nodes, reshape aliases, dead nodes, arena reuse, errors (bad input index, workspace
 * limit). Whole models (squeezenet, nasrnn,
 * bert) against the CPU executor. Scatter stores (transposes, splits and gathers run by the
 * matmul's store): attention in bert's and vit's export forms against the CPU executor, with node
 * checks, and equal to the runtime with them off (TASC_NO_SCATTER); at precision 3xtf32, kept
 * exactly for the products whose 3xtf32 decision is the FP32 kernel (built-in rule, and a table
 * entry naming mma.sync that removes one), against the CPU executor and the fp32 run's bits
 * (test_scatter_3xtf32). Producer fusions (normfuse: a softmax computing the smul by a constant
 * before it, a layernorm the add before it) with node checks, against the CPU executor and equal to
 * the unfused runs, the cases that must not fuse, and the row kernels at odd lengths. The
 * measured cost model: cache keys, the file round trip and its errors (host), measured times
 * (device). The per-device cache of convolution path choices (convcache). Without a CUDA device it
 * prints "SKIPPED: no CUDA device" and exits 77 after the host part passed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conv_3xtf32.h"
#include "conv_fp32.h"
#include "conv_wgmma.h"
#include "exec.h"
#include "graph.h"
#include "matmul.h"
#include "ops_cuda.h"
#include "rt.h"
#include "rt_cost.h"
#include "test.h"
#include "zoo.h"

/* ---- host part ----------------------------------------------------------------------------- */

static uint64_t t_rng = 88172645463325252ULL;
static uint64_t t_next(void) { /* xorshift64 */
    t_rng ^= t_rng << 13;
    t_rng ^= t_rng >> 7;
    t_rng ^= t_rng << 17;
    return t_rng;
}

static void test_planner(void) {
    /* a chain a -> b -> c -> d of equal buffers: two slots are enough */
    rt_span chain[4] = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
    int64_t off[4];
    int64_t total = rt_plan_arena(4, chain, 256, off);
    CHECK_EQ_INT(total, 2 * 1024);
    CHECK(off[0] != off[1] && off[1] != off[2] && off[2] != off[3]);
    CHECK(off[0] == off[2] || off[1] == off[3]);

    /* random lifetimes: the invariant, and the same answer twice */
    for (int round = 0; round < 50; round++) {
        enum { N = 120 };
        rt_span sp[N];
        int64_t o1[N], o2[N], sum = 0;
        for (int i = 0; i < N; i++) {
            sp[i].bytes = 1 + (int64_t)(t_next() % 100000);
            sp[i].first = (int32_t)(t_next() % 200);
            sp[i].last = sp[i].first + (int32_t)(t_next() % 30);
            sum += (sp[i].bytes + 255) / 256 * 256;
        }
        int64_t tot = rt_plan_arena(N, sp, 256, o1);
        CHECK_EQ_INT(rt_plan_arena(N, sp, 256, o2), tot);
        CHECK(!memcmp(o1, o2, sizeof o1));
        CHECK(tot <= sum);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            if (o1[i] % 256 || o1[i] + sp[i].bytes > tot)
                bad++;
            for (int j = i + 1; j < N; j++) {
                int live = sp[i].first <= sp[j].last && sp[j].first <= sp[i].last;
                int mem = o1[i] < o1[j] + sp[j].bytes && o1[j] < o1[i] + sp[i].bytes;
                if (live && mem)
                    bad++;
            }
        }
        CHECK_EQ_INT(bad, 0);
    }
    CHECK_EQ_INT(rt_plan_arena(0, NULL, 256, NULL), 0);
}

static void test_registration(void) {
    CHECK_EQ_INT(rt_register_ops(), 0);
    for (int op = 0; op < OP_COUNT; op++)
        CHECK(ops_cuda[op] != NULL);
    CHECK_EQ_INT(ops_table_check(0), 0);
}

/* rt_make_inputs gives what exec_cpu_run generates: run the CPU executor both ways. */
static void test_inputs_match_exec(void) {
    char err[512];
    graph *g = graph_new("inputs");
    const int64_t xd[2] = {3, 5}, td[2] = {7, 4}, id[2] = {2, 6};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t ids = graph_input_typed(g, "ids", GRAPH_DT_I64, 2, id);
    int32_t tab = graph_weight_he(g, "table", 2, td);
    ops_params p;
    ops_params_default(OP_RELU, &p);
    int32_t o1[OPS_MAX_OUTPUTS], o2[OPS_MAX_OUTPUTS];
    graph_add(g, "r", OP_RELU, &p, 1, &x, o1);
    ops_params_default(OP_GATHER, &p);
    int32_t gin[2] = {tab, ids};
    graph_add(g, "g", OP_GATHER, &p, 2, gin, o2);
    graph_mark_output(g, o1[0]);
    graph_mark_output(g, o2[0]);
    CHECK(graph_ok(g));
    float *in[2], *a[2] = {0}, *b[2] = {0};
    CHECK_EQ_INT(rt_make_inputs(g, 5, in, err, sizeof err), 0);
    for (int k = 0; k < 12; k++)
        CHECK(in[1][k] >= 0.0f && in[1][k] < 7.0f && in[1][k] == floorf(in[1][k]));
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 5, a, err, sizeof err), 0);
    CHECK_EQ_INT(exec_cpu_run(g, (const float *const *)in, 5, b, err, sizeof err), 0);
    CHECK(a[0] && b[0] && !memcmp(a[0], b[0], 15 * sizeof(float)));
    CHECK(a[1] && b[1] && !memcmp(a[1], b[1], 12 * 4 * sizeof(float)));
    for (int k = 0; k < 2; k++) {
        free(in[k]);
        free(a[k]);
        free(b[k]);
    }
    graph_free(g);
}

/* The cost cache: keys, lookups, a byte-exact round trip, bad files named by line. */
static void test_cost_cache(void) {
    char err[512], key[512], path[256], path2[256];
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    p.v[PM_ACT] = OPS_ACT_RELU;
    ops_shape in[2] = {ops_shape_make(4, (int64_t[]){1, 64, 56, 56}), ops_shape_make(4, (int64_t[]){64, 64, 3, 3})};
    CHECK_EQ_INT(rt_cost_key(OP_CONV2D, &p, 2, in, key, sizeof key), 0);
    CHECK_STR_CONTAINS(key, "conv2d stride_h=1,stride_w=1,pad=explicit,pad_t=0");
    CHECK_STR_CONTAINS(key, "act=relu");
    CHECK_STR_CONTAINS(key, " (1,64,56,56);(64,64,3,3)");
    CHECK_EQ_INT(rt_cost_key(OP_CONV2D, &p, 2, in, key, 16), -1);
    ops_params_default(OP_TRANSPOSE, &p);
    p.n_list = 2;
    p.list[0] = 1;
    p.list[1] = 0;
    ops_shape t = ops_shape_make(2, (int64_t[]){3, 4});
    CHECK_EQ_INT(rt_cost_key(OP_TRANSPOSE, &p, 1, &t, key, sizeof key), 0);
    CHECK(!strcmp(key, "transpose list=[1,0] (3,4)"));

    rt_cost_cache *c = rt_cost_cache_new();
    double us = -1;
    CHECK_EQ_INT(rt_cost_lookup(c, "dev", "k", &us), 0);
    rt_cost_put(c, "dev B", "relu (4)", 2.5);
    rt_cost_put(c, "dev A", "relu (4)", 1.25);
    rt_cost_put(c, "dev A", "ewadd (4);(4)", 3.0);
    rt_cost_put(c, "dev A", "relu (4)", 1.5); /* replaces */
    CHECK_EQ_INT(rt_cost_cache_size(c), 3);
    CHECK_EQ_INT(rt_cost_lookup(c, "dev A", "relu (4)", &us), 1);
    CHECK_NEAR(us, 1.5, 0);
    snprintf(path, sizeof path, "/tmp/tasc_cost_test_%ld/sub/cost.txt", (long)getpid());
    snprintf(path2, sizeof path2, "/tmp/tasc_cost_test_%ld/sub/cost2.txt", (long)getpid());
    CHECK_EQ_INT(rt_cost_cache_save(c, path, err, sizeof err), 0);
    rt_cost_cache *d = rt_cost_cache_new();
    CHECK_EQ_INT(rt_cost_cache_load(d, path, 0, err, sizeof err), 0);
    CHECK_EQ_INT(rt_cost_cache_size(d), 3);
    CHECK_EQ_INT(rt_cost_lookup(d, "dev B", "relu (4)", &us), 1);
    CHECK_NEAR(us, 2.5, 0);
    CHECK_EQ_INT(rt_cost_cache_save(d, path2, err, sizeof err), 0);
    FILE *f1 = fopen(path, "r"), *f2 = fopen(path2, "r");
    char b1[4096] = {0}, b2[4096] = {0};
    size_t n1 = f1 ? fread(b1, 1, sizeof b1 - 1, f1) : 0, n2 = f2 ? fread(b2, 1, sizeof b2 - 1, f2) : 1;
    CHECK(n1 > 0 && n1 == n2 && !memcmp(b1, b2, n1));
    CHECK(strstr(b1, "dev A\tewadd (4);(4)\t3.000\ndev A\trelu (4)\t1.500\ndev B\t") != NULL);
    if (f1)
        fclose(f1);
    if (f2)
        fclose(f2);
    /* errors */
    CHECK_EQ_INT(rt_cost_cache_load(d, "/nonexistent/tasc/cost.txt", 1, err, sizeof err), 0);
    CHECK_EQ_INT(rt_cost_cache_load(d, "/nonexistent/tasc/cost.txt", 0, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "/nonexistent/tasc/cost.txt");
    const char *bad[] = {"dev\tkey\n", "dev\tkey\tabc\n", "dev\tkey\t-1\n", "\tkey\t1\n", "dev\tkey\t1\textra\n",
                         "dev\tkey\tnan\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(path2, "w");
        if (!f)
            continue;
        fprintf(f, "# comment\ndev\tgood\t1\n%s", bad[i]);
        fclose(f);
        CHECK_EQ_INT(rt_cost_cache_load(d, path2, 0, err, sizeof err), -1);
        CHECK_STR_CONTAINS(err, ":3: expected DEVICE<TAB>KEY<TAB>MICROSECONDS");
    }
    remove(path);
    remove(path2);
    rt_cost_cache_free(c);
    rt_cost_cache_free(d);
}

/* ---- device part: one op ------------------------------------------------------------------- */

enum { FILL_NORMAL, FILL_POS, FILL_IDS };

typedef struct {
    int32_t rank;
    int64_t d[OPS_MAX_DIMS];
} t_shape;

#define SH(...) ((t_shape){sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), {__VA_ARGS__}})

static int op_cases[OP_COUNT];
static double worst_err[OP_COUNT];
static int case_precision = RT_PRECISION_FP32; /* of run_case's contexts */

static void print_mismatches(const float *gpu, const float *ref, int64_t n) {
    int shown = 0;
    for (int64_t i = 0; i < n && shown < 5; i++)
        if (!(fabsf(gpu[i] - ref[i]) <= 1e-5f * (1.0f + fabsf(ref[i])))) {
            fprintf(stderr, "    [%lld] gpu %.9g cpu %.9g\n", (long long)i, (double)gpu[i], (double)ref[i]);
            shown++;
        }
}

/* Build op(inputs) as a one-node graph, run it on the GPU through the runtime and compare with
 * the CPU reference. fills[k] says how input k is drawn; ids_v: table rows for FILL_IDS. */
static void run_case(const char *label, ops_type op, const ops_params *p, int32_t n_in, const t_shape *shapes,
                     const int *fills, int no_fold) {
    char err[1024];
    graph *g = graph_new(label);
    int32_t ins[OPS_MAX_INPUTS], outs[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < n_in; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "in%d", (int)k);
        ins[k] = graph_input_typed(g, nm, fills[k] == FILL_IDS ? GRAPH_DT_I64 : GRAPH_DT_F32, shapes[k].rank,
                                   shapes[k].d);
    }
    int32_t n_out = graph_add(g, "node", op, p, n_in, ins, outs);
    for (int32_t k = 0; k < n_out; k++)
        graph_mark_output(g, outs[k]);
    if (!graph_ok(g)) {
        fprintf(stderr, "%s: graph: %s\n", label, graph_error(g));
        CHECK(graph_ok(g));
        graph_free(g);
        return;
    }
    op_cases[op]++;
    /* inputs */
    float *hin[OPS_MAX_INPUTS];
    ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < n_in; k++) {
        in_sh[k] = g->tensors[ins[k]].shape;
        int64_t n = ops_shape_numel(&in_sh[k]);
        hin[k] = malloc((size_t)n * sizeof(float) + 4);
        graph_fill_normal(hin[k], n, t_next(), 0.0f, 1.0f);
        for (int64_t i = 0; i < n; i++) {
            if (fills[k] == FILL_POS)
                hin[k][i] = fabsf(hin[k][i]) + 0.5f;
            else if (fills[k] == FILL_IDS) { /* rows of the table (input 0), a few outside, one non-integer */
                int64_t V = in_sh[0].dims[0];
                hin[k][i] = (float)((int64_t)(t_next() % (uint64_t)(V + 6)) - 3);
                if (i == 1)
                    hin[k][i] = 1.5f;
            }
        }
    }
    /* CPU reference */
    float *ref[OPS_MAX_OUTPUTS], *gpu[OPS_MAX_OUTPUTS], *gpu2[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < n_out; k++) {
        out_sh[k] = g->tensors[outs[k]].shape;
        int64_t n = ops_shape_numel(&out_sh[k]);
        ref[k] = malloc((size_t)n * sizeof(float) + 4);
        gpu[k] = malloc((size_t)n * sizeof(float) + 4);
        gpu2[k] = malloc((size_t)n * sizeof(float) + 4);
        for (int64_t i = 0; i < n; i++)
            gpu[k][i] = gpu2[k][i] = NAN;
    }
    ops_sig sig = {.op = op, .p = p, .n_in = n_in, .n_out = n_out, .in = in_sh, .out = out_sh};
    ops_table[op].cpu(&sig, (const float *const *)hin, ref);
    /* GPU: the graph, then node by node */
    const double tol = op == OP_CONV2D ? 1e-4 : 1e-5;
    for (int pass = 0; pass < 2; pass++) {
        rt_opts o = {0};
        o.no_fold = no_fold;
        o.precision = case_precision;
        o.no_graph = pass == 1;
        rt_ctx *c = rt_ctx_new(g, &o, err, sizeof err);
        if (!c) {
            fprintf(stderr, "%s: rt_ctx_new: %s\n", label, err);
            CHECK(c != NULL);
            break;
        }
        for (int32_t k = 0; k < n_in; k++)
            CHECK_EQ_INT(rt_set_input(c, k, hin[k], err, sizeof err), 0);
        CHECK_EQ_INT(rt_run(c, err, sizeof err), 0);
        float **dst = pass == 0 ? gpu : gpu2;
        for (int32_t k = 0; k < n_out; k++)
            CHECK_EQ_INT(rt_get_output(c, k, dst[k], err, sizeof err), 0);
        if (pass == 0) {
            rt_info info;
            rt_get_info(c, &info);
            if (info.nodes_run > 0 && !info.graph)
                fprintf(stderr, "%s: no CUDA graph: %s\n", label, info.graph_note);
            CHECK(info.nodes_run == 0 || info.graph);
            /* a second replay gives the same bits */
            float *again = malloc((size_t)ops_shape_numel(&out_sh[0]) * sizeof(float) + 4);
            CHECK_EQ_INT(rt_run(c, err, sizeof err), 0);
            CHECK_EQ_INT(rt_get_output(c, 0, again, err, sizeof err), 0);
            CHECK(!memcmp(again, gpu[0], (size_t)ops_shape_numel(&out_sh[0]) * sizeof(float)));
            free(again);
        }
        rt_ctx_free(c);
    }
    for (int32_t k = 0; k < n_out; k++) {
        int64_t n = ops_shape_numel(&out_sh[k]);
        exec_diff d = exec_compare(gpu[k], ref[k], n);
        if (d.rel_l2 > worst_err[op] || isnan(d.rel_l2))
            worst_err[op] = d.rel_l2;
        if (!(d.rel_l2 <= tol)) {
            fprintf(stderr, "%s: output %d: rel L2 %.3g (max abs %.3g) over %g\n", label, (int)k, d.rel_l2, d.max_abs,
                    tol);
            print_mismatches(gpu[k], ref[k], n);
        }
        CHECK(d.rel_l2 <= tol);
        if (memcmp(gpu[k], gpu2[k], (size_t)n * sizeof(float)))
            fprintf(stderr, "%s: output %d: node-by-node launches differ from the graph replay\n", label, (int)k);
        CHECK(!memcmp(gpu[k], gpu2[k], (size_t)n * sizeof(float)));
    }
    for (int32_t k = 0; k < n_in; k++)
        free(hin[k]);
    for (int32_t k = 0; k < n_out; k++) {
        free(ref[k]);
        free(gpu[k]);
        free(gpu2[k]);
    }
    graph_free(g);
}

static ops_params P(ops_type op) {
    ops_params p;
    ops_params_default(op, &p);
    return p;
}

static void set_list(ops_params *p, int32_t n, const int64_t *v) {
    p->n_list = n;
    for (int32_t i = 0; i < n; i++)
        p->list[i] = v[i];
}

static const int F3[3] = {FILL_NORMAL, FILL_NORMAL, FILL_NORMAL};

/* The conv2d paths conv_case runs each case on (forced by TASC_RT_CONV; NULL: the measured one). */
static const char *const conv_paths_all[] = {NULL, "cudnn", "gemm", "direct", "igemm"};
static const char *const *conv_paths = conv_paths_all;
static size_t conv_paths_n = sizeof conv_paths_all / sizeof conv_paths_all[0];

static void conv_case(const char *label, t_shape x, t_shape w, int bias, int sh, int sw, int pad_mode, int pad,
                      int dil, int groups, ops_act act) {
    ops_params p = P(OP_CONV2D);
    p.v[PM_STRIDE_H] = sh;
    p.v[PM_STRIDE_W] = sw;
    p.v[PM_PAD] = pad_mode;
    if (pad_mode == OPS_PAD_EXPLICIT)
        p.v[PM_PAD_T] = p.v[PM_PAD_L] = p.v[PM_PAD_B] = p.v[PM_PAD_R] = pad;
    p.v[PM_DIL_H] = p.v[PM_DIL_W] = dil;
    p.v[PM_GROUPS] = groups;
    p.v[PM_ACT] = act;
    t_shape s[3] = {x, w, SH(w.d[0])};
    /* the path measured fastest, then each path forced */
    const char *const *paths = conv_paths;
    for (size_t i = 0; i < conv_paths_n; i++) {
        char lab[128];
        snprintf(lab, sizeof lab, "%s [%s]", label, paths[i] ? paths[i] : "measured");
        if (paths[i])
            setenv("TASC_RT_CONV", paths[i], 1);
        else
            unsetenv("TASC_RT_CONV");
        run_case(lab, OP_CONV2D, &p, bias ? 3 : 2, s, F3, 0);
    }
    unsetenv("TASC_RT_CONV");
}

static void test_conv(void) {
    conv_case("conv 3x3 bias relu", SH(1, 3, 17, 19), SH(8, 3, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1, 1, 1,
              OPS_ACT_RELU);
    conv_case("conv grouped same/2 asym", SH(2, 8, 10, 12), SH(8, 2, 3, 3), 1, 2, 2, OPS_PAD_SAME, 0, 1, 4,
              OPS_ACT_NONE);
    conv_case("conv depthwise", SH(1, 16, 14, 14), SH(16, 1, 3, 3), 0, 1, 1, OPS_PAD_EXPLICIT, 1, 1, 16,
              OPS_ACT_NONE);
    conv_case("conv dilated sigmoid", SH(1, 4, 15, 15), SH(6, 4, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 2, 2, 1,
              OPS_ACT_SIGMOID);
    conv_case("conv 1x1 bias", SH(1, 64, 7, 7), SH(32, 64, 1, 1), 1, 1, 1, OPS_PAD_EXPLICIT, 0, 1, 1, OPS_ACT_NONE);
    conv_case("conv 5x5 same gelu", SH(1, 3, 8, 8), SH(4, 3, 5, 5), 1, 1, 1, OPS_PAD_SAME, 0, 1, 1, OPS_ACT_GELU);
    conv_case("conv tanh no bias", SH(1, 5, 9, 6), SH(7, 5, 3, 2), 0, 1, 2, OPS_PAD_VALID, 0, 1, 1, OPS_ACT_TANH);
    conv_case("conv 7x7/2 relu no bias", SH(1, 3, 32, 32), SH(16, 3, 7, 7), 0, 2, 2, OPS_PAD_EXPLICIT, 3, 1, 1,
              OPS_ACT_RELU);
    conv_case("conv resnet 3x3 256", SH(1, 256, 14, 14), SH(256, 256, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1, 1, 1,
              OPS_ACT_RELU);
    conv_case("conv resnext grouped", SH(1, 256, 14, 14), SH(256, 8, 3, 3), 0, 1, 1, OPS_PAD_EXPLICIT, 1, 1, 32,
              OPS_ACT_NONE);
    conv_case("conv 1x1 batch 2 relu", SH(2, 32, 9, 9), SH(16, 32, 1, 1), 0, 1, 1, OPS_PAD_EXPLICIT, 0, 1, 1,
              OPS_ACT_RELU);
    conv_case("conv 1x1 grouped batch 2 gelu", SH(2, 32, 5, 7), SH(16, 8, 1, 1), 0, 1, 1, OPS_PAD_EXPLICIT, 0, 1, 4,
              OPS_ACT_GELU);
    conv_case("conv 3x3 grouped batch 3 bias", SH(3, 12, 8, 8), SH(6, 4, 3, 3), 1, 2, 1, OPS_PAD_SAME, 0, 1, 3,
              OPS_ACT_RELU);
    conv_case("conv 1x1 stride 2", SH(1, 64, 14, 14), SH(128, 64, 1, 1), 1, 2, 2, OPS_PAD_EXPLICIT, 0, 1, 1,
              OPS_ACT_NONE);
    /* the later activations: each path's epilogue (the matmul's in float, the direct kernel's and
     * the separate pass's in double) */
    conv_case("conv 1x1 silu no bias", SH(1, 32, 10, 10), SH(48, 32, 1, 1), 0, 1, 1, OPS_PAD_EXPLICIT, 0, 1, 1,
              OPS_ACT_SILU);
    conv_case("conv depthwise bias silu", SH(1, 24, 12, 12), SH(24, 1, 5, 5), 1, 1, 1, OPS_PAD_SAME, 0, 1, 24,
              OPS_ACT_SILU);
    conv_case("conv 3x3 hardswish no bias", SH(1, 16, 9, 9), SH(16, 16, 3, 3), 0, 2, 2, OPS_PAD_SAME, 0, 1, 1,
              OPS_ACT_HARDSWISH);
    conv_case("conv depthwise hardswish", SH(1, 16, 14, 14), SH(16, 1, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1, 1, 16,
              OPS_ACT_HARDSWISH);
    conv_case("conv 1x1 relu6 no bias", SH(1, 8, 7, 7), SH(16, 8, 1, 1), 0, 1, 1, OPS_PAD_EXPLICIT, 0, 1, 1,
              OPS_ACT_RELU6);
    conv_case("conv 3x3 bias relu6", SH(1, 8, 7, 7), SH(16, 8, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1, 1, 1,
              OPS_ACT_RELU6);
    conv_case("conv 3x3 gelu_tanh no bias", SH(1, 6, 8, 8), SH(10, 6, 3, 3), 0, 1, 1, OPS_PAD_SAME, 0, 1, 1,
              OPS_ACT_GELU_TANH);
}

/* ---- the implicit-GEMM convolution kernels alone (conv_3xtf32.cu, conv_fp32.cu, conv_wgmma) ---- */

/* One kernel case's data: conv2d parameters p (activation left out where an add comes first),
 * shapes, x, w and bias on the host (h) and the device (d), the added tensor (hadd, dadd; NULL
 * without), the output buffer dy, and the CPU reference act(conv + bias (+ add)) in ref. */
typedef struct {
    ops_params p;
    ops_shape in[3], out[OPS_MAX_OUTPUTS];
    cv3_shape cs;
    int64_t ny;
    float *h[3], *d[3], *ref, *hadd, *dy, *dadd;
} kc_fix;

/* Fills f for parameters p (all but the activation) and x, w, with or without bias and add. */
static void kc_fix_init(kc_fix *f, const ops_params *p, t_shape xt, t_shape wt, int bias, int add, ops_act act) {
    memset(f, 0, sizeof *f);
    f->p = *p;
    f->p.v[PM_ACT] = add ? OPS_ACT_NONE : act; /* with an add: act(conv + bias + add), below */
    const t_shape ts[3] = {xt, wt, SH(wt.d[0])};
    for (int k = 0; k < 3; k++) {
        f->in[k].rank = ts[k].rank;
        memcpy(f->in[k].dims, ts[k].d, sizeof ts[k].d);
    }
    char err[256];
    int32_t n_out = 0;
    ops_window win;
    CHECK_EQ_INT(ops_infer(OP_CONV2D, &f->p, bias ? 3 : 2, f->in, &n_out, f->out, err, sizeof err), 0);
    CHECK_EQ_INT(ops_window2d(OP_CONV2D, &f->p, &f->in[0], &f->in[1], &win, err, sizeof err), 0);
    f->cs = (cv3_shape){f->in[0].dims[0], f->in[0].dims[1], f->in[0].dims[2], f->in[0].dims[3], f->in[1].dims[0],
                        f->in[1].dims[2], f->in[1].dims[3], win.oh, win.ow, win.sh, win.sw, win.dh, win.dw, win.pt,
                        win.pl};
    const int64_t n[3] = {ops_shape_numel(&f->in[0]), ops_shape_numel(&f->in[1]), f->in[1].dims[0]};
    f->ny = ops_shape_numel(&f->out[0]);
    f->ref = malloc((size_t)f->ny * sizeof(float));
    for (int k = 0; k < 3; k++) {
        f->h[k] = malloc((size_t)n[k] * sizeof(float));
        graph_fill_normal(f->h[k], n[k], t_next(), 0.0f, 1.0f);
        CHECK_EQ_INT(cudaMalloc((void **)&f->d[k], (size_t)n[k] * sizeof(float)), cudaSuccess);
        CHECK_EQ_INT(cudaMemcpy(f->d[k], f->h[k], (size_t)n[k] * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    }
    if (!bias) /* the kernels take NULL */
        f->d[2] = (cudaFree(f->d[2]), NULL);
    CHECK_EQ_INT(cudaMalloc((void **)&f->dy, (size_t)f->ny * sizeof(float)), cudaSuccess);
    ops_sig sig = {.op = OP_CONV2D, .p = &f->p, .n_in = bias ? 3 : 2, .n_out = 1, .in = f->in, .out = f->out};
    ops_table[OP_CONV2D].cpu(&sig, (const float *const *)f->h, &f->ref);
    if (add) {
        f->hadd = malloc((size_t)f->ny * sizeof(float));
        graph_fill_normal(f->hadd, f->ny, t_next(), 0.0f, 1.0f);
        CHECK_EQ_INT(cudaMalloc((void **)&f->dadd, (size_t)f->ny * sizeof(float)), cudaSuccess);
        CHECK_EQ_INT(cudaMemcpy(f->dadd, f->hadd, (size_t)f->ny * sizeof(float), cudaMemcpyHostToDevice),
                     cudaSuccess);
        for (int64_t i = 0; i < f->ny; i++)
            f->ref[i] = ops_act_apply(act, f->ref[i] + f->hadd[i]);
    }
}

static void kc_fix_free(kc_fix *f) {
    for (int k = 0; k < 3; k++) {
        free(f->h[k]);
        if (f->d[k])
            CHECK_EQ_INT(cudaFree(f->d[k]), cudaSuccess);
    }
    CHECK_EQ_INT(cudaFree(f->dy), cudaSuccess);
    if (f->dadd)
        CHECK_EQ_INT(cudaFree(f->dadd), cudaSuccess);
    free(f->hadd);
    free(f->ref);
}

/* got against the reference (rel L2 <= 1e-5) and the second run again (the same bits), labelled by
 * case, configuration and split; the worst error is kept for the op table's summary. */
static void kc_check(const char *label, const char *cfg, int split, const float *got, const float *again,
                     const float *ref, int64_t ny, const char *what) {
    exec_diff df = exec_compare(got, ref, ny);
    if (!(df.rel_l2 <= 1e-5))
        fprintf(stderr, "%s [%s split %d]: rel L2 %.3g (max abs %.3g)\n", label, cfg, split, df.rel_l2, df.max_abs);
    CHECK(df.rel_l2 <= 1e-5);
    if (memcmp(got, again, (size_t)ny * sizeof(float)))
        fprintf(stderr, "%s [%s split %d]: %s differs\n", label, cfg, split, what);
    CHECK(!memcmp(got, again, (size_t)ny * sizeof(float)));
    if (df.rel_l2 > worst_err[OP_CONV2D])
        worst_err[OP_CONV2D] = df.rel_l2;
}

/* The epilogue activation of act (the implicit GEMMs run the matmul's; the cases use no other). */
static int kc_mm_act(ops_act act) {
    const int m = oc_mm_act(act);
    return m < 0 ? MM_ACT_NONE : m;
}

/* conv_3xtf32.cu's kernel alone, with each tile configuration, unsplit and split over k (2, 3,
 * 8 and 16 slices where K has them; 16 runs as 8), against the CPU reference: the error of FP32 (rel L2 <= 1e-5;
 * one TF32 product per term would give about 1e-3), every output written (the buffer starts as
 * NaN), the same bits on a second run (the split-K counters reset). Stride, padding and
 * dilation equal on both axes. */
static void tc_kernel_case(const char *label, t_shape xt, t_shape wt, int stride, int pad, int dil, int bias,
                           ops_act act, int with_add) {
    ops_params p = P(OP_CONV2D);
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = stride;
    p.v[PM_PAD] = OPS_PAD_EXPLICIT;
    p.v[PM_PAD_T] = p.v[PM_PAD_L] = p.v[PM_PAD_B] = p.v[PM_PAD_R] = pad;
    p.v[PM_DIL_H] = p.v[PM_DIL_W] = dil;
    kc_fix f;
    kc_fix_init(&f, &p, xt, wt, bias, with_add, act);
    char err[256];
    cv3_plan *plan = cv3_plan_new(&f.cs, err, sizeof err);
    if (!plan)
        fprintf(stderr, "%s: %s\n", label, err);
    CHECK(plan != NULL);
    const int64_t ny = f.ny;
    float *got = malloc((size_t)ny * sizeof(float)), *again = malloc((size_t)ny * sizeof(float)), *ws = NULL;
    static const int splits[] = {1, 2, 3, 8, 16};
    CHECK_EQ_INT(cudaMalloc((void **)&ws, (plan ? cv3_workspace_bytes(plan, 8) : 0) + 4), cudaSuccess);
    for (int cs_ = 0; plan && cs_ < cv3_config_count() * 5; cs_++) {
        const int c = cs_ / 5, sp = splits[cs_ % 5];
        for (int rep = 0; rep < 2; rep++) {
            CHECK_EQ_INT(cudaMemset(f.dy, 0xff, (size_t)ny * sizeof(float)), cudaSuccess);
            cv3_run(plan, c, sp, f.d[0], f.d[1], f.d[2], f.dadd, f.dy, kc_mm_act(act), ws, 0);
            CHECK_EQ_INT(cudaGetLastError(), cudaSuccess);
            CHECK_EQ_INT(cudaMemcpy(rep ? again : got, f.dy, (size_t)ny * sizeof(float), cudaMemcpyDeviceToHost),
                         cudaSuccess);
        }
        kc_check(label, cv3_config_name(c), sp, got, again, f.ref, ny, "a second run");
    }
    CHECK_EQ_INT(cudaFree(ws), cudaSuccess);
    free(got);
    free(again);
    kc_fix_free(&f);
    if (plan)
        cv3_plan_free(plan);
}

/* Precision 3xtf32: the implicit-GEMM kernel alone on shapes that reach its edges (the 16-byte 1x1
 * columns and the gathered ones, odd maps, partial tiles, K not a multiple of 4 or 32), then
 * conv2d through the runtime with the measured path and the 3xtf32 path forced. */
static void test_conv_3xtf32(void) {
    tc_kernel_case("tc 1x1 batch 2 (16-byte columns)", SH(2, 64, 8, 8), SH(48, 64, 1, 1), 1, 0, 1, 1, OPS_ACT_RELU, 0);
    tc_kernel_case("tc 1x1 odd map", SH(3, 20, 7, 7), SH(100, 20, 1, 1), 1, 0, 1, 1, OPS_ACT_NONE, 0);
    tc_kernel_case("tc 3x3 pad 1", SH(2, 16, 13, 11), SH(24, 16, 3, 3), 1, 1, 1, 1, OPS_ACT_RELU, 0);
    tc_kernel_case("tc 3x3 stride 2", SH(1, 32, 15, 15), SH(130, 32, 3, 3), 2, 1, 1, 0, OPS_ACT_NONE, 0);
    tc_kernel_case("tc 7x7/2 stem (K 147)", SH(2, 3, 30, 30), SH(16, 3, 7, 7), 2, 3, 1, 1, OPS_ACT_RELU, 0);
    tc_kernel_case("tc 3x3 dilated 2", SH(1, 8, 12, 12), SH(8, 8, 3, 3), 1, 2, 2, 1, OPS_ACT_NONE, 0);
    tc_kernel_case("tc 1x1 stride 2", SH(2, 64, 14, 14), SH(128, 64, 1, 1), 2, 0, 1, 0, OPS_ACT_RELU, 0);
    tc_kernel_case("tc 3x3 K 2304", SH(2, 256, 7, 7), SH(64, 256, 3, 3), 1, 1, 1, 1, OPS_ACT_RELU, 0);
    tc_kernel_case("tc 1x1 + add relu (odd map)", SH(2, 32, 7, 7), SH(40, 32, 1, 1), 1, 0, 1, 1, OPS_ACT_RELU, 1);
    tc_kernel_case("tc 3x3 + add (even map)", SH(2, 16, 8, 8), SH(24, 16, 3, 3), 1, 1, 1, 1, OPS_ACT_NONE, 1);
    static const char *const tc_paths[] = {NULL, "3xtf32"};
    conv_paths = tc_paths;
    conv_paths_n = 2;
    case_precision = RT_PRECISION_3XTF32;
    conv_case("conv@3xtf32 3x3 bias relu", SH(2, 16, 17, 19), SH(32, 16, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1, 1, 1,
              OPS_ACT_RELU);
    conv_case("conv@3xtf32 1x1 bias", SH(2, 64, 8, 8), SH(32, 64, 1, 1), 1, 1, 1, OPS_PAD_EXPLICIT, 0, 1, 1,
              OPS_ACT_NONE);
    conv_case("conv@3xtf32 same/2 asym gelu", SH(1, 8, 10, 12), SH(16, 8, 3, 3), 1, 2, 2, OPS_PAD_SAME, 0, 1, 1,
              OPS_ACT_GELU);
    conv_case("conv@3xtf32 sigmoid (separate pass)", SH(1, 4, 15, 15), SH(6, 4, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 2,
              2, 1, OPS_ACT_SIGMOID);
    conv_case("conv@3xtf32 grouped (other paths)", SH(1, 16, 9, 9), SH(16, 4, 3, 3), 0, 1, 1, OPS_PAD_EXPLICIT, 1,
              1, 4, OPS_ACT_RELU);
    conv_case("conv@3xtf32 resnet 3x3 256", SH(1, 256, 14, 14), SH(256, 256, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1, 1,
              1, OPS_ACT_RELU);
    conv_paths = conv_paths_all;
    conv_paths_n = sizeof conv_paths_all / sizeof conv_paths_all[0];
    case_precision = RT_PRECISION_FP32;
}

/* ---- the FP32 implicit GEMM alone (conv_fp32.cu) -------------------------------------------- */

/* One case of the kernel test: x and w, strides, dilations, padding (OPS_PAD_EXPLICIT: t, l, b, r;
 * else the mode's), with or without bias and an added tensor, and the activation. */
typedef struct {
    const char *label;
    t_shape x, w;
    int sh, sw, dh, dw, pad_mode, pt, pl, pb, pr, bias, add;
    ops_act act;
} cf_case;

/* Every configuration at splits 1, 2, 3, 8 and 16 (more slices than a short K has: fewer run), twice
 * each, every output written (dy starts as NaN), against the CPU reference. */
static void cf_kernel_runs(const cf_case *k, const cf_plan *plan, const kc_fix *f) {
    static const int splits[] = {1, 2, 3, 8, 16};
    const int64_t ny = f->ny;
    float *got = malloc((size_t)ny * sizeof(float)), *again = malloc((size_t)ny * sizeof(float)), *ws = NULL;
    CHECK_EQ_INT(cudaMalloc((void **)&ws, cf_workspace_bytes(plan, 16) + 4), cudaSuccess);
    for (int c = 0; c < cf_config_count(); c++)
        for (int si = 0; si < 5; si++) {
            for (int rep = 0; rep < 2; rep++) {
                CHECK_EQ_INT(cudaMemset(f->dy, 0xff, (size_t)ny * sizeof(float)), cudaSuccess);
                cf_run(plan, c, splits[si], f->d[0], f->d[1], f->d[2], f->dadd, f->dy, kc_mm_act(k->act), ws, 0);
                CHECK_EQ_INT(cudaGetLastError(), cudaSuccess);
                CHECK_EQ_INT(cudaMemcpy(rep ? again : got, f->dy, (size_t)ny * sizeof(float), cudaMemcpyDeviceToHost),
                             cudaSuccess);
            }
            kc_check(k->label, cf_config_name(c), splits[si], got, again, f->ref, ny, "a second run");
        }
    CHECK_EQ_INT(cudaFree(ws), cudaSuccess);
    free(got);
    free(again);
}

/* Case k: the plan, random inputs on the device, act(conv + bias (+ add)) on the CPU, the runs. */
static void cf_kernel_case(const cf_case *k) {
    ops_params p = P(OP_CONV2D);
    p.v[PM_STRIDE_H] = k->sh;
    p.v[PM_STRIDE_W] = k->sw;
    p.v[PM_DIL_H] = k->dh;
    p.v[PM_DIL_W] = k->dw;
    p.v[PM_PAD] = k->pad_mode;
    if (k->pad_mode == OPS_PAD_EXPLICIT) {
        p.v[PM_PAD_T] = k->pt;
        p.v[PM_PAD_L] = k->pl;
        p.v[PM_PAD_B] = k->pb;
        p.v[PM_PAD_R] = k->pr;
    }
    kc_fix f;
    kc_fix_init(&f, &p, k->x, k->w, k->bias, k->add, k->act);
    char err[256];
    cf_plan *plan = cf_plan_new(&f.cs, err, sizeof err);
    if (!plan)
        fprintf(stderr, "%s: %s\n", k->label, err);
    CHECK(plan != NULL);
    if (plan)
        cf_kernel_runs(k, plan, &f);
    kc_fix_free(&f);
    if (plan)
        cf_plan_free(plan);
}

/* The FP32 implicit GEMM (conv_fp32.cu) alone on shapes that reach its edges: the 16-byte 1x1
 * columns and the gathered ones, the store from registers (maps of 4k pixels) and through shared
 * memory (odd maps), 1x7 and 7x1 kernels, strides, dilation, asymmetric padding, batch 1 and 3,
 * output channels, columns and K that are no multiple of a tile, with and without bias and add;
 * then conv2d through the runtime with the measured path and igemm forced at precision 3xtf32
 * (the conv group forces it at fp32). */
static void test_conv_fp32(void) {
    const cf_case cases[] = { /* pad mode 0: OPS_PAD_EXPLICIT */
        {"cf 1x1 batch 2 (16-byte columns)", SH(2, 64, 8, 8), SH(48, 64, 1, 1), 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0,
         OPS_ACT_RELU},
        {"cf 1x1 odd map batch 3", SH(3, 20, 7, 7), SH(100, 20, 1, 1), 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, OPS_ACT_NONE},
        {"cf 1x1 + add relu (16-byte)", SH(3, 32, 8, 8), SH(40, 32, 1, 1), 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1,
         OPS_ACT_RELU},
        {"cf 1x1 64->16 55x55 (squeezenet)", SH(1, 64, 55, 55), SH(16, 64, 1, 1), 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0,
         OPS_ACT_RELU},
        {"cf 3x3 pad 1 odd map + add relu", SH(1, 16, 13, 11), SH(24, 16, 3, 3), 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1,
         OPS_ACT_RELU},
        {"cf 3x3 pad 1 batch 3 + add gelu", SH(3, 16, 8, 8), SH(40, 16, 3, 3), 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1,
         OPS_ACT_GELU},
        {"cf 1x7 silu", SH(1, 24, 17, 17), SH(33, 24, 1, 7), 1, 1, 1, 1, 0, 0, 3, 0, 3, 1, 0, OPS_ACT_SILU},
        {"cf 7x1 batch 3 relu6", SH(3, 24, 9, 9), SH(40, 24, 7, 1), 1, 1, 1, 1, 0, 3, 0, 3, 0, 1, 0, OPS_ACT_RELU6},
        {"cf 3x3 stride 2 (130 channels)", SH(1, 32, 15, 15), SH(130, 32, 3, 3), 2, 2, 1, 1, 0, 1, 1, 1, 1, 0, 0,
         OPS_ACT_NONE},
        {"cf 3x3 dilation 2 hardswish", SH(1, 8, 12, 12), SH(8, 8, 3, 3), 1, 1, 2, 2, 0, 2, 2, 2, 2, 1, 0,
         OPS_ACT_HARDSWISH},
        {"cf same/2 asymmetric + add", SH(1, 8, 10, 12), SH(16, 8, 3, 3), 2, 2, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 1, 1,
         OPS_ACT_GELU_TANH},
        {"cf explicit asymmetric pads", SH(3, 5, 9, 10), SH(7, 5, 3, 2), 1, 2, 1, 1, 0, 0, 1, 2, 0, 1, 0,
         OPS_ACT_RELU},
        {"cf 7x7/2 stem (K 147)", SH(2, 3, 30, 30), SH(16, 3, 7, 7), 2, 2, 1, 1, 0, 3, 3, 3, 3, 1, 0, OPS_ACT_RELU},
        {"cf 3x3 K 2304 7x7 map", SH(1, 256, 7, 7), SH(64, 256, 3, 3), 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0,
         OPS_ACT_RELU},
        {"cf 1x1 stride 2 batch 2", SH(2, 64, 14, 14), SH(128, 64, 1, 1), 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0,
         OPS_ACT_RELU},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cf_kernel_case(&cases[i]);
    static const char *const cf_paths[] = {NULL, "igemm"};
    conv_paths = cf_paths;
    conv_paths_n = 2;
    case_precision = RT_PRECISION_3XTF32;
    conv_case("conv@3xtf32 igemm 3x3 bias relu", SH(2, 16, 17, 19), SH(32, 16, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1,
              1, 1, OPS_ACT_RELU);
    conv_case("conv@3xtf32 igemm 1x1 bias", SH(1, 512, 13, 13), SH(100, 512, 1, 1), 1, 1, 1, OPS_PAD_EXPLICIT, 0, 1,
              1, OPS_ACT_RELU);
    conv_paths = conv_paths_all;
    conv_paths_n = sizeof conv_paths_all / sizeof conv_paths_all[0];
    case_precision = RT_PRECISION_FP32;
}

/* The runtime's residual fusion (rt.c rt_plan_fuse) on a graph with three candidates: conv ->
 * add -> relu (fused, both), add(c2, c3) with c3 made after c2 (fused into c3 only, no relu), and
 * a conv with its own relu before an add (not fused): 3 nodes fused. At both precisions, each
 * conv path forced, with node checks on (the fused node checked against conv, add, relu on the
 * CPU); then TASC_NO_FUSE's option: no node fused, the same values. */
static void test_conv_fusion(void) {
    char err[1024];
    graph *g = graph_new("fusion");
    const int64_t xd[4] = {2, 16, 10, 10}, sd[4] = {2, 24, 10, 10};
    const int32_t pads[4] = {1, 1, 1, 1}, nopad[4] = {0, 0, 0, 0};
    int32_t x = graph_input(g, "x", 4, xd), sk = graph_input(g, "skip", 4, sd);
    int32_t w1 = graph_weight_he(g, "w1", 4, (int64_t[]){24, 16, 3, 3}), b1 = graph_weight_he(g, "b1", 1, (int64_t[]){24});
    int32_t c1 = graph_conv2d_ex(g, "c1", x, w1, b1, 1, 1, pads, 1, OPS_ACT_NONE);
    int32_t r1 = graph_unary(g, OP_RELU, graph_ewadd(g, c1, sk));
    int32_t w2 = graph_weight_he(g, "w2", 4, (int64_t[]){24, 24, 1, 1}), w3 = graph_weight_he(g, "w3", 4, (int64_t[]){24, 16, 1, 1});
    int32_t c2 = graph_conv2d_ex(g, "c2", r1, w2, -1, 1, 1, nopad, 1, OPS_ACT_NONE);
    int32_t c3 = graph_conv2d_ex(g, "c3", x, w3, -1, 1, 1, nopad, 1, OPS_ACT_NONE);
    int32_t a2 = graph_ewadd(g, c2, c3);
    int32_t w4 = graph_weight_he(g, "w4", 4, (int64_t[]){24, 16, 3, 3});
    int32_t c4 = graph_conv2d_ex(g, "c4", x, w4, -1, 1, 1, pads, 1, OPS_ACT_RELU);
    int32_t a3 = graph_ewadd(g, c4, sk);
    graph_mark_output(g, a2);
    graph_mark_output(g, a3);
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "fusion: %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    const int64_t n = 2 * 24 * 10 * 10;
    float *cpu[2] = {0}, *gpu = malloc((size_t)n * sizeof(float));
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
    static const char *const paths[] = {NULL, "cudnn", "gemm", "direct", "3xtf32", "igemm"};
    for (int run = 0; run < 2 * 6 + 1 && cpu[0] && cpu[1]; run++) {
        const int nofuse = run == 12;
        rt_opts o = {0};
        o.precision = run % 2 ? RT_PRECISION_3XTF32 : RT_PRECISION_FP32;
        o.check_tol = 1e-4;
        o.no_fuse = nofuse;
        if (!nofuse && paths[run / 2])
            setenv("TASC_RT_CONV", paths[run / 2], 1);
        rt_ctx *ctx = rt_ctx_new(g, &o, err, sizeof err);
        unsetenv("TASC_RT_CONV");
        CHECK(ctx != NULL);
        if (!ctx) {
            fprintf(stderr, "fusion: %s\n", err);
            continue;
        }
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
        rt_info info;
        rt_get_info(ctx, &info);
        CHECK_EQ_INT(info.nodes_fused, nofuse ? 0 : 3);
        CHECK_EQ_INT(info.check_failed, 0);
        for (int k = 0; k < 2; k++) {
            CHECK_EQ_INT(rt_get_output(ctx, k, gpu, err, sizeof err), 0);
            const double e = exec_compare(gpu, cpu[k], n).rel_l2;
            if (!(e <= 1e-5))
                fprintf(stderr, "fusion [%s, %s%s] output %d: rel L2 %.3g\n", paths[run / 2 % 6] ? paths[run / 2 % 6] : "measured",
                        run % 2 ? "3xtf32" : "fp32", nofuse ? ", no fusion" : "", k, e);
            CHECK(e <= 1e-5);
        }
        rt_ctx_free(ctx);
    }
    printf("conv fusion: %s\n", test_failed ? "FAILED" : "ok");
    free(gpu);
    free(cpu[0]);
    free(cpu[1]);
    graph_free(g);
}

/* ---- device part: the convolution on the wgmma matmul (conv_wgmma.h) ------------------------ */

/* One case of the wgmma conv: x and w, stride, padding and dilation (equal on both axes), with or
 * without bias and an added tensor, and the activation (one the matmul epilogue has). */
typedef struct {
    const char *label;
    t_shape x, w;
    int stride, pad, dil, bias, add;
    ops_act act;
} cw_case;

/* Both configurations at splits 1, 2, 3, 5, 8 and 16 (more slices than a short K has: fewer run) on
 * the device inputs of f: the CPU reference at rel L2 <= 1e-5, every output written (dy starts as
 * NaN), the same bits on a second run, and the same bits with the weight split once ahead
 * (mm_3xtf32_presplit handed over as the runtime does: read, counted once). */
static void cw_kernel_runs(const cw_case *k, const cw_plan *plan, const kc_fix *f) {
    static const int splits[] = {1, 2, 3, 5, 8, 16};
    const cv3_shape *cs = &f->cs;
    const int64_t K = cs->C * cs->KH * cs->KW, ny = f->ny;
    float *got[3], *ws = NULL, *wbuf = NULL;
    for (int r = 0; r < 3; r++)
        got[r] = malloc((size_t)ny * sizeof(float));
    CHECK_EQ_INT(cudaMalloc((void **)&ws, cw_workspace_bytes(plan)), cudaSuccess);
    CHECK_EQ_INT(cudaMalloc((void **)&wbuf, mm_3xtf32_presplit_floats(cs->F, K, 1) * sizeof(float)), cudaSuccess);
    mm_presplit ps;
    char err[256];
    CHECK_EQ_INT(mm_3xtf32_presplit(&ps, MM_OPERAND_A, f->d[1], cs->F, K, 1, 0, wbuf, 0, err, sizeof err), 0);
    for (int c = 0; c < cw_config_count(); c++)
        for (int si = 0; si < 6; si++) {
            for (int rep = 0; rep < 3; rep++) { /* 0, 1: the weight split per call; 2: split ahead */
                CHECK_EQ_INT(cudaMemset(f->dy, 0xff, (size_t)ny * sizeof(float)), cudaSuccess);
                const int64_t uses = ps.uses;
                mm_3xtf32_presplit_node_set(rep == 2 ? &ps : NULL, rep == 2 ? 1 : 0);
                const int rc = cw_run(plan, c, splits[si], f->d[0], f->d[1], f->d[2], f->dadd, f->dy,
                                      kc_mm_act(k->act), ws, 0, err, sizeof err);
                mm_3xtf32_presplit_node_set(NULL, 0);
                if (rc)
                    fprintf(stderr, "%s: %s\n", k->label, err);
                CHECK_EQ_INT(rc, 0);
                CHECK_EQ_INT((int)(ps.uses - uses), rep == 2 ? 1 : 0);
                CHECK_EQ_INT(cudaMemcpy(got[rep], f->dy, (size_t)ny * sizeof(float), cudaMemcpyDeviceToHost),
                             cudaSuccess);
            }
            kc_check(k->label, cw_config_name(c), splits[si], got[0], got[1], f->ref, ny, "a second run");
            kc_check(k->label, cw_config_name(c), splits[si], got[0], got[2], f->ref, ny,
                     "the run on the weight split ahead");
        }
    CHECK_EQ_INT(cudaFree(ws), cudaSuccess);
    CHECK_EQ_INT(cudaFree(wbuf), cudaSuccess);
    for (int r = 0; r < 3; r++)
        free(got[r]);
}

/* Case k: the plan, random inputs on the device, act(conv + bias (+ add)) on the CPU, the runs. */
static void cw_kernel_case(const cw_case *k) {
    ops_params p = P(OP_CONV2D);
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = k->stride;
    p.v[PM_PAD] = OPS_PAD_EXPLICIT;
    p.v[PM_PAD_T] = p.v[PM_PAD_L] = p.v[PM_PAD_B] = p.v[PM_PAD_R] = k->pad;
    p.v[PM_DIL_H] = p.v[PM_DIL_W] = k->dil;
    kc_fix f;
    kc_fix_init(&f, &p, k->x, k->w, k->bias, k->add, k->act);
    char err[256];
    cw_plan *plan = cw_plan_new(&f.cs, err, sizeof err);
    if (!plan)
        fprintf(stderr, "%s: %s\n", k->label, err);
    CHECK(plan != NULL);
    if (plan)
        cw_kernel_runs(k, plan, &f);
    kc_fix_free(&f);
    if (plan)
        cw_plan_free(plan);
}

/* The runtime's residual fusion on the wgmma path forced at precision 3xtf32, node checks on: conv
 * (bias) -> add -> relu and a 1x1 conv -> add, 3 nodes fused, run on wgmma, against the CPU
 * executor. */
static void cw_fusion(void) {
    char err[1024];
    graph *g = graph_new("cw fusion");
    const int64_t xd[4] = {3, 32, 7, 7}, sd[4] = {3, 48, 7, 7};
    const int32_t pads[4] = {1, 1, 1, 1}, nopad[4] = {0, 0, 0, 0};
    int32_t x = graph_input(g, "x", 4, xd), sk = graph_input(g, "skip", 4, sd);
    int32_t w1 = graph_weight_he(g, "w1", 4, (int64_t[]){48, 32, 3, 3});
    int32_t b1 = graph_weight_he(g, "b1", 1, (int64_t[]){48});
    int32_t c1 = graph_conv2d_ex(g, "c1", x, w1, b1, 1, 1, pads, 1, OPS_ACT_NONE);
    int32_t r1 = graph_unary(g, OP_RELU, graph_ewadd(g, c1, sk));
    int32_t w2 = graph_weight_he(g, "w2", 4, (int64_t[]){48, 48, 1, 1});
    int32_t c2 = graph_conv2d_ex(g, "c2", r1, w2, -1, 1, 1, nopad, 1, OPS_ACT_NONE);
    graph_mark_output(g, graph_ewadd(g, c2, sk));
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "cw fusion: %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    const int64_t n = 3 * 48 * 7 * 7;
    float *cpu[1] = {0}, *gpu = malloc((size_t)n * sizeof(float));
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
    rt_opts o = {0};
    o.precision = RT_PRECISION_3XTF32;
    o.check_tol = 1e-4;
    const int64_t l0 = mm_3xtf32_wgmma_launches();
    setenv("TASC_RT_CONV", "wgmma", 1);
    rt_ctx *ctx = cpu[0] ? rt_ctx_new(g, &o, err, sizeof err) : NULL;
    unsetenv("TASC_RT_CONV");
    CHECK(ctx != NULL);
    if (ctx) {
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
        rt_info info;
        rt_get_info(ctx, &info);
        CHECK_EQ_INT(info.nodes_fused, 3);
        CHECK_EQ_INT(info.check_failed, 0);
        CHECK(mm_3xtf32_wgmma_launches() > l0);
        CHECK_EQ_INT(rt_get_output(ctx, 0, gpu, err, sizeof err), 0);
        const double e = exec_compare(gpu, cpu[0], n).rel_l2;
        if (!(e <= 1e-5))
            fprintf(stderr, "cw fusion: rel L2 %.3g\n", e);
        CHECK(e <= 1e-5);
        rt_ctx_free(ctx);
    } else {
        fprintf(stderr, "cw fusion: %s\n", err);
    }
    free(gpu);
    free(cpu[0]);
    graph_free(g);
}

/* The wgmma conv (conv_wgmma.h) alone on shapes like resnet's late layers, small enough to be
 * quick: 3x3 pad 1 at stride 1 and 2, 1x1 at stride 1 and 2, a 7x7/2 stem (K 147: not a multiple
 * of 4), dilation, batch 1, 2 and 3, output channels and columns that are no multiple of a tile,
 * K 180 to 4608, with and without bias and add; then conv2d through the runtime at precision
 * 3xtf32, measured and forced (TASC_RT_CONV=wgmma, counted on the wgmma path), and the residual
 * fusion. Skipped where the wgmma path is not available. */
static void test_conv_wgmma(void) {
    if (!mm_3xtf32_wgmma_available()) {
        printf("convw: the wgmma path is not available on this device or build (skipped)\n");
        return;
    }
    const int before = test_failed;
    const cw_case cases[] = {
        {"cw 3x3 pad 1 K 2304 OC 72", SH(1, 256, 7, 7), SH(72, 256, 3, 3), 1, 1, 1, 1, 0, OPS_ACT_RELU},
        {"cw 3x3 stride 2 batch 3 + add", SH(3, 128, 9, 9), SH(100, 128, 3, 3), 2, 1, 1, 0, 1, OPS_ACT_NONE},
        {"cw 1x1 batch 3 odd columns OC 130", SH(3, 64, 13, 11), SH(130, 64, 1, 1), 1, 0, 1, 1, 0, OPS_ACT_GELU},
        {"cw 3x3 K 180 + add relu", SH(1, 20, 7, 7), SH(33, 20, 3, 3), 1, 1, 1, 1, 1, OPS_ACT_RELU},
        {"cw 7x7/2 K 147 batch 2", SH(2, 3, 30, 30), SH(16, 3, 7, 7), 2, 3, 1, 1, 0, OPS_ACT_RELU},
        {"cw 3x3 dilated 2", SH(1, 8, 12, 12), SH(8, 8, 3, 3), 1, 2, 2, 0, 0, OPS_ACT_NONE},
        {"cw 3x3 K 4608 batch 2 + add relu", SH(2, 512, 4, 4), SH(64, 512, 3, 3), 1, 1, 1, 1, 1, OPS_ACT_RELU},
        {"cw 1x1 stride 2 OC 520", SH(1, 256, 14, 14), SH(520, 256, 1, 1), 2, 0, 1, 0, 0, OPS_ACT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cw_kernel_case(&cases[i]);
    static const char *const cw_paths[] = {NULL, "wgmma"};
    conv_paths = cw_paths;
    conv_paths_n = 2;
    case_precision = RT_PRECISION_3XTF32;
    const int64_t l0 = mm_3xtf32_wgmma_launches();
    conv_case("conv@3xtf32 wgmma resnet 3x3 256", SH(1, 256, 7, 7), SH(256, 256, 3, 3), 1, 1, 1, OPS_PAD_EXPLICIT, 1,
              1, 1, OPS_ACT_RELU);
    conv_case("conv@3xtf32 wgmma 3x3/2 batch 3", SH(3, 64, 9, 9), SH(72, 64, 3, 3), 0, 2, 2, OPS_PAD_EXPLICIT, 1, 1,
              1, OPS_ACT_NONE);
    conv_case("conv@3xtf32 wgmma 1x1 batch 3 gelu", SH(3, 32, 7, 7), SH(40, 32, 1, 1), 1, 1, 1, OPS_PAD_EXPLICIT, 0,
              1, 1, OPS_ACT_GELU);
    conv_case("conv@3xtf32 wgmma sigmoid (separate pass)", SH(1, 4, 15, 15), SH(6, 4, 3, 3), 1, 1, 1,
              OPS_PAD_EXPLICIT, 1, 1, 1, OPS_ACT_SIGMOID);
    CHECK(mm_3xtf32_wgmma_launches() > l0); /* the forced runs took the path */
    conv_paths = conv_paths_all;
    conv_paths_n = sizeof conv_paths_all / sizeof conv_paths_all[0];
    case_precision = RT_PRECISION_FP32;
    cw_fusion();
    printf("convw: %s\n", test_failed == before ? "ok" : "FAILED");
}

/* ---- device part: the producer fusions and the row kernels (normfuse) ---------------------- */

static int32_t nf_smul(graph *g, int32_t x, int32_t scale) {
    ops_params p = P(OP_SMUL);
    int32_t in[2] = {x, scale}, out[OPS_MAX_OUTPUTS];
    return graph_add(g, NULL, OP_SMUL, &p, 2, in, out) == 1 ? out[0] : -1;
}

/* layernorm over dims [axis, end) (end 0: to the rank), eps 1e-5; gamma, beta -1: none */
static int32_t nf_layernorm(graph *g, int32_t x, int32_t gamma, int32_t beta, int64_t axis, int64_t end) {
    ops_params p = P(OP_LAYERNORM);
    p.v[PM_AXIS] = axis;
    p.v[PM_AXIS_END] = end;
    int32_t in[3] = {x, gamma, beta}, out[OPS_MAX_OUTPUTS];
    return graph_add(g, NULL, OP_LAYERNORM, &p, gamma < 0 ? 1 : beta < 0 ? 2 : 3, in, out) == 1 ? out[0] : -1;
}

/* g's outputs on the runtime, with node checks (tolerance 1e-5) all passing; run 0 fused (graph
 * replay), 1 fused (node by node), 2 without fusion by the option, 3 by TASC_NO_FUSE=1. Each run
 * against the CPU executor (rel L2 <= 1e-5) and fusing `fused` nodes or none; runs 1-3 against
 * run 0: the same bits, or within 1e-6 rel L2 for the outputs marked in loose (a softmax, whose
 * scale may round differently where the smul is folded into it). */
static void nf_run(const char *label, graph *g, int32_t fused, const uint8_t *loose) {
    char err[1024];
    const int32_t no = g->n_outputs;
    float **cpu = calloc((size_t)no, sizeof *cpu), **first = calloc((size_t)no, sizeof *first);
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
    for (int run = 0; run < 4 && cpu[0]; run++) {
        rt_opts o = {0};
        o.check_tol = 1e-5;
        o.no_graph = run == 1;
        o.no_fuse = run == 2;
        if (run == 3)
            setenv("TASC_NO_FUSE", "1", 1);
        rt_ctx *ctx = rt_ctx_new(g, &o, err, sizeof err);
        unsetenv("TASC_NO_FUSE");
        CHECK(ctx != NULL);
        if (!ctx) {
            fprintf(stderr, "%s: %s\n", label, err);
            continue;
        }
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
        rt_info info;
        rt_get_info(ctx, &info);
        CHECK_EQ_INT(info.nodes_fused, run < 2 ? fused : 0);
        CHECK_EQ_INT(info.check_failed, 0);
        if (info.check_failed)
            fprintf(stderr, "%s run %d: worst node check %.3g at '%s'\n", label, run, info.check_worst,
                    info.check_worst_node);
        for (int32_t k = 0; k < no; k++) {
            const int64_t n = ops_shape_numel(&g->tensors[g->outputs[k]].shape);
            float *y = malloc((size_t)n * sizeof(float) + 4);
            CHECK_EQ_INT(rt_get_output(ctx, k, y, err, sizeof err), 0);
            const double e = exec_compare(y, cpu[k], n).rel_l2;
            if (!(e <= 1e-5))
                fprintf(stderr, "%s run %d output %d: rel L2 %.3g against the CPU executor\n", label, run, (int)k, e);
            CHECK(e <= 1e-5);
            if (run == 0) {
                first[k] = y;
                continue;
            }
            if (first[k]) {
                const int same = !memcmp(y, first[k], (size_t)n * sizeof(float));
                const double d = exec_compare(y, first[k], n).rel_l2;
                if (!same && (!loose[k] || !(d <= 1e-6)))
                    fprintf(stderr, "%s run %d output %d: differs from the fused run (rel L2 %.3g)\n", label, run,
                            (int)k, d);
                CHECK(same || (loose[k] && d <= 1e-6));
            }
            free(y);
        }
        rt_ctx_free(ctx);
    }
    for (int32_t k = 0; k < no; k++) {
        free(cpu[k]);
        free(first[k]);
    }
    free(cpu);
    free(first);
}

/* The patterns, fused, at row lengths L of each kernel path (registers by float4: 128, 768, 1000;
 * by scalars: 1, 31, 129; the general kernels: 4096), rows 37: softmax(x * s) with s a weight,
 * and with s folded from weights (kept on the device though only the fused node reads it);
 * layernorm(a + b) with gamma and beta, and without, and a layernorm of the sum of a fused
 * layernorm's output (bert's chain). */
static void nf_fused_lengths(void) {
    static const int64_t lens[] = {1, 31, 128, 129, 768, 1000, 4096};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t L = lens[li], xd[3] = {37, 1, L}, rd[2] = {37, L}, one[1] = {1}, ld[1] = {L};
        graph *g = graph_new("normfuse");
        int32_t x = graph_input(g, "x", 3, xd), s = graph_weight_const(g, "s", 1, one, 0.125f);
        int32_t s2 = graph_ewmul(g, graph_weight_const(g, "h", 1, one, 1.5f), s); /* folded */
        int32_t a = graph_input(g, "a", 2, rd), b = graph_input(g, "b", 2, rd), c = graph_input(g, "c", 2, rd);
        int32_t ga = graph_weight_he(g, "gamma", 1, ld), be = graph_weight_he(g, "beta", 1, ld);
        int32_t y1 = graph_softmax(g, nf_smul(g, x, s), 2);
        int32_t y2 = graph_softmax(g, nf_smul(g, x, s2), 2);
        int32_t z1 = nf_layernorm(g, graph_ewadd(g, a, b), ga, be, 1, 0);
        int32_t z2 = nf_layernorm(g, graph_ewadd(g, b, c), -1, -1, 1, 2);
        int32_t z3 = nf_layernorm(g, graph_ewadd(g, z1, c), ga, be, 1, 0);
        const int32_t outs[] = {y1, y2, z2, z3};
        for (int k = 0; k < 4; k++)
            graph_mark_output(g, outs[k]);
        CHECK(graph_ok(g));
        const uint8_t loose[4] = {1, 1, 0, 0};
        char label[64];
        snprintf(label, sizeof label, "normfuse L=%lld", (long long)L);
        if (graph_ok(g))
            nf_run(label, g, 5, loose);
        else
            fprintf(stderr, "%s: %s\n", label, graph_error(g));
        graph_free(g);
    }
}

/* Cases that must not fuse: the product or sum read twice, a graph output, a scale that is an
 * input, a broadcasting add, a softmax over a strided axis, a layernorm over middle dims; with
 * one fused pair beside them. */
static void nf_not_fused(void) {
    const int64_t xd[3] = {6, 9, 128}, rd[2] = {24, 96}, one[1] = {1}, bd[1] = {96}, md[3] = {4, 96, 6};
    graph *g = graph_new("normfuse-not");
    int32_t x = graph_input(g, "x", 3, xd), s = graph_weight_const(g, "s", 1, one, 0.5f);
    int32_t sv = graph_input(g, "sv", 1, one), a = graph_input(g, "a", 2, rd), b = graph_input(g, "b", 2, rd);
    int32_t bias = graph_input(g, "bias", 1, bd), m = graph_input(g, "m", 3, md), m2 = graph_input(g, "m2", 3, md);
    int32_t t1 = nf_smul(g, x, s), y1 = graph_softmax(g, t1, 2), y1b = graph_ewadd(g, t1, x); /* read twice */
    int32_t t2 = nf_smul(g, x, s), y2 = graph_softmax(g, t2, 2);                          /* an output */
    int32_t y3 = graph_softmax(g, nf_smul(g, x, sv), 2);                                  /* not constant */
    int32_t y4 = graph_softmax(g, nf_smul(g, x, s), 1);                                   /* strided */
    int32_t u5 = graph_ewadd(g, a, b), z5 = nf_layernorm(g, u5, -1, -1, 1, 0), z5b = graph_unary(g, OP_RELU, u5);
    int32_t z6 = nf_layernorm(g, graph_ewadd(g, a, bias), -1, -1, 1, 0);                  /* broadcast */
    int32_t z7 = nf_layernorm(g, graph_ewadd(g, m, m2), -1, -1, 1, 2);                    /* middle dims */
    int32_t y8 = graph_softmax(g, nf_smul(g, x, s), 2);                                   /* fused */
    const int32_t outs[] = {y1, y1b, t2, y2, y3, y4, z5, z5b, z6, z7, y8};
    const uint8_t loose[] = {1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++)
        graph_mark_output(g, outs[k]);
    CHECK(graph_ok(g));
    if (graph_ok(g))
        nf_run("normfuse not fused", g, 1, loose);
    else
        fprintf(stderr, "normfuse not fused: %s\n", graph_error(g));
    graph_free(g);
}

/* The row kernels alone (softmax over the last axis, layernorm over trailing dims) at odd lengths
 * and row counts against the CPU reference (run_case: rel L2 <= 1e-5, replays the same bits). */
static void nf_row_kernels(void) {
    static const int64_t lens[] = {1, 31, 128, 129, 768, 1000, 4096};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t L = lens[li];
        char label[64];
        ops_params p = P(OP_SOFTMAX);
        p.v[PM_AXIS] = 2;
        t_shape x = SH(3, 7, L);
        snprintf(label, sizeof label, "softmax rows L=%lld", (long long)L);
        run_case(label, OP_SOFTMAX, &p, 1, &x, F3, 0);
        p = P(OP_LAYERNORM);
        p.v[PM_AXIS] = 1;
        t_shape l3[3] = {SH(19, L), SH(L), SH(L)};
        snprintf(label, sizeof label, "layernorm rows L=%lld", (long long)L);
        run_case(label, OP_LAYERNORM, &p, 3, l3, F3, 0);
        p.v[PM_AXIS] = 2; /* trailing dims of 1 after the normalised one are rows too */
        p.v[PM_AXIS_END] = 3;
        t_shape l1[2] = {SH(2, 3, L, 1), SH(L)};
        snprintf(label, sizeof label, "layernorm rows L=%lld gamma", (long long)L);
        run_case(label, OP_LAYERNORM, &p, 2, l1, F3, 0);
    }
}

static void test_normfuse(void) {
    const int before = test_failed;
    nf_row_kernels();
    nf_fused_lengths();
    nf_not_fused();
    printf("normfuse: %s\n", test_failed == before ? "ok" : "FAILED");
}

static void mm_case(const char *label, t_shape a, t_shape b, int bias, ops_act act) {
    ops_params p = P(OP_MATMUL);
    p.v[PM_ACT] = act;
    t_shape s[3] = {a, b, SH(b.d[b.rank - 1])};
    run_case(label, OP_MATMUL, &p, bias ? 3 : 2, s, F3, 0);
}

static void test_matmul(void) {
    mm_case("mm odd", SH(33, 65), SH(65, 17), 0, OPS_ACT_NONE);
    mm_case("mm bias relu", SH(128, 64), SH(64, 96), 1, OPS_ACT_RELU);
    mm_case("mm batched 4d", SH(1, 12, 16, 8), SH(1, 12, 8, 16), 0, OPS_ACT_NONE);
    mm_case("mm tall (B shared) bias gelu", SH(3, 5, 7), SH(7, 9), 1, OPS_ACT_GELU);
    mm_case("mm A shared", SH(5, 7), SH(2, 7, 9), 0, OPS_ACT_NONE);
    mm_case("mm outer broadcast", SH(2, 1, 4, 6), SH(1, 3, 6, 5), 1, OPS_ACT_RELU);
    mm_case("mm sigmoid", SH(4, 8), SH(8, 8), 0, OPS_ACT_SIGMOID);
    mm_case("mm bias tanh", SH(4, 8), SH(8, 10), 1, OPS_ACT_TANH);
    mm_case("mm bert qkv", SH(128, 768), SH(768, 768), 1, OPS_ACT_NONE);
    mm_case("mm gpt2 fc bias gelu_tanh", SH(128, 768), SH(768, 3072), 1, OPS_ACT_GELU_TANH);
    mm_case("mm gelu_tanh odd", SH(33, 65), SH(65, 17), 0, OPS_ACT_GELU_TANH);
    mm_case("mm bias silu", SH(1, 1280), SH(1280, 100), 1, OPS_ACT_SILU);
    mm_case("mm batched silu", SH(2, 9, 16), SH(2, 16, 12), 0, OPS_ACT_SILU);
    mm_case("mm bias hardswish", SH(1, 960), SH(960, 1280), 1, OPS_ACT_HARDSWISH);
    mm_case("mm relu6", SH(17, 31), SH(31, 13), 0, OPS_ACT_RELU6);
    mm_case("mm bias relu6", SH(64, 64), SH(64, 64), 1, OPS_ACT_RELU6);
}

static void bin_case(const char *label, ops_type op, t_shape a, t_shape b, int pos_b) {
    ops_params p = P(op);
    t_shape s[2] = {a, b};
    int fills[2] = {op == OP_POW ? FILL_POS : FILL_NORMAL, pos_b ? FILL_POS : FILL_NORMAL};
    run_case(label, op, &p, 2, s, fills, 0);
}

static void un_case(const char *label, ops_type op, t_shape x, int pos) {
    ops_params p = P(op);
    int fills[1] = {pos ? FILL_POS : FILL_NORMAL};
    run_case(label, op, &p, 1, &x, fills, 0);
}

static void test_elementwise(void) {
    bin_case("ewadd same", OP_EWADD, SH(3, 4, 5), SH(3, 4, 5), 0);
    bin_case("ewadd odd", OP_EWADD, SH(7, 3), SH(7, 3), 0);
    bin_case("ewadd channel bcast", OP_EWADD, SH(2, 3, 4, 5), SH(3, 1, 1), 0);
    bin_case("ewmul outer", OP_EWMUL, SH(4, 1), SH(1, 5), 0);
    bin_case("ewmul same big", OP_EWMUL, SH(64, 1000), SH(64, 1000), 0);
    bin_case("ewsub scalar", OP_EWSUB, SH(1), SH(2, 3), 0);
    bin_case("ewdiv row", OP_EWDIV, SH(2, 3, 4), SH(4), 1);
    bin_case("pow", OP_POW, SH(2, 3, 4), SH(4), 0);
    ops_params p = P(OP_SMUL);
    t_shape s[2] = {SH(3, 5, 7), SH(1)};
    run_case("smul", OP_SMUL, &p, 2, s, F3, 0);
    un_case("relu", OP_RELU, SH(1000), 0);
    un_case("relu odd", OP_RELU, SH(3, 7), 0);
    un_case("sigmoid", OP_SIGMOID, SH(5, 13), 0);
    un_case("tanh", OP_TANH, SH(64), 0);
    un_case("gelu", OP_GELU, SH(2, 3072), 0);
    un_case("erf", OP_ERF, SH(101), 0);
    un_case("sqrt", OP_SQRT, SH(6, 6), 1);
    p = P(OP_CLIP);
    p.v[PM_LO] = ops_f2p(-0.5f);
    p.v[PM_HI] = ops_f2p(0.7f);
    t_shape cs = SH(9, 9);
    run_case("clip", OP_CLIP, &p, 1, &cs, F3, 0);
}

static void tr_case(const char *label, t_shape x, int32_t r, const int64_t *perm) {
    ops_params p = P(OP_TRANSPOSE);
    set_list(&p, r, perm);
    run_case(label, OP_TRANSPOSE, &p, 1, &x, F3, 0);
}

/* pad in each mode (rank 4, 2 and 1), resize nearest and bilinear in each coordinate mode (scales
 * and sizes, up and down), reducemax over inner, outer, strided and all dims: equal to the CPU
 * reference within run_case's 1e-5 (the kernels repeat the reference's operations: bit for bit). */
static void data_op_cases(void) {
    const struct {
        const char *label;
        t_shape x;
        int32_t n;
        int64_t pads[8];
        int mode;
    } pads[] = {
        {"pad constant 4d", SH(2, 3, 7, 9), 8, {0, 1, 2, 3, 1, 0, 4, 1}, 0},
        {"pad reflect 4d", SH(2, 3, 7, 9), 8, {0, 0, 3, 8, 0, 0, 6, 2}, 1},
        {"pad edge 4d", SH(1, 4, 5, 33), 8, {1, 2, 0, 7, 0, 1, 3, 0}, 2},
        {"pad reflect 2d", SH(17, 40), 4, {5, 1, 11, 39}, 1},
        {"pad edge 1d", SH(1000), 2, {300, 17}, 2},
    };
    for (int k = 0; k < (int)(sizeof pads / sizeof pads[0]); k++) {
        ops_params p = P(OP_PAD);
        set_list(&p, pads[k].n, pads[k].pads);
        p.v[PM_MODE] = pads[k].mode;
        p.v[PM_VALUE] = ops_f2p(-2.5f);
        run_case(pads[k].label, OP_PAD, &p, 1, &pads[k].x, F3, 0);
    }
    const struct {
        const char *label;
        int mode, coord, nearest;
        float sh, sw;
        int64_t oh, ow;
    } rs[] = {
        {"resize nearest half_pixel x2", 0, 0, 0, 2.0f, 2.0f, 26, 34},
        {"resize nearest asymmetric floor", 0, 1, 2, 1.5f, 0.5f, 19, 8},
        {"resize nearest align_corners ceil", 0, 2, 3, 0.0f, 0.0f, 40, 9},
        {"resize nearest pytorch round_prefer_ceil", 0, 3, 1, 0.0f, 0.0f, 5, 1},
        {"resize linear half_pixel x2", 1, 0, 0, 2.0f, 2.0f, 26, 34},
        {"resize linear asymmetric", 1, 1, 0, 0.6f, 1.7f, 7, 28},
        {"resize linear align_corners", 1, 2, 0, 0.0f, 0.0f, 31, 50},
        {"resize linear pytorch_half_pixel", 1, 3, 0, 0.0f, 0.0f, 1, 11},
    };
    const t_shape rx = SH(2, 3, 13, 17);
    for (int k = 0; k < (int)(sizeof rs / sizeof rs[0]); k++) {
        ops_params p = P(OP_RESIZE);
        set_list(&p, 4, (int64_t[]){2, 3, rs[k].oh, rs[k].ow});
        p.v[PM_MODE] = rs[k].mode;
        p.v[PM_COORD] = rs[k].coord;
        p.v[PM_NEAREST] = rs[k].nearest;
        p.v[PM_SCALE_H] = ops_f2p(rs[k].sh);
        p.v[PM_SCALE_W] = ops_f2p(rs[k].sw);
        run_case(rs[k].label, OP_RESIZE, &p, 1, &rx, F3, 0);
    }
    const struct {
        const char *label;
        t_shape x;
        int32_t n;
        int64_t axes[4];
        int keep;
    } rm[] = {
        {"reducemax last", SH(4, 7, 300), 1, {2}, 1},
        {"reducemax outer", SH(5, 9, 33), 1, {0}, 0},
        {"reducemax spatial", SH(2, 16, 13, 11), 2, {2, 3}, 1},
        {"reducemax strided", SH(3, 5, 7, 2), 2, {1, 3}, 0},
        {"reducemax all", SH(6, 1000), 0, {0}, 1},
    };
    for (int k = 0; k < (int)(sizeof rm / sizeof rm[0]); k++) {
        ops_params p = P(OP_REDUCEMAX);
        set_list(&p, rm[k].n, rm[k].axes);
        p.v[PM_KEEPDIMS] = rm[k].keep;
        run_case(rm[k].label, OP_REDUCEMAX, &p, 1, &rm[k].x, F3, 0);
    }
}

static void test_data(void) {
    tr_case("transpose 3d", SH(2, 3, 4), 3, (int64_t[]){2, 0, 1});
    tr_case("transpose heads", SH(1, 8, 12, 16), 4, (int64_t[]){0, 2, 1, 3});
    tr_case("transpose keys", SH(1, 8, 12, 16), 4, (int64_t[]){0, 2, 3, 1});
    tr_case("transpose 2d", SH(5, 7), 2, (int64_t[]){1, 0});
    tr_case("transpose identity", SH(2, 3, 4), 3, (int64_t[]){0, 1, 2});
    /* the innermost dim moves: the tiled path, with partial tiles on both sides */
    tr_case("transpose keys tiled", SH(2, 70, 5, 45), 4, (int64_t[]){0, 2, 3, 1});
    tr_case("transpose 2d tiled", SH(33, 65), 2, (int64_t[]){1, 0});
    tr_case("transpose 6d tiled", SH(2, 3, 4, 5, 6, 7), 6, (int64_t[]){5, 1, 3, 0, 4, 2});
    tr_case("transpose bert keys b8", SH(8, 128, 12, 64), 4, (int64_t[]){0, 2, 3, 1});

    ops_params p = P(OP_CONCAT);
    p.v[PM_AXIS] = 1;
    t_shape c1[3] = {SH(2, 3, 4), SH(2, 5, 4), SH(2, 1, 4)};
    run_case("concat axis 1", OP_CONCAT, &p, 3, c1, F3, 0);
    p.v[PM_AXIS] = 0;
    t_shape c2[2] = {SH(2, 3), SH(4, 3)};
    run_case("concat axis 0", OP_CONCAT, &p, 2, c2, F3, 0);
    p.v[PM_AXIS] = 2;
    t_shape c3[2] = {SH(2, 2, 3), SH(2, 2, 5)};
    run_case("concat last axis", OP_CONCAT, &p, 2, c3, F3, 0);
    enum { NCAT = 12 };
    t_shape c4[NCAT];
    int fills[NCAT];
    for (int i = 0; i < NCAT; i++) {
        c4[i] = SH(1, 1 + i, 3, 3);
        fills[i] = FILL_NORMAL;
    }
    p.v[PM_AXIS] = 1;
    run_case("concat 12 inputs", OP_CONCAT, &p, NCAT, c4, fills, 0);

    p = P(OP_SPLIT);
    p.v[PM_AXIS] = 1;
    p.v[PM_PARTS] = 3;
    t_shape sx = SH(4, 6, 5);
    run_case("split equal", OP_SPLIT, &p, 1, &sx, F3, 0);
    p.v[PM_AXIS] = 2;
    p.v[PM_PARTS] = 2;
    set_list(&p, 2, (int64_t[]){2, 4});
    sx = SH(3, 2, 6);
    run_case("split sizes", OP_SPLIT, &p, 1, &sx, F3, 0);

    p = P(OP_RESHAPE);
    set_list(&p, 2, (int64_t[]){6, 4});
    sx = SH(2, 3, 4);
    run_case("reshape", OP_RESHAPE, &p, 1, &sx, F3, 0);

    p = P(OP_GATHER);
    t_shape g1[2] = {SH(50, 8), SH(3, 4)};
    int gf[2] = {FILL_NORMAL, FILL_IDS};
    run_case("gather rows", OP_GATHER, &p, 2, g1, gf, 0);
    t_shape g2[2] = {SH(10), SH(5)};
    run_case("gather scalars", OP_GATHER, &p, 2, g2, gf, 0);

    p = P(OP_ENLARGE);
    p.v[PM_KH] = p.v[PM_KW] = 3;
    sx = SH(4, 3, 1, 1);
    run_case("enlarge 1x1 to 3x3", OP_ENLARGE, &p, 1, &sx, F3, 0);
    p.v[PM_KH] = p.v[PM_KW] = 5;
    sx = SH(2, 2, 3, 3);
    run_case("enlarge 3x3 to 5x5", OP_ENLARGE, &p, 1, &sx, F3, 0);
    data_op_cases();
}

static void test_constants(void) {
    for (int no_fold = 0; no_fold < 2; no_fold++) {
        ops_params p = P(OP_CONST_IMM);
        p.v[PM_N] = 5;
        run_case("const_imm", OP_CONST_IMM, &p, 0, NULL, F3, no_fold);
        p = P(OP_CONST_ICONV);
        p.v[PM_C] = 3;
        p.v[PM_KH] = 3;
        p.v[PM_KW] = 1;
        run_case("const_iconv", OP_CONST_ICONV, &p, 0, NULL, F3, no_fold);
        p = P(OP_CONST_ONES);
        set_list(&p, 3, (int64_t[]){2, 3, 4});
        run_case("const_ones", OP_CONST_ONES, &p, 0, NULL, F3, no_fold);
        p = P(OP_CONST_POOL);
        p.v[PM_C] = 4;
        p.v[PM_KH] = 3;
        p.v[PM_KW] = 3;
        run_case("const_pool", OP_CONST_POOL, &p, 0, NULL, F3, no_fold);
    }
}

static void pool_case(const char *label, ops_type op, t_shape x, int k, int s, int pad_mode, int pad, int count_pad) {
    ops_params p = P(op);
    p.v[PM_KH] = p.v[PM_KW] = k;
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = s;
    p.v[PM_PAD] = pad_mode;
    if (pad_mode == OPS_PAD_EXPLICIT)
        p.v[PM_PAD_T] = p.v[PM_PAD_L] = p.v[PM_PAD_B] = p.v[PM_PAD_R] = pad;
    if (op == OP_AVGPOOL2D)
        p.v[PM_COUNT_PAD] = count_pad;
    run_case(label, op, &p, 1, &x, F3, 0);
}

static void test_pools_norms(void) {
    pool_case("avgpool pad count", OP_AVGPOOL2D, SH(1, 4, 9, 9), 3, 2, OPS_PAD_EXPLICIT, 1, 1);
    pool_case("avgpool pad exclude", OP_AVGPOOL2D, SH(1, 4, 9, 9), 3, 2, OPS_PAD_EXPLICIT, 1, 0);
    pool_case("avgpool same asym", OP_AVGPOOL2D, SH(2, 3, 10, 10), 3, 2, OPS_PAD_SAME, 0, 0);
    pool_case("avgpool same/1 count", OP_AVGPOOL2D, SH(1, 3, 8, 8), 3, 1, OPS_PAD_SAME, 0, 1);
    pool_case("maxpool pad", OP_MAXPOOL2D, SH(1, 8, 16, 16), 3, 2, OPS_PAD_EXPLICIT, 1, 0);
    pool_case("maxpool same asym", OP_MAXPOOL2D, SH(1, 4, 10, 10), 3, 2, OPS_PAD_SAME, 0, 0);
    pool_case("maxpool valid", OP_MAXPOOL2D, SH(1, 2, 13, 13), 3, 2, OPS_PAD_VALID, 0, 0);

    ops_params p = P(OP_GLOBALAVGPOOL);
    t_shape x = SH(2, 8, 7, 7);
    run_case("globalavgpool 7x7", OP_GLOBALAVGPOOL, &p, 1, &x, F3, 0);
    x = SH(1, 4, 13, 13);
    run_case("globalavgpool 13x13", OP_GLOBALAVGPOOL, &p, 1, &x, F3, 0);

    p = P(OP_BATCHNORM);
    t_shape b1[5] = {SH(2, 8, 5, 5), SH(8), SH(8), SH(8), SH(8)};
    int bf[5] = {FILL_NORMAL, FILL_NORMAL, FILL_NORMAL, FILL_NORMAL, FILL_POS};
    run_case("batchnorm 4d", OP_BATCHNORM, &p, 5, b1, bf, 0);
    p.v[PM_EPS] = ops_f2p(1e-3f);
    t_shape b2[5] = {SH(4, 6), SH(6), SH(6), SH(6), SH(6)};
    run_case("batchnorm 2d", OP_BATCHNORM, &p, 5, b2, bf, 0);
    p.v[PM_EPS] = ops_f2p(1e-12f);
    run_case("batchnorm tiny eps", OP_BATCHNORM, &p, 5, b1, bf, 0);

    p = P(OP_SOFTMAX);
    p.v[PM_AXIS] = 1;
    x = SH(4, 128);
    run_case("softmax rows", OP_SOFTMAX, &p, 1, &x, F3, 0);
    x = SH(3, 1000);
    run_case("softmax 1000", OP_SOFTMAX, &p, 1, &x, F3, 0);
    x = SH(2, 5, 3);
    run_case("softmax middle axis", OP_SOFTMAX, &p, 1, &x, F3, 0);
    p.v[PM_AXIS] = 3;
    x = SH(1, 12, 128, 128);
    run_case("softmax attention", OP_SOFTMAX, &p, 1, &x, F3, 0);

    p = P(OP_LAYERNORM);
    p.v[PM_AXIS] = 1;
    p.v[PM_EPS] = ops_f2p(1e-12f);
    t_shape l1[3] = {SH(8, 768), SH(768), SH(768)};
    run_case("layernorm bert", OP_LAYERNORM, &p, 3, l1, F3, 0);
    t_shape l2[2] = {SH(2, 3, 10), SH(3, 10)};
    p.v[PM_EPS] = ops_f2p(1e-5f);
    run_case("layernorm gamma only", OP_LAYERNORM, &p, 2, l2, F3, 0);
    x = SH(4, 16);
    run_case("layernorm plain", OP_LAYERNORM, &p, 1, &x, F3, 0);
    /* over the channels of NCHW (axis_end before the rank): the per-position kernel, at the
     * shapes of convnext_tiny's stages (wide position tiles, then narrow ones) and odd sizes */
    p.v[PM_EPS] = ops_f2p(1e-6f);
    p.v[PM_AXIS_END] = 2;
    t_shape c1[3] = {SH(1, 96, 56, 56), SH(96), SH(96)};
    run_case("layernorm channels 96x56x56", OP_LAYERNORM, &p, 3, c1, F3, 0);
    t_shape c2[3] = {SH(1, 768, 7, 7), SH(768), SH(768)};
    run_case("layernorm channels 768x7x7", OP_LAYERNORM, &p, 3, c2, F3, 0);
    t_shape c3[2] = {SH(3, 5, 7, 3), SH(5)};
    run_case("layernorm channels odd", OP_LAYERNORM, &p, 2, c3, F3, 0);
    p.v[PM_AXIS_END] = 3;
    t_shape c4[3] = {SH(2, 4, 6, 33), SH(4, 6), SH(4, 6)};
    run_case("layernorm middle block", OP_LAYERNORM, &p, 3, c4, F3, 0);
}

/* ---- device part: the runtime -------------------------------------------------------------- */

/* Splits whose parts are consecutive runs of the input (every axis before the split axis of
 * size 1) become views, no kernel: a batch-1 channel split of a convolution's output, read by two
 * convolutions and an output, and a part that is itself split again; a concat of two running
 * nodes' outputs (batch 1, channels) is written in place by them. Not at batch 2, and not where a
 * part would start off a 16-byte boundary (9x7 planes: the kernels run). All against the CPU
 * executor. */
static void test_runtime_split_views(void) {
    char err[1024];
    for (int64_t n = 1; n <= 2; n++)
        for (int64_t h = 8; h <= 9; h++) {
            graph *g = graph_new("views");
            const int64_t xd[4] = {n, 6, h, 7}, wd[4] = {10, 6, 3, 3}, vd[4] = {5, 3, 1, 1};
            int32_t x = graph_input(g, "x", 4, xd);
            int32_t c = graph_conv2d(g, x, graph_weight_he(g, "w", 4, wd), 1, 1, OPS_PAD_SAME, OPS_ACT_RELU);
            int32_t parts[3], sub[2];
            graph_split(g, c, 1, 3, (int64_t[]){3, 4, 3}, parts);
            graph_split(g, parts[1], 1, 2, NULL, sub);
            int32_t a = graph_conv2d(g, parts[0], graph_weight_he(g, "v0", 4, vd), 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
            int32_t b = graph_conv2d(g, parts[2], graph_weight_he(g, "v2", 4, vd), 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
            int32_t e1 = graph_unary(g, OP_TANH, parts[0]), e2 = graph_unary(g, OP_SIGMOID, b);
            graph_mark_output(g, graph_ewadd(g, a, b));
            graph_mark_output(g, sub[1]);
            graph_mark_output(g, graph_concat(g, 1, 2, (int32_t[]){e1, e2}));
            CHECK(graph_ok(g));
            float *cpu[3] = {0}, gpu[2 * 8 * 63];
            const int64_t cnt[3] = {n * 5 * h * 7, n * 2 * h * 7, n * 8 * h * 7};
            CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
            rt_ctx *ctx = graph_ok(g) ? rt_ctx_new(g, NULL, err, sizeof err) : NULL;
            CHECK(ctx != NULL);
            if (ctx && cpu[0] && cpu[1] && cpu[2]) {
                rt_info info;
                rt_get_info(ctx, &info);
                CHECK_EQ_INT(info.nodes_aliased, n == 1 && h == 8 ? 3 : 0);
                CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
                for (int32_t j = 0; j < 3; j++) {
                    CHECK_EQ_INT(rt_get_output(ctx, j, gpu, err, sizeof err), 0);
                    CHECK(exec_compare(gpu, cpu[j], cnt[j]).rel_l2 <= 1e-5);
                }
            }
            rt_ctx_free(ctx);
            for (int32_t j = 0; j < 3; j++)
                free(cpu[j]);
            graph_free(g);
        }
}

/* A graph with a weight-only subgraph, a reshape alias, a split/concat, a dead branch and an
 * output in the middle; compared with the CPU executor. */
static void test_runtime_features(void) {
    char err[1024];
    graph *g = graph_new("features");
    const int64_t xd[4] = {1, 8, 12, 12}, wd[4] = {8, 8, 3, 3};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t w1 = graph_weight_he(g, "w1", 4, wd), w2 = graph_weight_he(g, "w2", 4, wd);
    int32_t ws = graph_ewadd(g, w1, w2); /* weight-only: folded */
    int32_t c = graph_conv2d(g, x, ws, 1, 1, OPS_PAD_SAME, OPS_ACT_RELU);
    int32_t r = graph_reshape(g, c, 2, (int64_t[]){8, 144});
    int32_t parts[2];
    graph_split(g, r, 0, 2, NULL, parts);
    int32_t cat = graph_concat(g, 0, 2, (int32_t[]){parts[1], parts[0]});
    int32_t dead = graph_unary(g, OP_SIGMOID, cat); /* reaches no output */
    (void)dead;
    int32_t y = graph_unary(g, OP_TANH, cat);
    int32_t chain = y;
    for (int i = 0; i < 6; i++)
        chain = graph_unary(g, i % 2 ? OP_RELU : OP_GELU, chain);
    graph_mark_output(g, r); /* an intermediate that is also an output */
    graph_mark_output(g, chain);
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "features: %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    float *cpu[2] = {0}, gpu0[8 * 144], gpu1[8 * 144];
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
    rt_ctx *ctx = rt_ctx_new(g, NULL, err, sizeof err);
    CHECK(ctx != NULL);
    if (ctx && cpu[0] && cpu[1]) {
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
        CHECK_EQ_INT(rt_get_output(ctx, 0, gpu0, err, sizeof err), 0);
        CHECK_EQ_INT(rt_get_output(ctx, 1, gpu1, err, sizeof err), 0);
        CHECK(exec_compare(gpu0, cpu[0], 8 * 144).rel_l2 <= 1e-4);
        CHECK(exec_compare(gpu1, cpu[1], 8 * 144).rel_l2 <= 1e-4);
        rt_info info;
        rt_get_info(ctx, &info);
        CHECK_EQ_INT(info.nodes_folded, 1);
        CHECK_EQ_INT(info.nodes_aliased, 2); /* the reshape and the split on axis 0 */
        CHECK_EQ_INT(info.nodes_dead, 1);
        CHECK(info.graph == 1);
        CHECK(info.arena_bytes < info.unplanned_bytes);
        CHECK_EQ_INT(info.weight_bytes, 8 * 8 * 3 * 3 * 4); /* w1, w2 dropped after folding */
        CHECK_EQ_INT(info.device_bytes,
                     info.arena_bytes + info.weight_bytes + info.input_bytes + info.workspace_bytes);
        /* timing: positive, finite */
        double ms[5];
        CHECK_EQ_INT(rt_time(ctx, 2, 5, ms, err, sizeof err), 0);
        for (int i = 0; i < 5; i++)
            CHECK(ms[i] > 0.0 && ms[i] < 1000.0);
        /* errors a caller can cause */
        CHECK_EQ_INT(rt_set_input(ctx, 3, gpu0, err, sizeof err), -1);
        CHECK_STR_CONTAINS(err, "no graph input 3");
        CHECK_EQ_INT(rt_get_output(ctx, 2, gpu0, err, sizeof err), -1);
        CHECK_STR_CONTAINS(err, "no graph output 2");
        /* no fold: the same numbers, more nodes */
        rt_opts o = {0};
        o.no_fold = 1;
        rt_ctx *c2 = rt_ctx_new(g, &o, err, sizeof err);
        CHECK(c2 != NULL);
        if (c2) {
            rt_get_info(c2, &info);
            CHECK_EQ_INT(info.nodes_folded, 0);
            CHECK_EQ_INT(rt_run(c2, err, sizeof err), 0);
            CHECK_EQ_INT(rt_get_output(c2, 1, gpu0, err, sizeof err), 0);
            CHECK(exec_compare(gpu0, gpu1, 8 * 144).rel_l2 <= 1e-6);
            rt_ctx_free(c2);
        }
    }
    rt_ctx_free(ctx);
    free(cpu[0]);
    free(cpu[1]);
    graph_free(g);

    /* a 1 KiB workspace limit is honoured: the convolution (asymmetric padding, so cuDNN would need a
     * padded copy and the GEMM path an im2col buffer) takes a path that needs none */
    g = graph_new("wslimit");
    const int64_t bx[4] = {1, 16, 64, 64}, bw[4] = {16, 16, 3, 3};
    x = graph_input(g, "x", 4, bx);
    int32_t w = graph_weight_he(g, "w", 4, bw);
    graph_mark_output(g, graph_conv2d(g, x, w, 2, 2, OPS_PAD_SAME, OPS_ACT_NONE));
    rt_opts o = {0};
    o.workspace_limit = 1024;
    ctx = rt_ctx_new(g, &o, err, sizeof err);
    CHECK(ctx != NULL);
    float *ref[1] = {0}, *got = malloc(16 * 32 * 32 * sizeof(float));
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, ref, err, sizeof err), 0);
    if (ctx && ref[0]) {
        rt_info info;
        rt_get_info(ctx, &info);
        CHECK(info.workspace_bytes <= 1024);
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
        CHECK_EQ_INT(rt_get_output(ctx, 0, got, err, sizeof err), 0);
        CHECK(exec_compare(got, ref[0], 16 * 32 * 32).rel_l2 <= 1e-4);
    }
    rt_ctx_free(ctx);
    free(ref[0]);
    free(got);
    /* a bad TASC_RT_WORKSPACE_MB is refused, naming it */
    setenv("TASC_RT_WORKSPACE_MB", "lots", 1);
    ctx = rt_ctx_new(g, NULL, err, sizeof err);
    CHECK(ctx == NULL);
    CHECK_STR_CONTAINS(err, "TASC_RT_WORKSPACE_MB='lots'");
    unsetenv("TASC_RT_WORKSPACE_MB");
    rt_ctx_free(ctx);
    graph_free(g);

    /* an invalid graph is refused with the validator's message */
    g = graph_new("invalid");
    CHECK(rt_ctx_new(g, NULL, err, sizeof err) == NULL);
    CHECK(strlen(err) > 0);
    graph_free(g);
}

/* The profiles: a 1024^3 product between two small elementwise nodes dominates both the times
 * alone and the costs in the run (the whole run less the run without the node). */
static void test_profile(void) {
    char err[1024];
    graph *g = graph_new("profile");
    int32_t x = graph_input(g, "x", 2, (int64_t[]){1024, 1024});
    int32_t h = graph_unary(g, OP_RELU, x);
    h = graph_matmul(g, h, graph_weight_he(g, "w", 2, (int64_t[]){1024, 1024}), OPS_ACT_NONE);
    graph_mark_output(g, graph_unary(g, OP_TANH, h));
    CHECK(graph_ok(g));
    rt_ctx *ctx = rt_ctx_new(g, NULL, err, sizeof err);
    CHECK(ctx != NULL);
    if (ctx) {
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
        int32_t ids[3];
        double alone[3], in_run[3], whole = 0.0;
        CHECK_EQ_INT(rt_profile(ctx, 10, ids, alone, err, sizeof err), 0);
        CHECK_EQ_INT(rt_profile_in_run(ctx, 10, in_run, &whole, err, sizeof err), 0);
        CHECK(g->nodes[ids[1]].op == OP_MATMUL);
        CHECK(whole > 0.0 && isfinite(whole));
        CHECK(alone[1] > alone[0] && alone[1] > alone[2]);
        CHECK(in_run[1] > in_run[0] && in_run[1] > in_run[2]);
        CHECK(in_run[1] > 0.5 * alone[1] && in_run[1] < 2.0 * alone[1]);
        CHECK(in_run[1] < whole);
        printf("profile: alone %.1f / %.1f / %.1f us, in the run %.1f / %.1f / %.1f us of %.1f us\n", alone[0],
               alone[1], alone[2], in_run[0], in_run[1], in_run[2], whole);
    }
    rt_ctx_free(ctx);
    graph_free(g);
}

/* Measured costs: positive, cached, constants free, bigger work takes longer. */
static void test_cost_measure(void) {
    char err[512];
    rt_cost_cache *c = rt_cost_cache_new();
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    p.v[PM_ACT] = OPS_ACT_RELU;
    ops_shape small[2] = {ops_shape_make(4, (int64_t[]){1, 64, 56, 56}), ops_shape_make(4, (int64_t[]){64, 64, 3, 3})};
    ops_shape big[2] = {ops_shape_make(4, (int64_t[]){8, 64, 56, 56}), ops_shape_make(4, (int64_t[]){256, 64, 3, 3})};
    double us1 = 0, us2 = 0, us3 = 0;
    CHECK_EQ_INT(rt_cost_measure(c, OP_CONV2D, &p, 2, small, &us1, err, sizeof err), 0);
    CHECK_EQ_INT(rt_cost_measure(c, OP_CONV2D, &p, 2, big, &us2, err, sizeof err), 0);
    CHECK_EQ_INT(rt_cost_measure(c, OP_CONV2D, &p, 2, small, &us3, err, sizeof err), 0);
    printf("measured conv 1x64x56x56*64x3x3: %.2f us, 8x64x56x56*256x3x3: %.2f us\n", us1, us2);
    CHECK(us1 > 0.0 && us1 < 10000.0);
    CHECK(us2 > 2.0 * us1);
    CHECK(us3 == us1); /* from the cache */
    CHECK_EQ_INT(rt_cost_cache_size(c), 2);
    ops_params_default(OP_MATMUL, &p);
    ops_shape mm[2] = {ops_shape_make(2, (int64_t[]){128, 768}), ops_shape_make(2, (int64_t[]){768, 3072})};
    CHECK_EQ_INT(rt_cost_measure(c, OP_MATMUL, &p, 2, mm, &us1, err, sizeof err), 0);
    printf("measured matmul 128x768x3072: %.2f us\n", us1);
    CHECK(us1 > 0.0 && us1 < 10000.0);
    ops_params_default(OP_CONST_ONES, &p);
    p.n_list = 1;
    p.list[0] = 1000;
    CHECK_EQ_INT(rt_cost_measure(c, OP_CONST_ONES, &p, 0, NULL, &us1, err, sizeof err), 0);
    CHECK(us1 == 0.0);
    ops_params_default(OP_GATHER, &p);
    ops_shape gi[2] = {ops_shape_make(2, (int64_t[]){30522, 768}), ops_shape_make(1, (int64_t[]){128})};
    CHECK_EQ_INT(rt_cost_measure(c, OP_GATHER, &p, 2, gi, &us1, err, sizeof err), 0);
    CHECK(us1 > 0.0);
    /* an invalid node is refused with the shape message */
    ops_params_default(OP_MATMUL, &p);
    ops_shape badmm[2] = {ops_shape_make(2, (int64_t[]){4, 5}), ops_shape_make(2, (int64_t[]){6, 7})};
    CHECK_EQ_INT(rt_cost_measure(c, OP_MATMUL, &p, 2, badmm, &us1, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "matmul");
    rt_cost_cache_free(c);
}

/* Whole zoo models on the GPU against the CPU executor (generated inputs, seed 0). */
static void test_models(void) {
    const char *names[] = {"squeezenet", "nasrnn", "bert"};
    for (size_t m = 0; m < sizeof names / sizeof names[0]; m++) {
        char err[1024];
        graph *g = zoo_build(names[m], 1, err, sizeof err);
        CHECK(g != NULL);
        if (!g)
            continue;
        float *cpu[8] = {0};
        CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
        rt_opts o = {0};
        o.check_tol = 1e-4;
        rt_ctx *c = rt_ctx_new(g, &o, err, sizeof err);
        if (!c)
            fprintf(stderr, "%s: %s\n", names[m], err);
        CHECK(c != NULL);
        for (int32_t j = 0; c && j < g->n_outputs; j++) {
            int64_t n = ops_shape_numel(&g->tensors[g->outputs[j]].shape);
            float *out = malloc((size_t)n * sizeof(float));
            CHECK_EQ_INT(rt_run(c, err, sizeof err), 0);
            CHECK_EQ_INT(rt_get_output(c, j, out, err, sizeof err), 0);
            exec_diff d = exec_compare(out, cpu[j], n);
            rt_info info;
            rt_get_info(c, &info);
            printf("model %-10s output %d: rel L2 vs CPU %.3g, worst node %.3g (%s), graph %d, %d nodes, "
                   "arena %.2f MiB (unplanned %.2f)\n",
                   names[m], (int)j, d.rel_l2, info.check_worst, info.check_worst_node, info.graph, info.nodes_run,
                   (double)info.arena_bytes / 1048576.0, (double)info.unplanned_bytes / 1048576.0);
            CHECK(d.rel_l2 <= 1e-4);
            CHECK_EQ_INT(info.check_failed, 0);
            free(out);
        }
        rt_ctx_free(c);
        for (int32_t j = 0; j < g->n_outputs; j++)
            free(cpu[j]);
        graph_free(g);
    }
}

/* ---- scatter store: movement trees executed by the matmul's store (rt_scatter.c) ------------- */

/* Attention with its head split and merge as exported models have them: bert's form (one qkv
 * product split in three, q and v (0,2,1,3), k (0,2,3,1)) at batch 2, and vit's (the product
 * (S, 1, 3C) -> (S, 1, 3, C) -> (3, S, 1, C), gathers 0, 1, 2, (S, H, D) -> (H, S, D), K^T). */
static graph *scatter_graph(int vit) {
    enum { S = 20, H = 4, D = 8, C = H * D };
    graph *g = graph_new(vit ? "scatter_vit" : "scatter_bert");
    const int64_t nbt = vit ? S : 2, xd[3] = {nbt, vit ? 1 : S, C}, wd[2] = {C, 3 * C}, wod[2] = {C, C};
    int32_t x = graph_input(g, "x", 3, xd), w = graph_weight_he(g, "wqkv", 2, wd);
    int32_t wo = graph_weight_he(g, "wo", 2, wod);
    int32_t o = graph_matmul(g, x, w, OPS_ACT_NONE), q, k, v;
    static const int32_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1}, p021[3] = {0, 2, 1}, p102[3] = {1, 0, 2};
    if (!vit) {
        int32_t parts[3];
        const int64_t hd[4] = {2, S, H, D};
        graph_split(g, o, 2, 3, NULL, parts);
        q = graph_transpose(g, graph_reshape(g, parts[0], 4, hd), 4, p0213);
        k = graph_transpose(g, graph_reshape(g, parts[1], 4, hd), 4, p0231);
        v = graph_transpose(g, graph_reshape(g, parts[2], 4, hd), 4, p0213);
    } else {
        static const int32_t p2013[4] = {2, 0, 1, 3};
        const int64_t r1[4] = {S, 1, 3, C}, r2[3] = {S, H, D};
        int32_t t = graph_transpose(g, graph_reshape(g, o, 4, r1), 4, p2013), qkv[3];
        for (int32_t i = 0; i < 3; i++) {
            char name[16];
            snprintf(name, sizeof name, "id%d", (int)i);
            int32_t in[2] = {t, graph_weight_const(g, name, 0, NULL, (float)i)}, out[OPS_MAX_OUTPUTS];
            ops_params pg = P(OP_GATHER);
            graph_add(g, NULL, OP_GATHER, &pg, 2, in, out);
            qkv[i] = graph_transpose(g, graph_reshape(g, out[0], 3, r2), 3, p102);
        }
        q = qkv[0];
        k = graph_transpose(g, qkv[1], 3, p021);
        v = qkv[2];
    }
    int32_t att = graph_softmax(g, graph_matmul(g, q, k, OPS_ACT_NONE), vit ? 2 : 3);
    int32_t ctx = graph_matmul(g, att, v, OPS_ACT_NONE);
    const int64_t md[3] = {nbt, vit ? 1 : S, C};
    int32_t merged = vit ? graph_reshape(g, graph_transpose(g, ctx, 3, p102), 3, md)
                         : graph_reshape(g, graph_transpose(g, ctx, 4, p0213), 3, md);
    graph_mark_output(g, graph_matmul(g, merged, wo, OPS_ACT_NONE));
    return g;
}

static void test_scatter_runtime(void) {
    for (int vit = 0; vit < 2; vit++) {
        char err[1024];
        graph *g = scatter_graph(vit);
        CHECK(graph_ok(g));
        if (!graph_ok(g)) {
            fprintf(stderr, "scatter graph: %s\n", graph_error(g));
            graph_free(g);
            continue;
        }
        const int64_t n = ops_shape_numel(&g->tensors[g->outputs[0]].shape);
        float *cpu[1] = {0}, *on = malloc((size_t)n * sizeof(float)), *off = malloc((size_t)n * sizeof(float));
        CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
        rt_opts o = {0};
        o.check_tol = 1e-4; /* every node checked, the scattered products through their placement */
        rt_ctx *c = rt_ctx_new(g, &o, err, sizeof err);
        if (!c)
            fprintf(stderr, "scatter: %s\n", err);
        CHECK(c != NULL);
        rt_info info = {0};
        if (c) {
            CHECK_EQ_INT(rt_run(c, err, sizeof err), 0);
            CHECK_EQ_INT(rt_get_output(c, 0, on, err, sizeof err), 0);
            rt_get_info(c, &info);
            CHECK(exec_compare(on, cpu[0], n).rel_l2 <= 1e-5);
            CHECK_EQ_INT(info.check_failed, 0);
            CHECK_EQ_INT(info.scatter_stores, 2); /* the qkv product and the head merge */
            CHECK(info.nodes_scattered >= (vit ? 9 : 7));
            CHECK(info.graph == 1);
            printf("scatter %s: %d movement nodes in %d stores, %d nodes run, rel L2 vs CPU %.3g\n",
                   vit ? "vit" : "bert", (int)info.nodes_scattered, (int)info.scatter_stores, (int)info.nodes_run,
                   exec_compare(on, cpu[0], n).rel_l2);
        }
        rt_ctx_free(c);
        setenv("TASC_NO_SCATTER", "1", 1); /* as --no-scatter: every move a kernel, the same numbers */
        c = rt_ctx_new(g, NULL, err, sizeof err);
        unsetenv("TASC_NO_SCATTER");
        CHECK(c != NULL);
        if (c) {
            rt_info i2;
            CHECK_EQ_INT(rt_run(c, err, sizeof err), 0);
            CHECK_EQ_INT(rt_get_output(c, 0, off, err, sizeof err), 0);
            rt_get_info(c, &i2);
            CHECK_EQ_INT(i2.nodes_scattered, 0);
            CHECK_EQ_INT(i2.scatter_stores, 0);
            CHECK(i2.nodes_run > info.nodes_run);
            CHECK(exec_compare(off, cpu[0], n).rel_l2 <= 1e-5);
        }
        rt_ctx_free(c);
        free(cpu[0]);
        free(on);
        free(off);
        graph_free(g);
    }
}

/* ---- scatter stores at precision 3xtf32 (issue 17) ------------------------------------------- */

/* The graph's output through a context of precision prec (scatter off when no_scatter), node checks
 * on; 0 and *info when it ran. */
static int scatter_run(graph *g, int prec, int no_scatter, float *out, rt_info *info) {
    char err[1024];
    rt_opts o = {0};
    o.precision = prec;
    o.no_scatter = no_scatter;
    o.check_tol = 1e-4; /* every node checked, the scattered products through their placement */
    rt_ctx *c = rt_ctx_new(g, &o, err, sizeof err);
    if (!c) {
        fprintf(stderr, "scatter 3xtf32: %s\n", err);
        return -1;
    }
    int rc = rt_run(c, err, sizeof err) == 0 && rt_get_output(c, 0, out, err, sizeof err) == 0 ? 0 : -1;
    if (rc)
        fprintf(stderr, "scatter 3xtf32: %s\n", err);
    rt_get_info(c, info);
    rt_ctx_free(c);
    return rc;
}

/* The 3xtf32 choice for the qkv product of the bert form as its store runs it (20 rows, 2 items). */
static mm_choice scatter_qkv_choice(int *from) {
    mm_problem p;
    mm_problem_init(&p, 20, 96, 32, 2);
    mm_choice ch = {0, 1, 1, 0};
    char err[256];
    CHECK_EQ_INT(mm_choose_precision(MM_PREC_3XTF32, &p, &ch, from, err, sizeof err), 0);
    return ch;
}

/* At 3xtf32 a store is kept where the 3xtf32 decision for its product is the FP32 kernel (the
 * scatter store is that kernel's), decided once at plan time. With no table (the built-in rule:
 * these small products take the FP32 kernel where mma.sync would take its small tiles) both forms
 * keep both stores, agree with the CPU executor within 1e-5 and with every node check, and give the
 * fp32 run's bits (the same kernel at the same choice everywhere). With a table naming an mma.sync
 * configuration for the qkv product (its store's view and the plain tall product), that store is
 * not planned, its moves run as kernels, the head merge keeps its store, and the output still
 * agrees; --no-scatter (rt_opts.no_scatter) plans none at 3xtf32 either. */
static void test_scatter_3xtf32(void) {
    int before = test_failed, from = -1;
    char path[256], err[256];
    snprintf(path, sizeof path, "/tmp/tasc_scatter3_%ld.txt", (long)getpid());
    mm_table_use("/nonexistent/tasc-gpu-test-ops-no-table.txt"); /* the built-in rule, whatever is cached */
    mm_choice ch = scatter_qkv_choice(&from);
    CHECK(from == 0 && ch.kernel == MM_KERNEL_FP32);
    for (int vit = 0; vit < 2; vit++) {
        graph *g = scatter_graph(vit);
        CHECK(graph_ok(g));
        const int64_t n = ops_shape_numel(&g->tensors[g->outputs[0]].shape);
        float *cpu[1] = {0}, *o3 = malloc((size_t)n * sizeof(float)), *o32 = malloc((size_t)n * sizeof(float));
        CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
        rt_info i3 = {0}, i32 = {0};
        CHECK_EQ_INT(scatter_run(g, RT_PRECISION_3XTF32, 0, o3, &i3), 0);
        CHECK_EQ_INT(scatter_run(g, RT_PRECISION_FP32, 0, o32, &i32), 0);
        CHECK_EQ_INT(i3.scatter_stores, 2);
        CHECK_EQ_INT(i3.nodes_scattered, i32.nodes_scattered);
        CHECK_EQ_INT(i3.nodes_run, i32.nodes_run);
        CHECK_EQ_INT(i3.check_failed, 0);
        CHECK(i3.graph == 1);
        const double e3 = exec_compare(o3, cpu[0], n).rel_l2;
        CHECK(e3 <= 1e-5);
        const int same = !memcmp(o3, o32, (size_t)n * sizeof(float));
        if (!same)
            fprintf(stderr, "scatter 3xtf32 %s: not the fp32 run's bits (rel L2 vs CPU %.3g)\n", vit ? "vit" : "bert",
                    e3);
        CHECK(same);
        printf("scatter 3xtf32 %s (built-in rule: FP32 kernel): %d movement nodes in %d stores, %d nodes run, "
               "rel L2 vs CPU %.3g\n",
               vit ? "vit" : "bert", (int)i3.nodes_scattered, (int)i3.scatter_stores, (int)i3.nodes_run, e3);
        if (!vit) { /* the qkv product on mma.sync: no store for it */
            const mm_choice mma = {0, 1, 1, MM_KERNEL_MMA};
            mm_table *t = mm_table_new();
            mm_problem p;
            mm_problem_init(&p, 20, 96, 32, 2); /* its store's view (rows: 2 items of 20 rows) */
            mm_table_put_at(t, mm_device_key(), MM_PREC_3XTF32, &p, &mma, 1.0);
            mm_problem_init(&p, 40, 96, 32, 1); /* the tall product it runs without a store */
            mm_table_put_at(t, mm_device_key(), MM_PREC_3XTF32, &p, &mma, 1.0);
            CHECK_EQ_INT(mm_table_save(t, path, err, sizeof err), 0);
            mm_table_free(t);
            mm_table_use(path);
            ch = scatter_qkv_choice(&from);
            CHECK(from == 1 && ch.kernel == MM_KERNEL_MMA);
            rt_info im = {0};
            CHECK_EQ_INT(scatter_run(g, RT_PRECISION_3XTF32, 0, o3, &im), 0);
            CHECK_EQ_INT(im.scatter_stores, 1); /* the head merge's */
            CHECK(im.nodes_scattered < i3.nodes_scattered && im.nodes_run > i3.nodes_run);
            CHECK_EQ_INT(im.check_failed, 0);
            const double em = exec_compare(o3, cpu[0], n).rel_l2;
            CHECK(em <= 1e-5);
            printf("scatter 3xtf32 bert (qkv on mma.sync from a table): %d stores, %d nodes run, rel L2 vs CPU %.3g\n",
                   (int)im.scatter_stores, (int)im.nodes_run, em);
            mm_table_use("/nonexistent/tasc-gpu-test-ops-no-table.txt");
            unlink(path);
        }
        rt_info in = {0};
        CHECK_EQ_INT(scatter_run(g, RT_PRECISION_3XTF32, 1, o3, &in), 0);
        CHECK_EQ_INT(in.scatter_stores, 0);
        CHECK_EQ_INT(in.nodes_scattered, 0);
        CHECK(exec_compare(o3, cpu[0], n).rel_l2 <= 1e-5);
        free(cpu[0]);
        free(o3);
        free(o32);
        graph_free(g);
    }
    mm_table_use(NULL);
    printf("scatter stores at 3xtf32: %s\n", test_failed == before ? "ok" : "FAILED");
}

/* Ops without a hand-written case (a new op: hardswish) get cases from the op table alone: min_in
 * inputs of one shape, normal values, default parameters, an odd size and a multiple of 4 (the
 * scalar and the vector paths), when the op accepts them. Runs after the other groups. */
static void test_table_defaults(void) {
    const t_shape shapes[2] = {SH(3, 5, 7, 11), SH(4, 1024)};
    for (int op = 0; op < OP_COUNT; op++) {
        int32_t n_in = ops_table[op].min_in, n_out = 0;
        if (op_cases[op] || n_in < 1)
            continue;
        for (int v = 0; v < 2; v++) {
            t_shape s[OPS_MAX_INPUTS];
            int fills[OPS_MAX_INPUTS];
            ops_shape in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
            for (int32_t k = 0; k < n_in; k++) {
                s[k] = shapes[v];
                fills[k] = FILL_NORMAL;
                in[k] = ops_shape_make(s[k].rank, s[k].d);
            }
            ops_params p = P((ops_type)op);
            if (ops_infer((ops_type)op, &p, n_in, in, &n_out, out, NULL, 0) < 0)
                continue;
            char label[64];
            snprintf(label, sizeof label, "%s (table default %s)", ops_table[op].name, v ? "4x1024" : "3x5x7x11");
            run_case(label, (ops_type)op, &p, n_in, s, fills, 0);
        }
    }
}

/* The per-device cache of convolution path choices (conv_table.h) in a cache folder of its own:
 * a conv and a reused-shape conv whose paths a first "process" measured are read back by the next
 * (this process's choices forgotten): nothing measured, the same bits; a choice edited in the file
 * (the direct kernel) is the one the node runs (the forced direct path's bits); a malformed file
 * is reported and the paths measured again, the file left as it was; TASC_CONV_CACHE=off writes
 * nothing. */
static graph *cc_graph(void) {
    graph *g = graph_new("convcache");
    const int64_t xd[4] = {1, 16, 13, 13}, wd[4] = {24, 16, 3, 3};
    int32_t x = graph_input(g, "x", 4, xd), w = graph_weight_he(g, "w", 4, wd);
    int32_t c = graph_conv2d(g, x, w, 1, 1, OPS_PAD_SAME, OPS_ACT_RELU);
    graph_mark_output(g, c);
    return g;
}

/* One context of g from a fresh start of the choices: output (24*13*13) and the conv counts. */
static int cc_run(const graph *g, float *y, rt_info *cs) {
    char err[1024];
    ops_cuda_conv_cache_reset();
    rt_ctx *c = rt_ctx_new(g, NULL, err, sizeof err);
    int ok = c && rt_run(c, err, sizeof err) == 0 && rt_get_output(c, 0, y, err, sizeof err) == 0;
    if (c)
        rt_get_info(c, cs);
    if (!ok)
        fprintf(stderr, "convcache: %s\n", err);
    rt_ctx_free(c);
    return ok;
}

/* The file's one entry line with its path field (the 4th) set to path. */
static int cc_set_path(const char *file, const char *path) {
    char *t = test_read_file(file), *line = t ? strstr(t, "\n") : NULL;
    while (line && line[1] == '#')
        line = strchr(line + 1, '\n');
    if (!line)
        return free(t), 0;
    char *f = line + 1;
    for (int i = 0; i < 3 && f; i++)
        f = strchr(f, '\t') ? strchr(f, '\t') + 1 : NULL;
    char *end = f ? strchr(f, '\t') : NULL;
    FILE *o = end ? fopen(file, "w") : NULL;
    if (o) {
        fprintf(o, "%.*s%s%s", (int)(f - t), t, path, end);
        fclose(o);
    }
    free(t);
    return o != NULL;
}

static void test_conv_cache(void) {
    char dir[] = "/tmp/tasc_gpu_convcache_XXXXXX", file[4096];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    setenv("TASC_CACHE_DIR", dir, 1);
    unsetenv("TASC_CONV_CACHE");
    graph *g = cc_graph();
    CHECK(graph_ok(g));
    enum { NY = 24 * 13 * 13 };
    static float a[NY], b[NY], d[NY], forced[NY];
    rt_info cs;
    ops_cuda_conv_cache_path(file, sizeof file);
    CHECK(strstr(file, dir) == file);
    CHECK(cc_run(g, a, &cs));
    CHECK_EQ_INT(cs.conv_measured, 1);
    char *t = test_read_file(file);
    CHECK_STR_CONTAINS(t, "\t1,16,13,13,24,16,3,3,1,1,1,1,1,1,1,1,");
    free(t);
    CHECK(cc_run(g, b, &cs)); /* a new process: read from the file */
    CHECK_EQ_INT(cs.conv_measured, 0);
    CHECK_EQ_INT(cs.conv_reused, 1);
    CHECK(memcmp(a, b, sizeof a) == 0);
    /* the file decides: its choice edited to the direct kernel */
    CHECK(cc_set_path(file, "direct"));
    CHECK(cc_run(g, d, &cs));
    CHECK_EQ_INT(cs.conv_measured, 0);
    setenv("TASC_CONV_CACHE", "off", 1);
    setenv("TASC_RT_CONV", "direct", 1);
    CHECK(cc_run(g, forced, &cs));
    unsetenv("TASC_RT_CONV");
    CHECK_EQ_INT(cs.conv_measured, 1);
    CHECK(memcmp(d, forced, sizeof d) == 0);
    unsetenv("TASC_CONV_CACHE");
    /* a malformed file: reported, measured, left alone */
    test_write_file(file, "garbage\n");
    CHECK(cc_run(g, b, &cs));
    CHECK_EQ_INT(cs.conv_measured, 1);
    CHECK(exec_compare(b, a, NY).rel_l2 <= 1e-5);
    t = test_read_file(file);
    CHECK(t && !strcmp(t, "garbage\n"));
    free(t);
    /* off: nothing written */
    remove(file);
    setenv("TASC_CONV_CACHE", "off", 1);
    CHECK(cc_run(g, b, &cs));
    CHECK_EQ_INT(cs.conv_measured, 1);
    CHECK(access(file, F_OK) != 0);
    graph_free(g);
    CHECK_EQ_INT(test_rm_dir(dir), 0);
    unsetenv("TASC_CACHE_DIR");
    ops_cuda_conv_cache_reset(); /* the other groups: off, as main set it */
}

/* First-use tuning in the setup run lets go of the matmul split-K workspace (mm_workspace_release),
 * so it then holds only what the nodes after the last tuned one need. Here the product with the
 * largest workspace (y) runs before a tuned one (z): the setup must run the nodes once more, so
 * that the workspace has every node's size before the capture records its address. Without that
 * run, y grew it during the capture, and the memory x had been captured with was freed: an
 * illegal address in the first replay (resnet50's original graph on an H200 with no tuning table,
 * session 15). x (1x512x512, split 8) and y (1x4096x512, split 16) run from a table, with a
 * configuration reduced through the workspace; z (1x40x4096) is tuned on first use. */
static void test_workspace_regrow(void) {
    char dir[] = "/tmp/tasc_gpu_regrow_XXXXXX", table[4200], cache[4300], err[1024];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    setenv("TASC_CACHE_DIR", dir, 1); /* first-use tuning writes its cache here */
    snprintf(table, sizeof table, "%s/table.txt", dir);
    mm_problem px, py, pz;
    mm_problem_init(&px, 1, 512, 512, 1);
    mm_problem_init(&py, 1, 4096, 512, 1);
    mm_problem_init(&pz, 1, 40, 4096, 1);
    mm_choice cx = {-1, 8, 1, MM_KERNEL_FP32}, cy = {-1, 16, 1, MM_KERNEL_FP32};
    for (int32_t i = 0; i < mm_config_count() && cx.cfg < 0; i++) {
        if (mm_config_get(i)->cluster != 0) /* reduced by the tile's last block, through the workspace */
            continue;
        cx.cfg = cy.cfg = i;
        if (mm_choice_check(&px, &cx, err, sizeof err) || mm_choice_check(&py, &cy, err, sizeof err))
            cx.cfg = cy.cfg = -1;
    }
    CHECK(cx.cfg >= 0);
    mm_table *t = mm_table_new();
    mm_table_put_at(t, mm_device_key(), MM_PREC_FP32, &px, &cx, 1.0);
    mm_table_put_at(t, mm_device_key(), MM_PREC_FP32, &py, &cy, 1.0);
    CHECK_EQ_INT(mm_table_save(t, table, err, sizeof err), 0);
    mm_table_free(t);
    mm_table_use(table);
    graph *g = graph_new("regrow");
    int32_t x = graph_input(g, "x", 2, (int64_t[]){1, 512});
    int32_t h = graph_matmul(g, x, graph_weight_he(g, "w1", 2, (int64_t[]){512, 512}), OPS_ACT_NONE);
    h = graph_matmul(g, h, graph_weight_he(g, "w2", 2, (int64_t[]){512, 4096}), OPS_ACT_NONE);
    graph_mark_output(g, graph_matmul(g, h, graph_weight_he(g, "w3", 2, (int64_t[]){4096, 40}), OPS_ACT_NONE));
    CHECK(graph_ok(g));
    float *cpu[1] = {0}, got[40];
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, cpu, err, sizeof err), 0);
    mm_workspace_release();
    rt_opts o = {0};
    o.autotune = RT_AUTOTUNE_ON;
    rt_ctx *ctx = cx.cfg >= 0 && cpu[0] ? rt_ctx_new(g, &o, err, sizeof err) : NULL;
    CHECK(ctx != NULL);
    if (ctx) {
        mm_table_cache_path(mm_device_key(), cache, sizeof cache);
        CHECK(access(cache, F_OK) == 0); /* z was tuned in the setup */
        const size_t need = (size_t)16 * 4096 * sizeof(float), setup = mm_workspace_bytes();
        CHECK(setup >= need);
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0); /* captured, then replayed */
        CHECK_EQ_INT(rt_run(ctx, err, sizeof err), 0);
        CHECK_EQ_INT(rt_get_output(ctx, 0, got, err, sizeof err), 0);
        CHECK(mm_workspace_bytes() == setup); /* nothing grew while captured */
        rt_info info;
        rt_get_info(ctx, &info);
        CHECK(info.graph == 1);
        const double e = exec_compare(got, cpu[0], 40).rel_l2;
        CHECK(e <= 1e-4);
        printf("workspace regrow: %zu bytes after a setup with first-use tuning (y needs %zu), rel L2 vs CPU %.3g\n",
               setup, need, e);
    }
    rt_ctx_free(ctx);
    free(cpu[0]);
    graph_free(g);
    mm_table_use(NULL);
    CHECK_EQ_INT(test_rm_dir(dir), 0);
    unsetenv("TASC_CACHE_DIR");
}

static const struct {
    const char *name;
    void (*fn)(void);
} groups[] = {
    {"conv", test_conv},         {"conv3", test_conv_3xtf32}, {"convf", test_conv_fp32}, {"convw", test_conv_wgmma},     {"fusion", test_conv_fusion}, {"normfuse", test_normfuse},
    {"matmul", test_matmul},         {"elementwise", test_elementwise},
    {"data", test_data},         {"constants", test_constants},   {"pools", test_pools_norms},
    {"runtime", test_runtime_features}, {"splitview", test_runtime_split_views}, {"cost", test_cost_measure}, {"models", test_models},
    {"scatter", test_scatter_runtime},  {"scatter3", test_scatter_3xtf32}, {"table", test_table_defaults},
    {"convcache", test_conv_cache},  {"regrow", test_workspace_regrow}, {"profile", test_profile},
};

/* With arguments, only the named device groups run (one process each keeps a crash local). */
int main(int argc, char **argv) {
    /* paths measured in every case, the user's cache neither read nor written (test_conv_cache
     * uses a folder of its own) */
    setenv("TASC_CONV_CACHE", "off", 1);
    test_planner();
    test_registration();
    test_inputs_match_exec();
    test_cost_cache();
    char err[256];
    if (!rt_available(err, sizeof err)) {
        if (test_failed)
            return TEST_REPORT();
        printf("SKIPPED: no CUDA device (%s)\n", err);
        return 77;
    }
    printf("device: %s (%s)\n", rt_device_name(), rt_versions());
    const size_t ng = sizeof groups / sizeof groups[0];
    for (size_t i = 0; i < ng; i++) {
        int want = argc < 2;
        for (int a = 1; a < argc; a++)
            want |= !strcmp(argv[a], groups[i].name);
        if (want)
            groups[i].fn();
    }
    if (argc < 2) { /* the whole table was walked: every op had a case */
        int missing = 0;
        for (int op = 0; op < OP_COUNT; op++)
            if (!op_cases[op]) {
                fprintf(stderr, "op %s has no case\n", ops_table[op].name);
                missing++;
            }
        CHECK_EQ_INT(missing, 0);
    }
    for (int op = 0; op < OP_COUNT; op++)
        if (op_cases[op])
            printf("  %-14s %2d cases, worst rel L2 %.3g\n", ops_table[op].name, op_cases[op], worst_err[op]);
    return TEST_REPORT();
}
