/* test_rewrite.c: every built-in rewrite (src/rewrite.h) on small graphs built here: applied where
 * it should be and not where it must not be, and each result run on the CPU executor against the
 * original (conv+batchnorm folding with non-trivial statistics, bias and activation fusion, cse,
 * split-concat, sibling matmul and conv merges, layout: the NHWC islands of a ConvNeXt block in
 * NCHW, and back through ONNX), then constant folding into DATA weights and a save/load round
 * trip of the folded model through its sidecar file.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "exec.h"
#include "onnx.h"
#include "rewrite.h"
#include "test.h"

/* Largest relative L2 error over the outputs of b against a, inputs of seed 3. */
static double compare_runs(const graph *a, const graph *b) {
    char err[256];
    double worst = 0.0;
    if (a->n_outputs != b->n_outputs)
        return 1e30;
    float **oa = calloc((size_t)a->n_outputs, sizeof *oa), **ob = calloc((size_t)b->n_outputs, sizeof *ob);
    if (exec_cpu_run(a, NULL, 3, oa, err, sizeof err) < 0 || exec_cpu_run(b, NULL, 3, ob, err, sizeof err) < 0) {
        fprintf(stderr, "exec: %s\n", err);
        worst = 1e30;
    } else {
        for (int32_t i = 0; i < a->n_outputs; i++) {
            exec_diff d = exec_compare(ob[i], oa[i], ops_shape_numel(&a->tensors[a->outputs[i]].shape));
            if (d.nan_count)
                worst = 1e30;
            else if (d.rel_l2 > worst)
                worst = d.rel_l2;
        }
    }
    for (int32_t i = 0; i < a->n_outputs; i++) {
        free(oa[i]);
        free(ob[i]);
    }
    free(oa);
    free(ob);
    return worst;
}

static int32_t count_op(const graph *g, ops_type op) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

static int32_t count_tagged(const graph *g) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].tag != 0;
    return n;
}

/* Apply one kind greedily to a copy of g; returns the copy (caller frees) and the count. */
static graph *greedy_one(const graph *g, rewrite_kind kind, int32_t *count) {
    uint8_t kinds[REWRITE_COUNT] = {0};
    kinds[kind] = 1;
    int32_t counts[REWRITE_COUNT] = {0};
    graph *c = graph_clone(g);
    int64_t counter = 0;
    char err[256];
    if (rewrite_greedy(&c, kinds, "opt", &counter, counts, err, sizeof err) < 0) {
        fprintf(stderr, "greedy %s: %s\n", rewrite_names[kind], err);
        graph_free(c);
        return NULL;
    }
    char verr[256];
    if (graph_validate(c, verr, sizeof verr) < 0)
        fprintf(stderr, "greedy %s: invalid result: %s\n", rewrite_names[kind], verr);
    *count = counts[kind];
    return c;
}

/* Number of candidates of one kind in g. */
static int32_t count_candidates(const graph *g, rewrite_kind kind);
static int any_candidate(rules_apply_plan *pl, void *user) {
    (void)pl;
    (*(int32_t *)user)++;
    return 0;
}
static int32_t count_candidates(const graph *g, rewrite_kind kind) {
    rules_match_index ix;
    char err[256];
    if (rules_match_index_build(&ix, g, err, sizeof err) < 0)
        return -1;
    uint8_t *wo = malloc((size_t)g->n_tensors + 1);
    cost_weight_only(g, wo);
    int32_t n = 0;
    int32_t r = rewrite_find(kind, &ix, wo, any_candidate, &n);
    CHECK_EQ_INT(r, n);
    free(wo);
    rules_match_index_free(&ix);
    return n;
}

static int32_t weight_random(graph *g, const char *name, int32_t rank, const int64_t *dims, uint64_t seed, float mean,
                             float std) {
    graph_init init;
    memset(&init, 0, sizeof init);
    init.kind = GRAPH_INIT_RANDOM;
    init.seed = seed;
    init.mean = mean;
    init.std = std;
    return graph_weight(g, name, rank, dims, init);
}

