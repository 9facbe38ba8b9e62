/* graph.c: the graph IR: lifetime, the builder with sticky errors, topological order,
 * validation, the canonical hash, cloning and compaction, weight values and blobs, statistics.
 *
 * Invariant: every tensor has exactly one producer (a graph input, a weight, or one output slot
 * of one node), and tensor.producer / tensor.out_index agree with that node's out[]. Node
 * parameters are normalised on entry (keys the op does not declare are 0, list entries past
 * n_list are 0), so graphs built the same way are equal field by field. The graph owns every
 * string and array it points to; callers own the graphs graph_new / graph_clone return.
 * DATA blobs are the exception: shared between graphs, each graph holding one reference per
 * weight, counted atomically; a blob's values and content hash never change after creation.
 */
#define _XOPEN_SOURCE 700 /* realpath (graph_path_resolve), beside the build's _POSIX_C_SOURCE */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph_impl.h"

#define GRAPH_GOLDEN UINT64_C(0x9E3779B97F4A7C15)

/* ---------------------------------------------------------------------------------------------
 * small helpers shared with json.c and dot.c
 */
int64_t graph_impl_default_max_elements(void) {
    int64_t v;
    if (base_parse_int64_in(getenv("TASC_MAX_ELEMENTS"), 1, INT64_MAX, &v) == 0)
        return v;
    return GRAPH_DEFAULT_MAX_ELEMENTS;
}

uint64_t graph_impl_mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

const char *graph_impl_param_name(const ops_param_desc *d) {
    if (d->key == PM_LIST && d->list_name)
        return d->list_name;
    return ops_param_table[d->key].name;
}

int graph_impl_check_name(const char *name, char *msg, size_t len) {
    if (!name) {
        base_fail_line(msg, len, "a name is required");
        return -1;
    }
    if (!*name) {
        base_fail_line(msg, len, "the name is empty");
        return -1;
    }
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        if (*c < 0x20 || *c == 0x7f) {
            base_fail_line(msg, len, "the name contains a control character (0x%02x)", *c);
            return -1;
        }
    return 0;
}

int graph_impl_check_shape(const graph *g, const ops_shape *s, char *msg, size_t len) {
    if (s->rank < 0 || s->rank > OPS_MAX_DIMS) {
        base_fail_line(msg, len, "rank %d is out of range (0 to %d dims)", (int)s->rank, OPS_MAX_DIMS);
        return -1;
    }
    for (int32_t d = 0; d < s->rank; d++)
        if (s->dims[d] <= 0) {
            base_fail_line(msg, len, "dimension %d is %lld (dims must be positive)", (int)d,
                           (long long)s->dims[d]);
            return -1;
        }
    char sb[160];
    int64_t n = ops_shape_numel(s);
    if (n < 0) {
        base_fail_line(msg, len, "shape %s has more elements than int64 can count",
                       ops_shape_str(s, sb, sizeof sb));
        return -1;
    }
    int64_t lim = g->max_elements > 0 ? g->max_elements : GRAPH_DEFAULT_MAX_ELEMENTS;
    if (n > lim) {
        base_fail_line(msg, len, "shape %s has %lld elements, over the limit of %lld per tensor (TASC_MAX_ELEMENTS)",
                       ops_shape_str(s, sb, sizeof sb), (long long)n, (long long)lim);
        return -1;
    }
    return 0;
}

int graph_impl_check_init(const graph_init *init, char *msg, size_t len) {
    switch (init->kind) {
    case GRAPH_INIT_RANDOM:
        if (!isfinite(init->mean) || !isfinite(init->std) || init->std < 0.0f) {
            base_fail_line(msg, len, "random init needs a finite mean and a finite std >= 0 (mean %g, std %g)",
                           (double)init->mean, (double)init->std);
            return -1;
        }
        return 0;
    case GRAPH_INIT_CONSTANT:
        if (!isfinite(init->value)) {
            base_fail_line(msg, len, "constant init needs a finite value (got %g)", (double)init->value);
            return -1;
        }
        return 0;
    case GRAPH_INIT_FILE:
        if (!init->path || !*init->path) {
            base_fail_line(msg, len, "file init needs a path");
            return -1;
        }
        if (init->offset < 0) {
            base_fail_line(msg, len, "file init offset %lld is negative", (long long)init->offset);
            return -1;
        }
        return 0;
    case GRAPH_INIT_DATA:
        if (!init->blob) {
            base_fail_line(msg, len, "data init needs values (no blob)");
            return -1;
        }
        return 0;
    case GRAPH_INIT_COUNT:
        break;
    }
    base_fail_line(msg, len, "init kind %d is not a known kind", (int)init->kind);
    return -1;
}

/* --- name sets -------------------------------------------------------------------------- */
void graph_nameset_init(graph_name_set *s, size_t cap) {
    s->head = NULL;
    s->n = 0;
    s->cap = cap;
    s->pool = base_xmalloc((cap ? cap : 1) * sizeof *s->pool);
}

void graph_nameset_free(graph_name_set *s) {
    HASH_CLEAR(hh, s->head);
    free(s->pool);
    s->pool = NULL;
    s->n = s->cap = 0;
}

graph_name_ent *graph_nameset_find(const graph_name_set *s, const char *key) {
    graph_name_ent *e = NULL;
    HASH_FIND(hh, s->head, key, strlen(key), e);
    return e;
}

graph_name_ent *graph_nameset_add(graph_name_set *s, const char *key, graph_name_ent **dup) {
    graph_name_ent *e = graph_nameset_find(s, key);
    if (dup)
        *dup = e;
    if (e)
        return NULL;
    if (s->n >= s->cap) { /* the pool is sized by the caller; a bug if exceeded */
        base_die("name set over its capacity %zu", s->cap);
    }
    e = &s->pool[s->n++];
    memset(e, 0, sizeof *e);
    e->key = key;
    HASH_ADD_KEYPTR(hh, s->head, e->key, strlen(e->key), e);
    return e;
}

/* --- the name index ----------------------------------------------------------------------
 * Builders check every new name for uniqueness. A linear scan per name makes building a graph of
 * n nodes O(n^2) (minutes for 100,000 nodes), so after GRAPH_NAMES_AFTER scans of a graph its
 * names go into hash tables, kept up to date by graph.c's own additions, renames and compaction
 * (a clone starts without one). Other modules may swap two tensors' names (the set of names stays
 * the same): a hit is therefore verified against the tensor it names, and a stale table is
 * rebuilt. Keys are the index's own copies, so names freed elsewhere never dangle in it. The
 * struct also counts the nodes of each op, for the automatic names of unnamed nodes. */
#define GRAPH_NAMES_AFTER 16

typedef struct graph_name_ix {
    char *key;   /* owned copy */
    int32_t id;
    UT_hash_handle hh;
} graph_name_ix;

struct graph_names {
    int32_t scans;          /* linear scans so far, until the tables are built */
    int built;
    graph_name_ix *tensors; /* uthash by name */
    graph_name_ix *nodes;
    int32_t counted;            /* nodes [0, counted) are tallied in op_count, per op (nodes are */
    int32_t op_count[OP_COUNT]; /* only appended; graph_compact, which moves them, frees this) */
};

static void graph_ix_clear(graph_name_ix **head) {
    graph_name_ix *e, *t;
    HASH_ITER(hh, *head, e, t) {
        HASH_DEL(*head, e);
        free(e->key);
        free(e);
    }
}

static void graph_ix_put(graph_name_ix **head, const char *name, int32_t id) {
    graph_name_ix *e = NULL;
    HASH_FIND_STR(*head, name, e);
    if (e) {
        e->id = id;
        return;
    }
    e = base_xcalloc(1, sizeof *e);
    e->key = base_xstrdup(name);
    e->id = id;
    HASH_ADD_KEYPTR(hh, *head, e->key, strlen(e->key), e);
}

static void graph_ix_del(graph_name_ix **head, const char *name) {
    graph_name_ix *e = NULL;
    HASH_FIND_STR(*head, name, e);
    if (e) {
        HASH_DEL(*head, e);
        free(e->key);
        free(e);
    }
}

static void graph_names_free(struct graph_names *ix) {
    if (!ix)
        return;
    graph_ix_clear(&ix->tensors);
    graph_ix_clear(&ix->nodes);
    free(ix);
}

static void graph_names_build(graph *g) {
    struct graph_names *ix = g->names;
    graph_ix_clear(&ix->tensors);
    graph_ix_clear(&ix->nodes);
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].name)
            graph_ix_put(&ix->tensors, g->tensors[i].name, i);
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].name)
            graph_ix_put(&ix->nodes, g->nodes[i].name, i);
    ix->built = 1;
}

/* The id of the tensor (nodes 0) or node (nodes 1) named name, or -1; through the tables once
 * they are built, else a linear scan (counted). */
static int32_t graph_names_find(graph *g, int nodes, const char *name) {
    if (!g->names)
        g->names = base_xcalloc(1, sizeof *g->names);
    struct graph_names *ix = g->names;
    if (!ix->built && ++ix->scans > GRAPH_NAMES_AFTER)
        graph_names_build(g);
    int32_t n = nodes ? g->n_nodes : g->n_tensors;
    if (!ix->built) {
        for (int32_t i = 0; i < n; i++) {
            const char *nm = nodes ? g->nodes[i].name : g->tensors[i].name;
            if (nm && !strcmp(nm, name))
                return i;
        }
        return -1;
    }
    for (int pass = 0; pass < 2; pass++) {
        graph_name_ix *e = NULL;
        HASH_FIND_STR(nodes ? ix->nodes : ix->tensors, name, e);
        if (!e)
            return -1;
        const char *nm = e->id < n ? (nodes ? g->nodes[e->id].name : g->tensors[e->id].name) : NULL;
        if (nm && !strcmp(nm, name))
            return e->id;
        graph_names_build(g); /* stale: names were swapped outside graph.c */
    }
    return -1;
}

