/* gen_pairs.c: from enumerated graphs to rules: gen_run walks a table of stages over one run state
 * (which owns everything, freed in one place), each stage counted:
 *
 *   records sorted by fingerprint -> buckets of two or more graphs (0-op graphs of one or two
 *   variables take part, so T(T(x)) = x and split(concat(x,y)) = {x,y} are found) -> classes of
 *   members equal on floats (CPU references, random inputs in [-1,1], relative L2 error <= 1e-5
 *   per output); the candidate pairs are each member with the bucket's first (fewest ops, then
 *   code; TASO keeps the first graph of a bucket), those of other classes fail the float re-test
 *   -> renaming (the pair's canonical form under renamings of variables within each pool kind,
 *   kept once) -> common subgraph (TASO: the same op on the same variables in both graphs) ->
 *   common supergraph (members linked by equal sub-graphs in one common context, or under one
 *   common last op on pairwise equal inputs: one pair per linked component) -> specialisation
 *   (a variable's reads split between it and a fresh one, the pair still equal: an instance of a
 *   more general pair) -> generality (each dimension symbol of the pool changed in turn: a side
 *   that no longer type-checks gives a requirement, such as a kernel size; values that differ
 *   show an accident of the pool's sizes, dropped) -> sized splits (an equal two-way split cut
 *   instead at the widths of a concat of two variables where the rule still holds with either
 *   width changed alone: merges of unequal siblings) -> rules, fewest ops first.
 * Buckets are processed in parallel into per-bucket results merged in bucket order, so the
 * output does not depend on the thread count. Commutativity, which canonical input order folds
 * into the enumeration, comes back as one explicit pair per commutative op form.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "gen_impl.h"

#define GEN_FLOAT_TOL 1e-5
#define GP_STAGES "float,renaming,common_subgraph,supergraph,specialization,generality"

static int gp_code_cmp(const gen_code *a, const gen_code *b) {
    for (int32_t k = 0; k < GEN_MAX_OPS; k++)
        if (a->w[k] != b->w[k])
            return a->w[k] < b->w[k] ? -1 : 1;
    return 0;
}

static int32_t gp_code_ops(const gen_code *c) {
    int32_t n = 0;
    while (n < GEN_MAX_OPS && c->w[n] && (c->w[n] >> 20) != GEN_IDENT_VAR + 1u)
        n++;
    return n;
}

/* =============================================================================================
 * sorting records in place: two MSD radix passes of 8 bits on the top of the fingerprint
 * (American flag: count, then cycle each record into its bucket; 256 buckets keep the moves
 * cache-friendly), the second one bucket by bucket in parallel, then each small bucket by
 * (fingerprint, code)
 */
static void gp_flag_pass(gen_record *r, uint64_t n, int shift, uint64_t *start /* [257] */) {
    uint64_t next[256];
    memset(start, 0, 257 * sizeof(uint64_t));
    for (uint64_t i = 0; i < n; i++)
        start[((gen_record_fp(&r[i]) >> shift) & 0xffu) + 1]++;
    for (int b = 0; b < 256; b++)
        start[b + 1] += start[b];
    memcpy(next, start, sizeof next);
    for (int b = 0; b < 256; b++)
        while (next[b] < start[b + 1]) {
            gen_record x = r[next[b]];
            uint32_t d = (uint32_t)((gen_record_fp(&x) >> shift) & 0xffu);
            while (d != (uint32_t)b) { /* carry x to its bucket, taking the record found there */
                gen_record y = r[next[d]];
                r[next[d]++] = x;
                x = y;
                d = (uint32_t)((gen_record_fp(&x) >> shift) & 0xffu);
            }
            r[next[b]++] = x;
        }
}

static void gp_sort(gen_records *r, int bits, int threads) {
    uint64_t n = r->n;
    if (n < 2)
        return;
    int shift = bits > 16 ? bits - 8 : 8;
    uint64_t top[257];
    gp_flag_pass(r->recs, n, shift, top);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int b = 0; b < 256; b++) {
        uint64_t sub[257], lo = top[b], len = top[b + 1] - top[b];
        if (len < 2)
            continue;
        gp_flag_pass(r->recs + lo, len, shift - 8, sub);
        for (int c = 0; c < 256; c++)
            if (sub[c + 1] - sub[c] > 1)
                qsort(r->recs + lo + sub[c], (size_t)(sub[c + 1] - sub[c]), sizeof *r->recs, gen_record_cmp);
    }
}

/* =============================================================================================
 * one graph of a bucket, evaluated
 */
typedef struct {
    gen_code code;
    gen_graph g;
    ops_shape shapes[GEN_MAX_TENSORS];
    uint32_t *fv[GEN_MAX_TENSORS];   /* exact values */
    float *flv[GEN_MAX_TENSORS];     /* float values */
    uint64_t oh[GEN_MAX_GOUT];       /* hash of each output, masked like fingerprints */
} gp_member;

static int gp_member_init(const gen_space *sp, const gen_code *c, gp_member *m) {
    memset(m, 0, sizeof *m);
    m->code = *c;
    gen_decode(sp, c, &m->g);
    if (gen_graph_shapes(sp, &m->g, m->shapes) < 0)
        return -1;
    gen_eval_fp(sp, &m->g, m->shapes, NULL, m->fv);
    gen_eval_float(sp, &m->g, m->shapes, m->flv);
    for (int32_t o = 0; o < m->g.n_outputs; o++) {
        int32_t t = m->g.outputs[o];
        m->oh[o] = gen_hash_values(&m->shapes[t], m->fv[t], ops_shape_numel(&m->shapes[t])) & sp->fp_mask;
    }
    return 0;
}

static void gp_member_free(const gen_space *sp, gp_member *m) {
    gen_free_values(sp, &m->g, (void **)m->fv);
    gen_free_values(sp, &m->g, (void **)m->flv);
}

static int gp_float_close(const float *a, const float *b, int64_t n) {
    double d = 0, na = 0, nb = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], y = b[i];
        if (!isfinite(x) || !isfinite(y))
            return 0;
        d += (x - y) * (x - y);
        na += x * x;
        nb += y * y;
    }
    double ref = sqrt(na > nb ? na : nb);
    return sqrt(d) <= GEN_FLOAT_TOL * (ref > 1e-30 ? ref : 1e-30);
}

/* A bijection map from a's outputs to b's with equal hashes and shapes and values that agree on
 * floats; 0, or -1 when there is none. With truncated fingerprints several outputs may share a
 * hash, so the assignment is searched (a handful of outputs at most). */
static int gp_match_rec(const gp_member *a, const gp_member *b, int32_t o, int32_t *map, int *used) {
    if (o == a->g.n_outputs)
        return 0;
    int32_t ta = a->g.outputs[o];
    for (int32_t q = 0; q < b->g.n_outputs; q++) {
        int32_t tb = b->g.outputs[q];
        if (used[q] || a->oh[o] != b->oh[q] || !ops_shape_eq(&a->shapes[ta], &b->shapes[tb]) ||
            !gp_float_close(a->flv[ta], b->flv[tb], ops_shape_numel(&a->shapes[ta])))
            continue;
        used[q] = 1;
        map[o] = q;
        if (gp_match_rec(a, b, o + 1, map, used) == 0)
            return 0;
        used[q] = 0;
    }
    return -1;
}

static int gp_match_float(const gp_member *a, const gp_member *b, int32_t *map) {
    int used[GEN_MAX_GOUT] = {0};
    if (a->g.n_outputs != b->g.n_outputs)
        return -1;
    return gp_match_rec(a, b, 0, map, used);
}

/* =============================================================================================
 * renaming: the canonical form of a pair
 */
typedef struct {
    gen_code first, second; /* the smaller canonical code first */
} gp_key;


static void gp_used_vars(const gen_space *sp, const gen_graph *g, uint8_t *used) {
    for (int32_t k = 0; k < g->n_ops; k++)
        for (int32_t i = 0; i < g->ops[k].n_in; i++)
            if (g->ops[k].in[i] < sp->n_vars)
                used[g->ops[k].in[i]] = 1;
    if (g->n_ops == 0)
        for (int32_t o = 0; o < g->n_outputs; o++)
            used[g->outputs[o]] = 1;
}

typedef struct {
    const gen_space *sp;
    const gen_graph *a, *b;
    int32_t n_cls;
    int32_t cls[GEN_MAX_CLASSES];              /* classes with used variables */
    int32_t nu[GEN_MAX_CLASSES];               /* used variables per class */
    int32_t u[GEN_MAX_CLASSES][GEN_MAX_POOL];  /* the used variables */
    int32_t perm[GEN_MAX_POOL];
    int have;
    gp_key best;
} gp_rename_ctx;

