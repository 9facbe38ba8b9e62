/* matmul_wt_epilogue.cuh: the end of the warp-tiled template (matmul_warptile.cuh): a thread's
 * accumulators to C without split-K, or the split-K reduction of one of three kinds. All three
 * sum a tile's split_k partials in slice order 0, 1, ..., from 0.0f, whichever block does it: the
 * same bits from every kind and every arrival order. The epilogue (bias, act) is applied once, to
 * the sum, by mm_store4_as (the plain store, or the scatter store of matmul.h's mm_scatter: the
 * partials go to the workspace by (row, col) either way, only the sums are scattered).
 *   0  last block (configurations without suffix): every block writes its raw partial tile to the
 *      workspace; the block that arrives last at the tile (an atomic counter, reset by that block)
 *      sums the partials and writes C.
 *   1  cluster (names ending in _c; split_k <= 16): the split_k blocks of a tile form one
 *      thread-block cluster (Hopper). Each writes its partial tile into its own shared memory;
 *      after a cluster barrier, block r reduces the r-th share of the tile's float4 words, reading
 *      the split_k partials through distributed shared memory, and writes C. No workspace, no
 *      atomic counter, no second pass through L2, and the reduction runs on all the tile's blocks
 *      at once instead of on the last one.
 *   2  co-resident (names ending in _g): the reduction of the cluster kind without a cluster. Each
 *      block writes its partial tile to the workspace, counts its arrival at the tile and waits
 *      until all split_k slices have arrived; then block r reduces the r-th share of the tile from
 *      the workspace (L2) and writes C. A cluster must sit inside one GPC, and at the 128-row
 *      shapes the placement left some SMs without a block while others had three (Nsight Compute:
 *      sm__cycles_active.min 0, max 1.2x the mean); a plain grid is spread over all SMs. Waiting
 *      for other blocks is safe because the launch is cooperative (all blocks resident, else the
 *      launch is refused; mm_choice_check checks it first). The counter counts arrivals and
 *      departures; the last block to leave resets it for the next launch on the stream.
 */
#ifndef TASC_MATMUL_WT_EPILOGUE_CUH
#define TASC_MATMUL_WT_EPILOGUE_CUH

#include <cooperative_groups.h>
#include <type_traits>

#include "matmul_wt_cfg.cuh"

/* The store of a kernel instantiation (its SCM parameter, matmul_warptile.cuh mm_wt_sc): 0 chosen
 * at run time by a.sc_n, 1 the plain store only, 2 the scatter store only. f is called with
 * std::true_type for the scatter store. */
template <int SCM, class F>
static __device__ __forceinline__ void mm_wt_with_store(const mm_args &a, F &&f) {
    if constexpr (SCM == 1)
        f(std::false_type{});
    else if constexpr (SCM == 2)
        f(std::true_type{});
    else if (a.sc_n)
        f(std::true_type{});
    else
        f(std::false_type{});
}

/* v = act(v) over a thread's outputs for the activation K, else the next one: one straight run
 * of code per activation, entered once (a.act is uniform over the grid). */
template <class CFG, int K = MM_ACT_RELU>
static __device__ __forceinline__ void mm_wt_act(float (&v)[CFG::TM][CFG::TN], int act) {
    if constexpr (K < MM_ACT_COUNT) {
        if (act != K) {
            mm_wt_act<CFG, K + 1>(v, act);
            return;
        }
#pragma unroll
        for (int i = 0; i < CFG::TM; i++)
#pragma unroll
            for (int j = 0; j < CFG::TN; j++)
                v[i][j] = mm_act_f(v[i][j], K);
    }
}

/* No split-K: the accumulators, through the epilogue, to C (SC: by the scatter store). The bias
 * (one load per column) and the activation are applied in registers before the store loop, not
 * per element inside it (mm_epi): there every element carried the code of every activation and
 * the path a warp runs jumped through all of it (a kernel's epilogue was some 200 KB of SASS). The
 * same operations in the same order: the same bits. */
template <class CFG, bool SC>
static __device__ __forceinline__ void mm_wt_store(const float (&acc)[CFG::TM][CFG::TN], const mm_args &a,
                                                   const mm_wt_place<CFG> &p) {
    float v[CFG::TM][CFG::TN];
#pragma unroll
    for (int i = 0; i < CFG::TM; i++)
#pragma unroll
        for (int j = 0; j < CFG::TN; j++)
            v[i][j] = acc[i][j];
    if (a.has_bias) {
#pragma unroll
        for (int j = 0; j < CFG::TN; j++) {
            const int col = p.n0 + p.col(j / 4) + j % 4;
            const float b = col < a.N ? __ldg(a.bias + col) : 0.0f;
#pragma unroll
            for (int i = 0; i < CFG::TM; i++)
                v[i][j] += b;
        }
    }
    if (a.act != MM_ACT_NONE)
        mm_wt_act<CFG>(v, a.act);
#pragma unroll
    for (int i = 0; i < CFG::TM; i++) {
        int row = p.m0 + p.row(i);
        if (row >= a.M)
            continue;
#pragma unroll
        for (int j4 = 0; j4 < CFG::SUBN; j4++)
            mm_store4_as<SC, false>(p.C, a, row, p.n0 + p.col(j4), v[i][j4 * 4], v[i][j4 * 4 + 1], v[i][j4 * 4 + 2],
                                    v[i][j4 * 4 + 3]);
    }
}

/* ---- kind 1: cluster ------------------------------------------------------------------------------ */

/* The cluster's partial tiles (in each block's shared memory) summed, this block's share, to C
 * (SC: by the scatter store). */
template <class CFG, bool SC>
static __device__ __forceinline__ void mm_wt_cluster_sum(const mm_args &a, const mm_wt_place<CFG> &p, float *sm) {
    namespace cg = cooperative_groups;
    constexpr int BM = CFG::BM, BN = CFG::BN, THREADS = CFG::THREADS;
    cg::cluster_group cl = cg::this_cluster();
    constexpr int LDR = CFG::LDR, BN4 = BN / 4;
    const int tid = p.tid, m0 = p.m0, n0 = p.n0;
    float *C = p.C;
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
        mm_store4_as<SC>(C, a, m0 + r, n0 + c, s4.x, s4.y, s4.z, s4.w);
    };
    if (ns <= 8) {
        for (int q = p.split * THREADS + tid; q < BM * BN4; q += 2 * stride) {
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
        for (int q = p.split * THREADS + tid; q < BM * BN4; q += stride) {
            float4 v[16];
#pragma unroll
            for (int u = 0; u < 16; u++)
                if (u < ns)
                    v[u] = part(u, q);
            put(q, v, ns);
        }
    }
}

/* Partial tile into this block's shared memory, reduced over the cluster (blockIdx.y = rank). The
 * store (plain or scatter, SCM) is chosen once the accumulators are in shared memory. */
template <class CFG, int SCM>
static __device__ __forceinline__ void mm_wt_reduce_cluster(const float (&acc)[CFG::TM][CFG::TN], const mm_args &a,
                                                            const mm_wt_place<CFG> &p, float *sm) {
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    constexpr int LDR = CFG::LDR;
    __syncthreads(); /* every warp is done with the pipeline's shared memory */
#pragma unroll
    for (int i = 0; i < CFG::TM; i++)
#pragma unroll
        for (int j4 = 0; j4 < CFG::SUBN; j4++)
            *reinterpret_cast<float4 *>(&sm[p.row(i) * LDR + p.col(j4)]) =
                make_float4(acc[i][j4 * 4], acc[i][j4 * 4 + 1], acc[i][j4 * 4 + 2], acc[i][j4 * 4 + 3]);
    cl.sync(); /* all partials of the tile written (release/acquire across the cluster) */
    mm_wt_with_store<SCM>(a, [&](auto sc) { mm_wt_cluster_sum<CFG, decltype(sc)::value>(a, p, sm); });
    cl.sync(); /* no block leaves while others still read its shared memory */
}

/* ---- kinds 0 and 2: through the workspace ------------------------------------------------------ */

/* This batch item's part of the workspace (kind 2's reduction). */
struct mm_wt_ws {
    long long b;  /* batch item */
    long long mn; /* M * N: floats per slice */
    float *ws_b;  /* (split_k, M, N) of this batch item */
    bool vec;     /* rows of the workspace are 16-byte aligned */
};

/* C (row, col .. col+3) = the sum of the split_k partials, read from L2 with up to 16 loads in
 * flight (kind 2). */
