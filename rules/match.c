/* match.c: finding a rule's pattern side in a model graph (match.h).
 *
 * Pattern ops are matched from the last to the first: an op that a later pattern op reads is
 * fixed by that reader (the producer of the tensor it reads), so only pattern sinks are searched
 * for, the first among the shortest of the index's ascending lists its node must be in (its class,
 * its parameter signature, the readers of one of its op-to-op edges), later ones among the readers
 * of a tensor already bound when they read one. Variables bind on first use and must agree
 * afterwards. Every match is checked as a whole at the end: requirements, pattern-side
 * constraints, variables not bound to matched nodes' outputs, and no unmapped pattern output read
 * outside the match. The index also answers rules_match_possible, a filter run before matching.
 */
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "match.h"

static uint32_t rm_sig(ops_type op, int32_t n_in, int32_t rank, const ops_params *p);
static int rm_unlift_params(ops_type op, const ops_params *q, int32_t k, ops_params *out);

/* Lists from n (key, node) pairs, nodes ascending. */
static void rm_lists_build(rules_match_lists *l, const uint32_t *key, const int32_t *node, int32_t n) {
    uint32_t cap = 16;
    while (cap < 2 * (uint32_t)n)
        cap *= 2;
    l->mask = cap - 1;
    l->key = base_xcalloc(cap, sizeof *l->key);
    l->start = base_xcalloc(cap, sizeof *l->start);
    l->count = base_xcalloc(cap, sizeof *l->count);
    l->node = base_xmalloc(((size_t)n + 1) * sizeof *l->node);
    int32_t *slot_of = base_xmalloc(((size_t)n + 1) * sizeof *slot_of);
    for (int32_t i = 0; i < n; i++) {
        uint32_t at = key[i] & l->mask;
        while (l->key[at] && l->key[at] != key[i])
            at = (at + 1) & l->mask;
        l->key[at] = key[i];
        l->count[at]++;
        slot_of[i] = (int32_t)at;
    }
    for (uint32_t k = 1; k < cap; k++)
        l->start[k] = l->start[k - 1] + l->count[k - 1];
    int32_t *fill = base_xmalloc(cap * sizeof *fill);
    memcpy(fill, l->start, cap * sizeof *fill);
    for (int32_t i = 0; i < n; i++)
        l->node[fill[slot_of[i]]++] = node[i];
    free(fill);
    free(slot_of);
}

static void rm_lists_free(rules_match_lists *l) {
    free(l->key);
    free(l->start);
    free(l->count);
    free(l->node);
}

/* The slot of key (nonzero), -1 when absent. */
static int32_t rm_lists_find(const rules_match_lists *l, uint32_t key) {
    if (!l->key)
        return -1;
    uint32_t at = key & l->mask;
    while (l->key[at] && l->key[at] != key)
        at = (at + 1) & l->mask;
    return l->key[at] ? (int32_t)at : -1;
}

