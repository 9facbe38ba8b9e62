/* rules.h: graph substitution rules and the rule file (JSON, specified in rules/README.md).
 *
 * A rule says that two small graphs over the same variables compute the same values: the source
 * graph (src) and the target graph (dst), with a mapping between their outputs. Ops carry concrete
 * parameters; a parameter that stands for a size (const_imm n, const_ones shape, ...) also carries a
 * constraint naming the variable dims it was equal to where the rule was found. The generator
 * writes rule files, the verifier reads candidates and writes proved rules, the optimizer reads
 * rules to match them. Loading validates everything (refs, params, shapes through ops_infer) and
 * reports the first problem as one line "FILE: rule 'ID': ...". A rules_set owns all its memory.
 */
#ifndef TASC_RULES_H
#define TASC_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define RULES_FORMAT "tasc-rules"
#define RULES_VERSION 1
#define RULES_MAX_OPS 8      /* ops per side */
#define RULES_MAX_VARS 16    /* variables per rule */
#define RULES_MAX_IN 4       /* inputs per op */
#define RULES_MAX_OUTPUTS 8  /* mapped outputs per rule */
#define RULES_MAX_CONSTRAINTS 32 /* every list entry of a constant on both sides of a 4-op pair */
#define RULES_MAX_EQ 8       /* variable dims one constraint may list */
#define RULES_MAX_REQUIRES 32
#define RULES_NAME_LEN 16
#define RULES_MAX_COUNTS 24  /* stage counts in the manifest */

/* A tensor inside a rule: a variable, or output `out` of op `idx` of the same side. */
typedef enum { RULES_REF_VAR, RULES_REF_OP, RULES_REF_COUNT } rules_ref_kind;
typedef struct {
    rules_ref_kind kind;
    int32_t idx; /* variable index, or op index (an earlier op of the same side) */
    int32_t out; /* output index of that op; 0 for variables */
} rules_ref;

typedef struct {
    ops_type op;
    ops_params p;          /* every declared parameter concrete */
    int32_t n_in;
    rules_ref in[RULES_MAX_IN];
    int32_t n_out;         /* filled by validation (from shape inference) */
    int32_t out_rank;      /* the rank of output 0, filled by validation too (0: not known) */
} rules_op;

typedef struct {
    int32_t n_ops;
    rules_op ops[RULES_MAX_OPS];
} rules_graph;

/* A rule variable: its name and the shape it had where the rule was found (its rank is what
 * matters to a matcher; dims are constrained only through the rule's constraints). */
typedef struct {
    char name[RULES_NAME_LEN];
    ops_shape shape;
} rules_var;

/* src output equals dst output. Either side may be a variable (a rule whose one side is the
 * identity, such as transpose(transpose(x)) = x). */
typedef struct {
    rules_ref src, dst;
} rules_outmap;

typedef enum { RULES_SIDE_SRC, RULES_SIDE_DST, RULES_SIDE_COUNT } rules_side;

/* Parameter `key` (entry `list_index` for the list parameter, else -1) of op `op` on `side` had
 * `value`, and equals every variable dim in eq (may be empty: the value is a literal). */
typedef struct {
    rules_side side;
    int32_t op;
    ops_param_key key;
    int32_t list_index;
    int64_t value;
    int32_t n_eq;
    struct {
        int32_t var, dim;
    } eq[RULES_MAX_EQ];
} rules_constraint;

/* The rule holds only when dim `dim` of variable `var` is `value` (a kernel size, say). */
typedef struct {
    int32_t var, dim;
    int64_t value;
} rules_require;

