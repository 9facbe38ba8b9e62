/* verify_free.c: free split sizes (verify.h verify_mark_free_splits, rules/match.h "Free split
 * sizes").
 *
 * A generated split of two equal parts (sizes []) was proved with its input dim d = 2q and the cut
 * at q. Many such rules (relu across a split, an elementwise op across two splits) hold for any
 * cut; the matcher may bind splits of unequal parts only where that is proved. Here each rule with
 * such splits is proved again in the free mode of verify_z3.c (every one cut at [n, d - n] for one
 * fresh n, the hypotheses bounding n only by typing), its numeric check made at a cut of n = 1,
 * and the proved ones are marked "split_sizes": "free". Nothing else of the rule file changes.
 */
#include <stdlib.h>
#include <string.h>

#include "verify_impl.h"

int verify_split_is_equal2(const rules_rule *r, int side, int32_t k) {
    const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
    if (k < 0 || k >= g->n_ops)
        return 0;
    const rules_op *o = &g->ops[k];
    if (o->op != OP_SPLIT || o->p.n_list != 0 || o->p.v[PM_PARTS] != 2)
        return 0;
    for (int32_t i = 0; i < r->n_constraints; i++)
        if ((int)r->constraints[i].side == side && r->constraints[i].op == k && r->constraints[i].key == PM_LIST)
            return 0;
    return 1;
}

/* Cut the equal two-way splits of one side of c at [1, d - 1], typing its ops in order from the
 * variables' shapes. *unequal is set when some d is at least 3. 0, or -1 when an op does not
 * type-check. */
static int vf_cut_side(rules_rule *c, int side, int *unequal) {
    rules_graph *g = side == RULES_SIDE_SRC ? &c->src : &c->dst;
    ops_shape sh[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < g->n_ops; k++) {
        rules_op *o = &g->ops[k];
        ops_shape in[RULES_MAX_IN];
        for (int32_t i = 0; i < o->n_in; i++)
            in[i] = o->in[i].kind == RULES_REF_VAR ? c->vars[o->in[i].idx].shape : sh[o->in[i].idx][o->in[i].out];
        if (verify_split_is_equal2(c, side, k)) {
            int64_t ax = o->p.v[PM_AXIS];
            if (o->n_in < 1 || ax < 0 || ax >= in[0].rank || in[0].dims[ax] < 2)
                return -1;
            *unequal |= in[0].dims[ax] >= 3;
            o->p.n_list = 2;
            o->p.list[0] = 1;
            o->p.list[1] = in[0].dims[ax] - 1;
        }
        int32_t n_out = 0;
        if (ops_infer(o->op, &o->p, o->n_in, in, &n_out, sh[k], NULL, 0) < 0)
            return -1;
    }
    return 0;
}

int verify_free_cut(const rules_rule *r, rules_rule *c) {
    *c = *r; /* shares r's strings: never freed through c */
    int unequal = 0;
    if (vf_cut_side(c, RULES_SIDE_SRC, &unequal) < 0 || vf_cut_side(c, RULES_SIDE_DST, &unequal) < 0 || !unequal)
        return -1;
    char m[256]; /* every op typed, the mapped outputs of equal shapes */
    return rules_rule_check(c, m, sizeof m) < 0 ? -1 : 0;
}

static int vf_has_equal2(const rules_rule *r) {
    for (int side = 0; side < RULES_SIDE_COUNT; side++) {
        const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++)
            if (verify_split_is_equal2(r, side, k))
                return 1;
    }
    return 0;
}

/* A copy of rs: manifest and rules (the markers as they are). NULL when out of memory. */
static rules_set *vf_copy(const rules_set *rs) {
    rules_set *d = rules_set_manifest_copy(rs);
    int bad = !d;
    for (int32_t i = 0; i < (d ? rs->n_rules : 0) && !bad; i++)
        bad |= rules_set_add(d, &rs->rules[i]) < 0;
    if (bad) {
        rules_set_free(d);
        return NULL;
    }
    return d;
}

int verify_mark_free_splits(const verify_axioms *ax, const verify_config *cfg, const rules_set *rs,
                            rules_set **marked, verify_stats *st, char *err, size_t errlen) {
    *marked = NULL;
    rules_set *out = vf_copy(rs), *cands = rules_set_new();
    int32_t *at = calloc((size_t)(rs->n_rules ? rs->n_rules : 1), sizeof *at);
    verify_result *res = calloc((size_t)(rs->n_rules ? rs->n_rules : 1), sizeof *res);
    int rc = !out || !cands || !at || !res ? base_fail_line(err, errlen, "out of memory") : 0;
    for (int32_t i = 0; i < rs->n_rules && rc == 0; i++) /* the candidates: rules with an equal cut */
        if (vf_has_equal2(&rs->rules[i])) {
            at[cands->n_rules] = i;
            if (rules_set_add(cands, &rs->rules[i]) < 0)
                rc = base_fail_line(err, errlen, "out of memory");
        }
    verify_config fc = *cfg;
    fc.split_sizes_free = 1;
    verify_stats s;
    memset(&s, 0, sizeof s);
    if (rc == 0)
        rc = verify_candidates(ax, &fc, cands, res, &s, err, errlen);
    for (int32_t j = 0; j < cands->n_rules && rc == 0; j++)
        out->rules[at[j]].split_free = res[j].outcome == VERIFY_PROVED;
    if (rc == 0 && (rules_set_count(out, "split_free_tried", (uint64_t)cands->n_rules) < 0 ||
                    rules_set_count(out, "split_free_proved", (uint64_t)s.proved) < 0))
        rc = base_fail_line(err, errlen, "more than %d counts in the manifest", RULES_MAX_COUNTS);
    free(at);
    free(res);
    rules_set_free(cands);
    if (rc < 0) {
        rules_set_free(out);
        return -1;
    }
    if (st)
        *st = s;
    *marked = out;
    return 0;
}