template <bool SC>
static __device__ __forceinline__ void mm_wt_sum_global(const mm_args &a, float *C, const mm_wt_ws &w, int row,
                                                        int col) {
    const int ns = a.split_k;
    const long long mn = w.mn;
    const float *p = w.ws_b + (long long)row * a.N + col;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f; /* slice order from 0.0f: the same bits as kinds 0, 1 */
    if (w.vec && col + 3 < a.N) {
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
    mm_store4_as<SC>(C, a, row, col, s0, s1, s2, s3);
}

/* Kind 2, this block's share (float4 words q = split*THREADS + tid, then every ns*THREADS) with
 * all of a round's partials in flight at once, by cp.async into this thread's own slots of the
 * (now idle) pipeline shared memory, float4 (j * ns + u) * THREADS + tid for its j-th output and
 * slice u: no registers held, no barrier (each thread reads its own copies). */
template <class CFG, bool SC>
static __device__ __forceinline__ void mm_wt_reduce_staged(const mm_args &a, const mm_wt_place<CFG> &p, float *sm,
                                                           const mm_wt_ws &w) {
    constexpr int BN4 = CFG::BN / 4, SM_F4 = CFG::SMEM_BYTES / 16, THREADS = CFG::THREADS;
    const int ns = a.split_k, tid = p.tid, m0 = p.m0, n0 = p.n0;
    const int stride = ns * THREADS;
    const int per_round = SM_F4 / stride;
    const unsigned slot0 = (unsigned)__cvta_generic_to_shared(sm) + 16u * tid;
    for (int q = p.split * THREADS + tid; q < CFG::BM * BN4;) {
        int j = 0;
        for (int qj = q; j < per_round && qj < CFG::BM * BN4; j++, qj += stride) {
            const int row = m0 + qj / BN4, col = n0 + (qj % BN4) * 4;
            if (row < a.M && col + 3 < a.N) {
                const float *src = w.ws_b + (long long)row * a.N + col;
                for (int u = 0; u < ns; u++)
                    mm_cp_async16_u(slot0 + 16u * (unsigned)((j * ns + u) * THREADS), src + u * w.mn, 16);
            }
        }
        mm_cp_async_commit();
        mm_cp_async_wait<0>();
        for (int jj = 0; jj < j; jj++, q += stride) {
            const int row = m0 + q / BN4, col = n0 + (q % BN4) * 4;
            if (row >= a.M || col >= a.N)
                continue;
            if (col + 3 >= a.N) { /* the ragged right edge: from L2 */
                mm_wt_sum_global<SC>(a, p.C, w, row, col);
                continue;
            }
            const float4 *sv = reinterpret_cast<const float4 *>(sm) + jj * ns * THREADS + tid;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            for (int u = 0; u < ns; u++) {
                const float4 v = sv[u * THREADS];
                s0 += v.x; s1 += v.y; s2 += v.z; s3 += v.w;
            }
            mm_store4_as<SC>(p.C, a, row, col, s0, s1, s2, s3);
        }
    }
}

/* Kind 2: wait until every slice of the tile is in the workspace, reduce this block's share, leave. */
template <class CFG, bool SC>
static __device__ __forceinline__ void mm_wt_reduce_coresident(const mm_args &a, const mm_wt_place<CFG> &p, float *sm,
                                                               const mm_wt_ws &w) {
    constexpr int BN4 = CFG::BN / 4, SM_F4 = CFG::SMEM_BYTES / 16, THREADS = CFG::THREADS;
    const int ns = a.split_k, tid = p.tid;
    int *counter = a.counters + w.b * ((long long)p.tiles_m * p.tiles_n) + p.pid;
    __threadfence(); /* this thread's partials visible device-wide before the arrival is counted */
    __syncthreads();
    if (tid == 0) {
        atomicAdd(counter, 1);
        while (*reinterpret_cast<volatile int *>(counter) < ns) /* all slices arrived (departures only add) */
            ;
    }
    __syncthreads();
    __threadfence();
    const int stride = ns * THREADS;
    if (!SC && w.vec && stride <= SM_F4) { /* the scatter store sums from L2: less code beside the plain one */
        mm_wt_reduce_staged<CFG, SC>(a, p, sm, w);
    } else {
        for (int q = p.split * THREADS + tid; q < CFG::BM * BN4; q += stride) {
            const int row = p.m0 + q / BN4, col = p.n0 + (q % BN4) * 4;
            if (row < a.M && col < a.N)
                mm_wt_sum_global<SC>(a, p.C, w, row, col);
        }
    }
    __syncthreads(); /* this block's reads are done */
    if (tid == 0 && atomicAdd(counter, 1) == 2 * ns - 1)
        *counter = 0; /* the last to leave: every block is past its wait */
}

/* Kinds 0 and 2: the raw partial tile (no epilogue) into this block's slice of the workspace, past
 * L1, then the kind's reduction: kind 2 by mm_wt_reduce_coresident, kind 0 here. The partial
 * write and kind 0's sum stay in the function that computes the workspace addresses: moved into
 * functions of their own, nvcc associates the 64-bit address sums differently (another SASS, more
 * registers for some configurations). */
template <class CFG, int SCM>
static __device__ __forceinline__ void mm_wt_reduce_workspace(const float (&acc)[CFG::TM][CFG::TN], const mm_args &a,
                                                       const mm_wt_place<CFG> &p, float *sm) {
    const long long b = (long long)blockIdx.z + a.batch0;
    const long long mn = (long long)a.M * a.N;
    float *ws_b = a.ws + b * a.split_k * mn; /* (split_k, M, N) of this batch item */
    float *part = ws_b + p.split * mn;
    const bool vec = (a.N % 4) == 0;
#pragma unroll
    for (int i = 0; i < CFG::TM; i++) {
        int row = p.m0 + p.row(i);
        if (row >= a.M)
            continue;
#pragma unroll
        for (int j4 = 0; j4 < CFG::SUBN; j4++) {
            int col = p.n0 + p.col(j4);
            float *q = part + (long long)row * a.N + col;
            if (vec && col + 3 < a.N) {
                __stcg(reinterpret_cast<float4 *>(q), make_float4(acc[i][j4 * 4], acc[i][j4 * 4 + 1],
                                                                  acc[i][j4 * 4 + 2], acc[i][j4 * 4 + 3]));
            } else {
#pragma unroll
                for (int c = 0; c < 4; c++)
                    if (col + c < a.N)
                        __stcg(q + c, acc[i][j4 * 4 + c]);
            }
        }
    }
    if constexpr (CFG::CLUSTER == 2) {
        /* the store is chosen once the partials are out of the registers */
        mm_wt_with_store<SCM>(a, [&](auto sc) {
            mm_wt_reduce_coresident<CFG, decltype(sc)::value>(a, p, sm, mm_wt_ws{b, mn, ws_b, vec});
        });
        return;
    }
    /* kind 0: count this block's arrival; the last block of the tile sums the partials (8 loads
     * in flight per output, added in slice order) and resets the counter */
    __shared__ int s_last;
    const int tid = p.tid;
    __threadfence(); /* partials visible device-wide before the arrival is counted */
    __syncthreads();
    int *counter = a.counters + b * ((long long)p.tiles_m * p.tiles_n) + p.pid;
    if (tid == 0)
        s_last = atomicAdd(counter, 1) == a.split_k - 1;
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    /* the store (plain or scatter, SCM) is chosen here, the partials out of the registers; the
     * loop stays in this function (see above), instantiated for each store by the lambda */
    auto sum = [&](auto sc) {
#pragma unroll
        for (int i = 0; i < CFG::TM; i++) {
            int row = p.m0 + p.row(i);
            if (row >= a.M)
                continue;
#pragma unroll
            for (int j4 = 0; j4 < CFG::SUBN; j4++) {
                int col = p.n0 + p.col(j4);
                const float *q = ws_b + (long long)row * a.N + col;
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                if (vec && col + 3 < a.N) {
                    for (int sp0 = 0; sp0 < a.split_k; sp0 += 8) { /* 8 loads in flight, added in slice order */
                        float4 v[8];
#pragma unroll
                        for (int u = 0; u < 8; u++)
                            if (sp0 + u < a.split_k)
                                v[u] = __ldcg(reinterpret_cast<const float4 *>(q + (sp0 + u) * mn));
#pragma unroll
                        for (int u = 0; u < 8; u++)
                            if (sp0 + u < a.split_k) {
                                s0 += v[u].x; s1 += v[u].y; s2 += v[u].z; s3 += v[u].w;
                            }
                    }
                } else {
                    for (int sp = 0; sp < a.split_k; sp++) {
                        if (col < a.N) s0 += __ldcg(q + sp * mn);
                        if (col + 1 < a.N) s1 += __ldcg(q + sp * mn + 1);
                        if (col + 2 < a.N) s2 += __ldcg(q + sp * mn + 2);
                        if (col + 3 < a.N) s3 += __ldcg(q + sp * mn + 3);
                    }
                }
                mm_store4_as<decltype(sc)::value>(p.C, a, row, col, s0, s1, s2, s3);
            }
        }
    };
    mm_wt_with_store<SCM>(a, sum);
    if (tid == 0)
        *counter = 0; /* ready for the next launch on this workspace */
}

/* ---- the epilogue of a configuration ------------------------------------------------------------- */

/* The store (SCM: plain, scatter or a.sc_n, the scatter store of matmul.h mm_scatter, tested once
 * per kernel, uniformly over the grid) is chosen where the accumulators leave the registers: here
 * without split-K, after the partials are in shared memory or the workspace with it; with SCM 0
 * each store loop is instantiated for both stores. */
template <class CFG, bool SPLIT, int SCM>
static __device__ __forceinline__ void mm_wt_epilogue(const float (&acc)[CFG::TM][CFG::TN], const mm_args &a,
                                                      const mm_wt_place<CFG> &p, float *sm) {
    if constexpr (!SPLIT) {
        /* direct calls, not mm_wt_with_store: through the lambda ptxas spilled more (16 bytes) */
        if constexpr (SCM != 0)
            mm_wt_store<CFG, SCM == 2>(acc, a, p);
        else if (a.sc_n)
            mm_wt_store<CFG, true>(acc, a, p);
        else
            mm_wt_store<CFG, false>(acc, a, p);
    } else if constexpr (CFG::CLUSTER == 1) {
        mm_wt_reduce_cluster<CFG, SCM>(acc, a, p, sm);
    } else {
        mm_wt_reduce_workspace<CFG, SCM>(acc, a, p, sm);
    }
}

#endif
