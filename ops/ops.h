/* ops.h: the operator table, the single source of truth for what an operator is.
 *
 * Operators are listed once in ops/ops.def and parameters in ops/params.def; the enums and
 * names here are generated from those lists, and ops/ops.c holds one designated-initializer
 * entry per operator: parameters and domains, shape inference, CPU reference, FLOPs, and the
 * slots later stages fill (CUDA, Z3 symbol). Shape inference reports errors through a message
 * buffer and never asserts on user input. CPU references are plain float32 loops: the oracle.
 * Nothing returned by this module is owned by the caller unless a comment says so.
 */
#ifndef TASC_OPS_H
#define TASC_OPS_H

#include <stddef.h>
#include <stdint.h>

#define OPS_MAX_DIMS 6     /* tensor rank limit */
#define OPS_MAX_INPUTS 64  /* concat fan-in limit */
#define OPS_MAX_OUTPUTS 8  /* split fan-out limit */
#define OPS_MAX_LIST 8     /* perm / shape / sizes length limit */
#define OPS_MAX_OP_PARAMS 12

typedef enum {
#define OP(id, name, min_in, max_in, n_out, doc) OP_##id, /* doc */
#include "ops.def"
#undef OP
    OP_COUNT
} ops_type;

typedef enum {
#define PM(id, name, kind) PM_##id,
#include "params.def"
#undef PM
    PM_COUNT
} ops_param_key;

typedef enum { OPS_PK_INT, OPS_PK_FLOAT, OPS_PK_ACT, OPS_PK_PADMODE, OPS_PK_LIST } ops_param_kind;

/* Activations a conv2d or matmul applies in its epilogue, and the standalone ops they stand for
 * (ops_act_op): new kinds are appended, so stored values keep their meaning. */
typedef enum {
    OPS_ACT_NONE,
    OPS_ACT_RELU,
    OPS_ACT_SIGMOID,
    OPS_ACT_TANH,
    OPS_ACT_GELU,      /* the erf form */
    OPS_ACT_SILU,      /* x * sigmoid(x) */
    OPS_ACT_GELU_TANH, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    OPS_ACT_RELU6,     /* min(max(x, 0), 6): clip with lo 0, hi 6 */
    OPS_ACT_HARDSWISH, /* x * max(0, min(1, x/6 + 1/2)) */
    OPS_ACT_COUNT
} ops_act;
typedef enum { OPS_PAD_EXPLICIT, OPS_PAD_SAME, OPS_PAD_VALID, OPS_PAD_COUNT } ops_padmode;

/* A tensor shape; dims[i] for i >= rank are unused and kept 0. Rank 0 is a scalar. */
typedef struct {
    int32_t rank;
    int64_t dims[OPS_MAX_DIMS];
} ops_shape;

/* A node's parameters. Only the keys the operator declares are meaningful; the rest are 0. */
typedef struct {
    int64_t v[PM_COUNT];
    int32_t n_list;
    int64_t list[OPS_MAX_LIST]; /* PM_LIST values: perm (transpose), shape (reshape, const_ones), sizes (split) */
} ops_params;

/* One operator parameter as the op declares it: key, inclusive domain, default, and the
 * values the rule generator draws from (a subset of the domain; none means the default only). */
typedef struct {
    ops_param_key key;
    int64_t lo, hi;          /* domain; for FLOAT keys unused */
    int64_t def;             /* default (float bits for FLOAT keys) */
    int required;            /* no default: must be given */
    const char *list_name;   /* for PM_LIST: what the list is called in JSON ("perm", "shape", "sizes") */
    int32_t n_gen;
    int64_t gen[8];
} ops_param_desc;

/* Everything a kernel or a cost function needs to know about one node instance. */
typedef struct {
    ops_type op;
    const ops_params *p;
    int32_t n_in, n_out;
    const ops_shape *in;   /* n_in shapes */
    const ops_shape *out;  /* n_out shapes */
} ops_sig;

/* What a GPU kernel entry point (ops_cuda_fn) receives from the executor that calls it: stream
 * and library handles, the phase, the node's state slot, scratch memory and an error buffer.
 * Declared here so the kernels (ops/cuda) need nothing from the GPU runtime above them; the
 * runtime (src/runtime) fills one per node call. Kernels use it through ops/cuda/ops_cuda.h.
 *
 * Two phases: in the setup phase (setup 1, the eager first run) a kernel may create its state,
 * measure algorithms and ask for scratch; it runs for real. In the run phase (stream capture or
 * replay) it must only enqueue work on stream: no allocation, no synchronisation. */
