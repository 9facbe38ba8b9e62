/* verify.h: the verifier. Proves candidate rules (rules.h) with Z3 from the operator axioms in
 * verifier/axioms.smt2, checks those axioms against the CPU references, and exports rule sets to
 * the S-expression rewrite format of Tensat/egg.
 *
 * A candidate is proved when "some mapped src output differs from its dst output" is unsatisfiable
 * under the axioms, for every shape of the variables under which both sides are well typed in the
 * axioms' model (elementwise operands of equal shape, matmul of matrices), the mapped outputs have
 * equal shapes and the rule's requirements and constraints hold. Outcomes are proved, refuted (a
 * counterexample on random values, or Z3 found a model) or unknown (timeout, incomplete
 * quantifier reasoning, or an op or parameter outside the axioms' model); "unknown" is never
 * "proved". Every query has a timeout; each worker thread owns one Z3 context. Results come back in
 * candidate order whatever the thread count. Messages are single lines; nothing here asserts on
 * user input. Ownership is stated at each function.
 */
#ifndef TASC_VERIFY_H
#define TASC_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "rules.h"

#define VERIFY_MAX_AXIOMS 256
#define VERIFY_NAME_LEN 48
#define VERIFY_REASON_LEN 256
#define VERIFY_DEFAULT_TIMEOUT_S 10.0

/* --- axioms ----------------------------------------------------------------------------------- */

/* A loaded axiom file: its text, the name and one-line comment of each axiom, and its hash. The
 * file is checked on load: it parses in Z3, every axiom is a named quantifier with explicit
 * triggers, every op of the generation set has its function with the signature the verifier
 * builds, and the enum constants agree with ops.h. */
typedef struct verify_axioms verify_axioms;

/* Load from a file (caller frees with verify_axioms_free); NULL with one line "FILE: ..." in err. */
verify_axioms *verify_axioms_load(const char *path, char *err, size_t errlen);
/* Same from text; `where` names it in messages. */
verify_axioms *verify_axioms_from_string(const char *text, const char *where, char *err, size_t errlen);
void verify_axioms_free(verify_axioms *ax);
/* The default file: $TASC_AXIOMS, else verifier/axioms.smt2 under the working directory, else
 * ../verifier/axioms.smt2 or ../share/tasc/axioms.smt2 beside the running executable. Writes the
 * path into buf and returns it, or NULL when none exists. */
const char *verify_axioms_default_path(char *buf, size_t len);

int32_t verify_axioms_count(const verify_axioms *ax);
const char *verify_axiom_name(const verify_axioms *ax, int32_t i); /* owned by ax */
const char *verify_axiom_doc(const verify_axioms *ax, int32_t i);  /* the comment line, owned by ax */
int32_t verify_axiom_find(const verify_axioms *ax, const char *name); /* index or -1 */
const char *verify_axioms_text(const verify_axioms *ax);            /* owned by ax */
/* 16 hex digits: a hash of the file's text. */
const char *verify_axioms_hash(const verify_axioms *ax);
/* 16 hex digits: a hash of what the verifier's encoding depends on in the op table (names, Z3
 * symbols, parameters of the generation ops) and of the encoder's version. */
const char *verify_opset_hash(void);

/* --- proving candidates ------------------------------------------------------------------------ */

typedef enum { VERIFY_PROVED, VERIFY_REFUTED, VERIFY_UNKNOWN, VERIFY_OUTCOME_COUNT } verify_outcome;
extern const char *const verify_outcome_names[VERIFY_OUTCOME_COUNT]; /* "proved", "refuted", "unknown" */

typedef struct {
    const char *phase;   /* "verify" */
    int64_t done, total; /* candidates */
    int64_t proved, refuted, unknown, cached;
    double elapsed_s;
} verify_progress;

