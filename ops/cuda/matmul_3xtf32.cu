/* matmul_3xtf32.cu: the FP32-accurate tensor-core matmul (issue 17, `--precision 3xtf32`). Each
 * FP32 operand x is split into hi (x rounded to TF32) and lo = x - hi (exact); C = A B is summed as
 * a_lo b_hi + a_hi b_lo + a_hi b_hi with mma.sync.m16n8k8 TF32 products (the dropped a_lo b_lo is
 * below 2^-24 of a product), each k-tile's into fresh accumulators that FP32 adds fold into the
 * sums (the tensor core's own accumulation rounds toward zero). A cp.async pipeline into padded
 * shared memory (conflict-free 32-bit fragment loads, no ldmatrix); _k2 configurations run two
 * warps per warp tile over halves of each k-tile; split-K is reduced in a fixed order by the tile's
 * last block; the epilogue is the FP32 kernels' mm_epi. Any M, N, K, batches and broadcast
 * operands; tile and split from a heuristic (mm_3xtf32_choose). Numbers: bench/matmul/3xtf32.md.
 * On compute capability 9.0 mm_3xtf32_run hands large problems to matmul_3xtf32_wgmma.cu. Which of
 * these and the FP32 kernel runs a product at --precision 3xtf32: mm_select_3xtf32 (tables, tuning).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "matmul_3xtf32.cuh"

/* Where a block works: batch item, output tile (rasterized in groups of group_m tile rows) and
 * k-slice [k0, k1). */
struct tf_place {
    const float *A, *B;
    float *C;
    long long b;
    int m0, n0, k0, k1, tiles_m, tiles_n, pid;
};

template <class CFG>
static __device__ __forceinline__ tf_place tf_locate(const mm_args &a) {
    tf_place p;
    p.b = (long long)blockIdx.z + a.batch0;
    p.A = a.A + p.b * a.sa;
    p.B = a.B + p.b * a.sb;
    p.C = a.C + p.b * a.sc;
    p.tiles_m = (a.M + CFG::BM - 1) / CFG::BM;
    p.tiles_n = (a.N + CFG::BN - 1) / CFG::BN;
    const int pid = blockIdx.x, width = a.group_m * p.tiles_n, first = (pid / width) * a.group_m;
    const int gsz = min(p.tiles_m - first, a.group_m);
    p.pid = pid;
    p.m0 = (first + (pid % width) % gsz) * CFG::BM;
    p.n0 = ((pid % width) / gsz) * CFG::BN;
    p.k0 = blockIdx.y * a.k_chunk;
    p.k1 = min(a.K, p.k0 + a.k_chunk);
    return p;
}

/* ---- global -> shared (cp.async, zero-filled outside the matrix and the k-slice) -------------- */

template <class CFG>
static __device__ __forceinline__ void tf_load_tile(const mm_args &a, const tf_place &p, unsigned sA, unsigned sB,
                                                    int k0, int tid) {
    constexpr int BN4 = CFG::BN / 4;
    tf_load_a<CFG>(sA, p.A, a.M, a.K, p.m0, k0, p.k1, a.vec_a, tid);
    if (a.vec_b) {
#pragma unroll
        for (int it = 0; it < CFG::BK * BN4 / CFG::THREADS; it++) {
            const int q = it * CFG::THREADS + tid, r = q / BN4, c = (q % BN4) * 4;
            const int k = k0 + r, col = p.n0 + c;
            const bool ok = k < p.k1 && col < a.N; /* N is a multiple of 4 here */
            mm_cp_async16_u(sB + 4u * (unsigned)(r * CFG::LDB + c), ok ? p.B + (long long)k * a.N + col : p.B,
                            ok ? 16 : 0);
        }
    } else {
#pragma unroll
        for (int it = 0; it < CFG::BK * BN4 / CFG::THREADS; it++) {
            const int q = it * CFG::THREADS + tid, r = q / BN4, c = (q % BN4) * 4;
            const int k = k0 + r;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const bool ok = k < p.k1 && p.n0 + c + e < a.N;
                mm_cp_async4_u(sB + 4u * (unsigned)(r * CFG::LDB + c + e),
                               ok ? p.B + (long long)k * a.N + p.n0 + c + e : p.B, ok ? 4 : 0);
            }
        }
    }
}

/* ---- the epilogue ----------------------------------------------------------------------------- */

