/* matmul_tiles_grid.cu: the fifth part of the tuned kernel's configuration list (after
 * matmul_tiles_big.cu, matmul_tiles.cu, matmul_tiles_deep.cu and matmul_tiles_ring.cu; its own file so
 * that it compiles beside them): the co-resident split-K kind (suffix _g, matmul_wt_epilogue.cuh).
 * What it adds over the cluster kind: the same parallel, slice-ordered reduction (every block of a
 * tile reduces a share), through the workspace in L2 instead of distributed shared memory, in a
 * cooperative grid instead of clusters, so the blocks are spread over all 132 SMs (the cluster
 * placement left some SMs empty at the 128-row shapes) and splits above 16 are possible. The tiles
 * are the cluster kind's best ones at the 128-row shapes.
 */
#include "matmul_warptile.cuh"

/* bm, bn, bk, wm, wn, tm, tn, stages, k unroll, min blocks per SM, pipeline, split-K kind (2) */
const mm_wt_entry mm_wt_table_grid[] = {
    MM_WTX(64, 128, 16, 32, 64, 8, 8, 2, 16, 4, 3, 2),  /* 128 threads, 8x8 per thread */
    MM_WTX(64, 128, 32, 32, 64, 8, 8, 2, 32, 3, 3, 2),
    MM_WTX(64, 128, 16, 32, 32, 4, 8, 2, 16, 2, 3, 2),  /* 256 threads, 4x8 per thread */
    MM_WTX(64, 128, 32, 32, 32, 4, 8, 2, 32, 2, 3, 2),
    MM_WTX(128, 128, 16, 32, 64, 8, 8, 2, 16, 2, 3, 2), /* 256 threads, 8x8: B read once at m = 128 */
    MM_WTX(64, 64, 16, 64, 16, 8, 4, 2, 16, 4, 3, 2),   /* cuBLAS's small-m block */
    MM_WTX(64, 64, 32, 32, 32, 4, 8, 2, 32, 4, 3, 2),
    MM_WTX(32, 64, 16, 16, 32, 4, 4, 2, 16, 4, 3, 2),   /* 128 threads, 4x4 per thread */
    MM_WTX(32, 64, 32, 16, 32, 4, 4, 2, 32, 4, 3, 2),
    MM_WTX(64, 128, 16, 32, 64, 8, 8, 4, 16, 3, 4, 2),  /* pipeline x, 4 stages */
    MM_WTX(128, 64, 16, 64, 32, 8, 8, 2, 16, 4, 3, 2),  /* 128 threads, 8x8, 128 rows: B read once at m = 128 */
    MM_WTX(128, 64, 32, 64, 32, 8, 8, 2, 32, 3, 3, 2),
    MM_WTX(64, 64, 32, 64, 16, 8, 4, 2, 32, 4, 3, 2),   /* cuBLAS's small-m block, k-step 32 */
    MM_WTX(64, 64, 16, 64, 16, 8, 4, 2, 16, 3, 3, 2),   /* the same under a 168-register cap (no spills; */
    MM_WTX(64, 64, 32, 64, 16, 8, 4, 2, 32, 3, 3, 2),   /* 3 blocks per SM: splits up to 4 at 96 tiles) */
};
const int mm_wt_count_grid = (int)(sizeof mm_wt_table_grid / sizeof mm_wt_table_grid[0]);
