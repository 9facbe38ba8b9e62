/* rt_impl.h: internals of the GPU runtime (rt*.c): the context's layout.
 *
 * A kernel entry point (ops_cuda_fn, ops/cuda) is called in two phases with an ops_cuda_env the
 * runtime fills per node call (rt_exec_node). In the setup phase (the eager first run) it may
 * create its per-node state, measure algorithms and grow the shared workspace; it runs for real.
 * In the run phase (stream capture or replay by launches) it only enqueues work on the stream.
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
#include "matmul.h"
#include "ops_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "graph.h"
#include "ops.h"
#include "rt.h"

#define RT_ERR_LEN 512
#define RT_ALIGN 256 /* bytes: every tensor buffer starts on this boundary */

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
    int32_t sc;              /* > 0: a matmul whose store runs the movement tree c->sc[sc - 1] */
    int32_t ps, n_ps;        /* 3xtf32: its pre-split operands c->ps[ps .. ps + n_ps) (rt_presplit.c) */
    int32_t fuse_add;        /* >= 0: a convolution adding this tensor, then fuse_act, in its epilogue */
    int32_t fuse_act;        /* ops_act (rt_fuse.c) */
    int32_t fuse_pre;        /* >= 0: the fused smul or ewadd node whose output is input 0, which
                                this softmax or layernorm computes from that node's inputs (in[0]
                                is its input 0; rt_fuse.c); -1 none */
} rt_node;

struct rt_ctx {
    graph *g;                  /* owned clone */
    rt_opts opts;
    cudaStream_t stream;
    cudnnHandle_t cudnn;
    /* tensors, indexed by tensor id */
    uint8_t *tclass;           /* rt_tensor_class (rt.h), as rt_classify and rt.c's rt_plan decide */
    int32_t *alias_of;         /* RT_T_ALIAS: the tensor whose bytes it shares (never itself an alias) */
    int64_t *alias_off;        /* RT_T_ALIAS: from this element of alias_of on (split, concat views, tree leaves) */
    float **dev;               /* device pointer of every needed tensor */
    /* nodes */
    rt_node *fold; int32_t n_fold;  /* weight-only nodes, run once at setup */
    rt_node *run;  int32_t n_run;   /* nodes of every run, in order */
    int32_t n_dead, n_alias, n_fused;
    int32_t *fuse_pre;         /* per node: rt_node.fuse_pre as planned (rt_classes.fuse_pre) */
    /* scatter stores (rt_scatter.h in rt.h): matmuls whose store executes the movement nodes
     * reading their output (those nodes launch nothing); tables on the device in sc_dev */
    rt_scatter *sc; int32_t n_sc, n_scattered; /* n_scattered: movement nodes so executed */
    mm_scatter_node *scn;      /* per store, device table pointers (what mm_scatter_node_set gets)
                                  and, at 3xtf32, the product's decision made when planned */
    mm_autotune_stats sc_tune; /* 3xtf32: first-use tuning done planning the stores (rt_sc_decide) */
    ops_cuda_conv_stats conv; /* the setup's convolution path choices: measured, or made before */
    int64_t *sc_dev;
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
    /* 3xtf32: weight operands split once into TF32 hi and lo parts (rt_presplit.c) */
    mm_presplit *ps; int32_t n_ps;
    float *ps_dev; int64_t ps_bytes; /* one device allocation holding every part */
};

/* rt_presplit.c: the split at setup (after folding, before the setup run; 3xtf32 only), the node
 * call's hand-over (NULL: none) and the release. */
int rt_presplit_setup(rt_ctx *c, char *err, size_t errlen);
void rt_presplit_node(rt_ctx *c, const rt_node *rn);
void rt_presplit_free(rt_ctx *c);

/* One operand to split: the node input it comes from and the split's shape. */
typedef struct {
    int32_t input;
    mm_operand side;
    int64_t rows, k, items, stride;
} rt_ps_want;

/* The operands of matmul node nd (operand shapes as, bs, output os) that the 3xtf32 pre-split
 * splits for the wgmma path, of those that keep their value (a_const, b_const): at most 2 into w
 * (B first), their count. One question for two callers that must agree: the split at setup (on
 * the run nodes' shapes) and the scatter-store planner in rt.c (on the graph's, before the run
 * nodes exist), which plans no store for a product whose weight will be split. */
int32_t rt_ps_matmul(const graph_node *nd, const ops_shape *as, const ops_shape *bs, const ops_shape *os,
                     int a_const, int b_const, rt_ps_want *w);

#ifdef __cplusplus
}
#endif

#endif
