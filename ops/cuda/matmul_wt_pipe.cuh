/* matmul_wt_pipe.cuh: the main loops of the warp-tiled template (matmul_warptile.cuh): how the
 * tiles of A and B reach shared memory and registers, and the FMAs on them. Five pipelines (PIPE;
 * the letter is the one in configuration names, "srdhx"[PIPE]):
 *   0  s: STAGES stages filled by cp.async (v6's scheme: A element by element, B in 16-byte
 *      copies), STAGES-1 tiles in flight while one is computed, one barrier per tile;
 *   1  r: two stages, register-staged: the global loads of tile kt+1 (float4 where aligned) are
 *      issued before tile kt is computed and stored to the other stage after it, one barrier per
 *      tile;
 *   2  d: as 1, plus fragments double-buffered in registers and the barrier inside the last k-step,
 *      so the next tile's first shared-memory reads overlap the current tile's last FMAs;
 *   3  h: as 2, with B copied by cp.async straight into the next stage (only A, which is
 *      transposed on the way, passes through registers): fewer registers and instructions per tile.
 *   4  x: as 3 with a STAGES-deep cp.async ring for both operands: A by 16-byte copies too,
 *      untransposed, each thread into its own slots of the ring stage; one tile before it is
 *      computed, each thread moves its own copy (so no extra barrier) into one of two transposed
 *      buffers sAt. STAGES-1 tiles of global loads in flight instead of pipeline 3's one: for
 *      short k-slices (split-K on 128-row shapes), where one tile of lookahead leaves each k-step's
 *      memory latency partly exposed. Layout: STAGES x { sB (BK, LDB), raw A (BM*BK) }, then
 *      2 x sAt (BK, LDA).
 * Every pipeline adds the same products to acc in the same order (k ascending), so they give the
 * same bits. Each has its load stage(s) and its loop; mm_wt_mainloop picks one at compile time.
 */
#ifndef TASC_MATMUL_WT_PIPE_CUH
#define TASC_MATMUL_WT_PIPE_CUH

#include "matmul_wt_cfg.cuh"

/* ---- shared by every pipeline ---------------------------------------------------------------- */

/* One k-step's fragments from shared memory (pipelines 2 .. 4): sA = this thread's A fragment base
 * in sAt at that k, sB likewise.
 * Code shape is performance here: nvcc's result depends on which code sits in which function and
 * how it is inlined, so the pieces keep the shape they had in the one-kernel version (checked by
 * comparing SASS): this one is plain inline, as the lambda it was (__forceinline__ gives other PTX
 * and other register allocations), the FMAs of a k-step are written out in each loop, and
 * mm_wt_compute keeps its own fragment loads. nvcc inlines all of them (no call in the PTX). */
template <class CFG>
static __device__ inline void mm_wt_load_frag(float (&xa)[CFG::TM], float (&xb)[CFG::TN], const float *sA,
                                              const float *sB) {
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
}

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

/* This thread's copies, set up once per block: everything that does not change from tile to tile
 * is computed here once: source pointers (advanced by one k-step per tile), shared offsets, and
 * which rows and columns are inside the matrix (outside: zeros). Only the last tile of a k-slice
 * can be partial in k; it alone checks k (kt >= kfull).
 * A: this thread owns row a_m of the tile, k offsets a_k .. a_k + A_KV - 1, stored transposed
 * into sAt[k][m]. B: columns b_c .. b_c+3 of rows b_kr + j*B_RS4 (16-byte path), or column b_c
 * of rows b_kr + j*B_RS1 (4-byte path, when rows of B are not 16-byte aligned). */
template <class CFG>
struct mm_wt_copy {
    int a_k;
    bool a_row_ok;
    const float *a_cur;  /* k of the next tile */
    bool vec_b;
    int b_kr, b_left;    /* b_left: columns of B from this thread's first to the edge */
    const float *b_cur;  /* k of the next tile */
    long long b_jstep, b_tstep;
    int kfull;           /* tiles with all BK rows of k inside the slice */
    int a_sts;           /* A element i goes to a_sts + i*LDA */
    int b_sts;           /* B row j of this thread goes to b_sts + j*rs*LDB */
    const float *s_rd_a; /* stage 0's A fragment base */
    const float *s_rd_b; /* stage 0's B fragment base */
    int b_bytes;         /* cp.async of B (pipelines 0, 3, 4): bytes per copy (0 outside the matrix) */
    unsigned s_base;     /* sm as a shared-memory address */
    unsigned b_dst;      /* this thread's first B copy, as a shared-memory address */
};

