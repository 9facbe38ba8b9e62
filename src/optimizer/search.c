/* search.c: TASO's backtracking search (search_run) and the optimize pipeline (search_optimize);
 * see search.h. The numerical check of a result is the runtime's (exec_check).
 *
 * States are every graph that entered the queue: its parent state, the move that made it (a
 * source -- rule r in direction d is source 2r+d, built-in kind k is source 2*n_rules+k -- and
 * the ordinal of the candidate within that source's deterministic enumeration in the parent),
 * its cost, and the graph itself only while it is needed: from the moment it is taken until it
 * has no child left in the queue (and for as long as it is the best). A taken state is rebuilt
 * from its parent by enumerating the same source again up to the ordinal.
 * Names of new nodes come from one prefix and a counter carried down each path, so the names in
 * a graph are unique and the same path always gives the same names.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "base.h"
#include "eqsat.h"
#include "match.h"
#include "search.h"

void search_opts_default(search_opts *o) {
    memset(o, 0, sizeof *o);
    o->alpha = 1.05;
    o->budget = 1000;
    o->time_limit_s = 8.0;
    o->max_nodes_factor = 2;
    for (int k = 0; k < REWRITE_COUNT; k++)
        o->moves[k] = 1;
    o->greedy[REWRITE_CSE] = o->greedy[REWRITE_BN_FOLD] = o->greedy[REWRITE_FUSE_BIAS] = o->greedy[REWRITE_FUSE_ACT] =
        o->greedy[REWRITE_SPLIT_CONCAT] = 1;
    o->fold = 1;
    o->eqsat_iters = 8;
    o->eqsat_nodes = 8000; /* bench/optimize/eqsat.md: squeezenet needs a third round */
    o->eqsat_exact = 600;
    o->progress = NULL;
}

void search_opts_builtins(search_opts *o, search_builtins b) {
    if (b != SEARCH_BUILTINS_MINIMAL)
        return;
    memset(o->moves, 0, sizeof o->moves);
    memset(o->greedy, 0, sizeof o->greedy);
    o->greedy[REWRITE_CSE] = o->greedy[REWRITE_BN_FOLD] = 1;
    o->split_bias = o->lower_cost = 1;
}

void search_result_free(search_result *r) {
    if (!r)
        return;
    free(r->applied);
    r->applied = NULL;
    r->n_applied = 0;
    free(r->stats);
    r->stats = NULL;
    r->n_stats = 0;
}

/* --- canonical hash -------------------------------------------------------------------------- */

#define SR_GOLDEN UINT64_C(0x9e3779b97f4a7c15)

static uint64_t sr_mix(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t sr_step(uint64_t h, uint64_t v) { return sr_mix(h ^ (sr_mix(v + SR_GOLDEN) + SR_GOLDEN + (h << 6) + (h >> 2))); }

static uint64_t sr_shape(uint64_t h, const ops_shape *s) {
    h = sr_step(h, (uint64_t)s->rank);
    for (int32_t d = 0; d < s->rank; d++)
        h = sr_step(h, (uint64_t)s->dims[d]);
    return h;
}

/* The canonical hash of a graph: tensor hashes from the outputs back (memoised), a node's from its
 * op, declared parameters and input hashes (a set for commutative ops), inputs by position and
 * shape, weights by name and shape (constant ones by value). Node names and order do not count. */
typedef struct {
    const graph *g;
    const uint8_t *comm;
    uint64_t *th;                     /* [n_tensors]: memo */
    uint8_t *done;                    /* [n_tensors] */
} sr_hasher;

static uint64_t sr_node_hash(const sr_hasher *h, ops_type op, const ops_params *p, int32_t n_in, const uint64_t *in) {
    const ops_desc *d = &ops_table[op];
    uint64_t x = sr_step(0x33, (uint64_t)op);
    for (int32_t k = 0; k < d->n_params; k++) {
        ops_param_key key = d->params[k].key;
        if (key == PM_LIST) {
            x = sr_step(x, (uint64_t)p->n_list);
            for (int32_t j = 0; j < p->n_list; j++)
                x = sr_step(x, (uint64_t)p->list[j]);
        } else {
            x = sr_step(x, (uint64_t)p->v[key]);
        }
    }
    x = sr_step(x, (uint64_t)n_in);
    if (h->comm[op] && n_in == 2) {
        uint64_t a = in[0], b = in[1];
        return sr_step(sr_step(x, a < b ? a : b), a < b ? b : a);
    }
    for (int32_t k = 0; k < n_in; k++)
        x = sr_step(x, in[k]);
    return x;
}

/* The hash of node nd's outputs, its inputs' hashes being known (done). */
static void sr_node_outputs(sr_hasher *h, const graph_node *nd) {
    uint64_t in[OPS_MAX_INPUTS];
    for (int32_t k = 0; k < nd->n_in; k++)
        in[k] = h->th[nd->in[k]];
    uint64_t x = sr_node_hash(h, nd->op, &nd->p, nd->n_in, in);
    for (int32_t k = 0; k < nd->n_out; k++) {
        h->th[nd->out[k]] = sr_step(x, (uint64_t)k);
        h->done[nd->out[k]] = 1;
    }
}

/* The hash of tensor t: a depth-first walk towards the leaves with an explicit stack (a chain of
 * any length must not exhaust the C stack). In an acyclic graph a tensor's producer is expanded
 * at most once, so the stack never holds more than 1 + OPS_MAX_INPUTS * n_nodes entries. */
static uint64_t sr_tensor_hash(sr_hasher *h, int32_t t) {
    if (h->done[t])
        return h->th[t];
    int64_t n = 1, cap = 64, limit = 1 + (int64_t)OPS_MAX_INPUTS * h->g->n_nodes;
    int32_t *stack = base_xmalloc((size_t)cap * sizeof *stack);
    stack[0] = t;
    while (n > 0) {
        int32_t u = stack[n - 1];
        const graph_tensor *ts = &h->g->tensors[u];
        if (h->done[u] || ts->producer < 0) {
            h->done[u] = 1; /* leaves were hashed by sr_hash */
            n--;
            continue;
        }
        const graph_node *nd = &h->g->nodes[ts->producer];
        int ready = 1;
        for (int32_t k = 0; k < nd->n_in; k++) {
            if (h->done[nd->in[k]])
                continue;
            ready = 0;
            BASE_ASSERT(n < limit); /* only a cycle, which a valid graph does not have, gets here */
            if (n == cap) {
                cap *= 2;
                stack = base_xrealloc(stack, (size_t)cap * sizeof *stack);
            }
            stack[n++] = nd->in[k];
        }
        if (ready) {
            sr_node_outputs(h, nd);
            n--;
        }
    }
    free(stack);
    return h->th[t];
}

static uint64_t sr_hash(const graph *g, const uint8_t *comm) {
    sr_hasher h = {g, comm, base_xcalloc(1, sizeof(uint64_t) * (size_t)(g->n_tensors + 1)),
                   base_xcalloc(1, (size_t)g->n_tensors + 1)};
    for (int32_t i = 0; i < g->n_inputs; i++)
        h.th[g->inputs[i]] = sr_shape(sr_step(sr_step(0x11, (uint64_t)i), g->tensors[g->inputs[i]].dtype),
                                      &g->tensors[g->inputs[i]].shape);
    for (int32_t i = 0; i < g->n_weights; i++) {
        const graph_tensor *ts = &g->tensors[g->weights[i]];
        uint32_t bits;
        memcpy(&bits, &ts->init.value, sizeof bits);
        h.th[g->weights[i]] = ts->init.kind == GRAPH_INIT_CONSTANT ? sr_step(sr_shape(0x22, &ts->shape), bits)
                                                                    : sr_step(sr_shape(0x23, &ts->shape), base_fnv1a_str(ts->name));
    }
    uint64_t x = sr_step(0x44, (uint64_t)g->n_outputs);
    for (int32_t i = 0; i < g->n_outputs; i++)
        x = sr_step(x, sr_tensor_hash(&h, g->outputs[i]));
    free(h.th);
    free(h.done);
    return x ? x : 1;
}

/* A rule op(b, a) = op(a, b) over two distinct variables, nothing else. */
static int sr_commutativity_rule(const rules_rule *r) {
    if (r->src.n_ops != 1 || r->dst.n_ops != 1 || r->n_outputs != 1 || r->n_constraints || r->n_requires)
        return 0;
    const rules_op *a = &r->src.ops[0], *b = &r->dst.ops[0];
    if (a->op != b->op || a->n_in != 2 || b->n_in != 2)
        return 0;
    for (int32_t k = 0; k < 2; k++)
        if (a->in[k].kind != RULES_REF_VAR || b->in[k].kind != RULES_REF_VAR)
            return 0;
    if (a->in[0].idx == a->in[1].idx || a->in[0].idx != b->in[1].idx || a->in[1].idx != b->in[0].idx)
        return 0;
    const ops_desc *d = &ops_table[a->op];
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (k == PM_LIST ? a->p.n_list != b->p.n_list || memcmp(a->p.list, b->p.list, sizeof a->p.list)
                         : a->p.v[k] != b->p.v[k])
            return 0;
    }
    const rules_outmap *om = &r->outputs[0];
    return om->src.kind == RULES_REF_OP && om->dst.kind == RULES_REF_OP && om->src.out == 0 && om->dst.out == 0;
}

