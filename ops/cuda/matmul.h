/* matmul.h: the hand-written FP32 CUDA matmul (issue 6): the kernel ladder v1 .. v8, the tuned
 * kernel chosen per shape from a persisted tuning table, checking helpers (fp64 reference on the
 * GPU, relative Frobenius error), the autotuner and the benchmark against cuBLAS.
 *
 * C = act(A x B + bias), all row-major with contiguous rows: A (m,k), B (k,n), C (m,n), bias (n).
 * Batched: item b uses A + b*stride_a, B + b*stride_b, C + b*stride_c (elements); a stride of 0
 * broadcasts A or B. Every pointer is a device pointer. Plain C, so .c files can include it.
 * Errors a caller can cause (bad shapes, bad names, a bad table file) come back as -1 with a one
 * line message in err (err may be NULL); failed CUDA calls abort with CUDA's message.
 * Not thread-safe: the tuned path keeps one tuning table and one split-K workspace per process.
 */
#ifndef TASC_MATMUL_H
#define TASC_MATMUL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "matmul_table.h" /* mm_choice, epilogue names, the tuning table */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- problems ------------------------------------------------------------------------------ */

/* gelu: the erf form; gelu_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); relu6: min(max(x, 0), 6);
 * silu: x * sigmoid(x); hardswish: x * max(0, min(1, x/6 + 1/2)). */
typedef enum {
    MM_ACT_NONE,
    MM_ACT_RELU,
    MM_ACT_GELU,
    MM_ACT_SILU,
    MM_ACT_GELU_TANH,
    MM_ACT_RELU6,
    MM_ACT_HARDSWISH,
    MM_ACT_COUNT
} mm_act;
typedef char mm_act_count_check[MM_ACT_COUNT == MM_EPI_ACTS ? 1 : -1]; /* the epilogue names cover them */

typedef struct {
    int64_t m, n, k;                      /* C (m,n) = A (m,k) x B (k,n) */
    int64_t batch;                        /* >= 1 */
    int64_t stride_a, stride_b, stride_c; /* elements between batch items; 0 broadcasts A or B */
    int32_t has_bias;                     /* 1: add bias (n) to every row before act */
    mm_act act;
} mm_problem;

/* Largest m, n or k accepted (keeps every in-tile index in 32 bits). */
#define MM_MAX_DIM ((int64_t)1 << 30)

/* m x n x k, batch items packed back to back (strides m*k, k*n, m*n), no bias, no act. */
void mm_problem_init(mm_problem *p, int64_t m, int64_t n, int64_t k, int64_t batch);
/* 0 if the problem is well-formed, else -1 with the reason in err. */
int mm_problem_check(const mm_problem *p, char *err, size_t errlen);
/* 2*m*n*k*batch */
double mm_problem_flops(const mm_problem *p);

/* Epilogues, as named in tuning tables and on the command line: none, bias, an activation
 * (relu, gelu, silu, gelu_tanh, relu6, hardswish), or bias_ and one (MM_EPI_COUNT, matmul_table.h). */
const char *mm_epilogue_name(int32_t has_bias, mm_act act);
/* Sets has_bias and act from a name; -1 if the name is unknown. */
int mm_epilogue_parse(const char *name, int32_t *has_bias, mm_act *act);

/* ---- versions (the ladder) ----------------------------------------------------------------- */

typedef enum {
    MM_V1,     /* one thread per output */
    MM_V1_5,   /* thread tiling: 4x4 outputs per thread, each a dot product from global memory */
    MM_V2,     /* register tile from outer products (partial sums) */
    MM_V3,     /* shared-memory tiling, cooperative fetch */
    MM_V4,     /* float4 global loads, A transposed in shared memory, 128x128 tiles, 8x8 per thread */
    MM_V5,     /* bank-conflict-free shared layout (padded A, split thread tiles) */
    MM_V6,     /* 3-stage cp.async pipeline */
    MM_V7,     /* warp tiling */
    MM_V8,     /* block rasterization for L2 reuse */
    MM_TUNED,  /* v8's template at the tile configuration and split-K the tuning table names */
    MM_3XTF32, /* the tensor-core rung: 3xTF32 (mm_run_precision at MM_PREC_3XTF32) */
    MM_VERSION_COUNT
} mm_version;

