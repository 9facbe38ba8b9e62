/* test_plan.c: the GPU runtime's memory planner (rt_plan_arena, src/runtime/rt_plan.c), host code
 * built without CUDA too. Its placement is checked against the straightforward O(n^2) greedy
 * it replaced (plan_ref below: every placed buffer scanned for each new one) on random lifetimes
 * of several shapes and on the lifetimes of every zoo model (a node per step, tensors alive from
 * their producer to their last reader): the same offsets and arena size, byte for byte. Also the
 * planner's invariant (buffers alive at a common step never share a byte, offsets aligned, all
 * inside the arena), the edge cases (no buffers, align < 1), and a chain of 100,000 buffers
 * (two slots, planned in well under a second, where the old scan took about 7 s).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "graph.h"
#include "rt.h"
#include "test.h"
#include "zoo.h"

/* --- the reference: the planner as it was (greedy by size, every placed buffer scanned) ----- */

typedef struct {
    int32_t idx;
    int64_t bytes, first;
} ref_key;

static int ref_cmp(const void *a, const void *b) {
    const ref_key *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int ref_cmp_off(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int64_t ref_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static int64_t plan_ref(int32_t n, const rt_span *spans, int64_t align, int64_t *offset) {
    if (n <= 0)
        return 0;
    if (align < 1)
        align = 1;
    ref_key *order = malloc((size_t)n * sizeof *order);
    int64_t *busy = malloc((size_t)n * 2 * sizeof *busy);
    int32_t *placed = malloc((size_t)n * sizeof *placed);
    for (int32_t i = 0; i < n; i++) {
        order[i].idx = i;
        order[i].bytes = ref_up(spans[i].bytes, align);
        order[i].first = spans[i].first;
    }
    qsort(order, (size_t)n, sizeof *order, ref_cmp);
    int64_t total = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = order[k].idx, nb = 0;
        int64_t size = order[k].bytes;
        for (int32_t q = 0; q < k; q++) {
            int32_t j = placed[q];
            if (spans[j].first <= spans[i].last && spans[i].first <= spans[j].last) {
                busy[2 * nb] = offset[j];
                busy[2 * nb + 1] = offset[j] + ref_up(spans[j].bytes, align);
                nb++;
            }
        }
        qsort(busy, (size_t)nb, 2 * sizeof *busy, ref_cmp_off);
        int64_t at = 0;
        for (int32_t q = 0; q < nb; q++) {
            if (at + size <= busy[2 * q])
                break;
            if (busy[2 * q + 1] > at)
                at = busy[2 * q + 1];
        }
        offset[i] = at;
        placed[k] = i;
        if (at + size > total)
            total = at + size;
    }
    free(order);
    free(busy);
    free(placed);
    return total;
}

/* --- helpers ---------------------------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_u64(void) { /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The number of pairs breaking the invariant, and of buffers misaligned or outside the arena. */
static int64_t plan_violations(int32_t n, const rt_span *sp, int64_t align, const int64_t *off, int64_t total) {
    int64_t bad = 0;
    for (int32_t i = 0; i < n; i++) {
        bad += off[i] % align != 0 || off[i] < 0 || off[i] + sp[i].bytes > total;
        for (int32_t j = i + 1; j < n; j++) {
            int live = sp[i].first <= sp[j].last && sp[j].first <= sp[i].last;
            int mem = off[i] < off[j] + sp[j].bytes && off[j] < off[i] + sp[i].bytes;
            bad += live && mem && sp[i].bytes > 0 && sp[j].bytes > 0;
        }
    }
    return bad;
}

/* rt_plan_arena and plan_ref agree on spans (offsets and size); the invariant holds. */
static void check_same(int32_t n, const rt_span *sp, int64_t align, int check_invariant, const char *what) {
    int64_t *o1 = calloc((size_t)n + 1, sizeof *o1), *o2 = calloc((size_t)n + 1, sizeof *o2);
    int64_t t1 = rt_plan_arena(n, sp, align, o1), t2 = plan_ref(n, sp, align, o2);
    int same = t1 == t2 && !memcmp(o1, o2, (size_t)n * sizeof *o1);
    if (!same)
        fprintf(stderr, "%s: arena %lld bytes, the reference %lld\n", what, (long long)t1, (long long)t2);
    CHECK(same);
    if (check_invariant)
        CHECK_EQ_INT(plan_violations(n, sp, align < 1 ? 1 : align, o1, t1), 0);
    free(o1);
    free(o2);
}

/* --- tests ------------------------------------------------------------------------------------ */

static void test_edges(void) {
    CHECK_EQ_INT(rt_plan_arena(0, NULL, 256, NULL), 0);
    rt_span one = {100, 3, 3};
    int64_t off = -1;
    CHECK_EQ_INT(rt_plan_arena(1, &one, 256, &off), 256);
    CHECK_EQ_INT(off, 0);
    CHECK_EQ_INT(rt_plan_arena(1, &one, 0, &off), 100); /* align < 1 counts as 1 */
    /* a chain of equal buffers: two slots, alternating */
    rt_span chain[4] = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
    int64_t o[4];
    CHECK_EQ_INT(rt_plan_arena(4, chain, 256, o), 2 * 1024);
    CHECK(o[0] == o[2] && o[1] == o[3] && o[0] != o[1]);
    check_same(4, chain, 256, 1, "chain of 4");
    /* the same step range for all: nothing shared */
    rt_span same[3] = {{10, 0, 5}, {300, 0, 5}, {20, 0, 5}};
    CHECK_EQ_INT(rt_plan_arena(3, same, 64, o), 64 + 320 + 64);
    check_same(3, same, 64, 1, "all alive together");
}

/* Random lifetimes of several shapes: short and long lives, few distinct sizes (ties in the
 * order), zero-byte buffers, wide and narrow step ranges, alignments 1 to 256. */
static void test_random(void) {
    for (int round = 0; round < 400; round++) {
        int32_t n = 1 + (int32_t)(next_u64() % (round < 300 ? 150 : 1500));
        int32_t steps = 1 + (int32_t)(next_u64() % (round % 3 == 0 ? 10 : 2000));
        int32_t life = 1 + (int32_t)(next_u64() % (round % 4 == 0 ? 5 : 200));
        int64_t sizes = round % 2 ? 4 : 100000, align = (int64_t)1 << (next_u64() % 9);
        rt_span *sp = malloc((size_t)n * sizeof *sp);
        for (int32_t i = 0; i < n; i++) {
            sp[i].bytes = (int64_t)(next_u64() % (uint64_t)sizes) * (round % 2 ? 1000 : 1);
            sp[i].first = (int32_t)(next_u64() % (uint64_t)steps);
            sp[i].last = sp[i].first + (int32_t)(next_u64() % (uint64_t)(next_u64() % 8 == 0 ? 20 * life : life));
        }
        char what[64];
        snprintf(what, sizeof what, "random round %d (%d buffers)", round, (int)n);
        check_same(n, sp, align, n <= 400, what);
        free(sp);
    }
}

/* The lifetimes of a zoo model as the runtime plans them, simplified: every node one step in
 * topological order, every node output a buffer from its producer's step to its last reader's
 * (an output: one step past the end). */
static int32_t zoo_spans(const graph *g, rt_span *sp) {
    int32_t *order = malloc((size_t)g->n_nodes * sizeof *order), *step = malloc((size_t)g->n_nodes * sizeof *step);
    int32_t *first = malloc((size_t)g->n_tensors * sizeof *first), *last = malloc((size_t)g->n_tensors * sizeof *last);
    char err[256];
    CHECK_EQ_INT(graph_topo_order(g, order, err, sizeof err), 0);
    for (int32_t t = 0; t < g->n_tensors; t++)
        first[t] = last[t] = -1;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const graph_node *nd = &g->nodes[order[k]];
        step[order[k]] = k;
        for (int32_t o = 0; o < nd->n_out; o++)
            first[nd->out[o]] = last[nd->out[o]] = k;
        for (int32_t i = 0; i < nd->n_in; i++)
            if (first[nd->in[i]] >= 0 && k > last[nd->in[i]])
                last[nd->in[i]] = k;
    }
    for (int32_t j = 0; j < g->n_outputs; j++)
        last[g->outputs[j]] = g->n_nodes;
    int32_t n = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (first[t] >= 0) {
            sp[n].bytes = ops_shape_numel(&g->tensors[t].shape) * 4;
            sp[n].first = first[t];
            sp[n++].last = last[t];
        }
    free(order);
    free(step);
    free(first);
    free(last);
    return n;
}