/* A rule's content without its variables' example dims (only their ranks matter to matching):
 * rules equal this way find the same matches and make the same graphs, so only the first of
 * them is used. Written as int64 words into buf (room for SR_RULE_KEY words); returns the count. */
#define SR_RULE_KEY 4096
static int32_t sr_rule_key(const rules_rule *r, int64_t *buf) {
    int32_t n = 0;
    buf[n++] = r->n_vars;
    for (int32_t v = 0; v < r->n_vars; v++)
        buf[n++] = r->vars[v].shape.rank;
    const rules_graph *sides[2] = {&r->src, &r->dst};
    for (int32_t s = 0; s < 2; s++) {
        buf[n++] = sides[s]->n_ops;
        for (int32_t i = 0; i < sides[s]->n_ops; i++) {
            const rules_op *o = &sides[s]->ops[i];
            const ops_desc *d = &ops_table[o->op];
            buf[n++] = o->op;
            for (int32_t k = 0; k < d->n_params; k++) {
                if (d->params[k].key == PM_LIST) {
                    buf[n++] = o->p.n_list;
                    for (int32_t j = 0; j < o->p.n_list; j++)
                        buf[n++] = o->p.list[j];
                } else {
                    buf[n++] = o->p.v[d->params[k].key];
                }
            }
            buf[n++] = o->n_in;
            for (int32_t k = 0; k < o->n_in; k++)
                buf[n++] = ((int64_t)o->in[k].kind << 40) | ((int64_t)o->in[k].idx << 20) | o->in[k].out;
        }
    }
    buf[n++] = r->n_outputs;
    for (int32_t i = 0; i < r->n_outputs; i++) {
        const rules_outmap *om = &r->outputs[i];
        buf[n++] = ((int64_t)om->src.kind << 40) | ((int64_t)om->src.idx << 20) | om->src.out;
        buf[n++] = ((int64_t)om->dst.kind << 40) | ((int64_t)om->dst.idx << 20) | om->dst.out;
    }
    buf[n++] = r->n_constraints;
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        buf[n++] = ((int64_t)c->side << 48) | ((int64_t)c->op << 32) | ((int64_t)c->key << 16) | (c->list_index + 1);
        buf[n++] = c->n_eq ? -1 : c->value; /* a literal matters, a size taken from dims does not */
        buf[n++] = c->n_eq;
        for (int32_t e = 0; e < c->n_eq; e++)
            buf[n++] = ((int64_t)c->eq[e].var << 20) | c->eq[e].dim;
    }
    buf[n++] = r->n_requires;
    for (int32_t i = 0; i < r->n_requires; i++) {
        buf[n++] = ((int64_t)r->requires[i].var << 20) | r->requires[i].dim;
        buf[n++] = r->requires[i].value;
    }
    return n;
}

