/* onnx_ops.c: one converter per ONNX operator, mapping it onto the op table or evaluating it at
 * import when its inputs are constants (see onnx_impl.h for the contract).
 *
 * Conventions: c->node is the ONNX node; input k is ox_in(c, k) (NULL when absent); a converter
 * either defines its used outputs or returns OX_UNSUP / OX_ERR. Runtime integer tensors (token
 * ids) are float tensors holding exact integers: data movement and + - * keep them exact, other
 * arithmetic on them is refused. Axes are normalised to be non-negative before reaching the table.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_MAX_LIST OPS_MAX_DIMS

static const char *out0(ox_ctx *c) { return c->node->n_output ? c->node->output[0] : NULL; }

static int is_const(const ox_val *v) { return v && v->state == OX_V_CONST; }

static int need_in(ox_ctx *c, int k, ox_val **v) {
    *v = ox_in(c, k);
    if (!*v)
        return ox_fail(c, "input %d is missing", k);
    return OX_OK;
}

/* Normalise axis for a tensor of the given rank. */
static int norm_axis(ox_ctx *c, int64_t axis, int32_t rank, int32_t *out) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return ox_fail(c, "axis %lld is out of range for rank %d", (long long)axis, (int)rank);
    *out = (int32_t)a;
    return OX_OK;
}

/* Define output 0 as a runtime node of one op over the given tensors. */
static int emit1(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in, int is_int) {
    int32_t out[OPS_MAX_OUTPUTS];
    const char *names[1] = {out0(c)};
    int rc = ox_node(c, op, p, n_in, in, names, out);
    if (rc != OX_OK)
        return rc;
    return ox_set_runtime(c, 0, out[0], is_int);
}

/* Output 0 = op over constant inputs, evaluated with the CPU reference. */
static int fold_table(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, ox_val **vs) {
    ox_const *ks[OPS_MAX_INPUTS];
    ox_const outs[OPS_MAX_OUTPUTS];
    int32_t n_out = 0;
    ops_params q;
    if (!p) {
        ops_params_default(op, &q);
        p = &q;
    }
    char m[GRAPH_ERR_LEN];
    if (ops_params_check(op, p, m, sizeof m) < 0)
        return ox_unsup(c, "%s", m);
    for (int32_t k = 0; k < n_in; k++)
        ks[k] = &vs[k]->c;
    if (ox_eval_table(c, op, p, n_in, ks, &n_out, outs) != OX_OK)
        return OX_ERR;
    int rc = OX_OK;
    for (int32_t k = 0; k < n_out; k++) {
        if (rc == OX_OK)
            rc = ox_set_const(c, k, &outs[k]);
        else
            ox_const_free(&outs[k]);
    }
    return rc;
}

static int all_const(ox_ctx *c, int from, int to) {
    for (int k = from; k < to; k++) {
        ox_val *v = ox_in(c, k);
        if (v && !is_const(v))
            return 0;
    }
    return 1;
}

/* A constant with the same values and a new shape. */
static int const_reshaped(ox_ctx *c, ox_val *x, const ops_shape *s) {
    ox_const k;
    ox_const_copy(c, &k, &x->c);
    k.shape = *s;
    return ox_set_const(c, 0, &k);
}

/* Output 0 = x with a new shape (runtime: a reshape node; same shape: an alias). */
static int reshape_to(ox_ctx *c, ox_val *x, const ops_shape *s) {
    if (is_const(x))
        return const_reshaped(c, x, s);
    if (ops_shape_eq(ox_shape(c, x), s))
        return ox_set_alias(c, 0, x);
    int32_t o;
    int rc = ox_reshape(c, ox_tensor(c, x), s, out0(c), &o);
    if (rc != OX_OK)
        return rc;
    return ox_set_runtime(c, 0, o, x->is_int);
}

static int refuse_int(ox_ctx *c, const ox_val *v) {
    if (v && v->state == OX_V_RUNTIME && v->is_int)
        return ox_unsup(c, "arithmetic on the integer tensor '%s' at run time", v->name);
    return OX_OK;
}

/* A weight for a helper constant k (k stays the caller's). */
static int32_t helper_weight(ox_ctx *c, const char *what, ox_const *k) {
    return ox_weight_from(c, ox_fresh_name(c, c->node_name, what), k);
}

/* A scalar float weight. */
static int32_t scalar_weight(ox_ctx *c, const char *what, float value) {
    ops_shape s;
    memset(&s, 0, sizeof s);
    ox_const k;
    ox_const_alloc(&k, &s, 0);
    k.f[0] = value;
    int32_t t = helper_weight(c, what, &k);
    ox_const_free(&k);
    return t;
}

/* The tensor of v seen with shape s: a reshaped copy of a constant as a new weight, or a
 * reshape helper node of a runtime tensor. Returns the tensor id or -1 (c->err / c->reason). */
static int32_t tensor_as(ox_ctx *c, ox_val *v, const ops_shape *s, int *rc) {
    *rc = OX_OK;
    if (ops_shape_eq(ox_shape(c, v), s))
        return ox_tensor(c, v);
    if (is_const(v)) {
        ox_const k;
        ox_const_copy(c, &k, &v->c);
        k.shape = *s;
        int32_t t = helper_weight(c, "reshaped", &k);
        ox_const_free(&k);
        if (t < 0)
            *rc = OX_ERR;
        return t;
    }
    int32_t o = -1;
    *rc = ox_reshape(c, ox_tensor(c, v), s, NULL, &o);
    return *rc == OX_OK ? o : -1;
}

/* ---------------------------------------------------------------------------------------------
 * elementwise
 */
/* A one-input op of the table whose ONNX form (ops_desc.onnx) is this node's op type, float in and
 * out: Relu, Sigmoid, Tanh, Erf, Sqrt, HardSwish. */
static int cv_unary(ox_ctx *c) {
    int op = -1;
    for (int k = 0; k < OP_COUNT && op < 0; k++)
        if (ops_table[k].min_in == 1 && ops_table[k].max_in == 1 && ops_table[k].onnx.op &&
            !strcmp(ops_table[k].onnx.op, c->node->op_type))
            op = k;
    if (op < 0)
        return ox_unsup(c, "%s has no op in the table", c->node->op_type);
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    if (is_const(x))
        return fold_table(c, (ops_type)op, NULL, 1, &x);
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    int32_t t = ox_tensor(c, x);
    return emit1(c, (ops_type)op, NULL, 1, &t, 0);
}

static int cv_binary(ox_ctx *c) {
    const char *t = c->node->op_type;
    int sym = !strcmp(t, "Add") ? '+' : !strcmp(t, "Sub") ? '-' : !strcmp(t, "Mul") ? '*'
            : !strcmp(t, "Div") ? '/' : '^';
    ops_type op = sym == '+' ? OP_EWADD : sym == '-' ? OP_EWSUB : sym == '*' ? OP_EWMUL
                : sym == '/' ? OP_EWDIV : OP_POW;
    ox_val *a, *b;
    if (need_in(c, 0, &a) != OX_OK || need_in(c, 1, &b) != OX_OK)
        return OX_ERR;
    if (is_const(a) && is_const(b)) {
        ox_const r;
        if (ox_eval_binary(c, sym, &a->c, &b->c, &r) != OX_OK)
            return OX_ERR;
        return ox_set_const(c, 0, &r);
    }
    int ia = is_const(a) ? a->c.is_int : a->is_int, ib = is_const(b) ? b->c.is_int : b->is_int;
    int ints = ia && ib;
    if ((ia || ib) && !(ints && (sym == '+' || sym == '-' || sym == '*'))) {
        if (!(sym == '^' && !ia)) /* a float base with an integer exponent is fine */
            return ox_unsup(c, "%s of integer tensors at run time", t);
    }
    int32_t in[2] = {ox_tensor(c, a), ox_tensor(c, b)};
    return emit1(c, op, NULL, 2, in, ints);
}

static int cv_neg(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    ox_const m;
    if (is_const(x)) {
        ox_const r;
        ops_shape s;
        memset(&s, 0, sizeof s);
        ox_const_alloc(&m, &s, x->c.is_int);
        if (x->c.is_int)
            m.i[0] = -1;
        else
            m.f[0] = -1.0f;
        int rc = ox_eval_binary(c, '*', &x->c, &m, &r);
        ox_const_free(&m);
        return rc != OX_OK ? rc : ox_set_const(c, 0, &r);
    }
    int32_t w = scalar_weight(c, "minus_one", -1.0f);
    if (w < 0)
        return OX_ERR;
    int32_t in[2] = {ox_tensor(c, x), w};
    return emit1(c, OP_EWMUL, NULL, 2, in, x->is_int);
}

/* Reciprocal 1 / x: ewdiv of a one-element weight 1 by x (x / y with numpy broadcasting, so the
 * division's kernels, fusions and rules apply); a constant x folds at import. */
static int cv_reciprocal(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    if (is_const(x) ? x->c.is_int : x->is_int)
        return ox_unsup(c, "Reciprocal of an integer tensor");
    if (is_const(x)) {
        ox_const one, r;
        ops_shape s;
        memset(&s, 0, sizeof s);
        ox_const_alloc(&one, &s, 0);
        one.f[0] = 1.0f;
        int rc = ox_eval_binary(c, '/', &one, &x->c, &r);
        ox_const_free(&one);
        return rc != OX_OK ? rc : ox_set_const(c, 0, &r);
    }
    int32_t w = scalar_weight(c, "one", 1.0f);
    if (w < 0)
        return OX_ERR;
    int32_t in[2] = {w, ox_tensor(c, x)};
    return emit1(c, OP_EWDIV, NULL, 2, in, 0);
}

/* ---------------------------------------------------------------------------------------------
 * identity-like, types, constants, shapes
 */
static int cv_identity(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    return ox_set_alias(c, 0, x);
}

static int cv_dropout(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    if (ox_out_used(c, 1))
        return ox_unsup(c, "the mask output");
    ox_val *tm = ox_in(c, 2);
    if (tm) {
        if (!is_const(tm) || ox_numel(&tm->c.shape) != 1)
            return ox_unsup(c, "training_mode computed at run time");
        int64_t *v = NULL;
        if (ox_const_ints(c, &tm->c, &v) != OX_OK)
            return OX_ERR;
        int on = v[0] != 0;
        free(v);
        if (on)
            return ox_unsup(c, "training_mode = true");
    }
    return ox_set_alias(c, 0, x);
}

