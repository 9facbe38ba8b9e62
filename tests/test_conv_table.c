/* test_conv_table.c: the per-device cache of convolution path choices (ops/cuda/conv_table.c), on
 * the CPU: entries looked up by exactly device, cuDNN version and key; save / load / save gives the
 * same bytes and the same entries (times, "inf", the fused decision); the same updates in either
 * order give the same file; malformed lines are named by file, line and field and add nothing;
 * a malformed cache is left alone by an update; processes updating one cache at once lose no
 * entry; the cache path and the TASC_CONV_CACHE switch.
 * conv_table.c and matmul_table.c are plain C in the CUDA layer, which a build without CUDA does
 * not compile: both are compiled into this test directly. Files go to a fresh folder under /tmp.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ops/cuda/conv_table.c"
#include "../ops/cuda/matmul_table.c"
#include "test.h"

/* Tile configurations of three kinds (the build's lists need the CUDA layer). */
static const char *const cfgs[CT_KINDS][2] = {{"128x128", "64x64"}, {"64x64_t4x4", "32x32_t4x4"}, {"128x128", "128x64"}};
static int32_t cfg_find(int32_t kind, const char *name) {
    for (int32_t i = 0; i < 2; i++)
        if (kind >= 0 && kind < CT_KINDS && !strcmp(name, cfgs[kind][i]))
            return i;
    return -1;
}
static const char *cfg_name(int32_t kind, int32_t i) { return cfgs[kind][i]; }
static const ct_cfg_names names = {cfg_find, cfg_name};

static char dir[256];
static const char *H100 = "NVIDIA H100 80GB HBM3|cc 9.0|132 SMs|1980 MHz";

static const char *path_of(const char *name) {
    static char p[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
    return p[i];
}

/* An entry of squeezenet's first convolution's shape, varied by i. */
static ct_entry entry(int64_t i, const char *dev) {
    ct_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.device, sizeof e.device, "%s", dev);
    e.cudnn = 91400;
    const int64_t k[CT_KEY_LEN] = {1, 3, 224, 224, 64 + i, 3, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 67108864, 0, 0, 1, 1};
    memcpy(e.key, k, sizeof k);
    e.path = (int32_t)(i % 4 == 3 ? 4 : i % 4); /* a path with a time */
    e.algo = (int32_t)(i % 8);
    e.algo_ws = 1024 * i;
    for (int32_t c = 0; c < CT_KINDS; c++) {
        e.cfg[c] = (int32_t)((i + c) % 2);
        e.split[c] = 1 << (i % 4);
    }
    for (int p = 0; p < CT_PATHS; p++)
        e.ms[p] = p == 3 || p == 5 ? INFINITY : 0.0072f + 0.001f * (float)(p + i);
    e.fused = (int32_t)(i % 3) - 1;
    return e;
}

static int same_entry(const ct_entry *a, const ct_entry *b) {
    if (strcmp(a->device, b->device) || a->cudnn != b->cudnn || memcmp(a->key, b->key, sizeof a->key) ||
        a->path != b->path || a->algo != b->algo || a->algo_ws != b->algo_ws || a->fused != b->fused ||
        memcmp(a->cfg, b->cfg, sizeof a->cfg) || memcmp(a->split, b->split, sizeof a->split))
        return 0;
    for (int p = 0; p < CT_PATHS; p++)
        if (isfinite(a->ms[p]) != isfinite(b->ms[p]) || (isfinite(a->ms[p]) && fabsf(a->ms[p] - b->ms[p]) > 1e-6f))
            return 0;
    return 1;
}

static void test_names(void) {
    CHECK(!strcmp(ct_algo_name(1), "implicit_precomp_gemm"));
    CHECK(!strcmp(ct_algo_name(7), "winograd_nonfused"));
    CHECK(!strcmp(ct_algo_name(8), "?"));
    CHECK(!strcmp(ct_algo_name(-1), "?"));
    CHECK_EQ_INT(ct_algo_find("fft_tiling"), 5);
    CHECK_EQ_INT(ct_algo_find("fastest"), -1);
    CHECK(!strcmp(ct_path_names[4], "igemm"));
}

static void test_lookup(void) {
    ct_table *t = ct_table_new(&names);
    ct_entry a = entry(1, H100), b = entry(2, H100), got;
    ct_table_set(t, &a);
    ct_table_set(t, &b);
    CHECK_EQ_INT(ct_table_size(t), 2);
    CHECK_EQ_INT(ct_table_get(t, H100, 91400, a.key, &got), 1);
    CHECK(same_entry(&got, &a));
    CHECK_EQ_INT(ct_table_get(t, H100, 91300, a.key, &got), 0);    /* another cuDNN */
    CHECK_EQ_INT(ct_table_get(t, "NVIDIA H100 80GB HBM3", 91400, a.key, &got), 0); /* only the exact key */
    int64_t k2[CT_KEY_LEN];
    memcpy(k2, a.key, sizeof k2);
    k2[CT_KEY_LEN - 1] = 0; /* no activation */
    CHECK_EQ_INT(ct_table_get(t, H100, 91400, k2, &got), 0);
    a.fused = 1; /* set replaces */
    ct_table_set(t, &a);
    CHECK_EQ_INT(ct_table_size(t), 2);
    CHECK_EQ_INT(ct_table_get(t, H100, 91400, a.key, &got), 1);
    CHECK_EQ_INT(got.fused, 1);
    ct_table_free(t);
}

