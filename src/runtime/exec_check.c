/* exec_check.c: the numerical check of an optimized graph against its original on the CPU
 * executor (exec_check, exec.h): the same seeded inputs through both, outputs compared per seed.
 *
 * The comparison is NaN-consistent: generated inputs may lie outside a model's domain (sqrt or
 * pow(x, 0.5) of a negative value), and where the original is NaN or Inf the optimized graph must
 * be NaN or Inf too; those positions are left out of the error. Anywhere else a NaN or Inf in
 * the optimized result fails the check.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base.h"
#include "exec.h"

/* b against the reference a over n values, NaN-consistent (above). nan_count: positions where
 * exactly one of the two is finite; positions where neither is are skipped. */
static exec_diff exec_compare_consistent(const float *b, const float *a, int64_t n) {
    exec_diff d = {0.0, 0.0, 0};
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double x = b[i], y = a[i];
        if (!isfinite(x) || !isfinite(y)) {
            d.nan_count += isfinite(x) != isfinite(y);
            continue;
        }
        double e = fabs(x - y);
        num += e * e;
        den += y * y;
        if (e > d.max_abs)
            d.max_abs = e;
    }
    if (d.nan_count) {
        d.rel_l2 = INFINITY;
        d.max_abs = INFINITY;
    } else {
        d.rel_l2 = sqrt(num) / fmax(sqrt(den), 1e-30);
    }
    return d;
}

/* Both graphs' interfaces agree; -1 with a message if not. */
static int exec_check_interfaces(const graph *a, const graph *b, char *err, size_t errlen) {
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs) {
        snprintf(err, errlen, "check: the graphs have different inputs or outputs (%d/%d vs %d/%d)", (int)a->n_inputs,
                 (int)a->n_outputs, (int)b->n_inputs, (int)b->n_outputs);
        return -1;
    }
    for (int32_t i = 0; i < a->n_inputs; i++)
        if (!ops_shape_eq(&a->tensors[a->inputs[i]].shape, &b->tensors[b->inputs[i]].shape)) {
            snprintf(err, errlen, "check: input %d has different shapes", (int)i);
            return -1;
        }
    for (int32_t i = 0; i < a->n_outputs; i++)
        if (!ops_shape_eq(&a->tensors[a->outputs[i]].shape, &b->tensors[b->outputs[i]].shape)) {
            snprintf(err, errlen, "check: output %d has different shapes", (int)i);
            return -1;
        }
    return 0;
}

int exec_check(const graph *a, const graph *b, int32_t n_seeds, double tol, exec_diff *worst, char *err,
                 size_t errlen) {
    if (exec_check_interfaces(a, b, err, errlen) < 0)
        return -1;
    for (int32_t i = 0; i < a->n_outputs; i++)
        worst[i] = (exec_diff){0.0, 0.0, 0};
    float **oa = base_xcalloc(1, sizeof(float *) * (size_t)(a->n_outputs + 1));
    float **ob = base_xcalloc(1, sizeof(float *) * (size_t)(a->n_outputs + 1));
    int rc = 0;
    if (errlen)
        err[0] = '\0';
    char e2[512];
    for (int32_t s = 0; s < n_seeds && rc >= 0; s++) {
        if (exec_cpu_run(a, NULL, (uint64_t)s, oa, e2, sizeof e2) < 0) {
            snprintf(err, errlen, "%s", e2); /* the model itself (an unreadable weight file): bad input */
            rc = EXEC_CHECK_BAD_ORIGINAL;
            break;
        }
        if (exec_cpu_run(b, NULL, (uint64_t)s, ob, e2, sizeof e2) < 0) {
            snprintf(err, errlen, "check: optimized: %s", e2);
            for (int32_t i = 0; i < a->n_outputs; i++)
                free(oa[i]), oa[i] = NULL;
            rc = -1;
            break;
        }
        for (int32_t i = 0; i < a->n_outputs; i++) {
            int64_t n = ops_shape_numel(&a->tensors[a->outputs[i]].shape);
            exec_diff d = exec_compare_consistent(ob[i], oa[i], n);
            if (isnan(d.rel_l2) || d.rel_l2 > worst[i].rel_l2)
                worst[i].rel_l2 = d.rel_l2;
            if (isnan(d.max_abs) || d.max_abs > worst[i].max_abs)
                worst[i].max_abs = d.max_abs;
            worst[i].nan_count += d.nan_count;
            free(oa[i]);
            free(ob[i]);
            oa[i] = ob[i] = NULL;
        }
    }
    free(oa);
    free(ob);
    if (rc < 0)
        return rc;
    for (int32_t i = 0; i < a->n_outputs; i++) {
        if (worst[i].nan_count > 0 && rc == 0)
            snprintf(err, errlen, "output '%s': %lld values are NaN/Inf in one model and finite in the other",
                     a->tensors[a->outputs[i]].name, (long long)worst[i].nan_count);
        if (worst[i].nan_count > 0 || !(worst[i].rel_l2 <= tol))
            rc = 1;
    }
    return rc;
}
