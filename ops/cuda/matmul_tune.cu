/* matmul_tune.cu: the autotuner of the tuned kernel (the seed notes' "how to choose L and V",
 * answered by search on the device).
 *
 * For one problem: enumerate the legal (tile configuration, split-K) pairs at rasterization group
 * 8, validate each candidate's output against the fp64 reference (rel. error <= 1e-5, output
 * poisoned with NaN first), time it (median of reps runs, L2 flushed before each, cudaEvents),
 * then try other group heights for the winner. Pruning: on problems with at least two waves of
 * 128x128 tiles, tiles smaller than 8192 outputs are skipped; split-K is tried only when the
 * tiles alone do not fill the SMs, with each slice at least two k-steps long and at most 8 blocks
 * per SM in all; cluster configurations (split-K through distributed shared memory) are tried at
 * splits 2 to 16, and at split 1 only when no configuration without the _c runs the same kernel;
 * co-resident configurations (_g) likewise, and also at splits 24 and 32. The caller stores the
 * winner in a tuning table. With a time budget (first-use tuning), the candidates go in the
 * heuristic's order (its own choice first: the result is never slower than it, within noise),
 * with fewer timed runs each when a run is long, until the budget is spent.
 */
#include <math.h>
#include <string.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "base.h"
#include "matmul_impl.h"

#define MM_TUNE_TOL 1e-5

struct mm_tune_bufs {
    float *A, *B, *bias, *C; /* device, sized for the problem's strides */
    double *ref;             /* (batch, M, N) */
};

