/* test_plan.c: the GPU runtime's memory planner (rt_plan_arena, src/runtime/rt_plan.c), host code
 * built without CUDA too. Its placement is checked against the straightforward O(n^2) greedy
 * it replaced (plan_ref below: every placed buffer scanned for each new one) on random lifetimes
 * of several shapes and on the lifetimes of every zoo model (a node per step, tensors alive from
 * their producer to their last reader): the same offsets and arena size, byte for byte. Also the
 * planner's invariant (buffers alive at a common step never share a byte, offsets aligned, all
 * inside the arena), the edge cases (no buffers, align < 1), and a chain of 100,000 buffers
 * (two slots, planned in well under a second, where the old scan took about 7 s). And the
 * pattern of the runtime's producer fusions (rt_prefuse_find, rt_fuse.c): which softmax and
 * layernorm nodes compute the smul or add before them, and the cases that must not. And the
 * classification of nodes (rt_classify, rt_plan.c) on a graph with a node of every class, each
 * planner option on and off, and its invariants over the zoo, and the op table's facts it reads
 * (views, epilogue operations).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "graph.h"
#include "rt.h"
#include "test.h"
#include "zoo.h"

/* --- the reference: the planner as it was (greedy by size, every placed buffer scanned) ----- */

typedef struct {
    int32_t idx;
    int64_t bytes, first;
} ref_key;

