/* eqsat_exact.c: exact extraction for the equality-saturation search (eqsat.h) with Z3's
 * optimizer, as Tensat's ILP: a Boolean per e-node of the classes the outputs reach (at most one
 * per class; output classes and the children of chosen nodes hold one), an integer order per class
 * with parent > child for the edges inside a cycle of the e-graph (Tarjan's components; no other
 * edge can close one), and as objective the chosen DAG's true cost in whole nanoseconds: each node
 * once, weight-only ones free, and with search_opts.lower_cost a Boolean per node lowering could
 * absorb (its producer's chosen node fuses it, nothing else reads that producer) taking its cost
 * off. Run when the reachable e-graph has at most search_opts.eqsat_exact e-nodes, under Z3's
 * deterministic resource limit; an answer not proved optimal is still used when it is cheaper. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <z3.h>

#include "base.h"
#include "eqsat_impl.h"

#define EQ_Z3_RLIMIT 5000000u /* Z3 resource units (about 1 s of this machine's CPU), the same on any machine */

typedef struct {
    eq_ctx *c;
    Z3_context z;
    Z3_optimize opt;
    int32_t *idx;       /* [n_nodes] index of e-node n among the reachable ones, -1 */
    int32_t *nodes;     /* the reachable e-nodes */
    int32_t n;
    uint8_t *reach;     /* [n_cls] */
    Z3_ast *x, *f;      /* [n] choice, absorbed (NULL entries: cannot be) */
    Z3_ast *o;          /* [n_cls] order, for the classes of a cycle only */
    int32_t *scc;       /* [n_cls] strongly connected component of each reachable class */
    int failed;
} eq_z3;

static void eq_z3_error(Z3_context z, Z3_error_code e) { (void)z, (void)e; /* checked after each step */ }

/* The classes the outputs reach through any e-node; their e-nodes. 0, or -1 over the limit. */
static int eq_z3_reach(eq_z3 *s, int32_t limit) {
    egraph *eg = &s->c->eg;
    int32_t *stack = base_xmalloc(sizeof(int32_t) * ((size_t)eg->n_cls + 1)), sp = 0;
    for (int32_t i = 0; i < s->c->g->n_outputs; i++) {
        int32_t k = egraph_find(eg, s->c->t_cls[s->c->g->outputs[i]]);
        if (!s->reach[k])
            s->reach[k] = 1, stack[sp++] = k;
    }
    while (sp > 0 && s->n <= limit) {
        const egraph_class *cl = &eg->cls[stack[--sp]];
        for (int32_t u = 0; u < cl->n_nodes; u++) {
            int32_t n = cl->nodes[u];
            s->nodes[s->n++] = n;
            for (int32_t k = 0; k < eg->nodes[n].n_ch; k++) {
                int32_t d = egraph_find(eg, egraph_children(eg, n)[k]);
                if (!s->reach[d])
                    s->reach[d] = 1, stack[sp++] = d;
            }
        }
    }
    free(stack);
    if (s->n > limit)
        return -1;
    /* ascending, so that the encoding (and Z3's answer) does not depend on the walk */
    for (int32_t i = 0; i < eg->n_nodes; i++)
        s->idx[i] = -1;
    int32_t m = 0;
    for (int32_t n = 0; n < eg->n_nodes; n++)
        if (!eg->nodes[n].dead && s->reach[egraph_find(eg, eg->nodes[n].cls)])
            s->nodes[m] = n, s->idx[n] = m++;
    s->n = m;
    return 0;
}

static Z3_ast eq_z3_bool(eq_z3 *s, char tag, int32_t i) {
    char name[32];
    snprintf(name, sizeof name, "%c%d", tag, (int)i);
    return Z3_mk_const(s->z, Z3_mk_string_symbol(s->z, name), Z3_mk_bool_sort(s->z));
}

