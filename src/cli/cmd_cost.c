/* cmd_cost.c: `tasc cost compare|fit CACHE`: the analytic cost model (src/cost.h) against node
 * times measured on a GPU, as the measured model's cache file holds them (ops/cuda/rt_cost.h:
 * DEVICE<TAB>KEY<TAB>MICROSECONDS lines; `tasc bench --optimize --cost measured` or `tasc
 * optimize --cost measured` fill it). No GPU is needed here.
 *
 * compare: per op, how many configurations, their measured and predicted sums, and the spread of
 * predicted/measured; overall, the typical factor between the two (exp of the mean |log ratio|).
 * fit: the calibration constants that minimise the mean squared log ratio (cost_analytic_fit:
 * Nelder-Mead from the given constants): deterministic, the same file gives the same answer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cost.h"

typedef struct {
    cost_sample *e;
    int32_t n, cap;
    int32_t skipped_const; /* entries without inputs: cost 0 on both sides */
    int32_t skipped_big;   /* entries with more than COST_SAMPLE_MAX_IN inputs (wide concats) */
} cc_set;

typedef struct {
    const char *device;
    cost_analytic_config c;
    int64_t worst;
} cost_args;

static const cmd_opt cost_opts[] = {
    CMD_STR("--device", "NAME", offsetof(cost_args, device), "the entries of this device (needed when CACHE holds several)"),
    CMD_CALL("--set", "NAME=VALUE", offsetof(cost_args, c), cmd_opt_cost_set,
             "an analytic-model constant (repeatable); the constants and their defaults are listed below"),
    CMD_I64("--worst", "N", offsetof(cost_args, worst), 0, 100000,
            "compare: list the N configurations furthest off (default %D)"),
    CMD_OPT_END,
};

static void cost_usage(const cost_args *defaults) {
    printf("usage: tasc cost compare CACHE [--device NAME] [--set NAME=VALUE ...] [--worst N]\n"
           "       tasc cost fit CACHE [--device NAME] [--set NAME=VALUE ...]\n"
           "\n"
           "The analytic cost model (the optimizer's default, no GPU needed) against node times\n"
           "measured on a GPU. CACHE is the measured cost model's cache file (DEVICE<TAB>KEY<TAB>\n"
           "MICROSECONDS lines, written by `tasc optimize --cost measured` and `tasc bench --optimize\n"
           "--cost measured` on a GPU machine; bench/cost/ has one from an H100).\n"
           "\n"
           "  compare   per op: configurations, measured and predicted sums, the median and the\n"
           "            10th/90th percentiles of predicted/measured; overall, the typical factor\n"
           "            between the two (exp of the mean |log ratio|); the N worst configurations\n"
           "  fit       the calibration constants (launch_us, min_us, conv_min_us, matmul_min_us,\n"
           "            conv_eff, matmul_eff, mem_eff) that minimise the mean squared log ratio\n"
           "            (Nelder-Mead from the given constants; deterministic); prints them as\n"
           "            --set options\n"
           "\n"
           "options:\n");
    cmd_opts_help(cost_opts, defaults);
    printf("\nanalytic-model constants (--set NAME=VALUE) and their defaults:\n");
    for (int32_t i = 0; i < cost_analytic_n_params(); i++) {
        double v;
        const char *name = cost_analytic_param(&defaults->c, i, &v);
        printf("  %-14s %g\n", name, v);
    }
    printf("\n"
           "exit codes: 0 ok, 1 bad input, 2 bad command line\n");
}

static int cc_add(cc_set *s, const cost_sample *e) {
    if (s->n == s->cap) {
        int32_t cap = s->cap ? 2 * s->cap : 256;
        cost_sample *ne = realloc(s->e, (size_t)cap * sizeof *ne);
        if (!ne)
            return -1;
        s->e = ne;
        s->cap = cap;
    }
    s->e[s->n++] = *e;
    return 0;
}

typedef struct {
    cc_set *s;
    const char *device; /* the one asked for, or NULL */
    char *dev;          /* the file's first device (owned) */
} cc_reader;

