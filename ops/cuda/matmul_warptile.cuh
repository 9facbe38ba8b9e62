/* matmul_warptile.cuh: the warp-tiled kernel template behind v7, v8 and the tuned version, with
 * block rasterization and split-K as run-time arguments, and its host side (function attributes,
 * occupancy, launch, the table-entry macros of the configuration lists).
 *
 * The kernel is three steps: where the block and thread work (mm_wt_place, with the
 * configuration's tile math in matmul_wt_cfg.cuh), the main loop of one of five pipelines that
 * fill shared memory and run the FMAs (matmul_wt_pipe.cuh), and the store to C or one of three
 * split-K reductions (matmul_wt_epilogue.cuh). All are inlined into one kernel per
 * (configuration, split or not, and for some configurations plain or scatter store: mm_wt_sc):
 * the split-K reduction's code is a separate instantiation, since it would otherwise cost
 * registers in every launch. The kernels are the ones the single-body
 * template compiled to, SASS for SASS; where code sits where it does for that, a comment says so.
 * Split-K: blockIdx.y is the k-slice; every kind sums a tile's partials in slice order, so the
 * result does not depend on the kind or on which block came last.
 */
#ifndef TASC_MATMUL_WARPTILE_CUH
#define TASC_MATMUL_WARPTILE_CUH

#include "matmul_wt_cfg.cuh"
#include "matmul_wt_epilogue.cuh"
#include "matmul_wt_pipe.cuh"

/* The place is filled here, not by a function of its own: from a function nvcc orders the
 * prologue differently, and ptxas then allocates registers differently for some configurations. */
template <class CFG, bool SPLIT, int SCM>
__global__ void __launch_bounds__(CFG::THREADS, CFG::MINB) mm_wt_kernel(mm_args a) {
    constexpr int BM = CFG::BM, BN = CFG::BN, BK = CFG::BK;
    extern __shared__ __align__(16) float sm[]; /* the pipeline's stages (mm_wt_cfg), then the reductions' */
    mm_wt_place<CFG> p;
    p.tid = threadIdx.x;
    const int lane = p.tid % 32, warp = p.tid / 32;
    p.wm0 = (warp / CFG::WARPS_N) * CFG::WM;
    p.wn0 = (warp % CFG::WARPS_N) * CFG::WN;
    p.tr = lane / CFG::TC;
    p.tc = lane % CFG::TC;
    /* block rasterization */
    p.tiles_m = (a.M + BM - 1) / BM;
    p.tiles_n = (a.N + BN - 1) / BN;
    p.pid = (int)blockIdx.x;
    const int per_group = a.group_m * p.tiles_n;
    const int first_m = (p.pid / per_group) * a.group_m;
    const int gsize = min(p.tiles_m - first_m, a.group_m);
    p.m0 = (first_m + (p.pid % per_group) % gsize) * BM;
    p.n0 = ((p.pid % per_group) / gsize) * BN;
    mm_batch_offsets(a, p.A, p.B, p.C);
    p.split = (int)blockIdx.y;
    p.kb = p.split * a.k_chunk;
    p.ke = min(a.K, p.kb + a.k_chunk);
    p.ktiles = (p.ke - p.kb + BK - 1) / BK;

    float acc[CFG::TM][CFG::TN];
#pragma unroll
    for (int i = 0; i < CFG::TM; i++)
#pragma unroll
        for (int j = 0; j < CFG::TN; j++)
            acc[i][j] = 0.0f;
    mm_wt_mainloop<CFG>(acc, a, p, sm);
    mm_wt_epilogue<CFG, SPLIT, SCM>(acc, a, p, sm);
}

/* The scatter store as an instantiation of its own (SCM 1 plain, 2 scatter) for the configurations
 * at the 128-register cap with 8x8 accumulators per thread: beside the plain store in one kernel
 * it made ptxas spill more in those kernels' main loops (128x128x16_w64x32_t8x8_h2: 100 -> 180
 * bytes of spill loads; 4096^3 at 84% of cuBLAS against 90-93% before, H100), and only there.
 * Other configurations test a.sc_n in the kernel (SCM 0): one kernel, half the code. */
