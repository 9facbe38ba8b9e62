/* cost.c: the cost-model interface (memoised node times, graph sums, weight-only flags) and the
 * analytic H100 model (cost.h).
 *
 * Memo keys are the op, its declared parameters (by the op table, so undeclared slots never
 * matter) and the input shapes, as an int64 array; output shapes follow from those. Entries are
 * owned by the model and freed with it.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "base.h"
#include "cost.h"

#define COST_KEY_MAX (4 + OPS_MAX_OP_PARAMS + OPS_MAX_LIST + OPS_MAX_INPUTS * (1 + OPS_MAX_DIMS))

typedef struct cost_ent {
    int64_t *key;
    size_t key_bytes;
    double us;
    UT_hash_handle hh;
} cost_ent;

struct cost_model {
    char *name;
    cost_node_fn node_fn;
    void (*free_fn)(void *impl);
    void *impl;
    cost_ent *memo;       /* uthash head */
    int64_t computed, reused;
};

cost_model *cost_model_new(const char *name, cost_node_fn node_fn, void (*free_fn)(void *impl), void *impl) {
    cost_model *m = base_xmalloc(sizeof *m);
    memset(m, 0, sizeof *m);
    size_t n = strlen(name) + 1;
    m->name = base_xmalloc(n);
    memcpy(m->name, name, n);
    m->node_fn = node_fn;
    m->free_fn = free_fn;
    m->impl = impl;
    return m;
}

void cost_model_free(cost_model *m) {
    if (!m)
        return;
    cost_ent *e, *tmp;
    HASH_ITER(hh, m->memo, e, tmp) {
        HASH_DEL(m->memo, e);
        free(e->key);
        free(e);
    }
    if (m->free_fn)
        m->free_fn(m->impl);
    free(m->name);
    free(m);
}

const char *cost_model_name(const cost_model *m) { return m->name; }

void cost_model_stats(const cost_model *m, int64_t *computed, int64_t *reused) {
    *computed = m->computed;
    *reused = m->reused;
}

static size_t cost_key(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int64_t *key) {
    size_t n = 0;
    const ops_desc *d = &ops_table[op];
    key[n++] = op;
    key[n++] = n_in;
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (k == PM_LIST) {
            key[n++] = p->n_list;
            for (int32_t j = 0; j < p->n_list && j < OPS_MAX_LIST; j++)
                key[n++] = p->list[j];
        } else {
            key[n++] = p->v[k];
        }
    }
    for (int32_t k = 0; k < n_in; k++) {
        key[n++] = in[k].rank;
        for (int32_t j = 0; j < in[k].rank; j++)
            key[n++] = in[k].dims[j];
    }
    return n * sizeof *key;
}

int cost_node(cost_model *m, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int32_t n_out,
              const ops_shape *out, double *us, char *err, size_t errlen) {
    int64_t key[COST_KEY_MAX];
    size_t kb = cost_key(op, p, n_in, in, key);
    cost_ent *e = NULL;
    HASH_FIND(hh, m->memo, key, kb, e);
    if (e) {
        m->reused++;
        *us = e->us;
        return 0;
    }
    char merr[256] = "";
    double v = 0.0;
    if (m->node_fn(m->impl, op, p, n_in, in, n_out, out, &v, merr, sizeof merr) < 0) {
        if (err && errlen)
            snprintf(err, errlen, "cost model '%s': %s: %s", m->name, ops_table[op].name, merr);
        return -1;
    }
    if (!(v >= 0.0) || !isfinite(v)) {
        if (err && errlen)
            snprintf(err, errlen, "cost model '%s': %s: time %g is not a finite non-negative number", m->name,
                     ops_table[op].name, v);
        return -1;
    }
    e = base_xmalloc(sizeof *e);
    e->key = base_xmalloc(kb);
    memcpy(e->key, key, kb);
    e->key_bytes = kb;
    e->us = v;
    HASH_ADD_KEYPTR(hh, m->memo, e->key, e->key_bytes, e);
    m->computed++;
    *us = v;
    return 0;
}

int cost_graph_node(cost_model *m, const graph *g, int32_t n, double *us, char *err, size_t errlen) {
    const graph_node *nd = &g->nodes[n];
    ops_shape in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < nd->n_in; k++)
        in[k] = g->tensors[nd->in[k]].shape;
    for (int32_t k = 0; k < nd->n_out; k++)
        out[k] = g->tensors[nd->out[k]].shape;
    return cost_node(m, nd->op, &nd->p, nd->n_in, in, nd->n_out, out, us, err, errlen);
}

