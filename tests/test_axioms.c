/* test_axioms.c: `tasc axioms check` (verify_axioms_check): the shipped axioms pass on small
 * shapes with every axiom instantiated at least once and no false equality proved; deliberately
 * false axioms are caught (a wrong equality, a missing side condition, a trigger that makes an
 * ill-typed term, one without any legal instantiation), an inconsistent set is caught by the
 * probe, and the redundancy report finds a duplicated axiom. The ill-shaped pass: the identity,
 * ones and iconv axioms without their size conditions fail it; and an added axiom that builds
 * matmul(I_n, I_n+1) no longer proves the false w * I = w (it did before the size conditions,
 * which the test shows by taking them out again). Run from the source tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "test.h"
#include "verify.h"

static const verify_axiom_report *find(const verify_check_report *rep, const char *name) {
    for (int32_t i = 0; i < rep->n_axioms; i++)
        if (!strcmp(rep->axioms[i].name, name))
            return &rep->axioms[i];
    return NULL;
}

/* The real axiom file with `extra` appended; the report (caller frees) and the return code. */
static verify_check_report *check_with(const char *extra, const verify_check_config *cfg, int *rc) {
    char err[512];
    verify_axioms *base = verify_axioms_load("verifier/axioms.smt2", err, sizeof err);
    CHECK(base != NULL);
    if (!base) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    size_t n = strlen(verify_axioms_text(base)) + strlen(extra) + 2;
    char *text = malloc(n);
    snprintf(text, n, "%s\n%s", verify_axioms_text(base), extra);
    verify_axioms_free(base);
    verify_axioms *ax = verify_axioms_from_string(text, "test.smt2", err, sizeof err);
    free(text);
    CHECK(ax != NULL);
    if (!ax) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    verify_check_report *rep = malloc(sizeof *rep);
    *rc = verify_axioms_check(ax, cfg, rep, err, sizeof err);
    if (*rc < 0)
        fprintf(stderr, "check: %s\n", err);
    verify_axioms_free(ax);
    return rep;
}

static void test_shipped_axioms(void) {
    verify_check_config cfg;
    verify_check_config_default(&cfg);
    cfg.max_dim = 2;         /* every dim 1..2, kernels 1 and 3: quick under the sanitizers */
    cfg.max_instances = 150;
    cfg.ill_bases = 100;
    cfg.redundancy_timeout_s = 1.0;
    int rc = -1;
    verify_check_report *rep = check_with("", &cfg, &rc);
    if (!rep)
        return;
    CHECK_EQ_INT(rc, 0);
    CHECK(rep->n_axioms >= 43);
    CHECK_EQ_INT(rep->failed_axioms, 0);
    CHECK_EQ_INT(rep->failed_ill, 0);
    CHECK_EQ_INT(rep->failed_probes, 0);
    CHECK(rep->n_probes >= 10);
    int64_t ill = 0;
    for (int32_t i = 0; i < rep->n_axioms; i++) {
        ill += rep->axioms[i].ill_instances;
        if (rep->axioms[i].ill_failures)
            fprintf(stderr, "  %s: %s\n", rep->axioms[i].name, rep->axioms[i].ill_first_failure);
    }
    CHECK(ill >= 1000); /* the ill-shaped pass ran */
    /* the size conditions exclude every ill-shaped instance of the identity axioms */
    const verify_axiom_report *imm = find(rep, "matmul_imm_r");
    CHECK(imm && imm->ill_instances >= 1 && imm->ill_excluded == imm->ill_instances);
    int implied = 0, evaluated = 1;
    for (int32_t i = 0; i < rep->n_axioms; i++) {
        const verify_axiom_report *a = &rep->axioms[i];
        CHECK(a->instances >= 1);
        evaluated &= a->evaluated >= 1;
        if (a->failures)
            fprintf(stderr, "  %s: %s\n", a->name, a->first_failure);
        implied += a->redundancy == VERIFY_RED_IMPLIED;
        CHECK(a->redundancy != VERIFY_RED_SKIPPED);
    }
    CHECK(evaluated);
    CHECK(implied >= 1); /* split_*0 follow from concat_split and the concat axioms */
    for (int32_t k = 0; k < rep->n_probes; k++)
        CHECK(rep->probes[k].outcome != VERIFY_PROVED);
    free(rep);
}

