/* matmul_warptile.cuh: the warp-tiled kernel template behind v7, v8 and the tuned version, with
 * block rasterization and split-K as run-time arguments.
 *
 * Block tile BM x BN, k-step BK; A is kept transposed in shared memory, sAt[k][m] with rows padded
 * by 4 floats, B as sB[k][n]. Two ways to fill shared memory (PIPE):
 *   0  STAGES stages filled by cp.async (v6's scheme: A element by element, B in 16-byte copies),
 *      STAGES-1 tiles in flight while one is computed, one barrier per tile;
 *   1  two stages, register-staged: the global loads of tile kt+1 (float4 where aligned) are issued
 *      before tile kt is computed and stored to the other stage after it, one barrier per tile;
 *   2  as 1, plus fragments double-buffered in registers and the barrier inside the last k-step,
 *      so the next tile's first shared-memory reads overlap the current tile's last FMAs;
 *   3  as 2, with B copied by cp.async straight into the next stage (only A, which is transposed
 *      on the way, passes through registers): fewer registers and instructions per tile.
 *   4  (name x) as 3 with a STAGES-deep cp.async ring for both operands: A by 16-byte copies too,
 *      untransposed, each thread into its own slots of the ring stage; one tile before it is
 *      computed, each thread moves its own copy (so no extra barrier) into one of two transposed
 *      buffers sAt. STAGES-1 tiles of global loads in flight instead of pipeline 3's one: for
 *      short k-slices (split-K on 128-row shapes), where one tile of lookahead leaves each k-step's
 *      memory latency partly exposed. Layout: STAGES x { sB (BK, LDB), raw A (BM*BK) }, then
 *      2 x sAt (BK, LDA).
 * The block's warps form a (BM/WM) x (BN/WN) grid; a warp's 32 threads form a TR x TC
 * grid (TR = WM/TM, TC = WN/TN) and each thread owns TM x TN outputs made of 4x4 pieces spaced
 * TR*4 rows and TC*4 columns apart. A warp's float4 reads of A then touch TR distinct, contiguous
 * 16-byte words and of B TC words: one shared-memory wavefront each for TR, TC <= 8.
 *
 * Block order: blockIdx.x is mapped to (tile row, tile column) in groups of group_m tile rows
 * (group_m = 1: plain row-major order). Consecutive blocks then share rows of A and columns of B
 * while those are still in L2.
 * Split-K: blockIdx.y is the k-slice. With split_k > 1 every block writes its raw partial tile to
 * the workspace; the block that arrives last at the tile (an atomic counter, reset by that block)
 * sums the split_k partials in slice order 0, 1, ..., so the result does not depend on which block
 * came last, applies the epilogue and writes C.
 * Cluster split-K (CLUSTER, configuration names ending in _c; split_k <= 16): the split_k blocks of a
 * tile form one thread-block cluster (Hopper). Each writes its partial tile into its own shared
 * memory; after a cluster barrier, block r reduces the r-th share of the tile's float4 words,
 * reading the split_k partials through distributed shared memory in slice order 0, 1, ... (the
 * same order whichever block reduces: deterministic), applies the epilogue once and writes C. No
 * workspace, no atomic counter, no second pass through L2, and the reduction runs on all the
 * tile's blocks at once instead of on the last one.
 * Co-resident split-K (CLUSTER == 2, names ending in _g): the reduction of the cluster kind without
 * a cluster. Each block writes its partial tile to the workspace, counts its arrival at the tile
 * and waits until all split_k slices have arrived; then block r reduces the r-th share of the tile
 * from the workspace (L2), in slice order, and writes C. A cluster must sit inside one GPC, and
 * at the 128-row shapes the placement left some SMs without a block while others had three
 * (Nsight Compute: sm__cycles_active.min 0, max 1.2x the mean); a plain grid is spread over all
 * SMs. Waiting for other blocks is safe because the launch is cooperative (all blocks resident,
 * else the launch is refused; mm_choice_check checks it first). The counter counts arrivals and
 * departures; the last block to leave resets it for the next launch on the stream.
 */
#ifndef TASC_MATMUL_WARPTILE_CUH
#define TASC_MATMUL_WARPTILE_CUH

#include <cooperative_groups.h>

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

