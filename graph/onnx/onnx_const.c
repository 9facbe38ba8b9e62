/* onnx_const.c: constant tensors of the ONNX importer and their evaluation at import time:
 * decoding TensorProto data (raw little-endian bytes, typed fields, external files), lazy float
 * sources (external data read on demand, seeded random values for missing data), data movement
 * (transpose, concat, gather, slice, expand, where) that keeps the element type, elementwise
 * arithmetic with numpy broadcasting (integers stay integers, division truncates as in ONNX),
 * and any op-table operator through its CPU reference.
 *
 * Invariant: an ox_const with is_int has i (numel int64); otherwise f (numel float32) once loaded.
 * Every function leaves out untouched on failure and owns nothing of its inputs.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_impl.h"

int64_t ox_numel(const ops_shape *s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank; d++) {
        if (s->dims[d] < 0 || (s->dims[d] > 0 && n > INT64_MAX / s->dims[d]))
            return INT64_MAX; /* saturates: ox_check_size refuses it */
        n *= s->dims[d];
    }
    return n;
}

int ox_check_size(ox_ctx *c, const ops_shape *s) {
    /* the product of the non-zero dims: an empty tensor's other dims still enter shape arithmetic
     * (Flatten, Reshape, reductions multiply them), so they are bounded as if it were not empty */
    int64_t n = 1, lim = c->g ? c->g->max_elements : GRAPH_DEFAULT_MAX_ELEMENTS;
    for (int32_t d = 0; d < s->rank && n <= lim; d++)
        if (s->dims[d] < 0 || (s->dims[d] > 0 && base_mul_i64(n, s->dims[d], &n) < 0))
            n = INT64_MAX;
    if (n > lim) {
        char b[160];
        return ox_fail(c, "a tensor of shape %s is over the element limit %lld", ops_shape_str(s, b, sizeof b),
                       (long long)lim);
    }
    return OX_OK;
}

int ox_check_fold(ox_ctx *c, const ops_shape *s, int is_int) {
    if (ox_check_size(c, s) != OX_OK)
        return OX_ERR;
    int64_t n = ox_numel(s);
    if (is_int && n > OX_MAX_FOLD_INT) {
        char b[160];
        return ox_fail(c, "folding makes an integer tensor of shape %s (%lld elements), over the import "
                          "folding limit of %lld elements", ops_shape_str(s, b, sizeof b), (long long)n,
                       (long long)OX_MAX_FOLD_INT);
    }
    return OX_OK;
}

void ox_const_free(ox_const *k) {
    free(k->i);
    free(k->f);
    free(k->ext_path);
    memset(k, 0, sizeof *k);
}

void ox_const_alloc(ox_const *k, const ops_shape *s, int is_int) {
    memset(k, 0, sizeof *k);
    k->shape = *s;
    k->is_int = is_int;
    int64_t n = ox_numel(s);
    if (is_int)
        k->i = base_xcalloc((size_t)n, sizeof *k->i);
    else
        k->f = base_xcalloc((size_t)n, sizeof *k->f);
    k->src = OX_SRC_MEM;
}

void ox_const_copy(ox_ctx *c, ox_const *dst, ox_const *src) {
    (void)c;
    *dst = *src;
    int64_t n = ox_numel(&src->shape);
    dst->i = NULL;
    dst->f = NULL;
    dst->ext_path = src->ext_path ? base_xstrdup(src->ext_path) : NULL;
    if (src->i) {
        dst->i = base_xmalloc((size_t)n * sizeof *dst->i + 1);
        memcpy(dst->i, src->i, (size_t)n * sizeof *dst->i);
    }
    if (src->f) {
        dst->f = base_xmalloc((size_t)n * sizeof *dst->f + 1);
        memcpy(dst->f, src->f, (size_t)n * sizeof *dst->f);
    }
}

/* Little-endian decoding, independent of the host's byte order. */
static uint64_t ox_le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int b = bytes - 1; b >= 0; b--)
        v = (v << 8) | p[b];
    return v;
}

