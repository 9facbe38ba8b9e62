/* verify_check.c: `tasc axioms check`: every axiom against the CPU references, a redundancy
 * report, and a consistency probe.
 *
 * Each axiom's quantifier is read back from Z3 into a small term graph (ct_axiom). For every
 * trigger, its instantiations are enumerated: integer variables over small domains (strides 1
 * and 2, both pad modes, relu or none, axes 0..3, kernel sizes 1 and 3), tensor variables over
 * ranks 0..4 with a symbol per dim; typing the trigger's terms in the model (verify_model.c)
 * gives the equations those symbols must meet, and the free symbols left after solving them range
 * over 1..max_dim (kernel dims over 1 and 3). Every instantiation whose side conditions hold must
 * have every term of the axiom well typed (else rewriting could make an ill-typed term) and both
 * sides equal on random values through the op table's CPU references, and equal dims in the dim
 * model (what the dim_* axioms give any term). The model's typing is cross-checked against
 * ops_infer on every term. The ill-shaped pass makes each well-typed instantiation ill shaped, one
 * size or dim off by one at a time; where a trigger term is then ill typed and the side condition
 * does not exclude the instance, the sides' dims in the dim model must still agree (else Z3 could
 * derive 2 = 3). Redundancy: each axiom negated against all the others, with a timeout.
 * Consistency: known false equalities must not be provable.
 */
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "verify_impl.h"

#define CT_MAX_NODES 256
#define CT_MAX_BOUND 16
#define CT_MAX_PATS 8
#define CT_MAX_ARGS (VSIG_MAX_INT + 4)
#define CT_TOL 1e-3
#define CT_NDIM 4 /* dims 0..3 of the dim model are compared */

typedef enum {
    CT_VAR, CT_NUM, CT_APP, CT_DIM, CT_ADD, CT_SUB, CT_MUL, CT_DIV, CT_MOD, CT_NEG, CT_ITE, CT_EQ, CT_DISTINCT,
    CT_AND, CT_OR, CT_NOT, CT_IMPLIES, CT_LT, CT_LE, CT_GT, CT_GE, CT_TRUE, CT_FALSE
} ct_kind;

typedef struct {
    ct_kind k;
    int is_t;         /* a tensor term */
    int32_t sig;      /* CT_APP */
    int32_t var;      /* CT_VAR: bound variable index */
    int64_t num;      /* CT_NUM */
    int32_t n;
    int32_t a[CT_MAX_ARGS];
} ct_node;

typedef struct {
    const char *name;
    int32_t n_nodes;
    ct_node nodes[CT_MAX_NODES];
    unsigned ast_id[CT_MAX_NODES];
    int32_t n_bound;
    char bname[CT_MAX_BOUND][32];
    int bt[CT_MAX_BOUND];          /* 1: sort T */
    vd_domain dom[CT_MAX_BOUND];   /* Int variables */
    int symbolic[CT_MAX_BOUND];    /* Int variable treated as a size symbol */
    int kernel[CT_MAX_BOUND];      /* T variable used as a kernel */
    int32_t cond;                  /* -1: none */
    int32_t lhs, rhs;
    int32_t n_pat;
    int32_t pat_n[CT_MAX_PATS];
    int32_t pat[CT_MAX_PATS][4];
} ct_axiom;

/* --- reading a quantifier ------------------------------------------------------------------------ */

static int32_t ct_conv(Z3_context c, ct_axiom *A, Z3_ast a, char *err, size_t errlen) {
    unsigned id = Z3_get_ast_id(c, a);
    for (int32_t i = 0; i < A->n_nodes; i++)
        if (A->ast_id[i] == id)
            return i;
    if (A->n_nodes >= CT_MAX_NODES)
        return base_fail_line(err, errlen, "axiom %s: too large", A->name);
    ct_node nd;
    memset(&nd, 0, sizeof nd);
    Z3_ast_kind k = Z3_get_ast_kind(c, a);
    if (k == Z3_VAR_AST) {
        unsigned j = Z3_get_index_value(c, a);
        nd.k = CT_VAR;
        nd.var = A->n_bound - 1 - (int32_t)j;
        if (nd.var < 0)
            return base_fail_line(err, errlen, "axiom %s: bad variable", A->name);
        nd.is_t = A->bt[nd.var];
    } else if (k == Z3_NUMERAL_AST) {
        nd.k = CT_NUM;
        if (!Z3_get_numeral_int64(c, a, &nd.num))
            return base_fail_line(err, errlen, "axiom %s: a non-integer numeral", A->name);
    } else if (k == Z3_APP_AST) {
        Z3_app app = Z3_to_app(c, a);
        Z3_func_decl d = Z3_get_app_decl(c, app);
        unsigned na = Z3_get_app_num_args(c, app);
        if (na > CT_MAX_ARGS)
            return base_fail_line(err, errlen, "axiom %s: too many arguments", A->name);
        Z3_decl_kind dk = Z3_get_decl_kind(c, d);
        switch (dk) {
        case Z3_OP_UNINTERPRETED: {
            char name[128];
            snprintf(name, sizeof name, "%s", Z3_get_symbol_string(c, Z3_get_decl_name(c, d)));
            if (!strcmp(name, "dim")) {
                nd.k = CT_DIM;
            } else {
                nd.k = CT_APP;
                nd.sig = vsig_find_name(name);
                nd.is_t = 1;
                if (nd.sig < 0)
                    return base_fail_line(err, errlen, "axiom %s: unknown function %s", A->name, name);
            }
            break;
        }
        case Z3_OP_TRUE: nd.k = CT_TRUE; break;
        case Z3_OP_FALSE: nd.k = CT_FALSE; break;
        case Z3_OP_EQ: nd.k = CT_EQ; break;
        case Z3_OP_DISTINCT: nd.k = CT_DISTINCT; break;
        case Z3_OP_ITE: nd.k = CT_ITE; break;
        case Z3_OP_AND: nd.k = CT_AND; break;
        case Z3_OP_OR: nd.k = CT_OR; break;
        case Z3_OP_NOT: nd.k = CT_NOT; break;
        case Z3_OP_IMPLIES: nd.k = CT_IMPLIES; break;
        case Z3_OP_LE: nd.k = CT_LE; break;
        case Z3_OP_GE: nd.k = CT_GE; break;
        case Z3_OP_LT: nd.k = CT_LT; break;
        case Z3_OP_GT: nd.k = CT_GT; break;
        case Z3_OP_ADD: nd.k = CT_ADD; break;
        case Z3_OP_SUB: nd.k = CT_SUB; break;
        case Z3_OP_MUL: nd.k = CT_MUL; break;
        case Z3_OP_IDIV: nd.k = CT_DIV; break;
        case Z3_OP_MOD: nd.k = CT_MOD; break;
        case Z3_OP_UMINUS: nd.k = CT_NEG; break;
        default:
            return base_fail_line(err, errlen, "axiom %s: unsupported operator %s", A->name,
                                  Z3_get_symbol_string(c, Z3_get_decl_name(c, d)));
        }
        nd.n = (int32_t)na;
        for (unsigned i = 0; i < na; i++) {
            int32_t ci = ct_conv(c, A, Z3_get_app_arg(c, app, i), err, errlen);
            if (ci < 0)
                return -1;
            nd.a[i] = ci;
        }
        if (nd.k == CT_ITE)
            nd.is_t = A->nodes[nd.a[1]].is_t;
    } else {
        return base_fail_line(err, errlen, "axiom %s: a nested quantifier", A->name);
    }
    A->ast_id[A->n_nodes] = id;
    A->nodes[A->n_nodes] = nd;
    return A->n_nodes++;
}

static void ct_note_domains(ct_axiom *A) {
    int seen_other[CT_MAX_BOUND] = {0}; /* used somewhere that is not a size: enumerated */
    for (int32_t i = 0; i < A->n_nodes; i++) {
        const ct_node *nd = &A->nodes[i];
        if (nd->k == CT_APP) {
            const vsig *g = &vsig_table[nd->sig];
            for (int32_t k = 0; k < g->n_int; k++) {
                const ct_node *ar = &A->nodes[nd->a[k]];
                if (ar->k != CT_VAR)
                    continue;
                if (g->iarg[k].dom != VD_SIZE && !seen_other[ar->var]) {
                    seen_other[ar->var] = 1;
                    A->dom[ar->var] = g->iarg[k].dom;
                }
            }
            for (int32_t k = 0; k < g->n_t; k++) {
                const ct_node *ar = &A->nodes[nd->a[g->n_int + k]];
                if (ar->k == CT_VAR && (g->kernel_in >> k & 1))
                    A->kernel[ar->var] = 1;
            }
        } else if (nd->k == CT_DIM) {
            const ct_node *ar = &A->nodes[nd->a[1]];
            if (ar->k == CT_VAR && !seen_other[ar->var]) {
                seen_other[ar->var] = 1;
                A->dom[ar->var] = VD_INDEX;
            }
        }
    }
    for (int32_t v = 0; v < A->n_bound; v++)
        if (!A->bt[v]) {
            A->symbolic[v] = !seen_other[v];
            if (!seen_other[v])
                A->dom[v] = VD_SIZE;
        }
}

