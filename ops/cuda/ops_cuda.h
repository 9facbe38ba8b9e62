/* ops_cuda.h: what the CUDA op implementations (ops_*.cu, ops_matmul.c) share: the entry points
 * declared from ops.def, access to the ops_cuda_env a kernel is called with (ops.h), the error
 * checks, and the launch helpers.
 *
 * Each op has one entry point ops_cuda_<name> (OPS_CUDA_FN), registered into the op table's CUDA
 * slot by ops_cuda_register; a missing one is a link error. Failures a node can report (a cuDNN
 * call that refuses a configuration) return -1 through oc_fail; broken invariants abort.
 */
#ifndef TASC_OPS_CUDA_H
#define TASC_OPS_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "gpu_util.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "base.h"
#include "ops.h"

/* cuDNN calls whose failure is a bug or a broken environment: abort with cuDNN's message. */
#define CUDNN_CHECK(call) do { \
    cudnnStatus_t _st = (call); \
    if (_st != CUDNN_STATUS_SUCCESS) { \
        fprintf(stderr, "%s:%d: cuDNN error: %s: %s\n", __FILE__, __LINE__, #call, cudnnGetErrorString(_st)); \
        abort(); \
    } \
} while (0)

#define OC_ALIGN 256 /* bytes: scratch slices start on this boundary (as the runtime's buffers) */

/* Record a message for the node; returns -1. */
int oc_fail(ops_cuda_env *env, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Calls that may fail because of a run's circumstances (a stream capture the call is not allowed
 * in, a configuration cuDNN refuses) inside an op implementation: the node fails with the
 * library's message, and the runtime falls back or reports it. */
#define OC_CUDA_TRY(env, call) do { \
    cudaError_t _e = (call); \
    if (_e != cudaSuccess) { \
        (void)cudaGetLastError(); \
        return oc_fail((env), "%s: %s", #call, cudaGetErrorString(_e)); \
    } \
} while (0)
#define OC_LAUNCH_TRY(env) OC_CUDA_TRY(env, cudaGetLastError())
#define OC_CUDNN_TRY(env, call) do { \
    cudnnStatus_t _st = (call); \
    if (_st != CUDNN_STATUS_SUCCESS) \
        return oc_fail((env), "%s: %s", #call, cudnnGetErrorString(_st)); \
} while (0)

/* --- the environment ------------------------------------------------------------------------ */

static inline cudaStream_t oc_stream(const ops_cuda_env *env) { return (cudaStream_t)env->stream; }
static inline cudnnHandle_t oc_cudnn(const ops_cuda_env *env) { return (cudnnHandle_t)env->cudnn; }
static inline int oc_setup_phase(const ops_cuda_env *env) { return env->setup; }
static inline int oc_verbose(const ops_cuda_env *env) { return env->verbose; }
static inline const char *oc_node_name(const ops_cuda_env *env) { return env->node ? env->node : "?"; }
static inline void *oc_node_state(const ops_cuda_env *env) { return env->state; }
/* Attach state to the node (setup phase only), releasing any earlier one; free_fn may be NULL. */
static inline void oc_node_state_set(ops_cuda_env *env, void *state, void (*free_fn)(void *state)) {
    BASE_ASSERT(env->setup);
    if (env->state && env->state_free)
        env->state_free(env->state);
    env->state = state;
    env->state_free = free_fn;
}
static inline int oc_workspace(ops_cuda_env *env, size_t bytes, void **ws) { return env->workspace(env, bytes, ws); }
static inline size_t oc_workspace_limit(const ops_cuda_env *env) { return env->ws_limit; }
static inline int oc_workspace_search(ops_cuda_env *env, void **ws, size_t *bytes) {
    return env->workspace_search(env, ws, bytes);
}

/* --- shared launchers (ops_elementwise.cu) -------------------------------------------------- */

/* y (n) = act(y + bias[(i / inner) % channels] + add[i]) in place; bias and add may be NULL.
 * Returns the launch's error. */
cudaError_t oc_launch_bias_act(float *y, const float *bias, const float *add, int64_t n, int64_t channels,
                               int64_t inner, ops_act act, cudaStream_t s);

/* The hand-written matmul's epilogue activation (an mm_act of matmul.h) for act, or -1 where that
 * epilogue lacks it (sigmoid, tanh: a separate pass). In ops_matmul.c. */
int oc_mm_act(ops_act act);

/* --- the entry points, one per op of ops.def ------------------------------------------------- */

#define OPS_CUDA_FN(nm) int ops_cuda_##nm(ops_cuda_env *env, const ops_sig *s, const float *const *in, float *const *out)
#define OP(id, nm, mi, ma, no, dc) OPS_CUDA_FN(nm);
#include "ops.def"
#undef OP

/* Convolution path choices (ops_conv.cu; the per-device cache file: conv_table.h). Counts since
 * the last take: configurations whose paths were measured (and the seconds that took), and setups
 * that took a choice made before, in this process or read from the file. */
typedef struct {
    int32_t measured;
    double measure_s;
    int32_t reused;
} ops_cuda_conv_stats;
void ops_cuda_conv_stats_take(ops_cuda_conv_stats *st);
/* Writes the choices made since the last write into the cache file, under its lock, in one
 * rewrite (the runtime calls it at the end of each setup; nothing to write: nothing done). */
void ops_cuda_conv_cache_flush(void);
/* Writes what is pending (ops_cuda_conv_cache_flush), then forgets this process's choices: the
 * next setup reads the cache file again (tests). */
void ops_cuda_conv_cache_reset(void);
/* The cache file choices are read from and written to; "" when TASC_CONV_CACHE=off, or after the
 * file could not be read or written (reported on stderr then). */
const char *ops_cuda_conv_cache_path(char *buf, size_t len);

/* Fill ops_cuda[] from the entry points above (ops_cuda_register.c). */
void ops_cuda_register(void);

#ifdef __cplusplus
}
#endif

/* --- device helpers for the kernels --------------------------------------------------------- */
#ifdef __CUDACC__
#define OC_THREADS 256
/* Blocks for a grid-stride loop over n items. */
static inline unsigned oc_blocks(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b > (int64_t)1 << 20)
        b = (int64_t)1 << 20;
    return (unsigned)(b < 1 ? 1 : b);
}

/* ops_act_apply on the device, with the same double evaluation as the CPU reference. */
static __device__ __forceinline__ float oc_act(int act, float x) {
    switch (act) {
    case OPS_ACT_RELU:
        return x < 0.0f ? 0.0f : x;
    case OPS_ACT_SIGMOID:
        return (float)(1.0 / (1.0 + exp(-(double)x)));
    case OPS_ACT_TANH:
        return (float)tanh((double)x);
    case OPS_ACT_GELU:
        return (float)(0.5 * (double)x * (1.0 + erf((double)x * 0.70710678118654752440)));
    case OPS_ACT_SILU:
        return (float)((double)x * (1.0 / (1.0 + exp(-(double)x))));
    case OPS_ACT_GELU_TANH: {
        const double d = (double)x;
        return (float)(0.5 * d * (1.0 + tanh(0.79788456080286535588 * (d + 0.044715 * d * d * d))));
    }
    case OPS_ACT_RELU6:
        x = x < 0.0f ? 0.0f : x;
        return x > 6.0f ? 6.0f : x;
    case OPS_ACT_HARDSWISH: {
        double t = (double)x / 6.0 + 0.5;
        t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
        return (float)((double)x * t);
    }
    default:
        return x;
    }
}
#endif

#endif