typedef struct rule_key_ent {
    int64_t *key;
    size_t bytes;
    UT_hash_handle hh;
} rule_key_ent;

/* skip[r] = 1 for every rule equal (sr_rule_key) to an earlier one; returns how many. */
static int32_t sr_mark_duplicate_rules(const rules_set *rs, uint8_t *skip) {
    rule_key_ent *head = NULL, *e, *tmp;
    int64_t *buf = base_xcalloc(1, sizeof(int64_t) * SR_RULE_KEY);
    int32_t dups = 0;
    for (int32_t r = 0; r < rs->n_rules; r++) {
        size_t bytes = sizeof(int64_t) * (size_t)sr_rule_key(&rs->rules[r], buf);
        HASH_FIND(hh, head, buf, bytes, e);
        if (e) {
            skip[r] = 1;
            dups++;
            continue;
        }
        e = base_xcalloc(1, sizeof *e);
        e->key = base_xcalloc(1, bytes);
        memcpy(e->key, buf, bytes);
        e->bytes = bytes;
        HASH_ADD_KEYPTR(hh, head, e->key, e->bytes, e);
    }
    HASH_ITER(hh, head, e, tmp) {
        HASH_DEL(head, e);
        free(e->key);
        free(e);
    }
    free(buf);
    return dups;
}

/* --- search state ---------------------------------------------------------------------------- */

typedef struct {
    graph *g;             /* while needed, else NULL */
    int32_t parent;       /* -1 for the root */
    int32_t src, ordinal; /* the move from the parent */
    int64_t counter;      /* name counter after this graph */
    double cost;
    int32_t pending;      /* children still in the queue */
    int32_t n_normal;     /* bias normal form moves made when it was taken (sr_normalize) */
    int expanded;
} sr_state;

typedef struct seen_ent {
    uint64_t h;
    UT_hash_handle hh;
} seen_ent;

typedef struct {
    const rules_set *rs;
    cost_model *cm;
    const search_opts *o;
    uint8_t comm[OP_COUNT];
    uint8_t *skip_rule;          /* [n_rules]: commutativity rules and repeats */
    uint8_t *src_ok;             /* [n_rule_src]: usable direction of a rule not skipped */
    int32_t *ok_src;             /* the sources with src_ok, ascending */
    uint64_t *ok_cls;            /* [n_ok_src]: bit (class % 64) of each node class its pattern needs */
    int32_t n_ok_src;
    rules_match_needs *needs;    /* [n_rule_src]: what the pattern side needs of a graph */
    int32_t n_rule_src;          /* 2 * n_rules */
    const char *prefix;
    sr_state *st;
    int32_t n_st, cap_st;
    int32_t *heap;
    int32_t n_heap, cap_heap;
    seen_ent *seen;
    seen_ent *seen_pool;
    int32_t n_seen_pool, cap_seen_pool;
    int32_t best;
    int32_t max_nodes;
    double deadline;             /* 0: none */
    int64_t calls;
    search_result *res;
    search_source_stat *stats;   /* res->stats, or NULL: not collected */
    char *err;
    size_t errlen;
    int failed;                  /* a model or internal error: err holds it */
} sr_ctx;

static int sr_before(const sr_ctx *c, int32_t a, int32_t b) {
    if (c->st[a].cost != c->st[b].cost)
        return c->st[a].cost < c->st[b].cost;
    return a < b;
}

static void sr_heap_push(sr_ctx *c, int32_t s) {
    c->heap = base_grow(c->heap, &c->cap_heap, c->n_heap + 1, sizeof *c->heap);
    int32_t i = c->n_heap++;
    c->heap[i] = s;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!sr_before(c, c->heap[i], c->heap[p]))
            break;
        int32_t t = c->heap[i];
        c->heap[i] = c->heap[p];
        c->heap[p] = t;
        i = p;
    }
}

static int32_t sr_heap_pop(sr_ctx *c) {
    int32_t top = c->heap[0];
    c->heap[0] = c->heap[--c->n_heap];
    int32_t i = 0;
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < c->n_heap && sr_before(c, c->heap[l], c->heap[m]))
            m = l;
        if (r < c->n_heap && sr_before(c, c->heap[r], c->heap[m]))
            m = r;
        if (m == i)
            break;
        int32_t t = c->heap[i];
        c->heap[i] = c->heap[m];
        c->heap[m] = t;
        i = m;
    }
    return top;
}

/* 1 if h was new (and is now recorded). */
static int sr_seen_add(sr_ctx *c, uint64_t h) {
    seen_ent *e = NULL;
    HASH_FIND(hh, c->seen, &h, sizeof h, e);
    if (e)
        return 0;
    e = base_xcalloc(1, sizeof *e);
    e->h = h;
    HASH_ADD(hh, c->seen, h, sizeof e->h, e);
    return 1;
}

static void sr_seen_free(sr_ctx *c) {
    seen_ent *e, *tmp;
    HASH_ITER(hh, c->seen, e, tmp) {
        HASH_DEL(c->seen, e);
        free(e);
    }
}

static int32_t sr_new_state(sr_ctx *c) {
    c->st = base_grow(c->st, &c->cap_st, c->n_st + 1, sizeof *c->st);
    sr_state *s = &c->st[c->n_st];
    memset(s, 0, sizeof *s);
    s->parent = -1;
    return c->n_st++;
}

/* Drop a state's graph once nothing needs it. */
static void sr_release(sr_ctx *c, int32_t s) {
    sr_state *st = &c->st[s];
    if (st->g && st->expanded && st->pending == 0 && s != c->best) {
        graph_free(st->g);
        st->g = NULL;
    }
}

static int sr_out_of_time(sr_ctx *c) {
    if (c->deadline <= 0.0)
        return 0;
    if (c->res->time_limited)
        return 1;
    if (base_now() > c->deadline)
        c->res->time_limited = 1;
    return c->res->time_limited;
}

/* --- one source's candidates in one graph ---------------------------------------------------- */

