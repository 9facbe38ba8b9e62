/* matmul_wt_cfg.cuh: the warp-tiled template's tile math (matmul_warptile.cuh): a configuration's
 * compile-time facts (block, warp and thread tiles, thread layout, shared-memory layout, the
 * asserts that make a configuration legal) and a block's place in the problem (its tile after
 * rasterization, its k-slice, each thread's warp and lane position).
 *
 * Block tile BM x BN, k-step BK; A is kept transposed in shared memory, sAt[k][m] with rows padded
 * by 4 floats, B as sB[k][n]. The block's warps form a (BM/WM) x (BN/WN) grid; a warp's 32 threads
 * form a TR x TC grid (TR = WM/TM, TC = WN/TN) and each thread owns TM x TN outputs made of 4x4
 * pieces spaced TR*4 rows and TC*4 columns apart. A warp's float4 reads of A then touch TR
 * distinct, contiguous 16-byte words and of B TC words: one shared-memory wavefront each for TR,
 * TC <= 8.
 */
#ifndef TASC_MATMUL_WT_CFG_CUH
#define TASC_MATMUL_WT_CFG_CUH

#include "matmul_common.cuh"

/* STAGES: shared-memory stages (PIPE 1 uses 2); KU: unroll of the k loop inside a tile (a full
 * unroll lets ptxas hoist fragment loads of later k-steps and run out of registers under a cap);
 * MINB: blocks per SM the register allocation must allow (__launch_bounds__). */
template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int STAGES_, int KU_, int MINB_,
          int PIPE_, int CLUSTER_ = 0>
struct mm_wt_cfg {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, TM = TM_, TN = TN_;
    static constexpr int STAGES = (PIPE_ == 0 || PIPE_ == 4) ? STAGES_ : 2, KU = KU_, MINB = MINB_, PIPE = PIPE_;
    static constexpr int CLUSTER = CLUSTER_; /* split-K kind: 0 last block, 1 cluster, 2 co-resident */
    static constexpr int WARPS_N = BN / WN;
    static constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    static constexpr int TR = WM / TM, TC = WN / TN; /* thread grid inside a warp */
    static constexpr int SUBM = TM / 4, SUBN = TN / 4;
    static constexpr int LDA = BM + 4; /* sAt row stride: BM % 32 == 0 makes it 4 mod 32 */
    static constexpr int LDB = BN;
    /* pipelines 0 .. 3: a stage is { sAt (BK, LDA), sB (BK, LDB) }; pipeline 4: { sB, raw A (BM*BK) }
     * and the two transposed A buffers after the ring, at AT_OFF */
    static constexpr int STAGE_FLOATS = PIPE_ == 4 ? BK * LDB + BM * BK : BK * LDA + BK * LDB;
    static constexpr int B_OFF = PIPE_ == 4 ? 0 : BK * LDA;      /* sB inside a stage */
    static constexpr int RAW_OFF = BK * LDB;                      /* raw A inside a stage (pipeline 4) */
    static constexpr int AT_OFF = STAGES * STAGE_FLOATS;          /* pipeline 4: sAt[2] */
    static constexpr int LDR = BN + 4; /* row stride of the partial tile (cluster reduction) */
    static constexpr int PIPE_FLOATS = STAGES * STAGE_FLOATS + (PIPE_ == 4 ? 2 * BK * LDA : 0);
    static constexpr int RED_FLOATS = CLUSTER == 1 ? BM * LDR : 0;
    static constexpr int SMEM_BYTES = (PIPE_FLOATS > RED_FLOATS ? PIPE_FLOATS : RED_FLOATS) * (int)sizeof(float);
    static constexpr int A_KV = BM * BK / THREADS; /* consecutive k of A per thread per tile */
    static constexpr int B_PER = BK * BN / THREADS; /* elements of B per thread per tile */
    /* copies: A_TPR threads per row of A; B_TPR threads per row of B in 16-byte pieces, which then
     * cover B_RS4 rows at once (B_RS1 rows with 4-byte pieces) */
    static constexpr int A_TPR = BK / A_KV, B_TPR = BN / 4, B_RS4 = THREADS / (BN / 4), B_RS1 = THREADS / BN;
    static_assert(BM % WM == 0 && BN % WN == 0, "warp tile must divide the block tile");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tile is made of 4x4 pieces");
    static_assert(TR * TC == 32, "a warp's threads must cover the warp tile");
    static_assert(BM % 32 == 0 && BN % 4 == 0, "shared layout assumes these");
    static_assert((BM * BK) % THREADS == 0 && A_KV >= 1 && BK % A_KV == 0, "A copies: whole rows");
    static_assert(THREADS % BN == 0 && BK % (THREADS / BN) == 0, "B copies (4-byte): whole rows");
    static_assert(BK % (THREADS / (BN / 4)) == 0, "B copies (16-byte): whole rows");
    static_assert(PIPE == 0 ? STAGES >= 2 : (PIPE >= 1 && PIPE <= 4), "pipeline kinds 0 .. 4");
    static_assert(PIPE != 4 || (STAGES >= 3 && A_KV % 4 == 0), "pipeline 4: a ring of 3 or more, A in 16-byte pieces");
    static_assert(PIPE < 2 || (KU == BK && BK % 2 == 0), "pipelines 2 .. 4 need the k loop fully unrolled");
};

/* Where this block and thread work (filled by mm_wt_kernel). Block order: blockIdx.x is mapped to
 * (tile row, tile column) in groups of group_m tile rows (group_m = 1: plain row-major order), so
 * that consecutive blocks share rows of A and columns of B while those are still in L2.
 * blockIdx.y is the k-slice [kb, ke), blockIdx.z the batch item. */
template <class CFG>
struct mm_wt_place {
    int tid;
    int wm0, wn0;             /* this thread's warp's sub-tile inside the block tile */
    int tr, tc;               /* this thread's place in its warp's TR x TC grid */
    int tiles_m, tiles_n, pid; /* tiles of C; this block's tile number (before rasterization) */
    int m0, n0;               /* the block tile's first row and column of C */
    const float *A, *B;       /* this batch item's operands */
    float *C;
    int split, kb, ke;        /* k-slice blockIdx.y: k in [kb, ke) */
    int ktiles;               /* k-steps of the slice */
    /* output (i, 4*j4 .. 4*j4+3) of this thread is C row m0 + row(i), columns n0 + col(j4) .. +3 */
    __device__ __forceinline__ int row(int i) const { return wm0 + (i / 4) * CFG::TR * 4 + tr * 4 + i % 4; }
    __device__ __forceinline__ int col(int j4) const { return wn0 + j4 * CFG::TC * 4 + tc * 4; }
};

#endif
