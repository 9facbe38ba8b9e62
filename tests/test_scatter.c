/* test_scatter.c: the planner of the GPU runtime's scatter store (rt_scatter_find, rt_scatter_tables:
 * src/runtime/rt_scatter.c; ops_transpose_moves_nothing: ops/ops.c), host code built without CUDA too.
 * - Random matmul -> reshape -> transpose -> reader graphs (random batch dims, factorisations and
 *   perms): where the planner accepts, every product element (b, m, n) is placed by the tables
 *   exactly where reshape + transpose puts it (index arithmetic written here, not the op table);
 *   where it refuses, that placement has no form off_b[b] + off_m[m] * mul[n] + off_n[n] (an
 *   exact rank-one criterion), or moves nothing.
 * - Attention-like trees (split into q, k, v with head split and K^T, at batch 1 and as a 2-D
 *   product of batch x sequence rows; vit's gather form) against
 *   the CPU executor: the product written through the placement holds every leaf's values at its
 *   offset; the deepest transpose is left out where the whole tree is not separable (vit's K^T
 *   with its rows taken as S items of one row).
 * - Refusals: a graph output, a reader that is not a movement, duplicate gathers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "graph.h"
#include "rt.h"
#include "test.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint32_t rnd(uint32_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static uint8_t *all_live(const graph *g) {
    uint8_t *live = malloc((size_t)g->n_nodes + 1);
    memset(live, 1, (size_t)g->n_nodes + 1);
    return live;
}

/* The element of T (= transpose(perm) of reshape(O, rs)) where O's element e lands. */
static int64_t ref_pos(int64_t e, const int64_t *rs, int32_t rr, const int32_t *perm) {
    int64_t idx[OPS_MAX_DIMS], pos = 0;
    for (int32_t d = rr - 1; d >= 0; d--) {
        idx[d] = e % rs[d];
        e /= rs[d];
    }
    for (int32_t k = 0; k < rr; k++)
        pos = pos * rs[perm[k]] + idx[perm[k]];
    return pos;
}

/* 1 if pos over (nb, m, n) is off_b[b] + off_m[i] * mul[j] + off_n[j] for some integer tables:
 * b-independent differences and a rank-one matrix D(i, j) = pos(0, i, j) - pos(0, 0, j). */
static int ref_separable(const int64_t *pos, int64_t nb, int64_t m, int64_t n) {
    int64_t i0 = -1, j0 = -1;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t x = pos[(b * m + i) * n + j] - pos[b * m * n];
                if (x != pos[i * n + j] - pos[0])
                    return 0;
            }
    for (int64_t i = 0; i < m && i0 < 0; i++)
        for (int64_t j = 0; j < n; j++)
            if (pos[i * n + j] - pos[j] != 0) {
                i0 = i;
                j0 = j;
                break;
            }
    if (i0 < 0)
        return m == 1;
    const int64_t p = pos[i0 * n + j0] - pos[j0];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t dij = pos[i * n + j] - pos[j], di0 = pos[i * n + j0] - pos[j0], d0j = pos[i0 * n + j] - pos[j];
            if (dij * p != di0 * d0j)
                return 0;
        }
    return 1;
}

/* One random case: O (batch dims, M, N) from a matmul, reshaped by splitting dims into factors,
 * transposed by a random perm, read by a relu. */
