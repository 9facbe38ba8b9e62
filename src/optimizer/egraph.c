/* egraph.c: the e-graph of the equality-saturation search (egraph.h): hash-consed e-nodes,
 * union-find over e-classes, and the rebuild that restores congruence after unions.
 *
 * The memo maps a node's canonical form (kind, leaf id or op and parameters, children as class
 * representatives) to the node. Rebuilding starts the memo over and re-enters every live node in
 * id order, so which of two congruent nodes survives (the earlier) never depends on hash order.
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "base.h"
#include "egraph.h"

#define EG_KEY_FIXED (4 + PM_COUNT + 1 + OPS_MAX_LIST)

struct egraph_memo {
    int64_t *key;
    size_t bytes;
    int32_t node;
    UT_hash_handle hh;
};

void egraph_init(egraph *eg) { memset(eg, 0, sizeof *eg); }

static void eg_memo_clear(egraph *eg) {
    HASH_CLEAR(hh, eg->memo);
    for (int32_t i = 0; i < eg->n_memo; i++) {
        free(eg->memo_pool[i]->key);
        free(eg->memo_pool[i]);
    }
    eg->n_memo = 0;
}

void egraph_free(egraph *eg) {
    eg_memo_clear(eg);
    free(eg->memo_pool);
    for (int32_t c = 0; c < eg->n_cls; c++) {
        free(eg->cls[c].nodes);
        free(eg->cls[c].parents);
    }
    free(eg->cls);
    free(eg->uf);
    free(eg->nodes);
    free(eg->ch);
    memset(eg, 0, sizeof *eg);
}

int32_t egraph_find(egraph *eg, int32_t c) {
    int32_t r = c;
    while (eg->uf[r] != r)
        r = eg->uf[r];
    while (eg->uf[c] != r) { /* path compression */
        int32_t next = eg->uf[c];
        eg->uf[c] = r;
        c = next;
    }
    return r;
}

/* The canonical key of a node into buf (room for EG_KEY_FIXED + n_ch words); returns the words. */
static int32_t eg_key(egraph *eg, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
                      const int32_t *ch, int64_t *buf) {
    int32_t n = 0;
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    buf[n++] = kind;
    buf[n++] = a;
    buf[n++] = bits;
    if (kind == EGRAPH_OP) {
        for (int32_t k = 0; k < PM_COUNT; k++)
            buf[n++] = p ? p->v[k] : 0;
        buf[n++] = p ? p->n_list : 0;
        for (int32_t k = 0; k < OPS_MAX_LIST; k++)
            buf[n++] = p && k < p->n_list ? p->list[k] : 0;
    }
    buf[n++] = n_ch;
    for (int32_t k = 0; k < n_ch; k++)
        buf[n++] = egraph_find(eg, ch[k]);
    return n;
}

static egraph_memo *eg_memo_find(egraph *eg, const int64_t *key, int32_t words) {
    egraph_memo *e = NULL;
    HASH_FIND(hh, eg->memo, key, sizeof(int64_t) * (size_t)words, e);
    return e;
}

static void eg_memo_add(egraph *eg, const int64_t *key, int32_t words, int32_t node) {
    egraph_memo *e = base_xcalloc(1, sizeof *e);
    e->bytes = sizeof(int64_t) * (size_t)words;
    e->key = base_xmalloc(e->bytes);
    memcpy(e->key, key, e->bytes);
    e->node = node;
    eg->memo_pool = base_grow(eg->memo_pool, &eg->cap_memo, eg->n_memo + 1, sizeof *eg->memo_pool);
    eg->memo_pool[eg->n_memo++] = e;
    HASH_ADD_KEYPTR(hh, eg->memo, e->key, e->bytes, e);
}

int32_t egraph_lookup(egraph *eg, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
                      const int32_t *ch) {
    int64_t buf[EG_KEY_FIXED + OPS_MAX_INPUTS];
    if (n_ch > OPS_MAX_INPUTS)
        return -1;
    int32_t w = eg_key(eg, kind, a, value, p, n_ch, ch, buf);
    egraph_memo *e = eg_memo_find(eg, buf, w);
    return e ? egraph_live(eg, e->node) : -1;
}

static void eg_class_push(int32_t **list, int32_t *n, int32_t *cap, int32_t v) {
    *list = base_grow(*list, cap, *n + 1, sizeof **list);
    (*list)[(*n)++] = v;
}