int rules_match_index_build(rules_match_index *ix, const graph *g, char *err, size_t errlen) {
    memset(ix, 0, sizeof *ix);
    ix->g = g;
    int32_t nt = g->n_tensors, nn = g->n_nodes;
    int32_t *order = base_xmalloc((size_t)nn * sizeof *order);
    if (graph_topo_order(g, order, err, errlen) < 0) {
        free(order);
        return -1;
    }
    ix->topo_pos = base_xmalloc((size_t)nn * sizeof *ix->topo_pos);
    for (int32_t i = 0; i < nn; i++)
        ix->topo_pos[order[i]] = i;
    ix->is_output = base_xcalloc((size_t)nt + 1, 1);
    ix->live = base_xcalloc((size_t)nn + 1, 1);
    ix->stamp = base_xcalloc((size_t)nn + 1, sizeof *ix->stamp);
    for (int32_t i = 0; i < g->n_outputs; i++)
        ix->is_output[g->outputs[i]] = 1;
    /* liveness: backwards over the topological order */
    for (int32_t i = 0; i < g->n_outputs; i++) {
        int32_t p = g->tensors[g->outputs[i]].producer;
        if (p >= 0)
            ix->live[p] = 1;
    }
    for (int32_t i = nn - 1; i >= 0; i--) {
        const graph_node *nd = &g->nodes[order[i]];
        if (!ix->live[order[i]])
            continue;
        for (int32_t k = 0; k < nd->n_in; k++) {
            int32_t p = g->tensors[nd->in[k]].producer;
            if (p >= 0)
                ix->live[p] = 1;
        }
    }
    free(order);
    /* readers, CSR by tensor, ascending node ids */
    ix->use_start = base_xcalloc((size_t)nt + 1, sizeof *ix->use_start);
    int32_t total = 0;
    for (int32_t n = 0; n < nn; n++)
        for (int32_t k = 0; k < g->nodes[n].n_in; k++)
            ix->use_start[g->nodes[n].in[k] + 1]++, total++;
    for (int32_t t = 0; t < nt; t++)
        ix->use_start[t + 1] += ix->use_start[t];
    ix->use_node = base_xmalloc((size_t)total * sizeof *ix->use_node);
    int32_t *fill = base_xmalloc((size_t)nt * sizeof *fill);
    memcpy(fill, ix->use_start, (size_t)nt * sizeof *fill);
    for (int32_t n = 0; n < nn; n++)
        for (int32_t k = 0; k < g->nodes[n].n_in; k++)
            ix->use_node[fill[g->nodes[n].in[k]]++] = n;
    free(fill);
    /* live nodes by op */
    ix->op_start = base_xcalloc(OP_COUNT + 1, sizeof *ix->op_start);
    int32_t n_live = 0;
    for (int32_t n = 0; n < nn; n++)
        if (ix->live[n])
            ix->op_start[g->nodes[n].op + 1]++, n_live++;
    for (int32_t o = 0; o < OP_COUNT; o++)
        ix->op_start[o + 1] += ix->op_start[o];
    ix->op_node = base_xmalloc((size_t)n_live * sizeof *ix->op_node);
    int32_t at[OP_COUNT];
    memcpy(at, ix->op_start, sizeof at);
    for (int32_t n = 0; n < nn; n++)
        if (ix->live[n])
            ix->op_node[at[g->nodes[n].op]++] = n;
    /* every node's class, and live nodes by class */
    ix->node_cls = base_xmalloc((size_t)nn + 1);
    for (int32_t n = 0; n < nn; n++)
        ix->node_cls[n] = (uint8_t)RULES_NODE_CLASS(g->nodes[n].op, g->nodes[n].n_in);
    ix->cls_start = base_xcalloc(RULES_N_CLASSES + 1, sizeof *ix->cls_start);
    ix->cls_node = base_xmalloc((size_t)n_live * sizeof *ix->cls_node);
    for (int32_t n = 0; n < nn; n++)
        if (ix->live[n])
            ix->cls_start[RULES_NODE_CLASS(g->nodes[n].op, g->nodes[n].n_in) + 1]++;
    for (int32_t k = 0; k < RULES_N_CLASSES; k++)
        ix->cls_start[k + 1] += ix->cls_start[k];
    int32_t *cat = base_xmalloc(RULES_N_CLASSES * sizeof *cat);
    memcpy(cat, ix->cls_start, RULES_N_CLASSES * sizeof *cat);
    for (int32_t n = 0; n < nn; n++)
        if (ix->live[n])
            ix->cls_node[cat[RULES_NODE_CLASS(g->nodes[n].op, g->nodes[n].n_in)]++] = n;
    free(cat);
    /* op-to-class edges among live readers (a bit set, and the readers of each edge key), and the
     * live nodes' signatures: (key, node) pairs in ascending node order */
    ix->edges = base_xcalloc(RULES_EDGE_WORDS, sizeof *ix->edges);
    uint32_t *ekey = base_xmalloc(((size_t)n_live * RULES_MAX_IN + 1) * sizeof *ekey);
    int32_t *enode = base_xmalloc(((size_t)n_live * RULES_MAX_IN + 1) * sizeof *enode), n_e = 0;
    ix->node_sig = base_xcalloc(((size_t)nn + 1) * (RULES_MAX_LIFT + 1), sizeof *ix->node_sig);
    uint32_t *skey = base_xmalloc(((size_t)n_live * (RULES_MAX_LIFT + 1) + 1) * sizeof *skey);
    int32_t *snode = base_xmalloc(((size_t)n_live * (RULES_MAX_LIFT + 1) + 1) * sizeof *snode), n_s = 0;
    for (int32_t n = 0; n < nn; n++) {
        const graph_node *nd = &g->nodes[n];
        if (!ix->live[n])
            continue;
        for (int32_t k = 0; k < nd->n_in && k < RULES_MAX_IN; k++) {
            const graph_tensor *ts = &g->tensors[nd->in[k]];
            if (ts->producer < 0 || ts->out_index < 0 || ts->out_index >= OPS_MAX_OUTPUTS)
                continue;
            uint32_t key = RULES_EDGE_KEY(g->nodes[ts->producer].op, ts->out_index, RULES_NODE_CLASS(nd->op, nd->n_in), k);
            ix->edges[key / 64] |= UINT64_C(1) << (key % 64);
            ekey[n_e] = key + 1;
            enode[n_e++] = n;
        }
        /* the signature at each lift k the node could be matched at: its first k dims are 1 and
         * its parameters unlift; listed once per distinct signature (ascending nodes per key) */
        const ops_shape *o0 = nd->n_out > 0 ? &g->tensors[nd->out[0]].shape : NULL;
        int32_t rank = o0 ? o0->rank : 0;
        uint32_t *sig = ix->node_sig + (size_t)n * (RULES_MAX_LIFT + 1);
        for (int32_t k = 0; k <= rank && k <= RULES_MAX_LIFT; k++) {
            ops_params up;
            if ((k > 0 && o0->dims[k - 1] != 1) || rm_unlift_params(nd->op, &nd->p, k, &up) < 0)
                break; /* larger k fail the same test */
            sig[k] = rm_sig(nd->op, nd->n_in, rank - k, &up);
            int seen = 0;
            for (int32_t j = 0; j < k && !seen; j++)
                seen = sig[j] == sig[k];
            if (!seen) {
                skey[n_s] = sig[k];
                snode[n_s++] = n;
            }
        }
    }
    rm_lists_build(&ix->by_edge, ekey, enode, n_e);
    rm_lists_build(&ix->by_sig, skey, snode, n_s);
    free(ekey);
    free(enode);
    free(skey);
    free(snode);
    /* the dead-node walk of rules_apply_check pushes at most one entry per edge and mapped tensor */
    ix->stack = base_xmalloc((size_t)(nn + total + RULES_APPLY_MAX_MAP + 1) * sizeof *ix->stack);
    ix->uses_left = base_xmalloc((size_t)nt * sizeof *ix->uses_left);
    return 0;
}

void rules_match_index_free(rules_match_index *ix) {
    if (!ix)
        return;
    free(ix->use_start);
    free(ix->use_node);
    free(ix->is_output);
    free(ix->live);
    free(ix->topo_pos);
    free(ix->op_start);
    free(ix->op_node);
    free(ix->node_cls);
    free(ix->cls_start);
    free(ix->cls_node);
    free(ix->edges);
    rm_lists_free(&ix->by_sig);
    rm_lists_free(&ix->by_edge);
    free(ix->node_sig);
    free(ix->stamp);
    free(ix->stack);
    free(ix->uses_left);
    memset(ix, 0, sizeof *ix);
}

/* --- rule sides ------------------------------------------------------------------------------ */

static const rules_graph *rm_side(const rules_rule *r, rules_dir dir, int pattern) {
    int src = (dir == RULES_DIR_FWD) == (pattern != 0);
    return src ? &r->src : &r->dst;
}

static rules_side rm_side_id(rules_dir dir, int pattern) {
    int src = (dir == RULES_DIR_FWD) == (pattern != 0);
    return src ? RULES_SIDE_SRC : RULES_SIDE_DST;
}

