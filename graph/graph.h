/* graph.h: the graph IR (tensors and nodes), the C builder API, JSON models, DOT export.
 *
 * A graph owns all its tensors and nodes; ids are indices into g->tensors / g->nodes and stay
 * valid until graph_free (graph_compact renumbers, and says so). Every tensor has exactly one
 * producer: a graph input, a weight, or one output of one node. Builder calls validate as they
 * go: on the first error they set g->err and return -1, and every later builder call returns -1
 * too (sticky), so a model builder may check once at the end with graph_ok().
 * Strings passed in are copied; strings and arrays inside the graph belong to it.
 */
#ifndef TASC_GRAPH_H
#define TASC_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "ops.h"

#define GRAPH_ERR_LEN 512
#define GRAPH_DEFAULT_MAX_ELEMENTS (INT64_C(1) << 31) /* per tensor; override with TASC_MAX_ELEMENTS */

typedef enum { GRAPH_T_INPUT, GRAPH_T_WEIGHT, GRAPH_T_INTER, GRAPH_T_COUNT } graph_tensor_kind;
typedef enum { GRAPH_DT_F32, GRAPH_DT_I64, GRAPH_DT_COUNT } graph_dtype; /* i64 values are held as exact floats (|v| < 2^24) */
typedef enum { GRAPH_INIT_RANDOM, GRAPH_INIT_CONSTANT, GRAPH_INIT_FILE, GRAPH_INIT_DATA, GRAPH_INIT_COUNT } graph_init_kind;

/* Weight values held in memory: an immutable, reference-counted array of float32 (opaque; see
 * "weights" below). Graphs share blobs: graph_clone takes a reference instead of copying, so
 * clones made during a search cost nothing per weight. References are counted atomically, so
 * blobs may be shared by graphs on different threads; the values never change after creation. */
typedef struct graph_blob graph_blob;

/* How a weight's values are made. */
typedef struct {
    graph_init_kind kind;
    uint64_t seed;       /* RANDOM: normal(mean, std) from a counter-based generator, so values
                            depend only on (seed, element index) */
    float mean, std;     /* RANDOM */
    float value;         /* CONSTANT */
    char *path;          /* FILE: raw little-endian float32 in row-major order; relative paths are
                            resolved against the model file's folder; owned by the graph */
    int64_t offset;      /* FILE: byte offset of the first element */
    graph_blob *blob;    /* DATA: the values, row-major, numel equal to the weight's; the graph
                            holds one reference (graph_weight takes its own, graph_free drops it) */
} graph_init;

typedef struct {
    char *name;
    ops_shape shape;
    graph_tensor_kind kind;
    graph_dtype dtype;
    int32_t producer;    /* node id, -1 for inputs and weights */
    int32_t out_index;   /* which output of the producer */
    graph_init init;     /* weights only */
} graph_tensor;

typedef struct {
    char *name;
    ops_type op;
    ops_params p;
    int32_t n_in, n_out;
    int32_t in[OPS_MAX_INPUTS];   /* tensor ids */
    int32_t out[OPS_MAX_OUTPUTS]; /* tensor ids */
    int32_t tag;                  /* free for passes; 1 = made by a rewrite (tasc dot marks these) */
} graph_node;

typedef struct graph {
    char *name;
    graph_tensor *tensors; int32_t n_tensors, cap_tensors;
    graph_node *nodes;     int32_t n_nodes, cap_nodes;
    int32_t *inputs;  int32_t n_inputs;  /* tensor ids of graph inputs, in declaration order */
    int32_t *weights; int32_t n_weights; /* tensor ids of weights, in declaration order */
    int32_t *outputs; int32_t n_outputs; /* tensor ids of graph outputs, in order */
    int64_t max_elements;                /* per-tensor element limit: bigger shapes are refused */
    char *base_dir;                      /* folder that relative weight paths are resolved against */
    int allow_outside_paths;             /* 0: weight files must lie inside base_dir (graph_path_resolve);
                                            1: anywhere (the loaders' allow_outside_paths option) */
    struct graph_names *names;           /* the builder's name index (graph.c), NULL until needed */
    char err[GRAPH_ERR_LEN];             /* first error, "" if none */
} graph;