static int ref_cmp(const void *a, const void *b) {
    const ref_key *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int ref_cmp_off(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int64_t ref_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static int64_t plan_ref(int32_t n, const rt_span *spans, int64_t align, int64_t *offset) {
    if (n <= 0)
        return 0;
    if (align < 1)
        align = 1;
    ref_key *order = malloc((size_t)n * sizeof *order);
    int64_t *busy = malloc((size_t)n * 2 * sizeof *busy);
    int32_t *placed = malloc((size_t)n * sizeof *placed);
    for (int32_t i = 0; i < n; i++) {
        order[i].idx = i;
        order[i].bytes = ref_up(spans[i].bytes, align);
        order[i].first = spans[i].first;
    }
    qsort(order, (size_t)n, sizeof *order, ref_cmp);
    int64_t total = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = order[k].idx, nb = 0;
        int64_t size = order[k].bytes;
        for (int32_t q = 0; q < k; q++) {
            int32_t j = placed[q];
            if (spans[j].first <= spans[i].last && spans[i].first <= spans[j].last) {
                busy[2 * nb] = offset[j];
                busy[2 * nb + 1] = offset[j] + ref_up(spans[j].bytes, align);
                nb++;
            }
        }
        qsort(busy, (size_t)nb, 2 * sizeof *busy, ref_cmp_off);
        int64_t at = 0;
        for (int32_t q = 0; q < nb; q++) {
            if (at + size <= busy[2 * q])
                break;
            if (busy[2 * q + 1] > at)
                at = busy[2 * q + 1];
        }
        offset[i] = at;
        placed[k] = i;
        if (at + size > total)
            total = at + size;
    }
    free(order);
    free(busy);
    free(placed);
    return total;
}

/* --- helpers ---------------------------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_u64(void) { /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The number of pairs breaking the invariant, and of buffers misaligned or outside the arena. */
static int64_t plan_violations(int32_t n, const rt_span *sp, int64_t align, const int64_t *off, int64_t total) {
    int64_t bad = 0;
    for (int32_t i = 0; i < n; i++) {
        bad += off[i] % align != 0 || off[i] < 0 || off[i] + sp[i].bytes > total;
        for (int32_t j = i + 1; j < n; j++) {
            int live = sp[i].first <= sp[j].last && sp[j].first <= sp[i].last;
            int mem = off[i] < off[j] + sp[j].bytes && off[j] < off[i] + sp[i].bytes;
            bad += live && mem && sp[i].bytes > 0 && sp[j].bytes > 0;
        }
    }
    return bad;
}

/* rt_plan_arena and plan_ref agree on spans (offsets and size); the invariant holds. */
static void check_same(int32_t n, const rt_span *sp, int64_t align, int check_invariant, const char *what) {
    int64_t *o1 = calloc((size_t)n + 1, sizeof *o1), *o2 = calloc((size_t)n + 1, sizeof *o2);
    int64_t t1 = rt_plan_arena(n, sp, align, o1), t2 = plan_ref(n, sp, align, o2);
    int same = t1 == t2 && !memcmp(o1, o2, (size_t)n * sizeof *o1);
    if (!same)
        fprintf(stderr, "%s: arena %lld bytes, the reference %lld\n", what, (long long)t1, (long long)t2);
    CHECK(same);
    if (check_invariant)
        CHECK_EQ_INT(plan_violations(n, sp, align < 1 ? 1 : align, o1, t1), 0);
    free(o1);
    free(o2);
}

/* --- tests ------------------------------------------------------------------------------------ */

static void test_edges(void) {
    CHECK_EQ_INT(rt_plan_arena(0, NULL, 256, NULL), 0);
    rt_span one = {100, 3, 3};
    int64_t off = -1;
    CHECK_EQ_INT(rt_plan_arena(1, &one, 256, &off), 256);
    CHECK_EQ_INT(off, 0);
    CHECK_EQ_INT(rt_plan_arena(1, &one, 0, &off), 100); /* align < 1 counts as 1 */
    /* a chain of equal buffers: two slots, alternating */
    rt_span chain[4] = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
    int64_t o[4];
    CHECK_EQ_INT(rt_plan_arena(4, chain, 256, o), 2 * 1024);
    CHECK(o[0] == o[2] && o[1] == o[3] && o[0] != o[1]);
    check_same(4, chain, 256, 1, "chain of 4");
    /* the same step range for all: nothing shared */
    rt_span same[3] = {{10, 0, 5}, {300, 0, 5}, {20, 0, 5}};
    CHECK_EQ_INT(rt_plan_arena(3, same, 64, o), 64 + 320 + 64);
    check_same(3, same, 64, 1, "all alive together");
}

/* Random lifetimes of several shapes: short and long lives, few distinct sizes (ties in the
 * order), zero-byte buffers, wide and narrow step ranges, alignments 1 to 256. */
static void test_random(void) {
    for (int round = 0; round < 400; round++) {
        int32_t n = 1 + (int32_t)(next_u64() % (round < 300 ? 150 : 1500));
        int32_t steps = 1 + (int32_t)(next_u64() % (round % 3 == 0 ? 10 : 2000));
        int32_t life = 1 + (int32_t)(next_u64() % (round % 4 == 0 ? 5 : 200));
        int64_t sizes = round % 2 ? 4 : 100000, align = (int64_t)1 << (next_u64() % 9);
        rt_span *sp = malloc((size_t)n * sizeof *sp);
        for (int32_t i = 0; i < n; i++) {
            sp[i].bytes = (int64_t)(next_u64() % (uint64_t)sizes) * (round % 2 ? 1000 : 1);
            sp[i].first = (int32_t)(next_u64() % (uint64_t)steps);
            sp[i].last = sp[i].first + (int32_t)(next_u64() % (uint64_t)(next_u64() % 8 == 0 ? 20 * life : life));
        }
        char what[64];
        snprintf(what, sizeof what, "random round %d (%d buffers)", round, (int)n);
        check_same(n, sp, align, n <= 400, what);
        free(sp);
    }
}

/* The lifetimes of a zoo model as the runtime plans them, simplified: every node one step in
 * topological order, every node output a buffer from its producer's step to its last reader's
 * (an output: one step past the end). */
static int32_t zoo_spans(const graph *g, rt_span *sp) {
    int32_t *order = malloc((size_t)g->n_nodes * sizeof *order), *step = malloc((size_t)g->n_nodes * sizeof *step);
    int32_t *first = malloc((size_t)g->n_tensors * sizeof *first), *last = malloc((size_t)g->n_tensors * sizeof *last);
    char err[256];
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), 0);
    for (int32_t t = 0; t < g->n_tensors; t++)
        first[t] = last[t] = -1;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const graph_node *nd = &g->nodes[order[k]];
        step[order[k]] = k;
        for (int32_t o = 0; o < nd->n_out; o++)
            first[nd->out[o]] = last[nd->out[o]] = k;
        for (int32_t i = 0; i < nd->n_in; i++)
            if (first[nd->in[i]] >= 0 && k > last[nd->in[i]])
                last[nd->in[i]] = k;
    }
    for (int32_t j = 0; j < g->n_outputs; j++)
        last[g->outputs[j]] = g->n_nodes;
    int32_t n = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (first[t] >= 0) {
            sp[n].bytes = ops_shape_numel(&g->tensors[t].shape) * 4;
            sp[n].first = first[t];
            sp[n++].last = last[t];
        }
    free(order);
    free(step);
    free(first);
    free(last);
    return n;
}

static void test_zoo(void) {
    const char *const *names = zoo_names();
    for (int32_t m = 0; names[m]; m++) {
        char err[256];
        graph *g = zoo_build(names[m], 1, err, sizeof err);
        CHECK(g != NULL);
        if (!g)
            continue;
        rt_span *sp = malloc((size_t)g->n_tensors * sizeof *sp);
        int32_t n = zoo_spans(g, sp);
        int64_t *off = malloc((size_t)n * sizeof *off), sum = 0;
        for (int32_t i = 0; i < n; i++)
            sum += (sp[i].bytes + 255) / 256 * 256;
        int64_t total = rt_plan_arena(n, sp, 256, off);
        printf("  %-13s %5d buffers: arena %10lld bytes (unplanned %lld)\n", names[m], (int)n, (long long)total,
               (long long)sum);
        check_same(n, sp, 256, 1, names[m]);
        CHECK(total < sum);
        free(off);
        free(sp);
        graph_free(g);
    }
}