/* What to do with each candidate: expand (consider it for the queue) or rebuild (stop at one). */
typedef struct {
    sr_ctx *c;
    int32_t parent;              /* the state whose graph is indexed */
    rules_match_index ix;
    uint8_t *wo;                 /* [n_tensors] weight-only */
    double *nc;                  /* [n_nodes] cost of each node that runs, 0 for the others */
    double cost;                 /* of the parent graph */
    int32_t src, ordinal;
    int rebuild;                 /* 1: stop at `want` and build it into `built` */
    int32_t want;
    graph *built;
    int stop;
    int32_t n_live;              /* live nodes of the parent */
    rules_apply_plan pl;
} sr_exp;

static int sr_all_weight_only(const sr_exp *e, const rules_match *m) {
    const graph *g = e->ix.g;
    for (int32_t i = 0; i < m->n_nodes; i++) {
        const graph_node *nd = &g->nodes[m->node[i]];
        if (nd->n_out == 0 || !e->wo[nd->out[0]])
            return 0;
    }
    return 1;
}

/* With search_opts.lower_cost: 1 if new node j of the plan is one lowering absorbs into the new
 * conv2d or matmul it reads (rewrite_lowered_free's test on the plan): a bias ewadd or relu/gelu
 * (or relu6: a clip from 0 to 6) that is the only reader of that op's output (or of such an ewadd's, free[]). */
static int sr_plan_free(const sr_exp *e, const rules_apply_plan *pl, int32_t j, const uint8_t *nwo,
                        const uint8_t *free_) {
    const rules_apply_node *nd = &pl->nodes[j];
    int add = nd->op == OP_EWADD && nd->n_in == 2;
    if (!add && !(nd->n_in == 1 && rewrite_fusable_act_p(nd->op, &nd->p) != OPS_ACT_NONE))
        return 0;
    for (int32_t s = 0; s < nd->n_in; s++) {
        rules_aref r = nd->in[s];
        if (r.kind != RULES_AREF_NODE || r.out != 0)
            continue;
        const rules_apply_node *pn = &pl->nodes[r.idx];
        int ok = rewrite_has_epilogue(pn->op) && pn->p.v[PM_ACT] == OPS_ACT_NONE;
        ok |= !add && free_[r.idx] && pn->op == OP_EWADD;
        if (add && ok) { /* the other operand: weight-only */
            rules_aref b = nd->in[1 - s];
            ok = b.kind == RULES_AREF_WEIGHT || (b.kind == RULES_AREF_TENSOR && e->wo[b.idx]) ||
                 (b.kind == RULES_AREF_NODE && nwo[b.idx]);
        }
        if (!ok)
            continue;
        int32_t readers = 0; /* of r: the plan's nodes and the mapped outputs */
        for (int32_t k = 0; k < pl->n_nodes; k++)
            for (int32_t i = 0; i < pl->nodes[k].n_in; i++)
                readers += pl->nodes[k].in[i].kind == RULES_AREF_NODE && pl->nodes[k].in[i].idx == r.idx;
        for (int32_t m = 0; m < pl->n_map; m++)
            readers += pl->new_t[m].kind == RULES_AREF_NODE && pl->new_t[m].idx == r.idx;
        if (readers == 1)
            return 1;
    }
    return 0;
}

/* The cost of the parent with the plan applied: the new nodes that run, less the nodes gone. */
static int sr_plan_cost(sr_exp *e, const rules_apply_plan *pl, double *out) {
    const graph *g = e->ix.g;
    double cost = e->cost;
    uint8_t nwo[RULES_APPLY_MAX_NODES], free_[RULES_APPLY_MAX_NODES] = {0};
    for (int32_t j = 0; j < pl->n_nodes; j++) {
        const rules_apply_node *nd = &pl->nodes[j];
        uint8_t all = 1;
        ops_shape in[RULES_APPLY_MAX_IN];
        for (int32_t k = 0; k < nd->n_in; k++) {
            rules_aref r = nd->in[k];
            if (r.kind == RULES_AREF_TENSOR) {
                all &= e->wo[r.idx];
                in[k] = g->tensors[r.idx].shape;
            } else if (r.kind == RULES_AREF_NODE) {
                all &= nwo[r.idx];
                in[k] = pl->nodes[r.idx].out[r.out];
            } else {
                in[k] = pl->weights[r.idx].shape;
            }
        }
        nwo[j] = all;
        if (all)
            continue;
        if (e->c->o->lower_cost && (free_[j] = (uint8_t)sr_plan_free(e, pl, j, nwo, free_)))
            continue;
        double t;
        if (cost_node(e->c->cm, nd->op, &nd->p, nd->n_in, in, nd->n_out, nd->out, &t, e->c->err, e->c->errlen) < 0)
            return -1;
        cost += t;
    }
    for (int32_t i = 0; i < pl->n_dead; i++)
        cost -= e->nc[pl->dead[i]];
    *out = cost;
    return 0;
}

static void sr_consider(sr_exp *e, rules_apply_plan *pl) {
    sr_ctx *c = e->c;
    int32_t ordinal = e->ordinal++;
    char err[256];
    if (e->rebuild) {
        if (ordinal != e->want)
            return;
        e->stop = 1;
        sr_state *p = &c->st[e->parent];
        int64_t counter = p->counter;
        if (rules_apply_check(&e->ix, pl, err, sizeof err) < 0 ||
            rules_apply_run(&e->ix, pl, c->prefix, &counter, &e->built, err, sizeof err) < 0) {
            snprintf(c->err, c->errlen, "search: cannot rebuild a queued graph: %s", err);
            c->failed = 1;
        }
        return;
    }
    if ((++c->calls & 31) == 0 && sr_out_of_time(c)) {
        e->stop = 1;
        return;
    }
    c->res->candidates++;
    if (rules_apply_check(&e->ix, pl, err, sizeof err) < 0) {
        c->res->rejected++;
        return;
    }
    double limit = c->o->alpha * c->st[c->best].cost, est;
    if (sr_plan_cost(e, pl, &est) < 0) {
        c->failed = e->stop = 1;
        return;
    }
    if (est >= limit) {
        c->res->dropped_cost++;
        return;
    }
    /* the child is not built: its size comes from the parent and the plan; duplicates are
     * dropped when taken from the queue (hashing every candidate cost more than the rest) */
    if (e->n_live - pl->n_dead + pl->n_nodes > c->max_nodes) {
        c->res->dropped_size++;
        return;
    }
    if (c->stats)
        c->stats[e->src].queued++;
    int32_t s = sr_new_state(c);
    sr_state *ns = &c->st[s];
    ns->parent = e->parent;
    ns->src = e->src;
    ns->ordinal = ordinal;
    ns->counter = c->st[e->parent].counter + pl->n_weights + pl->n_nodes; /* names rules_apply_run takes */
    ns->cost = est;
    c->st[e->parent].pending++;
    sr_heap_push(c, s);
    c->res->queued++;
}

