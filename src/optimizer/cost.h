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
#include <stdio.h>
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

/* The analytic model's constants. The roofline is the H100 SXM's FP32 one: 51 TFLOP/s without
 * tensor cores, 3.0 TB/s of HBM3, 132 SMs. The other defaults are fitted to node times measured
 * on the H100 under CUDA-graph replay, which is how the runtime runs a model (bench/cost/README.md):
 * a launch cost of 1.58 us per kernel, least work times of 0.14 us (memory-bound kernels),
 * 7.5 us (conv2d) and 5.8 us (matmul), efficiencies of 0.48 (conv2d) and 0.81 (matmul), and
 * 0.84 of the bandwidth.
 *
 * time = launch_us + max(flops / (peak * eff * class_eff), bytes / (bandwidth * eff * mem_eff),
 * min), where bytes are the float32 inputs and outputs, class_eff is conv_eff, matmul_eff or 1,
 * min is conv_min_us, matmul_min_us or min_us (the least a kernel takes beyond its launch; without
 * it a tiny GEMM would look cheaper than a tiny elementwise op), and eff (0..1] is the fraction of
 * the SMs the work keeps busy:
 *  - conv2d and matmul, as a GEMM per group (conv: M = N*OH*OW, N = F/groups,
 *    K = C/groups*KH*KW): ceil(M/tile)*ceil(N/tile) output tiles per group, split along K into
 *    up to ceil(K/ksplit_min) pieces while that fills more SMs; eff = blocks / (waves * SMs), so
 *    a part-filled last wave costs a full one;
 *  - every other op: one block per block_elems elements of its largest tensor,
 *    eff = min(1, blocks / SMs).
 * reshape costs 0 (the runtime aliases its input: no kernel). Merging small ops pays because
 * their eff grows and one launch replaces several.
 *
 * Calibration: conv_eff and matmul_eff are the fraction of the peak a convolution (cuDNN or the
 * GEMM path) or a matmul (our kernels) reaches on the SMs it keeps busy; mem_eff the bandwidth a
 * memory-bound kernel sees as a multiple of bandwidth (above 1 would mean batch-1 activations
 * staying in the 50 MB L2 pay off beyond the launch). These, the launch cost and the three least
 * times are what `tasc cost fit` fits. */
typedef struct {
    double peak_flops;       /* FLOP/s */
    double bandwidth;        /* bytes/s */
    double launch_us;        /* per kernel */
    double min_us;           /* least time of a kernel's work */
    double conv_min_us;      /* the same for a conv2d */
    double matmul_min_us;    /* the same for a matmul */
    double conv_eff;         /* (0, 1]: fraction of peak_flops a conv2d reaches */
    double matmul_eff;       /* (0, 1]: fraction of peak_flops a matmul reaches */
    double mem_eff;          /* bandwidth a memory-bound kernel sees, as a multiple of bandwidth: below
                              * 1 for HBM, above 1 where the data stays in L2 between kernels */
    int32_t sms;             /* streaming multiprocessors */
    int32_t tile;            /* GEMM output tile edge */
    int32_t ksplit_min;      /* smallest K slice of a split-K GEMM */
    int32_t block_elems;     /* elements per block of the other kernels */
} cost_analytic_config;

void cost_analytic_defaults(cost_analytic_config *c);
/* The constants by name, for command lines: "launch_us=1.5". Names: peak_tflops (TFLOP/s),
 * bandwidth_tbs (TB/s), launch_us, min_us, conv_min_us, matmul_min_us, conv_eff, matmul_eff,
 * mem_eff, sms, tile, ksplit_min, block_elems. 0, or -1 with a message (unknown name, malformed or out-of-range value). */
int cost_analytic_set(cost_analytic_config *c, const char *assignment, char *err, size_t errlen);
/* Number of named constants, and the i-th one's name and current value (in the units above). */
int32_t cost_analytic_n_params(void);
const char *cost_analytic_param(const cost_analytic_config *c, int32_t i, double *value);
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

/* One line of a measured-cost cache file (ops/cuda/rt_cost.h), its trailing newline already
 * removed: 0 for a blank or '#' line; 1 for "DEVICE<TAB>KEY<TAB>MICROSECONDS", the line split in
 * place (*device and *key point into it) and the time in *us; -1 for anything else. */
int cost_cache_line(char *line, char **device, char **key, double *us);
/* Every entry of an open cache file, in file order, to fn (device and key valid during the call);
 * a nonzero return of fn stops the reading: -1 is an error (its message in err gets the prefix
 * "PATH:LINE: "), 1 stops quietly. 0, or -1 with a message (a malformed line, a read error). */
typedef int (*cost_cache_fn)(void *arg, const char *device, const char *key, double us, char *err, size_t errlen);
int cost_cache_read(FILE *f, const char *path, cost_cache_fn fn, void *arg, char *err, size_t errlen);

/* A node configuration as text, "OP p1=v1,p2=v2 (shape);(shape)": every parameter the op declares,
 * by name (float values %.9g, enums by name, the list as [a,b]), then the input shapes. This is
 * the key of the measured model's cache file (ops/cuda/rt_cost.h). 0, or -1 when buf is too small. */
int cost_key_text(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, char *buf, size_t len);
/* The inverse: parameters not in the text keep the op's defaults, every value is checked against
 * the op's domain and the shapes by the op's shape inference (out, n_out receive the results).
 * 0, or -1 with a one-line message naming what is wrong. */
int cost_key_parse(const char *text, ops_type *op, ops_params *p, int32_t *n_in, ops_shape *in, int32_t *n_out,
                   ops_shape *out, char *err, size_t errlen);

/* Calibration: node configurations with their measured times (`tasc cost`). Nodes with more
 * inputs than COST_SAMPLE_MAX_IN (wide concats) are not samples. */
#define COST_SAMPLE_MAX_IN 4
typedef struct {
    ops_type op;
    ops_params p;
    int32_t n_in, n_out;
    ops_shape in[COST_SAMPLE_MAX_IN], out[OPS_MAX_OUTPUTS];
    double us; /* measured */
} cost_sample;
/* The analytic model's prediction of each sample into pred (may be NULL) and the mean over the
 * samples of log(predicted / measured)^2 (both floored at 0.05 us, so aliases costing 0 count as
 * small, not infinitely off) into *err2. 0, or -1 with a message from the model. */
int cost_analytic_error(const cost_analytic_config *c, const cost_sample *s, int32_t n, double *pred, double *err2,
                        char *err, size_t errlen);
/* log(predicted / measured), both floored at 0.05 us: the per-sample error of the calibration. */
double cost_log_ratio(double predicted_us, double measured_us);
/* The constants cost_analytic_fit fits: how many, and the k-th one's name. */
int32_t cost_analytic_n_fitted(void);
const char *cost_analytic_fitted(int32_t k);
/* Fits the calibration constants of c (launch_us, min_us, conv_min_us, matmul_min_us, conv_eff,
 * matmul_eff, mem_eff; the roofline and the tiling stay) to the samples, minimising
 * cost_analytic_error: rounds of Nelder-Mead from c's values within bounds (times 0..10 us, the
 * GEMM floors 0..100 us, the efficiencies 0.02..1, mem_eff 0.02..8) then a golden-section line
 * search along each constant, values rounded to 4 significant digits, while a round still
 * improves. Deterministic. progress (may be
 * NULL) is called after each round. 0, or -1 with a message. */
int cost_analytic_fit(cost_analytic_config *c, const cost_sample *s, int32_t n,
                      void (*progress)(int sweep, double err2, void *arg), void *arg, char *err, size_t errlen);

#endif
