/* eqsat_impl.h: what eqsat.c (the e-graph, matching and rewriting, the driver) and eqsat_extract.c
 * (extraction and the graph it gives) share; not a public header of the optimizer.
 */
#ifndef TASC_EQSAT_IMPL_H
#define TASC_EQSAT_IMPL_H

#include "cost.h"
#include "egraph.h"
#include "eqsat.h"
#include "match.h"
#include "rewrite.h"

/* Per e-node: the source graph's node it came from (-1: a rewrite made it), the source that
 * made it (rule direction 2r+d, or 2*n_rules + built-in kind; -1 for the graph's own), which
 * application (a serial number), and its cost (NAN until asked). */
typedef struct {
    int32_t orig, src, serial;
    double cost;
} eq_meta;

/* A match: the e-nodes of the pattern ops and the classes of the variables. */
typedef struct {
    int32_t src;
    int32_t node[RULES_MAX_OPS];
    int32_t var[RULES_MAX_VARS];
} eq_match;

/* An entry of the round's signature index. */
typedef struct {
    uint32_t sig;
    int32_t node;
} eq_sig_ent;

/* One applied rewrite as an extraction move: the e-nodes its target side added or found. */
#define EQ_MOVE_MAX 48
typedef struct {
    int32_t n;
    int32_t serial, src;           /* the application's (eq_meta.serial and .src) */
    int32_t node[EQ_MOVE_MAX];
} eq_move;

typedef struct {
    egraph eg;
    const graph *g;
    const rules_set *rs;
    cost_model *cm;
    const search_opts *o;
    search_result *res;
    search_source_stat *stats;     /* res->stats or NULL */
    int32_t n_rule_src;            /* 2 * n_rules */
    uint8_t *src_ok;               /* [n_rule_src] */
    rules_match_needs *needs;      /* [n_rule_src] */
    int32_t *t_cls;                /* [g->n_tensors]: class of each source tensor */
    int32_t n_init;                /* e-nodes made from the source graph: ids below this */
    eq_meta *meta;
    int32_t cap_meta;
    int32_t cur_src, cur_serial;   /* stamped on the e-nodes being added */
    int32_t n_serial;
    ops_shape *shapes;             /* shapes of the constant leaves (EGRAPH_CONST's a indexes it) */
    int32_t n_shapes, cap_shapes;
    /* the round's index */
    int32_t op_start[OP_COUNT + 1];
    int32_t *op_node;
    int32_t cls_count[RULES_N_CLASSES];
    uint64_t *edges;               /* [RULES_EDGE_WORDS] */
    uint32_t *node_sig;            /* [n_nodes * (RULES_MAX_LIFT + 1)]: rules_node_sig of live op e-node n at lift k */
    int32_t cap_node_sig;
    eq_sig_ent *by_sig;            /* (signature, e-node) of every live op e-node at each lift it has one, */
    int32_t n_by_sig, cap_by_sig;  /*   sorted by signature, then e-node (the e-nodes of a signature ascend) */
    eq_sig_ent *by_edge;           /* (RULES_EDGE_KEY + 1, reader e-node) of every op-to-op edge (eq_index), */
    int32_t n_by_edge, cap_by_edge; /*  sorted by key, then reader, each once */
    eq_match *m;
    int32_t n_m, cap_m, max_matches;
    int32_t round;                 /* rounds begun */
    int64_t n_found;               /* matches found (type-checking or not): what the backoff counts */
    int64_t tries_round;           /* e-nodes tried against a pattern op this round (EQ_ROUND_TRIES) */
    int32_t n_applied;             /* matches applied this round (the progress line) */
    int round_cut;                 /* the node limits left matches of the last round unapplied */
    int32_t *banned_until;         /* [n_rule_src] backoff: the source is not matched before this round */
    uint8_t *times_banned;         /* [n_rule_src] */
    uint8_t *merge;                /* [n_rule_src] a sibling merge (eq_sibling_merge) */
    uint8_t *chained;              /* [n_rule_src] to be matched by the next chain pass (eq_chain) */
    int32_t chain_from;            /* in a chain pass: a match holds an e-node from this id on; else -1 */
    int downhill_only;             /* in a chain pass: only matches that lower the local cost (eq_delta) */
    int32_t *enc_mark, cap_enc, enc_stamp, *enc_q, cap_enc_q; /* eq_encloses's walk */
    int match_cap_hit, work_cap_hit;
    eq_move *mv;
    int32_t n_mv, cap_mv;
    int64_t max_elements;
    const char *prefix;
    int64_t counter0;              /* the caller's name counter (names below it are taken) */
    double deadline;               /* 0: none */
    char *err;
    size_t errlen;
} eq_ctx;

int32_t eq_add(eq_ctx *c, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
               const int32_t *ch, int32_t n_out, const ops_shape *out, graph_dtype dtype);
int32_t eq_add_node(eq_ctx *c, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
                    const int32_t *ch, int32_t n_out, const ops_shape *out, graph_dtype dtype);
int32_t eq_output_class(eq_ctx *c, int32_t tc, int32_t k);
int eq_out_of_time(eq_ctx *c);

/* Extraction (eqsat_extract.c). A choice is one live e-node per class (representatives; -1:
 * none), for the classes the outputs reach. */
int eq_node_cost(eq_ctx *c, int32_t n, double *out);     /* own cost of e-node n, memoised */
int eq_greedy(eq_ctx *c, int32_t *choice);                 /* 0, or -1 (a cost model error) */
int eq_eval(eq_ctx *c, const int32_t *choice, double *cost); /* INFINITY for a cycle or a gap */
void eq_reached(eq_ctx *c, const int32_t *choice, uint8_t *reached); /* reached[k] = 1 for the classes used */
int eq_local(eq_ctx *c, int32_t *choice, double *cost);    /* improve in place */
int eq_exact(eq_ctx *c, int32_t *choice, double *cost);    /* 1 found, 0 not run/not better, -1 error */
/* The graph of a choice: the source graph with the chosen e-nodes that are not its own nodes
 * added ("<prefix>.<N>.<op>" from *counter on, tag 1), outputs moved to the chosen tensors. With
 * tmap: nothing dropped, and (*tmap)[t] the class of each tensor t (caller frees); without: dead
 * nodes dropped (graph_compact). 0, or -1 with a message. */
int eq_to_graph(eq_ctx *c, const int32_t *choice, int64_t *counter, graph **out, int32_t **tmap);
/* A graph's cost as the backtracking search sees it (sr_graph_cost). */
int eq_graph_cost(eq_ctx *c, const graph *g, double *cost);

#endif