/* Nodes in topological order into order (n_nodes), or -1 on a cycle. */
static int cost_order(const graph *g, int32_t *order, char *err, size_t errlen) {
    return graph_topo_order(g, order, err, errlen);
}

static void cost_wo_fill(const graph *g, const int32_t *order, uint8_t *wo) {
    for (int32_t t = 0; t < g->n_tensors; t++)
        wo[t] = g->tensors[t].kind == GRAPH_T_WEIGHT;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const graph_node *nd = &g->nodes[order[i]];
        uint8_t all = 1;
        for (int32_t k = 0; k < nd->n_in; k++)
            all &= wo[nd->in[k]];
        for (int32_t k = 0; k < nd->n_out; k++)
            wo[nd->out[k]] = all;
    }
}

void cost_weight_only(const graph *g, uint8_t *wo) {
    int32_t *order = base_xmalloc((size_t)g->n_nodes * sizeof *order);
    if (cost_order(g, order, NULL, 0) == 0)
        cost_wo_fill(g, order, wo);
    else
        memset(wo, 0, (size_t)g->n_tensors);
    free(order);
}

int cost_graph(cost_model *m, const graph *g, double *us, uint8_t *wo_out, char *err, size_t errlen) {
    int32_t *order = base_xmalloc((size_t)g->n_nodes * sizeof *order);
    uint8_t *wo = wo_out ? wo_out : base_xmalloc((size_t)g->n_tensors);
    uint8_t *live = base_xcalloc((size_t)g->n_nodes + 1, 1);
    int rc = -1;
    if (cost_order(g, order, err, errlen) < 0)
        goto done;
    cost_wo_fill(g, order, wo);
    for (int32_t i = 0; i < g->n_outputs; i++) {
        int32_t p = g->tensors[g->outputs[i]].producer;
        if (p >= 0)
            live[p] = 1;
    }
    for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
        const graph_node *nd = &g->nodes[order[i]];
        if (!live[order[i]])
            continue;
        for (int32_t k = 0; k < nd->n_in; k++) {
            int32_t p = g->tensors[nd->in[k]].producer;
            if (p >= 0)
                live[p] = 1;
        }
    }
    double sum = 0.0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t n = order[i];
        const graph_node *nd = &g->nodes[n];
        if (!live[n] || (nd->n_out > 0 && wo[nd->out[0]]))
            continue;
        double t;
        if (cost_graph_node(m, g, n, &t, err, errlen) < 0)
            goto done;
        sum += t;
    }
    *us = sum;
    rc = 0;
done:
    if (!wo_out)
        free(wo);
    free(order);
    free(live);
    return rc;
}

/* --- the analytic model ---------------------------------------------------------------------- */

void cost_analytic_defaults(cost_analytic_config *c) {
    c->peak_flops = 51.0e12;
    c->bandwidth = 3.0e12;
    /* fitted to 732 node configurations timed on the H100 under CUDA-graph replay, with the
     * runtime's tuning table covering the zoo's matmuls:
     * `tasc cost fit bench/cost/h100/cost_measured.txt` (bench/cost/README.md) */
    c->launch_us = 1.58;
    c->min_us = 0.1434;
    c->conv_min_us = 7.479;
    c->matmul_min_us = 5.795;
    c->conv_eff = 0.4836;
    c->matmul_eff = 0.8109;
    c->mem_eff = 0.8433;
    c->sms = 132;
    c->tile = 64;
    c->ksplit_min = 128;
    c->block_elems = 1024;
}

static double ca_ceil_div(double a, double b) { return ceil(a / b); }

/* GEMM efficiency: tiles of the (M,N) output per batch item, split-K while it fills more SMs,
 * then the fraction of the waves' SM slots used. */
static double ca_gemm_eff(const cost_analytic_config *c, double batch, double M, double N, double K) {
    double tiles = batch * ca_ceil_div(M, c->tile) * ca_ceil_div(N, c->tile);
    double ksplit = 1.0;
    if (tiles < c->sms) {
        ksplit = fmin(ca_ceil_div(c->sms, tiles), ca_ceil_div(K, c->ksplit_min));
        if (ksplit < 1.0)
            ksplit = 1.0;
    }
    double blocks = tiles * ksplit;
    double waves = ca_ceil_div(blocks, c->sms);
    return blocks / (waves * c->sms);
}

