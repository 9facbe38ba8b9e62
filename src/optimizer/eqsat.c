/* eqsat.c: the equality-saturation search (eqsat.h): the model graph as an e-graph, rounds of
 * e-matching and rewriting, the built-in moves, the bias normal form's moves on the e-graph (with
 * search_opts.split_bias: rewrite_bias_normal's front and back, matched on e-classes and their
 * parents, since the greedy extraction the built-ins see never holds a merged op with its bias
 * adds behind the split), and the driver eqsat_run (extraction:
 * eqsat_extract.c, eqsat_exact.c). Matching follows rules/match.c on e-classes: an op a matched
 * pattern op reads must have an e-node in the class that reader reads (through a projection for a
 * split's outputs); an op reading a bound variable or a matched op is searched among that class's
 * readers (its own readers check the class they read); else the last unmatched op among the
 * e-nodes of its signature or of an op-to-op edge it needs (the round's index, built once: the
 * shortest list). Nothing is removed from an
 * e-graph, so the graph-only conditions of a match (no variable bound to a matched node's output,
 * unmapped outputs read only inside) do not apply; every check on values and shapes does. A
 * round's matches are collected first and applied after, locally cheaper ones first (eq_delta).
 * Sibling merges (eq_sibling_merge: the pairwise matmul and conv merges) are scheduled apart:
 * one match per e-class, newest first, in the first round and chained there (eq_chain), so that
 * an n-way merge is built as the n-1 pairwise steps it takes instead of every subset of the
 * siblings (bench/optimize/eqsat.md, "HEAD 6d8dda0 + eqmin"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "eqsat_impl.h"

/* A round stops matching once it has tried this many e-nodes against pattern ops: a bound in
 * work, not time, as the match cap is (the same rounds on any machine). Rounds of the 22 runs of
 * bench/optimize/eqsat_run.sh try at most 4.2M, except nasrnn's third round with the built-ins
 * (23M, about 1 s of CPU, for no gain). */
#define EQ_ROUND_TRIES 4000000
#define EQ_DELTA_EPS 1e-9 /* us: a local cost change below this is none */

/* --- the e-graph and its bookkeeping --------------------------------------------------------- */

int32_t eq_add(eq_ctx *c, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
               const int32_t *ch, int32_t n_out, const ops_shape *out, graph_dtype dtype) {
    int32_t before = c->eg.n_nodes;
    int32_t cls = egraph_add(&c->eg, kind, a, value, p, n_ch, ch, n_out, out, dtype);
    if (c->eg.n_nodes > before) {
        c->meta = base_grow(c->meta, &c->cap_meta, c->eg.n_nodes, sizeof *c->meta);
        eq_meta *m = &c->meta[before];
        m->orig = -1;
        m->src = c->cur_src;
        m->serial = c->cur_serial;
        m->cost = NAN;
    }
    return cls;
}

/* The e-node just added or found for (kind, a, ...): its id. */
int32_t eq_add_node(eq_ctx *c, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
                    const int32_t *ch, int32_t n_out, const ops_shape *out, graph_dtype dtype) {
    int32_t before = c->eg.n_nodes;
    eq_add(c, kind, a, value, p, n_ch, ch, n_out, out, dtype);
    if (c->eg.n_nodes > before)
        return before;
    return egraph_lookup(&c->eg, kind, a, value, p, n_ch, ch);
}

/* The class of output k of op class tc (a tuple when the op has several outputs). */
int32_t eq_output_class(eq_ctx *c, int32_t tc, int32_t k) {
    tc = egraph_find(&c->eg, tc);
    const egraph_class *cl = &c->eg.cls[tc];
    if (cl->n_out == 1)
        return tc;
    ops_shape sh = cl->out[k];
    return eq_add(c, EGRAPH_PROJ, k, 0.0f, NULL, 1, &tc, 1, &sh, cl->dtype);
}

/* The source graph's tensors and live nodes as e-classes (c->t_cls). */
static int eq_from_graph(eq_ctx *c) {
    const graph *g = c->g;
    int32_t *order = base_xmalloc(sizeof(int32_t) * (size_t)(g->n_nodes + 1));
    if (graph_topo_order(g, order, c->err, c->errlen) < 0) {
        free(order);
        return -1;
    }
    c->t_cls = base_xmalloc(sizeof(int32_t) * (size_t)(g->n_tensors + 1));
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const graph_tensor *ts = &g->tensors[t];
        c->t_cls[t] = -1;
        if (ts->producer < 0)
            c->t_cls[t] = eq_add(c, ts->kind == GRAPH_T_INPUT ? EGRAPH_INPUT : EGRAPH_WEIGHT, t, 0.0f, NULL, 0, NULL,
                                 1, &ts->shape, ts->dtype);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const graph_node *nd = &g->nodes[order[i]];
        int32_t ch[OPS_MAX_INPUTS];
        ops_shape out[OPS_MAX_OUTPUTS];
        for (int32_t k = 0; k < nd->n_in; k++)
            ch[k] = c->t_cls[nd->in[k]];
        for (int32_t k = 0; k < nd->n_out; k++)
            out[k] = g->tensors[nd->out[k]].shape;
        int32_t before = c->eg.n_nodes;
        int32_t cls = eq_add(c, EGRAPH_OP, nd->op, 0.0f, &nd->p, nd->n_in, ch, nd->n_out, out,
                             g->tensors[nd->out[0]].dtype);
        if (c->eg.n_nodes > before)
            c->meta[before].orig = order[i];
        for (int32_t k = 0; k < nd->n_out; k++)
            c->t_cls[nd->out[k]] = eq_output_class(c, cls, k);
    }
    free(order);
    return 0;
}

/* --- the round's index: op lists, class counts, op-to-op edges ------------------------------- */

