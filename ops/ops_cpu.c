/* ops_cpu.c: the CPU reference of every operator, the oracle the rest of tasc is checked against.
 *
 * Plain float32 loops. Each output element is computed by one fixed sequence of operations, so
 * results are bit-identical for any OpenMP thread count: loops are parallelised only over
 * independent output elements or rows, never over a reduction. conv2d and matmul accumulate in
 * float in a fixed order (sum over the reduction index, ascending, from 0, one fused multiply-add
 * per step; then + bias; then the activation), through the blocked kernels of ops_cpu_kernels.c;
 * the reductions softmax, layernorm, batchnorm and globalavgpool use double.
 * Transcendental functions are evaluated in double and rounded once. Buffers belong to the
 * caller (preallocated with the inferred shapes); scratch memory is freed before returning.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "ops_impl.h"

/* Go parallel only when a loop does at least this much work (elements or multiply-adds); loops
 * that only move memory or do one cheap operation per element need more to pay for the fork and
 * the join, which on a loaded machine can cost a scheduler time slice. */
#define CPU_PAR_MIN 32768
#define CPU_PAR_MOVE 262144

#define CPU_MIN(a, b) ((a) < (b) ? (a) : (b))

static int64_t cpu_numel(const ops_shape *s) {
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

/* --- conv2d --------------------------------------------------------------------------------- */

/* x (N,C,H,W) into xp (N,C,HP,WP) with zero borders pt, pl (and the rest at the end). */
static void cpu_pad_input(const float *x, float *xp, int64_t NC, int64_t H, int64_t W, int64_t HP, int64_t WP,
                          int64_t pt, int64_t pl) {
    int64_t rows = NC * HP;
#pragma omp parallel for schedule(static) if (rows * WP > CPU_PAR_MOVE)
    for (int64_t r = 0; r < rows; r++) {
        int64_t c = r / HP, h = r % HP - pt;
        float *dst = xp + r * WP;
        if (h < 0 || h >= H) {
            memset(dst, 0, sizeof(float) * (size_t)WP);
            continue;
        }
        memset(dst, 0, sizeof(float) * (size_t)pl);
        memcpy(dst + pl, x + (c * H + h) * W, sizeof(float) * (size_t)W);
        memset(dst + pl + W, 0, sizeof(float) * (size_t)(WP - pl - W));
    }
}

/* The input is zero-padded once; then a depthwise conv (one channel per group, one filter per
 * group) runs as direct multiply-adds over output rows, and every other conv as a GEMM per
 * (image, group): W_g (FG, CG*KH*KW) times the implicit im2col of the padded input
 * (CG*KH*KW, OH*OW), summed over (c, kh, kw) in ascending order. */
void ops_cpu_conv2d(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *ws = &s->in[1];
    ops_window win;
    if (ops_window2d(OP_CONV2D, s->p, xs, ws, &win, NULL, 0) < 0)
        base_die("ops_window2d refused a node that ops_infer accepted");
    const int64_t N = xs->dims[0], C = xs->dims[1], H = xs->dims[2], W = xs->dims[3];
    const int64_t F = ws->dims[0], CG = ws->dims[1], KH = ws->dims[2], KW = ws->dims[3];
    const int64_t G = s->p->v[PM_GROUPS], FG = F / G, KK = CG * KH * KW;
    const int64_t OH = win.oh, OW = win.ow;
    const int64_t HP = H + win.pt + win.pb, WP = W + win.pl + win.pr;
    const float *x = in[0];                         /* (N, C, H, W) */
    const float *w = in[1];                         /* (F, CG, KH, KW) */
    const float *bias = s->n_in > 2 ? in[2] : NULL; /* (F) */
    float *y = out[0];                              /* (N, F, OH, OW) */
    const ops_act act = (ops_act)s->p->v[PM_ACT];

    float *xbuf = NULL; /* (N, C, HP, WP) when padded */
    const float *xp = x;
    if (HP != H || WP != W) {
        xbuf = base_xmalloc(sizeof(float) * (size_t)(N * C * HP * WP));
        cpu_pad_input(x, xbuf, N * C, H, W, HP, WP, win.pt, win.pl);
        xp = xbuf;
    }
    const ops_gemm_conv cv = {.kh = KH, .kw = KW, .sh = win.sh, .sw = win.sw, .dh = win.dh, .dw = win.dw,
                              .hp = HP, .wp = WP, .ow = OW};
    if (CG == 1 && FG == 1) {
        ops_cpu_dwconv(&cv, N * C, OH, xp, w, bias, C, act, y);
    } else {
        ops_gemm_prob *pr = base_xmalloc(sizeof *pr * (size_t)(N * G));
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                pr[n * G + g] = (ops_gemm_prob){.a = w + g * FG * KK, .a_rs = KK, .a_cs = 1,
                                                .b = xp + (n * C + g * CG) * HP * WP, .b_rs = HP * WP, .b_cs = 1,
                                                .c = y + (n * F + g * FG) * OH * OW, .c_rs = OH * OW,
                                                .bias_m = bias ? bias + g * FG : NULL};
        /* a 1x1 conv at stride 1 without padding reads its input planes as B directly */
        const int plain = KH == 1 && KW == 1 && win.sh == 1 && win.sw == 1 && HP == H && WP == W;
        const ops_gemm_dims d = {.m = FG, .n = OH * OW, .k = KK, .act = act, .conv = plain ? NULL : &cv};
        ops_cpu_gemm(&d, pr, N * G);
        free(pr);
    }
    free(xbuf);
}

/* --- matmul --------------------------------------------------------------------------------- */

/* Offset of batch element idx (row-major over out dims[0..r)) in a tensor whose batch strides,
 * aligned to the output's batch dims, are st (0 where it broadcasts). */
static int64_t cpu_bcast_off(int64_t idx, int32_t r, const int64_t *dims, const int64_t *st) {
    int64_t off = 0;
    for (int32_t i = r - 1; i >= 0; i--) {
        off += (idx % dims[i]) * st[i];
        idx /= dims[i];
    }
    return off;
}

/* Strides of src's dims aligned right to an output of rank r (0 for broadcast or missing dims),
 * with a unit of 'unit' elements for src's last dim considered. */
static void cpu_bcast_strides(const ops_shape *src, int32_t src_rank, int32_t r, int64_t unit, int64_t *st) {
    int64_t acc = unit;
    for (int32_t i = r - 1; i >= 0; i--) {
        int32_t k = i - (r - src_rank);
        if (k >= 0 && src->dims[k] != 1) {
            st[i] = acc;
            acc *= src->dims[k];
        } else {
            st[i] = 0;
            if (k >= 0)
                acc *= src->dims[k];
        }
    }
}

/* C = A B per batch element: one GEMM problem each, every element summed over k in order. */
void ops_cpu_matmul(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *as = &s->in[0], *bs = &s->in[1], *os = &s->out[0];
    const int64_t m = as->dims[as->rank - 2], k = as->dims[as->rank - 1], n = bs->dims[bs->rank - 1];
    const int32_t rb = os->rank - 2; /* batch rank */
    int64_t ast[OPS_MAX_DIMS], bst[OPS_MAX_DIMS];
    cpu_bcast_strides(as, as->rank - 2, rb, m * k, ast);
    cpu_bcast_strides(bs, bs->rank - 2, rb, k * n, bst);
    int64_t nb = 1;
    for (int32_t i = 0; i < rb; i++)
        nb *= os->dims[i];
    const float *A = in[0];                         /* (..., m, k) */
    const float *B = in[1];                         /* (..., k, n) */
    const float *bias = s->n_in > 2 ? in[2] : NULL; /* (n) */
    float *Cm = out[0];                             /* (..., m, n) */
    ops_gemm_prob *pr = base_xmalloc(sizeof *pr * (size_t)nb);
    for (int64_t bi = 0; bi < nb; bi++)
        pr[bi] = (ops_gemm_prob){.a = A + cpu_bcast_off(bi, rb, os->dims, ast), .a_rs = k, .a_cs = 1,
                                 .b = B + cpu_bcast_off(bi, rb, os->dims, bst), .b_rs = n, .b_cs = 1,
                                 .c = Cm + bi * m * n, .c_rs = n, .bias_n = bias};
    const ops_gemm_dims d = {.m = m, .n = n, .k = k, .act = (ops_act)s->p->v[PM_ACT], .conv = NULL};
    ops_cpu_gemm(&d, pr, nb);
    free(pr);
}

/* --- elementwise ---------------------------------------------------------------------------- */

typedef enum { CPU_BIN_ADD, CPU_BIN_MUL, CPU_BIN_SUB, CPU_BIN_DIV, CPU_BIN_POW } cpu_binop;

static float cpu_powf(float u, float v) { return (float)pow((double)u, (double)v); }

/* y[j] = a[j*sa] op b[j*sb] for j < n, with sa, sb in {0, 1}. */
static void cpu_bin_row(cpu_binop op, float *restrict y, const float *restrict a, int64_t sa, const float *restrict b,
                        int64_t sb, int64_t n) {
#define CPU_BIN_LOOPS(EXPR) \
    if (sa && sb) { \
        for (int64_t j = 0; j < n; j++) { \
            float u = a[j], v = b[j]; \
            y[j] = EXPR; \
        } \
    } else if (sa) { \
        const float v = b[0]; \
        for (int64_t j = 0; j < n; j++) { \
            float u = a[j]; \
            y[j] = EXPR; \
        } \
    } else if (sb) { \
        const float u = a[0]; \
        for (int64_t j = 0; j < n; j++) { \
            float v = b[j]; \
            y[j] = EXPR; \
        } \
    } else { \
        const float u = a[0], v = b[0]; \
        for (int64_t j = 0; j < n; j++) \
            y[j] = EXPR; \
    }
    switch (op) {
    case CPU_BIN_ADD:
        CPU_BIN_LOOPS(u + v);
        break;
    case CPU_BIN_MUL:
        CPU_BIN_LOOPS(u * v);
        break;
    case CPU_BIN_SUB:
        CPU_BIN_LOOPS(u - v);
        break;
    case CPU_BIN_DIV:
        CPU_BIN_LOOPS(u / v);
        break;
    case CPU_BIN_POW:
        CPU_BIN_LOOPS(cpu_powf(u, v));
        break;
    }
#undef CPU_BIN_LOOPS
}

/* numpy broadcasting: the output is cut into rows along its last dim; each row reads a row (or
 * one broadcast element) of each input. Shapes equal to the output's run as one flat range. */
static void cpu_binary(const ops_sig *s, const float *const *in, float *const *out, cpu_binop op) {
    const ops_shape *os = &s->out[0];
    const int64_t n = cpu_numel(os);
    const int64_t na = cpu_numel(&s->in[0]), nb = cpu_numel(&s->in[1]);
    if ((na == n || na == 1) && (nb == n || nb == 1)) { /* same shape or a single element */
        const int64_t chunk = 16384, nch = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MOVE)
        for (int64_t c = 0; c < nch; c++) {
            int64_t j0 = c * chunk, len = CPU_MIN(chunk, n - j0);
            cpu_bin_row(op, out[0] + j0, in[0] + (na == 1 ? 0 : j0), na != 1, in[1] + (nb == 1 ? 0 : j0), nb != 1,
                        len);
        }
        return;
    }
    const int32_t r = os->rank; /* >= 1 here: a rank-0 output has one element */
    int64_t ast[OPS_MAX_DIMS], bst[OPS_MAX_DIMS];
    cpu_bcast_strides(&s->in[0], s->in[0].rank, r, 1, ast);
    cpu_bcast_strides(&s->in[1], s->in[1].rank, r, 1, bst);
    const int64_t inner = os->dims[r - 1], rows = n / inner;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MOVE)
    for (int64_t row = 0; row < rows; row++) {
        int64_t oa = cpu_bcast_off(row, r - 1, os->dims, ast), ob = cpu_bcast_off(row, r - 1, os->dims, bst);
        cpu_bin_row(op, out[0] + row * inner, in[0] + oa, ast[r - 1], in[1] + ob, bst[r - 1], inner);
    }
}

