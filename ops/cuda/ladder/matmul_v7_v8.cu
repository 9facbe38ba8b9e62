/* matmul_v7_v8.cu: rungs v7 and v8 of the ladder: configuration 0 of the warp-tiled template
 * (../matmul_warptile.cuh; the configuration list starts in ../matmul_tiles_big.cu).
 *
 * v7  over v6: warp tiling. v6 lays its 256 threads out as one 16x16 grid over the block tile, so
 *     a warp covers 2 x 16 threads: 16 distinct float4 words of B per k (two wavefronts) and a
 *     warp's outputs spread over the whole tile width. v7 gives each warp a 64x32 sub-tile with
 *     its threads in an 8x4 grid: every operand read of a warp is at most 8 contiguous float4
 *     words (one wavefront), the shared-memory traffic per FMA drops by a third, and a warp's
 *     working set is compact. Configuration 0, row-major block order (group_m 1).
 * v8  over v7: block rasterization. Blocks run in groups of 8 tile rows, column by column inside a
 *     group, so the blocks resident at one time reuse the same A rows and B columns from L2
 *     instead of streaming all of B per tile row. Configuration 0, group_m 8.
 * tuned (past the ladder): any configuration of the list, any split-K, any group, as the
 * autotuner picked per shape (mm_run).
 */
#include "matmul_impl.h"

/* Configuration MM_WT_DEFAULT_CFG without split-K through the list's own launcher (the kernel is
 * compiled once, in the list). */
static void mm_launch_v7_v8(const mm_args &a, int group_m, long long batch, cudaStream_t s) {
    mm_args c = a;
    c.group_m = group_m;
    mm_wt_at(MM_WT_DEFAULT_CFG)->launch(c, batch, s);
}

void mm_launch_v7(const mm_args &a, long long batch, cudaStream_t s) { mm_launch_v7_v8(a, 1, batch, s); }

void mm_launch_v8(const mm_args &a, long long batch, cudaStream_t s) {
    mm_launch_v7_v8(a, MM_WT_DEFAULT_GROUP, batch, s);
}