static void random_case(int *accepted, int *refused) {
    int64_t od[OPS_MAX_DIMS], rs[OPS_MAX_DIMS];
    const int32_t orank = 2 + (int32_t)rnd(2);
    static const int64_t sizes[] = {1, 2, 3, 4, 6, 8};
    int32_t rr = 0;
    for (int32_t d = 0; d < orank; d++) {
        int64_t a = sizes[rnd(6)], b = sizes[rnd(6)];
        od[d] = a * b;
        if (rr + 2 <= OPS_MAX_DIMS - (orank - 1 - d) && rnd(2)) {
            rs[rr++] = a;
            rs[rr++] = b;
        } else {
            rs[rr++] = a * b;
        }
    }
    int32_t perm[OPS_MAX_DIMS];
    for (int32_t k = 0; k < rr; k++)
        perm[k] = k;
    for (int32_t k = rr - 1; k > 0; k--) {
        int32_t j = (int32_t)rnd((uint32_t)k + 1), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    const int64_t m = od[orank - 2], n = od[orank - 1], kk = 3;
    int64_t ad[OPS_MAX_DIMS], wd[2] = {kk, n};
    memcpy(ad, od, sizeof ad);
    ad[orank - 1] = kk;
    graph *g = graph_new("scatter_random");
    int32_t a = graph_input(g, "a", orank, ad), w = graph_weight_he(g, "w", 2, wd);
    int32_t o = graph_matmul(g, a, w, OPS_ACT_NONE);
    int32_t r = graph_reshape(g, o, rr, rs), t = graph_transpose(g, r, rr, perm);
    graph_mark_output(g, graph_unary(g, OP_RELU, t));
    CHECK(graph_ok(g));
    const int64_t numel = ops_shape_numel(&g->tensors[o].shape), nb = numel / (m * n);
    int64_t *pos = malloc((size_t)numel * sizeof *pos);
    for (int64_t e = 0; e < numel; e++)
        pos[e] = ref_pos(e, rs, rr, perm);
    uint8_t *live = all_live(g);
    rt_scatter sc;
    char why[256], err[256];
    int found = rt_scatter_find(g, 0, live, &sc, why, sizeof why, err, sizeof err);
    CHECK(found >= 0);
    int moves = !ops_transpose_moves_nothing(&g->tensors[r].shape, &g->nodes[2].p);
    if (found == 1) {
        (*accepted)++;
        CHECK_EQ_INT(sc.n_leaves, 1);
        CHECK_EQ_INT(sc.leaves[0], t);
        CHECK_EQ_INT(sc.leaf_off[0], 0);
        CHECK_EQ_INT(sc.n_nodes, 2);
        const int64_t *ob = sc.tab, *om = ob + nb, *mu = om + m, *on = mu + n;
        int bad = 0;
        CHECK(sc.batched || sc.rows_nb);
        for (int64_t b = 0; sc.batched && b < nb; b++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++)
                    bad += ob[b] + om[i] * mu[j] + on[j] != pos[(b * m + i) * n + j];
        CHECK_EQ_INT(bad, 0);
        if (sc.rows_nb) { /* the rows view places the same way */
            const int64_t rb = sc.rows_nb, rm = sc.rows_m;
            const int64_t *tb = sc.tab + (sc.batched ? nb + m + 2 * n : 0), *tm = tb + rb, *tmu = tm + rm;
            const int64_t *tn = tmu + n;
            CHECK_EQ_INT(rb * rm, nb * m);
            for (int64_t b = 0; b < rb; b++)
                for (int64_t i = 0; i < rm; i++)
                    for (int64_t j = 0; j < n; j++)
                        bad += tb[b] + tm[i] * tmu[j] + tn[j] != pos[(b * rm + i) * n + j];
            CHECK_EQ_INT(bad, 0);
        }
        CHECK(moves);
        rt_scatter_free(&sc);
    } else {
        (*refused)++;
        int any = ref_separable(pos, nb, m, n); /* the batched view, or any regrouping of the rows */
        for (int64_t b = 1; b <= nb * m && !any; b++)
            if ((nb * m) % b == 0)
                any = ref_separable(pos, b, nb * m / b, n);
        if (moves && any)
            fprintf(stderr, "refused but separable: %s\n", why);
        CHECK(!moves || !any);
    }
    free(pos);
    free(live);
    graph_free(g);
}

static void test_random(void) {
    int acc = 0, ref = 0;
    for (int it = 0; it < 400; it++)
        random_case(&acc, &ref);
    printf("  random reshape+transpose: %d accepted, %d refused\n", acc, ref);
    CHECK(acc > 50);
    CHECK(ref > 20);
}

static void test_tables_direct(void) {
    /* a plain 2-D transpose (NHWC -> NCHW of convnext): off_m = m, mul = 1, off_n = n * M */
    enum { M = 6, N = 8 };
    int64_t dst[M * N], ob[1], om[M], mu[N], on[N];
    int v = 1;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            dst[i * N + j] = j * M + i;
    CHECK_EQ_INT(rt_scatter_tables(dst, 1, M, N, ob, om, mu, on, &v), 1);
    CHECK_EQ_INT(v, 0); /* columns are M apart: no 16-byte stores */
    for (int64_t i = 0; i < M; i++) /* the first 4 columns a run, the others M apart: checked per group */
        for (int64_t j = 0; j < N; j++)
            dst[i * N + j] = j < 4 ? i * N + j : 1000 + j * M + i;
    CHECK_EQ_INT(rt_scatter_tables(dst, 1, M, N, ob, om, mu, on, &v), 1);
    CHECK_EQ_INT(v, 2);
    for (int64_t i = 0; i < M; i++) /* a group whose ends are 3 apart but not a run: no 16-byte stores */
        for (int64_t j = 0; j < N; j++)
            dst[i * N + j] = i * 100 + (j < 4 ? (int64_t[]){0, 2, 1, 3}[j] : 10 + j);
    CHECK_EQ_INT(rt_scatter_tables(dst, 1, M, N, ob, om, mu, on, &v), 1);
    CHECK_EQ_INT(v, 0);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            dst[i * N + j] = j * M + i;
    dst[5] = 1000;      /* one element off: refused */
    CHECK_EQ_INT(rt_scatter_tables(dst, 1, M, N, ob, om, mu, on, &v), 0);
    for (int64_t e = 0; e < M * N; e++) /* identity: 16-byte stores */
        dst[e] = e;
    CHECK_EQ_INT(rt_scatter_tables(dst, 1, M, N, ob, om, mu, on, &v), 1);
    CHECK_EQ_INT(v, 1);
    /* transposes moving only axes of size 1 */
    ops_shape s = {4, {1, 5, 1, 7}};
    ops_params p = {0};
    p.n_list = 4;
    int64_t p1[4] = {2, 1, 0, 3}, p2[4] = {0, 3, 2, 1};
    memcpy(p.list, p1, sizeof p1);
    CHECK_EQ_INT(ops_transpose_moves_nothing(&s, &p), 1);
    memcpy(p.list, p2, sizeof p2);
    CHECK_EQ_INT(ops_transpose_moves_nothing(&s, &p), 0);
}

/* Runs g on the CPU with O and the leaves as extra outputs; checks the placement against them. */
static void check_placement(const graph *g0, const rt_scatter *sc) {
    graph *g = graph_clone(g0);
    const int32_t base = g->n_outputs;
    graph_mark_output(g, sc->root);
    for (int32_t q = 0; q < sc->n_leaves; q++)
        graph_mark_output(g, sc->leaves[q]);
    float **out = calloc((size_t)g->n_outputs, sizeof *out);
    char err[256];
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 1, out, err, sizeof err), 0);
    const int64_t numel = ops_shape_numel(&g->tensors[sc->root].shape);
    float *buf = calloc((size_t)sc->buf_elems, sizeof *buf);
    for (int64_t e = 0; e < numel; e++)
        buf[sc->dst[e]] = out[base][e];
    int bad = 0;
    for (int32_t q = 0; q < sc->n_leaves; q++) {
        int64_t n = ops_shape_numel(&g->tensors[sc->leaves[q]].shape);
        CHECK(sc->leaf_off[q] % 64 == 0 && sc->leaf_off[q] + n <= sc->buf_elems);
        for (int64_t i = 0; i < n; i++)
            bad += buf[sc->leaf_off[q] + i] != out[base + 1 + q][i];
    }
    CHECK_EQ_INT(bad, 0);
    for (int32_t j = 0; j < g->n_outputs; j++)
        free(out[j]);
    free(out);
    free(buf);
    graph_free(g);
}