/* A chain of 100,000 buffers, each read by the next step only: two slots, in linear-ish time. */
static void test_long_chain(void) {
    enum { N = 100000 };
    rt_span *sp = malloc(N * sizeof *sp);
    int64_t *off = malloc(N * sizeof *off);
    for (int32_t i = 0; i < N; i++)
        sp[i] = (rt_span){64, i, i + 1};
    double t0 = base_now();
    int64_t total = rt_plan_arena(N, sp, 256, off);
    double secs = base_now() - t0;
    printf("  chain of %d buffers planned in %.3f s\n", (int)N, secs);
    CHECK_EQ_INT(total, 2 * 256);
    int bad = 0;
    for (int32_t i = 0; i + 1 < N; i++)
        bad += off[i] == off[i + 1];
    CHECK_EQ_INT(bad, 0);
    CHECK(secs < 2.0); /* about 0.02 s; the scan of every placed buffer took about 7 s */
    free(sp);
    free(off);
}

/* --- the producer fusions' pattern (rt_prefuse_find, src/runtime/rt_fuse.c) ---------------- */

/* An smul by scale; its output tensor. */
static int32_t pf_smul(graph *g, int32_t x, int32_t scale) {
    ops_params p;
    ops_params_default(OP_SMUL, &p);
    int32_t in[2] = {x, scale}, out[OPS_MAX_OUTPUTS];
    return graph_add(g, NULL, OP_SMUL, &p, 2, in, out) == 1 ? out[0] : -1;
}

/* A layernorm over dims [axis, end) (end 0: to the rank) without gamma. */
static int32_t pf_layernorm(graph *g, int32_t x, int64_t axis, int64_t end) {
    ops_params p;
    ops_params_default(OP_LAYERNORM, &p);
    p.v[PM_AXIS] = axis;
    p.v[PM_AXIS_END] = end;
    int32_t out[OPS_MAX_OUTPUTS];
    return graph_add(g, NULL, OP_LAYERNORM, &p, 1, &x, out) == 1 ? out[0] : -1;
}

/* rt_prefuse_find over every node of g (all live, none run by another node but skip_node), the
 * reads, outputs and constants as the runtime counts them (weights, and what only they feed:
 * folded); the producer found for the node making tensor t, or -1. */
static int32_t pf_find(const graph *g, int32_t t, int32_t skip_node) {
    const int32_t nt = g->n_tensors, nn = g->n_nodes;
    int32_t *nread = calloc((size_t)nt, sizeof *nread), *order = malloc((size_t)nn * sizeof *order);
    uint8_t *isout = calloc((size_t)nt, 1), *isconst = calloc((size_t)nt, 1), *ncls = malloc((size_t)nn);
    char err[256];
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), 0);
    for (int32_t id = 0; id < nn; id++)
        for (int32_t i = 0; i < g->nodes[id].n_in; i++)
            nread[g->nodes[id].in[i]]++;
    for (int32_t j = 0; j < g->n_outputs; j++)
        isout[g->outputs[j]] = 1;
    for (int32_t i = 0; i < nt; i++)
        isconst[i] = g->tensors[i].kind == GRAPH_T_WEIGHT;
    for (int32_t k = 0; k < nn; k++) {
        const graph_node *nd = &g->nodes[order[k]];
        int all = 1;
        for (int32_t i = 0; i < nd->n_in; i++)
            all = all && isconst[nd->in[i]];
        for (int32_t o = 0; o < nd->n_out; o++)
            isconst[nd->out[o]] = (uint8_t)all;
    }
    memset(ncls, RT_N_RUN, (size_t)nn);
    if (skip_node >= 0)
        ncls[skip_node] = RT_N_FUSED;
    const int32_t r = rt_prefuse_find(g, g->tensors[t].producer, nread, isout, isconst, ncls);
    free(nread);
    free(order);
    free(isout);
    free(isconst);
    free(ncls);
    return r;
}

