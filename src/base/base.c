/* base.c: messages, checked allocation, atomic files, mkdir -p, time and number parsing (base.h).
 * Stateless; every function is safe to call from several threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

/* --- messages -------------------------------------------------------------------------------- */

int base_vfail(char *err, size_t errlen, const char *fmt, va_list ap) {
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    return -1;
}

int base_fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int base_vfail_line(char *err, size_t errlen, const char *fmt, va_list ap) {
    if (!err || !errlen)
        return -1;
    vsnprintf(err, errlen, fmt, ap);
    for (char *c = err; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    return -1;
}

int base_fail_line(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail_line(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void base_prefix(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    char *old = base_xstrdup(err);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, "%s", old);
    free(old);
}

void base_die_at(const char *file, int line, const char *fmt, ...) {
    fprintf(stderr, "tasc: %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* --- allocation ------------------------------------------------------------------------------ */

void *base_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        base_die("out of memory (%zu bytes)", n);
    return p;
}

void *base_xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        base_die("out of memory (%zu x %zu bytes)", count, size);
    return p;
}

void *base_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q)
        base_die("out of memory (%zu bytes)", n);
    return q;
}

char *base_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(base_xmalloc(n), s, n);
}

void *base_grow(void *p, int32_t *cap, int32_t need, size_t elem) {
    if (need <= *cap)
        return p;
    int64_t c = *cap < 8 ? 8 : *cap;
    while (c < need)
        c *= 2;
    if (c > INT32_MAX)
        c = INT32_MAX;
    if (c < need)
        base_die("array of %d elements too large", (int)need);
    char *q = base_xrealloc(p, (size_t)c * elem);
    memset(q + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *cap = (int32_t)c;
    return q;
}

/* --- files ----------------------------------------------------------------------------------- */

int base_afile_open(base_afile *a, const char *path, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    size_t n = strlen(path);
    a->path = base_xstrdup(path);
    a->tmp = base_xmalloc(n + 12);
    memcpy(a->tmp, path, n);
    memcpy(a->tmp + n, ".tmpXXXXXX", 11);
    int fd = mkstemp(a->tmp);
    if (fd < 0) {
        base_fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        free(a->tmp);
        a->tmp = NULL;
        base_afile_abort(a);
        return -1;
    }
    (void)fchmod(fd, 0644); /* mkstemp makes 0600 */
    a->f = fdopen(fd, "w");
    if (!a->f) {
        base_fail(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        base_afile_abort(a);
        return -1;
    }
    return 0;
}

int base_afile_commit(base_afile *a, char *err, size_t errlen) {
    int bad = ferror(a->f);
    int saved = bad ? EIO : 0;
    if (fclose(a->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    a->f = NULL;
    if (!bad && rename(a->tmp, a->path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        base_fail(err, errlen, "%s: cannot write: %s", a->path, strerror(saved));
        base_afile_abort(a);
        return -1;
    }
    free(a->tmp);
    free(a->path);
    memset(a, 0, sizeof *a);
    return 0;
}

void base_afile_abort(base_afile *a) {
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    free(a->tmp);
    free(a->path);
    memset(a, 0, sizeof *a);
}

char *base_dirname(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        return base_xstrdup(".");
    if (slash == path)
        return base_xstrdup("/");
    size_t n = (size_t)(slash - path);
    char *d = base_xmalloc(n + 1);
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

int base_mkdirs(const char *dir, char *err, size_t errlen) {
    if (!dir[0])
        return 0;
    char *d = base_xstrdup(dir);
    int rc = 0;
    for (char *q = d + 1;; q++) {
        char c = *q;
        if (c != '/' && c != '\0')
            continue;
        *q = '\0';
        struct stat st;
        if (mkdir(d, 0755) != 0 && errno != EEXIST) {
            rc = base_fail(err, errlen, "%s: cannot create the folder: %s", d, strerror(errno));
            break;
        }
        if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rc = base_fail(err, errlen, "%s: not a folder", d);
            break;
        }
        *q = c;
        if (!c)
            break;
    }
    free(d);
    return rc;
}

int base_mkdirs_for(const char *path, char *err, size_t errlen) {
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    char *d = base_xstrdup(path);
    d[slash - path] = '\0';
    int rc = base_mkdirs(d, err, errlen);
    free(d);
    return rc;
}

int base_lock_beside(const char *path, char *err, size_t errlen) {
    if (base_mkdirs_for(path, err, errlen)) {
        base_prefix(err, errlen, "%s: ", path);
        return -1;
    }
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    if (fd < 0)
        return base_fail(err, errlen, "%s: cannot open: %s", lock, strerror(errno));
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    int r;
    while ((r = fcntl(fd, F_SETLKW, &fl)) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        int e = errno;
        close(fd);
        return base_fail(err, errlen, "%s: cannot lock: %s", lock, strerror(e));
    }
    return fd;
}

int base_split_fields(char *line, char sep, char **f, int max) {
    int n = 0;
    char *s = line;
    for (;;) {
        if (n == max)
            return max + 1;
        f[n++] = s;
        char *at = strchr(s, sep);
        if (!at)
            return n;
        *at = '\0';
        s = at + 1;
    }
}

int base_parse_uint_in(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!*s || s[strspn(s, "0123456789")] != '\0')
        return -1;
    return base_parse_int64_in(s, lo, hi, out);
}

int base_read_lines(FILE *f, const char *path, int (*fn)(void *ctx, char *line, char *why, size_t whylen), void *ctx,
                    char *err, size_t errlen) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = 0;
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
        char why[512];
        if (fn(ctx, line, why, sizeof why)) {
            rc = base_fail(err, errlen, "%s:%ld: %s", path, lineno, why);
            break;
        }
    }
    if (!rc && ferror(f))
        rc = base_fail(err, errlen, "%s: read error", path);
    free(line);
    return rc;
}

int base_load_lines(const char *path, int missing_ok, int (*fn)(void *ctx, char *line, char *why, size_t whylen),
                    void *ctx, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT && missing_ok)
            return 0;
        return base_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    }
    const int rc = base_read_lines(f, path, fn, ctx, err, errlen);
    fclose(f);
    return rc;
}

