/* ops_cpu_kernels.c: the fast loops behind the CPU references of conv2d, matmul and the pools:
 * a packed, register-blocked SGEMM (matmul; conv2d reads B as an implicit im2col of its padded
 * input, never materialised), the direct depthwise conv, and window pooling over padded rows.
 *
 * GEMM: C = A B, then + bias, then the activation, for a list of independent problems of one size
 * (batch elements, conv groups). C is cut into blocks of at most GEMM_MC x GEMM_NC, the unit of
 * parallel work; per block, K runs in chunks of GEMM_KC in ascending order, the chunks of A and
 * B are packed into zero-padded strips of GEMM_MR rows / GEMM_NR columns, and a GEMM_MR x
 * GEMM_NR micro-kernel keeps its tile of C in registers (plain C the compiler vectorises; the
 * kernels are compiled per instruction set and picked at run time).
 * Invariant, the oracle's: every output is summed in ascending order of its reduction index
 * starting from 0.0f, one fused multiply-add (fmaf: one rounding) per step, then + bias, then
 * the activation; pools visit window cells row by row. Results therefore equal the naive loops'
 * bit for bit, whatever the thread count, the block sizes or the instruction set. Scratch
 * buffers are per thread and freed before returning; inputs and outputs belong to the caller.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "ops_impl.h"

#define GEMM_MR 6    /* rows of the register tile */
#define GEMM_NR 16   /* columns of the register tile: one AVX-512 or two AVX2 vectors */
#define GEMM_KC 256  /* k per packed chunk: a B strip (KC x NR) fits L1 */
#define GEMM_MC 144  /* most rows per block (a multiple of MR): the packed A chunk stays in L2 */
#define GEMM_NC 256  /* most columns per block (a multiple of NR): the packed B chunk stays in L2 */

#define GEMM_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Each kernel's body is compiled three times on x86-64 -- AVX-512, AVX2 with FMA, and the
 * baseline -- and picked per call from the CPU's features (never -march=native: the binary runs
 * anywhere). Every multiply-add is one correctly rounded fused multiply-add, so all three give
 * the same bits: hardware FMA in the first two, cpu_fmaf_soft in the baseline (no FMA there; it
 * is exact but scalar, about 1 GFLOP/s: a fallback for x86-64 CPUs older than AVX2 and FMA).
 * Other targets build the body once, with fmaf.
 * Bodies take a first argument soft: 1 for the baseline build. */
#define CPU_EXPAND(...) __VA_ARGS__
#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_VARIANTS(name, params, args) \
    __attribute__((target("avx512f"))) static void name##_avx512 params { name##_body(0, CPU_EXPAND args); } \
    __attribute__((target("avx2,fma"))) static void name##_avx2 params { name##_body(0, CPU_EXPAND args); } \
    static void name##_base params { name##_body(1, CPU_EXPAND args); }
#define CPU_CALL(isa, name, args) \
    do { \
        if ((isa) == 2) \
            name##_avx512 args; \
        else if ((isa) == 1) \
            name##_avx2 args; \
        else \
            name##_base args; \
    } while (0)
/* 2: AVX-512F, 1: AVX2 and FMA, 0: neither; the environment variable TASC_CPU_ISA (0, 1, 2) caps
 * it, so that tests can run every build on one machine. */
static int cpu_isa(void) {
    __builtin_cpu_init();
    int isa = 0;
    if (__builtin_cpu_supports("avx512f"))
        isa = 2;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        isa = 1;
    const char *cap = getenv("TASC_CPU_ISA");
    if (cap && cap[0] >= '0' && cap[0] <= '2' && !cap[1] && cap[0] - '0' < isa)
        isa = cap[0] - '0';
    return isa;
}
#else
#define CPU_VARIANTS(name, params, args) \
    static void name##_base params { name##_body(0, CPU_EXPAND args); }
#define CPU_CALL(isa, name, args) name##_base args
static int cpu_isa(void) { return 0; }
#endif

/* fmaf(a, b, c) without an FMA instruction, bit for bit: the product is exact in double; the
 * double sum is rounded to odd (nearest, then one ulp towards the exact value when inexact and
 * even), which leaves a correctly rounded result after the final rounding to float. NaN and
 * infinities pass through as in fmaf. */
