/* ops_norm.cu: CUDA implementations of the reductions and normalisations -- softmax, layernorm,
 * globalavgpool and reducemax on our kernels, batchnorm (inference) on cuDNN with our kernel where
 * cuDNN refuses the configuration (found out in the setup run).
 *
 * As in the CPU reference, sums are taken in double and every output is rounded once. Reductions
 * use a fixed tree over a fixed launch shape, so results are deterministic run to run; they can
 * differ from the CPU's sequential double sums only in double rounding, far below float's.
 * Softmax and layernorm over contiguous rows of up to 1024 hold a row in one warp's registers
 * (float4 loads where aligned, one exp per element, four rows per block); longer rows take the
 * general kernels. Both take the runtime's producer fusions on rows (ops.h: fuse_scale, fuse_in2).
 */
#include <math.h>
#include <stdint.h>

#include "ops_cuda.h"

/* --- warp and block reductions -------------------------------------------------------------- */

static __device__ __forceinline__ double oc_warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* max that lets a NaN win, as the CPU reference's scan does */
static __device__ __forceinline__ float oc_max_nan(float a, float b) {
    return a != a ? a : b != b ? b : b > a ? b : a;
}

static __device__ __forceinline__ float oc_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v = oc_max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
 * sh: 32 doubles of shared memory. */
static __device__ double oc_block_sum(double v, double *sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = oc_warp_sum(v);
    __syncthreads(); /* sh may still be read from the previous call */
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    double t = lane < nw ? sh[lane] : 0.0;
    return oc_warp_sum(t);
}

/* --- rows held in registers ---------------------------------------------------------------- */

/* A row of L <= 128 * NV elements held by one warp: lane's element e = 4 j + k (j < NV, k < 4) is
 * the row's element (32 j + lane) * 4 + k, so that a lane's four of each j are one float4. The
 * mapping, and with it every sum's order, is the same whether the row is read by float4 (vec: L a
 * multiple of 4, every pointer 16-byte aligned) or by scalars. */
template <int NV> struct oc_row {
    float v[4 * NV];
};

static __device__ __forceinline__ int oc_row_idx(int e, int lane) { return ((e >> 2) * 32 + lane) * 4 + (e & 3); }

/* q = x[i .. i + 4), zeros past L (VEC: L is a multiple of 4 and x 16-byte aligned) */
template <int VEC>
static __device__ __forceinline__ void oc_load4(float *q, const float *__restrict__ x, int i, int L) {
    if (VEC) {
        const float4 t = i < L ? *reinterpret_cast<const float4 *>(x + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        q[0] = t.x;
        q[1] = t.y;
        q[2] = t.z;
        q[3] = t.w;
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++)
            q[k] = i + k < L ? x[i + k] : 0.0f;
    }
}

template <int VEC>
static __device__ __forceinline__ void oc_store4(float *__restrict__ y, const float *q, int i, int L) {
    if (VEC) {
        if (i < L)
            *reinterpret_cast<float4 *>(y + i) = make_float4(q[0], q[1], q[2], q[3]);
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (i + k < L)
                y[i + k] = q[k];
    }
}

template <int NV, int VEC>
static __device__ __forceinline__ void oc_row_load(oc_row<NV> &r, const float *__restrict__ x, int L, int lane) {
#pragma unroll
    for (int j = 0; j < NV; j++)
        oc_load4<VEC>(r.v + 4 * j, x, (j * 32 + lane) * 4, L);
}

template <int NV, int VEC>
static __device__ __forceinline__ void oc_row_store(float *__restrict__ y, const oc_row<NV> &r, int L, int lane) {
#pragma unroll
    for (int j = 0; j < NV; j++)
        oc_store4<VEC>(y, r.v + 4 * j, (j * 32 + lane) * 4, L);
}