/* --- lifetime ------------------------------------------------------------------------------ */
graph *graph_new(const char *name);      /* caller owns; graph_free */
void graph_free(graph *g);
graph *graph_clone(const graph *g);      /* deep copy, except that DATA blobs are shared; caller owns */
int graph_ok(const graph *g);            /* 1 if no error was recorded */
const char *graph_error(const graph *g);

/* --- building ------------------------------------------------------------------------------ */
int32_t graph_input(graph *g, const char *name, int32_t rank, const int64_t *dims);
int32_t graph_input_typed(graph *g, const char *name, graph_dtype dt, int32_t rank, const int64_t *dims);
int32_t graph_weight(graph *g, const char *name, int32_t rank, const int64_t *dims, graph_init init);
/* A random-normal weight, mean 0, with std = sqrt(2 / fan_in) (He), fan_in = numel / dims[0]
 * for rank >= 2, else std 1; the seed is derived from the name so values do not depend on order. */
int32_t graph_weight_he(graph *g, const char *name, int32_t rank, const int64_t *dims);
/* The same with the fan-in given: the number of products summed per output by the node that reads
 * the weight (K of a matmul's (K,N) operand); fan_in <= 0 gives std 1. */
int32_t graph_weight_he_fan_in(graph *g, const char *name, int32_t rank, const int64_t *dims, int64_t fan_in);
int32_t graph_weight_const(graph *g, const char *name, int32_t rank, const int64_t *dims, float value);
/* A DATA weight holding blob's values (graph_blob_numel(blob) must equal the shape's element
 * count). The graph takes its own reference: the caller keeps (and eventually drops) its own.
 * graph_weight with a DATA init does the same. */
int32_t graph_weight_data(graph *g, const char *name, int32_t rank, const int64_t *dims, graph_blob *blob);
/* Add a node: checks the input count, parameters and shapes (ops_infer) and creates its output
 * tensors; writes their ids to out (room for OPS_MAX_OUTPUTS). name NULL: "<op>_<k>".
 * Returns the number of outputs, or -1 with g->err set. */
int32_t graph_add(graph *g, const char *name, ops_type op, const ops_params *p,
                  int32_t n_in, const int32_t *in, int32_t *out);
int graph_mark_output(graph *g, int32_t t);

/* TASO-style shorthands; each returns the output tensor id or -1. Parameters not named take the
 * op table's defaults. */
int32_t graph_conv2d(graph *g, int32_t x, int32_t w, int32_t stride_h, int32_t stride_w,
                     ops_padmode pad, ops_act act);
int32_t graph_conv2d_ex(graph *g, const char *name, int32_t x, int32_t w, int32_t bias,
                        int32_t stride_h, int32_t stride_w, const int32_t pads[4] /* t,l,b,r */,
                        int32_t groups, ops_act act); /* bias -1: none; explicit padding */
int32_t graph_matmul(graph *g, int32_t a, int32_t b, ops_act act);
int32_t graph_ewadd(graph *g, int32_t x, int32_t y);
int32_t graph_ewmul(graph *g, int32_t x, int32_t y);
int32_t graph_unary(graph *g, ops_type op, int32_t x); /* relu, sigmoid, tanh, gelu, erf, sqrt */
int32_t graph_transpose(graph *g, int32_t x, int32_t rank, const int32_t *perm);
int32_t graph_concat(graph *g, int32_t axis, int32_t n, const int32_t *xs);
int32_t graph_split(graph *g, int32_t x, int32_t axis, int32_t parts, const int64_t *sizes /* NULL: equal */,
                    int32_t *outs);
