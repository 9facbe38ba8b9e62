/* gen_enum.c: depth-first enumeration of every graph of up to max_ops ops over the pool.
 *
 * A graph grows one op at a time over the tensors it has (pool variables and earlier outputs).
 * Each DAG is produced once: its op sequence must be the greedy-minimal topological order (an op
 * placed at step s has a smaller word than every later op already computable at s); every prefix
 * of such a sequence has the property too, so a sequence that lacks it is cut with its subtree.
 * Also cut (the generation policies, rules/README.md): an op equal to an earlier one, commutative
 * inputs out of order or of different shapes, one tensor twice for an op without weight inputs,
 * weights in data inputs and data in weight inputs, weights pooled or cut or joined along their
 * window axes, weight transforms of anything but pool variables, more dangling constants or
 * skipped variables than the remaining ops can use. A split may cut a pool variable: with the
 * concat of its parts that gives the identity rules whose other side is the bare variable
 * (concat(split(x)) = x), which the merge rules need to drop their split and concat again.
 * An op whose output repeats an existing tensor ends its branch (the graph is recorded: it is one
 * side of a rule against a smaller graph). A first pass over graphs one op smaller fills a table
 * of the fewest ops computing each tensor value; in the graph pass a tensor computed more dearly
 * by ops nothing else needs blocks its graph until an extension reads one of those ops' results.
 * A graph is recorded when every output depends on a variable, it reads a prefix of each kind's
 * variables (one graph per renaming class, as far as pairs are concerned), and it does not mix
 * copies of variables with computed outputs; its record is the hash of the multiset of its output
 * hashes and its code. Work is split over threads by the first op; records are sorted later, so
 * the result does not depend on the schedule.
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gen_impl.h"

#define GW_SHAPES 128                    /* interned shapes per walker (memoised inference) */
#define GW_FAIL UINT64_MAX
#define GW_REPORT_EVERY (1u << 16)       /* graphs between progress checks */
#define GW_BLOCK (1u << 20)              /* records per storage block */

/* Records in fixed blocks: no reallocation copies, little slack, freed block by block when merged. */
typedef struct {
    gen_record **blocks;
    uint64_t n_blocks, cap_blocks;
    uint32_t fill;                       /* records in the last block */
    uint64_t n;
} gw_store;

typedef struct {
    int16_t shape;                       /* interned shape id, -1 if not interned */
    uint8_t role, depvar;
    int8_t producer;                     /* op index, -1 for pool variables */
    uint8_t cone;                        /* bit k: op k is this tensor's producer or one of its ancestors */
    uint8_t copy;                        /* equal to a pool variable */
    uint8_t uses;
    int64_t numel;
    uint64_t hash;
    const uint32_t *val;
    ops_shape full;                      /* the shape itself */
} gw_tensor;

/* Tensor values and the fewest ops any enumerated graph needs to compute each: an open-addressing
 * table keyed by the value hash (0 stands for an empty slot). */
typedef struct {
    uint64_t *key;
    uint64_t *code;                      /* hash of the cheapest cone's canonical code (ties: the least) */
    uint8_t *cost;
    uint64_t cap, n;                     /* cap: a power of two */
} gw_valtab;

static uint64_t gw_vkey(uint64_t h) { return h ? h : 1; }

/* 0 when the value is unknown, else its cost and (in *code) its cone's code hash. */
static uint8_t gw_valtab_get(const gw_valtab *t, uint64_t h, uint64_t *code) {
    uint64_t k = gw_vkey(h), i = k & (t->cap - 1);
    while (t->key[i]) {
        if (t->key[i] == k) {
            *code = t->code[i];
            return t->cost[i];
        }
        i = (i + 1) & (t->cap - 1);
    }
    return 0;
}

static void gw_valtab_min(gw_valtab *t, uint64_t h, uint8_t cost, uint64_t code) {
    if (2 * (t->n + 1) > t->cap) { /* grow: rehash into twice the room */
        gw_valtab g = {base_xcalloc((size_t)t->cap * 2, sizeof(uint64_t)),
                       base_xcalloc((size_t)t->cap * 2, sizeof(uint64_t)), base_xcalloc((size_t)t->cap * 2, 1),
                       t->cap * 2, 0};
        for (uint64_t i = 0; i < t->cap; i++)
            if (t->key[i]) {
                uint64_t j = t->key[i] & (g.cap - 1);
                while (g.key[j])
                    j = (j + 1) & (g.cap - 1);
                g.key[j] = t->key[i];
                g.code[j] = t->code[i];
                g.cost[j] = t->cost[i];
                g.n++;
            }
        free(t->key);
        free(t->code);
        free(t->cost);
        *t = g;
    }
    uint64_t k = gw_vkey(h), i = k & (t->cap - 1);
    while (t->key[i] && t->key[i] != k)
        i = (i + 1) & (t->cap - 1);
    if (!t->key[i]) {
        t->key[i] = k;
        t->code[i] = code;
        t->cost[i] = cost;
        t->n++;
    } else if (cost < t->cost[i] || (cost == t->cost[i] && code < t->code[i])) {
        t->code[i] = code;
        t->cost[i] = cost;
    }
}

