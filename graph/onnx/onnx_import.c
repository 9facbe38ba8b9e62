/* onnx_import.c: the ONNX importer's driver: reading and unpacking the model, opset and input
 * checks, initializers, the stable topological walk over the nodes with one converter per op type
 * (onnx_ops.c), the one-line report of every unsupported operator, and graph outputs. The value
 * table, the weights (FILE for external data, DATA blobs for values held in the model) and the
 * other helpers the converters share are in onnx_util.c.
 *
 * Invariant: the graph only ever receives nodes whose parameters the op table accepts, so the
 * graph's sticky error is set only by a genuinely inconsistent model (reported as such). Every
 * value a converter produces is checked against the static shape the model records, when it does.
 * Values held in the model become DATA weights: the blob is created here and the graph takes its
 * own reference, so this file drops its reference at once.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_impl.h"
#include "onnx_init.h"

/* ---------------------------------------------------------------------------------------------
 * the model
 */
static const char *ox_dtype_name(int32_t t) {
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return "float";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return "uint8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return "int8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return "uint16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return "int16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return "int32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return "int64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: return "string";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return "bool";
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return "float16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return "double";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return "uint32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return "uint64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return "bfloat16";
    default: return "an unknown type";
    }
}

/* A static shape from a TypeProto; 0 if it has none (or a symbolic dim that opts do not bind). */
static int ox_type_shape(const ox_ctx *c, const Onnx__TypeProto *tp, ops_shape *s, const char **sym) {
    *sym = NULL;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        !tp->tensor_type->shape)
        return 0;
    const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
    if (sp->n_dim > OPS_MAX_DIMS)
        return 0;
    memset(s, 0, sizeof *s);
    s->rank = (int32_t)sp->n_dim;
    for (size_t d = 0; d < sp->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value >= 0) {
            s->dims[d] = dm->dim_value;
            continue;
        }
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param) {
            int found = 0;
            for (int32_t k = 0; k < c->o.n_dims; k++)
                if (c->o.dim_names[k] && !strcmp(c->o.dim_names[k], dm->dim_param)) {
                    s->dims[d] = c->o.dim_values[k];
                    found = 1;
                }
            if (found)
                continue;
            *sym = dm->dim_param;
        }
        return 0;
    }
    return 1;
}

static void ox_record_shape(ox_ctx *c, const Onnx__ValueInfoProto *vi) {
    ops_shape s;
    const char *sym;
    if (!vi->name || !ox_type_shape(c, vi->type, &s, &sym))
        return;
    ox_shape_info *e = NULL;
    HASH_FIND_STR(c->shapes, vi->name, e);
    if (e)
        return;
    e = base_xcalloc(1, sizeof *e);
    e->name = base_xstrdup(vi->name);
    e->shape = s;
    HASH_ADD_KEYPTR(hh, c->shapes, e->name, strlen(e->name), e);
}

static void ox_record_unsup(ox_ctx *c, const char *op_type, const char *node, const char *reason) {
    for (int32_t k = 0; k < c->n_unsup; k++)
        if (!strcmp(c->unsup[k].op_type, op_type)) {
            c->unsup[k].count++;
            return;
        }
    if (c->n_unsup == c->cap_unsup) {
        c->cap_unsup = c->cap_unsup ? 2 * c->cap_unsup : 8;
        c->unsup = base_xrealloc(c->unsup, (size_t)c->cap_unsup * sizeof *c->unsup);
    }
    ox_unsup_rec *u = &c->unsup[c->n_unsup++];
    u->op_type = base_xstrdup(op_type);
    u->count = 1;
    u->first = base_xstrdup(node);
    u->reason = reason && reason[0] ? base_xstrdup(reason) : NULL;
}

/* List the Pad node behind a padded value as unsupported (why: the pad node's refusal), once per
 * Pad node. */