/* Each false axiom is appended alone; it must fail with the expected kind of message. */
static void test_false_axioms(void) {
    static const struct {
        const char *name, *text, *want;
    } cases[] = {
        {"relu_smul_wrong",
         ";; relu of x times s is x times relu of s (false for negative x)\n"
         "(assert (! (forall ((x T) (s T)) (! (= (relu (smul x s)) (smul x (relu s))) :pattern ((relu (smul x s))))) "
         ":named relu_smul_wrong))\n",
         "differ"},
        {"concat_comm_wrong",
         ";; concat commutes (false)\n"
         "(assert (! (forall ((ax Int) (x T) (y T)) (! (= (concat ax x y) (concat ax y x)) :pattern ((concat ax x y)))) "
         ":named concat_comm_wrong))\n",
         "differ"},
        {"split0_nocond",
         ";; the first part of a concat is its first input (the seam condition left out)\n"
         "(assert (! (forall ((ax Int) (n Int) (x T) (y T)) (! (= (split0 ax n (concat ax x y)) x) "
         ":pattern ((split0 ax n (concat ax x y))))) :named split0_nocond))\n",
         "shapes"},
        {"enlarge_ewadd_nocond",
         ";; enlarge distributes over ewadd (the kernel-size condition left out)\n"
         "(assert (! (forall ((kh Int) (kw Int) (x T) (y T)) (! (= (enlarge kh kw (ewadd x y)) "
         "(ewadd (enlarge kh kw x) (enlarge kh kw y))) :pattern ((ewadd (enlarge kh kw x) (enlarge kh kw y))))) "
         ":named enlarge_ewadd_nocond))\n",
         "is not"},
        {"conv_enlarge_stride2",
         ";; enlarging the kernel of a stride-2 'same' conv2d changes nothing (false: the padding moves)\n"
         "(assert (! (forall ((g Int) (a Int) (kh Int) (kw Int) (x T) (y T)) (! (= (conv2d 2 2 SAME g a x (enlarge kh "
         "kw y)) (conv2d 2 2 SAME g a x y)) :pattern ((conv2d 2 2 SAME g a x (enlarge kh kw y))))) "
         ":named conv_enlarge_stride2))\n",
         "differ"},
        {"never_typed",
         ";; a transpose with a perm the model does not have: no legal instantiation\n"
         "(assert (! (forall ((x T)) (! (= (transpose 5 x) x) :pattern ((transpose 5 x)))) :named never_typed))\n",
         "no legal instantiation"},
    };
    verify_check_config cfg;
    verify_check_config_default(&cfg);
    cfg.max_dim = 2;
    cfg.max_instances = 50;
    cfg.ill_bases = 0;            /* the ill-shaped pass has its own test */
    cfg.redundancy_timeout_s = 0; /* not needed here */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int rc = -1;
        verify_check_report *rep = check_with(cases[c].text, &cfg, &rc);
        if (!rep)
            continue;
        CHECK_EQ_INT(rc, 1);
        CHECK_EQ_INT(rep->failed_axioms, 1);
        const verify_axiom_report *a = find(rep, cases[c].name);
        CHECK(a != NULL);
        if (a) {
            CHECK(a->failures >= 1);
            CHECK_STR_CONTAINS(a->first_failure, cases[c].want);
        }
        free(rep);
    }
}

/* An inconsistent set: the probe proves a false equality; a duplicate is reported as implied. */
static void test_probe_and_redundancy(void) {
    verify_check_config cfg;
    verify_check_config_default(&cfg);
    cfg.max_dim = 1;
    cfg.max_instances = 10;
    cfg.ill_bases = 20;
    cfg.redundancy_timeout_s = 1.0;
    int rc = -1;
    verify_check_report *rep =
        check_with(";; ewadd absorbs (false)\n(assert (! (forall ((x T) (y T)) (! (= (ewadd x y) x) :pattern "
                   "((ewadd x y)))) :named absorb))\n",
                   &cfg, &rc);
    if (rep) {
        CHECK_EQ_INT(rc, 1);
        CHECK(rep->failed_probes >= 1);
        int found = 0;
        for (int32_t k = 0; k < rep->n_probes; k++)
            if (!strcmp(rep->probes[k].name, "ewadd(x,y) = x")) {
                found = 1;
                CHECK(rep->probes[k].outcome == VERIFY_PROVED);
                CHECK_STR_CONTAINS(rep->probes[k].reason, "absorb");
            }
        CHECK(found);
        free(rep);
    }
    cfg.max_dim = 2; /* every axiom needs a legal instantiation to pass (splits need a dim of 2) */
    rep = check_with(";; ewadd commutes, again\n(assert (! (forall ((x T) (y T)) (! (= (ewadd x y) (ewadd y x)) "
                     ":pattern ((ewadd x y)))) :named ewadd_comm_again))\n",
                     &cfg, &rc);
    if (rep) {
        CHECK_EQ_INT(rc, 0);
        const verify_axiom_report *a = find(rep, "ewadd_comm_again");
        CHECK(a && a->redundancy == VERIFY_RED_IMPLIED);
        CHECK(a && strstr(a->implied_by, "ewadd_comm"));
        free(rep);
    }
}

