/* nasrnn.c: the NAS RNN cell (Zoph & Le 2017) unrolled over 5 steps, hidden size 512, as in
 * TASO's examples/nasrnn.py.
 *
 * Inputs x0..x4, each (N,512); the initial state h0 (N,512) is a weight, as in TASO. Each step
 * forms eight projections t_i = x W_i + h U_i (16 matmuls with (512,512) weights, 8 adds) and
 * combines them: m0 = relu(t0) + sigmoid(t3), m1 = sigmoid(t1) + tanh(t2),
 * m2 = sigmoid(t4) * tanh(t5), m3 = sigmoid(t6) * relu(t7), m4 = sigmoid(m1) + tanh(m2),
 * m5 = tanh(m0) * tanh(m3), m6 = tanh(m4) * tanh(m5); the new state is tanh(m6). The last
 * state (N,512) is the output.
 * One difference from TASO's script: there every step creates fresh W_i, U_i; here the 16 weight
 * matrices are shared by all steps, as an unrolled recurrent network has them. Operator counts and
 * FLOPs are the same either way.
 */
#include <stdint.h>

#include "zoo_impl.h"

#define NASRNN_HIDDEN 512
#define NASRNN_LENGTH 5

typedef struct {
    graph *g;
    int32_t wx[8], wh[8]; /* (512,512) each: input and state projections */
    int32_t step;
    int32_t k;            /* running node index within the step, for names */
} rnn_ctx;

static const char *rnn_name(rnn_ctx *c, char *buf, const char *what) {
    return zoo_fmt(buf, "step%d.%s%d", (int)c->step, what, (int)c->k++);
}

static int32_t rnn_unary(rnn_ctx *c, ops_type op, int32_t x) {
    char nn[ZOO_NAME_LEN];
    return zoo_act(c->g, rnn_name(c, nn, ops_table[op].name), op, x);
}

static int32_t rnn_binary(rnn_ctx *c, ops_type op, int32_t a, int32_t b) {
    char nn[ZOO_NAME_LEN];
    ops_params p;
    ops_params_default(op, &p);
    const int32_t in[2] = {a, b};
    return zoo_node(c->g, rnn_name(c, nn, ops_table[op].name), op, &p, 2, in);
}

/* The sum of the two projections, t = x W_i + h U_i, (N,512). */
static int32_t rnn_combine(rnn_ctx *c, int32_t x, int32_t h, int32_t i) {
    ops_params p;
    ops_params_default(OP_MATMUL, &p);
    char nn[ZOO_NAME_LEN];
    const int32_t in_x[2] = {x, c->wx[i]}, in_h[2] = {h, c->wh[i]};
    int32_t a = zoo_node(c->g, rnn_name(c, nn, "matmul"), OP_MATMUL, &p, 2, in_x);
    int32_t b = zoo_node(c->g, rnn_name(c, nn, "matmul"), OP_MATMUL, &p, 2, in_h);
    return rnn_binary(c, OP_EWADD, a, b);
}

/* One step: state h (N,512), input x (N,512) -> new state (N,512). Every operand gets its own
 * statement so that node order (and so the JSON) does not depend on argument evaluation order. */
static int32_t rnn_step(rnn_ctx *c, int32_t h, int32_t x) {
    int32_t t[8], m[7], a, b;
    c->k = 0;
    for (int32_t i = 0; i < 8; i++)
        t[i] = rnn_combine(c, x, h, i);
    a = rnn_unary(c, OP_RELU, t[0]);
    b = rnn_unary(c, OP_SIGMOID, t[3]);
    m[0] = rnn_binary(c, OP_EWADD, a, b);
    a = rnn_unary(c, OP_SIGMOID, t[1]);
    b = rnn_unary(c, OP_TANH, t[2]);
    m[1] = rnn_binary(c, OP_EWADD, a, b);
    a = rnn_unary(c, OP_SIGMOID, t[4]);
    b = rnn_unary(c, OP_TANH, t[5]);
    m[2] = rnn_binary(c, OP_EWMUL, a, b);
    a = rnn_unary(c, OP_SIGMOID, t[6]);
    b = rnn_unary(c, OP_RELU, t[7]);
    m[3] = rnn_binary(c, OP_EWMUL, a, b);
    a = rnn_unary(c, OP_SIGMOID, m[1]);
    b = rnn_unary(c, OP_TANH, m[2]);
    m[4] = rnn_binary(c, OP_EWADD, a, b);
    a = rnn_unary(c, OP_TANH, m[0]);
    b = rnn_unary(c, OP_TANH, m[3]);
    m[5] = rnn_binary(c, OP_EWMUL, a, b);
    a = rnn_unary(c, OP_TANH, m[4]);
    b = rnn_unary(c, OP_TANH, m[5]);
    m[6] = rnn_binary(c, OP_EWMUL, a, b);
    return rnn_unary(c, OP_TANH, m[6]);
}

graph *zoo_nasrnn(int32_t batch) {
    char nn[ZOO_NAME_LEN];
    graph *g = graph_new("nasrnn");
    if (!g)
        return NULL;
    rnn_ctx c = {.g = g};
    const int64_t x_dims[2] = {batch, NASRNN_HIDDEN}; /* (N,512) */
    int32_t xs[NASRNN_LENGTH];
    for (int32_t s = 0; s < NASRNN_LENGTH; s++)
        xs[s] = graph_input(g, zoo_fmt(nn, "x%d", (int)s), 2, x_dims);
    const int64_t w_dims[2] = {NASRNN_HIDDEN, NASRNN_HIDDEN}; /* (512,512): (k,n) */
    for (int32_t i = 0; i < 8; i++) {
        c.wx[i] = graph_weight_he(g, zoo_fmt(nn, "w_x%d", (int)i), 2, w_dims);
        c.wh[i] = graph_weight_he(g, zoo_fmt(nn, "w_h%d", (int)i), 2, w_dims);
    }
    int32_t h = graph_weight_he(g, "h0", 2, x_dims); /* (N,512) */
    for (c.step = 0; c.step < NASRNN_LENGTH; c.step++)
        h = rnn_step(&c, h, xs[c.step]);
    if (h >= 0)
        graph_mark_output(g, h);
    return g;
}
