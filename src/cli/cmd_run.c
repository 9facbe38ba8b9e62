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

typedef struct {
    int64_t seed, threads;
    const char *out_dir;
    cmd_list inputs; /* NAME=FILE.npy */
    cmd_model_opts mo;
} run_args;

static const cmd_opt run_opts[] = {
    CMD_I64("--seed", "S", offsetof(run_args, seed), 0, INT64_MAX,
            "seed of generated inputs (default 0): float inputs are normal(0, 1) from seed S + i for input i; "
            "int64 inputs (ids) are uniform integers in [0, min(100, rows of the gathered table)) from the same seed"),
    CMD_LIST("--input", "NAME=FILE", offsetof(run_args, inputs),
             "take input NAME from a .npy file (<f4, <f8, <i8 or <i4, C order); its shape must equal the model "
             "input's; may be repeated"),
    CMD_NONEMPTY("--out-dir", "DIR", offsetof(run_args, out_dir), "a folder",
                 "write each output to DIR/<output>.npy (float32); characters other than letters, digits, '.', "
                 "'-', '_' in names become '_'. Files are written only if the run succeeds"),
    CMD_I64("--threads", "T", offsetof(run_args, threads), 1, 4096,
            "OpenMP threads for the CPU kernels (default: OpenMP's choice)"),
    CMD_MODEL_OPTS(offsetof(run_args, mo)),
    CMD_OPT_END,
};

static void run_usage(const run_args *defaults) {
    printf("usage: tasc run MODEL [--seed S] [--input NAME=FILE.npy ...] [--out-dir DIR] [--threads T]\n"
           "                     [ONNX options]\n"
           "\n"
           "Run MODEL on the CPU reference executor and print, per output: its shape, mean, std,\n"
           "min, max, checksum (sum of |x|) and the number of NaN and Inf values. Statistics are\n"
           "taken over the finite values. The printed values do not depend on --threads.\n"
           "\n"
           "options:\n");
    cmd_opts_help(run_opts, defaults);
    printf("\n"
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
 * ".npy" appended; a name already taken gets "_<j>" inserted until it is free. Caller frees. */
static char *run_file_name(const char *name, int32_t j, char *const *taken, int32_t n_taken) {
    size_t n = strlen(name);
    char *s = base_xmalloc(n + 16); /* room for "output" and ".npy" */
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
        s = base_xrealloc(s, len + 32);
        snprintf(s + len, 32, "_%d.npy", (int)j);
        k = -1; /* check the new name against all again */
    }
    return s;
}

static char *run_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = base_xmalloc(a + b + 2);
    snprintf(p, a + b + 2, "%s%s%s", dir, (a && dir[a - 1] == '/') ? "" : "/", name);
    return p;
}

/* The folder dir, made (mkdir -p) if missing: 0 (*made says whether it was made), or -1 after
 * the message. */
static int run_make_dir(const char *dir, int *made) {
    struct stat st;
    char err[4200];
    *made = 0;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        cmd_error("run", "%s: not a folder", dir);
        return -1;
    }
    if (base_mkdirs(dir, err, sizeof err) < 0) {
        cmd_error("run", "%s: cannot create folder: %s", dir, err);
        return -1;
    }
    *made = 1;
    return 0;
}

/* The output files of a run: their final names, the hidden temporaries they are written to
 * first, and how far each got (1 written, 2 renamed). */
typedef struct {
    int32_t n;
    char **final, **tmp;
    uint8_t *state;
} run_files;

static void run_files_init(run_files *f, const graph *g, const char *dir) {
    int32_t n = f->n = g->n_outputs;
    char **names = base_xcalloc((size_t)n + 1, sizeof *names);
    f->final = base_xcalloc((size_t)n + 1, sizeof *f->final);
    f->tmp = base_xcalloc((size_t)n + 1, sizeof *f->tmp);
    f->state = base_xcalloc((size_t)n + 1, 1);
    for (int32_t j = 0; j < n; j++) {
        char tname[64];
        names[j] = run_file_name(g->tensors[g->outputs[j]].name, j, names, j);
        snprintf(tname, sizeof tname, ".tasc-run-%ld-%d.npy", (long)getpid(), (int)j);
        f->final[j] = run_join(dir, names[j]);
        f->tmp[j] = run_join(dir, tname);
    }
    for (int32_t j = 0; j < n; j++)
        free(names[j]);
    free(names);
}

