/* verify_z3.c: one Z3 context with the axioms, and the encoding of a rule into a query.
 *
 * A context parses the axiom text once, checks it against the model (every function it uses is
 * "dim" or an op's function with the signature vsig gives it) and asserts each axiom under a fresh
 * Boolean that tracks it, so the unsat core of a query names the axioms its proof used. A query
 * is pushed, checked under the tracking literals with a timeout, and popped. Contexts are created
 * with reference counting: every AST a query holds is kept in one vector released at its end.
 * One context belongs to one thread; nothing here is shared between contexts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_impl.h"

static pthread_once_t vz_once = PTHREAD_ONCE_INIT;
static void vz_global_init(void) {
    /* pattern warnings would go to stderr from every thread; vz_check reports them instead */
    Z3_global_param_set("warning", "false");
}

/* The state of one encoding; large, so it lives with the context. */
typedef struct {
    vsys S;
    vparams vp[RULES_SIDE_COUNT][RULES_MAX_OPS];
    vshape var[RULES_MAX_VARS];
    vshape out[RULES_SIDE_COUNT][RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    int32_t n_out[RULES_SIDE_COUNT][RULES_MAX_OPS];
    Z3_ast vt[RULES_MAX_VARS];
    Z3_ast ot[RULES_SIDE_COUNT][RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    Z3_ast sym[VS_MAX_SYM];
    int32_t sym_var[VS_MAX_SYM], sym_dim[VS_MAX_SYM]; /* which var dim a symbol is, or -1 */
    int32_t free_n;        /* z->free_splits: the symbol every equal two-way split is cut at, or -1 */
    Z3_ast_vector keep;
} vz_enc;

static Z3_context vz_mk_context(void) {
    pthread_once(&vz_once, vz_global_init);
    Z3_config cfg = Z3_mk_config();
    if (!cfg)
        return NULL;
    Z3_set_param_value(cfg, "model", "false");
    Z3_context c = Z3_mk_context_rc(cfg);
    Z3_del_config(cfg);
    if (c)
        Z3_set_error_handler(c, NULL);
    return c;
}

/* Z3's message for the last error, on one line, without the "(error ...)" wrapper. */
static const char *vz_errmsg(Z3_context c, char *buf, size_t len) {
    Z3_error_code e = Z3_get_error_code(c);
    const char *m = Z3_get_error_msg(c, e);
    snprintf(buf, len, "%s", m ? m : "unknown error");
    char *s = buf;
    if (!strncmp(s, "(error \"", 8))
        memmove(s, s + 8, strlen(s + 8) + 1);
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ')' || s[n - 1] == '"' || s[n - 1] == ' '))
        s[--n] = '\0';
    for (char *q = s; *q; q++)
        if (*q == '\n')
            *q = ' ';
    return buf;
}

/* The sorts and functions the verifier builds terms with. */
static void vz_mk_decls(Z3_context c, Z3_sort *T, Z3_sort *I, Z3_func_decl *dim, Z3_func_decl *fn) {
    *T = Z3_mk_uninterpreted_sort(c, Z3_mk_string_symbol(c, "T"));
    *I = Z3_mk_int_sort(c);
    Z3_sort dd[2] = {*T, *I};
    *dim = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, "dim"), 2, dd, *I);
    Z3_inc_ref(c, Z3_func_decl_to_ast(c, *dim));
    for (int32_t i = 0; i < vsig_count; i++) {
        const vsig *g = &vsig_table[i];
        Z3_sort dom[VSIG_MAX_INT + 4];
        int32_t n = 0;
        for (int32_t k = 0; k < g->n_int; k++)
            dom[n++] = *I;
        for (int32_t k = 0; k < g->n_t; k++)
            dom[n++] = *T;
        char nm[64];
        fn[i] = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, vsig_name(i, nm, sizeof nm)), (unsigned)n, dom, *T);
        Z3_inc_ref(c, Z3_func_decl_to_ast(c, fn[i]));
    }
}

static void vz_free_decls(Z3_context c, Z3_func_decl dim, Z3_func_decl *fn) {
    Z3_dec_ref(c, Z3_func_decl_to_ast(c, dim));
    for (int32_t i = 0; i < vsig_count; i++)
        Z3_dec_ref(c, Z3_func_decl_to_ast(c, fn[i]));
}

/* Parse the axiom text (plus `extra`, may be NULL); the vector is inc_ref'd. */
static Z3_ast_vector vz_parse(Z3_context c, const verify_axioms *ax, const char *extra, char *err, size_t errlen) {
    const char *text = ax->text;
    char *joined = NULL;
    if (extra) {
        size_t a = strlen(ax->text), b = strlen(extra);
        joined = malloc(a + b + 2);
        if (!joined) {
            base_fail_line(err, errlen, "%s: out of memory", ax->where);
            return NULL;
        }
        memcpy(joined, ax->text, a);
        joined[a] = '\n';
        memcpy(joined + a + 1, extra, b + 1);
        text = joined;
    }
    Z3_ast_vector v = Z3_parse_smtlib2_string(c, text, 0, NULL, NULL, 0, NULL, NULL);
    free(joined);
    if (Z3_get_error_code(c) != Z3_OK || !v) {
        char m[400];
        base_fail_line(err, errlen, "%s: %s", ax->where, vz_errmsg(c, m, sizeof m));
        return NULL;
    }
    Z3_ast_vector_inc_ref(c, v);
    return v;
}

