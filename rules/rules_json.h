/* rules_json.h: the JSON tree the rule file reader works on (rules_io.c), internal to rules/.
 *
 * rules_json_parse reads a document with a small parser of its own (a shipped rule set is 17 MB:
 * jansson takes a second over it) and falls back to jansson for anything outside the plain subset
 * it accepts (escapes \uXXXX, bytes over 0x7f, integers of 19 digits or more, nesting over 64,
 * objects of more than 64 members, duplicate keys, any syntax error): the tree is the same either
 * way, and syntax errors are jansson's messages. The document owns every value and string.
 */
#ifndef TASC_RULES_JSON_H
#define TASC_RULES_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum { RJ_NULL, RJ_TRUE, RJ_FALSE, RJ_INT, RJ_REAL, RJ_STR, RJ_ARR, RJ_OBJ, RJ_COUNT } rj_type;

typedef struct rj_val rj_val;
struct rj_val {
    rj_type type;
    int32_t n;              /* items of an array, members of an object */
    const char *key;        /* the member's key inside an object, else NULL */
    union {
        int64_t i;          /* RJ_INT */
        double d;           /* RJ_REAL */
        const char *s;      /* RJ_STR, NUL-terminated (no NUL inside: \u0000 is refused) */
        rj_val *items;      /* RJ_ARR, RJ_OBJ: n values (members carry their key) */
    } u;
};

typedef struct rj_doc rj_doc;

/* Parse text (NUL-terminated). NULL with "WHERE:LINE:COL: message" in err on a syntax error;
 * otherwise *root is the top value. Free with rules_json_free. */
rj_doc *rules_json_parse(const char *text, const char *where, const rj_val **root, char *err, size_t errlen);
void rules_json_free(rj_doc *d);
/* 1 if the last parse took jansson's path (for tests). */
int rules_json_used_fallback(const rj_doc *d);

/* Member `key` of an object, NULL when v is not an object or has no such member. */
const rj_val *rj_get(const rj_val *v, const char *key);
/* Items of an array (0 for anything else), and item i (NULL when out of range). */
size_t rj_size(const rj_val *v);
const rj_val *rj_at(const rj_val *v, size_t i);
/* The value as jansson's json_dumps(JSON_COMPACT | JSON_ENCODE_ANY) writes it. Caller frees;
 * NULL when out of memory. */
char *rules_json_dump(const rj_val *v);

#endif