static int cc_entry(void *arg, const char *device, const char *key, double us, char *err, size_t errlen) {
    cc_reader *r = arg;
    if (r->device ? strcmp(device, r->device) != 0 : r->dev && strcmp(device, r->dev) != 0) {
        if (r->device)
            return 0;
        snprintf(err, errlen, "a second device '%s' after '%s': name one with --device", device, r->dev);
        return -1;
    }
    if (!r->dev && !(r->dev = strdup(device))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    cost_sample e;
    memset(&e, 0, sizeof e);
    e.us = us;
    ops_shape in[OPS_MAX_INPUTS];
    if (cost_key_parse(key, &e.op, &e.p, &e.n_in, in, &e.n_out, e.out, err, errlen) < 0)
        return -1;
    if (e.n_in == 0) {
        r->s->skipped_const++;
        return 0;
    }
    if (e.n_in > COST_SAMPLE_MAX_IN) {
        r->s->skipped_big++;
        return 0;
    }
    memcpy(e.in, in, (size_t)e.n_in * sizeof in[0]);
    if (cc_add(r->s, &e) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Reads the entries of device (NULL: the only device in the file) into s. */
static int cc_load(const char *cmd, const char *path, const char *device, cc_set *s) {
    FILE *f = fopen(path, "r");
    if (!f) {
        cmd_error(cmd, "%s: cannot open", path);
        return -1;
    }
    cc_reader r = {s, device, NULL};
    char err[1024];
    int rc = cost_cache_read(f, path, cc_entry, &r, err, sizeof err);
    fclose(f);
    if (rc < 0)
        cmd_error(cmd, "%s", err);
    else if (s->n == 0) {
        cmd_error(cmd, "%s: no entries%s%s", path, device ? " for device " : "", device ? device : "");
        rc = -1;
    } else {
        printf("%s: %d configurations of %s (%d constants and %d with over %d inputs left out)\n", path, (int)s->n,
               r.dev, (int)s->skipped_const, (int)s->skipped_big, COST_SAMPLE_MAX_IN);
    }
    free(r.dev);
    return rc;
}

/* The prediction of every entry into pred and log(predicted / measured) into lr. */
static int cc_predict(const cc_set *s, const cost_analytic_config *c, double *pred, double *lr) {
    char err[512];
    double e2;
    if (cost_analytic_error(c, s->e, s->n, pred, &e2, err, sizeof err) < 0) {
        cmd_error("cost", "%s", err);
        return -1;
    }
    for (int32_t i = 0; i < s->n; i++)
        lr[i] = cost_log_ratio(pred[i], s->e[i].us);
    return 0;
}

static int cc_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (sorted in place). */
static double cc_quantile(double *v, int32_t n, double q) {
    qsort(v, (size_t)n, sizeof *v, cc_cmp_d);
    double at = q * (n - 1);
    int32_t i = (int32_t)floor(at);
    return i + 1 < n ? v[i] + (at - i) * (v[i + 1] - v[i]) : v[n - 1];
}

static void cc_print_config(const char *title, const cost_analytic_config *c) {
    printf("%s", title);
    for (int32_t i = 0; i < cost_analytic_n_params(); i++) {
        double v;
        const char *name = cost_analytic_param(c, i, &v);
        printf(" %s=%g", name, v);
    }
    printf("\n");
}

/* The per-op table and the overall figures of c on s. */
static int cc_report(const cc_set *s, const cost_analytic_config *c, int32_t worst) {
    double *pred = malloc((size_t)s->n * sizeof *pred), *lr = malloc((size_t)s->n * sizeof *lr);
    double *tmp = malloc((size_t)s->n * sizeof *tmp);
    int32_t *idx = malloc((size_t)s->n * sizeof *idx);
    int rc = -1;
    if (!pred || !lr || !tmp || !idx) {
        cmd_error("cost", "out of memory");
        goto done;
    }
    if (cc_predict(s, c, pred, lr) < 0)
        goto done;
    cc_print_config("analytic model:", c);
    printf("\n%-16s %6s %14s %14s %9s %9s %9s\n", "op", "count", "measured us", "predicted us", "ratio p10",
           "median", "p90");
    double all_m = 0.0, all_p = 0.0, all_abs = 0.0;
    for (int32_t op = 0; op < OP_COUNT; op++) {
        int32_t k = 0;
        double sm = 0.0, sp = 0.0;
        for (int32_t i = 0; i < s->n; i++)
            if (s->e[i].op == (ops_type)op) {
                sm += s->e[i].us;
                sp += pred[i];
                tmp[k++] = exp(lr[i]);
            }
        if (!k)
            continue;
        double q10 = cc_quantile(tmp, k, 0.1), q50 = cc_quantile(tmp, k, 0.5), q90 = cc_quantile(tmp, k, 0.9);
        printf("%-16s %6d %14.1f %14.1f %9.2f %9.2f %9.2f\n", ops_table[op].name, (int)k, sm, sp, q10, q50, q90);
        all_m += sm;
        all_p += sp;
    }
    for (int32_t i = 0; i < s->n; i++) {
        all_abs += fabs(lr[i]);
        tmp[i] = exp(lr[i]);
    }
    double q10 = cc_quantile(tmp, s->n, 0.1), q50 = cc_quantile(tmp, s->n, 0.5), q90 = cc_quantile(tmp, s->n, 0.9);
    printf("%-16s %6d %14.1f %14.1f %9.2f %9.2f %9.2f\n", "all", (int)s->n, all_m, all_p, q10, q50, q90);
    printf("\ntypical factor between predicted and measured (exp of the mean |log ratio|): %.3fx\n",
           exp(all_abs / s->n));
    if (worst > 0) {
        for (int32_t i = 0; i < s->n; i++)
            idx[i] = i;
        /* selection of the worst few by |log ratio|, ties by file order: deterministic */
        int32_t show = worst < s->n ? worst : s->n;
        printf("\nfurthest off (predicted/measured):\n");
        for (int32_t r = 0; r < show; r++) {
            int32_t best = r;
            for (int32_t j = r + 1; j < s->n; j++)
                if (fabs(lr[idx[j]]) > fabs(lr[idx[best]]))
                    best = j;
            int32_t t = idx[r];
            idx[r] = idx[best];
            idx[best] = t;
            const cost_sample *e = &s->e[idx[r]];
            char key[1024];
            if (cost_key_text(e->op, &e->p, e->n_in, e->in, key, sizeof key) < 0)
                snprintf(key, sizeof key, "%s (key too long)", ops_table[e->op].name);
            printf("  %7.2fx  measured %9.2f us  predicted %9.2f us  %s\n", exp(lr[idx[r]]), e->us, pred[idx[r]], key);
        }
    }
    rc = 0;
done:
    free(pred);
    free(lr);
    free(tmp);
    free(idx);
    return rc;
}

static void cc_progress(int round, double err2, void *arg) {
    (void)arg;
    fprintf(stderr, "cost fit: round %d, mean squared log ratio %.5f\n", round, err2);
}

/* Fits c in place and prints the result as options. */
static int cc_fit(const cc_set *s, cost_analytic_config *c) {
    char err[512];
    double f0, f;
    if (cost_analytic_error(c, s->e, s->n, NULL, &f0, err, sizeof err) < 0 ||
        cost_analytic_fit(c, s->e, s->n, cc_progress, NULL, err, sizeof err) < 0 ||
        cost_analytic_error(c, s->e, s->n, NULL, &f, err, sizeof err) < 0) {
        cmd_error("cost", "%s", err);
        return -1;
    }
    printf("fit: mean squared log ratio %.5f -> %.5f\n", f0, f);
    printf("as options:");
    for (int32_t k = 0; k < cost_analytic_n_fitted(); k++)
        for (int32_t i = 0; i < cost_analytic_n_params(); i++) {
            double v;
            const char *name = cost_analytic_param(c, i, &v);
            if (!strcmp(name, cost_analytic_fitted(k)))
                printf(" --set %s=%.4g", name, v);
        }
    printf("\n\n");
    return 0;
}

int cmd_cost(int argc, char **argv) {
    const char *cmd = "cost";
    cost_args a = {.worst = 10};
    cost_analytic_defaults(&a.c);
    if (cmd_wants_help(argc, argv)) {
        cost_usage(&a);
        return TASC_EXIT_OK;
    }
    if (argc < 2 || (strcmp(argv[1], "compare") != 0 && strcmp(argv[1], "fit") != 0)) {
        cmd_error(cmd, "expected 'compare' or 'fit' (tasc cost --help)");
        return TASC_EXIT_USAGE;
    }
    int fit = !strcmp(argv[1], "fit");
    const char *path = NULL;
    if (cmd_opts_parse(cmd, cost_opts, &a, argc, argv, 2, &path, 1) < 0)
        return TASC_EXIT_USAGE;
    if (!path) {
        cmd_error(cmd, "missing CACHE (tasc cost --help)");
        return TASC_EXIT_USAGE;
    }
    cc_set s;
    memset(&s, 0, sizeof s);
    int rc = TASC_EXIT_INPUT;
    if (cc_load(cmd, path, a.device, &s) < 0)
        goto done;
    if (fit) {
        cost_analytic_config start = a.c;
        if (cc_fit(&s, &a.c) < 0)
            goto done;
        cc_print_config("from:", &start);
    }
    if (cc_report(&s, &a.c, fit ? 0 : (int32_t)a.worst) < 0)
        goto done;
    rc = TASC_EXIT_OK;
done:
    free(s.e);
    return rc;
}