const char *mm_version_name(mm_version v); /* "v1", "v1.5", ..., "v8", "tuned", "3xtf32" */
const char *mm_version_doc(mm_version v);
/* Accepts "v1.5", "1.5", "v8", "8", "tuned", "best" and "3xtf32"; -1 if unknown. */
int mm_version_find(const char *name);

/* ---- precision (issue 17) -------------------------------------------------------------------- */

/* MM_PREC_FP32: the FP32 SIMT kernels, strict FP32. MM_PREC_3XTF32: tensor cores at FP32 accuracy
 * (matmul_3xtf32.cu): each operand split into a TF32 high part and a TF32 residual, three TF32
 * products summed with FP32 accumulation (relative error against fp64 1.4e-7 to 4e-7 at any K;
 * cuBLAS strict FP32's grows from 6e-8 at K = 16 to 1.1e-6 at K = 4096: at small K the split is
 * the less accurate of the two). mma.sync: 1.17x the FP32 kernel at 2048-8192 on an H100, slower
 * on small problems (bench/matmul/3xtf32.md); on Hopper, large problems take the wgmma path below
 * (2.2-2.3x cuBLAS strict FP32 at 4096-8192 with its split, bench/matmul/wgmma-h100.md). */
typedef enum { MM_PREC_FP32, MM_PREC_3XTF32, MM_PREC_COUNT } mm_precision;
typedef char mm_prec_count_check[MM_PREC_COUNT == MM_TABLE_PRECS ? 1 : -1]; /* tables key entries by it */

const char *mm_precision_name(mm_precision p); /* "fp32", "3xtf32" */
/* Sets *p from "fp32" or "3xtf32"; -1 if the name is unknown. */
int mm_precision_parse(const char *name, mm_precision *p);
/* The precision mm_run uses, process-wide (default MM_PREC_FP32): the runtime's --precision is
 * one call of this before its first matmul. */
void mm_precision_set(mm_precision p);
mm_precision mm_precision_get(void);
/* mm_run at an explicit precision (MM_PREC_FP32: the tuned FP32 kernel, as mm_run). At
 * MM_PREC_3XTF32 the kernel is the fastest FP32-accurate one for the problem (mm_choose_precision):
 * a 3xTF32 kernel (wgmma, mma.sync) or the FP32 tuned kernel, all at least as accurate as strict
 * FP32. */
int mm_run_precision(mm_precision prec, const mm_problem *p, const float *A, const float *B, const float *bias,
                     float *C, cudaStream_t s, char *err, size_t errlen);
/* The 3xTF32 kernel's compiled tile configurations, and a run at an explicit one (tests, probes):
 * split_k >= 1 (a fixed-order reduction: the same bits for any arrival order), group_m >= 1. */
int32_t mm_3xtf32_config_count(void);
const char *mm_3xtf32_config_name(int32_t i); /* "128x128x32_w32x64_s3_b1"; "?" if out of range */
int mm_run_3xtf32_at(const mm_problem *p, int32_t cfg, int32_t split_k, int32_t group_m, const float *A,
                     const float *B, const float *bias, float *C, cudaStream_t s, char *err, size_t errlen);
/* The Hopper path of MM_PREC_3XTF32 (matmul_3xtf32_wgmma.cu): wgmma fed by TMA, the operands split
 * into TF32 hi and lo parts by a pre-pass into a per-process workspace. MM_WGMMA_AUTO (default):
 * taken by mm_run_precision on a compute capability 9.0 device, when the build holds its sm_90a
 * code, for problems of about half a wave of 128x64 tiles or more, a quarter with a pre-split
 * operand, counting a tile split over k (split-K, where the tiles do not fill the SMs) once per
 * slice (smaller ones: mma.sync; the rule: wgt_pick in matmul_3xtf32_wgmma.cu); MM_WGMMA_OFF:
 * never; MM_WGMMA_FORCE: for every problem when available (tests). mm_run_3xtf32_at is mma.sync. */
