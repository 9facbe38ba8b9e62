/* rt_view.c: nodes that launch nothing because their outputs are bytes of other tensors (host
 * code, built without CUDA too, for tests/test_plan.c). Which ops can be views, and where each
 * part starts, is the op table's (ops_desc.view: reshapes, splits into consecutive runs,
 * transposes moving nothing; ops_desc.view_in: concatenations that move nothing). When every axis
 * before a concat's axis has size 1 (batch 1, a channel concat: Inception's and SqueezeNet's
 * branches, NasNet's merged convolutions), its inputs are consecutive runs of its output's bytes;
 * each input's producer can then write its slice of the output directly and the concat launches
 * nothing: the inputs become aliases of the concat's output at their offsets, and that buffer
 * lives from its first producer on (rt.c). rt_view_plan is rt_classify's last step: it places the
 * outputs of every running and view node.
 */
#include <stdlib.h>

#include "base.h"
#include "rt.h"

/* Node nd as its op's view (ops_desc.view): 1 and off[k], where output k starts in input 0, or 0. */
static int rt_view_offsets(const graph *g, const graph_node *nd, int64_t *off) {
    const ops_view_fn view = ops_table[nd->op].view;
    const ops_shape *parts[OPS_MAX_OUTPUTS];
    if (!view)
        return 0;
    for (int32_t o = 0; o < nd->n_out; o++)
        parts[o] = &g->tensors[nd->out[o]].shape;
    return view(&nd->p, &g->tensors[nd->in[0]].shape, nd->n_out, parts, off);
}

int rt_node_is_view(const graph *g, const graph_node *nd, int no_scatter) {
    int64_t off[OPS_MAX_OUTPUTS];
    /* rt_opts.no_scatter, the A/B switch of the runtime's data movement, runs every transpose as a
     * kernel, views too: an option defined by the op it names (rt.h), not the op's capability */
    if (no_scatter && nd->op == OP_TRANSPOSE)
        return 0;
    return rt_view_offsets(g, nd, off);
}

/* 1 if input i of concat nd, at element off of its output, can be written in place: a tensor
 * nothing else has placed (freet), made by a running node of an op that always has one output
 * (the table's n_out: a split of one part keeps a buffer of its own), read only once by this
 * concat, at an offset of whole 16-byte words. */
static int rt_view_input_ok(const graph *g, const graph_node *nd, int32_t i, int64_t off, const uint8_t *ncls,
                            const uint8_t *freet, const int32_t *vof) {
    const int32_t t = nd->in[i], p = g->tensors[t].producer;
    if (!freet[t] || vof[t] >= 0 || p < 0 || ncls[p] != RT_N_RUN || g->nodes[p].n_out != 1 ||
        ops_table[g->nodes[p].op].n_out != 1 || off % RT_VIEW_ALIGN != 0)
        return 0;
    for (int32_t j = 0; j < i; j++)
        if (nd->in[j] == t)
            return 0;
    return 1;
}

/* Concat nd's inputs as views of its output (ops_desc.view_in): 1 and off[i] per input, or 0. */
static int rt_view_in_offsets(const graph *g, const graph_node *nd, int64_t *off) {
    const ops_view_fn view = ops_table[nd->op].view_in;
    const ops_shape *parts[OPS_MAX_INPUTS];
    if (!view || nd->n_out != 1)
        return 0;
    for (int32_t i = 0; i < nd->n_in; i++)
        parts[i] = &g->tensors[nd->in[i]].shape;
    return view(&nd->p, &g->tensors[nd->out[0]].shape, nd->n_in, parts, off);
}

int32_t rt_concat_views(const graph *g, const int32_t *order, uint8_t *ncls, const uint8_t *freet, int32_t *vof,
                        int64_t *voff) {
    int32_t n = 0;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const int32_t id = order[k];
        const graph_node *nd = &g->nodes[id];
        int64_t off[OPS_MAX_INPUTS];
        if (ncls[id] != RT_N_RUN || !rt_view_in_offsets(g, nd, off) || !freet[nd->out[0]])
            continue;
        int ok = 1;
        for (int32_t i = 0; i < nd->n_in && ok; i++)
            ok = rt_view_input_ok(g, nd, i, off[i], ncls, freet, vof);
        if (!ok)
            continue;
        for (int32_t i = 0; i < nd->n_in; i++) {
            vof[nd->in[i]] = nd->out[0];
            voff[nd->in[i]] = off[i];
        }
        ncls[id] = RT_N_CVIEW;
        n++;
    }
    return n;
}