static void gp_rename_try(gp_rename_ctx *c) {
    gen_code ca, cb;
    gen_canon(c->sp, c->a, c->perm, &ca);
    gen_canon(c->sp, c->b, c->perm, &cb);
    int swap = gp_code_cmp(&cb, &ca) < 0;
    gp_key k = {swap ? cb : ca, swap ? ca : cb};
    int better = !c->have;
    if (!better) {
        int d = gp_code_cmp(&k.first, &c->best.first);
        better = d < 0 || (d == 0 && gp_code_cmp(&k.second, &c->best.second) < 0);
    }
    if (better) {
        c->best = k;
        c->have = 1;
    }
}

/* Assign the used variables of class ci (from position pos on) to its first slots, every way. */
static void gp_rename_rec(gp_rename_ctx *c, int32_t ci, int32_t pos, uint32_t taken) {
    if (ci == c->n_cls) {
        gp_rename_try(c);
        return;
    }
    int32_t cl = c->cls[ci];
    if (pos == c->nu[ci]) {
        gp_rename_rec(c, ci + 1, 0, 0);
        return;
    }
    for (int32_t s = 0; s < c->nu[ci]; s++)
        if (!(taken & (1u << s))) {
            c->perm[c->u[ci][pos]] = c->sp->class_first[cl] + s;
            gp_rename_rec(c, ci, pos + 1, taken | (1u << s));
        }
}

static void gp_rename(const gen_space *sp, const gen_graph *a, const gen_graph *b, gp_key *out) {
    gp_rename_ctx c;
    memset(&c, 0, sizeof c);
    c.sp = sp;
    c.a = a;
    c.b = b;
    uint8_t used[GEN_MAX_POOL] = {0};
    gp_used_vars(sp, a, used);
    gp_used_vars(sp, b, used);
    for (int32_t v = 0; v < sp->n_vars; v++)
        c.perm[v] = v;
    for (int32_t cl = 0; cl < sp->n_classes; cl++) {
        int32_t n = 0;
        for (int32_t s = 0; s < sp->class_size[cl]; s++)
            if (used[sp->class_first[cl] + s])
                c.u[c.n_cls][n++] = sp->class_first[cl] + s;
        if (n) {
            c.cls[c.n_cls] = cl;
            c.nu[c.n_cls++] = n;
        }
    }
    /* unused variables go after the used ones of their class, in order, so perm is a bijection */
    for (int32_t ci = 0, cl = 0; cl < sp->n_classes; cl++) {
        int32_t n = ci < c.n_cls && c.cls[ci] == cl ? c.nu[ci++] : 0, next = n;
        for (int32_t s = 0; s < sp->class_size[cl]; s++)
            if (!used[sp->class_first[cl] + s])
                c.perm[sp->class_first[cl] + s] = sp->class_first[cl] + next++;
    }
    gp_rename_rec(&c, 0, 0, 0);
    *out = c.best;
}

/* =============================================================================================
 * common subgraph and common supergraph
 */
static int gp_values_equal(const gp_member *a, int32_t ta, uint32_t *const *va, const gp_member *b, int32_t tb,
                           uint32_t *const *vb) {
    if (!ops_shape_eq(&a->shapes[ta], &b->shapes[tb]))
        return 0;
    return !memcmp(va[ta], vb[tb], sizeof(uint32_t) * (size_t)ops_shape_numel(&a->shapes[ta]));
}

/* TASO's common-subgraph pruning: the same op on the same variables (or the same constant) in
 * both graphs; such a pair is an instance of one without that op, or not worth a rule. */
static int gp_common_subgraph(const gen_space *sp, const gp_member *a, const gp_member *b) {
    for (int32_t ka = 0; ka < a->g.n_ops; ka++) {
        int vars_only = 1;
        for (int32_t i = 0; i < a->g.ops[ka].n_in; i++)
            vars_only &= a->g.ops[ka].in[i] < sp->n_vars;
        if (!vars_only)
            continue;
        for (int32_t kb = 0; kb < b->g.n_ops; kb++) {
            int same = b->g.ops[kb].var == a->g.ops[ka].var;
            for (int32_t i = 0; i < a->g.ops[ka].n_in && same; i++)
                same = a->g.ops[ka].in[i] == b->g.ops[kb].in[i];
            if (same)
                return 1;
        }
    }
    return 0;
}

/* Both graphs end in the same op form (all its outputs are graph outputs, mapped to each other)
 * on inputs that are pairwise equal: the pair follows from the smaller pairs of those inputs. */
static int gp_common_supergraph(const gen_space *sp, const gp_member *a, const gp_member *b, const int32_t *map) {
    int32_t out_index_a[GEN_MAX_TENSORS], out_index_b[GEN_MAX_TENSORS];
    for (int32_t t = 0; t < GEN_MAX_TENSORS; t++)
        out_index_a[t] = out_index_b[t] = -1;
    for (int32_t o = 0; o < a->g.n_outputs; o++) {
        out_index_a[a->g.outputs[o]] = o;
        out_index_b[b->g.outputs[o]] = o;
    }
    for (int32_t ka = 0; ka < a->g.n_ops; ka++)
        for (int32_t kb = 0; kb < b->g.n_ops; kb++) {
            const gen_variant *va = &sp->variants[a->g.ops[ka].var];
            if (b->g.ops[kb].var != a->g.ops[ka].var)
                continue;
            int ok = 1;
            for (int32_t o = 0; o < va->n_out && ok; o++) {
                int32_t oa = out_index_a[a->g.ops[ka].first_out + o], ob = out_index_b[b->g.ops[kb].first_out + o];
                ok = oa >= 0 && ob >= 0 && map[oa] == ob;
            }
            if (!ok)
                continue;
            for (int swap = 0; swap < (va->commutative ? 2 : 1); swap++) {
                int eq = 1;
                for (int32_t i = 0; i < va->n_in && eq; i++) {
                    int32_t ib = swap ? va->n_in - 1 - i : i;
                    eq = gp_values_equal(a, a->g.ops[ka].in[i], a->fv, b, b->g.ops[kb].in[ib], b->fv);
                }
                if (eq)
                    return 1;
            }
        }
    return 0;
}

/* Ops only tensor t needs in graph g: its producer and, going up, every ancestor whose outputs
 * are all read, and only by ops already in the set (none of them a graph output). 0 for a
 * variable. */
static uint32_t gp_exclusive_cone(const gen_graph *g, int32_t t) {
    if (g->producer[t] < 0)
        return 0;
    uint32_t set = 1u << g->producer[t];
    for (int32_t k = g->producer[t] - 1; k >= 0; k--) {
        int needed_inside = 0, needed_outside = 0;
        for (int32_t o = 0; o < g->ops[k].n_out; o++) {
            int32_t u = g->ops[k].first_out + o;
            if (!g->uses[u])
                needed_outside = 1; /* a graph output */
            for (int32_t j = k + 1; j < g->n_ops; j++)
                for (int32_t i = 0; i < g->ops[j].n_in; i++)
                    if (g->ops[j].in[i] == u) {
                        if (set >> j & 1u)
                            needed_inside = 1;
                        else
                            needed_outside = 1;
                    }
        }
        if (needed_inside && !needed_outside)
            set |= 1u << k;
    }
    return set;
}

/* The canonical form of graph g with the ops of `drop` removed and tensor x made a fresh variable:
 * the kept ops in greedy-minimal order with their references, then the outputs in the order
 * given. Returns the number of words written to form. */