void ops_cpu_ewadd(const ops_sig *s, const float *const *in, float *const *out) { cpu_binary(s, in, out, CPU_BIN_ADD); }
void ops_cpu_ewmul(const ops_sig *s, const float *const *in, float *const *out) { cpu_binary(s, in, out, CPU_BIN_MUL); }
void ops_cpu_ewsub(const ops_sig *s, const float *const *in, float *const *out) { cpu_binary(s, in, out, CPU_BIN_SUB); }
void ops_cpu_ewdiv(const ops_sig *s, const float *const *in, float *const *out) { cpu_binary(s, in, out, CPU_BIN_DIV); }
void ops_cpu_pow(const ops_sig *s, const float *const *in, float *const *out) { cpu_binary(s, in, out, CPU_BIN_POW); }

void ops_cpu_smul(const ops_sig *s, const float *const *in, float *const *out) {
    const int64_t n = cpu_numel(&s->out[0]);
    const float k = in[1][0], *x = in[0];
    float *y = out[0];
#pragma omp parallel for simd schedule(static) if (n > CPU_PAR_MOVE)
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * k;
}

/* y = f(x) elementwise for the unary ops; EXPR uses v. */
#define CPU_UNARY(nm, EXPR) \
    void ops_cpu_##nm(const ops_sig *s, const float *const *in, float *const *out) { \
        const int64_t n = cpu_numel(&s->out[0]); \
        const float *x = in[0]; \
        float *y = out[0]; \
        _Pragma("omp parallel for schedule(static) if (n > CPU_PAR_MIN)") \
        for (int64_t i = 0; i < n; i++) { \
            float v = x[i]; \
            y[i] = (EXPR); \
        } \
    }

