/* gen.h: the rule generator. Enumerates every graph of up to GEN_MAX_OPS operators over the op
 * table's generation set and a fixed pool of small input tensors, fingerprints each one exactly
 * (uint32 arithmetic through ops_table[op].fp), pairs graphs whose fingerprints agree, re-tests
 * each pair on random floats through the CPU references, and prunes redundant pairs (variable
 * renaming, common subgraphs, common supergraphs, specialisations, accidents of the pool's
 * sizes). The survivors become a rules_set (rules.h).
 *
 * Everything is deterministic: the same configuration gives the same rules in the same order,
 * whatever the thread count. The op set and parameter values come from the op table only.
 */
#ifndef TASC_GEN_H
#define TASC_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"
#include "rules.h"

#define GEN_MAX_OPS 4
#define GEN_MAX_POOL 24      /* input tensors in the pool */

/* Progress, reported from the enumeration and pairing phases. */
typedef struct {
    const char *phase;       /* "enumerate", "pairs" */
    uint64_t done, total;    /* work units of the phase (first-level branches, buckets) */
    uint64_t graphs;         /* graphs enumerated so far */
    double elapsed_s;        /* since gen_run started */
} gen_progress;

typedef struct {
    int32_t max_ops;                 /* 1..GEN_MAX_OPS */
    uint8_t ops[OP_COUNT];           /* 1: use this op; all zero: every op with ops_table[op].gen */
    int32_t threads;                 /* <= 0: the OpenMP default */
    int32_t fp_bits;                 /* 1..64 bits of each fingerprint kept; < 64 forces collisions
                                        (tests show the float re-test removes them); 0 means 64 */
    uint64_t seed;                   /* values of the input pool; 0: the built-in seed */
    /* Called at most a few times a second, from one thread at a time; may be NULL. */
    void (*progress)(void *ctx, const gen_progress *p);
    void *progress_ctx;
} gen_config;

/* The count of every stage, in the order they run. */
typedef struct {
    uint64_t graphs;          /* graphs enumerated (each DAG once, up to renaming variables of a
                                 kind; 0-op identity graphs not counted) */
    uint64_t fingerprints;    /* distinct fingerprints among them */
    uint64_t pairs;           /* candidate pairs: two graphs of one bucket, plus one commutativity
                                 pair per commutative op form (folded by canonical input order) */
    uint64_t after_float;     /* pairs that also agree on random floats (rel. L2 error <= 1e-5) */
    uint64_t after_rename;    /* one pair per class of pairs equal up to renaming variables */
    uint64_t after_common;    /* minus pairs implied by a smaller one through a common subgraph */
    uint64_t after_super;     /* minus pairs implied by smaller ones in a common context (the same
                                 graph around equal sub-graphs, or the same last op on equal inputs) */
    uint64_t after_special;   /* minus instances of a pair with more variables (a variable's reads
                                 split between it and a fresh one) */
    uint64_t after_general;   /* minus pairs equal only at the pool's particular sizes: the rules */
    uint64_t multi_graphs;    /* graphs in buckets of two or more */
    double t_enum_s, t_sort_s, t_pairs_s, t_total_s;
} gen_stats;

/* Fill cfg with the defaults: max_ops 3, every generation op, 64-bit fingerprints. */
void gen_config_default(gen_config *cfg);
/* Parse a comma-separated op list into cfg->ops; -1 with a message naming a bad entry (an
 * unknown op, or one outside the generation set). */
int gen_parse_ops(gen_config *cfg, const char *list, char *err, size_t errlen);

/* Run the whole pipeline. On success *out is a new rules_set (caller frees with rules_set_free)
 * whose manifest holds the op set, max_ops and every stage count; st (may be NULL) gets the
 * counts and timings. -1 with a one-line message on bad configuration or out of memory. */
int gen_run(const gen_config *cfg, rules_set **out, gen_stats *st, char *err, size_t errlen);

/* The input pool as rule variables (name and shape), for documentation and tests; returns the
 * number written (at most GEN_MAX_POOL). */
int32_t gen_pool_describe(rules_var *vars, int32_t cap);

#endif