static float ox_le_f32(const uint8_t *p) {
    uint32_t u = (uint32_t)ox_le(p, 4);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The path of external data location loc of tensor (graph_path_resolve: inside the model's folder
 * unless the import allows others) into *path (caller frees); OX_OK or OX_ERR. */
static int ox_data_path(ox_ctx *c, const char *loc, const char *tensor, char **path) {
    char why[GRAPH_ERR_LEN];
    int allow = c->g ? c->g->allow_outside_paths : c->o.allow_outside_paths;
    if (graph_path_resolve(c->base_dir, allow, loc, path, why, sizeof why) < 0)
        return ox_fail(c, "initializer '%s': external data %s", tensor, why);
    return OX_OK;
}

/* Read exactly n bytes at off of path (relative to base_dir) into buf. */
static int ox_read_at(ox_ctx *c, const char *rel, int64_t off, void *buf, int64_t n, const char *tensor) {
    char *path = NULL;
    if (ox_data_path(c, rel, tensor, &path) != OX_OK)
        return OX_ERR;
    FILE *f = fopen(path, "rb");
    int rc = OX_OK;
    if (!f) {
        rc = ox_fail(c, "initializer '%s': external data file '%s': %s", tensor, path, strerror(errno));
    } else if (fseeko(f, (off_t)off, SEEK_SET) != 0 ||
               (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        rc = ox_fail(c, "initializer '%s': external data file '%s': cannot read %lld bytes at offset %lld",
                     tensor, path, (long long)n, (long long)off);
    }
    if (f)
        fclose(f);
    free(path);
    return rc;
}

int ox_const_load(ox_ctx *c, ox_const *k) {
    if (k->is_int || k->f)
        return OX_OK;
    int64_t n = ox_numel(&k->shape);
    float *f = base_xcalloc((size_t)n, sizeof *f);
    if (k->src == OX_SRC_RANDOM) {
        graph_fill_normal(f, n, k->seed, 0.0f, k->std);
    } else if (k->src == OX_SRC_EXT) {
        uint8_t *raw = base_xmalloc((size_t)n * 4);
        if (ox_read_at(c, k->ext_path, k->ext_offset, raw, n * 4, k->ext_path) != OX_OK) {
            free(raw);
            free(f);
            return OX_ERR;
        }
        for (int64_t j = 0; j < n; j++)
            f[j] = ox_le_f32(raw + 4 * j);
        free(raw);
    }
    k->f = f;
    return OX_OK;
}

int ox_const_floats(ox_ctx *c, ox_const *k, float **out) {
    if (ox_const_load(c, k) != OX_OK)
        return OX_ERR;
    int64_t n = ox_numel(&k->shape);
    float *f = base_xmalloc((size_t)n * sizeof *f + 1);
    for (int64_t j = 0; j < n; j++)
        f[j] = k->is_int ? (float)k->i[j] : k->f[j];
    *out = f;
    return OX_OK;
}

int ox_const_ints(ox_ctx *c, ox_const *k, int64_t **out) {
    if (ox_const_load(c, k) != OX_OK)
        return OX_ERR;
    int64_t n = ox_numel(&k->shape);
    int64_t *v = base_xmalloc((size_t)n * sizeof *v + 1);
    for (int64_t j = 0; j < n; j++) {
        if (k->is_int) {
            v[j] = k->i[j];
            continue;
        }
        float x = k->f[j];
        if (!(x == floorf(x) && fabsf(x) < 9.0e18f)) {
            free(v);
            return ox_fail(c, "a float constant holds %g where integers are needed", (double)x);
        }
        v[j] = (int64_t)x;
    }
    *out = v;
    return OX_OK;
}

/* 53 bits of FNV-1a(name) mixed with the user's seed (a JSON number keeps it exactly). */
static uint64_t ox_seed_of(const char *name, uint64_t seed) {
    const uint64_t h = base_fnv1a_str(name);
    uint64_t x = seed + UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return (h ^ x) >> 11;
}

/* Element size in bytes of an ONNX data type we read into int64 or float, or 0. */
static int ox_elem_bytes(int32_t dt, int *is_int) {
    *is_int = 1;
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *is_int = 0; return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *is_int = 0; return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return 1;
    default: return 0;
    }
}

/* Decode n elements of type dt from little-endian bytes. */
static void ox_decode(int32_t dt, const uint8_t *raw, int64_t n, ox_const *k) {
    int is_int;
    int es = ox_elem_bytes(dt, &is_int);
    for (int64_t j = 0; j < n; j++) {
        const uint8_t *p = raw + j * es;
        switch (dt) {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: k->f[j] = ox_le_f32(p); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
            uint64_t u = ox_le(p, 8);
            double d;
            memcpy(&d, &u, 8);
            k->f[j] = (float)d;
            break;
        }
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: k->i[j] = (int64_t)ox_le(p, 8); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: {
            uint64_t u = ox_le(p, 8);
            k->i[j] = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
            break;
        }
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: k->i[j] = (int32_t)(uint32_t)ox_le(p, 4); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: k->i[j] = (int64_t)ox_le(p, 4); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: k->i[j] = (int16_t)(uint16_t)ox_le(p, 2); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: k->i[j] = (int64_t)ox_le(p, 2); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: k->i[j] = (int8_t)p[0]; break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: k->i[j] = p[0]; break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: k->i[j] = p[0] != 0; break;
        default: break;
        }
    }
}

static const char *ox_type_str(int32_t dt) {
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: return "string";
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return "float16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return "bfloat16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64: return "complex64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128: return "complex128";
    default: return "an unknown type";
    }
}

