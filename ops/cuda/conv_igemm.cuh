/* conv_igemm.cuh: the pieces shared by the two implicit-GEMM convolutions, the 3xTF32 tensor-core
 * one (conv_3xtf32.cu) and the FP32 FMA one (conv_fp32.cu): y (F, N*OH*OW) = w (F, K) x col (K,
 * N*OH*OW), col never written. Device: the kernel arguments, the gather of a k-tile's B rows from x
 * by cp.async through the per-k offset table (4-byte copies zero-filled in the padding; 16-byte
 * ones for a 1x1, stride-1 convolution), the epilogue's bias / add / activation on four columns,
 * and the split-K reduction by the tile's last block in slice order. Host: all of it, in cv_host
 * (given a kernel's traits: k-tile, split limit, smallest tile, names): plans (offset table, split-K
 * arrival counters), configuration entries and their launch, the k-slices of a split, the splits
 * worth timing, a run. The kernels differ only in their main loops and in how their accumulators
 * reach these pieces; each .cu adds its kernel, its configuration table and its header's functions.
 */
#ifndef TASC_CONV_IGEMM_CUH
#define TASC_CONV_IGEMM_CUH

#include <stdlib.h>

#include "base.h"
#include "conv_3xtf32.h"
#include "matmul_common.cuh"

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

/* The table is padded to whole 32-deep k-tiles (the 3xTF32 kernel's k-tile; the FP32 kernel's 16
 * divides it); an invalid column or a padding row is pushed this far out of the image, so that
 * one unsigned compare per axis rejects it. */
#define CV_BK 32
#define CV_FAR (1 << 29)

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

/* Split-K, after this block wrote its raw partial tile (rows m0.., columns n0.. of slice
 * blockIdx.y of the workspace): the tile's last block to arrive sums the slices in order from
 * slice 0 (at most MAXS), adds the bias (and add), applies the activation (one element at a time
 * in a loop that is not unrolled: one copy of the activations' code) and stores to y, consecutive
 * threads on consecutive columns; then resets the tile's counter. */
