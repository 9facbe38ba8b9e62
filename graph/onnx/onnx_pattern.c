/* onnx_pattern.c: activations that exporters write as small subgraphs, recognised after import
 * and replaced by the op-table op, so that they run as one kernel and fuse into the conv2d or
 * matmul before them (optimizer fuse-act):
 *   SiLU   Mul(x, Sigmoid(x))                                      -> silu (torchvision's SiLU)
 *   GELU   Mul(Mul(x, 0.5), Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), 0.044715)), sqrt(2/pi))), 1))
 *                                                                  -> gelu_tanh (transformers'
 *          NewGELUActivation, GPT-2), every Add and Mul in either operand order.
 *   GELU   Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)              -> gelu (torch.nn.GELU as
 *          torchvision and transformers export it), also Mul(x, Mul(E, 0.5)), Mul(Mul(x, 0.5), E)
 *          and Erf(Mul(x, 1/sqrt 2)); every Add and Mul in either operand order.
 * The pass runs on the imported graph: the last node of a pattern becomes the op, reading x; the
 * nodes before it drop out at graph_compact when nothing else reads them. Such an op that reads a
 * reshape of a conv2d's or matmul's output then moves before the reshape (pat_act_before_reshape). Every value inside the
 * GELU patterns must be read by the pattern only (else the work would be done twice), and the
 * constants must be one-element weights of the stated values (float32 of them, to 1e-6).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

typedef struct {
    graph *g;
    int32_t *readers; /* per tensor: reading node inputs, +1 for a graph output */
} ox_pat;

static void pat_count(ox_pat *p) {
    graph *g = p->g;
    memset(p->readers, 0, sizeof(int32_t) * (size_t)g->n_tensors);
    for (int32_t n = 0; n < g->n_nodes; n++)
        for (int32_t k = 0; k < g->nodes[n].n_in; k++)
            p->readers[g->nodes[n].in[k]]++;
    for (int32_t k = 0; k < g->n_outputs; k++)
        p->readers[g->outputs[k]]++;
}

/* 1 if t is a one-element weight holding want (to float32 rounding). */
static int pat_scalar(const ox_pat *p, int32_t t, double want) {
    const graph_tensor *ts = &p->g->tensors[t];
    if (ts->kind != GRAPH_T_WEIGHT || ops_shape_numel(&ts->shape) != 1)
        return 0;
    float v;
    char err[256];
    if (graph_weight_values(p->g, t, &v, err, sizeof err) < 0)
        return 0;
    return fabs((double)v - want) <= 1e-6 * fabs(want);
}

/* The node producing t when it is op, else -1; with single, also -1 unless the node is t's only
 * reader (and t no graph output). */
static int32_t pat_prod(const ox_pat *p, int32_t t, ops_type op, int single) {
    int32_t n = p->g->tensors[t].producer;
    if (n < 0 || p->g->nodes[n].op != op || (single && p->readers[t] != 1))
        return -1;
    return n;
}

/* For a binary node n: the operand beside a scalar weight of value want (either order), or -1. */
static int32_t pat_beside_scalar(const ox_pat *p, int32_t n, double want) {
    const graph_node *nd = &p->g->nodes[n];
    for (int32_t s = 0; s < 2 && nd->n_in == 2; s++)
        if (pat_scalar(p, nd->in[1 - s], want))
            return nd->in[s];
    return -1;
}

/* Node n becomes op over the single input x (parameters: the op's defaults). */
static void pat_replace(ox_pat *p, int32_t n, ops_type op, int32_t x) {
    graph_node *nd = &p->g->nodes[n];
    nd->op = op;
    ops_params_default(op, &nd->p);
    nd->n_in = 1;
    nd->in[0] = x;
}

/* 1 if n = Mul(x, Sigmoid(x)), x then in *x. */
static int pat_silu(const ox_pat *p, int32_t n, int32_t *x) {
    const graph_node *nd = &p->g->nodes[n];
    if (nd->op != OP_EWMUL || nd->n_in != 2)
        return 0;
    for (int32_t s = 0; s < 2; s++) {
        int32_t sg = pat_prod(p, nd->in[1 - s], OP_SIGMOID, 0);
        if (sg >= 0 && p->g->nodes[sg].in[0] == nd->in[s]) {
            *x = nd->in[s];
            return 1;
        }
    }
    return 0;
}

