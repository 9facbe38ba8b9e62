/* rt_scatter.c: planning the GPU runtime's scatter store (host code, built without CUDA too, for
 * tests/test_scatter.c): the reshapes, transposes, splits and constant-index gathers that read a
 * matmul's output (a "movement tree") are executed by the matmul's store instead of launching a
 * kernel each. The tree's leaves (the tensors real readers see) become views of one buffer at
 * leaf offsets; element (b, m, n) of the product goes to off_b[b] + off_m[m] * mul[n] + off_n[n]
 * (ops/cuda/matmul.h, mm_scatter). Where each element lands is found by running the tree's CPU
 * reference ops on the product's element indices (so the semantics are the op table's by
 * construction); the tables are then derived and checked against every element. A tree whose
 * placement is not of that form loses its deepest transposes (they run as kernels) until it is,
 * or is refused. The store is the FP32 kernel's: at precision 3xtf32 the runtime keeps a store
 * only where the 3xtf32 decision for the product it runs is the FP32 kernel, decided once when
 * planned (rt.c, rt_sc_decide); tensor-core products run their trees as kernels.
 */
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "rt.h"

#define SC_MAX_TREE RT_SCATTER_MAX_NODES
#define SC_MAX_NUMEL ((int64_t)1 << 24) /* element indices pass through float ops exactly */
#define SC_ALIGN_ELEMS 64              /* leaf offsets: 256 bytes, the runtime's buffer alignment */

static int64_t sc_gcd(int64_t a, int64_t b) {
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* off_m and mul from the first batch item: off_m[i] * mul[j] = dst(0, i, j) - dst(0, 0, j). */
static int sc_rows(const int64_t *dst, int64_t m, int64_t n, int64_t *off_m, int64_t *mul) {
    int64_t g = 0, best = 0;
    for (int64_t i = 0; i < m; i++) {
        off_m[i] = dst[i * n] - dst[0];
        g = sc_gcd(g, off_m[i]);
    }
    if (g == 0) { /* m == 1, or rows that collide (refused by the check below unless m == 1) */
        for (int64_t j = 0; j < n; j++)
            mul[j] = 1;
        return m == 1;
    }
    for (int64_t i = 0; i < m; i++) {
        off_m[i] /= g;
        if (llabs(off_m[i]) > llabs(off_m[best]))
            best = i;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t d = dst[best * n + j] - dst[j];
        if (d % off_m[best])
            return 0;
        mul[j] = d / off_m[best];
    }
    return 1;
}

int rt_scatter_tables(const int64_t *dst, int64_t nb, int64_t m, int64_t n, int64_t *off_b, int64_t *off_m,
                      int64_t *mul, int64_t *off_n, int *vec4) {
    *vec4 = 0;
    if (nb < 1 || m < 1 || n < 1 || !sc_rows(dst, m, n, off_m, mul))
        return 0;
    for (int64_t j = 0; j < n; j++)
        off_n[j] = dst[j];
    int v = n % 4 == 0;
    for (int64_t b = 0; b < nb; b++) {
        off_b[b] = dst[b * m * n] - dst[0];
        v = v && off_b[b] % 4 == 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                if (dst[(b * m + i) * n + j] != off_b[b] + off_m[i] * mul[j] + off_n[j])
                    return 0;
                v = v && (off_m[i] * mul[j]) % 4 == 0;
            }
    }
    /* all: every group a run, aligned; ends: a group whose ends are 3 apart with one mul is a run
     * (the store may check those two per group); any: some group is a run */
    int all = v, ends = n % 4 == 0, any = 0;
    for (int64_t j = 0; ends && j < n; j += 4) {
        int full = 1;
        for (int64_t c = 1; c < 4; c++)
            full = full && off_n[j + c] == off_n[j] + c && mul[j + c] == mul[j];
        all = all && full && off_n[j] % 4 == 0;
        any = any || full;
        ends = off_n[j + 3] != off_n[j] + 3 || mul[j + 3] != mul[j] || full;
    }
    *vec4 = all ? 1 : ends && any ? 2 : 0;
    return 1;
}