/* Record a name graph.c just gave (tables built only). */
static void graph_names_added(graph *g, int nodes, const char *name, int32_t id) {
    if (g->names && g->names->built)
        graph_ix_put(nodes ? &g->names->nodes : &g->names->tensors, name, id);
}

/* The number of nodes of op `op`: counts kept per op and brought up to date with the nodes
 * appended since the last call, so naming n unnamed nodes costs O(n) in all, not O(n^2). */
static int32_t graph_op_count(graph *g, ops_type op) {
    if (!g->names)
        g->names = base_xcalloc(1, sizeof *g->names);
    struct graph_names *ix = g->names;
    if (ix->counted > g->n_nodes) { /* cannot happen through graph.c: recount */
        memset(ix->op_count, 0, sizeof ix->op_count);
        ix->counted = 0;
    }
    for (; ix->counted < g->n_nodes; ix->counted++)
        if ((int)g->nodes[ix->counted].op >= 0 && g->nodes[ix->counted].op < OP_COUNT)
            ix->op_count[g->nodes[ix->counted].op]++;
    return ix->op_count[op];
}

static int graph_tensor_name_taken(graph *g, const char *name) { return graph_names_find(g, 0, name) >= 0; }

static int graph_node_name_taken(graph *g, const char *name) { return graph_names_find(g, 1, name) >= 0; }

/* The id arrays (inputs, weights, outputs) hold at least the next power of two of their count
 * (graph_dup_ids allocates the same), so pushing grows them geometrically. */
static size_t graph_ids_cap(int32_t n) {
    size_t c = 1;
    while (c < (size_t)n)
        c *= 2;
    return c;
}

/* ---------------------------------------------------------------------------------------------
 * lifetime
 */
graph *graph_new(const char *name) {
    graph *g = base_xcalloc(1, sizeof *g);
    g->name = base_xstrdup(name ? name : "");
    g->max_elements = graph_impl_default_max_elements();
    return g;
}

void graph_free(graph *g) {
    if (!g)
        return;
    for (int32_t i = 0; i < g->n_tensors; i++) {
        free(g->tensors[i].name);
        free(g->tensors[i].init.path);
        graph_blob_unref(g->tensors[i].init.blob);
    }
    for (int32_t i = 0; i < g->n_nodes; i++)
        free(g->nodes[i].name);
    free(g->tensors);
    free(g->nodes);
    free(g->inputs);
    free(g->weights);
    free(g->outputs);
    free(g->name);
    free(g->base_dir);
    graph_names_free(g->names);
    free(g);
}

static int32_t *graph_dup_ids(const int32_t *a, int32_t n) {
    if (!n)
        return NULL;
    int32_t *d = base_xmalloc(graph_ids_cap(n) * sizeof *d);
    memcpy(d, a, (size_t)n * sizeof *d);
    return d;
}

graph *graph_clone(const graph *g) {
    graph *c = base_xcalloc(1, sizeof *c);
    *c = *g;
    c->name = base_xstrdup(g->name ? g->name : "");
    c->base_dir = g->base_dir ? base_xstrdup(g->base_dir) : NULL;
    c->names = NULL;
    c->cap_tensors = g->n_tensors;
    c->cap_nodes = g->n_nodes;
    c->tensors = NULL;
    c->nodes = NULL;
    if (g->n_tensors) {
        c->tensors = base_xmalloc((size_t)g->n_tensors * sizeof *c->tensors);
        memcpy(c->tensors, g->tensors, (size_t)g->n_tensors * sizeof *c->tensors);
        for (int32_t i = 0; i < g->n_tensors; i++) {
            graph_tensor *t = &c->tensors[i];
            t->name = t->name ? base_xstrdup(t->name) : NULL;
            t->init.path = t->init.path ? base_xstrdup(t->init.path) : NULL;
            if (t->init.blob) /* shared, never copied: clones during a search cost no weight memory */
                graph_blob_ref(t->init.blob);
        }
    }
    if (g->n_nodes) {
        c->nodes = base_xmalloc((size_t)g->n_nodes * sizeof *c->nodes);
        memcpy(c->nodes, g->nodes, (size_t)g->n_nodes * sizeof *c->nodes);
        for (int32_t i = 0; i < g->n_nodes; i++)
            c->nodes[i].name = c->nodes[i].name ? base_xstrdup(c->nodes[i].name) : NULL;
    }
    c->inputs = graph_dup_ids(g->inputs, g->n_inputs);
    c->weights = graph_dup_ids(g->weights, g->n_weights);
    c->outputs = graph_dup_ids(g->outputs, g->n_outputs);
    return c;
}

int graph_ok(const graph *g) { return g && !g->err[0]; }

const char *graph_error(const graph *g) { return g ? g->err : "no graph"; }

/* ---------------------------------------------------------------------------------------------
 * building
 */
