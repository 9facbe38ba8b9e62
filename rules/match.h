/* match.h: finding a rule's graph in a model graph (rules_match_) and rewriting it (rules_apply_).
 *
 * A rule is used in either direction: its pattern side is found in the model graph and replaced by
 * its target side. A match binds every pattern op to a distinct live node (same op, parameters
 * equivalent on the node's input shapes, see below) and every pattern variable to a tensor of the
 * variable's rank (or of a higher rank with unit dims in front: lifting, below); it holds only when the rule's requirements and pattern-side constraints hold on
 * the bound shapes, no variable is bound to an output of a matched node, and every pattern-op
 * output that something outside the match reads (or that is a graph output) is a mapped output.
 *
 * Applying goes through a plan (rules_apply_plan): the new nodes with concrete parameters and
 * inferred shapes, the nodes removed, and the old tensors whose readers move to new tensors. Plans
 * are also made by the built-in rewrites (src/rewrite.h), so one checker and one builder serve
 * both. rules_apply_check rejects plans whose result would have a cycle or a tensor of a different
 * shape, and lists the nodes left dead; rules_apply_run builds the new graph on a clone, marks
 * the new nodes (tag = 1) and drops dead nodes and unused tensors (graph_compact).
 *
 * Parameters match exactly, except where the value does not change what the op computes on these
 * inputs: conv2d and the 2-D pools compare their resolved windows (ops_window2d: pad mode "same"
 * equals the explicit pads it resolves to), split compares the sizes it resolves to.
 * Rules are used only inside the model they were proved in (verifier/README.md): no broadcasting
 * instance -- every broadcasting op of the pattern (matched nodes) and of the target (new nodes)
 * reads operands of its output's shape.
 *
 * Lifting (leading unit dims). A variable of rank R also binds a tensor of rank R + k whose first
 * k dims are 1 (its lift k), so a rule over matrices matches a transformer's (1, S, H)
 * activations. Why the proved rule still holds: write L_k(x) for x with k unit dims put in front
 * (the same elements in the same order). For the ops that rules_lift_params accepts, an op on
 * lifted operands equals L_k of the op on the operands, k being its output's lift, when its
 * axis parameters count k places further (axis + k; a perm keeps the k unit dims in place):
 *   - elementwise ops, smul, and the numpy-broadcasting binary ops and matmul (batch dims
 *     aligned from the end, so unit dims in front only add unit dims in front of the result;
 *     matmul only on operands of rule rank >= 2, its 2-D core untouched);
 *   - concat, split and softmax along an axis, and transpose: the leading unit dims stay where
 *     they are and the op acts on the rest as on the rule's tensor.
 * By induction over a side's ops, every tensor of the matched pattern is L_k of the rule's value
 * on the unlifted variables, and so is every tensor the target builds (its parameters lifted the
 * same way, each op's lift read from its inferred output). The rule equates the two sides for
 * all dims (requirements and constraints read at dim d + k of a variable of lift k), so each
 * mapped output is L_k of the same value on both sides, and rules_apply_check's equal-shape test
 * makes the k the same. Ops outside that list (conv2d, pools, reshape, constants, ...) bind only
 * at lift 0 with operands of lift 0: the old exact-rank match. A constrained parameter that
 * lifting moves (an axis tied to a dim) refuses a lifted match. Only unit dims: (B, S, H) with
 * B > 1 is not a matrix (a concat along rows would interleave batches), so it does not bind.
 *
 * Free split sizes. A rule's two-way split with sizes [] means equal halves: the verifier proved
 * the rule with each such split's input dim d = 2q and the cut at q. A rule marked
 * "split_sizes": "free" (rules_rule.split_free, set by verify_mark_free_splits) was proved again
 * with every such split cut at [n, d - n] for one fresh symbol n shared by all of them, 0 < n < d,
 * and the solved hypotheses bound n only from below and above (n appears in no equation and in no
 * other symbol's value, and only with coefficient +-1 in the inequalities): for every shape of the
 * variables, each n allowed by typing satisfies the hypotheses, so the rule holds for it. Here a
 * pattern split of such a rule (rules_split_is_free) binds a split node of the same axis into any
 * two parts; the match holds when the bound free splits are either all equal halves (split_n 0:
 * the first proof's instance, the target built as before with equal halves) or all have the same
 * first part n (split_n n: the free proof's instance). The target's free splits are then cut at
 * [n, d - n] (rules_apply_plan_rule). Every other hypothesis of the free proof is checked on the
 * concrete shapes as for any rule: the pattern is typed by the graph, the target by ops_infer (a
 * part of size < 1 refuses), the mapped outputs must keep their shapes (rules_apply_check), so the
 * concrete instance satisfies the hypotheses the free proof was made under. Lifting commutes with
 * this: the cut is along the lifted axis and the sizes are the rule tensor's. A rule whose typing
 * needs equal halves (two parts read by one elementwise op, say) gets the equation n = d - n and
 * is never marked; a rule with splits tied to each other otherwise (n1 = d - n2) is not either.
 * A split whose sizes a constraint ties to variable dims (a sized split) is not free: its sizes
 * come from the bound shapes as before.
 * Nothing here keeps pointers into the graph beyond the index's lifetime; the index borrows g.
 */