static int ct_read(Z3_context c, Z3_ast q, const char *name, ct_axiom *A, char *err, size_t errlen) {
    memset(A, 0, sizeof *A);
    A->name = name;
    A->cond = -1;
    unsigned nb = Z3_get_quantifier_num_bound(c, q);
    if (nb > CT_MAX_BOUND)
        return base_fail_line(err, errlen, "axiom %s: more than %d variables", name, CT_MAX_BOUND);
    A->n_bound = (int32_t)nb;
    for (unsigned i = 0; i < nb; i++) {
        snprintf(A->bname[i], sizeof A->bname[i], "%s",
                 Z3_get_symbol_string(c, Z3_get_quantifier_bound_name(c, q, i)));
        Z3_sort s = Z3_get_quantifier_bound_sort(c, q, i);
        A->bt[i] = Z3_get_sort_kind(c, s) == Z3_UNINTERPRETED_SORT;
    }
    int32_t body = ct_conv(c, A, Z3_get_quantifier_body(c, q), err, errlen);
    if (body < 0)
        return -1;
    int32_t eq = body;
    if (A->nodes[body].k == CT_IMPLIES) {
        A->cond = A->nodes[body].a[0];
        eq = A->nodes[body].a[1];
    }
    if (A->nodes[eq].k != CT_EQ || A->nodes[eq].n != 2)
        return base_fail_line(err, errlen, "axiom %s: the body must be (= L R), optionally under (=> COND ...)", name);
    A->lhs = A->nodes[eq].a[0];
    A->rhs = A->nodes[eq].a[1];
    unsigned np = Z3_get_quantifier_num_patterns(c, q);
    for (unsigned p = 0; p < np && A->n_pat < CT_MAX_PATS; p++) {
        Z3_pattern pat = Z3_get_quantifier_pattern_ast(c, q, p);
        unsigned nt = Z3_get_pattern_num_terms(c, pat);
        if (nt > 4)
            return base_fail_line(err, errlen, "axiom %s: a multi-pattern of more than 4 terms", name);
        for (unsigned t = 0; t < nt; t++) {
            int32_t ti = ct_conv(c, A, Z3_get_pattern(c, pat, t), err, errlen);
            if (ti < 0)
                return -1;
            A->pat[A->n_pat][t] = ti;
        }
        A->pat_n[A->n_pat++] = (int32_t)nt;
    }
    ct_note_domains(A);
    return 0;
}

/* --- one instantiation ------------------------------------------------------------------------------ */

typedef struct {
    int64_t ival[CT_MAX_BOUND];
    ops_shape tshape[CT_MAX_BOUND];
    int st[CT_MAX_NODES];          /* 0 not typed yet, 1 well typed, VM_ILLTYPED, VM_UNSUPPORTED, -3 mismatch */
    char why[CT_MAX_NODES][96];
    ops_shape shape[CT_MAX_NODES];
    ops_params params[CT_MAX_NODES];
    ops_type op[CT_MAX_NODES];
    float *buf[CT_MAX_NODES];      /* (shape[node]) */
    vsys S;                        /* scratch for concrete typing */
    int8_t dk[CT_MAX_NODES][CT_NDIM];  /* the dim model (ct_dim_of): 0 not yet, 1 known, 2 undetermined */
    int64_t dv[CT_MAX_NODES][CT_NDIM];
} ct_inst;

static void ct_inst_reset(ct_inst *I, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        I->st[i] = 0;
        free(I->buf[i]);
        I->buf[i] = NULL;
    }
    memset(I->dk, 0, (size_t)n * sizeof I->dk[0]);
}

enum { CT_UNDEF = 1 };

static int ct_type(const ct_axiom *A, ct_inst *I, int32_t node);
static int ct_bval(const ct_axiom *A, ct_inst *I, int32_t node, int *b);

/* SMT-LIB integer arithmetic on argument values x[0..n): 0, or CT_UNDEF (division by zero, not
 * an arithmetic kind). */
static int ct_arith(ct_kind k, const int64_t *x, int32_t n, int64_t *v) {
    switch (k) {
    case CT_ADD:
    case CT_MUL:
        *v = k == CT_ADD ? 0 : 1;
        for (int32_t i = 0; i < n; i++)
            *v = k == CT_ADD ? *v + x[i] : *v * x[i];
        return 0;
    case CT_SUB:
        *v = x[0];
        for (int32_t i = 1; i < n; i++)
            *v -= x[i];
        return 0;
    case CT_NEG:
        *v = -x[0];
        return 0;
    case CT_DIV:
    case CT_MOD: {
        if (x[1] == 0)
            return CT_UNDEF;
        /* SMT-LIB: Euclidean division, remainder in [0, |y|) */
        int64_t q = x[0] / x[1], r = x[0] % x[1];
        if (r < 0) {
            r += x[1] > 0 ? x[1] : -x[1];
            q = (x[0] - r) / x[1];
        }
        *v = k == CT_DIV ? q : r;
        return 0;
    }
    default:
        return CT_UNDEF;
    }
}

/* Integer value of a node; CT_UNDEF when a dim it reads is not defined. */
static int ct_ival(const ct_axiom *A, ct_inst *I, int32_t node, int64_t *v) {
    const ct_node *nd = &A->nodes[node];
    int64_t y;
    switch (nd->k) {
    case CT_NUM:
        *v = nd->num;
        return 0;
    case CT_VAR:
        *v = I->ival[nd->var];
        return 0;
    case CT_DIM: /* dims past the rank, up to 4, are 1 (as the dim axioms and the encoding have them) */
        if (ct_type(A, I, nd->a[0]) != 1 || ct_ival(A, I, nd->a[1], &y))
            return CT_UNDEF;
        if (y < 0 || y >= (I->shape[nd->a[0]].rank > CT_NDIM ? I->shape[nd->a[0]].rank : CT_NDIM))
            return CT_UNDEF;
        *v = y < I->shape[nd->a[0]].rank ? I->shape[nd->a[0]].dims[y] : 1;
        return 0;
    case CT_ADD:
    case CT_MUL:
    case CT_SUB:
    case CT_NEG:
    case CT_DIV:
    case CT_MOD: {
        int64_t xs[CT_MAX_ARGS];
        for (int32_t i = 0; i < nd->n; i++)
            if (ct_ival(A, I, nd->a[i], &xs[i]))
                return CT_UNDEF;
        return ct_arith(nd->k, xs, nd->n, v);
    }
    case CT_ITE: {
        int b;
        if (ct_bval(A, I, nd->a[0], &b))
            return CT_UNDEF;
        return ct_ival(A, I, nd->a[b ? 1 : 2], v);
    }
    default:
        return CT_UNDEF;
    }
}

static int ct_bval(const ct_axiom *A, ct_inst *I, int32_t node, int *b) {
    const ct_node *nd = &A->nodes[node];
    int64_t x, y;
    int p, q;
    switch (nd->k) {
    case CT_TRUE:
        *b = 1;
        return 0;
    case CT_FALSE:
        *b = 0;
        return 0;
    case CT_NOT:
        if (ct_bval(A, I, nd->a[0], &p))
            return CT_UNDEF;
        *b = !p;
        return 0;
    case CT_AND:
    case CT_OR:
        *b = nd->k == CT_AND;
        for (int32_t i = 0; i < nd->n; i++) {
            if (ct_bval(A, I, nd->a[i], &p))
                return CT_UNDEF;
            *b = nd->k == CT_AND ? (*b && p) : (*b || p);
        }
        return 0;
    case CT_IMPLIES:
        if (ct_bval(A, I, nd->a[0], &p) || ct_bval(A, I, nd->a[1], &q))
            return CT_UNDEF;
        *b = !p || q;
        return 0;
    case CT_EQ:
    case CT_DISTINCT:
        if (A->nodes[nd->a[0]].is_t)
            return CT_UNDEF; /* tensor equality is not a side condition */
        for (int32_t i = 0; i < nd->n; i++)
            if (ct_ival(A, I, nd->a[i], &x))
                return CT_UNDEF;
        *b = 1;
        for (int32_t i = 0; i < nd->n; i++)
            for (int32_t j = i + 1; j < nd->n; j++) {
                ct_ival(A, I, nd->a[i], &x);
                ct_ival(A, I, nd->a[j], &y);
                if (nd->k == CT_EQ ? x != y : x == y)
                    *b = 0;
            }
        return 0;
    case CT_LT:
    case CT_LE:
    case CT_GT:
    case CT_GE:
        if (ct_ival(A, I, nd->a[0], &x) || ct_ival(A, I, nd->a[1], &y))
            return CT_UNDEF;
        *b = nd->k == CT_LT ? x < y : nd->k == CT_LE ? x <= y : nd->k == CT_GT ? x > y : x >= y;
        return 0;
    case CT_ITE:
        if (ct_bval(A, I, nd->a[0], &p))
            return CT_UNDEF;
        return ct_bval(A, I, nd->a[p ? 1 : 2], b);
    default:
        return CT_UNDEF;
    }
}

