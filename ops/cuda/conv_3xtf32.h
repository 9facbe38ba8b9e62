/* conv_3xtf32.h: the convolution (groups 1) as an implicit GEMM on the tensor cores at FP32
 * accuracy (3xTF32, issue 17; conv_3xtf32.cu). A plan holds what a convolution shape needs on the
 * device (the per-k offset table); a run is one kernel with bias and activation in its epilogue.
 * ops_conv.cu offers it as the conv2d path "3xtf32" at precision 3xtf32 and times its tile
 * configurations against cuDNN and the GEMM path at setup.
 */
#ifndef TASC_CONV_3XTF32_H
#define TASC_CONV_3XTF32_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x (N, C, H, W), w (F, C, KH, KW), y (N, F, OH, OW); strides, dilations, top/left padding (the
 * bottom/right padding is implied by OH, OW). */
typedef struct {
    int64_t N, C, H, W, F, KH, KW, OH, OW, sh, sw, dh, dw, pt, pl;
} cv3_shape;

typedef struct cv3_plan cv3_plan;

/* The plan of shape s, or NULL with the reason in err: indices past 32 bits, a device without
 * TF32 mma.sync (compute capability below 8.0), or out of device memory. */
cv3_plan *cv3_plan_new(const cv3_shape *s, char *err, size_t errlen);
void cv3_plan_free(cv3_plan *p);

/* The tile configurations, by index: count and names ("128x128", ...). */
int cv3_config_count(void);
const char *cv3_config_name(int cfg);

/* The split-K counts worth timing for tile configuration cfg (1 first; more where the grid is
 * small and the reduction deep): up to max into splits, their number. */
int cv3_split_candidates(const cv3_plan *p, int cfg, int *splits, int max);
/* The workspace a run with split k-slices needs (0 for split 1). */
size_t cv3_workspace_bytes(const cv3_plan *p, int split);

/* y = act(conv(x, w) + bias + add) with tile configuration cfg and split k-slices (ws: at least
 * cv3_workspace_bytes; NULL runs unsplit); bias (F) and add (y's shape) may be NULL; act an mm_act
 * (matmul.h). Asynchronous on stream s; a launch error is left for cudaGetLastError. Runs on one
 * plan are ordered (one stream): the split-K arrival counters are the plan's. */
void cv3_run(const cv3_plan *p, int cfg, int split, const float *x, const float *w, const float *bias,
             const float *add, float *y, int act, float *ws, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
