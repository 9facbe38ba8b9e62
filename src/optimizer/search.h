/* search.h: the optimizer -- TASO's cost-based backtracking search over rule applications and
 * built-in rewrites (src/rewrite.h), the whole optimize pipeline around it, and the numerical
 * check of its result.
 *
 * Search (search_run): a priority queue of graphs ordered by cost (ties: the order they were
 * found). The cheapest is taken, becomes the best graph if it beats it, and, while the budget of
 * expanded graphs lasts, every rule match (both directions) and every built-in candidate in it
 * is applied; a result enters the queue if its cost is below alpha times the best cost and it
 * has at most max_nodes_factor times the original's nodes; a graph taken from the queue whose
 * canonical hash was seen before (a duplicate) is dropped without being expanded or counted.
 * Matches whose nodes are all computed from weights alone are not tried (they cannot change the
 * cost); rules whose pattern needs what the graph lacks are not matched (rules_match_possible).
 * The hash is graph_hash's construction with graph inputs by position and weights by name (or
 * by value for constants), and the inputs of ops the rule set declares commutative (a rule
 * op(b, a) = op(a, b)) taken as a set; such commutativity rules are not applied, since every
 * graph they make hashes as one already seen.
 * Deterministic: the same graph, rules and options give the same result, unless the wall-clock
 * limit stops the search first (search_result.time_limited says so).
 * Queued graphs are kept as (parent, move) and rebuilt when taken, so memory grows with the
 * graphs expanded, not with the queue: a candidate's cost (the parent's, plus the new nodes that
 * run, less the nodes that disappear) and size come from the parent and the plan, without
 * building it; a graph's hash and exact cost are taken when it leaves the queue.
 */
#ifndef TASC_SEARCH_H
#define TASC_SEARCH_H

#include <stdint.h>
#include <stdio.h>

#include "cost.h"
#include "graph.h"
#include "rewrite.h"
#include "rules.h"

typedef struct {
    double alpha;                     /* relaxation: keep graphs up to alpha * best cost (1.05) */
    int64_t budget;                   /* graphs expanded at most (1000) */
    double time_limit_s;              /* wall clock of the search, seconds; <= 0: none (8) */
    int32_t max_nodes_factor;         /* graphs over this many times the original's nodes dropped (2) */
    uint8_t moves[REWRITE_COUNT];     /* built-in rewrites tried as search moves (all kinds) */
    uint8_t greedy[REWRITE_COUNT];    /* applied greedily before and after the search (cse, bn-fold,
                                         fuse-bias, fuse-act, split-concat) by search_optimize */
    int fold;                         /* search_optimize folds weight-only nodes into weights (1) */
    int split_bias;                   /* search_optimize splits biases off conv2d and matmul before the
                                         search (rewrite_split_bias) and lowers after it: fuse-bias and
                                         fuse-act applied greedily; the backtracking search keeps every
                                         graph it takes in the bias normal form (rewrite_bias_normal)
                                         (0; 1 with --builtins minimal) */
    int lower_cost;                   /* the search costs a node that lowering absorbs
                                         (rewrite_lowered_free) as free (0; 1 with --builtins minimal) */
    int stats;                        /* fill search_result.stats (per-source counts and times) (0) */
    int eqsat;                        /* search_optimize searches by equality saturation (eqsat.h)
                                         instead of backtracking (0; `--search eqsat`) */
    int32_t eqsat_iters;              /* eqsat: rounds of matching at most (8) */
    int32_t eqsat_nodes;              /* eqsat: no round starts once the e-graph holds this many e-nodes,
                                         and a round stops adding at 2x (8000); no round starts
                                         once the matches found exceed 2x either */
    int32_t eqsat_exact;              /* eqsat: exact extraction (Z3) when the e-graph has at most this
                                         many e-nodes on the classes an output reaches (600; 0: never) */
    FILE *progress;                   /* progress lines (stderr in the CLI), NULL for none */
} search_opts;

void search_opts_default(search_opts *o);

/* The built-in rewrites of `tasc optimize --builtins`: all (the default above), or minimal -- only
 * what is not a substitution: cse and bn-fold applied greedily, folding of weight-only nodes, and
 * lowering: biases are split off conv2d and matmul before the search (the rules' ops carry none)
 * and fused back with the activations after it, and the search costs what lowering will fuse as
 * free (split_bias, lower_cost); no built-in search move (merges must come from the rule file). */
typedef enum { SEARCH_BUILTINS_ALL, SEARCH_BUILTINS_MINIMAL } search_builtins;
void search_opts_builtins(search_opts *o, search_builtins b);

