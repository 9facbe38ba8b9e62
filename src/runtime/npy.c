/* npy.c: reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Reading accepts little-endian float32, float64, int64 and int32 in C order and converts to
 * float32; integers must be exactly representable (|v| <= 2^24). The header is parsed as the
 * small Python dict literal NumPy writes, strictly: every malformed or unsupported header gets a
 * one-line message naming the file. Bytes are decoded one by one, so the code does not depend
 * on the host's byte order. Writing goes to a temporary file in the target's folder that is
 * renamed at the end, so a failure never leaves a partial file behind.
 * npy_read returns a malloc'd buffer owned by the caller.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base.h"
#include "exec.h"

#define NPY_MAX_HEADER (1 << 20)   /* NumPy itself refuses headers over 10000 bytes by default */
#define NPY_MAX_EXACT_INT (INT64_C(1) << 24)

typedef enum { NPY_F4, NPY_F8, NPY_I8, NPY_I4 } npy_dtype;

static const struct {
    const char *descr;
    npy_dtype dt;
    int size;
} npy_dtypes[] = {
    {"<f4", NPY_F4, 4}, {"<f8", NPY_F8, 8}, {"<i8", NPY_I8, 8}, {"<i4", NPY_I4, 4},
};

/* "PATH: " and the message into err; returns -1. */
static int npy_err(char *err, size_t errlen, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail(err, errlen, fmt, ap);
    va_end(ap);
    base_prefix(err, errlen, "%s: ", path);
    return -1;
}

/* --- header parsing ------------------------------------------------------------------------ */

typedef struct {
    const char *s;   /* header text, hlen bytes, not NUL-terminated */
    size_t n, pos;
    const char *path;
    char *err;
    size_t errlen;
} npy_parser;

static void np_ws(npy_parser *p) {
    while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
                             p->s[p->pos] == '\r'))
        p->pos++;
}

static int np_fail(npy_parser *p, const char *what) {
    return npy_err(p->err, p->errlen, p->path, "bad .npy header: %s at header offset %zu", what, p->pos);
}

static int np_expect(npy_parser *p, char c, const char *what) {
    np_ws(p);
    if (p->pos >= p->n || p->s[p->pos] != c)
        return np_fail(p, what);
    p->pos++;
    return 0;
}

/* A quoted string ('..' or ".."), no escapes (NumPy writes none), into buf. */
static int np_string(npy_parser *p, char *buf, size_t len) {
    np_ws(p);
    if (p->pos >= p->n || (p->s[p->pos] != '\'' && p->s[p->pos] != '"'))
        return np_fail(p, "expected a quoted string");
    char q = p->s[p->pos++];
    size_t end = p->pos;
    while (end < p->n && p->s[end] != q && p->s[end] != '\n')
        end++;
    if (end >= p->n || p->s[end] != q)
        return np_fail(p, "unterminated string");
    if (end - p->pos >= len)
        return np_fail(p, "string too long");
    size_t k = 0;
    for (; p->pos < end; p->pos++) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '\\' || c < 0x20 || c > 0x7e)
            return np_fail(p, "unsupported character in string");
        buf[k++] = (char)c;
    }
    p->pos++;
    buf[k] = '\0';
    return 0;
}

static int np_word(npy_parser *p, const char *w) {
    size_t l = strlen(w);
    if (p->pos + l <= p->n && !memcmp(p->s + p->pos, w, l)) {
        p->pos += l;
        return 1;
    }
    return 0;
}

