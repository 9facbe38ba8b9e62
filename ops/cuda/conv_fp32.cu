/* conv_fp32.cu: the convolution (groups 1) as an FP32 implicit GEMM on the FMA units, one kernel per
 * run: y (F, N*OH*OW) = w (F, K) x col (K, N*OH*OW), images side by side as columns, col never
 * written: B rows gathered from x by cp.async through the per-k offset table (conv_igemm.cuh,
 * shared with conv_3xtf32.cu, as is all the host code: cv_host, given this kernel's traits; here
 * only the kernel, its configuration table and conv_fp32.h's wrappers). Main loop: the FP32
 * matmul's (matmul_wt_pipe.cuh, pipeline s): w's tile transposed into sAt[k][m], B as sB[k][n], a
 * cp.async ring, each thread TM x TN outputs by fmaf in k order. Bias, the fused add and the
 * activation in the epilogue: one kernel where the GEMM path runs im2col, the matmul and a bias
 * pass (the batch-1 layers' case). Split-K (up to 16 slices): raw partials to a workspace, summed
 * in slice order by the tile's last block, so a configuration and split give the same bits on
 * every run. */
#include <stdlib.h>

#include "base.h"
#include "conv_fp32.h"
#include "conv_igemm.cuh"
#include "matmul_wt_pipe.cuh"

struct cf_plan : cv_plan {}; /* the shared layout; its counters are for the 32x32 tiles */

#define CF_BK 16        /* every configuration's k-tile (divides the table's CV_BK) */
#define CF_MAX_SPLIT 16 /* cf_split_candidates offers 2, 4, 8, 16 */
#define CF_MIN_TILE 32  /* the smallest BM and BN: the counters' count */

/* A configuration: the FP32 matmul's tile math (mm_wt_cfg, pipeline 0), plus the shared memory of
 * the staged store (the BM x BN tile with rows of BN + 4) where it outgrows the pipeline's. */
template <int BM, int BN, int WM, int WN, int TM, int TN, int ST, int MINB>
struct cf_cfg : mm_wt_cfg<BM, BN, CF_BK, WM, WN, TM, TN, ST, CF_BK, MINB, 0> {
    typedef mm_wt_cfg<BM, BN, CF_BK, WM, WN, TM, TN, ST, CF_BK, MINB, 0> base;
    static constexpr int LDT = BN + 4; /* float4 rows, 16-byte aligned */
    static constexpr int TILE_BYTES = BM * LDT * 4;
    static constexpr int SMEM = base::SMEM_BYTES > TILE_BYTES ? base::SMEM_BYTES : TILE_BYTES;
};

/* Where this thread works in the block tile: its first row and column (of 4x4 pieces TR*4 rows
 * and TC*4 columns apart) relative to the tile. */
struct cf_at {
    int m0, n0; /* the block tile's first row and column of y */
    int r, c;   /* this thread's first row and column inside the tile */
};

/* ---- the main loop ------------------------------------------------------------------------------ */

/* Tile k0 of w (rows m0.., columns k0 .. k0 + BK, zero past ke) transposed into the stage at sA
 * (shared address of sAt), this thread's A_KV elements of row a_m from a_k; the B rows gathered. */
template <class CFG, bool ONE>
static __device__ __forceinline__ void cf_load(const cv_args &a, const cv_cols &cc, unsigned sA, const float *wrow,
                                               bool row_ok, int a_m, int a_k, int k0, int ke, int tid) {
#pragma unroll
    for (int i = 0; i < CFG::A_KV; i++) {
        const int k = k0 + a_k + i;
        const bool ok = row_ok && k < ke;
        mm_cp_async4_u(sA + 4u * (unsigned)((a_k + i) * CFG::LDA + a_m), ok ? wrow + k : a.w, ok ? 4 : 0);
    }
    cv_load_b<CFG, ONE>(a, cc, sA + 4u * CFG::B_OFF, k0, tid);
}

/* acc = the k-slice [kb, ke) of the block's tile at this thread's outputs: STAGES-1 tiles in
 * flight while one is multiplied (matmul_wt_pipe.cuh's mm_wt_compute), one barrier per tile.
 * Nothing is in flight on return; other warps may still read the stages. */
