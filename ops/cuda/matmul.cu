/* matmul.cu: the matmul module's front door: problem checks, the version table of the ladder,
 * the tuned kernel's configurations and choices, the split-K workspace, and mm_run (the choice
 * of mm_choose: tuning tables and first-use tuning in matmul_autotune.cu, the heuristic in
 * matmul_heuristic.cu).
 *
 * Process-wide state (not thread-safe, one device): the device facts and the split-K workspace
 * (partial sums and per-tile arrival counters; the counters are zero between launches, so
 * launches that share the workspace must be ordered: one stream).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "matmul_impl.h"

/* ---- problems -------------------------------------------------------------------------------- */

void mm_problem_init(mm_problem *p, int64_t m, int64_t n, int64_t k, int64_t batch) {
    memset(p, 0, sizeof *p);
    p->m = m;
    p->n = n;
    p->k = k;
    p->batch = batch;
    p->stride_a = m * k;
    p->stride_b = k * n;
    p->stride_c = m * n;
    p->act = MM_ACT_NONE;
}

int mm_problem_check(const mm_problem *p, char *err, size_t errlen) {
    const int64_t max_elems = (int64_t)1 << 40;
    if (!p)
        return base_fail(err, errlen, "no problem given");
    if (p->m < 1 || p->n < 1 || p->k < 1 || p->m > MM_MAX_DIM || p->n > MM_MAX_DIM || p->k > MM_MAX_DIM)
        return base_fail(err, errlen, "matmul %lldx%lldx%lld: m, n and k must be in [1, %lld]",
                       (long long)p->m, (long long)p->n, (long long)p->k, (long long)MM_MAX_DIM);
    if (p->m * p->n > max_elems || p->m * p->k > max_elems || p->k * p->n > max_elems)
        return base_fail(err, errlen, "matmul %lldx%lldx%lld: a matrix has more than 2^40 elements",
                       (long long)p->m, (long long)p->n, (long long)p->k);
    if (p->batch < 1 || p->batch > INT32_MAX)
        return base_fail(err, errlen, "matmul: batch %lld out of range [1, %d]", (long long)p->batch, INT32_MAX);
    if (p->stride_a < 0 || p->stride_b < 0 || p->stride_c < 0)
        return base_fail(err, errlen, "matmul: negative batch stride");
    if (p->batch > 1 && p->stride_c < p->m * p->n)
        return base_fail(err, errlen, "matmul: output batch stride %lld is smaller than m*n = %lld "
                       "(outputs would overlap)", (long long)p->stride_c, (long long)(p->m * p->n));
    if (p->batch > 1 && ((p->stride_a > 0 && p->stride_a > max_elems) || p->stride_b > max_elems ||
                         p->stride_c > max_elems))
        return base_fail(err, errlen, "matmul: batch stride larger than 2^40");
    if (p->has_bias != 0 && p->has_bias != 1)
        return base_fail(err, errlen, "matmul: has_bias must be 0 or 1");
    if ((int)p->act < 0 || p->act >= MM_ACT_COUNT)
        return base_fail(err, errlen, "matmul: unknown activation %d", (int)p->act);
    return 0;
}

double mm_problem_flops(const mm_problem *p) {
    return 2.0 * (double)p->m * (double)p->n * (double)p->k * (double)p->batch;
}

const char *mm_epilogue_name(int32_t has_bias, mm_act act) {
    if ((int)act < 0 || act >= MM_ACT_COUNT)
        return "?";
    return mm_epi_name(mm_epi_index(has_bias, (int32_t)act));
}

int mm_epilogue_parse(const char *name, int32_t *has_bias, mm_act *act) {
    int32_t i = mm_epi_find(name), a;
    if (i < 0)
        return -1;
    mm_epi_split(i, has_bias, &a);
    *act = (mm_act)a;
    return 0;
}

/* ---- device ---------------------------------------------------------------------------------- */

const mm_device_info *mm_device(void) {
    static mm_device_info info;
    static bool have = false;
    if (!have) {
        int dev = 0;
        cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
        info.sm_count = prop.multiProcessorCount;
        info.l2_bytes = prop.l2CacheSize;
        info.max_smem_optin = (int)prop.sharedMemPerBlockOptin;
        snprintf(info.name, sizeof info.name, "%s", prop.name);
        info.cc_major = prop.major;
        info.cc_minor = prop.minor;
        int khz = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
        info.clock_mhz = (khz + 500) / 1000;
        mm_devkey_make(info.key, sizeof info.key, info.name, info.cc_major, info.cc_minor, info.sm_count,
                       info.clock_mhz);
        have = true;
    }
    return &info;
}