/* --- the movement tree --------------------------------------------------------------------------- */

/* Which ops the store executes (reshape, transpose, split, gather by constant ids: sc_movement),
 * which of them it leaves to kernels to reach a separable placement (transposes that move
 * elements: sc_frontier) and which make a store worth having (sc_moves) are the store's own, one
 * kernel's (mm_scatter, ops/cuda/matmul.h), so they are named here; what each op does to the
 * elements is the op table's (sc_run runs their CPU references). */

typedef struct {
    int32_t nodes[SC_MAX_TREE], n_nodes;
    int32_t tens[RT_SCATTER_MAX_TENSORS], n_tens; /* root first, then outputs of nodes in order */
    uint8_t leaf[RT_SCATTER_MAX_TENSORS];
} sc_tree;

static int sc_is_output(const graph *g, int32_t t) {
    for (int32_t j = 0; j < g->n_outputs; j++)
        if (g->outputs[j] == t)
            return 1;
    return 0;
}

/* A node that only moves t's elements: reshape, transpose, split of t, or a gather from t by
 * constant ids. */
static int sc_movement(const graph *g, const graph_node *nd, int32_t t) {
    if (nd->in[0] != t)
        return 0;
    switch (nd->op) {
    case OP_RESHAPE:
    case OP_TRANSPOSE:
    case OP_SPLIT:
        return nd->n_in == 1;
    case OP_GATHER:
        return nd->n_in == 2 && nd->in[1] != t && g->tensors[nd->in[1]].kind == GRAPH_T_WEIGHT;
    default:
        return 0;
    }
}

/* Expands t: 1 if every live reader moves it (and none is cut), appending them; 0: t is a leaf. */
static int sc_expand(const graph *g, const uint8_t *live, const uint8_t *cut, int32_t t, sc_tree *tr) {
    int32_t found = 0, start = tr->n_nodes;
    if (sc_is_output(g, t))
        return 0;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const graph_node *nd = &g->nodes[k];
        int reads = 0;
        for (int32_t i = 0; i < nd->n_in; i++)
            reads |= nd->in[i] == t;
        if (!reads || !live[k])
            continue;
        if (!sc_movement(g, nd, t) || cut[k] || tr->n_nodes >= SC_MAX_TREE ||
            tr->n_tens + nd->n_out > RT_SCATTER_MAX_TENSORS) {
            tr->n_nodes = start;
            return 0;
        }
        tr->nodes[tr->n_nodes++] = k;
        found++;
    }
    if (!found)
        return 0;
    for (int32_t q = start; q < tr->n_nodes; q++) {
        const graph_node *nd = &g->nodes[tr->nodes[q]];
        for (int32_t o = 0; o < nd->n_out; o++)
            tr->tens[tr->n_tens++] = nd->out[o];
    }
    return 1;
}

static void sc_build(const graph *g, const uint8_t *live, const uint8_t *cut, int32_t root, sc_tree *tr) {
    tr->n_nodes = 0;
    tr->n_tens = 1;
    tr->tens[0] = root;
    for (int32_t q = 0; q < tr->n_tens; q++) /* breadth first: producers before readers */
        tr->leaf[q] = (uint8_t)!sc_expand(g, live, cut, tr->tens[q], tr);
}

/* --- placement: the tree's ops on element indices ------------------------------------------------ */

static int32_t sc_slot(const sc_tree *tr, int32_t t) {
    for (int32_t q = 0; q < tr->n_tens; q++)
        if (tr->tens[q] == t)
            return q;
    return -1;
}

