/* conv_3xtf32.cu: the convolution (groups 1) as an implicit GEMM on the tensor cores at FP32
 * accuracy (3xTF32, issue 17): y (F, N*OH*OW) = w (F, K = C*KH*KW) x col (K, N*OH*OW), the images
 * side by side as columns so that a 7x7 map at batch 32 fills tiles as a 56x56 one does. col is
 * never written: each k-tile's B rows are gathered from x by cp.async, zero-filled in the padding,
 * through a per-k table (offset in x, kh*dh, kw*dw) built once per plan; a 1x1, stride-1, unpadded
 * convolution with OH*OW % 4 == 0 reads four columns per 16-byte copy instead. Bias (per output
 * channel), an optional tensor of y's shape added after it (the runtime's residual fusion) and the
 * activation are applied on the way to a coalesced NCHW store through shared memory: one kernel where
 * the GEMM path runs im2col, the matmul and a bias pass (ops_conv.cu), and three times the FP32
 * rate of the SIMT kernels on the products. The split, the products and the A tile are the 3xTF32
 * matmul's (matmul_3xtf32.cuh), so are the accuracy and its caveats (bench/matmul/3xtf32.md).
 * Split-K for the deep reductions over few columns (a 7x7 map's 3x3, K = 4608): each k-slice
 * writes its raw partial tile to a workspace; the tile's last block to arrive sums the slices in
 * slice order (the same bits whatever the arrival order), adds bias, applies the activation and
 * stores, then resets the tile's counter.
 */
#include <stdlib.h>

#include "base.h"
#include "conv_3xtf32.h"
#include "matmul_3xtf32.cuh"

struct cv3_plan {
    cv3_shape s;
    int K, kpad;   /* C*KH*KW, rounded up to a whole k-tile */
    int4 *ktab;    /* (kpad): {c*H*W + kh*dh*W + kw*dw, kh*dh, kw*dw, 0}; past K, rows that never load */
    bool one;      /* 1x1, stride 1, no padding, OH*OW % 4 == 0: 16-byte column loads */
    int *counters; /* split-K arrivals per output tile (enough for the smallest tiles), 0 between runs */
};

struct cv_args {
    const float *x, *w, *bias, *add; /* add: (N, F, OH, OW) or NULL */
    float *y;
    const int4 *ktab;
    int C, H, W, F, K, OW, OHW, cols, sh, sw, pt, pl, act;
    bool vec_w; /* K % 4 == 0 and w 16-byte aligned: 16-byte copies of the weight tile */
    int split, k_chunk; /* k-slices (blockIdx.y), each k_chunk deep (a multiple of the k-tile) */
    float *ws;          /* split > 1: (split, F, cols) raw partials */
    int *counters;
};

/* Every k-tile is 32 deep (the table is padded to it); an invalid column or a padding row is
 * pushed this far out of the image, so that one unsigned compare per axis rejects it. */
#define CV_BK 32
#define CV_FAR (1 << 29)
#define CV_MAX_SPLIT 8 /* cv3_split_candidates offers 2, 4, 8 */

/* The B columns a thread loads in every k-tile, decoded once. Gathered (general): one column,
 * tid % BN, in rows tid / BN + i * (THREADS / BN): a warp's 4-byte copies of a row are 32
 * consecutive columns, 128 contiguous bytes at stride 1 (four columns per thread had each copy
 * instruction touch a quarter of every sector). One (1x1): four consecutive columns per 16-byte
 * copy, (tid % (BN/4)) * 4, in rows tid / (BN/4) + i * (THREADS / (BN/4)). */
struct cv_cols {
    int base;     /* n*C*H*W + ih0*W + iw0 (general); n*C*OHW + pix (one) */
    int ih0, iw0; /* the input cell of tap (0, 0); far outside for a column past the last */
    bool ok1;     /* one: the four columns are inside */
};

