/* api.c: the public API's common part: the thread-local last error, status names, the version,
 * tasc_free, and the checks of caller-owned buffers shared by the CPU and GPU run functions.
 *
 * The message buffer is per thread (C11 _Thread_local), so calls on different handles from
 * different threads never see each other's messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"

#ifndef TASC_VERSION_STRING
#error "TASC_VERSION_STRING must be set by the build (the CMake project version)"
#endif

static _Thread_local char api_err[API_ERR_LEN];

tasc_status api_fail(tasc_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail_line(api_err, sizeof api_err, fmt, ap);
    va_end(ap);
    return s;
}

void api_clear(void) { api_err[0] = '\0'; }

TASC_API const char *tasc_last_error(void) { return api_err; }

TASC_API const char *tasc_status_name(tasc_status s) {
    switch (s) {
    case TASC_OK:
        return "ok";
    case TASC_ERR_INPUT:
        return "bad input";
    case TASC_ERR_USAGE:
        return "bad usage";
    case TASC_ERR_RESOURCE:
        return "missing resource";
    case TASC_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}

TASC_API const char *tasc_version(void) { return TASC_VERSION_STRING; }

TASC_API int tasc_has_cuda(void) {
#ifdef TASC_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

TASC_API void tasc_free(void *p) { free(p); }

tasc_model *api_model_wrap(graph *g) {
    tasc_model *m = base_xcalloc(1, sizeof *m);
    m->g = g;
    return m;
}

int api_buffer_shape(const tasc_buffer *b, ops_shape *s) {
    memset(s, 0, sizeof *s);
    if (b->rank < 0 || b->rank > OPS_MAX_DIMS)
        return -1;
    s->rank = b->rank;
    for (int32_t d = 0; d < b->rank; d++)
        s->dims[d] = b->dims[d];
    return 0;
}

tasc_status api_check_buffers(const graph *g, const int32_t *ids, int32_t n_ids, const tasc_buffer *bufs, int32_t n,
                              const char *what, int may_be_null) {
    if (may_be_null && !bufs && n == 0)
        return TASC_OK;
    if (n != n_ids)
        return api_fail(TASC_ERR_USAGE, "%d %s buffers given, the model has %d %ss", (int)n, what, (int)n_ids, what);
    if (n && !bufs)
        return api_fail(TASC_ERR_USAGE, "%s buffers: NULL", what);
    for (int32_t i = 0; i < n; i++) {
        const graph_tensor *t = &g->tensors[ids[i]];
        ops_shape s;
        char a[128], b[128];
        if (!bufs[i].data && !may_be_null)
            return api_fail(TASC_ERR_USAGE, "%s '%s' (index %d): data is NULL", what, t->name, (int)i);
        if (!bufs[i].data)
            continue;
        if (api_buffer_shape(&bufs[i], &s) < 0)
            return api_fail(TASC_ERR_INPUT, "%s '%s' (index %d): rank %d, the model's is %d", what, t->name, (int)i,
                            (int)bufs[i].rank, (int)t->shape.rank);
        if (!ops_shape_eq(&s, &t->shape))
            return api_fail(TASC_ERR_INPUT, "%s '%s' (index %d): shape %s does not match the model's %s", what, t->name,
                            (int)i, ops_shape_str(&s, a, sizeof a), ops_shape_str(&t->shape, b, sizeof b));
    }
    return TASC_OK;
}