/* The op, parameters and (expression) parameters of an application from integer argument values. */
static void ct_decode(int32_t sig, const vx *iarg, const vshape *in0, ops_type *op, vparams *vp) {
    const vsig *g = &vsig_table[sig];
    ops_params p;
    ops_params_default(g->op, &p);
    vparams_from(vp, &p);
    *op = g->op;
    if (g->op == OP_CONST_ONES)
        vp->n_list = g->rank;
    for (int32_t k = 0; k < g->n_int; k++) {
        const va_spec *a = &g->iarg[k];
        int64_t c;
        switch (a->kind) {
        case VA_KEY:
            vp->v[a->key] = iarg[k];
            break;
        case VA_PAD:
            vp->v[PM_PAD] = iarg[k];
            break;
        case VA_PERM: {
            int64_t list[OPS_MAX_DIMS];
            int32_t r = in0 ? in0->rank : 0;
            if (vx_is_num(&iarg[k], &c) && vsig_perm_decode(c, r, list) == 0) {
                vp->n_list = r;
                for (int32_t i = 0; i < r; i++)
                    vp->list[i] = vx_num(list[i]);
            } else {
                vp->n_list = 0; /* the model rejects it */
            }
            break;
        }
        case VA_LIST:
            vp->list[a->idx] = iarg[k];
            break;
        case VA_SIZE0:
            break;
        }
    }
    if (g->op == OP_SPLIT) {
        int64_t ax = 0;
        vx_is_num(&vp->v[PM_AXIS], &ax);
        vp->v[PM_PARTS] = vx_num(2);
        vp->n_list = 2;
        vp->list[0] = iarg[1];
        /* the second part: dim - n (both constants when typing concretely; ct_sym_type redoes it
         * symbolically) */
        int64_t d = 0, n = 0;
        if (in0 && ax >= 0 && ax < in0->rank)
            vx_is_num(&in0->d[ax], &d);
        vx_is_num(&iarg[1], &n);
        vp->list[1] = vx_num(d - n);
    }
}

/* Concrete typing of a node: 1 well typed, else VM_ILLTYPED / VM_UNSUPPORTED / -3 (the model and
 * the op table disagree); the reason in I->why[node]. */
static int ct_type(const ct_axiom *A, ct_inst *I, int32_t node) {
    if (I->st[node])
        return I->st[node];
    const ct_node *nd = &A->nodes[node];
    if (nd->k == CT_VAR) {
        I->shape[node] = I->tshape[nd->var];
        return I->st[node] = 1;
    }
    if (nd->k == CT_ITE) {
        int b;
        if (ct_bval(A, I, nd->a[0], &b)) {
            snprintf(I->why[node], sizeof I->why[node], "undefined condition");
            return I->st[node] = VM_ILLTYPED;
        }
        int r = ct_type(A, I, nd->a[b ? 1 : 2]);
        I->shape[node] = I->shape[nd->a[b ? 1 : 2]];
        memcpy(I->why[node], I->why[nd->a[b ? 1 : 2]], sizeof I->why[node]);
        return I->st[node] = r;
    }
    if (nd->k != CT_APP) {
        snprintf(I->why[node], sizeof I->why[node], "not a tensor");
        return I->st[node] = VM_ILLTYPED;
    }
    const vsig *g = &vsig_table[nd->sig];
    vx iarg[VSIG_MAX_INT];
    for (int32_t k = 0; k < g->n_int; k++) {
        int64_t v;
        if (ct_ival(A, I, nd->a[k], &v)) {
            snprintf(I->why[node], sizeof I->why[node], "an integer argument is undefined");
            return I->st[node] = VM_ILLTYPED;
        }
        iarg[k] = vx_num(v);
    }
    vshape in[4];
    ops_shape ins[4];
    for (int32_t k = 0; k < g->n_t; k++) {
        int32_t a = nd->a[g->n_int + k];
        int r = ct_type(A, I, a);
        if (r != 1) {
            memcpy(I->why[node], I->why[a], sizeof I->why[node]);
            return I->st[node] = r;
        }
        ins[k] = I->shape[a];
        in[k].rank = ins[k].rank;
        for (int32_t d = 0; d < ins[k].rank; d++)
            in[k].d[d] = vx_num(ins[k].dims[d]);
    }
    ops_type op;
    vparams vp;
    ct_decode(nd->sig, iarg, g->n_t ? &in[0] : NULL, &op, &vp);
    vsys_init(&I->S);
    vshape out[OPS_MAX_OUTPUTS];
    int32_t n_out = 0;
    char m[200];
    int r = vm_infer(&I->S, op, &vp, g->n_t, in, &n_out, out, m, sizeof m);
    if (r != VM_OK) {
        snprintf(I->why[node], sizeof I->why[node], "%.95s", m);
        return I->st[node] = r;
    }
    /* the concrete parameters, and the op table's own verdict */
    ops_params *p = &I->params[node];
    ops_params_default(op, p);
    for (int k = 0; k < PM_COUNT; k++)
        vx_is_num(&vp.v[k], &p->v[k]);
    p->n_list = vp.n_list;
    for (int32_t i = 0; i < vp.n_list; i++)
        vx_is_num(&vp.list[i], &p->list[i]);
    if (op == OP_SPLIT)
        p->v[PM_PARTS] = 2;
    ops_shape os[OPS_MAX_OUTPUTS];
    int32_t no = 0;
    char e2[256];
    if (ops_infer(op, p, g->n_t, ins, &no, os, e2, sizeof e2) < 0) {
        snprintf(I->why[node], sizeof I->why[node], "model says well typed, op table says: %.50s", e2);
        return I->st[node] = -3;
    }
    int64_t oc;
    ops_shape ms;
    ms.rank = out[g->out].rank;
    memset(ms.dims, 0, sizeof ms.dims);
    for (int32_t d = 0; d < ms.rank; d++) {
        vx_is_num(&out[g->out].d[d], &oc);
        ms.dims[d] = oc;
    }
    if (!ops_shape_eq(&ms, &os[g->out])) {
        snprintf(I->why[node], sizeof I->why[node], "the model's output shape differs from the op table's");
        return I->st[node] = -3;
    }
    I->op[node] = op;
    I->shape[node] = os[g->out];
    return I->st[node] = 1;
}

/* Values of a well-typed tensor node (memoised). NULL when out of memory. */
static const float *ct_eval(const ct_axiom *A, ct_inst *I, int32_t node, uint64_t seed) {
    if (I->buf[node])
        return I->buf[node];
    const ct_node *nd = &A->nodes[node];
    int64_t n = ops_shape_numel(&I->shape[node]);
    if (nd->k == CT_VAR) {
        I->buf[node] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        if (I->buf[node])
            graph_fill_normal(I->buf[node], n, seed ^ verify_hash64(&nd->var, sizeof nd->var, 77), 0.0f, 1.0f);
        return I->buf[node];
    }
    if (nd->k == CT_ITE) {
        int b = 0;
        ct_bval(A, I, nd->a[0], &b);
        const float *s = ct_eval(A, I, nd->a[b ? 1 : 2], seed);
        if (!s)
            return NULL;
        I->buf[node] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        if (I->buf[node])
            memcpy(I->buf[node], s, (size_t)n * sizeof(float));
        return I->buf[node];
    }
    const vsig *g = &vsig_table[nd->sig];
    const float *in[4];
    ops_shape ins[4];
    for (int32_t k = 0; k < g->n_t; k++) {
        int32_t a = nd->a[g->n_int + k];
        in[k] = ct_eval(A, I, a, seed);
        if (!in[k])
            return NULL;
        ins[k] = I->shape[a];
    }
    ops_shape os[OPS_MAX_OUTPUTS];
    int32_t no = 0;
    if (ops_infer(I->op[node], &I->params[node], g->n_t, ins, &no, os, NULL, 0) < 0)
        return NULL;
    float *out[OPS_MAX_OUTPUTS];
    int bad = 0;
    for (int32_t q = 0; q < no; q++) {
        int64_t m = ops_shape_numel(&os[q]);
        out[q] = malloc((size_t)(m > 0 ? m : 1) * sizeof(float));
        bad |= !out[q];
    }
    if (!bad) {
        ops_sig sg = {.op = I->op[node], .p = &I->params[node], .n_in = g->n_t, .n_out = no, .in = ins, .out = os};
        ops_table[I->op[node]].cpu(&sg, in, out);
    }
    for (int32_t q = 0; q < no; q++)
        if (q != g->out || bad)
            free(out[q]);
    if (bad)
        return NULL;
    I->buf[node] = out[g->out];
    return I->buf[node];
}

/* --- the dim model --------------------------------------------------------------------------------- */

/* What Z3 knows of a term's shape is only what the dim_* axioms say: (dim (f ...) i) for any
 * arguments, well typed or not (dim_matmul gives matmul(x,y) the dims (dim x 0, dim y 1, 1, 1)
 * whatever the inner dims are). ct_dim_of computes that for a node of the axiom under check by
 * evaluating the dim axiom of its function with the node's arguments; a variable's dims past its
 * rank are 1 (the encoding of a rule asserts that), a function without a dim axiom has them
 * undetermined. Two sides whose dims differ where both are determined would let Z3 derive 2 = 3
 * from the axiom's instance. */

typedef struct {
    const ct_axiom *A;   /* every axiom of the file */
    int32_t *def;        /* per vsig: the axiom (dim (f v...) i) = E defining its dims, or -1 */
} ct_dimdefs;

typedef struct {
    const ct_dimdefs *dd;
    const ct_axiom *A;   /* the axiom under check */
    ct_inst *I;
    int depth;
} ct_dctx;

