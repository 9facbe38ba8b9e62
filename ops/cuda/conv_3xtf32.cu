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
 * stores, then resets the tile's counter. The gather, the epilogue's pieces, the reduction by the
 * last block and all the host code (plans, launches, runs: cv_host, given this kernel's traits) are
 * conv_igemm.cuh's, shared with the FP32 kernel (conv_fp32.cu); here: the kernel and its table.
 */
#include <stdlib.h>

#include "base.h"
#include "conv_3xtf32.h"
#include "conv_igemm.cuh"
#include "matmul_3xtf32.cuh"

struct cv3_plan : cv_plan {}; /* the shared layout; its counters are for the 64x64 tiles */

#define CV_MAX_SPLIT 8 /* cv3_split_candidates offers 2, 4, 8 */

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
    cv_reduce_last<CFG::BM, CFG::BN, CFG::THREADS, CV_MAX_SPLIT>(a, m0, n0);
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

/* ---- configurations and the extern "C" functions (conv_igemm.cuh's cv_host) -------------------- */

#define CV_ENTRY(BM, BN, WM, WN, ST, MB) \
    CV_ENTRY_OF(#BM "x" #BN, BM, BN, cv3_kernel, SMEM_BYTES, tf_cfg<BM, BN, CV_BK, WM, WN, ST, MB>)

/* Large maps (many columns): 128x128; few output channels (64, the first stages of a ResNet): 64 rows;
 * many channels over few columns (7x7 maps, small batches): 128x64 and 64x64 fill more SMs. */
static const cv_entry cv_table[] = {
    CV_ENTRY(128, 128, 32, 64, 3, 1),
    CV_ENTRY(64, 128, 32, 32, 4, 2),
    CV_ENTRY(128, 64, 64, 32, 4, 2),
    CV_ENTRY(64, 64, 32, 32, 4, 3),
};

/* What conv_igemm.cuh's cv_host needs of this kernel. */
struct cv3_traits {
    static constexpr int BK = CV_BK, MAX_SPLIT = CV_MAX_SPLIT, MIN_TILE = 64; /* the smallest tiles, 64x64 */
    static constexpr const char *NAME = "conv 3xtf32", *LACKS = "TF32 mma.sync";
    static constexpr const cv_entry *TABLE = cv_table;
    static constexpr int COUNT = (int)(sizeof cv_table / sizeof cv_table[0]);
};
typedef cv_host<cv3_traits, cv3_plan> cv3_host;

extern "C" int cv3_config_count(void) { return cv3_traits::COUNT; }

extern "C" const char *cv3_config_name(int cfg) { return cv3_host::config_name(cfg); }

extern "C" cv3_plan *cv3_plan_new(const cv3_shape *s, char *err, size_t errlen) {
    return cv3_host::plan_new(s, err, errlen);
}

extern "C" void cv3_plan_free(cv3_plan *p) { cv3_host::plan_free(p); }

extern "C" int cv3_split_candidates(const cv3_plan *p, int cfg, int *splits, int max) {
    return cv3_host::split_candidates(p, cfg, splits, max);
}

extern "C" size_t cv3_workspace_bytes(const cv3_plan *p, int split) { return cv3_host::workspace_bytes(p, split); }

extern "C" void cv3_run(const cv3_plan *p, int cfg, int split, const float *x, const float *w, const float *bias,
                        const float *add, float *y, int act, float *ws, cudaStream_t s) {
    cv3_host::run(p, cfg, split, x, w, bias, add, y, act, ws, s);
}