static void gw_valtab_init(gw_valtab *t) {
    t->cap = 1u << 16;
    t->n = 0;
    t->key = base_xcalloc((size_t)t->cap, sizeof(uint64_t));
    t->code = base_xcalloc((size_t)t->cap, sizeof(uint64_t));
    t->cost = base_xcalloc((size_t)t->cap, 1);
}

static void gw_valtab_free(gw_valtab *t) {
    free(t->key);
    free(t->code);
    free(t->cost);
    memset(t, 0, sizeof *t);
}

typedef struct {
    const gen_config *cfg;
    double t0, last;
    uint64_t graphs;
    uint64_t branches_done, branches_total;
    const char *phase;
} gw_shared;

typedef struct {
    const gen_space *sp;
    gw_shared *shared;                   /* progress counters, NULL while collecting */
    int32_t max_ops;                     /* the run's graph size (budgets for gaps, constants) */
    int32_t depth;                       /* how deep this pass goes (max_ops, or less for values) */
    gw_valtab *values;                   /* first pass: every tensor value with its fewest ops */
    const gw_valtab *minimal;            /* second pass: a tensor computed more dearly is blocked */
    /* blocked tensors: computed more dearly than elsewhere by ops nothing else needs. A graph
       extending this one must read one of those ops' inner results (so they are needed after
       all); otherwise it would be implied by the rule for the tensor and a graph that is kept. */
    int32_t n_blocked;
    int32_t blocked_t[GEN_MAX_OUT];
    uint32_t blocked_cone[GEN_MAX_OUT];
    int32_t n_t, n_ops;
    int32_t dangling;                    /* unconsumed op outputs that depend on no variable */
    int32_t var_uses[GEN_MAX_POOL];      /* inputs reading each pool variable */
    uint32_t class_mask[GEN_MAX_CLASSES]; /* slots of each kind read so far */
    int32_t gaps;                        /* slots missing below the highest read one, all kinds */
    gw_tensor t[GEN_MAX_TENSORS];
    struct {
        int32_t var, n_in, in[GEN_MAX_IN], first_out, n_out;
        uint32_t word;
    } ops[GEN_MAX_OPS];
    uint32_t *buf[GEN_MAX_OPS][GEN_MAX_OUT]; /* (GEN_MAX_ELEMS) values of the op at each depth */
    int32_t n_shapes;
    ops_shape shapes[GW_SHAPES];
    uint64_t *memo;                      /* [n_variants][GW_SHAPES][GW_SHAPES]: 0 unknown, GW_FAIL, or
                                            n_out << 56 | output shape ids, 7 bits each */
    gw_store rec;
    uint64_t graphs, since_report;
    /* first-level collection instead of recursion */
    int collect;
    uint32_t *first;
    int32_t n_first, cap_first;
} gen_walker;

static void gw_progress(gw_shared *sh, int force);

static void gw_store_push(gw_store *r, uint64_t fp, const gen_code *c) {
    if (r->n_blocks == 0 || r->fill == GW_BLOCK) {
        if (r->n_blocks == r->cap_blocks) {
            r->cap_blocks = r->cap_blocks ? r->cap_blocks * 2 : 64;
            r->blocks = base_xrealloc(r->blocks, sizeof(gen_record *) * (size_t)r->cap_blocks);
        }
        r->blocks[r->n_blocks] = base_xmalloc(sizeof(gen_record) * GW_BLOCK);
        r->n_blocks++;
        r->fill = 0;
    }
    r->blocks[r->n_blocks - 1][r->fill++] = gen_record_make(fp, c);
    r->n++;
}

static void gw_store_free(gw_store *r) {
    for (uint64_t b = 0; b < r->n_blocks; b++)
        free(r->blocks[b]);
    free(r->blocks);
    memset(r, 0, sizeof *r);
}

static int16_t gw_intern(gen_walker *w, const ops_shape *s) {
    for (int32_t i = 0; i < w->n_shapes; i++)
        if (ops_shape_eq(&w->shapes[i], s))
            return (int16_t)i;
    if (w->n_shapes == GW_SHAPES)
        return -1;
    w->shapes[w->n_shapes] = *s;
    return (int16_t)w->n_shapes++;
}

