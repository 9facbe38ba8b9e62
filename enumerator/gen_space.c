/* gen_space.c: the generator's search space and the evaluation of coded graphs.
 *
 * The input pool is the one list the generator owns: small tensors of each kind, three of each so
 * graphs may share inputs or not, with dims chosen so that ops compose (matrices share K, kernels
 * have F = C) and distinct symbols have distinct values (M=2, K=3, N=1, C=4, H=5, W=6), so a
 * constant's size can be traced to the variable dim it stands for. Everything about operators
 * comes from the op table: the generation set (.gen), parameter values (.gen values; a required
 * parameter without them draws from the pool's dims and shapes, and its op's outputs must then
 * have a pool shape), fingerprint semantics (.fp), float references (.cpu), weight inputs
 * (.weight_input_mask). Commutativity is probed on the fingerprints, not listed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_impl.h"

/* The input pool: prefix, role, how many, shape as dimension symbols. */
static const struct {
    const char *prefix;
    gen_role role;
    int32_t count;
    int32_t rank;
    gen_sym sym[4];
} gen_pool_kinds[] = {
    {"x", GEN_ROLE_NONE, 3, 2, {GEN_SYM_M, GEN_SYM_K}},                           /* matrices (M, K) */
    {"w", GEN_ROLE_NONE, 3, 2, {GEN_SYM_K, GEN_SYM_K}},                           /* square (K, K): chains, transposes */
    {"a", GEN_ROLE_DATA, 3, 4, {GEN_SYM_N, GEN_SYM_C, GEN_SYM_H, GEN_SYM_W}},     /* activations (N, C, H, W) */
    {"k", GEN_ROLE_WEIGHT, 3, 4, {GEN_SYM_C, GEN_SYM_C, GEN_SYM_S3, GEN_SYM_S3}}, /* kernels 3x3 (F = C: convs chain) */
    {"r", GEN_ROLE_WEIGHT, 3, 4, {GEN_SYM_C, GEN_SYM_C, GEN_SYM_S1, GEN_SYM_S3}}, /* kernels 1x3 */
    {"p", GEN_ROLE_WEIGHT, 3, 4, {GEN_SYM_C, GEN_SYM_C, GEN_SYM_S1, GEN_SYM_S1}}, /* kernels 1x1 */
    {"s", GEN_ROLE_NONE, 1, 0, {0}},                                              /* a scalar */
};
/* Symbol values: distinct except the kernel sizes, so a size can be traced to its symbol; the
 * alternative values (odd kernel sizes, so "same" padding stays centred) are distinct from all. */
static const int64_t gen_sym_value[GEN_SYM_COUNT] = {2, 3, 1, 4, 5, 6, 1, 3};
static const int64_t gen_sym_other[GEN_SYM_COUNT] = {7, 8, 9, 10, 11, 12, 5, 7};

int64_t gen_sym_alt(int32_t sym) { return gen_sym_other[sym]; }
int gen_sym_is_kernel(int32_t sym) { return sym == GEN_SYM_S1 || sym == GEN_SYM_S3; }

static ops_shape gen_kind_shape(int32_t k) {
    int64_t d[4];
    for (int32_t i = 0; i < gen_pool_kinds[k].rank; i++)
        d[i] = gen_sym_value[gen_pool_kinds[k].sym[i]];
    return ops_shape_make(gen_pool_kinds[k].rank, d);
}
#define GEN_N_KINDS ((int32_t)(sizeof gen_pool_kinds / sizeof gen_pool_kinds[0]))

uint64_t gen_mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t gen_hash_values(const ops_shape *s, const uint32_t *v, int64_t n) {
    uint64_t h = gen_mix64(0x7461736367656e00ull + (uint64_t)s->rank);
    for (int32_t d = 0; d < s->rank; d++)
        h = gen_mix64(h ^ (uint64_t)s->dims[d]);
    /* two lanes of multiply-xorshift, mixed at the end: fast and well spread for random words */
    uint64_t a = h, b = ~h;
    int64_t i = 0;
    for (; i + 1 < n; i += 2) {
        a = (a ^ v[i]) * 0x9e3779b97f4a7c15ull;
        a ^= a >> 31;
        b = (b ^ v[i + 1]) * 0xc2b2ae3d27d4eb4full;
        b ^= b >> 29;
    }
    if (i < n) {
        a = (a ^ v[i]) * 0x9e3779b97f4a7c15ull;
        a ^= a >> 31;
    }
    return gen_mix64(a ^ gen_mix64(b + (uint64_t)n));
}