static void test_prefuse(void) {
    graph *g = graph_new("prefuse");
    const int64_t xd[4] = {2, 3, 5, 16}, one[1] = {1}, rd[2] = {6, 16}, bd[1] = {16}, cd[3] = {4, 7, 1};
    int32_t x = graph_input(g, "x", 4, xd), s = graph_weight_const(g, "scale", 1, one, 0.25f);
    int32_t sv = graph_input(g, "scale_in", 1, one);
    int32_t a = graph_input(g, "a", 2, rd), b = graph_input(g, "b", 2, rd), bias = graph_input(g, "bias", 1, bd);
    int32_t c = graph_input(g, "c", 3, cd);
    int32_t w1 = graph_weight_const(g, "w1", 2, rd, 1.0f), w2 = graph_weight_const(g, "w2", 2, rd, 2.0f);
    /* fused: softmax over the last axis of smul(x, constant) */
    int32_t t1 = pf_smul(g, x, s), y1 = graph_softmax(g, t1, 3);
    /* fused: the dims after the axis all of size 1 are rows too */
    int32_t t2 = pf_smul(g, c, s), y2 = graph_softmax(g, t2, 1);
    /* not: a strided axis; a scale that is no constant; the product read twice; a graph output */
    int32_t t3 = pf_smul(g, x, s), y3 = graph_softmax(g, t3, 2);
    int32_t t4 = pf_smul(g, x, sv), y4 = graph_softmax(g, t4, 3);
    int32_t t5 = pf_smul(g, x, s), y5 = graph_softmax(g, t5, 3), y5b = graph_ewadd(g, t5, x);
    int32_t t6 = pf_smul(g, x, s), y6 = graph_softmax(g, t6, 3);
    /* fused: layernorm of an add of two tensors of its shape (a weight among them is fine) */
    int32_t u1 = graph_ewadd(g, a, b), z1 = graph_layernorm(g, u1, -1, -1, 1, 1e-5f);
    int32_t u2 = graph_ewadd(g, w1, a), z2 = pf_layernorm(g, u2, 1, 2);
    /* not: a broadcast add; the sum read twice; dims after the normalised ones; not an add; folded */
    int32_t u3 = graph_ewadd(g, a, bias), z3 = graph_layernorm(g, u3, -1, -1, 1, 1e-5f);
    int32_t u4 = graph_ewadd(g, a, b), z4 = graph_layernorm(g, u4, -1, -1, 1, 1e-5f), z4b = graph_unary(g, OP_RELU, u4);
    int32_t u5 = graph_ewadd(g, a, b), z5 = pf_layernorm(g, u5, 0, 1);
    int32_t u6 = graph_unary(g, OP_RELU, a), z6 = graph_layernorm(g, u6, -1, -1, 1, 1e-5f);
    int32_t u7 = graph_ewadd(g, w1, w2), z7 = graph_layernorm(g, u7, -1, -1, 1, 1e-5f);
    const int32_t outs[] = {y1, y2, y3, y4, y5, y5b, y6, t6, z1, z2, z3, z4, z4b, z5, z6, z7};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        graph_mark_output(g, outs[i]);
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "prefuse: %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    const int32_t p1 = g->tensors[t1].producer, p2 = g->tensors[t2].producer, q1 = g->tensors[u1].producer;
    CHECK_EQ_INT(pf_find(g, y1, -1), p1);
    CHECK_EQ_INT(pf_find(g, y2, -1), p2);
    CHECK_EQ_INT(pf_find(g, y3, -1), -1);
    CHECK_EQ_INT(pf_find(g, y4, -1), -1);
    CHECK_EQ_INT(pf_find(g, y5, -1), -1);
    CHECK_EQ_INT(pf_find(g, y6, -1), -1);
    CHECK_EQ_INT(pf_find(g, z1, -1), q1);
    CHECK_EQ_INT(pf_find(g, z2, -1), g->tensors[u2].producer);
    CHECK_EQ_INT(pf_find(g, z3, -1), -1);
    CHECK_EQ_INT(pf_find(g, z4, -1), -1);
    CHECK_EQ_INT(pf_find(g, z5, -1), -1);
    CHECK_EQ_INT(pf_find(g, z6, -1), -1);
    CHECK_EQ_INT(pf_find(g, z7, -1), -1);
    /* a producer another fusion already runs; nodes of other ops */
    CHECK_EQ_INT(pf_find(g, y1, p1), -1);
    CHECK_EQ_INT(pf_find(g, z1, q1), -1);
    CHECK_EQ_INT(pf_find(g, y5b, -1), -1);
    CHECK_EQ_INT(pf_find(g, z4b, -1), -1);
    printf("  producer fusion patterns: %s\n", test_failed ? "FAILED" : "ok");
    graph_free(g);
}

/* --- concatenations that move nothing (rt_concat_views, src/runtime/rt_view.c) ------------- */