template <class CFG, bool ONE>
static __device__ __forceinline__ void cf_mainloop(float (&acc)[CFG::TM][CFG::TN], const cv_args &a, float *sm,
                                                   const cf_at &at, int kb, int ke, int tid) {
    constexpr int S = CFG::STAGES, BK = CFG::BK;
    const cv_cols cc = cv_cols_at<CFG, ONE>(a, at.n0, tid);
    const int a_m = tid / CFG::A_TPR, a_k = (tid % CFG::A_TPR) * CFG::A_KV;
    const bool row_ok = at.m0 + a_m < a.F;
    const float *wrow = a.w + (row_ok ? (at.m0 + a_m) * a.K : 0);
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(sm), sbytes = 4u * CFG::STAGE_FLOATS;
    const int ktiles = ke > kb ? (ke - kb + BK - 1) / BK : 0;
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < ktiles)
            cf_load<CFG, ONE>(a, cc, s0 + s * sbytes, wrow, row_ok, a_m, a_k, kb + s * BK, ke, tid);
        mm_cp_async_commit(); /* empty groups keep the count uniform */
    }
    const float *ra = sm + at.r, *rb = sm + CFG::B_OFF + at.c;
    int rstage = 0, wstage = S - 1; /* the stage read and the stage written this tile */
    for (int kt = 0; kt < ktiles; kt++) {
        mm_cp_async_wait<S - 2>();
        __syncthreads(); /* tile kt landed for every thread; the stage of tile kt-1 is free */
        if (kt + S - 1 < ktiles)
            cf_load<CFG, ONE>(a, cc, s0 + wstage * sbytes, wrow, row_ok, a_m, a_k, kb + (kt + S - 1) * BK, ke, tid);
        mm_cp_async_commit();
        mm_wt_compute<CFG>(acc, ra + rstage * CFG::STAGE_FLOATS, rb + rstage * CFG::STAGE_FLOATS);
        rstage = rstage == S - 1 ? 0 : rstage + 1;
        wstage = wstage == S - 1 ? 0 : wstage + 1;
    }
    mm_cp_async_wait<0>();
}

/* ---- epilogues ---------------------------------------------------------------------------------- */

/* Output row i of this thread (TM of them) and its group of four columns j4 (TN / 4), in the tile. */
template <class CFG>
static __device__ __forceinline__ int cf_row(const cf_at &at, int i) {
    return at.r + (i / 4) * CFG::TR * 4 + i % 4;
}
template <class CFG>
static __device__ __forceinline__ int cf_col(const cf_at &at, int j4) {
    return at.c + j4 * CFG::TC * 4;
}

/* Four consecutive columns are one image's adjacent pixels (cv_vec): straight from the registers,
 * + bias, + add (16-byte loads), the activation once over all of a thread's outputs (cv_act: one
 * copy of each activation's code), 16-byte stores; a warp's stores of one row are TC * 16
 * contiguous bytes. */
template <class CFG>
static __device__ __forceinline__ void cf_store_vec(const cv_args &a, const float (&acc)[CFG::TM][CFG::TN],
                                                    const cf_at &at) {
    constexpr int TM = CFG::TM, TN = CFG::TN, SUBN = CFG::SUBN, R = TM * TN;
    long long oc[SUBN]; /* column group j4's offset in y (row 0), or -1 past the last column */
#pragma unroll
    for (int j = 0; j < SUBN; j++) {
        const int col = at.n0 + cf_col<CFG>(at, j);
        oc[j] = col < a.cols ? cv_out_at(a, col) : -1;
    }
    float v[R];
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int f = at.m0 + cf_row<CFG>(at, i);
        const float b = a.bias && f < a.F ? __ldg(a.bias + f) : 0.0f;
#pragma unroll
        for (int j = 0; j < SUBN; j++) {
            float4 d = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (a.add && f < a.F && oc[j] >= 0)
                d = __ldg(reinterpret_cast<const float4 *>(a.add + oc[j] + (long long)f * a.OHW));
            const float dd[4] = {d.x, d.y, d.z, d.w};
#pragma unroll
            for (int e = 0; e < 4; e++) { /* conv + bias, then the add */
                const float w = acc[i][4 * j + e] + b;
                v[i * TN + 4 * j + e] = a.add ? w + dd[e] : w;
            }
        }
    }
    if (a.act != MM_ACT_NONE)
        cv_act<R>(v, a.act);
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int f = at.m0 + cf_row<CFG>(at, i);
#pragma unroll
        for (int j = 0; j < SUBN; j++)
            if (f < a.F && oc[j] >= 0)
                *reinterpret_cast<float4 *>(a.y + oc[j] + (long long)f * a.OHW) =
                    make_float4(v[i * TN + 4 * j], v[i * TN + 4 * j + 1], v[i * TN + 4 * j + 2], v[i * TN + 4 * j + 3]);
    }
}

