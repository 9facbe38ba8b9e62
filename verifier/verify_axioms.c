/* verify_axioms.c: loading the axiom file (verifier/axioms.smt2).
 *
 * The text is scanned for its top-level forms: each (assert (! ... :named NAME)) is one axiom, and
 * the single ';;' comment line right above it is its description. The whole text is then parsed by
 * Z3 and checked against the op table (vz_check in verify_z3.c) before it is accepted, so a file
 * that loads can be asserted in any context. A verify_axioms owns its strings.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verify_impl.h"

#define VERIFY_MAX_AXIOM_BYTES (1 << 22)

void verify_axioms_free(verify_axioms *ax) {
    if (!ax)
        return;
    if (ax->docs)
        for (int32_t i = 0; i < ax->n; i++)
            free(ax->docs[i]);
    free(ax->docs);
    free(ax->names);
    free(ax->text);
    free(ax->where);
    free(ax);
}

static char *va_strndup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int va_line_of(const char *text, const char *p) {
    int line = 1;
    for (const char *q = text; q < p; q++)
        line += *q == '\n';
    return line;
}

/* Skip blanks and comments; returns the next significant character. */
static const char *va_skip(const char *p) {
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p != ';')
            return p;
        while (*p && *p != '\n')
            p++;
    }
}

/* End of the s-expression starting at p (one past its closing parenthesis), or NULL. */
static const char *va_form_end(const char *p) {
    int depth = 0;
    for (; *p; p++) {
        if (*p == ';') {
            while (*p && *p != '\n')
                p++;
            if (!*p)
                return NULL;
        } else if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                ;
            if (!*p)
                return NULL;
        } else if (*p == '|') {
            for (p++; *p && *p != '|'; p++)
                ;
            if (!*p)
                return NULL;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            if (--depth == 0)
                return p + 1;
            if (depth < 0)
                return NULL;
        }
    }
    return NULL;
}