uint64_t gen_hash_outputs(const uint64_t *h, int32_t n) {
    uint64_t s[GEN_MAX_GOUT];
    for (int32_t i = 0; i < n; i++) { /* insertion sort: a handful of values */
        int32_t j = i;
        for (; j > 0 && s[j - 1] > h[i]; j--)
            s[j] = s[j - 1];
        s[j] = h[i];
    }
    uint64_t r = gen_mix64(0x6f75747075747321ull ^ (uint64_t)n);
    for (int32_t i = 0; i < n; i++)
        r = gen_mix64(r ^ s[i]);
    return r;
}

gen_record gen_record_make(uint64_t fp, const gen_code *c) {
    uint32_t w[GEN_MAX_OPS];
    for (int32_t k = 0; k < GEN_MAX_OPS; k++)
        w[k] = c->w[k] >> 8; /* 24 bits: variant+1, input 0, input 1 */
    gen_record r = {{(uint32_t)(fp >> 32), (uint32_t)fp, w[0] << 8 | w[1] >> 16, (w[1] & 0xffffu) << 16 | w[2] >> 8,
                     (w[2] & 0xffu) << 24 | w[3]}};
    return r;
}

uint64_t gen_record_fp(const gen_record *r) { return (uint64_t)r->v[0] << 32 | r->v[1]; }

void gen_record_code(const gen_record *r, gen_code *c) {
    uint32_t w0 = r->v[2] >> 8, w1 = (r->v[2] & 0xffu) << 16 | r->v[3] >> 16,
             w2 = (r->v[3] & 0xffffu) << 8 | r->v[4] >> 24, w3 = r->v[4] & 0xffffffu;
    c->w[0] = w0 << 8;
    c->w[1] = w1 << 8;
    c->w[2] = w2 << 8;
    c->w[3] = w3 << 8;
}

int gen_record_cmp(const void *a, const void *b) {
    const gen_record *x = a, *y = b;
    for (int i = 0; i < 5; i++)
        if (x->v[i] != y->v[i])
            return x->v[i] < y->v[i] ? -1 : 1;
    return 0;
}

/* =============================================================================================
 * configuration
 */
void gen_config_default(gen_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->max_ops = 3;
    cfg->fp_bits = 64;
}

int gen_parse_ops(gen_config *cfg, const char *list, char *err, size_t errlen) {
    memset(cfg->ops, 0, sizeof cfg->ops);
    const char *p = list;
    int any = 0;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (n == 0 || n >= sizeof name)
            return base_fail(err, errlen, "--ops: empty or overlong entry in '%s'", list);
        memcpy(name, p, n);
        name[n] = '\0';
        int op = ops_find(name);
        if (op < 0)
            return base_fail(err, errlen, "--ops: unknown op '%s'", name);
        if (!ops_table[op].gen || !ops_table[op].fp)
            return base_fail(err, errlen, "--ops: '%s' is not in the generation op set", name);
        cfg->ops[op] = 1;
        any = 1;
        p += n;
        if (*p == ',')
            p++;
    }
    if (!any)
        return base_fail(err, errlen, "--ops: no op given");
    return 0;
}

int32_t gen_pool_describe(rules_var *vars, int32_t cap) {
    int32_t n = 0;
    for (int32_t k = 0; k < GEN_N_KINDS; k++)
        for (int32_t i = 0; i < gen_pool_kinds[k].count; i++) {
            if (n < cap) {
                memset(&vars[n], 0, sizeof vars[n]);
                snprintf(vars[n].name, sizeof vars[n].name, "%.3s%u", gen_pool_kinds[k].prefix, (unsigned)(i & 0xff));
                vars[n].shape = gen_kind_shape(k);
            }
            n++;
        }
    return n < cap ? n : cap;
}

/* =============================================================================================
 * the space
 */
