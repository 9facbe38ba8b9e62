/* test_ops.c: the operator table (ops/). For every operator: a small case with hand-computed
 * numbers, a comparison against an independent naive formulation on random inputs (conv2d as
 * im2col + matmul in double, matmul as one double dot product per output, pools by brute force,
 * data movement by explicit index mapping), and shape-inference errors checked by message text.
 * Also: parameter domains, int64 overflow refusal, broadcasting, algebraic identities the rule
 * generator relies on (split/concat inverse, enlarge, const_iconv, const_pool), FLOP counts, and
 * bit-identical results for 1 and 2 OpenMP threads. Buffers are owned and freed here.
 */
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "test.h"

/* --- helpers -------------------------------------------------------------------------------- */

#define SHAPE(...) ops_shape_make((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define SCALAR ops_shape_make(0, NULL)
#define NELEM(a) ((int32_t)(sizeof(a) / sizeof((a)[0])))

static int64_t numel(const ops_shape *s) { return ops_shape_numel(s); }

static uint64_t rng_next(uint64_t *st) { /* splitmix64 */
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n uniform floats in [lo, hi); caller frees. */
static float *rand_buf(int64_t n, uint64_t seed, float lo, float hi) {
    float *b = malloc(sizeof(float) * (size_t)(n ? n : 1));
    uint64_t st = seed * 7919 + 1;
    for (int64_t i = 0; i < n; i++)
        b[i] = lo + (hi - lo) * (float)((double)(rng_next(&st) >> 11) / 9007199254740992.0);
    return b;
}

typedef struct {
    int32_t n_out;
    ops_shape out[OPS_MAX_OUTPUTS];
    float *y[OPS_MAX_OUTPUTS];
} result;

/* Infer, allocate (filled with NaN so unwritten elements show), run the CPU reference. */
static int run(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in, const float *const *x, result *r) {
    char err[256];
    memset(r, 0, sizeof *r);
    if (ops_infer(op, p, n_in, in, &r->n_out, r->out, err, sizeof err) < 0) {
        fprintf(stderr, "run %s: unexpected error: %s\n", ops_table[op].name, err);
        CHECK(0);
        return -1;
    }
    for (int32_t k = 0; k < r->n_out; k++) {
        int64_t n = numel(&r->out[k]);
        r->y[k] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++)
            r->y[k][i] = NAN;
    }
    ops_sig sig = {.op = op, .p = p, .n_in = n_in, .n_out = r->n_out, .in = in, .out = r->out};
    ops_table[op].cpu(&sig, x, r->y);
    return 0;
}

static void result_free(result *r) {
    for (int32_t k = 0; k < r->n_out; k++)
        free(r->y[k]);
    memset(r, 0, sizeof *r);
}

/* ops_infer must fail with a message containing needle. */
static void expect_err_at(int line, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
                          const char *needle) {
    char err[256] = "";
    int32_t no = -5;
    ops_shape out[OPS_MAX_OUTPUTS];
    int rc = ops_infer(op, p, n_in, in, &no, out, err, sizeof err);
    if (rc != -1 || !strstr(err, needle) || strchr(err, '\n')) {
        test_failed++;
        fprintf(stderr, "test_ops.c:%d: %s: expected error containing \"%s\", got rc %d \"%s\"\n", line,
                ops_table[op].name, needle, rc, err);
    } else {
        test_passed++;
    }
}
#define EXPECT_ERR(op, p, n_in, in, needle) expect_err_at(__LINE__, op, p, n_in, in, needle)

/* Exact comparison of n floats; prints the first mismatch. */
static int same_floats(const float *a, const float *b, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (!(a[i] == b[i]) && !(isnan(a[i]) && isnan(b[i]))) {
            fprintf(stderr, "%s: element %lld: %.9g vs %.9g\n", what, (long long)i, (double)a[i], (double)b[i]);
            return 0;
        }
    return 1;
}

/* |a - b| <= atol + rtol*|b| elementwise against a double reference. */
static int near_d(const float *a, const double *b, int64_t n, double atol, double rtol, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= atol + rtol * fabs(b[i]))) {
            fprintf(stderr, "%s: element %lld: %.9g vs %.9g\n", what, (long long)i, (double)a[i], b[i]);
            return 0;
        }
    return 1;
}

static ops_params defaults(ops_type op) {
    ops_params p;
    ops_params_default(op, &p);
    return p;
}

static double act_d(int act, double v) {
    switch (act) {
    case OPS_ACT_RELU:
        return v < 0 ? 0 : v;
    case OPS_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    case OPS_ACT_TANH:
        return tanh(v);
    case OPS_ACT_GELU:
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case OPS_ACT_SILU:
        return v / (1.0 + exp(-v));
    case OPS_ACT_GELU_TANH:
        return 0.5 * v * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
    case OPS_ACT_RELU6:
        return v < 0 ? 0 : v > 6 ? 6 : v;
    case OPS_ACT_HARDSWISH:
        return v * fmax(0.0, fmin(1.0, v / 6.0 + 0.5));
    default:
        return v;
    }
}

/* --- the table ------------------------------------------------------------------------------ */

static void test_table(void) {
    CHECK_EQ_INT(ops_table_check(0), 0);
    for (int op = 0; op < OP_COUNT; op++) {
        CHECK(ops_table[op].name != NULL);
        CHECK_EQ_INT(ops_find(ops_table[op].name), op);
        CHECK(ops_table[op].doc && ops_table[op].doc[0]);
        /* defaults of declared keys pass the domain check unless a parameter is required */
        ops_params p = defaults((ops_type)op);
        int req = 0;
        for (int32_t i = 0; i < ops_table[op].n_params; i++)
            req |= ops_table[op].params[i].required;
        if (!req) {
            char err[128];
            CHECK_EQ_INT(ops_params_check((ops_type)op, &p, err, sizeof err), 0);
        }
        CHECK_EQ_INT(ops_table[op].gen, ops_table[op].fp != NULL);
        CHECK(ops_cuda[op] == NULL); /* the table needs no CUDA: the slot is empty until kernels register */
    }
    CHECK_EQ_INT(ops_find("conv2d"), OP_CONV2D);
    CHECK_EQ_INT(ops_find("globalavgpool"), OP_GLOBALAVGPOOL);
    CHECK_EQ_INT(ops_find("nope"), -1);
    CHECK_EQ_INT(ops_find(NULL), -1);
    CHECK_EQ_INT(ops_param_find("stride_h"), PM_STRIDE_H);
    CHECK_EQ_INT(ops_param_find("dilation_w"), PM_DIL_W);
    CHECK_EQ_INT(ops_param_find("list"), PM_LIST);
    CHECK_EQ_INT(ops_param_find("bogus"), -1);
    CHECK(!strcmp(ops_param_table[PM_EPS].name, "eps") && ops_param_table[PM_EPS].kind == OPS_PK_FLOAT);
    CHECK(ops_param_table[PM_ACT].kind == OPS_PK_ACT && ops_param_table[PM_PAD].kind == OPS_PK_PADMODE);
    CHECK(!strcmp(ops_act_names[OPS_ACT_GELU], "gelu") && !strcmp(ops_act_names[OPS_ACT_NONE], "none"));
    CHECK(!strcmp(ops_padmode_names[OPS_PAD_SAME], "same") && !strcmp(ops_padmode_names[OPS_PAD_VALID], "valid"));
    /* the generation set is TASO's */
    const ops_type gen[] = {OP_CONV2D, OP_MATMUL, OP_EWADD, OP_EWMUL, OP_SMUL, OP_RELU, OP_TRANSPOSE, OP_CONCAT,
                            OP_SPLIT, OP_AVGPOOL2D, OP_MAXPOOL2D, OP_ENLARGE, OP_CONST_IMM, OP_CONST_ICONV,
                            OP_CONST_ONES, OP_CONST_POOL};
    int ngen = 0;
    for (int op = 0; op < OP_COUNT; op++)
        ngen += ops_table[op].gen;
    CHECK_EQ_INT(ngen, NELEM(gen));
    for (int i = 0; i < NELEM(gen); i++)
        CHECK(ops_table[gen[i]].gen == 1 && ops_table[gen[i]].z3 != NULL);
    /* parameter declarations and generator values */
    const ops_param_desc *d = ops_param_desc_of(OP_CONV2D, PM_STRIDE_H);
    CHECK(d && d->lo == 1 && d->hi == 16 && d->def == 1 && d->n_gen == 1 && d->gen[0] == 1);
    d = ops_param_desc_of(OP_CONV2D, PM_PAD);
    CHECK(d && d->def == OPS_PAD_EXPLICIT && d->n_gen == 1 && d->gen[0] == OPS_PAD_SAME);
    d = ops_param_desc_of(OP_CONV2D, PM_ACT);
    CHECK(d && d->n_gen == 2 && d->gen[0] == OPS_ACT_NONE && d->gen[1] == OPS_ACT_RELU);
    d = ops_param_desc_of(OP_CONV2D, PM_GROUPS);
    CHECK(d && d->lo == 1 && d->hi == 65536 && d->n_gen == 1 && d->gen[0] == 1);
    d = ops_param_desc_of(OP_CONCAT, PM_AXIS);
    CHECK(d && d->n_gen == 4 && d->gen[3] == 3);
    d = ops_param_desc_of(OP_SPLIT, PM_PARTS);
    CHECK(d && d->required && d->n_gen == 1 && d->gen[0] == 2 && d->hi == OPS_MAX_OUTPUTS);
    d = ops_param_desc_of(OP_TRANSPOSE, PM_LIST);
    CHECK(d && d->required && !strcmp(d->list_name, "perm") && d->n_gen == 2 && d->gen[0] == 1 && d->gen[1] == 0);
    d = ops_param_desc_of(OP_SPLIT, PM_LIST);
    CHECK(d && !d->required && !strcmp(d->list_name, "sizes"));
    d = ops_param_desc_of(OP_MAXPOOL2D, PM_KH);
    CHECK(d && d->required && d->n_gen == 1 && d->gen[0] == 3);
    d = ops_param_desc_of(OP_AVGPOOL2D, PM_COUNT_PAD);
    CHECK(d && d->def == 1 && d->lo == 0 && d->hi == 1);
    CHECK(ops_param_desc_of(OP_MAXPOOL2D, PM_COUNT_PAD) == NULL);
    CHECK(ops_param_desc_of(OP_RELU, PM_ACT) == NULL);
    d = ops_param_desc_of(OP_BATCHNORM, PM_EPS);
    CHECK(d && ops_p2f(d->def) == 1e-5f);
    d = ops_param_desc_of(OP_CLIP, PM_LO);
    CHECK(d && ops_p2f(d->def) == -3.4e38f);
    CHECK(ops_p2f(ops_param_desc_of(OP_CLIP, PM_HI)->def) == 3.4e38f);
    /* defaults fill the declared keys only */
    ops_params p = defaults(OP_CONV2D);
    CHECK(p.v[PM_STRIDE_H] == 1 && p.v[PM_DIL_W] == 1 && p.v[PM_GROUPS] == 1 && p.v[PM_ACT] == OPS_ACT_NONE);
    CHECK(p.v[PM_KH] == 0 && p.n_list == 0);
    p = defaults(OP_LAYERNORM);
    CHECK(ops_p2f(p.v[PM_EPS]) == 1e-5f);
    /* float parameters round-trip through their bits */
    CHECK(ops_p2f(ops_f2p(-2.5f)) == -2.5f);
    CHECK(ops_f2p(1.0f) == 0x3f800000);
    CHECK(ops_f2p(-1.0f) == INT64_C(0xbf800000));
    CHECK(ops_act_apply(OPS_ACT_RELU, -3.0f) == 0.0f && ops_act_apply(OPS_ACT_RELU, 2.5f) == 2.5f);
    CHECK(ops_act_apply(OPS_ACT_NONE, -3.0f) == -3.0f);
    CHECK_NEAR(ops_act_apply(OPS_ACT_SIGMOID, 0.0f), 0.5, 0);
    CHECK_NEAR(ops_act_apply(OPS_ACT_GELU, 1.0f), 0.841344746, 1e-7);
    CHECK(ops_act_apply(OPS_ACT_RELU6, 7.5f) == 6.0f && ops_act_apply(OPS_ACT_RELU6, -1.0f) == 0.0f);
    CHECK(ops_act_apply(OPS_ACT_RELU6, 2.5f) == 2.5f && isnan(ops_act_apply(OPS_ACT_RELU6, NAN)));
    CHECK(ops_act_apply(OPS_ACT_HARDSWISH, 3.0f) == 3.0f && ops_act_apply(OPS_ACT_HARDSWISH, -3.0f) == 0.0f);
    CHECK_NEAR(ops_act_apply(OPS_ACT_SILU, 1.0f), 0.7310585786300049, 1e-7);
    CHECK_NEAR(ops_act_apply(OPS_ACT_GELU_TANH, 1.0f), 0.8411919906082768, 1e-7);
    /* every activation but relu6 is an op of the same name; relu6 is clip 0..6 */
    for (int a = OPS_ACT_RELU; a < OPS_ACT_COUNT; a++) {
        int op = ops_find(ops_act_names[a]);
        if (a == OPS_ACT_RELU6) {
            CHECK(op < 0);
            continue;
        }
        CHECK(op >= 0 && (int)ops_table[op].act == a && (int)ops_act_of((ops_type)op, NULL) == a);
    }
    ops_params cp = defaults(OP_CLIP);
    CHECK(ops_act_of(OP_CLIP, &cp) == OPS_ACT_NONE);
    cp.v[PM_LO] = ops_f2p(0.0f);
    cp.v[PM_HI] = ops_f2p(6.0f);
    CHECK(ops_act_of(OP_CLIP, &cp) == OPS_ACT_RELU6);
    cp.v[PM_HI] = ops_f2p(1.0f); /* hardsigmoid's clip */
    CHECK(ops_act_of(OP_CLIP, &cp) == OPS_ACT_NONE && ops_act_of(OP_EWADD, NULL) == OPS_ACT_NONE);
    CHECK_NEAR(ops_act_gain(OPS_ACT_RELU), 2.0, 0);
    CHECK_NEAR(ops_act_gain(OPS_ACT_NONE), 2.0, 0);
    CHECK_NEAR(ops_act_gain(OPS_ACT_SILU), 1.0 / 0.3558, 1e-12);
}

