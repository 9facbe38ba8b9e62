/* conv_table.c: the per-device cache of convolution path choices (conv_table.h): entries, their
 * file format, and the locked read-merge-write that several processes share.
 *
 * A line (fields separated by TABs; '#' starts a comment line):
 *   device  cudnn  key  path  algo  algo_ws  3xtf32  igemm  wgmma  ms  fused
 * key: the CT_KEY_LEN integers of conv_table.h, separated by commas; path and algo by name
 * (ops_conv.cu's path names, cuDNN's algorithm names as --verbose prints them); 3xtf32, igemm,
 * wgmma: CONFIG/SPLIT, the tile configuration by name (SPLIT 0: not measured); ms: one time per path in path order,
 * "inf" where the path cannot run; fused: yes, no, or - (not decided).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "conv_table.h"

_Static_assert(CT_KEY_LEN == 21 && CT_PATHS == 6, "the counts in the messages below");

const char *const ct_path_names[CT_PATHS] = {"cudnn", "gemm", "direct", "3xtf32", "igemm", "wgmma"};

/* cudnnConvolutionFwdAlgo_t's values 0..7 in order (cudnn_cnn.h). */
static const char *const ct_algo_names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
                                            "fft", "fft_tiling", "winograd", "winograd_nonfused"};
#define CT_ALGOS ((int32_t)(sizeof ct_algo_names / sizeof ct_algo_names[0]))
static const char *const ct_kind_names[CT_KINDS] = {"3xtf32", "igemm", "wgmma"};

const char *ct_algo_name(int32_t algo) { return algo >= 0 && algo < CT_ALGOS ? ct_algo_names[algo] : "?"; }

int32_t ct_algo_find(const char *name) {
    for (int32_t i = 0; i < CT_ALGOS; i++)
        if (!strcmp(name, ct_algo_names[i]))
            return i;
    return -1;
}

struct ct_table {
    const ct_cfg_names *names;
    ct_entry *e;
    int32_t n, cap;
};

ct_table *ct_table_new(const ct_cfg_names *names) {
    ct_table *t = base_xcalloc(1, sizeof *t);
    t->names = names;
    return t;
}

void ct_table_free(ct_table *t) {
    if (!t)
        return;
    free(t->e);
    free(t);
}

int32_t ct_table_size(const ct_table *t) { return t ? t->n : 0; }

static int ct_same(const ct_entry *a, const char *device, int32_t cudnn, const int64_t *key) {
    return a->cudnn == cudnn && !strcmp(a->device, device) && !memcmp(a->key, key, sizeof a->key);
}

int ct_table_get(const ct_table *t, const char *device, int32_t cudnn, const int64_t *key, ct_entry *e) {
    for (int32_t i = 0; t && i < t->n; i++)
        if (ct_same(&t->e[i], device, cudnn, key)) {
            *e = t->e[i];
            return 1;
        }
    return 0;
}

void ct_table_set(ct_table *t, const ct_entry *e) {
    for (int32_t i = 0; i < t->n; i++)
        if (ct_same(&t->e[i], e->device, e->cudnn, e->key)) {
            t->e[i] = *e;
            return;
        }
    t->e = base_grow(t->e, &t->cap, t->n + 1, sizeof *t->e);
    t->e[t->n++] = *e;
}

/* ---- reading ------------------------------------------------------------------------------------ */

/* field split at commas into exactly n values (v holds n + 1), else the reason for what. */
static int ct_split_list(char *field, char **v, int n, const char *what, char *why, size_t whylen) {
    const int got = base_split_fields(field, ',', v, n);
    if (got != n)
        return base_fail(why, whylen, "%s separated by commas, found %s%d", what, got > n ? "more than " : "",
                         got > n ? n : got);
    return 0;
}