int gen_shape_is_pool(const gen_space *sp, const ops_shape *s) {
    for (int32_t v = 0; v < sp->n_vars; v++)
        if (ops_shape_eq(&sp->vars[v].shape, s))
            return 1;
    return 0;
}

static gen_role gen_role_of_shape(const gen_space *sp, const ops_shape *s) {
    for (int32_t v = 0; v < sp->n_vars; v++)
        if (ops_shape_eq(&sp->vars[v].shape, s))
            return sp->vars[v].role;
    return GEN_ROLE_NONE;
}

/* Values a parameter takes: its generator values; else its default; else (required) every dim
 * (INT) or every shape (LIST) of the pool. n_choice lists; for PM_LIST each choice is a list. */
typedef struct {
    int32_t n;
    int64_t v[64];
    int32_t n_list[64];
    int64_t list[64][OPS_MAX_LIST];
    int drawn;
} gen_choices;

static void gen_param_choices(const gen_space *sp, const ops_param_desc *pd, gen_choices *c) {
    memset(c, 0, sizeof *c);
    if (pd->key == PM_LIST) {
        if (pd->n_gen > 0) {
            c->n = 1;
            c->n_list[0] = pd->n_gen;
            memcpy(c->list[0], pd->gen, sizeof(int64_t) * (size_t)pd->n_gen);
        } else if (!pd->required) {
            c->n = 1; /* empty list: the default */
        } else {
            c->drawn = 1;
            for (int32_t v = 0; v < sp->n_vars && c->n < 64; v++) {
                const ops_shape *s = &sp->vars[v].shape;
                int seen = 0;
                for (int32_t j = 0; j < c->n && !seen; j++)
                    seen = c->n_list[j] == s->rank && !memcmp(c->list[j], s->dims, sizeof(int64_t) * (size_t)s->rank);
                if (!seen && s->rank <= OPS_MAX_LIST) {
                    c->n_list[c->n] = s->rank;
                    memcpy(c->list[c->n], s->dims, sizeof(int64_t) * (size_t)s->rank);
                    c->n++;
                }
            }
        }
        return;
    }
    if (pd->n_gen > 0) {
        c->n = pd->n_gen;
        memcpy(c->v, pd->gen, sizeof(int64_t) * (size_t)pd->n_gen);
    } else if (!pd->required || ops_param_table[pd->key].kind != OPS_PK_INT) {
        c->n = 1;
        c->v[0] = pd->def;
    } else {
        c->drawn = 1;
        for (int32_t v = 0; v < sp->n_vars; v++)
            for (int32_t d = 0; d < sp->vars[v].shape.rank; d++) {
                int64_t x = sp->vars[v].shape.dims[d];
                int seen = 0;
                for (int32_t j = 0; j < c->n && !seen; j++)
                    seen = c->v[j] == x;
                if (!seen && c->n < 64)
                    c->v[c->n++] = x;
            }
        /* ascending, so variants come in a stable order */
        for (int32_t i = 1; i < c->n; i++)
            for (int32_t j = i; j > 0 && c->v[j - 1] > c->v[j]; j--) {
                int64_t t = c->v[j];
                c->v[j] = c->v[j - 1];
                c->v[j - 1] = t;
            }
    }
}

/* Evaluate one op on pool variables with exact arithmetic; out receives malloc'd buffers. */
static int gen_eval_op_fp(const gen_variant *va, int32_t n_in, const gen_var *const *in, uint32_t **out,
                          ops_shape *oshape) {
    ops_shape ish[GEN_MAX_IN];
    const uint32_t *iv[GEN_MAX_IN];
    for (int32_t i = 0; i < n_in; i++) {
        ish[i] = in[i]->shape;
        iv[i] = in[i]->fp;
    }
    int32_t n_out = 0;
    if (ops_infer(va->op, &va->p, n_in, ish, &n_out, oshape, NULL, 0) < 0)
        return -1;
    for (int32_t o = 0; o < n_out; o++)
        out[o] = base_xmalloc(sizeof(uint32_t) * (size_t)ops_shape_numel(&oshape[o]));
    ops_sig sig = {va->op, &va->p, n_in, n_out, ish, oshape};
    ops_table[va->op].fp(&sig, iv, out);
    return n_out;
}

