/* matmul_check.cu: what the tests and the benchmark check the kernels with: random normal data
 * from a counter-based generator (deterministic per seed and index), an fp64 reference matmul on
 * the GPU (shared-memory tiled, double accumulation, epilogue in double), the relative Frobenius
 * error with a fixed reduction order (deterministic), and the separate bias+act kernel that a
 * cuBLAS matmul needs to do what our fused epilogue does.
 */
#include <math.h>

#include <algorithm>
#include <vector>

#include "matmul_common.cuh"

/* ---- random normal data ---------------------------------------------------------------------- */

static __device__ __forceinline__ unsigned long long mm_splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__global__ void mm_fill_normal_kernel(float *x, long long n, unsigned long long seed) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned long long h1 = mm_splitmix64(seed * 0xD1B54A32D192ED03ull + (unsigned long long)i);
        unsigned long long h2 = mm_splitmix64(h1);
        double u1 = ((double)(h1 >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
        double u2 = (double)(h2 >> 11) * 0x1.0p-53;         /* [0, 1) */
        x[i] = (float)(sqrt(-2.0 * log(u1)) * cospi(2.0 * u2)); /* Box-Muller */
    }
}

void mm_fill_normal(float *x, int64_t n, uint64_t seed, cudaStream_t s) {
    if (n <= 0)
        return;
    long long blocks = (n + 255) / 256;
    if (blocks > 65536)
        blocks = 65536;
    mm_fill_normal_kernel<<<(unsigned)blocks, 256, 0, s>>>(x, n, seed);
    CUDA_LAUNCH_CHECK();
}

/* ---- fp64 reference ------------------------------------------------------------------------- */

#define REF_T 16

/* The activations of mm_act in double. */
static __device__ double mm_act_f64(double v, int act) {
    switch (act) {
    case MM_ACT_RELU:
        return v > 0.0 ? v : 0.0;
    case MM_ACT_GELU:
        return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
    case MM_ACT_SILU:
        return v / (1.0 + exp(-v));
    case MM_ACT_GELU_TANH:
        return 0.5 * v * (1.0 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
    case MM_ACT_RELU6:
        return v < 0.0 ? 0.0 : v > 6.0 ? 6.0 : v;
    case MM_ACT_HARDSWISH: {
        double t = v / 6.0 + 0.5;
        return v * (t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t);
    }
    default:
        return v;
    }
}

/* ref: (batch, M, N) packed; grid.x tiles of 16x16 outputs, grid.z batch items from batch0 */
__global__ void __launch_bounds__(REF_T *REF_T) mm_ref_kernel(mm_args a, double *ref) {
    __shared__ double sA[REF_T][REF_T + 1]; /* (16 rows, 16 k) */
    __shared__ double sB[REF_T][REF_T + 1]; /* (16 k, 16 columns) */
    long long b = (long long)blockIdx.z + a.batch0;
    const float *A = a.A + b * a.sa; /* (M, K) */
    const float *B = a.B + b * a.sb; /* (K, N) */
    int tiles_n = (a.N + REF_T - 1) / REF_T;
    int row = (int)(blockIdx.x / tiles_n) * REF_T + threadIdx.y;
    int col = (int)(blockIdx.x % tiles_n) * REF_T + threadIdx.x;
    double acc = 0.0;
    for (int k0 = 0; k0 < a.K; k0 += REF_T) {
        int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        sA[threadIdx.y][threadIdx.x] = (row < a.M && ka < a.K) ? (double)A[(long long)row * a.K + ka] : 0.0;
        sB[threadIdx.y][threadIdx.x] = (kb < a.K && col < a.N) ? (double)B[(long long)kb * a.N + col] : 0.0;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < REF_T; kk++)
            acc = fma(sA[threadIdx.y][kk], sB[kk][threadIdx.x], acc);
        __syncthreads();
    }
    if (row >= a.M || col >= a.N)
        return;
    if (a.has_bias)
        acc += (double)a.bias[col];
    ref[(b * a.M + row) * a.N + col] = mm_act_f64(acc, a.act);
}

void mm_reference_f64(const mm_problem *p, const float *A, const float *B, const float *bias,
                      double *ref, cudaStream_t s) {
    mm_args a = mm_args_make(p, A, B, bias, NULL);
    long long tiles = ((p->m + REF_T - 1) / REF_T) * ((p->n + REF_T - 1) / REF_T);
    mm_batch_chunks(a, p->batch, [&](const mm_args &c, unsigned items) {
        mm_ref_kernel<<<dim3((unsigned)tiles, 1, items), dim3(REF_T, REF_T), 0, s>>>(c, ref);
        CUDA_LAUNCH_CHECK();
    });
}

/* ---- relative error -------------------------------------------------------------------------- */

#define ERR_BLOCKS 512
#define ERR_THREADS 256