static inline __attribute__((always_inline)) float cpu_fmaf_soft(float a, float b, float c) {
    const double p = (double)a * (double)b, cd = c, s = p + cd;
    const double bb = s - p, e = (p - (s - bb)) + (cd - bb); /* s + e = p + c exactly (TwoSum) */
    int64_t u;
    memcpy(&u, &s, sizeof u);
    /* inexact (e is neither zero nor NaN, as it is for an infinite or NaN s) and even: step */
    const int64_t fix = (int64_t)((e > 0.0 || e < 0.0) & !(u & 1));
    const int64_t dir = (e > 0.0) == (s > 0.0) ? 1 : -1;
    u += fix * dir;
    double r;
    memcpy(&r, &u, sizeof r);
    return (float)r;
}
#define CPU_FMA(soft, a, b, c) ((soft) ? cpu_fmaf_soft((a), (b), (c)) : fmaf((a), (b), (c)))

#define CPU_INLINE static inline __attribute__((always_inline))

static void *gemm_xalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        base_die("out of memory (%zu bytes) in the CPU GEMM", n);
    }
    return p;
}

/* A (i0.., p0..) of pr into dst: strips of MR rows, (p, r) of strip s at dst[s*kc*MR + p*MR + r];
 * rows past mc are zeros. */
CPU_INLINE void gemm_pack_a(const ops_gemm_prob *pr, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                            float *restrict dst) {
    const int64_t cs = pr->a_cs;
    for (int64_t s = 0; s < mc; s += GEMM_MR) {
        const int64_t rows = GEMM_MIN(GEMM_MR, mc - s);
        float *restrict d = dst + s * kc;
        if (rows == GEMM_MR && cs == 1) { /* the common case: six rows read side by side */
            const float *restrict a[GEMM_MR];
            for (int r = 0; r < GEMM_MR; r++)
                a[r] = pr->a + (i0 + s + r) * pr->a_rs + p0;
            for (int64_t p = 0; p < kc; p++)
                for (int r = 0; r < GEMM_MR; r++)
                    d[p * GEMM_MR + r] = a[r][p];
            continue;
        }
        for (int64_t r = 0; r < GEMM_MR; r++) {
            if (r >= rows) {
                for (int64_t p = 0; p < kc; p++)
                    d[p * GEMM_MR + r] = 0.0f;
                continue;
            }
            const float *a = pr->a + (i0 + s + r) * pr->a_rs + p0 * cs;
            for (int64_t p = 0; p < kc; p++)
                d[p * GEMM_MR + r] = a[p * cs];
        }
    }
}

/* B (p0.., j0..) of pr, strided, into dst: strips of NR columns, (p, q) of strip s at
 * dst[s*kc*NR + p*NR + q]; columns past nc are zeros. Rows of B are read in order. */
CPU_INLINE void gemm_pack_b_strided(const ops_gemm_prob *pr, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                                    float *restrict dst) {
    const int64_t full = nc / GEMM_NR * GEMM_NR, cs = pr->b_cs;
    for (int64_t p = 0; p < kc; p++) {
        const float *restrict b = pr->b + (p0 + p) * pr->b_rs + j0 * cs;
        for (int64_t s = 0; s < full; s += GEMM_NR) {
            float *restrict dp = dst + s * kc + p * GEMM_NR;
            if (cs == 1)
                for (int q = 0; q < GEMM_NR; q++)
                    dp[q] = b[s + q];
            else
                for (int q = 0; q < GEMM_NR; q++)
                    dp[q] = b[(s + q) * cs];
        }
        if (full < nc) {
            float *restrict dp = dst + full * kc + p * GEMM_NR;
            for (int64_t q = 0; q < GEMM_NR; q++)
                dp[q] = full + q < nc ? b[(full + q) * cs] : 0.0f;
        }
    }
}

/* B of a conv problem: B(p, j) = xp[c][oh*sh + kh*dh][ow*sw + kw*dw] for p = (c*KH + kh)*KW + kw
 * and j = oh*OW + ow, xp the padded input planes (CG, HP, WP) at pr->b. Same layout as above. */