/* The bound variables of a dim axiom: its T variables stand for nodes of the axiom under check. */
typedef struct {
    int32_t node[CT_MAX_BOUND];
    int known[CT_MAX_BOUND];
    int64_t v[CT_MAX_BOUND];
} ct_env;

static int ct_dim_of(ct_dctx *c, int32_t node, int64_t i, int64_t *v);
static int ct_sx_bool(ct_dctx *c, const ct_axiom *X, const ct_env *env, int32_t n, int *b);

/* An integer expression of X (the axiom under check when env is NULL, else a dim axiom with its
 * variables bound by env) in the dim model: 0, or CT_UNDEF when undetermined. */
static int ct_sx_int(ct_dctx *c, const ct_axiom *X, const ct_env *env, int32_t n, int64_t *v) {
    const ct_node *nd = &X->nodes[n];
    int64_t x, y;
    switch (nd->k) {
    case CT_NUM:
        *v = nd->num;
        return 0;
    case CT_VAR:
        if (nd->is_t || (env && !env->known[nd->var]))
            return CT_UNDEF;
        *v = env ? env->v[nd->var] : c->I->ival[nd->var];
        return 0;
    case CT_DIM: {
        const ct_node *t = &X->nodes[nd->a[0]];
        if (ct_sx_int(c, X, env, nd->a[1], &y))
            return CT_UNDEF;
        if (!env)
            return ct_dim_of(c, nd->a[0], y, v);
        return t->k == CT_VAR && t->is_t ? ct_dim_of(c, env->node[t->var], y, v) : CT_UNDEF;
    }
    case CT_ADD:
    case CT_MUL:
    case CT_SUB:
    case CT_NEG:
    case CT_DIV:
    case CT_MOD: {
        int64_t xs[CT_MAX_ARGS];
        for (int32_t i = 0; i < nd->n; i++)
            if (ct_sx_int(c, X, env, nd->a[i], &xs[i]))
                return CT_UNDEF;
        return ct_arith(nd->k, xs, nd->n, v);
    }
    case CT_ITE: {
        int b;
        if (ct_sx_bool(c, X, env, nd->a[0], &b) == 0)
            return ct_sx_int(c, X, env, nd->a[b ? 1 : 2], v);
        /* an undetermined condition: determined only when both branches agree */
        if (ct_sx_int(c, X, env, nd->a[1], &x) || ct_sx_int(c, X, env, nd->a[2], &y) || x != y)
            return CT_UNDEF;
        *v = x;
        return 0;
    }
    default:
        return CT_UNDEF;
    }
}

/* A condition of X in the dim model, three-valued: 0 with *b, or CT_UNDEF. */
static int ct_sx_bool(ct_dctx *c, const ct_axiom *X, const ct_env *env, int32_t n, int *b) {
    const ct_node *nd = &X->nodes[n];
    int64_t x, y;
    int p, q, rp, rq;
    switch (nd->k) {
    case CT_TRUE:
    case CT_FALSE:
        *b = nd->k == CT_TRUE;
        return 0;
    case CT_NOT:
        if (ct_sx_bool(c, X, env, nd->a[0], &p))
            return CT_UNDEF;
        *b = !p;
        return 0;
    case CT_AND:
    case CT_OR: { /* a false conjunct (a true disjunct) decides it even when others are undetermined */
        int undet = 0, dec = nd->k == CT_OR;
        for (int32_t i = 0; i < nd->n; i++) {
            if (ct_sx_bool(c, X, env, nd->a[i], &p))
                undet = 1;
            else if (p == dec) {
                *b = dec;
                return 0;
            }
        }
        if (undet)
            return CT_UNDEF;
        *b = !dec;
        return 0;
    }
    case CT_IMPLIES:
        rp = ct_sx_bool(c, X, env, nd->a[0], &p);
        rq = ct_sx_bool(c, X, env, nd->a[1], &q);
        if ((!rp && !p) || (!rq && q)) {
            *b = 1;
            return 0;
        }
        if (rp || rq)
            return CT_UNDEF;
        *b = 0;
        return 0;
    case CT_EQ:
    case CT_DISTINCT:
        if (X->nodes[nd->a[0]].is_t)
            return CT_UNDEF;
        *b = 1;
        for (int32_t i = 0; i < nd->n; i++)
            for (int32_t j = i + 1; j < nd->n; j++) {
                if (ct_sx_int(c, X, env, nd->a[i], &x) || ct_sx_int(c, X, env, nd->a[j], &y))
                    return CT_UNDEF;
                if (nd->k == CT_EQ ? x != y : x == y)
                    *b = 0;
            }
        return 0;
    case CT_LT:
    case CT_LE:
    case CT_GT:
    case CT_GE:
        if (ct_sx_int(c, X, env, nd->a[0], &x) || ct_sx_int(c, X, env, nd->a[1], &y))
            return CT_UNDEF;
        *b = nd->k == CT_LT ? x < y : nd->k == CT_LE ? x <= y : nd->k == CT_GT ? x > y : x >= y;
        return 0;
    case CT_ITE:
        if (ct_sx_bool(c, X, env, nd->a[0], &p))
            return CT_UNDEF;
        return ct_sx_bool(c, X, env, nd->a[p ? 1 : 2], b);
    default:
        return CT_UNDEF;
    }
}

/* Dim i of a tensor node of the axiom under check, in the dim model (memoised per instance). */
static int ct_dim_of(ct_dctx *c, int32_t node, int64_t i, int64_t *v) {
    if (i < 0 || i >= CT_NDIM)
        return CT_UNDEF;
    ct_inst *I = c->I;
    if (I->dk[node][i]) {
        *v = I->dv[node][i];
        return I->dk[node][i] == 1 ? 0 : CT_UNDEF;
    }
    const ct_node *nd = &c->A->nodes[node];
    int r = CT_UNDEF, b;
    int64_t x = 0;
    if (nd->k == CT_VAR && nd->is_t) { /* past its rank, 1 (the encoding asserts it for a rule's variables) */
        x = i < I->tshape[nd->var].rank ? I->tshape[nd->var].dims[i] : 1;
        r = 0;
    } else if (nd->k == CT_ITE && nd->is_t) {
        if (ct_sx_bool(c, c->A, NULL, nd->a[0], &b) == 0)
            r = ct_dim_of(c, nd->a[b ? 1 : 2], i, &x);
    } else if (nd->k == CT_APP && c->dd->def[nd->sig] >= 0 && c->depth < 64) {
        const ct_axiom *X = &c->dd->A[c->dd->def[nd->sig]];
        const ct_node *lhs = &X->nodes[X->lhs];
        const ct_node *pat = &X->nodes[lhs->a[0]];
        ct_env env;
        memset(&env, 0, sizeof env);
        for (int32_t k = 0; k < pat->n && k < nd->n; k++) {
            const ct_node *pv = &X->nodes[pat->a[k]];
            if (pv->is_t)
                env.node[pv->var] = nd->a[k];
            else
                env.known[pv->var] = ct_sx_int(c, c->A, NULL, nd->a[k], &env.v[pv->var]) == 0;
        }
        int32_t iv = X->nodes[lhs->a[1]].var;
        env.known[iv] = 1;
        env.v[iv] = i;
        c->depth++;
        r = ct_sx_int(c, X, &env, X->rhs, &x);
        c->depth--;
    }
    I->dk[node][i] = r == 0 ? 1 : 2;
    I->dv[node][i] = x;
    *v = x;
    return r;
}

/* The first index where the dim model gives the two sides different determined dims, or -1. */
static int32_t ct_dims_differ(ct_dctx *c, int32_t lhs, int32_t rhs, int64_t *x, int64_t *y) {
    for (int32_t i = 0; i < CT_NDIM; i++)
        if (ct_dim_of(c, lhs, i, x) == 0 && ct_dim_of(c, rhs, i, y) == 0 && *x != *y)
            return i;
    return -1;
}

/* The dim axioms: (forall (v... i) (= (dim (f v...) i) E)) with distinct variables, one per f. */
static int32_t *ct_find_dimdefs(const ct_axiom *A, int32_t n) {
    int32_t *def = malloc((size_t)(vsig_count > 0 ? vsig_count : 1) * sizeof *def);
    if (!def)
        return NULL;
    for (int32_t s = 0; s < vsig_count; s++)
        def[s] = -1;
    for (int32_t a = 0; a < n; a++) {
        const ct_axiom *X = &A[a];
        const ct_node *lhs = &X->nodes[X->lhs];
        if (X->cond >= 0 || lhs->k != CT_DIM || X->nodes[lhs->a[0]].k != CT_APP || X->nodes[lhs->a[1]].k != CT_VAR)
            continue;
        const ct_node *pat = &X->nodes[lhs->a[0]];
        uint32_t seen = 1u << X->nodes[lhs->a[1]].var;
        int ok = 1;
        for (int32_t k = 0; k < pat->n && ok; k++) {
            const ct_node *pv = &X->nodes[pat->a[k]];
            ok = pv->k == CT_VAR && !(seen >> pv->var & 1);
            if (ok)
                seen |= 1u << pv->var;
        }
        if (ok && def[pat->sig] < 0)
            def[pat->sig] = a;
    }
    return def;
}

/* --- enumeration -------------------------------------------------------------------------------- */

