/* api_optimize.c: `tasc optimize` as a library call -- the cost model, search_optimize (greedy
 * built-in rewrites, folding, the backtracking search with the rule set), then the numerical
 * check of the result against the original on the CPU executor, as the CLI does it (same seeds,
 * same tolerance, same refusal when it fails).
 *
 * The result owns the optimized graph and copies of the applied rewrites' names (a rule's id
 * would otherwise point into a rule set the caller may free first).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "cost.h"
#include "exec.h"

#ifdef TASC_HAVE_CUDA
#include "rt.h"
#include "rt_cost.h"
#endif

TASC_API void tasc_opt_opts_default(tasc_opt_opts *o) {
    if (!o)
        return;
    search_opts so;
    search_opts_default(&so);
    memset(o, 0, sizeof *o);
    o->builtins = "all";
    o->search = "backtrack";
    o->alpha = so.alpha;
    o->budget = so.budget;
    o->time_limit_s = so.time_limit_s;
    o->cost = "analytic";
    o->check = 1;
    o->check_seeds = 3;
    o->check_tol = 1e-4;
}

/* The options' ranges, as the CLI's option table has them. */
static tasc_status api_opt_check(const tasc_opt_opts *o) {
    if (o->builtins && strcmp(o->builtins, "all") && strcmp(o->builtins, "minimal"))
        return api_fail(TASC_ERR_USAGE, "builtins: unknown value '%s' (all or minimal)", o->builtins);
    if (o->search && strcmp(o->search, "backtrack"))
        return api_fail(TASC_ERR_USAGE, "search: unknown value '%s' (available: backtrack)", o->search);
    if (o->cost && strcmp(o->cost, "analytic") && strcmp(o->cost, "measured"))
        return api_fail(TASC_ERR_USAGE, "cost: unknown value '%s' (analytic or measured)", o->cost);
    if (!(o->alpha >= 1.0 && o->alpha <= 10.0))
        return api_fail(TASC_ERR_USAGE, "alpha: %g out of range (1..10)", o->alpha);
    if (o->budget < 0 || o->budget > INT64_C(1000000000))
        return api_fail(TASC_ERR_USAGE, "budget: %lld out of range (0..1000000000)", (long long)o->budget);
    if (!(o->time_limit_s >= 0.0 && o->time_limit_s <= 1e6))
        return api_fail(TASC_ERR_USAGE, "time_limit: %g out of range (0..1e6 seconds; 0: none)", o->time_limit_s);
    if (o->check && (o->check_seeds < 1 || o->check_seeds > 100 || !(o->check_tol >= 0.0 && o->check_tol <= 1.0)))
        return api_fail(TASC_ERR_USAGE, "check: seeds %d (1..100) or tolerance %g (0..1) out of range",
                        (int)o->check_seeds, o->check_tol);
    if (o->n_cost_set < 0 || (o->n_cost_set > 0 && !o->cost_set))
        return api_fail(TASC_ERR_USAGE, "cost_set: %d entries without the array", (int)o->n_cost_set);
    return TASC_OK;
}

#ifdef TASC_HAVE_CUDA
static void api_cost_not_saved(const char *why, void *arg) { fprintf(stderr, "tasc: cost cache not saved: %s\n", why); }
#endif

/* The cost model the options name into *cm. */
static tasc_status api_cost_model(const tasc_opt_opts *o, cost_model **cm) {
    if (!o->cost || !strcmp(o->cost, "analytic")) {
        cost_analytic_config cfg;
        char why[512];
        cost_analytic_defaults(&cfg);
        for (int32_t i = 0; i < o->n_cost_set; i++)
            if (!o->cost_set[i] || cost_analytic_set(&cfg, o->cost_set[i], why, sizeof why) < 0)
                return api_fail(TASC_ERR_USAGE, "cost_set: %s", o->cost_set[i] ? why : "NULL entry");
        *cm = cost_analytic_new(&cfg);
        return TASC_OK;
    }
#ifdef TASC_HAVE_CUDA
    char err[API_ERR_LEN];
    if (!rt_available(err, sizeof err))
        return api_fail(TASC_ERR_RESOURCE, "cost 'measured' needs a GPU: %s", err);
    if (!(*cm = rt_cost_model_new(NULL, api_cost_not_saved, NULL, err, sizeof err)))
        return api_fail(TASC_ERR_INPUT, "%s", err);
    return TASC_OK;
#else
    return api_fail(TASC_ERR_RESOURCE, "cost 'measured' needs the GPU runtime: this tasc was built without CUDA");
#endif
}

