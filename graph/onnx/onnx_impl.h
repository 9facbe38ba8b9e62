/* onnx_impl.h: internals shared by the ONNX importer's files: onnx_import.c (the driver: file,
 * initializers, the walk over the nodes, the report), onnx_util.c (messages, names, the value
 * table, weights, node helpers, attributes: the helpers every other file uses), onnx_const.c
 * (constant tensors and their evaluation at import), onnx_ops.c (one converter per ONNX operator),
 * onnx_wire.c (the nesting limit, checked on the wire format before protobuf-c unpacks),
 * onnx_pattern.c (activation subgraphs recognised after the walk: SiLU, tanh-GELU, erf-GELU).
 *
 * Every ONNX value name maps to one ox_val: a runtime tensor of the graph, a constant held on
 * the host (folded at import), or poisoned (downstream of an unsupported node). Converters read
 * their inputs through ox_in, produce outputs with ox_set_runtime / ox_set_const, and return
 * OX_OK, OX_UNSUP (with c->reason: the node is listed as unsupported) or OX_ERR (with c->err: the
 * model is wrong, import stops). The context owns everything it holds; ox_ctx_free releases it.
 */
#ifndef TASC_ONNX_IMPL_H
#define TASC_ONNX_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "base.h"
#include "graph.h"
#include "onnx.h"
#include "onnx.pb-c.h"

#if defined(__GNUC__)
#define OX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define OX_PRINTF(a, b)
#endif

enum { OX_OK = 0, OX_UNSUP = 1, OX_ERR = -1 };

#define OX_MAX_EXACT (INT64_C(1) << 24) /* integers held in float32 are exact up to here */
/* Integer tensors made by folding at import (shape arithmetic, masks, index lists) are refused
 * above this many elements: real shape computations stay far below it, and a model that asks for
 * more gets an error naming the node instead of gigabytes of int64. Float results of folding are
 * bounded by the graph's element limit like any weight. */
#define OX_MAX_FOLD_INT (INT64_C(1) << 24)
/* Strides, dilations, kernel sizes and pads above this are refused, so that the window arithmetic
 * on them (products and sums of a few) stays far inside int64. */
#define OX_MAX_WINDOW (INT64_C(1) << 30)

/* Where a float constant's values come from until they are needed. */
typedef enum { OX_SRC_MEM, OX_SRC_EXT, OX_SRC_RANDOM } ox_src;

/* A tensor known at import time. Integer, boolean and int32 tensors are held as int64. */
typedef struct {
    ops_shape shape;     /* dims may be 0 (empty tensors appear in shape arithmetic) */
    int is_int;          /* 1: int64 values in i; 0: float32 values in f */
    int64_t *i;          /* (numel) when is_int */
    float *f;            /* (numel) when !is_int and loaded; NULL while src is EXT or RANDOM */
    ox_src src;          /* float only: where f comes from when NULL */
    char *ext_path;      /* EXT: data file, relative to the context's base_dir; owned */
    int64_t ext_offset;  /* EXT: byte offset of the first value */
    uint64_t seed;       /* RANDOM */
    float std;           /* RANDOM: mean is 0 */
    int synthetic;       /* values made up for missing data (--random-weights): not to decide shapes */
} ox_const;

typedef enum { OX_V_RUNTIME, OX_V_CONST, OX_V_POISON } ox_vstate;

typedef struct ox_val {
    char *name;          /* key; owned */
    ox_vstate state;
    int32_t t;           /* RUNTIME: the graph tensor; CONST: its weight once materialised, or -1 */
    int is_int;          /* RUNTIME: holds integers (ids) as exact floats */
    ox_const c;          /* CONST */
    int has_pad;         /* RUNTIME: an unapplied zero Pad of the spatial dims (folded into a conv) */
    int64_t pad[4];      /* t, l, b, r */
    char *pad_node;      /* the Pad node's name, for messages; owned */
    struct ox_val *alias_of; /* CONST: another name of this constant (Identity of a weight): the same
                                weight, one copy of the values; c holds only the shape */
    UT_hash_handle hh;
} ox_val;

