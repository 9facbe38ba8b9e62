/* test_cpu_kernels.c: the fast CPU kernels of conv2d, matmul and the pools (ops/ops_cpu_kernels.c:
 * packed GEMM, implicit im2col, direct depthwise conv, pools over padded rows) against naive loops
 * written here.
 *
 * The naive loops follow the references' stated arithmetic: each output summed in float over the
 * reduction index in ascending order from 0, one fmaf per step (conv: (c, kh, kw) over a
 * zero-padded input), then + bias, then the activation; pools over the real cells of each window,
 * row by row. The fast kernels must match them bit for bit on random shapes
 * (sizes 1, odd, around and beyond the register tile and the cache blocks; groups, depthwise,
 * channel multipliers, strides, padding modes, dilation; batch broadcasting), for 1, 2 and 3
 * OpenMP threads and for each instruction-set build the CPU can run; and with NaN, infinities
 * and signed zeros in the inputs.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "test.h"

static uint64_t rng_next(uint64_t *st) { /* splitmix64 */
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t rng_int(uint64_t *st, int64_t lo, int64_t hi) { /* in [lo, hi] */
    return lo + (int64_t)(rng_next(st) % (uint64_t)(hi - lo + 1));
}

/* n uniform floats in [-1, 1); caller frees. */
static float *rand_buf(int64_t n, uint64_t seed) {
    float *b = malloc(sizeof(float) * (size_t)(n ? n : 1));
    uint64_t st = seed * 7919 + 3;
    for (int64_t i = 0; i < n; i++)
        b[i] = -1.0f + 2.0f * (float)((double)(rng_next(&st) >> 11) / 9007199254740992.0);
    return b;
}

/* Bit-equal, except that any NaN equals any NaN; prints the first mismatch. */
static int same_bits(const float *a, const float *b, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i]))
            continue;
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            fprintf(stderr, "%s: element %lld of %lld: %.9g vs %.9g\n", what, (long long)i, (long long)n,
                    (double)a[i], (double)b[i]);
            return 0;
        }
    }
    return 1;
}

/* Infer the output shape and run op's CPU reference with t threads; returns a malloc'd output. */
static float *run_op(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, const float *const *x,
                     int t, ops_shape *os) {
    char err[256];
    int32_t no = 0;
    if (ops_infer(op, p, n_in, in, &no, os, err, sizeof err) < 0) {
        fprintf(stderr, "%s: unexpected error: %s\n", ops_table[op].name, err);
        CHECK(0);
        return NULL;
    }
    int64_t n = ops_shape_numel(os);
    float *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        y[i] = NAN;
    ops_sig sig = {.op = op, .p = p, .n_in = n_in, .n_out = 1, .in = in, .out = os};
    int saved = omp_get_max_threads();
    omp_set_num_threads(t);
    ops_table[op].cpu(&sig, x, &y);
    omp_set_num_threads(saved);
    return y;
}

/* --- conv2d --------------------------------------------------------------------------------- */

static void naive_conv(const ops_shape *xs, const ops_shape *ws, const ops_params *p, const float *x,
                       const float *w, const float *bias, float *y) {
    ops_window win;
    CHECK(ops_window2d(OP_CONV2D, p, xs, ws, &win, NULL, 0) == 0);
    const int64_t N = xs->dims[0], C = xs->dims[1], H = xs->dims[2], W = xs->dims[3];
    const int64_t F = ws->dims[0], CG = ws->dims[1], KH = ws->dims[2], KW = ws->dims[3];
    const int64_t G = p->v[PM_GROUPS], FG = F / G;
    for (int64_t n = 0; n < N; n++)
        for (int64_t f = 0; f < F; f++)
            for (int64_t oh = 0; oh < win.oh; oh++)
                for (int64_t ow = 0; ow < win.ow; ow++) {
                    float acc = 0.0f;
                    for (int64_t c = 0; c < CG; c++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ih = oh * win.sh - win.pt + kh * win.dh;
                                int64_t iw = ow * win.sw - win.pl + kw * win.dw;
                                int64_t ci = (f / FG) * CG + c;
                                float xv = ih >= 0 && ih < H && iw >= 0 && iw < W ? x[((n * C + ci) * H + ih) * W + iw]
                                                                                  : 0.0f;
                                acc = fmaf(w[((f * CG + c) * KH + kh) * KW + kw], xv, acc);
                            }
                    float v = bias ? acc + bias[f] : acc;
                    y[((n * F + f) * win.oh + oh) * win.ow + ow] = ops_act_apply((ops_act)p->v[PM_ACT], v);
                }
}