template <class CFG>
static __device__ __forceinline__ mm_wt_copy<CFG> mm_wt_copy_make(const mm_args &a, const mm_wt_place<CFG> &p,
                                                                  float *sm) {
    constexpr int BN = CFG::BN, BK = CFG::BK, LDA = CFG::LDA, LDB = CFG::LDB;
    mm_wt_copy<CFG> c;
    const int a_m = p.tid / CFG::A_TPR;
    c.a_k = (p.tid % CFG::A_TPR) * CFG::A_KV;
    c.a_row_ok = p.m0 + a_m < a.M;
    c.a_cur = p.A + (long long)min(p.m0 + a_m, a.M - 1) * a.K + p.kb + c.a_k;
    c.vec_b = a.vec_b;
    const int b_c = c.vec_b ? (p.tid % CFG::B_TPR) * 4 : p.tid % BN;
    c.b_kr = c.vec_b ? p.tid / CFG::B_TPR : p.tid / BN;
    c.b_left = a.N - (p.n0 + b_c);
    c.b_cur = p.B + (long long)(p.kb + c.b_kr) * a.N + (c.b_left > 0 ? p.n0 + b_c : 0);
    c.b_jstep = (long long)(c.vec_b ? CFG::B_RS4 : CFG::B_RS1) * a.N;
    c.b_tstep = (long long)BK * a.N;
    c.kfull = (p.ke - p.kb) / BK;
    c.a_sts = c.a_k * LDA + a_m;
    c.b_sts = CFG::B_OFF + c.b_kr * LDB + b_c;
    c.s_rd_a = sm + (CFG::PIPE == 4 ? CFG::AT_OFF : 0) + p.wm0 + p.tr * 4;
    c.s_rd_b = sm + CFG::B_OFF + p.wn0 + p.tc * 4;
    c.b_bytes = c.vec_b ? (c.b_left >= 4 ? 16 : (c.b_left > 0 ? 4 * c.b_left : 0)) : (c.b_left > 0 ? 4 : 0);
    c.s_base = (unsigned)__cvta_generic_to_shared(sm);
    c.b_dst = c.s_base + 4u * c.b_sts;
    return c;
}

/* Tile kt of B into stage, by cp.async (pipelines 3 and 4); b_cur is not advanced. */
template <class CFG>
static __device__ __forceinline__ void mm_wt_copy_b(const mm_wt_copy<CFG> &c, const mm_wt_place<CFG> &p, int stage,
                                                    int kt) {
    constexpr int BK = CFG::BK, LDB = CFG::LDB, B_RS4 = CFG::B_RS4, B_RS1 = CFG::B_RS1;
    const unsigned so = (unsigned)(stage * CFG::STAGE_FLOATS * 4);
    const int klim = kt < c.kfull ? BK : p.ke - p.kb - kt * BK;
    if (c.vec_b) {
#pragma unroll
        for (int j = 0; j < BK / B_RS4; j++)
            mm_cp_async16_u(c.b_dst + so + 4u * j * B_RS4 * LDB, c.b_cur + j * c.b_jstep,
                            c.b_kr + j * B_RS4 < klim ? c.b_bytes : 0);
    } else {
#pragma unroll
        for (int j = 0; j < BK / B_RS1; j++)
            mm_cp_async4_u(c.b_dst + so + 4u * j * B_RS1 * LDB, c.b_cur + j * c.b_jstep,
                           c.b_kr + j * B_RS1 < klim ? c.b_bytes : 0);
    }
}

/* ---- pipeline 0 (s): a STAGES-deep cp.async ring ------------------------------------------------ */

/* Tile kt of A and B into stage by cp.async (A transposed element by element); advances a_cur and
 * b_cur. a_dst: this thread's first A copy as a shared address, a_bytes: 4, or 0 outside A. */
