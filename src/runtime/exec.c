/* exec.c: the CPU reference executor, the oracle for every other executor and every rewrite.
 *
 * A run validates the graph, takes a topological order, keeps only the nodes whose results reach
 * a graph output, and evaluates them one by one with the op table's CPU references. Every
 * tensor has a use count (one per consuming input slot, plus one pin per graph output); its
 * buffer is allocated when it is produced (weights: just before their first use) and freed when
 * the count reaches zero, so at most the live working set is held. Inputs the caller passes are
 * borrowed, never freed or written. Generated inputs: float32 inputs are graph_fill_normal(seed
 * + i, mean 0, std 1); int64 inputs (ids) are uniform integers in [0, min(100, V)) from a
 * counter-based generator keyed on (seed + i, element index), where V is the smallest table of
 * a gather that reads them, so generated ids are always in range.
 * Results do not depend on the thread count: the executor is sequential and the CPU references
 * are deterministic.
 * Weight values are not copied where they already exist: DATA weights are read from their blob,
 * and RANDOM weights, a pure function of (seed, mean, std, numel), are generated once per process
 * into a cache shared by all runs and graphs (insert-only, so its buffers stay valid until
 * exec_cache_clear; at most EXEC_CACHE_MAX bytes, beyond which weights are generated per run).
 * Such borrowed buffers count in the run's statistics as if they had been allocated.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "exec.h"

#define EXEC_MAX_GEN_ID 100           /* generated ids lie in [0, 100) */
#define EXEC_MAX_EXACT_ID (1 << 24)   /* int64 values are held as exact floats */

#define EXEC_CACHE_MAX (INT64_C(1) << 30) /* bytes of cached random weights */

/* The cache of RANDOM weight values: a list, searched linearly (a model has at most a few
 * thousand weights), guarded by one mutex; entries live until exec_cache_clear. */
typedef struct exec_cached {
    uint64_t seed;
    float mean, std;
    int64_t numel;
    float *values; /* [numel] */
    struct exec_cached *next;
} exec_cached;
static exec_cached *exec_cache_head;
static int64_t exec_cache_bytes;
static pthread_mutex_t exec_cache_mu = PTHREAD_MUTEX_INITIALIZER;

/* The values of a RANDOM weight of n elements, from the cache (generated on first use); NULL
 * when the cache is full or out of memory (the caller then generates them itself). */
static const float *exec_cache_get(const graph_init *in, int64_t n) {
    const float *v = NULL;
    pthread_mutex_lock(&exec_cache_mu);
    for (exec_cached *e = exec_cache_head; e && !v; e = e->next)
        if (e->seed == in->seed && e->numel == n && !memcmp(&e->mean, &in->mean, sizeof(float)) &&
            !memcmp(&e->std, &in->std, sizeof(float)))
            v = e->values;
    int64_t b = n * (int64_t)sizeof(float);
    if (!v && n > 0 && b <= EXEC_CACHE_MAX - exec_cache_bytes) {
        exec_cached *e = malloc(sizeof *e);
        float *p = malloc((size_t)b);
        if (e && p) {
            graph_fill_normal(p, n, in->seed, in->mean, in->std);
            *e = (exec_cached){.seed = in->seed, .mean = in->mean, .std = in->std, .numel = n, .values = p,
                               .next = exec_cache_head};
            exec_cache_head = e;
            exec_cache_bytes += b;
            v = p;
        } else {
            free(e);
            free(p);
        }
    }
    pthread_mutex_unlock(&exec_cache_mu);
    return v;
}

void exec_cache_clear(void) {
    pthread_mutex_lock(&exec_cache_mu);
    while (exec_cache_head) {
        exec_cached *e = exec_cache_head;
        exec_cache_head = e->next;
        free(e->values);
        free(e);
    }
    exec_cache_bytes = 0;
    pthread_mutex_unlock(&exec_cache_mu);
}

int64_t exec_cache_size(void) {
    pthread_mutex_lock(&exec_cache_mu);
    int64_t b = exec_cache_bytes;
    pthread_mutex_unlock(&exec_cache_mu);
    return b;
}