typedef struct ops_cuda_env ops_cuda_env;
struct ops_cuda_env {
    void *stream;               /* cudaStream_t */
    void *cudnn;                /* cudnnHandle_t */
    int setup;                  /* 1: setup phase; 0: run phase */
    int verbose;                /* explain choices on stderr */
    const char *node;           /* the node's name, for messages */
    void *state;                /* the node's state: NULL until the kernel sets it (setup phase) */
    void (*state_free)(void *state);
    size_t ws_limit;            /* scratch limit in bytes */
    /* *ws = scratch of at least bytes, valid until the kernel returns (setup phase: grows and
     * records the need; run phase: the need must have been recorded); 0, or -1 with err set. */
    int (*workspace)(ops_cuda_env *e, size_t bytes, void **ws);
    /* Setup phase: the whole scratch up to ws_limit, for algorithm searches. */
    int (*workspace_search)(ops_cuda_env *e, void **ws, size_t *bytes);
    /* The runtime's residual fusion (src/runtime/rt_fuse.c, conv2d only, whose own activation is
     * then none): y = fuse_act(op(...) + fuse_add), fuse_add of the output's shape; NULL: no fusion. */
    const float *fuse_add;
    int fuse_act;               /* ops_act */
    /* The runtime's producer fusions (rt_fuse.c, rows only: the normalised dims last):
     * the node computes its input 0 itself from the producer's operands, rounded to float as the
     * producer node would round it. fuse_scale (softmax): y = softmax(x * fuse_scale[0]), a
     * one-element device tensor (the smul's). fuse_in2 (layernorm): y = layernorm(x + fuse_in2),
     * fuse_in2 of x's shape (the ewadd's other operand). NULL: none. */
    const float *fuse_scale;
    const float *fuse_in2;
    void *owner;                /* the executor's context, opaque to kernels */
    char *err;                  /* the node's failure message */
    size_t errlen;
};

/* Shape inference: fill out[0..*n_out) from the inputs, or write a one-line message to err and
 * return -1. Parameters have already been checked against their domains. */
typedef int (*ops_shape_fn)(const ops_params *p, int32_t n_in, const ops_shape *in,
                            int32_t *n_out, ops_shape *out, char *err, size_t errlen);
/* CPU reference: out buffers are preallocated with the inferred shapes. Deterministic. */
typedef void (*ops_cpu_fn)(const ops_sig *s, const float *const *in, float *const *out);
/* Floating-point operations of one call (a multiply-add counts 2). */
typedef double (*ops_flops_fn)(const ops_sig *s);
/* Fingerprint semantics for the rule generator: exact arithmetic on uint32 values, wrapping mod 2^32
 * (division by an odd pool size is multiplication by its inverse mod 2^32), with relu replaced by
 * the non-linear stand-in x*(x+1)+1 so relu's zeros cannot make false equalities. Defined for the
 * generation op set only (ops/ops_fp.c); NULL for the others. */