template <class CFG>
static __device__ __forceinline__ void mm_wt_load_s(mm_wt_copy<CFG> &c, const mm_wt_place<CFG> &p, unsigned a_dst,
                                                    int a_bytes, int stage, int kt) {
    constexpr int BK = CFG::BK, LDA = CFG::LDA, LDB = CFG::LDB, A_KV = CFG::A_KV;
    constexpr int B_RS4 = CFG::B_RS4, B_RS1 = CFG::B_RS1;
    const unsigned so = (unsigned)(stage * CFG::STAGE_FLOATS * 4);
    if (kt < c.kfull) {
#pragma unroll
        for (int i = 0; i < A_KV; i++)
            mm_cp_async4_u(a_dst + so + 4u * i * LDA, c.a_cur + i, a_bytes);
        if (c.vec_b) {
#pragma unroll
            for (int j = 0; j < BK / B_RS4; j++)
                mm_cp_async16_u(c.b_dst + so + 4u * j * B_RS4 * LDB, c.b_cur + j * c.b_jstep, c.b_bytes);
        } else {
#pragma unroll
            for (int j = 0; j < BK / B_RS1; j++)
                mm_cp_async4_u(c.b_dst + so + 4u * j * B_RS1 * LDB, c.b_cur + j * c.b_jstep, c.b_bytes);
        }
    } else {
        const int klim = p.ke - p.kb - kt * BK; /* rows of k of this tile inside the slice */
#pragma unroll
        for (int i = 0; i < A_KV; i++)
            mm_cp_async4_u(a_dst + so + 4u * i * LDA, c.a_cur + i, c.a_k + i < klim ? a_bytes : 0);
        if (c.vec_b) {
#pragma unroll
            for (int j = 0; j < BK / B_RS4; j++)
                mm_cp_async16_u(c.b_dst + so + 4u * j * B_RS4 * LDB, c.b_cur + j * c.b_jstep,
                                c.b_kr + j * B_RS4 < klim ? c.b_bytes : 0);
        } else {
#pragma unroll
            for (int j = 0; j < BK / B_RS1; j++)
                mm_cp_async4_u(c.b_dst + so + 4u * j * B_RS1 * LDB, c.b_cur + j * c.b_jstep,
                               c.b_kr + j * B_RS1 < klim ? c.b_bytes : 0);
        }
    }
    c.a_cur += BK;
    c.b_cur += c.b_tstep;
}

template <class CFG>
static __device__ __forceinline__ void mm_wt_loop_s(float (&acc)[CFG::TM][CFG::TN], mm_wt_copy<CFG> &c,
                                                    const mm_wt_place<CFG> &p) {
    constexpr int STAGES = CFG::STAGES;
    const int a_bytes = c.a_row_ok ? 4 : 0;
    const unsigned a_dst = c.s_base + 4u * c.a_sts;
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < p.ktiles)
            mm_wt_load_s<CFG>(c, p, a_dst, a_bytes, st, st);
        mm_cp_async_commit(); /* empty groups keep the group count uniform */
    }
    int rstage = 0, wstage = STAGES - 1; /* stage read this tile, stage written this tile */
    for (int kt = 0; kt < p.ktiles; kt++) {
        mm_cp_async_wait<STAGES - 2>(); /* tile kt has landed (this thread's copies) */
        __syncthreads();                /* ... everyone's; and tile kt-1 is consumed */
        if (kt + STAGES - 1 < p.ktiles)
            mm_wt_load_s<CFG>(c, p, a_dst, a_bytes, wstage, kt + STAGES - 1);
        mm_cp_async_commit();
        mm_wt_compute<CFG>(acc, c.s_rd_a + rstage * CFG::STAGE_FLOATS, c.s_rd_b + rstage * CFG::STAGE_FLOATS);
        rstage = rstage == STAGES - 1 ? 0 : rstage + 1;
        wstage = wstage == STAGES - 1 ? 0 : wstage + 1;
    }
    mm_cp_async_wait<0>();
}

/* ---- pipeline 4 (x): a cp.async ring for both operands, A transposed by its own thread ---------- */

/* cp.async ring of STAGES tiles (A untransposed: float4 q of this thread's A_KV values at
 * raw[(q * THREADS + tid) * 4], conflict-free both ways). Tile kt into ring stage kt % STAGES;
 * one commit group per call (an empty one past the last tile). a_raw: this thread's raw A slot in
 * stage 0, as a shared address. */
