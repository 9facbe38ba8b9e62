/* matmul_tiles_ring.cu: the fourth part of the tuned kernel's configuration list (after
 * matmul_tiles_big.cu, matmul_tiles.cu and matmul_tiles_deep.cu; its own file so that it compiles
 * beside them): pipeline x, a STAGES-deep cp.async ring for both operands (A by 16-byte copies,
 * transposed by each thread from its own copy one tile before use; matmul_wt_pipe.cuh).
 * What it adds over pipeline h: STAGES-1 tiles of global loads in flight instead of one, without
 * pipeline s's 4-byte copies of A. Aimed at BERT's 128-row shapes, where split-K leaves each block
 * 3 to 18 k-steps and the one-tile lookahead of h leaves memory latency exposed; the tiles and
 * stage counts are the ones whose block counts fill the 132 SMs evenly at some split (64x64 at
 * split 4 or 16: 384 blocks, about 3 per SM) with 2 to 4 blocks resident per SM.
 */
#include "matmul_warptile.cuh"

/* bm, bn, bk, wm, wn, tm, tn, ring stages, k unroll, min blocks per SM, pipeline (4 = x), cluster;
 * shared memory per block in the comment */
const mm_wt_entry mm_wt_table_ring[] = {
    MM_WTX(64, 128, 16, 32, 64, 8, 8, 4, 16, 3, 4, 1), /* 128 threads, 8x8 per thread; 57 KB */
    MM_WTX(64, 128, 16, 32, 64, 8, 8, 5, 16, 3, 4, 1), /* 5 stages; 69 KB */
    MM_WTX(64, 128, 32, 32, 64, 8, 8, 3, 32, 2, 4, 1), /* k-step 32; 89 KB */
    MM_WTX(64, 128, 16, 32, 32, 4, 8, 4, 16, 2, 4, 1), /* 256 threads, 4x8 per thread; 57 KB */
    MM_WTX(64, 64, 16, 64, 16, 8, 4, 4, 16, 4, 4, 1),  /* cuBLAS's small-m block (1x4 warps of 64x16) */
    MM_WTX(64, 64, 16, 64, 16, 8, 4, 6, 16, 4, 4, 1),  /* ... 6 stages; 57 KB */
    MM_WTX(64, 64, 32, 64, 16, 8, 4, 3, 32, 4, 4, 1),  /* ... k-step 32; 65 KB */
    MM_WTX(64, 64, 32, 32, 32, 4, 8, 3, 32, 4, 4, 1),  /* 2x2 warps of 32x32; 65 KB */
    MM_WTX(32, 64, 32, 16, 32, 4, 4, 4, 32, 4, 4, 0),  /* 128 threads, 4x4 per thread; 57 KB */
    MM_WTX(32, 64, 32, 16, 32, 4, 4, 4, 32, 4, 4, 1),
};
const int mm_wt_count_ring = (int)(sizeof mm_wt_table_ring / sizeof mm_wt_table_ring[0]);
