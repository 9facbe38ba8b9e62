/* ops.c: the operator table (one entry per op of ops.def), the parameter table (params.def),
 * parameter checking, shape inference and FLOP counts. The CPU references are in ops_cpu.c.
 *
 * The table is generated from ops.def: name, doc and input/output counts come from there, and
 * the rest of each entry from the OPS_ENTRY_<ID> macro below, so a new op in ops.def without an
 * entry here does not compile. Every shape function reports a wrong input as one line that names
 * the op, the input and what is wrong; every int64 product is checked for overflow.
 * Float parameters are stored as their IEEE-754 single bits, zero-extended (ops_f2p).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "ops.h"
#include "ops_fp.h"
#include "ops_impl.h"

/* --- names ---------------------------------------------------------------------------------- */

const ops_param_info ops_param_table[PM_COUNT] = {
#define PM(id, nm, knd) [PM_##id] = {.name = nm, .kind = OPS_PK_##knd},
#include "params.def"
#undef PM
};

/* Each name but relu6 is also the name of the standalone op (ops_desc.act); relu6 is clip 0..6. */
const char *const ops_act_names[OPS_ACT_COUNT] = {"none", "relu",      "sigmoid", "tanh",     "gelu",
                                                  "silu", "gelu_tanh", "relu6",   "hardswish"};
const char *const ops_padmode_names[OPS_PAD_COUNT] = {"explicit", "same", "valid"};

ops_cuda_fn ops_cuda[OP_COUNT];

/* --- small helpers -------------------------------------------------------------------------- */

/* "input 1 (kernel)" or "input 3". */
static const char *ops_in_name(ops_type op, int32_t k, char *buf, size_t len) {
    const char *r = (k >= 0 && k < 5) ? ops_table[op].roles[k] : NULL;
    if (r)
        snprintf(buf, len, "input %d (%s)", (int)k, r);
    else
        snprintf(buf, len, "input %d", (int)k);
    return buf;
}

int64_t ops_f2p(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (int64_t)u;
}

float ops_p2f(int64_t v) {
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int64_t ops_shape_numel(const ops_shape *s) {
    if (s->rank < 0 || s->rank > OPS_MAX_DIMS)
        return -1;
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0 || base_mul_i64(n, s->dims[i], &n))
            return -1;
    }
    return n;
}

int ops_shape_eq(const ops_shape *a, const ops_shape *b) {
    if (a->rank != b->rank)
        return 0;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

ops_shape ops_shape_make(int32_t rank, const int64_t *dims) {
    ops_shape s;
    memset(&s, 0, sizeof s);
    if (rank < 0)
        rank = 0;
    if (rank > OPS_MAX_DIMS)
        rank = OPS_MAX_DIMS;
    s.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

const char *ops_shape_str(const ops_shape *s, char *buf, size_t len) {
    if (!buf || !len)
        return buf;
    size_t at = 0;
    int n = snprintf(buf, len, "(");
    at = n > 0 ? (size_t)n : 0;
    int32_t rank = s->rank < 0 ? 0 : s->rank > OPS_MAX_DIMS ? OPS_MAX_DIMS : s->rank;
    for (int32_t i = 0; i < rank && at < len; i++) {
        n = snprintf(buf + at, len - at, i ? ",%lld" : "%lld", (long long)s->dims[i]);
        at += n > 0 ? (size_t)n : 0;
    }
    if (at < len)
        snprintf(buf + at, len - at, ")");
    return buf;
}

void ops_impl_strides(const ops_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int32_t i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->dims[i];
    }
}

float ops_act_apply(ops_act act, float x) {
    switch (act) {
    case OPS_ACT_NONE:
        return x;
    case OPS_ACT_RELU:
        return x < 0.0f ? 0.0f : x; /* NaN passes through */
    case OPS_ACT_SIGMOID:
        return (float)(1.0 / (1.0 + exp(-(double)x)));
    case OPS_ACT_TANH:
        return (float)tanh((double)x);
    case OPS_ACT_GELU:
        return (float)(0.5 * (double)x * (1.0 + erf((double)x * 0.70710678118654752440)));
    case OPS_ACT_SILU: /* x * sigmoid(x): -inf gives NaN (-inf * 0), as the formula does */
        return (float)((double)x * (1.0 / (1.0 + exp(-(double)x))));
    case OPS_ACT_GELU_TANH: {
        const double d = (double)x;
        return (float)(0.5 * d * (1.0 + tanh(0.79788456080286535588 * (d + 0.044715 * d * d * d))));
    }
    case OPS_ACT_RELU6: /* clip's comparisons: NaN passes through */
        x = x < 0.0f ? 0.0f : x;
        return x > 6.0f ? 6.0f : x;
    case OPS_ACT_HARDSWISH: { /* NaN stays NaN (the comparisons are false); -inf gives NaN (-inf * 0) */
        double t = (double)x / 6.0 + 0.5;
        t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
        return (float)((double)x * t);
    }
    case OPS_ACT_COUNT:
        break;
    }
    return x;
}

ops_act ops_act_of(ops_type op, const ops_params *p) {
    if ((int)op < 0 || op >= OP_COUNT)
        return OPS_ACT_NONE;
    if (op == OP_CLIP)
        return p && ops_p2f(p->v[PM_LO]) == 0.0f && ops_p2f(p->v[PM_HI]) == 6.0f ? OPS_ACT_RELU6 : OPS_ACT_NONE;
    return ops_table[op].act;
}

/* E[act(x)^2] for x ~ N(0,1) by numerical integration: tanh 0.3943, silu 0.3558, hardswish
 * 0.3316. The others keep He's gain 2 (exact for relu; gelu's 2.35 and relu6's about 2 are close
 * enough, and keep the values --random-weights has always made for them). */
double ops_act_gain(ops_act act) {
    switch (act) {
    case OPS_ACT_TANH:
        return 1.0 / 0.3943;
    case OPS_ACT_SILU:
        return 1.0 / 0.3558;
    case OPS_ACT_HARDSWISH:
        return 1.0 / 0.3316;
    default:
        return 2.0;
    }
}

/* --- window geometry (conv2d and the pools) ------------------------------------------------- */

/* One spatial axis: output size and the two paddings for the pad mode. */
static int ops_win_axis(const char *opn, const char *what, int64_t mode, int64_t in, int64_t k, int64_t s,
                        int64_t d, int64_t p0, int64_t p1, int64_t *o, int64_t *q0, int64_t *q1, char *err,
                        size_t errlen) {
    int64_t ek, span;
    if (base_mul_i64(k - 1, d, &ek) || base_add_i64(ek, 1, &ek))
        return base_fail_line(err, errlen, "%s: dilated window %s overflows", opn, what);
    if (mode == OPS_PAD_SAME) {
        *o = in / s + (in % s != 0);
        int64_t total;
        if (base_mul_i64(*o - 1, s, &total) || base_add_i64(total, ek, &total))
            return base_fail_line(err, errlen, "%s: 'same' padding of the %s overflows", opn, what);
        total -= in;
        if (total < 0)
            total = 0;
        *q0 = total / 2;
        *q1 = total - *q0;
        return 0;
    }
    if (mode == OPS_PAD_VALID)
        p0 = p1 = 0;
    if (base_add_i64(in, p0, &span) || base_add_i64(span, p1, &span))
        return base_fail_line(err, errlen, "%s: padded input %s overflows", opn, what);
    if (span < ek) {
        if (d > 1)
            return base_fail_line(err, errlen,
                                  "%s: window %s %lld (dilated %lld) is larger than the padded input %s %lld", opn,
                                  what, (long long)k, (long long)ek, what, (long long)span);
        return base_fail_line(err, errlen, "%s: window %s %lld is larger than the padded input %s %lld", opn, what,
                              (long long)k, what, (long long)span);
    }
    *o = (span - ek) / s + 1;
    *q0 = p0;
    *q1 = p1;
    return 0;
}

int ops_window2d(ops_type op, const ops_params *p, const ops_shape *x, const ops_shape *w, ops_window *win,
                 char *err, size_t errlen) {
    if ((int)op < 0 || op >= OP_COUNT || ops_table[op].window == OPS_WIN_NONE)
        return base_fail_line(err, errlen, "ops_window2d: op %d has no window", (int)op);
    const int kernel = ops_table[op].window == OPS_WIN_KERNEL;
    const char *opn = ops_table[op].name;
    char b[64];
    memset(win, 0, sizeof *win);
    if (x->rank != 4)
        return base_fail_line(err, errlen, "%s: %s has %d dims, expected 4 (N,C,H,W)", opn,
                              ops_in_name(op, 0, b, sizeof b), (int)x->rank);
    if (kernel) {
        if (!w || w->rank != 4)
            return base_fail_line(err, errlen, "%s: %s has %d dims, expected 4 (F,C/groups,KH,KW)", opn,
                                  ops_in_name(op, 1, b, sizeof b), w ? (int)w->rank : 0);
        win->kh = w->dims[2];
        win->kw = w->dims[3];
        win->dh = p->v[PM_DIL_H];
        win->dw = p->v[PM_DIL_W];
    } else {
        win->kh = p->v[PM_KH];
        win->kw = p->v[PM_KW];
        win->dh = win->dw = 1;
    }
    win->sh = p->v[PM_STRIDE_H];
    win->sw = p->v[PM_STRIDE_W];
    if (win->kh < 1 || win->kw < 1 || win->sh < 1 || win->sw < 1 || win->dh < 1 || win->dw < 1)
        return base_fail_line(err, errlen, "%s: window, stride and dilation must be >= 1", opn);
    int64_t mode = p->v[PM_PAD];
    if (mode < 0 || mode >= OPS_PAD_COUNT)
        return base_fail_line(err, errlen, "%s: pad mode %lld unknown", opn, (long long)mode);
    if (mode == OPS_PAD_EXPLICIT &&
        (p->v[PM_PAD_T] < 0 || p->v[PM_PAD_B] < 0 || p->v[PM_PAD_L] < 0 || p->v[PM_PAD_R] < 0))
        return base_fail_line(err, errlen, "%s: negative padding", opn);
    if (ops_win_axis(opn, "height", mode, x->dims[2], win->kh, win->sh, win->dh, p->v[PM_PAD_T], p->v[PM_PAD_B],
                     &win->oh, &win->pt, &win->pb, err, errlen) < 0 ||
        ops_win_axis(opn, "width", mode, x->dims[3], win->kw, win->sw, win->dw, p->v[PM_PAD_L], p->v[PM_PAD_R],
                     &win->ow, &win->pl, &win->pr, err, errlen) < 0)
        return -1;
    /* A pool window must always hold one real cell (max of nothing, mean of nothing): 'same'
     * padding guarantees it, explicit padding must be smaller than the window. */
    if (!kernel) {
        const char *side[4] = {"pad_t", "pad_b", "pad_l", "pad_r"};
        int64_t pad[4] = {win->pt, win->pb, win->pl, win->pr}, k[4] = {win->kh, win->kh, win->kw, win->kw};
        for (int i = 0; i < 4; i++)
            if (pad[i] >= k[i])
                return base_fail_line(err, errlen, "%s: %s = %lld is not smaller than the window (%lld)", opn, side[i],
                                      (long long)pad[i], (long long)k[i]);
    }
    return 0;
}

/* --- shape inference ------------------------------------------------------------------------ */

#define SHAPE_FN(nm) \
    static int shape_##nm(const ops_params *p, int32_t n_in, const ops_shape *in, int32_t *n_out, ops_shape *out, \
                          char *err, size_t errlen)

