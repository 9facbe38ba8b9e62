/* tasc.h: the public C API of tasc, a TASO-style graph substitution optimizer -- the one header a
 * program needs (link with `pkg-config --cflags --libs tasc`, or CMake's tasc::tasc).
 *
 * Objects are opaque handles: a model (tasc_model), a model under construction (tasc_builder), a
 * rule set (tasc_rules) and an optimization result (tasc_opt_result). Each is created by one call,
 * owned by the caller and freed with its _free function (NULL is accepted and ignored). Threads:
 * a function taking a const handle only reads it, so several threads may run such calls on one
 * model or rule set at once (tasc_run, tasc_optimize, saving, ...); a builder is used by one
 * thread at a time, and nothing is freed while in use. Strings and arrays passed in are copied or
 * only read during the call; pointers returned into a handle ("borrowed") stay valid until that
 * handle is freed.
 *
 * Errors: every function that can fail returns a tasc_status (TASC_OK, or a code equal to the
 * `tasc` CLI's exit code for the same failure) and leaves a one-line message, readable with
 * tasc_last_error() on the same thread until its next failing call. Outputs are written only on
 * success. No function aborts on user input.
 */
#ifndef TASC_H
#define TASC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; tasc_version() gives the library's. The build checks these against
 * the project version of CMakeLists.txt. */
#define TASC_VERSION_MAJOR 0
#define TASC_VERSION_MINOR 1
#define TASC_VERSION_PATCH 0

/* Exported from libtasc.so (the library itself is built with hidden visibility). */
#if defined(__GNUC__)
#define TASC_API __attribute__((visibility("default")))
#else
#define TASC_API
#endif

/* --- status and messages --------------------------------------------------------------------- */

typedef enum {
    TASC_OK = 0,
    TASC_ERR_INPUT = 1,    /* bad input: a bad model, rule or data file, bad shapes, a failed check */
    TASC_ERR_USAGE = 2,    /* bad usage: an unknown option value, an argument out of range, NULL */
    TASC_ERR_RESOURCE = 3, /* a missing resource: no CUDA in this build, no GPU, no axiom or rule file */
    TASC_ERR_INTERNAL = 4  /* an internal error */
} tasc_status;

/* The message of the last failed call on this thread ("" if none): a successful call leaves it,
 * the next failing call on this thread replaces it. */
TASC_API const char *tasc_last_error(void);
/* "ok", "bad input", "bad usage", "missing resource", "internal error" (static storage). */
TASC_API const char *tasc_status_name(tasc_status s);
/* The library's version, "MAJOR.MINOR.PATCH" (static storage). */
TASC_API const char *tasc_version(void);
/* 1 if this library was built with the CUDA runtime (the GPU functions can work), else 0. */
TASC_API int tasc_has_cuda(void);
/* Frees a buffer returned by tasc (text of tasc_model_to_dot, tasc_model_to_json). */
TASC_API void tasc_free(void *p);

/* --- models ------------------------------------------------------------------------------------ */

typedef struct tasc_model tasc_model;

#define TASC_MAX_RANK 8

typedef enum { TASC_FLOAT32 = 0, TASC_INT64 = 1 } tasc_dtype; /* int64 values are held as exact floats */

/* A graph input or output. */
typedef struct {
    const char *name;            /* borrowed from the model */
    tasc_dtype dtype;
    int32_t rank;
    int64_t dims[TASC_MAX_RANK]; /* dims[i] for i < rank */
    int64_t numel;               /* product of the dims (1 for a scalar) */
} tasc_tensor_info;

/* How a model file is read; tasc_load_opts_default gives the defaults (what the CLI does without
 * options). The options are those of `tasc CMD --random-weights --weights-seed S --dim N=V
 * --allow-outside-paths`. */
typedef struct {
    int random_weights;            /* .onnx: seeded random values for weights whose data is missing */
    uint64_t weights_seed;         /* .onnx: mixed into those values' seeds */
    int32_t n_dims;                /* .onnx: values of symbolic input dimensions, by name */
    const char *const *dim_names;  /* [n_dims] */
    const int64_t *dim_values;     /* [n_dims], positive */
    int64_t max_elements;          /* per-tensor element limit; 0: $TASC_MAX_ELEMENTS or 2^31 */
    int allow_outside_paths;       /* 1: weight files and external data may lie outside the model's
                                      folder (refused by default, as `--allow-outside-paths`) */
} tasc_load_opts;
TASC_API void tasc_load_opts_default(tasc_load_opts *o);

