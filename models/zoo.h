/* zoo.h: the model zoo -- the seven networks TASO was evaluated on (and the classic CNNs around
 * them), built through the graph builder API (graph/graph.h) with the batch as a parameter.
 *
 * Weights are seeded initialisers (He-normal kernels, constant batchnorm statistics and biases),
 * chosen so that a CPU run of any model stays finite. The same name and batch always give the
 * same graph (same graph_hash, same JSON bytes). models/<name>.json are these graphs at batch 1.
 */
#ifndef TASC_ZOO_H
#define TASC_ZOO_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#define ZOO_MAX_BATCH 1024

/* The model names, NULL-terminated, in a fixed order:
 * resnet50, resnext50, nasnet_a, nasrnn, bert, inception_v3, squeezenet. Static storage. */
const char *const *zoo_names(void);

/* Build model `name` at batch size `batch` (1..ZOO_MAX_BATCH). Returns a validated graph the
 * caller owns (graph_free), or NULL with a one-line message in err: an unknown name (the message
 * lists the known ones), a batch out of range, or a builder error. */
graph *zoo_build(const char *name, int32_t batch, char *err, size_t errlen);

#endif