static int oc_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* 1 if the rows of L can be read by float4 through every non-NULL pointer of p[0..n) */
static int oc_rows_vec(int64_t L, const void *const *p, int n) {
    int ok = L % 4 == 0;
    for (int i = 0; i < n; i++)
        ok = ok && (!p[i] || oc_aligned16(p[i]));
    return ok;
}

#define OC_ROW_MAX 1024 /* rows up to this length are held in registers: NV = ceil(L / 128) <= 8 */
#define OC_ROW_THREADS 128 /* four rows per block */

/* --- softmax -------------------------------------------------------------------------------- */

/* Rows of L <= 128 NV contiguous elements (axis last), one warp per row held in registers: one
 * exp per element. scale (the runtime's fused smul, a device scalar; NULL: none) multiplies x in
 * float first, rounded as the smul node rounds it. */
template <int NV, int VEC>
__global__ void oc_softmax_reg_kernel(float *__restrict__ y, const float *__restrict__ x,
                                      const float *__restrict__ scale, int64_t rows, int L) {
    const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    for (int64_t r = blockIdx.x * (int64_t)wpb + (threadIdx.x >> 5); r < rows; r += (int64_t)gridDim.x * wpb) {
        oc_row<NV> a;
        oc_row_load<NV, VEC>(a, x + r * L, L, lane);
        if (scale) {
            const float s = *scale;
#pragma unroll
            for (int e = 0; e < 4 * NV; e++)
                a.v[e] = a.v[e] * s;
        }
        float mx = -INFINITY;
#pragma unroll
        for (int e = 0; e < 4 * NV; e++)
            if (oc_row_idx(e, lane) < L)
                mx = oc_max_nan(mx, a.v[e]);
        mx = oc_warp_max(mx);
        double ex[4 * NV], sum = 0.0;
#pragma unroll
        for (int e = 0; e < 4 * NV; e++) {
            ex[e] = oc_row_idx(e, lane) < L ? exp((double)a.v[e] - (double)mx) : 0.0;
            sum += ex[e];
        }
        const double inv = 1.0 / oc_warp_sum(sum);
#pragma unroll
        for (int e = 0; e < 4 * NV; e++)
            a.v[e] = (float)(ex[e] * inv);
        oc_row_store<NV, VEC>(y + r * L, a, L, lane);
    }
}

/* Rows of any length (axis last): one warp per row, exp computed twice per element. */
__global__ void oc_softmax_rows_kernel(float *__restrict__ y, const float *__restrict__ x,
                                       const float *__restrict__ scale, int64_t rows, int64_t L) {
    const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    const float s = scale ? *scale : 1.0f;
    for (int64_t r = blockIdx.x * (int64_t)wpb + (threadIdx.x >> 5); r < rows; r += (int64_t)gridDim.x * wpb) {
        const float *xr = x + r * L;
        float *yr = y + r * L;
        float mx = -INFINITY;
        for (int64_t l = lane; l < L; l += 32)
            mx = oc_max_nan(mx, scale ? xr[l] * s : xr[l]);
        mx = oc_warp_max(mx);
        double sum = 0.0;
        for (int64_t l = lane; l < L; l += 32)
            sum += exp((double)(scale ? xr[l] * s : xr[l]) - (double)mx);
        sum = oc_warp_sum(sum);
        for (int64_t l = lane; l < L; l += 32)
            yr[l] = (float)(exp((double)(scale ? xr[l] * s : xr[l]) - (double)mx) / sum);
    }
}

/* Axis with a stride (inner > 1): one thread per (outer, inner) column, as the CPU reference. */
__global__ void oc_softmax_cols_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t outer, int64_t L,
                                       int64_t inner) {
    for (int64_t col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; col < outer * inner;
         col += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = col / inner, i = col - o * inner;
        const float *xc = x + o * L * inner + i;
        float *yc = y + o * L * inner + i;
        float mx = xc[0];
        for (int64_t l = 1; l < L; l++)
            mx = oc_max_nan(mx, xc[l * inner]);
        double sum = 0.0;
        for (int64_t l = 0; l < L; l++)
            sum += exp((double)xc[l * inner] - (double)mx);
        for (int64_t l = 0; l < L; l++)
            yc[l * inner] = (float)(exp((double)xc[l * inner] - (double)mx) / sum);
    }
}