static int ca_node(void *impl, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, int32_t n_out,
                   const ops_shape *out, double *us, char *err, size_t errlen) {
    const cost_analytic_config *c = impl;
    if (op == OP_RESHAPE || n_in == 0) { /* an alias; constants are made once at setup */
        *us = 0.0;
        return 0;
    }
    double bytes = 0.0, largest = 0.0;
    for (int32_t k = 0; k < n_in; k++) {
        double n = (double)ops_shape_numel(&in[k]);
        bytes += 4.0 * n;
        largest = fmax(largest, n);
    }
    for (int32_t k = 0; k < n_out; k++) {
        double n = (double)ops_shape_numel(&out[k]);
        bytes += 4.0 * n;
        largest = fmax(largest, n);
    }
    ops_sig sig = {.op = op, .p = p, .n_in = n_in, .n_out = n_out, .in = in, .out = out};
    double flops = ops_table[op].flops(&sig);
    double eff;
    if (op == OP_MATMUL) {
        const ops_shape *o = &out[0], *a = &in[0];
        double M = (double)o->dims[o->rank - 2], N = (double)o->dims[o->rank - 1];
        double K = (double)a->dims[a->rank - 1];
        double batch = (double)ops_shape_numel(o) / (M * N);
        eff = ca_gemm_eff(c, batch, M, N, K);
    } else if (op == OP_CONV2D) {
        const ops_shape *o = &out[0], *w = &in[1]; /* (N,F,OH,OW), (F,C/g,KH,KW) */
        double groups = (double)p->v[PM_GROUPS];
        double M = (double)(o->dims[0] * o->dims[2] * o->dims[3]), N = (double)o->dims[1] / groups;
        double K = (double)(w->dims[1] * w->dims[2] * w->dims[3]);
        eff = ca_gemm_eff(c, groups, M, N, K);
    } else {
        double blocks = ca_ceil_div(largest, c->block_elems);
        eff = fmin(1.0, blocks / c->sms);
    }
    if (!(eff > 0.0)) {
        if (err && errlen)
            snprintf(err, errlen, "empty work");
        return -1;
    }
    double class_eff = op == OP_CONV2D ? c->conv_eff : op == OP_MATMUL ? c->matmul_eff : 1.0;
    double min_us = op == OP_CONV2D ? c->conv_min_us : op == OP_MATMUL ? c->matmul_min_us : c->min_us;
    double t_compute = flops / (c->peak_flops * eff * class_eff), t_memory = bytes / (c->bandwidth * eff * c->mem_eff);
    *us = c->launch_us + fmax(1e6 * fmax(t_compute, t_memory), min_us);
    return 0;
}

/* The named constants: scale converts the command-line unit to the struct's. */
static const struct {
    const char *name;
    size_t off;
    int is_int;
    double scale, lo, hi;
} ca_params[] = {
    {"peak_tflops", offsetof(cost_analytic_config, peak_flops), 0, 1e12, 0.001, 10000},
    {"bandwidth_tbs", offsetof(cost_analytic_config, bandwidth), 0, 1e12, 0.001, 1000},
    {"launch_us", offsetof(cost_analytic_config, launch_us), 0, 1, 0, 1000},
    {"min_us", offsetof(cost_analytic_config, min_us), 0, 1, 0, 1000},
    {"conv_min_us", offsetof(cost_analytic_config, conv_min_us), 0, 1, 0, 1000},
    {"matmul_min_us", offsetof(cost_analytic_config, matmul_min_us), 0, 1, 0, 1000},
    {"conv_eff", offsetof(cost_analytic_config, conv_eff), 0, 1, 0.001, 1},
    {"matmul_eff", offsetof(cost_analytic_config, matmul_eff), 0, 1, 0.001, 1},
    {"mem_eff", offsetof(cost_analytic_config, mem_eff), 0, 1, 0.001, 16},
    {"sms", offsetof(cost_analytic_config, sms), 1, 1, 1, 100000},
    {"tile", offsetof(cost_analytic_config, tile), 1, 1, 1, 4096},
    {"ksplit_min", offsetof(cost_analytic_config, ksplit_min), 1, 1, 1, 1 << 20},
    {"block_elems", offsetof(cost_analytic_config, block_elems), 1, 1, 1, 1 << 24},
};
#define CA_N_PARAMS ((int32_t)(sizeof ca_params / sizeof ca_params[0]))

int32_t cost_analytic_n_params(void) { return CA_N_PARAMS; }