typedef struct {
    const ct_axiom *A;
    const verify_check_config *cfg;
    verify_axiom_report *rep;
    ct_inst *I;
    int32_t pat;
    /* the symbolic system of one (integer values, ranks) choice */
    vsys S;
    vshape tsym[CT_MAX_BOUND];
    int32_t isym[CT_MAX_BOUND];   /* symbol of a symbolic Int variable */
    vshape nsh[CT_MAX_NODES];
    int nst[CT_MAX_NODES];
    int64_t counted, stride, seen;
    int pass;                     /* 0: count, 1: evaluate */
    uint64_t seed;
    const ct_dimdefs *dd;
    int64_t ill_stride, ill_seen; /* the ill-shaped pass: which well-typed instances it perturbs */
} ct_enum;

/* Symbolic typing of a trigger term; VM_OK or a failure. */
static int ct_sym_type(ct_enum *E, int32_t node) {
    if (E->nst[node])
        return E->nst[node] == 1 ? VM_OK : E->nst[node];
    const ct_axiom *A = E->A;
    const ct_node *nd = &A->nodes[node];
    if (nd->k == CT_VAR && nd->is_t) {
        E->nsh[node] = E->tsym[nd->var];
        E->nst[node] = 1;
        return VM_OK;
    }
    if (nd->k == CT_DIM) { /* a trigger (dim t i): t must type */
        int r = ct_sym_type(E, nd->a[0]);
        E->nst[node] = r == VM_OK ? 1 : r;
        return r;
    }
    if (nd->k != CT_APP) {
        E->nst[node] = VM_UNSUPPORTED;
        return VM_UNSUPPORTED;
    }
    const vsig *g = &vsig_table[nd->sig];
    vx iarg[VSIG_MAX_INT];
    for (int32_t k = 0; k < g->n_int; k++) {
        const ct_node *ar = &A->nodes[nd->a[k]];
        if (ar->k == CT_NUM)
            iarg[k] = vx_num(ar->num);
        else if (ar->k == CT_VAR && !ar->is_t)
            iarg[k] = A->symbolic[ar->var] ? vx_sym(E->isym[ar->var]) : vx_num(E->I->ival[ar->var]);
        else
            return E->nst[node] = VM_UNSUPPORTED; /* a computed argument in a trigger */
    }
    vshape in[4];
    for (int32_t k = 0; k < g->n_t; k++) {
        int r = ct_sym_type(E, nd->a[g->n_int + k]);
        if (r != VM_OK)
            return E->nst[node] = r;
        in[k] = E->nsh[nd->a[g->n_int + k]];
    }
    ops_type op;
    vparams vp;
    ct_decode(nd->sig, iarg, g->n_t ? &in[0] : NULL, &op, &vp);
    if (op == OP_SPLIT) { /* the second size: input dim - n, symbolically */
        int64_t ax = 0;
        vx_is_num(&vp.v[PM_AXIS], &ax);
        if (ax >= 0 && ax < in[0].rank)
            vp.list[1] = vsys_sub(&E->S, in[0].d[ax], iarg[1]);
    }
    vshape out[OPS_MAX_OUTPUTS];
    int32_t n_out = 0;
    char m[200];
    int r = vm_infer(&E->S, op, &vp, g->n_t, in, &n_out, out, m, sizeof m);
    if (r != VM_OK)
        return E->nst[node] = r;
    E->nsh[node] = out[g->out];
    E->nst[node] = 1;
    return VM_OK;
}

static void ct_fail(verify_axiom_report *rep, const char *fmt, ...) VERIFY_PRINTF(2, 3);
static void ct_fail(verify_axiom_report *rep, const char *fmt, ...) {
    if (rep->failures++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        base_vfail(rep->first_failure, sizeof rep->first_failure, fmt, ap);
        va_end(ap);
    }
}

static void ct_ill_fail(verify_axiom_report *rep, const char *fmt, ...) VERIFY_PRINTF(2, 3);
static void ct_ill_fail(verify_axiom_report *rep, const char *fmt, ...) {
    if (rep->ill_failures++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        base_vfail(rep->ill_first_failure, sizeof rep->ill_first_failure, fmt, ap);
        va_end(ap);
    }
}

/* The instantiation's description for messages: "x (2,3), ax = 1". */
static void ct_describe(const ct_axiom *A, const ct_inst *I, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    for (int32_t v = 0; v < A->n_bound && n < len - 40; v++) {
        char sb[64];
        if (A->bt[v])
            n += (size_t)snprintf(buf + n, len - n, "%s%s %s", n ? ", " : "", A->bname[v],
                                  ops_shape_str(&I->tshape[v], sb, sizeof sb));
        else
            n += (size_t)snprintf(buf + n, len - n, "%s%s = %lld", n ? ", " : "", A->bname[v], (long long)I->ival[v]);
    }
}

/* Every term of the axiom under the current instance: well typed, sides equal. */
/* Are the terms of the current trigger well typed? (A model / op table disagreement fails the
 * axiom.) */
static int ct_trigger_typed(ct_enum *E) {
    const ct_axiom *A = E->A;
    ct_inst *I = E->I;
    for (int32_t t = 0; t < A->pat_n[E->pat]; t++) {
        int32_t pt = A->pat[E->pat][t];
        int64_t iv;
        /* (dim t i) is a trigger term when dim i of t is defined (0..3, or below its rank) */
        if (A->nodes[pt].k == CT_DIM) {
            if (ct_type(A, I, A->nodes[pt].a[0]) != 1 || ct_ival(A, I, pt, &iv))
                return 0;
            continue;
        }
        if (ct_type(A, I, pt) != 1) {
            if (I->st[pt] == -3) {
                char desc[200];
                ct_describe(A, I, desc, sizeof desc);
                ct_fail(E->rep, "at %s: %s", desc, I->why[pt]);
            }
            return 0; /* the model and the symbols disagree only on bounds: not an instance */
        }
    }
    return 1;
}

/* Evaluate both (well-typed) sides on random values: 1 when they differ, 0 when they agree, -1
 * out of memory; *rel gets the relative error. `salt` varies the values between instances. */
static int ct_values_differ(ct_enum *E, int64_t salt, double *rel) {
    const ct_axiom *A = E->A;
    ct_inst *I = E->I;
    uint64_t seed = E->seed ^ verify_hash64(&salt, sizeof salt, 0x11);
    const float *a = ct_eval(A, I, A->lhs, seed), *b = ct_eval(A, I, A->rhs, seed);
    if (!a || !b)
        return -1;
    int64_t n = ops_shape_numel(&I->shape[A->lhs]);
    double num = 0, na = 0, nb = 0;
    for (int64_t e = 0; e < n; e++) {
        double d = (double)a[e] - (double)b[e];
        num += d * d;
        na += (double)a[e] * a[e];
        nb += (double)b[e] * b[e];
    }
    double den = sqrt(na > nb ? na : nb);
    *rel = den > 1e-30 ? sqrt(num) / den : sqrt(num);
    /* float32 rounding: a relative bound, and an absolute one for outputs near zero (a relu of a
     * sum that cancels); a false axiom misses both by orders of magnitude */
    return !(*rel <= CT_TOL || sqrt(num) <= 1e-5 * sqrt((double)n));
}

/* Every term of the axiom under the current instance: well typed, sides equal (values, and dims
 * in the dim model). 1 when the trigger was well typed (a base for the ill-shaped pass), else 0. */
static int ct_check_instance(ct_enum *E) {
    const ct_axiom *A = E->A;
    ct_inst *I = E->I;
    verify_axiom_report *rep = E->rep;
    char desc[200];
    if (!ct_trigger_typed(E))
        return 0;
    if (A->cond >= 0) {
        int b;
        if (ct_bval(A, I, A->cond, &b)) {
            ct_describe(A, I, desc, sizeof desc);
            ct_fail(rep, "at %s: the side condition reads an undefined dim", desc);
            return 1;
        }
        if (!b)
            return 1;
    }
    rep->instances++;
    if (E->stride > 1 && (E->seen++ % E->stride) != 0)
        return 1;
    int is_t = A->nodes[A->lhs].is_t;
    for (int side = 0; side < 2; side++) {
        int32_t root = side ? A->rhs : A->lhs;
        if (is_t && ct_type(A, I, root) != 1) {
            ct_describe(A, I, desc, sizeof desc);
            ct_fail(rep, "at %s: the trigger is well typed but the %s side is not (%s)", desc, side ? "right" : "left",
                    I->why[root]);
            return 1;
        }
    }
    rep->evaluated++;
    if (!is_t) {
        int64_t x, y;
        if (ct_ival(A, I, A->lhs, &x) || ct_ival(A, I, A->rhs, &y)) {
            ct_describe(A, I, desc, sizeof desc);
            ct_fail(rep, "at %s: a side is undefined", desc);
        } else if (x != y) {
            ct_describe(A, I, desc, sizeof desc);
            ct_fail(rep, "at %s: %lld != %lld", desc, (long long)x, (long long)y);
        }
        return 1;
    }
    if (!ops_shape_eq(&I->shape[A->lhs], &I->shape[A->rhs])) {
        char s1[64], s2[64];
        ct_describe(A, I, desc, sizeof desc);
        ct_fail(rep, "at %s: the sides have shapes %s and %s", desc, ops_shape_str(&I->shape[A->lhs], s1, sizeof s1),
                ops_shape_str(&I->shape[A->rhs], s2, sizeof s2));
        return 1;
    }
    ct_dctx dc = {E->dd, A, I, 0};
    int64_t dx, dy;
    int32_t di = E->dd ? ct_dims_differ(&dc, A->lhs, A->rhs, &dx, &dy) : -1;
    if (di >= 0) {
        ct_describe(A, I, desc, sizeof desc);
        ct_fail(rep, "at %s: the dim axioms give the sides dim %d = %lld and %lld", desc, (int)di, (long long)dx,
                (long long)dy);
        return 1;
    }
    double rel;
    int d = ct_values_differ(E, rep->evaluated, &rel);
    if (d < 0) {
        ct_fail(rep, "out of memory evaluating");
        return 1;
    }
    if (isnan(rel) || rel > rep->max_rel_err)
        rep->max_rel_err = isnan(rel) ? INFINITY : rel;
    if (d) {
        ct_describe(A, I, desc, sizeof desc);
        ct_fail(rep, "at %s: the sides differ on random values (relative error %.3g)", desc, rel);
    }
    return 1;
}

