/* cmd_run.c: `tasc run MODEL` -- run a model on the CPU reference executor and summarise each
 * output (shape, mean, std, min, max, sum of |x|, NaN and Inf counts); optionally read inputs
 * from .npy files and write the outputs as .npy.
 *
 * Statistics are summed in double, sequentially, in element order, so the printed numbers are
 * identical for any thread count. Output files appear only when the whole run succeeded: each is
 * written to a hidden temporary in DIR and renamed once all are written.
 */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "exec.h"
#include "graph.h"

#define RUN_ERR_LEN 1024

static void run_usage(void) {
    printf("usage: tasc run MODEL [--seed S] [--input NAME=FILE.npy ...] [--out-dir DIR] [--threads T]\n"
           "                     [ONNX options]\n"
           "\n"
           "Run MODEL on the CPU reference executor and print, per output: its shape, mean, std,\n"
           "min, max, checksum (sum of |x|) and the number of NaN and Inf values. Statistics are\n"
           "taken over the finite values. The printed values do not depend on --threads.\n"
           "\n"
           "options:\n"
           "  --seed S              seed of generated inputs (default 0): float inputs are normal(0, 1)\n"
           "                        from seed S + i for input i; int64 inputs (ids) are uniform integers\n"
           "                        in [0, min(100, rows of the gathered table)) from the same seed\n"
           "  --input NAME=FILE     take input NAME from a .npy file (<f4, <f8, <i8 or <i4, C order);\n"
           "                        its shape must equal the model input's; may be repeated\n"
           "  --out-dir DIR         write each output to DIR/<output>.npy (float32); characters other\n"
           "                        than letters, digits, '.', '-', '_' in names become '_'. Files are\n"
           "                        written only if the run succeeds\n"
           "  --threads T           OpenMP threads for the CPU kernels (default: OpenMP's choice)\n"
           CMD_MODEL_OPTS_HELP
           "  -h, --help            this text\n"
           "\n"
           "environment: TASC_MAX_ELEMENTS  per-tensor element limit when loading\n"
           "exit codes: 0 ok, 1 bad model or input file, or an output holds NaN/Inf, 2 bad command line\n");
}

typedef struct {
    double mean, std, min, max, abs_sum;
    int64_t n_nan, n_inf;
} run_summary;

static void run_summarise(const float *x, int64_t n, run_summary *s) {
    memset(s, 0, sizeof *s);
    double sum = 0.0, sq = 0.0;
    int64_t k = 0;
    s->min = INFINITY;
    s->max = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (isnan(v)) {
            s->n_nan++;
            continue;
        }
        if (isinf(v)) {
            s->n_inf++;
            continue;
        }
        sum += v;
        s->abs_sum += fabs(v);
        if (v < s->min)
            s->min = v;
        if (v > s->max)
            s->max = v;
        k++;
    }
    if (k == 0) {
        s->min = s->max = 0.0;
        return;
    }
    s->mean = sum / (double)k;
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (isfinite(v))
            sq += (v - s->mean) * (v - s->mean);
    }
    s->std = sqrt(sq / (double)k);
}

/* Output file names: letters, digits, '.', '-', '_' kept, the rest '_'; no leading '.';
 * ".npy" appended; a name already taken gets "_<j>" inserted until it is free. */
static char *run_file_name(const char *name, int32_t j, char *const *taken, int32_t n_taken) {
    size_t n = strlen(name);
    char *s = malloc(n + 16); /* room for "output" and ".npy" */
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '-' || c == '_';
        s[i] = ok ? c : '_';
    }
    s[n] = '\0';
    if (n == 0)
        strcpy(s, "output");
    if (s[0] == '.')
        s[0] = '_';
    strcat(s, ".npy");
    for (int32_t k = 0; k < n_taken; k++) {
        if (!taken[k] || strcmp(taken[k], s) != 0)
            continue;
        size_t len = strlen(s) - 4; /* without ".npy" */
        char *t = realloc(s, len + 32);
        if (!t) {
            free(s);
            return NULL;
        }
        s = t;
        snprintf(s + len, 32, "_%d.npy", (int)j);
        k = -1; /* check the new name against all again */
    }
    return s;
}

static char *run_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p)
        snprintf(p, a + b + 2, "%s%s%s", dir, (a && dir[a - 1] == '/') ? "" : "/", name);
    return p;
}

/* mkdir -p */
static int run_mkdirs(const char *dir) {
    char *p = strdup(dir);
    if (!p)
        return -1;
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *c = '/';
    }
    int rc = (mkdir(p, 0755) != 0 && errno != EEXIST) ? -1 : 0;
    free(p);
    struct stat st;
    if (rc == 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        errno = ENOTDIR;
        rc = -1;
    }
    return rc;
}

/* Write every output into dir; on any failure remove what this call created and return -1
 * (message printed). Files are first written under hidden temporary names, then renamed.
 * On success *paths receives the n_outputs file names (caller frees each and the array). */
