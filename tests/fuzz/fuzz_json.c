/* fuzz_json.c: libFuzzer harness for the JSON model loader (graph_load_json_string, graph/json.c).
 *
 * Any bytes must give a valid graph or one error line, never a crash or undefined behaviour. A
 * graph that loads must validate, be written back (graph_to_json_string) and load again to the
 * same canonical hash and the same text; one small enough (no weight files, few elements) also
 * runs on the CPU executor, which exercises the op table's checks and references.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "fuzz_util.h"
#include "graph.h"

/* 1 if g is cheap to run: no FILE weights (their paths would be opened relative to the working
 * folder) and few elements in all. */
static int fuzz_runnable(const graph *g) {
    int64_t total = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].kind == GRAPH_T_WEIGHT && g->tensors[t].init.kind == GRAPH_INIT_FILE)
            return 0;
        total += ops_shape_numel(&g->tensors[t].shape);
    }
    return total <= FUZZ_MAX_ELEMENTS && g->n_nodes <= 64;
}

static void fuzz_run(const graph *g) {
    float **out = calloc((size_t)g->n_outputs + 1, sizeof *out);
    char err[GRAPH_ERR_LEN];
    if (exec_cpu_run(g, NULL, 0, out, err, sizeof err) < 0)
        fuzz_check_message(err);
    for (int32_t j = 0; j < g->n_outputs; j++)
        free(out[j]);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size), err[GRAPH_ERR_LEN];
    err[0] = '\0';
    graph *g = graph_load_json_string(text, "fuzz.json", FUZZ_MAX_ELEMENTS, err, sizeof err);
    free(text);
    if (!g) {
        fuzz_check_message(err);
        return 0;
    }
    if (graph_validate(g, err, sizeof err) < 0)
        fuzz_fail("a loaded graph does not validate", err);
    char *back = graph_to_json_string(g);
    if (!back)
        fuzz_fail("a loaded graph cannot be written back", "");
    graph *h = graph_load_json_string(back, "back.json", FUZZ_MAX_ELEMENTS, err, sizeof err);
    if (!h)
        fuzz_fail("a written model does not load again", err);
    if (graph_hash(h) != graph_hash(g))
        fuzz_fail("the round trip changed the graph", back);
    char *again = graph_to_json_string(h);
    if (!again || strcmp(again, back))
        fuzz_fail("the round trip changed the text", back);
    if (fuzz_runnable(g))
        fuzz_run(g);
    free(again);
    free(back);
    graph_free(h);
    graph_free(g);
    return 0;
}
