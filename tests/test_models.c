/* test_models.c: the model zoo (models/). For each of the seven models: it builds and validates;
 * its operator counts, per type, equal counts derived by hand from the architecture; the
 * multiply-adds of its convolutions and matmuls equal a count derived independently of the
 * builder (the formulas in the comments below) and lie within 3% of the published figure; batch 2
 * has the same operators and exactly twice the FLOPs; two builds give the same hash and the same
 * JSON; the checked-in models/<name>.json loads and has the fresh build's graph_hash; and one CPU
 * run (batch 1) gives finite, non-constant outputs. Also the failure paths of zoo_build: unknown
 * names, batches out of range, an element limit the model exceeds.
 * TASC_ZOO_NO_RUN=1 skips the CPU runs (the slow part under sanitizers). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"
#include "graph.h"
#include "test.h"
#include "zoo.h"

typedef struct {
    const char *name;
    int32_t counts[OP_COUNT]; /* nodes per op type, derived by hand */
    double macs;              /* conv + matmul multiply-adds at batch 1, derived by hand */
    double published;         /* published multiply-adds, 0 where there is none */
    int64_t params;           /* weight elements (batchnorm running mean and var included) */
    int32_t n_inputs;
    int32_t out_rank;
    int64_t out_dims[4];      /* at batch 1 */
} zoo_spec;

/* How the numbers below are derived (batch 1; MACs of conv = H'W' * F * C/g * KH * KW, of a
 * matmul (m,k)x(k,n) = m*k*n, batched over leading dims):
 *
 * resnet50 (torchvision v1.5): stem conv 7x7 + 16 bottlenecks of 3 convs + 4 projection convs =
 *   53 conv2d, each followed by batchnorm (53); relu after the stem and after the first two convs
 *   of each block and after each residual add: 1 + 16*3 = 49; 16 ewadd; 1 maxpool; classifier:
 *   globalavgpool, reshape, matmul. Sum of conv MACs 4,087,136,256 + fc 2048*1000 = 4,089,184,256;
 *   published 4.1 GMACs (torchvision: 4.09).
 * resnext50 (32x4d): the same graph with inner widths 128/256/512/1024 and 3x3 groups 32:
 *   4,230,479,872 MACs; published 4.26 G (the paper's 4.2 G; torchvision lists 4.23).
 * nasnet_a (TASO's examples/nasnet_a.py): 15 normal cells (12 convs each: squeeze, fit and five
 *   separable convs of two convs; 3 avgpool; 5 ewadd; 1 concat) and 3 reduction cells (12 convs;
 *   2 maxpool, 2 avgpool; 5 ewadd; 1 concat) plus the 1x1 input maxpool: 216 conv2d, 90 ewadd,
 *   18 concat, 51 avgpool2d, 7 maxpool2d. MACs per stage with spatial size S, cell width c and
 *   input widths (in the first cell both inputs have width c_in, later prev/cur have c_in or 5c):
 *   normal cell: S^2*(cur+prev)*c [squeeze, fit] + 5*(S^2*c*9 + S^2*c*c) [separable 3x3];
 *   reduction cell (width 2c, output S/2): squeeze + fit at S, then separable 7x7/2 twice,
 *   5x5/2 twice, 3x3/1 once at S/2. Summed over stages (S, c, c_in) = (56,128,128), (28,256,1280),
 *   (14,512,2560): 15,010,702,336 MACs. TASO publishes no FLOP count; this is the derived figure.
 * nasrnn (TASO's examples/nasrnn.py): 5 steps of 16 matmuls (1,512)x(512,512):
 *   5 * 16 * 512 * 512 = 20,971,520 MACs; per step 8 + 3 ewadd, 4 ewmul, 2 relu, 5 sigmoid, 8 tanh.
 * bert (base, seq 128): per layer Q, K, V, output projections 4 * 128*768*768, two batched
 *   matmuls 2 * 12*128*128*64, FFN 2 * 128*768*3072: 931,135,488; 12 layers 11,173,625,856 MACs
 *   (published ~11.2 G for the encoder). Per layer 8 matmul, 4 reshape, 4 transpose, 1 smul,
 *   1 softmax, 2 ewadd, 2 layernorm, 1 gelu.
 * inception_v3 (torchvision, no aux head): 5 stem convs + 3 InceptionA of 7 + B of 4 +
 *   4 InceptionC of 10 + D of 6 + 2 InceptionE of 9 = 94 conv2d, each with batchnorm and relu;
 *   maxpool 2 (stem) + 1 (B) + 1 (D) = 4; avgpool one per A, C, E = 9; concat A 3 + B 1 + C 4 +
 *   D 1 + E 2*3 = 15; classifier 3 nodes. 5,713,216,096 MACs; published 5.7 G (torchvision 5.71).
 * squeezenet (1.1): stem conv + 8 fire modules of 3 convs + classifier conv = 26 conv2d, each
 *   with relu; 3 maxpool; 8 concat; globalavgpool and reshape. 349,151,936 MACs; published
 *   0.35 G (torchvision 0.35).
 *
 * Weight elements: torchvision's parameter counts plus the batchnorm running mean and variance
 * (buffers there, weights here), 2 per batchnorm channel: resnet50 25,557,032 + 2*26,560;
 * resnext50 25,028,904 + 2*34,112; inception_v3 27,161,264 less the aux head's 3,326,696, +
 * 2*17,216; squeezenet 1,235,496 (no batchnorm). bert: 12 * (4*(768*768 + 768) +
 * 768*3072 + 3072 + 3072*768 + 768 + 4*768) = 85,054,464, + 12 attention scale scalars. nasrnn:
 * 16 * 512*512 + h0 512. nasnet_a: per normal cell (cur + prev)*c + 5*(9c + c^2), per reduction
 * cell (cur + prev)*c + 2*(49c + c^2) + 2*(25c + c^2) + (9c + c^2) with c its width: 39,853,696.
 */