/* acc += the tile in shared memory: sA = this thread's A fragment base in sAt, sB likewise. */
template <class CFG>
static __device__ __forceinline__ void mm_wt_compute(float (&acc)[CFG::TM][CFG::TN], const float *sA,
                                                     const float *sB) {
#pragma unroll(CFG::KU)
    for (int k = 0; k < CFG::BK; k++) {
        float av[CFG::TM], bv[CFG::TN];
#pragma unroll
        for (int i = 0; i < CFG::SUBM; i++) {
            float4 v = *reinterpret_cast<const float4 *>(&sA[k * CFG::LDA + i * CFG::TR * 4]);
            av[i * 4 + 0] = v.x; av[i * 4 + 1] = v.y; av[i * 4 + 2] = v.z; av[i * 4 + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < CFG::SUBN; j++) {
            float4 v = *reinterpret_cast<const float4 *>(&sB[k * CFG::LDB + j * CFG::TC * 4]);
            bv[j * 4 + 0] = v.x; bv[j * 4 + 1] = v.y; bv[j * 4 + 2] = v.z; bv[j * 4 + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < CFG::TM; i++)
#pragma unroll
            for (int j = 0; j < CFG::TN; j++)
                acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
}

/* SPLIT: compiled with the split-K reduction (a separate instantiation: the reduction's code
 * would otherwise cost registers in every launch). */
template <class CFG, bool SPLIT>
__global__ void __launch_bounds__(CFG::THREADS, CFG::MINB) mm_wt_kernel(mm_args a) {
    constexpr int BM = CFG::BM, BN = CFG::BN, BK = CFG::BK, TM = CFG::TM, TN = CFG::TN;
    constexpr int STAGES = CFG::STAGES, THREADS = CFG::THREADS, LDA = CFG::LDA, LDB = CFG::LDB;
    extern __shared__ __align__(16) float sm[]; /* STAGES x { sAt (BK, LDA), sB (BK, LDB) } (pipeline 4: above) */

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm0 = (warp / CFG::WARPS_N) * CFG::WM, wn0 = (warp % CFG::WARPS_N) * CFG::WN;
    const int tr = lane / CFG::TC, tc = lane % CFG::TC;

    /* block rasterization */
    const int tiles_m = (a.M + BM - 1) / BM, tiles_n = (a.N + BN - 1) / BN;
    const int pid = (int)blockIdx.x;
    const int per_group = a.group_m * tiles_n;
    const int first_m = (pid / per_group) * a.group_m;
    const int gsize = min(tiles_m - first_m, a.group_m);
    const int m0 = (first_m + (pid % per_group) % gsize) * BM;
    const int n0 = ((pid % per_group) / gsize) * BN;

    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    const int split = (int)blockIdx.y;
    const int kb = split * a.k_chunk;
    const int ke = min(a.K, kb + a.k_chunk);
    const int ktiles = (ke - kb + BK - 1) / BK;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    /* Copies. Everything that does not change from tile to tile is computed here once: source
     * pointers (advanced by one k-step per tile), shared offsets, and which rows and columns are
     * inside the matrix (outside: zeros). Only the last tile of a k-slice can be partial in k;
     * it alone checks k (kt >= kfull).
     * A: this thread owns row a_m of the tile, k offsets a_k .. a_k + A_KV - 1, stored transposed
     * into sAt[k][m]. B: columns b_c .. b_c+3 of rows b_kr + j*B_RS4 (16-byte path), or column b_c
     * of rows b_kr + j*B_RS1 (4-byte path, when rows of B are not 16-byte aligned). */
    constexpr int A_KV = CFG::A_KV, A_TPR = BK / A_KV;
    const int a_m = tid / A_TPR, a_k = (tid % A_TPR) * A_KV;
    const bool a_row_ok = m0 + a_m < a.M;
    const float *a_cur = A + (long long)min(m0 + a_m, a.M - 1) * a.K + kb + a_k; /* k of the next tile */
    constexpr int B_TPR = BN / 4, B_RS4 = THREADS / (BN / 4), B_RS1 = THREADS / BN;
    const bool vec_b = a.vec_b;
    const int b_c = vec_b ? (tid % B_TPR) * 4 : tid % BN;
    const int b_kr = vec_b ? tid / B_TPR : tid / BN;
    const int b_left = a.N - (n0 + b_c); /* columns of B from this thread's first to the edge */
    const float *b_cur = B + (long long)(kb + b_kr) * a.N + (b_left > 0 ? n0 + b_c : 0);
    const long long b_jstep = (long long)(vec_b ? B_RS4 : B_RS1) * a.N, b_tstep = (long long)BK * a.N;
    const int kfull = (ke - kb) / BK; /* tiles with all BK rows of k inside the slice */
    const int a_sts = a_k * LDA + a_m;              /* A element i goes to a_sts + i*LDA */
    const int b_sts = CFG::B_OFF + b_kr * LDB + b_c; /* B row j of this thread goes to b_sts + j*rs*LDB */
    const float *s_rd_a = sm + (CFG::PIPE == 4 ? CFG::AT_OFF : 0) + wm0 + tr * 4; /* stage 0's A fragment base */
    const float *s_rd_b = sm + CFG::B_OFF + wn0 + tc * 4;                          /* stage 0's B fragment base */

    /* cp.async of B (pipelines 0 and 3): shared address, bytes per copy (0 outside the matrix) */
    const int b_bytes = vec_b ? (b_left >= 4 ? 16 : (b_left > 0 ? 4 * b_left : 0)) : (b_left > 0 ? 4 : 0);
    const unsigned s_base = (unsigned)__cvta_generic_to_shared(sm);
    const unsigned b_dst = s_base + 4u * b_sts;
    auto copy_b = [&](int stage, int kt) { /* tile kt of B into stage, by cp.async; b_cur not advanced */
        const unsigned so = (unsigned)(stage * CFG::STAGE_FLOATS * 4);
        const int klim = kt < kfull ? BK : ke - kb - kt * BK;
        if (vec_b) {
#pragma unroll
            for (int j = 0; j < BK / B_RS4; j++)
                mm_cp_async16_u(b_dst + so + 4u * j * B_RS4 * LDB, b_cur + j * b_jstep,
                                b_kr + j * B_RS4 < klim ? b_bytes : 0);
        } else {
#pragma unroll
            for (int j = 0; j < BK / B_RS1; j++)
                mm_cp_async4_u(b_dst + so + 4u * j * B_RS1 * LDB, b_cur + j * b_jstep,
                               b_kr + j * B_RS1 < klim ? b_bytes : 0);
        }
    };

    if constexpr (CFG::PIPE == 0) {
        const int a_bytes = a_row_ok ? 4 : 0;
        const unsigned a_dst = s_base + 4u * a_sts;
        auto load_tile = [&](int stage, int kt) {
            const unsigned so = (unsigned)(stage * CFG::STAGE_FLOATS * 4);
            if (kt < kfull) {
#pragma unroll
                for (int i = 0; i < A_KV; i++)
                    mm_cp_async4_u(a_dst + so + 4u * i * LDA, a_cur + i, a_bytes);
                if (vec_b) {
#pragma unroll
                    for (int j = 0; j < BK / B_RS4; j++)
                        mm_cp_async16_u(b_dst + so + 4u * j * B_RS4 * LDB, b_cur + j * b_jstep, b_bytes);
                } else {
#pragma unroll
                    for (int j = 0; j < BK / B_RS1; j++)
                        mm_cp_async4_u(b_dst + so + 4u * j * B_RS1 * LDB, b_cur + j * b_jstep, b_bytes);
                }
            } else {
                const int klim = ke - kb - kt * BK; /* rows of k of this tile inside the slice */
#pragma unroll
                for (int i = 0; i < A_KV; i++)
                    mm_cp_async4_u(a_dst + so + 4u * i * LDA, a_cur + i, a_k + i < klim ? a_bytes : 0);
                if (vec_b) {
#pragma unroll
                    for (int j = 0; j < BK / B_RS4; j++)
                        mm_cp_async16_u(b_dst + so + 4u * j * B_RS4 * LDB, b_cur + j * b_jstep,
                                        b_kr + j * B_RS4 < klim ? b_bytes : 0);
                } else {
#pragma unroll
                    for (int j = 0; j < BK / B_RS1; j++)
                        mm_cp_async4_u(b_dst + so + 4u * j * B_RS1 * LDB, b_cur + j * b_jstep,
                                       b_kr + j * B_RS1 < klim ? b_bytes : 0);
                }
            }
            a_cur += BK;
            b_cur += b_tstep;
        };
#pragma unroll
        for (int st = 0; st < STAGES - 1; st++) {
            if (st < ktiles)
                load_tile(st, st);
            mm_cp_async_commit(); /* empty groups keep the group count uniform */
        }
        int rstage = 0, wstage = STAGES - 1; /* stage read this tile, stage written this tile */
        for (int kt = 0; kt < ktiles; kt++) {
            mm_cp_async_wait<STAGES - 2>(); /* tile kt has landed (this thread's copies) */
            __syncthreads();                /* ... everyone's; and tile kt-1 is consumed */
            if (kt + STAGES - 1 < ktiles)
                load_tile(wstage, kt + STAGES - 1);
            mm_cp_async_commit();
            mm_wt_compute<CFG>(acc, s_rd_a + rstage * CFG::STAGE_FLOATS, s_rd_b + rstage * CFG::STAGE_FLOATS);
            rstage = rstage == STAGES - 1 ? 0 : rstage + 1;
            wstage = wstage == STAGES - 1 ? 0 : wstage + 1;
        }
        mm_cp_async_wait<0>();
    } else if constexpr (CFG::PIPE == 4) {
        /* cp.async ring of STAGES tiles (A untransposed: float4 q of this thread's A_KV values at
         * raw[(q * THREADS + tid) * 4], conflict-free both ways), then each thread transposes its
         * own copy into sAt[(kt+1) & 1] during tile kt's last k-step, after waiting for its own
         * copies: everyone's copies and transposes are published by the one barrier per tile. */
        constexpr int S = STAGES, AQ = A_KV / 4;
        const bool a_vec = a.vec_a;
        const unsigned a_raw = s_base + 4u * (CFG::RAW_OFF + 4 * tid);
        auto issue = [&](int kt) { /* tile kt into ring stage kt % S; one commit group per call */
            if (kt < ktiles) {
                const int stage = kt % S;
                const unsigned so = (unsigned)(stage * CFG::STAGE_FLOATS * 4);
                const int klim = kt < kfull ? BK : ke - kb - kt * BK;
                if (a_vec) {
#pragma unroll
                    for (int q = 0; q < AQ; q++) {
                        const int left = klim - (a_k + 4 * q);
                        mm_cp_async16_u(a_raw + so + 16u * q * THREADS, a_cur + 4 * q,
                                        a_row_ok ? (left >= 4 ? 16 : (left > 0 ? 4 * left : 0)) : 0);
                    }
                } else {
#pragma unroll
                    for (int i = 0; i < A_KV; i++)
                        mm_cp_async4_u(a_raw + so + 16u * (i / 4) * THREADS + 4u * (i % 4), a_cur + i,
                                       (a_row_ok && a_k + i < klim) ? 4 : 0);
                }
                copy_b(stage, kt);
                a_cur += BK;
                b_cur += b_tstep;
            }
            mm_cp_async_commit(); /* empty groups keep the count uniform */
        };
        auto transpose = [&](int kt) { /* this thread's raw A of tile kt -> sAt[kt & 1] */
            const float *raw = sm + (kt % S) * CFG::STAGE_FLOATS + CFG::RAW_OFF + 4 * tid;
            float *dst = sm + CFG::AT_OFF + (kt & 1) * BK * LDA + a_sts;
#pragma unroll
            for (int q = 0; q < AQ; q++) {
                const float4 v = *reinterpret_cast<const float4 *>(raw + 4 * q * THREADS);
                dst[(4 * q) * LDA] = v.x;
                dst[(4 * q + 1) * LDA] = v.y;
                dst[(4 * q + 2) * LDA] = v.z;
                dst[(4 * q + 3) * LDA] = v.w;
            }
        };
        float fa[2][TM], fb[2][TN];
        auto load_frag = [&](float(&xa)[TM], float(&xb)[TN], const float *sA, const float *sB) {
#pragma unroll
            for (int i = 0; i < CFG::SUBM; i++) {
                float4 v = *reinterpret_cast<const float4 *>(&sA[i * CFG::TR * 4]);
                xa[i * 4 + 0] = v.x; xa[i * 4 + 1] = v.y; xa[i * 4 + 2] = v.z; xa[i * 4 + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < CFG::SUBN; j++) {
                float4 v = *reinterpret_cast<const float4 *>(&sB[j * CFG::TC * 4]);
                xb[j * 4 + 0] = v.x; xb[j * 4 + 1] = v.y; xb[j * 4 + 2] = v.z; xb[j * 4 + 3] = v.w;
            }
        };
#pragma unroll
        for (int t = 0; t < S - 1; t++)
            issue(t);
        mm_cp_async_wait<S - 2>(); /* tile 0: this thread's copies */
        if (ktiles > 0)
            transpose(0);
        __syncthreads();
        load_frag(fa[0], fb[0], s_rd_a, s_rd_b);
        for (int kt = 0; kt < ktiles; kt++) {
            const bool next = kt + 1 < ktiles;
            /* into stage (kt - 1) % S: its last reads (tile kt-1's fragments, this thread's
             * transpose of it) came before the previous tile's barrier */
            issue(kt + S - 1);
            const float *ra = s_rd_a + (kt & 1) * BK * LDA, *rb = s_rd_b + (kt % S) * CFG::STAGE_FLOATS;
            const float *na = s_rd_a + ((kt + 1) & 1) * BK * LDA, *nb = s_rd_b + ((kt + 1) % S) * CFG::STAGE_FLOATS;
#pragma unroll
            for (int k = 0; k < BK; k++) {
                if (k == BK - 1) {
                    if (next) {
                        mm_cp_async_wait<S - 2>(); /* tile kt+1: this thread's copies */
                        transpose(kt + 1);         /* sAt[(kt+1)&1]: last read before tile kt-1's barrier */
                    }
                    __syncthreads();
                    if (next)
                        load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], na, nb);
                } else {
                    load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], ra + (k + 1) * LDA, rb + (k + 1) * LDB);
                }
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int j = 0; j < TN; j++)
                        acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
            }
        }
        mm_cp_async_wait<0>(); /* only empty groups remain; the shared memory may be reused */
    } else {
        /* register-staged double buffer (pipeline 3: only A; B goes by cp.async, waited for just
         * before the barrier) */
        const bool a_vec = a.vec_a && A_KV % 4 == 0; /* kb and a_k are multiples of 4 */
        const bool b_col_ok = b_left > 0;            /* 16-byte path: N % 4 == 0, so all 4 or none */
        float ra[A_KV], rb[CFG::PIPE == 3 ? 1 : CFG::B_PER];
        auto load_regs = [&](int kt, int stage) { /* tile kt; B (pipeline 3) straight into stage */
            const int klim = kt < kfull ? BK : ke - kb - kt * BK;
            if (a_vec && kt < kfull) {
#pragma unroll
                for (int q = 0; q < A_KV / 4; q++) {
                    float4 v = a_row_ok ? __ldg(reinterpret_cast<const float4 *>(a_cur) + q) : make_float4(0, 0, 0, 0);
                    ra[4 * q] = v.x; ra[4 * q + 1] = v.y; ra[4 * q + 2] = v.z; ra[4 * q + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < A_KV; i++)
                    ra[i] = (a_row_ok && a_k + i < klim) ? __ldg(a_cur + i) : 0.0f;
            }
            if constexpr (CFG::PIPE == 3) {
                copy_b(stage, kt);
                mm_cp_async_commit();
            } else if (vec_b) {
#pragma unroll
                for (int j = 0; j < BK / B_RS4; j++) {
                    float4 v = (b_col_ok && b_kr + j * B_RS4 < klim)
                                   ? __ldg(reinterpret_cast<const float4 *>(b_cur + j * b_jstep))
                                   : make_float4(0, 0, 0, 0);
                    rb[4 * j] = v.x; rb[4 * j + 1] = v.y; rb[4 * j + 2] = v.z; rb[4 * j + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int j = 0; j < BK / B_RS1; j++)
                    rb[j] = (b_col_ok && b_kr + j * B_RS1 < klim) ? __ldg(b_cur + j * b_jstep) : 0.0f;
            }
            a_cur += BK;
            b_cur += b_tstep;
        };
        auto store_regs = [&](int stage) {
            float *st = sm + stage * CFG::STAGE_FLOATS;
#pragma unroll
            for (int i = 0; i < A_KV; i++)
                st[a_sts + i * LDA] = ra[i];
            if constexpr (CFG::PIPE == 3) {
                mm_cp_async_wait<0>(); /* this thread's B copies of the tile have landed */
            } else if (vec_b) {
#pragma unroll
                for (int j = 0; j < BK / B_RS4; j++)
                    *reinterpret_cast<float4 *>(&st[b_sts + j * B_RS4 * LDB]) =
                        make_float4(rb[4 * j], rb[4 * j + 1], rb[4 * j + 2], rb[4 * j + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < BK / B_RS1; j++)
                    st[b_sts + j * B_RS1 * LDB] = rb[j];
            }
        };
        if (ktiles > 0) {
            load_regs(0, 0);
            store_regs(0);
        }
        __syncthreads();
        if constexpr (CFG::PIPE == 1) {
            for (int kt = 0; kt < ktiles; kt++) {
                const bool next = kt + 1 < ktiles;
                if (next)
                    load_regs(kt + 1, (kt + 1) & 1); /* in flight during the compute below */
                const int so = (kt & 1) * CFG::STAGE_FLOATS;
                mm_wt_compute<CFG>(acc, s_rd_a + so, s_rd_b + so);
                if (next)
                    store_regs((kt + 1) & 1); /* the other stage: last read before the previous barrier */
                __syncthreads();
            }
        } else {
            /* PIPE 2 and 3: as 1, with the fragments double-buffered in registers and the barrier moved
             * into the last k-step: after it, the first fragments of tile kt+1 are read while the
             * last k-step of tile kt is computed, so no warp waits for shared memory after the
             * barrier. Stage (kt+1)&1 is written at the last k-step of tile kt: its last reads
             * (tile kt-1's fragments) were issued before tile kt-1's barrier. */
            float fa[2][TM], fb[2][TN];
            auto load_frag = [&](float(&xa)[TM], float(&xb)[TN], const float *sA, const float *sB) {
#pragma unroll
                for (int i = 0; i < CFG::SUBM; i++) {
                    float4 v = *reinterpret_cast<const float4 *>(&sA[i * CFG::TR * 4]);
                    xa[i * 4 + 0] = v.x; xa[i * 4 + 1] = v.y; xa[i * 4 + 2] = v.z; xa[i * 4 + 3] = v.w;
                }
#pragma unroll
                for (int j = 0; j < CFG::SUBN; j++) {
                    float4 v = *reinterpret_cast<const float4 *>(&sB[j * CFG::TC * 4]);
                    xb[j * 4 + 0] = v.x; xb[j * 4 + 1] = v.y; xb[j * 4 + 2] = v.z; xb[j * 4 + 3] = v.w;
                }
            };
            load_frag(fa[0], fb[0], s_rd_a, s_rd_b);
            for (int kt = 0; kt < ktiles; kt++) {
                const bool next = kt + 1 < ktiles;
                if (next)
                    load_regs(kt + 1, (kt + 1) & 1);
                const int so = (kt & 1) * CFG::STAGE_FLOATS, nso = CFG::STAGE_FLOATS - so;
#pragma unroll
                for (int k = 0; k < BK; k++) {
                    if (k == BK - 1) {
                        if (next)
                            store_regs((kt + 1) & 1);
                        __syncthreads();
                        if (next)
                            load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], s_rd_a + nso, s_rd_b + nso);
                    } else {
                        load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], s_rd_a + so + (k + 1) * LDA,
                                  s_rd_b + so + (k + 1) * LDB);
                    }
#pragma unroll
                    for (int i = 0; i < TM; i++)
#pragma unroll
                        for (int j = 0; j < TN; j++)
                            acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
                }
            }
        }
    }

    /* output (i, j) of this thread is C row m0 + row_of(i), column n0 + col_of(j) */
