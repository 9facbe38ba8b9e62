/* eqsat_extract.c: extraction for the equality-saturation search (eqsat.h): one e-node per class
 * the outputs reach, never a cycle, under the backtracking search's cost model. Greedy (eq_greedy)
 * is Knuth's generalisation of Dijkstra: a class is settled at its cheapest e-node whose children
 * are settled (tree cost), so the choice is a DAG by construction. The true cost of a choice
 * (eq_eval) counts each node once, weight-only ones and (lower_cost) the ones lowering absorbs as
 * free. Tree cost counts a shared node once per reader, so greedy never takes a merge; the local
 * search (eq_local) tries the recorded rewrites as moves (all the e-nodes one application added,
 * pairs where the second reads what the first chose, and cascades: a move with the moves that made
 * the classes it lands in, as a merge of merges needs), and single-class switches, keeping what
 * lowers the true cost; bounded in evaluations, not time. Also: the graph of a choice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "eqsat_impl.h"

/* Node n's own cost (0 for leaves and projections), memoised. */
int eq_node_cost(eq_ctx *c, int32_t n, double *out) {
    const egraph_node *nd = &c->eg.nodes[n];
    if (nd->kind != EGRAPH_OP) {
        *out = 0.0;
        return 0;
    }
    if (!isnan(c->meta[n].cost)) {
        *out = c->meta[n].cost;
        return 0;
    }
    ops_shape in[OPS_MAX_INPUTS];
    const egraph_class *cl = &c->eg.cls[egraph_find(&c->eg, nd->cls)];
    for (int32_t k = 0; k < nd->n_ch; k++)
        in[k] = c->eg.cls[egraph_find(&c->eg, egraph_children(&c->eg, n)[k])].out[0];
    if (cost_node(c->cm, (ops_type)nd->a, &nd->p, nd->n_ch, in, cl->n_out, cl->out, out, c->err, c->errlen) < 0)
        return -1;
    c->meta[n].cost = *out;
    return 0;
}

/* rewrite.c's test that b is a bias along axis ch of out. */
static int eq_channel_vector(const ops_shape *b, const ops_shape *out, int32_t ch) {
    if (b->rank > out->rank)
        return 0;
    int32_t off = out->rank - b->rank;
    for (int32_t i = 0; i < b->rank; i++)
        if (b->dims[i] != (i + off == ch ? out->dims[ch] : 1))
            return 0;
    return off <= ch;
}

/* What lowering absorbs, on a choice: node n reading class t's chosen node. */
typedef struct {
    const int32_t *choice;
    const int32_t *readers;   /* NULL: every class taken as read once (greedy's optimism) */
    const uint8_t *is_out;
    const uint8_t *wo;        /* per class */
    const uint8_t *fre;       /* per class: its chosen node is absorbed */
} eq_low;

static int eq_only_reader(const eq_low *l, int32_t t) { return !l->readers || (l->readers[t] == 1 && !l->is_out[t]); }

static int eq_fusable_producer(eq_ctx *c, const eq_low *l, int32_t t) {
    int32_t p = l->choice[t];
    if (p < 0 || !eq_only_reader(l, t))
        return 0;
    const egraph_node *pd = &c->eg.nodes[p];
    return pd->kind == EGRAPH_OP && rewrite_has_epilogue((ops_type)pd->a) && pd->p.v[PM_ACT] == OPS_ACT_NONE;
}

