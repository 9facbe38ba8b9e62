/* test_graph.c: the graph IR and builder: shapes of a small CNN and MLP, sticky errors,
 * topological order and cycles, the canonical hash (invariances and sensitivity), clone and
 * compact, weight initialisation (determinism, the generator's definition, statistics), FILE
 * weights, DATA weights and their blobs (sharing across clones, reference counts from several
 * threads, content hashes, values), the element limit, statistics and DOT output.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "test.h"

static int shape_is(const graph *g, int32_t t, int32_t rank, const int64_t *dims) {
    if (t < 0 || t >= g->n_tensors || g->tensors[t].shape.rank != rank)
        return 0;
    for (int32_t d = 0; d < rank; d++)
        if (g->tensors[t].shape.dims[d] != dims[d])
            return 0;
    return 1;
}

/* conv(3x3 same, relu) -> maxpool 2x2/2 -> conv(3x3/2 valid) -> global avgpool -> reshape -> fc -> softmax */
static graph *small_cnn(void) {
    graph *g = graph_new("cnn");
    int64_t xd[4] = {2, 3, 16, 16}, w1d[4] = {8, 3, 3, 3}, w2d[4] = {16, 8, 3, 3}, fd[2] = {16, 10}, rd[2] = {2, 16};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t w1 = graph_weight_he(g, "w1", 4, w1d);
    int32_t w2 = graph_weight_he(g, "w2", 4, w2d);
    int32_t fw = graph_weight_he(g, "fc_w", 2, fd);
    int32_t c1 = graph_conv2d(g, x, w1, 1, 1, OPS_PAD_SAME, OPS_ACT_RELU);
    int32_t p1 = graph_pool2d(g, OP_MAXPOOL2D, c1, 2, 2, 2, 2, OPS_PAD_VALID, NULL);
    int32_t c2 = graph_conv2d(g, p1, w2, 2, 2, OPS_PAD_VALID, OPS_ACT_NONE);
    int32_t gp = graph_global_avgpool(g, c2);
    int32_t r = graph_reshape(g, gp, 2, rd);
    int32_t fc = graph_matmul(g, r, fw, OPS_ACT_NONE);
    int32_t sm = graph_softmax(g, fc, 1);
    graph_mark_output(g, sm);
    return g;
}

static void test_builder_cnn(void) {
    graph *g = small_cnn();
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "  %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    CHECK_EQ_INT(g->n_nodes, 7);
    CHECK_EQ_INT(g->n_inputs, 1);
    CHECK_EQ_INT(g->n_weights, 3);
    CHECK_EQ_INT(g->n_outputs, 1);
    CHECK_EQ_INT(g->n_tensors, 4 + 7);
    const int64_t c1[4] = {2, 8, 16, 16}, p1[4] = {2, 8, 8, 8}, c2[4] = {2, 16, 3, 3}, gp[4] = {2, 16, 1, 1},
                  r[2] = {2, 16}, fc[2] = {2, 10};
    CHECK(shape_is(g, graph_find_tensor(g, "conv2d_0"), 4, c1));
    CHECK(shape_is(g, graph_find_tensor(g, "maxpool2d_0"), 4, p1));
    CHECK(shape_is(g, graph_find_tensor(g, "conv2d_1"), 4, c2));
    CHECK(shape_is(g, graph_find_tensor(g, "globalavgpool_0"), 4, gp));
    CHECK(shape_is(g, graph_find_tensor(g, "reshape_0"), 2, r));
    CHECK(shape_is(g, graph_find_tensor(g, "matmul_0"), 2, fc));
    CHECK(shape_is(g, g->outputs[0], 2, fc));
    CHECK(!strcmp(g->tensors[g->outputs[0]].name, "softmax_0"));
    /* node outputs name their producer; leaves have none */
    int32_t t = graph_find_tensor(g, "conv2d_1");
    CHECK_EQ_INT(g->tensors[t].kind, GRAPH_T_INTER);
    CHECK(!strcmp(g->nodes[g->tensors[t].producer].name, "conv2d_1"));
    CHECK_EQ_INT(g->nodes[g->tensors[t].producer].op, OP_CONV2D);
    CHECK_EQ_INT(g->nodes[g->tensors[t].producer].p.v[PM_STRIDE_H], 2);
    CHECK_EQ_INT(g->tensors[graph_find_tensor(g, "x")].producer, -1);
    CHECK_EQ_INT(g->tensors[graph_find_tensor(g, "w1")].kind, GRAPH_T_WEIGHT);
    CHECK_EQ_INT(graph_find_tensor(g, "nope"), -1);
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), 0);

    graph_stats st;
    graph_get_stats(g, &st);
    CHECK_EQ_INT(st.n_nodes, 7);
    CHECK_EQ_INT(st.op_count[OP_CONV2D], 2);
    CHECK_EQ_INT(st.op_count[OP_MATMUL], 1);
    CHECK_EQ_INT(st.op_count[OP_RELU], 0);
    CHECK_EQ_INT(st.param_bytes, 4 * (8 * 3 * 9 + 16 * 8 * 9 + 16 * 10));
    CHECK_EQ_INT(st.act_bytes, 4 * (2 * 8 * 256 + 2 * 8 * 64 + 2 * 16 * 9 + 2 * 16 + 2 * 16 + 2 * 10 + 2 * 10));
    /* conv1 alone: 2 * N*F*H*W*C*KH*KW multiply-adds */
    CHECK(st.flops >= 2.0 * 2 * 8 * 16 * 16 * 3 * 9);
    graph_free(g);
}

