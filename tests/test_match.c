/* test_match.c: rule matching and applying (rules/match.h) on small graphs built here, with the
 * hand-written rule file tests/data/opt/rules_small.json: matches exactly where expected, none
 * where an intermediate is read outside the match, multi-output rules in both directions,
 * requirements and constraints, parameter equivalence ("same" = explicit pads), shape-changing
 * and cycle-creating applications rejected, and every applied rewrite run on the CPU executor
 * against the original. Two generated rules inline: a merge whose split is cut at the operands'
 * widths (unequal siblings) and the identity concat(split(x)) = x. Lifting (match.h): rules over
 * matrices on tensors with unit dims in front, matched and applied where sound (merges, transposes,
 * constraints read at the lifted dim) and refused where not (dims in front not 1, broadcasting,
 * ops that are not lifted, on the pattern and on the target side).
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "match.h"
#include "test.h"

static rules_set *load_rules(void) {
    char err[512];
    rules_set *rs = rules_load("tests/data/opt/rules_small.json", err, sizeof err);
    if (!rs)
        fprintf(stderr, "%s\n", err);
    return rs;
}

static int32_t rule_index(const rules_set *rs, const char *id) {
    for (int32_t i = 0; i < rs->n_rules; i++)
        if (!strcmp(rs->rules[i].id, id))
            return i;
    return -1;
}

#define MAX_FOUND 16
typedef struct {
    int32_t n;
    rules_match m[MAX_FOUND];
} found_list;

static int collect(const rules_match *m, void *user) {
    found_list *f = user;
    if (f->n < MAX_FOUND)
        f->m[f->n] = *m;
    f->n++;
    return 0;
}

static found_list find_all(const rules_set *rs, const char *id, rules_dir dir, const graph *g) {
    found_list f = {0};
    rules_match_index ix;
    char err[256];
    if (rules_match_index_build(&ix, g, err, sizeof err) < 0) {
        fprintf(stderr, "index: %s\n", err);
        f.n = -1;
        return f;
    }
    int32_t got = rules_match_find(rs, rule_index(rs, id), dir, &ix, collect, &f);
    CHECK_EQ_INT(got, f.n);
    rules_match_index_free(&ix);
    return f;
}

static int32_t node_of(const graph *g, int32_t tensor) { return g->tensors[tensor].producer; }

/* Apply match m; NULL (with the reason in err) if the plan or its check is refused. */
static graph *apply(const rules_set *rs, const graph *g, const rules_match *m, char *err, size_t errlen) {
    rules_match_index ix;
    if (rules_match_index_build(&ix, g, err, errlen) < 0)
        return NULL;
    rules_apply_plan pl;
    memset(&pl, 0, sizeof pl);
    graph *out = NULL;
    int64_t counter = 0;
    char prefix[32];
    rules_apply_prefix(g, prefix, sizeof prefix); /* "opt", or "opt1" once g has opt.* names */
    if (rules_apply_plan_rule(rs, m, &ix, &pl, err, errlen) == 0 && rules_apply_check(&ix, &pl, err, errlen) == 0)
        rules_apply_run(&ix, &pl, prefix, &counter, &out, err, errlen);
    rules_apply_plan_clear(&pl);
    rules_match_index_free(&ix);
    return out;
}

/* Largest relative L2 error over the outputs of a and b on the same seeded inputs. */
static double compare_runs(const graph *a, const graph *b) {
    char err[256];
    double worst = 0.0;
    if (a->n_outputs != b->n_outputs)
        return 1e30;
    float **oa = calloc((size_t)a->n_outputs, sizeof *oa), **ob = calloc((size_t)b->n_outputs, sizeof *ob);
    if (exec_cpu_run(a, NULL, 7, oa, err, sizeof err) < 0 || exec_cpu_run(b, NULL, 7, ob, err, sizeof err) < 0) {
        fprintf(stderr, "exec: %s\n", err);
        worst = 1e30;
    } else {
        for (int32_t i = 0; i < a->n_outputs; i++) {
            exec_diff d = exec_compare(ob[i], oa[i], ops_shape_numel(&a->tensors[a->outputs[i]].shape));
            if (d.rel_l2 > worst || d.nan_count)
                worst = d.nan_count ? 1e30 : d.rel_l2;
        }
    }
    for (int32_t i = 0; i < a->n_outputs; i++) {
        free(oa[i]);
        free(ob[i]);
    }
    free(oa);
    free(ob);
    return worst;
}

static int valid(const graph *g) {
    char err[256];
    if (graph_validate(g, err, sizeof err) < 0) {
        fprintf(stderr, "invalid graph: %s\n", err);
        return 0;
    }
    return 1;
}

static int32_t count_op(const graph *g, ops_type op) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