/* Index entries by key, then e-node. */
static int eq_sig_cmp(const void *a, const void *b) {
    const eq_sig_ent *x = a, *y = b;
    if (x->sig != y->sig)
        return x->sig < y->sig ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* Reader e-node n has edge (pop, out, rcls, slot): the bit set, and n listed under the key. */
static void eq_edge(eq_ctx *c, int32_t n, int32_t pop, int32_t out, int32_t rcls, int32_t slot) {
    if (out < 0 || out >= OPS_MAX_OUTPUTS)
        return;
    uint32_t key = RULES_EDGE_KEY(pop, out, rcls, slot);
    c->edges[key / 64] |= UINT64_C(1) << (key % 64);
    c->by_edge = base_grow(c->by_edge, &c->cap_by_edge, c->n_by_edge + 1, sizeof *c->by_edge);
    c->by_edge[c->n_by_edge++] = (eq_sig_ent){key + 1, n};
}

/* by_edge sorted by key, then reader, each pair once. */
static void eq_edge_sort(eq_ctx *c) {
    if (c->n_by_edge > 1) /* none in an e-graph without op-to-op edges (a rule's one op, tasc rules prune) */
        qsort(c->by_edge, (size_t)c->n_by_edge, sizeof *c->by_edge, eq_sig_cmp);
    int32_t m = 0;
    for (int32_t i = 0; i < c->n_by_edge; i++)
        if (m == 0 || c->by_edge[i].sig != c->by_edge[m - 1].sig || c->by_edge[i].node != c->by_edge[m - 1].node)
            c->by_edge[m++] = c->by_edge[i];
    c->n_by_edge = m;
}

/* Each live op e-node's signature at every lift it has one (rules_node_sig), and the e-nodes by
 * signature: a pattern op of signature s need only look at the e-nodes listed under s, and an
 * e-node whose signature at the op's lift differs cannot match it (rules/match.c's index, built
 * once a round instead of lifting every e-node for every rule that tries it). */
static void eq_index_sigs(eq_ctx *c) {
    egraph *eg = &c->eg;
    const int32_t w = RULES_MAX_LIFT + 1;
    c->node_sig = base_grow(c->node_sig, &c->cap_node_sig, eg->n_nodes * w + 1, sizeof *c->node_sig);
    memset(c->node_sig, 0, sizeof *c->node_sig * ((size_t)eg->n_nodes * w + 1));
    c->n_by_sig = 0;
    for (int32_t n = 0; n < eg->n_nodes; n++) {
        const egraph_node *nd = &eg->nodes[n];
        if (nd->dead || nd->kind != EGRAPH_OP)
            continue;
        const ops_shape *o0 = &eg->cls[egraph_find(eg, nd->cls)].out[0];
        uint32_t *sig = c->node_sig + (size_t)n * w;
        for (int32_t k = 0; k < w; k++) {
            sig[k] = rules_node_sig((ops_type)nd->a, nd->n_ch, &nd->p, o0, k);
            if (!sig[k])
                break; /* a larger lift fails the same test */
            int seen = 0;
            for (int32_t j = 0; j < k && !seen; j++)
                seen = sig[j] == sig[k];
            if (seen)
                continue;
            c->by_sig = base_grow(c->by_sig, &c->cap_by_sig, c->n_by_sig + 1, sizeof *c->by_sig);
            c->by_sig[c->n_by_sig++] = (eq_sig_ent){sig[k], n};
        }
    }
    if (c->n_by_sig > 1)
        qsort(c->by_sig, (size_t)c->n_by_sig, sizeof *c->by_sig, eq_sig_cmp);
}

/* The entries of key in sorted list a[0..n_a): *n of them from the returned one on (NULL, 0: none). */
static const eq_sig_ent *eq_list(const eq_sig_ent *a, int32_t n_a, uint32_t key, int32_t *n) {
    int32_t lo = 0, hi = n_a;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (a[mid].sig < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t end = lo;
    while (end < n_a && a[end].sig == key)
        end++;
    *n = end - lo;
    return end > lo ? a + lo : NULL;
}

/* The e-nodes of signature sig (eq_list). */
static const eq_sig_ent *eq_sig_list(const eq_ctx *c, uint32_t sig, int32_t *n) {
    return eq_list(c->by_sig, c->n_by_sig, sig, n);
}

/* The signature of e-node n as a rule op of output rank `rank`; 0 if none. */
static uint32_t eq_node_sig(const eq_ctx *c, int32_t n, int32_t rank) {
    int32_t k = c->eg.cls[egraph_find((egraph *)&c->eg, c->eg.nodes[n].cls)].out[0].rank - rank;
    return k < 0 || k > RULES_MAX_LIFT ? 0 : c->node_sig[(size_t)n * (RULES_MAX_LIFT + 1) + k];
}

static void eq_index(eq_ctx *c) {
    egraph *eg = &c->eg;
    eq_index_sigs(c);
    free(c->op_node);
    memset(c->op_start, 0, sizeof c->op_start);
    memset(c->cls_count, 0, sizeof c->cls_count);
    memset(c->edges, 0, sizeof(uint64_t) * RULES_EDGE_WORDS);
    c->n_by_edge = 0;
    for (int32_t n = 0; n < eg->n_nodes; n++)
        if (!eg->nodes[n].dead && eg->nodes[n].kind == EGRAPH_OP)
            c->op_start[eg->nodes[n].a + 1]++;
    for (int32_t o = 0; o < OP_COUNT; o++)
        c->op_start[o + 1] += c->op_start[o];
    c->op_node = base_xmalloc(sizeof(int32_t) * (size_t)(c->op_start[OP_COUNT] + 1));
    int32_t at[OP_COUNT];
    memcpy(at, c->op_start, sizeof at);
    for (int32_t n = 0; n < eg->n_nodes; n++) {
        const egraph_node *nd = &eg->nodes[n];
        if (nd->dead || nd->kind != EGRAPH_OP)
            continue;
        c->op_node[at[nd->a]++] = n;
        int32_t rc = RULES_NODE_CLASS(nd->a, nd->n_ch);
        c->cls_count[rc]++;
        for (int32_t k = 0; k < nd->n_ch && k < RULES_MAX_IN; k++) {
            const egraph_class *cc = &eg->cls[egraph_find(eg, egraph_children(eg, n)[k])];
            for (int32_t u = 0; u < cc->n_nodes; u++) {
                const egraph_node *m = &eg->nodes[cc->nodes[u]];
                if (m->kind == EGRAPH_OP && cc->n_out == 1)
                    eq_edge(c, n, m->a, 0, rc, k);
                if (m->kind != EGRAPH_PROJ)
                    continue;
                const egraph_class *tc = &eg->cls[egraph_find(eg, egraph_children(eg, cc->nodes[u])[0])];
                for (int32_t v = 0; v < tc->n_nodes; v++)
                    if (eg->nodes[tc->nodes[v]].kind == EGRAPH_OP)
                        eq_edge(c, n, eg->nodes[tc->nodes[v]].a, m->a, rc, k);
            }
        }
    }
    eq_edge_sort(c);
}

/* rules_match_possible's test on the e-graph (classes with counts, edges). */
static int eq_possible(const eq_ctx *c, const rules_match_needs *nd) {
    for (int32_t i = 0; i < nd->n_cls; i++)
        if (c->cls_count[nd->cls[i]] < nd->count[i])
            return 0;
    for (int32_t e = 0; e < nd->n_edges; e++)
        if (!(c->edges[nd->edge[e] / 64] >> (nd->edge[e] % 64) & 1))
            return 0;
    for (int32_t e = 0; e < nd->n_sigs; e++) {
        int32_t n;
        if (!eq_sig_list(c, nd->sig[e], &n))
            return 0;
    }
    return 1;
}

/* --- e-matching ------------------------------------------------------------------------------ */

typedef struct {
    eq_ctx *c;
    const rules_rule *r;
    const rules_graph *pat;
    rules_side pside;
    int32_t src;
    int32_t node[RULES_MAX_OPS];   /* e-node of pattern op i, -1 */
    int32_t fixed[RULES_MAX_OPS];  /* the class a reader fixed for op i, -1 */
    int32_t var[RULES_MAX_VARS];   /* class of variable v, -1 */
    uint8_t skip_key[RULES_MAX_OPS][PM_COUNT];
    uint8_t skip_list[RULES_MAX_OPS][OPS_MAX_LIST];
    /* scalar parameters compared exactly (not constrained, not a window's): a quick reject before
     * rules_match_params, as rules/match.c does */
    int32_t n_quick[RULES_MAX_OPS];
    ops_param_key quick[RULES_MAX_OPS][OPS_MAX_OP_PARAMS];
    int32_t rin[RULES_MAX_OPS][RULES_MAX_IN]; /* rule rank of each pattern op's inputs */
    int32_t lift[RULES_MAX_OPS];              /* lift of the e-node matched to op i (rules/match.h) */
    uint32_t sig[RULES_MAX_OPS];              /* rules_op_sig of op i; 0 where constrained (no filter) */
    int stop;
    int64_t found0;                /* c->n_found when the source began */
    int64_t ban_at;                /* stop once the source found more (it is banned then); 0: never */
} eq_ms;

static int eq_window_key(ops_param_key k) {
    return k == PM_PAD || k == PM_PAD_T || k == PM_PAD_L || k == PM_PAD_B || k == PM_PAD_R || k == PM_STRIDE_H ||
           k == PM_STRIDE_W || k == PM_DIL_H || k == PM_DIL_W || k == PM_KH || k == PM_KW;
}

static const ops_shape *eq_shape(eq_ctx *c, int32_t cls) { return &c->eg.cls[egraph_find(&c->eg, cls)].out[0]; }

/* Dim d of rule variable v bound to class cls, as a dim of the class's shape (d + its lift,
 * rules/match.h); -1 when out of range. */
static int32_t eq_var_dim(eq_ctx *c, const rules_rule *r, int32_t v, int32_t cls, int32_t d) {
    const ops_shape *sh = eq_shape(c, cls);
    int32_t at = d + sh->rank - r->vars[v].shape.rank;
    return d >= 0 && at >= 0 && at < sh->rank ? at : -1;
}

/* 1 if class b holds an output of a split of class a, or of a class that does, and so on (a merged
 * op's part, of a merge merged again): a walk up over the classes split into b, each once. */
static int eq_encloses(eq_ctx *c, int32_t a, int32_t b) {
    egraph *eg = &c->eg;
    if (c->cap_enc < eg->n_cls) {
        c->enc_mark = base_grow(c->enc_mark, &c->cap_enc, eg->n_cls, sizeof *c->enc_mark);
        memset(c->enc_mark, 0, sizeof *c->enc_mark * (size_t)c->cap_enc);
        c->enc_stamp = 0;
    }
    int32_t stamp = ++c->enc_stamp, n_q = 0;
    c->enc_q = base_grow(c->enc_q, &c->cap_enc_q, n_q + 1, sizeof *c->enc_q);
    c->enc_q[n_q++] = b;
    c->enc_mark[b] = stamp;
    for (int32_t h = 0; h < n_q; h++) {
        const egraph_class *cl = &eg->cls[c->enc_q[h]];
        for (int32_t u = 0; u < cl->n_nodes; u++) {
            if (eg->nodes[cl->nodes[u]].kind != EGRAPH_PROJ)
                continue;
            const egraph_class *tc = &eg->cls[egraph_find(eg, egraph_children(eg, cl->nodes[u])[0])];
            for (int32_t v = 0; v < tc->n_nodes; v++) {
                const egraph_node *sn = &eg->nodes[tc->nodes[v]];
                int32_t p = sn->kind == EGRAPH_OP && sn->a == OP_SPLIT ? egraph_find(eg, egraph_children(eg, tc->nodes[v])[0]) : -1;
                if (p == a)
                    return 1;
                if (p >= 0 && c->enc_mark[p] != stamp) {
                    c->enc_mark[p] = stamp;
                    c->enc_q = base_grow(c->enc_q, &c->cap_enc_q, n_q + 1, sizeof *c->enc_q);
                    c->enc_q[n_q++] = p;
                }
            }
        }
    }
    return 0;
}

/* 1 if pattern op i reads pattern op j, directly or not. */
static int eq_pat_reads(const rules_graph *pat, int32_t i, int32_t j) {
    for (int32_t k = 0; k < pat->ops[i].n_in; k++) {
        rules_ref r = pat->ops[i].in[k];
        if (r.kind == RULES_REF_OP && (r.idx == j || eq_pat_reads(pat, r.idx, j)))
            return 1;
    }
    return 0;
}

/* 1 if two pattern ops that do not read each other matched e-nodes of one class, or one of which
 * computes a part of the other (a merged op paired with an op merged into it). One class: no
 * extracted graph holds both (one e-node per class), so the match is none a graph can have. A
 * part: the target computes that part twice, and taking it from the larger op's split instead
 * is in the e-graph already. On an e-graph that holds merges most of what a pairwise merge rule
 * finds is such pairs (nasrnn, the first chain pass: 988 matches of g4_00345 are left of 15,632). */
static int em_overlaps(eq_ms *s) {
    eq_ctx *c = s->c;
    for (int32_t i = 0; i < s->pat->n_ops; i++)
        for (int32_t j = 0; j < s->pat->n_ops; j++) {
            if (i == j || eq_pat_reads(s->pat, i, j) || eq_pat_reads(s->pat, j, i))
                continue;
            int32_t a = egraph_find(&c->eg, c->eg.nodes[s->node[i]].cls), b = egraph_find(&c->eg, c->eg.nodes[s->node[j]].cls);
            if (a == b || eq_encloses(c, a, b))
                return 1;
        }
    return 0;
}

/* 1 if the matched e-nodes of s include one from c->chain_from on (a chain pass's condition). */
static int em_fresh(const eq_ms *s) {
    for (int32_t i = 0; i < s->pat->n_ops; i++)
        if (s->node[i] >= s->c->chain_from)
            return 1;
    return 0;
}

static int eq_delta(eq_ctx *c, const eq_match *m, double *delta);

/* 1 if the match s holds now lowers the local cost (a chain pass's condition). */
static int em_downhill(eq_ms *s) {
    eq_match m;
    double d;
    m.src = s->src;
    memcpy(m.node, s->node, sizeof m.node);
    memcpy(m.var, s->var, sizeof m.var);
    return eq_delta(s->c, &m, &d) == 0 && d < -EQ_DELTA_EPS;
}

/* The whole-match checks on values and shapes (rm_finish's), then the match is recorded. */
static void em_finish(eq_ms *s) {
    eq_ctx *c = s->c;
    const rules_rule *r = s->r;
    for (int32_t i = 0; i < r->n_requires; i++) {
        const rules_require *q = &r->requires[i];
        if (s->var[q->var] < 0)
            continue;
        int32_t d = eq_var_dim(c, r, q->var, s->var[q->var], q->dim);
        if (d < 0 || eq_shape(c, s->var[q->var])->dims[d] != q->value)
            return;
    }
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *k = &r->constraints[i];
        if (k->side != s->pside || k->n_eq == 0)
            continue;
        const egraph_node *nd = &c->eg.nodes[s->node[k->op]];
        if (k->key == PM_LIST && (k->list_index < 0 || k->list_index >= nd->p.n_list))
            return;
        if (s->lift[k->op] > 0 && rules_lift_moves((ops_type)nd->a, k->key))
            return; /* a lifted axis tied to a dim */
        int64_t val = k->key == PM_LIST ? nd->p.list[k->list_index] : nd->p.v[k->key];
        for (int32_t e = 0; e < k->n_eq; e++) {
            if (s->var[k->eq[e].var] < 0)
                return;
            int32_t d = eq_var_dim(c, r, k->eq[e].var, s->var[k->eq[e].var], k->eq[e].dim);
            if (d < 0 || eq_shape(c, s->var[k->eq[e].var])->dims[d] != val)
                return;
        }
    }
    int all_wo = 1;
    for (int32_t i = 0; i < s->pat->n_ops; i++) {
        int32_t n = s->node[i];
        const egraph_node *nd = &c->eg.nodes[n];
        all_wo &= c->eg.cls[egraph_find(&c->eg, nd->cls)].wo;
        if (!rules_match_broadcasts((ops_type)nd->a))
            continue;
        for (int32_t k = 0; k < nd->n_ch; k++)
            if (!ops_shape_eq(eq_shape(c, egraph_children(&c->eg, n)[k]), eq_shape(c, nd->cls)))
                return;
    }
    if (all_wo)
        return; /* as the backtracking search: a rewrite of weights alone cannot change the cost */
    if (em_overlaps(s) || (c->chain_from >= 0 && !em_fresh(s)) || (c->downhill_only && !em_downhill(s)))
        return;
    if (c->n_m >= c->max_matches) {
        s->stop = c->match_cap_hit = 1;
        return;
    }
    c->m = base_grow(c->m, &c->cap_m, c->n_m + 1, sizeof *c->m);
    eq_match *m = &c->m[c->n_m];
    m->src = s->src;
    memcpy(m->node, s->node, sizeof m->node);
    memcpy(m->var, s->var, sizeof m->var);
    if (c->stats)
        c->stats[s->src].found++;
    c->n_found++;
    c->n_m++; /* type-checked when applied (eq_apply_match): most rounds stop before the last */
    if (s->ban_at > 0 && c->n_found - s->found0 > s->ban_at)
        s->stop = 1; /* banned (eq_match_source): the rest would be dropped unseen */
}

static void em_next(eq_ms *s);
static void em_inputs_fixed(eq_ms *s, int32_t i, int32_t k, rules_ref ref, int32_t cc);

/* Bind the inputs of pattern op i (its e-node set) from slot k on, then go on. */
static void em_inputs(eq_ms *s, int32_t i, int32_t k) {
    eq_ctx *c = s->c;
    const rules_op *po = &s->pat->ops[i];
    if (k == po->n_in) {
        em_next(s);
        return;
    }
    rules_ref ref = po->in[k];
    int32_t cc = egraph_find(&c->eg, egraph_children(&c->eg, s->node[i])[k]);
    if (ref.kind == RULES_REF_VAR) {
        int32_t *v = &s->var[ref.idx];
        if (*v >= 0) {
            if (*v == cc)
                em_inputs(s, i, k + 1);
            return;
        }
        const egraph_class *cl = &c->eg.cls[cc];
        if (cl->n_out != 1 || cl->dtype != GRAPH_DT_F32 ||
            rules_lift_of(&cl->out[0], s->r->vars[ref.idx].shape.rank) < 0) /* its rank, or lifted */
            return;
        for (int32_t q = 0; q < s->r->n_requires; q++) { /* em_finish's check, as early as it can be made */
            const rules_require *rq = &s->r->requires[q];
            int32_t d = rq->var == ref.idx ? eq_var_dim(c, s->r, rq->var, cc, rq->dim) : 0;
            if (rq->var == ref.idx && (d < 0 || cl->out[0].dims[d] != rq->value))
                return;
        }
        *v = cc;
        em_inputs(s, i, k + 1);
        *v = -1;
        return;
    }
    int32_t *f = &s->fixed[ref.idx];
    if (*f < 0 && s->node[ref.idx] >= 0) { /* matched before this reader (em_next): its class */
        *f = egraph_find(&c->eg, c->eg.nodes[s->node[ref.idx]].cls);
        em_inputs_fixed(s, i, k, ref, cc);
        *f = -1;
        return;
    }
    em_inputs_fixed(s, i, k, ref, cc);
}

/* em_inputs for slot k reading pattern op ref.idx, class cc: fix that op's class, or check it. */
static void em_inputs_fixed(eq_ms *s, int32_t i, int32_t k, rules_ref ref, int32_t cc) {
    eq_ctx *c = s->c;
    int32_t *f = &s->fixed[ref.idx];
    if (s->pat->ops[ref.idx].n_out == 1) {
        if (*f < 0) {
            *f = cc;
            em_inputs(s, i, k + 1);
            *f = -1;
        } else if (*f == cc) {
            em_inputs(s, i, k + 1);
        }
        return;
    }
    const egraph_class *cl = &c->eg.cls[cc]; /* a split's output: through a projection */
    for (int32_t u = 0; u < cl->n_nodes && !s->stop; u++) {
        const egraph_node *pn = &c->eg.nodes[cl->nodes[u]];
        if (pn->kind != EGRAPH_PROJ || pn->a != ref.out)
            continue;
        int32_t tc = egraph_find(&c->eg, egraph_children(&c->eg, cl->nodes[u])[0]);
        if (*f < 0) {
            *f = tc;
            em_inputs(s, i, k + 1);
            *f = -1;
        } else if (*f == tc) {
            em_inputs(s, i, k + 1);
        }
    }
}

/* The lift at which e-node n can stand for pattern op i (rules_lift_op on its classes' shapes),
 * with the pattern op's parameters at that lift in *lp; -1 if none. */
static int32_t em_lift(eq_ms *s, int32_t i, int32_t n, ops_params *lp) {
    eq_ctx *c = s->c;
    const rules_op *po = &s->pat->ops[i];
    const egraph_class *oc = &c->eg.cls[egraph_find(&c->eg, c->eg.nodes[n].cls)];
    ops_shape in[RULES_MAX_IN];
    for (int32_t k = 0; k < po->n_in && k < RULES_MAX_IN; k++)
        in[k] = *eq_shape(c, egraph_children(&c->eg, n)[k]);
    int32_t k = rules_lift_op(po->op, po->n_in, s->rin[i], in, po->out_rank, oc->n_out, oc->out);
    return k < 0 || rules_lift_params(po->op, &po->p, k, lp) < 0 ? -1 : k;
}

/* Try e-node n for pattern op i. */
static void em_try(eq_ms *s, int32_t i, int32_t n) {
    eq_ctx *c = s->c;
    if (++c->tries_round > EQ_ROUND_TRIES) {
        s->stop = c->work_cap_hit = 1;
        return;
    }
    const rules_op *po = &s->pat->ops[i];
    const egraph_node *nd = &c->eg.nodes[n];
    if (nd->kind != EGRAPH_OP || nd->a != (int32_t)po->op || nd->n_ch != po->n_in ||
        (s->sig[i] && eq_node_sig(c, n, po->out_rank) != s->sig[i]) ||
        c->eg.cls[egraph_find(&c->eg, nd->cls)].n_out != po->n_out)
        return;
    ops_params lp; /* the pattern op's parameters at the e-node's lift */
    int32_t lift = em_lift(s, i, n, &lp);
    if (lift < 0)
        return;
    for (int32_t q = 0; q < s->n_quick[i]; q++)
        if (nd->p.v[s->quick[i][q]] != lp.v[s->quick[i][q]])
            return;
    for (int32_t j = 0; j < s->pat->n_ops; j++)
        if (s->node[j] == n)
            return; /* matched nodes are distinct, as on a graph */
    ops_shape in[RULES_MAX_IN]; /* only the windowed ops and split look at their input shapes */
    if (ops_table[po->op].window != OPS_WIN_NONE || po->op == OP_SPLIT)
        for (int32_t k = 0; k < nd->n_ch && k < RULES_MAX_IN; k++)
            in[k] = *eq_shape(c, egraph_children(&c->eg, n)[k]);
    if (!rules_match_params(po->op, &lp, &nd->p, nd->n_ch, in, s->skip_key[i], s->skip_list[i]))
        return;
    s->node[i] = n;
    s->lift[i] = lift;
    em_inputs(s, i, 0);
    s->node[i] = -1;
}

/* The parents of the class an input of pattern op i already determines (a bound variable, or a
 * matched single-output op), the shortest such list; NULL if none does. Every e-node matching op
 * i is among them. */
static const egraph_class *em_anchor(eq_ms *s, int32_t i) {
    eq_ctx *c = s->c;
    const rules_op *po = &s->pat->ops[i];
    const egraph_class *best = NULL;
    for (int32_t k = 0; k < po->n_in; k++) {
        rules_ref ref = po->in[k];
        int32_t cls = -1;
        if (ref.kind == RULES_REF_VAR)
            cls = s->var[ref.idx];
        else if (s->node[ref.idx] >= 0 && s->pat->ops[ref.idx].n_out == 1)
            cls = egraph_find(&c->eg, c->eg.nodes[s->node[ref.idx]].cls);
        if (cls >= 0 && (!best || c->eg.cls[cls].n_parents < best->n_parents))
            best = &c->eg.cls[cls];
    }
    return best;
}

static void em_op(eq_ms *s, int32_t i) {
    eq_ctx *c = s->c;
    if (s->stop)
        return;
    const rules_op *po = &s->pat->ops[i];
    if (s->fixed[i] >= 0) {
        const egraph_class *cl = &c->eg.cls[s->fixed[i]];
        for (int32_t u = 0; u < cl->n_nodes && !s->stop; u++)
            em_try(s, i, cl->nodes[u]);
        return;
    }
    const egraph_class *cl = em_anchor(s, i);
    if (cl) {
        for (int32_t u = 0; u < cl->n_parents && !s->stop; u++)
            em_try(s, i, cl->parents[u]);
        return;
    }
    /* else the shortest of the lists every e-node for op i is in, each ascending (so the matches
     * come in the same order whichever is taken): its signature's (or its op's), and the readers
     * of each op-to-op edge of its inputs (rules/match.c's choice) */
    int32_t n_list = c->op_start[po->op + 1] - c->op_start[po->op], n_e;
    const eq_sig_ent *list = NULL, *e;
    if (s->sig[i] && !(list = eq_sig_list(c, s->sig[i], &n_list)))
        return;
    int32_t rc = RULES_NODE_CLASS(po->op, po->n_in);
    for (int32_t k = 0; k < po->n_in && k < RULES_MAX_IN; k++) {
        rules_ref ref = po->in[k];
        if (ref.kind != RULES_REF_OP)
            continue;
        uint32_t key = RULES_EDGE_KEY(s->pat->ops[ref.idx].op, ref.out, rc, k) + 1;
        if (!(e = eq_list(c->by_edge, c->n_by_edge, key, &n_e)))
            return;
        if (n_e < n_list) {
            list = e;
            n_list = n_e;
        }
    }
    for (int32_t u = 0; u < n_list && !s->stop; u++)
        em_try(s, i, list ? list[u].node : c->op_node[c->op_start[po->op] + u]);
}

/* The next pattern op to match, or the whole-match checks when every op is matched: an op whose
 * e-nodes are already narrowed comes first, one a reader fixed to a class (the last such), else
 * the last one reading a bound variable or matched op (searched among that class's readers; its
 * own readers, matched later, check that they read its class), else the last unmatched op, as on
 * a graph (a sink: its readers come after it and are matched). A second sink of a multi-sink
 * pattern is then searched among the readers of what the first bound instead of crossing all
 * e-nodes of a common op (concat) with each other. */
static void em_next(eq_ms *s) {
    int32_t pick = -1, anchored = -1;
    for (int32_t i = s->pat->n_ops - 1; i >= 0 && pick < 0; i--) {
        if (s->node[i] >= 0)
            continue;
        if (s->fixed[i] >= 0)
            pick = i;
        else if (anchored < 0 && em_anchor(s, i))
            anchored = i;
    }
    if (pick < 0)
        pick = anchored;
    for (int32_t i = s->pat->n_ops - 1; i >= 0 && pick < 0; i--)
        if (s->node[i] < 0)
            pick = i;
    if (pick < 0)
        em_finish(s);
    else
        em_op(s, pick);
}

/* egg's backoff scheduling: a source finding more than EQ_MATCH_LIMIT << (times banned) matches
 * in a round has them dropped and sits out EQ_BAN_ROUNDS << (times banned) rounds, so that a few
 * rules that grow the e-graph fast (concat/split regroupings) do not crowd out the rest. It stops
 * matching there (ban_at): the rest would be dropped. A sibling merge is not banned: it keeps a
 * selection (eq_select) of the matches found up to there, since banning it stops every n-way
 * merge (nasrnn --builtins minimal: the pairwise matmul merge g4_00345 finds 13,644 matches in
 * round 2 and was banned, 1.809x against backtracking's 2.509x). */
#define EQ_MATCH_LIMIT 1000
#define EQ_BAN_ROUNDS 2

static void eq_select(eq_ctx *c, int32_t before);

/* Every match of source src (rule src/2 in direction src%2) into c->m. */
static void eq_match_source(eq_ctx *c, int32_t src) {
    if (c->banned_until[src] > c->round)
        return;
    int32_t before = c->n_m;
    int64_t found = c->n_found;
    eq_ms *s = base_xcalloc(1, sizeof *s);
    rules_dir dir = (rules_dir)(src % 2);
    int32_t shift = c->times_banned[src] < 16 ? c->times_banned[src] : 16;
    /* a sibling merge in the first round and in chain passes: always a selection */
    int select_all = c->chain_from >= 0 || (c->merge[src] && c->round == 0);
    s->c = c;
    s->src = src;
    s->found0 = found;
    s->ban_at = select_all ? 0 : (int64_t)EQ_MATCH_LIMIT << shift;
    s->r = &c->rs->rules[src / 2];
    s->pat = dir == RULES_DIR_FWD ? &s->r->src : &s->r->dst;
    s->pside = dir == RULES_DIR_FWD ? RULES_SIDE_SRC : RULES_SIDE_DST;
    for (int32_t i = 0; i < RULES_MAX_OPS; i++)
        s->node[i] = s->fixed[i] = -1;
    for (int32_t v = 0; v < RULES_MAX_VARS; v++)
        s->var[v] = -1;
    for (int32_t i = 0; i < s->r->n_constraints; i++) {
        const rules_constraint *k = &s->r->constraints[i];
        if (k->side != s->pside || k->n_eq == 0 || k->op < 0 || k->op >= s->pat->n_ops)
            continue;
        if (k->key != PM_LIST)
            s->skip_key[k->op][k->key] = 1;
        else if (k->list_index >= 0 && k->list_index < OPS_MAX_LIST)
            s->skip_list[k->op][k->list_index] = 1;
    }
    for (int32_t i = 0; i < s->pat->n_ops; i++) {
        const rules_op *po = &s->pat->ops[i];
        const ops_desc *d = &ops_table[po->op];
        for (int32_t k = 0; k < po->n_in && k < RULES_MAX_IN; k++)
            s->rin[i][k] = po->in[k].kind == RULES_REF_VAR ? s->r->vars[po->in[k].idx].shape.rank
                                                           : s->pat->ops[po->in[k].idx].out_rank;
        int constrained = 0; /* as rules/match.c: no signature for an op the rule constrains */
        for (int32_t k = 0; k < PM_COUNT; k++)
            constrained |= s->skip_key[i][k];
        for (int32_t k = 0; k < d->n_params; k++) {
            ops_param_key key = d->params[k].key;
            if (key != PM_LIST && !s->skip_key[i][key] && !(d->window != OPS_WIN_NONE && eq_window_key(key)))
                s->quick[i][s->n_quick[i]++] = key;
        }
        for (int32_t k = 0; k < OPS_MAX_LIST; k++)
            constrained |= s->skip_list[i][k];
        s->sig[i] = constrained ? 0 : rules_op_sig(po);
    }
    double t0 = c->stats ? base_now() : 0.0;
    em_next(s);
    if (c->stats)
        c->stats[src].seconds += base_now() - t0;
    if (select_all || (c->merge[src] && c->n_found - found > (int64_t)EQ_MATCH_LIMIT << shift)) {
        eq_select(c, before);
    } else if (c->n_found - found > (int64_t)EQ_MATCH_LIMIT << shift) {
        c->n_m = before;
        c->banned_until[src] = c->round + 1 + (EQ_BAN_ROUNDS << shift);
        c->times_banned[src]++;
    }
    free(s);
}

/* --- applying a match ------------------------------------------------------------------------ */

/* The target side of match m typed on its bound shapes: parameters (constrained ones from the
 * variables' dims), output shapes; 0, or -1 when it does not type-check (rules_apply_plan_rule's
 * checks: constraints agree, shapes infer, no broadcasting, sizes within the limit). */
static int eq_target(eq_ctx *c, const eq_match *m, ops_params *p, int32_t *n_out,
                     ops_shape out[][OPS_MAX_OUTPUTS]) {
    const rules_rule *r = &c->rs->rules[m->src / 2];
    int fwd = m->src % 2 == RULES_DIR_FWD;
    const rules_graph *tgt = fwd ? &r->dst : &r->src;
    rules_side tside = fwd ? RULES_SIDE_DST : RULES_SIDE_SRC;
    for (int32_t j = 0; j < tgt->n_ops; j++)
        p[j] = tgt->ops[j].p;
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *k = &r->constraints[i];
        if (k->side != tside || k->n_eq == 0)
            continue;
        int64_t val = -1;
        for (int32_t e = 0; e < k->n_eq; e++) {
            if (m->var[k->eq[e].var] < 0)
                return -1;
            const ops_shape *sh = eq_shape(c, m->var[k->eq[e].var]);
            int32_t d = eq_var_dim(c, r, k->eq[e].var, m->var[k->eq[e].var], k->eq[e].dim);
            if (d < 0 || (e > 0 && sh->dims[d] != val))
                return -1;
            val = sh->dims[d];
        }
        if (k->key == PM_LIST && (k->list_index < 0 || k->list_index >= p[k->op].n_list))
            return -1;
        if (k->key == PM_LIST)
            p[k->op].list[k->list_index] = val;
        else
            p[k->op].v[k->key] = val;
    }
    for (int32_t j = 0; j < tgt->n_ops; j++) {
        const rules_op *ro = &tgt->ops[j];
        ops_shape in[RULES_MAX_IN];
        int32_t rin[RULES_MAX_IN], lift = 0; /* the op at its operands' lift (rules/match.h) */
        for (int32_t k = 0; k < ro->n_in; k++) {
            rules_ref ref = ro->in[k];
            if (ref.kind == RULES_REF_VAR && m->var[ref.idx] < 0)
                return -1;
            in[k] = ref.kind == RULES_REF_VAR ? *eq_shape(c, m->var[ref.idx]) : out[ref.idx][ref.out];
            rin[k] = ref.kind == RULES_REF_VAR ? r->vars[ref.idx].shape.rank : tgt->ops[ref.idx].out_rank;
            int32_t lk = rules_lift_of(&in[k], rin[k]);
            if (lk < 0)
                return -1;
            lift = lk > lift ? lk : lift;
        }
        for (int32_t i = 0; i < r->n_constraints && lift > 0; i++)
            if (r->constraints[i].side == tside && r->constraints[i].op == j && r->constraints[i].n_eq > 0 &&
                rules_lift_moves(ro->op, r->constraints[i].key))
                return -1;
        if (rules_lift_params(ro->op, &p[j], lift, &p[j]) < 0 ||
            ops_infer(ro->op, &p[j], ro->n_in, in, &n_out[j], out[j], NULL, 0) < 0 ||
            rules_lift_op(ro->op, ro->n_in, rin, in, ro->out_rank, n_out[j], out[j]) < 0)
            return -1;
        for (int32_t o = 0; o < n_out[j]; o++)
            if (ops_shape_numel(&out[j][o]) > c->max_elements)
                return -1;
        for (int32_t k = 0; k < ro->n_in && rules_match_broadcasts(ro->op); k++)
            if (!ops_shape_eq(&in[k], &out[j][0]))
                return -1;
    }
    return 0;
}