/* Load a JSON model or (path ending in .onnx) an ONNX model; o NULL: defaults. */
TASC_API tasc_status tasc_model_load(const char *path, const tasc_load_opts *o, tasc_model **out);
/* A JSON model from text; where names it in messages, and relative weight paths are resolved
 * against the current folder. */
TASC_API tasc_status tasc_model_from_json(const char *text, const char *where, tasc_model **out);
TASC_API void tasc_model_free(tasc_model *m);
/* An independent copy (weight values are shared, read-only). */
TASC_API tasc_status tasc_model_clone(const tasc_model *m, tasc_model **out);

/* Save as a JSON model; weights held in memory go to the sidecar PATH's .weights.bin. Both files
 * are written through temporaries and renamed: nothing is left at path on failure. */
TASC_API tasc_status tasc_model_save(const tasc_model *m, const char *path);
/* Export as an ONNX model (opset 17), written through a temporary and a rename. */
TASC_API tasc_status tasc_model_export_onnx(const tasc_model *m, const char *path);
/* The JSON text (*text: free with tasc_free); fails for a model with weights held in memory
 * (imported or optimized ones), which only tasc_model_save can write. */
TASC_API tasc_status tasc_model_to_json(const tasc_model *m, char **text);
/* Graphviz DOT (*text: free with tasc_free); nodes made by a rewrite are filled. */
TASC_API tasc_status tasc_model_to_dot(const tasc_model *m, char **text);

/* The model's name (borrowed). */
TASC_API const char *tasc_model_name(const tasc_model *m);
TASC_API int32_t tasc_model_num_inputs(const tasc_model *m);
TASC_API int32_t tasc_model_num_outputs(const tasc_model *m);
TASC_API tasc_status tasc_model_input(const tasc_model *m, int32_t i, tasc_tensor_info *info);
TASC_API tasc_status tasc_model_output(const tasc_model *m, int32_t j, tasc_tensor_info *info);

/* What `tasc info` prints. */
typedef struct {
    int32_t nodes, inputs, outputs, weights;
    double flops;            /* a multiply-add counts 2; bias adds and activations 1 per element */
    double multiply_adds;    /* of conv2d and matmul (the figure papers publish) */
    int64_t params;          /* elements of all weights */
    int64_t param_bytes;     /* float32 bytes of all weights */
    int64_t activation_bytes;/* float32 bytes of all intermediate tensors */
} tasc_model_stats;
TASC_API tasc_status tasc_model_stats_get(const tasc_model *m, tasc_model_stats *st);
/* Operator types: their number, and the name of type k < tasc_op_count() (static storage). */
TASC_API int32_t tasc_op_count(void);
TASC_API const char *tasc_op_name(int32_t k);
/* Nodes of op type k in the model (0 for k out of range). */
TASC_API int32_t tasc_model_op_nodes(const tasc_model *m, int32_t k);

/* --- building a model -------------------------------------------------------------------------- */
/* Tensors are named; a node's outputs are called NODE (one output) or NODE:i (several). Every
 * call checks what it adds (names, shapes, an op's inputs and parameters through its shape
 * inference) and fails with the reason; after a failure the builder refuses every further call
 * except tasc_builder_free. tasc_builder_finish validates the whole graph. */
typedef struct tasc_builder tasc_builder;

TASC_API tasc_status tasc_builder_new(const char *name, tasc_builder **out);
TASC_API void tasc_builder_free(tasc_builder *b);
TASC_API tasc_status tasc_builder_input(tasc_builder *b, const char *name, tasc_dtype dtype, int32_t rank,
                                        const int64_t *dims);
/* A weight with the given values (numel floats, row-major; copied). */
TASC_API tasc_status tasc_builder_weight(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                         const float *values);
/* A weight of seeded normal(mean, std) values (the JSON format's "random" init). */
TASC_API tasc_status tasc_builder_weight_random(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                                uint64_t seed, float mean, float std);
/* A weight with every element equal to value. */
TASC_API tasc_status tasc_builder_weight_const(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                               float value);
/* A node of op (a name from tasc_op_name) over the named input tensors, with n_params parameters
 * by name, values as text: integers, floats, an activation or pad mode by name ("relu", "same"),
 * a list as "1,0,2" (perm, shape, sizes); the others take the op's defaults (the JSON format's
 * rules). name NULL: "<op>_<k>". */
TASC_API tasc_status tasc_builder_node(tasc_builder *b, const char *name, const char *op, int32_t n_inputs,
                                       const char *const *inputs, int32_t n_params, const char *const *param_names,
                                       const char *const *param_values);