/* The facts other modules read from the table instead of lists of their own. */
static void test_table_facts(void) {
    for (int op = 0; op < OP_COUNT; op++) {
        const ops_desc *d = &ops_table[op];
        /* windows: conv2d by its kernel input, the 2-D pools by kh x kw */
        ops_window_kind win = op == OP_CONV2D ? OPS_WIN_KERNEL
                            : op == OP_AVGPOOL2D || op == OP_MAXPOOL2D ? OPS_WIN_PARAMS : OPS_WIN_NONE;
        CHECK_EQ_INT(d->window, win);
        CHECK_EQ_INT(d->kernel_input_mask, op == OP_CONV2D ? 0x2 : op == OP_ENLARGE ? 0x1 : 0);
        /* the axioms cover the generation set */
        CHECK_EQ_INT(d->z3 != NULL, d->gen);
        CHECK(!d->z3 || !strcmp(d->z3, d->name));
        /* every op reaches ONNX: its own op type, gelu through erf, silu and gelu_tanh as their
         * patterns, generators as initializers */
        CHECK(d->onnx.op != NULL || op == OP_GELU || op == OP_SILU || op == OP_GELU_TANH || d->max_in == 0);
    }
    ops_params p = defaults(OP_RELU);
    ops_shape x = SHAPE(1, 1, 4, 4);
    ops_window w;
    char err[128];
    CHECK_EQ_INT(ops_window2d(OP_RELU, &p, &x, NULL, &w, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "has no window");
    /* Z3 families: split0/split1 (axis, size of part 0), const_ones1..4 (the shape's entries) */
    const ops_z3_sig *zs = &ops_table[OP_SPLIT].z3sig, *zo = &ops_table[OP_CONST_ONES].z3sig;
    CHECK(zs->per_output == 2 && zs->per_rank == 0 && zs->n_t == 1 && zs->n_args == 2);
    CHECK(zs->args[0].kind == OPS_Z3_KEY && zs->args[0].key == PM_AXIS && zs->args[1].kind == OPS_Z3_SIZE0);
    CHECK(zo->per_rank == 4 && zo->n_t == 0 && zo->n_args == 1 && zo->args[0].kind == OPS_Z3_LIST);
    CHECK(ops_table[OP_CONCAT].z3sig.n_t == 2 && ops_table[OP_CONV2D].z3sig.n_args == 5);
    /* ONNX forms and attributes */
    CHECK(!strcmp(ops_table[OP_CONV2D].onnx.op, "Conv") && !strcmp(ops_table[OP_SMUL].onnx.op, "Mul"));
    CHECK(ops_table[OP_EWADD].onnx.ints && !ops_table[OP_EWDIV].onnx.ints && ops_table[OP_TRANSPOSE].onnx.ints);
    CHECK(ops_table[OP_AVGPOOL2D].onnx.attrs[0].key == PM_COUNT_PAD &&
          !strcmp(ops_table[OP_AVGPOOL2D].onnx.attrs[0].name, "count_include_pad"));
    CHECK(ops_table[OP_RELU].onnx.attrs[0].name == NULL);
}

static void test_shape_helpers(void) {
    char buf[64];
    ops_shape s = SHAPE(1, 3, 224, 224);
    CHECK(!strcmp(ops_shape_str(&s, buf, sizeof buf), "(1,3,224,224)"));
    CHECK(!strcmp(ops_shape_str(&(ops_shape){0}, buf, sizeof buf), "()"));
    char tiny[5];
    ops_shape_str(&s, tiny, sizeof tiny); /* truncates, stays terminated */
    CHECK(strlen(tiny) == 4);
    CHECK_EQ_INT(numel(&s), 150528);
    ops_shape sc = SCALAR;
    CHECK_EQ_INT(numel(&sc), 1);
    CHECK(ops_shape_eq(&s, &(ops_shape){.rank = 4, .dims = {1, 3, 224, 224}}));
    CHECK(!ops_shape_eq(&s, &sc));
    CHECK(s.dims[4] == 0 && s.dims[5] == 0);
    /* overflow */
    ops_shape big = SHAPE(INT64_C(1) << 32, INT64_C(1) << 32);
    CHECK_EQ_INT(numel(&big), -1);
    ops_shape ok = SHAPE(INT64_C(1) << 31, INT64_C(1) << 31);
    CHECK_EQ_INT(numel(&ok), INT64_C(1) << 62);
    ops_shape bad = {.rank = 7};
    CHECK_EQ_INT(numel(&bad), -1);
    ops_shape neg = SHAPE(2, -3);
    CHECK_EQ_INT(numel(&neg), -1);
}

/* --- parameters and generic checks ---------------------------------------------------------- */

static void test_params(void) {
    char err[256];
    ops_params p = defaults(OP_CONV2D);
    ops_shape in[3] = {SHAPE(1, 4, 8, 8), SHAPE(4, 4, 3, 3)};
    p.v[PM_STRIDE_H] = 0;
    EXPECT_ERR(OP_CONV2D, &p, 2, in, "conv2d: parameter 'stride_h' = 0 out of range 1..16");
    p.v[PM_STRIDE_H] = 17;
    EXPECT_ERR(OP_CONV2D, &p, 2, in, "conv2d: parameter 'stride_h' = 17 out of range 1..16");
    p = defaults(OP_CONV2D);
    p.v[PM_ACT] = 9;
    EXPECT_ERR(OP_CONV2D, &p, 2, in, "conv2d: parameter 'act' = 9 is not one of none|relu|sigmoid|tanh|gelu|silu|gelu_tanh|relu6|hardswish");
    p = defaults(OP_CONV2D);
    p.v[PM_PAD] = -1;
    EXPECT_ERR(OP_CONV2D, &p, 2, in, "conv2d: parameter 'pad' = -1 is not one of explicit|same|valid");
    p = defaults(OP_CONV2D);
    p.v[PM_PAD_L] = 65;
    EXPECT_ERR(OP_CONV2D, &p, 2, in, "parameter 'pad_l' = 65 out of range 0..64");
    p = defaults(OP_CONV2D);
    p.v[PM_GROUPS] = 0;
    EXPECT_ERR(OP_CONV2D, &p, 2, in, "parameter 'groups' = 0 out of range 1..65536");
    p = defaults(OP_CONV2D);
    p.v[PM_DIL_H] = 0;
    CHECK_EQ_INT(ops_params_check(OP_CONV2D, &p, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "'dilation_h' = 0");
    /* required parameters */
    ops_params q = defaults(OP_MAXPOOL2D);
    ops_shape x4 = SHAPE(1, 1, 4, 4);
    EXPECT_ERR(OP_MAXPOOL2D, &q, 1, &x4, "maxpool2d: parameter 'kh' is required (1..64)");
    q = defaults(OP_TRANSPOSE);
    ops_shape x2 = SHAPE(2, 3);
    EXPECT_ERR(OP_TRANSPOSE, &q, 1, &x2, "transpose: parameter 'perm' is required");
    q.n_list = 9;
    EXPECT_ERR(OP_TRANSPOSE, &q, 1, &x2, "transpose: 'perm' has 9 entries, at most 8");
    q.n_list = 2;
    q.list[0] = 1;
    q.list[1] = 6;
    EXPECT_ERR(OP_TRANSPOSE, &q, 1, &x2, "transpose: perm[1] = 6 out of range 0..5");
    /* float parameters */
    q = defaults(OP_BATCHNORM);
    q.v[PM_EPS] = ops_f2p(0.0f);
    CHECK_EQ_INT(ops_params_check(OP_BATCHNORM, &q, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "batchnorm: parameter 'eps' = 0 must be positive");
    q.v[PM_EPS] = ops_f2p(NAN);
    CHECK_EQ_INT(ops_params_check(OP_BATCHNORM, &q, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "batchnorm: parameter 'eps' is NaN");
    q.v[PM_EPS] = INT64_C(1) << 33;
    CHECK_EQ_INT(ops_params_check(OP_BATCHNORM, &q, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "not float32 bits");
    q = defaults(OP_CLIP);
    q.v[PM_LO] = ops_f2p(2.0f);
    q.v[PM_HI] = ops_f2p(1.0f);
    EXPECT_ERR(OP_CLIP, &q, 1, &x2, "clip: lo = 2 is greater than hi = 1");
    q.v[PM_HI] = ops_f2p(NAN);
    EXPECT_ERR(OP_CLIP, &q, 1, &x2, "clip: parameter 'hi' is NaN");
    /* split: sizes must match parts */
    q = defaults(OP_SPLIT);
    q.v[PM_AXIS] = 1;
    q.v[PM_PARTS] = 2;
    q.n_list = 3;
    q.list[0] = q.list[1] = q.list[2] = 1;
    EXPECT_ERR(OP_SPLIT, &q, 1, &x2, "split: 'sizes' has 3 entries but parts = 2");
    q.v[PM_PARTS] = 9;
    q.n_list = 0;
    EXPECT_ERR(OP_SPLIT, &q, 1, &x2, "split: parameter 'parts' = 9 out of range 1..8");
    /* unknown op */
    CHECK_EQ_INT(ops_params_check((ops_type)OP_COUNT, &q, err, sizeof err), -1);
    int32_t no;
    ops_shape out[OPS_MAX_OUTPUTS];
    CHECK_EQ_INT(ops_infer((ops_type)-1, &q, 1, &x2, &no, out, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "unknown op");
    /* a NULL message buffer is allowed */
    p = defaults(OP_CONV2D);
    p.v[PM_STRIDE_H] = 0;
    CHECK_EQ_INT(ops_params_check(OP_CONV2D, &p, NULL, 0), -1);
}

static void test_generic_infer(void) {
    ops_params p = defaults(OP_RELU);
    ops_shape in[3] = {SHAPE(2, 3), SHAPE(2, 3)};
    EXPECT_ERR(OP_RELU, &p, 2, in, "relu: 2 inputs, expected 1");
    EXPECT_ERR(OP_RELU, &p, 0, in, "relu: 0 inputs, expected 1");
    ops_params c = defaults(OP_CONV2D);
    EXPECT_ERR(OP_CONV2D, &c, 1, in, "conv2d: 1 input, expected 2..3");
    ops_params cc = defaults(OP_CONCAT);
    EXPECT_ERR(OP_CONCAT, &cc, 0, in, "concat: 0 inputs, expected 1..64");
    EXPECT_ERR(OP_CONCAT, &cc, 65, in, "concat: 65 inputs, expected 1..64");
    ops_shape bad[1] = {{.rank = 7, .dims = {1, 1, 1, 1, 1, 1}}};
    EXPECT_ERR(OP_RELU, &p, 1, bad, "relu: input 0 (x) has rank 7, expected 0..6");
    ops_shape zero[1] = {SHAPE(2, 0)};
    EXPECT_ERR(OP_RELU, &p, 1, zero, "relu: input 0 (x) has dim 1 = 0, dims must be >= 1");
    ops_shape huge[1] = {SHAPE(INT64_C(1) << 40, INT64_C(1) << 40)};
    EXPECT_ERR(OP_RELU, &p, 1, huge, "relu: input 0 (x) has too many elements (int64 overflow)");
    /* an output that overflows although each input does not */
    ops_params a = defaults(OP_EWADD);
    ops_shape ov[2] = {SHAPE(INT64_C(1) << 40, 1), SHAPE(1, INT64_C(1) << 40)};
    EXPECT_ERR(OP_EWADD, &a, 2, ov, "ewadd: output 0 has too many elements (int64 overflow)");
    ops_params o = defaults(OP_CONST_ONES);
    o.n_list = 2;
    o.list[0] = o.list[1] = INT64_C(1) << 40;
    EXPECT_ERR(OP_CONST_ONES, &o, 0, in, "const_ones: the number of elements of the shape overflows");
    ops_params cat = defaults(OP_CONCAT);
    ops_shape cv[2] = {SHAPE(INT64_C(1) << 62), SHAPE(INT64_C(1) << 62)};
    EXPECT_ERR(OP_CONCAT, &cat, 2, cv, "concat: the output size along axis 0 overflows");
    ops_params mm = defaults(OP_MATMUL);
    ops_shape mv[2] = {SHAPE(INT64_C(1) << 31, 1, 2), SHAPE(INT64_C(1) << 31, 1, 2, 2)};
    EXPECT_ERR(OP_MATMUL, &mm, 2, mv, "matmul: output 0 has too many elements");
    /* success leaves the message empty and writes n_out */
    char err[64] = "junk";
    int32_t no = 0;
    ops_shape out[OPS_MAX_OUTPUTS];
    CHECK_EQ_INT(ops_infer(OP_RELU, &p, 1, in, &no, out, err, sizeof err), 0);
    CHECK_EQ_INT(no, 1);
    CHECK(err[0] == '\0');
    CHECK(ops_shape_eq(&out[0], &in[0]));
}

/* --- conv2d --------------------------------------------------------------------------------- */

/* Independent output size and leading pad for one axis. */
static void ref_geom(int mode, int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1, int64_t *o,
                     int64_t *lead) {
    int64_t ek = (k - 1) * d + 1;
    if (mode == OPS_PAD_SAME) {
        *o = (in + s - 1) / s;
        int64_t total = (*o - 1) * s + ek - in;
        *lead = total > 0 ? total / 2 : 0;
    } else if (mode == OPS_PAD_VALID) {
        *o = (in - ek) / s + 1;
        *lead = 0;
    } else {
        *o = (in + p0 + p1 - ek) / s + 1;
        *lead = p0;
    }
}

typedef struct {
    int64_t N, C, H, W, F, KH, KW, sh, sw, dh, dw, G;
    int mode;
    int64_t pt, pl, pb, pr;
    int bias, act;
} conv_case;

static ops_params conv_params(const conv_case *c) {
    ops_params p = defaults(OP_CONV2D);
    p.v[PM_STRIDE_H] = c->sh;
    p.v[PM_STRIDE_W] = c->sw;
    p.v[PM_DIL_H] = c->dh;
    p.v[PM_DIL_W] = c->dw;
    p.v[PM_GROUPS] = c->G;
    p.v[PM_PAD] = c->mode;
    p.v[PM_PAD_T] = c->pt;
    p.v[PM_PAD_L] = c->pl;
    p.v[PM_PAD_B] = c->pb;
    p.v[PM_PAD_R] = c->pr;
    p.v[PM_ACT] = c->act;
    return p;
}

/* conv2d by im2col and a double matmul per (image, group); also returns sum |w*x| per output. */
static void ref_conv(const conv_case *c, const float *x, const float *w, const float *b, int64_t OH, int64_t OW,
                     int64_t pt, int64_t pl, double *y, double *yabs) {
    int64_t CG = c->C / c->G, FG = c->F / c->G, R = CG * c->KH * c->KW, P = OH * OW;
    double *cols = malloc(sizeof(double) * (size_t)(R * P)); /* (R, P) */
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t g = 0; g < c->G; g++) {
            for (int64_t ci = 0; ci < CG; ci++)
                for (int64_t kh = 0; kh < c->KH; kh++)
                    for (int64_t kw = 0; kw < c->KW; kw++) {
                        int64_t r = (ci * c->KH + kh) * c->KW + kw;
                        for (int64_t oh = 0; oh < OH; oh++)
                            for (int64_t ow = 0; ow < OW; ow++) {
                                int64_t ih = oh * c->sh - pt + kh * c->dh, iw = ow * c->sw - pl + kw * c->dw;
                                int ok = ih >= 0 && ih < c->H && iw >= 0 && iw < c->W;
                                cols[r * P + oh * OW + ow] =
                                    ok ? x[((n * c->C + g * CG + ci) * c->H + ih) * c->W + iw] : 0.0;
                            }
                    }
            for (int64_t f = 0; f < FG; f++) {
                int64_t fo = g * FG + f;
                for (int64_t q = 0; q < P; q++) {
                    double s = 0, sa = 0;
                    for (int64_t r = 0; r < R; r++) {
                        double t = (double)w[fo * R + r] * cols[r * P + q];
                        s += t;
                        sa += fabs(t);
                    }
                    if (b) {
                        s += b[fo];
                        sa += fabs(b[fo]);
                    }
                    y[(n * c->F + fo) * P + q] = act_d(c->act, s);
                    yabs[(n * c->F + fo) * P + q] = sa;
                }
            }
        }
    free(cols);
}

static void conv_random_case(const conv_case *c, uint64_t seed) {
    ops_params p = conv_params(c);
    ops_shape in[3] = {SHAPE(c->N, c->C, c->H, c->W), SHAPE(c->F, c->C / c->G, c->KH, c->KW), SHAPE(c->F)};
    int64_t OH, OW, pt, pl;
    ref_geom(c->mode, c->H, c->KH, c->sh, c->dh, c->pt, c->pb, &OH, &pt);
    ref_geom(c->mode, c->W, c->KW, c->sw, c->dw, c->pl, c->pr, &OW, &pl);
    float *x = rand_buf(numel(&in[0]), seed, -1, 1), *w = rand_buf(numel(&in[1]), seed + 1, -1, 1);
    float *b = rand_buf(c->F, seed + 2, -1, 1);
    const float *xs[3] = {x, w, b};
    result r;
    if (run(OP_CONV2D, &p, c->bias ? 3 : 2, in, xs, &r) == 0) {
        ops_shape want = SHAPE(c->N, c->F, OH, OW);
        CHECK(ops_shape_eq(&r.out[0], &want));
        int64_t n = numel(&want);
        double *y = malloc(sizeof(double) * (size_t)n), *ya = malloc(sizeof(double) * (size_t)n);
        ref_conv(c, x, w, c->bias ? b : NULL, OH, OW, pt, pl, y, ya);
        int ok = 1;
        for (int64_t i = 0; i < n && ok; i++)
            if (!(fabs((double)r.y[0][i] - y[i]) <= 1e-5 * ya[i] + 1e-6)) {
                fprintf(stderr, "conv case seed %llu: element %lld: %.9g vs %.9g\n", (unsigned long long)seed,
                        (long long)i, (double)r.y[0][i], y[i]);
                ok = 0;
            }
        CHECK(ok);
        free(y);
        free(ya);
        result_free(&r);
    }
    free(x);
    free(w);
    free(b);
}

static void test_conv2d(void) {
    /* hand-computed: x = 1..9 (3x3), w = [[1,2],[3,4]], no padding */
    float x9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w4[4] = {1, 2, 3, 4}, bias[1] = {1};
    ops_shape in[3] = {SHAPE(1, 1, 3, 3), SHAPE(1, 1, 2, 2), SHAPE(1)};
    const float *xs[3] = {x9, w4, bias};
    ops_params p = defaults(OP_CONV2D);
    result r;
    if (run(OP_CONV2D, &p, 2, in, xs, &r) == 0) {
        float want[4] = {37, 47, 67, 77};
        ops_shape ws = SHAPE(1, 1, 2, 2);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 4, "conv2d 2x2"));
        result_free(&r);
    }
    if (run(OP_CONV2D, &p, 3, in, xs, &r) == 0) { /* + bias 1 */
        float want[4] = {38, 48, 68, 78};
        CHECK(same_floats(r.y[0], want, 4, "conv2d bias"));
        result_free(&r);
    }
    float nbias[1] = {-50};
    const float *xsn[3] = {x9, w4, nbias};
    p.v[PM_ACT] = OPS_ACT_RELU;
    if (run(OP_CONV2D, &p, 3, in, xsn, &r) == 0) { /* bias -50, relu */
        float want[4] = {0, 0, 17, 27};
        CHECK(same_floats(r.y[0], want, 4, "conv2d bias relu"));
        result_free(&r);
    }
    /* 'same' with a 3x3 box: sums of neighbourhoods */
    float ones9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ops_shape in3[2] = {SHAPE(1, 1, 3, 3), SHAPE(1, 1, 3, 3)};
    const float *xs3[2] = {x9, ones9};
    p = defaults(OP_CONV2D);
    p.v[PM_PAD] = OPS_PAD_SAME;
    if (run(OP_CONV2D, &p, 2, in3, xs3, &r) == 0) {
        float want[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
        CHECK(same_floats(r.y[0], want, 9, "conv2d same 3x3"));
        result_free(&r);
    }
    /* 'same' with an even 2x2 kernel: the extra padding goes at the end (SAME_UPPER) */
    if (run(OP_CONV2D, &p, 2, in, xs, &r) == 0) {
        float want[9] = {37, 47, 3 * 1 + 6 * 3, 67, 77, 6 * 1 + 9 * 3, 7 + 8 * 2, 8 + 9 * 2, 9};
        ops_shape ws = SHAPE(1, 1, 3, 3);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 9, "conv2d same 2x2"));
        result_free(&r);
    }
    /* stride 2 'same' with a 1x1 kernel picks every other cell of a 4x4 */
    float x16[16], one[1] = {2};
    for (int i = 0; i < 16; i++)
        x16[i] = (float)(i + 1);
    ops_shape ins[2] = {SHAPE(1, 1, 4, 4), SHAPE(1, 1, 1, 1)};
    const float *xss[2] = {x16, one};
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = 2;
    if (run(OP_CONV2D, &p, 2, ins, xss, &r) == 0) {
        float want[4] = {2, 6, 18, 22};
        CHECK(same_floats(r.y[0], want, 4, "conv2d stride 2"));
        result_free(&r);
    }
    /* 'valid' 3x3 box on 4x4, and explicit asymmetric padding */
    ops_shape inv[2] = {SHAPE(1, 1, 4, 4), SHAPE(1, 1, 3, 3)};
    const float *xsv[2] = {x16, ones9};
    p = defaults(OP_CONV2D);
    p.v[PM_PAD] = OPS_PAD_VALID;
    p.v[PM_PAD_T] = 5; /* ignored in valid mode */
    if (run(OP_CONV2D, &p, 2, inv, xsv, &r) == 0) {
        float want[4] = {54, 63, 90, 99};
        CHECK(same_floats(r.y[0], want, 4, "conv2d valid"));
        result_free(&r);
    }
    p = defaults(OP_CONV2D);
    p.v[PM_PAD_T] = 1; /* one zero row on top, none elsewhere: output 3x2 */
    if (run(OP_CONV2D, &p, 2, inv, xsv, &r) == 0) {
        float want[6] = {1 + 2 + 3 + 5 + 6 + 7, 2 + 3 + 4 + 6 + 7 + 8, 54, 63, 90, 99};
        ops_shape ws = SHAPE(1, 1, 3, 2);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 6, "conv2d explicit pad_t"));
        result_free(&r);
    }
    /* dilation 2: a 2x2 kernel of ones reads the corners of a 3x3 window */
    float ones4[4] = {1, 1, 1, 1};
    ops_shape ind[2] = {SHAPE(1, 1, 4, 4), SHAPE(1, 1, 2, 2)};
    const float *xsd[2] = {x16, ones4};
    p = defaults(OP_CONV2D);
    p.v[PM_DIL_H] = p.v[PM_DIL_W] = 2;
    if (run(OP_CONV2D, &p, 2, ind, xsd, &r) == 0) {
        float want[4] = {1 + 3 + 9 + 11, 2 + 4 + 10 + 12, 5 + 7 + 13 + 15, 6 + 8 + 14 + 16};
        CHECK(same_floats(r.y[0], want, 4, "conv2d dilation"));
        result_free(&r);
    }
    /* groups = 2: each output channel sees only its own input channel */
    float xg[8] = {1, 2, 3, 4, 10, 20, 30, 40}, wg[2] = {2, -1};
    ops_shape ing[2] = {SHAPE(1, 2, 2, 2), SHAPE(2, 1, 1, 1)};
    const float *xsg[2] = {xg, wg};
    p = defaults(OP_CONV2D);
    p.v[PM_GROUPS] = 2;
    if (run(OP_CONV2D, &p, 2, ing, xsg, &r) == 0) {
        float want[8] = {2, 4, 6, 8, -10, -20, -30, -40};
        CHECK(same_floats(r.y[0], want, 8, "conv2d groups"));
        result_free(&r);
    }

    /* random cases against im2col + double matmul */
    const conv_case cases[] = {
        /* N  C  H   W   F  KH KW sh sw dh dw G  mode               pads       bias act */
        {1, 3, 9, 11, 8, 3, 3, 1, 1, 1, 1, 1, OPS_PAD_EXPLICIT, 0, 0, 0, 0, 0, OPS_ACT_NONE},
        {2, 5, 12, 10, 20, 3, 3, 1, 1, 1, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 1, OPS_ACT_RELU},
        {1, 4, 13, 17, 12, 5, 3, 2, 1, 1, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 1, OPS_ACT_NONE},
        {1, 6, 15, 14, 9, 3, 4, 2, 3, 1, 1, 3, OPS_PAD_EXPLICIT, 1, 2, 0, 3, 1, OPS_ACT_SIGMOID},
        {2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 8, OPS_PAD_SAME, 0, 0, 0, 0, 1, OPS_ACT_NONE},   /* depthwise */
        {1, 4, 10, 12, 16, 3, 3, 1, 1, 2, 3, 2, OPS_PAD_SAME, 0, 0, 0, 0, 0, OPS_ACT_TANH}, /* dilation */
        {1, 3, 11, 11, 5, 4, 2, 3, 2, 1, 1, 1, OPS_PAD_VALID, 0, 0, 0, 0, 1, OPS_ACT_GELU},
        {1, 16, 20, 20, 24, 1, 1, 1, 1, 1, 1, 1, OPS_PAD_EXPLICIT, 0, 0, 0, 0, 1, OPS_ACT_RELU}, /* 1x1: Q > tile */
        {1, 2, 5, 300, 9, 3, 3, 2, 2, 1, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 0, OPS_ACT_NONE},       /* OW > tile */
        {1, 3, 6, 7, 4, 7, 7, 1, 1, 1, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 1, OPS_ACT_NONE},         /* kernel > input */
        {2, 4, 7, 7, 8, 3, 3, 2, 2, 1, 1, 2, OPS_PAD_EXPLICIT, 3, 0, 2, 1, 0, OPS_ACT_RELU},
        {1, 5, 9, 8, 7, 3, 3, 1, 1, 1, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 1, OPS_ACT_SILU},
        {1, 6, 8, 9, 6, 3, 3, 1, 1, 1, 1, 6, OPS_PAD_SAME, 0, 0, 0, 0, 1, OPS_ACT_HARDSWISH}, /* depthwise */
        {1, 4, 7, 7, 8, 1, 1, 1, 1, 1, 1, 1, OPS_PAD_EXPLICIT, 0, 0, 0, 0, 0, OPS_ACT_RELU6},
        {1, 3, 6, 6, 5, 3, 3, 2, 2, 1, 1, 1, OPS_PAD_VALID, 0, 0, 0, 0, 1, OPS_ACT_GELU_TANH},
    };
    for (int i = 0; i < NELEM(cases); i++)
        conv_random_case(&cases[i], 100 + (uint64_t)i);

    /* shape errors */
    ops_params e = defaults(OP_CONV2D);
    ops_shape b1[2] = {SHAPE(1, 4, 8, 8), SHAPE(4, 4)};
    EXPECT_ERR(OP_CONV2D, &e, 2, b1, "conv2d: input 1 (kernel) has 2 dims, expected 4");
    ops_shape b0[2] = {SHAPE(4, 8, 8), SHAPE(4, 4, 3, 3)};
    EXPECT_ERR(OP_CONV2D, &e, 2, b0, "conv2d: input 0 (x) has 3 dims, expected 4");
    ops_shape b2[2] = {SHAPE(1, 4, 8, 8), SHAPE(4, 3, 3, 3)};
    EXPECT_ERR(OP_CONV2D, &e, 2, b2, "conv2d: input 1 (kernel) has 3 channels (dim 1), expected C/groups = 4");
    ops_shape b3[3] = {SHAPE(1, 4, 8, 8), SHAPE(4, 4, 3, 3), SHAPE(5)};
    EXPECT_ERR(OP_CONV2D, &e, 3, b3, "conv2d: input 2 (bias) has shape (5), expected (4)");
    ops_shape b4[2] = {SHAPE(1, 4, 2, 8), SHAPE(4, 4, 3, 3)};
    EXPECT_ERR(OP_CONV2D, &e, 2, b4, "conv2d: window height 3 is larger than the padded input height 2");
    e.v[PM_DIL_W] = 4;
    ops_shape b5[2] = {SHAPE(1, 4, 8, 8), SHAPE(4, 4, 3, 3)};
    EXPECT_ERR(OP_CONV2D, &e, 2, b5, "conv2d: window width 3 (dilated 9) is larger than the padded input width 8");
    e = defaults(OP_CONV2D);
    e.v[PM_GROUPS] = 3;
    EXPECT_ERR(OP_CONV2D, &e, 2, b5, "conv2d: groups = 3 does not divide the 4 input channels");
    e.v[PM_GROUPS] = 2;
    ops_shape b6[2] = {SHAPE(1, 4, 8, 8), SHAPE(5, 2, 3, 3)};
    EXPECT_ERR(OP_CONV2D, &e, 2, b6, "conv2d: groups = 2 does not divide the 5 filters");

    /* ops_window2d exposes the resolved geometry */
    ops_window win;
    ops_params g = defaults(OP_CONV2D);
    g.v[PM_PAD] = OPS_PAD_SAME;
    g.v[PM_STRIDE_H] = g.v[PM_STRIDE_W] = 2;
    ops_shape gx = SHAPE(1, 3, 224, 224), gw = SHAPE(64, 3, 7, 7);
    CHECK_EQ_INT(ops_window2d(OP_CONV2D, &g, &gx, &gw, &win, NULL, 0), 0);
    CHECK(win.oh == 112 && win.ow == 112 && win.pt == 2 && win.pb == 3 && win.pl == 2 && win.pr == 3);
    char err[128];
    CHECK_EQ_INT(ops_window2d(OP_RELU, &g, &gx, &gw, &win, err, sizeof err), -1);
}