template <class CFG>
static __device__ __forceinline__ void mm_wt_issue_x(mm_wt_copy<CFG> &c, const mm_wt_place<CFG> &p, bool a_vec,
                                                     unsigned a_raw, int kt) {
    constexpr int BK = CFG::BK, THREADS = CFG::THREADS, A_KV = CFG::A_KV, AQ = A_KV / 4;
    if (kt < p.ktiles) {
        const int stage = kt % CFG::STAGES;
        const unsigned so = (unsigned)(stage * CFG::STAGE_FLOATS * 4);
        const int klim = kt < c.kfull ? BK : p.ke - p.kb - kt * BK;
        if (a_vec) {
#pragma unroll
            for (int q = 0; q < AQ; q++) {
                const int left = klim - (c.a_k + 4 * q);
                mm_cp_async16_u(a_raw + so + 16u * q * THREADS, c.a_cur + 4 * q,
                                c.a_row_ok ? (left >= 4 ? 16 : (left > 0 ? 4 * left : 0)) : 0);
            }
        } else {
#pragma unroll
            for (int i = 0; i < A_KV; i++)
                mm_cp_async4_u(a_raw + so + 16u * (i / 4) * THREADS + 4u * (i % 4), c.a_cur + i,
                               (c.a_row_ok && c.a_k + i < klim) ? 4 : 0);
        }
        mm_wt_copy_b<CFG>(c, p, stage, kt);
        c.a_cur += BK;
        c.b_cur += c.b_tstep;
    }
    mm_cp_async_commit(); /* empty groups keep the count uniform */
}

/* This thread's raw A of tile kt -> sAt[kt & 1]. */
template <class CFG>
static __device__ __forceinline__ void mm_wt_transpose_x(float *sm, int tid, int a_sts, int kt) {
    constexpr int LDA = CFG::LDA, THREADS = CFG::THREADS, AQ = CFG::A_KV / 4;
    const float *raw = sm + (kt % CFG::STAGES) * CFG::STAGE_FLOATS + CFG::RAW_OFF + 4 * tid;
    float *dst = sm + CFG::AT_OFF + (kt & 1) * CFG::BK * LDA + a_sts;
#pragma unroll
    for (int q = 0; q < AQ; q++) {
        const float4 v = *reinterpret_cast<const float4 *>(raw + 4 * q * THREADS);
        dst[(4 * q) * LDA] = v.x;
        dst[(4 * q + 1) * LDA] = v.y;
        dst[(4 * q + 2) * LDA] = v.z;
        dst[(4 * q + 3) * LDA] = v.w;
    }
}

/* Each thread transposes its own copy of tile kt+1 into sAt[(kt+1) & 1] during tile kt's last
 * k-step, after waiting for its own copies: everyone's copies and transposes are published by the
 * one barrier per tile. */