static const zoo_spec specs[] = {
    {"resnet50",
     {[OP_CONV2D] = 53, [OP_BATCHNORM] = 53, [OP_RELU] = 49, [OP_EWADD] = 16, [OP_MAXPOOL2D] = 1,
      [OP_GLOBALAVGPOOL] = 1, [OP_RESHAPE] = 1, [OP_MATMUL] = 1},
     4089184256.0, 4.1e9, 25610152, 1, 2, {1, 1000}},
    {"resnext50",
     {[OP_CONV2D] = 53, [OP_BATCHNORM] = 53, [OP_RELU] = 49, [OP_EWADD] = 16, [OP_MAXPOOL2D] = 1,
      [OP_GLOBALAVGPOOL] = 1, [OP_RESHAPE] = 1, [OP_MATMUL] = 1},
     4230479872.0, 4.26e9, 25097128, 1, 2, {1, 1000}},
    {"nasnet_a",
     {[OP_CONV2D] = 216, [OP_EWADD] = 90, [OP_CONCAT] = 18, [OP_AVGPOOL2D] = 51, [OP_MAXPOOL2D] = 7},
     15010702336.0, 0, 39853696, 1, 4, {1, 5120, 7, 7}},
    {"nasrnn",
     {[OP_MATMUL] = 80, [OP_EWADD] = 55, [OP_EWMUL] = 20, [OP_RELU] = 10, [OP_SIGMOID] = 25, [OP_TANH] = 40},
     20971520.0, 0, 4194816, 5, 2, {1, 512}},
    {"bert",
     {[OP_MATMUL] = 96, [OP_RESHAPE] = 48, [OP_TRANSPOSE] = 48, [OP_SMUL] = 12, [OP_SOFTMAX] = 12,
      [OP_EWADD] = 24, [OP_LAYERNORM] = 24, [OP_GELU] = 12},
     11173625856.0, 11.2e9, 85054476, 1, 2, {128, 768}},
    {"inception_v3",
     {[OP_CONV2D] = 94, [OP_BATCHNORM] = 94, [OP_RELU] = 94, [OP_MAXPOOL2D] = 4, [OP_AVGPOOL2D] = 9,
      [OP_CONCAT] = 15, [OP_GLOBALAVGPOOL] = 1, [OP_RESHAPE] = 1, [OP_MATMUL] = 1},
     5713216096.0, 5.7e9, 23869000, 1, 2, {1, 1000}},
    {"squeezenet",
     {[OP_CONV2D] = 26, [OP_RELU] = 26, [OP_MAXPOOL2D] = 3, [OP_CONCAT] = 8, [OP_GLOBALAVGPOOL] = 1,
      [OP_RESHAPE] = 1},
     349151936.0, 0.35e9, 1235496, 1, 2, {1, 1000}},
};
#define N_SPECS ((int)(sizeof specs / sizeof specs[0]))

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* FLOPs of the conv2d and matmul nodes alone, through the op table; *epilogue receives the
 * elements their fused bias and activation touch (the op table counts 1 FLOP per element each). */
static double dense_flops(const graph *g, double *epilogue) {
    double sum = 0;
    *epilogue = 0;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        const graph_node *nd = &g->nodes[n];
        if (nd->op != OP_CONV2D && nd->op != OP_MATMUL)
            continue;
        ops_shape in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
        for (int32_t i = 0; i < nd->n_in; i++)
            in[i] = g->tensors[nd->in[i]].shape;
        for (int32_t i = 0; i < nd->n_out; i++)
            out[i] = g->tensors[nd->out[i]].shape;
        ops_sig s = {.op = nd->op, .p = &nd->p, .n_in = nd->n_in, .n_out = nd->n_out, .in = in, .out = out};
        sum += ops_table[nd->op].flops(&s);
        double n_out = (double)ops_shape_numel(&out[0]);
        *epilogue += (nd->n_in > 2 ? n_out : 0) + (nd->p.v[PM_ACT] != OPS_ACT_NONE ? n_out : 0);
    }
    return sum;
}