CPU_INLINE void gemm_pack_b_conv(const ops_gemm_conv *cv, const ops_gemm_prob *pr, int64_t p0, int64_t kc,
                                 int64_t j0, int64_t nc, float *restrict dst) {
    const int64_t khw = cv->kh * cv->kw;
    for (int64_t s = 0; s < nc; s += GEMM_NR) {
        int64_t cols = GEMM_MIN(GEMM_NR, nc - s);
        int64_t off[GEMM_NR] = {0}; /* input offset of each column's window origin */
        int64_t oh = (j0 + s) / cv->ow, ow = (j0 + s) % cv->ow;
        for (int64_t q = 0; q < cols; q++) {
            off[q] = oh * cv->sh * cv->wp + ow * cv->sw;
            if (++ow == cv->ow) {
                ow = 0;
                oh++;
            }
        }
        /* one contiguous run of inputs: a stride-1 tile within one output row */
        const int run = cols == GEMM_NR && cv->sw == 1 && off[GEMM_NR - 1] - off[0] == GEMM_NR - 1;
        float *d = dst + s * kc;
        int64_t c = p0 / khw, r = p0 % khw, kh = r / cv->kw, kw = r % cv->kw;
        for (int64_t p = 0; p < kc; p++) {
            const float *restrict x = pr->b + c * cv->hp * cv->wp + kh * cv->dh * cv->wp + kw * cv->dw;
            float *restrict dp = d + p * GEMM_NR;
            if (run) {
                const float *restrict xr = x + off[0];
                for (int q = 0; q < GEMM_NR; q++)
                    dp[q] = xr[q];
            } else {
                for (int64_t q = 0; q < GEMM_NR; q++)
                    dp[q] = q < cols ? x[off[q]] : 0.0f;
            }
            if (++kw == cv->kw) {
                kw = 0;
                if (++kh == cv->kh) {
                    kh = 0;
                    c++;
                }
            }
        }
    }
}

/* c (MR x NR tile, row pitch ldc) = (first ? 0 : c) + sum over p < kc of a[p] (x) b[p], one fmaf
 * per element and step, p ascending. */
CPU_INLINE void gemm_micro(int soft, int64_t kc, const float *restrict a, const float *restrict b,
                           float *restrict c, int64_t ldc, int first) {
    float acc[GEMM_MR][GEMM_NR];
    for (int i = 0; i < GEMM_MR; i++)
        for (int j = 0; j < GEMM_NR; j++)
            acc[i][j] = first ? 0.0f : c[i * ldc + j];
    for (int64_t p = 0; p < kc; p++) {
        for (int i = 0; i < GEMM_MR; i++) {
            const float av = a[p * GEMM_MR + i];
#pragma omp simd
            for (int j = 0; j < GEMM_NR; j++)
                acc[i][j] = CPU_FMA(soft, av, b[p * GEMM_NR + j], acc[i][j]);
        }
    }
    for (int i = 0; i < GEMM_MR; i++)
        for (int j = 0; j < GEMM_NR; j++)
            c[i * ldc + j] = acc[i][j];
}

/* All tiles of one packed (mc x kc) by (kc x nc) chunk into C (row pitch ldc); edge tiles go
 * through a scratch tile so that only the mc x nc elements are read and written. */
CPU_INLINE void gemm_chunk(int soft, int64_t mc, int64_t nc, int64_t kc, const float *pa, const float *pb, float *c,
                           int64_t ldc, int first) {
    for (int64_t j = 0; j < nc; j += GEMM_NR) {
        int64_t cols = GEMM_MIN(GEMM_NR, nc - j);
        for (int64_t i = 0; i < mc; i += GEMM_MR) {
            int64_t rows = GEMM_MIN(GEMM_MR, mc - i);
            float *ct = c + i * ldc + j;
            if (rows == GEMM_MR && cols == GEMM_NR) {
                gemm_micro(soft, kc, pa + i * kc, pb + j * kc, ct, ldc, first);
                continue;
            }
            float tile[GEMM_MR * GEMM_NR] = {0};
            if (!first)
                for (int64_t r = 0; r < rows; r++)
                    memcpy(tile + r * GEMM_NR, ct + r * ldc, sizeof(float) * (size_t)cols);
            gemm_micro(soft, kc, pa + i * kc, pb + j * kc, tile, GEMM_NR, first);
            for (int64_t r = 0; r < rows; r++)
                memcpy(ct + r * ldc, tile + r * GEMM_NR, sizeof(float) * (size_t)cols);
        }
    }
}