static int cv_cast(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    int64_t to;
    if (ox_attr_int(c, "to", -1, &to) != OX_OK)
        return OX_ERR;
    int to_float = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    int to_int = to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
                 to == ONNX__TENSOR_PROTO__DATA_TYPE__INT16 || to == ONNX__TENSOR_PROTO__DATA_TYPE__INT8 ||
                 to == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 || to == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 ||
                 to == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 || to == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64 ||
                 to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    if (!to_float && !to_int)
        return ox_unsup(c, "cast to element type %lld", (long long)to);
    if (is_const(x)) {
        ox_const k;
        if (ox_check_fold(c, &x->c.shape, to_int) != OX_OK || ox_const_load(c, &x->c) != OX_OK)
            return OX_ERR;
        ox_const_alloc(&k, &x->c.shape, to_int);
        k.synthetic = x->c.synthetic;
        int64_t n = ox_numel(&x->c.shape);
        for (int64_t j = 0; j < n; j++) {
            if (to_float) {
                k.f[j] = x->c.is_int ? (float)x->c.i[j] : x->c.f[j];
                continue;
            }
            int64_t v;
            if (x->c.is_int) {
                v = x->c.i[j];
            } else {
                float f = x->c.f[j];
                if (to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
                    k.i[j] = f != 0.0f;
                    continue;
                }
                if (!(fabsf(f) < 9.0e18f)) {
                    ox_const_free(&k);
                    return ox_fail(c, "cast of %g to an integer type", (double)f);
                }
                v = (int64_t)f; /* truncation toward zero */
            }
            switch (to) {
            case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: v = v != 0; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: v = (int32_t)(uint32_t)(uint64_t)v; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: v = (int16_t)(uint16_t)(uint64_t)v; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: v = (int8_t)(uint8_t)(uint64_t)v; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: v = (uint8_t)(uint64_t)v; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: v = (uint16_t)(uint64_t)v; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: v = (uint32_t)(uint64_t)v; break;
            default: break;
            }
            k.i[j] = v;
        }
        return ox_set_const(c, 0, &k);
    }
    if (to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
        return ox_unsup(c, "cast to double at run time (float32 only)");
    if (to_float)
        return ox_set_runtime(c, 0, x->t, 0); /* ids are exact floats already */
    if (!x->is_int)
        return ox_unsup(c, "cast of a float tensor to an integer type at run time");
    if (to != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && to != ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
        return ox_unsup(c, "cast of an integer tensor to element type %lld at run time", (long long)to);
    return ox_set_runtime(c, 0, x->t, 1);
}

static int cv_constant(ox_ctx *c) {
    const Onnx__NodeProto *n = c->node;
    if (n->n_attribute != 1)
        return ox_fail(c, "a Constant needs exactly one value attribute, it has %zu", n->n_attribute);
    const Onnx__AttributeProto *a = n->attribute[0];
    ox_const k;
    ops_shape s;
    memset(&s, 0, sizeof s);
    if (!strcmp(a->name, "value")) {
        if (!a->t)
            return ox_fail(c, "attribute 'value' holds no tensor");
        if (ox_const_from_proto(c, a->t, &k) != OX_OK)
            return OX_ERR;
    } else if (!strcmp(a->name, "value_float")) {
        ox_const_alloc(&k, &s, 0);
        k.f[0] = a->f;
    } else if (!strcmp(a->name, "value_int")) {
        ox_const_alloc(&k, &s, 1);
        k.i[0] = a->i;
    } else if (!strcmp(a->name, "value_floats")) {
        s.rank = 1;
        s.dims[0] = (int64_t)a->n_floats;
        ox_const_alloc(&k, &s, 0);
        for (size_t j = 0; j < a->n_floats; j++)
            k.f[j] = a->floats[j];
    } else { /* value_ints */
        s.rank = 1;
        s.dims[0] = (int64_t)a->n_ints;
        ox_const_alloc(&k, &s, 1);
        for (size_t j = 0; j < a->n_ints; j++)
            k.i[j] = a->ints[j];
    }
    return ox_set_const(c, 0, &k);
}

/* The shape a shape-valued input asks for: its constant values, or, when those are made up
 * (missing data), the shape the model records for output 0. */
static int shape_input(ox_ctx *c, ox_val *v, ops_shape *s, int *from_record) {
    *from_record = 0;
    if (is_const(v) && v->c.synthetic) {
        const ops_shape *r = ox_recorded_shape(c, out0(c));
        if (!r)
            return ox_unsup(c, "the shape '%s' has no data (external data missing) and the model records no "
                               "shape for '%s'", v->name, out0(c));
        *s = *r;
        *from_record = 1;
        return OX_OK;
    }
    int64_t vals[OX_MAX_LIST];
    int32_t n = 0;
    int rc = ox_const_list(c, v, "shape", vals, OX_MAX_LIST, &n);
    if (rc != OX_OK)
        return rc;
    memset(s, 0, sizeof *s);
    s->rank = n;
    for (int32_t d = 0; d < n; d++) {
        if (vals[d] < 0)
            return ox_fail(c, "shape entry %d is %lld", (int)d, (long long)vals[d]);
        s->dims[d] = vals[d];
    }
    return OX_OK;
}

static int cv_constant_of_shape(ox_ctx *c) {
    ox_val *sv;
    if (need_in(c, 0, &sv) != OX_OK)
        return OX_ERR;
    ops_shape s;
    int rec;
    int rc = shape_input(c, sv, &s, &rec);
    if (rc != OX_OK)
        return rc;
    int64_t n = ox_numel(&s);
    const Onnx__AttributeProto *a = ox_attr(c, "value");
    ox_const val;
    int is_int = 0;
    float fv = 0.0f;
    int64_t iv = 0;
    if (a) {
        if (!a->t)
            return ox_fail(c, "attribute 'value' holds no tensor");
        if (ox_const_from_proto(c, a->t, &val) != OX_OK)
            return OX_ERR;
        if (ox_numel(&val.shape) != 1 || ox_const_load(c, &val) != OX_OK) {
            ox_const_free(&val);
            return ox_fail(c, "attribute 'value' must hold one element");
        }
        is_int = val.is_int;
        if (is_int)
            iv = val.i[0];
        else
            fv = val.f[0];
        ox_const_free(&val);
    }
    if (ox_check_fold(c, &s, is_int) != OX_OK)
        return OX_ERR;
    ox_const k;
    ox_const_alloc(&k, &s, is_int);
    for (int64_t j = 0; j < n; j++) {
        if (is_int)
            k.i[j] = iv;
        else
            k.f[j] = fv;
    }
    return ox_set_const(c, 0, &k);
}

static int cv_shape(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int64_t start, end;
    if (ox_attr_int(c, "start", 0, &start) != OX_OK || ox_attr_int(c, "end", xs->rank, &end) != OX_OK)
        return OX_ERR;
    int64_t r = xs->rank;
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 1;
    s.dims[0] = end > start ? end - start : 0;
    ox_const k;
    ox_const_alloc(&k, &s, 1);
    for (int64_t d = start; d < end; d++)
        k.i[d - start] = xs->dims[d];
    return ox_set_const(c, 0, &k);
}

static int cv_size(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    ops_shape s;
    memset(&s, 0, sizeof s);
    ox_const k;
    ox_const_alloc(&k, &s, 1);
    k.i[0] = ox_numel(ox_shape(c, x));
    return ox_set_const(c, 0, &k);
}

static int cv_compare(ox_ctx *c) {
    const char *t = c->node->op_type;
    int sym = !strcmp(t, "Equal") ? '=' : !strcmp(t, "Less") ? '<' : !strcmp(t, "Greater") ? '>'
            : !strcmp(t, "LessOrEqual") ? 'l' : !strcmp(t, "GreaterOrEqual") ? 'g' : !strcmp(t, "And") ? '&'
            : !strcmp(t, "Xor") ? 'x' : '|';
    ox_val *a, *b;
    if (need_in(c, 0, &a) != OX_OK || need_in(c, 1, &b) != OX_OK)
        return OX_ERR;
    if (!is_const(a) || !is_const(b))
        return ox_unsup(c, "%s needs constant inputs (no such operator at run time)", t);
    ox_const r;
    if (ox_eval_binary(c, sym, &a->c, &b->c, &r) != OX_OK)
        return OX_ERR;
    return ox_set_const(c, 0, &r);
}

/* Mod: shape arithmetic (torch's unflatten normalises its dim as (rank + dim) % rank), folded at
 * import; there is no such operator at run time. */
static int cv_mod(ox_ctx *c) {
    int64_t fmod;
    if (ox_attr_int(c, "fmod", 0, &fmod) != OX_OK)
        return OX_ERR;
    if (fmod != 0 && fmod != 1)
        return ox_fail(c, "fmod = %lld (0 or 1)", (long long)fmod);
    ox_val *a, *b;
    if (need_in(c, 0, &a) != OX_OK || need_in(c, 1, &b) != OX_OK)
        return OX_ERR;
    if (!is_const(a) || !is_const(b))
        return ox_unsup(c, "Mod of '%s', computed at run time: only constant (shape) arithmetic is folded, no such "
                           "operator at run time", is_const(a) ? b->name : a->name);
    ox_const r;
    if (ox_eval_binary(c, fmod ? 'f' : '%', &a->c, &b->c, &r) != OX_OK)
        return OX_ERR;
    return ox_set_const(c, 0, &r);
}

/* Max / Min of one or more constants (clamping computed sizes), folded at import. */
static int cv_minmax(ox_ctx *c) {
    int op = !strcmp(c->node->op_type, "Max") ? 'M' : 'm';
    int32_t n = (int32_t)c->node->n_input;
    ox_val *v;
    if (n < 1 || need_in(c, 0, &v) != OX_OK)
        return ox_fail(c, "no inputs");
    for (int32_t k = 0; k < n; k++)
        if (ox_in(c, k) && !is_const(ox_in(c, k)))
            return ox_unsup(c, "%s of '%s', computed at run time: only constants are folded, no such operator at "
                               "run time", c->node->op_type, ox_in(c, k)->name);
    ox_const acc;
    ox_const_copy(c, &acc, &v->c);
    for (int32_t k = 1; k < n; k++) {
        ox_val *w = ox_in(c, k);
        ox_const r;
        if (!w)
            continue;
        int rc = ox_eval_binary(c, op, &acc, &w->c, &r);
        ox_const_free(&acc);
        if (rc != OX_OK)
            return rc;
        acc = r;
    }
    return ox_set_const(c, 0, &acc);
}

static int cv_not(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    if (!is_const(x))
        return ox_unsup(c, "Not needs a constant input (no such operator at run time)");
    ops_shape s;
    memset(&s, 0, sizeof s);
    ox_const zero, r;
    ox_const_alloc(&zero, &s, x->c.is_int);
    int rc = ox_eval_binary(c, '=', &x->c, &zero, &r);
    ox_const_free(&zero);
    return rc != OX_OK ? rc : ox_set_const(c, 0, &r);
}

static int cv_where(ox_ctx *c) {
    ox_val *cond, *x, *y;
    if (need_in(c, 0, &cond) != OX_OK || need_in(c, 1, &x) != OX_OK || need_in(c, 2, &y) != OX_OK)
        return OX_ERR;
    if (!is_const(cond) || !is_const(x) || !is_const(y))
        return ox_unsup(c, "Where needs constant inputs (no such operator at run time)");
    ox_const r;
    if (ox_eval_where(c, &cond->c, &x->c, &y->c, &r) != OX_OK)
        return OX_ERR;
    return ox_set_const(c, 0, &r);
}

/* Trilu of a constant (the causal masks of torch.triu / tril and of SDPA's is_causal): the
 * elements off the kept triangle (j - i >= k for upper, j - i <= k for lower) become zero. */
static int cv_trilu(ox_ctx *c) {
    ox_val *x, *kv = ox_in(c, 1);
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    int64_t upper, k = 0;
    if (ox_attr_int(c, "upper", 1, &upper) != OX_OK)
        return OX_ERR;
    if (!is_const(x))
        return ox_unsup(c, "Trilu of '%s', computed at run time: only constants (masks) are folded, no such "
                           "operator at run time", x->name);
    if (kv) {
        int64_t v[1];
        int32_t n = 0;
        int rc = ox_const_list(c, kv, "k", v, 1, &n);
        if (rc != OX_OK)
            return rc;
        if (n != 1)
            return ox_fail(c, "k must hold one value, it holds %d", (int)n);
        k = v[0];
    }
    if (x->c.shape.rank < 2)
        return ox_fail(c, "Trilu of a tensor of rank %d (at least 2)", (int)x->c.shape.rank);
    if (ox_check_fold(c, &x->c.shape, x->c.is_int) != OX_OK || ox_const_load(c, &x->c) != OX_OK)
        return OX_ERR;
    ox_const r;
    ox_const_copy(c, &r, &x->c);
    int32_t rk = r.shape.rank;
    int64_t rows = r.shape.dims[rk - 2], cols = r.shape.dims[rk - 1], n = ox_numel(&r.shape);
    for (int64_t o = 0; o < n; o++) {
        int64_t i = (o / cols) % rows, j = o % cols; /* n > 0: rows, cols > 0 */
        /* j - i is in (-rows, cols): compared with k without overflow */
        int keep = upper ? (k <= -rows || (k < cols && j - i >= k)) : (k >= cols || (k > -rows && j - i <= k));
        if (keep)
            continue;
        if (r.is_int)
            r.i[o] = 0;
        else
            r.f[o] = 0.0f;
    }
    return ox_set_const(c, 0, &r);
}

/* The number of elements of an integer Range, exactly: ceil((limit - start) / delta), at least 0. */
static int range_count(ox_ctx *c, const int64_t *x, int64_t *cnt) {
    int64_t diff;
    if (x[0] == INT64_MIN || base_add_i64(x[1], -x[0], &diff) < 0)
        return ox_fail(c, "Range from %lld to %lld: the distance overflows int64", (long long)x[0], (long long)x[1]);
    if ((diff > 0) != (x[2] > 0) || diff == 0)
        *cnt = 0;
    else if (x[2] > 0)
        *cnt = (diff - 1) / x[2] + 1;
    else
        *cnt = (diff + 1) / x[2] + 1;
    return OX_OK;
}

static int cv_range(ox_ctx *c) {
    ox_val *v[3];
    for (int k = 0; k < 3; k++)
        if (need_in(c, k, &v[k]) != OX_OK)
            return OX_ERR;
    for (int k = 0; k < 3; k++)
        if (!is_const(v[k]) || ox_numel(&v[k]->c.shape) != 1)
            return ox_unsup(c, "Range needs constant scalar inputs ('%s' is %s)", v[k]->name,
                            is_const(v[k]) ? "not a scalar" : "computed at run time");
    int ints = v[0]->c.is_int && v[1]->c.is_int && v[2]->c.is_int;
    double x[3];
    int64_t xi[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        if (ox_const_load(c, &v[k]->c) != OX_OK)
            return OX_ERR;
        x[k] = v[k]->c.is_int ? (double)v[k]->c.i[0] : (double)v[k]->c.f[0];
        if (v[k]->c.is_int)
            xi[k] = v[k]->c.i[0];
    }
    if (x[2] == 0.0)
        return ox_fail(c, "Range with delta 0");
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 1;
    if (ints) {
        if (range_count(c, xi, &s.dims[0]) != OX_OK)
            return OX_ERR;
    } else {
        double cnt = ceil((x[1] - x[0]) / x[2]);
        if (!(cnt <= (double)c->g->max_elements))
            return ox_fail(c, "Range of %g elements is over the element limit", cnt);
        s.dims[0] = cnt > 0 ? (int64_t)cnt : 0;
    }
    if (ox_check_fold(c, &s, ints) != OX_OK)
        return OX_ERR;
    ox_const k;
    ox_const_alloc(&k, &s, ints);
    for (int64_t j = 0; j < s.dims[0]; j++) { /* start + j * delta stays between start and limit */
        if (ints)
            k.i[j] = xi[0] + j * xi[2];
        else
            k.f[j] = (float)(x[0] + (double)j * x[2]);
    }
    return ox_set_const(c, 0, &k);
}

static int cv_expand(ox_ctx *c) {
    ox_val *x, *sv;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &sv) != OX_OK)
        return OX_ERR;
    ops_shape want, to;
    int rec;
    int rc = shape_input(c, sv, &want, &rec);
    if (rc != OX_OK)
        return rc;
    if (ox_broadcast(c, ox_shape(c, x), &want, &to) != OX_OK)
        return OX_ERR;
    if (is_const(x)) {
        ox_const r;
        if (ox_eval_expand(c, &x->c, &to, &r) != OX_OK)
            return OX_ERR;
        return ox_set_const(c, 0, &r);
    }
    if (ops_shape_eq(&to, ox_shape(c, x)))
        return ox_set_alias(c, 0, x);
    /* broadcasting at run time: x + zeros(to) */
    ox_const z;
    if (ox_numel(&to) > c->g->max_elements)
        return ox_fail(c, "an expansion to %lld elements exceeds the limit", (long long)ox_numel(&to));
    ox_const_alloc(&z, &to, 0);
    int32_t w = helper_weight(c, "zeros", &z);
    ox_const_free(&z);
    if (w < 0)
        return OX_ERR;
    int32_t in[2] = {ox_tensor(c, x), w};
    return emit1(c, OP_EWADD, NULL, 2, in, x->is_int);
}

static int cv_gather_elements(ox_ctx *c) {
    ox_val *x, *idx;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &idx) != OX_OK)
        return OX_ERR;
    if (!is_const(x) || !is_const(idx))
        return ox_unsup(c, "GatherElements needs constant inputs (no such operator at run time)");
    int64_t axis;
    int32_t a = 0;
    if (ox_attr_int(c, "axis", 0, &axis) != OX_OK || norm_axis(c, axis, x->c.shape.rank, &a) != OX_OK)
        return OX_ERR;
    ox_const r;
    if (ox_eval_gather_elements(c, &x->c, &idx->c, a, &r) != OX_OK)
        return OX_ERR;
    return ox_set_const(c, 0, &r);
}

/* ScatterND builds masks from constants (swin's shifted-window attention mask): folded at
 * import; there is no such operator at run time. */
static int cv_scatter_nd(ox_ctx *c) {
    ox_val *x, *idx, *upd;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &idx) != OX_OK || need_in(c, 2, &upd) != OX_OK)
        return OX_ERR;
    if (!is_const(x) || !is_const(idx) || !is_const(upd))
        return ox_unsup(c, "ScatterND needs constant inputs (no such operator at run time; '%s' is computed)",
                        !is_const(x) ? x->name : !is_const(idx) ? idx->name : upd->name);
    char mode[16];
    if (ox_attr_str(c, "reduction", "none", mode, sizeof mode) != OX_OK)
        return OX_ERR;
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    static const int reds[] = {0, '+', '*', 'M', 'm'};
    for (int k = 0; k < 5; k++)
        if (!strcmp(mode, names[k])) {
            ox_const r;
            if (ox_eval_scatter_nd(c, &x->c, &idx->c, &upd->c, reds[k], &r) != OX_OK)
                return OX_ERR;
            return ox_set_const(c, 0, &r);
        }
    return ox_fail(c, "reduction '%s' is not one of none, add, mul, max, min", mode);
}

/* ---------------------------------------------------------------------------------------------
 * reshaping and data movement
 */
static int cv_unsqueeze(ox_ctx *c) {
    ox_val *x, *av;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &av) != OX_OK)
        return OX_ERR;
    int64_t axes[OX_MAX_LIST];
    int32_t n = 0;
    int rc = ox_const_list(c, av, "axes", axes, OX_MAX_LIST, &n);
    if (rc != OX_OK)
        return rc;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int32_t r = xs->rank + n;
    if (r > OPS_MAX_DIMS)
        return ox_unsup(c, "a result of rank %d (at most %d)", (int)r, OPS_MAX_DIMS);
    int mark[OPS_MAX_DIMS] = {0};
    for (int32_t k = 0; k < n; k++) {
        int32_t a = 0;
        if (norm_axis(c, axes[k], r, &a) != OX_OK)
            return OX_ERR;
        if (mark[a])
            return ox_fail(c, "axis %lld is repeated", (long long)axes[k]);
        mark[a] = 1;
    }
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = r;
    for (int32_t d = 0, j = 0; d < r; d++)
        s.dims[d] = mark[d] ? 1 : xs->dims[j++];
    return reshape_to(c, x, &s);
}