typedef enum { MM_WGMMA_AUTO, MM_WGMMA_OFF, MM_WGMMA_FORCE } mm_wgmma_mode;
/* Its configurations, as MM_KERNEL_WGMMA choices index them: 0 "128x128", 1 "128x64" ("?" else);
 * a choice's split_k (1 .. MM_WGMMA_MAX_SPLIT) cuts k into that many slices of whole 32-wide
 * k-tiles (fewer where k is short), summed in slice order from 0.0f by the block that arrives last
 * at a tile: the same bits for any arrival order (bias and activation once, on the sum). */
#define MM_WGMMA_CONFIGS 2
#define MM_WGMMA_MAX_SPLIT MM_TABLE_WGMMA_MAX_SPLIT /* 16 */
const char *mm_3xtf32_wgmma_config_name(int32_t cfg);
void mm_3xtf32_wgmma_set(mm_wgmma_mode m);
int32_t mm_3xtf32_wgmma_available(void); /* 1 if this device and build can run it */
int64_t mm_3xtf32_wgmma_launches(void);  /* products run on it so far in this process */

/* Pre-split operands of the wgmma path: an operand that stays the same across runs (a weight, a
 * folded weight-only value) split once into its TF32 hi and lo parts, in the layout the kernel
 * reads, so that a product splits only its other operand. Side MM_OPERAND_A: src is (items, rows
 * = m, k) and hi, lo are (items, m, kp); side MM_OPERAND_B: src is (items, k, rows = n) and hi, lo
 * are its transposes (items, n, kp), K-major; kp = k rounded up to 4, zero padded; items at
 * stride elements of src. The parts are the bits the per-call split makes: same results. */
typedef enum { MM_OPERAND_A, MM_OPERAND_B } mm_operand;
typedef struct {
    const float *src;     /* the FP32 operand (device), matched by address */
    int32_t side;         /* mm_operand */
    int64_t rows, k, items, stride, kp;
    float *hi, *lo;       /* in the caller's buffer (hi, then lo) */
    int64_t uses;         /* products that read it (counted by the library) */
} mm_presplit;
/* Floats of the buffer mm_3xtf32_presplit fills (hi and lo). */
size_t mm_3xtf32_presplit_floats(int64_t rows, int64_t k, int64_t items);
/* Splits src into buf (mm_3xtf32_presplit_floats of it, device, 16-byte aligned) and describes it in *ps;
 * asynchronous on s. -1 (message in err) if the wgmma path is not available or the shape is
 * beyond its split's grids. */
int mm_3xtf32_presplit(mm_presplit *ps, mm_operand side, const float *src, int64_t rows, int64_t k, int64_t items,
                       int64_t stride, float *buf, cudaStream_t s, char *err, size_t errlen);
/* 1 if product p at MM_PREC_3XTF32 would take the wgmma path with operand `side` pre-split (the
 * dispatch rule of mm_run_precision on this device), else 0: what is worth splitting once. */
int mm_3xtf32_presplit_wanted(const mm_problem *p, mm_operand side);
/* The pre-split operands (ps[0 .. n)) the products of the node being run may use: an A or B whose
 * address is src plus a whole number of items, with the split's shape (and stride when batched),
 * reads its parts instead of being split. Set by the GPU runtime around one node call, as
 * mm_precision_set (NULL, 0: none); the library counts uses in ps[i].uses. */
void mm_3xtf32_presplit_node_set(mm_presplit *ps, int32_t n);
int64_t mm_3xtf32_presplit_uses(void); /* products that read a pre-split operand so far, process-wide */

/* ---- tile configurations of the tuned kernel ------------------------------------------------ */

typedef struct {
    int32_t bm, bn, bk;   /* block tile and k-step */
    int32_t wm, wn;       /* warp tile */
    int32_t tm, tn;       /* thread tile */
    int32_t stages;       /* shared-memory stages */
    int32_t kunroll;      /* unroll of the k loop inside a tile */
    int32_t minb;         /* blocks per SM the register allocation allows */
    int32_t pipe;         /* 0: cp.async pipeline (name: s), 1: register-staged double buffer (r),
                             2: 1 with double-buffered fragments (d), 3: 2 with B by cp.async (h),
                             4: 3 with a `stages`-deep cp.async ring for A and B (x) */
    int32_t threads;
    int32_t smem_bytes;   /* dynamic shared memory per block */
    int32_t cluster;      /* split-K kind: 1 reduced inside a thread-block cluster (name suffix _c,
                             split_k <= 16); 2 by all the tile's blocks of a cooperative grid through
                             the workspace (_g); 0 by the tile's last block through the workspace */
} mm_tile_config;