#define GP_FRESH 1023u
static int32_t gp_context_form(const gen_space *sp, const gen_graph *g, uint32_t drop, int32_t x,
                               const int32_t *outs, int32_t n_outs, uint32_t *form) {
    uint32_t id[GEN_MAX_TENSORS];
    for (int32_t t = 0; t < g->n_tensors; t++)
        id[t] = t < sp->n_vars ? (uint32_t)t : ~0u;
    id[x] = GP_FRESH;
    int32_t n = 0, pos = 0;
    uint32_t left = 0;
    for (int32_t k = 0; k < g->n_ops; k++)
        if (!(drop >> k & 1u))
            left |= 1u << k;
    while (left) {
        int32_t best = -1;
        uint64_t best_key = 0;
        for (int32_t k = 0; k < g->n_ops; k++) {
            if (!(left >> k & 1u))
                continue;
            const gen_variant *va = &sp->variants[g->ops[k].var];
            uint32_t r[GEN_MAX_IN] = {0, 0};
            int ready = 1;
            for (int32_t i = 0; i < va->n_in; i++) {
                r[i] = id[g->ops[k].in[i]];
                ready &= r[i] != ~0u;
            }
            if (!ready)
                continue;
            if (va->commutative && r[0] > r[1]) {
                uint32_t t = r[0];
                r[0] = r[1];
                r[1] = t;
            }
            uint64_t key = (uint64_t)g->ops[k].var << 40 | (uint64_t)r[0] << 20 | r[1];
            if (best < 0 || key < best_key) {
                best = k;
                best_key = key;
            }
        }
        if (best < 0)
            return -1; /* reads a dropped op's inner result: not a context */
        left &= ~(1u << best);
        for (int32_t o = 0; o < g->ops[best].n_out; o++)
            id[g->ops[best].first_out + o] = 2048u + (uint32_t)(pos * GEN_MAX_OUT + o);
        pos++;
        form[n++] = (uint32_t)(best_key >> 40);
        form[n++] = (uint32_t)(best_key >> 20) & 0xfffffu;
        form[n++] = (uint32_t)best_key & 0xfffffu;
    }
    form[n++] = 0xffffffffu;
    for (int32_t o = 0; o < n_outs; o++) {
        if (id[outs[o]] == ~0u)
            return -1;
        form[n++] = id[outs[o]];
    }
    return n;
}

/* A common context: the graphs are the same around one pair of equal tensors, tensor ta of a and
 * tb of b (the ops only they need removed, each made the same fresh variable), with at least one
 * op left around them: the pair follows from the smaller pair of the two sub-graphs. */
static int gp_common_context(const gen_space *sp, const gp_member *a, const gp_member *b, const int32_t *map) {
    int32_t outs_b[GEN_MAX_GOUT];
    for (int32_t o = 0; o < a->g.n_outputs; o++)
        outs_b[o] = b->g.outputs[map[o]];
    uint8_t used_a[GEN_MAX_TENSORS] = {0}, used_b[GEN_MAX_TENSORS] = {0};
    for (int32_t k = 0; k < a->g.n_ops; k++)
        for (int32_t i = 0; i < a->g.ops[k].n_in; i++)
            used_a[a->g.ops[k].in[i]] = 1;
    for (int32_t k = 0; k < b->g.n_ops; k++)
        for (int32_t i = 0; i < b->g.ops[k].n_in; i++)
            used_b[b->g.ops[k].in[i]] = 1;
    for (int32_t ta = 0; ta < a->g.n_tensors; ta++) {
        if (ta < sp->n_vars && !used_a[ta])
            continue;
        uint32_t ea = gp_exclusive_cone(&a->g, ta);
        for (int32_t tb = 0; tb < b->g.n_tensors; tb++) {
            if ((tb < sp->n_vars && !used_b[tb]) || (ta < sp->n_vars && tb == ta))
                continue;
            uint32_t eb = gp_exclusive_cone(&b->g, tb);
            int32_t left_a = a->g.n_ops - __builtin_popcount(ea), left_b = b->g.n_ops - __builtin_popcount(eb);
            if (left_a < 1 || left_a != left_b || (!ea && !eb))
                continue;
            if (!gp_values_equal(a, ta, a->fv, b, tb, b->fv))
                continue;
            uint32_t fa[4 * GEN_MAX_OPS + GEN_MAX_GOUT + 1], fb[4 * GEN_MAX_OPS + GEN_MAX_GOUT + 1];
            int32_t na = gp_context_form(sp, &a->g, ea, ta, a->g.outputs, a->g.n_outputs, fa);
            int32_t nb = gp_context_form(sp, &b->g, eb, tb, outs_b, a->g.n_outputs, fb);
            if (na > 0 && na == nb && !memcmp(fa, fb, sizeof(uint32_t) * (size_t)na))
                return 1;
        }
    }
    return 0;
}

/* =============================================================================================
 * buckets
 */
enum { GP_F_FLOAT = 1, GP_F_COMMON = 2, GP_F_SUPER = 4 };

typedef struct {
    int32_t i, j;            /* members of the bucket */
    uint8_t flags;
    gp_key canon;            /* the pair's form under renaming */
} gp_pair;

typedef struct {
    uint64_t begin, end;     /* records */
    uint64_t n_pairs;
    gp_pair *pairs;          /* the pairs that passed the float re-test */
    int32_t n_kept;
} gp_bucket;

/* The members of a bucket in order (fewer ops first, then code) fall into classes of graphs equal
 * on floats; each class is a star around its first member, as in TASO, which keeps the first
 * graph of a bucket: a pair of two later members follows from their pairs with the first. The
 * candidate pairs of a bucket are its k-1 pairs with its first member. */
typedef struct {
    int32_t n_ops;
    gen_code code;
    int32_t index;
} gp_mem_order;

static int gp_mem_order_cmp(const void *x, const void *y) {
    const gp_mem_order *a = x, *b = y;
    if (a->n_ops != b->n_ops)
        return a->n_ops < b->n_ops ? -1 : 1;
    return gp_code_cmp(&a->code, &b->code);
}