/* conv+relu fusion: two chains match; a conv whose output is also a graph output does not. */
static void test_conv_relu(const rules_set *rs) {
    graph *g = graph_new("conv_relu");
    const int64_t xd[4] = {1, 4, 6, 7}, kd[4] = {4, 4, 3, 3};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t k1 = graph_weight_he(g, "k1", 4, kd), k2 = graph_weight_he(g, "k2", 4, kd), k3 = graph_weight_he(g, "k3", 4, kd);
    const int32_t pads[4] = {1, 1, 1, 1};
    /* explicit pads 1 = "same" for a 3x3 stride-1 kernel: the rule (pad same) must match */
    int32_t c1 = graph_conv2d_ex(g, "c1", x, k1, -1, 1, 1, pads, 1, OPS_ACT_NONE);
    int32_t r1 = graph_unary(g, OP_RELU, c1);
    int32_t c2 = graph_conv2d(g, r1, k2, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    int32_t r2 = graph_unary(g, OP_RELU, c2);
    int32_t c3 = graph_conv2d(g, x, k3, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE); /* read by relu and output */
    int32_t r3 = graph_unary(g, OP_RELU, c3);
    /* pads 0 on a 3x3 kernel is not "same": no match */
    const int32_t nopad[4] = {0, 0, 0, 0};
    int32_t c4 = graph_conv2d_ex(g, "c4", x, k1, -1, 1, 1, nopad, 1, OPS_ACT_NONE);
    int32_t r4 = graph_unary(g, OP_RELU, c4);
    graph_mark_output(g, r2);
    graph_mark_output(g, c3);
    graph_mark_output(g, r3);
    graph_mark_output(g, r4);
    CHECK(graph_ok(g));
    found_list f = find_all(rs, "fuse_relu_conv", RULES_DIR_FWD, g);
    CHECK_EQ_INT(f.n, 2);
    if (f.n == 2) {
        /* ascending by the last pattern op's node: r1 before r2 */
        CHECK_EQ_INT(f.m[0].node[0], node_of(g, c1));
        CHECK_EQ_INT(f.m[0].node[1], node_of(g, r1));
        CHECK_EQ_INT(f.m[1].node[0], node_of(g, c2));
        CHECK_EQ_INT(f.m[1].node[1], node_of(g, r2));
        CHECK_EQ_INT(f.m[0].var[0], x);  /* a0 */
        CHECK_EQ_INT(f.m[0].var[1], k1); /* k0 */
        char err[256];
        graph *h = apply(rs, g, &f.m[1], err, sizeof err);
        CHECK(h != NULL);
        if (h) {
            CHECK(valid(h));
            CHECK_EQ_INT(h->n_nodes, g->n_nodes - 1);
            CHECK_EQ_INT(count_op(h, OP_RELU), 3);
            /* the output keeps its name and is now made by a tagged conv with a fused relu */
            int32_t o = h->outputs[0];
            CHECK_STR_CONTAINS(h->tensors[o].name, g->tensors[r2].name);
            const graph_node *nd = &h->nodes[h->tensors[o].producer];
            CHECK_EQ_INT(nd->op, OP_CONV2D);
            CHECK_EQ_INT(nd->p.v[PM_ACT], OPS_ACT_RELU);
            CHECK_EQ_INT(nd->tag, 1);
            CHECK(compare_runs(g, h) < 1e-6);
            graph_free(h);
        }
    }
    /* the dst side (one conv with act relu) matches nothing here: no conv has a fused relu */
    CHECK_EQ_INT(find_all(rs, "fuse_relu_conv", RULES_DIR_BWD, g).n, 0);
    graph_free(g);
}

/* Merging two matmuls sharing an input (a multi-output rule, applied dst -> src), and back. */
static void test_merge_matmul(const rules_set *rs) {
    graph *g = graph_new("mm");
    const int64_t xd[2] = {4, 6}, wd[2] = {6, 5};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w1 = graph_weight_he(g, "w1", 2, wd), w2 = graph_weight_he(g, "w2", 2, wd);
    int32_t m1 = graph_matmul(g, x, w1, OPS_ACT_NONE), m2 = graph_matmul(g, x, w2, OPS_ACT_NONE);
    int32_t s = graph_ewadd(g, m1, m2);
    graph_mark_output(g, s);
    CHECK(graph_ok(g));
    found_list f = find_all(rs, "merge_matmul", RULES_DIR_BWD, g);
    CHECK_EQ_INT(f.n, 2); /* (m1, m2) and (m2, m1) */
    CHECK_EQ_INT(find_all(rs, "merge_matmul", RULES_DIR_FWD, g).n, 0);
    if (f.n >= 1) {
        char err[256];
        graph *h = apply(rs, g, &f.m[0], err, sizeof err);
        CHECK(h != NULL);
        if (h) {
            CHECK(valid(h));
            CHECK_EQ_INT(count_op(h, OP_MATMUL), 1);
            CHECK_EQ_INT(count_op(h, OP_CONCAT), 1);
            CHECK_EQ_INT(count_op(h, OP_SPLIT), 1);
            CHECK(compare_runs(g, h) < 1e-6);
            /* and forwards again: concat + matmul + split -> two matmuls */
            found_list b = find_all(rs, "merge_matmul", RULES_DIR_FWD, h);
            CHECK_EQ_INT(b.n, 1);
            if (b.n == 1) {
                graph *k = apply(rs, h, &b.m[0], err, sizeof err);
                CHECK(k != NULL);
                if (!k)
                    fprintf(stderr, "forwards: %s\n", err);
                if (k) {
                    CHECK(valid(k));
                    CHECK_EQ_INT(count_op(k, OP_MATMUL), 2);
                    CHECK_EQ_INT(k->n_nodes, 3);
                    CHECK(graph_hash(k) == graph_hash(g));
                    graph_free(k);
                }
            }
            graph_free(h);
        }
    }
    graph_free(g);
}

/* Unequal widths: the rule's equal split gives (4,4) twice where (4,5) and (4,3) were: refused. */
static void test_merge_unequal(const rules_set *rs) {
    graph *g = graph_new("mm2");
    const int64_t xd[2] = {4, 6}, w1d[2] = {6, 5}, w2d[2] = {6, 3};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w1 = graph_weight_he(g, "w1", 2, w1d), w2 = graph_weight_he(g, "w2", 2, w2d);
    graph_mark_output(g, graph_matmul(g, x, w1, OPS_ACT_NONE));
    graph_mark_output(g, graph_matmul(g, x, w2, OPS_ACT_NONE));
    found_list f = find_all(rs, "merge_matmul", RULES_DIR_BWD, g);
    CHECK_EQ_INT(f.n, 2);
    if (f.n >= 1) {
        char err[256] = "";
        graph *h = apply(rs, g, &f.m[0], err, sizeof err);
        CHECK(h == NULL);
        CHECK_STR_CONTAINS(err, "would change shape");
        graph_free(h);
    }
    graph_free(g);
}

/* Merging m1 = x W1 with m2 = x relu(m1) would make the merged matmul read its own output. */
static void test_cycle(const rules_set *rs) {
    graph *g = graph_new("cyc");
    const int64_t d[2] = {4, 4};
    int32_t x = graph_input(g, "x", 2, d);
    int32_t w1 = graph_weight_he(g, "w1", 2, d);
    int32_t m1 = graph_matmul(g, x, w1, OPS_ACT_NONE);
    int32_t t = graph_unary(g, OP_RELU, m1);
    int32_t m2 = graph_matmul(g, x, t, OPS_ACT_NONE);
    graph_mark_output(g, m2);
    CHECK(graph_ok(g));
    found_list f = find_all(rs, "merge_matmul", RULES_DIR_BWD, g);
    CHECK_EQ_INT(f.n, 2);
    for (int32_t i = 0; i < f.n && i < MAX_FOUND; i++) {
        char err[256] = "";
        graph *h = apply(rs, g, &f.m[i], err, sizeof err);
        CHECK(h == NULL);
        CHECK_STR_CONTAINS(err, "cycle");
        graph_free(h);
    }
    graph_free(g);
}

/* An intermediate of the pattern read outside the match: no match. */
static void test_outside_use(const rules_set *rs) {
    graph *g = graph_new("outside");
    const int64_t d[2] = {3, 5};
    int32_t x = graph_input(g, "x", 2, d);
    const int32_t perm[2] = {1, 0};
    int32_t t1 = graph_transpose(g, x, 2, perm);
    int32_t t2 = graph_transpose(g, t1, 2, perm);
    graph_mark_output(g, graph_unary(g, OP_RELU, t2));
    CHECK_EQ_INT(find_all(rs, "transpose_twice", RULES_DIR_FWD, g).n, 1);
    graph_mark_output(g, graph_unary(g, OP_SIGMOID, t1)); /* t1 now read outside */
    CHECK_EQ_INT(find_all(rs, "transpose_twice", RULES_DIR_FWD, g).n, 0);
    graph_free(g);
    /* an identity rule: transpose(transpose(x)) -> x rewires readers to x itself */
    g = graph_new("identity");
    x = graph_input(g, "x", 2, d);
    t1 = graph_transpose(g, x, 2, perm);
    t2 = graph_transpose(g, t1, 2, perm);
    graph_mark_output(g, graph_unary(g, OP_RELU, t2));
    found_list f = find_all(rs, "transpose_twice", RULES_DIR_FWD, g);
    CHECK_EQ_INT(f.n, 1);
    CHECK(!rules_match_usable(&rs->rules[rule_index(rs, "transpose_twice")], RULES_DIR_BWD));
    if (f.n == 1) {
        char err[256];
        graph *h = apply(rs, g, &f.m[0], err, sizeof err);
        CHECK(h != NULL);
        if (h) {
            CHECK(valid(h));
            CHECK_EQ_INT(h->n_nodes, 1);
            CHECK_EQ_INT(h->nodes[0].in[0], h->inputs[0]);
            CHECK(compare_runs(g, h) == 0.0);
            graph_free(h);
        }
    }
    graph_free(g);
}

/* Requirements: enlarge(r) then conv = conv with r, only for a 1x3 kernel enlarged to 3x3. */
static void test_requires(const rules_set *rs) {
    graph *g = graph_new("req");
    const int64_t xd[4] = {1, 2, 5, 5}, r13[4] = {3, 2, 1, 3}, r31[4] = {3, 2, 3, 1};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t ka = graph_weight_he(g, "ka", 4, r13), kb = graph_weight_he(g, "kb", 4, r31);
    ops_params ep;
    ops_params_default(OP_ENLARGE, &ep);
    ep.v[PM_KH] = 3;
    ep.v[PM_KW] = 3;
    int32_t ea, eb;
    graph_add(g, "ea", OP_ENLARGE, &ep, 1, &ka, &ea);
    graph_add(g, "eb", OP_ENLARGE, &ep, 1, &kb, &eb);
    int32_t ca = graph_conv2d(g, x, ea, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    int32_t cb = graph_conv2d(g, x, eb, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    graph_mark_output(g, ca);
    graph_mark_output(g, cb);
    CHECK(graph_ok(g));
    found_list f = find_all(rs, "enlarge_conv", RULES_DIR_FWD, g);
    CHECK_EQ_INT(f.n, 1);
    if (f.n == 1) {
        CHECK_EQ_INT(f.m[0].var[1], ka);
        char err[256];
        graph *h = apply(rs, g, &f.m[0], err, sizeof err);
        CHECK(h != NULL);
        if (h) {
            CHECK(valid(h));
            CHECK_EQ_INT(count_op(h, OP_ENLARGE), 1);
            CHECK(compare_runs(g, h) < 1e-6);
            graph_free(h);
        }
    }
    graph_free(g);
}

/* A constrained constant: matmul by an identity of the matching size disappears. */
static void test_constraint(const rules_set *rs) {
    graph *g = graph_new("imm");
    const int64_t xd[2] = {3, 5};
    int32_t x = graph_input(g, "x", 2, xd);
    ops_params p;
    ops_params_default(OP_CONST_IMM, &p);
    p.v[PM_N] = 5;
    int32_t id;
    graph_add(g, "eye", OP_CONST_IMM, &p, 0, NULL, &id);
    int32_t m = graph_matmul(g, x, id, OPS_ACT_NONE);
    graph_mark_output(g, graph_unary(g, OP_TANH, m));
    CHECK(graph_ok(g));
    found_list f = find_all(rs, "matmul_identity", RULES_DIR_FWD, g);
    CHECK_EQ_INT(f.n, 1);
    if (f.n == 1) {
        char err[256];
        graph *h = apply(rs, g, &f.m[0], err, sizeof err);
        CHECK(h != NULL);
        if (h) {
            CHECK(valid(h));
            CHECK_EQ_INT(h->n_nodes, 1);
            CHECK(compare_runs(g, h) < 1e-7);
            graph_free(h);
        }
    }
    graph_free(g);
}

/* No broadcasting instance: the rules are proved for elementwise operands of equal shapes. */
static void test_broadcast(const rules_set *rs) {
    CHECK(rules_match_broadcasts(OP_EWADD));
    CHECK(rules_match_broadcasts(OP_EWMUL));
    CHECK(rules_match_broadcasts(OP_EWSUB));
    CHECK(!rules_match_broadcasts(OP_MATMUL));
    CHECK(!rules_match_broadcasts(OP_CONCAT));
    CHECK(!rules_match_broadcasts(OP_SMUL));
    CHECK(!rules_match_broadcasts(OP_RELU));
    graph *g = graph_new("bcast");
    const int64_t ad[2] = {4, 5}, bd[2] = {1, 5};
    int32_t a = graph_input(g, "a", 2, ad), a2 = graph_input(g, "a2", 2, ad), b = graph_input(g, "b", 2, bd);
    graph_mark_output(g, graph_ewadd(g, a, b));  /* broadcasts: not matched */
    graph_mark_output(g, graph_ewadd(g, a, a2)); /* equal shapes: matched */
    CHECK(graph_ok(g));
    found_list f = find_all(rs, "ewadd_comm", RULES_DIR_FWD, g);
    CHECK_EQ_INT(f.n, 1);
    if (f.n == 1)
        CHECK_EQ_INT(f.m[0].var[1], a); /* ewadd(x1, x0): x1 = a, x0 = a2 */
    graph_free(g);
}

/* Parameter equivalence on its own. */
static void test_params(void) {
    ops_params a, b;
    ops_shape in[2];
    const int64_t xd[4] = {1, 3, 8, 8}, kd[4] = {4, 3, 5, 5};
    in[0] = ops_shape_make(4, xd);
    in[1] = ops_shape_make(4, kd);
    ops_params_default(OP_CONV2D, &a);
    ops_params_default(OP_CONV2D, &b);
    a.v[PM_PAD] = OPS_PAD_SAME;
    b.v[PM_PAD_T] = b.v[PM_PAD_L] = b.v[PM_PAD_B] = b.v[PM_PAD_R] = 2;
    CHECK(rules_match_params(OP_CONV2D, &a, &b, 2, in, NULL, NULL));
    b.v[PM_PAD_R] = 1;
    CHECK(!rules_match_params(OP_CONV2D, &a, &b, 2, in, NULL, NULL));
    b.v[PM_PAD_R] = 2;
    b.v[PM_ACT] = OPS_ACT_RELU;
    CHECK(!rules_match_params(OP_CONV2D, &a, &b, 2, in, NULL, NULL));
    /* split: equal parts written out equal the empty sizes list */
    ops_params s1, s2;
    ops_params_default(OP_SPLIT, &s1);
    s1.v[PM_AXIS] = 1;
    s1.v[PM_PARTS] = 2;
    s2 = s1;
    s2.n_list = 2;
    s2.list[0] = s2.list[1] = 3;
    const int64_t sd[2] = {2, 6};
    ops_shape ss = ops_shape_make(2, sd);
    CHECK(rules_match_params(OP_SPLIT, &s1, &s2, 1, &ss, NULL, NULL));
    s2.list[0] = 2;
    s2.list[1] = 4;
    CHECK(!rules_match_params(OP_SPLIT, &s1, &s2, 1, &ss, NULL, NULL));
}

/* Two generated rules (tasc generate --max-ops 3, proved by tasc verify): the matmul merge whose
 * split is cut at the widths of the concatenated weights (sizes tied to w0 dim 1 and w1 dim 1), and
 * the identity concat(split(a0)) = a0 along channels, whose other side is the bare variable. */
static const char sized_rules_text[] =
    "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":3,\"counts\":{},\"rules\":["
    "{\"id\":\"merge_sized\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]},{\"name\":\"w0\",\"shape\":[3,3]},"
    "{\"name\":\"w1\",\"shape\":[3,3]}],\"src\":[{\"op\":\"concat\",\"params\":{\"axis\":1},\"inputs\":[\"w0\",\"w1\"]},"
    "{\"op\":\"matmul\",\"params\":{\"act\":\"none\"},\"inputs\":[\"x0\",\"%0\"]},"
    "{\"op\":\"split\",\"params\":{\"axis\":1,\"parts\":2,\"sizes\":[3,3]},\"inputs\":[\"%1\"]}],"
    "\"dst\":[{\"op\":\"matmul\",\"params\":{\"act\":\"none\"},\"inputs\":[\"x0\",\"w0\"]},"
    "{\"op\":\"matmul\",\"params\":{\"act\":\"none\"},\"inputs\":[\"x0\",\"w1\"]}],"
    "\"outputs\":[{\"src\":\"%2\",\"dst\":\"%0\"},{\"src\":\"%2.1\",\"dst\":\"%1\"}],"
    "\"constraints\":[{\"side\":\"src\",\"op\":2,\"param\":\"sizes\",\"index\":0,\"value\":3,\"equals\":[[\"w0\",1]]},"
    "{\"side\":\"src\",\"op\":2,\"param\":\"sizes\",\"index\":1,\"value\":3,\"equals\":[[\"w1\",1]]}]},"
    "{\"id\":\"split_concat\",\"vars\":[{\"name\":\"a0\",\"shape\":[1,4,5,6]}],"
    "\"src\":[{\"op\":\"split\",\"params\":{\"axis\":1,\"parts\":2,\"sizes\":[]},\"inputs\":[\"a0\"]},"
    "{\"op\":\"concat\",\"params\":{\"axis\":1},\"inputs\":[\"%0\",\"%0.1\"]}],\"dst\":[],"
    "\"outputs\":[{\"src\":\"%1\",\"dst\":\"a0\"}]}]}";

/* Sized splits: siblings of widths 5 and 3 merge into one matmul cut at [5, 3]; a node split
 * [5, 3] matches the rule forwards (its sizes checked against the bound widths), back to the two
 * matmuls; a split cut elsewhere does not match. */
static void test_merge_sized(const rules_set *rs) {
    graph *g = graph_new("mm3");
    const int64_t xd[2] = {4, 6}, w1d[2] = {6, 5}, w2d[2] = {6, 3};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w1 = graph_weight_he(g, "w1", 2, w1d), w2 = graph_weight_he(g, "w2", 2, w2d);
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_matmul(g, x, w1, OPS_ACT_NONE)));
    graph_mark_output(g, graph_unary(g, OP_SIGMOID, graph_matmul(g, x, w2, OPS_ACT_NONE)));
    found_list f = find_all(rs, "merge_sized", RULES_DIR_BWD, g);
    CHECK_EQ_INT(f.n, 2);
    char err[256] = "";
    graph *h = f.n >= 1 ? apply(rs, g, &f.m[0], err, sizeof err) : NULL;
    CHECK(h != NULL);
    if (!h) {
        fprintf(stderr, "sized merge: %s\n", err);
        graph_free(g);
        return;
    }
    CHECK(valid(h));
    CHECK_EQ_INT(count_op(h, OP_MATMUL), 1);
    CHECK(compare_runs(g, h) < 1e-6);
    int32_t sn = -1;
    for (int32_t i = 0; i < h->n_nodes; i++)
        if (h->nodes[i].op == OP_SPLIT)
            sn = i;
    CHECK(sn >= 0 && h->nodes[sn].p.n_list == 2);
    if (sn >= 0 && h->nodes[sn].p.n_list == 2) {
        int64_t a = h->nodes[sn].p.list[0], b = h->nodes[sn].p.list[1];
        CHECK((a == 5 && b == 3) || (a == 3 && b == 5));
        found_list back = find_all(rs, "merge_sized", RULES_DIR_FWD, h);
        CHECK_EQ_INT(back.n, 1);
        graph *k = back.n == 1 ? apply(rs, h, &back.m[0], err, sizeof err) : NULL;
        CHECK(k != NULL && count_op(k, OP_MATMUL) == 2 && count_op(k, OP_SPLIT) == 0);
        if (k)
            CHECK(compare_runs(g, k) < 1e-6);
        graph_free(k);
        /* the same node cut at [4, 4]: its parts are not the weights' widths */
        h->nodes[sn].p.list[0] = 4;
        h->nodes[sn].p.list[1] = 4;
        h->tensors[h->nodes[sn].out[0]].shape.dims[1] = 4;
        h->tensors[h->nodes[sn].out[1]].shape.dims[1] = 4;
        CHECK_EQ_INT(find_all(rs, "merge_sized", RULES_DIR_FWD, h).n, 0);
    }
    graph_free(h);
    graph_free(g);
}

/* The identity rule drops a split whose parts are concatenated back in order (what a merged conv
 * followed by the concat of its branches leaves): the concat's readers read the split's input. A
 * concat of the parts swapped is no match. */
static void test_split_concat_identity(const rules_set *rs) {
    for (int swapped = 0; swapped < 2; swapped++) {
        graph *g = graph_new("sc");
        const int64_t xd[4] = {1, 8, 6, 6}, kd[4] = {16, 8, 3, 3};
        int32_t x = graph_input(g, "x", 4, xd), k = graph_weight_he(g, "k", 4, kd);
        int32_t y = graph_conv2d(g, x, k, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE), parts[2];
        graph_split(g, y, 1, 2, NULL, parts);
        int32_t both[2] = {parts[swapped], parts[1 - swapped]};
        graph_mark_output(g, graph_unary(g, OP_RELU, graph_concat(g, 1, 2, both)));
        CHECK(graph_ok(g));
        found_list f = find_all(rs, "split_concat", RULES_DIR_FWD, g);
        CHECK_EQ_INT(f.n, swapped ? 0 : 1);
        CHECK_EQ_INT(find_all(rs, "split_concat", RULES_DIR_BWD, g).n, 0); /* a bare variable is no pattern */
        if (f.n == 1) {
            char err[256] = "";
            graph *h = apply(rs, g, &f.m[0], err, sizeof err);
            CHECK(h != NULL);
            if (h) {
                CHECK(valid(h));
                CHECK_EQ_INT(h->n_nodes, 2); /* conv, relu */
                CHECK_EQ_INT(count_op(h, OP_SPLIT) + count_op(h, OP_CONCAT), 0);
                CHECK(compare_runs(g, h) < 1e-6);
            }
            graph_free(h);
        }
        graph_free(g);
    }
}

/* The lifting helpers on their own. */
static void test_lift_helpers(void) {
    const int64_t u[3] = {1, 4, 6}, nu[3] = {2, 4, 6}, uu[4] = {1, 1, 4, 6};
    ops_shape s3 = ops_shape_make(3, u), n3 = ops_shape_make(3, nu), s4 = ops_shape_make(4, uu);
    CHECK_EQ_INT(rules_lift_of(&s3, 3), 0);
    CHECK_EQ_INT(rules_lift_of(&s3, 2), 1);
    CHECK_EQ_INT(rules_lift_of(&s4, 2), 2);
    CHECK_EQ_INT(rules_lift_of(&s3, 1), -1); /* (1, 4) in front: 4 is not a unit dim */
    CHECK_EQ_INT(rules_lift_of(&n3, 2), -1); /* a batch of 2 is not a matrix */
    CHECK_EQ_INT(rules_lift_of(&s3, 4), -1);
    ops_params p, q;
    ops_params_default(OP_TRANSPOSE, &p);
    p.n_list = 2;
    p.list[0] = 1;
    p.list[1] = 0;
    CHECK(rules_lift_params(OP_TRANSPOSE, &p, 2, &q) == 0);
    CHECK(q.n_list == 4 && q.list[0] == 0 && q.list[1] == 1 && q.list[2] == 3 && q.list[3] == 2);
    ops_params_default(OP_CONCAT, &p);
    p.v[PM_AXIS] = 1;
    CHECK(rules_lift_params(OP_CONCAT, &p, 1, &q) == 0 && q.v[PM_AXIS] == 2);
    CHECK(rules_lift_params(OP_CONCAT, &p, 1, &p) == 0 && p.v[PM_AXIS] == 2); /* in place */
    ops_params_default(OP_CONV2D, &p);
    CHECK(rules_lift_params(OP_CONV2D, &p, 0, &q) == 0);
    CHECK(rules_lift_params(OP_CONV2D, &p, 1, &q) < 0);
    ops_params_default(OP_RESHAPE, &p);
    CHECK(rules_lift_params(OP_RESHAPE, &p, 1, &q) < 0);
    CHECK(rules_lift_moves(OP_SPLIT, PM_AXIS) && !rules_lift_moves(OP_SPLIT, PM_LIST));
    CHECK(rules_lift_moves(OP_TRANSPOSE, PM_LIST) && !rules_lift_moves(OP_MATMUL, PM_ACT));
    /* matmul (1,4,6) x (6,5) -> (1,4,5): lift 1; a rule operand of rank 1 is not lifted */
    const int64_t wd[2] = {6, 5}, od[3] = {1, 4, 5}, vd[2] = {1, 6};
    ops_shape in[2] = {s3, ops_shape_make(2, wd)}, out = ops_shape_make(3, od);
    int32_t r22[2] = {2, 2}, r12[2] = {1, 2};
    CHECK_EQ_INT(rules_lift_op(OP_MATMUL, 2, r22, in, 2, 1, &out), 1);
    CHECK_EQ_INT(rules_lift_op(OP_MATMUL, 2, r22, in, 3, 1, &out), 0); /* the exact ranks */
    in[0] = ops_shape_make(2, vd);
    const int64_t o2[2] = {1, 5};
    ops_shape out2 = ops_shape_make(2, o2);
    CHECK_EQ_INT(rules_lift_op(OP_MATMUL, 2, r12, in, 1, 1, &out2), -1);
    /* concat of operands lifted differently; conv2d with a lifted operand */
    ops_shape cin[2] = {s3, ops_shape_make(2, (const int64_t[2]){4, 6})};
    const int64_t cd[3] = {1, 4, 12};
    ops_shape cout = ops_shape_make(3, cd);
    CHECK_EQ_INT(rules_lift_op(OP_CONCAT, 2, r22, cin, 2, 1, &cout), -1);
    cin[1] = s3;
    CHECK_EQ_INT(rules_lift_op(OP_CONCAT, 2, r22, cin, 2, 1, &cout), 1);
    CHECK_EQ_INT(rules_lift_op(OP_RESHAPE, 1, r22, cin, 3, 1, &cout), -1);
}

/* A graph of two matmuls x W1, x W2 (widths 5 and 3, each read by its own op) on x of shape xd. */
static graph *lift_siblings(int32_t xr, const int64_t *xd, int32_t wr, const int64_t *w1d, const int64_t *w2d) {
    graph *g = graph_new("lift");
    int32_t x = graph_input(g, "x", xr, xd);
    int32_t w1 = graph_weight_he(g, "w1", wr, w1d), w2 = graph_weight_he(g, "w2", wr, w2d);
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_matmul(g, x, w1, OPS_ACT_NONE)));
    graph_mark_output(g, graph_unary(g, OP_SIGMOID, graph_matmul(g, x, w2, OPS_ACT_NONE)));
    CHECK(graph_ok(g));
    return g;
}

