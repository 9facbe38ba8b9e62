/* ops_fp.h: fingerprint semantics of the generation op set (defined in ops/ops_fp.c, wired into
 * the op table's .fp slot in ops/ops.c). See ops_fp_fn in ops.h for the arithmetic. */
#ifndef TASC_OPS_FP_H
#define TASC_OPS_FP_H

#include "ops.h"

void ops_fp_conv2d(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_matmul(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_ewadd(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_ewmul(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_smul(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_relu(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_transpose(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_concat(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_split(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_avgpool2d(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_maxpool2d(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_enlarge(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_const_imm(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_const_iconv(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_const_ones(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);
void ops_fp_const_pool(const ops_sig *s, const uint32_t *const *in, uint32_t *const *out);

#endif
