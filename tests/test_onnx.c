/* test_onnx.c: ONNX import, sidecar weights and export (graph/onnx.h).
 *
 * Real models (../shared/models/onnx, skipped with a note when absent): squeezenet1_1 and
 * bert_mini against their onnxruntime reference outputs (relative L2 < 1e-4, the measured errors
 * are printed), the graph-only resnet50 and bert_base refused without their weights and run with
 * --random-weights (finite outputs, deterministic values); squeezenet1_1 and bert_mini optimized
 * (built-in rewrites + rules/verified-3.json) still match the reference. Crafted models (tests/data/onnx, see
 * gen_onnx.py): the one-line unsupported-operator report, Pad folding and pad nodes, typed and
 * external data, missing data, symbolic dims, bad files (truncation and corruption sweeps),
 * --random-weights values by role on a 40-block chain (output std of order one, legacy values by option),
 * in-memory DATA weights (shared by clones, no file paths), sidecar files written by
 * graph_save_json (exact reload, alignment, determinism, no partial output), and export round trips
 * (import(export(g)) computes what g computes, for every op of the table via all_ops.json).
 * Activation subgraphs (SiLU, tanh- and erf-GELU) become one op; Reciprocal, InstanceNormalization
 * and GroupNormalization import as decompositions onto existing ops (norm_ops.onnx).
 * Shape subgraphs (tests/data/onnx/shapes, gen_shapes.py) fold to exactly the real tensor work,
 * and a tiny torchvision ViT of both torch exporters (gen_vit.py) matches torch's output; so does
 * a tiny Swin transformer (gen_swin.py), whose ScatterND masks fold at import and whose strided
 * slices run as splits and reshapes (tests/data/onnx/scatter, gen_scatter.py: values and errors).
 * Run from the repository root (CTest does).
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec.h"
#include "graph.h"
#include "onnx.h"
#include "rules.h"
#include "search.h"
#include "test.h"

#define DATA "tests/data/onnx/"
#define SHARED "../shared/models/onnx/"

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static graph *imp(const char *path, int random_weights, char *err, size_t errlen) {
    onnx_import_opts o;
    onnx_import_opts_default(&o);
    o.random_weights = random_weights;
    err[0] = '\0';
    return onnx_import(path, &o, err, errlen);
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int count_op(const graph *g, ops_type op) {
    int n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

/* Run g on the given inputs (NULL entries generated from seed 0); returns the outputs. */
static float **run(const graph *g, const float *const *in) {
    float **out = calloc((size_t)g->n_outputs + 1, sizeof *out);
    char err[512];
    const float **ins = calloc((size_t)g->n_inputs + 1, sizeof *ins);
    for (int32_t i = 0; i < g->n_inputs && in; i++)
        ins[i] = in[i];
    int rc = exec_cpu_run(g, ins, 0, out, err, sizeof err);
    free(ins);
    if (rc < 0) {
        fprintf(stderr, "run %s: %s\n", g->name, err);
        free(out);
        return NULL;
    }
    return out;
}

static void free_outs(const graph *g, float **out) {
    if (!out)
        return;
    for (int32_t i = 0; i < g->n_outputs; i++)
        free(out[i]);
    free(out);
}

/* Largest relative L2 error between the outputs of a and b on the same generated inputs. */
static double max_rel_err(const graph *a, const graph *b) {
    if (a->n_outputs != b->n_outputs)
        return INFINITY;
    float **oa = run(a, NULL), **ob = run(b, NULL);
    double worst = (oa && ob) ? 0.0 : INFINITY;
    for (int32_t j = 0; oa && ob && j < a->n_outputs; j++) {
        const ops_shape *sa = &a->tensors[a->outputs[j]].shape, *sb = &b->tensors[b->outputs[j]].shape;
        if (!ops_shape_eq(sa, sb)) {
            worst = INFINITY;
            break;
        }
        exec_diff d = exec_compare(ob[j], oa[j], ops_shape_numel(sa));
        if (d.nan_count || d.rel_l2 > worst)
            worst = d.nan_count ? INFINITY : d.rel_l2;
    }
    free_outs(a, oa);
    free_outs(b, ob);
    return worst;
}

/* 1 if a and b give byte-identical outputs on the same generated inputs. */
static int same_outputs(const graph *a, const graph *b) {
    if (a->n_outputs != b->n_outputs)
        return 0;
    float **oa = run(a, NULL), **ob = run(b, NULL);
    int same = oa && ob;
    for (int32_t j = 0; same && j < a->n_outputs; j++) {
        const ops_shape *sa = &a->tensors[a->outputs[j]].shape, *sb = &b->tensors[b->outputs[j]].shape;
        same = ops_shape_eq(sa, sb) && !memcmp(oa[j], ob[j], (size_t)ops_shape_numel(sa) * sizeof(float));
    }
    free_outs(a, oa);
    free_outs(b, ob);
    return same;
}

/* The one output of a run on the given inputs, compared with a reference .npy. */
static double ref_err(const graph *g, const char *const *in_files, const char *ref_file) {
    char err[512];
    const float *ins[4] = {0};
    float *bufs[4] = {0};
    for (int32_t i = 0; i < g->n_inputs && i < 4; i++) {
        ops_shape s;
        bufs[i] = npy_read(in_files[i], &s, err, sizeof err);
        CHECK(bufs[i] != NULL);
        if (!bufs[i])
            return INFINITY;
        CHECK(ops_shape_eq(&s, &g->tensors[g->inputs[i]].shape));
        ins[i] = bufs[i];
    }
    ops_shape rs;
    float *ref = npy_read(ref_file, &rs, err, sizeof err);
    float **out = run(g, ins);
    double e = INFINITY;
    if (ref && out && ops_shape_eq(&rs, &g->tensors[g->outputs[0]].shape)) {
        exec_diff d = exec_compare(out[0], ref, ops_shape_numel(&rs));
        e = d.nan_count ? INFINITY : d.rel_l2;
        printf("  %s vs %s: rel_l2 %.3e max_abs %.3e\n", g->name, ref_file, d.rel_l2, d.max_abs);
    }
    free_outs(g, out);
    free(ref);
    for (int i = 0; i < 4; i++)
        free(bufs[i]);
    return e;
}

/* All outputs finite; returns the number of non-finite values. */
static int64_t nonfinite(const graph *g) {
    float **out = run(g, NULL);
    if (!out)
        return -1;
    int64_t bad = 0;
    for (int32_t j = 0; j < g->n_outputs; j++) {
        int64_t n = ops_shape_numel(&g->tensors[g->outputs[j]].shape);
        for (int64_t k = 0; k < n; k++)
            bad += !isfinite(out[j][k]);
    }
    free_outs(g, out);
    return bad;
}

/* g optimized the way `tasc optimize` does it (built-in rewrites, the shipped 3-op rules, the
 * analytic cost model, a short search); the result must still match the onnxruntime reference and
 * cost less. Returns the optimized graph (caller frees) or NULL. */