/* A shape tuple: "()", "(3,)", "(2, 3)", "(2, 3,)"; Python 2 era files may write "3L". */
static int np_shape(npy_parser *p, ops_shape *sh) {
    memset(sh, 0, sizeof *sh);
    if (np_expect(p, '(', "expected '(' to start the shape") < 0)
        return -1;
    int need_comma_for_one = 1;
    for (;;) {
        np_ws(p);
        if (p->pos < p->n && p->s[p->pos] == ')') {
            p->pos++;
            break;
        }
        if (p->pos >= p->n)
            return np_fail(p, "unterminated shape");
        if (p->s[p->pos] == '-')
            return np_fail(p, "negative dimension in shape");
        if (p->s[p->pos] < '0' || p->s[p->pos] > '9')
            return np_fail(p, "expected a dimension in shape");
        int64_t v = 0;
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
            int d = p->s[p->pos] - '0';
            if (v > (INT64_MAX - d) / 10)
                return np_fail(p, "dimension overflows int64");
            v = v * 10 + d;
            p->pos++;
        }
        if (p->pos < p->n && p->s[p->pos] == 'L')
            p->pos++;
        if (sh->rank >= OPS_MAX_DIMS) {
            char msg[64];
            snprintf(msg, sizeof msg, "shape has more than %d dimensions", OPS_MAX_DIMS);
            return np_fail(p, msg);
        }
        sh->dims[sh->rank++] = v;
        np_ws(p);
        if (p->pos < p->n && p->s[p->pos] == ',') {
            p->pos++;
            need_comma_for_one = 0;
            continue;
        }
        if (p->pos < p->n && p->s[p->pos] == ')') {
            /* "(3)" is the integer 3 in Python, not a tuple */
            if (sh->rank == 1 && need_comma_for_one)
                return np_fail(p, "a one-dimensional shape needs a trailing comma");
            p->pos++;
            break;
        }
        return np_fail(p, "expected ',' or ')' in shape");
    }
    return 0;
}

static int np_header(npy_parser *p, npy_dtype *dt, int *itemsize, ops_shape *sh) {
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    if (np_expect(p, '{', "expected '{'") < 0)
        return -1;
    for (;;) {
        np_ws(p);
        if (p->pos < p->n && p->s[p->pos] == '}') {
            p->pos++;
            break;
        }
        char key[32];
        if (np_string(p, key, sizeof key) < 0)
            return -1;
        if (np_expect(p, ':', "expected ':' after a key") < 0)
            return -1;
        np_ws(p);
        if (!strcmp(key, "descr")) {
            char d[32];
            if (have_descr)
                return np_fail(p, "duplicate key 'descr'");
            if (np_string(p, d, sizeof d) < 0)
                return -1;
            have_descr = 1;
            size_t k = 0;
            for (; k < sizeof npy_dtypes / sizeof npy_dtypes[0]; k++)
                if (!strcmp(d, npy_dtypes[k].descr))
                    break;
            if (k == sizeof npy_dtypes / sizeof npy_dtypes[0]) {
                if (d[0] == '>')
                    npy_err(p->err, p->errlen, p->path,
                            "unsupported dtype '%s': big-endian data is not supported", d);
                else
                    npy_err(p->err, p->errlen, p->path,
                            "unsupported dtype '%s' (expected <f4, <f8, <i8 or <i4)", d);
                return -1;
            }
            *dt = npy_dtypes[k].dt;
            *itemsize = npy_dtypes[k].size;
        } else if (!strcmp(key, "fortran_order")) {
            if (have_fortran)
                return np_fail(p, "duplicate key 'fortran_order'");
            have_fortran = 1;
            if (np_word(p, "True")) {
                npy_err(p->err, p->errlen, p->path, "fortran_order True is not supported (save C-ordered data)");
                return -1;
            }
            if (!np_word(p, "False"))
                return np_fail(p, "fortran_order must be True or False");
        } else if (!strcmp(key, "shape")) {
            if (have_shape)
                return np_fail(p, "duplicate key 'shape'");
            have_shape = 1;
            if (np_shape(p, sh) < 0)
                return -1;
        } else {
            char msg[64];
            snprintf(msg, sizeof msg, "unknown key '%s'", key);
            return np_fail(p, msg);
        }
        np_ws(p);
        if (p->pos < p->n && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->n && p->s[p->pos] == '}') {
            p->pos++;
            break;
        }
        return np_fail(p, "expected ',' or '}'");
    }
    np_ws(p);
    if (p->pos != p->n)
        return np_fail(p, "unexpected text after the dict");
    if (!have_descr || !have_fortran || !have_shape) {
        npy_err(p->err, p->errlen, p->path, "bad .npy header: missing key '%s'",
                !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
        return -1;
    }
    return 0;
}

/* --- reading ------------------------------------------------------------------------------- */

static uint64_t npy_le(const unsigned char *b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

/* Convert n items of type dt from raw little-endian bytes into dst; -1 with a message for an
 * integer that float32 cannot hold exactly. */
static int npy_convert(const unsigned char *raw, int64_t n, npy_dtype dt, float *dst, const char *path,
                       char *err, size_t errlen) {
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case NPY_F4: {
            uint32_t u = (uint32_t)npy_le(raw + 4 * i, 4);
            memcpy(&dst[i], &u, 4);
            break;
        }
        case NPY_F8: {
            uint64_t u = npy_le(raw + 8 * i, 8);
            double d;
            memcpy(&d, &u, 8);
            /* converting an out-of-range double to float is undefined behaviour in C */
            if (isfinite(d) && fabs(d) > FLT_MAX)
                dst[i] = d > 0 ? INFINITY : -INFINITY;
            else
                dst[i] = (float)d;
            break;
        }
        case NPY_I8:
        case NPY_I4: {
            int64_t v;
            if (dt == NPY_I8) {
                uint64_t u = npy_le(raw + 8 * i, 8);
                memcpy(&v, &u, 8);
            } else {
                uint32_t u = (uint32_t)npy_le(raw + 4 * i, 4);
                int32_t w;
                memcpy(&w, &u, 4);
                v = w;
            }
            if (v > NPY_MAX_EXACT_INT || v < -NPY_MAX_EXACT_INT) {
                npy_err(err, errlen, path, "element %lld = %lld is not exactly representable as float32 (|v| > 2^24)",
                        (long long)i, (long long)v);
                return -1;
            }
            dst[i] = (float)v;
            break;
        }
        }
    }
    return 0;
}