/* Two outputs (row, col), (row, col + 1) through the epilogue; col is even. */
static __device__ __forceinline__ void tf_store2(float *C, const mm_args &a, int row, int col, float v0, float v1) {
    if (row >= a.M || col >= a.N)
        return;
    float *q = C + (long long)row * a.N + col;
    if (a.vec_c) { /* N % 4 == 0 and aligned rows: col + 1 < N, 8-byte aligned */
        *reinterpret_cast<float2 *>(q) = make_float2(mm_epi(v0, col, a), mm_epi(v1, col + 1, a));
    } else {
        q[0] = mm_epi(v0, col, a);
        if (col + 1 < a.N)
            q[1] = mm_epi(v1, col + 1, a);
    }
}

/* The last block's sum of a tile's split_k slices, V consecutive outputs per load: the block's
 * threads share the tile, each its Q groups, and every slice's Q loads are in flight together
 * (a loop of dependent loads per output was latency-bound: split 8 was slower than split 1). */
template <class CFG, int V>
static __device__ __forceinline__ void tf_sum_slices(const mm_args &a, const tf_place &p, const float *ws_b,
                                                     long long mn) {
    constexpr int BNV = CFG::BN / V, RSTEP = CFG::THREADS / BNV, Q = CFG::BM / RSTEP;
    static_assert(CFG::THREADS % BNV == 0 && CFG::BM % RSTEP == 0, "whole rows per pass");
    const int r0 = p.m0 + threadIdx.x / BNV, col = p.n0 + (threadIdx.x % BNV) * V;
    float s[Q][V];
#pragma unroll
    for (int q = 0; q < Q; q++)
#pragma unroll
        for (int v = 0; v < V; v++)
            s[q][v] = 0.0f;
    if (col < a.N) {
        for (int sp = 0; sp < a.split_k; sp++) { /* slice order from 0.0f: the same bits every time */
            const float *w = ws_b + sp * mn + (long long)r0 * a.N + col;
#pragma unroll
            for (int q = 0; q < Q; q++) {
                if (r0 + q * RSTEP >= a.M)
                    break;
                const float *src = w + (long long)q * RSTEP * a.N;
                if constexpr (V == 4) {
                    const float4 x = __ldcg(reinterpret_cast<const float4 *>(src));
                    s[q][0] += x.x; s[q][1] += x.y; s[q][2] += x.z; s[q][3] += x.w;
                } else {
                    s[q][0] += __ldcg(src);
                }
            }
        }
    }
#pragma unroll
    for (int q = 0; q < Q; q++) {
        const int row = r0 + q * RSTEP;
        if (row >= a.M || col >= a.N)
            break;
        if constexpr (V == 4)
            mm_store4(p.C, a, row, col, s[q][0], s[q][1], s[q][2], s[q][3]);
        else
            p.C[(long long)row * a.N + col] = mm_epi(s[q][0], col, a);
    }
}

/* Split-K: this block's raw partial into its slice of the workspace (batch, split, M, N); the
 * last block to arrive at the tile sums the slices in order 0, 1, ... from 0.0f (the same bits
 * whatever the arrival order), applies the epilogue and resets the tile's counter. */
template <class CFG>
static __device__ __forceinline__ void tf_reduce(const float (&acc)[CFG::MT][CFG::NT][4], const mm_args &a,
                                                 const tf_place &p, int r0, int c0, bool owner) {
    const long long mn = (long long)a.M * a.N;
    float *ws_b = a.ws + p.b * a.split_k * mn;
    float *part = ws_b + (long long)blockIdx.y * mn;
#pragma unroll
    for (int i = 0; i < CFG::MT; i++)
#pragma unroll
        for (int j = 0; j < CFG::NT; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = r0 + i * 16 + h * 8, col = c0 + j * 8;
                if (!owner)
                    continue;
                if (row < a.M && col < a.N)
                    __stcg(part + (long long)row * a.N + col, acc[i][j][2 * h]);
                if (row < a.M && col + 1 < a.N)
                    __stcg(part + (long long)row * a.N + col + 1, acc[i][j][2 * h + 1]);
            }
    __shared__ int s_last;
    __threadfence(); /* partials visible device-wide before the arrival is counted */
    __syncthreads();
    int *counter = a.counters + p.b * ((long long)p.tiles_m * p.tiles_n) + p.pid;
    if (threadIdx.x == 0)
        s_last = atomicAdd(counter, 1) == a.split_k - 1;
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    if (a.N % 4 == 0)
        tf_sum_slices<CFG, 4>(a, p, ws_b, mn);
    else
        tf_sum_slices<CFG, 1>(a, p, ws_b, mn);
    if (threadIdx.x == 0)
        *counter = 0; /* ready for the next launch on this workspace */
}

/* ---- the kernel ------------------------------------------------------------------------------- */