/* The numerical check of r's model against g (exec_check), as `tasc optimize` does it. */
static tasc_status api_opt_verify(const graph *g, tasc_opt_result *r, const tasc_opt_opts *o) {
    char err[API_ERR_LEN];
    double t0 = base_now();
    exec_diff *worst = base_xcalloc((size_t)g->n_outputs + 1, sizeof *worst);
    err[0] = '\0';
    int c = exec_check(g, r->model.g, o->check_seeds, o->check_tol, worst, err, sizeof err);
    r->check_error = 0.0;
    for (int32_t i = 0; i < g->n_outputs; i++)
        r->check_error = worst[i].nan_count || isnan(worst[i].rel_l2) ? INFINITY : fmax(r->check_error, worst[i].rel_l2);
    free(worst);
    r->check_s = base_now() - t0;
    if (c == EXEC_CHECK_BAD_ORIGINAL) /* the model itself cannot run (an unreadable weight file) */
        return api_fail(TASC_ERR_INPUT, "%s: %s", g->name, err);
    if (c < 0)
        return api_fail(TASC_ERR_INTERNAL, "%s", err);
    if (c > 0 && err[0])
        return api_fail(TASC_ERR_INPUT, "numerical check failed: %s: %s", g->name, err);
    if (c > 0)
        return api_fail(TASC_ERR_INPUT, "numerical check failed: the optimized model differs from %s beyond %g",
                        g->name, o->check_tol);
    return TASC_OK;
}

/* Copies of the applied rewrites' names into r, so the result outlives the rule set. */
static void api_opt_own_names(tasc_opt_result *r) {
    r->names = base_xcalloc((size_t)r->res.n_applied + 1, sizeof *r->names);
    for (int32_t i = 0; i < r->res.n_applied; i++) {
        r->names[i] = base_xstrdup(r->res.applied[i].name);
        r->res.applied[i].name = r->names[i];
    }
}

TASC_API tasc_status tasc_optimize(const tasc_model *m, const tasc_opt_opts *o, tasc_opt_result **out) {
    if (!m || !out)
        return api_fail(TASC_ERR_USAGE, "tasc_optimize: NULL model or out");
    tasc_opt_opts def;
    if (!o) {
        tasc_opt_opts_default(&def);
        o = &def;
    }
    cost_model *cm = NULL;
    tasc_status s = api_opt_check(o);
    if (s == TASC_OK)
        s = api_cost_model(o, &cm);
    if (s != TASC_OK)
        return s;
    search_opts so;
    search_opts_default(&so);
    search_opts_builtins(&so, o->builtins && !strcmp(o->builtins, "minimal") ? SEARCH_BUILTINS_MINIMAL
                                                                             : SEARCH_BUILTINS_ALL);
    so.alpha = o->alpha;
    so.budget = o->budget;
    so.time_limit_s = o->time_limit_s;
    so.progress = o->progress ? stderr : NULL;
    tasc_opt_result *r = base_xcalloc(1, sizeof *r);
    char err[API_ERR_LEN];
    if (search_optimize(m->g, o->rules ? o->rules->rs : NULL, cm, &so, &r->model.g, &r->res, err, sizeof err) < 0)
        s = api_fail(TASC_ERR_INPUT, "%s: %s", m->g->name, err);
    cost_model_free(cm);
    if (s == TASC_OK)
        api_opt_own_names(r);
    r->check_error = -1.0;
    if (s == TASC_OK && o->check)
        s = api_opt_verify(m->g, r, o);
    if (s != TASC_OK) {
        tasc_opt_result_free(r);
        return s;
    }
    *out = r;
    return TASC_OK;
}

TASC_API void tasc_opt_result_free(tasc_opt_result *r) {
    if (!r)
        return;
    for (int32_t i = 0; r->names && i < r->res.n_applied; i++)
        free(r->names[i]);
    free(r->names);
    search_result_free(&r->res);
    graph_free(r->model.g);
    free(r);
}

TASC_API tasc_status tasc_opt_result_stats(const tasc_opt_result *r, tasc_opt_stats *st) {
    if (!r || !st)
        return api_fail(TASC_ERR_USAGE, "tasc_opt_result_stats: NULL argument");
    const search_result *res = &r->res;
    memset(st, 0, sizeof *st);
    st->cost_before_us = res->cost_before;
    st->cost_after_us = res->cost_after;
    st->nodes_before = res->nodes_before;
    st->nodes_after = res->nodes_after;
    for (int32_t i = 0; i < res->n_applied; i++)
        st->rewrites += res->applied[i].count;
    st->expanded = res->expanded;
    st->candidates = res->candidates;
    st->queued = res->queued;
    st->time_limited = res->time_limited;
    st->folded = res->folded;
    st->search_s = res->search_seconds;
    st->optimize_s = res->seconds;
    st->check_s = r->check_s;
    st->check_error = r->check_error;
    return TASC_OK;
}

TASC_API const tasc_model *tasc_opt_result_model(const tasc_opt_result *r) { return r ? &r->model : NULL; }

TASC_API int32_t tasc_opt_result_num_rewrites(const tasc_opt_result *r) { return r ? r->res.n_applied : 0; }

TASC_API tasc_status tasc_opt_result_rewrite(const tasc_opt_result *r, int32_t i, const char **name, int *reverse,
                                             int32_t *count) {
    if (!r)
        return api_fail(TASC_ERR_USAGE, "tasc_opt_result_rewrite: the result is NULL");
    if (i < 0 || i >= r->res.n_applied)
        return api_fail(TASC_ERR_USAGE, "rewrite %d: the result has %d", (int)i, (int)r->res.n_applied);
    if (name)
        *name = r->res.applied[i].name;
    if (reverse)
        *reverse = r->res.applied[i].reverse;
    if (count)
        *count = r->res.applied[i].count;
    return TASC_OK;
}