/* External data: location (relative, inside the model's folder), offset, length. */
static int ox_external(ox_ctx *c, const Onnx__TensorProto *t, int32_t dt, int64_t n, int es, ox_const *k) {
    const char *loc = NULL;
    int64_t off = 0, length = -1;
    for (size_t e = 0; e < t->n_external_data; e++) {
        const Onnx__StringStringEntryProto *kv = t->external_data[e];
        if (!kv->key || !kv->value)
            continue;
        char *end = NULL;
        if (!strcmp(kv->key, "location")) {
            loc = kv->value;
        } else if (!strcmp(kv->key, "offset")) {
            errno = 0;
            off = strtoll(kv->value, &end, 10);
            if (errno || !end || *end || off < 0)
                return ox_fail(c, "initializer '%s': bad external data offset '%s'", t->name, kv->value);
        } else if (!strcmp(kv->key, "length")) {
            errno = 0;
            length = strtoll(kv->value, &end, 10);
            if (errno || !end || *end || length < 0)
                return ox_fail(c, "initializer '%s': bad external data length '%s'", t->name, kv->value);
        }
    }
    if (!loc || !loc[0])
        return ox_fail(c, "initializer '%s': external data without a location", t->name);
    int64_t need = n * es;
    if (length >= 0 && length != need)
        return ox_fail(c, "initializer '%s': external data length %lld does not match its shape (%lld bytes)",
                       t->name, (long long)length, (long long)need);
    char *path = NULL;
    if (ox_data_path(c, loc, t->name, &path) != OX_OK)
        return OX_ERR;
    struct stat st;
    int have = c->base_dir && stat(path, &st) == 0;
    if (!have) {
        if (!c->o.random_weights) {
            ox_fail(c, "initializer '%s': external data file '%s' is missing (use --random-weights to "
                       "import with seeded random weights)", t->name, path);
            free(path);
            return OX_ERR;
        }
        free(path);
        k->synthetic = 1;
        if (k->is_int) { /* zeros: valid ids and indices; shapes come from value_info */
            k->i = base_xcalloc((size_t)n, sizeof *k->i);
            return OX_OK;
        }
        k->src = OX_SRC_RANDOM; /* generated on demand, or kept as a RANDOM weight */
        k->seed = ox_seed_of(t->name, c->o.seed);
        k->std = 0.1f;
        if (k->shape.rank >= 2 && k->shape.dims[0] > 0 && n > 0)
            k->std = (float)sqrt(2.0 / (double)(n / k->shape.dims[0]));
        return OX_OK;
    }
    if (!S_ISREG(st.st_mode)) {
        ox_fail(c, "initializer '%s': external data file '%s' %s", t->name, path,
                S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
        free(path);
        return OX_ERR;
    }
    if ((int64_t)st.st_size < off || (int64_t)st.st_size - off < need) {
        ox_fail(c, "initializer '%s': external data file '%s' has %lld bytes, needs %lld at offset %lld", t->name,
                path, (long long)st.st_size, (long long)need, (long long)off);
        free(path);
        return OX_ERR;
    }
    free(path);
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) { /* read on demand, or pointed at as it is */
        k->src = OX_SRC_EXT;
        k->ext_path = base_xstrdup(loc);
        k->ext_offset = off;
        return OX_OK;
    }
    uint8_t *raw = base_xmalloc((size_t)need + 1);
    if (ox_read_at(c, loc, off, raw, need, t->name) != OX_OK) {
        free(raw);
        return OX_ERR;
    }
    if (k->is_int)
        k->i = base_xcalloc((size_t)n, sizeof *k->i);
    else
        k->f = base_xcalloc((size_t)n, sizeof *k->f);
    ox_decode(dt, raw, n, k);
    free(raw);
    return OX_OK;
}

int ox_const_from_proto(ox_ctx *c, const Onnx__TensorProto *t, ox_const *k) {
    memset(k, 0, sizeof *k);
    const char *name = t->name ? t->name : "";
    if (t->n_dims > OPS_MAX_DIMS)
        return ox_fail(c, "tensor '%s' has rank %zu (at most %d)", name, t->n_dims, OPS_MAX_DIMS);
    if (t->segment)
        return ox_fail(c, "tensor '%s' is segmented (not supported)", name);
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = (int32_t)t->n_dims;
    int64_t n = 1, nz = 1;
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] < 0)
            return ox_fail(c, "tensor '%s': dimension %zu is %lld", name, d, (long long)t->dims[d]);
        if (t->dims[d] > 0 && nz > (INT64_C(1) << 40) / t->dims[d])
            return ox_fail(c, "tensor '%s' is too large", name);
        s.dims[d] = t->dims[d];
        n *= t->dims[d];
        nz *= t->dims[d] ? t->dims[d] : 1; /* the dims beside a zero one are bounded too (ox_check_size) */
    }
    int32_t dt = t->has_data_type ? t->data_type : 0;
    int is_int;
    int es = ox_elem_bytes(dt, &is_int);
    if (!es)
        return ox_fail(c, "tensor '%s': element type %s is not supported", name, ox_type_str(dt));
    if (ox_check_size(c, &s) != OX_OK)
        return ox_fail(c, "tensor '%s' has %lld elements, over the element limit %lld", name, (long long)n,
                       (long long)(c->g ? c->g->max_elements : GRAPH_DEFAULT_MAX_ELEMENTS));
    int external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* the data must be there before anything is allocated for it */
    if (!external) {
        int64_t have = -1;
        if (t->has_raw_data) {
            if ((int64_t)t->raw_data.len != n * es)
                return ox_fail(c, "tensor '%s': raw_data has %zu bytes, its shape needs %lld", name,
                               t->raw_data.len, (long long)(n * es));
        } else {
            switch (dt) {
            case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: have = (int64_t)t->n_float_data; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: have = (int64_t)t->n_double_data; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: have = (int64_t)t->n_int64_data; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
            case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: have = (int64_t)t->n_uint64_data; break;
            default: have = (int64_t)t->n_int32_data; break; /* int32, int16, int8, uint16, uint8, bool */
            }
            if (have != n)
                return ox_fail(c, "tensor '%s' holds %lld values, its shape needs %lld", name, (long long)have,
                               (long long)n);
        }
    }
    int rc = OX_OK;
    if (external) { /* allocates what it needs once the data file is checked */
        memset(k, 0, sizeof *k);
        k->shape = s;
        k->is_int = is_int;
        rc = ox_external(c, t, dt, n, es, k);
    } else if (t->has_raw_data) {
        ox_const_alloc(k, &s, is_int);
        ox_decode(dt, t->raw_data.data, n, k);
    } else {
        ox_const_alloc(k, &s, is_int);
        switch (dt) {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
            for (int64_t j = 0; j < n; j++)
                k->f[j] = t->float_data[j];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
            for (int64_t j = 0; j < n; j++)
                k->f[j] = (float)t->double_data[j];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
            for (int64_t j = 0; j < n; j++)
                k->i[j] = t->int64_data[j];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
            for (int64_t j = 0; j < n; j++)
                k->i[j] = t->uint64_data[j] > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)t->uint64_data[j];
            break;
        default:
            for (int64_t j = 0; j < n; j++)
                k->i[j] = t->int32_data[j];
            break;
        }
    }
    if (rc != OX_OK)
        ox_const_free(k);
    return rc;
}

