/* test_eqsat.c: the e-graph (src/optimizer/egraph.h) and the equality-saturation search
 * (eqsat.h, search_opts.eqsat): hash-consing, union-find and congruence after a rebuild; eqsat
 * agrees with the backtracking search where the optimum is known (two sibling matmuls merged by
 * the verified pairwise rule, convs fused with their relus, n-way merges, eight siblings merged
 * into one op by seven pairwise merges), gives the input back
 * where no rule applies, never extracts a cycle although the e-graph holds one
 * (transpose(transpose(x)) = x), passes the numerical check, and is deterministic; its
 * extraction costs a relu6 behind a conv as lowering does; its e-matcher (match order, signature
 * and edge indexes) finds the matches rules/match.c finds on the same graph. Proofs by rewriting
 * (eqsat_joins, `tasc rules prune`): a rule for another shape and a four-transpose rule are
 * derived from transpose(transpose(x)) = x, and nothing is derived once that rule is off; one
 * move (eqsat_one_move) derives a lifted rule both ways, not the four transposes.
 */
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "egraph.h"
#include "eqsat.h"
#include "exec.h"
#include "match.h"
#include "search.h"
#include "test.h"

static rules_set *load(const char *path) {
    char err[512];
    rules_set *rs = rules_load(path, err, sizeof err);
    if (!rs)
        fprintf(stderr, "%s\n", err);
    return rs;
}

static int32_t count_op(const graph *g, ops_type op) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

static void test_egraph_basics(void) {
    egraph eg;
    egraph_init(&eg);
    const int64_t d[2] = {4, 8};
    ops_shape s = ops_shape_make(2, d);
    ops_params p;
    ops_params_default(OP_RELU, &p);
    int32_t a = egraph_add(&eg, EGRAPH_INPUT, 0, 0.0f, NULL, 0, NULL, 1, &s, GRAPH_DT_F32);
    int32_t b = egraph_add(&eg, EGRAPH_INPUT, 1, 0.0f, NULL, 0, NULL, 1, &s, GRAPH_DT_F32);
    CHECK(a != b);
    CHECK_EQ_INT(egraph_add(&eg, EGRAPH_INPUT, 0, 0.0f, NULL, 0, NULL, 1, &s, GRAPH_DT_F32), a); /* hash-consed */
    int32_t fa = egraph_add(&eg, EGRAPH_OP, OP_RELU, 0.0f, &p, 1, &a, 1, &s, GRAPH_DT_F32);
    int32_t fb = egraph_add(&eg, EGRAPH_OP, OP_RELU, 0.0f, &p, 1, &b, 1, &s, GRAPH_DT_F32);
    int32_t ab[2] = {fa, fb};
    ops_params_default(OP_EWADD, &p);
    int32_t sum = egraph_add(&eg, EGRAPH_OP, OP_EWADD, 0.0f, &p, 2, ab, 1, &s, GRAPH_DT_F32);
    CHECK(fa != fb);
    CHECK_EQ_INT(eg.n_live, 5);
    /* union-find: the smaller id represents the class */
    CHECK_EQ_INT(egraph_union(&eg, b, a), 1);
    CHECK_EQ_INT(egraph_union(&eg, a, b), 0);
    CHECK_EQ_INT(egraph_find(&eg, b), a < b ? a : b);
    /* congruence: relu(a) and relu(b) are one class only after the rebuild */
    CHECK(egraph_find(&eg, fa) != egraph_find(&eg, fb));
    egraph_rebuild(&eg);
    CHECK_EQ_INT(egraph_find(&eg, fa), egraph_find(&eg, fb));
    CHECK_EQ_INT(eg.n_live, 4); /* relu(b) is now a duplicate of relu(a) */
    const egraph_class *ca = &eg.cls[egraph_find(&eg, a)];
    CHECK_EQ_INT(ca->n_nodes, 2);
    CHECK_EQ_INT(ca->n_parents, 1); /* relu(a), read once */
    const egraph_class *cs = &eg.cls[egraph_find(&eg, sum)];
    CHECK_EQ_INT(cs->n_nodes, 1);
    const int32_t *ch = egraph_children(&eg, cs->nodes[0]);
    CHECK_EQ_INT(ch[0], ch[1]); /* ewadd(relu(a), relu(b)) now reads one class twice */
    CHECK_EQ_INT(egraph_lookup(&eg, EGRAPH_OP, OP_EWADD, 0.0f, &p, 2, ab), cs->nodes[0]);
    /* a weight makes its readers weight-only */
    ops_params_default(OP_RELU, &p);
    int32_t w = egraph_add(&eg, EGRAPH_WEIGHT, 7, 0.0f, NULL, 0, NULL, 1, &s, GRAPH_DT_F32);
    int32_t fw = egraph_add(&eg, EGRAPH_OP, OP_RELU, 0.0f, &p, 1, &w, 1, &s, GRAPH_DT_F32);
    egraph_rebuild(&eg);
    CHECK(eg.cls[egraph_find(&eg, fw)].wo && !eg.cls[egraph_find(&eg, fa)].wo);
    egraph_free(&eg);
}