/* --- matmul --------------------------------------------------------------------------------- */

static void ref_matmul(const ops_shape *as, const ops_shape *bs, const ops_shape *os, const float *a, const float *b,
                       const float *bias, int act, double *y, double *yabs) {
    int32_t r = os->rank;
    int64_t m = os->dims[r - 2], n = os->dims[r - 1], k = as->dims[as->rank - 1];
    int64_t nb = numel(os) / (m * n);
    for (int64_t bi = 0; bi < nb; bi++) {
        /* batch index -> coordinates -> offsets with broadcasting */
        int64_t idx[OPS_MAX_DIMS] = {0}, t = bi;
        for (int32_t i = r - 3; i >= 0; i--) {
            idx[i] = t % os->dims[i];
            t /= os->dims[i];
        }
        int64_t ao = 0, bo = 0;
        for (int32_t i = 0; i < as->rank - 2; i++) {
            int64_t ci = as->dims[i] == 1 ? 0 : idx[i + (r - as->rank)];
            ao = ao * as->dims[i] + ci;
        }
        for (int32_t i = 0; i < bs->rank - 2; i++) {
            int64_t ci = bs->dims[i] == 1 ? 0 : idx[i + (r - bs->rank)];
            bo = bo * bs->dims[i] + ci;
        }
        const float *A = a + ao * m * k, *B = b + bo * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0, sa = 0;
                for (int64_t p = 0; p < k; p++) {
                    s += (double)A[i * k + p] * B[p * n + j];
                    sa += fabs((double)A[i * k + p] * B[p * n + j]);
                }
                if (bias) {
                    s += bias[j];
                    sa += fabs(bias[j]);
                }
                y[(bi * m + i) * n + j] = act_d(act, s);
                yabs[(bi * m + i) * n + j] = sa;
            }
    }
}

static void matmul_random_case(ops_shape as, ops_shape bs, ops_shape want, int use_bias, int act, uint64_t seed) {
    ops_params p = defaults(OP_MATMUL);
    p.v[PM_ACT] = act;
    int64_t n = bs.dims[bs.rank - 1];
    ops_shape in[3] = {as, bs, SHAPE(n)};
    float *a = rand_buf(numel(&as), seed, -1, 1), *b = rand_buf(numel(&bs), seed + 1, -1, 1);
    float *bias = rand_buf(n, seed + 2, -1, 1);
    const float *xs[3] = {a, b, bias};
    result r;
    if (run(OP_MATMUL, &p, use_bias ? 3 : 2, in, xs, &r) == 0) {
        CHECK(ops_shape_eq(&r.out[0], &want));
        int64_t no = numel(&want);
        double *y = malloc(sizeof(double) * (size_t)no), *ya = malloc(sizeof(double) * (size_t)no);
        ref_matmul(&as, &bs, &want, a, b, use_bias ? bias : NULL, act, y, ya);
        int ok = 1;
        for (int64_t i = 0; i < no && ok; i++)
            if (!(fabs((double)r.y[0][i] - y[i]) <= 1e-5 * ya[i] + 1e-6)) {
                fprintf(stderr, "matmul seed %llu: element %lld: %.9g vs %.9g\n", (unsigned long long)seed,
                        (long long)i, (double)r.y[0][i], y[i]);
                ok = 0;
            }
        CHECK(ok);
        free(y);
        free(ya);
        result_free(&r);
    }
    free(a);
    free(b);
    free(bias);
}

static void test_matmul(void) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, bias[2] = {1, -200};
    ops_shape in[3] = {SHAPE(2, 3), SHAPE(3, 2), SHAPE(2)};
    const float *xs[3] = {a, b, bias};
    ops_params p = defaults(OP_MATMUL);
    result r;
    if (run(OP_MATMUL, &p, 2, in, xs, &r) == 0) {
        float want[4] = {58, 64, 139, 154};
        ops_shape ws = SHAPE(2, 2);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 4, "matmul"));
        result_free(&r);
    }
    p.v[PM_ACT] = OPS_ACT_RELU;
    if (run(OP_MATMUL, &p, 3, in, xs, &r) == 0) {
        float want[4] = {59, 0, 140, 0};
        CHECK(same_floats(r.y[0], want, 4, "matmul bias relu"));
        result_free(&r);
    }
    /* batch broadcast: one A against two B */
    float b2[12] = {7, 8, 9, 10, 11, 12, 1, 0, 0, 1, 0, 0};
    ops_shape inb[2] = {SHAPE(2, 3), SHAPE(2, 3, 2)};
    const float *xsb[2] = {a, b2};
    p = defaults(OP_MATMUL);
    if (run(OP_MATMUL, &p, 2, inb, xsb, &r) == 0) {
        float want[8] = {58, 64, 139, 154, 1, 2, 4, 5};
        ops_shape ws = SHAPE(2, 2, 2);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 8, "matmul batch broadcast"));
        result_free(&r);
    }
    matmul_random_case(SHAPE(5, 7), SHAPE(7, 9), SHAPE(5, 9), 0, OPS_ACT_NONE, 1);
    matmul_random_case(SHAPE(3, 1, 17, 33), SHAPE(2, 33, 130), SHAPE(3, 2, 17, 130), 1, OPS_ACT_NONE, 2);
    matmul_random_case(SHAPE(9, 300), SHAPE(300, 257), SHAPE(9, 257), 1, OPS_ACT_RELU, 3);
    matmul_random_case(SHAPE(1, 64), SHAPE(64, 10), SHAPE(1, 10), 1, OPS_ACT_GELU, 4);
    matmul_random_case(SHAPE(2, 1, 16, 8), SHAPE(1, 3, 8, 5), SHAPE(2, 3, 16, 5), 0, OPS_ACT_TANH, 5);
    matmul_random_case(SHAPE(4, 24, 16), SHAPE(16, 8), SHAPE(4, 24, 8), 1, OPS_ACT_SIGMOID, 6);
    matmul_random_case(SHAPE(7, 40), SHAPE(40, 33), SHAPE(7, 33), 1, OPS_ACT_SILU, 7);
    matmul_random_case(SHAPE(2, 9, 12), SHAPE(12, 20), SHAPE(2, 9, 20), 1, OPS_ACT_GELU_TANH, 8);
    matmul_random_case(SHAPE(6, 300), SHAPE(300, 5), SHAPE(6, 5), 0, OPS_ACT_RELU6, 9);
    matmul_random_case(SHAPE(3, 16), SHAPE(16, 70), SHAPE(3, 70), 1, OPS_ACT_HARDSWISH, 10);
    /* shape errors */
    ops_params e = defaults(OP_MATMUL);
    ops_shape e1[2] = {SHAPE(3), SHAPE(3, 2)};
    EXPECT_ERR(OP_MATMUL, &e, 2, e1, "matmul: input 0 (A) has 1 dims, expected at least 2");
    ops_shape e2[2] = {SHAPE(2, 3), SHAPE(4, 2)};
    EXPECT_ERR(OP_MATMUL, &e, 2, e2, "matmul: input 1 (B) has 4 rows (dim 0), expected k = 3");
    ops_shape e3[2] = {SHAPE(2, 2, 3), SHAPE(3, 3, 2)};
    EXPECT_ERR(OP_MATMUL, &e, 2, e3, "matmul: batch dims of A (2,2,3) and B (3,3,2) do not broadcast (2 vs 3)");
    ops_shape e4[3] = {SHAPE(2, 3), SHAPE(3, 2), SHAPE(3)};
    EXPECT_ERR(OP_MATMUL, &e, 3, e4, "matmul: input 2 (bias) has shape (3), expected (2)");
}

/* --- elementwise ---------------------------------------------------------------------------- */

/* Offset of output element i in a tensor of shape src broadcast to out. */
static int64_t bcast_index(const ops_shape *src, const ops_shape *out, int64_t i) {
    int64_t off = 0, stride = 1;
    for (int32_t d = out->rank - 1; d >= 0; d--) {
        int64_t coord = i % out->dims[d];
        i /= out->dims[d];
        int32_t sd = d - (out->rank - src->rank);
        if (sd >= 0) {
            if (src->dims[sd] != 1)
                off += coord * stride;
            stride *= src->dims[sd];
        }
    }
    return off;
}

static float ew_ref(ops_type op, float u, float v) {
    switch (op) {
    case OP_EWADD:
        return u + v;
    case OP_EWMUL:
        return u * v;
    case OP_EWSUB:
        return u - v;
    case OP_EWDIV:
        return u / v;
    default:
        return (float)pow((double)u, (double)v);
    }
}