static int run_write_outputs(const graph *g, const char *dir, float *const *out, char ***paths) {
    int32_t n = g->n_outputs;
    char **names = calloc((size_t)n + 1, sizeof *names);
    char **final = calloc((size_t)n + 1, sizeof *final);
    char **tmp = calloc((size_t)n + 1, sizeof *tmp);
    uint8_t *written = calloc((size_t)n + 1, 1);
    int rc = -1, made_dir = 0;
    char err[RUN_ERR_LEN];
    struct stat st;
    if (!names || !final || !tmp || !written) {
        cmd_error("run", "%s: out of memory", dir);
        goto done;
    }
    for (int32_t j = 0; j < n; j++) {
        names[j] = run_file_name(g->tensors[g->outputs[j]].name, j, names, j);
        char tname[64];
        snprintf(tname, sizeof tname, ".tasc-run-%ld-%d.npy", (long)getpid(), (int)j);
        if (!names[j] || !(final[j] = run_join(dir, names[j])) || !(tmp[j] = run_join(dir, tname))) {
            cmd_error("run", "%s: out of memory", dir);
            goto done;
        }
    }
    if (stat(dir, &st) != 0) {
        if (run_mkdirs(dir) != 0) {
            cmd_error("run", "%s: cannot create folder: %s", dir, strerror(errno));
            goto done;
        }
        made_dir = 1;
    } else if (!S_ISDIR(st.st_mode)) {
        cmd_error("run", "%s: not a folder", dir);
        goto done;
    }
    for (int32_t j = 0; j < n; j++) {
        if (npy_write(tmp[j], &g->tensors[g->outputs[j]].shape, out[j], err, sizeof err) < 0) {
            cmd_error("run", "%s", err);
            goto done;
        }
        written[j] = 1;
    }
    for (int32_t j = 0; j < n; j++) {
        if (rename(tmp[j], final[j]) != 0) {
            cmd_error("run", "%s: cannot write: %s", final[j], strerror(errno));
            goto done;
        }
        written[j] = 2;
    }
    *paths = final;
    final = NULL;
    rc = 0;
done:
    for (int32_t j = 0; written && j < n; j++) {
        if (written[j] == 1)
            unlink(tmp[j]);
        else if (written[j] == 2 && rc < 0)
            unlink(final[j]);
    }
    if (rc < 0 && made_dir)
        rmdir(dir); /* only succeeds if empty: never removes anything else */
    for (int32_t j = 0; j < n; j++) {
        if (names)
            free(names[j]);
        if (final)
            free(final[j]);
        if (tmp)
            free(tmp[j]);
    }
    free(names);
    free(final);
    free(tmp);
    free(written);
    return rc;
}

typedef struct {
    const char *name;   /* input name, points into argv */
    size_t name_len;
    const char *file;
} run_input_arg;