/* The shipped axioms with the size conditions taken out again (each as it was before them): one
 * axiom text replaced; the result (caller frees) or NULL when the axiom is not found. */
static char *unguard(const char *text, const char *guarded, const char *bare) {
    const char *at = strstr(text, guarded);
    CHECK(at != NULL);
    if (!at) {
        fprintf(stderr, "  the axiom file no longer holds: %.80s...\n", guarded);
        return NULL;
    }
    size_t n = strlen(text) - strlen(guarded) + strlen(bare) + 1, pre = (size_t)(at - text);
    char *out = malloc(n);
    memcpy(out, text, pre);
    snprintf(out + pre, n - pre, "%s%s", bare, at + strlen(guarded));
    return out;
}

static const struct {
    const char *name, *guarded, *bare;
} ct_unguarded[] = {
    {"matmul_imm_r",
     "(! (=> (= (dim x 1) n) (= (matmul NONE x (const_imm n)) x)) :pattern",
     "(! (= (matmul NONE x (const_imm n)) x) :pattern"},
    {"matmul_imm_l",
     "(! (=> (= (dim x 0) n) (= (matmul NONE (const_imm n) x) x)) :pattern",
     "(! (= (matmul NONE (const_imm n) x) x) :pattern"},
    {"conv_iconv",
     "(! (=> (= (dim x 1) c) (= (conv2d 1 1 SAME 1 NONE x (const_iconv c kh kw)) x)) :pattern",
     "(! (= (conv2d 1 1 SAME 1 NONE x (const_iconv c kh kw)) x) :pattern"},
    {"concat_ewadd",
     "(! (=> (and (= (dim x ax) (dim y ax)) (= (dim z ax) (dim w ax))) (= (concat ax (ewadd x y) (ewadd z w))",
     "(! (=> (= (dim x ax) (dim y ax)) (= (concat ax (ewadd x y) (ewadd z w))"},
    {"split1_concat",
     "(! (=> (and (= n (dim x ax)) (or (= ax 0) (= (dim x 0) (dim y 0))) (or (= ax 1) (= (dim x 1) (dim y 1))) "
     "(or (= ax 2) (= (dim x 2) (dim y 2))) (or (= ax 3) (= (dim x 3) (dim y 3)))) (= (split1 ax n (concat ax x y)) y))",
     "(! (=> (= n (dim x ax)) (= (split1 ax n (concat ax x y)) y))"},
};

/* Each size condition taken out alone: the ill-shaped pass (and only it) fails that axiom. */
static void test_ill_shaped(void) {
    char err[512];
    verify_axioms *base = verify_axioms_load("verifier/axioms.smt2", err, sizeof err);
    CHECK(base != NULL);
    if (!base)
        return;
    verify_check_config cfg;
    verify_check_config_default(&cfg);
    cfg.max_dim = 2;
    cfg.max_instances = 50;
    cfg.ill_bases = 20;
    cfg.redundancy_timeout_s = 0;
    for (size_t c = 0; c < sizeof ct_unguarded / sizeof ct_unguarded[0]; c++) {
        char *text = unguard(verify_axioms_text(base), ct_unguarded[c].guarded, ct_unguarded[c].bare);
        verify_axioms *ax = text ? verify_axioms_from_string(text, "unguarded.smt2", err, sizeof err) : NULL;
        free(text);
        CHECK(ax != NULL);
        if (!ax)
            continue;
        verify_check_report *rep = malloc(sizeof *rep);
        CHECK_EQ_INT(verify_axioms_check(ax, &cfg, rep, err, sizeof err), 1);
        CHECK_EQ_INT(rep->failed_axioms, 1);
        CHECK_EQ_INT(rep->failed_ill, 1);
        const verify_axiom_report *a = find(rep, ct_unguarded[c].name);
        CHECK(a && a->failures == 0 && a->ill_failures >= 1 && a->ill_instances >= a->ill_failures);
        if (a)
            CHECK_STR_CONTAINS(a->ill_first_failure, "ill-shaped");
        free(rep);
        verify_axioms_free(ax);
    }
    verify_axioms_free(base);
}