typedef struct ox_name {
    char *name;          /* owned */
    UT_hash_handle hh;
} ox_name;

/* Consumers of each value name: filled by the driver once before the walk (ox_out_used). */
typedef struct ox_use {
    char *name;          /* borrowed from the model */
    int32_t n;
    UT_hash_handle hh;
} ox_use;

typedef struct ox_shape_info {
    char *name;          /* owned */
    ops_shape shape;     /* static shape recorded in the model (value_info, outputs) */
    UT_hash_handle hh;
} ox_shape_info;

typedef struct {
    char *op_type;       /* owned */
    int32_t count;
    char *first;         /* first node's display name; owned */
    char *reason;        /* why, for attribute-level refusals; owned, may be NULL */
} ox_unsup_rec;

typedef struct {
    const char *where;           /* model name in messages */
    const char *base_dir;        /* folder of the model (external data), may be NULL */
    onnx_import_opts o;
    int64_t opset;               /* default-domain opset */
    graph *g;
    ox_val *vals;                /* uthash by name */
    ox_name *names;              /* every tensor name in use: ONNX values, generated names */
    ox_name *node_names;         /* graph node names in use */
    ox_name *reported_pads;      /* Pad nodes already listed as unsupported */
    struct ox_use *uses;         /* consumers per value name (uthash), see ox_out_used */
    ox_shape_info *shapes;       /* uthash by name */
    ox_unsup_rec *unsup; int32_t n_unsup, cap_unsup;
    /* the node being converted */
    const Onnx__NodeProto *node;
    const char *node_name;       /* display name */
    char reason[256];            /* OX_UNSUP: why */
    char err[GRAPH_ERR_LEN];     /* OX_ERR: the message, without the "FILE: " prefix */
    int32_t helper_count;        /* names of inserted helper nodes and tensors */
} ox_ctx;

/* --- messages (onnx_util.c) ----------------------------------------------------------------- */
/* One line each (base_vfail_line): the model's names may hold newlines. */
int ox_fail(ox_ctx *c, const char *fmt, ...) OX_PRINTF(2, 3);   /* sets c->err, returns OX_ERR */
int ox_unsup(ox_ctx *c, const char *fmt, ...) OX_PRINTF(2, 3);  /* sets c->reason, returns OX_UNSUP */

/* --- names (onnx_util.c) -------------------------------------------------------------------- */
/* Register name as in use (a copy; nothing if it already is). */
void ox_name_add(ox_ctx *c, const char *name);
/* A fresh tensor name "<base>/<what>[_k]" (registered; the context owns the string). */
const char *ox_fresh_name(ox_ctx *c, const char *base, const char *what);
/* Rename graph tensor t to name (registered). */
void ox_rename_tensor(ox_ctx *c, int32_t t, const char *name);

/* --- the value table (onnx_util.c) ---------------------------------------------------------- */
/* A new entry for name (state RUNTIME, t = -1) in the table; the context owns it. */
ox_val *ox_val_new(ox_ctx *c, const char *name);
ox_val *ox_find(ox_ctx *c, const char *name);
/* Input i of the current node, aliases resolved; NULL when absent (beyond n_input, or the empty
 * name). */
ox_val *ox_in(ox_ctx *c, int i);
/* Define output i of the current node. ox_set_const takes ownership of k's buffers. */
int ox_set_runtime(ox_ctx *c, int i, int32_t t, int is_int);
int ox_set_const(ox_ctx *c, int i, ox_const *k);
/* Define output i as the same value as v (Identity and friends). */
int ox_set_alias(ox_ctx *c, int i, const ox_val *v);
/* Define output i as the runtime value v with a zero padding of its spatial dims still to apply
 * (t, l, b, r added to what v carries); only a Conv may consume it. */