#ifndef TASC_RULES_MATCH_H
#define TASC_RULES_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "rules.h"

typedef enum { RULES_DIR_FWD, RULES_DIR_BWD, RULES_DIR_COUNT } rules_dir; /* src -> dst, dst -> src */

/* Node lists by a nonzero 32-bit key: an open-addressing table; the nodes of the key in slot k
 * are node[start[k] .. start[k] + count[k]), ascending. */
typedef struct {
    uint32_t *key;           /* [mask + 1], 0: empty */
    int32_t *start, *count;  /* [mask + 1] */
    int32_t *node;
    uint32_t mask;
} rules_match_lists;

/* What matching needs to know about one graph, built once and shared by all rules. */
typedef struct {
    const graph *g;          /* borrowed */
    int32_t *use_start;      /* [n_tensors + 1]: readers of tensor t are use_node[use_start[t] .. use_start[t+1]) */
    int32_t *use_node;       /* node ids, ascending per tensor; a node reading t twice appears twice */
    uint8_t *is_output;      /* [n_tensors]: 1 for graph outputs */
    uint8_t *live;           /* [n_nodes]: 1 if the node's results reach a graph output */
    int32_t *topo_pos;       /* [n_nodes]: position in graph_topo_order */
    int32_t *op_start;       /* [OP_COUNT + 1]: live nodes of op o are op_node[op_start[o] .. op_start[o+1]) */
    int32_t *op_node;
    uint8_t *node_cls;       /* [n_nodes]: RULES_NODE_CLASS of each node */
    int32_t *cls_start;      /* [RULES_N_CLASSES + 1]: live nodes of class c (RULES_NODE_CLASS) are */
    int32_t *cls_node;       /*   cls_node[cls_start[c] .. cls_start[c+1]), ascending */
    uint64_t *edges;         /* bit set of RULES_EDGE_KEY(producer op, output, reader class, input slot)
                                over the live readers' first RULES_MAX_IN inputs (rules_match_possible) */
    rules_match_lists by_sig;  /* live nodes by parameter signature (rules_match_needs) */
    rules_match_lists by_edge; /* live readers by RULES_EDGE_KEY + 1 of each of their first inputs */
    uint32_t *node_sig;      /* [n_nodes * (RULES_MAX_LIFT + 1)]: live node n's signature as a rule op at lift k
                                is node_sig[n * (RULES_MAX_LIFT + 1) + k] (0: not at that lift; 0 for dead nodes) */
    /* scratch for rules_apply_check, stamped so that it needs no clearing between calls */
    uint32_t *stamp;         /* [n_nodes] */
    uint32_t cur;
    int32_t *stack;          /* [n_nodes] */
    int32_t *uses_left;      /* [n_tensors] */
} rules_match_index;

/* Build the index of g (which must be valid: acyclic, every id in range). Returns 0, or -1 with a
 * message if g has a cycle. Free with rules_match_index_free. */
int rules_match_index_build(rules_match_index *ix, const graph *g, char *err, size_t errlen);
void rules_match_index_free(rules_match_index *ix);

/* One occurrence of a rule's pattern side in a graph. */
typedef struct {
    int32_t rule;                   /* index in the rule set */
    rules_dir dir;
    int32_t n_nodes;                /* ops of the pattern side */
    int32_t node[RULES_MAX_OPS];    /* graph node of pattern op i */
    int32_t var[RULES_MAX_VARS];    /* graph tensor of variable v; -1 where the pattern does not read v */
    int64_t split_n;                /* free split sizes (file comment): the first part all the pattern's free
                                       splits were bound with; 0 when they are equal halves (or there are none) */
} rules_match;

