/* matmul_autotune.cu: the tuning tables mm_choose reads, and first-use tuning.
 *
 * Tables (matmul.h, mm_choose): the one named by mm_table_use, else the shipped tables, the user
 * table and the per-device cache, merged in that order (a later file's entry replaces an earlier
 * one of the same device field and shape); a lookup takes this device's key before a name-only
 * line. A problem none of them holds is tuned on the spot when first-use tuning is on
 * (mm_autotune_set; not under TASC_NO_AUTOTUNE): mm_tune_problem_budget within about
 * MM_AUTOTUNE_BUDGET_S seconds, one progress line on stderr, and the choice added to the
 * per-device cache (mm_table_update: locked, merged, atomic). Otherwise the heuristic runs it; the
 * heuristic's choice is kept per process, so a problem costs one heuristic evaluation and one
 * TASC_MM_MISSES line. Not thread-safe, like the rest of the module.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "matmul_impl.h"

static const mm_cfg_names mm_build_names = {mm_config_find, mm_config_name};

mm_table *mm_table_new(void) { return mm_table_new_names(&mm_build_names); }

static mm_table_key mm_key_of(const mm_problem *p) {
    mm_table_key k = {p->m, p->n, p->k, p->batch, mm_epi_index(p->has_bias, (int32_t)p->act)};
    return k;
}

int mm_table_lookup(const mm_table *t, const char *device, const mm_problem *p, mm_choice *c, double *us) {
    mm_table_key k = mm_key_of(p);
    return mm_table_find(t, device, &k, c, us);
}

void mm_table_put(mm_table *t, const char *device, const mm_problem *p, const mm_choice *c, double us) {
    mm_table_key k = mm_key_of(p);
    mm_table_set(t, device, &k, c, us);
}

const char *mm_table_default_path(char *buf, size_t len) {
    const char *env = getenv("TASC_TUNE_TABLE");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else
        mm_table_cache_path(mm_device_key(), buf, len);
    return buf;
}

/* ---- the tables mm_choose reads --------------------------------------------------------------- */

static mm_table *mm_sel;        /* every table read, merged */
static mm_table *mm_memo;       /* problems no table holds, at the heuristic's choice (device ""); us:
                                   1 when tuning it failed (not tried again), else 0 */
static bool mm_sel_loaded;
static char mm_sel_path[4096];  /* mm_table_use's table, or "" */

void mm_table_use(const char *path) {
    snprintf(mm_sel_path, sizeof mm_sel_path, "%s", path ? path : "");
    mm_table_free(mm_sel);
    mm_table_free(mm_memo);
    mm_sel = mm_memo = NULL;
    mm_sel_loaded = false;
}

/* Merges the table file at path into mm_sel; a bad file is reported and skipped. */
static void mm_sel_add(const char *path, int missing_ok, const char *what) {
    char msg[4300];
    mm_table *t = mm_table_new();
    if (mm_table_load(t, path, missing_ok, msg, sizeof msg))
        fprintf(stderr, "tasc: %s (%s)\n", msg, what);
    else
        mm_table_merge(mm_sel, t);
    mm_table_free(t);
}

static void mm_sel_load(void) {
    mm_sel = mm_table_new();
    mm_memo = mm_table_new();
    mm_sel_loaded = true;
    if (mm_sel_path[0]) {
        mm_sel_add(mm_sel_path, 1, "tuning table ignored; using the built-in heuristic");
        return;
    }
    static char paths[16][4096];
    int n = mm_table_shipped(paths, 16);
    for (int i = 0; i < n; i++)
        mm_sel_add(paths[i], 0, "shipped tuning table ignored");
    char path[4096];
    if (mm_table_user_path(path, sizeof path)[0])
        mm_sel_add(path, 1, "tuning table ignored");
    mm_sel_add(mm_table_cache_path(mm_device_key(), path, sizeof path), 1, "tuning cache ignored");
}

/* ---- first-use tuning ------------------------------------------------------------------------- */

static int mm_at_on;
static mm_autotune_stats mm_at;
static mm_table *mm_session; /* problems counted in mm_at.untuned since mm_autotune_set */