const char *cost_analytic_param(const cost_analytic_config *c, int32_t i, double *value) {
    if (i < 0 || i >= CA_N_PARAMS)
        return NULL;
    const char *at = (const char *)c + ca_params[i].off;
    double v = ca_params[i].is_int ? (double)*(const int32_t *)at : *(const double *)at;
    *value = v / ca_params[i].scale;
    return ca_params[i].name;
}

int cost_analytic_set(cost_analytic_config *c, const char *assignment, char *err, size_t errlen) {
    const char *eq = strchr(assignment, '=');
    size_t n = eq ? (size_t)(eq - assignment) : 0;
    for (int32_t i = 0; eq && i < CA_N_PARAMS; i++) {
        if (strlen(ca_params[i].name) != n || strncmp(assignment, ca_params[i].name, n))
            continue;
        char *end;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !(v >= ca_params[i].lo && v <= ca_params[i].hi) ||
            (ca_params[i].is_int && v != floor(v))) {
            if (err && errlen)
                snprintf(err, errlen, "bad value for %s: '%s' (%s %g to %g)", ca_params[i].name, eq + 1,
                         ca_params[i].is_int ? "a whole number from" : "from", ca_params[i].lo, ca_params[i].hi);
            return -1;
        }
        char *at = (char *)c + ca_params[i].off;
        if (ca_params[i].is_int)
            *(int32_t *)at = (int32_t)v;
        else
            *(double *)at = v * ca_params[i].scale;
        return 0;
    }
    if (err && errlen) {
        size_t at = (size_t)snprintf(err, errlen, "expected NAME=VALUE with NAME one of");
        for (int32_t i = 0; i < CA_N_PARAMS && at < errlen; i++)
            at += (size_t)snprintf(err + at, errlen - at, "%s %s", i ? "," : "", ca_params[i].name);
        if (at < errlen)
            snprintf(err + at, errlen - at, "; got '%s'", assignment);
    }
    return -1;
}

static void ca_free(void *impl) { free(impl); }

cost_model *cost_analytic_new(const cost_analytic_config *cfg) {
    cost_analytic_config *c = base_xmalloc(sizeof *c);
    if (cfg)
        *c = *cfg;
    else
        cost_analytic_defaults(c);
    return cost_model_new("analytic", ca_node, ca_free, c);
}

int cost_cache_line(char *line, char **device, char **key, double *us) {
    if (!line[0] || line[0] == '#')
        return 0;
    char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL, *end = NULL;
    double v = t2 ? strtod(t2 + 1, &end) : NAN;
    if (!t1 || !t2 || strchr(t2 + 1, '\t') || t1 == line || t2 == t1 + 1 || end == t2 + 1 || (end && *end) ||
        !isfinite(v) || v < 0.0)
        return -1;
    *t1 = *t2 = '\0';
    *device = line;
    *key = t1 + 1;
    *us = v;
    return 1;
}

int cost_cache_read(FILE *f, const char *path, cost_cache_fn fn, void *arg, char *err, size_t errlen) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        char *dev, *key, why[512] = "";
        double us;
        int kind = cost_cache_line(line, &dev, &key, &us);
        if (kind < 0) {
            if (err && errlen)
                snprintf(err, errlen, "%s:%ld: expected DEVICE<TAB>KEY<TAB>MICROSECONDS (a finite number >= 0)",
                         path, lineno);
            rc = -1;
        } else if (kind > 0 && (rc = fn(arg, dev, key, us, why, sizeof why)) != 0) {
            if (rc < 0 && err && errlen)
                snprintf(err, errlen, "%s:%ld: %s", path, lineno, why);
        }
    }
    if (rc == 0 && ferror(f)) {
        if (err && errlen)
            snprintf(err, errlen, "%s: read error", path);
        rc = -1;
    }
    free(line);
    return rc < 0 ? -1 : 0;
}

/* --- node configurations as text ------------------------------------------------------------- */

/* Appends to buf at *at; -1 when it does not fit. */
static int ck_catf(char *buf, size_t len, size_t *at, const char *fmt, long long a) {
    int n = snprintf(buf + *at, len - *at, fmt, a);
    if (n < 0 || (size_t)n >= len - *at)
        return -1;
    *at += (size_t)n;
    return 0;
}

static int ck_cats(char *buf, size_t len, size_t *at, const char *s) {
    size_t n = strlen(s);
    if (n + 1 > len - *at)
        return -1;
    memcpy(buf + *at, s, n + 1);
    *at += n;
    return 0;
}