typedef struct {
    Z3_context c;
    Z3_func_decl dim;
    const Z3_func_decl *fn;
    const char *where, *axiom;
    char *err;
    size_t errlen;
} vz_walk;

/* Every uninterpreted function an axiom uses must be one the verifier builds, with its signature. */
static int vz_check_term(vz_walk *w, Z3_ast a, int depth) {
    if (depth > 200)
        return base_fail_line(w->err, w->errlen, "%s: axiom %s: nested too deeply", w->where, w->axiom);
    Z3_ast_kind k = Z3_get_ast_kind(w->c, a);
    if (k == Z3_QUANTIFIER_AST)
        return base_fail_line(w->err, w->errlen, "%s: axiom %s: a nested quantifier (one forall per axiom)", w->where,
                              w->axiom);
    if (k != Z3_APP_AST)
        return 0;
    Z3_app app = Z3_to_app(w->c, a);
    Z3_func_decl d = Z3_get_app_decl(w->c, app);
    if (Z3_get_decl_kind(w->c, d) == Z3_OP_UNINTERPRETED) {
        char name[128];
        snprintf(name, sizeof name, "%s", Z3_get_symbol_string(w->c, Z3_get_decl_name(w->c, d)));
        unsigned arity = Z3_get_domain_size(w->c, d);
        if (arity == 0)
            return base_fail_line(w->err, w->errlen, "%s: axiom %s: free constant '%s' (quantify it)", w->where,
                                  w->axiom, name);
        if (!strcmp(name, "dim")) {
            if (!Z3_is_eq_func_decl(w->c, d, w->dim))
                return base_fail_line(w->err, w->errlen, "%s: axiom %s: 'dim' must be declared (dim T Int) Int",
                                      w->where, w->axiom);
        } else {
            int32_t i = vsig_find_name(name);
            if (i < 0)
                return base_fail_line(w->err, w->errlen,
                                      "%s: axiom %s: function '%s' is not an op of the model (see verify_model.c)",
                                      w->where, w->axiom, name);
            if (!Z3_is_eq_func_decl(w->c, d, w->fn[i]))
                return base_fail_line(w->err, w->errlen,
                                      "%s: axiom %s: '%s' must be declared with %d Int then %d T arguments, returning T",
                                      w->where, w->axiom, name, (int)vsig_table[i].n_int, (int)vsig_table[i].n_t);
        }
    }
    unsigned n = Z3_get_app_num_args(w->c, app);
    for (unsigned i = 0; i < n; i++)
        if (vz_check_term(w, Z3_get_app_arg(w->c, app, i), depth + 1) < 0)
            return -1;
    return 0;
}

/* The checks of an axiom vector: one named forall per axiom, with triggers, over known functions. */
static int vz_validate(Z3_context c, const verify_axioms *ax, Z3_ast_vector v, Z3_func_decl dim, const Z3_func_decl *fn,
                       char *err, size_t errlen) {
    unsigned n = Z3_ast_vector_size(c, v);
    if ((int32_t)n != ax->n)
        return base_fail_line(err, errlen,
                              "%s: Z3 read %u assertions but the file names %d axioms (one named assert each)", ax->where,
                              n, (int)ax->n);
    vz_walk w = {c, dim, fn, ax->where, NULL, err, errlen};
    for (unsigned i = 0; i < n; i++) {
        Z3_ast a = Z3_ast_vector_get(c, v, i);
        w.axiom = ax->names[i];
        if (Z3_get_ast_kind(c, a) != Z3_QUANTIFIER_AST || !Z3_is_quantifier_forall(c, a))
            return base_fail_line(err, errlen, "%s: axiom %s: not of the form (forall (...) ...)", ax->where, w.axiom);
        if (Z3_get_quantifier_num_patterns(c, a) == 0)
            return base_fail_line(err, errlen,
                                  "%s: axiom %s: no usable :pattern (each must mention every quantified variable)",
                                  ax->where, w.axiom);
        if (Z3_get_quantifier_num_no_patterns(c, a) != 0)
            return base_fail_line(err, errlen, "%s: axiom %s: :no-pattern is not supported", ax->where, w.axiom);
        if (vz_check_term(&w, Z3_get_quantifier_body(c, a), 0) < 0)
            return -1;
        for (unsigned p = 0; p < Z3_get_quantifier_num_patterns(c, a); p++) {
            Z3_pattern pat = Z3_get_quantifier_pattern_ast(c, a, p);
            for (unsigned t = 0; t < Z3_get_pattern_num_terms(c, pat); t++)
                if (vz_check_term(&w, Z3_get_pattern(c, pat, t), 0) < 0)
                    return -1;
        }
    }
    return 0;
}