/* One ill-shaped instance (the current values of I): when a trigger term is ill typed and the side
 * condition, read in the dim model, does not exclude it, the sides must have the same dims there
 * and, when both happen to be well typed, the same values. */
static void ct_ill_one(ct_enum *E) {
    const ct_axiom *A = E->A;
    ct_inst *I = E->I;
    verify_axiom_report *rep = E->rep;
    ct_inst_reset(I, A->n_nodes);
    int typed = 1;
    for (int32_t t = 0; t < A->pat_n[E->pat] && typed; t++) {
        int32_t pt = A->pat[E->pat][t];
        typed = ct_type(A, I, A->nodes[pt].k == CT_DIM ? A->nodes[pt].a[0] : pt) == 1;
    }
    if (typed)
        return; /* still well typed: the first pass's instance */
    ct_dctx dc = {E->dd, A, I, 0};
    int b;
    rep->ill_instances++;
    if (A->cond >= 0 && ct_sx_bool(&dc, A, NULL, A->cond, &b) == 0 && !b) {
        rep->ill_excluded++;
        return;
    }
    char desc[200];
    int64_t x, y;
    int32_t di = ct_dims_differ(&dc, A->lhs, A->rhs, &x, &y);
    if (di >= 0) {
        ct_describe(A, I, desc, sizeof desc);
        ct_ill_fail(rep, "at %s (ill-shaped, %s): the sides get dim %d = %lld and %lld", desc,
                    A->cond >= 0 ? "side condition holds" : "no side condition", (int)di, (long long)x, (long long)y);
        return;
    }
    if (ct_type(A, I, A->lhs) == 1 && ct_type(A, I, A->rhs) == 1 &&
        ops_shape_eq(&I->shape[A->lhs], &I->shape[A->rhs])) {
        double rel;
        int d = ct_values_differ(E, rep->ill_instances, &rel);
        if (d < 0) {
            ct_ill_fail(rep, "out of memory evaluating");
        } else if (d) {
            ct_describe(A, I, desc, sizeof desc);
            ct_ill_fail(rep, "at %s (ill-shaped): the sides differ on random values (relative error %.3g)", desc, rel);
        }
    }
}

/* The ill-shaped neighbours of a well-typed instance: each dim of each tensor variable, and each
 * integer variable that stands for a size, one up and one down (never below 1). Ranks are kept
 * (verifier/README.md says what a rank mismatch finds). */
static void ct_perturb(ct_enum *E) {
    const ct_axiom *A = E->A;
    ct_inst *I = E->I;
    static const int64_t delta[2] = {-1, 1};
    /* tensor equalities only (a dim axiom defines the model); every ill_stride-th base */
    if (!E->dd || !A->nodes[A->lhs].is_t || E->cfg->ill_bases <= 0 || E->ill_seen++ % E->ill_stride != 0)
        return;
    for (int32_t v = 0; v < A->n_bound && E->rep->ill_failures <= 20; v++) {
        int32_t nd = A->bt[v] ? I->tshape[v].rank : A->symbolic[v] ? 1 : 0;
        for (int32_t d = 0; d < nd; d++) {
            int64_t *slot = A->bt[v] ? &I->tshape[v].dims[d] : &I->ival[v];
            int64_t orig = *slot;
            for (int k = 0; k < 2; k++) {
                if (orig + delta[k] < 1)
                    continue;
                *slot = orig + delta[k];
                ct_ill_one(E);
            }
            *slot = orig;
        }
    }
}

static int64_t ct_sym_lo(vs_kind k) { return k == VS_AUX ? 0 : 1; }

/* Enumerate the free symbols of E->S (recursively over symbol index). */
static void ct_enum_syms(ct_enum *E, int32_t s, int64_t *val) {
    vsys *S = &E->S;
    if (E->rep->failures > 20)
        return;
    while (s < S->n_sym && !(S->sub[s].n == 1 && S->sub[s].s[0] == s && S->sub[s].k[0] == 1 && S->sub[s].c == 0))
        s++;
    if (s < S->n_sym) {
        int64_t lo = ct_sym_lo(S->kind[s]);
        int64_t hi = S->kind[s] == VS_AUX ? 2 * E->cfg->max_dim : S->kind[s] == VS_KERNEL ? 3 : E->cfg->max_dim;
        /* bounds from the constraints in which s is the last symbol not yet given a value (the
         * free symbols are enumerated in index order, so those below s have theirs) */
        for (int32_t i = 0; i < S->n_cons && lo <= hi; i++) {
            const vx *e = &S->cons[i].e;
            int64_t ks = 0, rest = e->c;
            int later = 0;
            for (int32_t t = 0; t < e->n; t++) {
                if (e->s[t] == s)
                    ks = e->k[t];
                else if (e->s[t] > s)
                    later = 1;
                else
                    rest += e->k[t] * val[e->s[t]];
            }
            if (later || ks == 0)
                continue;
            if (S->cons[i].kind == VC_EQ) { /* ks*s + rest == 0 */
                if ((-rest) % ks != 0) {
                    lo = hi + 1;
                    break;
                }
                int64_t x = -rest / ks;
                if (x > lo)
                    lo = x;
                if (x < hi)
                    hi = x;
            } else if (ks > 0) { /* s >= ceil(-rest / ks) */
                int64_t num = -rest, x = num >= 0 ? (num + ks - 1) / ks : -((-num) / ks);
                if (x > lo)
                    lo = x;
            } else { /* s <= floor(rest / -ks) */
                int64_t d = -ks, x = rest >= 0 ? rest / d : -((-rest + d - 1) / d);
                if (x < hi)
                    hi = x;
            }
        }
        for (int64_t v = lo; v <= hi; v++) {
            if (S->kind[s] == VS_KERNEL && v != 1 && v != 3)
                continue;
            val[s] = v;
            ct_enum_syms(E, s + 1, val);
        }
        return;
    }
    /* a full assignment: constraints, domains of the variables' dims, then the instance */
    for (int32_t i = 0; i < S->n_cons; i++) {
        int64_t v = vsys_eval(S, S->cons[i].e, val);
        if (S->cons[i].kind == VC_EQ ? v != 0 : v < 0)
            return;
    }
    const ct_axiom *A = E->A;
    ct_inst *I = E->I;
    for (int32_t v = 0; v < A->n_bound; v++) {
        if (A->bt[v]) {
            I->tshape[v].rank = E->tsym[v].rank;
            memset(I->tshape[v].dims, 0, sizeof I->tshape[v].dims);
            for (int32_t d = 0; d < E->tsym[v].rank; d++) {
                int64_t x = vsys_eval(S, vsys_apply(S, E->tsym[v].d[d]), val);
                int kern = A->kernel[v] && d >= 2; /* kernel sizes 1 and 3 whatever max_dim is */
                if (kern ? (x != 1 && x != 3) : (x < 1 || x > E->cfg->max_dim))
                    return;
                I->tshape[v].dims[d] = x;
            }
        } else if (A->symbolic[v]) {
            int64_t x = vsys_eval(S, vsys_apply(S, vx_sym(E->isym[v])), val);
            if (x < 1 || x > 2 * E->cfg->max_dim)
                return;
            I->ival[v] = x;
        }
    }
    if (E->pass == 0) {
        E->counted++;
        return;
    }
    ct_inst_reset(I, A->n_nodes);
    if (ct_check_instance(E))
        ct_perturb(E);
}

static const int64_t ct_dom_stride[] = {1, 2}, ct_dom_pad[] = {OPS_PAD_SAME, OPS_PAD_VALID},
                     ct_dom_groups[] = {1, 2, 3, 4}, ct_dom_act[] = {OPS_ACT_NONE, OPS_ACT_RELU},
                     ct_dom_axis[] = {0, 1, 2, 3}, ct_dom_perm[] = {10}, ct_dom_ksize[] = {1, 3},
                     ct_dom_index[] = {0, 1, 2, 3};

static const int64_t *ct_domain(vd_domain d, int32_t *n) {
    switch (d) {
    case VD_STRIDE: *n = 2; return ct_dom_stride;
    case VD_PAD: *n = 2; return ct_dom_pad;
    case VD_GROUPS: *n = 4; return ct_dom_groups;
    case VD_ACT: *n = 2; return ct_dom_act;
    case VD_AXIS: *n = 4; return ct_dom_axis;
    case VD_PERM: *n = 1; return ct_dom_perm;
    case VD_KSIZE: *n = 2; return ct_dom_ksize;
    case VD_INDEX: *n = 4; return ct_dom_index;
    case VD_SIZE:
    case VD_COUNT:
        break;
    }
    *n = 0;
    return NULL;
}

