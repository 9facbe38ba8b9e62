/* base.h: the bottom layer every other one builds on: messages into caller-owned error buffers,
 * checked allocation, assertions, atomic file writes, mkdir -p, monotonic time and strict number
 * parsing. Nothing here knows about operators, graphs or rules.
 *
 * Error tiers (../STYLE): BASE_ASSERT for a bug in our code; base_die for a failed call that
 * leaves nothing sensible to do (out of memory, a broken CUDA context); a -1 return with a message
 * in err for anything a user can cause. User input never reaches an assertion.
 */
#ifndef TASC_BASE_H
#define TASC_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BASE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define BASE_NORETURN __attribute__((noreturn))
#else
#define BASE_PRINTF(f, a)
#define BASE_NORETURN
#endif

/* --- messages -------------------------------------------------------------------------------- */

/* Format a one-line message into err (errlen bytes; err may be NULL or errlen 0: nothing is
 * written). Returns -1, so that `return base_fail(err, errlen, "...")` reports a failure. */
int base_fail(char *err, size_t errlen, const char *fmt, ...) BASE_PRINTF(3, 4);
int base_vfail(char *err, size_t errlen, const char *fmt, va_list ap);
/* The same, then every newline or carriage return in err becomes a space: for messages that quote
 * names or text from user files, which must stay one line. */
int base_fail_line(char *err, size_t errlen, const char *fmt, ...) BASE_PRINTF(3, 4);
int base_vfail_line(char *err, size_t errlen, const char *fmt, va_list ap);
/* Prefix the message already in err with a formatted context ("file.json: " + err). */
void base_prefix(char *err, size_t errlen, const char *fmt, ...) BASE_PRINTF(3, 4);

/* An internal error (a bug or a broken environment): "tasc: FILE:LINE: message" on stderr, then
 * abort(). Never for what a user can cause. */
void base_die_at(const char *file, int line, const char *fmt, ...) BASE_PRINTF(3, 4) BASE_NORETURN;
#define base_die(...) base_die_at(__FILE__, __LINE__, __VA_ARGS__)