/* One optimize run each way; *bt, *eq: the results (caller frees). */
static void both(const graph *g, const rules_set *rs, cost_model *cm, const search_opts *base, graph **bt, graph **eq,
                 search_result *rb, search_result *re) {
    search_opts o = *base;
    char err[512];
    o.eqsat = 0;
    CHECK(search_optimize(g, rs, cm, &o, bt, rb, err, sizeof err) == 0);
    o.eqsat = 1;
    if (search_optimize(g, rs, cm, &o, eq, re, err, sizeof err) != 0) {
        fprintf(stderr, "eqsat: %s\n", err);
        CHECK(0);
    }
}

/* Search options: rules only, no folding, no wall-clock limit. */
static void rules_only(search_opts *o) {
    search_opts_default(o);
    memset(o->moves, 0, sizeof o->moves);
    memset(o->greedy, 0, sizeof o->greedy);
    o->fold = 0;
    o->time_limit_s = 0;
}

/* n siblings reading x: matmuls x(64,256) @ w_i(256,256), or 3x3 convs; each result to its own
 * tanh or sigmoid (as tests/test_search.c's). */
static graph *siblings(int conv, int32_t n) {
    graph *g = graph_new(conv ? "n_convs" : "n_matmuls");
    const int64_t xd[2] = {64, 256}, wd[2] = {256, 256}, cxd[4] = {1, 16, 28, 28}, cwd[4] = {32, 16, 3, 3};
    int32_t x = conv ? graph_input(g, "x", 4, cxd) : graph_input(g, "x", 2, xd);
    for (int32_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", (int)i);
        int32_t w = conv ? graph_weight_he(g, name, 4, cwd) : graph_weight_he(g, name, 2, wd);
        int32_t y = conv ? graph_conv2d(g, x, w, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE) : graph_matmul(g, x, w, OPS_ACT_NONE);
        graph_mark_output(g, graph_unary(g, i % 2 ? OP_SIGMOID : OP_TANH, y));
    }
    return g;
}

/* Sibling matmuls and convs (2, 4 and 8) with the verified pairwise merge rules under --builtins
 * minimal: at most backtracking's cost, the check passes, and the bytes are the same run to run.
 * Every n: one op, the known optimum; for 8, seven pairwise merges three deep (pairs, fours,
 * eight). Taking every match of the merge rule merges every subset of the siblings; the
 * rule then finds thousands of matches in the second round and the backoff bans it, which left
 * four ops of eight (pairs only). The sibling-merge schedule (one match per class, newest first,
 * chained within the first round) reaches the one op with the exact extraction and without it
 * (greedy, then the local search, whose cascades take the three levels of merges at once). */
