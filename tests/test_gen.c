/* test_gen.c: the rule generator (enumerator/) and the fingerprint semantics (ops/ops_fp.c).
 *
 * - every fingerprint function against the op's float CPU reference on small integer inputs, where
 *   float arithmetic is exact (division by the window size checked through multiplication);
 * - known identities appear among the rules of small 3-op runs, known non-identities never do;
 *   identities whose other side is a bare variable (concat(split(x)) = x) among them, and the
 *   merge rules' splits cut at their concatenated operands' widths, holding for unequal widths;
 * - fingerprints truncated to a few bits force collisions, which the float re-test removes: the
 *   rules are those of the full-width run, and each one holds on fresh random floats;
 * - 1 and 2 threads give the same bytes;
 * - a 2-op run's counts against an independent brute-force enumeration written here.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "ops.h"
#include "rules.h"
#include "test.h"

static uint64_t rng_state = 0x1234567;
static uint64_t rng(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* =============================================================================================
 * fingerprint semantics against the float references
 */
typedef struct {
    const char *what;
    ops_type op;
    ops_params p;
    int32_t n_in;
    ops_shape in[3];
    int lo, hi;       /* integer input range */
    int divide;       /* outputs are sums divided by this odd count: compare fp * divide with float * divide */
} fp_case;

static void fp_check(const fp_case *c) {
    ops_shape out[OPS_MAX_OUTPUTS];
    int32_t n_out = 0;
    char err[256];
    if (ops_infer(c->op, &c->p, c->n_in, c->in, &n_out, out, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", c->what, err);
        CHECK(0);
        return;
    }
    float *fi[3];
    uint32_t *ui[3];
    for (int32_t i = 0; i < c->n_in; i++) {
        int64_t n = ops_shape_numel(&c->in[i]);
        fi[i] = malloc(sizeof(float) * (size_t)n);
        ui[i] = malloc(sizeof(uint32_t) * (size_t)n);
        for (int64_t j = 0; j < n; j++) {
            int v = c->lo + (int)(rng() % (uint64_t)(c->hi - c->lo + 1));
            fi[i][j] = (float)v;
            ui[i][j] = (uint32_t)(int32_t)v;
        }
    }
    float *fo[OPS_MAX_OUTPUTS];
    uint32_t *uo[OPS_MAX_OUTPUTS];
    for (int32_t o = 0; o < n_out; o++) {
        fo[o] = malloc(sizeof(float) * (size_t)ops_shape_numel(&out[o]));
        uo[o] = malloc(sizeof(uint32_t) * (size_t)ops_shape_numel(&out[o]));
    }
    ops_sig sig = {c->op, &c->p, c->n_in, n_out, c->in, out};
    ops_table[c->op].cpu(&sig, (const float *const *)fi, fo);
    ops_table[c->op].fp(&sig, (const uint32_t *const *)ui, uo);
    int bad = 0;
    for (int32_t o = 0; o < n_out; o++)
        for (int64_t j = 0; j < ops_shape_numel(&out[o]) && !bad; j++) {
            double f = (double)fo[o][j] * c->divide;
            int32_t u = (int32_t)(uo[o][j] * (uint32_t)c->divide);
            if (fabs(f - (double)u) > 1e-3) {
                fprintf(stderr, "%s: output %d element %lld: float %g, fingerprint %d\n", c->what, (int)o,
                        (long long)j, f, (int)u);
                bad = 1;
            }
        }
    CHECK(!bad);
    for (int32_t i = 0; i < c->n_in; i++) {
        free(fi[i]);
        free(ui[i]);
    }
    for (int32_t o = 0; o < n_out; o++) {
        free(fo[o]);
        free(uo[o]);
    }
}

static ops_shape shp(int32_t rank, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t dims[4] = {a, b, c, d};
    return ops_shape_make(rank, dims);
}

static void test_fp_semantics(void) {
    fp_case c;
    /* conv2d: same padding, groups 1 and 2 */
    memset(&c, 0, sizeof c);
    c.what = "conv2d";
    c.op = OP_CONV2D;
    ops_params_default(OP_CONV2D, &c.p);
    c.p.v[PM_PAD] = OPS_PAD_SAME;
    c.n_in = 2;
    c.in[0] = shp(4, 2, 4, 4, 5);
    c.in[1] = shp(4, 3, 4, 3, 3);
    c.lo = -3, c.hi = 3, c.divide = 1;
    fp_check(&c);
    c.what = "conv2d groups 2, 1x3, bias";
    c.p.v[PM_GROUPS] = 2;
    c.n_in = 3;
    c.in[1] = shp(4, 4, 2, 1, 3);
    c.in[2] = shp(1, 4, 0, 0, 0);
    fp_check(&c);
    /* matmul, plain and batched */
    memset(&c, 0, sizeof c);
    c.what = "matmul";
    c.op = OP_MATMUL;
    ops_params_default(OP_MATMUL, &c.p);
    c.n_in = 2;
    c.in[0] = shp(2, 2, 3, 0, 0);
    c.in[1] = shp(2, 3, 4, 0, 0);
    c.lo = -4, c.hi = 4, c.divide = 1;
    fp_check(&c);
    c.what = "matmul batched, broadcast";
    c.in[0] = shp(3, 2, 2, 3, 0);
    c.in[1] = shp(2, 3, 4, 0, 0);
    fp_check(&c);
    /* elementwise, with broadcasting */
    memset(&c, 0, sizeof c);
    c.n_in = 2;
    c.lo = -9, c.hi = 9, c.divide = 1;
    c.in[0] = shp(2, 2, 3, 0, 0);
    c.in[1] = shp(2, 1, 3, 0, 0);
    c.what = "ewadd";
    c.op = OP_EWADD;
    ops_params_default(c.op, &c.p);
    fp_check(&c);
    c.what = "ewmul";
    c.op = OP_EWMUL;
    fp_check(&c);
    c.what = "smul";
    c.op = OP_SMUL;
    c.in[1] = shp(0, 0, 0, 0, 0);
    fp_check(&c);
    /* data movement */
    memset(&c, 0, sizeof c);
    c.lo = -100, c.hi = 100, c.divide = 1;
    c.what = "transpose";
    c.op = OP_TRANSPOSE;
    ops_params_default(c.op, &c.p);
    c.p.n_list = 3;
    c.p.list[0] = 2, c.p.list[1] = 0, c.p.list[2] = 1;
    c.n_in = 1;
    c.in[0] = shp(3, 2, 3, 4, 0);
    fp_check(&c);
    c.what = "concat";
    c.op = OP_CONCAT;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_AXIS] = 1;
    c.n_in = 2;
    c.in[0] = shp(3, 2, 3, 2, 0);
    c.in[1] = shp(3, 2, 1, 2, 0);
    fp_check(&c);
    c.what = "split";
    c.op = OP_SPLIT;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_AXIS] = 2;
    c.p.v[PM_PARTS] = 2;
    c.n_in = 1;
    c.in[0] = shp(3, 2, 3, 4, 0);
    fp_check(&c);
    c.what = "enlarge";
    c.op = OP_ENLARGE;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_KH] = 3, c.p.v[PM_KW] = 3;
    c.in[0] = shp(4, 2, 2, 1, 3);
    fp_check(&c);
    /* pools: the average through multiplication by 9; max on non-negative values (uint32 order) */
    memset(&c, 0, sizeof c);
    c.what = "avgpool2d";
    c.op = OP_AVGPOOL2D;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_KH] = 3, c.p.v[PM_KW] = 3, c.p.v[PM_PAD] = OPS_PAD_SAME, c.p.v[PM_COUNT_PAD] = 1;
    c.n_in = 1;
    c.in[0] = shp(4, 1, 2, 4, 5);
    c.lo = -5, c.hi = 5, c.divide = 9;
    fp_check(&c);
    c.what = "maxpool2d";
    c.op = OP_MAXPOOL2D;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_KH] = 3, c.p.v[PM_KW] = 3, c.p.v[PM_PAD] = OPS_PAD_SAME;
    c.lo = 0, c.hi = 50, c.divide = 1;
    fp_check(&c);
    /* constants */
    memset(&c, 0, sizeof c);
    c.divide = 1;
    c.what = "const_imm";
    c.op = OP_CONST_IMM;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_N] = 3;
    fp_check(&c);
    c.what = "const_iconv";
    c.op = OP_CONST_ICONV;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_C] = 2, c.p.v[PM_KH] = 3, c.p.v[PM_KW] = 1;
    fp_check(&c);
    c.what = "const_ones";
    c.op = OP_CONST_ONES;
    ops_params_default(c.op, &c.p);
    c.p.n_list = 2, c.p.list[0] = 2, c.p.list[1] = 3;
    fp_check(&c);
    c.what = "const_pool";
    c.op = OP_CONST_POOL;
    ops_params_default(c.op, &c.p);
    c.p.v[PM_C] = 2, c.p.v[PM_KH] = 3, c.p.v[PM_KW] = 3;
    c.divide = 9;
    fp_check(&c);

    /* relu: the stand-in x(x+1)+1, and a fused relu is the same stand-in */
    uint32_t x[4] = {0u, 1u, 0xffffffffu, 12345u}, y[4];
    ops_shape s4 = shp(1, 4, 0, 0, 0);
    ops_params p;
    ops_params_default(OP_RELU, &p);
    ops_sig sig = {OP_RELU, &p, 1, 1, &s4, &s4};
    const uint32_t *in1[1] = {x};
    uint32_t *out1[1] = {y};
    ops_table[OP_RELU].fp(&sig, in1, out1);
    CHECK_EQ_INT(y[0], 1);
    CHECK_EQ_INT(y[1], 3);
    CHECK_EQ_INT(y[2], 1); /* -1 * 0 + 1 */
    CHECK_EQ_INT(y[3], (uint32_t)(12345u * 12346u + 1u));
    ops_shape ms[2] = {shp(2, 2, 2, 0, 0), shp(2, 2, 2, 0, 0)};
    uint32_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, plain[4], fused[4], relu_of[4];
    ops_params pm;
    ops_params_default(OP_MATMUL, &pm);
    ops_sig ssig = {OP_MATMUL, &pm, 2, 1, ms, ms};
    const uint32_t *in2[2] = {a, b};
    uint32_t *o1[1] = {plain}, *o2[1] = {fused}, *o3[1] = {relu_of};
    ops_table[OP_MATMUL].fp(&ssig, in2, o1);
    pm.v[PM_ACT] = OPS_ACT_RELU;
    ops_table[OP_MATMUL].fp(&ssig, in2, o2);
    const uint32_t *in3[1] = {plain};
    ops_sig rsig = {OP_RELU, &p, 1, 1, ms, ms};
    ops_table[OP_RELU].fp(&rsig, in3, o3);
    CHECK_EQ_INT(plain[0], 19); /* 1*5 + 2*7 */
    CHECK(!memcmp(fused, relu_of, sizeof fused));
}