/* Merge then unmerge on g: n_found matches of the merge; the merged graph's split along
 * split_axis, both graphs computing what g does. */
static void lift_merge_roundtrip(const rules_set *rs, graph *g, int32_t n_found, int64_t split_axis) {
    found_list f = find_all(rs, "merge_sized", RULES_DIR_BWD, g);
    CHECK_EQ_INT(f.n, n_found);
    char err[256] = "";
    graph *h = f.n >= 1 ? apply(rs, g, &f.m[0], err, sizeof err) : NULL;
    CHECK((h != NULL) == (n_found > 0));
    if (!h) {
        if (n_found > 0)
            fprintf(stderr, "lifted merge: %s\n", err);
        return;
    }
    CHECK(valid(h));
    CHECK_EQ_INT(count_op(h, OP_MATMUL), 1);
    CHECK(compare_runs(g, h) < 1e-6);
    for (int32_t i = 0; i < h->n_nodes; i++)
        if (h->nodes[i].op == OP_SPLIT)
            CHECK_EQ_INT(h->nodes[i].p.v[PM_AXIS], split_axis);
    found_list back = find_all(rs, "merge_sized", RULES_DIR_FWD, h);
    CHECK_EQ_INT(back.n, 1);
    graph *k = back.n == 1 ? apply(rs, h, &back.m[0], err, sizeof err) : NULL;
    CHECK(k != NULL && count_op(k, OP_MATMUL) == 2 && count_op(k, OP_SPLIT) == 0);
    if (k)
        CHECK(compare_runs(g, k) < 1e-6);
    graph_free(k);
    graph_free(h);
}

