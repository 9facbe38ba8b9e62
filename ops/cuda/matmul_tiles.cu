/* matmul_tiles.cu: the smaller tile configurations of the tuned kernel (the second part of the
 * list whose first part is in matmul_tiles_big.cu; separate files so that they compile in parallel).
 * These serve mid-size and small problems (one wave or less of 128x128 tiles, BERT's 128-row
 * shapes, small batched products), where more and smaller blocks, more warps per block, longer
 * k-steps or deeper pipelines keep the SMs busy.
 */
#include "matmul_warptile.cuh"

/* bm, bn, bk, wm, wn, tm, tn, stages, k unroll, min blocks per SM, pipeline: as in matmul_tiles_big.cu */
const mm_wt_entry mm_wt_table_small[] = {
    MM_WT(128, 64, 16, 64, 32, 8, 8, 2, 16, 3, 1),   /* 128 threads, 8x8 per thread */
    MM_WT(64, 128, 16, 32, 64, 8, 8, 2, 16, 3, 1),
    MM_WT(128, 64, 16, 64, 32, 8, 8, 2, 16, 3, 3),
    MM_WT(64, 128, 16, 32, 64, 8, 8, 2, 16, 4, 3),
    MM_WT(64, 128, 8, 32, 64, 8, 8, 3, 8, 4, 0),
    MM_WT(64, 64, 32, 32, 32, 4, 8, 2, 32, 4, 1),    /* 128 threads, 4x8 per thread, k-step 32 */
    MM_WT(64, 64, 32, 32, 32, 4, 8, 2, 32, 4, 3),
    MM_WT(64, 64, 16, 32, 16, 4, 4, 2, 16, 2, 1),    /* 256 threads on a 64x64 tile: more warps */
    MM_WT(64, 64, 16, 32, 16, 4, 4, 2, 16, 2, 2),    /* (the heuristic's small tile) */
    MM_WT(64, 64, 16, 32, 16, 4, 4, 2, 16, 2, 3),
    MM_WT(64, 64, 32, 32, 16, 4, 4, 2, 32, 2, 3),
    MM_WT(128, 64, 16, 32, 32, 8, 4, 2, 16, 2, 1),   /* 256 threads, 8x4 per thread */
    MM_WT(128, 64, 16, 32, 32, 8, 4, 2, 16, 2, 3),
    MM_WT(128, 64, 32, 32, 32, 8, 4, 2, 32, 2, 3),
    MM_WT(64, 128, 16, 32, 32, 4, 8, 2, 16, 2, 1),   /* 256 threads, 4x8 per thread */
    MM_WT(64, 128, 16, 32, 32, 4, 8, 2, 16, 2, 3),
    MM_WT(64, 128, 32, 32, 32, 4, 8, 2, 32, 2, 3),
    MM_WT(32, 64, 16, 16, 32, 4, 4, 3, 16, 4, 0),    /* 128 threads, 4x4 per thread */
    MM_WT(32, 64, 16, 16, 32, 4, 4, 5, 16, 4, 0),    /* deeper pipeline */
    MM_WT(32, 64, 16, 16, 32, 4, 4, 2, 16, 4, 1),
    MM_WT(32, 64, 16, 16, 32, 4, 4, 2, 16, 4, 3),
    MM_WT(32, 64, 32, 16, 32, 4, 4, 3, 32, 4, 0),
    MM_WT(32, 64, 32, 16, 32, 4, 4, 2, 32, 4, 3),
    MM_WT(32, 32, 16, 16, 32, 4, 4, 2, 16, 8, 1),    /* 64 threads: the most blocks */
    MM_WT(32, 32, 16, 16, 32, 4, 4, 2, 16, 8, 3),
    MM_WT(64, 32, 16, 32, 16, 4, 4, 3, 16, 4, 0),
    /* cluster split-K (suffix _c): the tile's k-slices reduce through distributed shared memory */
    MM_WTC(64, 128, 32, 32, 32, 4, 8, 2, 32, 2, 3),
    MM_WTC(64, 128, 16, 32, 32, 4, 8, 2, 16, 2, 3),
    MM_WTC(128, 64, 32, 32, 32, 8, 4, 2, 32, 2, 3),
    MM_WTC(64, 64, 32, 32, 32, 4, 8, 2, 32, 4, 3),
    MM_WTC(64, 64, 32, 32, 16, 4, 4, 2, 32, 2, 3),
    MM_WTC(64, 64, 16, 32, 16, 4, 4, 2, 16, 2, 3),
    MM_WTC(32, 64, 32, 16, 32, 4, 4, 2, 32, 4, 3),
    MM_WTC(32, 64, 16, 16, 32, 4, 4, 2, 16, 4, 3),
};
const int mm_wt_count_small = (int)(sizeof mm_wt_table_small / sizeof mm_wt_table_small[0]);