int cost_key_text(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, char *buf, size_t len) {
    size_t at = 0;
    if (!len || op < 0 || op >= OP_COUNT)
        return -1;
    buf[0] = '\0';
    const ops_desc *d = &ops_table[op];
    if (ck_cats(buf, len, &at, d->name) < 0)
        return -1;
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (ck_cats(buf, len, &at, i ? "," : " ") < 0 || ck_cats(buf, len, &at, ops_param_table[k].name) < 0 ||
            ck_cats(buf, len, &at, "=") < 0)
            return -1;
        const char *word = NULL;
        char f[48];
        switch (ops_param_table[k].kind) {
        case OPS_PK_INT:
            if (ck_catf(buf, len, &at, "%lld", (long long)p->v[k]) < 0)
                return -1;
            break;
        case OPS_PK_FLOAT:
            snprintf(f, sizeof f, "%.9g", (double)ops_p2f(p->v[k]));
            word = f;
            break;
        case OPS_PK_ACT:
            word = p->v[k] >= 0 && p->v[k] < OPS_ACT_COUNT ? ops_act_names[p->v[k]] : "?";
            break;
        case OPS_PK_PADMODE:
            word = p->v[k] >= 0 && p->v[k] < OPS_PAD_COUNT ? ops_padmode_names[p->v[k]] : "?";
            break;
        case OPS_PK_LIST:
            if (ck_cats(buf, len, &at, "[") < 0)
                return -1;
            for (int32_t j = 0; j < p->n_list; j++)
                if (ck_catf(buf, len, &at, j ? ",%lld" : "%lld", (long long)p->list[j]) < 0)
                    return -1;
            word = "]";
            break;
        }
        if (word && ck_cats(buf, len, &at, word) < 0)
            return -1;
    }
    for (int32_t i = 0; i < n_in; i++) {
        char sh[160];
        if (ck_cats(buf, len, &at, i ? ";" : " ") < 0 || ck_cats(buf, len, &at, ops_shape_str(&in[i], sh, sizeof sh)) < 0)
            return -1;
    }
    return 0;
}

/* A signed decimal integer at *s (advanced past it); -1 if there is none or it overflows. */
static int ck_int(const char **s, int64_t *v) {
    char *end;
    errno = 0;
    long long x = strtoll(*s, &end, 10);
    if (end == *s || errno)
        return -1;
    *s = end;
    *v = x;
    return 0;
}

static int ck_word(const char *w, size_t n, const char *const *names, int32_t count) {
    for (int32_t i = 0; i < count; i++)
        if (strlen(names[i]) == n && !strncmp(w, names[i], n))
            return i;
    return -1;
}

/* One "name=value" of op at *s, into p. */
static int ck_param(const char **s, ops_type op, ops_params *p, char *err, size_t errlen) {
    const char *eq = strchr(*s, '=');
    size_t n = eq ? (size_t)(eq - *s) : 0;
    char name[32];
    if (!eq || n == 0 || n >= sizeof name || memchr(*s, ' ', n) || memchr(*s, ',', n))
        return base_fail(err, errlen, "expected NAME=VALUE at '%s'", *s);
    memcpy(name, *s, n);
    name[n] = '\0';
    int k = ops_param_find(name);
    if (k < 0 || !ops_param_desc_of(op, (ops_param_key)k))
        return base_fail(err, errlen, "%s has no parameter '%s'", ops_table[op].name, name);
    const char *v = eq + 1;
    size_t vn = strcspn(v, ", ");
    switch (ops_param_table[k].kind) {
    case OPS_PK_INT:
        if (ck_int(&v, &p->v[k]) < 0 || (*v && *v != ',' && *v != ' '))
            return base_fail(err, errlen, "bad integer for parameter '%s' at '%s'", name, eq + 1);
        break;
    case OPS_PK_FLOAT: {
        char *end;
        double x = strtod(v, &end);
        if (end == v || !isfinite(x) || (*end && *end != ',' && *end != ' '))
            return base_fail(err, errlen, "bad number for parameter '%s' at '%s'", name, eq + 1);
        p->v[k] = ops_f2p((float)x);
        v = end;
        break;
    }
    case OPS_PK_ACT:
    case OPS_PK_PADMODE: {
        int act = ops_param_table[k].kind == OPS_PK_ACT;
        int w = act ? ck_word(v, vn, ops_act_names, OPS_ACT_COUNT) : ck_word(v, vn, ops_padmode_names, OPS_PAD_COUNT);
        if (w < 0)
            return base_fail(err, errlen, "unknown value for parameter '%s' at '%s'", name, eq + 1);
        p->v[k] = w;
        v += vn;
        break;
    }
    case OPS_PK_LIST:
        if (*v != '[')
            return base_fail(err, errlen, "expected [a,b,...] for parameter '%s' at '%s'", name, eq + 1);
        v++;
        p->n_list = 0;
        while (*v != ']') {
            if (p->n_list >= OPS_MAX_LIST || (p->n_list && *v++ != ',') || ck_int(&v, &p->list[p->n_list]) < 0)
                return base_fail(err, errlen, "bad list for parameter '%s' at '%s'", name, eq + 1);
            p->n_list++;
        }
        v++;
        break;
    }
    *s = v;
    return 0;
}