GRAPH_PRINTF(2, 3)
static void graph_fail(graph *g, const char *fmt, ...) {
    if (g->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    base_vfail_line(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
}

static int32_t graph_push_tensor(graph *g) {
    if (g->n_tensors == g->cap_tensors) {
        int32_t cap = g->cap_tensors ? 2 * g->cap_tensors : 16;
        g->tensors = base_xrealloc(g->tensors, (size_t)cap * sizeof *g->tensors);
        g->cap_tensors = cap;
    }
    graph_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->producer = -1;
    return g->n_tensors++;
}

static void graph_push_id(int32_t **arr, int32_t *n, int32_t id) {
    if (*n == 0 || (*n & (*n - 1)) == 0) /* full when n is a power of two */
        *arr = base_xrealloc(*arr, graph_ids_cap(*n + 1) * sizeof **arr);
    (*arr)[(*n)++] = id;
}

/* A DATA init's blob must hold exactly the shape's elements. */
static int graph_check_data_size(const graph_init *init, const ops_shape *s, char *msg, size_t len) {
    if (init->kind != GRAPH_INIT_DATA)
        return 0;
    int64_t n = ops_shape_numel(s);
    if (graph_blob_numel(init->blob) != n) {
        char sb[160];
        base_fail_line(msg, len, "data init holds %lld values, shape %s needs %lld",
                       (long long)graph_blob_numel(init->blob), ops_shape_str(s, sb, sizeof sb), (long long)n);
        return -1;
    }
    return 0;
}

int32_t graph_impl_add_leaf(graph *g, const char *name, graph_tensor_kind kind, graph_dtype dt,
                            const ops_shape *s, const graph_init *init, int check_unique,
                            char *msg, size_t len) {
    if (graph_impl_check_name(name, msg, len) < 0)
        return -1;
    if (check_unique && graph_tensor_name_taken(g, name)) {
        base_fail_line(msg, len, "duplicate tensor name");
        return -1;
    }
    if ((int)dt < 0 || dt >= GRAPH_DT_COUNT) {
        base_fail_line(msg, len, "dtype %d is not a known dtype", (int)dt);
        return -1;
    }
    if (graph_impl_check_shape(g, s, msg, len) < 0)
        return -1;
    if (kind == GRAPH_T_WEIGHT && graph_impl_check_init(init, msg, len) < 0)
        return -1;
    if (kind == GRAPH_T_WEIGHT && graph_check_data_size(init, s, msg, len) < 0)
        return -1;
    int32_t id = graph_push_tensor(g);
    graph_tensor *t = &g->tensors[id];
    t->name = base_xstrdup(name);
    graph_names_added(g, 0, name, id);
    t->shape = *s;
    for (int32_t d = s->rank; d < OPS_MAX_DIMS; d++)
        t->shape.dims[d] = 0;
    t->kind = kind;
    t->dtype = dt;
    if (kind == GRAPH_T_WEIGHT) {
        t->init = *init;
        t->init.path = init->kind == GRAPH_INIT_FILE ? base_xstrdup(init->path) : NULL;
        t->init.blob = init->kind == GRAPH_INIT_DATA ? graph_blob_ref(init->blob) : NULL;
        /* keep only the fields of the kind, so equal initialisers compare equal */
        if (init->kind != GRAPH_INIT_RANDOM) {
            t->init.seed = 0;
            t->init.mean = t->init.std = 0.0f;
        }
        if (init->kind != GRAPH_INIT_CONSTANT)
            t->init.value = 0.0f;
        if (init->kind != GRAPH_INIT_FILE)
            t->init.offset = 0;
        graph_push_id(&g->weights, &g->n_weights, id);
    } else {
        graph_push_id(&g->inputs, &g->n_inputs, id);
    }
    return id;
}

/* The op's declared keys copied from p (defaults when p is NULL); everything else 0. */
static int graph_params_normalize(ops_type op, const ops_params *p, ops_params *q, char *msg, size_t len) {
    if (!p) {
        ops_params_default(op, q);
        return 0;
    }
    memset(q, 0, sizeof *q);
    const ops_desc *od = &ops_table[op];
    for (int32_t i = 0; i < od->n_params; i++) {
        ops_param_key k = od->params[i].key;
        if (k == PM_LIST) {
            if (p->n_list < 0 || p->n_list > OPS_MAX_LIST) {
                base_fail_line(msg, len, "parameter '%s' has %d values (0 to %d allowed)",
                               graph_impl_param_name(&od->params[i]), (int)p->n_list, OPS_MAX_LIST);
                return -1;
            }
            q->n_list = p->n_list;
            for (int32_t j = 0; j < p->n_list; j++)
                q->list[j] = p->list[j];
        } else {
            q->v[k] = p->v[k];
        }
    }
    return 0;
}

/* Default output name i of node 'node' with n_out outputs, into buf. */
static void graph_default_out_name(const char *node, int32_t n_out, int32_t i, char *buf, size_t len) {
    if (n_out == 1)
        snprintf(buf, len, "%s", node);
    else
        snprintf(buf, len, "%s:%d", node, (int)i);
}

int32_t graph_impl_add_node(graph *g, const char *name, ops_type op, const ops_params *p,
                            int32_t n_in, const int32_t *in, const char *const *out_names,
                            int check_unique, int32_t *out, char *msg, size_t len) {
    if ((int)op < 0 || op >= OP_COUNT) {
        base_fail_line(msg, len, "op %d is not an operator", (int)op);
        return -1;
    }
    const ops_desc *od = &ops_table[op];
    if (name) {
        if (graph_impl_check_name(name, msg, len) < 0)
            return -1;
        if (check_unique && graph_node_name_taken(g, name)) {
            base_fail_line(msg, len, "duplicate node name");
            return -1;
        }
    }
    if (n_in < 0 || n_in > OPS_MAX_INPUTS || (n_in > 0 && !in)) {
        base_fail_line(msg, len, "%d inputs given (0 to %d allowed)", (int)n_in, OPS_MAX_INPUTS);
        return -1;
    }
    int32_t max_in = od->max_in < 0 ? OPS_MAX_INPUTS : od->max_in;
    if (n_in < od->min_in || n_in > max_in) {
        if (od->min_in == max_in)
            base_fail_line(msg, len, "op '%s' takes %d input%s, got %d", od->name, (int)od->min_in,
                           od->min_in == 1 ? "" : "s", (int)n_in);
        else
            base_fail_line(msg, len, "op '%s' takes %d to %d inputs, got %d", od->name, (int)od->min_in,
                           (int)max_in, (int)n_in);
        return -1;
    }
    ops_shape in_sh[OPS_MAX_INPUTS];
    for (int32_t k = 0; k < n_in; k++) {
        if (in[k] < 0 || in[k] >= g->n_tensors) {
            base_fail_line(msg, len, "input %d is tensor id %d, not a tensor of this graph", (int)k, (int)in[k]);
            return -1;
        }
        in_sh[k] = g->tensors[in[k]].shape;
    }
    ops_params q;
    if (graph_params_normalize(op, p, &q, msg, len) < 0)
        return -1;
    int32_t n_out = 0;
    ops_shape out_sh[OPS_MAX_OUTPUTS];
    char ierr[GRAPH_ERR_LEN];
    ierr[0] = '\0';
    if (ops_infer(op, &q, n_in, in_sh, &n_out, out_sh, ierr, sizeof ierr) < 0) {
        base_fail_line(msg, len, "%s", ierr[0] ? ierr : "shape inference failed");
        return -1;
    }
    if (n_out < 1 || n_out > OPS_MAX_OUTPUTS) {
        base_fail_line(msg, len, "op '%s' inferred %d outputs (1 to %d allowed)", od->name, (int)n_out,
                       OPS_MAX_OUTPUTS);
        return -1;
    }

    /* the node's name: given, or the first free "<op>_<k>", k from the count of such nodes */
    char auto_name[128];
    if (!name) {
        int32_t k = graph_op_count(g, op);
        for (;; k++) {
            snprintf(auto_name, sizeof auto_name, "%s_%d", od->name, (int)k);
            if (graph_node_name_taken(g, auto_name))
                continue;
            int free_outs = 1;
            for (int32_t i = 0; i < n_out && free_outs && !out_names; i++) {
                char ob[160];
                graph_default_out_name(auto_name, n_out, i, ob, sizeof ob);
                free_outs = !graph_tensor_name_taken(g, ob);
            }
            if (free_outs)
                break;
        }
        name = auto_name;
    }

    /* output names and shapes */
    size_t nl = strlen(name) + 16;
    char *names[OPS_MAX_OUTPUTS] = {0};
    int rc = 0;
    for (int32_t i = 0; i < n_out && !rc; i++) {
        if (out_names) {
            char m2[GRAPH_ERR_LEN];
            if (graph_impl_check_name(out_names[i], m2, sizeof m2) < 0) {
                base_fail_line(msg, len, "output %d: %s", (int)i, m2);
                rc = -1;
                break;
            }
            names[i] = base_xstrdup(out_names[i]);
        } else {
            names[i] = base_xmalloc(nl);
            graph_default_out_name(name, n_out, i, names[i], nl);
        }
        if (check_unique) {
            int taken = graph_tensor_name_taken(g, names[i]);
            for (int32_t j = 0; j < i && !taken; j++)
                taken = !strcmp(names[j], names[i]);
            if (taken) {
                base_fail_line(msg, len, "output tensor name '%s' is already used", names[i]);
                rc = -1;
                break;
            }
        }
        char sm[GRAPH_ERR_LEN];
        if (graph_impl_check_shape(g, &out_sh[i], sm, sizeof sm) < 0) {
            base_fail_line(msg, len, "output '%s': %s", names[i], sm);
            rc = -1;
        }
    }
    if (rc < 0) {
        for (int32_t i = 0; i < n_out; i++)
            free(names[i]);
        return -1;
    }

    if (g->n_nodes == g->cap_nodes) {
        int32_t cap = g->cap_nodes ? 2 * g->cap_nodes : 16;
        g->nodes = base_xrealloc(g->nodes, (size_t)cap * sizeof *g->nodes);
        g->cap_nodes = cap;
    }
    int32_t nid = g->n_nodes++;
    graph_node *nd = &g->nodes[nid];
    memset(nd, 0, sizeof *nd);
    nd->name = base_xstrdup(name);
    graph_names_added(g, 1, name, nid);
    nd->op = op;
    nd->p = q;
    nd->n_in = n_in;
    nd->n_out = n_out;
    for (int32_t k = 0; k < n_in; k++)
        nd->in[k] = in[k];
    for (int32_t i = 0; i < n_out; i++) {
        int32_t t = graph_push_tensor(g);
        graph_tensor *ts = &g->tensors[t];
        ts->name = names[i];
        graph_names_added(g, 0, names[i], t);
        ts->shape = out_sh[i];
        for (int32_t d = out_sh[i].rank; d < OPS_MAX_DIMS; d++)
            ts->shape.dims[d] = 0;
        ts->kind = GRAPH_T_INTER;
        ts->dtype = GRAPH_DT_F32;
        ts->producer = nid;
        ts->out_index = i;
        g->nodes[nid].out[i] = t;
        if (out)
            out[i] = t;
    }
    return n_out;
}

int graph_impl_mark_output(graph *g, int32_t t, char *msg, size_t len) {
    if (t < 0 || t >= g->n_tensors) {
        base_fail_line(msg, len, "tensor id %d is not a tensor of this graph", (int)t);
        return -1;
    }
    graph_push_id(&g->outputs, &g->n_outputs, t);
    return 0;
}

/* Shape from (rank, dims) with range checks before touching dims. */
static int graph_make_shape(int32_t rank, const int64_t *dims, ops_shape *s, char *msg, size_t len) {
    if (rank < 0 || rank > OPS_MAX_DIMS) {
        base_fail_line(msg, len, "rank %d is out of range (0 to %d dims)", (int)rank, OPS_MAX_DIMS);
        return -1;
    }
    if (rank > 0 && !dims) {
        base_fail_line(msg, len, "rank %d but no dims", (int)rank);
        return -1;
    }
    memset(s, 0, sizeof *s);
    s->rank = rank;
    for (int32_t d = 0; d < rank; d++)
        s->dims[d] = dims[d];
    return 0;
}

static int32_t graph_leaf(graph *g, const char *what, const char *name, graph_tensor_kind kind,
                          graph_dtype dt, int32_t rank, const int64_t *dims, const graph_init *init) {
    if (!graph_ok(g))
        return -1;
    char msg[GRAPH_ERR_LEN];
    ops_shape s;
    int32_t id = -1;
    if (graph_make_shape(rank, dims, &s, msg, sizeof msg) == 0)
        id = graph_impl_add_leaf(g, name, kind, dt, &s, init, 1, msg, sizeof msg);
    if (id < 0) {
        if (name)
            graph_fail(g, "%s '%s': %s", what, name, msg);
        else
            graph_fail(g, "%s: %s", what, msg);
    }
    return id;
}

int32_t graph_input(graph *g, const char *name, int32_t rank, const int64_t *dims) {
    return graph_input_typed(g, name, GRAPH_DT_F32, rank, dims);
}

int32_t graph_input_typed(graph *g, const char *name, graph_dtype dt, int32_t rank, const int64_t *dims) {
    return graph_leaf(g, "input", name, GRAPH_T_INPUT, dt, rank, dims, NULL);
}

int32_t graph_weight(graph *g, const char *name, int32_t rank, const int64_t *dims, graph_init init) {
    return graph_leaf(g, "weight", name, GRAPH_T_WEIGHT, GRAPH_DT_F32, rank, dims, &init);
}

int32_t graph_weight_he_fan_in(graph *g, const char *name, int32_t rank, const int64_t *dims, int64_t fan_in) {
    graph_init init;
    memset(&init, 0, sizeof init);
    init.kind = GRAPH_INIT_RANDOM;
    /* 53 bits of the name's hash: the seed stays a positive integer JSON readers keep exactly */
    init.seed = name ? base_fnv1a_str(name) >> 11 : 0;
    init.mean = 0.0f;
    init.std = fan_in > 0 ? (float)sqrt(2.0 / (double)fan_in) : 1.0f;
    return graph_weight(g, name, rank, dims, init);
}

int32_t graph_weight_he(graph *g, const char *name, int32_t rank, const int64_t *dims) {
    int64_t fan_in = 0; /* a conv kernel's layout (F, C/groups, kh, kw): numel / dims[0] */
    if (rank >= 2 && rank <= OPS_MAX_DIMS && dims) {
        int ok = dims[0] > 0;
        fan_in = 1;
        for (int32_t d = 1; d < rank && ok; d++) {
            ok = dims[d] > 0 && fan_in <= INT64_MAX / dims[d];
            if (ok)
                fan_in *= dims[d];
        }
        if (!ok) /* graph_weight reports the shape */
            fan_in = 0;
    }
    return graph_weight_he_fan_in(g, name, rank, dims, fan_in);
}

int32_t graph_weight_const(graph *g, const char *name, int32_t rank, const int64_t *dims, float value) {
    graph_init init;
    memset(&init, 0, sizeof init);
    init.kind = GRAPH_INIT_CONSTANT;
    init.value = value;
    return graph_weight(g, name, rank, dims, init);
}

int32_t graph_weight_data(graph *g, const char *name, int32_t rank, const int64_t *dims, graph_blob *blob) {
    graph_init init;
    memset(&init, 0, sizeof init);
    init.kind = GRAPH_INIT_DATA;
    init.blob = blob;
    return graph_weight(g, name, rank, dims, init);
}

int32_t graph_add(graph *g, const char *name, ops_type op, const ops_params *p,
                  int32_t n_in, const int32_t *in, int32_t *out) {
    if (!graph_ok(g))
        return -1;
    char msg[GRAPH_ERR_LEN];
    int32_t tmp[OPS_MAX_OUTPUTS];
    int32_t n = graph_impl_add_node(g, name, op, p, n_in, in, NULL, 1, out ? out : tmp, msg, sizeof msg);
    if (n < 0) {
        if (name)
            graph_fail(g, "node '%s': %s", name, msg);
        else if ((int)op >= 0 && op < OP_COUNT)
            graph_fail(g, "node (%s): %s", ops_table[op].name, msg);
        else
            graph_fail(g, "node: %s", msg);
    }
    return n;
}

int graph_mark_output(graph *g, int32_t t) {
    if (!graph_ok(g))
        return -1;
    char msg[GRAPH_ERR_LEN];
    if (graph_impl_mark_output(g, t, msg, sizeof msg) < 0) {
        graph_fail(g, "output: %s", msg);
        return -1;
    }
    return 0;
}

/* --- shorthands ------------------------------------------------------------------------- */
/* Set a parameter the shorthand names; an op that does not declare it accepts only 0. */
static void graph_sh_set(graph *g, ops_type op, ops_params *p, ops_param_key key, int64_t v) {
    if (ops_param_desc_of(op, key)) {
        p->v[key] = v;
        return;
    }
    if (v != 0)
        graph_fail(g, "node (%s): op '%s' has no parameter '%s'", ops_table[op].name, ops_table[op].name,
                   ops_param_table[key].name);
}

static int graph_sh_list(graph *g, ops_type op, ops_params *p, int32_t n, const int64_t *v) {
    if (n < 0 || n > OPS_MAX_LIST || (n > 0 && !v)) {
        graph_fail(g, "node (%s): a list of %d values (0 to %d allowed)", ops_table[op].name, (int)n, OPS_MAX_LIST);
        return -1;
    }
    p->n_list = n;
    for (int32_t i = 0; i < n; i++)
        p->list[i] = v[i];
    return 0;
}

/* The window parameters conv2d and the pools share: strides, the pad mode and, where given, the
 * explicit pads (top, left, bottom, right); without pads they keep their default, 0. */
static void graph_sh_window(graph *g, ops_type op, ops_params *p, int32_t stride_h, int32_t stride_w,
                            ops_padmode pad, const int32_t pads[4]) {
    static const ops_param_key sides[4] = {PM_PAD_T, PM_PAD_L, PM_PAD_B, PM_PAD_R};
    graph_sh_set(g, op, p, PM_STRIDE_H, stride_h);
    graph_sh_set(g, op, p, PM_STRIDE_W, stride_w);
    graph_sh_set(g, op, p, PM_PAD, pad);
    for (int i = 0; i < 4 && pads; i++)
        graph_sh_set(g, op, p, sides[i], pads[i]);
}

static int32_t graph_add1(graph *g, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in) {
    if (!graph_ok(g))
        return -1;
    int32_t out[OPS_MAX_OUTPUTS];
    int32_t n = graph_add(g, NULL, op, p, n_in, in, out);
    if (n < 0)
        return -1;
    if (n != 1) {
        graph_fail(g, "node '%s': %d outputs where one was expected", g->nodes[g->n_nodes - 1].name, (int)n);
        return -1;
    }
    return out[0];
}

int32_t graph_conv2d(graph *g, int32_t x, int32_t w, int32_t stride_h, int32_t stride_w,
                     ops_padmode pad, ops_act act) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    graph_sh_window(g, OP_CONV2D, &p, stride_h, stride_w, pad, NULL);
    graph_sh_set(g, OP_CONV2D, &p, PM_ACT, act);
    int32_t in[2] = {x, w};
    return graph_add1(g, OP_CONV2D, &p, 2, in);
}

int32_t graph_conv2d_ex(graph *g, const char *name, int32_t x, int32_t w, int32_t bias,
                        int32_t stride_h, int32_t stride_w, const int32_t pads[4],
                        int32_t groups, ops_act act) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    graph_sh_window(g, OP_CONV2D, &p, stride_h, stride_w, OPS_PAD_EXPLICIT, pads);
    graph_sh_set(g, OP_CONV2D, &p, PM_GROUPS, groups);
    graph_sh_set(g, OP_CONV2D, &p, PM_ACT, act);
    int32_t in[3] = {x, w, bias};
    int32_t out[OPS_MAX_OUTPUTS];
    if (graph_add(g, name, OP_CONV2D, &p, bias >= 0 ? 3 : 2, in, out) < 0)
        return -1;
    return out[0];
}