static int32_t gp_find(int32_t *parent, int32_t x) {
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* One bucket at work; positions k index its members in order (ord), ord[k].index its evaluated
 * members (m). */
typedef struct {
    const gen_space *sp;
    gp_member *m;                 /* (n_ok) the members that type-check, in record order */
    gp_mem_order *ord;            /* (n_ok) */
    int32_t *rep;                 /* (n_rep) class representatives (positions in ord) */
    int32_t *cls;                 /* (n_ok) class of each position */
    int32_t *parent;              /* (n_ok) union-find of linked positions */
    int32_t (*map)[GEN_MAX_GOUT]; /* (n_ok) rep output o -> member output */
    int32_t n_ok, n_rep;
} gp_bucket_work;

static void gp_bucket_members(gp_bucket_work *bw, const gen_records *recs, const gp_bucket *bk) {
    int32_t n = (int32_t)(bk->end - bk->begin);
    for (int32_t i = 0; i < n; i++) {
        gen_code c;
        gen_record_code(&recs->recs[bk->begin + (uint64_t)i], &c);
        if (gp_member_init(bw->sp, &c, &bw->m[bw->n_ok]) < 0)
            continue;
        bw->ord[bw->n_ok].n_ops = bw->m[bw->n_ok].g.n_ops;
        bw->ord[bw->n_ok].code = c;
        bw->ord[bw->n_ok].index = bw->n_ok;
        bw->n_ok++;
    }
    qsort(bw->ord, (size_t)bw->n_ok, sizeof *bw->ord, gp_mem_order_cmp);
}

/* Float classes, in order: each member joins the first representative it agrees with. */
static void gp_bucket_classes(gp_bucket_work *bw) {
    for (int32_t k = 0; k < bw->n_ok; k++) {
        gp_member *b = &bw->m[bw->ord[k].index];
        int32_t r = 0;
        for (; r < bw->n_rep; r++)
            if (gp_match_float(&bw->m[bw->ord[bw->rep[r]].index], b, bw->map[k]) == 0)
                break;
        if (r == bw->n_rep) {
            bw->rep[bw->n_rep++] = k;
            for (int32_t o = 0; o < b->g.n_outputs; o++)
                bw->map[k][o] = o;
        }
        bw->cls[k] = r;
        bw->parent[k] = k;
    }
}

/* Members that differ by a substitution of smaller equal sub-graphs in one common context, or
 * under one common last op, are linked: within a class, only the first member of each linked
 * component needs its pair with the representative. */
static void gp_bucket_link(gp_bucket_work *bw) {
    int32_t *parent = bw->parent;
    for (int32_t k = 0; k < bw->n_ok; k++)
        for (int32_t j = 0; j < k; j++) {
            if (bw->cls[j] != bw->cls[k] || gp_find(parent, j) == gp_find(parent, k))
                continue;
            const gp_member *a = &bw->m[bw->ord[j].index], *b = &bw->m[bw->ord[k].index];
            int32_t mjk[GEN_MAX_GOUT]; /* output of j -> output of k, through the representative */
            for (int32_t o = 0; o < a->g.n_outputs; o++)
                mjk[bw->map[j][o]] = bw->map[k][o];
            if (gp_common_supergraph(bw->sp, a, b, mjk) || gp_common_context(bw->sp, a, b, mjk))
                parent[gp_find(parent, k)] = gp_find(parent, j);
        }
}

/* The pair of each member with its class's representative, its renaming form and its flags. */
static void gp_bucket_pairs(gp_bucket_work *bw, gp_bucket *bk) {
    int32_t cap = 0;
    for (int32_t k = 0; k < bw->n_ok; k++) {
        int32_t r = bw->rep[bw->cls[k]];
        if (r == k)
            continue;
        const gp_member *a = &bw->m[bw->ord[r].index], *b = &bw->m[bw->ord[k].index];
        if (bk->n_kept == cap) {
            cap = cap ? cap * 2 : 8;
            bk->pairs = base_xrealloc(bk->pairs, sizeof(gp_pair) * (size_t)cap);
        }
        gp_pair *p = &bk->pairs[bk->n_kept++];
        memset(p, 0, sizeof *p);
        p->i = bw->ord[r].index;
        p->j = bw->ord[k].index;
        p->flags = GP_F_FLOAT;
        gp_rename(bw->sp, &a->g, &b->g, &p->canon);
        if (gp_common_subgraph(bw->sp, a, b))
            p->flags |= GP_F_COMMON;
        /* implied when an earlier member of the class is in its component */
        int32_t root = gp_find(bw->parent, k);
        for (int32_t j = 0; j < k; j++)
            if (bw->cls[j] == bw->cls[k] && gp_find(bw->parent, j) == root) {
                p->flags |= GP_F_SUPER;
                break;
            }
    }
}

static void gp_bucket_run(const gen_space *sp, const gen_records *recs, gp_bucket *bk) {
    size_t n = (size_t)(bk->end - bk->begin);
    gp_bucket_work bw = {sp,
                         base_xmalloc(sizeof(gp_member) * n),
                         base_xmalloc(sizeof(gp_mem_order) * n),
                         base_xmalloc(sizeof(int32_t) * n),
                         base_xmalloc(sizeof(int32_t) * n),
                         base_xmalloc(sizeof(int32_t) * n),
                         base_xmalloc(sizeof(int32_t[GEN_MAX_GOUT]) * n),
                         0,
                         0};
    gp_bucket_members(&bw, recs, bk);
    /* identity graphs of different variables never agree on floats, so they never pair */
    bk->n_pairs = bw.n_ok > 1 ? (uint64_t)(bw.n_ok - 1) : 0;
    gp_bucket_classes(&bw);
    gp_bucket_link(&bw);
    gp_bucket_pairs(&bw, bk);
    for (int32_t i = 0; i < bw.n_ok; i++)
        gp_member_free(sp, &bw.m[i]);
    free(bw.m);
    free(bw.ord);
    free(bw.rep);
    free(bw.cls);
    free(bw.parent);
    free(bw.map);
}

/* =============================================================================================
 * rules
 */
typedef struct {
    gen_code a, b;           /* canonical codes (renamed) */
    uint64_t fp;
} gp_survivor;

typedef struct {
    gp_key key;
    UT_hash_handle hh;
} gp_seen;

/* Specialisation: a variable read in several places whose reads can be split between it and a
 * fresh variable of its kind (an unused one of the pool) with the pair still equal: the pair is
 * an instance of that more general one, which is enumerated too. */
static int gp_specialization(const gen_space *sp, const gp_survivor *s) {
    gp_member m[2];
    if (gp_member_init(sp, &s->a, &m[0]) < 0)
        return 0;
    if (gp_member_init(sp, &s->b, &m[1]) < 0) {
        gp_member_free(sp, &m[0]);
        return 0;
    }
    int32_t map[GEN_MAX_GOUT];
    int found = 0;
    uint8_t used[GEN_MAX_POOL] = {0};
    gp_used_vars(sp, &m[0].g, used);
    gp_used_vars(sp, &m[1].g, used);
    if (gp_match_float(&m[0], &m[1], map) < 0)
        goto done;
    for (int32_t v = 0; v < sp->n_vars && !found; v++) {
        if (!used[v])
            continue;
        int32_t fresh = -1;
        for (int32_t u = 0; u < sp->n_vars && fresh < 0; u++)
            if (!used[u] && sp->vars[u].cls == sp->vars[v].cls)
                fresh = u;
        if (fresh < 0)
            continue;
        /* the reads of v: (graph, op, input), or (graph, -1, output) in a 0-op graph */
        int32_t occ_g[16], occ_k[16], occ_i[16], n_occ = 0;
        for (int32_t gi = 0; gi < 2; gi++) {
            const gen_graph *g = &m[gi].g;
            for (int32_t k = 0; k < g->n_ops; k++)
                for (int32_t i = 0; i < g->ops[k].n_in; i++)
                    if (g->ops[k].in[i] == v && n_occ < 16) {
                        occ_g[n_occ] = gi, occ_k[n_occ] = k, occ_i[n_occ++] = i;
                    }
            if (g->n_ops == 0)
                for (int32_t o = 0; o < g->n_outputs; o++)
                    if (g->outputs[o] == v && n_occ < 16) {
                        occ_g[n_occ] = gi, occ_k[n_occ] = -1, occ_i[n_occ++] = o;
                    }
        }
        if (n_occ < 2 || n_occ > 10)
            continue;
        for (uint32_t mask = 1; mask + 1 < (1u << n_occ) && !found; mask++) {
            gen_graph g2[2] = {m[0].g, m[1].g};
            for (int32_t q = 0; q < n_occ; q++)
                if (mask >> q & 1u) {
                    if (occ_k[q] >= 0)
                        g2[occ_g[q]].ops[occ_k[q]].in[occ_i[q]] = fresh;
                    else
                        g2[occ_g[q]].outputs[occ_i[q]] = fresh;
                }
            uint32_t *va[GEN_MAX_TENSORS] = {0}, *vb[GEN_MAX_TENSORS] = {0};
            gen_eval_fp(sp, &g2[0], m[0].shapes, NULL, va);
            gen_eval_fp(sp, &g2[1], m[1].shapes, NULL, vb);
            int eq = 1;
            for (int32_t o = 0; o < g2[0].n_outputs && eq; o++)
                eq = gp_values_equal(&m[0], g2[0].outputs[o], va, &m[1], g2[1].outputs[map[o]], vb);
            gen_free_values(sp, &g2[0], (void **)va);
            gen_free_values(sp, &g2[1], (void **)vb);
            found = eq;
        }
    }
done:
    gp_member_free(sp, &m[0]);
    gp_member_free(sp, &m[1]);
    return found;
}

/* Exact values of one side of r, with variables of shapes vs and values vv; a parameter named by
 * a constraint follows the first variable dim it lists. -1 when an op does not type-check. The
 * caller frees val[k][o] (NULL where not computed). */
static int gp_rule_side_eval(const rules_rule *r, rules_side side, const ops_shape *vs, uint32_t *const *vv,
                             ops_shape sh[RULES_MAX_OPS][OPS_MAX_OUTPUTS],
                             uint32_t *val[RULES_MAX_OPS][OPS_MAX_OUTPUTS]) {
    const rules_graph *g = side == RULES_SIDE_SRC ? &r->src : &r->dst;
    for (int32_t k = 0; k < g->n_ops; k++) {
        const rules_op *o = &g->ops[k];
        ops_params p = o->p;
        for (int32_t c = 0; c < r->n_constraints; c++) {
            const rules_constraint *rc = &r->constraints[c];
            if (rc->side != side || rc->op != k || rc->n_eq == 0)
                continue;
            int64_t v = vs[rc->eq[0].var].dims[rc->eq[0].dim];
            if (rc->key == PM_LIST)
                p.list[rc->list_index] = v;
            else
                p.v[rc->key] = v;
        }
        ops_shape ish[RULES_MAX_IN];
        const uint32_t *iv[RULES_MAX_IN];
        for (int32_t i = 0; i < o->n_in; i++) {
            rules_ref f = o->in[i];
            ish[i] = f.kind == RULES_REF_VAR ? vs[f.idx] : sh[f.idx][f.out];
            iv[i] = f.kind == RULES_REF_VAR ? vv[f.idx] : val[f.idx][f.out];
        }
        int32_t n_out = 0;
        if (ops_infer(o->op, &p, o->n_in, ish, &n_out, sh[k], NULL, 0) < 0)
            return -1;
        for (int32_t q = 0; q < n_out; q++) {
            int64_t ne = ops_shape_numel(&sh[k][q]);
            if (ne < 0 || ne > (INT64_C(1) << 24))
                return -1;
            val[k][q] = base_xmalloc(sizeof(uint32_t) * (size_t)ne);
        }
        ops_sig sig = {o->op, &p, o->n_in, n_out, ish, sh[k]};
        ops_table[o->op].fp(&sig, iv, val[k]);
    }
    return 0;
}

static const uint32_t *gp_ref_value(rules_ref f, uint32_t *const *vv, uint32_t *val[RULES_MAX_OPS][OPS_MAX_OUTPUTS],
                                    const ops_shape *vs, ops_shape sh[RULES_MAX_OPS][OPS_MAX_OUTPUTS],
                                    const ops_shape **shape) {
    *shape = f.kind == RULES_REF_VAR ? &vs[f.idx] : &sh[f.idx][f.out];
    return f.kind == RULES_REF_VAR ? vv[f.idx] : val[f.idx][f.out];
}

/* Evaluate both sides of r with variables of shapes vs (values from seed st): 1 when both
 * type-check and every mapped output pair is equal, 0 when they differ, -1 when a side does not
 * type-check. */
static int gp_rule_holds_at(const rules_rule *r, const ops_shape *vs, uint64_t st) {
    uint32_t *vv[RULES_MAX_VARS];
    for (int32_t v = 0; v < r->n_vars; v++) {
        int64_t ne = ops_shape_numel(&vs[v]);
        vv[v] = base_xmalloc(sizeof(uint32_t) * (size_t)ne);
        for (int64_t i = 0; i < ne; i++)
            vv[v][i] = (uint32_t)gen_mix64(st + (uint64_t)v * 0x100000001b3ull + (uint64_t)i * 0x9e3779b97f4a7c15ull);
    }
    ops_shape sa[RULES_MAX_OPS][OPS_MAX_OUTPUTS], sb[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    uint32_t *va[RULES_MAX_OPS][OPS_MAX_OUTPUTS] = {{0}}, *vb[RULES_MAX_OPS][OPS_MAX_OUTPUTS] = {{0}};
    int holds = -1;
    if (gp_rule_side_eval(r, RULES_SIDE_SRC, vs, vv, sa, va) == 0 &&
        gp_rule_side_eval(r, RULES_SIDE_DST, vs, vv, sb, vb) == 0) {
        holds = 1;
        for (int32_t o = 0; o < r->n_outputs && holds; o++) {
            const ops_shape *s1, *s2;
            const uint32_t *x1 = gp_ref_value(r->outputs[o].src, vv, va, vs, sa, &s1);
            const uint32_t *x2 = gp_ref_value(r->outputs[o].dst, vv, vb, vs, sb, &s2);
            holds = ops_shape_eq(s1, s2) && memcmp(x1, x2, sizeof(uint32_t) * (size_t)ops_shape_numel(s1)) == 0;
        }
    }
    for (int32_t k = 0; k < RULES_MAX_OPS; k++)
        for (int32_t q = 0; q < OPS_MAX_OUTPUTS; q++) {
            free(va[k][q]);
            free(vb[k][q]);
        }
    for (int32_t v = 0; v < r->n_vars; v++)
        free(vv[v]);
    return holds;
}

/* The generality test (see the file comment). sym[v][d]: the symbol of dim d of variable v.
 * Returns 1 when the rule is an accident of the pool's sizes, else 0 with the requirements added. */
static int gp_generalize(const gen_space *sp, rules_rule *r, int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS]) {
    int required[GEN_SYM_COUNT] = {0};
    for (int32_t y = 0; y < GEN_SYM_COUNT; y++) {
        int used = 0;
        for (int32_t v = 0; v < r->n_vars; v++)
            for (int32_t d = 0; d < r->vars[v].shape.rank; d++)
                used |= sym[v][d] == y;
        if (!used)
            continue;
        ops_shape vs[RULES_MAX_VARS];
        for (int32_t v = 0; v < r->n_vars; v++) {
            vs[v] = r->vars[v].shape;
            for (int32_t d = 0; d < vs[v].rank; d++)
                if (sym[v][d] == y)
                    vs[v].dims[d] = gen_sym_alt(y);
        }
        int holds = gp_rule_holds_at(r, vs, sp->seed ^ 0x67656e6572616cull ^ ((uint64_t)y << 40));
        if (holds == 0)
            return 1;
        if (holds < 0)
            required[y] = 1;
    }
    for (int32_t v = 0; v < r->n_vars; v++)
        for (int32_t d = 0; d < r->vars[v].shape.rank; d++)
            if (required[sym[v][d]] && r->n_requires < RULES_MAX_REQUIRES) {
                rules_require *q = &r->requires[r->n_requires++];
                q->var = v;
                q->dim = d;
                q->value = r->vars[v].shape.dims[d];
            }
    return 0;
}

/* r with the two-way equal split op k of side sd cut at the widths of the concat op j of side cs
 * (both inputs variables, concat axis c): sizes [dim c of input 0, dim c of input 1], each tied
 * to its dim by a constraint. 0, or -1 when the concat does not have that form or no room. */
static int gp_sized_split(const rules_rule *r, rules_side sd, int32_t k, rules_side cs, int32_t j, rules_rule *out) {
    const rules_op *cat = &(cs == RULES_SIDE_SRC ? &r->src : &r->dst)->ops[j];
    if (cat->op != OP_CONCAT || cat->n_in != 2 || cat->in[0].kind != RULES_REF_VAR ||
        cat->in[1].kind != RULES_REF_VAR || cat->in[0].idx == cat->in[1].idx ||
        r->n_constraints + 2 > RULES_MAX_CONSTRAINTS)
        return -1;
    int64_t c = cat->p.v[PM_AXIS];
    *out = *r;
    rules_op *sp = &(sd == RULES_SIDE_SRC ? &out->src : &out->dst)->ops[k];
    sp->p.n_list = 2;
    for (int32_t i = 0; i < 2; i++) {
        int32_t u = cat->in[i].idx;
        if (c < 0 || c >= r->vars[u].shape.rank)
            return -1;
        sp->p.list[i] = r->vars[u].shape.dims[c];
        rules_constraint *q = &out->constraints[out->n_constraints++];
        memset(q, 0, sizeof *q);
        q->side = sd;
        q->op = k;
        q->key = PM_LIST;
        q->list_index = i;
        q->value = sp->p.list[i];
        q->n_eq = 1;
        q->eq[0].var = u;
        q->eq[0].dim = (int32_t)c;
    }
    return 0;
}

/* 1 when the sized rule t holds at the pool's shapes and with each of the split's two tied dims
 * alone taking another value (unequal widths). */
static int gp_sized_split_holds(const gen_space *sp, const rules_rule *t, int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS]) {
    const rules_constraint *q = &t->constraints[t->n_constraints - 2];
    for (int32_t i = -1; i < 2; i++) {
        ops_shape vs[RULES_MAX_VARS];
        for (int32_t v = 0; v < t->n_vars; v++)
            vs[v] = t->vars[v].shape;
        if (i >= 0) {
            int32_t u = q[i].eq[0].var, d = q[i].eq[0].dim;
            vs[u].dims[d] = gen_sym_alt(sym[u][d]);
            if (vs[u].dims[d] == t->vars[u].shape.dims[d])
                return 0;
        }
        if (gp_rule_holds_at(t, vs, sp->seed ^ 0x73697a6573ull ^ ((uint64_t)(i + 1) << 40)) != 1)
            return 0;
    }
    return 1;
}

