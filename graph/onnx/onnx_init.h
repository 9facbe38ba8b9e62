/* onnx_init.h: the values --random-weights gives to weights whose data is missing, chosen by the
 * role each plays in the nodes that read it (onnx_init.c). Part of the importer (graph/onnx). */
#ifndef TASC_ONNX_INIT_H
#define TASC_ONNX_INIT_H

#include "onnx_impl.h"

/* After the initializers are read and before the node walk: when c->o.random_weights is 1, every
 * made-up float initializer gets its variance-preserving values (see onnx_init.c); 2 keeps the
 * legacy values. Changes only those initializers' ox_const (std, or values held in memory). */
void ox_init_random_roles(ox_ctx *c, const Onnx__GraphProto *gp);

#endif