CPU_UNARY(relu, v < 0.0f ? 0.0f : v)
CPU_UNARY(sigmoid, ops_act_apply(OPS_ACT_SIGMOID, v))
CPU_UNARY(tanh, ops_act_apply(OPS_ACT_TANH, v))
CPU_UNARY(gelu, ops_act_apply(OPS_ACT_GELU, v))
CPU_UNARY(erf, (float)erf((double)v))
CPU_UNARY(sqrt, sqrtf(v))

/* ONNX HardSwish, x * max(0, min(1, x/6 + 1/2)), in double, rounded once; NaN stays NaN (the
 * comparisons are false), -inf gives NaN (-inf * 0) as the formula does. */
CPU_UNARY(hardswish, ops_act_apply(OPS_ACT_HARDSWISH, v))
/* x * sigmoid(x) and the tanh form of GELU, in double, rounded once (ops_act_apply). */
CPU_UNARY(silu, ops_act_apply(OPS_ACT_SILU, v))
CPU_UNARY(gelu_tanh, ops_act_apply(OPS_ACT_GELU_TANH, v))

/* min(max(x, lo), hi); NaN stays NaN. */
void ops_cpu_clip(const ops_sig *s, const float *const *in, float *const *out) {
    const int64_t n = cpu_numel(&s->out[0]);
    const float lo = ops_p2f(s->p->v[PM_LO]), hi = ops_p2f(s->p->v[PM_HI]), *x = in[0];
    float *y = out[0];
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MOVE)
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        v = v < lo ? lo : v;
        y[i] = v > hi ? hi : v;
    }
}