/* The enum constants of the file must be the op table's numbers. */
static int vz_check_enums(Z3_context c, const verify_axioms *ax, char *err, size_t errlen) {
    char probe[256];
    snprintf(probe, sizeof probe, "(assert (and (= NONE %d) (= RELU %d) (= SAME %d) (= VALID %d) (= SWAP 10)))",
             (int)OPS_ACT_NONE, (int)OPS_ACT_RELU, (int)OPS_PAD_SAME, (int)OPS_PAD_VALID);
    char m[512];
    Z3_ast_vector v = vz_parse(c, ax, probe, m, sizeof m);
    if (!v)
        return base_fail_line(err, errlen, "%s: the constants NONE, RELU, SAME, VALID and SWAP must be defined (%s)",
                              ax->where, m);
    unsigned n = Z3_ast_vector_size(c, v);
    Z3_ast last = Z3_simplify(c, Z3_ast_vector_get(c, v, n - 1));
    Z3_inc_ref(c, last);
    int ok = Z3_get_bool_value(c, last) == Z3_L_TRUE;
    Z3_dec_ref(c, last);
    Z3_ast_vector_dec_ref(c, v);
    if (!ok)
        return base_fail_line(err, errlen,
                              "%s: the constants must be NONE = %d, RELU = %d (ops_act), SAME = %d, VALID = %d "
                              "(ops_padmode) and SWAP = 10",
                              ax->where, (int)OPS_ACT_NONE, (int)OPS_ACT_RELU, (int)OPS_PAD_SAME, (int)OPS_PAD_VALID);
    return 0;
}

/* The model must cover the generation set: each such op has a Z3 symbol and a signature. */
static int vz_check_table(char *err, size_t errlen) {
    for (int op = 0; op < OP_COUNT; op++) {
        if (!ops_table[op].gen)
            continue;
        if (!ops_table[op].z3)
            return base_fail_line(err, errlen, "op table: %s is in the generation set but has no Z3 symbol",
                                  ops_table[op].name);
        int found = 0;
        for (int32_t i = 0; i < vsig_count; i++)
            found |= (int)vsig_table[i].op == op;
        if (!found)
            return base_fail_line(err, errlen, "op table: %s has no signature in verifier/verify_model.c",
                                  ops_table[op].name);
    }
    return 0;
}

int vz_check_text(const verify_axioms *ax, char *err, size_t errlen) {
    if (vz_check_table(err, errlen) < 0)
        return -1;
    Z3_context c = vz_mk_context();
    if (!c)
        return base_fail_line(err, errlen, "%s: cannot create a Z3 context", ax->where);
    Z3_sort T, I;
    Z3_func_decl dim, fn[64];
    vz_mk_decls(c, &T, &I, &dim, fn);
    int rc = -1;
    Z3_ast_vector v = vz_parse(c, ax, NULL, err, errlen);
    if (v) {
        rc = vz_validate(c, ax, v, dim, fn, err, errlen);
        if (rc == 0)
            rc = vz_check_enums(c, ax, err, errlen);
        Z3_ast_vector_dec_ref(c, v);
    }
    vz_free_decls(c, dim, fn);
    Z3_del_context(c);
    return rc;
}

/* --- contexts ------------------------------------------------------------------------------------ */

void vz_free(vz_ctx *z) {
    if (!z)
        return;
    if (z->c) {
        vz_enc *E = z->enc;
        if (E && E->keep)
            Z3_ast_vector_dec_ref(z->c, E->keep);
        if (z->lits)
            for (int32_t i = 0; i < z->n_axioms; i++)
                if (z->lits[i])
                    Z3_dec_ref(z->c, z->lits[i]);
        if (z->axioms)
            Z3_ast_vector_dec_ref(z->c, z->axioms);
        if (z->s)
            Z3_solver_dec_ref(z->c, z->s);
        if (z->fn)
            vz_free_decls(z->c, z->dim, z->fn);
        Z3_del_context(z->c);
    }
    free(z->enc);
    free(z->lits);
    free(z->fn);
    free(z);
}

static int vz_set_timeout(vz_ctx *z, double timeout_s) {
    unsigned ms = timeout_s <= 0 ? 1 : timeout_s > 4e6 ? 4000000000u : (unsigned)(timeout_s * 1000.0 + 0.5);
    if (ms == 0)
        ms = 1;
    if (ms == z->timeout_ms)
        return 0;
    Z3_params p = Z3_mk_params(z->c);
    Z3_params_inc_ref(z->c, p);
    /* E-matching only: model-based instantiation rarely ends on these axioms and "unknown" is
     * what an unprovable query should give quickly */
    Z3_params_set_bool(z->c, p, Z3_mk_string_symbol(z->c, "auto_config"), 0);
    Z3_params_set_bool(z->c, p, Z3_mk_string_symbol(z->c, "mbqi"), 0);
    Z3_params_set_uint(z->c, p, Z3_mk_string_symbol(z->c, "timeout"), ms);
    Z3_solver_set_params(z->c, z->s, p);
    Z3_params_dec_ref(z->c, p);
    z->timeout_ms = ms;
    return Z3_get_error_code(z->c) == Z3_OK ? 0 : -1;
}