static void ox_report_pad(ox_ctx *c, const ox_val *v, const char *why) {
    const char *pn = v->pad_node ? v->pad_node : "";
    ox_name *e = NULL;
    HASH_FIND_STR(c->reported_pads, pn, e);
    if (e)
        return;
    e = base_xcalloc(1, sizeof *e);
    e->name = base_xstrdup(pn);
    HASH_ADD_KEYPTR(hh, c->reported_pads, e->name, strlen(e->name), e);
    ox_record_unsup(c, "Pad", pn, why);
}

/* Apply the zero padding pending on v (a folded Pad read by something other than a Conv's input 0,
 * or a graph output) as a pad node named after the Pad node; v becomes that node's output. Returns
 * OX_OK, or a code with c->err / c->reason set (the pad node's shape check). */
static int ox_apply_pad(ox_ctx *c, ox_val *v) {
    const ops_shape *xs = &c->g->tensors[v->t].shape;
    ops_params p;
    ops_params_default(OP_PAD, &p);
    p.n_list = 8;
    const int64_t list[8] = {0, 0, v->pad[0], v->pad[1], 0, 0, v->pad[2], v->pad[3]}; /* t, l, b, r */
    memcpy(p.list, list, sizeof list);
    if (xs->rank != 4)
        return ox_fail(c, "the padded value '%s' has rank %d, expected 4", v->name, (int)xs->rank);
    const char *saved = c->node_name;
    c->node_name = v->pad_node ? v->pad_node : v->name;
    const char *names[1] = {v->name};
    int32_t out[OPS_MAX_OUTPUTS], in = v->t;
    int rc = ox_node(c, OP_PAD, &p, 1, &in, names, out);
    c->node_name = saved;
    if (rc != OX_OK)
        return rc;
    v->t = out[0];
    v->has_pad = 0;
    memset(v->pad, 0, sizeof v->pad);
    return OX_OK;
}

/* ox_apply_pad for a walk: 0 applied; 1 refused (listed as an unsupported Pad); -1 with err set. */
static int ox_pad_pending(ox_ctx *c, ox_val *v, char *err, size_t errlen) {
    c->reason[0] = c->err[0] = '\0';
    int pr = ox_apply_pad(c, v);
    if (pr == OX_UNSUP) {
        ox_report_pad(c, v, c->reason);
        return 1;
    }
    if (pr != OX_OK) {
        base_fail_line(err, errlen, "%s: node '%s' (Pad): %s", c->where, v->pad_node ? v->pad_node : "?",
                       c->err[0] ? c->err : "conversion failed");
        return -1;
    }
    return 0;
}

static void ox_poison_outputs(ox_ctx *c, const Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_output; i++)
        if (n->output[i] && n->output[i][0] && !ox_find(c, n->output[i]))
            ox_val_new(c, n->output[i])->state = OX_V_POISON;
}

/* Is name a comma-separated member of list? */
static int ox_in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t m = e ? (size_t)(e - p) : strlen(p);
        if (m == n && !strncmp(p, name, n))
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static void ox_ctx_free(ox_ctx *c) {
    ox_val *v, *vt;
    HASH_ITER(hh, c->vals, v, vt) {
        HASH_DEL(c->vals, v);
        ox_const_free(&v->c);
        free(v->pad_node);
        free(v->name);
        free(v);
    }
    ox_name *e, *et;
    HASH_ITER(hh, c->names, e, et) {
        HASH_DEL(c->names, e);
        free(e->name);
        free(e);
    }
    HASH_ITER(hh, c->node_names, e, et) {
        HASH_DEL(c->node_names, e);
        free(e->name);
        free(e);
    }
    HASH_ITER(hh, c->reported_pads, e, et) {
        HASH_DEL(c->reported_pads, e);
        free(e->name);
        free(e);
    }
    ox_use *u, *ut;
    HASH_ITER(hh, c->uses, u, ut) {
        HASH_DEL(c->uses, u);
        free(u);
    }
    ox_shape_info *s, *st;
    HASH_ITER(hh, c->shapes, s, st) {
        HASH_DEL(c->shapes, s);
        free(s->name);
        free(s);
    }
    for (int32_t k = 0; k < c->n_unsup; k++) {
        free(c->unsup[k].op_type);
        free(c->unsup[k].first);
        free(c->unsup[k].reason);
    }
    free(c->unsup);
}