/* --- data movement -------------------------------------------------------------------------- */

/* out.dim[i] = x.dim[perm[i]]: each output row (last dim) reads x with the stride of dim perm[r-1]. */
void ops_cpu_transpose(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    const int32_t r = os->rank;
    const int64_t n = cpu_numel(os);
    if (r == 0) {
        out[0][0] = in[0][0];
        return;
    }
    int64_t xst[OPS_MAX_DIMS], st[OPS_MAX_DIMS];
    ops_impl_strides(xs, xst);
    for (int32_t i = 0; i < r; i++)
        st[i] = xst[s->p->list[i]]; /* x stride of output dim i */
    const int64_t inner = os->dims[r - 1], rows = n / inner, sl = st[r - 1];
    const float *x = in[0];
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MOVE)
    for (int64_t row = 0; row < rows; row++) {
        int64_t off = cpu_bcast_off(row, r - 1, os->dims, st);
        float *y = out[0] + row * inner;
        for (int64_t j = 0; j < inner; j++)
            y[j] = x[off + j * sl];
    }
}

/* outer = product of dims before axis, inner = product after. */
static void cpu_axis_split(const ops_shape *sh, int64_t axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int32_t i = 0; i < sh->rank; i++) {
        if (i < axis)
            *outer *= sh->dims[i];
        else if (i > axis)
            *inner *= sh->dims[i];
    }
}

void ops_cpu_concat(const ops_sig *s, const float *const *in, float *const *out) {
    const int64_t axis = s->p->v[PM_AXIS];
    int64_t outer, inner;
    cpu_axis_split(&s->out[0], axis, &outer, &inner);
    const int64_t orow = s->out[0].dims[axis] * inner;
#pragma omp parallel for schedule(static) if (outer * orow > CPU_PAR_MOVE)
    for (int64_t o = 0; o < outer; o++) {
        int64_t col = 0;
        for (int32_t k = 0; k < s->n_in; k++) {
            int64_t len = s->in[k].dims[axis] * inner;
            memcpy(out[0] + o * orow + col, in[k] + o * len, sizeof(float) * (size_t)len);
            col += len;
        }
    }
}

void ops_cpu_split(const ops_sig *s, const float *const *in, float *const *out) {
    const int64_t axis = s->p->v[PM_AXIS];
    int64_t outer, inner;
    cpu_axis_split(&s->in[0], axis, &outer, &inner);
    const int64_t irow = s->in[0].dims[axis] * inner;
#pragma omp parallel for schedule(static) if (outer * irow > CPU_PAR_MOVE)
    for (int64_t o = 0; o < outer; o++) {
        int64_t col = 0;
        for (int32_t k = 0; k < s->n_out; k++) {
            int64_t len = s->out[k].dims[axis] * inner;
            memcpy(out[k] + o * len, in[0] + o * irow + col, sizeof(float) * (size_t)len);
            col += len;
        }
    }
}