/* Output shapes of variant var on the given inputs; -1 if it does not apply. */
static int32_t gw_infer(gen_walker *w, int32_t var, const int32_t *in, ops_shape *out) {
    const gen_variant *va = &w->sp->variants[var];
    int32_t sa = va->n_in > 0 ? w->t[in[0]].shape : 0, sb = va->n_in > 1 ? w->t[in[1]].shape : 0;
    uint64_t *m = NULL;
    if (sa >= 0 && sb >= 0) {
        m = &w->memo[((size_t)var * GW_SHAPES + (size_t)sa) * GW_SHAPES + (size_t)sb];
        if (*m == GW_FAIL)
            return -1;
        if (*m) {
            int32_t n = (int32_t)(*m >> 56);
            for (int32_t o = 0; o < n; o++) {
                int32_t id = (int32_t)((*m >> (7 * o)) & 127u);
                out[o] = w->shapes[id];
            }
            return n;
        }
    }
    ops_shape ish[GEN_MAX_IN];
    for (int32_t i = 0; i < va->n_in; i++)
        ish[i] = w->t[in[i]].full;
    int32_t n_out = 0;
    int ok = ops_infer(va->op, &va->p, va->n_in, ish, &n_out, out, NULL, 0) == 0 && n_out == va->n_out;
    /* bounded sizes; a drawn size must give a pool shape; no rank broadcasting (outputs keep the
       rank of the first input: a matrix times a stack of kernels is not a generation form) */
    for (int32_t o = 0; ok && o < n_out; o++) {
        int64_t ne = ops_shape_numel(&out[o]);
        ok = ne >= 1 && ne <= GEN_MAX_ELEMS && (!va->drawn || gen_shape_is_pool(w->sp, &out[o])) &&
             (va->n_in == 0 || out[o].rank == ish[0].rank);
    }
    uint64_t packed = (uint64_t)n_out << 56;
    for (int32_t o = 0; ok && o < n_out; o++) {
        int16_t id = gw_intern(w, &out[o]);
        if (id < 0) {
            m = NULL; /* not memoisable: fine, just slower */
            break;
        }
        packed |= (uint64_t)id << (7 * o);
    }
    if (m)
        *m = ok ? packed : GW_FAIL;
    return ok ? n_out : -1;
}

static void gw_record(gen_walker *w) {
    uint64_t h[GEN_MAX_GOUT];
    int32_t n = 0, copies = 0;
    for (int32_t t = w->sp->n_vars; t < w->n_t; t++)
        if (!w->t[t].uses) {
            h[n++] = w->t[t].hash;
            copies += w->t[t].copy;
        }
    /* outputs that copy variables beside outputs that compute something: such a graph only pairs
       with graphs that carry the same copies along, pairs implied by the identity rules */
    if (copies && copies < n)
        return;
    gen_code c;
    memset(&c, 0, sizeof c);
    for (int32_t k = 0; k < w->n_ops; k++)
        c.w[k] = w->ops[k].word;
    gw_store_push(&w->rec, gen_hash_outputs(h, n) & w->sp->fp_mask, &c);
    w->graphs++;
    if (++w->since_report >= GW_REPORT_EVERY && w->shared) {
#pragma omp atomic
        w->shared->graphs += w->since_report;
        w->since_report = 0;
        gw_progress(w->shared, 0);
    }
}

static void gw_expand(gen_walker *w);

/* Renaming symmetry: a recorded graph uses, of each pool kind, a prefix of its variables (x0, or
 * x0 and x1, ...). Equal graphs read the same variables, so every pair has a renaming with this
 * property on both sides and nothing is lost. gaps counts the slots still missing below the
 * highest used one, summed over kinds. */
static int32_t gw_mask_gaps(uint32_t m) {
    if (!m)
        return 0;
    int32_t hi = 31 - __builtin_clz(m);
    return hi + 1 - __builtin_popcount(m);
}

/* The gaps with the inputs `in` read as well. */
static int32_t gw_gaps(const gen_walker *w, const int32_t *in, int32_t n_in) {
    const gen_space *sp = w->sp;
    int32_t gaps = w->gaps;
    int32_t c0 = -1;
    uint32_t m0 = 0;
    for (int32_t i = 0; i < n_in; i++) {
        if (in[i] >= sp->n_vars || w->var_uses[in[i]])
            continue;
        int32_t c = sp->vars[in[i]].cls;
        uint32_t bit = 1u << sp->vars[in[i]].slot;
        if (c == c0) { /* second new variable of the same kind */
            gaps += gw_mask_gaps(m0 | bit) - gw_mask_gaps(m0);
            m0 |= bit;
        } else {
            uint32_t m = w->class_mask[c];
            gaps += gw_mask_gaps(m | bit) - gw_mask_gaps(m);
            c0 = c;
            m0 = m | bit;
        }
    }
    return gaps;
}