int32_t graph_pool2d(graph *g, ops_type op /* AVGPOOL2D | MAXPOOL2D */, int32_t x, int32_t kh, int32_t kw,
                     int32_t stride_h, int32_t stride_w, ops_padmode pad, const int32_t pads[4] /* NULL unless explicit */);
int32_t graph_global_avgpool(graph *g, int32_t x);
int32_t graph_batchnorm(graph *g, int32_t x, int32_t scale, int32_t bias, int32_t mean, int32_t var, float eps);
int32_t graph_reshape(graph *g, int32_t x, int32_t rank, const int64_t *dims);
int32_t graph_softmax(graph *g, int32_t x, int32_t axis);
int32_t graph_layernorm(graph *g, int32_t x, int32_t gamma, int32_t beta, int32_t axis, float eps);

/* --- structure ----------------------------------------------------------------------------- */
/* Node ids in a topological order (producers first) into order[n_nodes]; stable: among ready
 * nodes the lowest id first. Returns 0, or -1 with a message naming a node on a cycle. */
int graph_topo_order(const graph *g, int32_t *order, char *err, size_t errlen);
/* Full validation: names unique, every tensor produced once, no cycle, at least one node and
 * one output, every node re-checked by ops_infer against its recorded shapes. */
int graph_validate(const graph *g, char *err, size_t errlen);
/* Canonical structural hash: equal for graphs that differ only in node order, tensor or node
 * names, or declaration order of weights; inputs are identified by position, weights by shape
 * and initializer (DATA weights by their values' content hash, so equal values in different
 * blobs hash equal). Only nodes reachable from the outputs count. */
uint64_t graph_hash(const graph *g);
/* Remove nodes whose outputs reach no graph output, and tensors nobody uses; renumbers ids. */
void graph_compact(graph *g);
int32_t graph_find_tensor(const graph *g, const char *name); /* -1 if none */
/* Rename tensor t (name copied); -1 with g->err (sticky) if the name is invalid or another
 * tensor's. Renaming through here keeps the builder's name index right. */
int graph_rename_tensor(graph *g, int32_t t, const char *name);

/* --- weights ------------------------------------------------------------------------------- */
/* Materialise a weight's values into dst (numel floats). -1 with a message naming the weight
 * and file if a data file is missing or short. */
int graph_weight_values(const graph *g, int32_t t, float *dst, char *err, size_t errlen);
/* The same counter-based normal generator, for inputs of the executor and tests. */
void graph_fill_normal(float *dst, int64_t n, uint64_t seed, float mean, float std);

/* Blobs. graph_blob_new copies numel values (values may be NULL when numel is 0) into a new blob
 * holding one reference, which the caller owns; it hashes the values once. NULL if numel is
 * negative or too large to allocate. graph_blob_ref adds a reference and returns b;
 * graph_blob_unref drops one and frees the blob with the last (NULL is ignored). */
graph_blob *graph_blob_new(const float *values, int64_t numel);
graph_blob *graph_blob_ref(graph_blob *b);
void graph_blob_unref(graph_blob *b);
int64_t graph_blob_numel(const graph_blob *b);
const float *graph_blob_data(const graph_blob *b);  /* [numel], read-only, valid while referenced */
uint64_t graph_blob_hash(const graph_blob *b);      /* of the values' bits: equal values, equal hash */
int64_t graph_blob_refs(const graph_blob *b);       /* the current reference count (tests, asserts) */

/* --- files --------------------------------------------------------------------------------- */
/* The path policy for every file a model names (FILE weights, ONNX external data): path is
 * relative to base_dir, the model's folder (or absolute). Unless allow_outside, the file must lie
 * inside that folder once resolved (realpath: "..", absolute paths and symbolic links followed);
 * one outside is refused with one line in err (no prefix). A file that does not exist passes
 * (opening it reports that). base_dir NULL or empty (a graph built in memory, a model
 * read from a string): path is taken as it is. On success *out is the path to open, base_dir
 * joined (caller frees); returns 0, or -1. */