/* One "(d,d,...)" at *s into sh. */
static int ck_shape(const char **s, ops_shape *sh, char *err, size_t errlen) {
    const char *v = *s;
    memset(sh, 0, sizeof *sh);
    if (*v++ != '(')
        return base_fail(err, errlen, "expected a shape (d,d,...) at '%s'", *s);
    while (*v != ')') {
        if (sh->rank >= OPS_MAX_DIMS || (sh->rank && *v++ != ',') || ck_int(&v, &sh->dims[sh->rank]) < 0 ||
            sh->dims[sh->rank] < 0)
            return base_fail(err, errlen, "bad shape at '%s'", *s);
        sh->rank++;
    }
    *s = v + 1;
    return 0;
}

int cost_key_parse(const char *text, ops_type *op, ops_params *p, int32_t *n_in, ops_shape *in, int32_t *n_out,
                   ops_shape *out, char *err, size_t errlen) {
    size_t n = strcspn(text, " ");
    char name[64];
    if (n == 0 || n >= sizeof name)
        return base_fail(err, errlen, "expected an op name at '%s'", text);
    memcpy(name, text, n);
    name[n] = '\0';
    int o = ops_find(name);
    if (o < 0)
        return base_fail(err, errlen, "unknown op '%s'", name);
    *op = (ops_type)o;
    ops_params_default(*op, p);
    const char *s = text + n;
    if (s[0] == ' ' && s[1] != '(') {
        s++;
        for (;;) {
            if (ck_param(&s, *op, p, err, errlen) < 0)
                return -1;
            if (*s != ',')
                break;
            s++;
        }
    }
    *n_in = 0;
    if (*s == ' ') {
        s++;
        for (;;) {
            if (*n_in >= OPS_MAX_INPUTS)
                return base_fail(err, errlen, "more than the most inputs an op takes at '%s'", s);
            if (ck_shape(&s, &in[*n_in], err, errlen) < 0)
                return -1;
            ++*n_in;
            if (*s != ';')
                break;
            s++;
        }
    }
    if (*s)
        return base_fail(err, errlen, "unexpected text at '%s'", s);
    char why[256];
    if (ops_params_check(*op, p, why, sizeof why) < 0 || ops_infer(*op, p, *n_in, in, n_out, out, why, sizeof why) < 0)
        return base_fail(err, errlen, "%s", why);
    return 0;
}

/* --- calibration ----------------------------------------------------------------------------- */

double cost_log_ratio(double predicted_us, double measured_us) {
    return log(fmax(predicted_us, 0.05) / fmax(measured_us, 0.05));
}

int cost_analytic_error(const cost_analytic_config *c, const cost_sample *s, int32_t n, double *pred, double *err2,
                        char *err, size_t errlen) {
    cost_model *m = cost_analytic_new(c);
    double sum = 0.0;
    int rc = 0;
    for (int32_t i = 0; i < n; i++) {
        double us;
        if (cost_node(m, s[i].op, &s[i].p, s[i].n_in, s[i].in, s[i].n_out, s[i].out, &us, err, errlen) < 0) {
            rc = -1;
            break;
        }
        if (pred)
            pred[i] = us;
        double lr = cost_log_ratio(us, s[i].us);
        sum += lr * lr;
    }
    cost_model_free(m);
    *err2 = n > 0 ? sum / n : 0.0;
    return rc;
}