static void test_merges(cost_model *cm) {
    rules_set *rm = load("tests/data/opt/rules_merge.json");
    CHECK(rm != NULL);
    for (int32_t t = 0; rm && t < 6; t++) {
        int32_t conv = t % 2, n = t < 2 ? 2 : t < 4 ? 4 : 8;
        graph *g = siblings(conv, n), *bt = NULL, *eq = NULL, *again = NULL;
        search_opts o;
        search_opts_default(&o);
        o.time_limit_s = 0;
        search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
        search_result rb, re, r2;
        both(g, rm, cm, &o, &bt, &eq, &rb, &re);
        if (bt && eq) {
            const ops_type op = conv ? OP_CONV2D : OP_MATMUL;
            fprintf(stderr, "%s %d: backtrack %.3f us (%d ops), eqsat %.3f us (%d ops, %s)\n", g->name, (int)n,
                    rb.cost_after, (int)count_op(bt, op), re.cost_after, (int)count_op(eq, op),
                    re.eq_extraction ? re.eq_extraction : "?");
            CHECK(re.cost_after <= rb.cost_after * 1.0001);
            CHECK(re.cost_after < re.cost_before);
            CHECK_EQ_INT(count_op(eq, op), 1); /* n = 4 too: two levels of merges */
            char err[512];
            exec_diff worst[8]; /* one per output */
            CHECK_EQ_INT(exec_check(g, eq, 2, 1e-5, worst, err, sizeof err), 0);
            o.eqsat = 1;
            CHECK(search_optimize(g, rm, cm, &o, &again, &r2, err, sizeof err) == 0);
            /* the same graph, node for node and name for name (DATA weights have no JSON text) */
            CHECK(again && graph_hash(again) == graph_hash(eq) && again->n_nodes == eq->n_nodes);
            for (int32_t i = 0; again && i < eq->n_nodes && i < again->n_nodes; i++)
                CHECK(!strcmp(eq->nodes[i].name, again->nodes[i].name));
            search_result_free(&r2);
            if (n == 8) { /* without the exact extraction: greedy and the local search's cascades */
                graph_free(again);
                again = NULL;
                o.eqsat_exact = 0;
                CHECK(search_optimize(g, rm, cm, &o, &again, &r2, err, sizeof err) == 0);
                CHECK(again && count_op(again, op) == 1 && r2.cost_after <= rb.cost_after * 1.0001);
                search_result_free(&r2);
            }
        }
        graph_free(again);
        graph_free(bt);
        graph_free(eq);
        search_result_free(&rb);
        search_result_free(&re);
        graph_free(g);
    }
    rules_set_free(rm);
}

/* The pairwise merge rule (over matrices) on siblings reading a (B, 64, 256) activation, lifted
 * (rules/match.h): B = 1 merges into one matmul in both searches, the check passes; B = 2 is no
 * matrix, so nothing merges. */
static void test_lifted_merge(cost_model *cm) {
    rules_set *rm = load("tests/data/opt/rules_merge.json");
    CHECK(rm != NULL);
    for (int64_t b = 1; rm && b <= 2; b++) {
        graph *g = graph_new("lifted"), *bt = NULL, *eq = NULL;
        const int64_t xd[3] = {b, 64, 256}, wd[2] = {256, 256};
        int32_t x = graph_input(g, "x", 3, xd);
        for (int32_t i = 0; i < 2; i++) {
            int32_t w = graph_weight_he(g, i ? "w1" : "w0", 2, wd);
            graph_mark_output(g, graph_unary(g, i ? OP_SIGMOID : OP_TANH, graph_matmul(g, x, w, OPS_ACT_NONE)));
        }
        search_opts o;
        search_opts_default(&o);
        o.time_limit_s = 0;
        search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
        search_result rb, re;
        both(g, rm, cm, &o, &bt, &eq, &rb, &re);
        if (bt && eq) {
            CHECK_EQ_INT(count_op(bt, OP_MATMUL), b == 1 ? 1 : 2);
            CHECK_EQ_INT(count_op(eq, OP_MATMUL), b == 1 ? 1 : 2);
            CHECK(re.cost_after <= rb.cost_after * 1.0001);
            char err[512];
            exec_diff worst[4];
            CHECK_EQ_INT(exec_check(g, eq, 2, 1e-5, worst, err, sizeof err), 0);
        }
        graph_free(bt);
        graph_free(eq);
        search_result_free(&rb);
        search_result_free(&re);
        graph_free(g);
    }
    rules_set_free(rm);
}