int graph_path_resolve(const char *base_dir, int allow_outside, const char *path, char **out, char *err,
                       size_t errlen);
/* Options of graph_load_json_opts; all zero: the defaults. */
typedef struct {
    int64_t max_elements;     /* per-tensor limit; 0: GRAPH_DEFAULT_MAX_ELEMENTS or TASC_MAX_ELEMENTS */
    int allow_outside_paths;  /* 1: FILE weights may name files outside the model's folder */
} graph_load_opts;
/* Load a JSON model. On error returns NULL and writes one line "FILE:LINE:COL: message" (syntax)
 * or "FILE: node 'NAME': message" (semantics) to err. Refuses tensors over max_elements
 * (0: GRAPH_DEFAULT_MAX_ELEMENTS, or TASC_MAX_ELEMENTS from the environment). */
graph *graph_load_json(const char *path, int64_t max_elements, char *err, size_t errlen);
/* The same with options (o NULL: defaults). FILE weights are checked against the path policy
 * (graph_path_resolve) as the model loads, and again whenever their values are read. */
graph *graph_load_json_opts(const char *path, const graph_load_opts *o, char *err, size_t errlen);
/* Same, from a string; 'where' names it in messages. */
graph *graph_load_json_string(const char *text, const char *where, int64_t max_elements, char *err, size_t errlen);
/* Save deterministically (fixed key order, nodes in topological order). A model with DATA or
 * FILE weights also gets a sidecar weights file, graph_sidecar_path(path) ("DIR/M.json" ->
 * "DIR/M.weights.bin"): raw little-endian float32, row-major, weight after weight in declaration
 * order, each starting at a multiple of GRAPH_SIDECAR_ALIGN bytes (zero filler between, no
 * header); a weight sharing its source with an earlier one (the same blob, or the same file,
 * offset and size) is stored once. In the JSON those weights become {"kind": "file", "path":
 * "M.weights.bin", "offset": N}, the path relative to the JSON's folder. FILE weights are copied
 * too, wherever their file is, so a saved model is self-contained (it can be saved into any
 * folder, and never points into a sidecar that a later save may replace); their files must be
 * readable. RANDOM and CONSTANT weights stay in the JSON. Without DATA or FILE weights no
 * sidecar is written (one left from an earlier save is not touched). Both files are written as
 * temporaries and renamed, the sidecar first; on any error neither is left at its path. */
#define GRAPH_SIDECAR_ALIGN 64
int graph_save_json(const graph *g, const char *path, char *err, size_t errlen);
/* "DIR/NAME.json" -> "DIR/NAME.weights.bin"; other names get ".weights.bin" appended. Caller frees. */
char *graph_sidecar_path(const char *json_path);
/* 1 if graph_save_json writes a sidecar for g (it has DATA or FILE weights), else 0. */
int graph_has_sidecar_weights(const graph *g);
/* The JSON text; caller frees. FILE weights keep their paths. NULL for a graph with DATA weights
 * (their values can only be written by graph_save_json, into the sidecar) or an invalid graph. */
char *graph_to_json_string(const graph *g);
/* Graphviz DOT; nodes with tag != 0 are filled to mark rewrites. */
void graph_write_dot(const graph *g, FILE *f);

/* --- accounting ---------------------------------------------------------------------------- */
typedef struct {
    int32_t op_count[OP_COUNT];
    int32_t n_nodes;
    double flops;          /* sum of ops_table[op].flops */
    int64_t param_bytes;   /* float32 bytes of all weights */
    int64_t act_bytes;     /* float32 bytes of all intermediate tensors */
} graph_stats;
void graph_get_stats(const graph *g, graph_stats *st);

/* Multiply-adds of one node as papers count them: conv2d H'W'F * C/g*KH*KW per image, matmul
 * m*n*k per batch entry; bias adds, activations and the other operators count none (they are in
 * the FLOPs). */
double graph_node_macs(const graph *g, const graph_node *nd);

#endif