/* The fitted constants, their bounds and the first step of the search. */
static const struct {
    const char *name;
    double lo, hi, step;
} ca_fit[] = {
    {"launch_us", 0.0, 10.0, 0.5},   {"min_us", 0.0, 10.0, 0.5},    {"conv_min_us", 0.0, 100.0, 2.0},
    {"matmul_min_us", 0.0, 100.0, 2.0}, {"conv_eff", 0.02, 1.0, 0.1}, {"matmul_eff", 0.02, 1.0, 0.1},
    {"mem_eff", 0.02, 8.0, 0.2},
};
#define CA_FIT_N ((int)(sizeof ca_fit / sizeof ca_fit[0]))

int32_t cost_analytic_n_fitted(void) { return CA_FIT_N; }

const char *cost_analytic_fitted(int32_t k) { return k >= 0 && k < CA_FIT_N ? ca_fit[k].name : NULL; }

static void ca_fit_get(const cost_analytic_config *c, double *x) {
    for (int k = 0; k < CA_FIT_N; k++)
        for (int32_t i = 0; i < CA_N_PARAMS; i++)
            if (!strcmp(ca_params[i].name, ca_fit[k].name))
                cost_analytic_param(c, i, &x[k]);
}

/* The error at x (clamped into the bounds and rounded to 4 significant digits, so the result
 * prints exactly); t receives the configuration. */
static int ca_fit_eval(const cost_analytic_config *c, double *x, const cost_sample *s, int32_t n,
                       cost_analytic_config *t, double *f, char *err, size_t errlen) {
    *t = *c;
    for (int k = 0; k < CA_FIT_N; k++) {
        char set[64];
        x[k] = fmin(fmax(x[k], ca_fit[k].lo), ca_fit[k].hi);
        snprintf(set, sizeof set, "%.4g", x[k]);
        x[k] = fmin(fmax(strtod(set, NULL), ca_fit[k].lo), ca_fit[k].hi);
        snprintf(set, sizeof set, "%s=%.17g", ca_fit[k].name, x[k]);
        if (cost_analytic_set(t, set, err, errlen) < 0)
            return -1;
    }
    return cost_analytic_error(t, s, n, NULL, f, err, errlen);
}

/* One golden-section line search per constant, each over its whole range, from best; keeps
 * what improves. */
static int ca_fit_coords(const cost_analytic_config *c, const cost_sample *s, int32_t n, cost_analytic_config *best,
                         double *best_f, char *err, size_t errlen) {
    const double g = (sqrt(5.0) - 1.0) / 2.0;
    cost_analytic_config t;
    for (int k = 0; k < CA_FIT_N; k++) {
        double x0[CA_FIT_N], x[2][CA_FIT_N], fx[2];
        ca_fit_get(best, x0);
        double a = ca_fit[k].lo, b = ca_fit[k].hi;
        for (int j = 0; j < 2; j++) {
            memcpy(x[j], x0, sizeof x0);
            x[j][k] = j ? a + g * (b - a) : b - g * (b - a);
        }
        for (int j = 0; j < 2; j++)
            if (ca_fit_eval(c, x[j], s, n, &t, &fx[j], err, errlen) < 0)
                return -1;
        double p[2] = {b - g * (b - a), a + g * (b - a)};
        for (int it = 0; it < 48; it++) {
            int j = fx[0] <= fx[1] ? 0 : 1; /* keep [a, p1] or [p0, b] */
            if (j == 0) {
                b = p[1];
                p[1] = p[0];
                fx[1] = fx[0];
                p[0] = b - g * (b - a);
            } else {
                a = p[0];
                p[0] = p[1];
                fx[0] = fx[1];
                p[1] = a + g * (b - a);
            }
            memcpy(x[j], x0, sizeof x0);
            x[j][k] = p[j];
            if (ca_fit_eval(c, x[j], s, n, &t, &fx[j], err, errlen) < 0)
                return -1;
        }
        int j = fx[0] <= fx[1] ? 0 : 1;
        memcpy(x[j], x0, sizeof x0);
        x[j][k] = p[j];
        double f;
        if (ca_fit_eval(c, x[j], s, n, &t, &f, err, errlen) < 0)
            return -1;
        if (f < *best_f) {
            *best = t;
            *best_f = f;
        }
    }
    return 0;
}

