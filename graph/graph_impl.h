/* graph_impl.h: internals shared by graph.c (IR, builder), json.c (model files) and dot.c.
 *
 * The builder's core steps live here without the "node 'NAME': " prefixes, so that the public
 * builder can record them in g->err and the JSON loader can put its own context ("FILE: node
 * 'NAME': ...") in front. check_unique = 0 skips the linear name scans: the loader has already
 * checked uniqueness with a hash table. Messages written to msg are one line.
 */
#ifndef TASC_GRAPH_IMPL_H
#define TASC_GRAPH_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

#include "base.h"
#include "graph.h"

#if defined(__GNUC__)
#define GRAPH_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GRAPH_PRINTF(a, b)
#endif

/* TASC_MAX_ELEMENTS from the environment when it is a positive integer, else the default. */
int64_t graph_impl_default_max_elements(void);

/* The splitmix64 finaliser: a strong 64-bit mix. */
uint64_t graph_impl_mix64(uint64_t x);

/* A name must be non-empty and free of control characters (messages stay one line). */
int graph_impl_check_name(const char *name, char *msg, size_t len);
/* Rank in [0, OPS_MAX_DIMS], positive dims, element count within int64 and g->max_elements. */
int graph_impl_check_shape(const graph *g, const ops_shape *s, char *msg, size_t len);
/* Check a weight initialiser: known kind, finite values, std >= 0, FILE path and offset >= 0. */
int graph_impl_check_init(const graph_init *init, char *msg, size_t len);

/* Add a graph input (kind GRAPH_T_INPUT) or a weight (GRAPH_T_WEIGHT, init used). Returns the
 * tensor id, or -1 with the reason in msg (no prefix). */
int32_t graph_impl_add_leaf(graph *g, const char *name, graph_tensor_kind kind, graph_dtype dt,
                            const ops_shape *s, const graph_init *init, int check_unique,
                            char *msg, size_t len);
/* Add a node. name NULL: "<op>_<k>". out_names NULL: "<node>" / "<node>:<i>". p NULL: the op's
 * defaults. Writes the output tensor ids to out (room for OPS_MAX_OUTPUTS) and returns their
 * number, or -1 with the reason in msg (no prefix). */
int32_t graph_impl_add_node(graph *g, const char *name, ops_type op, const ops_params *p,
                            int32_t n_in, const int32_t *in, const char *const *out_names,
                            int check_unique, int32_t *out, char *msg, size_t len);
int graph_impl_mark_output(graph *g, int32_t t, char *msg, size_t len);

/* The JSON name of one declared parameter: the list name for PM_LIST, else the key's name. */
const char *graph_impl_param_name(const ops_param_desc *d);

/* Kahn's algorithm over n items: the predecessors of item v are pred[pstart[v] .. pstart[v+1])
 * (repeats allowed). Among ready items the lowest index goes first. Writes the items into order
 * and returns how many were emitted: fewer than n means a cycle. */
int32_t graph_impl_kahn(int32_t n, const int32_t *pstart, const int32_t *pred, int32_t *order);
/* After a short graph_impl_kahn: a cycle among the items not emitted, written to cyc in
 * data-flow order (cyc[0] feeds cyc[1] ... feeds cyc[len-1] feeds cyc[0]), starting at its
 * lowest item; returns len. */
int32_t graph_impl_find_cycle(int32_t n, const int32_t *pstart, const int32_t *pred,
                              const int32_t *order, int32_t n_emitted, int32_t *cyc);
/* "a -> b -> c -> a" from item names, truncated to fit buf. */
void graph_impl_cycle_str(const char *const *names, const int32_t *cyc, int32_t len, char *buf, size_t buflen);

/* A set of names over a fixed pool (no per-item allocation, pointers stay valid). Keys are
 * borrowed: they must outlive the set. a and b are free for the user (what the name denotes). */
typedef struct graph_name_ent {
    const char *key;
    int32_t a, b;
    UT_hash_handle hh;
} graph_name_ent;
typedef struct {
    graph_name_ent *head; /* uthash head */
    graph_name_ent *pool; /* [cap] */
    size_t n, cap;
} graph_name_set;
void graph_nameset_init(graph_name_set *s, size_t cap);
void graph_nameset_free(graph_name_set *s);
/* NULL if absent. */
graph_name_ent *graph_nameset_find(const graph_name_set *s, const char *key);
/* Adds key; returns the new entry, or NULL if the key is already present (*dup set to it). */
graph_name_ent *graph_nameset_add(graph_name_set *s, const char *key, graph_name_ent **dup);

#endif
