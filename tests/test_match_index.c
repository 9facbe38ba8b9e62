/* test_match_index.c: the matcher's filter (rules_match_possible, rules/match.h) against the
 * unfiltered matcher. A rule the filter rules out must have no match: checked for every rule of the
 * shipped rule sets rules/verified-3.json and verified-4.json in both directions on the seven zoo
 * models, and of verified-3.json on the small graphs made of each rule's own pattern side (where
 * the filter must let the rule through). The filter must also rule out something, or it is not tested.
 * The pattern graphs are also built lifted (a unit dim in front of every variable, match.h): the
 * filter indexes each node at every lift it can be matched at, so it must let through every
 * lifted match too, and the matrix rules must match their own lifted patterns.
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "test.h"
#include "zoo.h"

typedef struct {
    int64_t sources;  /* (rule, direction) pairs tried */
    int64_t filtered; /* ruled out by the filter */
    int64_t matched;  /* with at least one match */
    int64_t wrong;    /* ruled out, yet matched */
} tally;

/* Every usable (rule, direction) of rs on g: the filter's answer against the matcher's. */
static void compare_all(const rules_set *rs, const graph *g, tally *t, const char *what) {
    rules_match_index ix;
    char err[256];
    if (rules_match_index_build(&ix, g, err, sizeof err) < 0) {
        fprintf(stderr, "%s: index: %s\n", what, err);
        CHECK(0);
        return;
    }
    for (int32_t r = 0; r < rs->n_rules; r++)
        for (int d = 0; d < RULES_DIR_COUNT; d++) {
            if (!rules_match_usable(&rs->rules[r], (rules_dir)d))
                continue;
            rules_match_needs nd;
            rules_match_needs_of(&rs->rules[r], (rules_dir)d, &nd);
            int possible = rules_match_possible(&nd, &ix);
            int32_t n = rules_match_find(rs, r, (rules_dir)d, &ix, NULL, NULL);
            t->sources++;
            t->filtered += !possible;
            t->matched += n > 0;
            if (!possible && n > 0) {
                if (t->wrong++ < 5)
                    fprintf(stderr, "%s: rule %s (%s) ruled out but matches %d times\n", what, rs->rules[r].id,
                            d ? "dst->src" : "src->dst", (int)n);
            }
        }
    rules_match_index_free(&ix);
}

/* The graph of rule r's pattern side in direction d: variables as inputs of their shapes (with
 * `lift` unit dims in front, each op's parameters lifted alike: rules_lift_params), every op output
 * that nothing in the pattern reads as a graph output. NULL if it does not build. */
