/* rules_io.c: rule sets in memory, their validation, and the rule file (rules/README.md).
 *
 * Loading parses the text into a JSON tree (rules_json.h: a fast parser for the plain subset rule
 * files use, jansson for the rest and for syntax messages), converts each rule strictly (unknown
 * keys, wrong types, bad refs are errors) and then validates it with rules_rule_check, so a
 * loaded set is always consistent with the op table. Every message is one line:
 * "FILE:LINE:COL: ..." for syntax, "FILE: rule 'ID': ..." for content. Writing is deterministic: a fixed key order, every declared parameter,
 * one rule per line, through a temporary file and a rename. The set owns all strings.
 */
#include "rules.h"
#include "rules_json.h"
#include "base.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define RULES_MAX_FILE_BYTES (INT64_C(1) << 30)

#if defined(__GNUC__)
#define RULES_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RULES_PRINTF(a, b)
#endif

/* A copy of s (NULL stays NULL). */
static char *rules_strdup(const char *s) { return s ? base_xstrdup(s) : NULL; }

/* =============================================================================================
 * lifetime
 */
rules_set *rules_set_new(void) {
    return base_xcalloc(1, sizeof(rules_set));
}

rules_set *rules_set_manifest_copy(const rules_set *rs) {
    rules_set *d = rules_set_new();
    d->tool = rs->tool ? strdup(rs->tool) : NULL;
    d->generator = rs->generator ? strdup(rs->generator) : NULL;
    d->extra_json = rs->extra_json ? strdup(rs->extra_json) : NULL;
    int bad = (rs->tool && !d->tool) || (rs->generator && !d->generator) || (rs->extra_json && !d->extra_json);
    memcpy(d->op_set, rs->op_set, sizeof d->op_set);
    d->max_ops = rs->max_ops;
    for (int32_t i = 0; i < rs->n_counts; i++)
        bad |= rules_set_count(d, rs->counts[i].name, rs->counts[i].value) < 0;
    if (bad) {
        rules_set_free(d);
        return NULL;
    }
    return d;
}

void rules_rule_clear(rules_rule *r) {
    free(r->id);
    free(r->stages);
    free(r->proof_json);
    r->id = r->stages = r->proof_json = NULL;
}

void rules_set_free(rules_set *rs) {
    if (!rs)
        return;
    for (int32_t i = 0; i < rs->n_rules; i++)
        rules_rule_clear(&rs->rules[i]);
    free(rs->rules);
    free(rs->tool);
    free(rs->generator);
    free(rs->extra_json);
    free(rs);
}

int32_t rules_set_add(rules_set *rs, const rules_rule *r) {
    if (rs->n_rules == rs->cap_rules) {
        int32_t cap = rs->cap_rules ? rs->cap_rules * 2 : 64;
        rules_rule *nr = realloc(rs->rules, (size_t)cap * sizeof *nr);
        if (!nr)
            return -1;
        rs->rules = nr;
        rs->cap_rules = cap;
    }
    rules_rule *d = &rs->rules[rs->n_rules];
    *d = *r;
    d->id = rules_strdup(r->id);
    d->stages = rules_strdup(r->stages);
    d->proof_json = rules_strdup(r->proof_json);
    return rs->n_rules++;
}

int rules_set_count(rules_set *rs, const char *name, uint64_t value) {
    for (int32_t i = 0; i < rs->n_counts; i++)
        if (!strcmp(rs->counts[i].name, name)) {
            rs->counts[i].value = value;
            return 0;
        }
    if (rs->n_counts == RULES_MAX_COUNTS || strlen(name) >= sizeof rs->counts[0].name)
        return -1;
    snprintf(rs->counts[rs->n_counts].name, sizeof rs->counts[0].name, "%s", name);
    rs->counts[rs->n_counts++].value = value;
    return 0;
}

/* =============================================================================================
 * validation
 */
static const char *const rules_side_names[RULES_SIDE_COUNT] = {"src", "dst"};

const char *rules_ref_str(const rules_rule *r, rules_ref ref, char *buf, size_t len) {
    if (ref.kind == RULES_REF_VAR)
        snprintf(buf, len, "%s", ref.idx >= 0 && ref.idx < r->n_vars ? r->vars[ref.idx].name : "?");
    else if (ref.out == 0)
        snprintf(buf, len, "%%%d", (int)ref.idx);
    else
        snprintf(buf, len, "%%%d.%d", (int)ref.idx, (int)ref.out);
    return buf;
}

static const rules_graph *rules_side_graph(const rules_rule *r, rules_side side) {
    return side == RULES_SIDE_SRC ? &r->src : &r->dst;
}

/* Shape of a ref on one side, or NULL when the ref is out of range (ops before `upto` only). */
static const ops_shape *rules_ref_shape(const rules_rule *r, const rules_graph *g, rules_ref ref, int32_t upto,
                                        ops_shape shapes[RULES_MAX_OPS][OPS_MAX_OUTPUTS]) {
    if (ref.kind == RULES_REF_VAR)
        return ref.idx >= 0 && ref.idx < r->n_vars && ref.out == 0 ? &r->vars[ref.idx].shape : NULL;
    if (ref.kind != RULES_REF_OP || ref.idx < 0 || ref.idx >= upto || ref.out < 0 || ref.out >= g->ops[ref.idx].n_out)
        return NULL;
    return &shapes[ref.idx][ref.out];
}

/* Infers every op of one side (filling n_out in a copy when r is const). */
static int rules_side_infer(const rules_rule *r, rules_side side, rules_graph *g,
                            ops_shape shapes[RULES_MAX_OPS][OPS_MAX_OUTPUTS], char *err, size_t errlen) {
    const char *sn = rules_side_names[side];
    char m[256], b[32];
    if (g->n_ops < 0 || g->n_ops > RULES_MAX_OPS)
        return base_fail_line(err, errlen, "%s has %d ops, at most %d", sn, (int)g->n_ops, RULES_MAX_OPS);
    for (int32_t k = 0; k < g->n_ops; k++) {
        rules_op *o = &g->ops[k];
        if ((int)o->op < 0 || o->op >= OP_COUNT)
            return base_fail_line(err, errlen, "%s op %d: unknown op", sn, (int)k);
        if (o->n_in < 0 || o->n_in > RULES_MAX_IN)
            return base_fail_line(err, errlen, "%s op %d (%s): %d inputs, at most %d", sn, (int)k,
                                  ops_table[o->op].name, (int)o->n_in, RULES_MAX_IN);
        ops_shape in[RULES_MAX_IN];
        for (int32_t i = 0; i < o->n_in; i++) {
            const ops_shape *s = rules_ref_shape(r, g, o->in[i], k, shapes);
            if (!s)
                return base_fail_line(err, errlen,
                                      "%s op %d (%s): input %d '%s' does not name a variable or an earlier op's output",
                                      sn, (int)k, ops_table[o->op].name, (int)i,
                                      rules_ref_str(r, o->in[i], b, sizeof b));
            in[i] = *s;
        }
        int32_t n_out = 0;
        if (ops_infer(o->op, &o->p, o->n_in, in, &n_out, shapes[k], m, sizeof m) < 0)
            return base_fail_line(err, errlen, "%s op %d: %s", sn, (int)k, m);
        o->n_out = n_out;
        o->out_rank = n_out > 0 ? shapes[k][0].rank : 0;
    }
    return 0;
}

