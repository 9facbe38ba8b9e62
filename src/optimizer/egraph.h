/* egraph.h: an e-graph (equality graph) for the equality-saturation search (eqsat.h).
 *
 * An e-class is a set of e-nodes known to compute the same value; an e-node is an operator with
 * its parameters and the e-classes of its inputs, or a leaf (a graph input, a weight, a constant
 * weight a rewrite made). A multi-output op (split) is one e-node whose class stands for the tuple
 * of its outputs, each output being a class of its own holding a projection e-node.
 * Every class carries the shapes of what it stands for (every e-node of a class agrees on them).
 * Nodes are hash-consed (uthash on the canonical form: children by their class's representative),
 * classes merged by union-find (the smaller id is the representative); egraph_rebuild restores
 * congruence (equal canonical forms share a class) after unions. Everything is indexed by ids
 * handed out in order, and every walk goes in id order: the same calls give the same e-graph.
 */
#ifndef TASC_EGRAPH_H
#define TASC_EGRAPH_H

#include <stdint.h>

#include "graph.h"
#include "ops.h"

typedef enum { EGRAPH_INPUT, EGRAPH_WEIGHT, EGRAPH_CONST, EGRAPH_OP, EGRAPH_PROJ } egraph_kind;

typedef struct {
    egraph_kind kind;
    int32_t a;            /* INPUT, WEIGHT: tensor id in the source graph; OP: the ops_type; PROJ: output index */
    float value;          /* CONST: the value of every element */
    ops_params p;         /* OP: parameters (undeclared keys 0); zero otherwise */
    int32_t n_ch;         /* children (OP: inputs; PROJ: 1, the tuple class) */
    int32_t ch;           /* offset of the children in egraph.ch */
    int32_t cls;          /* class at insertion (egraph_find gives the current one) */
    int dead;             /* 1: found equal to an earlier node by egraph_rebuild (kept out of class lists) */
    int32_t same;         /* dead: the node it was found equal to (egraph_live follows the chain) */
} egraph_node;

typedef struct {
    int32_t n_out;                    /* 1, or an OP tuple's output count */
    ops_shape out[OPS_MAX_OUTPUTS];
    graph_dtype dtype;
    int32_t *nodes, n_nodes, cap_nodes;   /* live e-nodes, ascending (representatives, after rebuild) */
    int32_t *parents, n_parents, cap_parents; /* live e-nodes reading this class, ascending (after rebuild) */
    uint8_t wo;                       /* computed from weights alone (some e-node is), after rebuild */
} egraph_class;

typedef struct egraph_memo egraph_memo;

typedef struct {
    egraph_node *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *ch;
    int32_t n_ch, cap_ch;
    egraph_class *cls;
    int32_t *uf;                      /* union-find parent of each class */
    int32_t n_cls, cap_cls;
    int32_t n_live;                   /* live e-nodes (not dead) */
    egraph_memo *memo;                /* canonical form -> node (uthash) */
    egraph_memo **memo_pool;          /* every memo entry, to free */
    int32_t n_memo, cap_memo;
    int32_t n_unions;                 /* unions since the last rebuild */
} egraph;

void egraph_init(egraph *eg);
void egraph_free(egraph *eg);

/* The representative of class c. */
int32_t egraph_find(egraph *eg, int32_t c);

/* The class of the e-node (kind, a, value, p, children): an existing one if an equal node is
 * present, else a new class holding the new node, with n_out shapes `out` and dtype. p may be NULL
 * (zeros). Returns the class's representative. */
int32_t egraph_add(egraph *eg, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
                   const int32_t *ch, int32_t n_out, const ops_shape *out, graph_dtype dtype);

/* The node equal to (kind, a, value, p, children) if present, else -1 (nothing added). */
int32_t egraph_lookup(egraph *eg, egraph_kind kind, int32_t a, float value, const ops_params *p, int32_t n_ch,
                      const int32_t *ch);

/* Merge classes a and b (the caller has checked their shapes agree). 1 if they were distinct. */
int egraph_union(egraph *eg, int32_t a, int32_t b);

/* Restore congruence after unions: repeated until nothing changes, every node's children are
 * made canonical and nodes equal in that form are merged (their classes unioned, the later node
 * marked dead). Then each representative's node list, parent list and weight-only flag are
 * recomputed. */
void egraph_rebuild(egraph *eg);

/* Node n, or the live node it was found equal to. */
int32_t egraph_live(const egraph *eg, int32_t n);

/* The children of node n (current ids: egraph_find them for representatives). */
static inline const int32_t *egraph_children(const egraph *eg, int32_t n) { return eg->ch + eg->nodes[n].ch; }

#endif
