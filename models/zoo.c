/* zoo.c: the zoo's front door (name lookup, batch check, final validation) and the layer helpers
 * that the family builders share (zoo_impl.h).
 *
 * The list of models exists once, in ZOO_MODELS below; the name table and the dispatch table are
 * both generated from it. A graph leaves zoo_build only after graph_validate accepted it.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "zoo.h"
#include "zoo_impl.h"

/* X(name, builder) in the fixed order zoo_names promises. */
#define ZOO_MODELS(X)                 \
    X("resnet50", zoo_resnet50)       \
    X("resnext50", zoo_resnext50)     \
    X("nasnet_a", zoo_nasnet_a)       \
    X("nasrnn", zoo_nasrnn)           \
    X("bert", zoo_bert)               \
    X("inception_v3", zoo_inception_v3) \
    X("squeezenet", zoo_squeezenet)

static const char *const zoo_name_table[] = {
#define X(name, fn) name,
    ZOO_MODELS(X)
#undef X
    NULL};

static graph *(*const zoo_builders[])(int32_t) = {
#define X(name, fn) fn,
    ZOO_MODELS(X)
#undef X
};

const char *const *zoo_names(void) { return zoo_name_table; }

graph *zoo_build(const char *name, int32_t batch, char *err, size_t errlen) {
    int idx = -1;
    for (int k = 0; name && zoo_name_table[k]; k++)
        if (!strcmp(zoo_name_table[k], name))
            idx = k;
    if (idx < 0) {
        char known[256] = "";
        for (int k = 0; zoo_name_table[k]; k++) {
            if (k)
                strncat(known, ", ", sizeof known - strlen(known) - 1);
            strncat(known, zoo_name_table[k], sizeof known - strlen(known) - 1);
        }
        base_fail(err, errlen, "unknown model '%s' (known: %s)", name ? name : "(null)", known);
        return NULL;
    }
    if (batch < 1 || batch > ZOO_MAX_BATCH) {
        base_fail(err, errlen, "%s: batch %d out of range 1..%d", name, (int)batch, ZOO_MAX_BATCH);
        return NULL;
    }
    graph *g = zoo_builders[idx](batch);
    if (!g) {
        base_fail(err, errlen, "%s: out of memory building the graph", name);
        return NULL;
    }
    char verr[GRAPH_ERR_LEN];
    if (!graph_ok(g)) {
        base_fail(err, errlen, "%s: %s", name, graph_error(g));
        graph_free(g);
        return NULL;
    }
    zoo_balance_branches(g);
    if (graph_validate(g, verr, sizeof verr) < 0) {
        base_fail(err, errlen, "%s: %s", name, verr);
        graph_free(g);
        return NULL;
    }
    return g;
}

/* --- layer helpers ------------------------------------------------------------------------- */

const char *zoo_fmt(char *buf, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, ZOO_NAME_LEN, fmt, ap);
    va_end(ap);
    return buf;
}

int64_t zoo_dim(const graph *g, int32_t x, int32_t i) {
    if (x < 0 || x >= g->n_tensors || i < 0 || i >= g->tensors[x].shape.rank)
        return -1;
    return g->tensors[x].shape.dims[i];
}

int32_t zoo_node(graph *g, const char *name, ops_type op, const ops_params *p, int32_t n_in, const int32_t *in) {
    for (int32_t i = 0; i < n_in; i++)
        if (in[i] < 0)
            return -1;
    int32_t out[OPS_MAX_OUTPUTS];
    if (graph_add(g, name, op, p, n_in, in, out) < 1)
        return -1;
    return out[0];
}

/* Kernel "<name>.weight" (f, C/groups, kh, kw) and, if asked, bias "<name>.bias" (f) for a
 * convolution of x; -1 on error. */
static int32_t zoo_conv_weights(graph *g, const char *name, int32_t x, int64_t f, int32_t kh, int32_t kw,
                                int32_t groups, int with_bias, int32_t *bias) {
    char wn[ZOO_NAME_LEN];
    int64_t c = zoo_dim(g, x, 1);
    *bias = -1;
    if (c < 0 || groups < 1)
        return -1;
    int64_t wd[4] = {f, c / groups, kh, kw}; /* (F, C/groups, KH, KW) */
    int32_t w = graph_weight_he(g, zoo_fmt(wn, "%s.weight", name), 4, wd);
    if (with_bias) {
        int64_t bd[1] = {f}; /* (F) */
        *bias = graph_weight_const(g, zoo_fmt(wn, "%s.bias", name), 1, bd, 0.0f);
        if (*bias < 0)
            return -1;
    }
    return w;
}

int32_t zoo_conv(graph *g, const char *name, int32_t x, int64_t f, int32_t kh, int32_t kw, int32_t sh,
                 int32_t sw, int32_t ph, int32_t pw, int32_t groups, int with_bias, ops_act act) {
    int32_t b, w = zoo_conv_weights(g, name, x, f, kh, kw, groups, with_bias, &b);
    if (w < 0)
        return -1;
    const int32_t pads[4] = {ph, pw, ph, pw}; /* t, l, b, r */
    return graph_conv2d_ex(g, name, x, w, b, sh, sw, pads, groups, act);
}

