/* cost.h: cost models for the optimizer, behind one interface -- the time of one node (op,
 * parameters, input and output shapes) in microseconds, and the time of a graph as the sum over
 * the nodes that run.
 *
 * A graph's cost counts each live node (one whose results reach an output) once, except nodes
 * computed from weights alone: the runtime computes those once at setup (and `tasc optimize`
 * folds them into new weights), so they are free. Models are deterministic functions of the node;
 * every answer is memoised per model, keyed by op, declared parameters and shapes.
 *
 * The analytic model (cost_analytic_new) needs no GPU: FLOPs and bytes against a roofline, a
 * per-kernel launch cost, and an efficiency term for work too small to fill the SMs (see
 * cost_analytic_config). Other models (the measured GPU one) plug in through cost_model_new.
 * A cost_model is not thread-safe (its memo table).
 */
#ifndef TASC_COST_H
#define TASC_COST_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

typedef struct cost_model cost_model;

/* One node's time in microseconds into *us; 0, or -1 with a one-line message. */
typedef int (*cost_node_fn)(void *impl, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
                            int32_t n_out, const ops_shape *out, double *us, char *err, size_t errlen);

/* A model over node_fn; free_fn (may be NULL) releases impl with the model. Caller owns the
 * result (cost_model_free). name is copied. */
cost_model *cost_model_new(const char *name, cost_node_fn node_fn, void (*free_fn)(void *impl), void *impl);
void cost_model_free(cost_model *m);
const char *cost_model_name(const cost_model *m);

/* The analytic model's constants. Defaults (cost_analytic_defaults) are the H100 SXM's FP32
 * roofline: 51 TFLOP/s without tensor cores, 3.0 TB/s of HBM3, 132 SMs, and a launch cost of
 * 2 us per kernel, the per-node overhead left when nodes are replayed from a CUDA graph (about
 * 5 us when launched one by one), which is what the runtime does.
 *
 * time = launch_us + max(flops / (peak * eff), bytes / (bandwidth * eff), min_us), where bytes are
 * the float32 inputs and outputs, min_us (1 us) is the least a kernel that touches memory takes
 * beyond its launch (a DRAM round trip and the ramp of its blocks; without it a tiny GEMM would
 * look cheaper than a tiny elementwise op), and eff (0..1] is the fraction of the SMs the work
 * keeps busy:
 *  - conv2d and matmul, as a GEMM per group (conv: M = N*OH*OW, N = F/groups,
 *    K = C/groups*KH*KW): ceil(M/tile)*ceil(N/tile) output tiles per group, split along K into
 *    up to ceil(K/ksplit_min) pieces while that fills more SMs; eff = blocks / (waves * SMs), so
 *    a part-filled last wave costs a full one;
 *  - every other op: one block per block_elems elements of its largest tensor,
 *    eff = min(1, blocks / SMs).
 * reshape costs 0 (the runtime aliases its input: no kernel). Merging small ops pays because
 * their eff grows and one launch replaces several. */
typedef struct {
    double peak_flops;       /* FLOP/s */
    double bandwidth;        /* bytes/s */
    double launch_us;        /* per kernel */
    double min_us;           /* least time of a kernel's work */
    int32_t sms;             /* streaming multiprocessors */
    int32_t tile;            /* GEMM output tile edge */
    int32_t ksplit_min;      /* smallest K slice of a split-K GEMM */
    int32_t block_elems;     /* elements per block of the other kernels */
} cost_analytic_config;

void cost_analytic_defaults(cost_analytic_config *c);
/* The analytic model; cfg NULL: the defaults. Caller owns. */
cost_model *cost_analytic_new(const cost_analytic_config *cfg);

/* One node's time, memoised. 0, or -1 with a message (the model's, prefixed by the op name). */
int cost_node(cost_model *m, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int32_t n_out,
              const ops_shape *out, double *us, char *err, size_t errlen);
/* Node n of g. */
int cost_graph_node(cost_model *m, const graph *g, int32_t n, double *us, char *err, size_t errlen);

/* Which tensors of g are computed from weights alone: wo[t] = 1 for weights and for every output
 * of a node all of whose inputs are such (nodes without inputs included). g must be acyclic.
 * wo has room for g->n_tensors. */
void cost_weight_only(const graph *g, uint8_t *wo);

/* The graph's cost: the sum over live nodes not computed from weights alone. wo may be NULL, or
 * receives the weight-only flags as above. 0, or -1 with a message (a cycle, a model error). */
int cost_graph(cost_model *m, const graph *g, double *us, uint8_t *wo, char *err, size_t errlen);

/* How many node answers the model computed (memo misses) and looked up (hits). */
void cost_model_stats(const cost_model *m, int64_t *computed, int64_t *reused);

#endif
