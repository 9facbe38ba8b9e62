/* test_free_split.c: free split sizes (rules/match.h "Free split sizes", verify.h
 * verify_mark_free_splits). The marker in the rule file (read, written back, refused on a rule
 * without an equal two-way split); the verifier's free mode (relu across a split is marked, a rule
 * whose two parts meet in one ewadd needs equal halves and is not, nor is the kernel rotation
 * that holds only for equal halves, which the numeric check at a cut of 1 refutes); the matcher
 * (a marked rule binds a split cut [5, 3] in both directions and its target carries [5, 3], the
 * same rule unmarked does not, equal halves still bind as before, lifted as well) with each
 * applied rewrite run on the CPU executor against the original.
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "match.h"
#include "test.h"
#include "verify.h"

#define CONV_PARAMS                                                                                              \
    "{\"stride_h\":1,\"stride_w\":1,\"pad\":\"same\",\"pad_t\":0,\"pad_l\":0,\"pad_b\":0,\"pad_r\":0,"          \
    "\"dilation_h\":1,\"dilation_w\":1,\"groups\":1,\"act\":\"none\"}"

/* relu across a split along channels (the shipped g4_00384), its marker given by `marker`; the
 * ewadd of a split's two parts before a matmul (g3_01232: equal halves only); the kernel's input
 * channels rotated = the input's rotated (g3_01328: true for equal halves only). */
#define RELU_SPLIT(id, marker)                                                                                   \
    "{\"id\":\"" id "\",\"vars\":[{\"name\":\"a0\",\"shape\":[1,4,5,6]}],"                                     \
    "\"src\":[{\"op\":\"split\",\"params\":{\"axis\":1,\"parts\":2,\"sizes\":[]},\"inputs\":[\"a0\"]},"        \
    "{\"op\":\"relu\",\"inputs\":[\"%0\"]},{\"op\":\"relu\",\"inputs\":[\"%0.1\"]}],"                            \
    "\"dst\":[{\"op\":\"relu\",\"inputs\":[\"a0\"]},"                                                           \
    "{\"op\":\"split\",\"params\":{\"axis\":1,\"parts\":2,\"sizes\":[]},\"inputs\":[\"%0\"]}],"                 \
    "\"outputs\":[{\"src\":\"%1\",\"dst\":\"%1\"},{\"src\":\"%2\",\"dst\":\"%1.1\"}]" marker "}"

static const char rules_text[] =
    "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":4,\"counts\":{},\"rules\":[" RELU_SPLIT(
        "relu_free", ",\"split_sizes\":\"free\"") "," RELU_SPLIT("relu_equal", "") ","
    "{\"id\":\"ewadd_parts\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]},{\"name\":\"w0\",\"shape\":[3,3]}],"
    "\"src\":[{\"op\":\"split\",\"params\":{\"axis\":0,\"parts\":2,\"sizes\":[]},\"inputs\":[\"x0\"]},"
    "{\"op\":\"ewadd\",\"inputs\":[\"%0\",\"%0.1\"]},"
    "{\"op\":\"matmul\",\"params\":{\"act\":\"none\"},\"inputs\":[\"%1\",\"w0\"]}],"
    "\"dst\":[{\"op\":\"matmul\",\"params\":{\"act\":\"none\"},\"inputs\":[\"x0\",\"w0\"]},"
    "{\"op\":\"split\",\"params\":{\"axis\":0,\"parts\":2,\"sizes\":[]},\"inputs\":[\"%0\"]},"
    "{\"op\":\"ewadd\",\"inputs\":[\"%1\",\"%1.1\"]}],\"outputs\":[{\"src\":\"%2\",\"dst\":\"%2\"}],"
    "\"requires\":[[\"x0\",0,2]]},"
    "{\"id\":\"rot_conv\",\"vars\":[{\"name\":\"a0\",\"shape\":[1,4,5,6]},{\"name\":\"k0\",\"shape\":[4,4,3,3]}],"
    "\"src\":[{\"op\":\"split\",\"params\":{\"axis\":1,\"parts\":2,\"sizes\":[]},\"inputs\":[\"k0\"]},"
    "{\"op\":\"concat\",\"params\":{\"axis\":1},\"inputs\":[\"%0.1\",\"%0\"]},"
    "{\"op\":\"conv2d\",\"params\":" CONV_PARAMS ",\"inputs\":[\"a0\",\"%1\"]}],"
    "\"dst\":[{\"op\":\"split\",\"params\":{\"axis\":1,\"parts\":2,\"sizes\":[]},\"inputs\":[\"a0\"]},"
    "{\"op\":\"concat\",\"params\":{\"axis\":1},\"inputs\":[\"%0.1\",\"%0\"]},"
    "{\"op\":\"conv2d\",\"params\":" CONV_PARAMS ",\"inputs\":[\"%1\",\"k0\"]}],"
    "\"outputs\":[{\"src\":\"%2\",\"dst\":\"%2\"}]}]}";

static int32_t rule_index(const rules_set *rs, const char *id) {
    for (int32_t i = 0; i < rs->n_rules; i++)
        if (!strcmp(rs->rules[i].id, id))
            return i;
    return -1;
}