int32_t graph_matmul(graph *g, int32_t a, int32_t b, ops_act act) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_MATMUL, &p);
    graph_sh_set(g, OP_MATMUL, &p, PM_ACT, act);
    int32_t in[2] = {a, b};
    return graph_add1(g, OP_MATMUL, &p, 2, in);
}

int32_t graph_ewadd(graph *g, int32_t x, int32_t y) {
    int32_t in[2] = {x, y};
    return graph_add1(g, OP_EWADD, NULL, 2, in);
}

int32_t graph_ewmul(graph *g, int32_t x, int32_t y) {
    int32_t in[2] = {x, y};
    return graph_add1(g, OP_EWMUL, NULL, 2, in);
}

int32_t graph_unary(graph *g, ops_type op, int32_t x) {
    if (!graph_ok(g))
        return -1;
    if ((int)op < 0 || op >= OP_COUNT) {
        graph_fail(g, "node: op %d is not an operator", (int)op);
        return -1;
    }
    return graph_add1(g, op, NULL, 1, &x);
}

int32_t graph_transpose(graph *g, int32_t x, int32_t rank, const int32_t *perm) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_TRANSPOSE, &p);
    int64_t v[OPS_MAX_LIST];
    for (int32_t i = 0; i < rank && i < OPS_MAX_LIST && perm; i++)
        v[i] = perm[i];
    if (graph_sh_list(g, OP_TRANSPOSE, &p, rank, perm ? v : NULL) < 0)
        return -1;
    return graph_add1(g, OP_TRANSPOSE, &p, 1, &x);
}

int32_t graph_concat(graph *g, int32_t axis, int32_t n, const int32_t *xs) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_CONCAT, &p);
    graph_sh_set(g, OP_CONCAT, &p, PM_AXIS, axis);
    return graph_add1(g, OP_CONCAT, &p, n, xs);
}

int32_t graph_split(graph *g, int32_t x, int32_t axis, int32_t parts, const int64_t *sizes, int32_t *outs) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_SPLIT, &p);
    graph_sh_set(g, OP_SPLIT, &p, PM_AXIS, axis);
    graph_sh_set(g, OP_SPLIT, &p, PM_PARTS, parts);
    if (sizes && graph_sh_list(g, OP_SPLIT, &p, parts, sizes) < 0)
        return -1;
    int32_t tmp[OPS_MAX_OUTPUTS];
    return graph_add(g, NULL, OP_SPLIT, &p, 1, &x, outs ? outs : tmp);
}

int32_t graph_pool2d(graph *g, ops_type op, int32_t x, int32_t kh, int32_t kw,
                     int32_t stride_h, int32_t stride_w, ops_padmode pad, const int32_t pads[4]) {
    if (!graph_ok(g))
        return -1;
    if (op != OP_AVGPOOL2D && op != OP_MAXPOOL2D) {
        graph_fail(g, "node: graph_pool2d takes avgpool2d or maxpool2d, not op %d", (int)op);
        return -1;
    }
    ops_params p;
    ops_params_default(op, &p);
    graph_sh_set(g, op, &p, PM_KH, kh);
    graph_sh_set(g, op, &p, PM_KW, kw);
    graph_sh_window(g, op, &p, stride_h, stride_w, pad, pads);
    return graph_add1(g, op, &p, 1, &x);
}

int32_t graph_global_avgpool(graph *g, int32_t x) { return graph_add1(g, OP_GLOBALAVGPOOL, NULL, 1, &x); }

int32_t graph_batchnorm(graph *g, int32_t x, int32_t scale, int32_t bias, int32_t mean, int32_t var, float eps) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_BATCHNORM, &p);
    graph_sh_set(g, OP_BATCHNORM, &p, PM_EPS, ops_f2p(eps));
    int32_t in[5] = {x, scale, bias, mean, var};
    return graph_add1(g, OP_BATCHNORM, &p, 5, in);
}

int32_t graph_reshape(graph *g, int32_t x, int32_t rank, const int64_t *dims) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_RESHAPE, &p);
    if (graph_sh_list(g, OP_RESHAPE, &p, rank, dims) < 0)
        return -1;
    return graph_add1(g, OP_RESHAPE, &p, 1, &x);
}