/* OR of x over the nodes of class k that pass keep (NULL: all), false when none. */
static Z3_ast eq_z3_any(eq_z3 *s, int32_t k, int (*keep)(eq_z3 *, int32_t), int use_f) {
    const egraph_class *cl = &s->c->eg.cls[k];
    Z3_ast *a = base_xmalloc(sizeof(Z3_ast) * ((size_t)cl->n_nodes + 1));
    int32_t m = 0;
    for (int32_t u = 0; u < cl->n_nodes; u++) {
        int32_t j = s->idx[cl->nodes[u]];
        if (j >= 0 && (!keep || keep(s, cl->nodes[u])) && (!use_f || s->f[j]))
            a[m++] = use_f ? s->f[j] : s->x[j];
    }
    Z3_ast r = m ? Z3_mk_or(s->z, (unsigned)m, a) : Z3_mk_false(s->z);
    free(a);
    return r;
}

/* Tarjan's strongly connected components of the reachable classes (edges: class -> the classes
 * its e-nodes read), without recursion. Only an edge inside a component can close a cycle, so
 * only those get order constraints (an e-graph without cycles needs none). */
static void eq_z3_scc(eq_z3 *s) {
    egraph *eg = &s->c->eg;
    size_t nc = (size_t)eg->n_cls + 1;
    int32_t *index = base_xmalloc(nc * sizeof *index), *low = base_xmalloc(nc * sizeof *low);
    int32_t *st = base_xmalloc(nc * sizeof *st), *ck = base_xmalloc(nc * sizeof *ck), *cu = base_xcalloc(nc, sizeof *cu);
    int32_t *cq = base_xcalloc(nc, sizeof *cq), counter = 0, sp = 0, csp = 0, n_scc = 0;
    uint8_t *on = base_xcalloc(nc, 1);
    for (int32_t k = 0; k < eg->n_cls; k++)
        index[k] = s->scc[k] = -1;
    for (int32_t k0 = 0; k0 < eg->n_cls; k0++) {
        if (!s->reach[k0] || index[k0] >= 0)
            continue;
        index[k0] = low[k0] = counter++, st[sp++] = k0, on[k0] = 1, ck[csp] = k0, cu[csp] = cq[csp] = 0, csp++;
        while (csp > 0) {
            int32_t t = csp - 1, k = ck[t];
            const egraph_class *cl = &eg->cls[k];
            if (cu[t] < cl->n_nodes) {
                int32_t n = cl->nodes[cu[t]];
                if (cq[t] >= eg->nodes[n].n_ch) {
                    cu[t]++, cq[t] = 0;
                    continue;
                }
                int32_t d = egraph_find(eg, egraph_children(eg, n)[cq[t]++]);
                if (index[d] < 0)
                    index[d] = low[d] = counter++, st[sp++] = d, on[d] = 1, ck[csp] = d, cu[csp] = cq[csp] = 0, csp++;
                else if (on[d] && index[d] < low[k])
                    low[k] = index[d];
                continue;
            }
            if (low[k] == index[k]) {
                int32_t x;
                do {
                    x = st[--sp];
                    on[x] = 0;
                    s->scc[x] = n_scc;
                } while (x != k);
                n_scc++;
            }
            if (--csp > 0 && low[k] < low[ck[csp - 1]])
                low[ck[csp - 1]] = low[k];
        }
    }
    free(index), free(low), free(st), free(ck), free(cu), free(cq), free(on);
}

/* Choice constraints: outputs chosen, children of chosen nodes chosen and ordered before them,
 * at most one node per class. */
