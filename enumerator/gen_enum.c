/* gen_enum.c: depth-first enumeration of every graph of up to max_ops ops over the pool.
 *
 * A graph grows one op at a time over the tensors it has (pool variables and earlier outputs).
 * Each DAG is produced exactly once: its op sequence must be the greedy-minimal topological
 * order (an op placed at step s has a smaller word than every later op that was already
 * computable at s); since every prefix of such a sequence has the property too, a sequence that
 * lacks it is cut with its whole subtree. Also cut: duplicate computation (an op equal to an
 * earlier one), commutative inputs out of order or of different shapes (no broadcasting), the
 * same tensor twice for an op without weight inputs (as TASO), weight transforms
 * (enlarge) of anything but pool variables, multi-output ops (split) of pool variables, weights
 * in data inputs and data in weight inputs, weights pooled (a 2-D window over them) or cut or
 * joined along their window axes, more dangling constants than the remaining ops can
 * consume. An op whose output repeats an existing tensor ends its branch: the graph is recorded
 * (it is one side of a rule against the smaller graph) but never extended, since every extension
 * is implied by that rule. A graph is recorded when every output depends on a pool variable and
 * it reads a prefix of each kind's variables (gw_gaps: one graph per renaming class, as far as
 * pairs are concerned);
 * its record is the hash of the multiset of its output hashes (order-independent) and its code.
 * Work is split over threads by the first op; records are sorted later, so the result does not
 * depend on the schedule.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_impl.h"

#define GW_SHAPES 128                    /* interned shapes per walker (memoised inference) */
#define GW_FAIL UINT64_MAX
#define GW_REPORT_EVERY (1u << 16)       /* graphs between progress checks */

typedef struct {
    int16_t shape;                       /* interned shape id, -1 if not interned */
    uint8_t role, depvar;
    int8_t producer;                     /* op index, -1 for pool variables */
    uint8_t uses;
    int64_t numel;
    uint64_t hash;
    const uint32_t *val;
    ops_shape full;                      /* the shape itself */
} gw_tensor;

typedef struct {
    const gen_config *cfg;
    double t0, last;
    uint64_t graphs;
    uint64_t branches_done, branches_total;
} gw_shared;

typedef struct {
    const gen_space *sp;
    gw_shared *shared;                   /* progress counters, NULL while collecting */
    int32_t max_ops;
    int32_t n_t, n_ops;
    int32_t dangling;                    /* unconsumed op outputs that depend on no variable */
    int32_t var_uses[GEN_MAX_POOL];      /* inputs reading each pool variable */
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
    gen_records rec;
    uint64_t graphs, since_report;
    /* first-level collection instead of recursion */
    int collect;
    uint32_t *first;
    int32_t n_first, cap_first;
} gen_walker;

static void gw_progress(gw_shared *sh, int force);

