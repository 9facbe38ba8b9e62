/* api_rules.c: rule sets in the public API -- load and save (rules/rules.h), generation (the
 * enumerator, enumerator/gen.h) and verification with Z3 (verifier/verify.h), as `tasc generate`
 * and `tasc verify` do them, without their progress bars and summaries.
 *
 * Default files (the shipped rule set, the axioms) are looked up in the environment first, then
 * in the source tree the library was built from (TASC_SOURCE_DIR, set by CMake).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_impl.h"
#include "gen.h"
#include "verify.h"

#ifndef TASC_SOURCE_DIR
#define TASC_SOURCE_DIR ""
#endif
#define API_RULES_FILE "verified-4.json" /* the shipped rule set (rules/MANIFEST) */

static const char api_source_dir[] = TASC_SOURCE_DIR; /* "" when the build did not say */

static tasc_rules *api_rules_wrap(rules_set *rs) {
    tasc_rules *r = base_xcalloc(1, sizeof *r);
    r->rs = rs;
    return r;
}

TASC_API tasc_status tasc_rules_load(const char *path, tasc_rules **out) {
    if (!path || !*path || !out)
        return api_fail(TASC_ERR_USAGE, "tasc_rules_load: no path, or out is NULL");
    char err[API_ERR_LEN];
    rules_set *rs = rules_load(path, err, sizeof err);
    if (!rs)
        return api_fail(TASC_ERR_INPUT, "%s", err);
    *out = api_rules_wrap(rs);
    return TASC_OK;
}

TASC_API tasc_status tasc_rules_save(const tasc_rules *r, const char *path) {
    if (!r || !path || !*path)
        return api_fail(TASC_ERR_USAGE, "tasc_rules_save: NULL rules or no path");
    char err[API_ERR_LEN];
    if (rules_save(r->rs, path, err, sizeof err) < 0)
        return api_fail(TASC_ERR_INPUT, "%s", err);
    return TASC_OK;
}

TASC_API void tasc_rules_free(tasc_rules *r) {
    if (!r)
        return;
    rules_set_free(r->rs);
    free(r);
}

TASC_API int32_t tasc_rules_count(const tasc_rules *r) { return r ? r->rs->n_rules : 0; }

TASC_API tasc_status tasc_default_rules_path(char *buf, size_t len) {
    if (!buf || !len)
        return api_fail(TASC_ERR_USAGE, "tasc_default_rules_path: no buffer");
    const char *env = getenv("TASC_RULES");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (api_source_dir[0])
        snprintf(buf, len, "%s/rules/%s", api_source_dir, API_RULES_FILE);
    else
        return api_fail(TASC_ERR_RESOURCE, "the shipped rule file %s is unknown to this build: set TASC_RULES",
                        API_RULES_FILE);
    if (access(buf, R_OK) != 0)
        return api_fail(TASC_ERR_RESOURCE, "the rule file %s is missing (set TASC_RULES)", buf);
    return TASC_OK;
}

TASC_API void tasc_generate_opts_default(tasc_generate_opts *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->max_ops = 3;
}