/* One conv case: the reference with 1, 2 and 3 threads against the naive loop. */
static void conv_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t F, int64_t G, int64_t KH, int64_t KW,
                      const ops_params *p, int with_bias, uint64_t seed, const char *what) {
    ops_shape in[3] = {ops_shape_make(4, (int64_t[]){N, C, H, W}), ops_shape_make(4, (int64_t[]){F, C / G, KH, KW}),
                       ops_shape_make(1, (int64_t[]){F})};
    float *x = rand_buf(ops_shape_numel(&in[0]), seed), *w = rand_buf(ops_shape_numel(&in[1]), seed + 1);
    float *b = rand_buf(F, seed + 2);
    const float *xs[3] = {x, w, b};
    ops_shape os;
    char err[256];
    int32_t no;
    if (ops_infer(OP_CONV2D, p, with_bias ? 3 : 2, in, &no, &os, err, sizeof err) < 0) {
        fprintf(stderr, "%s: unexpected error: %s\n", what, err);
        CHECK(0);
    } else {
        int64_t n = ops_shape_numel(&os);
        float *want = malloc(sizeof(float) * (size_t)n);
        naive_conv(&in[0], &in[1], p, x, w, with_bias ? b : NULL, want);
        for (int t = 1; t <= 3; t++) {
            float *y = run_op(OP_CONV2D, p, with_bias ? 3 : 2, in, xs, t, &os);
            char msg[160];
            snprintf(msg, sizeof msg, "%s, %d threads", what, t);
            CHECK(y && same_bits(y, want, n, msg));
            free(y);
        }
        free(want);
    }
    free(x);
    free(w);
    free(b);
}

static void test_conv_random(void) {
    uint64_t st = 42;
    for (int k = 0; k < 120; k++) {
        ops_params p;
        ops_params_default(OP_CONV2D, &p);
        int kind = k % 4; /* 0 dense, 1 grouped, 2 depthwise, 3 depthwise with a channel multiplier */
        int64_t G = kind == 0 ? 1 : kind == 1 ? rng_int(&st, 2, 4) : rng_int(&st, 1, 9);
        int64_t CG = kind >= 2 ? 1 : rng_int(&st, 1, 7), FG = kind == 2 ? 1 : rng_int(&st, 1, 14);
        int64_t KH = rng_int(&st, 1, 5), KW = rng_int(&st, 1, 5);
        p.v[PM_DIL_H] = rng_int(&st, 1, 2);
        p.v[PM_DIL_W] = rng_int(&st, 1, 2);
        p.v[PM_STRIDE_H] = rng_int(&st, 1, 3);
        p.v[PM_STRIDE_W] = rng_int(&st, 1, 3);
        int64_t H = (KH - 1) * p.v[PM_DIL_H] + rng_int(&st, 1, 17), W = (KW - 1) * p.v[PM_DIL_W] + rng_int(&st, 1, 40);
        int mode = (int)rng_int(&st, 0, 2);
        p.v[PM_PAD] = mode == 0 ? OPS_PAD_EXPLICIT : mode == 1 ? OPS_PAD_SAME : OPS_PAD_VALID;
        if (mode == 0) {
            p.v[PM_PAD_T] = rng_int(&st, 0, 2);
            p.v[PM_PAD_L] = rng_int(&st, 0, 2);
            p.v[PM_PAD_B] = rng_int(&st, 0, 2);
            p.v[PM_PAD_R] = rng_int(&st, 0, 2);
        }
        p.v[PM_GROUPS] = G;
        p.v[PM_ACT] = rng_int(&st, 0, OPS_ACT_COUNT - 1);
        char what[160];
        snprintf(what, sizeof what,
                 "conv case %d (N1 C%lld H%lld W%lld F%lld G%lld K%lldx%lld s%lldx%lld d%lldx%lld pad %d)",
                 k, (long long)(CG * G), (long long)H, (long long)W, (long long)(FG * G), (long long)G, (long long)KH,
                 (long long)KW, (long long)p.v[PM_STRIDE_H], (long long)p.v[PM_STRIDE_W], (long long)p.v[PM_DIL_H],
                 (long long)p.v[PM_DIL_W], mode);
        conv_case(k % 5 == 0 ? 2 : 1, CG * G, H, W, FG * G, G, KH, KW, &p, k % 3 != 0, 1000 + (uint64_t)k, what);
    }
}

/* Shapes that cross the GEMM's cache blocks (K > 256, M > 144, N > 256) and real layers. */
static void test_conv_large(void) {
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    conv_case(1, 300, 17, 17, 150, 1, 1, 1, &p, 1, 11, "1x1 conv 300->150 on 17x17");
    p.v[PM_PAD] = OPS_PAD_SAME;
    p.v[PM_ACT] = OPS_ACT_RELU;
    conv_case(1, 64, 28, 28, 64, 1, 3, 3, &p, 1, 12, "3x3 conv 64->64 on 28x28, same, relu");
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = 2;
    conv_case(2, 3, 45, 45, 32, 1, 7, 7, &p, 1, 13, "7x7/2 stem on 2x3x45x45");
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = 1;
    p.v[PM_GROUPS] = 32;
    conv_case(1, 128, 14, 14, 128, 32, 3, 3, &p, 0, 14, "grouped 3x3, 32 groups of 4");
    p.v[PM_GROUPS] = 96;
    conv_case(1, 96, 42, 42, 96, 96, 5, 5, &p, 1, 15, "depthwise 5x5 on 96x42x42");
    p.v[PM_ACT] = OPS_ACT_HARDSWISH; /* MobileNetV3's depthwise layers */
    p.v[PM_GROUPS] = 72;
    conv_case(1, 72, 28, 28, 72, 72, 3, 3, &p, 1, 17, "depthwise 3x3 on 72x28x28, hardswish");
    p.v[PM_ACT] = OPS_ACT_SILU; /* EfficientNet's */
    p.v[PM_GROUPS] = 40;
    conv_case(1, 40, 14, 14, 40, 40, 5, 5, &p, 0, 18, "depthwise 5x5 on 40x14x14, silu");
    p.v[PM_ACT] = OPS_ACT_RELU6;
    p.v[PM_GROUPS] = 1;
    conv_case(1, 32, 14, 14, 48, 1, 1, 1, &p, 1, 19, "1x1 conv 32->48 on 14x14, relu6");
    p.v[PM_ACT] = OPS_ACT_RELU;
    p.v[PM_GROUPS] = 96;
    p.v[PM_GROUPS] = 1;
    conv_case(1, 1, 1, 600, 1, 1, 1, 1, &p, 1, 16, "1x600 row, one channel");
}

/* NaN, infinities and signed zeros flow through exactly as in the naive loop. */
static void test_conv_special(void) {
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    p.v[PM_PAD] = OPS_PAD_SAME;
    ops_shape in[2] = {ops_shape_make(4, (int64_t[]){1, 2, 9, 21}), ops_shape_make(4, (int64_t[]){7, 2, 3, 3})};
    float *x = rand_buf(ops_shape_numel(&in[0]), 77), *w = rand_buf(ops_shape_numel(&in[1]), 78);
    for (int64_t i = 0; i < ops_shape_numel(&in[0]); i += 5)
        x[i] = -0.0f;
    x[30] = NAN;
    x[200] = INFINITY;
    x[301] = -INFINITY;
    w[5] = -0.0f;
    const float *xs[2] = {x, w};
    ops_shape os;
    float *y = run_op(OP_CONV2D, &p, 2, in, xs, 2, &os);
    float *want = malloc(sizeof(float) * (size_t)ops_shape_numel(&os));
    naive_conv(&in[0], &in[1], &p, x, w, NULL, want);
    CHECK(y && same_bits(y, want, ops_shape_numel(&os), "conv special values"));
    int nans = 0;
    for (int64_t i = 0; y && i < ops_shape_numel(&os); i++)
        nans += isnan(y[i]);
    CHECK(nans > 0); /* the NaN reached its windows */
    free(y);
    free(want);
    free(x);
    free(w);
}

/* --- matmul --------------------------------------------------------------------------------- */

/* A (ba, m, k) and B (bb, k, n) with ba, bb in {1, nb}: C (nb, m, n). */
static void naive_matmul(int64_t nb, int64_t ba, int64_t bb, int64_t m, int64_t k, int64_t n, const float *a,
                         const float *b, const float *bias, ops_act act, float *c) {
    for (int64_t q = 0; q < nb; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                const float *aq = a + (ba == 1 ? 0 : q) * m * k, *bq = b + (bb == 1 ? 0 : q) * k * n;
                float acc = 0.0f;
                for (int64_t p = 0; p < k; p++)
                    acc = fmaf(aq[i * k + p], bq[p * n + j], acc);
                c[(q * m + i) * n + j] = ops_act_apply(act, bias ? acc + bias[j] : acc);
            }
}

