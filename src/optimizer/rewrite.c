/* rewrite.c: the built-in rewrites as plan finders, their greedy driver, and constant folding
 * (rewrite.h).
 *
 * Finders only describe edits (rules_apply_plan); rules_apply_check decides whether an edit is
 * legal in its graph (outside readers, cycles), so a finder's own preconditions are only those
 * that make the edit compute the same values. Candidates are reported in node-id order, so
 * results do not depend on anything but the graph.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "cost.h"
#include "rewrite.h"

const char *const rewrite_names[REWRITE_COUNT] = {
    [REWRITE_CSE] = "cse",
    [REWRITE_BN_FOLD] = "bn-fold",
    [REWRITE_FUSE_BIAS] = "fuse-bias",
    [REWRITE_FUSE_ACT] = "fuse-act",
    [REWRITE_SPLIT_CONCAT] = "split-concat",
    [REWRITE_MERGE_MATMUL] = "merge-matmul",
    [REWRITE_MERGE_CONV] = "merge-conv",
    [REWRITE_LAYOUT] = "layout",
};

#define RW_MAX_MERGE OPS_MAX_OUTPUTS /* siblings one merge joins: the split's output limit */

typedef struct {
    const rules_match_index *ix;
    const uint8_t *wo;
    rewrite_fn fn;
    void *user;
    int32_t found;
    int stop;
    rules_apply_plan pl;
} rw_ctx;

static void rw_report(rw_ctx *c) {
    if (c->stop)
        return;
    char err[256];
    if (rules_apply_infer(c->ix->g, &c->pl, err, sizeof err) < 0)
        return; /* a finder's shapes did not work out on this graph: not a candidate */
    c->found++;
    if (c->fn(&c->pl, c->user))
        c->stop = 1;
}

/* Ends a rewrite whose result is one tensor: the n_rm nodes rm[] go, and tensor old is replaced
 * by to; then the plan is reported. */
static void rw_report_one(rw_ctx *c, int32_t n_rm, const int32_t *rm, int32_t old, rules_aref to) {
    rules_apply_plan *pl = &c->pl;
    pl->n_removed = n_rm;
    for (int32_t i = 0; i < n_rm; i++)
        pl->removed[i] = rm[i];
    pl->n_map = 1;
    pl->old_t[0] = old;
    pl->new_t[0] = to;
    rw_report(c);
}

static void rw_plan_reset(rules_apply_plan *pl) {
    rules_apply_plan_clear(pl);
    memset(pl, 0, sizeof *pl);
}

static rules_aref rw_t(int32_t t) { return (rules_aref){RULES_AREF_TENSOR, t, 0}; }
static rules_aref rw_n(int32_t j, int32_t o) { return (rules_aref){RULES_AREF_NODE, j, o}; }
static rules_aref rw_w(int32_t k) { return (rules_aref){RULES_AREF_WEIGHT, k, 0}; }

/* Append a new node; returns its index. */
static int32_t rw_node(rules_apply_plan *pl, ops_type op, const ops_params *p, int32_t n_in, const rules_aref *in) {
    int32_t j = pl->n_nodes++;
    rules_apply_node *nd = &pl->nodes[j];
    nd->op = op;
    if (p)
        nd->p = *p;
    else
        ops_params_default(op, &nd->p);
    nd->n_in = n_in;
    for (int32_t k = 0; k < n_in; k++)
        nd->in[k] = in[k];
    return j;
}

static int32_t rw_weight(rules_apply_plan *pl, const ops_shape *shape, float value) {
    int32_t k = pl->n_weights++;
    pl->weights[k].shape = *shape;
    pl->weights[k].value = value;
    return k;
}

/* The single reader of tensor t, if exactly one live node reads it exactly once and t is not a
 * graph output; else -1. */
static int32_t rw_only_reader(const rules_match_index *ix, int32_t t) {
    if (ix->is_output[t] || ix->use_start[t + 1] - ix->use_start[t] != 1)
        return -1;
    int32_t r = ix->use_node[ix->use_start[t]];
    return ix->live[r] ? r : -1;
}

/* --- cse ------------------------------------------------------------------------------------- */

static int rw_same_node(const graph *g, int32_t a, int32_t b) {
    const graph_node *x = &g->nodes[a], *y = &g->nodes[b];
    if (x->op != y->op || x->n_in != y->n_in || x->n_out != y->n_out)
        return 0;
    for (int32_t k = 0; k < x->n_in; k++)
        if (x->in[k] != y->in[k])
            return 0;
    const ops_desc *d = &ops_table[x->op];
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (k == PM_LIST) {
            if (x->p.n_list != y->p.n_list)
                return 0;
            for (int32_t j = 0; j < x->p.n_list; j++)
                if (x->p.list[j] != y->p.list[j])
                    return 0;
        } else if (x->p.v[k] != y->p.v[k]) {
            return 0;
        }
    }
    return 1;
}

static void rw_find_cse(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t n = 0; n < g->n_nodes && !c->stop; n++) {
        const graph_node *nd = &g->nodes[n];
        if (!ix->live[n])
            continue;
        int out = 0;
        for (int32_t o = 0; o < nd->n_out; o++)
            out |= ix->is_output[nd->out[o]];
        if (out)
            continue;
        int32_t twin = -1;
        if (nd->n_in > 0) {
            int32_t t = nd->in[0];
            for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1] && twin < 0; u++) {
                int32_t m = ix->use_node[u];
                if (m < n && ix->live[m] && rw_same_node(g, m, n))
                    twin = m;
            }
        } else {
            for (int32_t u = ix->op_start[nd->op]; u < ix->op_start[nd->op + 1] && twin < 0; u++) {
                int32_t m = ix->op_node[u];
                if (m < n && rw_same_node(g, m, n))
                    twin = m;
            }
        }
        if (twin < 0)
            continue;
        rw_plan_reset(&c->pl);
        c->pl.n_removed = 1;
        c->pl.removed[0] = n;
        for (int32_t o = 0; o < nd->n_out; o++) {
            c->pl.old_t[c->pl.n_map] = nd->out[o];
            c->pl.new_t[c->pl.n_map] = rw_t(g->nodes[twin].out[o]);
            c->pl.n_map++;
        }
        rw_report(c);
    }
}

/* --- conv + batchnorm ------------------------------------------------------------------------ */

static void rw_find_bn_fold(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t u = ix->op_start[OP_BATCHNORM]; u < ix->op_start[OP_BATCHNORM + 1] && !c->stop; u++) {
        int32_t b = ix->op_node[u];
        const graph_node *bn = &g->nodes[b];
        int32_t cv = g->tensors[bn->in[0]].producer;
        if (cv < 0 || g->nodes[cv].op != OP_CONV2D || rw_only_reader(ix, bn->in[0]) != b)
            continue;
        const graph_node *conv = &g->nodes[cv];
        if (conv->p.v[PM_ACT] != OPS_ACT_NONE)
            continue;
        int stats_wo = 1;
        for (int32_t k = 1; k < 5; k++)
            stats_wo &= c->wo[bn->in[k]];
        if (!stats_wo)
            continue;
        const int64_t F = g->tensors[conv->out[0]].shape.dims[1];
        rules_apply_plan *pl = &c->pl;
        rw_plan_reset(pl);
        const int64_t vec[1] = {F};
        ops_shape vs = ops_shape_make(1, vec);
        int32_t eps = rw_weight(pl, &vs, ops_p2f(bn->p.v[PM_EPS]));
        /* s = scale / sqrt(var + eps)          (F) */
        int32_t ve = rw_node(pl, OP_EWADD, NULL, 2, (rules_aref[]){rw_t(bn->in[4]), rw_w(eps)});
        int32_t sd = rw_node(pl, OP_SQRT, NULL, 1, (rules_aref[]){rw_n(ve, 0)});
        int32_t s = rw_node(pl, OP_EWDIV, NULL, 2, (rules_aref[]){rw_t(bn->in[1]), rw_n(sd, 0)});
        /* kernel w * s per filter            (F, C/g, KH, KW) */
        ops_params rp;
        ops_params_default(OP_RESHAPE, &rp);
        rp.n_list = 4;
        rp.list[0] = F;
        rp.list[1] = rp.list[2] = rp.list[3] = 1;
        int32_t s4 = rw_node(pl, OP_RESHAPE, &rp, 1, (rules_aref[]){rw_n(s, 0)});
        int32_t w = rw_node(pl, OP_EWMUL, NULL, 2, (rules_aref[]){rw_t(conv->in[1]), rw_n(s4, 0)});
        /* bias: beta - mean * s (+ b0 * s)     (F) */
        int32_t ms = rw_node(pl, OP_EWMUL, NULL, 2, (rules_aref[]){rw_t(bn->in[3]), rw_n(s, 0)});
        int32_t bias = rw_node(pl, OP_EWSUB, NULL, 2, (rules_aref[]){rw_t(bn->in[2]), rw_n(ms, 0)});
        if (conv->n_in > 2) {
            int32_t bs = rw_node(pl, OP_EWMUL, NULL, 2, (rules_aref[]){rw_t(conv->in[2]), rw_n(s, 0)});
            bias = rw_node(pl, OP_EWADD, NULL, 2, (rules_aref[]){rw_n(bs, 0), rw_n(bias, 0)});
        }
        int32_t nc = rw_node(pl, OP_CONV2D, &conv->p, 3, (rules_aref[]){rw_t(conv->in[0]), rw_n(w, 0), rw_n(bias, 0)});
        rw_report_one(c, 2, (int32_t[]){cv, b}, bn->out[0], rw_n(nc, 0));
    }
}