/* The merge rule (over matrices) on a transformer's (1, S, H) activation: matched, the target's
 * split cut along the lifted axis; two unit dims in front as well; weights lifted instead (the
 * target's concat lifted); a batch of 2 in front is no matrix: refused. */
static void test_lift_merge(const rules_set *rs) {
    const int64_t x3[3] = {1, 4, 6}, x4[4] = {1, 1, 4, 6}, xb[3] = {2, 4, 6}, x2[2] = {4, 6};
    const int64_t w1[2] = {6, 5}, w2[2] = {6, 3}, w1l[3] = {1, 6, 5}, w2l[3] = {1, 6, 3};
    graph *g = lift_siblings(3, x3, 2, w1, w2);
    lift_merge_roundtrip(rs, g, 2, 2);
    graph_free(g);
    g = lift_siblings(4, x4, 2, w1, w2);
    lift_merge_roundtrip(rs, g, 2, 3);
    graph_free(g);
    g = lift_siblings(2, x2, 3, w1l, w2l);
    lift_merge_roundtrip(rs, g, 2, 2);
    graph_free(g);
    g = lift_siblings(3, xb, 2, w1, w2);
    lift_merge_roundtrip(rs, g, 0, 0);
    graph_free(g);
}

/* transpose(transpose(x)) = x on (1, 2, 3): perm [0, 2, 1] twice is the rule's [1, 0] lifted; perm
 * [1, 0, 2] moves the unit dim: no match. */