static int ct_parse_key(char *field, int64_t *key, char *why, size_t whylen) {
    char *v[CT_KEY_LEN + 1];
    if (ct_split_list(field, v, CT_KEY_LEN, "key: expected 21 integers", why, whylen))
        return -1;
    for (int i = 0; i < CT_KEY_LEN; i++)
        if (base_parse_uint_in(v[i], 0, INT64_MAX, &key[i]))
            return base_fail(why, whylen, "key: bad integer '%s' at position %d", v[i], i + 1);
    return 0;
}

/* "CONFIG/SPLIT" of kind into e->cfg[kind], e->split[kind]. */
static int ct_parse_tile(const ct_table *t, int32_t kind, char *field, ct_entry *e, char *why, size_t whylen) {
    char *slash = strrchr(field, '/');
    int64_t split;
    if (!slash)
        return base_fail(why, whylen, "%s: expected CONFIG/SPLIT, found '%s'", ct_kind_names[kind], field);
    *slash = '\0';
    if ((e->cfg[kind] = t->names->find(kind, field)) < 0)
        return base_fail(why, whylen, "unknown %s configuration '%s' (a file from another build?)",
                         ct_kind_names[kind], field);
    if (base_parse_uint_in(slash + 1, 0, 64, &split))
        return base_fail(why, whylen, "%s: bad split '%s' (an integer in [0, 64])", ct_kind_names[kind], slash + 1);
    e->split[kind] = (int32_t)split;
    return 0;
}

static int ct_parse_ms(char *field, float *ms, char *why, size_t whylen) {
    char *v[CT_PATHS + 1];
    if (ct_split_list(field, v, CT_PATHS, "ms: expected 6 times", why, whylen))
        return -1;
    for (int i = 0; i < CT_PATHS; i++) {
        double d;
        if (!strcmp(v[i], "inf"))
            ms[i] = INFINITY;
        else if (base_parse_double_in(v[i], 0.0, 1e9, &d))
            return base_fail(why, whylen, "ms: bad time '%s' for %s (milliseconds, or inf)", v[i], ct_path_names[i]);
        else
            ms[i] = (float)d;
    }
    return 0;
}