static void test_elementwise(void) {
    float a[6] = {1, 2, 3, 4, 5, 6}, row[3] = {10, 20, 30}, col[2] = {2, 3}, two[1] = {2};
    ops_params p = defaults(OP_EWADD);
    result r;
    ops_shape in1[2] = {SHAPE(2, 3), SHAPE(3)};
    const float *x1[2] = {a, row};
    if (run(OP_EWADD, &p, 2, in1, x1, &r) == 0) {
        float want[6] = {11, 22, 33, 14, 25, 36};
        CHECK(same_floats(r.y[0], want, 6, "ewadd row"));
        result_free(&r);
    }
    ops_shape in2[2] = {SHAPE(2, 3), SHAPE(2, 1)};
    const float *x2[2] = {a, col};
    if (run(OP_EWMUL, &p, 2, in2, x2, &r) == 0) {
        float want[6] = {2, 4, 6, 12, 15, 18};
        CHECK(same_floats(r.y[0], want, 6, "ewmul col"));
        result_free(&r);
    }
    if (run(OP_EWSUB, &p, 2, in1, x1, &r) == 0) {
        float want[6] = {-9, -18, -27, -6, -15, -24};
        CHECK(same_floats(r.y[0], want, 6, "ewsub"));
        result_free(&r);
    }
    ops_shape in3[2] = {SHAPE(2, 3), SCALAR};
    const float *x3[2] = {a, two};
    if (run(OP_EWDIV, &p, 2, in3, x3, &r) == 0) {
        float want[6] = {0.5f, 1, 1.5f, 2, 2.5f, 3};
        CHECK(same_floats(r.y[0], want, 6, "ewdiv scalar"));
        result_free(&r);
    }
    if (run(OP_POW, &p, 2, in3, x3, &r) == 0) {
        float want[6] = {1, 4, 9, 16, 25, 36};
        CHECK(same_floats(r.y[0], want, 6, "pow 2"));
        result_free(&r);
    }
    float four[2] = {4, 9}, half[1] = {0.5f};
    ops_shape in4[2] = {SHAPE(2), SHAPE(1)};
    const float *x4[2] = {four, half};
    if (run(OP_POW, &p, 2, in4, x4, &r) == 0) {
        float want[2] = {2, 3};
        CHECK(same_floats(r.y[0], want, 2, "pow 0.5"));
        result_free(&r);
    }
    /* the broadcast dim may be on either side, and the scalar first */
    ops_shape in5[2] = {SCALAR, SHAPE(2, 3)};
    const float *x5[2] = {two, a};
    if (run(OP_EWSUB, &p, 2, in5, x5, &r) == 0) {
        float want[6] = {1, 0, -1, -2, -3, -4};
        ops_shape ws = SHAPE(2, 3);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 6, "ewsub scalar first"));
        result_free(&r);
    }

    /* random broadcasting pairs against index mapping: exact */
    struct {
        ops_shape a, b, o;
    } pairs[] = {
        {SHAPE(4, 1, 3), SHAPE(5, 1), SHAPE(4, 5, 3)},
        {SCALAR, SHAPE(2, 3), SHAPE(2, 3)},
        {SHAPE(2, 3), SCALAR, SHAPE(2, 3)},
        {SHAPE(1), SHAPE(3, 4), SHAPE(3, 4)},
        {SHAPE(3, 4, 5), SHAPE(3, 4, 5), SHAPE(3, 4, 5)},
        {SHAPE(2, 1, 4, 1), SHAPE(3, 1, 5), SHAPE(2, 3, 4, 5)},
        {SHAPE(7, 1), SHAPE(1, 9), SHAPE(7, 9)},
        {SHAPE(1, 1, 300), SHAPE(200, 1), SHAPE(1, 200, 300)},
    };
    const ops_type ew[] = {OP_EWADD, OP_EWMUL, OP_EWSUB, OP_EWDIV, OP_POW};
    for (int k = 0; k < NELEM(pairs); k++)
        for (int e = 0; e < NELEM(ew); e++) {
            ops_shape in[2] = {pairs[k].a, pairs[k].b};
            float lo = ew[e] == OP_POW ? 0.1f : -2.0f;
            float *xa = rand_buf(numel(&in[0]), 300 + (uint64_t)k, lo, 2);
            float *xb = rand_buf(numel(&in[1]), 400 + (uint64_t)k, ew[e] == OP_POW ? -2.0f : 0.5f, 2);
            const float *xs[2] = {xa, xb};
            if (run(ew[e], &p, 2, in, xs, &r) == 0) {
                CHECK(ops_shape_eq(&r.out[0], &pairs[k].o));
                int64_t n = numel(&pairs[k].o);
                float *want = malloc(sizeof(float) * (size_t)n);
                for (int64_t i = 0; i < n; i++)
                    want[i] = ew_ref(ew[e], xa[bcast_index(&in[0], &pairs[k].o, i)],
                                     xb[bcast_index(&in[1], &pairs[k].o, i)]);
                CHECK(same_floats(r.y[0], want, n, ops_table[ew[e]].name));
                free(want);
                result_free(&r);
            }
            free(xa);
            free(xb);
        }
    ops_shape bad[2] = {SHAPE(2, 3), SHAPE(4, 3)};
    EXPECT_ERR(OP_EWADD, &p, 2, bad, "ewadd: shapes (2,3) and (4,3) do not broadcast (output dim 0: 2 vs 4)");
    ops_shape bad2[2] = {SHAPE(5, 2, 3), SHAPE(3, 3)};
    EXPECT_ERR(OP_EWMUL, &p, 2, bad2, "ewmul: shapes (5,2,3) and (3,3) do not broadcast (output dim 1: 2 vs 3)");
    EXPECT_ERR(OP_EWSUB, &p, 2, bad, "ewsub: shapes");
    EXPECT_ERR(OP_EWDIV, &p, 2, bad, "ewdiv: shapes");
    EXPECT_ERR(OP_POW, &p, 2, bad, "pow: shapes");
    EXPECT_ERR(OP_EWADD, &p, 1, bad, "ewadd: 1 input, expected 2");
}

static void test_smul(void) {
    float x[3] = {1, -2, 3}, s[1] = {2};
    ops_params p = defaults(OP_SMUL);
    const ops_shape scal[3] = {SCALAR, SHAPE(1), SHAPE(1, 1, 1)};
    result r;
    for (int k = 0; k < 3; k++) {
        ops_shape in[2] = {SHAPE(3), scal[k]};
        const float *xs[2] = {x, s};
        if (run(OP_SMUL, &p, 2, in, xs, &r) == 0) {
            float want[3] = {2, -4, 6};
            CHECK(ops_shape_eq(&r.out[0], &in[0]));
            CHECK(same_floats(r.y[0], want, 3, "smul"));
            result_free(&r);
        }
    }
    ops_shape in[2] = {SHAPE(3, 50, 70), SHAPE(1)};
    float *xr = rand_buf(numel(&in[0]), 7, -3, 3), k[1] = {-0.75f};
    const float *xs[2] = {xr, k};
    if (run(OP_SMUL, &p, 2, in, xs, &r) == 0) {
        int ok = 1;
        for (int64_t i = 0; i < numel(&in[0]); i++)
            ok &= r.y[0][i] == xr[i] * -0.75f;
        CHECK(ok);
        result_free(&r);
    }
    free(xr);
    ops_shape bad[2] = {SHAPE(3), SHAPE(2)};
    EXPECT_ERR(OP_SMUL, &p, 2, bad, "smul: input 1 (scalar) has shape (2), expected a single element");
}

static void test_unary(void) {
    float x[5] = {-1, 0, 2, 1, 4};
    ops_shape in = SHAPE(5);
    const float *xs[1] = {x};
    ops_params p = defaults(OP_RELU);
    result r;
    if (run(OP_RELU, &p, 1, &in, xs, &r) == 0) {
        float want[5] = {0, 0, 2, 1, 4};
        CHECK(same_floats(r.y[0], want, 5, "relu"));
        result_free(&r);
    }
    float nan1[1] = {NAN};
    ops_shape in1 = SHAPE(1);
    const float *xn[1] = {nan1};
    if (run(OP_RELU, &p, 1, &in1, xn, &r) == 0) { /* NaN is not clamped to 0 */
        CHECK(isnan(r.y[0][0]));
        result_free(&r);
    }
    if (run(OP_SIGMOID, &p, 1, &in, xs, &r) == 0) {
        CHECK_NEAR(r.y[0][1], 0.5, 0);
        CHECK_NEAR(r.y[0][0], 0.2689414213699951, 1e-7);
        result_free(&r);
    }
    if (run(OP_TANH, &p, 1, &in, xs, &r) == 0) {
        CHECK_NEAR(r.y[0][1], 0.0, 0);
        CHECK_NEAR(r.y[0][3], 0.7615941559557649, 1e-7);
        result_free(&r);
    }
    if (run(OP_GELU, &p, 1, &in, xs, &r) == 0) {
        CHECK_NEAR(r.y[0][1], 0.0, 0);
        CHECK_NEAR(r.y[0][3], 0.8413447460685429, 1e-7);
        CHECK_NEAR(r.y[0][0], -0.15865525393145707, 1e-7);
        result_free(&r);
    }
    if (run(OP_ERF, &p, 1, &in, xs, &r) == 0) {
        CHECK_NEAR(r.y[0][1], 0.0, 0);
        CHECK_NEAR(r.y[0][3], 0.8427007929497149, 1e-7);
        CHECK_NEAR(r.y[0][0], -0.8427007929497149, 1e-7);
        result_free(&r);
    }
    if (run(OP_HARDSWISH, &p, 1, &in, xs, &r) == 0) { /* x * max(0, min(1, x/6 + 1/2)) */
        float want[5] = {-1.0f / 3.0f, 0.0f, 5.0f / 3.0f, 2.0f / 3.0f, 4.0f};
        CHECK(same_floats(r.y[0], want, 5, "hardswish"));
        result_free(&r);
    }
    float hx[6] = {-3.0f, 3.0f, -1e30f, 1e30f, NAN, -0.0f}; /* the kinks, far out, NaN */
    ops_shape hin = SHAPE(6);
    const float *hxs[1] = {hx};
    if (run(OP_HARDSWISH, &p, 1, &hin, hxs, &r) == 0) {
        CHECK(r.y[0][0] == 0.0f && r.y[0][1] == 3.0f && r.y[0][2] == 0.0f && r.y[0][3] == 1e30f);
        CHECK(isnan(r.y[0][4]) && r.y[0][5] == 0.0f);
        result_free(&r);
    }
    if (run(OP_SILU, &p, 1, &in, xs, &r) == 0) { /* x * sigmoid(x) */
        CHECK_NEAR(r.y[0][1], 0.0, 0);
        CHECK_NEAR(r.y[0][0], -0.2689414213699951, 1e-7);
        CHECK_NEAR(r.y[0][2], 1.7615941559557649, 1e-7);
        result_free(&r);
    }
    if (run(OP_GELU_TANH, &p, 1, &in, xs, &r) == 0) { /* torch gelu(approximate="tanh") in double */
        CHECK_NEAR(r.y[0][1], 0.0, 0);
        CHECK_NEAR(r.y[0][3], 0.8411919906082768, 1e-7);
        CHECK_NEAR(r.y[0][0], -0.15880800939172324, 1e-7);
        result_free(&r);
    }
    float sx[5] = {-INFINITY, INFINITY, NAN, -100.0f, 100.0f}; /* the far ends and NaN */
    const float *sxs[1] = {sx};
    if (run(OP_SILU, &p, 1, &in, sxs, &r) == 0) {
        CHECK(isnan(r.y[0][0]) && r.y[0][1] == INFINITY && isnan(r.y[0][2]));
        CHECK(r.y[0][3] > -1e-40f && r.y[0][3] <= 0.0f && r.y[0][4] == 100.0f);
        result_free(&r);
    }
    if (run(OP_GELU_TANH, &p, 1, &in, sxs, &r) == 0) {
        CHECK(isnan(r.y[0][0]) && r.y[0][1] == INFINITY && isnan(r.y[0][2]));
        CHECK(r.y[0][3] == 0.0f && r.y[0][4] == 100.0f);
        result_free(&r);
    }
    if (run(OP_SQRT, &p, 1, &in, xs, &r) == 0) {
        CHECK(isnan(r.y[0][0]));
        CHECK(r.y[0][2] == sqrtf(2.0f) && r.y[0][4] == 2.0f && r.y[0][1] == 0.0f);
        result_free(&r);
    }
    /* random against double libm, rounded once */
    ops_shape rin = SHAPE(3, 101, 67);
    int64_t n = numel(&rin);
    float *xr = rand_buf(n, 11, -6, 6);
    const float *xrs[1] = {xr};
    const ops_type un[] = {OP_RELU, OP_SIGMOID, OP_TANH, OP_GELU, OP_ERF, OP_HARDSWISH, OP_SQRT, OP_SILU, OP_GELU_TANH};
    for (int u = 0; u < NELEM(un); u++) {
        if (run(un[u], &p, 1, &rin, xrs, &r) < 0)
            continue;
        double *want = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            double v = xr[i];
            switch (un[u]) {
            case OP_RELU:
                want[i] = v < 0 ? 0 : v;
                break;
            case OP_SIGMOID:
                want[i] = 1.0 / (1.0 + exp(-v));
                break;
            case OP_TANH:
                want[i] = tanh(v);
                break;
            case OP_GELU:
                want[i] = v * 0.5 * erfc(-v / sqrt(2.0));
                break;
            case OP_ERF:
                want[i] = erf(v);
                break;
            case OP_HARDSWISH:
                want[i] = v * fmax(0.0, fmin(1.0, v / 6.0 + 0.5));
                break;
            case OP_SILU:
                want[i] = act_d(OPS_ACT_SILU, v);
                break;
            case OP_GELU_TANH:
                want[i] = act_d(OPS_ACT_GELU_TANH, v);
                break;
            default:
                want[i] = v < 0 ? NAN : sqrt(v);
                break;
            }
        }
        int ok = 1;
        for (int64_t i = 0; i < n && ok; i++)
            if (isnan(want[i]) ? !isnan(r.y[0][i]) : !(fabs(r.y[0][i] - want[i]) <= 1e-7 + 1.2e-7 * fabs(want[i]))) {
                fprintf(stderr, "%s: x = %.9g: %.9g vs %.9g\n", ops_table[un[u]].name, (double)xr[i],
                        (double)r.y[0][i], want[i]);
                ok = 0;
            }
        CHECK(ok);
        free(want);
        result_free(&r);
    }
    free(xr);
    ops_shape two[2] = {SHAPE(2), SHAPE(2)};
    EXPECT_ERR(OP_SIGMOID, &p, 2, two, "sigmoid: 2 inputs, expected 1");
    EXPECT_ERR(OP_TANH, &p, 0, two, "tanh: 0 inputs, expected 1");
    EXPECT_ERR(OP_GELU, &p, 2, two, "gelu: 2 inputs");
    EXPECT_ERR(OP_ERF, &p, 2, two, "erf: 2 inputs");
    EXPECT_ERR(OP_SQRT, &p, 2, two, "sqrt: 2 inputs");
    EXPECT_ERR(OP_HARDSWISH, &p, 2, two, "hardswish: 2 inputs, expected 1");
    EXPECT_ERR(OP_SILU, &p, 2, two, "silu: 2 inputs, expected 1");
    EXPECT_ERR(OP_GELU_TANH, &p, 0, two, "gelu_tanh: 0 inputs, expected 1");
    ops_shape zero = SHAPE(0);
    EXPECT_ERR(OP_RELU, &p, 1, &zero, "relu: input 0 (x) has dim 0 = 0");
}

static void test_clip(void) {
    float x[4] = {-2, -0.5f, 3, NAN};
    ops_shape in = SHAPE(4);
    const float *xs[1] = {x};
    ops_params p = defaults(OP_CLIP);
    result r;
    if (run(OP_CLIP, &p, 1, &in, xs, &r) == 0) { /* defaults: no change */
        CHECK(same_floats(r.y[0], x, 4, "clip defaults"));
        result_free(&r);
    }
    p.v[PM_LO] = ops_f2p(-1.0f);
    p.v[PM_HI] = ops_f2p(1.0f);
    if (run(OP_CLIP, &p, 1, &in, xs, &r) == 0) {
        float want[4] = {-1, -0.5f, 1, NAN};
        CHECK(same_floats(r.y[0], want, 4, "clip"));
        result_free(&r);
    }
    ops_shape rin = SHAPE(1000);
    float *xr = rand_buf(1000, 12, -3, 3);
    const float *xrs[1] = {xr};
    p.v[PM_LO] = ops_f2p(-0.25f);
    p.v[PM_HI] = ops_f2p(2.0f);
    if (run(OP_CLIP, &p, 1, &rin, xrs, &r) == 0) {
        int ok = 1;
        for (int i = 0; i < 1000; i++)
            ok &= r.y[0][i] == fminf(fmaxf(xr[i], -0.25f), 2.0f);
        CHECK(ok);
        result_free(&r);
    }
    free(xr);
    p.v[PM_LO] = ops_f2p(3.0f);
    EXPECT_ERR(OP_CLIP, &p, 1, &in, "clip: lo = 3 is greater than hi = 2");
}

/* --- data movement -------------------------------------------------------------------------- */

static void test_transpose(void) {
    float a[6] = {1, 2, 3, 4, 5, 6};
    ops_shape in = SHAPE(2, 3);
    const float *xs[1] = {a};
    ops_params p = defaults(OP_TRANSPOSE);
    p.n_list = 2;
    p.list[0] = 1;
    p.list[1] = 0;
    result r;
    if (run(OP_TRANSPOSE, &p, 1, &in, xs, &r) == 0) {
        float want[6] = {1, 4, 2, 5, 3, 6};
        ops_shape ws = SHAPE(3, 2);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 6, "transpose"));
        result_free(&r);
    }
    /* random ranks 3..6 against index mapping */
    const struct {
        ops_shape x;
        int64_t perm[6];
    } cases[] = {
        {SHAPE(2, 3, 4), {2, 0, 1}},
        {SHAPE(3, 4, 5, 6), {2, 0, 3, 1}},
        {SHAPE(2, 3, 2, 3, 2), {4, 3, 2, 1, 0}},
        {SHAPE(2, 1, 3, 2, 2, 3), {5, 1, 0, 3, 4, 2}},
        {SHAPE(4, 5, 6), {0, 1, 2}},
    };
    for (int k = 0; k < NELEM(cases); k++) {
        const ops_shape *x = &cases[k].x;
        ops_params q = defaults(OP_TRANSPOSE);
        q.n_list = x->rank;
        memcpy(q.list, cases[k].perm, sizeof(int64_t) * (size_t)x->rank);
        int64_t n = numel(x);
        float *xr = rand_buf(n, 20 + (uint64_t)k, -1, 1);
        const float *xrs[1] = {xr};
        if (run(OP_TRANSPOSE, &q, 1, x, xrs, &r) == 0) {
            int64_t xst[OPS_MAX_DIMS], acc = 1;
            for (int32_t d = x->rank - 1; d >= 0; d--) {
                xst[d] = acc;
                acc *= x->dims[d];
            }
            int ok = 1;
            for (int64_t i = 0; i < n; i++) {
                int64_t t = i, off = 0;
                for (int32_t d = x->rank - 1; d >= 0; d--) {
                    CHECK_EQ_INT(r.out[0].dims[d], x->dims[q.list[d]]);
                    off += (t % r.out[0].dims[d]) * xst[q.list[d]];
                    t /= r.out[0].dims[d];
                }
                ok &= r.y[0][i] == xr[off];
            }
            CHECK(ok);
            result_free(&r);
        }
        free(xr);
    }
    ops_params e = defaults(OP_TRANSPOSE);
    e.n_list = 3;
    e.list[0] = 0;
    e.list[1] = 1;
    e.list[2] = 2;
    EXPECT_ERR(OP_TRANSPOSE, &e, 1, &in, "transpose: perm has 3 entries, input 0 (x) has rank 2");
    e.n_list = 2;
    e.list[1] = 0;
    EXPECT_ERR(OP_TRANSPOSE, &e, 1, &in, "transpose: perm is not a permutation of 0..1 (entry 1 = 0)");
    e.list[1] = 2;
    EXPECT_ERR(OP_TRANSPOSE, &e, 1, &in, "transpose: perm is not a permutation of 0..1 (entry 1 = 2)");
}