int ox_const_list(ox_ctx *c, ox_val *v, const char *what, int64_t *out, int32_t max, int32_t *n) {
    if (v->state != OX_V_CONST)
        return ox_unsup(c, "the %s must be a constant ('%s' is computed at run time)", what, v->name);
    if (v->c.synthetic)
        return ox_unsup(c, "the %s '%s' has no data (its external data file is missing)", what, v->name);
    if (v->c.shape.rank > 1)
        return ox_fail(c, "the %s '%s' must be a 1-D tensor", what, v->name);
    int64_t cnt = ox_numel(&v->c.shape);
    if (cnt > max)
        return ox_unsup(c, "the %s '%s' has %lld values (at most %d)", what, v->name, (long long)cnt, (int)max);
    int64_t *vals = NULL;
    if (ox_const_ints(c, &v->c, &vals) != OX_OK)
        return OX_ERR;
    for (int64_t j = 0; j < cnt; j++)
        out[j] = vals[j];
    free(vals);
    *n = (int32_t)cnt;
    return OX_OK;
}

/* ---------------------------------------------------------------------------------------------
 * evaluation
 */
static void ox_strides(const ops_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dims[d];
    }
}

/* Strides of x read as if broadcast to out (0 along broadcast dims); x right-aligned. */
static void ox_bstrides(const ops_shape *x, const ops_shape *out, int64_t *st) {
    int64_t xs[OPS_MAX_DIMS];
    ox_strides(x, xs);
    int32_t off = out->rank - x->rank;
    for (int32_t d = 0; d < out->rank; d++) {
        int32_t xd = d - off;
        st[d] = (xd < 0 || x->dims[xd] == 1) ? 0 : xs[xd];
    }
}

/* Offset of the element at multi-index idx with strides st. */
static int64_t ox_offset(const int64_t *idx, const int64_t *st, int32_t rank) {
    int64_t o = 0;
    for (int32_t d = 0; d < rank; d++)
        o += idx[d] * st[d];
    return o;
}

static void ox_next(int64_t *idx, const ops_shape *s) {
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        if (++idx[d] < s->dims[d])
            return;
        idx[d] = 0;
    }
}

static size_t ox_esize(const ox_const *k) { return k->is_int ? sizeof(int64_t) : sizeof(float); }
static const uint8_t *ox_bytes(const ox_const *k) { return k->is_int ? (const uint8_t *)k->i : (const uint8_t *)k->f; }
static uint8_t *ox_wbytes(ox_const *k) { return k->is_int ? (uint8_t *)k->i : (uint8_t *)k->f; }

int ox_broadcast(ox_ctx *c, const ops_shape *a, const ops_shape *b, ops_shape *out) {
    ops_shape r;
    memset(&r, 0, sizeof r);
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int32_t d = 0; d < r.rank; d++) {
        int32_t da = d - (r.rank - a->rank), db = d - (r.rank - b->rank);
        int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        if (x != y && x != 1 && y != 1) {
            char s1[128], s2[128];
            return ox_fail(c, "shapes %s and %s do not broadcast", ops_shape_str(a, s1, sizeof s1),
                           ops_shape_str(b, s2, sizeof s2));
        }
        r.dims[d] = x == 1 ? y : x;
    }
    *out = r;
    return OX_OK;
}

/* *out = the view of x with shape s, element idx at base + ox_offset(idx, st): what transpose,
 * slice and expand each read from x, copied out in row-major order. */
static void ox_copy_view(const ox_const *x, const ops_shape *s, int64_t base, const int64_t *st, ox_const *out) {
    ox_const r;
    ox_const_alloc(&r, s, x->is_int);
    size_t es = ox_esize(x);
    int64_t n = ox_numel(s), idx[OPS_MAX_DIMS] = {0};
    for (int64_t o = 0; o < n; o++, ox_next(idx, s))
        memcpy(ox_wbytes(&r) + o * es, ox_bytes(x) + (base + ox_offset(idx, st, s->rank)) * es, es);
    r.synthetic = x->synthetic;
    *out = r;
}

int ox_eval_transpose(ox_ctx *c, ox_const *x, const int64_t *perm, ox_const *out) {
    if (ox_const_load(c, x) != OX_OK)
        return OX_ERR;
    ops_shape s;
    memset(&s, 0, sizeof s);
    s.rank = x->shape.rank;
    int64_t xs[OPS_MAX_DIMS], ps[OPS_MAX_DIMS];
    ox_strides(&x->shape, xs);
    for (int32_t d = 0; d < s.rank; d++) {
        s.dims[d] = x->shape.dims[perm[d]];
        ps[d] = xs[perm[d]];
    }
    if (ox_check_fold(c, &s, x->is_int) != OX_OK)
        return OX_ERR;
    ox_copy_view(x, &s, 0, ps, out);
    return OX_OK;
}

int ox_eval_concat(ox_ctx *c, ox_const **xs, int32_t n, int32_t axis, ox_const *out) {
    int is_int = xs[0]->is_int;
    ops_shape s = xs[0]->shape;
    int synthetic = 0;
    for (int32_t k = 0; k < n; k++) {
        if (ox_const_load(c, xs[k]) != OX_OK)
            return OX_ERR;
        synthetic |= xs[k]->synthetic;
        if (xs[k]->is_int != is_int)
            return ox_fail(c, "concatenation of integer and float tensors");
        if (xs[k]->shape.rank != s.rank)
            return ox_fail(c, "concatenation of tensors of ranks %d and %d", (int)s.rank, (int)xs[k]->shape.rank);
        for (int32_t d = 0; d < s.rank; d++)
            if (d != axis && xs[k]->shape.dims[d] != s.dims[d])
                return ox_fail(c, "concatenation of tensors whose dimension %d differs", (int)d);
        if (k && base_add_i64(s.dims[axis], xs[k]->shape.dims[axis], &s.dims[axis]) < 0)
            return ox_fail(c, "the concatenated dimension overflows int64");
    }
    if (ox_check_fold(c, &s, is_int) != OX_OK)
        return OX_ERR;
    ox_const r;
    ox_const_alloc(&r, &s, is_int);
    size_t es = is_int ? sizeof(int64_t) : sizeof(float);
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++)
        outer *= s.dims[d];
    for (int32_t d = axis + 1; d < s.rank; d++)
        inner *= s.dims[d];
    uint8_t *dst = ox_wbytes(&r);
    for (int64_t o = 0; o < outer; o++)
        for (int32_t k = 0; k < n; k++) {
            int64_t blk = xs[k]->shape.dims[axis] * inner;
            memcpy(dst, ox_bytes(xs[k]) + o * blk * es, (size_t)blk * es);
            dst += blk * es;
        }
    r.synthetic = synthetic;
    *out = r;
    return OX_OK;
}