static int sr_on_match(const rules_match *m, void *user) {
    sr_exp *e = user;
    if (sr_all_weight_only(e, m))
        return 0; /* not a candidate (and not counted in the ordinals): it cannot change the cost */
    char err[256];
    search_source_stat *st = e->c->stats && !e->rebuild ? &e->c->stats[e->src] : NULL;
    if (st)
        st->found++;
    if (rules_apply_plan_rule(e->c->rs, m, &e->ix, &e->pl, err, sizeof err) < 0) {
        /* the target does not type-check here: still a candidate for the ordinal count */
        e->ordinal++;
        if (!e->rebuild)
            e->c->res->rejected++, e->c->res->candidates++;
        return e->stop;
    }
    if (st)
        st->typechecked++;
    sr_consider(e, &e->pl);
    return e->stop;
}

static int sr_on_plan(rules_apply_plan *pl, void *user) {
    sr_exp *e = user;
    if (e->c->stats && !e->rebuild) /* a built-in's candidates come with their shapes inferred */
        e->c->stats[e->src].found++, e->c->stats[e->src].typechecked++;
    sr_consider(e, pl);
    return e->stop;
}

/* Run source src over the indexed graph. */
static void sr_run_source(sr_exp *e, int32_t src) {
    sr_ctx *c = e->c;
    e->src = src;
    e->ordinal = 0;
    if (src < c->n_rule_src) {
        /* only rules whose pattern's op types (with counts) and op-to-op edges occur in the graph */
        if (!c->src_ok[src] || !rules_match_possible(&c->needs[src], &e->ix))
            return;
    } else if (!c->o->moves[src - c->n_rule_src]) {
        return;
    }
    /* timed only past the cheap filters: a clock read per filtered-out rule would cost more than
     * the filtering */
    double t0 = c->stats && !e->rebuild ? base_now() : 0.0;
    if (src < c->n_rule_src)
        rules_match_find(c->rs, src / 2, (rules_dir)(src % 2), &e->ix, sr_on_match, e);
    else
        rewrite_find((rewrite_kind)(src - c->n_rule_src), &e->ix, e->wo, sr_on_plan, e);
    if (c->stats && !e->rebuild)
        c->stats[src].seconds += base_now() - t0;
}

/* Index the graph of state `parent`; with_costs: also each node's cost (expanding needs them,
 * rebuilding a child does not). */
static int sr_exp_init(sr_exp *e, sr_ctx *c, int32_t parent, int with_costs) {
    memset(e, 0, sizeof *e);
    e->c = c;
    e->parent = parent;
    const graph *g = c->st[parent].g;
    if (rules_match_index_build(&e->ix, g, c->err, c->errlen) < 0)
        return -1;
    e->wo = base_xcalloc(1, (size_t)g->n_tensors + 1);
    e->nc = base_xcalloc(1, sizeof(double) * (size_t)(g->n_nodes + 1));
    cost_weight_only(g, e->wo);
    e->cost = 0.0;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        const graph_node *nd = &g->nodes[n];
        e->n_live += e->ix.live[n];
        if (!with_costs || !e->ix.live[n] || (nd->n_out > 0 && e->wo[nd->out[0]]))
            continue;
        if (c->o->lower_cost && rewrite_lowered_free(&e->ix, e->wo, n))
            continue; /* lowering fuses it into the op before it */
        if (cost_graph_node(c->cm, g, n, &e->nc[n], c->err, c->errlen) < 0)
            return -1;
        e->cost += e->nc[n];
    }
    return 0;
}

static void sr_exp_free(sr_exp *e) {
    rules_match_index_free(&e->ix);
    rules_apply_plan_clear(&e->pl);
    free(e->wo);
    free(e->nc);
}

/* A graph's cost as the search sees it: cost_graph's, or with search_opts.lower_cost the nodes
 * lowering absorbs left out (sr_exp_init's sum). */
static int sr_graph_cost(sr_ctx *c, int32_t s, double *out) {
    if (!c->o->lower_cost)
        return cost_graph(c->cm, c->st[s].g, out, NULL, c->err, c->errlen);
    sr_exp e;
    int rc = sr_exp_init(&e, c, s, 1);
    *out = e.cost;
    sr_exp_free(&e);
    return rc;
}

/* With search_opts.split_bias: state s's graph in the bias normal form (rewrite_bias_normal), as
 * lowering would have it: after a merge rule the siblings' bias adds sit behind the merged op's
 * split, where they cost and keep the split's parts from a concat; in front of it they are one
 * add that lowering fuses. Applied when a state is taken, so the normal form is part of every
 * move (its names continue the state's counter); the queue held the plan's estimate, which
 * counts the adds at the parent's cost (free, fused into the siblings) as the normal form does. */
static int sr_normalize(sr_ctx *c, int32_t s) {
    if (!c->o->split_bias)
        return 0;
    int32_t n = 0;
    if (rewrite_bias_normal(&c->st[s].g, c->prefix, &c->st[s].counter, &n, c->err, c->errlen) < 0)
        return -1;
    c->st[s].n_normal = n;
    return 0;
}