int cmd_run(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        run_usage();
        return TASC_EXIT_OK;
    }
    const char *model = NULL, *out_dir = NULL, *val = NULL;
    long long seed = 0, threads = 0;
    run_input_arg *inputs = calloc((size_t)argc + 1, sizeof *inputs);
    int n_inputs = 0, r;
    if (!inputs) {
        cmd_error("run", "out of memory");
        return TASC_EXIT_INTERNAL;
    }
    cmd_model_opts mo;
    memset(&mo, 0, sizeof mo);
    for (int i = 1; i < argc; i++) {
        if ((r = cmd_model_opt("run", argc, argv, &i, &mo)) != 0) {
            if (r < 0)
                goto usage;
        } else if ((r = cmd_opt_value("run", argc, argv, &i, "--seed", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("run", "--seed", val, 0, INT64_MAX, &seed) < 0)
                goto usage;
        } else if ((r = cmd_opt_value("run", argc, argv, &i, "--threads", &val)) != 0) {
            if (r < 0 || cmd_parse_i64("run", "--threads", val, 1, 4096, &threads) < 0)
                goto usage;
        } else if ((r = cmd_opt_value("run", argc, argv, &i, "--out-dir", &val)) != 0) {
            if (r < 0)
                goto usage;
            if (!*val) {
                cmd_error("run", "bad value for --out-dir: '' (a folder)");
                goto usage;
            }
            out_dir = val;
        } else if ((r = cmd_opt_value("run", argc, argv, &i, "--input", &val)) != 0) {
            if (r < 0)
                goto usage;
            const char *eq = strchr(val, '=');
            if (!eq || eq == val || !eq[1]) {
                cmd_error("run", "bad value for --input: '%s' (NAME=FILE.npy)", val);
                goto usage;
            }
            size_t nl = (size_t)(eq - val);
            for (int k = 0; k < n_inputs; k++)
                if (inputs[k].name_len == nl && !strncmp(inputs[k].name, val, nl)) {
                    cmd_error("run", "input '%.*s' given twice", (int)nl, val);
                    goto usage;
                }
            inputs[n_inputs++] = (run_input_arg){val, nl, eq + 1};
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            cmd_bad_option("run", argv[i]);
            goto usage;
        } else if (!model) {
            model = argv[i];
        } else {
            cmd_error("run", "unexpected argument '%s' (tasc run --help)", argv[i]);
            goto usage;
        }
    }
    if (!model) {
        cmd_error("run", "missing MODEL (tasc run --help)");
        goto usage;
    }

    int rc = TASC_EXIT_INPUT;
    char err[RUN_ERR_LEN];
    graph *g = cmd_load_model_opts("run", model, &mo);
    float **in = NULL, **out = NULL;
    char **paths = NULL;
    if (!g)
        goto done;
    in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    out = calloc((size_t)g->n_outputs + 1, sizeof *out);
    if (!in || !out) {
        cmd_error("run", "out of memory");
        rc = TASC_EXIT_INTERNAL;
        goto done;
    }
    for (int k = 0; k < n_inputs; k++) {
        int32_t idx = -1;
        for (int32_t i = 0; i < g->n_inputs; i++) {
            const char *nm = g->tensors[g->inputs[i]].name;
            if (strlen(nm) == inputs[k].name_len && !strncmp(nm, inputs[k].name, inputs[k].name_len))
                idx = i;
        }
        if (idx < 0) {
            cmd_error("run", "%s: the model has no input named '%.*s'", model, (int)inputs[k].name_len,
                      inputs[k].name);
            goto done;
        }
        ops_shape sh;
        in[idx] = npy_read(inputs[k].file, &sh, err, sizeof err);
        if (!in[idx]) {
            cmd_error("run", "%s", err);
            goto done;
        }
        const ops_shape *want = &g->tensors[g->inputs[idx]].shape;
        if (!ops_shape_eq(&sh, want)) {
            char a[128], b[128];
            cmd_error("run", "%s: shape %s does not match input '%s' %s of %s", inputs[k].file,
                      ops_shape_str(&sh, a, sizeof a), g->tensors[g->inputs[idx]].name,
                      ops_shape_str(want, b, sizeof b), model);
            goto done;
        }
    }
    if (threads > 0)
        omp_set_num_threads((int)threads);

    exec_stats st;
    if (exec_cpu_run_ex(g, (const float *const *)in, (uint64_t)seed, out, &st, err, sizeof err) < 0) {
        cmd_error("run", "%s: %s", model, err);
        goto done;
    }
    /* check before printing anything, so a failed run prints nothing on stdout */
    for (int32_t j = 0; j < g->n_outputs; j++) {
        run_summary s;
        run_summarise(out[j], ops_shape_numel(&g->tensors[g->outputs[j]].shape), &s);
        if (s.n_nan || s.n_inf) {
            cmd_error("run", "%s: output '%s' holds %lld NaN and %lld Inf values", model,
                      g->tensors[g->outputs[j]].name, (long long)s.n_nan, (long long)s.n_inf);
            goto done;
        }
    }
    if (out_dir && run_write_outputs(g, out_dir, out, &paths) < 0)
        goto done;
    printf("model: %s (%s), seed %lld\n", g->name ? g->name : "", model, seed);
    for (int32_t j = 0; j < g->n_outputs; j++) {
        const graph_tensor *ts = &g->tensors[g->outputs[j]];
        run_summary s;
        char sh[128];
        run_summarise(out[j], ops_shape_numel(&ts->shape), &s);
        printf("output %s: shape %s mean %.9g std %.9g min %.9g max %.9g checksum %.17g nan %lld inf %lld\n",
               ts->name, ops_shape_str(&ts->shape, sh, sizeof sh), s.mean, s.std, s.min, s.max, s.abs_sum,
               (long long)s.n_nan, (long long)s.n_inf);
    }
    printf("memory: peak %lld bytes (%.2f MiB), %lld bytes allocated in all, %d nodes run\n",
           (long long)st.peak_bytes, (double)st.peak_bytes / (1 << 20), (long long)st.total_bytes,
           (int)st.nodes_run);
    for (int32_t j = 0; paths && j < g->n_outputs; j++)
        printf("wrote %s\n", paths[j]);
    rc = TASC_EXIT_OK;
done:
    if (g) {
        for (int32_t i = 0; in && i < g->n_inputs; i++)
            free(in[i]);
        for (int32_t j = 0; out && j < g->n_outputs; j++)
            free(out[j]);
        for (int32_t j = 0; paths && j < g->n_outputs; j++)
            free(paths[j]);
        graph_free(g);
    }
    free(in);
    free(out);
    free(paths);
    free(inputs);
    return rc;
usage:
    free(inputs);
    return TASC_EXIT_USAGE;
}