/* Runs the tree on indices 1..numel(root) (0 would be a gather's zero fill); val[q] per tensor. */
static int sc_run(const graph *g, const sc_tree *tr, float **val, char *err, size_t errlen) {
    int64_t n0 = ops_shape_numel(&g->tensors[tr->tens[0]].shape);
    if (!(val[0] = malloc((size_t)n0 * sizeof(float))))
        return base_fail(err, errlen, "out of memory");
    for (int64_t e = 0; e < n0; e++)
        val[0][e] = (float)(e + 1);
    for (int32_t q = 0; q < tr->n_nodes; q++) {
        const graph_node *nd = &g->nodes[tr->nodes[q]];
        ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
        const float *in[OPS_MAX_INPUTS] = {0};
        float *out[OPS_MAX_OUTPUTS] = {0}, *ids = NULL;
        for (int32_t i = 0; i < nd->n_in; i++)
            in_sh[i] = g->tensors[nd->in[i]].shape;
        in[0] = val[sc_slot(tr, nd->in[0])];
        if (nd->op == OP_GATHER) {
            int64_t ni = ops_shape_numel(&in_sh[1]);
            if (!(ids = malloc((size_t)(ni > 0 ? ni : 1) * sizeof(float))))
                return base_fail(err, errlen, "out of memory");
            if (graph_weight_values(g, nd->in[1], ids, err, errlen) < 0) {
                free(ids);
                return -1;
            }
            in[1] = ids;
        }
        for (int32_t o = 0; o < nd->n_out; o++) {
            out_sh[o] = g->tensors[nd->out[o]].shape;
            int64_t n = ops_shape_numel(&out_sh[o]);
            out[o] = val[sc_slot(tr, nd->out[o])] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
            if (!out[o]) {
                free(ids);
                return base_fail(err, errlen, "out of memory");
            }
        }
        ops_sig sig = {.op = nd->op, .p = &nd->p, .n_in = nd->n_in, .n_out = nd->n_out, .in = in_sh, .out = out_sh};
        ops_table[nd->op].cpu(&sig, in, out);
        free(ids);
    }
    return 0;
}

/* dst from the leaves' indices: each product element in exactly one leaf; leaves in the order of
 * their first element, each at a 256-byte boundary. 1 placed, 0 not a placement (why). */
static int sc_place(const graph *g, const sc_tree *tr, float **val, rt_scatter *sc, char *why, size_t len) {
    const int64_t n0 = ops_shape_numel(&g->tensors[tr->tens[0]].shape);
    int64_t first[RT_SCATTER_MAX_TENSORS], off = 0;
    int32_t order[RT_SCATTER_MAX_TENSORS], nl = 0;
    for (int64_t e = 0; e < n0; e++)
        sc->dst[e] = -1;
    for (int32_t q = 1; q < tr->n_tens; q++) {
        if (!tr->leaf[q])
            continue;
        int64_t n = ops_shape_numel(&g->tensors[tr->tens[q]].shape), lo = INT64_MAX;
        for (int64_t i = 0; i < n; i++)
            lo = (int64_t)val[q][i] < lo ? (int64_t)val[q][i] : lo;
        int32_t k = nl++;
        while (k > 0 && first[order[k - 1]] > lo) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = q;
        first[q] = lo;
    }
    sc->n_leaves = 0;
    for (int32_t k = 0; k < nl; k++) {
        const int32_t q = order[k];
        const int64_t n = ops_shape_numel(&g->tensors[tr->tens[q]].shape);
        off = (off + SC_ALIGN_ELEMS - 1) / SC_ALIGN_ELEMS * SC_ALIGN_ELEMS;
        for (int64_t i = 0; i < n; i++) {
            float v = val[q][i];
            int64_t e = (int64_t)v - 1;
            if ((float)(e + 1) != v || e < 0 || e >= n0)
                return base_fail(why, len, "a leaf holds a value that is not the product's (gather zero fill)") + 1;
            if (sc->dst[e] >= 0)
                return base_fail(why, len, "an element reaches two leaves") + 1;
            sc->dst[e] = off + i;
        }
        sc->leaves[sc->n_leaves] = tr->tens[q];
        sc->leaf_off[sc->n_leaves++] = off;
        off += n;
    }
    for (int64_t e = 0; e < n0; e++)
        if (sc->dst[e] < 0)
            return base_fail(why, len, "an element of the product reaches no leaf") + 1;
    sc->buf_elems = off;
    return 1;
}

/* --- finding a tree whose placement is separable ------------------------------------------------- */