static int ct_find_name(const char *const *names, int32_t n, const char *s) {
    for (int32_t i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* A line into one entry (base_load_records' parse: ctx the table, rec the entry). */
static int ct_parse_line(void *ctx, char *line, void *rec, char *why, size_t whylen) {
    const ct_table *t = ctx;
    ct_entry *e = rec;
    char *f[12];
    const int nf = base_split_fields(line, '\t', f, 11);
    int64_t v;
    if (nf != 11)
        return base_fail(why, whylen, "expected 11 TAB-separated fields, found %s%d", nf > 11 ? "more than " : "",
                         nf > 11 ? 11 : nf);
    memset(e, 0, sizeof *e);
    if (!f[0][0] || strlen(f[0]) >= sizeof e->device)
        return base_fail(why, whylen, "device name empty or longer than %d bytes", MM_DEVKEY_LEN - 1);
    snprintf(e->device, sizeof e->device, "%s", f[0]);
    if (base_parse_uint_in(f[1], 0, INT32_MAX, &v))
        return base_fail(why, whylen, "bad cuDNN version '%s'", f[1]);
    e->cudnn = (int32_t)v;
    if (ct_parse_key(f[2], e->key, why, whylen))
        return -1;
    if ((e->path = ct_find_name(ct_path_names, CT_PATHS, f[3])) < 0)
        return base_fail(why, whylen, "unknown path '%s' (cudnn, gemm, direct, 3xtf32, igemm, wgmma)", f[3]);
    if ((e->algo = ct_algo_find(f[4])) < 0)
        return base_fail(why, whylen, "unknown cuDNN algorithm '%s'", f[4]);
    if (base_parse_uint_in(f[5], 0, INT64_MAX, &v))
        return base_fail(why, whylen, "bad workspace bytes '%s'", f[5]);
    e->algo_ws = v;
    for (int32_t k = 0; k < CT_KINDS; k++)
        if (ct_parse_tile(t, k, f[6 + k], e, why, whylen))
            return -1;
    if (ct_parse_ms(f[9], e->ms, why, whylen))
        return -1;
    static const char *const fused[] = {"-", "no", "yes"};
    if ((e->fused = ct_find_name(fused, 3, f[10]) - 1) < -1)
        return base_fail(why, whylen, "bad fused '%s' (yes, no or -)", f[10]);
    return 0;
}

int ct_table_load(ct_table *t, const char *path, int missing_ok, char *err, size_t errlen) {
    void *e = NULL;
    int32_t n = 0;
    const int rc = base_load_records(path, missing_ok, sizeof(ct_entry), ct_parse_line, t, &e, &n, err, errlen);
    for (int32_t i = 0; i < n; i++)
        ct_table_set(t, (const ct_entry *)e + i);
    free(e);
    return rc;
}

/* ---- writing ------------------------------------------------------------------------------------ */

static int ct_entry_cmp(const void *pa, const void *pb) {
    const ct_entry *a = pa, *b = pb;
    int c = strcmp(a->device, b->device);
    if (c)
        return c;
    if (a->cudnn != b->cudnn)
        return a->cudnn < b->cudnn ? -1 : 1;
    for (int i = 0; i < CT_KEY_LEN; i++)
        if (a->key[i] != b->key[i])
            return a->key[i] < b->key[i] ? -1 : 1;
    return 0;
}

static void ct_write_entry(void *ctx, FILE *f, const void *rec) {
    const ct_table *t = ctx;
    const ct_entry *e = rec;
    fprintf(f, "%s\t%d\t", e->device, e->cudnn);
    for (int i = 0; i < CT_KEY_LEN; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)e->key[i]);
    fprintf(f, "\t%s\t%s\t%lld", ct_path_names[e->path], ct_algo_name(e->algo), (long long)e->algo_ws);
    for (int32_t k = 0; k < CT_KINDS; k++)
        fprintf(f, "\t%s/%d", t->names->name(k, e->cfg[k]), e->split[k]);
    for (int i = 0; i < CT_PATHS; i++) {
        if (isfinite(e->ms[i]))
            fprintf(f, "%s%.6g", i ? "," : "\t", (double)e->ms[i]);
        else
            fprintf(f, "%sinf", i ? "," : "\t");
    }
    fprintf(f, "\t%s\n", e->fused < 0 ? "-" : e->fused ? "yes" : "no");
}

int ct_table_save(const ct_table *t, const char *path, char *err, size_t errlen) {
    return base_save_records(path,
                             "# tasc convolution path choices (ops/cuda/conv_table.h); fields separated by TABs:\n"
                             "# device\tcudnn\tkey\tpath\talgo\talgo_ws\t3xtf32\tigemm\twgmma\tms\tfused\n",
                             t->e, t->n, sizeof *t->e, ct_entry_cmp, ct_write_entry, (void *)t, err, errlen);
}

int ct_table_update(const char *path, const ct_table *add, char *err, size_t errlen) {
    const int fd = base_lock_beside(path, err, errlen);
    if (fd < 0)
        return -1;
    /* under the lock: what another process wrote since we last read is kept */
    ct_table *cur = ct_table_new(add->names);
    int rc = ct_table_load(cur, path, 1, err, errlen);
    for (int32_t i = 0; !rc && i < add->n; i++)
        ct_table_set(cur, &add->e[i]);
    if (!rc)
        rc = ct_table_save(cur, path, err, errlen);
    ct_table_free(cur);
    close(fd); /* releases the lock */
    return rc;
}

const char *ct_cache_path(const char *devkey, char *buf, size_t len) {
    char dir[4096], file[MM_DEVKEY_LEN];
    snprintf(buf, len, "%s/conv-%s.txt", mm_cache_dir(dir, sizeof dir), mm_devkey_file(devkey, file, sizeof file));
    return buf;
}

int ct_cache_off(void) {
    const char *e = getenv("TASC_CONV_CACHE");
    return e && (!strcmp(e, "off") || !strcmp(e, "0"));
}