/* Mark a tensor as a graph output (in order). */
TASC_API tasc_status tasc_builder_output(tasc_builder *b, const char *tensor);
/* Validate and make the model; the builder is freed whether or not this succeeds. */
TASC_API tasc_status tasc_builder_finish(tasc_builder *b, tasc_model **out);

/* --- running on the CPU executor ----------------------------------------------------------------- */

/* A caller-owned buffer: rank and dims must equal the model's input or output (checked). */
typedef struct {
    float *data;                 /* numel floats, row-major; inputs are only read */
    int32_t rank;
    int64_t dims[TASC_MAX_RANK];
} tasc_buffer;

typedef struct {
    uint64_t seed;      /* inputs not given are generated as `tasc run --seed S` does (default 0) */
    int32_t threads;    /* OpenMP threads of the CPU kernels; 0: OpenMP's choice */
} tasc_run_opts;
TASC_API void tasc_run_opts_default(tasc_run_opts *o);

/* Run m on the CPU reference executor. inputs: n_inputs == tasc_model_num_inputs(m) buffers (an
 * entry whose data is NULL, or inputs NULL with n_inputs 0: generated from the seed); int64 inputs
 * hold exact integers as floats. outputs: n_outputs == tasc_model_num_outputs(m) buffers the results
 * are written to. o NULL: defaults. Results do not depend on the thread count. */
TASC_API tasc_status tasc_run(const tasc_model *m, const tasc_buffer *inputs, int32_t n_inputs,
                              const tasc_buffer *outputs, int32_t n_outputs, const tasc_run_opts *o);

/* --- rule sets: load, generate, verify ----------------------------------------------------------- */

typedef struct tasc_rules tasc_rules;

/* A rule file (format: rules/README.md), validated. */
TASC_API tasc_status tasc_rules_load(const char *path, tasc_rules **out);
TASC_API tasc_status tasc_rules_save(const tasc_rules *r, const char *path);
TASC_API void tasc_rules_free(tasc_rules *r);
TASC_API int32_t tasc_rules_count(const tasc_rules *r);
/* The shipped, Z3-verified 4-op rule set's path into buf: $TASC_RULES, else rules/verified-4.json
 * of the source tree the library was built from. TASC_ERR_RESOURCE when it does not exist. */
TASC_API tasc_status tasc_default_rules_path(char *buf, size_t len);

/* `tasc generate`: enumerate graphs of up to max_ops ops, fingerprint, prune. */
typedef struct {
    int32_t max_ops;     /* 1..4 (default 3) */
    const char *ops;     /* comma-separated op names; NULL: every generation op */
    int32_t threads;     /* 0: all cores */
} tasc_generate_opts;
typedef struct {
    uint64_t graphs, fingerprints, pairs, rules;
    double seconds;
} tasc_generate_stats;
TASC_API void tasc_generate_opts_default(tasc_generate_opts *o);
/* st may be NULL. */
TASC_API tasc_status tasc_rules_generate(const tasc_generate_opts *o, tasc_rules **out, tasc_generate_stats *st);

/* `tasc verify`: prove candidates with Z3 from the operator axioms. */
typedef struct {
    double timeout_s;     /* per query (default 10) */
    int32_t threads;      /* 0: all cores */
    int numeric_check;    /* 1 (default): refute on random values before asking Z3 */
    const char *axioms;   /* NULL: $TASC_AXIOMS, else verifier/axioms.smt2 (the current folder's, then
                             the source tree's) */
    const char *cache;    /* proof cache file; NULL: none */
} tasc_verify_opts;
typedef struct {
    int64_t candidates, proved, refuted, unknown, cached;
    double seconds;
} tasc_verify_stats;
TASC_API void tasc_verify_opts_default(tasc_verify_opts *o);
/* *proved gets the proved rules; *quarantine (may be NULL) the others with the reason; st may be NULL. */
TASC_API tasc_status tasc_rules_verify(const tasc_rules *candidates, const tasc_verify_opts *o, tasc_rules **proved,
                                       tasc_rules **quarantine, tasc_verify_stats *st);

/* --- optimizing ---------------------------------------------------------------------------------- */