static int cv_squeeze(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int mark[OPS_MAX_DIMS] = {0};
    ox_val *av = ox_in(c, 1);
    if (av) {
        int64_t axes[OX_MAX_LIST];
        int32_t n = 0;
        int rc = ox_const_list(c, av, "axes", axes, OX_MAX_LIST, &n);
        if (rc != OX_OK)
            return rc;
        for (int32_t k = 0; k < n; k++) {
            int32_t a = 0;
            if (norm_axis(c, axes[k], xs->rank, &a) != OX_OK)
                return OX_ERR;
            if (xs->dims[a] != 1)
                return ox_fail(c, "axis %d has size %lld, not 1", (int)a, (long long)xs->dims[a]);
            mark[a] = 1;
        }
    } else {
        for (int32_t d = 0; d < xs->rank; d++)
            mark[d] = xs->dims[d] == 1;
    }
    ops_shape s;
    memset(&s, 0, sizeof s);
    for (int32_t d = 0; d < xs->rank; d++)
        if (!mark[d])
            s.dims[s.rank++] = xs->dims[d];
    return reshape_to(c, x, &s);
}

static int cv_flatten(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int64_t axis;
    if (ox_attr_int(c, "axis", 1, &axis) != OX_OK)
        return OX_ERR;
    if (axis < 0)
        axis += xs->rank;
    if (axis < 0 || axis > xs->rank)
        return ox_fail(c, "axis is out of range for rank %d", (int)xs->rank);
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 2;
    s.dims[0] = s.dims[1] = 1;
    for (int32_t d = 0; d < xs->rank; d++)
        s.dims[d < axis ? 0 : 1] *= xs->dims[d];
    return reshape_to(c, x, &s);
}

static int cv_reshape(ox_ctx *c) {
    ox_val *x, *sv;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &sv) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int64_t allowzero;
    if (ox_attr_int(c, "allowzero", 0, &allowzero) != OX_OK)
        return OX_ERR;
    ops_shape s;
    if (is_const(sv) && sv->c.synthetic) {
        int rec;
        int rc = shape_input(c, sv, &s, &rec);
        if (rc != OX_OK)
            return rc;
        if (ox_numel(&s) != ox_numel(xs))
            return ox_fail(c, "the recorded shape of '%s' does not hold the input's elements", out0(c));
        return reshape_to(c, x, &s);
    }
    int64_t v[OX_MAX_LIST];
    int32_t n = 0;
    int rc = ox_const_list(c, sv, "shape", v, OX_MAX_LIST, &n);
    if (rc != OX_OK)
        return rc;
    memset(&s, 0, sizeof s);
    s.rank = n;
    int infer = -1;
    int64_t known = 1;
    for (int32_t d = 0; d < n; d++) {
        int64_t q = v[d];
        if (q == 0 && !allowzero) {
            if (d >= xs->rank)
                return ox_fail(c, "shape entry %d is 0 but the input has rank %d", (int)d, (int)xs->rank);
            q = xs->dims[d];
        }
        if (q == -1) {
            if (infer >= 0)
                return ox_fail(c, "the shape has two -1 entries");
            infer = d;
            continue;
        }
        if (q < 0)
            return ox_fail(c, "shape entry %d is %lld", (int)d, (long long)v[d]);
        s.dims[d] = q;
        if (base_mul_i64(known, q, &known) < 0)
            return ox_fail(c, "the product of the shape's entries overflows int64 (entry %d is %lld)", (int)d,
                           (long long)q);
    }
    int64_t total = ox_numel(xs);
    if (infer >= 0) {
        if (known == 0 || total % known)
            return ox_fail(c, "cannot infer the -1 entry: %lld elements into blocks of %lld", (long long)total,
                           (long long)known);
        s.dims[infer] = total / known;
    } else if (known != total) {
        char b1[128], b2[128];
        return ox_fail(c, "cannot reshape %s into %s", ops_shape_str(xs, b1, sizeof b1),
                       ops_shape_str(&s, b2, sizeof b2));
    }
    return reshape_to(c, x, &s);
}

static int cv_transpose(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int64_t perm[OX_MAX_LIST];
    int32_t n = 0;
    int rc = ox_attr_ints(c, "perm", perm, OX_MAX_LIST, &n);
    if (rc != OX_OK)
        return rc;
    if (n < 0) {
        n = xs->rank;
        for (int32_t d = 0; d < n; d++)
            perm[d] = n - 1 - d;
    }
    if (n != xs->rank)
        return ox_fail(c, "perm has %d entries for rank %d", (int)n, (int)xs->rank);
    int seen[OPS_MAX_DIMS] = {0}, ident = 1;
    for (int32_t d = 0; d < n; d++) {
        if (perm[d] < 0 || perm[d] >= n || seen[perm[d]])
            return ox_fail(c, "perm is not a permutation");
        seen[perm[d]] = 1;
        ident &= perm[d] == d;
    }
    if (is_const(x)) {
        ox_const r;
        if (ox_eval_transpose(c, &x->c, perm, &r) != OX_OK)
            return OX_ERR;
        return ox_set_const(c, 0, &r);
    }
    if (ident)
        return ox_set_alias(c, 0, x);
    int32_t o;
    rc = ox_transpose(c, ox_tensor(c, x), n, perm, out0(c), &o);
    if (rc != OX_OK)
        return rc;
    return ox_set_runtime(c, 0, o, x->is_int);
}

static int cv_concat(ox_ctx *c) {
    int64_t axis;
    if (!ox_attr(c, "axis"))
        return ox_fail(c, "attribute 'axis' is required");
    if (ox_attr_int(c, "axis", 0, &axis) != OX_OK)
        return OX_ERR;
    int32_t n = (int32_t)c->node->n_input;
    if (n < 1)
        return ox_fail(c, "no inputs");
    ox_val **vs = base_xcalloc((size_t)n, sizeof *vs);
    int32_t m = 0, all_c = 1, ints = 1, rank = -1;
    int rc = OX_OK;
    for (int32_t k = 0; k < n; k++) {
        ox_val *v = ox_in(c, k);
        if (!v)
            continue;
        if (rank < 0)
            rank = ox_shape(c, v)->rank;
        if (ox_numel(ox_shape(c, v)) == 0)
            continue; /* empty pieces add nothing (shape arithmetic) */
        vs[m++] = v;
        all_c &= is_const(v);
        ints &= is_const(v) ? v->c.is_int : v->is_int;
    }
    int32_t a = 0;
    if (rank < 0)
        rc = ox_fail(c, "no inputs");
    else
        rc = norm_axis(c, axis, rank, &a);
    if (rc == OX_OK && m == 0) { /* all empty: the first input is the (empty) result */
        ox_val *v = ox_in(c, 0);
        rc = v ? ox_set_alias(c, 0, v) : ox_fail(c, "no inputs");
    } else if (rc == OX_OK && m == 1) {
        rc = ox_set_alias(c, 0, vs[0]);
    } else if (rc == OX_OK && all_c) {
        ox_const **ks = base_xcalloc((size_t)m, sizeof *ks);
        for (int32_t k = 0; k < m; k++)
            ks[k] = &vs[k]->c;
        ox_const r;
        rc = ox_eval_concat(c, ks, m, a, &r);
        free(ks);
        if (rc == OX_OK)
            rc = ox_set_const(c, 0, &r);
    } else if (rc == OX_OK) {
        if (m > OPS_MAX_INPUTS) {
            rc = ox_unsup(c, "%d inputs (at most %d)", (int)m, OPS_MAX_INPUTS);
        } else {
            int32_t *in = base_xcalloc((size_t)m, sizeof *in);
            for (int32_t k = 0; k < m; k++)
                in[k] = ox_tensor(c, vs[k]);
            ops_params p;
            ops_params_default(OP_CONCAT, &p);
            p.v[PM_AXIS] = a;
            rc = emit1(c, OP_CONCAT, &p, m, in, ints);
            free(in);
        }
    }
    free(vs);
    return rc;
}

static int cv_split(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int64_t axis, num;
    int32_t a = 0;
    if (ox_attr_int(c, "axis", 0, &axis) != OX_OK || norm_axis(c, axis, xs->rank, &a) != OX_OK ||
        ox_attr_int(c, "num_outputs", 0, &num) != OX_OK)
        return OX_ERR;
    int32_t n_out = (int32_t)c->node->n_output;
    if (n_out < 1)
        return ox_fail(c, "no outputs");
    int64_t dim = xs->dims[a];
    int64_t *sizes = base_xcalloc((size_t)n_out, sizeof *sizes);
    int rc = OX_OK;
    ox_val *sv = ox_in(c, 1);
    if (sv) {
        if (!is_const(sv) || sv->c.synthetic) {
            rc = ox_unsup(c, "split sizes computed at run time or missing");
        } else {
            int64_t *v = NULL;
            int64_t cnt = ox_numel(&sv->c.shape);
            if (cnt != n_out)
                rc = ox_fail(c, "%lld split sizes for %d outputs", (long long)cnt, (int)n_out);
            else if ((rc = ox_const_ints(c, &sv->c, &v)) == OX_OK)
                for (int32_t k = 0; k < n_out; k++)
                    sizes[k] = v[k];
            free(v);
        }
    } else if (num > 0) {
        if (num != n_out)
            rc = ox_fail(c, "num_outputs = %lld but the node has %d outputs", (long long)num, (int)n_out);
        int64_t chunk = rc == OX_OK ? (dim + num - 1) / num : 0; /* num = n_out: small, dim bounded */
        for (int32_t k = 0; k < n_out && rc == OX_OK; k++)
            sizes[k] = k < n_out - 1 ? chunk : dim - chunk * (n_out - 1);
    } else {
        if (dim % n_out)
            rc = ox_fail(c, "dimension %lld does not split into %d equal parts", (long long)dim, (int)n_out);
        for (int32_t k = 0; k < n_out; k++)
            sizes[k] = dim / n_out;
    }
    int64_t sum = 0;
    for (int32_t k = 0; k < n_out && rc == OX_OK; k++) {
        if (sizes[k] < 0)
            rc = ox_fail(c, "split size %lld", (long long)sizes[k]);
        else if (base_add_i64(sum, sizes[k], &sum) < 0)
            rc = ox_fail(c, "the split sizes overflow int64 when summed (size %d is %lld)", (int)k,
                         (long long)sizes[k]);
    }
    if (rc == OX_OK && sum != dim)
        rc = ox_fail(c, "split sizes sum to %lld, the dimension is %lld", (long long)sum, (long long)dim);
    if (rc == OX_OK && is_const(x)) {
        int64_t at = 0;
        for (int32_t k = 0; k < n_out && rc == OX_OK; k++) {
            ox_const r;
            int64_t st = at, en = at + sizes[k], ax = a, step = 1;
            rc = ox_eval_slice(c, &x->c, 1, &st, &en, &ax, &step, &r);
            if (rc == OX_OK)
                rc = ox_set_const(c, k, &r);
            at += sizes[k];
        }
    } else if (rc == OX_OK && n_out == 1) {
        rc = ox_set_alias(c, 0, x);
    } else if (rc == OX_OK) {
        for (int32_t k = 0; k < n_out && rc == OX_OK; k++)
            if (sizes[k] == 0)
                rc = ox_unsup(c, "an empty output");
        if (rc == OX_OK && (n_out > OPS_MAX_OUTPUTS || n_out > OPS_MAX_LIST))
            rc = ox_unsup(c, "%d outputs (at most %d)", (int)n_out, OPS_MAX_OUTPUTS);
        if (rc == OX_OK) {
            ops_params p;
            ops_params_default(OP_SPLIT, &p);
            p.v[PM_AXIS] = a;
            p.v[PM_PARTS] = n_out;
            p.n_list = n_out;
            for (int32_t k = 0; k < n_out; k++)
                p.list[k] = sizes[k];
            const char *names[OPS_MAX_OUTPUTS];
            for (int32_t k = 0; k < n_out; k++)
                names[k] = c->node->output[k] && c->node->output[k][0] ? c->node->output[k] : NULL;
            int32_t outs[OPS_MAX_OUTPUTS], t = ox_tensor(c, x);
            rc = ox_node(c, OP_SPLIT, &p, 1, &t, names, outs);
            for (int32_t k = 0; k < n_out && rc == OX_OK; k++)
                rc = ox_set_runtime(c, k, outs[k], x->is_int);
        }
    }
    free(sizes);
    return rc;
}

/* Elements [lo, lo + len) of tensor t along axis a, as a split keeping that part (named name, or
 * a helper name when NULL). */
static int slice_split(ox_ctx *c, int32_t t, int32_t a, int64_t lo, int64_t len, const char *name, int32_t *out) {
    int64_t dim = c->g->tensors[t].shape.dims[a];
    ops_params p;
    ops_params_default(OP_SPLIT, &p);
    p.v[PM_AXIS] = a;
    p.n_list = 0;
    if (lo > 0)
        p.list[p.n_list++] = lo;
    int32_t keep = p.n_list;
    p.list[p.n_list++] = len;
    if (lo + len < dim)
        p.list[p.n_list++] = dim - lo - len;
    p.v[PM_PARTS] = p.n_list;
    const char *names[OPS_MAX_OUTPUTS] = {0};
    names[keep] = name;
    int32_t outs[OPS_MAX_OUTPUTS];
    int rc = ox_node(c, OP_SPLIT, &p, 1, &t, names, outs);
    if (rc == OX_OK)
        *out = outs[keep];
    return rc;
}

/* Elements lo, lo + p, ... (below hi; at least two) of tensor t along axis a at run time: a run of
 * n * p elements that holds them at one phase, reshaped to (n, p) there, the phase's column
 * split off and the axis reshaped back (swin's patch merging: x[..., 0::2, 1::2, :]). */
static int slice_strided(ox_ctx *c, int32_t t, int32_t a, int64_t lo, int64_t hi, int64_t p, const char *name,
                         int32_t *out) {
    ops_shape s = c->g->tensors[t].shape;
    int64_t dim = s.dims[a], n = (hi - lo - 1) / p + 1; /* n >= 2: (n - 1) * p < dim, n * p < 2 * dim */
    if (n * p > dim)
        return ox_unsup(c, "a step of %lld over %lld of %lld elements at run time (the run of %lld x %lld does not "
                           "fit)", (long long)p, (long long)(hi - lo), (long long)dim, (long long)n, (long long)p);
    if (s.rank >= OPS_MAX_DIMS)
        return ox_unsup(c, "a step of %lld at run time on a tensor of rank %d (at most %d)", (long long)p,
                        (int)s.rank, OPS_MAX_DIMS - 1);
    int64_t o = lo + n * p <= dim ? lo : dim - n * p; /* lo - p < o <= lo: lo is in the run's first row */
    int rc = OX_OK;
    if (n * p < dim)
        rc = slice_split(c, t, a, o, n * p, NULL, &t);
    ops_shape r = s;
    r.rank = s.rank + 1;
    for (int32_t d = s.rank; d > a; d--)
        r.dims[d] = s.dims[d - 1];
    r.dims[a] = n;
    r.dims[a + 1] = p;
    if (rc == OX_OK)
        rc = ox_reshape(c, t, &r, NULL, &t);
    if (rc == OX_OK)
        rc = slice_split(c, t, a + 1, lo - o, 1, NULL, &t);
    s.dims[a] = n;
    if (rc == OX_OK)
        rc = ox_reshape(c, t, &s, name, out);
    return rc;
}

