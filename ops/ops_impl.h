/* ops_impl.h: internals shared by ops.c (the table, parameters, shape inference, FLOPs) and
 * ops_cpu.c (the CPU references).
 *
 * The CPU references are named ops_cpu_<op name>; each reads only what ops_infer has already
 * validated (shapes in the signature, parameters in their domains), so none of them checks user
 * input again. They write every element of their preallocated outputs.
 */
#ifndef TASC_OPS_IMPL_H
#define TASC_OPS_IMPL_H

#include "ops.h"

/* Row-major strides of s into st[rank] (elements). */
void ops_impl_strides(const ops_shape *s, int64_t *st);

/* CPU references, one per operator (ops_cpu.c). */
void ops_cpu_conv2d(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_matmul(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_ewadd(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_ewmul(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_ewsub(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_ewdiv(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_smul(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_relu(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_sigmoid(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_tanh(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_gelu(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_erf(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_sqrt(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_pow(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_clip(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_transpose(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_concat(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_split(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_avgpool2d(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_maxpool2d(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_globalavgpool(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_enlarge(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_const_imm(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_const_iconv(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_const_ones(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_const_pool(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_batchnorm(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_reshape(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_softmax(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_layernorm(const ops_sig *s, const float *const *in, float *const *out);
void ops_cpu_gather(const ops_sig *s, const float *const *in, float *const *out);

#endif
