/* ops_cuda_register.c: the CUDA entry points into the op table's writable slot ops_cuda[], one
 * per op, generated from ops.def (an op without ops_cuda_<name> does not link); and oc_fail.
 */
#include <stdarg.h>

#include "ops_cuda.h"

void ops_cuda_register(void) {
#define OP(id, nm, mi, ma, no, dc) ops_cuda[OP_##id] = ops_cuda_##nm;
#include "ops.def"
#undef OP
}

int oc_fail(ops_cuda_env *env, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail(env->err, env->errlen, fmt, ap);
    va_end(ap);
    return -1;
}
