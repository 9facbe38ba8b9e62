/* test_search.c: the backtracking search and the optimize pipeline (src/search.h) on small graphs
 * with the hand-written rules of tests/data/opt/: the known optimum is found (two matmuls sharing
 * an input merged, conv+relu fused, sibling convs merged) by rules alone and by built-in moves
 * alone; results are deterministic; the budget, the node limit and alpha behave; the result never
 * costs more than the input; commutativity rules are used for hashing, not applied; and the
 * numerical check passes correct results and catches a deliberately wrong rule (relu(x) = x);
 * per-rule statistics (search_opts.stats) agree with the path; the built-in sibling merges are
 * reproduced by the shipped pairwise rules under --builtins minimal (test_merges_as_rules, with
 * siblings of unequal widths), and split-concat by the shipped identity concat(split(x)) = x
 * (test_split_concat_as_rules).
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
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

/* Search options: rules only (no built-in moves, no greedy passes, no folding). */
static void rules_only(search_opts *o) {
    search_opts_default(o);
    memset(o->moves, 0, sizeof o->moves);
    memset(o->greedy, 0, sizeof o->greedy);
    o->fold = 0;
    o->time_limit_s = 0; /* deterministic: the budget ends it */
}

static int32_t applied_count(const search_result *r, const char *name) {
    for (int32_t i = 0; i < r->n_applied; i++)
        if (!strcmp(r->applied[i].name, name))
            return r->applied[i].count;
    return 0;
}

/* x (64,256) times two (256,256) weights, each result read by its own relu. */
static graph *two_matmuls(void) {
    graph *g = graph_new("two_mm");
    const int64_t xd[2] = {64, 256}, wd[2] = {256, 256};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w1 = graph_weight_he(g, "w1", 2, wd), w2 = graph_weight_he(g, "w2", 2, wd);
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_matmul(g, x, w1, OPS_ACT_NONE)));
    graph_mark_output(g, graph_unary(g, OP_SIGMOID, graph_matmul(g, x, w2, OPS_ACT_NONE)));
    return g;
}

static void test_merge_matmuls(const rules_set *rs, cost_model *cm) {
    graph *g = two_matmuls();
    CHECK(graph_ok(g));
    search_opts o;
    rules_only(&o);
    search_result res;
    graph *best = NULL;
    char err[512];
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(count_op(best, OP_MATMUL), 1);
        CHECK_EQ_INT(count_op(best, OP_SPLIT), 1);
        CHECK(res.cost_after < res.cost_before);
        CHECK_EQ_INT(applied_count(&res, "merge_matmul"), 1);
        CHECK(res.n_applied == 1 && res.applied[0].reverse == 1); /* two matmuls are its dst side */
        /* the result equals the original numerically */
        exec_diff worst[2];
        CHECK_EQ_INT(exec_check(g, best, 2, 1e-5, worst, err, sizeof err), 0);
        CHECK(worst[0].rel_l2 < 1e-6 && worst[1].rel_l2 < 1e-6);
        /* deterministic: the same search gives the same graph, byte for byte */
        graph *again = NULL;
        search_result r2;
        CHECK(search_run(g, rs, cm, &o, &again, &r2, err, sizeof err) == 0);
        if (again) {
            char *a = graph_to_json_string(best), *b = graph_to_json_string(again);
            CHECK(a && b && !strcmp(a, b));
            free(a);
            free(b);
            CHECK_EQ_INT(r2.expanded, res.expanded);
            CHECK_EQ_INT(r2.queued, res.queued);
            graph_free(again);
        }
        search_result_free(&r2);
        graph_free(best);
    }
    search_result_free(&res);
    /* budget 0: nothing is expanded, the input comes back */
    o.budget = 0;
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(res.expanded, 0);
        CHECK_EQ_INT(count_op(best, OP_MATMUL), 2);
        CHECK(res.cost_after == res.cost_before);
        graph_free(best);
    }
    search_result_free(&res);
    /* at most 1x the original's nodes: the merged graph (5 nodes > 4) is dropped */
    rules_only(&o);
    o.max_nodes_factor = 1;
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(count_op(best, OP_MATMUL), 2);
        CHECK(res.dropped_size > 0);
        graph_free(best);
    }
    search_result_free(&res);
    /* duplicates: with alpha 10 the merged graph's split back to the original enters the queue,
     * and is dropped when taken (it was expanded already); every queued graph is taken */
    rules_only(&o);
    o.alpha = 10.0;
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(count_op(best, OP_MATMUL), 1);
        CHECK(res.expanded >= 2 && res.expanded < 100); /* the queue empties: few distinct graphs */
        CHECK(res.dropped_dup >= 1);
        CHECK_EQ_INT(res.queued, res.expanded - 1 + res.dropped_dup);
        graph_free(best);
    }
    search_result_free(&res);
    /* built-in moves alone find the same merge */
    search_opts_default(&o);
    o.time_limit_s = 0;
    CHECK(search_run(g, NULL, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(count_op(best, OP_MATMUL), 1);
        CHECK_EQ_INT(applied_count(&res, "merge-matmul"), 1);
        graph_free(best);
    }
    search_result_free(&res);
    graph_free(g);
}