float *npy_read(const char *path, ops_shape *shape, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        npy_err(err, errlen, path, "cannot open: %s", strerror(errno));
        return NULL;
    }
    float *out = NULL;
    char *hdr = NULL;
    unsigned char *raw = NULL;
    struct stat stt;
    if (fstat(fileno(f), &stt) != 0 || !S_ISREG(stt.st_mode)) {
        npy_err(err, errlen, path, "not a regular file");
        goto done;
    }
    unsigned char pre[12];
    size_t got = fread(pre, 1, 10, f);
    if (got < 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        npy_err(err, errlen, path, "not a .npy file (bad magic)");
        goto done;
    }
    int major = pre[6], minor = pre[7];
    size_t hlen, pre_len;
    if (major == 1) {
        if (got < 10) {
            npy_err(err, errlen, path, "truncated .npy header");
            goto done;
        }
        hlen = (size_t)npy_le(pre + 8, 2);
        pre_len = 10;
    } else if (major == 2 || major == 3) {
        if (got < 10 || fread(pre + 10, 1, 2, f) != 2) {
            npy_err(err, errlen, path, "truncated .npy header");
            goto done;
        }
        hlen = (size_t)npy_le(pre + 8, 4);
        pre_len = 12;
    } else {
        npy_err(err, errlen, path, "unsupported .npy format version %d.%d", major, minor);
        goto done;
    }
    if (hlen > NPY_MAX_HEADER || (int64_t)(pre_len + hlen) > (int64_t)stt.st_size) {
        npy_err(err, errlen, path, "truncated or oversized .npy header (%zu bytes declared)", hlen);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (!hdr) {
        npy_err(err, errlen, path, "out of memory reading the header");
        goto done;
    }
    if (fread(hdr, 1, hlen, f) != hlen) {
        npy_err(err, errlen, path, "truncated .npy header");
        goto done;
    }
    hdr[hlen] = '\0';
    npy_parser p = {.s = hdr, .n = hlen, .pos = 0, .path = path, .err = err, .errlen = errlen};
    npy_dtype dt = NPY_F4;
    int itemsize = 4;
    ops_shape sh;
    if (np_header(&p, &dt, &itemsize, &sh) < 0)
        goto done;
    int64_t numel = 1;
    for (int i = 0; i < sh.rank; i++) {
        if (sh.dims[i] != 0 && numel > INT64_MAX / sh.dims[i]) {
            npy_err(err, errlen, path, "shape overflows int64");
            goto done;
        }
        numel *= sh.dims[i];
    }
    int64_t avail = (int64_t)stt.st_size - (int64_t)(pre_len + hlen);
    if (numel > INT64_MAX / itemsize || numel * itemsize > avail) {
        npy_err(err, errlen, path, "truncated data: the shape needs %lld elements of %d bytes, the file has %lld bytes",
                (long long)numel, itemsize, (long long)avail);
        goto done;
    }
    int64_t nbytes = numel * itemsize;
    if (nbytes < avail) {
        npy_err(err, errlen, path, "%lld unexpected bytes after the data", (long long)(avail - nbytes));
        goto done;
    }
    if ((uint64_t)nbytes > SIZE_MAX / 2) {
        npy_err(err, errlen, path, "data too large");
        goto done;
    }
    raw = malloc(nbytes ? (size_t)nbytes : 1);
    out = malloc(numel ? (size_t)numel * sizeof(float) : 1); /* itemsize >= 4: cannot overflow */
    if (!raw || !out) {
        npy_err(err, errlen, path, "out of memory for %lld elements", (long long)numel);
        free(out);
        out = NULL;
        goto done;
    }
    if (fread(raw, 1, (size_t)nbytes, f) != (size_t)nbytes) {
        npy_err(err, errlen, path, "read error: %s", ferror(f) ? strerror(errno) : "short read");
        free(out);
        out = NULL;
        goto done;
    }
    if (npy_convert(raw, numel, dt, out, path, err, errlen) < 0) {
        free(out);
        out = NULL;
        goto done;
    }
    *shape = sh;
done:
    free(raw);
    free(hdr);
    fclose(f);
    return out;
}