/* One block of C: rows i0..i0+mc, columns j0..j0+nc of problem pr, K in chunks, then the
 * epilogue (bias, activation). pa, pb: packing buffers of mc x KC and KC x nc floats. */
CPU_INLINE void gemm_block_body(int soft, const ops_gemm_dims *d, const ops_gemm_prob *pr, int64_t i0, int64_t mc,
                                int64_t j0, int64_t nc, float *pa, float *pb) {
    const int64_t k = d->k;
    float *c = pr->c + i0 * pr->c_rs + j0;
    if (k == 0)
        for (int64_t i = 0; i < mc; i++)
            memset(c + i * pr->c_rs, 0, sizeof(float) * (size_t)nc);
    for (int64_t p0 = 0; p0 < k; p0 += GEMM_KC) {
        const int64_t kc = GEMM_MIN(GEMM_KC, k - p0);
        gemm_pack_a(pr, i0, mc, p0, kc, pa);
        if (d->conv)
            gemm_pack_b_conv(d->conv, pr, p0, kc, j0, nc, pb);
        else
            gemm_pack_b_strided(pr, p0, kc, j0, nc, pb);
        gemm_chunk(soft, mc, nc, kc, pa, pb, c, pr->c_rs, p0 == 0);
    }
    if (!pr->bias_m && !pr->bias_n && d->act == OPS_ACT_NONE)
        return;
    for (int64_t i = 0; i < mc; i++) {
        float *restrict ci = c + i * pr->c_rs;
        if (pr->bias_m) {
            const float bm = pr->bias_m[i0 + i];
            for (int64_t j = 0; j < nc; j++)
                ci[j] = ci[j] + bm;
        } else if (pr->bias_n) {
            const float *restrict bn = pr->bias_n + j0;
            for (int64_t j = 0; j < nc; j++)
                ci[j] = ci[j] + bn[j];
        }
        if (d->act == OPS_ACT_RELU) {
            for (int64_t j = 0; j < nc; j++)
                ci[j] = ci[j] < 0.0f ? 0.0f : ci[j]; /* as ops_act_apply: NaN passes through */
        } else if (d->act != OPS_ACT_NONE) {
            for (int64_t j = 0; j < nc; j++)
                ci[j] = ops_act_apply(d->act, ci[j]);
        }
    }
}
CPU_VARIANTS(gemm_block, (const ops_gemm_dims *d, const ops_gemm_prob *pr, int64_t i0, int64_t mc, int64_t j0,
                          int64_t nc, float *pa, float *pb), (d, pr, i0, mc, j0, nc, pa, pb))

/* Block sizes: the fewest blocks of at most max, of near-equal size rounded up to unit. */
static int64_t gemm_split(int64_t len, int64_t max, int64_t unit, int64_t *count) {
    int64_t nb = (len + max - 1) / max;
    if (nb < 1)
        nb = 1;
    int64_t sz = (len + nb - 1) / nb;
    sz = (sz + unit - 1) / unit * unit;
    *count = (len + sz - 1) / sz;
    return sz;
}