int ox_set_padded(ox_ctx *c, int i, const ox_val *v, const int64_t pad[4]);
/* 1 if output i of the current node is used by another node or is a graph output. */
int ox_out_used(ox_ctx *c, int i);
/* The graph tensor of v: runtime tensors as they are; constants become weights (once). */
int32_t ox_tensor(ox_ctx *c, ox_val *v);
/* A weight holding k (named after base, made unique); k stays owned by the caller. */
int32_t ox_weight_from(ox_ctx *c, const char *base, ox_const *k);
/* Shape of v (runtime or constant). */
const ops_shape *ox_shape(ox_ctx *c, const ox_val *v);
/* A static shape recorded in the model for value name, or NULL. */
const ops_shape *ox_recorded_shape(ox_ctx *c, const char *name);

/* Add an op-table node for the current ONNX node. names: the ONNX output names of its outputs
 * (NULL or an entry NULL: a generated helper name). Parameter domains are checked first: a
 * parameter the table cannot take gives OX_UNSUP. Writes the output tensor ids to out. */
int ox_node(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in,
            const char *const *names, int32_t *out);
/* A helper node for the current ONNX node with one generated output name. */
int ox_helper(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in, int32_t *out);
/* A reshape of tensor t to shape s (a helper); returns OX_OK with *out, or an error code. */
int ox_reshape(ox_ctx *c, int32_t t, const ops_shape *s, const char *name, int32_t *out);
/* A transpose of tensor t by perm (a helper). */
int ox_transpose(ox_ctx *c, int32_t t, int32_t rank, const int64_t *perm, const char *name, int32_t *out);

/* --- attributes (onnx_util.c) --------------------------------------------------------------- */
const Onnx__AttributeProto *ox_attr(ox_ctx *c, const char *name);
/* Integer / float / string attribute with a default; a wrong type is OX_ERR. */
int ox_attr_int(ox_ctx *c, const char *name, int64_t def, int64_t *v);
int ox_attr_float(ox_ctx *c, const char *name, float def, float *v);
int ox_attr_str(ox_ctx *c, const char *name, const char *def, char *buf, size_t len);
/* Integer list attribute: *n = -1 when absent; at most max values. */
int ox_attr_ints(ox_ctx *c, const char *name, int64_t *v, int32_t max, int32_t *n);

/* --- constants (onnx_const.c) ---------------------------------------------------------------- */
void ox_const_free(ox_const *k);
int64_t ox_numel(const ops_shape *s);   /* product of dims (0 for an empty tensor); INT64_MAX on overflow */
/* OX_ERR with a message if a tensor of shape s would be over the graph's element limit. */
int ox_check_size(ox_ctx *c, const ops_shape *s);
/* ox_check_size, and for an integer result (is_int) the folding limit OX_MAX_FOLD_INT: OX_ERR
 * with a message giving the shape. Called before a folded result is allocated. */
int ox_check_fold(ox_ctx *c, const ops_shape *s, int is_int);
/* Allocate k with shape s (values zero). */
void ox_const_alloc(ox_const *k, const ops_shape *s, int is_int);
/* Deep copy. */
void ox_const_copy(ox_ctx *c, ox_const *dst, ox_const *src);
/* Make f (or i) present: reads external data, generates random values. OX_OK or OX_ERR. */
int ox_const_load(ox_ctx *c, ox_const *k);
/* Values as float32 (a new buffer, caller frees) or as int64 (new buffer); OX_ERR for a float
 * tensor asked as integers when its values are not integral. */
int ox_const_floats(ox_ctx *c, ox_const *k, float **out);
int ox_const_ints(ox_ctx *c, ox_const *k, int64_t **out);
/* Read a TensorProto (raw, typed or external data) into k. name for messages. */
int ox_const_from_proto(ox_ctx *c, const Onnx__TensorProto *t, ox_const *k);
/* Integer list from a constant 0-d or 1-d tensor (shapes, axes, pads); OX_UNSUP if it is
 * synthetic (made-up values), OX_ERR if it is too long. */
int ox_const_list(ox_ctx *c, ox_val *v, const char *what, int64_t *out, int32_t max, int32_t *n);