int ox_eval_gather(ox_ctx *c, ox_const *x, ox_const *idx, int32_t axis, ox_const *out) {
    if (ox_const_load(c, x) != OX_OK)
        return OX_ERR;
    if (!idx->is_int)
        return ox_fail(c, "gather indices must be integers");
    if (x->shape.rank + idx->shape.rank - 1 > OPS_MAX_DIMS)
        return ox_fail(c, "gather result of rank %d (at most %d)", (int)(x->shape.rank + idx->shape.rank - 1),
                       OPS_MAX_DIMS);
    ops_shape s;
    memset(&s, 0, sizeof s);
    for (int32_t d = 0; d < axis; d++)
        s.dims[s.rank++] = x->shape.dims[d];
    for (int32_t d = 0; d < idx->shape.rank; d++)
        s.dims[s.rank++] = idx->shape.dims[d];
    for (int32_t d = axis + 1; d < x->shape.rank; d++)
        s.dims[s.rank++] = x->shape.dims[d];
    int64_t outer = 1, inner = 1, m = ox_numel(&idx->shape), v = x->shape.dims[axis];
    for (int32_t d = 0; d < axis; d++)
        outer *= x->shape.dims[d];
    for (int32_t d = axis + 1; d < x->shape.rank; d++)
        inner *= x->shape.dims[d];
    for (int64_t j = 0; j < m; j++)
        if (idx->i[j] < -v || idx->i[j] >= v)
            return ox_fail(c, "gather index %lld is out of range for a dimension of %lld", (long long)idx->i[j],
                           (long long)v);
    if (ox_check_fold(c, &s, x->is_int) != OX_OK)
        return OX_ERR;
    ox_const r;
    ox_const_alloc(&r, &s, x->is_int);
    size_t es = ox_esize(x);
    uint8_t *dst = ox_wbytes(&r);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < m; j++) {
            int64_t at = idx->i[j] < 0 ? idx->i[j] + v : idx->i[j];
            memcpy(dst, ox_bytes(x) + ((o * v + at) * inner) * es, (size_t)inner * es);
            dst += inner * es;
        }
    r.synthetic = x->synthetic || idx->synthetic;
    *out = r;
    return OX_OK;
}

int ox_eval_gather_elements(ox_ctx *c, ox_const *x, ox_const *idx, int32_t axis, ox_const *out) {
    if (ox_const_load(c, x) != OX_OK)
        return OX_ERR;
    if (!idx->is_int)
        return ox_fail(c, "indices must be integers");
    if (idx->shape.rank != x->shape.rank)
        return ox_fail(c, "data and indices have ranks %d and %d", (int)x->shape.rank, (int)idx->shape.rank);
    for (int32_t d = 0; d < x->shape.rank; d++)
        if (d != axis && idx->shape.dims[d] > x->shape.dims[d])
            return ox_fail(c, "indices dimension %d (%lld) exceeds the data's (%lld)", (int)d,
                           (long long)idx->shape.dims[d], (long long)x->shape.dims[d]);
    int64_t xs[OPS_MAX_DIMS];
    ox_strides(&x->shape, xs);
    if (ox_check_fold(c, &idx->shape, x->is_int) != OX_OK)
        return OX_ERR;
    ox_const r;
    ox_const_alloc(&r, &idx->shape, x->is_int);
    size_t es = ox_esize(x);
    int64_t n = ox_numel(&idx->shape), ix[OPS_MAX_DIMS] = {0}, v = x->shape.dims[axis];
    for (int64_t o = 0; o < n; o++, ox_next(ix, &idx->shape)) {
        int64_t at = idx->i[o];
        if (at < -v || at >= v) {
            ox_const_free(&r);
            return ox_fail(c, "index %lld is out of range for a dimension of %lld", (long long)at, (long long)v);
        }
        int64_t save = ix[axis];
        ix[axis] = at < 0 ? at + v : at;
        memcpy(ox_wbytes(&r) + o * es, ox_bytes(x) + ox_offset(ix, xs, x->shape.rank) * es, es);
        ix[axis] = save;
    }
    r.synthetic = x->synthetic || idx->synthetic;
    *out = r;
    return OX_OK;
}