typedef struct {
    float **buf;        /* [n_tensors]: the tensor's values, numel floats, or NULL */
    uint8_t *owned;     /* [n_tensors]: 1 if buf was allocated here, 2 if borrowed from a weight's
                           blob or the cache (counted, not freed), 0 a borrowed input */
    int32_t *uses;      /* [n_tensors]: consuming input slots still to run, plus output pins */
    int64_t live, peak, total;
} exec_state;

static uint64_t exec_mix(uint64_t x) { /* splitmix64 finaliser */
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* numel of t as a byte count; -1 if it does not fit in size_t. */
static int64_t exec_bytes(const graph *g, int32_t t) {
    int64_t n = ops_shape_numel(&g->tensors[t].shape);
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(float) / 2)
        return -1;
    return n * (int64_t)sizeof(float);
}

static float *exec_alloc(exec_state *s, const graph *g, int32_t t, char *err, size_t errlen) {
    int64_t b = exec_bytes(g, t);
    float *p = b < 0 ? NULL : malloc(b ? (size_t)b : 1);
    if (!p) {
        base_fail(err, errlen, "out of memory: cannot allocate %lld bytes for tensor '%s'", (long long)b,
                  g->tensors[t].name);
        return NULL;
    }
    s->buf[t] = p;
    s->owned[t] = 1;
    s->live += b;
    s->total += b;
    if (s->live > s->peak)
        s->peak = s->live;
    return p;
}

static void exec_release(exec_state *s, const graph *g, int32_t t) {
    if (!s->buf[t])
        return;
    if (s->owned[t]) {
        if (s->owned[t] == 1)
            free(s->buf[t]);
        s->live -= exec_bytes(g, t);
    }
    s->buf[t] = NULL;
    s->owned[t] = 0;
}

/* Drop one use of t; free it when none is left. */
static void exec_unuse(exec_state *s, const graph *g, int32_t t) {
    if (--s->uses[t] == 0)
        exec_release(s, g, t);
}

int64_t exec_id_bound(const graph *g, const uint8_t *live, int32_t t) {
    int64_t v = INT64_MAX;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        const graph_node *nd = &g->nodes[n];
        if (!live[n] || nd->op != OP_GATHER || nd->n_in < 2 || nd->in[1] != t)
            continue;
        const ops_shape *tab = &g->tensors[nd->in[0]].shape;
        if (tab->rank > 0 && tab->dims[0] < v)
            v = tab->dims[0];
    }
    return v;
}

/* Produce graph input i into the state: borrowed from the caller or generated. */
static int exec_input(exec_state *s, const graph *g, const uint8_t *live, int32_t i, const float *given,
                      uint64_t seed, char *err, size_t errlen) {
    int32_t t = g->inputs[i];
    const graph_tensor *ts = &g->tensors[t];
    int64_t n = ops_shape_numel(&ts->shape);
    if (given) {
        if (ts->dtype == GRAPH_DT_I64) {
            for (int64_t k = 0; k < n; k++) {
                float v = given[k];
                if (!(v == floorf(v) && fabsf(v) <= (float)EXEC_MAX_EXACT_ID)) {
                    base_fail(err, errlen, "input '%s': element %lld is %g, not an integer id in [-2^24, 2^24]",
                              ts->name, (long long)k, (double)v);
                    return -1;
                }
            }
        }
        s->buf[t] = (float *)given; /* borrowed: never written, never freed */
        s->owned[t] = 0;
        return 0;
    }
    float *p = exec_alloc(s, g, t, err, errlen);
    if (!p)
        return -1;
    uint64_t sd = seed + (uint64_t)i;
    if (ts->dtype == GRAPH_DT_I64) {
        int64_t hi = exec_id_bound(g, live, t);
        if (hi > EXEC_MAX_GEN_ID)
            hi = EXEC_MAX_GEN_ID;
        if (hi <= 0) {
            for (int64_t k = 0; k < n; k++)
                p[k] = 0.0f;
        } else {
            uint64_t key = exec_mix(sd);
            for (int64_t k = 0; k < n; k++)
                p[k] = (float)(int64_t)(exec_mix(key ^ exec_mix((uint64_t)k)) % (uint64_t)hi);
        }
    } else {
        graph_fill_normal(p, n, sd, 0.0f, 1.0f);
    }
    return 0;
}