/* 1 if match m's target type-checks and its mapped outputs keep their shapes. */
static int eq_typechecks(eq_ctx *c, const eq_match *m) {
    const rules_rule *r = &c->rs->rules[m->src / 2];
    int fwd = m->src % 2 == RULES_DIR_FWD;
    ops_params p[RULES_MAX_OPS];
    int32_t n_out[RULES_MAX_OPS];
    ops_shape out[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    int ok = eq_target(c, m, p, n_out, out) == 0;
    for (int32_t i = 0; i < r->n_outputs && ok; i++) {
        rules_ref ps = fwd ? r->outputs[i].src : r->outputs[i].dst, ts = fwd ? r->outputs[i].dst : r->outputs[i].src;
        const ops_shape *a = ps.kind == RULES_REF_VAR ? eq_shape(c, m->var[ps.idx])
                                                      : &c->eg.cls[egraph_find(&c->eg, c->eg.nodes[m->node[ps.idx]].cls)].out[ps.out];
        const ops_shape *b = ts.kind == RULES_REF_VAR ? eq_shape(c, m->var[ts.idx]) : &out[ts.idx][ts.out];
        ok = ops_shape_eq(a, b);
    }
    return ok;
}

/* The class a rule reference names on the pattern side of match m. */
static int32_t eq_pattern_class(eq_ctx *c, const eq_match *m, const rules_graph *pat, rules_ref ref) {
    if (ref.kind == RULES_REF_VAR)
        return m->var[ref.idx];
    int32_t cls = egraph_find(&c->eg, c->eg.nodes[m->node[ref.idx]].cls);
    return pat->ops[ref.idx].n_out == 1 ? cls : eq_output_class(c, cls, ref.out);
}

static void eq_move_add(eq_move *mv, int32_t node) {
    if (mv->n < EQ_MOVE_MAX)
        mv->node[mv->n] = node;
    mv->n++; /* past EQ_MOVE_MAX: not kept as a move (eq_record_move) */
}

static void eq_record_move(eq_ctx *c, const eq_move *mv) {
    if (mv->n == 0 || mv->n > EQ_MOVE_MAX)
        return;
    c->mv = base_grow(c->mv, &c->cap_mv, c->n_mv + 1, sizeof *c->mv);
    c->mv[c->n_mv] = *mv;
    c->mv[c->n_mv].src = c->cur_src;
    c->mv[c->n_mv++].serial = c->cur_serial; /* eq_local's cascades follow applications */
}

/* Add the e-nodes of an op (and its outputs' projections) to the move; its class. */
static int32_t eq_add_op(eq_ctx *c, ops_type op, const ops_params *p, int32_t n_in, const int32_t *ch, int32_t n_out,
                         const ops_shape *out, eq_move *mv) {
    int32_t n = eq_add_node(c, EGRAPH_OP, op, 0.0f, p, n_in, ch, n_out, out, GRAPH_DT_F32);
    eq_move_add(mv, n);
    int32_t tc = egraph_find(&c->eg, c->eg.nodes[n].cls);
    for (int32_t k = 0; k < n_out && n_out > 1; k++)
        eq_move_add(mv, eq_add_node(c, EGRAPH_PROJ, k, 0.0f, NULL, 1, &tc, 1, &out[k], GRAPH_DT_F32));
    return tc;
}

/* Match m's target side added and each mapped output unioned with the pattern's. */
static void eq_apply_match(eq_ctx *c, const eq_match *m) {
    const rules_rule *r = &c->rs->rules[m->src / 2];
    int fwd = m->src % 2 == RULES_DIR_FWD;
    const rules_graph *tgt = fwd ? &r->dst : &r->src, *pat = fwd ? &r->src : &r->dst;
    ops_params p[RULES_MAX_OPS];
    int32_t n_out[RULES_MAX_OPS], tc[RULES_MAX_OPS];
    ops_shape out[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    c->res->candidates++;
    if (!eq_typechecks(c, m) || eq_target(c, m, p, n_out, out) < 0) {
        c->res->rejected++;
        return;
    }
    if (c->stats)
        c->stats[m->src].typechecked++;
    c->cur_src = m->src;
    c->cur_serial = c->n_serial++;
    eq_move mv = {0};
    for (int32_t j = 0; j < tgt->n_ops; j++) {
        const rules_op *ro = &tgt->ops[j];
        int32_t ch[RULES_MAX_IN];
        for (int32_t k = 0; k < ro->n_in; k++)
            ch[k] = ro->in[k].kind == RULES_REF_VAR ? m->var[ro->in[k].idx] : eq_output_class(c, tc[ro->in[k].idx], ro->in[k].out);
        tc[j] = eq_add_op(c, ro->op, &p[j], ro->n_in, ch, n_out[j], out[j], &mv);
    }
    int changed = 0;
    for (int32_t i = 0; i < r->n_outputs; i++) {
        rules_ref ps = fwd ? r->outputs[i].src : r->outputs[i].dst, ts = fwd ? r->outputs[i].dst : r->outputs[i].src;
        int32_t a = eq_pattern_class(c, m, pat, ps);
        int32_t b = ts.kind == RULES_REF_VAR ? m->var[ts.idx] : eq_output_class(c, tc[ts.idx], ts.out);
        changed |= egraph_union(&c->eg, a, b);
    }
    if (changed) {
        c->res->queued++;
        if (c->stats)
            c->stats[m->src].queued++;
        eq_record_move(c, &mv);
    }
}

/* --- the local cost of a match, and the selection of a sibling merge's matches --------------- */

/* The class of output k of tuple class tc if its projection is there already, else -1. */
static int32_t eq_proj_lookup(eq_ctx *c, int32_t tc, int32_t k) {
    tc = egraph_find(&c->eg, tc);
    if (c->eg.cls[tc].n_out == 1)
        return tc;
    int32_t n = egraph_lookup(&c->eg, EGRAPH_PROJ, k, 0.0f, NULL, 1, &tc);
    return n < 0 ? -1 : egraph_find(&c->eg, c->eg.nodes[n].cls);
}

/* 1 if applying match m would change the e-graph: it type-checks, and some e-node of its target
 * side is not there yet or some mapped output is not yet in the pattern's class. */
static int eq_news(eq_ctx *c, const eq_match *m) {
    const rules_rule *r = &c->rs->rules[m->src / 2];
    int fwd = m->src % 2 == RULES_DIR_FWD;
    const rules_graph *tgt = fwd ? &r->dst : &r->src;
    ops_params p[RULES_MAX_OPS];
    int32_t n_out[RULES_MAX_OPS], tc[RULES_MAX_OPS];
    ops_shape out[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    if (!eq_typechecks(c, m) || eq_target(c, m, p, n_out, out) < 0)
        return 0;
    for (int32_t j = 0; j < tgt->n_ops; j++) {
        const rules_op *ro = &tgt->ops[j];
        int32_t ch[RULES_MAX_IN];
        for (int32_t k = 0; k < ro->n_in; k++) {
            rules_ref ref = ro->in[k];
            ch[k] = ref.kind == RULES_REF_VAR ? m->var[ref.idx] : eq_proj_lookup(c, tc[ref.idx], ref.out);
            if (ch[k] < 0)
                return 1;
        }
        int32_t n = egraph_lookup(&c->eg, EGRAPH_OP, ro->op, 0.0f, &p[j], ro->n_in, ch);
        if (n < 0)
            return 1;
        tc[j] = egraph_find(&c->eg, c->eg.nodes[n].cls);
    }
    for (int32_t i = 0; i < r->n_outputs; i++) {
        rules_ref ps = fwd ? r->outputs[i].src : r->outputs[i].dst, ts = fwd ? r->outputs[i].dst : r->outputs[i].src;
        int32_t a = ps.kind == RULES_REF_VAR ? egraph_find(&c->eg, m->var[ps.idx])
                                             : eq_proj_lookup(c, c->eg.nodes[m->node[ps.idx]].cls, ps.out);
        int32_t b = ts.kind == RULES_REF_VAR ? egraph_find(&c->eg, m->var[ts.idx]) : eq_proj_lookup(c, tc[ts.idx], ts.out);
        if (a < 0 || b < 0 || a != b)
            return 1;
    }
    return 0;
}

/* The local cost change of match m in us: the cost model's cost of its target ops, less that of
 * the matched e-nodes (ops computed from weights alone count 0 on both sides); INFINITY if the
 * target does not type-check. Local: what else reads the matched e-nodes, and what lowering fuses
 * around them, is not seen. 0, or -1 with a message (the cost model). */
static int eq_delta(eq_ctx *c, const eq_match *m, double *delta) {
    const rules_rule *r = &c->rs->rules[m->src / 2];
    int fwd = m->src % 2 == RULES_DIR_FWD;
    const rules_graph *tgt = fwd ? &r->dst : &r->src, *pat = fwd ? &r->src : &r->dst;
    ops_params p[RULES_MAX_OPS];
    int32_t n_out[RULES_MAX_OPS];
    uint8_t wo[RULES_MAX_OPS];
    ops_shape out[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    *delta = INFINITY;
    if (!eq_typechecks(c, m) || eq_target(c, m, p, n_out, out) < 0)
        return 0;
    double d = 0.0, x;
    for (int32_t j = 0; j < tgt->n_ops; j++) {
        const rules_op *ro = &tgt->ops[j];
        ops_shape in[RULES_MAX_IN];
        wo[j] = 1;
        for (int32_t k = 0; k < ro->n_in; k++) {
            rules_ref ref = ro->in[k];
            in[k] = ref.kind == RULES_REF_VAR ? *eq_shape(c, m->var[ref.idx]) : out[ref.idx][ref.out];
            wo[j] &= ref.kind == RULES_REF_VAR ? c->eg.cls[egraph_find(&c->eg, m->var[ref.idx])].wo : wo[ref.idx];
        }
        if (ro->n_in == 0 || wo[j])
            continue;
        if (cost_node(c->cm, ro->op, &p[j], ro->n_in, in, n_out[j], out[j], &x, c->err, c->errlen) < 0)
            return -1;
        d += x;
    }
    for (int32_t j = 0; j < pat->n_ops; j++) {
        if (c->eg.cls[egraph_find(&c->eg, c->eg.nodes[m->node[j]].cls)].wo)
            continue;
        if (eq_node_cost(c, m->node[j], &x) < 0)
            return -1;
        d -= x;
    }
    *delta = d;
    return 0;
}

typedef struct {
    int64_t key;
    int32_t i;
} eq_pick;

/* Larger keys first, then found order. */
static int eq_pick_cmp(const void *a, const void *b) {
    const eq_pick *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Of the matches c->m[before..n_m) of one sibling merge, keep those that add something and share
 * no class of a matched e-node with a match kept before them, taking the matches over the newest
 * e-nodes first (the newest two e-node ids, lexicographically); the kept ones stay in found order.
 * Each class then merges once per round or pass: the merged pairs of one pass are merged with
 * each other in the next (pairs, then fours, then eights), where taking every match merges every
 * subset of the siblings (2^n merged ops for n siblings). */
static void eq_select(eq_ctx *c, int32_t before) {
    int32_t n = c->n_m - before, kept = 0;
    if (n <= 0)
        return;
    const rules_rule *r = &c->rs->rules[c->m[before].src / 2];
    int32_t n_ops = c->m[before].src % 2 == RULES_DIR_FWD ? r->src.n_ops : r->dst.n_ops;
    eq_pick *pk = base_xmalloc(sizeof *pk * (size_t)n);
    uint8_t *keep = base_xcalloc((size_t)n, 1), *claimed = base_xcalloc((size_t)c->eg.n_cls + 1, 1);
    for (int32_t i = 0; i < n; i++) {
        const eq_match *m = &c->m[before + i];
        int64_t hi = 0, lo = 0;
        for (int32_t j = 0; j < n_ops; j++) {
            if (m->node[j] > hi) {
                lo = hi;
                hi = m->node[j];
            } else if (m->node[j] > lo) {
                lo = m->node[j];
            }
        }
        pk[i] = (eq_pick){(hi << 31) | lo, i};
    }
    qsort(pk, (size_t)n, sizeof *pk, eq_pick_cmp);
    for (int32_t q = 0; q < n; q++) {
        const eq_match *m = &c->m[before + pk[q].i];
        int free_cls = 1;
        for (int32_t j = 0; j < n_ops && free_cls; j++)
            free_cls = !claimed[egraph_find(&c->eg, c->eg.nodes[m->node[j]].cls)];
        if (!free_cls || !eq_news(c, m))
            continue;
        for (int32_t j = 0; j < n_ops; j++)
            claimed[egraph_find(&c->eg, c->eg.nodes[m->node[j]].cls)] = 1;
        keep[pk[q].i] = 1;
    }
    for (int32_t i = 0; i < n; i++)
        if (keep[i])
            c->m[before + kept++] = c->m[before + i];
    c->n_m = before + kept;
    free(pk);
    free(keep);
    free(claimed);
}

/* --- built-in rewrites, found on the graph currently extracted ------------------------------- */

typedef struct {
    eq_ctx *c;
    const int32_t *tmap;   /* class of each tensor of the extracted graph */
    const graph *rep;
    int32_t src;
} eq_bi;

static int32_t eq_const_class(eq_ctx *c, const rules_apply_weight *w) {
    int32_t a = 0;
    while (a < c->n_shapes && !ops_shape_eq(&c->shapes[a], &w->shape))
        a++;
    if (a == c->n_shapes) {
        c->shapes = base_grow(c->shapes, &c->cap_shapes, c->n_shapes + 1, sizeof *c->shapes);
        c->shapes[c->n_shapes++] = w->shape;
    }
    return eq_add(c, EGRAPH_CONST, a, w->value, NULL, 0, NULL, 1, &w->shape, GRAPH_DT_F32);
}

static int eq_on_plan(rules_apply_plan *pl, void *user) {
    eq_bi *b = user;
    eq_ctx *c = b->c;
    int32_t wc[RULES_APPLY_MAX_WEIGHTS], tc[RULES_APPLY_MAX_NODES];
    if (c->stats)
        c->stats[b->src].found++, c->stats[b->src].typechecked++;
    c->res->candidates++;
    for (int32_t i = 0; i < pl->n_map; i++) {
        rules_aref r = pl->new_t[i];
        const ops_shape *s = r.kind == RULES_AREF_TENSOR ? &b->rep->tensors[r.idx].shape
                             : r.kind == RULES_AREF_NODE ? &pl->nodes[r.idx].out[r.out] : &pl->weights[r.idx].shape;
        if (!ops_shape_eq(s, &b->rep->tensors[pl->old_t[i]].shape)) {
            c->res->rejected++;
            return 0;
        }
    }
    c->cur_src = b->src;
    c->cur_serial = c->n_serial++;
    for (int32_t i = 0; i < pl->n_weights; i++)
        wc[i] = eq_const_class(c, &pl->weights[i]);
    eq_move mv = {0};
    for (int32_t j = 0; j < pl->n_nodes; j++) {
        const rules_apply_node *nd = &pl->nodes[j];
        int32_t ch[RULES_APPLY_MAX_IN];
        for (int32_t k = 0; k < nd->n_in; k++) {
            rules_aref r = nd->in[k];
            ch[k] = r.kind == RULES_AREF_TENSOR ? b->tmap[r.idx] : r.kind == RULES_AREF_NODE ? eq_output_class(c, tc[r.idx], r.out) : wc[r.idx];
        }
        tc[j] = eq_add_op(c, nd->op, &nd->p, nd->n_in, ch, nd->n_out, nd->out, &mv);
    }
    int changed = 0;
    for (int32_t i = 0; i < pl->n_map; i++) {
        rules_aref r = pl->new_t[i];
        int32_t nc = r.kind == RULES_AREF_TENSOR ? b->tmap[r.idx] : r.kind == RULES_AREF_NODE ? eq_output_class(c, tc[r.idx], r.out) : wc[r.idx];
        changed |= egraph_union(&c->eg, b->tmap[pl->old_t[i]], nc);
    }
    if (changed) {
        c->res->queued++;
        if (c->stats)
            c->stats[b->src].queued++;
        eq_record_move(c, &mv);
    }
    return eq_out_of_time(c);
}

/* The built-in moves (search_opts.moves) on the graph the e-graph gives now. */
static int eq_builtins(eq_ctx *c) {
    int any = 0;
    for (int32_t k = 0; k < REWRITE_COUNT; k++)
        any |= c->o->moves[k];
    if (!any)
        return 0;
    int32_t *choice = base_xmalloc(sizeof(int32_t) * (size_t)c->eg.n_cls), *tmap = NULL;
    graph *rep = NULL;
    int64_t counter = c->counter0;
    int rc = -1;
    rules_match_index ix;
    memset(&ix, 0, sizeof ix);
    if (eq_greedy(c, choice) < 0 || eq_to_graph(c, choice, &counter, &rep, &tmap) < 0)
        goto done;
    if (rules_match_index_build(&ix, rep, c->err, c->errlen) < 0)
        goto done;
    uint8_t *wo = base_xcalloc(1, (size_t)rep->n_tensors + 1);
    cost_weight_only(rep, wo);
    for (int32_t k = 0; k < REWRITE_COUNT; k++) {
        eq_bi b = {c, tmap, rep, c->n_rule_src + k};
        double t0 = c->stats ? base_now() : 0.0;
        if (c->o->moves[k])
            rewrite_find((rewrite_kind)k, &ix, wo, eq_on_plan, &b);
        if (c->stats)
            c->stats[b.src].seconds += base_now() - t0;
    }
    free(wo);
    rc = 0;
done:
    rules_match_index_free(&ix);
    graph_free(rep);
    free(tmap);
    free(choice);
    return rc;
}

/* --- the bias normal form on the e-graph (search_opts.split_bias) ---------------------------- */

/* The op of a conv2d or matmul without an activation in class cls, or OP_COUNT if none. */
static ops_type eq_fusable_op(eq_ctx *c, int32_t cls) {
    const egraph_class *cl = &c->eg.cls[egraph_find(&c->eg, cls)];
    for (int32_t i = 0; i < cl->n_nodes; i++) {
        const egraph_node *nd = &c->eg.nodes[cl->nodes[i]];
        if (nd->kind == EGRAPH_OP && rewrite_has_epilogue((ops_type)nd->a) && nd->p.v[PM_ACT] == OPS_ACT_NONE)
            return (ops_type)nd->a;
    }
    return OP_COUNT;
}

/* The class of the bias an ewadd e-node of part class p adds (the other operand: weight-only, a
 * channel vector of p along axis), that ewadd's class in *add; -1 if none (first by node id). */
static int32_t eq_part_bias(eq_ctx *c, int32_t p, int32_t axis, int32_t *add) {
    p = egraph_find(&c->eg, p);
    const egraph_class *cl = &c->eg.cls[p];
    for (int32_t i = 0; i < cl->n_parents; i++) {
        const egraph_node *nd = &c->eg.nodes[cl->parents[i]];
        if (nd->kind != EGRAPH_OP || nd->a != OP_EWADD || nd->n_ch != 2)
            continue;
        const int32_t *ch = egraph_children(&c->eg, cl->parents[i]);
        int32_t a0 = egraph_find(&c->eg, ch[0]), a1 = egraph_find(&c->eg, ch[1]);
        int32_t b = a0 == p ? a1 : a0, ac = egraph_find(&c->eg, nd->cls);
        if (b == p || !c->eg.cls[b].wo || !ops_shape_eq(&c->eg.cls[ac].out[0], &cl->out[0]) ||
            !rewrite_channel_vector(&c->eg.cls[b].out[0], &cl->out[0], axis))
            continue;
        *add = ac;
        return b;
    }
    return -1;
}

/* An op's e-node added to the move; its class, or -1 if its shapes do not infer. */
static int32_t eq_bias_op(eq_ctx *c, ops_type op, const ops_params *p, int32_t n_in, const int32_t *ch,
                          eq_move *mv) {
    ops_shape in[OPS_MAX_OUTPUTS + 1], out[OPS_MAX_OUTPUTS];
    int32_t n_out = 0;
    char err[128];
    for (int32_t k = 0; k < n_in; k++)
        in[k] = c->eg.cls[egraph_find(&c->eg, ch[k])].out[0];
    if (ops_infer(op, p, n_in, in, &n_out, out, err, sizeof err) < 0)
        return -1;
    return eq_add_op(c, op, p, n_in, ch, n_out, out, mv);
}

/* Union class a with b as one normal-form move (source -1: not a rewrite the summary counts). */
static void eq_bias_union(eq_ctx *c, const int32_t *a, const int32_t *b, int32_t n, const eq_move *mv) {
    int changed = 0;
    for (int32_t i = 0; i < n; i++)
        changed |= egraph_union(&c->eg, a[i], b[i]);
    if (changed)
        eq_record_move(c, mv);
}

/* rewrite_bias_normal's front move on split e-node n: split(y) of a conv2d or matmul class y
 * along its bias axis, some of whose part classes an ewadd of a weight-only channel bias reads
 * -> split(ewadd(y, concat(biases, zeros))), each part unioned with its add (or itself). */
static void eq_bias_front(eq_ctx *c, int32_t n) {
    const egraph_node nd = c->eg.nodes[n];
    int32_t y = egraph_find(&c->eg, egraph_children(&c->eg, n)[0]), tc = egraph_find(&c->eg, nd.cls);
    ops_type op = eq_fusable_op(c, y);
    const ops_shape ys = c->eg.cls[y].out[0];
    int32_t axis = (int32_t)nd.p.v[PM_AXIS], n_out = c->eg.cls[tc].n_out;
    if (op == OP_COUNT || c->eg.cls[y].wo || axis != rewrite_bias_axis(op, ys.rank))
        return;
    int32_t part[OPS_MAX_OUTPUTS], bias[OPS_MAX_OUTPUTS], add[OPS_MAX_OUTPUTS], rank = -1, n_abs = 0;
    for (int32_t i = 0; i < n_out; i++) {
        part[i] = eq_output_class(c, tc, i);
        bias[i] = eq_part_bias(c, part[i], axis, &add[i]);
        if (bias[i] >= 0 && rank >= 0 && c->eg.cls[bias[i]].out[0].rank != rank)
            bias[i] = -1;
        if (bias[i] >= 0) {
            rank = c->eg.cls[bias[i]].out[0].rank;
            n_abs++;
        }
    }
    if (n_abs == 0)
        return;
    c->cur_src = -1;
    c->cur_serial = c->n_serial++;
    eq_move mv = {0};
    int32_t off = ys.rank - rank, bc[OPS_MAX_OUTPUTS], olds[OPS_MAX_OUTPUTS], news[OPS_MAX_OUTPUTS];
    for (int32_t i = 0; i < n_out; i++) {
        if (bias[i] >= 0) {
            bc[i] = bias[i];
            continue;
        }
        rules_apply_weight z = {.value = 0.0f};
        int64_t d[OPS_MAX_DIMS];
        for (int32_t k = 0; k < rank; k++)
            d[k] = k + off == axis ? c->eg.cls[part[i]].out[0].dims[axis] : 1;
        z.shape = ops_shape_make(rank, d);
        bc[i] = eq_const_class(c, &z);
    }
    ops_params cp, ap;
    ops_params_default(OP_CONCAT, &cp);
    ops_params_default(OP_EWADD, &ap);
    cp.v[PM_AXIS] = axis - off;
    int32_t all = n_out > 1 ? eq_bias_op(c, OP_CONCAT, &cp, n_out, bc, &mv) : bc[0];
    int32_t ya[2] = {y, all};
    int32_t sum = all < 0 ? -1 : eq_bias_op(c, OP_EWADD, &ap, 2, ya, &mv);
    int32_t st = sum < 0 ? -1 : eq_bias_op(c, OP_SPLIT, &nd.p, 1, &sum, &mv);
    if (st < 0)
        return;
    for (int32_t i = 0; i < n_out; i++) {
        olds[i] = bias[i] >= 0 ? add[i] : part[i];
        news[i] = eq_output_class(c, st, i);
    }
    eq_bias_union(c, olds, news, n_out, &mv);
}

/* In class cls, a projection e-node of tuple class tup (any tuple if tup < 0): its output index,
 * the tuple in *tup; -1 if none. */
static int32_t eq_proj_of(eq_ctx *c, int32_t cls, int32_t *tup) {
    const egraph_class *cl = &c->eg.cls[egraph_find(&c->eg, cls)];
    for (int32_t i = 0; i < cl->n_nodes; i++) {
        const egraph_node *nd = &c->eg.nodes[cl->nodes[i]];
        int32_t t = nd->kind == EGRAPH_PROJ ? egraph_find(&c->eg, egraph_children(&c->eg, cl->nodes[i])[0]) : -1;
        if (t >= 0 && (*tup < 0 || t == *tup)) {
            *tup = t;
            return nd->a;
        }
    }
    return -1;
}

/* In class x, an ewadd e-node of a conv2d or matmul class (*y) and a weight-only channel bias
 * (*b) along axis; 0 if none. */
static int eq_biased(eq_ctx *c, int32_t x, int32_t axis, int32_t *y, int32_t *b) {
    const egraph_class *cl = &c->eg.cls[egraph_find(&c->eg, x)];
    for (int32_t i = 0; i < cl->n_nodes; i++) {
        const egraph_node *nd = &c->eg.nodes[cl->nodes[i]];
        if (nd->kind != EGRAPH_OP || nd->a != OP_EWADD || nd->n_ch != 2)
            continue;
        const int32_t *ch = egraph_children(&c->eg, cl->nodes[i]);
        for (int32_t s = 0; s < 2; s++) {
            int32_t t = egraph_find(&c->eg, ch[s]), w = egraph_find(&c->eg, ch[1 - s]);
            ops_type op = eq_fusable_op(c, t);
            const ops_shape *ts = &c->eg.cls[t].out[0];
            if (op != OP_COUNT && !c->eg.cls[t].wo && c->eg.cls[w].wo && axis == rewrite_bias_axis(op, ts->rank) &&
                ops_shape_eq(ts, &cl->out[0]) && rewrite_channel_vector(&c->eg.cls[w].out[0], ts, axis)) {
                *y = t;
                *b = w;
                return 1;
            }
        }
    }
    return 0;
}

/* rewrite_bias_normal's back move on concat e-node n: it reads every output of one split of
 * ewadd(y, b) once, permuted, on the split's axis -> ewadd(concat(split(y)'s parts, permuted),
 * concat(split(b)'s parts, permuted)), unioned with n's class. */
static void eq_bias_back(eq_ctx *c, int32_t n) {
    const egraph_node nd = c->eg.nodes[n];
    int32_t k = nd.n_ch, perm[OPS_MAX_OUTPUTS], tup = -1, in_order = 1;
    uint32_t seen = 0;
    if (k > OPS_MAX_OUTPUTS)
        return;
    for (int32_t i = 0; i < k; i++) {
        perm[i] = eq_proj_of(c, egraph_children(&c->eg, n)[i], &tup);
        if (perm[i] < 0 || (seen >> perm[i]) & 1u)
            return;
        seen |= 1u << perm[i];
        in_order &= perm[i] == i;
    }
    if (in_order || c->eg.cls[tup].n_out != k)
        return;
    const egraph_class *tcl = &c->eg.cls[tup];
    int32_t sn = -1, y = -1, b = -1, axis = (int32_t)nd.p.v[PM_AXIS];
    for (int32_t i = 0; i < tcl->n_nodes && sn < 0; i++) {
        const egraph_node *x = &c->eg.nodes[tcl->nodes[i]];
        if (x->kind == EGRAPH_OP && x->a == OP_SPLIT && x->p.v[PM_AXIS] == axis &&
            eq_biased(c, egraph_children(&c->eg, tcl->nodes[i])[0], axis, &y, &b))
            sn = tcl->nodes[i];
    }
    if (sn < 0)
        return;
    c->cur_src = -1;
    c->cur_serial = c->n_serial++;
    eq_move mv = {0};
    ops_params sp = c->eg.nodes[sn].p, cp = nd.p, ap;
    ops_params_default(OP_EWADD, &ap);
    int32_t off = c->eg.cls[y].out[0].rank - c->eg.cls[b].out[0].rank, yp[OPS_MAX_OUTPUTS], bp[OPS_MAX_OUTPUTS];
    int32_t ys = eq_bias_op(c, OP_SPLIT, &sp, 1, &y, &mv);
    sp.v[PM_AXIS] = axis - off;
    int32_t bs = ys < 0 ? -1 : eq_bias_op(c, OP_SPLIT, &sp, 1, &b, &mv);
    if (bs < 0)
        return;
    for (int32_t i = 0; i < k; i++) {
        yp[i] = eq_output_class(c, ys, perm[i]);
        bp[i] = eq_output_class(c, bs, perm[i]);
    }
    int32_t pair[2] = {eq_bias_op(c, OP_CONCAT, &cp, k, yp, &mv), -1};
    cp.v[PM_AXIS] = axis - off;
    pair[1] = pair[0] < 0 ? -1 : eq_bias_op(c, OP_CONCAT, &cp, k, bp, &mv);
    int32_t sum = pair[1] < 0 ? -1 : eq_bias_op(c, OP_EWADD, &ap, 2, pair, &mv);
    int32_t old = egraph_find(&c->eg, nd.cls);
    if (sum >= 0)
        eq_bias_union(c, &old, &sum, 1, &mv);
}

/* Both moves on every live split and concat e-node there is now (the classes canonical: after
 * egraph_rebuild); the e-nodes they add wait for the next round. */
static void eq_bias_normal(eq_ctx *c) {
    int32_t n_nodes = c->eg.n_nodes;
    for (int32_t n = 0; n < n_nodes && !eq_out_of_time(c); n++) {
        const egraph_node *nd = &c->eg.nodes[n];
        if (nd->dead || nd->kind != EGRAPH_OP)
            continue;
        if (nd->a == OP_SPLIT)
            eq_bias_front(c, n);
        else if (nd->a == OP_CONCAT)
            eq_bias_back(c, n);
    }
}

/* --- the driver ------------------------------------------------------------------------------ */

int eq_out_of_time(eq_ctx *c) {
    if (c->deadline <= 0.0)
        return 0;
    if (!c->res->time_limited && base_now() > c->deadline)
        c->res->time_limited = 1;
    return c->res->time_limited;
}

/* --- scheduling: application order, sibling merges and their chains ------------------------- */

/* 1 if ops a and b are the same op with the same parameters. */
static int eq_same_op(const rules_op *a, const rules_op *b) {
    return a->op == b->op && a->n_in == b->n_in && memcmp(a->p.v, b->p.v, sizeof a->p.v) == 0 &&
           a->p.n_list == b->p.n_list && memcmp(a->p.list, b->p.list, sizeof(int64_t) * (size_t)a->p.n_list) == 0;
}

/* 1 if rule source src is a sibling merge: two pattern ops of one kind and parameters read the
 * same variable in the same slot (siblings), neither reads the other, and a target op of that
 * kind reads the variable in that slot too -- so the merged op is again a sibling of the others
 * and the rule applies to its own result (the pairwise matmul and conv merges, g4_00345 and
 * g4_00330: an n-way merge is n-1 of them). A property of the rule, checked once. */
static int eq_sibling_merge(const eq_ctx *c, int32_t src) {
    const rules_rule *r = &c->rs->rules[src / 2];
    int fwd = src % 2 == RULES_DIR_FWD;
    const rules_graph *tgt = fwd ? &r->dst : &r->src, *pat = fwd ? &r->src : &r->dst;
    for (int32_t i = 0; i < pat->n_ops; i++)
        for (int32_t j = i + 1; j < pat->n_ops; j++) {
            const rules_op *a = &pat->ops[i], *b = &pat->ops[j];
            if (!eq_same_op(a, b) || eq_pat_reads(pat, i, j) || eq_pat_reads(pat, j, i))
                continue;
            for (int32_t k = 0; k < a->n_in; k++) {
                if (a->in[k].kind != RULES_REF_VAR || b->in[k].kind != RULES_REF_VAR || a->in[k].idx != b->in[k].idx)
                    continue;
                for (int32_t t = 0; t < tgt->n_ops; t++)
                    if (eq_same_op(&tgt->ops[t], a) && tgt->ops[t].in[k].kind == RULES_REF_VAR &&
                        tgt->ops[t].in[k].idx == a->in[k].idx)
                        return 1;
            }
        }
    return 0;
}

/* Apply m; a sibling merge that made e-nodes lowering the local cost goes on in the next chain
 * pass (c->chained). */
static void eq_apply_chaining(eq_ctx *c, const eq_match *m, int downhill) {
    int32_t before = c->eg.n_nodes;
    eq_apply_match(c, m);
    c->n_applied++;
    if (downhill && c->merge[m->src] && c->eg.n_nodes > before)
        c->chained[m->src] = 1;
}

#define EQ_CHAIN_PASSES 8

/* Chain passes, after the first round's matches are applied: each sibling merge that made
 * e-nodes in the last pass (or the round) is matched again, only for matches that hold an e-node
 * made since and lower the local cost, one per class (eq_select), and applied; until a pass makes
 * nothing, EQ_CHAIN_PASSES, or the node limit. The merges of 2^k siblings this builds within the
 * first round would take k more rounds, which the node limit does not leave (nasrnn's 8 gate
 * matmuls of a step: pairs, fours, eights). */
static void eq_chain(eq_ctx *c, int32_t from, int32_t limit) {
    for (int32_t pass = 0; pass < EQ_CHAIN_PASSES && c->eg.n_live < limit && !eq_out_of_time(c); pass++) {
        egraph_rebuild(&c->eg);
        eq_index(c);
        c->n_m = 0;
        c->downhill_only = 1;
        c->chain_from = from;
        for (int32_t src = 0; src < c->n_rule_src && !eq_out_of_time(c) && !c->work_cap_hit; src++)
            if (c->chained[src]) {
                c->chained[src] = 0;
                eq_match_source(c, src);
            }
        c->chain_from = -1;
        c->downhill_only = 0;
        from = c->eg.n_nodes;
        for (int32_t i = 0; i < c->n_m && c->eg.n_live < limit; i++)
            eq_apply_chaining(c, &c->m[i], 1);
        if (c->eg.n_nodes == from)
            break;
    }
    memset(c->chained, 0, (size_t)c->n_rule_src);
}

typedef struct {
    double delta;
    int32_t i;
} eq_ord;

/* Lower local cost first, then found order. */
static int eq_ord_cmp(const void *a, const void *b) {
    const eq_ord *x = a, *y = b;
    if (x->delta != y->delta)
        return x->delta < y->delta ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The round's matches applied, those that lower the local cost most first (eq_delta), until the
 * e-graph holds `limit` e-nodes, and those that do not lower it only while it holds fewer than
 * `up` (the node limit): where the limits cut a round, they cut the rewrites that add cost (nasrnn,
 * round 2: regroupings of concats and matmuls at +4 to +9 us each had crowded out the merges at
 * -5 us, later in rule order), and the e-graph past the node limit, which the extraction pays
 * for, grows by what can pay only. 0, or -1 with a message. */
static int eq_apply_round(eq_ctx *c, int32_t limit, int32_t up) {
    eq_ord *ord = base_xmalloc(sizeof *ord * ((size_t)c->n_m + 1));
    for (int32_t i = 0; i < c->n_m; i++) {
        ord[i].i = i;
        if (eq_delta(c, &c->m[i], &ord[i].delta) < 0) {
            free(ord);
            return -1;
        }
    }
    qsort(ord, (size_t)c->n_m, sizeof *ord, eq_ord_cmp);
    int32_t k = 0;
    for (; k < c->n_m && c->eg.n_live < limit; k++) {
        int downhill = ord[k].delta < -EQ_DELTA_EPS;
        if (!downhill && c->eg.n_live >= up)
            break; /* the rest do not lower the local cost either (sorted) */
        eq_apply_chaining(c, &c->m[ord[k].i], downhill);
    }
    c->round_cut = k < c->n_m;
    free(ord);
    return 0;
}

/* One round: match every usable rule direction, apply the matches (and, in the first round, the
 * chain passes), the built-in moves, rebuild. Returns 1 if the e-graph changed, 0 if saturated,
 * -1 on error. */
static int eq_round(eq_ctx *c) {
    int32_t nodes_before = c->eg.n_nodes, n = c->o->eqsat_nodes;
    eq_index(c);
    c->n_m = c->n_applied = 0;
    c->tries_round = 0;
    c->work_cap_hit = 0;
    for (int32_t src = 0; src < c->n_rule_src && !eq_out_of_time(c) && !c->work_cap_hit; src++)
        if (c->src_ok[src] && eq_possible(c, &c->needs[src]))
            eq_match_source(c, src);
    int32_t limit = n > 0 ? 2 * n : INT32_MAX;
    if (eq_apply_round(c, limit, n > 0 ? n : INT32_MAX) < 0)
        return -1;
    if (c->round == 0 && (n <= 0 || c->eg.n_live < n))
        eq_chain(c, nodes_before, limit);
    int changed = c->eg.n_unions > 0;
    if (c->eg.n_live < limit && !eq_out_of_time(c)) {
        egraph_rebuild(&c->eg); /* the extraction the built-ins run on needs canonical classes */
        if (eq_builtins(c) < 0)
            return -1;
        if (c->o->split_bias) { /* the bias normal form, on the e-graph's own classes and parents */
            egraph_rebuild(&c->eg);
            eq_bias_normal(c);
        }
    }
    changed |= c->eg.n_nodes > nodes_before || c->eg.n_unions > 0;
    egraph_rebuild(&c->eg);
    return changed;
}

/* The rewrites the result uses: the sources of the applications whose e-nodes it holds. */
static void eq_tally(eq_ctx *c, const int32_t *choice, const uint8_t *reached) {
    search_result *res = c->res;
    int32_t n_src = c->n_rule_src + REWRITE_COUNT;
    int32_t *count = base_xcalloc((size_t)n_src + 1, sizeof *count);
    uint8_t *seen = base_xcalloc((size_t)c->n_serial + 1, 1);
    for (int32_t k = 0; k < c->eg.n_cls; k++) {
        int32_t n = reached[k] ? choice[k] : -1;
        if (n < 0 || c->meta[n].src < 0 || seen[c->meta[n].serial])
            continue;
        seen[c->meta[n].serial] = 1;
        count[c->meta[n].src]++;
    }
    free(res->applied);
    res->applied = base_xcalloc((size_t)n_src + 1, sizeof *res->applied);
    res->n_applied = 0;
    for (int32_t i = 0; i < n_src; i++) {
        if (c->stats)
            c->stats[i].applied = count[i];
        if (!count[i])
            continue;
        search_applied *a = &res->applied[res->n_applied++];
        a->name = i < c->n_rule_src ? c->rs->rules[i / 2].id : rewrite_names[i - c->n_rule_src];
        a->reverse = i < c->n_rule_src ? i % 2 : 0;
        a->count = count[i];
    }
    search_sort_applied(res); /* the order backtracking reports in */
    free(count);
    free(seen);
}

/* Rule directions the search uses (search_rule_sources), their needs and which are sibling merges,
 * for c->rs: what a context computes once per rule set. */
static void eq_ctx_sources(eq_ctx *c) {
    c->src_ok = base_xcalloc((size_t)c->n_rule_src + 1, 1);
    c->needs = base_xcalloc((size_t)c->n_rule_src + 1, sizeof *c->needs);
    uint8_t comm[OP_COUNT];
    search_rule_sources(c->rs, c->src_ok, comm);
    for (int32_t s = 0; s < c->n_rule_src; s++)
        if (c->src_ok[s])
            rules_match_needs_of(&c->rs->rules[s / 2], (rules_dir)(s % 2), &c->needs[s]);
    c->merge = base_xcalloc((size_t)c->n_rule_src + 1, 1);
    for (int32_t s = 0; s < c->n_rule_src; s++)
        c->merge[s] = c->src_ok[s] && eq_sibling_merge(c, s);
}

/* The context, without its rule sources (eq_ctx_sources). */
static void eq_ctx_init_base(eq_ctx *c, const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o,
                             search_result *res) {
    static const rules_set empty;
    memset(c, 0, sizeof *c);
    egraph_init(&c->eg);
    c->g = g;
    c->rs = rs ? rs : &empty;
    c->cm = cm;
    c->o = o;
    c->res = res;
    c->n_rule_src = 2 * c->rs->n_rules;
    c->chained = base_xcalloc((size_t)c->n_rule_src + 1, 1);
    c->chain_from = -1;
    c->edges = base_xcalloc(RULES_EDGE_WORDS, sizeof *c->edges);
    c->banned_until = base_xcalloc((size_t)c->n_rule_src + 1, sizeof *c->banned_until);
    c->times_banned = base_xcalloc((size_t)c->n_rule_src + 1, 1);
    c->max_elements = g->max_elements > 0 ? g->max_elements : GRAPH_DEFAULT_MAX_ELEMENTS;
    c->max_matches = o->eqsat_nodes > 0 ? 2 * o->eqsat_nodes : 80000; /* a round adds at most that many */
    c->cur_src = -1;
    res->n_rules = c->rs->n_rules;
    if (o->stats) {
        free(res->stats);
        res->n_stats = c->n_rule_src + REWRITE_COUNT;
        res->stats = c->stats = base_xcalloc((size_t)res->n_stats, sizeof *res->stats);
    }
}

static void eq_ctx_init(eq_ctx *c, const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o,
                        search_result *res) {
    eq_ctx_init_base(c, g, rs, cm, o, res);
    eq_ctx_sources(c);
}

static void eq_ctx_free(eq_ctx *c) {
    egraph_free(&c->eg);
    free(c->src_ok);
    free(c->needs);
    free(c->t_cls);
    free(c->meta);
    free(c->shapes);
    free(c->op_node);
    free(c->edges);
    free(c->node_sig);
    free(c->by_sig);
    free(c->by_edge);
    free(c->m);
    free(c->mv);
    free(c->banned_until);
    free(c->times_banned);
    free(c->merge);
    free(c->chained);
    free(c->enc_mark);
    free(c->enc_q);
}

/* Whether another round may start: not past the time or node limit, nor after a round the node
 * limits cut (eq_apply_round: it would have passed them), nor once the rounds so far found twice
 * the node limit in matches: rounds of rules that mostly union classes already there
 * (commutations, regroupings) add few e-nodes but cost matching time without end (bert_mini.onnx
 * --builtins minimal at 8000 e-nodes: 6 rounds, 1.76 s of CPU; 4 rounds with this, same cost).
 * Counted, not timed: the same rounds on any machine. */
static int eq_may_round(eq_ctx *c) {
    const search_opts *o = c->o;
    if (eq_out_of_time(c) || (o->eqsat_nodes > 0 && c->eg.n_live >= o->eqsat_nodes) || c->round_cut)
        return 0;
    return !(o->eqsat_nodes > 0 && c->n_found > 2 * (int64_t)o->eqsat_nodes);
}

/* Rounds until saturation or a limit. */
static int eq_saturate(eq_ctx *c) {
    const search_opts *o = c->o;
    double t0 = base_now();
    clock_t c0 = clock(); /* the progress lines' CPU time: wall time means little on a loaded machine */
    for (int32_t it = 0; it < o->eqsat_iters; it++) {
        if (!eq_may_round(c))
            break;
        c->round = it;
        int rc = eq_round(c);
        if (rc < 0)
            return -1;
        c->res->eq_iters++;
        c->res->expanded++;
        if (o->progress) {
            fprintf(o->progress, "eqsat: round %d: %d e-nodes, %d matches, %.2f s (%.2f s cpu)\n", (int)it + 1,
                    (int)c->eg.n_live, (int)c->n_applied, base_now() - t0, (double)(clock() - c0) / CLOCKS_PER_SEC);
            fflush(o->progress);
        }
        if (!rc) {
            c->res->eq_saturated = 1;
            break;
        }
    }
    return 0;
}

/* The source graph's own choice: in each class its earliest e-node made from the graph (ids
 * follow a topological order, so the choice is acyclic), improved by the local search too. It
 * keeps the result from costing more than the input where greedy's tree cost misleads it. */
static int eq_from_input(eq_ctx *c, int32_t *choice, double *cost, double beat) {
    for (int32_t k = 0; k < c->eg.n_cls; k++)
        choice[k] = -1;
    for (int32_t n = 0; n < c->n_init; n++) {
        int32_t m = egraph_live(&c->eg, n), k = egraph_find(&c->eg, c->eg.nodes[m].cls);
        if (choice[k] < 0 || m < choice[k])
            choice[k] = m;
    }
    if (eq_eval(c, choice, cost) < 0)
        return -1;
    return *cost < beat && eq_local(c, choice, cost) < 0 ? -1 : 0; /* searched only from a better start */
}

/* The extraction: greedy, improved by local search, the input's choice improved the same way, and
 * the exact one where it runs; the cheapest into choice (*cost as eq_eval gives it). */
static int eq_extract(eq_ctx *c, int32_t *choice, double *cost) {
    if (eq_greedy(c, choice) < 0 || eq_eval(c, choice, cost) < 0)
        return -1;
    c->res->eq_extraction = "greedy";
    double greedy = *cost;
    if (eq_local(c, choice, cost) < 0)
        return -1;
    if (*cost < greedy)
        c->res->eq_extraction = "greedy+local";
    int32_t *alt = base_xmalloc(sizeof(int32_t) * (size_t)c->eg.n_cls);
    double ac;
    if (eq_from_input(c, alt, &ac, *cost) < 0) {
        free(alt);
        return -1;
    }
    if (ac < *cost) {
        memcpy(choice, alt, sizeof(int32_t) * (size_t)c->eg.n_cls);
        *cost = ac;
        c->res->eq_extraction = "input+local";
    }
    free(alt);
    int32_t *exact = base_xmalloc(sizeof(int32_t) * (size_t)c->eg.n_cls);
    memcpy(exact, choice, sizeof(int32_t) * (size_t)c->eg.n_cls);
    double ec = *cost;
    clock_t t0 = clock();
    int rc = eq_exact(c, exact, &ec);
    if (c->o->progress) {
        char ex[64];
        snprintf(ex, sizeof ex, rc > 0 ? "%.2f us" : "none (too large, or no answer within its limit)", ec);
        fprintf(c->o->progress, "eqsat: extraction: greedy %.2f us, local search %.2f us (best start), exact %s (%.2f s cpu)\n",
                greedy, *cost, ex, (double)(clock() - t0) / CLOCKS_PER_SEC);
        fflush(c->o->progress);
    }
    if (rc > 0 && ec <= *cost) {
        memcpy(choice, exact, sizeof(int32_t) * (size_t)c->eg.n_cls);
        *cost = ec;
        c->res->eq_extraction = "exact (z3)";
    }
    free(exact);
    return rc < 0 ? -1 : 0;
}

int eqsat_run(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o, const char *prefix,
              int64_t *counter, graph **best, search_result *res, char *err, size_t errlen) {
    eq_ctx c;
    double t0 = base_now();
    clock_t c0 = clock();
    eq_ctx_init(&c, g, rs, cm, o, res);
    c.prefix = prefix;
    c.counter0 = *counter;
    c.err = err;
    c.errlen = errlen;
    c.deadline = o->time_limit_s > 0 ? t0 + o->time_limit_s : 0.0;
    *best = NULL;
    int rc = -1;
    int32_t *choice = NULL;
    if (eq_graph_cost(&c, g, &res->cost_before) < 0 || eq_from_graph(&c) < 0)
        goto done;
    res->nodes_before = g->n_nodes;
    c.n_init = c.eg.n_nodes;
    egraph_rebuild(&c.eg);
    if (eq_saturate(&c) < 0)
        goto done;
    choice = base_xmalloc(sizeof(int32_t) * (size_t)c.eg.n_cls);
    double est;
    if (eq_extract(&c, choice, &est) < 0 || eq_to_graph(&c, choice, counter, best, NULL) < 0)
        goto done;
    if (eq_graph_cost(&c, *best, &res->cost_after) < 0)
        goto done;
    res->nodes_after = (*best)->n_nodes;
    res->eq_nodes = c.eg.n_live;
    for (int32_t k = 0; k < c.eg.n_cls; k++)
        res->eq_classes += egraph_find(&c.eg, k) == k;
    uint8_t *reached = base_xcalloc((size_t)c.eg.n_cls + 1, 1);
    eq_reached(&c, choice, reached);
    eq_tally(&c, choice, reached);
    free(reached);
    rc = 0;
done:
    if (rc < 0) {
        graph_free(*best);
        *best = NULL;
    }
    free(choice);
    eq_ctx_free(&c);
    res->seconds = res->search_seconds = base_now() - t0;
    if (o->progress && rc == 0) {
        fprintf(o->progress, "eqsat: search %.2f s (%.2f s cpu): %.2f us -> %.2f us\n", res->search_seconds,
                (double)(clock() - c0) / CLOCKS_PER_SEC, res->cost_before, res->cost_after);
        fflush(o->progress);
    }
    return rc;
}

/* --- proofs by rewriting --------------------------------------------------------------------------- */

struct eqsat_prover {
    eq_ctx src; /* only its rule sources: src_ok, needs, merge */
};

eqsat_prover *eqsat_prover_new(const rules_set *rs) {
    eqsat_prover *p = base_xcalloc(1, sizeof *p);
    static const rules_set empty;
    p->src.rs = rs ? rs : &empty;
    p->src.n_rule_src = 2 * p->src.rs->n_rules;
    eq_ctx_sources(&p->src);
    return p;
}

void eqsat_prover_free(eqsat_prover *p) {
    if (!p)
        return;
    free(p->src.src_ok);
    free(p->src.needs);
    free(p->src.merge);
    free(p);
}

int eqsat_prover_uses(const eqsat_prover *p, int32_t r) {
    return (p->src.src_ok[2 * r] ? 1 : 0) | (p->src.src_ok[2 * r + 1] ? 2 : 0);
}

/* Whether every pair is in one class. */
static int eq_all_joined(eq_ctx *c, int32_t n, const int32_t *a, const int32_t *b, uint8_t *joined) {
    int all = 1;
    for (int32_t i = 0; i < n; i++) {
        joined[i] = egraph_find(&c->eg, c->t_cls[a[i]]) == egraph_find(&c->eg, c->t_cls[b[i]]);
        all &= joined[i];
    }
    return all;
}

int eqsat_joins(eqsat_prover *p, const graph *g, const uint8_t *off, cost_model *cm, const search_opts *o, int32_t n,
                const int32_t *a, const int32_t *b, uint8_t *joined, int32_t *rounds, char *err, size_t errlen) {
    search_opts so = *o;
    memset(so.moves, 0, sizeof so.moves);
    so.split_bias = 0;
    so.stats = 0;
    so.progress = NULL;
    search_result res;
    memset(&res, 0, sizeof res);
    eq_ctx c;
    eq_ctx_init_base(&c, g, p->src.rs, cm, &so, &res);
    c.err = err;
    c.errlen = errlen;
    c.deadline = so.time_limit_s > 0 ? base_now() + so.time_limit_s : 0.0;
    c.src_ok = base_xmalloc((size_t)c.n_rule_src + 1);
    for (int32_t s = 0; s < c.n_rule_src; s++)
        c.src_ok[s] = p->src.src_ok[s] && !(off && off[s / 2]);
    c.needs = p->src.needs; /* borrowed */
    c.merge = p->src.merge;
    *rounds = 0;
    int rc = -1;
    if (eq_from_graph(&c) < 0)
        goto done;
    c.n_init = c.eg.n_nodes;
    egraph_rebuild(&c.eg);
    rc = 0;
    for (int32_t it = 0; it < so.eqsat_iters && !eq_all_joined(&c, n, a, b, joined) && eq_may_round(&c); it++) {
        c.round = it;
        int changed = eq_round(&c);
        if (changed < 0) {
            rc = -1;
            break;
        }
        ++*rounds;
        if (!changed)
            break;
    }
    if (rc == 0)
        eq_all_joined(&c, n, a, b, joined);
done:
    c.needs = NULL;
    c.merge = NULL;
    eq_ctx_free(&c);
    search_result_free(&res);
    return rc;
}

/* One move: the rule directions tried on `from` until one application gives `target`'s graph. */
typedef struct {
    const rules_set *rs;
    rules_match_index *ix;
    rules_apply_plan pl;
    uint64_t target;
    const char *prefix;
    int found;
} eq_one_move;

static int eq_on_move(const rules_match *m, void *user) {
    eq_one_move *x = user;
    char err[256];
    graph *out = NULL;
    int64_t counter = 0;
    if (rules_apply_plan_rule(x->rs, m, x->ix, &x->pl, err, sizeof err) < 0 ||
        rules_apply_check(x->ix, &x->pl, err, sizeof err) < 0 ||
        rules_apply_run(x->ix, &x->pl, x->prefix, &counter, &out, err, sizeof err) < 0)
        return 0; /* not a move here (does not type-check, would close a cycle) */
    x->found = graph_hash(out) == x->target;
    graph_free(out);
    return x->found;
}

int eqsat_one_move(eqsat_prover *p, const graph *from, const graph *to, const uint8_t *off, int *found, char *err,
                   size_t errlen) {
    eq_one_move x;
    memset(&x, 0, sizeof x);
    x.rs = p->src.rs;
    x.target = graph_hash(to);
    char prefix[16];
    x.prefix = rules_apply_prefix(from, prefix, sizeof prefix);
    rules_match_index ix;
    if (rules_match_index_build(&ix, from, err, errlen) < 0)
        return -1;
    x.ix = &ix;
    for (int32_t s = 0; s < p->src.n_rule_src && !x.found; s++)
        if (p->src.src_ok[s] && !(off && off[s / 2]) && rules_match_possible(&p->src.needs[s], &ix))
            rules_match_find(x.rs, s / 2, (rules_dir)(s % 2), &ix, eq_on_move, &x);
    rules_apply_plan_clear(&x.pl);
    rules_match_index_free(&ix);
    *found = x.found;
    return 0;
}