static void test_lift_transpose(const rules_set *rs) {
    for (int moved = 0; moved < 2; moved++) {
        graph *g = graph_new("tt");
        const int64_t xd[3] = {1, 2, 3};
        const int32_t keep[3] = {0, 2, 1}, move[3] = {1, 0, 2};
        int32_t x = graph_input(g, "x", 3, xd);
        int32_t t = graph_transpose(g, graph_transpose(g, x, 3, moved ? move : keep), 3, moved ? move : keep);
        graph_mark_output(g, graph_unary(g, OP_RELU, t));
        CHECK(graph_ok(g));
        found_list f = find_all(rs, "transpose_twice", RULES_DIR_FWD, g);
        CHECK_EQ_INT(f.n, moved ? 0 : 1);
        if (f.n == 1) {
            char err[256] = "";
            graph *h = apply(rs, g, &f.m[0], err, sizeof err);
            CHECK(h != NULL && h->n_nodes == 1);
            if (h)
                CHECK(compare_runs(g, h) < 1e-7);
            graph_free(h);
        }
        graph_free(g);
    }
}

/* Constraints and broadcasting at a lift: x (1, 5, 3) times I_3 (n tied to x0 dim 1, read at the
 * tensor's dim 2) disappears; ewadd of (1, 4, 5) and (4, 5) broadcasts: refused; of two (1, 4, 5):
 * matched. */
