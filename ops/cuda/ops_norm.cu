/* ops_norm.cu: CUDA implementations of the reductions and normalisations -- softmax, layernorm,
 * globalavgpool on our kernels, batchnorm (inference) on cuDNN with our kernel where cuDNN refuses
 * the configuration (found out in the setup run).
 *
 * As in the CPU reference, sums are taken in double and every output is rounded once. Reductions
 * use a fixed tree over a fixed launch shape, so results are deterministic run to run; they can
 * differ from the CPU's sequential double sums only in double rounding, far below float's.
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

/* --- softmax -------------------------------------------------------------------------------- */

/* Rows of L contiguous elements (axis last): one warp per row. */
__global__ void oc_softmax_rows_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t rows, int64_t L) {
    const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    for (int64_t r = blockIdx.x * (int64_t)wpb + (threadIdx.x >> 5); r < rows; r += (int64_t)gridDim.x * wpb) {
        const float *xr = x + r * L;
        float *yr = y + r * L;
        float mx = -INFINITY;
        for (int64_t l = lane; l < L; l += 32)
            mx = oc_max_nan(mx, xr[l]);
        mx = oc_warp_max(mx);
        double sum = 0.0;
        for (int64_t l = lane; l < L; l += 32)
            sum += exp((double)xr[l] - (double)mx);
        sum = oc_warp_sum(sum);
        for (int64_t l = lane; l < L; l += 32)
            yr[l] = (float)(exp((double)xr[l] - (double)mx) / sum);
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
    if (outer * inner * L <= 0)
        return 0;
    const cudaStream_t st = oc_stream(env);
    if (inner == 1)
        oc_softmax_rows_kernel<<<oc_blocks(outer, OC_THREADS / 32), OC_THREADS, 0, st>>>(out[0], in[0], outer, L);
    else
        oc_softmax_cols_kernel<<<oc_blocks(outer * inner, OC_THREADS), OC_THREADS, 0, st>>>(out[0], in[0], outer, L,
                                                                                            inner);
    OC_LAUNCH_TRY(env);
    return 0;
}

/* --- layernorm ------------------------------------------------------------------------------ */

/* One block per row of L: mean, then the biased variance of the deviations, both in double. */
__global__ void oc_layernorm_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ gamma,
                                    const float *__restrict__ beta, int64_t rows, int64_t L, double eps) {
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * L;
        float *yr = y + r * L;
        double s = 0.0;
        for (int64_t l = threadIdx.x; l < L; l += blockDim.x)
            s += xr[l];
        const double mean = oc_block_sum(s, sh) / (double)L;
        double v = 0.0;
        for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
            double d = (double)xr[l] - mean;
            v += d * d;
        }
        const double var = oc_block_sum(v, sh) / (double)L;
        const double inv = 1.0 / sqrt(var + eps);
        for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
            double t = ((double)xr[l] - mean) * inv;
            if (gamma)
                t *= gamma[l];
            if (beta)
                t += beta[l];
            yr[l] = (float)t;
        }
    }
}

OPS_CUDA_FN(layernorm) {
    const ops_shape *xs = &s->in[0];
    const int64_t axis = s->p->v[PM_AXIS];
    int64_t outer = 1;
    for (int32_t i = 0; i < axis; i++)
        outer *= xs->dims[i];
    const int64_t n = ops_shape_numel(xs);
    if (n <= 0)
        return 0;
    const int64_t L = n / outer;
    const double eps = (double)ops_p2f(s->p->v[PM_EPS]);
    const float *gamma = s->n_in > 1 ? in[1] : NULL, *beta = s->n_in > 2 ? in[2] : NULL;
    const int threads = L >= 1024 ? 512 : L >= 256 ? 256 : 128;
    oc_layernorm_kernel<<<oc_blocks(outer, 1), threads, 0, oc_stream(env)>>>(out[0], in[0], gamma, beta, outer, L,
                                                                           eps);
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
