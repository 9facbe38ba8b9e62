/* verify_eval.c: numeric evaluation of a rule's two graphs through the CPU references.
 *
 * The variables get random normal values at the shapes recorded in the rule; every op runs its
 * op-table CPU reference; the mapped outputs are compared by relative L2 error. This is the cheap
 * first check of `tasc verify` (a false candidate is refuted by a counterexample before Z3 is
 * asked) and the numeric half of the double check the design asks for. Buffers are owned here and
 * freed before returning.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "verify_impl.h"

#define VE_MAX_ELEMENTS (INT64_C(1) << 22) /* per tensor: larger rules are not evaluated */

typedef struct {
    float *var[RULES_MAX_VARS];                                   /* (vars[v].shape) */
    float *out[RULES_SIDE_COUNT][RULES_MAX_OPS][OPS_MAX_OUTPUTS]; /* (shapes[side][op][o]) */
    ops_shape shapes[RULES_SIDE_COUNT][RULES_MAX_OPS][OPS_MAX_OUTPUTS];
} ve_bufs;

static void ve_free(ve_bufs *b) {
    for (int32_t v = 0; v < RULES_MAX_VARS; v++)
        free(b->var[v]);
    for (int s = 0; s < RULES_SIDE_COUNT; s++)
        for (int32_t k = 0; k < RULES_MAX_OPS; k++)
            for (int32_t o = 0; o < OPS_MAX_OUTPUTS; o++)
                free(b->out[s][k][o]);
}

static const float *ve_ref(const ve_bufs *b, int side, rules_ref ref) {
    return ref.kind == RULES_REF_VAR ? b->var[ref.idx] : b->out[side][ref.idx][ref.out];
}

static const ops_shape *ve_ref_shape(const rules_rule *r, const ve_bufs *b, int side, rules_ref ref) {
    return ref.kind == RULES_REF_VAR ? &r->vars[ref.idx].shape : &b->shapes[side][ref.idx][ref.out];
}

static float *ve_alloc(const ops_shape *s, int64_t *n) {
    *n = ops_shape_numel(s);
    if (*n < 0 || *n > VE_MAX_ELEMENTS)
        return NULL;
    return calloc((size_t)(*n > 0 ? *n : 1), sizeof(float));
}

int verify_eval_rule(const rules_rule *r, uint64_t seed, double tol, double *rel_err, char *why, size_t whylen) {
    ve_bufs *b = calloc(1, sizeof *b);
    *rel_err = 0.0;
    if (!b)
        return base_fail_line(why, whylen, "out of memory");
    int rc = -1;
    char m[256];
    for (int s = 0; s < RULES_SIDE_COUNT; s++)
        if (rules_graph_shapes(r, (rules_side)s, b->shapes[s], m, sizeof m) < 0) {
            base_fail_line(why, whylen, "%s", m);
            goto done;
        }
    for (int32_t v = 0; v < r->n_vars; v++) {
        int64_t n;
        b->var[v] = ve_alloc(&r->vars[v].shape, &n);
        if (!b->var[v]) {
            base_fail_line(why, whylen, "variable '%s' too large to evaluate", r->vars[v].name);
            goto done;
        }
        graph_fill_normal(b->var[v], n, seed ^ verify_hash64(&v, sizeof v, UINT64_C(0x5eed)), 0.0f, 1.0f);
    }
    for (int s = 0; s < RULES_SIDE_COUNT; s++) {
        const rules_graph *g = s == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++) {
            const rules_op *o = &g->ops[k];
            ops_shape in_sh[RULES_MAX_IN];
            const float *in[RULES_MAX_IN];
            float *out[OPS_MAX_OUTPUTS];
            for (int32_t i = 0; i < o->n_in; i++) {
                in_sh[i] = *ve_ref_shape(r, b, s, o->in[i]);
                in[i] = ve_ref(b, s, o->in[i]);
            }
            int32_t n_out = 0;
            ops_shape osh[OPS_MAX_OUTPUTS];
            if (ops_infer(o->op, &o->p, o->n_in, in_sh, &n_out, osh, m, sizeof m) < 0) {
                base_fail_line(why, whylen, "%s", m);
                goto done;
            }
            for (int32_t q = 0; q < n_out; q++) {
                int64_t n;
                b->out[s][k][q] = out[q] = ve_alloc(&osh[q], &n);
                if (!out[q]) {
                    base_fail_line(why, whylen, "an intermediate tensor too large to evaluate");
                    goto done;
                }
            }
            ops_sig sig = {.op = o->op, .p = &o->p, .n_in = o->n_in, .n_out = n_out, .in = in_sh, .out = osh};
            ops_table[o->op].cpu(&sig, in, out);
        }
    }
    rc = 1;
    for (int32_t i = 0; i < r->n_outputs; i++) {
        const ops_shape *sa = ve_ref_shape(r, b, RULES_SIDE_SRC, r->outputs[i].src);
        const float *a = ve_ref(b, RULES_SIDE_SRC, r->outputs[i].src);
        const float *c = ve_ref(b, RULES_SIDE_DST, r->outputs[i].dst);
        int64_t n = ops_shape_numel(sa);
        double num = 0, na = 0, nc = 0;
        for (int64_t e = 0; e < n; e++) {
            double d = (double)a[e] - (double)c[e];
            num += d * d;
            na += (double)a[e] * a[e];
            nc += (double)c[e] * c[e];
        }
        if (isnan(num) || isnan(na) || isnan(nc)) {
            rc = -1;
            base_fail_line(why, whylen, "output %d is not a number on random values", (int)i);
            break;
        }
        double den = sqrt(na > nc ? na : nc);
        double err = den > 1e-30 ? sqrt(num) / den : sqrt(num);
        if (err > *rel_err)
            *rel_err = err;
        /* near-zero outputs (a relu of a sum that cancels) are judged by an absolute bound */
        if (err > tol && sqrt(num) > 1e-5 * sqrt((double)n) && rc == 1) {
            rc = 0;
            base_fail_line(why, whylen, "counterexample on random values: output %d differs (relative error %.3g)",
                           (int)i, err);
        }
    }
done:
    ve_free(b);
    free(b);
    return rc;
}