/* mm_choice (how one problem is run; its kernel: the FP32 tuned kernel, or at 3xtf32 also a 3xTF32
 * one): matmul_table.h */

int32_t mm_config_count(void);
const mm_tile_config *mm_config_get(int32_t i);            /* NULL if out of range */
/* "128x128x8_w64x32_t8x8_s3_u8_b2" (s3: 3 cp.async stages; r2, d2, h2: register-staged; x4: a
 * 4-stage cp.async ring with A transposed from shared memory; a suffix _c: cluster split-K, _g:
 * co-resident split-K); returns buf. */
const char *mm_config_name(int32_t i, char *buf, size_t len);
int32_t mm_config_find(const char *name);                  /* -1 if unknown */
/* 0 if the choice can run p on the current device, else -1 with the reason (any c->kernel). */
int mm_choice_check(const mm_problem *p, const mm_choice *c, char *err, size_t errlen);
/* c as tables name it: the FP32 configuration's name, "mma:NAME" or "wgmma:128x128"; returns buf. */
const char *mm_choice_name(const mm_choice *c, char *buf, size_t len);

/* ---- running ------------------------------------------------------------------------------- */

/* The runtime's entry point: at MM_PREC_FP32 (mm_precision_get), the tuned kernel with the choice
 * from the tuning tables (mm_choose) or, without an entry, a built-in heuristic; at
 * MM_PREC_3XTF32, the 3xTF32 kernel (mm_run_precision). bias must be non-NULL exactly when
 * p->has_bias. Asynchronous on stream s. */
int mm_run(const mm_problem *p, const float *A, const float *B, const float *bias, float *C,
           cudaStream_t s, char *err, size_t errlen);
/* One version of the ladder (MM_TUNED behaves as mm_run). */
int mm_run_version(mm_version v, const mm_problem *p, const float *A, const float *B,
                   const float *bias, float *C, cudaStream_t s, char *err, size_t errlen);
/* The kernel of an explicit choice (the autotuner and the tests use this): c->kernel FP32 the tuned
 * kernel, MMA and WGMMA the 3xTF32 ones (WGMMA reads the node's pre-split operands as
 * mm_run_precision does; -1 when the path cannot run p: see mm_choice_check). */
int mm_run_choice(const mm_problem *p, const mm_choice *c, const float *A, const float *B,
                  const float *bias, float *C, cudaStream_t s, char *err, size_t errlen);

/* ---- scatter store (the GPU runtime's transposes executed by the matmul's store) ------------ */

/* Where the outputs of a product go instead of C + b*stride_c + m*n_cols + n: element (b, m, n)
 * (b: batch item, m: row, n: column) is written to C + off_b[b] + off_m[m] * mul[n] + off_n[n]
 * (elements). The GPU runtime builds the tables from a matmul output's reshapes, transposes,
 * splits and gathers (src/runtime/rt_scatter.c), so those nodes launch nothing. Device arrays of
 * batch, m, n and n entries. vec4 (16-byte stores where C is 16-byte aligned and n % 4 == 0):
 * 1 promises that in every aligned group of 4 columns off_n steps by 1 from a multiple of 4 and mul
 * is equal, and that every off_b and off_m[m] * mul[n] is a multiple of 4; 2 promises only that a
 * group whose first and last off_n are 3 apart with equal mul is such a run (the store checks
 * those two and the address per group: tables that mix layouts, as q, K^T and v of one product);
 * 0: 4-byte stores. */
typedef struct {
    const int64_t *off_b, *off_m, *mul, *off_n;
    int32_t vec4;
    /* Precision 3xtf32 only: the 3xtf32 decision for the product, made once ahead (the GPU runtime
     * makes it when it plans the store, so that every run, a captured graph included, runs what
     * the plan assumed). decided 1: mm_choose_precision(MM_PREC_3XTF32) gave `choice` for problem
     * for_p (m, n, k, batch and epilogue compared); 0: mm_run_scatter asks it at the call. */
    int32_t decided;
    mm_choice choice;
    mm_problem for_p;
} mm_scatter;