static int cv_slice(ox_ctx *c) {
    ox_val *x, *sv, *ev;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &sv) != OX_OK || need_in(c, 2, &ev) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int64_t st[OX_MAX_LIST], en[OX_MAX_LIST], ax[OX_MAX_LIST], sp[OX_MAX_LIST];
    int32_t n = 0, m = 0;
    int rc = ox_const_list(c, sv, "starts", st, OX_MAX_LIST, &n);
    if (rc == OX_OK)
        rc = ox_const_list(c, ev, "ends", en, OX_MAX_LIST, &m);
    if (rc != OX_OK)
        return rc;
    if (m != n)
        return ox_fail(c, "%d starts but %d ends", (int)n, (int)m);
    ox_val *av = ox_in(c, 3), *pv = ox_in(c, 4);
    if (av) {
        if ((rc = ox_const_list(c, av, "axes", ax, OX_MAX_LIST, &m)) != OX_OK)
            return rc;
        if (m != n)
            return ox_fail(c, "%d starts but %d axes", (int)n, (int)m);
    } else {
        for (int32_t k = 0; k < n; k++)
            ax[k] = k;
    }
    if (pv) {
        if ((rc = ox_const_list(c, pv, "steps", sp, OX_MAX_LIST, &m)) != OX_OK)
            return rc;
        if (m != n)
            return ox_fail(c, "%d starts but %d steps", (int)n, (int)m);
    } else {
        for (int32_t k = 0; k < n; k++)
            sp[k] = 1;
    }
    if (is_const(x)) {
        ox_const r;
        if (ox_eval_slice(c, &x->c, n, st, en, ax, sp, &r) != OX_OK)
            return OX_ERR;
        return ox_set_const(c, 0, &r);
    }
    /* at run time: a split per sliced axis, keeping the middle part */
    int32_t cur = ox_tensor(c, x), last = -1;
    int32_t axes_n[OX_MAX_LIST];
    int64_t b[OX_MAX_LIST], e[OX_MAX_LIST], stp[OX_MAX_LIST];
    int32_t todo = 0, seen = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t a = 0;
        if (norm_axis(c, ax[k], xs->rank, &a) != OX_OK)
            return OX_ERR;
        if (seen & (1 << a)) /* each axis' split reads the dim as the input had it */
            return ox_fail(c, "axis %lld appears twice in the axes", (long long)ax[k]);
        seen |= 1 << a;
        if (sp[k] < 1)
            return ox_unsup(c, "a step of %lld at run time (positive steps only)", (long long)sp[k]);
        int64_t dim = xs->dims[a], lo = st[k], hi = en[k];
        if (lo < 0)
            lo += dim;
        if (hi < 0)
            hi = hi > INT64_MIN + dim ? hi + dim : 0;
        lo = lo < 0 ? 0 : lo > dim ? dim : lo;
        hi = hi < 0 ? 0 : hi > dim ? dim : hi;
        if (hi <= lo)
            return ox_unsup(c, "an empty slice at run time");
        if (sp[k] > 1 && (hi - lo - 1) / sp[k] == 0) /* one element: a step-1 slice */
            hi = lo + 1;
        int64_t step = hi - lo == 1 ? 1 : sp[k];
        if (lo == 0 && hi == dim && step == 1)
            continue;
        axes_n[todo] = a;
        b[todo] = lo;
        e[todo] = hi;
        stp[todo] = step;
        last = todo++;
    }
    if (todo == 0)
        return ox_set_alias(c, 0, x);
    for (int32_t k = 0; k < todo; k++) {
        const char *name = k == last ? out0(c) : NULL;
        rc = stp[k] == 1 ? slice_split(c, cur, axes_n[k], b[k], e[k] - b[k], name, &cur)
                         : slice_strided(c, cur, axes_n[k], b[k], e[k], stp[k], name, &cur);
        if (rc != OX_OK)
            return rc;
    }
    return ox_set_runtime(c, 0, cur, x->is_int);
}

static int cv_gather(ox_ctx *c) {
    ox_val *x, *idx;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &idx) != OX_OK)
        return OX_ERR;
    /* copies: adding nodes or weights moves the graph's tensor array */
    const ops_shape xs_v = *ox_shape(c, x), is_v = *ox_shape(c, idx), *xs = &xs_v, *is = &is_v;
    int64_t axis;
    int32_t a = 0;
    if (ox_attr_int(c, "axis", 0, &axis) != OX_OK || norm_axis(c, axis, xs->rank, &a) != OX_OK)
        return OX_ERR;
    int idx_int = is_const(idx) ? idx->c.is_int : idx->is_int;
    if (!idx_int)
        return ox_fail(c, "the indices '%s' are not integers", idx->name);
    if (xs->rank + is->rank - 1 > OPS_MAX_DIMS)
        return ox_unsup(c, "a result of rank %d (at most %d)", (int)(xs->rank + is->rank - 1), OPS_MAX_DIMS);
    if (is_const(x) && is_const(idx)) {
        ox_const r;
        if (ox_eval_gather(c, &x->c, &idx->c, a, &r) != OX_OK)
            return OX_ERR;
        return ox_set_const(c, 0, &r);
    }
    int data_int = is_const(x) ? x->c.is_int : x->is_int;
    int64_t perm[OPS_MAX_DIMS];
    perm[0] = a;
    for (int32_t d = 0, j = 1; d < xs->rank; d++)
        if (d != a)
            perm[j++] = d;
    /* the table: x with the gathered axis first */
    int32_t table;
    if (a == 0) {
        table = ox_tensor(c, x);
    } else if (is_const(x)) {
        ox_const r;
        if (ox_eval_transpose(c, &x->c, perm, &r) != OX_OK)
            return OX_ERR;
        table = helper_weight(c, "table", &r);
        ox_const_free(&r);
    } else {
        int rc = ox_transpose(c, ox_tensor(c, x), xs->rank, perm, NULL, &table);
        if (rc != OX_OK)
            return rc;
    }
    if (table < 0)
        return OX_ERR;
    /* the ids: constant ones checked and made non-negative here (the op reads [0, V)) */
    int32_t ids;
    if (is_const(idx)) {
        ox_const k;
        ox_const_copy(c, &k, &idx->c);
        int64_t v = xs->dims[a], n = ox_numel(&k.shape);
        for (int64_t j = 0; j < n; j++) {
            if (k.i[j] < -v || k.i[j] >= v) {
                long long bad = (long long)k.i[j];
                ox_const_free(&k);
                return ox_fail(c, "index %lld is out of range for a dimension of %lld", bad, (long long)v);
            }
            if (k.i[j] < 0)
                k.i[j] += v;
        }
        ids = helper_weight(c, "ids", &k);
        ox_const_free(&k);
        if (ids < 0)
            return OX_ERR;
    } else {
        ids = ox_tensor(c, idx);
    }
    int32_t q = is->rank;
    int need_t = a != 0 && q > 0;
    int32_t in[2] = {table, ids}, g;
    int32_t outs[OPS_MAX_OUTPUTS];
    const char *names[1] = {need_t ? NULL : out0(c)};
    int rc = ox_node(c, OP_GATHER, NULL, 2, in, names, outs);
    if (rc != OX_OK)
        return rc;
    g = outs[0];
    if (need_t) { /* (idx..., pre..., post...) -> (pre..., idx..., post...) */
        int32_t r = c->g->tensors[g].shape.rank, j = 0;
        int64_t tp[OPS_MAX_DIMS];
        for (int32_t d = 0; d < a; d++)
            tp[j++] = q + d;
        for (int32_t d = 0; d < q; d++)
            tp[j++] = d;
        for (int32_t d = q + a; d < r; d++)
            tp[j++] = d;
        rc = ox_transpose(c, g, r, tp, out0(c), &g);
        if (rc != OX_OK)
            return rc;
    }
    return ox_set_runtime(c, 0, g, data_int);
}

/* Output 0 = the constant x padded by full (begins then ends per dim, >= 0) with value. */
static int pad_const(ox_ctx *c, ox_val *x, const int64_t *full, float value) {
    int32_t r = x->c.shape.rank;
    ops_shape s = x->c.shape;
    for (int32_t d = 0; d < r; d++) {
        if (full[d] < 0 || full[r + d] < 0)
            return ox_unsup(c, "negative pads (cropping)");
        if (base_add_i64(s.dims[d], full[d], &s.dims[d]) < 0 || base_add_i64(s.dims[d], full[r + d], &s.dims[d]) < 0)
            return ox_fail(c, "the pads of dimension %d overflow int64", (int)d);
    }
    if (ox_check_fold(c, &s, x->c.is_int) != OX_OK || ox_const_load(c, &x->c) != OX_OK)
        return OX_ERR;
    ox_const k;
    ox_const_alloc(&k, &s, x->c.is_int);
    int64_t n = ox_numel(&s), idx[OPS_MAX_DIMS] = {0}, xst[OPS_MAX_DIMS], acc = 1;
    for (int32_t d = r - 1; d >= 0; d--) {
        xst[d] = acc;
        acc *= x->c.shape.dims[d];
    }
    for (int64_t o = 0; o < n; o++) {
        int64_t src = 0;
        int inside = 1;
        for (int32_t d = 0; d < r; d++) {
            int64_t q = idx[d] - full[d];
            inside &= q >= 0 && q < x->c.shape.dims[d];
            src += q * xst[d];
        }
        if (k.is_int)
            k.i[o] = inside ? x->c.i[src] : (int64_t)value;
        else
            k.f[o] = inside ? x->c.f[src] : value;
        for (int32_t d = r - 1; d >= 0; d--) { /* next index */
            if (++idx[d] < s.dims[d])
                break;
            idx[d] = 0;
        }
    }
    k.synthetic = x->c.synthetic;
    return ox_set_const(c, 0, &k);
}

/* The pad parameters of pads full (begins, then ends, >= 0) over rank r dims. */
static void pad_params(ops_params *p, int32_t r, const int64_t *full, int mode, float val) {
    ops_params_default(OP_PAD, p);
    p->v[PM_MODE] = mode;
    p->v[PM_VALUE] = ops_f2p(val);
    p->n_list = 2 * r;
    for (int32_t k = 0; k < 2 * r; k++)
        p->list[k] = full[k];
}

/* Output 0 = the float constant x padded by reflection (mode 1) or its edge (2), by the CPU reference. */
static int pad_fold(ox_ctx *c, ox_val *x, const int64_t *full, int mode) {
    int32_t r = x->c.shape.rank;
    if (x->c.is_int || r > OPS_MAX_LIST / 2)
        return ox_unsup(c, "%s padding of the %s constant '%s'", mode == 1 ? "reflect" : "edge",
                        x->c.is_int ? "integer" : "rank > 4", x->name);
    ops_params p;
    pad_params(&p, r, full, mode, 0.0f);
    return fold_table(c, OP_PAD, &p, 1, &x);
}

/* Output 0 = the runtime x padded by full (>= 0) as a pad node. Above pad's rank 4, neighbouring
 * dims without padding are merged first (a reshape around the node), so a tensor of any rank whose
 * padded dims, after merging, number at most four is taken. */
static int pad_emit(ox_ctx *c, ox_val *x, const int64_t *full, int mode, float val) {
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    const ops_shape xs = *ox_shape(c, x);
    const int32_t r = xs.rank;
    int64_t md[OPS_MAX_DIMS], mf[2 * OPS_MAX_DIMS], me[OPS_MAX_DIMS];
    int32_t m = 0;
    for (int32_t d = 0; d < r; d++) {
        int padded = full[d] || full[r + d];
        if (r > OPS_MAX_LIST / 2 && !padded && m > 0 && !mf[m - 1] && !me[m - 1]) {
            md[m - 1] *= xs.dims[d];
            continue;
        }
        md[m] = xs.dims[d];
        mf[m] = full[d];
        me[m++] = full[r + d];
    }
    if (m > OPS_MAX_LIST / 2)
        return ox_unsup(c, "pads on a rank-%d input that leave %d dims after merging unpadded neighbours (at most %d)",
                        (int)r, (int)m, OPS_MAX_LIST / 2);
    for (int32_t k = 0; k < m; k++)
        mf[m + k] = me[k];
    ops_params p;
    pad_params(&p, m, mf, mode, val);
    ops_shape ms = ops_shape_make(m, md);
    int rc = OX_OK;
    int32_t t = tensor_as(c, x, &ms, &rc);
    if (t < 0)
        return rc != OX_OK ? rc : OX_ERR;
    if (m == r)
        return emit1(c, OP_PAD, &p, 1, &t, 0);
    int32_t o;
    if ((rc = ox_helper(c, OP_PAD, &p, 1, &t, &o)) != OX_OK)
        return rc;
    ops_shape os = xs;
    for (int32_t d = 0; d < r; d++)
        os.dims[d] += full[d] + full[r + d]; /* each padded dim's sum was checked by pad's shape inference */
    if ((rc = ox_reshape(c, o, &os, out0(c), &o)) != OX_OK)
        return rc;
    return ox_set_runtime(c, 0, o, 0);
}

static int cv_pad(ox_ctx *c) {
    ox_val *x, *pv;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &pv) != OX_OK)
        return OX_ERR;
    char mode[32];
    if (ox_attr_str(c, "mode", "constant", mode, sizeof mode) != OX_OK)
        return OX_ERR;
    const int pm = !strcmp(mode, "constant") ? 0 : !strcmp(mode, "reflect") ? 1 : !strcmp(mode, "edge") ? 2 : -1;
    if (pm < 0)
        return ox_unsup(c, "attribute mode = '%s' (supported: constant, reflect, edge)", mode);
    ox_val *cv = pm == 0 ? ox_in(c, 2) : NULL; /* the value is read in constant mode only */
    float val = 0.0f;
    if (cv) {
        if (!is_const(cv) || ox_numel(&cv->c.shape) != 1)
            return ox_unsup(c, "a pad value computed at run time");
        float *f = NULL;
        if (ox_const_floats(c, &cv->c, &f) != OX_OK)
            return OX_ERR;
        val = f[0];
        free(f);
    }
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    int32_t r = xs->rank;
    int64_t pads[2 * OX_MAX_LIST];
    int32_t n = 0;
    int rc = ox_const_list(c, pv, "pads", pads, 2 * OX_MAX_LIST, &n);
    if (rc != OX_OK)
        return rc;
    int64_t full[2 * OPS_MAX_DIMS] = {0};
    ox_val *av = ox_in(c, 3);
    if (av) {
        int64_t axes[OX_MAX_LIST];
        int32_t m = 0;
        if ((rc = ox_const_list(c, av, "axes", axes, OX_MAX_LIST, &m)) != OX_OK)
            return rc;
        if (n != 2 * m)
            return ox_fail(c, "%d pads for %d axes", (int)n, (int)m);
        for (int32_t k = 0; k < m; k++) {
            int32_t aa = 0;
            if (norm_axis(c, axes[k], r, &aa) != OX_OK)
                return OX_ERR;
            full[aa] = pads[k];
            full[r + aa] = pads[m + k];
        }
    } else {
        if (n != 2 * r)
            return ox_fail(c, "%d pads for rank %d", (int)n, (int)r);
        for (int32_t k = 0; k < n; k++)
            full[k] = pads[k];
    }
    int any = 0;
    for (int32_t k = 0; k < 2 * r; k++)
        any |= full[k] != 0;
    if (!any)
        return ox_set_alias(c, 0, x);
    for (int32_t k = 0; k < 2 * r; k++)
        if (full[k] < 0)
            return ox_unsup(c, "negative pads (cropping)");
    for (int32_t d = 0; d < r && pm == 1; d++) /* checked here to name the model's dim, not a merged one */
        if (full[d] >= xs->dims[d] || full[r + d] >= xs->dims[d])
            return ox_fail(c, "reflect pads %lld, %lld of dim %d must be smaller than the dim (%lld)",
                           (long long)full[d], (long long)full[r + d], (int)d, (long long)xs->dims[d]);
    if (is_const(x)) /* a padded constant (an enlarged kernel, say) is evaluated here */
        return pm == 0 ? pad_const(c, x, full, val) : pad_fold(c, x, full, pm);
    /* A zero padding of an NCHW tensor's spatial dims stays pending: a Conv reading it takes it
     * as its own padding; any other consumer gets a pad node (onnx_import.c ox_apply_pad). */
    if (pm == 0 && val == 0.0f && r == 4 && !full[0] && !full[1] && !full[4] && !full[5]) {
        int64_t add[4] = {full[2], full[3], full[6], full[7]}; /* top, left, bottom, right */
        return ox_set_padded(c, 0, x, add);
    }
    return pad_emit(c, x, full, pm, val);
}

