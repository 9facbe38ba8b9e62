/* matmul_tiles_big.cu: the first part of the tuned kernel's configuration list: the big tiles
 * (128x128 and up), for problems with a wave or more of them. Entry 0 is the configuration of
 * rungs v7 and v8 (ladder/matmul_v7_v8.cu). The list continues in matmul_tiles.cu (smaller tiles),
 * matmul_tiles_deep.cu, matmul_tiles_ring.cu and matmul_tiles_grid.cu, five files so that they
 * compile in parallel; the tuned kernel runs any configuration of it, with any split-K and group,
 * as the autotuner picked per shape. Adding a configuration is one line in a table (it must
 * satisfy the template's asserts, matmul_wt_cfg.cuh); the tuning tables name configurations
 * (`tasc kernels list`), so the order may change but a name must keep its meaning.
 */
#include "matmul_warptile.cuh"

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