const char *mm_device_name(void) { return mm_device()->name; }
const char *mm_device_key(void) { return mm_device()->key; }

int mm_device_available(char *err, size_t errlen) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear it */
        base_fail(err, errlen, "no CUDA device: %s", cudaGetErrorString(e));
        return 0;
    }
    if (n == 0) {
        base_fail(err, errlen, "no CUDA device");
        return 0;
    }
    return 1;
}

/* ---- versions -------------------------------------------------------------------------------- */

typedef void (*mm_launch_fn)(const mm_args &a, long long batch, cudaStream_t s);

static const struct {
    const char *name;
    const char *doc;
    mm_launch_fn launch; /* the rung's launcher (ladder/); NULL: the tuned kernel (mm_run), 3xtf32 */
} mm_versions[] = { /* in mm_version order */
    {"v1", "one thread per output, dot product from global memory", mm_launch_v1},
    {"v1.5", "thread tiling: 4x4 outputs per thread, each its own dot product", mm_launch_v1_5},
    {"v2", "4x4 register tile from outer products (partial sums)", mm_launch_v2},
    {"v3", "shared-memory tiling 64x64x16, cooperative fetch", mm_launch_v3},
    {"v4", "float4 loads, A transposed in shared memory, 128x128x8, 8x8 per thread", mm_launch_v4},
    {"v5", "bank-conflict-free layout: padded A, split thread tiles", mm_launch_v5},
    {"v6", "3-stage cp.async pipeline", mm_launch_v6},
    {"v7", "warp tiling (64x32 per warp)", mm_launch_v7},
    {"v8", "block rasterization (groups of 8 tile rows) for L2 reuse", mm_launch_v8},
    {"tuned", "v8's template at the tuned tile configuration and split-K", NULL},
    {"3xtf32", "tensor cores at FP32 accuracy: mma.sync TF32, operands split hi + lo, 3 products", NULL},
};

static_assert(sizeof mm_versions / sizeof mm_versions[0] == MM_VERSION_COUNT, "one entry per version");

const char *mm_version_name(mm_version v) {
    return ((int)v >= 0 && v < MM_VERSION_COUNT) ? mm_versions[v].name : "?";
}

const char *mm_version_doc(mm_version v) {
    return ((int)v >= 0 && v < MM_VERSION_COUNT) ? mm_versions[v].doc : "?";
}

int mm_version_find(const char *name) {
    if (!name)
        return -1;
    if (!strcmp(name, "best"))
        return MM_TUNED;
    for (int v = 0; v < MM_VERSION_COUNT; v++) {
        const char *n = mm_versions[v].name;
        if (!strcmp(name, n) || (n[0] == 'v' && !strcmp(name, n + 1)))
            return v;
    }
    return -1;
}

/* ---- configurations and choices -------------------------------------------------------------- */

int32_t mm_config_count(void) { return mm_wt_count(); }

const mm_tile_config *mm_config_get(int32_t i) {
    return (i >= 0 && i < mm_wt_count()) ? &mm_wt_at(i)->cfg : NULL;
}

const char *mm_config_name(int32_t i, char *buf, size_t len) {
    const mm_tile_config *c = mm_config_get(i);
    if (!c)
        snprintf(buf, len, "?");
    else
        snprintf(buf, len, "%dx%dx%d_w%dx%d_t%dx%d_%c%d_u%d_b%d%s", c->bm, c->bn, c->bk, c->wm, c->wn,
                 c->tm, c->tn, "srdhx"[c->pipe], c->stages, c->kunroll, c->minb, c->cluster == 1 ? "_c" : c->cluster == 2 ? "_g" : "");
    return buf;
}

int32_t mm_config_find(const char *name) {
    char buf[96];
    for (int32_t i = 0; i < mm_wt_count(); i++)
        if (name && !strcmp(name, mm_config_name(i, buf, sizeof buf)))
            return i;
    return -1;
}