static void test_lift_constraint(const rules_set *rs) {
    graph *g = graph_new("imm3");
    const int64_t xd[3] = {1, 5, 3};
    int32_t x = graph_input(g, "x", 3, xd);
    ops_params p;
    ops_params_default(OP_CONST_IMM, &p);
    p.v[PM_N] = 3;
    int32_t id;
    graph_add(g, "eye", OP_CONST_IMM, &p, 0, NULL, &id);
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_matmul(g, x, id, OPS_ACT_NONE)));
    CHECK(graph_ok(g));
    found_list f = find_all(rs, "matmul_identity", RULES_DIR_FWD, g);
    CHECK_EQ_INT(f.n, 1);
    if (f.n == 1) {
        char err[256] = "";
        graph *h = apply(rs, g, &f.m[0], err, sizeof err);
        CHECK(h != NULL && h->n_nodes == 1);
        if (h)
            CHECK(compare_runs(g, h) < 1e-7);
        graph_free(h);
    }
    graph_free(g);
    g = graph_new("bcast3");
    const int64_t ad[3] = {1, 4, 5}, bd[2] = {4, 5};
    int32_t a = graph_input(g, "a", 3, ad), a2 = graph_input(g, "a2", 3, ad), b = graph_input(g, "b", 2, bd);
    graph_mark_output(g, graph_ewadd(g, a, b));
    graph_mark_output(g, graph_ewadd(g, a, a2));
    CHECK(graph_ok(g));
    f = find_all(rs, "ewadd_comm", RULES_DIR_FWD, g);
    CHECK_EQ_INT(f.n, 1);
    if (f.n == 1)
        CHECK_EQ_INT(f.m[0].var[1], a);
    graph_free(g);
}

