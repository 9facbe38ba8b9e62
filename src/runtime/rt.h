/* rt.h: the GPU runtime -- one graph on one CUDA device: memory planned once from tensor
 * lifetimes, weights and weight-only subgraphs resident, every node run by its op-table CUDA
 * entry (ops_cuda[], filled by rt_register_ops), the whole node sequence captured into one CUDA
 * graph and replayed.
 *
 * A context (rt_ctx) owns a clone of its graph and every device buffer it uses. Creating it does
 * all the work that may allocate or search: the arena plan, weight upload, folding of nodes whose
 * inputs are all weights, and one eager "setup" run in which each node creates its per-node state
 * (cuDNN descriptors, the convolution algorithm chosen by measurement, its workspace need). After
 * that nothing is allocated: rt_run launches the captured graph (captured on the first rt_run),
 * or, where capture is off or failed, the same kernels one by one.
 * Numbers are FP32 throughout: TF32 is switched off (NVIDIA_TF32_OVERRIDE=0, cuDNN FMA math).
 * Not thread-safe; one device. The hand-written matmul keeps one process-wide split-K workspace
 * that may move while a context is set up: create every context you will run before the first
 * rt_run of any of them (tasc bench does), or captured graphs of earlier contexts may point at
 * freed memory.
 * Errors a caller can cause (a graph the runtime cannot run, bad input sizes) come back as -1
 * with a one-line message; failed CUDA or cuDNN calls abort with the library's message.
 */
#ifndef TASC_RT_H
#define TASC_RT_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_ctx rt_ctx;

#define RT_DEFAULT_WORKSPACE_MB 256 /* cap of the shared scratch (cuDNN workspace, padded inputs) */

typedef struct {
    int no_graph;             /* 1: replay by launching the nodes one by one (no CUDA graph) */
    int no_fold;              /* 1: run weight-only nodes every time instead of once at setup */
    int32_t capture_repeat;   /* the node sequence is captured this many times (0 or 1: once);
                                 the cost model times short nodes this way */
    int64_t workspace_limit;  /* bytes; 0: TASC_RT_WORKSPACE_MB from the environment, else
                                 RT_DEFAULT_WORKSPACE_MB */
    double check_tol;         /* > 0: during setup compare every node's output with its CPU
                                 reference; nodes over this relative L2 error are printed */
    int verbose;              /* 1: per-node choices (convolution algorithms) on stderr */
    int autotune;             /* matmul problems no tuning table holds, met during setup:
                                 RT_AUTOTUNE_OFF (0): the heuristic runs them, silently (the cost
                                 model's contexts); RT_AUTOTUNE_ON: tuned on first use, about 2 s
                                 each, one line each on stderr, kept in the per-device cache
                                 (ops/cuda/matmul.h), unless TASC_NO_AUTOTUNE=1; RT_AUTOTUNE_REFUSED
                                 (or ON under TASC_NO_AUTOTUNE): the heuristic, with a one-line
                                 notice of how many there were */
    int precision;            /* the hand-written matmul's arithmetic, for matmul nodes and the
                                 convolutions' GEMM path: RT_PRECISION_FP32 (0: strict FP32 on the
                                 CUDA cores) or RT_PRECISION_3XTF32 (three TF32 tensor-core products
                                 per FP32 product: FP32-accurate, ops/cuda/matmul.h). cuDNN and
                                 cuBLAS calls stay strict FP32 either way */
    int no_scatter;           /* 1 (or TASC_NO_SCATTER=1 in the environment): every transpose,
                                 split and gather reading a matmul's output runs as its own kernel,
                                 and so do transposes that move no element (A/B measurement);
                                 0: a matmul's store executes them (rt_scatter_find; at 3xtf32
                                 only where the product's kernel is the FP32 one: rt.c) */
    int no_fuse;              /* 1 (or TASC_NO_FUSE=1 in the environment): every add and relu after
                                 a convolution, and every smul or add before a softmax or a
                                 layernorm, runs as its own kernel (A/B measurement); 0: a
                                 convolution whose output only an add reads, the add's other operand
                                 made earlier, adds it (and a relu that alone reads the sum) in its
                                 epilogue; a softmax reading an smul by a constant, and a
                                 layernorm reading an add of two tensors of its shape, each over
                                 contiguous rows, compute the smul or add themselves (rt_fuse.c) */
} rt_opts;

enum { RT_PRECISION_FP32 = 0, RT_PRECISION_3XTF32 = 1 };
enum { RT_AUTOTUNE_OFF = 0, RT_AUTOTUNE_ON = 1, RT_AUTOTUNE_REFUSED = 2 };

typedef struct {
    int64_t arena_bytes;      /* planned intermediates: one arena, buffers reused after last use */
    int64_t unplanned_bytes;  /* what the same intermediates take without reuse */
    int64_t weight_bytes;     /* weights and folded constants kept on the device */
    int64_t input_bytes;      /* graph inputs (kept across runs) */
    int64_t workspace_bytes;  /* shared scratch after setup */
    int64_t device_bytes;     /* the sum: what this context holds on the device */
    int32_t nodes_run;        /* nodes launched per run */
    int32_t nodes_folded;     /* weight-only nodes computed once at setup */
    int32_t nodes_aliased;    /* views, no kernel: reshapes, splits into consecutive runs, transposes moving nothing,
                                 concats their producers write in place (rt_view.c) */
    int32_t nodes_scattered;  /* movement nodes executed by a matmul's store (no kernel) */
    int32_t scatter_stores;   /* matmuls with such a store */
    int32_t nodes_fused;      /* adds and relus run in a convolution's epilogue, smuls and adds
                                 run by the softmax or layernorm reading them (no kernel) */
    int32_t nodes_dead;       /* nodes whose results reach no output (not run) */
    int graph;                /* 1: runs replay one CUDA graph; 0: node-by-node launches */
    char graph_note[160];     /* why graph is 0 ("off by option", or the capture error) */
    double check_worst;       /* with check_tol: the largest node error seen, and where */
    char check_worst_node[96];
    int32_t check_failed;     /* nodes over check_tol */
    int32_t conv_measured;    /* convolution configurations whose paths the setup measured (and
                                 cached: ops/cuda/conv_table.h) */
    int32_t conv_reused;      /* convolutions that took a choice made before: in this process, or
                                 read from the per-device cache file */
} rt_info;

/* 1 if a CUDA device is usable, else 0 with the reason in err. */
int rt_available(char *err, size_t errlen);
/* The current device's name (as cudaGetDeviceProperties gives it). */
const char *rt_device_name(void);

/* "CUDA runtime R, driver D, cuDNN V" of this process; static storage. */
const char *rt_versions(void);

/* Fill the op table's CUDA slots (idempotent); returns the number of ops without one. */
int rt_register_ops(void);

/* Plan, upload, fold and set up g (which must be valid; it is cloned). Inputs start as
 * rt_make_inputs(g, 0). o may be NULL (defaults). Caller owns the result (rt_ctx_free). */
rt_ctx *rt_ctx_new(const graph *g, const rt_opts *o, char *err, size_t errlen);
void rt_ctx_free(rt_ctx *c);

/* Copy graph input i (numel floats of its shape; ids as exact floats) to the device. */
int rt_set_input(rt_ctx *c, int32_t i, const float *host, char *err, size_t errlen);
/* One run (graph replay or node launches), asynchronous on the context's stream. */
int rt_run(rt_ctx *c, char *err, size_t errlen);
/* Wait for the runs launched so far, then copy graph output j (numel floats) to host. */
int rt_get_output(rt_ctx *c, int32_t j, float *host, char *err, size_t errlen);
/* warmup untimed runs, then reps runs timed one by one with CUDA events (ms[reps], each the
 * device time from before the launch to its end). */
int rt_time(rt_ctx *c, int32_t warmup, int32_t reps, double *ms, char *err, size_t errlen);
void rt_get_info(const rt_ctx *c, rt_info *info);
/* Per-node device time: each node of a run captured alone (repeated) into its own CUDA graph,
 * median of reps replays. node_id[k] and us[k] for k < nodes_run, in run order (graph node ids).
 * Nodes read whatever their input buffers hold and may overwrite bytes of graph outputs: outputs
 * are valid again after the next rt_run. Slow: a diagnostic. */
int rt_profile(rt_ctx *c, int32_t reps, int32_t *node_id, double *us, char *err, size_t errlen);
/* Per-node cost inside the run: us[k] = the whole run's median minus the median of the run captured
 * without node k (both one CUDA graph, median of reps replays; *whole_us the first). A node that
 * costs more after its predecessors than alone (rt_profile: the same node back to back) shows it
 * here; the sum over the nodes need not be the whole run. One graph per node: slower still than
 * rt_profile, with its caveat about outputs. */
int rt_profile_in_run(rt_ctx *c, int32_t reps, double *us, double *whole_us, char *err, size_t errlen);

/* Inputs as the CPU executor generates them for seed (exec.h: float inputs normal(0,1) from
 * seed + i; int64 ids uniform in [0, min(100, rows of the smallest table gathered))): in[i] gets a
 * malloc'd buffer (caller frees) for each graph input. -1 with a message when out of memory. */
int rt_make_inputs(const graph *g, uint64_t seed, float **in, char *err, size_t errlen);

/* --- the memory planner (host only; exposed for tests and tools) ---------------------------- */

typedef struct {
    int64_t bytes;           /* size of the buffer */
    int32_t first, last;     /* steps at which it is written first and read last (inclusive) */
} rt_span;
/* Offsets into one arena for n buffers, each aligned to align bytes, such that two buffers
 * alive at a common step never overlap: greedy, largest first (ties: earlier first, lower
 * index). Deterministic. Returns the arena size. */
int64_t rt_plan_arena(int32_t n, const rt_span *spans, int64_t align, int64_t *offset);

/* --- the scatter store's planner (rt_scatter.c; host only; exposed for tests) ---------------- */

#define RT_SCATTER_MAX_NODES 64     /* movement nodes one store may execute */
#define RT_SCATTER_MAX_TENSORS 256  /* tensors of that tree */

/* A matmul whose store executes the movement nodes reading its output (reshape, transpose,
 * split, gather by constant ids; a tree): the leaves (the tensors other nodes read) are views of
 * root's buffer at leaf_off; the tree's other tensors are never made. Product element (b, i, j)
 * of nb items of m x n (the output's batch dims flattened) goes to element dst[(b*m + i)*n + j]
 * = off_b[b] + off_m[i] * mul[j] + off_n[j] of the buffer (ops/cuda/matmul.h, mm_scatter). */
typedef struct {
    int32_t node, root;            /* the matmul node, its output tensor */
    int32_t n_nodes, nodes[RT_SCATTER_MAX_NODES];
    int32_t n_leaves, leaves[RT_SCATTER_MAX_TENSORS];
    int64_t leaf_off[RT_SCATTER_MAX_TENSORS]; /* elements, multiples of 64 (256 bytes) */
    int32_t n_inner, inner[RT_SCATTER_MAX_TENSORS];
    int64_t nb, m, n;
    int64_t buf_elems;             /* the buffer: the leaves back to back, each 256-byte aligned */
    int64_t *dst;                  /* numel(root); the runtime keeps it only for node checks */
    /* Two views of the product, each with its tables where it is separable: batched (nb items of
     * m x n, as the output's batch dims), and, for a product of a packed A and a B without batch
     * dims, rows (rows_nb items of rows_m x n, rows_nb * rows_m = nb * m: the rows regrouped, B
     * broadcast; rows_nb 1 is one tall product, the fewest items that are separable are chosen). */
    int batched, vec4;             /* batched view separable; its mm_scatter.vec4 */
    int64_t rows_nb, rows_m;       /* rows view; rows_nb 0: none */
    int rows_vec4;
    int tallable;                  /* A packed over all rows, B one matrix: the rows view may be used */
    int64_t *tab;                  /* batched: off_b (nb), off_m (m), mul (n), off_n (n); then rows:
                                      off_b (rows_nb), off_m (rows_m), mul (n), off_n (n) */
} rt_scatter;

/* For matmul node (live[n]: nodes that reach an output): the largest tree of movement nodes
 * reading its output whose placement is separable in a view; where the whole tree is not, its deepest real
 * transposes are left out (they run as kernels reading a leaf) until it is. 1 found (sc filled;
 * rt_scatter_free), 0 none (why says why), -1 out of memory or a weight unreadable (err). */