/* ---------------------------------------------------------------------------------------------
 * normalisation, softmax, clip
 */
static int cv_softmax(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    int64_t axis;
    int32_t a = 0;
    if (ox_attr_int(c, "axis", -1, &axis) != OX_OK || norm_axis(c, axis, ox_shape(c, x)->rank, &a) != OX_OK)
        return OX_ERR;
    ops_params p;
    ops_params_default(OP_SOFTMAX, &p);
    p.v[PM_AXIS] = a;
    if (is_const(x))
        return fold_table(c, OP_SOFTMAX, &p, 1, &x);
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    int32_t t = ox_tensor(c, x);
    return emit1(c, OP_SOFTMAX, &p, 1, &t, 0);
}

/* A per-position parameter (scale, bias) seen with the shape want: constants are broadcast at
 * import; a runtime tensor must already have that shape. */
static int param_as(ox_ctx *c, ox_val *v, const ops_shape *want, ox_val **tmp_holder, int32_t *t) {
    (void)tmp_holder;
    if (ops_shape_eq(ox_shape(c, v), want)) {
        *t = ox_tensor(c, v);
        return *t < 0 ? OX_ERR : OX_OK;
    }
    if (!is_const(v))
        return ox_unsup(c, "'%s' has to be broadcast at run time", v->name);
    ox_const r;
    ops_shape b;
    if (ox_broadcast(c, &v->c.shape, want, &b) != OX_OK)
        return OX_ERR;
    if (!ops_shape_eq(&b, want))
        return ox_fail(c, "'%s' does not broadcast to the normalised shape", v->name);
    if (ox_eval_expand(c, &v->c, want, &r) != OX_OK)
        return OX_ERR;
    *t = helper_weight(c, "param", &r);
    ox_const_free(&r);
    return *t < 0 ? OX_ERR : OX_OK;
}

static int cv_layernorm(ox_ctx *c) {
    ox_val *x, *sc, *b;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &sc) != OX_OK)
        return OX_ERR;
    b = ox_in(c, 2);
    if (ox_out_used(c, 1) || ox_out_used(c, 2))
        return ox_unsup(c, "the Mean / InvStdDev outputs");
    int64_t axis, stash;
    float eps;
    int32_t a = 0;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    if (ox_attr_int(c, "axis", -1, &axis) != OX_OK || norm_axis(c, axis, xs->rank, &a) != OX_OK ||
        ox_attr_float(c, "epsilon", 1e-5f, &eps) != OX_OK || ox_attr_int(c, "stash_type", 1, &stash) != OX_OK)
        return OX_ERR;
    if (stash != 1)
        return ox_unsup(c, "stash_type %lld (float32 statistics only)", (long long)stash);
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    ops_params p;
    ops_params_default(OP_LAYERNORM, &p);
    p.v[PM_AXIS] = a;
    p.v[PM_EPS] = ops_f2p(eps);
    if (is_const(x) && is_const(sc) && (!b || is_const(b))) {
        ox_val *vs[3] = {x, sc, b};
        ox_const gs, bs;
        ops_shape tail = ops_shape_make(xs->rank - a, xs->dims + a);
        /* broadcast the constant parameters first, as at run time */
        if (ox_eval_expand(c, &sc->c, &tail, &gs) != OX_OK)
            return OX_ERR;
        ox_val tg = *sc, tb;
        tg.c = gs;
        vs[1] = &tg;
        if (b) {
            if (ox_eval_expand(c, &b->c, &tail, &bs) != OX_OK) {
                ox_const_free(&gs);
                return OX_ERR;
            }
            tb = *b;
            tb.c = bs;
            vs[2] = &tb;
        }
        int rc = fold_table(c, OP_LAYERNORM, &p, b ? 3 : 2, vs);
        ox_const_free(&gs);
        if (b)
            ox_const_free(&bs);
        return rc;
    }
    ops_shape tail = ops_shape_make(xs->rank - a, xs->dims + a);
    int32_t in[3] = {ox_tensor(c, x), -1, -1};
    int rc = param_as(c, sc, &tail, NULL, &in[1]);
    if (rc == OX_OK && b)
        rc = param_as(c, b, &tail, NULL, &in[2]);
    if (rc != OX_OK)
        return rc;
    return emit1(c, OP_LAYERNORM, &p, b ? 3 : 2, in, 0);
}

/* ---------------------------------------------------------------------------------------------
 * InstanceNormalization and GroupNormalization, as layernorm over the trailing dims and a
 * per-channel ewmul / ewadd: existing ops, so their kernels, fusions and rules apply.
 */
/* One step of a decomposition: the last one defines output 0 (the ONNX name), the others are
 * helpers; *cur is the step's input and becomes its output. */
static int norm_step(ox_ctx *c, ops_type op, const ops_params *p, int32_t w, int last, int32_t *cur) {
    int32_t in[2] = {*cur, w};
    if (last)
        return emit1(c, op, p, w >= 0 ? 2 : 1, in, 0);
    return ox_helper(c, op, p, w >= 0 ? 2 : 1, in, cur);
}

/* 1 if v is a constant with every value ident and real values (not made up by --random-weights:
 * those keep their op, as the model has it). */
static int norm_identity(ox_ctx *c, ox_val *v, float ident) {
    if (!is_const(v) || v->c.is_int || v->c.synthetic)
        return 0;
    float *f = NULL;
    if (ox_const_floats(c, &v->c, &f) != OX_OK)
        return 0; /* the weight's own error comes back when it is used */
    int64_t n = ox_numel(&v->c.shape), k = 0;
    while (k < n && f[k] == ident)
        k++;
    free(f);
    return k == n;
}

/* The affine parameter v of a normalisation over x (rank r, C channels): v has n values (C, or
 * the number of groups, each value then repeated over its C / n channels); *t becomes a
 * (C, 1, ..., 1) tensor of rank r - 1, or -1 when v is the identity value ident. */
static int norm_param(ox_ctx *c, ox_val *v, const char *what, int64_t n, int64_t C, int32_t r, float ident,
                      int32_t *t) {
    *t = -1;
    char b[160];
    const ops_shape *vs = ox_shape(c, v);
    if (vs->rank != 1 || vs->dims[0] != n)
        return ox_fail(c, "%s '%s' has the shape %s, not (%lld)", what, v->name, ops_shape_str(vs, b, sizeof b),
                       (long long)n);
    if (refuse_int(c, v) != OX_OK)
        return OX_UNSUP;
    if (norm_identity(c, v, ident))
        return OX_OK;
    int64_t d[OPS_MAX_DIMS];
    for (int32_t k = 0; k < r - 1; k++)
        d[k] = k ? 1 : C;
    ops_shape cs = ops_shape_make(r - 1, d);
    int rc = OX_OK;
    if (n == C) {
        *t = tensor_as(c, v, &cs, &rc);
        return rc;
    }
    if (!is_const(v))
        return ox_unsup(c, "a per-group %s '%s' computed at run time", what, v->name);
    float *f = NULL;
    if (ox_const_floats(c, &v->c, &f) != OX_OK)
        return OX_ERR;
    ox_const k;
    ox_const_alloc(&k, &cs, 0);
    for (int64_t ch = 0; ch < C; ch++)
        k.f[ch] = f[ch / (C / n)];
    k.synthetic = v->c.synthetic;
    free(f);
    *t = helper_weight(c, what, &k);
    ox_const_free(&k);
    return *t < 0 ? OX_ERR : OX_OK;
}

/* The normalisation of x, read as (N, C, D...): the layernorm node (axis 2, epsilon eps) over
 * *cur, reshaped to grouped first when grouped holds a shape, back to x's shape, then * scale +
 * bias (per channel, tensors of norm_param; -1: left out). */
static int norm_emit(ox_ctx *c, int32_t *cur, const ops_shape *grouped, const ops_shape *xs, float eps,
                     int32_t scale, int32_t bias) {
    ops_params p;
    ops_params_default(OP_LAYERNORM, &p);
    p.v[PM_AXIS] = 2;
    p.v[PM_EPS] = ops_f2p(eps);
    int rc = grouped ? ox_reshape(c, *cur, grouped, NULL, cur) : OX_OK;
    int tail = scale < 0 && bias < 0; /* the last step */
    if (rc == OX_OK)
        rc = norm_step(c, OP_LAYERNORM, &p, -1, tail && !grouped, cur);
    if (rc == OX_OK && grouped)
        rc = ox_reshape(c, *cur, xs, tail ? out0(c) : NULL, cur);
    if (rc == OX_OK && grouped && tail)
        return ox_set_runtime(c, 0, *cur, 0);
    if (rc == OX_OK && scale >= 0)
        rc = norm_step(c, OP_EWMUL, NULL, scale, bias < 0, cur);
    if (rc == OX_OK && bias >= 0)
        rc = norm_step(c, OP_EWADD, NULL, bias, 1, cur);
    return rc;
}

/* The input of a normalisation: a float tensor at run time of rank >= min_rank (N, C, ...). */
static int norm_input(ox_ctx *c, int32_t min_rank, ox_val **x, float *eps) {
    if (need_in(c, 0, x) != OX_OK || ox_attr_float(c, "epsilon", 1e-5f, eps) != OX_OK)
        return OX_ERR;
    if (!(*eps >= 0.0f) || !isfinite(*eps))
        return ox_fail(c, "epsilon %g must be a finite number >= 0", (double)*eps);
    if (refuse_int(c, *x) != OX_OK)
        return OX_UNSUP;
    if (is_const(*x))
        return ox_unsup(c, "%s of a constant tensor (only run-time inputs)", c->node->op_type);
    char b[160];
    const ops_shape *xs = ox_shape(c, *x);
    if (xs->rank < min_rank || ox_numel(xs) == 0)
        return ox_fail(c, "input '%s' has the shape %s: %s needs (N, C%s), none of them 0", (*x)->name,
                       ops_shape_str(xs, b, sizeof b), c->node->op_type, min_rank > 2 ? ", D1, ..." : ", ...");
    return OX_OK;
}

/* InstanceNormalization: (x - mean) / sqrt(var + eps) over each (n, c)'s D1... , * scale[c] +
 * B[c]; a scale of ones and a B of zeros (torch's GroupNorm export feeds it those) are left out. */
static int cv_instancenorm(ox_ctx *c) {
    ox_val *x, *sc, *b;
    float eps;
    int rc = norm_input(c, 3, &x, &eps);
    if (rc != OX_OK)
        return rc;
    if (need_in(c, 1, &sc) != OX_OK || need_in(c, 2, &b) != OX_OK)
        return OX_ERR;
    const ops_shape xs = *ox_shape(c, x); /* a copy: the tensor array may move */
    int32_t ts = -1, tb = -1, cur = ox_tensor(c, x);
    if ((rc = norm_param(c, sc, "scale", xs.dims[1], xs.dims[1], xs.rank, 1.0f, &ts)) != OX_OK ||
        (rc = norm_param(c, b, "B", xs.dims[1], xs.dims[1], xs.rank, 0.0f, &tb)) != OX_OK)
        return rc;
    return norm_emit(c, &cur, NULL, &xs, eps, ts, tb);
}

/* GroupNormalization (opset 18: scale and bias per group): x (N, C, D...) reshaped to (N, G, -1),
 * layernorm over the last axis, reshaped back, * scale + bias with each group's value repeated
 * over its C / G channels. */
static int cv_groupnorm(ox_ctx *c) {
    ox_val *x, *sc, *b;
    float eps;
    int64_t groups;
    int rc = norm_input(c, 2, &x, &eps);
    if (rc != OX_OK)
        return rc;
    if (need_in(c, 1, &sc) != OX_OK || need_in(c, 2, &b) != OX_OK)
        return OX_ERR;
    if (!ox_attr(c, "num_groups"))
        return ox_fail(c, "the attribute num_groups is missing");
    if (ox_attr_int(c, "num_groups", 0, &groups) != OX_OK)
        return OX_ERR;
    const ops_shape xs = *ox_shape(c, x);
    int64_t C = xs.dims[1];
    if (groups < 1 || C % groups)
        return ox_fail(c, "num_groups %lld does not divide the %lld channels", (long long)groups, (long long)C);
    int32_t ts = -1, tb = -1, cur = ox_tensor(c, x);
    if ((rc = norm_param(c, sc, "scale", groups, C, xs.rank, 1.0f, &ts)) != OX_OK ||
        (rc = norm_param(c, b, "bias", groups, C, xs.rank, 0.0f, &tb)) != OX_OK)
        return rc;
    int64_t gd[3] = {xs.dims[0], groups, ox_numel(&xs) / (xs.dims[0] * groups)};
    ops_shape gs = ops_shape_make(3, gd);
    return norm_emit(c, &cur, ops_shape_eq(&gs, &xs) ? NULL : &gs, &xs, eps, ts, tb);
}

static int cv_batchnorm(ox_ctx *c) {
    ox_val *v[5];
    for (int k = 0; k < 5; k++)
        if (need_in(c, k, &v[k]) != OX_OK)
            return OX_ERR;
    for (int k = 1; k < 5; k++)
        if (ox_out_used(c, k))
            return ox_unsup(c, "the running statistics outputs (training mode)");
    int64_t training;
    float eps, mom;
    if (ox_attr_float(c, "epsilon", 1e-5f, &eps) != OX_OK || ox_attr_float(c, "momentum", 0.9f, &mom) != OX_OK ||
        ox_attr_int(c, "training_mode", 0, &training) != OX_OK)
        return OX_ERR;
    if (training)
        return ox_unsup(c, "training_mode = 1");
    if (refuse_int(c, v[0]) != OX_OK)
        return OX_UNSUP;
    ops_params p;
    ops_params_default(OP_BATCHNORM, &p);
    p.v[PM_EPS] = ops_f2p(eps);
    /* made-up variances (missing data) are ones: random ones could be negative */
    ox_val ones_v;
    ox_const ones;
    int have_ones = 0;
    if (is_const(v[4]) && v[4]->c.synthetic) {
        ox_const_alloc(&ones, &v[4]->c.shape, 0);
        for (int64_t j = 0; j < ox_numel(&ones.shape); j++)
            ones.f[j] = 1.0f;
        ones_v = *v[4];
        ones_v.c = ones;
        ones_v.t = -1;
        v[4] = &ones_v;
        have_ones = 1;
    }
    int rc;
    if (all_const(c, 0, 5) && !have_ones) {
        rc = fold_table(c, OP_BATCHNORM, &p, 5, v);
    } else {
        int32_t in[5];
        for (int k = 0; k < 5; k++)
            in[k] = v[k] == &ones_v ? helper_weight(c, "var", &ones) : ox_tensor(c, v[k]);
        rc = emit1(c, OP_BATCHNORM, &p, 5, in, 0);
    }
    if (have_ones)
        ox_const_free(&ones);
    return rc;
}