static void gw_use_var(gen_walker *w, int32_t v, int32_t delta) {
    const gen_space *sp = w->sp;
    int32_t c = sp->vars[v].cls;
    uint32_t m = w->class_mask[c], bit = 1u << sp->vars[v].slot;
    w->var_uses[v] += delta;
    uint32_t nm = w->var_uses[v] ? m | bit : m & ~bit;
    w->gaps += gw_mask_gaps(nm) - gw_mask_gaps(m);
    w->class_mask[c] = nm;
}

/* Hash of the canonical code of the sub-DAG `mask` (ops k with bit k): its ops in greedy-minimal
 * topological order, as gen_canon orders whole graphs; -1 (all ones) if it holds a multi-output
 * op, whose other outputs would make it more than the expression of one tensor. */
static uint64_t gw_cone_code(const gen_walker *w, uint32_t mask) {
    const gen_space *sp = w->sp;
    int32_t map[GEN_MAX_TENSORS];
    for (int32_t t = 0; t < w->n_t; t++)
        map[t] = t < sp->n_vars ? t : -1;
    for (int32_t k = 0; k < w->n_ops; k++)
        if ((mask >> k & 1u) && w->ops[k].n_out > 1)
            return ~0ull;
    uint64_t h = 0x636f6e65ull;
    int32_t next = sp->n_vars;
    uint32_t left = mask;
    while (left) {
        int32_t best = -1;
        uint32_t best_w = 0;
        for (int32_t k = 0; k < w->n_ops; k++) {
            if (!(left >> k & 1u))
                continue;
            const gen_variant *va = &sp->variants[w->ops[k].var];
            int32_t r[GEN_MAX_IN] = {0, 0}, ready = 1;
            for (int32_t i = 0; i < va->n_in; i++) {
                r[i] = map[w->ops[k].in[i]];
                ready &= r[i] >= 0;
            }
            if (!ready)
                continue;
            if (va->commutative && r[0] > r[1]) {
                int32_t x = r[0];
                r[0] = r[1];
                r[1] = x;
            }
            uint32_t word = GEN_WORD(w->ops[k].var, r[0], r[1]);
            if (best < 0 || word < best_w) {
                best = k;
                best_w = word;
            }
        }
        left &= ~(1u << best);
        map[w->ops[best].first_out] = next++;
        h = gen_mix64(h ^ best_w);
    }
    return h;
}

/* Ops of the cone `mask` (the newest op among them) that nothing outside the cone needs: their
 * outputs are all read, and only by ops of the cone. */
static int32_t gw_exclusive(const gen_walker *w, uint32_t mask) {
    int32_t n = 0;
    for (int32_t k = 0; k < w->n_ops; k++) {
        if (!(mask >> k & 1u))
            continue;
        int excl = 1;
        for (int32_t o = 0; o < w->ops[k].n_out && excl; o++) {
            int32_t u = w->ops[k].first_out + o;
            if (k == w->n_ops - 1)
                break; /* the tensor itself */
            excl = w->t[u].uses > 0;
            for (int32_t j = 0; j < w->n_ops && excl; j++)
                if (!(mask >> j & 1u))
                    for (int32_t i = 0; i < w->ops[j].n_in; i++)
                        excl &= w->ops[j].in[i] != u;
        }
        n += excl;
    }
    return n;
}

/* The generation policies on the inputs of op (var, in) (see the file comment); 0 rejects it.
 * *maxprod: the newest op that produced one of them (-1: variables only). */
static int gw_inputs_ok(const gen_walker *w, const gen_variant *va, const int32_t *in, int32_t *maxprod) {
    const ops_desc *od = &ops_table[va->op];
    if (va->n_in == 2 && va->commutative && in[0] >= in[1])
        return 0;
    for (int32_t i = 0; i < va->n_in; i++) {
        const gw_tensor *t = &w->t[in[i]];
        if (t->producer > *maxprod)
            *maxprod = t->producer;
        if (va->weight_transform && t->producer >= 0)
            return 0;
        if (od->weight_input_mask) {
            int weight_slot = (od->weight_input_mask >> i) & 1;
            if ((weight_slot && t->role == GEN_ROLE_DATA) || (!weight_slot && t->role == GEN_ROLE_WEIGHT))
                return 0;
        }
        /* a weight (F, C, KH, KW) is not pooled, nor cut or joined along its window */
        if (t->role == GEN_ROLE_WEIGHT && ((va->windowed && i == 0) || (va->has_axis && va->p.v[PM_AXIS] >= 2)))
            return 0;
    }
    return 1;
}