/* The tree under cut, placed and tabled: 1 separable (sc filled), 0 not (why), -1 error. */
static int sc_try(const graph *g, const sc_tree *tr, rt_scatter *sc, char *why, size_t len, char *err,
                  size_t errlen) {
    float *val[RT_SCATTER_MAX_TENSORS] = {0};
    int rc = sc_run(g, tr, val, err, errlen);
    if (rc == 0)
        rc = sc_place(g, tr, val, sc, why, len);
    for (int32_t q = 0; q < tr->n_tens; q++)
        free(val[q]);
    if (rc <= 0)
        return rc;
    const int64_t nb = sc->nb, m = sc->m, n = sc->n;
    int64_t *t = sc->tab;
    sc->batched = rt_scatter_tables(sc->dst, nb, m, n, t, t + nb, t + nb + m, t + nb + m + n, &sc->vec4);
    int64_t *r = sc->batched ? t + nb + m + 2 * n : t;
    sc->rows_nb = 0;
    for (int64_t b = 1, tried = 0; sc->tallable && b <= nb * m && tried < 64; b++) {
        const int64_t rm = nb * m / b;
        if (rm * b != nb * m)
            continue;
        tried++;
        if (rt_scatter_tables(sc->dst, b, rm, n, r, r + b, r + b + rm, r + b + rm + n, &sc->rows_vec4)) {
            sc->rows_nb = b;
            sc->rows_m = rm;
            break;
        }
    }
    if (!sc->batched && !sc->rows_nb)
        return base_fail(why, len, "the placement is not off_b[b] + off_m[m] * mul[n] + off_n[n]") + 1;
    return 1;
}

/* The deepest real transposes of the tree (no real transpose between them and a leaf). */
static int32_t sc_frontier(const graph *g, const sc_tree *tr, int32_t *fr) {
    int32_t nf = 0;
    for (int32_t q = 0; q < tr->n_nodes; q++) {
        const graph_node *nd = &g->nodes[tr->nodes[q]];
        if (nd->op != OP_TRANSPOSE || ops_transpose_moves_nothing(&g->tensors[nd->in[0]].shape, &nd->p))
            continue;
        int deeper = 0; /* a later real transpose reading (through the tree) this one's output */
        for (int32_t r = q + 1; r < tr->n_nodes && !deeper; r++) {
            const graph_node *nr = &g->nodes[tr->nodes[r]];
            if (nr->op != OP_TRANSPOSE || ops_transpose_moves_nothing(&g->tensors[nr->in[0]].shape, &nr->p))
                continue;
            for (int32_t t = nr->in[0], guard = 0; guard < SC_MAX_TREE && !deeper; guard++) {
                if (t == nd->out[0]) {
                    deeper = 1;
                    break;
                }
                int32_t up = -1; /* the tree node producing t */
                for (int32_t u = 0; u < tr->n_nodes; u++)
                    for (int32_t o = 0; o < g->nodes[tr->nodes[u]].n_out; o++)
                        if (g->nodes[tr->nodes[u]].out[o] == t)
                            up = u;
                if (up < 0)
                    break;
                t = g->nodes[tr->nodes[up]].in[0];
            }
        }
        if (!deeper)
            fr[nf++] = tr->nodes[q];
    }
    return nf;
}

static void sc_record(const sc_tree *tr, rt_scatter *sc) {
    sc->n_nodes = tr->n_nodes;
    memcpy(sc->nodes, tr->nodes, (size_t)tr->n_nodes * sizeof *tr->nodes);
    sc->n_inner = 0;
    for (int32_t q = 1; q < tr->n_tens; q++)
        if (!tr->leaf[q])
            sc->inner[sc->n_inner++] = tr->tens[q];
}

/* 1 if a node of the tree moves elements: reshapes and transposes of axes of size 1 alone are
 * aliases already (rt.c), a store for them would gain nothing. */
static int sc_moves(const graph *g, const sc_tree *tr) {
    int moves = 0;
    for (int32_t q = 0; q < tr->n_nodes; q++) {
        const graph_node *nd = &g->nodes[tr->nodes[q]];
        moves |= nd->op == OP_SPLIT || nd->op == OP_GATHER ||
                 (nd->op == OP_TRANSPOSE && !ops_transpose_moves_nothing(&g->tensors[nd->in[0]].shape, &nd->p));
    }
    return moves;
}

int rt_scatter_find(const graph *g, int32_t node, const uint8_t *live, rt_scatter *sc, char *why, size_t len,
                    char *err, size_t errlen) {
    memset(sc, 0, sizeof *sc);
    const graph_node *mm = &g->nodes[node];
    const ops_shape *os = &g->tensors[mm->out[0]].shape;
    const int64_t numel = ops_shape_numel(os);
    if (mm->op != OP_MATMUL || os->rank < 2) /* the store is the matmul kernel's */
        return base_fail(why, len, "not a matmul");
    if (numel < 1 || numel > SC_MAX_NUMEL)
        return base_fail(why, len, "output of %lld elements (at most 2^24)", (long long)numel);
    sc->node = node;
    sc->root = mm->out[0];
    sc->m = os->dims[os->rank - 2];
    sc->n = os->dims[os->rank - 1];
    sc->nb = numel / (sc->m * sc->n);
    const ops_shape *as = &g->tensors[mm->in[0]].shape, *bs = &g->tensors[mm->in[1]].shape;
    const int64_t k = as->dims[as->rank - 1];
    /* rows may be regrouped (a tall product, or items of other heights) when A is packed over all
     * of them and B is one matrix, broadcast */
    sc->tallable = ops_shape_numel(as) == sc->nb * sc->m * k && ops_shape_numel(bs) == k * sc->n;
    uint8_t *cut = calloc((size_t)g->n_nodes + 1, 1);
    sc_tree *tr = malloc(sizeof *tr);
    int rc = -1;
    if (!cut || !tr) {
        base_fail(err, errlen, "out of memory planning a scatter store");
        goto done;
    }
    sc_build(g, live, cut, sc->root, tr); /* the common case, cheaply: nothing moves the product */
    if (tr->n_nodes == 0) {
        rc = base_fail(why, len, "no movement reads it") + 1;
        goto done;
    }
    sc->dst = malloc((size_t)numel * sizeof *sc->dst);
    sc->tab = malloc((size_t)(2 * (sc->nb + sc->m) + 2 * numel / sc->n + 4 * sc->n) * sizeof *sc->tab);
    if (!sc->dst || !sc->tab) {
        base_fail(err, errlen, "out of memory planning a scatter store");
        goto done;
    }
    for (int round = 0; round < SC_MAX_TREE; round++) {
        sc_build(g, live, cut, sc->root, tr);
        if (tr->n_nodes == 0) {
            rc = base_fail(why, len, round ? "no tree left after cutting transposes" : "no movement reads it") + 1;
            break;
        }
        if ((rc = sc_try(g, tr, sc, why, len, err, errlen)) != 0)
            break;
        int32_t fr[SC_MAX_TREE], nf = sc_frontier(g, tr, fr), one = 0;
        if (nf == 0)
            break; /* not a matter of transposes: refused, why says */
        for (int32_t f = 0; f < nf && !one; f++) { /* one transpose fewer, if that is enough */
            cut[fr[f]] = 1;
            sc_build(g, live, cut, sc->root, tr);
            if (tr->n_nodes > 0 && (rc = sc_try(g, tr, sc, why, len, err, errlen)) != 0)
                one = 1;
            else
                cut[fr[f]] = 0;
        }
        if (one)
            break;
        for (int32_t f = 0; f < nf; f++)
            cut[fr[f]] = 1;
    }
    if (rc == 1) {
        if (sc_moves(g, tr))
            sc_record(tr, sc);
        else
            rc = base_fail(why, len, "nothing left that moves elements") + 1;
    }
done:
    free(cut);
    free(tr);
    if (rc != 1)
        rt_scatter_free(sc);
    return rc;
}

void rt_scatter_free(rt_scatter *sc) {
    free(sc->dst);
    free(sc->tab);
    sc->dst = NULL;
    sc->tab = NULL;
}