static void test_builder_mlp(void) {
    graph *g = graph_new("mlp");
    int64_t xd[2] = {4, 784}, w1d[2] = {784, 128}, b1d[1] = {128}, w2d[2] = {128, 10};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w1 = graph_weight_he(g, "w1", 2, w1d);
    int32_t b1 = graph_weight_const(g, "b1", 1, b1d, 0.1f);
    int32_t w2 = graph_weight_he(g, "w2", 2, w2d);
    ops_params p;
    ops_params_default(OP_MATMUL, &p);
    p.v[PM_ACT] = OPS_ACT_RELU;
    int32_t in[3] = {x, w1, b1}, h = -1;
    CHECK_EQ_INT(graph_add(g, "fc1", OP_MATMUL, &p, 3, in, &h), 1);
    int32_t y = graph_matmul(g, h, w2, OPS_ACT_NONE);
    int32_t z = graph_unary(g, OP_TANH, y);
    graph_mark_output(g, z);
    CHECK(graph_ok(g));
    const int64_t hd[2] = {4, 128}, yd[2] = {4, 10};
    CHECK(shape_is(g, h, 2, hd));
    CHECK(!strcmp(g->tensors[h].name, "fc1"));
    CHECK(shape_is(g, y, 2, yd));
    CHECK(shape_is(g, z, 2, yd));
    CHECK(!strcmp(g->tensors[z].name, "tanh_0"));
    CHECK_EQ_INT(g->nodes[0].p.v[PM_ACT], OPS_ACT_RELU);
    CHECK_EQ_INT(g->nodes[0].n_in, 3);
    /* He init: std = sqrt(2 / fan_in), fan_in = 128 for w2 (dims (128,10): numel / dims[0] = 10)... */
    CHECK_NEAR(g->tensors[w1].init.std, sqrtf(2.0f / 128.0f), 1e-7);
    CHECK_NEAR(g->tensors[w2].init.std, sqrtf(2.0f / 10.0f), 1e-7);
    CHECK_EQ_INT(g->tensors[b1].init.kind, GRAPH_INIT_CONSTANT);
    CHECK(g->tensors[b1].init.value == 0.1f);

    /* split: several outputs named "<node>:<i>", sizes given */
    int64_t sz[3] = {2, 3, 5};
    int32_t parts[OPS_MAX_OUTPUTS];
    CHECK_EQ_INT(graph_split(g, y, 1, 3, sz, parts), 3);
    const int64_t s0[2] = {4, 2}, s2[2] = {4, 5};
    CHECK(shape_is(g, parts[0], 2, s0));
    CHECK(shape_is(g, parts[2], 2, s2));
    CHECK(!strcmp(g->tensors[parts[1]].name, "split_0:1"));
    int32_t perm[2] = {1, 0};
    int32_t tr = graph_transpose(g, parts[2], 2, perm);
    const int64_t trd[2] = {5, 4};
    CHECK(shape_is(g, tr, 2, trd));
    int32_t cat[2] = {parts[0], parts[1]};
    int32_t cc = graph_concat(g, 1, 2, cat);
    const int64_t ccd[2] = {4, 5};
    CHECK(shape_is(g, cc, 2, ccd));
    CHECK(graph_ok(g));
    graph_free(g);
}

static void test_sticky_errors(void) {
    graph *g = graph_new("bad");
    int64_t xd[4] = {1, 3, 8, 8}, wd[4] = {4, 5, 3, 3};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t w = graph_weight_he(g, "w", 4, wd);
    CHECK(x >= 0 && w >= 0);
    int32_t c = graph_conv2d_ex(g, "conv", x, w, -1, 1, 1, NULL, 1, OPS_ACT_NONE); /* 3 vs 5 channels */
    CHECK_EQ_INT(c, -1);
    CHECK(!graph_ok(g));
    CHECK_STR_CONTAINS(graph_error(g), "node 'conv'");
    char first[GRAPH_ERR_LEN];
    snprintf(first, sizeof first, "%s", graph_error(g));
    /* every later call fails and the first message stays */
    int64_t d1[1] = {3};
    CHECK_EQ_INT(graph_input(g, "y", 1, d1), -1);
    CHECK_EQ_INT(graph_unary(g, OP_RELU, x), -1);
    CHECK_EQ_INT(graph_mark_output(g, x), -1);
    CHECK(!strcmp(graph_error(g), first));
    CHECK_EQ_INT(g->n_nodes, 0);
    CHECK_EQ_INT(g->n_tensors, 2);
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), -1);
    CHECK(graph_to_json_string(g) == NULL);
    graph_free(g);

    struct {
        const char *want;
        int which;
    } cases[] = {
        {"input 'x': duplicate tensor name", 0},
        {"dimension 1 is 0", 1},
        {"rank 7", 2},
        {"a name is required", 3},
        {"node 'relu_0': duplicate node name", 4},
        {"not a tensor of this graph", 5},
        {"op 'relu' takes 1 input, got 2", 6},
        {"dimension 0 is -2", 7},
        {"control character", 8},
        {"std >= 0", 9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        graph *h = graph_new("e");
        int64_t d[7] = {2, 3, 1, 1, 1, 1, 1}, z[2] = {2, 0}, neg[1] = {-2};
        int32_t a = graph_input(h, "x", 2, d), r = -1;
        CHECK(a >= 0);
        int32_t two[2] = {a, a};
        graph_init bad = {GRAPH_INIT_RANDOM, 1, 0.0f, -1.0f, 0.0f, NULL, 0, NULL};
        switch (cases[i].which) {
        case 0: r = graph_input(h, "x", 2, d); break;
        case 1: r = graph_input(h, "z", 2, z); break;
        case 2: r = graph_input(h, "big", 7, d); break;
        case 3: r = graph_weight_const(h, NULL, 1, d, 1.0f); break;
        case 4:
            graph_add(h, "relu_0", OP_RELU, NULL, 1, &a, NULL);
            r = graph_add(h, "relu_0", OP_RELU, NULL, 1, &a, NULL);
            break;
        case 5: r = graph_unary(h, OP_RELU, 99); break;
        case 6: r = graph_add(h, NULL, OP_RELU, NULL, 2, two, NULL); break;
        case 7: r = graph_weight_he(h, "w", 1, neg); break;
        case 8: r = graph_input(h, "a\nb", 2, d); break;
        case 9: r = graph_weight(h, "w", 2, d, bad); break;
        }
        CHECK_EQ_INT(r, -1);
        CHECK_STR_CONTAINS(graph_error(h), cases[i].want);
        CHECK(!strchr(graph_error(h), '\n'));
        graph_free(h);
    }
}

