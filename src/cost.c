/* cost.c: the cost-model interface (memoised node times, graph sums, weight-only flags) and the
 * analytic H100 model (cost.h).
 *
 * Memo keys are the op, its declared parameters (by the op table, so undeclared slots never
 * matter) and the input shapes, as an int64 array; output shapes follow from those. Entries are
 * owned by the model and freed with it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "cost.h"

#define COST_KEY_MAX (4 + OPS_MAX_OP_PARAMS + OPS_MAX_LIST + OPS_MAX_INPUTS * (1 + OPS_MAX_DIMS))

typedef struct cost_ent {
    int64_t *key;
    size_t key_bytes;
    double us;
    UT_hash_handle hh;
} cost_ent;

struct cost_model {
    char *name;
    cost_node_fn node_fn;
    void (*free_fn)(void *impl);
    void *impl;
    cost_ent *memo;       /* uthash head */
    int64_t computed, reused;
};

static void *cost_xalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("tasc: out of memory\n", stderr);
        abort();
    }
    return p;
}

cost_model *cost_model_new(const char *name, cost_node_fn node_fn, void (*free_fn)(void *impl), void *impl) {
    cost_model *m = cost_xalloc(sizeof *m);
    memset(m, 0, sizeof *m);
    size_t n = strlen(name) + 1;
    m->name = cost_xalloc(n);
    memcpy(m->name, name, n);
    m->node_fn = node_fn;
    m->free_fn = free_fn;
    m->impl = impl;
    return m;
}

void cost_model_free(cost_model *m) {
    if (!m)
        return;
    cost_ent *e, *tmp;
    HASH_ITER(hh, m->memo, e, tmp) {
        HASH_DEL(m->memo, e);
        free(e->key);
        free(e);
    }
    if (m->free_fn)
        m->free_fn(m->impl);
    free(m->name);
    free(m);
}

const char *cost_model_name(const cost_model *m) { return m->name; }

void cost_model_stats(const cost_model *m, int64_t *computed, int64_t *reused) {
    *computed = m->computed;
    *reused = m->reused;
}

static size_t cost_key(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int64_t *key) {
    size_t n = 0;
    const ops_desc *d = &ops_table[op];
    key[n++] = op;
    key[n++] = n_in;
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (k == PM_LIST) {
            key[n++] = p->n_list;
            for (int32_t j = 0; j < p->n_list && j < OPS_MAX_LIST; j++)
                key[n++] = p->list[j];
        } else {
            key[n++] = p->v[k];
        }
    }
    for (int32_t k = 0; k < n_in; k++) {
        key[n++] = in[k].rank;
        for (int32_t j = 0; j < in[k].rank; j++)
            key[n++] = in[k].dims[j];
    }
    return n * sizeof *key;
}

int cost_node(cost_model *m, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int32_t n_out,
              const ops_shape *out, double *us, char *err, size_t errlen) {
    int64_t key[COST_KEY_MAX];
    size_t kb = cost_key(op, p, n_in, in, key);
    cost_ent *e = NULL;
    HASH_FIND(hh, m->memo, key, kb, e);
    if (e) {
        m->reused++;
        *us = e->us;
        return 0;
    }
    char merr[256] = "";
    double v = 0.0;
    if (m->node_fn(m->impl, op, p, n_in, in, n_out, out, &v, merr, sizeof merr) < 0) {
        if (err && errlen)
            snprintf(err, errlen, "cost model '%s': %s: %s", m->name, ops_table[op].name, merr);
        return -1;
    }
    if (!(v >= 0.0) || !isfinite(v)) {
        if (err && errlen)
            snprintf(err, errlen, "cost model '%s': %s: time %g is not a finite non-negative number", m->name,
                     ops_table[op].name, v);
        return -1;
    }
    e = cost_xalloc(sizeof *e);
    e->key = cost_xalloc(kb);
    memcpy(e->key, key, kb);
    e->key_bytes = kb;
    e->us = v;
    HASH_ADD_KEYPTR(hh, m->memo, e->key, e->key_bytes, e);
    m->computed++;
    *us = v;
    return 0;
}

int cost_graph_node(cost_model *m, const graph *g, int32_t n, double *us, char *err, size_t errlen) {
    const graph_node *nd = &g->nodes[n];
    ops_shape in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < nd->n_in; k++)
        in[k] = g->tensors[nd->in[k]].shape;
    for (int32_t k = 0; k < nd->n_out; k++)
        out[k] = g->tensors[nd->out[k]].shape;
    return cost_node(m, nd->op, &nd->p, nd->n_in, in, nd->n_out, out, us, err, errlen);
}

/* Nodes in topological order into order (n_nodes), or -1 on a cycle. */
static int cost_order(const graph *g, int32_t *order, char *err, size_t errlen) {
    return graph_topo_order(g, order, err, errlen);
}

static void cost_wo_fill(const graph *g, const int32_t *order, uint8_t *wo) {
    for (int32_t t = 0; t < g->n_tensors; t++)
        wo[t] = g->tensors[t].kind == GRAPH_T_WEIGHT;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const graph_node *nd = &g->nodes[order[i]];
        uint8_t all = 1;
        for (int32_t k = 0; k < nd->n_in; k++)
            all &= wo[nd->in[k]];
        for (int32_t k = 0; k < nd->n_out; k++)
            wo[nd->out[k]] = all;
    }
}

void cost_weight_only(const graph *g, uint8_t *wo) {
    int32_t *order = cost_xalloc((size_t)g->n_nodes * sizeof *order);
    if (cost_order(g, order, NULL, 0) == 0)
        cost_wo_fill(g, order, wo);
    else
        memset(wo, 0, (size_t)g->n_tensors);
    free(order);
}