typedef struct {
    int (*parse)(void *ctx, char *line, void *rec, char *why, size_t whylen);
    void *ctx;
    size_t elem;
    char *recs;
    int32_t n, cap;
} base_records;

static int base_record_line(void *ctx, char *line, char *why, size_t whylen) {
    base_records *r = ctx;
    r->recs = base_grow(r->recs, &r->cap, r->n + 1, r->elem);
    if (r->parse(r->ctx, line, r->recs + (size_t)r->n * r->elem, why, whylen))
        return -1;
    r->n++;
    return 0;
}

int base_load_records(const char *path, int missing_ok, size_t elem,
                      int (*parse)(void *ctx, char *line, void *rec, char *why, size_t whylen), void *ctx, void **recs,
                      int32_t *n, char *err, size_t errlen) {
    base_records r = {parse, ctx, elem, NULL, 0, 0};
    const int rc = base_load_lines(path, missing_ok, base_record_line, &r, err, errlen);
    if (rc) {
        free(r.recs);
        r.recs = NULL;
        r.n = 0;
    }
    *recs = r.recs;
    *n = r.n;
    return rc;
}

int base_save_records(const char *path, const char *header, const void *recs, int32_t n, size_t elem,
                      int (*cmp)(const void *a, const void *b), void (*write)(void *ctx, FILE *f, const void *rec),
                      void *ctx, char *err, size_t errlen) {
    if (base_mkdirs_for(path, err, errlen)) {
        base_prefix(err, errlen, "%s: ", path);
        return -1;
    }
    base_afile af;
    if (base_afile_open(&af, path, err, errlen))
        return -1;
    char *sorted = NULL;
    if (n > 0) {
        sorted = base_xmalloc((size_t)n * elem);
        memcpy(sorted, recs, (size_t)n * elem);
        qsort(sorted, (size_t)n, elem, cmp);
    }
    if (header)
        fputs(header, af.f);
    for (int32_t i = 0; i < n; i++)
        write(ctx, af.f, sorted + (size_t)i * elem);
    free(sorted);
    return base_afile_commit(&af, err, errlen);
}

/* --- hashing ------------------------------------------------------------------------------- */

uint64_t base_fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

uint64_t base_fnv1a_str(const char *s) { return base_fnv1a(BASE_FNV_INIT, s, strlen(s)); }

/* --- time ------------------------------------------------------------------------------------ */

double base_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --- numbers --------------------------------------------------------------------------------- */

int base_parse_double(const char *s, double *out) {
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int base_parse_int64(const char *s, int64_t *out) {
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int base_parse_double_in(const char *s, double lo, double hi, double *out) {
    double v;
    if (base_parse_double(s, &v) < 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int base_parse_int64_in(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    int64_t v;
    if (base_parse_int64(s, &v) < 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int base_mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

int base_add_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}
