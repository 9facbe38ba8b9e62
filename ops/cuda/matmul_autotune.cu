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
 * Precision 3xtf32 (issue 17) reads the same tables under its own keys ("EPILOGUE@3xtf32" lines,
 * matmul_table.h) and tunes its misses the same way over every FP32-accurate kernel (3xTF32 on
 * wgmma or mma.sync, and the FP32 kernel: mm_select_3xtf32); its built-in rule is
 * mm_3xtf32_default below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "matmul_impl.h"

/* The 3xTF32 kernels' configurations by kind (matmul_table.h, mm_cfg_names). */
static int32_t mm_tf_find(int32_t kind, const char *name) {
    return kind == MM_KERNEL_MMA ? mm_3xtf32_config_find(name)
           : kind == MM_KERNEL_WGMMA ? mm_3xtf32_wgmma_config_find(name) : -1;
}

static const char *mm_tf_name(int32_t kind, int32_t i, char *buf, size_t len) {
    snprintf(buf, len, "%s", kind == MM_KERNEL_MMA ? mm_3xtf32_config_name(i)
                             : kind == MM_KERNEL_WGMMA ? mm_3xtf32_wgmma_config_name(i) : "?");
    return buf;
}

static const mm_cfg_names mm_build_names = {mm_config_find, mm_config_name, mm_tf_find, mm_tf_name};

mm_table *mm_table_new(void) { return mm_table_new_names(&mm_build_names); }

const char *mm_choice_name(const mm_choice *c, char *buf, size_t len) {
    return mm_choice_name_with(&mm_build_names, c, buf, len);
}

static mm_table_key mm_key_of(mm_precision prec, const mm_problem *p) {
    mm_table_key k = {p->m, p->n, p->k, p->batch, mm_epi_index(p->has_bias, (int32_t)p->act), (int32_t)prec};
    return k;
}

int mm_table_lookup_at(const mm_table *t, const char *device, mm_precision prec, const mm_problem *p, mm_choice *c,
                       double *us) {
    mm_table_key k = mm_key_of(prec, p);
    return mm_table_find(t, device, &k, c, us);
}

void mm_table_put_at(mm_table *t, const char *device, mm_precision prec, const mm_problem *p, const mm_choice *c,
                     double us) {
    mm_table_key k = mm_key_of(prec, p);
    mm_table_set(t, device, &k, c, us);
}

int mm_table_lookup(const mm_table *t, const char *device, const mm_problem *p, mm_choice *c, double *us) {
    return mm_table_lookup_at(t, device, MM_PREC_FP32, p, c, us);
}

void mm_table_put(mm_table *t, const char *device, const mm_problem *p, const mm_choice *c, double us) {
    mm_table_put_at(t, device, MM_PREC_FP32, p, c, us);
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

/* "MxNxKxB EPILOGUE", "@3xtf32" after the epilogue at that precision (the table's field). */
static void mm_shape(mm_precision prec, const mm_problem *p, char *buf, size_t len) {
    snprintf(buf, len, "%lldx%lldx%lldx%lld %s%s", (long long)p->m, (long long)p->n, (long long)p->k,
             (long long)p->batch, mm_epilogue_name(p->has_bias, p->act), prec == MM_PREC_3XTF32 ? "@3xtf32" : "");
}

/* Tunes p at prec (a call with the operands of mask presplit pre-split), uses and caches the
 * winner: 1 and *c, or 0 (reported) when no candidate ran. */
static int mm_at_tune(mm_precision prec, const mm_problem *p, int presplit, mm_choice *c) {
    char why[4300], name[128], shape[160], path[4096];
    const double t0 = base_now();
    double us = 0;
    mm_shape(prec, p, shape, sizeof shape);
    CUDA_CHECK(cudaDeviceSynchronize()); /* the tuner may move the split-K workspace */
    const int rc = prec == MM_PREC_3XTF32
                       ? mm_tune_3xtf32(p, 15, MM_AUTOTUNE_BUDGET_S, presplit, c, &us, NULL, why, sizeof why)
                       : mm_tune_problem_budget(p, 15, MM_AUTOTUNE_BUDGET_S, c, &us, NULL, why, sizeof why);
    if (rc) {
        fprintf(stderr, "tasc: tuning matmul %s: %s (the heuristic runs it)\n", shape, why);
        mm_at.failed++;
        return 0;
    }
    mm_table_put_at(mm_sel, mm_device_key(), prec, p, c, us);
    mm_table *add = mm_table_new();
    mm_table_put_at(add, mm_device_key(), prec, p, c, us);
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
            mm_choice_name(c, name, sizeof name), c->split_k, c->group_m, us, dt);
    return 1;
}

/* Counts p once per session as run by the heuristic; appends it to TASC_MM_MISSES once per process
 * ("MxNxKxB EPILOGUE", and " 3xtf32" for a 3xtf32 key: `tasc kernels tune --precision 3xtf32`). */