int rt_scatter_find(const graph *g, int32_t node, const uint8_t *live, rt_scatter *sc, char *why, size_t len,
                    char *err, size_t errlen);
void rt_scatter_free(rt_scatter *sc);
/* Tables for dst over nb items of m x n: 1 if dst[(b*m + i)*n + j] = off_b[b] + off_m[i] * mul[j]
 * + off_n[j] for all elements (tables filled, *vec4 as mm_scatter.vec4: 1, 2 or 0), else 0. */
int rt_scatter_tables(const int64_t *dst, int64_t nb, int64_t m, int64_t n, int64_t *off_b, int64_t *off_m,
                      int64_t *mul, int64_t *off_n, int *vec4);

/* --- what the planner makes of each node (rt_plan.c; host only; exposed for tests) ---------- */

/* A node's class, decided once by rt_classify; the runtime's list of launches, its buffers and
 * its counts (rt_info) are read from it. */
typedef enum {
    RT_N_DEAD,    /* its results reach no graph output: never run */
    RT_N_FOLD,    /* every input a weight or a folded value (folding on): run once at setup */
    RT_N_SCATTER, /* a movement node that a matmul's scatter store executes: no kernel */
    RT_N_FUSED,   /* run inside another node (rt_fuse.c): an add or relu in a convolution's
                     epilogue, an smul or add that a softmax or layernorm computes: no kernel */
    RT_N_VIEW,    /* its outputs are its input's bytes under other shapes (rt_node_is_view) and
                     start on whole RT_VIEW_ALIGN elements: no kernel */
    RT_N_CVIEW,   /* a concat whose producers write its inputs in place (rt_concat_views): no kernel */
    RT_N_RUN,     /* launches its kernel in every run */
    RT_N_COUNT
} rt_node_class;

/* A tensor's storage. */
typedef enum {
    RT_T_NONE,      /* not needed by any run */
    RT_T_PERSIST,   /* its own allocation for the context's life: inputs, weights, folded values */
    RT_T_ARENA,     /* a planned slice of the arena */
    RT_T_ALIAS      /* bytes of tensor alias_of from element alias_off on: a reshape or a transpose
                       that moves nothing, a part of a split into consecutive runs, an input of a
                       concat its producer writes in place (rt_view.c), a fused add's sum or relu
                       (rt_fuse.c), or a leaf of a scatter store's tree (rt_scatter) */
} rt_tensor_class;

/* The classification of one graph's nodes and what it decides of their outputs' storage. The
 * arrays are rt_classes_init's (rt_classes_free frees those still set: a caller keeping one sets
 * the pointer to NULL). tclass is final for node outputs: PERSIST for folded values, ARENA or
 * ALIAS for what running nodes and views make; graph inputs and weights stay RT_T_NONE (the
 * runtime decides which it keeps). */
typedef struct {
    const graph *g;
    const int32_t *order;     /* [n_nodes] topological order */
    const uint8_t *live;      /* [n_nodes] 1: the node's results reach a graph output */
    int no_fold, no_scatter, no_fuse, verbose; /* as in rt_opts */
    uint8_t *ncls;            /* [n_nodes] rt_node_class */
    int32_t *fuse_add;        /* [n_nodes] a convolution adding this tensor in its epilogue; -1 none */
    uint8_t *fuse_act;        /* [n_nodes] and the activation after the add (ops_act) */
    int32_t *fuse_pre;        /* [n_nodes] the FUSED producer a softmax or layernorm computes; -1 none */
    uint8_t *isconst;         /* [n_tensors] weights and folded values */
    uint8_t *tclass;          /* [n_tensors] rt_tensor_class */
    int32_t *alias_of;        /* [n_tensors] RT_T_ALIAS: the tensor whose bytes it shares (never an alias) */
    int64_t *alias_off;       /* [n_tensors] RT_T_ALIAS: from this element of alias_of on */
    int32_t n_dead, n_fold, n_alias, n_fused; /* nodes: dead, folded, views and concat views, fused */
} rt_classes;

/* live[n] = 1 for the nodes of g (order: a topological order) whose results reach a graph output;
 * -1 when out of memory. */
int rt_live_nodes(const graph *g, const int32_t *order, uint8_t *live);

/* Arrays for g's nodes and tensors, nothing classified yet; options off. -1 when out of memory. */
int rt_classes_init(rt_classes *cl, const graph *g, const int32_t *order, const uint8_t *live);
void rt_classes_free(rt_classes *cl);

/* The scatter stores' planner: records the stores it plans for RT_N_RUN matmuls with
 * rt_classes_scatter; 0, or -1 with a message. The runtime's (rt.c) asks the device at 3xtf32. */
typedef int (*rt_scatter_planner)(void *user, rt_classes *cl, char *err, size_t errlen);

/* Every node's class, each decided once, in the order the decisions depend on each other: dead
 * and folded nodes; the scatter stores (scatter, unless no_scatter or NULL); the fusions
 * (rt_fuse_plan, unless no_fuse); the views (rt_view_plan). 0, or -1 with a message. */
int rt_classify(rt_classes *cl, rt_scatter_planner scatter, void *user, char *err, size_t errlen);

/* Records a scatter store: its tree's nodes RT_N_SCATTER, its leaves views of its root at their
 * offsets, the root's buffer placed (it holds the leaves). */
void rt_classes_scatter(rt_classes *cl, const rt_scatter *sc);

/* Steps of rt_classify. Fusions (rt_fuse.c): a running convolution without activation takes the
 * add that alone reads its output (and a relu alone reading the sum) into its epilogue; a running
 * softmax or layernorm computes its producer (rt_prefuse_find). Views (rt_view.c): running nodes
 * that rt_node_is_view become RT_N_VIEW, concats rt_concat_views places RT_N_CVIEW, then the
 * outputs of running and view nodes are placed in order (a split whose parts would not start on
 * whole RT_VIEW_ALIGN elements runs its kernel). 0, or -1 when out of memory. */
int rt_fuse_plan(rt_classes *cl, char *err, size_t errlen);
int rt_view_plan(rt_classes *cl, char *err, size_t errlen);

/* 1 if node nd's outputs are bytes of its input under other shapes, as its op's entry in the
 * table says (ops_desc.view: a reshape, a split into consecutive runs, a transpose moving
 * nothing), except a transpose under no_scatter (rt_opts: the A/B switch runs it as a kernel). */
int rt_node_is_view(const graph *g, const graph_node *nd, int no_scatter);

/* --- the producer fusions' pattern (rt_fuse.c; host only; exposed for tests) ----------------- */

/* For running node id (live, not folded, not skipped): the node whose output is id's input 0 and
 * that id computes itself, or -1: a softmax over contiguous rows (the dims after its axis of size
 * 1) whose input is an smul of a tensor of its shape by a constant (isconst), or a layernorm over
 * contiguous rows whose input is an ewadd of two tensors of its shape (no broadcast); that input
 * read once (nread: input slots of live nodes reading each tensor), no graph output (isout), not
 * constant, its producer not run by another node already (ncls, rt_node_class: RT_N_SCATTER or
 * RT_N_FUSED). isconst: weights and the values folded at setup. */
int32_t rt_prefuse_find(const graph *g, int32_t id, const int32_t *nread, const uint8_t *isout,
                        const uint8_t *isconst, const uint8_t *ncls);

/* --- concatenations that move nothing (rt_view.c; host only; exposed for tests) ------------- */

/* Offsets of in-place views, in elements: 16 bytes, what the kernels' vector paths need. */
#define RT_VIEW_ALIGN 4

/* Over the nodes in topological order: each node that runs (ncls, rt_node_class: RT_N_RUN, a
 * kernel would run it) whose inputs its op's entry makes views of its output (ops_desc.view_in: a
 * concat whose output has size 1 on every axis before the concat axis), its output free (freet:
 * per tensor, an activation nothing has placed yet: not an input, weight, folded value or alias)
 * and every input free, made by a running (RT_N_RUN) node of an op that always has one output (not
 * a split), read by this node in one slot, at an offset of whole RT_VIEW_ALIGN elements: ncls[id]
 * = RT_N_CVIEW and each input's vof = the node's output, voff = its offset there. vof must start
 * at -1. Returns the number of such nodes. */
int32_t rt_concat_views(const graph *g, const int32_t *order, uint8_t *ncls, const uint8_t *freet, int32_t *vof,
                        int64_t *voff);

#ifdef __cplusplus
}
#endif

#endif