/* conv -> relu -> conv -> relu with the relu-fusion rule: both relus fused, as backtracking. */
static void test_relu_fusion(const rules_set *rs, cost_model *cm) {
    graph *g = graph_new("conv_relu");
    const int64_t xd[4] = {1, 16, 28, 28}, kd[4] = {16, 16, 3, 3};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t k1 = graph_weight_he(g, "k1", 4, kd), k2 = graph_weight_he(g, "k2", 4, kd);
    int32_t t = graph_unary(g, OP_RELU, graph_conv2d(g, x, k1, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    graph_mark_output(g, graph_unary(g, OP_RELU, graph_conv2d(g, t, k2, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE)));
    CHECK(graph_ok(g));
    search_opts o;
    rules_only(&o);
    graph *bt = NULL, *eq = NULL;
    search_result rb, re;
    both(g, rs, cm, &o, &bt, &eq, &rb, &re);
    if (bt && eq) {
        CHECK_EQ_INT(eq->n_nodes, 2);
        CHECK_EQ_INT(count_op(eq, OP_RELU), 0);
        CHECK_NEAR(re.cost_after, rb.cost_after, 1e-9);
        CHECK(re.n_applied == 1 && !strcmp(re.applied[0].name, "fuse_relu_conv") && re.applied[0].count == 2);
        char err[512];
        exec_diff worst[1];
        CHECK_EQ_INT(exec_check(g, eq, 3, 1e-6, worst, err, sizeof err), 0);
    }
    graph_free(bt);
    graph_free(eq);
    search_result_free(&rb);
    search_result_free(&re);
    graph_free(g);
}

/* Nothing applies: the input comes back, cost and graph unchanged. */
static void test_nothing_applies(const rules_set *rs, cost_model *cm) {
    graph *g = graph_new("tanh_sigmoid");
    const int64_t xd[2] = {16, 32};
    int32_t x = graph_input(g, "x", 2, xd);
    graph_mark_output(g, graph_unary(g, OP_SIGMOID, graph_unary(g, OP_TANH, x)));
    search_opts o;
    rules_only(&o);
    graph *bt = NULL, *eq = NULL;
    search_result rb, re;
    both(g, rs, cm, &o, &bt, &eq, &rb, &re);
    if (eq) {
        CHECK_EQ_INT(re.n_applied, 0);
        CHECK_NEAR(re.cost_after, re.cost_before, 1e-12);
        CHECK(graph_hash(eq) == graph_hash(g));
        CHECK_EQ_INT(re.eq_saturated, 1);
    }
    graph_free(bt);
    graph_free(eq);
    search_result_free(&rb);
    search_result_free(&re);
    graph_free(g);
}

/* transpose(transpose(x)) = x puts x's class inside its own subgraph (x = t(t(x)) reads x): a
 * cycle the extraction must not take. The result reads x directly and is a valid graph. */
static void test_no_cycle(const rules_set *rs, cost_model *cm) {
    graph *g = graph_new("tt");
    const int64_t xd[2] = {16, 32};
    const int32_t perm[2] = {1, 0};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t y = graph_unary(g, OP_RELU, graph_transpose(g, graph_transpose(g, x, 2, perm), 2, perm));
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_ewadd(g, y, x)));
    CHECK(graph_ok(g));
    search_opts o;
    rules_only(&o);
    o.eqsat = 1;
    graph *eq = NULL;
    search_result re;
    char err[512];
    CHECK(search_optimize(g, rs, cm, &o, &eq, &re, err, sizeof err) == 0);
    if (eq) {
        char verr[256];
        CHECK(graph_validate(eq, verr, sizeof verr) == 0); /* acyclic among the rest */
        CHECK_EQ_INT(count_op(eq, OP_TRANSPOSE), 0);
        CHECK_EQ_INT(eq->n_nodes, 3);
        CHECK(re.eq_nodes > 0 && re.eq_classes < re.eq_nodes); /* the union put two nodes in x's class */
        exec_diff worst[1];
        CHECK_EQ_INT(exec_check(g, eq, 2, 1e-6, worst, err, sizeof err), 0);
    }
    graph_free(eq);
    search_result_free(&re);
    graph_free(g);
}