static void test_files(void) {
    char err[4300];
    ct_table *t = ct_table_new(&names);
    ct_entry e[6];
    for (int i = 5; i >= 0; i--) { /* set out of order: the file is sorted */
        e[i] = entry(i, i % 2 ? H100 : "NVIDIA H200|cc 9.0|132 SMs|1980 MHz");
        ct_table_set(t, &e[i]);
    }
    const char *p1 = path_of("sub/dir/a.txt"), *p2 = path_of("b.txt");
    CHECK_EQ_INT(ct_table_save(t, p1, err, sizeof err), 0);
    ct_table *u = ct_table_new(&names);
    CHECK_EQ_INT(ct_table_load(u, p1, 0, err, sizeof err), 0);
    CHECK_EQ_INT(ct_table_size(u), 6);
    for (int i = 0; i < 6; i++) {
        ct_entry got;
        CHECK_EQ_INT(ct_table_get(u, e[i].device, e[i].cudnn, e[i].key, &got), 1);
        CHECK(same_entry(&got, &e[i]));
    }
    CHECK_EQ_INT(ct_table_save(u, p2, err, sizeof err), 0);
    char *a = test_read_file(p1), *b = test_read_file(p2);
    CHECK(a && b && !strcmp(a, b));
    CHECK_STR_CONTAINS(a, "\t0.0082,0.0092,0.0102,inf,0.0122,inf\tno\n");
    CHECK_STR_CONTAINS(a, "\tgemm\timplicit_precomp_gemm\t1024\t64x64/2\t64x64_t4x4/2\t128x64/2\t");
    free(a);
    free(b);
    CHECK_EQ_INT(ct_table_load(u, path_of("none.txt"), 1, err, sizeof err), 0); /* missing is fine */
    CHECK_EQ_INT(ct_table_load(u, path_of("none.txt"), 0, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "none.txt: cannot open");
    ct_table_free(t);
    ct_table_free(u);
}

/* One good line of the format with field f replaced by bad, loaded: the error message. */
static void bad_line(int f, const char *bad, const char *want) {
    const char *good[11] = {"NVIDIA H100", "91400", "1,3,224,224,64,3,3,3,2,2,1,1,0,0,0,0,67108864,0,0,1,1",
                            "igemm", "implicit_gemm", "0", "128x128/1", "32x32_t4x4/1", "128x64/1",
                            "0.0138,0.0141,0.0296,inf,0.0072,inf", "no"};
    char line[1024] = "# a comment line\n\n", err[4300];
    const char *unmeasured[11] = {[6] = "128x128/0", [8] = "128x64/0", [9] = "inf,inf,inf,inf,inf,inf"};
    for (int i = 0; i < 11; i++) {
        strcat(line, i == f ? bad : f == -2 && unmeasured[i] ? unmeasured[i] : good[i]);
        strcat(line, i < 10 ? "\t" : "\n");
    }
    const char *p = path_of("bad.txt");
    test_write_file(p, line);
    ct_table *t = ct_table_new(&names);
    CHECK_EQ_INT(ct_table_load(t, p, 0, err, sizeof err), f < 0 ? 0 : -1);
    ct_entry e;
    const int64_t key[CT_KEY_LEN] = {1, 3, 224, 224, 64, 3, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 67108864, 0, 0, 1, 1};
    if (f < 0) {
        memset(&e, 0, sizeof e);
        CHECK_EQ_INT(ct_table_get(t, "NVIDIA H100", 91400, key, &e), 1);
        CHECK_EQ_INT(e.split[CT_TC], f == -2 ? 0 : 1);
        CHECK_EQ_INT(e.path, 4);
        CHECK(f == -2 ? !isfinite(e.ms[4]) : fabsf(e.ms[4] - 0.0072f) < 1e-7f);
        CHECK_EQ_INT(e.fused, 0);
    }
    CHECK_EQ_INT(ct_table_size(t), f < 0 ? 1 : 0);
    if (f >= 0) {
        CHECK_STR_CONTAINS(err, "bad.txt:3: ");
        CHECK_STR_CONTAINS(err, want);
    }
    ct_table_free(t);
}

static void test_errors(void) {
    bad_line(-1, "", "");
    bad_line(-2, "", ""); /* not measured: split 0, no time anywhere */
    bad_line(1, "9.1", "bad cuDNN version '9.1'");
    bad_line(2, "1,3,224", "key: expected 21 integers separated by commas, found 3");
    bad_line(2, "1,3,224,224,64,3,3,3,2,2,1,1,0,0,0,0,67108864,0,0,1,-1", "key: bad integer '-1' at position 21");
    bad_line(3, "fastest", "unknown path 'fastest'");
    bad_line(4, "winograd3", "unknown cuDNN algorithm 'winograd3'");
    bad_line(5, "x", "bad workspace bytes 'x'");
    bad_line(6, "256x256/1", "unknown 3xtf32 configuration '256x256' (a file from another build?)");
    bad_line(7, "32x32_t4x4", "igemm: expected CONFIG/SPLIT, found '32x32_t4x4'");
    bad_line(8, "128x64/65", "wgmma: bad split '65' (an integer in [0, 64])");
    bad_line(9, "0.01,0.02", "ms: expected 6 times separated by commas, found 2");
    bad_line(9, "0.01,0.02,nan,inf,0.1,inf", "ms: bad time 'nan' for direct");
    bad_line(10, "maybe", "bad fused 'maybe' (yes, no or -)");
    bad_line(10, "no\textra", "expected 11 TAB-separated fields, found more than 11");
    bad_line(0, "", "device name empty");
}

static ct_table *one(int64_t i) {
    ct_table *t = ct_table_new(&names);
    ct_entry e = entry(i, H100);
    ct_table_set(t, &e);
    return t;
}

static void test_update(void) {
    char err[4300];
    const char *pa = path_of("cache/a.txt"), *pb = path_of("cache/b.txt");
    for (int order = 0; order < 2; order++) { /* the same updates in either order: the same bytes */
        const char *p = order ? pb : pa;
        ct_table *x = one(1), *y = one(2);
        CHECK_EQ_INT(ct_table_update(p, order ? y : x, err, sizeof err), 0);
        CHECK_EQ_INT(ct_table_update(p, order ? x : y, err, sizeof err), 0);
        ct_table_free(x);
        ct_table_free(y);
    }
    char *a = test_read_file(pa), *b = test_read_file(pb);
    CHECK(a && b && !strcmp(a, b));
    free(a);
    free(b);
    test_write_file(pb, "garbage\n"); /* a malformed cache is left as it is */
    ct_table *x = one(3);
    CHECK_EQ_INT(ct_table_update(pb, x, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, ":1: expected 11 TAB-separated fields");
    ct_table_free(x);
    char *g = test_read_file(pb);
    CHECK(g && !strcmp(g, "garbage\n"));
    free(g);
}

enum { PROCS = 6, EACH = 5 };

/* Child i of test_concurrent: EACH entries of its own, one update each; 0 if all succeeded. */
static int update_child(int i, void *path) {
    char err[4300];
    int bad = 0;
    for (int j = 0; j < EACH; j++) {
        ct_table *t = one(1 + i * EACH + j);
        bad |= ct_table_update(path, t, err, sizeof err) != 0;
        ct_table_free(t);
    }
    return bad;
}

/* Processes updating one cache at once: every entry arrives, the file stays well-formed. */
static void test_concurrent(void) {
    char err[4300];
    const char *p = path_of("cache/shared.txt");
    CHECK(test_fork_all(PROCS, update_child, (void *)p));
    ct_table *t = ct_table_new(&names);
    CHECK_EQ_INT(ct_table_load(t, p, 0, err, sizeof err), 0);
    CHECK_EQ_INT(ct_table_size(t), PROCS * EACH);
    ct_table_free(t);
}

static void test_paths(void) {
    char buf[4096], want[4200];
    setenv("TASC_CACHE_DIR", dir, 1);
    snprintf(want, sizeof want, "%s/conv-NVIDIA_H100_80GB_HBM3_cc_9.0_132_SMs_1980_MHz.txt", dir);
    CHECK(!strcmp(ct_cache_path(H100, buf, sizeof buf), want));
    unsetenv("TASC_CACHE_DIR");
    setenv("HOME", "/home/u", 1);
    CHECK(!strcmp(ct_cache_path("X", buf, sizeof buf), "/home/u/.cache/tasc/conv-X.txt"));
    const char *vals[] = {NULL, "", "on", "off", "0", "1"};
    const int want_off[] = {0, 0, 0, 1, 1, 0};
    for (int i = 0; i < 6; i++) {
        if (vals[i])
            setenv("TASC_CONV_CACHE", vals[i], 1);
        else
            unsetenv("TASC_CONV_CACHE");
        CHECK_EQ_INT(ct_cache_off(), want_off[i]);
    }
    unsetenv("TASC_CONV_CACHE");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tasc_test_convtable_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_names();
    test_lookup();
    test_files();
    test_errors();
    test_update();
    test_concurrent();
    test_paths();
    test_rm_dir(dir);
    return TEST_REPORT();
}