static void test_concat_views(void) {
    graph *g = graph_new("views");
    const int64_t xd[4] = {1, 8, 6, 6}, x2d[4] = {2, 8, 6, 6}, yd[4] = {1, 3, 1, 1}, wd[4] = {1, 4, 6, 6};
    int32_t x = graph_input(g, "x", 4, xd), x2 = graph_input(g, "x2", 4, x2d), y = graph_input(g, "y", 4, yd);
    int32_t w = graph_weight_const(g, "w", 4, wd, 1.0f);
    int32_t a = graph_unary(g, OP_RELU, x), b = graph_unary(g, OP_SIGMOID, x);
    int32_t v1 = graph_concat(g, 1, 2, (int32_t[]){a, b}); /* a view: offsets 0 and 288 */
    int32_t n2 = graph_concat(g, 1, 2, (int32_t[]){graph_unary(g, OP_RELU, x2), graph_unary(g, OP_TANH, x2)});
    int32_t n3 = graph_concat(g, 1, 2, (int32_t[]){x, graph_unary(g, OP_TANH, x)}); /* a graph input */
    int32_t e = graph_unary(g, OP_RELU, x);
    int32_t n4 = graph_concat(g, 1, 2, (int32_t[]){e, e}); /* the same tensor twice */
    int32_t n5 = graph_concat(g, 1, 2, (int32_t[]){graph_unary(g, OP_RELU, y), graph_unary(g, OP_TANH, y)});
    int32_t h = graph_unary(g, OP_GELU, x), i = graph_unary(g, OP_TANH, x);
    int32_t v6 = graph_concat(g, 1, 2, (int32_t[]){h, i});
    int32_t n7 = graph_concat(g, 1, 2, (int32_t[]){v6, graph_unary(g, OP_RELU, x)}); /* made by a view concat */
    int32_t parts[2];
    graph_split(g, graph_unary(g, OP_RELU, x), 1, 2, NULL, parts);
    int32_t n8 = graph_concat(g, 1, 2, parts); /* made by a split */
    int32_t n9 = graph_concat(g, 1, 2, (int32_t[]){graph_unary(g, OP_RELU, w), graph_unary(g, OP_ERF, x)}); /* folded */
    int32_t n10 = graph_concat(g, 1, 2, (int32_t[]){a, graph_unary(g, OP_SQRT, x)}); /* a is placed in v1 */
    int32_t v11 = graph_concat(g, 0, 2, (int32_t[]){graph_unary(g, OP_RELU, x2), graph_unary(g, OP_TANH, x2)});
    const int32_t outs[] = {v1, n2, n3, n4, n5, n7, n8, n9, n10, v11};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++)
        graph_mark_output(g, outs[k]);
    CHECK(graph_ok(g));
    const int32_t nt = g->n_tensors, nn = g->n_nodes;
    int32_t *order = malloc((size_t)nn * sizeof *order), *vof = malloc((size_t)nt * sizeof *vof);
    int64_t *voff = calloc((size_t)nt, sizeof *voff);
    uint8_t *ncls = calloc((size_t)nn, 1), *freet = calloc((size_t)nt, 1);
    char err[256];
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), 0);
    for (int32_t t = 0; t < nt; t++) {
        freet[t] = g->tensors[t].kind == GRAPH_T_INTER;
        vof[t] = -1;
    }
    for (int32_t k = 0; k < nn; k++) { /* what only weights feed is folded: no kernel, not free */
        const graph_node *nd = &g->nodes[order[k]];
        int all = 1;
        for (int32_t q = 0; q < nd->n_in; q++)
            all = all && (g->tensors[nd->in[q]].kind == GRAPH_T_WEIGHT || !freet[nd->in[q]]) &&
                  g->tensors[nd->in[q]].kind != GRAPH_T_INPUT;
        ncls[order[k]] = all ? RT_N_FOLD : RT_N_RUN;
        for (int32_t o = 0; o < nd->n_out; o++)
            freet[nd->out[o]] = (uint8_t)!all;
    }
    CHECK_EQ_INT(rt_concat_views(g, order, ncls, freet, vof, voff), 3);
    CHECK(ncls[g->tensors[v1].producer] == RT_N_CVIEW && ncls[g->tensors[v6].producer] == RT_N_CVIEW &&
          ncls[g->tensors[v11].producer] == RT_N_CVIEW);
    CHECK_EQ_INT(vof[a], v1);
    CHECK_EQ_INT(vof[b], v1);
    CHECK_EQ_INT(voff[a], 0);
    CHECK_EQ_INT(voff[b], 288);
    CHECK_EQ_INT(vof[h], v6);
    CHECK_EQ_INT(voff[i], 288);
    CHECK_EQ_INT(voff[g->nodes[g->tensors[v11].producer].in[1]], 576);
    const int32_t nots[] = {n2, n3, n4, n5, n7, n8, n9, n10};
    for (size_t k = 0; k < sizeof nots / sizeof nots[0]; k++) {
        const graph_node *nd = &g->nodes[g->tensors[nots[k]].producer];
        CHECK(ncls[g->tensors[nots[k]].producer] != RT_N_CVIEW);
        for (int32_t q = 0; q < nd->n_in; q++)
            CHECK(vof[nd->in[q]] < 0 || nd->in[q] == a); /* a: placed by v1 only */
    }
    printf("  concat views: %s\n", test_failed ? "FAILED" : "ok");
    free(order), free(vof), free(voff), free(ncls), free(freet);
    graph_free(g);
}