TASC_API tasc_status tasc_rules_generate(const tasc_generate_opts *o, tasc_rules **out, tasc_generate_stats *st) {
    if (!out)
        return api_fail(TASC_ERR_USAGE, "tasc_rules_generate: out is NULL");
    tasc_generate_opts def;
    if (!o) {
        tasc_generate_opts_default(&def);
        o = &def;
    }
    if (o->max_ops < 1 || o->max_ops > GEN_MAX_OPS || o->threads < 0)
        return api_fail(TASC_ERR_USAGE, "max_ops %d (1..%d) or threads %d (>= 0) out of range", (int)o->max_ops,
                        GEN_MAX_OPS, (int)o->threads);
    gen_config cfg;
    char err[API_ERR_LEN];
    gen_config_default(&cfg);
    if (o->ops && gen_parse_ops(&cfg, o->ops, err, sizeof err) < 0)
        return api_fail(TASC_ERR_USAGE, "%s", err);
    cfg.max_ops = o->max_ops;
    cfg.threads = o->threads;
    rules_set *rs = NULL;
    gen_stats gs;
    if (gen_run(&cfg, &rs, &gs, err, sizeof err) < 0)
        return api_fail(TASC_ERR_INPUT, "%s", err);
    free(rs->tool);
    rs->tool = base_xstrdup("tasc " TASC_VERSION_STRING);
    if (st) {
        st->graphs = gs.graphs;
        st->fingerprints = gs.fingerprints;
        st->pairs = gs.pairs;
        st->rules = (uint64_t)rs->n_rules;
        st->seconds = gs.t_total_s;
    }
    *out = api_rules_wrap(rs);
    return TASC_OK;
}

TASC_API void tasc_verify_opts_default(tasc_verify_opts *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->timeout_s = VERIFY_DEFAULT_TIMEOUT_S;
    o->numeric_check = 1;
}

/* The axiom file: o->axioms, else verify_axioms_default_path, else the source tree's. */
static tasc_status api_axioms(const tasc_verify_opts *o, verify_axioms **ax) {
    char buf[4096], err[API_ERR_LEN];
    const char *path = o->axioms;
    if (!path && !(path = verify_axioms_default_path(buf, sizeof buf)) && api_source_dir[0]) {
        snprintf(buf, sizeof buf, "%s/verifier/axioms.smt2", api_source_dir);
        path = access(buf, R_OK) == 0 ? buf : NULL;
    }
    if (!path)
        return api_fail(TASC_ERR_RESOURCE, "the axiom file is missing (set TASC_AXIOMS)");
    if (!(*ax = verify_axioms_load(path, err, sizeof err)))
        return api_fail(access(path, R_OK) == 0 ? TASC_ERR_INPUT : TASC_ERR_RESOURCE, "%s", err);
    return TASC_OK;
}

TASC_API tasc_status tasc_rules_verify(const tasc_rules *candidates, const tasc_verify_opts *o, tasc_rules **proved,
                                       tasc_rules **quarantine, tasc_verify_stats *st) {
    if (!candidates || !proved)
        return api_fail(TASC_ERR_USAGE, "tasc_rules_verify: NULL candidates or proved");
    tasc_verify_opts def;
    if (!o) {
        tasc_verify_opts_default(&def);
        o = &def;
    }
    if (!(o->timeout_s > 0) || o->threads < 0)
        return api_fail(TASC_ERR_USAGE, "timeout_s %g (> 0) or threads %d (>= 0) out of range", o->timeout_s,
                        (int)o->threads);
    verify_axioms *ax = NULL;
    tasc_status s = api_axioms(o, &ax);
    if (s != TASC_OK)
        return s;
    verify_config cfg;
    verify_config_default(&cfg);
    cfg.timeout_s = o->timeout_s;
    cfg.threads = o->threads;
    cfg.numeric_check = o->numeric_check;
    cfg.cache_path = o->cache;
    rules_set *p = NULL, *q = NULL;
    verify_stats vs;
    char err[API_ERR_LEN];
    if (verify_run(ax, &cfg, candidates->rs, &p, &q, &vs, err, sizeof err) < 0) {
        verify_axioms_free(ax);
        return api_fail(TASC_ERR_INPUT, "%s", err);
    }
    verify_axioms_free(ax);
    if (st) {
        st->candidates = vs.candidates;
        st->proved = vs.proved;
        st->refuted = vs.refuted;
        st->unknown = vs.unknown;
        st->cached = vs.cached;
        st->seconds = vs.wall_s;
    }
    *proved = api_rules_wrap(p);
    if (quarantine)
        *quarantine = api_rules_wrap(q);
    else
        rules_set_free(q);
    return TASC_OK;
}