/* --- bias and activation fusion -------------------------------------------------------------- */

/* 1 if b, right-aligned against out, is 1 everywhere except the channel dim ch, where it is
 * out's size. */
int rewrite_has_epilogue(ops_type op) { return ops_param_desc_of(op, PM_ACT) != NULL; }

int32_t rewrite_bias_axis(ops_type op, int32_t rank) { return op == OP_CONV2D ? 1 : rank - 1; }

static int rw_channel_vector(const ops_shape *b, const ops_shape *out, int32_t ch) {
    if (b->rank > out->rank)
        return 0;
    int32_t off = out->rank - b->rank;
    for (int32_t i = 0; i < b->rank; i++) {
        int32_t d = i + off;
        if (b->dims[i] != (d == ch ? out->dims[ch] : 1))
            return 0;
    }
    return off <= ch; /* the channel dim itself is present in b */
}

int rewrite_channel_vector(const ops_shape *b, const ops_shape *out, int32_t ch) {
    return rw_channel_vector(b, out, ch);
}

static void rw_find_fuse_bias(rw_ctx *c, ops_type op) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t u = ix->op_start[op]; u < ix->op_start[op + 1] && !c->stop; u++) {
        int32_t n = ix->op_node[u];
        const graph_node *nd = &g->nodes[n];
        if (nd->p.v[PM_ACT] != OPS_ACT_NONE)
            continue;
        int32_t t = nd->out[0];
        int32_t a = rw_only_reader(ix, t);
        if (a < 0 || g->nodes[a].op != OP_EWADD)
            continue;
        const graph_node *add = &g->nodes[a];
        int32_t b = add->in[0] == t ? add->in[1] : add->in[0];
        const ops_shape *os = &g->tensors[t].shape, *bs = &g->tensors[b].shape;
        int32_t ch = rewrite_bias_axis(op, os->rank);
        if (b == t || !c->wo[b] || !ops_shape_eq(&g->tensors[add->out[0]].shape, os) ||
            !rw_channel_vector(bs, os, ch))
            continue;
        rules_apply_plan *pl = &c->pl;
        rw_plan_reset(pl);
        rules_aref bias = rw_t(b);
        if (bs->rank != 1) {
            ops_params rp;
            ops_params_default(OP_RESHAPE, &rp);
            rp.n_list = 1;
            rp.list[0] = os->dims[ch];
            bias = rw_n(rw_node(pl, OP_RESHAPE, &rp, 1, &bias), 0);
        }
        if (nd->n_in > 2)
            bias = rw_n(rw_node(pl, OP_EWADD, NULL, 2, (rules_aref[]){rw_t(nd->in[2]), bias}), 0);
        int32_t nn = rw_node(pl, op, &nd->p, 3, (rules_aref[]){rw_t(nd->in[0]), rw_t(nd->in[1]), bias});
        rw_report_one(c, 2, (int32_t[]){n, a}, add->out[0], rw_n(nn, 0));
    }
}

/* The op table's activation of the node (ops_act_of), but for sigmoid and tanh, which the GPU
 * matmul's epilogue lacks (they would run as a separate pass: nothing gained). */
ops_act rewrite_fusable_act_p(ops_type op, const ops_params *p) {
    ops_act a = ops_act_of(op, p);
    return a == OPS_ACT_SIGMOID || a == OPS_ACT_TANH ? OPS_ACT_NONE : a;
}

ops_act rewrite_fusable_act(ops_type op) { return rewrite_fusable_act_p(op, NULL); }

static void rw_find_fuse_act(rw_ctx *c, ops_type op) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t u = ix->op_start[op]; u < ix->op_start[op + 1] && !c->stop; u++) {
        int32_t n = ix->op_node[u];
        const graph_node *nd = &g->nodes[n];
        if (nd->p.v[PM_ACT] != OPS_ACT_NONE)
            continue;
        int32_t r = rw_only_reader(ix, nd->out[0]);
        if (r < 0)
            continue;
        ops_act act = rewrite_fusable_act_p(g->nodes[r].op, &g->nodes[r].p);
        if (act == OPS_ACT_NONE)
            continue;
        rules_apply_plan *pl = &c->pl;
        rw_plan_reset(pl);
        ops_params p = nd->p;
        p.v[PM_ACT] = act;
        rules_aref in[3];
        for (int32_t k = 0; k < nd->n_in; k++)
            in[k] = rw_t(nd->in[k]);
        int32_t nn = rw_node(pl, op, &p, nd->n_in, in);
        rw_report_one(c, 2, (int32_t[]){n, r}, g->nodes[r].out[0], rw_n(nn, 0));
    }
}

/* --- bias split before the search, and what lowering fuses ----------------------------------- */

/* conv2d or matmul (no activation) with a bias -> the op without it, then an ewadd of the bias
 * (reshaped to broadcast along the output channel): the form the rules are written in. */
static void rw_find_split_bias(rw_ctx *c, ops_type op) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t u = ix->op_start[op]; u < ix->op_start[op + 1] && !c->stop; u++) {
        int32_t n = ix->op_node[u];
        const graph_node *nd = &g->nodes[n];
        if (nd->n_in != 3 || nd->p.v[PM_ACT] != OPS_ACT_NONE || !c->wo[nd->in[2]])
            continue;
        const ops_shape *os = &g->tensors[nd->out[0]].shape, *bs = &g->tensors[nd->in[2]].shape;
        int32_t ch = rewrite_bias_axis(op, os->rank);
        if (bs->rank != 1 || bs->dims[0] != os->dims[ch])
            continue;
        rules_apply_plan *pl = &c->pl;
        rw_plan_reset(pl);
        rules_aref bias = rw_t(nd->in[2]);
        if (os->rank - ch > 1) { /* [F] -> [F, 1, ...]: right-aligned against the output */
            ops_params rp;
            ops_params_default(OP_RESHAPE, &rp);
            rp.n_list = os->rank - ch;
            rp.list[0] = os->dims[ch];
            for (int32_t i = 1; i < rp.n_list; i++)
                rp.list[i] = 1;
            bias = rw_n(rw_node(pl, OP_RESHAPE, &rp, 1, &bias), 0);
        }
        int32_t nn = rw_node(pl, op, &nd->p, 2, (rules_aref[]){rw_t(nd->in[0]), rw_t(nd->in[1])});
        int32_t add = rw_node(pl, OP_EWADD, NULL, 2, (rules_aref[]){rw_n(nn, 0), bias});
        rw_report_one(c, 1, &n, nd->out[0], rw_n(add, 0));
    }
}

/* The conv2d or matmul (no activation) whose output t is, if n is its only reader; else -1. */
static int32_t rw_fusable_producer(const rules_match_index *ix, int32_t t, int32_t n) {
    const graph *g = ix->g;
    int32_t p = g->tensors[t].producer;
    if (p < 0 || !ix->live[p] || rw_only_reader(ix, t) != n)
        return -1;
    const graph_node *pd = &g->nodes[p];
    if (!rewrite_has_epilogue(pd->op) || pd->p.v[PM_ACT] != OPS_ACT_NONE)
        return -1;
    return p;
}