/* op(a, b) == op(b, a) on two distinct pool variables of one shape that the op accepts. */
static int gen_probe_commutative(const gen_space *sp, const gen_variant *va, int8_t *pair) {
    for (int32_t a = 0; a < sp->n_vars; a++)
        for (int32_t b = a + 1; b < sp->n_vars; b++) {
            if (!ops_shape_eq(&sp->vars[a].shape, &sp->vars[b].shape))
                continue;
            const gen_var *ab[2] = {&sp->vars[a], &sp->vars[b]}, *ba[2] = {&sp->vars[b], &sp->vars[a]};
            uint32_t *o1[GEN_MAX_OUT] = {0}, *o2[GEN_MAX_OUT] = {0};
            ops_shape s1[GEN_MAX_OUT], s2[GEN_MAX_OUT];
            int n1 = gen_eval_op_fp(va, 2, ab, o1, s1);
            if (n1 < 0)
                continue;
            int n2 = gen_eval_op_fp(va, 2, ba, o2, s2);
            int same = n1 == 1 && n2 == 1 && ops_shape_eq(&s1[0], &s2[0]) &&
                       !memcmp(o1[0], o2[0], sizeof(uint32_t) * (size_t)ops_shape_numel(&s1[0]));
            for (int o = 0; o < GEN_MAX_OUT; o++) {
                free(o1[o]);
                free(o2[o]);
            }
            pair[0] = (int8_t)a;
            pair[1] = (int8_t)b;
            return same;
        }
    return 0;
}

static int gen_add_variant(gen_space *sp, const gen_variant *va, char *err, size_t errlen) {
    if (sp->n_variants == GEN_MAX_VARIANTS)
        return base_fail(err, errlen, "more than %d op forms in the generation set", GEN_MAX_VARIANTS);
    sp->variants[sp->n_variants++] = *va;
    return 0;
}

/* Every combination of parameter choices of one op. */
static int gen_op_variants(gen_space *sp, ops_type op, char *err, size_t errlen) {
    const ops_desc *od = &ops_table[op];
    int32_t n_in = od->max_in < 0 ? (od->min_in > 2 ? od->min_in : 2) : od->min_in;
    if (n_in > GEN_MAX_IN)
        return 0; /* no generation form with this many inputs */
    gen_choices *ch = base_xmalloc(sizeof(gen_choices) * OPS_MAX_OP_PARAMS); /* [n_params] */
    int32_t idx[OPS_MAX_OP_PARAMS] = {0};
    for (int32_t i = 0; i < od->n_params; i++) {
        gen_param_choices(sp, &od->params[i], &ch[i]);
        if (ch[i].n == 0) {
            free(ch);
            return 0;
        }
    }
    for (;;) {
        gen_variant va;
        memset(&va, 0, sizeof va);
        va.op = op;
        va.n_in = n_in;
        ops_params_default(op, &va.p);
        for (int32_t i = 0; i < od->n_params; i++) {
            const gen_choices *c = &ch[i];
            ops_param_key k = od->params[i].key;
            if (k == PM_LIST) {
                va.p.n_list = c->n_list[idx[i]];
                memcpy(va.p.list, c->list[idx[i]], sizeof(int64_t) * (size_t)va.p.n_list);
            } else {
                va.p.v[k] = c->v[idx[i]];
            }
            if (c->drawn) {
                va.drawn = 1;
                va.drawn_keys |= 1u << k;
            }
        }
        if (ops_params_check(op, &va.p, NULL, 0) == 0) {
            va.n_out = od->n_out >= 0 ? od->n_out : (int32_t)va.p.v[PM_PARTS];
            va.weight_transform = n_in >= 1 && (od->weight_input_mask & 1);
            /* windowed: ops_window2d knows the op (probed on an input the window fits) */
            ops_shape px = {4, {1, 1, 8, 8}}, pw = {4, {1, 1, 1, 1}};
            ops_window win;
            va.windowed = n_in >= 1 && ops_window2d(op, &va.p, &px, &pw, &win, NULL, 0) == 0;
            va.has_axis = ops_param_desc_of(op, PM_AXIS) != NULL;
            int ok = va.n_out >= 1 && va.n_out <= GEN_MAX_OUT;
            if (ok && n_in == 0) {
                /* a constant: it must type-check, and a drawn size must give a pool shape */
                ops_shape os[GEN_MAX_OUT];
                int32_t no = 0;
                ok = ops_infer(op, &va.p, 0, NULL, &no, os, NULL, 0) == 0;
                for (int32_t o = 0; ok && o < no; o++)
                    ok = !va.drawn || gen_shape_is_pool(sp, &os[o]);
                if (ok)
                    va.role = (uint8_t)gen_role_of_shape(sp, &os[0]);
            }
            if (ok && n_in == 2 && va.n_out == 1)
                va.commutative = (uint8_t)gen_probe_commutative(sp, &va, va.comm_pair);
            if (ok && gen_add_variant(sp, &va, err, errlen) < 0) {
                free(ch);
                return -1;
            }
        }
        int32_t i = od->n_params - 1;
        while (i >= 0 && ++idx[i] == ch[i].n) {
            idx[i] = 0;
            i--;
        }
        if (i < 0)
            break;
    }
    free(ch);
    return 0;
}

