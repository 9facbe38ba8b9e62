/* onnx_export.c: a graph written as an ONNX model (ir_version 8, opset 17) with protobuf-c.
 *
 * Nodes are emitted in the graph's topological order, one or a few ONNX nodes per op-table node:
 * most ops by the op table's ONNX form (ops.h ops_onnx: op type, attributes, integer pass-through;
 * ex_plain), the others by a special case (ex_special): fused activations become Relu / Sigmoid /
 * Tanh / HardSwish / Clip nodes, GELU its Erf form, SiLU Sigmoid and Mul, GELU's tanh form the
 * pattern GPT-2's export writes (the importer finds both again, onnx_pattern.c), matmul biases an Add (or Gemm for matrices), enlarge a Pad
 * of the kernel, pad, resize and reducemax their ONNX inputs and string attributes; pad modes
 * become explicit pads from ops_window2d, and the constant generators
 * (const_imm, ...) initializers with their values. Every
 * weight is an initializer (float32, raw little-endian data); a weight read only as gather ids
 * becomes an int64 initializer. Integer tensors (ids) keep int64 through data movement; a Cast
 * is inserted where an integer tensor meets an op that reads floats, or the reverse.
 * All protobuf structures live in an arena freed after packing.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "base.h"
#include "onnx.h"
#include "onnx.pb-c.h"

#define EX_MAX_ATTRS 8

typedef struct ex_name {
    char *name; /* arena */
    UT_hash_handle hh;
} ex_name;

typedef struct {
    const graph *g;
    void **blocks; size_t n_blocks, cap_blocks;     /* the arena */
    Onnx__NodeProto **nodes; size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits; size_t n_inits, cap_inits;
    ex_name *names;                                  /* every value name in the model */
    uint8_t *isint;      /* [n_tensors]: the exported value is int64 */
    char **as_i64;       /* [n_tensors]: name of an int64 Cast of the tensor, or NULL */
    char **as_f32;       /* [n_tensors]: name of a float Cast, or NULL */
    uint64_t raw_bytes;  /* initializer bytes so far (the 2 GiB protobuf limit) */
    char err[GRAPH_ERR_LEN];
    int failed;
} ex_ctx;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void ex_fail(ex_ctx *x, const char *fmt, ...) {
    if (x->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    base_vfail(x->err, sizeof x->err, fmt, ap);
    va_end(ap);
    x->failed = 1;
}

static void *ex_alloc(ex_ctx *x, size_t n) {
    void *p = base_xcalloc(1, n);
    if (x->n_blocks == x->cap_blocks) {
        x->cap_blocks = x->cap_blocks ? 2 * x->cap_blocks : 256;
        x->blocks = base_xrealloc(x->blocks, x->cap_blocks * sizeof *x->blocks);
    }
    x->blocks[x->n_blocks++] = p;
    return p;
}

static char *ex_strdup(ex_ctx *x, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = ex_alloc(x, n);
    memcpy(p, s, n);
    return p;
}

static void ex_arena_free(ex_ctx *x) {
    HASH_CLEAR(hh, x->names); /* the entries live in the arena */
    for (size_t k = 0; k < x->n_blocks; k++)
        free(x->blocks[k]);
    free(x->blocks);
}

static int ex_name_used(ex_ctx *x, const char *s) {
    ex_name *e = NULL;
    HASH_FIND_STR(x->names, s, e);
    return e != NULL;
}

static const char *ex_name_add(ex_ctx *x, const char *s) {
    ex_name *e = ex_alloc(x, sizeof *e);
    e->name = ex_strdup(x, s);
    HASH_ADD_KEYPTR(hh, x->names, e->name, strlen(e->name), e);
    return e->name;
}

/* A fresh value name "<base>/<what>[_k]". */
static const char *ex_fresh(ex_ctx *x, const char *base, const char *what) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", base, what);
    for (int k = 1; ex_name_used(x, buf); k++)
        snprintf(buf, sizeof buf, "%s/%s_%d", base, what, k);
    return ex_name_add(x, buf);
}

static void ex_push(ex_ctx *x, void ***arr, size_t *n, size_t *cap, void *item) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *arr = base_xrealloc(*arr, *cap * sizeof **arr);
    }
    (*arr)[(*n)++] = item;
    (void)x;
}