/* part[2*block] = sum (c - ref)^2, part[2*block+1] = sum ref^2 over this block's elements */
__global__ void __launch_bounds__(ERR_THREADS) mm_err_kernel(const float *c, const double *ref, long long n,
                                                             double *part) {
    __shared__ double s_num[ERR_THREADS], s_den[ERR_THREADS];
    double num = 0.0, den = 0.0;
    for (long long i = blockIdx.x * (long long)ERR_THREADS + threadIdx.x; i < n;
         i += (long long)ERR_BLOCKS * ERR_THREADS) {
        double r = ref[i], d = (double)c[i] - r;
        num += d * d;
        den += r * r;
    }
    s_num[threadIdx.x] = num;
    s_den[threadIdx.x] = den;
    __syncthreads();
    for (int w = ERR_THREADS / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            s_num[threadIdx.x] += s_num[threadIdx.x + w];
            s_den[threadIdx.x] += s_den[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        part[2 * blockIdx.x] = s_num[0];
        part[2 * blockIdx.x + 1] = s_den[0];
    }
}

double mm_rel_error(const float *c, const double *ref, int64_t n, cudaStream_t s) {
    double *d_part;
    std::vector<double> part(2 * ERR_BLOCKS);
    CUDA_CHECK(cudaMallocAsync((void **)&d_part, part.size() * sizeof(double), s));
    mm_err_kernel<<<ERR_BLOCKS, ERR_THREADS, 0, s>>>(c, ref, n, d_part);
    CUDA_LAUNCH_CHECK();
    CUDA_CHECK(cudaMemcpyAsync(part.data(), d_part, part.size() * sizeof(double), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaFreeAsync(d_part, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    double num = 0.0, den = 0.0;
    for (int b = 0; b < ERR_BLOCKS; b++) {
        num += part[2 * b];
        den += part[2 * b + 1];
    }
    if (!isfinite(num))
        return NAN;
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* ---- separate bias + activation -------------------------------------------------------------- */

static __device__ __forceinline__ float mm_act_apply(float v, int act) { return mm_act_f(v, act); }

/* x (rows, n): one float4 per step when n % 4 == 0 (x 16-byte aligned), else one float */
__global__ void mm_bias_act_kernel(float *x, const float *bias, long long total, int n, int act, int vec) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i0 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (vec) {
        float4 *x4 = reinterpret_cast<float4 *>(x);
        for (long long i = i0; i < total / 4; i += stride) {
            float4 v = x4[i];
            int col = (int)((i * 4) % n);
            if (bias) {
                float4 b = __ldg(reinterpret_cast<const float4 *>(bias + col));
                v.x += b.x; v.y += b.y; v.z += b.z; v.w += b.w;
            }
            v.x = mm_act_apply(v.x, act); v.y = mm_act_apply(v.y, act);
            v.z = mm_act_apply(v.z, act); v.w = mm_act_apply(v.w, act);
            x4[i] = v;
        }
    } else {
        for (long long i = i0; i < total; i += stride) {
            float v = x[i];
            if (bias)
                v += __ldg(bias + i % n);
            x[i] = mm_act_apply(v, act);
        }
    }
}

void mm_bias_act(float *x, const float *bias, int64_t rows, int64_t n, mm_act act, cudaStream_t s) {
    long long total = rows * n;
    if (total <= 0)
        return;
    int vec = n % 4 == 0 && (uintptr_t)x % 16 == 0 && (!bias || (uintptr_t)bias % 16 == 0);
    long long work = vec ? total / 4 : total;
    long long blocks = (work + 255) / 256;
    long long cap = (long long)mm_device()->sm_count * 16;
    if (blocks > cap)
        blocks = cap;
    mm_bias_act_kernel<<<(unsigned)blocks, 256, 0, s>>>(x, bias, total, (int)n, (int)act, vec);
    CUDA_LAUNCH_CHECK();
}

/* ---- timing helpers --------------------------------------------------------------------------- */

static void *mm_flush_buf; /* 2 x L2, allocated once per process */
static size_t mm_flush_bytes;

static void mm_flush_alloc(void) {
    if (!mm_flush_buf) {
        mm_flush_bytes = 2 * (size_t)(mm_device()->l2_bytes > 0 ? mm_device()->l2_bytes : (64 << 20));
        CUDA_CHECK(cudaMalloc(&mm_flush_buf, mm_flush_bytes));
    }
}

void mm_l2_flush(cudaStream_t s) {
    mm_flush_alloc();
    CUDA_CHECK(cudaMemsetAsync(mm_flush_buf, 0x5a, mm_flush_bytes, s));
}

__global__ void mm_flush_kernel(float4 *x, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
}

void mm_l2_flush_kernel(cudaStream_t s) {
    mm_flush_alloc();
    mm_flush_kernel<<<4 * mm_device()->sm_count, 512, 0, s>>>((float4 *)mm_flush_buf, (long long)(mm_flush_bytes / 16));
    CUDA_LAUNCH_CHECK();
}

double mm_median(float *v, int n) {
    std::sort(v, v + n);
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}