/* 1 when the op reads an inner result of every blocked tensor (they are needed after all). */
static int gw_frees_blocked(const gen_walker *w, const gen_variant *va, const int32_t *in) {
    for (int32_t b = 0; b < w->n_blocked; b++) {
        int frees = 0;
        for (int32_t i = 0; i < va->n_in && !frees; i++) {
            int32_t p = w->t[in[i]].producer;
            frees = p >= 0 && (w->blocked_cone[b] >> p & 1u) && in[i] != w->blocked_t[b];
        }
        if (!frees)
            return 0;
    }
    return 1;
}

/* The op's place and form: 0 when it breaks the canonical order or TASO's input forms. */
static int gw_form_ok(const gen_walker *w, const gen_variant *va, const int32_t *in, uint32_t word,
                      int32_t maxprod) {
    /* canonical order (and no repeated op): every later op computable at step s has a larger word */
    for (int32_t s = w->n_ops - 1; s > maxprod; s--)
        if (w->ops[s].word >= word)
            return 0;
    if (va->n_in == 2 && !ops_table[va->op].weight_input_mask && in[0] == in[1])
        return 0; /* concat(x, x), smul(s, s): TASO's distinct inputs */
    /* commutative inputs have equal shapes: ewadd and ewmul without broadcasting, as TASO */
    if (va->commutative) {
        if (w->t[in[0]].shape != w->t[in[1]].shape) /* equal ids mean equal shapes, unequal ids different ones */
            return 0;
        if (w->t[in[0]].shape < 0 && !ops_shape_eq(&w->t[in[0]].full, &w->t[in[1]].full))
            return 0;
    }
    return 1;
}

/* Dangling constants and skipped variables must be consumable by the ops still to come: 0 when
 * the op leaves more than they can read; else the graph's *depvar, *dangling and *gaps with it. */
static int gw_budget(const gen_walker *w, const gen_variant *va, const int32_t *in, int *depvar, int32_t *dangling,
                     int32_t *gaps) {
    int32_t room = GEN_MAX_IN * (w->max_ops - w->n_ops - 1);
    int consumed = 0;
    *depvar = 0;
    for (int32_t i = 0; i < va->n_in; i++) {
        const gw_tensor *t = &w->t[in[i]];
        *depvar |= t->depvar;
        if (t->producer >= 0 && !t->uses && !t->depvar && (i == 0 || in[1] != in[0]))
            consumed++;
    }
    *dangling = w->dangling - consumed + (*depvar ? 0 : va->n_out);
    if (*dangling > room)
        return 0;
    /* variables skipped in a kind must be usable by the ops still to come; recorded only without */
    *gaps = gw_gaps(w, in, va->n_in);
    return *gaps <= room;
}

static void gw_collect(gen_walker *w, uint32_t word) {
    if (w->n_first == w->cap_first) {
        w->cap_first = w->cap_first ? w->cap_first * 2 : 256;
        w->first = base_xrealloc(w->first, sizeof(uint32_t) * (size_t)w->cap_first);
    }
    w->first[w->n_first++] = word;
}

/* An earlier tensor equal to tensor t (shape and values), or -1. */
static int32_t gw_find_equal(const gen_walker *w, int32_t t) {
    const gw_tensor *x = &w->t[t];
    for (int32_t u = 0; u < t; u++)
        if (w->t[u].hash == x->hash && w->t[u].numel == x->numel && ops_shape_eq(&w->t[u].full, &x->full) &&
            !memcmp(w->t[u].val, x->val, sizeof(uint32_t) * (size_t)x->numel))
            return u;
    return -1;
}

/* Compute the op's outputs (shapes os) into the buffers of its depth, as the tensors after the
 * graph's (not yet counted in n_t); 1 when one of them repeats an existing tensor. */
static int gw_eval(gen_walker *w, const gen_variant *va, const int32_t *in, const ops_shape *os, int depvar) {
    int32_t n = w->n_ops, f = w->n_t;
    ops_shape ish[GEN_MAX_IN];
    const uint32_t *iv[GEN_MAX_IN];
    for (int32_t i = 0; i < va->n_in; i++) {
        ish[i] = w->t[in[i]].full;
        iv[i] = w->t[in[i]].val;
    }
    ops_sig sig = {va->op, &va->p, va->n_in, va->n_out, ish, os};
    ops_table[va->op].fp(&sig, iv, w->buf[n]);
    int repeat = 0;
    for (int32_t o = 0; o < va->n_out; o++) {
        gw_tensor *t = &w->t[f + o];
        t->full = os[o];
        t->shape = gw_intern(w, &os[o]);
        t->numel = ops_shape_numel(&os[o]);
        t->val = w->buf[n][o];
        t->hash = gen_hash_values(&os[o], t->val, t->numel);
        t->role = va->n_in > 0 ? w->t[in[0]].role : va->role;
        t->depvar = (uint8_t)depvar;
        t->producer = (int8_t)n;
        t->uses = 0;
        t->cone = (uint8_t)(1u << n);
        for (int32_t i = 0; i < va->n_in; i++)
            if (w->t[in[i]].producer >= 0)
                t->cone |= w->t[in[i]].cone;
        int32_t u = gw_find_equal(w, f + o);
        t->copy = u >= 0 && u < w->sp->n_vars;
        repeat |= u >= 0;
    }
    return repeat;
}