#define MM_WT_ROW(i) (wm0 + ((i) / 4) * CFG::TR * 4 + tr * 4 + (i) % 4)
#define MM_WT_COL(j4) (wn0 + (j4) * CFG::TC * 4 + tc * 4)
    if (!SPLIT) {
#pragma unroll
        for (int i = 0; i < TM; i++) {
            int row = m0 + MM_WT_ROW(i);
            if (row >= a.M)
                continue;
#pragma unroll
            for (int j4 = 0; j4 < CFG::SUBN; j4++)
                mm_store4(C, a, row, n0 + MM_WT_COL(j4), acc[i][j4 * 4], acc[i][j4 * 4 + 1],
                          acc[i][j4 * 4 + 2], acc[i][j4 * 4 + 3]);
        }
        return;
    }

    if constexpr (CFG::CLUSTER == 1) {
        /* cluster split-K: partial tile into this block's shared memory, reduced over the cluster */
        namespace cg = cooperative_groups;
        cg::cluster_group cl = cg::this_cluster();
        constexpr int LDR = CFG::LDR, BN4 = BN / 4;
        __syncthreads(); /* every warp is done with the pipeline's shared memory */
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j4 = 0; j4 < CFG::SUBN; j4++)
                *reinterpret_cast<float4 *>(&sm[MM_WT_ROW(i) * LDR + MM_WT_COL(j4)]) =
                    make_float4(acc[i][j4 * 4], acc[i][j4 * 4 + 1], acc[i][j4 * 4 + 2], acc[i][j4 * 4 + 3]);
        cl.sync(); /* all partials of the tile written (release/acquire across the cluster) */
        const int ns = a.split_k; /* == cluster size == gridDim.y; this block's rank is split */
        const int stride = ns * THREADS;
        /* Up to 16 slices' loads are issued before the first add (one remote latency, not one per
         * slice): two outputs per round for up to 8 slices, one for 9 to 16. Rows and columns
         * outside C are read (inside the partial tile) but never stored. The adds run in slice
         * order from 0.0f, as in the workspace path: the same bits. */
        auto part = [&](int sp, int q) {
            return *reinterpret_cast<const float4 *>(cl.map_shared_rank(sm, sp) + (q / BN4) * LDR + (q % BN4) * 4);
        };
        auto put = [&](int q, const float4 *v, int n) {
            const int r = q / BN4, c = (q % BN4) * 4;
            if (m0 + r >= a.M || n0 + c >= a.N)
                return;
            float4 s4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int u = 0; u < 16; u++)
                if (u < n) {
                    s4.x += v[u].x; s4.y += v[u].y; s4.z += v[u].z; s4.w += v[u].w;
                }
            mm_store4(C, a, m0 + r, n0 + c, s4.x, s4.y, s4.z, s4.w);
        };
        if (ns <= 8) {
            for (int q = split * THREADS + tid; q < BM * BN4; q += 2 * stride) {
                const int q2 = q + stride;
                const bool two = q2 < BM * BN4;
                float4 v[16];
#pragma unroll
                for (int u = 0; u < 8; u++)
                    if (u < ns) {
                        v[u] = part(u, q);
                        if (two)
                            v[8 + u] = part(u, q2);
                    }
                put(q, v, ns);
                if (two)
                    put(q2, v + 8, ns);
            }
        } else {
            for (int q = split * THREADS + tid; q < BM * BN4; q += stride) {
                float4 v[16];
#pragma unroll
                for (int u = 0; u < 16; u++)
                    if (u < ns)
                        v[u] = part(u, q);
                put(q, v, ns);
            }
        }
        cl.sync(); /* no block leaves while others still read its shared memory */
        return;
    }

    /* split-K: raw partial tile into the workspace, then the last block of the tile reduces (kind
     * 0) or every block of the tile reduces its share (kind 2) */
    const long long b = (long long)blockIdx.z + a.batch0;
    const long long mn = (long long)a.M * a.N;
    float *ws_b = a.ws + b * a.split_k * mn; /* (split_k, M, N) of this batch item */
    float *part = ws_b + split * mn;
    const bool vec = (a.N % 4) == 0;
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int row = m0 + MM_WT_ROW(i);
        if (row >= a.M)
            continue;