int cost_analytic_fit(cost_analytic_config *c, const cost_sample *s, int32_t n,
                      void (*progress)(int round, double err2, void *arg), void *arg, char *err, size_t errlen) {
    /* Rounds of Nelder-Mead on the constants (clamped to their bounds, at most 800 steps), then a
     * line search along each constant, restarted from the best point until a round improves by
     * less than 1e-7 (at most 16 rounds). */
    if (n <= 0) {
        if (err && errlen)
            snprintf(err, errlen, "no samples to fit");
        return -1;
    }
    double x[CA_FIT_N + 1][CA_FIT_N], f[CA_FIT_N + 1], best_f;
    cost_analytic_config t, best = *c;
    ca_fit_get(c, x[0]);
    if (ca_fit_eval(c, x[0], s, n, &best, &best_f, err, errlen) < 0)
        return -1;
    for (int round = 1; round <= 16; round++) {
        double start_f = best_f;
        ca_fit_get(&best, x[0]);
        f[0] = best_f;
        for (int i = 1; i <= CA_FIT_N; i++) {
            memcpy(x[i], x[0], sizeof x[0]);
            int k = i - 1;
            x[i][k] += x[i][k] + ca_fit[k].step <= ca_fit[k].hi ? ca_fit[k].step : -ca_fit[k].step;
            if (ca_fit_eval(c, x[i], s, n, &t, &f[i], err, errlen) < 0)
                return -1;
        }
        for (int it = 0; it < 800; it++) {
            /* order: f[0] best ... f[N] worst (insertion sort, stable: deterministic) */
            for (int i = 1; i <= CA_FIT_N; i++)
                for (int j = i; j > 0 && f[j] < f[j - 1]; j--) {
                    double tf = f[j], tx[CA_FIT_N];
                    f[j] = f[j - 1];
                    f[j - 1] = tf;
                    memcpy(tx, x[j], sizeof tx);
                    memcpy(x[j], x[j - 1], sizeof tx);
                    memcpy(x[j - 1], tx, sizeof tx);
                }
            if (f[CA_FIT_N] - f[0] < 1e-9)
                break;
            double cen[CA_FIT_N] = {0}, xr[CA_FIT_N], xe[CA_FIT_N], xc[CA_FIT_N], fr, fe, fc;
            for (int i = 0; i < CA_FIT_N; i++)
                for (int k = 0; k < CA_FIT_N; k++)
                    cen[k] += x[i][k] / CA_FIT_N;
            for (int k = 0; k < CA_FIT_N; k++)
                xr[k] = cen[k] + (cen[k] - x[CA_FIT_N][k]);
            if (ca_fit_eval(c, xr, s, n, &t, &fr, err, errlen) < 0)
                return -1;
            if (fr < f[0]) {
                for (int k = 0; k < CA_FIT_N; k++)
                    xe[k] = cen[k] + 2.0 * (cen[k] - x[CA_FIT_N][k]);
                if (ca_fit_eval(c, xe, s, n, &t, &fe, err, errlen) < 0)
                    return -1;
                int e = fe < fr;
                memcpy(x[CA_FIT_N], e ? xe : xr, sizeof xr);
                f[CA_FIT_N] = e ? fe : fr;
            } else if (fr < f[CA_FIT_N - 1]) {
                memcpy(x[CA_FIT_N], xr, sizeof xr);
                f[CA_FIT_N] = fr;
            } else {
                for (int k = 0; k < CA_FIT_N; k++)
                    xc[k] = cen[k] + 0.5 * (x[CA_FIT_N][k] - cen[k]);
                if (ca_fit_eval(c, xc, s, n, &t, &fc, err, errlen) < 0)
                    return -1;
                if (fc < f[CA_FIT_N]) {
                    memcpy(x[CA_FIT_N], xc, sizeof xc);
                    f[CA_FIT_N] = fc;
                } else { /* shrink toward the best */
                    for (int i = 1; i <= CA_FIT_N; i++) {
                        for (int k = 0; k < CA_FIT_N; k++)
                            x[i][k] = x[0][k] + 0.5 * (x[i][k] - x[0][k]);
                        if (ca_fit_eval(c, x[i], s, n, &t, &f[i], err, errlen) < 0)
                            return -1;
                    }
                }
            }
        }
        int b = 0;
        for (int i = 1; i <= CA_FIT_N; i++)
            if (f[i] < f[b])
                b = i;
        if (f[b] < best_f && ca_fit_eval(c, x[b], s, n, &t, &best_f, err, errlen) == 0)
            best = t;
        if (ca_fit_coords(c, s, n, &best, &best_f, err, errlen) < 0)
            return -1;
        if (progress)
            progress(round, best_f, arg);
        if (start_f - best_f < 1e-7)
            break;
    }
    *c = best;
    return 0;
}