int32_t graph_softmax(graph *g, int32_t x, int32_t axis) {
    if (!graph_ok(g))
        return -1;
    ops_params p;
    ops_params_default(OP_SOFTMAX, &p);
    graph_sh_set(g, OP_SOFTMAX, &p, PM_AXIS, axis);
    return graph_add1(g, OP_SOFTMAX, &p, 1, &x);
}

int32_t graph_layernorm(graph *g, int32_t x, int32_t gamma, int32_t beta, int32_t axis, float eps) {
    if (!graph_ok(g))
        return -1;
    if (gamma < 0 && beta >= 0) {
        graph_fail(g, "node (layernorm): a beta needs a gamma");
        return -1;
    }
    ops_params p;
    ops_params_default(OP_LAYERNORM, &p);
    graph_sh_set(g, OP_LAYERNORM, &p, PM_AXIS, axis);
    graph_sh_set(g, OP_LAYERNORM, &p, PM_EPS, ops_f2p(eps));
    int32_t in[3] = {x, gamma, beta};
    int32_t n = gamma < 0 ? 1 : beta < 0 ? 2 : 3;
    return graph_add1(g, OP_LAYERNORM, &p, n, in);
}

/* ---------------------------------------------------------------------------------------------
 * structure
 */
/* Binary min-heap of node ids. */
typedef struct {
    int32_t *a;
    int32_t n;
} graph_heap;

static void graph_heap_push(graph_heap *h, int32_t v) {
    int32_t i = h->n++;
    h->a[i] = v;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (h->a[p] <= h->a[i])
            break;
        int32_t t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
        i = p;
    }
}

static int32_t graph_heap_pop(graph_heap *h) {
    int32_t top = h->a[0];
    h->a[0] = h->a[--h->n];
    int32_t i = 0;
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->a[l] < h->a[m])
            m = l;
        if (r < h->n && h->a[r] < h->a[m])
            m = r;
        if (m == i)
            break;
        int32_t t = h->a[m];
        h->a[m] = h->a[i];
        h->a[i] = t;
        i = m;
    }
    return top;
}

/* The producing node of node n's input k, -1 for inputs and weights; -2 with a message if the
 * ids are out of range. */
static int32_t graph_input_producer(const graph *g, int32_t n, int32_t k, char *err, size_t errlen) {
    int32_t t = g->nodes[n].in[k];
    if (t < 0 || t >= g->n_tensors) {
        base_fail_line(err, errlen, "node '%s': input %d is tensor id %d, not a tensor of this graph",
                       g->nodes[n].name ? g->nodes[n].name : "?", (int)k, (int)t);
        return -2;
    }
    int32_t p = g->tensors[t].producer;
    if (p < -1 || p >= g->n_nodes) {
        base_fail_line(err, errlen, "tensor '%s': producer %d is not a node of this graph",
                       g->tensors[t].name ? g->tensors[t].name : "?", (int)p);
        return -2;
    }
    return p;
}

int32_t graph_impl_kahn(int32_t n, const int32_t *pstart, const int32_t *pred, int32_t *order) {
    if (n <= 0)
        return 0;
    int32_t n_edges = pstart[n];
    int32_t *indeg = base_xcalloc((size_t)n, sizeof *indeg);
    int32_t *sstart = base_xcalloc((size_t)n + 1, sizeof *sstart);
    int32_t *succ = base_xmalloc((size_t)(n_edges ? n_edges : 1) * sizeof *succ);
    int32_t *fill = base_xmalloc((size_t)n * sizeof *fill);
    graph_heap h = {base_xmalloc((size_t)n * sizeof(int32_t)), 0};
    /* successors in CSR form: succ[sstart[p] .. sstart[p+1]) are the items waiting on p */
    for (int32_t v = 0; v < n; v++)
        for (int32_t e = pstart[v]; e < pstart[v + 1]; e++) {
            indeg[v]++;
            sstart[pred[e] + 1]++;
        }
    for (int32_t v = 0; v < n; v++)
        sstart[v + 1] += sstart[v];
    memcpy(fill, sstart, (size_t)n * sizeof *fill);
    for (int32_t v = 0; v < n; v++)
        for (int32_t e = pstart[v]; e < pstart[v + 1]; e++)
            succ[fill[pred[e]]++] = v;
    for (int32_t v = 0; v < n; v++)
        if (!indeg[v])
            graph_heap_push(&h, v);
    int32_t cnt = 0;
    while (h.n) {
        int32_t v = graph_heap_pop(&h);
        order[cnt++] = v;
        for (int32_t e = sstart[v]; e < sstart[v + 1]; e++)
            if (--indeg[succ[e]] == 0)
                graph_heap_push(&h, succ[e]);
    }
    free(h.a);
    free(fill);
    free(succ);
    free(sstart);
    free(indeg);
    return cnt;
}

int32_t graph_impl_find_cycle(int32_t n, const int32_t *pstart, const int32_t *pred,
                              const int32_t *order, int32_t n_emitted, int32_t *cyc) {
    uint8_t *emitted = base_xcalloc((size_t)n + 1, 1);
    int32_t *step = base_xmalloc((size_t)n * sizeof *step);
    int32_t *next = base_xmalloc((size_t)n * sizeof *next);
    for (int32_t i = 0; i < n_emitted; i++)
        emitted[order[i]] = 1;
    for (int32_t i = 0; i < n; i++)
        step[i] = next[i] = -1;
    /* an item not emitted waits on a predecessor not emitted: walking backwards from the lowest
     * such item must repeat an item, and the repeated one lies on a cycle */
    int32_t x = 0;
    while (x < n && emitted[x])
        x++;
    int32_t s = 0, len = 0;
    while (x < n && step[x] < 0) {
        step[x] = s++;
        int32_t p = -1;
        for (int32_t e = pstart[x]; e < pstart[x + 1] && p < 0; e++)
            if (!emitted[pred[e]])
                p = pred[e];
        next[x] = p;
        if (p < 0)
            break;
        x = p;
    }
    if (x < n && next[x] >= 0) {
        /* next[] leads from consumer to producer: reverse it into data-flow order */
        int32_t y = x;
        do {
            cyc[len++] = y;
            y = next[y];
        } while (y >= 0 && y != x && len < n);
        for (int32_t i = 0, j = len - 1; i < j; i++, j--) {
            int32_t t = cyc[i];
            cyc[i] = cyc[j];
            cyc[j] = t;
        }
        /* start at the lowest item, so the message does not depend on where the walk began */
        int32_t lo = 0;
        for (int32_t i = 1; i < len; i++)
            if (cyc[i] < cyc[lo])
                lo = i;
        for (int32_t r = 0; r < lo; r++) {
            int32_t t = cyc[0];
            memmove(cyc, cyc + 1, (size_t)(len - 1) * sizeof *cyc);
            cyc[len - 1] = t;
        }
    }
    free(emitted);
    free(step);
    free(next);
    return len;
}

void graph_impl_cycle_str(const char *const *names, const int32_t *cyc, int32_t len, char *buf, size_t buflen) {
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i <= len && len > 0; i++) {
        int w = snprintf(buf + used, buflen - used, "%s%s", i ? " -> " : "", names[cyc[i % len]]);
        if (w < 0 || (size_t)w >= buflen - used)
            break;
        used += (size_t)w;
    }
}

int graph_topo_order(const graph *g, int32_t *order, char *err, size_t errlen) {
    int32_t n = g->n_nodes;
    if (n == 0)
        return 0;
    int32_t *pstart = base_xcalloc((size_t)n + 1, sizeof *pstart);
    for (int32_t v = 0; v < n; v++) {
        const graph_node *nd = &g->nodes[v];
        if (nd->n_in < 0 || nd->n_in > OPS_MAX_INPUTS) {
            base_fail_line(err, errlen, "node '%s': %d inputs", nd->name ? nd->name : "?", (int)nd->n_in);
            free(pstart);
            return -1;
        }
        int32_t c = 0;
        for (int32_t k = 0; k < nd->n_in; k++) {
            int32_t p = graph_input_producer(g, v, k, err, errlen);
            if (p == -2) {
                free(pstart);
                return -1;
            }
            c += p >= 0;
        }
        pstart[v + 1] = pstart[v] + c;
    }
    int32_t *pred = base_xmalloc((size_t)(pstart[n] ? pstart[n] : 1) * sizeof *pred);
    for (int32_t v = 0, e = 0; v < n; v++)
        for (int32_t k = 0; k < g->nodes[v].n_in; k++) {
            int32_t p = g->tensors[g->nodes[v].in[k]].producer;
            if (p >= 0)
                pred[e++] = p;
        }
    int rc = 0;
    int32_t cnt = graph_impl_kahn(n, pstart, pred, order);
    if (cnt < n) {
        int32_t *cyc = base_xmalloc((size_t)n * sizeof *cyc);
        const char **names = base_xmalloc((size_t)n * sizeof *names);
        for (int32_t v = 0; v < n; v++)
            names[v] = g->nodes[v].name ? g->nodes[v].name : "?";
        int32_t len = graph_impl_find_cycle(n, pstart, pred, order, cnt, cyc);
        char path[GRAPH_ERR_LEN];
        graph_impl_cycle_str(names, cyc, len, path, sizeof path);
        base_fail_line(err, errlen, "node '%s': cycle: %s", len ? names[cyc[0]] : "?", path);
        free(cyc);
        free(names);
        rc = -1;
    }
    free(pred);
    free(pstart);
    return rc;
}