/* --- the classification of nodes (rt_classify, src/runtime/rt_plan.c) ----------------------- */

/* The scatter step as the runtime takes it at FP32: a store for each running matmul whose tree
 * rt_scatter_find finds (the runtime also records the store; at 3xtf32 it asks the device). */
static int cl_scatter(void *user, rt_classes *cl, char *err, size_t errlen) {
    (void)user;
    const graph *g = cl->g;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const int32_t id = cl->order[k];
        if (cl->ncls[id] != RT_N_RUN || g->nodes[id].op != OP_MATMUL)
            continue;
        rt_scatter sc;
        char why[256];
        const int r = rt_scatter_find(g, id, cl->live, &sc, why, sizeof why, err, errlen);
        if (r < 0)
            return -1;
        if (r > 0) {
            rt_classes_scatter(cl, &sc);
            rt_scatter_free(&sc);
        }
    }
    return 0;
}

/* Classifies g with the options in flags (1 no_fold, 2 no_scatter, 4 no_fuse); order and live
 * (nodes reaching an output) are the caller's arrays of g's size, filled here. */
static int cl_run(const graph *g, int flags, int32_t *order, uint8_t *live, rt_classes *cl) {
    char err[256];
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), 0);
    CHECK_EQ_INT(rt_live_nodes(g, order, live), 0);
    CHECK_EQ_INT(rt_classes_init(cl, g, order, live), 0);
    cl->no_fold = flags & 1;
    cl->no_scatter = (flags >> 1) & 1;
    cl->no_fuse = (flags >> 2) & 1;
    const int rc = rt_classify(cl, cl_scatter, NULL, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    return rc;
}

/* The class of the node making tensor t. */
static int cl_of(const rt_classes *cl, int32_t t) { return cl->ncls[cl->g->tensors[t].producer]; }

/* The op table's views and epilogue operations (ops_desc.view, view_in, epi), which the
 * classification reads. */
static void test_table_views(void) {
    ops_params p;
    int64_t off[3] = {-1, -1, -1};
    const ops_shape x1 = {4, {1, 8, 6, 6}}, x2 = {4, {2, 8, 6, 6}}, half1 = {4, {1, 4, 6, 6}};
    const ops_shape half2 = {4, {2, 4, 6, 6}}, flat = {2, {1, 288}}, col = {4, {1, 3, 1, 1}};
    const ops_shape *parts1[2] = {&half1, &half1}, *parts2[2] = {&half2, &half2}, *flat1[1] = {&flat};
    ops_params_default(OP_RESHAPE, &p);
    CHECK(ops_table[OP_RESHAPE].view(&p, &x2, 1, flat1, off) && off[0] == 0);
    ops_params_default(OP_SPLIT, &p);
    p.v[PM_AXIS] = 1;
    CHECK(ops_table[OP_SPLIT].view(&p, &x1, 2, parts1, off) && off[0] == 0 && off[1] == 144);
    CHECK(!ops_table[OP_SPLIT].view(&p, &x2, 2, parts2, off)); /* batch 2: strided parts */
    ops_params_default(OP_CONCAT, &p);
    p.v[PM_AXIS] = 1;
    CHECK(ops_table[OP_CONCAT].view_in(&p, &x1, 2, parts1, off) && off[1] == 144);
    CHECK(!ops_table[OP_CONCAT].view_in(&p, &x2, 2, parts2, off));
    ops_params_default(OP_TRANSPOSE, &p);
    p.n_list = 4;
    memcpy(p.list, (int64_t[]){0, 2, 1, 3}, 4 * sizeof *p.list); /* moves the axes of size 1 only */
    const ops_shape *colp[1] = {&col};
    CHECK(ops_table[OP_TRANSPOSE].view(&p, &col, 1, colp, off) && off[0] == 0);
    CHECK(!ops_table[OP_TRANSPOSE].view(&p, &x1, 1, parts1, off)); /* moves 8 x 6 x 6 elements */
    int32_t views = 0, epis = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        views += (ops_table[op].view != NULL) + (ops_table[op].view_in != NULL);
        epis += ops_table[op].epi != OPS_EPI_NONE;
    }
    CHECK_EQ_INT(views, 4); /* reshape, split, transpose; concat */
    CHECK_EQ_INT(epis, 2);
    CHECK(ops_table[OP_EWADD].epi == OPS_EPI_ADD && ops_table[OP_SMUL].epi == OPS_EPI_SCALE);
    printf("  table views and epilogue operations: %s\n", test_failed ? "FAILED" : "ok");
}

