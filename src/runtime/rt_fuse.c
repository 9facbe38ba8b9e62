/* rt_fuse.c: the GPU runtime's fusions, the planning side (host code, built without CUDA too, for
 * tests/test_plan.c). Residual fusion: a running convolution without activation whose output only
 * an add reads (same shapes: no broadcast), the add's other operand made before the convolution
 * runs, takes the add, and the relu that alone reads the sum, into its epilogue (ops.h:
 * ops_cuda_env.fuse_add): one pass over the output where there were three. Producer fusions: a
 * softmax over its rows whose input is an smul by a constant computes softmax(x * s) itself, and
 * a layernorm over its rows whose input is an add of two tensors of its shape computes
 * layernorm(a + b) itself (the kernels in ops/cuda/ops_norm.cu through ops_cuda_env.fuse_scale and
 * fuse_in2); the product or sum is rounded to float in the kernel as the node would round it, so
 * the fused node's results are those of the pair. A fused node launches nothing (RT_N_FUSED).
 */
#include <stdio.h>
#include <stdlib.h>

#include "base.h"
#include "rt.h"

/* 1 for a node another node runs (a scatter store or a fusion): it can join no other fusion. */
static int rt_fuse_taken(const uint8_t *ncls, int32_t id) {
    return ncls[id] == RT_N_SCATTER || ncls[id] == RT_N_FUSED;
}

/* Elements per position after the normalised dims: 1 when the op works on contiguous rows. */
static int64_t rt_fuse_inner(const graph_node *nd, const ops_shape *x) {
    const int64_t end = nd->op == OP_SOFTMAX ? nd->p.v[PM_AXIS] + 1
                        : nd->p.v[PM_AXIS_END] ? nd->p.v[PM_AXIS_END]
                                               : x->rank;
    int64_t inner = 1;
    for (int32_t i = (int32_t)end; i < x->rank; i++)
        inner *= x->dims[i];
    return inner;
}

/* The consumers are named here, not in the op table: that softmax takes a scale and layernorm an
 * add before its rows is a property of their row kernels (ops/cuda/ops_norm.cu, through
 * ops_cuda_env.fuse_scale and fuse_in2), not of the ops; what the producer computes is the table's
 * (ops_desc.epi). */
int32_t rt_prefuse_find(const graph *g, int32_t id, const int32_t *nread, const uint8_t *isout,
                        const uint8_t *isconst, const uint8_t *ncls) {
    const graph_node *nd = &g->nodes[id];
    if ((nd->op != OP_SOFTMAX && nd->op != OP_LAYERNORM) || nd->n_in < 1)
        return -1;
    const int32_t t = nd->in[0], pre = g->tensors[t].producer;
    const ops_shape *ts = &g->tensors[t].shape;
    if (pre < 0 || rt_fuse_taken(ncls, pre) || isout[t] || isconst[t] || nread[t] != 1 || rt_fuse_inner(nd, ts) != 1)
        return -1;
    const graph_node *pn = &g->nodes[pre];
    if (pn->n_in != 2 || pn->n_out != 1 || !ops_shape_eq(&g->tensors[pn->in[0]].shape, ts))
        return -1;
    const ops_epi epi = ops_table[pn->op].epi;
    if (nd->op == OP_SOFTMAX && epi == OPS_EPI_SCALE && isconst[pn->in[1]])
        return pre;
    if (nd->op == OP_LAYERNORM && epi == OPS_EPI_ADD && ops_shape_eq(&g->tensors[pn->in[1]].shape, ts))
        return pre;
    return -1;
}

/* What the fusion patterns need to know of the graph beyond the classes. */
typedef struct {
    int32_t *pos;    /* per node: its position in the topological order */
    int32_t *nread;  /* per tensor: input slots of live nodes not run by another node reading it */
    int32_t *reader; /* per tensor: the last such node */
    uint8_t *isout;  /* per tensor: a graph output */
} rt_fuse_graph;

/* Running convolution id fused with the add reading its output, and the relu reading the sum: 1,
 * fuse_add[id] and fuse_act[id] set, the add (and relu) RT_N_FUSED and their outputs views of the
 * convolution's; 0 if the pattern is not there. The add and the relu are the op table's (an op
 * whose epi is OPS_EPI_ADD, one whose activation is relu); that the convolution's epilogue takes
 * an add and then relu alone is its kernel's (ops_cuda_env.fuse_add, conv2d only). */