static void test_zoo(void) {
    const char *const *names = zoo_names();
    for (int32_t m = 0; names[m]; m++) {
        char err[256];
        graph *g = zoo_build(names[m], 1, err, sizeof err);
        CHECK(g != NULL);
        if (!g)
            continue;
        rt_span *sp = malloc((size_t)g->n_tensors * sizeof *sp);
        int32_t n = zoo_spans(g, sp);
        int64_t *off = malloc((size_t)n * sizeof *off), sum = 0;
        for (int32_t i = 0; i < n; i++)
            sum += (sp[i].bytes + 255) / 256 * 256;
        int64_t total = rt_plan_arena(n, sp, 256, off);
        printf("  %-13s %5d buffers: arena %10lld bytes (unplanned %lld)\n", names[m], (int)n, (long long)total,
               (long long)sum);
        check_same(n, sp, 256, 1, names[m]);
        CHECK(total < sum);
        free(off);
        free(sp);
        graph_free(g);
    }
}

/* A chain of 100,000 buffers, each read by the next step only: two slots, in linear-ish time. */
static void test_long_chain(void) {
    enum { N = 100000 };
    rt_span *sp = malloc(N * sizeof *sp);
    int64_t *off = malloc(N * sizeof *off);
    for (int32_t i = 0; i < N; i++)
        sp[i] = (rt_span){64, i, i + 1};
    double t0 = base_now();
    int64_t total = rt_plan_arena(N, sp, 256, off);
    double secs = base_now() - t0;
    printf("  chain of %d buffers planned in %.3f s\n", (int)N, secs);
    CHECK_EQ_INT(total, 2 * 256);
    int bad = 0;
    for (int32_t i = 0; i + 1 < N; i++)
        bad += off[i] == off[i + 1];
    CHECK_EQ_INT(bad, 0);
    CHECK(secs < 2.0); /* about 0.02 s; the scan of every placed buffer took about 7 s */
    free(sp);
    free(off);
}

int main(void) {
    test_edges();
    test_random();
    test_zoo();
    test_long_chain();
    return TEST_REPORT();
}