/* Split sizes from the concat the split undoes (TASO: a split inverts a concat, its sizes are the
 * concat inputs' widths). An equal two-way split only matches and only builds halves; tied to
 * the widths of a concat of two variables (on either side) it matches and builds unequal parts,
 * so a merged pair merges again with a sibling of another width. Each split takes the first
 * concat for which the rule still holds with either width changed alone; the verifier proves
 * the sized rule with every dim a free symbol. */
static void gp_split_sizes(const gen_space *sp, rules_rule *r, int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS]) {
    for (int sd = 0; sd < RULES_SIDE_COUNT; sd++) {
        const rules_graph *g = sd == RULES_SIDE_SRC ? &r->src : &r->dst;
        for (int32_t k = 0; k < g->n_ops; k++) {
            const rules_op *o = &g->ops[k];
            if (o->op != OP_SPLIT || o->p.n_list != 0 || o->p.v[PM_PARTS] != 2)
                continue;
            int done = 0;
            for (int cs = 0; cs < RULES_SIDE_COUNT && !done; cs++) {
                const rules_graph *cg = cs == RULES_SIDE_SRC ? &r->src : &r->dst;
                for (int32_t j = 0; j < cg->n_ops && !done; j++) {
                    rules_rule t;
                    if (gp_sized_split(r, (rules_side)sd, k, (rules_side)cs, j, &t) == 0 &&
                        gp_sized_split_holds(sp, &t, sym)) {
                        *r = t;
                        done = 1;
                    }
                }
            }
        }
    }
}