static void test_concat_split(void) {
    float a[2] = {1, 2}, b[1] = {3};
    ops_shape in[2] = {SHAPE(2), SHAPE(1)};
    const float *xs[2] = {a, b};
    ops_params p = defaults(OP_CONCAT);
    result r;
    if (run(OP_CONCAT, &p, 2, in, xs, &r) == 0) {
        float want[3] = {1, 2, 3};
        CHECK(same_floats(r.y[0], want, 3, "concat axis 0"));
        result_free(&r);
    }
    float c[2] = {1, 2}, d[4] = {3, 4, 5, 6};
    ops_shape in2[2] = {SHAPE(2, 1), SHAPE(2, 2)};
    const float *xs2[2] = {c, d};
    p.v[PM_AXIS] = 1;
    if (run(OP_CONCAT, &p, 2, in2, xs2, &r) == 0) {
        float want[6] = {1, 3, 4, 2, 5, 6};
        ops_shape ws = SHAPE(2, 3);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 6, "concat axis 1"));
        result_free(&r);
    }
    /* split equal and by sizes */
    float s6[6] = {1, 2, 3, 4, 5, 6};
    ops_shape sin = SHAPE(6);
    const float *sx[1] = {s6};
    ops_params sp = defaults(OP_SPLIT);
    sp.v[PM_AXIS] = 0;
    sp.v[PM_PARTS] = 3;
    if (run(OP_SPLIT, &sp, 1, &sin, sx, &r) == 0) {
        CHECK_EQ_INT(r.n_out, 3);
        float w0[2] = {1, 2}, w1[2] = {3, 4}, w2[2] = {5, 6};
        CHECK(same_floats(r.y[0], w0, 2, "split 0") && same_floats(r.y[1], w1, 2, "split 1") &&
              same_floats(r.y[2], w2, 2, "split 2"));
        result_free(&r);
    }
    sp.v[PM_PARTS] = 2;
    sp.n_list = 2;
    sp.list[0] = 1;
    sp.list[1] = 5;
    if (run(OP_SPLIT, &sp, 1, &sin, sx, &r) == 0) {
        CHECK_EQ_INT(r.n_out, 2);
        CHECK(r.out[0].dims[0] == 1 && r.out[1].dims[0] == 5);
        CHECK(same_floats(r.y[0], s6, 1, "split sizes 0") && same_floats(r.y[1], s6 + 1, 5, "split sizes 1"));
        result_free(&r);
    }
    /* random: concat along each axis against index mapping, then split inverts it */
    for (int64_t axis = 0; axis < 4; axis++) {
        ops_shape ins[3];
        int64_t extra[3] = {2, 1, 3};
        for (int k = 0; k < 3; k++) {
            ins[k] = SHAPE(2, 3, 4, 5);
            ins[k].dims[axis] = extra[k];
        }
        float *xk[3];
        for (int k = 0; k < 3; k++)
            xk[k] = rand_buf(numel(&ins[k]), 30 + (uint64_t)(axis * 3 + k), -1, 1);
        const float *xks[3] = {xk[0], xk[1], xk[2]};
        ops_params cp = defaults(OP_CONCAT);
        cp.v[PM_AXIS] = axis;
        result rc;
        if (run(OP_CONCAT, &cp, 3, ins, xks, &rc) == 0) {
            ops_shape o = rc.out[0];
            CHECK_EQ_INT(o.dims[axis], 6);
            int ok = 1;
            for (int64_t i = 0; i < numel(&o); i++) {
                int64_t coord[4], t = i;
                for (int dd = 3; dd >= 0; dd--) {
                    coord[dd] = t % o.dims[dd];
                    t /= o.dims[dd];
                }
                int k = 0;
                int64_t ca = coord[axis];
                while (ca >= ins[k].dims[axis])
                    ca -= ins[k++].dims[axis];
                coord[axis] = ca;
                int64_t off = 0;
                for (int dd = 0; dd < 4; dd++)
                    off = off * ins[k].dims[dd] + coord[dd];
                ok &= rc.y[0][i] == xk[k][off];
            }
            CHECK(ok);
            /* split back with sizes */
            ops_params sq = defaults(OP_SPLIT);
            sq.v[PM_AXIS] = axis;
            sq.v[PM_PARTS] = 3;
            sq.n_list = 3;
            for (int k = 0; k < 3; k++)
                sq.list[k] = extra[k];
            const float *cy[1] = {rc.y[0]};
            result rs;
            if (run(OP_SPLIT, &sq, 1, &o, cy, &rs) == 0) {
                for (int k = 0; k < 3; k++) {
                    CHECK(ops_shape_eq(&rs.out[k], &ins[k]));
                    CHECK(same_floats(rs.y[k], xk[k], numel(&ins[k]), "split inverts concat"));
                }
                result_free(&rs);
            }
            result_free(&rc);
        }
        for (int k = 0; k < 3; k++)
            free(xk[k]);
    }
    /* split equal parts then concat gives the input back */
    ops_shape x = SHAPE(3, 8, 5);
    float *xr = rand_buf(numel(&x), 40, -1, 1);
    const float *xrs[1] = {xr};
    ops_params sq = defaults(OP_SPLIT);
    sq.v[PM_AXIS] = 1;
    sq.v[PM_PARTS] = 4;
    if (run(OP_SPLIT, &sq, 1, &x, xrs, &r) == 0) {
        ops_params cp = defaults(OP_CONCAT);
        cp.v[PM_AXIS] = 1;
        const float *parts[4] = {r.y[0], r.y[1], r.y[2], r.y[3]};
        result rc;
        if (run(OP_CONCAT, &cp, 4, r.out, parts, &rc) == 0) {
            CHECK(ops_shape_eq(&rc.out[0], &x));
            CHECK(same_floats(rc.y[0], xr, numel(&x), "concat inverts split"));
            result_free(&rc);
        }
        result_free(&r);
    }
    free(xr);
    /* errors */
    ops_params e = defaults(OP_CONCAT);
    ops_shape e1[2] = {SHAPE(2, 3), SHAPE(2, 3, 1)};
    EXPECT_ERR(OP_CONCAT, &e, 2, e1, "concat: input 1 has rank 3, input 0 has rank 2");
    ops_shape e2[3] = {SHAPE(2, 3), SHAPE(4, 3), SHAPE(1, 2)};
    EXPECT_ERR(OP_CONCAT, &e, 3, e2, "concat: input 2 has dim 1 = 2, input 0 has 3 (only dim 0, the axis, may differ)");
    e.v[PM_AXIS] = 2;
    EXPECT_ERR(OP_CONCAT, &e, 2, e2, "concat: axis 2 out of range for input 0 of rank 2");
    e.v[PM_AXIS] = -1;
    EXPECT_ERR(OP_CONCAT, &e, 2, e2, "concat: parameter 'axis' = -1 out of range 0..5");
    ops_params se = defaults(OP_SPLIT);
    se.v[PM_PARTS] = 4;
    ops_shape s10 = SHAPE(10);
    EXPECT_ERR(OP_SPLIT, &se, 1, &s10, "split: dim 0 of input 0 (x) (= 10) does not divide into 4 equal parts");
    se.v[PM_PARTS] = 2;
    se.n_list = 2;
    se.list[0] = 4;
    se.list[1] = 5;
    EXPECT_ERR(OP_SPLIT, &se, 1, &s10, "split: sizes sum to 9, dim 0 of input 0 (x) is 10");
    se.v[PM_AXIS] = 1;
    EXPECT_ERR(OP_SPLIT, &se, 1, &s10, "split: axis 1 out of range for input 0 (x) of rank 1");
    se.v[PM_AXIS] = 0;
    se.list[0] = 0;
    EXPECT_ERR(OP_SPLIT, &se, 1, &s10, "split: sizes[0] = 0 out of range");
}

static void test_reshape(void) {
    float a[6] = {1, 2, 3, 4, 5, 6};
    ops_shape in = SHAPE(2, 3);
    const float *xs[1] = {a};
    ops_params p = defaults(OP_RESHAPE);
    p.n_list = 3;
    p.list[0] = 3;
    p.list[1] = 1;
    p.list[2] = 2;
    result r;
    if (run(OP_RESHAPE, &p, 1, &in, xs, &r) == 0) {
        ops_shape ws = SHAPE(3, 1, 2);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], a, 6, "reshape"));
        result_free(&r);
    }
    ops_shape big = SHAPE(4, 5, 6, 7);
    float *xr = rand_buf(numel(&big), 41, -1, 1);
    const float *xrs[1] = {xr};
    p.n_list = 2;
    p.list[0] = 20;
    p.list[1] = 42;
    if (run(OP_RESHAPE, &p, 1, &big, xrs, &r) == 0) {
        CHECK(same_floats(r.y[0], xr, numel(&big), "reshape random"));
        result_free(&r);
    }
    free(xr);
    p.list[1] = 5;
    EXPECT_ERR(OP_RESHAPE, &p, 1, &in, "reshape: shape (20,5) has 100 elements, input 0 (x) (2,3) has 6");
    p.list[1] = 0;
    EXPECT_ERR(OP_RESHAPE, &p, 1, &in, "reshape: shape[1] = 0 out of range");
    p.list[1] = -1;
    EXPECT_ERR(OP_RESHAPE, &p, 1, &in, "reshape: shape[1] = -1 out of range");
    p.n_list = 7;
    for (int i = 0; i < 7; i++)
        p.list[i] = 1;
    EXPECT_ERR(OP_RESHAPE, &p, 1, &in, "reshape: shape has 7 entries, at most 6");
    p.n_list = 0;
    EXPECT_ERR(OP_RESHAPE, &p, 1, &in, "reshape: parameter 'shape' is required");
}

static void test_gather(void) {
    float table[6] = {1, 2, 3, 4, 5, 6}, ids[4] = {2, 0, 1, 1};
    ops_shape in[2] = {SHAPE(3, 2), SHAPE(2, 2)};
    const float *xs[2] = {table, ids};
    ops_params p = defaults(OP_GATHER);
    result r;
    if (run(OP_GATHER, &p, 2, in, xs, &r) == 0) {
        float want[8] = {5, 6, 1, 2, 3, 4, 3, 4};
        ops_shape ws = SHAPE(2, 2, 2);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 8, "gather"));
        result_free(&r);
    }
    /* ids outside [0, V) or not integers give zero rows */
    float bad[4] = {-1, 3, 1.5f, 1};
    const float *xb[2] = {table, bad};
    ops_shape inb[2] = {SHAPE(3, 2), SHAPE(4)};
    if (run(OP_GATHER, &p, 2, inb, xb, &r) == 0) {
        float want[8] = {0, 0, 0, 0, 0, 0, 3, 4};
        CHECK(same_floats(r.y[0], want, 8, "gather out of range"));
        result_free(&r);
    }
    /* scalar ids drop the row dim; random rows against index mapping */
    ops_shape ins[2] = {SHAPE(50, 3, 4), SCALAR};
    float *tr = rand_buf(numel(&ins[0]), 42, -1, 1), one[1] = {17};
    const float *xsr[2] = {tr, one};
    if (run(OP_GATHER, &p, 2, ins, xsr, &r) == 0) {
        ops_shape ws = SHAPE(3, 4);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], tr + 17 * 12, 12, "gather scalar id"));
        result_free(&r);
    }
    ops_shape inr[2] = {SHAPE(50, 3, 4), SHAPE(5, 7)};
    float idr[35];
    for (int i = 0; i < 35; i++)
        idr[i] = (float)((i * 13 + 5) % 50);
    const float *xsr2[2] = {tr, idr};
    if (run(OP_GATHER, &p, 2, inr, xsr2, &r) == 0) {
        int ok = 1;
        for (int i = 0; i < 35; i++)
            ok &= same_floats(r.y[0] + i * 12, tr + (int)idr[i] * 12, 12, "gather random");
        CHECK(ok);
        result_free(&r);
    }
    free(tr);
    ops_shape e1[2] = {SCALAR, SHAPE(2)};
    EXPECT_ERR(OP_GATHER, &p, 2, e1, "gather: input 0 (table) is a scalar");
    ops_shape e3[2] = {SHAPE(5, 2, 2, 2), SHAPE(2, 2, 2, 2)};
    EXPECT_ERR(OP_GATHER, &p, 2, e3, "gather: the output would have rank 7 (ids rank 4 + table rank 4 - 1), at most 6");
    p.v[PM_AXIS] = 1;
    EXPECT_ERR(OP_GATHER, &p, 2, in, "gather: parameter 'axis' = 1 out of range 0..0");
}

/* --- pools ---------------------------------------------------------------------------------- */

typedef struct {
    int64_t N, C, H, W, kh, kw, sh, sw;
    int mode;
    int64_t pt, pl, pb, pr;
    int count_pad;
} pool_case;

static void pool_random_case(const pool_case *c, int is_max, uint64_t seed) {
    ops_type op = is_max ? OP_MAXPOOL2D : OP_AVGPOOL2D;
    ops_params p = defaults(op);
    p.v[PM_KH] = c->kh;
    p.v[PM_KW] = c->kw;
    p.v[PM_STRIDE_H] = c->sh;
    p.v[PM_STRIDE_W] = c->sw;
    p.v[PM_PAD] = c->mode;
    p.v[PM_PAD_T] = c->pt;
    p.v[PM_PAD_L] = c->pl;
    p.v[PM_PAD_B] = c->pb;
    p.v[PM_PAD_R] = c->pr;
    if (!is_max)
        p.v[PM_COUNT_PAD] = c->count_pad;
    ops_shape in = SHAPE(c->N, c->C, c->H, c->W);
    int64_t OH, OW, pt, pl;
    ref_geom(c->mode, c->H, c->kh, c->sh, 1, c->pt, c->pb, &OH, &pt);
    ref_geom(c->mode, c->W, c->kw, c->sw, 1, c->pl, c->pr, &OW, &pl);
    float *x = rand_buf(numel(&in), seed, -5, 5);
    const float *xs[1] = {x};
    result r;
    if (run(op, &p, 1, &in, xs, &r) < 0) {
        free(x);
        return;
    }
    ops_shape want = SHAPE(c->N, c->C, OH, OW);
    CHECK(ops_shape_eq(&r.out[0], &want));
    int ok = 1;
    for (int64_t nc = 0; nc < c->N * c->C; nc++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double s = 0, mx = -INFINITY;
                int64_t cnt = 0;
                for (int64_t i = 0; i < c->kh; i++)
                    for (int64_t j = 0; j < c->kw; j++) {
                        int64_t ih = oh * c->sh - pt + i, iw = ow * c->sw - pl + j;
                        if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W)
                            continue;
                        double v = x[(nc * c->H + ih) * c->W + iw];
                        s += v;
                        mx = v > mx ? v : mx;
                        cnt++;
                    }
                double ref = is_max ? mx : s / (double)(c->count_pad ? c->kh * c->kw : cnt);
                double got = r.y[0][(nc * OH + oh) * OW + ow];
                if (is_max ? got != ref : !(fabs(got - ref) <= 1e-5)) {
                    if (ok)
                        fprintf(stderr, "%s seed %llu at (%lld,%lld,%lld): %.9g vs %.9g\n", ops_table[op].name,
                                (unsigned long long)seed, (long long)nc, (long long)oh, (long long)ow, got, ref);
                    ok = 0;
                }
            }
    CHECK(ok);
    result_free(&r);
    free(x);
}

static void test_pools(void) {
    float x9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ops_shape in = SHAPE(1, 1, 3, 3);
    const float *xs[1] = {x9};
    ops_params p = defaults(OP_AVGPOOL2D);
    p.v[PM_KH] = p.v[PM_KW] = 2;
    result r;
    if (run(OP_AVGPOOL2D, &p, 1, &in, xs, &r) == 0) {
        float want[4] = {3, 4, 6, 7};
        CHECK(same_floats(r.y[0], want, 4, "avgpool 2x2"));
        result_free(&r);
    }
    if (run(OP_MAXPOOL2D, &p, 1, &in, xs, &r) == 0) {
        float want[4] = {5, 6, 8, 9};
        CHECK(same_floats(r.y[0], want, 4, "maxpool 2x2"));
        result_free(&r);
    }
    p.v[PM_KH] = p.v[PM_KW] = 3;
    p.v[PM_PAD] = OPS_PAD_SAME;
    if (run(OP_AVGPOOL2D, &p, 1, &in, xs, &r) == 0) { /* count_pad = 1: always / 9 */
        CHECK_NEAR(r.y[0][0], 12.0 / 9.0, 1e-6);
        CHECK_NEAR(r.y[0][4], 5.0, 1e-6);
        CHECK_NEAR(r.y[0][8], 28.0 / 9.0, 1e-6);
        result_free(&r);
    }
    p.v[PM_COUNT_PAD] = 0;
    if (run(OP_AVGPOOL2D, &p, 1, &in, xs, &r) == 0) { /* / valid cells */
        float want[9] = {3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7};
        CHECK(same_floats(r.y[0], want, 9, "avgpool same count_pad 0"));
        result_free(&r);
    }
    float neg[9] = {-1, -2, -3, -4, -5, -6, -7, -8, -9};
    const float *xn[1] = {neg};
    if (run(OP_MAXPOOL2D, &p, 1, &in, xn, &r) == 0) { /* padded cells are ignored, not zeros */
        float want[9] = {-1, -1, -2, -1, -1, -2, -4, -4, -5};
        CHECK(same_floats(r.y[0], want, 9, "maxpool same negative"));
        result_free(&r);
    }
    float xnan[9] = {1, 2, 3, 4, NAN, 6, 7, 8, 9};
    const float *xsn[1] = {xnan};
    p.v[PM_PAD] = OPS_PAD_VALID;
    if (run(OP_MAXPOOL2D, &p, 1, &in, xsn, &r) == 0) { /* a NaN in the window wins */
        CHECK(isnan(r.y[0][0]));
        result_free(&r);
    }
    const pool_case cases[] = {
        {1, 2, 7, 9, 3, 3, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 1},
        {2, 3, 8, 8, 3, 3, 2, 2, OPS_PAD_SAME, 0, 0, 0, 0, 0},
        {1, 2, 9, 7, 2, 3, 2, 1, OPS_PAD_EXPLICIT, 1, 2, 0, 1, 1},
        {1, 2, 9, 7, 3, 2, 3, 2, OPS_PAD_EXPLICIT, 2, 1, 1, 0, 0},
        {1, 4, 10, 11, 4, 4, 3, 3, OPS_PAD_VALID, 0, 0, 0, 0, 1},
        {1, 1, 112, 112, 3, 3, 2, 2, OPS_PAD_EXPLICIT, 1, 1, 1, 1, 1},
        {1, 2, 5, 5, 5, 5, 1, 1, OPS_PAD_SAME, 0, 0, 0, 0, 0},
    };
    for (int k = 0; k < NELEM(cases); k++) {
        pool_random_case(&cases[k], 0, 50 + (uint64_t)k);
        pool_random_case(&cases[k], 1, 60 + (uint64_t)k);
    }
    ops_params e = defaults(OP_MAXPOOL2D);
    e.v[PM_KH] = e.v[PM_KW] = 3;
    e.v[PM_PAD_T] = 3;
    ops_shape x8 = SHAPE(1, 1, 8, 8);
    EXPECT_ERR(OP_MAXPOOL2D, &e, 1, &x8, "maxpool2d: pad_t = 3 is not smaller than the window (3)");
    e.v[PM_PAD_T] = 0;
    e.v[PM_KH] = 9;
    EXPECT_ERR(OP_MAXPOOL2D, &e, 1, &x8, "maxpool2d: window height 9 is larger than the padded input height 8");
    ops_shape x3 = SHAPE(1, 8, 8);
    EXPECT_ERR(OP_MAXPOOL2D, &e, 1, &x3, "maxpool2d: input 0 (x) has 3 dims, expected 4");
    ops_params ea = defaults(OP_AVGPOOL2D);
    ea.v[PM_KH] = ea.v[PM_KW] = 2;
    ea.v[PM_COUNT_PAD] = 2;
    EXPECT_ERR(OP_AVGPOOL2D, &ea, 1, &x8, "avgpool2d: parameter 'count_pad' = 2 out of range 0..1");
    ea.v[PM_COUNT_PAD] = 1;
    ea.v[PM_PAD_R] = 2;
    EXPECT_ERR(OP_AVGPOOL2D, &ea, 1, &x8, "avgpool2d: pad_r = 2 is not smaller than the window (2)");

    /* globalavgpool */
    float g8[8] = {1, 2, 3, 4, 10, 20, 30, 41};
    ops_shape gin = SHAPE(1, 2, 2, 2);
    const float *gx[1] = {g8};
    ops_params gp = defaults(OP_GLOBALAVGPOOL);
    if (run(OP_GLOBALAVGPOOL, &gp, 1, &gin, gx, &r) == 0) {
        float want[2] = {2.5f, 25.25f};
        ops_shape ws = SHAPE(1, 2, 1, 1);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 2, "globalavgpool"));
        result_free(&r);
    }
    ops_shape grin = SHAPE(2, 3, 17, 19);
    float *gr = rand_buf(numel(&grin), 70, -1, 1);
    const float *grx[1] = {gr};
    if (run(OP_GLOBALAVGPOOL, &gp, 1, &grin, grx, &r) == 0) {
        double want[6];
        for (int c = 0; c < 6; c++) {
            double s = 0;
            for (int i = 0; i < 17 * 19; i++)
                s += gr[c * 17 * 19 + i];
            want[c] = s / (17 * 19);
        }
        CHECK(near_d(r.y[0], want, 6, 0, 1.2e-7, "globalavgpool random"));
        result_free(&r);
    }
    free(gr);
    EXPECT_ERR(OP_GLOBALAVGPOOL, &gp, 1, &x3, "globalavgpool: input 0 (x) has 3 dims, expected 4");
}

/* --- constants and the identities the generator relies on ----------------------------------- */

static void test_constants(void) {
    result r;
    ops_params p = defaults(OP_CONST_IMM);
    p.v[PM_N] = 3;
    if (run(OP_CONST_IMM, &p, 0, NULL, NULL, &r) == 0) {
        float want[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        ops_shape ws = SHAPE(3, 3);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 9, "const_imm"));
        /* A x I = A */
        ops_shape in[2] = {SHAPE(4, 3), SHAPE(3, 3)};
        float *a = rand_buf(12, 80, -1, 1);
        const float *xs[2] = {a, r.y[0]};
        ops_params mp = defaults(OP_MATMUL);
        result rm;
        if (run(OP_MATMUL, &mp, 2, in, xs, &rm) == 0) {
            CHECK(same_floats(rm.y[0], a, 12, "matmul with const_imm"));
            result_free(&rm);
        }
        free(a);
        result_free(&r);
    }
    p.v[PM_N] = 0;
    EXPECT_ERR(OP_CONST_IMM, &p, 0, NULL, "const_imm: parameter 'n' is required (1..65536)");
    EXPECT_ERR(OP_CONST_IMM, &p, 1, &(ops_shape){0}, "const_imm: 1 input, expected 0");

    /* const_iconv: conv with it ('same') is the identity */
    ops_params ip = defaults(OP_CONST_ICONV);
    ip.v[PM_C] = 4;
    ip.v[PM_KH] = 3;
    ip.v[PM_KW] = 5;
    if (run(OP_CONST_ICONV, &ip, 0, NULL, NULL, &r) == 0) {
        ops_shape ws = SHAPE(4, 4, 3, 5);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        double sum = 0;
        for (int64_t i = 0; i < numel(&ws); i++)
            sum += r.y[0][i];
        CHECK_NEAR(sum, 4, 0);
        CHECK(r.y[0][((2 * 4 + 2) * 3 + 1) * 5 + 2] == 1.0f);
        CHECK(r.y[0][((2 * 4 + 1) * 3 + 1) * 5 + 2] == 0.0f);
        ops_shape in[2] = {SHAPE(2, 4, 6, 7), ws};
        float *x = rand_buf(numel(&in[0]), 81, -1, 1);
        const float *xs[2] = {x, r.y[0]};
        ops_params cp = defaults(OP_CONV2D);
        cp.v[PM_PAD] = OPS_PAD_SAME;
        result rc;
        if (run(OP_CONV2D, &cp, 2, in, xs, &rc) == 0) {
            CHECK(ops_shape_eq(&rc.out[0], &in[0]));
            CHECK(same_floats(rc.y[0], x, numel(&in[0]), "conv with const_iconv"));
            result_free(&rc);
        }
        free(x);
        result_free(&r);
    }
    ip.v[PM_KH] = 2;
    EXPECT_ERR(OP_CONST_ICONV, &ip, 0, NULL, "const_iconv: kh = 2 and kw = 5 must be odd");

    /* const_ones */
    ops_params op = defaults(OP_CONST_ONES);
    op.n_list = 2;
    op.list[0] = 2;
    op.list[1] = 3;
    if (run(OP_CONST_ONES, &op, 0, NULL, NULL, &r) == 0) {
        float want[6] = {1, 1, 1, 1, 1, 1};
        ops_shape ws = SHAPE(2, 3);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 6, "const_ones"));
        result_free(&r);
    }
    op.n_list = 0;
    EXPECT_ERR(OP_CONST_ONES, &op, 0, NULL, "const_ones: parameter 'shape' is required");
    op.n_list = 7;
    for (int i = 0; i < 7; i++)
        op.list[i] = 1;
    EXPECT_ERR(OP_CONST_ONES, &op, 0, NULL, "const_ones: shape has 7 entries, at most 6");

    /* const_pool: a depthwise conv with it equals avgpool with count_pad = 1 */
    ops_params pp = defaults(OP_CONST_POOL);
    pp.v[PM_C] = 3;
    pp.v[PM_KH] = 3;
    pp.v[PM_KW] = 3;
    if (run(OP_CONST_POOL, &pp, 0, NULL, NULL, &r) == 0) {
        ops_shape ws = SHAPE(3, 1, 3, 3);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(r.y[0][0] == 1.0f / 9.0f && r.y[0][26] == 1.0f / 9.0f);
        ops_shape in[2] = {SHAPE(2, 3, 9, 8), ws};
        float *x = rand_buf(numel(&in[0]), 82, -1, 1);
        const float *xs[2] = {x, r.y[0]};
        ops_params cp = defaults(OP_CONV2D);
        cp.v[PM_PAD] = OPS_PAD_SAME;
        cp.v[PM_GROUPS] = 3;
        ops_params ap = defaults(OP_AVGPOOL2D);
        ap.v[PM_KH] = ap.v[PM_KW] = 3;
        ap.v[PM_PAD] = OPS_PAD_SAME;
        result rc, ra;
        if (run(OP_CONV2D, &cp, 2, in, xs, &rc) == 0 && run(OP_AVGPOOL2D, &ap, 1, in, xs, &ra) == 0) {
            CHECK(ops_shape_eq(&rc.out[0], &ra.out[0]));
            double *want = malloc(sizeof(double) * (size_t)numel(&ra.out[0]));
            for (int64_t i = 0; i < numel(&ra.out[0]); i++)
                want[i] = ra.y[0][i];
            CHECK(near_d(rc.y[0], want, numel(&ra.out[0]), 1e-6, 1e-6, "const_pool conv vs avgpool"));
            free(want);
            result_free(&rc);
            result_free(&ra);
        }
        free(x);
        result_free(&r);
    }
    pp.v[PM_C] = 0;
    EXPECT_ERR(OP_CONST_POOL, &pp, 0, NULL, "const_pool: parameter 'c' is required (1..65536)");
}

static void test_enlarge(void) {
    float k1[2] = {5, 7};
    ops_shape in = SHAPE(2, 1, 1, 1);
    const float *xs[1] = {k1};
    ops_params p = defaults(OP_ENLARGE);
    p.v[PM_KH] = 3;
    p.v[PM_KW] = 3;
    result r;
    if (run(OP_ENLARGE, &p, 1, &in, xs, &r) == 0) {
        float want[18] = {0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0};
        ops_shape ws = SHAPE(2, 1, 3, 3);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        CHECK(same_floats(r.y[0], want, 18, "enlarge"));
        result_free(&r);
    }
    /* random kernels against index mapping: each tap lands centred, every other tap is 0 */
    ops_shape kr = SHAPE(3, 2, 3, 1);
    float *wr = rand_buf(numel(&kr), 89, -1, 1);
    const float *wrs[1] = {wr};
    p.v[PM_KH] = 7;
    p.v[PM_KW] = 5;
    if (run(OP_ENLARGE, &p, 1, &kr, wrs, &r) == 0) {
        ops_shape ws = SHAPE(3, 2, 7, 5);
        CHECK(ops_shape_eq(&r.out[0], &ws));
        int ok = 1;
        for (int64_t fc = 0; fc < 6; fc++)
            for (int64_t i = 0; i < 7; i++)
                for (int64_t j = 0; j < 5; j++) {
                    int inside = i >= 2 && i < 5 && j == 2;
                    float want = inside ? wr[fc * 3 + (i - 2)] : 0.0f;
                    ok &= r.y[0][(fc * 7 + i) * 5 + j] == want;
                }
        CHECK(ok);
        result_free(&r);
    }
    free(wr);
    p.v[PM_KH] = p.v[PM_KW] = 3;
    /* enlarge then conv 'same' equals conv 'same' with the small kernel (exactly: the added taps are 0) */
    const int64_t small[][2] = {{1, 1}, {3, 3}, {1, 3}};
    const int64_t big[][2] = {{3, 3}, {5, 5}, {3, 5}};
    for (int k = 0; k < 3; k++) {
        ops_shape ks = SHAPE(6, 4, small[k][0], small[k][1]);
        float *w = rand_buf(numel(&ks), 90 + (uint64_t)k, -1, 1);
        const float *ws[1] = {w};
        ops_params ep = defaults(OP_ENLARGE);
        ep.v[PM_KH] = big[k][0];
        ep.v[PM_KW] = big[k][1];
        result re;
        if (run(OP_ENLARGE, &ep, 1, &ks, ws, &re) < 0) {
            free(w);
            continue;
        }
        ops_shape xsh = SHAPE(2, 4, 9, 10);
        float *x = rand_buf(numel(&xsh), 95 + (uint64_t)k, -1, 1);
        ops_shape in_s[2] = {xsh, ks}, in_b[2] = {xsh, re.out[0]};
        const float *xs_s[2] = {x, w}, *xs_b[2] = {x, re.y[0]};
        ops_params cp = defaults(OP_CONV2D);
        cp.v[PM_PAD] = OPS_PAD_SAME;
        result rs, rb;
        if (run(OP_CONV2D, &cp, 2, in_s, xs_s, &rs) == 0 && run(OP_CONV2D, &cp, 2, in_b, xs_b, &rb) == 0) {
            CHECK(ops_shape_eq(&rs.out[0], &rb.out[0]));
            CHECK(same_floats(rs.y[0], rb.y[0], numel(&rs.out[0]), "enlarge + conv"));
            result_free(&rs);
            result_free(&rb);
        }
        free(x);
        free(w);
        result_free(&re);
    }
    ops_shape k3 = SHAPE(2, 2, 3, 3);
    p.v[PM_KH] = 1;
    EXPECT_ERR(OP_ENLARGE, &p, 1, &k3, "enlarge: kh = 1 is smaller than the height 3 of input 0 (kernel)");
    p.v[PM_KH] = 4;
    EXPECT_ERR(OP_ENLARGE, &p, 1, &k3, "enlarge: kh = 4 minus the kernel height 3 is odd");
    p.v[PM_KH] = 5;
    p.v[PM_KW] = 6;
    EXPECT_ERR(OP_ENLARGE, &p, 1, &k3, "enlarge: kw = 6 minus the kernel width 3 is odd");
    ops_shape k2 = SHAPE(3, 3);
    EXPECT_ERR(OP_ENLARGE, &p, 1, &k2, "enlarge: input 0 (kernel) has 2 dims, expected 4");
}

/* --- normalisation -------------------------------------------------------------------------- */

static void test_batchnorm(void) {
    float x[4] = {1, 2, 3, 4}, scale[2] = {1, 2}, bias[2] = {0, 1}, mean[2] = {1, 3}, var[2] = {3.75f, 0.75f};
    ops_shape in[5] = {SHAPE(1, 2, 1, 2), SHAPE(2), SHAPE(2), SHAPE(2), SHAPE(2)};
    const float *xs[5] = {x, scale, bias, mean, var};
    ops_params p = defaults(OP_BATCHNORM);
    p.v[PM_EPS] = ops_f2p(0.25f); /* sqrt(var + eps) = 2 and 1 */
    result r;
    if (run(OP_BATCHNORM, &p, 5, in, xs, &r) == 0) {
        float want[4] = {0, 0.5f, 1, 3};
        CHECK(same_floats(r.y[0], want, 4, "batchnorm"));
        result_free(&r);
    }
    /* random, ranks 2 and 4, default eps */
    const ops_shape shapes[2] = {SHAPE(2, 3, 4, 5), SHAPE(7, 6)};
    p = defaults(OP_BATCHNORM);
    for (int k = 0; k < 2; k++) {
        int64_t C = shapes[k].dims[1], n = numel(&shapes[k]), inner = n / (shapes[k].dims[0] * C);
        ops_shape rin[5] = {shapes[k], SHAPE(C), SHAPE(C), SHAPE(C), SHAPE(C)};
        float *xr = rand_buf(n, 100 + (uint64_t)k, -2, 2), *sc = rand_buf(C, 101, -2, 2), *bi = rand_buf(C, 102, -1, 1);
        float *mu = rand_buf(C, 103, -1, 1), *va = rand_buf(C, 104, 0.01f, 3);
        const float *rx[5] = {xr, sc, bi, mu, va};
        if (run(OP_BATCHNORM, &p, 5, rin, rx, &r) == 0) {
            double *want = malloc(sizeof(double) * (size_t)n);
            for (int64_t i = 0; i < n; i++) {
                int64_t c = (i / inner) % C;
                want[i] = ((double)xr[i] - mu[c]) / sqrt((double)va[c] + (double)1e-5f) * sc[c] + bi[c];
            }
            CHECK(near_d(r.y[0], want, n, 1e-6, 1.2e-7, "batchnorm random"));
            free(want);
            result_free(&r);
        }
        free(xr);
        free(sc);
        free(bi);
        free(mu);
        free(va);
    }
    ops_shape e1[5] = {SHAPE(1, 3, 2, 2), SHAPE(3), SHAPE(3), SHAPE(5), SHAPE(3)};
    EXPECT_ERR(OP_BATCHNORM, &p, 5, e1, "batchnorm: input 3 (mean) has shape (5), expected (3)");
    ops_shape e2[5] = {SHAPE(1, 3, 2, 2), SHAPE(3, 1), SHAPE(3), SHAPE(3), SHAPE(3)};
    EXPECT_ERR(OP_BATCHNORM, &p, 5, e2, "batchnorm: input 1 (scale) has shape (3,1), expected (3)");
    ops_shape e3[5] = {SHAPE(3), SHAPE(3), SHAPE(3), SHAPE(3), SHAPE(3)};
    EXPECT_ERR(OP_BATCHNORM, &p, 5, e3, "batchnorm: input 0 (x) has 1 dims, expected at least 2");
    EXPECT_ERR(OP_BATCHNORM, &p, 4, e3, "batchnorm: 4 inputs, expected 5");
}