static graph *build(const char *name, int32_t batch) {
    char err[GRAPH_ERR_LEN + 64] = "";
    graph *g = zoo_build(name, batch, err, sizeof err);
    if (!g)
        fprintf(stderr, "  zoo_build(%s, %d): %s\n", name, (int)batch, err);
    return g;
}

static void test_names(void) {
    static const char *const want[] = {"resnet50", "resnext50", "nasnet_a", "nasrnn", "bert", "inception_v3",
                                       "squeezenet"};
    const char *const *names = zoo_names();
    int n = 0;
    while (names[n])
        n++;
    CHECK_EQ_INT(n, 7);
    for (int k = 0; k < 7 && k < n; k++)
        CHECK(!strcmp(names[k], want[k]));
    CHECK_EQ_INT(N_SPECS, 7);
    for (int k = 0; k < N_SPECS && k < n; k++)
        CHECK(!strcmp(specs[k].name, names[k]));
}

static void test_errors(void) {
    char err[512];
    err[0] = '\0';
    CHECK(zoo_build("resnet51", 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "unknown model 'resnet51'");
    CHECK_STR_CONTAINS(err, "resnet50, resnext50, nasnet_a, nasrnn, bert, inception_v3, squeezenet");
    CHECK(strchr(err, '\n') == NULL);
    err[0] = '\0';
    CHECK(zoo_build(NULL, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "unknown model");
    err[0] = '\0';
    CHECK(zoo_build("", 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "unknown model ''");
    const int32_t bad[] = {0, -1, ZOO_MAX_BATCH + 1, INT32_MAX, INT32_MIN};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        err[0] = '\0';
        CHECK(zoo_build("squeezenet", bad[k], err, sizeof err) == NULL);
        CHECK_STR_CONTAINS(err, "batch");
        CHECK_STR_CONTAINS(err, "1..1024");
    }
    /* A short message buffer truncates but never overflows; NULL err is allowed. */
    char tiny[8];
    CHECK(zoo_build("nope", 1, tiny, sizeof tiny) == NULL);
    CHECK_EQ_INT(strlen(tiny), sizeof tiny - 1);
    CHECK(zoo_build("nope", 1, NULL, 0) == NULL);

    /* An element limit below the model's largest tensor: a message, not a crash. */
    setenv("TASC_MAX_ELEMENTS", "100000", 1);
    err[0] = '\0';
    graph *g = zoo_build("resnet50", 1, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "resnet50: ");
    CHECK(strchr(err, '\n') == NULL);
    graph_free(g);
    unsetenv("TASC_MAX_ELEMENTS");
}

static void test_model(const zoo_spec *sp, int run) {
    char err[GRAPH_ERR_LEN + 64] = "";
    graph *g = build(sp->name, 1);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK(!strcmp(g->name, sp->name));
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), 0);

    /* operator counts, every type (zero where the spec names none) */
    graph_stats st;
    graph_get_stats(g, &st);
    int32_t total = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        total += sp->counts[op];
        if (st.op_count[op] != sp->counts[op])
            fprintf(stderr, "  %s: %s count %d, expected %d\n", sp->name, ops_table[op].name, (int)st.op_count[op],
                    (int)sp->counts[op]);
        CHECK_EQ_INT(st.op_count[op], sp->counts[op]);
    }
    CHECK_EQ_INT(st.n_nodes, total);
    CHECK_EQ_INT(g->n_nodes, total);

    /* interface */
    CHECK_EQ_INT(g->n_inputs, sp->n_inputs);
    CHECK_EQ_INT(g->n_outputs, 1);
    if (g->n_outputs == 1) {
        const ops_shape *os = &g->tensors[g->outputs[0]].shape;
        CHECK_EQ_INT(os->rank, sp->out_rank);
        for (int32_t d = 0; d < sp->out_rank && d < os->rank; d++)
            CHECK_EQ_INT(os->dims[d], sp->out_dims[d]);
    }

    /* multiply-adds: exact against the derivation (after taking out the fused bias and activation
     * FLOPs), and within 3% of the published figure */
    double epi, dense = dense_flops(g, &epi), macs = (dense - epi) / 2.0;
    printf("  %-13s nodes %4d  conv+matmul %.4f GMACs (derived %.4f)  total %.4f GFLOPs\n", sp->name,
           (int)st.n_nodes, macs / 1e9, sp->macs / 1e9, st.flops / 1e9);
    CHECK_NEAR(macs, sp->macs, 0.5);
    CHECK(epi <= 0.005 * dense);
    if (sp->published > 0)
        CHECK(fabs(macs - sp->published) <= 0.03 * sp->published);
    /* everything else (batchnorm, pools, elementwise ops) is a small part of the work */
    CHECK(st.flops >= dense);
    CHECK(st.flops <= dense * 1.05);

    /* parameters: every weight's shape, summed */
    int64_t n_params = 0;
    for (int32_t i = 0; i < g->n_weights; i++)
        n_params += ops_shape_numel(&g->tensors[g->weights[i]].shape);
    CHECK_EQ_INT(n_params, sp->params);

    /* determinism: a second build has the same hash and the same JSON */
    graph *g1 = build(sp->name, 1);
    CHECK(g1 != NULL);
    char *json = graph_to_json_string(g), *json1 = g1 ? graph_to_json_string(g1) : NULL;
    CHECK(json && json1 && !strcmp(json, json1));
    CHECK(g1 && graph_hash(g1) == graph_hash(g));
    free(json1);
    graph_free(g1);

    /* batch 2: same operators, twice the FLOPs, a different hash */
    graph *g2 = build(sp->name, 2);
    CHECK(g2 != NULL);
    if (g2) {
        graph_stats st2;
        graph_get_stats(g2, &st2);
        for (int op = 0; op < OP_COUNT; op++)
            CHECK_EQ_INT(st2.op_count[op], st.op_count[op]);
        CHECK_NEAR(st2.flops / st.flops, 2.0, 1e-9);
        CHECK(graph_hash(g2) != graph_hash(g));
        CHECK_EQ_INT(graph_validate(g2, err, sizeof err), 0);
        graph_free(g2);
    }
    /* the largest batch still builds, with 1024 times the FLOPs */
    graph *gm = build(sp->name, ZOO_MAX_BATCH);
    CHECK(gm != NULL);
    if (gm) {
        graph_stats stm;
        graph_get_stats(gm, &stm);
        CHECK_NEAR(stm.flops / st.flops, (double)ZOO_MAX_BATCH, 1e-6);
        graph_free(gm);
    }

    /* the checked-in JSON is this graph */
    char path[256];
    snprintf(path, sizeof path, "models/%s.json", sp->name);
    err[0] = '\0';
    graph *gj = graph_load_json(path, 0, err, sizeof err);
    if (!gj)
        fprintf(stderr, "  %s: %s\n", path, err);
    CHECK(gj != NULL);
    if (gj) {
        CHECK(graph_hash(gj) == graph_hash(g));
        char *jj = graph_to_json_string(gj);
        CHECK(jj && json && !strcmp(jj, json));
        free(jj);
        graph_free(gj);
    }
    free(json);

    /* one CPU run: finite outputs that are not all the same value, of bounded size */
    if (run) {
        float *out[1] = {NULL};
        double t0 = now_s();
        err[0] = '\0';
        int rc = exec_cpu_run(g, NULL, 1, out, err, sizeof err);
        double dt = now_s() - t0;
        if (rc != 0)
            fprintf(stderr, "  %s: exec_cpu_run: %s\n", sp->name, err);
        CHECK_EQ_INT(rc, 0);
        if (rc == 0 && g->n_outputs == 1) {
            int64_t n = ops_shape_numel(&g->tensors[g->outputs[0]].shape);
            int64_t bad = 0;
            double lo = INFINITY, hi = -INFINITY, sq = 0;
            for (int64_t i = 0; i < n; i++) {
                float v = out[0][i];
                if (!isfinite(v)) {
                    bad++;
                    continue;
                }
                lo = fmin(lo, v);
                hi = fmax(hi, v);
                sq += (double)v * v;
            }
            CHECK_EQ_INT(bad, 0);
            CHECK(hi > lo);
            double rms = sqrt(sq / (double)n);
            printf("  %-13s CPU run %.1f s, output rms %.4g, range [%.4g, %.4g]\n", sp->name, dt, rms, lo, hi);
            /* the initialisers keep activations bounded (He fan-in, residual branches scaled:
             * zoo_init.c); nasnet_a's unweighted sums (pool + identity) still reach about 3e3 */
            CHECK(rms > 1e-2 && rms < 1e4);
        }
        free(out[0]);
    }
    graph_free(g);
}

int main(void) {
    const char *no_run = getenv("TASC_ZOO_NO_RUN");
    int run = !(no_run && no_run[0] == '1');
    test_names();
    test_errors();
    for (int k = 0; k < N_SPECS; k++)
        test_model(&specs[k], run);
    return TEST_REPORT();
}