/* The rule's variables: those the two sides use, in pool order. vmap[v]: pool variable v's index
 * in the rule (-1: unused); sym[i]: the symbols of rule variable i's dims. */
static int gp_rule_vars(const gen_space *sp, const gp_member *src, const gp_member *dst, rules_rule *r,
                        int32_t *vmap, int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS], char *err, size_t errlen) {
    uint8_t used[GEN_MAX_POOL] = {0};
    gp_used_vars(sp, &src->g, used);
    gp_used_vars(sp, &dst->g, used);
    for (int32_t v = 0; v < sp->n_vars; v++) {
        vmap[v] = -1;
        if (!used[v])
            continue;
        if (r->n_vars == RULES_MAX_VARS)
            return base_fail(err, errlen, "internal: too many variables in a rule");
        vmap[v] = r->n_vars;
        memcpy(sym[r->n_vars], sp->vars[v].sym, sizeof sym[0]);
        memcpy(r->vars[r->n_vars].name, sp->vars[v].name, RULES_NAME_LEN);
        r->vars[r->n_vars++].shape = sp->vars[v].shape;
    }
    return 0;
}

/* Tensor t of graph g as a rule reference. */
static rules_ref gp_rule_ref(const gen_space *sp, const gen_graph *g, const int32_t *vmap, int32_t t) {
    if (t < sp->n_vars)
        return (rules_ref){RULES_REF_VAR, vmap[t], 0};
    return (rules_ref){RULES_REF_OP, g->producer[t], t - g->ops[g->producer[t]].first_out};
}

/* The variable dims a drawn parameter value equals: those of one symbol, sizes first, kernel
 * sizes only if nothing else. */
static void gp_constraint_dims(const rules_rule *r, int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS], rules_constraint *c) {
    int32_t want = -1;
    for (int pass = 0; pass < 2 && want < 0; pass++)
        for (int32_t v = 0; v < r->n_vars && want < 0; v++)
            for (int32_t d = 0; d < r->vars[v].shape.rank && want < 0; d++)
                if (r->vars[v].shape.dims[d] == c->value && gen_sym_is_kernel(sym[v][d]) == pass)
                    want = sym[v][d];
    for (int32_t v = 0; v < r->n_vars; v++)
        for (int32_t d = 0; d < r->vars[v].shape.rank && c->n_eq < RULES_MAX_EQ; d++)
            if (r->vars[v].shape.dims[d] == c->value && sym[v][d] == want) {
                c->eq[c->n_eq].var = v;
                c->eq[c->n_eq++].dim = d;
            }
}

/* One constraint per drawn parameter value of op k of side sd (0: src), tied to the variable dims
 * it stands for. */
static int gp_rule_constraints(const gen_variant *va, int sd, int32_t k, rules_rule *r,
                               int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS], char *err, size_t errlen) {
    for (int key = 0; key < PM_COUNT; key++) {
        if (!(va->drawn_keys & (1u << key)))
            continue;
        int32_t n_vals = key == PM_LIST ? va->p.n_list : 1;
        for (int32_t li = 0; li < n_vals; li++) {
            if (r->n_constraints == RULES_MAX_CONSTRAINTS)
                return base_fail(err, errlen, "internal: too many constraints in a rule");
            rules_constraint *c = &r->constraints[r->n_constraints++];
            c->side = sd ? RULES_SIDE_DST : RULES_SIDE_SRC;
            c->op = k;
            c->key = (ops_param_key)key;
            c->list_index = key == PM_LIST ? li : -1;
            c->value = key == PM_LIST ? va->p.list[li] : va->p.v[key];
            gp_constraint_dims(r, sym, c);
        }
    }
    return 0;
}

/* The ops of both sides, with the constraints of their drawn sizes. */
static int gp_rule_sides(const gen_space *sp, const gp_member *src, const gp_member *dst, const int32_t *vmap,
                         rules_rule *r, int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS], char *err, size_t errlen) {
    const gp_member *side[2] = {src, dst};
    rules_graph *rg[2] = {&r->src, &r->dst};
    for (int sd = 0; sd < 2; sd++) {
        const gen_graph *g = &side[sd]->g;
        rg[sd]->n_ops = g->n_ops;
        for (int32_t k = 0; k < g->n_ops; k++) {
            const gen_variant *va = &sp->variants[g->ops[k].var];
            rules_op *o = &rg[sd]->ops[k];
            o->op = va->op;
            o->p = va->p;
            o->n_in = va->n_in;
            for (int32_t i = 0; i < va->n_in; i++)
                o->in[i] = gp_rule_ref(sp, g, vmap, g->ops[k].in[i]);
            if (gp_rule_constraints(va, sd, k, r, sym, err, errlen) < 0)
                return -1;
        }
    }
    return 0;
}

/* The outputs, matched on float values (the pair passed the float re-test). */
static int gp_rule_outputs(const gen_space *sp, const gp_member *src, const gp_member *dst, const int32_t *vmap,
                           rules_rule *r, char *err, size_t errlen) {
    if (src->g.n_outputs != dst->g.n_outputs || src->g.n_outputs > RULES_MAX_OUTPUTS)
        return base_fail(err, errlen, "internal: rule sides have %d and %d outputs", (int)src->g.n_outputs,
                         (int)dst->g.n_outputs);
    int taken[GEN_MAX_GOUT] = {0};
    for (int32_t o = 0; o < src->g.n_outputs; o++) {
        int32_t ts = src->g.outputs[o], q = 0;
        for (; q < dst->g.n_outputs; q++) {
            int32_t td = dst->g.outputs[q];
            if (!taken[q] && ops_shape_eq(&src->shapes[ts], &dst->shapes[td]) &&
                gp_float_close(src->flv[ts], dst->flv[td], ops_shape_numel(&src->shapes[ts])))
                break;
        }
        if (q == dst->g.n_outputs)
            return base_fail(err, errlen, "internal: rule outputs do not match");
        taken[q] = 1;
        r->outputs[o].src = gp_rule_ref(sp, &src->g, vmap, ts);
        r->outputs[o].dst = gp_rule_ref(sp, &dst->g, vmap, dst->g.outputs[q]);
    }
    r->n_outputs = src->g.n_outputs;
    return 0;
}

/* Build one rule from two equivalent canonical graphs: 0, 1 when the generality test drops it,
 * -1 on an internal error. */
static int gp_make_rule(const gen_space *sp, const gp_survivor *s, rules_rule *r, char *err, size_t errlen) {
    gp_member ma, mb;
    if (gp_member_init(sp, &s->a, &ma) < 0)
        return base_fail(err, errlen, "internal: a generated graph does not type-check");
    if (gp_member_init(sp, &s->b, &mb) < 0) {
        gp_member_free(sp, &ma);
        return base_fail(err, errlen, "internal: a generated graph does not type-check");
    }
    /* src: more ops; equal: the larger code */
    int a_src = ma.g.n_ops != mb.g.n_ops ? ma.g.n_ops > mb.g.n_ops : gp_code_cmp(&s->a, &s->b) > 0;
    const gp_member *src = a_src ? &ma : &mb, *dst = a_src ? &mb : &ma;
    memset(r, 0, sizeof *r);
    int rc = -1;
    int32_t vmap[GEN_MAX_POOL];
    int8_t sym[RULES_MAX_VARS][OPS_MAX_DIMS];
    if (gp_rule_vars(sp, src, dst, r, vmap, sym, err, errlen) == 0 &&
        gp_rule_sides(sp, src, dst, vmap, r, sym, err, errlen) == 0 &&
        gp_rule_outputs(sp, src, dst, vmap, r, err, errlen) == 0) {
        r->fingerprint = s->fp;
        r->max_ops = sp->max_ops;
        char m[256];
        if (rules_rule_check(r, m, sizeof m) < 0)
            base_fail(err, errlen, "internal: generated rule is invalid: %s", m);
        else if ((rc = gp_generalize(sp, r, sym)) == 0)
            gp_split_sizes(sp, r, sym);
    }
    gp_member_free(sp, &ma);
    gp_member_free(sp, &mb);
    return rc;
}

