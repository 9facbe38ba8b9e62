/* onnx_load.c: one loader for model files of either format, shared by the CLI (src/cli) and the
 * public API (src/api): a path ending in ".onnx" goes through onnx_import with the caller's
 * options, anything else is a JSON model (graph_load_json) under the same element limit.
 * This layer knows both formats, so the dispatch lives here once rather than in each caller.
 * Messages always start with the path, as the callers print them unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "onnx.h"

static int onnx_load_is_onnx(const char *path) {
    size_t n = strlen(path), k = strlen(".onnx");
    return n >= k && !strcmp(path + n - k, ".onnx");
}

graph *onnx_load_model(const char *path, const onnx_import_opts *o, char *err, size_t errlen) {
    char msg[GRAPH_ERR_LEN + 64];
    msg[0] = '\0';
    onnx_import_opts def;
    if (!o) {
        onnx_import_opts_default(&def);
        o = &def;
    }
    graph_load_opts jo = {.max_elements = o->max_elements, .allow_outside_paths = o->allow_outside_paths};
    graph *g = onnx_load_is_onnx(path) ? onnx_import(path, o, msg, sizeof msg)
                                       : graph_load_json_opts(path, &jo, msg, sizeof msg);
    if (g)
        return g;
    /* the loaders' messages start with the file name; make sure one does */
    if (!strncmp(msg, path, strlen(path)))
        base_fail(err, errlen, "%s", msg[0] ? msg : "cannot load");
    else
        base_fail(err, errlen, "%s: %s", path, msg[0] ? msg : "cannot load");
    return NULL;
}