/* A fresh solver with every axiom asserted under its literal. */
static int vz_make_solver(vz_ctx *z, char *err, size_t errlen) {
    if (z->s)
        Z3_solver_dec_ref(z->c, z->s);
    z->s = Z3_mk_simple_solver(z->c);
    if (!z->s)
        return base_fail_line(err, errlen, "Z3: cannot create a solver");
    Z3_solver_inc_ref(z->c, z->s);
    z->timeout_ms = 0;
    if (vz_set_timeout(z, VERIFY_DEFAULT_TIMEOUT_S) < 0) {
        char m[256];
        return base_fail_line(err, errlen, "Z3: solver parameters: %s", vz_errmsg(z->c, m, sizeof m));
    }
    for (int32_t i = 0; i < z->n_axioms; i++) {
        Z3_ast a = Z3_mk_implies(z->c, z->lits[i], Z3_ast_vector_get(z->c, z->axioms, (unsigned)i));
        Z3_inc_ref(z->c, a);
        Z3_solver_assert(z->c, z->s, a);
        Z3_dec_ref(z->c, a);
    }
    z->queries = 0;
    return 0;
}

int vz_reset(vz_ctx *z, char *err, size_t errlen) { return vz_make_solver(z, err, errlen); }

vz_ctx *vz_new(const verify_axioms *ax, char *err, size_t errlen) {
    vz_ctx *z = calloc(1, sizeof *z);
    if (!z) {
        base_fail_line(err, errlen, "out of memory");
        return NULL;
    }
    z->ax = ax;
    z->n_axioms = ax->n;
    z->fn = calloc((size_t)vsig_count, sizeof *z->fn);
    z->lits = calloc((size_t)ax->n, sizeof *z->lits);
    z->enc = calloc(1, sizeof(vz_enc));
    if (!z->fn || !z->lits || !z->enc) {
        base_fail_line(err, errlen, "out of memory");
        vz_free(z);
        return NULL;
    }
    z->c = vz_mk_context();
    if (!z->c) {
        base_fail_line(err, errlen, "cannot create a Z3 context");
        vz_free(z);
        return NULL;
    }
    vz_mk_decls(z->c, &z->T, &z->I, &z->dim, z->fn);
    z->axioms = vz_parse(z->c, ax, NULL, err, errlen);
    if (!z->axioms || vz_validate(z->c, ax, z->axioms, z->dim, z->fn, err, errlen) < 0) {
        vz_free(z);
        return NULL;
    }
    Z3_sort B = Z3_mk_bool_sort(z->c);
    for (int32_t i = 0; i < ax->n; i++) {
        char nm[VERIFY_NAME_LEN + 8];
        snprintf(nm, sizeof nm, "ax!%s", ax->names[i]);
        z->lits[i] = Z3_mk_const(z->c, Z3_mk_string_symbol(z->c, nm), B);
        Z3_inc_ref(z->c, z->lits[i]);
    }
    vz_enc *E = z->enc;
    E->keep = Z3_mk_ast_vector(z->c);
    Z3_ast_vector_inc_ref(z->c, E->keep);
    if (vz_make_solver(z, err, errlen) < 0) {
        vz_free(z);
        return NULL;
    }
    return z;
}

/* --- encoding ------------------------------------------------------------------------------------- */

static Z3_ast vz_keep(vz_ctx *z, Z3_ast a) {
    vz_enc *E = z->enc;
    Z3_ast_vector_push(z->c, E->keep, a);
    return a;
}

static void vz_assert(vz_ctx *z, Z3_ast a) { Z3_solver_assert(z->c, z->s, a); }

static Z3_ast vz_num(vz_ctx *z, int64_t v) { return vz_keep(z, Z3_mk_int64(z->c, v, z->I)); }

/* The Z3 integer of an expression (after the solution's substitution). */
static Z3_ast vz_vx(vz_ctx *z, vx a) {
    vz_enc *E = z->enc;
    a = vsys_apply(&E->S, a);
    Z3_ast terms[VX_TERMS + 1];
    unsigned n = 0;
    for (int32_t i = 0; i < a.n; i++) {
        int32_t s = a.s[i];
        if (!E->sym[s]) {
            char nm[64];
            if (E->sym_var[s] >= 0)
                snprintf(nm, sizeof nm, "d!%s!%d", z->cur->vars[E->sym_var[s]].name, (int)E->sym_dim[s]);
            else
                snprintf(nm, sizeof nm, "q!%d", (int)s);
            E->sym[s] = vz_keep(z, Z3_mk_const(z->c, Z3_mk_string_symbol(z->c, nm), z->I));
        }
        if (a.k[i] == 1) {
            terms[n++] = E->sym[s];
        } else {
            Z3_ast f[2] = {vz_num(z, a.k[i]), E->sym[s]};
            terms[n++] = vz_keep(z, Z3_mk_mul(z->c, 2, f));
        }
    }
    if (a.c != 0 || n == 0)
        terms[n++] = vz_num(z, a.c);
    return vz_keep(z, n == 1 ? terms[0] : Z3_mk_add(z->c, n, terms));
}

static Z3_ast vz_app(vz_ctx *z, int32_t sig, const Z3_ast *iargs, const Z3_ast *targs) {
    const vsig *g = &vsig_table[sig];
    Z3_ast a[VSIG_MAX_INT + 4];
    int32_t n = 0;
    for (int32_t k = 0; k < g->n_int; k++)
        a[n++] = iargs[k];
    for (int32_t k = 0; k < g->n_t; k++)
        a[n++] = targs[k];
    return vz_keep(z, Z3_mk_app(z->c, z->fn[sig], (unsigned)n, a));
}