/* The element of its root where tensor t starts (0 unless an alias). */
static int64_t rt_view_offset(const rt_classes *cl, int32_t t) {
    return cl->tclass[t] == RT_T_ALIAS ? cl->alias_off[t] : 0;
}

/* 1 if view node nd's outputs, off[k] on from its input's start, start on whole RT_VIEW_ALIGN
 * elements (the kernels' vector paths need 16 bytes; else the node runs its kernel). Its input is
 * placed already; every alias starts aligned, so only a split's later parts can fail. */
static int rt_view_aligned(const rt_classes *cl, const graph_node *nd, const int64_t *off) {
    const int64_t base = rt_view_offset(cl, nd->in[0]);
    for (int32_t o = 0; o < nd->n_out; o++)
        if ((base + off[o]) % RT_VIEW_ALIGN != 0)
            return 0;
    return 1;
}

/* View node nd's outputs: its input's bytes from off[k] on. */
static void rt_view_alias(rt_classes *cl, const graph_node *nd, const int64_t *off) {
    const int32_t in = nd->in[0], root = cl->tclass[in] == RT_T_ALIAS ? cl->alias_of[in] : in;
    const int64_t base = rt_view_offset(cl, in);
    for (int32_t o = 0; o < nd->n_out; o++) {
        cl->tclass[nd->out[o]] = RT_T_ALIAS;
        cl->alias_of[nd->out[o]] = root;
        cl->alias_off[nd->out[o]] = base + off[o];
    }
}

/* Places the outputs of the nodes that make them, in order (an alias's input is placed first): a
 * running node's own buffer or its slice of a concat view's (vof), a concat view's buffer, a
 * view's aliases. A split view whose parts would be misaligned runs instead. */
static void rt_view_place(rt_classes *cl, const int32_t *vof, const int64_t *voff) {
    const graph *g = cl->g;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const int32_t id = cl->order[k];
        const graph_node *nd = &g->nodes[id];
        int64_t off[OPS_MAX_OUTPUTS];
        if (cl->ncls[id] == RT_N_CVIEW) {
            cl->tclass[nd->out[0]] = RT_T_ARENA;
            cl->n_alias++;
        } else if (cl->ncls[id] == RT_N_VIEW && rt_view_offsets(g, nd, off) && rt_view_aligned(cl, nd, off)) {
            rt_view_alias(cl, nd, off);
            cl->n_alias++;
        } else if (cl->ncls[id] == RT_N_VIEW || cl->ncls[id] == RT_N_RUN) {
            cl->ncls[id] = RT_N_RUN;
            for (int32_t o = 0; o < nd->n_out; o++) {
                const int32_t t = nd->out[o];
                cl->tclass[t] = vof[t] >= 0 ? RT_T_ALIAS : RT_T_ARENA;
                if (vof[t] >= 0) {
                    cl->alias_of[t] = vof[t];
                    cl->alias_off[t] = voff[t];
                }
            }
        }
    }
}

int rt_view_plan(rt_classes *cl, char *err, size_t errlen) {
    const graph *g = cl->g;
    const int32_t nt = g->n_tensors;
    uint8_t *freet = calloc((size_t)nt + 1, 1);
    int32_t *vof = malloc(((size_t)nt + 1) * sizeof *vof);
    int64_t *voff = calloc((size_t)nt + 1, sizeof *voff);
    if (!freet || !vof || !voff) {
        free(freet), free(vof), free(voff);
        return base_fail(err, errlen, "out of memory planning the graph");
    }
    for (int32_t k = 0; k < g->n_nodes; k++) /* before the concats: a view makes no concat input */
        if (cl->ncls[k] == RT_N_RUN && rt_node_is_view(g, &g->nodes[k], cl->no_scatter))
            cl->ncls[k] = RT_N_VIEW;
    for (int32_t t = 0; t < nt; t++) {
        freet[t] = g->tensors[t].kind == GRAPH_T_INTER && cl->tclass[t] == RT_T_NONE && !cl->isconst[t];
        vof[t] = -1;
    }
    rt_concat_views(g, cl->order, cl->ncls, freet, vof, voff);
    rt_view_place(cl, vof, voff);
    free(freet), free(vof), free(voff);
    return 0;
}