#pragma unroll
        for (int j4 = 0; j4 < CFG::SUBN; j4++) {
            int col = n0 + MM_WT_COL(j4);
            float *p = part + (long long)row * a.N + col;
            if (vec && col + 3 < a.N) {
                __stcg(reinterpret_cast<float4 *>(p), make_float4(acc[i][j4 * 4], acc[i][j4 * 4 + 1],
                                                                  acc[i][j4 * 4 + 2], acc[i][j4 * 4 + 3]));
            } else {
#pragma unroll
                for (int c = 0; c < 4; c++)
                    if (col + c < a.N)
                        __stcg(p + c, acc[i][j4 * 4 + c]);
            }
        }
    }
    if constexpr (CFG::CLUSTER == 2) {
        const int ns = a.split_k;
        int *counter = a.counters + b * ((long long)tiles_m * tiles_n) + pid;
        __threadfence(); /* this thread's partials visible device-wide before the arrival is counted */
        __syncthreads();
        if (tid == 0) {
            atomicAdd(counter, 1);
            while (*reinterpret_cast<volatile int *>(counter) < ns) /* all slices arrived (departures only add) */
                ;
        }
        __syncthreads();
        __threadfence();
        constexpr int BN4 = BN / 4, SM_F4 = CFG::SMEM_BYTES / 16;
        const int stride = ns * THREADS;
        auto sum_global = [&](int row, int col) { /* from L2, up to 16 loads in flight */
            const float *p = ws_b + (long long)row * a.N + col;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f; /* slice order from 0.0f: the same bits as kinds 0, 1 */
            if (vec && col + 3 < a.N) {
                for (int sp0 = 0; sp0 < ns; sp0 += 16) {
                    float4 v[16];
#pragma unroll
                    for (int u = 0; u < 16; u++)
                        if (sp0 + u < ns)
                            v[u] = __ldcg(reinterpret_cast<const float4 *>(p + (sp0 + u) * mn));
#pragma unroll
                    for (int u = 0; u < 16; u++)
                        if (sp0 + u < ns) {
                            s0 += v[u].x; s1 += v[u].y; s2 += v[u].z; s3 += v[u].w;
                        }
                }
            } else {
                for (int sp = 0; sp < ns; sp++) {
                    if (col < a.N) s0 += __ldcg(p + sp * mn);
                    if (col + 1 < a.N) s1 += __ldcg(p + sp * mn + 1);
                    if (col + 2 < a.N) s2 += __ldcg(p + sp * mn + 2);
                    if (col + 3 < a.N) s3 += __ldcg(p + sp * mn + 3);
                }
            }
            mm_store4(C, a, row, col, s0, s1, s2, s3);
        };
        if (vec && stride <= SM_F4) {
            /* all of a round's partials in flight at once, by cp.async into this thread's own slots of
             * the (now idle) pipeline shared memory, float4 (j * ns + u) * THREADS + tid for its j-th
             * output and slice u: no registers held, no barrier (each thread reads its own copies) */
            const int per_round = SM_F4 / stride;
            const unsigned slot0 = s_base + 16u * tid;
            for (int q = split * THREADS + tid; q < BM * BN4;) {
                int j = 0;
                for (int qj = q; j < per_round && qj < BM * BN4; j++, qj += stride) {
                    const int row = m0 + qj / BN4, col = n0 + (qj % BN4) * 4;
                    if (row < a.M && col + 3 < a.N) {
                        const float *p = ws_b + (long long)row * a.N + col;
                        for (int u = 0; u < ns; u++)
                            mm_cp_async16_u(slot0 + 16u * (unsigned)((j * ns + u) * THREADS), p + u * mn, 16);
                    }
                }
                mm_cp_async_commit();
                mm_cp_async_wait<0>();
                for (int jj = 0; jj < j; jj++, q += stride) {
                    const int row = m0 + q / BN4, col = n0 + (q % BN4) * 4;
                    if (row >= a.M || col >= a.N)
                        continue;
                    if (col + 3 >= a.N) { /* the ragged right edge: from L2 */
                        sum_global(row, col);
                        continue;
                    }
                    const float4 *sv = reinterpret_cast<const float4 *>(sm) + jj * ns * THREADS + tid;
                    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                    for (int u = 0; u < ns; u++) {
                        const float4 v = sv[u * THREADS];
                        s0 += v.x; s1 += v.y; s2 += v.z; s3 += v.w;
                    }
                    mm_store4(C, a, row, col, s0, s1, s2, s3);
                }
            }
        } else {
            for (int q = split * THREADS + tid; q < BM * BN4; q += stride) {
                const int row = m0 + q / BN4, col = n0 + (q % BN4) * 4;
                if (row < a.M && col < a.N)
                    sum_global(row, col);
            }
        }
        __syncthreads(); /* this block's reads are done */
        if (tid == 0 && atomicAdd(counter, 1) == 2 * ns - 1)
            *counter = 0; /* the last to leave: every block is past its wait */
        return;
    }
    __shared__ int s_last;
    __threadfence(); /* partials visible device-wide before the arrival is counted */
    __syncthreads();
    int *counter = a.counters + b * ((long long)tiles_m * tiles_n) + pid;
    if (tid == 0)
        s_last = atomicAdd(counter, 1) == a.split_k - 1;
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int row = m0 + MM_WT_ROW(i);
        if (row >= a.M)
            continue;