/* Removes what a failed write left (when failed) and frees everything but the final names of a
 * success. */
static void run_files_done(run_files *f, int failed) {
    for (int32_t j = 0; j < f->n; j++) {
        if (f->state[j] == 1)
            unlink(f->tmp[j]);
        else if (f->state[j] == 2 && failed)
            unlink(f->final[j]);
        free(f->tmp[j]);
        if (failed)
            free(f->final[j]);
    }
    if (failed)
        free(f->final);
    free(f->tmp);
    free(f->state);
}

/* Write every output into dir; on any failure remove what this call created and return -1
 * (message printed). Files are first written under hidden temporary names, then renamed.
 * On success *paths receives the n_outputs file names (caller frees each and the array). */
static int run_write_outputs(const graph *g, const char *dir, float *const *out, char ***paths) {
    run_files f;
    char err[RUN_ERR_LEN];
    int made_dir, rc = -1;
    run_files_init(&f, g, dir);
    if (run_make_dir(dir, &made_dir) < 0)
        goto done;
    for (int32_t j = 0; j < f.n; j++) {
        if (npy_write(f.tmp[j], &g->tensors[g->outputs[j]].shape, out[j], err, sizeof err) < 0) {
            cmd_error("run", "%s", err);
            goto done;
        }
        f.state[j] = 1;
    }
    for (int32_t j = 0; j < f.n; j++) {
        if (rename(f.tmp[j], f.final[j]) != 0) {
            cmd_error("run", "%s: cannot write: %s", f.final[j], strerror(errno));
            goto done;
        }
        f.state[j] = 2;
    }
    *paths = f.final;
    rc = 0;
done:
    run_files_done(&f, rc < 0);
    if (rc < 0 && made_dir)
        rmdir(dir); /* only succeeds if empty: never removes anything else */
    return rc;
}

/* The --input values: NAME=FILE, each NAME once. 0, or -1 after the message. */
static int run_check_inputs(const cmd_list *l) {
    for (int32_t k = 0; k < l->n; k++) {
        const char *val = l->v[k], *eq = strchr(val, '=');
        if (!eq || eq == val || !eq[1]) {
            cmd_error("run", "bad value for --input: '%s' (NAME=FILE.npy)", val);
            return -1;
        }
        size_t nl = (size_t)(eq - val);
        for (int32_t j = 0; j < k; j++)
            if (!strncmp(l->v[j], val, nl + 1)) {
                cmd_error("run", "input '%.*s' given twice", (int)nl, val);
                return -1;
            }
    }
    return 0;
}

/* One --input NAME=FILE into in[] (the model input's slot). 0, or -1 after the message. */
static int run_read_input(const graph *g, const char *model, const char *arg, float **in) {
    const char *eq = strchr(arg, '='), *file = eq + 1;
    size_t nl = (size_t)(eq - arg);
    int32_t idx = -1;
    char err[RUN_ERR_LEN];
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const char *nm = g->tensors[g->inputs[i]].name;
        if (strlen(nm) == nl && !strncmp(nm, arg, nl))
            idx = i;
    }
    if (idx < 0) {
        cmd_error("run", "%s: the model has no input named '%.*s'", model, (int)nl, arg);
        return -1;
    }
    ops_shape sh;
    if (!(in[idx] = npy_read(file, &sh, err, sizeof err))) {
        cmd_error("run", "%s", err);
        return -1;
    }
    const ops_shape *want = &g->tensors[g->inputs[idx]].shape;
    if (!ops_shape_eq(&sh, want)) {
        char a[128], b[128];
        cmd_error("run", "%s: shape %s does not match input '%s' %s of %s", file, ops_shape_str(&sh, a, sizeof a),
                  g->tensors[g->inputs[idx]].name, ops_shape_str(want, b, sizeof b), model);
        return -1;
    }
    return 0;
}