/* Append op (var, in) to the graph, its outputs already computed by gw_eval. */
static void gw_push(gen_walker *w, int32_t var, const int32_t *in, uint32_t word) {
    const gen_space *sp = w->sp;
    const gen_variant *va = &sp->variants[var];
    int32_t n = w->n_ops;
    for (int32_t i = 0; i < va->n_in; i++) {
        w->t[in[i]].uses++;
        if (in[i] < sp->n_vars)
            gw_use_var(w, in[i], 1);
    }
    w->ops[n].var = var;
    w->ops[n].n_in = va->n_in;
    w->ops[n].in[0] = in[0];
    w->ops[n].in[1] = in[1];
    w->ops[n].first_out = w->n_t;
    w->ops[n].n_out = va->n_out;
    w->ops[n].word = word;
    w->n_ops = n + 1;
    w->n_t += va->n_out;
}

/* Remove the graph's last op (gw_push undone). */
static void gw_pop(gen_walker *w) {
    int32_t n = w->n_ops - 1;
    w->n_t = w->ops[n].first_out;
    w->n_ops = n;
    for (int32_t i = 0; i < w->ops[n].n_in; i++) {
        int32_t t = w->ops[n].in[i];
        w->t[t].uses--;
        if (t < w->sp->n_vars)
            gw_use_var(w, t, -1);
    }
}

/* After pushing an op with outputs f..f+n_out-1. Value pass: each output's value with its fewest
 * ops goes into the table. Graph pass: the blocked tensors are set afresh (the new op read an
 * inner result of every one blocked before), with those of the new outputs computed more dearly
 * here than elsewhere. */
static void gw_note_outputs(gen_walker *w, int32_t f, int32_t n_out, int repeat) {
    w->n_blocked = 0;
    for (int32_t o = 0; o < n_out && (w->values || (w->minimal && !repeat)); o++) {
        const gw_tensor *t = &w->t[f + o];
        uint8_t cost = (uint8_t)__builtin_popcount(t->cone);
        if (w->values) {
            uint64_t code = gw_cone_code(w, t->cone);
            if (code != ~0ull)
                gw_valtab_min(w->values, t->hash, cost, code);
            continue;
        }
        /* computed more cheaply elsewhere, or as cheaply by a cone of lesser code: replacing the
           ops only this tensor needs by that cheaper computation gives a graph no larger, so an
           extension that keeps them needed by it alone is implied: blocked */
        uint64_t mcode = 0;
        uint8_t m = gw_valtab_get(w->minimal, t->hash, &mcode);
        if (!m || m > cost)
            continue;
        int32_t excl = gw_exclusive(w, t->cone);
        int block = 0;
        if (m < excl)
            block = 1;
        else if (m == excl && excl == cost) {
            uint64_t code = gw_cone_code(w, t->cone);
            block = code != ~0ull && code != mcode;
        }
        if (block) {
            w->blocked_t[w->n_blocked] = f + o;
            w->blocked_cone[w->n_blocked++] = t->cone;
        }
    }
}

/* Try adding op (var, in) to the current graph; recurse when it is new and not a repeat. */
static void gw_try(gen_walker *w, int32_t var, int32_t in0, int32_t in1) {
    const gen_variant *va = &w->sp->variants[var];
    int32_t in[GEN_MAX_IN] = {in0, in1}, maxprod = -1;
    if (!gw_inputs_ok(w, va, in, &maxprod) || !gw_frees_blocked(w, va, in))
        return;
    uint32_t word = GEN_WORD(var, va->n_in > 0 ? in0 : 0, va->n_in > 1 ? in1 : 0);
    if (!gw_form_ok(w, va, in, word, maxprod))
        return;
    ops_shape os[GEN_MAX_OUT];
    if (gw_infer(w, var, in, os) < 0)
        return;
    int depvar;
    int32_t dangling, gaps;
    if (!gw_budget(w, va, in, &depvar, &dangling, &gaps))
        return;
    if (w->collect) {
        gw_collect(w, word);
        return;
    }
    int repeat = gw_eval(w, va, in, os, depvar);
    int32_t f = w->n_t, saved_blocked = w->n_blocked, saved_dangling = w->dangling;
    gw_push(w, var, in, word);
    gw_note_outputs(w, f, va->n_out, repeat);
    w->dangling = dangling;
    if (dangling == 0 && gaps == 0 && !w->values)
        gw_record(w);
    if (!repeat && w->n_ops < w->depth)
        gw_expand(w);
    w->n_blocked = saved_blocked;
    w->dangling = saved_dangling;
    gw_pop(w);
}