typedef struct {
    int32_t ops;             /* src + dst */
    int32_t src_ops;
    gen_code a, b;           /* src and dst codes, for a stable order */
    int32_t index;
} gp_order;

static int gp_order_cmp(const void *x, const void *y) {
    const gp_order *a = x, *b = y;
    if (a->ops != b->ops)
        return a->ops < b->ops ? -1 : 1;
    if (a->src_ops != b->src_ops)
        return a->src_ops < b->src_ops ? -1 : 1;
    int d = gp_code_cmp(&a->a, &b->a);
    if (d)
        return d;
    d = gp_code_cmp(&a->b, &b->b);
    return d ? d : (a->index > b->index) - (a->index < b->index);
}

/* =============================================================================================
 * the pipeline: gen_run walks a table of stages over one run state
 */
typedef struct {
    const gen_config *cfg;
    char *err;
    size_t errlen;
    double t0;                /* the run's start (base_now): progress reports time from here */
    int threads;
    const char *stage;        /* the running stage's name */
    gen_stats st;
    gen_space sp;
    gen_records recs;         /* every graph; after "buckets" only those of buckets; freed by "merge" */
    gp_bucket *bk;            /* (n_buckets) fingerprints of two or more graphs, in order */
    uint64_t n_buckets;
    gp_survivor *surv;        /* (n_surv) pairs left by the supergraph pruning, in merge order */
    uint64_t n_surv, cap_surv;
    int *made;                /* (n_surv) 0: a rule in built; 1: dropped as an accident of sizes;
                                 2: an instance of a more general pair */
    rules_rule *built;        /* (n_surv) */
    gp_order *ord;            /* (n_ord) the rules, in output order */
    uint64_t n_ord;
    rules_set *rs;            /* the result */
} gp_run;

static void gp_report(const gen_config *cfg, const char *phase, uint64_t done, uint64_t total, uint64_t graphs,
                      double t0, double *last, int force) {
    if (!cfg->progress)
        return;
    double now = base_now();
    if (!force && now - *last < 0.25)
        return;
    *last = now;
    gen_progress p = {phase, done, total, graphs, now - t0};
    cfg->progress(cfg->progress_ctx, &p);
}

static int gp_stage_space(gp_run *r) { return gen_space_init(&r->sp, r->cfg, r->err, r->errlen); }

/* Every graph (progress phases "values", then "enumerate"), then the 0-op identity graphs: one
 * variable, or two. */
static int gp_stage_enumerate(gp_run *r) {
    const gen_space *sp = &r->sp;
    uint64_t n_ident = (uint64_t)sp->n_vars + (uint64_t)sp->n_vars * (uint64_t)(sp->n_vars - 1) / 2;
    if (gen_enumerate(sp, r->cfg, n_ident, &r->recs, r->t0, r->err, r->errlen) < 0)
        return base_fail(r->err, r->errlen, "out of memory while enumerating");
    r->st.graphs = r->recs.n;
    for (int32_t v = 0; v < sp->n_vars; v++)
        for (int32_t u = v; u < sp->n_vars; u++) {
            uint64_t h[2] = {sp->vars[v].hash, sp->vars[u].hash};
            gen_code c;
            memset(&c, 0, sizeof c);
            c.w[0] = ((GEN_IDENT_VAR + 1u) << 20) | ((uint32_t)v << 14) | ((uint32_t)(u == v ? GEN_NOREF : u) << 8);
            r->recs.recs[r->recs.n++] = gen_record_make(gen_hash_outputs(h, u == v ? 1 : 2) & sp->fp_mask, &c);
        }
    return 0;
}

static int gp_stage_sort(gp_run *r) {
    gp_sort(&r->recs, r->cfg->fp_bits ? r->cfg->fp_bits : 64, r->threads);
    return 0;
}

static int32_t gp_record_ops(const gen_record *rec) {
    gen_code c;
    gen_record_code(rec, &c);
    return gp_code_ops(&c);
}

/* Keep only the records of buckets: most graphs have a fingerprint of their own. */
static void gp_keep_bucket_records(gp_run *r) {
    uint64_t kept = 0;
    for (uint64_t b = 0; b < r->n_buckets; b++)
        kept += r->bk[b].end - r->bk[b].begin;
    gen_record *small = malloc((size_t)(kept ? kept : 1) * sizeof *small);
    if (!small)
        return; /* keep them all */
    uint64_t at = 0;
    for (uint64_t b = 0; b < r->n_buckets; b++) {
        uint64_t len = r->bk[b].end - r->bk[b].begin;
        memcpy(small + at, r->recs.recs + r->bk[b].begin, (size_t)len * sizeof *small);
        r->bk[b].begin = at;
        r->bk[b].end = at + len;
        at += len;
    }
    free(r->recs.recs);
    r->recs.recs = small;
    r->recs.n = r->recs.cap = kept;
}

/* Distinct fingerprints of enumerated graphs (0-op graphs alone do not count one); buckets: those
 * of two or more graphs. */
static int gp_stage_buckets(gp_run *r) {
    const gen_records *recs = &r->recs;
    uint64_t cap = 0;
    for (uint64_t b = 0; b < recs->n;) {
        uint64_t e = b + 1, fp = gen_record_fp(&recs->recs[b]);
        int real = gp_record_ops(&recs->recs[b]) > 0;
        while (e < recs->n && gen_record_fp(&recs->recs[e]) == fp)
            real |= gp_record_ops(&recs->recs[e++]) > 0;
        r->st.fingerprints += (uint64_t)real;
        if (e - b > 1 && real) {
            if (r->n_buckets == cap) {
                cap = cap ? cap * 2 : 1024;
                gp_bucket *nb = realloc(r->bk, (size_t)cap * sizeof *nb);
                if (!nb)
                    return base_fail(r->err, r->errlen, "out of memory");
                r->bk = nb;
            }
            gp_bucket *k = &r->bk[r->n_buckets++];
            memset(k, 0, sizeof *k);
            k->begin = b;
            k->end = e;
            for (uint64_t i = b; i < e; i++)
                r->st.multi_graphs += gp_record_ops(&recs->recs[i]) > 0;
        }
        b = e;
    }
    gp_keep_bucket_records(r);
    return 0;
}

/* Each bucket's float classes, candidate pairs and pruning marks; buckets in parallel. */
static int gp_stage_pairs(gp_run *r) {
    uint64_t n = r->n_buckets, done = 0;
    double last = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(r->threads)
    for (uint64_t b = 0; b < n; b++) {
        gp_bucket_run(&r->sp, &r->recs, &r->bk[b]);
#pragma omp atomic
        done++;
        if (r->cfg->progress) {
#pragma omp critical(gen_pairs_progress)
            gp_report(r->cfg, r->stage, done, n, r->st.graphs, r->t0, &last, 0);
        }
    }
    gp_report(r->cfg, r->stage, n, n, r->st.graphs, r->t0, &last, 1);
    return 0;
}

/* Room for one more survivor; NULL when out of memory. */
static gp_survivor *gp_survivor_add(gp_run *r) {
    if (r->n_surv == r->cap_surv) {
        uint64_t cap = r->cap_surv ? r->cap_surv * 2 : 1024;
        gp_survivor *ns = realloc(r->surv, (size_t)cap * sizeof *ns);
        if (!ns)
            return NULL;
        r->surv = ns;
        r->cap_surv = cap;
    }
    return &r->surv[r->n_surv++];
}

/* Commutativity, which canonical input order folds into the enumeration: one pair per commutative
 * op form, through every pruning stage up to specialisation. */
static int gp_merge_commutative(gp_run *r) {
    const gen_space *sp = &r->sp;
    for (int32_t v = 0; v < sp->n_variants; v++) {
        const gen_variant *va = &sp->variants[v];
        if (!va->commutative)
            continue;
        r->st.pairs++;
        r->st.after_float++;
        r->st.after_rename++;
        r->st.after_common++;
        r->st.after_super++;
        gp_survivor *s = gp_survivor_add(r);
        if (!s)
            return -1;
        memset(s, 0, sizeof *s);
        /* op(a, b) and op(b, a): the second is not in canonical order on purpose */
        s->a.w[0] = GEN_WORD(v, va->comm_pair[0], va->comm_pair[1]);
        s->b.w[0] = GEN_WORD(v, va->comm_pair[1], va->comm_pair[0]);
        gp_member m;
        if (gp_member_init(sp, &s->a, &m) == 0) {
            s->fp = gen_hash_outputs(m.oh, m.g.n_outputs) & sp->fp_mask;
            gp_member_free(sp, &m);
        }
    }
    return 0;
}