typedef void (*ops_fp_fn)(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
/* GPU implementation on device buffers; returns 0, or -1 with a message in env->err. The kernels
 * (ops/cuda) register one per op (ops_cuda_register). */
typedef int (*ops_cuda_fn)(ops_cuda_env *env, const ops_sig *s, const float *const *in, float *const *out);

/* A 2-D sliding-window op (ops_window2d) slides over input 0 (N,C,H,W) a window whose size is
 * input 1's spatial dims (a conv kernel (F,C/g,KH,KW)) or the parameters PM_KH x PM_KW. Window
 * parameters (strides, pads, pad mode, dilations) describe the same node in several ways, so the
 * rule matcher (rules/match.c) compares windowed nodes by their resolved window. */
typedef enum { OPS_WIN_NONE, OPS_WIN_KERNEL, OPS_WIN_PARAMS } ops_window_kind;

/* The op as a view of bytes (the GPU runtime then launches nothing for the node: src/runtime/
 * rt_view.c): 1 when, for these parameters and shapes, each of the n parts is a run of the whole's
 * elements in row-major order from element off[k] on, else 0. As ops_desc.view the whole is input
 * 0 and the parts are the outputs (a reshape; a split whose axes before the split axis have size
 * 1; a transpose moving only axes of size 1); as ops_desc.view_in the whole is output 0 and the
 * parts are the inputs, which their producers can then write in place (a concat whose axes before
 * the concat axis have size 1). */
typedef int (*ops_view_fn)(const ops_params *p, const ops_shape *whole, int32_t n, const ops_shape *const *parts,
                           int64_t *off);

/* The op as an operation that a kernel can apply to its own values with the op's second input, in
 * an epilogue or a prologue (the GPU runtime's fusions, src/runtime/rt_fuse.c; which kernel takes
 * which is the kernel's, ops_cuda_env.fuse_add, fuse_scale and fuse_in2). */
typedef enum {
    OPS_EPI_NONE,
    OPS_EPI_ADD,   /* x + y elementwise (ewadd) */
    OPS_EPI_SCALE, /* x * s for a one-element s (smul) */
    OPS_EPI_COUNT
} ops_epi;

/* The op's function in the verifier's axioms (verifier/axioms.smt2, symbol ops_desc.z3): its tensor
 * arguments are the node's first n_t inputs, its integer arguments the parameters in args, each
 * passed as its kind says. One function in all, or a family: one per output (per_output k:
 * "split0", "split1"), or one per length r = 1..per_rank of the list parameter ("const_ones1".."4"),
 * the OPS_Z3_LIST argument then standing for the list's r entries. The verifier builds its
 * signature table from these (verifier/verify_model.c); nothing else there is per op except the
 * op's shape model. */
typedef enum {
    OPS_Z3_KEY,   /* the parameter's value */
    OPS_Z3_PAD,   /* the pad mode, explicit zero padding written as 'valid' */
    OPS_Z3_PERM,  /* the list as its digits: perm [1,0] is 10 */
    OPS_Z3_LIST,  /* each entry of the list (a per_rank family) */
    OPS_Z3_SIZE0  /* the size of output 0 along the axis (split's sizes) */
} ops_z3_arg_kind;
typedef struct {
    ops_z3_arg_kind kind;
    ops_param_key key;
} ops_z3_arg;
#define OPS_Z3_MAX_ARGS 6
typedef struct {
    int32_t n_t;
    int32_t n_args;
    ops_z3_arg args[OPS_Z3_MAX_ARGS];
    int32_t per_output, per_rank; /* 0 (one function) or the family's size */
} ops_z3_sig;

/* The op in ONNX (graph/onnx): the op_type a node becomes. Without a special case in the exporter
 * (onnx_export.c: fused activations, parameters that ONNX takes as inputs) a node is written as
 * one ONNX node of that type over the same inputs and outputs, with windowed ops' window
 * attributes (ops_window2d) and the parameters in attrs as attributes (INT: int, FLOAT: float,
 * the list: ints). ints: integer (id) tensors pass through, the output is int64 when every input
 * is (data movement, + - *); otherwise inputs are cast to float. The importer's plain converters
 * (onnx_ops.c) find the op by the same name. */
#define OPS_ONNX_MAX_ATTRS 2
typedef struct {
    ops_param_key key;
    const char *name; /* NULL: end of the list */
} ops_onnx_attr;
typedef struct {
    const char *op; /* NULL: no ONNX op of its own (gelu: its erf form; generators: initializers) */
    int ints;
    ops_onnx_attr attrs[OPS_ONNX_MAX_ATTRS];
} ops_onnx;

typedef struct {
    const char *name;
    const char *doc;
    int32_t min_in, max_in;   /* max_in -1: up to OPS_MAX_INPUTS */
    int32_t n_out;            /* -1: given by the PM_PARTS parameter */
    int32_t n_params;
    ops_param_desc params[OPS_MAX_OP_PARAMS];
    const char *roles[5];     /* what inputs 0..4 are called in messages ("input 1 (kernel)"); NULL: "input K" */
    ops_shape_fn shape;
    ops_cpu_fn cpu;
    ops_flops_fn flops;
    ops_fp_fn fp;             /* integer fingerprint semantics (generation op set), or NULL */
    int gen;                  /* 1: in TASO's generation op set (the enumerator uses it) */
    const char *z3;           /* uninterpreted-function symbol in verifier/axioms.smt2, or NULL */
    ops_z3_sig z3sig;         /* that function's signature (with z3) */
    int weight_input_mask;    /* bit i: input i is normally a weight (conv kernel, bn stats, ...) */
    int kernel_input_mask;    /* bit i: input i is a conv kernel (F,C,KH,KW): its dims 2, 3 are window sizes */
    ops_window_kind window;   /* a 2-D sliding-window op, and where its window size comes from */
    ops_onnx onnx;
    ops_act act;              /* the activation the op is, as a conv2d or matmul epilogue (ops_act_of) */
    ops_view_fn view;         /* its outputs as views of input 0 (ops_view_fn); NULL: never */
    ops_view_fn view_in;      /* its inputs as views of output 0 (ops_view_fn); NULL: never */
    ops_epi epi;              /* the operation it is with its second input, for a kernel to apply */
} ops_desc;

extern const ops_desc ops_table[OP_COUNT];
/* The CUDA slot is writable so the kernels register themselves at start-up (ops_cuda_register,
 * ops/cuda) without the op table depending on CUDA; NULL in a build without CUDA. */
extern ops_cuda_fn ops_cuda[OP_COUNT];

typedef struct {
    const char *name;
    ops_param_kind kind;
} ops_param_info;
extern const ops_param_info ops_param_table[PM_COUNT];
extern const char *const ops_act_names[OPS_ACT_COUNT];
extern const char *const ops_padmode_names[OPS_PAD_COUNT];

/* Lookups; return -1 (or NULL) when not found. */
int ops_find(const char *name);                 /* ops_type or -1 */
int ops_param_find(const char *name);           /* ops_param_key or -1 */
const ops_param_desc *ops_param_desc_of(ops_type op, ops_param_key key); /* NULL if op lacks it */

/* Fill p with the op's defaults (all other keys 0). */
void ops_params_default(ops_type op, ops_params *p);
/* Check every declared parameter against its domain; -1 with a message naming it otherwise. */
int ops_params_check(ops_type op, const ops_params *p, char *err, size_t errlen);
/* Full check of a node: input count, parameters, shape inference. */
int ops_infer(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
              int32_t *n_out, ops_shape *out, char *err, size_t errlen);

/* Float parameters are stored as their IEEE-754 single bits. */
int64_t ops_f2p(float f);
float ops_p2f(int64_t v);

/* Shape helpers. ops_shape_numel returns -1 on int64 overflow. */
int64_t ops_shape_numel(const ops_shape *s);
int ops_shape_eq(const ops_shape *a, const ops_shape *b);
ops_shape ops_shape_make(int32_t rank, const int64_t *dims);
/* "(1,3,224,224)" into buf; returns buf. */
const char *ops_shape_str(const ops_shape *s, char *buf, size_t len);

/* The resolved sliding-window geometry of a windowed node (ops_desc.window: conv2d and the pools),
 * with the pad mode applied ("same" = ceil(H/stride) outputs, the odd padding cell at the end as
 * ONNX SAME_UPPER), so that every executor pads identically. x is the (N,C,H,W) input, w the
 * kernel input (F,C/g,KH,KW) of an OPS_WIN_KERNEL op, NULL for OPS_WIN_PARAMS (window PM_KH x
 * PM_KW). Returns 0, or -1 with a one-line message (err may be NULL) when the window does not fit
 * the input. */
typedef struct {
    int64_t kh, kw;          /* window (undilated) */
    int64_t sh, sw, dh, dw;  /* strides, dilations */
    int64_t pt, pl, pb, pr;  /* zero padding per side */
    int64_t oh, ow;          /* output height and width */
} ops_window;
int ops_window2d(ops_type op, const ops_params *p, const ops_shape *x, const ops_shape *w,
                 ops_window *win, char *err, size_t errlen);

/* Activation applied by fused epilogues (conv2d, matmul) and by the standalone ops. */
float ops_act_apply(ops_act act, float x);
/* The activation a standalone node computes (relu, sigmoid, tanh, gelu, silu, gelu_tanh,
 * hardswish, and clip with lo 0 and hi 6 as relu6), or OPS_ACT_NONE for any other node. */
ops_act ops_act_of(ops_type op, const ops_params *p);
/* 1 if op computes each output element from the same element of its operands (numpy
 * broadcasting; the table's elementwise FLOP count marks them): ewadd .. ewdiv, pow, smul and the
 * one-tensor functions (activations, erf, sqrt, clip). */
int ops_is_elementwise(ops_type op);
/* 1 if transpose parameters p on input shape in move no element (only axes of size 1 move): the
 * transpose is then a view (ops_desc.view). */
int ops_transpose_moves_nothing(const ops_shape *in, const ops_params *p);
/* 1 / E[act(x)^2] for x ~ N(0,1): the gain that keeps the second moment of a layer's output
 * through the activation after it (variance-preserving random weights); He's 2 for relu and for
 * none. */
double ops_act_gain(ops_act act);

/* Start-up self-check of the table: every op has a name, shape, cpu and flops, and its facts agree
 * (window, Z3 signature, ONNX attributes name declared parameters, views and epilogue operations
 * fit the op's inputs and outputs); returns the number of
 * problems, one line each on stderr (with verbose, also each empty optional slot: cuda, z3). */
int ops_table_check(int verbose);

#endif
