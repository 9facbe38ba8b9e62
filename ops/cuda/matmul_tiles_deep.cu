/* matmul_tiles_deep.cu: deep cp.async pipelines for short k-slices (the third part of the tuned
 * kernel's configuration list, after matmul_tiles_big.cu and matmul_tiles.cu; its own file so that
 * it compiles beside them).
 * When split-K leaves each block a handful of k-steps (BERT's 128-row shapes: k = 768 over 4 to 8
 * slices), a two-stage pipeline pays one memory round trip per k-step. With 4 cp.async stages of
 * k-step 32, up to 96 values of k are in flight before the first is used: the slice's loads overlap
 * instead of queueing. Also two 8x8-per-thread tiles of 4 warps with cluster split-K (more
 * FMAs per shared-memory read than the 4x8 tiles the 128-row shapes otherwise get). Cluster
 * configurations: split-K through distributed shared memory, or (split 1) the plain kernel.
 */
#include "matmul_warptile.cuh"

/* bm, bn, bk, wm, wn, tm, tn, stages, k unroll, min blocks per SM, pipeline, cluster */
const mm_wt_entry mm_wt_table_deep[] = {
    MM_WTX(32, 64, 32, 16, 32, 4, 4, 4, 32, 4, 0, 1),  /* 128 threads, 4 stages: 128 of k in flight */
    MM_WTX(32, 64, 16, 16, 32, 4, 4, 6, 16, 4, 0, 1),  /* 6 stages of k-step 16 */
    MM_WTX(64, 64, 32, 32, 16, 4, 4, 4, 32, 2, 0, 1),  /* 256 threads */
    MM_WTX(64, 128, 32, 32, 32, 4, 8, 3, 32, 2, 0, 1), /* 256 threads, 4x8 per thread */
    MM_WTX(64, 128, 16, 32, 64, 8, 8, 2, 16, 4, 3, 1), /* 128 threads, 8x8 per thread, pipeline h */
    MM_WTX(64, 128, 32, 32, 64, 8, 8, 2, 32, 3, 3, 1), /* the same with k-step 32 (3 blocks per SM) */
    MM_WTX(64, 128, 16, 32, 64, 8, 8, 3, 16, 3, 0, 1), /* 128 threads, 8x8 per thread, cp.async 3 and */
    MM_WTX(64, 128, 16, 32, 64, 8, 8, 4, 16, 3, 0, 1), /* 4 stages */
    MM_WTX(64, 64, 8, 64, 16, 8, 4, 3, 8, 4, 0, 1),   /* cuBLAS's small-m tile: 64x64x8, 3 stages, */
    MM_WTX(64, 64, 8, 64, 16, 8, 4, 4, 8, 4, 0, 1),   /* warps 1x4 of 64x16, 8x4 per thread; 4 stages */
    MM_WTX(64, 64, 16, 64, 16, 8, 4, 2, 16, 4, 3, 1), /* the same tile, pipeline h */
    MM_WTX(128, 64, 16, 64, 32, 8, 8, 2, 16, 4, 3, 1), /* the same, 128 rows: B read once when m = 128 */
};
const int mm_wt_count_deep = (int)(sizeof mm_wt_table_deep / sizeof mm_wt_table_deep[0]);