/* mm_choice_check of the 3xTF32 kernels' choices. */
static int mm_choice_check_tf(const mm_problem *p, const mm_choice *c, char *err, size_t errlen) {
    if (c->split_k < 1 || c->split_k > 64 || c->group_m < 1 || c->group_m > 1024)
        return base_fail(err, errlen, "3xtf32: split_k %d or group_m %d out of range ([1, 64], [1, 1024])", c->split_k,
                         c->group_m);
    if (c->kernel == MM_KERNEL_MMA) {
        if (c->cfg < 0 || c->cfg >= mm_3xtf32_config_count())
            return base_fail(err, errlen, "no 3xtf32 configuration %d (there are %d)", c->cfg, mm_3xtf32_config_count());
        return 0;
    }
    if (c->cfg < 0 || c->cfg >= MM_WGMMA_CONFIGS)
        return base_fail(err, errlen, "no wgmma configuration %d (there are %d)", c->cfg, MM_WGMMA_CONFIGS);
    if (c->split_k > MM_WGMMA_MAX_SPLIT)
        return base_fail(err, errlen, "split_k %d: the wgmma kernel splits k into at most %d slices", c->split_k,
                         MM_WGMMA_MAX_SPLIT);
    if (!mm_3xtf32_wgmma_available())
        return base_fail(err, errlen, "the 3xtf32 wgmma path is not available on this device or build");
    if ((p->k + 3) / 4 * 4 > 32 * 65535)
        return base_fail(err, errlen, "k = %lld is beyond the wgmma path's split", (long long)p->k);
    return 0;
}

int mm_choice_check(const mm_problem *p, const mm_choice *c, char *err, size_t errlen) {
    if (c->kernel == MM_KERNEL_MMA || c->kernel == MM_KERNEL_WGMMA)
        return mm_choice_check_tf(p, c, err, errlen);
    if (c->kernel != MM_KERNEL_FP32)
        return base_fail(err, errlen, "no kernel %d", c->kernel);
    const mm_tile_config *cfg = mm_config_get(c->cfg);
    if (!cfg)
        return base_fail(err, errlen, "no tile configuration %d (there are %d)", c->cfg, mm_wt_count());
    if (c->split_k < 1 || c->split_k > 64)
        return base_fail(err, errlen, "split_k %d out of range [1, 64]", c->split_k);
    if (c->group_m < 1 || c->group_m > 1024)
        return base_fail(err, errlen, "group_m %d out of range [1, 1024]", c->group_m);
    if (cfg->smem_bytes > mm_device()->max_smem_optin) {
        char buf[96];
        return base_fail(err, errlen, "configuration %s needs %d bytes of shared memory, the device allows %d",
                       mm_config_name(c->cfg, buf, sizeof buf), cfg->smem_bytes, mm_device()->max_smem_optin);
    }
    if (cfg->cluster == 1 && c->split_k > 16)
        return base_fail(err, errlen, "split_k %d: a cluster configuration splits k at most 16 ways", c->split_k);
    if (cfg->cluster == 1 && c->split_k > 1 && mm_wt_at(c->cfg)->max_clusters(c->split_k) < 1) {
        char buf[96];
        return base_fail(err, errlen, "configuration %s: clusters of %d blocks do not fit on this device",
                       mm_config_name(c->cfg, buf, sizeof buf), c->split_k);
    }
    if (cfg->cluster == 2 && c->split_k > 1) { /* every block of the grid resident at once */
        const long long groups =
            (long long)((p->m + cfg->bm - 1) / cfg->bm) * ((p->n + cfg->bn - 1) / cfg->bn) * p->batch;
        const int fit = mm_wt_at(c->cfg)->max_clusters(c->split_k);
        if (groups > fit) {
            char buf[96];
            return base_fail(err, errlen,
                           "configuration %s split_k %d: %lld tiles of %d blocks, at most %d fit on the device at "
                           "once (a co-resident split needs them all)",
                           mm_config_name(c->cfg, buf, sizeof buf), c->split_k, groups, c->split_k, fit);
        }
    }
    if (c->split_k > 1 && p->k < (int64_t)c->split_k * cfg->bk)
        return base_fail(err, errlen, "split_k %d leaves less than one k-step (%d) per slice of k = %lld",
                       c->split_k, cfg->bk, (long long)p->k);
    return 0;
}