/* The marker is read, written back after the rule's requirements, and refused where it cannot
 * mean anything. */
static void test_marker_io(const rules_set *rs) {
    CHECK_EQ_INT(rs->rules[rule_index(rs, "relu_free")].split_free, 1);
    CHECK_EQ_INT(rs->rules[rule_index(rs, "relu_equal")].split_free, 0);
    char *text = rules_to_json_string(rs);
    CHECK(text != NULL);
    if (text) {
        CHECK_STR_CONTAINS(text, "\"outputs\":[{\"src\":\"%1\",\"dst\":\"%1\"},{\"src\":\"%2\",\"dst\":\"%1.1\"}],"
                                 "\"split_sizes\":\"free\"}");
        char err[512] = "";
        rules_set *back = rules_from_json_string(text, "again", err, sizeof err);
        CHECK(back != NULL && back->rules[0].split_free == 1 && back->rules[1].split_free == 0);
        rules_set_free(back);
    }
    free(text);
    static const char bad[] =
        "{\"format\":\"tasc-rules\",\"version\":1,\"rules\":["
        "{\"id\":\"r\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]}],"
        "\"src\":[{\"op\":\"relu\",\"inputs\":[\"x0\"]}],\"dst\":[{\"op\":\"relu\",\"inputs\":[\"x0\"]}],"
        "\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}],\"split_sizes\":\"free\"}]}";
    char err[512] = "";
    CHECK(rules_from_json_string(bad, "bad", err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err,
                       "bad: rule 'r': \"split_sizes\": \"free\" on a rule without a two-way split of equal parts");
    static const char other[] =
        "{\"format\":\"tasc-rules\",\"version\":1,\"rules\":[" RELU_SPLIT("r", ",\"split_sizes\":\"any\"") "]}";
    CHECK(rules_from_json_string(other, "other", err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "\"split_sizes\" must be \"free\", got 'any'");
}

/* The verifier's free mode marks relu across a split and nothing that needs equal halves. */
static void test_mark(const rules_set *rs) {
    char err[512] = "", apath[1024];
    const char *axp = verify_axioms_default_path(apath, sizeof apath);
    verify_axioms *ax = axp ? verify_axioms_load(axp, err, sizeof err) : NULL;
    CHECK(ax != NULL);
    if (!ax) {
        fprintf(stderr, "axioms: %s\n", err);
        return;
    }
    rules_set *in = rules_set_new(), *out = NULL;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        rules_rule r = rs->rules[i];
        r.split_free = 0; /* the verifier decides */
        CHECK(rules_set_add(in, &r) >= 0);
    }
    verify_config cfg;
    verify_config_default(&cfg);
    cfg.threads = 1;
    verify_stats st;
    CHECK_EQ_INT(verify_mark_free_splits(ax, &cfg, in, &out, &st, err, sizeof err), 0);
    if (out) {
        CHECK_EQ_INT(out->n_rules, 4);
        CHECK_EQ_INT(out->rules[rule_index(out, "relu_free")].split_free, 1);
        CHECK_EQ_INT(out->rules[rule_index(out, "relu_equal")].split_free, 1);
        CHECK_EQ_INT(out->rules[rule_index(out, "ewadd_parts")].split_free, 0);
        CHECK_EQ_INT(out->rules[rule_index(out, "rot_conv")].split_free, 0);
        CHECK_EQ_INT(st.candidates, 4);
        CHECK_EQ_INT(st.proved, 2);
        CHECK_EQ_INT(st.refuted, 1); /* rot_conv, by the numeric check at a cut of 1 */
    }
    /* one by one, for the reasons */
    verify_result res[4];
    cfg.split_sizes_free = 1;
    CHECK_EQ_INT(verify_candidates(ax, &cfg, in, res, &st, err, sizeof err), 0);
    CHECK_STR_CONTAINS(res[rule_index(in, "ewadd_parts")].reason, "the hypotheses tie the cut to the dims");
    CHECK_STR_CONTAINS(res[rule_index(in, "rot_conv")].reason, "counterexample on random values");
    cfg.numeric_check = 0; /* and Z3 alone does not prove the rotation either */
    CHECK_EQ_INT(verify_candidates(ax, &cfg, in, res, &st, err, sizeof err), 0);
    CHECK(res[rule_index(in, "rot_conv")].outcome != VERIFY_PROVED);
    /* verify_run with mark_free_splits: the same markers on the proved set, proofs as made */
    rules_set *proved = NULL, *quar = NULL;
    verify_config_default(&cfg);
    cfg.threads = 1;
    cfg.mark_free_splits = 1;
    CHECK_EQ_INT(verify_run(ax, &cfg, in, &proved, &quar, &st, err, sizeof err), 0);
    if (proved) {
        CHECK_EQ_INT(proved->n_rules, 4);
        for (int32_t i = 0; i < proved->n_rules; i++)
            CHECK_EQ_INT(proved->rules[i].split_free, !strncmp(proved->rules[i].id, "relu_", 5));
        char *text = rules_to_json_string(proved);
        CHECK(text && strstr(text, "\"split_free_proved\": 2"));
        free(text);
    }
    rules_set_free(proved);
    rules_set_free(quar);
    rules_set_free(out);
    rules_set_free(in);
    verify_axioms_free(ax);
}

#define MAX_FOUND 8
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
        return f;
    }
    CHECK_EQ_INT(rules_match_find(rs, rule_index(rs, id), dir, &ix, collect, &f), f.n);
    rules_match_index_free(&ix);
    return f;
}

/* Apply match m; NULL (the reason in err) when the plan or its check is refused. */
static graph *apply(const rules_set *rs, const graph *g, const rules_match *m, char *err, size_t errlen) {
    rules_match_index ix;
    if (rules_match_index_build(&ix, g, err, errlen) < 0)
        return NULL;
    rules_apply_plan pl;
    memset(&pl, 0, sizeof pl);
    graph *out = NULL;
    int64_t counter = 0;
    if (rules_apply_plan_rule(rs, m, &ix, &pl, err, errlen) == 0 && rules_apply_check(&ix, &pl, err, errlen) == 0)
        rules_apply_run(&ix, &pl, "opt", &counter, &out, err, errlen);
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

/* The split node of g (the only one): its sizes as written, or n_list -1 when there is none. */
static ops_params split_params(const graph *g) {
    ops_params p;
    memset(&p, 0, sizeof p);
    p.n_list = -1;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == OP_SPLIT)
            p = g->nodes[i].p;
    return p;
}

/* tanh(x), split along channels (axis 1 + lift) into `sizes`, and (relu_first) the relu before
 * the split or (not relu_first) one relu on each part; each result read by a sigmoid. */
static graph *split_graph(const int64_t *sizes, int relu_first, int32_t lift) {
    graph *g = graph_new("fs");
    const int64_t xd[6] = {1, 1, 1, 8, 5, 5};
    int32_t x = graph_input(g, "x", 4 + lift, xd + 2 - lift), parts[2];
    int32_t y = graph_unary(g, OP_TANH, graph_input(g, "y", 4 + lift, xd + 2 - lift));
    y = graph_ewadd(g, y, x);
    graph_split(g, relu_first ? graph_unary(g, OP_RELU, y) : y, 1 + lift, 2, sizes, parts);
    for (int k = 0; k < 2; k++)
        graph_mark_output(g, graph_unary(g, OP_SIGMOID, relu_first ? parts[k] : graph_unary(g, OP_RELU, parts[k])));
    CHECK(graph_ok(g));
    return g;
}

/* Match and apply rule id on g in direction dir: expect `want` matches with split_n `n`, and the
 * rewritten graph's split cut at `cut` (n_list 0: equal parts written as []). */
static void check_rewrite(const rules_set *rs, const char *id, rules_dir dir, const graph *g, int32_t want, int64_t n,
                          const int64_t *cut) {
    found_list f = find_all(rs, id, dir, g);
    CHECK_EQ_INT(f.n, want);
    if (f.n != 1 || want != 1)
        return;
    CHECK_EQ_INT(f.m[0].split_n, n);
    char err[256] = "";
    graph *h = apply(rs, g, &f.m[0], err, sizeof err);
    CHECK(h != NULL);
    if (!h) {
        fprintf(stderr, "%s: %s\n", id, err);
        return;
    }
    ops_params p = split_params(h);
    if (cut) {
        CHECK(p.n_list == 2 && p.list[0] == cut[0] && p.list[1] == cut[1]);
    } else {
        CHECK_EQ_INT(p.n_list, 0);
    }
    CHECK(compare_runs(g, h) < 1e-6);
    graph_free(h);
}

static void test_bind(const rules_set *rs) {
    const int64_t cut[2] = {5, 3}, half[2] = {4, 4};
    for (int32_t lift = 0; lift < 2; lift++) {
        graph *g = split_graph(cut, 0, lift); /* relus on the parts: forwards */
        check_rewrite(rs, "relu_free", RULES_DIR_FWD, g, 1, 5, cut);
        check_rewrite(rs, "relu_equal", RULES_DIR_FWD, g, 0, 0, NULL);
        graph_free(g);
        g = split_graph(cut, 1, lift); /* the relu before the split: backwards */
        check_rewrite(rs, "relu_free", RULES_DIR_BWD, g, 1, 5, cut);
        check_rewrite(rs, "relu_equal", RULES_DIR_BWD, g, 0, 0, NULL);
        graph_free(g);
        g = split_graph(half, 0, lift); /* equal halves: as before, marked or not */
        check_rewrite(rs, "relu_free", RULES_DIR_FWD, g, 1, 0, NULL);
        check_rewrite(rs, "relu_equal", RULES_DIR_FWD, g, 1, 0, NULL);
        graph_free(g);
    }
}

int main(void) {
    char err[512] = "";
    rules_set *rs = rules_from_json_string(rules_text, "rules_text", err, sizeof err);
    CHECK(rs != NULL);
    if (!rs) {
        fprintf(stderr, "%s\n", err);
        return TEST_REPORT();
    }
    test_marker_io(rs);
    test_mark(rs);
    test_bind(rs);
    rules_set_free(rs);
    return TEST_REPORT();
}