void ops_cpu_gemm(const ops_gemm_dims *d, const ops_gemm_prob *probs, int64_t nprob) {
    const int64_t m = d->m, n = d->n, k = d->k;
    if (m <= 0 || n <= 0 || nprob <= 0)
        return;
    /* blocks: at most GEMM_MC x GEMM_NC, narrower (to 64 columns), then lower (to 36 rows) while
     * there are fewer than four per thread, so that the threads share the work evenly; results do
     * not depend on the blocks */
    const int64_t want = 4 * (int64_t)omp_get_max_threads();
    int64_t nmb, nnb, mmax = GEMM_MC, nmax = GEMM_NC;
    int64_t mcb = gemm_split(m, mmax, GEMM_MR, &nmb), ncb = gemm_split(n, nmax, GEMM_NR, &nnb);
    while (nprob * nmb * nnb < want && (nmax > 64 || mmax > 48)) {
        if (nmax > 64)
            nmax /= 2;
        else
            mmax /= 2;
        mcb = gemm_split(m, mmax, GEMM_MR, &nmb);
        ncb = gemm_split(n, nmax, GEMM_NR, &nnb);
    }
    const int64_t kcb = k < 1 ? 1 : GEMM_MIN(k, GEMM_KC), total = nprob * nmb * nnb;
    const int64_t work = nprob * m * n * (k + 1);
    const int isa = cpu_isa();
#pragma omp parallel if (work > 524288 && total > 1)
    {
        float *pa = gemm_xalloc(sizeof(float) * (size_t)(mcb * kcb));
        float *pb = gemm_xalloc(sizeof(float) * (size_t)(ncb * kcb));
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < total; t++) {
            const int64_t jb = t % nnb, ib = (t / nnb) % nmb;
            const int64_t i0 = ib * mcb, j0 = jb * ncb;
            CPU_CALL(isa, gemm_block,
                     (d, &probs[t / (nnb * nmb)], i0, GEMM_MIN(mcb, m - i0), j0, GEMM_MIN(ncb, n - j0), pa, pb));
        }
        free(pa);
        free(pb);
    }
}

/* y[j] = act(a[j] + b) (without the add when !has_bias) for j < n; none and relu inline. */
CPU_INLINE void cpu_store_act(float *restrict y, const float *restrict a, int has_bias, float b, ops_act act,
                              int64_t n) {
    if (act == OPS_ACT_NONE) {
        for (int64_t j = 0; j < n; j++)
            y[j] = has_bias ? a[j] + b : a[j];
    } else if (act == OPS_ACT_RELU) {
        for (int64_t j = 0; j < n; j++) {
            float v = has_bias ? a[j] + b : a[j];
            y[j] = v < 0.0f ? 0.0f : v; /* as ops_act_apply: NaN passes through */
        }
    } else {
        for (int64_t j = 0; j < n; j++)
            y[j] = ops_act_apply(act, has_bias ? a[j] + b : a[j]);
    }
}

/* --- depthwise conv --------------------------------------------------------------------------- */

#define DW_TW 512 /* output columns per row chunk */

/* acc[j] = fma(wv, x[j*sw], acc[j]) for j < n. */
CPU_INLINE void dw_madd(int soft, float *restrict acc, float wv, const float *restrict x, int64_t sw, int64_t n) {
    if (sw == 1) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            acc[j] = CPU_FMA(soft, wv, x[j], acc[j]);
    } else {
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            acc[j] = CPU_FMA(soft, wv, x[j * sw], acc[j]);
    }
}

/* Output rows [r0, r1) of the flattened (planes * oh) rows. */
CPU_INLINE void dw_rows_body(int soft, const ops_gemm_conv *cv, int64_t oh, int64_t r0, int64_t r1, const float *xp,
                             const float *w, const float *bias, int64_t C, ops_act act, float *y) {
    const int64_t khw = cv->kh * cv->kw;
    float acc[DW_TW];
    for (int64_t r = r0; r < r1; r++) {
        const int64_t pl = r / oh, h = r % oh, c = pl % C;
        const float *xpl = xp + pl * cv->hp * cv->wp, *wc = w + c * khw;
        for (int64_t j0 = 0; j0 < cv->ow; j0 += DW_TW) {
            const int64_t n = GEMM_MIN(DW_TW, cv->ow - j0);
            for (int64_t j = 0; j < n; j++)
                acc[j] = 0.0f;
            for (int64_t kh = 0; kh < cv->kh; kh++) {
                const float *xr = xpl + (h * cv->sh + kh * cv->dh) * cv->wp + j0 * cv->sw;
                for (int64_t kw = 0; kw < cv->kw; kw++)
                    dw_madd(soft, acc, wc[kh * cv->kw + kw], xr + kw * cv->dw, cv->sw, n);
            }
            cpu_store_act(y + r * cv->ow + j0, acc, bias != NULL, bias ? bias[c] : 0.0f, act, n);
        }
    }
}