void ops_cpu_reshape(const ops_sig *s, const float *const *in, float *const *out) {
    if (out[0] != in[0])
        memcpy(out[0], in[0], sizeof(float) * (size_t)cpu_numel(&s->out[0]));
}

/* (F,C,kh,kw) -> (F,C,KH,KW) zero-padded, centred at offset ((KH-kh)/2, (KW-kw)/2). */
void ops_cpu_enlarge(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    const int64_t FC = xs->dims[0] * xs->dims[1], kh = xs->dims[2], kw = xs->dims[3];
    const int64_t KH = os->dims[2], KW = os->dims[3], oh = (KH - kh) / 2, ow = (KW - kw) / 2;
    memset(out[0], 0, sizeof(float) * (size_t)cpu_numel(os));
    for (int64_t c = 0; c < FC; c++)
        for (int64_t i = 0; i < kh; i++)
            memcpy(out[0] + (c * KH + i + oh) * KW + ow, in[0] + (c * kh + i) * kw, sizeof(float) * (size_t)kw);
}

/* table (V, ...) rows picked by ids (...): an id that is not an integer in [0, V) gives a row of
 * zeros (the reference cannot report errors; the executor checks ids before calling it). */
void ops_cpu_gather(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *ts = &s->in[0];
    const int64_t V = ts->dims[0], row = cpu_numel(ts) / V, nid = cpu_numel(&s->in[1]);
    const float *table = in[0], *ids = in[1];
#pragma omp parallel for schedule(static) if (nid * row > CPU_PAR_MOVE)
    for (int64_t i = 0; i < nid; i++) {
        float v = ids[i];
        float *dst = out[0] + i * row;
        if (v >= 0.0f && (double)v < (double)V && v == floorf(v))
            memcpy(dst, table + (int64_t)v * row, sizeof(float) * (size_t)row);
        else
            memset(dst, 0, sizeof(float) * (size_t)row);
    }
}

/* --- pools ---------------------------------------------------------------------------------- */

/* Max or mean over each window, visiting cells row by row; padded cells are skipped (for the mean
 * with count_pad = 1 they still count in the divisor kh*kw). A NaN in a window gives NaN. The
 * loops are ops_cpu_pool's (ops_cpu_kernels.c). */
static void cpu_pool(const ops_sig *s, const float *const *in, float *const *out, int is_max) {
    const ops_shape *xs = &s->in[0];
    ops_window win;
    if (ops_window2d(s->op, s->p, xs, NULL, &win, NULL, 0) < 0)
        base_die("ops_window2d refused a node that ops_infer accepted");
    const int64_t H = xs->dims[2], W = xs->dims[3];
    int64_t hp = (win.oh - 1) * win.sh + win.kh, wp = (win.ow - 1) * win.sw + win.kw;
    if (hp < win.pt + H)
        hp = win.pt + H;
    if (wp < win.pl + W)
        wp = win.pl + W;
    const ops_pool pp = {.h = H, .w = W, .kh = win.kh, .kw = win.kw, .sh = win.sh, .sw = win.sw, .pt = win.pt,
                         .pl = win.pl, .hp = hp, .wp = wp, .oh = win.oh, .ow = win.ow, .is_max = is_max,
                         .count_pad = (int)s->p->v[PM_COUNT_PAD]};
    ops_cpu_pool(&pp, xs->dims[0] * xs->dims[1], in[0], out[0]);
}

void ops_cpu_avgpool2d(const ops_sig *s, const float *const *in, float *const *out) { cpu_pool(s, in, out, 0); }
void ops_cpu_maxpool2d(const ops_sig *s, const float *const *in, float *const *out) { cpu_pool(s, in, out, 1); }

void ops_cpu_globalavgpool(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0];
    const int64_t NC = xs->dims[0] * xs->dims[1], HW = xs->dims[2] * xs->dims[3];
#pragma omp parallel for schedule(static) if (NC * HW > CPU_PAR_MIN)
    for (int64_t c = 0; c < NC; c++) {
        const float *xc = in[0] + c * HW;
        double sum = 0.0;
        for (int64_t i = 0; i < HW; i++)
            sum += xc[i];
        out[0][c] = (float)(sum / (double)HW);
    }
}

/* --- constants ------------------------------------------------------------------------------ */

void ops_cpu_const_imm(const ops_sig *s, const float *const *in, float *const *out) {
    const int64_t n = s->out[0].dims[0];
    memset(out[0], 0, sizeof(float) * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++)
        out[0][i * n + i] = 1.0f;
}

