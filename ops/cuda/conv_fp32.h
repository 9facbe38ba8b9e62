/* conv_fp32.h: the convolution (groups 1) as an FP32 implicit GEMM on the FMA units (conv_fp32.cu):
 * strict FP32 products and sums (no tensor cores, no TF32), so it serves both precisions. A plan
 * holds what a convolution shape needs on the device (the per-k offset table, the split-K arrival
 * counters); a run is one kernel with bias, the fused add and the activation in its epilogue.
 * ops_conv.cu offers it as the conv2d path "igemm" and times its tile configurations and splits
 * against cuDNN and the GEMM path at setup. The shape is conv_3xtf32.h's cv3_shape.
 */
#ifndef TASC_CONV_FP32_H
#define TASC_CONV_FP32_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "conv_3xtf32.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_plan cf_plan;

/* The plan of shape s, or NULL with the reason in err: indices past 32 bits, a device without
 * cp.async (compute capability below 8.0), or out of device memory. Owned by the caller
 * (cf_plan_free). */
cf_plan *cf_plan_new(const cv3_shape *s, char *err, size_t errlen);
void cf_plan_free(cf_plan *p);

/* The tile configurations, by index: count and names ("64x64_t4x8", ...). */
int cf_config_count(void);
const char *cf_config_name(int cfg);

/* The split-K counts worth timing for tile configuration cfg (1 first; 2, 4, 8, 16 where the grid
 * is small and the reduction deep): up to max into splits, their number. */
int cf_split_candidates(const cf_plan *p, int cfg, int *splits, int max);
/* The workspace a run with split k-slices needs (0 for split 1). */
size_t cf_workspace_bytes(const cf_plan *p, int split);

/* y = act(conv(x, w) + bias + add) with tile configuration cfg and split k-slices (at most 16;
 * ws: at least cf_workspace_bytes; NULL runs unsplit); bias (F) and add (y's shape) may be NULL;
 * act an mm_act (matmul.h). The same bits on every run for a given cfg and split. Asynchronous on
 * stream s; a launch error is left for cudaGetLastError. Runs on one plan are ordered (one
 * stream): the split-K arrival counters are the plan's. */
void cf_run(const cf_plan *p, int cfg, int split, const float *x, const float *w, const float *bias, const float *add,
            float *y, int act, float *ws, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
