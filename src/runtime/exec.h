/* exec.h: the CPU reference executor, the oracle every other executor and every rewrite is
 * checked against; plus .npy reading and writing.
 *
 * exec_cpu_run evaluates a valid graph node by node in topological order with the op table's
 * CPU references. Results are deterministic and independent of the thread count. Buffers of
 * intermediates are freed after their last use.
 */
#ifndef TASC_EXEC_H
#define TASC_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* Inputs: in[i] holds graph input i (numel of its shape floats), or NULL to draw it from the
 * seeded normal generator (seed + i); int64 inputs (ids) are drawn instead as uniform integers in
 * [0, min(100, V)) from the same seed, V the rows of the smallest table a gather reads them into.
 * Given ids must be integers, and those a gather reads must lie in [0, V). Outputs: out[j] receives a malloc'd buffer per graph
 * output (caller frees each). Returns 0, or -1 with a one-line message. */
int exec_cpu_run(const graph *g, const float *const *in, uint64_t seed, float **out,
                 char *err, size_t errlen);

/* What one run allocated (float buffers the executor owns; caller-given inputs not counted). */
typedef struct {
    int64_t peak_bytes;    /* most bytes held at once */
    int64_t total_bytes;   /* bytes allocated over the run (what keeping every tensor would hold) */
    int32_t nodes_run;     /* nodes evaluated: those whose results reach a graph output */
} exec_stats;
/* exec_cpu_run, also reporting allocation statistics into st (may be NULL). */
int exec_cpu_run_ex(const graph *g, const float *const *in, uint64_t seed, float **out,
                    exec_stats *st, char *err, size_t errlen);

/* V for ids in tensor t: the smallest table size (dims[0]) of any live gather (live[n] != 0) that
 * reads t as its ids; INT64_MAX if none. Shared by the CPU executor and the GPU runtime (rt.c). */
int64_t exec_id_bound(const graph *g, const uint8_t *live, int32_t t);

/* The process-wide cache of RANDOM weight values that runs share (see exec.c): its size in bytes,
 * and freeing it (only while no run is in progress). */
int64_t exec_cache_size(void);
void exec_cache_clear(void);

/* Relative L2 error ||a-b|| / max(||b||, tiny) and max |a-b|; nan_count counts NaN/Inf in a. */
typedef struct { double rel_l2, max_abs; int64_t nan_count; } exec_diff;
exec_diff exec_compare(const float *a, const float *b, int64_t n);

/* .npy files (version 1.0/2.0, little-endian, C order): float32, float64, int64, int32 are read
 * into float32. Returns a malloc'd buffer (caller frees) and its shape, or NULL with a message. */
float *npy_read(const char *path, ops_shape *shape, char *err, size_t errlen);
/* Write float32 .npy through a temporary file and rename. */
int npy_write(const char *path, const ops_shape *shape, const float *data, char *err, size_t errlen);

/* Numerical check: run a and b (same inputs and outputs) on the CPU executor with the inputs of
 * seeds 0 .. n_seeds-1; worst[i] (room for a->n_outputs) receives, per output, the largest
 * relative L2 error and max abs error of b against a over the seeds, and the count of values that
 * are NaN/Inf in one graph and finite in the other. NaN-consistent: where a is NaN/Inf (inputs
 * outside its domain), b must be NaN/Inf too, and those values are left out of the error.
 * Returns 0 when every output is within tol and consistent, 1 when not (err then names an output
 * with inconsistent NaN/Inf values, or is empty), EXEC_CHECK_BAD_ORIGINAL with the runner's
 * message when a itself cannot be run (a weight file unreadable: the model's fault), -1 with a
 * message when b cannot be run or the interfaces differ. */
#define EXEC_CHECK_BAD_ORIGINAL (-2)
int exec_check(const graph *a, const graph *b, int32_t n_seeds, double tol, exec_diff *worst, char *err,
                 size_t errlen);

#endif