static int eq_lowered(eq_ctx *c, const eq_low *l, int32_t n) {
    const egraph_node *nd = &c->eg.nodes[n];
    const int32_t *ch = egraph_children(&c->eg, n);
    if (nd->kind != EGRAPH_OP)
        return 0;
    if (nd->a == OP_EWADD && nd->n_ch == 2) {
        for (int32_t s = 0; s < 2; s++) {
            int32_t t = egraph_find(&c->eg, ch[s]), b = egraph_find(&c->eg, ch[1 - s]);
            if (t == b || !l->wo[b] || !eq_fusable_producer(c, l, t))
                continue;
            const ops_shape *os = &c->eg.cls[t].out[0];
            int32_t axis = rewrite_bias_axis((ops_type)c->eg.nodes[l->choice[t]].a, os->rank);
            if (ops_shape_eq(&c->eg.cls[egraph_find(&c->eg, nd->cls)].out[0], os) &&
                eq_channel_vector(&c->eg.cls[b].out[0], os, axis))
                return 1;
        }
        return 0;
    }
    if (rewrite_fusable_act_p((ops_type)nd->a, &nd->p) == OPS_ACT_NONE || nd->n_ch < 1)
        return 0;
    int32_t t = egraph_find(&c->eg, ch[0]);
    if (eq_fusable_producer(c, l, t))
        return 1;
    int32_t p = l->choice[t];
    return p >= 0 && c->eg.nodes[p].kind == EGRAPH_OP && c->eg.nodes[p].a == OP_EWADD && eq_only_reader(l, t) &&
           l->fre[t];
}

/* --- greedy ---------------------------------------------------------------------------------- */

typedef struct {
    double cost;
    int32_t cls;
} eq_hent;

typedef struct {
    eq_hent *h;
    int32_t n, cap;
} eq_heap;

static int eq_hless(eq_hent a, eq_hent b) { return a.cost < b.cost || (a.cost == b.cost && a.cls < b.cls); }