#pragma unroll
        for (int j4 = 0; j4 < CFG::SUBN; j4++) {
            int col = n0 + MM_WT_COL(j4);
            const float *p = ws_b + (long long)row * a.N + col;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            if (vec && col + 3 < a.N) {
                for (int sp0 = 0; sp0 < a.split_k; sp0 += 8) { /* 8 loads in flight, added in slice order */
                    float4 v[8];
#pragma unroll
                    for (int u = 0; u < 8; u++)
                        if (sp0 + u < a.split_k)
                            v[u] = __ldcg(reinterpret_cast<const float4 *>(p + (sp0 + u) * mn));
#pragma unroll
                    for (int u = 0; u < 8; u++)
                        if (sp0 + u < a.split_k) {
                            s0 += v[u].x; s1 += v[u].y; s2 += v[u].z; s3 += v[u].w;
                        }
                }
            } else {
                for (int sp = 0; sp < a.split_k; sp++) {
                    if (col < a.N) s0 += __ldcg(p + sp * mn);
                    if (col + 1 < a.N) s1 += __ldcg(p + sp * mn + 1);
                    if (col + 2 < a.N) s2 += __ldcg(p + sp * mn + 2);
                    if (col + 3 < a.N) s3 += __ldcg(p + sp * mn + 3);
                }
            }
            mm_store4(C, a, row, col, s0, s1, s2, s3);
        }
    }
    if (tid == 0)
        *counter = 0; /* ready for the next launch on this workspace */
#undef MM_WT_ROW
#undef MM_WT_COL
}

/* Function attributes of one configuration's two kernels (dynamic shared memory limit, carveout
 * preference mm_attr_carveout, cluster sizes above 8), set again whenever mm_attr_gen moves. */
template <class CFG>
static void mm_wt_attrs(void) {
    static int attr_gen = -1; /* per instantiation; the module is not thread-safe */
    if (attr_gen == mm_attr_gen)
        return;
    CUDA_CHECK(cudaFuncSetAttribute(mm_wt_kernel<CFG, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    CFG::SMEM_BYTES));
    CUDA_CHECK(cudaFuncSetAttribute(mm_wt_kernel<CFG, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    CFG::SMEM_BYTES));
    CUDA_CHECK(cudaFuncSetAttribute(mm_wt_kernel<CFG, false>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    mm_attr_carveout));
    CUDA_CHECK(cudaFuncSetAttribute(mm_wt_kernel<CFG, true>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    mm_attr_carveout));
    if (CFG::CLUSTER == 1)
        CUDA_CHECK(cudaFuncSetAttribute(mm_wt_kernel<CFG, true>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    attr_gen = mm_attr_gen;
}

/* Groups of size blocks (one tile's k-slices) that can be resident at once: for a cluster
 * configuration, clusters of (1, size, 1) blocks (cudaOccupancyMaxActiveClusters; 0: a launch would
 * fail), cached per size; for a co-resident one (_g), resident blocks / size; 1 otherwise. */
template <class CFG>
static int mm_wt_max_clusters(int size) {
    static int known[17]; /* 0: not asked yet, else the answer + 1 */
    if (CFG::CLUSTER == 2 && size > 1) {
        static int per_sm = -1;
        if (per_sm < 0) {
            mm_wt_attrs<CFG>();
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mm_wt_kernel<CFG, true>, CFG::THREADS,
                                                                     CFG::SMEM_BYTES));
        }
        return per_sm * mm_device()->sm_count / size;
    }
    if (CFG::CLUSTER != 1 || size <= 1)
        return 1;
    if (size > 16)
        return 0;
    if (!known[size]) {
        mm_wt_attrs<CFG>();
        cudaLaunchConfig_t lc = {};
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = 1;
        at[0].val.clusterDim.y = (unsigned)size;
        at[0].val.clusterDim.z = 1;
        lc.gridDim = dim3(1, (unsigned)size, 1);
        lc.blockDim = dim3(CFG::THREADS);
        lc.dynamicSmemBytes = CFG::SMEM_BYTES;
        lc.attrs = at;
        lc.numAttrs = 1;
        int n = 0;
        if (cudaOccupancyMaxActiveClusters(&n, mm_wt_kernel<CFG, true>, &lc) != cudaSuccess) {
            (void)cudaGetLastError(); /* clear it: the size is not launchable */
            n = 0;
        }
        known[size] = n + 1;
    }
    return known[size] - 1;
}