/* Auto names skip names already taken; given names are kept. */
static void test_names(void) {
    graph *g = graph_new("names");
    int64_t d[1] = {4};
    int32_t x = graph_input(g, "relu_0", 1, d); /* a tensor already called relu_0 */
    int32_t a = graph_unary(g, OP_RELU, x);
    CHECK(a >= 0 && !strcmp(g->tensors[a].name, "relu_1"));
    int32_t b = graph_unary(g, OP_RELU, a);
    CHECK(b >= 0 && !strcmp(g->tensors[b].name, "relu_2"));
    CHECK(graph_ok(g));
    graph_free(g);
}

/* Two independent chains and a join; node ids reordered by editing inputs directly. */
static void test_topo_and_cycles(void) {
    graph *g = graph_new("topo");
    int64_t d[2] = {3, 4};
    int32_t x = graph_input(g, "x", 2, d);
    int32_t a = graph_unary(g, OP_RELU, x);    /* node 0 */
    int32_t b = graph_unary(g, OP_TANH, x);    /* node 1 */
    int32_t c = graph_ewadd(g, a, b);          /* node 2 */
    int32_t e = graph_unary(g, OP_SIGMOID, x); /* node 3 */
    graph_mark_output(g, c);
    graph_mark_output(g, e);
    CHECK(graph_ok(g));
    int32_t order[4];
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), 0);
    CHECK(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3);
    uint64_t h0 = graph_hash(g);

    /* node 0 now reads node 3's output: 3 must come before 0; among the ready ones lowest id first */
    g->nodes[0].in[0] = e;
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), 0);
    CHECK(order[0] == 1 && order[1] == 3 && order[2] == 0 && order[3] == 2);
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), 0);
    CHECK(graph_hash(g) != h0);

    /* a cycle: relu(a) reads tanh(b) and tanh reads relu */
    g->nodes[0].in[0] = b;
    g->nodes[1].in[0] = a;
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "cycle");
    CHECK(strstr(err, "relu_0") && strstr(err, "tanh_0"));
    CHECK_STR_CONTAINS(err, "node 'relu_0': cycle: relu_0 -> tanh_0 -> relu_0");
    CHECK(!strstr(err, "sigmoid")); /* not on the cycle */
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "cycle");
    CHECK(graph_hash(g) == 0);
    CHECK(graph_to_json_string(g) == NULL);
    /* a self loop */
    g->nodes[1].in[0] = x;
    g->nodes[0].in[0] = a;
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "relu_0 -> relu_0");
    /* a node downstream of the cycle is not named as on it */
    g->nodes[0].in[0] = x;
    g->nodes[2].in[0] = g->nodes[2].out[0];
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "node 'ewadd_0': cycle: ewadd_0 -> ewadd_0");
    graph_free(g);
}

/* The same computation built in a different order, with other names and weight order. */
static graph *hash_graph(int variant, int32_t stride, float wstd) {
    graph *g = graph_new(variant ? "B" : "A");
    int64_t xd[4] = {1, 4, 8, 8}, wd[4] = {4, 4, 3, 3}, vd[4] = {4, 4, 1, 1};
    graph_init iw = {GRAPH_INIT_RANDOM, 11, 0.0f, wstd, 0.0f, NULL, 0, NULL};
    graph_init iv = {GRAPH_INIT_RANDOM, 12, 0.0f, 0.1f, 0.0f, NULL, 0, NULL};
    int32_t x = graph_input(g, variant ? "input" : "x", 4, xd);
    int32_t w, v;
    if (!variant) {
        w = graph_weight(g, "w", 4, wd, iw);
        v = graph_weight(g, "v", 4, vd, iv);
    } else {
        v = graph_weight(g, "kernel1x1", 4, vd, iv);
        w = graph_weight(g, "kernel3x3", 4, wd, iw);
    }
    int32_t a, b;
    if (!variant) {
        a = graph_conv2d(g, x, w, stride, stride, OPS_PAD_SAME, OPS_ACT_RELU);
        b = graph_conv2d(g, x, v, stride, stride, OPS_PAD_SAME, OPS_ACT_NONE);
    } else {
        b = graph_conv2d(g, x, v, stride, stride, OPS_PAD_SAME, OPS_ACT_NONE);
        a = graph_conv2d(g, x, w, stride, stride, OPS_PAD_SAME, OPS_ACT_RELU);
    }
    int32_t s = graph_ewadd(g, a, b);
    graph_mark_output(g, s);
    return g;
}