static void matmul_case(int64_t nb, int64_t ba, int64_t bb, int64_t m, int64_t k, int64_t n, int with_bias,
                        ops_act act, uint64_t seed) {
    ops_shape in[3] = {ops_shape_make(3, (int64_t[]){ba, m, k}), ops_shape_make(3, (int64_t[]){bb, k, n}),
                       ops_shape_make(1, (int64_t[]){n})};
    float *a = rand_buf(ba * m * k, seed), *b = rand_buf(bb * k * n, seed + 1), *bias = rand_buf(n, seed + 2);
    if (m * k > 3)
        a[3] = -0.0f;
    const float *xs[3] = {a, b, bias};
    ops_params p;
    ops_params_default(OP_MATMUL, &p);
    p.v[PM_ACT] = act;
    float *want = malloc(sizeof(float) * (size_t)(nb * m * n));
    naive_matmul(nb, ba, bb, m, k, n, a, b, with_bias ? bias : NULL, act, want);
    for (int t = 1; t <= 3; t++) {
        ops_shape os;
        float *y = run_op(OP_MATMUL, &p, with_bias ? 3 : 2, in, xs, t, &os);
        char msg[160];
        snprintf(msg, sizeof msg, "matmul (%lld|%lld) x %lld x %lld x %lld, %d threads", (long long)ba, (long long)bb,
                 (long long)m, (long long)k, (long long)n, t);
        CHECK(y && ops_shape_numel(&os) == nb * m * n && same_bits(y, want, nb * m * n, msg));
        free(y);
    }
    free(want);
    free(a);
    free(b);
    free(bias);
}

static void test_matmul_random(void) {
    uint64_t st = 7;
    static const int64_t sizes[] = {1, 2, 5, 6, 7, 13, 16, 17, 31, 33, 64, 145, 257, 300};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    for (int k = 0; k < 80; k++) {
        int64_t m = sizes[rng_int(&st, 0, ns - 1)], kk = sizes[rng_int(&st, 0, ns - 1)];
        int64_t n = sizes[rng_int(&st, 0, ns - 1)], nb = rng_int(&st, 1, 3);
        if (m * kk * n > 3000000) /* keep the naive loops quick under the sanitizers */
            m = 3;
        int64_t ba = k % 3 == 1 ? 1 : nb, bb = k % 3 == 2 ? 1 : nb;
        matmul_case(nb, ba, bb, m, kk, n, k % 2, (ops_act)rng_int(&st, 0, OPS_ACT_COUNT - 1), 500 + (uint64_t)k);
    }
    matmul_case(1, 1, 1, 128, 768, 300, 1, OPS_ACT_GELU, 1); /* a BERT-like layer: K chunks, N blocks */
    matmul_case(12, 12, 12, 37, 64, 37, 0, OPS_ACT_NONE, 2); /* attention-like batches */
    matmul_case(1, 1, 1, 128, 96, 300, 1, OPS_ACT_GELU_TANH, 3); /* GPT-2's MLP, smaller */
    matmul_case(1, 1, 1, 49, 64, 40, 1, OPS_ACT_SILU, 4);
}

/* --- pools ---------------------------------------------------------------------------------- */

static void naive_pool(const ops_shape *xs, const ops_params *p, int is_max, const float *x, float *y) {
    ops_window win;
    CHECK(ops_window2d(is_max ? OP_MAXPOOL2D : OP_AVGPOOL2D, p, xs, NULL, &win, NULL, 0) == 0);
    const int64_t NC = xs->dims[0] * xs->dims[1], H = xs->dims[2], W = xs->dims[3];
    for (int64_t c = 0; c < NC; c++)
        for (int64_t oh = 0; oh < win.oh; oh++)
            for (int64_t ow = 0; ow < win.ow; ow++) {
                float v = 0.0f;
                int first = 1;
                int64_t cnt = 0;
                for (int64_t i = 0; i < win.kh; i++)
                    for (int64_t j = 0; j < win.kw; j++) {
                        int64_t ih = oh * win.sh - win.pt + i, iw = ow * win.sw - win.pl + j;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                            continue;
                        float u = x[(c * H + ih) * W + iw];
                        cnt++;
                        if (!is_max)
                            v += u;
                        else if (first || u > v || u != u)
                            v = u;
                        first = 0;
                    }
                if (!is_max)
                    v = v / (float)(p->v[PM_COUNT_PAD] ? win.kh * win.kw : cnt);
                y[(c * win.oh + oh) * win.ow + ow] = v;
            }
}