/* conv (with and without bias) followed by batchnorm with non-trivial statistics. */
static void test_bn_fold(void) {
    graph *g = graph_new("bn");
    const int64_t xd[4] = {2, 3, 7, 6}, kd[4] = {5, 3, 3, 3}, cd[1] = {5};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t out[2];
    for (int32_t v = 0; v < 2; v++) {
        char nm[32];
        snprintf(nm, sizeof nm, "k%d", v);
        int32_t k = weight_random(g, nm, 4, kd, 10 + (uint64_t)v, 0.0f, 0.5f);
        int32_t b = -1;
        if (v == 1) {
            b = weight_random(g, "cb", 1, cd, 20, 0.3f, 0.2f);
        }
        const int32_t pads[4] = {1, 1, 1, 1};
        snprintf(nm, sizeof nm, "conv%d", v);
        int32_t c = graph_conv2d_ex(g, nm, x, k, b, 2, 1, pads, 1, OPS_ACT_NONE);
        char s1[32], s2[32], s3[32], s4[32];
        snprintf(s1, sizeof s1, "scale%d", v);
        snprintf(s2, sizeof s2, "bias%d", v);
        snprintf(s3, sizeof s3, "mean%d", v);
        snprintf(s4, sizeof s4, "var%d", v);
        int32_t sc = weight_random(g, s1, 1, cd, 30 + (uint64_t)v, 1.0f, 0.3f);
        int32_t bi = weight_random(g, s2, 1, cd, 40 + (uint64_t)v, 0.0f, 0.5f);
        int32_t me = weight_random(g, s3, 1, cd, 50 + (uint64_t)v, 0.2f, 0.5f);
        int32_t va = weight_random(g, s4, 1, cd, 60 + (uint64_t)v, 2.0f, 0.3f); /* positive */
        out[v] = graph_batchnorm(g, c, sc, bi, me, va, 1e-3f);
    }
    graph_mark_output(g, out[0]);
    graph_mark_output(g, out[1]);
    CHECK(graph_ok(g));
    int32_t n = 0;
    graph *h = greedy_one(g, REWRITE_BN_FOLD, &n);
    CHECK(h != NULL);
    if (!h) {
        graph_free(g);
        return;
    }
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(count_op(h, OP_BATCHNORM), 0);
    CHECK_EQ_INT(count_op(h, OP_CONV2D), 2);
    CHECK(compare_runs(g, h) < 1e-5);
    /* the new kernels and biases are weight-only nodes: folding turns them into DATA weights */
    int32_t folded = 0;
    char err[256];
    CHECK(rewrite_fold_constants(&h, &folded, err, sizeof err) == 0);
    CHECK_EQ_INT(folded, 4); /* two kernels, two biases */
    CHECK_EQ_INT(h->n_nodes, 2);
    int32_t data = 0;
    for (int32_t i = 0; i < h->n_weights; i++)
        data += h->tensors[h->weights[i]].init.kind == GRAPH_INIT_DATA;
    CHECK_EQ_INT(data, 4);
    CHECK(compare_runs(g, h) < 1e-5);
    /* saved with a sidecar and loaded back: the same values */
    char path[] = "/tmp/tasc_test_rewrite_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        close(fd);
        char json[64];
        snprintf(json, sizeof json, "%s.json", path);
        CHECK(graph_save_json(h, json, err, sizeof err) == 0);
        graph *l = graph_load_json(json, 0, err, sizeof err);
        CHECK(l != NULL);
        if (l) {
            CHECK(compare_runs(g, l) < 1e-5);
            CHECK(compare_runs(h, l) == 0.0);
            graph_free(l);
        }
        char *side = graph_sidecar_path(json);
        unlink(json);
        if (side)
            unlink(side);
        free(side);
        unlink(path);
    }
    graph_free(h);
    /* not folded: the conv's output also read elsewhere, or a fused activation */
    graph *g2 = graph_new("bn2");
    x = graph_input(g2, "x", 4, xd);
    int32_t k = weight_random(g2, "k", 4, kd, 1, 0.0f, 0.5f);
    int32_t c = graph_conv2d(g2, x, k, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    int32_t st[4];
    for (int32_t i = 0; i < 4; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "s%d", i);
        st[i] = weight_random(g2, nm, 1, cd, 70 + (uint64_t)i, 1.0f, 0.1f);
    }
    graph_mark_output(g2, graph_batchnorm(g2, c, st[0], st[1], st[2], st[3], 1e-5f));
    graph_mark_output(g2, c);
    int32_t k2 = weight_random(g2, "k2", 4, kd, 2, 0.0f, 0.5f);
    int32_t c2 = graph_conv2d(g2, x, k2, 1, 1, OPS_PAD_SAME, OPS_ACT_RELU);
    graph_mark_output(g2, graph_batchnorm(g2, c2, st[0], st[1], st[2], st[3], 1e-5f));
    CHECK(graph_ok(g2));
    CHECK_EQ_INT(count_candidates(g2, REWRITE_BN_FOLD), 0);
    graph_free(g2);
    graph_free(g);
}

