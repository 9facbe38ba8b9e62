/* wrong_way_include.c: a file of the op layer that includes a header of the graph layer above it.
 * It is compiled as part of tasc_ops's include setup (target tasc_layer_probe, not built by
 * default); the test layers_build_refuses expects that build to fail on this include. */
#include "ops.h"
#include "graph.h"

int tasc_layer_probe(void);
int tasc_layer_probe(void) { return (int)sizeof(graph); }