/* =============================================================================================
 * rules as normalised term strings
 */
static int is_commutative(ops_type op) { return op == OP_EWADD || op == OP_EWMUL; }

/* buf = the parts one after the other, cut to len - 1 characters (the terms compared here are far
 * shorter; copied by hand, as a printf of the parts would warn about the cut). */
static void cat_cut(char *buf, size_t len, const char *const *parts, int n) {
    size_t at = 0;
    for (int i = 0; i < n; i++)
        for (const char *p = parts[i]; *p && at + 1 < len; p++)
            buf[at++] = *p;
    buf[at] = '\0';
}

/* Term of a ref: variables by name (through ren: name -> name), ops as name[suffix](args). */
static void term(const rules_rule *r, const rules_graph *g, rules_ref f, const char *const *ren, int sort_comm,
                 char *buf, size_t len) {
    if (f.kind == RULES_REF_VAR) {
        snprintf(buf, len, "%s", ren ? ren[f.idx] : r->vars[f.idx].name);
        return;
    }
    const rules_op *o = &g->ops[f.idx];
    char name[64];
    switch (o->op) {
    case OP_TRANSPOSE: snprintf(name, sizeof name, "T"); break;
    case OP_CONCAT: snprintf(name, sizeof name, "concat%d", (int)o->p.v[PM_AXIS]); break;
    case OP_SPLIT: snprintf(name, sizeof name, "split%d#%d", (int)o->p.v[PM_AXIS], (int)f.out); break;
    case OP_CONV2D: snprintf(name, sizeof name, "conv%s", o->p.v[PM_ACT] == OPS_ACT_RELU ? "_relu" : ""); break;
    case OP_MATMUL: snprintf(name, sizeof name, "matmul%s", o->p.v[PM_ACT] == OPS_ACT_RELU ? "_relu" : ""); break;
    default: snprintf(name, sizeof name, "%s", ops_table[o->op].name); break;
    }
    char args[2][512] = {"", ""};
    for (int32_t i = 0; i < o->n_in && i < 2; i++)
        term(r, g, o->in[i], ren, sort_comm, args[i], sizeof args[i]);
    if (sort_comm && is_commutative(o->op) && strcmp(args[0], args[1]) > 0) {
        char t[512];
        strcpy(t, args[0]);
        strcpy(args[0], args[1]);
        strcpy(args[1], t);
    }
    const char *parts[6] = {name, "(", args[0], o->n_in > 1 ? "," : "", args[1], ")"};
    cat_cut(buf, len, parts, 6);
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "S=D;S=D" with the pairs sorted; swap: D=S. */
static char *signature(const rules_rule *r, const char *const *ren, int swap) {
    char *parts[RULES_MAX_OUTPUTS];
    size_t total = 1;
    for (int32_t i = 0; i < r->n_outputs; i++) {
        char s[1024], d[1024];
        term(r, &r->src, r->outputs[i].src, ren, 1, s, sizeof s);
        term(r, &r->dst, r->outputs[i].dst, ren, 1, d, sizeof d);
        parts[i] = malloc(strlen(s) + strlen(d) + 2);
        sprintf(parts[i], "%s=%s", swap ? d : s, swap ? s : d);
        total += strlen(parts[i]) + 1;
    }
    qsort(parts, (size_t)r->n_outputs, sizeof parts[0], str_cmp);
    char *out = malloc(total);
    out[0] = '\0';
    for (int32_t i = 0; i < r->n_outputs; i++) {
        if (i)
            strcat(out, ";");
        strcat(out, parts[i]);
        free(parts[i]);
    }
    return out;
}

/* A pattern "lhs=rhs;lhs=rhs" over variable names like x0, w1 matches a rule when, for some
 * renaming of the pattern's variables within their kind (the letter), the normalised strings
 * agree in either direction. Patterns are parsed into rules through a tiny term syntax. */
typedef struct {
    const char *s;
    rules_rule *r;
    rules_graph *g;
    int fail;
} pparse;

static int pp_var(pparse *p, const char *name) {
    for (int32_t v = 0; v < p->r->n_vars; v++)
        if (!strcmp(p->r->vars[v].name, name))
            return v;
    snprintf(p->r->vars[p->r->n_vars].name, RULES_NAME_LEN, "%.*s", RULES_NAME_LEN - 1, name);
    return p->r->n_vars++;
}

static rules_ref pp_term(pparse *p) {
    char name[32];
    int n = 0;
    while (*p->s && (strchr("abcdefghijklmnopqrstuvwxyz0123456789_#T", *p->s)) && n < 31)
        name[n++] = *p->s++;
    name[n] = '\0';
    rules_ref ref = {RULES_REF_VAR, 0, 0};
    if (*p->s != '(') {
        ref.idx = pp_var(p, name);
        return ref;
    }
    p->s++;
    rules_op op_local, *o = &op_local; /* appended after its arguments, which come first */
    memset(o, 0, sizeof *o);
    int out = 0, axis = 0;
    ops_type op;
    if (!strcmp(name, "T"))
        op = OP_TRANSPOSE;
    else if (sscanf(name, "concat%d", &axis) == 1)
        op = OP_CONCAT;
    else if (sscanf(name, "split%d#%d", &axis, &out) == 2)
        op = OP_SPLIT;
    else if (!strncmp(name, "conv", 4))
        op = OP_CONV2D;
    else if (!strncmp(name, "matmul", 6))
        op = OP_MATMUL;
    else
        op = (ops_type)ops_find(name);
    o->op = op;
    o->p.v[PM_AXIS] = axis;
    o->p.v[PM_ACT] = strstr(name, "_relu") ? OPS_ACT_RELU : OPS_ACT_NONE;
    while (*p->s && *p->s != ')') {
        rules_ref a = pp_term(p);
        if (o->n_in < RULES_MAX_IN)
            o->in[o->n_in++] = a;
        if (*p->s == ',')
            p->s++;
    }
    if (*p->s == ')')
        p->s++;
    else
        p->fail = 1;
    /* a split named again with another output index is the same node */
    for (int32_t k = 0; k < p->g->n_ops; k++)
        if (op == OP_SPLIT && p->g->ops[k].op == op && p->g->ops[k].n_in == o->n_in &&
            !memcmp(p->g->ops[k].in, o->in, sizeof o->in))
            return (rules_ref){RULES_REF_OP, k, out};
    if (p->g->n_ops == RULES_MAX_OPS) {
        p->fail = 1;
        return (rules_ref){RULES_REF_VAR, 0, 0};
    }
    p->g->ops[p->g->n_ops++] = *o;
    return (rules_ref){RULES_REF_OP, p->g->n_ops - 1, out};
}

static rules_rule *parse_pattern(const char *pat) {
    rules_rule *r = calloc(1, sizeof *r);
    pparse p = {pat, r, NULL, 0};
    while (*p.s && r->n_outputs < RULES_MAX_OUTPUTS) {
        p.g = &r->src;
        r->outputs[r->n_outputs].src = pp_term(&p);
        if (*p.s++ != '=')
            p.fail = 1;
        p.g = &r->dst;
        r->outputs[r->n_outputs].dst = pp_term(&p);
        r->n_outputs++;
        if (*p.s == ';')
            p.s++;
        else if (*p.s)
            p.fail = 1;
    }
    CHECK(!p.fail);
    return r;
}

/* Every renaming of the pattern's variables within their kind (the first letter). */
static int pattern_rec(const rules_rule *pat, int32_t v, char (*names)[RULES_NAME_LEN], const char **ren, int *used,
                       char **sigs, int32_t n_sigs) {
    if (v == pat->n_vars) {
        char *s = signature(pat, ren, 0);
        int found = 0;
        for (int32_t i = 0; i < n_sigs && !found; i++)
            found = !strcmp(sigs[i], s);
        free(s);
        return found;
    }
    for (int32_t u = 0; u < pat->n_vars; u++)
        if (!used[u] && names[u][0] == pat->vars[v].name[0]) {
            used[u] = 1;
            ren[v] = names[u];
            int f = pattern_rec(pat, v + 1, names, ren, used, sigs, n_sigs);
            used[u] = 0;
            if (f)
                return 1;
        }
    return 0;
}

typedef struct {
    rules_set *rs;
    char **sigs; /* both directions of every rule */
    int32_t n_sigs;
} rule_index;

static void index_build(rule_index *ix, rules_set *rs) {
    ix->rs = rs;
    ix->sigs = malloc(sizeof(char *) * (size_t)(2 * rs->n_rules + 1));
    ix->n_sigs = 0;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        ix->sigs[ix->n_sigs++] = signature(&rs->rules[i], NULL, 0);
        ix->sigs[ix->n_sigs++] = signature(&rs->rules[i], NULL, 1);
    }
}