template <class CFG, bool ONE>
static __device__ __forceinline__ cv_cols cv_cols_at(const cv_args &a, int n0, int tid) {
    cv_cols cc;
    if constexpr (ONE) { /* OHW % 4 == 0: the four are one image's consecutive pixels */
        const int col = n0 + (tid % (CFG::BN / 4)) * 4, n = col / a.OHW;
        cc.ok1 = col < a.cols;
        cc.base = n * a.C * a.OHW + (col - n * a.OHW);
    } else {
        const int col = n0 + tid % CFG::BN;
        if (col < a.cols) {
            const int n = col / a.OHW, pix = col - n * a.OHW, oh = pix / a.OW, ow = pix - oh * a.OW;
            cc.ih0 = oh * a.sh - a.pt;
            cc.iw0 = ow * a.sw - a.pl;
            cc.base = n * a.C * a.H * a.W + cc.ih0 * a.W + cc.iw0;
        } else {
            cc.ih0 = cc.iw0 = -2 * CV_FAR;
            cc.base = 0;
        }
    }
    return cc;
}

/* The B tile (BK rows of k from k0, BN columns) into the stage at sB (rows of LDB). */
template <class CFG, bool ONE>
static __device__ __forceinline__ void cv_load_b(const cv_args &a, const cv_cols &cc, unsigned sB, int k0, int tid) {
    if constexpr (ONE) {
        constexpr int BN4 = CFG::BN / 4, RSTEP = CFG::THREADS / BN4;
        const int c = (tid % BN4) * 4, r0 = tid / BN4;
#pragma unroll
        for (int i = 0; i < CFG::BK / RSTEP; i++) {
            const int r = r0 + i * RSTEP, k = k0 + r;
            const bool ok = cc.ok1 && k < a.K;
            mm_cp_async16_u(sB + 4u * (unsigned)(r * CFG::LDB + c), ok ? a.x + cc.base + k * a.OHW : a.x,
                            ok ? 16 : 0);
        }
    } else {
        constexpr int RSTEP = CFG::THREADS / CFG::BN;
        const int c = tid % CFG::BN, r0 = tid / CFG::BN;
#pragma unroll
        for (int i = 0; i < CFG::BK / RSTEP; i++) {
            const int r = r0 + i * RSTEP;
            const int4 tb = __ldg(a.ktab + k0 + r); /* the same row across a warp: one broadcast load */
            const bool ok = (unsigned)(cc.ih0 + tb.y) < (unsigned)a.H && (unsigned)(cc.iw0 + tb.z) < (unsigned)a.W;
            mm_cp_async4_u(sB + 4u * (unsigned)(r * CFG::LDB + c), ok ? a.x + cc.base + tb.x : a.x, ok ? 4 : 0);
        }
    }
}

/* Output (row, col) of y (N, F, OHW): the offset of column col's image and pixel, row 0. */
static __device__ __forceinline__ long long cv_out_at(const cv_args &a, int col) {
    const int n = col / a.OHW;
    return (long long)n * a.F * a.OHW + (col - n * a.OHW);
}

/* v = act(v) for the activation K, else the next one: one straight run of code per activation
 * (as matmul_wt_epilogue.cuh's mm_wt_act; per element, every activation's code would be repeated
 * for each of a thread's 64 outputs). */
template <int R, int K = MM_ACT_RELU>
static __device__ __forceinline__ void cv_act(float (&v)[R], int act) {
    if constexpr (K < MM_ACT_COUNT) {
        if (act != K) {
            cv_act<R, K + 1>(v, act);
            return;
        }
#pragma unroll
        for (int i = 0; i < R; i++)
            v[i] = mm_act_f(v[i], K);
    }
}

/* Without an add: the accumulators + bias, through the activation, straight from the registers
 * to y (N, F, OHW): fragment (i, j) holds rows r0 + 16i (+8) and columns c0 + 8j, + 1. Faster
 * than the staged store (cv_store) where nothing is read: no barrier and no second pass over the
 * tile at the end of a kernel whose k-loop may be two k-tiles long (a 1x1 over 64 channels). */