static void eq_hpush(eq_heap *q, eq_hent e) {
    q->h = base_grow(q->h, &q->cap, q->n + 1, sizeof *q->h);
    int32_t i = q->n++;
    q->h[i] = e;
    while (i > 0 && eq_hless(q->h[i], q->h[(i - 1) / 2])) {
        eq_hent t = q->h[i];
        q->h[i] = q->h[(i - 1) / 2];
        q->h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static eq_hent eq_hpop(eq_heap *q) {
    eq_hent top = q->h[0];
    q->h[0] = q->h[--q->n];
    for (int32_t i = 0;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && eq_hless(q->h[l], q->h[m]))
            m = l;
        if (r < q->n && eq_hless(q->h[r], q->h[m]))
            m = r;
        if (m == i)
            break;
        eq_hent t = q->h[i];
        q->h[i] = q->h[m];
        q->h[m] = t;
        i = m;
    }
    return top;
}

typedef struct {
    eq_ctx *c;
    int32_t *choice;
    double *cc;        /* [n_cls] best tree cost */
    uint8_t *fin, *fre;
    uint8_t *cwo;      /* [n_cls] the classes' weight-only flags */
    eq_heap q;
} eq_gr;

/* The distinct children classes of node n into out; their count. */
static int32_t eq_distinct_children(eq_ctx *c, int32_t n, int32_t *out) {
    int32_t m = 0;
    const int32_t *ch = egraph_children(&c->eg, n);
    for (int32_t k = 0; k < c->eg.nodes[n].n_ch; k++) {
        int32_t d = egraph_find(&c->eg, ch[k]), j = 0;
        while (j < m && out[j] != d)
            j++;
        if (j == m)
            out[m++] = d;
    }
    return m;
}

/* Node n, all of whose children are settled, offered to its class. */
static int eq_relax(eq_gr *s, int32_t n) {
    eq_ctx *c = s->c;
    int32_t k = egraph_find(&c->eg, c->eg.nodes[n].cls);
    if (s->fin[k])
        return 0;
    int32_t d[OPS_MAX_INPUTS], nd = eq_distinct_children(c, n, d);
    double own = 0.0, total = 0.0;
    int wo = c->eg.nodes[n].kind == EGRAPH_OP, fre = 0;
    for (int32_t j = 0; j < nd; j++)
        wo &= c->eg.cls[d[j]].wo, total += s->cc[d[j]];
    if (!wo && c->o->lower_cost) {
        eq_low l = {s->choice, NULL, NULL, s->cwo, s->fre};
        fre = eq_lowered(c, &l, n);
    }
    if (!wo && !fre && eq_node_cost(c, n, &own) < 0)
        return -1;
    total += own;
    if (total < s->cc[k] || (total == s->cc[k] && n < s->choice[k])) {
        s->cc[k] = total;
        s->choice[k] = n;
        s->fre[k] = (uint8_t)fre;
        eq_hpush(&s->q, (eq_hent){total, k});
    }
    return 0;
}

int eq_greedy(eq_ctx *c, int32_t *choice) {
    egraph *eg = &c->eg;
    eq_gr s = {c, choice, base_xmalloc(sizeof(double) * (size_t)eg->n_cls), base_xcalloc((size_t)eg->n_cls, 1),
               base_xcalloc((size_t)eg->n_cls, 1), base_xmalloc((size_t)eg->n_cls + 1), {0}};
    for (int32_t k = 0; k < eg->n_cls; k++)
        s.cwo[k] = eg->cls[egraph_find(eg, k)].wo;
    int32_t *pend = base_xcalloc((size_t)eg->n_nodes + 1, sizeof *pend), d[OPS_MAX_INPUTS];
    int rc = 0;
    for (int32_t k = 0; k < eg->n_cls; k++)
        s.cc[k] = INFINITY, choice[k] = -1;
    for (int32_t n = 0; n < eg->n_nodes && rc == 0; n++)
        if (!eg->nodes[n].dead && (pend[n] = eq_distinct_children(c, n, d)) == 0)
            rc = eq_relax(&s, n);
    while (s.q.n > 0 && rc == 0) {
        eq_hent e = eq_hpop(&s.q);
        if (s.fin[e.cls] || e.cost != s.cc[e.cls])
            continue;
        s.fin[e.cls] = 1;
        const egraph_class *cl = &eg->cls[e.cls];
        for (int32_t u = 0; u < cl->n_parents && rc == 0; u++)
            if (--pend[cl->parents[u]] == 0)
                rc = eq_relax(&s, cl->parents[u]);
    }
    free(pend);
    free(s.cc);
    free(s.fin);
    free(s.fre);
    free(s.cwo);
    free(s.q.h);
    return rc;
}

/* --- the true cost of a choice --------------------------------------------------------------- */

/* Scratch of eq_walk/eq_eval, for the classes of one e-graph; stamped, so never cleared. */
typedef struct {
    uint32_t stamp;
    uint32_t *mark;
    uint8_t *state;           /* 1: on the walk's stack, 2: done */
    int32_t *order, n_order;  /* the reached classes, children first */
    int32_t *readers;
    uint8_t *is_out, *wo, *fre;
    int32_t *stack, *next;
} eq_evs;

static void eq_evs_init(eq_evs *v, int32_t n_cls) {
    size_t n = (size_t)n_cls + 1;
    memset(v, 0, sizeof *v);
    v->mark = base_xcalloc(n, sizeof *v->mark);
    v->state = base_xcalloc(n, 1);
    v->order = base_xmalloc(n * sizeof *v->order);
    v->readers = base_xmalloc(n * sizeof *v->readers);
    v->is_out = base_xcalloc(n, 1);
    v->wo = base_xcalloc(n, 1);
    v->fre = base_xcalloc(n, 1);
    v->stack = base_xmalloc(n * sizeof *v->stack);
    v->next = base_xmalloc(n * sizeof *v->next);
}

static void eq_evs_free(eq_evs *v) {
    free(v->mark);
    free(v->state);
    free(v->order);
    free(v->readers);
    free(v->is_out);
    free(v->wo);
    free(v->fre);
    free(v->stack);
    free(v->next);
}

/* The classes the outputs reach under choice, children first, into v->order. 0, or -1 for a
 * cycle or a class without a choice. */
static int eq_walk(eq_ctx *c, const int32_t *choice, eq_evs *v) {
    egraph *eg = &c->eg;
    v->stamp++;
    v->n_order = 0;
    for (int32_t i = 0; i < c->g->n_outputs; i++) {
        int32_t root = egraph_find(eg, c->t_cls[c->g->outputs[i]]);
        if (v->mark[root] == v->stamp)
            continue;
        int32_t sp = 0;
        v->mark[root] = v->stamp, v->state[root] = 1, v->next[root] = 0;
        v->stack[sp++] = root;
        while (sp > 0) {
            int32_t k = v->stack[sp - 1], n = choice[k];
            if (n < 0)
                return -1;
            if (v->next[k] < eg->nodes[n].n_ch) {
                int32_t d = egraph_find(eg, egraph_children(eg, n)[v->next[k]++]);
                if (v->mark[d] == v->stamp && v->state[d] == 1)
                    return -1; /* a cycle */
                if (v->mark[d] != v->stamp) {
                    v->mark[d] = v->stamp, v->state[d] = 1, v->next[d] = 0;
                    v->stack[sp++] = d;
                }
                continue;
            }
            v->state[k] = 2;
            v->order[v->n_order++] = k;
            sp--;
        }
    }
    return 0;
}

/* The cost of the walked choice: weight-only nodes free, absorbed ones free with lower_cost. */
static int eq_walk_cost(eq_ctx *c, const int32_t *choice, eq_evs *v, double *cost) {
    egraph *eg = &c->eg;
    for (int32_t i = 0; i < v->n_order; i++)
        v->readers[v->order[i]] = 0, v->is_out[v->order[i]] = 0, v->fre[v->order[i]] = 0;
    for (int32_t i = 0; i < c->g->n_outputs; i++)
        v->is_out[egraph_find(eg, c->t_cls[c->g->outputs[i]])] = 1;
    for (int32_t i = 0; i < v->n_order; i++) {
        int32_t n = choice[v->order[i]];
        for (int32_t k = 0; k < eg->nodes[n].n_ch; k++)
            v->readers[egraph_find(eg, egraph_children(eg, n)[k])]++;
    }
    eq_low l = {choice, v->readers, v->is_out, v->wo, v->fre};
    double sum = 0.0;
    for (int32_t i = 0; i < v->n_order; i++) {
        int32_t k = v->order[i], n = choice[k];
        const egraph_node *nd = &eg->nodes[n];
        int wo = nd->kind == EGRAPH_WEIGHT || nd->kind == EGRAPH_CONST || nd->kind == EGRAPH_OP;
        for (int32_t j = 0; j < nd->n_ch && wo; j++)
            wo = v->wo[egraph_find(eg, egraph_children(eg, n)[j])];
        if (nd->kind == EGRAPH_PROJ)
            wo = v->wo[egraph_find(eg, egraph_children(eg, n)[0])];
        v->wo[k] = (uint8_t)wo;
        if (nd->kind != EGRAPH_OP || wo)
            continue;
        if (c->o->lower_cost && (v->fre[k] = (uint8_t)eq_lowered(c, &l, n)))
            continue;
        double t;
        if (eq_node_cost(c, n, &t) < 0)
            return -1;
        sum += t;
    }
    *cost = sum;
    return 0;
}

static int eq_eval_with(eq_ctx *c, const int32_t *choice, eq_evs *v, double *cost) {
    if (eq_walk(c, choice, v) < 0) {
        *cost = INFINITY;
        return 0;
    }
    return eq_walk_cost(c, choice, v, cost);
}

int eq_eval(eq_ctx *c, const int32_t *choice, double *cost) {
    eq_evs v;
    eq_evs_init(&v, c->eg.n_cls);
    int rc = eq_eval_with(c, choice, &v, cost);
    eq_evs_free(&v);
    return rc;
}

void eq_reached(eq_ctx *c, const int32_t *choice, uint8_t *reached) {
    eq_evs v;
    eq_evs_init(&v, c->eg.n_cls);
    if (eq_walk(c, choice, &v) == 0)
        for (int32_t i = 0; i < v.n_order; i++)
            reached[v.order[i]] = 1;
    eq_evs_free(&v);
}

/* --- local search ---------------------------------------------------------------------------- */

#define EQ_LOCAL_PASSES 6
#define EQ_LOCAL_EVALS 40000 /* true-cost evaluations at most: a bound in work, not time */
#define EQ_PAIR_EVALS 4000   /* of those, for pairs of moves */
#define EQ_CASCADE_EVALS 2000 /* of those, for cascades (eq_cascade) */
#define EQ_CASCADE_MAX 512   /* e-nodes of a cascade at most */

typedef struct {
    eq_ctx *c;
    int32_t *choice;
    eq_evs v;
    double cur;
    int64_t evals;
    int32_t *dep_start, *dep;  /* the moves one of whose nodes reads class k: dep[dep_start[k]..[k+1]) */
    int64_t pair_evals, cascade_evals;
    int32_t *of_serial;        /* [n_serial] the move of each application, -1 */
    int32_t *seen, stamp;      /* [n_mv] the moves a cascade holds (stamped) */
    int32_t *buf, n_buf;       /* [EQ_CASCADE_MAX] a cascade's e-nodes */
} eq_ls;

static int eq_try(eq_ls *s, const int32_t *nodes, int32_t n);

/* The moves reading each class (CSR, moves ascending), for the pair moves. */
static void eq_deps(eq_ls *s) {
    eq_ctx *c = s->c;
    egraph *eg = &c->eg;
    s->dep_start = base_xcalloc((size_t)eg->n_cls + 2, sizeof *s->dep_start);
    for (int pass = 0; pass < 2; pass++) {
        int32_t *fill = pass ? base_xmalloc(sizeof(int32_t) * ((size_t)eg->n_cls + 1)) : NULL;
        if (pass) {
            for (int32_t k = 0; k < eg->n_cls; k++)
                s->dep_start[k + 1] += s->dep_start[k];
            memcpy(fill, s->dep_start, sizeof(int32_t) * (size_t)eg->n_cls);
            s->dep = base_xmalloc(sizeof(int32_t) * ((size_t)s->dep_start[eg->n_cls] + 1));
        }
        for (int32_t i = 0; i < c->n_mv; i++)
            for (int32_t j = 0; j < c->mv[i].n; j++) {
                int32_t n = egraph_live(eg, c->mv[i].node[j]);
                for (int32_t q = 0; q < eg->nodes[n].n_ch; q++) {
                    int32_t k = egraph_find(eg, egraph_children(eg, n)[q]);
                    if (pass)
                        s->dep[fill[k]++] = i;
                    else
                        s->dep_start[k + 1]++;
                }
            }
        free(fill);
    }
}

/* Move a with each move b reading a class that a's nodes are in: a rewrite that pays only with
 * the next one (a merge that pays once merged again with a third sibling). 1 if one was kept. */
static int eq_try_pairs(eq_ls *s, int32_t a) {
    eq_ctx *c = s->c;
    egraph *eg = &c->eg;
    int32_t nodes[2 * EQ_MOVE_MAX];
    const eq_move *ma = &c->mv[a];
    for (int32_t j = 0; j < ma->n; j++) {
        int32_t k = egraph_find(eg, eg->nodes[egraph_live(eg, ma->node[j])].cls);
        for (int32_t u = s->dep_start[k]; u < s->dep_start[k + 1] && s->pair_evals < EQ_PAIR_EVALS; u++) {
            int32_t b = s->dep[u];
            if (b == a || (u > s->dep_start[k] && s->dep[u - 1] == b))
                continue;
            memcpy(nodes, ma->node, sizeof(int32_t) * (size_t)ma->n);
            memcpy(nodes + ma->n, c->mv[b].node, sizeof(int32_t) * (size_t)c->mv[b].n);
            s->pair_evals++;
            int rc = eq_try(s, nodes, ma->n + c->mv[b].n);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

/* Into s->buf: the e-nodes of the moves that made the classes move i's e-nodes land in (each such
 * class's first e-node came from an application; its own first, recursively), then move i's own,
 * each move once. A merge of two merged ops lands its outputs in the merged ops' classes, which
 * the choice reaches only once the graph's classes read those merges' splits: tried alone, the
 * merge of merges changes nothing the outputs reach (nasrnn: the 8-way merge of a step's gate
 * matmuls is 7 pairwise merges, 3 deep). eq_try sets them in this order, so in a class the later
 * move's e-node wins; at most `depth` levels down. 0, or -1 past EQ_CASCADE_MAX e-nodes. */
static int eq_cascade(eq_ls *s, int32_t i, int depth) {
    eq_ctx *c = s->c;
    egraph *eg = &c->eg;
    const eq_move *mv = &c->mv[i];
    s->seen[i] = s->stamp;
    for (int32_t j = 0; j < mv->n; j++) {
        int32_t n = egraph_live(eg, mv->node[j]);
        int32_t first = eg->cls[egraph_find(eg, eg->nodes[n].cls)].nodes[0];
        int32_t m = first < c->n_init ? -1 : s->of_serial[c->meta[first].serial];
        if (m < 0 || s->seen[m] == s->stamp || depth <= 0)
            continue;
        if (eq_cascade(s, m, depth - 1) < 0)
            return -1;
    }
    if (s->n_buf + mv->n > EQ_CASCADE_MAX)
        return -1;
    memcpy(s->buf + s->n_buf, mv->node, sizeof(int32_t) * (size_t)mv->n);
    s->n_buf += mv->n;
    return 0;
}

static int eq_try(eq_ls *s, const int32_t *nodes, int32_t n);

/* Move i as a cascade (eq_cascade), when that holds more than move i. 1 if kept. */
static int eq_try_cascade(eq_ls *s, int32_t i) {
    if (s->cascade_evals >= EQ_CASCADE_EVALS)
        return 0;
    s->stamp++;
    s->n_buf = 0;
    if (eq_cascade(s, i, 16) < 0 || s->n_buf == s->c->mv[i].n)
        return 0;
    s->cascade_evals++;
    return eq_try(s, s->buf, s->n_buf);
}

/* Set the classes of nodes[0..n) to them (n <= EQ_CASCADE_MAX); keep it if the cost drops, else
 * undo. 1 kept. */
static int eq_try(eq_ls *s, const int32_t *nodes, int32_t n) {
    int32_t cls[EQ_CASCADE_MAX], old[EQ_CASCADE_MAX];
    egraph *eg = &s->c->eg;
    int same = 1;
    for (int32_t i = 0; i < n; i++) {
        int32_t live = egraph_live(eg, nodes[i]);
        cls[i] = egraph_find(eg, eg->nodes[live].cls);
        old[i] = s->choice[cls[i]];
        same &= old[i] == live;
        s->choice[cls[i]] = live;
    }
    if (same)
        return 0;
    double cost;
    s->evals++;
    if (eq_eval_with(s->c, s->choice, &s->v, &cost) < 0)
        return -1;
    if (cost < s->cur * (1.0 - 1e-12)) {
        s->cur = cost;
        return 1;
    }
    for (int32_t i = n - 1; i >= 0; i--)
        s->choice[cls[i]] = old[i];
    return 0;
}

/* One pass: every recorded move, then every single switch on the classes reached. */
static int eq_local_pass(eq_ls *s, int32_t *reached) {
    eq_ctx *c = s->c;
    int improved = 0, rc;
    for (int32_t i = 0; i < c->n_mv && s->evals < EQ_LOCAL_EVALS; i++) {
        if ((rc = eq_try(s, c->mv[i].node, c->mv[i].n)) == 0)
            rc = eq_try_pairs(s, i);
        if (rc == 0)
            rc = eq_try_cascade(s, i);
        if (rc < 0)
            return -1;
        improved |= rc;
    }
    if (eq_walk(c, s->choice, &s->v) < 0)
        return -1; /* a kept choice is never cyclic */
    int32_t n_reached = s->v.n_order;
    memcpy(reached, s->v.order, sizeof(int32_t) * (size_t)n_reached);
    for (int32_t i = 0; i < n_reached && s->evals < EQ_LOCAL_EVALS; i++) {
        const egraph_class *cl = &c->eg.cls[reached[i]];
        for (int32_t u = 0; u < cl->n_nodes && s->evals < EQ_LOCAL_EVALS; u++) {
            if ((rc = eq_try(s, &cl->nodes[u], 1)) < 0)
                return -1;
            improved |= rc;
        }
    }
    return improved;
}

int eq_local(eq_ctx *c, int32_t *choice, double *cost) {
    eq_ls s = {c, choice, {0}, *cost, 0, NULL, NULL, 0, 0, NULL, NULL, 0, NULL, 0};
    eq_evs_init(&s.v, c->eg.n_cls);
    eq_deps(&s);
    s.of_serial = base_xmalloc(sizeof(int32_t) * ((size_t)c->n_serial + 1));
    for (int32_t i = 0; i < c->n_serial; i++)
        s.of_serial[i] = -1;
    for (int32_t i = 0; i < c->n_mv; i++)
        if (c->mv[i].serial >= 0 && c->mv[i].serial < c->n_serial)
            s.of_serial[c->mv[i].serial] = i;
    s.seen = base_xcalloc((size_t)c->n_mv + 1, sizeof *s.seen);
    s.buf = base_xmalloc(sizeof(int32_t) * EQ_CASCADE_MAX);
    int32_t *reached = base_xmalloc(sizeof(int32_t) * ((size_t)c->eg.n_cls + 1));
    int rc = 0;
    for (int32_t pass = 0; pass < EQ_LOCAL_PASSES && rc == 0; pass++) {
        int r = eq_local_pass(&s, reached);
        if (r < 0)
            rc = -1;
        if (r <= 0)
            break;
    }
    *cost = s.cur;
    free(reached);
    free(s.dep_start);
    free(s.dep);
    free(s.of_serial);
    free(s.seen);
    free(s.buf);
    eq_evs_free(&s.v);
    return rc;
}

/* --- the graph of a choice ------------------------------------------------------------------- */

typedef struct {
    eq_ctx *c;
    graph *ng;
    int64_t *counter;
    int32_t *ct;       /* [n_cls] tensor of a value class in ng */
    int32_t *cn;       /* [n_cls] node of an op class in ng */
    int32_t *tmap;     /* class of each tensor of ng (grown), or NULL */
    int32_t cap_tmap;
} eq_tg;

static void eq_tg_map(eq_tg *s, int32_t t, int32_t cls) {
    if (!s->tmap)
        return;
    s->tmap = base_grow(s->tmap, &s->cap_tmap, t + 1, sizeof *s->tmap);
    s->tmap[t] = cls;
}

/* Class k's chosen op node n in ng: the source graph's node when it reads the same tensors, else
 * a new node. */
static void eq_tg_op(eq_tg *s, int32_t k, int32_t n) {
    eq_ctx *c = s->c;
    const egraph_node *nd = &c->eg.nodes[n];
    int32_t in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS], orig = c->meta[n].orig;
    for (int32_t j = 0; j < nd->n_ch; j++)
        in[j] = s->ct[egraph_find(&c->eg, egraph_children(&c->eg, n)[j])];
    int same = orig >= 0;
    for (int32_t j = 0; j < nd->n_ch && same; j++)
        same = s->ng->nodes[orig].in[j] == in[j];
    if (same) {
        s->cn[k] = orig;
        s->ct[k] = s->ng->nodes[orig].out[0];
        return;
    }
    char name[256];
    snprintf(name, sizeof name, "%s.%lld.%s", c->prefix, (long long)(*s->counter)++, ops_table[nd->a].name);
    int32_t m = graph_add(s->ng, name, (ops_type)nd->a, &nd->p, nd->n_ch, in, out);
    if (m < 0)
        return; /* the sticky error is reported by eq_to_graph */
    s->cn[k] = s->ng->n_nodes - 1;
    s->ng->nodes[s->cn[k]].tag = 1;
    s->ct[k] = out[0];
    for (int32_t o = 0; o < m; o++)
        eq_tg_map(s, out[o], m == 1 ? k : eq_output_class(c, k, o));
}

static void eq_tg_class(eq_tg *s, int32_t k, int32_t n) {
    eq_ctx *c = s->c;
    const egraph_node *nd = &c->eg.nodes[n];
    char name[256];
    switch (nd->kind) {
    case EGRAPH_INPUT:
    case EGRAPH_WEIGHT:
        s->ct[k] = nd->a; /* the clone keeps the source graph's ids */
        break;
    case EGRAPH_CONST:
        snprintf(name, sizeof name, "%s.%lld.const", c->prefix, (long long)(*s->counter)++);
        s->ct[k] = graph_weight_const(s->ng, name, c->shapes[nd->a].rank, c->shapes[nd->a].dims, nd->value);
        if (s->ct[k] >= 0)
            eq_tg_map(s, s->ct[k], k);
        break;
    case EGRAPH_PROJ: {
        int32_t tk = egraph_find(&c->eg, egraph_children(&c->eg, n)[0]);
        s->ct[k] = s->cn[tk] >= 0 ? s->ng->nodes[s->cn[tk]].out[nd->a] : -1;
        break;
    }
    case EGRAPH_OP:
        eq_tg_op(s, k, n);
        break;
    }
}

/* Graph outputs moved to the chosen tensors; a new tensor takes the output's name (once). */
static void eq_tg_outputs(eq_tg *s) {
    eq_ctx *c = s->c;
    graph *ng = s->ng;
    for (int32_t i = 0; i < ng->n_outputs; i++) {
        int32_t t_old = ng->outputs[i], t_new = s->ct[egraph_find(&c->eg, c->t_cls[c->g->outputs[i]])];
        if (t_new == t_old)
            continue;
        ng->outputs[i] = t_new;
        int fresh = t_new >= c->g->n_tensors;
        for (int32_t j = 0; j < i && fresh; j++)
            fresh = ng->outputs[j] != t_new;
        if (fresh) { /* as rules_apply_run does */
            char *tmp = ng->tensors[t_old].name;
            ng->tensors[t_old].name = ng->tensors[t_new].name;
            ng->tensors[t_new].name = tmp;
        }
    }
}

int eq_to_graph(eq_ctx *c, const int32_t *choice, int64_t *counter, graph **out, int32_t **tmap) {
    eq_evs v;
    eq_evs_init(&v, c->eg.n_cls);
    *out = NULL;
    if (eq_walk(c, choice, &v) < 0) {
        eq_evs_free(&v);
        base_fail(c->err, c->errlen, "eqsat: internal error: the extraction has a cycle");
        return -1;
    }
    eq_tg s = {c, graph_clone(c->g), counter, base_xmalloc(sizeof(int32_t) * (size_t)c->eg.n_cls),
               base_xmalloc(sizeof(int32_t) * (size_t)c->eg.n_cls), NULL, 0};
    for (int32_t k = 0; k < c->eg.n_cls; k++)
        s.ct[k] = s.cn[k] = -1;
    if (tmap) {
        s.tmap = base_xmalloc(sizeof(int32_t) * (size_t)(c->g->n_tensors + 1));
        s.cap_tmap = c->g->n_tensors + 1;
        for (int32_t t = 0; t < c->g->n_tensors; t++)
            s.tmap[t] = egraph_find(&c->eg, c->t_cls[t]);
    }
    for (int32_t i = 0; i < v.n_order && graph_ok(s.ng); i++)
        eq_tg_class(&s, v.order[i], choice[v.order[i]]);
    eq_evs_free(&v);
    free(s.cn);
    if (graph_ok(s.ng))
        eq_tg_outputs(&s);
    free(s.ct);
    if (!graph_ok(s.ng)) {
        base_fail(c->err, c->errlen, "eqsat: internal error: %s", graph_error(s.ng));
        graph_free(s.ng);
        free(s.tmap);
        return -1;
    }
    if (tmap)
        *tmap = s.tmap;
    else
        graph_compact(s.ng);
    *out = s.ng;
    return 0;
}

int eq_graph_cost(eq_ctx *c, const graph *g, double *cost) {
    if (!c->o->lower_cost)
        return cost_graph(c->cm, g, cost, NULL, c->err, c->errlen);
    rules_match_index ix;
    if (rules_match_index_build(&ix, g, c->err, c->errlen) < 0)
        return -1;
    uint8_t *wo = base_xcalloc(1, (size_t)g->n_tensors + 1);
    cost_weight_only(g, wo);
    double sum = 0.0;
    int rc = 0;
    for (int32_t n = 0; n < g->n_nodes && rc == 0; n++) {
        const graph_node *nd = &g->nodes[n];
        if (!ix.live[n] || (nd->n_out > 0 && wo[nd->out[0]]) || rewrite_lowered_free(&ix, wo, n))
            continue;
        double t;
        rc = cost_graph_node(c->cm, g, n, &t, c->err, c->errlen);
        sum += t;
    }
    free(wo);
    rules_match_index_free(&ix);
    *cost = sum;
    return rc;
}