/* Structural checks of tensors and nodes (ids, producers, shapes, names); no cycle check. */
static int graph_validate_structure(const graph *g, char *err, size_t errlen) {
    char m[GRAPH_ERR_LEN];
    int32_t *seen = base_xcalloc((size_t)g->n_tensors + 1, sizeof *seen);
    int rc = -1;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        int32_t t = g->inputs[i];
        if (t < 0 || t >= g->n_tensors || g->tensors[t].kind != GRAPH_T_INPUT || seen[t]++) {
            base_fail_line(err, errlen, "inputs[%d]: tensor id %d is not a graph input, or listed twice", (int)i, (int)t);
            goto done;
        }
    }
    for (int32_t i = 0; i < g->n_weights; i++) {
        int32_t t = g->weights[i];
        if (t < 0 || t >= g->n_tensors || g->tensors[t].kind != GRAPH_T_WEIGHT || seen[t]++) {
            base_fail_line(err, errlen, "weights[%d]: tensor id %d is not a weight, or listed twice", (int)i, (int)t);
            goto done;
        }
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        int32_t t = g->outputs[i];
        if (t < 0 || t >= g->n_tensors) {
            base_fail_line(err, errlen, "outputs[%d]: tensor id %d is not a tensor of this graph", (int)i, (int)t);
            goto done;
        }
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const graph_tensor *ts = &g->tensors[t];
        if (graph_impl_check_name(ts->name, m, sizeof m) < 0) {
            base_fail_line(err, errlen, "tensor %d: %s", (int)t, m);
            goto done;
        }
        if (graph_impl_check_shape(g, &ts->shape, m, sizeof m) < 0) {
            base_fail_line(err, errlen, "tensor '%s': %s", ts->name, m);
            goto done;
        }
        if ((int)ts->dtype < 0 || ts->dtype >= GRAPH_DT_COUNT) {
            base_fail_line(err, errlen, "tensor '%s': dtype %d is not a known dtype", ts->name, (int)ts->dtype);
            goto done;
        }
        switch (ts->kind) {
        case GRAPH_T_INPUT:
        case GRAPH_T_WEIGHT:
            if (ts->producer != -1 || !seen[t]) {
                base_fail_line(err, errlen, "tensor '%s': a %s must be listed in the graph's %s and have no producer",
                               ts->name, ts->kind == GRAPH_T_INPUT ? "graph input" : "weight",
                               ts->kind == GRAPH_T_INPUT ? "inputs" : "weights");
                goto done;
            }
            if (ts->kind == GRAPH_T_WEIGHT && (graph_impl_check_init(&ts->init, m, sizeof m) < 0 ||
                                               graph_check_data_size(&ts->init, &ts->shape, m, sizeof m) < 0)) {
                base_fail_line(err, errlen, "weight '%s': %s", ts->name, m);
                goto done;
            }
            break;
        case GRAPH_T_INTER: {
            int32_t p = ts->producer;
            if (p < 0 || p >= g->n_nodes || ts->out_index < 0 || ts->out_index >= g->nodes[p].n_out ||
                g->nodes[p].out[ts->out_index] != t) {
                base_fail_line(err, errlen, "tensor '%s': not produced by the node it names (producer %d, output %d)",
                               ts->name, (int)p, (int)ts->out_index);
                goto done;
            }
            break;
        }
        case GRAPH_T_COUNT:
        default: /* memory read as an enum: any value may be there */
            base_fail_line(err, errlen, "tensor '%s': kind %d is not a known kind", ts->name, (int)ts->kind);
            goto done;
        }
    }
    for (int32_t n = 0; n < g->n_nodes; n++) {
        const graph_node *nd = &g->nodes[n];
        if (graph_impl_check_name(nd->name, m, sizeof m) < 0) {
            base_fail_line(err, errlen, "node %d: %s", (int)n, m);
            goto done;
        }
        if ((int)nd->op < 0 || nd->op >= OP_COUNT) {
            base_fail_line(err, errlen, "node '%s': op %d is not an operator", nd->name, (int)nd->op);
            goto done;
        }
        if (nd->n_in < 0 || nd->n_in > OPS_MAX_INPUTS || nd->n_out < 1 || nd->n_out > OPS_MAX_OUTPUTS) {
            base_fail_line(err, errlen, "node '%s': %d inputs and %d outputs", nd->name, (int)nd->n_in, (int)nd->n_out);
            goto done;
        }
        for (int32_t k = 0; k < nd->n_in; k++)
            if (nd->in[k] < 0 || nd->in[k] >= g->n_tensors) {
                base_fail_line(err, errlen, "node '%s': input %d is tensor id %d, not a tensor of this graph",
                               nd->name, (int)k, (int)nd->in[k]);
                goto done;
            }
        for (int32_t k = 0; k < nd->n_out; k++) {
            int32_t t = nd->out[k];
            if (t < 0 || t >= g->n_tensors || g->tensors[t].kind != GRAPH_T_INTER || g->tensors[t].producer != n ||
                g->tensors[t].out_index != k) {
                base_fail_line(err, errlen, "node '%s': output %d (tensor id %d) does not name this node as producer",
                               nd->name, (int)k, (int)t);
                goto done;
            }
        }
    }
    /* names unique, among tensors and among nodes */
    graph_name_set ts, ns;
    graph_nameset_init(&ts, (size_t)g->n_tensors);
    graph_nameset_init(&ns, (size_t)g->n_nodes);
    int dup = 0;
    for (int32_t t = 0; t < g->n_tensors && !dup; t++)
        if (!graph_nameset_add(&ts, g->tensors[t].name, NULL)) {
            base_fail_line(err, errlen, "tensor '%s': duplicate tensor name", g->tensors[t].name);
            dup = 1;
        }
    for (int32_t n = 0; n < g->n_nodes && !dup; n++)
        if (!graph_nameset_add(&ns, g->nodes[n].name, NULL)) {
            base_fail_line(err, errlen, "node '%s': duplicate node name", g->nodes[n].name);
            dup = 1;
        }
    graph_nameset_free(&ts);
    graph_nameset_free(&ns);
    if (!dup)
        rc = 0;
done:
    free(seen);
    return rc;
}

int graph_validate(const graph *g, char *err, size_t errlen) {
    if (!g) {
        base_fail_line(err, errlen, "no graph");
        return -1;
    }
    if (g->err[0]) {
        base_fail_line(err, errlen, "%s", g->err);
        return -1;
    }
    if (g->n_nodes < 1) {
        base_fail_line(err, errlen, "the graph has no nodes");
        return -1;
    }
    if (g->n_outputs < 1) {
        base_fail_line(err, errlen, "the graph has no outputs");
        return -1;
    }
    if (graph_validate_structure(g, err, errlen) < 0)
        return -1;
    int32_t *order = base_xmalloc((size_t)g->n_nodes * sizeof *order);
    int rc = graph_topo_order(g, order, err, errlen);
    free(order);
    if (rc < 0)
        return -1;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        const graph_node *nd = &g->nodes[n];
        ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
        for (int32_t k = 0; k < nd->n_in; k++)
            in_sh[k] = g->tensors[nd->in[k]].shape;
        int32_t n_out = 0;
        char m[GRAPH_ERR_LEN];
        m[0] = '\0';
        if (ops_infer(nd->op, &nd->p, nd->n_in, in_sh, &n_out, out_sh, m, sizeof m) < 0) {
            base_fail_line(err, errlen, "node '%s': %s", nd->name, m[0] ? m : "shape inference failed");
            return -1;
        }
        if (n_out != nd->n_out) {
            base_fail_line(err, errlen, "node '%s': has %d outputs, the op infers %d", nd->name, (int)nd->n_out,
                           (int)n_out);
            return -1;
        }
        for (int32_t k = 0; k < n_out; k++)
            if (!ops_shape_eq(&out_sh[k], &g->tensors[nd->out[k]].shape)) {
                char a[160], b[160];
                base_fail_line(err, errlen, "node '%s': output %d has shape %s, the op infers %s", nd->name, (int)k,
                               ops_shape_str(&g->tensors[nd->out[k]].shape, a, sizeof a),
                               ops_shape_str(&out_sh[k], b, sizeof b));
                return -1;
            }
    }
    return 0;
}

/* --- canonical hash --------------------------------------------------------------------- */
static uint64_t graph_hstep(uint64_t h, uint64_t v) {
    return graph_impl_mix64(h ^ (graph_impl_mix64(v + GRAPH_GOLDEN) + GRAPH_GOLDEN + (h << 6) + (h >> 2)));
}

static uint64_t graph_fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t graph_hash_shape(uint64_t h, const ops_shape *s) {
    h = graph_hstep(h, (uint64_t)s->rank);
    for (int32_t d = 0; d < s->rank && d < OPS_MAX_DIMS; d++)
        h = graph_hstep(h, (uint64_t)s->dims[d]);
    return h;
}

enum { GRAPH_H_INPUT = 0x11, GRAPH_H_WEIGHT = 0x22, GRAPH_H_NODE = 0x33, GRAPH_H_GRAPH = 0x44 };

static uint64_t graph_hash_leaf(const graph *g, int32_t t, const int32_t *input_pos) {
    const graph_tensor *ts = &g->tensors[t];
    uint64_t h;
    if (ts->kind == GRAPH_T_INPUT) {
        h = graph_hstep(GRAPH_H_INPUT, (uint64_t)(int64_t)input_pos[t]);
        h = graph_hstep(h, (uint64_t)ts->dtype);
        return graph_hash_shape(h, &ts->shape);
    }
    h = graph_hash_shape(GRAPH_H_WEIGHT, &ts->shape);
    h = graph_hstep(h, (uint64_t)ts->init.kind);
    switch (ts->init.kind) {
    case GRAPH_INIT_RANDOM:
        h = graph_hstep(h, ts->init.seed);
        h = graph_hstep(h, graph_fbits(ts->init.mean));
        h = graph_hstep(h, graph_fbits(ts->init.std));
        break;
    case GRAPH_INIT_CONSTANT:
        h = graph_hstep(h, graph_fbits(ts->init.value));
        break;
    case GRAPH_INIT_FILE:
        h = graph_hstep(h, base_fnv1a_str(ts->init.path ? ts->init.path : ""));
        h = graph_hstep(h, (uint64_t)ts->init.offset);
        break;
    case GRAPH_INIT_DATA:
        h = graph_hstep(h, ts->init.blob ? graph_blob_hash(ts->init.blob) : 0);
        break;
    case GRAPH_INIT_COUNT:
        break;
    }
    return h;
}

