/* eqsat.h: the equality-saturation search (Tensat, MLSys 2021), `tasc optimize --search eqsat`,
 * beside the backtracking search of search.h.
 *
 * The graph becomes an e-graph (egraph.h); each round e-matches every rule direction the
 * backtracking search uses (search_rule_sources) against the e-classes -- with the checks a match
 * on a graph must pass: op and parameters, variable ranks and dtype, the rule's requirements and
 * constraints, no broadcasting, and a target that type-checks on the bound shapes -- and, when
 * search_opts.moves enables built-in rewrites, runs their finders on the graph currently extracted
 * (and with search_opts.split_bias the bias normal form's two moves, rewrite.h, on the e-graph);
 * then adds every match's target side and unions it with the matched outputs (a multi-output rule
 * is a multi-pattern: all its outputs matched, each unioned with its replacement), those that lower
 * the local cost first. Sibling merges (the pairwise matmul and conv merges) take one match per
 * e-class, newest e-nodes first, and in the first round are chained until they stop (an n-way
 * merge as its n-1 pairwise steps, not every subset of the siblings). Rounds stop at
 * saturation, search_opts.eqsat_iters, eqsat_nodes (no round starts past it, nor once the rounds
 * so far found twice as many matches), or the time limit; a round stops matching after a bounded
 * amount of work (e-nodes tried).
 * Extraction picks one e-node per reachable class, never a cycle, under the search's cost model
 * (lowering-aware with search_opts.lower_cost): greedy bottom-up first, improved by a local search
 * whose moves are the rewrites recorded in the e-graph (one at a time, pairs where the second
 * reads what the first made, and cascades: a rewrite with those that made the classes it lands in)
 * and single-class switches; the same local search from the input's own
 * choice, so that the result never costs more than the input; and an exact extraction with Z3's
 * optimizer (acyclicity by topological-order variables inside cycles of the e-graph) when the
 * reachable e-graph is small enough (eqsat_exact). The cheapest is the result
 * (search_result.eq_extraction says which).
 * Deterministic unless the time limit ends it (search_result.time_limited).
 */
#ifndef TASC_EQSAT_H
#define TASC_EQSAT_H

#include "search.h"

/* Search from g (valid) with rs (may be NULL) under o; *best: the extracted graph (caller owns),
 * new nodes named "<prefix>.<N>.<op>" from *counter on. res: costs (as the search sees them),
 * counts, the rewrites used by the result, the e-graph's figures. 0, or -1 with a message. */
int eqsat_run(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *o, const char *prefix,
              int64_t *counter, graph **best, search_result *res, char *err, size_t errlen);

/* Proofs by rewriting: whether the rules derive equalities. A prover holds a rule set's matching
 * needs, computed once (eqsat_prover_new; rs is borrowed and must outlive it). eqsat_joins builds
 * g's e-graph (g holds both sides of each pair: tensors a[i] and b[i], as rules_pair_graph makes
 * them) and runs rounds of the rule directions that `off` leaves on (off[r] = 1: rule r not used;
 * off may be NULL) under o's round, node and time limits, with no built-in move and no bias normal
 * form, until every pair is in one e-class, saturation or a limit: joined[i] = 1 where a[i] and
 * b[i] ended in one class (then the rules used prove a[i] = b[i]: every step is a verified
 * rule applied where its checks pass); *rounds: the rounds run. 0, or -1 with a message. */
typedef struct eqsat_prover eqsat_prover;
eqsat_prover *eqsat_prover_new(const rules_set *rs);
void eqsat_prover_free(eqsat_prover *p);
/* The directions the search uses rule r in (search_rule_sources: not a repeat, not a commutativity
 * rule, usable, a connected pattern): 1 src->dst, 2 dst->src, 3 both, 0 none. */
int eqsat_prover_uses(const eqsat_prover *p, int32_t r);
int eqsat_joins(eqsat_prover *p, const graph *g, const uint8_t *off, cost_model *cm, const search_opts *o, int32_t n,
                const int32_t *a, const int32_t *b, uint8_t *joined, int32_t *rounds, char *err, size_t errlen);
/* Whether one move of the backtracking search proves the equality: one application of one rule
 * direction that `off` leaves on, where it type-checks and closes no cycle, turns `from` into a
 * graph equal to `to` (graph_hash; both as rules_side_graph makes them). *found = 1 if so.
 * 0, or -1 with a message. */
int eqsat_one_move(eqsat_prover *p, const graph *from, const graph *to, const uint8_t *off, int *found, char *err,
                   size_t errlen);

#endif
