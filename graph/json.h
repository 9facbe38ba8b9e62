/* json.h: the JSON text writing that the model writer (json.c) and the rule files' writer
 * (rules/rules_json.c) share: a growing text buffer and JSON string literals.
 *
 * The buffer's text s is always NUL-terminated once anything is put (s is NULL before); it
 * belongs to the buffer's owner, who frees it. A zeroed graph_json_buf is an empty buffer.
 */
#ifndef TASC_GRAPH_JSON_H
#define TASC_GRAPH_JSON_H

#include <stddef.h>

typedef struct {
    char *s;       /* n chars of text, then a NUL */
    size_t n, cap; /* cap: bytes allocated at s */
} graph_json_buf;

/* Appends the n bytes at s. */
void graph_json_put(graph_json_buf *b, const char *s, size_t n);
/* Appends s as a JSON string literal: quotes, the two-character escapes, \u00xx for the other
 * control characters, every other byte as it is. upper_hex writes those hex digits in upper case
 * (as jansson's dump does: the rule writer must match it), else in lower case (model files). */
void graph_json_put_str(graph_json_buf *b, const char *s, int upper_hex);

#endif
