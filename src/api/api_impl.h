/* api_impl.h: internals shared by the files of the public API layer (src/api, include/tasc.h):
 * what the opaque handles hold, and the thread-local last error every public function reports
 * through.
 *
 * A public function returns api_fail(STATUS, fmt, ...) on failure: the message is stored for
 * tasc_last_error() as one line (newlines become spaces) and STATUS is returned. Arguments are
 * checked before anything else (NULL handles and out-pointers: TASC_ERR_USAGE), so nothing below
 * this layer sees a NULL it did not expect. Only tasc_* symbols leave libtasc.so.
 */
#ifndef TASC_API_IMPL_H
#define TASC_API_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "graph.h"
#include "rules.h"
#include "search.h"
#include "tasc.h"

#define API_ERR_LEN 4096

/* A model: one graph, owned. */
struct tasc_model {
    graph *g;
};

/* A model under construction: the graph builder's graph, and the first failure of any builder
 * call (sticky: every later call fails with it). */
struct tasc_builder {
    graph *g;
    tasc_status failed;
    char *failure; /* owned, the first failure's message */
};

/* A rule set, owned. */
struct tasc_rules {
    rules_set *rs;
};

/* An optimization's result: the optimized model, the search's statistics (applied rewrites
 * borrowed from res), the check's figures. */
struct tasc_opt_result {
    tasc_model model;
    search_result res;     /* res.applied[i].name points into names[i] */
    char **names;          /* owned copies: rule ids would otherwise borrow from the rule set */
    double check_s, check_error;
};

/* Records the one-line message for tasc_last_error and returns s. */
tasc_status api_fail(tasc_status s, const char *fmt, ...) BASE_PRINTF(2, 3);
/* Clears the message (a call that succeeds after a failure leaves the old message; this is for
 * calls that want "" after success, such as tasc_gpu_available). */
void api_clear(void);

/* A new model handle owning g (g may not be NULL). */
tasc_model *api_model_wrap(graph *g);

/* The shape of a public buffer as an ops_shape; -1 when its rank is out of range. */
int api_buffer_shape(const tasc_buffer *b, ops_shape *s);
/* Checks n buffers against the graph tensors ids[0..n) (rank and dims); what says "input" or
 * "output" in messages; inputs may have NULL data (generated) when may_be_null. TASC_OK or
 * TASC_ERR_INPUT / TASC_ERR_USAGE after api_fail. */
tasc_status api_check_buffers(const graph *g, const int32_t *ids, int32_t n_ids, const tasc_buffer *bufs, int32_t n,
                              const char *what, int may_be_null);

#endif