void ops_cpu_const_iconv(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *os = &s->out[0]; /* (c, c, kh, kw) */
    const int64_t c = os->dims[0], kh = os->dims[2], kw = os->dims[3];
    memset(out[0], 0, sizeof(float) * (size_t)cpu_numel(os));
    for (int64_t i = 0; i < c; i++)
        out[0][((i * c + i) * kh + kh / 2) * kw + kw / 2] = 1.0f;
}

static void cpu_fill(float *y, int64_t n, float v) {
#pragma omp parallel for simd schedule(static) if (n > CPU_PAR_MOVE)
    for (int64_t i = 0; i < n; i++)
        y[i] = v;
}

void ops_cpu_const_ones(const ops_sig *s, const float *const *in, float *const *out) {
    cpu_fill(out[0], cpu_numel(&s->out[0]), 1.0f);
}

void ops_cpu_const_pool(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *os = &s->out[0]; /* (c, 1, kh, kw) */
    cpu_fill(out[0], cpu_numel(os), (float)(1.0 / (double)(os->dims[2] * os->dims[3])));
}

/* --- normalisation -------------------------------------------------------------------------- */

/* x (N, C, ...) with scale, bias, mean, var (C): (x - mean) / sqrt(var + eps) * scale + bias, in double. */
void ops_cpu_batchnorm(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0];
    const int64_t N = xs->dims[0], C = xs->dims[1], inner = cpu_numel(xs) / (N * C);
    const double eps = (double)ops_p2f(s->p->v[PM_EPS]);
    const float *scale = in[1], *bias = in[2], *mean = in[3], *var = in[4];
#pragma omp parallel for schedule(static) if (N * C * inner > CPU_PAR_MIN)
    for (int64_t r = 0; r < N * C; r++) {
        int64_t c = r % C;
        double mu = mean[c], a = (double)scale[c] / sqrt((double)var[c] + eps), b = bias[c];
        const float *x = in[0] + r * inner;
        float *y = out[0] + r * inner;
        for (int64_t i = 0; i < inner; i++)
            y[i] = (float)(((double)x[i] - mu) * a + b);
    }
}

/* exp(x - max) / sum along axis; the sum in double. */
void ops_cpu_softmax(const ops_sig *s, const float *const *in, float *const *out) {
    const int64_t axis = s->p->v[PM_AXIS];
    int64_t outer, inner;
    cpu_axis_split(&s->in[0], axis, &outer, &inner);
    const int64_t L = s->in[0].dims[axis];
#pragma omp parallel for schedule(static) if (outer * inner * L > CPU_PAR_MIN)
    for (int64_t col = 0; col < outer * inner; col++) {
        int64_t o = col / inner, i = col % inner;
        const float *x = in[0] + o * L * inner + i; /* stride inner */
        float *y = out[0] + o * L * inner + i;
        float mx = x[0];
        for (int64_t l = 1; l < L; l++)
            if (x[l * inner] > mx || x[l * inner] != x[l * inner])
                mx = x[l * inner];
        double sum = 0.0;
        for (int64_t l = 0; l < L; l++)
            sum += exp((double)x[l * inner] - (double)mx);
        for (int64_t l = 0; l < L; l++)
            y[l * inner] = (float)(exp((double)x[l * inner] - (double)mx) / sum);
    }
}

/* Normalise over dims [axis, axis_end) (axis_end 0: the rank) per position of the other dims (mean
 * and biased variance in double, summed in index order), then * gamma + beta. The block of L
 * normalised elements of position (o, i) is strided by inner, the product of the dims after it. */
void ops_cpu_layernorm(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0];
    const int64_t axis = s->p->v[PM_AXIS];
    const int64_t end = s->p->v[PM_AXIS_END] ? s->p->v[PM_AXIS_END] : xs->rank;
    int64_t outer = 1, L = 1, inner = 1;
    for (int32_t i = 0; i < xs->rank; i++) {
        if (i < axis)
            outer *= xs->dims[i];
        else if (i < end)
            L *= xs->dims[i];
        else
            inner *= xs->dims[i];
    }
    const double eps = (double)ops_p2f(s->p->v[PM_EPS]);
    const float *gamma = s->n_in > 1 ? in[1] : NULL, *beta = s->n_in > 2 ? in[2] : NULL; /* x.dims[axis..end) */
