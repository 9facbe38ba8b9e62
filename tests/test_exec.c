/* test_exec.c: the CPU reference executor (src/exec.c). Small graphs whose outputs are computed
 * here by hand loops in double (a two-layer MLP, a conv layer), the inputs the executor
 * generates, freeing of intermediates (peak versus total bytes), dead-node skipping, byte-equal
 * results across thread counts, the weight cache (random weights generated once per process,
 * DATA weights read in place), exec_compare's values, and the failure paths: invalid graphs,
 * missing weight files, bad ids. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "graph.h"
#include "test.h"

static float *weight_values(const graph *g, int32_t t) {
    int64_t n = ops_shape_numel(&g->tensors[t].shape);
    float *w = malloc((size_t)n * sizeof *w);
    char err[256];
    CHECK_EQ_INT(graph_weight_values(g, t, w, err, sizeof err), 0);
    return w;
}

/* y = relu(x W1 + b1) W2 with x (2,4), W1 (4,3), b1 (3), W2 (3,2): checked against loops. */
static void test_mlp(void) {
    graph *g = graph_new("mlp");
    int64_t xd[2] = {2, 4}, w1d[2] = {4, 3}, b1d[1] = {3}, w2d[2] = {3, 2};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w1 = graph_weight_he(g, "w1", 2, w1d);
    int32_t b1 = graph_weight_const(g, "b1", 1, b1d, 0.25f);
    int32_t w2 = graph_weight_he(g, "w2", 2, w2d);
    ops_params p;
    ops_params_default(OP_MATMUL, &p);
    p.v[PM_ACT] = OPS_ACT_RELU;
    int32_t in1[3] = {x, w1, b1}, h, y;
    CHECK_EQ_INT(graph_add(g, "fc1", OP_MATMUL, &p, 3, in1, &h), 1);
    y = graph_matmul(g, h, w2, OPS_ACT_NONE);
    graph_mark_output(g, y);
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "  %s\n", graph_error(g));
        graph_free(g);
        return;
    }

    const float xv[8] = {1.0f, -2.0f, 0.5f, 3.0f, -1.5f, 0.25f, 2.0f, -0.75f};
    const float *in[1] = {xv};
    float *out[1] = {NULL};
    char err[512] = "";
    exec_stats st;
    CHECK_EQ_INT(exec_cpu_run_ex(g, in, 0, out, &st, err, sizeof err), 0);
    CHECK_EQ_INT(st.nodes_run, 2);
    float *W1 = weight_values(g, w1), *W2 = weight_values(g, w2);
    double hh[2][3], want[2][2];
    int nonzero = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0.25;
            for (int k = 0; k < 4; k++)
                s += (double)xv[i * 4 + k] * W1[k * 3 + j];
            hh[i][j] = s > 0 ? s : 0;
        }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
                s += hh[i][k] * W2[k * 2 + j];
            want[i][j] = s;
        }
    for (int i = 0; out[0] && i < 4; i++) {
        CHECK_NEAR(out[0][i], want[i / 2][i % 2], 1e-5);
        nonzero += out[0][i] != 0.0f;
    }
    CHECK(nonzero > 0);
    /* the He weights are not all equal: the test really exercises the loop order */
    CHECK(W1[0] != W1[1]);
    free(W1);
    free(W2);
    free(out[0]);
    graph_free(g);
}

/* Generated inputs: float inputs are graph_fill_normal(seed + i, 0, 1). */
static void test_generated_inputs(void) {
    graph *g = graph_new("add");
    int64_t d[2] = {3, 5};
    int32_t a = graph_input(g, "a", 2, d), b = graph_input(g, "b", 2, d);
    int32_t y = graph_ewadd(g, a, b);
    graph_mark_output(g, y);
    float *out[1] = {NULL}, *out2[1] = {NULL};
    char err[256] = "";
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 7, out, err, sizeof err), 0);
    float av[15], bv[15];
    graph_fill_normal(av, 15, 7, 0.0f, 1.0f);
    graph_fill_normal(bv, 15, 8, 0.0f, 1.0f);
    for (int i = 0; out[0] && i < 15; i++)
        CHECK(out[0][i] == av[i] + bv[i]);
    CHECK(av[0] != bv[0]);
    /* one input given, the other generated from seed + its position */
    const float *in[2] = {NULL, av};
    CHECK_EQ_INT(exec_cpu_run(g, in, 7, out2, err, sizeof err), 0);
    for (int i = 0; out2[0] && i < 15; i++)
        CHECK(out2[0][i] == av[i] + av[i]);
    free(out[0]);
    free(out2[0]);
    graph_free(g);
}