/* 1 if rule r can be applied in direction dir: its pattern side has an op, and every variable the
 * target side reads appears in the pattern side (so a match binds it). */
int rules_match_usable(const rules_rule *r, rules_dir dir);

/* What a pattern side needs of a graph for any match to exist: live nodes of each of its classes
 * (op and input count; as many as it has ops of that class: matched nodes are distinct); for
 * each pattern op that reads output o of pattern op j in input slot k, a live node of its class
 * reading output o of a node of j's op in slot k; and for each pattern op without constrained
 * parameters, a live node of the same signature (a hash of the class, the rank of output 0 and
 * the parameters that rules_match_params compares exactly: all but the window of conv2d and the
 * pools and the sizes of split; a node is indexed under its signature at every lift k it could
 * be matched at, its rank less k and its parameters unlifted). Pattern ops of unknown rank (out_rank 0) get no signature. A cheap filter on the index run before rules_match_find: a rule it
 * rules out has no match (tests/test_match.c compares it with the matcher). */
#define RULES_NODE_CLASS(op, n_in) ((int32_t)(op) * (RULES_MAX_IN + 2) + ((n_in) <= RULES_MAX_IN ? (n_in) : RULES_MAX_IN + 1))
#define RULES_N_CLASSES (OP_COUNT * (RULES_MAX_IN + 2)) /* a node's op and input count (more than 4: one class) */
#define RULES_EDGE_KEY(pop, out, rcls, slot) \
    ((((uint32_t)(pop) * OPS_MAX_OUTPUTS + (uint32_t)(out)) * RULES_N_CLASSES + (uint32_t)(rcls)) * RULES_MAX_IN + \
     (uint32_t)(slot))
#define RULES_EDGE_WORDS ((OP_COUNT * OPS_MAX_OUTPUTS * RULES_N_CLASSES * RULES_MAX_IN + 63) / 64)
#define RULES_NEEDS_EDGES 12 /* edges kept (more would only make the filter stricter) */
typedef struct {
    uint8_t n_cls;                  /* distinct node classes of the pattern */
    uint8_t n_edges;
    uint8_t cls[RULES_MAX_OPS];     /* RULES_NODE_CLASS values */
    uint8_t count[RULES_MAX_OPS];   /* pattern ops of class cls[i] */
    uint32_t edge[RULES_NEEDS_EDGES]; /* RULES_EDGE_KEY values */
    uint8_t n_sigs;
    uint32_t sig[RULES_MAX_OPS];    /* parameter signatures */
} rules_match_needs;

/* The needs of rule r's pattern side in direction dir. */
void rules_match_needs_of(const rules_rule *r, rules_dir dir, rules_match_needs *nd);
/* 0 if the indexed graph cannot hold a match of a pattern with these needs; 1 if it may. */
int rules_match_possible(const rules_match_needs *nd, const rules_match_index *ix);

/* Signatures for a matcher with an index of its own (eqsat's e-graph, src/optimizer/eqsat.c), the
 * ones rules_match_index and rules_match_needs use: of a node of op with n_in inputs, parameters p
 * and output 0 of shape out0 seen as a rule op at lift k (out0's first k dims 1, p unlifted); 0
 * when it cannot be matched at that lift. A node of signature s at lift k can match a pattern op
 * only if rules_op_sig gives s for it and k is the node's rank less the op's out_rank. */
uint32_t rules_node_sig(ops_type op, int32_t n_in, const ops_params *p, const ops_shape *out0, int32_t k);
/* Pattern op po's signature; 0 (match anything) when its rank is unknown. The caller passes 0 for
 * ops with constrained parameters (rules_match_needs: the rule fixes them from dims). */
uint32_t rules_op_sig(const rules_op *po);

/* Called for each match; return nonzero to stop the search. */
typedef int (*rules_match_fn)(const rules_match *m, void *user);

/* Find every match of rule `rule` of rs in direction dir in the indexed graph, in a deterministic
 * order (by the nodes of the last pattern op, ascending, then depth first), calling fn for each.
 * Returns the number of matches reported. */
int32_t rules_match_find(const rules_set *rs, int32_t rule, rules_dir dir, const rules_match_index *ix,
                         rules_match_fn fn, void *user);

/* Whether parameters p (of a pattern op) and q (of a graph node) of op `op` compute the same thing
 * on inputs of shapes in[0..n_in): equal declared parameters, with the exceptions in the file
 * comment. skip_key/skip_list: parameters not compared (constrained by the rule; may be NULL):
 * skip_key[k] for scalar keys, skip_list[i] for entries of the list parameter. */
int rules_match_params(ops_type op, const ops_params *p, const ops_params *q, int32_t n_in, const ops_shape *in,
                       const uint8_t *skip_key, const uint8_t *skip_list);

/* 1 if op is a two-operand op that broadcasts (numpy rules), as its shape inference says: it
 * gives (2,3) for (2,3) with (1,3) and for (2,3) with (2,1). */
int rules_match_broadcasts(ops_type op);

/* 1 if op k of side `side` of r is a free split (file comment): r is marked "split_sizes": "free"
 * and the op is a two-way split with sizes [] that no constraint ties to a dim. */
int rules_split_is_free(const rules_rule *r, rules_side side, int32_t k);
/* Whether split node parameters q (n_out outputs) bind a free split whose parameters at the
 * node's lift are lp: the same axis, two parts of any sizes. The matcher then requires the bound
 * free splits to be all equal halves or all cut at one n (rules_match.split_n). */
int rules_match_free_split(const ops_params *lp, const ops_params *q, int32_t n_out);
/* A free split of a target (parameters p, at its lift) cut at [n, d - n] along its axis of an
 * input of shape *in. 0, or -1 when the input is too short to cut there. */
int rules_cut_free_split(ops_params *p, const ops_shape *in, int64_t n);

/* --- lifting (leading unit dims, see the file comment) ------------------------------------------ */

#define RULES_MAX_LIFT OPS_MAX_DIMS /* unit dims in front: at most a rank-0 rule tensor as rank 6 */

/* The lift of a tensor of shape sh standing for a rule tensor of rank `rank`: k = sh->rank - rank
 * when k >= 0 and sh's first k dims are 1; else -1. */
int32_t rules_lift_of(const ops_shape *sh, int32_t rank);

/* The parameters of op at lift k: *out = p with the axis moved by k (concat, split, softmax) or
 * the perm kept on the k unit dims in front (transpose). 0, or -1 when k > 0 and op is not one
 * that lifting keeps sound (the list in the file comment). k == 0: *out = *p for every op. */
int rules_lift_params(ops_type op, const ops_params *p, int32_t k, ops_params *out);

/* 1 if lifting op moves its parameter key (list: the list parameter), so that a rule constraint
 * tying it to a dim cannot be read at lift > 0. */
int rules_lift_moves(ops_type op, ops_param_key key);

/* Whether a rule op whose inputs have rule ranks rin[0..n_in) and whose outputs have rule rank
 * rout may stand for a node reading shapes in[] and writing shapes out[0..n_out): every tensor's
 * lift (rules_lift_of) is >= 0, and where any is > 0 the op is one that lifting keeps sound
 * (matmul: operands of rule rank >= 2; an axis op or transpose: its operands' lift is its
 * output's). Returns the output's lift (to lift the parameters with), or -1. */
int32_t rules_lift_op(ops_type op, int32_t n_in, const int32_t *rin, const ops_shape *in, int32_t rout, int32_t n_out,
                      const ops_shape *out);

/* --- applying --------------------------------------------------------------------------------- */

#define RULES_APPLY_MAX_NODES 16    /* new nodes of one plan */
#define RULES_APPLY_MAX_IN 16       /* inputs of one new node */
#define RULES_APPLY_MAX_WEIGHTS 8   /* new constant weights of one plan */
#define RULES_APPLY_MAX_REMOVED 16  /* nodes a plan replaces */
#define RULES_APPLY_MAX_MAP 16      /* old tensors whose readers move */

/* A tensor in a plan: an existing tensor of the graph, output `out` of new node `idx`, or new
 * weight `idx`. */
typedef enum { RULES_AREF_TENSOR, RULES_AREF_NODE, RULES_AREF_WEIGHT, RULES_AREF_COUNT } rules_aref_kind;
typedef struct {
    rules_aref_kind kind;
    int32_t idx, out;
} rules_aref;

