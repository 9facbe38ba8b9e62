/* onnx.h: ONNX models in and out of the graph IR, and models saved with their real weights.
 *
 * Import: an ONNX ModelProto (protobuf-c bindings generated at build time from the onnx.proto of
 * libonnx-dev; default-domain opsets 13 to 18) becomes a graph whose every node is an op-table
 * operator. Constant and shape-only subgraphs are evaluated at import once the input shapes are
 * static (symbolic dims bound by dim_names / --dim), so only real tensor work reaches the graph:
 * Shape, Size, Gather, Slice, Squeeze, Unsqueeze, Concat, Reshape / Expand to computed shapes,
 * ConstantOfShape, Range, Cast, Add / Sub / Mul / Div / Mod / Pow / Max / Min on int64 (checked:
 * an overflow or a division by zero is an error naming the node and the operands; Div truncates
 * and Mod follows fmod as onnxruntime does), Equal / Less / Greater / And / Or / Xor / Not, Where,
 * Trilu; torch.onnx's patterns (x.view(x.size(0), -1), unflatten's Add + Mod, expand's
 * ConstantOfShape / Equal / Where, the SDPA scale's Shape -> Cast -> Sqrt, its causal mask's
 * Expand -> Trilu -> Where) fold to constants. A folded integer tensor
 * over 2^24 elements is refused (an error naming the node and the shape). A node whose inputs are
 * all constants is folded. Nothing is skipped: an operator or attribute the op table cannot
 * express, or a shape-only operator whose input is computed at run time, makes the import fail
 * with ONE line listing every unsupported op type with its count and the first node's name and
 * why. Pad is folded into the padding of the Conv (or count-pad AveragePool) that consumes it, or
 * reported.
 *
 * Weights of an imported graph: initializers held in external data files (float32) are FILE
 * weights pointing into those files (resolved next to the model); all other values (embedded
 * raw_data or typed float_data/int64_data, folded constants) are DATA weights whose values live
 * in memory (graph_blob, shared by clones, freed with the last graph using them). Constants whose
 * elements are all one finite value become CONSTANT weights. graph_save_json writes such a graph
 * as a JSON model plus its sidecar weights file (below), which any process can load.
 * Missing external data is an error naming the data file and the tensor, unless random_weights is
 * set: then missing float tensors get seeded values that keep a deep model's activations of order
 * one, by the role each plays in the nodes that read it (onnx_init.c): Conv/ConvTranspose kernels
 * and MatMul/Gemm operands are RANDOM weights, normal with mean 0 and std sqrt(gain/fan_in) (fan_in:
 * the products summed per output, by the node's layout: numel/dims[0] for a Conv kernel, K of a
 * MatMul's (K,N) or of Gemm's B under transB; gain 2, or 1/E[act^2] of a SiLU, HardSwish or Tanh
 * applied next; the kernel ending a residual branch x + f(x) further divided by sqrt(R), R the
 * number of residual additions, and those of two summed kernel-ended branches by sqrt(2));
 * BatchNormalization scale 1, bias 0, mean 0, var 1;
 * Layer/Instance/GroupNormalization scale 1, bias 0; biases (Conv, Gemm, Add, Sub) 0; Mul/Div
 * factors 1; Gather tables std 1; any other std sqrt(2/(numel/dims[0])) for rank >= 2, else 0.1.
 * random_weights 2 keeps the legacy values: that last rule for every float tensor (only
 * BatchNormalization variances get 1). Seeds: 53 bits of FNV-1a(name) mixed with opts.seed.
 * Missing integer or boolean tensors get zeros; shapes they would have decided are taken from the
 * model's value_info.
 *
 * Semantics to know: integer tensors (token ids) are float32 holding exact integers (|v| <= 2^24).
 * Gather ids: constant ones are checked at import as onnxruntime does (a negative id counts from
 * the end, one outside [-V, V) is refused); ids that arrive at run time must be integers in
 * [0, V): the executors refuse any other (`tasc run` names the node and the id), where
 * onnxruntime would wrap a negative one. ReduceMean / ReduceSum become a product with a
 * constant column. MaxPool / AveragePool ceil_mode becomes extra end padding (refused for a
 * count_include_pad average where that would add windows).
 *
 * Sidecar weights file (graph_save_json, see graph.h): MODEL.json names, for each DATA or FILE
 * weight, the file MODEL.weights.bin (relative to the JSON's folder) and a byte offset; the
 * sidecar holds the values as raw little-endian float32 in row-major order, weight after weight
 * in the graph's weight declaration order, each starting at a multiple of 64 bytes (zero filler
 * between), no header. RANDOM and CONSTANT weights stay as they are and take no room in the
 * sidecar.
 *
 * Export: onnx_export writes a graph as an ONNX model (ir_version 8, opset 17) with every weight
 * as an initializer; fused activations become the standard nodes (Relu, Sigmoid, Tanh, and GELU
 * as x*0.5*(1+Erf(x/sqrt(2)))), and the generator-only constant operators become initializers.
 *
 * Errors are one line "FILE: ..." in err, never an assertion. Returned graphs and buffers are
 * owned by the caller (graph_free, free).
 */
