/* matmul_table.c: the persisted tuning table of the tuned matmul kernel (matmul_table.h), its
 * device keys and the files the runtime reads it from.
 *
 * File format (text, one entry per line, fields separated by one TAB; '#' lines are comments):
 *   device  m  n  k  batch  epilogue  config  split_k  group_m  us
 * e.g. "NVIDIA H200|cc 9.0|132 SMs|1980 MHz  4096  4096  4096  1  none  128x128x16_w64x32_t8x8_h2_u16_b2  1  1  2714.50".
 * Precision (issue 17): the epilogue field of a `--precision 3xtf32` entry ends in "@3xtf32"
 * ("bias_gelu@3xtf32"); without a suffix (every line written before) the entry is fp32, so old
 * files keep their meaning and bytes. A 3xtf32 entry's config is the FP32 kernel's (a plain
 * name), or a 3xTF32 kernel's: "mma:128x128x32_w32x64_s3_b1_k1" (mma.sync, with split_k and
 * group_m) or "wgmma:128x128" / "wgmma:128x64" (with split_k 1 .. 16, k-slices; tables written
 * before wgmma had split-K hold 1). An fp32 entry names only FP32 ones.
 * The device field is a device key, or (tables written before keys existed) a device name, which
 * matches every device of that name below an exact key. A later line replaces an earlier one with
 * the same key. Saving sorts by key, so the same entries always give the same bytes. The config is
 * named, not numbered, so a table written by another build fails loudly. The table owns its entries.
 */
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "base.h"
#include "matmul_table.h"

typedef struct {
    char device[MM_DEVKEY_LEN];
    mm_table_key k;
    mm_choice c;
    double us;    /* median time when tuned */
} mm_table_entry;

struct mm_table {
    const mm_cfg_names *names;
    mm_table_entry *e; /* owned, n used of cap */
    int32_t n, cap;
};

static const char *const mm_epi_names[MM_EPI_COUNT] = {
    "none", "relu",      "gelu",  "bias",      "bias_relu", "bias_gelu",      "silu",
    "gelu_tanh", "relu6", "hardswish", "bias_silu", "bias_gelu_tanh", "bias_relu6", "bias_hardswish"};

int32_t mm_epi_index(int32_t has_bias, int32_t act) {
    if (act < 0 || act >= MM_EPI_ACTS)
        return -1;
    return act < 3 ? (has_bias ? 3 : 0) + act : 6 + (has_bias ? MM_EPI_ACTS - 3 : 0) + act - 3;
}

void mm_epi_split(int32_t epi, int32_t *has_bias, int32_t *act) {
    if (epi < 6) {
        *has_bias = epi >= 3;
        *act = epi % 3;
    } else {
        *has_bias = epi - 6 >= MM_EPI_ACTS - 3;
        *act = 3 + (epi - 6) % (MM_EPI_ACTS - 3);
    }
}

const char *mm_epi_name(int32_t epi) { return epi >= 0 && epi < MM_EPI_COUNT ? mm_epi_names[epi] : "?"; }

int32_t mm_epi_find(const char *name) {
    for (int32_t i = 0; name && i < MM_EPI_COUNT; i++)
        if (!strcmp(name, mm_epi_names[i]))
            return i;
    return -1;
}

/* ---- device keys ------------------------------------------------------------------------------ */

const char *mm_devkey_make(char *buf, size_t len, const char *name, int cc_major, int cc_minor, int sms, int mhz) {
    snprintf(buf, len, "%s|cc %d.%d|%d SMs|%d MHz", name, cc_major, cc_minor, sms, mhz);
    return buf;
}

