/* resnet.c: ResNet-50 (torchvision v1.5) and ResNeXt-50 32x4d at 224x224.
 *
 * Both are the same bottleneck network: stem conv 7x7/2 + bn + relu + maxpool 3x3/2, then stages
 * of [3, 4, 6, 3] bottlenecks (1x1 reduce, 3x3 carrying the stage's stride -- the v1.5 placement --
 * and 1x1 expand to 4x planes, each followed by batchnorm; relu after the first two and after the
 * residual add; a 1x1/stride projection with batchnorm on the first block of each stage), then
 * global average pool, flatten and a 1000-way fully connected layer. ResNeXt widens the inner
 * convolutions to planes * 2 (32 groups of 4 at 64 planes) and groups the 3x3 32 ways.
 * Convolutions are bias-free, batchnorm eps 1e-5, each layer a separate node as in ONNX exports.
 */
#include <stdint.h>

#include "zoo_impl.h"

#define RESNET_BN_EPS 1e-5f

static int32_t resnet_conv_bn(graph *g, const char *name, const char *bn, int32_t x, int64_t f, int32_t k,
                              int32_t s, int32_t groups, int relu) {
    char nn[ZOO_NAME_LEN];
    int32_t t = zoo_conv(g, name, x, f, k, k, s, s, k / 2, k / 2, groups, 0, OPS_ACT_NONE);
    t = zoo_batchnorm(g, bn, t, RESNET_BN_EPS);
    return relu ? zoo_act(g, zoo_fmt(nn, "%s.relu", bn), OP_RELU, t) : t;
}

/* One bottleneck block; x (N,C,H,W) -> (N, 4*planes, H/stride, W/stride). */
static int32_t resnet_bottleneck(graph *g, const char *pre, int32_t x, int64_t planes, int64_t width,
                                 int32_t stride, int32_t groups) {
    char cn[ZOO_NAME_LEN], bn[ZOO_NAME_LEN];
    int64_t out_ch = planes * 4;
    int32_t t = resnet_conv_bn(g, zoo_fmt(cn, "%s.conv1", pre), zoo_fmt(bn, "%s.bn1", pre), x, width, 1, 1, 1, 1);
    t = resnet_conv_bn(g, zoo_fmt(cn, "%s.conv2", pre), zoo_fmt(bn, "%s.bn2", pre), t, width, 3, stride, groups, 1);
    t = resnet_conv_bn(g, zoo_fmt(cn, "%s.conv3", pre), zoo_fmt(bn, "%s.bn3", pre), t, out_ch, 1, 1, 1, 0);
    int32_t id = x;
    if (stride != 1 || zoo_dim(g, x, 1) != out_ch)
        id = resnet_conv_bn(g, zoo_fmt(cn, "%s.downsample.0", pre), zoo_fmt(bn, "%s.downsample.1", pre), x, out_ch,
                            1, stride, 1, 0);
    int32_t sum = graph_ewadd(g, t, id);
    return zoo_act(g, zoo_fmt(cn, "%s.relu", pre), OP_RELU, sum);
}

/* width_factor: the bottleneck's inner width as a multiple of planes -- 1 for ResNet-50,
 * 2 for ResNeXt-50 32x4d (torchvision: planes * 4 / 64 * 32). */
static graph *resnet_build(const char *name, int32_t batch, int64_t width_factor, int32_t groups) {
    static const int32_t blocks[4] = {3, 4, 6, 3};
    char pre[ZOO_NAME_LEN];
    graph *g = graph_new(name);
    if (!g)
        return NULL;
    const int64_t in_dims[4] = {batch, 3, 224, 224}; /* (N,3,224,224) */
    int32_t x = graph_input(g, "input", 4, in_dims);
    x = resnet_conv_bn(g, "conv1", "bn1", x, 64, 7, 2, 1, 1);            /* (N,64,112,112) */
    x = zoo_pool(g, "maxpool", OP_MAXPOOL2D, x, 3, 2, 1, 0);            /* (N,64,56,56) */
    int64_t planes = 64;
    for (int32_t stage = 0; stage < 4; stage++, planes *= 2)
        for (int32_t b = 0; b < blocks[stage]; b++)
            x = resnet_bottleneck(g, zoo_fmt(pre, "layer%d.%d", (int)stage + 1, (int)b), x, planes,
                                  planes * width_factor, (stage > 0 && b == 0) ? 2 : 1, groups);
    x = zoo_classifier(g, "fc", x, 1000);                                /* (N,1000) */
    if (x >= 0)
        graph_mark_output(g, x);
    return g;
}

graph *zoo_resnet50(int32_t batch) { return resnet_build("resnet50", batch, 1, 1); }

graph *zoo_resnext50(int32_t batch) { return resnet_build("resnext50", batch, 2, 32); }