/* Bit v set for every variable one side reads (as an op input or as a mapped output). */
static uint32_t rm_side_vars(const rules_rule *r, rules_side side) {
    const rules_graph *sg = side == RULES_SIDE_SRC ? &r->src : &r->dst;
    uint32_t m = 0;
    for (int32_t i = 0; i < sg->n_ops; i++)
        for (int32_t k = 0; k < sg->ops[i].n_in; k++)
            if (sg->ops[i].in[k].kind == RULES_REF_VAR)
                m |= 1u << sg->ops[i].in[k].idx;
    for (int32_t i = 0; i < r->n_outputs; i++) {
        rules_ref ref = side == RULES_SIDE_SRC ? r->outputs[i].src : r->outputs[i].dst;
        if (ref.kind == RULES_REF_VAR)
            m |= 1u << ref.idx;
    }
    return m;
}

int rules_match_usable(const rules_rule *r, rules_dir dir) {
    const rules_graph *pat = rm_side(r, dir, 1);
    if (pat->n_ops < 1)
        return 0;
    uint32_t tv = rm_side_vars(r, rm_side_id(dir, 0));
    /* only variables the pattern's ops read are bound (not those only its mapped outputs name) */
    uint32_t bound = 0;
    for (int32_t i = 0; i < pat->n_ops; i++)
        for (int32_t k = 0; k < pat->ops[i].n_in; k++)
            if (pat->ops[i].in[k].kind == RULES_REF_VAR)
                bound |= 1u << pat->ops[i].in[k].idx;
    return (tv & ~bound) == 0;
}

_Static_assert(RULES_N_CLASSES <= 256, "node classes are stored in uint8_t");

static int rm_is_window_key(ops_param_key k);


/* A node's signature (see rules_match_needs) from its class, the rank of its output 0 and its
 * parameters: never 0. */
static uint32_t rm_sig(ops_type op, int32_t n_in, int32_t rank, const ops_params *p) {
    const ops_desc *d = &ops_table[op];
    int windowed = d->window != OPS_WIN_NONE;
    uint64_t h = ((uint64_t)RULES_NODE_CLASS(op, n_in) * 64 + (uint64_t)rank) * UINT64_C(0x9e3779b97f4a7c15);
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (k == PM_LIST) {
            if (op == OP_SPLIT)
                continue;
            h = (h ^ (uint64_t)p->n_list) * UINT64_C(0xbf58476d1ce4e5b9);
            for (int32_t j = 0; j < p->n_list && j < OPS_MAX_LIST; j++)
                h = (h ^ (uint64_t)p->list[j]) * UINT64_C(0x94d049bb133111eb);
        } else if (!(windowed && rm_is_window_key(k))) {
            h = (h ^ (uint64_t)p->v[k] ^ ((uint64_t)k << 56)) * UINT64_C(0xbf58476d1ce4e5b9);
        }
        h ^= h >> 31;
    }
    uint32_t x = (uint32_t)(h ^ (h >> 32));
    return x ? x : 1;
}

uint32_t rules_node_sig(ops_type op, int32_t n_in, const ops_params *p, const ops_shape *out0, int32_t k) {
    ops_params up;
    if (k < 0 || k > RULES_MAX_LIFT || k > out0->rank)
        return 0;
    for (int32_t i = 0; i < k; i++)
        if (out0->dims[i] != 1)
            return 0;
    if (rm_unlift_params(op, p, k, &up) < 0)
        return 0;
    return rm_sig(op, n_in, out0->rank - k, &up);
}

uint32_t rules_op_sig(const rules_op *po) { return po->out_rank <= 0 ? 0 : rm_sig(po->op, po->n_in, po->out_rank, &po->p); }

void rules_match_needs_of(const rules_rule *r, rules_dir dir, rules_match_needs *nd) {
    const rules_graph *pat = rm_side(r, dir, 1);
    memset(nd, 0, sizeof *nd);
    for (int32_t i = 0; i < pat->n_ops; i++) {
        const rules_op *po = &pat->ops[i];
        int32_t cls = RULES_NODE_CLASS(po->op, po->n_in), j = 0;
        while (j < nd->n_cls && nd->cls[j] != cls)
            j++;
        if (j == nd->n_cls)
            nd->cls[nd->n_cls++] = (uint8_t)cls;
        nd->count[j]++;
        for (int32_t k = 0; k < po->n_in && k < RULES_MAX_IN; k++) {
            rules_ref ref = po->in[k];
            if (ref.kind != RULES_REF_OP || ref.idx < 0 || ref.idx >= pat->n_ops || ref.out < 0 ||
                ref.out >= OPS_MAX_OUTPUTS)
                continue;
            uint32_t key = RULES_EDGE_KEY(pat->ops[ref.idx].op, ref.out, cls, k);
            int32_t e = 0;
            while (e < nd->n_edges && nd->edge[e] != key)
                e++;
            if (e == nd->n_edges && e < RULES_NEEDS_EDGES)
                nd->edge[nd->n_edges++] = key;
        }
    }
    /* signatures of the ops whose parameters the rule does not constrain */
    uint8_t constrained[RULES_MAX_OPS] = {0};
    rules_side pside = rm_side_id(dir, 1);
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        if (c->side == pside && c->n_eq > 0 && c->op >= 0 && c->op < RULES_MAX_OPS)
            constrained[c->op] = 1;
    }
    for (int32_t i = 0; i < pat->n_ops; i++) {
        if (constrained[i] || pat->ops[i].out_rank <= 0)
            continue;
        uint32_t sig = rm_sig(pat->ops[i].op, pat->ops[i].n_in, pat->ops[i].out_rank, &pat->ops[i].p);
        int32_t e = 0;
        while (e < nd->n_sigs && nd->sig[e] != sig)
            e++;
        if (e == nd->n_sigs)
            nd->sig[nd->n_sigs++] = sig;
    }
}

int rules_match_possible(const rules_match_needs *nd, const rules_match_index *ix) {
    for (int32_t i = 0; i < nd->n_cls; i++)
        if (ix->cls_start[nd->cls[i] + 1] - ix->cls_start[nd->cls[i]] < nd->count[i])
            return 0;
    for (int32_t e = 0; e < nd->n_edges; e++)
        if (!(ix->edges[nd->edge[e] / 64] >> (nd->edge[e] % 64) & 1))
            return 0;
    for (int32_t e = 0; e < nd->n_sigs; e++)
        if (rm_lists_find(&ix->by_sig, nd->sig[e]) < 0)
            return 0;
    return 1;
}