static void test_hash(void) {
    graph *a = hash_graph(0, 1, 0.2f), *b = hash_graph(1, 1, 0.2f);
    CHECK(graph_ok(a) && graph_ok(b));
    uint64_t ha = graph_hash(a);
    CHECK(ha != 0);
    CHECK(ha == graph_hash(b));
    CHECK(ha == graph_hash(a)); /* stable */
    /* node ids really differ between the two */
    CHECK(a->nodes[0].p.v[PM_ACT] != b->nodes[0].p.v[PM_ACT]);

    /* renaming every tensor and node keeps the hash */
    graph *c = graph_clone(a);
    for (int32_t t = 0; t < c->n_tensors; t++) {
        free(c->tensors[t].name);
        char nm[32];
        snprintf(nm, sizeof nm, "T%d", (int)t);
        c->tensors[t].name = strdup(nm);
    }
    for (int32_t n = 0; n < c->n_nodes; n++) {
        free(c->nodes[n].name);
        char nm[32];
        snprintf(nm, sizeof nm, "N%d", (int)n);
        c->nodes[n].name = strdup(nm);
    }
    CHECK(graph_hash(c) == ha);
    /* tags are for passes, not structure */
    c->nodes[0].tag = 1;
    CHECK(graph_hash(c) == ha);

    /* a parameter changes it; so does an initialiser and the input order */
    graph *d = hash_graph(0, 2, 0.2f), *e = hash_graph(0, 1, 0.25f);
    CHECK(graph_hash(d) != ha);
    CHECK(graph_hash(e) != ha);
    c->nodes[2].p.v[PM_ACT] = OPS_ACT_TANH; /* ewadd declares no act: not part of its structure */
    CHECK(graph_hash(c) == ha);
    c->nodes[0].p.v[PM_ACT] = OPS_ACT_TANH;
    CHECK(graph_hash(c) != ha);
    c->nodes[0].p.v[PM_ACT] = a->nodes[0].p.v[PM_ACT];
    CHECK(graph_hash(c) == ha);
    int32_t tmp = c->nodes[2].in[0];
    c->nodes[2].in[0] = c->nodes[2].in[1];
    c->nodes[2].in[1] = tmp;
    CHECK(graph_hash(c) != ha); /* inputs by position */

    /* unreachable nodes do not count */
    graph *f = hash_graph(0, 1, 0.2f);
    graph_unary(f, OP_RELU, f->inputs[0]);
    CHECK(graph_ok(f));
    CHECK(graph_hash(f) == ha);

    graph *u = graph_new("u");
    int64_t dd[2] = {2, 2};
    int32_t p = graph_input(u, "p", 2, dd), q = graph_input(u, "q", 2, dd);
    graph_mark_output(u, graph_ewadd(u, p, q)); /* EWSUB would do too; add is symmetric in values only */
    uint64_t hu = graph_hash(u);
    u->nodes[0].in[0] = q;
    u->nodes[0].in[1] = p;
    CHECK(graph_hash(u) != hu);

    graph_free(a);
    graph_free(b);
    graph_free(c);
    graph_free(d);
    graph_free(e);
    graph_free(f);
    graph_free(u);
}

static void test_clone_compact(void) {
    graph *g = small_cnn();
    int64_t dd[4] = {2, 3, 16, 16}, ud[1] = {5};
    /* a dead branch and an unused weight */
    int32_t dead = graph_unary(g, OP_SIGMOID, g->inputs[0]);
    graph_unary(g, OP_RELU, dead);
    graph_weight_he(g, "unused", 1, ud);
    int32_t x2 = graph_input(g, "x2", 4, dd); /* an unused input stays: inputs are the interface */
    CHECK(graph_ok(g) && x2 >= 0);
    uint64_t h = graph_hash(g);
    char *j0 = graph_to_json_string(g);
    CHECK(j0 != NULL);

    graph *c = graph_clone(g);
    CHECK(c != g && c->tensors != g->tensors && c->nodes != g->nodes);
    CHECK(c->tensors[0].name != g->tensors[0].name);
    CHECK(graph_hash(c) == h);
    char *j1 = graph_to_json_string(c);
    CHECK(j0 && j1 && !strcmp(j0, j1));
    free(j1);
    /* the clone is independent */
    c->nodes[0].p.v[PM_STRIDE_H] = 7;
    free(c->nodes[0].name);
    c->nodes[0].name = strdup("changed");
    CHECK(graph_hash(g) == h);
    CHECK(strcmp(g->nodes[0].name, "changed"));
    graph_free(c);

    int32_t nn = g->n_nodes, nt = g->n_tensors, nw = g->n_weights;
    graph_compact(g);
    CHECK_EQ_INT(g->n_nodes, nn - 2);
    CHECK_EQ_INT(g->n_tensors, nt - 3);
    CHECK_EQ_INT(g->n_weights, nw - 1);
    CHECK_EQ_INT(g->n_inputs, 2);
    CHECK_EQ_INT(graph_find_tensor(g, "unused"), -1);
    CHECK_EQ_INT(graph_find_tensor(g, "sigmoid_0"), -1);
    CHECK(graph_find_tensor(g, "x2") >= 0);
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), 0);
    CHECK(graph_hash(g) == h);
    CHECK(!strcmp(g->tensors[g->outputs[0]].name, "softmax_0"));
    /* the builder keeps working on a compacted graph */
    int32_t extra = graph_unary(g, OP_RELU, g->outputs[0]);
    CHECK(extra == g->n_tensors - 1);
    CHECK(graph_ok(g));
    free(j0);
    graph_free(g);
}