int rewrite_lowered_free(const rules_match_index *ix, const uint8_t *wo, int32_t n) {
    const graph *g = ix->g;
    const graph_node *nd = &g->nodes[n];
    if (nd->op == OP_EWADD && nd->n_in == 2) { /* fuse-bias's test */
        for (int32_t s = 0; s < 2; s++) {
            int32_t t = nd->in[s], b = nd->in[1 - s];
            int32_t p = rw_fusable_producer(ix, t, n);
            if (p < 0 || t == b || !wo[b])
                continue;
            const ops_shape *os = &g->tensors[t].shape;
            int32_t ch = rewrite_bias_axis(g->nodes[p].op, os->rank);
            if (ops_shape_eq(&g->tensors[nd->out[0]].shape, os) && rw_channel_vector(&g->tensors[b].shape, os, ch))
                return 1;
        }
        return 0;
    }
    if (rewrite_fusable_act_p(nd->op, &nd->p) == OPS_ACT_NONE || nd->n_in < 1) /* fuse-act's, after fuse-bias */
        return 0;
    int32_t t = nd->in[0], p = g->tensors[t].producer;
    if (rw_fusable_producer(ix, t, n) >= 0)
        return 1;
    return p >= 0 && g->nodes[p].op == OP_EWADD && rw_only_reader(ix, t) == n && rewrite_lowered_free(ix, wo, p);
}

/* --- bias normal form: adds in front of a split ---------------------------------------------- */

/* The weight-only bias that ewadd node a adds to part t (its other operand), if a is t's only
 * reader and the bias is a channel vector of t along axis; else -1. */
static int32_t rw_part_bias(const rules_match_index *ix, const uint8_t *wo, int32_t t, int32_t axis) {
    const graph *g = ix->g;
    int32_t a = rw_only_reader(ix, t);
    if (a < 0 || g->nodes[a].op != OP_EWADD || g->nodes[a].n_in != 2)
        return -1;
    const graph_node *add = &g->nodes[a];
    int32_t b = add->in[0] == t ? add->in[1] : add->in[0];
    if (b == t || !wo[b] || !ops_shape_eq(&g->tensors[add->out[0]].shape, &g->tensors[t].shape))
        return -1;
    return rw_channel_vector(&g->tensors[b].shape, &g->tensors[t].shape, axis) ? b : -1;
}

/* split(y) along the bias axis of y's producer (a conv2d or matmul without activation, the
 * split its only reader) whose parts are read only by bias ewadds (some of them) ->
 * split(ewadd(y, concat(biases, zeros for the parts without one))): the same values, each
 * absorbed ewadd's readers reading the new split's part. */
static void rw_find_bias_front(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t u = ix->op_start[OP_SPLIT]; u < ix->op_start[OP_SPLIT + 1] && !c->stop; u++) {
        int32_t s = ix->op_node[u];
        const graph_node *sp = &g->nodes[s];
        int32_t y = sp->in[0], p = rw_fusable_producer(ix, y, s);
        const ops_shape *ys = &g->tensors[y].shape;
        int32_t axis = (int32_t)sp->p.v[PM_AXIS];
        if (p < 0 || c->wo[y] || axis != rewrite_bias_axis(g->nodes[p].op, ys->rank))
            continue;
        int32_t bias[OPS_MAX_OUTPUTS], rank = -1, n_abs = 0;
        for (int32_t i = 0; i < sp->n_out; i++) {
            bias[i] = rw_part_bias(ix, c->wo, sp->out[i], axis);
            if (bias[i] >= 0 && rank >= 0 && g->tensors[bias[i]].shape.rank != rank)
                bias[i] = -1; /* one concat needs one rank */
            if (bias[i] >= 0) {
                rank = g->tensors[bias[i]].shape.rank;
                n_abs++;
            }
        }
        if (n_abs == 0)
            continue;
        rules_apply_plan *pl = &c->pl;
        rw_plan_reset(pl);
        int32_t off = ys->rank - rank; /* the biases right-aligned against the parts */
        rules_aref parts[OPS_MAX_OUTPUTS] = {{0}};
        for (int32_t i = 0; i < sp->n_out; i++) {
            if (bias[i] >= 0) {
                parts[i] = rw_t(bias[i]);
                continue;
            }
            int64_t d[OPS_MAX_DIMS];
            for (int32_t k = 0; k < rank; k++)
                d[k] = k + off == axis ? g->tensors[sp->out[i]].shape.dims[axis] : 1;
            ops_shape zs = ops_shape_make(rank, d);
            parts[i] = rw_w(rw_weight(pl, &zs, 0.0f));
        }
        rules_aref all = parts[0];
        if (sp->n_out > 1) {
            ops_params cp;
            ops_params_default(OP_CONCAT, &cp);
            cp.v[PM_AXIS] = axis - off;
            all = rw_n(rw_node(pl, OP_CONCAT, &cp, sp->n_out, parts), 0);
        }
        int32_t add = rw_node(pl, OP_EWADD, NULL, 2, (rules_aref[]){rw_t(y), all});
        int32_t ns = rw_node(pl, OP_SPLIT, &sp->p, 1, (rules_aref[]){rw_n(add, 0)});
        pl->removed[pl->n_removed++] = s;
        for (int32_t i = 0; i < sp->n_out; i++) {
            int32_t old = sp->out[i];
            if (bias[i] >= 0) { /* the ewadd goes: its readers read the new part */
                int32_t a = rw_only_reader(ix, old);
                pl->removed[pl->n_removed++] = a;
                old = g->nodes[a].out[0];
            }
            pl->old_t[pl->n_map] = old;
            pl->new_t[pl->n_map++] = rw_n(ns, i);
        }
        rw_report(c);
    }
}

/* The split whose outputs concat node n reads, each exactly once, in an order other than the
 * split's own, on the split's axis; else -1. */
static int32_t rw_permuting_split(const rules_match_index *ix, int32_t n) {
    const graph *g = ix->g;
    const graph_node *cat = &g->nodes[n];
    int32_t s = g->tensors[cat->in[0]].producer;
    if (s < 0 || g->nodes[s].op != OP_SPLIT || g->nodes[s].n_out != cat->n_in ||
        g->nodes[s].p.v[PM_AXIS] != cat->p.v[PM_AXIS])
        return -1;
    uint32_t seen = 0;
    int in_order = 1;
    for (int32_t i = 0; i < cat->n_in; i++) {
        const graph_tensor *t = &g->tensors[cat->in[i]];
        if (t->producer != s || (seen >> t->out_index) & 1u || rw_only_reader(ix, cat->in[i]) != n)
            return -1;
        seen |= 1u << t->out_index;
        in_order &= t->out_index == i;
    }
    return in_order ? -1 : s;
}

/* concat(permuted parts of split(ewadd(y, b))), b a weight-only channel bias that lowering fuses
 * into y's producer (a conv2d or matmul) and the split along that channel axis ->
 * ewadd(concat(permuted parts of split(y)), concat(the same parts of split(b))): the same
 * values, the add moved behind the permutation (its bias permuted alike: weight-only nodes), so
 * the permutation meets y's producer directly, where a verified rule can move it into the
 * weights (a conv2d's output channels permuted = the kernel's filters permuted). */