/* Rebuild state s's graph from its parent's. */
static int sr_materialize(sr_ctx *c, int32_t s) {
    sr_state *st = &c->st[s];
    if (st->g)
        return 0;
    sr_exp e;
    if (sr_exp_init(&e, c, st->parent, 0) < 0) {
        sr_exp_free(&e);
        return -1;
    }
    e.rebuild = 1;
    e.want = st->ordinal;
    sr_run_source(&e, st->src);
    graph *g = e.built;
    sr_exp_free(&e);
    if (c->failed)
        return -1;
    if (!g) {
        snprintf(c->err, c->errlen, "search: a queued graph could not be found again (source %d, candidate %d)",
                 (int)st->src, (int)st->ordinal);
        return -1;
    }
    c->st[s].g = g;
    return sr_normalize(c, s);
}

static int sr_expand(sr_ctx *c, int32_t s) {
    sr_exp e;
    if (sr_exp_init(&e, c, s, 1) < 0) {
        sr_exp_free(&e);
        return -1;
    }
    /* the rules (a 64-bit mask of the classes present rejects most of them at once), then the
     * built-in rewrites */
    uint64_t have = 0;
    for (int32_t k = 0; k < RULES_N_CLASSES; k++)
        if (e.ix.cls_start[k + 1] > e.ix.cls_start[k])
            have |= UINT64_C(1) << (k % 64);
    for (int32_t j = 0; j < c->n_ok_src && !e.stop; j++)
        if (!(c->ok_cls[j] & ~have))
            sr_run_source(&e, c->ok_src[j]);
    for (int32_t k = 0; k < REWRITE_COUNT && !e.stop; k++)
        sr_run_source(&e, c->n_rule_src + k);
    sr_exp_free(&e);
    c->st[s].expanded = 1;
    return c->failed ? -1 : 0;
}

/* Tally the moves on the path from the root to state s into res->applied. */
static void sr_tally_path(sr_ctx *c, int32_t s, search_result *res) {
    int32_t n_src = c->n_rule_src + REWRITE_COUNT;
    int32_t *count = base_xcalloc(1, sizeof(int32_t) * (size_t)n_src), normal = 0;
    for (int32_t x = s; x >= 0; x = c->st[x].parent) {
        normal += c->st[x].n_normal;
        if (c->st[x].parent >= 0)
            count[c->st[x].src]++;
    }
    for (int32_t i = 0; c->stats && i < n_src; i++)
        c->stats[i].applied = count[i];
    int32_t n = normal > 0;
    for (int32_t i = 0; i < n_src; i++)
        n += count[i] > 0;
    free(res->applied);
    res->applied = base_xcalloc(1, sizeof(search_applied) * (size_t)(n + 1));
    res->n_applied = 0;
    if (normal > 0) /* not a move: the normal form of the graphs on the path (sr_normalize) */
        res->applied[res->n_applied++] = (search_applied){"bias-normal", 0, normal};
    for (int32_t i = 0; i < n_src; i++) {
        if (!count[i])
            continue;
        search_applied *a = &res->applied[res->n_applied++];
        if (i < c->n_rule_src) {
            a->name = c->rs->rules[i / 2].id;
            a->reverse = i % 2;
        } else {
            a->name = rewrite_names[i - c->n_rule_src];
        }
        a->count = count[i];
    }
    search_sort_applied(res);
    free(count);
}

void search_sort_applied(search_result *res) {
    /* most used first, then by name and direction: insertion sort (short lists) */
    for (int32_t i = 1; i < res->n_applied; i++) {
        search_applied t = res->applied[i];
        int32_t j = i;
        while (j > 0 && (res->applied[j - 1].count < t.count ||
                         (res->applied[j - 1].count == t.count &&
                          (strcmp(res->applied[j - 1].name, t.name) > 0 ||
                           (!strcmp(res->applied[j - 1].name, t.name) && res->applied[j - 1].reverse > t.reverse))))) {
            res->applied[j] = res->applied[j - 1];
            j--;
        }
        res->applied[j] = t;
    }
}

/* The search proper, on names from prefix and *counter (advanced to the best path's end). */
/* 1 if the pattern side of r in direction dir is one piece: its ops joined by edges and by the
 * variables they share. A pattern of independent pieces (two relus of unrelated tensors) matches
 * every combination of its pieces' matches -- quadratic in the graph -- and its replacement can
 * only join unrelated computations, so such directions are not searched. */
static int sr_pattern_connected(const rules_rule *r, rules_dir dir) {
    const rules_graph *side = dir == RULES_DIR_FWD ? &r->src : &r->dst;
    int32_t comp[RULES_MAX_OPS], first[RULES_MAX_VARS];
    for (int32_t v = 0; v < RULES_MAX_VARS; v++)
        first[v] = -1;
    for (int32_t i = 0; i < side->n_ops; i++) {
        comp[i] = i;
        for (int32_t k = 0; k < side->ops[i].n_in; k++) {
            rules_ref in = side->ops[i].in[k];
            int32_t j = in.kind == RULES_REF_OP ? in.idx : first[in.idx];
            if (in.kind == RULES_REF_VAR && first[in.idx] < 0)
                first[in.idx] = i;
            if (j < 0 || comp[j] == comp[i])
                continue;
            int32_t from = comp[i], to = comp[j]; /* relabel i's piece as j's */
            for (int32_t x = 0; x <= i; x++)
                if (comp[x] == from)
                    comp[x] = to;
        }
    }
    for (int32_t i = 1; i < side->n_ops; i++)
        if (comp[i] != comp[0])
            return 0;
    return 1;
}

void search_rule_sources(const rules_set *rs, uint8_t *ok, uint8_t *comm) {
    uint8_t *skip = base_xcalloc(1, (size_t)rs->n_rules + 1);
    memset(comm, 0, OP_COUNT);
    sr_mark_duplicate_rules(rs, skip);
    for (int32_t r = 0; r < rs->n_rules; r++)
        if (sr_commutativity_rule(&rs->rules[r])) {
            skip[r] = 1;
            comm[rs->rules[r].src.ops[0].op] = 1;
        }
    for (int32_t src = 0; src < 2 * rs->n_rules; src++) {
        const rules_rule *r = &rs->rules[src / 2];
        rules_dir dir = (rules_dir)(src % 2);
        ok[src] = !skip[src / 2] && rules_match_usable(r, dir) && sr_pattern_connected(r, dir);
    }
    free(skip);
}

