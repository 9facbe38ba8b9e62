/* rewrite.h: built-in rewrites -- graph edits that are not identities of the rule generator's op
 * set, found by code rather than by matching rule files -- and constant folding.
 *
 * Each kind finds candidates in an indexed graph (rules/match.h) and describes each as a
 * rules_apply_plan, so the optimizer checks and applies them exactly like rule matches:
 *   cse          a node equal to an earlier one (same op, parameters, inputs) is dropped and
 *                its readers read the earlier one's outputs
 *   bn-fold      conv2d (no activation) read only by a batchnorm -> one conv2d whose kernel and
 *                bias are computed from the weights: w * s, (b - mean) * s + beta with
 *                s = scale / sqrt(var + eps) (weight-only nodes, folded into new weights later)
 *   fuse-bias    conv2d or matmul (no activation) read only by an ewadd with a weight-only
 *                operand that broadcasts along the output channel -> the op with that bias
 *   fuse-act     conv2d or matmul (no activation) read only by relu or gelu -> the op with the
 *                activation fused (the GPU runtime's native epilogues)
 *   split-concat a concat reading all outputs of one split, in order, on the split's axis, reads
 *                the split's input instead (the concat disappears if that is all it reads)
 *   merge-matmul matmuls reading the same A with 2-D B, the same activation -> one matmul with
 *                the B's (and biases) concatenated, then a split
 *   merge-conv   conv2d (groups 1, dilation 1) reading the same x with equal strides and
 *                activation, whose windows align once the smaller kernels are zero-padded to the
 *                largest (enlarge): one conv with the kernels concatenated, then a split; each
 *                set is offered whole (up to 8, the split limit) and by kernel size
 *   layout       a transpose (perm P) whose output reaches, through nodes that each compute a
 *                position of the last axis from that position alone, only transposes by P's
 *                inverse: those nodes in the layout of the transpose's input, the transposes
 *                gone (the NHWC islands of ConvNeXt-style exports: transpose, layernorm,
 *                pointwise matmuls, transpose back). The last axis is then dim c = P[r-1] of the
 *                input, and the nodes become: layernorm over the last axis -> over dims
 *                [c, c+1) (axis_end); matmul by a 2-D (C, F) B, its bias and activation ->
 *                conv2d 1x1 with kernel B^T as (F, C, 1, 1) (rank-4 input, c = 1: NCHW);
 *                elementwise ops with a one-value operand or one along the last axis -> the
 *                operand as (C, 1, ...) (reshaped); pointwise ops and elementwise ops between
 *                two same-shaped nodes of the chain -> unchanged. Every tensor of the chain is
 *                read inside it only (up to 14 nodes). A search move: the cost model decides
 *                (it is not among the greedy kinds of search_opts_default).
 * The rest of a merge's weights (concatenations, enlargements) are weight-only nodes.
 * Constant folding (rewrite_fold_constants) replaces every weight-only tensor that a node
 * computed by a DATA weight holding its values, computed with the CPU references.
 */
#ifndef TASC_REWRITE_H
#define TASC_REWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "match.h"

typedef enum {
    REWRITE_CSE,
    REWRITE_BN_FOLD,
    REWRITE_FUSE_BIAS,
    REWRITE_FUSE_ACT,
    REWRITE_SPLIT_CONCAT,
    REWRITE_MERGE_MATMUL,
    REWRITE_MERGE_CONV,
    REWRITE_LAYOUT,
    REWRITE_COUNT
} rewrite_kind;

/* "cse", "bn-fold", "fuse-bias", "fuse-act", "split-concat", "merge-matmul", "merge-conv", "layout" */
extern const char *const rewrite_names[REWRITE_COUNT];

/* Called with each candidate (shapes inferred, not yet checked by rules_apply_check); the plan
 * is the finder's scratch: copy it to keep it. Return nonzero to stop. */
typedef int (*rewrite_fn)(rules_apply_plan *pl, void *user);

/* Report every candidate of one kind in the indexed graph, in a deterministic order. wo: the
 * weight-only flags of ix->g's tensors (cost_weight_only). Returns the number reported. */
int32_t rewrite_find(rewrite_kind kind, const rules_match_index *ix, const uint8_t *wo, rewrite_fn fn, void *user);

/* Apply the kinds set in `kinds` greedily until none applies: each round applies the first
 * candidate (kinds in enum order) that passes rules_apply_check. *g is replaced by the result;
 * new nodes are named "<prefix>.<N>.<op>" from *counter on (rules_apply_run). counts[k] (may be
 * NULL) grows by the rewrites of kind k applied. 0, or -1 with a message (*g unchanged). */
int rewrite_greedy(graph **g, const uint8_t kinds[REWRITE_COUNT], const char *prefix, int64_t *counter,
                   int32_t counts[REWRITE_COUNT], char *err, size_t errlen);

/* The inverse of fuse-bias, for a search whose rules know conv2d and matmul without a bias
 * (search_opts.split_bias): every conv2d or matmul without an activation whose third input is a
 * weight-only rank-1 bias becomes the op without it and an ewadd of the bias (reshaped to
 * [F, 1, 1] for conv2d). Fusing it back is lowering (fuse-bias after the search), not a
 * substitution. *g is replaced; *n_split (may be NULL) receives the count. 0, or -1 with a message. */
int rewrite_split_bias(graph **g, const char *prefix, int64_t *counter, int32_t *n_split, char *err, size_t errlen);

/* The bias normal form of a search on split biases (search_opts.split_bias): bias adds moved
 * across the splits and concats that verified merge rules put around them, to where lowering
 * fuses them and where the rules that remove splits and concats can see those directly. Two
 * moves, each giving the same values, applied greedily until neither applies:
 *   front  a split of the output y of a conv2d or matmul without an activation (the split its
 *          only reader), along the op's bias axis, some of whose parts are each read only by an
 *          ewadd of a weight-only channel-vector bias (what a merge rule leaves behind the split of
 *          merged siblings whose biases were split off) -> split(ewadd(y, concat(the biases,
 *          zeros for the other parts))): the parts can meet a concat directly (the verified
 *          identity concat(split(y)) = y), and the one add is lowered into the op;
 *   back   a concat of all parts of such a split of ewadd(y, b) in another order (a merge of
 *          siblings in the other order) -> ewadd(the concat of split(y)'s parts, b's parts
 *          concatenated alike): the permutation meets y's producer, where a verified rule moves
 *          it into the weights, and the add is lowered again.
 * The adds, splits and concats of biases are weight-only nodes (folded). The backtracking search
 * applies this to every graph it takes; eqsat makes the same moves on its e-graph (eqsat.c).
 * *g is replaced when one applies; *n_moved (may be NULL) receives the count. 0, or -1 with a
 * message. */
int rewrite_bias_normal(graph **g, const char *prefix, int64_t *counter, int32_t *n_moved, char *err, size_t errlen);

/* What lowering fuses, read from the op table where it can be: an op with an `act` parameter
 * (conv2d, matmul) has a bias-and-activation epilogue; the activations it fuses are those the GPU
 * runtime applies there (relu, gelu, silu, gelu_tanh, hardswish: the op table's ops_desc.act; and
 * relu6, a clip from 0 to 6, which only rewrite_fusable_act_p sees, from the node's parameters);
 * OPS_ACT_NONE for any other op;
 * a fused bias runs along the channel axis (1, NCHW) of a conv2d and the last axis of a matmul. */
int rewrite_has_epilogue(ops_type op);
ops_act rewrite_fusable_act_p(ops_type op, const ops_params *p); /* the one the searches and eqsat's costs use */
ops_act rewrite_fusable_act(ops_type op); /* op alone (p NULL): never relu6 */
int32_t rewrite_bias_axis(ops_type op, int32_t rank);
/* 1 if bias shape b, right-aligned against out, is 1 everywhere but the channel dim ch, where it
 * is out's size (what fuse-bias fuses along ch). */
int rewrite_channel_vector(const ops_shape *b, const ops_shape *out, int32_t ch);

/* 1 if node n of ix->g is one that lowering (fuse-bias, then fuse-act, greedily) absorbs into the
 * conv2d or matmul before it: an ewadd of a weight-only channel bias, or a relu or gelu, reading
 * the op's (or such an ewadd's) output as its only reader. A search that lowers its result costs
 * such a node as free. wo: the weight-only flags (cost_weight_only). */
int rewrite_lowered_free(const rules_match_index *ix, const uint8_t *wo, int32_t n);

/* Constant folding: every live weight-only tensor that a node computes and a non-weight-only
 * node reads (or that is a graph output) becomes a DATA weight of the same name holding its
 * values, computed node by node with the CPU references from the weights' values; the weight-only
 * nodes then drop out. *g is replaced; *n_folded (may be NULL) receives the number of tensors
 * folded. 0, or -1 with a message (a weight whose data cannot be read, out of memory). */
int rewrite_fold_constants(graph **g, int32_t *n_folded, char *err, size_t errlen);

#endif
