/* onnx_save.c: the ONNX module's names for saving a model with its sidecar weights file. Both
 * are thin wrappers: graph_save_json writes the sidecar itself (format in graph.h and onnx.h), so
 * an imported graph, whose values live in DATA blobs, is saved like any other graph.
 */
#include "onnx.h"

char *onnx_sidecar_path(const char *json_path) { return graph_sidecar_path(json_path); }

int onnx_save_model(const graph *g, const char *json_path, char *err, size_t errlen) {
    return graph_save_json(g, json_path, err, errlen);
}