/* A chain of 10 relus on 1000 floats: each intermediate is freed after its one use. */
static void test_freeing(void) {
    graph *g = graph_new("chain");
    int64_t d[1] = {1000};
    int32_t t = graph_input(g, "x", 1, d);
    for (int i = 0; i < 10; i++)
        t = graph_unary(g, i % 2 ? OP_RELU : OP_TANH, t);
    graph_mark_output(g, t);
    /* a dead branch: its node must not run */
    int32_t dead = graph_unary(g, OP_SIGMOID, graph_find_tensor(g, "x"));
    CHECK(dead >= 0);
    float *out[1] = {NULL};
    char err[256] = "";
    exec_stats st;
    CHECK_EQ_INT(exec_cpu_run_ex(g, NULL, 1, out, &st, err, sizeof err), 0);
    CHECK_EQ_INT(st.nodes_run, 10);
    CHECK_EQ_INT(st.total_bytes, 11 * 4000);   /* the input and ten results */
    CHECK_EQ_INT(st.peak_bytes, 2 * 4000);     /* never more than an op's input and output */
    float x[1000];
    graph_fill_normal(x, 1000, 1, 0.0f, 1.0f);
    for (int i = 0; out[0] && i < 1000; i++) {
        float v = x[i];
        for (int k = 0; k < 10; k++)
            v = k % 2 ? (v > 0 ? v : 0) : tanhf(v);
        CHECK_NEAR(out[0][i], v, 1e-6);
    }
    free(out[0]);

    /* a caller's input is borrowed: not counted, not freed, not written */
    float keep[1000];
    memcpy(keep, x, sizeof x);
    const float *in[1] = {x};
    CHECK_EQ_INT(exec_cpu_run_ex(g, in, 1, out, &st, err, sizeof err), 0);
    CHECK_EQ_INT(st.total_bytes, 10 * 4000);
    CHECK_EQ_INT(st.peak_bytes, 2 * 4000);
    CHECK(!memcmp(keep, x, sizeof x));
    free(out[0]);
    graph_free(g);
}

/* Split with an unused part, an input and a weight that are outputs themselves, a tensor
 * read twice by one node, and outputs listed twice. */
static void test_odd_shapes(void) {
    graph *g = graph_new("odd");
    int64_t d[2] = {2, 6}, wd[2] = {2, 2};
    int32_t x = graph_input(g, "x", 2, d);
    int32_t w = graph_weight_const(g, "w", 2, wd, 3.0f);
    int32_t parts[3];
    CHECK_EQ_INT(graph_split(g, x, 1, 3, NULL, parts), 3);
    int32_t s = graph_ewmul(g, parts[0], parts[0]);       /* (2,2) = x[:, 0:2]^2 */
    int32_t y = graph_ewadd(g, s, w);                     /* + 3 */
    int32_t z = graph_ewadd(g, parts[2], y);              /* x[:, 4:6] + x[:, 0:2]^2 + 3 */
    graph_mark_output(g, z);
    graph_mark_output(g, x);
    graph_mark_output(g, w);
    graph_mark_output(g, z);
    CHECK(graph_ok(g));
    float xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = (float)i - 5.0f;
    const float *in[1] = {xv};
    float *out[4] = {NULL};
    char err[256] = "";
    CHECK_EQ_INT(exec_cpu_run(g, in, 0, out, err, sizeof err), 0);
    if (out[0]) {
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < 2; c++) {
                float a = xv[r * 6 + c], b = xv[r * 6 + 4 + c];
                CHECK(out[0][r * 2 + c] == b + a * a + 3.0f);
            }
        CHECK(!memcmp(out[1], xv, sizeof xv));
        for (int i = 0; i < 4; i++)
            CHECK(out[2][i] == 3.0f);
        CHECK(!memcmp(out[3], out[0], 4 * sizeof(float)));
        CHECK(out[3] != out[0]); /* separate buffers, each the caller's to free */
    }
    for (int j = 0; j < 4; j++)
        free(out[j]);
    graph_free(g);
}