/* What one move source did in a search (search_opts.stats): source 2r+d is rule r in direction d
 * (rules_dir), source 2*n_rules+k the built-in kind k. Counts are over graphs expanded (a queued
 * graph rebuilt is not counted again); matches whose nodes are all weight-only are not counted. */
typedef struct {
    int64_t found;                    /* matches (built-ins: candidates) found */
    int64_t typechecked;              /* of those, whose replacement type-checked on the bound shapes */
    int64_t queued;                   /* of those, that passed rules_apply_check, alpha and the size limit */
    int64_t applied;                  /* moves of this source on the path to the result (greedy ones too) */
    double seconds;                   /* wall time finding and considering this source's matches */
} search_source_stat;

/* How often one rule or built-in rewrite was applied. */
typedef struct {
    const char *name;                 /* borrowed: the rule's id, a rewrite_names entry, or "bias-normal"
                                         (the bias normal form's moves on the path, search_opts.split_bias) */
    int reverse;                      /* 1: the rule applied from its dst side to its src side */
    int32_t count;
} search_applied;

typedef struct {
    double cost_before, cost_after;   /* microseconds, of the input and of the result */
    int32_t nodes_before, nodes_after;
    int64_t expanded;                 /* graphs taken from the queue and expanded */
    int64_t candidates;               /* rule matches and rewrite candidates found */
    int64_t rejected;                 /* refused by rules_apply_check or shape inference */
    int64_t queued;                   /* graphs that entered the queue */
    int64_t dropped_cost, dropped_size, dropped_dup;
    int time_limited;                 /* the wall-clock limit ended the search */
    double seconds;                   /* search_run's wall time (search_optimize: the whole pipeline) */
    double search_seconds;            /* the search's own wall time */
    int32_t n_applied;                /* moves on the way to the result, by name, most used first */
    search_applied *applied;          /* owned: search_result_free */
    int32_t folded;                   /* tensors folded into weights (search_optimize) */
    int32_t n_rules;                  /* of the rule set searched (0 without one) */
    int32_t eq_iters;                 /* eqsat: rounds run */
    int32_t eq_nodes, eq_classes;     /* eqsat: live e-nodes and e-classes at the end */
    int eq_saturated;                 /* eqsat: a round added nothing (saturation) */
    const char *eq_extraction;        /* eqsat: what gave the result: "greedy", "greedy+local", "input+local"
                                         or "exact (z3)" (eqsat.h) */
    int32_t n_stats;                  /* 2 * n_rules + REWRITE_COUNT when search_opts.stats, else 0 */
    search_source_stat *stats;        /* owned: search_result_free */
} search_result;

/* The name of source i of res->stats ("g4_00966", or a rewrite_names entry) and its direction
 * ("src->dst", "dst->src", or "builtin"); rs: the rule set searched (may be NULL). */
const char *search_source_name(const rules_set *rs, const search_result *res, int32_t i, const char **dir);

/* res->stats as JSON (keys in a fixed order, sources in source order, those never found nor
 * applied left out) to f: {"model", "rules", "n_rules", "cost_before_us", "cost_after_us",
 * "search_seconds", "sources": [{"name", "dir", "found", "typechecked", "queued", "applied",
 * "seconds"}]}. model, rules: strings written as given (rules may be NULL: null). */
void search_stats_write_json(FILE *f, const rules_set *rs, const search_result *res, const char *model,
                             const char *rules);

void search_result_free(search_result *r);

/* The rule directions the search uses: ok[2r+d] = 1 for rule r in direction d unless the rule
 * repeats an earlier one, is a commutativity rule (comm[op] = 1 for its op; such rules are used
 * for hashing), cannot be applied that way (rules_match_usable) or its pattern is not one piece.
 * ok has room for 2 * n_rules, comm for OP_COUNT. */
void search_rule_sources(const rules_set *rs, uint8_t *ok, uint8_t *comm);
/* Sort res->applied as the summary lists it: most used first, then by name, forward before
 * reverse (both searches report in this order). */
void search_sort_applied(search_result *res);

/* Search from g with rs (may be NULL: built-in moves only) and cost model cm. *best: the cheapest
 * graph found (caller owns; a copy of g if nothing beats it). 0, or -1 with a message (a model
 * error, an invalid g). */
int search_run(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o, graph **best,
               search_result *res, char *err, size_t errlen);

/* The whole job: greedy rewrites, constant folding, search, greedy rewrites again, folding
 * again. The result never costs more than g: if it would, g itself is returned. res counts
 * every rewrite applied, greedy ones included. 0, or -1 with a message. */
int search_optimize(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o, graph **out,
                    search_result *res, char *err, size_t errlen);


#endif