static void rw_find_bias_back(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t u = ix->op_start[OP_CONCAT]; u < ix->op_start[OP_CONCAT + 1] && !c->stop; u++) {
        int32_t n = ix->op_node[u], s = rw_permuting_split(ix, n);
        if (s < 0)
            continue;
        const graph_node *sp = &g->nodes[s], *cat = &g->nodes[n];
        int32_t a = g->tensors[sp->in[0]].producer;
        if (a < 0 || g->nodes[a].op != OP_EWADD || rw_only_reader(ix, sp->in[0]) != s ||
            !rewrite_lowered_free(ix, c->wo, a))
            continue;
        const graph_node *add = &g->nodes[a];
        int32_t side = rw_fusable_producer(ix, add->in[0], a) >= 0 && c->wo[add->in[1]] ? 0 : 1;
        int32_t y = add->in[side], b = add->in[1 - side]; /* the op's output, and the bias */
        const ops_shape *ys = &g->tensors[y].shape, *bs = &g->tensors[b].shape;
        int32_t axis = (int32_t)sp->p.v[PM_AXIS], off = ys->rank - bs->rank;
        if (axis != rewrite_bias_axis(g->nodes[g->tensors[y].producer].op, ys->rank) || !c->wo[b] ||
            !rw_channel_vector(bs, ys, axis))
            continue;
        rules_apply_plan *pl = &c->pl;
        rw_plan_reset(pl);
        int32_t ys_ = rw_node(pl, OP_SPLIT, &sp->p, 1, (rules_aref[]){rw_t(y)});
        ops_params bp = sp->p;
        bp.v[PM_AXIS] = axis - off;
        int32_t bsp = rw_node(pl, OP_SPLIT, &bp, 1, (rules_aref[]){rw_t(b)});
        rules_aref yi[OPS_MAX_OUTPUTS], bi[OPS_MAX_OUTPUTS];
        for (int32_t i = 0; i < cat->n_in; i++) {
            int32_t o = g->tensors[cat->in[i]].out_index;
            yi[i] = rw_n(ys_, o);
            bi[i] = rw_n(bsp, o);
        }
        ops_params cp = cat->p;
        int32_t yc = rw_node(pl, OP_CONCAT, &cp, cat->n_in, yi);
        cp.v[PM_AXIS] = axis - off;
        int32_t bc = rw_node(pl, OP_CONCAT, &cp, cat->n_in, bi);
        int32_t na = rw_node(pl, OP_EWADD, NULL, 2, (rules_aref[]){rw_n(yc, 0), rw_n(bc, 0)});
        rw_report_one(c, 3, (int32_t[]){a, s, n}, cat->out[0], rw_n(na, 0));
    }
}

/* --- split then concat ----------------------------------------------------------------------- */

static void rw_find_split_concat(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    for (int32_t u = ix->op_start[OP_CONCAT]; u < ix->op_start[OP_CONCAT + 1] && !c->stop; u++) {
        int32_t n = ix->op_node[u];
        const graph_node *cat = &g->nodes[n];
        for (int32_t i = 0; i < cat->n_in; i++) {
            const graph_tensor *ts = &g->tensors[cat->in[i]];
            if (ts->producer < 0 || ts->out_index != 0)
                continue;
            const graph_node *sp = &g->nodes[ts->producer];
            if (sp->op != OP_SPLIT || sp->p.v[PM_AXIS] != cat->p.v[PM_AXIS] || i + sp->n_out > cat->n_in)
                continue;
            int run = 1;
            for (int32_t k = 1; k < sp->n_out && run; k++)
                run = cat->in[i + k] == sp->out[k];
            if (!run)
                continue;
            rules_apply_plan *pl = &c->pl;
            rw_plan_reset(pl);
            int32_t m = cat->n_in - sp->n_out + 1;
            if (m > RULES_APPLY_MAX_IN)
                continue;
            rules_aref to = rw_t(sp->in[0]);
            if (m > 1) {
                rules_aref in[RULES_APPLY_MAX_IN];
                int32_t k = 0;
                for (int32_t j = 0; j < i; j++)
                    in[k++] = rw_t(cat->in[j]);
                in[k++] = to;
                for (int32_t j = i + sp->n_out; j < cat->n_in; j++)
                    in[k++] = rw_t(cat->in[j]);
                to = rw_n(rw_node(pl, OP_CONCAT, &cat->p, k, in), 0);
            }
            rw_report_one(c, 1, &n, cat->out[0], to);
            break; /* one run per concat: the greedy driver comes back for the next */
        }
    }
}

/* --- sibling merges -------------------------------------------------------------------------- */

/* The live readers of x of op `op` that read x as input 0 only; distinct, ascending. */
static int32_t rw_siblings(const rules_match_index *ix, int32_t x, ops_type op, int32_t *out, int32_t cap) {
    const graph *g = ix->g;
    int32_t n = 0;
    for (int32_t u = ix->use_start[x]; u < ix->use_start[x + 1] && n < cap; u++) {
        int32_t r = ix->use_node[u];
        const graph_node *nd = &g->nodes[r];
        if (!ix->live[r] || nd->op != op || nd->in[0] != x || (n > 0 && out[n - 1] == r))
            continue;
        int twice = 0;
        for (int32_t k = 1; k < nd->n_in; k++)
            twice |= nd->in[k] == x;
        if (!twice)
            out[n++] = r;
    }
    return n;
}

/* The merged weights and biases: concat of the siblings' second inputs (through `pre` when
 * given: enlarge nodes) along w_axis, and of their biases (zeros where missing). Returns the
 * bias ref or a kind COUNT ref when none has a bias. */
static rules_aref rw_merged_bias(rules_apply_plan *pl, const graph *g, const int32_t *sib, int32_t k, int32_t ch,
                                 int is_conv) {
    int any = 0;
    for (int32_t i = 0; i < k; i++)
        any |= g->nodes[sib[i]].n_in > 2;
    if (!any)
        return (rules_aref){RULES_AREF_COUNT, 0, 0};
    rules_aref parts[RW_MAX_MERGE];
    for (int32_t i = 0; i < k; i++) {
        const graph_node *nd = &g->nodes[sib[i]];
        if (nd->n_in > 2) {
            parts[i] = rw_t(nd->in[2]);
        } else {
            const ops_shape *os = &g->tensors[nd->out[0]].shape;
            const int64_t d[1] = {os->dims[is_conv ? 1 : ch]};
            ops_shape zs = ops_shape_make(1, d);
            parts[i] = rw_w(rw_weight(pl, &zs, 0.0f));
        }
    }
    ops_params cp;
    ops_params_default(OP_CONCAT, &cp);
    cp.v[PM_AXIS] = 0;
    return rw_n(rw_node(pl, OP_CONCAT, &cp, k, parts), 0);
}

/* The tail of every merge: the merged op, a split along its channel dim, outputs mapped. */
static void rw_merge_tail(rw_ctx *c, const int32_t *sib, int32_t k, ops_type op, const ops_params *p, int32_t x,
                          rules_aref w, rules_aref bias, int32_t ch) {
    const graph *g = c->ix->g;
    rules_apply_plan *pl = &c->pl;
    rules_aref in[3] = {rw_t(x), w, bias};
    int32_t m = rw_node(pl, op, p, bias.kind == RULES_AREF_COUNT ? 2 : 3, in);
    ops_params sp;
    ops_params_default(OP_SPLIT, &sp);
    sp.v[PM_AXIS] = ch;
    sp.v[PM_PARTS] = k;
    sp.n_list = k;
    for (int32_t i = 0; i < k; i++)
        sp.list[i] = g->tensors[g->nodes[sib[i]].out[0]].shape.dims[ch];
    int32_t s = rw_node(pl, OP_SPLIT, &sp, 1, (rules_aref[]){rw_n(m, 0)});
    pl->n_removed = k;
    pl->n_map = k;
    for (int32_t i = 0; i < k; i++) {
        pl->removed[i] = sib[i];
        pl->old_t[i] = g->nodes[sib[i]].out[0];
        pl->new_t[i] = rw_n(s, i);
    }
    rw_report(c);
}

static void rw_merge_matmuls(rw_ctx *c, int32_t x, const int32_t *sib, int32_t k) {
    const graph *g = c->ix->g;
    rules_apply_plan *pl = &c->pl;
    rw_plan_reset(pl);
    const ops_shape *os = &g->tensors[g->nodes[sib[0]].out[0]].shape;
    int32_t ch = os->rank - 1;
    rules_aref ws[RW_MAX_MERGE];
    for (int32_t i = 0; i < k; i++)
        ws[i] = rw_t(g->nodes[sib[i]].in[1]);
    ops_params cp;
    ops_params_default(OP_CONCAT, &cp);
    cp.v[PM_AXIS] = 1; /* B is (k, n): the n's side by side */
    rules_aref w = rw_n(rw_node(pl, OP_CONCAT, &cp, k, ws), 0);
    rules_aref bias = rw_merged_bias(pl, g, sib, k, ch, 0);
    rw_merge_tail(c, sib, k, OP_MATMUL, &g->nodes[sib[0]].p, x, w, bias, ch);
}