static void gw_records_push(gen_records *r, uint64_t fp, const gen_code *c) {
    if (r->n == r->cap) {
        uint64_t cap = r->cap ? r->cap * 2 : 4096;
        gen_record *nr = realloc(r->recs, (size_t)cap * sizeof *nr);
        if (!nr) {
            fprintf(stderr, "tasc generate: out of memory for %llu graph records\n", (unsigned long long)cap);
            abort();
        }
        r->recs = nr;
        r->cap = cap;
    }
    r->recs[r->n].fp = fp;
    r->recs[r->n].code = *c;
    r->n++;
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
    int32_t n = 0;
    for (int32_t t = w->sp->n_vars; t < w->n_t; t++)
        if (!w->t[t].uses)
            h[n++] = w->t[t].hash;
    gen_code c;
    memset(&c, 0, sizeof c);
    for (int32_t k = 0; k < w->n_ops; k++)
        c.w[k] = w->ops[k].word;
    gw_records_push(&w->rec, gen_hash_outputs(h, n) & w->sp->fp_mask, &c);
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
 * property on both sides and nothing is lost. Returns the slots still missing below the highest
 * used one, summed over kinds, with the inputs `in` added. */
static int32_t gw_gaps(const gen_walker *w, const int32_t *in, int32_t n_in) {
    const gen_space *sp = w->sp;
    int32_t gaps = 0;
    for (int32_t c = 0; c < sp->n_classes; c++) {
        int32_t hi = -1, n = 0;
        for (int32_t s = 0; s < sp->class_size[c]; s++) {
            int32_t v = sp->class_first[c] + s, used = w->var_uses[v] > 0;
            for (int32_t i = 0; i < n_in && !used; i++)
                used = in[i] == v;
            if (used) {
                hi = s;
                n++;
            }
        }
        gaps += hi + 1 - n;
    }
    return gaps;
}

/* Try adding op (var, in) to the current graph; recurse when it is new and not a repeat. */
static void gw_try(gen_walker *w, int32_t var, int32_t in0, int32_t in1) {
    const gen_space *sp = w->sp;
    const gen_variant *va = &sp->variants[var];
    const ops_desc *od = &ops_table[va->op];
    int32_t in[GEN_MAX_IN] = {in0, in1};
    int32_t n = w->n_ops, maxprod = -1;
    if (va->n_in == 2 && va->commutative && in0 >= in1)
        return;
    for (int32_t i = 0; i < va->n_in; i++) {
        const gw_tensor *t = &w->t[in[i]];
        if (t->producer > maxprod)
            maxprod = t->producer;
        if (va->weight_transform && t->producer >= 0)
            return;
        if (va->n_out > 1 && t->producer < 0)
            return;
        if (od->weight_input_mask) {
            int weight_slot = (od->weight_input_mask >> i) & 1;
            if ((weight_slot && t->role == GEN_ROLE_DATA) || (!weight_slot && t->role == GEN_ROLE_WEIGHT))
                return;
        }
        /* a weight (F, C, KH, KW) is not pooled, nor cut or joined along its window */
        if (t->role == GEN_ROLE_WEIGHT && ((va->windowed && i == 0) || (va->has_axis && va->p.v[PM_AXIS] >= 2)))
            return;
    }
    uint32_t word = GEN_WORD(var, va->n_in > 0 ? in0 : 0, va->n_in > 1 ? in1 : 0);
    /* canonical order (and no repeated op): every later op computable at step s has a larger word */
    for (int32_t s = n - 1; s > maxprod; s--)
        if (w->ops[s].word >= word)
            return;
    /* dangling constants must be consumable by the ops still to come */
    int depvar = 0, consumed = 0;
    for (int32_t i = 0; i < va->n_in; i++) {
        const gw_tensor *t = &w->t[in[i]];
        depvar |= t->depvar;
        if (t->producer >= 0 && !t->uses && !t->depvar && (i == 0 || in[1] != in[0]))
            consumed++;
    }
    int32_t dangling = w->dangling - consumed + (depvar ? 0 : va->n_out);
    if (dangling > GEN_MAX_IN * (w->max_ops - n - 1))
        return;
    /* variables skipped in a kind must be usable by the ops still to come; recorded only without */
    int32_t gaps = gw_gaps(w, in, va->n_in);
    if (gaps > GEN_MAX_IN * (w->max_ops - n - 1))
        return;
    ops_shape os[GEN_MAX_OUT];
    if (gw_infer(w, var, in, os) < 0)
        return;
    /* commutative inputs have equal shapes: ewadd and ewmul without broadcasting, as TASO */
    if (va->n_in == 2 && !od->weight_input_mask && in0 == in1)
        return; /* concat(x, x), smul(s, s): TASO's distinct inputs */
    if (va->commutative) {
        if (w->t[in0].shape != w->t[in1].shape) /* equal ids mean equal shapes, unequal ids different ones */
            return;
        if (w->t[in0].shape < 0 && !ops_shape_eq(&w->t[in0].full, &w->t[in1].full))
            return;
    }
    if (w->collect) {
        if (w->n_first == w->cap_first) {
            w->cap_first = w->cap_first ? w->cap_first * 2 : 256;
            uint32_t *nf = realloc(w->first, sizeof(uint32_t) * (size_t)w->cap_first);
            if (!nf) {
                fprintf(stderr, "tasc generate: out of memory\n");
                abort();
            }
            w->first = nf;
        }
        w->first[w->n_first++] = word;
        return;
    }
    /* values */
    ops_shape ish[GEN_MAX_IN];
    const uint32_t *iv[GEN_MAX_IN];
    for (int32_t i = 0; i < va->n_in; i++) {
        ish[i] = w->t[in[i]].full;
        iv[i] = w->t[in[i]].val;
    }
    ops_sig sig = {va->op, &va->p, va->n_in, va->n_out, ish, os};
    od->fp(&sig, iv, w->buf[n]);
    int repeat = 0;
    int32_t f = w->n_t;
    for (int32_t o = 0; o < va->n_out; o++) {
        gw_tensor *t = &w->t[f + o];
        t->full = os[o];
        t->shape = gw_intern(w, &os[o]);
        t->numel = ops_shape_numel(&os[o]);
        t->val = w->buf[n][o];
        t->hash = gen_hash_values(&os[o], t->val, t->numel);
        t->role = va->n_in > 0 ? w->t[in0].role : va->role;
        t->depvar = (uint8_t)depvar;
        t->producer = (int8_t)n;
        t->uses = 0;
        for (int32_t u = 0; u < f + o && !repeat; u++)
            repeat = w->t[u].hash == t->hash && w->t[u].numel == t->numel && ops_shape_eq(&w->t[u].full, &os[o]) &&
                     !memcmp(w->t[u].val, t->val, sizeof(uint32_t) * (size_t)t->numel);
    }
    /* push */
    for (int32_t i = 0; i < va->n_in; i++) {
        w->t[in[i]].uses++;
        if (in[i] < sp->n_vars)
            w->var_uses[in[i]]++;
    }
    w->ops[n].var = var;
    w->ops[n].n_in = va->n_in;
    w->ops[n].in[0] = in0;
    w->ops[n].in[1] = in1;
    w->ops[n].first_out = f;
    w->ops[n].n_out = va->n_out;
    w->ops[n].word = word;
    w->n_ops = n + 1;
    w->n_t = f + va->n_out;
    int32_t saved_dangling = w->dangling;
    w->dangling = dangling;
    if (dangling == 0 && gaps == 0)
        gw_record(w);
    if (!repeat && w->n_ops < w->max_ops)
        gw_expand(w);
    /* pop */
    w->dangling = saved_dangling;
    w->n_t = f;
    w->n_ops = n;
    for (int32_t i = 0; i < va->n_in; i++) {
        w->t[in[i]].uses--;
        if (in[i] < sp->n_vars)
            w->var_uses[in[i]]--;
    }
}

static void gw_expand(gen_walker *w) {
    const gen_space *sp = w->sp;
    int32_t n = w->n_ops, nt = w->n_t;
    /* an op with a smaller variant than the last op must consume one of its outputs */
    int32_t last_var = n > 0 ? w->ops[n - 1].var : -1;
    int32_t lf = n > 0 ? w->ops[n - 1].first_out : nt, ln = n > 0 ? w->ops[n - 1].n_out : 0;
    for (int32_t var = 0; var < sp->n_variants; var++) {
        const gen_variant *va = &sp->variants[var];
        int must_use_last = var < last_var;
        if (va->n_in == 0) {
            if (!must_use_last)
                gw_try(w, var, 0, 0);
        } else if (va->n_in == 1) {
            for (int32_t i = must_use_last ? lf : 0; i < (must_use_last ? lf + ln : nt); i++)
                gw_try(w, var, i, 0);
        } else {
            for (int32_t i = 0; i < nt; i++) {
                int i_last = i >= lf && i < lf + ln;
                if (must_use_last && !i_last) {
                    for (int32_t j = lf; j < lf + ln; j++)
                        gw_try(w, var, i, j);
                } else {
                    for (int32_t j = 0; j < nt; j++)
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
    w->memo = calloc((size_t)sp->n_variants * GW_SHAPES * GW_SHAPES, sizeof(uint64_t));
    if (!w->memo) {
        fprintf(stderr, "tasc generate: out of memory\n");
        abort();
    }
    for (int32_t d = 0; d < GEN_MAX_OPS; d++)
        for (int32_t o = 0; o < GEN_MAX_OUT; o++) {
            w->buf[d][o] = malloc(sizeof(uint32_t) * GEN_MAX_ELEMS);
            if (!w->buf[d][o]) {
                fprintf(stderr, "tasc generate: out of memory\n");
                abort();
            }
        }
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
    free(w->rec.recs);
}

static void gw_progress(gw_shared *sh, int force) {
    if (!sh->cfg->progress)
        return;
#pragma omp critical(gen_progress)
    {
        double now = gen_now();
        if (force || now - sh->last >= 0.25) {
            sh->last = now;
            gen_progress p = {"enumerate", sh->branches_done, sh->branches_total, sh->graphs, now - sh->t0};
            sh->cfg->progress(sh->cfg->progress_ctx, &p);
        }
    }
}

int gen_enumerate(const gen_space *sp, const gen_config *cfg, gen_records *out, double t0, char *err,
                  size_t errlen) {
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

    gw_shared sh = {cfg, t0, 0.0, 0, 0, (uint64_t)n_first};
    int threads = cfg->threads > 0 ? cfg->threads : omp_get_max_threads();
    gen_records *parts = calloc((size_t)threads, sizeof *parts);
    if (!parts) {
        free(first);
        return -1;
    }
#pragma omp parallel num_threads(threads)
    {
        gen_walker *w = malloc(sizeof *w);
        if (!w) {
            fprintf(stderr, "tasc generate: out of memory\n");
            abort();
        }
        gw_init(w, sp);
        w->shared = &sh;
#pragma omp for schedule(dynamic, 1)
        for (int32_t b = 0; b < n_first; b++) {
            uint32_t word = first[b];
            gw_try(w, GEN_WORD_VAR(word), GEN_WORD_IN0(word), GEN_WORD_IN1(word));
#pragma omp atomic
            sh.graphs += w->since_report;
#pragma omp atomic
            sh.branches_done += 1;
            w->since_report = 0;
            gw_progress(&sh, 0);
        }
        parts[omp_get_thread_num()] = w->rec;
        w->rec.recs = NULL;
        gw_free(w);
        free(w);
    }
    free(first);
    gw_progress(&sh, 1);
    /* one array; parts freed as they are copied */
    uint64_t total = 0;
    for (int i = 0; i < threads; i++)
        total += parts[i].n;
    out->recs = malloc((size_t)(total + 1) * sizeof(gen_record));
    if (!out->recs) {
        for (int i = 0; i < threads; i++)
            free(parts[i].recs);
        free(parts);
        return -1;
    }
    out->n = 0;
    out->cap = total + 1;
    for (int i = 0; i < threads; i++) {
        if (parts[i].n)
            memcpy(out->recs + out->n, parts[i].recs, (size_t)parts[i].n * sizeof(gen_record));
        out->n += parts[i].n;
        free(parts[i].recs);
    }
    free(parts);
    return 0;
}