static graph *pattern_graph(const rules_rule *r, rules_dir d, int32_t lift) {
    const rules_graph *pat = d == RULES_DIR_FWD ? &r->src : &r->dst;
    graph *g = graph_new("pattern");
    int32_t var_t[RULES_MAX_VARS], op_t[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    uint8_t read[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    memset(read, 0, sizeof read);
    for (int32_t v = 0; v < r->n_vars; v++) {
        int64_t dims[OPS_MAX_DIMS];
        const ops_shape *sh = &r->vars[v].shape;
        if (sh->rank + lift > OPS_MAX_DIMS) {
            graph_free(g);
            return NULL;
        }
        for (int32_t k = 0; k < sh->rank + lift; k++)
            dims[k] = k < lift ? 1 : sh->dims[k - lift];
        var_t[v] = graph_input(g, r->vars[v].name, sh->rank + lift, dims);
    }
    for (int32_t i = 0; i < pat->n_ops; i++) {
        const rules_op *o = &pat->ops[i];
        ops_params p;
        int32_t in[RULES_MAX_IN];
        if (rules_lift_params(o->op, &o->p, o->n_in > 0 ? lift : 0, &p) < 0) {
            graph_free(g);
            return NULL;
        }
        for (int32_t k = 0; k < o->n_in; k++) {
            rules_ref ref = o->in[k];
            if (ref.kind == RULES_REF_VAR) {
                in[k] = var_t[ref.idx];
            } else {
                in[k] = op_t[ref.idx][ref.out];
                read[ref.idx][ref.out] = 1;
            }
        }
        if (graph_add(g, NULL, o->op, &p, o->n_in, in, op_t[i]) != o->n_out) {
            graph_free(g);
            return NULL;
        }
    }
    for (int32_t i = 0; i < pat->n_ops; i++)
        for (int32_t k = 0; k < pat->ops[i].n_out; k++)
            if (!read[i][k])
                graph_mark_output(g, op_t[i][k]);
    if (!graph_ok(g)) {
        graph_free(g);
        return NULL;
    }
    return g;
}

static void test_zoo(const rules_set *rs) {
    tally t = {0};
    for (const char *const *name = zoo_names(); *name; name++) {
        char err[256];
        graph *g = zoo_build(*name, 1, err, sizeof err);
        CHECK(g != NULL);
        if (!g)
            continue;
        compare_all(rs, g, &t, *name);
        graph_free(g);
    }
    printf("zoo: %lld sources, %lld ruled out by the filter, %lld with matches\n", (long long)t.sources,
           (long long)t.filtered, (long long)t.matched);
    CHECK_EQ_INT(t.wrong, 0);
    CHECK(t.filtered > t.sources / 2); /* the filter does filter */
    CHECK(t.matched > 0);
}

/* Each rule on its own pattern, and every rule on every pattern graph (lifted by `lift`). */
static void test_patterns(const rules_set *rs, int32_t lift) {
    tally t = {0};
    int64_t built = 0, self_missed = 0, self_matched = 0;
    for (int32_t r = 0; r < rs->n_rules; r++)
        for (int d = 0; d < RULES_DIR_COUNT; d++) {
            if (!rules_match_usable(&rs->rules[r], (rules_dir)d))
                continue;
            graph *g = pattern_graph(&rs->rules[r], (rules_dir)d, lift);
            if (!g)
                continue;
            built++;
            rules_match_index ix;
            char err[256];
            CHECK(rules_match_index_build(&ix, g, err, sizeof err) == 0);
            rules_match_needs nd;
            rules_match_needs_of(&rs->rules[r], (rules_dir)d, &nd);
            int32_t self = rules_match_find(rs, r, (rules_dir)d, &ix, NULL, NULL);
            self_matched += self > 0;
            if (!rules_match_possible(&nd, &ix) && (lift == 0 || self > 0)) {
                if (self_missed++ < 5)
                    fprintf(stderr, "rule %s ruled out on its own pattern\n", rs->rules[r].id);
            }
            rules_match_index_free(&ix);
            compare_all(rs, g, &t, rs->rules[r].id);
            graph_free(g);
        }
    printf("patterns (lift %d): %lld graphs, %lld matched by their rule; %lld sources, %lld ruled out, %lld with "
           "matches\n",
           (int)lift, (long long)built, (long long)self_matched, (long long)t.sources, (long long)t.filtered,
           (long long)t.matched);
    CHECK(built > rs->n_rules / (lift ? 8 : 2));
    CHECK(self_matched > built / (lift ? 4 : 2));
    CHECK_EQ_INT(self_missed, 0);
    CHECK_EQ_INT(t.wrong, 0);
    CHECK(t.filtered > 0);
    CHECK(t.matched > 0);
}

/* The needs of a hand-made pattern: matmul(transpose(a), b) in a graph with and without the edge. */
static void test_needs(void) {
    rules_rule r;
    memset(&r, 0, sizeof r);
    r.n_vars = 2;
    const int64_t d[2] = {4, 4};
    for (int v = 0; v < 2; v++) {
        snprintf(r.vars[v].name, RULES_NAME_LEN, "x%d", v);
        r.vars[v].shape = ops_shape_make(2, d);
    }
    r.src.n_ops = 2;
    r.src.ops[0].op = OP_TRANSPOSE;
    ops_params_default(OP_TRANSPOSE, &r.src.ops[0].p);
    r.src.ops[0].p.n_list = 2;
    r.src.ops[0].p.list[0] = 1;
    r.src.ops[0].n_in = 1;
    r.src.ops[0].in[0] = (rules_ref){RULES_REF_VAR, 0, 0};
    r.src.ops[0].n_out = 1;
    r.src.ops[1].op = OP_MATMUL;
    ops_params_default(OP_MATMUL, &r.src.ops[1].p);
    r.src.ops[1].n_in = 2;
    r.src.ops[1].in[0] = (rules_ref){RULES_REF_OP, 0, 0};
    r.src.ops[1].in[1] = (rules_ref){RULES_REF_VAR, 1, 0};
    r.src.ops[1].n_out = 1;
    rules_match_needs nd;
    rules_match_needs_of(&r, RULES_DIR_FWD, &nd);
    CHECK_EQ_INT(nd.n_cls, 2);
    CHECK_EQ_INT(nd.n_edges, 1);
    CHECK_EQ_INT(nd.edge[0], RULES_EDGE_KEY(OP_TRANSPOSE, 0, RULES_NODE_CLASS(OP_MATMUL, 2), 0));
    const int32_t perm[2] = {1, 0};
    char err[256];
    for (int swap = 0; swap < 2; swap++) {
        /* swap 0: matmul(transpose(a), b); swap 1: matmul(b, transpose(a)): the edge is in slot 1 */
        graph *g = graph_new("t");
        int32_t a = graph_input(g, "a", 2, d), b = graph_input(g, "b", 2, d);
        int32_t ta = graph_transpose(g, a, 2, perm);
        graph_mark_output(g, swap ? graph_matmul(g, b, ta, OPS_ACT_NONE) : graph_matmul(g, ta, b, OPS_ACT_NONE));
        CHECK(graph_ok(g));
        rules_match_index ix;
        CHECK(rules_match_index_build(&ix, g, err, sizeof err) == 0);
        CHECK_EQ_INT(rules_match_possible(&nd, &ix), !swap);
        rules_match_index_free(&ix);
        graph_free(g);
    }
    /* matmul(transpose(x0), transpose(x1)) needs two transposes: matmul(t, t) with t = transpose(a)
     * has both edges but one transpose, and no match */
    r.src.n_ops = 3;
    r.src.ops[2] = r.src.ops[1];
    r.src.ops[1] = r.src.ops[0];
    r.src.ops[1].in[0] = (rules_ref){RULES_REF_VAR, 1, 0};
    r.src.ops[2].in[0] = (rules_ref){RULES_REF_OP, 0, 0};
    r.src.ops[2].in[1] = (rules_ref){RULES_REF_OP, 1, 0};
    r.n_outputs = 1;
    r.outputs[0] = (rules_outmap){{RULES_REF_OP, 2, 0}, {RULES_REF_OP, 2, 0}};
    r.dst = r.src;
    r.id = "two_transposes";
    rules_match_needs_of(&r, RULES_DIR_FWD, &nd);
    CHECK_EQ_INT(nd.n_cls, 2);
    CHECK_EQ_INT(nd.count[0], 2);
    CHECK_EQ_INT(nd.n_edges, 2);
    graph *g = graph_new("t2");
    int32_t a = graph_input(g, "a", 2, d);
    int32_t ta = graph_transpose(g, a, 2, perm);
    graph_mark_output(g, graph_matmul(g, ta, ta, OPS_ACT_NONE));
    rules_set *rs = rules_set_new();
    CHECK(rules_set_add(rs, &r) == 0);
    rules_match_index ix;
    CHECK(rules_match_index_build(&ix, g, err, sizeof err) == 0);
    CHECK_EQ_INT(rules_match_possible(&nd, &ix), 0);
    CHECK_EQ_INT(rules_match_find(rs, 0, RULES_DIR_FWD, &ix, NULL, NULL), 0);
    rules_match_index_free(&ix);
    graph_free(g);
    rules_set_free(rs);
    /* signatures: a pattern matmul with act relu needs a matmul with act relu (act none is another
     * signature), and an op with a constrained parameter needs none */
    rules_rule m;
    memset(&m, 0, sizeof m);
    m.n_vars = 2;
    for (int v = 0; v < 2; v++) {
        snprintf(m.vars[v].name, RULES_NAME_LEN, "x%d", v);
        m.vars[v].shape = ops_shape_make(2, d);
    }
    m.src.n_ops = 1;
    m.src.ops[0].op = OP_MATMUL;
    ops_params_default(OP_MATMUL, &m.src.ops[0].p);
    m.src.ops[0].p.v[PM_ACT] = OPS_ACT_RELU;
    m.src.ops[0].n_in = 2;
    m.src.ops[0].in[0] = (rules_ref){RULES_REF_VAR, 0, 0};
    m.src.ops[0].in[1] = (rules_ref){RULES_REF_VAR, 1, 0};
    m.src.ops[0].n_out = 1;
    rules_match_needs_of(&m, RULES_DIR_FWD, &nd);
    CHECK_EQ_INT(nd.n_sigs, 0); /* the output rank is not known before validation */
    m.dst = m.src; /* a trivial rule, so that it validates: validation fills out_rank */
    m.n_outputs = 1;
    m.outputs[0] = (rules_outmap){{RULES_REF_OP, 0, 0}, {RULES_REF_OP, 0, 0}};
    char msg[256];
    CHECK(rules_rule_check(&m, msg, sizeof msg) == 0);
    CHECK_EQ_INT(m.src.ops[0].out_rank, 2);
    rules_match_needs_of(&m, RULES_DIR_FWD, &nd);
    CHECK_EQ_INT(nd.n_sigs, 1);
    for (int act = 0; act < 2; act++) {
        graph *h = graph_new("mm");
        int32_t a2 = graph_input(h, "a", 2, d), b2 = graph_input(h, "b", 2, d);
        graph_mark_output(h, graph_matmul(h, a2, b2, act ? OPS_ACT_RELU : OPS_ACT_NONE));
        CHECK(rules_match_index_build(&ix, h, err, sizeof err) == 0);
        CHECK_EQ_INT(rules_match_possible(&nd, &ix), act);
        rules_match_index_free(&ix);
        graph_free(h);
    }
    m.n_constraints = 1; /* act "constrained" (not a real rule: only the needs are looked at) */
    m.constraints[0] = (rules_constraint){RULES_SIDE_SRC, 0, PM_ACT, -1, 1, 1, {{0, 0}}};
    rules_match_needs_of(&m, RULES_DIR_FWD, &nd);
    CHECK_EQ_INT(nd.n_sigs, 0);
}

int main(void) {
    char err[512];
    rules_set *rs = rules_load("rules/verified-3.json", err, sizeof err);
    if (!rs)
        fprintf(stderr, "%s\n", err);
    CHECK(rs != NULL);
    if (!rs)
        return TEST_REPORT();
    test_needs();
    test_zoo(rs);
    test_patterns(rs, 0);
    test_patterns(rs, 1);
    rules_set_free(rs);
    /* the 4-op set on the zoo */
    rs = rules_load("rules/verified-4.json", err, sizeof err);
    if (!rs)
        fprintf(stderr, "%s\n", err);
    CHECK(rs != NULL);
    if (rs)
        test_zoo(rs);
    rules_set_free(rs);
    return TEST_REPORT();
}
