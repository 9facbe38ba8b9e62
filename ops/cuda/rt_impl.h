/* rt_impl.h: internals shared by the GPU runtime (rt*.c) and the CUDA op implementations
 * (ops_*.cu): the context's layout, what an op implementation may ask of its context, the error
 * checks, and the entry points the registration table (rt_ops.c) lists.
 *
 * An op implementation (ops_cuda_fn) is called in two phases. In the setup phase (rt_setup_phase
 * true, the eager first run) it may create its per-node state (rt_node_state_set), measure
 * algorithms and grow the shared workspace; it runs for real. In the run phase (stream capture or
 * replay by launches) it must only enqueue work on rt_stream: no allocation, no synchronisation.
 * Failures a node can report (a cuDNN call that refuses a configuration) return -1 through
 * rt_fail; broken invariants abort.
 */
#ifndef TASC_RT_IMPL_H
#define TASC_RT_IMPL_H

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

#include "graph.h"
#include "ops.h"
#include "rt.h"

#define RT_ERR_LEN 512
#define RT_ALIGN 256 /* bytes: every tensor buffer starts on this boundary */

/* cuDNN calls whose failure is a bug or a broken environment: abort with cuDNN's message. */
#define CUDNN_CHECK(call) do { \
    cudnnStatus_t _st = (call); \
    if (_st != CUDNN_STATUS_SUCCESS) { \
        fprintf(stderr, "%s:%d: cuDNN error: %s: %s\n", __FILE__, __LINE__, #call, cudnnGetErrorString(_st)); \
        abort(); \
    } \
} while (0)

/* Calls that may fail because of a run's circumstances (a stream capture the call is not allowed
 * in, a configuration cuDNN refuses) inside an op implementation: the node fails with the
 * library's message, and the runtime falls back or reports it. */
#define RT_CUDA_TRY(ctx, call) do { \
    cudaError_t _e = (call); \
    if (_e != cudaSuccess) { \
        (void)cudaGetLastError(); \
        return rt_fail((ctx), "%s: %s", #call, cudaGetErrorString(_e)); \
    } \
} while (0)
#define RT_LAUNCH_TRY(ctx) RT_CUDA_TRY(ctx, cudaGetLastError())
#define RT_CUDNN_TRY(ctx, call) do { \
    cudnnStatus_t _st = (call); \
    if (_st != CUDNN_STATUS_SUCCESS) \
        return rt_fail((ctx), "%s: %s", #call, cudnnGetErrorString(_st)); \
} while (0)

typedef enum { RT_PHASE_SETUP, RT_PHASE_RUN } rt_phase;

/* One node as the runtime runs it. */
typedef struct {
    int32_t id;              /* graph node id */
    ops_sig sig;             /* shapes point into in_sh / out_sh below */
    ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
    const float *in[OPS_MAX_INPUTS]; /* device pointers, resolved once memory is placed */
    float *out[OPS_MAX_OUTPUTS];
    void *state;             /* the op's per-node state (owned through state_free) */
    void (*state_free)(void *state);
} rt_node;

typedef enum {
    RT_T_NONE,      /* not needed by any run */
    RT_T_PERSIST,   /* its own allocation for the context's life: inputs, weights, folded values */
    RT_T_ARENA,     /* a planned slice of the arena */
    RT_T_ALIAS      /* the same bytes as tensor alias_of (a reshape that moves nothing) */
} rt_tensor_class;

struct rt_ctx {
    graph *g;                  /* owned clone */
    rt_opts opts;
    cudaStream_t stream;
    cudnnHandle_t cudnn;
    /* tensors, indexed by tensor id */
    uint8_t *tclass;           /* rt_tensor_class */
    int32_t *alias_of;         /* RT_T_ALIAS: the tensor whose bytes it shares (never itself an alias) */
    float **dev;               /* device pointer of every needed tensor */
    /* nodes */
    rt_node *fold; int32_t n_fold;  /* weight-only nodes, run once at setup */
    rt_node *run;  int32_t n_run;   /* nodes of every run, in order */
    int32_t n_dead, n_alias;
    rt_node *cur;              /* the node being run (its state slot) */
    rt_phase phase;
    /* memory */
    char *arena; int64_t arena_bytes, unplanned_bytes;
    int64_t persist_bytes, input_bytes;
    void *ws; size_t ws_size, ws_need, ws_limit; /* shared scratch; ws_need: most any node uses */
    /* graph replay */
    int graph_state;           /* 0 not captured yet, 1 captured, -1 off or failed */
    cudaGraphExec_t exec;
    char graph_note[160];
    cudaEvent_t ev0, ev1;
    /* node checks */
    double check_worst; char check_worst_node[96]; int32_t check_failed;
    char err[RT_ERR_LEN];
};

