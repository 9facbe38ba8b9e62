/* rt_presplit.c: the GPU runtime's 3xTF32 weights split once (issue 17). At --precision 3xtf32 on
 * a device with the wgmma path, every matmul operand and convolution kernel that keeps its value
 * for the context's life (a weight, a folded weight-only value, an alias of one) and whose product
 * the wgmma rule would take is split at setup into its TF32 hi and lo parts (mm_3xtf32_presplit,
 * matmul.h), kept in one device allocation with the context, and handed to the node's products
 * (mm_3xtf32_presplit_node_set around the node call): they split only their activation operand.
 * Costs twice the split operands' bytes of device memory (counted in rt_info.weight_bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "rt_impl.h"

/* const[t] = 1 for tensors that keep their value for the context's life. */
static uint8_t *rt_ps_consts(const rt_ctx *c) {
    const graph *g = c->g;
    uint8_t *k = calloc((size_t)g->n_tensors + 1, 1);
    if (!k)
        return NULL;
    for (int32_t t = 0; t < g->n_tensors; t++)
        k[t] = g->tensors[t].kind == GRAPH_T_WEIGHT && c->tclass[t] == RT_T_PERSIST;
    for (int32_t f = 0; f < c->n_fold; f++) {
        const graph_node *nd = &g->nodes[c->fold[f].id];
        for (int32_t o = 0; o < nd->n_out; o++)
            k[nd->out[o]] = c->tclass[nd->out[o]] == RT_T_PERSIST;
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (c->tclass[t] == RT_T_ALIAS)
            k[t] = k[c->alias_of[t]];
    return k;
}

static int64_t rt_ps_batch(const ops_shape *s) {
    int64_t n = 1;
    for (int32_t i = 0; i + 2 < s->rank; i++)
        n *= s->dims[i];
    return n;
}

/* The epilogue of matmul node nd (bias input, fused activation) on p: the tables' 3xtf32 decisions
 * are keyed by it, so the question asks about the product as it runs. */
static void rt_ps_epilogue(const graph_node *nd, mm_problem *p) {
    const int act = oc_mm_act((ops_act)nd->p.v[PM_ACT]);
    p->has_bias = nd->n_in > 2;
    p->act = act < 0 ? MM_ACT_NONE : (mm_act)act;
}

/* Declared in rt_impl.h. Asks about the products the node's kernel runs (ops_matmul.c). */
int32_t rt_ps_matmul(const graph_node *nd, const ops_shape *as, const ops_shape *bs, const ops_shape *os,
                     int a_const, int b_const, rt_ps_want *w) {
    if (!mm_3xtf32_wgmma_available() || as->rank < 2 || bs->rank < 2)
        return 0;
    const int64_t m = as->dims[as->rank - 2], k = as->dims[as->rank - 1], nn = bs->dims[bs->rank - 1];
    const int64_t ba = rt_ps_batch(as), bb = rt_ps_batch(bs), bo = rt_ps_batch(os);
    if (m < 1 || k < 1 || nn < 1)
        return 0;
    int32_t n = 0;
    mm_problem p;
    if (b_const) {
        mm_problem_init(&p, bb == 1 ? m * ba : m, nn, k, bb == 1 ? 1 : bo); /* B shared: one tall product */
        p.stride_b = bb == 1 ? 0 : k * nn;
        rt_ps_epilogue(nd, &p);
        if (mm_3xtf32_presplit_wanted(&p, MM_OPERAND_B))
            w[n++] = (rt_ps_want){1, MM_OPERAND_B, nn, k, bb, k * nn};
    }
    if (a_const) {
        mm_problem_init(&p, m, nn, k, bo);
        p.stride_a = ba == 1 ? 0 : m * k;
        rt_ps_epilogue(nd, &p);
        if (mm_3xtf32_presplit_wanted(&p, MM_OPERAND_A))
            w[n++] = (rt_ps_want){0, MM_OPERAND_A, m, k, ba, m * k};
    }
    return n;
}

/* The operands of node rn worth splitting once (at most 2, into w); their count. The problem asked
 * about is the one the node's kernel runs (ops_matmul.c, ops_conv.cu's GEMM path). */
static int32_t rt_ps_node(const rt_ctx *c, const rt_node *rn, const uint8_t *isconst, rt_ps_want *w) {
    const graph_node *nd = &c->g->nodes[rn->id];
    if (nd->op == OP_MATMUL && rn->sig.n_in >= 2)
        return rt_ps_matmul(nd, &rn->in_sh[0], &rn->in_sh[1], &rn->out_sh[0], isconst[nd->in[0]],
                            isconst[nd->in[1]], w);
    int32_t n = 0;
    mm_problem p;
    if (nd->op == OP_CONV2D && rn->sig.n_in >= 2 && isconst[nd->in[1]]) {
        const ops_shape *ws = &rn->in_sh[1], *os = &rn->out_sh[0];
        const int64_t g = nd->p.v[PM_GROUPS] > 0 ? nd->p.v[PM_GROUPS] : 1;
        const int64_t fg = ws->dims[0] / g, k = ws->dims[1] * ws->dims[2] * ws->dims[3];
        const int64_t ohw = os->dims[2] * os->dims[3];
        if (fg < 1 || k < 1 || ohw < 1)
            return 0;
        mm_problem_init(&p, fg, ohw, k, g == 1 ? os->dims[0] : g); /* ops_conv.cu's GEMM path */
        p.stride_a = g == 1 ? 0 : fg * k;
        if (mm_3xtf32_presplit_wanted(&p, MM_OPERAND_A))
            w[n++] = (rt_ps_want){1, MM_OPERAND_A, fg, k, g, fg * k};
    }
    return n;
}

/* Splits the constant operands of the running nodes (3xtf32 only), after folding. */
int rt_presplit_setup(rt_ctx *c, char *err, size_t errlen) {
    if (c->opts.precision != RT_PRECISION_3XTF32 || !mm_3xtf32_wgmma_available() || c->n_run == 0)
        return 0;
    uint8_t *isconst = rt_ps_consts(c);
    rt_ps_want *want = calloc(2 * (size_t)c->n_run, sizeof *want);
    int32_t *node_n = calloc((size_t)c->n_run, sizeof *node_n);
    int rc = -1;
    if (!isconst || !want || !node_n) {
        base_fail(err, errlen, "out of memory planning the 3xtf32 split");
        goto done;
    }
    size_t floats = 0;
    int32_t total = 0;
    for (int32_t r = 0; r < c->n_run; r++) {
        node_n[r] = rt_ps_node(c, &c->run[r], isconst, &want[total]);
        for (int32_t i = 0; i < node_n[r]; i++) /* each part 64-float (256-byte) aligned */
            floats += (mm_3xtf32_presplit_floats(want[total + i].rows, want[total + i].k, want[total + i].items) + 63) /
                      64 * 64;
        total += node_n[r];
    }
    if (total == 0) {
        rc = 0;
        goto done;
    }
    c->ps = calloc((size_t)total, sizeof *c->ps);
    if (!c->ps) {
        base_fail(err, errlen, "out of memory planning the 3xtf32 split");
        goto done;
    }
    cudaError_t e = cudaMalloc((void **)&c->ps_dev, floats * sizeof(float));
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        c->ps_dev = NULL;
        base_fail(err, errlen, "cannot allocate %.1f MiB of device memory for the 3xtf32 split weights: %s",
                  (double)floats * 4.0 / 1048576.0, cudaGetErrorString(e));
        goto done;
    }
    float *buf = c->ps_dev;
    for (int32_t r = 0, q = 0; r < c->n_run; r++) {
        c->run[r].ps = q;
        c->run[r].n_ps = node_n[r];
        for (int32_t i = 0; i < node_n[r]; i++, q++) {
            const rt_ps_want *w = &want[q];
            char msg[256];
            if (mm_3xtf32_presplit(&c->ps[q], w->side, c->run[r].in[w->input], w->rows, w->k, w->items, w->stride,
                                   buf, c->stream, msg, sizeof msg) < 0) {
                base_fail(err, errlen, "node '%s': %s", c->g->nodes[c->run[r].id].name, msg);
                goto done;
            }
            buf += (mm_3xtf32_presplit_floats(w->rows, w->k, w->items) + 63) / 64 * 64;
        }
    }
    c->n_ps = total;
    c->ps_bytes = (int64_t)(floats * sizeof(float));
    c->persist_bytes += c->ps_bytes;
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    if (c->opts.verbose)
        fprintf(stderr, "tasc: 3xtf32: %d weight operand%s split once at setup (%.1f MiB of device memory)\n",
                (int)total, total == 1 ? "" : "s", (double)c->ps_bytes / 1048576.0);
    rc = 0;
done:
    free(isconst);
    free(want);
    free(node_n);
    return rc;
}

void rt_presplit_node(rt_ctx *c, const rt_node *rn) {
    mm_3xtf32_presplit_node_set(rn && rn->n_ps > 0 ? &c->ps[rn->ps] : NULL, rn ? rn->n_ps : 0);
}

void rt_presplit_free(rt_ctx *c) {
    if (c->ps_dev)
        CUDA_CHECK(cudaFree(c->ps_dev));
    c->ps_dev = NULL;
    free(c->ps);
    c->ps = NULL;
    c->n_ps = 0;
}