template <int BM, int BN, int THREADS, int MAXS>
static __device__ __forceinline__ void cv_reduce_last(const cv_args &a, int m0, int n0) {
    const long long fc = (long long)a.F * a.cols;
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
    for (int q = threadIdx.x; q < BM * (BN / 4); q += THREADS) {
        const int f = m0 + q / (BN / 4), col = n0 + (q % (BN / 4)) * 4;
        if (f >= a.F || col >= a.cols)
            continue;
        const float *src = a.ws + (long long)f * a.cols + col;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int sp = 0; sp < MAXS; sp++) { /* every slice's loads in flight, summed in slice order */
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

/* ---- host: a plan's tables ----------------------------------------------------------------------- */

/* What a plan holds on the device for a convolution shape (both kernels'). */
struct cv_tables {
    int K, kpad;   /* C*KH*KW, rounded up to a whole CV_BK */
    int4 *ktab;    /* (kpad): {c*H*W + kh*dh*W + kw*dw, kh*dh, kw*dw, 0}; past K, rows that never load */
    bool one;      /* 1x1, stride 1, no padding, OH*OW % 4 == 0: 16-byte column loads */
    int *counters; /* split-K arrivals per output tile (enough for the smallest tiles), 0 between runs */
};

/* Whether every index of shape s fits the kernels' 32-bit arithmetic; else the reason (tag: the
 * kernel's name in the message) in err. */
static inline bool cv_fits(const cv3_shape *s, const char *tag, char *err, size_t errlen) {
    const int64_t K = s->C * s->KH * s->KW, cols = s->N * s->OH * s->OW;
    const int64_t lim = (int64_t)INT32_MAX - 4 * 128;
    if (s->N * s->C * s->H * s->W > lim || s->N * s->F * s->OH * s->OW > lim || s->F * K > lim || cols > lim ||
        K > lim - CV_BK || s->H >= CV_FAR / 4 || s->W >= CV_FAR / 4 || s->KH * s->dh >= CV_FAR / 4 ||
        s->KW * s->dw >= CV_FAR / 4) {
        base_fail(err, errlen, "%s: indices past 32 bits", tag);
        return false;
    }
    return true;
}

static inline void cv_tables_free(cv_tables *t) {
    if (t->ktab)
        CUDA_CHECK(cudaFree(t->ktab));
    if (t->counters)
        CUDA_CHECK(cudaFree(t->counters));
    t->ktab = NULL;
    t->counters = NULL;
}

/* t for shape s (cv_fits already), with counters for tiles of min_tile x min_tile and larger;
 * false with the reason in err (tag as in cv_fits) and nothing held if the device refuses. */
static inline bool cv_tables_new(cv_tables *t, const cv3_shape *s, int min_tile, const char *tag, char *err,
                                 size_t errlen) {
    const int64_t K = s->C * s->KH * s->KW, cols = s->N * s->OH * s->OW;
    t->K = (int)K;
    t->kpad = (int)((K + CV_BK - 1) / CV_BK * CV_BK);
    t->one = s->KH == 1 && s->KW == 1 && s->sh == 1 && s->sw == 1 && s->pt == 0 && s->pl == 0 && s->OH == s->H &&
             s->OW == s->W && (s->OH * s->OW) % 4 == 0;
    int4 *h = (int4 *)base_xmalloc((size_t)t->kpad * sizeof *h);
    const int64_t khw = s->KH * s->KW;
    for (int64_t k = 0; k < t->kpad; k++) {
        if (k < K) {
            const int64_t c = k / khw, kh = (k % khw) / s->KW, kw = k % s->KW;
            const int64_t dy = kh * s->dh, dx = kw * s->dw;
            h[k] = make_int4((int)(c * s->H * s->W + dy * s->W + dx), (int)dy, (int)dx, 0);
        } else {
            h[k] = make_int4(0, CV_FAR, CV_FAR, 0);
        }
    }
    t->ktab = NULL;
    t->counters = NULL;
    cudaError_t e = cudaMalloc((void **)&t->ktab, (size_t)t->kpad * sizeof *h);
    if (e == cudaSuccess)
        e = cudaMemcpy(t->ktab, h, (size_t)t->kpad * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    const size_t tiles = (size_t)((s->F + min_tile - 1) / min_tile) * (size_t)((cols + min_tile - 1) / min_tile);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&t->counters, tiles * sizeof(int));
    if (e == cudaSuccess)
        e = cudaMemset(t->counters, 0, tiles * sizeof(int));
    if (e != cudaSuccess) {
        base_fail(err, errlen, "%s: offset table: %s", tag, cudaGetErrorString(e));
        cv_tables_free(t);
        return false;
    }
    return true;
}

/* Whole k-tiles of bk per slice, at most maxs slices: the chunk for split, and the slices that
 * are not empty. */
static inline int cv_chunk(int K, int split, int bk, int maxs, int *slices) {
    split = split < maxs ? split : maxs; /* the reduction's unrolled slice loop */
    const int per = (K + split - 1) / split, chunk = (per + bk - 1) / bk * bk;
    *slices = (K + chunk - 1) / chunk;
    return chunk;
}

/* The split-K counts worth timing for a grid of tiles output tiles over a reduction of K (k-tiles
 * of bk, at most maxs slices): 1 first, then doublings where each slice keeps 4 k-tiles or more
 * and the grid was below two waves before the doubling; up to max into splits, their number. */
static inline int cv_split_list(int K, long long tiles, int bk, int maxs, int *splits, int max) {
    const long long sms = mm_device()->sm_count;
    int n = 0;
    if (n < max)
        splits[n++] = 1;
    for (int sp = 2; sp <= maxs && n < max; sp *= 2) {
        int slices;
        cv_chunk(K, sp, bk, maxs, &slices);
        if (slices == sp && K >= 4 * bk * sp && tiles * (sp / 2) < 2 * sms)
            splits[n++] = sp;
    }
    return n;
}

/* Output tiles of bm x bn over a convolution's (F, N*OH*OW) output: the grid of an implicit GEMM. */
static inline long long cv_tile_count(const cv3_shape *s, int bm, int bn) {
    return (long long)((s->F + bm - 1) / bm) * ((s->N * s->OH * s->OW + bn - 1) / bn);
}

/* The workspace of split (raw partials of every slice that is not empty; 0 unsplit). */
static inline size_t cv_ws_bytes(const cv3_shape *s, int K, int split, int bk, int maxs) {
    int slices = 1;
    if (split > 1)
        cv_chunk(K, split, bk, maxs, &slices);
    return slices > 1 ? (size_t)slices * (size_t)s->F * (size_t)(s->N * s->OH * s->OW) * sizeof(float) : 0;
}


/* The kernel arguments of a run: split k-slices of whole bk-deep k-tiles (at most maxs; unsplit
 * without a workspace ws), act an mm_act. */
static inline cv_args cv_args_make(const cv3_shape *sh, const cv_tables *t, int split, int bk, int maxs,
                                   const float *x, const float *w, const float *bias, const float *add, float *y,
                                   int act, float *ws) {
    cv_args a;
    a.x = x;
    a.w = w;
    a.bias = bias;
    a.add = add;
    a.y = y;
    a.ktab = t->ktab;
    a.C = (int)sh->C;
    a.H = (int)sh->H;
    a.W = (int)sh->W;
    a.F = (int)sh->F;
    a.K = t->K;
    a.OW = (int)sh->OW;
    a.OHW = (int)(sh->OH * sh->OW);
    a.cols = (int)(sh->N * a.OHW);
    a.sh = (int)sh->sh;
    a.sw = (int)sh->sw;
    a.pt = (int)sh->pt;
    a.pl = (int)sh->pl;
    a.act = act;
    a.vec_w = t->K % 4 == 0 && ((uintptr_t)w & 15) == 0;
    a.split = 1;
    a.k_chunk = t->kpad;
    a.ws = ws;
    a.counters = t->counters;
    if (split > 1 && ws) {
        int slices;
        const int chunk = cv_chunk(t->K, split, bk, maxs, &slices);
        if (slices > 1) {
            a.split = slices;
            a.k_chunk = chunk;
        }
    }
    return a;
}

/* ---- host: configurations, plans and runs ------------------------------------------------------ */

/* A plan: the shape and its device tables. conv_fp32.cu's cf_plan and conv_3xtf32.cu's cv3_plan are
 * this layout under their public names. */
struct cv_plan {
    cv3_shape s;
    cv_tables t;
};

/* A tile configuration: its name (tuned tables and logs name it), its block tile (the grid) and
 * the launch of its kernel, instantiated with and without the 1x1 column loads. */
struct cv_entry {
    const char *name;
    int bm, bn;
    void (*launch)(const cv_args &a, bool one, dim3 grid, cudaStream_t s);
};

/* Kernel KERN on grid with THREADS threads and SMEM bytes of dynamic shared memory; a static per
 * instantiation: the attribute is set on the first launch only. */
template <void (*KERN)(cv_args), int THREADS, int SMEM>
static void cv_launch_kernel(const cv_args &a, dim3 grid, cudaStream_t s) {
    static bool attr = false;
    if (!attr) { /* more than 48 KB of dynamic shared memory needs the opt-in */
        CUDA_CHECK(cudaFuncSetAttribute(KERN, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
        attr = true;
    }
    KERN<<<grid, THREADS, SMEM, s>>>(a);
}

/* An entry's launch: K1, the kernel with 1x1 column loads, where one; else K0. */
template <void (*K1)(cv_args), void (*K0)(cv_args), int THREADS, int SMEM>
static void cv_launch(const cv_args &a, bool one, dim3 grid, cudaStream_t s) {
    if (one)
        cv_launch_kernel<K1, THREADS, SMEM>(a, grid, s);
    else
        cv_launch_kernel<K0, THREADS, SMEM>(a, grid, s);
}

/* The entry of configuration CFG (a type, last: its commas are the macro's __VA_ARGS__) of kernel
 * template KERN<CFG, ONE>, named NAME, with CFG::SMEM_FIELD bytes of dynamic shared memory. */
#define CV_ENTRY_OF(NAME, BM, BN, KERN, SMEM_FIELD, ...)                                                               \
    {NAME, BM, BN,                                                                                                     \
     cv_launch<KERN<__VA_ARGS__, true>, KERN<__VA_ARGS__, false>, __VA_ARGS__::THREADS, __VA_ARGS__::SMEM_FIELD>}

/* The host side of one implicit-GEMM kernel, P its public plan type (a cv_plan) and KT its traits:
 * BK (the k-tile), MAX_SPLIT (the reduction's slice limit), MIN_TILE (the smallest BM and BN: the
 * split-K counters' count), NAME (the messages' prefix), LACKS (what a device below compute
 * capability 8.0 lacks), TABLE and COUNT (the configurations). An index cfg out of range runs
 * configuration 0 and is named "?". */
template <class KT, class P>
struct cv_host {
    static const cv_entry *entry(int cfg) { return &KT::TABLE[cfg >= 0 && cfg < KT::COUNT ? cfg : 0]; }

    static const char *config_name(int cfg) { return cfg >= 0 && cfg < KT::COUNT ? KT::TABLE[cfg].name : "?"; }

    static P *plan_new(const cv3_shape *s, char *err, size_t errlen) {
        if (!cv_fits(s, KT::NAME, err, errlen))
            return NULL;
        const mm_device_info *d = mm_device();
        if (d->cc_major < 8) {
            base_fail(err, errlen, "%s: compute capability %d.%d has no %s", KT::NAME, d->cc_major, d->cc_minor,
                      KT::LACKS);
            return NULL;
        }
        P *p = (P *)base_xcalloc(1, sizeof *p);
        p->s = *s;
        if (!cv_tables_new(&p->t, s, KT::MIN_TILE, KT::NAME, err, errlen)) {
            free(p);
            return NULL;
        }
        return p;
    }

    static void plan_free(P *p) {
        if (!p)
            return;
        cv_tables_free(&p->t);
        free(p);
    }

    static int split_candidates(const P *p, int cfg, int *splits, int max) {
        const cv_entry *e = entry(cfg);
        const long long tiles = cv_tile_count(&p->s, e->bm, e->bn);
        return cv_split_list(p->t.K, tiles, KT::BK, KT::MAX_SPLIT, splits, max);
    }

    static size_t workspace_bytes(const P *p, int split) {
        return cv_ws_bytes(&p->s, p->t.K, split, KT::BK, KT::MAX_SPLIT);
    }

    static void run(const P *p, int cfg, int split, const float *x, const float *w, const float *bias, const float *add,
                    float *y, int act, float *ws, cudaStream_t s) {
        const cv_entry *e = entry(cfg);
        const cv_args a = cv_args_make(&p->s, &p->t, split, KT::BK, KT::MAX_SPLIT, x, w, bias, add, y, act, ws);
        const bool one = p->t.one && ((uintptr_t)x & 15) == 0; /* the 16-byte copies need x aligned */
        const long long blocks = cv_tile_count(&p->s, e->bm, e->bn);
        e->launch(a, one, dim3((unsigned)blocks, (unsigned)a.split), s);
    }
};

#endif