/* The generator's definition, written out independently. */
static uint64_t ref_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static float ref_normal(uint64_t seed, int64_t i, float mean, float std) {
    const uint64_t G = UINT64_C(0x9E3779B97F4A7C15);
    uint64_t r1 = ref_mix(seed + (2 * (uint64_t)i + 1) * G), r2 = ref_mix(seed + (2 * (uint64_t)i + 2) * G);
    double u1 = (double)((r1 >> 11) + 1) / 9007199254740992.0, u2 = (double)(r2 >> 11) / 9007199254740992.0;
    return (float)(mean + std * (sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2)));
}

static void test_weights_random(void) {
    enum { N = 100000 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    graph_fill_normal(a, N, 42, 0.0f, 1.0f);
    graph_fill_normal(b, N, 42, 0.0f, 1.0f);
    CHECK(!memcmp(a, b, N * sizeof *a));
    /* values depend on (seed, index) only: a prefix is the same */
    float small[10];
    graph_fill_normal(small, 10, 42, 0.0f, 1.0f);
    CHECK(!memcmp(small, a, sizeof small));
    int same = 1;
    for (int64_t i = 0; i < N; i += 997)
        same &= a[i] == ref_normal(42, i, 0.0f, 1.0f);
    CHECK(same);
    double s = 0, s2 = 0, mx = 0;
    for (int i = 0; i < N; i++) {
        s += a[i];
        s2 += (double)a[i] * a[i];
        if (fabs(a[i]) > mx)
            mx = fabs(a[i]);
    }
    double mean = s / N, sd = sqrt(s2 / N - mean * mean);
    CHECK_NEAR(mean, 0.0, 0.015); /* standard error 0.0032 */
    CHECK_NEAR(sd, 1.0, 0.015);
    CHECK(mx > 3.5 && mx < 6.5);
    int within1 = 0;
    for (int i = 0; i < N; i++)
        within1 += fabsf(a[i]) < 1.0f;
    CHECK_NEAR(within1 / (double)N, 0.6827, 0.01);

    graph_fill_normal(b, N, 43, 2.0f, 0.5f);
    int differ = 0;
    s = s2 = 0;
    for (int i = 0; i < N; i++) {
        differ += b[i] != a[i] * 0.5f + 2.0f;
        s += b[i];
        s2 += (double)b[i] * b[i];
    }
    mean = s / N;
    sd = sqrt(s2 / N - mean * mean);
    CHECK(differ > N / 2);
    CHECK_NEAR(mean, 2.0, 0.01);
    CHECK_NEAR(sd, 0.5, 0.01);

    /* a He weight's values come from its name, not from the order of declaration */
    graph *g1 = graph_new("a"), *g2 = graph_new("b");
    int64_t d[2] = {200, 500}, e[1] = {3};
    graph_weight_he(g1, "first", 1, e);
    int32_t w1 = graph_weight_he(g1, "w", 2, d);
    int32_t w2 = graph_weight_he(g2, "w", 2, d);
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_weight_values(g1, w1, a, err, sizeof err), 0);
    CHECK_EQ_INT(graph_weight_values(g2, w2, b, err, sizeof err), 0);
    CHECK(!memcmp(a, b, N * sizeof *a));
    s = s2 = 0;
    for (int i = 0; i < N; i++) {
        s += a[i];
        s2 += (double)a[i] * a[i];
    }
    mean = s / N;
    sd = sqrt(s2 / N - mean * mean);
    CHECK_NEAR(mean, 0.0, 0.001);
    CHECK_NEAR(sd, sqrt(2.0 / 500.0), 0.001);
    CHECK(g1->tensors[w1].init.seed < (UINT64_C(1) << 53));
    int32_t w3 = graph_weight_he(g2, "w_other", 2, d);
    CHECK(g2->tensors[w3].init.seed != g2->tensors[w2].init.seed);
    /* constant */
    int32_t k = graph_weight_const(g2, "k", 1, e, -1.5f);
    float kv[3] = {0};
    CHECK_EQ_INT(graph_weight_values(g2, k, kv, err, sizeof err), 0);
    CHECK(kv[0] == -1.5f && kv[1] == -1.5f && kv[2] == -1.5f);
    /* not a weight */
    int32_t in = graph_input(g2, "in", 1, e);
    CHECK_EQ_INT(graph_weight_values(g2, in, kv, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "not a weight");
    graph_free(g1);
    graph_free(g2);
    free(a);
    free(b);
}

static void test_weights_file(void) {
    char dir[] = "/tmp/tasc_test_graph_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/w.bin", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    /* 8 bytes of header, then 6 float32 little-endian */
    unsigned char hdr[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    fwrite(hdr, 1, 8, f);
    float vals[6] = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 65504.0f};
    for (int i = 0; i < 6; i++) {
        uint32_t u;
        memcpy(&u, &vals[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        fwrite(b, 1, 4, f);
    }
    fclose(f);

    graph *g = graph_new("fw");
    g->base_dir = strdup(dir);
    int64_t d[2] = {2, 3}, big[2] = {2, 4};
    graph_init in = {GRAPH_INIT_FILE, 0, 0, 0, 0, "w.bin", 8, NULL};
    int32_t w = graph_weight(g, "wf", 2, d, in);
    int32_t wb = graph_weight(g, "too_big", 2, big, in);
    graph_init missing = {GRAPH_INIT_FILE, 0, 0, 0, 0, "nope.bin", 0, NULL};
    int32_t wm = graph_weight(g, "gone", 2, d, missing);
    graph_init abs = {GRAPH_INIT_FILE, 0, 0, 0, 0, path, 12, NULL};
    int64_t d5[1] = {5};
    int32_t wa = graph_weight(g, "absolute", 1, d5, abs);
    CHECK(graph_ok(g));
    CHECK(g->tensors[w].init.path != in.path); /* copied */
    float out[8];
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_weight_values(g, w, out, err, sizeof err), 0);
    CHECK(!memcmp(out, vals, sizeof vals));
    CHECK_EQ_INT(graph_weight_values(g, wa, out, err, sizeof err), 0);
    CHECK(!memcmp(out, vals + 1, 5 * sizeof(float)));
    CHECK_EQ_INT(graph_weight_values(g, wb, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "weight 'too_big'");
    CHECK_STR_CONTAINS(err, "w.bin");
    CHECK_STR_CONTAINS(err, "has 32 bytes, needs 40");
    CHECK_EQ_INT(graph_weight_values(g, wm, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "weight 'gone'");
    CHECK_STR_CONTAINS(err, "nope.bin");
    CHECK_STR_CONTAINS(err, "No such file");
    /* a negative offset is refused when building */
    graph_init neg = {GRAPH_INIT_FILE, 0, 0, 0, 0, "w.bin", -4, NULL};
    CHECK_EQ_INT(graph_weight(g, "neg", 2, d, neg), -1);
    CHECK_STR_CONTAINS(graph_error(g), "weight 'neg'");
    CHECK_STR_CONTAINS(graph_error(g), "negative");
    graph_free(g);
    unlink(path);
    rmdir(dir);
}

/* A graph x -> x + w1 -> * w2 -> out with DATA weights w1 (shared blob b1) and w2 (blob b2). */
static graph *data_graph(graph_blob *b1, graph_blob *b2) {
    graph *g = graph_new("data");
    int64_t d[2] = {2, 3};
    int32_t x = graph_input(g, "x", 2, d);
    int32_t w1 = graph_weight_data(g, "w1", 2, d, b1);
    int32_t w2 = graph_weight_data(g, "w2", 2, d, b2);
    graph_mark_output(g, graph_ewmul(g, graph_ewadd(g, x, w1), w2));
    return g;
}

typedef struct {
    const graph *g;
    int rounds;
    int bad;
} clone_job;

/* Clone and free the shared graph many times: reference counts from several threads at once. */
static void *clone_worker(void *arg) {
    clone_job *j = arg;
    for (int r = 0; r < j->rounds; r++) {
        graph *c[4];
        for (int k = 0; k < 4; k++)
            c[k] = graph_clone(j->g);
        for (int k = 0; k < 4; k++) {
            j->bad += c[k]->tensors[c[k]->weights[0]].init.blob != j->g->tensors[j->g->weights[0]].init.blob;
            graph_free(c[k]);
        }
    }
    return NULL;
}

static void test_weights_data(void) {
    float v1[6] = {1.0f, -2.0f, 0.5f, 3.0f, -0.0f, 7.25f}, v2[6] = {2, 2, 2, 2, 2, 3};
    graph_blob *b1 = graph_blob_new(v1, 6), *b2 = graph_blob_new(v2, 6);
    CHECK(b1 && b2);
    if (!b1 || !b2)
        return;
    CHECK_EQ_INT(graph_blob_numel(b1), 6);
    CHECK_EQ_INT(graph_blob_refs(b1), 1);
    CHECK(graph_blob_data(b1) != v1 && !memcmp(graph_blob_data(b1), v1, sizeof v1)); /* copied */
    /* the content hash: equal values, equal hash; any single change (even the sign of a zero, or
     * a value moved) changes it */
    graph_blob *same = graph_blob_new(v1, 6);
    CHECK(same && graph_blob_hash(same) == graph_blob_hash(b1));
    int distinct = 1;
    for (int i = 0; i < 6; i++) {
        float t[6];
        memcpy(t, v1, sizeof t);
        t[i] = i == 4 ? 0.0f : nextafterf(t[i], INFINITY);
        graph_blob *o = graph_blob_new(t, 6);
        distinct &= graph_blob_hash(o) != graph_blob_hash(b1);
        graph_blob_unref(o);
    }
    CHECK(distinct);
    float sw[6] = {-2.0f, 1.0f, 0.5f, 3.0f, -0.0f, 7.25f};
    graph_blob *swapped = graph_blob_new(sw, 6), *shorter = graph_blob_new(v1, 5);
    CHECK(graph_blob_hash(swapped) != graph_blob_hash(b1));
    CHECK(graph_blob_hash(shorter) != graph_blob_hash(b1));
    graph_blob_unref(swapped);
    CHECK(graph_blob_new(v1, -1) == NULL);
    CHECK(graph_blob_new(NULL, 3) == NULL);
    graph_blob *empty = graph_blob_new(NULL, 0);
    CHECK(empty && graph_blob_numel(empty) == 0);
    graph_blob_unref(empty);
    graph_blob_unref(NULL);

    /* weights take their own reference; the caller's stays the caller's */
    graph *g = data_graph(b1, b2);
    CHECK(graph_ok(g));
    int32_t w1 = graph_find_tensor(g, "w1"), w2 = graph_find_tensor(g, "w2");
    CHECK_EQ_INT(g->tensors[w1].init.kind, GRAPH_INIT_DATA);
    CHECK(g->tensors[w1].init.blob == b1);
    CHECK_EQ_INT(graph_blob_refs(b1), 2);
    float out[6];
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_weight_values(g, w1, out, err, sizeof err), 0);
    CHECK(!memcmp(out, v1, sizeof v1));
    CHECK_EQ_INT(graph_weight_values(g, w2, out, err, sizeof err), 0);
    CHECK(!memcmp(out, v2, sizeof v2));
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), 0);
    /* clones share the blobs: the same pointers, one more reference each, no copy */
    graph *c1 = graph_clone(g), *c2 = graph_clone(c1);
    CHECK(c1->tensors[w1].init.blob == b1 && c2->tensors[w1].init.blob == b1);
    CHECK(c2->tensors[w2].init.blob == b2);
    CHECK_EQ_INT(graph_blob_refs(b1), 4);
    CHECK_EQ_INT(graph_blob_refs(b2), 4);
    /* the hash sees the values: equal for equal values in another blob, different otherwise */
    graph *h1 = data_graph(same, b2);
    CHECK(graph_hash(h1) == graph_hash(g));
    CHECK(graph_hash(c2) == graph_hash(g));
    graph *h2 = data_graph(b2, b1); /* the two weights swapped */
    CHECK(graph_hash(h2) != graph_hash(g));
    float v3[6];
    memcpy(v3, v1, sizeof v3);
    v3[5] = 7.0f;
    graph_blob *b3 = graph_blob_new(v3, 6);
    graph *h3 = data_graph(b3, b2);
    CHECK(graph_hash(h3) != graph_hash(g));
    graph_blob_unref(b3); /* h3 keeps it alive */
    CHECK_EQ_INT(graph_blob_refs(b3), 1);
    CHECK_EQ_INT(graph_weight_values(h3, graph_find_tensor(h3, "w1"), out, err, sizeof err), 0);
    CHECK(out[5] == 7.0f && out[0] == 1.0f);
    graph_free(h1);
    graph_free(h2);
    graph_free(h3); /* frees b3 (ASan reports a leak otherwise) */
    graph_free(c1);
    CHECK_EQ_INT(graph_blob_refs(b1), 3);
    /* compaction drops the reference of an unused weight */
    int64_t d[2] = {2, 3};
    CHECK(graph_weight_data(c2, "unused", 2, d, b1) >= 0);
    CHECK_EQ_INT(graph_blob_refs(b1), 4);
    graph_compact(c2);
    CHECK_EQ_INT(graph_blob_refs(b1), 3);
    CHECK_EQ_INT(c2->n_weights, 2);
    graph_free(c2);
    CHECK_EQ_INT(graph_blob_refs(b1), 2);
    /* in-memory values are never written inline */
    CHECK(graph_to_json_string(g) == NULL);

    /* clones made and freed on several threads at once keep the counts exact */
    enum { N_THREADS = 4 };
    pthread_t th[N_THREADS];
    clone_job jobs[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        jobs[i] = (clone_job){g, 2000, 0};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, clone_worker, &jobs[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        bad += jobs[i].bad;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(graph_blob_refs(b1), 2);
    CHECK_EQ_INT(graph_blob_refs(b2), 2);
    graph_free(g);
    CHECK_EQ_INT(graph_blob_refs(b1), 1);

    /* bad DATA weights: errors naming the weight, sticky */
    g = graph_new("bad");
    CHECK_EQ_INT(graph_weight_data(g, "none", 2, d, NULL), -1);
    CHECK_STR_CONTAINS(graph_error(g), "weight 'none'");
    CHECK_STR_CONTAINS(graph_error(g), "no blob");
    CHECK_EQ_INT(graph_weight_data(g, "later", 2, d, b1), -1); /* sticky */
    graph_free(g);
    g = graph_new("bad2");
    int64_t d7[1] = {7};
    CHECK_EQ_INT(graph_weight_data(g, "short", 1, d7, b1), -1);
    CHECK_STR_CONTAINS(graph_error(g), "weight 'short'");
    CHECK_STR_CONTAINS(graph_error(g), "holds 6 values, shape (7) needs 7");
    CHECK_EQ_INT(graph_blob_refs(b1), 1); /* nothing kept on failure */
    graph_free(g);
    /* a shape edited past the builder: validation and graph_weight_values catch it */
    g = data_graph(b1, b2);
    int32_t w = graph_find_tensor(g, "w1");
    g->tensors[w].shape.dims[1] = 2;
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "weight 'w1'");
    CHECK_STR_CONTAINS(err, "holds 6 values");
    CHECK_EQ_INT(graph_weight_values(g, w, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "weight 'w1'");
    graph_free(g);

    graph_blob_unref(same);
    graph_blob_unref(shorter);
    graph_blob_unref(b1);
    graph_blob_unref(b2);
}

static void test_element_limit(void) {
    graph *g = graph_new("lim");
    g->max_elements = 1000;
    int64_t ok[2] = {10, 100}, over[3] = {10, 10, 11};
    int32_t x = graph_input(g, "x", 2, ok);
    CHECK(x >= 0);
    int32_t xs[2] = {x, x};
    CHECK_EQ_INT(graph_concat(g, 0, 2, xs), -1);
    CHECK_STR_CONTAINS(graph_error(g), "node (concat)");
    CHECK_STR_CONTAINS(graph_error(g), "output 'concat_0'");
    CHECK_STR_CONTAINS(graph_error(g), "(20,100)");
    CHECK_STR_CONTAINS(graph_error(g), "2000 elements");
    CHECK_STR_CONTAINS(graph_error(g), "limit of 1000");
    CHECK_EQ_INT(g->n_nodes, 0);
    graph_free(g);

    g = graph_new("lim2");
    g->max_elements = 1000;
    CHECK_EQ_INT(graph_input(g, "x", 3, over), -1);
    CHECK_STR_CONTAINS(graph_error(g), "input 'x'");
    CHECK_STR_CONTAINS(graph_error(g), "1100 elements");
    graph_free(g);

    /* the default, and element counts beyond int64 */
    g = graph_new("lim3");
    CHECK(g->max_elements > 0);
    int64_t huge[3] = {INT64_C(1) << 31, INT64_C(1) << 31, INT64_C(1) << 31};
    CHECK_EQ_INT(graph_weight_he(g, "w", 3, huge), -1);
    CHECK_STR_CONTAINS(graph_error(g), "weight 'w'");
    CHECK_STR_CONTAINS(graph_error(g), "int64");
    graph_free(g);

    setenv("TASC_MAX_ELEMENTS", "50", 1);
    g = graph_new("env");
    CHECK_EQ_INT(g->max_elements, 50);
    int64_t d51[1] = {51};
    CHECK_EQ_INT(graph_input(g, "x", 1, d51), -1);
    graph_free(g);
    setenv("TASC_MAX_ELEMENTS", "junk", 1);
    g = graph_new("env2");
    CHECK_EQ_INT(g->max_elements, GRAPH_DEFAULT_MAX_ELEMENTS);
    graph_free(g);
    unsetenv("TASC_MAX_ELEMENTS");
}

static void test_validate(void) {
    graph *g = graph_new("v");
    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "no nodes");
    int64_t d[2] = {3, 4};
    int32_t x = graph_input(g, "x", 2, d);
    int32_t r = graph_unary(g, OP_RELU, x);
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "no outputs");
    graph_mark_output(g, r);
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), 0);
    /* a recorded shape that disagrees with inference */
    g->tensors[r].shape.dims[1] = 5;
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "node 'relu_0'");
    CHECK_STR_CONTAINS(err, "(3,5)");
    g->tensors[r].shape.dims[1] = 4;
    /* duplicate names made by direct edits */
    free(g->tensors[r].name);
    g->tensors[r].name = strdup("x");
    CHECK_EQ_INT(graph_validate(g, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "duplicate tensor name");
    graph_free(g);
}

