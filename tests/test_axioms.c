/* test_axioms.c: `tasc axioms check` (verify_axioms_check): the shipped axioms pass on small
 * shapes with every axiom instantiated at least once and no false equality proved; deliberately
 * false axioms are caught (a wrong equality, a missing side condition, a trigger that makes an
 * ill-typed term, one without any legal instantiation), an inconsistent set is caught by the
 * probe, and the redundancy report finds a duplicated axiom. Run from the source tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    cfg.redundancy_timeout_s = 1.0;
    int rc = -1;
    verify_check_report *rep = check_with("", &cfg, &rc);
    if (!rep)
        return;
    CHECK_EQ_INT(rc, 0);
    CHECK(rep->n_axioms >= 43);
    CHECK_EQ_INT(rep->failed_axioms, 0);
    CHECK_EQ_INT(rep->failed_probes, 0);
    CHECK(rep->n_probes >= 10);
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

int main(void) {
    test_shipped_axioms();
    test_false_axioms();
    test_probe_and_redundancy();
    return TEST_REPORT();
}
