/* test_verify.c: the verifier (verifier/verify.h): the axiom file's checks on load, true rules
 * proved with the axioms of their proofs, planted wrong rules never proved (by Z3 alone and with
 * the numeric checks), a query that runs out of time quarantined while the run goes on, the
 * cache, the same results whatever the thread count, the egg export, the shape model against the
 * op table, and the shipped rule sets: every shipped rule proved again, and the 3-op set
 * regenerated and verified equal to the shipped one. Run from the source tree (CTest does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"
#include "rules.h"
#include "test.h"
#include "verify.h"
#include "verify_impl.h"

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static verify_axioms *load_axioms(void) {
    char err[512];
    verify_axioms *ax = verify_axioms_load("verifier/axioms.smt2", err, sizeof err);
    if (!ax)
        fprintf(stderr, "axioms: %s\n", err);
    return ax;
}

static rules_set *load_rules(const char *path) {
    char err[512];
    rules_set *rs = rules_load(path, err, sizeof err);
    if (!rs)
        fprintf(stderr, "%s\n", err);
    return rs;
}

static int core_has(const verify_axioms *ax, const verify_result *r, const char *name) {
    for (int32_t i = 0; i < r->n_core; i++)
        if (!strcmp(verify_axiom_name(ax, r->core[i]), name))
            return 1;
    return 0;
}

/* --- the axiom file ------------------------------------------------------------------------- */

#define AX_HEAD                                                                                                  \
    "(declare-sort T 0)\n(declare-fun dim (T Int) Int)\n(define-fun NONE () Int 0)\n(define-fun RELU () Int 1)\n" \
    "(define-fun SAME () Int 1)\n(define-fun VALID () Int 2)\n(define-fun SWAP () Int 10)\n"                     \
    "(declare-fun ewadd (T T) T)\n(declare-fun relu (T) T)\n"
#define AX_COMM                                                                                                  \
    ";; ewadd commutes\n(assert (! (forall ((x T) (y T)) (! (= (ewadd x y) (ewadd y x)) :pattern ((ewadd x y)))) " \
    ":named comm))\n"

static void expect_axioms_error(const char *text, const char *want) {
    char err[512] = "";
    verify_axioms *ax = verify_axioms_from_string(text, "bad.smt2", err, sizeof err);
    CHECK(ax == NULL);
    CHECK_STR_CONTAINS(err, "bad.smt2");
    CHECK_STR_CONTAINS(err, want);
    CHECK(strchr(err, '\n') == NULL);
    verify_axioms_free(ax);
}