uint64_t graph_hash(const graph *g) {
    int32_t *order = base_xmalloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *order);
    if (graph_topo_order(g, order, NULL, 0) < 0) {
        free(order);
        return 0;
    }
    uint64_t *th = base_xmalloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *th);
    int32_t *input_pos = base_xmalloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *input_pos);
    for (int32_t t = 0; t < g->n_tensors; t++)
        input_pos[t] = -1;
    for (int32_t i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] >= 0 && g->inputs[i] < g->n_tensors)
            input_pos[g->inputs[i]] = i;
    for (int32_t t = 0; t < g->n_tensors; t++)
        th[t] = g->tensors[t].kind == GRAPH_T_INTER ? 0 : graph_hash_leaf(g, t, input_pos);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const graph_node *nd = &g->nodes[order[i]];
        uint64_t h = graph_hstep(GRAPH_H_NODE, (uint64_t)nd->op);
        if ((int)nd->op >= 0 && nd->op < OP_COUNT) {
            const ops_desc *od = &ops_table[nd->op];
            for (int32_t k = 0; k < od->n_params; k++) {
                ops_param_key key = od->params[k].key;
                h = graph_hstep(h, (uint64_t)key);
                if (key == PM_LIST) {
                    h = graph_hstep(h, (uint64_t)nd->p.n_list);
                    for (int32_t j = 0; j < nd->p.n_list && j < OPS_MAX_LIST; j++)
                        h = graph_hstep(h, (uint64_t)nd->p.list[j]);
                } else {
                    h = graph_hstep(h, (uint64_t)nd->p.v[key]);
                }
            }
        }
        h = graph_hstep(h, (uint64_t)nd->n_in);
        for (int32_t k = 0; k < nd->n_in; k++)
            h = graph_hstep(h, th[nd->in[k]]);
        for (int32_t k = 0; k < nd->n_out && k < OPS_MAX_OUTPUTS; k++)
            if (nd->out[k] >= 0 && nd->out[k] < g->n_tensors)
                th[nd->out[k]] = graph_hstep(h, (uint64_t)k);
    }
    uint64_t h = graph_hstep(GRAPH_H_GRAPH, (uint64_t)g->n_outputs);
    for (int32_t i = 0; i < g->n_outputs; i++)
        h = graph_hstep(h, g->outputs[i] >= 0 && g->outputs[i] < g->n_tensors ? th[g->outputs[i]] : 0);
    free(th);
    free(input_pos);
    free(order);
    return h;
}

/* --- compaction ------------------------------------------------------------------------- */
/* One step of graph_compact's walk back from the outputs: tensor t is used, and its producer,
 * the first time it is reached, is live and pushed on stack[*sp]. */
static void graph_reach(const graph *g, int32_t t, uint8_t *used, uint8_t *live, int32_t *stack, int32_t *sp) {
    used[t] = 1;
    int32_t p = g->tensors[t].producer;
    if (p >= 0 && !live[p]) {
        live[p] = 1;
        stack[(*sp)++] = p;
    }
}

void graph_compact(graph *g) {
    int32_t nn = g->n_nodes, nt = g->n_tensors;
    graph_names_free(g->names); /* ids change: rebuilt when needed */
    g->names = NULL;
    uint8_t *live = base_xcalloc((size_t)nn + 1, 1);
    uint8_t *used = base_xcalloc((size_t)nt + 1, 1);
    int32_t *stack = base_xmalloc((size_t)(nn ? nn : 1) * sizeof *stack);
    int32_t sp = 0;
    for (int32_t i = 0; i < g->n_outputs; i++)
        graph_reach(g, g->outputs[i], used, live, stack, &sp);
    while (sp) {
        const graph_node *nd = &g->nodes[stack[--sp]];
        for (int32_t k = 0; k < nd->n_in; k++)
            graph_reach(g, nd->in[k], used, live, stack, &sp);
    }
    /* keep: every graph input (they are the interface), used weights, outputs of live nodes */
    int32_t *tmap = base_xmalloc((size_t)(nt ? nt : 1) * sizeof *tmap);
    int32_t *nmap = base_xmalloc((size_t)(nn ? nn : 1) * sizeof *nmap);
    int32_t k = 0;
    for (int32_t n = 0; n < nn; n++) {
        nmap[n] = live[n] ? k : -1;
        if (live[n])
            g->nodes[k++] = g->nodes[n];
        else
            free(g->nodes[n].name);
    }
    g->n_nodes = k;
    k = 0;
    for (int32_t t = 0; t < nt; t++) {
        graph_tensor *ts = &g->tensors[t];
        int keep = ts->kind == GRAPH_T_INPUT || (ts->kind == GRAPH_T_WEIGHT && used[t]) ||
                   (ts->kind == GRAPH_T_INTER && live[ts->producer]);
        tmap[t] = keep ? k : -1;
        if (keep) {
            g->tensors[k] = *ts;
            if (g->tensors[k].producer >= 0)
                g->tensors[k].producer = nmap[g->tensors[k].producer];
            k++;
        } else {
            free(ts->name);
            free(ts->init.path);
            graph_blob_unref(ts->init.blob);
        }
    }
    g->n_tensors = k;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        graph_node *nd = &g->nodes[n];
        for (int32_t j = 0; j < nd->n_in; j++)
            nd->in[j] = tmap[nd->in[j]];
        for (int32_t j = 0; j < nd->n_out; j++)
            nd->out[j] = tmap[nd->out[j]];
    }
    for (int32_t i = 0; i < g->n_inputs; i++)
        g->inputs[i] = tmap[g->inputs[i]];
    int32_t w = 0;
    for (int32_t i = 0; i < g->n_weights; i++)
        if (tmap[g->weights[i]] >= 0)
            g->weights[w++] = tmap[g->weights[i]];
    g->n_weights = w;
    for (int32_t i = 0; i < g->n_outputs; i++)
        g->outputs[i] = tmap[g->outputs[i]];
    free(tmap);
    free(nmap);
    free(stack);
    free(live);
    free(used);
}

int graph_rename_tensor(graph *g, int32_t t, const char *name) {
    char m[GRAPH_ERR_LEN];
    if (!graph_ok(g))
        return -1;
    if (t < 0 || t >= g->n_tensors) {
        graph_fail(g, "rename: tensor id %d is not a tensor of this graph", (int)t);
        return -1;
    }
    if (graph_impl_check_name(name, m, sizeof m) < 0) {
        graph_fail(g, "rename of '%s': %s", g->tensors[t].name, m);
        return -1;
    }
    int32_t other = graph_names_find(g, 0, name);
    if (other >= 0 && other != t) {
        graph_fail(g, "rename of '%s': the name '%s' is already used", g->tensors[t].name, name);
        return -1;
    }
    if (g->names && g->names->built)
        graph_ix_del(&g->names->tensors, g->tensors[t].name);
    free(g->tensors[t].name);
    g->tensors[t].name = base_xstrdup(name);
    graph_names_added(g, 0, name, t);
    return 0;
}

int32_t graph_find_tensor(const graph *g, const char *name) {
    if (!g || !name)
        return -1;
    if (g->names && g->names->built) { /* read only: a const graph may be shared between threads */
        graph_name_ix *e = NULL;
        HASH_FIND_STR(g->names->tensors, name, e);
        if (!e)
            return -1;
        if (e->id < g->n_tensors && g->tensors[e->id].name && !strcmp(g->tensors[e->id].name, name))
            return e->id;
    }
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].name && !strcmp(g->tensors[i].name, name))
            return i;
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * weights
 */
/* Element i of the standard normal stream of seed: Box-Muller on outputs 2i+1 and 2i+2 of the
 * splitmix64 sequence started at seed, so the value depends only on (seed, i). */
static double graph_normal_at(uint64_t seed, int64_t i) {
    uint64_t c = 2 * (uint64_t)i;
    uint64_t r1 = graph_impl_mix64(seed + (c + 1) * GRAPH_GOLDEN);
    uint64_t r2 = graph_impl_mix64(seed + (c + 2) * GRAPH_GOLDEN);
    double u1 = (double)((r1 >> 11) + 1) * 0x1p-53; /* (0, 1] */
    double u2 = (double)(r2 >> 11) * 0x1p-53;       /* [0, 1) */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

void graph_fill_normal(float *dst, int64_t n, uint64_t seed, float mean, float std) {
    /* each element is computed from its own index: the result does not depend on threads */
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)((double)mean + (double)std * graph_normal_at(seed, i));
}

/* --- blobs ------------------------------------------------------------------------------ */
struct graph_blob {
    atomic_llong refs;
    int64_t numel;
    uint64_t hash;  /* of the values' bits, computed once at creation */
    float data[];   /* [numel], row-major, never written after creation */
};

/* Every step x -> ((x ^ w) * odd) then an xor-shift is a bijection of x for a fixed word w, so
 * two arrays that differ in a single value always hash differently. Words are formed from the
 * values' bits in a fixed order, so the hash does not depend on the host's byte order. */