/* A graph with a node of every class, classified with each option off and on. */
static void test_classify(void) {
    graph *g = graph_new("classes");
    const int64_t xd[4] = {1, 8, 6, 6}, yd[4] = {1, 6, 1, 1}, md[2] = {4, 16}, wmd[2] = {16, 32};
    const int64_t cd[4] = {8, 8, 3, 3}, one[1] = {1}, flat[2] = {1, 288};
    int32_t x = graph_input(g, "x", 4, xd), y = graph_input(g, "y", 4, yd), m = graph_input(g, "m", 2, md);
    int32_t w = graph_weight_const(g, "w", 4, xd, 0.5f), wc = graph_weight_const(g, "wc", 4, cd, 0.1f);
    int32_t wm = graph_weight_const(g, "wm", 2, wmd, 0.2f), s = graph_weight_const(g, "s", 1, one, 0.25f);
    int32_t dead = graph_unary(g, OP_RELU, x);                                    /* no output reads it */
    int32_t f = graph_unary(g, OP_RELU, w), f2 = graph_ewadd(g, x, f);            /* folded, then run */
    int32_t a = graph_unary(g, OP_RELU, x), rs = graph_reshape(g, a, 2, flat);    /* a view */
    int32_t b = graph_unary(g, OP_SIGMOID, x), bp[2], c = graph_unary(g, OP_RELU, y), cp[2];
    graph_split(g, b, 1, 2, NULL, bp);  /* parts of 144 elements: views */
    graph_split(g, c, 1, 2, NULL, cp);  /* parts of 3 elements: the second misaligned, so it runs */
    int32_t d1 = graph_unary(g, OP_TANH, x), d2 = graph_unary(g, OP_GELU, x);
    int32_t cc = graph_concat(g, 1, 2, (int32_t[]){d1, d2});                     /* a concat view */
    int32_t cv = graph_conv2d(g, x, wc, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    int32_t e = graph_ewadd(g, cv, x), er = graph_unary(g, OP_RELU, e);           /* in cv's epilogue */
    int32_t sm = pf_smul(g, x, s), so = graph_softmax(g, sm, 3);                 /* computed by so */
    int32_t mm = graph_matmul(g, m, wm, OPS_ACT_NONE), tr = graph_transpose(g, mm, 2, (int32_t[]){1, 0});
    int32_t c2 = graph_unary(g, OP_RELU, y), tn = graph_transpose(g, c2, 4, (int32_t[]){0, 2, 1, 3});
    const int32_t outs[] = {f2, rs, bp[0], bp[1], cp[0], cp[1], cc, er, so, tr, tn};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++)
        graph_mark_output(g, outs[k]);
    CHECK(graph_ok(g));
    int32_t *order = malloc((size_t)g->n_nodes * sizeof *order);
    uint8_t *live = malloc((size_t)g->n_nodes);
    for (int flags = 0; flags < 8; flags++) {
        const int nofold = flags & 1, nosc = (flags >> 1) & 1, nofuse = (flags >> 2) & 1;
        rt_classes cl;
        if (cl_run(g, flags, order, live, &cl) < 0)
            continue;
        CHECK_EQ_INT(cl_of(&cl, dead), RT_N_DEAD);
        CHECK_EQ_INT(cl_of(&cl, f), nofold ? RT_N_RUN : RT_N_FOLD);
        CHECK_EQ_INT(cl.tclass[f], nofold ? RT_T_ARENA : RT_T_PERSIST);
        CHECK_EQ_INT(cl_of(&cl, f2), RT_N_RUN);
        CHECK_EQ_INT(cl_of(&cl, rs), RT_N_VIEW);
        CHECK(cl.tclass[rs] == RT_T_ALIAS && cl.alias_of[rs] == a);
        CHECK_EQ_INT(cl_of(&cl, bp[0]), RT_N_VIEW);
        CHECK(cl.alias_of[bp[0]] == b && cl.alias_off[bp[0]] == 0 && cl.alias_off[bp[1]] == 144);
        CHECK_EQ_INT(cl_of(&cl, cp[0]), RT_N_RUN);
        CHECK(cl.tclass[cp[0]] == RT_T_ARENA && cl.tclass[cp[1]] == RT_T_ARENA);
        CHECK_EQ_INT(cl_of(&cl, cc), RT_N_CVIEW);
        CHECK(cl.tclass[cc] == RT_T_ARENA && cl.alias_of[d2] == cc && cl.alias_off[d2] == 288);
        CHECK_EQ_INT(cl_of(&cl, cv), RT_N_RUN);
        CHECK_EQ_INT(cl_of(&cl, e), nofuse ? RT_N_RUN : RT_N_FUSED);
        CHECK_EQ_INT(cl_of(&cl, er), nofuse ? RT_N_RUN : RT_N_FUSED);
        CHECK_EQ_INT(cl.fuse_add[g->tensors[cv].producer], nofuse ? -1 : x);
        CHECK_EQ_INT(cl.fuse_act[g->tensors[cv].producer], nofuse ? OPS_ACT_NONE : OPS_ACT_RELU);
        CHECK(nofuse || (cl.tclass[er] == RT_T_ALIAS && cl.alias_of[er] == cv));
        CHECK_EQ_INT(cl_of(&cl, sm), nofuse ? RT_N_RUN : RT_N_FUSED);
        CHECK_EQ_INT(cl.fuse_pre[g->tensors[so].producer], nofuse ? -1 : g->tensors[sm].producer);
        CHECK_EQ_INT(cl_of(&cl, mm), RT_N_RUN);
        CHECK_EQ_INT(cl_of(&cl, tr), nosc ? RT_N_RUN : RT_N_SCATTER);
        CHECK_EQ_INT(cl.tclass[tr], nosc ? RT_T_ARENA : RT_T_ALIAS);
        CHECK_EQ_INT(cl_of(&cl, tn), nosc ? RT_N_RUN : RT_N_VIEW);
        CHECK_EQ_INT(cl.n_dead, 1);
        CHECK_EQ_INT(cl.n_fold, !nofold);
        CHECK_EQ_INT(cl.n_alias, 4 - nosc);
        CHECK_EQ_INT(cl.n_fused, nofuse ? 0 : 3);
        rt_classes_free(&cl);
    }
    printf("  node classes: %s\n", test_failed ? "FAILED" : "ok");
    free(order);
    free(live);
    graph_free(g);
}