static void test_dot(void) {
    graph *g = small_cnn();
    g->nodes[2].tag = 1;
    char *buf1 = NULL, *buf2 = NULL;
    size_t n1 = 0, n2 = 0;
    FILE *f = open_memstream(&buf1, &n1);
    graph_write_dot(g, f);
    fclose(f);
    f = open_memstream(&buf2, &n2);
    graph_write_dot(g, f);
    fclose(f);
    CHECK(n1 > 0 && n1 == n2 && !memcmp(buf1, buf2, n1));
    CHECK(!strncmp(buf1, "digraph \"cnn\" {", 15));
    CHECK_STR_CONTAINS(buf1, "n0 [label=\"conv2d\\npad=same act=relu\\n(2,8,16,16)\"");
    CHECK_STR_CONTAINS(buf1, "t0 [label=\"x\\n(2,3,16,16)\", shape=invhouse");
    CHECK_STR_CONTAINS(buf1, "t1 [label=\"w1\\n(8,3,3,3)\", shape=box, style=\"rounded,dashed\"");
    CHECK_STR_CONTAINS(buf1, "n2 [label=\"conv2d\\nstride_h=2 stride_w=2 pad=valid\\n(2,16,3,3)\", tooltip=\"conv2d_1\", "
                             "shape=box, style=filled, fillcolor=\"#ffd27f\"];");
    CHECK_STR_CONTAINS(buf1, "t0 -> n0 [label=\"(2,3,16,16)\"];");
    CHECK_STR_CONTAINS(buf1, "n0 -> n1 [label=\"(2,8,16,16)\"];");
    CHECK_STR_CONTAINS(buf1, "n6 -> o0 [label=\"(2,10)\"];");
    CHECK_STR_CONTAINS(buf1, "n1 [label=\"maxpool2d\\n");
    CHECK_STR_CONTAINS(buf1, "\\n(2,8,8,8)\", tooltip=\"maxpool2d_0\", shape=box];");
    CHECK(strcmp(buf1 + n1 - 2, "}\n") == 0);
    int filled = 0;
    for (const char *p = buf1; (p = strstr(p, "#ffd27f")); p++)
        filled++;
    CHECK_EQ_INT(filled, 1);
    free(buf1);
    free(buf2);
    graph_free(g);
}

int main(void) {
    test_builder_cnn();
    test_builder_mlp();
    test_sticky_errors();
    test_names();
    test_topo_and_cycles();
    test_hash();
    test_clone_compact();
    test_weights_random();
    test_weights_file();
    test_weights_data();
    test_element_limit();
    test_validate();
    test_dot();
    return TEST_REPORT();
}