static void eq_z3_choice(eq_z3 *s) {
    egraph *eg = &s->c->eg;
    Z3_context z = s->z;
    Z3_sort is = Z3_mk_int_sort(z);
    for (int32_t k = 0; k < eg->n_cls; k++) {
        if (!s->reach[k])
            continue;
        char name[32];
        snprintf(name, sizeof name, "o%d", (int)k);
        s->o[k] = Z3_mk_const(z, Z3_mk_string_symbol(z, name), is);
        const egraph_class *cl = &eg->cls[k];
        Z3_ast *a = base_xmalloc(sizeof(Z3_ast) * ((size_t)cl->n_nodes + 1));
        for (int32_t u = 0; u < cl->n_nodes; u++)
            a[u] = s->x[s->idx[cl->nodes[u]]];
        Z3_optimize_assert(z, s->opt, Z3_mk_atmost(z, (unsigned)cl->n_nodes, a, 1));
        free(a);
    }
    for (int32_t i = 0; i < s->c->g->n_outputs; i++)
        Z3_optimize_assert(z, s->opt, eq_z3_any(s, egraph_find(eg, s->c->t_cls[s->c->g->outputs[i]]), NULL, 0));
    for (int32_t j = 0; j < s->n; j++) {
        int32_t n = s->nodes[j], k = egraph_find(eg, eg->nodes[n].cls);
        for (int32_t q = 0; q < eg->nodes[n].n_ch; q++) {
            int32_t d = egraph_find(eg, egraph_children(eg, n)[q]);
            Z3_ast both[2] = {eq_z3_any(s, d, NULL, 0), Z3_mk_gt(z, s->o[k], s->o[d])};
            if (d == k) /* reads its own class: never chosen */
                Z3_optimize_assert(z, s->opt, Z3_mk_not(z, s->x[j]));
            else
                Z3_optimize_assert(z, s->opt, Z3_mk_implies(z, s->x[j], s->scc[d] == s->scc[k] ? Z3_mk_and(z, 2, both) : both[0]));
        }
    }
}

static int eq_z3_epilogue(eq_z3 *s, int32_t n) {
    const egraph_node *nd = &s->c->eg.nodes[n];
    return nd->kind == EGRAPH_OP && rewrite_has_epilogue((ops_type)nd->a) && nd->p.v[PM_ACT] == OPS_ACT_NONE;
}

static int eq_z3_ewadd(eq_z3 *s, int32_t n) {
    const egraph_node *nd = &s->c->eg.nodes[n];
    return nd->kind == EGRAPH_OP && nd->a == OP_EWADD;
}

/* f_n's conditions for producer class t of node j: an absorbing choice there, no other reader. */
static Z3_ast eq_z3_absorb(eq_z3 *s, int32_t j, int32_t t, int act) {
    egraph *eg = &s->c->eg;
    Z3_context z = s->z;
    const egraph_class *tc = &eg->cls[t];
    Z3_ast *a = base_xmalloc(sizeof(Z3_ast) * ((size_t)tc->n_parents + 2));
    int32_t m = 0;
    a[m++] = act ? Z3_mk_or(z, 2, (Z3_ast[]){eq_z3_any(s, t, eq_z3_epilogue, 0), eq_z3_any(s, t, eq_z3_ewadd, 1)})
                 : eq_z3_any(s, t, eq_z3_epilogue, 0);
    for (int32_t u = 0; u < tc->n_parents; u++) {
        int32_t q = s->idx[tc->parents[u]];
        if (q >= 0 && q != j)
            a[m++] = Z3_mk_not(z, s->x[q]);
    }
    for (int32_t i = 0; i < s->c->g->n_outputs; i++)
        if (egraph_find(eg, s->c->t_cls[s->c->g->outputs[i]]) == t)
            a[0] = Z3_mk_false(z); /* an output: nothing absorbs it */
    int32_t reads = 0; /* node j reading t twice: two readers */
    for (int32_t k = 0; k < eg->nodes[s->nodes[j]].n_ch; k++)
        reads += egraph_find(eg, egraph_children(eg, s->nodes[j])[k]) == t;
    if (reads > 1)
        a[0] = Z3_mk_false(z);
    Z3_ast r = Z3_mk_and(z, (unsigned)m, a);
    free(a);
    return r;
}