int ox_eval_slice(ox_ctx *c, ox_const *x, int32_t n_axes, const int64_t *starts, const int64_t *ends,
                  const int64_t *axes, const int64_t *steps, ox_const *out) {
    if (ox_const_load(c, x) != OX_OK)
        return OX_ERR;
    int32_t rank = x->shape.rank;
    int64_t st[OPS_MAX_DIMS], step[OPS_MAX_DIMS];
    ops_shape s = x->shape;
    for (int32_t d = 0; d < rank; d++) {
        st[d] = 0;
        step[d] = 1;
    }
    for (int32_t k = 0; k < n_axes; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (a < 0 || a >= rank)
            return ox_fail(c, "slice axis %lld is out of range for rank %d", (long long)axes[k], (int)rank);
        int64_t dim = x->shape.dims[a], sp = steps[k];
        if (sp == 0)
            return ox_fail(c, "slice step 0");
        int64_t b = starts[k], e = ends[k];
        if (b < 0)
            b += dim;
        if (e < 0 && e > INT64_MIN + dim)
            e += dim;
        else if (e < 0)
            e = -1;
        if (sp > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            e = e < 0 ? 0 : e > dim ? dim : e;
            s.dims[a] = e > b ? (e - b - 1) / sp + 1 : 0; /* not (e - b + sp - 1) / sp: sp may be near 2^63 */
        } else {
            b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            s.dims[a] = b > e ? (sp == INT64_MIN ? 1 : (b - e - 1) / -sp + 1) : 0;
        }
        st[a] = b;
        step[a] = sp;
    }
    if (ox_check_fold(c, &s, x->is_int) != OX_OK)
        return OX_ERR;
    int64_t xs[OPS_MAX_DIMS], vs[OPS_MAX_DIMS], base = 0;
    ox_strides(&x->shape, xs);
    for (int32_t d = 0; d < rank; d++) {
        base += st[d] * xs[d];
        /* a dim of length 0 or 1 is never stepped along, and its step (up to 2^63) times the
         * stride could overflow */
        vs[d] = s.dims[d] > 1 ? step[d] * xs[d] : 0;
    }
    ox_copy_view(x, &s, base, vs, out);
    return OX_OK;
}

int ox_eval_expand(ox_ctx *c, ox_const *x, const ops_shape *to, ox_const *out) {
    if (ox_const_load(c, x) != OX_OK)
        return OX_ERR;
    ops_shape s;
    if (ox_broadcast(c, &x->shape, to, &s) != OX_OK)
        return OX_ERR;
    int64_t bs[OPS_MAX_DIMS];
    ox_bstrides(&x->shape, &s, bs);
    if (ox_check_fold(c, &s, x->is_int) != OX_OK)
        return OX_ERR;
    ox_copy_view(x, &s, 0, bs, out);
    return OX_OK;
}

int ox_eval_where(ox_ctx *c, ox_const *cond, ox_const *x, ox_const *y, ox_const *out) {
    if (ox_const_load(c, x) != OX_OK || ox_const_load(c, y) != OX_OK || ox_const_load(c, cond) != OX_OK)
        return OX_ERR;
    if (x->is_int != y->is_int)
        return ox_fail(c, "Where of an integer and a float tensor");
    ops_shape s1, s;
    if (ox_broadcast(c, &cond->shape, &x->shape, &s1) != OX_OK || ox_broadcast(c, &s1, &y->shape, &s) != OX_OK)
        return OX_ERR;
    int64_t cs[OPS_MAX_DIMS], xs[OPS_MAX_DIMS], ys[OPS_MAX_DIMS];
    ox_bstrides(&cond->shape, &s, cs);
    ox_bstrides(&x->shape, &s, xs);
    ox_bstrides(&y->shape, &s, ys);
    if (ox_check_fold(c, &s, x->is_int) != OX_OK)
        return OX_ERR;
    ox_const r;
    ox_const_alloc(&r, &s, x->is_int);
    size_t es = ox_esize(x);
    int64_t n = ox_numel(&s), idx[OPS_MAX_DIMS] = {0};
    for (int64_t o = 0; o < n; o++, ox_next(idx, &s)) {
        int64_t co = ox_offset(idx, cs, s.rank);
        int pick = cond->is_int ? cond->i[co] != 0 : cond->f[co] != 0.0f;
        const ox_const *src = pick ? x : y;
        const int64_t *sst = pick ? xs : ys;
        memcpy(ox_wbytes(&r) + o * es, ox_bytes(src) + ox_offset(idx, sst, s.rank) * es, es);
    }
    r.synthetic = cond->synthetic || x->synthetic || y->synthetic;
    *out = r;
    return OX_OK;
}

/* The operation op of ox_eval_binary as text, for messages. */
static const char *ox_op_str(int op) {
    switch (op) {
    case '+': return "+";
    case '-': return "-";
    case '*': return "*";
    case '/': return "/";
    case '^': return "^";
    case '%': return "mod";
    case 'f': return "fmod";
    case 'M': return "max";
    case 'm': return "min";
    case '=': return "==";
    case '<': return "<";
    case '>': return ">";
    case 'l': return "<=";
    case 'g': return ">=";
    case '&': return "and";
    case '|': return "or";
    case 'x': return "xor";
    default: return "?";
    }
}

static int ox_cmp_op(int op) { return op == '=' || op == '<' || op == '>' || op == 'l' || op == 'g'; }
static int ox_bool_op(int op) { return ox_cmp_op(op) || op == '&' || op == '|' || op == 'x'; }