/* One choice of integer values and ranks: type the trigger symbolically and enumerate. */
static void ct_enum_ranks(ct_enum *E, int32_t v) {
    const ct_axiom *A = E->A;
    if (E->rep->failures > 20)
        return;
    if (v < A->n_bound) {
        if (A->bt[v]) {
            for (int32_t r = 0; r <= 4; r++) {
                E->tsym[v].rank = r;
                ct_enum_ranks(E, v + 1);
            }
        } else if (!A->symbolic[v]) {
            int32_t n;
            const int64_t *d = ct_domain(A->dom[v], &n);
            for (int32_t i = 0; i < n; i++) {
                E->I->ival[v] = d[i];
                ct_enum_ranks(E, v + 1);
            }
        } else {
            ct_enum_ranks(E, v + 1);
        }
        return;
    }
    vsys *S = &E->S;
    vsys_init(S);
    for (int32_t b = 0; b < A->n_bound; b++) {
        if (A->bt[b]) {
            for (int32_t d = 0; d < E->tsym[b].rank; d++)
                E->tsym[b].d[d] = vx_sym(vsys_new_sym(S, A->kernel[b] && d >= 2 ? VS_KERNEL : VS_DIM));
        } else if (A->symbolic[b]) {
            E->isym[b] = vsys_new_sym(S, VS_DIM);
        }
    }
    memset(E->nst, 0, sizeof(int) * (size_t)A->n_nodes);
    for (int32_t t = 0; t < A->pat_n[E->pat]; t++)
        if (ct_sym_type(E, A->pat[E->pat][t]) != VM_OK)
            return;
    /* a dim pattern (dim T i): its index must be a dim of T */
    vsys_solve(S);
    if (S->infeasible || S->overflow)
        return;
    int64_t val[VS_MAX_SYM];
    memset(val, 0, sizeof val);
    ct_enum_syms(E, 0, val);
}

static void ct_check_axiom(const ct_axiom *A, const ct_dimdefs *dd, const verify_check_config *cfg,
                           verify_axiom_report *rep, ct_inst *I) {
    double t0 = base_now();
    ct_enum *E = calloc(1, sizeof *E);
    if (!E) {
        ct_fail(rep, "out of memory");
        return;
    }
    E->A = A;
    E->cfg = cfg;
    E->rep = rep;
    E->I = I;
    E->dd = dd;
    E->seed = (cfg->seed ? cfg->seed : 0x61786d) ^ verify_hash64(A->name, strlen(A->name), 3);
    int64_t cap = cfg->max_instances > 0 ? (cfg->max_instances + A->n_pat - 1) / A->n_pat : 0;
    int64_t ill_cap = cfg->ill_bases > 0 ? (cfg->ill_bases + A->n_pat - 1) / A->n_pat : 0;
    for (int32_t p = 0; p < A->n_pat; p++) {
        E->pat = p;
        E->pass = 0;
        E->counted = 0;
        ct_enum_ranks(E, 0);
        E->stride = cap > 0 && E->counted > cap ? (E->counted + cap - 1) / cap : 1;
        E->seen = 0;
        E->ill_stride = ill_cap > 0 && E->counted > ill_cap ? (E->counted + ill_cap - 1) / ill_cap : 1;
        E->ill_seen = 0;
        E->pass = 1;
        ct_enum_ranks(E, 0);
    }
    ct_inst_reset(I, A->n_nodes);
    if (rep->instances == 0 && rep->failures == 0)
        ct_fail(rep, "no legal instantiation on the small shapes (each dim 1..%lld, kernels 1 and 3)",
                (long long)cfg->max_dim);
    rep->time_s = base_now() - t0;
    free(E);
}

/* --- redundancy and probes ---------------------------------------------------------------------- */

/* Is axiom i implied by the others? Its negation, skolemised, under all other axioms. */
static void ct_redundancy(vz_ctx *z, int32_t i, double timeout_s, verify_axiom_report *rep) {
    Z3_context c = z->c;
    Z3_ast q = Z3_ast_vector_get(c, z->axioms, (unsigned)i);
    unsigned nb = Z3_get_quantifier_num_bound(c, q);
    Z3_ast_vector keep = Z3_mk_ast_vector(c);
    Z3_ast_vector_inc_ref(c, keep);
    Z3_ast to[CT_MAX_BOUND];
    for (unsigned j = 0; j < nb && j < CT_MAX_BOUND; j++) {
        unsigned b = nb - 1 - j; /* Var(j) is the bound variable nb-1-j */
        char nm[64];
        snprintf(nm, sizeof nm, "sk!%s", Z3_get_symbol_string(c, Z3_get_quantifier_bound_name(c, q, b)));
        to[j] = Z3_mk_const(c, Z3_mk_string_symbol(c, nm), Z3_get_quantifier_bound_sort(c, q, b));
        Z3_ast_vector_push(c, keep, to[j]);
    }
    Z3_ast body = Z3_substitute_vars(c, Z3_get_quantifier_body(c, q), nb, to);
    Z3_ast_vector_push(c, keep, body);
    Z3_ast neg = Z3_mk_not(c, body);
    Z3_ast_vector_push(c, keep, neg);
    Z3_params p = Z3_mk_params(c);
    Z3_params_inc_ref(c, p);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "timeout"), (unsigned)(timeout_s * 1000 + 0.5));
    Z3_solver_set_params(c, z->s, p);
    Z3_params_dec_ref(c, p);
    z->timeout_ms = 0; /* force vz_prove to set its own again */
    Z3_solver_push(c, z->s);
    Z3_solver_assert(c, z->s, neg);
    Z3_ast *as = malloc((size_t)z->n_axioms * sizeof *as);
    unsigned na = 0;
    for (int32_t k = 0; k < z->n_axioms && as; k++)
        if (k != i)
            as[na++] = z->lits[k];
    Z3_lbool r = as ? Z3_solver_check_assumptions(c, z->s, na, as) : Z3_L_UNDEF;
    if (r == Z3_L_FALSE) {
        rep->redundancy = VERIFY_RED_IMPLIED;
        Z3_ast_vector core = Z3_solver_get_unsat_core(c, z->s);
        Z3_ast_vector_inc_ref(c, core);
        size_t n = 0;
        for (int32_t k = 0; k < z->n_axioms; k++)
            for (unsigned u = 0; u < Z3_ast_vector_size(c, core); u++)
                if (Z3_is_eq_ast(c, Z3_ast_vector_get(c, core, u), z->lits[k]) && n < sizeof rep->implied_by - 50)
                    n += (size_t)snprintf(rep->implied_by + n, sizeof rep->implied_by - n, "%s%s", n ? "," : "",
                                          z->ax->names[k]);
        Z3_ast_vector_dec_ref(c, core);
    } else {
        rep->redundancy = r == Z3_L_TRUE ? VERIFY_RED_INDEPENDENT : VERIFY_RED_UNKNOWN;
    }
    free(as);
    Z3_solver_pop(c, z->s, 1);
    Z3_ast_vector_dec_ref(c, keep);
}