/* The CPU references cannot report errors, and gather's ids are the one place where data
 * (possibly from the user) become memory indices: check them before the kernel runs. */
static int exec_check_ids(const graph *g, const graph_node *nd, const float *ids, char *err, size_t errlen) {
    const ops_shape *tab = &g->tensors[nd->in[0]].shape;
    int64_t v = tab->rank > 0 ? tab->dims[0] : 0;
    int64_t n = ops_shape_numel(&g->tensors[nd->in[1]].shape);
    for (int64_t k = 0; k < n; k++) {
        float x = ids[k];
        if (!(x == floorf(x) && x >= 0.0f && (double)x < (double)v)) {
            base_fail(err, errlen, "node '%s': id %g at element %lld of '%s' is not an integer in [0, %lld)",
                     nd->name, (double)x, (long long)k, g->tensors[nd->in[1]].name, (long long)v);
            return -1;
        }
    }
    return 0;
}

/* Materialise weight t: borrowed from its blob or the cache where possible, else computed into a
 * buffer of its own. */
static int exec_weight(exec_state *s, const graph *g, int32_t t, char *err, size_t errlen) {
    const graph_tensor *ts = &g->tensors[t];
    int64_t n = ops_shape_numel(&ts->shape), b = exec_bytes(g, t);
    const float *v = NULL;
    if (b >= 0 && ts->init.kind == GRAPH_INIT_DATA && ts->init.blob && graph_blob_numel(ts->init.blob) == n)
        v = graph_blob_data(ts->init.blob);
    else if (b >= 0 && ts->init.kind == GRAPH_INIT_RANDOM)
        v = exec_cache_get(&ts->init, n);
    if (v && n > 0) {
        s->buf[t] = (float *)v; /* read-only: the CPU references never write their inputs */
        s->owned[t] = 2;
        s->live += b;
        s->total += b;
        if (s->live > s->peak)
            s->peak = s->live;
        return 0;
    }
    float *p = exec_alloc(s, g, t, err, errlen);
    if (!p)
        return -1;
    return graph_weight_values(g, t, p, err, errlen);
}

static int exec_node(exec_state *s, const graph *g, const graph_node *nd, char *err, size_t errlen) {
    ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
    const float *in[OPS_MAX_INPUTS];
    float *out[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < nd->n_in; k++) {
        int32_t t = nd->in[k];
        if (!s->buf[t]) {
            /* only weights are materialised lazily; anything else missing is our bug */
            if (g->tensors[t].kind != GRAPH_T_WEIGHT) {
                base_fail(err, errlen, "internal error: node '%s' reads tensor '%s' before it is computed",
                          nd->name, g->tensors[t].name);
                return -1;
            }
            if (exec_weight(s, g, t, err, errlen) < 0)
                return -1;
        }
        in[k] = s->buf[t];
        in_sh[k] = g->tensors[t].shape;
    }
    if (nd->op == OP_GATHER && exec_check_ids(g, nd, in[1], err, errlen) < 0)
        return -1;
    for (int32_t k = 0; k < nd->n_out; k++) {
        int32_t t = nd->out[k];
        out_sh[k] = g->tensors[t].shape;
        out[k] = exec_alloc(s, g, t, err, errlen);
        if (!out[k])
            return -1;
    }
    ops_sig sig = {.op = nd->op, .p = &nd->p, .n_in = nd->n_in, .n_out = nd->n_out, .in = in_sh, .out = out_sh};
    ops_table[nd->op].cpu(&sig, in, out);
    for (int32_t k = 0; k < nd->n_in; k++)
        exec_unuse(s, g, nd->in[k]);
    for (int32_t k = 0; k < nd->n_out; k++)
        if (s->uses[nd->out[k]] == 0) /* an output nobody reads (an unused split part) */
            exec_release(s, g, nd->out[k]);
    return 0;
}

