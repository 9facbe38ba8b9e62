/* verify_run.c: proving a candidate set in parallel, with a cache, and splitting it into the proved
 * rules and the quarantine.
 *
 * Each OpenMP worker owns one Z3 context (vz_ctx) for the whole run and takes candidates one at a
 * time; results land in an array indexed by candidate, so the output order is the input order
 * whatever the thread count. The cache maps a 128-bit key of (op-set hash, axioms hash, the
 * candidate's content) to its outcome, core and time; proved and refuted outcomes are reused as
 * they are, unknown ones only by a run whose timeout is not longer. The cache file is rewritten
 * through a temporary and a rename.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "verify_impl.h"

const char *const verify_outcome_names[VERIFY_OUTCOME_COUNT] = {"proved", "refuted", "unknown"};

#define VERIFY_NUMERIC_TOL 1e-3
/* Candidates proved in one Z3 context, made fresh for each chunk of consecutive candidates. What
 * Z3 proves, and the unsat core it returns, depend on the terms and lemmas its context already
 * holds, so a context must see the same queries in the same order whatever the thread count:
 * threads take whole chunks. A fresh context also bounds memory. */
#define VERIFY_CHUNK 64

void verify_config_default(verify_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->timeout_s = VERIFY_DEFAULT_TIMEOUT_S;
    cfg->numeric_check = 1;
}

/* --- JSON helpers -------------------------------------------------------------------------------- */

void verify_buf_printf(verify_buf *b, const char *fmt, ...) {
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + (size_t)k + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static void vb_str(verify_buf *b, const char *s) {
    verify_buf_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            verify_buf_printf(b, "\\%c", *p);
        else if (*p < 0x20)
            verify_buf_printf(b, "\\u%04x", *p);
        else
            verify_buf_printf(b, "%c", *p);
    }
    verify_buf_printf(b, "\"");
}