typedef void (*mm_wt_kfn)(mm_args);
template <class CFG>
struct mm_wt_sc {
    static constexpr bool APART = 65536 / (CFG::THREADS * CFG::MINB) <= 128 && CFG::TM * CFG::TN >= 64;
    template <bool SPLIT>
    static mm_wt_kfn fn(bool scatter) {
        if constexpr (APART)
            return scatter ? mm_wt_kernel<CFG, SPLIT, 2> : mm_wt_kernel<CFG, SPLIT, 1>;
        else
            return mm_wt_kernel<CFG, SPLIT, 0>;
    }
};

/* Function attributes of one configuration's two kernels (dynamic shared memory limit, carveout
 * preference mm_attr_carveout, cluster sizes above 8), set again whenever mm_attr_gen moves. */
template <class CFG>
static void mm_wt_attrs(void) {
    static int attr_gen = -1; /* per instantiation; the module is not thread-safe */
    if (attr_gen == mm_attr_gen)
        return;
    for (int sc = 0; sc < 2; sc++) {
        const mm_wt_kfn f[2] = {mm_wt_sc<CFG>::template fn<false>(sc), mm_wt_sc<CFG>::template fn<true>(sc)};
        for (int i = 0; i < 2; i++) {
            CUDA_CHECK(cudaFuncSetAttribute(f[i], cudaFuncAttributeMaxDynamicSharedMemorySize, CFG::SMEM_BYTES));
            CUDA_CHECK(cudaFuncSetAttribute(f[i], cudaFuncAttributePreferredSharedMemoryCarveout, mm_attr_carveout));
        }
        if (CFG::CLUSTER == 1)
            CUDA_CHECK(cudaFuncSetAttribute(f[1], cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
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
            /* the scatter instantiation has the same register cap and shared memory */
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mm_wt_sc<CFG>::template fn<true>(false),
                                                                     CFG::THREADS, CFG::SMEM_BYTES));
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
        if (cudaOccupancyMaxActiveClusters(&n, mm_wt_sc<CFG>::template fn<true>(false), &lc) != cudaSuccess) {
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
    const mm_wt_kfn plain = mm_wt_sc<CFG>::template fn<false>(a.sc_n != 0);
    const mm_wt_kfn split = mm_wt_sc<CFG>::template fn<true>(a.sc_n != 0);
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
            CUDA_CHECK(cudaLaunchKernelEx(&lc, split, c));
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
            CUDA_CHECK(cudaLaunchKernelEx(&lc, split, c));
        } else if (a.split_k > 1) {
            split<<<grid, CFG::THREADS, CFG::SMEM_BYTES, s>>>(c);
        } else {
            plain<<<grid, CFG::THREADS, CFG::SMEM_BYTES, s>>>(c);
        }
        CUDA_LAUNCH_CHECK();
    });
}

/* One entry of a configuration list (mm_wt_entry): the tile configuration as `tasc kernels list`
 * and the tuning tables name it, its launcher and its occupancy query. Arguments: bm, bn, bk, wm,
 * wn, tm, tn, stages, k unroll, min blocks per SM (register cap 64K/(minb*threads)), pipeline
 * (0 .. 4 = s r d h x, matmul_wt_pipe.cuh), split-K kind (0, 1 = _c, 2 = _g). MM_WT: kind 0,
 * MM_WTC: kind 1. */
#define MM_CFG(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL) \
    mm_wt_cfg<BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL>
#define MM_WTX(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL)                                      \
    {{BM, BN, BK, WM, WN, TM, TN, MM_CFG(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL)::STAGES, KU, \
      MINB, PIPE, MM_CFG(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL)::THREADS,                 \
      MM_CFG(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL)::SMEM_BYTES, CL},                     \
     &mm_wt_launch<MM_CFG(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL)>,                       \
     &mm_wt_max_clusters<MM_CFG(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, CL)>}
#define MM_WT(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE) MM_WTX(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, 0)
#define MM_WTC(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE) MM_WTX(BM, BN, BK, WM, WN, TM, TN, ST, KU, MINB, PIPE, 1)

#endif
