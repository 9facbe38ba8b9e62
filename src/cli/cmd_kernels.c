/* cmd_kernels.c: `tasc kernels list|bench|tune` -- the hand-written GPU matmul kernels
 * (ops/cuda/matmul.h): list the ladder and the tuned kernel's configurations, benchmark every
 * version against cuBLAS, or autotune shapes into the tuning table.
 * Without CUDA compiled in, every subcommand says so and exits with TASC_EXIT_RESOURCE; the
 * same when the build has CUDA but the machine has no GPU (list still works).
 * Command-line errors are checked before any GPU work starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

typedef struct {
    const char *sizes, *versions, *out, *table, *fused, *epis, *precision;
    int64_t reps, warmup;
    double max_cell_s;
} kernels_args;

#define KA(f) offsetof(kernels_args, f)
#define KERNELS_SIZES_HELP \
    "comma-separated MxNxK or MxNxKxB (B: batch) or N (NxNxN); default: the issue's set " \
    "256,512,1024,2048,4096,8192,1000,4097,128x768x768,128x3072x768,128x768x3072,128x128x64x12,128x64x128x12 " \
    "(probe: 1024,128x768x768,128x128x64x12)"
#define KERNELS_REPS_HELP "timed runs per cell, median reported (default 30; tune 15)"
#define KERNELS_TABLE_HELP \
    "tuning table (bench, probe: exactly this one instead of the runtime's: the shipped tables, " \
    "$TASC_TUNE_TABLE or ~/.cache/tasc/matmul_tune.txt, and the per-device cache; tune: where to record, default " \
    "$TASC_TUNE_TABLE, else the per-device cache $TASC_CACHE_DIR or ~/.cache/tasc/matmul-DEVICE.txt)"

static const cmd_opt kernels_bench_opts[] = {
    CMD_STR("--sizes", "LIST", KA(sizes), KERNELS_SIZES_HELP),
    CMD_STR("--versions", "LIST", KA(versions),
            "comma-separated names (v1,v1.5,v2,...,v8,tuned,3xtf32) or 'all' (default: every version of "
            "--precision)"),
    CMD_STR("--precision", "P", KA(precision),
            "fp32 (default: the FP32 ladder v1 .. tuned), 3xtf32 (the FP32-accurate tensor-core mode: 'all' is "
            "3xtf32, each size runs the kernel the mode chooses, named in the notes, and the fused table runs it) "
            "or both (every version; fused at fp32); tune: fp32 or 3xtf32, the keys recorded"),
    CMD_I64("--reps", "N", KA(reps), 1, 100000, KERNELS_REPS_HELP),
    CMD_I64("--warmup", "N", KA(warmup), 0, 100000, "untimed runs before timing (default %D)"),
    CMD_STR("--out", "FILE", KA(out), "results file (markdown); JSON goes beside it"),
    CMD_STR("--table", "FILE", KA(table), KERNELS_TABLE_HELP),
    CMD_SECONDS("--max-cell-s", "S", KA(max_cell_s), HUGE_VAL,
                "skip a rung whose timed runs would take longer than S seconds (default %D)"),
    CMD_STR("--fused", "LIST", KA(fused),
            "sizes for the fused bias+relu comparison, or 'none' (default "
            "128x768x768,128x3072x768,128x768x3072,4096x3072x768)"),
    CMD_OPT_END,
};

static const cmd_opt kernels_tune_opts[] = {
    CMD_STR("--sizes", "LIST", KA(sizes), KERNELS_SIZES_HELP),
    CMD_STR("--epilogue", "LIST", KA(epis),
            "epilogues to tune (`tasc kernels list` names them) or 'all' (default: all)"),
    CMD_STR("--precision", "P", KA(precision),
            "fp32 (default: the FP32 kernel's configurations) or 3xtf32 (the keys of --precision 3xtf32, "
            "entries EPILOGUE@3xtf32: the fastest of the 3xTF32 kernels, wgmma and mma.sync, and the FP32 kernel)"),
    CMD_I64("--reps", "N", KA(reps), 1, 100000, KERNELS_REPS_HELP),
    CMD_STR("--table", "FILE", KA(table), KERNELS_TABLE_HELP),
    CMD_OPT_END,
};

static const cmd_opt kernels_probe_opts[] = {
    CMD_STR("--sizes", "LIST", KA(sizes), KERNELS_SIZES_HELP),
    CMD_I64("--reps", "N", KA(reps), 1, 100000, KERNELS_REPS_HELP),
    CMD_STR("--table", "FILE", KA(table), KERNELS_TABLE_HELP),
    CMD_OPT_END,
};

static const char *const kernels_default_sizes =
    "256,512,1024,2048,4096,8192,1000,4097,128x768x768,128x3072x768,128x768x3072,128x128x64x12,128x64x128x12";
static const char *const kernels_default_fused = "128x768x768,128x3072x768,128x768x3072,4096x3072x768";

/* The defaults of subcommand sub ("bench", "tune" or "probe"). */
static void kernels_defaults(kernels_args *a, const char *sub) {
    memset(a, 0, sizeof *a);
    a->sizes = kernels_default_sizes;
    a->versions = "all";
    a->precision = "fp32";
    a->fused = kernels_default_fused;
    a->epis = "all";
    a->reps = 30;
    a->warmup = 5;
    a->max_cell_s = 5.0;
    if (!strcmp(sub, "tune"))
        a->reps = 15;
    if (!strcmp(sub, "probe"))
        a->sizes = "1024,128x768x768,128x128x64x12";
}