static void index_free(rule_index *ix) {
    for (int32_t i = 0; i < ix->n_sigs; i++)
        free(ix->sigs[i]);
    free(ix->sigs);
    rules_set_free(ix->rs);
}

static int has_rule(const rule_index *ix, const char *pat) {
    rules_rule *p = parse_pattern(pat);
    char names[RULES_MAX_VARS][RULES_NAME_LEN];
    const char *ren[RULES_MAX_VARS];
    int used[RULES_MAX_VARS] = {0};
    for (int32_t v = 0; v < p->n_vars; v++)
        memcpy(names[v], p->vars[v].name, RULES_NAME_LEN);
    int f = pattern_rec(p, 0, names, ren, used, ix->sigs, ix->n_sigs);
    free(p);
    return f;
}

#define EXPECT_RULE(ix, pat) do { \
    int _h = has_rule(ix, pat); \
    CHECK(_h); \
    if (!_h) fprintf(stderr, "  missing rule: %s\n", pat); \
} while (0)
#define EXPECT_NO_RULE(ix, pat) do { \
    int _h = has_rule(ix, pat); \
    CHECK(!_h); \
    if (_h) fprintf(stderr, "  unexpected rule: %s\n", pat); \
} while (0)

static rules_set *run(int32_t max_ops, const char *ops, int32_t threads, int32_t bits, gen_stats *st) {
    gen_config cfg;
    gen_config_default(&cfg);
    cfg.max_ops = max_ops;
    cfg.threads = threads;
    cfg.fp_bits = bits;
    char err[256];
    if (ops && gen_parse_ops(&cfg, ops, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        return NULL;
    }
    rules_set *rs = NULL;
    if (gen_run(&cfg, &rs, st, err, sizeof err) < 0) {
        fprintf(stderr, "gen_run: %s\n", err);
        CHECK(0);
        return NULL;
    }
    return rs;
}

/* =============================================================================================
 * known identities and non-identities
 */
static void test_matrix_identities(void) {
    gen_stats st;
    /* the elementwise algebra alone first */
    rules_set *ew = run(3, "ewadd,ewmul", 2, 64, &st);
    if (!ew)
        return;
    rule_index ie;
    index_build(&ie, ew);
    int comm = 0;
    for (int32_t i = 0; i < ew->n_rules; i++) {
        const rules_rule *r = &ew->rules[i];
        comm += r->src.n_ops == 1 && r->dst.n_ops == 1 && r->src.ops[0].op == OP_EWMUL &&
                r->dst.ops[0].op == OP_EWMUL && r->src.ops[0].in[0].idx == r->dst.ops[0].in[1].idx &&
                r->src.ops[0].in[1].idx == r->dst.ops[0].in[0].idx;
    }
    CHECK_EQ_INT(comm, 1); /* ewmul(x1, x0) = ewmul(x0, x1) */
    EXPECT_RULE(&ie, "ewmul(ewmul(w0,w1),w2)=ewmul(w0,ewmul(w1,w2))");
    EXPECT_RULE(&ie, "ewadd(ewadd(a0,a1),a2)=ewadd(a0,ewadd(a1,a2))");
    EXPECT_NO_RULE(&ie, "ewmul(ewadd(w0,w1),w2)=ewadd(ewmul(w0,w2),w1)");
    index_free(&ie);
    rules_set *rs = run(3, "matmul,ewadd,transpose,concat,split", 2, 64, &st);
    if (!rs)
        return;
    rule_index ix;
    index_build(&ix, rs);
    /* commutativity: one rule per commutative op, op(a, b) = op(b, a) */
    int comm_add = 0, comm_mul = 0;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        if (r->src.n_ops == 1 && r->dst.n_ops == 1 && r->src.ops[0].op == r->dst.ops[0].op &&
            r->src.ops[0].in[0].idx == r->dst.ops[0].in[1].idx && r->src.ops[0].in[1].idx == r->dst.ops[0].in[0].idx &&
            r->src.ops[0].in[0].idx != r->src.ops[0].in[1].idx) {
            comm_add += r->src.ops[0].op == OP_EWADD;
            comm_mul += r->src.ops[0].op == OP_EWMUL;
        }
    }
    CHECK_EQ_INT(comm_add, 1);
    CHECK_EQ_INT(comm_mul, 0); /* not in this op set */
    EXPECT_RULE(&ix, "ewadd(ewadd(x0,x1),x2)=ewadd(x0,ewadd(x1,x2))");
    EXPECT_RULE(&ix, "matmul(matmul(x0,w0),w1)=matmul(x0,matmul(w0,w1))");
    EXPECT_RULE(&ix, "matmul(x0,ewadd(w0,w1))=ewadd(matmul(x0,w0),matmul(x0,w1))");
    EXPECT_RULE(&ix, "matmul(x0,w0)=split1#0(matmul(x0,concat1(w0,w1)));"
                     "matmul(x0,w1)=split1#1(matmul(x0,concat1(w0,w1)))");
    EXPECT_RULE(&ix, "split0#0(concat0(x0,x1))=x0;split0#1(concat0(x0,x1))=x1");
    EXPECT_RULE(&ix, "T(T(x0))=x0");
    EXPECT_RULE(&ix, "T(matmul(x0,w0))=matmul(T(w0),T(x0))");
    EXPECT_RULE(&ix, "concat0(concat0(x0,x1),x2)=concat0(x0,concat0(x1,x2))");
    /* non-identities */
    EXPECT_NO_RULE(&ix, "matmul(w0,w1)=matmul(w1,w0)");
    EXPECT_NO_RULE(&ix, "matmul(x0,w0)=matmul(w0,x0)");
    EXPECT_NO_RULE(&ix, "concat0(concat1(w0,w1),w2)=concat1(w0,concat0(w1,w2))");
    EXPECT_NO_RULE(&ix, "concat1(concat0(w0,w1),w2)=concat0(w0,concat1(w1,w2))");
    EXPECT_NO_RULE(&ix, "split0#0(concat0(x0,x1))=x1;split0#1(concat0(x0,x1))=x0");
    /* nothing matmul-commutative hides in a bigger rule either: no rule maps a lone matmul to a
       lone matmul with its operands swapped */
    int swapped = 0;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        if (r->src.n_ops == 1 && r->dst.n_ops == 1 && r->src.ops[0].op == OP_MATMUL && r->dst.ops[0].op == OP_MATMUL)
            swapped += r->src.ops[0].in[0].idx == r->dst.ops[0].in[1].idx;
    }
    CHECK_EQ_INT(swapped, 0);
    printf("matrix run: %llu graphs, %llu pairs, %d rules\n", (unsigned long long)st.graphs,
           (unsigned long long)st.pairs, (int)rs->n_rules);
    index_free(&ix);
}