/* The buckets' pairs in bucket order through the renaming (one pair per form, in seen), common
 * subgraph and supergraph stages. */
static int gp_merge_buckets(gp_run *r, gp_seen **seen) {
    for (uint64_t b = 0; b < r->n_buckets; b++) {
        r->st.pairs += r->bk[b].n_pairs;
        for (int32_t k = 0; k < r->bk[b].n_kept; k++) {
            gp_pair *p = &r->bk[b].pairs[k];
            r->st.after_float++;
            gp_seen *f;
            HASH_FIND(hh, *seen, &p->canon, sizeof(gp_key), f);
            if (f)
                continue;
            f = malloc(sizeof *f);
            if (!f)
                return -1;
            f->key = p->canon;
            HASH_ADD(hh, *seen, key, sizeof(gp_key), f);
            r->st.after_rename++;
            if (p->flags & GP_F_COMMON)
                continue;
            r->st.after_common++;
            if (p->flags & GP_F_SUPER)
                continue;
            r->st.after_super++;
            gp_survivor *s = gp_survivor_add(r);
            if (!s)
                return -1;
            s->a = p->canon.first;
            s->b = p->canon.second;
            s->fp = gen_record_fp(&r->recs.recs[r->bk[b].begin]);
        }
    }
    return 0;
}

static void gp_free_buckets(gp_run *r) {
    for (uint64_t b = 0; b < r->n_buckets; b++)
        free(r->bk[b].pairs);
    free(r->bk);
    r->bk = NULL;
    r->n_buckets = 0;
    free(r->recs.recs);
    memset(&r->recs, 0, sizeof r->recs);
}

/* Merge in bucket order, commutativity pairs first; the buckets and records are done with. */
static int gp_stage_merge(gp_run *r) {
    gp_seen *seen = NULL, *f, *tmp;
    int rc = gp_merge_commutative(r);
    if (rc == 0)
        rc = gp_merge_buckets(r, &seen);
    HASH_ITER(hh, seen, f, tmp) {
        HASH_DEL(seen, f);
        free(f);
    }
    gp_free_buckets(r);
    return rc < 0 ? base_fail(r->err, r->errlen, "out of memory while pairing") : 0;
}

/* Each survivor, in parallel: an instance of a more general pair (specialisation), or a rule,
 * which the generality test may drop. The first internal error fails the run. */
static int gp_stage_rules(gp_run *r) {
    uint64_t n = r->n_surv;
    r->made = calloc((size_t)(n ? n : 1), sizeof *r->made);
    r->built = calloc((size_t)(n ? n : 1), sizeof *r->built);
    if (!r->made || !r->built)
        return base_fail(r->err, r->errlen, "out of memory");
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(r->threads)
    for (uint64_t i = 0; i < n; i++) {
        char e[256];
        if (gp_specialization(&r->sp, &r->surv[i])) {
            r->made[i] = 2;
            continue;
        }
        r->made[i] = gp_make_rule(&r->sp, &r->surv[i], &r->built[i], e, sizeof e);
        if (r->made[i] < 0) {
#pragma omp critical(gen_rule_error)
            if (!failed) {
                failed = 1;
                base_fail(r->err, r->errlen, "%s", e);
            }
        }
    }
    if (failed)
        return -1;
    r->st.after_special = n;
    for (uint64_t i = 0; i < n; i++)
        r->st.after_special -= r->made[i] == 2;
    return 0;
}

/* The rules in a stable order, fewer ops first, into the result. */
static int gp_stage_rule_set(gp_run *r) {
    r->ord = calloc((size_t)(r->n_surv ? r->n_surv : 1), sizeof *r->ord);
    if (!r->ord)
        return base_fail(r->err, r->errlen, "out of memory");
    for (uint64_t i = 0; i < r->n_surv; i++) {
        if (r->made[i] != 0)
            continue; /* an instance of a more general pair, or an accident of the pool's sizes */
        const gp_survivor *s = &r->surv[i];
        int32_t na = gp_code_ops(&s->a), nb = gp_code_ops(&s->b);
        int a_src = na != nb ? na > nb : gp_code_cmp(&s->a, &s->b) > 0;
        gp_order *od = &r->ord[r->n_ord++];
        od->ops = na + nb;
        od->src_ops = a_src ? na : nb;
        od->a = a_src ? s->a : s->b;
        od->b = a_src ? s->b : s->a;
        od->index = (int32_t)i;
    }
    r->st.after_general = r->n_ord;
    qsort(r->ord, (size_t)r->n_ord, sizeof *r->ord, gp_order_cmp);
    r->rs = rules_set_new();
    for (int op = 0; op < OP_COUNT; op++)
        r->rs->op_set[op] = r->sp.op_set[op];
    r->rs->max_ops = r->sp.max_ops;
    for (uint64_t i = 0; i < r->n_ord; i++) {
        rules_rule *rule = &r->built[r->ord[i].index];
        char id[32];
        snprintf(id, sizeof id, "g%d_%05llu", (int)r->sp.max_ops, (unsigned long long)(i + 1));
        rule->id = id;
        rule->stages = GP_STAGES;
        int32_t added = rules_set_add(r->rs, rule);
        rule->id = rule->stages = NULL;
        if (added < 0)
            return base_fail(r->err, r->errlen, "out of memory");
    }
    return 0;
}

/* The stages in order; each one's time counts in one of gen_stats's times. */
typedef enum { GP_T_ENUM, GP_T_SORT, GP_T_PAIRS, GP_T_COUNT } gp_timer;
static const struct {
    const char *name;         /* also the progress phase of stages that report their own */
    int (*run)(gp_run *r);    /* 0, or -1 with the message in r->err */
    gp_timer timer;
} gp_stages[] = {
    {"space", gp_stage_space, GP_T_ENUM},
    {"enumerate", gp_stage_enumerate, GP_T_ENUM},
    {"sort", gp_stage_sort, GP_T_SORT},
    {"buckets", gp_stage_buckets, GP_T_SORT},
    {"pairs", gp_stage_pairs, GP_T_PAIRS},
    {"merge", gp_stage_merge, GP_T_PAIRS},
    {"rules", gp_stage_rules, GP_T_PAIRS},
    {"rule_set", gp_stage_rule_set, GP_T_PAIRS},
};

/* The stage counts, into the rule set's manifest. */
static void gp_manifest(rules_set *rs, const gen_stats *st) {
    rules_set_count(rs, "graphs", st->graphs);
    rules_set_count(rs, "fingerprints", st->fingerprints);
    rules_set_count(rs, "pairs", st->pairs);
    rules_set_count(rs, "float_retest", st->after_float);
    rules_set_count(rs, "renaming", st->after_rename);
    rules_set_count(rs, "common_subgraph", st->after_common);
    rules_set_count(rs, "supergraph", st->after_super);
    rules_set_count(rs, "specialization", st->after_special);
    rules_set_count(rs, "generality", st->after_general);
    rules_set_count(rs, "rules", (uint64_t)rs->n_rules);
}

/* Everything a run holds, whether it got to the end or not. */
static void gp_run_free(gp_run *r) {
    gen_space_free(&r->sp);
    gp_free_buckets(r);
    free(r->surv);
    free(r->made);
    free(r->built);
    free(r->ord);
    rules_set_free(r->rs);
    memset(r, 0, sizeof *r);
}

int gen_run(const gen_config *cfg, rules_set **out, gen_stats *st_out, char *err, size_t errlen) {
    gp_run r;
    memset(&r, 0, sizeof r);
    r.t0 = base_now();
    r.cfg = cfg;
    r.err = err;
    r.errlen = errlen;
    r.threads = cfg->threads > 0 ? cfg->threads : omp_get_max_threads();
    *out = NULL;
    double *timer[GP_T_COUNT] = {&r.st.t_enum_s, &r.st.t_sort_s, &r.st.t_pairs_s};
    int rc = 0;
    for (size_t i = 0; i < sizeof gp_stages / sizeof gp_stages[0] && rc == 0; i++) {
        double t = base_now();
        r.stage = gp_stages[i].name;
        rc = gp_stages[i].run(&r);
        *timer[gp_stages[i].timer] += base_now() - t;
    }
    if (rc == 0) {
        r.st.t_total_s = base_now() - r.t0;
        gp_manifest(r.rs, &r.st);
        *out = r.rs;
        r.rs = NULL;
        if (st_out)
            *st_out = r.st;
    }
    gp_run_free(&r);
    return rc < 0 ? -1 : 0;
}
