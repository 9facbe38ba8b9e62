/* test_split3.c: a rule application reuses the nodes the graph already has (rules/apply.c,
 * ra_reuse), so moves that need a shared operand stay reachable inside one search.
 *
 * nasrnn's case (bench/optimize/rules_only.md): n gates tanh(x W_i + h U_i), --builtins minimal and
 * two rules of rules/verified-4.json (tests/data/opt/rules_sum_merge.json: a sum of two matmuls as
 * one matmul on concatenations, the sized pairwise matmul merge). Each gate becomes
 * matmul(concat(x, h), concat(W_i; U_i)); without reuse each move builds its own concat(x, h) and
 * the merge (one first operand for both matmuls) cannot match. With it the n matmuls merge into one,
 * cheaper than the built-ins' graph (two merged matmuls, two splits, n adds).
 */
#include <stdio.h>
#include <string.h>

#include "exec.h"
#include "search.h"
#include "test.h"

static int32_t count_op(const graph *g, ops_type op) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

static int32_t applied_count(const search_result *r, const char *name) {
    for (int32_t i = 0; i < r->n_applied; i++)
        if (!strcmp(r->applied[i].name, name))
            return r->applied[i].count;
    return 0;
}

/* The id of the rule of rs whose src is concat, concat, matmul (a sum of two matmuls), or NULL. */
static const char *sum_rule(const rules_set *rs) {
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        if (r->src.n_ops == 3 && r->src.ops[0].op == OP_CONCAT && r->src.ops[1].op == OP_CONCAT &&
            r->src.ops[2].op == OP_MATMUL && r->dst.n_ops == 3 && r->dst.ops[2].op == OP_EWADD)
            return r->id;
    }
    return NULL;
}

/* n gates tanh(x W_i + h U_i), x and h (1,256), W_i and U_i (256,256). */
static graph *gates(int32_t n) {
    graph *g = graph_new("gates");
    const int64_t xd[2] = {1, 256}, wd[2] = {256, 256};
    int32_t x = graph_input(g, "x", 2, xd), h = graph_input(g, "h", 2, xd);
    for (int32_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", (int)i);
        int32_t w = graph_weight_he(g, name, 2, wd);
        snprintf(name, sizeof name, "u%d", (int)i);
        int32_t u = graph_weight_he(g, name, 2, wd);
        int32_t s = graph_ewadd(g, graph_matmul(g, x, w, OPS_ACT_NONE), graph_matmul(g, h, u, OPS_ACT_NONE));
        graph_mark_output(g, graph_unary(g, OP_TANH, s));
    }
    return g;
}

static void test_gates(const rules_set *rs, cost_model *cm, int32_t n) {
    graph *g = gates(n), *bb = NULL, *br = NULL;
    search_opts o;
    search_result rb, rr;
    char err[512];
    search_opts_default(&o);
    o.time_limit_s = 0; /* deterministic: the budget ends the search */
    CHECK(search_optimize(g, NULL, cm, &o, &bb, &rb, err, sizeof err) == 0);
    search_opts_builtins(&o, SEARCH_BUILTINS_MINIMAL);
    CHECK(search_optimize(g, rs, cm, &o, &br, &rr, err, sizeof err) == 0);
    const char *sum = sum_rule(rs);
    CHECK(sum != NULL);
    if (bb && br && sum) {
        fprintf(stderr, "%d gates: built-ins %.3f us (%d nodes), rules %.3f us (%d nodes)\n", (int)n, rb.cost_after,
                (int)bb->n_nodes, rr.cost_after, (int)br->n_nodes);
        CHECK_EQ_INT(count_op(bb, OP_MATMUL), 2); /* the built-ins: x's and h's matmuls merged */
        /* the rules: one concat(x, h) (the weight concats are folded), one matmul */
        CHECK_EQ_INT(count_op(br, OP_CONCAT), 1);
        CHECK_EQ_INT(count_op(br, OP_MATMUL), 1);
        CHECK_EQ_INT(count_op(br, OP_SPLIT), n - 1); /* a tree of two-way splits */
        CHECK_EQ_INT(applied_count(&rr, sum), n);
        CHECK(rr.cost_after < rb.cost_after);
        exec_diff worst[4];
        CHECK_EQ_INT(exec_check(g, br, 2, 1e-5, worst, err, sizeof err), 0);
    }
    graph_free(bb);
    graph_free(br);
    search_result_free(&rb);
    search_result_free(&rr);
    graph_free(g);
}

int main(void) {
    char err[512];
    rules_set *rs = rules_load("tests/data/opt/rules_sum_merge.json", err, sizeof err);
    if (!rs)
        fprintf(stderr, "%s\n", err);
    CHECK(rs != NULL);
    if (!rs)
        return TEST_REPORT();
    cost_model *cm = cost_analytic_new(NULL);
    for (int32_t n = 2; n <= 4; n++)
        test_gates(rs, cm, n);
    cost_model_free(cm);
    rules_set_free(rs);
    return TEST_REPORT();
}