#pragma omp parallel for schedule(static) if (outer * L * inner > CPU_PAR_MIN)
    for (int64_t oi = 0; oi < outer * inner; oi++) {
        const int64_t o = oi / inner, i = oi % inner;
        const float *x = in[0] + o * L * inner + i;
        float *y = out[0] + o * L * inner + i;
        double mean = 0.0, var = 0.0;
        for (int64_t l = 0; l < L; l++)
            mean += x[l * inner];
        mean /= (double)L;
        for (int64_t l = 0; l < L; l++) {
            double d = (double)x[l * inner] - mean;
            var += d * d;
        }
        var /= (double)L;
        double inv = 1.0 / sqrt(var + eps);
        for (int64_t l = 0; l < L; l++) {
            double v = ((double)x[l * inner] - mean) * inv;
            if (gamma)
                v *= gamma[l];
            if (beta)
                v += beta[l];
            y[l * inner] = (float)v;
        }
    }
}

/* --- reducemax, resize, pad ----------------------------------------------------------------- */

/* Max over the reduced dims (axes; all dims when empty), visited in ascending row-major order; a
 * NaN among them gives NaN (as maxpool2d). */
void ops_cpu_reducemax(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0];
    const int32_t r = xs->rank;
    int red[OPS_MAX_DIMS] = {0};
    for (int32_t k = 0; k < s->p->n_list; k++)
        red[s->p->list[k]] = 1;
    int64_t xst[OPS_MAX_DIMS], kd[OPS_MAX_DIMS], rd[OPS_MAX_DIMS], kst[OPS_MAX_DIMS], rst[OPS_MAX_DIMS];
    ops_impl_strides(xs, xst);
    int32_t nk = 0, nr = 0;
    int64_t n_out = 1, n_red = 1;
    for (int32_t i = 0; i < r; i++) {
        if (red[i] || s->p->n_list == 0) {
            rd[nr] = xs->dims[i];
            rst[nr++] = xst[i];
            n_red *= xs->dims[i];
        } else {
            kd[nk] = xs->dims[i];
            kst[nk++] = xst[i];
            n_out *= xs->dims[i];
        }
    }
    const float *x = in[0];
#pragma omp parallel for schedule(static) if (n_out * n_red > CPU_PAR_MIN)
    for (int64_t o = 0; o < n_out; o++) {
        int64_t base = cpu_bcast_off(o, nk, kd, kst);
        float m = -INFINITY;
        for (int64_t q = 0; q < n_red; q++) {
            float v = x[base + cpu_bcast_off(q, nr, rd, rst)];
            if (v > m || isnan(v))
                m = v;
            if (isnan(m))
                break;
        }
        out[0][o] = m;
    }
}

/* The input coordinate of output index x along one resized axis, in float as onnxruntime computes
 * it (coord: 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel). The CUDA kernel
 * (ops_data.cu oc_resize_coord) repeats these operations. */
static float cpu_resize_coord(int coord, int64_t x, float scale, int64_t len_in, int64_t len_out) {
    const float xr = (float)x;
    switch (coord) {
    case 1:
        return xr / scale;
    case 2:
        return len_out == 1 ? 0.0f : xr * (float)(len_in - 1) / (float)(len_out - 1);
    case 3:
        return len_out > 1 ? (xr + 0.5f) / scale - 0.5f : 0.0f;
    default:
        return (xr + 0.5f) / scale - 0.5f;
    }
}

/* Nearest input index (nearest: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil), clamped. */
static int64_t cpu_resize_nearest(int nearest, float c, int64_t len_in) {
    int64_t i;
    if (nearest == 2)
        i = (int64_t)floorf(c);
    else if (nearest == 3)
        i = (int64_t)ceilf(c);
    else if (nearest == 0 && c == (float)(int64_t)c + 0.5f)
        i = (int64_t)floorf(c);
    else
        i = (int64_t)roundf(c);
    return i < 0 ? 0 : i >= len_in ? len_in - 1 : i;
}

/* The two input indices and their weights for bilinear sampling (onnxruntime's UpsampleBilinear):
 * the coordinate clamped into [0, len_in - 1]; w1 weighs i1, w2 weighs i2. */
static void cpu_resize_linear(float c, int64_t len_in, int64_t *i1, int64_t *i2, float *w1, float *w2) {
    c = c < 0.0f ? 0.0f : c > (float)(len_in - 1) ? (float)(len_in - 1) : c;
    *i1 = (int64_t)c < len_in - 1 ? (int64_t)c : len_in - 1;
    *i2 = *i1 + 1 < len_in - 1 ? *i1 + 1 : len_in - 1;
    float d1 = fabsf(c - (float)*i1), d2 = fabsf(c - (float)*i2);
    if (*i1 == *i2)
        d1 = d2 = 0.5f;
    *w1 = d2; /* the nearer i1, the larger its weight */
    *w2 = d1;
}

