/* rules_json.c: the rule reader's JSON tree (rules_json.h): a parser for the plain subset of JSON
 * that rule files use, jansson for everything else, and a writer that matches jansson's compact
 * output (the rule's "proof" is kept as that text).
 *
 * The fast parser decodes strings in place in its own copy of the text and keeps values in an
 * arena; it accepts only what jansson accepts with the same meaning (RFC 8259 numbers, strings of
 * printable ASCII with the two-character escapes), and gives up -- never errs -- on anything else,
 * so that jansson parses the text again and reports the error, or builds the tree for the rare
 * valid file outside the subset. The document owns its arena and text.
 */
#include "rules_json.h"
#include "base.h"
#include "json.h"

#include <jansson.h>
#include <math.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RJ_MAX_DEPTH 64
#define RJ_MAX_MEMBERS 64   /* per object: duplicate keys are looked for pairwise */
#define RJ_CHUNK (1u << 20)

typedef struct rj_chunk {
    struct rj_chunk *next;
    size_t used, cap;
    alignas(16) unsigned char data[];
} rj_chunk;

struct rj_doc {
    rj_chunk *chunks;
    char *text;             /* the fast parser's copy, strings decoded in place */
    int fallback;
};

static void *rj_alloc(rj_doc *d, size_t bytes) {
    bytes = (bytes + 15) & ~(size_t)15;
    rj_chunk *c = d->chunks;
    if (!c || c->cap - c->used < bytes) {
        size_t cap = bytes > RJ_CHUNK ? bytes : RJ_CHUNK;
        c = base_xmalloc(sizeof *c + cap);
        c->cap = cap;
        c->used = 0;
        c->next = d->chunks;
        d->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += bytes;
    return p;
}

void rules_json_free(rj_doc *d) {
    if (!d)
        return;
    for (rj_chunk *c = d->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(d->text);
    free(d);
}

int rules_json_used_fallback(const rj_doc *d) { return d->fallback; }

/* --- the fast parser ------------------------------------------------------------------------- */

typedef struct {
    rj_doc *d;
    char *p;
    rj_val *stk;            /* values of the open containers, innermost last */
    size_t n_stk, cap_stk;
    int depth;
} rj_parser;

static void rj_ws(rj_parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r')
        ps->p++;
}

/* What may follow a number or a literal (jansson reads letters and digits into one token). */
static int rj_delim(char c) {
    return c == '\0' || c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ',' || c == ']' || c == '}';
}

/* A string at ps->p (the opening quote), decoded in place. -1: outside the subset. */
static int rj_string(rj_parser *ps, const char **out) {
    char *src = ps->p + 1, *dst = src;
    *out = dst;
    for (;;) {
        unsigned char c = (unsigned char)*src;
        if (c == '"')
            break;
        if (c < 0x20 || c >= 0x80)
            return -1; /* control characters (and the end of the text), UTF-8: jansson's */
        if (c == '\\') {
            switch (src[1]) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            default: return -1; /* \uXXXX and bad escapes */
            }
            src++;
        }
        *dst++ = (char)c;
        src++;
    }
    *dst = '\0';
    ps->p = src + 1;
    return 0;
}

static int rj_number(rj_parser *ps, rj_val *v) {
    char *s = ps->p, *q = s;
    int neg = 0, real = 0, digits = 0;
    if (*q == '-')
        neg = 1, q++;
    if (*q == '0') {
        q++, digits = 1;
    } else if (*q >= '1' && *q <= '9') {
        while (*q >= '0' && *q <= '9')
            q++, digits++;
    } else {
        return -1;
    }
    if (*q == '.') {
        real = 1, q++;
        if (!(*q >= '0' && *q <= '9'))
            return -1;
        while (*q >= '0' && *q <= '9')
            q++;
    }
    if (*q == 'e' || *q == 'E') {
        real = 1, q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!(*q >= '0' && *q <= '9'))
            return -1;
        while (*q >= '0' && *q <= '9')
            q++;
    }
    if (!rj_delim(*q))
        return -1;
    if (real) {
        char *end = NULL;
        double x = strtod(s, &end);
        if (end != q || !isfinite(x))
            return -1;
        v->type = RJ_REAL;
        v->u.d = x;
    } else {
        if (digits > 18)
            return -1; /* near or over the int64 range: jansson decides */
        int64_t x = 0;
        for (char *c = s + neg; c < q; c++)
            x = x * 10 + (*c - '0');
        v->type = RJ_INT;
        v->u.i = neg ? -x : x;
    }
    ps->p = q;
    return 0;
}