static void test_conv_identities(void) {
    gen_stats st;
    rules_set *rs = run(3, "conv2d,ewadd,relu,enlarge", 2, 64, &st);
    if (!rs)
        return;
    rule_index ix;
    index_build(&ix, rs);
    EXPECT_RULE(&ix, "conv(ewadd(a0,a1),k0)=ewadd(conv(a0,k0),conv(a1,k0))");
    EXPECT_RULE(&ix, "conv(a0,ewadd(k0,k1))=ewadd(conv(a0,k0),conv(a0,k1))");
    EXPECT_RULE(&ix, "relu(conv(a0,k0))=conv_relu(a0,k0)");
    EXPECT_RULE(&ix, "relu(conv(a0,p0))=conv_relu(a0,p0)");
    EXPECT_RULE(&ix, "conv(a0,enlarge(p0))=conv(a0,p0)");
    EXPECT_NO_RULE(&ix, "conv(a0,k0)=conv(k0,a0)");
    EXPECT_NO_RULE(&ix, "relu(ewadd(a0,a1))=ewadd(relu(a0),relu(a1))");
    /* the enlarge rule requires the 1x1 kernel size it was found at */
    int req = 0;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        if (r->src.n_ops == 2 && r->dst.n_ops == 1 && r->src.ops[0].op == OP_ENLARGE &&
            r->dst.ops[0].op == OP_CONV2D && r->dst.ops[0].p.v[PM_ACT] == OPS_ACT_NONE)
            req = r->n_requires == 2 && r->requires[0].dim == 2 && r->requires[1].dim == 3 &&
                  r->requires[0].value == r->vars[r->requires[0].var].shape.dims[2];
    }
    CHECK(req);
    printf("conv run: %llu graphs, %llu pairs, %d rules\n", (unsigned long long)st.graphs,
           (unsigned long long)st.pairs, (int)rs->n_rules);
    index_free(&ix);
}