/* Input k must have the given rank. */
static int need_rank(ops_type op, const ops_shape *in, int32_t k, int32_t rank, char *err, size_t errlen) {
    char b[64];
    if (in[k].rank != rank)
        return base_fail_line(err, errlen, "%s: %s has %d dims, expected %d", ops_table[op].name,
                              ops_in_name(op, k, b, sizeof b), (int)in[k].rank, (int)rank);
    return 0;
}

/* Input k must be a vector (n). */
static int need_vec(ops_type op, const ops_shape *in, int32_t k, int64_t n, char *err, size_t errlen) {
    char b[64], s[96];
    if (in[k].rank != 1 || in[k].dims[0] != n)
        return base_fail_line(err, errlen, "%s: %s has shape %s, expected (%lld)", ops_table[op].name,
                              ops_in_name(op, k, b, sizeof b), ops_shape_str(&in[k], s, sizeof s), (long long)n);
    return 0;
}

SHAPE_FN(conv2d) {
    char b[64];
    if (need_rank(OP_CONV2D, in, 0, 4, err, errlen) < 0 || need_rank(OP_CONV2D, in, 1, 4, err, errlen) < 0)
        return -1;
    const ops_shape *x = &in[0], *w = &in[1]; /* (N,C,H,W), (F,C/g,KH,KW) */
    int64_t C = x->dims[1], F = w->dims[0], g = p->v[PM_GROUPS];
    if (C % g)
        return base_fail_line(err, errlen,
                              "conv2d: groups = %lld does not divide the %lld input channels of input 0 (x)",
                              (long long)g, (long long)C);
    if (F % g)
        return base_fail_line(err, errlen, "conv2d: groups = %lld does not divide the %lld filters of input 1 (kernel)",
                              (long long)g, (long long)F);
    if (w->dims[1] != C / g)
        return base_fail_line(err, errlen, "conv2d: %s has %lld channels (dim 1), expected C/groups = %lld",
                              ops_in_name(OP_CONV2D, 1, b, sizeof b), (long long)w->dims[1], (long long)(C / g));
    if (n_in > 2 && need_vec(OP_CONV2D, in, 2, F, err, errlen) < 0)
        return -1;
    ops_window win;
    if (ops_window2d(OP_CONV2D, p, x, w, &win, err, errlen) < 0)
        return -1;
    int64_t d[4] = {x->dims[0], F, win.oh, win.ow};
    out[0] = ops_shape_make(4, d);
    *n_out = 1;
    return 0;
}