/* --- writing ------------------------------------------------------------------------------- */

int npy_write(const char *path, const ops_shape *shape, const float *data, char *err, size_t errlen) {
    if (shape->rank < 0 || shape->rank > OPS_MAX_DIMS) {
        npy_err(err, errlen, path, "cannot write rank %d", (int)shape->rank);
        return -1;
    }
    int64_t numel = 1;
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dims[i] < 0 || (shape->dims[i] != 0 && numel > INT64_MAX / 4 / shape->dims[i])) {
            npy_err(err, errlen, path, "cannot write shape with a negative or overflowing dimension");
            return -1;
        }
        numel *= shape->dims[i];
    }
    /* header: the dict NumPy writes, padded with spaces and a newline to a multiple of 64 */
    char dict[256];
    int dl = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int i = 0; i < shape->rank; i++)
        dl += snprintf(dict + dl, sizeof dict - (size_t)dl, "%s%lld", i ? ", " : "", (long long)shape->dims[i]);
    dl += snprintf(dict + dl, sizeof dict - (size_t)dl, "%s), }", shape->rank == 1 ? "," : "");
    size_t pre_len = 10; /* version 1.0: magic, version, u16 length; rank <= 6 always fits */
    size_t total = pre_len + (size_t)dl + 1;
    total = (total + 63) / 64 * 64;
    size_t hlen = total - pre_len;
    unsigned char hdr[512];
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (unsigned char)(hlen & 0xff);
    hdr[9] = (unsigned char)(hlen >> 8);
    memcpy(hdr + pre_len, dict, (size_t)dl);
    memset(hdr + pre_len + dl, ' ', hlen - (size_t)dl - 1);
    hdr[total - 1] = '\n';

    base_afile af;
    if (base_afile_open(&af, path, err, errlen) < 0)
        return -1;
    int ok = fwrite(hdr, 1, total, af.f) == total;
    unsigned char chunk[4096];
    for (int64_t i = 0; ok && i < numel;) {
        int64_t m = numel - i < 1024 ? numel - i : 1024;
        for (int64_t k = 0; k < m; k++) {
            uint32_t u;
            memcpy(&u, &data[i + k], 4);
            for (int b = 0; b < 4; b++)
                chunk[4 * k + b] = (unsigned char)(u >> (8 * b));
        }
        ok = fwrite(chunk, 4, (size_t)m, af.f) == (size_t)m;
        i += m;
    }
    if (!ok) {
        int saved = errno;
        base_afile_abort(&af);
        return npy_err(err, errlen, path, "cannot write: %s", strerror(saved));
    }
    return base_afile_commit(&af, err, errlen);
}