const char *mm_devkey_file(const char *key, char *buf, size_t len) {
    size_t i = 0;
    for (; key[i] && i + 1 < len; i++) {
        char ch = key[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                 ch == '-';
        buf[i] = ok ? ch : '_';
    }
    if (len)
        buf[i] = '\0';
    return buf;
}

/* 1 if a line's device field d is a name-only field naming key's device. */
static int mm_name_matches(const char *d, const char *key) {
    const char *bar = strchr(key, '|');
    if (!bar || strchr(d, '|'))
        return 0;
    size_t n = (size_t)(bar - key);
    return strlen(d) == n && !strncmp(d, key, n);
}

/* ---- the table -------------------------------------------------------------------------------- */

mm_table *mm_table_new_names(const mm_cfg_names *names) {
    mm_table *t = base_xcalloc(1, sizeof(mm_table));
    t->names = names;
    return t;
}

void mm_table_free(mm_table *t) {
    if (!t)
        return;
    free(t->e);
    free(t);
}

int32_t mm_table_size(const mm_table *t) { return t ? t->n : 0; }

static int mm_key_eq(const mm_table_key *a, const mm_table_key *b) {
    return a->m == b->m && a->n == b->n && a->k == b->k && a->batch == b->batch && a->epi == b->epi &&
           a->prec == b->prec;
}

static const char *const mm_prec_names[MM_TABLE_PRECS] = {"fp32", "3xtf32"};

const char *mm_table_prec_name(int32_t prec) {
    return prec >= 0 && prec < MM_TABLE_PRECS ? mm_prec_names[prec] : "?";
}

/* The kernel prefixes of config names; FP32 has none (every name before 3xtf32 entries). */
static const char *const mm_kernel_prefix[MM_KERNEL_COUNT] = {"", "mma:", "wgmma:"};

const char *mm_choice_name_with(const mm_cfg_names *names, const mm_choice *c, char *buf, size_t len) {
    char cfg[96] = "?";
    const int32_t kind = c->kernel;
    if (kind == MM_KERNEL_FP32)
        names->name(c->cfg, cfg, sizeof cfg);
    else if (kind > 0 && kind < MM_KERNEL_COUNT && names->name_tf)
        names->name_tf(kind, c->cfg, cfg, sizeof cfg);
    snprintf(buf, len, "%s%s", kind >= 0 && kind < MM_KERNEL_COUNT ? mm_kernel_prefix[kind] : "?", cfg);
    return buf;
}

int mm_table_find(const mm_table *t, const char *devkey, const mm_table_key *k, mm_choice *c, double *us) {
    if (!t || !devkey)
        return 0;
    const mm_table_entry *by_name = NULL;
    for (int32_t i = 0; i < t->n; i++) {
        const mm_table_entry *e = &t->e[i];
        if (!mm_key_eq(&e->k, k))
            continue;
        if (!strcmp(e->device, devkey)) {
            by_name = e;
            break;
        }
        if (!by_name && mm_name_matches(e->device, devkey))
            by_name = e;
    }
    if (!by_name)
        return 0;
    *c = by_name->c;
    if (us)
        *us = by_name->us;
    return 1;
}

static void mm_table_put_entry(mm_table *t, const mm_table_entry *ne) {
    for (int32_t i = 0; i < t->n; i++) {
        mm_table_entry *e = &t->e[i];
        if (!strcmp(e->device, ne->device) && mm_key_eq(&e->k, &ne->k)) {
            *e = *ne;
            return;
        }
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->e = base_xrealloc(t->e, (size_t)t->cap * sizeof *t->e);
    }
    t->e[t->n++] = *ne;
}

void mm_table_set(mm_table *t, const char *devkey, const mm_table_key *k, const mm_choice *c, double us) {
    mm_table_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.device, sizeof e.device, "%s", devkey);
    e.k = *k;
    e.c = *c;
    e.us = us;
    mm_table_put_entry(t, &e);
}

void mm_table_merge(mm_table *dst, const mm_table *src) {
    for (int32_t i = 0; src && i < src->n; i++)
        mm_table_put_entry(dst, &src->e[i]);
}

/* ---- reading and writing ---------------------------------------------------------------------- */

#define MM_MAX_DIM_TABLE ((int64_t)1 << 30) /* matmul.h MM_MAX_DIM */

/* "EPILOGUE" or "EPILOGUE@PRECISION" into k->epi and k->prec. */
static int mm_parse_epi_prec(char *field, mm_table_key *k, char *why, size_t whylen) {
    char *at = strchr(field, '@');
    k->prec = 0;
    if (at) {
        *at = '\0';
        for (k->prec = MM_TABLE_PRECS - 1; k->prec >= 0 && strcmp(at + 1, mm_prec_names[k->prec]); k->prec--)
            ;
        if (k->prec < 0)
            return base_fail(why, whylen, "unknown precision '%s' after '@' (fp32 or 3xtf32)", at + 1);
    }
    if ((k->epi = mm_epi_find(field)) < 0)
        return base_fail(why, whylen,
                         "unknown epilogue '%s' (none, bias, or an activation relu, gelu, silu, gelu_tanh, "
                         "relu6, hardswish, alone or after bias_)", field);
    return 0;
}

/* The config field into e->c.cfg and e->c.kernel (by its prefix); a 3xTF32 kernel only at 3xtf32:
 * an fp32 entry promises strict FP32 arithmetic. */