typedef struct {
    ops_type op;
    ops_params p;
    int32_t n_in;
    rules_aref in[RULES_APPLY_MAX_IN];
    int32_t n_out;
    ops_shape out[OPS_MAX_OUTPUTS];  /* inferred by rules_apply_infer */
} rules_apply_node;

/* A weight of constant value (a zero bias where merged siblings lack one). */
typedef struct {
    ops_shape shape;
    float value;
} rules_apply_weight;

typedef struct {
    int32_t n_nodes;                 /* new nodes, each reading only earlier new nodes */
    rules_apply_node nodes[RULES_APPLY_MAX_NODES];
    int32_t n_weights;
    rules_apply_weight weights[RULES_APPLY_MAX_WEIGHTS];
    int32_t n_removed;               /* nodes replaced; their outputs must be mapped or unread */
    int32_t removed[RULES_APPLY_MAX_REMOVED];
    int32_t n_map;                   /* readers (and graph-output slots) of old[i] move to new[i] */
    int32_t old_t[RULES_APPLY_MAX_MAP];
    rules_aref new_t[RULES_APPLY_MAX_MAP];
    /* filled by rules_apply_check: every node gone after the edit (removed ones first, then those
     * left with no readers), owned by the plan: rules_apply_plan_clear */
    int32_t n_dead;
    int32_t *dead;
} rules_apply_plan;

void rules_apply_plan_clear(rules_apply_plan *pl); /* frees dead; the plan can be reused */

/* Infer the new nodes' output shapes (ops_infer on the graph's and earlier new nodes' shapes),
 * refusing tensors over g->max_elements. 0, or -1 with a message. */
int rules_apply_infer(const graph *g, rules_apply_plan *pl, char *err, size_t errlen);

/* Turn a match into a plan (pl zeroed, or a plan made before: its dead list is freed): the target side's ops with their constrained parameters computed
 * from the bound shapes, shapes inferred, mapped outputs paired. -1 with a message when the
 * target does not type-check on these shapes or a mapped output would change shape. */
int rules_apply_plan_rule(const rules_set *rs, const rules_match *m, const rules_match_index *ix,
                          rules_apply_plan *pl, char *err, size_t errlen);

/* Check a plan against the indexed graph: new nodes read no output of a removed node, removed
 * nodes' outputs are either mapped or read only by removed nodes (and are not graph outputs),
 * mapped tensors keep their shapes, and the result has no cycle. Fills pl->dead. 0, or -1 with a
 * message. ix's scratch is used (not thread-safe per index). */
int rules_apply_check(rules_match_index *ix, rules_apply_plan *pl, char *err, size_t errlen);

/* Build the edited graph: a clone of the indexed graph with the new weights and nodes added (named
 * "<prefix>.<N>.<op>" for N counting up from *counter, which is advanced; the caller keeps the
 * prefix unused by other names), readers moved, graph outputs keeping their names, dead nodes
 * and unused tensors dropped. New nodes get tag 1. *out: caller owns. 0, or -1 with a message. */
int rules_apply_run(const rules_match_index *ix, const rules_apply_plan *pl, const char *prefix, int64_t *counter, graph **out,
                    char *err, size_t errlen);

/* A name prefix that no node, tensor or weight name of g starts with: "opt", else "opt1", ...
 * Written into buf (at least 16 bytes); returns buf. */
const char *rules_apply_prefix(const graph *g, char *buf, size_t len);

/* Both sides of rule r as one graph over shared inputs: each variable a graph input of the shape
 * it had where the rule was found, then the src ops and the dst ops (named "src.K" and "dst.K"),
 * and for each mapped output i the tensors of its two sides in a[i] and b[i] (room for
 * RULES_MAX_OUTPUTS; a side that is a bare variable is its input), both marked as outputs. The
 * shape of a proof by rewriting: the rules derive r where a[i] and b[i] become equal (eqsat.h,
 * eqsat_joins). *n: the outputs. Caller owns the graph; NULL with a message. */
graph *rules_pair_graph(const rules_rule *r, int32_t *a, int32_t *b, int32_t *n, char *err, size_t errlen);
/* One side of rule r as a graph: each variable an input (as rules_pair_graph), the side's ops,
 * and as outputs, in the rule's output order, that side's tensors (a bare variable: its input).
 * Two sides are equal graphs where graph_hash says so. Caller owns; NULL with a message. */
graph *rules_side_graph(const rules_rule *r, rules_side side, char *err, size_t errlen);

#endif