/* An ONNX node with its inputs and outputs (names copied into the arena). */
static Onnx__NodeProto *ex_node(ex_ctx *x, const char *op_type, const char *name, int n_in,
                                const char *const *in, int n_out, const char *const *out) {
    Onnx__NodeProto *n = ex_alloc(x, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = ex_strdup(x, op_type);
    n->name = ex_strdup(x, name);
    n->domain = ex_strdup(x, "");
    n->n_input = (size_t)n_in;
    n->input = ex_alloc(x, sizeof(char *) * (size_t)(n_in ? n_in : 1));
    for (int k = 0; k < n_in; k++)
        n->input[k] = ex_strdup(x, in[k]);
    n->n_output = (size_t)n_out;
    n->output = ex_alloc(x, sizeof(char *) * (size_t)(n_out ? n_out : 1));
    for (int k = 0; k < n_out; k++)
        n->output[k] = ex_strdup(x, out[k]);
    n->attribute = ex_alloc(x, sizeof(Onnx__AttributeProto *) * EX_MAX_ATTRS);
    ex_push(x, (void ***)&x->nodes, &x->n_nodes, &x->cap_nodes, n);
    return n;
}

static Onnx__AttributeProto *ex_attr(ex_ctx *x, Onnx__NodeProto *n, const char *name,
                                     Onnx__AttributeProto__AttributeType t) {
    Onnx__AttributeProto *a = ex_alloc(x, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ex_strdup(x, name);
    a->has_type = 1;
    a->type = t;
    if (n->n_attribute < EX_MAX_ATTRS)
        n->attribute[n->n_attribute++] = a;
    return a;
}

static void ex_attr_int(ex_ctx *x, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = ex_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void ex_attr_float(ex_ctx *x, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = ex_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static void ex_attr_ints(ex_ctx *x, Onnx__NodeProto *n, const char *name, const int64_t *v, int cnt) {
    Onnx__AttributeProto *a = ex_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)cnt;
    a->ints = ex_alloc(x, sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
}

static void ex_attr_str(ex_ctx *x, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = ex_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)ex_strdup(x, v);
}

/* An initializer; values little-endian. is_int: int64 from iv, else float32 from fv. */
static const char *ex_init(ex_ctx *x, const char *name, const ops_shape *s, int is_int, const float *fv,
                           const int64_t *iv) {
    int64_t n = ops_shape_numel(s);
    size_t es = is_int ? 8 : 4;
    x->raw_bytes += (uint64_t)n * es;
    if (x->raw_bytes > (UINT64_C(1) << 31) - (UINT64_C(1) << 24)) {
        ex_fail(x, "the weights exceed the 2 GiB limit of an ONNX file");
        return name;
    }
    Onnx__TensorProto *t = ex_alloc(x, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = ex_strdup(x, name);
    t->has_data_type = 1;
    t->data_type = is_int ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_dims = (size_t)s->rank;
    t->dims = ex_alloc(x, sizeof(int64_t) * (size_t)(s->rank ? s->rank : 1));
    for (int32_t d = 0; d < s->rank; d++)
        t->dims[d] = s->dims[d];
    uint8_t *raw = ex_alloc(x, (size_t)n * es);
    for (int64_t j = 0; j < n; j++) {
        uint64_t u;
        if (is_int) {
            u = (uint64_t)iv[j];
        } else {
            uint32_t w;
            memcpy(&w, &fv[j], 4);
            u = w;
        }
        for (size_t b = 0; b < es; b++)
            raw[j * es + b] = (uint8_t)(u >> (8 * b));
    }
    t->has_raw_data = 1;
    t->raw_data.len = (size_t)n * es;
    t->raw_data.data = raw;
    ex_push(x, (void ***)&x->inits, &x->n_inits, &x->cap_inits, t);
    return t->name;
}

static const char *ex_scalar(ex_ctx *x, const char *base, const char *what, float v) {
    ops_shape s;
    memset(&s, 0, sizeof s);
    return ex_init(x, ex_fresh(x, base, what), &s, 0, &v, NULL);
}

static const char *ex_ints(ex_ctx *x, const char *base, const char *what, const int64_t *v, int32_t n) {
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 1;
    s.dims[0] = n;
    return ex_init(x, ex_fresh(x, base, what), &s, 1, NULL, v);
}

/* Tensor t as the type an input needs: want_int 1 int64, 0 float; -1 either (data movement). */
static const char *ex_in(ex_ctx *x, int32_t t, int want_int) {
    const char *name = x->g->tensors[t].name;
    if (want_int < 0 || want_int == x->isint[t])
        return name;
    char **cache = want_int ? x->as_i64 : x->as_f32;
    if (!cache[t]) {
        const char *o = ex_fresh(x, name, want_int ? "as_int64" : "as_float");
        Onnx__NodeProto *n = ex_node(x, "Cast", ex_fresh(x, name, "cast"), 1, &name, 1, &o);
        ex_attr_int(x, n, "to", want_int ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        cache[t] = (char *)o;
    }
    return cache[t];
}

/* GELU's tanh form as transformers' GPT-2 export writes it (ONNX's Gelu with approximate "tanh"
 * needs opset 20), the pattern the importer recognises:
 * (x * 0.5) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))). */
static void ex_gelu_tanh(ex_ctx *x, const char *base, const char *in, const char *out) {
    const char *half = ex_scalar(x, base, "half", 0.5f), *three = ex_scalar(x, base, "three", 3.0f);
    const char *k = ex_scalar(x, base, "k", 0.044715f), *one = ex_scalar(x, base, "one", 1.0f);
    const char *r = ex_scalar(x, base, "sqrt_2_over_pi", 0.79788456080286535588f);
    const char *h = ex_fresh(x, base, "gelu_half"), *p = ex_fresh(x, base, "gelu_pow");
    const char *pk = ex_fresh(x, base, "gelu_cube"), *a = ex_fresh(x, base, "gelu_inner");
    const char *ar = ex_fresh(x, base, "gelu_scaled"), *t = ex_fresh(x, base, "gelu_tanh");
    const char *t1 = ex_fresh(x, base, "gelu_one_plus");
    const char *i1[2] = {in, half}, *i2[2] = {in, three}, *i3[2] = {p, k}, *i4[2] = {in, pk}, *i5[2] = {a, r};
    const char *i6[2] = {t, one}, *i7[2] = {h, t1};
    ex_node(x, "Mul", ex_fresh(x, base, "gelu_half_node"), 2, i1, 1, &h);
    ex_node(x, "Pow", ex_fresh(x, base, "gelu_pow_node"), 2, i2, 1, &p);
    ex_node(x, "Mul", ex_fresh(x, base, "gelu_cube_node"), 2, i3, 1, &pk);
    ex_node(x, "Add", ex_fresh(x, base, "gelu_inner_node"), 2, i4, 1, &a);
    ex_node(x, "Mul", ex_fresh(x, base, "gelu_scaled_node"), 2, i5, 1, &ar);
    ex_node(x, "Tanh", ex_fresh(x, base, "gelu_tanh_node"), 1, &ar, 1, &t);
    ex_node(x, "Add", ex_fresh(x, base, "gelu_one_plus_node"), 2, i6, 1, &t1);
    ex_node(x, "Mul", ex_fresh(x, base, "gelu_out_node"), 2, i7, 1, &out);
}

/* Apply a fused activation to value 'in', writing value 'out'. */
static void ex_act(ex_ctx *x, ops_act act, const char *base, const char *in, const char *out) {
    switch (act) {
    case OPS_ACT_NONE:
        break;
    case OPS_ACT_RELU:
        ex_node(x, "Relu", ex_fresh(x, base, "relu"), 1, &in, 1, &out);
        break;
    case OPS_ACT_SIGMOID:
        ex_node(x, "Sigmoid", ex_fresh(x, base, "sigmoid"), 1, &in, 1, &out);
        break;
    case OPS_ACT_TANH:
        ex_node(x, "Tanh", ex_fresh(x, base, "tanh"), 1, &in, 1, &out);
        break;
    case OPS_ACT_GELU: { /* x * 0.5 * (1 + erf(x / sqrt(2))) */
        const char *r2 = ex_scalar(x, base, "sqrt2", 1.41421356237309504880f);
        const char *one = ex_scalar(x, base, "one", 1.0f), *half = ex_scalar(x, base, "half", 0.5f);
        const char *d = ex_fresh(x, base, "gelu_div"), *e = ex_fresh(x, base, "gelu_erf");
        const char *a = ex_fresh(x, base, "gelu_add"), *m = ex_fresh(x, base, "gelu_mul");
        const char *i1[2] = {in, r2}, *i3[2] = {e, one}, *i4[2] = {in, a}, *i5[2] = {m, half};
        ex_node(x, "Div", ex_fresh(x, base, "gelu_div_node"), 2, i1, 1, &d);
        ex_node(x, "Erf", ex_fresh(x, base, "gelu_erf_node"), 1, &d, 1, &e);
        ex_node(x, "Add", ex_fresh(x, base, "gelu_add_node"), 2, i3, 1, &a);
        ex_node(x, "Mul", ex_fresh(x, base, "gelu_mul_node"), 2, i4, 1, &m);
        ex_node(x, "Mul", ex_fresh(x, base, "gelu_half_node"), 2, i5, 1, &out);
        break;
    }
    case OPS_ACT_SILU: { /* x * sigmoid(x) (ONNX has no SiLU before opset 24) */
        const char *sg = ex_fresh(x, base, "silu_sigmoid"), *i2[2] = {in, sg};
        ex_node(x, "Sigmoid", ex_fresh(x, base, "silu_sigmoid_node"), 1, &in, 1, &sg);
        ex_node(x, "Mul", ex_fresh(x, base, "silu_mul_node"), 2, i2, 1, &out);
        break;
    }
    case OPS_ACT_GELU_TANH:
        ex_gelu_tanh(x, base, in, out);
        break;
    case OPS_ACT_RELU6: {
        const char *i3[3] = {in, ex_scalar(x, base, "zero", 0.0f), ex_scalar(x, base, "six", 6.0f)};
        ex_node(x, "Clip", ex_fresh(x, base, "relu6"), 3, i3, 1, &out);
        break;
    }
    case OPS_ACT_HARDSWISH:
        ex_node(x, "HardSwish", ex_fresh(x, base, "hardswish"), 1, &in, 1, &out);
        break;
    case OPS_ACT_COUNT:
        break;
    }
}

/* Window attributes of a windowed op (ops_desc.window) with explicit pads resolved by the op table;
 * a kernel window also has dilations. */
static void ex_window(ex_ctx *x, Onnx__NodeProto *n, const graph_node *nd) {
    const graph *g = x->g;
    const int kernel = ops_table[nd->op].window == OPS_WIN_KERNEL;
    ops_window w;
    char e[256];
    const ops_shape *xs = &g->tensors[nd->in[0]].shape;
    const ops_shape *ws = kernel ? &g->tensors[nd->in[1]].shape : NULL;
    if (ops_window2d(nd->op, &nd->p, xs, ws, &w, e, sizeof e) < 0) {
        ex_fail(x, "node '%s': %s", nd->name, e);
        return;
    }
    int64_t k[2] = {w.kh, w.kw}, s[2] = {w.sh, w.sw}, d[2] = {w.dh, w.dw}, pads[4] = {w.pt, w.pl, w.pb, w.pr};
    ex_attr_ints(x, n, "kernel_shape", k, 2);
    ex_attr_ints(x, n, "strides", s, 2);
    ex_attr_ints(x, n, "pads", pads, 4);
    if (kernel)
        ex_attr_ints(x, n, "dilations", d, 2);
}

/* The values of a generator op (no inputs) computed with its CPU reference. */
static void ex_const_op(ex_ctx *x, const graph_node *nd) {
    const graph_tensor *ts = &x->g->tensors[nd->out[0]];
    int64_t n = ops_shape_numel(&ts->shape);
    float *v = ex_alloc(x, (size_t)n * sizeof *v);
    ops_sig s = {nd->op, &nd->p, 0, 1, NULL, &ts->shape};
    float *outs[1] = {v};
    ops_table[nd->op].cpu(&s, NULL, outs);
    ex_init(x, ts->name, &ts->shape, 0, v, NULL);
}

/* The op table's ONNX form (ops.h ops_onnx): one node of its op type over the same inputs and
 * outputs, the window and the listed parameters as attributes; integer tensors pass through
 * where the op lets them, else become float. */
static void ex_plain(ex_ctx *x, const graph_node *nd) {
    const graph *g = x->g;
    const ops_onnx *o = &ops_table[nd->op].onnx;
    const char *in[OPS_MAX_INPUTS], *outs[OPS_MAX_OUTPUTS];
    int ints = o->ints;
    for (int32_t k = 0; k < nd->n_in; k++)
        ints &= x->isint[nd->in[k]];
    for (int32_t k = 0; k < nd->n_in; k++)
        in[k] = ex_in(x, nd->in[k], ints);
    for (int32_t k = 0; k < nd->n_out; k++) {
        outs[k] = g->tensors[nd->out[k]].name;
        x->isint[nd->out[k]] = (uint8_t)ints;
    }
    Onnx__NodeProto *n = ex_node(x, o->op, nd->name, nd->n_in, in, nd->n_out, outs);
    if (ops_table[nd->op].window != OPS_WIN_NONE)
        ex_window(x, n, nd);
    for (int32_t i = 0; i < OPS_ONNX_MAX_ATTRS && o->attrs[i].name; i++) {
        ops_param_key key = o->attrs[i].key;
        if (key == PM_LIST)
            ex_attr_ints(x, n, o->attrs[i].name, nd->p.list, nd->p.n_list);
        else if (ops_param_table[key].kind == OPS_PK_FLOAT)
            ex_attr_float(x, n, o->attrs[i].name, ops_p2f(nd->p.v[key]));
        else
            ex_attr_int(x, n, o->attrs[i].name, nd->p.v[key]);
    }
}

/* --- the ops ONNX writes differently from their plain form ---------------------------------- */

typedef void (*ex_special_fn)(ex_ctx *x, const graph_node *nd);

/* conv2d, matmul: the fused activation as its own node; a matmul bias as Gemm or an Add. */
static void ex_conv_matmul(ex_ctx *x, const graph_node *nd) {
    const graph *g = x->g;
    const char *out = g->tensors[nd->out[0]].name, *nm = nd->name;
    const char *in[3];
    ops_act act = (ops_act)nd->p.v[PM_ACT];
    const char *y = act == OPS_ACT_NONE ? out : ex_fresh(x, out, "pre_act");
    for (int32_t k = 0; k < nd->n_in; k++)
        in[k] = ex_in(x, nd->in[k], 0);
    if (ops_table[nd->op].window != OPS_WIN_NONE) {
        Onnx__NodeProto *n = ex_node(x, ops_table[nd->op].onnx.op, nm, nd->n_in, in, 1, &y);
        ex_window(x, n, nd);
        ex_attr_int(x, n, "group", nd->p.v[PM_GROUPS]);
    } else if (nd->n_in == 3 && g->tensors[nd->in[0]].shape.rank == 2 && g->tensors[nd->in[1]].shape.rank == 2) {
        ex_node(x, "Gemm", nm, 3, in, 1, &y);
    } else if (nd->n_in == 3) {
        const char *mm = ex_fresh(x, out, "matmul");
        ex_node(x, ops_table[nd->op].onnx.op, nm, 2, in, 1, &mm);
        const char *ai[2] = {mm, in[2]};
        ex_node(x, "Add", ex_fresh(x, nm, "bias"), 2, ai, 1, &y);
    } else {
        ex_node(x, ops_table[nd->op].onnx.op, nm, 2, in, 1, &y);
    }
    ex_act(x, act, nm, y, out);
    x->isint[nd->out[0]] = 0;
}

/* gelu, gelu_tanh, silu: ONNX (opset 17) has none of them; their patterns (ex_act). */
static void ex_act_op(ex_ctx *x, const graph_node *nd) {
    ex_act(x, ops_table[nd->op].act, nd->name, ex_in(x, nd->in[0], 0), x->g->tensors[nd->out[0]].name);
}

/* clip: the bounds are inputs in ONNX. */
static void ex_clip(ex_ctx *x, const graph_node *nd) {
    const char *out = x->g->tensors[nd->out[0]].name, *in[3];
    in[0] = ex_in(x, nd->in[0], 0);
    in[1] = ex_scalar(x, nd->name, "min", ops_p2f(nd->p.v[PM_LO]));
    in[2] = ex_scalar(x, nd->name, "max", ops_p2f(nd->p.v[PM_HI]));
    ex_node(x, "Clip", nd->name, 3, in, 1, &out);
}

/* reshape: the shape is an input in ONNX. */
static void ex_reshape(ex_ctx *x, const graph_node *nd) {
    const graph *g = x->g;
    const ops_shape *s = &g->tensors[nd->out[0]].shape;
    const char *out = g->tensors[nd->out[0]].name, *in[2];
    in[0] = ex_in(x, nd->in[0], -1);
    in[1] = ex_ints(x, nd->name, "shape", s->dims, s->rank);
    ex_node(x, "Reshape", nd->name, 2, in, 1, &out);
    x->isint[nd->out[0]] = x->isint[nd->in[0]];
}

/* split: the sizes (equal parts included) are an input in ONNX. */
static void ex_split(ex_ctx *x, const graph_node *nd) {
    const graph *g = x->g;
    int64_t sizes[OPS_MAX_OUTPUTS];
    const char *outs[OPS_MAX_OUTPUTS], *in[2];
    for (int32_t k = 0; k < nd->n_out; k++) {
        sizes[k] = g->tensors[nd->out[k]].shape.dims[nd->p.v[PM_AXIS]];
        outs[k] = g->tensors[nd->out[k]].name;
        x->isint[nd->out[k]] = x->isint[nd->in[0]];
    }
    in[0] = ex_in(x, nd->in[0], -1);
    in[1] = ex_ints(x, nd->name, "split", sizes, nd->n_out);
    Onnx__NodeProto *n = ex_node(x, "Split", nd->name, 2, in, nd->n_out, outs);
    ex_attr_int(x, n, "axis", nd->p.v[PM_AXIS]);
}

/* enlarge: zero-pad the kernel (F,C,kh,kw) to (F,C,KH,KW), centred. */
static void ex_enlarge(ex_ctx *x, const graph_node *nd) {
    const graph *g = x->g;
    const ops_shape *ks = &g->tensors[nd->in[0]].shape;
    const char *out = g->tensors[nd->out[0]].name, *in[2];
    int64_t ph = (nd->p.v[PM_KH] - ks->dims[2]) / 2, pw = (nd->p.v[PM_KW] - ks->dims[3]) / 2;
    int64_t pads[8] = {0, 0, ph, pw, 0, 0, ph, pw};
    in[0] = ex_in(x, nd->in[0], 0);
    in[1] = ex_ints(x, nd->name, "pads", pads, 8);
    ex_node(x, "Pad", nd->name, 2, in, 1, &out);
}

/* layernorm: ONNX needs the scale; ones over the normalised dims when the node has none. ONNX
 * normalises from axis to the end only: dims [axis, axis_end) before the end (axis_end set, the
 * channels of NCHW) are moved to the end by a Transpose around it, in their order (so the scale
 * and bias keep their shape), and moved back after. */
static void ex_layernorm(ex_ctx *x, const graph_node *nd) {
    const graph *g = x->g;
    const ops_shape *xs = &g->tensors[nd->in[0]].shape;
    const char *out = g->tensors[nd->out[0]].name, *in[3];
    const int32_t r = xs->rank, ax = (int32_t)nd->p.v[PM_AXIS];
    const int32_t end = nd->p.v[PM_AXIS_END] ? (int32_t)nd->p.v[PM_AXIS_END] : r;
    in[0] = ex_in(x, nd->in[0], 0);
    if (nd->n_in >= 2) {
        in[1] = ex_in(x, nd->in[1], 0);
    } else {
        ops_shape tail = ops_shape_make(end - ax, xs->dims + ax);
        int64_t cnt = ops_shape_numel(&tail);
        float *ones = ex_alloc(x, (size_t)cnt * sizeof *ones);
        for (int64_t j = 0; j < cnt; j++)
            ones[j] = 1.0f;
        in[1] = ex_init(x, ex_fresh(x, nd->name, "scale"), &tail, 0, ones, NULL);
    }
    if (nd->n_in >= 3)
        in[2] = ex_in(x, nd->in[2], 0);
    int64_t perm[OPS_MAX_DIMS], inv[OPS_MAX_DIMS];
    int32_t k = 0;
    for (int32_t i = 0; i < r; i++) /* the dims outside [ax, end), then those inside */
        if (i < ax || i >= end)
            perm[k++] = i;
    for (int32_t i = ax; i < end; i++)
        perm[k++] = i;
    for (int32_t i = 0; i < r; i++)
        inv[perm[i]] = i;
    const char *y = out;
    if (end < r) {
        const char *moved = ex_fresh(x, out, "to_last");
        Onnx__NodeProto *t = ex_node(x, "Transpose", ex_fresh(x, nd->name, "to_last"), 1, in, 1, &moved);
        ex_attr_ints(x, t, "perm", perm, r);
        in[0] = moved;
        y = ex_fresh(x, out, "normalised");
    }
    Onnx__NodeProto *n = ex_node(x, "LayerNormalization", nd->name, nd->n_in >= 3 ? 3 : 2, in, 1, &y);
    ex_attr_int(x, n, "axis", r - (end - ax));
    ex_attr_float(x, n, "epsilon", ops_p2f(nd->p.v[PM_EPS]));
    if (end < r) {
        Onnx__NodeProto *t = ex_node(x, "Transpose", ex_fresh(x, nd->name, "back"), 1, &y, 1, &out);
        ex_attr_ints(x, t, "perm", inv, r);
    }
}

/* gather: ids are int64 in ONNX; the table keeps its type. */
static void ex_gather(ex_ctx *x, const graph_node *nd) {
    const char *out = x->g->tensors[nd->out[0]].name, *in[2];
    in[0] = ex_in(x, nd->in[0], -1);
    in[1] = ex_in(x, nd->in[1], 1);
    Onnx__NodeProto *n = ex_node(x, "Gather", nd->name, 2, in, 1, &out);
    ex_attr_int(x, n, "axis", 0);
    x->isint[nd->out[0]] = x->isint[nd->in[0]];
}

/* reducemax: ReduceMax with the axes as an attribute (opset 17), none for every dim. */
static void ex_reducemax(ex_ctx *x, const graph_node *nd) {
    const char *out = x->g->tensors[nd->out[0]].name, *in = ex_in(x, nd->in[0], 0);
    Onnx__NodeProto *n = ex_node(x, "ReduceMax", nd->name, 1, &in, 1, &out);
    if (nd->p.n_list)
        ex_attr_ints(x, n, "axes", nd->p.list, nd->p.n_list);
    ex_attr_int(x, n, "keepdims", nd->p.v[PM_KEEPDIMS]);
}

/* resize: Resize(x, roi "", scales) when the node's scales give its sizes as onnxruntime computes
 * them (the sampling then uses the same scales), else Resize(x, "", "", sizes); the modes as
 * string attributes. */
static void ex_resize(ex_ctx *x, const graph_node *nd) {
    static const char *const modes[] = {"nearest", "linear"};
    static const char *const coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const graph *g = x->g;
    const ops_shape *xs = &g->tensors[nd->in[0]].shape, *os = &g->tensors[nd->out[0]].shape;
    const int32_t r = xs->rank;
    const char *out = g->tensors[nd->out[0]].name, *in[4];
    const float sh = ops_p2f(nd->p.v[PM_SCALE_H]), sw = ops_p2f(nd->p.v[PM_SCALE_W]);
    int use_scales = sh > 0.0f && sw > 0.0f && (int64_t)(sh * (float)xs->dims[r - 2]) == os->dims[r - 2] &&
                     (int64_t)(sw * (float)xs->dims[r - 1]) == os->dims[r - 1];
    in[0] = ex_in(x, nd->in[0], 0);
    in[1] = "";
    if (use_scales) {
        float sc[OPS_MAX_DIMS];
        for (int32_t d = 0; d < r; d++)
            sc[d] = d == r - 2 ? sh : d == r - 1 ? sw : 1.0f;
        ops_shape ss = ops_shape_make(1, (int64_t[]){r});
        in[2] = ex_init(x, ex_fresh(x, nd->name, "scales"), &ss, 0, sc, NULL);
    } else if (sh > 0.0f || sw > 0.0f) {
        ex_fail(x, "node '%s': resize with scales %g, %g that do not give its sizes: ONNX cannot express it",
                nd->name, (double)sh, (double)sw);
        return;
    } else {
        in[2] = "";
        in[3] = ex_ints(x, nd->name, "sizes", os->dims, r);
    }
    Onnx__NodeProto *n = ex_node(x, "Resize", nd->name, use_scales ? 3 : 4, in, 1, &out);
    ex_attr_str(x, n, "mode", modes[nd->p.v[PM_MODE]]);
    ex_attr_str(x, n, "coordinate_transformation_mode", coords[nd->p.v[PM_COORD]]);
    ex_attr_str(x, n, "nearest_mode", nearest[nd->p.v[PM_NEAREST]]);
}

/* pad: Pad(x, pads, constant_value) with the mode as a string attribute. */
static void ex_pad(ex_ctx *x, const graph_node *nd) {
    static const char *const modes[] = {"constant", "reflect", "edge"};
    const char *out = x->g->tensors[nd->out[0]].name, *in[3];
    in[0] = ex_in(x, nd->in[0], 0);
    in[1] = ex_ints(x, nd->name, "pads", nd->p.list, nd->p.n_list);
    if (nd->p.v[PM_MODE] == 0)
        in[2] = ex_scalar(x, nd->name, "value", ops_p2f(nd->p.v[PM_VALUE]));
    Onnx__NodeProto *n = ex_node(x, "Pad", nd->name, nd->p.v[PM_MODE] == 0 ? 3 : 2, in, 1, &out);
    ex_attr_str(x, n, "mode", modes[nd->p.v[PM_MODE]]);
}

/* Every other op is written by its plain form (ex_plain), or as an initializer when it is a
 * generator (no inputs: const_imm, ...). */
static const ex_special_fn ex_special[OP_COUNT] = {
    [OP_CONV2D] = ex_conv_matmul,
    [OP_MATMUL] = ex_conv_matmul,
    [OP_GELU] = ex_act_op,
    [OP_GELU_TANH] = ex_act_op,
    [OP_SILU] = ex_act_op,
    [OP_CLIP] = ex_clip,
    [OP_RESHAPE] = ex_reshape,
    [OP_SPLIT] = ex_split,
    [OP_ENLARGE] = ex_enlarge,
    [OP_LAYERNORM] = ex_layernorm,
    [OP_GATHER] = ex_gather,
    [OP_REDUCEMAX] = ex_reducemax,
    [OP_RESIZE] = ex_resize,
    [OP_PAD] = ex_pad,
};

static void ex_one(ex_ctx *x, const graph_node *nd) {
    const ops_desc *d = &ops_table[nd->op];
    if (ex_special[nd->op])
        ex_special[nd->op](x, nd);
    else if (d->max_in == 0)
        ex_const_op(x, nd);
    else if (d->onnx.op)
        ex_plain(x, nd);
    else
        ex_fail(x, "node '%s': op %d cannot be exported", nd->name, (int)nd->op);
}

/* A graph input or output description with a static shape. */
static Onnx__ValueInfoProto *ex_value_info(ex_ctx *x, const graph_tensor *ts, int is_int) {
    Onnx__ValueInfoProto *v = ex_alloc(x, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = ex_strdup(x, ts->name);
    Onnx__TypeProto *tp = ex_alloc(x, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = ex_alloc(x, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = is_int ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    Onnx__TensorShapeProto *sp = ex_alloc(x, sizeof *sp);
    onnx__tensor_shape_proto__init(sp);
    sp->n_dim = (size_t)ts->shape.rank;
    sp->dim = ex_alloc(x, sizeof(*sp->dim) * (size_t)(ts->shape.rank ? ts->shape.rank : 1));
    for (int32_t d = 0; d < ts->shape.rank; d++) {
        Onnx__TensorShapeProto__Dimension *dm = ex_alloc(x, sizeof *dm);
        onnx__tensor_shape_proto__dimension__init(dm);
        dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dm->dim_value = ts->shape.dims[d];
        sp->dim[d] = dm;
    }
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

uint8_t *onnx_export_buffer(const graph *g, size_t *len, char *err, size_t errlen) {
    ex_ctx x;
    memset(&x, 0, sizeof x);
    x.g = g;
    uint8_t *result = NULL;
    char verr[GRAPH_ERR_LEN];
    int32_t nt = g->n_tensors;
    int32_t *order = NULL;
    if (graph_validate(g, verr, sizeof verr) < 0) {
        snprintf(err, errlen, "the graph is invalid: %s", verr);
        return NULL;
    }
    x.isint = ex_alloc(&x, (size_t)nt + 1);
    x.as_i64 = ex_alloc(&x, sizeof(char *) * ((size_t)nt + 1));
    x.as_f32 = ex_alloc(&x, sizeof(char *) * ((size_t)nt + 1));
    for (int32_t t = 0; t < nt; t++)
        ex_name_add(&x, g->tensors[t].name);
    for (int32_t i = 0; i < g->n_inputs; i++)
        x.isint[g->inputs[i]] = g->tensors[g->inputs[i]].dtype == GRAPH_DT_I64;
    /* weights: a weight read only as gather ids is exported as int64 */
    for (int32_t i = 0; i < g->n_weights; i++) {
        int32_t t = g->weights[i];
        int ids = 0, other = 0;
        for (int32_t n = 0; n < g->n_nodes; n++)
            for (int32_t k = 0; k < g->nodes[n].n_in; k++)
                if (g->nodes[n].in[k] == t) {
                    if (g->nodes[n].op == OP_GATHER && k == 1)
                        ids = 1;
                    else
                        other = 1;
                }
        const graph_tensor *ts = &g->tensors[t];
        int64_t cnt = ops_shape_numel(&ts->shape);
        float *v = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "out of memory for weight '%s'", ts->name);
            goto done;
        }
        if (graph_weight_values(g, t, v, verr, sizeof verr) < 0) {
            snprintf(err, errlen, "%s", verr);
            free(v);
            goto done;
        }
        int as_int = ids && !other;
        for (int64_t j = 0; j < cnt && as_int; j++)
            as_int = v[j] == floorf(v[j]) && fabsf(v[j]) < 9.0e15f;
        if (as_int) {
            int64_t *iv = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *iv);
            if (!iv) {
                free(v);
                snprintf(err, errlen, "out of memory for weight '%s'", ts->name);
                goto done;
            }
            for (int64_t j = 0; j < cnt; j++)
                iv[j] = (int64_t)v[j];
            ex_init(&x, ts->name, &ts->shape, 1, NULL, iv);
            free(iv);
        } else {
            ex_init(&x, ts->name, &ts->shape, 0, v, NULL);
        }
        x.isint[t] = (uint8_t)as_int;
        free(v);
        if (x.failed)
            break;
    }
    order = malloc(sizeof *order * ((size_t)g->n_nodes + 1));
    if (!order) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (graph_topo_order(g, order, verr, sizeof verr) < 0) {
        snprintf(err, errlen, "%s", verr);
        goto done;
    }
    for (int32_t k = 0; k < g->n_nodes && !x.failed; k++)
        ex_one(&x, &g->nodes[order[k]]);
    if (x.failed) {
        snprintf(err, errlen, "%s", x.err);
        goto done;
    }
    {
        Onnx__GraphProto *gp = ex_alloc(&x, sizeof *gp);
        onnx__graph_proto__init(gp);
        gp->name = ex_strdup(&x, g->name && g->name[0] ? g->name : "tasc");
        gp->n_node = x.n_nodes;
        gp->node = x.nodes;
        gp->n_initializer = x.n_inits;
        gp->initializer = x.inits;
        gp->n_input = (size_t)g->n_inputs;
        gp->input = ex_alloc(&x, sizeof(*gp->input) * ((size_t)g->n_inputs + 1));
        for (int32_t i = 0; i < g->n_inputs; i++)
            gp->input[i] = ex_value_info(&x, &g->tensors[g->inputs[i]], x.isint[g->inputs[i]]);
        gp->output = ex_alloc(&x, sizeof(*gp->output) * ((size_t)g->n_outputs + 1));
        for (int32_t i = 0; i < g->n_outputs; i++) {
            int dup = 0;
            for (int32_t j = 0; j < i; j++)
                dup |= g->outputs[j] == g->outputs[i];
            if (!dup)
                gp->output[gp->n_output++] = ex_value_info(&x, &g->tensors[g->outputs[i]], x.isint[g->outputs[i]]);
        }
        Onnx__OperatorSetIdProto *os = ex_alloc(&x, sizeof *os);
        onnx__operator_set_id_proto__init(os);
        os->domain = ex_strdup(&x, "");
        os->has_version = 1;
        os->version = ONNX_EXPORT_OPSET;
        Onnx__ModelProto m;
        onnx__model_proto__init(&m);
        m.has_ir_version = 1;
        m.ir_version = 8;
        m.n_opset_import = 1;
        m.opset_import = &os;
        m.producer_name = ex_strdup(&x, "tasc");
        m.producer_version = ex_strdup(&x, "0.1");
        m.graph = gp;
        size_t n = onnx__model_proto__get_packed_size(&m);
        result = malloc(n ? n : 1);
        if (!result) {
            snprintf(err, errlen, "out of memory for a %zu-byte model", n);
            goto done;
        }
        onnx__model_proto__pack(&m, result);
        *len = n;
    }
done:
    free(order);
    free(x.nodes);
    free(x.inits);
    ex_arena_free(&x);
    return result;
}

int onnx_export(const graph *g, const char *path, char *err, size_t errlen) {
    size_t len = 0;
    char e[GRAPH_ERR_LEN + 64];
    uint8_t *buf = onnx_export_buffer(g, &len, e, sizeof e);
    if (!buf)
        return base_fail(err, errlen, "%s: %s", path, e);
    base_afile f;
    int rc = base_afile_open(&f, path, err, errlen);
    if (rc == 0) {
        fwrite(buf, 1, len, f.f); /* a short write shows in ferror: base_afile_commit reports it */
        rc = base_afile_commit(&f, err, errlen);
    }
    free(buf);
    return rc;
}