SHAPE_FN(matmul) {
    char b[64], s1[96], s2[96];
    const ops_shape *a = &in[0], *bm = &in[1]; /* (...,m,k), (...,k,n) */
    for (int32_t k = 0; k < 2; k++)
        if (in[k].rank < 2)
            return base_fail_line(err, errlen, "matmul: %s has %d dims, expected at least 2",
                                  ops_in_name(OP_MATMUL, k, b, sizeof b), (int)in[k].rank);
    int64_t m = a->dims[a->rank - 2], kk = a->dims[a->rank - 1];
    int64_t kb = bm->dims[bm->rank - 2], n = bm->dims[bm->rank - 1];
    if (kb != kk)
        return base_fail_line(err, errlen,
                              "matmul: input 1 (B) has %lld rows (dim %d), expected k = %lld (the last dim of A)",
                              (long long)kb, (int)(bm->rank - 2), (long long)kk);
    int32_t r = a->rank > bm->rank ? a->rank : bm->rank;
    int64_t d[OPS_MAX_DIMS];
    for (int32_t i = 0; i < r - 2; i++) {
        int32_t ia = i - (r - a->rank), ib = i - (r - bm->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? bm->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return base_fail_line(err, errlen, "matmul: batch dims of A %s and B %s do not broadcast (%lld vs %lld)",
                                  ops_shape_str(a, s1, sizeof s1), ops_shape_str(bm, s2, sizeof s2), (long long)da,
                                  (long long)db);
        d[i] = da == 1 ? db : da;
    }
    d[r - 2] = m;
    d[r - 1] = n;
    if (n_in > 2 && need_vec(OP_MATMUL, in, 2, n, err, errlen) < 0)
        return -1;
    out[0] = ops_shape_make(r, d);
    *n_out = 1;
    return 0;
}

/* numpy broadcasting of in[0] and in[1] (right-aligned; dims equal or 1). */
static int shape_bcast(ops_type op, const ops_shape *in, ops_shape *out, char *err, size_t errlen) {
    char s1[96], s2[96];
    const ops_shape *a = &in[0], *b = &in[1];
    int32_t r = a->rank > b->rank ? a->rank : b->rank;
    int64_t d[OPS_MAX_DIMS];
    for (int32_t i = 0; i < r; i++) {
        int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return base_fail_line(err, errlen, "%s: shapes %s and %s do not broadcast (output dim %d: %lld vs %lld)",
                                  ops_table[op].name, ops_shape_str(a, s1, sizeof s1), ops_shape_str(b, s2, sizeof s2),
                                  (int)i, (long long)da, (long long)db);
        d[i] = da == 1 ? db : da;
    }
    out[0] = ops_shape_make(r, d);
    return 0;
}

#define SHAPE_BCAST(nm, ID) \
    SHAPE_FN(nm) { \
        *n_out = 1; \
        return shape_bcast(OP_##ID, in, out, err, errlen); \
    }
SHAPE_BCAST(ewadd, EWADD)
SHAPE_BCAST(ewmul, EWMUL)
SHAPE_BCAST(ewsub, EWSUB)
SHAPE_BCAST(ewdiv, EWDIV)
SHAPE_BCAST(pow, POW)

SHAPE_FN(smul) {
    char s[96];
    if (ops_shape_numel(&in[1]) != 1)
        return base_fail_line(err, errlen, "smul: input 1 (scalar) has shape %s, expected a single element",
                              ops_shape_str(&in[1], s, sizeof s));
    out[0] = in[0];
    *n_out = 1;
    return 0;
}

/* Unary elementwise ops (and clip): the output has the input's shape. */
SHAPE_FN(same) {
    out[0] = in[0];
    *n_out = 1;
    return 0;
}

SHAPE_FN(transpose) {
    const ops_shape *x = &in[0];
    if (p->n_list != x->rank)
        return base_fail_line(err, errlen, "transpose: perm has %d entries, input 0 (x) has rank %d", (int)p->n_list,
                              (int)x->rank);
    int seen[OPS_MAX_DIMS] = {0};
    int64_t d[OPS_MAX_DIMS];
    for (int32_t i = 0; i < x->rank; i++) {
        int64_t q = p->list[i];
        if (q < 0 || q >= x->rank || seen[q])
            return base_fail_line(err, errlen, "transpose: perm is not a permutation of 0..%d (entry %d = %lld)",
                                  (int)x->rank - 1, (int)i, (long long)q);
        seen[q] = 1;
        d[i] = x->dims[q];
    }
    out[0] = ops_shape_make(x->rank, d);
    *n_out = 1;
    return 0;
}

SHAPE_FN(concat) {
    int64_t ax = p->v[PM_AXIS];
    int32_t r = in[0].rank;
    if (ax >= r)
        return base_fail_line(err, errlen, "concat: axis %lld out of range for input 0 of rank %d", (long long)ax,
                              (int)r);
    int64_t total = 0;
    for (int32_t k = 0; k < n_in; k++) {
        if (in[k].rank != r)
            return base_fail_line(err, errlen, "concat: input %d has rank %d, input 0 has rank %d", (int)k,
                                  (int)in[k].rank, (int)r);
        for (int32_t i = 0; i < r; i++)
            if (i != ax && in[k].dims[i] != in[0].dims[i])
                return base_fail_line(err, errlen,
                                      "concat: input %d has dim %d = %lld, input 0 has %lld (only dim %lld, the axis, may differ)",
                                      (int)k, (int)i, (long long)in[k].dims[i], (long long)in[0].dims[i],
                                      (long long)ax);
        if (base_add_i64(total, in[k].dims[ax], &total))
            return base_fail_line(err, errlen, "concat: the output size along axis %lld overflows", (long long)ax);
    }
    out[0] = in[0];
    out[0].dims[ax] = total;
    *n_out = 1;
    return 0;
}

SHAPE_FN(split) {
    const ops_shape *x = &in[0];
    int64_t ax = p->v[PM_AXIS], parts = p->v[PM_PARTS];
    if (ax >= x->rank)
        return base_fail_line(err, errlen, "split: axis %lld out of range for input 0 (x) of rank %d", (long long)ax,
                              (int)x->rank);
    int64_t dim = x->dims[ax];
    if (p->n_list == 0) {
        if (dim % parts)
            return base_fail_line(err, errlen,
                                  "split: dim %lld of input 0 (x) (= %lld) does not divide into %lld equal parts",
                                  (long long)ax, (long long)dim, (long long)parts);
        for (int64_t k = 0; k < parts; k++) {
            out[k] = *x;
            out[k].dims[ax] = dim / parts;
        }
    } else {
        int64_t sum = 0;
        for (int64_t k = 0; k < parts; k++) {
            if (base_add_i64(sum, p->list[k], &sum))
                return base_fail_line(err, errlen, "split: sizes overflow");
            out[k] = *x;
            out[k].dims[ax] = p->list[k];
        }
        if (sum != dim)
            return base_fail_line(err, errlen, "split: sizes sum to %lld, dim %lld of input 0 (x) is %lld",
                                  (long long)sum, (long long)ax, (long long)dim);
    }
    *n_out = (int32_t)parts;
    return 0;
}

static int shape_pool(ops_type op, const ops_params *p, const ops_shape *in, int32_t *n_out, ops_shape *out,
                      char *err, size_t errlen) {
    ops_window win;
    if (ops_window2d(op, p, &in[0], NULL, &win, err, errlen) < 0)
        return -1;
    int64_t d[4] = {in[0].dims[0], in[0].dims[1], win.oh, win.ow};
    out[0] = ops_shape_make(4, d);
    *n_out = 1;
    return 0;
}

SHAPE_FN(avgpool2d) { return shape_pool(OP_AVGPOOL2D, p, in, n_out, out, err, errlen); }
SHAPE_FN(maxpool2d) { return shape_pool(OP_MAXPOOL2D, p, in, n_out, out, err, errlen); }

SHAPE_FN(globalavgpool) {
    if (need_rank(OP_GLOBALAVGPOOL, in, 0, 4, err, errlen) < 0)
        return -1;
    int64_t d[4] = {in[0].dims[0], in[0].dims[1], 1, 1};
    out[0] = ops_shape_make(4, d);
    *n_out = 1;
    return 0;
}

SHAPE_FN(enlarge) {
    if (need_rank(OP_ENLARGE, in, 0, 4, err, errlen) < 0)
        return -1;
    const ops_shape *k = &in[0]; /* (F,C,kh,kw) */
    int64_t want[2] = {p->v[PM_KH], p->v[PM_KW]};
    const char *nm[2] = {"kh", "kw"}, *what[2] = {"height", "width"};
    for (int i = 0; i < 2; i++) {
        int64_t have = k->dims[2 + i];
        if (want[i] < have)
            return base_fail_line(err, errlen, "enlarge: %s = %lld is smaller than the %s %lld of input 0 (kernel)",
                                  nm[i], (long long)want[i], what[i], (long long)have);
        if ((want[i] - have) % 2)
            return base_fail_line(err, errlen,
                                  "enlarge: %s = %lld minus the kernel %s %lld is odd; "
                                  "the kernel would not stay centred",
                                  nm[i], (long long)want[i], what[i], (long long)have);
    }
    int64_t d[4] = {k->dims[0], k->dims[1], want[0], want[1]};
    out[0] = ops_shape_make(4, d);
    *n_out = 1;
    return 0;
}

SHAPE_FN(const_imm) {
    int64_t d[2] = {p->v[PM_N], p->v[PM_N]};
    out[0] = ops_shape_make(2, d);
    *n_out = 1;
    return 0;
}

SHAPE_FN(const_iconv) {
    if (p->v[PM_KH] % 2 == 0 || p->v[PM_KW] % 2 == 0)
        return base_fail_line(err, errlen,
                              "const_iconv: kh = %lld and kw = %lld must be odd (the identity tap is central)",
                              (long long)p->v[PM_KH], (long long)p->v[PM_KW]);
    int64_t d[4] = {p->v[PM_C], p->v[PM_C], p->v[PM_KH], p->v[PM_KW]};
    out[0] = ops_shape_make(4, d);
    *n_out = 1;
    return 0;
}

/* A shape given as the list parameter (const_ones, reshape). */
static int shape_from_list(ops_type op, const ops_params *p, ops_shape *s, char *err, size_t errlen) {
    if (p->n_list > OPS_MAX_DIMS)
        return base_fail_line(err, errlen, "%s: shape has %d entries, at most %d", ops_table[op].name, (int)p->n_list,
                              OPS_MAX_DIMS);
    *s = ops_shape_make(p->n_list, p->list);
    if (ops_shape_numel(s) < 0)
        return base_fail_line(err, errlen, "%s: the number of elements of the shape overflows", ops_table[op].name);
    return 0;
}

SHAPE_FN(const_ones) {
    *n_out = 1;
    return shape_from_list(OP_CONST_ONES, p, &out[0], err, errlen);
}

SHAPE_FN(const_pool) {
    int64_t d[4] = {p->v[PM_C], 1, p->v[PM_KH], p->v[PM_KW]};
    out[0] = ops_shape_make(4, d);
    *n_out = 1;
    return 0;
}

SHAPE_FN(batchnorm) {
    if (in[0].rank < 2)
        return base_fail_line(err, errlen, "batchnorm: input 0 (x) has %d dims, expected at least 2 (N,C,...)",
                              (int)in[0].rank);
    for (int32_t k = 1; k < 5; k++)
        if (need_vec(OP_BATCHNORM, in, k, in[0].dims[1], err, errlen) < 0)
            return -1;
    out[0] = in[0];
    *n_out = 1;
    return 0;
}

SHAPE_FN(reshape) {
    char s1[96], s2[96];
    if (shape_from_list(OP_RESHAPE, p, &out[0], err, errlen) < 0)
        return -1;
    int64_t n = ops_shape_numel(&out[0]), nx = ops_shape_numel(&in[0]);
    if (n != nx)
        return base_fail_line(err, errlen, "reshape: shape %s has %lld elements, input 0 (x) %s has %lld",
                              ops_shape_str(&out[0], s1, sizeof s1), (long long)n, ops_shape_str(&in[0], s2, sizeof s2),
                              (long long)nx);
    *n_out = 1;
    return 0;
}

SHAPE_FN(softmax) {
    if (p->v[PM_AXIS] >= in[0].rank)
        return base_fail_line(err, errlen, "softmax: axis %lld out of range for input 0 (x) of rank %d",
                              (long long)p->v[PM_AXIS], (int)in[0].rank);
    out[0] = in[0];
    *n_out = 1;
    return 0;
}

/* Normalised dims [axis, axis_end), axis_end 0 meaning the rank: gamma and beta have those dims. */
SHAPE_FN(layernorm) {
    char b[64], s1[96], s2[96];
    const ops_shape *x = &in[0];
    int64_t ax = p->v[PM_AXIS], end = p->v[PM_AXIS_END];
    if (ax >= x->rank)
        return base_fail_line(err, errlen, "layernorm: axis %lld out of range for input 0 (x) of rank %d",
                              (long long)ax, (int)x->rank);
    if (end != 0 && (end <= ax || end > x->rank))
        return base_fail_line(err, errlen,
                              "layernorm: axis_end %lld out of range for axis %lld and input 0 (x) of rank %d "
                              "(expected axis+1..rank, or 0 for the rank)",
                              (long long)end, (long long)ax, (int)x->rank);
    if (end == 0)
        end = x->rank;
    ops_shape tail = ops_shape_make((int32_t)(end - ax), x->dims + ax);
    for (int32_t k = 1; k < n_in; k++) {
        if (ops_shape_eq(&in[k], &tail))
            continue;
        if (end == x->rank)
            return base_fail_line(err, errlen, "layernorm: %s has shape %s, expected %s (the dims of x from axis %lld)",
                                  ops_in_name(OP_LAYERNORM, k, b, sizeof b), ops_shape_str(&in[k], s1, sizeof s1),
                                  ops_shape_str(&tail, s2, sizeof s2), (long long)ax);
        return base_fail_line(err, errlen,
                              "layernorm: %s has shape %s, expected %s (the dims of x from axis %lld to axis_end %lld)",
                              ops_in_name(OP_LAYERNORM, k, b, sizeof b), ops_shape_str(&in[k], s1, sizeof s1),
                              ops_shape_str(&tail, s2, sizeof s2), (long long)ax, (long long)end);
    }
    out[0] = *x;
    *n_out = 1;
    return 0;
}

SHAPE_FN(gather) {
    const ops_shape *t = &in[0], *ids = &in[1]; /* (V,...), (...) */
    if (t->rank < 1)
        return base_fail_line(err, errlen, "gather: input 0 (table) is a scalar, expected at least 1 dim");
    int32_t r = ids->rank + t->rank - 1;
    if (r > OPS_MAX_DIMS)
        return base_fail_line(err, errlen,
                              "gather: the output would have rank %d (ids rank %d + table rank %d - 1), at most %d",
                              (int)r, (int)ids->rank, (int)t->rank, OPS_MAX_DIMS);
    int64_t d[OPS_MAX_DIMS];
    for (int32_t i = 0; i < ids->rank; i++)
        d[i] = ids->dims[i];
    for (int32_t i = 1; i < t->rank; i++)
        d[ids->rank + i - 1] = t->dims[i];
    out[0] = ops_shape_make(r, d);
    *n_out = 1;
    return 0;
}

/* reducemax: axes (the list; empty: every dim) distinct and inside the rank. */
SHAPE_FN(reducemax) {
    const ops_shape *x = &in[0];
    int red[OPS_MAX_DIMS] = {0};
    for (int32_t k = 0; k < p->n_list; k++) {
        int64_t a = p->list[k];
        if (a >= x->rank)
            return base_fail_line(err, errlen, "reducemax: axes[%d] = %lld out of range for input 0 (x) of rank %d",
                                  (int)k, (long long)a, (int)x->rank);
        if (red[a])
            return base_fail_line(err, errlen, "reducemax: axis %lld appears twice in axes", (long long)a);
        red[a] = 1;
    }
    int32_t r = 0;
    int64_t d[OPS_MAX_DIMS];
    for (int32_t i = 0; i < x->rank; i++) {
        int all = p->n_list == 0;
        if (!red[i] && !all)
            d[r++] = x->dims[i];
        else if (p->v[PM_KEEPDIMS])
            d[r++] = 1;
    }
    out[0] = ops_shape_make(r, d);
    *n_out = 1;
    return 0;
}

/* resize: sizes (the list) is the output shape; only the last two dims may change. */
SHAPE_FN(resize) {
    char s1[96];
    const ops_shape *x = &in[0];
    if (x->rank < 2)
        return base_fail_line(err, errlen, "resize: input 0 (x) has %d dims, expected at least 2 (...,H,W)",
                              (int)x->rank);
    if (p->n_list != x->rank)
        return base_fail_line(err, errlen, "resize: sizes has %d entries, input 0 (x) %s has rank %d", (int)p->n_list,
                              ops_shape_str(x, s1, sizeof s1), (int)x->rank);
    for (int32_t i = 0; i < x->rank - 2; i++)
        if (p->list[i] != x->dims[i])
            return base_fail_line(err, errlen,
                                  "resize: sizes[%d] = %lld differs from dim %d of input 0 (x) (%lld); only the last "
                                  "two dims are resized",
                                  (int)i, (long long)p->list[i], (int)i, (long long)x->dims[i]);
    const ops_param_key sk[2] = {PM_SCALE_H, PM_SCALE_W};
    for (int i = 0; i < 2; i++) {
        float f = ops_p2f(p->v[sk[i]]);
        if (!(f == 0.0f || (f > 0.0f && isfinite(f))))
            return base_fail_line(err, errlen, "resize: %s = %g must be 0 (out/in) or positive and finite",
                                  ops_param_table[sk[i]].name, (double)f);
    }
    out[0] = ops_shape_make(p->n_list, p->list);
    if (ops_shape_numel(&out[0]) < 0)
        return base_fail_line(err, errlen, "resize: the number of elements of sizes overflows");
    *n_out = 1;
    return 0;
}

/* pad: pads (the list) holds the begins, then the ends, of every dim; reflect needs pads < dim. */
SHAPE_FN(pad) {
    char s1[96];
    const ops_shape *x = &in[0];
    int32_t r = x->rank;
    if (r < 1 || r > OPS_MAX_LIST / 2)
        return base_fail_line(err, errlen, "pad: input 0 (x) has rank %d, expected 1..%d (pads holds at most %d values)",
                              (int)r, OPS_MAX_LIST / 2, OPS_MAX_LIST);
    if (p->n_list != 2 * r)
        return base_fail_line(err, errlen, "pad: pads has %d entries, expected %d (begins and ends of %s)",
                              (int)p->n_list, (int)(2 * r), ops_shape_str(x, s1, sizeof s1));
    int64_t d[OPS_MAX_DIMS];
    for (int32_t i = 0; i < r; i++) {
        int64_t b = p->list[i], e = p->list[r + i];
        if (p->v[PM_MODE] == 1 && (b >= x->dims[i] || e >= x->dims[i]))
            return base_fail_line(err, errlen,
                                  "pad: reflect pads %lld, %lld of dim %d need to be smaller than the dim (%lld)",
                                  (long long)b, (long long)e, (int)i, (long long)x->dims[i]);
        if (base_add_i64(x->dims[i], b, &d[i]) || base_add_i64(d[i], e, &d[i]))
            return base_fail_line(err, errlen, "pad: the padded dim %d overflows", (int)i);
    }
    out[0] = ops_shape_make(r, d);
    *n_out = 1;
    return 0;
}

/* --- views (ops_view_fn) --------------------------------------------------------------------- */

/* 1 if every axis of s before axis has size 1: the parts along axis are then consecutive runs. */
static int view_leading_ones(const ops_shape *s, int64_t axis) {
    for (int64_t i = 0; i < axis && i < s->rank; i++)
        if (s->dims[i] != 1)
            return 0;
    return 1;
}

/* Parts back to back along an axis with only axes of size 1 before it (split, concat). */
static int view_runs(const ops_params *p, const ops_shape *whole, int32_t n, const ops_shape *const *parts,
                     int64_t *off) {
    if (!view_leading_ones(whole, p->v[PM_AXIS]))
        return 0;
    int64_t at = 0;
    for (int32_t k = 0; k < n; k++) {
        off[k] = at;
        at += ops_shape_numel(parts[k]);
    }
    return 1;
}

static int view_reshape(const ops_params *p, const ops_shape *whole, int32_t n, const ops_shape *const *parts,
                        int64_t *off) {
    (void)p, (void)whole, (void)parts;
    for (int32_t k = 0; k < n; k++)
        off[k] = 0;
    return 1;
}

int ops_transpose_moves_nothing(const ops_shape *in, const ops_params *p) {
    int64_t last = -1;
    for (int32_t i = 0; i < p->n_list && i < in->rank; i++) {
        int64_t a = p->list[i];
        if (a < 0 || a >= in->rank)
            return 0;
        if (in->dims[a] == 1)
            continue; /* an axis of size 1 moves no element wherever it goes */
        if (a < last)
            return 0;
        last = a;
    }
    return 1;
}

static int view_transpose(const ops_params *p, const ops_shape *whole, int32_t n, const ops_shape *const *parts,
                          int64_t *off) {
    return ops_transpose_moves_nothing(whole, p) && view_reshape(p, whole, n, parts, off);
}

/* --- FLOPs ---------------------------------------------------------------------------------
 * A multiply-add counts 2; an elementwise op, a fused bias or a fused activation 1 per output
 * element; pools 1 per window cell; data movement and constants 0. */

#define FLOPS_FN(nm) static double flops_##nm(const ops_sig *s)

static double numel_d(const ops_shape *s) { return (double)ops_shape_numel(s); }

/* Fused bias and activation: 1 each per output element. */
static double epilogue_flops(const ops_sig *s) {
    double n = numel_d(&s->out[0]);
    return (s->n_in > 2 ? n : 0.0) + (s->p->v[PM_ACT] != OPS_ACT_NONE ? n : 0.0);
}

FLOPS_FN(conv2d) {
    const ops_shape *w = &s->in[1]; /* (F, C/g, KH, KW) */
    return 2.0 * numel_d(&s->out[0]) * (double)(w->dims[1] * w->dims[2] * w->dims[3]) + epilogue_flops(s);
}

FLOPS_FN(matmul) {
    const ops_shape *a = &s->in[0]; /* (..., m, k) */
    return 2.0 * numel_d(&s->out[0]) * (double)a->dims[a->rank - 1] + epilogue_flops(s);
}

FLOPS_FN(elementwise) { return numel_d(&s->out[0]); }
FLOPS_FN(zero) { return 0.0; }

FLOPS_FN(pool) { return numel_d(&s->out[0]) * (double)(s->p->v[PM_KH] * s->p->v[PM_KW]); }
FLOPS_FN(globalavgpool) { return numel_d(&s->in[0]); }
/* y = x * a + b with a, b per channel */
FLOPS_FN(batchnorm) { return 2.0 * numel_d(&s->out[0]); }
/* max, exp, sum, divide */
FLOPS_FN(softmax) { return 4.0 * numel_d(&s->out[0]); }
/* one comparison per input element */
FLOPS_FN(reducemax) { return numel_d(&s->in[0]); }
/* bilinear: four weights and three adds per output element; nearest only picks */
FLOPS_FN(resize) { return s->p->v[PM_MODE] == 1 ? 7.0 * numel_d(&s->out[0]) : 0.0; }
/* mean, variance (2), normalise (2), gamma, beta */
FLOPS_FN(layernorm) { return (5.0 + (double)(s->n_in - 1)) * numel_d(&s->out[0]); }

/* --- the table ------------------------------------------------------------------------------
 * Parameter declarations: P_INT(key, lo, hi, default), P_REQ(key, lo, hi) for a parameter
 * without default; the _G forms end with the values the rule generator draws (TASO's generation
 * set); without them the generator uses the default, or for a required parameter a value it
 * derives from the input shapes (const_imm n, const_iconv c, ...). For the list parameter, lo..hi
 * is the domain of each entry and the generator values form the one list it uses. */
#define NGEN(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define GEN(...) .n_gen = NGEN(__VA_ARGS__), .gen = {__VA_ARGS__}
#define P_INT(k, l, h, d) {.key = PM_##k, .lo = (l), .hi = (h), .def = (d)}
#define P_INT_G(k, l, h, d, ...) {.key = PM_##k, .lo = (l), .hi = (h), .def = (d), GEN(__VA_ARGS__)}
#define P_REQ(k, l, h) {.key = PM_##k, .lo = (l), .hi = (h), .required = 1}
#define P_REQ_G(k, l, h, ...) {.key = PM_##k, .lo = (l), .hi = (h), .required = 1, GEN(__VA_ARGS__)}
#define P_FLOAT(k, bits) {.key = PM_##k, .def = (bits)}
#define P_ACT_G(...) {.key = PM_ACT, .lo = 0, .hi = OPS_ACT_COUNT - 1, .def = OPS_ACT_NONE, GEN(__VA_ARGS__)}
#define P_PAD_G(...) {.key = PM_PAD, .lo = 0, .hi = OPS_PAD_COUNT - 1, .def = OPS_PAD_EXPLICIT, GEN(__VA_ARGS__)}
#define P_LIST(nm, l, h, req) {.key = PM_LIST, .lo = (l), .hi = (h), .required = (req), .list_name = (nm)}
#define P_LIST_G(nm, l, h, req, ...) \
    {.key = PM_LIST, .lo = (l), .hi = (h), .required = (req), .list_name = (nm), GEN(__VA_ARGS__)}
#define PARAMS(...) \
    .n_params = (int32_t)(sizeof((ops_param_desc[]){__VA_ARGS__}) / sizeof(ops_param_desc)), .params = {__VA_ARGS__}

#define PADS P_INT(PAD_T, 0, 64, 0), P_INT(PAD_L, 0, 64, 0), P_INT(PAD_B, 0, 64, 0), P_INT(PAD_R, 0, 64, 0)
#define MAX_DIM (INT64_C(1) << 40) /* domain of one dim in a list parameter */
#define F_1EM5 INT64_C(0x3727c5ac)   /* 1e-5f */
#define F_NEG_MAX INT64_C(0xff7fc99e) /* -3.4e38f */
#define F_POS_MAX INT64_C(0x7f7fc99e) /* 3.4e38f */

/* Pool parameters shared by avgpool2d and maxpool2d (TASO generates 3x3, stride 1, 'same'). */
#define POOL_PARAMS \
    P_REQ_G(KH, 1, 64, 3), P_REQ_G(KW, 1, 64, 3), P_INT_G(STRIDE_H, 1, 16, 1, 1), P_INT_G(STRIDE_W, 1, 16, 1, 1), \
        P_PAD_G(OPS_PAD_SAME), PADS

/* Facts beside the parameters: ROLES names the inputs in messages; the Z3_ forms give the op's
 * function in the axioms and its signature (ops.h ops_z3_sig; ZA(kind, key) is one integer
 * argument); ONNX the op's ONNX form (ops.h ops_onnx; OA(key, name) one attribute). */
#define ROLES(...) .roles = {__VA_ARGS__}
#define ZA(kind, k) {OPS_Z3_##kind, PM_##k}
#define Z3_ARGS(...) \
    .n_args = (int32_t)(sizeof((ops_z3_arg[]){__VA_ARGS__}) / sizeof(ops_z3_arg)), .args = {__VA_ARGS__}
#define Z3_FN(sym, nt) .z3 = (sym), .z3sig = {.n_t = (nt)}
#define Z3_FN_ARGS(sym, nt, ...) .z3 = (sym), .z3sig = {.n_t = (nt), Z3_ARGS(__VA_ARGS__)}
#define Z3_PER_OUTPUT(sym, nt, k, ...) .z3 = (sym), .z3sig = {.n_t = (nt), .per_output = (k), Z3_ARGS(__VA_ARGS__)}
#define Z3_PER_RANK(sym, nt, r, ...) .z3 = (sym), .z3sig = {.n_t = (nt), .per_rank = (r), Z3_ARGS(__VA_ARGS__)}
#define OA(k, nm) {PM_##k, (nm)}
#define ONNX(nm) .onnx = {.op = (nm)}
#define ONNX_INTS(nm) .onnx = {.op = (nm), .ints = 1}
#define ONNX_ATTRS(nm, ints_pass, ...) .onnx = {.op = (nm), .ints = (ints_pass), .attrs = {__VA_ARGS__}}
/* The window arguments of the pools' Z3 functions. */
#define Z3_POOL_ARGS ZA(KEY, KH), ZA(KEY, KW), ZA(KEY, STRIDE_H), ZA(KEY, STRIDE_W), ZA(PAD, PAD)

#define OPS_ENTRY_CONV2D \
    PARAMS(P_INT_G(STRIDE_H, 1, 16, 1, 1), P_INT_G(STRIDE_W, 1, 16, 1, 1), P_PAD_G(OPS_PAD_SAME), PADS, \
           P_INT(DIL_H, 1, 16, 1), P_INT(DIL_W, 1, 16, 1), P_INT_G(GROUPS, 1, 65536, 1, 1), \
           P_ACT_G(OPS_ACT_NONE, OPS_ACT_RELU)), \
    ROLES("x", "kernel", "bias"), .shape = shape_conv2d, .flops = flops_conv2d, .fp = ops_fp_conv2d, .gen = 1, \
    Z3_FN_ARGS("conv2d", 2, ZA(KEY, STRIDE_H), ZA(KEY, STRIDE_W), ZA(PAD, PAD), ZA(KEY, GROUPS), ZA(KEY, ACT)), \
    .weight_input_mask = 0x6, .kernel_input_mask = 0x2, .window = OPS_WIN_KERNEL, ONNX("Conv")
#define OPS_ENTRY_MATMUL \
    PARAMS(P_ACT_G(OPS_ACT_NONE, OPS_ACT_RELU)), ROLES("A", "B", "bias"), .shape = shape_matmul, \
    .flops = flops_matmul, .fp = ops_fp_matmul, .gen = 1, Z3_FN_ARGS("matmul", 2, ZA(KEY, ACT)), \
    .weight_input_mask = 0x6, ONNX("MatMul")
#define OPS_ENTRY_EWADD \
    ROLES("x", "y"), .shape = shape_ewadd, .flops = flops_elementwise, .fp = ops_fp_ewadd, .gen = 1, \
    Z3_FN("ewadd", 2), ONNX_INTS("Add"), .epi = OPS_EPI_ADD
#define OPS_ENTRY_EWMUL \
    ROLES("x", "y"), .shape = shape_ewmul, .flops = flops_elementwise, .fp = ops_fp_ewmul, .gen = 1, \
    Z3_FN("ewmul", 2), ONNX_INTS("Mul")
#define OPS_ENTRY_EWSUB ROLES("x", "y"), .shape = shape_ewsub, .flops = flops_elementwise, ONNX_INTS("Sub")
#define OPS_ENTRY_EWDIV ROLES("x", "y"), .shape = shape_ewdiv, .flops = flops_elementwise, ONNX("Div")
#define OPS_ENTRY_SMUL \
    ROLES("x", "scalar"), .shape = shape_smul, .flops = flops_elementwise, .fp = ops_fp_smul, .gen = 1, \
    Z3_FN("smul", 2), ONNX("Mul"), .epi = OPS_EPI_SCALE
#define OPS_ENTRY_RELU \
    ROLES("x"), .shape = shape_same, .flops = flops_elementwise, .fp = ops_fp_relu, .gen = 1, Z3_FN("relu", 1), \
    ONNX("Relu"), .act = OPS_ACT_RELU
#define OPS_ENTRY_SIGMOID \
    ROLES("x"), .shape = shape_same, .flops = flops_elementwise, ONNX("Sigmoid"), .act = OPS_ACT_SIGMOID
#define OPS_ENTRY_TANH ROLES("x"), .shape = shape_same, .flops = flops_elementwise, ONNX("Tanh"), .act = OPS_ACT_TANH
#define OPS_ENTRY_GELU \
    ROLES("x"), .shape = shape_same, .flops = flops_elementwise, .act = OPS_ACT_GELU /* ONNX: its erf form */
#define OPS_ENTRY_ERF ROLES("x"), .shape = shape_same, .flops = flops_elementwise, ONNX("Erf")
#define OPS_ENTRY_SQRT ROLES("x"), .shape = shape_same, .flops = flops_elementwise, ONNX("Sqrt")
#define OPS_ENTRY_POW ROLES("x", "exponent"), .shape = shape_pow, .flops = flops_elementwise, ONNX("Pow")
#define OPS_ENTRY_CLIP \
    PARAMS(P_FLOAT(LO, F_NEG_MAX), P_FLOAT(HI, F_POS_MAX)), ROLES("x"), .shape = shape_same, \
    .flops = flops_elementwise, ONNX("Clip")
#define OPS_ENTRY_TRANSPOSE \
    PARAMS(P_LIST_G("perm", 0, OPS_MAX_DIMS - 1, 1, 1, 0)), ROLES("x"), .shape = shape_transpose, \
    .flops = flops_zero, .fp = ops_fp_transpose, .gen = 1, Z3_FN_ARGS("transpose", 1, ZA(PERM, LIST)), \
    ONNX_ATTRS("Transpose", 1, OA(LIST, "perm")), .view = view_transpose
#define OPS_ENTRY_CONCAT \
    PARAMS(P_REQ_G(AXIS, 0, OPS_MAX_DIMS - 1, 0, 1, 2, 3)), .shape = shape_concat, \
    .flops = flops_zero, .fp = ops_fp_concat, .gen = 1, Z3_FN_ARGS("concat", 2, ZA(KEY, AXIS)), \
    ONNX_ATTRS("Concat", 1, OA(AXIS, "axis")), .view_in = view_runs
#define OPS_ENTRY_SPLIT \
    PARAMS(P_REQ_G(AXIS, 0, OPS_MAX_DIMS - 1, 0, 1, 2, 3), P_REQ_G(PARTS, 1, OPS_MAX_OUTPUTS, 2), \
           P_LIST("sizes", 1, MAX_DIM, 0)), \
    ROLES("x"), .shape = shape_split, .flops = flops_zero, .fp = ops_fp_split, .gen = 1, \
    Z3_PER_OUTPUT("split", 1, 2, ZA(KEY, AXIS), ZA(SIZE0, LIST)), ONNX("Split"), .view = view_runs
#define OPS_ENTRY_AVGPOOL2D \
    PARAMS(POOL_PARAMS, P_INT(COUNT_PAD, 0, 1, 1)), ROLES("x"), .shape = shape_avgpool2d, \
    .flops = flops_pool, .fp = ops_fp_avgpool2d, .gen = 1, Z3_FN_ARGS("avgpool2d", 1, Z3_POOL_ARGS), \
    .window = OPS_WIN_PARAMS, ONNX_ATTRS("AveragePool", 0, OA(COUNT_PAD, "count_include_pad"))
#define OPS_ENTRY_MAXPOOL2D \
    PARAMS(POOL_PARAMS), ROLES("x"), .shape = shape_maxpool2d, .flops = flops_pool, \
    .fp = ops_fp_maxpool2d, .gen = 1, Z3_FN_ARGS("maxpool2d", 1, Z3_POOL_ARGS), .window = OPS_WIN_PARAMS, \
    ONNX("MaxPool")
#define OPS_ENTRY_GLOBALAVGPOOL \
    ROLES("x"), .shape = shape_globalavgpool, .flops = flops_globalavgpool, ONNX("GlobalAveragePool")
#define OPS_ENTRY_ENLARGE \
    PARAMS(P_REQ_G(KH, 1, 64, 3), P_REQ_G(KW, 1, 64, 3)), ROLES("kernel"), .shape = shape_enlarge, \
    .flops = flops_zero, .fp = ops_fp_enlarge, .gen = 1, Z3_FN_ARGS("enlarge", 1, ZA(KEY, KH), ZA(KEY, KW)), \
    .weight_input_mask = 0x1, .kernel_input_mask = 0x1, ONNX("Pad")
#define OPS_ENTRY_CONST_IMM \
    PARAMS(P_REQ(N, 1, 65536)), .shape = shape_const_imm, .flops = flops_zero, \
    .fp = ops_fp_const_imm, .gen = 1, Z3_FN_ARGS("const_imm", 0, ZA(KEY, N))
#define OPS_ENTRY_CONST_ICONV \
    PARAMS(P_REQ(C, 1, 65536), P_REQ_G(KH, 1, 63, 1, 3), P_REQ_G(KW, 1, 63, 1, 3)), .shape = shape_const_iconv, \
    .flops = flops_zero, .fp = ops_fp_const_iconv, .gen = 1, \
    Z3_FN_ARGS("const_iconv", 0, ZA(KEY, C), ZA(KEY, KH), ZA(KEY, KW))
#define OPS_ENTRY_CONST_ONES \
    PARAMS(P_LIST("shape", 1, MAX_DIM, 1)), .shape = shape_const_ones, \
    .flops = flops_zero, .fp = ops_fp_const_ones, .gen = 1, Z3_PER_RANK("const_ones", 0, 4, ZA(LIST, LIST))
#define OPS_ENTRY_CONST_POOL \
    PARAMS(P_REQ(C, 1, 65536), P_REQ_G(KH, 1, 64, 3), P_REQ_G(KW, 1, 64, 3)), .shape = shape_const_pool, \
    .flops = flops_zero, .fp = ops_fp_const_pool, .gen = 1, \
    Z3_FN_ARGS("const_pool", 0, ZA(KEY, C), ZA(KEY, KH), ZA(KEY, KW))
#define OPS_ENTRY_BATCHNORM \
    PARAMS(P_FLOAT(EPS, F_1EM5)), ROLES("x", "scale", "bias", "mean", "var"), .shape = shape_batchnorm, \
    .flops = flops_batchnorm, .weight_input_mask = 0x1e, ONNX_ATTRS("BatchNormalization", 0, OA(EPS, "epsilon"))
#define OPS_ENTRY_RESHAPE \
    PARAMS(P_LIST("shape", 1, MAX_DIM, 1)), ROLES("x"), .shape = shape_reshape, .flops = flops_zero, \
    ONNX("Reshape"), .view = view_reshape
#define OPS_ENTRY_SOFTMAX \
    PARAMS(P_REQ(AXIS, 0, OPS_MAX_DIMS - 1)), ROLES("x"), .shape = shape_softmax, .flops = flops_softmax, \
    ONNX_ATTRS("Softmax", 0, OA(AXIS, "axis"))
#define OPS_ENTRY_LAYERNORM \
    PARAMS(P_REQ(AXIS, 0, OPS_MAX_DIMS - 1), P_FLOAT(EPS, F_1EM5), P_INT(AXIS_END, 0, OPS_MAX_DIMS, 0)), \
    ROLES("x", "gamma", "beta"), .shape = shape_layernorm, .flops = flops_layernorm, .weight_input_mask = 0x6, \
    ONNX("LayerNormalization")
#define OPS_ENTRY_GATHER \
    PARAMS(P_INT(AXIS, 0, 0, 0)), ROLES("table", "ids"), .shape = shape_gather, .flops = flops_zero, \
    .weight_input_mask = 0x1, ONNX("Gather")
#define OPS_ENTRY_HARDSWISH \
    ROLES("x"), .shape = shape_same, .flops = flops_elementwise, ONNX("HardSwish"), .act = OPS_ACT_HARDSWISH
/* ONNX has no SiLU before opset 24 and Gelu only from opset 20: the exporter writes their
 * patterns (onnx_export.c), the importer finds them (onnx_pattern.c). */
/* reducemax, resize, pad: data ops outside the generation set (no fingerprint, no Z3 symbol); the
 * exporter writes their ONNX inputs and string attributes (onnx_export.c). */
#define OPS_ENTRY_REDUCEMAX \
    PARAMS(P_LIST("axes", 0, OPS_MAX_DIMS - 1, 0), P_INT(KEEPDIMS, 0, 1, 1)), ROLES("x"), \
    .shape = shape_reducemax, .flops = flops_reducemax, ONNX("ReduceMax")
#define OPS_ENTRY_RESIZE \
    PARAMS(P_LIST("sizes", 1, MAX_DIM, 1), P_INT(MODE, 0, 1, 0), P_INT(COORD, 0, 3, 0), P_INT(NEAREST, 0, 3, 0), \
           P_FLOAT(SCALE_H, 0), P_FLOAT(SCALE_W, 0)), \
    ROLES("x"), .shape = shape_resize, .flops = flops_resize, ONNX("Resize")
#define OPS_ENTRY_PAD \
    PARAMS(P_LIST("pads", 0, MAX_DIM, 1), P_INT(MODE, 0, 2, 0), P_FLOAT(VALUE, 0)), ROLES("x"), .shape = shape_pad, \
    .flops = flops_zero, ONNX("Pad")
#define OPS_ENTRY_SILU ROLES("x"), .shape = shape_same, .flops = flops_elementwise, .act = OPS_ACT_SILU
#define OPS_ENTRY_GELU_TANH ROLES("x"), .shape = shape_same, .flops = flops_elementwise, .act = OPS_ACT_GELU_TANH

const ops_desc ops_table[OP_COUNT] = {
#define OP(id, nm, mi, ma, no, dc) \
    [OP_##id] = {.name = #nm, .doc = dc, .min_in = mi, .max_in = ma, .n_out = no, .cpu = ops_cpu_##nm, \
                 OPS_ENTRY_##id},
#include "ops.def"
#undef OP
};

/* --- lookups and parameters ----------------------------------------------------------------- */

int ops_is_elementwise(ops_type op) {
    return (int)op >= 0 && op < OP_COUNT && ops_table[op].flops == flops_elementwise;
}

int ops_find(const char *name) {
    if (!name)
        return -1;
    for (int op = 0; op < OP_COUNT; op++)
        if (ops_table[op].name && !strcmp(ops_table[op].name, name))
            return op;
    return -1;
}

int ops_param_find(const char *name) {
    if (!name)
        return -1;
    for (int k = 0; k < PM_COUNT; k++)
        if (!strcmp(ops_param_table[k].name, name))
            return k;
    return -1;
}

const ops_param_desc *ops_param_desc_of(ops_type op, ops_param_key key) {
    if ((int)op < 0 || op >= OP_COUNT)
        return NULL;
    const ops_desc *d = &ops_table[op];
    for (int32_t i = 0; i < d->n_params; i++)
        if (d->params[i].key == key)
            return &d->params[i];
    return NULL;
}

void ops_params_default(ops_type op, ops_params *p) {
    memset(p, 0, sizeof *p);
    if ((int)op < 0 || op >= OP_COUNT)
        return;
    const ops_desc *d = &ops_table[op];
    for (int32_t i = 0; i < d->n_params; i++)
        if (d->params[i].key != PM_LIST)
            p->v[d->params[i].key] = d->params[i].def;
}

/* "none|relu|..." for an enum kind. */
static const char *ops_enum_names(ops_param_kind kind, char *buf, size_t len) {
    const char *const *names = kind == OPS_PK_ACT ? ops_act_names : ops_padmode_names;
    int n = kind == OPS_PK_ACT ? OPS_ACT_COUNT : OPS_PAD_COUNT;
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++) {
        int w = snprintf(buf + at, len - at, i ? "|%s" : "%s", names[i]);
        at += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

int ops_params_check(ops_type op, const ops_params *p, char *err, size_t errlen) {
    if ((int)op < 0 || op >= OP_COUNT)
        return base_fail_line(err, errlen, "unknown op %d", (int)op);
    const ops_desc *d = &ops_table[op];
    const char *opn = d->name;
    char b[96];
    for (int32_t i = 0; i < d->n_params; i++) {
        const ops_param_desc *pd = &d->params[i];
        const ops_param_info *pi = &ops_param_table[pd->key];
        int64_t v = p->v[pd->key];
        switch (pi->kind) {
        case OPS_PK_INT:
            if (v < pd->lo || v > pd->hi) {
                if (pd->required && v == 0)
                    return base_fail_line(err, errlen, "%s: parameter '%s' is required (%lld..%lld)", opn, pi->name,
                                          (long long)pd->lo, (long long)pd->hi);
                return base_fail_line(err, errlen, "%s: parameter '%s' = %lld out of range %lld..%lld", opn, pi->name,
                                      (long long)v, (long long)pd->lo, (long long)pd->hi);
            }
            break;
        case OPS_PK_ACT:
        case OPS_PK_PADMODE:
            if (v < pd->lo || v > pd->hi)
                return base_fail_line(err, errlen, "%s: parameter '%s' = %lld is not one of %s", opn, pi->name,
                                      (long long)v, ops_enum_names(pi->kind, b, sizeof b));
            break;
        case OPS_PK_FLOAT: {
            if (v < 0 || v > (int64_t)UINT32_MAX)
                return base_fail_line(err, errlen, "%s: parameter '%s' = %lld is not float32 bits", opn, pi->name,
                                      (long long)v);
            float f = ops_p2f(v);
            if (isnan(f))
                return base_fail_line(err, errlen, "%s: parameter '%s' is NaN", opn, pi->name);
            if (pd->key == PM_EPS && !(f > 0.0f && isfinite(f)))
                return base_fail_line(err, errlen, "%s: parameter 'eps' = %g must be positive and finite", opn,
                                      (double)f);
            break;
        }
        case OPS_PK_LIST:
            if (p->n_list < 0 || p->n_list > OPS_MAX_LIST)
                return base_fail_line(err, errlen, "%s: '%s' has %d entries, at most %d", opn, pd->list_name,
                                      (int)p->n_list, OPS_MAX_LIST);
            if (pd->required && p->n_list == 0)
                return base_fail_line(err, errlen, "%s: parameter '%s' is required", opn, pd->list_name);
            for (int32_t k = 0; k < p->n_list; k++)
                if (p->list[k] < pd->lo || p->list[k] > pd->hi)
                    return base_fail_line(err, errlen, "%s: %s[%d] = %lld out of range %lld..%lld", opn, pd->list_name,
                                          (int)k, (long long)p->list[k], (long long)pd->lo, (long long)pd->hi);
            break;
        }
    }
    /* relations between parameters */
    if (op == OP_CLIP && ops_p2f(p->v[PM_LO]) > ops_p2f(p->v[PM_HI]))
        return base_fail_line(err, errlen, "clip: lo = %g is greater than hi = %g", (double)ops_p2f(p->v[PM_LO]),
                              (double)ops_p2f(p->v[PM_HI]));
    if (op == OP_SPLIT && p->n_list != 0 && p->n_list != p->v[PM_PARTS])
        return base_fail_line(err, errlen, "split: 'sizes' has %d entries but parts = %lld", (int)p->n_list,
                              (long long)p->v[PM_PARTS]);
    return 0;
}

int ops_infer(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int32_t *n_out,
              ops_shape *out, char *err, size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    *n_out = 0;
    if ((int)op < 0 || op >= OP_COUNT)
        return base_fail_line(err, errlen, "unknown op %d", (int)op);
    const ops_desc *d = &ops_table[op];
    int32_t max_in = d->max_in < 0 ? OPS_MAX_INPUTS : d->max_in;
    if (n_in < d->min_in || n_in > max_in) {
        if (d->min_in == max_in)
            return base_fail_line(err, errlen, "%s: %d input%s, expected %d", d->name, (int)n_in, n_in == 1 ? "" : "s",
                                  (int)d->min_in);
        return base_fail_line(err, errlen, "%s: %d input%s, expected %d..%d", d->name, (int)n_in, n_in == 1 ? "" : "s",
                              (int)d->min_in, (int)max_in);
    }
    char b[64];
    for (int32_t k = 0; k < n_in; k++) {
        if (in[k].rank < 0 || in[k].rank > OPS_MAX_DIMS)
            return base_fail_line(err, errlen, "%s: %s has rank %d, expected 0..%d", d->name,
                                  ops_in_name(op, k, b, sizeof b), (int)in[k].rank, OPS_MAX_DIMS);
        for (int32_t i = 0; i < in[k].rank; i++)
            if (in[k].dims[i] < 1)
                return base_fail_line(err, errlen, "%s: %s has dim %d = %lld, dims must be >= 1", d->name,
                                      ops_in_name(op, k, b, sizeof b), (int)i, (long long)in[k].dims[i]);
        if (ops_shape_numel(&in[k]) < 0)
            return base_fail_line(err, errlen, "%s: %s has too many elements (int64 overflow)", d->name,
                                  ops_in_name(op, k, b, sizeof b));
    }
    if (ops_params_check(op, p, err, errlen) < 0)
        return -1;
    ops_shape tmp[OPS_MAX_OUTPUTS];
    memset(tmp, 0, sizeof tmp);
    int32_t no = 0;
    if (d->shape(p, n_in, in, &no, tmp, err, errlen) < 0)
        return -1;
    for (int32_t k = 0; k < no; k++)
        if (ops_shape_numel(&tmp[k]) < 0)
            return base_fail_line(err, errlen, "%s: output %d has too many elements (int64 overflow)", d->name, (int)k);
    memcpy(out, tmp, sizeof(ops_shape) * (size_t)no);
    *n_out = no;
    return 0;
}

/* --- self-check ----------------------------------------------------------------------------- */

static int ops_param_in_domain(const ops_param_desc *pd, int64_t v) {
    ops_param_kind kind = ops_param_table[pd->key].kind;
    if (kind == OPS_PK_FLOAT)
        return v >= 0 && v <= (int64_t)UINT32_MAX && !isnan(ops_p2f(v));
    return v >= pd->lo && v <= pd->hi;
}

/* One problem of op nm on stderr; returns 1. */
static int ops_problem(const char *nm, const char *fmt, ...) BASE_PRINTF(2, 3);
static int ops_problem(const char *nm, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "ops: %s: ", nm);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* The window and the Z3 signature agree with the op's inputs and parameters. */
static int ops_check_window_z3(ops_type op, const char *nm) {
    const ops_desc *d = &ops_table[op];
    const ops_z3_sig *z = &d->z3sig;
    int n = 0;
    if (d->window == OPS_WIN_KERNEL && (d->min_in < 2 || !(d->kernel_input_mask & 0x2)))
        n += ops_problem(nm, "a kernel window needs input 1 to be a kernel");
    if (d->window == OPS_WIN_PARAMS && (!ops_param_desc_of(op, PM_KH) || !ops_param_desc_of(op, PM_KW)))
        n += ops_problem(nm, "a parameter window needs the parameters kh and kw");
    if (!d->z3) {
        if (z->n_t || z->n_args || z->per_output || z->per_rank)
            n += ops_problem(nm, "a Z3 signature without a Z3 symbol");
        return n;
    }
    if (z->n_t < 0 || z->n_t < d->min_in || (d->max_in >= 0 && z->n_t > d->max_in))
        n += ops_problem(nm, "Z3 function of %d tensor arguments for %d..%d inputs", (int)z->n_t, (int)d->min_in,
                         (int)d->max_in);
    if (z->n_args < 0 || z->n_args > OPS_Z3_MAX_ARGS || (z->per_output && z->per_rank) || z->per_output < 0 ||
        z->per_output > OPS_MAX_OUTPUTS || z->per_rank < 0 || z->per_rank > OPS_Z3_MAX_ARGS)
        return n + ops_problem(nm, "bad Z3 signature");
    for (int32_t i = 0; i < z->n_args; i++) {
        const ops_z3_arg *a = &z->args[i];
        if (!ops_param_desc_of(op, a->key))
            n += ops_problem(nm, "Z3 argument %d is parameter '%s', which the op does not take", (int)i,
                             ops_param_table[a->key].name);
        if ((a->kind == OPS_Z3_PAD) != (a->key == PM_PAD) ||
            (a->kind == OPS_Z3_KEY && a->key == PM_LIST) ||
            (a->kind != OPS_Z3_KEY && a->kind != OPS_Z3_PAD && a->key != PM_LIST))
            n += ops_problem(nm, "Z3 argument %d: its kind does not fit parameter '%s'", (int)i,
                             ops_param_table[a->key].name);
        if ((a->kind == OPS_Z3_LIST) != (z->per_rank > 0))
            n += ops_problem(nm, "Z3 list entries as arguments go with a family per list length");
    }
    return n;
}

/* The ONNX attributes name parameters of the op. */
static int ops_check_onnx(ops_type op, const char *nm) {
    const ops_onnx *o = &ops_table[op].onnx;
    int n = 0;
    for (int32_t i = 0; i < OPS_ONNX_MAX_ATTRS && o->attrs[i].name; i++)
        if (!o->op || !ops_param_desc_of(op, o->attrs[i].key))
            n += ops_problem(nm, "ONNX attribute '%s' is not a parameter of the op", o->attrs[i].name);
    return n;
}

int ops_table_check(int verbose) {
    int problems = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        const ops_desc *d = &ops_table[op];
        const char *nm = d->name ? d->name : "?";
#define OPS_PROBLEM(...) (fprintf(stderr, "ops: %s: ", nm), fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), problems++)
        if (!d->name)
            OPS_PROBLEM("op %d has no name", op);
        if (!d->shape)
            OPS_PROBLEM("no shape function");
        if (!d->cpu)
            OPS_PROBLEM("no CPU reference");
        if (!d->flops)
            OPS_PROBLEM("no FLOP count");
        if (d->gen && !d->fp)
            OPS_PROBLEM("in the generation set but no fingerprint semantics");
        if (d->min_in < 0 || (d->max_in >= 0 && d->max_in < d->min_in) || d->max_in > OPS_MAX_INPUTS)
            OPS_PROBLEM("bad input counts %d..%d", (int)d->min_in, (int)d->max_in);
        if (d->n_params < 0 || d->n_params > OPS_MAX_OP_PARAMS) {
            OPS_PROBLEM("%d parameters, at most %d", (int)d->n_params, OPS_MAX_OP_PARAMS);
            continue;
        }
        if (d->n_out == -1 ? !ops_param_desc_of((ops_type)op, PM_PARTS) : (d->n_out < 1 || d->n_out > OPS_MAX_OUTPUTS))
            OPS_PROBLEM("bad output count %d", (int)d->n_out);
        for (int32_t i = 0; i < d->n_params; i++) {
            const ops_param_desc *pd = &d->params[i];
            if ((int)pd->key < 0 || pd->key >= PM_COUNT) {
                OPS_PROBLEM("parameter %d has key %d", (int)i, (int)pd->key);
                continue;
            }
            const char *pn = ops_param_table[pd->key].name;
            for (int32_t j = 0; j < i; j++)
                if (d->params[j].key == pd->key)
                    OPS_PROBLEM("parameter '%s' declared twice", pn);
            if (pd->key == PM_LIST && !pd->list_name)
                OPS_PROBLEM("list parameter without a name");
            if (!pd->required && pd->key != PM_LIST && !ops_param_in_domain(pd, pd->def))
                OPS_PROBLEM("default of '%s' outside its domain", pn);
            if (pd->n_gen < 0 || pd->n_gen > 8)
                OPS_PROBLEM("parameter '%s' has %d generator values", pn, (int)pd->n_gen);
            for (int32_t k = 0; k < pd->n_gen && k < 8; k++)
                if (!ops_param_in_domain(pd, pd->gen[k]))
                    OPS_PROBLEM("generator value %lld of '%s' outside its domain", (long long)pd->gen[k], pn);
        }
        problems += ops_check_window_z3((ops_type)op, nm) + ops_check_onnx((ops_type)op, nm);
        /* an activation op is unary, named as its activation (rewrite.c finds it by the name) */
        if ((int)d->act < 0 || d->act >= OPS_ACT_COUNT ||
            (d->act != OPS_ACT_NONE && (d->min_in != 1 || d->max_in != 1 || d->n_out != 1 || d->n_params ||
                                        !d->name || strcmp(d->name, ops_act_names[d->act]))))
            OPS_PROBLEM("activation %d does not fit the op", (int)d->act);
        /* a view has one whole: input 0 of a one-input op, or the one output */
        if ((d->view && (d->min_in != 1 || d->max_in != 1)) || (d->view_in && d->n_out != 1))
            OPS_PROBLEM("a view that does not fit the op's inputs and outputs");
        /* an epilogue operation combines input 0 with input 1 into the one output */
        if ((int)d->epi < 0 || d->epi >= OPS_EPI_COUNT ||
            (d->epi != OPS_EPI_NONE && (d->min_in != 2 || d->max_in != 2 || d->n_out != 1)))
            OPS_PROBLEM("epilogue operation %d does not fit the op", (int)d->epi);
        if (verbose) {
            if (!ops_cuda[op])
                fprintf(stderr, "ops: %s: no CUDA kernel registered (optional)\n", nm);
            if (!d->z3)
                fprintf(stderr, "ops: %s: no Z3 symbol (optional)\n", nm);
        }
#undef OPS_PROBLEM
    }
    return problems;
}