/* gather: generated ids lie in [0, rows of the table); given ids are range-checked. */
static void test_gather(void) {
    graph *g = graph_new("emb");
    int64_t td[2] = {5, 3}, idd[1] = {64};
    int32_t ids = graph_input_typed(g, "ids", GRAPH_DT_I64, 1, idd);
    int32_t tab = graph_weight_he(g, "table", 2, td);
    ops_params p;
    ops_params_default(OP_GATHER, &p);
    int32_t in2[2] = {tab, ids}, y;
    CHECK_EQ_INT(graph_add(g, "emb", OP_GATHER, &p, 2, in2, &y), 1);
    graph_mark_output(g, y);
    graph_mark_output(g, ids);
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "  %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    float *out[2] = {NULL, NULL};
    char err[256] = "";
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 3, out, err, sizeof err), 0);
    float *T = weight_values(g, tab);
    int seen[5] = {0};
    for (int i = 0; out[1] && i < 64; i++) {
        float id = out[1][i];
        CHECK(id == floorf(id) && id >= 0 && id < 5);
        if (!(id >= 0 && id < 5))
            continue;
        seen[(int)id] = 1;
        CHECK(!memcmp(&out[0][i * 3], &T[(int)id * 3], 3 * sizeof(float)));
    }
    CHECK_EQ_INT(seen[0] + seen[1] + seen[2] + seen[3] + seen[4], 5); /* 64 draws cover 5 values */
    free(out[0]);
    free(out[1]);

    float bad[64] = {0};
    bad[10] = 5.0f; /* one past the table */
    const float *in[1] = {bad};
    CHECK_EQ_INT(exec_cpu_run(g, in, 3, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "node 'emb'");
    CHECK_STR_CONTAINS(err, "element 10");
    CHECK(out[0] == NULL && out[1] == NULL);
    bad[10] = 1.5f;
    CHECK_EQ_INT(exec_cpu_run(g, in, 3, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "input 'ids'");
    CHECK_STR_CONTAINS(err, "not an integer");
    free(T);
    graph_free(g);
}

static graph *conv_net(void) {
    graph *g = graph_new("convnet");
    int64_t xd[4] = {2, 8, 12, 12}, wd[4] = {16, 8, 3, 3}, w2d[4] = {16, 16, 1, 1};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t w = graph_weight_he(g, "w", 4, wd), w2 = graph_weight_he(g, "w2", 4, w2d);
    int32_t c = graph_conv2d(g, x, w, 1, 1, OPS_PAD_SAME, OPS_ACT_RELU);
    int32_t c2 = graph_conv2d(g, c, w2, 2, 2, OPS_PAD_VALID, OPS_ACT_NONE);
    int32_t pool = graph_global_avgpool(g, c2);
    graph_mark_output(g, pool);
    graph_mark_output(g, c);
    return g;
}

/* The 3x3 conv checked against loops; then the same bytes for 1, 2 and 4 threads. */
static void test_conv_and_threads(void) {
    graph *g = conv_net();
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "  %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    char err[256] = "";
    float *ref[2] = {NULL, NULL};
    omp_set_num_threads(1);
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 11, ref, err, sizeof err), 0);
    float *x = malloc(2 * 8 * 12 * 12 * sizeof *x);
    graph_fill_normal(x, 2 * 8 * 12 * 12, 11, 0.0f, 1.0f);
    float *W = weight_values(g, graph_find_tensor(g, "w"));
    double worst = 0;
    for (int n = 0; ref[1] && n < 2; n++)
        for (int f = 0; f < 16; f++)
            for (int i = 0; i < 12; i++)
                for (int j = 0; j < 12; j++) {
                    double s = 0;
                    for (int c = 0; c < 8; c++)
                        for (int ki = 0; ki < 3; ki++)
                            for (int kj = 0; kj < 3; kj++) {
                                int ii = i + ki - 1, jj = j + kj - 1;
                                if (ii < 0 || ii >= 12 || jj < 0 || jj >= 12)
                                    continue;
                                s += (double)x[((n * 8 + c) * 12 + ii) * 12 + jj] * W[((f * 8 + c) * 3 + ki) * 3 + kj];
                            }
                    s = s > 0 ? s : 0;
                    double e = fabs(s - ref[1][((n * 16 + f) * 12 + i) * 12 + j]);
                    if (e > worst)
                        worst = e;
                }
    CHECK(worst < 1e-4);
    for (int t = 2; t <= 4; t += 2) {
        float *o[2] = {NULL, NULL};
        omp_set_num_threads(t);
        CHECK_EQ_INT(exec_cpu_run(g, NULL, 11, o, err, sizeof err), 0);
        CHECK(o[0] && !memcmp(o[0], ref[0], 2 * 16 * sizeof(float)));
        CHECK(o[1] && !memcmp(o[1], ref[1], 2 * 16 * 12 * 12 * sizeof(float)));
        free(o[0]);
        free(o[1]);
    }
    omp_set_num_threads(1);
    /* a different seed gives different values */
    float *o[2] = {NULL, NULL};
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 12, o, err, sizeof err), 0);
    CHECK(o[0] && memcmp(o[0], ref[0], 2 * 16 * sizeof(float)) != 0);
    free(o[0]);
    free(o[1]);
    free(ref[0]);
    free(ref[1]);
    free(x);
    free(W);
    graph_free(g);
}

