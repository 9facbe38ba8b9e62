/* ops_matmul.c: the matmul node on the hand-written kernels of matmul.h (mm_run: tuned tile
 * configuration per shape, strided batch, bias and activation epilogue).
 *
 * Matmul batch dims broadcast (numpy rules). The batch is cut into as few mm_run calls as the
 * strides allow: a B shared by every batch item with a packed A becomes one tall matmul
 * (batch*m rows); otherwise the longest run of trailing batch dims over which A and B are each
 * packed or each broadcast becomes one strided batch, repeated over the leading dims.
 * Activations the kernels lack (sigmoid, tanh) run as a separate in-place pass.
 * When the GPU runtime has given the node a scatter store (mm_scatter_node_get: the transposes,
 * splits and gathers reading its output run in its store), the product runs in a view the tables
 * hold: rows (A's rows regrouped, B broadcast) or the batched decomposition above; the problem of
 * that view is mm_node_scatter_problem, which the runtime also asks when it plans a store at
 * precision 3xtf32 (the store runs only where that product's 3xtf32 decision is the FP32 kernel).
 */
#include <string.h>

#include "matmul.h"
#include "ops_cuda.h"

/* Strides (elements) of src's batch dims aligned right to out's rb batch dims; 0 where src
 * broadcasts (a dim of 1 or a missing dim); unit is one matrix of src. */
static void oc_mm_strides(const ops_shape *src, int32_t rb, int64_t unit, int64_t *st) {
    int32_t sr = src->rank - 2;
    int64_t acc = unit;
    for (int32_t i = rb - 1; i >= 0; i--) {
        int32_t k = i - (rb - sr);
        int64_t d = k >= 0 ? src->dims[k] : 1;
        st[i] = d != 1 ? acc : 0;
        acc *= d;
    }
}

/* 1 if the strides st over dims d[j..rb) are all 0, or exactly those of packed matrices of unit
 * elements (dims of size 1 are skipped by the caller). */
static int oc_mm_uniform(const int64_t *d, const int64_t *st, int32_t j, int32_t rb, int64_t unit, int *zero) {
    int all0 = 1, packed = 1;
    int64_t acc = unit;
    for (int32_t i = rb - 1; i >= j; i--) {
        if (st[i] != 0)
            all0 = 0;
        if (st[i] != acc)
            packed = 0;
        acc *= d[i];
    }
    *zero = all0;
    return all0 || packed;
}

/* How the node's batch is cut into calls: batch dims of size 1 dropped (d, ast, bst over rb dims,
 * nb items in all); dims [j, rb) go into one strided call of `inner` items, over which A (a0) or B
 * (b0) is broadcast when set; the leading dims repeat that call. */
typedef struct {
    int64_t m, n, k, nb, inner;
    int64_t d[OPS_MAX_DIMS], ast[OPS_MAX_DIMS], bst[OPS_MAX_DIMS];
    int32_t rb, j;
    int a0, b0;
} oc_mm_layout;

static void oc_mm_layout_of(const ops_shape *as, const ops_shape *bs, const ops_shape *os, oc_mm_layout *L) {
    L->m = as->dims[as->rank - 2];
    L->k = as->dims[as->rank - 1];
    L->n = bs->dims[bs->rank - 1];
    const int32_t rb0 = os->rank - 2;
    int64_t ast0[OPS_MAX_DIMS], bst0[OPS_MAX_DIMS];
    oc_mm_strides(as, rb0, L->m * L->k, ast0);
    oc_mm_strides(bs, rb0, L->k * L->n, bst0);
    L->rb = 0; /* drop batch dims of size 1: they move nothing */
    for (int32_t i = 0; i < rb0; i++)
        if (os->dims[i] != 1) {
            L->d[L->rb] = os->dims[i];
            L->ast[L->rb] = ast0[i];
            L->bst[L->rb] = bst0[i];
            L->rb++;
        }
    L->nb = 1;
    for (int32_t i = 0; i < L->rb; i++)
        L->nb *= L->d[i];
    L->j = 0; /* batch dims [j, rb) go into one strided call */
    while (L->j < L->rb && !(oc_mm_uniform(L->d, L->ast, L->j, L->rb, L->m * L->k, &L->a0) &&
                             oc_mm_uniform(L->d, L->bst, L->j, L->rb, L->k * L->n, &L->b0)))
        L->j++;
    oc_mm_uniform(L->d, L->ast, L->j, L->rb, L->m * L->k, &L->a0);
    oc_mm_uniform(L->d, L->bst, L->j, L->rb, L->k * L->n, &L->b0);
    L->inner = 1;
    for (int32_t i = L->j; i < L->rb; i++)
        L->inner *= L->d[i];
}

/* The problem each call runs with a scatter store (bias and act left as p has them): the rows
 * view (rows_nb items of rows_m rows, B broadcast) or the batched view (the calls above). */
static void oc_mm_scatter_view(const oc_mm_layout *L, int rows, int64_t rows_nb, int64_t rows_m, mm_problem *p) {
    p->n = L->n;
    p->k = L->k;
    if (rows) {
        p->m = rows_m;
        p->batch = rows_nb;
        p->stride_a = rows_m * L->k;
        p->stride_b = 0;
        p->stride_c = rows_m * L->n;
    } else {
        p->m = L->m;
        p->batch = L->inner;
        p->stride_a = L->a0 ? 0 : L->m * L->k;
        p->stride_b = L->b0 ? 0 : L->k * L->n;
        p->stride_c = L->m * L->n;
    }
}