static graph *optimized(const graph *g) {
    char err[512];
    rules_set *rs = rules_load("rules/verified-3.json", err, sizeof err);
    CHECK(rs != NULL);
    cost_model *cm = cost_analytic_new(NULL);
    search_opts o;
    search_opts_default(&o);
    o.budget = 50;
    o.time_limit_s = 0;
    graph *best = NULL;
    search_result res;
    memset(&res, 0, sizeof res);
    int rc = search_optimize(g, rs, cm, &o, &best, &res, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0) {
        printf("  %s optimized: %d -> %d nodes, cost %.1f -> %.1f us\n", g->name, (int)res.nodes_before,
               (int)res.nodes_after, res.cost_before, res.cost_after);
        CHECK(res.cost_after < res.cost_before);
    }
    search_result_free(&res);
    cost_model_free(cm);
    rules_set_free(rs);
    return best;
}

static void test_real_models(void) {
    char err[1024];
    if (!exists(SHARED "squeezenet1_1.onnx")) {
        printf("skipped: %s is absent\n", SHARED);
        return;
    }
    graph *g = imp(SHARED "squeezenet1_1.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(count_op(g, OP_CONV2D), 26);
        CHECK_EQ_INT(count_op(g, OP_RELU), 26);
        CHECK_EQ_INT(count_op(g, OP_CONCAT), 8);
        CHECK_EQ_INT(count_op(g, OP_MAXPOOL2D), 3);
        CHECK_EQ_INT(count_op(g, OP_GLOBALAVGPOOL), 1);
        CHECK_EQ_INT(g->n_weights, 34); /* Identity of an initializer is the same weight, not a copy */
        CHECK_EQ_INT(g->n_outputs, 1);
        CHECK(!strcmp(g->tensors[g->outputs[0]].name, "117"));
        const char *in[1] = {SHARED "squeezenet1_1.in.input.npy"};
        CHECK(ref_err(g, in, SHARED "squeezenet1_1.out.117.npy") < 1e-4);
        graph *opt = optimized(g);
        if (opt) {
            CHECK(opt->n_nodes < g->n_nodes);
            CHECK(ref_err(opt, in, SHARED "squeezenet1_1.out.117.npy") < 1e-4);
            graph_free(opt);
        }
        graph_free(g);
    }
    g = imp(SHARED "bert_mini.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->tensors[g->inputs[0]].dtype, GRAPH_DT_I64);
        CHECK_EQ_INT(count_op(g, OP_MATMUL), 16);
        CHECK_EQ_INT(count_op(g, OP_LAYERNORM), 5);
        CHECK_EQ_INT(count_op(g, OP_GATHER), 1); /* the token type and position lookups are folded */
        const char *in[1] = {SHARED "bert_mini.in.input_ids.npy"};
        CHECK(ref_err(g, in, SHARED "bert_mini.out.layer_norm_4.npy") < 1e-4);
        graph *opt = optimized(g);
        if (opt) {
            CHECK(ref_err(opt, in, SHARED "bert_mini.out.layer_norm_4.npy") < 1e-4);
            graph_free(opt);
        }
        graph_free(g);
    }
    /* graph-only models: a clear error without their weights, seeded random weights on request */
    g = imp(SHARED "resnet50.graph.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "resnet50.weights.bin");
    CHECK_STR_CONTAINS(err, "initializer '");
    CHECK_STR_CONTAINS(err, "--random-weights");
    CHECK(strchr(err, '\n') == NULL);
    g = imp(SHARED "resnet50.graph.onnx", 1, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(count_op(g, OP_CONV2D), 53);
        CHECK_EQ_INT(count_op(g, OP_EWADD), 16);
        CHECK_EQ_INT(count_op(g, OP_MATMUL), 1);
        CHECK_EQ_INT(g->tensors[g->outputs[0]].shape.dims[1], 1000);
        CHECK_EQ_INT(nonfinite(g), 0);
        /* the same seed gives the same weights, another seed others */
        onnx_import_opts o;
        onnx_import_opts_default(&o);
        o.random_weights = 1;
        graph *g2 = onnx_import(SHARED "resnet50.graph.onnx", &o, err, sizeof err);
        o.seed = 1;
        graph *g3 = onnx_import(SHARED "resnet50.graph.onnx", &o, err, sizeof err);
        CHECK(g2 && g3);
        if (g2 && g3) {
            int32_t t = g->weights[0];
            int64_t n = ops_shape_numel(&g->tensors[t].shape);
            float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *d = malloc((size_t)n * 4);
            CHECK(graph_weight_values(g, t, a, err, sizeof err) == 0);
            CHECK(graph_weight_values(g2, g2->weights[0], b, err, sizeof err) == 0);
            CHECK(graph_weight_values(g3, g3->weights[0], d, err, sizeof err) == 0);
            CHECK(memcmp(a, b, (size_t)n * 4) == 0);
            CHECK(memcmp(a, d, (size_t)n * 4) != 0);
            free(a);
            free(b);
            free(d);
        }
        graph_free(g2);
        graph_free(g3);
        graph_free(g);
    }
    g = imp(SHARED "bert_base.graph.onnx", 1, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(count_op(g, OP_MATMUL), 96);
        CHECK_EQ_INT(count_op(g, OP_LAYERNORM), 25);
        const ops_shape *s = &g->tensors[g->outputs[0]].shape;
        CHECK(s->rank == 3 && s->dims[1] == 128 && s->dims[2] == 768);
        CHECK_EQ_INT(nonfinite(g), 0);
        graph_free(g);
    }
}

static void test_errors(void) {
    char err[1024];
    graph *g = imp(DATA "unsupported.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK(!strcmp(err, DATA "unsupported.onnx: unsupported operators: NonMaxSuppression (x2, first 'nms_1'), "
                       "Loop (x1, first 'loop'), com.microsoft.FusedMatMul (x1, first 'fused')"));
    g = imp(DATA "opset12.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "opset 12 of the default domain is not supported (13 to 18)");
    g = imp(DATA "undefined.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "input 'nowhere' is not produced");
    g = imp(DATA "truncated.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "not a valid ONNX model");
    g = imp(DATA "no_such_file.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "no_such_file.onnx: cannot open");
    /* symbolic dims need a value */
    g = imp(DATA "symbolic.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "symbolic dimension 'batch'");
    onnx_import_opts o;
    onnx_import_opts_default(&o);
    const char *names[1] = {"batch"};
    const int64_t vals[1] = {3};
    o.n_dims = 1;
    o.dim_names = names;
    o.dim_values = vals;
    g = onnx_import(DATA "symbolic.onnx", &o, err, sizeof err);
    CHECK(g != NULL);
    if (g)
        CHECK_EQ_INT(g->tensors[g->inputs[0]].shape.dims[0], 3);
    graph_free(g);
    /* the element limit applies to imported tensors */
    onnx_import_opts_default(&o);
    o.max_elements = 100;
    g = onnx_import(DATA "conv_ops.onnx", &o, err, sizeof err);
    CHECK(g == NULL);
    CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
    /* empty and garbage buffers */
    g = onnx_import_buffer("", 0, "empty", NULL, NULL, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "empty: the model has no graph");
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x34};
    g = onnx_import_buffer(junk, sizeof junk, "junk", NULL, NULL, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "junk: ");
}

/* Every prefix and many single-byte corruptions of a model: an error line or a valid graph,
 * never a crash (the sanitizers watch). */
static void test_corruption(void) {
    size_t len = 0;
    uint8_t *buf = slurp(DATA "mlp_ops.onnx", &len);
    CHECK(buf != NULL);
    if (!buf)
        return;
    int errors = 0, graphs = 0, bad_msgs = 0;
    char err[1024];
    for (size_t cut = 0; cut < len; cut += 7) {
        graph *g = onnx_import_buffer(buf, cut, "cut", DATA, NULL, err, sizeof err);
        if (g) {
            graphs++;
            char v[512];
            CHECK(graph_validate(g, v, sizeof v) == 0);
        } else {
            errors++;
            bad_msgs += !err[0] || strchr(err, '\n') != NULL;
        }
        graph_free(g);
    }
    uint8_t *copy = malloc(len);
    for (size_t at = 0; at < len; at += 5) {
        memcpy(copy, buf, len);
        copy[at] ^= (uint8_t)(0x5a + at);
        graph *g = onnx_import_buffer(copy, len, "flip", DATA, NULL, err, sizeof err);
        if (g) {
            graphs++;
            char v[512];
            CHECK(graph_validate(g, v, sizeof v) == 0);
        } else {
            errors++;
            bad_msgs += !err[0] || strchr(err, '\n') != NULL;
        }
        graph_free(g);
    }
    printf("  corruption sweep: %d errors, %d still valid graphs\n", errors, graphs);
    CHECK(errors > 0);
    CHECK_EQ_INT(bad_msgs, 0);
    free(copy);
    free(buf);
}

static void test_data_kinds(void) {
    char err[1024];
    /* typed fields */
    graph *g = imp(DATA "typed.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        int32_t b = graph_find_tensor(g, "b");
        CHECK(b >= 0);
        if (b >= 0) {
            float v[4];
            CHECK(graph_weight_values(g, b, v, err, sizeof err) == 0);
            CHECK(v[0] == 0.5f && v[1] == -0.5f && v[2] == 0.25f && v[3] == 0.0f);
        }
        graph_free(g);
    }
    /* external data: float weights stay in their file; the int64 shape read from it too */
    g = imp(DATA "ext_data.onnx", 0, err, sizeof err);
    graph *g2 = imp(DATA "ext_shape.onnx", 0, err, sizeof err);
    CHECK(g && g2);
    if (g && g2) {
        int32_t w = graph_find_tensor(g, "w");
        CHECK(w >= 0);
        if (w >= 0) {
            CHECK_EQ_INT(g->tensors[w].init.kind, GRAPH_INIT_FILE);
            CHECK(g->tensors[w].init.path && !strcmp(g->tensors[w].init.path, "ext_data.bin"));
            CHECK_EQ_INT(g->tensors[w].init.offset, 32);
        }
        CHECK(max_rel_err(g, g2) == 0.0);
    }
    graph_free(g);
    graph_free(g2);
    /* missing external data */
    g = imp(DATA "ext_missing.onnx", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "initializer 'w': external data file '" DATA "missing.bin' is missing");
    g = imp(DATA "ext_missing.onnx", 1, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        /* the Reshape's shape came from the recorded output shape, the variances are ones */
        const ops_shape *s = &g->tensors[g->outputs[0]].shape;
        CHECK(s->rank == 3 && s->dims[0] == 1 && s->dims[1] == 4 && s->dims[2] == 25);
        int found = 0;
        for (int32_t i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].op == OP_BATCHNORM) {
                const graph_tensor *v = &g->tensors[g->nodes[i].in[4]];
                found = v->init.kind == GRAPH_INIT_CONSTANT && v->init.value == 1.0f;
            }
        CHECK(found);
        CHECK_EQ_INT(nonfinite(g), 0);
        graph_free(g);
    }
}

/* Standard deviation of output j of g on the generated inputs (NAN if the run fails). */
static double output_std(const graph *g, int32_t j) {
    float **out = run(g, NULL);
    if (!out)
        return NAN;
    int64_t n = ops_shape_numel(&g->tensors[g->outputs[j]].shape);
    double s = 0.0, s2 = 0.0;
    for (int64_t k = 0; k < n; k++) {
        s += out[j][k];
        s2 += (double)out[j][k] * out[j][k];
    }
    free_outs(g, out);
    double m = s / (double)n;
    return sqrt(fmax(s2 / (double)n - m * m, 0.0));
}

/* The init of weight `name`, or NULL. */
static const graph_init *init_of(const graph *g, const char *name) {
    int32_t t = graph_find_tensor(g, name);
    return t >= 0 && g->tensors[t].kind == GRAPH_T_WEIGHT ? &g->tensors[t].init : NULL;
}

static int is_const_init(const graph *g, const char *name, float value) {
    const graph_init *in = init_of(g, name);
    return in && in->kind == GRAPH_INIT_CONSTANT && in->value == value;
}

/* --random-weights by role (deep_missing.onnx: 40 Conv+BN+Relu blocks, Gemm, LayerNorm, MatMul;
 * deep_residual.onnx: 40 residual blocks): fan-in-scaled kernels, identity normalisations, zero
 * biases, scaled residual branches, so the outputs stay of order one; the legacy values
 * (random_weights 2) let the conv chain fade and the residual one explode. Deterministic. */
static void test_random_by_role(void) {
    char err[1024];
    graph *g = imp(DATA "deep_missing.onnx", 1, err, sizeof err);
    CHECK(g != NULL);
    if (!g)
        return;
    const graph_init *w0 = init_of(g, "w0"), *mw = init_of(g, "mw");
    CHECK(w0 && w0->kind == GRAPH_INIT_RANDOM && w0->std == (float)sqrt(2.0 / (16 * 9)));
    CHECK(mw && mw->kind == GRAPH_INIT_RANDOM && mw->std == (float)sqrt(2.0 / 256)); /* (K,N): K, not N */
    CHECK(is_const_init(g, "cb0", 0.0f) && is_const_init(g, "s0", 1.0f) && is_const_init(g, "bb0", 0.0f));
    CHECK(is_const_init(g, "m0", 0.0f) && is_const_init(g, "gb", 0.0f) && is_const_init(g, "mb", 0.0f));
    CHECK(is_const_init(g, "ln_s", 1.0f) && is_const_init(g, "ln_b", 0.0f));
    /* Gemm's B (256,1024) under transB, transposed at import: std sqrt(2/1024) */
    int32_t b = graph_find_tensor(g, "gemm/B");
    CHECK(b >= 0);
    if (b >= 0) {
        int64_t n = ops_shape_numel(&g->tensors[b].shape);
        float *v = malloc((size_t)n * sizeof *v);
        CHECK(graph_weight_values(g, b, v, err, sizeof err) == 0);
        double s2 = 0.0;
        for (int64_t k = 0; k < n; k++)
            s2 += (double)v[k] * v[k];
        double sd = sqrt(s2 / (double)n);
        printf("  deep_missing: Gemm B std %.5f (want %.5f)\n", sd, sqrt(2.0 / 1024));
        CHECK(fabs(sd / sqrt(2.0 / 1024) - 1.0) < 0.02);
        free(v);
    }
    double chain = output_std(g, 0), head = output_std(g, 1);
    printf("  deep_missing by role: output std %.4f (40 blocks), %.4f (head)\n", chain, head);
    CHECK(chain >= 0.1 && chain <= 10.0);
    CHECK(head >= 0.1 && head <= 10.0);
    graph *g2 = imp(DATA "deep_missing.onnx", 1, err, sizeof err);
    CHECK(g2 && same_outputs(g, g2));
    graph_free(g2);
    graph *legacy = imp(DATA "deep_missing.onnx", 2, err, sizeof err);
    CHECK(legacy != NULL);
    if (legacy) {
        const graph_init *lw = init_of(legacy, "mw"), *ls = init_of(legacy, "s0");
        CHECK(lw && lw->kind == GRAPH_INIT_RANDOM && lw->std == (float)sqrt(2.0 / 64));
        CHECK(ls && ls->kind == GRAPH_INIT_RANDOM && ls->std == 0.1f);
        double lchain = output_std(legacy, 0);
        printf("  deep_missing legacy: output std %.4f (40 blocks)\n", lchain);
        CHECK(lchain < 0.1);
        graph_free(legacy);
    }
    graph_free(g);
    /* 40 residual blocks x + f(x): each branch's last kernel scaled by 1/sqrt(40), the projection
     * block's two kernels by 1/sqrt(2); the legacy values double the variance at every block */
    g = imp(DATA "deep_residual.onnx", 1, err, sizeof err);
    legacy = imp(DATA "deep_residual.onnx", 2, err, sizeof err);
    CHECK(g && legacy);
    if (g && legacy) {
        const graph_init *a1 = init_of(g, "a1_w"), *b1 = init_of(g, "b1_w"), *pj = init_of(g, "proj_w");
        CHECK(a1 && a1->std == (float)sqrt(2.0 / 144));
        CHECK(b1 && b1->std == (float)(sqrt(2.0 / 144) / sqrt(40.0)));
        CHECK(pj && pj->std == (float)(sqrt(2.0 / 27) * sqrt(0.5)));
        double sd = output_std(g, 0), lsd = output_std(legacy, 0);
        printf("  deep_residual: output std %.4f by role, %.4g legacy\n", sd, lsd);
        CHECK(sd >= 0.1 && sd <= 10.0);
        CHECK(lsd > 1e3);
    }
    graph_free(g);
    graph_free(legacy);
}

static int64_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

static int same_file(const char *a, const char *b) {
    size_t la, lb;
    uint8_t *x = slurp(a, &la), *y = slurp(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

static void test_sidecar(void) {
    char err[1024], dir[] = "/tmp/tasc-test-onnx-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char json[256], json2[256], side[256], side2[256];
    snprintf(json, sizeof json, "%s/m.json", dir);
    snprintf(json2, sizeof json2, "%s/m2.json", dir);
    snprintf(side, sizeof side, "%s/m.weights.bin", dir);
    snprintf(side2, sizeof side2, "%s/m2.weights.bin", dir);
    char *sp = onnx_sidecar_path(json);
    CHECK(!strcmp(sp, side));
    free(sp);
    sp = onnx_sidecar_path("model");
    CHECK(!strcmp(sp, "model.weights.bin"));
    free(sp);
    graph *g = imp(DATA "mlp_ops.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (!g)
        return;
    /* values held in the model are DATA weights: in memory, no file behind them, shared by clones */
    int n_data = 0, n_path = 0;
    graph *cl = graph_clone(g);
    for (int32_t i = 0; i < g->n_weights; i++) {
        const graph_tensor *ts = &g->tensors[g->weights[i]];
        n_path += ts->init.path != NULL;
        if (ts->init.kind != GRAPH_INIT_DATA)
            continue;
        n_data++;
        CHECK(cl->tensors[cl->weights[i]].init.blob == ts->init.blob);
        CHECK(graph_blob_refs(ts->init.blob) >= 2);
    }
    graph_free(cl);
    CHECK(n_data >= 4);
    CHECK_EQ_INT(n_path, 0);
    CHECK(graph_to_json_string(g) == NULL); /* values in memory only go to a sidecar */
    CHECK(graph_save_json(g, json, err, sizeof err) == 0);
    CHECK(onnx_save_model(g, json2, err, sizeof err) == 0); /* the old name: the same function */
    CHECK(file_size(side) > 0);
    CHECK(same_file(side, side2)); /* deterministic */
    graph *r = graph_load_json(json, 0, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        int64_t end = 0;
        for (int32_t i = 0; i < r->n_weights; i++) {
            const graph_tensor *ts = &r->tensors[r->weights[i]];
            if (ts->init.kind != GRAPH_INIT_FILE)
                continue;
            CHECK(!strcmp(ts->init.path, "m.weights.bin"));
            CHECK_EQ_INT(ts->init.offset % ONNX_SIDECAR_ALIGN, 0);
            int64_t e = ts->init.offset + 4 * ops_shape_numel(&ts->shape);
            if (e > end)
                end = e;
        }
        CHECK_EQ_INT(end, file_size(side));
        CHECK(same_outputs(g, r)); /* import -> save -> load -> run: the same bytes */
        /* saving the reloaded model again gives the same sidecar */
        char json3[256], side3[256];
        snprintf(json3, sizeof json3, "%s/m3.json", dir);
        snprintf(side3, sizeof side3, "%s/m3.weights.bin", dir);
        CHECK(graph_save_json(r, json3, err, sizeof err) == 0);
        CHECK(same_file(side, side3));
        unlink(json3);
        unlink(side3);
        graph_free(r);
    }
    /* external data (FILE weights relative to the model's folder) saved into another folder: the
     * values are copied into the sidecar, and the saved model computes the same bytes */
    graph *ge = imp(DATA "ext_data.onnx", 0, err, sizeof err);
    CHECK(ge != NULL);
    if (ge) {
        char je[256], se[256];
        snprintf(je, sizeof je, "%s/ext.json", dir);
        snprintf(se, sizeof se, "%s/ext.weights.bin", dir);
        CHECK(graph_save_json(ge, je, err, sizeof err) == 0);
        graph *re = graph_load_json(je, 0, err, sizeof err);
        CHECK(re != NULL);
        if (re) {
            int32_t w = graph_find_tensor(re, "w");
            CHECK(w >= 0 && !strcmp(re->tensors[w].init.path, "ext.weights.bin"));
            CHECK(same_outputs(ge, re));
            graph_free(re);
        }
        unlink(je);
        unlink(se);
        graph_free(ge);
    }
    /* a folder that does not exist: an error, and nothing written */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/nope/m.json", dir);
    CHECK(graph_save_json(g, bad, err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "nope/m.weights.bin");
    /* no temporaries left behind */
    DIR *d = opendir(dir);
    int n = 0, tmp = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        n++;
        tmp += strstr(de->d_name, ".tmp") != NULL;
    }
    if (d)
        closedir(d);
    CHECK_EQ_INT(n, 4);
    CHECK_EQ_INT(tmp, 0);
    unlink(json);
    unlink(json2);
    unlink(side);
    unlink(side2);
    rmdir(dir);
    graph_free(g);
}

/* import(export(g)) runs like g. */
static void check_roundtrip(graph *g, const char *what) {
    char err[1024];
    size_t len = 0;
    uint8_t *buf = onnx_export_buffer(g, &len, err, sizeof err);
    CHECK(buf != NULL);
    if (!buf) {
        fprintf(stderr, "export %s: %s\n", what, err);
        return;
    }
    graph *r = onnx_import_buffer(buf, len, what, NULL, NULL, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        double e = max_rel_err(g, r);
        printf("  round trip %s: %d nodes -> %zu bytes -> %d nodes, max rel_l2 %.3e\n", what, (int)g->n_nodes, len,
               (int)r->n_nodes, e);
        CHECK(e < 1e-6);
        for (int32_t j = 0; j < g->n_outputs && j < r->n_outputs; j++)
            CHECK(!strcmp(g->tensors[g->outputs[j]].name, r->tensors[r->outputs[j]].name));
        /* exporting is deterministic */
        size_t len2 = 0;
        uint8_t *buf2 = onnx_export_buffer(g, &len2, err, sizeof err);
        CHECK(buf2 && len2 == len && !memcmp(buf, buf2, len));
        free(buf2);
    } else {
        fprintf(stderr, "reimport %s: %s\n", what, err);
    }
    graph_free(r);
    free(buf);
}

/* HardSwish imports as hardswish (conv_ops.onnx) and exports as HardSwish: its ONNX form in the
 * op table serves both directions. */
static void test_hardswish(void) {
    char err[1024];
    graph *g = imp(DATA "conv_ops.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK_EQ_INT(count_op(g, OP_HARDSWISH), 1);
    size_t len = 0;
    uint8_t *buf = onnx_export_buffer(g, &len, err, sizeof err);
    CHECK(buf != NULL);
    if (buf) {
        int found = 0;
        for (size_t i = 0; i + 9 <= len && !found; i++)
            found = !memcmp(buf + i, "HardSwish", 9);
        CHECK(found);
        graph *r = onnx_import_buffer(buf, len, "hardswish", NULL, NULL, err, sizeof err);
        CHECK(r != NULL);
        if (r)
            CHECK_EQ_INT(count_op(r, OP_HARDSWISH), 1);
        graph_free(r);
    }
    free(buf);
    graph_free(g);
}

/* GPT-2's tanh-GELU over x (1,16) with the constant 0.5 as half; the tanh's output also a graph
 * output when tanh_out. */
static graph *gelu_tanh_graph(float half, int tanh_out) {
    graph *g = graph_new("gelu_pattern");
    int64_t d[2] = {1, 16};
    int32_t x = graph_input(g, "x", 2, d);
    int32_t h = graph_weight_const(g, "half", 0, NULL, half), c3 = graph_weight_const(g, "three", 0, NULL, 3.0f);
    int32_t k = graph_weight_const(g, "k", 0, NULL, 0.044715f), one = graph_weight_const(g, "one", 0, NULL, 1.0f);
    int32_t r = graph_weight_const(g, "r", 0, NULL, 0.7978845608f), p, t;
    graph_add(g, NULL, OP_POW, NULL, 2, (int32_t[]){x, c3}, &p);
    int32_t a = graph_ewadd(g, graph_ewmul(g, k, p), x);
    graph_add(g, NULL, OP_TANH, NULL, 1, (int32_t[]){graph_ewmul(g, r, a)}, &t);
    graph_mark_output(g, graph_ewmul(g, graph_ewadd(g, t, one), graph_ewmul(g, x, h)));
    if (tanh_out)
        graph_mark_output(g, t);
    return g;
}

/* The graph g through ONNX (exported, imported again); NULL after a message. */
static graph *through_onnx(const graph *g, const char *what) {
    char err[1024];
    size_t len = 0;
    uint8_t *buf = onnx_export_buffer(g, &len, err, sizeof err);
    graph *r = buf ? onnx_import_buffer(buf, len, what, NULL, NULL, err, sizeof err) : NULL;
    if (!r)
        fprintf(stderr, "%s: %s\n", what, err);
    free(buf);
    return r;
}

/* Activation subgraphs become one op at import (onnx_pattern.c): SiLU, GELU's tanh form and GELU's
 * erf form in six orders (gen_onnx.py erf_gelus), the GELUs moved before the reshape that follows
 * their matmul; exported again, they come back. A squeeze-excitation gate, a wrong constant, Div's
 * operands the other way round or an inner value read elsewhere keep the nodes. */
static void test_act_patterns(void) {
    char err[1024];
    graph *g = imp(DATA "act_patterns.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (!g)
        return;
    for (int pass = 0; pass < 2 && g; pass++) {
        CHECK_EQ_INT(count_op(g, OP_SILU), 2);
        CHECK_EQ_INT(count_op(g, OP_GELU_TANH), 1);
        CHECK_EQ_INT(count_op(g, OP_GELU), 6);
        CHECK_EQ_INT(count_op(g, OP_SIGMOID), 1); /* the gate */
        CHECK_EQ_INT(count_op(g, OP_EWMUL), 1 + 3 * 2); /* the gate's, two in each look-alike */
        CHECK_EQ_INT(count_op(g, OP_ERF), 3);
        CHECK_EQ_INT(count_op(g, OP_EWDIV), 3);
        CHECK_EQ_INT(count_op(g, OP_EWADD), 1 + 3 + 1); /* a bias, the look-alikes' 1 + erf, 'shared' */
        CHECK_EQ_INT(count_op(g, OP_TANH) + count_op(g, OP_POW), 0);
        int on_matmul = 0, on_bias = 0;
        for (int32_t i = 0; i < g->n_nodes; i++) {
            ops_type op = g->nodes[i].op;
            if (op != OP_GELU && op != OP_GELU_TANH)
                continue;
            int32_t pn = g->tensors[g->nodes[i].in[0]].producer;
            ops_type before = pn >= 0 ? g->nodes[pn].op : OP_COUNT;
            if (op == OP_GELU_TANH) /* reads the matmul, before the reshape */
                CHECK_EQ_INT(before, OP_MATMUL);
            on_matmul += op == OP_GELU && before == OP_MATMUL; /* one moved before its reshape */
            on_bias += op == OP_GELU && before == OP_EWADD;
        }
        CHECK_EQ_INT(on_matmul, 5);
        CHECK_EQ_INT(on_bias, 1);
        CHECK_EQ_INT(g->nodes[g->tensors[g->outputs[0]].producer].op, OP_RESHAPE);
        CHECK_EQ_INT(g->nodes[g->tensors[g->outputs[5]].producer].op, OP_RESHAPE); /* erf_gelus' 'reshape' */
        if (pass == 0)
            check_roundtrip(g, "act_patterns.onnx");
        graph *r = pass == 0 ? through_onnx(g, "act_patterns export") : NULL;
        graph_free(g);
        g = r;
    }
    graph_free(g);
    const struct {
        float half;
        int tanh_out, want;
    } cases[] = {{0.5f, 0, 1}, {0.6f, 0, 0}, {0.5f, 1, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        graph *p = gelu_tanh_graph(cases[c].half, cases[c].tanh_out);
        CHECK(graph_ok(p));
        graph *r = through_onnx(p, "gelu pattern");
        CHECK(r != NULL);
        if (r) {
            CHECK_EQ_INT(count_op(r, OP_GELU_TANH), cases[c].want);
            CHECK_EQ_INT(count_op(r, OP_TANH), 1 - cases[c].want);
            check_roundtrip(p, "gelu pattern");
        }
        graph_free(r);
        graph_free(p);
    }
}

/* The weight read by the only ewmul that multiplies by a 4-element weight, or NULL. */
static const graph_tensor *mul_weight4(const graph *g) {
    for (int32_t i = 0; i < g->n_nodes; i++)
        for (int32_t k = 0; k < g->nodes[i].n_in && g->nodes[i].op == OP_EWMUL; k++) {
            const graph_tensor *t = &g->tensors[g->nodes[i].in[k]];
            if (t->kind == GRAPH_T_WEIGHT && ops_shape_numel(&t->shape) == 4)
                return t;
        }
    return NULL;
}

/* Reciprocal, InstanceNormalization and GroupNormalization (norm_ops.onnx, gen_onnx.py) import as
 * ewdiv, layernorm over the trailing dims (grouped first by reshapes) and per-channel ewmul /
 * ewadd, with identity affines left out (torch's GroupNorm export feeds its InstanceNormalization
 * ones and zeros); a Reciprocal of a constant folds. The outputs are normalised per group (the
 * values against onnxruntime: cli_onnx_ort.sh). Malformed normalisations are one line naming the
 * node. */
static void test_norm_ops(void) {
    char err[1024];
    graph *g = imp(DATA "norm_ops.onnx", 0, err, sizeof err);
    if (!g)
        fprintf(stderr, "norm_ops.onnx: %s\n", err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(count_op(g, OP_LAYERNORM), 5);
        CHECK_EQ_INT(count_op(g, OP_EWDIV), 1);
        CHECK_EQ_INT(count_op(g, OP_EWMUL), 6);
        CHECK_EQ_INT(count_op(g, OP_EWADD), 5);
        CHECK_EQ_INT(count_op(g, OP_RESHAPE), 7);
        CHECK_EQ_INT(g->n_nodes, 24);
        const graph_tensor *w = mul_weight4(g); /* 1 / (2, 4, -0.5, 8), folded */
        float v[4] = {0};
        CHECK(w != NULL && graph_weight_values(g, (int32_t)(w - g->tensors), v, err, sizeof err) == 0);
        CHECK(v[0] == 0.5f && v[1] == 0.25f && v[2] == -2.0f && v[3] == 0.125f);
        float **out = run(g, NULL);
        CHECK(out != NULL);
        for (int32_t grp = 0; out && grp < 2 * 2; grp++) { /* gnorm2: 2 groups of 3 x 12 values */
            double m = 0, q = 0;
            for (int j = 0; j < 36; j++)
                m += out[4][grp * 36 + j] / 36.0;
            for (int j = 0; j < 36; j++)
                q += (out[4][grp * 36 + j] - m) * (out[4][grp * 36 + j] - m) / 36.0;
            CHECK_NEAR(m, 0.0, 1e-5);
            CHECK_NEAR(q, 1.0, 1e-3);
        }
        free_outs(g, out);
        check_roundtrip(g, "norm_ops.onnx");
    }
    graph_free(g);
    const struct {
        const char *file, *msg;
    } bad[] = {
        {DATA "norm_bad_groups.onnx", "node 'gn_bad' (GroupNormalization): num_groups 4 does not divide the 6 channels"},
        {DATA "norm_bad_rank.onnx", "node 'in_rank' (InstanceNormalization): input 'x' has the shape (2,6)"},
        {DATA "norm_bad_scale.onnx", "node 'in_scale' (InstanceNormalization): scale 's' has the shape (5), not (6)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = imp(bad[k].file, 0, err, sizeof err);
        CHECK(g == NULL);
        graph_free(g);
        CHECK_STR_CONTAINS(err, bad[k].msg);
        CHECK(strncmp(err, bad[k].file, strlen(bad[k].file)) == 0 && strchr(err, '\n') == NULL);
    }
}

/* Resize, Pad and ReduceMax (data_ops.onnx, data_ops18.onnx; onnxruntime's values in
 * cli_onnx_ort.sh): nodes of the new ops; the zero Pad of pad_relu.onnx folded into its Conv and a
 * pad node for the Relu and the graph output; one-line errors naming node and attribute. */
static void test_data_ops(void) {
    char err[1024];
    graph *g = imp(DATA "data_ops.onnx", 0, err, sizeof err);
    if (!g)
        fprintf(stderr, "data_ops.onnx: %s\n", err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(count_op(g, OP_RESIZE), 10);
        CHECK_EQ_INT(count_op(g, OP_PAD), 4);
        CHECK_EQ_INT(count_op(g, OP_REDUCEMAX), 3);
        CHECK_EQ_INT(count_op(g, OP_RESHAPE), 3); /* x5, and the rank-5 Pad's merge of dims 0, 1 and back */
        CHECK_EQ_INT(g->n_nodes, 20);
        check_roundtrip(g, "data_ops.onnx");
    }
    graph_free(g);
    g = imp(DATA "data_ops18.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(count_op(g, OP_RESIZE) + count_op(g, OP_PAD) + count_op(g, OP_REDUCEMAX), 3);
        check_roundtrip(g, "data_ops18.onnx");
    }
    graph_free(g);
    g = imp(DATA "pad_relu.onnx", 0, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->n_nodes, 4);
        CHECK_EQ_INT(count_op(g, OP_PAD), 2); /* the Relu's and the graph output's */
        int32_t conv = -1;
        for (int32_t k = 0; k < g->n_nodes; k++)
            if (g->nodes[k].op == OP_CONV2D)
                conv = k;
        CHECK(conv >= 0 && g->nodes[conv].p.v[PM_PAD_T] == 1 && g->nodes[conv].p.v[PM_PAD_R] == 1);
        check_roundtrip(g, "pad_relu.onnx");
    }
    graph_free(g);
    const struct {
        const char *file, *msg;
    } bad[] = {
        {DATA "data_bad_cubic.onnx", "Resize (x1, first 'rz': attribute mode = 'cubic' (supported: nearest, linear))"},
        {DATA "data_bad_channels.onnx", "Resize (x1, first 'rz': resizing dim 1 of a rank-4 input"},
        {DATA "data_bad_dynpads.onnx", "Pad (x1, first 'pd': the pads must be a constant ('pads' is computed"},
        {DATA "data_bad_reflect.onnx", "node 'pd' (Pad): reflect pads 5, 0 of dim 2 must be smaller than the dim (5)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = imp(bad[k].file, 0, err, sizeof err);
        CHECK(g == NULL);
        graph_free(g);
        CHECK_STR_CONTAINS(err, bad[k].msg);
        CHECK(strncmp(err, bad[k].file, strlen(bad[k].file)) == 0 && strchr(err, '\n') == NULL);
    }
}

static void test_export(void) {
    char err[1024];
    const char *crafted[] = {DATA "conv_ops.onnx", DATA "mlp_ops.onnx", DATA "typed.onnx", DATA "reduce_ops.onnx",
                             DATA "opset18.onnx"};
    for (size_t k = 0; k < sizeof crafted / sizeof crafted[0]; k++) {
        graph *g = imp(crafted[k], 0, err, sizeof err);
        CHECK(g != NULL);
        if (g)
            check_roundtrip(g, crafted[k]);
        graph_free(g);
    }
    /* every operator of the table, fused activations and pad modes included */
    graph *g = graph_load_json(DATA "all_ops.json", 0, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        int seen[OP_COUNT] = {0};
        for (int32_t i = 0; i < g->n_nodes; i++)
            seen[g->nodes[i].op] = 1;
        for (int op = 0; op < OP_COUNT; op++) {
            if (!seen[op])
                fprintf(stderr, "all_ops.json lacks %s\n", ops_table[op].name);
            CHECK(seen[op]);
        }
        check_roundtrip(g, "all_ops.json");
        graph_free(g);
    }
    if (exists(SHARED "bert_mini.onnx")) {
        g = imp(SHARED "bert_mini.onnx", 0, err, sizeof err);
        if (g)
            check_roundtrip(g, "bert_mini");
        graph_free(g);
    }
    /* a weight whose data file vanished: a one-line error, no output */
    g = graph_load_json_string("{\"format\": \"tasc-model\", \"version\": 1, \"inputs\": [{\"name\": \"x\", "
                               "\"shape\": [2]}], \"weights\": [{\"name\": \"w\", \"shape\": [2], \"init\": "
                               "{\"kind\": \"file\", \"path\": \"/nonexistent/w.bin\", \"offset\": 0}}], "
                               "\"nodes\": [{\"name\": \"a\", \"op\": \"ewadd\", \"inputs\": [\"x\", \"w\"]}], "
                               "\"outputs\": [\"a\"]}",
                               "inline", 0, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK(onnx_export(g, "/tmp/tasc-test-onnx-never.onnx", err, sizeof err) < 0);
        CHECK_STR_CONTAINS(err, "/nonexistent/w.bin");
        CHECK(!exists("/tmp/tasc-test-onnx-never.onnx"));
        graph_free(g);
    }
}

/* An import with the symbolic dimension name = value. */
static graph *imp_dim(const char *path, const char *name, int64_t value, char *err, size_t errlen) {
    onnx_import_opts o;
    onnx_import_opts_default(&o);
    const char *names[1] = {name};
    const int64_t vals[1] = {value};
    o.n_dims = 1;
    o.dim_names = names;
    o.dim_values = vals;
    err[0] = '\0';
    return onnx_import(path, &o, err, errlen);
}

/* Shape subgraphs as torch exports them (tests/data/onnx/shapes, gen_shapes.py) are folded at
 * import: the graph holds exactly the real tensor work (the node counts below), and what cannot
 * be folded is one line naming the node and why. Values are checked against onnxruntime by
 * cli_onnx_ort.sh. */
static void test_shapes(void) {
    static const struct {
        const char *file;
        int n_nodes, op, op_count;
    } ok[] = {
        {DATA "shapes/view.onnx", 2, OP_MATMUL, 1},
        {DATA "shapes/unflatten.onnx", 10, OP_TRANSPOSE, 3},
        {DATA "shapes/expand.onnx", 5, OP_CONCAT, 1},
        {DATA "shapes/range.onnx", 6, OP_EWADD, 4},
        {DATA "shapes/slice.onnx", 4, OP_RESHAPE, 3},
        {DATA "shapes/causal.onnx", 3, OP_EWADD, 2},
    };
    char err[1024];
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        graph *g = imp_dim(ok[k].file, "N", 2, err, sizeof err);
        if (!g)
            fprintf(stderr, "%s: %s\n", ok[k].file, err);
        CHECK(g != NULL);
        if (!g)
            continue;
        CHECK_EQ_INT(g->n_nodes, ok[k].n_nodes);
        CHECK_EQ_INT(count_op(g, (ops_type)ok[k].op), ok[k].op_count);
        CHECK_EQ_INT(g->tensors[g->inputs[0]].shape.dims[0], 2);
        CHECK_EQ_INT(nonfinite(g), 0);
        graph_free(g);
        /* without --dim the shapes are not static: refused, never guessed */
        g = imp(ok[k].file, 0, err, sizeof err);
        CHECK(g == NULL);
        CHECK_STR_CONTAINS(err, "symbolic dimension 'N'");
    }
    /* the folded shape vector of slice.onnx: (2, 6, 4, N) reversed, plus Xor(s > 3, s < 5) */
    graph *g = imp_dim(DATA "shapes/slice.onnx", "N", 2, err, sizeof err);
    if (g) {
        float **out = run(g, NULL);
        CHECK(out != NULL);
        if (out) {
            CHECK_EQ_INT(g->n_outputs, 2);
            const float want[4] = {2 + 1, 6 + 0, 4 + 1, 2 + 1};
            for (int j = 0; j < 4; j++)
                CHECK_NEAR(out[1][j], want[j], 0);
        }
        free_outs(g, out);
        graph_free(g);
    }
    static const struct {
        const char *file, *msg;
    } bad[] = {
        {DATA "shapes/err_mod_runtime.onnx",
         "unsupported operators: Mod (x1, first 'mod_rt': Mod of 'x', computed at run time: only constant (shape) "
         "arithmetic is folded, no such operator at run time)"},
        {DATA "shapes/err_overflow.onnx",
         "node 'big_mul' (Mul): the integer constant expression 2 * 4611686018427387904 overflows int64"},
        {DATA "shapes/err_divzero.onnx", "node 'div0' (Div): the integer constant expression 2 / 0 divides by zero"},
        {DATA "shapes/err_fold_limit.onnx",
         "node 'big_mask' (ConstantOfShape): folding makes an integer tensor of shape (5000,5000) (25000000 "
         "elements), over the import folding limit of 16777216 elements"},
        {DATA "shapes/err_range.onnx",
         "node 'ids' (Range): folding makes an integer tensor of shape (50331648) (50331648 elements), "
         "over the import folding limit of 16777216 elements"},
        {DATA "shapes/err_shape_input.onnx",
         "unsupported operators: Reshape (x1, first 'y': the shape must be a constant ('shape_in' is computed at "
         "run time))"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = imp_dim(bad[k].file, "N", 2, err, sizeof err);
        CHECK(g == NULL);
        graph_free(g);
        CHECK_STR_CONTAINS(err, bad[k].msg);
        CHECK(strncmp(err, bad[k].file, strlen(bad[k].file)) == 0 && strchr(err, '\n') == NULL);
    }
}

/* A tiny torchvision ViT (gen_vit.py) exported by both of torch's exporters imports with
 * --dim batch=2 into the same tensor work and computes torch's output. */
static void test_vit(void) {
    const char *files[2] = {DATA "vit_tiny.onnx", DATA "vit_tiny_dynamo.onnx"};
    const int n_reshape[2] = {23, 27}; /* the dynamo export keeps 4 reshapes more */
    const char *in[1] = {DATA "vit_tiny.in.x.npy"};
    char err[1024];
    for (int k = 0; k < 2; k++) {
        graph *g = imp_dim(files[k], "batch", 2, err, sizeof err);
        if (!g)
            fprintf(stderr, "%s: %s\n", files[k], err);
        CHECK(g != NULL);
        if (!g)
            continue;
        CHECK_EQ_INT(count_op(g, OP_CONV2D), 1);
        CHECK_EQ_INT(count_op(g, OP_MATMUL), 13);
        CHECK_EQ_INT(count_op(g, OP_LAYERNORM), 5);
        CHECK_EQ_INT(count_op(g, OP_SOFTMAX), 2);
        CHECK_EQ_INT(count_op(g, OP_GELU), 2); /* the erf-GELU subgraphs of both exporters, one op each */
        CHECK_EQ_INT(count_op(g, OP_ERF), 0);
        CHECK_EQ_INT(count_op(g, OP_GATHER), 7);
        CHECK_EQ_INT(count_op(g, OP_TRANSPOSE), 18);
        CHECK_EQ_INT(count_op(g, OP_RESHAPE), n_reshape[k]);
        CHECK_EQ_INT(g->n_nodes, 64 + n_reshape[k]);
        CHECK(ref_err(g, in, DATA "vit_tiny.out.y.npy") < 1e-4);
        graph_free(g);
    }
}

/* What swin_t's export asks beyond the shape subgraphs (tests/data/onnx/scatter, gen_scatter.py):
 * ScatterND masks folded at import to the values onnxruntime gives (also checked by
 * cli_onnx_ort.sh), Slice with steps at run time as splits and reshapes, and malformed ScatterND
 * as one line naming the node. */
static void test_scatter(void) {
    char err[1024];
    graph *g = imp_dim(DATA "scatter/scatter.onnx", "N", 2, err, sizeof err);
    if (!g)
        fprintf(stderr, "scatter.onnx: %s\n", err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->n_nodes, 1); /* x + the folded mask */
        CHECK_EQ_INT(count_op(g, OP_EWADD), 1);
        static const float zero[2 * 4 * 6];
        const float *in[1] = {zero};
        float **out = run(g, in);
        CHECK(out != NULL);
        static const float want[24] = {10.5f, -104, -3, -2, -1, 0, 3,    -2.5f, 2, 1.5f, 1, 0.5f,
                                       1.5f,  5,    0,  5.25f, 6.5f, 7.75f, 0, 1,     1, 9,    1, 9};
        for (int j = 0; out && j < 48; j++)
            CHECK_NEAR(out[0][j], want[j % 24], 0);
        free_outs(g, out);
        graph_free(g);
    }
    g = imp_dim(DATA "scatter/slice_step.onnx", "N", 2, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(count_op(g, OP_SPLIT), 9);
        CHECK_EQ_INT(count_op(g, OP_RESHAPE), 14);
        CHECK_EQ_INT(g->n_nodes, 24);
        graph_free(g);
    }
    static const struct {
        const char *file, *msg;
    } bad[] = {
        {DATA "scatter/err_scatter_range.onnx",
         "node 'bad' (ScatterND): index 4 (update 1, axis 0) is out of range for a dimension of 4"},
        {DATA "scatter/err_scatter_neg.onnx",
         "node 'bad' (ScatterND): index -7 (update 0, axis 1) is out of range for a dimension of 6"},
        {DATA "scatter/err_scatter_updates.onnx",
         "node 'bad' (ScatterND): updates of shape (3) do not fit data (4,6) and indices (2,2)"},
        {DATA "scatter/err_scatter_rank.onnx",
         "node 'bad' (ScatterND): index tuples of 3 values do not fit data of rank 2"},
        {DATA "scatter/err_scatter_scalar.onnx", "node 'bad' (ScatterND): the indices are 0-d"},
        {DATA "scatter/err_scatter_reduction.onnx",
         "node 'bad' (ScatterND): reduction 'sum' is not one of none, add, mul, max, min"},
        {DATA "scatter/err_scatter_runtime.onnx",
         "unsupported operators: ScatterND (x1, first 'bad': ScatterND needs constant inputs (no such operator at "
         "run time; 'x' is computed))"},
        {DATA "scatter/err_slice_step.onnx",
         "unsupported operators: Slice (x1, first 'y': a step of 3 over 7 of 7 elements at run time (the run of "
         "3 x 3 does not fit))"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = imp_dim(bad[k].file, "N", 2, err, sizeof err);
        CHECK(g == NULL);
        graph_free(g);
        CHECK_STR_CONTAINS(err, bad[k].msg);
        CHECK(strncmp(err, bad[k].file, strlen(bad[k].file)) == 0 && strchr(err, '\n') == NULL);
    }
}

/* A tiny torchvision Swin transformer (gen_swin.py) imports with --dim batch=2 into the tensor
 * work of its two stages (the shifted-window mask folded, torch.roll as splits and concats,
 * patch merging's strided slices, 6-D window partitions) and computes torch's output. */
static void test_swin(void) {
    char err[1024];
    const char *in[1] = {DATA "swin_tiny.in.x.npy"};
    graph *g = imp_dim(DATA "swin_tiny.onnx", "batch", 2, err, sizeof err);
    if (!g)
        fprintf(stderr, "swin_tiny.onnx: %s\n", err);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK_EQ_INT(count_op(g, OP_CONV2D), 1);
    CHECK_EQ_INT(count_op(g, OP_MATMUL), 26);
    CHECK_EQ_INT(count_op(g, OP_LAYERNORM), 11);
    CHECK_EQ_INT(count_op(g, OP_SOFTMAX), 4);
    CHECK_EQ_INT(count_op(g, OP_CONCAT), 5);
    CHECK_EQ_INT(count_op(g, OP_SPLIT), 14);
    CHECK_EQ_INT(count_op(g, OP_TRANSPOSE), 22);
    CHECK_EQ_INT(count_op(g, OP_RESHAPE), 39);
    CHECK_EQ_INT(count_op(g, OP_GELU), 4);
    CHECK_EQ_INT(count_op(g, OP_ERF), 0);
    CHECK_EQ_INT(g->n_nodes, 172);
    int rank6 = 0; /* the window partition: (B, H/w, w, W/w, w, C) */
    for (int32_t i = 0; i < g->n_nodes; i++)
        rank6 += g->nodes[i].op == OP_TRANSPOSE && g->tensors[g->nodes[i].out[0]].shape.rank == 6;
    CHECK(rank6 >= 4);
    CHECK(ref_err(g, in, DATA "swin_tiny.out.y.npy") < 1e-4);
    graph_free(g);
}

int main(void) {
    test_shapes();
    test_vit();
    test_scatter();
    test_swin();
    test_errors();
    test_corruption();
    test_data_kinds();
    test_random_by_role();
    test_sidecar();
    test_export();
    test_hardswish();
    test_act_patterns();
    test_norm_ops();
    test_data_ops();
    test_real_models();
    return TEST_REPORT();
}
