/* verify_impl.h: internals shared by the verifier's files.
 *
 * The axioms' model of shapes (verify_model.c): dims are linear expressions (vx) over integer
 * symbols, collected with their constraints in a vsys; vm_infer types one op in the model (the
 * same code types concrete shapes, where every expression is a constant, and symbolic ones, where
 * the constraints become the hypotheses of a proof or the equations an axiom's instantiations are
 * enumerated from). The signature table (vsig) maps each op of the model to its Z3 function:
 * name, integer arguments and their parameters, tensor arguments. verify_z3.c holds one Z3
 * context with the axioms asserted and encodes rules into queries; verify_eval.c evaluates rule
 * graphs on random values through the CPU references. Nothing here is thread-shared mutable state.
 */
#ifndef TASC_VERIFY_IMPL_H
#define TASC_VERIFY_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <z3.h>

#include "base.h"
#include "ops.h"
#include "rules.h"
#include "verify.h"

#if defined(__GNUC__)
#define VERIFY_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VERIFY_PRINTF(a, b)
#endif

uint64_t verify_hash64(const void *data, size_t n, uint64_t seed);

/* A growing string (JSON and S-expression output): printf appends; oom is set, and later appends
 * are ignored, when memory runs out. Zero-initialise; free(b.s). */
typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} verify_buf;
void verify_buf_printf(verify_buf *b, const char *fmt, ...) VERIFY_PRINTF(2, 3);

/* --- linear dim expressions ------------------------------------------------------------------- */

#define VX_TERMS 8
typedef struct {
    int64_t c;            /* constant part */
    int32_t n;            /* terms, sorted by symbol, no zero coefficients */
    int32_t s[VX_TERMS];  /* symbol ids */
    int64_t k[VX_TERMS];  /* coefficients */
} vx;

vx vx_num(int64_t c);
vx vx_sym(int32_t s);
int vx_is_num(const vx *a, int64_t *c); /* 1 and *c when a is a constant */

/* Symbol kinds: their domain when an axiom's instantiations are enumerated. */
typedef enum {
    VS_DIM,    /* a dim of a tensor variable: 1..max_dim */
    VS_KERNEL, /* a spatial dim of a kernel variable: 1 or 3 */
    VS_AUX,    /* introduced by a division (equal split parts, strides, enlarge): 0..2*max_dim */
    VS_KIND_COUNT
} vs_kind;

typedef enum { VC_EQ, VC_GE } vc_kind; /* e == 0, e >= 0 */
typedef struct {
    vc_kind kind;
    vx e;
} vcons;

#define VS_MAX_SYM 160
#define VS_MAX_CONS 384
typedef struct {
    int32_t n_sym;
    vs_kind kind[VS_MAX_SYM];
    int32_t n_cons;
    vcons cons[VS_MAX_CONS];
    int infeasible;       /* a constraint between constants was false */
    int overflow;         /* too many symbols, terms or constraints */
    /* after vsys_solve: sub[s] is the symbol's value in the free symbols (itself when free) */
    int solved;
    vx sub[VS_MAX_SYM];
} vsys;

void vsys_init(vsys *S);
int32_t vsys_new_sym(vsys *S, vs_kind kind);  /* -1 (and overflow) when full */
vx vsys_add(vsys *S, vx a, vx b);
vx vsys_sub(vsys *S, vx a, vx b);
vx vsys_scale(vsys *S, vx a, int64_t k);
void vsys_require(vsys *S, vc_kind kind, vx e);  /* a constant constraint is checked at once */
void vsys_require_eq(vsys *S, vx a, vx b);
/* Eliminate symbols through the equations with a unit coefficient; fills sub[]. The remaining
 * constraints are rewritten over the free symbols. Sets infeasible when one fails. */
void vsys_solve(vsys *S);
vx vsys_apply(const vsys *S, vx a);     /* substitute the solution */
/* Value of a under values of the free symbols (val[s] for each free s). */
int64_t vsys_eval(const vsys *S, vx a, const int64_t *val);

/* --- the model: shapes, parameters, typing ------------------------------------------------------ */

typedef struct {
    int32_t rank;
    vx d[OPS_MAX_DIMS];
} vshape;

/* An op's parameters as expressions: constants, or symbols where a rule ties a size parameter to
 * a variable's dim (const_imm n, const_iconv c, const_ones shape) or an axiom quantifies it. */
typedef struct {
    vx v[PM_COUNT];
    int32_t n_list;
    vx list[OPS_MAX_LIST];
} vparams;

void vparams_from(vparams *vp, const ops_params *p);

typedef enum { VM_OK = 0, VM_ILLTYPED = -1, VM_UNSUPPORTED = -2 } vm_status;

/* Type one op in the model: constraints go into S, output shapes into out[0..*n_out). Returns
 * VM_ILLTYPED when the shapes cannot fit (rank mismatch, a false constant constraint), and
 * VM_UNSUPPORTED for what the axioms do not model (broadcasting, batched matmul, dilation, ...),
 * each with a one-line reason. */
int vm_infer(vsys *S, ops_type op, const vparams *vp, int32_t n_in, const vshape *in, int32_t *n_out, vshape *out,
             char *why, size_t whylen);

