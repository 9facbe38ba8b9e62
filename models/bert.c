/* bert.c: the BERT-base encoder: 12 layers, hidden 768, 12 heads of 64, FFN 3072, sequence 128.
 *
 * Input: the embedded sequence x (N*128, 768) (token + position + segment embeddings and their
 * layernorm are outside, as in TASO's example). Each layer, post-norm as in BERT:
 *   q, k, v = x Wq + bq, x Wk + bk, x Wv + bv                      (N*128,768) each
 *   q, v -> reshape (N,128,12,64) -> transpose (0,2,1,3)           (N,12,128,64)
 *   k    -> reshape (N,128,12,64) -> transpose (0,2,3,1)           (N,12,64,128)
 *   p = softmax(smul(q k, 1/sqrt(64)), axis 3)                     (N,12,128,128)
 *   c = p v -> transpose (0,2,1,3) -> reshape (N*128,768)
 *   x = layernorm(x + c Wo + bo);  x = layernorm(x + gelu(x W1 + b1) W2 + b2)   (eps 1e-12)
 * No attention mask (every position attends to every position); dropout is the identity.
 * Output: the last layer's hidden states (N*128, 768).
 * TASO's examples/bert.py is a smaller sketch (sequence 64, hidden 1024, 16 heads, 8 layers, no
 * biases, softmax, scaling, layernorm, residual or FFN, K not transposed, and its output projection
 * reads the layer input); this keeps the real BERT-base computation instead.
 */
#include <math.h>
#include <stdint.h>

#include "zoo_impl.h"

#define BERT_LAYERS 12
#define BERT_HIDDEN 768
#define BERT_HEADS 12
#define BERT_HEAD_DIM 64
#define BERT_FFN 3072
#define BERT_SEQ 128
#define BERT_LN_EPS 1e-12f

static int32_t bert_reshape(graph *g, const char *name, int32_t x, int32_t rank, const int64_t *dims) {
    ops_params p;
    ops_params_default(OP_RESHAPE, &p);
    p.n_list = rank;
    for (int32_t i = 0; i < rank; i++)
        p.list[i] = dims[i];
    return zoo_node(g, name, OP_RESHAPE, &p, 1, &x);
}

static int32_t bert_transpose(graph *g, const char *name, int32_t x, const int64_t perm[4]) {
    ops_params p;
    ops_params_default(OP_TRANSPOSE, &p);
    p.n_list = 4;
    for (int32_t i = 0; i < 4; i++)
        p.list[i] = perm[i];
    return zoo_node(g, name, OP_TRANSPOSE, &p, 1, &x);
}

/* (N*128,768) -> (N,128,12,64) -> permuted by perm. */
static int32_t bert_heads(graph *g, const char *pre, const char *what, int32_t x, int32_t batch,
                          const int64_t perm[4]) {
    char nn[ZOO_NAME_LEN];
    const int64_t split[4] = {batch, BERT_SEQ, BERT_HEADS, BERT_HEAD_DIM};
    int32_t t = bert_reshape(g, zoo_fmt(nn, "%s.%s.split_heads", pre, what), x, 4, split);
    return bert_transpose(g, zoo_fmt(nn, "%s.%s.transpose", pre, what), t, perm);
}

static int32_t bert_layernorm(graph *g, const char *name, int32_t x) {
    char wn[ZOO_NAME_LEN];
    const int64_t d[1] = {BERT_HIDDEN}; /* (768) */
    int32_t in[3] = {x, -1, -1};
    in[1] = graph_weight_const(g, zoo_fmt(wn, "%s.gamma", name), 1, d, 1.0f);
    in[2] = graph_weight_const(g, zoo_fmt(wn, "%s.beta", name), 1, d, 0.0f);
    ops_params p;
    ops_params_default(OP_LAYERNORM, &p);
    p.v[PM_AXIS] = 1;
    p.v[PM_EPS] = ops_f2p(BERT_LN_EPS);
    return zoo_node(g, name, OP_LAYERNORM, &p, 3, in);
}