template <class CFG>
__global__ void __launch_bounds__(CFG::THREADS, CFG::MINB) mm_3xtf32_kernel(mm_args a) {
    extern __shared__ __align__(16) float tf_smem[];
    const tf_place p = tf_locate<CFG>(a);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wt = warp % CFG::TILE_WARPS, ks = warp / CFG::TILE_WARPS; /* warp tile, k-slice */
    const int wm0 = (wt % CFG::WARPS_M) * CFG::WM, wn0 = (wt / CFG::WARPS_M) * CFG::WN;
    float acc[CFG::MT][CFG::NT][4];
    tf_zero<CFG>(acc);
    const int ktiles = p.k1 > p.k0 ? (p.k1 - p.k0 + CFG::BK - 1) / CFG::BK : 0;
    tf_mainloop<CFG>(acc, tf_smem, ktiles, p.k0, wm0, wn0, ks * (CFG::BK / CFG::KS), g, t,
                     [&](unsigned sA, unsigned sB, int k) { tf_load_tile<CFG>(a, p, sA, sB, k, tid); });
    if constexpr (CFG::KS == 2) { /* k-slice 1 hands its sums to k-slice 0 (fixed order: the same bits) */
        constexpr int R = CFG::MT * CFG::NT * 4;
        float *hand = tf_smem + wt * R * 32 + lane;
        __syncthreads(); /* every warp is done with the pipeline's shared memory */
        if (ks == 1)
#pragma unroll
            for (int q = 0; q < R; q++)
                hand[q * 32] = acc[q / (CFG::NT * 4)][(q / 4) % CFG::NT][q % 4];
        __syncthreads();
        if (ks == 0)
#pragma unroll
            for (int q = 0; q < R; q++)
                acc[q / (CFG::NT * 4)][(q / 4) % CFG::NT][q % 4] += hand[q * 32];
    }
    const int r0 = p.m0 + wm0 + g, c0 = p.n0 + wn0 + 2 * t;
    if (a.split_k > 1) {
        tf_reduce<CFG>(acc, a, p, r0, c0, ks == 0);
        return;
    }
    if (ks != 0)
        return;
#pragma unroll
    for (int i = 0; i < CFG::MT; i++)
#pragma unroll
        for (int j = 0; j < CFG::NT; j++) {
            tf_store2(p.C, a, r0 + i * 16, c0 + j * 8, acc[i][j][0], acc[i][j][1]);
            tf_store2(p.C, a, r0 + i * 16 + 8, c0 + j * 8, acc[i][j][2], acc[i][j][3]);
        }
}

template <class CFG>
static void tf_launch(const mm_args &a, long long batch, cudaStream_t s) {
    static bool attr = false;
    if (!attr) { /* more than 48 KB of dynamic shared memory needs the opt-in */
        CUDA_CHECK(cudaFuncSetAttribute(mm_3xtf32_kernel<CFG>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        CFG::SMEM_BYTES));
        attr = true;
    }
    const unsigned tiles = (unsigned)(((a.M + CFG::BM - 1) / CFG::BM) * ((a.N + CFG::BN - 1) / CFG::BN));
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        mm_3xtf32_kernel<CFG><<<dim3(tiles, (unsigned)c.split_k, items), CFG::THREADS, CFG::SMEM_BYTES, s>>>(c);
        CUDA_LAUNCH_CHECK();
    });
}

/* ---- configurations, choice, workspace ------------------------------------------------------- */

struct tf_entry {
    const char *name;
    int bm, bn, bk, smem;
    void (*launch)(const mm_args &a, long long batch, cudaStream_t s);
};

#define TF_ENTRY(BM, BN, BK, WM, WN, ST, MB, KS)                                                      \
    {#BM "x" #BN "x" #BK "_w" #WM "x" #WN "_s" #ST "_b" #MB "_k" #KS, BM, BN, BK,                    \
     tf_cfg<BM, BN, BK, WM, WN, ST, MB, KS>::SMEM_BYTES, tf_launch<tf_cfg<BM, BN, BK, WM, WN, ST, MB, KS>>}

static const tf_entry tf_table[] = {
    TF_ENTRY(128, 128, 32, 32, 64, 3, 1, 1),
    TF_ENTRY(128, 128, 32, 64, 32, 3, 1, 1),
    TF_ENTRY(64, 128, 32, 32, 32, 4, 2, 1),
    TF_ENTRY(64, 64, 32, 32, 32, 4, 3, 1),
    TF_ENTRY(64, 64, 32, 32, 32, 4, 1, 2),
    TF_ENTRY(32, 64, 32, 32, 32, 4, 2, 2),
    TF_ENTRY(64, 32, 32, 32, 32, 4, 2, 2),
};
static const int tf_count = (int)(sizeof tf_table / sizeof tf_table[0]);

int mm_3xtf32_config_count(void) { return tf_count; }

const char *mm_3xtf32_config_name(int i) { return i >= 0 && i < tf_count ? tf_table[i].name : "?"; }