/* --- what an op implementation may use ------------------------------------------------------ */

cudaStream_t rt_stream(const rt_ctx *c);
cudnnHandle_t rt_cudnn(const rt_ctx *c);
int rt_setup_phase(const rt_ctx *c);
int rt_verbose(const rt_ctx *c);
/* The current node's name (for messages). */
const char *rt_node_name(const rt_ctx *c);
void *rt_node_state(const rt_ctx *c);
/* Attach state to the current node (setup phase only); free_fn (may be NULL) releases it. */
void rt_node_state_set(rt_ctx *c, void *state, void (*free_fn)(void *state));
/* *ws = a shared scratch buffer of at least bytes (NULL when bytes is 0), valid until the node
 * returns. In the setup phase it grows as needed (up to the limit) and records the need; in the
 * run phase the need must have been recorded. Returns 0, or -1 with a message in the context. */
int rt_workspace(rt_ctx *c, size_t bytes, void **ws);
/* The workspace limit in bytes (choices measured under one limit may not hold under another). */
size_t rt_workspace_limit(const rt_ctx *c);
/* Setup phase only: the whole scratch up to the limit, for algorithm searches, without
 * recording a need; *bytes gets its size. Returns 0, or -1 with a message. */
int rt_workspace_search(rt_ctx *c, void **ws, size_t *bytes);
/* Record a message for the current node; returns -1. */
int rt_fail(rt_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --- shared launchers (ops_elementwise.cu) -------------------------------------------------- */

/* y (n) = act(y + bias[(i / inner) % channels]) in place; bias may be NULL (act only).
 * Returns the launch's error. */
cudaError_t rt_launch_bias_act(float *y, const float *bias, int64_t n, int64_t channels, int64_t inner, ops_act act,
                        cudaStream_t s);

/* --- the op implementations (one per op; rt_ops.c lists them) -------------------------------- */

#define RT_OP_FN(nm) int rt_op_##nm(struct rt_ctx *ctx, const ops_sig *s, const float *const *in, float *const *out)
RT_OP_FN(conv2d);     /* ops_conv.cu */
RT_OP_FN(avgpool2d);
RT_OP_FN(maxpool2d);
RT_OP_FN(matmul);     /* rt_ops.c, on the hand-written kernels of matmul.h */
RT_OP_FN(ewadd);      /* ops_elementwise.cu */
RT_OP_FN(ewmul);
RT_OP_FN(ewsub);
RT_OP_FN(ewdiv);
RT_OP_FN(pow);
RT_OP_FN(smul);
RT_OP_FN(relu);
RT_OP_FN(sigmoid);
RT_OP_FN(tanh);
RT_OP_FN(gelu);
RT_OP_FN(erf);
RT_OP_FN(sqrt);
RT_OP_FN(clip);
RT_OP_FN(transpose);  /* ops_data.cu */
RT_OP_FN(concat);
RT_OP_FN(split);
RT_OP_FN(reshape);
RT_OP_FN(gather);
RT_OP_FN(enlarge);
RT_OP_FN(const_imm);
RT_OP_FN(const_iconv);
RT_OP_FN(const_ones);
RT_OP_FN(const_pool);
RT_OP_FN(batchnorm);  /* ops_norm.cu */
RT_OP_FN(softmax);
RT_OP_FN(layernorm);
RT_OP_FN(globalavgpool);

#ifdef __cplusplus
}
#endif

/* --- device helpers for the kernels --------------------------------------------------------- */
#ifdef __CUDACC__
#define RT_THREADS 256
/* Blocks for a grid-stride loop over n items. */
static inline unsigned rt_blocks(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b > (int64_t)1 << 20)
        b = (int64_t)1 << 20;
    return (unsigned)(b < 1 ? 1 : b);
}

/* ops_act_apply on the device, with the same double evaluation as the CPU reference. */
static __device__ __forceinline__ float rt_act(int act, float x) {
    switch (act) {
    case OPS_ACT_RELU:
        return x < 0.0f ? 0.0f : x;
    case OPS_ACT_SIGMOID:
        return (float)(1.0 / (1.0 + exp(-(double)x)));
    case OPS_ACT_TANH:
        return (float)tanh((double)x);
    case OPS_ACT_GELU:
        return (float)(0.5 * (double)x * (1.0 + erf((double)x * 0.70710678118654752440)));
    default:
        return x;
    }
}
#endif

#endif