/* Known false equalities: the axioms must not prove any of them. */
static const struct {
    const char *name, *json;
} ct_probes[] = {
    {"ewadd(x,y) = x",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"y\",\"shape\":[2,3]}],"
     "\"src\":[{\"op\":\"ewadd\",\"inputs\":[\"x\",\"y\"]}],\"dst\":[],\"outputs\":[{\"src\":\"%0\",\"dst\":\"x\"}]}"},
    {"matmul(x,y) = matmul(y,x)",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[3,3]},{\"name\":\"y\",\"shape\":[3,3]}],"
     "\"src\":[{\"op\":\"matmul\",\"inputs\":[\"x\",\"y\"]}],\"dst\":[{\"op\":\"matmul\",\"inputs\":[\"y\",\"x\"]}],"
     "\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}]}"},
    {"relu(x) = x",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]}],\"src\":[{\"op\":\"relu\",\"inputs\":[\"x\"]}],"
     "\"dst\":[],\"outputs\":[{\"src\":\"%0\",\"dst\":\"x\"}]}"},
    {"ewmul(x,y) = ewadd(x,y)",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"y\",\"shape\":[2,3]}],"
     "\"src\":[{\"op\":\"ewmul\",\"inputs\":[\"x\",\"y\"]}],\"dst\":[{\"op\":\"ewadd\",\"inputs\":[\"x\",\"y\"]}],"
     "\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}]}"},
    {"concat(0,x,y) = concat(0,y,x)",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"y\",\"shape\":[2,3]}],"
     "\"src\":[{\"op\":\"concat\",\"params\":{\"axis\":0},\"inputs\":[\"x\",\"y\"]}],"
     "\"dst\":[{\"op\":\"concat\",\"params\":{\"axis\":0},\"inputs\":[\"y\",\"x\"]}],\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}]}"},
    {"transpose(x) = x",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[3,3]}],"
     "\"src\":[{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"x\"]}],\"dst\":[],"
     "\"outputs\":[{\"src\":\"%0\",\"dst\":\"x\"}]}"},
    {"split(concat(x,y)) = (y,x)",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"y\",\"shape\":[2,3]}],"
     "\"src\":[{\"op\":\"concat\",\"params\":{\"axis\":0},\"inputs\":[\"x\",\"y\"]},"
     "{\"op\":\"split\",\"params\":{\"axis\":0,\"parts\":2},\"inputs\":[\"%0\"]}],\"dst\":[],"
     "\"outputs\":[{\"src\":\"%1\",\"dst\":\"y\"},{\"src\":\"%1.1\",\"dst\":\"x\"}]}"},
    {"smul(x,s) = x",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"s\",\"shape\":[]}],"
     "\"src\":[{\"op\":\"smul\",\"inputs\":[\"x\",\"s\"]}],\"dst\":[],\"outputs\":[{\"src\":\"%0\",\"dst\":\"x\"}]}"},
    {"conv2d(x,w) with relu = without",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[1,4,5,6]},{\"name\":\"w\",\"shape\":[4,4,3,3]}],"
     "\"src\":[{\"op\":\"conv2d\",\"params\":{\"pad\":\"same\",\"act\":\"relu\"},\"inputs\":[\"x\",\"w\"]}],"
     "\"dst\":[{\"op\":\"conv2d\",\"params\":{\"pad\":\"same\"},\"inputs\":[\"x\",\"w\"]}],\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}]}"},
    {"avgpool2d(x) = maxpool2d(x)",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[1,4,5,6]}],"
     "\"src\":[{\"op\":\"avgpool2d\",\"params\":{\"kh\":3,\"kw\":3,\"pad\":\"same\"},\"inputs\":[\"x\"]}],"
     "\"dst\":[{\"op\":\"maxpool2d\",\"params\":{\"kh\":3,\"kw\":3,\"pad\":\"same\"},\"inputs\":[\"x\"]}],"
     "\"outputs\":[{\"src\":\"%0\",\"dst\":\"%0\"}]}"},
    {"matmul(x,I) = transpose(x)",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[3,3]}],"
     "\"src\":[{\"op\":\"const_imm\",\"params\":{\"n\":3},\"inputs\":[]},{\"op\":\"matmul\",\"inputs\":[\"x\",\"%0\"]}],"
     "\"dst\":[{\"op\":\"transpose\",\"params\":{\"perm\":[1,0]},\"inputs\":[\"x\"]}],"
     "\"outputs\":[{\"src\":\"%1\",\"dst\":\"%0\"}],\"constraints\":[{\"side\":\"src\",\"op\":0,\"param\":\"n\","
     "\"value\":3,\"equals\":[[\"x\",0],[\"x\",1]]}]}"},
    {"split0(concat(concat(x,y),z)) = x",
     "{\"id\":\"p\",\"vars\":[{\"name\":\"x\",\"shape\":[2,3]},{\"name\":\"y\",\"shape\":[2,3]},"
     "{\"name\":\"z\",\"shape\":[4,3]}],\"src\":[{\"op\":\"concat\",\"params\":{\"axis\":0},\"inputs\":[\"x\",\"y\"]},"
     "{\"op\":\"concat\",\"params\":{\"axis\":0},\"inputs\":[\"%0\",\"z\"]},"
     "{\"op\":\"split\",\"params\":{\"axis\":0,\"parts\":2},\"inputs\":[\"%1\"]},"
     "{\"op\":\"split\",\"params\":{\"axis\":0,\"parts\":2},\"inputs\":[\"%2\"]}],\"dst\":[{\"op\":\"ewadd\",\"inputs\":[\"x\",\"y\"]}],"
     "\"outputs\":[{\"src\":\"%3\",\"dst\":\"x\"},{\"src\":\"%3.1\",\"dst\":\"%0\"},{\"src\":\"%2.1\",\"dst\":\"z\"}]}"},
};

static void ct_probe(vz_ctx *z, int32_t k, double timeout_s, verify_probe_report *pr) {
    snprintf(pr->name, sizeof pr->name, "%s", ct_probes[k].name);
    char wrapped[4096], err[512];
    snprintf(wrapped, sizeof wrapped, "{\"format\":\"tasc-rules\",\"version\":1,\"op_set\":[],\"max_ops\":0,\"counts\":{},"
             "\"rules\":[%s]}", ct_probes[k].json);
    rules_set *rs = rules_from_json_string(wrapped, "probe", err, sizeof err);
    if (!rs) {
        pr->outcome = VERIFY_UNKNOWN;
        snprintf(pr->reason, sizeof pr->reason, "internal: probe does not load: %.200s", err);
        return;
    }
    verify_result res;
    int ss = z->shape_search;
    z->shape_search = 0; /* Z3 alone must not prove it */
    vz_prove(z, &rs->rules[0], timeout_s, NULL, &res);
    z->shape_search = ss;
    pr->outcome = res.outcome;
    if (res.outcome == VERIFY_PROVED) {
        size_t n = (size_t)snprintf(pr->reason, sizeof pr->reason, "PROVED from ");
        for (int32_t i = 0; i < res.n_core && n < sizeof pr->reason - 50; i++)
            n += (size_t)snprintf(pr->reason + n, sizeof pr->reason - n, "%s%s", i ? "," : "", z->ax->names[res.core[i]]);
    } else {
        snprintf(pr->reason, sizeof pr->reason, "%s", res.reason);
    }
    rules_set_free(rs);
}

/* Both passes over every axiom (they are independent; each thread its own scratch instance). 0, or
 * 1 when out of memory. */
static int ct_check_all(const ct_axiom *A, int32_t n, const verify_check_config *cfg, int32_t threads,
                        verify_check_report *rep) {
    ct_dimdefs dd = {A, ct_find_dimdefs(A, n)};
    int oom = !dd.def;
#pragma omp parallel num_threads(threads) if (dd.def)
    {
        ct_inst *I = calloc(1, sizeof *I);
        if (!I) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int32_t i = 0; i < n; i++)
            if (I && dd.def)
                ct_check_axiom(&A[i], &dd, cfg, &rep->axioms[i], I);
        free(I);
    }
    free(dd.def);
    return oom;
}

void verify_check_config_default(verify_check_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->max_dim = 4;
    cfg->max_instances = 0;
    cfg->redundancy_timeout_s = 2.0;
    cfg->probe_timeout_s = 5.0;
    cfg->ill_bases = 2000;
}

int verify_axioms_check(const verify_axioms *ax, const verify_check_config *cfg, verify_check_report *rep, char *err,
                        size_t errlen) {
    memset(rep, 0, sizeof *rep);
    if (cfg->max_dim < 1 || cfg->max_dim > 8)
        return base_fail_line(err, errlen, "max_dim must be in 1..8");
    vz_ctx *z = vz_new(ax, err, errlen);
    if (!z)
        return -1;
    rep->n_axioms = ax->n;
    ct_axiom *A = calloc((size_t)ax->n, sizeof *A);
    if (!A) {
        vz_free(z);
        return base_fail_line(err, errlen, "out of memory");
    }
    for (int32_t i = 0; i < ax->n; i++) {
        snprintf(rep->axioms[i].name, sizeof rep->axioms[i].name, "%s", ax->names[i]);
        if (ct_read(z->c, Z3_ast_vector_get(z->c, z->axioms, (unsigned)i), ax->names[i], &A[i], err, errlen) < 0) {
            free(A);
            vz_free(z);
            return -1;
        }
    }
    int32_t threads = cfg->threads > 0 ? cfg->threads : omp_get_num_procs();
    double t0 = base_now();
    int oom = ct_check_all(A, ax->n, cfg, threads, rep);
    rep->eval_s = base_now() - t0;
    if (oom) {
        free(A);
        vz_free(z);
        return base_fail_line(err, errlen, "out of memory");
    }
    /* consistency probes (one context) */
    t0 = base_now();
    rep->n_probes = (int32_t)(sizeof ct_probes / sizeof ct_probes[0]);
    for (int32_t k = 0; k < rep->n_probes; k++) {
        ct_probe(z, k, cfg->probe_timeout_s, &rep->probes[k]);
        if (rep->probes[k].outcome == VERIFY_PROVED)
            rep->failed_probes++;
    }
    rep->probe_s = base_now() - t0;
    vz_free(z);
    /* redundancy: one context per thread */
    t0 = base_now();
    if (cfg->redundancy_timeout_s > 0) {
        int failed = 0;
#pragma omp parallel num_threads(threads)
        {
            char lerr[256];
            vz_ctx *zt = vz_new(ax, lerr, sizeof lerr);
            if (!zt) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int32_t i = 0; i < ax->n; i++)
                if (zt)
                    ct_redundancy(zt, i, cfg->redundancy_timeout_s, &rep->axioms[i]);
            vz_free(zt);
        }
        if (failed) {
            free(A);
            return base_fail_line(err, errlen, "cannot create a Z3 context for the redundancy report");
        }
    }
    rep->redundancy_s = base_now() - t0;
    for (int32_t i = 0; i < ax->n; i++) {
        rep->failed_axioms += rep->axioms[i].failures || rep->axioms[i].ill_failures;
        rep->failed_ill += rep->axioms[i].ill_failures > 0;
    }
    free(A);
    return rep->failed_axioms || rep->failed_probes ? 1 : 0;
}