typedef struct {
    const tasc_rules *rules;   /* NULL: built-in rewrites only (`--rules none`) */
    const char *builtins;      /* built-in rewrites: "all" (NULL: the same), or "minimal": only what is
                                  not a substitution, the rest left to the rules (`--builtins`) */
    const char *search;        /* "backtrack", TASO's cost-based backtracking (NULL: the same) */
    double alpha;              /* keep graphs costing up to alpha times the best, 1..10 (1.05) */
    int64_t budget;            /* graphs expanded at most (1000) */
    double time_limit_s;       /* wall-clock limit of the search; 0: none (8) */
    const char *cost;          /* "analytic" (NULL: the same) or "measured" (CUDA builds, on a GPU) */
    int32_t n_cost_set;        /* analytic constants as "NAME=V" (`tasc optimize --cost-set`) */
    const char *const *cost_set;
    int check;                 /* 1 (default): check the result against m on the CPU executor */
    int32_t check_seeds;       /* 1..100 (3) */
    double check_tol;          /* largest relative L2 error accepted (1e-4) */
    int progress;              /* 1: progress lines on stderr (0) */
} tasc_opt_opts;
TASC_API void tasc_opt_opts_default(tasc_opt_opts *o);

typedef struct tasc_opt_result tasc_opt_result;
typedef struct {
    double cost_before_us, cost_after_us; /* predicted by the cost model */
    int32_t nodes_before, nodes_after;
    int64_t rewrites;          /* rewrites applied, greedy ones and rules, in all */
    int64_t expanded, candidates, queued;
    int time_limited;          /* the time limit ended the search (the result may vary) */
    int32_t folded;            /* tensors folded into weights */
    double search_s;           /* the search's own wall time */
    double optimize_s;         /* the whole optimization (rewrites, folding, search) */
    double check_s;            /* the numerical check (0 when off) */
    double check_error;        /* largest relative L2 error of any output over the seeds (-1: off) */
} tasc_opt_stats;

/* Optimize m (built-in rewrites, the search with o->rules, constant folding), then, with o->check,
 * compare the result with m: TASC_ERR_INPUT when it differs beyond o->check_tol. o NULL: defaults. */
TASC_API tasc_status tasc_optimize(const tasc_model *m, const tasc_opt_opts *o, tasc_opt_result **out);
TASC_API void tasc_opt_result_free(tasc_opt_result *r);
TASC_API tasc_status tasc_opt_result_stats(const tasc_opt_result *r, tasc_opt_stats *st);
/* The optimized model, borrowed: valid until r is freed (tasc_model_clone keeps a copy). */
TASC_API const tasc_model *tasc_opt_result_model(const tasc_opt_result *r);
/* The rewrites applied, by name, most used first: their number, and entry i (name borrowed from
 * r; reverse 1: a rule applied from its dst side to its src side). */
TASC_API int32_t tasc_opt_result_num_rewrites(const tasc_opt_result *r);
TASC_API tasc_status tasc_opt_result_rewrite(const tasc_opt_result *r, int32_t i, const char **name, int *reverse,
                                             int32_t *count);

/* --- GPU (CUDA builds) ----------------------------------------------------------------------------
 * Without CUDA in the build, or without a GPU, these return TASC_ERR_RESOURCE with the reason.
 * As `tasc bench`, a matmul shape no tuning table holds for this GPU is tuned on first use (about
 * 2 s a shape, a line on stderr, kept in the per-device cache ~/.cache/tasc or $TASC_CACHE_DIR);
 * TASC_NO_AUTOTUNE=1 in the environment refuses it (bench/runtime/README.md). */

/* TASC_OK if a CUDA device is usable. */
TASC_API tasc_status tasc_gpu_available(void);
/* tasc_run on the GPU runtime (one CUDA graph replay; FP32, TF32 off). */
TASC_API tasc_status tasc_gpu_run(const tasc_model *m, const tasc_buffer *inputs, int32_t n_inputs,
                                  const tasc_buffer *outputs, int32_t n_outputs);
typedef struct {
    int32_t warmup;    /* untimed runs first (20) */
    int32_t reps;      /* timed runs, each alone with CUDA events (200) */
    uint64_t seed;     /* the inputs, as tasc_run generates them (0) */
    int no_graph;      /* 1: launch node by node instead of one CUDA graph replay */
} tasc_bench_opts;
typedef struct {
    double median_ms, min_ms, p90_ms, mean_ms;
    int64_t device_bytes;   /* what the runtime holds on the device */
    int32_t nodes_run;      /* kernels per run */
    int cuda_graph;         /* 1: runs replayed one CUDA graph */
    char device[128];       /* the GPU's name */
} tasc_bench_stats;
TASC_API void tasc_bench_opts_default(tasc_bench_opts *o);
/* `tasc bench MODEL`'s latency of m; o NULL: defaults. */
TASC_API tasc_status tasc_gpu_bench(const tasc_model *m, const tasc_bench_opts *o, tasc_bench_stats *st);

#ifdef __cplusplus
}
#endif

#endif