/* The Z3 terms of one op's outputs. 0, or -1 with a reason (outside the model). */
static int vz_op_terms(vz_ctx *z, const rules_op *o, const vparams *vp, const Z3_ast *in, const vshape *out_sh,
                       int32_t n_out, Z3_ast *out, char *why, size_t whylen) {
    int64_t ax;
    if (o->op == OP_CONCAT) {
        int32_t sig = vsig_find(OP_CONCAT, 0, 0);
        vx_is_num(&vp->v[PM_AXIS], &ax);
        Z3_ast ia[1] = {vz_num(z, ax)};
        Z3_ast acc = in[0];
        for (int32_t k = 1; k < o->n_in; k++) {
            Z3_ast ta[2] = {acc, in[k]};
            acc = vz_app(z, sig, ia, ta);
        }
        out[0] = acc;
        return 0;
    }
    if (o->op == OP_SPLIT) {
        int32_t s0 = vsig_find(OP_SPLIT, 0, 0), s1 = vsig_find(OP_SPLIT, 1, 0);
        vx_is_num(&vp->v[PM_AXIS], &ax);
        Z3_ast rest = in[0];
        for (int32_t j = 0; j + 1 < n_out; j++) {
            Z3_ast ia[2] = {vz_num(z, ax), vz_vx(z, out_sh[j].d[ax])};
            out[j] = vz_app(z, s0, ia, &rest);
            rest = vz_app(z, s1, ia, &rest);
        }
        out[n_out - 1] = rest;
        return 0;
    }
    int32_t sig = vsig_find(o->op, 0, o->op == OP_CONST_ONES ? vp->n_list : 0);
    if (sig < 0)
        return base_fail_line(why, whylen, "%s has no Z3 function", ops_table[o->op].name);
    const vsig *g = &vsig_table[sig];
    Z3_ast ia[VSIG_MAX_INT];
    for (int32_t k = 0; k < g->n_int; k++) {
        const va_spec *a = &g->iarg[k];
        switch (a->kind) {
        case VA_KEY:
            ia[k] = vz_vx(z, vp->v[a->key]);
            break;
        case VA_PAD:
            ia[k] = vz_num(z, vsig_pad_code(vp));
            break;
        case VA_PERM:
            ia[k] = vz_num(z, vsig_perm_code(vp));
            break;
        case VA_LIST:
            ia[k] = vz_vx(z, vp->list[a->idx]);
            break;
        case VA_SIZE0:
            return base_fail_line(why, whylen, "internal: size argument outside split");
        }
    }
    out[0] = vz_app(z, sig, ia, in);
    return 0;
}

static const vshape *vz_ref_shape(const vz_enc *E, int side, rules_ref ref) {
    return ref.kind == RULES_REF_VAR ? &E->var[ref.idx] : &E->out[side][ref.idx][ref.out];
}

static Z3_ast vz_ref_term(const vz_enc *E, int side, rules_ref ref) {
    return ref.kind == RULES_REF_VAR ? E->vt[ref.idx] : E->ot[side][ref.idx][ref.out];
}

typedef enum { VZ_ENC_OK, VZ_ENC_TRIVIAL, VZ_ENC_UNSUPPORTED } vz_enc_status;

/* z->free_splits: split op k of `side`, one of two equal parts, cut at [n, d - n] instead, n the
 * encoding's one free symbol (made on first use). -1 on overflow of the symbol table. */
static int vz_free_cut(vz_enc *E, const rules_rule *r, int side, int32_t k, const vshape *in) {
    vparams *vp = &E->vp[side][k];
    int64_t ax = -1;
    if (!verify_split_is_equal2(r, side, k) || !vx_is_num(&vp->v[PM_AXIS], &ax) || ax < 0 || ax >= in->rank)
        return 0; /* vm_infer types (or refuses) it as it is */
    if (E->free_n < 0 && (E->free_n = vsys_new_sym(&E->S, VS_AUX)) < 0)
        return -1;
    vp->n_list = 2;
    vp->list[0] = vx_sym(E->free_n);
    vp->list[1] = vsys_sub(&E->S, in->d[ax], vx_sym(E->free_n));
    return 0;
}

/* After vsys_solve: 1 if the free cut n is bounded only, not tied: it is still a free symbol, no
 * other symbol's value mentions it, and every remaining constraint that does is an inequality in
 * which it has coefficient +-1 (0 < n < d and the like, from typing). An equation (n = d - n: the
 * two parts read by one elementwise op) makes the rule one of equal parts only. */
static int vz_free_bounded(const vsys *S, int32_t n) {
    const vx *self = &S->sub[n];
    if (self->n != 1 || self->s[0] != n || self->k[0] != 1 || self->c != 0)
        return 0;
    for (int32_t s = 0; s < S->n_sym; s++)
        for (int32_t t = 0; t < S->sub[s].n && s != n; t++)
            if (S->sub[s].s[t] == n)
                return 0;
    for (int32_t i = 0; i < S->n_cons; i++)
        for (int32_t t = 0; t < S->cons[i].e.n; t++) {
            int64_t k = S->cons[i].e.k[t];
            if (S->cons[i].e.s[t] == n && (S->cons[i].kind != VC_GE || (k != 1 && k != -1)))
                return 0;
        }
    return 1;
}