static void test_compare(void) {
    const float a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
    exec_diff d = exec_compare(a, b, 3);
    CHECK_NEAR(d.rel_l2, 1.0 / sqrt(21.0), 1e-12);
    CHECK_NEAR(d.max_abs, 1.0, 0);
    CHECK_EQ_INT(d.nan_count, 0);
    d = exec_compare(a, a, 3);
    CHECK(d.rel_l2 == 0.0 && d.max_abs == 0.0);
    const float zero[2] = {0, 0}, small[2] = {1e-3f, 0};
    d = exec_compare(small, zero, 2);
    CHECK(d.rel_l2 > 1e20); /* relative to nothing: huge, not NaN */
    CHECK_NEAR(d.max_abs, 1e-3, 1e-9);
    const float n1[3] = {1, NAN, 3}, inf1[3] = {1, INFINITY, 3};
    d = exec_compare(n1, a, 3);
    CHECK_EQ_INT(d.nan_count, 1);
    CHECK(isinf(d.rel_l2) && isinf(d.max_abs));
    d = exec_compare(n1, n1, 3); /* NaN never agrees, even with itself */
    CHECK(isinf(d.rel_l2));
    d = exec_compare(inf1, inf1, 3);
    CHECK_EQ_INT(d.nan_count, 1);
    CHECK(d.rel_l2 == 0.0);
    d = exec_compare(a, n1, 3); /* a NaN in the reference is a mismatch too */
    CHECK_EQ_INT(d.nan_count, 0);
    CHECK(isinf(d.rel_l2));
    d = exec_compare(a, b, 0);
    CHECK(d.rel_l2 == 0.0 && d.nan_count == 0);
}

static void test_errors(void) {
    char err[512] = "";
    float *out[1] = {NULL};
    /* no output: refused by validation, with a message */
    graph *g = graph_new("empty");
    int64_t d[1] = {4};
    graph_input(g, "x", 1, d);
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, out, err, sizeof err), -1);
    CHECK(err[0] != '\0');
    graph_free(g);

    /* a weight whose data file does not exist */
    g = graph_new("filew");
    graph_init init = {.kind = GRAPH_INIT_FILE, .path = "/nonexistent/tasc/w.bin", .offset = 0};
    int32_t x = graph_input(g, "x", 1, d);
    int32_t w = graph_weight(g, "wfile", 1, d, init);
    graph_mark_output(g, graph_ewadd(g, x, w));
    CHECK(graph_ok(g));
    err[0] = '\0';
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "wfile");
    CHECK_STR_CONTAINS(err, "/nonexistent/tasc/w.bin");
    CHECK(out[0] == NULL);
    graph_free(g);

    /* a data file one float short */
    char path[] = "/tmp/tasc_test_exec_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    float three[3] = {1, 2, 3};
    fwrite(three, sizeof(float), 3, f);
    fclose(f);
    g = graph_new("shortw");
    init.path = path;
    x = graph_input(g, "x", 1, d);
    w = graph_weight(g, "wshort", 1, d, init);
    graph_mark_output(g, graph_ewadd(g, x, w));
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 0, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "wshort");
    graph_free(g);
    /* the same file, long enough with 3 elements, is read exactly */
    g = graph_new("okw");
    int64_t d3[1] = {3};
    x = graph_input(g, "x", 1, d3);
    w = graph_weight(g, "wok", 1, d3, init);
    graph_mark_output(g, graph_ewadd(g, x, w));
    const float zeros[3] = {0, 0, 0};
    const float *in[1] = {zeros};
    CHECK_EQ_INT(exec_cpu_run(g, in, 0, out, err, sizeof err), 0);
    CHECK(out[0] && out[0][0] == 1.0f && out[0][1] == 2.0f && out[0][2] == 3.0f);
    free(out[0]);
    graph_free(g);
    remove(path);
}

/* Random weights come from the cache after their first run and DATA weights from their blob
 * (the expected values use fmaf, as the matmul reference does):
 * same results, same statistics, the cache grows only by new weights, and the values are those
 * graph_weight_values gives. */