int rules_graph_shapes(const rules_rule *r, rules_side side, ops_shape shapes[RULES_MAX_OPS][OPS_MAX_OUTPUTS],
                       char *err, size_t errlen) {
    rules_graph g = *rules_side_graph(r, side);
    return rules_side_infer(r, side, &g, shapes, err, errlen);
}

static int rules_name_ok(const char *s) {
    if (!s[0] || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    for (const char *q = s; *q; q++)
        if (!(*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')))
            return 0;
    return 1;
}

int rules_rule_check(rules_rule *r, char *err, size_t errlen) {
    char b[32], b2[32], sb[96], sb2[96];
    if (r->n_vars < 0 || r->n_vars > RULES_MAX_VARS)
        return base_fail_line(err, errlen, "%d variables, at most %d", (int)r->n_vars, RULES_MAX_VARS);
    for (int32_t v = 0; v < r->n_vars; v++) {
        const rules_var *rv = &r->vars[v];
        if (!memchr(rv->name, '\0', sizeof rv->name) || !rules_name_ok(rv->name))
            return base_fail_line(err, errlen,
                                  "variable %d: bad name (letters, digits and '_', not starting with a digit)", (int)v);
        for (int32_t u = 0; u < v; u++)
            if (!strcmp(r->vars[u].name, rv->name))
                return base_fail_line(err, errlen, "variable '%s' declared twice", rv->name);
        if (rv->shape.rank < 0 || rv->shape.rank > OPS_MAX_DIMS)
            return base_fail_line(err, errlen, "variable '%s': rank %d, at most %d", rv->name, (int)rv->shape.rank,
                                  OPS_MAX_DIMS);
        for (int32_t d = 0; d < rv->shape.rank; d++)
            if (rv->shape.dims[d] < 1 || rv->shape.dims[d] > (INT64_C(1) << 31))
                return base_fail_line(err, errlen, "variable '%s': dim %d = %lld out of range 1..2^31", rv->name,
                                      (int)d, (long long)rv->shape.dims[d]);
    }
    ops_shape sh[RULES_SIDE_COUNT][RULES_MAX_OPS][OPS_MAX_OUTPUTS]; /* [side][op][output] */
    int rc = -1;
    if (rules_side_infer(r, RULES_SIDE_SRC, &r->src, sh[0], err, errlen) < 0 ||
        rules_side_infer(r, RULES_SIDE_DST, &r->dst, sh[1], err, errlen) < 0)
        goto done;
    if (r->src.n_ops == 0 && r->dst.n_ops == 0) {
        base_fail_line(err, errlen, "both sides are empty");
        goto done;
    }
    if (r->n_outputs < 1 || r->n_outputs > RULES_MAX_OUTPUTS) {
        base_fail_line(err, errlen, "%d mapped outputs, expected 1..%d", (int)r->n_outputs, RULES_MAX_OUTPUTS);
        goto done;
    }
    for (int32_t i = 0; i < r->n_outputs; i++) {
        const rules_outmap *om = &r->outputs[i];
        const ops_shape *a = rules_ref_shape(r, &r->src, om->src, r->src.n_ops, sh[0]);
        const ops_shape *c = rules_ref_shape(r, &r->dst, om->dst, r->dst.n_ops, sh[1]);
        if (!a || !c) {
            base_fail_line(err, errlen, "output %d: '%s' is not a tensor of the %s graph", (int)i,
                           rules_ref_str(r, a ? om->dst : om->src, b, sizeof b), a ? "dst" : "src");
            goto done;
        }
        if (!ops_shape_eq(a, c)) {
            base_fail_line(err, errlen, "output %d: src '%s' has shape %s but dst '%s' has shape %s", (int)i,
                           rules_ref_str(r, om->src, b, sizeof b), ops_shape_str(a, sb, sizeof sb),
                           rules_ref_str(r, om->dst, b2, sizeof b2), ops_shape_str(c, sb2, sizeof sb2));
            goto done;
        }
        for (int32_t j = 0; j < i; j++) {
            const rules_outmap *oj = &r->outputs[j];
            if ((oj->src.kind == om->src.kind && oj->src.idx == om->src.idx && oj->src.out == om->src.out) ||
                (oj->dst.kind == om->dst.kind && oj->dst.idx == om->dst.idx && oj->dst.out == om->dst.out)) {
                base_fail_line(err, errlen, "outputs %d and %d map the same tensor", (int)j, (int)i);
                goto done;
            }
        }
    }
    /* every op output nobody consumes must be mapped: otherwise the rule would drop a result */
    for (int side = 0; side < RULES_SIDE_COUNT; side++) {
        const rules_graph *g = rules_side_graph(r, (rules_side)side);
        for (int32_t k = 0; k < g->n_ops; k++)
            for (int32_t o = 0; o < g->ops[k].n_out; o++) {
                int used = 0;
                for (int32_t k2 = k + 1; k2 < g->n_ops && !used; k2++)
                    for (int32_t i = 0; i < g->ops[k2].n_in; i++)
                        if (g->ops[k2].in[i].kind == RULES_REF_OP && g->ops[k2].in[i].idx == k &&
                            g->ops[k2].in[i].out == o)
                            used = 1;
                for (int32_t i = 0; i < r->n_outputs && !used; i++) {
                    rules_ref ref = side == RULES_SIDE_SRC ? r->outputs[i].src : r->outputs[i].dst;
                    if (ref.kind == RULES_REF_OP && ref.idx == k && ref.out == o)
                        used = 1;
                }
                if (!used) {
                    rules_ref ref = {RULES_REF_OP, k, o};
                    base_fail_line(err, errlen, "%s output '%s' is neither used nor mapped", rules_side_names[side],
                                   rules_ref_str(r, ref, b, sizeof b));
                    goto done;
                }
            }
    }
    if (r->n_constraints < 0 || r->n_constraints > RULES_MAX_CONSTRAINTS) {
        base_fail_line(err, errlen, "%d constraints, at most %d", (int)r->n_constraints, RULES_MAX_CONSTRAINTS);
        goto done;
    }
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        if ((int)c->side < 0 || c->side >= RULES_SIDE_COUNT) {
            base_fail_line(err, errlen, "constraint %d: bad side", (int)i);
            goto done;
        }
        const rules_graph *g = rules_side_graph(r, c->side);
        if (c->op < 0 || c->op >= g->n_ops) {
            base_fail_line(err, errlen, "constraint %d: %s has no op %d", (int)i, rules_side_names[c->side],
                           (int)c->op);
            goto done;
        }
        const rules_op *o = &g->ops[c->op];
        if ((int)c->key < 0 || c->key >= PM_COUNT || !ops_param_desc_of(o->op, c->key)) {
            base_fail_line(err, errlen, "constraint %d: op %s has no such parameter", (int)i, ops_table[o->op].name);
            goto done;
        }
        int64_t actual;
        if (c->key == PM_LIST) {
            if (c->list_index < 0 || c->list_index >= o->p.n_list) {
                base_fail_line(err, errlen, "constraint %d: list index %d out of range", (int)i, (int)c->list_index);
                goto done;
            }
            actual = o->p.list[c->list_index];
        } else {
            if (c->list_index != -1) {
                base_fail_line(err, errlen, "constraint %d: an index is only for the list parameter", (int)i);
                goto done;
            }
            actual = o->p.v[c->key];
        }
        if (actual != c->value) {
            base_fail_line(err, errlen, "constraint %d: value %lld but the op has %lld", (int)i, (long long)c->value,
                           (long long)actual);
            goto done;
        }
        if (c->n_eq < 0 || c->n_eq > RULES_MAX_EQ) {
            base_fail_line(err, errlen, "constraint %d: %d dims listed, at most %d", (int)i, (int)c->n_eq,
                           RULES_MAX_EQ);
            goto done;
        }
        for (int32_t e = 0; e < c->n_eq; e++) {
            int32_t v = c->eq[e].var, d = c->eq[e].dim;
            if (v < 0 || v >= r->n_vars || d < 0 || d >= r->vars[v].shape.rank) {
                base_fail_line(err, errlen, "constraint %d: no dim %d of variable %d", (int)i, (int)d, (int)v);
                goto done;
            }
            if (r->vars[v].shape.dims[d] != c->value) {
                base_fail_line(err, errlen, "constraint %d: dim %d of '%s' is %lld, not %lld", (int)i, (int)d,
                               r->vars[v].name, (long long)r->vars[v].shape.dims[d], (long long)c->value);
                goto done;
            }
        }
    }
    if (r->n_requires < 0 || r->n_requires > RULES_MAX_REQUIRES) {
        base_fail_line(err, errlen, "%d requirements, at most %d", (int)r->n_requires, RULES_MAX_REQUIRES);
        goto done;
    }
    for (int32_t i = 0; i < r->n_requires; i++) {
        const rules_require *q = &r->requires[i];
        if (q->var < 0 || q->var >= r->n_vars || q->dim < 0 || q->dim >= r->vars[q->var].shape.rank) {
            base_fail_line(err, errlen, "requirement %d: no dim %d of variable %d", (int)i, (int)q->dim, (int)q->var);
            goto done;
        }
        if (r->vars[q->var].shape.dims[q->dim] != q->value) {
            base_fail_line(err, errlen, "requirement %d: dim %d of '%s' is %lld, not %lld", (int)i, (int)q->dim,
                           r->vars[q->var].name, (long long)r->vars[q->var].shape.dims[q->dim], (long long)q->value);
            goto done;
        }
    }
    rc = 0;
done:
    return rc;
}

/* =============================================================================================
 * loading
 */
typedef struct {
    const char *where;
    char *err;
    size_t errlen;
    const char *rule_id; /* for messages; NULL outside a rule */
    int32_t rule_index;
} rl_ctx;

RULES_PRINTF(2, 3)
static int rl_fail(rl_ctx *c, const char *fmt, ...) {
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    base_vfail(m, sizeof m, fmt, ap);
    va_end(ap);
    if (c->rule_id)
        return base_fail_line(c->err, c->errlen, "%s: rule '%s': %s", c->where, c->rule_id, m);
    if (c->rule_index >= 0)
        return base_fail_line(c->err, c->errlen, "%s: rule %d: %s", c->where, (int)c->rule_index, m);
    return base_fail_line(c->err, c->errlen, "%s: %s", c->where, m);
}

static int rj_is(const rj_val *v, rj_type t) { return v && v->type == t; }
static int rj_is_obj(const rj_val *v) { return rj_is(v, RJ_OBJ); }
static int rj_is_arr(const rj_val *v) { return rj_is(v, RJ_ARR); }
static int rj_is_str(const rj_val *v) { return rj_is(v, RJ_STR); }
static int rj_is_int(const rj_val *v) { return rj_is(v, RJ_INT); }
static int rj_is_num(const rj_val *v) { return rj_is(v, RJ_INT) || rj_is(v, RJ_REAL); }

static const char *rl_type(const rj_val *v) {
    switch (v->type) {
    case RJ_OBJ: return "an object";
    case RJ_ARR: return "an array";
    case RJ_STR: return "a string";
    case RJ_INT: return "an integer";
    case RJ_REAL: return "a number";
    case RJ_TRUE:
    case RJ_FALSE: return "a boolean";
    case RJ_NULL: return "null";
    case RJ_COUNT: break;
    }
    return "a value";
}

/* Unknown keys are errors: a misspelt key must not be silently ignored. */
static int rl_keys(rl_ctx *c, const rj_val *obj, const char *what, const char *const *allowed) {
    for (int32_t m = 0; m < obj->n; m++) {
        const char *key = obj->u.items[m].key;
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        if (!ok)
            return rl_fail(c, "%s: unknown key '%s'", what, key);
    }
    return 0;
}

static int rl_int(rl_ctx *c, const rj_val *v, const char *what, int64_t lo, int64_t hi, int64_t *out) {
    if (!rj_is_int(v))
        return rl_fail(c, "%s must be an integer, got %s", what, v ? rl_type(v) : "nothing");
    int64_t x = v->u.i;
    if (x < lo || x > hi)
        return rl_fail(c, "%s = %lld out of range %lld..%lld", what, (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

static int rl_str(rl_ctx *c, const rj_val *v, const char *what, const char **out) {
    *out = "";
    if (!rj_is_str(v))
        return rl_fail(c, "%s must be a string, got %s", what, v ? rl_type(v) : "nothing");
    *out = v->u.s;
    return 0;
}

static int rl_shape(rl_ctx *c, const rj_val *v, const char *what, ops_shape *s) {
    if (!rj_is_arr(v))
        return rl_fail(c, "%s must be an array of dims, got %s", what, v ? rl_type(v) : "nothing");
    if (rj_size(v) > OPS_MAX_DIMS)
        return rl_fail(c, "%s has %zu dims, at most %d", what, rj_size(v), OPS_MAX_DIMS);
    memset(s, 0, sizeof *s);
    s->rank = (int32_t)rj_size(v);
    for (int32_t d = 0; d < s->rank; d++) {
        char w[96];
        snprintf(w, sizeof w, "%s dim %d", what, (int)d);
        if (rl_int(c, rj_at(v, (size_t)d), w, 1, INT64_C(1) << 31, &s->dims[d]) < 0)
            return -1;
    }
    return 0;
}

/* The JSON name of a declared parameter: the list's name for PM_LIST, else the key's name. */
static const char *rules_param_name(const ops_param_desc *d) {
    return d->key == PM_LIST && d->list_name ? d->list_name : ops_param_table[d->key].name;
}

static int rl_enum(const char *name, ops_param_kind kind, int64_t *out) {
    const char *const *names = kind == OPS_PK_ACT ? ops_act_names : ops_padmode_names;
    int n = kind == OPS_PK_ACT ? OPS_ACT_COUNT : OPS_PAD_COUNT;
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) {
            *out = i;
            return 0;
        }
    return -1;
}

static int rl_params(rl_ctx *c, const char *what, ops_type op, const rj_val *params, ops_params *p) {
    const ops_desc *od = &ops_table[op];
    int given[OPS_MAX_OP_PARAMS] = {0};
    ops_params_default(op, p);
    if (params && !rj_is_obj(params))
        return rl_fail(c, "%s: \"params\" must be an object, got %s", what, rl_type(params));
    for (int32_t m = 0; params && m < params->n; m++) {
            const char *key = params->u.items[m].key;
            const rj_val *v = &params->u.items[m];
            int32_t i = 0;
            while (i < od->n_params && strcmp(rules_param_name(&od->params[i]), key))
                i++;
            if (i == od->n_params)
                return rl_fail(c, "%s: op '%s' has no parameter '%s'", what, od->name, key);
            given[i] = 1;
            ops_param_key k = od->params[i].key;
            char w[128];
            snprintf(w, sizeof w, "%s: parameter '%s'", what, key);
            switch (ops_param_table[k].kind) {
            case OPS_PK_INT:
                if (rl_int(c, v, w, INT64_MIN, INT64_MAX, &p->v[k]) < 0)
                    return -1;
                break;
            case OPS_PK_ACT:
            case OPS_PK_PADMODE:
                if (!rj_is(v, RJ_STR) || rl_enum(v->u.s, ops_param_table[k].kind, &p->v[k]) < 0)
                    return rl_fail(c, "%s must be one of the names of its kind", w);
                break;
            case OPS_PK_FLOAT: {
                if (!rj_is_num(v))
                    return rl_fail(c, "%s must be a number, got %s", w, rl_type(v));
                double d = v->type == RJ_INT ? (double)v->u.i : v->u.d;
                if (!(fabs(d) <= (double)FLT_MAX))
                    return rl_fail(c, "%s is not a finite float32", w);
                p->v[k] = ops_f2p((float)d);
                break;
            }
            case OPS_PK_LIST:
                if (!rj_is_arr(v) || rj_size(v) > OPS_MAX_LIST)
                    return rl_fail(c, "%s must be an array of at most %d integers", w, OPS_MAX_LIST);
                p->n_list = (int32_t)rj_size(v);
                for (int32_t j = 0; j < p->n_list; j++)
                    if (rl_int(c, rj_at(v, (size_t)j), w, INT64_MIN, INT64_MAX, &p->list[j]) < 0)
                        return -1;
                break;
            }
        }
    for (int32_t i = 0; i < od->n_params; i++)
        if (od->params[i].required && !given[i])
            return rl_fail(c, "%s: missing required parameter '%s'", what, rules_param_name(&od->params[i]));
    char m[256];
    if (ops_params_check(op, p, m, sizeof m) < 0)
        return rl_fail(c, "%s: %s", what, m);
    return 0;
}

/* "%K" / "%K.O" or a variable name. */
static int rl_ref(rl_ctx *c, const rules_rule *r, const rj_val *v, const char *what, rules_ref *ref) {
    const char *s;
    if (rl_str(c, v, what, &s) < 0)
        return -1;
    if (s[0] == '%') {
        /* digits, optionally '.' and digits, nothing else */
        long k = 0, o = 0;
        const char *q = s + 1;
        int nd = 0, bad = 0;
        for (; *q >= '0' && *q <= '9' && nd < 4; q++, nd++)
            k = k * 10 + (*q - '0');
        bad = nd == 0;
        if (*q == '.') {
            q++;
            nd = 0;
            for (; *q >= '0' && *q <= '9' && nd < 4; q++, nd++)
                o = o * 10 + (*q - '0');
            bad |= nd == 0;
        }
        if (bad || *q || k >= RULES_MAX_OPS || o >= OPS_MAX_OUTPUTS)
            return rl_fail(c, "%s: bad op reference '%s' (expected %%K or %%K.O)", what, s);
        ref->kind = RULES_REF_OP;
        ref->idx = (int32_t)k;
        ref->out = (int32_t)o;
        return 0;
    }
    for (int32_t i = 0; i < r->n_vars; i++)
        if (!strcmp(r->vars[i].name, s)) {
            ref->kind = RULES_REF_VAR;
            ref->idx = i;
            ref->out = 0;
            return 0;
        }
    return rl_fail(c, "%s: '%s' is not a variable of the rule", what, s);
}

static int rl_graph(rl_ctx *c, const rules_rule *r, const rj_val *arr, const char *side, rules_graph *g) {
    static const char *const op_keys[] = {"op", "params", "inputs", NULL};
    if (!rj_is_arr(arr))
        return rl_fail(c, "\"%s\" must be an array of ops, got %s", side, arr ? rl_type(arr) : "nothing");
    if (rj_size(arr) > RULES_MAX_OPS)
        return rl_fail(c, "\"%s\" has %zu ops, at most %d", side, rj_size(arr), RULES_MAX_OPS);
    g->n_ops = (int32_t)rj_size(arr);
    for (int32_t k = 0; k < g->n_ops; k++) {
        const rj_val *o = rj_at(arr, (size_t)k);
        char what[64];
        snprintf(what, sizeof what, "%s op %d", side, (int)k);
        if (!rj_is_obj(o))
            return rl_fail(c, "%s must be an object, got %s", what, rl_type(o));
        if (rl_keys(c, o, what, op_keys) < 0)
            return -1;
        const char *name;
        if (rl_str(c, rj_get(o, "op"), what, &name) < 0)
            return -1;
        int op = ops_find(name);
        if (op < 0)
            return rl_fail(c, "%s: unknown op '%s'", what, name);
        rules_op *ro = &g->ops[k];
        memset(ro, 0, sizeof *ro);
        ro->op = (ops_type)op;
        if (rl_params(c, what, ro->op, rj_get(o, "params"), &ro->p) < 0)
            return -1;
        const rj_val *ins = rj_get(o, "inputs");
        if (!rj_is_arr(ins))
            return rl_fail(c, "%s: \"inputs\" must be an array, got %s", what, ins ? rl_type(ins) : "nothing");
        if (rj_size(ins) > RULES_MAX_IN)
            return rl_fail(c, "%s: %zu inputs, at most %d", what, rj_size(ins), RULES_MAX_IN);
        ro->n_in = (int32_t)rj_size(ins);
        for (int32_t i = 0; i < ro->n_in; i++)
            if (rl_ref(c, r, rj_at(ins, (size_t)i), what, &ro->in[i]) < 0)
                return -1;
    }
    return 0;
}

static int rl_side(rl_ctx *c, const char *s, rules_side *side) {
    for (int i = 0; i < RULES_SIDE_COUNT; i++)
        if (!strcmp(s, rules_side_names[i])) {
            *side = (rules_side)i;
            return 0;
        }
    return rl_fail(c, "constraint side '%s' is not src or dst", s);
}

static int rl_constraint(rl_ctx *c, const rules_rule *r, const rj_val *o, int32_t i, rules_constraint *rc) {
    static const char *const keys[] = {"side", "op", "param", "index", "value", "equals", NULL};
    char what[48];
    snprintf(what, sizeof what, "constraint %d", (int)i);
    if (!rj_is_obj(o))
        return rl_fail(c, "%s must be an object, got %s", what, rl_type(o));
    if (rl_keys(c, o, what, keys) < 0)
        return -1;
    memset(rc, 0, sizeof *rc);
    const char *s;
    int64_t x;
    if (rl_str(c, rj_get(o, "side"), what, &s) < 0 || rl_side(c, s, &rc->side) < 0)
        return -1;
    if (rl_int(c, rj_get(o, "op"), what, 0, RULES_MAX_OPS - 1, &x) < 0)
        return -1;
    rc->op = (int32_t)x;
    const rules_graph *g = rc->side == RULES_SIDE_SRC ? &r->src : &r->dst;
    if (rc->op >= g->n_ops)
        return rl_fail(c, "%s: %s has no op %d", what, rules_side_names[rc->side], (int)rc->op);
    if (rl_str(c, rj_get(o, "param"), what, &s) < 0)
        return -1;
    const ops_desc *od = &ops_table[g->ops[rc->op].op];
    int32_t pi = 0;
    while (pi < od->n_params && strcmp(rules_param_name(&od->params[pi]), s))
        pi++;
    if (pi == od->n_params)
        return rl_fail(c, "%s: op '%s' has no parameter '%s'", what, od->name, s);
    rc->key = od->params[pi].key;
    rc->list_index = -1;
    const rj_val *idx = rj_get(o, "index");
    if (rc->key == PM_LIST) {
        if (rl_int(c, idx, what, 0, OPS_MAX_LIST - 1, &x) < 0)
            return -1;
        rc->list_index = (int32_t)x;
    } else if (idx) {
        return rl_fail(c, "%s: \"index\" is only for list parameters", what);
    }
    if (rl_int(c, rj_get(o, "value"), what, INT64_MIN, INT64_MAX, &rc->value) < 0)
        return -1;
    const rj_val *eq = rj_get(o, "equals");
    if (!rj_is_arr(eq))
        return rl_fail(c, "%s: \"equals\" must be an array of [variable, dim], got %s", what,
                       eq ? rl_type(eq) : "nothing");
    if (rj_size(eq) > RULES_MAX_EQ)
        return rl_fail(c, "%s: %zu dims listed, at most %d", what, rj_size(eq), RULES_MAX_EQ);
    rc->n_eq = (int32_t)rj_size(eq);
    for (int32_t e = 0; e < rc->n_eq; e++) {
        const rj_val *pr = rj_at(eq, (size_t)e);
        if (!rj_is_arr(pr) || rj_size(pr) != 2)
            return rl_fail(c, "%s: \"equals\" entries must be [variable, dim]", what);
        rules_ref ref;
        if (rl_ref(c, r, rj_at(pr, 0), what, &ref) < 0)
            return -1;
        if (ref.kind != RULES_REF_VAR)
            return rl_fail(c, "%s: \"equals\" must name variables", what);
        if (rl_int(c, rj_at(pr, 1), what, 0, OPS_MAX_DIMS - 1, &x) < 0)
            return -1;
        rc->eq[e].var = ref.idx;
        rc->eq[e].dim = (int32_t)x;
    }
    return 0;
}

/* 1 if r has a two-way split of equal parts (sizes []) that no constraint ties to a dim: what
 * "split_sizes": "free" speaks about. */
static int rl_has_equal_split(const rules_rule *r) {
    for (int side = 0; side < RULES_SIDE_COUNT; side++) {
        const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++)
            if (g->ops[k].op == OP_SPLIT && g->ops[k].p.n_list == 0 && g->ops[k].p.v[PM_PARTS] == 2)
                return 1;
    }
    return 0;
}

static int rl_rule(rl_ctx *c, const rj_val *o, rules_rule *r) {
    static const char *const keys[] = {"id", "vars", "src", "dst", "outputs", "constraints", "requires",
                                       "split_sizes", "provenance", "proof", NULL};
    static const char *const var_keys[] = {"name", "shape", NULL};
    static const char *const out_keys[] = {"src", "dst", NULL};
    static const char *const prov_keys[] = {"fingerprint", "max_ops", "stages", NULL};
    memset(r, 0, sizeof *r);
    if (!rj_is_obj(o))
        return rl_fail(c, "must be an object, got %s", rl_type(o));
    const char *s;
    if (rl_str(c, rj_get(o, "id"), "\"id\"", &s) < 0)
        return -1;
    if (!s[0] || strlen(s) > 64)
        return rl_fail(c, "\"id\" must have 1 to 64 characters");
    for (const char *q = s; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == '\'' || *q == '"' || *q == '\\')
            return rl_fail(c, "\"id\" has a control character or a quote");
    c->rule_id = s;
    if (rl_keys(c, o, "rule", keys) < 0)
        return -1;
    const rj_val *vars = rj_get(o, "vars");
    if (!rj_is_arr(vars))
        return rl_fail(c, "\"vars\" must be an array, got %s", vars ? rl_type(vars) : "nothing");
    if (rj_size(vars) > RULES_MAX_VARS)
        return rl_fail(c, "%zu variables, at most %d", rj_size(vars), RULES_MAX_VARS);
    r->n_vars = (int32_t)rj_size(vars);
    for (int32_t v = 0; v < r->n_vars; v++) {
        const rj_val *vo = rj_at(vars, (size_t)v);
        char what[48];
        snprintf(what, sizeof what, "variable %d", (int)v);
        if (!rj_is_obj(vo))
            return rl_fail(c, "%s must be an object, got %s", what, rl_type(vo));
        if (rl_keys(c, vo, what, var_keys) < 0 || rl_str(c, rj_get(vo, "name"), what, &s) < 0)
            return -1;
        if (strlen(s) >= RULES_NAME_LEN || !rules_name_ok(s))
            return rl_fail(c, "%s: bad name '%s' (letters, digits, '_', at most %d characters)", what, s,
                           RULES_NAME_LEN - 1);
        for (int32_t u = 0; u < v; u++)
            if (!strcmp(r->vars[u].name, s))
                return rl_fail(c, "variable '%s' declared twice", s);
        snprintf(r->vars[v].name, RULES_NAME_LEN, "%s", s);
        if (rl_shape(c, rj_get(vo, "shape"), what, &r->vars[v].shape) < 0)
            return -1;
    }
    if (rl_graph(c, r, rj_get(o, "src"), "src", &r->src) < 0 ||
        rl_graph(c, r, rj_get(o, "dst"), "dst", &r->dst) < 0)
        return -1;
    const rj_val *outs = rj_get(o, "outputs");
    if (!rj_is_arr(outs))
        return rl_fail(c, "\"outputs\" must be an array, got %s", outs ? rl_type(outs) : "nothing");
    if (rj_size(outs) < 1 || rj_size(outs) > RULES_MAX_OUTPUTS)
        return rl_fail(c, "%zu outputs, expected 1..%d", rj_size(outs), RULES_MAX_OUTPUTS);
    r->n_outputs = (int32_t)rj_size(outs);
    for (int32_t i = 0; i < r->n_outputs; i++) {
        const rj_val *mo = rj_at(outs, (size_t)i);
        char what[48];
        snprintf(what, sizeof what, "output %d", (int)i);
        if (!rj_is_obj(mo))
            return rl_fail(c, "%s must be an object, got %s", what, rl_type(mo));
        if (rl_keys(c, mo, what, out_keys) < 0 || rl_ref(c, r, rj_get(mo, "src"), what, &r->outputs[i].src) < 0 ||
            rl_ref(c, r, rj_get(mo, "dst"), what, &r->outputs[i].dst) < 0)
            return -1;
    }
    const rj_val *cons = rj_get(o, "constraints");
    if (cons) {
        if (!rj_is_arr(cons))
            return rl_fail(c, "\"constraints\" must be an array, got %s", rl_type(cons));
        if (rj_size(cons) > RULES_MAX_CONSTRAINTS)
            return rl_fail(c, "%zu constraints, at most %d", rj_size(cons), RULES_MAX_CONSTRAINTS);
        r->n_constraints = (int32_t)rj_size(cons);
        for (int32_t i = 0; i < r->n_constraints; i++)
            if (rl_constraint(c, r, rj_at(cons, (size_t)i), i, &r->constraints[i]) < 0)
                return -1;
    }
    const rj_val *req = rj_get(o, "requires");
    if (req) {
        if (!rj_is_arr(req))
            return rl_fail(c, "\"requires\" must be an array, got %s", rl_type(req));
        if (rj_size(req) > RULES_MAX_REQUIRES)
            return rl_fail(c, "%zu requirements, at most %d", rj_size(req), RULES_MAX_REQUIRES);
        r->n_requires = (int32_t)rj_size(req);
        for (int32_t i = 0; i < r->n_requires; i++) {
            const rj_val *e = rj_at(req, (size_t)i);
            char what[48];
            snprintf(what, sizeof what, "requirement %d", (int)i);
            if (!rj_is_arr(e) || rj_size(e) != 3)
                return rl_fail(c, "%s must be [variable, dim, value]", what);
            rules_ref ref;
            int64_t x;
            if (rl_ref(c, r, rj_at(e, 0), what, &ref) < 0)
                return -1;
            if (ref.kind != RULES_REF_VAR)
                return rl_fail(c, "%s must name a variable", what);
            r->requires[i].var = ref.idx;
            if (rl_int(c, rj_at(e, 1), what, 0, OPS_MAX_DIMS - 1, &x) < 0)
                return -1;
            r->requires[i].dim = (int32_t)x;
            if (rl_int(c, rj_at(e, 2), what, 1, INT64_C(1) << 31, &r->requires[i].value) < 0)
                return -1;
        }
    }
    const rj_val *fs = rj_get(o, "split_sizes");
    if (fs) {
        if (rl_str(c, fs, "\"split_sizes\"", &s) < 0)
            return -1;
        if (strcmp(s, "free") != 0)
            return rl_fail(c, "\"split_sizes\" must be \"free\", got '%s'", s);
        if (!rl_has_equal_split(r))
            return rl_fail(c, "\"split_sizes\": \"free\" on a rule without a two-way split of equal parts");
        r->split_free = 1;
    }
    const rj_val *prov = rj_get(o, "provenance");
    if (prov) {
        if (!rj_is_obj(prov))
            return rl_fail(c, "\"provenance\" must be an object, got %s", rl_type(prov));
        if (rl_keys(c, prov, "provenance", prov_keys) < 0)
            return -1;
        const rj_val *fp = rj_get(prov, "fingerprint");
        if (fp) {
            char *end;
            if (rl_str(c, fp, "provenance fingerprint", &s) < 0)
                return -1;
            errno = 0;
            unsigned long long x = strtoull(s, &end, 16);
            if (errno || end == s || *end || strlen(s) != 16)
                return rl_fail(c, "provenance fingerprint must be 16 hex digits");
            r->fingerprint = x;
        }
        const rj_val *mo = rj_get(prov, "max_ops");
        int64_t x;
        if (mo) {
            if (rl_int(c, mo, "provenance max_ops", 0, 64, &x) < 0)
                return -1;
            r->max_ops = (int32_t)x;
        }
        const rj_val *st = rj_get(prov, "stages");
        if (st) {
            if (rl_str(c, st, "provenance stages", &s) < 0)
                return -1;
            r->stages = rules_strdup(s);
        }
    }
    const rj_val *proof = rj_get(o, "proof");
    if (proof) {
        r->proof_json = rules_json_dump(proof);
        if (!r->proof_json)
            return rl_fail(c, "out of memory");
    }
    r->id = rules_strdup(c->rule_id);
    char m[512];
    if (rules_rule_check(r, m, sizeof m) < 0)
        return rl_fail(c, "%s", m);
    return 0;
}

static rules_set *rl_set(rl_ctx *c, const rj_val *root) {
    static const char *const keys[] = {"format", "version", "tool", "generator", "op_set", "max_ops", "counts",
                                       "extra", "rules", NULL};
    c->rule_index = -1;
    if (!rj_is_obj(root)) {
        rl_fail(c, "the top level must be an object, got %s", rl_type(root));
        return NULL;
    }
    const char *s;
    int64_t x;
    if (rl_str(c, rj_get(root, "format"), "\"format\"", &s) < 0)
        return NULL;
    if (strcmp(s, RULES_FORMAT)) {
        rl_fail(c, "\"format\" is '%s', expected '%s'", s, RULES_FORMAT);
        return NULL;
    }
    if (rl_int(c, rj_get(root, "version"), "\"version\"", 1, RULES_VERSION, &x) < 0)
        return NULL;
    if (rl_keys(c, root, "top level", keys) < 0)
        return NULL;
    rules_set *rs = rules_set_new();
    int32_t *ids = NULL; /* open addressing over rule ids: index into rs->rules, -1 empty */
    size_t ids_cap = 0;
    const rj_val *v;
    if ((v = rj_get(root, "tool"))) {
        if (rl_str(c, v, "\"tool\"", &s) < 0)
            goto fail;
        rs->tool = rules_strdup(s);
    }
    if ((v = rj_get(root, "generator"))) {
        if (rl_str(c, v, "\"generator\"", &s) < 0)
            goto fail;
        rs->generator = rules_strdup(s);
    }
    if ((v = rj_get(root, "op_set"))) {
        if (!rj_is_arr(v)) {
            rl_fail(c, "\"op_set\" must be an array of op names, got %s", rl_type(v));
            goto fail;
        }
        for (size_t i = 0; i < rj_size(v); i++) {
            const rj_val *e = rj_at(v, i);
            if (rl_str(c, e, "\"op_set\" entry", &s) < 0)
                goto fail;
            int op = ops_find(s);
            if (op < 0) {
                rl_fail(c, "\"op_set\": unknown op '%s'", s);
                goto fail;
            }
            rs->op_set[op] = 1;
        }
    }
    if ((v = rj_get(root, "max_ops"))) {
        if (rl_int(c, v, "\"max_ops\"", 0, 64, &x) < 0)
            goto fail;
        rs->max_ops = (int32_t)x;
    }
    if ((v = rj_get(root, "counts"))) {
        if (!rj_is_obj(v)) {
            rl_fail(c, "\"counts\" must be an object, got %s", rl_type(v));
            goto fail;
        }
        for (int32_t m = 0; m < v->n; m++) {
            const char *key = v->u.items[m].key;
            const rj_val *e = &v->u.items[m];
            char what[64];
            snprintf(what, sizeof what, "count '%.32s'", key);
            if (rl_int(c, e, what, 0, INT64_MAX, &x) < 0)
                goto fail;
            if (rules_set_count(rs, key, (uint64_t)x) < 0) {
                rl_fail(c, "\"counts\": too many entries or a name longer than 31 characters");
                goto fail;
            }
        }
    }
    if ((v = rj_get(root, "extra"))) {
        if (!rj_is_obj(v)) {
            rl_fail(c, "\"extra\" must be an object, got %s", rl_type(v));
            goto fail;
        }
        rs->extra_json = rules_json_dump(v);
    }
    const rj_val *rules = rj_get(root, "rules");
    if (!rj_is_arr(rules)) {
        rl_fail(c, "\"rules\" must be an array, got %s", rules ? rl_type(rules) : "nothing");
        goto fail;
    }
    if (rj_size(rules) > (size_t)INT32_MAX / 2) {
        rl_fail(c, "\"rules\" has too many entries");
        goto fail;
    }
    /* the whole array at once (a rule is ~10 KB: growing by doubling copies hundreds of MB), and
     * ids through an open-addressing table of rule indexes (a pairwise check is quadratic) */
    int32_t n_json = (int32_t)rj_size(rules);
    ids_cap = 16;
    while (ids_cap < 2 * (size_t)n_json)
        ids_cap *= 2;
    ids = malloc(ids_cap * sizeof *ids);
    rs->rules = malloc(((size_t)n_json + 1) * sizeof *rs->rules);
    if (!ids || !rs->rules) {
        rl_fail(c, "out of memory");
        goto fail;
    }
    rs->cap_rules = n_json + 1;
    for (size_t k = 0; k < ids_cap; k++)
        ids[k] = -1;
    for (size_t i = 0; i < rj_size(rules); i++) {
        const rj_val *e = rj_at(rules, i);
        rules_rule *r = &rs->rules[rs->n_rules];
        c->rule_index = (int32_t)i;
        c->rule_id = NULL;
        if (rl_rule(c, e, r) < 0) {
            rules_rule_clear(r);
            goto fail;
        }
        size_t slot = base_fnv1a_str(r->id) & (ids_cap - 1);
        while (ids[slot] >= 0 && strcmp(rs->rules[ids[slot]].id, r->id))
            slot = (slot + 1) & (ids_cap - 1);
        if (ids[slot] >= 0) {
            rl_fail(c, "id used twice (also rule %d)", (int)ids[slot]);
            rules_rule_clear(r);
            goto fail;
        }
        ids[slot] = rs->n_rules++; /* the set takes the strings */
    }
    free(ids);
    return rs;
fail:
    free(ids);
    rules_set_free(rs);
    return NULL;
}

rules_set *rules_from_json_string(const char *text, const char *where, char *err, size_t errlen) {
    const rj_val *root = NULL;
    rj_doc *doc = rules_json_parse(text, where, &root, err, errlen);
    if (!doc)
        return NULL;
    rl_ctx c = {where, err, errlen, NULL, -1};
    rules_set *rs = rl_set(&c, root);
    rules_json_free(doc);
    return rs;
}

rules_set *rules_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        base_fail_line(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                base_fail_line(err, errlen, "%s: out of memory", path);
                return NULL;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, 65536, f);
        len += n;
        if (n < 65536)
            break;
        if ((int64_t)len > RULES_MAX_FILE_BYTES) {
            free(buf);
            fclose(f);
            base_fail_line(err, errlen, "%s: larger than %lld bytes", path, (long long)RULES_MAX_FILE_BYTES);
            return NULL;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        base_fail_line(err, errlen, "%s: read error", path);
        return NULL;
    }
    if (memchr(buf, '\0', len)) {
        free(buf);
        base_fail_line(err, errlen, "%s: not a text file (NUL byte)", path);
        return NULL;
    }
    buf[len] = '\0';
    rules_set *rs = rules_from_json_string(buf, path, err, errlen);
    free(buf);
    return rs;
}

/* =============================================================================================
 * writing
 */
typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} rw_buf;

RULES_PRINTF(2, 3)
static void rw_printf(rw_buf *b, const char *fmt, ...) {
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int w = b->s ? vsnprintf(b->s + b->n, room, fmt, ap) : -2;
        va_end(ap);
        if (w >= 0 && (size_t)w < room) {
            b->n += (size_t)w;
            return;
        }
        if (w == -1) {
            b->oom = 1;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 1 << 16;
        while (w >= 0 && cap - b->n <= (size_t)w)
            cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
}

/* A JSON string literal (jansson does the escaping). */
static void rw_str(rw_buf *b, const char *s) {
    json_t *j = json_string(s ? s : "");
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    if (!t)
        b->oom = 1;
    else
        rw_printf(b, "%s", t);
    free(t);
    json_decref(j);
}

static void rw_ref(rw_buf *b, const rules_rule *r, rules_ref ref) {
    char t[32];
    rw_printf(b, "\"%s\"", rules_ref_str(r, ref, t, sizeof t));
}

static void rw_shape(rw_buf *b, const ops_shape *s) {
    rw_printf(b, "[");
    for (int32_t d = 0; d < s->rank; d++)
        rw_printf(b, "%s%lld", d ? "," : "", (long long)s->dims[d]);
    rw_printf(b, "]");
}

static void rw_params(rw_buf *b, const rules_op *o) {
    const ops_desc *od = &ops_table[o->op];
    if (!od->n_params)
        return;
    rw_printf(b, ",\"params\":{");
    for (int32_t i = 0; i < od->n_params; i++) {
        ops_param_key k = od->params[i].key;
        rw_printf(b, "%s\"%s\":", i ? "," : "", rules_param_name(&od->params[i]));
        int64_t v = o->p.v[k];
        switch (ops_param_table[k].kind) {
        case OPS_PK_INT:
            rw_printf(b, "%lld", (long long)v);
            break;
        case OPS_PK_ACT:
            rw_printf(b, "\"%s\"", v >= 0 && v < OPS_ACT_COUNT ? ops_act_names[v] : "?");
            break;
        case OPS_PK_PADMODE:
            rw_printf(b, "\"%s\"", v >= 0 && v < OPS_PAD_COUNT ? ops_padmode_names[v] : "?");
            break;
        case OPS_PK_FLOAT:
            rw_printf(b, "%.9g", (double)ops_p2f(v));
            break;
        case OPS_PK_LIST:
            rw_printf(b, "[");
            for (int32_t j = 0; j < o->p.n_list; j++)
                rw_printf(b, "%s%lld", j ? "," : "", (long long)o->p.list[j]);
            rw_printf(b, "]");
            break;
        }
    }
    rw_printf(b, "}");
}

static void rw_graph(rw_buf *b, const rules_rule *r, const rules_graph *g) {
    rw_printf(b, "[");
    for (int32_t k = 0; k < g->n_ops; k++) {
        const rules_op *o = &g->ops[k];
        rw_printf(b, "%s{\"op\":\"%s\"", k ? "," : "", ops_table[o->op].name);
        rw_params(b, o);
        rw_printf(b, ",\"inputs\":[");
        for (int32_t i = 0; i < o->n_in; i++) {
            if (i)
                rw_printf(b, ",");
            rw_ref(b, r, o->in[i]);
        }
        rw_printf(b, "]}");
    }
    rw_printf(b, "]");
}

static void rw_rule(rw_buf *b, const rules_rule *r) {
    rw_printf(b, "{\"id\":");
    rw_str(b, r->id);
    rw_printf(b, ",\"vars\":[");
    for (int32_t v = 0; v < r->n_vars; v++) {
        rw_printf(b, "%s{\"name\":\"%s\",\"shape\":", v ? "," : "", r->vars[v].name);
        rw_shape(b, &r->vars[v].shape);
        rw_printf(b, "}");
    }
    rw_printf(b, "],\"src\":");
    rw_graph(b, r, &r->src);
    rw_printf(b, ",\"dst\":");
    rw_graph(b, r, &r->dst);
    rw_printf(b, ",\"outputs\":[");
    for (int32_t i = 0; i < r->n_outputs; i++) {
        rw_printf(b, "%s{\"src\":", i ? "," : "");
        rw_ref(b, r, r->outputs[i].src);
        rw_printf(b, ",\"dst\":");
        rw_ref(b, r, r->outputs[i].dst);
        rw_printf(b, "}");
    }
    rw_printf(b, "]");
    if (r->n_constraints) {
        rw_printf(b, ",\"constraints\":[");
        for (int32_t i = 0; i < r->n_constraints; i++) {
            const rules_constraint *c = &r->constraints[i];
            const rules_graph *g = c->side == RULES_SIDE_SRC ? &r->src : &r->dst;
            const ops_param_desc *pd = ops_param_desc_of(g->ops[c->op].op, c->key);
            rw_printf(b, "%s{\"side\":\"%s\",\"op\":%d,\"param\":\"%s\"", i ? "," : "", rules_side_names[c->side],
                      (int)c->op, pd ? rules_param_name(pd) : ops_param_table[c->key].name);
            if (c->key == PM_LIST)
                rw_printf(b, ",\"index\":%d", (int)c->list_index);
            rw_printf(b, ",\"value\":%lld,\"equals\":[", (long long)c->value);
            for (int32_t e = 0; e < c->n_eq; e++)
                rw_printf(b, "%s[\"%s\",%d]", e ? "," : "", r->vars[c->eq[e].var].name, (int)c->eq[e].dim);
            rw_printf(b, "]}");
        }
        rw_printf(b, "]");
    }
    if (r->n_requires) {
        rw_printf(b, ",\"requires\":[");
        for (int32_t i = 0; i < r->n_requires; i++)
            rw_printf(b, "%s[\"%s\",%d,%lld]", i ? "," : "", r->vars[r->requires[i].var].name, (int)r->requires[i].dim,
                      (long long)r->requires[i].value);
        rw_printf(b, "]");
    }
    if (r->split_free)
        rw_printf(b, ",\"split_sizes\":\"free\"");
    if (r->fingerprint || r->max_ops || r->stages) {
        rw_printf(b, ",\"provenance\":{");
        const char *sep = "";
        if (r->fingerprint) {
            rw_printf(b, "\"fingerprint\":\"%016" PRIx64 "\"", r->fingerprint);
            sep = ",";
        }
        if (r->max_ops) {
            rw_printf(b, "%s\"max_ops\":%d", sep, (int)r->max_ops);
            sep = ",";
        }
        if (r->stages) {
            rw_printf(b, "%s\"stages\":", sep);
            rw_str(b, r->stages);
        }
        rw_printf(b, "}");
    }
    if (r->proof_json)
        rw_printf(b, ",\"proof\":%s", r->proof_json);
    rw_printf(b, "}");
}

char *rules_to_json_string(const rules_set *rs) {
    rw_buf b = {0};
    /* the first line says what made the file */
    rw_printf(&b, "{\"format\": \"%s\", \"version\": %d,", RULES_FORMAT, RULES_VERSION);
    if (rs->generator) {
        rw_printf(&b, " \"generator\": ");
        rw_str(&b, rs->generator);
        rw_printf(&b, ",");
    }
    rw_printf(&b, "\n");
    if (rs->tool) {
        rw_printf(&b, " \"tool\": ");
        rw_str(&b, rs->tool);
        rw_printf(&b, ",\n");
    }
    rw_printf(&b, " \"op_set\": [");
    int first = 1;
    for (int op = 0; op < OP_COUNT; op++)
        if (rs->op_set[op]) {
            rw_printf(&b, "%s\"%s\"", first ? "" : ", ", ops_table[op].name);
            first = 0;
        }
    rw_printf(&b, "],\n \"max_ops\": %d,\n \"counts\": {", (int)rs->max_ops);
    for (int32_t i = 0; i < rs->n_counts; i++) {
        rw_printf(&b, "%s", i ? ", " : "");
        rw_str(&b, rs->counts[i].name);
        rw_printf(&b, ": %" PRIu64, rs->counts[i].value);
    }
    rw_printf(&b, "},\n");
    if (rs->extra_json)
        rw_printf(&b, " \"extra\": %s,\n", rs->extra_json);
    rw_printf(&b, " \"rules\": [");
    for (int32_t i = 0; i < rs->n_rules; i++) {
        rw_printf(&b, "%s\n  ", i ? "," : "");
        rw_rule(&b, &rs->rules[i]);
    }
    rw_printf(&b, "%s]}\n", rs->n_rules ? "\n " : "");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

int rules_save(const rules_set *rs, const char *path, char *err, size_t errlen) {
    char *text = rules_to_json_string(rs);
    if (!text)
        return base_fail_line(err, errlen, "%s: out of memory", path);
    base_afile f;
    int rc = base_afile_open(&f, path, err, errlen);
    if (rc == 0) {
        fputs(text, f.f); /* a failed write shows in ferror: base_afile_commit reports it */
        rc = base_afile_commit(&f, err, errlen);
    }
    free(text);
    return rc;
}