/* Generic evaluation on constants: data movement keeps the element type. */
int ox_eval_transpose(ox_ctx *c, ox_const *x, const int64_t *perm, ox_const *out);
int ox_eval_concat(ox_ctx *c, ox_const **xs, int32_t n, int32_t axis, ox_const *out);
int ox_eval_gather(ox_ctx *c, ox_const *x, ox_const *idx, int32_t axis, ox_const *out);
int ox_eval_gather_elements(ox_ctx *c, ox_const *x, ox_const *idx, int32_t axis, ox_const *out);
int ox_eval_slice(ox_ctx *c, ox_const *x, int32_t n_axes, const int64_t *starts, const int64_t *ends,
                  const int64_t *axes, const int64_t *steps, ox_const *out);
int ox_eval_expand(ox_ctx *c, ox_const *x, const ops_shape *to, ox_const *out);
int ox_eval_where(ox_ctx *c, ox_const *cond, ox_const *x, ox_const *y, ox_const *out);
/* ScatterND of x at idx (last axis: index tuples) with upd; red: 0 (replace), '+', '*', 'M' (max),
 * 'm' (min). Out-of-range indices and misfitting shapes are OX_ERR naming them. */
int ox_eval_scatter_nd(ox_ctx *c, ox_const *x, ox_const *idx, ox_const *upd, int red, ox_const *out);
/* Elementwise binary ops with numpy broadcasting. op: '+', '-', '*', '/', '^' (pow), '%' (Mod,
 * fmod 0: the remainder has the divisor's sign; integers only), 'f' (Mod, fmod 1: the dividend's
 * sign), 'M' (Max), 'm' (Min), '=' (Equal), '<', '>', 'l' (<=), 'g' (>=), '&' (And), '|' (Or),
 * 'x' (Xor). Integer inputs use checked integer arithmetic: division truncates toward zero (as
 * onnxruntime), and an overflow or a division by zero is OX_ERR naming the operands. Pow's result
 * has its base's type. Comparisons and logic give integers 0 / 1. */
int ox_eval_binary(ox_ctx *c, int op, ox_const *a, ox_const *b, ox_const *out);
/* Broadcast shape of a and b; OX_ERR naming them if incompatible. */
int ox_broadcast(ox_ctx *c, const ops_shape *a, const ops_shape *b, ops_shape *out);
/* Evaluate an op-table operator on constant inputs with its CPU reference (float32). */
int ox_eval_table(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, ox_const **in,
                  int32_t *n_out, ox_const *out);

/* --- activation patterns (onnx_pattern.c) ---------------------------------------------------- */
/* Mul(x, Sigmoid(x)) becomes silu, transformers' tanh-GELU subgraph gelu_tanh, torch's erf-GELU
 * subgraph gelu, in the imported graph with its outputs marked; the nodes left unread are dropped
 * (graph_compact: ids change), and such an act reading a reshape of a conv2d's or matmul's output
 * moves before the reshape. The counts of silu and gelu_tanh (may be NULL). */
void ox_find_patterns(graph *g, int32_t *n_silu, int32_t *n_gelu_tanh);

/* --- wire format (onnx_wire.c) -------------------------------------------------------------- */
#define OX_MAX_NESTING 64 /* messages nested deeper than this are refused before protobuf-c unpacks */
/* 0 if no message in the serialized model nests deeper than max_depth levels (the model is level
 * 1), else -1 with *at the byte offset of the first message that does. */
int ox_wire_depth_check(const void *data, size_t len, int max_depth, size_t *at);

/* --- converters (onnx_ops.c) ----------------------------------------------------------------- */
typedef int (*ox_convert_fn)(ox_ctx *c);
typedef struct {
    const char *op_type;
    ox_convert_fn fn;
    const char *attrs;   /* comma-separated attributes the converter understands */
} ox_converter;
/* The converter of an op type of the default domain, or NULL. */
const ox_converter *ox_converter_find(const char *op_type);

#endif
