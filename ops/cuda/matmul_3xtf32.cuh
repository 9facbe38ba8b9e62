/* matmul_3xtf32.cuh: the device pieces of the 3xTF32 mma.sync kernels, shared by the matmul
 * (matmul_3xtf32.cu) and the implicit-GEMM convolution (conv_3xtf32.cu): the TF32 split of an FP32
 * value, the m16n8k8 product, the tile configuration, the A-tile load of a row-major matrix, and one
 * k-tile of the three products from shared memory. Static inline device code only.
 */
#ifndef TASC_MATMUL_3XTF32_CUH
#define TASC_MATMUL_3XTF32_CUH

#include <stdint.h>

#include "matmul_common.cuh"

/* ---- the split and the product ---------------------------------------------------------------- */

/* x = hi + lo: hi is x rounded to TF32 (11 significant bits, half-way away from zero) by integer
 * arithmetic, lo = x - hi exactly. The tensor core reads only the TF32 bits of lo (it truncates
 * the low 13), an error below 2^-22 |x|, random in sign, so a product's error stays near FP32's.
 * Not cvt.rna.tf32.f32: that conversion issues at a quarter of the FP32 rate and bounded the
 * first version of this kernel at a third of the tensor-core peak. An infinite x gives lo = NaN. */
template <bool LO_ROUND = false>
static __device__ __forceinline__ void tf_split(float x, uint32_t &hi, uint32_t &lo) {
    const uint32_t h = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    hi = h;
    lo = __float_as_uint(x - __uint_as_float(h));
    if constexpr (LO_ROUND)
        lo = (lo + 0x1000u) & 0xffffe000u;
}

static __device__ __forceinline__ void tf_mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* ---- tile configurations -------------------------------------------------------------------- */

/* Block tile BM x BN, k-step BK, warp tile WM x WN (MT x NT mma tiles of 16x8), STAGES deep.
 * Shared memory per stage: A as (BM, BK + 4) and B as (BK, BN + 8): a fragment load of a warp
 * (lane = 4 g + t) reads A at g*LDA + t (LDA = 4 mod 32: banks 4g + t) and B at t*LDB + g
 * (LDB = 8 mod 32: banks 8t + g), 32 distinct banks; rows stay 16-byte aligned for cp.async. */
template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_, int MINB_, int KS_ = 1, int LOR_ = 0,
          int FLUSH_ = 0>
struct tf_cfg {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_, MINB = MINB_;
    /* KS = 2: two warps per warp tile, each over half of every k-tile, summed through shared memory
     * at the end: twice the warps in flight for the small grids of small problems */
    static constexpr int KS = KS_;
    static constexpr bool LO_ROUND = LOR_ != 0; /* round lo to TF32 too (2 more integer operations) */
    static constexpr bool FLUSH_STEP = FLUSH_ != 0; /* fresh accumulators every k-step, not every k-tile */
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN, TILE_WARPS = WARPS_M * WARPS_N;
    static constexpr int THREADS = TILE_WARPS * KS * 32;
    static constexpr int MT = WM / 16, NT = WN / 8;
    static constexpr int LDA = BK + 4, LDB = BN + 8;
    static constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;
    static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 4;
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0, "tile shape");
    static_assert((BK / KS) % 8 == 0 && (KS == 1 || BM * BN * 4 <= SMEM_BYTES), "k-slices, hand-off space");
    static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole chunks per thread");
};

/* ---- global -> shared: the A tile ------------------------------------------------------------- */

/* Rows [m0, m0 + BM) x columns [k0, k0 + BK) of the row-major (M, K) matrix A into the stage at
 * sA (BM rows of LDA), zero-filled outside the matrix and from column k1 on; vec: 16-byte copies
 * (K and k1 multiples of 4, rows 16-byte aligned), else 4-byte ones. */
template <class CFG>
static __device__ __forceinline__ void tf_load_a(unsigned sA, const float *A, int M, int K, int m0, int k0, int k1,
                                                 bool vec, int tid) {
    constexpr int BK4 = CFG::BK / 4;
    if (vec) {
#pragma unroll
        for (int it = 0; it < CFG::BM * BK4 / CFG::THREADS; it++) {
            const int q = it * CFG::THREADS + tid, r = q / BK4, c = (q % BK4) * 4;
            const int row = m0 + r, k = k0 + c;
            const bool ok = row < M && k < k1;
            mm_cp_async16_u(sA + 4u * (unsigned)(r * CFG::LDA + c), ok ? A + (long long)row * K + k : A, ok ? 16 : 0);
        }
    } else {
#pragma unroll
        for (int it = 0; it < CFG::BM * BK4 / CFG::THREADS; it++) {
            const int q = it * CFG::THREADS + tid, r = q / BK4, c = (q % BK4) * 4;
            const int row = m0 + r;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const bool ok = row < M && k0 + c + e < k1;
                mm_cp_async4_u(sA + 4u * (unsigned)(r * CFG::LDA + c + e), ok ? A + (long long)row * K + k0 + c + e : A,
                               ok ? 4 : 0);
            }
        }
    }
}

/* Unroll of the k-steps inside a k-tile (1: each step's fragments are loaded in its own pass). */
#ifndef TF_KK_UNROLL
#define TF_KK_UNROLL 1
#endif
static constexpr int tf_kk_unroll = TF_KK_UNROLL; /* #pragma unroll does not expand macros */