static uint64_t graph_blob_content_hash(const float *v, int64_t n) {
    uint64_t h = graph_impl_mix64((uint64_t)n ^ UINT64_C(0x6a09e667f3bcc909));
    int64_t i = 0;
    for (; i + 1 < n; i += 2) {
        uint32_t a, b;
        memcpy(&a, &v[i], 4);
        memcpy(&b, &v[i + 1], 4);
        h = (h ^ ((uint64_t)a | (uint64_t)b << 32)) * UINT64_C(0x9FB21C651E98DF25);
        h ^= h >> 29;
    }
    if (i < n) {
        uint32_t a;
        memcpy(&a, &v[i], 4);
        h = (h ^ (uint64_t)a) * UINT64_C(0x9FB21C651E98DF25);
        h ^= h >> 29;
    }
    return graph_impl_mix64(h);
}

graph_blob *graph_blob_new(const float *values, int64_t numel) {
    if (numel < 0 || (uint64_t)numel > (SIZE_MAX - sizeof(graph_blob)) / sizeof(float) ||
        (numel > 0 && !values))
        return NULL;
    graph_blob *b = malloc(sizeof *b + (size_t)numel * sizeof(float));
    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    b->numel = numel;
    if (numel > 0)
        memcpy(b->data, values, (size_t)numel * sizeof(float));
    b->hash = graph_blob_content_hash(b->data, numel);
    return b;
}

graph_blob *graph_blob_ref(graph_blob *b) {
    if (b)
        atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}

void graph_blob_unref(graph_blob *b) {
    if (!b)
        return;
    long long was = atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel);
    if (was <= 0) { /* a bug in our code: more unrefs than refs */
        base_die("graph_blob released too often");
    }
    if (was == 1)
        free(b);
}

int64_t graph_blob_numel(const graph_blob *b) { return b ? b->numel : -1; }

const float *graph_blob_data(const graph_blob *b) { return b ? b->data : NULL; }

uint64_t graph_blob_hash(const graph_blob *b) { return b ? b->hash : 0; }

int64_t graph_blob_refs(const graph_blob *b) {
    return b ? (int64_t)atomic_load_explicit(&((graph_blob *)b)->refs, memory_order_relaxed) : 0;
}

int graph_path_resolve(const char *base_dir, int allow_outside, const char *path, char **out, char *err,
                       size_t errlen) {
    *out = NULL;
    if (!path || !path[0]) {
        base_fail_line(err, errlen, "an empty file path");
        return -1;
    }
    int has_dir = base_dir && base_dir[0];
    char *joined;
    if (path[0] != '/' && has_dir) {
        size_t n = strlen(base_dir) + strlen(path) + 2;
        joined = base_xmalloc(n);
        snprintf(joined, n, "%s/%s", base_dir, path);
    } else {
        joined = base_xstrdup(path);
    }
    if (allow_outside || !has_dir) {
        *out = joined;
        return 0;
    }
    /* "..", absolute paths and symbolic links anywhere on the way all resolve: the file itself must
     * lie inside the folder. A file that does not exist is left to the caller's open, which reports
     * it (and the check runs again whenever the values are read). */
    char *rdir = realpath(base_dir, NULL), *rfile = rdir ? realpath(joined, NULL) : NULL;
    int inside = 1;
    if (rfile) {
        size_t n = strlen(rdir);
        /* the folder itself counts as inside: opening it reports a directory */
        inside = !strcmp(rdir, "/") || (!strncmp(rfile, rdir, n) && (rfile[n] == '/' || !rfile[n]));
        if (!inside)
            base_fail_line(err, errlen, "file '%s' resolves to '%s', outside the model's folder '%s': a model may "
                           "only name files inside its folder (--allow-outside-paths allows others)", path, rfile, rdir);
    }
    free(rdir);
    free(rfile);
    if (!inside) {
        free(joined);
        return -1;
    }
    *out = joined;
    return 0;
}

/* Read numel little-endian float32 values at offset of the weight's file into dst. */
static int graph_read_weight_file(const graph *g, const graph_tensor *ts, int64_t numel, float *dst,
                                  char *err, size_t errlen) {
    char *full = NULL, why[GRAPH_ERR_LEN];
    if (graph_path_resolve(g->base_dir, g->allow_outside_paths, ts->init.path, &full, why, sizeof why) < 0) {
        base_fail_line(err, errlen, "weight '%s': %s", ts->name, why);
        return -1;
    }
    const char *path = full;
    int rc = -1;
    FILE *f = fopen(path, "rb");
    if (!f) {
        base_fail_line(err, errlen, "weight '%s': file '%s': %s", ts->name, path, strerror(errno));
        free(full);
        return -1;
    }
    struct stat st;
    memset(&st, 0, sizeof st);
    if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
        base_fail_line(err, errlen, "weight '%s': file '%s': %s", ts->name, path,
                       S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        goto done;
    }
    int64_t off = ts->init.offset;
    if (numel > (INT64_MAX - off) / 4) {
        base_fail_line(err, errlen, "weight '%s': file '%s': offset %lld + %lld float32 values overflows",
                       ts->name, path, (long long)off, (long long)numel);
        goto done;
    }
    int64_t need = off + 4 * numel;
    if ((int64_t)st.st_size < need) {
        base_fail_line(err, errlen,
                       "weight '%s': file '%s' has %lld bytes, needs %lld (offset %lld + %lld float32 values)",
                       ts->name, path, (long long)st.st_size, (long long)need, (long long)off, (long long)numel);
        goto done;
    }
    if (fseeko(f, (off_t)off, SEEK_SET) != 0) {
        base_fail_line(err, errlen, "weight '%s': file '%s': cannot seek to %lld: %s", ts->name, path,
                       (long long)off, strerror(errno));
        goto done;
    }
    if (numel > 0 && fread(dst, 4, (size_t)numel, f) != (size_t)numel) {
        base_fail_line(err, errlen, "weight '%s': file '%s': read failed%s%s", ts->name, path,
                       ferror(f) ? ": " : " (short file)", ferror(f) ? strerror(errno) : "");
        goto done;
    }
    {
        const uint16_t probe = 1;
        uint8_t first;
        memcpy(&first, &probe, 1);
        if (!first) { /* big-endian host: the file is little-endian */
            uint8_t *b = (uint8_t *)dst;
            for (int64_t i = 0; i < numel; i++, b += 4) {
                uint8_t t0 = b[0], t1 = b[1];
                b[0] = b[3];
                b[1] = b[2];
                b[2] = t1;
                b[3] = t0;
            }
        }
    }
    rc = 0;
done:
    fclose(f);
    free(full);
    return rc;
}

int graph_weight_values(const graph *g, int32_t t, float *dst, char *err, size_t errlen) {
    if (t < 0 || t >= g->n_tensors || g->tensors[t].kind != GRAPH_T_WEIGHT) {
        base_fail_line(err, errlen, "tensor id %d is not a weight", (int)t);
        return -1;
    }
    const graph_tensor *ts = &g->tensors[t];
    int64_t n = ops_shape_numel(&ts->shape);
    if (n < 0) {
        base_fail_line(err, errlen, "weight '%s': element count overflows", ts->name);
        return -1;
    }
    switch (ts->init.kind) {
    case GRAPH_INIT_RANDOM:
        graph_fill_normal(dst, n, ts->init.seed, ts->init.mean, ts->init.std);
        return 0;
    case GRAPH_INIT_CONSTANT:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ts->init.value;
        return 0;
    case GRAPH_INIT_FILE:
        if (!ts->init.path || !ts->init.path[0]) {
            base_fail_line(err, errlen, "weight '%s': file init without a path", ts->name);
            return -1;
        }
        return graph_read_weight_file(g, ts, n, dst, err, errlen);
    case GRAPH_INIT_DATA:
        if (!ts->init.blob || ts->init.blob->numel != n) {
            base_fail_line(err, errlen, "weight '%s': data init holds %lld values, the shape needs %lld", ts->name,
                           (long long)(ts->init.blob ? ts->init.blob->numel : 0), (long long)n);
            return -1;
        }
        if (n > 0)
            memcpy(dst, ts->init.blob->data, (size_t)n * sizeof *dst);
        return 0;
    case GRAPH_INIT_COUNT:
        break;
    }
    base_fail_line(err, errlen, "weight '%s': init kind %d is not a known kind", ts->name, (int)ts->init.kind);
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * accounting
 */
void graph_get_stats(const graph *g, graph_stats *st) {
    memset(st, 0, sizeof *st);
    st->n_nodes = g->n_nodes;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        const graph_node *nd = &g->nodes[n];
        if ((int)nd->op < 0 || nd->op >= OP_COUNT)
            continue;
        st->op_count[nd->op]++;
        if (!ops_table[nd->op].flops)
            continue;
        ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
        for (int32_t k = 0; k < nd->n_in; k++)
            in_sh[k] = g->tensors[nd->in[k]].shape;
        for (int32_t k = 0; k < nd->n_out; k++)
            out_sh[k] = g->tensors[nd->out[k]].shape;
        ops_sig s = {nd->op, &nd->p, nd->n_in, nd->n_out, in_sh, out_sh};
        st->flops += ops_table[nd->op].flops(&s);
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int64_t n = ops_shape_numel(&g->tensors[t].shape);
        if (n < 0)
            continue;
        if (g->tensors[t].kind == GRAPH_T_WEIGHT)
            st->param_bytes += 4 * n;
        else if (g->tensors[t].kind == GRAPH_T_INTER)
            st->act_bytes += 4 * n;
    }
}

double graph_node_macs(const graph *g, const graph_node *nd) {
    const ops_shape *out = &g->tensors[nd->out[0]].shape;
    if (nd->op == OP_CONV2D) {
        const ops_shape *w = &g->tensors[nd->in[1]].shape; /* (F, C/g, KH, KW) */
        return (double)ops_shape_numel(out) * (double)(w->dims[1] * w->dims[2] * w->dims[3]);
    }
    if (nd->op == OP_MATMUL) {
        const ops_shape *a = &g->tensors[nd->in[0]].shape; /* (..., m, k) */
        return (double)ops_shape_numel(out) * (double)a->dims[a->rank - 1];
    }
    return 0.0;
}