/* Launcher of one configuration: grid (tiles, split_k, batch items); a cluster configuration with
 * split_k > 1 launches clusters of (1, split_k, 1) blocks, a co-resident one a cooperative grid. */
template <class CFG>
static void mm_wt_launch(const mm_args &a, long long batch, cudaStream_t s) {
    mm_wt_attrs<CFG>();
    long long tiles = (long long)((a.M + CFG::BM - 1) / CFG::BM) * ((a.N + CFG::BN - 1) / CFG::BN);
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        dim3 grid((unsigned)tiles, (unsigned)a.split_k, items);
        if (a.split_k > 1 && CFG::CLUSTER == 1) {
            cudaLaunchConfig_t lc = {};
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeClusterDimension;
            at[0].val.clusterDim.x = 1;
            at[0].val.clusterDim.y = (unsigned)a.split_k;
            at[0].val.clusterDim.z = 1;
            lc.gridDim = grid;
            lc.blockDim = dim3(CFG::THREADS);
            lc.dynamicSmemBytes = CFG::SMEM_BYTES;
            lc.stream = s;
            lc.attrs = at;
            lc.numAttrs = 1;
            CUDA_CHECK(cudaLaunchKernelEx(&lc, mm_wt_kernel<CFG, true>, c));
        } else if (a.split_k > 1 && CFG::CLUSTER == 2) {
            cudaLaunchConfig_t lc = {};
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeCooperative; /* every block resident: the waits cannot hang */
            at[0].val.cooperative = 1;
            lc.gridDim = grid;
            lc.blockDim = dim3(CFG::THREADS);
            lc.dynamicSmemBytes = CFG::SMEM_BYTES;
            lc.stream = s;
            lc.attrs = at;
            lc.numAttrs = 1;
            CUDA_CHECK(cudaLaunchKernelEx(&lc, mm_wt_kernel<CFG, true>, c));
        } else if (a.split_k > 1) {
            mm_wt_kernel<CFG, true><<<grid, CFG::THREADS, CFG::SMEM_BYTES, s>>>(c);
        } else {
            mm_wt_kernel<CFG, false><<<grid, CFG::THREADS, CFG::SMEM_BYTES, s>>>(c);
        }
        CUDA_LAUNCH_CHECK();
    });
}

#endif