/* --- parameters ------------------------------------------------------------------------------ */

/* The sizes split node q resolves to (sizes [] means equal parts) against pattern split p's
 * list: the same count, and equal entries where the rule does not tie them to a variable dim
 * (those are checked against the bound shapes in rm_finish). */
static int rm_split_sizes_ok(const ops_params *p, const ops_params *q, int32_t n_in, const ops_shape *in,
                             const uint8_t *skip_list) {
    ops_shape o[OPS_MAX_OUTPUTS];
    int32_t n = 0;
    int64_t ax = q->v[PM_AXIS];
    if (n_in < 1 || ops_infer(OP_SPLIT, q, n_in, in, &n, o, NULL, 0) < 0 || n != p->n_list || ax < 0 ||
        ax >= o[0].rank)
        return 0;
    for (int32_t j = 0; j < n && j < OPS_MAX_LIST; j++)
        if (!skip_list[j] && o[j].dims[ax] != p->list[j])
            return 0;
    return 1;
}

static int rm_is_window_key(ops_param_key k) {
    return k == PM_PAD || k == PM_PAD_T || k == PM_PAD_L || k == PM_PAD_B || k == PM_PAD_R || k == PM_STRIDE_H ||
           k == PM_STRIDE_W || k == PM_DIL_H || k == PM_DIL_W || k == PM_KH || k == PM_KW;
}

int rules_match_params(ops_type op, const ops_params *p, const ops_params *q, int32_t n_in, const ops_shape *in,
                       const uint8_t *skip_key, const uint8_t *skip_list) {
    const ops_desc *d = &ops_table[op];
    int windowed = d->window != OPS_WIN_NONE;
    int any_list_skip = 0;
    if (skip_list)
        for (int32_t i = 0; i < OPS_MAX_LIST; i++)
            any_list_skip |= skip_list[i];
    int resolve_split = op == OP_SPLIT && !any_list_skip;
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (k == PM_LIST) {
            if (resolve_split)
                continue;
            if (op == OP_SPLIT) { /* sizes tied to variable dims: compare the node's resolved sizes */
                if (!rm_split_sizes_ok(p, q, n_in, in, skip_list))
                    return 0;
                continue;
            }
            if (p->n_list != q->n_list)
                return 0;
            for (int32_t j = 0; j < p->n_list && j < OPS_MAX_LIST; j++)
                if (!(skip_list && skip_list[j]) && p->list[j] != q->list[j])
                    return 0;
            continue;
        }
        if (skip_key && skip_key[k])
            continue;
        if (windowed && rm_is_window_key(k))
            continue;
        if (p->v[k] != q->v[k])
            return 0;
    }
    if (windowed) {
        if (n_in < 1 || (d->window == OPS_WIN_KERNEL && n_in < 2))
            return 0;
        int same = 1; /* equal window parameters give equal windows */
        for (int32_t i = 0; i < d->n_params && same; i++)
            if (rm_is_window_key(d->params[i].key))
                same = p->v[d->params[i].key] == q->v[d->params[i].key];
        if (same)
            return 1;
        ops_window a, b;
        const ops_shape *w = d->window == OPS_WIN_KERNEL ? &in[1] : NULL;
        if (ops_window2d(op, p, &in[0], w, &a, NULL, 0) < 0 || ops_window2d(op, q, &in[0], w, &b, NULL, 0) < 0)
            return 0;
        return a.kh == b.kh && a.kw == b.kw && a.sh == b.sh && a.sw == b.sw && a.dh == b.dh && a.dw == b.dw &&
               a.pt == b.pt && a.pl == b.pl && a.pb == b.pb && a.pr == b.pr && a.oh == b.oh && a.ow == b.ow;
    }
    if (resolve_split) {
        ops_shape oa[OPS_MAX_OUTPUTS], ob[OPS_MAX_OUTPUTS];
        int32_t na = 0, nb = 0;
        if (ops_infer(op, p, n_in, in, &na, oa, NULL, 0) < 0 || ops_infer(op, q, n_in, in, &nb, ob, NULL, 0) < 0 ||
            na != nb)
            return 0;
        for (int32_t i = 0; i < na; i++)
            if (!ops_shape_eq(&oa[i], &ob[i]))
                return 0;
    }
    return 1;
}

int rules_match_broadcasts(ops_type op) {
    static int8_t known[OP_COUNT]; /* 0 unknown, 1 yes, -1 no: the op table never changes */
    if ((int)op < 0 || op >= OP_COUNT)
        return 0;
    if (!known[op]) {
        const int64_t a[2] = {2, 3}, r[2] = {1, 3}, c[2] = {2, 1};
        ops_shape in[2], out[OPS_MAX_OUTPUTS];
        ops_params p;
        ops_params_default(op, &p);
        int yes = ops_table[op].min_in == 2 && ops_table[op].max_in == 2;
        for (int k = 0; k < 2 && yes; k++) {
            in[0] = ops_shape_make(2, a);
            in[1] = ops_shape_make(2, k ? c : r);
            int32_t n = 0;
            yes = ops_infer(op, &p, 2, in, &n, out, NULL, 0) == 0 && n == 1 && ops_shape_eq(&out[0], &in[0]);
        }
        known[op] = yes ? 1 : -1;
    }
    return known[op] > 0;
}

int rules_split_is_free(const rules_rule *r, rules_side side, int32_t k) {
    const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
    if (!r->split_free || k < 0 || k >= g->n_ops)
        return 0;
    const rules_op *o = &g->ops[k];
    if (o->op != OP_SPLIT || o->p.n_list != 0 || o->p.v[PM_PARTS] != 2)
        return 0;
    for (int32_t i = 0; i < r->n_constraints; i++) /* sizes tied to dims are not free */
        if (r->constraints[i].side == side && r->constraints[i].op == k && r->constraints[i].key == PM_LIST)
            return 0;
    return 1;
}

/* --- lifting (match.h) ------------------------------------------------------------------------ */