mm_args mm_args_make(const mm_problem *p, const float *A, const float *B, const float *bias, float *C) {
    mm_args a;
    memset(&a, 0, sizeof a);
    a.A = A;
    a.B = B;
    a.bias = bias;
    a.C = C;
    a.M = (int)p->m;
    a.N = (int)p->n;
    a.K = (int)p->k;
    a.sa = p->stride_a;
    a.sb = p->stride_b;
    a.sc = p->stride_c;
    a.has_bias = p->has_bias;
    a.act = (int)p->act;
    a.vec_a = p->k % 4 == 0 && (uintptr_t)A % 16 == 0 && p->stride_a % 4 == 0;
    a.vec_b = p->n % 4 == 0 && (uintptr_t)B % 16 == 0 && p->stride_b % 4 == 0;
    a.vec_c = p->n % 4 == 0 && (uintptr_t)C % 16 == 0 && p->stride_c % 4 == 0;
    a.split_k = 1;
    a.k_chunk = a.K;
    a.group_m = 1;
    return a;
}

/* ---- kernel attributes ----------------------------------------------------------------------- */

int mm_attr_carveout = -1; /* cudaSharedmemCarveoutDefault */
int mm_attr_gen = 0;

void mm_set_carveout(int percent) {
    mm_attr_carveout = percent;
    mm_attr_gen++;
}

/* ---- split-K workspace ----------------------------------------------------------------------- */

/* Workspaces are process-wide and captured graphs hold their addresses: a second runtime context
 * whose setup grows one (or first-use tuning, which releases them) must not free memory the first
 * context's graph still writes. While any context holds a captured graph, dropped memory waits
 * here and is freed when the last hold ends. */
static int mm_holds;
static void **mm_retired;
static int32_t mm_n_retired, mm_cap_retired;

void mm_dbuf_drop(void *p) {
    if (!mm_holds) {
        CUDA_CHECK(cudaFree(p)); /* synchronizes: no launch still uses it */
        return;
    }
    mm_retired = (void **)base_grow(mm_retired, &mm_cap_retired, mm_n_retired + 1, sizeof *mm_retired);
    mm_retired[mm_n_retired++] = p;
}

void mm_workspace_hold(void) { mm_holds++; }

void mm_workspace_unhold(void) {
    if (mm_holds > 0 && --mm_holds == 0) {
        for (int32_t i = 0; i < mm_n_retired; i++)
            CUDA_CHECK(cudaFree(mm_retired[i])); /* synchronizes: the graphs that used them are gone */
        mm_n_retired = 0;
    }
}

static mm_dbuf mm_ws;       /* partial sums (floats) */
static mm_dbuf mm_counters; /* per (batch, tile) arrival counters (ints), zero between launches */

void mm_workspace_release(void) {
    if (mm_ws.p || mm_counters.p)
        CUDA_CHECK(cudaDeviceSynchronize()); /* nothing may still use them */
    mm_dbuf_release(&mm_ws);
    mm_dbuf_release(&mm_counters);
}

size_t mm_workspace_bytes(void) { return mm_ws.bytes; }

/* ---- running --------------------------------------------------------------------------------- */

static int mm_check_call(const mm_problem *p, const float *A, const float *B, const float *bias,
                         const float *C, char *err, size_t errlen) {
    if (mm_problem_check(p, err, errlen))
        return -1;
    if (!A || !B || !C)
        return base_fail(err, errlen, "matmul: A, B and C must be device pointers, not NULL");
    if (p->has_bias && !bias)
        return base_fail(err, errlen, "matmul: the problem has a bias but no bias pointer was given");
    if (!p->has_bias && bias)
        return base_fail(err, errlen, "matmul: a bias pointer was given for a problem without bias");
    return 0;
}

/* sc (may be NULL): the scatter store; the batch stride of C is then 0 and the tables place every
 * output (mm_store4). Split-K works unchanged: partials go to the workspace by (row, col) and only
 * the final sums pass through mm_store4. */