static int sr_search(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o, const char *prefix,
                     int64_t *counter, graph **best, search_result *res,
                     char *err, size_t errlen) {
    static const rules_set empty;
    sr_ctx c;
    memset(&c, 0, sizeof c);
    c.rs = rs ? rs : &empty;
    c.cm = cm;
    c.o = o;
    c.prefix = prefix;
    c.res = res;
    c.err = err;
    c.errlen = errlen;
    c.n_rule_src = 2 * c.rs->n_rules;
    res->n_rules = c.rs->n_rules;
    if (o->stats) {
        free(res->stats);
        res->n_stats = c.n_rule_src + REWRITE_COUNT;
        res->stats = c.stats = base_xcalloc((size_t)res->n_stats, sizeof *res->stats);
    }
    c.skip_rule = base_xcalloc(1, (size_t)c.rs->n_rules + 1);
    sr_mark_duplicate_rules(c.rs, c.skip_rule);
    for (int32_t r = 0; r < c.rs->n_rules; r++)
        if (sr_commutativity_rule(&c.rs->rules[r])) {
            c.skip_rule[r] = 1;
            c.comm[c.rs->rules[r].src.ops[0].op] = 1;
        }
    c.src_ok = base_xcalloc(1, (size_t)c.n_rule_src + 1);
    c.needs = base_xcalloc(1, sizeof(rules_match_needs) * (size_t)(c.n_rule_src + 1));
    c.ok_src = base_xcalloc(1, sizeof(int32_t) * (size_t)(c.n_rule_src + 1));
    c.ok_cls = base_xcalloc(1, sizeof(uint64_t) * (size_t)(c.n_rule_src + 1));
    for (int32_t src = 0; src < c.n_rule_src; src++) {
        const rules_rule *r = &c.rs->rules[src / 2];
        rules_dir dir = (rules_dir)(src % 2);
        c.src_ok[src] = !c.skip_rule[src / 2] && rules_match_usable(r, dir) && sr_pattern_connected(r, dir);
        rules_match_needs_of(r, dir, &c.needs[src]);
        if (!c.src_ok[src])
            continue;
        uint64_t m = 0;
        for (int32_t k = 0; k < c.needs[src].n_cls; k++)
            m |= UINT64_C(1) << (c.needs[src].cls[k] % 64);
        c.ok_src[c.n_ok_src] = src;
        c.ok_cls[c.n_ok_src++] = m;
    }
    double t0 = base_now();
    c.deadline = o->time_limit_s > 0 ? t0 + o->time_limit_s : 0.0;
    c.max_nodes = g->n_nodes * (o->max_nodes_factor > 0 ? o->max_nodes_factor : 2);
    int rc = -1;
    *best = NULL;
    int32_t root = sr_new_state(&c);
    c.st[root].g = graph_clone(g);
    c.st[root].counter = *counter;
    if (sr_normalize(&c, root) < 0)
        goto done;
    if (sr_graph_cost(&c, root, &c.st[root].cost) < 0)
        goto done;
    res->cost_before = c.st[root].cost;
    res->nodes_before = g->n_nodes;
    c.best = root;
    sr_seen_add(&c, sr_hash(c.st[root].g, c.comm)); /* the root as normalized (sr_normalize) */
    sr_heap_push(&c, root);
    double last_report = t0;
    while (c.n_heap > 0) {
        if (sr_out_of_time(&c))
            break;
        int32_t s = sr_heap_pop(&c);
        int32_t p = c.st[s].parent;
        if (sr_materialize(&c, s) < 0)
            goto done;
        if (p >= 0) {
            c.st[p].pending--;
            sr_release(&c, p);
        }
        if (p >= 0 && !sr_seen_add(&c, sr_hash(c.st[s].g, c.comm))) {
            res->dropped_dup++; /* a graph taken before */
            c.st[s].expanded = 1;
            sr_release(&c, s);
            continue;
        }
        if (p >= 0 && sr_graph_cost(&c, s, &c.st[s].cost) < 0)
            goto done; /* the exact cost (the queue held the plan's estimate) */
        if (c.st[s].cost < c.st[c.best].cost) {
            int32_t old = c.best;
            c.best = s;
            sr_release(&c, old);
        }
        if (res->expanded >= o->budget) {
            c.st[s].expanded = 1;
            sr_release(&c, s);
            break;
        }
        res->expanded++;
        if (sr_expand(&c, s) < 0)
            goto done;
        sr_release(&c, s);
        double now = base_now();
        if (o->progress && now - last_report >= 1.0) {
            fprintf(o->progress, "search: %lld expanded, %d queued, best %.1f us (%.3fx), %.1f s\n",
                    (long long)res->expanded, (int)c.n_heap, c.st[c.best].cost,
                    res->cost_before / (c.st[c.best].cost > 0 ? c.st[c.best].cost : 1.0), now - t0);
            fflush(o->progress);
            last_report = now;
        }
    }
    *best = graph_clone(c.st[c.best].g);
    *counter = c.st[c.best].counter;
    res->cost_after = c.st[c.best].cost;
    res->nodes_after = (*best)->n_nodes;
    sr_tally_path(&c, c.best, res);
    rc = 0;
done:
    res->seconds = res->search_seconds = base_now() - t0;
    for (int32_t i = 0; i < c.n_st; i++)
        graph_free(c.st[i].g);
    free(c.st);
    free(c.heap);
    free(c.skip_rule);
    free(c.src_ok);
    free(c.ok_src);
    free(c.ok_cls);
    free(c.needs);
    sr_seen_free(&c);
    return rc;
}

int search_run(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o, graph **best,
               search_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    char prefix[32];
    rules_apply_prefix(g, prefix, sizeof prefix);
    int64_t counter = 0;
    char verr[256];
    if (graph_validate(g, verr, sizeof verr) < 0) {
        snprintf(err, errlen, "search: invalid graph: %s", verr);
        return -1;
    }
    return sr_search(g, rs, cm, o, prefix, &counter, best, res, err, errlen);
}