static void kernels_usage(void) {
    printf("usage: tasc kernels list\n"
           "       tasc kernels bench [--sizes LIST] [--versions LIST] [--reps N] [--warmup N]\n"
           "                          [--out FILE] [--table FILE] [--max-cell-s S] [--fused LIST|none]\n"
           "                          [--precision fp32|3xtf32|both]\n"
           "       tasc kernels tune  [--sizes LIST] [--epilogue LIST] [--reps N] [--table FILE]\n"
           "                          [--precision fp32|3xtf32]\n"
           "       tasc kernels probe [--sizes LIST] [--reps N] [--table FILE]\n"
           "\n"
           "The hand-written FP32 CUDA matmul: a ladder of kernel versions (v1 .. v8) and a tuned\n"
           "kernel whose tile configuration and split-K come from a tuning table per shape; and a\n"
           "tensor-core kernel at FP32 accuracy (3xtf32: TF32 products of split operands).\n"
           "\n"
           "  list       the versions, and the tuned kernel's tile configurations\n"
           "  bench      validate every version against an fp64 reference, then time it against\n"
           "             cuBLAS (strict FP32); prints the tables and writes FILE (markdown) and the\n"
           "             same numbers as JSON beside it (FILE without .md, plus .json)\n"
           "  tune       time every legal configuration for each size and epilogue and record the\n"
           "             fastest in the tuning table under this GPU's key (name, compute capability,\n"
           "             SMs, clock); entries of other shapes and devices are kept, and a process\n"
           "             writing the same table at once is waited for (the file is locked); with\n"
           "             --precision 3xtf32, the fastest FP32-accurate kernel (3xTF32 or FP32)\n"
           "  probe      time the tuned kernel and cuBLAS after different predecessor kernels and\n"
           "             L2 flushes (what a timed kernel pays for what ran before it)\n"
           "\n"
           "options:\n");
    kernels_args d[3];
    kernels_defaults(&d[0], "bench");
    kernels_defaults(&d[1], "tune");
    kernels_defaults(&d[2], "probe");
    const cmd_opt *const tables[] = {kernels_bench_opts, kernels_tune_opts, kernels_probe_opts, NULL};
    const void *const defs[] = {&d[0], &d[1], &d[2]};
    cmd_opts_help_n(tables, defs);
    printf("\n"
           "exit codes: 0 ok, 1 a version failed validation or a bad table file, 2 bad command line,\n"
           "            3 no CUDA (build or device)\n");
}

#ifndef TASC_HAVE_CUDA

int cmd_kernels(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        kernels_usage();
        return TASC_EXIT_OK;
    }
    cmd_error("kernels", "this tasc was built without CUDA");
    return TASC_EXIT_RESOURCE;
}

#else

#include <math.h>

#include "matmul.h"

#define KERNELS_MAX_SIZES 256

/* Parses "MxNxK[xB]" or "N"; 0, or -1 with the message printed. */
static int kernels_parse_size(const char *cmd, const char *s, size_t len, mm_problem *p) {
    long long v[4] = {0, 0, 0, 1};
    int n = 0;
    size_t i = 0;
    while (i < len) {
        if (n == 4)
            goto bad;
        long long x = 0;
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (x > (MM_MAX_DIM > INT32_MAX ? MM_MAX_DIM : INT32_MAX))
                goto bad;
            x = x * 10 + (s[i] - '0');
            i++;
        }
        if (i == start || x < 1)
            goto bad;
        v[n++] = x;
        if (i < len) {
            if (s[i] != 'x' || i + 1 == len)
                goto bad;
            i++;
        }
    }
    if (n == 1)
        v[1] = v[2] = v[0];
    else if (n != 3 && n != 4)
        goto bad;
    mm_problem_init(p, v[0], v[1], v[2], v[3]);
    char why[256];
    if (mm_problem_check(p, why, sizeof why)) {
        cmd_error(cmd, "bad size '%.*s': %s", (int)len, s, why);
        return -1;
    }
    return 0;
bad:
    cmd_error(cmd, "bad size '%.*s' (MxNxK, MxNxKxB or N, positive integers)", (int)len, s);
    return -1;
}