char *verify_proof_json(const verify_axioms *ax, const verify_result *res) {
    verify_buf b = {0};
    verify_buf_printf(&b, "{\"status\":\"%s\"", verify_outcome_names[res->outcome]);
    if (res->outcome == VERIFY_PROVED) {
        verify_buf_printf(&b, ",\"time_s\":%.3f,\"axioms\":[", res->time_s);
        for (int32_t i = 0; i < res->n_core; i++) {
            verify_buf_printf(&b, "%s", i ? "," : "");
            vb_str(&b, verify_axiom_name(ax, res->core[i]));
        }
        verify_buf_printf(&b, "]");
    } else {
        if (res->time_s > 0)
            verify_buf_printf(&b, ",\"time_s\":%.3f", res->time_s);
        verify_buf_printf(&b, ",\"reason\":");
        vb_str(&b, res->reason);
    }
    verify_buf_printf(&b, "}");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* --- candidate keys ------------------------------------------------------------------------------ */

typedef struct {
    uint64_t a, b;
} vc_key;

static void vk_put(verify_buf *b, const rules_graph *g) {
    verify_buf_printf(b, "[");
    for (int32_t k = 0; k < g->n_ops; k++) {
        const rules_op *o = &g->ops[k];
        verify_buf_printf(b, "(%s", ops_table[o->op].name);
        for (int32_t i = 0; i < ops_table[o->op].n_params; i++) {
            ops_param_key key = ops_table[o->op].params[i].key;
            if (key == PM_LIST) {
                verify_buf_printf(b, " L");
                for (int32_t j = 0; j < o->p.n_list; j++)
                    verify_buf_printf(b, ",%lld", (long long)o->p.list[j]);
            } else {
                verify_buf_printf(b, " %lld", (long long)o->p.v[key]);
            }
        }
        for (int32_t i = 0; i < o->n_in; i++)
            verify_buf_printf(b, " %c%d.%d", o->in[i].kind == RULES_REF_VAR ? 'v' : 'o', (int)o->in[i].idx, (int)o->in[i].out);
        verify_buf_printf(b, ")");
    }
    verify_buf_printf(b, "]");
}

/* The key of a candidate: everything that decides its outcome, nothing of its provenance. */
static vc_key vk_of(const rules_rule *r, const char *axhash, const char *ophash, int numeric, uint64_t seed,
                    int split_free) {
    verify_buf b = {0};
    verify_buf_printf(&b, "%s|%s|%d|%" PRIu64 "|", axhash, ophash, numeric, seed);
    if (split_free) /* another query: its own key (the default's keys are unchanged) */
        verify_buf_printf(&b, "split_sizes_free|");
    for (int32_t v = 0; v < r->n_vars; v++) {
        verify_buf_printf(&b, "%s(", r->vars[v].name);
        for (int32_t d = 0; d < r->vars[v].shape.rank; d++)
            verify_buf_printf(&b, "%lld,", (long long)r->vars[v].shape.dims[d]);
        verify_buf_printf(&b, ")");
    }
    vk_put(&b, &r->src);
    vk_put(&b, &r->dst);
    for (int32_t i = 0; i < r->n_outputs; i++)
        verify_buf_printf(&b, "<%c%d.%d=%c%d.%d>", r->outputs[i].src.kind == RULES_REF_VAR ? 'v' : 'o', (int)r->outputs[i].src.idx,
                  (int)r->outputs[i].src.out, r->outputs[i].dst.kind == RULES_REF_VAR ? 'v' : 'o',
                  (int)r->outputs[i].dst.idx, (int)r->outputs[i].dst.out);
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        verify_buf_printf(&b, "{%d %d %d %d %lld", (int)c->side, (int)c->op, (int)c->key, (int)c->list_index, (long long)c->value);
        for (int32_t e = 0; e < c->n_eq; e++)
            verify_buf_printf(&b, " %d.%d", (int)c->eq[e].var, (int)c->eq[e].dim);
        verify_buf_printf(&b, "}");
    }
    for (int32_t i = 0; i < r->n_requires; i++)
        verify_buf_printf(&b, "[%d.%d=%lld]", (int)r->requires[i].var, (int)r->requires[i].dim, (long long)r->requires[i].value);
    vc_key k = {0, 0};
    if (!b.oom) {
        k.a = verify_hash64(b.s, b.n, UINT64_C(0x1));
        k.b = verify_hash64(b.s, b.n, UINT64_C(0x9e3779b97f4a7c15));
    }
    free(b.s);
    return k;
}

/* --- the cache ------------------------------------------------------------------------------------ */

typedef struct {
    vc_key key;            /* hash key: two uint64, no padding */
    verify_result res;
    double timeout_s;      /* unknown: the timeout it ran under; -1: timeout-independent */
    UT_hash_handle hh;
} vc_entry;

typedef struct {
    vc_entry *map;
    char **stale;          /* lines of other axiom versions, kept verbatim */
    int32_t n_stale, cap_stale;
} vc_cache;

static void vc_free(vc_cache *c) {
    vc_entry *e, *t;
    HASH_ITER(hh, c->map, e, t) {
        HASH_DEL(c->map, e);
        free(e);
    }
    for (int32_t i = 0; i < c->n_stale; i++)
        free(c->stale[i]);
    free(c->stale);
}

static vc_entry *vc_find(vc_cache *c, vc_key k) {
    vc_entry *e = NULL;
    HASH_FIND(hh, c->map, &k, sizeof k, e);
    return e;
}

static int vc_put(vc_cache *c, vc_key k, const verify_result *res, double timeout_s) {
    vc_entry *e = vc_find(c, k);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e)
            return -1;
        e->key = k;
        HASH_ADD(hh, c->map, key, sizeof e->key, e);
    }
    e->res = *res;
    e->res.cached = 0;
    e->timeout_s = timeout_s;
    return 0;
}

#define VC_HEADER "tasc-verify-cache 1"

/* Load the cache file; a missing file is an empty cache. Entries of other axiom files are kept
 * aside to be written back. -1 with a message on a file that is not a cache. */