static void mm_launch_choice(const mm_problem *p, const mm_choice *c, const mm_scatter *sc, const float *A,
                             const float *B, const float *bias, float *C, cudaStream_t s) {
    const mm_wt_entry *e = mm_wt_at(c->cfg);
    mm_args a = mm_args_make(p, A, B, bias, C);
    a.group_m = c->group_m;
    if (sc) {
        a.sc = 0;
        a.sc_b = (const long long *)sc->off_b;
        a.sc_m = (const long long *)sc->off_m;
        a.sc_mul = (const long long *)sc->mul;
        a.sc_n = (const long long *)sc->off_n;
        a.sc_vec = sc->vec4;
    }
    if (c->split_k > 1) {
        int bk = e->cfg.bk;
        long long per = (p->k + c->split_k - 1) / c->split_k;
        long long chunk = (per + bk - 1) / bk * bk;
        int splits = (int)((p->k + chunk - 1) / chunk); /* slices that are not empty */
        if (splits > 1) {
            a.split_k = splits;
            a.k_chunk = (int)chunk;
            if (e->cfg.cluster != 1) { /* the last-block and co-resident kinds use the workspace */
                long long tiles =
                    (long long)((p->m + e->cfg.bm - 1) / e->cfg.bm) * ((p->n + e->cfg.bn - 1) / e->cfg.bn);
                /* a launcher cannot fail (matmul_impl.h): out of memory here aborts */
                CUDA_CHECK(mm_dbuf_grow(&mm_ws, (size_t)(p->batch * splits * p->m * p->n) * sizeof(float), false, s));
                CUDA_CHECK(mm_dbuf_grow(&mm_counters, (size_t)(p->batch * tiles) * sizeof(int), true, s));
                a.ws = (float *)mm_ws.p;
                a.counters = (int *)mm_counters.p;
            }
        }
    }
    e->launch(a, p->batch, s);
}

/* A checked choice of any kernel; -1 (nothing launched) when the wgmma path cannot run p after all
 * (the split's grids, its workspace). */
static int mm_launch_any(const mm_problem *p, const mm_choice *c, const float *A, const float *B, const float *bias,
                         float *C, cudaStream_t s) {
    if (c->kernel == MM_KERNEL_MMA) {
        mm_3xtf32_run_at(p, c->cfg, c->split_k, c->group_m, A, B, bias, C, s);
        return 0;
    }
    if (c->kernel == MM_KERNEL_WGMMA)
        return mm_3xtf32_wgmma_run_cfg(p, A, B, bias, C, c->cfg, c->split_k, s) ? 0 : -1;
    mm_launch_choice(p, c, NULL, A, B, bias, C, s);
    return 0;
}

int mm_run_choice(const mm_problem *p, const mm_choice *c, const float *A, const float *B,
                  const float *bias, float *C, cudaStream_t s, char *err, size_t errlen) {
    if (mm_check_call(p, A, B, bias, C, err, errlen) || mm_choice_check(p, c, err, errlen))
        return -1;
    if (mm_launch_any(p, c, A, B, bias, C, s))
        return base_fail(err, errlen, "matmul %lldx%lldx%lld: the wgmma path cannot run it (its split's grids or "
                         "workspace)", (long long)p->m, (long long)p->n, (long long)p->k);
    return 0;
}

static int mm_scatter_check(const mm_scatter *sc, char *err, size_t errlen) {
    if (!sc || !sc->off_b || !sc->off_m || !sc->mul || !sc->off_n)
        return base_fail(err, errlen, "matmul: a scatter store needs its four device tables");
    return 0;
}

int mm_run_choice_scatter(const mm_problem *p, const mm_choice *c, const mm_scatter *sc, const float *A,
                          const float *B, const float *bias, float *C, cudaStream_t s, char *err, size_t errlen) {
    if (mm_check_call(p, A, B, bias, C, err, errlen) || mm_choice_check(p, c, err, errlen) ||
        mm_scatter_check(sc, err, errlen))
        return -1;
    if (c->kernel != MM_KERNEL_FP32)
        return base_fail(err, errlen, "matmul: the scatter store is the FP32 kernel's (not of a 3xtf32 choice)");
    mm_launch_choice(p, c, sc, A, B, bias, C, s);
    return 0;
}

/* TASC_MM_CHOICE=CONFIG[:SPLIT[:GROUP]] forces the tuned kernel's choice (profiling, experiments);
 * a bad value is reported once and ignored. Returns 1 and *c when set and good. */