/* Stable topological order of the nodes (lowest index first among ready nodes), so that models
 * whose nodes are not sorted still import. Returns the number ordered (< n: a cycle or a value
 * nobody produces). */
typedef struct ox_prod {
    const char *name;
    int32_t node;
    UT_hash_handle hh;
} ox_prod;

static int32_t ox_topo(const Onnx__GraphProto *gp, int32_t *order) {
    int32_t n = (int32_t)gp->n_node;
    size_t n_outs = 0;
    for (int32_t k = 0; k < n; k++)
        n_outs += gp->node[k]->n_output;
    ox_prod *prods = NULL;
    ox_prod *pool = base_xcalloc(n_outs + 1, sizeof *pool);
    size_t np = 0;
    for (int32_t k = 0; k < n; k++)
        for (size_t i = 0; i < gp->node[k]->n_output; i++) {
            const char *o = gp->node[k]->output[i];
            if (!o || !o[0])
                continue;
            ox_prod *e = NULL;
            HASH_FIND_STR(prods, o, e);
            if (e)
                continue; /* produced twice: reported when the second producer is converted */
            e = &pool[np++];
            e->name = o;
            e->node = k;
            HASH_ADD_KEYPTR(hh, prods, e->name, strlen(e->name), e);
        }
    /* in-degree over distinct producing predecessors; successor lists in CSR form */
    int32_t *indeg = base_xcalloc((size_t)n + 1, sizeof *indeg);
    int32_t *cnt = base_xcalloc((size_t)n + 1, sizeof *cnt);
    size_t n_edges = 0;
    for (int32_t k = 0; k < n; k++)
        n_edges += gp->node[k]->n_input;
    int32_t *esrc = base_xcalloc(n_edges + 1, sizeof *esrc), *edst = base_xcalloc(n_edges + 1, sizeof *edst);
    size_t ne = 0;
    for (int32_t k = 0; k < n; k++)
        for (size_t i = 0; i < gp->node[k]->n_input; i++) {
            const char *in = gp->node[k]->input[i];
            if (!in || !in[0])
                continue;
            ox_prod *e = NULL;
            HASH_FIND_STR(prods, in, e);
            if (!e)
                continue; /* an input, an initializer, or undefined (reported later) */
            esrc[ne] = e->node;
            edst[ne] = k;
            ne++;
            indeg[k]++;
            cnt[e->node]++;
        }
    int32_t *start = base_xcalloc((size_t)n + 2, sizeof *start);
    for (int32_t k = 0; k < n; k++)
        start[k + 1] = start[k] + cnt[k];
    int32_t *succ = base_xcalloc(ne + 1, sizeof *succ);
    int32_t *fill = base_xcalloc((size_t)n + 1, sizeof *fill);
    for (size_t e = 0; e < ne; e++)
        succ[start[esrc[e]] + fill[esrc[e]]++] = edst[e];
    /* ready set as a binary min-heap of node indices */
    int32_t *heap = base_xcalloc((size_t)n + 1, sizeof *heap);
    int32_t hn = 0, emitted = 0;
#define OX_HEAP_PUSH(x)                                                                           \
    do {                                                                                          \
        int32_t _i = hn++;                                                                        \
        heap[_i] = (x);                                                                           \
        while (_i > 0 && heap[(_i - 1) / 2] > heap[_i]) {                                         \
            int32_t _t = heap[_i]; heap[_i] = heap[(_i - 1) / 2]; heap[(_i - 1) / 2] = _t;         \
            _i = (_i - 1) / 2;                                                                    \
        }                                                                                         \
    } while (0)
    for (int32_t k = 0; k < n; k++)
        if (!indeg[k])
            OX_HEAP_PUSH(k);
    while (hn) {
        int32_t v = heap[0];
        heap[0] = heap[--hn];
        for (int32_t i = 0;;) {
            int32_t l = 2 * i + 1, r = l + 1, m = i;
            if (l < hn && heap[l] < heap[m])
                m = l;
            if (r < hn && heap[r] < heap[m])
                m = r;
            if (m == i)
                break;
            int32_t t = heap[i];
            heap[i] = heap[m];
            heap[m] = t;
            i = m;
        }
        order[emitted++] = v;
        for (int32_t s = start[v]; s < start[v + 1]; s++)
            if (--indeg[succ[s]] == 0)
                OX_HEAP_PUSH(succ[s]);
    }
#undef OX_HEAP_PUSH
    HASH_CLEAR(hh, prods);
    free(pool);
    free(indeg);
    free(cnt);
    free(esrc);
    free(edst);
    free(start);
    free(succ);
    free(fill);
    free(heap);
    return emitted;
}

