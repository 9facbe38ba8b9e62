/* rt_ops.c: the runtime's registration of the CUDA op implementations into the op table's
 * writable slot ops_cuda[], one entry per op keyed by its ID (a missing entry is reported by
 * rt_register_ops and by ops_table_check), and the matmul node on the hand-written kernels of
 * matmul.h (mm_run: tuned tile configuration per shape, strided batch, bias/relu/gelu epilogue).
 *
 * Matmul batch dims broadcast (numpy rules). The batch is cut into as few mm_run calls as the
 * strides allow: a B shared by every batch item with a packed A becomes one tall matmul
 * (batch*m rows); otherwise the longest run of trailing batch dims over which A and B are each
 * packed or each broadcast becomes one strided batch, repeated over the leading dims.
 * Activations the kernels lack (sigmoid, tanh) run as a separate in-place pass.
 */
#include <string.h>

#include "matmul.h"
#include "rt_impl.h"

int rt_register_ops(void) {
    static const ops_cuda_fn fns[OP_COUNT] = {
        [OP_CONV2D] = rt_op_conv2d,
        [OP_MATMUL] = rt_op_matmul,
        [OP_EWADD] = rt_op_ewadd,
        [OP_EWMUL] = rt_op_ewmul,
        [OP_EWSUB] = rt_op_ewsub,
        [OP_EWDIV] = rt_op_ewdiv,
        [OP_SMUL] = rt_op_smul,
        [OP_RELU] = rt_op_relu,
        [OP_SIGMOID] = rt_op_sigmoid,
        [OP_TANH] = rt_op_tanh,
        [OP_GELU] = rt_op_gelu,
        [OP_ERF] = rt_op_erf,
        [OP_SQRT] = rt_op_sqrt,
        [OP_POW] = rt_op_pow,
        [OP_CLIP] = rt_op_clip,
        [OP_TRANSPOSE] = rt_op_transpose,
        [OP_CONCAT] = rt_op_concat,
        [OP_SPLIT] = rt_op_split,
        [OP_AVGPOOL2D] = rt_op_avgpool2d,
        [OP_MAXPOOL2D] = rt_op_maxpool2d,
        [OP_GLOBALAVGPOOL] = rt_op_globalavgpool,
        [OP_ENLARGE] = rt_op_enlarge,
        [OP_CONST_IMM] = rt_op_const_imm,
        [OP_CONST_ICONV] = rt_op_const_iconv,
        [OP_CONST_ONES] = rt_op_const_ones,
        [OP_CONST_POOL] = rt_op_const_pool,
        [OP_BATCHNORM] = rt_op_batchnorm,
        [OP_RESHAPE] = rt_op_reshape,
        [OP_SOFTMAX] = rt_op_softmax,
        [OP_LAYERNORM] = rt_op_layernorm,
        [OP_GATHER] = rt_op_gather,
    };
    int missing = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        ops_cuda[op] = fns[op];
        if (!fns[op]) {
            fprintf(stderr, "tasc: op %s has no CUDA implementation\n", ops_table[op].name);
            missing++;
        }
    }
    return missing;
}

/* --- matmul --------------------------------------------------------------------------------- */

/* Strides (elements) of src's batch dims aligned right to out's rb batch dims; 0 where src
 * broadcasts (a dim of 1 or a missing dim); unit is one matrix of src. */
static void rt_mm_strides(const ops_shape *src, int32_t rb, int64_t unit, int64_t *st) {
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
static int rt_mm_uniform(const int64_t *d, const int64_t *st, int32_t j, int32_t rb, int64_t unit, int *zero) {
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

RT_OP_FN(matmul) {
    const ops_shape *as = &s->in[0], *bs = &s->in[1], *os = &s->out[0];
    const int64_t m = as->dims[as->rank - 2], k = as->dims[as->rank - 1], n = bs->dims[bs->rank - 1];
    const int32_t rb0 = os->rank - 2;
    const ops_act act = (ops_act)s->p->v[PM_ACT];
    const float *bias = s->n_in > 2 ? in[2] : NULL; /* (n) */
    int64_t ast0[OPS_MAX_DIMS], bst0[OPS_MAX_DIMS];
    rt_mm_strides(as, rb0, m * k, ast0);
    rt_mm_strides(bs, rb0, k * n, bst0);
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
    p.act = act == OPS_ACT_RELU ? MM_ACT_RELU : act == OPS_ACT_GELU ? MM_ACT_GELU : MM_ACT_NONE;
    const int post = act == OPS_ACT_SIGMOID || act == OPS_ACT_TANH;
    char msg[256];
    const cudaStream_t st = rt_stream(ctx);

    int a0, b0;
    int32_t j = 0; /* batch dims [j, rb) go into one strided call */
    while (j < rb && !(rt_mm_uniform(d, ast, j, rb, m * k, &a0) && rt_mm_uniform(d, bst, j, rb, k * n, &b0)))
        j++;
    rt_mm_uniform(d, ast, j, rb, m * k, &a0);
    rt_mm_uniform(d, bst, j, rb, k * n, &b0);
    int64_t inner = 1;
    for (int32_t i = j; i < rb; i++)
        inner *= d[i];
    if (j == 0 && b0 && !a0) {
        p.m = m * nb; /* B shared, A packed: one tall product */
        if (mm_run(&p, in[0], in[1], bias, out[0], st, msg, sizeof msg) < 0)
            return rt_fail(ctx, "%s", msg);
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
                return rt_fail(ctx, "%s", msg);
        }
    }
    if (post)
        RT_CUDA_TRY(ctx, rt_launch_bias_act(out[0], NULL, nb * m * n, 1, 1, act, st));
    return 0;
}