/* conv -> relu -> conv -> relu: both fused by the rule; the optimum has two convs, no relu. */
static void test_conv_relu(const rules_set *rs, cost_model *cm) {
    graph *g = graph_new("conv_relu");
    const int64_t xd[4] = {1, 16, 28, 28}, kd[4] = {16, 16, 3, 3};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t k1 = graph_weight_he(g, "k1", 4, kd), k2 = graph_weight_he(g, "k2", 4, kd);
    int32_t t = graph_unary(g, OP_RELU, graph_conv2d(g, x, k1, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    graph_mark_output(g, graph_unary(g, OP_RELU, graph_conv2d(g, t, k2, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE)));
    CHECK(graph_ok(g));
    search_opts o;
    rules_only(&o);
    search_result res;
    graph *best = NULL;
    char err[512];
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(best->n_nodes, 2);
        CHECK_EQ_INT(count_op(best, OP_RELU), 0);
        CHECK_EQ_INT(applied_count(&res, "fuse_relu_conv"), 2);
        for (int32_t i = 0; i < best->n_nodes; i++) {
            CHECK_EQ_INT(best->nodes[i].p.v[PM_ACT], OPS_ACT_RELU);
            CHECK_EQ_INT(best->nodes[i].tag, 1);
        }
        exec_diff worst[1];
        CHECK_EQ_INT(exec_check(g, best, 3, 1e-6, worst, err, sizeof err), 0);
        graph_free(best);
    }
    search_result_free(&res);
    graph_free(g);
}

/* Two 3x3 convs and a 1x1 conv on one input at 14x14. */
static graph *sibling_convs(void) {
    graph *g = graph_new("siblings");
    const int64_t xd[4] = {1, 64, 14, 14}, k3[4] = {64, 64, 3, 3}, k1[4] = {64, 64, 1, 1};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t a = graph_weight_he(g, "a", 4, k3), b = graph_weight_he(g, "b", 4, k3), c = graph_weight_he(g, "c", 4, k1);
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_conv2d(g, x, a, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE)));
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_conv2d(g, x, b, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE)));
    graph_mark_output(g, graph_unary(g, OP_TANH, graph_conv2d(g, x, c, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE)));
    return g;
}