static int rt_fuse_conv(rt_classes *cl, const rt_fuse_graph *fg, int32_t id) {
    const graph *g = cl->g;
    const int32_t t = g->nodes[id].out[0];
    if (fg->isout[t] || fg->nread[t] != 1)
        return 0;
    const int32_t ea = fg->reader[t];
    const graph_node *e = &g->nodes[ea];
    if (rt_fuse_taken(cl->ncls, ea) || ops_table[e->op].epi != OPS_EPI_ADD || e->n_in != 2 || e->in[0] == e->in[1])
        return 0;
    const int32_t u = e->in[0] == t ? e->in[1] : e->in[0], pu = g->tensors[u].producer;
    if (!ops_shape_eq(&g->tensors[u].shape, &g->tensors[t].shape) ||
        !ops_shape_eq(&g->tensors[e->out[0]].shape, &g->tensors[t].shape) || (pu >= 0 && fg->pos[pu] > fg->pos[id]))
        return 0; /* a broadcast, or the operand is made after the convolution */
    cl->fuse_add[id] = u;
    cl->fuse_act[id] = OPS_ACT_NONE;
    cl->ncls[ea] = RT_N_FUSED;
    int32_t last = e->out[0];
    const int32_t ra = fg->isout[last] || fg->nread[last] != 1 ? -1 : fg->reader[last];
    if (ra >= 0 && !rt_fuse_taken(cl->ncls, ra) && ops_act_of(g->nodes[ra].op, &g->nodes[ra].p) == OPS_ACT_RELU) {
        cl->fuse_act[id] = OPS_ACT_RELU;
        cl->ncls[ra] = RT_N_FUSED;
        cl->tclass[last] = RT_T_ALIAS; /* the sum itself is never made */
        cl->alias_of[last] = t;
        last = g->nodes[ra].out[0];
    }
    cl->tclass[last] = RT_T_ALIAS;
    cl->alias_of[last] = t;
    cl->n_fused += 1 + (cl->fuse_act[id] == OPS_ACT_RELU);
    if (cl->verbose)
        fprintf(stderr, "tasc: node '%s': add '%s'%s%s%s in its epilogue\n", g->nodes[id].name, e->name,
                cl->fuse_act[id] == OPS_ACT_RELU ? " and relu '" : "",
                cl->fuse_act[id] == OPS_ACT_RELU ? g->nodes[ra].name : "", cl->fuse_act[id] == OPS_ACT_RELU ? "'" : "");
    return 1;
}

/* Running node id computes its input's producer itself where rt_prefuse_find finds the pattern:
 * the producer becomes RT_N_FUSED (its output is never made), recorded in fuse_pre[id]. */
static void rt_fuse_producer(rt_classes *cl, const rt_fuse_graph *fg, int32_t id) {
    const graph *g = cl->g;
    const int32_t pre = rt_prefuse_find(g, id, fg->nread, fg->isout, cl->isconst, cl->ncls);
    if (pre < 0)
        return;
    cl->fuse_pre[id] = pre;
    cl->ncls[pre] = RT_N_FUSED;
    cl->n_fused++;
    if (cl->verbose)
        fprintf(stderr, "tasc: node '%s': computes its input, %s '%s', itself\n", g->nodes[id].name,
                ops_table[g->nodes[pre].op].name, g->nodes[pre].name);
}

/* The reads as they stand before any fusion: by live nodes that no scatter store runs. */
static void rt_fuse_graph_fill(const rt_classes *cl, rt_fuse_graph *fg) {
    const graph *g = cl->g;
    for (int32_t k = 0; k < g->n_nodes; k++)
        fg->pos[cl->order[k]] = k;
    for (int32_t id = 0; id < g->n_nodes; id++) {
        if (cl->ncls[id] == RT_N_DEAD || rt_fuse_taken(cl->ncls, id))
            continue;
        for (int32_t i = 0; i < g->nodes[id].n_in; i++) {
            fg->nread[g->nodes[id].in[i]]++;
            fg->reader[g->nodes[id].in[i]] = id;
        }
    }
    for (int32_t j = 0; j < g->n_outputs; j++)
        fg->isout[g->outputs[j]] = 1;
}

int rt_fuse_plan(rt_classes *cl, char *err, size_t errlen) {
    const graph *g = cl->g;
    const int32_t nn = g->n_nodes, nt = g->n_tensors;
    rt_fuse_graph fg = {.pos = malloc(((size_t)nn + 1) * sizeof *fg.pos),
                        .nread = calloc((size_t)nt + 1, sizeof *fg.nread),
                        .reader = malloc(((size_t)nt + 1) * sizeof *fg.reader),
                        .isout = calloc((size_t)nt + 1, 1)};
    int rc = 0;
    if (!fg.pos || !fg.nread || !fg.reader || !fg.isout) {
        rc = base_fail(err, errlen, "out of memory planning the graph");
    } else {
        rt_fuse_graph_fill(cl, &fg);
        for (int32_t k = 0; k < nn; k++) { /* in order: a producer is fused before its readers look */
            const int32_t id = cl->order[k];
            const graph_node *nd = &g->nodes[id];
            if (cl->ncls[id] != RT_N_RUN)
                continue;
            if (nd->op == OP_CONV2D && nd->n_out == 1 && nd->p.v[PM_ACT] == OPS_ACT_NONE) /* its kernel's epilogue */
                rt_fuse_conv(cl, &fg, id);
            else
                rt_fuse_producer(cl, &fg, id);
        }
    }
    free(fg.pos);
    free(fg.nread);
    free(fg.reader);
    free(fg.isout);
    return rc;
}