#ifndef TASC_ONNX_H
#define TASC_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#define ONNX_OPSET_MIN 13
#define ONNX_OPSET_MAX 18
#define ONNX_EXPORT_OPSET 17
#define ONNX_SIDECAR_ALIGN GRAPH_SIDECAR_ALIGN /* bytes: each weight of a sidecar file starts at a multiple */

typedef struct {
    int random_weights;        /* 1: missing external data gets seeded values by role, 2: the legacy
                                  values (see above) */
    uint64_t seed;             /* mixed into the random weights' seeds */
    int64_t max_elements;      /* per-tensor limit; 0: GRAPH_DEFAULT_MAX_ELEMENTS or TASC_MAX_ELEMENTS */
    int32_t n_dims;            /* values for symbolic input dimensions (dim_param), by name */
    const char *const *dim_names;   /* [n_dims] */
    const int64_t *dim_values;      /* [n_dims], positive */
    int allow_outside_paths;   /* 1: external data (and a JSON model's weight files) may lie outside the
                                  model's folder; 0: refused (graph_path_resolve, graph.h) */
} onnx_import_opts;

/* All zero: real weights only, default element limit, no symbolic dimension values. */
void onnx_import_opts_default(onnx_import_opts *o);

/* Import the ONNX file at path (external data is looked up in its folder). o NULL: defaults.
 * Returns the graph (caller frees with graph_free) or NULL with one line in err. */
graph *onnx_import(const char *path, const onnx_import_opts *o, char *err, size_t errlen);
/* The same from bytes in memory; where names the model in messages, base_dir (may be NULL: no
 * external data) is the folder that external data locations are relative to. */
graph *onnx_import_buffer(const void *data, size_t len, const char *where, const char *base_dir,
                          const onnx_import_opts *o, char *err, size_t errlen);

/* Load a model file of either format: a path ending in ".onnx" through onnx_import with o's
 * options, any other as a JSON model (graph_load_json) with o->max_elements (o NULL: defaults).
 * The CLI and the public API both load models through this one function. Returns the graph
 * (caller frees with graph_free) or NULL with one line in err that starts with the path. */
graph *onnx_load_model(const char *path, const onnx_import_opts *o, char *err, size_t errlen);

/* Serialise g as an ONNX model; returns a malloc'd buffer (caller frees) of *len bytes, or NULL
 * with one line in err (e.g. a weight file that cannot be read, a model over 2 GiB). */
uint8_t *onnx_export_buffer(const graph *g, size_t *len, char *err, size_t errlen);
/* Write g to path as an ONNX model through a temporary file and a rename. Returns 0 or -1. */
int onnx_export(const graph *g, const char *path, char *err, size_t errlen);

/* Kept for existing callers; new code calls the graph.h functions directly.
 * onnx_sidecar_path is graph_sidecar_path: "DIR/NAME.json" -> "DIR/NAME.weights.bin". Caller frees.
 * onnx_save_model is graph_save_json: the JSON plus the sidecar holding every DATA and FILE
 * weight's values; both written as temporaries and renamed, so a failure leaves neither;
 * deterministic. Returns 0 or -1 with err. */
char *onnx_sidecar_path(const char *json_path);
int onnx_save_model(const graph *g, const char *json_path, char *err, size_t errlen);

#endif