static void test_sibling_convs(const rules_set *rs, cost_model *cm) {
    graph *g = sibling_convs();
    CHECK(graph_ok(g));
    char err[512];
    search_opts o;
    search_result res;
    graph *best = NULL;
    /* rules only: the two 3x3 convs merge (the rule needs equal kernels) */
    rules_only(&o);
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(count_op(best, OP_CONV2D), 2);
        CHECK_EQ_INT(applied_count(&res, "merge_conv"), 1);
        exec_diff worst[3];
        CHECK_EQ_INT(exec_check(g, best, 1, 1e-5, worst, err, sizeof err), 0);
        graph_free(best);
    }
    search_result_free(&res);
    /* built-in moves: all three in one conv (the 1x1 enlarged to 3x3) */
    search_opts_default(&o);
    o.time_limit_s = 0;
    CHECK(search_run(g, NULL, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(count_op(best, OP_CONV2D), 1);
        CHECK_EQ_INT(count_op(best, OP_ENLARGE), 1);
        CHECK_EQ_INT(applied_count(&res, "merge-conv"), 1);
        exec_diff worst[3];
        CHECK_EQ_INT(exec_check(g, best, 1, 1e-5, worst, err, sizeof err), 0);
        graph_free(best);
    }
    search_result_free(&res);
    /* the whole pipeline: merged and folded, cheaper, and numerically the same */
    search_opts_default(&o);
    o.time_limit_s = 0;
    CHECK(search_optimize(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK(res.cost_after < res.cost_before);
        CHECK_EQ_INT(count_op(best, OP_CONV2D), 1);
        CHECK_EQ_INT(count_op(best, OP_ENLARGE), 0); /* folded into the merged kernel */
        CHECK(res.folded >= 1);
        exec_diff worst[3];
        CHECK_EQ_INT(exec_check(g, best, 3, 1e-5, worst, err, sizeof err), 0);
        graph_free(best);
    }
    search_result_free(&res);
    graph_free(g);
}

/* A chain of adds: ewadd commutativity makes the hash, never a move. */
static void test_commutativity(const rules_set *rs, cost_model *cm) {
    graph *g = graph_new("adds");
    const int64_t d[2] = {8, 8};
    int32_t a = graph_input(g, "a", 2, d), b = graph_input(g, "b", 2, d), c = graph_input(g, "c", 2, d);
    graph_mark_output(g, graph_ewadd(g, graph_ewadd(g, a, b), c));
    search_opts o;
    rules_only(&o);
    search_result res;
    graph *best = NULL;
    char err[512];
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(applied_count(&res, "ewadd_comm"), 0);
        CHECK_EQ_INT(res.queued, 0); /* nothing else applies to two adds */
        graph_free(best);
    }
    search_result_free(&res);
    graph_free(g);
}

