/* zoo_impl.h: internals shared by the model builders of the zoo (the family files in models/), not a public API.
 *
 * The layer helpers wrap the graph builder: each creates its own weights (named "<name>.weight",
 * "<name>.bias", ...; names must be unique in the graph) and returns the output tensor id, or -1
 * once the graph has an error (the builder's errors are sticky, so a family builder checks
 * graph_ok once at the end). Helpers never read a tensor id below 0.
 */
#ifndef TASC_ZOO_IMPL_H
#define TASC_ZOO_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#define ZOO_NAME_LEN 128

/* Family builders: a graph (caller owns) that may carry a builder error; NULL only when out of
 * memory. The batch has been range-checked by zoo_build. */
graph *zoo_resnet50(int32_t batch);
graph *zoo_resnext50(int32_t batch);
graph *zoo_nasnet_a(int32_t batch);
graph *zoo_nasrnn(int32_t batch);
graph *zoo_bert(int32_t batch);
graph *zoo_inception_v3(int32_t batch);
graph *zoo_squeezenet(int32_t batch);

/* snprintf into buf (ZOO_NAME_LEN bytes); returns buf. */
const char *zoo_fmt(char *buf, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Dimension i of tensor x, or -1 if x < 0 or i is beyond its rank. */
int64_t zoo_dim(const graph *g, int32_t x, int32_t i);

/* One-output node `op` named `name` with parameters p; returns its output or -1. */
int32_t zoo_node(graph *g, const char *name, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in);

/* Conv2d of x (N,C,H,W) with a He-initialised kernel "<name>.weight" (f, C/groups, kh, kw),
 * explicit symmetric padding (ph rows top and bottom, pw columns left and right), an optional
 * zero bias "<name>.bias" (f), and a fused activation. */
int32_t zoo_conv(graph *g, const char *name, int32_t x, int64_t f, int32_t kh, int32_t kw, int32_t sh,
                 int32_t sw, int32_t ph, int32_t pw, int32_t groups, int with_bias, ops_act act);
/* The same with TensorFlow-style "SAME" padding (output = ceil(input / stride)), as TASO's
 * examples build their convolutions. */
int32_t zoo_conv_same(graph *g, const char *name, int32_t x, int64_t f, int32_t kh, int32_t kw, int32_t sh,
                      int32_t sw, int32_t groups, ops_act act);
/* Inference batchnorm over channel dim 1 with constant statistics: scale 1, bias 0, mean 0,
 * var 1 (weights "<name>.scale/.bias/.mean/.var", each (C)). */
int32_t zoo_batchnorm(graph *g, const char *name, int32_t x, float eps);
/* Standalone activation node (relu, sigmoid, tanh, gelu). */
int32_t zoo_act(graph *g, const char *name, ops_type op, int32_t x);
/* Fully connected layer: x (..., k) times "<name>.weight" (k, n), He-initialised with fan-in k, plus a zero bias
 * "<name>.bias" (n) when with_bias, as one matmul node. */
int32_t zoo_linear(graph *g, const char *name, int32_t x, int64_t n, int with_bias, ops_act act);
/* Pooling with explicit symmetric padding p (avgpool: count_pad says whether padded cells count). */
int32_t zoo_pool(graph *g, const char *name, ops_type op, int32_t x, int32_t k, int32_t s, int32_t p,
                 int32_t count_pad);
/* Pooling with "SAME" padding (TASO's examples). */
int32_t zoo_pool_same(graph *g, const char *name, ops_type op, int32_t x, int32_t k, int32_t s, int32_t count_pad);
/* Scale the RANDOM kernels that end residual branches (std / sqrt(R), R residual additions) and
 * pairs of summed branches (std / sqrt(2)), so activations stay of order one (zoo_init.c). */
void zoo_balance_branches(graph *g);
/* Classifier head of the CNNs: global average pool (N,C,H,W) -> (N,C,1,1), reshape (N,C),
 * linear C -> n_classes with bias. */
int32_t zoo_classifier(graph *g, const char *name, int32_t x, int64_t n_classes);

#endif