static int rj_push(rj_parser *ps, const rj_val *v) {
    if (ps->n_stk == ps->cap_stk) {
        size_t cap = ps->cap_stk ? 2 * ps->cap_stk : 1024;
        ps->stk = base_xrealloc(ps->stk, cap * sizeof *ps->stk);
        ps->cap_stk = cap;
    }
    ps->stk[ps->n_stk++] = *v;
    return 0;
}

static int rj_value(rj_parser *ps, rj_val *v);

/* An array or object at ps->p: its values go on the stack, then into the arena. */
static int rj_container(rj_parser *ps, rj_val *v) {
    int obj = *ps->p == '{';
    char close = obj ? '}' : ']';
    if (++ps->depth > RJ_MAX_DEPTH)
        return -1;
    ps->p++;
    size_t base = ps->n_stk;
    rj_ws(ps);
    if (*ps->p != close) {
        for (;;) {
            rj_val item;
            const char *key = NULL;
            if (obj) {
                if (*ps->p != '"' || rj_string(ps, &key) < 0)
                    return -1;
                rj_ws(ps);
                if (*ps->p != ':')
                    return -1;
                ps->p++;
            }
            if (rj_value(ps, &item) < 0)
                return -1;
            if (obj) {
                if (ps->n_stk - base >= RJ_MAX_MEMBERS)
                    return -1;
                for (size_t i = base; i < ps->n_stk; i++)
                    if (!strcmp(ps->stk[i].key, key))
                        return -1; /* a duplicate key: jansson's message */
            }
            item.key = key;
            rj_push(ps, &item);
            rj_ws(ps);
            if (*ps->p == ',') {
                ps->p++;
                rj_ws(ps);
                continue;
            }
            if (*ps->p != close)
                return -1;
            break;
        }
    }
    ps->p++;
    ps->depth--;
    size_t n = ps->n_stk - base;
    if (n > INT32_MAX)
        return -1;
    v->type = obj ? RJ_OBJ : RJ_ARR;
    v->n = (int32_t)n;
    v->u.items = rj_alloc(ps->d, (n ? n : 1) * sizeof(rj_val));
    if (n)
        memcpy(v->u.items, ps->stk + base, n * sizeof(rj_val));
    ps->n_stk = base;
    return 0;
}

static int rj_value(rj_parser *ps, rj_val *v) {
    memset(v, 0, sizeof *v);
    rj_ws(ps);
    switch (*ps->p) {
    case '{':
    case '[':
        return rj_container(ps, v);
    case '"':
        v->type = RJ_STR;
        return rj_string(ps, &v->u.s);
    case 't':
    case 'f':
    case 'n': {
        static const char *const lit[3] = {"true", "false", "null"};
        static const rj_type ty[3] = {RJ_TRUE, RJ_FALSE, RJ_NULL};
        int k = *ps->p == 't' ? 0 : *ps->p == 'f' ? 1 : 2;
        size_t len = strlen(lit[k]);
        if (strncmp(ps->p, lit[k], len) || !rj_delim(ps->p[len]))
            return -1;
        v->type = ty[k];
        ps->p += len;
        return 0;
    }
    default:
        return rj_number(ps, v);
    }
}

/* --- jansson's path -------------------------------------------------------------------------- */

static const char *rj_strdup(rj_doc *d, const char *s) {
    size_t n = strlen(s) + 1;
    char *c = rj_alloc(d, n);
    memcpy(c, s, n);
    return c;
}

static void rj_from_jansson(rj_doc *d, json_t *j, rj_val *v) {
    memset(v, 0, sizeof *v);
    switch (json_typeof(j)) {
    case JSON_NULL: v->type = RJ_NULL; break;
    case JSON_TRUE: v->type = RJ_TRUE; break;
    case JSON_FALSE: v->type = RJ_FALSE; break;
    case JSON_INTEGER:
        v->type = RJ_INT;
        v->u.i = json_integer_value(j);
        break;
    case JSON_REAL:
        v->type = RJ_REAL;
        v->u.d = json_real_value(j);
        break;
    case JSON_STRING:
        v->type = RJ_STR;
        v->u.s = rj_strdup(d, json_string_value(j));
        break;
    case JSON_ARRAY: {
        v->type = RJ_ARR;
        v->n = (int32_t)json_array_size(j);
        v->u.items = rj_alloc(d, ((size_t)v->n + 1) * sizeof(rj_val));
        for (int32_t i = 0; i < v->n; i++)
            rj_from_jansson(d, json_array_get(j, (size_t)i), &v->u.items[i]);
        break;
    }
    case JSON_OBJECT: {
        v->type = RJ_OBJ;
        v->n = (int32_t)json_object_size(j);
        v->u.items = rj_alloc(d, ((size_t)v->n + 1) * sizeof(rj_val));
        const char *key;
        json_t *m;
        int32_t i = 0;
        json_object_foreach(j, key, m) {
            rj_from_jansson(d, m, &v->u.items[i]);
            v->u.items[i++].key = rj_strdup(d, key);
        }
        break;
    }
    }
}