/* An op that is not lifted: relu(x) = reshape(relu(reshape(x, [6])), [2, 3]) for x of (2, 3). On
 * x (1, 2, 3) the reshape side does not match (a reshape reading a lifted operand), and the relu
 * side matches but its target (reshape of a lifted operand) is refused; on x (2, 3) both work. */
static const char flat_rule_text[] =
    "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":3,\"counts\":{},\"rules\":["
    "{\"id\":\"relu_flat\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]}],"
    "\"src\":[{\"op\":\"reshape\",\"params\":{\"shape\":[6]},\"inputs\":[\"x0\"]},"
    "{\"op\":\"relu\",\"inputs\":[\"%0\"]},"
    "{\"op\":\"reshape\",\"params\":{\"shape\":[2,3]},\"inputs\":[\"%1\"]}],"
    "\"dst\":[{\"op\":\"relu\",\"inputs\":[\"x0\"]}],\"outputs\":[{\"src\":\"%2\",\"dst\":\"%0\"}]}]}";

static void test_lift_refused(void) {
    char err[512] = "";
    rules_set *rs = rules_from_json_string(flat_rule_text, "flat_rule_text", err, sizeof err);
    CHECK(rs != NULL);
    if (!rs) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    for (int lifted = 0; lifted < 2; lifted++) {
        const int64_t xd[3] = {1, 2, 3}, s6[1] = {6};
        graph *g = graph_new("flat");
        int32_t x = graph_input(g, "x", lifted ? 3 : 2, lifted ? xd : xd + 1);
        int32_t r = graph_unary(g, OP_RELU, x);
        graph_mark_output(g, graph_unary(g, OP_TANH, r));
        graph_mark_output(g, graph_reshape(g, graph_unary(g, OP_RELU, graph_reshape(g, x, 1, s6)), 2, xd + 1));
        CHECK(graph_ok(g));
        CHECK_EQ_INT(find_all(rs, "relu_flat", RULES_DIR_FWD, g).n, lifted ? 0 : 1);
        found_list f = find_all(rs, "relu_flat", RULES_DIR_BWD, g);
        CHECK_EQ_INT(f.n, 1); /* relu(x); the other relu reads a (6) */
        graph *h = f.n >= 1 ? apply(rs, g, &f.m[0], err, sizeof err) : NULL;
        CHECK((h != NULL) == !lifted);
        if (lifted)
            CHECK_STR_CONTAINS(err, "not lifted");
        if (h)
            CHECK(compare_runs(g, h) < 1e-7);
        graph_free(h);
        graph_free(g);
    }
    rules_set_free(rs);
}

int main(void) {
    rules_set *rs = load_rules();
    CHECK(rs != NULL);
    if (!rs)
        return TEST_REPORT();
    test_conv_relu(rs);
    test_merge_matmul(rs);
    test_merge_unequal(rs);
    test_cycle(rs);
    test_outside_use(rs);
    test_requires(rs);
    test_constraint(rs);
    test_broadcast(rs);
    test_params();
    test_lift_helpers();
    test_lift_transpose(rs);
    test_lift_constraint(rs);
    test_lift_refused();
    {
        char err[512];
        rules_set *sz = rules_from_json_string(sized_rules_text, "sized_rules_text", err, sizeof err);
        CHECK(sz != NULL);
        if (!sz)
            fprintf(stderr, "%s\n", err);
        if (sz) {
            test_merge_sized(sz);
            test_split_concat_identity(sz);
            test_lift_merge(sz);
        }
        rules_set_free(sz);
    }
    rules_set_free(rs);
    return TEST_REPORT();
}