static void rw_find_merge_matmul(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    int32_t *sib = base_xmalloc(sizeof(int32_t) * (size_t)(g->n_nodes + 1));
    for (int32_t x = 0; x < g->n_tensors && !c->stop; x++) {
        int32_t n = rw_siblings(ix, x, OP_MATMUL, sib, g->n_nodes);
        /* keep those with a 2-D B and the output rank of A; group by activation */
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++) {
            const graph_node *nd = &g->nodes[sib[i]];
            if (g->tensors[nd->in[1]].shape.rank == 2 && g->tensors[nd->out[0]].shape.rank == g->tensors[x].shape.rank)
                sib[m++] = sib[i];
        }
        for (int32_t act = 0; act < OPS_ACT_COUNT && !c->stop; act++) {
            int32_t grp[RW_MAX_MERGE], k = 0;
            for (int32_t i = 0; i <= m && !c->stop; i++) {
                if (i < m && g->nodes[sib[i]].p.v[PM_ACT] == act)
                    grp[k++] = sib[i];
                if (k == RW_MAX_MERGE || (i == m && k >= 2)) {
                    if (k >= 2)
                        rw_merge_matmuls(c, x, grp, k);
                    k = 0;
                }
            }
        }
    }
    free(sib);
}

/* A conv's window against its input, for grouping. */
typedef struct {
    int32_t node;
    ops_window w;
} rw_conv;

/* Convs whose windows align once enlarged to a common size: same strides, output size, kernel
 * parities, and pad minus half kernel on every side. */
static int rw_conv_compatible(const graph *g, const rw_conv *a, const rw_conv *b) {
    const graph_node *x = &g->nodes[a->node], *y = &g->nodes[b->node];
    return x->p.v[PM_ACT] == y->p.v[PM_ACT] && a->w.sh == b->w.sh && a->w.sw == b->w.sw && a->w.oh == b->w.oh &&
           a->w.ow == b->w.ow && (a->w.kh - b->w.kh) % 2 == 0 && (a->w.kw - b->w.kw) % 2 == 0 &&
           2 * a->w.pt - a->w.kh == 2 * b->w.pt - b->w.kh && 2 * a->w.pb - a->w.kh == 2 * b->w.pb - b->w.kh &&
           2 * a->w.pl - a->w.kw == 2 * b->w.pl - b->w.kw && 2 * a->w.pr - a->w.kw == 2 * b->w.pr - b->w.kw;
}

static void rw_merge_convs(rw_ctx *c, int32_t x, const rw_conv *cv, int32_t k) {
    const graph *g = c->ix->g;
    rules_apply_plan *pl = &c->pl;
    rw_plan_reset(pl);
    int64_t KH = 0, KW = 0;
    int32_t sib[RW_MAX_MERGE];
    for (int32_t i = 0; i < k; i++) {
        KH = cv[i].w.kh > KH ? cv[i].w.kh : KH;
        KW = cv[i].w.kw > KW ? cv[i].w.kw : KW;
        sib[i] = cv[i].node;
    }
    rules_aref ks[RW_MAX_MERGE];
    for (int32_t i = 0; i < k; i++) {
        ks[i] = rw_t(g->nodes[cv[i].node].in[1]);
        if (cv[i].w.kh != KH || cv[i].w.kw != KW) {
            ops_params ep;
            ops_params_default(OP_ENLARGE, &ep);
            ep.v[PM_KH] = KH;
            ep.v[PM_KW] = KW;
            ks[i] = rw_n(rw_node(pl, OP_ENLARGE, &ep, 1, &ks[i]), 0);
        }
    }
    ops_params cp;
    ops_params_default(OP_CONCAT, &cp);
    cp.v[PM_AXIS] = 0; /* kernels (F, C, KH, KW): the filters one after another */
    rules_aref w = rw_n(rw_node(pl, OP_CONCAT, &cp, k, ks), 0);
    rules_aref bias = rw_merged_bias(pl, g, sib, k, 1, 1);
    const ops_window *w0 = &cv[0].w;
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    p.v[PM_STRIDE_H] = w0->sh;
    p.v[PM_STRIDE_W] = w0->sw;
    p.v[PM_PAD] = OPS_PAD_EXPLICIT;
    p.v[PM_PAD_T] = w0->pt + (KH - w0->kh) / 2;
    p.v[PM_PAD_B] = w0->pb + (KH - w0->kh) / 2;
    p.v[PM_PAD_L] = w0->pl + (KW - w0->kw) / 2;
    p.v[PM_PAD_R] = w0->pr + (KW - w0->kw) / 2;
    p.v[PM_ACT] = g->nodes[cv[0].node].p.v[PM_ACT];
    rw_merge_tail(c, sib, k, OP_CONV2D, &p, x, w, bias, 1);
}

/* Offer a set of compatible convs in chunks of at most RW_MAX_MERGE. */
static void rw_offer_convs(rw_ctx *c, int32_t x, const rw_conv *set, int32_t n) {
    for (int32_t at = 0; at < n && !c->stop; at += RW_MAX_MERGE) {
        int32_t k = n - at < RW_MAX_MERGE ? n - at : RW_MAX_MERGE;
        if (k >= 2)
            rw_merge_convs(c, x, set + at, k);
    }
}

static void rw_find_merge_conv(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    int32_t *sib = base_xmalloc(sizeof(int32_t) * (size_t)(g->n_nodes + 1));
    rw_conv *cv = base_xmalloc(sizeof(rw_conv) * (size_t)(g->n_nodes + 1));
    rw_conv *grp = base_xmalloc(sizeof(rw_conv) * (size_t)(g->n_nodes + 1));
    rw_conv *sub = base_xmalloc(sizeof(rw_conv) * (size_t)(g->n_nodes + 1));
    uint8_t *used = base_xmalloc((size_t)g->n_nodes + 1), *done = base_xmalloc((size_t)g->n_nodes + 1);
    for (int32_t x = 0; x < g->n_tensors && !c->stop; x++) {
        int32_t n = rw_siblings(ix, x, OP_CONV2D, sib, g->n_nodes), m = 0;
        if (n < 2)
            continue;
        for (int32_t i = 0; i < n; i++) {
            const graph_node *nd = &g->nodes[sib[i]];
            if (nd->p.v[PM_GROUPS] != 1 || nd->p.v[PM_DIL_H] != 1 || nd->p.v[PM_DIL_W] != 1)
                continue;
            cv[m].node = sib[i];
            if (ops_window2d(OP_CONV2D, &nd->p, &g->tensors[x].shape, &g->tensors[nd->in[1]].shape, &cv[m].w, NULL,
                             0) == 0)
                m++;
        }
        memset(used, 0, (size_t)m);
        for (int32_t i = 0; i < m && !c->stop; i++) {
            if (used[i])
                continue;
            int32_t k = 0;
            for (int32_t j = i; j < m; j++)
                if (!used[j] && rw_conv_compatible(g, &cv[i], &cv[j])) {
                    used[j] = 1;
                    grp[k++] = cv[j];
                }
            if (k < 2)
                continue;
            rw_offer_convs(c, x, grp, k);
            /* and each kernel size on its own, where that is a smaller set */
            memset(done, 0, (size_t)k);
            for (int32_t a = 0; a < k && !c->stop; a++) {
                if (done[a])
                    continue;
                int32_t ns = 0;
                for (int32_t b = a; b < k; b++)
                    if (!done[b] && grp[b].w.kh == grp[a].w.kh && grp[b].w.kw == grp[a].w.kw) {
                        done[b] = 1;
                        sub[ns++] = grp[b];
                    }
                if (ns >= 2 && ns < k)
                    rw_offer_convs(c, x, sub, ns);
            }
        }
    }
    free(sib);
    free(cv);
    free(grp);
    free(sub);
    free(used);
    free(done);
}

/* --- layout: per-position chains between a transpose and its inverse -------------------------- */

/* A region: the nodes between a transpose t1 (x -> y, perm P) and transposes by P's inverse (the
 * exits), each computing every position of the last axis of y from that position alone; the
 * region's tensors are read only by its nodes and the exits. In x's layout the last axis of y is
 * dim c = P[r-1], and each node has a form there that reads positions along c (rw_layout_node):
 * the transposes go. */
typedef struct {
    int32_t t1, x, c, r;
    int32_t n_nodes, nodes[RULES_APPLY_MAX_REMOVED]; /* in topological order */
    int32_t n_exits, exits[RULES_APPLY_MAX_MAP];
    rules_aref ref[RULES_APPLY_MAX_REMOVED];         /* the new form of nodes[i]'s output */
} rw_region;

/* Ops that compute each element from the same element of their operands (layout-free, the op
 * table's elementwise ops): those of one tensor, and smul, whose second operand is one value. */
