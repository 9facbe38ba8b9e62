/* rt_plan.c: the runtime's planner, host code (built without CUDA too, for tests/test_plan.c):
 * what each node is (rt_classify), and offsets in one arena for buffers with known lifetimes, so
 * that a buffer's bytes are reused once its last reader has run (rt_plan_arena).
 *
 * Classification: each node's class is decided once, by the step that can decide it, and read by
 * the later steps and by rt.c: dead and folded first (from the graph alone), then the scatter
 * stores (rt.c: at 3xtf32 they need the device's kernel choice), the fusions (rt_fuse.c), the
 * views (rt_view.c). A node keeps its class once it is not RT_N_RUN, except a split view whose
 * parts would be misaligned, which runs after all.
 *
 * The arena: greedy by size (the heuristic of TFLite's arena planner): buffers are placed largest first, each
 * at the lowest aligned offset that overlaps no already placed buffer alive at a common step.
 * Invariant: two buffers whose [first, last] step ranges intersect get disjoint byte ranges. The
 * placed buffers alive at a common step with the next one are found through a max-tree over the
 * buffers ordered by first step, so planning n buffers costs O((n + K) log n) for K such pairs
 * (a chain: O(n log n)) rather than a scan of every placed buffer per buffer. Host code only; the
 * arrays passed in belong to the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "rt.h"

int rt_live_nodes(const graph *g, const int32_t *order, uint8_t *live) {
    uint8_t *need = calloc((size_t)g->n_tensors + 1, 1);
    if (!need)
        return -1;
    for (int32_t j = 0; j < g->n_outputs; j++)
        need[g->outputs[j]] = 1;
    for (int32_t k = g->n_nodes - 1; k >= 0; k--) {
        const graph_node *nd = &g->nodes[order[k]];
        live[order[k]] = 0;
        for (int32_t o = 0; o < nd->n_out; o++)
            if (need[nd->out[o]])
                live[order[k]] = 1;
        if (live[order[k]])
            for (int32_t i = 0; i < nd->n_in; i++)
                need[nd->in[i]] = 1;
    }
    free(need);
    return 0;
}

/* --- classification ------------------------------------------------------------------------- */

void rt_classes_free(rt_classes *cl) {
    free(cl->ncls);
    free(cl->fuse_add);
    free(cl->fuse_act);
    free(cl->fuse_pre);
    free(cl->isconst);
    free(cl->tclass);
    free(cl->alias_of);
    free(cl->alias_off);
    memset(cl, 0, sizeof *cl);
}

int rt_classes_init(rt_classes *cl, const graph *g, const int32_t *order, const uint8_t *live) {
    const size_t nn = (size_t)g->n_nodes + 1, nt = (size_t)g->n_tensors + 1;
    memset(cl, 0, sizeof *cl);
    cl->g = g;
    cl->order = order;
    cl->live = live;
    cl->ncls = calloc(nn, 1);
    cl->fuse_add = malloc(nn * sizeof *cl->fuse_add);
    cl->fuse_act = calloc(nn, 1);
    cl->fuse_pre = malloc(nn * sizeof *cl->fuse_pre);
    cl->isconst = calloc(nt, 1);
    cl->tclass = calloc(nt, 1);
    cl->alias_of = malloc(nt * sizeof *cl->alias_of);
    cl->alias_off = calloc(nt, sizeof *cl->alias_off);
    if (!cl->ncls || !cl->fuse_add || !cl->fuse_act || !cl->fuse_pre || !cl->isconst || !cl->tclass ||
        !cl->alias_of || !cl->alias_off) {
        rt_classes_free(cl);
        return -1;
    }
    for (int32_t k = 0; k < g->n_nodes; k++)
        cl->fuse_add[k] = cl->fuse_pre[k] = -1;
    for (int32_t t = 0; t < g->n_tensors; t++)
        cl->alias_of[t] = t;
    return 0;
}

/* Dead nodes, and folded ones: every input a weight or a folded value (a walk in topological
 * order, so an input's constness is known when its reader is met). Every other live node starts
 * as RT_N_RUN for the later steps to take from. */
