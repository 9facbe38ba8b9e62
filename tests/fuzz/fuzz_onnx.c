/* fuzz_onnx.c: libFuzzer harness for the ONNX importer (onnx_import_buffer, graph/onnx/) and the
 * export round trip.
 *
 * Any bytes must give a valid graph or one error line, never a crash or undefined behaviour (the
 * nesting limit, checked arithmetic on every size taken from the file). External data is looked
 * up nowhere (no base folder) and made up (random_weights), so every weight is in memory. A graph
 * that imports must validate, export (onnx_export_buffer) and import again with the same inputs
 * and outputs (count and shapes).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "onnx.h"

static void fuzz_same_interface(const graph *a, const graph *b) {
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
        fuzz_fail("the export round trip changed the inputs or outputs", "");
    for (int32_t i = 0; i < a->n_inputs; i++)
        if (!ops_shape_eq(&a->tensors[a->inputs[i]].shape, &b->tensors[b->inputs[i]].shape))
            fuzz_fail("the export round trip changed an input's shape", a->tensors[a->inputs[i]].name);
    for (int32_t i = 0; i < a->n_outputs; i++)
        if (!ops_shape_eq(&a->tensors[a->outputs[i]].shape, &b->tensors[b->outputs[i]].shape))
            fuzz_fail("the export round trip changed an output's shape", a->tensors[a->outputs[i]].name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    onnx_import_opts o;
    onnx_import_opts_default(&o);
    o.random_weights = 1;
    o.max_elements = FUZZ_MAX_ELEMENTS;
    char err[GRAPH_ERR_LEN + 4096];
    err[0] = '\0';
    graph *g = onnx_import_buffer(data, size, "fuzz.onnx", NULL, &o, err, sizeof err);
    if (!g) {
        fuzz_check_message(err);
        return 0;
    }
    if (graph_validate(g, err, sizeof err) < 0)
        fuzz_fail("an imported graph does not validate", err);
    size_t len = 0;
    uint8_t *buf = onnx_export_buffer(g, &len, err, sizeof err);
    if (!buf)
        fuzz_fail("an imported graph does not export", err);
    graph *h = onnx_import_buffer(buf, len, "exported.onnx", NULL, &o, err, sizeof err);
    if (!h)
        fuzz_fail("an exported model does not import again", err);
    fuzz_same_interface(g, h);
    graph_free(h);
    free(buf);
    graph_free(g);
    return 0;
}