/* mm_run with the scatter store sc; p->stride_c is ignored (the tables place every output). The
 * store is the FP32 kernel's. At MM_PREC_FP32 the choice (tuning tables, first-use tuning) is that
 * of the same problem without scatter: the tuning key does not change. At MM_PREC_3XTF32 it runs
 * when, and only when, the 3xtf32 decision for p (sc->choice when sc->decided, else
 * mm_choose_precision now) is the FP32 kernel, with that decision's choice (what mm_run_precision
 * runs for p at 3xtf32 on that decision); -1 with the decision named otherwise (a tensor-core
 * product has no scatter store: its caller runs it without one). Never another precision. */
int mm_run_scatter(const mm_problem *p, const mm_scatter *sc, const float *A, const float *B, const float *bias,
                   float *C, cudaStream_t s, char *err, size_t errlen);
/* mm_run_choice with the scatter store (tests); FP32 kernel choices only. */
int mm_run_choice_scatter(const mm_problem *p, const mm_choice *c, const mm_scatter *sc, const float *A,
                          const float *B, const float *bias, float *C, cudaStream_t s, char *err, size_t errlen);

/* The scatter store of the matmul node being run, in up to two views of its product (a view
 * whose tables are NULL is not available): batched, the node's batch dims flattened (items of
 * m x n, the batch items in the output's row-major order), and rows, rows_nb items of rows_m x n
 * with A's rows packed and B broadcast (rows_nb 1: one tall product); the runtime gives rows only
 * for a packed A and a B without batch dims, and the matmul node prefers it. The GPU runtime sets
 * it around one node call, as mm_precision_set (NULL: none); the matmul node (ops_matmul.c) reads it. */
typedef struct {
    mm_scatter batched, rows;
    int64_t rows_nb, rows_m;
} mm_scatter_node;
void mm_scatter_node_set(const mm_scatter_node *sc);
const mm_scatter_node *mm_scatter_node_get(void);
/* The problem each call of the matmul node (ops_matmul.c) runs with a scatter store, for a node
 * whose A, B and output have the shapes given (ranks and dims): in the rows view (rows 1: rows_nb
 * items of rows_m rows, B broadcast) or the batched view (rows 0), with has_bias and act. What the
 * GPU runtime asks the 3xtf32 decision about when it plans a store. In ops_matmul.c. */
void mm_node_scatter_problem(int32_t a_rank, const int64_t *a_dims, int32_t b_rank, const int64_t *b_dims,
                             int32_t o_rank, const int64_t *o_dims, int32_t rows, int64_t rows_nb, int64_t rows_m,
                             int32_t has_bias, mm_act act, mm_problem *p);

/* The choice mm_run makes for p; *from_table is 1 when it came from a tuning table (or was tuned
 * just now: first-use tuning), 2 when from the environment variable
 * TASC_MM_CHOICE=CONFIG[:SPLIT[:GROUP]] (experiments), else 0 (the heuristic).
 * Tables (the table of mm_table_use when one was named, else these, merged in this order, a later
 * file's entry replacing one of the same key): the shipped tables (mm_table_shipped), the user
 * table (mm_table_user_path), the per-device cache
 * (mm_table_cache_path); entries of this device's key first, then name-only lines.
 * On a miss while first-use tuning is on (mm_autotune_set), the problem is tuned within about
 * MM_AUTOTUNE_BUDGET_S seconds (one line on stderr), stored in the per-device cache and used.
 * With TASC_MM_MISSES=FILE, every problem the tables do not hold and that is not tuned is appended
 * to FILE as a line "MxNxKxB EPILOGUE" (`tasc kernels tune --sizes` syntax): `sort -u FILE` gives
 * the list. */
