/* rt_cost_model.c: the measured cost model as the optimizer's cost_model (src/optimizer/cost.h):
 * every node's time comes from rt_cost_measure (rt_cost.h), through a cache file loaded when the
 * model is made and written back when it is freed, so each configuration is timed once per device.
 *
 * The model owns its cache; the save at cost_model_free reports a failure through the caller's
 * callback (the runtime prints nothing itself). CUDA builds only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "cost.h"
#include "rt.h"
#include "rt_cost.h"

typedef struct {
    rt_cost_cache *cache;
    char path[4096];
    rt_cost_model_report report; /* may be NULL */
    void *report_arg;
} rt_cost_model_impl;

static int rt_cost_model_node(void *impl, ops_type op, const ops_params *p, int32_t n_in, const ops_shape *in,
                              int32_t n_out, const ops_shape *out, double *us, char *err, size_t errlen) {
    rt_cost_model_impl *m = impl;
    (void)n_out;
    (void)out;
    return rt_cost_measure(m->cache, op, p, n_in, in, us, err, errlen);
}

static void rt_cost_model_free(void *impl) {
    rt_cost_model_impl *m = impl;
    char err[4200];
    if (rt_cost_cache_save(m->cache, m->path, err, sizeof err) < 0 && m->report)
        m->report(err, m->report_arg);
    rt_cost_cache_free(m->cache);
    free(m);
}

struct cost_model *rt_cost_model_new(const char *path, rt_cost_model_report report, void *report_arg, char *err,
                                     size_t errlen) {
    if (!rt_available(err, errlen))
        return NULL;
    rt_register_ops();
    rt_cost_model_impl *m = base_xcalloc(1, sizeof *m);
    if (!(m->cache = rt_cost_cache_new()))
        base_die("out of memory");
    if (path)
        snprintf(m->path, sizeof m->path, "%s", path);
    else
        rt_cost_default_path(m->path, sizeof m->path);
    m->report = report;
    m->report_arg = report_arg;
    if (rt_cost_cache_load(m->cache, m->path, 1, err, errlen) < 0) {
        rt_cost_cache_free(m->cache);
        free(m);
        return NULL;
    }
    return cost_model_new("measured", rt_cost_model_node, rt_cost_model_free, m);
}