/* 1 if the bias add j could be absorbed reading t with bias class b (eq_lowered's static part). */
static Z3_ast eq_z3_bias(eq_z3 *s, int32_t j, int32_t t, int32_t b) {
    egraph *eg = &s->c->eg;
    const ops_shape *os = &eg->cls[t].out[0], *bs = &eg->cls[b].out[0];
    if (t == b || !eg->cls[b].wo || !ops_shape_eq(&eg->cls[egraph_find(eg, eg->nodes[s->nodes[j]].cls)].out[0], os))
        return NULL;
    const egraph_class *tc = &eg->cls[t];
    int any = 0;
    for (int32_t u = 0; u < tc->n_nodes && !any; u++) {
        const egraph_node *pn = &eg->nodes[tc->nodes[u]];
        if (!eq_z3_epilogue(s, tc->nodes[u]))
            continue;
        int32_t ch = rewrite_bias_axis((ops_type)pn->a, os->rank), off = os->rank - bs->rank, ok = off >= 0 && off <= ch;
        for (int32_t i = 0; i < bs->rank && ok; i++)
            ok = bs->dims[i] == (i + off == ch ? os->dims[ch] : 1);
        any = ok;
    }
    return any ? eq_z3_absorb(s, j, t, 0) : NULL;
}

/* With lower_cost: the f variables and what each needs. */
static void eq_z3_lowering(eq_z3 *s) {
    egraph *eg = &s->c->eg;
    Z3_context z = s->z;
    Z3_ast *need = base_xcalloc((size_t)s->n + 1, sizeof *need);
    for (int32_t j = 0; j < s->n; j++) {
        const egraph_node *nd = &eg->nodes[s->nodes[j]];
        if (nd->kind != EGRAPH_OP)
            continue;
        const int32_t *ch = egraph_children(eg, s->nodes[j]);
        if (nd->a == OP_EWADD && nd->n_ch == 2) {
            int32_t a = egraph_find(eg, ch[0]), b = egraph_find(eg, ch[1]);
            Z3_ast c0 = eq_z3_bias(s, j, a, b), c1 = eq_z3_bias(s, j, b, a);
            need[j] = c0 && c1 ? Z3_mk_or(z, 2, (Z3_ast[]){c0, c1}) : c0 ? c0 : c1;
        } else if (rewrite_fusable_act_p((ops_type)nd->a, &nd->p) != OPS_ACT_NONE && nd->n_ch >= 1) {
            need[j] = Z3_mk_true(z); /* filled below, once every f exists */
        }
        if (need[j])
            s->f[j] = eq_z3_bool(s, 'f', j);
    }
    for (int32_t j = 0; j < s->n; j++) {
        if (!s->f[j])
            continue;
        const egraph_node *nd = &eg->nodes[s->nodes[j]];
        if (nd->a != OP_EWADD)
            need[j] = eq_z3_absorb(s, j, egraph_find(eg, egraph_children(eg, s->nodes[j])[0]), 1);
        Z3_ast both[2] = {s->x[j], need[j]};
        Z3_optimize_assert(z, s->opt, Z3_mk_implies(z, s->f[j], Z3_mk_and(z, 2, both)));
    }
    free(need);
}

/* The objective: each chosen node's cost in nanoseconds, less what lowering absorbs. */
static int eq_z3_objective(eq_z3 *s) {
    egraph *eg = &s->c->eg;
    Z3_context z = s->z;
    Z3_sort is = Z3_mk_int_sort(z);
    Z3_ast *terms = base_xmalloc(sizeof(Z3_ast) * (2 * (size_t)s->n + 1));
    int32_t m = 0;
    for (int32_t j = 0; j < s->n; j++) {
        int32_t n = s->nodes[j];
        const egraph_node *nd = &eg->nodes[n];
        int wo = nd->kind != EGRAPH_OP, all = !wo; /* leaves and projections cost nothing, nor weight-only ops */
        for (int32_t k = 0; k < nd->n_ch && all; k++)
            all = eg->cls[egraph_find(eg, egraph_children(eg, n)[k])].wo;
        if (wo || all)
            continue;
        double us;
        if (eq_node_cost(s->c, n, &us) < 0) {
            free(terms);
            return -1;
        }
        Z3_ast ns = Z3_mk_int64(z, (int64_t)llround(us * 1000.0), is), zero = Z3_mk_int(z, 0, is);
        terms[m++] = Z3_mk_ite(z, s->x[j], ns, zero);
        if (s->f[j])
            terms[m++] = Z3_mk_ite(z, s->f[j], Z3_mk_unary_minus(z, ns), zero);
    }
    Z3_ast sum = m ? Z3_mk_add(z, (unsigned)m, terms) : Z3_mk_int(z, 0, is);
    Z3_optimize_minimize(z, s->opt, sum);
    free(terms);
    return 0;
}