/* Integer-argument kinds of a Z3 function, and their domains in the axiom check. */
typedef enum {
    VA_KEY,   /* parameter `key` as is */
    VA_PAD,   /* PM_PAD, explicit zero padding written as VALID */
    VA_PERM,  /* the perm list written as its digits: [1,0] is 10 */
    VA_LIST,  /* entry idx of the list parameter (const_ones shape) */
    VA_SIZE0  /* split0/split1: the size of the first part */
} va_kind;

typedef enum { VD_STRIDE, VD_PAD, VD_GROUPS, VD_ACT, VD_AXIS, VD_PERM, VD_KSIZE, VD_SIZE, VD_INDEX, VD_COUNT } vd_domain;

typedef struct {
    va_kind kind;
    ops_param_key key;
    int32_t idx;
    vd_domain dom;
} va_spec;

#define VSIG_MAX_INT 6
typedef struct {
    ops_type op;
    const char *suffix;  /* appended to ops_table[op].z3 */
    int32_t out;         /* the output this function stands for */
    int32_t rank;        /* const_ones: the rank; else 0 */
    int32_t n_int;
    va_spec iarg[VSIG_MAX_INT];
    int32_t n_t;         /* tensor arguments (the op's inputs) */
    int32_t kernel_in;   /* bit i: tensor argument i is a kernel (its spatial dims are kernel sizes) */
} vsig;

/* vsig_count rows built before main from the op table's Z3 signatures (ops.h ops_z3_sig). */
extern const vsig *const vsig_table;
extern int32_t vsig_count;
/* The Z3 name of signature i into buf ("conv2d", "split0", "const_ones4"); returns buf. */
const char *vsig_name(int32_t i, char *buf, size_t len);
int32_t vsig_find_name(const char *name);     /* -1 if none */
/* The signature that encodes output `out` of op (rank: const_ones rank), or -1. */
int32_t vsig_find(ops_type op, int32_t out, int32_t rank);
/* Canonical pad code of a node (SAME or VALID), or -1 when explicit non-zero padding. */
int64_t vsig_pad_code(const vparams *vp);
/* perm as digits, or -1 when the list does not fit. */
int64_t vsig_perm_code(const vparams *vp);
/* Decode a perm code of a given rank into list; 0 or -1. */
int vsig_perm_decode(int64_t code, int32_t rank, int64_t *list);

/* --- axioms ---------------------------------------------------------------------------------- */

/* Parse ax's text in a scratch Z3 context and check it against the model (verify_z3.c); -1 with a
 * one-line message naming the file and axiom. */
int vz_check_text(const verify_axioms *ax, char *err, size_t errlen);

struct verify_axioms {
    char *text;
    char *where;
    int32_t n;
    char (*names)[VERIFY_NAME_LEN];
    char **docs;
    char hash[17];
};

/* --- one Z3 context with the axioms --------------------------------------------------------------- */

typedef struct {
    Z3_context c;
    Z3_solver s;
    const verify_axioms *ax;
    Z3_sort T, I;
    Z3_func_decl dim;
    Z3_func_decl *fn;    /* per vsig */
    Z3_ast_vector axioms; /* the parsed axioms, in file order */
    Z3_ast *lits;        /* per axiom: the Boolean that tracks it */
    int32_t n_axioms;
    int32_t queries;     /* since the solver was made */
    unsigned timeout_ms; /* the solver's current timeout */
    int shape_search;    /* 1: after an unknown, look for shapes with a numeric counterexample */
    int free_splits;     /* 1: verify_config.split_sizes_free (equal two-way splits cut at a free n) */
    void *enc;           /* encoding state (verify_z3.c) */
    const rules_rule *cur; /* the rule being encoded */
} vz_ctx;

/* A context with every axiom asserted under its tracking literal. NULL with a message when the
 * axioms do not load (the same checks as verify_axioms_load). Caller frees with vz_free. */
vz_ctx *vz_new(const verify_axioms *ax, char *err, size_t errlen);
void vz_free(vz_ctx *z);
/* Replace the solver by a fresh one with the axioms (after a timeout, and every so many queries). */
int vz_reset(vz_ctx *z, char *err, size_t errlen);

/* Prove one rule (Z3, then the shape search when z->shape_search and Z3 said unknown). enabled (may be NULL: all) selects the axioms the
 * query may use. Fills res (outcome, time, core or reason). */
void vz_prove(vz_ctx *z, const rules_rule *r, double timeout_s, const uint8_t *enabled, verify_result *res);

/* --- numeric evaluation ----------------------------------------------------------------------------- */

/* Evaluate both sides of r on random values at the variables' own shapes and compare the mapped
 * outputs. Returns 1 when they agree (relative error <= tol), 0 on a mismatch (reason in why), -1
 * when the rule cannot be evaluated (why). *rel_err gets the largest relative error. */
int verify_eval_rule(const rules_rule *r, uint64_t seed, double tol, double *rel_err, char *why, size_t whylen);

/* 1 if op k of side `side` of r is a two-way split of equal parts (sizes []) whose sizes no
 * constraint ties to a dim: the splits verify_config.split_sizes_free cuts at a free n. */
int verify_split_is_equal2(const rules_rule *r, int side, int32_t k);
/* *c = r with every such split cut at [n, d - n] (d from the rule's own shapes), n = 1, where
 * every such split's d is at least 3 (so the cut is not an equal one). 0, or -1 when the copy
 * does not type-check or no split can be cut so. */
int verify_free_cut(const rules_rule *r, rules_rule *c);

#endif
