/* onnx_save.c: a graph saved as a JSON model plus its sidecar weights file (format in onnx.h).
 *
 * The values of every FILE weight (in the imported model's data files, the in-memory weights
 * file of an import, or an earlier sidecar) are copied into MODEL.weights.bin, and a clone of the
 * graph whose FILE weights name the sidecar is written as JSON. Both files go to temporaries in
 * the target folder first and are renamed only when both are complete, so a failure leaves no
 * partial output. Identical sources (same file, offset and size) are stored once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.h"

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void sv_msg(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static char *sv_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "tasc: out of memory\n");
        abort();
    }
    memcpy(p, s, n);
    return p;
}

char *onnx_sidecar_path(const char *json_path) {
    size_t n = strlen(json_path);
    size_t stem = n >= 5 && !strcmp(json_path + n - 5, ".json") ? n - 5 : n;
    char *p = malloc(stem + sizeof ".weights.bin");
    if (!p) {
        fprintf(stderr, "tasc: out of memory\n");
        abort();
    }
    memcpy(p, json_path, stem);
    memcpy(p + stem, ".weights.bin", sizeof ".weights.bin");
    return p;
}

/* A temporary next to path: "<path>.tmpXXXXXX", opened for writing. */
static FILE *sv_tmp(const char *path, char **tmp, char *err, size_t errlen) {
    size_t n = strlen(path);
    *tmp = malloc(n + 11);
    if (!*tmp) {
        sv_msg(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    memcpy(*tmp, path, n);
    memcpy(*tmp + n, ".tmpXXXXXX", 11);
    int fd = mkstemp(*tmp);
    if (fd < 0) {
        sv_msg(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return NULL;
    }
    (void)fchmod(fd, 0644);
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        sv_msg(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        unlink(*tmp);
        free(*tmp);
        *tmp = NULL;
    }
    return f;
}

/* Close f and report a write error on path. */
static int sv_close(FILE *f, const char *path, char *err, size_t errlen) {
    int bad = ferror(f);
    int saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        sv_msg(err, errlen, "%s: cannot write: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

/* Write n float32 values little-endian. */
static void sv_write_le(FILE *f, const float *v, int64_t n) {
    uint8_t buf[4096];
    int64_t at = 0;
    while (at < n) {
        int64_t m = n - at < 1024 ? n - at : 1024;
        for (int64_t j = 0; j < m; j++) {
            uint32_t u;
            memcpy(&u, &v[at + j], 4);
            buf[4 * j] = (uint8_t)u;
            buf[4 * j + 1] = (uint8_t)(u >> 8);
            buf[4 * j + 2] = (uint8_t)(u >> 16);
            buf[4 * j + 3] = (uint8_t)(u >> 24);
        }
        fwrite(buf, 4, (size_t)m, f);
        at += m;
    }
}

int onnx_save_model(const graph *g, const char *json_path, char *err, size_t errlen) {
    int rc = -1;
    char *side = onnx_sidecar_path(json_path);
    const char *slash = strrchr(side, '/');
    const char *side_rel = slash ? slash + 1 : side; /* the JSON's folder is the sidecar's */
    char *side_tmp = NULL, *json_tmp = NULL, *text = NULL;
    FILE *sf = NULL, *jf = NULL;
    int side_renamed = 0;
    graph *c = graph_clone(g);
    int32_t nw = g->n_weights;
    int64_t *new_off = calloc((size_t)nw + 1, sizeof *new_off);
    if (!new_off) {
        sv_msg(err, errlen, "%s: out of memory", json_path);
        goto done;
    }
    int any = 0;
    for (int32_t i = 0; i < nw; i++)
        any |= g->tensors[g->weights[i]].init.kind == GRAPH_INIT_FILE;
    if (any) {
        sf = sv_tmp(side, &side_tmp, err, errlen);
        if (!sf)
            goto done;
        int64_t at = 0;
        for (int32_t i = 0; i < nw; i++) {
            const graph_tensor *ts = &g->tensors[g->weights[i]];
            new_off[i] = -1;
            if (ts->init.kind != GRAPH_INIT_FILE)
                continue;
            int64_t n = ops_shape_numel(&ts->shape);
            for (int32_t j = 0; j < i; j++) { /* the same source, already stored */
                const graph_tensor *o = &g->tensors[g->weights[j]];
                if (o->init.kind == GRAPH_INIT_FILE && o->init.offset == ts->init.offset &&
                    !strcmp(o->init.path, ts->init.path) && ops_shape_numel(&o->shape) == n) {
                    new_off[i] = new_off[j];
                    break;
                }
            }
            if (new_off[i] >= 0)
                continue;
            float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
            if (!v) {
                sv_msg(err, errlen, "%s: out of memory for weight '%s'", json_path, ts->name);
                goto done;
            }
            char werr[GRAPH_ERR_LEN];
            if (graph_weight_values(g, g->weights[i], v, werr, sizeof werr) < 0) {
                sv_msg(err, errlen, "%s: %s", json_path, werr);
                free(v);
                goto done;
            }
            int64_t pad = (ONNX_SIDECAR_ALIGN - at % ONNX_SIDECAR_ALIGN) % ONNX_SIDECAR_ALIGN;
            static const uint8_t zeros[ONNX_SIDECAR_ALIGN];
            fwrite(zeros, 1, (size_t)pad, sf);
            at += pad;
            new_off[i] = at;
            sv_write_le(sf, v, n);
            at += 4 * n;
            free(v);
        }
        int bad = sv_close(sf, side, err, errlen);
        sf = NULL;
        if (bad < 0)
            goto done;
        for (int32_t i = 0; i < nw; i++) {
            graph_tensor *ts = &c->tensors[c->weights[i]];
            if (new_off[i] < 0)
                continue;
            free(ts->init.path);
            ts->init.path = sv_strdup(side_rel);
            ts->init.offset = new_off[i];
        }
    }
    text = graph_to_json_string(c);
    if (!text) {
        sv_msg(err, errlen, "%s: cannot serialise the model", json_path);
        goto done;
    }
    jf = sv_tmp(json_path, &json_tmp, err, errlen);
    if (!jf)
        goto done;
    fputs(text, jf);
    {
        int bad = sv_close(jf, json_path, err, errlen);
        jf = NULL;
        if (bad < 0)
            goto done;
    }
    if (side_tmp) {
        if (rename(side_tmp, side) != 0) {
            sv_msg(err, errlen, "%s: cannot write: %s", side, strerror(errno));
            goto done;
        }
        side_renamed = 1;
    }
    if (rename(json_tmp, json_path) != 0) {
        sv_msg(err, errlen, "%s: cannot write: %s", json_path, strerror(errno));
        goto done;
    }
    free(json_tmp);
    json_tmp = NULL;
    free(side_tmp);
    side_tmp = NULL;
    rc = 0;
done:
    if (sf)
        fclose(sf);
    if (jf)
        fclose(jf);
    if (side_tmp)
        unlink(side_renamed ? side : side_tmp);
    if (json_tmp)
        unlink(json_tmp);
    free(side_tmp);
    free(json_tmp);
    free(text);
    free(new_off);
    free(side);
    graph_free(c);
    return rc;
}
