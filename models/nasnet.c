/* nasnet.c: NASNet-A as TASO evaluated it (TASO's examples/nasnet_a.py), input (N,128,56,56).
 *
 * A 1x1/1 max pool (a no-op TASO puts in front), then three stages of five normal cells and one
 * reduction cell, with 128, 256, 512 channels in the normal cells and twice that in the reduction
 * cell closing each stage; output (N,5120,7,7). Each cell first squeezes its current input to
 * `ch` channels (1x1 conv + fused relu) and fits the previous one (the same 1x1 when spatial sizes
 * agree -- always so here -- else a 3x3/2 conv + relu). A separable conv is a depthwise k x k conv
 * (groups = ch, kernel (ch,1,k,k)) followed by a 1x1 conv, no activation. Normal cell: five sums
 * (sep3(cur)+cur, sep3(prev)+sep3(cur), avg3(cur)+prev, avg3(prev)+avg3(prev),
 * sep3(prev)+sep3(prev)) concatenated -> 5*ch channels. Reduction cell, stride 2: o0 =
 * sep7(prev)+sep5(cur), o1 = max3(cur)+sep7(prev), o2 = avg3(cur)+sep5(prev), o3 = max3(cur) +
 * sep3(o0), o4 = avg3/1(o0)+o1, concatenated. All padding is "SAME"; TASO's average pool excludes
 * padded cells (cuDNN COUNT_EXCLUDE_PADDING). Our "SAME" is TensorFlow's (an odd total padding
 * puts the extra row/column at the bottom/right); TASO hands cuDNN ceil(total/2) on both sides,
 * which gives the same shapes but shifts the stride-2 windows by one cell.
 *
 * Where this differs from the paper's NASNet-A (Zoph et al. 2018): no ImageNet stem or classifier
 * head (the input is already (128,56,56)); no batchnorm; relu only fused into the squeeze/fit
 * convs, not in front of each separable conv; each separable conv is applied once, not twice;
 * the normal cell uses 3x3 where the paper has two 5x5 separable convs, and TASO's pairings
 * differ from the paper's normal cell; five normal cells per stage (NASNet-A 6@4032 has six);
 * channels 128/256/512 rather than the paper's filter counts.
 */
#include <stdint.h>

#include "zoo_impl.h"

typedef struct {
    graph *g;
    int32_t cell;   /* running cell index, for names */
    int32_t sep;    /* running separable conv index within the cell */
    int32_t pool;   /* running pool index within the cell */
} nas_ctx;

static int32_t nas_squeeze(nas_ctx *c, const char *what, int32_t x, int64_t ch) {
    char nn[ZOO_NAME_LEN];
    return zoo_conv_same(c->g, zoo_fmt(nn, "cell%d.%s", (int)c->cell, what), x, ch, 1, 1, 1, 1, 1, OPS_ACT_RELU);
}

/* TASO's fit: bring prev to cur's channels (and spatial size, if it differs). */
static int32_t nas_fit(nas_ctx *c, int32_t cur, int32_t prev) {
    char nn[ZOO_NAME_LEN];
    int64_t ch = zoo_dim(c->g, cur, 1);
    if (zoo_dim(c->g, prev, 2) == zoo_dim(c->g, cur, 2))
        return nas_squeeze(c, "fit", prev, ch);
    return zoo_conv_same(c->g, zoo_fmt(nn, "cell%d.fit", (int)c->cell), prev, ch, 3, 3, 2, 2, 1, OPS_ACT_RELU);
}

/* Separable conv: depthwise k x k (stride s) then pointwise 1x1, x (N,ch,H,W) -> (N,ch,H/s,W/s). */
static int32_t nas_sep(nas_ctx *c, int32_t x, int64_t ch, int32_t k, int32_t s) {
    char nn[ZOO_NAME_LEN];
    int32_t id = c->sep++;
    int64_t in_ch = zoo_dim(c->g, x, 1);
    if (in_ch < 0)
        return -1;
    /* TASO's kernel (ch, in_ch/ch, k, k) makes groups = ch (in_ch == ch in every cell). */
    int32_t t = zoo_conv_same(c->g, zoo_fmt(nn, "cell%d.sep%d.depthwise", (int)c->cell, (int)id), x, ch, k, k, s, s,
                              (int32_t)ch, OPS_ACT_NONE);
    return zoo_conv_same(c->g, zoo_fmt(nn, "cell%d.sep%d.pointwise", (int)c->cell, (int)id), t, ch, 1, 1, 1, 1, 1,
                         OPS_ACT_NONE);
}

