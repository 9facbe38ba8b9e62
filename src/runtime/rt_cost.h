/* rt_cost.h: the measured cost model -- the GPU time of one node (op, parameters, input shapes)
 * timed through the runtime (a one-node graph, every input a graph input, the node captured
 * several times into one CUDA graph, median of replays after warm-up) and cached in a text file
 * keyed by device, so each configuration is timed once per device.
 *
 * Cache file: one line per entry, "DEVICE<TAB>KEY<TAB>MICROSECONDS", '#' lines are comments;
 * written sorted by (device, key) through a temporary and a rename, so the same entries give the
 * same bytes. KEY is rt_cost_key's text: "op p1=v1,p2=v2 (shape);(shape)" with every parameter the
 * op declares. Nodes without inputs (constants) cost 0: the runtime computes them once at setup.
 * Measuring creates and frees runtime contexts: see rt.h about other contexts' captured graphs.
 * Not thread-safe.
 */
#ifndef TASC_RT_COST_H
#define TASC_RT_COST_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_cost_cache rt_cost_cache;

rt_cost_cache *rt_cost_cache_new(void); /* caller owns; rt_cost_cache_free */
void rt_cost_cache_free(rt_cost_cache *c);
/* Adds the entries of a cache file (later lines replace earlier ones with the same key). A
 * missing file is not an error when missing_ok. -1 with "PATH:LINE: reason" for a bad line. */
int rt_cost_cache_load(rt_cost_cache *c, const char *path, int missing_ok, char *err, size_t errlen);
/* Writes every entry sorted, creating the parent folder; -1 with a message on failure. */
int rt_cost_cache_save(const rt_cost_cache *c, const char *path, char *err, size_t errlen);
int32_t rt_cost_cache_size(const rt_cost_cache *c);
/* TASC_COST_CACHE, else $HOME/.cache/tasc/cost_measured.txt; returns buf. */
const char *rt_cost_default_path(char *buf, size_t len);

/* The key text of a node configuration into buf; -1 if it does not fit. */
int rt_cost_key(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, char *buf, size_t len);
/* 1 and *us if (device, key) is cached, else 0. */
int rt_cost_lookup(const rt_cost_cache *c, const char *device, const char *key, double *us);
void rt_cost_put(rt_cost_cache *c, const char *device, const char *key, double us);

/* Microseconds of one run of op(p) on inputs of these shapes on the current GPU: from the cache,
 * else measured and added to it (c may be NULL: always measured). Gather's ids input is drawn as
 * valid ids. -1 with a message when the node is invalid or the GPU cannot run it. */
int rt_cost_measure(rt_cost_cache *c, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
                    double *us, char *err, size_t errlen);

/* The measured model as the optimizer's cost model (src/optimizer/cost.h; rt_cost_model.c): each
 * node's time from rt_cost_measure, through the cache of path (NULL: rt_cost_default_path; a
 * missing file is fine), saved back to path when the model is freed (cost_model_free). A failed
 * save is passed to report(message, report_arg) (report may be NULL). Registers the GPU ops.
 * Caller owns. NULL with a message in err: no GPU, or a bad cache file. */
typedef void (*rt_cost_model_report)(const char *message, void *arg);
struct cost_model *rt_cost_model_new(const char *path, rt_cost_model_report report, void *report_arg, char *err,
                                     size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