/* conv2d -> relu6 (a clip from 0 to 6) -> tanh: lowering fuses the clip into the conv's
 * epilogue, and eqsat's own costs (greedy, local search, exact: eqsat_extract.c, eqsat_exact.c)
 * say so as search.c's do (rewrite_fusable_act_p): each estimate on its progress line equals the
 * lowered result's cost. */
static void test_relu6_cost(const rules_set *rs, cost_model *cm) {
    graph *g = graph_new("conv_relu6"); /* large enough that the clip's own cost shows */
    const int64_t xd[4] = {1, 64, 112, 112}, kd[4] = {64, 64, 1, 1};
    int32_t x = graph_input(g, "x", 4, xd), k = graph_weight_he(g, "k", 4, kd), out[OPS_MAX_OUTPUTS];
    int32_t y = graph_conv2d(g, x, k, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
    ops_params p;
    ops_params_default(OP_CLIP, &p);
    p.v[PM_LO] = ops_f2p(0.0f);
    p.v[PM_HI] = ops_f2p(6.0f);
    CHECK_EQ_INT(graph_add(g, "relu6", OP_CLIP, &p, 1, &y, out), 1);
    graph_mark_output(g, graph_unary(g, OP_TANH, out[0]));
    search_opts o; /* --builtins minimal: the costs are lowering-aware (search_opts.lower_cost) */
    search_opts_default(&o);
    o.time_limit_s = 0;
    search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
    o.eqsat = 1;
    char *log = NULL, err[512];
    size_t len = 0;
    o.progress = open_memstream(&log, &len);
    graph *eq = NULL;
    search_result re;
    CHECK(search_optimize(g, rs, cm, &o, &eq, &re, err, sizeof err) == 0);
    fclose(o.progress);
    double greedy = -1, local = -1, exact = -1;
    const char *at = log ? strstr(log, "eqsat: extraction:") : NULL;
    CHECK(at && sscanf(at, "eqsat: extraction: greedy %lf us, local search %lf us", &greedy, &local) == 2);
    const char *ex = at ? strstr(at, "exact ") : NULL;
    if (ex && sscanf(ex, "exact %lf us", &exact) == 1)
        CHECK_NEAR(exact, re.cost_after, 0.006);
    CHECK_NEAR(greedy, re.cost_after, 0.006);
    CHECK_NEAR(local, re.cost_after, 0.006);
    CHECK(eq && count_op(eq, OP_CLIP) == 0); /* lowering fused it */
    double conv_tanh; /* the conv (relu6 free) and the tanh */
    CHECK(cost_graph(cm, eq, &conv_tanh, NULL, err, sizeof err) == 0);
    CHECK_NEAR(re.cost_after, conv_tanh, 1e-9);
    CHECK(re.cost_after < re.cost_before);
    free(log);
    graph_free(eq);
    search_result_free(&re);
    graph_free(g);
}

static int count_match(const rules_match *m, void *user) {
    (void)m;
    ++*(int32_t *)user;
    return 0;
}

/* The e-matcher's join order (eqsat.c em_next: fixed ops first, then ops anchored on a bound
 * class, an op matched before its reader, candidates from the signature and edge indexes) finds
 * the matches rules/match.c finds on the graph itself: round 1's e-graph is the graph. Three
 * verified rules whose patterns are not walked from their last op alone: g4_18492 (two relu
 * sinks over concats), g4_20677 dst->src (a relu read by a split and a concat), g4_16978
 * dst->src (two concat sinks of convs sharing a kernel). Then the whole search passes the check. */
static void test_match_order(cost_model *cm) {
    rules_set *ro = load("tests/data/opt/rules_eqsat_order.json");
    CHECK(ro != NULL && ro->n_rules == 3);
    if (!ro)
        return;
    graph *g = graph_new("order");
    const int64_t xd[4] = {1, 8, 5, 6}, ed[4] = {1, 4, 5, 6}, kd[4] = {4, 4, 3, 3};
    int32_t a = graph_input(g, "a", 4, xd), b = graph_input(g, "b", 4, xd), d = graph_input(g, "d", 4, xd);
    int32_t e = graph_input(g, "e", 4, ed), f = graph_input(g, "f", 4, ed), k = graph_weight_he(g, "k", 4, kd);
    graph_mark_output(g, graph_unary(g, OP_RELU, graph_concat(g, 1, 2, (int32_t[]){a, b})));
    graph_mark_output(g, graph_unary(g, OP_RELU, graph_concat(g, 1, 2, (int32_t[]){b, a})));
    int32_t r = graph_unary(g, OP_RELU, d), sp[2];
    CHECK_EQ_INT(graph_split(g, r, 1, 2, NULL, sp), 2);
    int32_t c2 = graph_concat(g, 1, 2, (int32_t[]){r, sp[0]});
    graph_mark_output(g, graph_concat(g, 1, 2, (int32_t[]){sp[1], c2}));
    for (int32_t i = 0; i < 2; i++) {
        int32_t x = i ? f : e, y = graph_conv2d(g, x, k, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE);
        graph_mark_output(g, graph_concat(g, 1, 2, (int32_t[]){x, y}));
    }
    CHECK(graph_ok(g));
    search_opts o;
    rules_only(&o);
    o.eqsat = 1;
    o.stats = 1;
    o.eqsat_iters = 1;
    graph *eq = NULL;
    search_result re;
    char err[512];
    CHECK(search_optimize(g, ro, cm, &o, &eq, &re, err, sizeof err) == 0);
    rules_match_index ix;
    CHECK(rules_match_index_build(&ix, g, err, sizeof err) == 0);
    int32_t want[3][2] = {{2, 0}, {0, 1}, {0, 2}}; /* matches per direction: g4_18492, g4_20677, g4_16978 */
    for (int32_t i = 0; i < ro->n_rules && re.stats; i++) {
        int32_t w = !strcmp(ro->rules[i].id, "g4_16978") ? 2 : !strcmp(ro->rules[i].id, "g4_18492") ? 0 : 1;
        for (int32_t dir = 0; dir < 2; dir++) {
            int32_t n = 0;
            rules_match_find(ro, i, (rules_dir)dir, &ix, count_match, &n);
            fprintf(stderr, "%s dir %d: graph %d, e-graph %lld\n", ro->rules[i].id, (int)dir, (int)n,
                    (long long)re.stats[2 * i + dir].found);
            CHECK_EQ_INT(n, want[w][dir]);
            CHECK_EQ_INT((int32_t)re.stats[2 * i + dir].found, n);
        }
    }
    rules_match_index_free(&ix);
    graph_free(eq);
    search_result_free(&re);
    o.stats = 0;
    o.eqsat_iters = 8;
    eq = NULL;
    CHECK(search_optimize(g, ro, cm, &o, &eq, &re, err, sizeof err) == 0);
    if (eq) {
        exec_diff worst[8];
        CHECK_EQ_INT(exec_check(g, eq, 2, 1e-5, worst, err, sizeof err), 0);
        CHECK(re.cost_after <= re.cost_before * 1.0001);
    }
    graph_free(eq);
    search_result_free(&re);
    graph_free(g);
    rules_set_free(ro);
}

/* Rules in the file format: R0 transpose(transpose(x0)) = x0 on (2,3); R1 four transposes = x0;
 * R2 relu(relu(x0)) = relu(x0); R3 R0 on (3,3) (a repeat of R0: the search skips it); R4 R2 on
 * (1,2,3) (R2 lifted: one move of R2 either way). */
static const char *joins_rules =
    "{\"format\": \"tasc-rules\", \"version\": 1, \"tool\": \"tasc 0.1.0\", \"rules\": [\n"
    "{\"id\":\"tt23\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]}],\"src\":[{\"op\":\"transpose\",\"params\":"
    "{\"perm\":[1,0]},\"inputs\":[\"x0\"]},{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"%0\"]}],"
    "\"dst\":[],\"outputs\":[{\"src\":\"%1\",\"dst\":\"x0\"}]},\n"
    "{\"id\":\"t4\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]}],\"src\":[{\"op\":\"transpose\",\"params\":"
    "{\"perm\":[1,0]},\"inputs\":[\"x0\"]},{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"%0\"]},"
    "{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"%1\"]},{\"op\":\"transpose\",\"params\":"
    "{\"perm\":[1,0]},\"inputs\":[\"%2\"]}],\"dst\":[],\"outputs\":[{\"src\":\"%3\",\"dst\":\"x0\"}]},\n"
    "{\"id\":\"rr\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]}],\"src\":[{\"op\":\"relu\",\"inputs\":[\"x0\"]},"
    "{\"op\":\"relu\",\"inputs\":[\"%0\"]}],\"dst\":[{\"op\":\"relu\",\"inputs\":[\"x0\"]}],"
    "\"outputs\":[{\"src\":\"%1\",\"dst\":\"%0\"}]},\n"
    "{\"id\":\"tt33\",\"vars\":[{\"name\":\"w0\",\"shape\":[3,3]}],\"src\":[{\"op\":\"transpose\",\"params\":"
    "{\"perm\":[1,0]},\"inputs\":[\"w0\"]},{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"%0\"]}],"
    "\"dst\":[],\"outputs\":[{\"src\":\"%1\",\"dst\":\"w0\"}]},\n"
    "{\"id\":\"rr3\",\"vars\":[{\"name\":\"x0\",\"shape\":[1,2,3]}],\"src\":[{\"op\":\"relu\",\"inputs\":[\"x0\"]},"
    "{\"op\":\"relu\",\"inputs\":[\"%0\"]}],\"dst\":[{\"op\":\"relu\",\"inputs\":[\"x0\"]}],"
    "\"outputs\":[{\"src\":\"%1\",\"dst\":\"%0\"}]}\n"
    "]}\n";

/* Whether the rules not off derive rule r; *rounds the rounds it took. */
static int joins(eqsat_prover *pv, const rules_set *rs, cost_model *cm, int32_t r, const uint8_t *off, int32_t *rounds) {
    char err[256];
    int32_t a[RULES_MAX_OUTPUTS], b[RULES_MAX_OUTPUTS], n = 0;
    uint8_t joined[RULES_MAX_OUTPUTS];
    graph *g = rules_pair_graph(&rs->rules[r], a, b, &n, err, sizeof err);
    CHECK(g != NULL);
    if (!g)
        return -1;
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(g->n_nodes, rs->rules[r].src.n_ops + rs->rules[r].dst.n_ops);
    search_opts so;
    search_opts_default(&so);
    so.eqsat_iters = 3;
    so.eqsat_nodes = 400;
    so.time_limit_s = 0;
    int rc = eqsat_joins(pv, g, off, cm, &so, n, a, b, joined, rounds, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    graph_free(g);
    return rc < 0 ? -1 : joined[0];
}

/* Whether one move of the rules not off takes rule r's side `from` to its other side. */
static int one_move(eqsat_prover *pv, const rules_set *rs, int32_t r, rules_side from, const uint8_t *off) {
    char err[256];
    graph *a = rules_side_graph(&rs->rules[r], from, err, sizeof err);
    graph *b = rules_side_graph(&rs->rules[r], from == RULES_SIDE_SRC ? RULES_SIDE_DST : RULES_SIDE_SRC, err, sizeof err);
    CHECK(a && b);
    int found = -1;
    if (a && b)
        CHECK_EQ_INT(eqsat_one_move(pv, a, b, off, &found, err, sizeof err), 0);
    graph_free(a);
    graph_free(b);
    return found;
}

static void test_joins(cost_model *cm) {
    char err[256];
    rules_set *rs = rules_from_json_string(joins_rules, "joins", err, sizeof err);
    CHECK(rs != NULL);
    if (!rs)
        return;
    CHECK_EQ_INT(rs->n_rules, 5);
    eqsat_prover *pv = eqsat_prover_new(rs);
    CHECK_EQ_INT(eqsat_prover_uses(pv, 0), 1); /* a bare variable is no pattern */
    CHECK_EQ_INT(eqsat_prover_uses(pv, 1), 1);
    CHECK_EQ_INT(eqsat_prover_uses(pv, 2), 3);
    CHECK_EQ_INT(eqsat_prover_uses(pv, 3), 0);
    CHECK_EQ_INT(eqsat_prover_uses(pv, 4), 3);
    int32_t rounds = -1;
    uint8_t off[5] = {0, 1, 0, 0, 0};
    CHECK_EQ_INT(joins(pv, rs, cm, 1, off, &rounds), 1); /* four transposes: R0 twice, in one round */
    CHECK_EQ_INT(rounds, 1);
    uint8_t off2[5] = {1, 1, 0, 0, 0};
    CHECK_EQ_INT(joins(pv, rs, cm, 1, off2, &rounds), 0); /* not without R0 */
    CHECK_EQ_INT(rounds, 1);                              /* nothing matched: saturated after one */
    uint8_t off3[5] = {0, 0, 1, 0, 0};
    CHECK_EQ_INT(joins(pv, rs, cm, 2, off3, &rounds), 0); /* relu(relu(x)) from transposes: no */
    uint8_t none[5] = {0, 0, 0, 0, 0};
    CHECK_EQ_INT(joins(pv, rs, cm, 2, none, &rounds), 1); /* a rule proves itself */
    CHECK_EQ_INT(joins(pv, rs, cm, 3, none, &rounds), 1); /* R0 on another shape: the matcher binds any (K, K) */
    /* one move: R4 is R2 lifted, either way; four transposes need two moves of R0 */
    uint8_t off5[5] = {0, 0, 0, 0, 1};
    CHECK_EQ_INT(one_move(pv, rs, 4, RULES_SIDE_SRC, off5), 1);
    CHECK_EQ_INT(one_move(pv, rs, 4, RULES_SIDE_DST, off5), 1);
    uint8_t off6[5] = {0, 0, 1, 0, 1};
    CHECK_EQ_INT(one_move(pv, rs, 4, RULES_SIDE_SRC, off6), 0); /* not without R2 */
    CHECK_EQ_INT(one_move(pv, rs, 1, RULES_SIDE_SRC, off), 0);
    eqsat_prover_free(pv);
    rules_set_free(rs);
}

int main(void) {
    rules_set *rs = load("tests/data/opt/rules_small.json");
    CHECK(rs != NULL);
    if (!rs)
        return TEST_REPORT();
    cost_model *cm = cost_analytic_new(NULL);
    test_egraph_basics();
    test_merges(cm);
    test_lifted_merge(cm);
    test_relu_fusion(rs, cm);
    test_nothing_applies(rs, cm);
    test_no_cycle(rs, cm);
    test_relu6_cost(rs, cm);
    test_match_order(cm);
    test_joins(cm);
    cost_model_free(cm);
    rules_set_free(rs);
    return TEST_REPORT();
}
