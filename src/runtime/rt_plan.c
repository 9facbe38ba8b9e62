/* rt_plan.c: the runtime's memory planner -- offsets in one arena for buffers with known
 * lifetimes, so that a buffer's bytes are reused once its last reader has run.
 *
 * Greedy by size (the heuristic of TFLite's arena planner): buffers are placed largest first, each
 * at the lowest aligned offset that overlaps no already placed buffer alive at a common step.
 * Invariant: two buffers whose [first, last] step ranges intersect get disjoint byte ranges. Host
 * code only; the arrays passed in belong to the caller.
 */
#include <stdlib.h>

#include "base.h"
#include "rt.h"

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

static int64_t rt_plan_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

int64_t rt_plan_arena(int32_t n, const rt_span *spans, int64_t align, int64_t *offset) {
    if (n <= 0)
        return 0;
    if (align < 1)
        align = 1;
    rt_plan_key *order = base_xmalloc((size_t)n * sizeof *order);
    int64_t *busy = base_xmalloc((size_t)n * 2 * sizeof *busy); /* (offset, end) of placed overlapping buffers */
    int32_t *placed = base_xmalloc((size_t)n * sizeof *placed);
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
        int32_t nb = 0;
        for (int32_t q = 0; q < k; q++) {
            int32_t j = placed[q];
            if (spans[j].first <= spans[i].last && spans[i].first <= spans[j].last) {
                busy[2 * nb] = offset[j];
                busy[2 * nb + 1] = offset[j] + rt_plan_up(spans[j].bytes, align);
                nb++;
            }
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
        placed[k] = i;
        if (at + size > total)
            total = at + size;
    }
    free(order);
    free(busy);
    free(placed);
    return total;
}