static int va_sym_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The comment line right above position p (which starts a line's first form): "text" without the
 * leading ";;" and blanks, or NULL when the previous line is not a ';;' comment. */
static char *va_doc_above(const char *text, const char *p) {
    const char *ls = p;
    while (ls > text && ls[-1] != '\n')
        ls--;
    if (ls == text)
        return NULL;
    const char *pe = ls - 1; /* the '\n' ending the previous line */
    const char *ps = pe;
    while (ps > text && ps[-1] != '\n')
        ps--;
    while (ps < pe && (*ps == ' ' || *ps == '\t'))
        ps++;
    if (pe - ps < 3 || ps[0] != ';' || ps[1] != ';')
        return NULL;
    ps += 2;
    while (ps < pe && (*ps == ' ' || *ps == '\t' || *ps == ';'))
        ps++;
    const char *e = pe;
    while (e > ps && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    return e > ps ? va_strndup(ps, (size_t)(e - ps)) : NULL;
}

verify_axioms *verify_axioms_from_string(const char *text, const char *where, char *err, size_t errlen) {
    if (!where)
        where = "<axioms>";
    verify_axioms *ax = calloc(1, sizeof *ax);
    if (!ax) {
        base_fail_line(err, errlen, "%s: out of memory", where);
        return NULL;
    }
    ax->text = va_strndup(text, strlen(text));
    ax->where = va_strndup(where, strlen(where));
    ax->names = calloc(VERIFY_MAX_AXIOMS, sizeof *ax->names);
    ax->docs = calloc(VERIFY_MAX_AXIOMS, sizeof *ax->docs);
    if (!ax->text || !ax->where || !ax->names || !ax->docs) {
        base_fail_line(err, errlen, "%s: out of memory", where);
        verify_axioms_free(ax);
        return NULL;
    }
    const char *p = ax->text;
    for (;;) {
        p = va_skip(p);
        if (!*p)
            break;
        if (*p != '(') {
            base_fail_line(err, errlen, "%s:%d: expected '(' at the top level", where, va_line_of(ax->text, p));
            goto fail;
        }
        const char *e = va_form_end(p);
        if (!e) {
            base_fail_line(err, errlen, "%s:%d: unbalanced parentheses", where, va_line_of(ax->text, p));
            goto fail;
        }
        const char *q = va_skip(p + 1);
        if (!strncmp(q, "assert", 6) && !va_sym_char(q[6])) {
            int line = va_line_of(ax->text, p);
            if (ax->n >= VERIFY_MAX_AXIOMS) {
                base_fail_line(err, errlen, "%s:%d: more than %d axioms", where, line, VERIFY_MAX_AXIOMS);
                goto fail;
            }
            /* the name: the last ":named SYMBOL" inside the form */
            const char *nm = NULL;
            for (const char *s = p; s < e; s++)
                if (!strncmp(s, ":named", 6) && (s[6] == ' ' || s[6] == '\t' || s[6] == '\n'))
                    nm = s + 6;
            if (!nm) {
                base_fail_line(err, errlen, "%s:%d: an assert without ':named NAME'", where, line);
                goto fail;
            }
            while (*nm == ' ' || *nm == '\t' || *nm == '\n')
                nm++;
            size_t len = 0;
            while (va_sym_char(nm[len]))
                len++;
            if (len == 0 || len >= VERIFY_NAME_LEN || (nm[0] >= '0' && nm[0] <= '9')) {
                base_fail_line(err, errlen, "%s:%d: bad axiom name (letters, digits, '_', at most %d)", where, line,
                               VERIFY_NAME_LEN - 1);
                goto fail;
            }
            memcpy(ax->names[ax->n], nm, len);
            ax->names[ax->n][len] = '\0';
            for (int32_t i = 0; i < ax->n; i++)
                if (!strcmp(ax->names[i], ax->names[ax->n])) {
                    base_fail_line(err, errlen, "%s:%d: axiom '%s' defined twice", where, line, ax->names[i]);
                    goto fail;
                }
            ax->docs[ax->n] = va_doc_above(ax->text, p);
            if (!ax->docs[ax->n]) {
                base_fail_line(err, errlen, "%s:%d: axiom '%s' needs a one-line ';;' comment right above it", where,
                               line, ax->names[ax->n]);
                goto fail;
            }
            ax->n++;
        }
        p = e;
    }
    if (ax->n == 0) {
        base_fail_line(err, errlen, "%s: no axioms", where);
        goto fail;
    }
    snprintf(ax->hash, sizeof ax->hash, "%016llx",
             (unsigned long long)verify_hash64(ax->text, strlen(ax->text), UINT64_C(0x7461736361786d73)));
    if (vz_check_text(ax, err, errlen) < 0)
        goto fail;
    return ax;
fail:
    verify_axioms_free(ax);
    return NULL;
}

verify_axioms *verify_axioms_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        base_fail_line(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(VERIFY_MAX_AXIOM_BYTES + 1);
    if (!buf) {
        fclose(f);
        base_fail_line(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    size_t n = fread(buf, 1, VERIFY_MAX_AXIOM_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        base_fail_line(err, errlen, "%s: read error", path);
        return NULL;
    }
    if (n > VERIFY_MAX_AXIOM_BYTES) {
        free(buf);
        base_fail_line(err, errlen, "%s: larger than %d bytes", path, VERIFY_MAX_AXIOM_BYTES);
        return NULL;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        free(buf);
        base_fail_line(err, errlen, "%s: not a text file (NUL byte)", path);
        return NULL;
    }
    verify_axioms *ax = verify_axioms_from_string(buf, path, err, errlen);
    free(buf);
    return ax;
}

static int va_exists(const char *p) { return access(p, R_OK) == 0; }

const char *verify_axioms_default_path(char *buf, size_t len) {
    const char *env = getenv("TASC_AXIOMS");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return buf;
    }
    if (va_exists("verifier/axioms.smt2")) {
        snprintf(buf, len, "verifier/axioms.smt2");
        return buf;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            const char *rel[] = {"/../verifier/axioms.smt2", "/../share/tasc/axioms.smt2", "/verifier/axioms.smt2"};
            for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
                snprintf(buf, len, "%s%s", exe, rel[i]);
                if (va_exists(buf))
                    return buf;
            }
        }
    }
    return NULL;
}

int32_t verify_axioms_count(const verify_axioms *ax) { return ax->n; }
const char *verify_axiom_name(const verify_axioms *ax, int32_t i) { return i >= 0 && i < ax->n ? ax->names[i] : NULL; }
const char *verify_axiom_doc(const verify_axioms *ax, int32_t i) { return i >= 0 && i < ax->n ? ax->docs[i] : NULL; }
const char *verify_axioms_text(const verify_axioms *ax) { return ax->text; }
const char *verify_axioms_hash(const verify_axioms *ax) { return ax->hash; }

int32_t verify_axiom_find(const verify_axioms *ax, const char *name) {
    for (int32_t i = 0; i < ax->n; i++)
        if (!strcmp(ax->names[i], name))
            return i;
    return -1;
}

/* The encoder's version: bump it when the encoding of rules into queries changes (2: the dims past a
 * variable's rank, up to 4, asserted to be 1). */
#define VERIFY_ENCODER_VERSION "tasc-verify-encoder-2"

const char *verify_opset_hash(void) {
    static _Thread_local char buf[17];
    uint64_t h = verify_hash64(VERIFY_ENCODER_VERSION, strlen(VERIFY_ENCODER_VERSION), 0);
    for (int op = 0; op < OP_COUNT; op++) {
        const ops_desc *d = &ops_table[op];
        if (!d->gen && !d->z3)
            continue;
        char line[512];
        int n = snprintf(line, sizeof line, "%s|%s|%d|%d|%d|%d", d->name, d->z3 ? d->z3 : "", (int)d->min_in,
                         (int)d->max_in, (int)d->n_out, d->gen);
        for (int32_t i = 0; i < d->n_params && n < (int)sizeof line - 64; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "|%s:%lld:%lld:%lld", ops_param_table[d->params[i].key].name,
                          (long long)d->params[i].lo, (long long)d->params[i].hi, (long long)d->params[i].def);
        h = verify_hash64(line, strlen(line), h);
    }
    for (int32_t i = 0; i < vsig_count; i++) {
        char nm[64];
        vsig_name(i, nm, sizeof nm);
        h = verify_hash64(nm, strlen(nm), h);
        h = verify_hash64(&vsig_table[i].n_int, sizeof vsig_table[i].n_int, h);
    }
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
    return buf;
}