/* Every zoo model at batch 1, each option on and off: a node's class is one the graph allows
 * (a view only of a view op, a fusion only of an add, relu or smul), every live node that launches
 * makes its outputs in the arena or as a slice of a concat view's, every alias points at a tensor
 * that is none, and the counts add up. */
static void test_classify_zoo(void) {
    const char *const *names = zoo_names();
    int64_t bad = 0;
    for (int32_t mi = 0; names[mi]; mi++) {
        char err[256];
        graph *g = zoo_build(names[mi], 1, err, sizeof err);
        CHECK(g != NULL);
        if (!g)
            continue;
        int32_t *order = malloc((size_t)g->n_nodes * sizeof *order);
        uint8_t *live = malloc((size_t)g->n_nodes);
        for (int flags = 0; flags < 8; flags++) {
            rt_classes cl;
            if (cl_run(g, flags, order, live, &cl) < 0)
                continue;
            int32_t count[RT_N_COUNT] = {0};
            for (int32_t id = 0; id < g->n_nodes; id++) {
                const graph_node *nd = &g->nodes[id];
                const int k = cl.ncls[id];
                count[k]++;
                bad += k == RT_N_VIEW && !rt_node_is_view(g, nd, cl.no_scatter);
                bad += k == RT_N_CVIEW && nd->op != OP_CONCAT;
                bad += k == RT_N_FUSED && nd->op != OP_EWADD && nd->op != OP_RELU && nd->op != OP_SMUL;
                bad += k == RT_N_SCATTER && nd->op != OP_RESHAPE && nd->op != OP_TRANSPOSE && nd->op != OP_SPLIT &&
                       nd->op != OP_GATHER;
                for (int32_t o = 0; o < nd->n_out && k == RT_N_RUN; o++)
                    bad += cl.tclass[nd->out[o]] != RT_T_ARENA &&
                           !(cl.tclass[nd->out[o]] == RT_T_ALIAS && cl_of(&cl, cl.alias_of[nd->out[o]]) == RT_N_CVIEW);
            }
            for (int32_t t = 0; t < g->n_tensors; t++)
                bad += cl.tclass[t] == RT_T_ALIAS && cl.tclass[cl.alias_of[t]] == RT_T_ALIAS;
            bad += count[RT_N_DEAD] != cl.n_dead || count[RT_N_FOLD] != cl.n_fold ||
                   count[RT_N_VIEW] + count[RT_N_CVIEW] != cl.n_alias || count[RT_N_FUSED] != cl.n_fused;
            if (flags == 0)
                printf("  %-13s classes: %d run, %d folded, %d views, %d scattered, %d fused, %d dead\n", names[mi],
                       (int)count[RT_N_RUN], (int)count[RT_N_FOLD], (int)(count[RT_N_VIEW] + count[RT_N_CVIEW]),
                       (int)count[RT_N_SCATTER], (int)count[RT_N_FUSED], (int)count[RT_N_DEAD]);
            rt_classes_free(&cl);
        }
        free(order);
        free(live);
        graph_free(g);
    }
    CHECK_EQ_INT(bad, 0);
}

int main(void) {
    test_edges();
    test_random();
    test_zoo();
    test_long_chain();
    test_prefuse();
    test_concat_views();
    test_table_views();
    test_classify();
    test_classify_zoo();
    return TEST_REPORT();
}
