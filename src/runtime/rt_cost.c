/* rt_cost.c: the measured cost model (rt_cost.h): node configurations timed on the GPU through
 * the runtime, cached in a uthash table keyed by "DEVICE<TAB>KEY" and persisted as sorted text.
 *
 * A measurement builds a one-node graph whose inputs are all graph inputs (nothing is folded),
 * captures the node RT_COST_REPEAT times into one CUDA graph, and takes the median over
 * RT_COST_REPS timed replays after warm-up, divided by the repeat count: launch overhead is
 * spread over the repeats, as it is over a whole model's graph. The table owns its entries.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "base.h"
#include "cost.h"
#include "graph.h"
#include "rt.h"
#include "rt_cost.h"

#define RT_COST_REPEAT 10
#define RT_COST_REPS 15
#define RT_COST_WARMUP 3

typedef struct {
    char *id; /* "DEVICE\tKEY", owned */
    double us;
    UT_hash_handle hh;
} rt_cost_entry;

struct rt_cost_cache {
    rt_cost_entry *map;
};

rt_cost_cache *rt_cost_cache_new(void) { return calloc(1, sizeof(rt_cost_cache)); }

void rt_cost_cache_free(rt_cost_cache *c) {
    if (!c)
        return;
    rt_cost_entry *e, *tmp;
    HASH_ITER(hh, c->map, e, tmp) {
        HASH_DEL(c->map, e);
        free(e->id);
        free(e);
    }
    free(c);
}

int32_t rt_cost_cache_size(const rt_cost_cache *c) { return c ? (int32_t)HASH_COUNT(c->map) : 0; }

static char *rt_cost_id(const char *device, const char *key) {
    size_t a = strlen(device), b = strlen(key);
    char *id = malloc(a + b + 2);
    if (!id)
        return NULL;
    memcpy(id, device, a);
    id[a] = '\t';
    memcpy(id + a + 1, key, b + 1);
    return id;
}

int rt_cost_lookup(const rt_cost_cache *c, const char *device, const char *key, double *us) {
    if (!c)
        return 0;
    char *id = rt_cost_id(device, key);
    if (!id)
        return 0;
    rt_cost_entry *e = NULL;
    HASH_FIND(hh, c->map, id, strlen(id), e);
    free(id);
    if (!e)
        return 0;
    *us = e->us;
    return 1;
}

void rt_cost_put(rt_cost_cache *c, const char *device, const char *key, double us) {
    if (!c)
        return;
    char *id = rt_cost_id(device, key);
    if (!id)
        return; /* out of memory: the entry is only not cached */
    rt_cost_entry *e = NULL;
    HASH_FIND(hh, c->map, id, strlen(id), e);
    if (e) {
        e->us = us;
        free(id);
        return;
    }
    e = malloc(sizeof *e);
    if (!e) {
        free(id);
        return;
    }
    e->id = id;
    e->us = us;
    HASH_ADD_KEYPTR(hh, c->map, e->id, strlen(e->id), e);
}

const char *rt_cost_default_path(char *buf, size_t len) {
    const char *env = getenv("TASC_COST_CACHE");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else
        snprintf(buf, len, "%s/.cache/tasc/cost_measured.txt", getenv("HOME") ? getenv("HOME") : ".");
    return buf;
}

/* --- keys ----------------------------------------------------------------------------------- */

int rt_cost_key(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, char *buf, size_t len) {
    return cost_key_text(op, p, n_in, in, buf, len);
}

/* --- files ---------------------------------------------------------------------------------- */

static int rt_cost_load_entry(void *arg, const char *device, const char *key, double us, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    rt_cost_put(arg, device, key, us);
    return 0;
}

int rt_cost_cache_load(rt_cost_cache *c, const char *path, int missing_ok, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT && missing_ok)
            return 0;
        return base_fail(err, errlen, "%s: %s", path, strerror(errno));
    }
    int rc = cost_cache_read(f, path, rt_cost_load_entry, c, err, errlen);
    fclose(f);
    return rc;
}

static int rt_cost_cmp(const void *a, const void *b) {
    return strcmp((*(rt_cost_entry *const *)a)->id, (*(rt_cost_entry *const *)b)->id);
}

int rt_cost_cache_save(const rt_cost_cache *c, const char *path, char *err, size_t errlen) {
    int32_t n = rt_cost_cache_size(c);
    rt_cost_entry **all = base_xmalloc(((size_t)n + 1) * sizeof *all);
    int32_t k = 0;
    for (rt_cost_entry *e = c ? c->map : NULL; e; e = e->hh.next)
        all[k++] = e;
    qsort(all, (size_t)n, sizeof *all, rt_cost_cmp);
    base_afile f;
    if (base_mkdirs_for(path, err, errlen) < 0 || base_afile_open(&f, path, err, errlen) < 0) {
        free(all);
        return -1;
    }
    fprintf(f.f, "# tasc measured cost cache (rt_cost.h): DEVICE<TAB>KEY<TAB>MICROSECONDS, sorted\n");
    for (int32_t i = 0; i < n; i++)
        fprintf(f.f, "%s\t%.3f\n", all[i]->id, all[i]->us);
    free(all);
    return base_afile_commit(&f, err, errlen);
}

/* --- measuring ------------------------------------------------------------------------------ */

static int rt_cost_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int rt_cost_measure(rt_cost_cache *c, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
                    double *us, char *err, size_t errlen) {
    char key[4096];
    if (op < 0 || op >= OP_COUNT)
        return base_fail(err, errlen, "cost: no such op");
    if (!rt_available(err, errlen))
        return -1;
    const char *dev = rt_device_name();
    int keyed = rt_cost_key(op, p, n_in, in, key, sizeof key) == 0;
    if (keyed && rt_cost_lookup(c, dev, key, us))
        return 0;
    if (n_in == 0) { /* constants are computed once at setup */
        *us = 0.0;
        if (keyed)
            rt_cost_put(c, dev, key, 0.0);
        return 0;
    }
    graph *g = graph_new("cost");
    if (!g)
        return base_fail(err, errlen, "out of memory");
    int32_t ins[OPS_MAX_INPUTS], outs[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < n_in && k < OPS_MAX_INPUTS; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "in%d", (int)k);
        ins[k] = graph_input_typed(g, nm, op == OP_GATHER && k == 1 ? GRAPH_DT_I64 : GRAPH_DT_F32, in[k].rank,
                                   in[k].dims);
    }
    int32_t n_out = graph_add(g, "node", op, p, n_in, ins, outs);
    for (int32_t k = 0; k < n_out; k++)
        graph_mark_output(g, outs[k]);
    if (!graph_ok(g)) {
        base_fail(err, errlen, "cost: %s", graph_error(g));
        graph_free(g);
        return -1;
    }
    rt_opts o = {0};
    o.no_fold = 1;
    o.capture_repeat = RT_COST_REPEAT;
    rt_ctx *ctx = rt_ctx_new(g, &o, err, errlen);
    graph_free(g);
    if (!ctx)
        return -1;
    double ms[RT_COST_REPS];
    int rc = rt_time(ctx, RT_COST_WARMUP, RT_COST_REPS, ms, err, errlen);
    rt_ctx_free(ctx);
    if (rc < 0)
        return -1;
    qsort(ms, RT_COST_REPS, sizeof ms[0], rt_cost_cmp_d);
    *us = ms[RT_COST_REPS / 2] * 1000.0 / RT_COST_REPEAT;
    if (keyed)
        rt_cost_put(c, dev, key, *us);
    return 0;
}