static int rw_layout_pointwise(ops_type op) {
    return ops_is_elementwise(op) && (ops_table[op].max_in == 1 || op == OP_SMUL);
}

/* The elementwise ops of two broadcast tensors (their operands are checked by rw_layout_node). */
static int rw_layout_binary(ops_type op) {
    return ops_is_elementwise(op) && ops_table[op].max_in == 2 && op != OP_SMUL;
}

/* 1 if node n could be in a region (its op; its operands are checked by rw_layout_node). */
static int rw_layout_op(const graph *g, int32_t n) {
    ops_type op = g->nodes[n].op;
    return rw_layout_pointwise(op) || rw_layout_binary(op) || op == OP_LAYERNORM || op == OP_MATMUL;
}

/* 1 if transpose node e undoes perm P of rank r: its output has x's layout. */
static int rw_layout_inverse(const graph *g, int32_t e, const ops_params *P, int32_t r) {
    const ops_params *q = &g->nodes[e].p;
    if (g->nodes[e].op != OP_TRANSPOSE || q->n_list != r)
        return 0;
    for (int32_t i = 0; i < r; i++)
        if (P->list[q->list[i]] != i)
            return 0;
    return 1;
}

static int rw_region_has(const rw_region *rg, int32_t n) {
    for (int32_t i = 0; i < rg->n_nodes; i++)
        if (rg->nodes[i] == n)
            return 1;
    return 0;
}

/* The region's position of tensor t's producer (-1 for y, t1's output), or -2 outside it. */
static int32_t rw_region_slot(const rw_region *rg, const graph *g, int32_t t) {
    if (t == g->nodes[rg->t1].out[0])
        return -1;
    int32_t p = g->tensors[t].producer;
    for (int32_t i = 0; i < rg->n_nodes; i++)
        if (rg->nodes[i] == p)
            return i;
    return -2;
}

/* Grow the region from t1's output over readers: each tensor of it is no graph output and is
 * read by live region ops or inverse transposes only. 0, or -1 when that does not hold or the
 * region outgrows a plan. */
static int rw_region_grow(const rules_match_index *ix, rw_region *rg) {
    const graph *g = ix->g;
    const ops_params *P = &g->nodes[rg->t1].p;
    int32_t queue[RULES_APPLY_MAX_REMOVED + 1], nq = 0;
    queue[nq++] = g->nodes[rg->t1].out[0];
    for (int32_t qi = 0; qi < nq; qi++) {
        int32_t t = queue[qi];
        if (ix->is_output[t])
            return -1;
        for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1]; u++) {
            int32_t m = ix->use_node[u];
            if (!ix->live[m])
                return -1;
            if (rw_layout_inverse(g, m, P, rg->r)) {
                int dup = 0;
                for (int32_t i = 0; i < rg->n_exits; i++)
                    dup |= rg->exits[i] == m;
                if (dup)
                    continue;
                if (rg->n_exits == RULES_APPLY_MAX_MAP)
                    return -1;
                rg->exits[rg->n_exits++] = m;
            } else if (!rw_region_has(rg, m)) {
                if (!rw_layout_op(g, m) || g->nodes[m].n_out != 1 || rg->n_nodes + 2 > RULES_APPLY_MAX_REMOVED)
                    return -1;
                rg->nodes[rg->n_nodes++] = m;
                queue[nq++] = g->nodes[m].out[0];
            }
        }
    }
    if (rg->n_exits == 0 || 1 + rg->n_nodes + rg->n_exits > RULES_APPLY_MAX_REMOVED)
        return -1;
    for (int32_t i = 1; i < rg->n_nodes; i++) /* topological order */
        for (int32_t j = i; j > 0 && ix->topo_pos[rg->nodes[j - 1]] > ix->topo_pos[rg->nodes[j]]; j--) {
            int32_t s = rg->nodes[j];
            rg->nodes[j] = rg->nodes[j - 1];
            rg->nodes[j - 1] = s;
        }
    return 0;
}

/* A constant operand k of a binary op on region tensor of shape ts, in x's layout: one value as
 * it is; a vector along the last axis (right-aligned: 1 everywhere else) reshaped to (C, 1, ...)
 * ending at x's last dim, so that it runs along dim c. A kind COUNT ref when k is neither. */
static rules_aref rw_layout_const(rules_apply_plan *pl, const rw_region *rg, const ops_shape *ks,
                                  const ops_shape *ts, int32_t k) {
    const rules_aref none = {RULES_AREF_COUNT, 0, 0};
    const int64_t C = ts->dims[ts->rank - 1];
    if (ks->rank > ts->rank)
        return none;
    for (int32_t i = 0; i < ks->rank; i++)
        if (ks->dims[i] != 1 && !(i == ks->rank - 1 && ks->dims[i] == C))
            return none;
    if (ops_shape_numel(ks) == 1)
        return rw_t(k);
    ops_params rp;
    ops_params_default(OP_RESHAPE, &rp);
    rp.n_list = rg->r - rg->c;
    for (int32_t i = 0; i < rp.n_list; i++)
        rp.list[i] = i == 0 ? C : 1;
    return rw_n(rw_node(pl, OP_RESHAPE, &rp, 1, (rules_aref[]){rw_t(k)}), 0);
}

/* matmul (..., C) x B (C, F) [+ bias (F)] on positions of NCHW's channels: conv2d 1x1 with the
 * kernel B^T as (F, C, 1, 1), the bias and the activation as they are. */
static rules_aref rw_layout_matmul(rules_apply_plan *pl, const graph *g, const graph_node *nd, rules_aref a) {
    const ops_shape *bs = &g->tensors[nd->in[1]].shape;
    ops_params tp, rp, cp;
    ops_params_default(OP_TRANSPOSE, &tp);
    tp.n_list = 2;
    tp.list[0] = 1;
    tp.list[1] = 0;
    ops_params_default(OP_RESHAPE, &rp);
    rp.n_list = 4;
    rp.list[0] = bs->dims[1];
    rp.list[1] = bs->dims[0];
    rp.list[2] = rp.list[3] = 1;
    int32_t bt = rw_node(pl, OP_TRANSPOSE, &tp, 1, (rules_aref[]){rw_t(nd->in[1])});
    int32_t k = rw_node(pl, OP_RESHAPE, &rp, 1, (rules_aref[]){rw_n(bt, 0)});
    ops_params_default(OP_CONV2D, &cp);
    cp.v[PM_PAD] = OPS_PAD_EXPLICIT; /* pads 0: the 1x1 window is the position itself */
    cp.v[PM_ACT] = nd->p.v[PM_ACT];
    rules_aref in[3] = {a, rw_n(k, 0), nd->n_in > 2 ? rw_t(nd->in[2]) : a};
    return rw_n(rw_node(pl, OP_CONV2D, &cp, nd->n_in > 2 ? 3 : 2, in), 0);
}

/* 1 if region tensor shapes a (operand) and o (result) agree on every dim but the last. */
static int rw_layout_positions(const ops_shape *a, const ops_shape *o) {
    if (a->rank != o->rank)
        return 0;
    for (int32_t i = 0; i + 1 < a->rank; i++)
        if (a->dims[i] != o->dims[i])
            return 0;
    return 1;
}

/* The new form of region node nodes[i] in x's layout, appended to the plan; its output's ref into
 * rg->ref[i]. 0, or -1 when its operands do not allow one. */