static void test_pools(void) {
    uint64_t st = 99;
    for (int k = 0; k < 80; k++) {
        int is_max = k % 2;
        ops_type op = is_max ? OP_MAXPOOL2D : OP_AVGPOOL2D;
        ops_params p;
        ops_params_default(op, &p);
        p.v[PM_KH] = rng_int(&st, 1, 5);
        p.v[PM_KW] = rng_int(&st, 1, 5);
        p.v[PM_STRIDE_H] = rng_int(&st, 1, 3);
        p.v[PM_STRIDE_W] = rng_int(&st, 1, 3);
        int mode = (int)rng_int(&st, 0, 2);
        p.v[PM_PAD] = mode == 0 ? OPS_PAD_EXPLICIT : mode == 1 ? OPS_PAD_SAME : OPS_PAD_VALID;
        if (mode == 0) {
            p.v[PM_PAD_T] = rng_int(&st, 0, (p.v[PM_KH] - 1) / 2);
            p.v[PM_PAD_L] = rng_int(&st, 0, (p.v[PM_KW] - 1) / 2);
            p.v[PM_PAD_B] = rng_int(&st, 0, (p.v[PM_KH] - 1) / 2);
            p.v[PM_PAD_R] = rng_int(&st, 0, (p.v[PM_KW] - 1) / 2);
        }
        if (!is_max)
            p.v[PM_COUNT_PAD] = rng_int(&st, 0, 1);
        int64_t xd[4] = {rng_int(&st, 1, 2), rng_int(&st, 1, 9), p.v[PM_KH] + rng_int(&st, 0, 20),
                         p.v[PM_KW] + rng_int(&st, 0, 30)};
        ops_shape xs = ops_shape_make(4, xd);
        float *x = rand_buf(ops_shape_numel(&xs), 3000 + (uint64_t)k);
        if (k % 8 == 1)
            x[0] = NAN;
        if (k % 8 == 3)
            x[ops_shape_numel(&xs) - 1] = -INFINITY;
        if (k % 8 == 5)
            for (int64_t i = 0; i < ops_shape_numel(&xs); i += 3)
                x[i] = -0.0f;
        const float *xx[1] = {x};
        ops_shape os;
        char err[256];
        int32_t no;
        if (ops_infer(op, &p, 1, &xs, &no, &os, err, sizeof err) < 0) {
            fprintf(stderr, "pool case %d: unexpected error: %s\n", k, err);
            CHECK(0);
            free(x);
            continue;
        }
        float *want = malloc(sizeof(float) * (size_t)ops_shape_numel(&os));
        naive_pool(&xs, &p, is_max, x, want);
        for (int t = 1; t <= 3; t += 2) {
            float *y = run_op(op, &p, 1, &xs, xx, t, &os);
            char msg[160];
            snprintf(msg, sizeof msg, "%s case %d (%lldx%lld k%lldx%lld s%lldx%lld pad %d), %d threads",
                     ops_table[op].name, k, (long long)xs.dims[2], (long long)xs.dims[3], (long long)p.v[PM_KH],
                     (long long)p.v[PM_KW], (long long)p.v[PM_STRIDE_H], (long long)p.v[PM_STRIDE_W], mode, t);
            CHECK(y && same_bits(y, want, ops_shape_numel(&os), msg));
            free(y);
        }
        free(want);
        free(x);
    }
    /* a large plane, so that the pool runs in parallel */
    ops_params p;
    ops_params_default(OP_MAXPOOL2D, &p);
    p.v[PM_KH] = p.v[PM_KW] = 3;
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = 2;
    p.v[PM_PAD] = OPS_PAD_SAME;
    ops_shape xs = ops_shape_make(4, (int64_t[]){1, 64, 56, 56}), os;
    float *x = rand_buf(ops_shape_numel(&xs), 4000);
    const float *xx[1] = {x};
    float *want = malloc(sizeof(float) * 64 * 28 * 28);
    naive_pool(&xs, &p, 1, x, want);
    float *y = run_op(OP_MAXPOOL2D, &p, 1, &xs, xx, 2, &os);
    CHECK(y && ops_shape_numel(&os) == 64 * 28 * 28 && same_bits(y, want, 64 * 28 * 28, "maxpool 64x56x56"));
    free(y);
    free(want);
    free(x);
}

int main(void) {
    /* every build of the kernels this CPU can run (TASC_CPU_ISA caps the choice): AVX-512,
     * AVX2 with FMA, the baseline; each must give the naive loops' bits */
    for (int isa = 2; isa >= 0; isa--) {
        char v[2] = {(char)('0' + isa), 0};
        setenv("TASC_CPU_ISA", v, 1);
        int failed = test_failed;
        test_pools();
        test_conv_random();
        test_conv_large();
        test_conv_special();
        test_matmul_random();
        if (test_failed != failed)
            fprintf(stderr, "failures above with TASC_CPU_ISA=%d\n", isa);
    }
    unsetenv("TASC_CPU_ISA");
    return TEST_REPORT();
}