/* The x of x + Mul(Pow(x, 3), 0.044715), read through node a (an ewadd), or -1. */
static int32_t pat_gelu_inner(const ox_pat *p, int32_t a) {
    const graph_node *ad = &p->g->nodes[a];
    for (int32_t s = 0; s < 2 && ad->n_in == 2; s++) {
        int32_t x = ad->in[s], m = pat_prod(p, ad->in[1 - s], OP_EWMUL, 1);
        int32_t cube = m >= 0 ? pat_beside_scalar(p, m, 0.044715) : -1;
        int32_t pw = cube >= 0 ? pat_prod(p, cube, OP_POW, 1) : -1;
        if (pw >= 0 && p->g->nodes[pw].in[0] == x && pat_scalar(p, p->g->nodes[pw].in[1], 3.0))
            return x;
    }
    return -1;
}

/* The x of 1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3)), read through tensor e, or -1. */
static int32_t pat_gelu_tail(const ox_pat *p, int32_t e) {
    int32_t a1 = pat_prod(p, e, OP_EWADD, 1);
    int32_t th = a1 >= 0 ? pat_beside_scalar(p, a1, 1.0) : -1;
    int32_t tn = th >= 0 ? pat_prod(p, th, OP_TANH, 1) : -1;
    int32_t sc = tn >= 0 ? pat_prod(p, p->g->nodes[tn].in[0], OP_EWMUL, 1) : -1;
    int32_t in = sc >= 0 ? pat_beside_scalar(p, sc, 0.79788456080286535588) : -1;
    int32_t ad = in >= 0 ? pat_prod(p, in, OP_EWADD, 1) : -1;
    return ad >= 0 ? pat_gelu_inner(p, ad) : -1;
}

/* 1 if n = Mul(Mul(x, 0.5), 1 + Tanh(...)) (the GELU pattern above), x then in *x. */
static int pat_gelu_tanh(const ox_pat *p, int32_t n, int32_t *x) {
    const graph *g = p->g;
    const graph_node *nd = &g->nodes[n];
    if (nd->op != OP_EWMUL || nd->n_in != 2)
        return 0;
    for (int32_t s = 0; s < 2; s++) {
        int32_t h = pat_prod(p, nd->in[s], OP_EWMUL, 1);
        int32_t xh = h >= 0 ? pat_beside_scalar(p, h, 0.5) : -1;
        if (xh < 0 || pat_gelu_tail(p, nd->in[1 - s]) != xh)
            continue;
        if (!ops_shape_eq(&g->tensors[xh].shape, &g->tensors[nd->out[0]].shape))
            continue; /* a scalar of higher rank broadcast x to another shape */
        *x = xh;
        return 1;
    }
    return 0;
}

/* The x of Erf(Div(x, sqrt 2)) or Erf(Mul(x, 1/sqrt 2)) (either order of the Mul), read through
 * erf node e, or -1. Div's operands are ordered: Div(sqrt 2, x) is not this. */
static int32_t pat_erf_arg(const ox_pat *p, int32_t e) {
    int32_t u = p->g->nodes[e].in[0];
    int32_t d = pat_prod(p, u, OP_EWDIV, 1);
    if (d >= 0) {
        const graph_node *dd = &p->g->nodes[d];
        return pat_scalar(p, dd->in[1], 1.41421356237309504880) ? dd->in[0] : -1;
    }
    int32_t m = pat_prod(p, u, OP_EWMUL, 1);
    return m >= 0 ? pat_beside_scalar(p, m, 0.70710678118654752440) : -1;
}

/* The x of 1 + Erf(x / sqrt 2) (Add in either order), read through tensor t, or -1. */
static int32_t pat_erf_one(const ox_pat *p, int32_t t) {
    int32_t a = pat_prod(p, t, OP_EWADD, 1);
    int32_t et = a >= 0 ? pat_beside_scalar(p, a, 1.0) : -1;
    int32_t e = et >= 0 ? pat_prod(p, et, OP_ERF, 1) : -1;
    return e >= 0 ? pat_erf_arg(p, e) : -1;
}

/* The x of n = x * (1 + erf(x / sqrt 2)) * 0.5 in one of its association orders, or -1 (E below
 * is 1 + Erf(...), every Mul in either operand order):
 *   Mul(Mul(x, E), 0.5)   torch.nn.GELU / F.gelu, TorchScript exporter; transformers' GELUActivation
 *   Mul(x, Mul(E, 0.5))   the dynamo exporter
 *   Mul(Mul(x, 0.5), E) */
