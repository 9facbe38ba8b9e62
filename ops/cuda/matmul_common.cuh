/* matmul_common.cuh: device helpers shared by the kernels of the ladder: batch offsets, the
 * fused epilogue (bias and an activation in registers before the store), guarded stores, and the
 * cp.async wrappers. Every helper is a static inline device function.
 */
#ifndef TASC_MATMUL_COMMON_CUH
#define TASC_MATMUL_COMMON_CUH

#include "matmul_impl.h"

/* Moves A, B, C to batch item blockIdx.z + a.batch0. */
static __device__ __forceinline__ void mm_batch_offsets(const mm_args &a, const float *&A,
                                                        const float *&B, float *&C) {
    long long b = (long long)blockIdx.z + a.batch0;
    A = a.A + b * a.sa;
    B = a.B + b * a.sb;
    C = a.C + b * a.sc;
}

/* The activation in float (mm_act, matmul.h); gelu in the erf form 0.5 x (1 + erf(x / sqrt 2)).
 * Shared by the fused epilogue and the separate pass (matmul_check.cu). The cheap ones are selects
 * and only the three with a transcendental branch: written as a switch over all seven, ptxas made
 * it a jump table in constant bank 2, an indirect branch for every element of the split-K and
 * convolution epilogues that call this per element, none and relu included (the 1x512x512 split
 * product 4.27 -> 4.82 us a node in a CUDA graph on the H100, bench/results-s15/reg). */
static __device__ __forceinline__ float mm_act_f(float v, int act) {
    float r = act == MM_ACT_RELU ? fmaxf(v, 0.0f) : v;
    r = act == MM_ACT_RELU6 ? fminf(fmaxf(v, 0.0f), 6.0f) : r;
    r = act == MM_ACT_HARDSWISH ? v * fminf(fmaxf(v * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f) : r;
    if (act == MM_ACT_GELU)
        r = 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
    else if (act == MM_ACT_SILU)
        r = v / (1.0f + expf(-v));
    else if (act == MM_ACT_GELU_TANH)
        r = 0.5f * v * (1.0f + tanhf(0.79788456080286535588f * (v + 0.044715f * v * v * v)));
    return r;
}

/* act(v + bias[col]). */
static __device__ __forceinline__ float mm_epi(float v, int col, const mm_args &a) {
    if (a.has_bias)
        v += __ldg(a.bias + col);
    return mm_act_f(v, a.act);
}

/* mm_epi, or (EPI false: the caller applied the epilogue already, matmul_wt_epilogue.cuh) v. */
template <bool EPI>
static __device__ __forceinline__ float mm_epi_if(float v, int col, const mm_args &a) {
    if constexpr (EPI)
        return mm_epi(v, col, a);
    else
        return v;
}

/* The scatter store (a.sc_n set; mm_store4_as<true>): output (b, row, col + i) to a.C + sc_b[b] +
 * sc_m[row] * sc_mul[col + i] + sc_n[col + i], b the batch item of this block (blockIdx.z + batch0,
 * as in mm_batch_offsets and the split-K workspace). One 16-byte store where the tables promise
 * the four are a run (sc_vec 1), or say so for this group and the address is aligned (sc_vec 2). */
template <bool EPI = true>
static __device__ __forceinline__ void mm_store4_scatter(const mm_args &a, int row, int col, float v0, float v1,
                                                         float v2, float v3) {
    const long long rb = __ldg(a.sc_b + blockIdx.z + a.batch0), rm = __ldg(a.sc_m + row);
    if (a.vec_c && a.sc_vec && col + 3 < a.N) {
        const long long n0 = __ldg(a.sc_n + col), m0 = __ldg(a.sc_mul + col), o = rb + rm * m0 + n0;
        if (a.sc_vec == 1 || (__ldg(a.sc_n + col + 3) == n0 + 3 && __ldg(a.sc_mul + col + 3) == m0 && (o & 3) == 0)) {
            *reinterpret_cast<float4 *>(a.C + o) =
                make_float4(mm_epi_if<EPI>(v0, col, a), mm_epi_if<EPI>(v1, col + 1, a), mm_epi_if<EPI>(v2, col + 2, a),
                            mm_epi_if<EPI>(v3, col + 3, a));
            return;
        }
    }
    const float v[4] = {v0, v1, v2, v3};
#pragma unroll
    for (int c = 0; c < 4; c++)
        if (col + c < a.N)
            a.C[rb + rm * __ldg(a.sc_mul + col + c) + __ldg(a.sc_n + col + c)] = mm_epi_if<EPI>(v[c], col + c, a);
}

/* Four consecutive outputs of one row, (row, col .. col+3), row < M already checked: epilogue,
 * then one 16-byte store when the row is aligned and all four are inside, else guarded scalars. */
template <bool EPI = true>
static __device__ __forceinline__ void mm_store4(float *C, const mm_args &a, int row, int col,
                                                 float v0, float v1, float v2, float v3) {
    float *p = C + (long long)row * a.N + col;
    if (a.vec_c && col + 3 < a.N) {
        float4 v = make_float4(mm_epi_if<EPI>(v0, col, a), mm_epi_if<EPI>(v1, col + 1, a),
                               mm_epi_if<EPI>(v2, col + 2, a), mm_epi_if<EPI>(v3, col + 3, a));
        *reinterpret_cast<float4 *>(p) = v;
    } else {
        if (col < a.N) p[0] = mm_epi_if<EPI>(v0, col, a);
        if (col + 1 < a.N) p[1] = mm_epi_if<EPI>(v1, col + 1, a);
        if (col + 2 < a.N) p[2] = mm_epi_if<EPI>(v2, col + 2, a);
        if (col + 3 < a.N) p[3] = mm_epi_if<EPI>(v3, col + 3, a);
    }
}

/* mm_store4 or, SC, the scatter store, chosen at compile time: the warp-tiled kernel tests a.sc_n
 * once, outside its store loops, and runs the loops instantiated for the one or the other
 * (matmul_wt_epilogue.cuh), so that its plain loops are the code they were before the scatter
 * store existed. Every other kernel (the ladder, 3xTF32) calls mm_store4 and never scatters. */
template <bool SC, bool EPI = true>
static __device__ __forceinline__ void mm_store4_as(float *C, const mm_args &a, int row, int col, float v0, float v1,
                                                    float v2, float v3) {
    if constexpr (SC)
        mm_store4_scatter<EPI>(a, row, col, v0, v1, v2, v3);
    else
        mm_store4<EPI>(C, a, row, col, v0, v1, v2, v3);
}

/* ---- cp.async (sm_80+): global -> shared without passing through registers ---------------- */

/* 4 bytes; valid 0 writes a zero (nothing is read from src). */
static __device__ __forceinline__ void mm_cp_async4(float *dst, const float *src, bool valid) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
                 "r"(valid ? 4 : 0)
                 : "memory");
}

/* 16 bytes, src 16-byte aligned; the first src_bytes are read, the rest are zero-filled. */
static __device__ __forceinline__ void mm_cp_async16(float *dst, const float *src, int src_bytes) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

/* The same on a shared-memory address (cvta'd once by the caller); src_bytes 0 or 4 (4-byte
 * copy) or 0..16 (16-byte copy). */
static __device__ __forceinline__ void mm_cp_async4_u(unsigned dst, const float *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}

static __device__ __forceinline__ void mm_cp_async16_u(unsigned dst, const float *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}

static __device__ __forceinline__ void mm_cp_async_commit(void) {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most N committed groups are still in flight. */
template <int N>
static __device__ __forceinline__ void mm_cp_async_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif
