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
    int32_t nodes_aliased;    /* reshapes that became aliases (no kernel) */
    int32_t nodes_dead;       /* nodes whose results reach no output (not run) */
    int graph;                /* 1: runs replay one CUDA graph; 0: node-by-node launches */
    char graph_note[160];     /* why graph is 0 ("off by option", or the capture error) */
    double check_worst;       /* with check_tol: the largest node error seen, and where */
    char check_worst_node[96];
    int32_t check_failed;     /* nodes over check_tol */
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

#ifdef __cplusplus
}
#endif

#endif