/* Median time in microseconds, or -1 when the candidate cannot run or is wrong. */
static double mm_time_choice(const mm_problem *p, const mm_choice *c, const mm_tune_bufs &b, int reps,
                             double *rel_err, char *why, size_t whylen) {
    const int64_t c_elems = mm_span(p->batch, p->stride_c, p->m * p->n);
    if (mm_choice_check(p, c, why, whylen))
        return -1;
    CUDA_CHECK(cudaMemset(b.C, 0xff, (size_t)c_elems * sizeof(float))); /* NaN */
    if (mm_run_choice(p, c, b.A, b.B, b.bias, b.C, 0, why, whylen))
        return -1;
    *rel_err = mm_rel_error(b.C, b.ref, p->batch * p->m * p->n, 0);
    if (!(*rel_err <= MM_TUNE_TOL)) {
        snprintf(why, whylen, "wrong result: relative error %.3g", *rel_err);
        return -1;
    }
    mm_run_choice(p, c, b.A, b.B, b.bias, b.C, 0, NULL, 0); /* warm-up; checked above */
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev)
        CUDA_CHECK(cudaEventCreate(&e));
    for (int r = 0; r < reps; r++) {
        mm_l2_flush(0);
        CUDA_CHECK(cudaEventRecord(ev[2 * r], 0));
        mm_run_choice(p, c, b.A, b.B, b.bias, b.C, 0, NULL, 0);
        CUDA_CHECK(cudaEventRecord(ev[2 * r + 1], 0));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(reps);
    for (int r = 0; r < reps; r++)
        CUDA_CHECK(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
    for (auto &e : ev)
        CUDA_CHECK(cudaEventDestroy(e));
    return 1000.0 * mm_median(ms.data(), reps);
}

/* Device buffers for p filled with the tuner's inputs, and the fp64 reference. */
static void mm_tune_alloc(const mm_problem *p, mm_tune_bufs &b) {
    const long long a_el = mm_span(p->batch, p->stride_a, p->m * p->k);
    const long long b_el = mm_span(p->batch, p->stride_b, p->k * p->n);
    const long long c_el = mm_span(p->batch, p->stride_c, p->m * p->n);
    b = mm_tune_bufs{};
    CUDA_CHECK(cudaMalloc((void **)&b.A, (size_t)a_el * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&b.B, (size_t)b_el * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&b.C, (size_t)c_el * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&b.ref, (size_t)(p->batch * p->m * p->n) * sizeof(double)));
    if (p->has_bias)
        CUDA_CHECK(cudaMalloc((void **)&b.bias, (size_t)p->n * sizeof(float)));
    mm_fill_normal(b.A, a_el, 11, 0);
    mm_fill_normal(b.B, b_el, 12, 0);
    if (p->has_bias)
        mm_fill_normal(b.bias, p->n, 13, 0);
    mm_reference_f64(p, b.A, b.B, b.bias, b.ref, 0);
}

static void mm_tune_free(mm_tune_bufs &b) {
    CUDA_CHECK(cudaFree(b.A));
    CUDA_CHECK(cudaFree(b.B));
    CUDA_CHECK(cudaFree(b.C));
    CUDA_CHECK(cudaFree(b.ref));
    if (b.bias)
        CUDA_CHECK(cudaFree(b.bias));
}

/* Every (configuration, split) the tuner tries for p, at group 8, in list order (pruning: file
 * header). */
static std::vector<mm_choice> mm_tune_candidates(const mm_problem *p) {
    const int sms = mm_device()->sm_count;
    const long long tiles128 = ((p->m + 127) / 128) * ((p->n + 127) / 128) * p->batch;
    const int splits[] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 16, 24, 32}; /* above 16: the _g kind only */
    char name[96];
    auto has_twin = [&](int32_t i) { /* a configuration of the same name without _c */
        mm_config_name(i, name, sizeof name);
        name[strlen(name) - 2] = '\0';
        return mm_config_find(name) >= 0;
    };
    std::vector<mm_choice> out;
    for (int32_t i = 0; i < mm_config_count(); i++) {
        const mm_tile_config *cfg = mm_config_get(i);
        if (cfg->smem_bytes > mm_device()->max_smem_optin)
            continue;
        if (tiles128 >= 2 * sms && cfg->bm * cfg->bn < 8192)
            continue;
        long long tiles = ((p->m + cfg->bm - 1) / cfg->bm) * ((p->n + cfg->bn - 1) / cfg->bn) * p->batch;
        for (int s : splits) {
            if (s > 1 && (tiles >= sms || p->k < 2LL * s * cfg->bk || tiles * s > 8LL * sms))
                continue;
            if (s > 16 && cfg->cluster != 2)
                continue;
            if (cfg->cluster && s == 1 && has_twin(i)) /* split 1: the twin's kernel */
                continue;
            out.push_back(mm_choice{i, s, MM_WT_DEFAULT_GROUP});
        }
    }
    return out;
}

/* With a budget, the heuristic's order: its choice first, then the pairs it weighs by predicted
 * time, then the rest as listed (a stable sort keeps the list order among equals). */
static void mm_tune_order(const mm_problem *p, std::vector<mm_choice> &v) {
    mm_choice h;
    mm_choose_heuristic(p, &h);
    std::vector<std::pair<double, mm_choice>> keyed;
    for (const mm_choice &c : v) {
        double t = mm_heuristic_predict(p, &c);
        bool first = c.cfg == h.cfg && c.split_k == h.split_k;
        keyed.push_back({first ? -1.0 : t >= 0 ? t : HUGE_VAL, c});
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const std::pair<double, mm_choice> &a, const std::pair<double, mm_choice> &b) {
                         return a.first < b.first;
                     });
    for (size_t i = 0; i < v.size(); i++)
        v[i] = keyed[i].second;
}

int mm_tune_problem(const mm_problem *p, int32_t reps, mm_choice *best, double *best_us, FILE *log,
                    char *err, size_t errlen) {
    return mm_tune_problem_budget(p, reps, 0.0, best, best_us, log, err, errlen);
}

/* The block tile height of c's kernel (0: the kernel has no rasterization choice, wgmma's is 8). */
static int mm_tune_bm(const mm_choice &c) {
    int bm = 0, bn = 0;
    if (c.kernel == MM_KERNEL_FP32)
        return mm_config_get(c.cfg)->bm;
    if (c.kernel == MM_KERNEL_MMA)
        mm_3xtf32_config_tile(c.cfg, &bm, &bn);
    return bm;
}