int32_t egraph_add(egraph *eg, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
                   const int32_t *ch, int32_t n_out, const ops_shape *out, graph_dtype dtype) {
    int64_t buf[EG_KEY_FIXED + OPS_MAX_INPUTS];
    BASE_ASSERT(n_ch >= 0 && n_ch <= OPS_MAX_INPUTS && n_out >= 1 && n_out <= OPS_MAX_OUTPUTS);
    int32_t w = eg_key(eg, kind, a, value, p, n_ch, ch, buf);
    egraph_memo *e = eg_memo_find(eg, buf, w);
    if (e)
        return egraph_find(eg, eg->nodes[e->node].cls);
    eg->nodes = base_grow(eg->nodes, &eg->cap_nodes, eg->n_nodes + 1, sizeof *eg->nodes);
    int32_t id = eg->n_nodes++;
    egraph_node *nd = &eg->nodes[id];
    memset(nd, 0, sizeof *nd);
    nd->kind = kind;
    nd->a = a;
    nd->value = value;
    if (p && kind == EGRAPH_OP)
        nd->p = *p;
    nd->n_ch = n_ch;
    eg->ch = base_grow(eg->ch, &eg->cap_ch, eg->n_ch + n_ch + 1, sizeof *eg->ch);
    nd->ch = eg->n_ch;
    for (int32_t k = 0; k < n_ch; k++)
        eg->ch[eg->n_ch++] = egraph_find(eg, ch[k]);
    eg->cls = base_grow(eg->cls, &eg->cap_cls, eg->n_cls + 1, sizeof *eg->cls);
    eg->uf = base_xrealloc(eg->uf, sizeof *eg->uf * (size_t)eg->cap_cls);
    int32_t c = eg->n_cls++;
    egraph_class *cl = &eg->cls[c];
    memset(cl, 0, sizeof *cl);
    cl->n_out = n_out;
    memcpy(cl->out, out, sizeof *out * (size_t)n_out);
    cl->dtype = dtype;
    cl->wo = kind == EGRAPH_WEIGHT || kind == EGRAPH_CONST;
    eg->uf[c] = c;
    nd->cls = c;
    eg_class_push(&cl->nodes, &cl->n_nodes, &cl->cap_nodes, id);
    eg->n_live++;
    eg_memo_add(eg, buf, w, id);
    return c;
}

int32_t egraph_live(const egraph *eg, int32_t n) {
    while (eg->nodes[n].dead)
        n = eg->nodes[n].same;
    return n;
}

int egraph_union(egraph *eg, int32_t a, int32_t b) {
    a = egraph_find(eg, a);
    b = egraph_find(eg, b);
    if (a == b)
        return 0;
    int32_t lo = a < b ? a : b, hi = a < b ? b : a;
    eg->uf[hi] = lo;
    eg->cls[lo].wo |= eg->cls[hi].wo;
    eg->n_unions++;
    return 1;
}

/* One pass: every live node re-entered in canonical form, congruent ones merged. 1 if a union
 * happened (another pass is needed). */
static int eg_rebuild_pass(egraph *eg) {
    int64_t buf[EG_KEY_FIXED + OPS_MAX_INPUTS];
    int merged = 0;
    eg_memo_clear(eg);
    for (int32_t n = 0; n < eg->n_nodes; n++) {
        egraph_node *nd = &eg->nodes[n];
        if (nd->dead)
            continue;
        int32_t *ch = eg->ch + nd->ch;
        for (int32_t k = 0; k < nd->n_ch; k++)
            ch[k] = egraph_find(eg, ch[k]);
        int32_t w = eg_key(eg, nd->kind, nd->a, nd->value, &nd->p, nd->n_ch, ch, buf);
        egraph_memo *e = eg_memo_find(eg, buf, w);
        if (!e) {
            eg_memo_add(eg, buf, w, n);
            continue;
        }
        nd->dead = 1; /* congruent to an earlier node: one class, one node */
        nd->same = e->node;
        eg->n_live--;
        merged |= egraph_union(eg, nd->cls, eg->nodes[e->node].cls);
    }
    return merged;
}

/* Weight-only flags: a class holding a weight, or an op node all of whose inputs are such. */
static void eg_weight_only(egraph *eg) {
    for (int changed = 1; changed;) {
        changed = 0;
        for (int32_t n = 0; n < eg->n_nodes; n++) {
            const egraph_node *nd = &eg->nodes[n];
            int32_t c = egraph_find(eg, nd->cls);
            if (nd->dead || eg->cls[c].wo || nd->kind == EGRAPH_INPUT)
                continue;
            int all = 1;
            for (int32_t k = 0; k < nd->n_ch && all; k++)
                all = eg->cls[egraph_find(eg, eg->ch[nd->ch + k])].wo;
            if (all)
                eg->cls[c].wo = changed = 1;
        }
    }
}

void egraph_rebuild(egraph *eg) {
    while (eg_rebuild_pass(eg))
        ;
    for (int32_t c = 0; c < eg->n_cls; c++)
        eg->cls[c].n_nodes = eg->cls[c].n_parents = 0;
    for (int32_t n = 0; n < eg->n_nodes; n++) {
        egraph_node *nd = &eg->nodes[n];
        if (nd->dead)
            continue;
        nd->cls = egraph_find(eg, nd->cls); /* canonical until the next union: finds stop at once */
        egraph_class *cl = &eg->cls[nd->cls];
        eg_class_push(&cl->nodes, &cl->n_nodes, &cl->cap_nodes, n);
        for (int32_t k = 0; k < nd->n_ch; k++) {
            egraph_class *pc = &eg->cls[eg->ch[nd->ch + k]]; /* canonical after the passes */
            if (pc->n_parents == 0 || pc->parents[pc->n_parents - 1] != n)
                eg_class_push(&pc->parents, &pc->n_parents, &pc->cap_parents, n);
        }
    }
    eg_weight_only(eg);
    eg->n_unions = 0;
}