/* The effective scale of an axis: the parameter, or out / in in float when it is 0. */
static float cpu_resize_scale(int64_t bits, int64_t len_in, int64_t len_out) {
    float f = ops_p2f(bits);
    return f > 0.0f ? f : (float)len_out / (float)len_in;
}

/* Planes (...) of (H, W) into (OH, OW): nearest picks one input cell, linear weighs four
 * (w_y1 w_x1 x11 + w_y1 w_x2 x12 + w_y2 w_x1 x21 + w_y2 w_x2 x22 in double, rounded once). */
void ops_cpu_resize(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    const int32_t r = xs->rank;
    const int64_t H = xs->dims[r - 2], W = xs->dims[r - 1], OH = os->dims[r - 2], OW = os->dims[r - 1];
    const int64_t planes = cpu_numel(xs) / (H * W);
    const int coord = (int)s->p->v[PM_COORD], nearest = (int)s->p->v[PM_NEAREST], linear = s->p->v[PM_MODE] == 1;
    const float sh = cpu_resize_scale(s->p->v[PM_SCALE_H], H, OH), sw = cpu_resize_scale(s->p->v[PM_SCALE_W], W, OW);
#pragma omp parallel for schedule(static) if (planes * OH * OW > CPU_PAR_MOVE)
    for (int64_t row = 0; row < planes * OH; row++) {
        const int64_t pl = row / OH, oy = row % OH;
        const float *x = in[0] + pl * H * W;
        float *y = out[0] + row * OW;
        const float cy = cpu_resize_coord(coord, oy, sh, H, OH);
        if (!linear) {
            const float *xrow = x + cpu_resize_nearest(nearest, cy, H) * W;
            for (int64_t ox = 0; ox < OW; ox++)
                y[ox] = xrow[cpu_resize_nearest(nearest, cpu_resize_coord(coord, ox, sw, W, OW), W)];
            continue;
        }
        int64_t y1, y2;
        float wy1, wy2;
        cpu_resize_linear(cy, H, &y1, &y2, &wy1, &wy2);
        for (int64_t ox = 0; ox < OW; ox++) {
            int64_t x1, x2;
            float wx1, wx2;
            cpu_resize_linear(cpu_resize_coord(coord, ox, sw, W, OW), W, &x1, &x2, &wx1, &wx2);
            double v = (double)wy1 * wx1 * x[y1 * W + x1] + (double)wy1 * wx2 * x[y1 * W + x2] +
                       (double)wy2 * wx1 * x[y2 * W + x1] + (double)wy2 * wx2 * x[y2 * W + x2];
            y[ox] = (float)v;
        }
    }
}

/* The input index of padded index i along a dim of length len with begin pad b (mode 1 reflect,
 * 2 edge); -1 for a constant cell (mode 0). Reflect pads are smaller than len (shape_pad). */
static int64_t cpu_pad_src(int mode, int64_t i, int64_t b, int64_t len) {
    int64_t q = i - b;
    if (q >= 0 && q < len)
        return q;
    if (mode == 0)
        return -1;
    if (mode == 2)
        return q < 0 ? 0 : len - 1;
    return q < 0 ? -q : 2 * (len - 1) - q;
}

/* Each output row (last dim) finds its input row, then each element its column. */
void ops_cpu_pad(const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    const int32_t r = xs->rank;
    const int mode = (int)s->p->v[PM_MODE];
    const float value = ops_p2f(s->p->v[PM_VALUE]);
    const int64_t *beg = s->p->list, OW = os->dims[r - 1], W = xs->dims[r - 1], rows = cpu_numel(os) / OW;
    int64_t xst[OPS_MAX_DIMS];
    ops_impl_strides(xs, xst);
#pragma omp parallel for schedule(static) if (rows * OW > CPU_PAR_MOVE)
    for (int64_t row = 0; row < rows; row++) {
        float *y = out[0] + row * OW;
        int64_t off = 0, rem = row;
        for (int32_t d = r - 2; d >= 0 && off >= 0; d--) {
            int64_t q = cpu_pad_src(mode, rem % os->dims[d], beg[d], xs->dims[d]);
            rem /= os->dims[d];
            off = q < 0 ? -1 : off + q * xst[d];
        }
        for (int64_t j = 0; j < OW; j++) {
            int64_t q = off < 0 ? -1 : cpu_pad_src(mode, j, beg[r - 1], W);
            y[j] = q < 0 ? value : in[0][off + q];
        }
    }
}