/* With a budget, candidates are timed with few runs each, and the fastest of many such medians is
 * partly luck (on an H100, bert's 128x3072x768 took 64x128 split 8 at 26.30 us where the exhaustive
 * tune kept 64x64 split 4, and a run on those choices was 3.5% slower than on the exhaustive
 * table): the three fastest are timed again with reps runs each and the best of those wins
 * (try_choice keeps it); later runs (group heights) use reps too. */
template <class F>
static void mm_tune_confirm(std::vector<std::pair<double, mm_choice>> &timed, int32_t reps, F &try_choice,
                            double &best_t, int &use_reps) {
    std::stable_sort(timed.begin(), timed.end(),
                     [](const std::pair<double, mm_choice> &a, const std::pair<double, mm_choice> &b) {
                         return a.first < b.first;
                     });
    const size_t top = timed.size() < 3 ? timed.size() : 3;
    std::vector<mm_choice> again;
    for (size_t i = 0; i < top; i++)
        again.push_back(timed[i].second);
    use_reps = reps;
    best_t = -1;
    for (const mm_choice &c : again)
        try_choice(c);
}

/* Times cands in order (with a budget: until it is spent, fewer timed runs each on long
 * problems), the fastest three again with reps runs (mm_tune_confirm), then other group heights
 * for the winner; 0 and *best, or -1 when none ran. */