int mm_choose(const mm_problem *p, mm_choice *c, int *from_table, char *err, size_t errlen);
/* The heuristic alone (the rule is written down in matmul_heuristic.cu). */
void mm_choose_heuristic(const mm_problem *p, mm_choice *c);
/* The choice mm_run_precision makes for p at prec (MM_PREC_FP32: mm_choose). At MM_PREC_3XTF32:
 * an entry of the tables under the 3xtf32 key (line "EPILOGUE@3xtf32", matmul_table.h) or a
 * first-use tuning of the 3xtf32 candidates (mm_autotune_set), *from_table 1; else the built-in
 * rule (*from_table 0): the wgmma path where its rule takes p, else the FP32 kernel where the
 * mma.sync heuristic would take its "small" configuration (it loses there: matmul_autotune.cu
 * says by how much), else mma.sync. The wgmma rule is asked for a call without pre-split
 * operands (a call with one may go to wgmma where this says otherwise). With the wgmma mode not
 * MM_WGMMA_AUTO (tests, probes) the tables are not read and nothing is tuned. */
int mm_choose_precision(mm_precision prec, const mm_problem *p, mm_choice *c, int *from_table, char *err,
                        size_t errlen);

/* ---- first-use tuning ------------------------------------------------------------------------ */

#define MM_AUTOTUNE_BUDGET_S 2.0
/* Whether mm_choose tunes a problem missing from the tables: 1 on, 0 off (the default). The GPU
 * runtime turns it on for its setup run only (no stream may be capturing while it is on); the
 * environment variable TASC_NO_AUTOTUNE=1 keeps it off whatever is asked (mm_autotune_refused). */
void mm_autotune_set(int on);
/* mm_autotune_refused (TASC_NO_AUTOTUNE): matmul_table.h */
typedef struct {
    int32_t tuned;        /* problems tuned on first use in this process */
    double tune_s;        /* the time that took */
    int32_t untuned;      /* distinct problems run by the heuristic because no table held them */
    int32_t failed;       /* problems whose tuning or cache update failed (heuristic used) */
} mm_autotune_stats;
void mm_autotune_get_stats(mm_autotune_stats *st);

/* ---- tuning table (matmul_table.h), for this build's configurations and this device ---------- */

/* A table of this build's configuration names. */
mm_table *mm_table_new(void);
/* 1 and *c if the table holds p for device (a device key, or a name for name-only lines), else 0.
 * us (may be NULL) gets the recorded time. */
int mm_table_lookup(const mm_table *t, const char *device, const mm_problem *p, mm_choice *c,
                    double *us);
void mm_table_put(mm_table *t, const char *device, const mm_problem *p, const mm_choice *c,
                  double us);
/* The same under the key of precision prec (mm_table_lookup, mm_table_put: MM_PREC_FP32). */
int mm_table_lookup_at(const mm_table *t, const char *device, mm_precision prec, const mm_problem *p, mm_choice *c,
                       double *us);
void mm_table_put_at(mm_table *t, const char *device, mm_precision prec, const mm_problem *p, const mm_choice *c,
                     double us);
/* TASC_TUNE_TABLE, else the per-device cache of this device (mm_table_cache_path); returns buf. */
const char *mm_table_default_path(char *buf, size_t len);
/* The table mm_run reads, exactly (loaded on first use; NULL: the runtime's tables, see mm_choose). */
void mm_table_use(const char *path);

/* The current device's name (cudaGetDeviceProperties). */
const char *mm_device_name(void);
/* The current device's key (matmul_table.h: name, compute capability, SMs, maximum SM clock). */
const char *mm_device_key(void);
/* 1 if a CUDA device is usable, else 0 (message in err). */
int mm_device_available(char *err, size_t errlen);

/* ---- checking helpers (device buffers) ------------------------------------------------------ */

/* n normal(0,1) floats from a counter-based generator: the same (seed, index) gives the same value. */
void mm_fill_normal(float *x, int64_t n, uint64_t seed, cudaStream_t s);
/* fp64 reference of problem p into ref (batch, m, n) packed, with bias and act in double. */
void mm_reference_f64(const mm_problem *p, const float *A, const float *B, const float *bias,
                      double *ref, cudaStream_t s);
/* ||c - ref||_F / ||ref||_F over n elements (c and ref packed); synchronizes s.
 * NaN when any c is NaN or Inf. ||ref|| = 0 gives ||c - ref||. */