CPU_VARIANTS(dw_rows, (const ops_gemm_conv *cv, int64_t oh, int64_t r0, int64_t r1, const float *xp, const float *w,
                       const float *bias, int64_t C, ops_act act, float *y),
             (cv, oh, r0, r1, xp, w, bias, C, act, y))

/* Stride 1: planes [p0, p1) whole, each output plane flattened with the padded input's row pitch
 * wp (output (r, c) at q = r*wp + c reads the input at q + kh*dh*wp + kw*dw), so every tap is one
 * long multiply-add over the plane; the wp - ow columns per row that are not outputs are computed
 * and dropped. acc: (oh-1)*wp + ow floats. */
CPU_INLINE void dw_planes_body(int soft, const ops_gemm_conv *cv, int64_t oh, int64_t p0, int64_t p1,
                               const float *xp, const float *w, const float *bias, int64_t C, ops_act act, float *y,
                               float *acc) {
    const int64_t khw = cv->kh * cv->kw, q = (oh - 1) * cv->wp + cv->ow;
    for (int64_t pl = p0; pl < p1; pl++) {
        const int64_t c = pl % C;
        const float *xpl = xp + pl * cv->hp * cv->wp, *wc = w + c * khw;
        for (int64_t j = 0; j < q; j++)
            acc[j] = 0.0f;
        for (int64_t kh = 0; kh < cv->kh; kh++)
            for (int64_t kw = 0; kw < cv->kw; kw++)
                dw_madd(soft, acc, wc[kh * cv->kw + kw], xpl + kh * cv->dh * cv->wp + kw * cv->dw, 1, q);
        for (int64_t r = 0; r < oh; r++)
            cpu_store_act(y + (pl * oh + r) * cv->ow, acc + r * cv->wp, bias != NULL, bias ? bias[c] : 0.0f, act,
                          cv->ow);
    }
}
CPU_VARIANTS(dw_planes, (const ops_gemm_conv *cv, int64_t oh, int64_t p0, int64_t p1, const float *xp, const float *w,
                         const float *bias, int64_t C, ops_act act, float *y, float *acc),
             (cv, oh, p0, p1, xp, w, bias, C, act, y, acc))

void ops_cpu_dwconv(const ops_gemm_conv *cv, int64_t planes, int64_t oh, const float *xp, const float *w,
                    const float *bias, int64_t C, ops_act act, float *y) {
    const int64_t rows = planes * oh, work = rows * cv->ow * cv->kh * cv->kw;
    const int isa = cpu_isa();
    if (cv->sh == 1 && cv->sw == 1) {
#pragma omp parallel if (work > 262144 && planes > 1)
        {
            float *acc = gemm_xalloc(sizeof(float) * (size_t)(oh * cv->wp));
#pragma omp for schedule(dynamic, 1)
            for (int64_t t = 0; t < planes; t += 2)
                CPU_CALL(isa, dw_planes, (cv, oh, t, GEMM_MIN(planes, t + 2), xp, w, bias, C, act, y, acc));
            free(acc);
        }
        return;
    }
    const int64_t chunk = 8, nch = (rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 4) if (work > 262144)
    for (int64_t t = 0; t < nch; t++)
        CPU_CALL(isa, dw_rows, (cv, oh, t * chunk, GEMM_MIN(rows, (t + 1) * chunk), xp, w, bias, C, act, y));
}

/* --- pools ---------------------------------------------------------------------------------- */

/* One output row of a pool over a padded plane: y[j] = op over the window cells (i, q), rows in
 * order, of xr[i*wp + j*sw + q], j < ow; padding cells hold the op's identity (0 for the sum,
 * -inf for the max), which leaves every result as over the real cells alone. */
