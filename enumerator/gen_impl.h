/* gen_impl.h: internals shared by the generator's files.
 *
 * gen_space.c builds the search space (input pool, op variants from the op table, generation
 * policies) and evaluates coded graphs (exact fingerprints, floats, canonical forms);
 * gen_enum.c enumerates graphs depth-first; gen_pairs.c buckets, re-tests, prunes and builds
 * rules. A graph is coded as up to GEN_MAX_OPS 32-bit words in creation order; tensor ids are
 * pool variables 0..n_vars-1, then the op outputs in order.
 */
#ifndef TASC_GEN_IMPL_H
#define TASC_GEN_IMPL_H

#include <stdint.h>

#include "base.h"
#include "gen.h"

#define GEN_MAX_VARIANTS 4000
#define GEN_MAX_IN 2                 /* inputs of a generated op (TASO's forms: concat of two) */
#define GEN_MAX_OUT OPS_MAX_OUTPUTS
#define GEN_MAX_TENSORS 64           /* tensor ids fit in 6 bits */
#define GEN_NOREF 63
#define GEN_MAX_ELEMS 4096           /* elements of one tensor: bigger results are not generated */
#define GEN_MAX_GOUT (GEN_MAX_OPS * GEN_MAX_OUT) /* outputs of one graph */
#define GEN_IDENT_VAR 0xFFEu         /* word variant of a 0-op graph: outputs are variables */

/* Op word: variant+1 (12 bits), input 0 (6), input 1 (6); 0 = no op. */
#define GEN_WORD(var, in0, in1) \
    ((((uint32_t)(var) + 1u) << 20) | ((uint32_t)(in0) << 14) | ((uint32_t)(in1) << 8))
#define GEN_WORD_VAR(w) ((int32_t)((w) >> 20) - 1)
#define GEN_WORD_IN0(w) ((int32_t)(((w) >> 14) & 63u))
#define GEN_WORD_IN1(w) ((int32_t)(((w) >> 8) & 63u))

/* Pool roles, from the op table's weight_input_mask: a weight (conv kernel) never feeds a data
 * input, nor data a weight input, of an op that has weight inputs. */
typedef enum { GEN_ROLE_NONE, GEN_ROLE_DATA, GEN_ROLE_WEIGHT, GEN_ROLE_COUNT } gen_role;

/* One op with concrete parameters: the unit the enumerator adds. */
typedef struct {
    ops_type op;
    ops_params p;
    int32_t n_in, n_out;
    uint8_t commutative;      /* op(a,b) == op(b,a) (probed): inputs ordered, equal shapes */
    uint8_t weight_transform; /* input 0 is a weight input: applied to pool variables only */
    uint8_t windowed;         /* input 0 is read through a 2-D window (conv, pools): never a weight */
    uint8_t has_axis;         /* takes PM_AXIS: on a weight (F, C, KH, KW) only axes 0 and 1 */
    uint8_t drawn;            /* some parameter came from the pool's dims: outputs must be pool shapes */
    uint8_t role;             /* for constants (no inputs): role of the pool shape they take */
    int8_t comm_pair[2];      /* the pool variables the commutativity probe used */
    uint32_t drawn_keys;      /* bit k: parameter key k was drawn (PM_LIST: every entry) */
} gen_variant;

/* Dimension symbols of the pool: every dim of every pool tensor is one of them. A rule is tested
 * again with one symbol changed at a time (gen_sym_alt) to see which sizes it depends on. The
 * kernel sizes S1 and S3 are the ones a rule may legitimately require. */
typedef enum {
    GEN_SYM_M, GEN_SYM_K, GEN_SYM_N, GEN_SYM_C, GEN_SYM_H, GEN_SYM_W, GEN_SYM_S1, GEN_SYM_S3, GEN_SYM_COUNT
} gen_sym;

typedef struct {
    char name[RULES_NAME_LEN];
    ops_shape shape;
    int8_t sym[OPS_MAX_DIMS];  /* gen_sym of each dim */
    gen_role role;
    int32_t cls, slot;        /* pool kind and index within it: renaming permutes slots of a kind */
    int64_t numel;
    uint32_t *fp;             /* (numel) exact values */
    float *fv;                /* (numel) values in [-1, 1] */
    uint64_t hash;
} gen_var;