#define OC_NV_CASES(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8)

static void oc_softmax_rows(cudaStream_t st, float *y, const float *x, const float *scale, int64_t rows, int64_t L) {
    if (L > OC_ROW_MAX) {
        oc_softmax_rows_kernel<<<oc_blocks(rows, OC_THREADS / 32), OC_THREADS, 0, st>>>(y, x, scale, rows, L);
        return;
    }
    const void *ptrs[2] = {y, x};
    const int vec = oc_rows_vec(L, ptrs, 2);
    const unsigned blocks = oc_blocks(rows, OC_ROW_THREADS / 32);
    switch ((L + 127) / 128) {
#define OC_SOFTMAX_NV(nv) \
    case nv: \
        if (vec) \
            oc_softmax_reg_kernel<nv, 1><<<blocks, OC_ROW_THREADS, 0, st>>>(y, x, scale, rows, (int)L); \
        else \
            oc_softmax_reg_kernel<nv, 0><<<blocks, OC_ROW_THREADS, 0, st>>>(y, x, scale, rows, (int)L); \
        break;
        OC_NV_CASES(OC_SOFTMAX_NV)
#undef OC_SOFTMAX_NV
    }
}

/* env->fuse_scale (the runtime's fused smul, rows only): softmax(scale * x) */
OPS_CUDA_FN(softmax) {
    const ops_shape *xs = &s->in[0];
    const int64_t axis = s->p->v[PM_AXIS];
    int64_t outer = 1, inner = 1;
    for (int32_t i = 0; i < xs->rank; i++) {
        if (i < axis)
            outer *= xs->dims[i];
        else if (i > axis)
            inner *= xs->dims[i];
    }
    const int64_t L = xs->dims[axis];
    if (env->fuse_scale && inner != 1)
        return oc_fail(env, "internal error: a fused scale on a softmax over a strided axis");
    if (outer * inner * L <= 0)
        return 0;
    const cudaStream_t st = oc_stream(env);
    if (inner == 1)
        oc_softmax_rows(st, out[0], in[0], env->fuse_scale, outer, L);
    else
        oc_softmax_cols_kernel<<<oc_blocks(outer * inner, OC_THREADS), OC_THREADS, 0, st>>>(out[0], in[0], outer, L,
                                                                                            inner);
    OC_LAUNCH_TRY(env);
    return 0;
}

/* --- layernorm ------------------------------------------------------------------------------ */

/* Rows of L <= 128 NV, one warp per row held in registers: the mean, then the biased variance of
 * the deviations, both in double. x2 (the runtime's fused ewadd; NULL: none) is added to x in
 * float first, rounded as the ewadd node rounds it. */