int exec_cpu_run_ex(const graph *g, const float *const *in, uint64_t seed, float **out, exec_stats *st,
                    char *err, size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    if (st)
        memset(st, 0, sizeof *st);
    for (int32_t j = 0; j < g->n_outputs; j++)
        out[j] = NULL;
    if (graph_validate(g, err, errlen) < 0)
        return -1;
    int rc = -1;
    int32_t nt = g->n_tensors, nn = g->n_nodes;
    exec_state s = {0};
    int32_t *order = malloc(((size_t)nn + 1) * sizeof *order);
    uint8_t *live = calloc((size_t)nn + 1, 1);
    uint8_t *need = calloc((size_t)nt + 1, 1); /* tensor feeds a live node or is an output */
    s.buf = calloc((size_t)nt + 1, sizeof *s.buf);
    s.owned = calloc((size_t)nt + 1, 1);
    s.uses = calloc((size_t)nt + 1, sizeof *s.uses);
    if (!order || !live || !need || !s.buf || !s.owned || !s.uses) {
        base_fail(err, errlen, "out of memory for the executor's tables");
        goto done;
    }
    if (graph_topo_order(g, order, err, errlen) < 0)
        goto done;

    /* liveness: walk the order backwards from the outputs */
    for (int32_t j = 0; j < g->n_outputs; j++) {
        need[g->outputs[j]] = 1;
        s.uses[g->outputs[j]]++; /* pin: kept until copied out */
    }
    for (int32_t k = nn - 1; k >= 0; k--) {
        const graph_node *nd = &g->nodes[order[k]];
        for (int32_t o = 0; o < nd->n_out && !live[order[k]]; o++)
            if (need[nd->out[o]])
                live[order[k]] = 1;
        if (!live[order[k]])
            continue;
        for (int32_t i = 0; i < nd->n_in; i++) {
            need[nd->in[i]] = 1;
            s.uses[nd->in[i]]++;
        }
    }

    for (int32_t i = 0; i < g->n_inputs; i++)
        if (need[g->inputs[i]] && exec_input(&s, g, live, i, in ? in[i] : NULL, seed, err, errlen) < 0)
            goto done;
    for (int32_t k = 0; k < nn; k++) {
        if (!live[order[k]])
            continue;
        if (exec_node(&s, g, &g->nodes[order[k]], err, errlen) < 0)
            goto done;
        if (st)
            st->nodes_run++;
    }

    for (int32_t j = 0; j < g->n_outputs; j++) {
        int32_t t = g->outputs[j];
        if (!s.buf[t] && exec_weight(&s, g, t, err, errlen) < 0) /* a weight that is itself an output */
            goto done;
        int64_t b = exec_bytes(g, t);
        out[j] = malloc(b ? (size_t)b : 1);
        if (!out[j]) {
            base_fail(err, errlen, "out of memory copying output '%s'", g->tensors[t].name);
            goto done;
        }
        memcpy(out[j], s.buf[t], (size_t)b);
    }
    rc = 0;
done:
    if (s.buf)
        for (int32_t t = 0; t < nt; t++)
            exec_release(&s, g, t);
    if (rc < 0)
        for (int32_t j = 0; j < g->n_outputs; j++) {
            free(out[j]);
            out[j] = NULL;
        }
    if (st) {
        st->peak_bytes = s.peak;
        st->total_bytes = s.total;
    }
    free(order);
    free(live);
    free(need);
    free(s.buf);
    free(s.owned);
    free(s.uses);
    return rc;
}

int exec_cpu_run(const graph *g, const float *const *in, uint64_t seed, float **out, char *err, size_t errlen) {
    return exec_cpu_run_ex(g, in, seed, out, NULL, err, errlen);
}

exec_diff exec_compare(const float *a, const float *b, int64_t n) {
    /* A non-finite value in a, or one where a and b disagree, makes the difference infinite:
     * a comparison must never pass because NaN compares false. */
    exec_diff d = {0.0, 0.0, 0};
    double num = 0.0, den = 0.0;
    int inf = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], y = b[i];
        if (!isfinite(x))
            d.nan_count++;
        if (!isfinite(x) || !isfinite(y)) {
            if (!(x == y)) /* equal infinities agree; NaN never does */
                inf = 1;
            continue;
        }
        double e = fabs(x - y);
        num += e * e;
        den += y * y;
        if (e > d.max_abs)
            d.max_abs = e;
    }
    if (inf) {
        d.rel_l2 = INFINITY;
        d.max_abs = INFINITY;
    } else {
        d.rel_l2 = sqrt(num) / fmax(sqrt(den), 1e-30);
    }
    return d;
}