static int rw_layout_node(rw_ctx *c, rw_region *rg, int32_t i) {
    const graph *g = c->ix->g;
    rules_apply_plan *pl = &c->pl;
    const graph_node *nd = &g->nodes[rg->nodes[i]];
    rules_aref in[RULES_APPLY_MAX_IN];
    int reg[RULES_APPLY_MAX_IN], first = -1;
    if (nd->n_in > RULES_APPLY_MAX_IN)
        return -1;
    for (int32_t k = 0; k < nd->n_in; k++) {
        int32_t s = rw_region_slot(rg, g, nd->in[k]);
        reg[k] = s != -2;
        in[k] = s == -2 ? rw_t(nd->in[k]) : s == -1 ? rw_t(rg->x) : rg->ref[s];
        if (reg[k] && first < 0)
            first = k;
    }
    const ops_shape *ts = &g->tensors[nd->in[first]].shape, *os = &g->tensors[nd->out[0]].shape;
    if (ts->rank != rg->r || !rw_layout_positions(ts, os))
        return -1;
    ops_type op = nd->op;
    if (rw_layout_binary(op) && !(reg[0] && reg[1])) { /* a constant operand, on either side */
        int32_t kc = 1 - first;
        in[kc] = rw_layout_const(pl, rg, &g->tensors[nd->in[kc]].shape, ts, nd->in[kc]);
        if (in[kc].kind == RULES_AREF_COUNT || !ops_shape_eq(os, ts))
            return -1;
        rg->ref[i] = rw_n(rw_node(pl, op, &nd->p, 2, in), 0);
        return 0;
    }
    if (first != 0)
        return -1;
    if (rw_layout_pointwise(op) || rw_layout_binary(op)) {
        for (int32_t k = 1; k < nd->n_in; k++) /* two region operands: no broadcasting between them */
            if (reg[k] && (op == OP_SMUL || !ops_shape_eq(&g->tensors[nd->in[k]].shape, ts)))
                return -1;
        if (!ops_shape_eq(os, ts))
            return -1;
        rg->ref[i] = rw_n(rw_node(pl, op, &nd->p, nd->n_in, in), 0);
        return 0;
    }
    for (int32_t k = 1; k < nd->n_in; k++) /* layernorm, matmul: only x from the region */
        if (reg[k])
            return -1;
    if (op == OP_LAYERNORM) {
        int64_t end = nd->p.v[PM_AXIS_END];
        if (nd->p.v[PM_AXIS] != rg->r - 1 || (end != 0 && end != rg->r))
            return -1;
        ops_params p = nd->p;
        p.v[PM_AXIS] = rg->c;
        p.v[PM_AXIS_END] = rg->c + 1 == rg->r ? 0 : rg->c + 1;
        rg->ref[i] = rw_n(rw_node(pl, op, &p, nd->n_in, in), 0);
        return 0;
    }
    /* matmul by a (C, F) matrix: a 1x1 conv2d where x is NCHW */
    const ops_shape *bs = &g->tensors[nd->in[1]].shape;
    if (op != OP_MATMUL || rg->r != 4 || rg->c != 1 || bs->rank != 2 || bs->dims[0] != ts->dims[3] ||
        (nd->n_in > 2 && g->tensors[nd->in[2]].shape.rank != 1))
        return -1;
    rg->ref[i] = rw_layout_matmul(pl, g, nd, in[0]);
    return 0;
}

static void rw_find_layout(rw_ctx *c) {
    const rules_match_index *ix = c->ix;
    const graph *g = ix->g;
    rules_apply_plan *pl = &c->pl;
    for (int32_t u = ix->op_start[OP_TRANSPOSE]; u < ix->op_start[OP_TRANSPOSE + 1] && !c->stop; u++) {
        int32_t n = ix->op_node[u];
        const graph_node *nd = &g->nodes[n];
        rw_region rg = {.t1 = n, .x = nd->in[0], .r = g->tensors[nd->in[0]].shape.rank};
        if (c->wo[rg.x] || nd->p.n_list != rg.r || rg.r < 1)
            continue;
        rg.c = (int32_t)nd->p.list[rg.r - 1];
        if (rw_region_grow(ix, &rg) < 0)
            continue;
        rw_plan_reset(pl);
        int ok = 1;
        for (int32_t i = 0; i < rg.n_nodes && ok; i++)
            ok = pl->n_nodes + 3 <= RULES_APPLY_MAX_NODES && rw_layout_node(c, &rg, i) == 0;
        if (!ok)
            continue;
        pl->removed[pl->n_removed++] = n;
        for (int32_t i = 0; i < rg.n_nodes; i++)
            pl->removed[pl->n_removed++] = rg.nodes[i];
        for (int32_t e = 0; e < rg.n_exits; e++) {
            const graph_node *ex = &g->nodes[rg.exits[e]];
            int32_t s = rw_region_slot(&rg, g, ex->in[0]);
            pl->removed[pl->n_removed++] = rg.exits[e];
            pl->old_t[pl->n_map] = ex->out[0];
            pl->new_t[pl->n_map++] = s == -1 ? rw_t(rg.x) : rg.ref[s];
        }
        rw_report(c);
    }
}

#define RW_SPLIT_BIAS REWRITE_COUNT /* rw_find's kinds for rewrite_split_bias */
#define RW_BIAS_FRONT (REWRITE_COUNT + 1) /* and rewrite_bias_normal's two (not rewrite kinds) */
#define RW_BIAS_BACK (REWRITE_COUNT + 2)

static int32_t rw_find(int32_t kind, const rules_match_index *ix, const uint8_t *wo, rewrite_fn fn, void *user) {
    rw_ctx *c = base_xcalloc(1, sizeof *c);
    c->ix = ix;
    c->wo = wo;
    c->fn = fn;
    c->user = user;
    switch ((int)kind) {
    case REWRITE_CSE:
        rw_find_cse(c);
        break;
    case REWRITE_BN_FOLD:
        rw_find_bn_fold(c);
        break;
    case REWRITE_FUSE_BIAS:
        rw_find_fuse_bias(c, OP_CONV2D);
        rw_find_fuse_bias(c, OP_MATMUL);
        break;
    case REWRITE_FUSE_ACT:
        rw_find_fuse_act(c, OP_CONV2D);
        rw_find_fuse_act(c, OP_MATMUL);
        break;
    case REWRITE_SPLIT_CONCAT:
        rw_find_split_concat(c);
        break;
    case REWRITE_MERGE_MATMUL:
        rw_find_merge_matmul(c);
        break;
    case REWRITE_MERGE_CONV:
        rw_find_merge_conv(c);
        break;
    case REWRITE_LAYOUT:
        rw_find_layout(c);
        break;
    case RW_SPLIT_BIAS:
        rw_find_split_bias(c, OP_CONV2D);
        rw_find_split_bias(c, OP_MATMUL);
        break;
    case RW_BIAS_FRONT:
        rw_find_bias_front(c);
        break;
    case RW_BIAS_BACK:
        rw_find_bias_back(c);
        break;
    }
    int32_t found = c->found;
    rules_apply_plan_clear(&c->pl);
    free(c);
    return found;
}

int32_t rewrite_find(rewrite_kind kind, const rules_match_index *ix, const uint8_t *wo, rewrite_fn fn, void *user) {
    return kind < REWRITE_COUNT ? rw_find(kind, ix, wo, fn, user) : 0;
}

/* --- greedy driver --------------------------------------------------------------------------- */

typedef struct {
    rules_match_index *ix;
    rules_apply_plan *keep;
    int got;
} rw_first;

static int rw_take_first(rules_apply_plan *pl, void *user) {
    rw_first *f = user;
    char err[256];
    if (rules_apply_check(f->ix, pl, err, sizeof err) < 0)
        return 0;
    rules_apply_plan_clear(f->keep);
    *f->keep = *pl;
    pl->dead = NULL; /* now owned by keep */
    pl->n_dead = 0;
    f->got = 1;
    return 1;
}

/* Apply the rw_find kinds set in kinds[0..n_kinds) greedily; counts[k] grows by each applied. */
static int rw_greedy(graph **gp, const uint8_t *kinds, int32_t n_kinds, const char *prefix, int64_t *counter,
                     int32_t *counts, char *err, size_t errlen) {
    graph *g = *gp, *owned = NULL;
    rules_apply_plan *keep = base_xcalloc(1, sizeof *keep);
    uint8_t *wo = NULL;
    int rc = -1;
    for (;;) {
        rules_match_index ix;
        if (rules_match_index_build(&ix, g, err, errlen) < 0)
            goto done;
        free(wo);
        wo = base_xmalloc((size_t)g->n_tensors + 1);
        cost_weight_only(g, wo);
        rw_first f = {.ix = &ix, .keep = keep};
        int32_t kind = 0;
        for (; kind < n_kinds && !f.got; kind++)
            if (kinds[kind])
                rw_find(kind, &ix, wo, rw_take_first, &f);
        if (!f.got) {
            rules_match_index_free(&ix);
            break;
        }
        graph *next = NULL;
        int r = rules_apply_run(&ix, keep, prefix, counter, &next, err, errlen);
        rules_match_index_free(&ix);
        if (r < 0)
            goto done;
        if (counts)
            counts[kind - 1]++;
        graph_free(owned);
        owned = g = next;
    }
    if (owned) {
        graph_free(*gp);
        *gp = owned;
        owned = NULL;
    }
    rc = 0;
done:
    graph_free(owned);
    rules_apply_plan_clear(keep);
    free(keep);
    free(wo);
    return rc;
}