/* res->stats' applied counts after search_optimize: the greedy rewrites added, or every count
   zeroed when the input is returned unchanged (none). */
static void sr_stats_final(search_result *res, const int32_t greedy[REWRITE_COUNT], int none) {
    for (int32_t i = 0; i < res->n_stats; i++) {
        int32_t k = i - 2 * res->n_rules;
        if (none)
            res->stats[i].applied = 0;
        else if (k >= 0)
            res->stats[i].applied += greedy[k];
    }
}

/* Biases split off (rewrite_split_bias), their reshapes folded into weights. */
static int sr_split_bias(graph **g, const char *prefix, int64_t *counter, int32_t *folded, char *err,
                         size_t errlen) {
    int32_t n = 0, f = 0;
    if (rewrite_split_bias(g, prefix, counter, &n, err, errlen) < 0)
        return -1;
    if (n > 0 && rewrite_fold_constants(g, &f, err, errlen) < 0)
        return -1;
    *folded += f;
    return 0;
}

int search_optimize(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o, graph **out,
                    search_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    *out = NULL;
    double t0 = base_now();
    char prefix[32], verr[256];
    if (graph_validate(g, verr, sizeof verr) < 0) {
        snprintf(err, errlen, "optimize: invalid graph: %s", verr);
        return -1;
    }
    double before;
    if (cost_graph(cm, g, &before, NULL, err, errlen) < 0)
        return -1;
    rules_apply_prefix(g, prefix, sizeof prefix);
    int64_t counter = 0;
    int32_t greedy[REWRITE_COUNT] = {0};
    int32_t folded = 0, f = 0;
    graph *c = graph_clone(g), *best = NULL;
    int rc = -1;
    if (rewrite_greedy(&c, o->greedy, prefix, &counter, greedy, err, errlen) < 0)
        goto done;
    if (o->fold && rewrite_fold_constants(&c, &f, err, errlen) < 0)
        goto done;
    folded += f;
    if (o->split_bias && sr_split_bias(&c, prefix, &counter, &folded, err, errlen) < 0)
        goto done;
    if (o->progress) {
        int32_t n = 0;
        for (int32_t k = 0; k < REWRITE_COUNT; k++)
            n += greedy[k];
        fprintf(o->progress, "optimize: %d greedy rewrites, %d tensors folded; searching (%d nodes)\n", (int)n,
                (int)f, (int)c->n_nodes);
        fflush(o->progress);
    }
    if (o->eqsat ? eqsat_run(c, rs, cm, o, prefix, &counter, &best, res, err, errlen) < 0
                 : sr_search(c, rs, cm, o, prefix, &counter, &best, res, err, errlen) < 0)
        goto done;
    if (o->progress) {
        fprintf(o->progress, "optimize: search done: %lld graphs expanded in %.2f s%s\n", (long long)res->expanded,
                res->search_seconds, res->time_limited ? " (time limit)" : "");
        fflush(o->progress);
    }
    if (rewrite_greedy(&best, o->greedy, prefix, &counter, greedy, err, errlen) < 0)
        goto done;
    if (o->split_bias) { /* lowering: the biases split off and the activations fused */
        uint8_t lower[REWRITE_COUNT] = {0};
        lower[REWRITE_FUSE_BIAS] = lower[REWRITE_FUSE_ACT] = 1;
        if (rewrite_greedy(&best, lower, prefix, &counter, greedy, err, errlen) < 0)
            goto done;
    }
    if (o->fold && rewrite_fold_constants(&best, &f, err, errlen) < 0)
        goto done;
    folded += f;
    /* every output folded into a weight (a model whose outputs are constants): a graph needs a
     * node, so the input is kept as it is */
    int keep_input = best->n_nodes == 0;
    if (!keep_input && graph_validate(best, verr, sizeof verr) < 0) {
        snprintf(err, errlen, "optimize: internal error: the optimized graph is invalid: %s", verr);
        goto done;
    }
    double after = before;
    if (!keep_input && cost_graph(cm, best, &after, NULL, err, errlen) < 0)
        goto done;
    /* the search path's moves (tallied by sr_search) plus the greedy rewrites */
    sr_stats_final(res, greedy, 0);
    {
        search_applied *list = base_xcalloc(1, sizeof(search_applied) * (size_t)(res->n_applied + REWRITE_COUNT + 1));
        int32_t n = 0;
        for (int32_t i = 0; i < res->n_applied; i++)
            list[n++] = res->applied[i];
        for (int32_t k = 0; k < REWRITE_COUNT; k++) {
            if (!greedy[k])
                continue;
            int32_t j = 0;
            while (j < n && list[j].name != rewrite_names[k])
                j++;
            if (j == n)
                list[n++] = (search_applied){rewrite_names[k], 0, 0};
            list[j].count += greedy[k];
        }
        for (int32_t i = 1; i < n; i++) { /* most used first, then by name */
            search_applied t = list[i];
            int32_t j = i;
            while (j > 0 && (list[j - 1].count < t.count ||
                             (list[j - 1].count == t.count && strcmp(list[j - 1].name, t.name) > 0))) {
                list[j] = list[j - 1];
                j--;
            }
            list[j] = t;
        }
        free(res->applied);
        res->applied = list;
        res->n_applied = n;
    }
    res->cost_before = before;
    res->nodes_before = g->n_nodes;
    if (keep_input || after > before) { /* never worse than the input */
        graph_free(best);
        best = graph_clone(g);
        after = before;
        free(res->applied);
        res->applied = NULL;
        res->n_applied = 0;
        folded = 0;
        sr_stats_final(res, greedy, 1);
    }
    res->cost_after = after;
    res->nodes_after = best->n_nodes;
    res->folded = folded;
    *out = best;
    best = NULL;
    rc = 0;
done:
    res->seconds = base_now() - t0;
    graph_free(c);
    graph_free(best);
    return rc;
}