static void mm_note_untuned(mm_precision prec, const mm_problem *p, int first_in_process) {
    mm_choice none = {0, 1, 1, 0};
    if (!mm_session)
        mm_session = mm_table_new();
    if (!mm_table_lookup_at(mm_session, "", prec, p, &none, NULL)) {
        mm_table_put_at(mm_session, "", prec, p, &none, 0);
        mm_at.untuned++;
    }
    const char *misses = getenv("TASC_MM_MISSES");
    FILE *f = first_in_process && misses && *misses ? fopen(misses, "a") : NULL;
    if (f) { /* a log for tuning; failing to write it changes nothing else */
        fprintf(f, "%lldx%lldx%lldx%lld %s%s\n", (long long)p->m, (long long)p->n, (long long)p->k,
                (long long)p->batch, mm_epilogue_name(p->has_bias, p->act), prec == MM_PREC_3XTF32 ? " 3xtf32" : "");
        fclose(f);
    }
}

/* The built-in choice at prec: the FP32 heuristic, or the 3xtf32 rule for the call. */
static void mm_default_at(mm_precision prec, const mm_problem *p, int presplit, mm_choice *c) {
    if (prec == MM_PREC_3XTF32)
        mm_3xtf32_default(p, presplit, c);
    else
        mm_choose_heuristic(p, c);
}

/* mm_select at prec. The memo holds the built-in choice of a problem no table holds (one heuristic
 * evaluation, one TASC_MM_MISSES line); at 3xtf32 the rule depends on the call's pre-split
 * operands, so it is evaluated again (a few comparisons). */
static int mm_select_at(mm_precision prec, const mm_problem *p, int presplit, mm_choice *c) {
    if (!mm_sel_loaded)
        mm_sel_load();
    if (mm_table_lookup_at(mm_sel, mm_device_key(), prec, p, c, NULL) && !mm_choice_check(p, c, NULL, 0))
        return 1;
    double failed = 0;
    const int seen = mm_table_lookup_at(mm_memo, "", prec, p, c, &failed);
    if (mm_at_on && !mm_autotune_refused() && !(seen && failed > 0)) {
        if (mm_at_tune(prec, p, presplit, c))
            return 1;
        mm_default_at(prec, p, presplit, c);
        mm_table_put_at(mm_memo, "", prec, p, c, 1.0);
        mm_note_untuned(prec, p, !seen);
        return 0;
    }
    if (!seen || prec == MM_PREC_3XTF32) {
        mm_default_at(prec, p, presplit, c);
        if (!seen)
            mm_table_put_at(mm_memo, "", prec, p, c, 0.0);
    }
    mm_note_untuned(prec, p, !seen);
    return 0;
}

int mm_select(const mm_problem *p, mm_choice *c) { return mm_select_at(MM_PREC_FP32, p, 0, c); }

int mm_select_3xtf32(const mm_problem *p, int presplit, mm_choice *c) {
    if (mm_3xtf32_wgmma_get() != MM_WGMMA_AUTO) { /* the path forced on or off: tests and probes */
        mm_3xtf32_default(p, presplit, c);
        return 0;
    }
    return mm_select_at(MM_PREC_3XTF32, p, presplit, c);
}

void mm_select_fp32_quiet(const mm_problem *p, mm_choice *c) {
    if (!mm_sel_loaded)
        mm_sel_load();
    if (mm_table_lookup_at(mm_sel, mm_device_key(), MM_PREC_FP32, p, c, NULL) && !mm_choice_check(p, c, NULL, 0))
        return;
    mm_choose_heuristic(p, c);
}

int mm_3xtf32_table_kernel(const mm_problem *p) {
    mm_choice c;
    if (!mm_sel_loaded)
        mm_sel_load();
    if (mm_table_lookup_at(mm_sel, mm_device_key(), MM_PREC_3XTF32, p, &c, NULL) && !mm_choice_check(p, &c, NULL, 0))
        return c.kernel;
    return -1;
}

/* The rule without an entry. The wgmma path where its own rule takes the call (as before tables
 * had 3xtf32 entries). Else the mma.sync heuristic, except where it takes its "small"
 * configuration (64x32 tiles, two k-slices: problems whose 64x64 tiles do not fill the SMs): there
 * the FP32 kernel (its table entry, else its heuristic) is faster on every shape measured, all on
 * an H100: bench/results-h100-de9fa4f/r1/k 128x768x768 10.31 TFLOP/s against 5.99, 128x3072x768
 * 21.87 against 18.72; bench/matmul/3xtf32-h100.md 128x768x768 10.96 / 6.69, 128x3072x768 23.59 /
 * 21.46, 128x768x3072 23.02 / 18.41, 12x(128x64x128) 3.30 / 2.59, 12x(128x128x64) 2.81 / 2.84
 * (even). Both are FP32-accurate; first-use tuning and `tasc kernels tune --precision 3xtf32`
 * time both where a table is wanted. */
void mm_3xtf32_default(const mm_problem *p, int presplit, mm_choice *c) {
    static int small = -1;
    if (small < 0 && (small = mm_3xtf32_config_find("64x32x32_w32x32_s4_b2_k2")) < 0)
        base_die("3xtf32 rule: configuration missing from the list"); /* a bug: matmul_3xtf32.cu names it */
    int wsplit;
    const int w = mm_3xtf32_wgmma_pick(p, presplit, &wsplit);
    if (w >= 0) {
        *c = mm_choice{w, wsplit, 8, MM_KERNEL_WGMMA};
        return;
    }
    int cfg, split, group;
    mm_3xtf32_choose(p, &cfg, &split, &group);
    if (cfg == small) {
        mm_select_fp32_quiet(p, c);
        return;
    }
    *c = mm_choice{cfg, split, group, MM_KERNEL_MMA};
}