static void rt_classify_fold(rt_classes *cl) {
    const graph *g = cl->g;
    for (int32_t t = 0; t < g->n_tensors; t++)
        cl->isconst[t] = g->tensors[t].kind == GRAPH_T_WEIGHT;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const int32_t id = cl->order[k];
        const graph_node *nd = &g->nodes[id];
        if (!cl->live[id]) {
            cl->ncls[id] = RT_N_DEAD;
            cl->n_dead++;
            continue;
        }
        int all = !cl->no_fold;
        for (int32_t i = 0; i < nd->n_in && all; i++)
            all = cl->isconst[nd->in[i]];
        cl->ncls[id] = all ? RT_N_FOLD : RT_N_RUN;
        for (int32_t o = 0; o < nd->n_out && all; o++) {
            cl->isconst[nd->out[o]] = 1;
            cl->tclass[nd->out[o]] = RT_T_PERSIST;
        }
        cl->n_fold += all;
    }
}

void rt_classes_scatter(rt_classes *cl, const rt_scatter *sc) {
    for (int32_t q = 0; q < sc->n_nodes; q++)
        cl->ncls[sc->nodes[q]] = RT_N_SCATTER;
    for (int32_t q = 0; q < sc->n_leaves; q++) {
        cl->tclass[sc->leaves[q]] = RT_T_ALIAS;
        cl->alias_of[sc->leaves[q]] = sc->root;
        cl->alias_off[sc->leaves[q]] = sc->leaf_off[q];
    }
    cl->tclass[sc->root] = RT_T_ARENA; /* so that no concat view takes the bytes its leaves hold */
}

int rt_classify(rt_classes *cl, rt_scatter_planner scatter, void *user, char *err, size_t errlen) {
    rt_classify_fold(cl);
    if (!cl->no_scatter && scatter && scatter(user, cl, err, errlen) < 0)
        return -1;
    if (!cl->no_fuse && rt_fuse_plan(cl, err, errlen) < 0)
        return -1;
    return rt_view_plan(cl, err, errlen);
}

/* --- the arena ------------------------------------------------------------------------------ */

typedef struct {
    int32_t idx;
    int64_t bytes, first;
} rt_plan_key;

