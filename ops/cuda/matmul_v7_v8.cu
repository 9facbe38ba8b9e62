/* matmul_v7_v8.cu: rungs v7 and v8 of the ladder and the tuned kernel's search space: the compiled
 * configurations of the warp-tiled template (matmul_warptile.cuh).
 *
 * v7  over v6: warp tiling. v6 lays its 256 threads out as one 16x16 grid over the block tile, so
 *     a warp covers 2 x 16 threads: 16 distinct float4 words of B per k (two wavefronts) and a
 *     warp's outputs spread over the whole tile width. v7 gives each warp a 64x32 sub-tile with
 *     its threads in an 8x4 grid: every operand read of a warp is at most 8 contiguous float4
 *     words (one wavefront), the shared-memory traffic per FMA drops by a third, and a warp's
 *     working set is compact. Configuration 0 below, row-major block order (group_m 1).
 * v8  over v7: block rasterization. Blocks run in groups of 8 tile rows, column by column inside a
 *     group, so the blocks resident at one time reuse the same A rows and B columns from L2
 *     instead of streaming all of B per tile row. Configuration 0, group_m 8.
 * tuned: any configuration below or in matmul_tiles.cu (smaller tiles), any split-K, any group,
 * as the autotuner picked per shape. Adding a configuration is one line in a table (it must
 * satisfy the template's asserts); the tables are one list, this file's first.
 */
#include "matmul_warptile.cuh"

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

/* bm, bn, bk, wm, wn, tm, tn, stages, k unroll, min blocks per SM (register cap 64K/(minb*threads)),
 * pipeline (0 cp.async with `stages` stages; 1 register-staged double buffer; 2 the same with
 * double-buffered fragments). Under a 128-register cap a fully unrolled 8x8 thread tile is tight
 * (ptxas -v); variants with and without the cap are there for the tuner to compare. */
const mm_wt_entry mm_wt_table_big[] = {
    MM_WT(128, 128, 8, 64, 32, 8, 8, 3, 8, 2, 0),    /* 0: v7 / v8; 256 threads, 2 blocks per SM */
    MM_WT(128, 128, 16, 64, 32, 8, 8, 2, 16, 2, 1),  /* register-staged, k-step 16 */
    MM_WT(128, 128, 16, 32, 64, 8, 8, 2, 16, 2, 1),  /* warps 4x2 instead of 2x4 */
    MM_WT(128, 128, 16, 64, 32, 8, 8, 2, 16, 1, 2),  /* double-buffered fragments, no register cap */
    MM_WT(128, 128, 8, 64, 32, 8, 8, 2, 8, 2, 3),    /* ... with B by cp.async: fits the cap */
    MM_WT(128, 128, 16, 64, 32, 8, 8, 2, 16, 2, 3),
    MM_WT(128, 128, 16, 32, 64, 8, 8, 2, 16, 2, 3),
    MM_WT(128, 256, 8, 64, 64, 8, 16, 2, 8, 1, 1),   /* cuBLAS's tile: 128 outputs per thread */
    MM_WT(128, 256, 16, 64, 64, 8, 16, 2, 16, 1, 1),
    MM_WT(128, 256, 8, 64, 64, 8, 16, 2, 8, 1, 2),
    MM_WT(128, 256, 16, 64, 64, 8, 16, 2, 16, 1, 2),
    MM_WT(128, 256, 16, 64, 64, 8, 16, 2, 16, 1, 3),
    MM_WT(256, 128, 8, 64, 64, 16, 8, 2, 8, 1, 2),
    /* cluster split-K (suffix _c): the tile's k-slices reduce through distributed shared memory */
    MM_WTC(128, 128, 16, 32, 64, 8, 8, 2, 16, 2, 3),
};
const int mm_wt_count_big = (int)(sizeof mm_wt_table_big / sizeof mm_wt_table_big[0]);