int rewrite_greedy(graph **gp, const uint8_t kinds[REWRITE_COUNT], const char *prefix, int64_t *counter,
                   int32_t counts[REWRITE_COUNT], char *err, size_t errlen) {
    return rw_greedy(gp, kinds, REWRITE_COUNT, prefix, counter, counts, err, errlen);
}

int rewrite_split_bias(graph **gp, const char *prefix, int64_t *counter, int32_t *n_split, char *err, size_t errlen) {
    uint8_t kinds[REWRITE_COUNT + 1] = {0};
    int32_t counts[REWRITE_COUNT + 1] = {0};
    kinds[RW_SPLIT_BIAS] = 1;
    int rc = rw_greedy(gp, kinds, REWRITE_COUNT + 1, prefix, counter, counts, err, errlen);
    if (n_split)
        *n_split = counts[RW_SPLIT_BIAS];
    return rc;
}

int rewrite_bias_normal(graph **gp, const char *prefix, int64_t *counter, int32_t *n_moved, char *err, size_t errlen) {
    if (n_moved)
        *n_moved = 0;
    /* most graphs of a search have no candidate: a split reading a conv2d or matmul without an
     * activation, or an ewadd, is looked for before the graph is indexed */
    const graph *g = *gp;
    int any = 0;
    for (int32_t n = 0; n < g->n_nodes && !any; n++) {
        const graph_node *nd = &g->nodes[n];
        int32_t p = nd->op == OP_SPLIT ? g->tensors[nd->in[0]].producer : -1;
        any = p >= 0 && (g->nodes[p].op == OP_EWADD ||
                         (rewrite_has_epilogue(g->nodes[p].op) && g->nodes[p].p.v[PM_ACT] == OPS_ACT_NONE));
    }
    if (!any)
        return 0;
    uint8_t kinds[RW_BIAS_BACK + 1] = {0};
    int32_t counts[RW_BIAS_BACK + 1] = {0};
    kinds[RW_BIAS_FRONT] = kinds[RW_BIAS_BACK] = 1;
    int rc = rw_greedy(gp, kinds, RW_BIAS_BACK + 1, prefix, counter, counts, err, errlen);
    if (n_moved)
        *n_moved = counts[RW_BIAS_FRONT] + counts[RW_BIAS_BACK];
    return rc;
}

/* --- constant folding ------------------------------------------------------------------------ */

int rewrite_fold_constants(graph **gp, int32_t *n_folded, char *err, size_t errlen) {
    graph *g = *gp;
    if (n_folded)
        *n_folded = 0;
    rules_match_index ix;
    if (rules_match_index_build(&ix, g, err, errlen) < 0)
        return -1;
    const int32_t nt = g->n_tensors, nn = g->n_nodes;
    uint8_t *wo = base_xmalloc((size_t)nt + 1), *fold = base_xcalloc((size_t)nt + 1, 1);
    float **val = base_xcalloc((size_t)nt + 1, sizeof *val);
    int32_t *left = base_xcalloc((size_t)nt + 1, sizeof *left); /* weight-only readers still to run */
    int32_t *order = base_xmalloc(sizeof(int32_t) * (size_t)(nn + 1));
    cost_weight_only(g, wo);
    int rc = -1, any = 0;
    graph *c = NULL;
    /* the frontier: computed weight-only tensors read by a node that runs, or graph outputs */
    for (int32_t n = 0; n < nn; n++) {
        const graph_node *nd = &g->nodes[n];
        if (!ix.live[n])
            continue;
        int node_wo = nd->n_out > 0 && wo[nd->out[0]];
        for (int32_t k = 0; k < nd->n_in; k++) {
            int32_t t = nd->in[k];
            if (node_wo)
                left[t]++;
            else if (wo[t] && g->tensors[t].producer >= 0)
                fold[t] = 1;
        }
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        int32_t t = g->outputs[i];
        if (wo[t] && g->tensors[t].producer >= 0)
            fold[t] = 1;
    }
    for (int32_t t = 0; t < nt; t++)
        any |= fold[t];
    if (!any) {
        rc = 0;
        goto done;
    }
    if (graph_topo_order(g, order, err, errlen) < 0)
        goto done;
    /* evaluate every live weight-only node in order */
    for (int32_t i = 0; i < nn; i++) {
        int32_t n = order[i];
        const graph_node *nd = &g->nodes[n];
        if (!ix.live[n] || nd->n_out == 0 || !wo[nd->out[0]])
            continue;
        ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
        const float *in[OPS_MAX_INPUTS];
        float *out[OPS_MAX_OUTPUTS];
        for (int32_t k = 0; k < nd->n_in; k++) {
            int32_t t = nd->in[k];
            in_sh[k] = g->tensors[t].shape;
            if (!val[t]) { /* a weight, materialised on first use */
                int64_t ne = ops_shape_numel(&g->tensors[t].shape);
                val[t] = malloc(sizeof(float) * (size_t)(ne > 0 ? ne : 1));
                if (!val[t]) {
                    snprintf(err, errlen, "out of memory for weight '%s'", g->tensors[t].name);
                    goto done;
                }
                if (graph_weight_values(g, t, val[t], err, errlen) < 0)
                    goto done;
            }
            in[k] = val[t];
        }
        for (int32_t o = 0; o < nd->n_out; o++) {
            int32_t t = nd->out[o];
            out_sh[o] = g->tensors[t].shape;
            int64_t ne = ops_shape_numel(&out_sh[o]);
            val[t] = malloc(sizeof(float) * (size_t)(ne > 0 ? ne : 1));
            if (!val[t]) {
                snprintf(err, errlen, "out of memory folding '%s'", g->tensors[t].name);
                goto done;
            }
            out[o] = val[t];
        }
        ops_sig sig = {.op = nd->op, .p = &nd->p, .n_in = nd->n_in, .n_out = nd->n_out, .in = in_sh, .out = out_sh};
        ops_table[nd->op].cpu(&sig, in, out);
        for (int32_t k = 0; k < nd->n_in; k++) { /* free inputs nothing else needs */
            int32_t t = nd->in[k];
            if (--left[t] <= 0 && !fold[t] && val[t]) {
                free(val[t]);
                val[t] = NULL;
            }
        }
    }
    /* each folded tensor becomes a DATA weight that takes over its name and readers */
    c = graph_clone(g);
    char prefix[32], name[64];
    rules_apply_prefix(g, prefix, sizeof prefix);
    int32_t folded = 0;
    for (int32_t t = 0; t < nt; t++) {
        if (!fold[t])
            continue;
        const ops_shape *s = &g->tensors[t].shape;
        graph_blob *blob = graph_blob_new(val[t], ops_shape_numel(s));
        if (!blob) {
            snprintf(err, errlen, "out of memory folding '%s'", g->tensors[t].name);
            goto done;
        }
        snprintf(name, sizeof name, "%s.fold.%d", prefix, (int)folded);
        int32_t w = graph_weight_data(c, name, s->rank, s->dims, blob);
        graph_blob_unref(blob);
        if (w < 0) {
            snprintf(err, errlen, "%s", graph_error(c));
            goto done;
        }
        for (int32_t u = ix.use_start[t]; u < ix.use_start[t + 1]; u++) {
            graph_node *nd = &c->nodes[ix.use_node[u]];
            for (int32_t k = 0; k < nd->n_in; k++)
                if (nd->in[k] == t)
                    nd->in[k] = w;
        }
        for (int32_t i = 0; i < c->n_outputs; i++)
            if (c->outputs[i] == t)
                c->outputs[i] = w;
        char *tmp = c->tensors[t].name;
        c->tensors[t].name = c->tensors[w].name;
        c->tensors[w].name = tmp;
        folded++;
    }
    graph_compact(c);
    graph_free(*gp);
    *gp = c;
    c = NULL;
    if (n_folded)
        *n_folded = folded;
    rc = 0;
done:
    graph_free(c);
    for (int32_t t = 0; t < nt; t++)
        free(val[t]);
    free(val);
    free(wo);
    free(fold);
    free(left);
    free(order);
    rules_match_index_free(&ix);
    return rc;
}