/* Otherwise (odd maps: 55x55, 13x13, 17x17): the tile through shared memory (the stages, free once
 * every warp is past the main loop), then each thread takes one column, tid % BN, in rows tid / BN
 * + THREADS / BN apart: a warp stores 32 consecutive columns of a row, each output + bias + add
 * through the activation (a loop that is not unrolled: one copy of the activations' code). */
template <class CFG>
static __device__ __forceinline__ void cf_store_staged(const cv_args &a, const float (&acc)[CFG::TM][CFG::TN],
                                                       float *sm, const cf_at &at, int tid) {
    constexpr int LDT = CFG::LDT;
    static_assert(CFG::THREADS % CFG::BN == 0, "one column per thread");
    __syncthreads(); /* every warp is done with the pipeline's shared memory */
#pragma unroll
    for (int i = 0; i < CFG::TM; i++)
#pragma unroll
        for (int j = 0; j < CFG::SUBN; j++)
            *reinterpret_cast<float4 *>(sm + cf_row<CFG>(at, i) * LDT + cf_col<CFG>(at, j)) =
                make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
    __syncthreads();
    const int c = tid % CFG::BN, col = at.n0 + c;
    if (col >= a.cols)
        return;
    const long long o = cv_out_at(a, col);
#pragma unroll 1
    for (int r = tid / CFG::BN; r < CFG::BM; r += CFG::THREADS / CFG::BN) {
        const int f = at.m0 + r;
        if (f >= a.F)
            break;
        const long long off = o + (long long)f * a.OHW;
        const float w = sm[r * LDT + c] + (a.bias ? __ldg(a.bias + f) : 0.0f);
        a.y[off] = mm_act_f(a.add ? w + __ldg(a.add + off) : w, a.act);
    }
}

/* Split-K: this block's raw partial tile into its slice of the workspace (F, cols), then the
 * reduction by the tile's last block (cv_reduce_last). */
template <class CFG>
static __device__ __forceinline__ void cf_reduce(const cv_args &a, const float (&acc)[CFG::TM][CFG::TN],
                                                 const cf_at &at) {
    float *part = a.ws + blockIdx.y * ((long long)a.F * a.cols);
    const bool v4 = a.cols % 4 == 0; /* then four columns from a multiple of 4 are all inside or all out */
#pragma unroll
    for (int i = 0; i < CFG::TM; i++) {
        const int f = at.m0 + cf_row<CFG>(at, i);
#pragma unroll
        for (int j = 0; j < CFG::SUBN; j++) {
            const int col = at.n0 + cf_col<CFG>(at, j);
            if (f >= a.F || col >= a.cols)
                continue;
            float *p = part + (long long)f * a.cols + col;
            if (v4) {
                __stcg(reinterpret_cast<float4 *>(p),
                       make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]));
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (col + e < a.cols)
                        __stcg(p + e, acc[i][4 * j + e]);
            }
        }
    }
    cv_reduce_last<CFG::BM, CFG::BN, CFG::THREADS, CF_MAX_SPLIT>(a, at.m0, at.n0);
}

/* Row tiles fastest (blockIdx.x % tiles_m): a column tile of x is gathered from DRAM once, its
 * other row tiles find it in L2. blockIdx.y is the k-slice. */