static void test_softmax(void) {
    float x[2] = {0, 1.0986122886681098f}; /* ln 3 */
    ops_shape in = SHAPE(1, 2);
    const float *xs[1] = {x};
    ops_params p = defaults(OP_SOFTMAX);
    p.v[PM_AXIS] = 1;
    result r;
    if (run(OP_SOFTMAX, &p, 1, &in, xs, &r) == 0) {
        CHECK_NEAR(r.y[0][0], 0.25, 1e-7);
        CHECK_NEAR(r.y[0][1], 0.75, 1e-7);
        result_free(&r);
    }
    float big[3] = {1000, 1000, -1000}; /* no overflow: the max is subtracted */
    ops_shape in3 = SHAPE(3);
    const float *xb[1] = {big};
    p.v[PM_AXIS] = 0;
    if (run(OP_SOFTMAX, &p, 1, &in3, xb, &r) == 0) {
        CHECK(r.y[0][0] == 0.5f && r.y[0][1] == 0.5f && r.y[0][2] == 0.0f);
        result_free(&r);
    }
    ops_shape rin = SHAPE(3, 4, 5);
    float *xr = rand_buf(60, 110, -4, 4);
    const float *xrs[1] = {xr};
    for (int64_t axis = 0; axis < 3; axis++) {
        p.v[PM_AXIS] = axis;
        if (run(OP_SOFTMAX, &p, 1, &rin, xrs, &r) < 0)
            continue;
        int64_t L = rin.dims[axis], inner = 1, outer = 1;
        for (int d = 0; d < 3; d++) {
            if (d < axis)
                outer *= rin.dims[d];
            if (d > axis)
                inner *= rin.dims[d];
        }
        double want[60];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                double s = 0;
                for (int64_t l = 0; l < L; l++)
                    s += exp((double)xr[(o * L + l) * inner + i]);
                for (int64_t l = 0; l < L; l++)
                    want[(o * L + l) * inner + i] = exp((double)xr[(o * L + l) * inner + i]) / s;
            }
        CHECK(near_d(r.y[0], want, 60, 1e-8, 1.2e-7, "softmax random"));
        result_free(&r);
    }
    free(xr);
    p.v[PM_AXIS] = 3;
    EXPECT_ERR(OP_SOFTMAX, &p, 1, &rin, "softmax: axis 3 out of range for input 0 (x) of rank 3");
    p.v[PM_AXIS] = 6;
    EXPECT_ERR(OP_SOFTMAX, &p, 1, &rin, "softmax: parameter 'axis' = 6 out of range 0..5");
}

static void test_layernorm(void) {
    float x[4] = {0, 0, 4, 4}, gamma[4] = {1, 2, 3, 4}, beta[4] = {0, 0, 0, 1};
    ops_shape in[3] = {SHAPE(1, 4), SHAPE(4), SHAPE(4)};
    const float *xs[3] = {x, gamma, beta};
    ops_params p = defaults(OP_LAYERNORM);
    p.v[PM_AXIS] = 1;
    p.v[PM_EPS] = ops_f2p(5.0f); /* mean 2, var 4: sqrt(var + eps) = 3 */
    result r;
    if (run(OP_LAYERNORM, &p, 1, in, xs, &r) == 0) {
        double want[4] = {-2.0 / 3, -2.0 / 3, 2.0 / 3, 2.0 / 3};
        CHECK(near_d(r.y[0], want, 4, 0, 1e-7, "layernorm"));
        result_free(&r);
    }
    if (run(OP_LAYERNORM, &p, 3, in, xs, &r) == 0) {
        double want[4] = {-2.0 / 3, -4.0 / 3, 2.0, 11.0 / 3};
        CHECK(near_d(r.y[0], want, 4, 0, 1e-7, "layernorm gamma beta"));
        result_free(&r);
    }
    /* random, normalising over the last two dims, with gamma only and with both */
    ops_shape rin[3] = {SHAPE(2, 3, 8), SHAPE(3, 8), SHAPE(3, 8)};
    float *xr = rand_buf(48, 120, -3, 3), *g = rand_buf(24, 121, -2, 2), *b = rand_buf(24, 122, -1, 1);
    const float *rx[3] = {xr, g, b};
    p = defaults(OP_LAYERNORM);
    p.v[PM_AXIS] = 1;
    for (int n_in = 1; n_in <= 3; n_in++) {
        if (run(OP_LAYERNORM, &p, n_in, rin, rx, &r) < 0)
            continue;
        double want[48];
        for (int o = 0; o < 2; o++) {
            double mean = 0, var = 0;
            for (int l = 0; l < 24; l++)
                mean += xr[o * 24 + l];
            mean /= 24;
            for (int l = 0; l < 24; l++)
                var += (xr[o * 24 + l] - mean) * (xr[o * 24 + l] - mean);
            var /= 24;
            for (int l = 0; l < 24; l++) {
                double v = (xr[o * 24 + l] - mean) / sqrt(var + (double)1e-5f);
                want[o * 24 + l] = v * (n_in > 1 ? g[l] : 1.0) + (n_in > 2 ? b[l] : 0.0);
            }
        }
        CHECK(near_d(r.y[0], want, 48, 1e-6, 1.2e-7, "layernorm random"));
        result_free(&r);
    }
    free(xr);
    free(g);
    free(b);
    ops_shape e1[2] = {SHAPE(2, 3, 8), SHAPE(8)};
    EXPECT_ERR(OP_LAYERNORM, &p, 2, e1, "layernorm: input 1 (gamma) has shape (8), expected (3,8) (the dims of x from axis 1)");
    p.v[PM_AXIS] = 3;
    EXPECT_ERR(OP_LAYERNORM, &p, 1, e1, "layernorm: axis 3 out of range for input 0 (x) of rank 3");
    p.v[PM_AXIS] = 2;
    p.v[PM_EPS] = ops_f2p(-1.0f);
    EXPECT_ERR(OP_LAYERNORM, &p, 1, e1, "layernorm: parameter 'eps' = -1 must be positive and finite");
}

/* layernorm over a middle block [axis, axis_end) against the composition that moves the block to
 * the end (transpose), normalises the last dims, and moves it back: the same sums in the same
 * order, so the results are identical. */
static void ln_mid_case(const ops_shape *xs, int32_t ax, int32_t end, int32_t n_in, uint64_t seed) {
    const int32_t r = xs->rank;
    ops_shape gs = ops_shape_make(end - ax, xs->dims + ax);
    float *x = rand_buf(numel(xs), seed, -3, 3), *g = rand_buf(numel(&gs), seed + 1, -2, 2);
    float *b = rand_buf(numel(&gs), seed + 2, -1, 1);
    const float *in[3] = {x, g, b};
    ops_shape ins[3] = {*xs, gs, gs};
    ops_params p = defaults(OP_LAYERNORM);
    p.v[PM_AXIS] = ax;
    p.v[PM_AXIS_END] = end;
    p.v[PM_EPS] = ops_f2p(1e-6f);
    ops_params tp = defaults(OP_TRANSPOSE), bp = tp, lp = p;
    tp.n_list = bp.n_list = r;
    int32_t k = 0;
    for (int32_t i = 0; i < r; i++)
        if (i < ax || i >= end)
            tp.list[k++] = i;
    for (int32_t i = ax; i < end; i++)
        tp.list[k++] = i;
    for (int32_t i = 0; i < r; i++)
        bp.list[tp.list[i]] = i;
    lp.v[PM_AXIS] = r - (end - ax);
    lp.v[PM_AXIS_END] = 0;
    result got, t1, ln, t2;
    if (run(OP_LAYERNORM, &p, n_in, ins, in, &got) < 0)
        goto out;
    if (run(OP_TRANSPOSE, &tp, 1, ins, in, &t1) == 0) {
        const float *lin[3] = {t1.y[0], g, b};
        ops_shape lins[3] = {t1.out[0], gs, gs};
        if (run(OP_LAYERNORM, &lp, n_in, lins, lin, &ln) == 0) {
            if (run(OP_TRANSPOSE, &bp, 1, ln.out, (const float *const *)ln.y, &t2) == 0) {
                CHECK(same_floats(got.y[0], t2.y[0], numel(xs), "layernorm mid block vs transposes"));
                result_free(&t2);
            }
            result_free(&ln);
        }
        result_free(&t1);
    }
    result_free(&got);
out:
    free(x);
    free(g);
    free(b);
}

static void test_layernorm_mid(void) {
    ops_shape nchw = SHAPE(2, 6, 3, 5), r3 = SHAPE(4, 7, 9), r5 = SHAPE(2, 3, 4, 2, 3);
    for (int32_t n_in = 1; n_in <= 3; n_in++) {
        ln_mid_case(&nchw, 1, 2, n_in, 300 + (uint64_t)n_in); /* the channels of NCHW */
        ln_mid_case(&nchw, 1, 3, n_in, 310 + (uint64_t)n_in);
        ln_mid_case(&nchw, 0, 2, n_in, 320 + (uint64_t)n_in);
        ln_mid_case(&r3, 1, 2, n_in, 330 + (uint64_t)n_in);
        ln_mid_case(&r5, 2, 4, n_in, 340 + (uint64_t)n_in);
    }
    /* axis_end = the rank is the default form */
    ops_shape x = SHAPE(2, 6, 3, 5);
    float *xv = rand_buf(180, 350, -2, 2);
    const float *in[1] = {xv};
    ops_params p = defaults(OP_LAYERNORM), q;
    CHECK(p.v[PM_AXIS_END] == 0);
    p.v[PM_AXIS] = 2;
    q = p;
    q.v[PM_AXIS_END] = 4;
    result a, b;
    if (run(OP_LAYERNORM, &p, 1, &x, in, &a) == 0) {
        if (run(OP_LAYERNORM, &q, 1, &x, in, &b) == 0) {
            CHECK(same_floats(a.y[0], b.y[0], 180, "layernorm axis_end = rank"));
            result_free(&b);
        }
        result_free(&a);
    }
    free(xv);
    /* shape errors */
    ops_shape e[2] = {SHAPE(2, 6, 3, 5), SHAPE(6, 3)};
    p.v[PM_AXIS] = 1;
    p.v[PM_AXIS_END] = 2;
    EXPECT_ERR(OP_LAYERNORM, &p, 2, e,
               "layernorm: input 1 (gamma) has shape (6,3), expected (6) (the dims of x from axis 1 to axis_end 2)");
    p.v[PM_AXIS_END] = 1;
    EXPECT_ERR(OP_LAYERNORM, &p, 1, e,
               "layernorm: axis_end 1 out of range for axis 1 and input 0 (x) of rank 4 (expected axis+1..rank, or 0 "
               "for the rank)");
    p.v[PM_AXIS_END] = 5;
    EXPECT_ERR(OP_LAYERNORM, &p, 1, e, "layernorm: axis_end 5 out of range for axis 1 and input 0 (x) of rank 4");
    p.v[PM_AXIS_END] = 7;
    EXPECT_ERR(OP_LAYERNORM, &p, 1, e, "layernorm: parameter 'axis_end' = 7 out of range 0..6");
}

/* --- FLOPs ---------------------------------------------------------------------------------- */

/* --- reducemax, resize, pad ----------------------------------------------------------------- */

static ops_params list_params(ops_type op, int32_t n, const int64_t *v) {
    ops_params p = defaults(op);
    p.n_list = n;
    for (int32_t k = 0; k < n; k++)
        p.list[k] = v[k];
    return p;
}

/* Max over the axes of red (a 4-D x) by brute force over every input element. */
static void ref_reducemax(const ops_shape *xs, const int *red, int keep, const float *x, double *y, ops_shape *ys) {
    int64_t od[4];
    int32_t r = 0;
    for (int d = 0; d < 4; d++)
        od[d] = red[d] ? 1 : xs->dims[d];
    for (int d = 0; d < 4; d++)
        if (!red[d] || keep)
            ys->dims[r++] = od[d];
    ys->rank = r;
    int64_t n = od[0] * od[1] * od[2] * od[3];
    for (int64_t i = 0; i < n; i++)
        y[i] = -INFINITY;
    int64_t i = 0;
    for (int64_t a = 0; a < xs->dims[0]; a++)
        for (int64_t b = 0; b < xs->dims[1]; b++)
            for (int64_t c = 0; c < xs->dims[2]; c++)
                for (int64_t e = 0; e < xs->dims[3]; e++, i++) {
                    int64_t o = (((red[0] ? 0 : a) * od[1] + (red[1] ? 0 : b)) * od[2] + (red[2] ? 0 : c)) * od[3] +
                                (red[3] ? 0 : e);
                    if (x[i] > y[o])
                        y[o] = x[i];
                }
}

static void test_reducemax(void) {
    float x[6] = {1, 5, -2, 4, NAN, 0};
    ops_shape in = SHAPE(2, 3);
    const float *xs[1] = {x};
    result r;
    ops_params p = list_params(OP_REDUCEMAX, 1, (int64_t[]){1});
    if (run(OP_REDUCEMAX, &p, 1, &in, xs, &r) == 0) {
        float want[2] = {5, NAN};
        ops_shape ws = SHAPE(2, 1);
        CHECK(ops_shape_eq(&r.out[0], &ws) && same_floats(r.y[0], want, 2, "reducemax axis 1"));
        result_free(&r);
    }
    p = list_params(OP_REDUCEMAX, 1, (int64_t[]){0});
    p.v[PM_KEEPDIMS] = 0;
    if (run(OP_REDUCEMAX, &p, 1, &in, xs, &r) == 0) {
        float want[3] = {4, NAN, 0};
        ops_shape ws = SHAPE(3);
        CHECK(ops_shape_eq(&r.out[0], &ws) && same_floats(r.y[0], want, 3, "reducemax axis 0"));
        result_free(&r);
    }
    float ninf[2] = {-INFINITY, -INFINITY};
    const float *xn[1] = {ninf};
    ops_shape in2 = SHAPE(2);
    p = defaults(OP_REDUCEMAX); /* no axes: every dim */
    if (run(OP_REDUCEMAX, &p, 1, &in2, xn, &r) == 0) {
        ops_shape ws = SHAPE(1);
        CHECK(ops_shape_eq(&r.out[0], &ws) && r.y[0][0] == -INFINITY);
        result_free(&r);
    }
    /* random 4-D inputs, every subset of axes, both keepdims, against brute force */
    ops_shape rs = SHAPE(3, 4, 5, 6);
    float *rx = rand_buf(numel(&rs), 77, -3, 3);
    const float *rxs[1] = {rx};
    double y[360];
    int ok = 1;
    for (int mask = 0; mask < 16; mask++)
        for (int keep = 0; keep < 2; keep++) {
            int red[4];
            int64_t axes[4];
            int32_t n = 0;
            for (int d = 0; d < 4; d++)
                if ((red[d] = (mask >> d) & 1))
                    axes[n++] = d;
            if (!n)
                red[0] = red[1] = red[2] = red[3] = 1; /* empty axes: every dim */
            p = list_params(OP_REDUCEMAX, n, axes);
            p.v[PM_KEEPDIMS] = keep;
            ops_shape ys;
            ref_reducemax(&rs, red, keep, rx, y, &ys);
            if (run(OP_REDUCEMAX, &p, 1, &rs, rxs, &r) == 0) {
                ok &= ops_shape_eq(&r.out[0], &ys) && near_d(r.y[0], y, numel(&ys), 0, 0, "reducemax random");
                result_free(&r);
            }
        }
    CHECK(ok);
    free(rx);
    p = list_params(OP_REDUCEMAX, 1, (int64_t[]){4});
    EXPECT_ERR(OP_REDUCEMAX, &p, 1, &rs, "reducemax: axes[0] = 4 out of range for input 0 (x) of rank 4");
    p = list_params(OP_REDUCEMAX, 2, (int64_t[]){1, 1});
    EXPECT_ERR(OP_REDUCEMAX, &p, 1, &rs, "reducemax: axis 1 appears twice in axes");
    p = defaults(OP_REDUCEMAX);
    p.v[PM_KEEPDIMS] = 2;
    EXPECT_ERR(OP_REDUCEMAX, &p, 1, &rs, "reducemax: parameter 'keepdims' = 2 out of range 0..1");
}

/* ONNX Resize's coordinate transformations in double (the spec's formulas). */
static double ref_coord(int coord, int64_t x, double scale, int64_t in, int64_t out) {
    switch (coord) {
    case 1:
        return (double)x / scale;
    case 2:
        return out == 1 ? 0.0 : (double)x * (double)(in - 1) / (double)(out - 1);
    case 3:
        return out > 1 ? ((double)x + 0.5) / scale - 0.5 : 0.0;
    default:
        return ((double)x + 0.5) / scale - 0.5;
    }
}

static int64_t ref_nearest(int nearest, double c, int64_t in) {
    double f = floor(c);
    int64_t i = nearest == 2 ? (int64_t)f : nearest == 3 ? (int64_t)ceil(c)
              : c - f == 0.5 ? (int64_t)(nearest == 0 ? f : f + 1) : (int64_t)floor(c + 0.5);
    return i < 0 ? 0 : i >= in ? in - 1 : i;
}

