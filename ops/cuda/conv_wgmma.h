/* conv_wgmma.h: the convolution (groups 1) on the Hopper wgmma 3xTF32 matmul (issue 17; the code is
 * in matmul_3xtf32_wgmma.cu, beside the kernel it launches). One gather kernel reads x and writes
 * the split columns directly (implicit im2col and TF32 hi/lo split, no FP32 column buffer): row
 * n*OH*OW + oh*OW + ow of a (N*OH*OW, Kp) matrix holds the K = C*KH*KW inputs of that output,
 * zero padded to Kp = K rounded up to 4. The product is then one GEMM of (N*OH*OW) x F x K with
 * the images side by side, its B operand the weight (F, K) split into hi/lo once (the runtime's
 * pre-split of the node's weight, src/runtime/rt_presplit.c, where it has one; else per call into
 * the workspace), split-K where the tiles do not fill the SMs, and an epilogue that adds bias and
 * the fused residual, applies the activation and stores y (N, F, OH, OW) by image. At precision
 * 3xtf32 on compute capability 9.0 with the sm_90a build only (mm_3xtf32_wgmma_available).
 * ops_conv.cu offers it as the conv2d path "wgmma" and times its configurations and splits at setup.
 */
#ifndef TASC_CONV_WGMMA_H
#define TASC_CONV_WGMMA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "conv_3xtf32.h" /* cv3_shape */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cw_plan cw_plan;

/* The plan of shape s (host memory only), or NULL with the reason in err: the wgmma path not
 * available on this device or build, or indices past 32 bits. */
cw_plan *cw_plan_new(const cv3_shape *s, char *err, size_t errlen);
void cw_plan_free(cw_plan *p);

/* The tile configurations (the matmul's: "128x128", "128x64"). */
int cw_config_count(void);
const char *cw_config_name(int cfg);

/* The split-K counts worth timing for configuration cfg: 1, then 2, 4, 8, 16 where the tiles do
 * not fill the SMs, a slice keeps at least 4 k-tiles of 32 and the blocks stay within two waves;
 * up to max into splits, their number. */
int cw_split_candidates(const cw_plan *p, int cfg, int *splits, int max);
/* The workspace a run needs (the split columns, and room to split the weight per call): the same
 * for every configuration and split (split-K partials live in the matmul's own workspace). */
size_t cw_workspace_bytes(const cw_plan *p);

/* y = act(conv(x, w) + bias + add) at configuration cfg and split (1 .. 16); bias (F) and add (y's
 * shape) may be NULL; act an mm_act (matmul.h); ws: cw_workspace_bytes of device memory, 256-byte
 * aligned. The weight's split is read from the node's pre-split list (mm_3xtf32_presplit_node_set)
 * when it holds w, else made into ws. The same bits on every run for a given cfg and split.
 * Asynchronous on stream s; 0, or -1 with the reason in err (nothing launched: the matmul's maps or
 * split-K workspace could not be had); a failed launch aborts, as the matmul's launches do. */
int cw_run(const cw_plan *p, int cfg, int split, const float *x, const float *w, const float *bias, const float *add,
           float *y, int act, float *ws, cudaStream_t s, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