/* An invariant of our own code; on failure names the expression and aborts (in every build). */
#define BASE_ASSERT(cond) \
    do { \
        if (!(cond)) \
            base_die_at(__FILE__, __LINE__, "assertion failed: %s", #cond); \
    } while (0)

/* --- checked allocation ------------------------------------------------------------------------
 * Out of memory is fatal (base_die). Sizes from user input must be bounded before they get here
 * (graph element limits, file sizes): these never return NULL. A size of 0 allocates 1 byte. */
void *base_xmalloc(size_t n);
void *base_xcalloc(size_t count, size_t size);
void *base_xrealloc(void *p, size_t n);
char *base_xstrdup(const char *s);
/* Grow an array of *cap elements of elem bytes to hold at least need (doubling, at least 8);
 * returns the (possibly moved) array; new elements are zeroed. */
void *base_grow(void *p, int32_t *cap, int32_t need, size_t elem);

/* --- files ------------------------------------------------------------------------------------ */

/* A file written whole or not at all: base_afile_open creates a temporary file beside path,
 * base_afile_commit closes it and renames it over path (readers never see a partial file),
 * base_afile_abort closes and removes it. Mode 0644 whatever the umask gives mkstemp. */
typedef struct {
    FILE *f;
    char *path; /* owned */
    char *tmp;  /* owned; the temporary file's name */
} base_afile;
int base_afile_open(base_afile *a, const char *path, char *err, size_t errlen);
int base_afile_commit(base_afile *a, char *err, size_t errlen);
void base_afile_abort(base_afile *a);

/* The folder part of path ("." for a bare file name, "/" for a file in the root). Caller frees. */
char *base_dirname(const char *path);

/* mkdir -p dir (0755 for new folders). 0, or -1 with "DIR: reason". */
int base_mkdirs(const char *dir, char *err, size_t errlen);
/* mkdir -p of the folder that holds path (nothing when path has no folder part). */
int base_mkdirs_for(const char *path, char *err, size_t errlen);
/* An exclusive lock on PATH.lock (fcntl; created, with path's folder, if missing; another process
 * waits for it): the descriptor that holds it, or -1 with "PATH.lock: reason". close() releases it.
 * For the read-merge-write of a cache file that several processes update. */
int base_lock_beside(const char *path, char *err, size_t errlen);

/* Splits line (modified in place) at each sep into at most max fields (f[i] point into line);
 * returns the count, or max + 1 when there are more. */
int base_split_fields(char *line, char sep, char **f, int max);
/* Strict unsigned integer in [lo, hi]: digits only (no sign, no spaces). 0, or -1. */
int base_parse_uint_in(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Every line of the open file f, without its line end, to fn (ctx, the line, modifiable); empty
 * lines and lines starting with '#' are skipped. 0, or -1 with "PATH:LINE: reason" when fn fails
 * (its reason in why) or a line holds a NUL byte, "PATH: read error" on a read error. */
int base_read_lines(FILE *f, const char *path, int (*fn)(void *ctx, char *line, char *why, size_t whylen), void *ctx,
                    char *err, size_t errlen);
/* The same on the file at path, opened and closed here. A missing file is not an error when
 * missing_ok (0, fn never called); otherwise "PATH: cannot open: reason". */
int base_load_lines(const char *path, int missing_ok, int (*fn)(void *ctx, char *line, char *why, size_t whylen),
                    void *ctx, char *err, size_t errlen);

/* Every line of the file at path (as base_load_lines reads it) parsed by parse into one record of
 * elem bytes: *recs (malloc'd, caller frees; NULL when none) and *n. When a line fails, -1 with
 * "PATH:LINE: reason" and no records: a table is loaded whole or not at all. */
int base_load_records(const char *path, int missing_ok, size_t elem,
                      int (*parse)(void *ctx, char *line, void *rec, char *why, size_t whylen), void *ctx, void **recs,
                      int32_t *n, char *err, size_t errlen);

/* Writes a table file whole or not at all (base_afile, the folder made first): header (may be NULL),
 * then the n records of elem bytes at recs, sorted by cmp (a copy: recs stays as it is), each by
 * write (ctx, the file, the record). Same records, same bytes. */
int base_save_records(const char *path, const char *header, const void *recs, int32_t n, size_t elem,
                      int (*cmp)(const void *a, const void *b), void (*write)(void *ctx, FILE *f, const void *rec),
                      void *ctx, char *err, size_t errlen);

/* --- hashing -------------------------------------------------------------------------------- */

/* 64-bit FNV-1a over n bytes, continuing from h (BASE_FNV_INIT to start): ids, seeds, and checks
 * that two buffers hold the same bits. */
#define BASE_FNV_INIT UINT64_C(0xcbf29ce484222325)
uint64_t base_fnv1a(uint64_t h, const void *p, size_t n);
/* The same over a string's bytes (without the NUL), from BASE_FNV_INIT. */
uint64_t base_fnv1a_str(const char *s);

/* --- time ------------------------------------------------------------------------------------- */

/* Seconds on the monotonic clock (for durations only). */
double base_now(void);

/* --- numbers ---------------------------------------------------------------------------------- */

/* Strict parsing of a whole string: no leading or trailing junk, no empty string, in range.
 * 0, or -1 (nothing written to *out). Doubles must be finite. */
int base_parse_double(const char *s, double *out);
int base_parse_int64(const char *s, int64_t *out);
/* The same, checked against [lo, hi]. */
int base_parse_double_in(const char *s, double lo, double hi, double *out);
int base_parse_int64_in(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* --- checked arithmetic ------------------------------------------------------------------------ */

/* *out = a * b or a + b; returns -1 (leaving *out alone) on int64 overflow. */
int base_mul_i64(int64_t a, int64_t b, int64_t *out);
int base_add_i64(int64_t a, int64_t b, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif
