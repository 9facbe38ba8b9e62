/* test_matmul_table.c: the matmul tuning table and its device keys (ops/cuda/matmul_table.c), on
 * the CPU: key format and file names, load/save round trips with the same bytes, exact keys
 * before name-only lines (the format before device keys), lines of another key not used,
 * malformed files named by file and line, the locked merge of the per-device cache (also with
 * processes writing at once), the cache, user and shipped table paths, and the refusal of
 * first-use tuning by TASC_NO_AUTOTUNE; precision keys ("EPILOGUE@3xtf32" entries naming 3xTF32
 * kernels or the FP32 kernel) and their errors.
 * matmul_table.c is plain C but lives in the CUDA layer, which a build without CUDA does not
 * compile: it is compiled into this test directly (its symbols are this test's own, so the CUDA
 * build's copy in the kernels archive is never pulled in). Files go to a fresh folder under /tmp.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ops/cuda/matmul_table.c"
#include "test.h"

/* A configuration list of three names (the build's list needs the CUDA layer). */
static const char *const cfg_list[] = {"128x128x16_w64x32_t8x8_h2_u16_b2", "64x64x16_w64x16_t8x4_h2_u16_b3_g",
                                       "32x64x32_w16x32_t4x4_h2_u32_b4_c"};
static int32_t cfg_find(const char *name) {
    for (int32_t i = 0; i < 3; i++)
        if (name && !strcmp(name, cfg_list[i]))
            return i;
    return -1;
}
static const char *cfg_name(int32_t i, char *buf, size_t len) {
    snprintf(buf, len, "%s", i >= 0 && i < 3 ? cfg_list[i] : "?");
    return buf;
}
/* The 3xTF32 kernels' lists: two mma.sync names and wgmma's two tiles. */
static const char *const tf_list[2][2] = {{"128x128x32_w32x64_s3_b1_k1", "64x32x32_w32x32_s4_b2_k2"},
                                          {"128x128", "128x64"}};
static int32_t tf_find(int32_t kind, const char *name) {
    for (int32_t i = 0; kind >= 1 && kind <= 2 && i < 2; i++)
        if (name && !strcmp(name, tf_list[kind - 1][i]))
            return i;
    return -1;
}
static const char *tf_name(int32_t kind, int32_t i, char *buf, size_t len) {
    snprintf(buf, len, "%s", kind >= 1 && kind <= 2 && i >= 0 && i < 2 ? tf_list[kind - 1][i] : "?");
    return buf;
}
static const mm_cfg_names names = {cfg_find, cfg_name, tf_find, tf_name};
static const mm_cfg_names names_fp32 = {cfg_find, cfg_name, NULL, NULL}; /* a list without 3xTF32 kernels */

static char dir[256];
static const char *H200 = "NVIDIA H200|cc 9.0|132 SMs|1980 MHz";

static const char *path_of(const char *name) {
    static char p[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
    return p[i];
}

static mm_table_key key(int64_t m, int64_t n, int64_t k, int64_t b, int32_t epi) {
    mm_table_key x = {m, n, k, b, epi, 0};
    return x;
}

static void test_keys(void) {
    char buf[MM_DEVKEY_LEN], file[MM_DEVKEY_LEN];
    CHECK(!strcmp(mm_devkey_make(buf, sizeof buf, "NVIDIA H200", 9, 0, 132, 1980), H200));
    CHECK(!strcmp(mm_devkey_file(buf, file, sizeof file), "NVIDIA_H200_cc_9.0_132_SMs_1980_MHz"));
    CHECK(!strcmp(mm_devkey_file("a/b|c", file, 4), "a_b")); /* truncated, still terminated */
    for (int32_t e = 0; e < MM_EPI_COUNT; e++)
        CHECK_EQ_INT(mm_epi_find(mm_epi_name(e)), e);
    CHECK_EQ_INT(mm_epi_find("bias_gelu"), 5);
    CHECK_EQ_INT(mm_epi_find("tanh"), -1);
    CHECK(!strcmp(mm_epi_name(MM_EPI_COUNT), "?"));
    /* the index of (bias, act) and back: the first six keep their old indices */
    CHECK_EQ_INT(mm_epi_index(1, 2), 5);
    CHECK_EQ_INT(mm_epi_index(0, 3), 6);
    CHECK(!strcmp(mm_epi_name(mm_epi_index(1, 4)), "bias_gelu_tanh"));
    CHECK(!strcmp(mm_epi_name(mm_epi_index(0, MM_EPI_ACTS - 1)), "hardswish"));
    CHECK_EQ_INT(mm_epi_index(0, MM_EPI_ACTS), -1);
    for (int32_t e = 0; e < MM_EPI_COUNT; e++) {
        int32_t b = -1, a = -1;
        mm_epi_split(e, &b, &a);
        CHECK_EQ_INT(mm_epi_index(b, a), e);
        CHECK_EQ_INT(b, strncmp(mm_epi_name(e), "bias", 4) == 0);
    }
}

static void test_lookup(void) {
    mm_table *t = mm_table_new_names(&names);
    mm_choice c0 = {0, 1, 8, 0}, c1 = {1, 4, 16, 0}, c2 = {2, 6, 1, 0}, got;
    mm_table_key k = key(128, 768, 768, 1, 3);
    double us = 0;
    mm_table_set(t, "NVIDIA H200", &k, &c0, 10.0);                                /* old format: name only */
    CHECK_EQ_INT(mm_table_find(t, H200, &k, &got, &us), 1);                       /* matches by name */
    CHECK_EQ_INT(got.cfg, 0);
    CHECK_EQ_INT(mm_table_find(t, "NVIDIA H100 80GB HBM3|cc 9.0|132 SMs|1980 MHz", &k, &got, NULL), 0);
    mm_table_set(t, "NVIDIA H200|cc 9.0|132 SMs|1755 MHz", &k, &c1, 9.0); /* another clock: not ours */
    CHECK_EQ_INT(mm_table_find(t, H200, &k, &got, &us), 1);
    CHECK_EQ_INT(got.cfg, 0);
    mm_table_set(t, H200, &k, &c2, 8.0); /* the exact key wins over the name-only line */
    CHECK_EQ_INT(mm_table_find(t, H200, &k, &got, &us), 1);
    CHECK_EQ_INT(got.cfg, 2);
    CHECK_EQ_INT(got.split_k, 6);
    CHECK_NEAR(us, 8.0, 0);
    mm_table_key other = key(128, 768, 768, 1, 0); /* another epilogue */
    CHECK_EQ_INT(mm_table_find(t, H200, &other, &got, NULL), 0);
    CHECK_EQ_INT(mm_table_size(t), 3);
    mm_table_free(t);
    /* exact before name-only whatever the order of the lines */
    t = mm_table_new_names(&names);
    mm_table_set(t, H200, &k, &c2, 8.0);
    mm_table_set(t, "NVIDIA H200", &k, &c0, 10.0);
    CHECK_EQ_INT(mm_table_find(t, H200, &k, &got, NULL), 1);
    CHECK_EQ_INT(got.cfg, 2);
    mm_table_free(t);
}

static void test_files(void) {
    char err[4300];
    const char *p1 = path_of("sub/t1.txt"), *p2 = path_of("t2.txt");
    mm_table *t = mm_table_new_names(&names);
    CHECK_EQ_INT(mm_table_load(t, p1, 1, err, sizeof err), 0); /* missing, allowed */
    CHECK_EQ_INT(mm_table_load(t, p1, 0, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "cannot open");
    mm_choice c0 = {0, 1, 8, 0}, c1 = {1, 4, 16, 0};
    mm_table_key k1 = key(4096, 4096, 4096, 1, 0), k2 = key(128, 3072, 768, 1, 5);
    mm_table_set(t, H200, &k2, &c1, 25.5);
    mm_table_set(t, "NVIDIA H100 80GB HBM3", &k1, &c0, 2946.14);
    mm_table_set(t, H200, &k1, &c0, 2714.5);
    CHECK_EQ_INT(mm_table_save(t, p1, err, sizeof err), 0); /* the parent folder is made */
    mm_table_free(t);
    t = mm_table_new_names(&names);
    CHECK_EQ_INT(mm_table_load(t, p1, 0, err, sizeof err), 0);
    CHECK_EQ_INT(mm_table_size(t), 3);
    CHECK_EQ_INT(mm_table_save(t, p2, err, sizeof err), 0);
    mm_table_free(t);
    char *a = test_read_file(p1), *b = test_read_file(p2);
    CHECK(a && b && !strcmp(a, b)); /* same entries, same bytes */
    CHECK_STR_CONTAINS(a, "NVIDIA H200|cc 9.0|132 SMs|1980 MHz\t128\t3072\t768\t1\tbias_gelu\t"
                          "64x64x16_w64x16_t8x4_h2_u16_b3_g\t4\t16\t25.50\n");
    CHECK(strstr(a, "NVIDIA H100 80GB HBM3\t4096") < strstr(a, "NVIDIA H200|")); /* sorted by device */
    free(a);
    free(b);
    /* a table of the format before device keys (bench/runtime/matmul_tune.txt) loads as it is */
    test_write_file(p2, "# old\nNVIDIA H200\t1024\t1024\t1024\t1\tnone\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t2\t1\t59.33\n");
    t = mm_table_new_names(&names);
    CHECK_EQ_INT(mm_table_load(t, p2, 0, err, sizeof err), 0);
    mm_choice got;
    mm_table_key k3 = key(1024, 1024, 1024, 1, 0);
    CHECK_EQ_INT(mm_table_find(t, H200, &k3, &got, NULL), 1);
    CHECK_EQ_INT(got.cfg, 2);
    mm_table_free(t);
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"Dev\t1\t2\t3\t1\tnone\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t1\t8\n", ":1: expected 10 TAB-separated fields, found 9"},
        {"#\nDev\t1\t2\t3\t1\ttanh\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t1\t8\t1.0\n", ":2: unknown epilogue 'tanh'"},
        {"Dev\t1\t2\t3\t1\tnone\tnope\t1\t8\t1.0\n", ":1: unknown tile configuration 'nope'"},
        {"Dev\t0\t2\t3\t1\tnone\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t1\t8\t1.0\n", ":1: bad m '0'"},
        {"Dev\t1\t2\t3\t1\tnone\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t65\t8\t1.0\n", ":1: bad split_k '65'"},
        {"Dev\t1\t2\t3\t1\tnone\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t1\t8\tx\n", ":1: bad time 'x'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_write_file(p2, bad[i].text);
        t = mm_table_new_names(&names);
        CHECK_EQ_INT(mm_table_load(t, p2, 1, err, sizeof err), -1);
        CHECK_STR_CONTAINS(err, p2);
        CHECK_STR_CONTAINS(err, bad[i].want);
        CHECK_EQ_INT(mm_table_size(t), 0); /* nothing added from a bad file */
        mm_table_free(t);
    }
}

static mm_table_key key3(int64_t m, int64_t n, int64_t k, int64_t b, int32_t epi) {
    mm_table_key x = key(m, n, k, b, epi);
    x.prec = 1;
    return x;
}

/* Precision keys (issue 17): "EPILOGUE@3xtf32" entries are another key than the fp32 line of the
 * same shape; their configs name a 3xTF32 kernel (mma:, wgmma:) or the FP32 kernel; round trip in
 * the same bytes; fp32 lines keep their text; misuse is named by file and line. */
static void test_precision(void) {
    char err[4300], nm[128];
    const char *p1 = path_of("prec1.txt"), *p2 = path_of("prec2.txt");
    CHECK(!strcmp(mm_table_prec_name(0), "fp32"));
    CHECK(!strcmp(mm_table_prec_name(1), "3xtf32"));
    CHECK(!strcmp(mm_table_prec_name(2), "?"));
    mm_table *t = mm_table_new_names(&names);
    mm_choice f = {1, 4, 16, 0}, mma = {1, 4, 8, MM_KERNEL_MMA}, wg = {0, 1, 8, MM_KERNEL_WGMMA};
    mm_choice wgs = {1, 8, 8, MM_KERNEL_WGMMA}; /* wgmma split-K: the split in the split_k field */
    mm_choice fp = {2, 6, 1, 0}, got;
    CHECK(!strcmp(mm_choice_name_with(&names, &mma, nm, sizeof nm), "mma:64x32x32_w32x32_s4_b2_k2"));
    CHECK(!strcmp(mm_choice_name_with(&names, &wg, nm, sizeof nm), "wgmma:128x128"));
    CHECK(!strcmp(mm_choice_name_with(&names, &fp, nm, sizeof nm), cfg_list[2]));
    mm_table_key k0 = key(128, 768, 768, 1, 5), k3 = key3(128, 768, 768, 1, 5), w3 = key3(4096, 4096, 4096, 1, 0);
    mm_table_key f3 = key3(128, 3072, 768, 1, 3), s3 = key3(392, 512, 4608, 1, 4);
    mm_table_set(t, H200, &k0, &f, 9.0);
    CHECK_EQ_INT(mm_table_find(t, H200, &k3, &got, NULL), 0); /* an fp32 entry is not a 3xtf32 one */
    mm_table_set(t, H200, &k3, &mma, 15.0);
    mm_table_set(t, H200, &w3, &wg, 1100.0);
    mm_table_set(t, "NVIDIA H200", &f3, &fp, 20.0); /* name-only lines work at 3xtf32 too */
    mm_table_set(t, H200, &s3, &wgs, 30.0);
    CHECK_EQ_INT(mm_table_size(t), 5);
    CHECK_EQ_INT(mm_table_find(t, H200, &k0, &got, NULL), 1);
    CHECK(got.cfg == 1 && got.kernel == MM_KERNEL_FP32 && got.split_k == 4);
    CHECK_EQ_INT(mm_table_find(t, H200, &k3, &got, NULL), 1);
    CHECK(got.cfg == 1 && got.kernel == MM_KERNEL_MMA && got.group_m == 8);
    CHECK_EQ_INT(mm_table_find(t, H200, &f3, &got, NULL), 1);
    CHECK(got.cfg == 2 && got.kernel == MM_KERNEL_FP32);
    CHECK_EQ_INT(mm_table_save(t, p1, err, sizeof err), 0);
    mm_table_free(t);
    char *a = test_read_file(p1);
    CHECK_STR_CONTAINS(a, "NVIDIA H200|cc 9.0|132 SMs|1980 MHz\t128\t768\t768\t1\tbias_gelu\t"
                          "64x64x16_w64x16_t8x4_h2_u16_b3_g\t4\t16\t9.00\n"
                          "NVIDIA H200|cc 9.0|132 SMs|1980 MHz\t128\t768\t768\t1\tbias_gelu@3xtf32\t"
                          "mma:64x32x32_w32x32_s4_b2_k2\t4\t8\t15.00\n"); /* sorted: fp32 before 3xtf32 */
    CHECK_STR_CONTAINS(a, "\t4096\t4096\t4096\t1\tnone@3xtf32\twgmma:128x128\t1\t8\t1100.00\n");
    CHECK_STR_CONTAINS(a, "\t392\t512\t4608\t1\tbias_relu@3xtf32\twgmma:128x64\t8\t8\t30.00\n");
    CHECK_STR_CONTAINS(a, "NVIDIA H200\t128\t3072\t768\t1\tbias@3xtf32\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t6\t1\t");
    t = mm_table_new_names(&names);
    CHECK_EQ_INT(mm_table_load(t, p1, 0, err, sizeof err), 0);
    CHECK_EQ_INT(mm_table_size(t), 5);
    CHECK_EQ_INT(mm_table_find(t, H200, &w3, &got, NULL), 1);
    CHECK(got.cfg == 0 && got.kernel == MM_KERNEL_WGMMA && got.split_k == 1);
    CHECK_EQ_INT(mm_table_find(t, H200, &s3, &got, NULL), 1);
    CHECK(got.cfg == 1 && got.kernel == MM_KERNEL_WGMMA && got.split_k == 8);
    CHECK_EQ_INT(mm_table_save(t, p2, err, sizeof err), 0);
    mm_table_free(t);
    char *b = test_read_file(p2);
    CHECK(a && b && !strcmp(a, b)); /* same entries, same bytes */
    free(a);
    free(b);
    /* "@fp32" is the plain key; written without the suffix */
    test_write_file(p2, "Dev\t1\t2\t3\t1\trelu@fp32\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t1\t8\t1.0\n");
    t = mm_table_new_names(&names);
    CHECK_EQ_INT(mm_table_load(t, p2, 0, err, sizeof err), 0);
    mm_table_key r = key(1, 2, 3, 1, 1);
    CHECK_EQ_INT(mm_table_find(t, "Dev", &r, &got, NULL), 1);
    mm_table_free(t);
}

/* Malformed precision fields and 3xTF32 configs: the file and line, nothing added. */
static void test_precision_errors(void) {
    char err[4300];
    const char *p2 = path_of("prec_bad.txt");
    static const struct {
        const char *text, *want;
        int fp32_names;
    } bad[] = {
        {"Dev\t1\t2\t3\t1\tnone@fp16\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t1\t8\t1.0\n",
         ":1: unknown precision 'fp16' after '@'", 0},
        {"Dev\t1\t2\t3\t1\ttanh@3xtf32\t32x64x32_w16x32_t4x4_h2_u32_b4_c\t1\t8\t1.0\n", ":1: unknown epilogue 'tanh'",
         0},
        {"#\nDev\t1\t2\t3\t1\tnone\tmma:64x32x32_w32x32_s4_b2_k2\t1\t8\t1.0\n",
         ":2: configuration 'mma:64x32x32_w32x32_s4_b2_k2' is a 3xTF32 kernel: only on a 3xtf32 entry", 0},
        {"Dev\t1\t2\t3\t1\tnone\twgmma:128x64\t1\t8\t1.0\n", "is a 3xTF32 kernel: only on a 3xtf32 entry", 0},
        {"Dev\t1\t2\t3\t1\tnone@3xtf32\tmma:nope\t1\t8\t1.0\n", ":1: unknown 3xtf32 configuration 'mma:nope'", 0},
        {"Dev\t1\t2\t3\t1\tnone@3xtf32\twgmma:256x256\t1\t8\t1.0\n", "unknown 3xtf32 configuration 'wgmma:256x256'", 0},
        {"Dev\t1\t2\t3\t1\tnone@3xtf32\twgmma:128x64\t17\t8\t1.0\n",
         ":1: bad split_k '17' for 'wgmma:128x64' (the wgmma kernel splits k into 1 to 16 slices)", 0},
        {"Dev\t1\t2\t3\t1\tnone@3xtf32\tnope\t1\t8\t1.0\n", ":1: unknown tile configuration 'nope'", 0},
        {"Dev\t1\t2\t3\t1\tnone@3xtf32\tmma:64x32x32_w32x32_s4_b2_k2\t1\t8\t1.0\n",
         ":1: unknown 3xtf32 configuration", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_write_file(p2, bad[i].text);
        mm_table *t = mm_table_new_names(bad[i].fp32_names ? &names_fp32 : &names);
        CHECK_EQ_INT(mm_table_load(t, p2, 1, err, sizeof err), -1);
        CHECK_STR_CONTAINS(err, p2);
        CHECK_STR_CONTAINS(err, bad[i].want);
        CHECK_EQ_INT(mm_table_size(t), 0);
        mm_table_free(t);
    }
}

/* A table of one entry (m = i) for the update tests. */
static mm_table *one(int64_t i, const char *dev) {
    mm_table *t = mm_table_new_names(&names);
    mm_choice c = {(int32_t)(i % 3), 1, 8, 0};
    mm_table_key k = key(i, 64, 64, 1, (int32_t)(i % MM_EPI_COUNT));
    mm_table_set(t, dev, &k, &c, (double)i);
    return t;
}

static void test_update(void) {
    char err[4300];
    const char *pa = path_of("cache/a.txt"), *pb = path_of("cache/b.txt");
    for (int order = 0; order < 2; order++) { /* the same updates in either order: the same bytes */
        const char *p = order ? pb : pa;
        mm_table *x = one(1, H200), *y = one(2, "NVIDIA H100 80GB HBM3");
        CHECK_EQ_INT(mm_table_update(p, order ? y : x, err, sizeof err), 0);
        CHECK_EQ_INT(mm_table_update(p, order ? x : y, err, sizeof err), 0);
        mm_table_free(x);
        mm_table_free(y);
    }
    char *a = test_read_file(pa), *b = test_read_file(pb);
    CHECK(a && b && !strcmp(a, b));
    free(a);
    free(b);
    mm_table *t = mm_table_new_names(&names);
    CHECK_EQ_INT(mm_table_load(t, pa, 0, err, sizeof err), 0);
    CHECK_EQ_INT(mm_table_size(t), 2); /* merged, not replaced */
    mm_table_free(t);
    /* a malformed cache is left as it is */
    test_write_file(pb, "garbage\n");
    mm_table *x = one(3, H200);
    CHECK_EQ_INT(mm_table_update(pb, x, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, ":1: expected 10 TAB-separated fields");
    mm_table_free(x);
    char *g = test_read_file(pb);
    CHECK(g && !strcmp(g, "garbage\n"));
    free(g);
}

enum { PROCS = 8, EACH = 6 };

/* Child i of test_concurrent: EACH entries of its own, one update each; 0 if all succeeded. */
static int update_child(int i, void *path) {
    char err[4300];
    int bad = 0;
    for (int j = 0; j < EACH; j++) {
        mm_table *t = one(1 + i * EACH + j, H200);
        bad |= mm_table_update(path, t, err, sizeof err) != 0;
        mm_table_free(t);
    }
    return bad;
}

/* Processes updating one cache at once: every entry arrives, the file stays well-formed. */
static void test_concurrent(void) {
    char err[4300];
    const char *p = path_of("cache/shared.txt");
    CHECK(test_fork_all(PROCS, update_child, (void *)p));
    mm_table *t = mm_table_new_names(&names);
    CHECK_EQ_INT(mm_table_load(t, p, 0, err, sizeof err), 0);
    CHECK_EQ_INT(mm_table_size(t), PROCS * EACH);
    mm_table_free(t);
}

static void test_paths(void) {
    char buf[4096], want[4200];
    setenv("TASC_CACHE_DIR", dir, 1);
    snprintf(want, sizeof want, "%s/matmul-NVIDIA_H200_cc_9.0_132_SMs_1980_MHz.txt", dir);
    CHECK(!strcmp(mm_table_cache_path(H200, buf, sizeof buf), want));
    unsetenv("TASC_CACHE_DIR");
    setenv("HOME", "/home/u", 1);
    CHECK(!strcmp(mm_table_cache_path("X", buf, sizeof buf), "/home/u/.cache/tasc/matmul-X.txt"));
    CHECK(!strcmp(mm_table_user_path(buf, sizeof buf), "/home/u/.cache/tasc/matmul_tune.txt"));
    setenv("TASC_TUNE_TABLE", "/t/x.txt", 1);
    CHECK(!strcmp(mm_table_user_path(buf, sizeof buf), "/t/x.txt"));
    unsetenv("TASC_TUNE_TABLE");
    /* shipped: matmul_tune*.txt of TASC_TUNE_DIR, sorted */
    test_write_file(path_of("matmul_tune_h200.txt"), "");
    test_write_file(path_of("matmul_tune.txt"), "");
    test_write_file(path_of("other.txt"), "");
    setenv("TASC_TUNE_DIR", dir, 1);
    char paths[4][4096];
    CHECK_EQ_INT(mm_table_shipped(paths, 4), 2);
    CHECK(!strcmp(paths[0], path_of("matmul_tune.txt")));
    CHECK(!strcmp(paths[1], path_of("matmul_tune_h200.txt")));
    CHECK_EQ_INT(mm_table_shipped(paths, 1), 1);
    unsetenv("TASC_TUNE_DIR");
    /* the repository's own (this build's source tree): the H100 and H200 tables */
    int n = mm_table_shipped(paths, 4);
    CHECK(n >= 1);
    CHECK(n >= 1 && strstr(paths[0], "bench/runtime/matmul_tune") != NULL);
}

static void test_refusal(void) {
    unsetenv("TASC_NO_AUTOTUNE");
    CHECK_EQ_INT(mm_autotune_refused(), 0);
    setenv("TASC_NO_AUTOTUNE", "1", 1);
    CHECK_EQ_INT(mm_autotune_refused(), 1);
    setenv("TASC_NO_AUTOTUNE", "0", 1);
    CHECK_EQ_INT(mm_autotune_refused(), 0);
    setenv("TASC_NO_AUTOTUNE", "", 1);
    CHECK_EQ_INT(mm_autotune_refused(), 0);
    setenv("TASC_NO_AUTOTUNE", "yes", 1);
    CHECK_EQ_INT(mm_autotune_refused(), 1);
    unsetenv("TASC_NO_AUTOTUNE");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tasc_test_mmtable_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_keys();
    test_lookup();
    test_files();
    test_precision();
    test_precision_errors();
    test_update();
    test_concurrent();
    test_paths();
    test_refusal();
    test_rm_dir(dir);
    return TEST_REPORT();
}