/* The identity rules (a split of a pool variable, then the concat of its parts: the bare
 * variable) and the sized splits of the merge rules (sizes tied to the concatenated operands'
 * widths, so the rule holds, and is written, for unequal widths). */
static int rule_holds_on_floats(const rules_rule *r);

static rules_rule *find_merge(const rules_set *rs) {
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        if (r->src.n_ops == 3 && r->dst.n_ops == 2 && r->src.ops[0].op == OP_CONCAT && r->src.ops[1].op == OP_MATMUL &&
            r->src.ops[2].op == OP_SPLIT && r->src.ops[0].p.v[PM_AXIS] == 1 && r->src.ops[1].in[0].kind == RULES_REF_VAR &&
            r->src.ops[1].p.v[PM_ACT] == OPS_ACT_NONE)
            return &rs->rules[i];
    }
    return NULL;
}

static void test_identity_and_sized_splits(void) {
    gen_stats st;
    rules_set *rs = run(3, "matmul,concat,split", 2, 64, &st);
    if (!rs)
        return;
    rule_index ix;
    index_build(&ix, rs);
    EXPECT_RULE(&ix, "concat0(split0#0(x0),split0#1(x0))=x0"); /* x (2,3): only rows cut in halves */
    EXPECT_NO_RULE(&ix, "concat0(split0#1(x0),split0#0(x0))=x0");
    /* the identity's other side is the bare variable: no op, the output mapped to it */
    int bare = 0;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        bare += r->dst.n_ops == 0 && r->src.n_ops == 2 && r->src.ops[0].op == OP_SPLIT &&
                r->src.ops[0].in[0].kind == RULES_REF_VAR && r->src.ops[1].op == OP_CONCAT &&
                r->outputs[0].dst.kind == RULES_REF_VAR && r->outputs[0].dst.idx == r->src.ops[0].in[0].idx;
    }
    CHECK(bare >= 1);
    /* merge: matmul(x0, w0), matmul(x0, w1) = split(matmul(x0, concat(w0, w1))) with the split's
       sizes tied to dim 1 of w0 and of w1 */
    const rules_rule *m = find_merge(rs);
    CHECK(m != NULL);
    if (m) {
        const rules_op *sp = &m->src.ops[2];
        CHECK_EQ_INT(sp->p.n_list, 2);
        int tied = 0;
        for (int32_t c = 0; c < m->n_constraints; c++) {
            const rules_constraint *q = &m->constraints[c];
            if (q->side == RULES_SIDE_SRC && q->op == 2 && q->key == PM_LIST && q->n_eq == 1 && q->eq[0].dim == 1)
                tied |= (q->eq[0].var == m->src.ops[0].in[q->list_index].idx) << q->list_index;
        }
        CHECK_EQ_INT(tied, 3);
        /* and it holds with w1 of another width, the sizes following the constraints */
        rules_rule u = *m;
        int32_t w1 = m->src.ops[0].in[1].idx;
        u.vars[w1].shape.dims[1] = 7;
        u.src.ops[2].p.list[1] = 7;
        CHECK(rule_holds_on_floats(&u));
        u.src.ops[2].p.list[1] = m->src.ops[2].p.list[1]; /* the pool's sizes do not even type-check */
        CHECK(!rule_holds_on_floats(&u));
    }
    printf("identity and sized-split run: %llu graphs, %d rules\n", (unsigned long long)st.graphs, (int)rs->n_rules);
    index_free(&ix);
}

/* =============================================================================================
 * collisions, determinism
 */
/* Evaluate both sides of r on fresh random floats with the CPU references; 1 if every mapped
 * output agrees (relative L2 error <= 1e-4). */
