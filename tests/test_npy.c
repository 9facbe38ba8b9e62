/* test_npy.c: .npy reading and writing (src/npy.c): round trips, every supported dtype and
 * header version written byte by byte here as NumPy would, and malformed or unsupported files,
 * each of which must be refused with a one-line message naming the file and the problem.
 * Files go to a fresh folder under /tmp that the test removes. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec.h"
#include "test.h"

static char dir[256];

static const char *path_of(const char *name) {
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* A .npy file with the given version and header dict (padded as NumPy pads) followed by data. */
static void write_raw(const char *name, int major, const char *dict, const void *data, size_t ndata) {
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hlen = total - pre;
    unsigned char *b = malloc(total + ndata);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    for (size_t k = 0; k < pre - 8; k++)
        b[8 + k] = (unsigned char)(hlen >> (8 * k));
    memcpy(b + pre, dict, dl);
    memset(b + pre + dl, ' ', hlen - dl - 1);
    b[total - 1] = '\n';
    if (ndata)
        memcpy(b + total, data, ndata);
    FILE *f = fopen(path_of(name), "wb");
    fwrite(b, 1, total + ndata, f);
    fclose(f);
    free(b);
}

static int64_t ops_numel_local(const ops_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

static void write_bytes(const char *name, const void *data, size_t n) {
    FILE *f = fopen(path_of(name), "wb");
    fwrite(data, 1, n, f);
    fclose(f);
}

static int count_files(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
            n++;
    closedir(d);
    return n;
}

/* Reading must fail with a message holding the file's path and every keyword given. */
static void expect_refused(const char *name, const char *kw1, const char *kw2) {
    char err[512] = "";
    ops_shape sh;
    float *x = npy_read(path_of(name), &sh, err, sizeof err);
    CHECK(x == NULL);
    free(x);
    CHECK_STR_CONTAINS(err, path_of(name));
    CHECK_STR_CONTAINS(err, kw1);
    if (kw2)
        CHECK_STR_CONTAINS(err, kw2);
    CHECK(strchr(err, '\n') == NULL);
    if (x || !strstr(err, kw1))
        fprintf(stderr, "  (case %s: message '%s')\n", name, err);
}

static void test_round_trip(void) {
    float v[6] = {1.5f, -2.25f, 0.0f, 3.0e-8f, -1.0e30f, 7.0f};
    ops_shape sh = {.rank = 2, .dims = {2, 3}};
    char err[512] = "";
    CHECK_EQ_INT(npy_write(path_of("rt.npy"), &sh, v, err, sizeof err), 0);
    struct stat st;
    CHECK_EQ_INT(stat(path_of("rt.npy"), &st), 0);
    CHECK_EQ_INT(st.st_size, 128 + 24); /* header padded to 64 bytes, then 6 floats */
    FILE *f = fopen(path_of("rt.npy"), "rb");
    unsigned char hdr[128];
    CHECK_EQ_INT(fread(hdr, 1, 128, f), 128);
    fclose(f);
    CHECK(!memcmp(hdr, "\x93NUMPY\x01\x00", 8));
    CHECK_EQ_INT(hdr[8] | (hdr[9] << 8), 118);
    CHECK(!memcmp(hdr + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 59));
    CHECK_EQ_INT(hdr[127], '\n');
    ops_shape got;
    float *x = npy_read(path_of("rt.npy"), &got, err, sizeof err);
    CHECK(x != NULL);
    if (x) {
        CHECK_EQ_INT(got.rank, 2);
        CHECK_EQ_INT(got.dims[0], 2);
        CHECK_EQ_INT(got.dims[1], 3);
        CHECK(!memcmp(x, v, sizeof v));
    }
    free(x);

    /* rank 0, rank 1 (needs the trailing comma), and an empty tensor */
    float s = 42.0f;
    ops_shape s0 = {.rank = 0};
    CHECK_EQ_INT(npy_write(path_of("scalar.npy"), &s0, &s, err, sizeof err), 0);
    x = npy_read(path_of("scalar.npy"), &got, err, sizeof err);
    CHECK(x && got.rank == 0 && x[0] == 42.0f);
    free(x);
    ops_shape s1 = {.rank = 1, .dims = {5}};
    float five[5] = {1, 2, 3, 4, 5};
    CHECK_EQ_INT(npy_write(path_of("vec.npy"), &s1, five, err, sizeof err), 0);
    f = fopen(path_of("vec.npy"), "rb");
    CHECK_EQ_INT(fread(hdr, 1, 128, f), 128); /* 10 + 57 + newline: padded to 128 */
    fclose(f);
    CHECK(!memcmp(hdr + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 57));
    CHECK_EQ_INT(hdr[127], '\n');
    x = npy_read(path_of("vec.npy"), &got, err, sizeof err);
    CHECK(x && got.rank == 1 && got.dims[0] == 5 && x[4] == 5.0f);
    free(x);
    ops_shape se = {.rank = 2, .dims = {0, 3}};
    CHECK_EQ_INT(npy_write(path_of("empty.npy"), &se, NULL, err, sizeof err), 0);
    x = npy_read(path_of("empty.npy"), &got, err, sizeof err);
    CHECK(x && got.rank == 2 && got.dims[0] == 0 && got.dims[1] == 3);
    free(x);

    /* a failed write leaves nothing behind, and overwriting replaces the whole file */
    int before = count_files();
    CHECK_EQ_INT(npy_write(path_of("no/such/dir/x.npy"), &sh, v, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "no/such/dir/x.npy");
    CHECK_EQ_INT(count_files(), before);
    CHECK_EQ_INT(npy_write(path_of("rt.npy"), &s1, five, err, sizeof err), 0);
    x = npy_read(path_of("rt.npy"), &got, err, sizeof err);
    CHECK(x && got.rank == 1 && got.dims[0] == 5 && x[0] == 1.0f);
    free(x);
    CHECK_EQ_INT(count_files(), before);
}

static void test_dtypes(void) {
    char err[512] = "";
    ops_shape sh;
    float *x;
    /* little-endian bytes written out explicitly, independent of the host */
    const unsigned char f8[16] = {0, 0, 0, 0, 0, 0, 0xf8, 0x3f,           /* 1.5 */
                                  0, 0, 0, 0, 0, 0, 0x04, 0xc0};          /* -2.5 */
    write_raw("f8.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f8, 16);
    x = npy_read(path_of("f8.npy"), &sh, err, sizeof err);
    CHECK(x && sh.rank == 1 && sh.dims[0] == 2);
    if (x) {
        CHECK(x[0] == 1.5f);
        CHECK(x[1] == -2.5f);
    }
    free(x);
    const unsigned char i8[24] = {7, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0, 0, 0, 1, 0, 0, 0, 0}; /* 7, -1, 2^24 */
    write_raw("i8.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }", i8, 24);
    x = npy_read(path_of("i8.npy"), &sh, err, sizeof err);
    CHECK(x && sh.rank == 2 && sh.dims[0] == 1 && sh.dims[1] == 3);
    if (x) {
        CHECK(x[0] == 7.0f);
        CHECK(x[1] == -1.0f);
        CHECK(x[2] == 16777216.0f);
    }
    free(x);
    const unsigned char i4[8] = {0x10, 0x27, 0, 0, 0xfe, 0xff, 0xff, 0xff}; /* 10000, -2 */
    write_raw("i4.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", i4, 8);
    x = npy_read(path_of("i4.npy"), &sh, err, sizeof err);
    CHECK(x && x[0] == 10000.0f && x[1] == -2.0f);
    free(x);
    const unsigned char f4[8] = {0, 0, 0x80, 0x3f, 0, 0, 0x40, 0xc0}; /* 1.0, -3.0 */
    /* version 2.0 and 3.0 headers, keys in another order, double quotes, Python 2 "2L" */
    write_raw("v2.npy", 2, "{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<f4\"}", f4, 8);
    x = npy_read(path_of("v2.npy"), &sh, err, sizeof err);
    CHECK(x && sh.rank == 1 && sh.dims[0] == 2 && x[0] == 1.0f && x[1] == -3.0f);
    if (!x)
        fprintf(stderr, "  v2: %s\n", err);
    free(x);
    write_raw("v3.npy", 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1), }", f4, 8);
    x = npy_read(path_of("v3.npy"), &sh, err, sizeof err);
    CHECK(x && sh.rank == 3 && sh.dims[1] == 2 && x[1] == -3.0f);
    free(x);
    /* float64 beyond float32's range becomes infinity (not undefined behaviour) */
    const unsigned char big[8] = {0, 0, 0, 0, 0, 0, 0xf0, 0x7f - 0x10}; /* 2^768 */
    write_raw("f8big.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", big, 8);
    x = npy_read(path_of("f8big.npy"), &sh, err, sizeof err);
    CHECK(x && sh.rank == 0 && isinf(x[0]) && x[0] > 0);
    free(x);
}

static void test_malformed(void) {
    const unsigned char f4x2[8] = {0, 0, 0x80, 0x3f, 0, 0, 0x40, 0xc0};
    write_bytes("magic.npy", "PK\x03\x04 not numpy at all", 22);
    expect_refused("magic.npy", "bad magic", NULL);
    write_bytes("short.npy", "\x93NUMPY", 6);
    expect_refused("short.npy", "bad magic", NULL);
    write_raw("ver.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f4x2, 8);
    {
        FILE *f = fopen(path_of("ver.npy"), "r+b");
        fseek(f, 6, SEEK_SET);
        fputc(4, f);
        fclose(f);
    }
    expect_refused("ver.npy", "version 4.0", NULL);
    write_bytes("hlen.npy", "\x93NUMPY\x01\x00\xff\x7f{'descr'", 17);
    expect_refused("hlen.npy", "header", "truncated");
    write_raw("nokey.npy", 1, "{'descr': '<f4', 'shape': (2,), }", f4x2, 8);
    expect_refused("nokey.npy", "missing key", "fortran_order");
    write_raw("unkkey.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f4x2, 8);
    expect_refused("unkkey.npy", "unknown key 'x'", NULL);
    write_raw("dupkey.npy", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", f4x2, 8);
    expect_refused("dupkey.npy", "duplicate key 'descr'", NULL);
    write_raw("bigend.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4x2, 8);
    expect_refused("bigend.npy", "'>f4'", "big-endian");
    write_raw("f2.npy", 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", f4x2, 8);
    expect_refused("f2.npy", "unsupported dtype '<f2'", NULL);
    write_raw("fort.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f4x2, 8);
    expect_refused("fort.npy", "fortran_order True", NULL);
    write_raw("fort2.npy", 1, "{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,), }", f4x2, 8);
    expect_refused("fort2.npy", "True or False", NULL);
    write_raw("neg.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f4x2, 8);
    expect_refused("neg.npy", "negative dimension", NULL);
    write_raw("nocomma.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", f4x2, 8);
    expect_refused("nocomma.npy", "trailing comma", NULL);
    write_raw("rank7.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,2), }", f4x2, 8);
    expect_refused("rank7.npy", "more than 6 dimensions", NULL);
    write_raw("ovf.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", f4x2,
              8);
    expect_refused("ovf.npy", "overflows", NULL);
    write_raw("ovf2.npy", 1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", f4x2, 8);
    expect_refused("ovf2.npy", "overflows", NULL);
    write_raw("trunc.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f4x2, 8);
    expect_refused("trunc.npy", "truncated data", "3 elements");
    write_raw("huge.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", f4x2, 8);
    expect_refused("huge.npy", "truncated data", NULL);
    write_raw("trail.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f4x2, 8);
    expect_refused("trail.npy", "4 unexpected bytes", NULL);
    write_raw("unterm.npy", 1, "{'descr': '<f4", f4x2, 8);
    expect_refused("unterm.npy", "bad .npy header", "unterminated string");
    write_raw("after.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", f4x2, 8);
    expect_refused("after.npy", "unexpected text after", NULL);
    write_raw("nobrace.npy", 1, "'descr': '<f4', 'fortran_order': False, 'shape': (2,)", f4x2, 8);
    expect_refused("nobrace.npy", "expected '{'", NULL);
    write_raw("shapestr.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': '2', }", f4x2, 8);
    expect_refused("shapestr.npy", "expected '('", NULL);
    write_raw("dims.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", f4x2, 8);
    expect_refused("dims.npy", "expected ',' or ')'", NULL);
    const unsigned char i8big[8] = {1, 0, 0, 1, 0, 0, 0, 0}; /* 2^24 + 1 */
    write_raw("i8big.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", i8big, 8);
    expect_refused("i8big.npy", "not exactly representable", "16777217");
    expect_refused("missing.npy", "cannot open", NULL);
    mkdir(path_of("adir.npy"), 0755);
    expect_refused("adir.npy", "not a regular file", NULL);
    rmdir(path_of("adir.npy"));
}

/* Every single-byte corruption of a valid file's first 96 bytes is either read or refused with a
 * message naming the file; never a crash (the sanitizer build checks the memory side). */
static void test_corruptions(void) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    ops_shape sh = {.rank = 2, .dims = {3, 2}};
    char err[512];
    CHECK_EQ_INT(npy_write(path_of("good.npy"), &sh, v, err, sizeof err), 0);
    unsigned char orig[152];
    FILE *f = fopen(path_of("good.npy"), "rb");
    CHECK_EQ_INT(fread(orig, 1, sizeof orig, f), 152);
    fclose(f);
    const unsigned char vals[] = {0, ' ', '(', ')', ',', '\'', '"', '9', '-', '{', '}', ':', '\n', 0xff};
    int refused = 0, read_ok = 0, bad = 0;
    for (int pos = 0; pos < 96; pos++)
        for (size_t k = 0; k < sizeof vals; k++) {
            unsigned char b[152];
            memcpy(b, orig, sizeof b);
            if (b[pos] == vals[k])
                continue;
            b[pos] = vals[k];
            write_bytes("fuzz.npy", b, sizeof b);
            ops_shape got;
            err[0] = '\0';
            float *x = npy_read(path_of("fuzz.npy"), &got, err, sizeof err);
            if (x) {
                read_ok++;
                if (ops_numel_local(&got) * 4 + 128 != 152) /* a read file's shape accounts for its data */
                    bad++;
            } else {
                refused++;
                if (!strstr(err, path_of("fuzz.npy")) || strchr(err, '\n'))
                    bad++;
            }
            free(x);
        }
    CHECK_EQ_INT(bad, 0);
    CHECK(refused > 500);
    CHECK(read_ok > 0); /* e.g. padding spaces turned into other whitespace */
}

static void cleanup(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(path_of(e->d_name));
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tasc_test_npy_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_dtypes();
    test_malformed();
    test_corruptions();
    cleanup();
    return TEST_REPORT();
}
