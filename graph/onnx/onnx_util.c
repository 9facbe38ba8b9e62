/* onnx_util.c: the ONNX importer's shared toolkit, used by the driver (onnx_import.c), the
 * constants (onnx_const.c) and the converters (onnx_ops.c): messages into the context, tensor
 * and node names, the value table, weights from constants, op-table nodes with their renamed
 * outputs, and attribute access. Declarations and the ownership rules are in onnx_impl.h.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* ---------------------------------------------------------------------------------------------
 * messages
 */
int ox_fail(ox_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail_line(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return OX_ERR;
}

int ox_unsup(ox_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail_line(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    return OX_UNSUP;
}

/* ---------------------------------------------------------------------------------------------
 * names
 */
static int ox_name_used(ox_ctx *c, const char *name) {
    ox_name *e = NULL;
    HASH_FIND_STR(c->names, name, e);
    return e != NULL;
}

void ox_name_add(ox_ctx *c, const char *name) {
    if (ox_name_used(c, name))
        return;
    ox_name *e = base_xcalloc(1, sizeof *e);
    e->name = base_xstrdup(name);
    HASH_ADD_KEYPTR(hh, c->names, e->name, strlen(e->name), e);
}

/* A fresh name "<base>/<what>" or "<base>/<what>_<k>", registered; returns the stored copy. */
const char *ox_fresh_name(ox_ctx *c, const char *base, const char *what) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", base, what);
    for (int32_t k = 1; ox_name_used(c, buf); k++) /* the set holds every tensor name of the graph */
        snprintf(buf, sizeof buf, "%s/%s_%d", base, what, (int)k);
    ox_name_add(c, buf);
    ox_name *e = NULL;
    HASH_FIND_STR(c->names, buf, e);
    return e->name;
}

/* ---------------------------------------------------------------------------------------------
 * the value table
 */
ox_val *ox_find(ox_ctx *c, const char *name) {
    ox_val *v = NULL;
    HASH_FIND_STR(c->vals, name, v);
    return v;
}

ox_val *ox_in(ox_ctx *c, int i) {
    const Onnx__NodeProto *n = c->node;
    if (i < 0 || (size_t)i >= n->n_input || !n->input[i] || !n->input[i][0])
        return NULL;
    ox_val *v = ox_find(c, n->input[i]); /* existence was checked before the converter ran */
    return v && v->alias_of ? v->alias_of : v;
}

ox_val *ox_val_new(ox_ctx *c, const char *name) {
    ox_val *v = base_xcalloc(1, sizeof *v);
    v->name = base_xstrdup(name);
    v->t = -1;
    HASH_ADD_KEYPTR(hh, c->vals, v->name, strlen(v->name), v);
    return v;
}

/* The output slot i of the current node, or NULL if the node does not name it. */
static const char *ox_out_name(ox_ctx *c, int i) {
    const Onnx__NodeProto *n = c->node;
    if (i < 0 || (size_t)i >= n->n_output || !n->output[i] || !n->output[i][0])
        return NULL;
    return n->output[i];
}

/* Compare a produced shape with the one the model records, if any. */
static int ox_check_recorded(ox_ctx *c, const char *name, const ops_shape *s) {
    const ops_shape *r = ox_recorded_shape(c, name);
    if (!r || ops_shape_eq(r, s))
        return OX_OK;
    char a[128], b[128];
    return ox_fail(c, "value '%s': computed shape %s but the model records %s", name,
                   ops_shape_str(s, a, sizeof a), ops_shape_str(r, b, sizeof b));
}

int ox_set_runtime(ox_ctx *c, int i, int32_t t, int is_int) {
    const char *name = ox_out_name(c, i);
    if (!name)
        return OX_OK;
    if (ox_find(c, name))
        return ox_fail(c, "value '%s' is produced twice", name);
    ox_val *v = ox_val_new(c, name);
    v->state = OX_V_RUNTIME;
    v->t = t;
    v->is_int = is_int;
    return ox_check_recorded(c, name, &c->g->tensors[t].shape);
}

int ox_set_const(ox_ctx *c, int i, ox_const *k) {
    const char *name = ox_out_name(c, i);
    if (!name) {
        ox_const_free(k);
        return OX_OK;
    }
    if (ox_find(c, name)) {
        ox_const_free(k);
        return ox_fail(c, "value '%s' is produced twice", name);
    }
    ox_val *v = ox_val_new(c, name);
    v->state = OX_V_CONST;
    v->c = *k;
    memset(k, 0, sizeof *k);
    return ox_check_recorded(c, name, &v->c.shape);
}

static ox_val *ox_alias_val(ox_ctx *c, const char *name, const ox_val *src) {
    ox_val *v = ox_val_new(c, name);
    v->state = src->state;
    v->t = src->t;
    v->is_int = src->is_int;
    v->has_pad = src->has_pad;
    memcpy(v->pad, src->pad, sizeof v->pad);
    v->pad_node = src->pad_node ? base_xstrdup(src->pad_node) : NULL;
    return v;
}

int ox_set_alias(ox_ctx *c, int i, const ox_val *src) {
    const char *name = ox_out_name(c, i);
    if (!name)
        return OX_OK;
    if (ox_find(c, name))
        return ox_fail(c, "value '%s' is produced twice", name);
    if (src->state == OX_V_CONST) { /* one constant under two names: one weight */
        ox_val *v = ox_val_new(c, name);
        v->state = OX_V_CONST;
        v->alias_of = src->alias_of ? src->alias_of : (ox_val *)src;
        v->c.shape = src->c.shape;
        return ox_check_recorded(c, name, &v->c.shape);
    }
    ox_val *v = ox_alias_val(c, name, src);
    if (v->has_pad) /* the model records the padded shape, which only the Conv will produce */
        return OX_OK;
    return ox_check_recorded(c, name, ox_shape(c, v));
}

int ox_set_padded(ox_ctx *c, int i, const ox_val *src, const int64_t pad[4]) {
    const char *name = ox_out_name(c, i);
    if (!name)
        return OX_OK;
    if (ox_find(c, name))
        return ox_fail(c, "value '%s' is produced twice", name);
    ox_val *v = ox_alias_val(c, name, src);
    v->has_pad = 1;
    for (int k = 0; k < 4; k++)
        if (pad[k] > OX_MAX_WINDOW || (v->pad[k] += pad[k]) > OX_MAX_WINDOW)
            return ox_fail(c, "a padding of more than %lld", (long long)OX_MAX_WINDOW);
    free(v->pad_node);
    v->pad_node = base_xstrdup(c->node_name);
    return OX_OK;
}

int ox_out_used(ox_ctx *c, int i) {
    const char *name = ox_out_name(c, i);
    if (!name)
        return 0;
    ox_use *u = NULL;
    HASH_FIND_STR(c->uses, name, u);
    return u && u->n > 0;
}

const ops_shape *ox_shape(ox_ctx *c, const ox_val *v) {
    if (v->state == OX_V_CONST)
        return &v->c.shape;
    return &c->g->tensors[v->t].shape;
}

const ops_shape *ox_recorded_shape(ox_ctx *c, const char *name) {
    ox_shape_info *e = NULL;
    if (!name) /* a value without a name (a malformed file): HASH_FIND_STR would strlen(NULL) */
        return NULL;
    HASH_FIND_STR(c->shapes, name, e);
    return e ? &e->shape : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * weights
 */
int32_t ox_weight_from(ox_ctx *c, const char *base, ox_const *k) {
    const char *name = base;
    if (graph_find_tensor(c->g, base) >= 0)
        name = ox_fresh_name(c, base, "weight");
    else
        ox_name_add(c, base);
    int64_t n = ox_numel(&k->shape);
    if (n <= 0) {
        char b[160];
        return ox_fail(c, "constant '%s' of shape %s is empty and cannot be a weight", base,
                       ops_shape_str(&k->shape, b, sizeof b)), -1;
    }
    graph_init init;
    memset(&init, 0, sizeof init);
    graph_blob *blob = NULL;
    if (!k->is_int && !k->f && k->src == OX_SRC_EXT) {
        init.kind = GRAPH_INIT_FILE;
        init.path = k->ext_path;
        init.offset = k->ext_offset;
    } else if (!k->is_int && !k->f && k->src == OX_SRC_RANDOM) {
        init.kind = GRAPH_INIT_RANDOM;
        init.seed = k->seed;
        init.mean = 0.0f;
        init.std = k->std;
    } else {
        float *f = NULL;
        if (ox_const_floats(c, k, &f) != OX_OK)
            return -1;
        if (k->is_int)
            for (int64_t j = 0; j < n; j++)
                if (k->i[j] > OX_MAX_EXACT || k->i[j] < -OX_MAX_EXACT) {
                    free(f);
                    return ox_fail(c, "integer constant '%s' holds %lld, beyond the exact float range 2^24",
                                   base, (long long)k->i[j]), -1;
                }
        int same = isfinite(f[0]);
        for (int64_t j = 1; j < n && same; j++)
            same = memcmp(&f[j], &f[0], sizeof *f) == 0;
        if (same) {
            init.kind = GRAPH_INIT_CONSTANT;
            init.value = f[0];
        } else {
            blob = graph_blob_new(f, n);
            if (!blob) {
                free(f);
                return ox_fail(c, "cannot hold the %lld values of '%s' in memory", (long long)n, base), -1;
            }
            init.kind = GRAPH_INIT_DATA;
            init.blob = blob;
        }
        free(f);
    }
    int32_t t = graph_weight(c->g, name, k->shape.rank, k->shape.dims, init);
    graph_blob_unref(blob); /* the graph holds its own reference */
    if (t < 0)
        return ox_fail(c, "%s", graph_error(c->g)), -1;
    return t;
}

int32_t ox_tensor(ox_ctx *c, ox_val *v) {
    if (v->state == OX_V_RUNTIME)
        return v->t;
    if (v->t >= 0)
        return v->t;
    v->t = ox_weight_from(c, v->name, &v->c);
    return v->t;
}

/* ---------------------------------------------------------------------------------------------
 * nodes
 */
/* A node name based on the current ONNX node's that is free for the node and for its default
 * output names (graph_add names the outputs "<node>" / "<node>:<i>" before we rename them). */
static const char *ox_node_name(ox_ctx *c, int32_t n_out, char *buf, size_t len) {
    for (int32_t k = 0;; k++) {
        if (k == 0)
            snprintf(buf, len, "%s", c->node_name);
        else
            snprintf(buf, len, "%s/tasc_%d", c->node_name, (int)k);
        ox_name *e = NULL;
        HASH_FIND_STR(c->node_names, buf, e);
        int free_name = !e && graph_find_tensor(c->g, buf) < 0;
        for (int32_t i = 0; i < n_out && free_name; i++) {
            char ob[1100];
            snprintf(ob, sizeof ob, "%s:%d", buf, (int)i);
            free_name = graph_find_tensor(c->g, ob) < 0;
        }
        if (free_name) {
            e = base_xcalloc(1, sizeof *e);
            e->name = base_xstrdup(buf);
            HASH_ADD_KEYPTR(hh, c->node_names, e->name, strlen(e->name), e);
            return buf;
        }
    }
}

void ox_rename_tensor(ox_ctx *c, int32_t t, const char *name) {
    graph_rename_tensor(c->g, t, name); /* a failure stays in the graph's sticky error */
    ox_name_add(c, name);
}

int ox_node(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in,
            const char *const *names, int32_t *out) {
    ops_params q;
    if (!p) {
        ops_params_default(op, &q);
        p = &q;
    }
    char m[GRAPH_ERR_LEN];
    if (ops_params_check(op, p, m, sizeof m) < 0)
        return ox_unsup(c, "%s", m);
    for (int32_t k = 0; k < n_in; k++)
        if (in[k] < 0)
            return OX_ERR; /* the failed weight already set c->err */
    /* infer first, so that an inconsistent model is reported without poisoning the graph */
    ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
    int32_t n_out = 0;
    if (n_in > OPS_MAX_INPUTS)
        return ox_unsup(c, "%d inputs (at most %d)", (int)n_in, OPS_MAX_INPUTS);
    for (int32_t k = 0; k < n_in; k++)
        in_sh[k] = c->g->tensors[in[k]].shape;
    if (ops_infer(op, p, n_in, in_sh, &n_out, out_sh, m, sizeof m) < 0)
        return ox_fail(c, "%s: %s", ops_table[op].name, m);
    char nb[1024];
    const char *nn = ox_node_name(c, n_out, nb, sizeof nb);
    int32_t got = graph_add(c->g, nn, op, p, n_in, in, out);
    if (got < 0)
        return ox_fail(c, "%s", graph_error(c->g));
    for (int32_t i = 0; i < got; i++) {
        const char *want = names && names[i] ? names[i] : ox_fresh_name(c, c->node_name, ops_table[op].name);
        ox_rename_tensor(c, out[i], want);
    }
    return OX_OK;
}

int ox_helper(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in, int32_t *out) {
    int32_t outs[OPS_MAX_OUTPUTS];
    int rc = ox_node(c, op, p, n_in, in, NULL, outs);
    if (rc == OX_OK)
        *out = outs[0];
    return rc;
}

int ox_reshape(ox_ctx *c, int32_t t, const ops_shape *s, const char *name, int32_t *out) {
    if (s->rank > OPS_MAX_LIST)
        return ox_unsup(c, "a reshape to rank %d (at most %d)", (int)s->rank, OPS_MAX_LIST);
    ops_params p;
    ops_params_default(OP_RESHAPE, &p);
    p.n_list = s->rank;
    for (int32_t d = 0; d < s->rank; d++)
        p.list[d] = s->dims[d];
    const char *names[1] = {name};
    int32_t outs[OPS_MAX_OUTPUTS];
    int rc = ox_node(c, OP_RESHAPE, &p, 1, &t, names, outs);
    if (rc == OX_OK)
        *out = outs[0];
    return rc;
}

int ox_transpose(ox_ctx *c, int32_t t, int32_t rank, const int64_t *perm, const char *name, int32_t *out) {
    ops_params p;
    ops_params_default(OP_TRANSPOSE, &p);
    if (rank > OPS_MAX_LIST)
        return ox_unsup(c, "a transpose of rank %d (at most %d)", (int)rank, OPS_MAX_LIST);
    p.n_list = rank;
    for (int32_t d = 0; d < rank; d++)
        p.list[d] = perm[d];
    const char *names[1] = {name};
    int32_t outs[OPS_MAX_OUTPUTS];
    int rc = ox_node(c, OP_TRANSPOSE, &p, 1, &t, names, outs);
    if (rc == OX_OK)
        *out = outs[0];
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * attributes
 */
const Onnx__AttributeProto *ox_attr(ox_ctx *c, const char *name) {
    const Onnx__NodeProto *n = c->node;
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

/* The attribute's type, also for writers that leave the type field out. */
static int ox_attr_type(const Onnx__AttributeProto *a) {
    if (a->has_type)
        return a->type;
    if (a->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->t)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_i)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

int ox_attr_int(ox_ctx *c, const char *name, int64_t def, int64_t *v) {
    const Onnx__AttributeProto *a = ox_attr(c, name);
    *v = def;
    if (!a)
        return OX_OK;
    if (ox_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return ox_fail(c, "attribute '%s' should be an integer", name);
    *v = a->i;
    return OX_OK;
}

int ox_attr_float(ox_ctx *c, const char *name, float def, float *v) {
    const Onnx__AttributeProto *a = ox_attr(c, name);
    *v = def;
    if (!a)
        return OX_OK;
    if (ox_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return ox_fail(c, "attribute '%s' should be a float", name);
    *v = a->f;
    return OX_OK;
}

int ox_attr_str(ox_ctx *c, const char *name, const char *def, char *buf, size_t len) {
    const Onnx__AttributeProto *a = ox_attr(c, name);
    snprintf(buf, len, "%s", def);
    if (!a)
        return OX_OK;
    if (ox_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return ox_fail(c, "attribute '%s' should be a string", name);
    size_t n = a->s.len < len - 1 ? a->s.len : len - 1;
    if (n) /* an empty string attribute has no data pointer: memcpy's source must not be NULL */
        memcpy(buf, a->s.data, n);
    buf[n] = '\0';
    for (size_t k = 0; k < n; k++)
        if ((unsigned char)buf[k] < 0x20)
            buf[k] = '?';
    return OX_OK;
}

int ox_attr_ints(ox_ctx *c, const char *name, int64_t *v, int32_t max, int32_t *n) {
    const Onnx__AttributeProto *a = ox_attr(c, name);
    *n = -1;
    if (!a)
        return OX_OK;
    if (ox_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return ox_fail(c, "attribute '%s' should be a list of integers", name);
    if (a->n_ints > (size_t)max)
        return ox_unsup(c, "attribute '%s' has %zu values (at most %d)", name, a->n_ints, (int)max);
    for (size_t k = 0; k < a->n_ints; k++)
        v[k] = a->ints[k];
    *n = (int32_t)a->n_ints;
    return OX_OK;
}