/* A constant scalar bound of Clip, or the default. */
static int clip_bound(ox_ctx *c, int k, float def, float *out) {
    ox_val *v = ox_in(c, k);
    *out = def;
    if (!v)
        return OX_OK;
    if (!is_const(v) || ox_numel(&v->c.shape) != 1)
        return ox_unsup(c, "a bound computed at run time");
    float *f = NULL;
    if (ox_const_floats(c, &v->c, &f) != OX_OK)
        return OX_ERR;
    *out = f[0];
    free(f);
    return OX_OK;
}

static int cv_clip(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    float lo, hi;
    int rc = clip_bound(c, 1, -INFINITY, &lo);
    if (rc == OX_OK)
        rc = clip_bound(c, 2, INFINITY, &hi);
    if (rc != OX_OK)
        return rc;
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    ops_params p;
    ops_params_default(OP_CLIP, &p);
    p.v[PM_LO] = ops_f2p(lo);
    p.v[PM_HI] = ops_f2p(hi);
    if (is_const(x))
        return fold_table(c, OP_CLIP, &p, 1, &x);
    int32_t t = ox_tensor(c, x);
    return emit1(c, OP_CLIP, &p, 1, &t, 0);
}

/* HardSigmoid, max(0, min(1, alpha * x + beta)) (ONNX defaults alpha 0.2, beta 0.5; torch's
 * hardsigmoid exports alpha 1/6): smul by alpha, ewadd of a one-element beta, clip to [0, 1].
 * Three existing ops rather than one of its own, so their kernels, fusions and rules apply. */
static int cv_hardsigmoid(ox_ctx *c) {
    ox_val *x;
    float alpha, beta;
    if (need_in(c, 0, &x) != OX_OK || ox_attr_float(c, "alpha", 0.2f, &alpha) != OX_OK ||
        ox_attr_float(c, "beta", 0.5f, &beta) != OX_OK)
        return OX_ERR;
    if (!isfinite(alpha) || !isfinite(beta))
        return ox_fail(c, "alpha %g and beta %g must be finite numbers", (double)alpha, (double)beta);
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    if (is_const(x))
        return ox_unsup(c, "HardSigmoid of a constant tensor (only run-time inputs)");
    int32_t in[2] = {ox_tensor(c, x), scalar_weight(c, "alpha", alpha)}, scaled = -1, shifted = -1;
    if (in[0] < 0 || in[1] < 0 || ox_helper(c, OP_SMUL, NULL, 2, in, &scaled) != OX_OK)
        return OX_ERR;
    in[0] = scaled;
    in[1] = scalar_weight(c, "beta", beta);
    if (in[1] < 0 || ox_helper(c, OP_EWADD, NULL, 2, in, &shifted) != OX_OK)
        return OX_ERR;
    ops_params p;
    ops_params_default(OP_CLIP, &p);
    p.v[PM_LO] = ops_f2p(0.0f);
    p.v[PM_HI] = ops_f2p(1.0f);
    return emit1(c, OP_CLIP, &p, 1, &shifted, 0);
}

/* ---------------------------------------------------------------------------------------------
 * convolution and pooling
 */
typedef struct {
    int64_t k[2], s[2], d[2], pad[4]; /* (h, w) pairs; pad t, l, b, r */
} ox_win;

/* The window's strides and explicit pads into p, which Conv and the pools set alike. */
static void window_params(const ox_win *w, ops_params *p) {
    p->v[PM_STRIDE_H] = w->s[0];
    p->v[PM_STRIDE_W] = w->s[1];
    p->v[PM_PAD] = OPS_PAD_EXPLICIT;
    p->v[PM_PAD_T] = w->pad[0];
    p->v[PM_PAD_L] = w->pad[1];
    p->v[PM_PAD_B] = w->pad[2];
    p->v[PM_PAD_R] = w->pad[3];
}

/* Window attributes of a 2-D Conv or pool on input spatial dims in[2]; kernel k given. */
static int window_attrs(ox_ctx *c, int32_t sp, const int64_t *in, ox_win *w) {
    int64_t v[8];
    int32_t n;
    for (int i = 0; i < 2; i++) {
        w->s[i] = w->d[i] = 1;
    }
    memset(w->pad, 0, sizeof w->pad);
    /* a 1-D window is the 2-D one with height 1: ONNX values go to the width */
    int32_t off = 2 - sp;
    int rc = ox_attr_ints(c, "strides", v, 8, &n);
    if (rc != OX_OK)
        return rc;
    if (n >= 0 && n != sp)
        return ox_fail(c, "strides has %d values for %d spatial dims", (int)n, (int)sp);
    for (int32_t i = 0; i < n; i++)
        w->s[off + i] = v[i];
    if ((rc = ox_attr_ints(c, "dilations", v, 8, &n)) != OX_OK)
        return rc;
    if (n >= 0 && n != sp)
        return ox_fail(c, "dilations has %d values for %d spatial dims", (int)n, (int)sp);
    for (int32_t i = 0; i < n; i++)
        w->d[off + i] = v[i];
    for (int i = 0; i < 2; i++) {
        if (w->s[i] < 1 || w->d[i] < 1)
            return ox_fail(c, "strides and dilations must be positive");
        if (w->s[i] > OX_MAX_WINDOW || w->d[i] > OX_MAX_WINDOW || w->k[i] > OX_MAX_WINDOW)
            return ox_fail(c, "a stride, dilation or kernel size over %lld", (long long)OX_MAX_WINDOW);
    }
    char ap[32];
    if ((rc = ox_attr_str(c, "auto_pad", "NOTSET", ap, sizeof ap)) != OX_OK)
        return rc;
    if (!strcmp(ap, "NOTSET")) {
        if ((rc = ox_attr_ints(c, "pads", v, 8, &n)) != OX_OK)
            return rc;
        if (n >= 0 && n != 2 * sp)
            return ox_fail(c, "pads has %d values for %d spatial dims", (int)n, (int)sp);
        if (n > 0) { /* ONNX: [h_begin, w_begin, h_end, w_end] */
            for (int32_t i = 0; i < sp; i++) {
                int32_t dim = off + i;
                w->pad[dim == 0 ? 0 : 1] = v[i];
                w->pad[dim == 0 ? 2 : 3] = v[sp + i];
            }
        }
        for (int i = 0; i < 4; i++)
            if (w->pad[i] < 0)
                return ox_unsup(c, "negative pads");
            else if (w->pad[i] > OX_MAX_WINDOW)
                return ox_fail(c, "a pad of %lld (at most %lld)", (long long)w->pad[i], (long long)OX_MAX_WINDOW);
    } else if (!strcmp(ap, "VALID")) {
        /* no padding */
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int i = 0; i < 2; i++) {
            int64_t o = (in[i] + w->s[i] - 1) / w->s[i];
            int64_t total = (o - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in[i];
            if (total < 0)
                total = 0;
            int64_t small = total / 2, big = total - small;
            int upper = !strcmp(ap, "SAME_UPPER");
            w->pad[i == 0 ? 0 : 1] = upper ? small : big;
            w->pad[i == 0 ? 2 : 3] = upper ? big : small;
        }
    } else {
        return ox_fail(c, "auto_pad '%s' is not an ONNX value", ap);
    }
    return OX_OK;
}

static int cv_conv(ox_ctx *c) {
    ox_val *x, *w, *b;
    if (need_in(c, 0, &x) != OX_OK || need_in(c, 1, &w) != OX_OK)
        return OX_ERR;
    b = ox_in(c, 2);
    /* copies: adding nodes or weights moves the graph's tensor array */
    const ops_shape xs_v = *ox_shape(c, x), ws_v = *ox_shape(c, w), *xs = &xs_v, *ws = &ws_v;
    if (xs->rank != 4 && xs->rank != 3)
        return ox_unsup(c, "a %d-D convolution (1-D and 2-D only)", (int)xs->rank - 2);
    if (ws->rank != xs->rank)
        return ox_fail(c, "the weight has rank %d, the input %d", (int)ws->rank, (int)xs->rank);
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    int32_t sp = xs->rank - 2;
    ox_win win;
    int64_t in_sp[2] = {sp == 2 ? xs->dims[2] : 1, xs->dims[xs->rank - 1]};
    win.k[0] = sp == 2 ? ws->dims[2] : 1;
    win.k[1] = ws->dims[ws->rank - 1];
    int64_t ks[8];
    int32_t nk;
    int rc = ox_attr_ints(c, "kernel_shape", ks, 8, &nk);
    if (rc != OX_OK)
        return rc;
    if (nk >= 0) {
        if (nk != sp)
            return ox_fail(c, "kernel_shape has %d values for %d spatial dims", (int)nk, (int)sp);
        for (int32_t i = 0; i < sp; i++)
            if (ks[i] != ws->dims[2 + i])
                return ox_fail(c, "kernel_shape does not match the weight's shape");
    }
    if ((rc = window_attrs(c, sp, in_sp, &win)) != OX_OK)
        return rc;
    if (x->has_pad) { /* a folded Pad: zeros added before the conv are more conv padding */
        if (sp != 2)
            return ox_fail(c, "a padded 1-D input");
        for (int i = 0; i < 4; i++)
            win.pad[i] += x->pad[i];
    }
    int64_t group;
    if (ox_attr_int(c, "group", 1, &group) != OX_OK)
        return OX_ERR;
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    window_params(&win, &p);
    p.v[PM_DIL_H] = win.d[0];
    p.v[PM_DIL_W] = win.d[1];
    p.v[PM_GROUPS] = group;
    p.v[PM_ACT] = OPS_ACT_NONE;
    if (sp == 2 && is_const(x) && is_const(w) && (!b || is_const(b))) {
        ox_val *vs[3] = {x, w, b};
        return fold_table(c, OP_CONV2D, &p, b ? 3 : 2, vs);
    }
    int32_t in[3], n_in = b ? 3 : 2;
    if (sp == 2) {
        in[0] = ox_tensor(c, x);
        in[1] = ox_tensor(c, w);
    } else { /* (N,C,L) -> (N,C,1,L); (F,C/g,K) -> (F,C/g,1,K) */
        int64_t xd[4] = {xs->dims[0], xs->dims[1], 1, xs->dims[2]}, wd[4] = {ws->dims[0], ws->dims[1], 1, ws->dims[2]};
        ops_shape x4 = ops_shape_make(4, xd), w4 = ops_shape_make(4, wd);
        in[0] = tensor_as(c, x, &x4, &rc);
        if (rc == OX_OK)
            in[1] = tensor_as(c, w, &w4, &rc);
        if (rc != OX_OK)
            return rc;
    }
    if (b)
        in[2] = ox_tensor(c, b);
    if (in[0] < 0 || in[1] < 0 || (b && in[2] < 0))
        return OX_ERR;
    int32_t outs[OPS_MAX_OUTPUTS];
    const char *names[1] = {sp == 2 ? out0(c) : NULL};
    if ((rc = ox_node(c, OP_CONV2D, &p, n_in, in, names, outs)) != OX_OK)
        return rc;
    if (sp == 1) {
        const ops_shape *o4 = &c->g->tensors[outs[0]].shape;
        int64_t od[3] = {o4->dims[0], o4->dims[1], o4->dims[3]};
        ops_shape o3 = ops_shape_make(3, od);
        if ((rc = ox_reshape(c, outs[0], &o3, out0(c), &outs[0])) != OX_OK)
            return rc;
    }
    return ox_set_runtime(c, 0, outs[0], 0);
}

static int cv_pool(ox_ctx *c) {
    int is_max = !strcmp(c->node->op_type, "MaxPool");
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    if (is_max && ox_out_used(c, 1))
        return ox_unsup(c, "the Indices output");
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    if (xs->rank != 4)
        return ox_unsup(c, "a %d-D pooling (2-D only)", (int)xs->rank - 2);
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    int64_t ks[8];
    int32_t nk;
    int rc = ox_attr_ints(c, "kernel_shape", ks, 8, &nk);
    if (rc != OX_OK)
        return rc;
    if (nk != 2)
        return ox_fail(c, "kernel_shape must have 2 values");
    ox_win win;
    win.k[0] = ks[0];
    win.k[1] = ks[1];
    if (ks[0] < 1 || ks[1] < 1)
        return ox_fail(c, "kernel_shape must be positive");
    int64_t in_sp[2] = {xs->dims[2], xs->dims[3]};
    if ((rc = window_attrs(c, 2, in_sp, &win)) != OX_OK)
        return rc;
    if (win.d[0] != 1 || win.d[1] != 1)
        return ox_unsup(c, "dilated pooling");
    int64_t ceil_mode, count_pad = 0;
    if (ox_attr_int(c, "ceil_mode", 0, &ceil_mode) != OX_OK ||
        (!is_max && ox_attr_int(c, "count_include_pad", 0, &count_pad) != OX_OK))
        return OX_ERR;
    if (ceil_mode) { /* more padding at the end gives the extra windows (their padded cells are skipped) */
        for (int i = 0; i < 2; i++) {
            int64_t p0 = win.pad[i == 0 ? 0 : 1], p1 = win.pad[i == 0 ? 2 : 3];
            int64_t span = in_sp[i] + p0 + p1 - win.k[i];
            if (span < 0)
                return ox_fail(c, "the window is larger than the padded input");
            int64_t o = (span + win.s[i] - 1) / win.s[i] + 1;
            if ((o - 1) * win.s[i] >= in_sp[i] + p0) /* the last window must start inside */
                o--;
            int64_t extra = (o - 1) * win.s[i] + win.k[i] - (in_sp[i] + p0 + p1);
            if (extra > 0) {
                if (count_pad)
                    return ox_unsup(c, "ceil_mode with count_include_pad where it adds windows");
                win.pad[i == 0 ? 2 : 3] += extra;
            }
        }
    }
    for (int i = 0; i < 4; i++)
        if (win.pad[i] >= win.k[i % 2 == 0 ? 0 : 1])
            return ox_unsup(c, "padding not smaller than the window");
    ops_type op = is_max ? OP_MAXPOOL2D : OP_AVGPOOL2D;
    ops_params p;
    ops_params_default(op, &p);
    p.v[PM_KH] = win.k[0];
    p.v[PM_KW] = win.k[1];
    window_params(&win, &p);
    if (!is_max)
        p.v[PM_COUNT_PAD] = count_pad ? 1 : 0;
    if (is_const(x))
        return fold_table(c, op, &p, 1, &x);
    int32_t t = ox_tensor(c, x);
    return emit1(c, op, &p, 1, &t, 0);
}

