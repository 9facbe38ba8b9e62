/* api_gpu.c: the GPU part of the public API -- a run and the latency of `tasc bench MODEL` on the
 * GPU runtime (src/runtime/rt.h). In a build without CUDA every function exists and returns
 * TASC_ERR_RESOURCE saying so, so programs link the same way against either build.
 *
 * Each call makes its own runtime context and frees it before returning: the runtime's rule that
 * all contexts be made before the first run of any (rt.h) then holds trivially.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"

#ifdef TASC_HAVE_CUDA
#include "exec.h"
#include "rt.h"
#endif

TASC_API void tasc_bench_opts_default(tasc_bench_opts *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->warmup = 20;
    o->reps = 200;
}

#ifndef TASC_HAVE_CUDA

static tasc_status api_no_cuda(void) {
    return api_fail(TASC_ERR_RESOURCE, "this tasc was built without CUDA: no GPU runtime");
}

TASC_API tasc_status tasc_gpu_available(void) { return api_no_cuda(); }

TASC_API tasc_status tasc_gpu_run(const tasc_model *m, const tasc_buffer *inputs, int32_t n_inputs,
                                  const tasc_buffer *outputs, int32_t n_outputs) {
    return api_no_cuda();
}

TASC_API tasc_status tasc_gpu_bench(const tasc_model *m, const tasc_bench_opts *o, tasc_bench_stats *st) {
    return api_no_cuda();
}

#else

TASC_API tasc_status tasc_gpu_available(void) {
    char err[API_ERR_LEN];
    if (!rt_available(err, sizeof err))
        return api_fail(TASC_ERR_RESOURCE, "no usable GPU: %s", err);
    api_clear();
    return TASC_OK;
}

/* A context for g into *out with the inputs given (NULL entries: generated for seed). */
static tasc_status api_gpu_ctx(const graph *g, const tasc_buffer *inputs, int32_t n_inputs, uint64_t seed,
                               int no_graph, rt_ctx **out) {
    char err[API_ERR_LEN];
    if (!rt_available(err, sizeof err))
        return api_fail(TASC_ERR_RESOURCE, "no usable GPU: %s", err);
    rt_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.no_graph = no_graph;
    ro.autotune = RT_AUTOTUNE_ON; /* first-use tuning of the matmul as `tasc bench`; TASC_NO_AUTOTUNE=1 refuses it */
    rt_ctx *c = rt_ctx_new(g, &ro, err, sizeof err);
    if (!c)
        return api_fail(TASC_ERR_INPUT, "%s: %s", g->name, err);
    float **gen = base_xcalloc((size_t)g->n_inputs + 1, sizeof *gen);
    int rc = rt_make_inputs(g, seed, gen, err, sizeof err);
    for (int32_t i = 0; rc == 0 && i < g->n_inputs; i++) {
        const float *src = i < n_inputs && inputs[i].data ? inputs[i].data : gen[i];
        rc = rt_set_input(c, i, src, err, sizeof err);
    }
    for (int32_t i = 0; i < g->n_inputs; i++)
        free(gen[i]);
    free(gen);
    if (rc < 0) {
        rt_ctx_free(c);
        return api_fail(TASC_ERR_INPUT, "%s: %s", g->name, err);
    }
    *out = c;
    return TASC_OK;
}

TASC_API tasc_status tasc_gpu_run(const tasc_model *m, const tasc_buffer *inputs, int32_t n_inputs,
                                  const tasc_buffer *outputs, int32_t n_outputs) {
    if (!m)
        return api_fail(TASC_ERR_USAGE, "tasc_gpu_run: the model is NULL");
    const graph *g = m->g;
    tasc_status s = api_check_buffers(g, g->inputs, g->n_inputs, inputs, n_inputs, "input", 1);
    if (s == TASC_OK)
        s = api_check_buffers(g, g->outputs, g->n_outputs, outputs, n_outputs, "output", 0);
    if (s != TASC_OK)
        return s;
    rt_ctx *c = NULL;
    if ((s = api_gpu_ctx(g, inputs, n_inputs, 0, 0, &c)) != TASC_OK)
        return s;
    char err[API_ERR_LEN];
    int rc = rt_run(c, err, sizeof err);
    for (int32_t j = 0; rc == 0 && j < g->n_outputs; j++)
        rc = rt_get_output(c, j, outputs[j].data, err, sizeof err);
    rt_ctx_free(c);
    if (rc < 0)
        return api_fail(TASC_ERR_INPUT, "%s: %s", g->name, err);
    return TASC_OK;
}

static int api_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, min, p90 and mean of the n sorted times into st. */
static void api_bench_figures(double *ms, int32_t n, tasc_bench_stats *st) {
    qsort(ms, (size_t)n, sizeof *ms, api_cmp_d);
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += ms[i];
    st->median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    st->min_ms = ms[0];
    st->p90_ms = ms[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
    st->mean_ms = sum / n;
}

TASC_API tasc_status tasc_gpu_bench(const tasc_model *m, const tasc_bench_opts *o, tasc_bench_stats *st) {
    if (!m || !st)
        return api_fail(TASC_ERR_USAGE, "tasc_gpu_bench: NULL model or stats");
    tasc_bench_opts def;
    if (!o) {
        tasc_bench_opts_default(&def);
        o = &def;
    }
    if (o->warmup < 0 || o->reps < 1 || o->reps > 1000000)
        return api_fail(TASC_ERR_USAGE, "warmup %d (>= 0) or reps %d (1..1000000) out of range", (int)o->warmup,
                        (int)o->reps);
    rt_ctx *c = NULL;
    tasc_status s = api_gpu_ctx(m->g, NULL, 0, o->seed, o->no_graph, &c);
    if (s != TASC_OK)
        return s;
    char err[API_ERR_LEN];
    double *ms = base_xcalloc((size_t)o->reps, sizeof *ms);
    /* the first run captures the CUDA graph: untimed, like the warm-up */
    int rc = rt_time(c, o->warmup + 1, 0, NULL, err, sizeof err);
    if (rc == 0)
        rc = rt_time(c, 0, o->reps, ms, err, sizeof err);
    if (rc == 0) {
        rt_info info;
        memset(st, 0, sizeof *st);
        api_bench_figures(ms, o->reps, st);
        rt_get_info(c, &info);
        st->device_bytes = info.device_bytes;
        st->nodes_run = info.nodes_run;
        st->cuda_graph = info.graph;
        snprintf(st->device, sizeof st->device, "%s", rt_device_name());
    }
    free(ms);
    rt_ctx_free(c);
    if (rc < 0)
        return api_fail(TASC_ERR_INPUT, "%s: %s", m->g->name, err);
    return TASC_OK;
}

#endif