/* Encode r: hypotheses and the goal are asserted into the current scope of the solver. */
static vz_enc_status vz_encode(vz_ctx *z, const rules_rule *r, char *why, size_t whylen) {
    vz_enc *E = z->enc;
    vsys *S = &E->S;
    vsys_init(S);
    z->cur = r;
    for (int32_t s = 0; s < VS_MAX_SYM; s++) {
        E->sym[s] = NULL;
        E->sym_var[s] = -1;
    }
    E->free_n = -1;
    /* the variables: a symbol per dim */
    for (int32_t v = 0; v < r->n_vars; v++) {
        E->var[v].rank = r->vars[v].shape.rank;
        for (int32_t d = 0; d < E->var[v].rank; d++) {
            int32_t s = vsys_new_sym(S, VS_DIM);
            if (s < 0)
                break;
            E->sym_var[s] = v;
            E->sym_dim[s] = d;
            E->var[v].d[d] = vx_sym(s);
            vsys_require(S, VC_GE, vsys_sub(S, vx_sym(s), vx_num(1)));
        }
    }
    for (int32_t i = 0; i < r->n_requires; i++)
        vsys_require_eq(S, E->var[r->requires[i].var].d[r->requires[i].dim], vx_num(r->requires[i].value));
    /* parameters, with the sizes the constraints tie to variable dims */
    for (int side = 0; side < RULES_SIDE_COUNT; side++) {
        const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++)
            vparams_from(&E->vp[side][k], &g->ops[k].p);
    }
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        if (c->n_eq == 0)
            continue;
        vx first = E->var[c->eq[0].var].d[c->eq[0].dim];
        for (int32_t e = 1; e < c->n_eq; e++)
            vsys_require_eq(S, first, E->var[c->eq[e].var].d[c->eq[e].dim]);
        vparams *vp = &E->vp[c->side][c->op];
        if (c->key == PM_LIST)
            vp->list[c->list_index] = first;
        else
            vp->v[c->key] = first;
    }
    /* type both sides in the model */
    for (int side = 0; side < RULES_SIDE_COUNT; side++) {
        const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++) {
            const rules_op *o = &g->ops[k];
            vshape in[RULES_MAX_IN];
            for (int32_t i = 0; i < o->n_in; i++)
                in[i] = *vz_ref_shape(E, side, o->in[i]);
            if (z->free_splits && o->n_in >= 1 && vz_free_cut(E, r, side, k, &in[0]) < 0) {
                base_fail_line(why, whylen, "outside the axioms' model: too many symbols");
                return VZ_ENC_UNSUPPORTED;
            }
            char m[200];
            int rc = vm_infer(S, o->op, &E->vp[side][k], o->n_in, in, &E->n_out[side][k], E->out[side][k], m, sizeof m);
            if (rc != VM_OK) {
                base_fail_line(why, whylen, "%s: %s op %d: %s", rc == VM_UNSUPPORTED ? "outside the axioms' model" : "ill typed in the model",
                               side == RULES_SIDE_SRC ? "src" : "dst", (int)k, m);
                return VZ_ENC_UNSUPPORTED;
            }
        }
    }
    for (int32_t i = 0; i < r->n_outputs; i++) {
        const vshape *a = vz_ref_shape(E, RULES_SIDE_SRC, r->outputs[i].src);
        const vshape *b = vz_ref_shape(E, RULES_SIDE_DST, r->outputs[i].dst);
        if (a->rank != b->rank) {
            base_fail_line(why, whylen, "output %d: ranks %d and %d", (int)i, (int)a->rank, (int)b->rank);
            return VZ_ENC_UNSUPPORTED;
        }
        for (int32_t d = 0; d < a->rank; d++)
            vsys_require_eq(S, a->d[d], b->d[d]);
    }
    vsys_solve(S);
    if (S->overflow) {
        base_fail_line(why, whylen, "outside the axioms' model: shape expressions too large");
        return VZ_ENC_UNSUPPORTED;
    }
    if (S->infeasible) {
        base_fail_line(why, whylen, "no shapes make both sides well typed in the axioms' model");
        return VZ_ENC_UNSUPPORTED;
    }
    if (z->free_splits && E->free_n < 0) {
        base_fail_line(why, whylen, "free split sizes: no two-way split of equal parts");
        return VZ_ENC_UNSUPPORTED;
    }
    if (z->free_splits && !vz_free_bounded(S, E->free_n)) {
        base_fail_line(why, whylen, "free split sizes: the hypotheses tie the cut to the dims (equal parts only)");
        return VZ_ENC_UNSUPPORTED;
    }
    /* terms */
    for (int32_t v = 0; v < r->n_vars; v++) {
        char nm[RULES_NAME_LEN + 4];
        snprintf(nm, sizeof nm, "%s", r->vars[v].name);
        E->vt[v] = vz_keep(z, Z3_mk_const(z->c, Z3_mk_string_symbol(z->c, nm), z->T));
    }
    for (int side = 0; side < RULES_SIDE_COUNT; side++) {
        const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++) {
            const rules_op *o = &g->ops[k];
            Z3_ast in[RULES_MAX_IN];
            for (int32_t i = 0; i < o->n_in; i++)
                in[i] = vz_ref_term(E, side, o->in[i]);
            if (vz_op_terms(z, o, &E->vp[side][k], in, E->out[side][k], E->n_out[side][k], E->ot[side][k], why,
                            whylen) < 0)
                return VZ_ENC_UNSUPPORTED;
        }
    }
    /* hypotheses: the remaining shape constraints, and the dims of every term */
    for (int32_t i = 0; i < S->n_cons; i++) {
        Z3_ast e = vz_vx(z, S->cons[i].e), zero = vz_num(z, 0);
        vz_assert(z, vz_keep(z, S->cons[i].kind == VC_EQ ? Z3_mk_eq(z->c, e, zero) : Z3_mk_ge(z->c, e, zero)));
    }
    /* a variable's dims past its rank (up to 4) are 1, as the dim_* axioms give them for every
     * op's result: side conditions over dims 0..3 then hold for tensors of any rank */
    for (int32_t v = 0; v < r->n_vars; v++)
        for (int32_t d = 0; d < E->var[v].rank || d < 4; d++) {
            Z3_ast args[2] = {E->vt[v], vz_num(z, d)};
            Z3_ast dv = vz_keep(z, Z3_mk_app(z->c, z->dim, 2, args));
            vz_assert(z, vz_keep(z, Z3_mk_eq(z->c, dv, d < E->var[v].rank ? vz_vx(z, E->var[v].d[d]) : vz_num(z, 1))));
        }
    for (int side = 0; side < RULES_SIDE_COUNT; side++) {
        const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++)
            for (int32_t o = 0; o < E->n_out[side][k]; o++)
                for (int32_t d = 0; d < E->out[side][k][o].rank; d++) {
                    Z3_ast args[2] = {E->ot[side][k][o], vz_num(z, d)};
                    Z3_ast dv = vz_keep(z, Z3_mk_app(z->c, z->dim, 2, args));
                    vz_assert(z, vz_keep(z, Z3_mk_eq(z->c, dv, vz_vx(z, E->out[side][k][o].d[d]))));
                }
    }
    /* the goal: some mapped output differs */
    Z3_ast ne[RULES_MAX_OUTPUTS];
    unsigned n = 0;
    for (int32_t i = 0; i < r->n_outputs; i++) {
        Z3_ast a = vz_ref_term(E, RULES_SIDE_SRC, r->outputs[i].src);
        Z3_ast b = vz_ref_term(E, RULES_SIDE_DST, r->outputs[i].dst);
        if (!Z3_is_eq_ast(z->c, a, b))
            ne[n++] = vz_keep(z, Z3_mk_not(z->c, vz_keep(z, Z3_mk_eq(z->c, a, b))));
    }
    if (n == 0)
        return VZ_ENC_TRIVIAL;
    vz_assert(z, n == 1 ? ne[0] : vz_keep(z, Z3_mk_or(z->c, n, ne)));
    return VZ_ENC_OK;
}