rj_doc *rules_json_parse(const char *text, const char *where, const rj_val **root, char *err, size_t errlen) {
    rj_doc *d = base_xcalloc(1, sizeof *d);
    rj_val *top = rj_alloc(d, sizeof *top);
    size_t len = strlen(text);
    d->text = base_xmalloc(len + 1);
    memcpy(d->text, text, len + 1);
    rj_parser ps = {d, d->text, NULL, 0, 0, 0};
    int ok = rj_value(&ps, top) == 0 && (top->type == RJ_OBJ || top->type == RJ_ARR);
    if (ok) {
        rj_ws(&ps);
        ok = *ps.p == '\0';
    }
    free(ps.stk);
    if (!ok) {
        /* outside the subset, or not JSON: jansson decides, from the original text */
        for (rj_chunk *c = d->chunks, *n; c; c = n) {
            n = c->next;
            free(c);
        }
        d->chunks = NULL;
        free(d->text);
        d->text = NULL;
        d->fallback = 1;
        json_error_t je;
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
        if (!j) {
            /* one line: jansson quotes the text near the error, newlines included */
            base_fail_line(err, errlen, "%s:%d:%d: %s", where, je.line, je.column, je.text);
            rules_json_free(d);
            return NULL;
        }
        top = rj_alloc(d, sizeof *top);
        rj_from_jansson(d, j, top);
        json_decref(j);
    }
    *root = top;
    return d;
}

/* --- access ---------------------------------------------------------------------------------- */

const rj_val *rj_get(const rj_val *v, const char *key) {
    if (!v || v->type != RJ_OBJ)
        return NULL;
    for (int32_t i = 0; i < v->n; i++)
        if (!strcmp(v->u.items[i].key, key))
            return &v->u.items[i];
    return NULL;
}

size_t rj_size(const rj_val *v) { return v && v->type == RJ_ARR ? (size_t)v->n : 0; }

const rj_val *rj_at(const rj_val *v, size_t i) { return i < rj_size(v) ? &v->u.items[i] : NULL; }

/* --- writing, as jansson's compact dump ------------------------------------------------------ */
/* The buffer and string literals are the model writer's (json.h); jansson writes \u00XX escapes
 * with upper-case hex, hence graph_json_put_str(..., 1). */

/* jansson's jsonp_dtostr: %.17g, ".0" when it reads as an integer, the exponent without '+' or
 * leading zeros. */
static void rj_put_real(graph_json_buf *b, double x) {
    char t[64];
    snprintf(t, sizeof t, "%.17g", x);
    if (!strchr(t, '.') && !strchr(t, 'e'))
        strcat(t, ".0");
    char *e = strchr(t, 'e');
    if (e) {
        char *start = e + 1, *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start)
            memmove(start, end, strlen(end) + 1);
    }
    graph_json_put(b, t, strlen(t));
}

static void rj_put_val(graph_json_buf *b, const rj_val *v) {
    char t[32];
    switch (v->type) {
    case RJ_NULL: graph_json_put(b, "null", 4); break;
    case RJ_TRUE: graph_json_put(b, "true", 4); break;
    case RJ_FALSE: graph_json_put(b, "false", 5); break;
    case RJ_INT:
        snprintf(t, sizeof t, "%lld", (long long)v->u.i);
        graph_json_put(b, t, strlen(t));
        break;
    case RJ_REAL: rj_put_real(b, v->u.d); break;
    case RJ_STR: graph_json_put_str(b, v->u.s, 1); break;
    case RJ_ARR:
    case RJ_OBJ:
        graph_json_put(b, v->type == RJ_OBJ ? "{" : "[", 1);
        for (int32_t i = 0; i < v->n; i++) {
            if (i)
                graph_json_put(b, ",", 1);
            if (v->type == RJ_OBJ) {
                graph_json_put_str(b, v->u.items[i].key, 1);
                graph_json_put(b, ":", 1);
            }
            rj_put_val(b, &v->u.items[i]);
        }
        graph_json_put(b, v->type == RJ_OBJ ? "}" : "]", 1);
        break;
    case RJ_COUNT: break;
    }
}

char *rules_json_dump(const rj_val *v) {
    graph_json_buf b = {NULL, 0, 0};
    rj_put_val(&b, v);
    return b.s;
}