static int rt_plan_cmp(const void *a, const void *b) {
    const rt_plan_key *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int rt_plan_cmp_off(const void *a, const void *b) {
    const int64_t *x = a, *y = b; /* pairs (offset, end) */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int rt_plan_cmp_first(const void *a, const void *b) {
    const int32_t *x = a, *y = b; /* pairs (first step, buffer) */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int64_t rt_plan_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* The placed buffers, ordered by first step: leaf p of a complete binary tree (leaves at
 * [cap, 2 cap)) holds the last step of the p-th buffer in that order once it is placed; an inner
 * node the largest of its leaves (INT64_MIN, below any step: nothing placed there). */
typedef struct {
    int32_t cap;       /* leaves: a power of two >= n */
    int64_t *maxlast;  /* [2 cap] */
    int32_t *by_first; /* [n] buffer ids in first-step order */
    int32_t *pos;      /* [n] position of each buffer in by_first */
} rt_plan_tree;

static void rt_plan_tree_init(rt_plan_tree *t, int32_t n, const rt_span *spans) {
    BASE_ASSERT(n <= INT32_MAX / 4); /* 2 cap fits in int32 (a graph's tensors are far fewer) */
    t->cap = 1;
    while (t->cap < n)
        t->cap *= 2;
    t->maxlast = base_xmalloc(2 * (size_t)t->cap * sizeof *t->maxlast);
    for (int32_t k = 0; k < 2 * t->cap; k++)
        t->maxlast[k] = INT64_MIN;
    int32_t *pairs = base_xmalloc((size_t)n * 2 * sizeof *pairs);
    for (int32_t i = 0; i < n; i++)
        pairs[2 * i] = spans[i].first, pairs[2 * i + 1] = i;
    qsort(pairs, (size_t)n, 2 * sizeof *pairs, rt_plan_cmp_first);
    t->by_first = base_xmalloc((size_t)n * sizeof *t->by_first);
    t->pos = base_xmalloc((size_t)n * sizeof *t->pos);
    for (int32_t p = 0; p < n; p++) {
        t->by_first[p] = pairs[2 * p + 1];
        t->pos[t->by_first[p]] = p;
    }
    free(pairs);
}

static void rt_plan_tree_free(rt_plan_tree *t) {
    free(t->maxlast);
    free(t->by_first);
    free(t->pos);
}

static void rt_plan_tree_place(rt_plan_tree *t, int32_t i, int32_t last) {
    for (int32_t k = t->cap + t->pos[i]; k >= 1 && t->maxlast[k] < last; k /= 2)
        t->maxlast[k] = last;
}

/* The placed buffers alive at a common step with [first, last]: those among the first `end`
 * positions (first step <= last) whose last step is >= first, into hit; returns their count.
 * Subtrees with nothing alive that late are skipped, so each node visited leads to a hit. */
static int32_t rt_plan_tree_overlaps(const rt_plan_tree *t, int32_t end, int32_t first, int32_t *hit) {
    typedef struct {
        int32_t k, lo, size; /* node k covers the positions [lo, lo + size) */
    } rt_plan_visit;
    rt_plan_visit stack[64]; /* depth first, one pending sibling per level: log2(cap) + 1 <= 32 */
    int32_t depth = 0, nh = 0;
    stack[depth++] = (rt_plan_visit){1, 0, t->cap};
    while (depth > 0) {
        rt_plan_visit v = stack[--depth];
        if (v.lo >= end || t->maxlast[v.k] < first)
            continue;
        if (v.size == 1) {
            hit[nh++] = t->by_first[v.lo];
            continue;
        }
        int32_t half = v.size / 2;
        stack[depth++] = (rt_plan_visit){2 * v.k + 1, v.lo + half, half};
        stack[depth++] = (rt_plan_visit){2 * v.k, v.lo, half};
    }
    return nh;
}

/* The number of positions whose first step is <= step (binary search over by_first). */
static int32_t rt_plan_tree_upto(const rt_plan_tree *t, int32_t n, const rt_span *spans, int32_t step) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (spans[t->by_first[mid]].first <= step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t rt_plan_arena(int32_t n, const rt_span *spans, int64_t align, int64_t *offset) {
    if (n <= 0)
        return 0;
    if (align < 1)
        align = 1;
    rt_plan_key *order = base_xmalloc((size_t)n * sizeof *order);
    int64_t *busy = base_xmalloc((size_t)n * 2 * sizeof *busy); /* (offset, end) of placed overlapping buffers */
    int32_t *hit = base_xmalloc((size_t)n * sizeof *hit);
    rt_plan_tree tree;
    rt_plan_tree_init(&tree, n, spans);
    for (int32_t i = 0; i < n; i++) {
        order[i].idx = i;
        order[i].bytes = rt_plan_up(spans[i].bytes, align);
        order[i].first = spans[i].first;
    }
    qsort(order, (size_t)n, sizeof *order, rt_plan_cmp);
    int64_t total = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = order[k].idx;
        int64_t size = order[k].bytes;
        int32_t nb = rt_plan_tree_overlaps(&tree, rt_plan_tree_upto(&tree, n, spans, spans[i].last), spans[i].first,
                                           hit);
        for (int32_t q = 0; q < nb; q++) {
            int32_t j = hit[q];
            busy[2 * q] = offset[j];
            busy[2 * q + 1] = offset[j] + rt_plan_up(spans[j].bytes, align);
        }
        qsort(busy, (size_t)nb, 2 * sizeof *busy, rt_plan_cmp_off);
        int64_t at = 0;
        for (int32_t q = 0; q < nb; q++) {
            if (at + size <= busy[2 * q])
                break; /* fits in the gap before this buffer */
            if (busy[2 * q + 1] > at)
                at = busy[2 * q + 1];
        }
        offset[i] = at;
        rt_plan_tree_place(&tree, i, spans[i].last);
        if (at + size > total)
            total = at + size;
    }
    free(order);
    free(busy);
    free(hit);
    rt_plan_tree_free(&tree);
    return total;
}
