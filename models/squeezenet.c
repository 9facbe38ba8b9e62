/* squeezenet.c: SqueezeNet 1.1 (torchvision squeezenet1_1) at 224x224.
 *
 * Stem conv 3x3/2 (64) + relu, then max pools 3x3/2 (ceil mode in torchvision; every pool here
 * divides exactly, so floor gives the same 55, 27, 13) between eight fire modules. A fire module
 * squeezes with a 1x1 conv + relu and expands with a 1x1 and a padded 3x3 conv (each + relu)
 * whose outputs are concatenated on channels. The classifier is a 1x1 conv to 1000 + relu,
 * global average pool and flatten. All convolutions carry a (zero) bias as in the original;
 * relu is a separate node (nn.ReLU in torchvision). Dropout is the identity at inference.
 */
#include <stdint.h>

#include "zoo_impl.h"

static int32_t squeeze_conv_relu(graph *g, const char *name, int32_t x, int64_t f, int32_t k, int32_t s,
                                 int32_t pad) {
    char nn[ZOO_NAME_LEN];
    int32_t t = zoo_conv(g, name, x, f, k, k, s, s, pad, pad, 1, 1, OPS_ACT_NONE);
    return zoo_act(g, zoo_fmt(nn, "%s.relu", name), OP_RELU, t);
}

/* Fire module: x (N,C,H,W) -> (N, e1 + e3, H, W). */
static int32_t squeeze_fire(graph *g, int32_t idx, int32_t x, int64_t s1, int64_t e1, int64_t e3) {
    char nn[ZOO_NAME_LEN];
    int32_t sq = squeeze_conv_relu(g, zoo_fmt(nn, "fire%d.squeeze", (int)idx), x, s1, 1, 1, 0);
    int32_t br[2];
    br[0] = squeeze_conv_relu(g, zoo_fmt(nn, "fire%d.expand1x1", (int)idx), sq, e1, 1, 1, 0);
    br[1] = squeeze_conv_relu(g, zoo_fmt(nn, "fire%d.expand3x3", (int)idx), sq, e3, 3, 1, 1);
    return graph_concat(g, 1, 2, br);
}

graph *zoo_squeezenet(int32_t batch) {
    /* fire modules 2..9: squeeze, expand1x1, expand3x3 planes */
    static const int64_t fires[8][3] = {{16, 64, 64},   {16, 64, 64},   {32, 128, 128}, {32, 128, 128},
                                        {48, 192, 192}, {48, 192, 192}, {64, 256, 256}, {64, 256, 256}};
    char nn[ZOO_NAME_LEN];
    graph *g = graph_new("squeezenet");
    if (!g)
        return NULL;
    const int64_t in_dims[4] = {batch, 3, 224, 224}; /* (N,3,224,224) */
    int32_t x = graph_input(g, "input", 4, in_dims);
    x = squeeze_conv_relu(g, "conv1", x, 64, 3, 2, 0);                 /* (N,64,111,111) */
    for (int32_t f = 0; f < 8; f++) {
        if (f == 0 || f == 2 || f == 4)                                 /* -> 55, 27, 13 */
            x = zoo_pool(g, zoo_fmt(nn, "maxpool%d", (int)f / 2 + 1), OP_MAXPOOL2D, x, 3, 2, 0, 0);
        x = squeeze_fire(g, f + 2, x, fires[f][0], fires[f][1], fires[f][2]);
    }                                                                   /* (N,512,13,13) */
    x = squeeze_conv_relu(g, "classifier", x, 1000, 1, 1, 0);          /* (N,1000,13,13) */
    ops_params p;
    ops_params_default(OP_GLOBALAVGPOOL, &p);
    x = zoo_node(g, "avgpool", OP_GLOBALAVGPOOL, &p, 1, &x);           /* (N,1000,1,1) */
    ops_params_default(OP_RESHAPE, &p);
    p.n_list = 2;
    p.list[0] = batch;
    p.list[1] = 1000;
    x = zoo_node(g, "flatten", OP_RESHAPE, &p, 1, &x);                 /* (N,1000) */
    if (x >= 0)
        graph_mark_output(g, x);
    return g;
}