int32_t zoo_conv_same(graph *g, const char *name, int32_t x, int64_t f, int32_t kh, int32_t kw, int32_t sh,
                      int32_t sw, int32_t groups, ops_act act) {
    int32_t b, w = zoo_conv_weights(g, name, x, f, kh, kw, groups, 0, &b);
    if (w < 0)
        return -1;
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    p.v[PM_STRIDE_H] = sh;
    p.v[PM_STRIDE_W] = sw;
    p.v[PM_PAD] = OPS_PAD_SAME;
    p.v[PM_GROUPS] = groups;
    p.v[PM_ACT] = act;
    const int32_t in[2] = {x, w};
    return zoo_node(g, name, OP_CONV2D, &p, 2, in);
}

int32_t zoo_batchnorm(graph *g, const char *name, int32_t x, float eps) {
    static const char *const parts[4] = {"scale", "bias", "mean", "var"};
    static const float values[4] = {1.0f, 0.0f, 0.0f, 1.0f};
    char wn[ZOO_NAME_LEN];
    int64_t c = zoo_dim(g, x, 1);
    if (c < 0)
        return -1;
    int32_t in[5] = {x};
    for (int k = 0; k < 4; k++) {
        int64_t d[1] = {c}; /* (C) */
        in[1 + k] = graph_weight_const(g, zoo_fmt(wn, "%s.%s", name, parts[k]), 1, d, values[k]);
    }
    ops_params p;
    ops_params_default(OP_BATCHNORM, &p);
    p.v[PM_EPS] = ops_f2p(eps);
    return zoo_node(g, name, OP_BATCHNORM, &p, 5, in);
}

int32_t zoo_act(graph *g, const char *name, ops_type op, int32_t x) {
    ops_params p;
    ops_params_default(op, &p);
    return zoo_node(g, name, op, &p, 1, &x);
}

int32_t zoo_linear(graph *g, const char *name, int32_t x, int64_t n, int with_bias, ops_act act) {
    char wn[ZOO_NAME_LEN];
    if (x < 0)
        return -1;
    int64_t k = zoo_dim(g, x, g->tensors[x].shape.rank - 1);
    if (k < 0)
        return -1;
    int64_t wd[2] = {k, n}; /* (k, n) */
    /* fan-in k: each output sums k products (graph_weight_he's numel/dims[0] would be n) */
    int32_t in[3] = {x, graph_weight_he_fan_in(g, zoo_fmt(wn, "%s.weight", name), 2, wd, k), -1};
    if (with_bias) {
        int64_t bd[1] = {n}; /* (n) */
        in[2] = graph_weight_const(g, zoo_fmt(wn, "%s.bias", name), 1, bd, 0.0f);
    }
    ops_params p;
    ops_params_default(OP_MATMUL, &p);
    p.v[PM_ACT] = act;
    return zoo_node(g, name, OP_MATMUL, &p, with_bias ? 3 : 2, in);
}

static int32_t zoo_pool_params(graph *g, const char *name, ops_type op, int32_t x, int32_t k, int32_t s,
                               ops_padmode mode, int32_t pad, int32_t count_pad) {
    ops_params p;
    ops_params_default(op, &p);
    p.v[PM_KH] = k;
    p.v[PM_KW] = k;
    p.v[PM_STRIDE_H] = s;
    p.v[PM_STRIDE_W] = s;
    p.v[PM_PAD] = mode;
    if (mode == OPS_PAD_EXPLICIT)
        p.v[PM_PAD_T] = p.v[PM_PAD_L] = p.v[PM_PAD_B] = p.v[PM_PAD_R] = pad;
    if (op == OP_AVGPOOL2D)
        p.v[PM_COUNT_PAD] = count_pad;
    return zoo_node(g, name, op, &p, 1, &x);
}

int32_t zoo_pool(graph *g, const char *name, ops_type op, int32_t x, int32_t k, int32_t s, int32_t p,
                 int32_t count_pad) {
    return zoo_pool_params(g, name, op, x, k, s, OPS_PAD_EXPLICIT, p, count_pad);
}

int32_t zoo_pool_same(graph *g, const char *name, ops_type op, int32_t x, int32_t k, int32_t s, int32_t count_pad) {
    return zoo_pool_params(g, name, op, x, k, s, OPS_PAD_SAME, 0, count_pad);
}

int32_t zoo_classifier(graph *g, const char *name, int32_t x, int64_t n_classes) {
    char nn[ZOO_NAME_LEN];
    int64_t n = zoo_dim(g, x, 0), c = zoo_dim(g, x, 1);
    if (n < 0 || c < 0)
        return -1;
    ops_params p;
    ops_params_default(OP_GLOBALAVGPOOL, &p);
    int32_t t = zoo_node(g, zoo_fmt(nn, "%s.avgpool", name), OP_GLOBALAVGPOOL, &p, 1, &x); /* (N,C,1,1) */
    ops_params_default(OP_RESHAPE, &p);
    p.n_list = 2;
    p.list[0] = n;
    p.list[1] = c;
    t = zoo_node(g, zoo_fmt(nn, "%s.flatten", name), OP_RESHAPE, &p, 1, &t); /* (N,C) */
    return zoo_linear(g, name, t, n_classes, 1, OPS_ACT_NONE);                 /* (N,n_classes) */
}
