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
 * hold: rows (A's rows regrouped, B broadcast) or the batched decomposition above.
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
 * without a rows view runs here as a batch with B broadcast. */
static int oc_mm_scatter_calls(mm_problem *p, const mm_scatter_node *sc, const int64_t *d, const int64_t *ast,
                               const int64_t *bst, int32_t j, int32_t rb, int64_t nb, const float *const *in,
                               const float *bias, float *out, cudaStream_t st, char *msg, size_t len) {
    int a0, b0;
    const int64_t m = p->m, n = p->n, k = p->k;
    oc_mm_uniform(d, ast, j, rb, m * k, &a0);
    oc_mm_uniform(d, bst, j, rb, k * n, &b0);
    int64_t inner = 1;
    for (int32_t i = j; i < rb; i++)
        inner *= d[i];
    p->batch = inner;
    p->stride_a = a0 ? 0 : m * k;
    p->stride_b = b0 ? 0 : k * n;
    p->stride_c = m * n;
    for (int64_t o = 0; o < nb / inner; o++) {
        int64_t oa = 0, ob = 0, idx = o;
        for (int32_t i = j - 1; i >= 0; i--) {
            oa += (idx % d[i]) * ast[i];
            ob += (idx % d[i]) * bst[i];
            idx /= d[i];
        }
        mm_scatter part = sc->batched;
        part.off_b += o * inner;
        if (mm_run_scatter(p, &part, in[0] + oa, in[1] + ob, bias, out, st, msg, len) < 0)
            return -1;
    }
    return 0;
}

OPS_CUDA_FN(matmul) {
    const ops_shape *as = &s->in[0], *bs = &s->in[1], *os = &s->out[0];
    const int64_t m = as->dims[as->rank - 2], k = as->dims[as->rank - 1], n = bs->dims[bs->rank - 1];
    const int32_t rb0 = os->rank - 2;
    const ops_act act = (ops_act)s->p->v[PM_ACT];
    const float *bias = s->n_in > 2 ? in[2] : NULL; /* (n) */
    int64_t ast0[OPS_MAX_DIMS], bst0[OPS_MAX_DIMS];
    oc_mm_strides(as, rb0, m * k, ast0);
    oc_mm_strides(bs, rb0, k * n, bst0);
    /* drop batch dims of size 1: they move nothing */
    int64_t d[OPS_MAX_DIMS], ast[OPS_MAX_DIMS], bst[OPS_MAX_DIMS];
    int32_t rb = 0;
    for (int32_t i = 0; i < rb0; i++)
        if (os->dims[i] != 1) {
            d[rb] = os->dims[i];
            ast[rb] = ast0[i];
            bst[rb] = bst0[i];
            rb++;
        }
    int64_t nb = 1;
    for (int32_t i = 0; i < rb; i++)
        nb *= d[i];

    mm_problem p;
    mm_problem_init(&p, m, n, k, 1);
    p.has_bias = bias != NULL;
    const int mact = oc_mm_act(act);
    p.act = mact < 0 ? MM_ACT_NONE : (mm_act)mact;
    const int post = mact < 0;
    char msg[256];
    const cudaStream_t st = oc_stream(env);

    int a0, b0;
    int32_t j = 0; /* batch dims [j, rb) go into one strided call */
    while (j < rb && !(oc_mm_uniform(d, ast, j, rb, m * k, &a0) && oc_mm_uniform(d, bst, j, rb, k * n, &b0)))
        j++;
    oc_mm_uniform(d, ast, j, rb, m * k, &a0);
    oc_mm_uniform(d, bst, j, rb, k * n, &b0);
    int64_t inner = 1;
    for (int32_t i = j; i < rb; i++)
        inner *= d[i];
    const mm_scatter_node *sc = mm_scatter_node_get(); /* the runtime's scatter store, if any */
    if (sc && sc->rows.off_m) { /* A packed, B one matrix: rows regrouped as the tables need */
        p.m = sc->rows_m;
        p.batch = sc->rows_nb;
        p.stride_a = sc->rows_m * k;
        p.stride_b = 0;
        p.stride_c = sc->rows_m * n;
        if (mm_run_scatter(&p, &sc->rows, in[0], in[1], bias, out[0], st, msg, sizeof msg) < 0)
            return oc_fail(env, "%s", msg);
    } else if (j == 0 && b0 && !a0 && !sc) {
        p.m = m * nb; /* B shared, A packed: one tall product */
        if (mm_run(&p, in[0], in[1], bias, out[0], st, msg, sizeof msg) < 0)
            return oc_fail(env, "%s", msg);
    } else if (sc) {
        if (oc_mm_scatter_calls(&p, sc, d, ast, bst, j, rb, nb, in, bias, out[0], st, msg, sizeof msg) < 0)
            return oc_fail(env, "%s", msg);
    } else {
        p.batch = inner;
        p.stride_a = a0 ? 0 : m * k;
        p.stride_b = b0 ? 0 : k * n;
        p.stride_c = m * n;
        const int64_t outer = nb / inner;
        for (int64_t o = 0; o < outer; o++) {
            int64_t oa = 0, ob = 0, idx = o;
            for (int32_t i = j - 1; i >= 0; i--) {
                oa += (idx % d[i]) * ast[i];
                ob += (idx % d[i]) * bst[i];
                idx /= d[i];
            }
            if (mm_run(&p, in[0] + oa, in[1] + ob, bias, out[0] + o * inner * m * n, st, msg, sizeof msg) < 0)
                return oc_fail(env, "%s", msg);
        }
    }
    if (post)
        OC_CUDA_TRY(env, oc_launch_bias_act(out[0], NULL, nb * m * n, 1, 1, act, st));
    return 0;
}