void mm_autotune_set(int on) {
    mm_at_on = on;
    memset(&mm_at, 0, sizeof mm_at);
    mm_table_free(mm_session);
    mm_session = NULL;
}

void mm_autotune_get_stats(mm_autotune_stats *st) { *st = mm_at; }

static void mm_shape(const mm_problem *p, char *buf, size_t len) {
    snprintf(buf, len, "%lldx%lldx%lldx%lld %s", (long long)p->m, (long long)p->n, (long long)p->k,
             (long long)p->batch, mm_epilogue_name(p->has_bias, p->act));
}

/* Tunes p, uses and caches the winner: 1 and *c, or 0 (reported) when no candidate ran. */
static int mm_at_tune(const mm_problem *p, mm_choice *c) {
    char why[4300], name[96], shape[128], path[4096];
    const double t0 = base_now();
    double us = 0;
    mm_shape(p, shape, sizeof shape);
    CUDA_CHECK(cudaDeviceSynchronize()); /* the tuner may move the split-K workspace */
    if (mm_tune_problem_budget(p, 15, MM_AUTOTUNE_BUDGET_S, c, &us, NULL, why, sizeof why)) {
        fprintf(stderr, "tasc: tuning matmul %s: %s (the heuristic runs it)\n", shape, why);
        mm_at.failed++;
        return 0;
    }
    mm_table_put(mm_sel, mm_device_key(), p, c, us);
    mm_table *add = mm_table_new();
    mm_table_put(add, mm_device_key(), p, c, us);
    if (mm_table_update(mm_table_cache_path(mm_device_key(), path, sizeof path), add, why, sizeof why)) {
        fprintf(stderr, "tasc: %s (the tuned choice is kept for this process only)\n", why);
        mm_at.failed++;
    }
    mm_table_free(add);
    mm_workspace_release(); /* hold what the run's own choices need, allocated as a run without tuning does */
    const double dt = base_now() - t0;
    mm_at.tuned++;
    mm_at.tune_s += dt;
    fprintf(stderr, "tasc: tuned matmul %s: %s split %d group %d, %.2f us (%.2f s)\n", shape,
            mm_config_name(c->cfg, name, sizeof name), c->split_k, c->group_m, us, dt);
    return 1;
}

/* Counts p once per session as run by the heuristic; appends it to TASC_MM_MISSES once per process. */
static void mm_note_untuned(const mm_problem *p, int first_in_process) {
    mm_choice none = {0, 1, 1};
    if (!mm_session)
        mm_session = mm_table_new();
    if (!mm_table_lookup(mm_session, "", p, &none, NULL)) {
        mm_table_put(mm_session, "", p, &none, 0);
        mm_at.untuned++;
    }
    const char *misses = getenv("TASC_MM_MISSES");
    FILE *f = first_in_process && misses && *misses ? fopen(misses, "a") : NULL;
    if (f) { /* a log for tuning; failing to write it changes nothing else */
        fprintf(f, "%lldx%lldx%lldx%lld %s\n", (long long)p->m, (long long)p->n, (long long)p->k,
                (long long)p->batch, mm_epilogue_name(p->has_bias, p->act));
        fclose(f);
    }
}

int mm_select(const mm_problem *p, mm_choice *c) {
    if (!mm_sel_loaded)
        mm_sel_load();
    if (mm_table_lookup(mm_sel, mm_device_key(), p, c, NULL) && !mm_choice_check(p, c, NULL, 0))
        return 1;
    double failed = 0;
    const int seen = mm_table_lookup(mm_memo, "", p, c, &failed);
    if (mm_at_on && !mm_autotune_refused() && !(seen && failed > 0)) {
        if (mm_at_tune(p, c))
            return 1;
        mm_choose_heuristic(p, c);
        mm_table_put(mm_memo, "", p, c, 1.0);
        mm_note_untuned(p, !seen);
        return 0;
    }
    if (!seen) {
        mm_choose_heuristic(p, c);
        mm_table_put(mm_memo, "", p, c, 0.0);
    }
    mm_note_untuned(p, !seen);
    return 0;
}
