/* matmul_impl.h: internals shared by the files of the matmul module (CUDA C++ only): the kernel
 * argument block, the launchers of each rung of the ladder, the tuned kernel's list of compiled
 * tile configurations, and the device buffer the kernels' workspaces grow in (mm_dbuf). The
 * public, C-callable API is matmul.h.
 *
 * Launchers take a checked problem (mm_problem_check passed) and never fail: a bad launch is a
 * bug here and aborts through CUDA_LAUNCH_CHECK.
 */
#ifndef TASC_MATMUL_IMPL_H
#define TASC_MATMUL_IMPL_H

#include <cuda_runtime.h>

#include "gpu_util.h"
#include "matmul.h"

/* Kernel arguments, passed by value to every kernel of the module. */
struct mm_args {
    const float *A;       /* (batch, M, K) at stride sa */
    const float *B;       /* (batch, K, N) at stride sb */
    const float *bias;    /* (N) or NULL */
    float *C;             /* (batch, M, N) at stride sc */
    int M, N, K;
    long long sa, sb, sc; /* elements; 0 broadcasts A or B */
    int has_bias, act;    /* act: mm_act */
    int batch0;           /* batch item of blockIdx.z == 0 (launches are split at 65535 items) */
    int vec_a, vec_b, vec_c; /* rows of A / B / C start 16-byte aligned: float4 access allowed */
    /* tuned kernel only */
    int split_k;          /* >= 1 (cluster configurations: <= 16, the cluster size) */
    int k_chunk;          /* k per split, a multiple of the k-step */
    int group_m;          /* rasterization group height, >= 1 */
    float *ws;            /* split_k > 1: partial sums (batch, split_k, M, N) */
    int *counters;        /* split_k > 1: (batch, tiles) arrival (and, _g, departure) counters, zero
                             between launches */
    /* scatter store (mm_scatter, matmul.h): sc_n non-NULL sends output (b, m, n) to C + sc_b[b] +
       sc_m[m] * sc_mul[n] + sc_n[n] (sc is then 0); tested once, after the k loop, by the warp-tiled
       kernel's epilogue (matmul_wt_epilogue.cuh), which runs store loops compiled for it */
    const long long *sc_b, *sc_m, *sc_mul, *sc_n;
    int sc_vec;           /* mm_scatter.vec4: 1 every group of 4 columns, 2 checked per group, 0 none */
};

/* Fills the shape, pointer and alignment fields from a checked problem. */
mm_args mm_args_make(const mm_problem *p, const float *A, const float *B, const float *bias, float *C);

/* Grid z is at most 65535: run launch(a_chunk, items) over chunks of the batch. */
template <class F>
static inline void mm_batch_chunks(const mm_args &a, long long batch, F launch) {
    for (long long b0 = 0; b0 < batch; b0 += 65535) {
        mm_args c = a;
        c.batch0 = (int)b0;
        launch(c, (unsigned)(batch - b0 < 65535 ? batch - b0 : 65535));
    }
}

/* The ladder's launchers (one per rung, in ladder/; the tuned kernel is below). v7 and v8 run
 * configuration MM_WT_DEFAULT_CFG of the list below without split-K. */
