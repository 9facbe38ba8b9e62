/* matmul_heuristic.cu: the tuned kernel's choice for a problem no tuning table holds.
 *
 * The rule, derived from the tuned tables (bench/matmul/tune.log.xz, bench/runtime/tune_zoo and
 * h100-run1 tune logs: every candidate of 149 tuned problems timed on an H100): the winners come
 * from few configurations, and which one wins is a matter of filling the SMs without paying too
 * much for small tiles or for split-K. So for every configuration of a shortlist of eleven (the
 * winners of those logs) and every split-K the tuner would try, the time is predicted as
 *   waves * (bm * bn * k_slice * 2 * minb) / eff_cfg     (waves: blocks over SMs * minb, rounded up)
 *   at least the memory time (m*k + k*n + m*n) * 4 * batch / 3 TB/s, plus 4 us,
 *   plus for split-K: s * m * n * batch * 4 bytes * (11.5 through a cluster, 1.25 otherwise) / 3 TB/s + 0.4 us,
 * and the fastest prediction wins (group 8). eff_cfg (flop/us per SM at that configuration) and the
 * split-K costs are fitted to those logs (worst-ratio and mean objective, bench sizes weighted):
 * on the logged problems the rule's choice reaches on average 91% of the tuned time, and 93-100%
 * on the bench sizes (1024, 2048, 4096, 8192, 4097, 1000, 128x768x768, 128x3072x768,
 * 128x768x3072, 4096x3072x768 bias_relu), against 80-87% for the two-configuration rule before.
 * Big problems pick 64x128 tiles without split (2-3 waves of 4 blocks an SM); BERT-sized ones with
 * m = 128 pick 64x64 or 64x128 tiles split 8-32 ways through co-resident grids (_g); medium ones
 * 64x128 split 3-4; problems with a short k the 32x64 tiles (memory bound).
 */
#include <math.h>

#include "base.h"
#include "matmul_impl.h"

static const struct {
    const char *name;
    double eff; /* flop per microsecond per SM (fitted) */
} mm_h_short[] = {
    {"128x128x16_w32x64_t8x8_h2_u16_b2", 666821},  {"64x128x16_w32x64_t8x8_h2_u16_b4", 1070488},
    {"64x128x32_w32x64_t8x8_h2_u32_b3_c", 584859}, {"64x128x32_w32x64_t8x8_h2_u32_b3_g", 451396},
    {"64x64x32_w64x16_t8x4_h2_u32_b3_g", 246139},  {"64x64x16_w64x16_t8x4_x6_u16_b4_c", 338416},
    {"32x64x32_w16x32_t4x4_h2_u32_b4", 377026},    {"32x64x32_w16x32_t4x4_h2_u32_b4_c", 1070921},
    {"32x64x16_w16x32_t4x4_s6_u16_b4_c", 974949},  {"64x128x8_w32x64_t8x8_s3_u8_b4", 948240},
    {"32x64x16_w16x32_t4x4_s5_u16_b4", 344580},
};
static const int MM_H_N = (int)(sizeof(mm_h_short) / sizeof(mm_h_short[0]));
#define MM_H_BW 3.0e6        /* bytes per microsecond */
#define MM_H_FIX_US 4.0
#define MM_H_SPLIT_CLUSTER 11.52
#define MM_H_SPLIT_OTHER 1.25
#define MM_H_SPLIT_FIX_US 0.4

static const int mm_h_splits[] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 16, 24, 32}; /* the tuner's */

static long long mm_h_tiles(const mm_problem *p, const mm_tile_config *cfg) {
    return ((p->m + cfg->bm - 1) / cfg->bm) * ((p->n + cfg->bn - 1) / cfg->bn) * p->batch;
}

/* The pairs the fit saw: split-K only through the cluster (_c) and co-resident (_g) kinds, with
 * the tuner's limits (tiles short of the SMs, two k-steps a slice, at most 8 blocks an SM), and a
 * co-resident grid that fits at the configuration's blocks per SM. */
static bool mm_h_legal(const mm_problem *p, const mm_tile_config *cfg, int s, int sms) {
    const long long tiles = mm_h_tiles(p, cfg);
    if (s > 1 && (tiles >= sms || p->k < 2LL * s * cfg->bk || tiles * s > 8LL * sms))
        return false;
    if ((s > 16 && cfg->cluster != 2) || (s > 1 && cfg->cluster == 0) || (s == 1 && cfg->cluster != 0))
        return false;
    return !(cfg->cluster == 2 && tiles * s > (long long)sms * cfg->minb);
}

static double mm_h_predict(const mm_problem *p, const mm_tile_config *cfg, double eff, int s, int sms) {
    const double kc = ceil(ceil((double)p->k / s) / cfg->bk) * cfg->bk;
    const double waves = ceil((double)(mm_h_tiles(p, cfg) * s) / ((double)sms * cfg->minb));
    double t = waves * (double)cfg->bm * cfg->bn * kc * 2.0 * cfg->minb / eff;
    const double mem = (double)(p->m * p->k + p->k * p->n + p->m * p->n) * 4.0 * (double)p->batch / MM_H_BW;
    t = (t > mem ? t : mem) + MM_H_FIX_US;
    if (s > 1)
        t += (cfg->cluster == 1 ? MM_H_SPLIT_CLUSTER : MM_H_SPLIT_OTHER) * s * (double)(p->m * p->n) *
                 (double)p->batch * 4.0 / MM_H_BW + MM_H_SPLIT_FIX_US;
    return t;
}

/* The shortlist's indices in the configuration list (resolved once). */
static const int32_t *mm_h_index(void) {
    static int32_t idx[MM_H_N];
    static bool have = false;
    if (!have) {
        for (int i = 0; i < MM_H_N; i++)
            if ((idx[i] = mm_config_find(mm_h_short[i].name)) < 0) /* a bug: the list names them */
                base_die("matmul heuristic: configuration %s missing from the list", mm_h_short[i].name);
        have = true;
    }
    return idx;
}

/* Predicted microseconds of (cfg, split) for p, or -1 when the pair is not one the rule weighs
 * (not in the shortlist, or not legal); exposed for the tuner's ordering. */
double mm_heuristic_predict(const mm_problem *p, const mm_choice *c) {
    const int32_t *idx = mm_h_index();
    const int sms = mm_device()->sm_count;
    for (int i = 0; i < MM_H_N; i++) {
        if (idx[i] != c->cfg)
            continue;
        const mm_tile_config *cfg = mm_config_get(idx[i]);
        if (!mm_h_legal(p, cfg, c->split_k, sms) || mm_choice_check(p, c, NULL, 0))
            return -1;
        return mm_h_predict(p, cfg, mm_h_short[i].eff, c->split_k, sms);
    }
    return -1;
}

void mm_choose_heuristic(const mm_problem *p, mm_choice *c) {
    const int32_t *idx = mm_h_index();
    double best = -1;
    *c = mm_choice{idx[6], 1, MM_WT_DEFAULT_GROUP}; /* 32x64x32 without split: runs everything */
    for (int i = 0; i < MM_H_N; i++)
        for (int s : mm_h_splits) {
            mm_choice ch = {idx[i], s, MM_WT_DEFAULT_GROUP};
            double t = mm_heuristic_predict(p, &ch);
            if (t >= 0 && (best < 0 || t < best)) {
                best = t;
                *c = ch;
            }
        }
}