/* Bias adds and activations fused into conv2d and matmul. */
static void test_fusion(void) {
    graph *g = graph_new("fuse");
    const int64_t xd[4] = {1, 3, 6, 6}, kd[4] = {4, 3, 3, 3}, bd4[4] = {1, 4, 1, 1}, bd3[3] = {4, 1, 1};
    const int64_t ad[2] = {5, 7}, wd[2] = {7, 6}, vd[1] = {6}, rd[2] = {1, 6}, bad[4] = {1, 1, 6, 6};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t a = graph_input(g, "a", 2, ad);
    int32_t k1 = weight_random(g, "k1", 4, kd, 1, 0.0f, 0.5f), k2 = weight_random(g, "k2", 4, kd, 2, 0.0f, 0.5f);
    int32_t k3 = weight_random(g, "k3", 4, kd, 3, 0.0f, 0.5f);
    int32_t b4 = weight_random(g, "b4", 4, bd4, 4, 0.5f, 0.5f), b3 = weight_random(g, "b3", 3, bd3, 5, 0.5f, 0.5f);
    int32_t bad_b = weight_random(g, "bad", 4, bad, 6, 0.5f, 0.5f);
    int32_t w = weight_random(g, "w", 2, wd, 7, 0.0f, 0.5f), w2 = weight_random(g, "w2", 2, wd, 8, 0.0f, 0.5f);
    int32_t v = weight_random(g, "v", 1, vd, 9, 0.1f, 0.5f), r = weight_random(g, "r", 2, rd, 10, 0.1f, 0.5f);
    /* conv + b (1,F,1,1) + relu: both fuse */
    int32_t c1 = graph_conv2d(g, x, k1, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    int32_t t1 = graph_unary(g, OP_RELU, graph_ewadd(g, b4, c1));
    /* conv + b (F,1,1) + gelu */
    int32_t c2 = graph_conv2d(g, x, k2, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    int32_t t2 = graph_unary(g, OP_GELU, graph_ewadd(g, c2, b3));
    /* conv + a per-position tensor: not a bias; then sigmoid: not fused either */
    int32_t c3 = graph_conv2d(g, x, k3, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    int32_t t3 = graph_unary(g, OP_SIGMOID, graph_ewadd(g, c3, bad_b));
    /* matmul + (n) + relu, matmul + (1,n) */
    int32_t m1 = graph_unary(g, OP_RELU, graph_ewadd(g, graph_matmul(g, a, w, OPS_ACT_NONE), v));
    int32_t m2 = graph_ewadd(g, r, graph_matmul(g, a, w2, OPS_ACT_NONE));
    int32_t outs[5] = {t1, t2, t3, m1, m2};
    for (int32_t i = 0; i < 5; i++)
        graph_mark_output(g, outs[i]);
    CHECK(graph_ok(g));
    int32_t nb = 0, na = 0;
    graph *h = greedy_one(g, REWRITE_FUSE_BIAS, &nb);
    CHECK(h != NULL);
    if (!h) {
        graph_free(g);
        return;
    }
    CHECK_EQ_INT(nb, 4);
    CHECK_EQ_INT(count_op(h, OP_EWADD), 1); /* the per-position add stays */
    CHECK(compare_runs(g, h) < 1e-6);
    graph *h2 = greedy_one(h, REWRITE_FUSE_ACT, &na);
    CHECK(h2 != NULL);
    if (h2) {
        CHECK_EQ_INT(na, 3); /* relu, gelu into convs; relu into a matmul; not sigmoid */
        CHECK_EQ_INT(count_op(h2, OP_RELU) + count_op(h2, OP_GELU), 0);
        CHECK_EQ_INT(count_op(h2, OP_SIGMOID), 1);
        CHECK(compare_runs(g, h2) < 1e-6);
        CHECK(count_tagged(h2) >= 5);
        graph_free(h2);
    }
    graph_free(h);
    graph_free(g);
}

/* The later activations fuse too: silu, hardswish, gelu_tanh by the op, relu6 as a clip from 0
 * to 6; another clip (hardsigmoid's 0..1) and tanh stay (the GPU matmul's epilogue lacks them). */
static void test_fusion_acts(void) {
    graph *g = graph_new("fuse_acts");
    const int64_t xd[4] = {1, 3, 6, 6}, kd[4] = {4, 3, 3, 3}, ad[2] = {5, 7}, wd[2] = {7, 6};
    int32_t x = graph_input(g, "x", 4, xd), a = graph_input(g, "a", 2, ad);
    int32_t k[4], w[3];
    for (int i = 0; i < 4; i++) {
        char nm[8] = {'k', (char)('0' + i), 0};
        k[i] = weight_random(g, nm, 4, kd, 20 + (uint64_t)i, 0.0f, 2.0f);
    }
    for (int i = 0; i < 3; i++) {
        char nm[8] = {'w', (char)('0' + i), 0};
        w[i] = weight_random(g, nm, 2, wd, 30 + (uint64_t)i, 0.0f, 2.0f);
    }
    ops_params relu6, hsig;
    ops_params_default(OP_CLIP, &relu6);
    relu6.v[PM_LO] = ops_f2p(0.0f);
    relu6.v[PM_HI] = ops_f2p(6.0f);
    hsig = relu6;
    hsig.v[PM_HI] = ops_f2p(1.0f);
    int32_t outs[7], t;
    outs[0] = graph_unary(g, OP_SILU, graph_conv2d(g, x, k[0], 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    outs[1] = graph_unary(g, OP_HARDSWISH, graph_conv2d(g, x, k[1], 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    graph_add(g, NULL, OP_CLIP, &hsig, 1, (int32_t[]){graph_conv2d(g, x, k[2], 1, 1, OPS_PAD_SAME, OPS_ACT_NONE)},
              &outs[2]);
    outs[3] = graph_unary(g, OP_TANH, graph_conv2d(g, x, k[3], 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    outs[4] = graph_unary(g, OP_GELU_TANH, graph_matmul(g, a, w[0], OPS_ACT_NONE));
    graph_add(g, NULL, OP_CLIP, &relu6, 1, (int32_t[]){graph_matmul(g, a, w[1], OPS_ACT_NONE)}, &t);
    outs[5] = t;
    outs[6] = graph_unary(g, OP_SILU, graph_matmul(g, a, w[2], OPS_ACT_NONE));
    for (int32_t i = 0; i < 7; i++)
        graph_mark_output(g, outs[i]);
    CHECK(graph_ok(g));
    int32_t na = 0;
    graph *h = greedy_one(g, REWRITE_FUSE_ACT, &na);
    CHECK(h != NULL);
    if (!h) {
        graph_free(g);
        return;
    }
    CHECK_EQ_INT(na, 5);
    CHECK_EQ_INT(count_op(h, OP_SILU) + count_op(h, OP_HARDSWISH) + count_op(h, OP_GELU_TANH), 0);
    CHECK_EQ_INT(count_op(h, OP_CLIP), 1); /* the 0..1 one */
    CHECK_EQ_INT(count_op(h, OP_TANH), 1);
    int acts[OPS_ACT_COUNT] = {0};
    for (int32_t i = 0; i < h->n_nodes; i++)
        if (rewrite_has_epilogue(h->nodes[i].op))
            acts[h->nodes[i].p.v[PM_ACT]]++;
    CHECK_EQ_INT(acts[OPS_ACT_SILU], 2);
    CHECK_EQ_INT(acts[OPS_ACT_HARDSWISH], 1);
    CHECK_EQ_INT(acts[OPS_ACT_GELU_TANH], 1);
    CHECK_EQ_INT(acts[OPS_ACT_RELU6], 1);
    CHECK(compare_runs(g, h) < 1e-6);
    CHECK_EQ_INT(rewrite_fusable_act_p(OP_CLIP, &relu6), OPS_ACT_RELU6);
    CHECK_EQ_INT(rewrite_fusable_act_p(OP_CLIP, &hsig), OPS_ACT_NONE);
    CHECK_EQ_INT(rewrite_fusable_act(OP_SIGMOID), OPS_ACT_NONE);
    CHECK_EQ_INT(rewrite_fusable_act(OP_GELU_TANH), OPS_ACT_GELU_TANH);
    graph_free(h);
    graph_free(g);
}

/* Common subexpressions; a concat of a whole split. */
static void test_cse_split_concat(void) {
    graph *g = graph_new("cse");
    const int64_t xd[4] = {1, 6, 5, 5};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t p1 = graph_pool2d(g, OP_AVGPOOL2D, x, 3, 3, 1, 1, OPS_PAD_SAME, NULL);
    int32_t p2 = graph_pool2d(g, OP_AVGPOOL2D, x, 3, 3, 1, 1, OPS_PAD_SAME, NULL);
    int32_t p3 = graph_pool2d(g, OP_MAXPOOL2D, x, 3, 3, 1, 1, OPS_PAD_SAME, NULL); /* differs */
    int32_t s = graph_ewadd(g, p1, p2);
    int32_t parts[3];
    const int64_t sizes[3] = {1, 2, 3};
    graph_split(g, s, 1, 3, sizes, parts);
    int32_t a = graph_unary(g, OP_RELU, p3);
    const int32_t cat_in[5] = {a, parts[0], parts[1], parts[2], x};
    int32_t cat = graph_concat(g, 1, 5, cat_in);
    const int32_t swapped[3] = {parts[1], parts[0], parts[2]}; /* out of order: stays */
    int32_t cat2 = graph_concat(g, 1, 3, swapped);
    graph_mark_output(g, cat);
    graph_mark_output(g, cat2);
    CHECK(graph_ok(g));
    int32_t n = 0;
    graph *h = greedy_one(g, REWRITE_CSE, &n);
    CHECK(h != NULL);
    if (h) {
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(count_op(h, OP_AVGPOOL2D), 1);
        CHECK(compare_runs(g, h) == 0.0);
        int32_t m = 0;
        graph *k = greedy_one(h, REWRITE_SPLIT_CONCAT, &m);
        CHECK(k != NULL);
        if (k) {
            CHECK_EQ_INT(m, 1);
            CHECK_EQ_INT(count_op(k, OP_CONCAT), 2);
            CHECK_EQ_INT(count_op(k, OP_SPLIT), 1); /* still read by the out-of-order concat */
            CHECK(compare_runs(g, k) == 0.0);
            graph_free(k);
        }
        graph_free(h);
    }
    graph_free(g);
    /* a concat of exactly the split's outputs is the split's input */
    g = graph_new("sc");
    x = graph_input(g, "x", 4, xd);
    graph_split(g, graph_unary(g, OP_TANH, x), 1, 2, NULL, parts);
    graph_mark_output(g, graph_unary(g, OP_RELU, graph_concat(g, 1, 2, parts)));
    h = greedy_one(g, REWRITE_SPLIT_CONCAT, &n);
    CHECK(h != NULL);
    if (h) {
        CHECK_EQ_INT(h->n_nodes, 2);
        CHECK(compare_runs(g, h) == 0.0);
        graph_free(h);
    }
    graph_free(g);
}

/* Three matmuls sharing A (different widths, biases on two), one with another activation. */
static void test_merge_matmul(void) {
    graph *g = graph_new("mm");
    const int64_t ad[2] = {6, 8}, w1d[2] = {8, 5}, w2d[2] = {8, 3}, w3d[2] = {8, 4}, b1d[1] = {5}, b3d[1] = {4};
    int32_t a = graph_input(g, "a", 2, ad);
    int32_t w1 = weight_random(g, "w1", 2, w1d, 1, 0.0f, 0.5f), w2 = weight_random(g, "w2", 2, w2d, 2, 0.0f, 0.5f);
    int32_t w3 = weight_random(g, "w3", 2, w3d, 3, 0.0f, 0.5f), w4 = weight_random(g, "w4", 2, w3d, 4, 0.0f, 0.5f);
    int32_t b1 = weight_random(g, "b1", 1, b1d, 5, 0.1f, 0.5f), b3 = weight_random(g, "b3", 1, b3d, 6, 0.1f, 0.5f);
    ops_params p;
    ops_params_default(OP_MATMUL, &p);
    int32_t m1, m2, m3, m4;
    graph_add(g, "m1", OP_MATMUL, &p, 3, (const int32_t[]){a, w1, b1}, &m1);
    graph_add(g, "m2", OP_MATMUL, &p, 2, (const int32_t[]){a, w2}, &m2);
    graph_add(g, "m3", OP_MATMUL, &p, 3, (const int32_t[]){a, w3, b3}, &m3);
    p.v[PM_ACT] = OPS_ACT_RELU;
    graph_add(g, "m4", OP_MATMUL, &p, 2, (const int32_t[]){a, w4}, &m4);
    graph_mark_output(g, m1);
    graph_mark_output(g, graph_unary(g, OP_TANH, m2));
    graph_mark_output(g, m3);
    graph_mark_output(g, m4);
    CHECK(graph_ok(g));
    CHECK_EQ_INT(count_candidates(g, REWRITE_MERGE_MATMUL), 1);
    int32_t n = 0;
    graph *h = greedy_one(g, REWRITE_MERGE_MATMUL, &n);
    CHECK(h != NULL);
    if (h) {
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(count_op(h, OP_MATMUL), 2); /* the merged one and the relu one */
        CHECK_EQ_INT(count_op(h, OP_SPLIT), 1);
        CHECK(compare_runs(g, h) < 1e-6);
        /* graph outputs keep their names */
        CHECK(!strcmp(h->tensors[h->outputs[0]].name, "m1"));
        CHECK(!strcmp(h->tensors[h->outputs[2]].name, "m3"));
        char err[256];
        int32_t folded = 0;
        CHECK(rewrite_fold_constants(&h, &folded, err, sizeof err) == 0);
        CHECK_EQ_INT(folded, 2); /* the concatenated weights and biases (with a zero block) */
        CHECK(compare_runs(g, h) < 1e-6);
        graph_free(h);
    }
    graph_free(g);
}

/* Sibling convs: 1x1, 3x3 and 5x5 'same' (aligned once enlarged), a strided one that is not. */
static void test_merge_conv(void) {
    graph *g = graph_new("convs");
    const int64_t xd[4] = {1, 4, 9, 8}, k1d[4] = {3, 4, 1, 1}, k3d[4] = {5, 4, 3, 3}, k5d[4] = {2, 4, 5, 5};
    const int64_t k3bd[4] = {6, 4, 3, 3}, bd[1] = {5};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t k1 = weight_random(g, "k1", 4, k1d, 1, 0.0f, 0.5f), k3 = weight_random(g, "k3", 4, k3d, 2, 0.0f, 0.5f);
    int32_t k5 = weight_random(g, "k5", 4, k5d, 3, 0.0f, 0.5f), k3b = weight_random(g, "k3b", 4, k3bd, 4, 0.0f, 0.5f);
    int32_t b = weight_random(g, "b", 1, bd, 5, 0.2f, 0.5f);
    const int32_t p0[4] = {0, 0, 0, 0}, p1[4] = {1, 1, 1, 1};
    int32_t c1 = graph_conv2d_ex(g, "c1", x, k1, -1, 1, 1, p0, 1, OPS_ACT_RELU);
    int32_t c3 = graph_conv2d_ex(g, "c3", x, k3, b, 1, 1, p1, 1, OPS_ACT_RELU);
    int32_t c5 = graph_conv2d(g, x, k5, 1, 1, OPS_PAD_SAME, OPS_ACT_RELU);
    int32_t cs = graph_conv2d_ex(g, "cs", x, k3b, -1, 2, 2, p1, 1, OPS_ACT_RELU); /* stride 2 */
    const int32_t cat_in[3] = {c1, c3, c5};
    graph_mark_output(g, graph_concat(g, 1, 3, cat_in));
    graph_mark_output(g, cs);
    CHECK(graph_ok(g));
    /* offered: all three (enlarged to 5x5); no single kernel size has two members */
    CHECK_EQ_INT(count_candidates(g, REWRITE_MERGE_CONV), 1);
    int32_t n = 0;
    graph *h = greedy_one(g, REWRITE_MERGE_CONV, &n);
    CHECK(h != NULL);
    if (h) {
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(count_op(h, OP_CONV2D), 2);
        CHECK_EQ_INT(count_op(h, OP_ENLARGE), 2);
        CHECK(compare_runs(g, h) < 1e-5);
        /* and the split feeding the concat in order disappears */
        int32_t m = 0;
        graph *k = greedy_one(h, REWRITE_SPLIT_CONCAT, &m);
        CHECK(k != NULL);
        if (k) {
            CHECK_EQ_INT(m, 1);
            CHECK_EQ_INT(count_op(k, OP_SPLIT), 0);
            CHECK_EQ_INT(count_op(k, OP_CONCAT), 2); /* of the kernels and of the biases */
            CHECK_EQ_INT(k->nodes[k->tensors[k->outputs[0]].producer].op, OP_CONV2D);
            CHECK(compare_runs(g, k) < 1e-5);
            graph_free(k);
        }
        graph_free(h);
    }
    graph_free(g);
    /* two 3x3 and a 1x1: offered whole, and the two 3x3 alone */
    g = graph_new("convs2");
    x = graph_input(g, "x", 4, xd);
    k1 = weight_random(g, "k1", 4, k1d, 1, 0.0f, 0.5f);
    k3 = weight_random(g, "k3", 4, k3d, 2, 0.0f, 0.5f);
    k3b = weight_random(g, "k3b", 4, k3bd, 4, 0.0f, 0.5f);
    graph_mark_output(g, graph_conv2d(g, x, k1, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    graph_mark_output(g, graph_conv2d(g, x, k3, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    graph_mark_output(g, graph_conv2d(g, x, k3b, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    CHECK_EQ_INT(count_candidates(g, REWRITE_MERGE_CONV), 2);
    graph_free(g);
}

/* rewrite_split_bias and lowering: biased conv2d and matmul split into the op and an ewadd (same
 * values), each such ewadd and the relu after it reported as free by rewrite_lowered_free, and
 * fuse-bias then fuse-act giving the biased ops back; a conv with an activation keeps its bias. */
static int lowered_free_count(const graph *g) {
    rules_match_index ix;
    char err[256];
    if (rules_match_index_build(&ix, g, err, sizeof err) < 0)
        return -1;
    uint8_t *wo = malloc((size_t)g->n_tensors + 1);
    cost_weight_only(g, wo);
    int n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += ix.live[i] && rewrite_lowered_free(&ix, wo, i);
    free(wo);
    rules_match_index_free(&ix);
    return n;
}

static void test_split_bias(void) {
    graph *g = graph_new("split_bias");
    const int64_t xd[4] = {1, 3, 6, 6}, kd[4] = {4, 3, 3, 3}, bd[1] = {4}, ad[2] = {5, 7}, wd[2] = {7, 6}, vd[1] = {6};
    const int32_t pads[4] = {1, 1, 1, 1};
    int32_t x = graph_input(g, "x", 4, xd), a = graph_input(g, "a", 2, ad);
    int32_t k1 = weight_random(g, "k1", 4, kd, 1, 0.0f, 0.5f), k2 = weight_random(g, "k2", 4, kd, 2, 0.0f, 0.5f);
    int32_t b1 = weight_random(g, "b1", 1, bd, 3, 0.5f, 0.5f), b2 = weight_random(g, "b2", 1, bd, 4, 0.5f, 0.5f);
    int32_t w = weight_random(g, "w", 2, wd, 5, 0.0f, 0.5f), v = weight_random(g, "v", 1, vd, 6, 0.1f, 0.5f);
    int32_t c1 = graph_unary(g, OP_RELU, graph_conv2d_ex(g, "c1", x, k1, b1, 1, 1, pads, 1, OPS_ACT_NONE));
    int32_t c2 = graph_conv2d_ex(g, "c2", x, k2, b2, 1, 1, pads, 1, OPS_ACT_RELU); /* keeps its bias */
    const int32_t min[3] = {a, w, v};
    int32_t m = -1;
    ops_params mp;
    ops_params_default(OP_MATMUL, &mp);
    graph_add(g, "m", OP_MATMUL, &mp, 3, min, &m);
    int32_t outs[3] = {c1, c2, m};
    for (int32_t i = 0; i < 3; i++)
        graph_mark_output(g, outs[i]);
    CHECK(graph_ok(g));
    graph *h = graph_clone(g);
    int64_t counter = 0;
    int32_t n = 0;
    char err[256];
    CHECK(rewrite_split_bias(&h, "opt", &counter, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(count_op(h, OP_EWADD), 2);
    CHECK(compare_runs(g, h) < 1e-6);
    CHECK_EQ_INT(lowered_free_count(h), 3); /* c1's ewadd and relu, m's ewadd */
    uint8_t lower[REWRITE_COUNT] = {0};
    lower[REWRITE_FUSE_BIAS] = lower[REWRITE_FUSE_ACT] = 1;
    int32_t counts[REWRITE_COUNT] = {0};
    CHECK(rewrite_greedy(&h, lower, "opt", &counter, counts, err, sizeof err) == 0);
    CHECK_EQ_INT(counts[REWRITE_FUSE_BIAS], 2);
    CHECK_EQ_INT(counts[REWRITE_FUSE_ACT], 1);
    CHECK_EQ_INT(count_op(h, OP_EWADD) + count_op(h, OP_RELU), 0); /* bias reshapes: weight-only, folded later */
    CHECK_EQ_INT(count_op(h, OP_CONV2D) + count_op(h, OP_MATMUL), 3);
    CHECK(compare_runs(g, h) < 1e-6);
    graph_free(h);
    graph_free(g);
}

/* The bias normal form (rewrite_bias_normal) on the shapes a merge rule leaves, each result run
 * against the original: "front" -- a conv's split into unequal parts, two of three read by a
 * bias ewadd (either operand order), the third by a relu (a zero bias for it), and a matmul's
 * split along its last axis, one part's add not a bias (its part has other readers); "back" -- a bias
 * add in front of a split whose halves a concat reads swapped, and not when they are in order. */
static void test_bias_normal(void) {
    graph *g = graph_new("bias_normal");
    const int64_t xd[4] = {1, 3, 6, 6}, kd[4] = {12, 3, 3, 3}, b0d[3] = {4, 1, 1}, b1d[3] = {6, 1, 1};
    const int64_t ad[2] = {5, 7}, wd[2] = {7, 6}, vd[1] = {2}, sz[3] = {4, 6, 2}, msz[2] = {4, 2};
    const int32_t pads[4] = {1, 1, 1, 1};
    int32_t x = graph_input(g, "x", 4, xd), a = graph_input(g, "a", 2, ad);
    int32_t k = weight_random(g, "k", 4, kd, 1, 0.0f, 0.5f), w = weight_random(g, "w", 2, wd, 2, 0.0f, 0.5f);
    int32_t b0 = weight_random(g, "b0", 3, b0d, 3, 0.5f, 0.5f), b1 = weight_random(g, "b1", 3, b1d, 4, 0.5f, 0.5f);
    int32_t v = weight_random(g, "v", 1, vd, 5, 0.5f, 0.5f);
    int32_t p[3], q[2];
    graph_split(g, graph_conv2d_ex(g, "c", x, k, -1, 1, 1, pads, 1, OPS_ACT_NONE), 1, 3, sz, p);
    graph_mark_output(g, graph_unary(g, OP_RELU, graph_ewadd(g, p[0], b0)));
    graph_mark_output(g, graph_ewadd(g, b1, p[1])); /* the bias as the first operand */
    graph_mark_output(g, graph_unary(g, OP_RELU, p[2]));
    graph_split(g, graph_matmul(g, a, w, OPS_ACT_NONE), 1, 2, msz, q);
    graph_mark_output(g, graph_ewadd(g, q[0], graph_ewadd(g, q[0], q[0]))); /* not a bias */
    graph_mark_output(g, graph_ewadd(g, q[1], v));
    CHECK(graph_ok(g));
    graph *h = graph_clone(g);
    int64_t counter = 0;
    int32_t n = 0;
    char err[256];
    CHECK(rewrite_bias_normal(&h, "opt", &counter, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 2); /* the conv's split and the matmul's */
    CHECK_EQ_INT(count_op(h, OP_SPLIT), 2);
    CHECK_EQ_INT(count_op(h, OP_EWADD), 4); /* one per split, and the matmul part's two others */
    CHECK(compare_runs(g, h) < 1e-6);
    CHECK_EQ_INT(lowered_free_count(h), 2); /* each split's one add, fused into its op */
    CHECK(rewrite_bias_normal(&h, "opt", &counter, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 0); /* a normal form: nothing left to move */
    graph_free(h);
    graph_free(g);

    /* back: ewadd(conv, b) -> split -> concat of the halves swapped (and in order: no move) */
    for (int32_t swapped = 0; swapped < 2; swapped++) {
        g = graph_new("bias_back");
        const int64_t bd[3] = {12, 1, 1};
        x = graph_input(g, "x", 4, xd);
        k = weight_random(g, "k", 4, kd, 1, 0.0f, 0.5f);
        int32_t b = weight_random(g, "b", 3, bd, 6, 0.5f, 0.5f), h2[2];
        graph_split(g, graph_ewadd(g, graph_conv2d_ex(g, "c", x, k, -1, 1, 1, pads, 1, OPS_ACT_NONE), b), 1, 2, NULL,
                    h2);
        const int32_t cat[2] = {h2[swapped], h2[1 - swapped]};
        graph_mark_output(g, graph_unary(g, OP_RELU, graph_concat(g, 1, 2, cat)));
        CHECK(graph_ok(g));
        h = graph_clone(g);
        CHECK(rewrite_bias_normal(&h, "opt", &counter, &n, err, sizeof err) == 0);
        CHECK_EQ_INT(n, swapped);
        if (swapped) { /* the add reads the swapped concat; the bias split and concat are weight-only */
            CHECK_EQ_INT(count_op(h, OP_SPLIT), 2);
            CHECK_EQ_INT(count_op(h, OP_CONCAT), 2);
            int32_t add = -1;
            for (int32_t i = 0; i < h->n_nodes; i++)
                if (h->nodes[i].op == OP_EWADD)
                    add = i;
            CHECK(add >= 0 && h->tensors[h->nodes[add].in[0]].producer >= 0 &&
                  h->nodes[h->tensors[h->nodes[add].in[0]].producer].op == OP_CONCAT);
        }
        CHECK(compare_runs(g, h) < 1e-6);
        graph_free(h);
        graph_free(g);
    }
}

/* --- layout ---------------------------------------------------------------------------------- */

/* A matmul with a bias and an activation, as fuse-bias and fuse-act leave the pointwise layers. */
static int32_t matmul_bias(graph *g, int32_t a, int32_t w, int32_t b, ops_act act) {
    ops_params mp;
    ops_params_default(OP_MATMUL, &mp);
    mp.v[PM_ACT] = act;
    const int32_t in[3] = {a, w, b};
    int32_t out = -1;
    graph_add(g, NULL, OP_MATMUL, &mp, 3, in, &out);
    return out;
}

/* A ConvNeXt block as torchvision exports it (after fuse-bias and fuse-act): depthwise conv on
 * NCHW, transpose to NHWC, layernorm over C, matmul C -> 4C with bias and gelu, a constant
 * scale along C (variant 1; variant 2: a one-value offset too, and an unfused gelu-like product
 * of two chain tensors), matmul 4C -> C with bias, transpose back, layer scale (C,1,1), residual. */
static graph *convnext_block(int variant, int32_t *chain_out) {
    graph *g = graph_new("convnext_block");
    const int64_t C = 8, xd[4] = {1, 8, 5, 6}, dwd[4] = {8, 1, 3, 3}, cd[1] = {8}, w1d[2] = {8, 32}, hd[1] = {32};
    const int64_t w2d[2] = {32, 8}, lsd[3] = {8, 1, 1}, one[1] = {1};
    const int32_t pads[4] = {1, 1, 1, 1}, to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t dw = graph_conv2d_ex(g, "dw", x, weight_random(g, "dwk", 4, dwd, 1, 0.0f, 0.3f),
                                 weight_random(g, "dwb", 1, cd, 2, 0.0f, 0.1f), 1, 1, pads, (int32_t)C, OPS_ACT_NONE);
    int32_t t = graph_transpose(g, dw, 4, to_nhwc);
    int32_t ln = graph_layernorm(g, t, weight_random(g, "gamma", 1, cd, 3, 1.0f, 0.2f),
                                 weight_random(g, "beta", 1, cd, 4, 0.0f, 0.2f), 3, 1e-6f);
    int32_t h = matmul_bias(g, ln, weight_random(g, "w1", 2, w1d, 5, 0.0f, 0.35f),
                            weight_random(g, "b1", 1, hd, 6, 0.0f, 0.1f), OPS_ACT_GELU);
    if (variant >= 1)
        h = graph_ewmul(g, h, weight_random(g, "s", 1, hd, 7, 1.0f, 0.3f));
    if (variant >= 2) {
        int32_t u = graph_ewadd(g, weight_random(g, "off", 1, one, 8, 0.5f, 0.1f), h); /* constant first */
        h = graph_ewmul(g, h, graph_unary(g, OP_SIGMOID, u));
    }
    int32_t y = matmul_bias(g, h, weight_random(g, "w2", 2, w2d, 9, 0.0f, 0.2f),
                            weight_random(g, "b2", 1, cd, 10, 0.0f, 0.1f), OPS_ACT_NONE);
    if (chain_out)
        *chain_out = y;
    int32_t back = graph_transpose(g, y, 4, to_nchw);
    int32_t scaled = graph_ewmul(g, weight_random(g, "ls", 3, lsd, 11, 0.5f, 0.2f), back);
    graph_mark_output(g, graph_ewadd(g, scaled, x));
    return g;
}

/* The layout result through ONNX: the layernorm over the channels is exported as Transpose,
 * LayerNormalization, Transpose (ONNX normalises up to the last axis only); the import computes
 * the same values, and layout takes the exported pair out again. */
static void layout_onnx_roundtrip(const graph *orig, const graph *h) {
    char err[512];
    size_t len = 0;
    uint8_t *buf = onnx_export_buffer(h, &len, err, sizeof err);
    CHECK(buf != NULL);
    if (!buf) {
        fprintf(stderr, "export: %s\n", err);
        return;
    }
    graph *back = onnx_import_buffer(buf, len, "layout.onnx", NULL, NULL, err, sizeof err);
    free(buf);
    CHECK(back != NULL);
    if (!back) {
        fprintf(stderr, "import: %s\n", err);
        return;
    }
    CHECK_EQ_INT(count_op(back, OP_TRANSPOSE), 2 * count_op(h, OP_LAYERNORM));
    CHECK(compare_runs(orig, back) < 1e-5);
    uint8_t kinds[REWRITE_COUNT] = {0};
    int32_t counts[REWRITE_COUNT] = {0};
    kinds[REWRITE_LAYOUT] = 1;
    char prefix[32];
    rules_apply_prefix(back, prefix, sizeof prefix); /* the export kept h's "opt." names */
    int64_t counter = 0;
    graph *again = graph_clone(back);
    CHECK(rewrite_greedy(&again, kinds, prefix, &counter, counts, err, sizeof err) == 0);
    CHECK_EQ_INT(counts[REWRITE_LAYOUT], count_op(h, OP_LAYERNORM));
    CHECK_EQ_INT(count_op(again, OP_TRANSPOSE), 0);
    CHECK(compare_runs(orig, again) < 1e-5);
    graph_free(again);
    graph_free(back);
}

/* Transposes left once the weight-only ones are folded, and the result's node count. */
static void layout_apply(const graph *g, int32_t want_transposes, int32_t want_nodes) {
    int32_t n = 0, folded = 0;
    graph *h = greedy_one(g, REWRITE_LAYOUT, &n);
    CHECK(h != NULL);
    if (!h)
        return;
    CHECK_EQ_INT(n, 1);
    char err[256];
    CHECK(rewrite_fold_constants(&h, &folded, err, sizeof err) == 0);
    CHECK_EQ_INT(count_op(h, OP_TRANSPOSE), want_transposes);
    CHECK_EQ_INT(h->n_nodes, want_nodes);
    double e = compare_runs(g, h);
    if (e >= 1e-5)
        fprintf(stderr, "layout: rel L2 %g\n", e);
    CHECK(e < 1e-5);
    layout_onnx_roundtrip(g, h);
    graph_free(h);
}

static void test_layout(void) {
    /* the block: 9 nodes -> 7 (the transposes gone; the matmuls as 1x1 convs reading NCHW) */
    for (int variant = 0; variant < 3; variant++) {
        graph *g = convnext_block(variant, NULL);
        CHECK(graph_ok(g));
        CHECK_EQ_INT(count_candidates(g, REWRITE_LAYOUT), 1);
        int32_t n0 = g->n_nodes;
        layout_apply(g, 0, n0 - 2);
        int32_t n = 0;
        graph *h = greedy_one(g, REWRITE_LAYOUT, &n);
        if (h) {
            CHECK_EQ_INT(count_op(h, OP_CONV2D), 3);
            CHECK_EQ_INT(count_op(h, OP_MATMUL), 0);
            for (int32_t i = 0; i < h->n_nodes; i++)
                if (h->nodes[i].op == OP_LAYERNORM)
                    CHECK(h->nodes[i].p.v[PM_AXIS] == 1 && h->nodes[i].p.v[PM_AXIS_END] == 2);
            CHECK_EQ_INT(count_candidates(h, REWRITE_LAYOUT), 0);
            graph_free(h);
        }
        graph_free(g);
    }
    /* not when a chain tensor is read outside it (here: also a graph output) */
    int32_t y = -1;
    graph *g = convnext_block(0, &y);
    graph_mark_output(g, y);
    CHECK_EQ_INT(count_candidates(g, REWRITE_LAYOUT), 0);
    graph_free(g);

    /* LayerNorm2d (transpose, layernorm, transpose back): one layernorm over the channels; and
     * not when the way back is another permutation, or the constant runs along another axis */
    const int64_t xd[4] = {2, 6, 4, 5}, cd[1] = {6}, wd[3] = {4, 1, 1};
    const int32_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2}, other[4] = {0, 3, 2, 1};
    for (int c = 0; c < 3; c++) {
        g = graph_new("ln2d");
        int32_t x = graph_input(g, "x", 4, xd);
        int32_t t = graph_transpose(g, graph_unary(g, OP_RELU, x), 4, to_nhwc);
        t = graph_layernorm(g, t, weight_random(g, "gamma", 1, cd, 1, 1.0f, 0.2f), -1, 3, 1e-5f);
        if (c == 2) /* (4,1,1) right-aligned against (2,4,5,6): along H */
            t = graph_ewmul(g, t, weight_random(g, "w", 3, wd, 2, 1.0f, 0.2f));
        graph_mark_output(g, graph_transpose(g, t, 4, c == 1 ? other : to_nchw));
        CHECK(graph_ok(g));
        CHECK_EQ_INT(count_candidates(g, REWRITE_LAYOUT), c == 0);
        if (c == 0)
            layout_apply(g, 0, 2); /* relu, layernorm */
        graph_free(g);
    }

    /* rank 3 (N, C, L) with perm (0, 2, 1): the layernorm moves, a matmul (no NCHW conv) does not */
    const int64_t sd[3] = {2, 6, 7}, md[2] = {6, 6};
    const int32_t swap[3] = {0, 2, 1};
    for (int mm = 0; mm < 2; mm++) {
        g = graph_new("seq");
        int32_t x = graph_input(g, "x", 3, sd);
        int32_t t = graph_layernorm(g, graph_transpose(g, x, 3, swap), -1, -1, 2, 1e-5f);
        if (mm)
            t = graph_matmul(g, t, weight_random(g, "m", 2, md, 3, 0.0f, 0.3f), OPS_ACT_NONE);
        graph_mark_output(g, graph_unary(g, OP_TANH, graph_transpose(g, t, 3, swap)));
        CHECK(graph_ok(g));
        CHECK_EQ_INT(count_candidates(g, REWRITE_LAYOUT), !mm);
        if (!mm)
            layout_apply(g, 0, 2); /* layernorm over dim 1 only, tanh */
        graph_free(g);
    }
}

int main(void) {
    CHECK_EQ_INT(REWRITE_COUNT, 8);
    for (int32_t k = 0; k < REWRITE_COUNT; k++)
        CHECK(rewrite_names[k] != NULL);
    test_bn_fold();
    test_fusion();
    test_fusion_acts();
    test_split_bias();
    test_bias_normal();
    test_cse_split_concat();
    test_merge_matmul();
    test_merge_conv();
    test_layout();
    return TEST_REPORT();
}
