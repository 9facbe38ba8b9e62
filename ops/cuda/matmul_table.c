/* matmul_table.c: the persisted tuning table of the tuned matmul kernel.
 *
 * File format (text, one entry per line, fields separated by one TAB; '#' lines are comments):
 *   device  m  n  k  batch  epilogue  config  split_k  group_m  us
 * e.g. "NVIDIA H100 80GB HBM3  4096  4096  4096  1  none  128x128x8_w64x32_t8x8_s3_u4_b2  1  8  2714.50".
 * The key is (device, m, n, k, batch, epilogue); a later line replaces an earlier one with the
 * same key. Saving sorts by key, so the same entries always give the same bytes. The config is
 * named, not numbered, so a table written by another build fails loudly instead of silently
 * picking a different kernel. The table owns its entries.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base.h"
#include "matmul.h"

#define MM_TABLE_DEVICE_LEN 128

typedef struct {
    char device[MM_TABLE_DEVICE_LEN];
    int64_t m, n, k, batch;
    int32_t epi;  /* has_bias * 3 + act: the index of the epilogue's name */
    mm_choice c;
    double us;    /* median time when tuned */
} mm_table_entry;

struct mm_table {
    mm_table_entry *e; /* owned, n used of cap */
    int32_t n, cap;
};

mm_table *mm_table_new(void) { return base_xcalloc(1, sizeof(mm_table)); }

void mm_table_free(mm_table *t) {
    if (!t)
        return;
    free(t->e);
    free(t);
}

int32_t mm_table_size(const mm_table *t) { return t ? t->n : 0; }

static int32_t mm_epi_index(const mm_problem *p) { return (p->has_bias ? 3 : 0) + (int32_t)p->act; }

static int mm_table_key_eq(const mm_table_entry *e, const char *device, const mm_problem *p) {
    return !strcmp(e->device, device) && e->m == p->m && e->n == p->n && e->k == p->k &&
           e->batch == p->batch && e->epi == mm_epi_index(p);
}

int mm_table_lookup(const mm_table *t, const char *device, const mm_problem *p, mm_choice *c, double *us) {
    if (!t || !device)
        return 0;
    for (int32_t i = 0; i < t->n; i++)
        if (mm_table_key_eq(&t->e[i], device, p)) {
            *c = t->e[i].c;
            if (us)
                *us = t->e[i].us;
            return 1;
        }
    return 0;
}

static void mm_table_put_entry(mm_table *t, const mm_table_entry *ne) {
    for (int32_t i = 0; i < t->n; i++) {
        mm_table_entry *e = &t->e[i];
        if (!strcmp(e->device, ne->device) && e->m == ne->m && e->n == ne->n && e->k == ne->k &&
            e->batch == ne->batch && e->epi == ne->epi) {
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

void mm_table_put(mm_table *t, const char *device, const mm_problem *p, const mm_choice *c, double us) {
    mm_table_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.device, sizeof e.device, "%s", device);
    e.m = p->m;
    e.n = p->n;
    e.k = p->k;
    e.batch = p->batch;
    e.epi = mm_epi_index(p);
    e.c = *c;
    e.us = us;
    mm_table_put_entry(t, &e);
}

/* Strict integer in [lo, hi]: digits only, no sign, no spaces. */
static int mm_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!*s || s[strspn(s, "0123456789")] != '\0')
        return -1;
    return base_parse_int64_in(s, lo, hi, out);
}

/* Splits line (modified in place) at TABs into at most max fields; returns the count. */
static int mm_split_tabs(char *line, char **f, int max) {
    int n = 0;
    char *s = line;
    for (;;) {
        if (n == max)
            return max + 1;
        f[n++] = s;
        char *tab = strchr(s, '\t');
        if (!tab)
            return n;
        *tab = '\0';
        s = tab + 1;
    }
}