CPU_INLINE void pool_row(const float *restrict xr, int64_t wp, int64_t kh, int64_t kw, int64_t sw, int64_t ow,
                         int is_max, float *restrict acc) {
    for (int64_t j = 0; j < ow; j++)
        acc[j] = is_max ? -INFINITY : 0.0f;
    for (int64_t i = 0; i < kh; i++)
        for (int64_t q = 0; q < kw; q++) {
            const float *restrict x = xr + i * wp + q;
            if (is_max) {
#pragma omp simd
                for (int64_t j = 0; j < ow; j++) {
                    float u = x[j * sw], v = acc[j];
                    acc[j] = (u > v || u != u) ? u : v; /* a NaN wins and stays */
                }
            } else {
#pragma omp simd
                for (int64_t j = 0; j < ow; j++)
                    acc[j] += x[j * sw];
            }
        }
}

CPU_INLINE void pool_planes_body(int soft, const ops_pool *pp, int64_t p0, int64_t p1, const float *x, float *y,
                                 float *buf, float *acc) {
    const int64_t H = pp->h, W = pp->w, HP = pp->hp, WP = pp->wp, OW = pp->ow;
    const float fill = pp->is_max ? -INFINITY : 0.0f;
    for (int64_t pl = p0; pl < p1; pl++) {
        /* the padded plane: pt rows and pl columns of fill before the data, the rest after */
        const float *xc = x + pl * H * W;
        for (int64_t r = 0; r < HP; r++) {
            float *b = buf + r * WP;
            const int64_t h = r - pp->pt;
            if (h < 0 || h >= H) {
                for (int64_t j = 0; j < WP; j++)
                    b[j] = fill;
                continue;
            }
            for (int64_t j = 0; j < pp->pl; j++)
                b[j] = fill;
            memcpy(b + pp->pl, xc + h * W, sizeof(float) * (size_t)W);
            for (int64_t j = pp->pl + W; j < WP; j++)
                b[j] = fill;
        }
        /* stride 1: the whole plane at once, flattened with pitch WP (as in dw_planes_body) */
        const int flat = pp->sh == 1 && pp->sw == 1;
        if (flat)
            pool_row(buf, WP, pp->kh, pp->kw, 1, (pp->oh - 1) * WP + OW, pp->is_max, acc);
        for (int64_t oh = 0; oh < pp->oh; oh++) {
            float *yr = y + (pl * pp->oh + oh) * OW;
            const float *acr = acc;
            if (flat)
                acr = acc + oh * WP;
            else
                pool_row(buf + oh * pp->sh * WP, WP, pp->kh, pp->kw, pp->sw, OW, pp->is_max, acc);
            if (pp->is_max) {
                memcpy(yr, acr, sizeof(float) * (size_t)OW);
                continue;
            }
            /* the divisor: kh*kw, or the real cells of the window */
            const int64_t h0 = oh * pp->sh - pp->pt, hs = h0 < 0 ? 0 : h0, he = GEMM_MIN(h0 + pp->kh, H);
            for (int64_t j = 0; j < OW; j++) {
                int64_t cnt = pp->kh * pp->kw;
                if (!pp->count_pad) {
                    const int64_t w0 = j * pp->sw - pp->pl, ws = w0 < 0 ? 0 : w0, we = GEMM_MIN(w0 + pp->kw, W);
                    cnt = (he - hs) * (we - ws);
                }
                yr[j] = acr[j] / (float)cnt;
            }
        }
    }
}

CPU_VARIANTS(pool_planes, (const ops_pool *pp, int64_t p0, int64_t p1, const float *x, float *y, float *buf,
                           float *acc), (pp, p0, p1, x, y, buf, acc))

void ops_cpu_pool(const ops_pool *pp, int64_t planes, const float *x, float *y) {
    const int64_t work = planes * pp->oh * pp->ow * pp->kh * pp->kw;
    const int isa = cpu_isa();
#pragma omp parallel if (work > 262144 && planes > 1)
    {
        float *buf = gemm_xalloc(sizeof(float) * (size_t)(pp->hp * pp->wp));
        float *acc = gemm_xalloc(sizeof(float) * (size_t)(pp->hp * pp->wp)); /* >= (oh-1)*wp + ow */
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < planes; t += 4)
            CPU_CALL(isa, pool_planes, (pp, t, GEMM_MIN(planes, t + 4), x, y, buf, acc));
        free(buf);
        free(acc);
    }
}