/* 0 if every output is finite, else -1 after naming the first that is not. */
static int run_check_finite(const graph *g, const char *model, float *const *out) {
    for (int32_t j = 0; j < g->n_outputs; j++) {
        run_summary s;
        run_summarise(out[j], ops_shape_numel(&g->tensors[g->outputs[j]].shape), &s);
        if (s.n_nan || s.n_inf) {
            cmd_error("run", "%s: output '%s' holds %lld NaN and %lld Inf values", model, g->tensors[g->outputs[j]].name,
                      (long long)s.n_nan, (long long)s.n_inf);
            return -1;
        }
    }
    return 0;
}

static void run_report(const graph *g, const char *model, int64_t seed, float *const *out, const exec_stats *st,
                       char *const *paths) {
    printf("model: %s (%s), seed %lld\n", g->name ? g->name : "", model, (long long)seed);
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
           (long long)st->peak_bytes, (double)st->peak_bytes / (1 << 20), (long long)st->total_bytes,
           (int)st->nodes_run);
    for (int32_t j = 0; paths && j < g->n_outputs; j++)
        printf("wrote %s\n", paths[j]);
}

/* Inputs, run, check, files, report: an exit code. in and out have g's input and output counts. */
static int run_model(const graph *g, const char *model, const run_args *a, float **in, float **out) {
    char err[RUN_ERR_LEN];
    char **paths = NULL;
    exec_stats st;
    for (int32_t k = 0; k < a->inputs.n; k++)
        if (run_read_input(g, model, a->inputs.v[k], in) < 0)
            return TASC_EXIT_INPUT;
    if (a->threads > 0)
        omp_set_num_threads((int)a->threads);
    if (exec_cpu_run_ex(g, (const float *const *)in, (uint64_t)a->seed, out, &st, err, sizeof err) < 0) {
        cmd_error("run", "%s: %s", model, err);
        return TASC_EXIT_INPUT;
    }
    /* check before printing anything, so a failed run prints nothing on stdout */
    if (run_check_finite(g, model, out) < 0)
        return TASC_EXIT_INPUT;
    if (a->out_dir && run_write_outputs(g, a->out_dir, out, &paths) < 0)
        return TASC_EXIT_INPUT;
    run_report(g, model, a->seed, out, &st, paths);
    for (int32_t j = 0; paths && j < g->n_outputs; j++)
        free(paths[j]);
    free(paths);
    return TASC_EXIT_OK;
}

int cmd_run(int argc, char **argv) {
    run_args a;
    memset(&a, 0, sizeof a);
    if (cmd_wants_help(argc, argv)) {
        run_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *model = NULL;
    int rc = TASC_EXIT_USAGE;
    if (cmd_opts_parse("run", run_opts, &a, argc, argv, 1, &model, 1) < 0 || run_check_inputs(&a.inputs) < 0)
        goto done;
    if (!model) {
        cmd_error("run", "missing MODEL (tasc run --help)");
        goto done;
    }
    rc = TASC_EXIT_INPUT;
    graph *g = cmd_load_model_opts("run", model, &a.mo);
    if (!g)
        goto done;
    float **in = base_xcalloc((size_t)g->n_inputs + 1, sizeof *in);
    float **out = base_xcalloc((size_t)g->n_outputs + 1, sizeof *out);
    rc = run_model(g, model, &a, in, out);
    for (int32_t i = 0; i < g->n_inputs; i++)
        free(in[i]);
    for (int32_t j = 0; j < g->n_outputs; j++)
        free(out[j]);
    free(in);
    free(out);
    graph_free(g);
done:
    free(a.inputs.v);
    return rc;
}