template <int NV, int VEC>
__global__ void oc_layernorm_reg_kernel(float *__restrict__ y, const float *__restrict__ x,
                                        const float *__restrict__ x2, const float *__restrict__ gamma,
                                        const float *__restrict__ beta, int64_t rows, int L, double eps) {
    const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    for (int64_t r = blockIdx.x * (int64_t)wpb + (threadIdx.x >> 5); r < rows; r += (int64_t)gridDim.x * wpb) {
        oc_row<NV> a;
        oc_row_load<NV, VEC>(a, x + r * L, L, lane);
        if (x2) {
            oc_row<NV> b;
            oc_row_load<NV, VEC>(b, x2 + r * L, L, lane);
#pragma unroll
            for (int e = 0; e < 4 * NV; e++)
                a.v[e] = a.v[e] + b.v[e];
        }
        double sum = 0.0;
#pragma unroll
        for (int e = 0; e < 4 * NV; e++)
            sum += oc_row_idx(e, lane) < L ? (double)a.v[e] : 0.0;
        const double mean = oc_warp_sum(sum) / (double)L;
        double q = 0.0;
#pragma unroll
        for (int e = 0; e < 4 * NV; e++) {
            const double d = oc_row_idx(e, lane) < L ? (double)a.v[e] - mean : 0.0;
            q += d * d;
        }
        const double inv = 1.0 / sqrt(oc_warp_sum(q) / (double)L + eps);
#pragma unroll
        for (int j = 0; j < NV; j++) { /* gamma and beta four at a time: fewer live registers */
            const int i = (j * 32 + lane) * 4;
            float gv[4], bv[4];
            if (gamma)
                oc_load4<VEC>(gv, gamma, i, L);
            if (beta)
                oc_load4<VEC>(bv, beta, i, L);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                double t = ((double)a.v[4 * j + k] - mean) * inv;
                if (gamma)
                    t *= gv[k];
                if (beta)
                    t += bv[k];
                a.v[4 * j + k] = (float)t;
            }
            oc_store4<VEC>(y + r * L, a.v + 4 * j, i, L);
        }
    }
}

/* Rows of any length: one block per row, x read three times; x2 as in the kernel above. */
__global__ void oc_layernorm_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ x2,
                                    const float *__restrict__ gamma, const float *__restrict__ beta, int64_t rows,
                                    int64_t L, double eps) {
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * L, *x2r = x2 ? x2 + r * L : NULL;
        float *yr = y + r * L;
        double s = 0.0;
        for (int64_t l = threadIdx.x; l < L; l += blockDim.x)
            s += x2r ? xr[l] + x2r[l] : xr[l];
        const double mean = oc_block_sum(s, sh) / (double)L;
        double v = 0.0;
        for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
            double d = (double)(x2r ? xr[l] + x2r[l] : xr[l]) - mean;
            v += d * d;
        }
        const double var = oc_block_sum(v, sh) / (double)L;
        const double inv = 1.0 / sqrt(var + eps);
        for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
            double t = ((double)(x2r ? xr[l] + x2r[l] : xr[l]) - mean) * inv;
            if (gamma)
                t *= gamma[l];
            if (beta)
                t += beta[l];
            yr[l] = (float)t;
        }
    }
}

static void oc_layernorm_rows(cudaStream_t st, float *y, const float *x, const float *x2, const float *gamma,
                              const float *beta, int64_t rows, int64_t L, double eps) {
    if (L > OC_ROW_MAX) {
        const int threads = L >= 1024 ? 512 : L >= 256 ? 256 : 128;
        oc_layernorm_kernel<<<oc_blocks(rows, 1), threads, 0, st>>>(y, x, x2, gamma, beta, rows, L, eps);
        return;
    }
    const void *ptrs[5] = {y, x, x2, gamma, beta};
    const int vec = oc_rows_vec(L, ptrs, 5);
    const unsigned blocks = oc_blocks(rows, OC_ROW_THREADS / 32);
    switch ((L + 127) / 128) {
#define OC_LAYERNORM_NV(nv) \
    case nv: \
        if (vec) \
            oc_layernorm_reg_kernel<nv, 1> \
                <<<blocks, OC_ROW_THREADS, 0, st>>>(y, x, x2, gamma, beta, rows, (int)L, eps); \
        else \
            oc_layernorm_reg_kernel<nv, 0> \
                <<<blocks, OC_ROW_THREADS, 0, st>>>(y, x, x2, gamma, beta, rows, (int)L, eps); \
        break;
        OC_NV_CASES(OC_LAYERNORM_NV)
#undef OC_LAYERNORM_NV
    }
}

/* Normalising a middle dim block (axis_end before the rank; the channels of NCHW): the L
 * elements of a position are inner apart, so a row per block would read them strided. Instead a
 * block takes W consecutive positions (threadIdx.x: coalesced reads of each normalised index) and
 * splits each position's L elements over G threads (threadIdx.y, l = y, y + G, ...), whose
 * partial sums thread y = 0 adds in order of y. W and G depend on the shape only. */