/* Zeros into a warp tile's accumulators. */
template <class CFG>
static __device__ __forceinline__ void tf_zero(float (&acc)[CFG::MT][CFG::NT][4]) {
#pragma unroll
    for (int i = 0; i < CFG::MT; i++)
#pragma unroll
        for (int j = 0; j < CFG::NT; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[i][j][r] = 0.0f;
}

/* acc += part, element by element (FP32 adds, round to nearest). */
template <class CFG>
static __device__ __forceinline__ void tf_fold(float (&acc)[CFG::MT][CFG::NT][4], const float (&part)[CFG::MT][CFG::NT][4]) {
#pragma unroll
    for (int i = 0; i < CFG::MT; i++)
#pragma unroll
        for (int j = 0; j < CFG::NT; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[i][j][r] += part[i][j][r];
}

/* ---- one k-tile from shared memory: split, then the three products ------------------------- */

/* The tensor core adds a product to its accumulator input rounding toward zero: chained over all
 * of K, that bias grew the error linearly in K (3.6e-6 at K = 4096 against cuBLAS's 3e-7). So a
 * k-tile's 3 BK/8 products go into fresh accumulators, added to the running sums with FP32 adds
 * (round to nearest): the truncating chains stay 3 BK/8 products long. Fresh accumulators for the
 * whole warp tile (not one 16-row tile at a time) leave MT x NT independent chains in flight. */
template <class CFG>
static __device__ __forceinline__ void tf_ktile(float (&acc)[CFG::MT][CFG::NT][4], const float *As, const float *Bs,
                                                int kbeg, int g, int t) {
    float part[CFG::MT][CFG::NT][4];
    tf_zero<CFG>(part);
#pragma unroll tf_kk_unroll
    for (int kk = kbeg; kk < kbeg + CFG::BK / CFG::KS; kk += 8) {
        uint32_t bh[CFG::NT][2], bl[CFG::NT][2];
#pragma unroll
        for (int j = 0; j < CFG::NT; j++) {
            const float *p = Bs + (kk + t) * CFG::LDB + j * 8 + g;
            tf_split<CFG::LO_ROUND>(p[0], bh[j][0], bl[j][0]);
            tf_split<CFG::LO_ROUND>(p[4 * CFG::LDB], bh[j][1], bl[j][1]);
        }
#pragma unroll
        for (int i = 0; i < CFG::MT; i++) {
            uint32_t ah[4], al[4];
            const float *p = As + (i * 16 + g) * CFG::LDA + kk + t;
            tf_split<CFG::LO_ROUND>(p[0], ah[0], al[0]);
            tf_split<CFG::LO_ROUND>(p[8 * CFG::LDA], ah[1], al[1]);
            tf_split<CFG::LO_ROUND>(p[4], ah[2], al[2]);
            tf_split<CFG::LO_ROUND>(p[8 * CFG::LDA + 4], ah[3], al[3]);
#pragma unroll
            for (int j = 0; j < CFG::NT; j++) { /* small terms first */
                tf_mma(part[i][j], al, bh[j]);
                tf_mma(part[i][j], ah, bl[j]);
                tf_mma(part[i][j], ah, bh[j]);
            }
        }
        if constexpr (CFG::FLUSH_STEP) {
            tf_fold<CFG>(acc, part);
            tf_zero<CFG>(part);
        }
    }
    if constexpr (!CFG::FLUSH_STEP)
        tf_fold<CFG>(acc, part);
}

/* ---- the k-loop ------------------------------------------------------------------------------- */

/* The k-loop of a block over ktiles k-tiles from k0: a STAGES-deep cp.async pipeline in smem
 * (STAGES stages of A then B), load(sA, sB, k) issuing the copies of the tile at k into a stage's
 * shared-memory addresses; each landed tile multiplied into acc by this warp's tile (A rows from
 * wm0, B columns from wn0, k-steps from kbeg: tf_ktile). Nothing is in flight on return. Shared
 * by the matmul and the convolution, which differ only in how their tiles are loaded. */
template <class CFG, class LOAD>
static __device__ __forceinline__ void tf_mainloop(float (&acc)[CFG::MT][CFG::NT][4], float *smem, int ktiles,
                                                   int k0, int wm0, int wn0, int kbeg, int g, int t, LOAD &&load) {
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(smem);
    constexpr unsigned STAGE_BYTES = (CFG::A_STAGE + CFG::B_STAGE) * 4;
#pragma unroll
    for (int s = 0; s < CFG::STAGES - 1; s++) {
        if (s < ktiles)
            load(s0 + s * STAGE_BYTES, s0 + s * STAGE_BYTES + CFG::A_STAGE * 4, k0 + s * CFG::BK);
        mm_cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; kt++) {
        mm_cp_async_wait<CFG::STAGES - 2>();
        __syncthreads(); /* tile kt landed for every thread; the stage of tile kt-1 is free */
        const int nk = kt + CFG::STAGES - 1;
        if (nk < ktiles) {
            const unsigned st = s0 + (nk % CFG::STAGES) * STAGE_BYTES;
            load(st, st + CFG::A_STAGE * 4, k0 + nk * CFG::BK);
        }
        mm_cp_async_commit();
        const float *As = smem + (kt % CFG::STAGES) * (CFG::A_STAGE + CFG::B_STAGE);
        tf_ktile<CFG>(acc, As + wm0 * CFG::LDA, As + CFG::A_STAGE + wn0, kbeg, g, t);
    }
    mm_cp_async_wait<0>(); /* nothing in flight when the block leaves */
}

#endif