/* After an unknown: look for shapes under which the rule is false. Free symbols of the solved
 * hypotheses get pseudo-random small values; each assignment that meets every constraint gives a
 * concrete copy of the rule (variable shapes, tied size parameters), which is evaluated on random
 * values. 1 with the counterexample in why, 0 when none was found. */
static int vz_shape_search(vz_ctx *z, const rules_rule *r, char *why, size_t whylen) {
    vz_enc *E = z->enc;
    const vsys *S = &E->S;
    rules_rule *c = malloc(sizeof *c);
    if (!c)
        return 0;
    uint64_t st = verify_hash64(r->id, strlen(r->id), UINT64_C(0x5ea4c4));
    int found = 0;
    int64_t val[VS_MAX_SYM];
    for (int tries = 0; tries < 400 && !found; tries++) {
        for (int32_t s = 0; s < S->n_sym; s++) {
            st = st * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
            int64_t hi = S->kind[s] == VS_AUX ? 5 : 4;
            val[s] = S->kind[s] == VS_AUX ? (int64_t)((st >> 33) % (uint64_t)hi) : 1 + (int64_t)((st >> 33) % (uint64_t)hi);
        }
        /* substituted symbols take their solution's value */
        int64_t full[VS_MAX_SYM];
        for (int32_t s = 0; s < S->n_sym; s++)
            full[s] = vsys_eval(S, S->sub[s], val);
        int ok = 1;
        for (int32_t i = 0; i < S->n_cons && ok; i++) {
            int64_t v = vsys_eval(S, S->cons[i].e, val);
            ok = S->cons[i].kind == VC_EQ ? v == 0 : v >= 0;
        }
        if (!ok)
            continue;
        *c = *r;
        for (int32_t v = 0; v < r->n_vars && ok; v++)
            for (int32_t d = 0; d < r->vars[v].shape.rank && ok; d++) {
                int64_t x = vsys_eval(S, E->var[v].d[d], full);
                ok = x >= 1 && x <= 64;
                c->vars[v].shape.dims[d] = x;
            }
        for (int32_t i = 0; i < r->n_constraints && ok; i++) {
            const rules_constraint *k = &r->constraints[i];
            if (k->n_eq == 0)
                continue;
            int64_t x = c->vars[k->eq[0].var].shape.dims[k->eq[0].dim];
            rules_graph *g = k->side == RULES_SIDE_SRC ? &c->src : &c->dst;
            if (k->key == PM_LIST)
                g->ops[k->op].p.list[k->list_index] = x;
            else
                g->ops[k->op].p.v[k->key] = x;
        }
        if (!ok)
            continue;
        double rel;
        char m[VERIFY_REASON_LEN];
        if (verify_eval_rule(c, UINT64_C(0x5ea4c4) + (uint64_t)tries, 1e-3, &rel, m, sizeof m) == 0) {
            char shapes[160] = "", sb[48];
            size_t n = 0;
            for (int32_t v = 0; v < c->n_vars && n < sizeof shapes - 40; v++)
                n += (size_t)snprintf(shapes + n, sizeof shapes - n, "%s%s %s", v ? ", " : "", c->vars[v].name,
                                      ops_shape_str(&c->vars[v].shape, sb, sizeof sb));
            base_fail_line(why, whylen, "counterexample at shapes %s: mapped outputs differ (relative error %.3g)",
                           shapes, rel);
            found = 1;
        }
    }
    free(c);
    return found;
}