/* 1 unless the memo already knows that variant var does not apply to shapes (sa, sb). */
static int gw_may_apply(const gen_walker *w, int32_t var, int32_t sa, int32_t sb) {
    if (sa < 0 || sb < 0)
        return 1;
    return w->memo[((size_t)var * GW_SHAPES + (size_t)sa) * GW_SHAPES + (size_t)sb] != GW_FAIL;
}

static void gw_expand(gen_walker *w) {
    const gen_space *sp = w->sp;
    int32_t n = w->n_ops, nt = w->n_t;
    /* an op with a smaller variant than the last op must consume one of its outputs */
    int32_t last_var = n > 0 ? w->ops[n - 1].var : -1;
    int32_t lf = n > 0 ? w->ops[n - 1].first_out : nt, ln = n > 0 ? w->ops[n - 1].n_out : 0;
    /* tensors grouped by shape, so a pair of shapes an op rejects is skipped as a whole */
    int32_t ng = 0, gshape[GEN_MAX_TENSORS], gsize[GEN_MAX_TENSORS], gmem[GEN_MAX_TENSORS][GEN_MAX_TENSORS];
    for (int32_t t = 0; t < nt; t++) {
        int32_t g = 0;
        while (g < ng && !(w->t[t].shape >= 0 && gshape[g] == w->t[t].shape))
            g++;
        if (g == ng) {
            gshape[ng] = w->t[t].shape;
            gsize[ng++] = 0;
        }
        gmem[g][gsize[g]++] = t;
    }
    for (int32_t var = 0; var < sp->n_variants; var++) {
        const gen_variant *va = &sp->variants[var];
        int must_use_last = var < last_var;
        if (va->n_in == 0) {
            if (!must_use_last)
                gw_try(w, var, 0, 0);
        } else if (va->n_in == 1) {
            for (int32_t ga = 0; ga < ng; ga++) {
                if (!gw_may_apply(w, var, gshape[ga], 0))
                    continue;
                for (int32_t k = 0; k < gsize[ga]; k++) {
                    int32_t i = gmem[ga][k];
                    if (!must_use_last || (i >= lf && i < lf + ln))
                        gw_try(w, var, i, 0);
                }
            }
        } else {
            for (int32_t ga = 0; ga < ng; ga++)
                for (int32_t gb = 0; gb < ng; gb++) {
                    if (!gw_may_apply(w, var, gshape[ga], gshape[gb]))
                        continue;
                    for (int32_t ka = 0; ka < gsize[ga]; ka++)
                        for (int32_t kb = 0; kb < gsize[gb]; kb++) {
                            int32_t i = gmem[ga][ka], j = gmem[gb][kb];
                            if (!must_use_last || (i >= lf && i < lf + ln) || (j >= lf && j < lf + ln))
                                gw_try(w, var, i, j);
                        }
                }
        }
    }
}

static void gw_init(gen_walker *w, const gen_space *sp) {
    memset(w, 0, sizeof *w);
    w->sp = sp;
    w->max_ops = sp->max_ops;
    w->depth = sp->max_ops;
    w->memo = base_xcalloc((size_t)sp->n_variants * GW_SHAPES * GW_SHAPES, sizeof(uint64_t));
    for (int32_t d = 0; d < GEN_MAX_OPS; d++)
        for (int32_t o = 0; o < GEN_MAX_OUT; o++)
            w->buf[d][o] = base_xmalloc(sizeof(uint32_t) * GEN_MAX_ELEMS);
    for (int32_t v = 0; v < sp->n_vars; v++) {
        gw_tensor *t = &w->t[v];
        t->full = sp->vars[v].shape;
        t->shape = gw_intern(w, &t->full);
        t->role = (uint8_t)sp->vars[v].role;
        t->depvar = 1;
        t->producer = -1;
        t->numel = sp->vars[v].numel;
        t->hash = sp->vars[v].hash;
        t->val = sp->vars[v].fp;
    }
    w->n_t = sp->n_vars;
}

static void gw_free(gen_walker *w) {
    free(w->memo);
    for (int32_t d = 0; d < GEN_MAX_OPS; d++)
        for (int32_t o = 0; o < GEN_MAX_OUT; o++)
            free(w->buf[d][o]);
    free(w->first);
    gw_store_free(&w->rec);
}