static void ox_count_uses(ox_ctx *c, const Onnx__GraphProto *gp) {
    ox_use *u;
    for (size_t k = 0; k < gp->n_node + gp->n_output; k++) {
        size_t n_in = k < gp->n_node ? gp->node[k]->n_input : 1;
        for (size_t i = 0; i < n_in; i++) {
            char *name = k < gp->n_node ? gp->node[k]->input[i] : gp->output[k - gp->n_node]->name;
            if (!name || !name[0])
                continue;
            HASH_FIND_STR(c->uses, name, u);
            if (!u) {
                u = base_xcalloc(1, sizeof *u);
                u->name = name;
                HASH_ADD_KEYPTR(hh, c->uses, u->name, strlen(u->name), u);
            }
            u->n++;
        }
    }
}


/* The graph inputs (those that are not initializers). */
static int ox_inputs(ox_ctx *c, const Onnx__GraphProto *gp) {
    for (size_t k = 0; k < gp->n_input; k++) {
        const Onnx__ValueInfoProto *vi = gp->input[k];
        if (!vi->name || !vi->name[0])
            return ox_fail(c, "graph input %zu has no name", k);
        ox_val *have = ox_find(c, vi->name);
        if (have && have->state == OX_V_CONST)
            continue; /* an initializer listed as an input (IR < 4 style): a constant here */
        if (have)
            return ox_fail(c, "graph input '%s' is declared twice", vi->name);
        const Onnx__TypeProto *tp = vi->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
            return ox_fail(c, "graph input '%s' is not a tensor", vi->name);
        int32_t et = tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
        int is_int;
        if (et == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
            is_int = 0;
        else if (et == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || et == ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
            is_int = 1;
        else
            return ox_fail(c, "graph input '%s': element type %s is not supported (float, int64, int32)",
                           vi->name, ox_dtype_name(et));
        ops_shape s;
        const char *sym = NULL;
        if (!tp->tensor_type->shape)
            return ox_fail(c, "graph input '%s' has no shape (static shapes only)", vi->name);
        const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
        if (sp->n_dim > OPS_MAX_DIMS)
            return ox_fail(c, "graph input '%s' has rank %zu (at most %d)", vi->name, sp->n_dim, OPS_MAX_DIMS);
        for (size_t d = 0; d < sp->n_dim; d++)
            if (sp->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && sp->dim[d]->dim_value < 0)
                return ox_fail(c, "graph input '%s': dimension %zu is %lld (dims must be positive)", vi->name, d,
                               (long long)sp->dim[d]->dim_value);
        if (!ox_type_shape(c, tp, &s, &sym)) {
            if (sym)
                return ox_fail(c, "graph input '%s' has the symbolic dimension '%s': give it a value "
                                  "(--dim %s=N)", vi->name, sym, sym);
            return ox_fail(c, "graph input '%s' has a dimension without a value (static shapes only)",
                           vi->name);
        }
        for (int32_t d = 0; d < s.rank; d++)
            if (s.dims[d] <= 0)
                return ox_fail(c, "graph input '%s': dimension %d is %lld (dims must be positive)", vi->name,
                               (int)d, (long long)s.dims[d]);
        int32_t t = graph_input_typed(c->g, vi->name, is_int ? GRAPH_DT_I64 : GRAPH_DT_F32, s.rank, s.dims);
        if (t < 0)
            return ox_fail(c, "%s", graph_error(c->g));
        ox_val *v = ox_val_new(c, vi->name);
        v->state = OX_V_RUNTIME;
        v->t = t;
        v->is_int = is_int;
    }
    return OX_OK;
}

/* Make output t carry the ONNX output's name; a copy (reshape to the same shape) where t cannot
 * be renamed: a graph input, a weight, an earlier output. */
static int ox_output(ox_ctx *c, const char *name, uint8_t *renamed) {
    ox_val *v = ox_find(c, name);
    if (!v)
        return ox_fail(c, "graph output '%s' is not produced by any node, initializer or input", name);
    if (v->alias_of)
        v = v->alias_of;
    int32_t t;
    if (v->state == OX_V_CONST) {
        t = ox_tensor(c, v);
        if (t < 0)
            return OX_ERR;
    } else {
        t = v->t;
    }
    graph_tensor *ts = &c->g->tensors[t];
    int copy = ts->kind != GRAPH_T_INTER || renamed[t];
    if (!copy && strcmp(ts->name, name) != 0) {
        /* the name is free: aliases create no tensor, generated names avoid model names */
        ox_rename_tensor(c, t, name);
    }
    if (copy) {
        static const char out_node[] = "output";
        const char *saved = c->node_name;
        char nb[1100];
        snprintf(nb, sizeof nb, "%s/%s", name, out_node);
        c->node_name = nb;
        int32_t o;
        const ops_shape s = c->g->tensors[t].shape;
        /* the output name may be taken by the weight itself: give the weight another name */
        if (!strcmp(c->g->tensors[t].name, name))
            ox_rename_tensor(c, t, ox_fresh_name(c, name, "value"));
        int rc = ox_reshape(c, t, &s, name, &o);
        c->node_name = saved;
        if (rc != OX_OK)
            return rc == OX_UNSUP ? ox_fail(c, "graph output '%s': %s", name, c->reason) : rc;
        t = o;
    }
    renamed[t] = 1;
    if (graph_mark_output(c->g, t) < 0)
        return ox_fail(c, "%s", graph_error(c->g));
    return OX_OK;
}

static void ox_format_unsup(ox_ctx *c, char *err, size_t errlen) {
    size_t used = 0;
    int w = snprintf(err, errlen, "%s: unsupported operators: ", c->where);
    used = w > 0 ? (size_t)w : 0;
    for (int32_t k = 0; k < c->n_unsup && used < errlen; k++) {
        const ox_unsup_rec *u = &c->unsup[k];
        w = snprintf(err + used, errlen - used, "%s%s (x%d, first '%s'%s%s)", k ? ", " : "", u->op_type,
                     (int)u->count, u->first, u->reason ? ": " : "", u->reason ? u->reason : "");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* Walk the nodes; 0 when every node converted, -1 with err set otherwise. */
static int ox_walk(ox_ctx *c, const Onnx__GraphProto *gp, char *err, size_t errlen) {
    int32_t n = (int32_t)gp->n_node;
    int32_t *order = base_xcalloc((size_t)n + 1, sizeof *order);
    int32_t got = ox_topo(gp, order);
    if (got < n) {
        /* name a node that never became ready */
        uint8_t *done = base_xcalloc((size_t)n + 1, 1);
        for (int32_t k = 0; k < got; k++)
            done[order[k]] = 1;
        int32_t bad = 0;
        while (bad < n && done[bad])
            bad++;
        const Onnx__NodeProto *nd = gp->node[bad];
        base_fail_line(err, errlen, "%s: node '%s' (%s) is on a cycle of the graph", c->where,
                       nd->name && nd->name[0] ? nd->name : "", nd->op_type ? nd->op_type : "?");
        free(done);
        free(order);
        return -1;
    }
    int rc = 0;
    for (int32_t k = 0; k < n && rc == 0; k++) {
        const Onnx__NodeProto *nd = gp->node[order[k]];
        char display[1024];
        if (nd->name && nd->name[0])
            snprintf(display, sizeof display, "%s", nd->name);
        else
            snprintf(display, sizeof display, "%s_%d", nd->op_type ? nd->op_type : "node", (int)order[k]);
        for (char *p = display; *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = '?';
        c->node = nd;
        c->node_name = display;
        c->reason[0] = '\0';
        c->err[0] = '\0';
        const char *op_type = nd->op_type ? nd->op_type : "";
        const char *dom = nd->domain ? nd->domain : "";
        /* inputs must exist (poisoned ones included) */
        int poisoned = 0;
        for (size_t i = 0; i < nd->n_input && rc == 0; i++) {
            const char *in = nd->input[i];
            if (!in || !in[0])
                continue;
            ox_val *v = ox_find(c, in);
            if (!v) {
                base_fail_line(err, errlen, "%s: node '%s' (%s): input '%s' is not produced by any node, initializer "
                               "or graph input", c->where, display, op_type, in);
                rc = -1;
            } else if (v->state == OX_V_POISON) {
                poisoned = 1;
            }
        }
        if (rc)
            break;
        for (size_t i = 0; i < nd->n_output; i++)
            if (nd->output[i] && nd->output[i][0] && ox_find(c, nd->output[i])) {
                base_fail_line(err, errlen, "%s: node '%s' (%s): value '%s' is produced twice", c->where, display,
                               op_type, nd->output[i]);
                rc = -1;
                break;
            }
        if (rc)
            break;
        const ox_converter *cv = NULL;
        if (!dom[0] || !strcmp(dom, "ai.onnx"))
            cv = ox_converter_find(op_type);
        if (!cv) {
            char full[512];
            snprintf(full, sizeof full, "%s%s%s", dom[0] && strcmp(dom, "ai.onnx") ? dom : "",
                     dom[0] && strcmp(dom, "ai.onnx") ? "." : "", op_type[0] ? op_type : "(no op_type)");
            ox_record_unsup(c, full, display, NULL);
            ox_poison_outputs(c, nd);
            continue;
        }
        if (poisoned) { /* downstream of an unsupported node: already reported */
            ox_poison_outputs(c, nd);
            continue;
        }
        /* a folded Pad reaches its consumer as a padding still to apply: a Conv's input 0 takes
         * it as conv padding, every other consumer gets it applied by a pad node first */
        int pad_bad = 0;
        for (size_t i = 0; i < nd->n_input && pad_bad >= 0; i++) {
            ox_val *v = nd->input[i] && nd->input[i][0] ? ox_find(c, nd->input[i]) : NULL;
            if (v && v->has_pad && (i != 0 || strcmp(op_type, "Conv") != 0))
                pad_bad |= ox_pad_pending(c, v, err, errlen);
        }
        if (pad_bad < 0) {
            rc = -1;
            break;
        }
        if (pad_bad) {
            ox_poison_outputs(c, nd);
            continue;
        }
        int r = OX_OK;
        for (size_t i = 0; i < nd->n_attribute && r == OX_OK; i++) {
            const Onnx__AttributeProto *a = nd->attribute[i];
            if (a->ref_attr_name && a->ref_attr_name[0])
                r = ox_unsup(c, "attribute '%s' refers to a function attribute", a->name ? a->name : "");
            else if (!a->name || !ox_in_list(cv->attrs, a->name))
                r = ox_unsup(c, "attribute '%s'", a->name ? a->name : "");
        }
        if (r == OX_OK)
            r = cv->fn(c);
        if (r == OX_UNSUP) {
            ox_record_unsup(c, op_type, display, c->reason);
            ox_poison_outputs(c, nd);
            continue;
        }
        if (r == OX_ERR) {
            base_fail_line(err, errlen, "%s: node '%s' (%s): %s", c->where, display, op_type,
                           c->err[0] ? c->err : "conversion failed");
            rc = -1;
            break;
        }
        /* every output another node or the graph uses must now be defined */
        for (size_t i = 0; i < nd->n_output; i++)
            if (ox_out_used(c, (int)i) && !ox_find(c, nd->output[i])) {
                base_fail_line(err, errlen, "%s: node '%s' (%s): output %zu ('%s') is used but not supported", c->where,
                               display, op_type, i, nd->output[i]);
                rc = -1;
                break;
            }
    }
    free(order);
    for (size_t k = 0; rc == 0 && k < gp->n_output; k++) { /* a graph output cannot stay padded */
        ox_val *v = gp->output[k]->name ? ox_find(c, gp->output[k]->name) : NULL;
        if (v && v->has_pad && ox_pad_pending(c, v, err, errlen) < 0)
            rc = -1;
    }
    if (rc == 0 && c->n_unsup) {
        ox_format_unsup(c, err, errlen);
        rc = -1;
    }
    return rc;
}

void onnx_import_opts_default(onnx_import_opts *o) { memset(o, 0, sizeof *o); }

graph *onnx_import_buffer(const void *data, size_t len, const char *where, const char *base_dir,
                          const onnx_import_opts *o, char *err, size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    if (!where)
        where = "(buffer)";
    size_t deep_at;
    if (ox_wire_depth_check(data, len, OX_MAX_NESTING, &deep_at) < 0) {
        base_fail_line(err, errlen, "%s: messages nest deeper than %d levels (at byte %zu): refused", where,
                       OX_MAX_NESTING, deep_at);
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data);
    if (!m) {
        base_fail_line(err, errlen, "%s: not a valid ONNX model (the protobuf data is truncated or corrupt)", where);
        return NULL;
    }
    graph *result = NULL;
    ox_ctx c;
    memset(&c, 0, sizeof c);
    c.where = where;
    c.base_dir = base_dir;
    if (o)
        c.o = *o;
    const Onnx__GraphProto *gp = m->graph;
    if (!gp) {
        base_fail_line(err, errlen, "%s: the model has no graph (not an ONNX model?)", where);
        goto done;
    }
    c.opset = -1;
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *os = m->opset_import[k];
        const char *d = os->domain ? os->domain : "";
        if (!d[0] || !strcmp(d, "ai.onnx"))
            c.opset = os->has_version ? os->version : 0;
    }
    if (c.opset < 0) {
        base_fail_line(err, errlen, "%s: the model imports no opset of the default ONNX domain", where);
        goto done;
    }
    if (c.opset < ONNX_OPSET_MIN || c.opset > ONNX_OPSET_MAX) {
        base_fail_line(err, errlen, "%s: opset %lld of the default domain is not supported (%d to %d)", where,
                       (long long)c.opset, ONNX_OPSET_MIN, ONNX_OPSET_MAX);
        goto done;
    }
    for (int32_t k = 0; k < c.o.n_dims; k++)
        if (!c.o.dim_names || !c.o.dim_values || c.o.dim_values[k] <= 0) {
            base_fail_line(err, errlen, "%s: symbolic dimension values must be positive", where);
            goto done;
        }
    c.g = graph_new(gp->name && gp->name[0] ? gp->name : "onnx");
    if (c.o.max_elements > 0)
        c.g->max_elements = c.o.max_elements;
    if (base_dir) {
        c.g->base_dir = base_xstrdup(base_dir);
    }
    c.g->allow_outside_paths = c.o.allow_outside_paths != 0;
    /* every model name is taken before generated names are chosen */
    for (size_t k = 0; k < gp->n_node; k++)
        for (size_t i = 0; i < gp->node[k]->n_output; i++)
            if (gp->node[k]->output[i] && gp->node[k]->output[i][0])
                ox_name_add(&c, gp->node[k]->output[i]);
    for (size_t k = 0; k < gp->n_initializer; k++)
        if (gp->initializer[k]->name)
            ox_name_add(&c, gp->initializer[k]->name);
    for (size_t k = 0; k < gp->n_input; k++)
        if (gp->input[k]->name)
            ox_name_add(&c, gp->input[k]->name);
    for (size_t k = 0; k < gp->n_value_info; k++)
        ox_record_shape(&c, gp->value_info[k]);
    for (size_t k = 0; k < gp->n_output; k++)
        ox_record_shape(&c, gp->output[k]);
    if (gp->n_sparse_initializer) {
        base_fail_line(err, errlen, "%s: sparse initializers are not supported ('%s')", where,
                       gp->sparse_initializer[0]->values && gp->sparse_initializer[0]->values->name
                           ? gp->sparse_initializer[0]->values->name : "");
        goto done;
    }
    for (size_t k = 0; k < gp->n_initializer; k++) {
        const Onnx__TensorProto *t = gp->initializer[k];
        if (!t->name || !t->name[0]) {
            base_fail_line(err, errlen, "%s: initializer %zu has no name", where, k);
            goto done;
        }
        if (ox_find(&c, t->name)) {
            base_fail_line(err, errlen, "%s: initializer '%s' is declared twice", where, t->name);
            goto done;
        }
        ox_const kc;
        if (ox_const_from_proto(&c, t, &kc) != OX_OK) {
            base_fail_line(err, errlen, "%s: %s", where, c.err);
            goto done;
        }
        ox_val *v = ox_val_new(&c, t->name);
        v->state = OX_V_CONST;
        v->c = kc;
    }
    if (ox_inputs(&c, gp) != OX_OK) {
        base_fail_line(err, errlen, "%s: %s", where, c.err);
        goto done;
    }
    if (gp->n_output == 0) {
        base_fail_line(err, errlen, "%s: the graph has no outputs", where);
        goto done;
    }
    ox_count_uses(&c, gp);
    ox_init_random_roles(&c, gp); /* --random-weights: values by role */
    if (ox_walk(&c, gp, err, errlen) < 0)
        goto done;
    {
        uint8_t *renamed = base_xcalloc((size_t)c.g->n_tensors + 2 * gp->n_output + 1, 1);
        c.node = NULL;
        int orc = OX_OK;
        for (size_t k = 0; k < gp->n_output && orc == OX_OK; k++) {
            const char *name = gp->output[k]->name ? gp->output[k]->name : "";
            /* outputs may add tensors: keep the flags array large enough */
            orc = ox_output(&c, name, renamed);
        }
        free(renamed);
        if (orc != OX_OK) {
            base_fail_line(err, errlen, "%s: %s", where, c.err);
            goto done;
        }
    }
    ox_find_patterns(c.g, NULL, NULL); /* SiLU and tanh-GELU subgraphs: one op each */
    graph_compact(c.g);
    char verr[GRAPH_ERR_LEN];
    if (graph_validate(c.g, verr, sizeof verr) < 0) {
        base_fail_line(err, errlen, "%s: the imported graph is invalid: %s", where, verr);
        goto done;
    }
    result = c.g;
    c.g = NULL;
done:
    graph_free(c.g);
    ox_ctx_free(&c);
    onnx__model_proto__free_unpacked(m, NULL);
    return result;
}

graph *onnx_import(const char *path, const onnx_import_opts *o, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        base_fail_line(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        base_fail_line(err, errlen, "%s: not a regular file", path);
        fclose(f);
        return NULL;
    }
    if ((uint64_t)st.st_size > (UINT64_C(1) << 31)) {
        base_fail_line(err, errlen, "%s: %lld bytes is over the 2 GiB protobuf limit (use external data)", path,
                       (long long)st.st_size);
        fclose(f);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = base_xmalloc(n);
    if (n && fread(buf, 1, n, f) != n) {
        base_fail_line(err, errlen, "%s: read failed: %s", path, ferror(f) ? strerror(errno) : "short file");
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    char *dir = base_dirname(path);
    graph *g = onnx_import_buffer(buf, n, path, dir, o, err, errlen);
    free(dir);
    free(buf);
    return g;
}