template <class CFG>
static __device__ __forceinline__ void mm_wt_loop_x(float (&acc)[CFG::TM][CFG::TN], const mm_args &a,
                                                    mm_wt_copy<CFG> &c, const mm_wt_place<CFG> &p, float *sm) {
    constexpr int BK = CFG::BK, TM = CFG::TM, TN = CFG::TN, LDA = CFG::LDA, LDB = CFG::LDB, S = CFG::STAGES;
    const bool a_vec = a.vec_a;
    const unsigned a_raw = c.s_base + 4u * (CFG::RAW_OFF + 4 * p.tid);
    float fa[2][TM], fb[2][TN];
#pragma unroll
    for (int t = 0; t < S - 1; t++)
        mm_wt_issue_x<CFG>(c, p, a_vec, a_raw, t);
    mm_cp_async_wait<S - 2>(); /* tile 0: this thread's copies */
    if (p.ktiles > 0)
        mm_wt_transpose_x<CFG>(sm, p.tid, c.a_sts, 0);
    __syncthreads();
    mm_wt_load_frag<CFG>(fa[0], fb[0], c.s_rd_a, c.s_rd_b);
    for (int kt = 0; kt < p.ktiles; kt++) {
        const bool next = kt + 1 < p.ktiles;
        /* into stage (kt - 1) % S: its last reads (tile kt-1's fragments, this thread's
         * transpose of it) came before the previous tile's barrier */
        mm_wt_issue_x<CFG>(c, p, a_vec, a_raw, kt + S - 1);
        const float *ra = c.s_rd_a + (kt & 1) * BK * LDA, *rb = c.s_rd_b + (kt % S) * CFG::STAGE_FLOATS;
        const float *na = c.s_rd_a + ((kt + 1) & 1) * BK * LDA, *nb = c.s_rd_b + ((kt + 1) % S) * CFG::STAGE_FLOATS;
#pragma unroll
        for (int k = 0; k < BK; k++) {
            if (k == BK - 1) {
                if (next) {
                    mm_cp_async_wait<S - 2>();                       /* tile kt+1: this thread's copies */
                    mm_wt_transpose_x<CFG>(sm, p.tid, c.a_sts, kt + 1); /* last read before kt-1's barrier */
                }
                __syncthreads();
                if (next)
                    mm_wt_load_frag<CFG>(fa[(k + 1) & 1], fb[(k + 1) & 1], na, nb);
            } else {
                mm_wt_load_frag<CFG>(fa[(k + 1) & 1], fb[(k + 1) & 1], ra + (k + 1) * LDA, rb + (k + 1) * LDB);
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
        }
    }
    mm_cp_async_wait<0>(); /* only empty groups remain; the shared memory may be reused */
}

/* ---- pipelines 1 (r), 2 (d), 3 (h): a register-staged double buffer ---------------------------- */

/* A tile on its way from global to shared memory (pipeline 3: only A; B goes by cp.async). */
template <class CFG>
struct mm_wt_regs {
    float ra[CFG::A_KV], rb[CFG::PIPE == 3 ? 1 : CFG::B_PER];
};

/* Tile kt into registers (pipeline 3: B straight into stage, waited for in mm_wt_store_regs);
 * advances a_cur and b_cur. a_vec: A by float4 (kb and a_k are multiples of 4); b_col_ok: this
 * thread's columns of B are inside the matrix (16-byte path: N % 4 == 0, so all 4 or none). */
template <class CFG>
static __device__ __forceinline__ void mm_wt_load_regs(mm_wt_regs<CFG> &r, mm_wt_copy<CFG> &c,
                                                       const mm_wt_place<CFG> &p, bool a_vec, bool b_col_ok, int kt,
                                                       int stage) {
    constexpr int BK = CFG::BK, A_KV = CFG::A_KV, B_RS4 = CFG::B_RS4, B_RS1 = CFG::B_RS1;
    const int klim = kt < c.kfull ? BK : p.ke - p.kb - kt * BK;
    if (a_vec && kt < c.kfull) {
#pragma unroll
        for (int q = 0; q < A_KV / 4; q++) {
            float4 v = c.a_row_ok ? __ldg(reinterpret_cast<const float4 *>(c.a_cur) + q) : make_float4(0, 0, 0, 0);
            r.ra[4 * q] = v.x; r.ra[4 * q + 1] = v.y; r.ra[4 * q + 2] = v.z; r.ra[4 * q + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < A_KV; i++)
            r.ra[i] = (c.a_row_ok && c.a_k + i < klim) ? __ldg(c.a_cur + i) : 0.0f;
    }
    if constexpr (CFG::PIPE == 3) {
        mm_wt_copy_b<CFG>(c, p, stage, kt);
        mm_cp_async_commit();
    } else if (c.vec_b) {
#pragma unroll
        for (int j = 0; j < BK / B_RS4; j++) {
            float4 v = (b_col_ok && c.b_kr + j * B_RS4 < klim)
                           ? __ldg(reinterpret_cast<const float4 *>(c.b_cur + j * c.b_jstep))
                           : make_float4(0, 0, 0, 0);
            r.rb[4 * j] = v.x; r.rb[4 * j + 1] = v.y; r.rb[4 * j + 2] = v.z; r.rb[4 * j + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < BK / B_RS1; j++)
            r.rb[j] = (b_col_ok && c.b_kr + j * B_RS1 < klim) ? __ldg(c.b_cur + j * c.b_jstep) : 0.0f;
    }
    c.a_cur += BK;
    c.b_cur += c.b_tstep;
}

/* The registers of mm_wt_load_regs into stage (A transposed). */
template <class CFG>
static __device__ __forceinline__ void mm_wt_store_regs(const mm_wt_regs<CFG> &r, const mm_wt_copy<CFG> &c,
                                                        float *sm, int stage) {
    constexpr int BK = CFG::BK, LDA = CFG::LDA, LDB = CFG::LDB, B_RS4 = CFG::B_RS4, B_RS1 = CFG::B_RS1;
    float *st = sm + stage * CFG::STAGE_FLOATS;
#pragma unroll
    for (int i = 0; i < CFG::A_KV; i++)
        st[c.a_sts + i * LDA] = r.ra[i];
    if constexpr (CFG::PIPE == 3) {
        mm_cp_async_wait<0>(); /* this thread's B copies of the tile have landed */
    } else if (c.vec_b) {
#pragma unroll
        for (int j = 0; j < BK / B_RS4; j++)
            *reinterpret_cast<float4 *>(&st[c.b_sts + j * B_RS4 * LDB]) =
                make_float4(r.rb[4 * j], r.rb[4 * j + 1], r.rb[4 * j + 2], r.rb[4 * j + 3]);
    } else {
#pragma unroll
        for (int j = 0; j < BK / B_RS1; j++)
            st[c.b_sts + j * B_RS1 * LDB] = r.rb[j];
    }
}

template <class CFG>
static __device__ __forceinline__ void mm_wt_loop_regs(float (&acc)[CFG::TM][CFG::TN], const mm_args &a,
                                                       mm_wt_copy<CFG> &c, const mm_wt_place<CFG> &p, float *sm) {
    constexpr int BK = CFG::BK, TM = CFG::TM, TN = CFG::TN, LDA = CFG::LDA, LDB = CFG::LDB;
    const bool a_vec = a.vec_a && CFG::A_KV % 4 == 0; /* kb and a_k are multiples of 4 */
    const bool b_col_ok = c.b_left > 0;              /* 16-byte path: N % 4 == 0, so all 4 or none */
    mm_wt_regs<CFG> r;
    if (p.ktiles > 0) {
        mm_wt_load_regs<CFG>(r, c, p, a_vec, b_col_ok, 0, 0);
        mm_wt_store_regs<CFG>(r, c, sm, 0);
    }
    __syncthreads();
    if constexpr (CFG::PIPE == 1) {
        for (int kt = 0; kt < p.ktiles; kt++) {
            const bool next = kt + 1 < p.ktiles;
            if (next)
                mm_wt_load_regs<CFG>(r, c, p, a_vec, b_col_ok, kt + 1, (kt + 1) & 1); /* in flight meanwhile */
            const int so = (kt & 1) * CFG::STAGE_FLOATS;
            mm_wt_compute<CFG>(acc, c.s_rd_a + so, c.s_rd_b + so);
            if (next)
                mm_wt_store_regs<CFG>(r, c, sm, (kt + 1) & 1); /* other stage: read before the last barrier */
            __syncthreads();
        }
    } else {
        /* PIPE 2 and 3: as 1, with the fragments double-buffered in registers and the barrier moved
         * into the last k-step: after it, the first fragments of tile kt+1 are read while the
         * last k-step of tile kt is computed, so no warp waits for shared memory after the
         * barrier. Stage (kt+1)&1 is written at the last k-step of tile kt: its last reads
         * (tile kt-1's fragments) were issued before tile kt-1's barrier. */
        float fa[2][TM], fb[2][TN];
        mm_wt_load_frag<CFG>(fa[0], fb[0], c.s_rd_a, c.s_rd_b);
        for (int kt = 0; kt < p.ktiles; kt++) {
            const bool next = kt + 1 < p.ktiles;
            if (next)
                mm_wt_load_regs<CFG>(r, c, p, a_vec, b_col_ok, kt + 1, (kt + 1) & 1);
            const int so = (kt & 1) * CFG::STAGE_FLOATS, nso = CFG::STAGE_FLOATS - so;
#pragma unroll
            for (int k = 0; k < BK; k++) {
                if (k == BK - 1) {
                    if (next)
                        mm_wt_store_regs<CFG>(r, c, sm, (kt + 1) & 1);
                    __syncthreads();
                    if (next)
                        mm_wt_load_frag<CFG>(fa[(k + 1) & 1], fb[(k + 1) & 1], c.s_rd_a + nso, c.s_rd_b + nso);
                } else {
                    mm_wt_load_frag<CFG>(fa[(k + 1) & 1], fb[(k + 1) & 1], c.s_rd_a + so + (k + 1) * LDA,
                                         c.s_rd_b + so + (k + 1) * LDB);
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

/* ---- the pipeline of a configuration ------------------------------------------------------------ */

/* acc = this block's k-slice of A x B at this thread's outputs. Other warps may still read the
 * shared memory on return: a reduction that reuses it passes a barrier first. */
template <class CFG>
static __device__ __forceinline__ void mm_wt_mainloop(float (&acc)[CFG::TM][CFG::TN], const mm_args &a,
                                                      const mm_wt_place<CFG> &p, float *sm) {
    mm_wt_copy<CFG> c = mm_wt_copy_make<CFG>(a, p, sm);
    if constexpr (CFG::PIPE == 0)
        mm_wt_loop_s<CFG>(acc, c, p);
    else if constexpr (CFG::PIPE == 4)
        mm_wt_loop_x<CFG>(acc, a, c, p, sm);
    else
        mm_wt_loop_regs<CFG>(acc, a, c, p, sm);
}

#endif
