/* exec_check.c: the numerical check of an optimized graph against its original on the CPU
 * executor (exec_check, exec.h): the same seeded inputs through both, outputs compared per seed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base.h"
#include "exec.h"

/* --- numerical check ------------------------------------------------------------------------- */

int exec_check(const graph *a, const graph *b, int32_t n_seeds, double tol, exec_diff *worst, char *err,
                 size_t errlen) {
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
    for (int32_t i = 0; i < a->n_outputs; i++) {
        if (!ops_shape_eq(&a->tensors[a->outputs[i]].shape, &b->tensors[b->outputs[i]].shape)) {
            snprintf(err, errlen, "check: output %d has different shapes", (int)i);
            return -1;
        }
        worst[i] = (exec_diff){0.0, 0.0, 0};
    }
    float **oa = base_xcalloc(1, sizeof(float *) * (size_t)(a->n_outputs + 1));
    float **ob = base_xcalloc(1, sizeof(float *) * (size_t)(a->n_outputs + 1));
    int rc = 0;
    int64_t *orig_nan = base_xcalloc(1, sizeof(int64_t) * (size_t)(a->n_outputs + 1));
    if (errlen)
        err[0] = '\0';
    char e2[512];
    for (int32_t s = 0; s < n_seeds && rc >= 0; s++) {
        if (exec_cpu_run(a, NULL, (uint64_t)s, oa, e2, sizeof e2) < 0) {
            snprintf(err, errlen, "check: original: %s", e2);
            rc = -1;
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
            exec_diff d = exec_compare(ob[i], oa[i], n);
            exec_diff ref = exec_compare(oa[i], oa[i], n); /* NaN/Inf in the original too */
            if (isnan(d.rel_l2) || d.rel_l2 > worst[i].rel_l2)
                worst[i].rel_l2 = d.rel_l2;
            if (isnan(d.max_abs) || d.max_abs > worst[i].max_abs)
                worst[i].max_abs = d.max_abs;
            worst[i].nan_count += d.nan_count + ref.nan_count;
            orig_nan[i] += ref.nan_count;
            free(oa[i]);
            free(ob[i]);
            oa[i] = ob[i] = NULL;
        }
    }
    free(oa);
    free(ob);
    if (rc < 0) {
        free(orig_nan);
        return -1;
    }
    for (int32_t i = 0; i < a->n_outputs && rc == 0; i++)
        if (orig_nan[i] > 0) {
            snprintf(err, errlen, "output '%s' of the original model has %lld NaN/Inf values", a->tensors[a->outputs[i]].name,
                     (long long)orig_nan[i]);
            rc = 1;
        }
    for (int32_t i = 0; i < a->n_outputs; i++)
        if (worst[i].nan_count > 0 || !(worst[i].rel_l2 <= tol))
            rc = 1;
    free(orig_nan);
    return rc;
}