static int kernels_parse_sizes(const char *cmd, const char *list, mm_problem *out, int *n) {
    *n = 0;
    const char *s = list;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (*n == KERNELS_MAX_SIZES) {
            cmd_error(cmd, "too many sizes (at most %d)", KERNELS_MAX_SIZES);
            return -1;
        }
        if (kernels_parse_size(cmd, s, len, &out[*n]))
            return -1;
        (*n)++;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

/* --versions LIST; 'all' is every version of the precision prec: fp32 v1 .. tuned, 3xtf32 the
 * tensor-core rung, -1 (both) every version. */
static int kernels_parse_versions(const char *cmd, const char *list, int prec, mm_version *out, int *n) {
    *n = 0;
    if (!strcmp(list, "all")) {
        for (int v = 0; v < MM_VERSION_COUNT; v++)
            if (prec < 0 || (prec == MM_PREC_3XTF32) == (v == MM_3XTF32))
                out[(*n)++] = (mm_version)v;
        return 0;
    }
    const char *s = list;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char name[32];
        int v = -1;
        if (len < sizeof name) {
            memcpy(name, s, len);
            name[len] = '\0';
            v = mm_version_find(name);
        }
        if (v < 0) {
            cmd_error(cmd, "unknown version '%.*s' (tasc kernels list shows them)", (int)len, s);
            return -1;
        }
        if (*n == MM_VERSION_COUNT) {
            cmd_error(cmd, "too many versions (at most %d)", MM_VERSION_COUNT);
            return -1;
        }
        out[(*n)++] = (mm_version)v;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

static int kernels_list(void) {
    printf("versions (the ladder; each adds one idea to the one before):\n");
    for (int v = 0; v < MM_VERSION_COUNT; v++)
        printf("  %-6s %s\n", mm_version_name((mm_version)v), mm_version_doc((mm_version)v));
    printf("\ntile configurations of the tuned kernel: block tile MxNxK, warp tile, thread tile,\n"
           "pipeline and stages (s: cp.async; r: register-staged double buffer; d: r with double-\n"
           "buffered fragments; h: d with B by cp.async; x: h with a cp.async ring for A and B), k unroll,\n"
           "blocks per SM, split-K kind (no suffix: the last block reduces; _c: a cluster reduces through\n"
           "distributed shared memory; _g: a cooperative grid's blocks reduce through L2); threads; shared memory\n");
    for (int32_t i = 0; i < mm_config_count(); i++) {
        const mm_tile_config *c = mm_config_get(i);
        char name[96];
        printf("  %2d %-34s %3d threads %6d bytes\n", i, mm_config_name(i, name, sizeof name), c->threads,
               c->smem_bytes);
    }
    printf("\n3xtf32 kernels (--precision 3xtf32 runs the fastest of these and the configurations above; a\n"
           "table entry EPILOGUE@3xtf32 names one as mma:NAME, wgmma:NAME or a configuration above):\n");
    for (int32_t i = 0; i < mm_3xtf32_config_count(); i++)
        printf("  mma:%s\n", mm_3xtf32_config_name(i));
    for (int32_t i = 0; i < MM_WGMMA_CONFIGS; i++)
        printf("  wgmma:%s (Hopper, compute capability 9.0)\n", mm_3xtf32_wgmma_config_name(i));
    printf("\nepilogues:");
    for (int32_t i = 0; i < MM_EPI_COUNT; i++)
        printf("%s %s", i ? "," : "", mm_epi_name(i));
    printf("\n");
    return TASC_EXIT_OK;
}

static int kernels_need_device(const char *cmd) {
    char why[256];
    if (!mm_device_available(why, sizeof why)) {
        cmd_error(cmd, "%s", why);
        return TASC_EXIT_RESOURCE;
    }
    return 0;
}

/* Loads the table at path (missing is fine) into t; -1 with the message printed. */
static int kernels_load_table(const char *cmd, mm_table *t, const char *path) {
    char why[4200];
    if (mm_table_load(t, path, 1, why, sizeof why)) {
        cmd_error(cmd, "%s", why);
        return -1;
    }
    return 0;
}

static const cmd_opt kernels_list_opts[] = {CMD_OPT_END};

/* The tuning table's path (--table, else the default) into path. */
static void kernels_table_path(const kernels_args *a, char *path, size_t len) {
    if (a->table)
        snprintf(path, len, "%s", a->table);
    else
        mm_table_default_path(path, len);
}

/* Checks that the table at path loads (missing is fine), then makes it the one the tuned kernel
 * uses; says so when verbose. Without path, the tuned kernel reads the runtime's tables (matmul.h,
 * mm_choose). 0, or -1 after the message. */
static int kernels_use_table(const char *cmd, const char *path, int verbose) {
    if (!path) {
        char cache[4096];
        if (verbose)
            printf("tuning tables: the runtime's (shipped tables, user table, cache %s); device key %s\n",
                   mm_table_cache_path(mm_device_key(), cache, sizeof cache), mm_device_key());
        mm_table_use(NULL);
        return 0;
    }
    mm_table *t = mm_table_new();
    int bad = kernels_load_table(cmd, t, path);
    if (!bad && verbose)
        printf("tuning table: %s (%d entries)\n", path, mm_table_size(t));
    mm_table_free(t);
    if (bad)
        return -1;
    mm_table_use(path);
    return 0;
}

/* The subcommand's options parsed against opts into a; an exit code. */
static int kernels_parse(const char *cmd, const cmd_opt *opts, kernels_args *a, int argc, char **argv) {
    kernels_defaults(a, argv[1]);
    return cmd_opts_parse(cmd, opts, a, argc, argv, 2, NULL, CMD_POS_NONE) < 0 ? TASC_EXIT_USAGE : TASC_EXIT_OK;
}

static int kernels_bench(int argc, char **argv) {
    const char *cmd = "kernels bench";
    kernels_args a;
    int rc = kernels_parse(cmd, kernels_bench_opts, &a, argc, argv);
    if (rc)
        return rc;
    static mm_problem sz[KERNELS_MAX_SIZES], fz[KERNELS_MAX_SIZES];
    mm_version vs[MM_VERSION_COUNT];
    int nsz = 0, nfz = 0, nvs = 0;
    mm_precision prec = MM_PREC_FP32;
    const int both = !strcmp(a.precision, "both");
    if (!both && mm_precision_parse(a.precision, &prec)) {
        cmd_error(cmd, "bad precision '%s' (fp32, 3xtf32 or both)", a.precision);
        return TASC_EXIT_USAGE;
    }
    if (kernels_parse_sizes(cmd, a.sizes, sz, &nsz) ||
        kernels_parse_versions(cmd, a.versions, both ? -1 : (int)prec, vs, &nvs))
        return TASC_EXIT_USAGE;
    if (strcmp(a.fused, "none") && kernels_parse_sizes(cmd, a.fused, fz, &nfz))
        return TASC_EXIT_USAGE;
    if ((rc = kernels_need_device(cmd)) != 0)
        return rc;
    if (kernels_use_table(cmd, a.table, 1) < 0)
        return TASC_EXIT_INPUT;
    char cmdline[2048] = "tasc kernels";
    for (int i = 1; i < argc; i++) {
        size_t used = strlen(cmdline);
        snprintf(cmdline + used, sizeof cmdline - used, " %s", argv[i]);
    }
    mm_bench_opts o = {sz, nsz, vs, nvs, (int32_t)a.reps, (int32_t)a.warmup, a.max_cell_s, fz, nfz, a.out, cmdline,
                       prec};
    char why[4200];
    why[0] = '\0';
    rc = mm_bench(&o, why, sizeof why);
    if (rc < 0) {
        cmd_error(cmd, "%s", why);
        return TASC_EXIT_INPUT;
    }
    if (rc > 0) {
        cmd_error(cmd, "a version failed validation (relative error above 1e-5; see the tables)");
        return TASC_EXIT_INPUT;
    }
    return TASC_EXIT_OK;
}

/* --epilogue LIST into bias[] and act[]; the count, or -1 after the message. */
static int kernels_parse_epilogues(const char *cmd, const char *list, int32_t *bias, mm_act *act) {
    int n = 0;
    if (!strcmp(list, "all")) {
        for (; n < MM_EPI_COUNT; n++)
            mm_epilogue_parse(mm_epi_name(n), &bias[n], &act[n]);
        return n;
    }
    for (const char *s = list;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char name[32] = "";
        if (len < sizeof name) {
            memcpy(name, s, len);
            name[len] = '\0';
        }
        if (n == MM_EPI_COUNT || mm_epilogue_parse(name, &bias[n], &act[n])) {
            cmd_error(cmd, "bad epilogue '%.*s' (each of `tasc kernels list`'s epilogues once, or all)", (int)len, s);
            return -1;
        }
        n++;
        if (!comma)
            return n;
        s = comma + 1;
    }
}

/* Tunes one problem and records it in the table at path at once (locked read-merge-write, so a
 * run cut short keeps what it tuned); 0, TASC_EXIT_INPUT when no candidate ran, -2 when the table
 * cannot be written, after the message. */
static int kernels_tune_one(const char *cmd, const char *path, const char *dev, mm_precision prec, const mm_problem *p,
                            int32_t reps) {
    printf("%lldx%lldx%lld batch %lld, epilogue %s%s:\n", (long long)p->m, (long long)p->n, (long long)p->k,
           (long long)p->batch, mm_epilogue_name(p->has_bias, p->act),
           prec == MM_PREC_3XTF32 ? ", precision 3xtf32" : "");
    fflush(stdout);
    mm_choice best;
    double us = 0;
    char why[4200], name[128];
    if (mm_tune_problem_precision(prec, p, reps, 0.0, &best, &us, stdout, why, sizeof why)) {
        cmd_error(cmd, "%s", why);
        return TASC_EXIT_INPUT;
    }
    printf("  best: %s split %d group %d: %.2f us, %.2f TFLOP/s\n", mm_choice_name(&best, name, sizeof name),
           best.split_k, best.group_m, us, mm_problem_flops(p) / (us * 1e-6) / 1e12);
    fflush(stdout);
    mm_table *t = mm_table_new();
    mm_table_put_at(t, dev, prec, p, &best, us);
    int rc = mm_table_update(path, t, why, sizeof why);
    mm_table_free(t);
    if (rc) {
        cmd_error(cmd, "%s", why);
        return -2;
    }
    return 0;
}

static int kernels_tune(int argc, char **argv) {
    const char *cmd = "kernels tune";
    kernels_args a;
    int rc = kernels_parse(cmd, kernels_tune_opts, &a, argc, argv);
    if (rc)
        return rc;
    static mm_problem sz[KERNELS_MAX_SIZES];
    int32_t bias[MM_EPI_COUNT];
    mm_act act[MM_EPI_COUNT];
    int nsz = 0, nepi;
    mm_precision prec = MM_PREC_FP32;
    if (mm_precision_parse(a.precision, &prec)) {
        cmd_error(cmd, "bad precision '%s' (fp32 or 3xtf32)", a.precision);
        return TASC_EXIT_USAGE;
    }
    if (kernels_parse_sizes(cmd, a.sizes, sz, &nsz) || (nepi = kernels_parse_epilogues(cmd, a.epis, bias, act)) < 0)
        return TASC_EXIT_USAGE;
    if ((rc = kernels_need_device(cmd)) != 0)
        return rc;
    char path[4096];
    kernels_table_path(&a, path, sizeof path);
    mm_table *t = mm_table_new(); /* a bad table is refused before any tuning */
    rc = kernels_load_table(cmd, t, path);
    mm_table_free(t);
    if (rc)
        return TASC_EXIT_INPUT;
    const char *dev = mm_device_key();
    printf("tuning on %s; table %s\n", dev, path);
    int failed = 0;
    for (int e = 0; e < nepi; e++)
        for (int i = 0; i < nsz; i++) {
            mm_problem p = sz[i];
            p.has_bias = bias[e];
            p.act = act[e];
            if ((rc = kernels_tune_one(cmd, path, dev, prec, &p, (int32_t)a.reps)) == TASC_EXIT_INPUT)
                failed = 1;
            if (rc == -2) /* the table cannot be written: stop */
                return TASC_EXIT_INPUT;
        }
    printf("wrote %s\n", path);
    return failed ? TASC_EXIT_INPUT : TASC_EXIT_OK;
}

static int kernels_probe(int argc, char **argv) {
    const char *cmd = "kernels probe";
    kernels_args a;
    int rc = kernels_parse(cmd, kernels_probe_opts, &a, argc, argv);
    if (rc)
        return rc;
    static mm_problem sz[KERNELS_MAX_SIZES];
    int nsz = 0;
    if (kernels_parse_sizes(cmd, a.sizes, sz, &nsz))
        return TASC_EXIT_USAGE;
    if ((rc = kernels_need_device(cmd)) != 0)
        return rc;
    char why[512];
    if (kernels_use_table(cmd, a.table, 0) < 0)
        return TASC_EXIT_INPUT;
    if (mm_bench_probe(sz, nsz, (int32_t)a.reps, why, sizeof why)) {
        cmd_error(cmd, "%s", why);
        return TASC_EXIT_INPUT;
    }
    return TASC_EXIT_OK;
}

int cmd_kernels(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        kernels_usage();
        return TASC_EXIT_OK;
    }
    if (argc < 2) {
        cmd_error("kernels", "missing subcommand: list, bench, tune or probe (tasc kernels --help)");
        return TASC_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "list")) {
        kernels_args a;
        if (kernels_parse("kernels list", kernels_list_opts, &a, argc, argv))
            return TASC_EXIT_USAGE;
        return kernels_list();
    }
    if (!strcmp(argv[1], "bench"))
        return kernels_bench(argc, argv);
    if (!strcmp(argv[1], "tune"))
        return kernels_tune(argc, argv);
    if (!strcmp(argv[1], "probe"))
        return kernels_probe(argc, argv);
    cmd_error("kernels", "unknown subcommand '%s' (list, bench, tune, probe)", argv[1]);
    return TASC_EXIT_USAGE;
}

#endif