void mm_launch_v1(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v1_5(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v2(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v3(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v4(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v5(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v6(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v7(const mm_args &a, long long batch, cudaStream_t s);
void mm_launch_v8(const mm_args &a, long long batch, cudaStream_t s);

/* The warp-tiled template (v7, v8, tuned), one entry per compiled configuration. The launcher
 * reads split_k, k_chunk, group_m, ws and counters from the arguments. */
typedef void (*mm_wt_launch_fn)(const mm_args &a, long long batch, cudaStream_t s);
struct mm_wt_entry {
    mm_tile_config cfg;
    mm_wt_launch_fn launch;
    int (*max_clusters)(int size); /* how many groups of size blocks (a tile's k-slices) can be resident
                                      at once: clusters (_c; 0: the launch would fail), co-resident
                                      grids (_g); else 1 */
};
/* The list is kept in five files so that they compile in parallel: the big tiles
 * (matmul_tiles_big.cu), the small ones (matmul_tiles.cu), the deep pipelines (matmul_tiles_deep.cu),
 * the cp.async rings of pipeline x (matmul_tiles_ring.cu), the co-resident split-K kind
 * (matmul_tiles_grid.cu); index i runs over them in that order. */
extern const mm_wt_entry mm_wt_table_big[];
extern const int mm_wt_count_big;
extern const mm_wt_entry mm_wt_table_small[];
extern const int mm_wt_count_small;
extern const mm_wt_entry mm_wt_table_deep[];
extern const int mm_wt_count_deep;
extern const mm_wt_entry mm_wt_table_ring[];
extern const int mm_wt_count_ring;
extern const mm_wt_entry mm_wt_table_grid[];
extern const int mm_wt_count_grid;
static inline int mm_wt_count(void) {
    return mm_wt_count_big + mm_wt_count_small + mm_wt_count_deep + mm_wt_count_ring + mm_wt_count_grid;
}
static inline const mm_wt_entry *mm_wt_at(int i) {
    if (i < mm_wt_count_big)
        return &mm_wt_table_big[i];
    i -= mm_wt_count_big;
    if (i < mm_wt_count_small)
        return &mm_wt_table_small[i];
    i -= mm_wt_count_small;
    if (i < mm_wt_count_deep)
        return &mm_wt_table_deep[i];
    i -= mm_wt_count_deep;
    return i < mm_wt_count_ring ? &mm_wt_table_ring[i] : &mm_wt_table_grid[i - mm_wt_count_ring];
}
/* The configuration v7 and v8 run at (an index into the list). */
#define MM_WT_DEFAULT_CFG 0
#define MM_WT_DEFAULT_GROUP 8

/* Function attributes of the warp-tiled kernels: the shared-memory carveout preference (percent of
 * the unified L1/shared memory, -1 = the driver's choice) applied at each launcher's next launch
 * after mm_attr_gen changes (mm_set_carveout). */
extern int mm_attr_carveout;
extern int mm_attr_gen;
void mm_set_carveout(int percent);

/* Device facts, read once per process (current device). */
struct mm_device_info {
    int sm_count;
    int l2_bytes;
    int max_smem_optin; /* largest dynamic shared memory a block may ask for */
    char name[256];
    int cc_major, cc_minor;
    int clock_mhz;      /* maximum SM clock (cudaDevAttrClockRate) */
    char key[MM_DEVKEY_LEN]; /* mm_devkey_make of the above */
};
const mm_device_info *mm_device(void);


/* A device buffer grown on demand: the kernels' split-K workspaces (partial sums, per-tile arrival
 * counters) and the wgmma path's split operands, each a process-wide static of its file (not
 * thread-safe; launches that share one are ordered: one stream). {NULL, 0} until first grown.
 * Inline here, not in a .cu of its own: bench programs include the kernel files whole. */
struct mm_dbuf {
    void *p;      /* device memory of `bytes` bytes, or NULL */
    size_t bytes;
};

/* Device memory a workspace no longer uses: freed now, or, while a captured CUDA graph may still
 * launch kernels that point into it (mm_workspace_hold), kept until the last hold ends
 * (matmul.cu). */
void mm_dbuf_drop(void *p);

/* Lets go of b's memory (mm_dbuf_drop); b is then {NULL, 0}. */
static inline void mm_dbuf_release(mm_dbuf *b) {
    if (b->p)
        mm_dbuf_drop(b->p);
    b->p = NULL;
    b->bytes = 0;
}

/* Makes b at least `bytes` large: a smaller one is freed and allocated anew at exactly `bytes` (the
 * largest need so far), zeroed on s when `zero` (arrival counters start at zero; the kernels reset
 * them after each launch). A grown buffer has a new address, so growing is for runs outside CUDA
 * graph capture: the runtime's setup run grows every workspace its graph needs before capturing;
 * the old memory outlives every graph captured with it (mm_dbuf_drop).
 * Returns cudaSuccess, or cudaMalloc's error (cleared; b is then {NULL, 0}) for the caller to report,
 * or to abort on with CUDA_CHECK where it has no error path; a failed free or memset aborts. */
static inline cudaError_t mm_dbuf_grow(mm_dbuf *b, size_t bytes, bool zero, cudaStream_t s) {
    if (bytes <= b->bytes)
        return cudaSuccess;
    mm_dbuf_release(b);
    const cudaError_t e = cudaMalloc(&b->p, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        b->p = NULL;
        return e;
    }
    if (zero)
        CUDA_CHECK(cudaMemsetAsync(b->p, 0, bytes, s));
    b->bytes = bytes;
    return cudaSuccess;
}

/* The heuristic's predicted microseconds for (c->cfg, c->split_k) on p, or -1 when the rule does
 * not weigh that pair (matmul_heuristic.cu); the tuner orders its candidates by it. */
double mm_heuristic_predict(const mm_problem *p, const mm_choice *c);
/* mm_choose after the forced choice (matmul_autotune.cu): 1 and *c from the tables or from
 * first-use tuning, else 0 and the heuristic's *c. */
int mm_select(const mm_problem *p, mm_choice *c);
/* The same at 3xtf32 for a call whose operands of mask `presplit` (1 A, 2 B) are pre-split: 1 and
 * *c from the tables or first-use tuning, else 0 and the built-in rule's *c (mm_3xtf32_default);
 * with the wgmma mode not MM_WGMMA_AUTO, always the rule. */
int mm_select_3xtf32(const mm_problem *p, int presplit, mm_choice *c);
/* The built-in 3xtf32 rule (mm_choose_precision, matmul.h) for such a call. */
void mm_3xtf32_default(const mm_problem *p, int presplit, mm_choice *c);
/* The FP32 kernel's choice from the tables, else the heuristic: no tuning, nothing counted. */
void mm_select_fp32_quiet(const mm_problem *p, mm_choice *c);
/* The kernel of the 3xtf32 table entry for p (mm_kernel), or -1 without a usable one. */
int mm_3xtf32_table_kernel(const mm_problem *p);
/* First-use tuning at 3xtf32 (matmul_tune.cu): mm_tune_problem_precision with the operands of mask
 * presplit pre-split in the wgmma candidates' runs, as the caller's call has them. */
int mm_tune_3xtf32(const mm_problem *p, int32_t reps, double budget_s, int presplit, mm_choice *best,
                   double *best_us, FILE *log, char *err, size_t errlen);

/* The 3xTF32 kernel (matmul_3xtf32.cu), on checked problems and pointers: its choice of
 * configuration, split-K and rasterization for p (a heuristic), a run at that choice, and a run at
 * an explicit one (cfg < mm_3xtf32_config_count(), split >= 1, group >= 1). */
void mm_3xtf32_choose(const mm_problem *p, int *cfg, int *split, int *group);
void mm_3xtf32_run(const mm_problem *p, const float *A, const float *B, const float *bias, float *C, cudaStream_t s);
void mm_3xtf32_run_at(const mm_problem *p, int cfg, int split, int group, const float *A, const float *B,
                      const float *bias, float *C, cudaStream_t s);
int mm_3xtf32_config_find(const char *name); /* -1 if unknown */
void mm_3xtf32_config_tile(int cfg, int *bm, int *bn); /* block tile (0 x 0 if out of range) */

/* The wgmma path by configuration (matmul_3xtf32_wgmma.cu; cfg 0 128x128, 1 128x64, as
 * MM_KERNEL_WGMMA choices name them): names, the configuration and split-K its rule picks for a
 * call whose operands of mask presplit are pre-split (-1: the rule leaves p to mma.sync, or the
 * mode, device or split's grids rule it out), a run at cfg and split (1 .. MM_WGMMA_MAX_SPLIT; 1
 * ran, 0 nothing launched: device, grids or workspace), and which operands of a call (A, B) the
 * node's pre-split list holds (mask 1 A, 2 B). */
int mm_3xtf32_wgmma_config_find(const char *name); /* MM_WGMMA_CONFIGS, the names: matmul.h */
int mm_3xtf32_wgmma_pick(const mm_problem *p, int presplit, int *split);
int mm_3xtf32_wgmma_run_cfg(const mm_problem *p, const float *A, const float *B, const float *bias, float *C, int cfg,
                            int split, cudaStream_t s);
int mm_3xtf32_presplit_mask(const mm_problem *p, const float *A, const float *B);
mm_wgmma_mode mm_3xtf32_wgmma_get(void);
/* The node's pre-split list (mm_3xtf32_presplit_node_set), to put back after the tuner's own. */
void mm_3xtf32_presplit_node_get(mm_presplit **ps, int32_t *n);

/* Evicts A, B and C from L2 before a timed run: writes a buffer of twice the L2 size on s. */
void mm_l2_flush(cudaStream_t s);
/* The same with a kernel of ours writing the buffer (float4 stores) instead of cudaMemsetAsync. */
void mm_l2_flush_kernel(cudaStream_t s);
/* Median of n values (n >= 1); reorders v. */
double mm_median(float *v, int n);
/* Elements a strided operand spans: (batch-1)*stride + per-item size (stride 0: one item). */
static inline long long mm_span(long long batch, long long stride, long long item) {
    return stride == 0 ? item : (batch - 1) * stride + item;
}

#endif
