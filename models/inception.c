/* inception.c: Inception v3 (torchvision inception_v3, no auxiliary head) at 299x299.
 *
 * Every BasicConv2d is a bias-free conv, batchnorm (eps 1e-3) and relu as three nodes. Stem:
 * 3x3/2 (32), 3x3 (32), 3x3 pad 1 (64), maxpool 3x3/2, 1x1 (80), 3x3 (192), maxpool 3x3/2 ->
 * (N,192,35,35); then Mixed_5b..5d (InceptionA), 6a (B), 6b..6e (C, the factorised 1x7 / 7x1
 * convolutions), 7a (D), 7b..7c (E), global average pool, flatten and fc 2048 -> 1000.
 * Branch average pools are 3x3/1 pad 1 counting the padded cells (F.avg_pool2d's default
 * count_include_pad=True). Dropout is the identity at inference. 94 convolutions in all.
 */
#include <stdint.h>

#include "zoo_impl.h"

#define INCEPTION_BN_EPS 1e-3f

/* BasicConv2d: conv kh x kw (pads ph, pw; stride s) + bn + relu, named "<pre>.<name>". */
static int32_t inc_conv(graph *g, const char *pre, const char *name, int32_t x, int64_t f, int32_t kh, int32_t kw,
                        int32_t s, int32_t ph, int32_t pw) {
    char cn[ZOO_NAME_LEN], nn[ZOO_NAME_LEN];
    zoo_fmt(cn, "%s.%s", pre, name);
    int32_t t = zoo_conv(g, zoo_fmt(nn, "%s.conv", cn), x, f, kh, kw, s, s, ph, pw, 1, 0, OPS_ACT_NONE);
    t = zoo_batchnorm(g, zoo_fmt(nn, "%s.bn", cn), t, INCEPTION_BN_EPS);
    return zoo_act(g, zoo_fmt(nn, "%s.relu", cn), OP_RELU, t);
}

/* 3x3/1 pad 1 average pool (count_include_pad) then 1x1 conv to f: the A, C and E pool branch. */
static int32_t inc_pool_branch(graph *g, const char *pre, int32_t x, int64_t f) {
    char nn[ZOO_NAME_LEN];
    int32_t t = zoo_pool(g, zoo_fmt(nn, "%s.avgpool", pre), OP_AVGPOOL2D, x, 3, 1, 1, 1);
    return inc_conv(g, pre, "branch_pool", t, f, 1, 1, 1, 0, 0);
}