/* One integer operation, checked: shape arithmetic read from a file must not wrap silently. */
static int ox_int_op(ox_ctx *c, int op, int64_t x, int64_t y, int64_t *v) {
    const char *why = NULL;
    switch (op) {
    case '+': why = base_add_i64(x, y, v) < 0 ? "overflows int64" : NULL; break;
    case '-':
        if (y == INT64_MIN ? x >= 0 : base_add_i64(x, -y, v) < 0)
            why = "overflows int64";
        else if (y == INT64_MIN)
            *v = (x + INT64_MAX) + 1; /* x - INT64_MIN with x < 0: no overflow */
        break;
    case '*': why = base_mul_i64(x, y, v) < 0 ? "overflows int64" : NULL; break;
    case '/': /* truncation toward zero, as onnxruntime */
    case '%': /* Mod, fmod 0: the remainder takes the divisor's sign */
    case 'f': /* Mod, fmod 1: the remainder takes the dividend's sign (C's %) */
        if (y == 0) {
            why = "divides by zero";
        } else if (x == INT64_MIN && y == -1) {
            if (op == '/')
                why = "overflows int64";
            *v = 0;
        } else if (op == '/') {
            *v = x / y;
        } else {
            *v = x % y;
            if (op == '%' && *v != 0 && ((*v < 0) != (y < 0)))
                *v += y;
        }
        break;
    case '^': {
        double p = pow((double)x, (double)y);
        if (!(fabs(p) < 9.0e18))
            why = "overflows int64";
        else
            *v = (int64_t)p;
        break;
    }
    case 'M': *v = x > y ? x : y; break;
    case 'm': *v = x < y ? x : y; break;
    case '=': *v = x == y; break;
    case '<': *v = x < y; break;
    case '>': *v = x > y; break;
    case 'l': *v = x <= y; break;
    case 'g': *v = x >= y; break;
    case '&': *v = x && y; break;
    case '|': *v = x || y; break;
    case 'x': *v = (x != 0) != (y != 0); break;
    default: why = "is not an integer operation"; break;
    }
    if (why)
        return ox_fail(c, "the integer constant expression %lld %s %lld %s", (long long)x, ox_op_str(op),
                       (long long)y, why);
    return OX_OK;
}

/* One float operation; comparisons and logic give 0 or 1 in *w. */
static int ox_float_op(ox_ctx *c, int op, float x, float y, float *v, int64_t *w) {
    switch (op) {
    case '+': *v = x + y; break;
    case '-': *v = x - y; break;
    case '*': *v = x * y; break;
    case '/': *v = x / y; break;
    case '^': *v = powf(x, y); break;
    case 'f': *v = fmodf(x, y); break;
    case 'M': *v = isnan(x) || isnan(y) ? NAN : x > y ? x : y; break;
    case 'm': *v = isnan(x) || isnan(y) ? NAN : x < y ? x : y; break;
    case '%': return ox_fail(c, "Mod of float tensors needs fmod = 1");
    case '=': *w = x == y; break;
    case '<': *w = x < y; break;
    case '>': *w = x > y; break;
    case 'l': *w = x <= y; break;
    case 'g': *w = x >= y; break;
    case '&': *w = x != 0.0f && y != 0.0f; break;
    case '|': *w = x != 0.0f || y != 0.0f; break;
    case 'x': *w = (x != 0.0f) != (y != 0.0f); break;
    default: return ox_fail(c, "'%s' is not a float operation", ox_op_str(op));
    }
    return OX_OK;
}

int ox_eval_binary(ox_ctx *c, int op, ox_const *a, ox_const *b, ox_const *out) {
    if (ox_const_load(c, a) != OX_OK || ox_const_load(c, b) != OX_OK)
        return OX_ERR;
    ops_shape s;
    if (ox_broadcast(c, &a->shape, &b->shape, &s) != OX_OK)
        return OX_ERR;
    int ints = a->is_int && b->is_int;
    if (a->is_int != b->is_int && op != '^')
        return ox_fail(c, "arithmetic between an integer and a float tensor");
    int out_int = ox_bool_op(op) || a->is_int; /* Pow's result has its base's type */
    int64_t as[OPS_MAX_DIMS], bs[OPS_MAX_DIMS];
    ox_bstrides(&a->shape, &s, as);
    ox_bstrides(&b->shape, &s, bs);
    if (ox_check_fold(c, &s, out_int) != OX_OK)
        return OX_ERR;
    ox_const r;
    ox_const_alloc(&r, &s, out_int);
    int64_t n = ox_numel(&s), idx[OPS_MAX_DIMS] = {0};
    int rc = OX_OK;
    for (int64_t o = 0; o < n && rc == OX_OK; o++, ox_next(idx, &s)) {
        int64_t ao = ox_offset(idx, as, s.rank), bo = ox_offset(idx, bs, s.rank);
        if (ints) {
            rc = ox_int_op(c, op, a->i[ao], b->i[bo], &r.i[o]);
            continue;
        }
        float x = a->is_int ? (float)a->i[ao] : a->f[ao];
        float y = b->is_int ? (float)b->i[bo] : b->f[bo];
        float v = 0.0f;
        int64_t w = 0;
        rc = ox_float_op(c, op, x, y, &v, &w);
        if (rc == OX_OK && out_int && !ox_bool_op(op)) { /* an integer base to a float power */
            if (!(fabsf(v) < 9.0e18f))
                rc = ox_fail(c, "the integer power %g ^ %g overflows int64", (double)x, (double)y);
            w = rc == OX_OK ? (int64_t)v : 0;
        }
        if (out_int)
            r.i[o] = w;
        else
            r.f[o] = v;
    }
    if (rc != OX_OK) {
        ox_const_free(&r);
        return OX_ERR;
    }
    r.synthetic = a->synthetic || b->synthetic;
    *out = r;
    return OX_OK;
}

/* Every index of ScatterND's idx (m tuples of k) inside x's dims [-v, v-1]. */
static int ox_scatter_check(ox_ctx *c, const ox_const *x, const ox_const *idx, int64_t k, int64_t m) {
    for (int64_t j = 0; j < m * k; j++) {
        int64_t v = x->shape.dims[j % k], at = idx->i[j];
        if (at < -v || at >= v)
            return ox_fail(c, "index %lld (update %lld, axis %d) is out of range for a dimension of %lld",
                           (long long)at, (long long)(j / k), (int)(j % k), (long long)v);
    }
    return OX_OK;
}

