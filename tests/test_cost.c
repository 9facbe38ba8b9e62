/* test_cost.c: the analytic cost model's arithmetic (src/cost.h) on hand-computed nodes, its named
 * constants (cost_analytic_set: values, units, refusals), and the node-configuration text of the
 * measured model's cache: every node of the seven zoo models survives text -> parse -> text with
 * the same op, parameters and shapes, and malformed texts are refused with a message.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "test.h"
#include "zoo.h"

static ops_shape shape2(int64_t a, int64_t b) {
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 2;
    s.dims[0] = a;
    s.dims[1] = b;
    return s;
}

static ops_shape shape4(int64_t a, int64_t b, int64_t c, int64_t d) {
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 4;
    s.dims[0] = a;
    s.dims[1] = b;
    s.dims[2] = c;
    s.dims[3] = d;
    return s;
}

/* One node's analytic time with config c. */
static double node_us(const cost_analytic_config *c, ops_type op, const ops_params *p, int32_t n_in,
                      const ops_shape *in) {
    int32_t n_out = 0;
    ops_shape out[OPS_MAX_OUTPUTS];
    char err[256];
    if (ops_infer(op, p, n_in, in, &n_out, out, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return NAN;
    }
    cost_model *m = cost_analytic_new(c);
    double us = NAN;
    if (cost_node(m, op, p, n_in, in, n_out, out, &us, err, sizeof err) < 0)
        fprintf(stderr, "%s\n", err);
    cost_model_free(m);
    return us;
}

/* The model's arithmetic with the constants set here (not the fitted defaults). */
static void test_analytic_values(void) {
    cost_analytic_config c;
    cost_analytic_defaults(&c);
    char err[256];
    static const char *const base[] = {"launch_us=2", "min_us=1", "conv_min_us=3", "matmul_min_us=4",
                                       "conv_eff=1", "matmul_eff=1", "mem_eff=1", "peak_tflops=51",
                                       "bandwidth_tbs=3", "sms=132", "tile=64", "ksplit_min=128",
                                       "block_elems=1024"};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        CHECK(cost_analytic_set(&c, base[i], err, sizeof err) == 0);
    ops_params p;
    /* matmul 1024^3: 16 x 16 = 256 tiles of 64, no split-K (256 >= 132), 2 waves: eff 256/264 */
    ops_params_default(OP_MATMUL, &p);
    ops_shape mm[2] = {shape2(1024, 1024), shape2(1024, 1024)};
    double eff = 256.0 / 264.0, flops = 2.0 * 1024 * 1024 * 1024;
    double want = 2.0 + 1e6 * flops / (51e12 * eff);
    CHECK_NEAR(node_us(&c, OP_MATMUL, &p, 2, mm), want, 1e-6);
    /* the calibration factor scales the compute-bound term, the launch cost adds */
    cost_analytic_config h = c;
    CHECK(cost_analytic_set(&h, "matmul_eff=0.5", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&h, "launch_us=0.5", err, sizeof err) == 0);
    CHECK_NEAR(node_us(&h, OP_MATMUL, &p, 2, mm), 0.5 + 2e6 * flops / (51e12 * eff), 1e-6);
    /* conv_eff does not touch a matmul */
    cost_analytic_config cv = c;
    CHECK(cost_analytic_set(&cv, "conv_eff=0.25", err, sizeof err) == 0);
    CHECK_NEAR(node_us(&cv, OP_MATMUL, &p, 2, mm), want, 1e-6);
    /* a tiny matmul and a tiny conv take their own floors, a tiny relu min_us */
    ops_shape small[2] = {shape2(4, 4), shape2(4, 4)};
    CHECK_NEAR(node_us(&c, OP_MATMUL, &p, 2, small), 2.0 + 4.0, 1e-9);
    ops_params_default(OP_CONV2D, &p);
    ops_shape cin[2] = {shape4(1, 2, 4, 4), shape4(2, 2, 1, 1)};
    CHECK_NEAR(node_us(&c, OP_CONV2D, &p, 2, cin), 2.0 + 3.0, 1e-9);
    /* relu on 1x64x56x56: memory bound, 196 blocks of 1024 >= 132 SMs: eff 1 */
    ops_params_default(OP_RELU, &p);
    ops_shape r = shape4(1, 64, 56, 56);
    double bytes = 2.0 * 4 * 64 * 56 * 56;
    CHECK_NEAR(node_us(&c, OP_RELU, &p, 1, &r), 2.0 + fmax(1e6 * bytes / 3e12, 1.0), 1e-9);
    cost_analytic_config me = c;
    CHECK(cost_analytic_set(&me, "mem_eff=0.5", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&me, "bandwidth_tbs=2", err, sizeof err) == 0);
    CHECK_NEAR(node_us(&me, OP_RELU, &p, 1, &r), 2.0 + fmax(1e6 * bytes / (2e12 * 0.5), 1.0), 1e-9);
    CHECK(cost_analytic_set(&me, "mem_eff=4", err, sizeof err) == 0); /* data in L2: above 1 */
    CHECK_NEAR(node_us(&me, OP_RELU, &p, 1, &r), 2.0 + fmax(1e6 * bytes / (2e12 * 4), 1.0), 1e-9);
    ops_shape t = shape2(4, 4);
    CHECK_NEAR(node_us(&c, OP_RELU, &p, 1, &t), 3.0, 1e-9);
    cost_analytic_config mn = c;
    CHECK(cost_analytic_set(&mn, "min_us=0.25", err, sizeof err) == 0);
    CHECK_NEAR(node_us(&mn, OP_RELU, &p, 1, &t), 2.25, 1e-6);
}

static void test_analytic_set(void) {
    cost_analytic_config c;
    cost_analytic_defaults(&c);
    char err[512];
    CHECK(cost_analytic_set(&c, "peak_tflops=40", err, sizeof err) == 0);
    CHECK_NEAR(c.peak_flops, 40e12, 1.0);
    CHECK(cost_analytic_set(&c, "sms=114", err, sizeof err) == 0);
    CHECK_EQ_INT(c.sms, 114);
    double v = 0.0;
    int found = 0;
    for (int32_t i = 0; i < cost_analytic_n_params(); i++) {
        const char *name = cost_analytic_param(&c, i, &v);
        if (!strcmp(name, "peak_tflops")) {
            CHECK_NEAR(v, 40.0, 1e-9);
            found++;
        }
    }
    CHECK_EQ_INT(found, 1);
    CHECK(cost_analytic_param(&c, cost_analytic_n_params(), &v) == NULL);
    err[0] = '\0';
    CHECK(cost_analytic_set(&c, "warp_us=1", err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "launch_us");
    CHECK_STR_CONTAINS(err, "warp_us");
    CHECK(cost_analytic_set(&c, "sms=1.5", err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "sms");
    CHECK(cost_analytic_set(&c, "conv_eff=2", err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "conv_eff");
    CHECK(cost_analytic_set(&c, "mem_eff=17", err, sizeof err) < 0);
    CHECK(cost_analytic_set(&c, "launch_us=", err, sizeof err) < 0);
    CHECK(cost_analytic_set(&c, "launch_us", err, sizeof err) < 0);
    CHECK(cost_analytic_set(&c, "launch_us=1x", err, sizeof err) < 0);
    CHECK_EQ_INT(c.sms, 114); /* refusals change nothing */
}

/* Every node of every zoo model: text -> parse -> text is the identity, and the parse gives the
 * node's op, declared parameters and shapes. */
static void test_key_round_trip(void) {
    const char *const *names = zoo_names();
    int64_t nodes = 0, ops_seen[OP_COUNT] = {0};
    for (int32_t z = 0; names[z]; z++) {
        char err[512];
        graph *g = zoo_build(names[z], 1, err, sizeof err);
        CHECK(g != NULL);
        if (!g)
            continue;
        for (int32_t n = 0; n < g->n_nodes; n++) {
            const graph_node *nd = &g->nodes[n];
            ops_shape in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
            for (int32_t k = 0; k < nd->n_in; k++)
                in[k] = g->tensors[nd->in[k]].shape;
            char key[8192], again[8192];
            if (cost_key_text(nd->op, &nd->p, nd->n_in, in, key, sizeof key) < 0) {
                CHECK(!"key fits");
                continue;
            }
            ops_type op;
            ops_params p;
            int32_t n_in = -1, n_out = -1;
            ops_shape pin[OPS_MAX_INPUTS];
            if (cost_key_parse(key, &op, &p, &n_in, pin, &n_out, out, err, sizeof err) < 0) {
                fprintf(stderr, "%s: %s: %s\n", names[z], key, err);
                CHECK(!"key parses");
                continue;
            }
            int ok = op == nd->op && n_in == nd->n_in && n_out == nd->n_out;
            for (int32_t k = 0; ok && k < n_in; k++)
                ok = ops_shape_eq(&pin[k], &in[k]);
            for (int32_t k = 0; ok && k < n_out; k++)
                ok = ops_shape_eq(&out[k], &g->tensors[nd->out[k]].shape);
            const ops_desc *d = &ops_table[op];
            for (int32_t i = 0; ok && i < d->n_params; i++) {
                ops_param_key pk = d->params[i].key;
                ok = pk == PM_LIST ? p.n_list == nd->p.n_list &&
                                         !memcmp(p.list, nd->p.list, (size_t)p.n_list * sizeof p.list[0])
                                   : p.v[pk] == nd->p.v[pk];
            }
            ok = ok && cost_key_text(op, &p, n_in, pin, again, sizeof again) == 0 && !strcmp(key, again);
            if (!ok)
                fprintf(stderr, "%s: round trip of '%s' differs\n", names[z], key);
            CHECK(ok);
            nodes++;
            ops_seen[nd->op] = 1;
        }
        graph_free(g);
    }
    int64_t kinds = 0;
    for (int32_t i = 0; i < OP_COUNT; i++)
        kinds += ops_seen[i];
    printf("  key round trip: %lld nodes of %lld ops\n", (long long)nodes, (long long)kinds);
    CHECK(nodes > 1000);
    CHECK(kinds >= 12);
}

static void test_key_errors(void) {
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"", "op name"},
        {"conv3d (1,2)", "unknown op 'conv3d'"},
        {"relu x=1 (1,2)", "no parameter 'x'"},
        {"matmul (2,3);(4,5)", "matmul"},
        {"relu (1,2", "shape"},
        {"relu (1,-2)", "shape"},
        {"relu (1,2) extra", "unexpected text"},
        {"transpose list=[1,0 (2,3)", "list"},
        {"conv2d stride_h=x (1,3,8,8);(4,3,3,3)", "bad integer for parameter 'stride_h'"},
        {"conv2d act=swish (1,3,8,8);(4,3,3,3)", "parameter 'act'"},
        {"conv2d groups=0 (1,3,8,8);(4,3,3,3)", "groups"},
        {"batchnorm eps=abc (1,3,8,8);(3);(3);(3);(3)", "parameter 'eps'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ops_type op;
        ops_params p;
        int32_t n_in, n_out;
        ops_shape in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
        char err[512] = "";
        int rc = cost_key_parse(bad[i].text, &op, &p, &n_in, in, &n_out, out, err, sizeof err);
        if (rc == 0)
            fprintf(stderr, "accepted: '%s'\n", bad[i].text);
        CHECK(rc < 0);
        CHECK_STR_CONTAINS(err, bad[i].want);
    }
    /* parameters left out keep the op's defaults */
    ops_type op;
    ops_params p, d;
    int32_t n_in, n_out;
    ops_shape in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
    char err[512];
    CHECK(cost_key_parse("conv2d stride_h=2,stride_w=2 (1,3,8,8);(4,3,3,3)", &op, &p, &n_in, in, &n_out, out, err,
                         sizeof err) == 0);
    ops_params_default(OP_CONV2D, &d);
    CHECK_EQ_INT(op, OP_CONV2D);
    CHECK_EQ_INT(p.v[PM_STRIDE_H], 2);
    CHECK_EQ_INT(p.v[PM_GROUPS], d.v[PM_GROUPS]);
    CHECK_EQ_INT(n_in, 2);
    CHECK_EQ_INT(n_out, 1);
}

static void show_round(int round, double err2, void *arg) {
    (void)arg;
    printf("  fit round %d: %.3g\n", round, err2);
}

/* Samples made by the model itself under known constants: the fit from the defaults finds them. */
static void test_fit_recovers(void) {
    cost_analytic_config truth;
    cost_analytic_defaults(&truth);
    char err[512];
    CHECK(cost_analytic_set(&truth, "launch_us=0.8", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&truth, "min_us=1.7", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&truth, "conv_eff=0.45", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&truth, "matmul_eff=0.7", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&truth, "mem_eff=0.6", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&truth, "conv_min_us=9", err, sizeof err) == 0);
    CHECK(cost_analytic_set(&truth, "matmul_min_us=5", err, sizeof err) == 0);
    cost_sample *s = calloc(4096, sizeof *s);
    int32_t n = 0;
    const char *const *names = zoo_names();
    for (int32_t z = 0; names[z] && s; z++) {
        graph *g = zoo_build(names[z], 1, err, sizeof err);
        for (int32_t i = 0; g && i < g->n_nodes && n < 4096; i++) {
            const graph_node *nd = &g->nodes[i];
            if (nd->n_in == 0 || nd->n_in > COST_SAMPLE_MAX_IN)
                continue;
            cost_sample *e = &s[n++];
            e->op = nd->op;
            e->p = nd->p;
            e->n_in = nd->n_in;
            e->n_out = nd->n_out;
            for (int32_t k = 0; k < nd->n_in; k++)
                e->in[k] = g->tensors[nd->in[k]].shape;
            for (int32_t k = 0; k < nd->n_out; k++)
                e->out[k] = g->tensors[nd->out[k]].shape;
        }
        graph_free(g);
    }
    CHECK(n > 1000);
    double *pred = malloc((size_t)n * sizeof *pred), e2 = -1.0;
    CHECK(pred && cost_analytic_error(&truth, s, n, pred, &e2, err, sizeof err) == 0);
    for (int32_t i = 0; pred && i < n; i++)
        s[i].us = pred[i];
    CHECK(e2 > 1.0); /* against the zeros of calloc, floored at 0.05 us */
    CHECK(cost_analytic_error(&truth, s, n, NULL, &e2, err, sizeof err) == 0);
    CHECK_NEAR(e2, 0.0, 1e-20);
    /* from a start far from the truth */
    static const char *const start[] = {"launch_us=2",  "min_us=1",     "conv_min_us=1", "matmul_min_us=1",
                                        "conv_eff=1",   "matmul_eff=1", "mem_eff=1"};
    cost_analytic_config fit;
    cost_analytic_defaults(&fit);
    for (size_t i = 0; i < sizeof start / sizeof start[0]; i++)
        CHECK(cost_analytic_set(&fit, start[i], err, sizeof err) == 0);
    cost_analytic_config fit0 = fit;
    double before = 0.0, after = 1.0;
    CHECK(cost_analytic_error(&fit, s, n, NULL, &before, err, sizeof err) == 0);
    CHECK(cost_analytic_fit(&fit, s, n, show_round, NULL, err, sizeof err) == 0);
    CHECK(cost_analytic_error(&fit, s, n, NULL, &after, err, sizeof err) == 0);
    printf("  fit: mean squared log ratio %.5f -> %.7f; launch %.3f min %.3f conv %.3f matmul %.3f mem %.3f\n",
           before, after, fit.launch_us, fit.min_us, fit.conv_eff, fit.matmul_eff, fit.mem_eff);
    CHECK(before > 0.05);
    CHECK(after < 1e-4);
    CHECK_NEAR(fit.launch_us, 0.8, 0.05);
    CHECK_NEAR(fit.min_us, 1.7, 0.1);
    CHECK_NEAR(fit.conv_eff, 0.45, 0.02);
    CHECK_NEAR(fit.matmul_eff, 0.7, 0.03);
    CHECK_NEAR(fit.mem_eff, 0.6, 0.03);
    CHECK_NEAR(fit.conv_min_us, 9.0, 0.3);
    CHECK_NEAR(fit.matmul_min_us, 5.0, 0.3);
    /* the same samples, the same answer */
    cost_analytic_config again = fit0;
    CHECK(cost_analytic_fit(&again, s, n, NULL, NULL, err, sizeof err) == 0);
    CHECK(!memcmp(&again, &fit, sizeof fit));
    CHECK(cost_analytic_fit(&again, s, 0, NULL, NULL, err, sizeof err) < 0);
    free(pred);
    free(s);
}

static void test_cache_line(void) {
    char a[] = "NVIDIA H100\trelu (1,4)\t1.5", b[] = "# comment", c[] = "", d[] = "dev\trelu (1,4)\t-1",
         e[] = "dev\trelu (1,4)", f[] = "dev\trelu (1,4)\t1\t2", g[] = "\trelu (1,4)\t1", h[] = "dev\t\t1",
         i[] = "dev\tk\t1x";
    char *dev = NULL, *key = NULL;
    double us = 0.0;
    CHECK_EQ_INT(cost_cache_line(a, &dev, &key, &us), 1);
    CHECK(dev && !strcmp(dev, "NVIDIA H100") && key && !strcmp(key, "relu (1,4)"));
    CHECK_NEAR(us, 1.5, 0.0);
    CHECK_EQ_INT(cost_cache_line(b, &dev, &key, &us), 0);
    CHECK_EQ_INT(cost_cache_line(c, &dev, &key, &us), 0);
    char *bad[] = {d, e, f, g, h, i};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK_EQ_INT(cost_cache_line(bad[k], &dev, &key, &us), -1);
}

static int count_entry(void *arg, const char *device, const char *key, double us, char *err, size_t errlen) {
    int *n = arg;
    if (!strcmp(key, "stop (1)")) {
        snprintf(err, errlen, "told to stop on %s", device);
        return -1;
    }
    *n += us > 0.0;
    return 0;
}

/* cost_cache_read: entries in order, comments and CRLF skipped, errors named by file and line. */
static void test_cache_read(void) {
    char path[] = "/tmp/tasc_test_cost_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w+");
    fputs("# header\r\nd\trelu (1,4)\t1.5\r\n\nd\trelu (1,8)\t2\nd\tstop (1)\t3\nd\tbad\n", f);
    rewind(f);
    int n = 0;
    char err[512] = "";
    CHECK(cost_cache_read(f, path, count_entry, &n, err, sizeof err) < 0);
    CHECK_EQ_INT(n, 2);
    CHECK_STR_CONTAINS(err, ":5: told to stop on d");
    CHECK_STR_CONTAINS(err, path);
    fclose(f);
    f = fopen(path, "w");
    fputs("d\trelu (1,4)\t1.5\nd\tbad\n", f);
    fclose(f);
    f = fopen(path, "r");
    n = 0;
    CHECK(cost_cache_read(f, path, count_entry, &n, err, sizeof err) < 0);
    CHECK_EQ_INT(n, 1);
    CHECK_STR_CONTAINS(err, ":2: expected DEVICE<TAB>KEY<TAB>MICROSECONDS");
    fclose(f);
    remove(path);
}

int main(void) {
    test_cache_read();
    test_cache_line();
    test_fit_recovers();
    test_analytic_values();
    test_analytic_set();
    test_key_round_trip();
    test_key_errors();
    return TEST_REPORT();
}