/* InceptionA: (N,C,35,35) -> (N, 224 + pool_features, 35, 35). */
static int32_t inc_a(graph *g, const char *pre, int32_t x, int64_t pool_features) {
    int32_t br[4], t;
    br[0] = inc_conv(g, pre, "branch1x1", x, 64, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch5x5_1", x, 48, 1, 1, 1, 0, 0);
    br[1] = inc_conv(g, pre, "branch5x5_2", t, 64, 5, 5, 1, 2, 2);
    t = inc_conv(g, pre, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch3x3dbl_2", t, 96, 3, 3, 1, 1, 1);
    br[2] = inc_conv(g, pre, "branch3x3dbl_3", t, 96, 3, 3, 1, 1, 1);
    br[3] = inc_pool_branch(g, pre, x, pool_features);
    return graph_concat(g, 1, 4, br);
}

/* InceptionB: (N,288,35,35) -> (N,768,17,17). */
static int32_t inc_b(graph *g, const char *pre, int32_t x) {
    char nn[ZOO_NAME_LEN];
    int32_t br[3], t;
    br[0] = inc_conv(g, pre, "branch3x3", x, 384, 3, 3, 2, 0, 0);
    t = inc_conv(g, pre, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch3x3dbl_2", t, 96, 3, 3, 1, 1, 1);
    br[1] = inc_conv(g, pre, "branch3x3dbl_3", t, 96, 3, 3, 2, 0, 0);
    br[2] = zoo_pool(g, zoo_fmt(nn, "%s.maxpool", pre), OP_MAXPOOL2D, x, 3, 2, 0, 0);
    return graph_concat(g, 1, 3, br);
}

/* InceptionC: (N,768,17,17) -> (N,768,17,17), factorised 7x7 branches of width c7. */
static int32_t inc_c(graph *g, const char *pre, int32_t x, int64_t c7) {
    int32_t br[4], t;
    br[0] = inc_conv(g, pre, "branch1x1", x, 192, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch7x7_1", x, c7, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch7x7_2", t, c7, 1, 7, 1, 0, 3);
    br[1] = inc_conv(g, pre, "branch7x7_3", t, 192, 7, 1, 1, 3, 0);
    t = inc_conv(g, pre, "branch7x7dbl_1", x, c7, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch7x7dbl_2", t, c7, 7, 1, 1, 3, 0);
    t = inc_conv(g, pre, "branch7x7dbl_3", t, c7, 1, 7, 1, 0, 3);
    t = inc_conv(g, pre, "branch7x7dbl_4", t, c7, 7, 1, 1, 3, 0);
    br[2] = inc_conv(g, pre, "branch7x7dbl_5", t, 192, 1, 7, 1, 0, 3);
    br[3] = inc_pool_branch(g, pre, x, 192);
    return graph_concat(g, 1, 4, br);
}

/* InceptionD: (N,768,17,17) -> (N,1280,8,8). */
static int32_t inc_d(graph *g, const char *pre, int32_t x) {
    char nn[ZOO_NAME_LEN];
    int32_t br[3], t;
    t = inc_conv(g, pre, "branch3x3_1", x, 192, 1, 1, 1, 0, 0);
    br[0] = inc_conv(g, pre, "branch3x3_2", t, 320, 3, 3, 2, 0, 0);
    t = inc_conv(g, pre, "branch7x7x3_1", x, 192, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch7x7x3_2", t, 192, 1, 7, 1, 0, 3);
    t = inc_conv(g, pre, "branch7x7x3_3", t, 192, 7, 1, 1, 3, 0);
    br[1] = inc_conv(g, pre, "branch7x7x3_4", t, 192, 3, 3, 2, 0, 0);
    br[2] = zoo_pool(g, zoo_fmt(nn, "%s.maxpool", pre), OP_MAXPOOL2D, x, 3, 2, 0, 0);
    return graph_concat(g, 1, 3, br);
}

/* InceptionE: (N,C,8,8) -> (N,2048,8,8); the 3x3 branches split into parallel 1x3 and 3x1. */
static int32_t inc_e(graph *g, const char *pre, int32_t x) {
    int32_t br[4], pair[2], t;
    br[0] = inc_conv(g, pre, "branch1x1", x, 320, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch3x3_1", x, 384, 1, 1, 1, 0, 0);
    pair[0] = inc_conv(g, pre, "branch3x3_2a", t, 384, 1, 3, 1, 0, 1);
    pair[1] = inc_conv(g, pre, "branch3x3_2b", t, 384, 3, 1, 1, 1, 0);
    br[1] = graph_concat(g, 1, 2, pair);
    t = inc_conv(g, pre, "branch3x3dbl_1", x, 448, 1, 1, 1, 0, 0);
    t = inc_conv(g, pre, "branch3x3dbl_2", t, 384, 3, 3, 1, 1, 1);
    pair[0] = inc_conv(g, pre, "branch3x3dbl_3a", t, 384, 1, 3, 1, 0, 1);
    pair[1] = inc_conv(g, pre, "branch3x3dbl_3b", t, 384, 3, 1, 1, 1, 0);
    br[2] = graph_concat(g, 1, 2, pair);
    br[3] = inc_pool_branch(g, pre, x, 192);
    return graph_concat(g, 1, 4, br);
}

graph *zoo_inception_v3(int32_t batch) {
    graph *g = graph_new("inception_v3");
    if (!g)
        return NULL;
    const int64_t in_dims[4] = {batch, 3, 299, 299}; /* (N,3,299,299) */
    int32_t x = graph_input(g, "input", 4, in_dims);
    x = inc_conv(g, "stem", "Conv2d_1a_3x3", x, 32, 3, 3, 2, 0, 0);          /* (N,32,149,149) */
    x = inc_conv(g, "stem", "Conv2d_2a_3x3", x, 32, 3, 3, 1, 0, 0);          /* (N,32,147,147) */
    x = inc_conv(g, "stem", "Conv2d_2b_3x3", x, 64, 3, 3, 1, 1, 1);          /* (N,64,147,147) */
    x = zoo_pool(g, "stem.maxpool1", OP_MAXPOOL2D, x, 3, 2, 0, 0);           /* (N,64,73,73) */
    x = inc_conv(g, "stem", "Conv2d_3b_1x1", x, 80, 1, 1, 1, 0, 0);          /* (N,80,73,73) */
    x = inc_conv(g, "stem", "Conv2d_4a_3x3", x, 192, 3, 3, 1, 0, 0);         /* (N,192,71,71) */
    x = zoo_pool(g, "stem.maxpool2", OP_MAXPOOL2D, x, 3, 2, 0, 0);           /* (N,192,35,35) */
    x = inc_a(g, "Mixed_5b", x, 32);                                         /* (N,256,35,35) */
    x = inc_a(g, "Mixed_5c", x, 64);                                         /* (N,288,35,35) */
    x = inc_a(g, "Mixed_5d", x, 64);                                         /* (N,288,35,35) */
    x = inc_b(g, "Mixed_6a", x);                                             /* (N,768,17,17) */
    x = inc_c(g, "Mixed_6b", x, 128);
    x = inc_c(g, "Mixed_6c", x, 160);
    x = inc_c(g, "Mixed_6d", x, 160);
    x = inc_c(g, "Mixed_6e", x, 192);                                        /* (N,768,17,17) */
    x = inc_d(g, "Mixed_7a", x);                                             /* (N,1280,8,8) */
    x = inc_e(g, "Mixed_7b", x);                                             /* (N,2048,8,8) */
    x = inc_e(g, "Mixed_7c", x);                                             /* (N,2048,8,8) */
    x = zoo_classifier(g, "fc", x, 1000);                                    /* (N,1000) */
    if (x >= 0)
        graph_mark_output(g, x);
    return g;
}