/* x (1, S, 3C) = a @ w, split in three, head split (q, v: (0,2,1,3); k: (0,2,3,1)), relus. */
static graph *bert_like(int kt) {
    enum { S = 8, H = 2, D = 4, C = H * D };
    int64_t ad[3] = {1, S, 5}, wd[2] = {5, 3 * C}, hd[4] = {1, S, H, D};
    graph *g = graph_new("bert_like");
    int32_t a = graph_input(g, "a", 3, ad), w = graph_weight_he(g, "w", 2, wd);
    int32_t o = graph_matmul(g, a, w, OPS_ACT_NONE), parts[3];
    graph_split(g, o, 2, 3, NULL, parts);
    for (int32_t i = 0; i < 3; i++) {
        static const int32_t pq[4] = {0, 2, 1, 3}, pk[4] = {0, 2, 3, 1};
        int32_t h = graph_reshape(g, parts[i], 4, hd);
        graph_mark_output(g, graph_unary(g, OP_RELU, graph_transpose(g, h, 4, i == 1 && kt ? pk : pq)));
    }
    CHECK(graph_ok(g));
    return g;
}

/* bert at batch B as the optimizer leaves it: a 2-D product (B*S, 3C), split, (B, S, H, D),
 * q and v (0,2,1,3), k (0,2,3,1): separable only with the rows regrouped as B items of S. */