static uint64_t gen_rand(uint64_t *s) {
    *s += 0x9e3779b97f4a7c15ull;
    return gen_mix64(*s);
}

int gen_space_init(gen_space *sp, const gen_config *cfg, char *err, size_t errlen) {
    memset(sp, 0, sizeof *sp);
    if (cfg->max_ops < 1 || cfg->max_ops > GEN_MAX_OPS)
        return base_fail(err, errlen, "max ops %d out of range 1..%d", (int)cfg->max_ops, GEN_MAX_OPS);
    int bits = cfg->fp_bits ? cfg->fp_bits : 64;
    if (bits < 1 || bits > 64)
        return base_fail(err, errlen, "fingerprint bits %d out of range 1..64", bits);
    sp->max_ops = cfg->max_ops;
    sp->fp_mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    sp->seed = cfg->seed ? cfg->seed : 0x5eed0fa5c0ffee11ull;
    int any = 0;
    for (int op = 0; op < OP_COUNT; op++)
        any |= cfg->ops[op];
    for (int op = 0; op < OP_COUNT; op++)
        sp->op_set[op] = (uint8_t)(ops_table[op].gen && ops_table[op].fp && ops_table[op].cpu && (!any || cfg->ops[op]));
    for (int op = 0; op < OP_COUNT; op++)
        if (any && cfg->ops[op] && !sp->op_set[op])
            return base_fail(err, errlen, "op '%s' is not in the generation op set", ops_table[op].name);

    uint64_t rs = sp->seed;
    for (int32_t k = 0; k < GEN_N_KINDS; k++) {
        if (sp->n_classes == GEN_MAX_CLASSES)
            return base_fail(err, errlen, "too many pool kinds");
        sp->class_first[sp->n_classes] = sp->n_vars;
        sp->class_size[sp->n_classes] = gen_pool_kinds[k].count;
        for (int32_t i = 0; i < gen_pool_kinds[k].count; i++) {
            if (sp->n_vars == GEN_MAX_POOL)
                return base_fail(err, errlen, "pool larger than %d", GEN_MAX_POOL);
            gen_var *v = &sp->vars[sp->n_vars++];
            snprintf(v->name, sizeof v->name, "%.3s%u", gen_pool_kinds[k].prefix, (unsigned)(i & 0xff));
            v->shape = gen_kind_shape(k);
            for (int32_t d = 0; d < gen_pool_kinds[k].rank; d++)
                v->sym[d] = (int8_t)gen_pool_kinds[k].sym[d];
            v->role = gen_pool_kinds[k].role;
            v->cls = sp->n_classes;
            v->slot = i;
            v->numel = ops_shape_numel(&v->shape);
            v->fp = base_xmalloc(sizeof(uint32_t) * (size_t)v->numel);
            v->fv = base_xmalloc(sizeof(float) * (size_t)v->numel);
            for (int64_t j = 0; j < v->numel; j++) {
                uint64_t r = gen_rand(&rs);
                v->fp[j] = (uint32_t)r;
                v->fv[j] = (float)((double)(r >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
            }
            v->hash = gen_hash_values(&v->shape, v->fp, v->numel);
        }
        sp->n_classes++;
    }
    sp->variants = base_xmalloc(sizeof(gen_variant) * GEN_MAX_VARIANTS);
    for (int op = 0; op < OP_COUNT; op++)
        if (sp->op_set[op] && gen_op_variants(sp, (ops_type)op, err, errlen) < 0) {
            gen_space_free(sp);
            return -1;
        }
    if (sp->n_variants == 0) {
        gen_space_free(sp);
        return base_fail(err, errlen, "the op set gives no op forms to enumerate");
    }
    return 0;
}

void gen_space_free(gen_space *sp) {
    for (int32_t v = 0; v < sp->n_vars; v++) {
        free(sp->vars[v].fp);
        free(sp->vars[v].fv);
    }
    free(sp->variants);
    memset(sp, 0, sizeof *sp);
}

/* =============================================================================================
 * coded graphs
 */
void gen_decode(const gen_space *sp, const gen_code *c, gen_graph *g) {
    memset(g, 0, sizeof *g);
    g->n_tensors = sp->n_vars;
    for (int32_t t = 0; t < sp->n_vars; t++)
        g->producer[t] = -1;
    for (int32_t k = 0; k < GEN_MAX_OPS && c->w[k]; k++) {
        uint32_t w = c->w[k];
        if ((w >> 20) == GEN_IDENT_VAR + 1u) {
            g->outputs[g->n_outputs++] = GEN_WORD_IN0(w);
            if (GEN_WORD_IN1(w) != GEN_NOREF)
                g->outputs[g->n_outputs++] = GEN_WORD_IN1(w);
            return;
        }
        const gen_variant *va = &sp->variants[GEN_WORD_VAR(w)];
        g->ops[k].var = GEN_WORD_VAR(w);
        g->ops[k].n_in = va->n_in;
        g->ops[k].in[0] = GEN_WORD_IN0(w);
        g->ops[k].in[1] = GEN_WORD_IN1(w);
        for (int32_t i = 0; i < va->n_in; i++)
            g->uses[g->ops[k].in[i]]++;
        g->ops[k].first_out = g->n_tensors;
        g->ops[k].n_out = va->n_out;
        for (int32_t o = 0; o < va->n_out; o++)
            g->producer[g->n_tensors++] = k;
        g->n_ops = k + 1;
    }
    for (int32_t t = sp->n_vars; t < g->n_tensors; t++)
        if (!g->uses[t])
            g->outputs[g->n_outputs++] = t;
}

int gen_graph_shapes(const gen_space *sp, const gen_graph *g, ops_shape *shapes) {
    for (int32_t v = 0; v < sp->n_vars; v++)
        shapes[v] = sp->vars[v].shape;
    for (int32_t k = 0; k < g->n_ops; k++) {
        const gen_variant *va = &sp->variants[g->ops[k].var];
        ops_shape in[GEN_MAX_IN];
        for (int32_t i = 0; i < va->n_in; i++)
            in[i] = shapes[g->ops[k].in[i]];
        int32_t n_out = 0;
        if (ops_infer(va->op, &va->p, va->n_in, in, &n_out, &shapes[g->ops[k].first_out], NULL, 0) < 0 ||
            n_out != va->n_out)
            return -1;
    }
    return 0;
}

int gen_eval_fp(const gen_space *sp, const gen_graph *g, const ops_shape *shapes, uint32_t *const *subst,
                uint32_t **vals) {
    for (int32_t v = 0; v < sp->n_vars; v++)
        vals[v] = subst && subst[v] ? subst[v] : sp->vars[v].fp;
    for (int32_t k = 0; k < g->n_ops; k++) {
        const gen_variant *va = &sp->variants[g->ops[k].var];
        int32_t f = g->ops[k].first_out;
        ops_shape in[GEN_MAX_IN];
        const uint32_t *iv[GEN_MAX_IN];
        for (int32_t i = 0; i < va->n_in; i++) {
            in[i] = shapes[g->ops[k].in[i]];
            iv[i] = vals[g->ops[k].in[i]];
        }
        for (int32_t o = 0; o < va->n_out; o++)
            vals[f + o] = base_xmalloc(sizeof(uint32_t) * (size_t)ops_shape_numel(&shapes[f + o]));
        ops_sig sig = {va->op, &va->p, va->n_in, va->n_out, in, &shapes[f]};
        ops_table[va->op].fp(&sig, iv, &vals[f]);
        for (int32_t o = 0; o < va->n_out; o++)
            if (subst && subst[f + o])
                memcpy(vals[f + o], subst[f + o], sizeof(uint32_t) * (size_t)ops_shape_numel(&shapes[f + o]));
    }
    return 0;
}

int gen_eval_float(const gen_space *sp, const gen_graph *g, const ops_shape *shapes, float **vals) {
    for (int32_t v = 0; v < sp->n_vars; v++)
        vals[v] = sp->vars[v].fv;
    for (int32_t k = 0; k < g->n_ops; k++) {
        const gen_variant *va = &sp->variants[g->ops[k].var];
        int32_t f = g->ops[k].first_out;
        ops_shape in[GEN_MAX_IN];
        const float *iv[GEN_MAX_IN];
        for (int32_t i = 0; i < va->n_in; i++) {
            in[i] = shapes[g->ops[k].in[i]];
            iv[i] = vals[g->ops[k].in[i]];
        }
        for (int32_t o = 0; o < va->n_out; o++)
            vals[f + o] = base_xmalloc(sizeof(float) * (size_t)ops_shape_numel(&shapes[f + o]));
        ops_sig sig = {va->op, &va->p, va->n_in, va->n_out, in, &shapes[f]};
        ops_table[va->op].cpu(&sig, iv, &vals[f]);
    }
    return 0;
}

void gen_free_values(const gen_space *sp, const gen_graph *g, void **vals) {
    for (int32_t t = sp->n_vars; t < g->n_tensors; t++) {
        free(vals[t]);
        vals[t] = NULL;
    }
}

void gen_canon(const gen_space *sp, const gen_graph *g, const int32_t *perm, gen_code *out) {
    int32_t map[GEN_MAX_TENSORS];
    int placed[GEN_MAX_OPS] = {0};
    memset(out, 0, sizeof *out);
    for (int32_t v = 0; v < sp->n_vars; v++)
        map[v] = perm ? perm[v] : v;
    for (int32_t t = sp->n_vars; t < GEN_MAX_TENSORS; t++)
        map[t] = -1;
    if (g->n_ops == 0) {
        int32_t a = g->n_outputs > 0 ? map[g->outputs[0]] : GEN_NOREF;
        int32_t b = g->n_outputs > 1 ? map[g->outputs[1]] : GEN_NOREF;
        if (b < a) {
            int32_t t = a;
            a = b;
            b = t;
        }
        out->w[0] = ((GEN_IDENT_VAR + 1u) << 20) | ((uint32_t)a << 14) | ((uint32_t)b << 8);
    } else {
        int32_t next = sp->n_vars;
        for (int32_t step = 0; step < g->n_ops; step++) {
            int32_t best = -1;
            uint32_t best_w = 0;
            for (int32_t k = 0; k < g->n_ops; k++) {
                if (placed[k])
                    continue;
                const gen_variant *va = &sp->variants[g->ops[k].var];
                int32_t r[GEN_MAX_IN] = {0, 0}, ready = 1;
                for (int32_t i = 0; i < va->n_in; i++) {
                    r[i] = map[g->ops[k].in[i]];
                    ready &= r[i] >= 0;
                }
                if (!ready)
                    continue;
                if (va->commutative && r[0] > r[1]) {
                    int32_t t = r[0];
                    r[0] = r[1];
                    r[1] = t;
                }
                uint32_t w = GEN_WORD(g->ops[k].var, r[0], r[1]);
                if (best < 0 || w < best_w) {
                    best = k;
                    best_w = w;
                }
            }
            placed[best] = 1;
            out->w[step] = best_w;
            for (int32_t o = 0; o < g->ops[best].n_out; o++)
                map[g->ops[best].first_out + o] = next++;
        }
    }
}
