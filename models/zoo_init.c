/* zoo_init.c: residual branches of the zoo's models scaled so that activations stay of order one.
 * He-initialised kernels keep each branch's variance equal to its input's, so x + f(x) doubles the
 * variance at every residual block (ResNet-50's output std would be about 1.3e3, NASNet-A's 1.7e5).
 * As the importer does for --random-weights (graph/onnx/onnx_init.c) and GPT-2 for its
 * projections, the kernel that ends each residual branch gets std / sqrt(R), R the number of
 * residual additions, and two kernel-ended values summed where neither is computed from the other
 * (a projection shortcut, a NASNet pair of branches) get std / sqrt(2) each. Only RANDOM weights
 * change; the graph's structure, and so every cost-model figure, stays the same.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "base.h"
#include "zoo_impl.h"

#define ZOO_BRANCH_DEPTH 8   /* per-element nodes followed back from an addition to a kernel */
#define ZOO_BRANCH_VISIT 512 /* nodes searched back from a branch for the addition's other input */

static int zoo_is_weight(const graph *g, int32_t t) { return g->tensors[t].kind == GRAPH_T_WEIGHT; }

/* The RANDOM kernel (weight tensor id) of the conv2d / matmul computing t, looking back through
 * per-element nodes, or -1. */
static int32_t zoo_branch_kernel(const graph *g, int32_t t) {
    for (int depth = 0; depth < ZOO_BRANCH_DEPTH; depth++) {
        int32_t p = g->tensors[t].producer;
        if (p < 0)
            return -1;
        const graph_node *n = &g->nodes[p];
        switch (n->op) {
        case OP_CONV2D:
        case OP_MATMUL: {
            int32_t w = n->in[1];
            return zoo_is_weight(g, w) && g->tensors[w].init.kind == GRAPH_INIT_RANDOM ? w : -1;
        }
        case OP_BATCHNORM:
        case OP_RELU:
        case OP_RESHAPE:
        case OP_TRANSPOSE:
        case OP_SMUL:
            t = n->in[0];
            break;
        case OP_EWADD:
        case OP_EWMUL:
            if (zoo_is_weight(g, n->in[1]))
                t = n->in[0];
            else if (zoo_is_weight(g, n->in[0]))
                t = n->in[1];
            else
                return -1;
            break;
        default:
            return -1;
        }
    }
    return -1;
}

/* 1 if computing tensor from reads tensor target (breadth first over at most ZOO_BRANCH_VISIT nodes). */
static int zoo_reads(const graph *g, int32_t from, int32_t target) {
    int32_t queue[ZOO_BRANCH_VISIT], head = 0, tail = 0;
    if (g->tensors[from].producer >= 0)
        queue[tail++] = g->tensors[from].producer;
    while (head < tail) {
        const graph_node *n = &g->nodes[queue[head++]];
        for (int32_t i = 0; i < n->n_in; i++) {
            if (n->in[i] == target)
                return 1;
            int32_t p = g->tensors[n->in[i]].producer;
            int seen = p < 0;
            for (int32_t q = 0; q < tail && !seen; q++)
                seen = queue[q] == p;
            if (!seen && tail < ZOO_BRANCH_VISIT)
                queue[tail++] = p;
        }
    }
    return 0;
}

void zoo_balance_branches(graph *g) {
    /* kind[t]: 0 unchanged, 1 a residual branch's last kernel, 2 one of two summed kernels */
    uint8_t *kind = base_xcalloc((size_t)g->n_tensors + 1, 1);
    int32_t n_res = 0;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const graph_node *a = &g->nodes[k];
        if (a->op != OP_EWADD || zoo_is_weight(g, a->in[0]) || zoo_is_weight(g, a->in[1]))
            continue;
        int32_t kv[2] = {zoo_branch_kernel(g, a->in[0]), zoo_branch_kernel(g, a->in[1])};
        int reads[2] = {kv[0] >= 0 && zoo_reads(g, a->in[0], a->in[1]), kv[1] >= 0 && zoo_reads(g, a->in[1], a->in[0])};
        if (reads[0] || reads[1]) {
            int32_t w = kv[reads[0] ? 0 : 1];
            n_res += kind[w] != 1;
            kind[w] = 1;
        } else if (kv[0] >= 0 && kv[1] >= 0) {
            for (int s = 0; s < 2; s++)
                if (!kind[kv[s]])
                    kind[kv[s]] = 2;
        }
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (kind[t])
            g->tensors[t].init.std *= (float)(kind[t] == 1 ? 1.0 / sqrt((double)n_res) : sqrt(0.5));
    free(kind);
}
