/* test_rules_json.c: the rule reader's JSON parser (rules/rules_json.h) against jansson. On a
 * list of valid and invalid texts around the edges of its subset it must accept exactly what
 * jansson accepts, with the same values (compared through the compact dump, which must equal
 * jansson's byte for byte) and the same error messages; the shipped rule sets must take the fast
 * path, dump as jansson dumps them, and load into the same rules as through jansson's path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rules.h"
#include "rules_json.h"
#include "test.h"

/* rules_json_parse and jansson agree on text; returns 1 if it took the fast path. */
static int agree(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    const rj_val *root = NULL;
    char err[512] = "";
    rj_doc *d = rules_json_parse(text, "t.json", &root, err, sizeof err);
    int fast = 0;
    if (!j) {
        char want[512];
        snprintf(want, sizeof want, "t.json:%d:%d: %s", je.line, je.column, je.text);
        CHECK(d == NULL);
        if (strcmp(err, want)) {
            fprintf(stderr, "text '%.60s': message '%s', jansson's '%s'\n", text, err, want);
            CHECK(0);
        }
    } else {
        CHECK(d != NULL);
        if (d) {
            char *mine = rules_json_dump(root), *theirs = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
            if (!mine || !theirs || strcmp(mine, theirs)) {
                fprintf(stderr, "text '%.60s': dump '%.80s', jansson's '%.80s'\n", text, mine ? mine : "?",
                        theirs ? theirs : "?");
                CHECK(0);
            } else {
                CHECK(1);
            }
            free(mine);
            free(theirs);
            fast = !rules_json_used_fallback(d);
        }
        json_decref(j);
    }
    rules_json_free(d);
    return fast;
}

static void test_edges(void) {
    static const char *const texts[] = {
        "{}", "[]", " [1] ", "[1]\n\n", "{\"a\": [true, false, null], \"b\": {\"c\": \"d\"}}", "[-0]", "[-0.0]",
        "[0.003, 1e20, 1E5, 1.5e-7, 100.0, -2, 1e+2, 2.5E-03]", "[123456789012345678, -123456789012345678]",
        "[1234567890123456789]", "[-9223372036854775808]", "[9223372036854775808]", "[99999999999999999999]",
        "[1e999]", "[1e-999]", "[\"a\\/b\\n\\t\\\"\\\\\\b\\f\\r\"]", "[\"\\u00e9\\u0001\\u001f\"]", "[\"\xc3\xa9\"]",
        "[\"\xff\"]", "[\"\\x\"]", "[\"\\u0000\"]", "[\"\\ud800\"]", "[\"a\x01\"]", "{\"a\":1,\"a\":2}",
        "{\"a\":{\"b\":1,\"b\":1}}", "[01]", "[1.]", "[.5]", "[+1]", "[-]", "[1e]", "[1e+]", "[tru]", "[truex]",
        "[nul]", "[null1]", "[1x]", "[1,]", "[1 2]", "{\"a\" 1}", "{1:2}", "{\"a\":1,}", "[1]x", "", "  ", "1",
        "\"s\"", "null", "[", "{\"a\":", "[\"abc", "[1]]", "{\"k\":\"v\"}}",
    };
    int fast = 0;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        fast += agree(texts[i]);
    CHECK(fast >= 8); /* the plain ones take the fast path */
    /* nesting and members around the fast path's limits */
    char deep[400] = "", wide[2000] = "{";
    for (int i = 0; i < 70; i++)
        strcat(deep, "[");
    for (int i = 0; i < 70; i++)
        strcat(deep, "]");
    agree(deep);
    for (int i = 0; i < 70; i++)
        snprintf(wide + strlen(wide), sizeof wide - strlen(wide), "%s\"k%d\":%d", i ? "," : "", i, i);
    strcat(wide, "}");
    agree(wide);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *t = malloc((size_t)n + 1);
    if (t && fread(t, 1, (size_t)n, f) != (size_t)n) {
        free(t);
        t = NULL;
    }
    if (t)
        t[n] = '\0';
    fclose(f);
    return t;
}

/* A shipped set: the fast path, a dump equal to jansson's, the same rules as through jansson. */
static void test_shipped(const char *path, int whole_dump) {
    char *text = read_text(path);
    CHECK(text != NULL);
    if (!text)
        return;
    char err[512];
    const rj_val *root = NULL;
    rj_doc *d = rules_json_parse(text, path, &root, err, sizeof err);
    CHECK(d != NULL);
    if (d) {
        CHECK(!rules_json_used_fallback(d));
        if (whole_dump) {
            json_error_t je;
            json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
            CHECK(j != NULL);
            char *mine = rules_json_dump(root), *theirs = j ? json_dumps(j, JSON_COMPACT) : NULL;
            CHECK(mine && theirs && !strcmp(mine, theirs));
            free(mine);
            free(theirs);
            json_decref(j);
        }
    }
    rules_json_free(d);
    /* the same file through jansson's path: "tasc-rules" written with an escape it leaves to jansson */
    const char *at = strstr(text, "\"tasc-rules\"");
    CHECK(at != NULL);
    if (!at) {
        free(text);
        return;
    }
    size_t n = strlen(text), off = (size_t)(at - text);
    char *slow = malloc(n + 8);
    memcpy(slow, text, off);
    strcpy(slow + off, "\"tasc\\u002drules\"");
    strcat(slow, at + strlen("\"tasc-rules\""));
    rules_set *a = rules_from_json_string(text, path, err, sizeof err);
    if (!a)
        fprintf(stderr, "%s\n", err);
    rules_set *b = rules_from_json_string(slow, path, err, sizeof err);
    if (!b)
        fprintf(stderr, "%s\n", err);
    CHECK(a && b);
    if (a && b) {
        CHECK_EQ_INT(a->n_rules, b->n_rules);
        char *ta = rules_to_json_string(a), *tb = rules_to_json_string(b);
        CHECK(ta && tb && !strcmp(ta, tb));
        free(ta);
        free(tb);
        int32_t proofs = 0;
        for (int32_t i = 0; i < a->n_rules && i < b->n_rules; i++)
            if (a->rules[i].proof_json && b->rules[i].proof_json)
                proofs += !strcmp(a->rules[i].proof_json, b->rules[i].proof_json);
        CHECK_EQ_INT(proofs, a->n_rules);
    }
    rules_set_free(a);
    rules_set_free(b);
    free(slow);
    free(text);
}

int main(void) {
    test_edges();
    test_shipped("rules/verified-3.json", 1);
    test_shipped("rules/verified-4.json", 0);
    return TEST_REPORT();
}