static int cv_global_pool(ox_ctx *c) {
    int is_max = !strcmp(c->node->op_type, "GlobalMaxPool");
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    if (xs->rank != 4)
        return ox_unsup(c, "a %d-D global pooling (2-D only)", (int)xs->rank - 2);
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    ops_type op = is_max ? OP_MAXPOOL2D : OP_GLOBALAVGPOOL;
    ops_params p;
    ops_params_default(op, &p);
    if (is_max) { /* one window over the whole plane */
        p.v[PM_KH] = xs->dims[2];
        p.v[PM_KW] = xs->dims[3];
        p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = 1;
        p.v[PM_PAD] = OPS_PAD_EXPLICIT;
    }
    if (is_const(x))
        return fold_table(c, op, &p, 1, &x);
    int32_t t = ox_tensor(c, x);
    return emit1(c, op, &p, 1, &t, 0);
}

/* ---------------------------------------------------------------------------------------------
 * matrix products
 */
static int cv_matmul(ox_ctx *c) {
    ox_val *a, *b;
    if (need_in(c, 0, &a) != OX_OK || need_in(c, 1, &b) != OX_OK)
        return OX_ERR;
    if (refuse_int(c, a) != OX_OK || refuse_int(c, b) != OX_OK)
        return OX_UNSUP;
    ops_shape as = *ox_shape(c, a), bs = *ox_shape(c, b);
    if (as.rank < 1 || bs.rank < 1)
        return ox_fail(c, "MatMul of a scalar");
    int a1 = as.rank == 1, b1 = bs.rank == 1;
    ops_shape a2 = as, b2 = bs;
    if (a1) { /* (K) -> (1,K) */
        int64_t d[2] = {1, as.dims[0]};
        a2 = ops_shape_make(2, d);
    }
    if (b1) { /* (K) -> (K,1) */
        int64_t d[2] = {bs.dims[0], 1};
        b2 = ops_shape_make(2, d);
    }
    int rc = OX_OK;
    if (is_const(a) && is_const(b)) {
        ox_const ka, kb, out[OPS_MAX_OUTPUTS];
        ox_const_copy(c, &ka, &a->c);
        ox_const_copy(c, &kb, &b->c);
        ka.shape = a2;
        kb.shape = b2;
        ox_const *ks[2] = {&ka, &kb};
        int32_t n_out = 0;
        ops_params p;
        ops_params_default(OP_MATMUL, &p);
        rc = ox_eval_table(c, OP_MATMUL, &p, 2, ks, &n_out, out);
        ox_const_free(&ka);
        ox_const_free(&kb);
        if (rc != OX_OK)
            return rc;
        ops_shape s = out[0].shape;
        if (b1)
            s.rank--;
        if (a1) {
            s.dims[s.rank - 2] = s.dims[s.rank - 1];
            s.rank--;
        }
        out[0].shape = s;
        return ox_set_const(c, 0, &out[0]);
    }
    int32_t in[2];
    in[0] = tensor_as(c, a, &a2, &rc);
    if (rc == OX_OK)
        in[1] = tensor_as(c, b, &b2, &rc);
    if (rc != OX_OK)
        return rc;
    int32_t outs[OPS_MAX_OUTPUTS];
    const char *names[1] = {a1 || b1 ? NULL : out0(c)};
    if ((rc = ox_node(c, OP_MATMUL, NULL, 2, in, names, outs)) != OX_OK)
        return rc;
    if (a1 || b1) {
        ops_shape s = c->g->tensors[outs[0]].shape;
        if (b1)
            s.rank--;
        if (a1) {
            s.dims[s.rank - 2] = s.dims[s.rank - 1];
            s.rank--;
        }
        for (int32_t d = s.rank; d < OPS_MAX_DIMS; d++)
            s.dims[d] = 0;
        if (s.rank == 0)
            return ox_unsup(c, "a scalar result at run time");
        if ((rc = ox_reshape(c, outs[0], &s, out0(c), &outs[0])) != OX_OK)
            return rc;
    }
    return ox_set_runtime(c, 0, outs[0], 0);
}

/* A constant scaled by s (a new constant). */
static int scaled(ox_ctx *c, ox_const *k, float s, ox_const *out) {
    ops_shape sc;
    memset(&sc, 0, sizeof sc);
    ox_const f;
    ox_const_alloc(&f, &sc, 0);
    f.f[0] = s;
    ox_const kf;
    int rc = OX_OK;
    if (k->is_int) { /* Gemm on integer constants: compute in float */
        float *v = NULL;
        if ((rc = ox_const_floats(c, k, &v)) == OX_OK) {
            ox_const_alloc(&kf, &k->shape, 0);
            memcpy(kf.f, v, (size_t)ox_numel(&k->shape) * sizeof *v);
            rc = ox_eval_binary(c, '*', &kf, &f, out);
            ox_const_free(&kf);
        }
        free(v);
    } else {
        rc = ox_eval_binary(c, '*', k, &f, out);
    }
    ox_const_free(&f);
    return rc;
}

/* A Gemm operand: a constant transposed and scaled at import (a new weight when changed), or a
 * runtime tensor transposed by a helper node (scale must then be 1). */
static int gemm_operand(ox_ctx *c, ox_val *v, int trans, float scale, const char *what, int32_t *t) {
    static const int64_t swap[2] = {1, 0};
    if (!is_const(v)) {
        *t = ox_tensor(c, v);
        return trans ? ox_transpose(c, *t, 2, swap, NULL, t) : OX_OK;
    }
    if (!trans && scale == 1.0f) {
        *t = ox_tensor(c, v);
        return *t < 0 ? OX_ERR : OX_OK;
    }
    ox_const k, k2;
    ox_const_copy(c, &k, &v->c);
    int rc = OX_OK;
    if (trans) {
        rc = ox_eval_transpose(c, &k, swap, &k2);
        ox_const_free(&k);
        k = k2;
    }
    if (rc == OX_OK && scale != 1.0f) {
        rc = scaled(c, &k, scale, &k2);
        ox_const_free(&k);
        k = k2;
    }
    if (rc == OX_OK) {
        *t = helper_weight(c, what, &k);
        if (*t < 0)
            rc = OX_ERR;
    }
    ox_const_free(&k);
    return rc;
}

static int cv_gemm(ox_ctx *c) {
    ox_val *a, *b, *cc;
    if (need_in(c, 0, &a) != OX_OK || need_in(c, 1, &b) != OX_OK)
        return OX_ERR;
    cc = ox_in(c, 2);
    if (refuse_int(c, a) != OX_OK || refuse_int(c, b) != OX_OK || refuse_int(c, cc) != OX_OK)
        return OX_UNSUP;
    float alpha, beta;
    int64_t ta, tb;
    if (ox_attr_float(c, "alpha", 1.0f, &alpha) != OX_OK || ox_attr_float(c, "beta", 1.0f, &beta) != OX_OK ||
        ox_attr_int(c, "transA", 0, &ta) != OX_OK || ox_attr_int(c, "transB", 0, &tb) != OX_OK)
        return OX_ERR;
    if (ox_shape(c, a)->rank != 2 || ox_shape(c, b)->rank != 2)
        return ox_fail(c, "Gemm inputs must be matrices");
    /* alpha goes into a constant operand (B first); with none, a multiply after the product */
    float sa = 1.0f, sb = 1.0f;
    int alpha_after = 0;
    if (alpha != 1.0f) {
        if (is_const(b))
            sb = alpha;
        else if (is_const(a))
            sa = alpha;
        else
            alpha_after = 1;
    }
    int32_t in[3] = {-1, -1, -1}, outs[OPS_MAX_OUTPUTS];
    int rc = gemm_operand(c, a, (int)ta, sa, "A", &in[0]);
    if (rc == OX_OK)
        rc = gemm_operand(c, b, (int)tb, sb, "B", &in[1]);
    if (rc != OX_OK)
        return rc;
    int64_t n = c->g->tensors[in[1]].shape.dims[1];
    /* C: a constant (N) or (1,N) is the product's bias; anything else is added after */
    int bias_in = 0;
    if (cc) {
        const ops_shape cs_v = *ox_shape(c, cc), *cs = &cs_v;
        int row = (cs->rank == 1 && cs->dims[0] == n) || (cs->rank == 2 && cs->dims[0] == 1 && cs->dims[1] == n);
        if (is_const(cc) && row && !alpha_after) {
            ox_const k, k2;
            ox_const_copy(c, &k, &cc->c);
            if (beta != 1.0f) {
                rc = scaled(c, &k, beta, &k2);
                ox_const_free(&k);
                k = k2;
            }
            k.shape = ops_shape_make(1, &n);
            if (rc == OX_OK)
                in[2] = (beta == 1.0f && cs->rank == 1) ? ox_tensor(c, cc) : helper_weight(c, "C", &k);
            ox_const_free(&k);
            if (rc == OX_OK && in[2] < 0)
                rc = OX_ERR;
            bias_in = 1;
        } else {
            rc = gemm_operand(c, cc, 0, is_const(cc) ? beta : 1.0f, "C", &in[2]);
            if (rc == OX_OK && !is_const(cc) && beta != 1.0f) {
                int32_t w = scalar_weight(c, "beta", beta);
                int32_t in2[2] = {in[2], w};
                rc = w < 0 ? OX_ERR : ox_helper(c, OP_EWMUL, NULL, 2, in2, &in[2]);
            }
        }
    }
    if (rc != OX_OK)
        return rc;
    int add_after = cc && !bias_in;
    const char *names[1] = {alpha_after || add_after ? NULL : out0(c)};
    if ((rc = ox_node(c, OP_MATMUL, NULL, bias_in ? 3 : 2, in, names, outs)) != OX_OK)
        return rc;
    int32_t y = outs[0];
    if (alpha_after) {
        int32_t w = scalar_weight(c, "alpha", alpha);
        int32_t in2[2] = {y, w};
        const char *nm[1] = {add_after ? NULL : out0(c)};
        if (w < 0)
            return OX_ERR;
        if ((rc = ox_node(c, OP_EWMUL, NULL, 2, in2, nm, outs)) != OX_OK)
            return rc;
        y = outs[0];
    }
    if (add_after) {
        int32_t in2[2] = {y, in[2]};
        const char *nm[1] = {out0(c)};
        if ((rc = ox_node(c, OP_EWADD, NULL, 2, in2, nm, outs)) != OX_OK)
            return rc;
        y = outs[0];
    }
    return ox_set_runtime(c, 0, y, 0);
}

/* The reduced dims of a Reduce* node on x (shape xs): red[d] = 1 for each; the axes come from the
 * attribute or, from opset 18, input 1; none means every dim, or (noop_with_empty_axes) *noop = 1
 * and no dim. *keep gets keepdims. */
static int reduce_dims(ox_ctx *c, const ops_shape *xs, int64_t *keep, int *noop, int red[OPS_MAX_DIMS]) {
    int64_t nop, axes[OX_MAX_LIST];
    int32_t n = -1;
    if (ox_attr_int(c, "keepdims", 1, keep) != OX_OK || ox_attr_int(c, "noop_with_empty_axes", 0, &nop) != OX_OK)
        return OX_ERR;
    int rc = ox_attr_ints(c, "axes", axes, OX_MAX_LIST, &n);
    if (rc != OX_OK)
        return rc;
    ox_val *av = ox_in(c, 1);
    if (n < 0 && av && (rc = ox_const_list(c, av, "axes", axes, OX_MAX_LIST, &n)) != OX_OK)
        return rc;
    memset(red, 0, sizeof(int) * OPS_MAX_DIMS);
    *noop = n <= 0 && nop;
    if (*noop)
        return OX_OK;
    if (n <= 0) {
        n = xs->rank;
        for (int32_t d = 0; d < n; d++)
            axes[d] = d;
    }
    for (int32_t k = 0; k < n; k++) {
        int32_t a = 0;
        if (norm_axis(c, axes[k], xs->rank, &a) != OX_OK)
            return OX_ERR;
        red[a] = 1;
    }
    return OX_OK;
}

/* A Reduce* node's input x, its shape (a copy: the tensor array may move), keepdims and the
 * reduced dims, as reduce_begin reads them. */
typedef struct {
    ox_val *x;
    ops_shape xs;
    int64_t keep;
    int red[OPS_MAX_DIMS];
} reduce_in;

/* The start every Reduce* converter shares: input 0 and its reduced dims into r. A node that
 * reduces nothing (noop_with_empty_axes, no axes) is the identity: its output is aliased to the
 * input here and *done = 1, so that the caller returns rc at once. */
static int reduce_begin(ox_ctx *c, reduce_in *r, int *done) {
    int noop = 0;
    *done = 0;
    if (need_in(c, 0, &r->x) != OX_OK)
        return OX_ERR;
    r->xs = *ox_shape(c, r->x);
    int rc = reduce_dims(c, &r->xs, &r->keep, &noop, r->red);
    if (rc != OX_OK || !noop)
        return rc;
    *done = 1;
    return ox_set_alias(c, 0, r->x);
}

/* ReduceMean / ReduceSum: at run time a product with a constant column of 1/n (or ones) after
 * moving the reduced dims last, (rows, n) x (n, 1); constants are reduced here. */
static int cv_reduce(ox_ctx *c) {
    int mean = !strcmp(c->node->op_type, "ReduceMean");
    reduce_in ri;
    int done, rc = reduce_begin(c, &ri, &done);
    if (rc != OX_OK || done)
        return rc;
    ox_val *x = ri.x;
    const ops_shape *xs = &ri.xs;
    const int64_t keep = ri.keep;
    const int *red = ri.red;
    ops_shape os;
    memset(&os, 0, sizeof os);
    int64_t rows = 1, cols = 1, perm[OPS_MAX_DIMS];
    int32_t np = 0, ident = 1;
    for (int32_t d = 0; d < xs->rank; d++) {
        if (!red[d]) {
            rows *= xs->dims[d];
            perm[np++] = d;
            os.dims[os.rank++] = xs->dims[d];
        } else {
            cols *= xs->dims[d];
            if (keep)
                os.dims[os.rank++] = 1;
        }
    }
    for (int32_t d = 0; d < xs->rank; d++)
        if (red[d])
            perm[np++] = d;
    for (int32_t d = 0; d < xs->rank; d++)
        ident &= perm[d] == d;
    if (keep) { /* kept dims stay in place */
        for (int32_t d = 0; d < xs->rank; d++)
            os.dims[d] = red[d] ? 1 : xs->dims[d];
        os.rank = xs->rank;
    }
    if (is_const(x)) {
        ox_const k, t;
        if (ox_const_load(c, &x->c) != OX_OK)
            return OX_ERR;
        int int_sum = x->c.is_int && !mean;
        int rc2 = ident ? OX_OK : ox_eval_transpose(c, &x->c, perm, &t);
        if (rc2 != OX_OK)
            return rc2;
        const ox_const *src = ident ? &x->c : &t;
        ox_const_alloc(&k, &os, int_sum);
        for (int64_t r = 0; r < rows; r++) {
            double acc = 0.0;
            int64_t iacc = 0;
            for (int64_t q = 0; q < cols; q++) {
                int64_t at = r * cols + q;
                if (src->is_int) {
                    iacc += src->i[at];
                    acc += (double)src->i[at];
                } else {
                    acc += src->f[at];
                }
            }
            if (int_sum)
                k.i[r] = iacc;
            else
                k.f[r] = (float)(mean ? acc / (double)cols : acc);
        }
        k.synthetic = x->c.synthetic;
        if (!ident)
            ox_const_free(&t);
        return ox_set_const(c, 0, &k);
    }
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    if (os.rank == 0)
        return ox_unsup(c, "a scalar result at run time");
    int32_t t = ox_tensor(c, x);
    if (!ident && (rc = ox_transpose(c, t, xs->rank, perm, NULL, &t)) != OX_OK)
        return rc;
    int64_t d2[2] = {rows, cols};
    ops_shape m2 = ops_shape_make(2, d2);
    if (!ops_shape_eq(&c->g->tensors[t].shape, &m2) && (rc = ox_reshape(c, t, &m2, NULL, &t)) != OX_OK)
        return rc;
    int64_t wd[2] = {cols, 1};
    ops_shape ws = ops_shape_make(2, wd);
    if (ox_check_size(c, &ws) != OX_OK)
        return OX_ERR;
    ox_const w;
    ox_const_alloc(&w, &ws, 0);
    for (int64_t q = 0; q < cols; q++)
        w.f[q] = mean ? (float)(1.0 / (double)cols) : 1.0f;
    int32_t wt = helper_weight(c, mean ? "mean" : "ones", &w);
    ox_const_free(&w);
    if (wt < 0)
        return OX_ERR;
    int32_t in[2] = {t, wt}, outs[OPS_MAX_OUTPUTS];
    int direct = os.rank == 2 && os.dims[0] == rows && os.dims[1] == 1; /* already (rows, 1) */
    const char *names[1] = {direct ? out0(c) : NULL};
    if ((rc = ox_node(c, OP_MATMUL, NULL, 2, in, names, outs)) != OX_OK)
        return rc;
    if (!direct && (rc = ox_reshape(c, outs[0], &os, out0(c), &outs[0])) != OX_OK)
        return rc;
    return ox_set_runtime(c, 0, outs[0], 0);
}