typedef enum { RM_LIFT_NO, RM_LIFT_SAME, RM_LIFT_AXIS, RM_LIFT_PERM } rm_lift_kind;

/* How lifting changes op: the list argued in match.h (elementwise and numpy-broadcasting ops and
 * matmul keep their parameters; axis ops move the axis; transpose keeps the unit dims in place).
 * An op not listed (a new one included) binds only at lift 0 until it is argued here. */
static rm_lift_kind rm_lift_kind_of(ops_type op) {
    switch (op) {
    case OP_MATMUL:
    case OP_EWADD:
    case OP_EWMUL:
    case OP_EWSUB:
    case OP_EWDIV:
    case OP_POW:
    case OP_SMUL:
    case OP_RELU:
    case OP_SIGMOID:
    case OP_TANH:
    case OP_GELU:
    case OP_ERF:
    case OP_SQRT:
    case OP_CLIP:
    case OP_HARDSWISH:
        return RM_LIFT_SAME;
    case OP_CONCAT:
    case OP_SPLIT:
    case OP_SOFTMAX:
        return RM_LIFT_AXIS;
    case OP_TRANSPOSE:
        return RM_LIFT_PERM;
    default:
        return RM_LIFT_NO;
    }
}

int32_t rules_lift_of(const ops_shape *sh, int32_t rank) {
    int32_t k = sh->rank - rank;
    if (rank < 0 || k < 0)
        return -1;
    for (int32_t i = 0; i < k; i++)
        if (sh->dims[i] != 1)
            return -1;
    return k;
}

int rules_lift_params(ops_type op, const ops_params *p, int32_t k, ops_params *out) {
    ops_params q = *p; /* out may be p */
    if (k == 0) {
        *out = q;
        return 0;
    }
    if (k < 0 || k > RULES_MAX_LIFT)
        return -1;
    switch (rm_lift_kind_of(op)) {
    case RM_LIFT_SAME:
        break;
    case RM_LIFT_AXIS:
        q.v[PM_AXIS] += k;
        break;
    case RM_LIFT_PERM:
        if (p->n_list < 0 || p->n_list + k > OPS_MAX_LIST)
            return -1;
        for (int32_t i = 0; i < k; i++)
            q.list[i] = i;
        for (int32_t i = 0; i < p->n_list; i++)
            q.list[k + i] = p->list[i] + k;
        q.n_list = p->n_list + k;
        break;
    default:
        return -1;
    }
    *out = q;
    return 0;
}

/* The inverse: node parameters q seen as a rule op's at lift k. -1 when no rule op's parameters
 * lift to q (an axis among the unit dims, a perm moving them, an op not lifted). */
static int rm_unlift_params(ops_type op, const ops_params *q, int32_t k, ops_params *out) {
    *out = *q;
    if (k == 0)
        return 0;
    switch (rm_lift_kind_of(op)) {
    case RM_LIFT_SAME:
        return 0;
    case RM_LIFT_AXIS:
        if (q->v[PM_AXIS] < k)
            return -1;
        out->v[PM_AXIS] -= k;
        return 0;
    case RM_LIFT_PERM:
        if (q->n_list < k || q->n_list > OPS_MAX_LIST)
            return -1;
        for (int32_t i = 0; i < q->n_list; i++)
            if (i < k ? q->list[i] != i : q->list[i] < k)
                return -1;
        memset(out->list, 0, sizeof out->list);
        for (int32_t i = k; i < q->n_list; i++)
            out->list[i - k] = q->list[i] - k;
        out->n_list = q->n_list - k;
        return 0;
    default:
        return -1;
    }
}

int rules_lift_moves(ops_type op, ops_param_key key) {
    rm_lift_kind kind = rm_lift_kind_of(op);
    return (kind == RM_LIFT_AXIS && key == PM_AXIS) || (kind == RM_LIFT_PERM && key == PM_LIST);
}

int32_t rules_lift_op(ops_type op, int32_t n_in, const int32_t *rin, const ops_shape *in, int32_t rout, int32_t n_out,
                      const ops_shape *out) {
    if (n_out < 1 || n_in < 0 || n_in > RULES_MAX_IN)
        return -1;
    int32_t k = rules_lift_of(&out[0], rout), kin[RULES_MAX_IN];
    int any = k > 0;
    for (int32_t o = 1; o < n_out && k >= 0; o++)
        if (rules_lift_of(&out[o], rout) != k)
            return -1;
    for (int32_t i = 0; i < n_in && k >= 0; i++) {
        kin[i] = rules_lift_of(&in[i], rin[i]);
        if (kin[i] < 0)
            return -1;
        any |= kin[i] > 0;
    }
    if (k < 0 || !any)
        return k;
    rm_lift_kind kind = rm_lift_kind_of(op);
    if (kind == RM_LIFT_NO || k > RULES_MAX_LIFT)
        return -1;
    if (op == OP_MATMUL && (n_in < 2 || rin[0] < 2 || rin[1] < 2))
        return -1; /* numpy's 1-D matmul is not the 2-D core of a batched one */
    if (kind == RM_LIFT_AXIS || kind == RM_LIFT_PERM)
        for (int32_t i = 0; i < n_in; i++)
            if (kin[i] != k)
                return -1;
    return k;
}

/* --- matching -------------------------------------------------------------------------------- */

typedef struct {
    const rules_set *rs;
    const rules_rule *r;
    const rules_graph *pat;
    rules_side pside;
    const rules_match_index *ix;
    rules_match_fn fn;
    void *user;
    int32_t found;
    int stop;
    uint8_t skip_key[RULES_MAX_OPS][PM_COUNT];
    uint8_t skip_list[RULES_MAX_OPS][OPS_MAX_LIST];
    uint8_t consumed[RULES_MAX_OPS];                   /* a later pattern op reads this op */
    uint8_t mapped[RULES_MAX_OPS][OPS_MAX_OUTPUTS];    /* pattern output is a mapped output */
    int32_t cls[RULES_MAX_OPS];                        /* RULES_NODE_CLASS of each pattern op */
    uint32_t sig[RULES_MAX_OPS];                       /* its signature, 0 where constrained */
    /* scalar parameters compared exactly (not constrained, not a window key): a quick reject
     * before rules_match_params */
    int32_t n_quick[RULES_MAX_OPS];
    ops_param_key quick_key[RULES_MAX_OPS][OPS_MAX_OP_PARAMS];
    int32_t rin[RULES_MAX_OPS][RULES_MAX_IN];          /* rule rank of each pattern op's inputs */
    int32_t lift[RULES_MAX_OPS];                       /* lift of the node matched to each pattern op */
    uint8_t free_split[RULES_MAX_OPS];                 /* rules_split_is_free: binds any two sizes */
    rules_match m;
} rm_state;