int cost_graph(cost_model *m, const graph *g, double *us, uint8_t *wo_out, char *err, size_t errlen) {
    int32_t *order = cost_xalloc((size_t)g->n_nodes * sizeof *order);
    uint8_t *wo = wo_out ? wo_out : cost_xalloc((size_t)g->n_tensors);
    uint8_t *live = calloc((size_t)g->n_nodes + 1, 1);
    int rc = -1;
    if (!live) {
        fputs("tasc: out of memory\n", stderr);
        abort();
    }
    if (cost_order(g, order, err, errlen) < 0)
        goto done;
    cost_wo_fill(g, order, wo);
    for (int32_t i = 0; i < g->n_outputs; i++) {
        int32_t p = g->tensors[g->outputs[i]].producer;
        if (p >= 0)
            live[p] = 1;
    }
    for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
        const graph_node *nd = &g->nodes[order[i]];
        if (!live[order[i]])
            continue;
        for (int32_t k = 0; k < nd->n_in; k++) {
            int32_t p = g->tensors[nd->in[k]].producer;
            if (p >= 0)
                live[p] = 1;
        }
    }
    double sum = 0.0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t n = order[i];
        const graph_node *nd = &g->nodes[n];
        if (!live[n] || (nd->n_out > 0 && wo[nd->out[0]]))
            continue;
        double t;
        if (cost_graph_node(m, g, n, &t, err, errlen) < 0)
            goto done;
        sum += t;
    }
    *us = sum;
    rc = 0;
done:
    if (!wo_out)
        free(wo);
    free(order);
    free(live);
    return rc;
}

/* --- the analytic model ---------------------------------------------------------------------- */

void cost_analytic_defaults(cost_analytic_config *c) {
    c->peak_flops = 51.0e12;
    c->bandwidth = 3.0e12;
    c->launch_us = 2.0;
    c->min_us = 1.0;
    c->sms = 132;
    c->tile = 64;
    c->ksplit_min = 128;
    c->block_elems = 1024;
}

static double ca_ceil_div(double a, double b) { return ceil(a / b); }

/* GEMM efficiency: tiles of the (M,N) output per batch item, split-K while it fills more SMs,
 * then the fraction of the waves' SM slots used. */
static double ca_gemm_eff(const cost_analytic_config *c, double batch, double M, double N, double K) {
    double tiles = batch * ca_ceil_div(M, c->tile) * ca_ceil_div(N, c->tile);
    double ksplit = 1.0;
    if (tiles < c->sms) {
        ksplit = fmin(ca_ceil_div(c->sms, tiles), ca_ceil_div(K, c->ksplit_min));
        if (ksplit < 1.0)
            ksplit = 1.0;
    }
    double blocks = tiles * ksplit;
    double waves = ca_ceil_div(blocks, c->sms);
    return blocks / (waves * c->sms);
}

static int ca_node(void *impl, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int32_t n_out,
                   const ops_shape *out, double *us, char *err, size_t errlen) {
    const cost_analytic_config *c = impl;
    if (op == OP_RESHAPE || n_in == 0) { /* an alias; constants are made once at setup */
        *us = 0.0;
        return 0;
    }
    double bytes = 0.0, largest = 0.0;
    for (int32_t k = 0; k < n_in; k++) {
        double n = (double)ops_shape_numel(&in[k]);
        bytes += 4.0 * n;
        largest = fmax(largest, n);
    }
    for (int32_t k = 0; k < n_out; k++) {
        double n = (double)ops_shape_numel(&out[k]);
        bytes += 4.0 * n;
        largest = fmax(largest, n);
    }
    ops_sig sig = {.op = op, .p = p, .n_in = n_in, .n_out = n_out, .in = in, .out = out};
    double flops = ops_table[op].flops(&sig);
    double eff;
    if (op == OP_MATMUL) {
        const ops_shape *o = &out[0], *a = &in[0];
        double M = (double)o->dims[o->rank - 2], N = (double)o->dims[o->rank - 1];
        double K = (double)a->dims[a->rank - 1];
        double batch = (double)ops_shape_numel(o) / (M * N);
        eff = ca_gemm_eff(c, batch, M, N, K);
    } else if (op == OP_CONV2D) {
        const ops_shape *o = &out[0], *w = &in[1]; /* (N,F,OH,OW), (F,C/g,KH,KW) */
        double groups = (double)p->v[PM_GROUPS];
        double M = (double)(o->dims[0] * o->dims[2] * o->dims[3]), N = (double)o->dims[1] / groups;
        double K = (double)(w->dims[1] * w->dims[2] * w->dims[3]);
        eff = ca_gemm_eff(c, groups, M, N, K);
    } else {
        double blocks = ca_ceil_div(largest, c->block_elems);
        eff = fmin(1.0, blocks / c->sms);
    }
    if (!(eff > 0.0)) {
        if (err && errlen)
            snprintf(err, errlen, "empty work");
        return -1;
    }
    double t_compute = flops / (c->peak_flops * eff), t_memory = bytes / (c->bandwidth * eff);
    *us = c->launch_us + fmax(1e6 * fmax(t_compute, t_memory), c->min_us);
    return 0;
}

static void ca_free(void *impl) { free(impl); }

cost_model *cost_analytic_new(const cost_analytic_config *cfg) {
    cost_analytic_config *c = cost_xalloc(sizeof *c);
    if (cfg)
        *c = *cfg;
    else
        cost_analytic_defaults(c);
    return cost_model_new("analytic", ca_node, ca_free, c);
}