/* ReduceMax: a reducemax node over the normalised axes (axes attribute, or input 1 from opset 18;
 * none: every dim, or the input itself with noop_with_empty_axes); float constants are evaluated. */
static int cv_reducemax(ox_ctx *c) {
    reduce_in r;
    int done, rc = reduce_begin(c, &r, &done);
    if (rc != OX_OK || done)
        return rc;
    ops_params p;
    ops_params_default(OP_REDUCEMAX, &p);
    p.v[PM_KEEPDIMS] = r.keep ? 1 : 0;
    for (int32_t d = 0; d < r.xs.rank; d++)
        if (r.red[d])
            p.list[p.n_list++] = d;
    if (is_const(r.x)) {
        if (r.x->c.is_int)
            return ox_unsup(c, "ReduceMax of the integer constant '%s'", r.x->name);
        return fold_table(c, OP_REDUCEMAX, &p, 1, &r.x);
    }
    if (refuse_int(c, r.x) != OX_OK)
        return OX_UNSUP;
    if (!r.keep && (p.n_list == 0 || p.n_list == r.xs.rank))
        return ox_unsup(c, "a scalar result at run time");
    int32_t t = ox_tensor(c, r.x);
    return emit1(c, OP_REDUCEMAX, &p, 1, &t, 0);
}

/* Index of s in names[n], or -1. */
static int name_index(const char *s, const char *const *names, int n) {
    for (int k = 0; k < n; k++)
        if (!strcmp(s, names[k]))
            return k;
    return -1;
}

/* Resize's attributes into p (mode, coord, nearest); what resize cannot do is OX_UNSUP naming the
 * attribute. cubic_coeff_a and extrapolation_value only matter to modes refused here. */
static int resize_attrs(ox_ctx *c, ops_params *p) {
    static const char *const modes[] = {"nearest", "linear"};
    static const char *const coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    char md[64], cm[64], nm[64], kar[64];
    int64_t anti, excl;
    if (ox_attr_str(c, "mode", "nearest", md, sizeof md) != OX_OK ||
        ox_attr_str(c, "coordinate_transformation_mode", "half_pixel", cm, sizeof cm) != OX_OK ||
        ox_attr_str(c, "nearest_mode", "round_prefer_floor", nm, sizeof nm) != OX_OK ||
        ox_attr_str(c, "keep_aspect_ratio_policy", "stretch", kar, sizeof kar) != OX_OK ||
        ox_attr_int(c, "antialias", 0, &anti) != OX_OK || ox_attr_int(c, "exclude_outside", 0, &excl) != OX_OK)
        return OX_ERR;
    int m = name_index(md, modes, 2), co = name_index(cm, coords, 4), ne = name_index(nm, nearest, 4);
    if (m < 0)
        return ox_unsup(c, "attribute mode = '%s' (supported: nearest, linear)", md);
    if (co < 0)
        return ox_unsup(c, "attribute coordinate_transformation_mode = '%s' (supported: half_pixel, asymmetric, "
                        "align_corners, pytorch_half_pixel)", cm);
    if (ne < 0)
        return ox_unsup(c, "attribute nearest_mode = '%s' (supported: round_prefer_floor, round_prefer_ceil, floor, "
                        "ceil)", nm);
    if (anti)
        return ox_unsup(c, "attribute antialias = %lld (supported: 0)", (long long)anti);
    if (excl)
        return ox_unsup(c, "attribute exclude_outside = %lld (supported: 0)", (long long)excl);
    if (strcmp(kar, "stretch") != 0)
        return ox_unsup(c, "attribute keep_aspect_ratio_policy = '%s' (supported: stretch)", kar);
    p->v[PM_MODE] = m;
    p->v[PM_COORD] = co;
    p->v[PM_NEAREST] = ne;
    return OX_OK;
}

/* The output dims and scales of Resize from its constant scales (input 2) or sizes (input 3) over
 * ax[0..na); a scale gives the dim as onnxruntime computes it, (int64)(scale * (float)dim). */
static int resize_dims(ox_ctx *c, const ops_shape *xs, const int32_t *ax, int32_t na, int64_t *out, float *sc) {
    ox_val *sv = ox_in(c, 2), *zv = ox_in(c, 3);
    if (sv && is_const(sv) && ox_numel(&sv->c.shape) == 0)
        sv = NULL; /* an empty tensor stands for an absent input */
    if (zv && is_const(zv) && ox_numel(&zv->c.shape) == 0)
        zv = NULL;
    if (!sv == !zv)
        return ox_fail(c, "exactly one of scales (input 2) and sizes (input 3) must be given");
    for (int32_t d = 0; d < xs->rank; d++) {
        out[d] = xs->dims[d];
        sc[d] = 1.0f;
    }
    if (zv) {
        int64_t sz[OX_MAX_LIST];
        int32_t n = 0;
        int rc = ox_const_list(c, zv, "sizes", sz, OX_MAX_LIST, &n);
        if (rc != OX_OK)
            return rc;
        if (n != na)
            return ox_fail(c, "%d sizes for %d axes", (int)n, (int)na);
        for (int32_t k = 0; k < n; k++) {
            if (sz[k] < 1)
                return ox_fail(c, "sizes[%d] = %lld, expected >= 1", (int)k, (long long)sz[k]);
            out[ax[k]] = sz[k];
            sc[ax[k]] = sz[k] == xs->dims[ax[k]] ? 1.0f : 0.0f; /* 0: out / in */
        }
        return OX_OK;
    }
    if (!is_const(sv))
        return ox_unsup(c, "the scales must be a constant ('%s' is computed at run time)", sv->name);
    if (sv->c.synthetic)
        return ox_unsup(c, "the scales '%s' have no data (its external data file is missing)", sv->name);
    float *f = NULL;
    if (ox_numel(&sv->c.shape) != na)
        return ox_fail(c, "%lld scales for %d axes", (long long)ox_numel(&sv->c.shape), (int)na);
    if (ox_const_floats(c, &sv->c, &f) != OX_OK)
        return OX_ERR;
    for (int32_t k = 0; k < na; k++) {
        const int32_t d = ax[k];
        const float v = f[k], o = v * (float)xs->dims[d];
        if (!(v > 0.0f && isfinite(v)) || !(o >= 1.0f && o < 9.0e18f)) {
            free(f);
            return ox_fail(c, "scales[%d] = %g gives no valid size for dim %d (%lld)", (int)k, (double)v, (int)d,
                           (long long)xs->dims[d]);
        }
        sc[d] = v;
        out[d] = (int64_t)o;
    }
    free(f);
    return OX_OK;
}

/* Resize with mode nearest or linear over the last two dims, constant scales or sizes (roi is
 * read only by tf_crop_and_resize, which is refused). */
static int cv_resize(ox_ctx *c) {
    ox_val *x;
    if (need_in(c, 0, &x) != OX_OK)
        return OX_ERR;
    ops_params p;
    ops_params_default(OP_RESIZE, &p);
    int rc = resize_attrs(c, &p);
    if (rc != OX_OK)
        return rc;
    const ops_shape xs_v = *ox_shape(c, x), *xs = &xs_v; /* a copy: the tensor array may move */
    const int32_t r = xs->rank;
    if (r < 2)
        return ox_unsup(c, "a rank-%d input (the last two dims are resized: rank >= 2)", (int)r);
    int64_t axes[OX_MAX_LIST];
    int32_t na = -1, ax[OPS_MAX_DIMS];
    if ((rc = ox_attr_ints(c, "axes", axes, OX_MAX_LIST, &na)) != OX_OK)
        return rc;
    if (na > r)
        return ox_fail(c, "attribute axes has %d entries for a rank-%d input", (int)na, (int)r);
    for (int32_t k = 0; k < (na < 0 ? r : na); k++)
        if (na < 0)
            ax[k] = k;
        else if (norm_axis(c, axes[k], r, &ax[k]) != OX_OK)
            return OX_ERR;
    int64_t out[OPS_MAX_DIMS];
    float sc[OPS_MAX_DIMS];
    if ((rc = resize_dims(c, xs, ax, na < 0 ? r : na, out, sc)) != OX_OK)
        return rc;
    for (int32_t d = 0; d < r - 2; d++)
        if (out[d] != xs->dims[d] || sc[d] != 1.0f)
            return ox_unsup(c, "resizing dim %d of a rank-%d input (scales or sizes; only the last two dims)", (int)d,
                            (int)r);
    p.n_list = r;
    for (int32_t d = 0; d < r; d++)
        p.list[d] = out[d];
    p.v[PM_SCALE_H] = ops_f2p(sc[r - 2] == 1.0f && out[r - 2] != xs->dims[r - 2] ? 0.0f : sc[r - 2]);
    p.v[PM_SCALE_W] = ops_f2p(sc[r - 1] == 1.0f && out[r - 1] != xs->dims[r - 1] ? 0.0f : sc[r - 1]);
    if (is_const(x)) {
        if (x->c.is_int)
            return ox_unsup(c, "resizing the integer constant '%s'", x->name);
        return fold_table(c, OP_RESIZE, &p, 1, &x);
    }
    if (refuse_int(c, x) != OX_OK)
        return OX_UNSUP;
    int32_t t = ox_tensor(c, x);
    return emit1(c, OP_RESIZE, &p, 1, &t, 0);
}

/* ---------------------------------------------------------------------------------------------
 * the table of converters, sorted by op type
 */
#define WIN_ATTRS "auto_pad,dilations,kernel_shape,pads,strides"
static const ox_converter ox_converters[] = {
    {"Add", cv_binary, ""},
    {"And", cv_compare, ""},
    {"AveragePool", cv_pool, WIN_ATTRS ",ceil_mode,count_include_pad"},
    {"BatchNormalization", cv_batchnorm, "epsilon,momentum,training_mode"},
    {"Cast", cv_cast, "to,saturate"},
    {"Clip", cv_clip, ""},
    {"Concat", cv_concat, "axis"},
    {"Constant", cv_constant, "value,value_float,value_floats,value_int,value_ints"},
    {"ConstantOfShape", cv_constant_of_shape, "value"},
    {"Conv", cv_conv, WIN_ATTRS ",group"},
    {"Div", cv_binary, ""},
    {"Dropout", cv_dropout, "seed"},
    {"Equal", cv_compare, ""},
    {"Erf", cv_unary, ""},
    {"Expand", cv_expand, ""},
    {"Flatten", cv_flatten, "axis"},
    {"Gather", cv_gather, "axis"},
    {"GatherElements", cv_gather_elements, "axis"},
    {"Gemm", cv_gemm, "alpha,beta,transA,transB"},
    {"GlobalAveragePool", cv_global_pool, ""},
    {"GlobalMaxPool", cv_global_pool, ""},
    {"Greater", cv_compare, ""},
    {"GreaterOrEqual", cv_compare, ""},
    {"GroupNormalization", cv_groupnorm, "epsilon,num_groups"},
    {"HardSigmoid", cv_hardsigmoid, "alpha,beta"},
    {"HardSwish", cv_unary, ""},
    {"Identity", cv_identity, ""},
    {"InstanceNormalization", cv_instancenorm, "epsilon"},
    {"LayerNormalization", cv_layernorm, "axis,epsilon,stash_type"},
    {"Less", cv_compare, ""},
    {"LessOrEqual", cv_compare, ""},
    {"MatMul", cv_matmul, ""},
    {"Max", cv_minmax, ""},
    {"MaxPool", cv_pool, WIN_ATTRS ",ceil_mode,storage_order"},
    {"Min", cv_minmax, ""},
    {"Mod", cv_mod, "fmod"},
    {"Mul", cv_binary, ""},
    {"Neg", cv_neg, ""},
    {"Not", cv_not, ""},
    {"Or", cv_compare, ""},
    {"Pad", cv_pad, "mode"},
    {"Pow", cv_binary, ""},
    {"Range", cv_range, ""},
    {"Reciprocal", cv_reciprocal, ""},
    {"ReduceMax", cv_reducemax, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceMean", cv_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceSum", cv_reduce, "keepdims,noop_with_empty_axes"},
    {"Relu", cv_unary, ""},
    {"Reshape", cv_reshape, "allowzero"},
    {"Resize", cv_resize,
     "mode,coordinate_transformation_mode,nearest_mode,cubic_coeff_a,exclude_outside,extrapolation_value,antialias,"
     "axes,keep_aspect_ratio_policy"},
    {"ScatterND", cv_scatter_nd, "reduction"},
    {"Shape", cv_shape, "start,end"},
    {"Sigmoid", cv_unary, ""},
    {"Size", cv_size, ""},
    {"Slice", cv_slice, ""},
    {"Softmax", cv_softmax, "axis"},
    {"Split", cv_split, "axis,num_outputs"},
    {"Sqrt", cv_unary, ""},
    {"Squeeze", cv_squeeze, ""},
    {"Sub", cv_binary, ""},
    {"Tanh", cv_unary, ""},
    {"Transpose", cv_transpose, "perm"},
    {"Trilu", cv_trilu, "upper"},
    {"Unsqueeze", cv_unsqueeze, ""},
    {"Where", cv_where, ""},
    {"Xor", cv_compare, ""},
};

const ox_converter *ox_converter_find(const char *op_type) {
    size_t lo = 0, hi = sizeof ox_converters / sizeof ox_converters[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(ox_converters[mid].op_type, op_type);
        if (!r)
            return &ox_converters[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