#define GEN_MAX_CLASSES 16
typedef struct {
    int32_t max_ops;
    uint64_t fp_mask;         /* bits of the fingerprint kept */
    uint64_t seed;
    int32_t n_vars;
    gen_var vars[GEN_MAX_POOL];
    int32_t n_classes;
    int32_t class_first[GEN_MAX_CLASSES], class_size[GEN_MAX_CLASSES];
    int32_t n_variants;
    gen_variant *variants;    /* owned */
    uint8_t op_set[OP_COUNT];
} gen_space;

/* A decoded graph. */
typedef struct {
    int32_t n_ops;
    struct {
        int32_t var, n_in, in[GEN_MAX_IN], first_out, n_out;
    } ops[GEN_MAX_OPS];
    int32_t n_tensors;                 /* n_vars + op outputs */
    int32_t producer[GEN_MAX_TENSORS]; /* op index, -1 for variables */
    int32_t uses[GEN_MAX_TENSORS];     /* consumers inside the graph */
    int32_t n_outputs;
    int32_t outputs[GEN_MAX_GOUT];     /* tensor ids: unconsumed op outputs in order, or the
                                          variables of a 0-op graph */
} gen_graph;

typedef struct {
    uint32_t w[GEN_MAX_OPS];
} gen_code;

/* --- gen_space.c ------------------------------------------------------------------------------ */
int gen_space_init(gen_space *sp, const gen_config *cfg, char *err, size_t errlen);
void gen_space_free(gen_space *sp);
uint64_t gen_mix64(uint64_t x);
int64_t gen_sym_alt(int32_t sym);          /* the other value a symbol takes in the generality test */
int gen_sym_is_kernel(int32_t sym);        /* S1, S3: kernel sizes */
uint64_t gen_hash_values(const ops_shape *s, const uint32_t *v, int64_t n);
/* Combine output hashes independently of their order. */
uint64_t gen_hash_outputs(const uint64_t *h, int32_t n);
int gen_shape_is_pool(const gen_space *sp, const ops_shape *s);
void gen_decode(const gen_space *sp, const gen_code *c, gen_graph *g);
/* Shapes of every tensor of a decoded graph; -1 if an op does not type-check (not expected for
 * enumerated graphs). */
int gen_graph_shapes(const gen_space *sp, const gen_graph *g, ops_shape *shapes /* [GEN_MAX_TENSORS] */);
/* Exact values of every tensor: vals[t] malloc'd (caller frees with gen_free_values). subst (may be
 * NULL): subst[t] != NULL replaces tensor t's computed value (same numel). */
int gen_eval_fp(const gen_space *sp, const gen_graph *g, const ops_shape *shapes, uint32_t *const *subst,
                uint32_t **vals);
int gen_eval_float(const gen_space *sp, const gen_graph *g, const ops_shape *shapes, float **vals);
void gen_free_values(const gen_space *sp, const gen_graph *g, void **vals);
/* Canonical code of a decoded graph with its variables renamed by perm (perm[v] = new id; NULL:
 * identity): the ops in greedy-minimal topological order, commutative inputs sorted. */
void gen_canon(const gen_space *sp, const gen_graph *g, const int32_t *perm, gen_code *out);

/* --- gen_enum.c ------------------------------------------------------------------------------- */
/* A graph record, 20 bytes (a 4-op run keeps about a hundred million): the fingerprint, then
 * the code's four op words without their unused low byte, packed so that comparing v[] in order
 * compares (fingerprint, code). */
typedef struct {
    uint32_t v[5];
} gen_record;

typedef struct {
    gen_record *recs;         /* owned */
    uint64_t n, cap;
} gen_records;

gen_record gen_record_make(uint64_t fp, const gen_code *c);
uint64_t gen_record_fp(const gen_record *r);
void gen_record_code(const gen_record *r, gen_code *c);
int gen_record_cmp(const void *a, const void *b);

/* Enumerate every graph into out (unsorted), with room for `extra` more records; t0 is the
 * run's start on base_now's clock, for progress. -1 when out of memory for the records. */
int gen_enumerate(const gen_space *sp, const gen_config *cfg, uint64_t extra, gen_records *out, double t0,
                  char *err, size_t errlen);

#endif
