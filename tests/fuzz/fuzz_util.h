/* fuzz_util.h: what the libFuzzer harnesses of tests/fuzz/ share: bytes as a NUL-terminated
 * string, the checks every loader must pass whatever the input (an error is one non-empty line),
 * and fuzz_fail, which stops the run with the finding (libFuzzer then saves the input).
 * Header-only: each harness is one executable.
 */
#ifndef TASC_FUZZ_UTIL_H
#define TASC_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensors above this many elements are refused, so that one input costs little time and memory;
 * the limits themselves are tested elsewhere (tests/test_json.c, tests/test_onnx.c). */
#define FUZZ_MAX_ELEMENTS (INT64_C(1) << 16)

/* A copy of data with a terminating NUL (embedded NULs end the text early); caller frees. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    char *t = malloc(size + 1);
    if (!t)
        abort();
    memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

/* A finding: say what broke and abort, so that libFuzzer keeps the input. */
static inline void fuzz_fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz finding: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* A refused input must say why in exactly one non-empty line. */
static inline void fuzz_check_message(const char *err) {
    if (!err[0])
        fuzz_fail("an input was refused without a message", "");
    if (strchr(err, '\n') || strchr(err, '\r'))
        fuzz_fail("an error message spans several lines", err);
}

#endif
