/* verify_egg.c: a rule set as S-expression rewrites for Tensat/egg.
 *
 * One line "LHS=>RHS" per mapped output of each rule, in rule order. Terms use the functions of
 * verifier/axioms.smt2 with the same arguments (integer parameters first, as literals, then the
 * tensor inputs): (conv2d 1 1 1 1 0 ?a0 ?k0), (concat 0 ?x0 ?x1), (split0 0 2 ?x), ... A concat of
 * more than two inputs is nested to the left and a split is cut into split0/split1 pieces, as
 * the verifier encodes them; sizes a rule ties to its variables' dims are written at the values
 * they had where the rule was found. Variables are ?name. egg needs every variable of the right
 * side on the left and a left side that is not a bare variable: an output that cannot be written
 * that way in either direction is left out (counted in *skipped). The text is owned by the caller.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_impl.h"

/* Output sizes of an op along its split axis, computed from the rule's recorded shapes. */
static int eg_term(verify_buf *b, const rules_rule *r, const rules_graph *g, rules_ref ref,
                   ops_shape shapes[RULES_MAX_OPS][OPS_MAX_OUTPUTS], uint32_t *vars, char *err, size_t errlen);

/* split output `out` of op k: the pieces split0/split1 of the remaining tensor, as in verify_z3.c. */
static int eg_split(verify_buf *b, const rules_rule *r, const rules_graph *g, int32_t k, int32_t out,
                    ops_shape shapes[RULES_MAX_OPS][OPS_MAX_OUTPUTS], uint32_t *vars, char *err, size_t errlen) {
    const rules_op *o = &g->ops[k];
    int64_t ax = o->p.v[PM_AXIS];
    int32_t n_out = o->n_out;
    /* out j < n-1: split0(ax, size_j, rest_j); rest_{j+1} = split1(ax, size_j, rest_j) */
    int32_t opens = 0;
    if (out < n_out - 1) {
        verify_buf_printf(b, "(split0 %lld %lld ", (long long)ax, (long long)shapes[k][out].dims[ax]);
        opens++;
    }
    for (int32_t j = (out < n_out - 1 ? out : n_out - 1) - 1; j >= 0; j--) {
        verify_buf_printf(b, "(split1 %lld %lld ", (long long)ax, (long long)shapes[k][j].dims[ax]);
        opens++;
    }
    if (eg_term(b, r, g, o->in[0], shapes, vars, err, errlen) < 0)
        return -1;
    for (int32_t i = 0; i < opens; i++)
        verify_buf_printf(b, ")");
    return 0;
}

static int eg_term(verify_buf *b, const rules_rule *r, const rules_graph *g, rules_ref ref,
                   ops_shape shapes[RULES_MAX_OPS][OPS_MAX_OUTPUTS], uint32_t *vars, char *err, size_t errlen) {
    if (ref.kind == RULES_REF_VAR) {
        verify_buf_printf(b, "?%s", r->vars[ref.idx].name);
        *vars |= 1u << ref.idx;
        return 0;
    }
    const rules_op *o = &g->ops[ref.idx];
    if (o->op == OP_SPLIT)
        return eg_split(b, r, g, ref.idx, ref.out, shapes, vars, err, errlen);
    if (o->op == OP_CONCAT) {
        for (int32_t i = 1; i < o->n_in; i++)
            verify_buf_printf(b, "(concat %lld ", (long long)o->p.v[PM_AXIS]);
        for (int32_t i = 0; i < o->n_in; i++) {
            if (eg_term(b, r, g, o->in[i], shapes, vars, err, errlen) < 0)
                return -1;
            verify_buf_printf(b, i ? ")" : " ");
            if (i && i + 1 < o->n_in)
                verify_buf_printf(b, " ");
        }
        return 0;
    }
    vparams vp;
    vparams_from(&vp, &o->p);
    int32_t sig = vsig_find(o->op, 0, o->op == OP_CONST_ONES ? o->p.n_list : 0);
    if (sig < 0)
        return base_fail_line(err, errlen, "rule '%s': %s has no rewrite-language name", r->id, ops_table[o->op].name);
    const vsig *s = &vsig_table[sig];
    char nm[64];
    verify_buf_printf(b, "(%s", vsig_name(sig, nm, sizeof nm));
    for (int32_t k = 0; k < s->n_int; k++) {
        int64_t v = 0;
        switch (s->iarg[k].kind) {
        case VA_KEY:
            v = o->p.v[s->iarg[k].key];
            break;
        case VA_PAD:
            v = vsig_pad_code(&vp);
            break;
        case VA_PERM:
            v = vsig_perm_code(&vp);
            break;
        case VA_LIST:
            v = o->p.list[s->iarg[k].idx];
            break;
        case VA_SIZE0:
            break;
        }
        if (v < 0)
            return base_fail_line(err, errlen, "rule '%s': %s parameters outside the rewrite language", r->id,
                                  ops_table[o->op].name);
        verify_buf_printf(b, " %lld", (long long)v);
    }
    for (int32_t i = 0; i < o->n_in; i++) {
        verify_buf_printf(b, " ");
        if (eg_term(b, r, g, o->in[i], shapes, vars, err, errlen) < 0)
            return -1;
    }
    verify_buf_printf(b, ")");
    return 0;
}

char *verify_export_egg(const rules_set *rs, int64_t *skipped, char *err, size_t errlen) {
    verify_buf out = {0};
    int64_t skip = 0;
    ops_shape sh[RULES_SIDE_COUNT][RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    for (int32_t i = 0; i < rs->n_rules; i++) {
        const rules_rule *r = &rs->rules[i];
        char m[256];
        for (int s = 0; s < RULES_SIDE_COUNT; s++)
            if (rules_graph_shapes(r, (rules_side)s, sh[s], m, sizeof m) < 0) {
                free(out.s);
                base_fail_line(err, errlen, "rule '%s': %s", r->id, m);
                return NULL;
            }
        for (int32_t k = 0; k < r->n_outputs; k++) {
            verify_buf t[2] = {{0}, {0}};
            uint32_t vars[2] = {0, 0};
            int bare[2];
            for (int s = 0; s < 2; s++) {
                rules_ref ref = s ? r->outputs[k].dst : r->outputs[k].src;
                bare[s] = ref.kind == RULES_REF_VAR;
                if (eg_term(&t[s], r, s ? &r->dst : &r->src, ref, sh[s], &vars[s], err, errlen) < 0) {
                    free(t[0].s);
                    free(t[1].s);
                    free(out.s);
                    return NULL;
                }
            }
            int oom = t[0].oom || t[1].oom;
            int same = !oom && !strcmp(t[0].s, t[1].s);
            int l = -1; /* the side written on the left */
            if (!same && !bare[0] && (vars[1] & ~vars[0]) == 0)
                l = 0;
            else if (!same && !bare[1] && (vars[0] & ~vars[1]) == 0)
                l = 1;
            if (!oom && l >= 0)
                verify_buf_printf(&out, "%s=>%s\n", t[l].s, t[1 - l].s);
            else if (!oom)
                skip++;
            out.oom |= oom;
            free(t[0].s);
            free(t[1].s);
        }
    }
    if (out.oom) {
        free(out.s);
        base_fail_line(err, errlen, "out of memory");
        return NULL;
    }
    if (!out.s) { /* an empty set: an empty text */
        out.s = calloc(1, 1);
        if (!out.s)
            base_fail_line(err, errlen, "out of memory");
    }
    if (skipped)
        *skipped = skip;
    return out.s;
}