static graph *bert_batch(void) {
    enum { B = 3, S = 8, H = 2, D = 4, C = H * D };
    int64_t ad[2] = {B * S, 5}, wd[2] = {5, 3 * C}, hd[4] = {B, S, H, D};
    static const int32_t pq[4] = {0, 2, 1, 3}, pk[4] = {0, 2, 3, 1};
    graph *g = graph_new("bert_batch");
    int32_t o = graph_matmul(g, graph_input(g, "a", 2, ad), graph_weight_he(g, "w", 2, wd), OPS_ACT_NONE), parts[3];
    graph_split(g, o, 1, 3, NULL, parts);
    for (int32_t i = 0; i < 3; i++)
        graph_mark_output(g, graph_unary(g, OP_RELU, graph_transpose(g, graph_reshape(g, parts[i], 4, hd), 4,
                                                                      i == 1 ? pk : pq)));
    CHECK(graph_ok(g));
    return g;
}

/* vit's form: (S, 1, 3C) -> (S, 1, 3, C) -> (3, S, 1, C) -> gather 0, 1, 2 -> (S, H, D) -> (H, S, D);
 * k also -> (H, D, S); dup: a fourth gather repeats id 0; wb: a weight per row (S, 5, 3C), so the
 * rows cannot be regrouped (only the batched view: S items of one row). */
static graph *vit_like(int dup, int wb) {
    enum { S = 6, H = 2, D = 4, C = H * D };
    int64_t ad[3] = {S, 1, 5}, wd[2] = {5, 3 * C}, r1[4] = {S, 1, 3, C}, r2[3] = {S, H, D};
    static const int32_t p1[4] = {2, 0, 1, 3}, p2[3] = {1, 0, 2}, pk[3] = {0, 2, 1};
    graph *g = graph_new("vit_like");
    const int64_t wbd[3] = {S, 5, 3 * C};
    int32_t a = graph_input(g, "a", 3, ad), w = wb ? graph_weight_he(g, "w", 3, wbd) : graph_weight_he(g, "w", 2, wd);
    int32_t o = graph_matmul(g, a, w, OPS_ACT_NONE);
    int32_t t = graph_transpose(g, graph_reshape(g, o, 4, r1), 4, p1);
    for (int32_t i = 0; i < 3 + dup; i++) {
        char name[16];
        snprintf(name, sizeof name, "id%d", (int)i);
        int32_t ids = graph_weight_const(g, name, 0, NULL, (float)(i % 3)), in[2] = {t, ids}, out[OPS_MAX_OUTPUTS];
        ops_params p = {0};
        graph_add(g, NULL, OP_GATHER, &p, 2, in, out);
        int32_t h = graph_transpose(g, graph_reshape(g, out[0], 3, r2), 3, p2);
        if (i == 1)
            h = graph_transpose(g, h, 3, pk);
        graph_mark_output(g, graph_unary(g, OP_RELU, h));
    }
    CHECK(graph_ok(g));
    return g;
}

static int count_op(const graph *g, const rt_scatter *sc, ops_type op) {
    int n = 0;
    for (int32_t q = 0; q < sc->n_nodes; q++)
        n += g->nodes[sc->nodes[q]].op == op;
    return n;
}

