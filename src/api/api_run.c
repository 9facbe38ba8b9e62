/* api_run.c: running a model on the CPU reference executor (src/runtime/exec.h) with caller-owned
 * buffers: inputs are borrowed as they are (no copy), the executor's result buffers are copied
 * into the caller's outputs and freed.
 *
 * A thread count given in the options holds for this call only: the caller's OpenMP setting is
 * restored afterwards.
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "exec.h"

TASC_API void tasc_run_opts_default(tasc_run_opts *o) {
    if (o)
        memset(o, 0, sizeof *o);
}

/* The executor on g with the checked buffers; TASC_OK or a failure. */
static tasc_status api_exec(const graph *g, const tasc_buffer *inputs, int32_t n_inputs, const tasc_buffer *outputs,
                            const tasc_run_opts *o) {
    const float **in = base_xcalloc((size_t)g->n_inputs + 1, sizeof *in);
    float **out = base_xcalloc((size_t)g->n_outputs + 1, sizeof *out);
    char err[API_ERR_LEN];
    for (int32_t i = 0; i < n_inputs; i++)
        in[i] = inputs[i].data;
    int saved = omp_get_max_threads();
    if (o->threads > 0)
        omp_set_num_threads(o->threads);
    int rc = exec_cpu_run(g, in, o->seed, out, err, sizeof err);
    if (o->threads > 0)
        omp_set_num_threads(saved);
    tasc_status s = TASC_OK;
    if (rc < 0)
        s = api_fail(TASC_ERR_INPUT, "%s: %s", g->name ? g->name : "model", err);
    for (int32_t j = 0; j < g->n_outputs; j++) {
        int64_t n = ops_shape_numel(&g->tensors[g->outputs[j]].shape);
        if (s == TASC_OK && n > 0)
            memcpy(outputs[j].data, out[j], (size_t)n * sizeof(float));
        free(out[j]);
    }
    free(out);
    free(in);
    return s;
}

TASC_API tasc_status tasc_run(const tasc_model *m, const tasc_buffer *inputs, int32_t n_inputs,
                              const tasc_buffer *outputs, int32_t n_outputs, const tasc_run_opts *o) {
    if (!m)
        return api_fail(TASC_ERR_USAGE, "tasc_run: the model is NULL");
    tasc_run_opts def;
    if (!o) {
        tasc_run_opts_default(&def);
        o = &def;
    }
    if (o->threads < 0)
        return api_fail(TASC_ERR_USAGE, "threads: %d is negative", (int)o->threads);
    const graph *g = m->g;
    tasc_status s = api_check_buffers(g, g->inputs, g->n_inputs, inputs, n_inputs, "input", 1);
    if (s == TASC_OK)
        s = api_check_buffers(g, g->outputs, g->n_outputs, outputs, n_outputs, "output", 0);
    if (s != TASC_OK)
        return s;
    return api_exec(g, inputs, n_inputs, outputs, o);
}