static void test_weight_cache(void) {
    exec_cache_clear();
    CHECK_EQ_INT(exec_cache_size(), 0);
    graph *g = graph_new("cached");
    int64_t xd[2] = {3, 40}, wd[2] = {40, 50}, vd[2] = {50, 7};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w = graph_weight_he(g, "w", 2, wd);
    float vals[350];
    for (int i = 0; i < 350; i++)
        vals[i] = (float)(i % 13) - 6.0f;
    graph_blob *blob = graph_blob_new(vals, 350);
    int32_t v = graph_weight_data(g, "v", 2, vd, blob);
    graph_blob_unref(blob);
    int32_t h = graph_matmul(g, x, w, OPS_ACT_RELU);
    graph_mark_output(g, graph_matmul(g, h, v, OPS_ACT_NONE));
    graph_mark_output(g, w); /* a cached weight that is itself an output: copied out */
    CHECK(graph_ok(g));
    float *o1[2] = {NULL}, *o2[2] = {NULL};
    exec_stats s1, s2;
    char err[256] = "";
    CHECK_EQ_INT(exec_cpu_run_ex(g, NULL, 5, o1, &s1, err, sizeof err), 0);
    CHECK_EQ_INT(exec_cache_size(), 40 * 50 * 4); /* w only: v is DATA, x an input */
    CHECK_EQ_INT(exec_cpu_run_ex(g, NULL, 5, o2, &s2, err, sizeof err), 0);
    CHECK_EQ_INT(exec_cache_size(), 40 * 50 * 4);
    CHECK(o1[0] && o2[0] && !memcmp(o1[0], o2[0], 3 * 7 * sizeof(float)));
    CHECK_EQ_INT(s1.total_bytes, s2.total_bytes);
    CHECK_EQ_INT(s1.peak_bytes, s2.peak_bytes);
    /* the counted bytes: x, w, v, h, the output (every buffer of the run, borrowed or not) */
    CHECK_EQ_INT(s1.total_bytes, (3 * 40 + 40 * 50 + 50 * 7 + 3 * 50 + 3 * 7) * 4);
    float *wv = weight_values(g, w);
    CHECK(o1[1] && !memcmp(o1[1], wv, 40 * 50 * sizeof(float)));
    CHECK(o1[1] != o2[1]);
    /* the same output computed by hand from the weights' values, given the generated input */
    float *xin = malloc(3 * 40 * sizeof(float));
    graph_fill_normal(xin, 3 * 40, 5, 0.0f, 1.0f);
    for (int i = 0; o1[0] && i < 3; i++)
        for (int j = 0; j < 7; j++) {
            float yv = 0.0f;
            for (int q = 0; q < 50; q++) {
                float hv = 0.0f;
                for (int k = 0; k < 40; k++)
                    hv = fmaf(xin[i * 40 + k], wv[k * 50 + q], hv);
                hv = hv < 0.0f ? 0.0f : hv;
                yv = fmaf(hv, vals[q * 7 + j], yv);
            }
            CHECK(o1[0][i * 7 + j] == yv);
        }
    /* a fresh graph with the same weight init shares the cached values */
    graph *g2 = graph_new("cached2");
    int32_t x2 = graph_input(g2, "x", 2, xd);
    graph_mark_output(g2, graph_matmul(g2, x2, graph_weight_he(g2, "w", 2, wd), OPS_ACT_RELU));
    float *o3[1] = {NULL};
    CHECK_EQ_INT(exec_cpu_run(g2, NULL, 5, o3, err, sizeof err), 0);
    CHECK_EQ_INT(exec_cache_size(), 40 * 50 * 4);
    for (int i = 0; o3[0] && i < 3; i++)
        for (int q = 0; q < 50; q++) {
            float hv = 0.0f;
            for (int k = 0; k < 40; k++)
                hv = fmaf(xin[i * 40 + k], wv[k * 50 + q], hv);
            CHECK(o3[0][i * 50 + q] == (hv < 0.0f ? 0.0f : hv));
        }
    exec_cache_clear();
    CHECK_EQ_INT(exec_cache_size(), 0);
    float *o4[2] = {NULL};
    CHECK_EQ_INT(exec_cpu_run(g, NULL, 5, o4, err, sizeof err), 0);
    CHECK(o4[0] && o1[0] && !memcmp(o4[0], o1[0], 3 * 7 * sizeof(float)));
    exec_cache_clear();
    for (int j = 0; j < 2; j++) {
        free(o1[j]);
        free(o2[j]);
        free(o4[j]);
    }
    free(o3[0]);
    free(wv);
    free(xin);
    graph_free(g);
    graph_free(g2);
}

int main(void) {
    test_mlp();
    test_weight_cache();
    test_generated_inputs();
    test_freeing();
    test_odd_shapes();
    test_gather();
    test_conv_and_threads();
    test_compare();
    test_errors();
    return TEST_REPORT();
}