static int mm_table_parse_line(char *line, mm_table_entry *e, char *why, size_t whylen) {
    char *f[10];
    int nf = mm_split_tabs(line, f, 10);
    if (nf != 10)
        return base_fail(why, whylen, "expected 10 TAB-separated fields, found %s%d", nf > 10 ? "more than " : "",
                         nf > 10 ? 10 : nf);
    memset(e, 0, sizeof *e);
    if (!f[0][0] || strlen(f[0]) >= sizeof e->device)
        return base_fail(why, whylen, "device name empty or longer than %d bytes", MM_TABLE_DEVICE_LEN - 1);
    snprintf(e->device, sizeof e->device, "%s", f[0]);
    int64_t *dims[4] = {&e->m, &e->n, &e->k, &e->batch};
    const char *names[4] = {"m", "n", "k", "batch"};
    for (int i = 0; i < 4; i++)
        if (mm_parse_int(f[1 + i], 1, i < 3 ? MM_MAX_DIM : INT32_MAX, dims[i]))
            return base_fail(why, whylen, "bad %s '%s'", names[i], f[1 + i]);
    int32_t has_bias;
    mm_act act;
    if (mm_epilogue_parse(f[5], &has_bias, &act))
        return base_fail(why, whylen, "unknown epilogue '%s' (none, bias, relu, gelu, bias_relu, bias_gelu)", f[5]);
    e->epi = (has_bias ? 3 : 0) + (int32_t)act;
    e->c.cfg = mm_config_find(f[6]);
    if (e->c.cfg < 0)
        return base_fail(why, whylen, "unknown tile configuration '%s' (tasc kernels list shows this build's)", f[6]);
    int64_t v;
    if (mm_parse_int(f[7], 1, 64, &v))
        return base_fail(why, whylen, "bad split_k '%s' (an integer in [1, 64])", f[7]);
    e->c.split_k = (int32_t)v;
    if (mm_parse_int(f[8], 1, 1024, &v))
        return base_fail(why, whylen, "bad group_m '%s' (an integer in [1, 1024])", f[8]);
    e->c.group_m = (int32_t)v;
    if (base_parse_double_in(f[9], 0.0, HUGE_VAL, &e->us))
        return base_fail(why, whylen, "bad time '%s' (microseconds)", f[9]);
    return 0;
}

int mm_table_load(mm_table *t, const char *path, int missing_ok, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT && missing_ok)
            return 0;
        return base_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = 0;
    mm_table_entry *staged = NULL; /* entries are added only when the whole file is good */
    int32_t n = 0, scap = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (memchr(line, '\0', (size_t)len)) {
            rc = base_fail(err, errlen, "%s:%ld: NUL byte in line", path, lineno);
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        mm_table_entry e;
        char why[256];
        if (mm_table_parse_line(line, &e, why, sizeof why)) {
            rc = base_fail(err, errlen, "%s:%ld: %s", path, lineno, why);
            break;
        }
        if (n == scap) {
            scap = scap ? 2 * scap : 16;
            staged = base_xrealloc(staged, (size_t)scap * sizeof *staged);
        }
        staged[n++] = e;
    }
    if (!rc && ferror(f))
        rc = base_fail(err, errlen, "%s: read error", path);
    fclose(f);
    free(line);
    if (!rc)
        for (int32_t i = 0; i < n; i++)
            mm_table_put_entry(t, &staged[i]);
    free(staged);
    return rc;
}

static int mm_entry_cmp(const void *pa, const void *pb) {
    const mm_table_entry *a = pa, *b = pb;
    int c = strcmp(a->device, b->device);
    if (c)
        return c;
    const int64_t ka[5] = {a->m, a->n, a->k, a->batch, a->epi}, kb[5] = {b->m, b->n, b->k, b->batch, b->epi};
    for (int i = 0; i < 5; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

int mm_table_save(const mm_table *t, const char *path, char *err, size_t errlen) {
    if (base_mkdirs_for(path, err, errlen)) {
        base_prefix(err, errlen, "%s: ", path);
        return -1;
    }
    base_afile af;
    if (base_afile_open(&af, path, err, errlen))
        return -1;
    mm_table_entry *sorted = NULL;
    if (t->n) {
        sorted = base_xmalloc((size_t)t->n * sizeof *sorted);
        memcpy(sorted, t->e, (size_t)t->n * sizeof *sorted);
        qsort(sorted, (size_t)t->n, sizeof *sorted, mm_entry_cmp);
    }
    fprintf(af.f, "# tasc matmul tuning table, written by `tasc kernels tune`; fields separated by TABs:\n"
                  "# device\tm\tn\tk\tbatch\tepilogue\tconfig\tsplit_k\tgroup_m\tus\n");
    for (int32_t i = 0; i < t->n; i++) {
        const mm_table_entry *e = &sorted[i];
        char cfg[96];
        fprintf(af.f, "%s\t%lld\t%lld\t%lld\t%lld\t%s\t%s\t%d\t%d\t%.2f\n", e->device, (long long)e->m,
                (long long)e->n, (long long)e->k, (long long)e->batch,
                mm_epilogue_name(e->epi >= 3, (mm_act)(e->epi % 3)), mm_config_name(e->c.cfg, cfg, sizeof cfg),
                e->c.split_k, e->c.group_m, e->us);
    }
    free(sorted);
    return base_afile_commit(&af, err, errlen);
}

const char *mm_table_default_path(char *buf, size_t len) {
    const char *env = getenv("TASC_TUNE_TABLE");
    const char *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (home && *home)
        snprintf(buf, len, "%s/.cache/tasc/matmul_tune.txt", home);
    else
        snprintf(buf, len, "matmul_tune.txt");
    return buf;
}