typedef struct {
    double timeout_s;      /* per query, > 0 (default VERIFY_DEFAULT_TIMEOUT_S) */
    int32_t threads;       /* <= 0: the number of cores */
    int numeric_check;     /* 1 (default): first evaluate both sides on random values at the rule's
                              own shapes; a mismatch refutes without asking Z3 */
    const char *cache_path; /* NULL: no cache. Otherwise outcomes keyed by (op set, axioms,
                              candidate) are read from and written back to this file */
    uint64_t seed;         /* random values of the numeric check; 0: built-in */
    int split_sizes_free;  /* 0 (default): as described above. 1: the free-split mode of
                              verify_mark_free_splits: every two-way split of equal parts is cut at
                              [n, d - n] for one fresh n, and a rule whose solved hypotheses bound n
                              other than by typing is unknown (the numeric check runs at a cut of
                              n = 1 instead of the rule's equal halves) */
    int mark_free_splits;  /* verify_run: 1 marks the proved rules that verify_mark_free_splits
                              proves with free split sizes (default 0: no marker, no second proof) */
    /* Called at most a few times a second from one thread at a time; may be NULL. */
    void (*progress)(void *ctx, const verify_progress *p);
    void *progress_ctx;
} verify_config;

typedef struct {
    verify_outcome outcome;
    double time_s;                 /* solver time (0 for the numeric check and unsupported rules) */
    int cached;                    /* 1: taken from the cache */
    int32_t n_core;                /* proved: axioms in the unsat core */
    int16_t core[VERIFY_MAX_AXIOMS]; /* axiom indices, ascending */
    char reason[VERIFY_REASON_LEN]; /* refuted / unknown: why, one line */
} verify_result;

typedef struct {
    int64_t candidates, proved, refuted, unknown, cached;
    int64_t timeouts;              /* unknown because the query ran out of time */
    double wall_s, solver_s;       /* wall time, sum of solver times */
    double max_query_s;
    int32_t threads;
} verify_stats;

void verify_config_default(verify_config *cfg);

/* Prove every candidate of cands; results[i] (room for cands->n_rules) gets candidate i's outcome.
 * Returns 0, or -1 with a message when the run cannot start or the cache cannot be written (a
 * candidate that cannot be proved is an outcome, not an error). */
int verify_candidates(const verify_axioms *ax, const verify_config *cfg, const rules_set *cands,
                      verify_result *results, verify_stats *st, char *err, size_t errlen);

/* The whole `tasc verify` step: prove cands and split them (cfg->mark_free_splits: then mark the
 * proved ones, verify_mark_free_splits). *proved gets the proved rules in
 * candidate order, each with its proof (status, time, axioms of the unsat core) in proof_json and
 * the candidate file's manifest with counts for the verifier's stages and the axioms' hashes;
 * *quarantine (may be NULL) gets the others, each with the outcome and reason in proof_json.
 * Callers free both with rules_set_free. */
int verify_run(const verify_axioms *ax, const verify_config *cfg, const rules_set *cands, rules_set **proved,
               rules_set **quarantine, verify_stats *st, char *err, size_t errlen);

/* Free split sizes (rules/match.h): prove again, with cfg->split_sizes_free on, every rule of rs
 * that has a two-way split of equal parts (sizes [] not tied to a dim), and mark those proved
 * ("split_sizes": "free", rules_rule.split_free). *marked gets a copy of rs (manifest, rules and
 * their proofs unchanged) with the markers set and the counts "split_free_tried" and
 * "split_free_proved" added; caller frees. *st (may be NULL) gets the stats of the re-proof.
 * 0, or -1 with a message. */
int verify_mark_free_splits(const verify_axioms *ax, const verify_config *cfg, const rules_set *rs,
                            rules_set **marked, verify_stats *st, char *err, size_t errlen);

/* The proof member a result becomes (JSON text; caller frees), e.g.
 * {"status":"proved","time_s":0.012,"axioms":["ewadd_comm"]}. NULL when out of memory. */
char *verify_proof_json(const verify_axioms *ax, const verify_result *res);