static void test_axiom_file(void) {
    verify_axioms *ax = load_axioms();
    CHECK(ax != NULL);
    if (!ax)
        return;
    CHECK(verify_axioms_count(ax) >= 43); /* at least TASO's count */
    CHECK(verify_axiom_find(ax, "ewadd_comm") >= 0);
    CHECK(verify_axiom_find(ax, "split0_concat") >= 0);
    CHECK(verify_axiom_find(ax, "no_such_axiom") == -1);
    CHECK_EQ_INT(strlen(verify_axioms_hash(ax)), 16);
    CHECK_EQ_INT(strlen(verify_opset_hash()), 16);
    for (int32_t i = 0; i < verify_axioms_count(ax); i++)
        CHECK(verify_axiom_doc(ax, i) && strlen(verify_axiom_doc(ax, i)) > 5);
    /* the same text, the same hash; one byte more, another */
    char err[256];
    verify_axioms *b = verify_axioms_from_string(verify_axioms_text(ax), "copy", err, sizeof err);
    CHECK(b != NULL);
    if (b) {
        CHECK(!strcmp(verify_axioms_hash(ax), verify_axioms_hash(b)));
        verify_axioms_free(b);
    }
    char buf[1024];
    CHECK(verify_axioms_default_path(buf, sizeof buf) != NULL);
    verify_axioms_free(ax);

    /* a minimal good file, then one fault at a time */
    ax = verify_axioms_from_string(AX_HEAD AX_COMM, "good.smt2", err, sizeof err);
    CHECK(ax != NULL);
    CHECK(ax && verify_axioms_count(ax) == 1 && !strcmp(verify_axiom_doc(ax, 0), "ewadd commutes"));
    verify_axioms_free(ax);
    expect_axioms_error(AX_HEAD ";; c\n(assert (forall ((x T)) (! (= (relu x) x) :pattern ((relu x)))))\n", ":named");
    expect_axioms_error(AX_HEAD "(assert (! (forall ((x T)) (! (= (relu x) x) :pattern ((relu x)))) :named r))\n",
                        "comment");
    expect_axioms_error(AX_HEAD AX_COMM AX_COMM, "defined twice");
    expect_axioms_error(AX_HEAD ";; c\n(assert (! (forall ((x T)) (= (relu x) y)) :named r))\n", "unknown constant");
    expect_axioms_error(AX_HEAD "(declare-fun frob (T) T)\n;; c\n(assert (! (forall ((x T)) (! (= (frob x) x) "
                                ":pattern ((frob x)))) :named f))\n",
                        "not an op of the model");
    expect_axioms_error("(declare-sort T 0)\n(declare-fun dim (T Int) Int)\n(define-fun NONE () Int 0)\n"
                        "(define-fun RELU () Int 1)\n(define-fun SAME () Int 1)\n(define-fun VALID () Int 2)\n"
                        "(define-fun SWAP () Int 10)\n(declare-fun ewadd (T T T) T)\n;; c\n(assert (! (forall ((x T)) "
                        "(! (= (ewadd x x x) x) :pattern ((ewadd x x x)))) :named e))\n",
                        "must be declared");
    expect_axioms_error("(declare-sort T 0)\n(declare-fun dim (T Int) Int)\n(define-fun NONE () Int 0)\n"
                        "(define-fun RELU () Int 2)\n(define-fun SAME () Int 1)\n(define-fun VALID () Int 2)\n"
                        "(define-fun SWAP () Int 10)\n(declare-fun ewadd (T T) T)\n" AX_COMM,
                        "constants must be");
    expect_axioms_error(AX_HEAD ";; c\n(assert (! (forall ((x T) (y T)) (! (= (ewadd x y) x) :pattern ((relu x)))) "
                                ":named p))\n",
                        "pattern");
    expect_axioms_error(AX_HEAD ";; c\n(assert (! (= 1 1) :named one))\n", "forall");
    expect_axioms_error(AX_HEAD ";; c\n(assert (! (forall ((x T)) (! (= (relu x) x) :pattern ((relu x)))) :named r)\n",
                        "unbalanced");
    expect_axioms_error("", "no axioms");
    /* every prefix of the real file (in steps) and a byte flipped here and there: a message or a
     * load, never a crash */
    char *full = read_file("verifier/axioms.smt2");
    CHECK(full != NULL);
    if (full) {
        size_t len = strlen(full);
        int loaded = 0, refused = 0, tried = 0;
        for (size_t cut = 0; cut < len; cut += len / 37 + 1) {
            tried++;
            char *t = malloc(cut + 1);
            memcpy(t, full, cut);
            t[cut] = '\0';
            verify_axioms *a = verify_axioms_from_string(t, "cut.smt2", err, sizeof err);
            loaded += a != NULL;
            refused += a == NULL && strstr(err, "cut.smt2") != NULL && !strchr(err, '\n');
            verify_axioms_free(a);
            free(t);
        }
        CHECK_EQ_INT(loaded + refused, tried);
        CHECK(refused >= 1);
        for (size_t at = 7; at < len; at += len / 23 + 1) {
            char *t = strdup(full);
            t[at] = t[at] == ')' ? '(' : ')';
            verify_axioms *a = verify_axioms_from_string(t, "flip.smt2", err, sizeof err);
            CHECK(a != NULL || (strstr(err, "flip.smt2") && !strchr(err, '\n')));
            verify_axioms_free(a);
            free(t);
        }
        free(full);
    }
    CHECK(verify_axioms_load("/nonexistent/axioms.smt2", err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "/nonexistent/axioms.smt2");
}

/* --- proving ---------------------------------------------------------------------------------- */

static void run_set(const verify_axioms *ax, const rules_set *rs, int numeric, double timeout, int32_t threads,
                    verify_result *res, verify_stats *st) {
    verify_config cfg;
    verify_config_default(&cfg);
    cfg.numeric_check = numeric;
    cfg.timeout_s = timeout;
    cfg.threads = threads;
    char err[512];
    int rc = verify_candidates(ax, &cfg, rs, res, st, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "verify_candidates: %s\n", err);
}

static void test_true_rules(const verify_axioms *ax) {
    rules_set *rs = load_rules("tests/data/verify/true.json");
    CHECK(rs != NULL);
    if (!rs)
        return;
    verify_result *res = calloc((size_t)rs->n_rules, sizeof *res);
    verify_stats st;
    run_set(ax, rs, 0, 10.0, 2, res, &st);
    CHECK_EQ_INT(st.proved, rs->n_rules);
    static const struct {
        const char *id, *axiom;
    } want[] = {{"ewadd_commutes", "ewadd_comm"}, {"matmul_assoc", "matmul_assoc"},
                {"conv_relu_fusion", "relu_conv"}, {"split_of_concat", "split0_concat"},
                {"split_of_concat", "split1_concat"}, {"transpose_twice", "transpose_twice"},
                {"matmul_identity", "matmul_imm_r"}, {"conv_enlarge", "conv_enlarge"},
                {"avgpool_as_conv", "conv_pool"}, {"distributivity", "ewmul_ewadd"},
                {"concat_three_assoc", "concat_assoc"}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
        for (int32_t i = 0; i < rs->n_rules; i++)
            if (!strcmp(rs->rules[i].id, want[w].id)) {
                CHECK(res[i].outcome == VERIFY_PROVED);
                CHECK(core_has(ax, &res[i], want[w].axiom));
                if (!core_has(ax, &res[i], want[w].axiom))
                    fprintf(stderr, "  %s: core lacks %s\n", want[w].id, want[w].axiom);
            }
    /* the proof member names status, time and the core */
    char *pj = verify_proof_json(ax, &res[0]);
    CHECK_STR_CONTAINS(pj, "\"status\":\"proved\"");
    CHECK_STR_CONTAINS(pj, "\"axioms\":[\"ewadd_comm\"]");
    CHECK_STR_CONTAINS(pj, "\"time_s\":");
    free(pj);
    free(res);
    rules_set_free(rs);
}

static void test_planted(const verify_axioms *ax) {
    rules_set *rs = load_rules("tests/data/verify/planted.json");
    CHECK(rs != NULL);
    if (!rs)
        return;
    CHECK_EQ_INT(rs->n_rules, 6);
    verify_result *res = calloc((size_t)rs->n_rules, sizeof *res);
    verify_stats st;
    /* Z3 alone: never proved */
    run_set(ax, rs, 0, 5.0, 2, res, &st);
    CHECK_EQ_INT(st.proved, 0);
    for (int32_t i = 0; i < rs->n_rules; i++) {
        CHECK(res[i].outcome == VERIFY_REFUTED || res[i].outcome == VERIFY_UNKNOWN);
        if (res[i].outcome == VERIFY_PROVED)
            fprintf(stderr, "  planted rule %s was PROVED\n", rs->rules[i].id);
    }
    /* with the numeric checks: each refuted by a counterexample */
    run_set(ax, rs, 1, 5.0, 2, res, &st);
    CHECK_EQ_INT(st.refuted, rs->n_rules);
    for (int32_t i = 0; i < rs->n_rules; i++)
        CHECK_STR_CONTAINS(res[i].reason, "counterexample");
    /* the whole step: nothing proved, everything quarantined with its reason */
    verify_config cfg;
    verify_config_default(&cfg);
    rules_set *p = NULL, *q = NULL;
    char err[256];
    CHECK_EQ_INT(verify_run(ax, &cfg, rs, &p, &q, &st, err, sizeof err), 0);
    CHECK(p && p->n_rules == 0);
    CHECK(q && q->n_rules == rs->n_rules);
    if (q)
        for (int32_t i = 0; i < q->n_rules; i++)
            CHECK_STR_CONTAINS(q->rules[i].proof_json, "\"status\":\"refuted\"");
    rules_set_free(p);
    rules_set_free(q);
    free(res);
    rules_set_free(rs);
}

/* A false equality that only shapes other than the recorded ones expose: refuted by the shape
 * search (blocks of unequal width), while Z3 alone says unknown. */
static void test_shape_counterexample(const verify_axioms *ax) {
    const char *text =
        "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":0,\"counts\":{},\"rules\":["
        "{\"id\":\"blocks\",\"vars\":[{\"name\":\"x0\",\"shape\":[2,3]},{\"name\":\"x1\",\"shape\":[2,3]},"
        "{\"name\":\"w0\",\"shape\":[3,3]},{\"name\":\"w1\",\"shape\":[3,3]}],"
        "\"src\":[{\"op\":\"concat\",\"params\":{\"axis\":1},\"inputs\":[\"x1\",\"x0\"]},"
        "{\"op\":\"concat\",\"params\":{\"axis\":0},\"inputs\":[\"w1\",\"w0\"]},{\"op\":\"matmul\",\"inputs\":[\"%0\",\"%1\"]}],"
        "\"dst\":[{\"op\":\"concat\",\"params\":{\"axis\":1},\"inputs\":[\"x0\",\"x1\"]},"
        "{\"op\":\"concat\",\"params\":{\"axis\":0},\"inputs\":[\"w0\",\"w1\"]},{\"op\":\"matmul\",\"inputs\":[\"%0\",\"%1\"]}],"
        "\"outputs\":[{\"src\":\"%2\",\"dst\":\"%2\"}]}]}";
    char err[256];
    rules_set *rs = rules_from_json_string(text, "blocks", err, sizeof err);
    CHECK(rs != NULL);
    if (!rs)
        return;
    verify_result res;
    verify_stats st;
    run_set(ax, rs, 0, 5.0, 1, &res, &st);
    CHECK(res.outcome == VERIFY_UNKNOWN);
    run_set(ax, rs, 1, 5.0, 1, &res, &st);
    CHECK(res.outcome == VERIFY_REFUTED);
    CHECK_STR_CONTAINS(res.reason, "counterexample at shapes");
    rules_set_free(rs);
}

/* Generated rules whose one side is a bare variable (concat(split(x)) = x, from a split of a pool
 * variable) and merge rules whose split is cut at the concatenated operands' widths (sizes tied
 * to variable dims) are proved, every dim a free symbol. (A cut tied to the wrong dims is no
 * counterexample: the rule's typing is a hypothesis, so it holds wherever it type-checks, and a
 * matcher refuses the shapes where it does not.) */
static void test_generated_identity_and_sizes(const verify_axioms *ax) {
    gen_config gc;
    gen_config_default(&gc);
    gc.max_ops = 3;
    char err[256];
    rules_set *rs = NULL;
    CHECK_EQ_INT(gen_parse_ops(&gc, "matmul,concat,split", err, sizeof err), 0);
    CHECK_EQ_INT(gen_run(&gc, &rs, NULL, err, sizeof err), 0);
    if (!rs)
        return;
    verify_result *res = calloc((size_t)rs->n_rules, sizeof *res);
    verify_stats st;
    run_set(ax, rs, 1, 10.0, 2, res, &st);
    int identity = 0, sized = 0;
    int32_t merge = -1;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        if (r->dst.n_ops == 0 && r->src.n_ops == 2 && r->src.ops[0].op == OP_SPLIT && r->src.ops[1].op == OP_CONCAT &&
            r->outputs[0].dst.kind == RULES_REF_VAR) {
            identity++;
            CHECK(res[i].outcome == VERIFY_PROVED);
            CHECK(core_has(ax, &res[i], "concat_split"));
        }
        for (int side = 0; side < 2; side++) {
            const rules_graph *g = side ? &r->dst : &r->src;
            for (int32_t k = 0; k < g->n_ops; k++)
                if (g->ops[k].op == OP_SPLIT && g->ops[k].p.n_list == 2) {
                    sized++;
                    CHECK(res[i].outcome == VERIFY_PROVED);
                    if (merge < 0 && r->src.n_ops == 3 && r->src.ops[1].op == OP_MATMUL && r->dst.n_ops == 2)
                        merge = i;
                }
        }
    }
    CHECK(identity >= 1);
    CHECK(sized >= 4);
    CHECK(merge >= 0);
    printf("test_verify: %d identity rules and %d sized splits proved among %d generated\n", identity, sized,
           (int)rs->n_rules);
    /* the merge: proved through the matmul-over-concat axioms and a split of a concat at its seam */
    if (merge >= 0)
        CHECK((core_has(ax, &res[merge], "matmul_concat_cols") || core_has(ax, &res[merge], "matmul_concat_rows")) &&
              (core_has(ax, &res[merge], "split0_concat") || core_has(ax, &res[merge], "split1_concat")));
    free(res);
    rules_set_free(rs);
}

/* An op the axioms do not model: unknown with the reason, never proved. */
static void test_outside_model(const verify_axioms *ax) {
    const char *text =
        "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":0,\"counts\":{},\"rules\":["
        "{\"id\":\"sig\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]}],\"src\":[{\"op\":\"sigmoid\",\"inputs\":[\"x\"]}],"
        "\"dst\":[{\"op\":\"sigmoid\",\"inputs\":[\"x\"]},{\"op\":\"relu\",\"inputs\":[\"%0\"]}],"
        "\"outputs\":[{\"src\":\"%0\",\"dst\":\"%1\"}]},"
        "{\"id\":\"bcast\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"y\",\"shape\":[3]}],"
        "\"src\":[{\"op\":\"ewadd\",\"inputs\":[\"x\",\"y\"]}],\"dst\":[{\"op\":\"ewadd\",\"inputs\":[\"y\",\"x\"]}],"
        "\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}]}]}";
    char err[256];
    rules_set *rs = rules_from_json_string(text, "outside", err, sizeof err);
    CHECK(rs != NULL);
    if (!rs)
        return;
    verify_result res[2];
    verify_stats st;
    run_set(ax, rs, 0, 5.0, 1, res, &st);
    CHECK(res[0].outcome == VERIFY_UNKNOWN);
    CHECK_STR_CONTAINS(res[0].reason, "sigmoid has no axioms");
    CHECK(res[1].outcome == VERIFY_UNKNOWN);
    CHECK_STR_CONTAINS(res[1].reason, "broadcasting");
    rules_set_free(rs);
}

/* A query that cannot end (an axiom with a matching loop, a false goal) is cut by the timeout,
 * reported unknown and quarantined; the next candidate is still proved. */
static void test_timeout(void) {
    verify_axioms *base = load_axioms();
    if (!base)
        return;
    /* a trigger that makes a bigger ewadd term from every ewadd term: a matching loop that no
     * generation limit stops (the axiom is false, which does not matter for the timeout) */
    const char *loop = "\n;; grows ewadd terms without end\n"
                       "(assert (! (forall ((x T) (y T)) (! (= (ewadd x y) (ewadd (ewmul x (ewadd y x)) y)) "
                       ":pattern ((ewadd x y)))) :named grow_loop))\n";
    size_t n = strlen(verify_axioms_text(base)) + strlen(loop) + 1;
    char *text = malloc(n);
    snprintf(text, n, "%s%s", verify_axioms_text(base), loop);
    char err[512];
    verify_axioms *ax = verify_axioms_from_string(text, "loop.smt2", err, sizeof err);
    CHECK(ax != NULL);
    free(text);
    verify_axioms_free(base);
    if (!ax)
        return;
    const char *rules =
        "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":0,\"counts\":{},\"rules\":["
        "{\"id\":\"never\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"y\",\"shape\":[2,3]},"
        "{\"name\":\"z\",\"shape\":[2,3]}],\"src\":[{\"op\":\"ewadd\",\"inputs\":[\"x\",\"y\"]}],"
        "\"dst\":[{\"op\":\"ewadd\",\"inputs\":[\"x\",\"z\"]}],\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}]},"
        "{\"id\":\"twice\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]}],"
        "\"src\":[{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"x\"]},"
        "{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"%0\"]}],\"dst\":[],"
        "\"outputs\":[{\"src\":\"%1\",\"dst\":\"x\"}]}]}";
    rules_set *rs = rules_from_json_string(rules, "t", err, sizeof err);
    CHECK(rs != NULL);
    if (rs) {
        verify_config cfg;
        verify_config_default(&cfg);
        cfg.numeric_check = 0;
        cfg.timeout_s = 0.5;
        cfg.threads = 1;
        rules_set *p = NULL, *q = NULL;
        verify_stats st;
        double t0 = base_now();
        CHECK_EQ_INT(verify_run(ax, &cfg, rs, &p, &q, &st, err, sizeof err), 0);
        double dt = base_now() - t0;
        CHECK(dt < 5.0);
        CHECK_EQ_INT(st.timeouts, 1);
        CHECK_EQ_INT(st.proved, 1);
        CHECK(p && p->n_rules == 1 && !strcmp(p->rules[0].id, "twice"));
        CHECK(q && q->n_rules == 1 && !strcmp(q->rules[0].id, "never"));
        if (q && q->n_rules == 1) {
            CHECK_STR_CONTAINS(q->rules[0].proof_json, "\"status\":\"unknown\"");
            CHECK(strstr(q->rules[0].proof_json, "canceled") || strstr(q->rules[0].proof_json, "timeout"));
        }
        rules_set_free(p);
        rules_set_free(q);
        rules_set_free(rs);
    }
    verify_axioms_free(ax);
}

/* The cache: a second run proves nothing, gives the same results; a longer timeout retries unknowns. */
static void test_cache(const verify_axioms *ax) {
    char dir[] = "/tmp/tasc_verify_cacheXXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/verify.cache", dir);
    rules_set *rs = load_rules("tests/data/verify/true.json");
    rules_set *pl = load_rules("tests/data/verify/planted.json");
    if (!rs || !pl) {
        CHECK(0);
        return;
    }
    verify_config cfg;
    verify_config_default(&cfg);
    cfg.cache_path = path;
    cfg.threads = 2;
    char err[256];
    rules_set *p1, *q1, *p2, *q2;
    verify_stats s1, s2;
    CHECK_EQ_INT(verify_run(ax, &cfg, rs, &p1, &q1, &s1, err, sizeof err), 0);
    CHECK_EQ_INT(s1.cached, 0);
    CHECK(access(path, R_OK) == 0);
    CHECK_EQ_INT(verify_run(ax, &cfg, rs, &p2, &q2, &s2, err, sizeof err), 0);
    CHECK_EQ_INT(s2.cached, rs->n_rules);
    CHECK_EQ_INT(s2.proved, s1.proved);
    char *t1 = rules_to_json_string(p1), *t2 = rules_to_json_string(p2);
    CHECK(t1 && t2 && !strcmp(t1, t2)); /* byte for byte, proof times included */
    free(t1);
    free(t2);
    rules_set_free(p1);
    rules_set_free(q1);
    rules_set_free(p2);
    rules_set_free(q2);
    /* unknowns (Z3 alone on the planted rules) are reused only by runs with no longer a timeout */
    cfg.numeric_check = 0;
    cfg.timeout_s = 1.0;
    CHECK_EQ_INT(verify_run(ax, &cfg, pl, &p1, &q1, &s1, err, sizeof err), 0);
    CHECK_EQ_INT(s1.cached, 0);
    rules_set_free(p1);
    rules_set_free(q1);
    cfg.timeout_s = 0.5;
    CHECK_EQ_INT(verify_run(ax, &cfg, pl, &p1, &q1, &s1, err, sizeof err), 0);
    CHECK_EQ_INT(s1.cached, pl->n_rules);
    rules_set_free(p1);
    rules_set_free(q1);
    cfg.timeout_s = 2.0;
    CHECK_EQ_INT(verify_run(ax, &cfg, pl, &p1, &q1, &s1, err, sizeof err), 0);
    CHECK_EQ_INT(s1.cached, 0);
    rules_set_free(p1);
    rules_set_free(q1);
    /* a file that is not a cache is an error, not overwritten */
    FILE *f = fopen(path, "w");
    fputs("something else\n", f);
    fclose(f);
    CHECK_EQ_INT(verify_run(ax, &cfg, rs, &p1, &q1, &s1, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "not a verification cache");
    remove(path);
    rmdir(dir);
    rules_set_free(rs);
    rules_set_free(pl);
}

/* The same outcomes and cores whatever the thread count (the 3-op candidates: many chunks of
 * VERIFY_CHUNK, taken by the threads in different orders). */
static void test_threads(const verify_axioms *ax) {
    gen_config gc;
    gen_config_default(&gc);
    gc.max_ops = 3;
    gc.threads = 2;
    rules_set *rs = NULL;
    char err[256];
    CHECK_EQ_INT(gen_run(&gc, &rs, NULL, err, sizeof err), 0);
    if (!rs)
        return;
    verify_result *a = calloc((size_t)rs->n_rules, sizeof *a), *b = calloc((size_t)rs->n_rules, sizeof *b);
    verify_stats st;
    run_set(ax, rs, 1, 10.0, 1, a, &st);
    CHECK(st.proved >= rs->n_rules - 10); /* 1,210 of 1,216 (rules/MANIFEST) */
    run_set(ax, rs, 1, 10.0, 2, b, &st);
    int same = 1;
    for (int32_t i = 0; i < rs->n_rules; i++) {
        same &= a[i].outcome == b[i].outcome && a[i].n_core == b[i].n_core;
        for (int32_t k = 0; k < a[i].n_core && k < b[i].n_core; k++)
            same &= a[i].core[k] == b[i].core[k];
    }
    CHECK(same);
    free(a);
    free(b);
    rules_set_free(rs);
}

static void test_egg(void) {
    rules_set *rs = load_rules("tests/data/verify/true.json");
    if (!rs)
        return;
    char err[256];
    int64_t skipped = -1;
    char *t = verify_export_egg(rs, &skipped, err, sizeof err);
    CHECK(t != NULL);
    if (t) {
        CHECK_STR_CONTAINS(t, "(ewadd ?x ?y)=>(ewadd ?y ?x)\n");
        CHECK_STR_CONTAINS(t, "(matmul 0 (matmul 0 ?x ?w1) ?w2)=>(matmul 0 ?x (matmul 0 ?w1 ?w2))\n");
        CHECK_STR_CONTAINS(t, "(relu (conv2d 1 1 1 1 0 ?a ?k))=>(conv2d 1 1 1 1 1 ?a ?k)\n");
        CHECK_STR_CONTAINS(t, "(split0 0 2 (concat 0 ?x ?y))=>?x\n");
        CHECK_STR_CONTAINS(t, "(split1 0 2 (concat 0 ?x ?y))=>?y\n");
        CHECK_STR_CONTAINS(t, "(transpose 10 (transpose 10 ?x))=>?x\n");
        CHECK_STR_CONTAINS(t, "(concat 1 (concat 1 ?x ?y) ?z)=>(concat 1 ?x (concat 1 ?y ?z))\n");
        int lines = 0;
        for (const char *p = t; *p; p++)
            lines += *p == '\n';
        CHECK_EQ_INT(lines + skipped, 12); /* 11 rules, one with two outputs */
        CHECK_EQ_INT(skipped, 0);
        free(t);
    }
    rules_set_free(rs);
}

/* The model's concrete typing agrees with the op table; the symbolic solver eliminates equations. */
static void test_model(void) {
    vsys S;
    vsys_init(&S);
    int32_t a = vsys_new_sym(&S, VS_DIM), b = vsys_new_sym(&S, VS_DIM), c = vsys_new_sym(&S, VS_DIM);
    vsys_require_eq(&S, vsys_add(&S, vx_sym(a), vx_sym(b)), vx_sym(c)); /* a + b = c */
    vsys_require_eq(&S, vx_sym(a), vx_num(2));                          /* a = 2 */
    vsys_require(&S, VC_GE, vsys_sub(&S, vx_sym(b), vx_num(1)));         /* b >= 1 */
    vsys_solve(&S);
    CHECK(!S.infeasible);
    int64_t val[3] = {0, 5, 0};
    CHECK_EQ_INT(vsys_eval(&S, vsys_apply(&S, vx_sym(c)), val), 7);
    CHECK_EQ_INT(vsys_eval(&S, vsys_apply(&S, vx_sym(a)), val), 2);
    vsys_require_eq(&S, vx_num(1), vx_num(2));
    CHECK(S.infeasible);
    /* conv2d, stride 2, 'same', on constants: the op table's output size */
    vsys_init(&S);
    ops_params p;
    ops_params_default(OP_CONV2D, &p);
    p.v[PM_STRIDE_H] = p.v[PM_STRIDE_W] = 2;
    p.v[PM_PAD] = OPS_PAD_SAME;
    vparams vp;
    vparams_from(&vp, &p);
    vshape in[2] = {{4, {vx_num(1), vx_num(2), vx_num(5), vx_num(4)}}, {4, {vx_num(3), vx_num(2), vx_num(3), vx_num(3)}}};
    vshape out[1];
    int32_t n_out;
    char why[128];
    CHECK_EQ_INT(vm_infer(&S, OP_CONV2D, &vp, 2, in, &n_out, out, why, sizeof why), VM_OK);
    int64_t h = 0, w = 0;
    CHECK(vx_is_num(&out[0].d[2], &h) && vx_is_num(&out[0].d[3], &w));
    ops_shape xs = ops_shape_make(4, (int64_t[]){1, 2, 5, 4}), ws = ops_shape_make(4, (int64_t[]){3, 2, 3, 3});
    ops_shape os[1], ins[2] = {xs, ws};
    int32_t no;
    CHECK_EQ_INT(ops_infer(OP_CONV2D, &p, 2, ins, &no, os, NULL, 0), 0);
    CHECK_EQ_INT(h, os[0].dims[2]);
    CHECK_EQ_INT(w, os[0].dims[3]);
    /* a channel mismatch is ill typed; broadcasting and batched matmul are outside the model */
    in[1].d[1] = vx_num(3);
    vsys_init(&S);
    CHECK_EQ_INT(vm_infer(&S, OP_CONV2D, &vp, 2, in, &n_out, out, why, sizeof why), VM_ILLTYPED);
    ops_params pm;
    ops_params_default(OP_MATMUL, &pm);
    vparams_from(&vp, &pm);
    vshape m3[2] = {{3, {vx_num(2), vx_num(2), vx_num(3)}}, {3, {vx_num(2), vx_num(3), vx_num(2)}}};
    vsys_init(&S);
    CHECK_EQ_INT(vm_infer(&S, OP_MATMUL, &vp, 2, m3, &n_out, out, why, sizeof why), VM_UNSUPPORTED);
    /* signatures: names and perm codes */
    char nm[64];
    CHECK(!strcmp(vsig_name(vsig_find(OP_SPLIT, 1, 0), nm, sizeof nm), "split1"));
    CHECK(!strcmp(vsig_name(vsig_find(OP_CONST_ONES, 0, 4), nm, sizeof nm), "const_ones4"));
    int64_t list[OPS_MAX_DIMS];
    CHECK_EQ_INT(vsig_perm_decode(10, 2, list), 0);
    CHECK(list[0] == 1 && list[1] == 0);
    CHECK_EQ_INT(vsig_perm_decode(1023, 3, list), -1);
}

/* Every shipped rule proved again; the 3-op set regenerated and verified equal to the shipped one. */
static int rule_lines_equal(const char *a, const char *b) {
    /* compare from the "rules" member on, with the measured proof times taken out */
    const char *ra = strstr(a, "\"rules\":"), *rb = strstr(b, "\"rules\":");
    if (!ra || !rb)
        return 0;
    while (*ra && *rb) {
        if (!strncmp(ra, "\"time_s\":", 9) && !strncmp(rb, "\"time_s\":", 9)) {
            ra += 9;
            rb += 9;
            while ((*ra >= '0' && *ra <= '9') || *ra == '.')
                ra++;
            while ((*rb >= '0' && *rb <= '9') || *rb == '.')
                rb++;
            continue;
        }
        if (*ra != *rb)
            return 0;
        ra++;
        rb++;
    }
    return *ra == *rb;
}

/* The free split marks of a shipped file proved again: the rules verify_mark_free_splits marks
 * are exactly the marked ones (a mark is a stronger theorem than the rule's own proof). */
static void check_free_marks(const verify_axioms *ax, const rules_set *rs, const char *file) {
    rules_set *marked = NULL;
    verify_config cfg;
    verify_config_default(&cfg);
    char err[256];
    CHECK_EQ_INT(verify_mark_free_splits(ax, &cfg, rs, &marked, NULL, err, sizeof err), 0);
    if (!marked)
        return;
    int32_t n_marked = 0, differ = 0;
    for (int32_t i = 0; i < rs->n_rules && i < marked->n_rules; i++) {
        n_marked += rs->rules[i].split_free;
        if (rs->rules[i].split_free != marked->rules[i].split_free) {
            if (differ++ < 5)
                fprintf(stderr, "  %s: rule %s marked free %d, proved free %d\n", file, rs->rules[i].id,
                        rs->rules[i].split_free, marked->rules[i].split_free);
        }
    }
    CHECK_EQ_INT(marked->n_rules, rs->n_rules);
    CHECK_EQ_INT(differ, 0);
    CHECK(n_marked > 0);
    printf("test_verify: %s: %d free split marks proved again\n", file, (int)n_marked);
    rules_set_free(marked);
}

/* The shipped sets proved again: the 3-op one and the default 4-op one (the full proved set less
 * the rules one move of a kept rule derives: verifier/ship_prune.sh; cli_verify.sh checks that it
 * is exactly that prune of rules/verified-4-full.json.xz). */
static void test_shipped(const verify_axioms *ax) {
    const char *files[] = {"rules/verified-3.json", "rules/verified-4.json"};
    for (int f = 0; f < 2; f++) {
        rules_set *rs = load_rules(files[f]);
        CHECK(rs != NULL);
        if (!rs)
            continue;
        CHECK(rs->n_rules > 0);
        verify_result *res = calloc((size_t)rs->n_rules, sizeof *res);
        verify_stats st;
        double t0 = base_now();
        run_set(ax, rs, 1, 10.0, 0, res, &st);
        CHECK_EQ_INT(st.proved, rs->n_rules);
        if (st.proved != rs->n_rules)
            for (int32_t i = 0; i < rs->n_rules; i++)
                if (res[i].outcome != VERIFY_PROVED)
                    fprintf(stderr, "  %s: shipped rule %s not proved: %s\n", files[f], rs->rules[i].id, res[i].reason);
        printf("test_verify: %s: %d rules proved again in %.1f s\n", files[f], (int)st.proved, base_now() - t0);
        free(res);
        check_free_marks(ax, rs, files[f]);
        rules_set_free(rs);
    }
    /* regenerate the 3-op candidates, verify them, compare with the shipped file */
    gen_config gc;
    gen_config_default(&gc);
    gc.max_ops = 3;
    rules_set *cands = NULL, *p = NULL, *q = NULL;
    char err[256];
    CHECK_EQ_INT(gen_run(&gc, &cands, NULL, err, sizeof err), 0);
    if (!cands)
        return;
    verify_config cfg;
    verify_config_default(&cfg);
    cfg.mark_free_splits = 1; /* as verifier/ship.sh makes the shipped files */
    verify_stats st;
    CHECK_EQ_INT(verify_run(ax, &cfg, cands, &p, &q, &st, err, sizeof err), 0);
    char *shipped = read_file("rules/verified-3.json");
    char *mine = p ? rules_to_json_string(p) : NULL;
    CHECK(shipped && mine && rule_lines_equal(shipped, mine));
    if (shipped && mine && !rule_lines_equal(shipped, mine))
        fprintf(stderr, "  the regenerated 3-op rules differ from rules/verified-3.json (regenerate with the "
                        "commands in rules/MANIFEST)\n");
    free(shipped);
    free(mine);
    rules_set_free(p);
    rules_set_free(q);
    rules_set_free(cands);
}

int main(void) {
    test_model();
    test_axiom_file();
    verify_axioms *ax = load_axioms();
    CHECK(ax != NULL);
    if (ax) {
        test_true_rules(ax);
        test_planted(ax);
        test_shape_counterexample(ax);
        test_outside_model(ax);
        test_generated_identity_and_sizes(ax);
        test_cache(ax);
        test_threads(ax);
        test_shipped(ax);
    }
    test_timeout();
    test_egg();
    verify_axioms_free(ax);
    return TEST_REPORT();
}