/* 1 if the bound tensor t can stand for rule variable v: of its rank, or lifted (match.h). */
static int rm_var_ok(const rm_state *s, int32_t v, int32_t t) {
    const graph_tensor *ts = &s->ix->g->tensors[t];
    return ts->dtype == GRAPH_DT_F32 && rules_lift_of(&ts->shape, s->r->vars[v].shape.rank) >= 0;
}

/* Node n's signature as a rule op of output rank `rank` (at lift rank(n) - rank); 0 if none. */
static uint32_t rm_node_sig(const rules_match_index *ix, int32_t n, int32_t rank) {
    const graph_node *nd = &ix->g->nodes[n];
    int32_t k = (nd->n_out > 0 ? ix->g->tensors[nd->out[0]].shape.rank : 0) - rank;
    return k < 0 || k > RULES_MAX_LIFT ? 0 : ix->node_sig[(size_t)n * (RULES_MAX_LIFT + 1) + k];
}

/* Dim d of rule variable v as a dim of its bound tensor (d + its lift), -1 when out of range. */
static int32_t rm_var_dim(const rm_state *s, int32_t v, int32_t d) {
    const ops_shape *sh = &s->ix->g->tensors[s->m.var[v]].shape;
    int32_t at = d + sh->rank - s->r->vars[v].shape.rank;
    return d >= 0 && at >= 0 && at < sh->rank ? at : -1;
}

/* The free splits of a match (match.h, "Free split sizes"): all cut into equal halves (each as
 * the rule was first proved; split_n 0), or all with the same first part n (split_n n, the one n
 * the free proof quantifies). 0 when neither. */
static int rm_free_split_n(rm_state *s) {
    const graph *g = s->ix->g;
    int64_t n = 0;
    int halves = 1, same = 1;
    for (int32_t i = 0; i < s->pat->n_ops; i++) {
        if (!s->free_split[i])
            continue;
        const graph_node *nd = &g->nodes[s->m.node[i]];
        int64_t ax = nd->p.v[PM_AXIS];
        const ops_shape *in = &g->tensors[nd->in[0]].shape, *o0 = &g->tensors[nd->out[0]].shape;
        if (nd->n_out != 2 || ax < 0 || ax >= in->rank)
            return 0;
        halves &= 2 * o0->dims[ax] == in->dims[ax];
        same &= n == 0 || o0->dims[ax] == n;
        n = o0->dims[ax];
    }
    s->m.split_n = halves ? 0 : n;
    return halves || same;
}

/* The whole-match checks, then the report. */
static void rm_finish(rm_state *s) {
    const graph *g = s->ix->g;
    const rules_rule *r = s->r;
    const int32_t np = s->pat->n_ops;
    if (r->split_free && !rm_free_split_n(s))
        return;
    for (int32_t i = 0; i < r->n_requires; i++) {
        const rules_require *q = &r->requires[i];
        int32_t t = s->m.var[q->var];
        if (t < 0)
            continue; /* not read by this side: the target does not read it either */
        int32_t d = rm_var_dim(s, q->var, q->dim);
        if (d < 0 || g->tensors[t].shape.dims[d] != q->value)
            return;
    }
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        if (c->side != s->pside || c->n_eq == 0)
            continue;
        const graph_node *nd = &g->nodes[s->m.node[c->op]];
        int64_t val;
        if (c->key == PM_LIST && nd->op == OP_SPLIT) { /* the resolved size: sizes [] is equal parts */
            int64_t ax = nd->p.v[PM_AXIS];
            if (c->list_index < 0 || c->list_index >= nd->n_out || ax < 0 ||
                ax >= g->tensors[nd->out[c->list_index]].shape.rank)
                return;
            val = g->tensors[nd->out[c->list_index]].shape.dims[ax];
        } else if (s->lift[c->op] > 0 && rules_lift_moves(nd->op, c->key)) {
            return; /* a lifted axis tied to a dim: not read at this lift */
        } else if (c->key == PM_LIST) {
            if (c->list_index < 0 || c->list_index >= nd->p.n_list)
                return;
            val = nd->p.list[c->list_index];
        } else {
            val = nd->p.v[c->key];
        }
        for (int32_t e = 0; e < c->n_eq; e++) {
            int32_t t = s->m.var[c->eq[e].var];
            if (t < 0)
                return;
            int32_t d = rm_var_dim(s, c->eq[e].var, c->eq[e].dim);
            if (d < 0 || g->tensors[t].shape.dims[d] != val)
                return;
        }
    }
    /* no broadcasting instance: outside the model the rule was proved in */
    for (int32_t i = 0; i < np; i++) {
        const graph_node *nd = &g->nodes[s->m.node[i]];
        if (!rules_match_broadcasts(nd->op))
            continue;
        for (int32_t k = 0; k < nd->n_in; k++)
            if (!ops_shape_eq(&g->tensors[nd->in[k]].shape, &g->tensors[nd->out[0]].shape))
                return;
    }
    /* no variable may be an output of a matched node: that node is going away */
    for (int32_t v = 0; v < r->n_vars; v++) {
        int32_t t = s->m.var[v];
        if (t < 0)
            continue;
        int32_t p = g->tensors[t].producer;
        for (int32_t i = 0; i < np && p >= 0; i++)
            if (s->m.node[i] == p)
                return;
    }
    /* every unmapped pattern output is read only inside the match */
    for (int32_t i = 0; i < np; i++) {
        const graph_node *nd = &g->nodes[s->m.node[i]];
        for (int32_t o = 0; o < nd->n_out; o++) {
            if (s->mapped[i][o])
                continue;
            int32_t t = nd->out[o];
            if (s->ix->is_output[t])
                return;
            for (int32_t u = s->ix->use_start[t]; u < s->ix->use_start[t + 1]; u++) {
                int32_t reader = s->ix->use_node[u], inside = 0;
                for (int32_t j = 0; j < np && !inside; j++)
                    inside = s->m.node[j] == reader;
                if (!inside)
                    return;
            }
        }
    }
    s->found++;
    if (s->fn && s->fn(&s->m, s->user))
        s->stop = 1;
}

