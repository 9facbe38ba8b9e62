/* rt_view.c: concatenations that move nothing (host code, built without CUDA too, for
 * tests/test_plan.c). When every axis before a concat's axis has size 1 (batch 1, a channel
 * concat: Inception's and SqueezeNet's branches, NasNet's merged convolutions), its inputs are
 * consecutive runs of its output's bytes; each input's producer can then write its slice of the
 * output directly and the concat launches nothing. rt.c plans it: the inputs become aliases of
 * the concat's output at their offsets, and that buffer lives from its first producer on.
 */
#include "rt.h"

/* 1 if every axis of s before axis has size 1 */
static int rt_view_leading_ones(const ops_shape *s, int64_t axis) {
    for (int64_t i = 0; i < axis; i++)
        if (s->dims[i] != 1)
            return 0;
    return 1;
}

/* 1 if input i of concat nd can be written in place: a tensor nothing else has placed (freet),
 * made by a running single-output node that is not itself a view concat nor a split, read only
 * once by this concat, at an offset of whole 16-byte words. */
static int rt_view_input_ok(const graph *g, const graph_node *nd, int32_t i, int64_t off, const uint8_t *runs,
                            const uint8_t *freet, const int32_t *vof, const uint8_t *cview) {
    const int32_t t = nd->in[i], p = g->tensors[t].producer;
    if (!freet[t] || vof[t] >= 0 || p < 0 || !runs[p] || cview[p] || g->nodes[p].n_out != 1 ||
        g->nodes[p].op == OP_SPLIT || off % RT_VIEW_ALIGN != 0)
        return 0;
    for (int32_t j = 0; j < i; j++)
        if (nd->in[j] == t)
            return 0;
    return 1;
}

int32_t rt_concat_views(const graph *g, const int32_t *order, const uint8_t *runs, const uint8_t *freet,
                        int32_t *vof, int64_t *voff, uint8_t *cview) {
    int32_t n = 0;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const int32_t id = order[k];
        const graph_node *nd = &g->nodes[id];
        if (nd->op != OP_CONCAT || !runs[id] || nd->n_out != 1 || !freet[nd->out[0]] ||
            !rt_view_leading_ones(&g->tensors[nd->out[0]].shape, nd->p.v[PM_AXIS]))
            continue;
        int64_t off = 0;
        int ok = 1;
        for (int32_t i = 0; i < nd->n_in && ok; i++) {
            ok = rt_view_input_ok(g, nd, i, off, runs, freet, vof, cview);
            off += ops_shape_numel(&g->tensors[nd->in[i]].shape);
        }
        if (!ok)
            continue;
        off = 0;
        for (int32_t i = 0; i < nd->n_in; i++) {
            vof[nd->in[i]] = nd->out[0];
            voff[nd->in[i]] = off;
            off += ops_shape_numel(&g->tensors[nd->in[i]].shape);
        }
        cview[id] = 1;
        n++;
    }
    return n;
}