static int mm_parse_config(const mm_table *t, const char *field, mm_table_entry *e, char *why, size_t whylen) {
    e->c.kernel = MM_KERNEL_FP32;
    for (int32_t kind = 1; kind < MM_KERNEL_COUNT; kind++) {
        size_t n = strlen(mm_kernel_prefix[kind]);
        if (strncmp(field, mm_kernel_prefix[kind], n))
            continue;
        if (e->k.prec != 1)
            return base_fail(why, whylen, "configuration '%s' is a 3xTF32 kernel: only on a 3xtf32 entry "
                                          "(epilogue field EPILOGUE@3xtf32)", field);
        e->c.kernel = kind;
        e->c.cfg = t->names->find_tf ? t->names->find_tf(kind, field + n) : -1;
        if (e->c.cfg < 0)
            return base_fail(why, whylen, "unknown 3xtf32 configuration '%s' (tasc kernels list shows this build's)",
                             field);
        return 0;
    }
    e->c.cfg = t->names->find(field);
    if (e->c.cfg < 0)
        return base_fail(why, whylen, "unknown tile configuration '%s' (tasc kernels list shows this build's)", field);
    return 0;
}

/* A line into one entry (base_load_records' parse: ctx the table, rec the entry). */
static int mm_table_parse_line(void *ctx, char *line, void *rec, char *why, size_t whylen) {
    const mm_table *t = ctx;
    mm_table_entry *e = rec;
    char *f[10];
    int nf = base_split_fields(line, '\t', f, 10);
    if (nf != 10)
        return base_fail(why, whylen, "expected 10 TAB-separated fields, found %s%d", nf > 10 ? "more than " : "",
                         nf > 10 ? 10 : nf);
    memset(e, 0, sizeof *e);
    if (!f[0][0] || strlen(f[0]) >= sizeof e->device)
        return base_fail(why, whylen, "device name empty or longer than %d bytes", MM_DEVKEY_LEN - 1);
    snprintf(e->device, sizeof e->device, "%s", f[0]);
    int64_t *dims[4] = {&e->k.m, &e->k.n, &e->k.k, &e->k.batch};
    const char *names[4] = {"m", "n", "k", "batch"};
    for (int i = 0; i < 4; i++)
        if (base_parse_uint_in(f[1 + i], 1, i < 3 ? MM_MAX_DIM_TABLE : INT32_MAX, dims[i]))
            return base_fail(why, whylen, "bad %s '%s'", names[i], f[1 + i]);
    if (mm_parse_epi_prec(f[5], &e->k, why, whylen) || mm_parse_config(t, f[6], e, why, whylen))
        return -1;
    int64_t v;
    if (base_parse_uint_in(f[7], 1, 64, &v))
        return base_fail(why, whylen, "bad split_k '%s' (an integer in [1, 64])", f[7]);
    e->c.split_k = (int32_t)v;
    if (e->c.kernel == MM_KERNEL_WGMMA && v > MM_TABLE_WGMMA_MAX_SPLIT)
        return base_fail(why, whylen, "bad split_k '%s' for '%s' (the wgmma kernel splits k into 1 to %d slices)",
                         f[7], f[6], MM_TABLE_WGMMA_MAX_SPLIT);
    if (base_parse_uint_in(f[8], 1, 1024, &v))
        return base_fail(why, whylen, "bad group_m '%s' (an integer in [1, 1024])", f[8]);
    e->c.group_m = (int32_t)v;
    if (base_parse_double_in(f[9], 0.0, HUGE_VAL, &e->us))
        return base_fail(why, whylen, "bad time '%s' (microseconds)", f[9]);
    return 0;
}

int mm_table_load(mm_table *t, const char *path, int missing_ok, char *err, size_t errlen) {
    void *e = NULL;
    int32_t n = 0;
    const int rc = base_load_records(path, missing_ok, sizeof(mm_table_entry), mm_table_parse_line, t, &e, &n, err,
                                     errlen);
    for (int32_t i = 0; i < n; i++)
        mm_table_put_entry(t, (const mm_table_entry *)e + i);
    free(e);
    return rc;
}