/* The derivation: an added axiom whose trigger builds matmul(I_n, I_n+1) from any I_n.
 * matmul_imm_l and matmul_imm_r without their size conditions made it I_n+1 and I_n, so I_n =
 * I_n+1, 2 = 3 through dim_const_imm, and any goal followed. */
static const char *ct_imm_chain =
    ";; relu keeps a product of identity matrices of sizes n and n+1 (ill shaped)\n"
    "(assert (! (forall ((n Int)) (! (= (relu (matmul NONE (const_imm n) (const_imm (+ n 1)))) "
    "(matmul NONE (const_imm n) (const_imm (+ n 1)))) :pattern ((const_imm n)))) :named imm_chain))\n";

static const char *ct_w_times_i =
    "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":0,\"counts\":{},\"rules\":["
    "{\"id\":\"w_times_i\",\"vars\":[{\"name\":\"w\",\"shape\":[3,3]}],"
    "\"src\":[{\"op\":\"const_imm\",\"params\":{\"n\":3},\"inputs\":[]},{\"op\":\"ewmul\",\"inputs\":[\"w\",\"%0\"]}],"
    "\"dst\":[],\"outputs\":[{\"src\":\"%1\",\"dst\":\"w\"}],\"constraints\":[{\"side\":\"src\",\"op\":0,"
    "\"param\":\"n\",\"value\":3,\"equals\":[[\"w\",0],[\"w\",1]]}]}]}";

/* Z3 alone (no numeric check, no shape search) on w * I = w under `text` + imm_chain. */
static verify_outcome prove_w_times_i(const char *text) {
    char err[512];
    size_t n = strlen(text) + strlen(ct_imm_chain) + 2;
    char *joined = malloc(n);
    snprintf(joined, n, "%s\n%s", text, ct_imm_chain);
    verify_axioms *ax = verify_axioms_from_string(joined, "imm_chain.smt2", err, sizeof err);
    free(joined);
    rules_set *rs = rules_from_json_string(ct_w_times_i, "w_times_i", err, sizeof err);
    CHECK(ax != NULL && rs != NULL);
    verify_outcome out = VERIFY_OUTCOME_COUNT;
    if (ax && rs) {
        verify_config cfg;
        verify_config_default(&cfg);
        cfg.numeric_check = 0;
        cfg.threads = 1;
        cfg.timeout_s = 5.0;
        verify_result res;
        verify_stats st;
        CHECK_EQ_INT(verify_candidates(ax, &cfg, rs, &res, &st, err, sizeof err), 0);
        out = res.outcome;
    }
    rules_set_free(rs);
    verify_axioms_free(ax);
    return out;
}

static void test_imm_chain(void) {
    char err[512];
    verify_axioms *base = verify_axioms_load("verifier/axioms.smt2", err, sizeof err);
    CHECK(base != NULL);
    if (!base)
        return;
    /* with the size conditions: not proved */
    CHECK(prove_w_times_i(verify_axioms_text(base)) != VERIFY_PROVED);
    /* without those of matmul_imm_l and matmul_imm_r: proved (the derivation the conditions stop) */
    char *t1 = unguard(verify_axioms_text(base), ct_unguarded[0].guarded, ct_unguarded[0].bare);
    char *t2 = t1 ? unguard(t1, ct_unguarded[1].guarded, ct_unguarded[1].bare) : NULL;
    if (t2)
        CHECK(prove_w_times_i(t2) == VERIFY_PROVED);
    free(t1);
    free(t2);
    verify_axioms_free(base);
}

int main(void) {
    test_shipped_axioms();
    test_false_axioms();
    test_probe_and_redundancy();
    test_ill_shaped();
    test_imm_chain();
    return TEST_REPORT();
}