typedef struct {
    char *id;                      /* owned */
    int32_t n_vars;
    rules_var vars[RULES_MAX_VARS];
    rules_graph src, dst;
    int32_t n_outputs;
    rules_outmap outputs[RULES_MAX_OUTPUTS];
    int32_t n_constraints;
    rules_constraint constraints[RULES_MAX_CONSTRAINTS];
    int32_t n_requires;
    rules_require requires[RULES_MAX_REQUIRES];
    /* "split_sizes": "free": the rule was also proved with every two-way split of equal parts
     * (sizes []) cut at [n, d - n] for one free n, the hypotheses bounding n only by typing
     * (verifier/verify.h, verify_mark_free_splits), so a matcher may bind such a split of any two
     * sizes and give the other side's splits the same n (rules/match.h) */
    uint8_t split_free;
    /* provenance */
    uint64_t fingerprint;          /* the generator's bucket fingerprint (0 if hand-written) */
    int32_t max_ops;               /* max-ops of the run that found it (0 if hand-written) */
    char *stages;                  /* owned, may be NULL: comma-separated pruning stages passed */
    char *proof_json;              /* owned, may be NULL: the "proof" member as JSON text, kept verbatim
                                      for the verifier (status, time, axioms used) */
} rules_rule;

typedef struct {
    char name[32];
    uint64_t value;
} rules_count;

typedef struct {
    char *tool;                    /* owned: "tasc 0.1.0" */
    char *generator;               /* owned, may be NULL: the command that made the file */
    uint8_t op_set[OP_COUNT];      /* 1: in the op set the rules were generated over */
    int32_t max_ops;
    int32_t n_counts;
    rules_count counts[RULES_MAX_COUNTS]; /* per stage, in order */
    char *extra_json;              /* owned, may be NULL: the manifest's "extra" object verbatim */
    int32_t n_rules, cap_rules;
    rules_rule *rules;
} rules_set;

/* --- lifetime ------------------------------------------------------------------------------ */
rules_set *rules_set_new(void);                 /* caller owns; rules_set_free */
void rules_set_free(rules_set *rs);
/* Append a copy of r (strings duplicated); returns its index, or -1 when out of memory. */
int32_t rules_set_add(rules_set *rs, const rules_rule *r);
void rules_rule_clear(rules_rule *r);
/* A new set with rs's manifest (tool, generator, op set, max-ops, counts, extra) and no rules;
 * NULL when out of memory. */
rules_set *rules_set_manifest_copy(const rules_set *rs);           /* free a rule's strings, keep the struct */
/* Set manifest count `name` (appended if new, in order of first setting). Returns 0 or -1 (full). */
int rules_set_count(rules_set *rs, const char *name, uint64_t value);

/* --- checking ------------------------------------------------------------------------------ */
/* Validate one rule: refs in range and acyclic (ops refer only to earlier ops), parameters in
 * their domains, shapes by ops_infer from the variables' shapes, mapped outputs of equal shapes,
 * every graph output mapped exactly once, constraints naming real ops/params/dims, requirements
 * naming real dims and agreeing with the variables' shapes. Fills each
 * op's n_out. On error writes one line (without file or rule name) and returns -1. */
int rules_rule_check(rules_rule *r, char *err, size_t errlen);
/* The shapes of one side's op outputs, as rules_rule_check computes them: shapes[op][out]. */
int rules_graph_shapes(const rules_rule *r, rules_side side, ops_shape shapes[RULES_MAX_OPS][OPS_MAX_OUTPUTS],
                       char *err, size_t errlen);

/* --- files --------------------------------------------------------------------------------- */
/* Load and validate a rule file. NULL with one line "FILE:LINE:COL: message" (syntax) or
 * "FILE: rule 'ID': message" (content) in err. */
rules_set *rules_load(const char *path, char *err, size_t errlen);
/* Same from a string; `where` names it in messages. */
rules_set *rules_from_json_string(const char *text, const char *where, char *err, size_t errlen);
/* The file text: fixed key order, one rule per line, so equal sets give equal bytes. Caller frees;
 * NULL when out of memory. */
char *rules_to_json_string(const rules_set *rs);
/* Write through a temporary file and rename; -1 with a message naming the file. */
int rules_save(const rules_set *rs, const char *path, char *err, size_t errlen);

/* "%3" / "%3.1" for op outputs, the variable's name for variables, into buf; returns buf. */
const char *rules_ref_str(const rules_rule *r, rules_ref ref, char *buf, size_t len);

#endif