/* The wrong rule relu(x) = x makes a cheaper graph; the numerical check must refuse it. */
static void test_wrong_rule(cost_model *cm) {
    rules_set *wrong = load("tests/data/opt/rules_wrong.json");
    CHECK(wrong != NULL);
    if (!wrong)
        return;
    graph *g = graph_new("relu");
    const int64_t xd[2] = {16, 32}, wd[2] = {32, 32};
    int32_t x = graph_input(g, "x", 2, xd);
    int32_t w = graph_weight_he(g, "w", 2, wd);
    graph_mark_output(g, graph_matmul(g, graph_unary(g, OP_RELU, x), w, OPS_ACT_NONE));
    search_opts o;
    search_opts_default(&o);
    o.time_limit_s = 0;
    search_result res;
    graph *best = NULL;
    char err[512];
    CHECK(search_optimize(g, wrong, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK_EQ_INT(count_op(best, OP_RELU), 0);
        CHECK_EQ_INT(applied_count(&res, "wrong_relu_drop"), 1);
        exec_diff worst[1];
        CHECK_EQ_INT(exec_check(g, best, 3, 1e-4, worst, err, sizeof err), 1);
        CHECK(worst[0].rel_l2 > 0.1);
        graph_free(best);
    }
    search_result_free(&res);
    /* a check between graphs of different interfaces is an error, not a pass */
    graph *h = two_matmuls();
    exec_diff worst[2];
    CHECK_EQ_INT(exec_check(g, h, 1, 1e-4, worst, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "different");
    graph_free(h);
    graph_free(g);
    rules_set_free(wrong);
}

/* The result never costs more than the input, whatever the rules do. */
static void test_never_worse(const rules_set *rs, cost_model *cm) {
    graph *g = graph_new("plain");
    const int64_t d[2] = {4, 4};
    int32_t x = graph_input(g, "x", 2, d);
    graph_mark_output(g, graph_unary(g, OP_SIGMOID, x));
    search_opts o;
    search_opts_default(&o);
    o.time_limit_s = 0;
    search_result res;
    graph *best = NULL;
    char err[512];
    CHECK(search_optimize(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    if (best) {
        CHECK(res.cost_after <= res.cost_before);
        CHECK_EQ_INT(best->n_nodes, 1);
        graph_free(best);
    }
    search_result_free(&res);
    graph_free(g);
}

/* search_opts.stats: per-source counts agree with the path, and the JSON names them; the
 * minimal built-in set keeps only cse and bn-fold (greedy) and no move. */
static void test_stats(const rules_set *rs, cost_model *cm) {
    graph *g = two_matmuls();
    search_opts o;
    rules_only(&o);
    o.stats = 1;
    search_result res;
    graph *best = NULL;
    char err[512];
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    CHECK_EQ_INT(res.n_rules, rs->n_rules);
    CHECK_EQ_INT(res.n_stats, 2 * rs->n_rules + REWRITE_COUNT);
    int64_t applied = 0, path = 0;
    int32_t mm = -1;
    for (int32_t i = 0; i < res.n_stats; i++) {
        const search_source_stat *st = &res.stats[i];
        CHECK(st->typechecked <= st->found && st->queued <= st->typechecked && st->seconds >= 0);
        applied += st->applied;
        const char *dir;
        if (!strcmp(search_source_name(rs, &res, i, &dir), "merge_matmul") && !strcmp(dir, "dst->src"))
            mm = i;
    }
    for (int32_t i = 0; i < res.n_applied; i++)
        path += res.applied[i].count;
    CHECK_EQ_INT(applied, path);
    CHECK(mm >= 0);
    if (mm >= 0)
        CHECK(res.stats[mm].found >= 1 && res.stats[mm].queued >= 1 && res.stats[mm].applied == 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    search_stats_write_json(f, rs, &res, "two\"mm", NULL);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "\"model\": \"two\\\"mm\",\n  \"rules\": null,");
    CHECK_STR_CONTAINS(buf, "{\"name\": \"merge_matmul\", \"dir\": \"dst->src\", \"found\": ");
    free(buf);
    graph_free(best);
    search_result_free(&res);
    CHECK(res.stats == NULL && res.n_stats == 0);
    /* off by default: nothing collected */
    rules_only(&o);
    CHECK(search_run(g, rs, cm, &o, &best, &res, err, sizeof err) == 0);
    CHECK(res.stats == NULL && res.n_stats == 0);
    graph_free(best);
    search_result_free(&res);
    search_opts_default(&o);
    search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
    for (int32_t k = 0; k < REWRITE_COUNT; k++) {
        CHECK_EQ_INT(o.moves[k], 0);
        CHECK_EQ_INT(o.greedy[k], k == REWRITE_CSE || k == REWRITE_BN_FOLD);
    }
    CHECK_EQ_INT(o.fold, 1);
    graph_free(g);
}

/* n siblings reading x: matmuls x(64,256) @ w_i(256,256), or 3x3 convs of x(1,16,28,28) with
 * (32,16,3,3) kernels; each result goes to its own tanh or sigmoid (graph outputs). */
/* n sibling matmuls (or 3x3 convs) reading one input, each result read by its own tanh or
 * sigmoid; widths (may be NULL: all equal) gives each sibling's output width. */
static graph *siblings(int conv, int32_t n, const int64_t *widths) {
    graph *g = graph_new(conv ? "n_convs" : "n_matmuls");
    const int64_t xd[2] = {64, 256}, cxd[4] = {1, 16, 28, 28};
    int32_t x = conv ? graph_input(g, "x", 4, cxd) : graph_input(g, "x", 2, xd);
    for (int32_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", (int)i);
        const int64_t wd[2] = {256, widths ? widths[i] : 256}, cwd[4] = {widths ? widths[i] / 8 : 32, 16, 3, 3};
        int32_t w = conv ? graph_weight_he(g, name, 4, cwd) : graph_weight_he(g, name, 2, wd);
        int32_t y = conv ? graph_conv2d(g, x, w, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE) : graph_matmul(g, x, w, OPS_ACT_NONE);
        graph_mark_output(g, graph_unary(g, i % 2 ? OP_SIGMOID : OP_TANH, y));
    }
    return g;
}

/* The id of the rule of rs whose src is concat, OP, split (the pairwise merge), or NULL. */
static const char *merge_rule(const rules_set *rs, ops_type op) {
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        if (r->src.n_ops == 3 && r->src.ops[0].op == OP_CONCAT && r->src.ops[1].op == op &&
            r->src.ops[2].op == OP_SPLIT && r->src.ops[1].p.v[PM_ACT] == OPS_ACT_NONE)
            return r->id;
    }
    return NULL;
}

/* The built-in merges are shortcuts for verified rules (rules/README.md): with --builtins minimal
 * and only the pairwise merge rules of rules/verified-4.json (tests/data/opt/rules_merge_sized.json:
 * the matmul and the 3x3 conv merge, dst->src, their splits cut at the concatenated weights'
 * widths), an n-way merge is the pairwise rule applied n-1 times: one matmul or conv, the same
 * values; for n = 2 the built-in's graph and cost exactly; siblings of unequal widths merge too,
 * a merged pair merging again with a further sibling. */
static void test_merges_as_rules(cost_model *cm) {
    rules_set *rm = load("tests/data/opt/rules_merge_sized.json");
    CHECK(rm != NULL);
    static const int64_t unequal[3] = {256, 128, 64};
    for (int32_t t = 0; rm && t < 6; t++) {
        int32_t conv = t % 2, n = t < 2 ? 2 : t < 4 ? 3 : 4;
        graph *g = siblings(conv, n, n == 3 ? unequal : NULL), *bb = NULL, *br = NULL;
        search_opts o;
        search_result rb, rr;
        char err[512];
        search_opts_default(&o);
        o.time_limit_s = 0;
        CHECK(search_optimize(g, NULL, cm, &o, &bb, &rb, err, sizeof err) == 0);
        search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
        CHECK(search_optimize(g, rm, cm, &o, &br, &rr, err, sizeof err) == 0);
        ops_type op = conv ? OP_CONV2D : OP_MATMUL;
        const char *id = merge_rule(rm, op);
        CHECK(id != NULL);
        if (bb && br && id) {
            CHECK_EQ_INT(count_op(bb, op), 1);
            CHECK_EQ_INT(count_op(br, op), 1);
            CHECK_EQ_INT(applied_count(&rr, id), n - 1);
            CHECK_EQ_INT(applied_count(&rb, conv ? "merge-conv" : "merge-matmul"), 1);
            fprintf(stderr, "%s %d%s: built-in %.3f us (%d nodes), rules %.3f us (%d nodes)\n", g->name, (int)n,
                    n == 3 ? " unequal" : "", rb.cost_after, (int)bb->n_nodes, rr.cost_after, (int)br->n_nodes);
            /* n = 2: the same graph; n > 2: the same single op, but the rule's two-way split leaves a
             * tree of n-1 splits where the built-in has one n-way split (rules/README.md: a known gap,
             * no rule flattens it while the axioms model two-way splits only) */
            if (n == 2)
                CHECK(rr.cost_after <= rb.cost_after * 1.0001 && br->n_nodes == bb->n_nodes);
            else
                CHECK(br->n_nodes == bb->n_nodes + n - 2 && count_op(br, OP_SPLIT) == n - 1);
            exec_diff worst[4];
            CHECK_EQ_INT(exec_check(bb, br, 2, 1e-5, worst, err, sizeof err), 0);
        }
        graph_free(bb);
        graph_free(br);
        search_result_free(&rb);
        search_result_free(&rr);
        graph_free(g);
    }
    rules_set_free(rm);
}

/* split-concat as rules: a 1x1 and a 3x3 conv of one input, each followed by relu, their results
 * concatenated (a SqueezeNet fire module without biases). The built-ins merge the convs
 * (merge-conv), undo the merged conv's split before the concat (split-concat) and fuse the relu;
 * --builtins minimal with four rules of rules/verified-4.json (tests/data/opt/rules_split_concat.json:
 * g4_00048 conv(a, enlarge(p)) = conv(a, p), g4_00330 the sized 3x3 conv merge, g4_00262 relu
 * across a concat, g4_00024 the identity concat(split(x)) = x, a side that is a bare variable)
 * reaches the same graph and cost, the identity dropping the split and the concat. */
static void test_split_concat_as_rules(cost_model *cm) {
    rules_set *rf = load("tests/data/opt/rules_split_concat.json");
    CHECK(rf != NULL);
    if (!rf)
        return;
    graph *g = graph_new("fire");
    const int64_t xd[4] = {1, 16, 28, 28}, k1[4] = {32, 16, 1, 1}, k3[4] = {32, 16, 3, 3};
    int32_t x = graph_input(g, "x", 4, xd), parts[2];
    int32_t a = graph_weight_he(g, "k1", 4, k1), b = graph_weight_he(g, "k3", 4, k3);
    parts[0] = graph_unary(g, OP_RELU, graph_conv2d(g, x, a, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    parts[1] = graph_unary(g, OP_RELU, graph_conv2d(g, x, b, 1, 1, OPS_PAD_SAME, OPS_ACT_NONE));
    graph_mark_output(g, graph_concat(g, 1, 2, parts));
    CHECK(graph_ok(g));
    const char *identity = NULL;
    for (int32_t i = 0; i < rf->n_rules; i++)
        if (rf->rules[i].dst.n_ops == 0 && rf->rules[i].src.n_ops == 2 && rf->rules[i].src.ops[0].op == OP_SPLIT &&
            rf->rules[i].src.ops[1].op == OP_CONCAT)
            identity = rf->rules[i].id;
    CHECK(identity != NULL);
    search_opts o;
    search_result rb, rr;
    graph *bb = NULL, *br = NULL;
    char err[512];
    search_opts_default(&o);
    o.time_limit_s = 0;
    CHECK(search_optimize(g, NULL, cm, &o, &bb, &rb, err, sizeof err) == 0);
    search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
    CHECK(search_optimize(g, rf, cm, &o, &br, &rr, err, sizeof err) == 0);
    if (bb && br && identity) {
        CHECK_EQ_INT(applied_count(&rb, "split-concat"), 1);
        CHECK_EQ_INT(applied_count(&rr, identity), 1);
        CHECK_EQ_INT(applied_count(&rr, "split-concat") + applied_count(&rr, "merge-conv"), 0);
        CHECK_EQ_INT(count_op(br, OP_CONV2D), 1);
        CHECK_EQ_INT(count_op(br, OP_SPLIT) + count_op(br, OP_CONCAT) + count_op(br, OP_RELU), 0);
        CHECK_EQ_INT(br->n_nodes, bb->n_nodes);
        CHECK(rr.cost_after <= rb.cost_after * 1.0001);
        fprintf(stderr, "fire: built-in %.3f us (%d nodes), rules %.3f us (%d nodes)\n", rb.cost_after,
                (int)bb->n_nodes, rr.cost_after, (int)br->n_nodes);
        exec_diff worst[1];
        CHECK_EQ_INT(exec_check(bb, br, 2, 1e-5, worst, err, sizeof err), 0);
    }
    graph_free(bb);
    graph_free(br);
    search_result_free(&rb);
    search_result_free(&rr);
    graph_free(g);
    rules_set_free(rf);
}

/* --builtins minimal on biased convolutions followed by relu (what bn-fold and ONNX Conv give):
 * the biases are split off for the search, which costs the ewadd and relu lowering will fuse as
 * free, and lowering fuses them back, so the result equals the built-ins' (fuse-bias, fuse-act). */
static void test_minimal_bias(cost_model *cm) {
    rules_set *rm = load("tests/data/opt/rules_merge.json");
    graph *g = graph_new("biased");
    const int64_t xd[4] = {1, 16, 28, 28}, kd[4] = {16, 16, 3, 3}, bd[1] = {16};
    const int32_t pads[4] = {1, 1, 1, 1};
    int32_t t = graph_input(g, "x", 4, xd);
    for (int32_t i = 0; i < 3; i++) {
        char kn[8], bn[8];
        snprintf(kn, sizeof kn, "k%d", (int)i);
        snprintf(bn, sizeof bn, "b%d", (int)i);
        int32_t k = graph_weight_he(g, kn, 4, kd), b = graph_weight_const(g, bn, 1, bd, 0.1f * (float)(i + 1));
        t = graph_unary(g, OP_RELU, graph_conv2d_ex(g, NULL, t, k, b, 1, 1, pads, 1, OPS_ACT_NONE));
    }
    graph_mark_output(g, t);
    CHECK(graph_ok(g));
    search_opts o;
    search_result rb, rr;
    graph *bb = NULL, *br = NULL;
    char err[512];
    search_opts_default(&o);
    o.time_limit_s = 0;
    CHECK(search_optimize(g, NULL, cm, &o, &bb, &rb, err, sizeof err) == 0);
    search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
    CHECK(o.split_bias && o.lower_cost);
    CHECK(search_optimize(g, rm, cm, &o, &br, &rr, err, sizeof err) == 0);
    if (bb && br) {
        CHECK_EQ_INT(br->n_nodes, 3);
        CHECK_EQ_INT(count_op(br, OP_RELU) + count_op(br, OP_EWADD), 0);
        CHECK(rr.cost_after <= rb.cost_after * 1.0001);
        CHECK_EQ_INT(applied_count(&rr, "fuse-bias"), 3);
        CHECK_EQ_INT(applied_count(&rr, "fuse-act"), 3);
        exec_diff worst[1];
        CHECK_EQ_INT(exec_check(g, br, 2, 1e-5, worst, err, sizeof err), 0);
    }
    graph_free(bb);
    graph_free(br);
    search_result_free(&rb);
    search_result_free(&rr);
    graph_free(g);
    rules_set_free(rm);
}

/* A fire module WITH biases (squeezenet's, as ONNX Conv and bn-fold give them) under --builtins
 * minimal reaches the built-ins' graph (merge-conv, split-concat, fuse-bias, fuse-act: one conv)
 * and cost through verified rules alone: after a merge rule the per-branch bias adds sit behind
 * the merged conv's split, and the bias normal form (rewrite_bias_normal, applied to every graph
 * the search takes) moves them in front of it, so the identity concat(split(x)) = x matches
 * (rules_split_concat.json); merged the other way round (the 3x3 kernel first: the set has that
 * merge of an unactivated conv in this order only), the concat reads the halves swapped, the add
 * moves behind the swap, and a rule moves the swap into the kernel's filters
 * (rules_fire_perm.json). The same with --search eqsat (the moves made on the e-graph). Every
 * result equals the original numerically. */
static void test_fire_bias_as_rules(cost_model *cm) {
    const char *files[2] = {"tests/data/opt/rules_split_concat.json", "tests/data/opt/rules_fire_perm.json"};
    graph *g = graph_new("fire_bias");
    const int64_t xd[4] = {1, 16, 28, 28}, k1[4] = {32, 16, 1, 1}, k3[4] = {32, 16, 3, 3}, bd[1] = {32};
    const int32_t pad0[4] = {0, 0, 0, 0}, pad1[4] = {1, 1, 1, 1};
    int32_t x = graph_input(g, "x", 4, xd), parts[2];
    int32_t a = graph_weight_he(g, "k1", 4, k1), b = graph_weight_he(g, "k3", 4, k3);
    int32_t ba = graph_weight_const(g, "b1", 1, bd, 0.25f), bb = graph_weight_const(g, "b3", 1, bd, -0.5f);
    parts[0] = graph_unary(g, OP_RELU, graph_conv2d_ex(g, "e1", x, a, ba, 1, 1, pad0, 1, OPS_ACT_NONE));
    parts[1] = graph_unary(g, OP_RELU, graph_conv2d_ex(g, "e3", x, b, bb, 1, 1, pad1, 1, OPS_ACT_NONE));
    graph_mark_output(g, graph_concat(g, 1, 2, parts));
    CHECK(graph_ok(g));
    search_opts o;
    search_result rb;
    graph *gb = NULL;
    char err[512];
    search_opts_default(&o);
    o.time_limit_s = 0;
    CHECK(search_optimize(g, NULL, cm, &o, &gb, &rb, err, sizeof err) == 0);
    if (gb) {
        CHECK_EQ_INT(applied_count(&rb, "merge-conv") + applied_count(&rb, "split-concat"), 2);
        CHECK_EQ_INT(gb->n_nodes, 1);
    }
    for (int32_t run = 0; run < 4 && gb; run++) {
        int32_t f = run % 2; /* runs 2 and 3: the same by equality saturation (eqsat's e-graph moves) */
        rules_set *rf = load(files[f]);
        CHECK(rf != NULL);
        if (!rf)
            continue;
        search_result rr;
        graph *gr = NULL;
        search_opts_default(&o);
        o.time_limit_s = 0;
        search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
        o.eqsat = run >= 2;
        CHECK(search_optimize(g, rf, cm, &o, &gr, &rr, err, sizeof err) == 0);
        if (gr) {
            fprintf(stderr, "fire with biases (%s, %s): built-in %.3f us, rules %.3f us (%d nodes)\n", files[f],
                    o.eqsat ? "eqsat" : "backtrack", rb.cost_after, rr.cost_after, (int)gr->n_nodes);
            CHECK(rr.cost_after <= rb.cost_after * 1.0001);
            CHECK_EQ_INT(gr->n_nodes, 1); /* one conv2d, bias and relu fused */
            CHECK_EQ_INT(count_op(gr, OP_CONV2D), 1);
            CHECK(o.eqsat || applied_count(&rr, "bias-normal") >= 1); /* eqsat does not count them */
            CHECK_EQ_INT(applied_count(&rr, "merge-conv") + applied_count(&rr, "split-concat"), 0);
            exec_diff worst[1];
            CHECK_EQ_INT(exec_check(g, gr, 2, 1e-5, worst, err, sizeof err), 0);
        }
        graph_free(gr);
        search_result_free(&rr);
        rules_set_free(rf);
    }
    graph_free(gb);
    search_result_free(&rb);
    graph_free(g);
}

int main(void) {
    rules_set *rs = load("tests/data/opt/rules_small.json");
    CHECK(rs != NULL);
    if (!rs)
        return TEST_REPORT();
    cost_model *cm = cost_analytic_new(NULL);
    test_merge_matmuls(rs, cm);
    test_conv_relu(rs, cm);
    test_sibling_convs(rs, cm);
    test_commutativity(rs, cm);
    test_wrong_rule(cm);
    test_never_worse(rs, cm);
    test_stats(rs, cm);
    test_merges_as_rules(cm);
    test_split_concat_as_rules(cm);
    test_minimal_bias(cm);
    test_fire_bias_as_rules(cm);
    int64_t computed, reused;
    cost_model_stats(cm, &computed, &reused);
    CHECK(computed > 0 && reused > 0); /* the memo answered repeated nodes */
    cost_model_free(cm);
    rules_set_free(rs);
    return TEST_REPORT();
}