static void rm_op(rm_state *s, int32_t i);

/* The lift at which node n can stand for pattern op i (rules_lift_op on its shapes), with the
 * pattern op's parameters at that lift in *lp; -1 if none. */
static int32_t rm_node_lift(const rm_state *s, int32_t i, const graph_node *nd, ops_params *lp) {
    const graph *g = s->ix->g;
    const rules_op *po = &s->pat->ops[i];
    int32_t k = g->tensors[nd->out[0]].shape.rank - po->out_rank, same = k == 0;
    for (int32_t j = 0; j < po->n_in && same; j++)
        same = g->tensors[nd->in[j]].shape.rank == s->rin[i][j];
    if (same) { /* every rank the rule's: the exact-rank match */
        *lp = po->p;
        return 0;
    }
    ops_shape in[RULES_MAX_IN], out[OPS_MAX_OUTPUTS];
    for (int32_t j = 0; j < po->n_in; j++)
        in[j] = g->tensors[nd->in[j]].shape;
    for (int32_t o = 0; o < nd->n_out && o < OPS_MAX_OUTPUTS; o++)
        out[o] = g->tensors[nd->out[o]].shape;
    k = rules_lift_op(po->op, po->n_in, s->rin[i], in, po->out_rank, nd->n_out, out);
    return k < 0 || rules_lift_params(po->op, &po->p, k, lp) < 0 ? -1 : k;
}

/* A free split of the pattern against a split node: the same axis, two parts, whatever their
 * sizes (the node is a valid split of its input, so they are positive and add up;
 * rm_free_split_n ties them across the pattern). */
int rules_match_free_split(const ops_params *lp, const ops_params *q, int32_t n_out) {
    return n_out == 2 && q->v[PM_AXIS] == lp->v[PM_AXIS] && q->v[PM_PARTS] == 2 && lp->v[PM_PARTS] == 2;
}

/* Try node n for pattern op i; on success continue with op i-1, then undo. */
static void rm_try(rm_state *s, int32_t i, int32_t n) {
    const graph *g = s->ix->g;
    const rules_op *po = &s->pat->ops[i];
    if (s->ix->node_cls[n] != s->cls[i]) /* op and input count, without touching the node */
        return;
    const graph_node *nd = &g->nodes[n];
    if (nd->n_out != po->n_out || nd->n_out < 1 || !s->ix->live[n])
        return;
    ops_params lp; /* the pattern op's parameters at the node's lift */
    int32_t lift = rm_node_lift(s, i, nd, &lp);
    if (lift < 0)
        return;
    for (int32_t q = 0; q < s->n_quick[i]; q++)
        if (nd->p.v[s->quick_key[i][q]] != lp.v[s->quick_key[i][q]])
            return;
    for (int32_t j = i + 1; j < s->pat->n_ops; j++)
        if (s->m.node[j] == n)
            return;
    for (int32_t j = 0; j < i; j++) /* fixed by a reader already: must be distinct too */
        if (s->m.node[j] == n)
            return;
    ops_shape in[RULES_MAX_IN]; /* only the windowed ops and split look at their input shapes */
    if (ops_table[po->op].window != OPS_WIN_NONE || po->op == OP_SPLIT)
        for (int32_t k = 0; k < nd->n_in && k < RULES_MAX_IN; k++)
            in[k] = g->tensors[nd->in[k]].shape;
    if (s->free_split[i] ? !rules_match_free_split(&lp, &nd->p, nd->n_out)
                         : !rules_match_params(po->op, &lp, &nd->p, nd->n_in, in, s->skip_key[i], s->skip_list[i]))
        return;
    /* inputs: bind variables, fix producers of earlier pattern ops */
    int32_t undo_var[RULES_MAX_IN], n_undo_var = 0, undo_op[RULES_MAX_IN], n_undo_op = 0;
    int ok = 1;
    for (int32_t k = 0; k < po->n_in && ok; k++) {
        rules_ref ref = po->in[k];
        int32_t t = nd->in[k];
        if (ref.kind == RULES_REF_VAR) {
            if (s->m.var[ref.idx] < 0) {
                if (!rm_var_ok(s, ref.idx, t)) {
                    ok = 0;
                    break;
                }
                s->m.var[ref.idx] = t;
                undo_var[n_undo_var++] = ref.idx;
            } else if (s->m.var[ref.idx] != t) {
                ok = 0;
            }
        } else {
            const graph_tensor *ts = &g->tensors[t];
            if (ts->producer < 0 || ts->out_index != ref.out) {
                ok = 0;
            } else if (s->ix->node_cls[ts->producer] != s->cls[ref.idx] ||
                       (s->sig[ref.idx] && rm_node_sig(s->ix, ts->producer, s->pat->ops[ref.idx].out_rank) !=
                                               s->sig[ref.idx])) {
                ok = 0; /* what rm_try would refuse for that op: refused before going deeper */
            } else if (s->m.node[ref.idx] < 0) {
                s->m.node[ref.idx] = ts->producer;
                undo_op[n_undo_op++] = ref.idx;
            } else if (s->m.node[ref.idx] != ts->producer) {
                ok = 0;
            }
        }
    }
    if (ok) {
        int32_t saved = s->m.node[i];
        s->m.node[i] = n;
        s->lift[i] = lift;
        if (i == 0)
            rm_finish(s);
        else
            rm_op(s, i - 1);
        s->m.node[i] = saved;
    }
    for (int32_t k = 0; k < n_undo_var; k++)
        s->m.var[undo_var[k]] = -1;
    for (int32_t k = 0; k < n_undo_op; k++)
        s->m.node[undo_op[k]] = -1;
}