static void test_trees(void) {
    char why[256], err[256];
    for (int kt = 0; kt < 2; kt++) {
        graph *g = bert_like(kt);
        uint8_t *live = all_live(g);
        rt_scatter sc;
        CHECK_EQ_INT(rt_scatter_find(g, 0, live, &sc, why, sizeof why, err, sizeof err), 1);
        CHECK_EQ_INT(sc.n_leaves, 3);
        CHECK_EQ_INT(count_op(g, &sc, OP_TRANSPOSE), 3); /* K^T too: mul differs per column */
        CHECK_EQ_INT(count_op(g, &sc, OP_SPLIT), 1);
        CHECK_EQ_INT(sc.batched, 1);
        CHECK_EQ_INT(sc.vec4, kt ? 2 : 1); /* K^T's columns: 4-byte stores, q's and v's 16-byte */
        check_placement(g, &sc);
        rt_scatter_free(&sc);
        free(live);
        graph_free(g);
    }
    graph *g = bert_batch();
    uint8_t *live = all_live(g);
    rt_scatter sc;
    CHECK_EQ_INT(rt_scatter_find(g, 0, live, &sc, why, sizeof why, err, sizeof err), 1);
    CHECK_EQ_INT(count_op(g, &sc, OP_TRANSPOSE), 3);
    CHECK_EQ_INT(sc.batched, 0); /* one item of 24 rows: q's rows and k's rows differ */
    CHECK_EQ_INT(sc.rows_nb, 3);
    CHECK_EQ_INT(sc.rows_m, 8);
    check_placement(g, &sc);
    rt_scatter_free(&sc);
    free(live);
    graph_free(g);
    g = vit_like(0, 0);
    live = all_live(g);
    CHECK_EQ_INT(rt_scatter_find(g, 0, live, &sc, why, sizeof why, err, sizeof err), 1);
    CHECK_EQ_INT(sc.n_leaves, 3);
    CHECK_EQ_INT(count_op(g, &sc, OP_GATHER), 3);
    CHECK_EQ_INT(count_op(g, &sc, OP_TRANSPOSE), 5); /* K^T too: one tall item, mul per column */
    CHECK_EQ_INT(sc.batched, 0);                     /* as S items of one row it is not separable */
    CHECK_EQ_INT(sc.rows_nb, 1);
    check_placement(g, &sc);
    rt_scatter_free(&sc);
    free(live);
    graph_free(g);
    g = vit_like(0, 1); /* batched view only: K^T is left out (a kernel reading leaf k) */
    live = all_live(g);
    CHECK_EQ_INT(rt_scatter_find(g, 0, live, &sc, why, sizeof why, err, sizeof err), 1);
    CHECK_EQ_INT(count_op(g, &sc, OP_TRANSPOSE), 4);
    CHECK_EQ_INT(count_op(g, &sc, OP_GATHER), 3);
    CHECK_EQ_INT(sc.batched, 1);
    CHECK_EQ_INT(sc.rows_nb, 0);
    check_placement(g, &sc);
    rt_scatter_free(&sc);
    free(live);
    graph_free(g);
    g = vit_like(1, 0); /* a repeated id: an element in two leaves */
    live = all_live(g);
    CHECK_EQ_INT(rt_scatter_find(g, 0, live, &sc, why, sizeof why, err, sizeof err), 0);
    free(live);
    graph_free(g);
}

static void test_refusals(void) {
    int64_t ad[2] = {4, 3}, wd[2] = {3, 8}, rs[3] = {4, 2, 4};
    static const int32_t perm[3] = {1, 0, 2};
    char why[256], err[256];
    rt_scatter sc;
    for (int c = 0; c < 2; c++) {
        graph *g = graph_new("refuse");
        int32_t o = graph_matmul(g, graph_input(g, "a", 2, ad), graph_weight_he(g, "w", 2, wd), OPS_ACT_NONE);
        int32_t t = graph_transpose(g, graph_reshape(g, o, 3, rs), 3, perm);
        graph_mark_output(g, t);
        if (c == 0)
            graph_mark_output(g, o); /* the product itself is an output */
        else
            graph_mark_output(g, graph_unary(g, OP_RELU, o)); /* read by a non-movement */
        uint8_t *live = all_live(g);
        CHECK_EQ_INT(rt_scatter_find(g, 0, live, &sc, why, sizeof why, err, sizeof err), 0);
        CHECK_STR_CONTAINS(why, "no movement");
        free(live);
        graph_free(g);
    }
}

int main(void) {
    test_tables_direct();
    test_random();
    test_trees();
    test_refusals();
    return TEST_REPORT();
}