void mm_3xtf32_config_tile(int cfg, int *bm, int *bn) {
    const bool ok = cfg >= 0 && cfg < tf_count;
    *bm = ok ? tf_table[cfg].bm : 0;
    *bn = ok ? tf_table[cfg].bn : 0;
}

int mm_3xtf32_config_find(const char *name) {
    for (int i = 0; i < tf_count; i++)
        if (name && !strcmp(name, tf_table[i].name))
            return i;
    return -1;
}

/* The split-K workspace of this kernel (partial sums, per-tile arrival counters that are zero
 * between launches): launches that share it are ordered (one stream), as the FP32 kernel's. */
static mm_dbuf tf_ws;       /* floats */
static mm_dbuf tf_counters; /* ints */

/* Measured on an H100 (bench/matmul/3xtf32.md): 128x128 tiles when they fill 1.5 waves of the SMs
 * (2048^3: 53 TF against 49 for 64x64); else 64x64 tiles while they fill the SMs (1024x3072x768:
 * 45 TF against 36 for 128x128); else 64x32 tiles with two k-slices per warp tile (twice the
 * warps in flight) split over k toward two blocks per SM, at least 192 of k per slice (BERT's
 * 128x768x768 16.6 us against 31.7 for 64x64 unsplit). */
void mm_3xtf32_choose(const mm_problem *p, int *cfg, int *split, int *group) {
    static int big = -1, mid = -1, small = -1;
    if (big < 0) {
        big = mm_3xtf32_config_find("128x128x32_w32x64_s3_b1_k1");
        mid = mm_3xtf32_config_find("64x64x32_w32x32_s4_b3_k1");
        small = mm_3xtf32_config_find("64x32x32_w32x32_s4_b2_k2");
        if (big < 0 || mid < 0 || small < 0) /* a bug: the names are in the list above */
            base_die("3xtf32 heuristic: configuration missing from the list");
    }
    const long long sms = mm_device()->sm_count;
    auto tiles = [&](int bm, int bn) { return ((p->m + bm - 1) / bm) * ((p->n + bn - 1) / bn) * p->batch; };
    *group = 8;
    *split = 1;
    *cfg = big;
    if (tiles(128, 128) * 2 >= 3 * sms)
        return;
    *cfg = mid;
    if (tiles(64, 64) >= sms)
        return;
    *cfg = small;
    long long s = (2 * sms + tiles(64, 32) / 2) / tiles(64, 32), kmax = p->k / 192;
    if (s > kmax)
        s = kmax;
    *split = s > 16 ? 16 : s < 1 ? 1 : (int)s;
}

void mm_3xtf32_run_at(const mm_problem *p, int cfg, int split, int group, const float *A, const float *B,
                      const float *bias, float *C, cudaStream_t s) {
    const tf_entry *e = &tf_table[cfg];
    mm_args a = mm_args_make(p, A, B, bias, C);
    a.group_m = group < 1 ? 1 : group;
    if (split > 1) {
        const long long per = (p->k + split - 1) / split, chunk = (per + e->bk - 1) / e->bk * e->bk;
        const int splits = (int)((p->k + chunk - 1) / chunk); /* slices that are not empty */
        if (splits > 1) {
            const long long tiles = ((p->m + e->bm - 1) / e->bm) * ((p->n + e->bn - 1) / e->bn);
            /* a launcher cannot fail (matmul_impl.h): out of memory here aborts */
            CUDA_CHECK(mm_dbuf_grow(&tf_ws, (size_t)(p->batch * splits * p->m * p->n) * sizeof(float), false, s));
            CUDA_CHECK(mm_dbuf_grow(&tf_counters, (size_t)(p->batch * tiles) * sizeof(int), true, s));
            a.split_k = splits;
            a.k_chunk = (int)chunk;
            a.ws = (float *)tf_ws.p;
            a.counters = (int *)tf_counters.p;
        }
    }
    e->launch(a, p->batch, s);
}

/* The wgmma path (matmul_3xtf32_wgmma.cu): 1 when it ran p, 0 when p is left to this kernel. */
int mm_3xtf32_wgmma_try(const mm_problem *p, const float *A, const float *B, const float *bias, float *C,
                        cudaStream_t s);

void mm_3xtf32_run(const mm_problem *p, const float *A, const float *B, const float *bias, float *C,
                   cudaStream_t s) {
    if (mm_3xtf32_wgmma_try(p, A, B, bias, C, s)) /* Hopper, large enough problems */
        return;
    int cfg, split, group;
    mm_3xtf32_choose(p, &cfg, &split, &group);
    mm_3xtf32_run_at(p, cfg, split, group, A, B, bias, C, s);
}
