/* test_base.c: the base layer (src/base): messages into err buffers (truncation, NULL buffers,
 * one-line messages, prefixes), checked allocation and growth, atomic file writes (commit and
 * abort leave no temporary behind), mkdir -p, the monotonic clock, strict number parsing and
 * checked arithmetic; text files (field splitting, the line reader and its errors, the lock beside
 * a file, held against another process) and FNV-1a. Files go to a fresh folder under /tmp that the
 * test removes.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "test.h"

static char dir[] = "/tmp/tasc_test_base_XXXXXX";

static int count_entries(const char *d) {
    DIR *h = opendir(d);
    int n = 0;
    if (!h)
        return -1;
    for (struct dirent *e; (e = readdir(h));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(h);
    return n;
}

static void test_messages(void) {
    char err[16];
    CHECK_EQ_INT(base_fail(err, sizeof err, "x=%d", 42), -1);
    CHECK(!strcmp(err, "x=42"));
    CHECK_EQ_INT(base_fail(err, sizeof err, "%s", "a long message that is cut"), -1);
    CHECK_EQ_INT(strlen(err), sizeof err - 1);
    CHECK_EQ_INT(base_fail(NULL, 0, "nothing %d", 1), -1);
    CHECK_EQ_INT(base_fail_line(NULL, 0, "nothing %d", 1), -1);

    char line[64];
    CHECK_EQ_INT(base_fail_line(line, sizeof line, "name '%s'\n", "a\nb\rc"), -1);
    CHECK(!strcmp(line, "name 'a b c' "));
    base_fail(line, sizeof line, "kept\nas is");
    CHECK(strchr(line, '\n') != NULL);

    base_fail(line, sizeof line, "bad shape");
    base_prefix(line, sizeof line, "%s: ", "m.json");
    CHECK(!strcmp(line, "m.json: bad shape"));
    base_fail(err, sizeof err, "message");
    base_prefix(err, sizeof err, "%s: ", "a-long-file-name.json");
    CHECK_EQ_INT(strlen(err), sizeof err - 1);
    CHECK(!strncmp(err, "a-long-file-nam", sizeof err - 1));
}

static void test_alloc(void) {
    char *z = base_xcalloc(4, 8);
    int zero = 1;
    for (int i = 0; i < 32; i++)
        zero &= z[i] == 0;
    CHECK(zero);
    free(z);
    free(base_xmalloc(0));
    char *s = base_xstrdup("copy");
    CHECK(!strcmp(s, "copy"));
    free(s);

    int32_t cap = 0, *a = NULL;
    for (int32_t n = 0; n < 1000; n++) {
        a = base_grow(a, &cap, n + 1, sizeof *a);
        CHECK(cap >= n + 1);
        a[n] = n;
    }
    int ok = 1;
    for (int32_t n = 0; n < 1000; n++)
        ok &= a[n] == n;
    CHECK(ok);
    int32_t old = cap;
    a = base_grow(a, &cap, cap + 1, sizeof *a);
    CHECK(cap > old && a[old] == 0); /* new elements are zeroed */
    free(a);
}

static void test_afile(void) {
    char path[512], err[512], sub[512];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    base_afile f;
    CHECK_EQ_INT(base_afile_open(&f, path, err, sizeof err), 0);
    fputs("first\n", f.f);
    CHECK_EQ_INT(count_entries(dir), 1); /* only the temporary so far */
    CHECK_EQ_INT(access(path, F_OK), -1);
    CHECK_EQ_INT(base_afile_commit(&f, err, sizeof err), 0);
    CHECK_EQ_INT(count_entries(dir), 1);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);

    /* an aborted write leaves the old file and no temporary */
    CHECK_EQ_INT(base_afile_open(&f, path, err, sizeof err), 0);
    fputs("second\n", f.f);
    base_afile_abort(&f);
    base_afile_abort(&f); /* a no-op on an aborted (zeroed) file */
    CHECK_EQ_INT(count_entries(dir), 1);
    FILE *r = fopen(path, "r");
    char buf[32] = "";
    CHECK(r && fgets(buf, sizeof buf, r) && !strcmp(buf, "first\n"));
    if (r)
        fclose(r);

    snprintf(sub, sizeof sub, "%s/missing/out.txt", dir);
    CHECK_EQ_INT(base_afile_open(&f, sub, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "missing/out.txt: cannot create");
    unlink(path);
}