static void gw_progress(gw_shared *sh, int force) {
    if (!sh->cfg->progress)
        return;
#pragma omp critical(gen_progress)
    {
        double now = base_now();
        if (force || now - sh->last >= 0.25) {
            sh->last = now;
            gen_progress p = {sh->phase, sh->branches_done, sh->branches_total, sh->graphs, now - sh->t0};
            sh->cfg->progress(sh->cfg->progress_ctx, &p);
        }
    }
}

/* One parallel pass over the first-level branches. Value pass (values != NULL): to depth
 * max_ops - 1, recording nothing, every tensor value merged into values with its fewest ops.
 * Graph pass: records into parts[thread], not extending tensors that `minimal` knows cheaper. */
static void gw_pass(const gen_space *sp, gw_shared *sh, const uint32_t *first, int32_t n_first, int threads,
                    gw_valtab *values, const gw_valtab *minimal, gw_store *parts) {
    gw_valtab *local = values ? base_xcalloc((size_t)threads, sizeof *local) : NULL;
    sh->branches_done = 0;
#pragma omp parallel num_threads(threads)
    {
        gen_walker *w = base_xmalloc(sizeof *w);
        gw_init(w, sp);
        w->shared = sh;
        w->minimal = minimal;
        if (values) {
            w->values = &local[omp_get_thread_num()];
            gw_valtab_init(w->values);
            w->depth = sp->max_ops - 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int32_t b = 0; b < n_first; b++) {
            uint32_t word = first[b];
            gw_try(w, GEN_WORD_VAR(word), GEN_WORD_IN0(word), GEN_WORD_IN1(word));
#pragma omp atomic
            sh->graphs += w->since_report;
#pragma omp atomic
            sh->branches_done += 1;
            w->since_report = 0;
            gw_progress(sh, 0);
        }
        if (parts) {
            parts[omp_get_thread_num()] = w->rec;
            memset(&w->rec, 0, sizeof w->rec);
        }
        gw_free(w);
        free(w);
    }
    if (values) {
        for (int i = 0; i < threads; i++) {
            for (uint64_t k = 0; k < local[i].cap; k++)
                if (local[i].key[k])
                    gw_valtab_min(values, local[i].key[k], local[i].cost[k], local[i].code[k]);
            gw_valtab_free(&local[i]);
        }
        free(local);
    }
}

int gen_enumerate(const gen_space *sp, const gen_config *cfg, uint64_t extra, gen_records *out, double t0,
                  char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    /* the first level, collected sequentially: the units of parallel work */
    gen_walker root;
    gw_init(&root, sp);
    root.collect = 1;
    gw_expand(&root);
    int32_t n_first = root.n_first;
    uint32_t *first = root.first;
    root.first = NULL;
    gw_free(&root);

    int threads = cfg->threads > 0 ? cfg->threads : omp_get_max_threads();
    gw_shared sh = {cfg, t0, 0.0, 0, 0, (uint64_t)n_first, "values"};
    /* pass 1: the fewest ops that compute each value, over graphs one op smaller than the run's */
    gw_valtab values = {0};
    if (sp->max_ops > 1) {
        gw_valtab_init(&values);
        gw_pass(sp, &sh, first, n_first, threads, &values, NULL, NULL);
    }
    /* pass 2: the graphs */
    sh.phase = "enumerate";
    sh.graphs = 0;
    gw_store *parts = calloc((size_t)threads, sizeof *parts);
    if (!parts) {
        free(first);
        gw_valtab_free(&values);
        return -1;
    }
    gw_pass(sp, &sh, first, n_first, threads, NULL, sp->max_ops > 1 ? &values : NULL, parts);
    gw_valtab_free(&values);
    free(first);
    gw_progress(&sh, 1);
    /* one array (with room for the identity graphs); blocks freed as they are copied */
    uint64_t total = 0;
    for (int i = 0; i < threads; i++)
        total += parts[i].n;
    out->cap = total + extra;
    out->recs = malloc((size_t)(out->cap ? out->cap : 1) * sizeof(gen_record));
    if (!out->recs) {
        for (int i = 0; i < threads; i++)
            gw_store_free(&parts[i]);
        free(parts);
        return -1;
    }
    out->n = 0;
    for (int i = 0; i < threads; i++) {
        for (uint64_t b = 0; b < parts[i].n_blocks; b++) {
            uint32_t cnt = b + 1 == parts[i].n_blocks ? parts[i].fill : GW_BLOCK;
            memcpy(out->recs + out->n, parts[i].blocks[b], sizeof(gen_record) * cnt);
            out->n += cnt;
            free(parts[i].blocks[b]);
            parts[i].blocks[b] = NULL;
        }
        gw_store_free(&parts[i]);
    }
    free(parts);
    return 0;
}