static int mm_entry_cmp(const void *pa, const void *pb) {
    const mm_table_entry *a = pa, *b = pb;
    int c = strcmp(a->device, b->device);
    if (c)
        return c;
    const int64_t ka[6] = {a->k.m, a->k.n, a->k.k, a->k.batch, a->k.epi, a->k.prec};
    const int64_t kb[6] = {b->k.m, b->k.n, b->k.k, b->k.batch, b->k.epi, b->k.prec};
    for (int i = 0; i < 6; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

static void mm_write_entry(void *ctx, FILE *f, const void *rec) {
    const mm_table *t = ctx;
    const mm_table_entry *e = rec;
    char cfg[128];
    fprintf(f, "%s\t%lld\t%lld\t%lld\t%lld\t%s%s%s\t%s\t%d\t%d\t%.2f\n", e->device, (long long)e->k.m,
            (long long)e->k.n, (long long)e->k.k, (long long)e->k.batch, mm_epi_name(e->k.epi), e->k.prec ? "@" : "",
            e->k.prec ? mm_table_prec_name(e->k.prec) : "", mm_choice_name_with(t->names, &e->c, cfg, sizeof cfg),
            e->c.split_k, e->c.group_m, e->us);
}

int mm_table_save(const mm_table *t, const char *path, char *err, size_t errlen) {
    return base_save_records(path,
                             "# tasc matmul tuning table, written by `tasc kernels tune`; fields separated by TABs:\n"
                             "# device\tm\tn\tk\tbatch\tepilogue\tconfig\tsplit_k\tgroup_m\tus\n",
                             t->e, t->n, sizeof *t->e, mm_entry_cmp, mm_write_entry, (void *)t, err, errlen);
}

int mm_table_update(const char *path, const mm_table *add, char *err, size_t errlen) {
    const int fd = base_lock_beside(path, err, errlen);
    if (fd < 0)
        return -1;
    /* under the lock: what another process wrote since we last read is kept */
    mm_table *cur = mm_table_new_names(add->names);
    int rc = mm_table_load(cur, path, 1, err, errlen);
    if (!rc) {
        mm_table_merge(cur, add);
        rc = mm_table_save(cur, path, err, errlen);
    }
    mm_table_free(cur);
    close(fd); /* releases the lock */
    return rc;
}

int mm_autotune_refused(void) {
    const char *e = getenv("TASC_NO_AUTOTUNE");
    return e && *e && strcmp(e, "0") != 0;
}

/* ---- where tables are ------------------------------------------------------------------------- */

const char *mm_cache_dir(char *buf, size_t len) {
    const char *env = getenv("TASC_CACHE_DIR"), *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (home && *home)
        snprintf(buf, len, "%s/.cache/tasc", home);
    else
        snprintf(buf, len, ".tasc-cache");
    return buf;
}

const char *mm_table_cache_path(const char *devkey, char *buf, size_t len) {
    char dir[4096], file[MM_DEVKEY_LEN];
    snprintf(buf, len, "%s/matmul-%s.txt", mm_cache_dir(dir, sizeof dir), mm_devkey_file(devkey, file, sizeof file));
    return buf;
}

const char *mm_table_user_path(char *buf, size_t len) {
    const char *env = getenv("TASC_TUNE_TABLE"), *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (home && *home)
        snprintf(buf, len, "%s/.cache/tasc/matmul_tune.txt", home);
    else
        snprintf(buf, len, "%s", "");
    return buf;
}

/* The repository's bench/runtime from this file's path as the build saw it ("" when the build
 * gave a relative path): the shipped tables are found where the rules are (TASC_RULES_DIR), in the
 * source tree. */
static const char *mm_shipped_dir(char *buf, size_t len) {
    const char *env = getenv("TASC_TUNE_DIR");
    const char *self = __FILE__, *tail = "ops/cuda/matmul_table.c";
    size_t n = strlen(self), t = strlen(tail);
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (self[0] == '/' && n > t && !strcmp(self + n - t, tail))
        snprintf(buf, len, "%.*sbench/runtime", (int)(n - t), self);
    else
        snprintf(buf, len, "%s", "");
    return buf;
}

int mm_table_shipped(char (*paths)[4096], int max) {
    char dir[4096], pat[4200];
    if (!mm_shipped_dir(dir, sizeof dir)[0])
        return 0;
    snprintf(pat, sizeof pat, "%s/matmul_tune*.txt", dir);
    glob_t g;
    memset(&g, 0, sizeof g);
    int n = 0;
    if (glob(pat, 0, NULL, &g) == 0) /* sorted by name */
        for (size_t i = 0; i < g.gl_pathc && n < max; i++)
            snprintf(paths[n++], 4096, "%s", g.gl_pathv[i]);
    globfree(&g);
    return n;
}
