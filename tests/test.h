/* test.h: a tiny assertion helper for the test programs (after Redis's testhelp.h).
 * CHECK prints the failing expression with file and line and counts the failure; the program
 * ends with TEST_REPORT(), which prints "N passed, N failed" and returns the exit code. */
#ifndef TASC_TEST_H
#define TASC_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int test_passed, test_failed;

#define CHECK(cond) do { \
    if (cond) test_passed++; \
    else { test_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
    long long _a = (long long)(a), _b = (long long)(b); \
    if (_a == _b) test_passed++; \
    else { test_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", \
                                  __FILE__, __LINE__, #a, #b, _a, _b); } \
} while (0)

#define CHECK_NEAR(a, b, tol) do { \
    double _a = (double)(a), _b = (double)(b); \
    if (fabs(_a - _b) <= (tol)) test_passed++; \
    else { test_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s ~ %s (%.9g vs %.9g, tol %g)\n", \
                                  __FILE__, __LINE__, #a, #b, _a, _b, (double)(tol)); } \
} while (0)

#define CHECK_STR_CONTAINS(hay, needle) do { \
    const char *_h = (hay), *_n = (needle); \
    if (_h && strstr(_h, _n)) test_passed++; \
    else { test_failed++; fprintf(stderr, "%s:%d: CHECK failed: \"%s\" contains \"%s\"\n", \
                                  __FILE__, __LINE__, _h ? _h : "(null)", _n); } \
} while (0)

#define TEST_REPORT() ( \
    printf("%s: %d passed, %d failed\n", __FILE__, test_passed, test_failed), \
    test_failed ? 1 : 0)

/* Runs child(i, ctx) in procs forked processes at once (at most 64), each exiting with its result;
 * 1 when every one exited 0. For tests of files that several processes update together. */
static inline int test_fork_all(int procs, int (*child)(int i, void *ctx), void *ctx) {
    pid_t kids[64];
    procs = procs > 64 ? 64 : procs;
    for (int i = 0; i < procs; i++)
        if ((kids[i] = fork()) == 0)
            _exit(child(i, ctx));
    int all_ok = 1;
    for (int i = 0; i < procs; i++) {
        int st = 0;
        all_ok &= kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    return all_ok;
}

/* The whole text file at path (at most 64 KiB), malloc'd (caller frees); NULL if it cannot be read. */
static inline char *test_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = (char *)calloc(1, 1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Writes text to path (replacing it); aborts if it cannot, as a test's fixture must exist. */
static inline void test_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        abort();
    }
    fputs(text, f);
    fclose(f);
}

/* Removes the folder dir and everything in it (a test's scratch); 0, or -1 after a line on stderr. */
static inline int test_rm_dir(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) == 0)
        return 0;
    fprintf(stderr, "could not remove %s\n", dir);
    return -1;
}

#endif
