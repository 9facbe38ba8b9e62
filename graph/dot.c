/* dot.c: a graph as Graphviz DOT.
 *
 * Graph inputs are blue "invhouse" shapes, weights grey dashed boxes, operator nodes boxes
 * labelled with the op, its parameters that differ from the op's defaults, and its output
 * shapes; nodes with tag != 0 (made by a rewrite) are filled orange. Edges carry the tensor's
 * shape; graph outputs end in "house" shapes. The text depends only on the graph: leaves in
 * declaration order, nodes in topological order (node order if there is a cycle).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

/* s with '"' and '\' escaped, as DOT wants inside a quoted string. */
static void dot_escaped(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* The node's parameters that differ from the op's defaults, "k=v" separated by spaces. */
static void dot_params(const graph_node *nd, char *buf, size_t len) {
    const ops_desc *od = &ops_table[nd->op];
    ops_params d;
    ops_params_default(nd->op, &d);
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < od->n_params; i++) {
        ops_param_key k = od->params[i].key;
        const char *pn = graph_impl_param_name(&od->params[i]);
        char val[128];
        int64_t v = nd->p.v[k];
        if (k == PM_LIST) {
            if (nd->p.n_list == 0 && d.n_list == 0)
                continue;
            size_t u = 0;
            val[0] = '\0';
            for (int32_t j = 0; j < nd->p.n_list && j < OPS_MAX_LIST; j++) {
                int w = snprintf(val + u, sizeof val - u, "%s%lld", j ? "," : "", (long long)nd->p.list[j]);
                if (w < 0 || (size_t)w >= sizeof val - u)
                    break;
                u += (size_t)w;
            }
            int w = snprintf(buf + used, len - used, "%s%s=[%s]", used ? " " : "", pn, val);
            if (w < 0 || (size_t)w >= len - used)
                return;
            used += (size_t)w;
            continue;
        }
        if (v == d.v[k])
            continue;
        switch (ops_param_table[k].kind) {
        case OPS_PK_FLOAT: snprintf(val, sizeof val, "%g", (double)ops_p2f(v)); break;
        case OPS_PK_ACT:
            snprintf(val, sizeof val, "%s", v >= 0 && v < OPS_ACT_COUNT ? ops_act_names[v] : "?");
            break;
        case OPS_PK_PADMODE:
            snprintf(val, sizeof val, "%s", v >= 0 && v < OPS_PAD_COUNT ? ops_padmode_names[v] : "?");
            break;
        case OPS_PK_INT:
        case OPS_PK_LIST: snprintf(val, sizeof val, "%lld", (long long)v); break;
        }
        int w = snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", pn, val);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}

/* The DOT id of the vertex that produces tensor t. */
static void dot_src(const graph *g, int32_t t, char *buf, size_t len) {
    if (g->tensors[t].producer >= 0)
        snprintf(buf, len, "n%d", (int)g->tensors[t].producer);
    else
        snprintf(buf, len, "t%d", (int)t);
}

void graph_write_dot(const graph *g, FILE *f) {
    char sb[160], pb[GRAPH_ERR_LEN];
    fprintf(f, "digraph \"");
    dot_escaped(f, g->name);
    fprintf(f, "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
               "  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const graph_tensor *ts = &g->tensors[g->inputs[i]];
        fprintf(f, "  t%d [label=\"", (int)g->inputs[i]);
        dot_escaped(f, ts->name);
        fprintf(f, "\\n%s%s\", shape=invhouse, style=filled, fillcolor=\"#cfe2f3\"];\n",
                ops_shape_str(&ts->shape, sb, sizeof sb), ts->dtype == GRAPH_DT_I64 ? " int64" : "");
    }
    for (int32_t i = 0; i < g->n_weights; i++) {
        const graph_tensor *ts = &g->tensors[g->weights[i]];
        fprintf(f, "  t%d [label=\"", (int)g->weights[i]);
        dot_escaped(f, ts->name);
        fprintf(f, "\\n%s\", shape=box, style=\"rounded,dashed\", color=\"#888888\"];\n",
                ops_shape_str(&ts->shape, sb, sizeof sb));
    }

    int32_t *order = base_xmalloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *order);
    if (graph_topo_order(g, order, NULL, 0) < 0)
        for (int32_t n = 0; n < g->n_nodes; n++)
            order[n] = n;
    for (int32_t j = 0; j < g->n_nodes; j++) {
        int32_t n = order[j];
        const graph_node *nd = &g->nodes[n];
        fprintf(f, "  n%d [label=\"%s", (int)n, ops_table[nd->op].name);
        dot_params(nd, pb, sizeof pb);
        if (pb[0])
            fprintf(f, "\\n%s", pb);
        for (int32_t k = 0; k < nd->n_out; k++)
            fprintf(f, "%s%s", k ? " " : "\\n", ops_shape_str(&g->tensors[nd->out[k]].shape, sb, sizeof sb));
        fprintf(f, "\", tooltip=\"");
        dot_escaped(f, nd->name);
        fprintf(f, "\", shape=box%s];\n", nd->tag ? ", style=filled, fillcolor=\"#ffd27f\"" : "");
    }
    for (int32_t j = 0; j < g->n_nodes; j++) {
        int32_t n = order[j];
        const graph_node *nd = &g->nodes[n];
        for (int32_t k = 0; k < nd->n_in; k++) {
            int32_t t = nd->in[k];
            const graph_tensor *ts = &g->tensors[t];
            char src[32];
            dot_src(g, t, src, sizeof src);
            fprintf(f, "  %s -> n%d [label=\"", src, (int)n);
            if (ts->producer >= 0 && g->nodes[ts->producer].n_out > 1)
                fprintf(f, "[%d] ", (int)ts->out_index);
            fprintf(f, "%s\"];\n", ops_shape_str(&ts->shape, sb, sizeof sb));
        }
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        int32_t t = g->outputs[i];
        const graph_tensor *ts = &g->tensors[t];
        char src[32];
        dot_src(g, t, src, sizeof src);
        fprintf(f, "  o%d [label=\"", (int)i);
        dot_escaped(f, ts->name);
        fprintf(f, "\", shape=house, style=filled, fillcolor=\"#d9ead3\"];\n");
        fprintf(f, "  %s -> o%d [label=\"%s\"];\n", src, (int)i, ops_shape_str(&ts->shape, sb, sizeof sb));
    }
    fprintf(f, "}\n");
    free(order);
}