__global__ void oc_layernorm_cols_kernel(float *__restrict__ y, const float *__restrict__ x,
                                         const float *__restrict__ gamma, const float *__restrict__ beta,
                                         int64_t positions, int64_t L, int64_t inner, double eps) {
    __shared__ double part[1024];
    __shared__ double stat[2][32];
    const int W = blockDim.x, G = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    const int64_t tiles = (positions + W - 1) / W;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) { /* uniform per block: the syncs are safe */
        const int64_t q = t * W + tx;
        const int live = q < positions;
        const int64_t base = live ? q / inner * L * inner + q % inner : 0;
        const float *xq = x + base;
        double s = 0.0;
        for (int64_t l = ty; live && l < L; l += G)
            s += xq[l * inner];
        part[ty * W + tx] = s;
        __syncthreads();
        if (ty == 0) {
            double m = 0.0;
            for (int g = 0; g < G; g++)
                m += part[g * W + tx];
            stat[0][tx] = m / (double)L;
        }
        __syncthreads();
        const double mean = stat[0][tx];
        double v = 0.0;
        for (int64_t l = ty; live && l < L; l += G) {
            double d = (double)xq[l * inner] - mean;
            v += d * d;
        }
        part[ty * W + tx] = v;
        __syncthreads();
        if (ty == 0) {
            double m = 0.0;
            for (int g = 0; g < G; g++)
                m += part[g * W + tx];
            stat[1][tx] = 1.0 / sqrt(m / (double)L + eps);
        }
        __syncthreads();
        const double inv = stat[1][tx];
        float *yq = y + base;
        for (int64_t l = ty; live && l < L; l += G) {
            double u = ((double)xq[l * inner] - mean) * inv;
            if (gamma)
                u *= gamma[l];
            if (beta)
                u += beta[l];
            yq[l * inner] = (float)u;
        }
    }
}

/* normalised dims [axis, axis_end) (axis_end 0: the rank): outer positions before them, inner after;
 * env->fuse_in2 (the runtime's fused ewadd, rows only): layernorm(x + fuse_in2) */
OPS_CUDA_FN(layernorm) {
    const ops_shape *xs = &s->in[0];
    const int64_t axis = s->p->v[PM_AXIS];
    const int64_t end = s->p->v[PM_AXIS_END] ? s->p->v[PM_AXIS_END] : xs->rank;
    int64_t outer = 1, L = 1, inner = 1;
    for (int32_t i = 0; i < xs->rank; i++) {
        if (i < axis)
            outer *= xs->dims[i];
        else if (i < end)
            L *= xs->dims[i];
        else
            inner *= xs->dims[i];
    }
    if (env->fuse_in2 && inner != 1)
        return oc_fail(env, "internal error: a fused add on a layernorm over middle dims");
    if (outer * L * inner <= 0)
        return 0;
    const double eps = (double)ops_p2f(s->p->v[PM_EPS]);
    const float *gamma = s->n_in > 1 ? in[1] : NULL, *beta = s->n_in > 2 ? in[2] : NULL;
    if (inner == 1) {
        oc_layernorm_rows(oc_stream(env), out[0], in[0], env->fuse_in2, gamma, beta, outer, L, eps);
    } else {
        /* narrower position tiles (down to 8: a 32-byte sector) until the tiles cover the SMs, then
         * more threads per position while the grid is under 64K threads */
        const int64_t positions = outer * inner;
        int W = 32, G = 1;
        while (W > 8 && (positions + W - 1) / W < 132)
            W /= 2;
        const int64_t tiles = (positions + W - 1) / W;
        while (W * G * 2 <= 1024 && G * 2 <= L && tiles * W * G < 65536)
            G *= 2;
        oc_layernorm_cols_kernel<<<oc_blocks(tiles, 1), dim3(W, G), 0, oc_stream(env)>>>(
            out[0], in[0], gamma, beta, positions, L, inner, eps);
    }
    OC_LAUNCH_TRY(env);
    return 0;
}