static int mm_tune_list(const mm_problem *p, const mm_tune_bufs &b, const std::vector<mm_choice> &cands,
                        int32_t reps, double budget_s, double t0, mm_choice *best, double *best_us, FILE *log,
                        char *err, size_t errlen) {
    double best_t = -1;
    mm_choice win = {0, 1, 1, 0};
    char name[128], why[256];
    std::vector<std::pair<double, mm_choice>> timed;
    int use_reps = budget_s > 0 && reps > 3 ? 3 : reps; /* the first run tells how long a run takes */
    auto try_choice = [&](const mm_choice &c) {
        double rel = 0;
        why[0] = '\0';
        double t = mm_time_choice(p, &c, b, use_reps, &rel, why, sizeof why);
        if (log) {
            if (t < 0)
                fprintf(log, "    %-34s split %2d group %2d  skipped: %s\n", mm_choice_name(&c, name, sizeof name),
                        c.split_k, c.group_m, why);
            else
                fprintf(log, "    %-34s split %2d group %2d  %10.2f us  err %.2e\n",
                        mm_choice_name(&c, name, sizeof name), c.split_k, c.group_m, t, rel);
        }
        if (t >= 0 && (best_t < 0 || t < best_t)) {
            best_t = t;
            win = c;
        }
        if (t >= 0)
            timed.push_back({t, c});
        return t;
    };
    auto spent = [&]() { return budget_s > 0 && base_now() - t0 > budget_s; };
    size_t tried = 0;
    for (const mm_choice &c : cands) {
        if (tried > 0 && spent())
            break;
        double t = try_choice(c);
        if (tried++ == 0 && budget_s > 0 && t > 0) { /* timed runs for the rest: about 60% of the budget */
            double per = (t + 40.0) * (double)cands.size();
            long r = (long)(0.6 * budget_s * 1e6 / per) - 2;
            use_reps = r < 3 ? 3 : r > reps ? reps : (int)r;
        }
    }
    if (log && tried < cands.size())
        fprintf(log, "    time budget of %.1f s spent: %zu of %zu candidates tried, in the heuristic's order\n",
                budget_s, tried, cands.size());
    if (best_t < 0)
        return base_fail(err, errlen, "matmul %lldx%lldx%lld batch %lld: no configuration ran correctly",
                         (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->batch);
    if (use_reps < reps) { /* few runs each: the fastest of many is partly luck */
        const double prev_t = best_t;
        const mm_choice prev = win;
        mm_tune_confirm(timed, reps, try_choice, best_t, use_reps);
        if (best_t < 0) /* none ran again: keep the first round's winner */
            best_t = prev_t, win = prev;
    }
    const int bm = mm_tune_bm(win);
    if (bm > 0 && (p->m + bm - 1) / bm > 1) {
        mm_choice base = win;
        for (int g : {1, 4, 16}) {
            if (spent())
                break;
            mm_choice c = base;
            c.group_m = g;
            try_choice(c);
        }
    }
    *best = win;
    *best_us = best_t;
    return 0;
}

int mm_tune_problem_budget(const mm_problem *p, int32_t reps, double budget_s, mm_choice *best, double *best_us,
                           FILE *log, char *err, size_t errlen) {
    if (mm_problem_check(p, err, errlen))
        return -1;
    const double t0 = base_now();
    mm_tune_bufs b;
    mm_tune_alloc(p, b);
    std::vector<mm_choice> cands = mm_tune_candidates(p);
    if (budget_s > 0)
        mm_tune_order(p, cands);
    int rc = mm_tune_list(p, b, cands, reps < 1 ? 1 : reps, budget_s, t0, best, best_us, log, err, errlen);
    mm_tune_free(b);
    return rc;
}

/* ---- 3xtf32: every FP32-accurate kernel ------------------------------------------------------ */

/* The candidates at 3xtf32, the order under a budget: the built-in rule's choice (the result is
 * never slower than it, within noise), the wgmma configurations (split-K 2 to 16 where their
 * tiles do not fill the SMs: slices of at least 4 k-tiles, at most two waves of blocks), the
 * mma.sync heuristic's choice, the FP32 kernel's table or heuristic choice and the first three of
 * its tuner's list in the heuristic's order (without a budget: all of it), then the mma.sync
 * configurations at splits 1 to 16 (split only while the tiles do not fill the SMs, at most 4
 * blocks an SM in all, two k-tiles a slice; tiles under 8192 outputs skipped on problems of two
 * waves of 128x128 tiles, as the FP32 tuner does). Choices that cannot run here (wgmma without its
 * device) are left out. */
static std::vector<mm_choice> mm_tune3_candidates(const mm_problem *p, int presplit, bool budget) {
    std::vector<mm_choice> v;
    auto add = [&](const mm_choice &c) {
        for (const mm_choice &o : v)
            if (o.kernel == c.kernel && o.cfg == c.cfg && o.split_k == c.split_k && o.group_m == c.group_m)
                return;
        if (!mm_choice_check(p, &c, NULL, 0))
            v.push_back(c);
    };
    mm_choice c;
    mm_3xtf32_default(p, presplit, &c);
    add(c);
    const long long sms = mm_device()->sm_count, kt = ((p->k + 3) / 4 * 4 + 31) / 32;
    for (int w = 0; w < MM_WGMMA_CONFIGS; w++) { /* cfg 0 128x128, 1 128x64 */
        const long long tiles = ((p->m + 127) / 128) * ((p->n + (w ? 63 : 127)) / (w ? 64 : 128)) * p->batch;
        for (int s = 1; s <= MM_WGMMA_MAX_SPLIT; s *= 2)
            if (s == 1 || (tiles < sms && kt >= 4LL * s && tiles * s <= 2 * sms))
                add(mm_choice{w, s, 8, MM_KERNEL_WGMMA});
    }
    int cfg, split, group;
    mm_3xtf32_choose(p, &cfg, &split, &group);
    add(mm_choice{cfg, split, group, MM_KERNEL_MMA});
    mm_select_fp32_quiet(p, &c);
    add(c);
    std::vector<mm_choice> f = mm_tune_candidates(p);
    mm_tune_order(p, f);
    for (size_t i = 0; i < f.size() && (!budget || i < 3); i++)
        add(f[i]);
    const long long tiles128 = ((p->m + 127) / 128) * ((p->n + 127) / 128) * p->batch;
    for (int i = 0; i < mm_3xtf32_config_count(); i++) {
        int bm, bn;
        mm_3xtf32_config_tile(i, &bm, &bn);
        const long long tiles = ((p->m + bm - 1) / bm) * ((p->n + bn - 1) / bn) * p->batch;
        if (tiles128 >= 2 * sms && bm * bn < 8192)
            continue;
        for (int s : {1, 2, 3, 4, 6, 8, 12, 16})
            if (s == 1 || (tiles < sms && tiles * s <= 4 * sms && p->k >= 64LL * s))
                add(mm_choice{i, s, 8, MM_KERNEL_MMA});
    }
    return v;
}

/* The tuner's own operands pre-split as the caller's call has them (mask: 1 A, 2 B), so that the
 * wgmma candidates are timed as they would run there; into ps (n of them) and *buf (to free). */
static int32_t mm_tune3_presplit(const mm_problem *p, const mm_tune_bufs &b, int mask, mm_presplit *ps,
                                 float **buf) {
    *buf = NULL;
    if (!mask || !mm_3xtf32_wgmma_available())
        return 0;
    const long long ia = p->stride_a == 0 ? 1 : p->batch, ib = p->stride_b == 0 ? 1 : p->batch;
    const size_t na = (mm_3xtf32_presplit_floats(p->m, p->k, ia) + 63) / 64 * 64;
    const size_t nb = mm_3xtf32_presplit_floats(p->n, p->k, ib);
    CUDA_CHECK(cudaMalloc((void **)buf, (na + nb) * sizeof(float)));
    int32_t n = 0;
    if ((mask & 1) && !mm_3xtf32_presplit(&ps[n], MM_OPERAND_A, b.A, p->m, p->k, ia, p->stride_a, *buf, 0, NULL, 0))
        n++;
    if ((mask & 2) &&
        !mm_3xtf32_presplit(&ps[n], MM_OPERAND_B, b.B, p->n, p->k, ib, p->stride_b, *buf + na, 0, NULL, 0))
        n++;
    return n;
}

int mm_tune_3xtf32(const mm_problem *p, int32_t reps, double budget_s, int presplit, mm_choice *best,
                   double *best_us, FILE *log, char *err, size_t errlen) {
    if (mm_problem_check(p, err, errlen))
        return -1;
    const double t0 = base_now();
    mm_tune_bufs b;
    mm_tune_alloc(p, b);
    std::vector<mm_choice> cands = mm_tune3_candidates(p, presplit, budget_s > 0);
    mm_presplit *node_ps, ps[2];
    int32_t node_n;
    float *buf;
    mm_3xtf32_presplit_node_get(&node_ps, &node_n); /* the runtime's node's list, put back after */
    const int32_t n = mm_tune3_presplit(p, b, presplit, ps, &buf);
    mm_3xtf32_presplit_node_set(n ? ps : NULL, n);
    int rc = mm_tune_list(p, b, cands, reps < 1 ? 1 : reps, budget_s, t0, best, best_us, log, err, errlen);
    mm_3xtf32_presplit_node_set(node_ps, node_n);
    if (buf)
        CUDA_CHECK(cudaFree(buf));
    mm_tune_free(b);
    return rc;
}

int mm_tune_problem_precision(mm_precision prec, const mm_problem *p, int32_t reps, double budget_s, mm_choice *best,
                              double *best_us, FILE *log, char *err, size_t errlen) {
    if ((int)prec < 0 || prec >= MM_PREC_COUNT)
        return base_fail(err, errlen, "matmul: no precision %d", (int)prec);
    if (prec == MM_PREC_3XTF32)
        return mm_tune_3xtf32(p, reps, budget_s, 0, best, best_us, log, err, errlen);
    return mm_tune_problem_budget(p, reps, budget_s, best, best_us, log, err, errlen);
}