static int rule_holds_on_floats(const rules_rule *r) {
    float *vv[RULES_MAX_VARS];
    for (int32_t v = 0; v < r->n_vars; v++) {
        int64_t n = ops_shape_numel(&r->vars[v].shape);
        vv[v] = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            vv[v][i] = (float)((double)(rng() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    ops_shape sh[2][RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    float *val[2][RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    memset(val, 0, sizeof val);
    const rules_graph *gs[2] = {&r->src, &r->dst};
    int ok = 1;
    for (int s = 0; s < 2 && ok; s++)
        for (int32_t k = 0; k < gs[s]->n_ops && ok; k++) {
            const rules_op *o = &gs[s]->ops[k];
            ops_shape in[RULES_MAX_IN];
            const float *iv[RULES_MAX_IN];
            for (int32_t i = 0; i < o->n_in; i++) {
                rules_ref f = o->in[i];
                in[i] = f.kind == RULES_REF_VAR ? r->vars[f.idx].shape : sh[s][f.idx][f.out];
                iv[i] = f.kind == RULES_REF_VAR ? vv[f.idx] : val[s][f.idx][f.out];
            }
            int32_t n_out = 0;
            ok = ops_infer(o->op, &o->p, o->n_in, in, &n_out, sh[s][k], NULL, 0) == 0;
            for (int32_t q = 0; ok && q < n_out; q++)
                val[s][k][q] = malloc(sizeof(float) * (size_t)ops_shape_numel(&sh[s][k][q]));
            ops_sig sig = {o->op, &o->p, o->n_in, n_out, in, sh[s][k]};
            if (ok)
                ops_table[o->op].cpu(&sig, iv, val[s][k]);
        }
    for (int32_t i = 0; i < r->n_outputs && ok; i++) {
        rules_ref f[2] = {r->outputs[i].src, r->outputs[i].dst};
        const float *x[2];
        int64_t n = 0;
        for (int s = 0; s < 2; s++) {
            x[s] = f[s].kind == RULES_REF_VAR ? vv[f[s].idx] : val[s][f[s].idx][f[s].out];
            n = f[s].kind == RULES_REF_VAR ? ops_shape_numel(&r->vars[f[s].idx].shape)
                                           : ops_shape_numel(&sh[s][f[s].idx][f[s].out]);
        }
        double d = 0, m = 0;
        for (int64_t j = 0; j < n; j++) {
            d += ((double)x[0][j] - x[1][j]) * ((double)x[0][j] - x[1][j]);
            m += (double)x[1][j] * x[1][j];
        }
        ok = sqrt(d) <= 1e-4 * sqrt(m) + 1e-30;
    }
    for (int s = 0; s < 2; s++)
        for (int32_t k = 0; k < RULES_MAX_OPS; k++)
            for (int32_t q = 0; q < OPS_MAX_OUTPUTS; q++)
                free(val[s][k][q]);
    for (int32_t v = 0; v < r->n_vars; v++)
        free(vv[v]);
    return ok;
}

static void test_forced_collisions(void) {
    const char *ops = "matmul,ewadd,ewmul,transpose,relu,smul";
    gen_stats full, trunc;
    rules_set *a = run(2, ops, 2, 64, &full);
    rules_set *b = run(2, ops, 2, 8, &trunc); /* 256 buckets for over a thousand graphs */
    if (!a || !b)
        return;
    CHECK(trunc.fingerprints < full.fingerprints / 4);
    CHECK(trunc.pairs > 10 * full.pairs);            /* collisions were forced ... */
    CHECK(trunc.after_float < trunc.pairs / 5);      /* ... and the float re-test removed them */
    CHECK_EQ_INT(trunc.after_float, full.after_float); /* leaving exactly the true pairs */
    int all_hold = 1;
    for (int32_t i = 0; i < b->n_rules; i++)
        if (!rule_holds_on_floats(&b->rules[i])) {
            all_hold = 0;
            fprintf(stderr, "  rule %s of the truncated run does not hold\n", b->rules[i].id);
        }
    CHECK(all_hold);
    /* the same rules, whatever the fingerprint width */
    CHECK_EQ_INT(a->n_rules, b->n_rules);
    rule_index ia, ib;
    index_build(&ia, a);
    index_build(&ib, b);
    int same = ia.n_sigs == ib.n_sigs;
    for (int32_t i = 0; i < ia.n_sigs && same; i++)
        same = !strcmp(ia.sigs[i], ib.sigs[i]);
    CHECK(same);
    printf("collisions: %llu -> %llu fingerprints, %llu -> %llu pairs, %llu -> %llu after the float re-test\n",
           (unsigned long long)full.fingerprints, (unsigned long long)trunc.fingerprints,
           (unsigned long long)full.pairs, (unsigned long long)trunc.pairs, (unsigned long long)full.after_float,
           (unsigned long long)trunc.after_float);
    index_free(&ia);
    index_free(&ib);
}

static void test_threads(void) {
    const char *ops = "conv2d,ewadd,relu,enlarge,concat,split,avgpool2d,const_iconv";
    rules_set *a = run(3, ops, 1, 64, NULL), *b = run(3, ops, 2, 64, NULL);
    if (!a || !b)
        return;
    char *ta = rules_to_json_string(a), *tb = rules_to_json_string(b);
    CHECK(ta && tb && !strcmp(ta, tb));
    CHECK(a->n_rules > 50);
    /* every generated rule holds on fresh floats */
    int all_hold = 1;
    for (int32_t i = 0; i < a->n_rules; i++)
        if (!rule_holds_on_floats(&a->rules[i])) {
            all_hold = 0;
            fprintf(stderr, "  rule %s does not hold on floats\n", a->rules[i].id);
        }
    CHECK(all_hold);
    free(ta);
    free(tb);
    rules_set_free(a);
    rules_set_free(b);
}

/* =============================================================================================
 * exact counts of a 2-op run, derived by brute force
 *
 * Op set {ewadd, matmul, transpose, relu}: 5 op forms (matmul act none|relu, transpose perm (1,0)).
 * The pool (gen_pool_describe) has 19 tensors. What the generator's policies mean for these ops:
 *  - ewadd: two different tensors of one shape, unordered (it is commutative);
 *  - matmul: 2-D operands (rank 4 operands never line up: an activation's W=6 meets no kernel's
 *    rows, weights never go into input 0, data never into input 1), same tensor twice allowed;
 *  - transpose: rank 2 only (its perm has length 2); relu: anything, the scalar too;
 *  - no op reproduces a pool tensor, so with two ops the repeat rule cuts nothing;
 *  - a graph counts if, for each kind (the name's letter), it reads a prefix x0, x0 x1, ... of
 *    its variables; two identical ops never appear.
 * Graphs are compared by value: each is evaluated here with its own random inputs through the
 * fingerprint functions; its outputs are the op results no op of it reads. Fingerprint classes
 * are sets of output value vectors; the candidate pairs are, per class holding at least one
 * graph, the class size minus one (identity graphs of one or two variables take part, at most
 * one per class), plus one commutativity pair for ewadd.
 */
typedef struct {
    ops_type op;
    int act;
    int in[2];       /* pool index, or -1 - (index of the first op) for its output */
    int n_in;
} bf_op;

typedef struct {
    int n_ops;
    bf_op ops[2];
} bf_graph;

typedef struct {
    int n;
    uint32_t *v[2];
    ops_shape s[2];
} bf_vals;

static rules_var bf_pool[GEN_MAX_POOL];
static uint32_t *bf_pool_val[GEN_MAX_POOL];
static int32_t bf_n_pool;

static int bf_eval_op(const bf_op *o, uint32_t *const *iv, const ops_shape *is, uint32_t **ov, ops_shape *os) {
    ops_params p;
    ops_params_default(o->op, &p);
    if (o->op == OP_MATMUL)
        p.v[PM_ACT] = o->act;
    if (o->op == OP_TRANSPOSE) {
        p.n_list = 2;
        p.list[0] = 1;
        p.list[1] = 0;
    }
    int32_t n_out = 0;
    if (ops_infer(o->op, &p, o->n_in, is, &n_out, os, NULL, 0) < 0)
        return -1;
    *ov = malloc(sizeof(uint32_t) * (size_t)ops_shape_numel(os));
    ops_sig sig = {o->op, &p, o->n_in, 1, is, os};
    ops_table[o->op].fp(&sig, (const uint32_t *const *)iv, ov);
    return 0;
}

/* Policy of one op on pool tensors (see above); -1 if the generator would not form it. */
static int bf_valid(const bf_op *o, const ops_shape *is) {
    if (o->op == OP_EWADD)
        return o->in[0] < o->in[1] && ops_shape_eq(&is[0], &is[1]) ? 0 : -1;
    if (o->op == OP_MATMUL)
        return is[0].rank == 2 && is[1].rank == 2 ? 0 : -1;
    if (o->op == OP_TRANSPOSE)
        return is[0].rank == 2 ? 0 : -1;
    return 0;
}

static int bf_prefix_ok(const bf_graph *g) {
    int used[GEN_MAX_POOL] = {0};
    for (int k = 0; k < g->n_ops; k++)
        for (int i = 0; i < g->ops[k].n_in; i++)
            if (g->ops[k].in[i] >= 0)
                used[g->ops[k].in[i]] = 1;
    for (int32_t v = 0; v < bf_n_pool; v++) {
        int slot = atoi(bf_pool[v].name + 1);
        if (used[v] && slot > 0) { /* the previous slot of its kind must be used too */
            for (int32_t u = 0; u < bf_n_pool; u++)
                if (bf_pool[u].name[0] == bf_pool[v].name[0] && atoi(bf_pool[u].name + 1) == slot - 1 && !used[u])
                    return 0;
        }
    }
    return 1;
}

typedef struct {
    int n;                 /* outputs */
    ops_shape s[2];
    uint32_t *v[2];
    int real;              /* made of ops (not an identity graph) */
} bf_class_item;

static int bf_item_eq(const bf_class_item *a, const bf_class_item *b) {
    if (a->n != b->n)
        return 0;
    int used[2] = {0, 0};
    for (int i = 0; i < a->n; i++) {
        int found = 0;
        for (int j = 0; j < b->n && !found; j++)
            if (!used[j] && ops_shape_eq(&a->s[i], &b->s[j]) &&
                !memcmp(a->v[i], b->v[j], sizeof(uint32_t) * (size_t)ops_shape_numel(&a->s[i]))) {
                used[j] = 1;
                found = 1;
            }
        if (!found)
            return 0;
    }
    return 1;
}

static void test_exact_counts(void) {
    bf_n_pool = gen_pool_describe(bf_pool, GEN_MAX_POOL);
    CHECK_EQ_INT(bf_n_pool, 19);
    for (int32_t v = 0; v < bf_n_pool; v++) {
        int64_t n = ops_shape_numel(&bf_pool[v].shape);
        bf_pool_val[v] = malloc(sizeof(uint32_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            bf_pool_val[v][i] = (uint32_t)rng();
    }
    /* single ops on pool tensors */
    const struct { ops_type op; int act, n_in; } forms[5] = {
        {OP_EWADD, 0, 2}, {OP_MATMUL, OPS_ACT_NONE, 2}, {OP_MATMUL, OPS_ACT_RELU, 2}, {OP_TRANSPOSE, 0, 1}, {OP_RELU, 0, 1}};
    int cap = 4096, n1 = 0;
    bf_op *l1 = malloc(sizeof(bf_op) * (size_t)cap);
    for (int f = 0; f < 5; f++)
        for (int32_t a = 0; a < bf_n_pool; a++)
            for (int32_t b = 0; b < (forms[f].n_in == 2 ? bf_n_pool : 1); b++) {
                bf_op o = {forms[f].op, forms[f].act, {a, b}, forms[f].n_in};
                ops_shape is[2] = {bf_pool[a].shape, bf_pool[b].shape}, os;
                uint32_t *iv[2] = {bf_pool_val[a], bf_pool_val[b]}, *ov;
                if (bf_valid(&o, is) < 0 || bf_eval_op(&o, iv, is, &ov, &os) < 0)
                    continue;
                free(ov);
                l1[n1++] = o;
            }
    /* all graphs: one op; two independent ops (unordered, different); a chain */
    int gcap = 1 << 16, ng = 0;
    bf_class_item *items = malloc(sizeof(bf_class_item) * (size_t)gcap);
    int64_t n_graphs = 0;
    for (int i = 0; i < n1; i++)
        for (int j = -1; j < n1; j++) {
            /* j == -1: the single op; j > i: independent pair */
            if (j >= 0 && j <= i)
                continue;
            bf_graph g = {j < 0 ? 1 : 2, {l1[i], j >= 0 ? l1[j] : l1[i]}};
            if (!bf_prefix_ok(&g))
                continue;
            bf_class_item it = {g.n_ops, {{0}}, {NULL, NULL}, 1};
            for (int k = 0; k < g.n_ops; k++) {
                const bf_op *o = &g.ops[k];
                ops_shape is[2] = {bf_pool[o->in[0]].shape, bf_pool[o->in[1]].shape};
                uint32_t *iv[2] = {bf_pool_val[o->in[0]], bf_pool_val[o->in[1]]};
                bf_eval_op(o, iv, is, &it.v[k], &it.s[k]);
            }
            if (ng == gcap) {
                gcap *= 2;
                items = realloc(items, sizeof(bf_class_item) * (size_t)gcap);
            }
            items[ng++] = it;
            n_graphs++;
        }
    for (int i = 0; i < n1; i++) {
        /* the output of l1[i] as an input of a second op */
        ops_shape s0;
        uint32_t *v0;
        ops_shape is0[2] = {bf_pool[l1[i].in[0]].shape, bf_pool[l1[i].in[1]].shape};
        uint32_t *iv0[2] = {bf_pool_val[l1[i].in[0]], bf_pool_val[l1[i].in[1]]};
        bf_eval_op(&l1[i], iv0, is0, &v0, &s0);
        for (int f = 0; f < 5; f++)
            for (int32_t a = -1; a < bf_n_pool; a++)
                for (int32_t b = -1; b < (forms[f].n_in == 2 ? bf_n_pool : 0); b++) {
                    if (forms[f].n_in == 1 && a != -1)
                        continue;
                    if (forms[f].n_in == 2 && a != -1 && b != -1)
                        continue; /* must read the first op's output */
                    bf_op o = {forms[f].op, forms[f].act, {a, b}, forms[f].n_in};
                    ops_shape is[2] = {a < 0 ? s0 : bf_pool[a].shape, b < 0 ? s0 : bf_pool[b].shape};
                    uint32_t *iv[2] = {a < 0 ? v0 : bf_pool_val[a], b < 0 ? v0 : bf_pool_val[b]};
                    /* ewadd's order: pool tensors come before op outputs */
                    if (o.op == OP_EWADD && !(a >= 0 && b < 0))
                        continue;
                    if (o.op == OP_EWADD ? !ops_shape_eq(&is[0], &is[1])
                                         : (o.op != OP_RELU && (is[0].rank != 2 || (o.n_in == 2 && is[1].rank != 2))))
                        continue;
                    bf_graph g = {2, {l1[i], o}};
                    g.ops[1].in[0] = a < 0 ? -1 : a; /* bf_prefix_ok reads pool indices >= 0 only */
                    g.ops[1].in[1] = b < 0 ? -1 : b;
                    if (!bf_prefix_ok(&g))
                        continue;
                    bf_class_item it = {1, {{0}}, {NULL, NULL}, 1};
                    if (bf_eval_op(&o, iv, is, &it.v[0], &it.s[0]) < 0)
                        continue;
                    if (ng == gcap) {
                        gcap *= 2;
                        items = realloc(items, sizeof(bf_class_item) * (size_t)gcap);
                    }
                    items[ng++] = it;
                    n_graphs++;
                }
        free(v0);
    }
    /* identity graphs of one or two variables */
    int n_real = ng;
    for (int32_t a = 0; a < bf_n_pool; a++)
        for (int32_t b = a; b < bf_n_pool; b++) {
            bf_class_item it = {a == b ? 1 : 2, {bf_pool[a].shape, bf_pool[b].shape}, {NULL, NULL}, 0};
            for (int k = 0; k < it.n; k++) {
                int64_t n = ops_shape_numel(&it.s[k]);
                it.v[k] = malloc(sizeof(uint32_t) * (size_t)n);
                memcpy(it.v[k], bf_pool_val[k ? b : a], sizeof(uint32_t) * (size_t)n);
            }
            if (ng == gcap) {
                gcap *= 2;
                items = realloc(items, sizeof(bf_class_item) * (size_t)gcap);
            }
            items[ng++] = it;
        }
    /* classes: hash the output values (order-free), then compare exactly within a hash */
    uint64_t *h = malloc(sizeof(uint64_t) * (size_t)ng);
    for (int i = 0; i < ng; i++) {
        uint64_t acc = 0;
        for (int k = 0; k < items[i].n; k++) {
            uint64_t x = 1469598103934665603ull;
            for (int64_t j = 0; j < ops_shape_numel(&items[i].s[k]); j++)
                x = (x ^ items[i].v[k][j]) * 1099511628211ull;
            acc += x * 0x9e3779b97f4a7c15ull; /* sum: independent of the output order */
        }
        h[i] = acc;
    }
    int *cls = malloc(sizeof(int) * (size_t)ng);
    int n_classes_real = 0;
    int64_t pairs = 0;
    for (int i = 0; i < ng; i++) {
        cls[i] = i;
        for (int j = 0; j < i; j++)
            if (cls[j] == j && h[j] == h[i] && bf_item_eq(&items[i], &items[j])) {
                cls[i] = j;
                break;
            }
    }
    for (int i = 0; i < ng; i++) {
        if (cls[i] != i)
            continue;
        int size = 0, real = 0, ident = 0;
        for (int j = i; j < ng; j++)
            if (cls[j] == i) {
                size++;
                real += items[j].real;
                ident += !items[j].real;
            }
        if (real)
            n_classes_real++;
        CHECK(ident <= 1);
        if (real && size > 1)
            pairs += size - 1;
    }
    pairs += 1; /* ewadd commutativity */

    gen_stats st;
    rules_set *rs = run(2, "ewadd,matmul,transpose,relu", 2, 64, &st);
    if (rs) {
        CHECK_EQ_INT(st.graphs, n_graphs);
        CHECK_EQ_INT(st.fingerprints, n_classes_real);
        CHECK_EQ_INT(st.pairs, pairs);
        CHECK_EQ_INT(st.after_float, pairs); /* no float disagreement among these ops */
        printf("exact counts (2 ops over ewadd, matmul, transpose, relu): %lld graphs, %d fingerprints, "
               "%lld candidate pairs; %d rules\n", (long long)n_graphs, n_classes_real, (long long)pairs,
               (int)rs->n_rules);
        (void)n_real;
    }
    rules_set_free(rs);
    for (int i = 0; i < ng; i++)
        for (int k = 0; k < items[i].n; k++)
            free(items[i].v[k]);
    free(items);
    free(h);
    free(cls);
    free(l1);
    for (int32_t v = 0; v < bf_n_pool; v++)
        free(bf_pool_val[v]);
}

static void test_config_errors(void) {
    gen_config cfg;
    gen_config_default(&cfg);
    char err[256];
    CHECK(gen_parse_ops(&cfg, "matmul,bogus", err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "unknown op 'bogus'");
    CHECK(gen_parse_ops(&cfg, "sigmoid", err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "not in the generation op set");
    CHECK(gen_parse_ops(&cfg, "matmul,,relu", err, sizeof err) < 0);
    CHECK(gen_parse_ops(&cfg, "matmul,relu", err, sizeof err) == 0);
    CHECK(cfg.ops[OP_MATMUL] && cfg.ops[OP_RELU] && !cfg.ops[OP_CONV2D]);
    rules_set *rs = NULL;
    cfg.max_ops = 0;
    CHECK(gen_run(&cfg, &rs, NULL, err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "max ops 0 out of range");
    cfg.max_ops = 2;
    cfg.fp_bits = 65;
    CHECK(gen_run(&cfg, &rs, NULL, err, sizeof err) < 0);
    CHECK(rs == NULL);
}

int main(void) {
    test_fp_semantics();
    test_config_errors();
    test_exact_counts();
    test_forced_collisions();
    test_threads();
    test_matrix_identities();
    test_conv_identities();
    test_identity_and_sized_splits();
    return TEST_REPORT();
}