static int vc_load(vc_cache *c, const char *path, const verify_axioms *ax, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : base_fail_line(err, errlen, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (lineno == 1) {
            if (strcmp(line, VC_HEADER) != 0) {
                rc = base_fail_line(err, errlen, "%s: not a verification cache (first line '%s')", path, VC_HEADER);
                break;
            }
            continue;
        }
        if (!len)
            continue;
        /* KEY AXHASH OUTCOME TIME TIMEOUT CORE REASON... */
        char key[40], axh[40], out[16], core[4096];
        double t, to;
        int used = 0;
        if (strlen(line) > 8000 ||
            sscanf(line, "%39s %39s %15s %lf %lf %4095s %n", key, axh, out, &t, &to, core, &used) < 6 ||
            strlen(key) != 32) {
            rc = base_fail_line(err, errlen, "%s:%d: malformed cache line", path, lineno);
            break;
        }
        if (strcmp(axh, verify_axioms_hash(ax)) != 0) {
            if (c->n_stale == c->cap_stale) {
                int32_t nc = c->cap_stale ? 2 * c->cap_stale : 64;
                char **ns = realloc(c->stale, (size_t)nc * sizeof *ns);
                if (!ns) {
                    rc = base_fail_line(err, errlen, "%s: out of memory", path);
                    break;
                }
                c->stale = ns;
                c->cap_stale = nc;
            }
            c->stale[c->n_stale] = strdup(line);
            if (!c->stale[c->n_stale]) {
                rc = base_fail_line(err, errlen, "%s: out of memory", path);
                break;
            }
            c->n_stale++;
            continue;
        }
        vc_key k;
        char ha[17], hb[17];
        memcpy(ha, key, 16);
        ha[16] = '\0';
        memcpy(hb, key + 16, 16);
        hb[16] = '\0';
        k.a = strtoull(ha, NULL, 16);
        k.b = strtoull(hb, NULL, 16);
        verify_result res;
        memset(&res, 0, sizeof res);
        int o = -1;
        for (int i = 0; i < VERIFY_OUTCOME_COUNT; i++)
            if (!strcmp(out, verify_outcome_names[i]))
                o = i;
        if (o < 0) {
            rc = base_fail_line(err, errlen, "%s:%d: unknown outcome '%s'", path, lineno, out);
            break;
        }
        res.outcome = (verify_outcome)o;
        res.time_s = t;
        int ok = 1;
        if (strcmp(core, "-") != 0) {
            for (char *tok = strtok(core, ","); tok; tok = strtok(NULL, ",")) {
                int32_t idx = verify_axiom_find(ax, tok);
                if (idx < 0 || res.n_core >= VERIFY_MAX_AXIOMS) {
                    ok = 0;
                    break;
                }
                res.core[res.n_core++] = (int16_t)idx;
            }
        }
        if (!ok)
            continue; /* an axiom of that name no longer exists: prove again */
        snprintf(res.reason, sizeof res.reason, "%s", used > 0 && used <= (int)strlen(line) ? line + used : "");
        if (vc_put(c, k, &res, to) < 0) {
            rc = base_fail_line(err, errlen, "%s: out of memory", path);
            break;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

static int vc_entry_cmp(const void *a, const void *b) {
    const vc_entry *x = *(const vc_entry *const *)a, *y = *(const vc_entry *const *)b;
    if (x->key.a != y->key.a)
        return x->key.a < y->key.a ? -1 : 1;
    if (x->key.b != y->key.b)
        return x->key.b < y->key.b ? -1 : 1;
    return 0;
}

/* Write the cache: sorted by key, so equal caches are equal files. */
static int vc_save(vc_cache *c, const char *path, const verify_axioms *ax, char *err, size_t errlen) {
    size_t n = HASH_COUNT(c->map);
    vc_entry **all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return base_fail_line(err, errlen, "%s: out of memory", path);
    size_t i = 0;
    vc_entry *e, *t;
    HASH_ITER(hh, c->map, e, t) all[i++] = e;
    qsort(all, n, sizeof *all, vc_entry_cmp);
    base_afile af;
    if (base_afile_open(&af, path, err, errlen) < 0) {
        free(all);
        return -1;
    }
    FILE *f = af.f;
    fprintf(f, "%s\n", VC_HEADER);
    for (int32_t s = 0; s < c->n_stale; s++)
        fprintf(f, "%s\n", c->stale[s]);
    for (i = 0; i < n; i++) {
        e = all[i];
        /* the time with the 3 decimals the rule files print (verify_proof_json): one kept to more
         * decimals would be rounded twice on a re-run from the cache, and 0.0014996 s written
         * as 0.001 the first time could come back as 0.0015000 and be written as 0.002 */
        fprintf(f, "%016" PRIx64 "%016" PRIx64 " %s %s %.3f %.3f ", e->key.a, e->key.b, verify_axioms_hash(ax),
                verify_outcome_names[e->res.outcome], e->res.time_s, e->timeout_s);
        if (e->res.n_core == 0)
            fprintf(f, "-");
        for (int32_t k = 0; k < e->res.n_core; k++)
            fprintf(f, "%s%s", k ? "," : "", verify_axiom_name(ax, e->res.core[k]));
        fprintf(f, " ");
        for (const char *p = e->res.reason; *p; p++)
            fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
        fprintf(f, "\n");
    }
    free(all);
    return base_afile_commit(&af, err, errlen);
}

/* --- the run ------------------------------------------------------------------------------------- */

static int vr_is_timeout(const verify_result *r) {
    return r->outcome == VERIFY_UNKNOWN && (strstr(r->reason, "timeout") || strstr(r->reason, "canceled"));
}

int verify_candidates(const verify_axioms *ax, const verify_config *cfg_in, const rules_set *cands,
                      verify_result *results, verify_stats *st, char *err, size_t errlen) {
    verify_config cfg = *cfg_in;
    if (!(cfg.timeout_s > 0))
        return base_fail_line(err, errlen, "timeout must be positive");
    uint64_t seed = cfg.seed ? cfg.seed : UINT64_C(0x7461736376657269);
    double t0 = base_now();
    verify_stats s;
    memset(&s, 0, sizeof s);
    int64_t n = cands->n_rules;
    s.candidates = n;
    vc_cache cache = {0};
    if (cfg.cache_path && vc_load(&cache, cfg.cache_path, ax, err, errlen) < 0) {
        vc_free(&cache);
        return -1;
    }
    vc_key *keys = calloc((size_t)(n ? n : 1), sizeof *keys);
    int64_t *todo = calloc((size_t)(n ? n : 1), sizeof *todo);
    if (!keys || !todo) {
        free(keys);
        free(todo);
        vc_free(&cache);
        return base_fail_line(err, errlen, "out of memory");
    }
    const char *axh = verify_axioms_hash(ax);
    char oph[17];
    snprintf(oph, sizeof oph, "%s", verify_opset_hash());
    int64_t n_todo = 0;
    for (int64_t i = 0; i < n; i++) {
        keys[i] = vk_of(&cands->rules[i], axh, oph, cfg.numeric_check, seed, cfg.split_sizes_free);
        vc_entry *e = cfg.cache_path ? vc_find(&cache, keys[i]) : NULL;
        if (e && (e->res.outcome != VERIFY_UNKNOWN || e->timeout_s < 0 || cfg.timeout_s <= e->timeout_s)) {
            results[i] = e->res;
            results[i].cached = 1;
            s.cached++;
        } else {
            todo[n_todo++] = i;
        }
    }
    int32_t threads = cfg.threads > 0 ? cfg.threads : omp_get_num_procs();
    int64_t n_chunks = (n_todo + VERIFY_CHUNK - 1) / VERIFY_CHUNK;
    if (threads > n_chunks)
        threads = n_chunks > 0 ? (int32_t)n_chunks : 1;
    s.threads = threads;
    int failed = 0;
    char ferr[512] = "";
    int64_t done = 0, cnt[VERIFY_OUTCOME_COUNT] = {0};
    double last_report = 0.0;
    if (n_todo > 0) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int64_t ch = 0; ch < n_chunks; ch++) {
            char lerr[512];
            vz_ctx *z = vz_new(ax, lerr, sizeof lerr);
            if (z) {
                /* the shape search copies the rule with its equal parts: not the free query's instance */
                z->shape_search = cfg.numeric_check && !cfg.split_sizes_free;
                z->free_splits = cfg.split_sizes_free;
            }
            if (!z) {
#pragma omp critical(verify_err)
                {
                    failed = 1;
                    snprintf(ferr, sizeof ferr, "%s", lerr);
                }
            }
            int64_t j_end = (ch + 1) * VERIFY_CHUNK < n_todo ? (ch + 1) * VERIFY_CHUNK : n_todo;
            for (int64_t j = ch * VERIFY_CHUNK; j < j_end; j++) {
                int64_t i = todo[j];
                verify_result *res = &results[i];
                memset(res, 0, sizeof *res);
                res->outcome = VERIFY_UNKNOWN;
                if (!z) {
                    snprintf(res->reason, sizeof res->reason, "no Z3 context");
                    continue;
                }
                const rules_rule *r = &cands->rules[i];
                int numeric_done = 0;
                if (cfg.numeric_check) {
                    double rel;
                    char why[VERIFY_REASON_LEN];
                    rules_rule cut; /* free mode: at unequal parts where the rule's shapes allow them */
                    const rules_rule *nr = cfg.split_sizes_free && verify_free_cut(r, &cut) == 0 ? &cut : r;
                    if (verify_eval_rule(nr, seed, VERIFY_NUMERIC_TOL, &rel, why, sizeof why) == 0) {
                        res->outcome = VERIFY_REFUTED;
                        snprintf(res->reason, sizeof res->reason, "%s", why);
                        numeric_done = 1;
                    }
                }
                if (!numeric_done) {
                    vz_prove(z, r, cfg.timeout_s, NULL, res);
                    if (vr_is_timeout(res)) {
                        /* start the next query from a clean solver */
                        char m[256];
                        if (vz_reset(z, m, sizeof m) < 0) {
                            vz_free(z);
                            z = NULL;
#pragma omp critical(verify_err)
                            {
                                failed = 1;
                                snprintf(ferr, sizeof ferr, "%s", m);
                            }
                        }
                    }
                }
#pragma omp critical(verify_progress)
                {
                    done++;
                    cnt[res->outcome]++;
                    double now = base_now();
                    if (cfg.progress && (now - last_report > 0.25 || done == n_todo)) {
                        last_report = now;
                        verify_progress p = {"verify", done + s.cached, n, cnt[0], cnt[1], cnt[2], s.cached, now - t0};
                        cfg.progress(cfg.progress_ctx, &p);
                    }
                }
            }
            vz_free(z);
        }
    }
    int rc = 0;
    if (failed) {
        rc = base_fail_line(err, errlen, "%s", ferr);
    } else {
        for (int64_t i = 0; i < n; i++) {
            const verify_result *r = &results[i];
            if (r->outcome == VERIFY_PROVED)
                s.proved++;
            else if (r->outcome == VERIFY_REFUTED)
                s.refuted++;
            else
                s.unknown++;
            if (vr_is_timeout(r))
                s.timeouts++;
            if (!r->cached) {
                s.solver_s += r->time_s;
                if (r->time_s > s.max_query_s)
                    s.max_query_s = r->time_s;
            }
        }
        if (cfg.cache_path) {
            for (int64_t j = 0; j < n_todo && rc == 0; j++) {
                int64_t i = todo[j];
                const verify_result *r = &results[i];
                /* an unknown that never reached the solver does not depend on the timeout */
                double to = r->outcome == VERIFY_UNKNOWN && r->time_s == 0 ? -1.0 : cfg.timeout_s;
                if (vc_put(&cache, keys[i], r, to) < 0)
                    rc = base_fail_line(err, errlen, "out of memory");
            }
            if (rc == 0)
                rc = vc_save(&cache, cfg.cache_path, ax, err, errlen);
        }
    }
    s.wall_s = base_now() - t0;
    if (st)
        *st = s;
    free(keys);
    free(todo);
    vc_free(&cache);
    return rc;
}

/* A new set with cands' manifest, the verifier's counts and hashes. */
static rules_set *vr_manifest(const verify_axioms *ax, const verify_config *cfg, const rules_set *cands,
                              const verify_stats *s) {
    rules_set *rs = rules_set_manifest_copy(cands);
    if (!rs)
        return NULL;
    free(rs->extra_json); /* replaced below, the candidates' kept inside it */
    rs->extra_json = NULL;
    int bad = 0;
    bad |= rules_set_count(rs, "proved", (uint64_t)s->proved) < 0;
    bad |= rules_set_count(rs, "refuted", (uint64_t)s->refuted) < 0;
    bad |= rules_set_count(rs, "unknown", (uint64_t)s->unknown) < 0;
    verify_buf b = {0};
    verify_buf_printf(&b, "{\"axioms\":\"verifier/axioms.smt2\",\"axioms_hash\":\"%s\",\"opset_hash\":\"%s\",\"z3\":",
              verify_axioms_hash(ax), verify_opset_hash());
    vb_str(&b, Z3_get_full_version());
    verify_buf_printf(&b,
              ",\"timeout_s\":%g,\"model\":\"elementwise operands of equal shape (no broadcasting), matmul and "
              "transpose of matrices, conv2d and pools without dilation or explicit non-zero padding\"",
              cfg->timeout_s);
    if (cands->extra_json)
        verify_buf_printf(&b, ",\"candidates_extra\":%s", cands->extra_json);
    verify_buf_printf(&b, "}");
    rs->extra_json = b.s;
    if (bad || b.oom) {
        rules_set_free(rs);
        return NULL;
    }
    return rs;
}

int verify_run(const verify_axioms *ax, const verify_config *cfg, const rules_set *cands, rules_set **proved,
               rules_set **quarantine, verify_stats *st, char *err, size_t errlen) {
    *proved = NULL;
    if (quarantine)
        *quarantine = NULL;
    verify_result *res = calloc((size_t)(cands->n_rules ? cands->n_rules : 1), sizeof *res);
    if (!res)
        return base_fail_line(err, errlen, "out of memory");
    verify_stats s;
    if (verify_candidates(ax, cfg, cands, res, &s, err, errlen) < 0) {
        free(res);
        return -1;
    }
    rules_set *p = vr_manifest(ax, cfg, cands, &s);
    rules_set *q = quarantine ? vr_manifest(ax, cfg, cands, &s) : NULL;
    int rc = 0;
    if (!p || (quarantine && !q))
        rc = base_fail_line(err, errlen, "out of memory");
    for (int32_t i = 0; i < cands->n_rules && rc == 0; i++) {
        rules_set *dst = res[i].outcome == VERIFY_PROVED ? p : q;
        if (!dst)
            continue;
        rules_rule r = cands->rules[i];
        r.proof_json = verify_proof_json(ax, &res[i]);
        if (!r.proof_json || rules_set_add(dst, &r) < 0)
            rc = base_fail_line(err, errlen, "out of memory");
        free(r.proof_json);
    }
    free(res);
    if (rc < 0) {
        rules_set_free(p);
        rules_set_free(q);
        return -1;
    }
    if (cfg->mark_free_splits) { /* the proofs' text as verify_proof_json made it: no re-parsing */
        rules_set *m = NULL;
        verify_config fc = *cfg;
        fc.mark_free_splits = 0;
        if (verify_mark_free_splits(ax, &fc, p, &m, NULL, err, errlen) < 0) {
            rules_set_free(p);
            rules_set_free(q);
            return -1;
        }
        rules_set_free(p);
        p = m;
    }
    if (st)
        *st = s;
    *proved = p;
    if (quarantine)
        *quarantine = q;
    return 0;
}