template <class CFG, bool ONE>
__global__ void __launch_bounds__(CFG::THREADS, CFG::MINB) cf_kernel(cv_args a) {
    static_assert(CV_BK % CFG::BK == 0, "the table is padded to whole k-tiles");
    static_assert(CFG::BM >= CF_MIN_TILE && CFG::BN >= CF_MIN_TILE, "enough split-K counters");
    extern __shared__ __align__(16) float cf_smem[];
    const int tiles_m = (a.F + CFG::BM - 1) / CFG::BM;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    cf_at at;
    at.m0 = (int)(blockIdx.x % tiles_m) * CFG::BM;
    at.n0 = (int)(blockIdx.x / tiles_m) * CFG::BN;
    at.r = (warp / CFG::WARPS_N) * CFG::WM + (lane / CFG::TC) * 4;
    at.c = (warp % CFG::WARPS_N) * CFG::WN + (lane % CFG::TC) * 4;
    float acc[CFG::TM][CFG::TN];
#pragma unroll
    for (int i = 0; i < CFG::TM; i++)
#pragma unroll
        for (int j = 0; j < CFG::TN; j++)
            acc[i][j] = 0.0f;
    const int kb = blockIdx.y * a.k_chunk, ke = min(a.K, kb + a.k_chunk); /* this block's k-slice */
    cf_mainloop<CFG, ONE>(acc, a, cf_smem, at, kb, ke, tid);
    if (a.split > 1)
        cf_reduce<CFG>(a, acc, at);
    else if (cv_vec(a))
        cf_store_vec<CFG>(a, acc, at);
    else
        cf_store_staged<CFG>(a, acc, cf_smem, at, tid);
}

/* ---- configurations and the extern "C" functions (conv_igemm.cuh's cv_host) -------------------- */

/* block BM x BN, warp tile WM x WN, thread tile TM x TN, STAGES, min blocks per SM (register cap) */
#define CF_ENTRY(BM, BN, WM, WN, TM, TN, ST, MB) \
    CV_ENTRY_OF(#BM "x" #BN "_t" #TM "x" #TN, BM, BN, cf_kernel, SMEM, cf_cfg<BM, BN, WM, WN, TM, TN, ST, MB>)

/* Big maps (inception's 147x147 and 73x73 at batch 1, any map at large batches): 8x8 and 8x4 per
 * thread on 128x64 and 64x128; 64x64 for 64 output channels; 32x64 and 32x32 (64 threads) for the
 * small maps of batch 1 (13x13, 17x17, 8x8), where the grid, not the FMA rate, is the limit. */
static const cv_entry cf_table[] = {
    CF_ENTRY(128, 64, 64, 32, 8, 8, 3, 3),  /* 128 threads */
    CF_ENTRY(128, 64, 32, 32, 8, 4, 3, 2),  /* 256 threads */
    CF_ENTRY(64, 128, 32, 32, 4, 8, 3, 2),  /* 256 threads */
    CF_ENTRY(64, 64, 32, 32, 4, 8, 3, 4),   /* 128 threads */
    CF_ENTRY(64, 64, 32, 16, 4, 4, 3, 2),   /* 256 threads */
    CF_ENTRY(32, 64, 16, 32, 4, 4, 4, 4),   /* 128 threads */
    CF_ENTRY(32, 32, 16, 32, 4, 4, 4, 8),   /* 64 threads */
};

/* What conv_igemm.cuh's cv_host needs of this kernel. */
struct cf_traits {
    static constexpr int BK = CF_BK, MAX_SPLIT = CF_MAX_SPLIT, MIN_TILE = CF_MIN_TILE;
    static constexpr const char *NAME = "conv igemm", *LACKS = "cp.async";
    static constexpr const cv_entry *TABLE = cf_table;
    static constexpr int COUNT = (int)(sizeof cf_table / sizeof cf_table[0]);
};
typedef cv_host<cf_traits, cf_plan> cf_host;

extern "C" int cf_config_count(void) { return cf_traits::COUNT; }

extern "C" const char *cf_config_name(int cfg) { return cf_host::config_name(cfg); }

extern "C" cf_plan *cf_plan_new(const cv3_shape *s, char *err, size_t errlen) {
    return cf_host::plan_new(s, err, errlen);
}

extern "C" void cf_plan_free(cf_plan *p) { cf_host::plan_free(p); }

extern "C" int cf_split_candidates(const cf_plan *p, int cfg, int *splits, int max) {
    return cf_host::split_candidates(p, cfg, splits, max);
}

extern "C" size_t cf_workspace_bytes(const cf_plan *p, int split) { return cf_host::workspace_bytes(p, split); }

extern "C" void cf_run(const cf_plan *p, int cfg, int split, const float *x, const float *w, const float *bias,
                       const float *add, float *y, int act, float *ws, cudaStream_t s) {
    cf_host::run(p, cfg, split, x, w, bias, add, y, act, ws, s);
}