/* --- globalavgpool -------------------------------------------------------------------------- */

/* One warp per (n, c) plane of HW elements. */
__global__ void oc_gap_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t planes, int64_t HW) {
    const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    for (int64_t p = blockIdx.x * (int64_t)wpb + (threadIdx.x >> 5); p < planes; p += (int64_t)gridDim.x * wpb) {
        const float *xp = x + p * HW;
        double s = 0.0;
        for (int64_t i = lane; i < HW; i += 32)
            s += xp[i];
        s = oc_warp_sum(s);
        if (lane == 0)
            y[p] = (float)(s / (double)HW);
    }
}

OPS_CUDA_FN(globalavgpool) {
    const ops_shape *xs = &s->in[0];
    const int64_t planes = xs->dims[0] * xs->dims[1], HW = xs->dims[2] * xs->dims[3];
    if (planes <= 0 || HW <= 0)
        return 0;
    oc_gap_kernel<<<oc_blocks(planes, OC_THREADS / 32), OC_THREADS, 0, oc_stream(env)>>>(out[0], in[0], planes, HW);
    OC_LAUNCH_TRY(env);
    return 0;
}

/* --- batchnorm ------------------------------------------------------------------------------ */

/* (x - mean) * scale / sqrt(var + eps) + bias per channel, in double as the CPU reference. */
__global__ void oc_bn_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ scale,
                             const float *__restrict__ bias, const float *__restrict__ mean,
                             const float *__restrict__ var, int64_t n, int64_t C, int64_t inner, double eps) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = (i / inner) % C;
        double a = (double)scale[c] / sqrt((double)var[c] + eps);
        y[i] = (float)(((double)x[i] - (double)mean[c]) * a + (double)bias[c]);
    }
}

typedef struct {
    cudnnTensorDescriptor_t x;   /* (N, C, inner, 1) */
    cudnnTensorDescriptor_t bn;  /* (1, C, 1, 1) */
    int own;                     /* 1: cuDNN refused; our kernel */
} oc_bn_state;

static void oc_bn_free(void *p) {
    oc_bn_state *st = (oc_bn_state *)p;
    if (st->x)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->x));
    if (st->bn)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->bn));
    free(st);
}

static int oc_bn_own(ops_cuda_env *env, const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0];
    const int64_t n = ops_shape_numel(xs), N = xs->dims[0], C = xs->dims[1];
    const int64_t inner = n / (N * C > 0 ? N * C : 1);
    if (n <= 0)
        return 0;
    oc_bn_kernel<<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(
        out[0], in[0], in[1], in[2], in[3], in[4], n, C, inner, (double)ops_p2f(s->p->v[PM_EPS]));
    OC_LAUNCH_TRY(env);
    return 0;
}

static int oc_bn_cudnn(ops_cuda_env *env, oc_bn_state *st, const ops_sig *s, const float *const *in, float *const *out) {
    const float one = 1.0f, zero = 0.0f;
    OC_CUDNN_TRY(env, cudnnBatchNormalizationForwardInference(
                          oc_cudnn(env), CUDNN_BATCHNORM_SPATIAL, &one, &zero, st->x, in[0], st->x, out[0], st->bn,
                          in[1], in[2], in[3], in[4], (double)ops_p2f(s->p->v[PM_EPS])));
    return 0;
}