static int mm_forced_choice(const mm_problem *p, mm_choice *c) {
    static bool parsed = false, have = false;
    static mm_choice forced;
    if (!parsed) {
        parsed = true;
        const char *env = getenv("TASC_MM_CHOICE");
        if (env && *env) {
            char name[128];
            int split = 1, group = MM_WT_DEFAULT_GROUP;
            const char *colon = strchr(env, ':');
            size_t len = colon ? (size_t)(colon - env) : strlen(env);
            if (len < sizeof name) {
                memcpy(name, env, len);
                name[len] = '\0';
                forced.cfg = mm_config_find(name);
                if (colon && sscanf(colon + 1, "%d:%d", &split, &group) < 1)
                    forced.cfg = -1;
                forced.split_k = split;
                forced.group_m = group;
                have = forced.cfg >= 0 && split >= 1 && group >= 1;
            }
            if (!have)
                fprintf(stderr, "tasc: TASC_MM_CHOICE='%s' is not CONFIG[:SPLIT[:GROUP]] with a configuration of "
                                "`tasc kernels list`; ignored\n", env);
        }
    }
    if (!have || mm_choice_check(p, &forced, NULL, 0))
        return 0;
    *c = forced;
    return 1;
}

int mm_choose(const mm_problem *p, mm_choice *c, int *from_table, char *err, size_t errlen) {
    if (mm_problem_check(p, err, errlen))
        return -1;
    int src = mm_forced_choice(p, c) ? 2 : mm_select(p, c);
    if (from_table)
        *from_table = src;
    return 0;
}

/* ---- precision (the 3xTF32 kernel: matmul_3xtf32.cu) ------------------------------------------ */

static mm_precision mm_prec = MM_PREC_FP32;
static const char *const mm_prec_names[MM_PREC_COUNT] = {"fp32", "3xtf32"};

const char *mm_precision_name(mm_precision p) {
    return ((int)p >= 0 && p < MM_PREC_COUNT) ? mm_prec_names[p] : "?";
}

int mm_precision_parse(const char *name, mm_precision *p) {
    for (int i = 0; i < MM_PREC_COUNT; i++)
        if (name && !strcmp(name, mm_prec_names[i])) {
            *p = (mm_precision)i;
            return 0;
        }
    return -1;
}

void mm_precision_set(mm_precision p) { mm_prec = ((int)p >= 0 && p < MM_PREC_COUNT) ? p : MM_PREC_FP32; }

mm_precision mm_precision_get(void) { return mm_prec; }

static int mm_run_fp32(const mm_problem *p, const float *A, const float *B, const float *bias, float *C,
                       cudaStream_t s, char *err, size_t errlen) {
    mm_choice c;
    if (mm_check_call(p, A, B, bias, C, err, errlen) || mm_choose(p, &c, NULL, err, errlen))
        return -1;
    mm_launch_choice(p, &c, NULL, A, B, bias, C, s);
    return 0;
}

/* The scatter store's choice at 3xtf32: the 3xtf32 decision for p (made ahead for this very
 * problem, else now), which must be the FP32 kernel (the only one with a scatter store). */