static int32_t bert_layer(graph *g, int32_t l, int32_t x, int32_t batch) {
    static const int64_t to_heads[4] = {0, 2, 1, 3};   /* (N,128,12,64) -> (N,12,128,64) */
    static const int64_t to_heads_t[4] = {0, 2, 3, 1}; /* (N,128,12,64) -> (N,12,64,128) */
    char pre[ZOO_NAME_LEN], nn[ZOO_NAME_LEN];
    zoo_fmt(pre, "layer%d", (int)l);
    ops_params p;

    int32_t q = zoo_linear(g, zoo_fmt(nn, "%s.query", pre), x, BERT_HIDDEN, 1, OPS_ACT_NONE); /* (N*128,768) */
    int32_t k = zoo_linear(g, zoo_fmt(nn, "%s.key", pre), x, BERT_HIDDEN, 1, OPS_ACT_NONE);
    int32_t v = zoo_linear(g, zoo_fmt(nn, "%s.value", pre), x, BERT_HIDDEN, 1, OPS_ACT_NONE);
    q = bert_heads(g, pre, "query", q, batch, to_heads);   /* (N,12,128,64) */
    k = bert_heads(g, pre, "key", k, batch, to_heads_t);   /* (N,12,64,128) */
    v = bert_heads(g, pre, "value", v, batch, to_heads);   /* (N,12,128,64) */

    ops_params_default(OP_MATMUL, &p);
    const int32_t qk[2] = {q, k};
    int32_t s = zoo_node(g, zoo_fmt(nn, "%s.scores", pre), OP_MATMUL, &p, 2, qk); /* (N,12,128,128) */
    const int64_t one[1] = {1};
    int32_t scale[2] = {s, graph_weight_const(g, zoo_fmt(nn, "%s.scale", pre), 1, one,
                                              (float)(1.0 / sqrt((double)BERT_HEAD_DIM)))};
    ops_params_default(OP_SMUL, &p);
    s = zoo_node(g, zoo_fmt(nn, "%s.scaled", pre), OP_SMUL, &p, 2, scale);
    ops_params_default(OP_SOFTMAX, &p);
    p.v[PM_AXIS] = 3;
    s = zoo_node(g, zoo_fmt(nn, "%s.softmax", pre), OP_SOFTMAX, &p, 1, &s);

    ops_params_default(OP_MATMUL, &p);
    const int32_t pv[2] = {s, v};
    int32_t c = zoo_node(g, zoo_fmt(nn, "%s.context", pre), OP_MATMUL, &p, 2, pv); /* (N,12,128,64) */
    c = bert_transpose(g, zoo_fmt(nn, "%s.context.transpose", pre), c, to_heads); /* (N,128,12,64) */
    const int64_t merged[2] = {(int64_t)batch * BERT_SEQ, BERT_HIDDEN};
    c = bert_reshape(g, zoo_fmt(nn, "%s.context.merge_heads", pre), c, 2, merged);  /* (N*128,768) */
    c = zoo_linear(g, zoo_fmt(nn, "%s.attention_output", pre), c, BERT_HIDDEN, 1, OPS_ACT_NONE);
    x = graph_ewadd(g, x, c);
    x = bert_layernorm(g, zoo_fmt(nn, "%s.attention_norm", pre), x);

    int32_t f = zoo_linear(g, zoo_fmt(nn, "%s.intermediate", pre), x, BERT_FFN, 1, OPS_ACT_NONE); /* (N*128,3072) */
    f = zoo_act(g, zoo_fmt(nn, "%s.gelu", pre), OP_GELU, f);
    f = zoo_linear(g, zoo_fmt(nn, "%s.output", pre), f, BERT_HIDDEN, 1, OPS_ACT_NONE);          /* (N*128,768) */
    x = graph_ewadd(g, x, f);
    return bert_layernorm(g, zoo_fmt(nn, "%s.output_norm", pre), x);
}

graph *zoo_bert(int32_t batch) {
    graph *g = graph_new("bert");
    if (!g)
        return NULL;
    const int64_t in_dims[2] = {(int64_t)batch * BERT_SEQ, BERT_HIDDEN}; /* (N*128,768) */
    int32_t x = graph_input(g, "input", 2, in_dims);
    for (int32_t l = 0; l < BERT_LAYERS; l++)
        x = bert_layer(g, l, x, batch);
    if (x >= 0)
        graph_mark_output(g, x);
    return g;
}