/* --- checking the axioms ------------------------------------------------------------------------ */

typedef struct {
    int64_t max_dim;          /* dims of variables range over 1..max_dim (default 4) */
    int64_t max_instances;    /* per axiom, evaluate at most this many (spread evenly over all of
                                 them; 0: every one) */
    double redundancy_timeout_s; /* per query of the redundancy report; 0 skips the report */
    double probe_timeout_s;   /* per consistency probe */
    int32_t threads;          /* for the redundancy report; <= 0: the number of cores */
    uint64_t seed;
    int64_t ill_bases;        /* per axiom, the well-typed instantiations (spread evenly over all
                                 of them) made ill-shaped, one size or dim off by one at a time,
                                 for the ill-shaped pass (default 2000; 0 skips that pass) */
} verify_check_config;

typedef enum { VERIFY_RED_SKIPPED, VERIFY_RED_IMPLIED, VERIFY_RED_INDEPENDENT, VERIFY_RED_UNKNOWN } verify_red;

typedef struct {
    char name[VERIFY_NAME_LEN];
    int64_t instances;        /* instantiations whose trigger terms are well typed, conditions held */
    int64_t evaluated;        /* of those, evaluated numerically */
    int64_t failures;         /* mismatches and typing violations */
    char first_failure[VERIFY_REASON_LEN];
    double max_rel_err;
    double time_s;
    verify_red redundancy;
    char implied_by[VERIFY_REASON_LEN]; /* IMPLIED: the axioms of the core, comma separated */
    /* the ill-shaped pass: instantiations whose trigger terms are ill typed (one size or dim off
     * by one), and of those the ones the side conditions exclude; a failure is an instance they
     * do not exclude whose sides have dims, as the dim_* axioms give them for any term, that
     * differ (so Z3 could derive 2 = 3), or two well-typed sides that differ on random values */
    int64_t ill_instances;
    int64_t ill_excluded;
    int64_t ill_failures;
    char ill_first_failure[VERIFY_REASON_LEN];
} verify_axiom_report;

typedef struct {
    char name[VERIFY_NAME_LEN];  /* the false equality probed */
    verify_outcome outcome;      /* must not be VERIFY_PROVED */
    char reason[VERIFY_REASON_LEN];
} verify_probe_report;

#define VERIFY_MAX_PROBES 32
typedef struct {
    int32_t n_axioms;
    verify_axiom_report axioms[VERIFY_MAX_AXIOMS];
    int32_t n_probes;
    verify_probe_report probes[VERIFY_MAX_PROBES];
    int32_t failed_axioms;       /* axioms with a failure (either pass) or without any legal instantiation */
    int32_t failed_ill;          /* of those, axioms that failed the ill-shaped pass */
    int32_t failed_probes;       /* probes that were proved: the axioms are inconsistent */
    double eval_s, redundancy_s, probe_s;
} verify_check_report;

void verify_check_config_default(verify_check_config *cfg);
/* Run the axiom check; rep is filled (caller allocates). Returns 0 when every axiom passed and no
 * probe was proved, 1 when the check failed (see rep), -1 with a message on an internal error. */
int verify_axioms_check(const verify_axioms *ax, const verify_check_config *cfg, verify_check_report *rep,
                        char *err, size_t errlen);

/* --- export ------------------------------------------------------------------------------------- */

/* The rule set as Tensat/egg rewrites: one "LHS=>RHS" line per mapped output of each rule, in rule
 * order; terms use the functions of axioms.smt2 with integer parameters as literals and variables
 * ?name. An output egg cannot take in either direction (a bare-variable left side, or a right-side
 * variable missing on the left) is left out and counted in *skipped (may be NULL). Caller frees;
 * NULL with a message when a rule uses an op outside the axioms' language. */
char *verify_export_egg(const rules_set *rs, int64_t *skipped, char *err, size_t errlen);

#endif