static int mm_scatter_choice_3xtf32(const mm_problem *p, const mm_scatter *sc, mm_choice *c, char *err,
                                    size_t errlen) {
    const mm_problem *q = &sc->for_p;
    const char *epi = mm_epilogue_name(p->has_bias, p->act);
    if (sc->decided && (q->m != p->m || q->n != p->n || q->k != p->k || q->batch != p->batch ||
                        q->has_bias != p->has_bias || q->act != p->act))
        return base_fail(err, errlen,
                         "matmul %lldx%lldx%lldx%lld %s: the scatter store's 3xtf32 decision was made for "
                         "%lldx%lldx%lldx%lld %s",
                         (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->batch, epi,
                         (long long)q->m, (long long)q->n, (long long)q->k, (long long)q->batch,
                         mm_epilogue_name(q->has_bias, q->act));
    if (sc->decided)
        *c = sc->choice;
    else if (mm_choose_precision(MM_PREC_3XTF32, p, c, NULL, err, errlen))
        return -1;
    if (c->kernel != MM_KERNEL_FP32) {
        char name[128];
        return base_fail(err, errlen,
                         "matmul %lldx%lldx%lldx%lld %s: its 3xtf32 kernel is %s; the scatter store is the FP32 "
                         "kernel's (run the product without it)",
                         (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->batch, epi,
                         mm_choice_name(c, name, sizeof name));
    }
    return mm_choice_check(p, c, err, errlen);
}

int mm_run_scatter(const mm_problem *p, const mm_scatter *sc, const float *A, const float *B, const float *bias,
                   float *C, cudaStream_t s, char *err, size_t errlen) {
    mm_choice c;
    if (mm_check_call(p, A, B, bias, C, err, errlen) || mm_scatter_check(sc, err, errlen))
        return -1;
    /* the key of the plain problem: tables stay valid */
    if (mm_prec == MM_PREC_3XTF32 ? mm_scatter_choice_3xtf32(p, sc, &c, err, errlen)
                                  : mm_choose(p, &c, NULL, err, errlen))
        return -1;
    mm_launch_choice(p, &c, sc, A, B, bias, C, s);
    return 0;
}

static const mm_scatter_node *mm_scatter_cur;

void mm_scatter_node_set(const mm_scatter_node *sc) { mm_scatter_cur = sc; }

const mm_scatter_node *mm_scatter_node_get(void) { return mm_scatter_cur; }

int mm_run_precision(mm_precision prec, const mm_problem *p, const float *A, const float *B, const float *bias,
                     float *C, cudaStream_t s, char *err, size_t errlen) {
    if ((int)prec < 0 || prec >= MM_PREC_COUNT)
        return base_fail(err, errlen, "matmul: no precision %d", (int)prec);
    if (prec == MM_PREC_FP32)
        return mm_run_fp32(p, A, B, bias, C, s, err, errlen);
    if (mm_check_call(p, A, B, bias, C, err, errlen))
        return -1;
    mm_choice c; /* the fastest FP32-accurate kernel: tables, first-use tuning, or the built-in rule */
    mm_select_3xtf32(p, mm_3xtf32_presplit_mask(p, A, B), &c);
    if (mm_launch_any(p, &c, A, B, bias, C, s)) /* wgmma could not after all: mma.sync has no workspace */
        mm_3xtf32_run(p, A, B, bias, C, s);
    return 0;
}

int mm_choose_precision(mm_precision prec, const mm_problem *p, mm_choice *c, int *from_table, char *err,
                        size_t errlen) {
    if ((int)prec < 0 || prec >= MM_PREC_COUNT)
        return base_fail(err, errlen, "matmul: no precision %d", (int)prec);
    if (prec == MM_PREC_FP32)
        return mm_choose(p, c, from_table, err, errlen);
    if (mm_problem_check(p, err, errlen))
        return -1;
    const int src = mm_select_3xtf32(p, 0, c);
    if (from_table)
        *from_table = src;
    return 0;
}

int mm_run_3xtf32_at(const mm_problem *p, int32_t cfg, int32_t split_k, int32_t group_m, const float *A,
                     const float *B, const float *bias, float *C, cudaStream_t s, char *err, size_t errlen) {
    if (mm_check_call(p, A, B, bias, C, err, errlen))
        return -1;
    if (cfg < 0 || cfg >= mm_3xtf32_config_count())
        return base_fail(err, errlen, "no 3xtf32 configuration %d (there are %d)", cfg, mm_3xtf32_config_count());
    if (split_k < 1 || split_k > 64 || group_m < 1 || group_m > 1024)
        return base_fail(err, errlen, "3xtf32: split_k %d or group_m %d out of range ([1, 64], [1, 1024])", split_k,
                         group_m);
    mm_3xtf32_run_at(p, cfg, split_k, group_m, A, B, bias, C, s);
    return 0;
}

int mm_run(const mm_problem *p, const float *A, const float *B, const float *bias, float *C,
           cudaStream_t s, char *err, size_t errlen) {
    return mm_run_precision(mm_prec, p, A, B, bias, C, s, err, errlen);
}

int mm_run_version(mm_version v, const mm_problem *p, const float *A, const float *B,
                   const float *bias, float *C, cudaStream_t s, char *err, size_t errlen) {
    if ((int)v < 0 || v >= MM_VERSION_COUNT)
        return base_fail(err, errlen, "matmul: no version %d", (int)v);
    if (v == MM_TUNED)
        return mm_run(p, A, B, bias, C, s, err, errlen);
    if (v == MM_3XTF32)
        return mm_run_precision(MM_PREC_3XTF32, p, A, B, bias, C, s, err, errlen);
    if (mm_check_call(p, A, B, bias, C, err, errlen))
        return -1;
    mm_args a = mm_args_make(p, A, B, bias, C);
    mm_versions[v].launch(a, p->batch, s);
    return 0;
}