/* Solve; the chosen node of each reachable class into choice. 1 found, 0 none. */
static int eq_z3_solve(eq_z3 *s, int32_t *choice) {
    Z3_context z = s->z;
    Z3_lbool r = Z3_optimize_check(z, s->opt, 0, NULL);
    if (r == Z3_L_FALSE || Z3_get_error_code(z) != Z3_OK)
        return 0;
    Z3_model mdl = Z3_optimize_get_model(z, s->opt);
    if (!mdl || Z3_get_error_code(z) != Z3_OK)
        return 0;
    Z3_model_inc_ref(z, mdl);
    egraph *eg = &s->c->eg;
    for (int32_t k = 0; k < eg->n_cls; k++)
        choice[k] = -1;
    for (int32_t j = 0; j < s->n; j++) {
        Z3_ast v;
        if (Z3_model_eval(z, mdl, s->x[j], true, &v) && Z3_get_bool_value(z, v) == Z3_L_TRUE) {
            int32_t k = egraph_find(eg, eg->nodes[s->nodes[j]].cls);
            if (choice[k] < 0)
                choice[k] = s->nodes[j];
        }
    }
    Z3_model_dec_ref(z, mdl);
    return 1;
}

int eq_exact(eq_ctx *c, int32_t *choice, double *cost) {
    if (c->o->eqsat_exact <= 0)
        return 0;
    egraph *eg = &c->eg;
    eq_z3 s = {c, NULL, NULL, base_xmalloc(sizeof(int32_t) * ((size_t)eg->n_nodes + 1)),
               base_xmalloc(sizeof(int32_t) * ((size_t)eg->n_nodes + 1)), 0, base_xcalloc((size_t)eg->n_cls + 1, 1),
               NULL, NULL, NULL, NULL, 0};
    int rc = 0;
    if (eq_z3_reach(&s, c->o->eqsat_exact) == 0) {
        Z3_config cfg = Z3_mk_config();
        char rl[32];
        snprintf(rl, sizeof rl, "%u", EQ_Z3_RLIMIT);
        Z3_set_param_value(cfg, "rlimit", rl);
        s.z = Z3_mk_context(cfg);
        Z3_del_config(cfg);
        Z3_set_error_handler(s.z, eq_z3_error);
        s.opt = Z3_mk_optimize(s.z);
        Z3_optimize_inc_ref(s.z, s.opt);
        s.x = base_xcalloc((size_t)s.n + 1, sizeof *s.x);
        s.f = base_xcalloc((size_t)s.n + 1, sizeof *s.f);
        s.o = base_xcalloc((size_t)eg->n_cls + 1, sizeof *s.o);
        for (int32_t j = 0; j < s.n; j++)
            s.x[j] = eq_z3_bool(&s, 'x', j);
        s.scc = base_xmalloc(sizeof(int32_t) * ((size_t)eg->n_cls + 1));
        eq_z3_scc(&s);
        eq_z3_choice(&s);
        if (c->o->lower_cost)
            eq_z3_lowering(&s);
        if (eq_z3_objective(&s) < 0)
            rc = -1;
        else if (eq_z3_solve(&s, choice) && eq_eval(c, choice, cost) == 0 && isfinite(*cost))
            rc = 1;
        Z3_optimize_dec_ref(s.z, s.opt);
        Z3_del_context(s.z);
        free(s.x);
        free(s.f);
        free(s.o);
        free(s.scc);
    }
    free(s.idx);
    free(s.nodes);
    free(s.reach);
    return rc;
}
