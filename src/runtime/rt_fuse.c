/* rt_fuse.c: the GPU runtime's producer fusions, the pattern side (host code, built without CUDA
 * too, for tests/test_plan.c): a softmax over its rows whose input is an smul by a constant
 * computes softmax(x * s) itself, and a layernorm over its rows whose input is an add of two
 * tensors of its shape computes layernorm(a + b) itself; the smul or add then launches nothing
 * (rt.c rt_plan_prefuse, the kernels in ops/cuda/ops_norm.cu through ops_cuda_env.fuse_scale and
 * fuse_in2). The product or sum is rounded to float in the kernel as the node would round it, so
 * the fused node's results are those of the pair.
 */
#include "rt.h"

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

int32_t rt_prefuse_find(const graph *g, int32_t id, const int32_t *nread, const uint8_t *isout,
                        const uint8_t *isconst, const uint8_t *skip) {
    const graph_node *nd = &g->nodes[id];
    if ((nd->op != OP_SOFTMAX && nd->op != OP_LAYERNORM) || nd->n_in < 1)
        return -1;
    const int32_t t = nd->in[0], pre = g->tensors[t].producer;
    const ops_shape *ts = &g->tensors[t].shape;
    if (pre < 0 || skip[pre] || isout[t] || isconst[t] || nread[t] != 1 || rt_fuse_inner(nd, ts) != 1)
        return -1;
    const graph_node *pn = &g->nodes[pre];
    if (pn->n_in != 2 || pn->n_out != 1 || !ops_shape_eq(&g->tensors[pn->in[0]].shape, ts))
        return -1;
    if (nd->op == OP_SOFTMAX && pn->op == OP_SMUL && isconst[pn->in[1]])
        return pre;
    if (nd->op == OP_LAYERNORM && pn->op == OP_EWADD && ops_shape_eq(&g->tensors[pn->in[1]].shape, ts))
        return pre;
    return -1;
}