static int32_t nas_pool(nas_ctx *c, ops_type op, int32_t x, int32_t s) {
    char nn[ZOO_NAME_LEN];
    return zoo_pool_same(c->g, zoo_fmt(nn, "cell%d.pool%d", (int)c->cell, (int)c->pool++), op, x, 3, s, 0);
}

/* Normal cell: (prev, cur) -> (N, 5*ch, H, W). The ten operands are made in TASO's order (one
 * statement each: C leaves the order of evaluating call arguments open) and summed in pairs. */
static int32_t nas_normal_cell(nas_ctx *c, int32_t prev, int32_t cur, int64_t ch) {
    cur = nas_squeeze(c, "squeeze", cur, ch);
    prev = nas_fit(c, cur, prev);
    int32_t ts[10], o[5];
    ts[0] = nas_sep(c, cur, ch, 3, 1);
    ts[1] = cur;
    ts[2] = nas_sep(c, prev, ch, 3, 1);
    ts[3] = nas_sep(c, cur, ch, 3, 1);
    ts[4] = nas_pool(c, OP_AVGPOOL2D, cur, 1);
    ts[5] = prev;
    ts[6] = nas_pool(c, OP_AVGPOOL2D, prev, 1);
    ts[7] = nas_pool(c, OP_AVGPOOL2D, prev, 1);
    ts[8] = nas_sep(c, prev, ch, 3, 1);
    ts[9] = nas_sep(c, prev, ch, 3, 1);
    for (int k = 0; k < 5; k++)
        o[k] = graph_ewadd(c->g, ts[2 * k], ts[2 * k + 1]);
    return graph_concat(c->g, 1, 5, o);
}

/* Reduction cell: (prev, cur) at HxW -> (N, 5*ch, H/2, W/2); operands in TASO's order. */
static int32_t nas_reduction_cell(nas_ctx *c, int32_t prev, int32_t cur, int64_t ch) {
    cur = nas_squeeze(c, "squeeze", cur, ch);
    prev = nas_fit(c, cur, prev);
    int32_t a, b, o[5];
    a = nas_sep(c, prev, ch, 7, 2);
    b = nas_sep(c, cur, ch, 5, 2);
    o[0] = graph_ewadd(c->g, a, b);
    a = nas_pool(c, OP_MAXPOOL2D, cur, 2);
    b = nas_sep(c, prev, ch, 7, 2);
    o[1] = graph_ewadd(c->g, a, b);
    a = nas_pool(c, OP_AVGPOOL2D, cur, 2);
    b = nas_sep(c, prev, ch, 5, 2);
    o[2] = graph_ewadd(c->g, a, b);
    a = nas_pool(c, OP_MAXPOOL2D, cur, 2);
    b = nas_sep(c, o[0], ch, 3, 1);
    o[3] = graph_ewadd(c->g, a, b);
    a = nas_pool(c, OP_AVGPOOL2D, o[0], 1);
    o[4] = graph_ewadd(c->g, a, o[1]);
    return graph_concat(c->g, 1, 5, o);
}

graph *zoo_nasnet_a(int32_t batch) {
    graph *g = graph_new("nasnet_a");
    if (!g)
        return NULL;
    nas_ctx c = {.g = g};
    const int64_t in_dims[4] = {batch, 128, 56, 56}; /* (N,128,56,56) */
    int32_t x = graph_input(g, "input", 4, in_dims);
    x = zoo_pool_same(g, "input_pool", OP_MAXPOOL2D, x, 1, 1, 0);
    int64_t ch = 128;
    for (int32_t stage = 0; stage < 3; stage++) {
        int32_t prev = x, cur = x;
        for (int32_t j = 0; j < 5; j++, c.cell++) {
            c.sep = c.pool = 0;
            int32_t t = nas_normal_cell(&c, prev, cur, ch); /* (N,5*ch,H,W) */
            prev = cur;
            cur = t;
        }
        ch *= 2;
        c.sep = c.pool = 0;
        x = nas_reduction_cell(&c, prev, cur, ch);          /* (N,5*ch,H/2,W/2) */
        c.cell++;
    }                                                       /* (N,5120,7,7) */
    if (x >= 0)
        graph_mark_output(g, x);
    return g;
}