template <class CFG>
static __device__ __forceinline__ void cv_store_regs(const cv_args &a, const float (&acc)[CFG::MT][CFG::NT][4], int r0,
                                                     int c0) {
    constexpr int R = CFG::MT * CFG::NT * 4;
    float v[R];
#pragma unroll
    for (int i = 0; i < CFG::MT; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = r0 + i * 16 + h * 8;
            const float b = a.bias && row < a.F ? __ldg(a.bias + row) : 0.0f;
#pragma unroll
            for (int j = 0; j < CFG::NT; j++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    v[(i * CFG::NT + j) * 4 + 2 * h + e] = acc[i][j][2 * h + e] + b;
        }
    if (a.act != MM_ACT_NONE)
        cv_act<R>(v, a.act);
    const bool pair = a.OHW % 2 == 0; /* columns c, c + 1 (c even) in one image, adjacent, 8-byte aligned */
#pragma unroll
    for (int j = 0; j < CFG::NT; j++) {
        const int col = c0 + j * 8;
        if (col >= a.cols)
            continue;
        const long long o0 = cv_out_at(a, col), o1 = cv_out_at(a, col + 1);
#pragma unroll
        for (int i = 0; i < CFG::MT; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = r0 + i * 16 + h * 8;
                if (row >= a.F)
                    continue;
                const int q = (i * CFG::NT + j) * 4 + 2 * h;
                float *y0 = a.y + o0 + (long long)row * a.OHW;
                if (pair) {
                    *reinterpret_cast<float2 *>(y0) = make_float2(v[q], v[q + 1]);
                } else {
                    y0[0] = v[q];
                    if (col + 1 < a.cols)
                        a.y[o1 + (long long)row * a.OHW] = v[q + 1];
                }
            }
    }
}

/* Four consecutive columns are one image's adjacent pixels, 16-byte aligned in y and add. */
static __device__ __forceinline__ bool cv_vec(const cv_args &a) {
    return a.OHW % 4 == 0 && ((uintptr_t)a.y & 15) == 0 && ((uintptr_t)a.add & 15) == 0;
}

/* Outputs (f, col .. col + 3) of the product, v, + bias + add, through the activation, to y: one
 * 16-byte load of add and store of y where vec (cv_vec; then cols % 4 == 0: all four inside),
 * else each column inside on its own. */
static __device__ __forceinline__ void cv_finish4(const cv_args &a, bool vec, int f, int col, float (&v)[4]) {
    const float b = a.bias ? __ldg(a.bias + f) : 0.0f;
    if (vec) {
        const long long o = cv_out_at(a, col) + (long long)f * a.OHW;
        float4 d = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (a.add)
            d = __ldg(reinterpret_cast<const float4 *>(a.add + o));
        const float w[4] = {v[0] + b, v[1] + b, v[2] + b, v[3] + b}; /* conv + bias, then the add */
        *reinterpret_cast<float4 *>(a.y + o) =
            make_float4(mm_act_f(a.add ? w[0] + d.x : w[0], a.act), mm_act_f(a.add ? w[1] + d.y : w[1], a.act),
                        mm_act_f(a.add ? w[2] + d.z : w[2], a.act), mm_act_f(a.add ? w[3] + d.w : w[3], a.act));
        return;
    }
    for (int e = 0; e < 4 && col + e < a.cols; e++) {
        const long long o = cv_out_at(a, col + e) + (long long)f * a.OHW;
        const float w = v[e] + b;
        a.y[o] = mm_act_f(a.add ? w + __ldg(a.add + o) : w, a.act);
    }
}

/* With an add: the accumulators through shared memory (the pipeline's, free once the k-loop is done) to y
 * (N, F, OHW): each thread's fragments into the tile (BM rows of BN + 8 floats: conflict-free
 * 8-byte writes), then each thread takes four consecutive columns of a row at a time, adds bias
 * and add, applies the activation (one copy of its code: the loop is not unrolled) and stores.
 * Where OHW % 4 == 0 four columns are one image's adjacent pixels: 16-byte loads of add and stores
 * of y, a warp on 512 contiguous bytes of a row (stores of the fragments themselves covered eight
 * rows with 32 bytes each, and a fused add read that way cost more than the add kernel it saves). */
template <class CFG>
static __device__ __forceinline__ void cv_store(const cv_args &a, const float (&acc)[CFG::MT][CFG::NT][4], float *sm,
                                                int m0, int n0, int wm0, int wn0, int g, int t) {
    constexpr int LDT = CFG::BN + 8, BN4 = CFG::BN / 4;
    static_assert(CFG::BM * LDT <= CFG::STAGES * (CFG::A_STAGE + CFG::B_STAGE), "the tile fits the stages");
    __syncthreads(); /* every warp is done with the pipeline's shared memory */
#pragma unroll
    for (int i = 0; i < CFG::MT; i++)
#pragma unroll
        for (int j = 0; j < CFG::NT; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                *reinterpret_cast<float2 *>(sm + (wm0 + i * 16 + h * 8 + g) * LDT + wn0 + j * 8 + 2 * t) =
                    make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
    __syncthreads();
    const bool vec = cv_vec(a);
#pragma unroll 1
    for (int q = threadIdx.x; q < CFG::BM * BN4; q += CFG::THREADS) {
        const int r = q / BN4, c = (q % BN4) * 4, f = m0 + r, col = n0 + c;
        if (f >= a.F || col >= a.cols)
            continue;
        const float4 s4 = *reinterpret_cast<const float4 *>(sm + r * LDT + c);
        float v[4] = {s4.x, s4.y, s4.z, s4.w};
        cv_finish4(a, vec, f, col, v);
    }
}

/* Split-K: this block's raw partial tile into its slice of the workspace; the tile's last block
 * to arrive sums the slices in order from slice 0, adds the bias (and add), applies the activation (one
 * element at a time in a loop that is not unrolled: one copy of the activations' code) and stores
 * to y, consecutive threads on consecutive columns. */
template <class CFG>
static __device__ __forceinline__ void cv_reduce(const cv_args &a, const float (&acc)[CFG::MT][CFG::NT][4], int m0,
                                                 int n0, int r0, int c0) {
    const long long fc = (long long)a.F * a.cols;
    float *part = a.ws + blockIdx.y * fc;
#pragma unroll
    for (int i = 0; i < CFG::MT; i++)
#pragma unroll
        for (int j = 0; j < CFG::NT; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int row = r0 + i * 16 + (r / 2) * 8, col = c0 + j * 8 + r % 2;
                if (row < a.F && col < a.cols)
                    __stcg(part + (long long)row * a.cols + col, acc[i][j][r]);
            }
    __shared__ int s_last;
    __threadfence(); /* partials visible device-wide before the arrival is counted */
    __syncthreads();
    int *counter = a.counters + blockIdx.x;
    if (threadIdx.x == 0)
        s_last = atomicAdd(counter, 1) == a.split - 1;
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    const bool vec = cv_vec(a), vws = a.cols % 4 == 0; /* vws: 16-byte loads of the partials */
#pragma unroll 1
    for (int q = threadIdx.x; q < CFG::BM * (CFG::BN / 4); q += CFG::THREADS) {
        const int f = m0 + q / (CFG::BN / 4), col = n0 + (q % (CFG::BN / 4)) * 4;
        if (f >= a.F || col >= a.cols)
            continue;
        const float *src = a.ws + (long long)f * a.cols + col;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int sp = 0; sp < CV_MAX_SPLIT; sp++) { /* every slice's loads in flight, summed in slice order */
            if (sp >= a.split)
                break;
            if (vws) {
                const float4 x = __ldcg(reinterpret_cast<const float4 *>(src + sp * fc));
                v[0] += x.x;
                v[1] += x.y;
                v[2] += x.z;
                v[3] += x.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (col + e < a.cols)
                        v[e] += __ldcg(src + sp * fc + e);
            }
        }
        cv_finish4(a, vec, f, col, v);
    }
    if (threadIdx.x == 0)
        *counter = 0; /* ready for the next run on this plan */
}

template <class CFG, bool ONE>
__global__ void __launch_bounds__(CFG::THREADS, CFG::MINB) cv3_kernel(cv_args a) {
    static_assert(CFG::KS == 1 && CFG::BK == CV_BK, "one k-slice, the table's k-tile");
    static_assert(CFG::THREADS % CFG::BN == 0 && CFG::BK % (CFG::THREADS / CFG::BN) == 0 &&
                      CFG::BK % (CFG::THREADS / (CFG::BN / 4)) == 0,
                  "fixed columns per thread, whole rows per pass");
    extern __shared__ __align__(16) float cv_smem[];
    const int tiles_m = (a.F + CFG::BM - 1) / CFG::BM; /* row tiles fastest: a column tile of x is read
                                                          from DRAM once, its other row tiles hit L2 */
    const int m0 = (int)(blockIdx.x % tiles_m) * CFG::BM, n0 = (int)(blockIdx.x / tiles_m) * CFG::BN;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wm0 = (warp % CFG::WARPS_M) * CFG::WM, wn0 = (warp / CFG::WARPS_M) * CFG::WN;
    const cv_cols cc = cv_cols_at<CFG, ONE>(a, n0, tid);
    float acc[CFG::MT][CFG::NT][4];
    tf_zero<CFG>(acc);
    const int kb = blockIdx.y * a.k_chunk, ke = min(a.K, kb + a.k_chunk); /* this block's k-slice */
    const int ktiles = ke > kb ? (ke - kb + CFG::BK - 1) / CFG::BK : 0;
    tf_mainloop<CFG>(acc, cv_smem, ktiles, kb, wm0, wn0, 0, g, t, [&](unsigned sA, unsigned sB, int k) {
        tf_load_a<CFG>(sA, a.w, a.F, a.K, m0, k, ke, a.vec_w, tid);
        cv_load_b<CFG, ONE>(a, cc, sB, k, tid);
    });
    if (a.split > 1)
        cv_reduce<CFG>(a, acc, m0, n0, m0 + wm0 + g, n0 + wn0 + 2 * t);
    else if (!a.add)
        cv_store_regs<CFG>(a, acc, m0 + wm0 + g, n0 + wn0 + 2 * t);
    else
        cv_store<CFG>(a, acc, cv_smem, m0, n0, wm0, wn0, g, t);
}

/* ---- configurations and launch ----------------------------------------------------------------- */

struct cv_entry {
    const char *name;
    int bm, bn, smem;
    void (*launch)(const cv_args &a, bool one, dim3 grid, cudaStream_t s);
};

template <class CFG, bool ONE>
static void cv_launch_one(const cv_args &a, dim3 grid, cudaStream_t s) {
    static bool attr = false;
    if (!attr) { /* more than 48 KB of dynamic shared memory needs the opt-in */
        CUDA_CHECK(cudaFuncSetAttribute(cv3_kernel<CFG, ONE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        CFG::SMEM_BYTES));
        attr = true;
    }
    cv3_kernel<CFG, ONE><<<grid, CFG::THREADS, CFG::SMEM_BYTES, s>>>(a);
}

template <class CFG>
static void cv_launch(const cv_args &a, bool one, dim3 grid, cudaStream_t s) {
    if (one)
        cv_launch_one<CFG, true>(a, grid, s);
    else
        cv_launch_one<CFG, false>(a, grid, s);
}

#define CV_ENTRY(BM, BN, WM, WN, ST, MB)                                                                           \
    {#BM "x" #BN, BM, BN, tf_cfg<BM, BN, CV_BK, WM, WN, ST, MB>::SMEM_BYTES,                                      \
     cv_launch<tf_cfg<BM, BN, CV_BK, WM, WN, ST, MB>>}

/* Large maps (many columns): 128x128; few output channels (64, the first stages of a ResNet): 64 rows;
 * many channels over few columns (7x7 maps, small batches): 128x64 and 64x64 fill more SMs. */
static const cv_entry cv_table[] = {
    CV_ENTRY(128, 128, 32, 64, 3, 1),
    CV_ENTRY(64, 128, 32, 32, 4, 2),
    CV_ENTRY(128, 64, 64, 32, 4, 2),
    CV_ENTRY(64, 64, 32, 32, 4, 3),
};
static const int cv_count = (int)(sizeof cv_table / sizeof cv_table[0]);

extern "C" int cv3_config_count(void) { return cv_count; }

extern "C" const char *cv3_config_name(int cfg) { return cfg >= 0 && cfg < cv_count ? cv_table[cfg].name : "?"; }

/* ---- plans ------------------------------------------------------------------------------------- */

extern "C" cv3_plan *cv3_plan_new(const cv3_shape *s, char *err, size_t errlen) {
    const int64_t K = s->C * s->KH * s->KW, cols = s->N * s->OH * s->OW;
    const int64_t lim = (int64_t)INT32_MAX - 4 * 128;
    if (s->N * s->C * s->H * s->W > lim || s->N * s->F * s->OH * s->OW > lim || s->F * K > lim || cols > lim ||
        K > lim - CV_BK || s->H >= CV_FAR / 4 || s->W >= CV_FAR / 4 || s->KH * s->dh >= CV_FAR / 4 ||
        s->KW * s->dw >= CV_FAR / 4) {
        base_fail(err, errlen, "conv 3xtf32: indices past 32 bits");
        return NULL;
    }
    const mm_device_info *d = mm_device();
    if (d->cc_major < 8) {
        base_fail(err, errlen, "conv 3xtf32: compute capability %d.%d has no TF32 mma.sync", d->cc_major,
                  d->cc_minor);
        return NULL;
    }
    cv3_plan *p = (cv3_plan *)base_xcalloc(1, sizeof *p);
    p->s = *s;
    p->K = (int)K;
    p->kpad = (int)((K + CV_BK - 1) / CV_BK * CV_BK);
    p->one = s->KH == 1 && s->KW == 1 && s->sh == 1 && s->sw == 1 && s->pt == 0 && s->pl == 0 && s->OH == s->H &&
             s->OW == s->W && (s->OH * s->OW) % 4 == 0;
    int4 *h = (int4 *)base_xmalloc((size_t)p->kpad * sizeof *h);
    const int64_t khw = s->KH * s->KW;
    for (int64_t k = 0; k < p->kpad; k++) {
        if (k < K) {
            const int64_t c = k / khw, kh = (k % khw) / s->KW, kw = k % s->KW;
            const int64_t dy = kh * s->dh, dx = kw * s->dw;
            h[k] = make_int4((int)(c * s->H * s->W + dy * s->W + dx), (int)dy, (int)dx, 0);
        } else {
            h[k] = make_int4(0, CV_FAR, CV_FAR, 0);
        }
    }
    cudaError_t e = cudaMalloc((void **)&p->ktab, (size_t)p->kpad * sizeof *h);
    if (e == cudaSuccess)
        e = cudaMemcpy(p->ktab, h, (size_t)p->kpad * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    const size_t tiles = (size_t)((s->F + 63) / 64) * (size_t)((cols + 63) / 64); /* the smallest tiles' count */
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&p->counters, tiles * sizeof(int));
    if (e == cudaSuccess)
        e = cudaMemset(p->counters, 0, tiles * sizeof(int));
    if (e != cudaSuccess) {
        base_fail(err, errlen, "conv 3xtf32: offset table: %s", cudaGetErrorString(e));
        cv3_plan_free(p);
        return NULL;
    }
    return p;
}

extern "C" void cv3_plan_free(cv3_plan *p) {
    if (!p)
        return;
    if (p->ktab)
        CUDA_CHECK(cudaFree(p->ktab));
    if (p->counters)
        CUDA_CHECK(cudaFree(p->counters));
    free(p);
}

/* Whole k-tiles per slice, at most CV_MAX_SPLIT slices: the chunk for split, and the slices that
 * are not empty. */
static int cv_chunk(const cv3_plan *p, int split, int *slices) {
    split = split < CV_MAX_SPLIT ? split : CV_MAX_SPLIT; /* the reduction's unrolled slice loop */
    const int per = (p->K + split - 1) / split, chunk = (per + CV_BK - 1) / CV_BK * CV_BK;
    *slices = (p->K + chunk - 1) / chunk;
    return chunk;
}

extern "C" int cv3_split_candidates(const cv3_plan *p, int cfg, int *splits, int max) {
    const cv_entry *e = &cv_table[cfg >= 0 && cfg < cv_count ? cfg : 0];
    const long long tiles = ((p->s.F + e->bm - 1) / e->bm) * ((p->s.N * p->s.OH * p->s.OW + e->bn - 1) / e->bn);
    const long long sms = mm_device()->sm_count;
    int n = 0;
    if (n < max)
        splits[n++] = 1;
    for (int sp = 2; sp <= 8 && n < max; sp *= 2) {
        int slices;
        cv_chunk(p, sp, &slices);
        /* each slice 4 k-tiles or more, and the grid below two waves before this doubling */
        if (slices == sp && p->K >= 4 * CV_BK * sp && tiles * (sp / 2) < 2 * sms)
            splits[n++] = sp;
    }
    return n;
}

extern "C" size_t cv3_workspace_bytes(const cv3_plan *p, int split) {
    int slices = 1;
    if (split > 1)
        cv_chunk(p, split, &slices);
    return slices > 1 ? (size_t)slices * (size_t)p->s.F * (size_t)(p->s.N * p->s.OH * p->s.OW) * sizeof(float) : 0;
}

extern "C" void cv3_run(const cv3_plan *p, int cfg, int split, const float *x, const float *w, const float *bias,
                        const float *add, float *y, int act, float *ws, cudaStream_t s) {
    const cv_entry *e = &cv_table[cfg >= 0 && cfg < cv_count ? cfg : 0];
    const cv3_shape *sh = &p->s;
    cv_args a;
    a.x = x;
    a.w = w;
    a.bias = bias;
    a.add = add;
    a.y = y;
    a.ktab = p->ktab;
    a.C = (int)sh->C;
    a.H = (int)sh->H;
    a.W = (int)sh->W;
    a.F = (int)sh->F;
    a.K = p->K;
    a.OW = (int)sh->OW;
    a.OHW = (int)(sh->OH * sh->OW);
    a.cols = (int)(sh->N * a.OHW);
    a.sh = (int)sh->sh;
    a.sw = (int)sh->sw;
    a.pt = (int)sh->pt;
    a.pl = (int)sh->pl;
    a.act = act;
    a.vec_w = p->K % 4 == 0 && ((uintptr_t)w & 15) == 0;
    a.split = 1;
    a.k_chunk = p->kpad;
    a.ws = ws;
    a.counters = p->counters;
    if (split > 1 && ws) {
        int slices;
        const int chunk = cv_chunk(p, split, &slices);
        if (slices > 1) {
            a.split = slices;
            a.k_chunk = chunk;
        }
    }
    const bool one = p->one && ((uintptr_t)x & 15) == 0;
    const long long blocks = (long long)((a.F + e->bm - 1) / e->bm) * ((a.cols + e->bn - 1) / e->bn);
    e->launch(a, one, dim3((unsigned)blocks, (unsigned)a.split), s);
}
