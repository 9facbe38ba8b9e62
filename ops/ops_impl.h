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

/* The CPU GEMM (ops_cpu_kernels.c): C = A B, then + bias, then act, for nprob independent problems of
 * one size (m, n, k), each C element summed over k in ascending order from 0 in float with one
 * fmaf per step (the naive loop's result, bit for bit, for any thread count and instruction set).
 * Parallel over blocks of C (OpenMP). */
typedef struct {
    const float *a; int64_t a_rs, a_cs; /* A (m, k): element (i, p) at a[i*a_rs + p*a_cs] */
    const float *b; int64_t b_rs, b_cs; /* B (k, n): (p, j) at b[p*b_rs + j*b_cs]; conv: the padded input */
    float *c; int64_t c_rs;             /* C (m, n): (i, j) at c[i*c_rs + j] */
    const float *bias_m;                /* (m) added to row i, or NULL */
    const float *bias_n;                /* (n) added to column j, or NULL (not both) */
} ops_gemm_prob;
/* B as the implicit im2col of a convolution: b points at padded input planes (CG, hp, wp);
 * B(p, j) = b[c][oh*sh + kh*dh][ow*sw + kw*dw] with p = (c*kh_n + kh)*kw_n + kw, j = oh*ow_n + ow. */
typedef struct {
    int64_t kh, kw, sh, sw, dh, dw, hp, wp, ow;
} ops_gemm_conv;
typedef struct {
    int64_t m, n, k;
    ops_act act;
    const ops_gemm_conv *conv; /* NULL: B strided */
} ops_gemm_dims;
void ops_cpu_gemm(const ops_gemm_dims *d, const ops_gemm_prob *probs, int64_t nprob);
/* Depthwise conv (one input channel and one filter per group) on padded planes xp (planes, hp, wp),
 * plane i of channel i % C, w (C, 1, kh, kw), bias (C) or NULL, into y (planes, oh, ow): sum over
 * (kh, kw) in ascending order from 0 with fmaf, then + bias, then act. Parallel over output rows. */
void ops_cpu_dwconv(const ops_gemm_conv *cv, int64_t planes, int64_t oh, const float *xp, const float *w,
                    const float *bias, int64_t C, ops_act act, float *y);

/* Max or average pooling of planes (H, W) into (oh, ow) (ops_cpu_kernels.c): windows kh x kw at
 * strides sh, sw over the input padded by pt rows above and pl columns left, to hp x wp in all
 * (covering every window); padded cells do not count, except in the divisor kh*kw of an average
 * with count_pad. Cells are visited row by row; a NaN in a window gives NaN. */
typedef struct {
    int64_t h, w, kh, kw, sh, sw, pt, pl, hp, wp, oh, ow;
    int is_max, count_pad;
} ops_pool;
void ops_cpu_pool(const ops_pool *pp, int64_t planes, const float *x, float *y);

/* CPU references, one per operator (ops_cpu.c), declared from ops.def: ops_cpu_<name>. */
#define OP(id, nm, mi, ma, no, dc) void ops_cpu_##nm(const ops_sig *s, const float *const *in, float *const *out);
#include "ops.def"
#undef OP

#endif