OPS_CUDA_FN(batchnorm) {
    oc_bn_state *st = (oc_bn_state *)oc_node_state(env);
    if (!st) {
        if (!oc_setup_phase(env))
            return oc_fail(env, "internal error: no batchnorm state after setup");
        st = (oc_bn_state *)calloc(1, sizeof *st);
        if (!st)
            return oc_fail(env, "out of memory");
        oc_node_state_set(env, st, oc_bn_free);
        const ops_shape *xs = &s->in[0];
        const int64_t n = ops_shape_numel(xs), N = xs->dims[0], C = xs->dims[1];
        const int64_t inner = n / (N * C > 0 ? N * C : 1);
        if (N > INT32_MAX || C > INT32_MAX || inner > INT32_MAX || n > INT32_MAX) {
            st->own = 1;
        } else {
            CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->x));
            CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->bn));
            CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)N, (int)C,
                                                   (int)inner, 1));
            CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->bn, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, (int)C, 1, 1));
            if (oc_bn_cudnn(env, st, s, in, out) < 0) {
                if (oc_verbose(env))
                    fprintf(stderr, "tasc: node '%s': batchnorm on our kernel (cuDNN: %s)\n", oc_node_name(env),
                            env->err);
                st->own = 1;
            } else {
                return 0;
            }
        }
    }
    return st->own ? oc_bn_own(env, s, in, out) : oc_bn_cudnn(env, st, s, in, out);
}

/* --- reducemax ------------------------------------------------------------------------------ */

/* The kept dims (the output's order) and the reduced dims of x, with x's strides. */
typedef struct {
    int32_t nk, nr;
    int64_t kd[OPS_MAX_DIMS], kst[OPS_MAX_DIMS], rd[OPS_MAX_DIMS], rst[OPS_MAX_DIMS];
} oc_reduce_dims;

static __device__ __forceinline__ int64_t oc_off(int64_t idx, int32_t r, const int64_t *d, const int64_t *st) {
    int64_t off = 0;
    for (int32_t i = r - 1; i >= 0; i--) {
        off += (idx % d[i]) * st[i];
        idx /= d[i];
    }
    return off;
}

/* One warp per output element; max is exact, so the lanes' order does not matter (a NaN wins, as
 * in the CPU reference). */
__global__ void oc_reducemax_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t n_out, int64_t n_red,
                                    oc_reduce_dims a) {
    const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    for (int64_t o = blockIdx.x * (int64_t)wpb + (threadIdx.x >> 5); o < n_out; o += (int64_t)gridDim.x * wpb) {
        const int64_t base = oc_off(o, a.nk, a.kd, a.kst);
        float m = -INFINITY;
        for (int64_t q = lane; q < n_red; q += 32)
            m = oc_max_nan(m, x[base + oc_off(q, a.nr, a.rd, a.rst)]);
        m = oc_warp_max(m);
        if (lane == 0)
            y[o] = m;
    }
}

OPS_CUDA_FN(reducemax) {
    const ops_shape *xs = &s->in[0];
    int red[OPS_MAX_DIMS] = {0};
    for (int32_t k = 0; k < s->p->n_list; k++)
        red[s->p->list[k]] = 1;
    oc_reduce_dims a;
    a.nk = a.nr = 0;
    int64_t acc = 1, n_out = 1, n_red = 1, xst[OPS_MAX_DIMS];
    for (int32_t i = xs->rank - 1; i >= 0; i--) {
        xst[i] = acc;
        acc *= xs->dims[i];
    }
    for (int32_t i = 0; i < xs->rank; i++) {
        if (red[i] || s->p->n_list == 0) {
            a.rd[a.nr] = xs->dims[i];
            a.rst[a.nr++] = xst[i];
            n_red *= xs->dims[i];
        } else {
            a.kd[a.nk] = xs->dims[i];
            a.kst[a.nk++] = xst[i];
            n_out *= xs->dims[i];
        }
    }
    if (n_out <= 0 || n_red <= 0)
        return 0;
    const int wpb = OC_THREADS / 32;
    int64_t blocks = (n_out + wpb - 1) / wpb;
    if (blocks > 65535 * 16)
        blocks = 65535 * 16;
    oc_reducemax_kernel<<<(unsigned)blocks, OC_THREADS, 0, oc_stream(env)>>>(out[0], in[0], n_out, n_red, a);
    OC_LAUNCH_TRY(env);
    return 0;
}