/* ScatterND: a copy of x with slices replaced (or combined, by red) at the positions that the
 * last axis of idx lists. Every index is checked before anything is written: a malformed model
 * gets a message naming the index, never a write out of bounds. */
int ox_eval_scatter_nd(ox_ctx *c, ox_const *x, ox_const *idx, ox_const *upd, int red, ox_const *out) {
    if (ox_const_load(c, x) != OX_OK || ox_const_load(c, upd) != OX_OK)
        return OX_ERR;
    if (!idx->is_int)
        return ox_fail(c, "the indices must be integers");
    if (x->is_int != upd->is_int)
        return ox_fail(c, "data and updates have different element types");
    int32_t r = x->shape.rank, q = idx->shape.rank;
    if (q < 1)
        return ox_fail(c, "the indices are 0-d (index tuples along a last axis are needed)");
    int64_t k = idx->shape.dims[q - 1];
    if (r < 1 || k < 1 || k > r)
        return ox_fail(c, "index tuples of %lld values do not fit data of rank %d", (long long)k, (int)r);
    /* updates: idx's dims without the last, then x's dims after the first k */
    int32_t ur = q - 1 + r - (int32_t)k;
    int ok = upd->shape.rank == ur;
    for (int32_t d = 0; ok && d < ur; d++)
        ok = upd->shape.dims[d] == (d < q - 1 ? idx->shape.dims[d] : x->shape.dims[k + d - (q - 1)]);
    if (!ok) {
        char b1[160], b2[160], b3[160];
        return ox_fail(c, "updates of shape %s do not fit data %s and indices %s",
                       ops_shape_str(&upd->shape, b1, sizeof b1), ops_shape_str(&x->shape, b2, sizeof b2),
                       ops_shape_str(&idx->shape, b3, sizeof b3));
    }
    if (ox_check_fold(c, &x->shape, x->is_int) != OX_OK)
        return OX_ERR;
    int64_t xs[OPS_MAX_DIMS], inner = 1, m = ox_numel(&idx->shape) / k;
    ox_strides(&x->shape, xs);
    for (int32_t d = (int32_t)k; d < r; d++)
        inner *= x->shape.dims[d];
    if (ox_scatter_check(c, x, idx, k, m) != OX_OK)
        return OX_ERR;
    ox_const res;
    ox_const_alloc(&res, &x->shape, x->is_int); /* in memory, whatever x's source */
    size_t es = ox_esize(x);
    memcpy(ox_wbytes(&res), ox_bytes(x), (size_t)ox_numel(&x->shape) * es);
    for (int64_t j = 0; j < m; j++) {
        int64_t off = 0;
        for (int64_t d = 0; d < k; d++) {
            int64_t at = idx->i[j * k + d];
            off += (at < 0 ? at + x->shape.dims[d] : at) * xs[d];
        }
        for (int64_t e = 0; e < inner; e++) {
            int64_t o = off + e, u = j * inner + e;
            if (red == 0) {
                memcpy(ox_wbytes(&res) + o * es, ox_bytes(upd) + u * es, es);
                continue;
            }
            if (!res.is_int) {
                float *dst = &res.f[o], y = upd->f[u];
                *dst = red == '+' ? *dst + y : red == '*' ? *dst * y : red == 'M' ? fmaxf(*dst, y) : fminf(*dst, y);
                continue;
            }
            int64_t *dst = &res.i[o], y = upd->i[u];
            if (red == 'M' || red == 'm')
                *dst = (red == 'M') == (y > *dst) ? y : *dst;
            else if (ox_int_op(c, red, *dst, y, dst) != OX_OK) {
                ox_const_free(&res);
                return OX_ERR;
            }
        }
    }
    res.synthetic = x->synthetic || idx->synthetic || upd->synthetic;
    *out = res;
    return OX_OK;
}

int ox_eval_table(ox_ctx *c, ops_type op, const ops_params *p, int32_t n_in, ox_const **in,
                  int32_t *n_out, ox_const *out) {
    ops_shape in_sh[OPS_MAX_INPUTS], out_sh[OPS_MAX_OUTPUTS];
    float *bufs[OPS_MAX_INPUTS];
    char m[GRAPH_ERR_LEN];
    if (n_in > OPS_MAX_INPUTS)
        return ox_fail(c, "too many inputs");
    int synthetic = 0;
    for (int32_t k = 0; k < n_in; k++) {
        in_sh[k] = in[k]->shape;
        synthetic |= in[k]->synthetic;
        if (ox_numel(&in_sh[k]) <= 0)
            return ox_fail(c, "%s of an empty constant", ops_table[op].name);
    }
    if (ops_infer(op, p, n_in, in_sh, n_out, out_sh, m, sizeof m) < 0)
        return ox_fail(c, "%s: %s", ops_table[op].name, m);
    for (int32_t k = 0; k < *n_out; k++)
        if (ox_check_size(c, &out_sh[k]) != OX_OK)
            return OX_ERR;
    for (int32_t k = 0; k < n_in; k++)
        if (ox_const_floats(c, in[k], &bufs[k]) != OX_OK) {
            for (int32_t j = 0; j < k; j++)
                free(bufs[j]);
            return OX_ERR;
        }
    float *outs[OPS_MAX_OUTPUTS];
    for (int32_t k = 0; k < *n_out; k++) {
        ox_const_alloc(&out[k], &out_sh[k], 0);
        out[k].synthetic = synthetic;
        outs[k] = out[k].f;
    }
    ops_sig s = {op, p, n_in, *n_out, in_sh, out_sh};
    ops_table[op].cpu(&s, (const float *const *)bufs, outs);
    for (int32_t k = 0; k < n_in; k++)
        free(bufs[k]);
    return OX_OK;
}