void mm_node_scatter_problem(int32_t a_rank, const int64_t *a_dims, int32_t b_rank, const int64_t *b_dims,
                             int32_t o_rank, const int64_t *o_dims, int32_t rows, int64_t rows_nb, int64_t rows_m,
                             int32_t has_bias, mm_act act, mm_problem *p) {
    const ops_shape as = ops_shape_make(a_rank, a_dims), bs = ops_shape_make(b_rank, b_dims);
    const ops_shape os = ops_shape_make(o_rank, o_dims);
    oc_mm_layout L;
    oc_mm_layout_of(&as, &bs, &os, &L);
    mm_problem_init(p, L.m, L.n, L.k, 1);
    oc_mm_scatter_view(&L, rows, rows_nb, rows_m, p);
    p->has_bias = has_bias;
    p->act = act;
}

int oc_mm_act(ops_act act) {
    switch (act) {
    case OPS_ACT_NONE:
        return MM_ACT_NONE;
    case OPS_ACT_RELU:
        return MM_ACT_RELU;
    case OPS_ACT_GELU:
        return MM_ACT_GELU;
    case OPS_ACT_SILU:
        return MM_ACT_SILU;
    case OPS_ACT_GELU_TANH:
        return MM_ACT_GELU_TANH;
    case OPS_ACT_RELU6:
        return MM_ACT_RELU6;
    case OPS_ACT_HARDSWISH:
        return MM_ACT_HARDSWISH;
    default: /* sigmoid, tanh */
        return -1;
    }
}

/* The strided-batch calls of oc_matmul with the scatter store sc over the node's whole output:
 * the tables place every output, so C stays the output's base and each call's batch table starts
 * at its first item (batch items are counted in the output's row-major order). A tall product
 * without a rows view runs here as a batch with B broadcast. p: the batched view's problem. */
static int oc_mm_scatter_calls(const mm_problem *p, const mm_scatter_node *sc, const oc_mm_layout *L,
                               const float *const *in, const float *bias, float *out, cudaStream_t st, char *msg,
                               size_t len) {
    for (int64_t o = 0; o < L->nb / L->inner; o++) {
        int64_t oa = 0, ob = 0, idx = o;
        for (int32_t i = L->j - 1; i >= 0; i--) {
            oa += (idx % L->d[i]) * L->ast[i];
            ob += (idx % L->d[i]) * L->bst[i];
            idx /= L->d[i];
        }
        mm_scatter part = sc->batched;
        part.off_b += o * L->inner;
        if (mm_run_scatter(p, &part, in[0] + oa, in[1] + ob, bias, out, st, msg, len) < 0)
            return -1;
    }
    return 0;
}

OPS_CUDA_FN(matmul) {
    const ops_act act = (ops_act)s->p->v[PM_ACT];
    const float *bias = s->n_in > 2 ? in[2] : NULL; /* (n) */
    oc_mm_layout L;
    oc_mm_layout_of(&s->in[0], &s->in[1], &s->out[0], &L);
    const int64_t m = L.m, n = L.n, k = L.k, nb = L.nb, inner = L.inner;

    mm_problem p;
    mm_problem_init(&p, m, n, k, 1);
    p.has_bias = bias != NULL;
    const int mact = oc_mm_act(act);
    p.act = mact < 0 ? MM_ACT_NONE : (mm_act)mact;
    const int post = mact < 0;
    char msg[256];
    const cudaStream_t st = oc_stream(env);

    const mm_scatter_node *sc = mm_scatter_node_get(); /* the runtime's scatter store, if any */
    if (sc) { /* the view's problem: the one the runtime planned the store for */
        const int rows = sc->rows.off_m != NULL; /* A packed, B one matrix: rows regrouped as the tables need */
        oc_mm_scatter_view(&L, rows, sc->rows_nb, sc->rows_m, &p);
        if (rows ? mm_run_scatter(&p, &sc->rows, in[0], in[1], bias, out[0], st, msg, sizeof msg) < 0
                 : oc_mm_scatter_calls(&p, sc, &L, in, bias, out[0], st, msg, sizeof msg) < 0)
            return oc_fail(env, "%s", msg);
    } else if (L.j == 0 && L.b0 && !L.a0) {
        p.m = m * nb; /* B shared, A packed: one tall product */
        if (mm_run(&p, in[0], in[1], bias, out[0], st, msg, sizeof msg) < 0)
            return oc_fail(env, "%s", msg);
    } else {
        p.batch = inner;
        p.stride_a = L.a0 ? 0 : m * k;
        p.stride_b = L.b0 ? 0 : k * n;
        p.stride_c = m * n;
        const int64_t outer = nb / inner;
        for (int64_t o = 0; o < outer; o++) {
            int64_t oa = 0, ob = 0, idx = o;
            for (int32_t i = L.j - 1; i >= 0; i--) {
                oa += (idx % L.d[i]) * L.ast[i];
                ob += (idx % L.d[i]) * L.bst[i];
                idx /= L.d[i];
            }
            if (mm_run(&p, in[0] + oa, in[1] + ob, bias, out[0] + o * inner * m * n, st, msg, sizeof msg) < 0)
                return oc_fail(env, "%s", msg);
        }
    }
    if (post)
        OC_CUDA_TRY(env, oc_launch_bias_act(out[0], NULL, NULL, nb * m * n, 1, 1, act, st));
    return 0;
}