static void rm_op(rm_state *s, int32_t i) {
    if (s->stop)
        return;
    const rules_match_index *ix = s->ix;
    const rules_op *po = &s->pat->ops[i];
    int32_t fixed = s->m.node[i];
    if (fixed >= 0) {
        /* fixed by a reader; rm_try must not see it as taken by itself */
        s->m.node[i] = -1;
        rm_try(s, i, fixed);
        s->m.node[i] = fixed;
        return;
    }
    if (s->consumed[i])
        return; /* a reader should have fixed it: cannot happen for a valid rule */
    /* a sink: among the readers of a bound variable if it reads one, else every node of its op */
    for (int32_t k = 0; k < po->n_in; k++) {
        if (po->in[k].kind != RULES_REF_VAR || s->m.var[po->in[k].idx] < 0)
            continue;
        int32_t t = s->m.var[po->in[k].idx], prev = -1;
        for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1] && !s->stop; u++) {
            int32_t n = ix->use_node[u];
            if (n == prev)
                continue; /* a node reading t twice is one candidate */
            prev = n;
            rm_try(s, i, n);
        }
        return;
    }
    /* else the shortest of the lists every match's node for op i is in (each ascending, so the
     * order of the matches is the same whichever is taken): the nodes of its class, of its
     * signature, and the readers of an edge of its op inputs */
    int32_t cls = s->cls[i]; /* rm_try wants the same op and input count */
    const int32_t *list = ix->cls_node + ix->cls_start[cls];
    int32_t n_list = ix->cls_start[cls + 1] - ix->cls_start[cls];
    if (s->sig[i]) {
        int32_t slot = rm_lists_find(&ix->by_sig, s->sig[i]);
        if (slot < 0)
            return;
        list = ix->by_sig.node + ix->by_sig.start[slot];
        n_list = ix->by_sig.count[slot];
    }
    for (int32_t k = 0; k < po->n_in && k < RULES_MAX_IN; k++) {
        rules_ref ref = po->in[k];
        if (ref.kind != RULES_REF_OP)
            continue;
        int32_t slot = rm_lists_find(&ix->by_edge, RULES_EDGE_KEY(s->pat->ops[ref.idx].op, ref.out, cls, k) + 1);
        if (slot < 0)
            return;
        if (ix->by_edge.count[slot] < n_list) {
            list = ix->by_edge.node + ix->by_edge.start[slot];
            n_list = ix->by_edge.count[slot];
        }
    }
    for (int32_t u = 0; u < n_list && !s->stop; u++)
        rm_try(s, i, list[u]);
}

int32_t rules_match_find(const rules_set *rs, int32_t rule, rules_dir dir, const rules_match_index *ix,
                         rules_match_fn fn, void *user) {
    if (rule < 0 || rule >= rs->n_rules)
        return 0;
    const rules_rule *r = &rs->rules[rule];
    if (!rules_match_usable(r, dir))
        return 0;
    rm_state *s = base_xcalloc(1, sizeof *s);
    s->rs = rs;
    s->r = r;
    s->pat = rm_side(r, dir, 1);
    s->pside = rm_side_id(dir, 1);
    s->ix = ix;
    s->fn = fn;
    s->user = user;
    s->m.rule = rule;
    s->m.dir = dir;
    s->m.n_nodes = s->pat->n_ops;
    for (int32_t i = 0; i < RULES_MAX_OPS; i++)
        s->m.node[i] = -1;
    for (int32_t v = 0; v < RULES_MAX_VARS; v++)
        s->m.var[v] = -1;
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        if (c->side != s->pside || c->n_eq == 0 || c->op < 0 || c->op >= s->pat->n_ops)
            continue;
        if (c->key == PM_LIST) {
            if (c->list_index >= 0 && c->list_index < OPS_MAX_LIST)
                s->skip_list[c->op][c->list_index] = 1;
        } else {
            s->skip_key[c->op][c->key] = 1;
        }
    }
    for (int32_t i = 0; i < s->pat->n_ops; i++) {
        const rules_op *po = &s->pat->ops[i];
        for (int32_t k = 0; k < po->n_in; k++)
            if (po->in[k].kind == RULES_REF_OP)
                s->consumed[po->in[k].idx] = 1;
        s->cls[i] = RULES_NODE_CLASS(po->op, po->n_in);
        s->free_split[i] = (uint8_t)rules_split_is_free(r, s->pside, i);
        for (int32_t k = 0; k < po->n_in && k < RULES_MAX_IN; k++)
            s->rin[i][k] = po->in[k].kind == RULES_REF_VAR ? r->vars[po->in[k].idx].shape.rank
                                                           : s->pat->ops[po->in[k].idx].out_rank;
        int constrained = 0;
        for (int32_t k = 0; k < PM_COUNT; k++)
            constrained |= s->skip_key[i][k];
        for (int32_t k = 0; k < OPS_MAX_LIST; k++)
            constrained |= s->skip_list[i][k];
        s->sig[i] = constrained || po->out_rank <= 0 ? 0 : rm_sig(po->op, po->n_in, po->out_rank, &po->p);
        const ops_desc *d = &ops_table[po->op];
        int windowed = d->window != OPS_WIN_NONE;
        for (int32_t k = 0; k < d->n_params; k++) {
            ops_param_key key = d->params[k].key;
            if (key != PM_LIST && !s->skip_key[i][key] && !(windowed && rm_is_window_key(key)))
                s->quick_key[i][s->n_quick[i]++] = key;
        }
    }
    for (int32_t i = 0; i < r->n_outputs; i++) {
        rules_ref ref = s->pside == RULES_SIDE_SRC ? r->outputs[i].src : r->outputs[i].dst;
        if (ref.kind == RULES_REF_OP && ref.out >= 0 && ref.out < OPS_MAX_OUTPUTS)
            s->mapped[ref.idx][ref.out] = 1;
    }
    rm_op(s, s->pat->n_ops - 1);
    int32_t found = s->found;
    free(s);
    return found;
}