static void test_mkdirs(void) {
    char deep[512], file[512], err[512];
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    CHECK_EQ_INT(base_mkdirs(deep, err, sizeof err), 0);
    CHECK_EQ_INT(base_mkdirs(deep, err, sizeof err), 0); /* existing folders are fine */
    snprintf(file, sizeof file, "%s/d/e/f.txt", dir);
    CHECK_EQ_INT(base_mkdirs_for(file, err, sizeof err), 0);
    struct stat st;
    snprintf(file, sizeof file, "%s/d/e", dir);
    CHECK(stat(file, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_EQ_INT(base_mkdirs_for("no-folder.txt", err, sizeof err), 0);

    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    if (f)
        fclose(f);
    snprintf(deep, sizeof deep, "%s/plain/x", dir);
    CHECK_EQ_INT(base_mkdirs(deep, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "plain");
    unlink(file);
    const char *rm[] = {"a/b/c", "a/b", "a", "d/e", "d"};
    for (size_t i = 0; i < sizeof rm / sizeof *rm; i++) {
        snprintf(file, sizeof file, "%s/%s", dir, rm[i]);
        rmdir(file);
    }
}

static void test_numbers(void) {
    double d = 0;
    int64_t v = 0;
    CHECK(base_parse_double("2.5", &d) == 0 && d == 2.5);
    CHECK_EQ_INT(base_parse_double("2.5x", &d), -1);
    CHECK_EQ_INT(base_parse_double("", &d), -1);
    CHECK_EQ_INT(base_parse_double(NULL, &d), -1);
    CHECK_EQ_INT(base_parse_double("inf", &d), -1);
    CHECK_EQ_INT(base_parse_double("1e999", &d), -1);
    CHECK(base_parse_int64("-17", &v) == 0 && v == -17);
    CHECK_EQ_INT(base_parse_int64("17.0", &v), -1);
    CHECK_EQ_INT(base_parse_int64("99999999999999999999", &v), -1);
    CHECK(base_parse_int64_in("5", 1, 10, &v) == 0 && v == 5);
    v = 3;
    CHECK_EQ_INT(base_parse_int64_in("11", 1, 10, &v), -1);
    CHECK_EQ_INT(v, 3); /* untouched on failure */
    CHECK_EQ_INT(base_parse_double_in("0.5", 0, 1, &d), 0);
    CHECK_EQ_INT(base_parse_double_in("1.5", 0, 1, &d), -1);

    int64_t r = 7;
    CHECK(base_mul_i64(INT64_C(3), INT64_C(4), &r) == 0 && r == 12);
    CHECK_EQ_INT(base_mul_i64(INT64_MAX, 2, &r), -1);
    CHECK_EQ_INT(r, 12);
    CHECK(base_add_i64(INT64_C(1), INT64_C(2), &r) == 0 && r == 3);
    CHECK_EQ_INT(base_add_i64(INT64_MAX, 1, &r), -1);

    double t0 = base_now(), t1 = base_now();
    CHECK(t0 > 0 && t1 >= t0);
}

/* Lines joined with '|' (the reader's callback); fails on a line "bad". */
static int join_line(void *ctx, char *line, char *why, size_t whylen) {
    if (!strcmp(line, "bad"))
        return base_fail(why, whylen, "a bad line");
    strcat((char *)ctx, line);
    strcat((char *)ctx, "|");
    return 0;
}

/* A line "N" into an int record; fails on anything else. */
static int int_record(void *ctx, char *line, void *rec, char *why, size_t whylen) {
    int64_t v;
    (*(int *)ctx)++;
    if (base_parse_uint_in(line, 0, 1000, &v))
        return base_fail(why, whylen, "not a number: '%s'", line);
    *(int *)rec = (int)v;
    return 0;
}

static void test_records(void) {
    char path[512], err[600];
    snprintf(path, sizeof path, "%s/records.txt", dir);
    test_write_file(path, "# numbers\n7\n\n11\n13\n");
    void *recs = NULL;
    int32_t n = -1;
    int calls = 0;
    CHECK_EQ_INT(base_load_records(path, 0, sizeof(int), int_record, &calls, &recs, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 3);
    CHECK(recs && ((int *)recs)[0] == 7 && ((int *)recs)[1] == 11 && ((int *)recs)[2] == 13);
    free(recs);
    test_write_file(path, "7\nx\n13\n"); /* a bad line: no records at all */
    CHECK_EQ_INT(base_load_records(path, 0, sizeof(int), int_record, &calls, &recs, &n, err, sizeof err), -1);
    CHECK(recs == NULL && n == 0);
    CHECK_STR_CONTAINS(err, "records.txt:2: not a number: 'x'");
    unlink(path);
    CHECK_EQ_INT(base_load_records(path, 1, sizeof(int), int_record, &calls, &recs, &n, err, sizeof err), 0);
    CHECK(recs == NULL && n == 0);
    CHECK_EQ_INT(calls, 5);
}

static int int_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void int_write(void *ctx, FILE *f, const void *rec) { fprintf(f, "%s%d\n", (const char *)ctx, *(const int *)rec); }

static void test_save_records(void) {
    char path[512], err[600];
    snprintf(path, sizeof path, "%s/deep/er/saved.txt", dir);
    const int v[4] = {13, 7, 11, 7};
    CHECK_EQ_INT(base_save_records(path, "# numbers\n", v, 4, sizeof(int), int_cmp, int_write, "n=", err, sizeof err),
                 0);
    char *t = test_read_file(path);
    CHECK(t && !strcmp(t, "# numbers\nn=7\nn=7\nn=11\nn=13\n"));
    free(t);
    CHECK(v[0] == 13 && v[1] == 7); /* the caller's records stay as they were */
    CHECK_EQ_INT(base_save_records(path, NULL, NULL, 0, sizeof(int), int_cmp, int_write, "", err, sizeof err), 0);
    t = test_read_file(path);
    CHECK(t && !strcmp(t, ""));
    free(t);
    unlink(path);
    char d[512];
    snprintf(d, sizeof d, "%s/deep/er", dir);
    rmdir(d);
    snprintf(d, sizeof d, "%s/deep", dir);
    rmdir(d);
    CHECK_EQ_INT(base_save_records("/proc/nonexistent/x.txt", NULL, v, 4, sizeof(int), int_cmp, int_write, "", err,
                                   sizeof err), -1);
}

static void test_text(void) {
    char line[] = "a\tb\t\tc", *f[4];
    CHECK_EQ_INT(base_split_fields(line, '\t', f, 4), 4);
    CHECK(!strcmp(f[0], "a") && !strcmp(f[1], "b") && !strcmp(f[2], "") && !strcmp(f[3], "c"));
    char line2[] = "1,2,3";
    CHECK_EQ_INT(base_split_fields(line2, ',', f, 2), 3); /* more than max */
    int64_t v = -1;
    CHECK_EQ_INT(base_parse_uint_in("42", 0, 100, &v), 0);
    CHECK_EQ_INT(v, 42);
    CHECK_EQ_INT(base_parse_uint_in("-1", -5, 100, &v), -1); /* no sign */
    CHECK_EQ_INT(base_parse_uint_in(" 1", 0, 100, &v), -1);
    CHECK_EQ_INT(base_parse_uint_in("101", 0, 100, &v), -1);
    CHECK_EQ_INT(base_parse_uint_in("", 0, 100, &v), -1);

    char path[512], err[600], got[256] = "";
    snprintf(path, sizeof path, "%s/lines.txt", dir);
    FILE *w = fopen(path, "w");
    fputs("# comment\none\r\n\ntwo\nbad\nthree\n", w);
    fclose(w);
    FILE *r = fopen(path, "r");
    CHECK_EQ_INT(base_read_lines(r, path, join_line, got, err, sizeof err), -1);
    fclose(r);
    CHECK(!strcmp(got, "one|two|"));
    CHECK_STR_CONTAINS(err, "lines.txt:5: a bad line");
    w = fopen(path, "w");
    fwrite("x\ny\0z\n", 1, 6, w);
    fclose(w);
    r = fopen(path, "r");
    got[0] = '\0';
    CHECK_EQ_INT(base_read_lines(r, path, join_line, got, err, sizeof err), -1);
    fclose(r);
    CHECK_STR_CONTAINS(err, "lines.txt:2: NUL byte in line");
    unlink(path);
    got[0] = '\0';
    CHECK_EQ_INT(base_load_lines(path, 1, join_line, got, err, sizeof err), 0); /* missing is fine */
    CHECK_EQ_INT(base_load_lines(path, 0, join_line, got, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "lines.txt: cannot open: ");
    test_write_file(path, "one\ntwo\n");
    CHECK_EQ_INT(base_load_lines(path, 0, join_line, got, err, sizeof err), 0);
    CHECK(!strcmp(got, "one|two|"));
    unlink(path);

    /* the lock: a second process waits until the first closes it */
    snprintf(path, sizeof path, "%s/sub/cache.txt", dir);
    int fd = base_lock_beside(path, err, sizeof err);
    CHECK(fd >= 0);
    int pipefd[2];
    CHECK_EQ_INT(pipe(pipefd), 0);
    pid_t kid = fork();
    if (kid == 0) {
        char e2[600];
        int k = base_lock_beside(path, e2, sizeof e2);
        char c = k >= 0 ? 'L' : 'E';
        (void)!write(pipefd[1], &c, 1);
        _exit(k >= 0 ? 0 : 1);
    }
    const struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    char c = 0;
    struct timeval tv = {0, 0};
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(pipefd[0], &rs);
    CHECK_EQ_INT(select(pipefd[0] + 1, &rs, NULL, NULL, &tv), 0); /* still waiting */
    close(fd);
    CHECK(read(pipefd[0], &c, 1) == 1 && c == 'L');
    int st = 0;
    waitpid(kid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(pipefd[0]);
    close(pipefd[1]);
    char lock[600];
    snprintf(lock, sizeof lock, "%s.lock", path);
    unlink(lock);
    snprintf(lock, sizeof lock, "%s/sub", dir);
    rmdir(lock);
    CHECK_EQ_INT(base_lock_beside("/proc/nonexistent/x/cache.txt", err, sizeof err), -1);
}

static void test_fnv(void) {
    /* the reference values of FNV-1a 64 */
    CHECK(base_fnv1a_str("") == UINT64_C(0xcbf29ce484222325));
    CHECK(base_fnv1a_str("a") == UINT64_C(0xaf63dc4c8601ec8c));
    CHECK(base_fnv1a_str("foobar") == UINT64_C(0x85944171f73967e8));
    CHECK(base_fnv1a(base_fnv1a(BASE_FNV_INIT, "foo", 3), "bar", 3) == base_fnv1a_str("foobar"));
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_messages();
    test_alloc();
    test_afile();
    test_mkdirs();
    test_numbers();
    test_text();
    test_records();
    test_save_records();
    test_fnv();
    rmdir(dir);
    return TEST_REPORT();
}
