/* ops_fp.c: fingerprint semantics of the generation op set, for the rule generator.
 *
 * Each function mirrors its op's float CPU reference but computes on uint32 values with wrapping
 * arithmetic (the ring Z/2^32), so that two graphs computing the same linear/polynomial function
 * give bit-identical fingerprints regardless of evaluation order. Deviations from the float
 * semantics, on purpose: relu (standalone or fused) is the stand-in x*(x+1)+1; a division by an
 * odd count d is multiplication by d^-1 mod 2^32 (for an even d only its odd part is inverted, so
 * even windows are not "real" divisions: the generator only uses odd windows); maxpool compares
 * values as unsigned 32-bit integers. Shapes come from the signature (already inferred), so the
 * data-movement ops (transpose, concat, split, enlarge) read their sizes from s->in / s->out, and
 * conv/pool windows come from ops_window2d, the geometry every executor shares.
 * Buffers are caller-owned and sized by numel of the signature's shapes.
 */
#include "ops_fp.h"

#include <string.h>

/* The relu stand-in: non-linear, and never zero-collapsing. */
static uint32_t fp_relu1(uint32_t x) { return x * (x + 1u) + 1u; }

static uint32_t fp_act(int64_t act, uint32_t x) {
    return act == OPS_ACT_RELU ? fp_relu1(x) : x;
}

/* Inverse of the odd part of d modulo 2^32 (Newton iteration; each step doubles the correct bits). */
static uint32_t fp_inv_odd(int64_t d) {
    uint32_t a = (uint32_t)(d > 0 ? d : 1);
    while (a && !(a & 1u))
        a >>= 1;
    uint32_t x = a; /* correct to 3 bits for odd a */
    for (int i = 0; i < 5; i++)
        x *= 2u - a * x;
    return x;
}

static int64_t fp_numel(const ops_shape *s) {
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

/* Row-major strides of s into st[rank]. */
static void fp_strides(const ops_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int32_t i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->dims[i];
    }
}

/* Offset into a tensor of shape src broadcast (numpy, right-aligned) to out, for the out index idx[out->rank]. */
static int64_t fp_bcast_offset(const ops_shape *src, const ops_shape *out, const int64_t *idx) {
    int64_t st[OPS_MAX_DIMS];
    fp_strides(src, st);
    int64_t off = 0;
    int32_t shift = out->rank - src->rank;
    for (int32_t i = 0; i < src->rank; i++)
        if (src->dims[i] != 1)
            off += idx[i + shift] * st[i];
    return off;
}

static void fp_index_next(const ops_shape *s, int64_t *idx) {
    for (int32_t i = s->rank - 1; i >= 0; i--) {
        if (++idx[i] < s->dims[i])
            return;
        idx[i] = 0;
    }
}

static void fp_binary(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out, int mul) {
    const ops_shape *o = &s->out[0];
    int64_t n = fp_numel(o), idx[OPS_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        uint32_t a = in[0][fp_bcast_offset(&s->in[0], o, idx)];
        uint32_t b = in[1][fp_bcast_offset(&s->in[1], o, idx)];
        out[0][i] = mul ? a * b : a + b;
        fp_index_next(o, idx);
    }
}

void ops_fp_ewadd(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) { fp_binary(s, in, out, 0); }
void ops_fp_ewmul(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) { fp_binary(s, in, out, 1); }

void ops_fp_smul(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    int64_t n = fp_numel(&s->out[0]);
    uint32_t k = in[1][0]; /* scalar: shape () or (1) */
    for (int64_t i = 0; i < n; i++)
        out[0][i] = in[0][i] * k;
}

void ops_fp_relu(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    int64_t n = fp_numel(&s->out[0]);
    for (int64_t i = 0; i < n; i++)
        out[0][i] = fp_relu1(in[0][i]);
}

/* a (..., m, k) x b (..., k, n) [+ bias (n)] -> (..., m, n); batch dims broadcast; rank-1 operands
 * read as (1, k) and (k, 1). */
void ops_fp_matmul(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_shape *as = &s->in[0], *bs = &s->in[1], *os = &s->out[0];
    int64_t k = as->dims[as->rank - 1];
    int64_t m = as->rank >= 2 ? as->dims[as->rank - 2] : 1;
    int64_t n = bs->rank >= 2 ? bs->dims[bs->rank - 1] : 1;
    /* batch shapes: all but the two matrix dims */
    ops_shape ab = {0}, bb = {0}, ob = {0};
    ab.rank = as->rank > 2 ? as->rank - 2 : 0;
    bb.rank = bs->rank > 2 ? bs->rank - 2 : 0;
    ob.rank = os->rank > 2 ? os->rank - 2 : 0;
    memcpy(ab.dims, as->dims, sizeof(int64_t) * (size_t)ab.rank);
    memcpy(bb.dims, bs->dims, sizeof(int64_t) * (size_t)bb.rank);
    memcpy(ob.dims, os->dims, sizeof(int64_t) * (size_t)ob.rank);
    int64_t nb = fp_numel(&ob), idx[OPS_MAX_DIMS] = {0};
    const uint32_t *bias = s->n_in > 2 ? in[2] : NULL; /* (n) */
    int64_t act = s->p->v[PM_ACT];
    for (int64_t bi = 0; bi < nb; bi++) {
        const uint32_t *a = in[0] + fp_bcast_offset(&ab, &ob, idx) * m * k; /* (m, k) */
        const uint32_t *b = in[1] + fp_bcast_offset(&bb, &ob, idx) * k * n; /* (k, n) */
        uint32_t *c = out[0] + bi * m * n;                                  /* (m, n) */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                uint32_t acc = bias ? bias[j] : 0u;
                for (int64_t t = 0; t < k; t++)
                    acc += a[i * k + t] * b[t * n + j];
                c[i * n + j] = fp_act(act, acc);
            }
        fp_index_next(&ob, idx);
    }
}

/* x (N, C, H, W), w (F, C/g, KH, KW) [, bias (F)] -> (N, F, OH, OW); fused act. */
void ops_fp_conv2d(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_params *p = s->p;
    const ops_shape *xs = &s->in[0], *ws = &s->in[1], *os = &s->out[0];
    ops_window win;
    if (ops_window2d(OP_CONV2D, p, xs, ws, &win, NULL, 0) < 0) { /* unreachable after ops_infer */
        memset(out[0], 0, sizeof(uint32_t) * (size_t)fp_numel(os));
        return;
    }
    int64_t N = xs->dims[0], C = xs->dims[1], H = xs->dims[2], W = xs->dims[3];
    int64_t F = ws->dims[0], CG = ws->dims[1], KH = ws->dims[2], KW = ws->dims[3];
    int64_t OH = win.oh, OW = win.ow;
    int64_t g = p->v[PM_GROUPS] > 0 ? p->v[PM_GROUPS] : 1;
    int64_t fg = F / g; /* filters per group */
    const uint32_t *x = in[0], *w = in[1], *bias = s->n_in > 2 ? in[2] : NULL;
    int64_t act = p->v[PM_ACT];
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t f = 0; f < F; f++) {
            int64_t c0 = (f / fg) * CG;
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    uint32_t acc = bias ? bias[f] : 0u;
                    for (int64_t c = 0; c < CG; c++)
                        for (int64_t i = 0; i < KH; i++) {
                            int64_t ih = oh * win.sh - win.pt + i * win.dh;
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int64_t j = 0; j < KW; j++) {
                                int64_t iw = ow * win.sw - win.pl + j * win.dw;
                                if (iw < 0 || iw >= W)
                                    continue;
                                acc += x[((nn * C + c0 + c) * H + ih) * W + iw] * w[((f * CG + c) * KH + i) * KW + j];
                            }
                        }
                    out[0][((nn * F + f) * OH + oh) * OW + ow] = fp_act(act, acc);
                }
        }
}

/* out.dim[i] = x.dim[perm[i]], perm in p->list. */
void ops_fp_transpose(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    int64_t xst[OPS_MAX_DIMS], idx[OPS_MAX_DIMS] = {0};
    fp_strides(xs, xst);
    int64_t n = fp_numel(os);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int32_t d = 0; d < os->rank; d++)
            off += idx[d] * xst[s->p->list[d]];
        out[0][i] = in[0][off];
        fp_index_next(os, idx);
    }
}

static int32_t fp_axis(int64_t axis, int32_t rank) { return (int32_t)(axis < 0 ? axis + rank : axis); }

/* Concatenate the inputs along PM_AXIS (negative counts from the end). */
void ops_fp_concat(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_shape *os = &s->out[0];
    int32_t ax = fp_axis(s->p->v[PM_AXIS], os->rank);
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < ax; d++)
        outer *= os->dims[d];
    for (int32_t d = ax + 1; d < os->rank; d++)
        inner *= os->dims[d];
    int64_t row = os->dims[ax] * inner, col = 0;
    for (int32_t k = 0; k < s->n_in; k++) {
        int64_t len = s->in[k].dims[ax] * inner;
        for (int64_t o = 0; o < outer; o++)
            memcpy(out[0] + o * row + col, in[k] + o * len, sizeof(uint32_t) * (size_t)len);
        col += len;
    }
}

/* Cut x along PM_AXIS into s->n_out parts whose sizes are the inferred output shapes. */
void ops_fp_split(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_shape *xs = &s->in[0];
    int32_t ax = fp_axis(s->p->v[PM_AXIS], xs->rank);
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < ax; d++)
        outer *= xs->dims[d];
    for (int32_t d = ax + 1; d < xs->rank; d++)
        inner *= xs->dims[d];
    int64_t row = xs->dims[ax] * inner, col = 0;
    for (int32_t k = 0; k < s->n_out; k++) {
        int64_t len = s->out[k].dims[ax] * inner;
        for (int64_t o = 0; o < outer; o++)
            memcpy(out[k] + o * len, in[0] + o * row + col, sizeof(uint32_t) * (size_t)len);
        col += len;
    }
}

/* (N, C, H, W) -> (N, C, OH, OW) over KHxKW windows; avg (mul by the inverse count) or max (uint32). */
static void fp_pool(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out, int is_max) {
    const ops_params *p = s->p;
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    ops_window win;
    if (ops_window2d(s->op, p, xs, NULL, &win, NULL, 0) < 0) { /* unreachable after ops_infer */
        memset(out[0], 0, sizeof(uint32_t) * (size_t)fp_numel(os));
        return;
    }
    int64_t NC = xs->dims[0] * xs->dims[1], H = xs->dims[2], W = xs->dims[3];
    int64_t OH = win.oh, OW = win.ow;
    uint32_t inv_full = fp_inv_odd(win.kh * win.kw);
    for (int64_t c = 0; c < NC; c++) {
        const uint32_t *x = in[0] + c * H * W; /* (H, W) */
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                uint32_t acc = 0;
                int64_t cnt = 0;
                for (int64_t i = 0; i < win.kh; i++) {
                    int64_t ih = oh * win.sh - win.pt + i;
                    if (ih < 0 || ih >= H)
                        continue;
                    for (int64_t j = 0; j < win.kw; j++) {
                        int64_t iw = ow * win.sw - win.pl + j;
                        if (iw < 0 || iw >= W)
                            continue;
                        uint32_t v = x[ih * W + iw];
                        if (is_max)
                            acc = (cnt == 0 || v > acc) ? v : acc;
                        else
                            acc += v;
                        cnt++;
                    }
                }
                if (!is_max)
                    acc *= p->v[PM_COUNT_PAD] ? inv_full : fp_inv_odd(cnt);
                out[0][(c * OH + oh) * OW + ow] = acc;
            }
    }
}

void ops_fp_avgpool2d(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) { fp_pool(s, in, out, 0); }
void ops_fp_maxpool2d(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) { fp_pool(s, in, out, 1); }

/* (F, C, kh, kw) zero-padded to the output's (F, C, KH, KW), centred (offset (KH-kh)/2). */
void ops_fp_enlarge(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    int64_t FC = xs->dims[0] * xs->dims[1], kh = xs->dims[2], kw = xs->dims[3];
    int64_t KH = os->dims[2], KW = os->dims[3];
    int64_t oh = (KH - kh) / 2, ow = (KW - kw) / 2;
    memset(out[0], 0, sizeof(uint32_t) * (size_t)fp_numel(os));
    for (int64_t c = 0; c < FC; c++)
        for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++)
                out[0][(c * KH + i + oh) * KW + j + ow] = in[0][(c * kh + i) * kw + j];
}

/* Identity matrix (n, n). */
void ops_fp_const_imm(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    int64_t n = s->out[0].dims[0];
    memset(out[0], 0, sizeof(uint32_t) * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++)
        out[0][i * n + i] = 1u;
}

/* Identity conv kernel (c, c, kh, kw): 1 at the centre tap of channel i -> i. */
void ops_fp_const_iconv(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_shape *os = &s->out[0];
    int64_t c = os->dims[0], ci = os->dims[1], kh = os->dims[2], kw = os->dims[3];
    memset(out[0], 0, sizeof(uint32_t) * (size_t)fp_numel(os));
    for (int64_t i = 0; i < c && i < ci; i++)
        out[0][((i * ci + i) * kh + kh / 2) * kw + kw / 2] = 1u;
}

/* All ones of the output shape. */
void ops_fp_const_ones(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    int64_t n = fp_numel(&s->out[0]);
    for (int64_t i = 0; i < n; i++)
        out[0][i] = 1u;
}

/* Average-pool kernel (c, 1, kh, kw): every tap (kh*kw)^-1 mod 2^32. */
void ops_fp_const_pool(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out) {
    const ops_shape *os = &s->out[0];
    int64_t n = fp_numel(os);
    uint32_t v = fp_inv_odd(os->dims[2] * os->dims[3]);
    for (int64_t i = 0; i < n; i++)
        out[0][i] = v;
}