static int32_t pat_gelu_erf_x(const ox_pat *p, int32_t n) {
    const graph_node *nd = &p->g->nodes[n];
    int32_t m = pat_beside_scalar(p, n, 0.5), xe = m >= 0 ? pat_prod(p, m, OP_EWMUL, 1) : -1;
    for (int32_t s = 0; s < 2 && xe >= 0; s++) {
        int32_t x = p->g->nodes[xe].in[s];
        if (pat_erf_one(p, p->g->nodes[xe].in[1 - s]) == x)
            return x;
    }
    for (int32_t s = 0; s < 2; s++) {
        int32_t h = pat_prod(p, nd->in[s], OP_EWMUL, 1);
        int32_t v = h >= 0 ? pat_beside_scalar(p, h, 0.5) : -1, b = nd->in[1 - s];
        if (v < 0)
            continue;
        if (pat_erf_one(p, b) == v) /* Mul(Mul(x, 0.5), E): v is x */
            return v;
        if (pat_erf_one(p, v) == b) /* Mul(x, Mul(E, 0.5)): v is E, b is x */
            return b;
    }
    return -1;
}

/* 1 if n is the exact GELU pattern above over an x of n's shape, x then in *x. */
static int pat_gelu_erf(const ox_pat *p, int32_t n, int32_t *x) {
    const graph *g = p->g;
    const graph_node *nd = &g->nodes[n];
    if (nd->op != OP_EWMUL || nd->n_in != 2)
        return 0;
    int32_t v = pat_gelu_erf_x(p, n);
    if (v < 0 || !ops_shape_eq(&g->tensors[v].shape, &g->tensors[nd->out[0]].shape))
        return 0; /* a scalar of higher rank broadcast x to another shape */
    *x = v;
    return 1;
}

/* An activation that reads a reshape of a conv2d's or matmul's output (GPT-2: Gemm, Reshape to
 * (1, seq, n), then GELU) moves before the reshape, so that it meets the op whose epilogue can take
 * it: act(reshape(m)) = reshape(act(m)) for an elementwise act. Node n keeps its output (and
 * name) as the reshape; the act is a new node. Only where m and the reshape's output have no other
 * reader. */
static void pat_act_before_reshape(ox_pat *p, int32_t n) {
    graph *g = p->g;
    int32_t x = g->nodes[n].in[0], r = pat_prod(p, x, OP_RESHAPE, 1);
    if (r < 0)
        return;
    int32_t m = g->nodes[r].in[0], mp = g->tensors[m].producer;
    if (mp < 0 || p->readers[m] != 1 || !ops_param_desc_of(g->nodes[mp].op, PM_ACT) ||
        g->nodes[mp].p.v[PM_ACT] != OPS_ACT_NONE)
        return;
    ops_type op = g->nodes[n].op;
    int32_t t;
    if (graph_add(g, NULL, op, NULL, 1, &m, &t) != 1)
        return; /* not reached: the shape is m's; the graph's error would stop the import */
    graph_node *nd = &g->nodes[n];
    const ops_shape *ys = &g->tensors[nd->out[0]].shape;
    nd->op = OP_RESHAPE;
    ops_params_default(OP_RESHAPE, &nd->p);
    nd->p.n_list = ys->rank;
    for (int32_t d = 0; d < ys->rank; d++)
        nd->p.list[d] = ys->dims[d];
    nd->in[0] = t;
}

void ox_find_patterns(graph *g, int32_t *n_silu, int32_t *n_gelu_tanh) {
    ox_pat p = {g, base_xcalloc((size_t)g->n_tensors + 1, sizeof(int32_t))};
    int32_t ns = 0, ng = 0, x;
    pat_count(&p);
    for (int32_t n = 0; n < g->n_nodes; n++)
        if (pat_gelu_tanh(&p, n, &x)) {
            pat_replace(&p, n, OP_GELU_TANH, x);
            ng++;
        } else if (pat_gelu_erf(&p, n, &x)) {
            pat_replace(&p, n, OP_GELU, x);
        }
    pat_count(&p); /* the GELU patterns' inner nodes are dead now; a SiLU may read a sigmoid they read */
    for (int32_t n = 0; n < g->n_nodes; n++)
        if (pat_silu(&p, n, &x)) {
            pat_replace(&p, n, OP_SILU, x);
            ns++;
        }
    graph_compact(g); /* drops the patterns' inner nodes: the counts below see live readers only */
    p.readers = base_xrealloc(p.readers, sizeof(int32_t) * ((size_t)g->n_tensors + 1));
    pat_count(&p);
    for (int32_t n = 0, nn = g->n_nodes; n < nn; n++)
        if (g->nodes[n].op == OP_SILU || g->nodes[n].op == OP_GELU_TANH || g->nodes[n].op == OP_GELU)
            pat_act_before_reshape(&p, n);
    free(p.readers);
    if (n_silu)
        *n_silu = ns;
    if (n_gelu_tanh)
        *n_gelu_tanh = ng;
}