void vz_prove(vz_ctx *z, const rules_rule *r, double timeout_s, const uint8_t *enabled, verify_result *res) {
    memset(res, 0, sizeof *res);
    res->outcome = VERIFY_UNKNOWN;
    vz_enc *E = z->enc;
    if (vz_set_timeout(z, timeout_s) < 0) {
        char m[256];
        base_fail_line(res->reason, sizeof res->reason, "Z3 parameters: %s", vz_errmsg(z->c, m, sizeof m));
        return;
    }
    Z3_solver_push(z->c, z->s);
    char why[VERIFY_REASON_LEN];
    vz_enc_status st = vz_encode(z, r, why, sizeof why);
    if (st == VZ_ENC_UNSUPPORTED) {
        snprintf(res->reason, sizeof res->reason, "%s", why);
    } else if (st == VZ_ENC_TRIVIAL) {
        res->outcome = VERIFY_PROVED; /* both sides encode to the same terms */
    } else {
        Z3_ast *as = malloc((size_t)z->n_axioms * sizeof *as);
        unsigned na = 0;
        if (!as) {
            snprintf(res->reason, sizeof res->reason, "out of memory");
        } else {
            for (int32_t i = 0; i < z->n_axioms; i++)
                if (!enabled || enabled[i])
                    as[na++] = z->lits[i];
            double t0 = base_now();
            Z3_lbool rc = Z3_solver_check_assumptions(z->c, z->s, na, as);
            res->time_s = base_now() - t0;
            if (rc == Z3_L_FALSE) {
                res->outcome = VERIFY_PROVED;
                Z3_ast_vector core = Z3_solver_get_unsat_core(z->c, z->s);
                Z3_ast_vector_inc_ref(z->c, core);
                for (unsigned i = 0; i < Z3_ast_vector_size(z->c, core); i++) {
                    Z3_ast lit = Z3_ast_vector_get(z->c, core, i);
                    for (int32_t k = 0; k < z->n_axioms; k++)
                        if (Z3_is_eq_ast(z->c, lit, z->lits[k])) {
                            res->core[res->n_core++] = (int16_t)k;
                            break;
                        }
                }
                Z3_ast_vector_dec_ref(z->c, core);
                /* ascending axiom order */
                for (int32_t i = 1; i < res->n_core; i++)
                    for (int32_t j = i; j > 0 && res->core[j - 1] > res->core[j]; j--) {
                        int16_t t = res->core[j];
                        res->core[j] = res->core[j - 1];
                        res->core[j - 1] = t;
                    }
            } else if (rc == Z3_L_TRUE) {
                res->outcome = VERIFY_REFUTED;
                snprintf(res->reason, sizeof res->reason, "z3: sat (the axioms allow the sides to differ)");
            } else {
                const char *ru = Z3_solver_get_reason_unknown(z->c, z->s);
                char rb[96];
                snprintf(rb, sizeof rb, "%s", ru ? ru : "?");
                size_t rl = strlen(rb);
                if (rl >= 2 && rb[0] == '(' && rb[rl - 1] == ')') { /* "(incomplete quantifiers)" */
                    rb[rl - 1] = '\0';
                    memmove(rb, rb + 1, rl - 1);
                }
                snprintf(res->reason, sizeof res->reason, "z3: unknown (%s)", rb);
                char cex[VERIFY_REASON_LEN];
                if (z->shape_search && vz_shape_search(z, r, cex, sizeof cex)) {
                    res->outcome = VERIFY_REFUTED;
                    snprintf(res->reason, sizeof res->reason, "%s", cex);
                }
            }
            free(as);
        }
    }
    Z3_solver_pop(z->c, z->s, 1);
    Z3_ast_vector_resize(z->c, E->keep, 0);
    z->queries++;
}