/* (N, C, H, W) resized to (OH, OW) by the spec: nearest, or (1 - t) a + t b along each axis. */
static void ref_resize(const ops_shape *xs, int64_t OH, int64_t OW, const ops_params *p, const float *x, double *y) {
    const int64_t H = xs->dims[2], W = xs->dims[3], planes = xs->dims[0] * xs->dims[1];
    double sh = ops_p2f(p->v[PM_SCALE_H]), sw = ops_p2f(p->v[PM_SCALE_W]);
    sh = sh > 0 ? sh : (double)OH / (double)H;
    sw = sw > 0 ? sw : (double)OW / (double)W;
    const int coord = (int)p->v[PM_COORD], near = (int)p->v[PM_NEAREST];
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                const float *xp = x + pl * H * W;
                double cy = ref_coord(coord, i, sh, H, OH), cx = ref_coord(coord, j, sw, W, OW), v;
                if (p->v[PM_MODE] == 0) {
                    v = xp[ref_nearest(near, cy, H) * W + ref_nearest(near, cx, W)];
                } else {
                    cy = fmin(fmax(cy, 0.0), (double)(H - 1));
                    cx = fmin(fmax(cx, 0.0), (double)(W - 1));
                    int64_t y0 = (int64_t)floor(cy), x0 = (int64_t)floor(cx);
                    int64_t y1 = y0 + 1 < H ? y0 + 1 : H - 1, x1 = x0 + 1 < W ? x0 + 1 : W - 1;
                    double ty = cy - (double)y0, tx = cx - (double)x0;
                    double top = (1 - tx) * xp[y0 * W + x0] + tx * xp[y0 * W + x1];
                    double bot = (1 - tx) * xp[y1 * W + x0] + tx * xp[y1 * W + x1];
                    v = (1 - ty) * top + ty * bot;
                }
                y[(pl * OH + i) * OW + j] = v;
            }
}

static ops_params resize_params(int mode, int coord, int near, float sh, float sw, const ops_shape *out) {
    ops_params p = list_params(OP_RESIZE, out->rank, out->dims);
    p.v[PM_MODE] = mode;
    p.v[PM_COORD] = coord;
    p.v[PM_NEAREST] = near;
    p.v[PM_SCALE_H] = ops_f2p(sh);
    p.v[PM_SCALE_W] = ops_f2p(sw);
    return p;
}

static void test_resize(void) {
    float x[4] = {1, 2, 3, 4};
    ops_shape in = SHAPE(1, 1, 2, 2), o4 = SHAPE(1, 1, 4, 4), o3 = SHAPE(1, 1, 3, 3);
    const float *xs[1] = {x};
    result r;
    ops_params p = resize_params(0, 0, 0, 2.0f, 2.0f, &o4); /* nearest, half_pixel */
    if (run(OP_RESIZE, &p, 1, &in, xs, &r) == 0) {
        float want[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
        CHECK(same_floats(r.y[0], want, 16, "resize nearest"));
        result_free(&r);
    }
    p = resize_params(1, 2, 0, 0.0f, 0.0f, &o3); /* linear, align_corners */
    if (run(OP_RESIZE, &p, 1, &in, xs, &r) == 0) {
        float want[9] = {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4};
        CHECK(same_floats(r.y[0], want, 9, "resize linear align_corners"));
        result_free(&r);
    }
    p = resize_params(1, 0, 0, 2.0f, 2.0f, &o4); /* linear, half_pixel: the borders clamp */
    if (run(OP_RESIZE, &p, 1, &in, xs, &r) == 0) {
        float want[8] = {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f};
        CHECK(same_floats(r.y[0], want, 8, "resize linear half_pixel"));
        result_free(&r);
    }
    /* random planes: nearest where every coordinate is exact in float (power-of-two scales,
     * align_corners ratios 1/2), compared exactly; linear with any scale within 1e-5 */
    ops_shape rs = SHAPE(2, 3, 5, 7);
    float *rx = rand_buf(numel(&rs), 91, -2, 2);
    const float *rxs[1] = {rx};
    const struct {
        int mode, coord;
        float sh, sw;
        int64_t oh, ow;
    } cases[] = {{0, 0, 2, 4, 10, 28}, {0, 1, 0.5f, 2, 2, 14}, {0, 3, 4, 0.5f, 20, 3}, {0, 2, 0, 0, 9, 13},
                 {1, 0, 1.7f, 0.6f, 8, 4}, {1, 1, 0, 0, 9, 5}, {1, 2, 0, 0, 3, 11}, {1, 3, 0, 0, 1, 9},
                 {1, 0, 0, 0, 5, 7}};
    double *y = malloc(sizeof(double) * 2 * 3 * 20 * 28);
    int ok = 1;
    for (int k = 0; k < NELEM(cases); k++)
        for (int near = 0; near < (cases[k].mode ? 1 : 4); near++) {
            ops_shape os = SHAPE(2, 3, cases[k].oh, cases[k].ow);
            p = resize_params(cases[k].mode, cases[k].coord, near, cases[k].sh, cases[k].sw, &os);
            ref_resize(&rs, cases[k].oh, cases[k].ow, &p, rx, y);
            if (run(OP_RESIZE, &p, 1, &rs, rxs, &r) == 0) {
                ok &= near_d(r.y[0], y, numel(&os), cases[k].mode ? 1e-5 : 0, 0, "resize random");
                result_free(&r);
            }
        }
    CHECK(ok);
    free(y);
    free(rx);
    ops_shape bad = SHAPE(1, 2, 5, 5), b1 = SHAPE(5), o1 = SHAPE(10);
    p = resize_params(0, 0, 0, 0, 0, &o1);
    EXPECT_ERR(OP_RESIZE, &p, 1, &b1, "resize: input 0 (x) has 1 dims, expected at least 2 (...,H,W)");
    ops_shape ob = SHAPE(1, 4, 10, 10);
    p = resize_params(0, 0, 0, 0, 0, &ob);
    EXPECT_ERR(OP_RESIZE, &p, 1, &bad, "resize: sizes[1] = 4 differs from dim 1 of input 0 (x) (2)");
    ops_shape o3r = SHAPE(2, 3, 5);
    p = resize_params(0, 0, 0, 0, 0, &o3r);
    EXPECT_ERR(OP_RESIZE, &p, 1, &rs, "resize: sizes has 3 entries, input 0 (x) (2,3,5,7) has rank 4");
    ob = SHAPE(1, 2, 10, 10);
    p = resize_params(0, 0, 0, -1.0f, 2.0f, &ob);
    EXPECT_ERR(OP_RESIZE, &p, 1, &bad, "resize: scale_h = -1 must be 0 (out/in) or positive and finite");
    p = resize_params(2, 0, 0, 2.0f, 2.0f, &ob);
    EXPECT_ERR(OP_RESIZE, &p, 1, &bad, "resize: parameter 'mode' = 2 out of range 0..1");
}

/* The index of padded position i by mirroring (reflect) or clamping (edge) step by step; -1 outside for constant. */
static int64_t ref_pad_index(int mode, int64_t i, int64_t b, int64_t len) {
    int64_t q = i - b;
    if (mode == 0)
        return q >= 0 && q < len ? q : -1;
    if (mode == 2)
        return q < 0 ? 0 : q >= len ? len - 1 : q;
    while (q < 0 || q >= len)
        q = q < 0 ? -q : 2 * (len - 1) - q;
    return q;
}

static void test_pad(void) {
    float x[6] = {1, 2, 3, 4, 5, 6};
    ops_shape in = SHAPE(2, 3);
    const float *xs[1] = {x};
    result r;
    ops_params p = list_params(OP_PAD, 4, (int64_t[]){1, 0, 0, 2});
    p.v[PM_VALUE] = ops_f2p(9.0f);
    if (run(OP_PAD, &p, 1, &in, xs, &r) == 0) {
        float want[15] = {9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 4, 5, 6, 9, 9};
        ops_shape ws = SHAPE(3, 5);
        CHECK(ops_shape_eq(&r.out[0], &ws) && same_floats(r.y[0], want, 15, "pad constant"));
        result_free(&r);
    }
    p = list_params(OP_PAD, 4, (int64_t[]){0, 2, 0, 2});
    p.v[PM_MODE] = 1;
    if (run(OP_PAD, &p, 1, &in, xs, &r) == 0) {
        float want[14] = {3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4};
        CHECK(same_floats(r.y[0], want, 14, "pad reflect"));
        result_free(&r);
    }
    p = list_params(OP_PAD, 4, (int64_t[]){1, 1, 1, 1});
    p.v[PM_MODE] = 2;
    if (run(OP_PAD, &p, 1, &in, xs, &r) == 0) {
        float want[20] = {1, 1, 2, 3, 3, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6, 4, 4, 5, 6, 6};
        CHECK(same_floats(r.y[0], want, 20, "pad edge"));
        result_free(&r);
    }
    /* random 4-D inputs in each mode against the index mapping */
    ops_shape rs = SHAPE(2, 3, 4, 5);
    float *rx = rand_buf(numel(&rs), 55, -1, 1);
    const float *rxs[1] = {rx};
    const int64_t pads[3][8] = {{1, 0, 2, 3, 0, 2, 1, 4}, {0, 2, 3, 1, 1, 1, 2, 4}, {2, 1, 0, 5, 1, 0, 3, 2}};
    int ok = 1;
    for (int mode = 0; mode < 3; mode++) {
        p = list_params(OP_PAD, 8, pads[mode]);
        p.v[PM_MODE] = mode;
        p.v[PM_VALUE] = ops_f2p(-0.5f);
        if (run(OP_PAD, &p, 1, &rs, rxs, &r) != 0)
            continue;
        const ops_shape *os = &r.out[0];
        int64_t i = 0;
        for (int64_t a = 0; a < os->dims[0]; a++)
            for (int64_t b = 0; b < os->dims[1]; b++)
                for (int64_t c = 0; c < os->dims[2]; c++)
                    for (int64_t e = 0; e < os->dims[3]; e++, i++) {
                        int64_t q[4] = {a, b, c, e}, off = 0;
                        for (int d = 0; d < 4 && off >= 0; d++) {
                            int64_t s = ref_pad_index(mode, q[d], pads[mode][d], rs.dims[d]);
                            off = s < 0 ? -1 : off * rs.dims[d] + s;
                        }
                        float want = off < 0 ? -0.5f : rx[off];
                        ok &= same_floats(&r.y[0][i], &want, 1, "pad random");
                    }
        result_free(&r);
    }
    CHECK(ok);
    free(rx);
    ops_shape r5 = SHAPE(1, 1, 1, 1, 2);
    p = list_params(OP_PAD, 8, pads[0]);
    EXPECT_ERR(OP_PAD, &p, 1, &r5, "pad: input 0 (x) has rank 5, expected 1..4 (pads holds at most 8 values)");
    p = list_params(OP_PAD, 6, pads[0]);
    EXPECT_ERR(OP_PAD, &p, 1, &rs, "pad: pads has 6 entries, expected 8 (begins and ends of (2,3,4,5))");
    p = list_params(OP_PAD, 8, (int64_t[]){0, 3, 0, 0, 0, 0, 0, 0});
    p.v[PM_MODE] = 1;
    EXPECT_ERR(OP_PAD, &p, 1, &rs, "pad: reflect pads 3, 0 of dim 1 need to be smaller than the dim (3)");
    p.v[PM_MODE] = 3;
    EXPECT_ERR(OP_PAD, &p, 1, &rs, "pad: parameter 'mode' = 3 out of range 0..2");
    p = defaults(OP_PAD);
    EXPECT_ERR(OP_PAD, &p, 1, &rs, "pad: parameter 'pads' is required");
}

static double flops_of(ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in) {
    int32_t no;
    ops_shape out[OPS_MAX_OUTPUTS];
    char err[256];
    if (ops_infer(op, p, n_in, in, &no, out, err, sizeof err) < 0) {
        fprintf(stderr, "flops_of %s: %s\n", ops_table[op].name, err);
        return -1;
    }
    ops_sig s = {.op = op, .p = p, .n_in = n_in, .n_out = no, .in = in, .out = out};
    return ops_table[op].flops(&s);
}

static void test_flops(void) {
    ops_params p = defaults(OP_CONV2D);
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = 2;
    p.v[PM_PAD_T] = p.v[PM_PAD_L] = p.v[PM_PAD_B] = p.v[PM_PAD_R] = 3;
    ops_shape c[3] = {SHAPE(1, 3, 224, 224), SHAPE(64, 3, 7, 7), SHAPE(64)};
    CHECK_NEAR(flops_of(OP_CONV2D, &p, 2, c), 2.0 * 64 * 112 * 112 * 147, 0);
    p.v[PM_ACT] = OPS_ACT_RELU;
    CHECK_NEAR(flops_of(OP_CONV2D, &p, 3, c), 2.0 * 64 * 112 * 112 * 147 + 2.0 * 64 * 112 * 112, 0);
    p = defaults(OP_CONV2D);
    p.v[PM_GROUPS] = 4;
    ops_shape cg[2] = {SHAPE(2, 8, 5, 5), SHAPE(8, 2, 1, 1)};
    CHECK_NEAR(flops_of(OP_CONV2D, &p, 2, cg), 2.0 * 2 * 8 * 25 * 2, 0);
    ops_params m = defaults(OP_MATMUL);
    ops_shape mm[3] = {SHAPE(5, 2, 3), SHAPE(3, 4), SHAPE(4)};
    CHECK_NEAR(flops_of(OP_MATMUL, &m, 2, mm), 2.0 * 5 * 2 * 4 * 3, 0);
    m.v[PM_ACT] = OPS_ACT_GELU;
    CHECK_NEAR(flops_of(OP_MATMUL, &m, 3, mm), 2.0 * 5 * 2 * 4 * 3 + 2 * 40, 0);
    ops_params e = defaults(OP_EWADD);
    ops_shape ew[2] = {SHAPE(4, 1, 3), SHAPE(5, 1)};
    CHECK_NEAR(flops_of(OP_EWADD, &e, 2, ew), 60, 0);
    CHECK_NEAR(flops_of(OP_POW, &e, 2, ew), 60, 0);
    CHECK_NEAR(flops_of(OP_GELU, &e, 1, ew), 12, 0);
    ops_params t = defaults(OP_TRANSPOSE);
    t.n_list = 3;
    t.list[0] = 2;
    t.list[1] = 1;
    t.list[2] = 0;
    CHECK_NEAR(flops_of(OP_TRANSPOSE, &t, 1, ew), 0, 0);
    ops_params ci = defaults(OP_CONST_IMM);
    ci.v[PM_N] = 10;
    CHECK_NEAR(flops_of(OP_CONST_IMM, &ci, 0, NULL), 0, 0);
    ops_params mp = defaults(OP_MAXPOOL2D);
    mp.v[PM_KH] = mp.v[PM_KW] = 3;
    mp.v[PM_STRIDE_H] = mp.v[PM_STRIDE_W] = 2;
    mp.v[PM_PAD] = OPS_PAD_SAME;
    ops_shape px = SHAPE(1, 64, 112, 112);
    CHECK_NEAR(flops_of(OP_MAXPOOL2D, &mp, 1, &px), 64.0 * 56 * 56 * 9, 0);
    ops_params g = defaults(OP_GLOBALAVGPOOL);
    CHECK_NEAR(flops_of(OP_GLOBALAVGPOOL, &g, 1, &px), 64.0 * 112 * 112, 0);
    ops_params b = defaults(OP_BATCHNORM);
    ops_shape bn[5] = {SHAPE(1, 4, 2, 2), SHAPE(4), SHAPE(4), SHAPE(4), SHAPE(4)};
    CHECK_NEAR(flops_of(OP_BATCHNORM, &b, 5, bn), 32, 0);
    /* every op gives a finite, non-negative count on a valid node */
    for (int op = 0; op < OP_COUNT; op++)
        CHECK(ops_table[op].flops != NULL);
}

/* --- determinism ---------------------------------------------------------------------------- */

static void test_threads(void) {
    ops_shape cin[3] = {SHAPE(2, 16, 23, 29), SHAPE(24, 16, 3, 3), SHAPE(24)};
    float *x = rand_buf(numel(&cin[0]), 200, -1, 1), *w = rand_buf(numel(&cin[1]), 201, -1, 1);
    float *b = rand_buf(24, 202, -1, 1);
    const float *xs[3] = {x, w, b};
    ops_params cp = defaults(OP_CONV2D);
    cp.v[PM_PAD] = OPS_PAD_SAME;
    cp.v[PM_ACT] = OPS_ACT_RELU;
    ops_params cs = cp;
    cs.v[PM_STRIDE_H] = cs.v[PM_STRIDE_W] = 2;
    ops_shape min[3] = {SHAPE(3, 70, 150), SHAPE(150, 260), SHAPE(260)};
    float *a = rand_buf(numel(&min[0]), 203, -1, 1), *bm = rand_buf(numel(&min[1]), 204, -1, 1);
    const float *ms[3] = {a, bm, b};
    ops_params mp = defaults(OP_MATMUL);
    int saved = omp_get_max_threads();
    result r1, r2;
    for (int k = 0; k < 3; k++) {
        ops_type op = k < 2 ? OP_CONV2D : OP_MATMUL;
        const ops_params *p = k == 0 ? &cp : k == 1 ? &cs : &mp;
        const ops_shape *in = k < 2 ? cin : min;
        const float *const *xx = k < 2 ? xs : ms;
        omp_set_num_threads(1);
        int ok1 = run(op, p, k < 2 ? 3 : 2, in, xx, &r1);
        omp_set_num_threads(2);
        int ok2 = run(op, p, k < 2 ? 3 : 2, in, xx, &r2);
        if (ok1 == 0 && ok2 == 0) {
            int64_t n = numel(&r1.out[0]);
            CHECK(memcmp(r1.y[0], r2.y[0], sizeof(float) * (size_t)n) == 0);
        }
        if (ok1 == 0)
            result_free(&r1);
        if (ok2 == 0)
            result_free(&r2);
    }
    omp_set_num_threads(saved);
    free(x);
    free(w);
    free(b);
    free(a);
    free(bm);
}

int main(void) {
    test_table();
    test_table_facts();
    test_shape_helpers();
    test_params();
    test_generic_infer();
    test_conv2d();
    test_matmul();
    test_elementwise();
    test_smul();
    test_unary();
    test_clip();
    test_transpose();
    test_concat_split();
    test_reshape();
    test_gather();
    test_pools();
    test_constants();
    test_enlarge();
    test_batchnorm();
    test_softmax();
    test_layernorm();
    test_layernorm_mid();
    test_reducemax();
    test_resize();
    test_pad();
    test_flops();
    test_threads();
    return TEST_REPORT();
}
