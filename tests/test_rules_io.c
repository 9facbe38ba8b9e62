/* test_rules_io.c: the rule file format (rules/README.md): exact round trips, every field read
 * back, one-line errors naming the file and the rule for each kind of bad input, and a sweep of
 * truncated and corrupted files that must give a message, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "test.h"

/* A valid file with two rules: matmul associativity (with a constraint-free rule) and an identity
 * rule with a constant, a constraint, a requirement and a proof object. */
static const char *good_text =
    "{\"format\": \"tasc-rules\", \"version\": 1, \"generator\": \"hand\",\n"
    " \"tool\": \"test\", \"op_set\": [\"matmul\", \"const_imm\", \"enlarge\", \"conv2d\"], \"max_ops\": 2,\n"
    " \"counts\": {\"graphs\": 10, \"pairs\": 3},\n"
    " \"extra\": {\"axioms\": \"abc\"},\n"
    " \"rules\": [\n"
    "  {\"id\": \"assoc\", \"vars\": [{\"name\": \"x\", \"shape\": [2, 3]}, {\"name\": \"w1\", \"shape\": [3, 3]},"
    "   {\"name\": \"w2\", \"shape\": [3, 3]}],"
    "   \"src\": [{\"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"]}, {\"op\": \"matmul\", \"inputs\": [\"%0\", \"w2\"]}],"
    "   \"dst\": [{\"op\": \"matmul\", \"inputs\": [\"w1\", \"w2\"]}, {\"op\": \"matmul\", \"params\": {\"act\": \"none\"},"
    "             \"inputs\": [\"x\", \"%0\"]}],"
    "   \"outputs\": [{\"src\": \"%1\", \"dst\": \"%1\"}],"
    "   \"provenance\": {\"fingerprint\": \"00000000000000ff\", \"max_ops\": 2, \"stages\": \"float\"}},\n"
    "  {\"id\": \"ident\", \"vars\": [{\"name\": \"w\", \"shape\": [3, 3]}],"
    "   \"src\": [{\"op\": \"const_imm\", \"params\": {\"n\": 3}, \"inputs\": []}, {\"op\": \"matmul\", \"inputs\": [\"w\", \"%0\"]}],"
    "   \"dst\": [], \"outputs\": [{\"src\": \"%1\", \"dst\": \"w\"}],"
    "   \"constraints\": [{\"side\": \"src\", \"op\": 0, \"param\": \"n\", \"value\": 3, \"equals\": [[\"w\", 1], [\"w\", 0]]}],"
    "   \"requires\": [[\"w\", 0, 3]],"
    "   \"proof\": {\"status\": \"proved\", \"axioms\": [\"a1\", \"a2\"]}}\n"
    " ]}\n";

static rules_set *load(const char *text, char *err, size_t n) {
    err[0] = '\0';
    return rules_from_json_string(text, "t.json", err, n);
}

/* Replace the first occurrence of `from` in good_text by `to`, load, and expect an error containing `want`. */
static void expect_error(const char *from, const char *to, const char *want) {
    const char *at = strstr(good_text, from);
    CHECK(at != NULL);
    if (!at)
        return;
    size_t n = strlen(good_text) - strlen(from) + strlen(to) + 1;
    char *t = malloc(n);
    size_t pre = (size_t)(at - good_text);
    memcpy(t, good_text, pre);
    strcpy(t + pre, to);
    strcat(t, at + strlen(from));
    char err[512];
    rules_set *rs = load(t, err, sizeof err);
    CHECK(rs == NULL);
    CHECK_STR_CONTAINS(err, "t.json");
    CHECK_STR_CONTAINS(err, want);
    CHECK(strchr(err, '\n') == NULL);
    if (rs || !strstr(err, want))
        fprintf(stderr, "  (replacing '%s' by '%s': got \"%s\")\n", from, to, err);
    rules_set_free(rs);
    free(t);
}

static void test_read_fields(void) {
    char err[512];
    rules_set *rs = load(good_text, err, sizeof err);
    CHECK(rs != NULL);
    if (!rs) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(!strcmp(rs->generator, "hand"));
    CHECK(!strcmp(rs->tool, "test"));
    CHECK_EQ_INT(rs->max_ops, 2);
    CHECK(rs->op_set[OP_MATMUL] && rs->op_set[OP_CONV2D] && !rs->op_set[OP_RELU]);
    CHECK_EQ_INT(rs->n_counts, 2);
    CHECK(!strcmp(rs->counts[1].name, "pairs"));
    CHECK_EQ_INT(rs->counts[1].value, 3);
    CHECK_STR_CONTAINS(rs->extra_json, "\"axioms\"");
    CHECK_EQ_INT(rs->n_rules, 2);
    const rules_rule *a = &rs->rules[0], *b = &rs->rules[1];
    CHECK(!strcmp(a->id, "assoc"));
    CHECK_EQ_INT(a->n_vars, 3);
    CHECK_EQ_INT(a->vars[0].shape.rank, 2);
    CHECK_EQ_INT(a->vars[0].shape.dims[1], 3);
    CHECK_EQ_INT(a->src.n_ops, 2);
    CHECK_EQ_INT(a->src.ops[1].in[0].kind, RULES_REF_OP);
    CHECK_EQ_INT(a->src.ops[1].in[0].idx, 0);
    CHECK_EQ_INT(a->src.ops[1].in[1].kind, RULES_REF_VAR);
    CHECK_EQ_INT(a->src.ops[1].in[1].idx, 2);
    CHECK_EQ_INT(a->src.ops[0].n_out, 1);
    CHECK_EQ_INT(a->dst.ops[1].p.v[PM_ACT], OPS_ACT_NONE);
    CHECK(a->fingerprint == 0xff);
    CHECK(!strcmp(a->stages, "float"));
    CHECK_EQ_INT(b->dst.n_ops, 0);
    CHECK_EQ_INT(b->outputs[0].dst.kind, RULES_REF_VAR);
    CHECK_EQ_INT(b->src.ops[0].p.v[PM_N], 3);
    CHECK_EQ_INT(b->n_constraints, 1);
    CHECK_EQ_INT(b->constraints[0].key, PM_N);
    CHECK_EQ_INT(b->constraints[0].list_index, -1);
    CHECK_EQ_INT(b->constraints[0].n_eq, 2);
    CHECK_EQ_INT(b->constraints[0].eq[0].dim, 1);
    CHECK_EQ_INT(b->n_requires, 1);
    CHECK_EQ_INT(b->requires[0].value, 3);
    CHECK_STR_CONTAINS(b->proof_json, "\"proved\"");
    char buf[32];
    CHECK(!strcmp(rules_ref_str(a, a->src.ops[1].in[0], buf, sizeof buf), "%0"));
    CHECK(!strcmp(rules_ref_str(a, a->src.ops[1].in[1], buf, sizeof buf), "w2"));
    rules_set_free(rs);
}

static void test_round_trip(void) {
    char err[512];
    rules_set *rs = load(good_text, err, sizeof err);
    CHECK(rs != NULL);
    if (!rs)
        return;
    char *t1 = rules_to_json_string(rs);
    rules_set *rs2 = load(t1, err, sizeof err);
    CHECK(rs2 != NULL);
    char *t2 = rs2 ? rules_to_json_string(rs2) : NULL;
    CHECK(t2 && !strcmp(t1, t2));
    /* one rule a line, the generator on the first line */
    const char *nl = strchr(t1, '\n'), *gen = strstr(t1, "\"generator\": \"hand\"");
    CHECK(nl && gen && gen < nl);
    int rule_lines = 0;
    for (const char *q = t1; (q = strstr(q, "\n  {\"id\":")) != NULL; q++)
        rule_lines++;
    CHECK_EQ_INT(rule_lines, 2);
    /* through a file */
    char path[] = "/tmp/test_rules_io_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(rules_save(rs, path, err, sizeof err) == 0);
    rules_set *rs3 = rules_load(path, err, sizeof err);
    CHECK(rs3 != NULL);
    char *t3 = rs3 ? rules_to_json_string(rs3) : NULL;
    CHECK(t3 && !strcmp(t1, t3));
    unlink(path);
    CHECK(rules_load(path, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, path);
    CHECK(rules_save(rs, "/nonexistent-dir/x.json", err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "/nonexistent-dir/x.json");
    free(t1);
    free(t2);
    free(t3);
    rules_set_free(rs);
    rules_set_free(rs2);
    rules_set_free(rs3);
}

/* A rule built in code, with a list-parameter constraint and an identity mapping, survives. */
static void test_built_rule(void) {
    rules_set *rs = rules_set_new();
    rs->max_ops = 2;
    rs->op_set[OP_EWMUL] = rs->op_set[OP_CONST_ONES] = 1;
    CHECK(rules_set_count(rs, "graphs", 5) == 0);
    CHECK(rules_set_count(rs, "graphs", 6) == 0); /* set again: updated in place */
    CHECK_EQ_INT(rs->n_counts, 1);
    rules_rule r;
    memset(&r, 0, sizeof r);
    r.id = "ones";
    r.n_vars = 1;
    snprintf(r.vars[0].name, RULES_NAME_LEN, "a0");
    int64_t d[4] = {1, 4, 5, 6};
    r.vars[0].shape = ops_shape_make(4, d);
    r.src.n_ops = 2;
    r.src.ops[0].op = OP_CONST_ONES;
    ops_params_default(OP_CONST_ONES, &r.src.ops[0].p);
    r.src.ops[0].p.n_list = 4;
    memcpy(r.src.ops[0].p.list, d, sizeof d);
    r.src.ops[1].op = OP_EWMUL;
    ops_params_default(OP_EWMUL, &r.src.ops[1].p);
    r.src.ops[1].n_in = 2;
    r.src.ops[1].in[0] = (rules_ref){RULES_REF_VAR, 0, 0};
    r.src.ops[1].in[1] = (rules_ref){RULES_REF_OP, 0, 0};
    r.n_outputs = 1;
    r.outputs[0].src = (rules_ref){RULES_REF_OP, 1, 0};
    r.outputs[0].dst = (rules_ref){RULES_REF_VAR, 0, 0};
    for (int i = 0; i < 4; i++) {
        rules_constraint *c = &r.constraints[r.n_constraints++];
        c->side = RULES_SIDE_SRC;
        c->op = 0;
        c->key = PM_LIST;
        c->list_index = i;
        c->value = d[i];
        c->n_eq = 1;
        c->eq[0].var = 0;
        c->eq[0].dim = i;
    }
    char err[256];
    CHECK(rules_rule_check(&r, err, sizeof err) == 0);
    CHECK(rules_set_add(rs, &r) == 0);
    char *t = rules_to_json_string(rs);
    CHECK_STR_CONTAINS(t, "\"param\":\"shape\",\"index\":3,\"value\":6,\"equals\":[[\"a0\",3]]");
    rules_set *back = load(t, err, sizeof err);
    CHECK(back && back->n_rules == 1 && back->rules[0].n_constraints == 4);
    if (back) {
        CHECK_EQ_INT(back->rules[0].constraints[2].list_index, 2);
        CHECK_EQ_INT(back->rules[0].src.ops[0].p.list[3], 6);
    }
    /* a wrong value in a constraint is caught by the check */
    r.constraints[3].value = 7;
    CHECK(rules_rule_check(&r, err, sizeof err) < 0);
    CHECK_STR_CONTAINS(err, "constraint 3");
    rules_set_free(back);
    free(t);
    rules_set_free(rs);
}

static void test_errors(void) {
    char err[512];
    CHECK(load("{\"format\": \"tasc-rules\",", err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "t.json:1:");
    CHECK(load("[]", err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "top level must be an object");
    expect_error("\"tasc-rules\"", "\"tasc-model\"", "\"format\" is 'tasc-model'");
    expect_error("\"version\": 1", "\"version\": 2", "out of range");
    expect_error("\"max_ops\": 2", "\"max_ops\": 2, \"colour\": 1", "unknown key 'colour'");
    expect_error("[\"matmul\", \"const_imm\"", "[\"matmul\", \"nosuchop\"", "unknown op 'nosuchop'");
    expect_error("\"graphs\": 10", "\"graphs\": -1", "out of range");
    /* inside a rule: the message names the rule */
    expect_error("{\"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"]}", "{\"op\": \"matmal\", \"inputs\": [\"x\", \"w1\"]}",
                 "rule 'assoc': src op 0: unknown op 'matmal'");
    expect_error("\"params\": {\"act\": \"none\"}", "\"params\": {\"act\": \"swish\"}", "rule 'assoc'");
    expect_error("\"params\": {\"act\": \"none\"}", "\"params\": {\"stride\": 1}", "has no parameter 'stride'");
    expect_error("\"params\": {\"n\": 3}", "\"params\": {\"n\": 0}", "rule 'ident'");
    expect_error("\"params\": {\"n\": 3}, ", "", "missing required parameter 'n'");
    expect_error("[\"%0\", \"w2\"]", "[\"%5\", \"w2\"]", "does not name a variable or an earlier op's output");
    expect_error("[\"%0\", \"w2\"]", "[\"%0.1\", \"w2\"]", "does not name a variable or an earlier op's output");
    expect_error("[\"%0\", \"w2\"]", "[\"%x\", \"w2\"]", "bad op reference '%x'");
    expect_error("[\"%0\", \"w2\"]", "[\"%0.\", \"w2\"]", "bad op reference");
    expect_error("[\"%0\", \"w2\"]", "[\"%0\", \"w9\"]", "'w9' is not a variable of the rule");
    expect_error("[\"x\", \"w1\"]", "[\"w1\", \"x\"]", "src op 0: matmul");  /* (3,3) x (2,3) */
    expect_error("\"shape\": [2, 3]", "\"shape\": [2, 0]", "out of range");
    expect_error("{\"name\": \"w2\"", "{\"name\": \"w1\"", "declared twice");
    expect_error("{\"name\": \"w2\"", "{\"name\": \"2w\"", "bad name");
    expect_error("\"outputs\": [{\"src\": \"%1\", \"dst\": \"%1\"}]", "\"outputs\": [{\"src\": \"%1\", \"dst\": \"%0\"}]",
                 "output 0: src '%1' has shape (2,3) but dst '%0' has shape (3,3)");
    expect_error("\"outputs\": [{\"src\": \"%1\", \"dst\": \"%1\"}]", "\"outputs\": [{\"src\": \"%0\", \"dst\": \"%1\"}]",
                 "src output '%1' is neither used nor mapped");
    expect_error("\"outputs\": [{\"src\": \"%1\", \"dst\": \"%1\"}]", "\"outputs\": []", "0 outputs");
    expect_error("\"id\": \"ident\"", "\"id\": \"assoc\"", "id used twice");
    expect_error("\"id\": \"ident\"", "\"id\": \"\"", "\"id\" must have 1 to 64 characters");
    expect_error("\"value\": 3, \"equals\"", "\"value\": 4, \"equals\"", "rule 'ident': constraint 0: value 4 but the op has 3");
    expect_error("[[\"w\", 1], [\"w\", 0]]", "[[\"w\", 1], [\"w\", 2]]", "no dim 2 of variable 0");
    expect_error("\"side\": \"src\"", "\"side\": \"left\"", "not src or dst");
    expect_error("\"param\": \"n\"", "\"param\": \"c\"", "has no parameter 'c'");
    expect_error("[[\"w\", 0, 3]]", "[[\"w\", 0, 4]]", "requirement 0: dim 0 of 'w' is 3, not 4");
    expect_error("[[\"w\", 0, 3]]", "[[\"%0\", 0, 3]]", "must name a variable");
    expect_error("\"fingerprint\": \"00000000000000ff\"", "\"fingerprint\": \"ff\"", "16 hex digits");
    expect_error("\"dst\": [], ", "\"dst\": [], \"extra\": 1, ", "rule: unknown key 'extra'");
    /* both sides empty */
    expect_error("\"src\": [{\"op\": \"const_imm\", \"params\": {\"n\": 3}, \"inputs\": []}, {\"op\": \"matmul\", "
                 "\"inputs\": [\"w\", \"%0\"]}]",
                 "\"src\": []", "rule 'ident'");
}

/* Every prefix, and a byte substitution at every position: a clean message or a valid set. */
static void test_corruption_sweep(void) {
    size_t n = strlen(good_text);
    char *t = malloc(n + 1);
    int failures_named = 1, loaded_ok = 0;
    for (size_t k = 0; k + 1 < n; k++) { /* all but the final newline is still a whole file */
        memcpy(t, good_text, k);
        t[k] = '\0';
        char err[512] = "";
        rules_set *rs = load(t, err, sizeof err);
        if (rs)
            loaded_ok++;
        else if (!strstr(err, "t.json") || strchr(err, '\n'))
            failures_named = 0;
        rules_set_free(rs);
    }
    CHECK_EQ_INT(loaded_ok, 0); /* no proper prefix is a complete file */
    static const char subst[] = {'"', '}', ']', '0', 'x', ',', '%', '-'};
    int clean = 1;
    for (size_t k = 0; k < n; k++)
        for (size_t s = 0; s < sizeof subst; s++) {
            memcpy(t, good_text, n + 1);
            t[k] = subst[s];
            char err[512] = "";
            rules_set *rs = load(t, err, sizeof err);
            if (!rs && (!strstr(err, "t.json") || strchr(err, '\n')))
                clean = 0;
            rules_set_free(rs);
        }
    CHECK(failures_named);
    CHECK(clean);
    free(t);
}

int main(void) {
    test_read_fields();
    test_round_trip();
    test_built_rule();
    test_errors();
    test_corruption_sweep();
    return TEST_REPORT();
}