double mm_rel_error(const float *c, const double *ref, int64_t n, cudaStream_t s);
/* x (rows, n) = act(x + bias) in place: the separate kernel cuBLAS needs for an epilogue. */
void mm_bias_act(float *x, const float *bias, int64_t rows, int64_t n, mm_act act, cudaStream_t s);

/* ---- autotuner and benchmark -------------------------------------------------------------- */

/* Times every legal (configuration, split-K, rasterization) for p on the current device (median
 * of reps L2-flushed runs each) and returns the fastest; progress lines go to log (may be NULL). */
int mm_tune_problem(const mm_problem *p, int32_t reps, mm_choice *best, double *best_us, FILE *log,
                    char *err, size_t errlen);
/* The same within about budget_s seconds (0: no bound): candidates in the heuristic's order (its
 * own choice first, then its shortlist by predicted time, then the rest), fewer timed runs each
 * on long problems, stopping when the time is spent. */
int mm_tune_problem_budget(const mm_problem *p, int32_t reps, double budget_s, mm_choice *best, double *best_us,
                           FILE *log, char *err, size_t errlen);
/* mm_tune_problem_budget at precision prec: at MM_PREC_3XTF32 the candidates are every FP32-accurate
 * kernel: the built-in rule's choice first, the wgmma configurations (where available), the
 * mma.sync configurations at several splits, and the FP32 kernel's table or heuristic choice and
 * (without a budget: every, with one: the first few of) its tuner's candidates. Operands are
 * split per call (a caller whose weight is pre-split times that: matmul_autotune.cu). */
int mm_tune_problem_precision(mm_precision prec, const mm_problem *p, int32_t reps, double budget_s, mm_choice *best,
                              double *best_us, FILE *log, char *err, size_t errlen);

typedef struct {
    const mm_problem *sizes;      /* the problems to time */
    int32_t n_sizes;
    const mm_version *versions;   /* our versions to time; cuBLAS is always timed beside them */
    int32_t n_versions;
    int32_t reps;                 /* timed runs per (version, size), >= 30 for reported numbers */
    int32_t warmup;
    double max_cell_s;            /* skip a slow rung whose predicted timing exceeds this */
    const mm_problem *fused;      /* sizes for the fused bias+relu comparison (may be 0 of them) */
    int32_t n_fused;
    const char *out_path;         /* results: markdown here, JSON beside it (.json); NULL: none */
    const char *command_line;     /* recorded in the results file */
    mm_precision precision;       /* what "tuned" and the fused table's "ours" run at (mm_run) */
} mm_bench_opts;

/* Validates, then times every (version, size) against cuBLAS, prints the tables to stdout and
 * writes the results files. Returns 0, 1 when some version failed validation (tables are still
 * written), -1 with a message for a bad option or output file. */
int mm_bench(const mm_bench_opts *o, char *err, size_t errlen);
/* The timing-order probe: the tuned kernel and cuBLAS on each size, timed after different
 * predecessor kernels and L2 flushes (memset or kernel), with the driver's and with the largest
 * shared-memory carveout; a table on stdout. 0, or -1 with a message for a bad size. */
int mm_bench_probe(const mm_problem *sizes, int32_t n_sizes, int32_t reps, char *err, size_t errlen);

/* ---- captured graphs ---------------------------------------------------------------------- */

/* The kernels' workspaces (split-K partials and counters, the wgmma split operands) are one per
 * process and move when they grow. A caller that captures launches into a CUDA graph holds them
 * (mm_workspace_hold) for as long as the graph may run: memory a workspace lets go of meanwhile
 * is freed only when the last hold ends (mm_workspace_unhold), so a second graph's setup cannot
 * free memory the first graph writes. Launches of different graphs must still be ordered (one
 * stream, or synchronized): they share the workspaces. */
void mm_workspace_hold(void);
void mm_workspace_unhold(void);
/* Lets go of the FP32 kernel's split-K workspace (the next split-K launch allocates what it
 * needs; freed now unless held): after tuning, which grows it to the largest candidate's need.
 * Synchronizes the device. */
void mm_workspace_release(void);
/* The FP32 kernel's split-K partial-sum workspace now, in bytes (0: none): what its launches since
 * the last release needed at most. For tests of the runtime's setup. */
size_t mm_workspace_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
