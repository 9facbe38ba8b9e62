/* 3xtf32_probe.cu: the standalone probe behind bench/matmul/3xtf32.md (not part of the build): the
 * 3xTF32 kernel (ops/cuda/matmul_3xtf32.cu, included whole) checked against an fp64 GPU reference
 * on edge shapes, every epilogue, batches and splits; accuracy against K next to cuBLAS strict
 * FP32; accuracy variants (lo rounded, fresh accumulators every k-step); every configuration and
 * split timed against cuBLAS (L2 flushed, medians) at 2048-8192 and the BERT shapes; with the
 * argument `peak`, the mma.sync TF32 rate alone (the 3xTF32 ceiling).
 * Build: nvcc -arch=sm_90 -O3 -std=c++17 -Iops/cuda -Isrc/base -o probe bench/matmul/3xtf32_probe.cu -lcublas
 * Run with NVIDIA_TF32_OVERRIDE=0. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include <cublas_v2.h>
#include "../../ops/cuda/matmul_3xtf32.cu"

void base_die_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    abort();
}

const mm_device_info *mm_device(void) {
    static mm_device_info info;
    static bool have = false;
    if (!have) {
        cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        info.sm_count = prop.multiProcessorCount;
        info.l2_bytes = prop.l2CacheSize;
        info.max_smem_optin = (int)prop.sharedMemPerBlockOptin;
        snprintf(info.name, sizeof info.name, "%s", prop.name);
        have = true;
    }
    return &info;
}
mm_args mm_args_make(const mm_problem *p, const float *A, const float *B, const float *bias, float *C) {
    mm_args a;
    memset(&a, 0, sizeof a);
    a.A = A; a.B = B; a.bias = bias; a.C = C;
    a.M = (int)p->m; a.N = (int)p->n; a.K = (int)p->k;
    a.sa = p->stride_a; a.sb = p->stride_b; a.sc = p->stride_c;
    a.has_bias = p->has_bias; a.act = (int)p->act;
    a.vec_a = p->k % 4 == 0 && (uintptr_t)A % 16 == 0 && p->stride_a % 4 == 0;
    a.vec_b = p->n % 4 == 0 && (uintptr_t)B % 16 == 0 && p->stride_b % 4 == 0;
    a.vec_c = p->n % 4 == 0 && (uintptr_t)C % 16 == 0 && p->stride_c % 4 == 0;
    a.split_k = 1; a.k_chunk = a.K; a.group_m = 1;
    return a;
}
static void init(mm_problem *p, long long m, long long n, long long k, long long b) {
    memset(p, 0, sizeof *p);
    p->m = m; p->n = n; p->k = k; p->batch = b;
    p->stride_a = m * k; p->stride_b = k * n; p->stride_c = m * n;
}
__global__ void ref_kernel(mm_problem p, const float *A, const float *B, const float *bias, double *R) {
    long long b = blockIdx.z;
    long long row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= p.m || col >= p.n) return;
    const float *a = A + b * p.stride_a, *bb = B + b * p.stride_b;
    double s = 0;
    for (long long k = 0; k < p.k; k++) s += (double)a[row * p.k + k] * (double)bb[k * p.n + col];
    if (p.has_bias) s += bias[col];
    if (p.act == MM_ACT_RELU) s = s > 0 ? s : 0;
    else if (p.act == MM_ACT_GELU) s = 0.5 * s * (1.0 + erf(s * 0.70710678118654752440));
    R[(b * p.m + row) * p.n + col] = s;
}
static double relerr(const float *dC, const double *dR, long long n) {
    std::vector<float> c(n); std::vector<double> r(n);
    CUDA_CHECK(cudaMemcpy(c.data(), dC, n * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(r.data(), dR, n * 8, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (long long i = 0; i < n; i++) {
        if (!isfinite(c[i])) return NAN;
        num += (c[i] - r[i]) * (c[i] - r[i]); den += r[i] * r[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}
static void fill(float *d, long long n, unsigned seed) {
    std::vector<float> h(n);
    srand(seed);
    for (long long i = 0; i < n; i += 2) {
        double u1 = (rand() + 1.0) / ((double)RAND_MAX + 2.0), u2 = rand() / ((double)RAND_MAX + 1.0);
        double r = sqrt(-2 * log(u1));
        h[i] = (float)(r * cos(2 * M_PI * u2));
        if (i + 1 < n) h[i + 1] = (float)(r * sin(2 * M_PI * u2));
    }
    CUDA_CHECK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
}
struct bufs {
    float *A, *B, *C, *bias; double *R; long long cn;
    bufs(const mm_problem &p) {
        long long an = (p.batch - 1) * p.stride_a + p.m * p.k, bn = (p.batch - 1) * p.stride_b + p.k * p.n;
        cn = p.batch * p.m * p.n;
        CUDA_CHECK(cudaMalloc(&A, an * 4)); CUDA_CHECK(cudaMalloc(&B, bn * 4));
        CUDA_CHECK(cudaMalloc(&C, cn * 4)); CUDA_CHECK(cudaMalloc(&bias, p.n * 4)); CUDA_CHECK(cudaMalloc(&R, cn * 8));
        fill(A, an, 1); fill(B, bn, 2); fill(bias, p.n, 3);
        dim3 grid((unsigned)((p.n + 15) / 16), (unsigned)((p.m + 15) / 16), (unsigned)p.batch);
        ref_kernel<<<grid, dim3(16, 16)>>>(p, A, B, bias, R);
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    ~bufs() { cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(bias); cudaFree(R); }
};
static void cublas_run(cublasHandle_t h, const mm_problem &p, const float *A, const float *B, float *C) {
    const float one = 1, zero = 0;
    if (p.batch == 1)
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)p.n, (int)p.m, (int)p.k, &one, B, (int)p.n, A, (int)p.k, &zero, C, (int)p.n);
    else
        cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)p.n, (int)p.m, (int)p.k, &one, B, (int)p.n, p.stride_b, A,
                                  (int)p.k, p.stride_a, &zero, C, (int)p.n, p.stride_c, (int)p.batch);
}
static float *flushbuf;
static size_t flushbytes;
template <class F> static double time_med(F f, int reps) {
    std::vector<float> ms(reps);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int w = 0; w < 3; w++) f();
    for (int r = 0; r < reps; r++) {
        f();
        CUDA_CHECK(cudaMemsetAsync(flushbuf, r & 255, flushbytes));
        cudaEventRecord(e0); f(); cudaEventRecord(e1); CUDA_CHECK(cudaEventSynchronize(e1));
        cudaEventElapsedTime(&ms[r], e0, e1);
    }
    std::sort(ms.begin(), ms.end());
    return ms[reps / 2];
}
__global__ void mma_peak(float *out, int iters) {
    uint32_t a[4] = {threadIdx.x, threadIdx.x + 1, threadIdx.x + 2, threadIdx.x + 3}, b[2] = {threadIdx.x * 3, 7};
    float c[8][4] = {};
    for (int it = 0; it < iters; it++)
#pragma unroll
        for (int q = 0; q < 8; q++) tf_mma(c[q], a, b);
    float s = 0;
    for (int q = 0; q < 8; q++) s += c[q][0] + c[q][1] + c[q][2] + c[q][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "peak")) {
        const mm_device_info *dev = mm_device();
        float *o; CUDA_CHECK(cudaMalloc(&o, 4 << 20));
        for (int warps : {4, 8, 16}) {
            int blocks = dev->sm_count * 4, iters = 20000;
            mma_peak<<<blocks, warps * 32 / 4>>>(o, 10); CUDA_CHECK(cudaDeviceSynchronize());
            cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
            cudaEventRecord(e0); mma_peak<<<blocks, warps * 32 / 4>>>(o, iters); cudaEventRecord(e1);
            CUDA_CHECK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1);
            double fl = 2048.0 * 8 * iters * (double)blocks * (warps / 4);
            printf("mma.sync m16n8k8 tf32 peak, %d warps/SM: %.1f TF (3xTF32 ceiling %.1f TF)\n", warps, fl / ms / 1e9, fl / ms / 3e9);
        }
        return 0;
    }
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    const mm_device_info *dev = mm_device();
    printf("device %s, %d SMs\n", dev->name, dev->sm_count);
    flushbytes = (size_t)dev->l2_bytes * 2;
    CUDA_CHECK(cudaMalloc(&flushbuf, flushbytes));
    cublasHandle_t h; cublasCreate(&h); cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    void *cws; cudaMalloc(&cws, 64 << 20); cublasSetWorkspace(h, cws, 64 << 20);
    int fails = 0;
    /* correctness: every config, edges, epilogues, batch, split */
    const long long shapes[][4] = {{1, 1, 1, 1}, {17, 33, 65, 1}, {128, 128, 128, 1}, {129, 257, 300, 2}, {1000, 1000, 1, 1},
                                   {64, 96, 1024, 3}, {255, 130, 513, 1}, {128, 768, 768, 1}, {300, 301, 4096, 1}};
    for (auto &s : shapes)
        for (int epi = 0; epi < 6; epi++) {
            mm_problem p; init(&p, s[0], s[1], s[2], s[3]);
            p.has_bias = epi >= 3; p.act = (mm_act)(epi % 3);
            bufs b(p);
            for (int cfg = 0; cfg < tf_count; cfg++)
                for (int split : {1, 3}) {
                    CUDA_CHECK(cudaMemset(b.C, 0xff, b.cn * 4));
                    mm_3xtf32_run_at(&p, cfg, split, 4, b.A, b.B, p.has_bias ? b.bias : NULL, b.C, 0);
                    CUDA_CHECK(cudaDeviceSynchronize());
                    double e = relerr(b.C, b.R, b.cn);
                    if (!(e < 2e-6)) { fails++; printf("FAIL %lldx%lldx%lldx%lld epi %d cfg %s split %d: %.3g\n", s[0], s[1], s[2], s[3], epi, tf_table[cfg].name, split, e); }
                }
        }
    printf("correctness: %d failures\n", fails);
    /* accuracy variants at one tile: plain, lo rounded, flush every k-step, both */
    {
        void (*var[4])(const mm_args &, long long, cudaStream_t) = {
            tf_launch<tf_cfg<128, 128, 32, 32, 64, 3, 1, 1, 0, 0>>, tf_launch<tf_cfg<128, 128, 32, 32, 64, 3, 1, 1, 1, 0>>,
            tf_launch<tf_cfg<128, 128, 32, 32, 64, 3, 1, 1, 0, 1>>, tf_launch<tf_cfg<128, 128, 32, 32, 64, 3, 1, 1, 1, 1>>};
        const char *vn[4] = {"plain", "lo-round", "flush-step", "both"};
        for (long long k : {16, 64, 256, 512, 1024, 4096}) {
            mm_problem p; init(&p, 512, 512, k, 1);
            bufs b(p);
            cublas_run(h, p, b.A, b.B, b.C); CUDA_CHECK(cudaDeviceSynchronize());
            printf("variants K=%lld: cuBLAS %.3g", k, relerr(b.C, b.R, b.cn));
            for (int v = 0; v < 4; v++) {
                mm_args a = mm_args_make(&p, b.A, b.B, NULL, b.C);
                a.group_m = 8;
                var[v](a, 1, 0); CUDA_CHECK(cudaDeviceSynchronize());
                double e = relerr(b.C, b.R, b.cn);
                double t = 0;
                if (k == 4096) {
                    mm_problem q; init(&q, 4096, 4096, 4096, 1);
                    static bufs *big = nullptr; if (!big) big = new bufs(q);
                    mm_args aq = mm_args_make(&q, big->A, big->B, NULL, big->C); aq.group_m = 8;
                    t = time_med([&] { var[v](aq, 1, 0); }, 10);
                    printf(" | %s %.3g (4096^3: %.1f TF)", vn[v], e, 2.0 * 4096 * 4096 * 4096 / t / 1e9);
                } else printf(" | %s %.3g", vn[v], e);
            }
            printf("\n");
        }
    }
    /* accuracy vs K */
    for (long long k : {16, 64, 128, 256, 1024, 4096}) {
        mm_problem p; init(&p, 256, 256, k, 1);
        bufs b(p);
        mm_3xtf32_run(&p, b.A, b.B, NULL, b.C, 0); CUDA_CHECK(cudaDeviceSynchronize());
        double e3 = relerr(b.C, b.R, b.cn);
        cublas_run(h, p, b.A, b.B, b.C); CUDA_CHECK(cudaDeviceSynchronize());
        double ec = relerr(b.C, b.R, b.cn);
        printf("K=%lld: err 3xtf32 %.3g cuBLAS %.3g\n", k, e3, ec);
    }
    /* timing */
    const long long tshapes[][4] = {{4096, 4096, 4096, 1}, {8192, 8192, 8192, 1}, {2048, 2048, 2048, 1}, {128, 768, 768, 1},
                                    {128, 3072, 768, 1}, {128, 768, 3072, 1}, {1024, 3072, 768, 1}};
    for (auto &s : tshapes) {
        mm_problem p; init(&p, s[0], s[1], s[2], s[3]);
        bufs b(p);
        double fl = 2.0 * s[0] * s[1] * s[2] * s[3];
        int reps = s[0] >= 8192 ? 15 : 30;
        double tc = time_med([&] { cublas_run(h, p, b.A, b.B, b.C); }, reps);
        double ec = relerr(b.C, b.R, b.cn);
        printf("%lldx%lldx%lld: cuBLAS %.1f us %.1f TF err %.2g\n", s[0], s[1], s[2], tc * 1e3, fl / tc / 1e9, ec);
        int c0, sp0, g0; mm_3xtf32_choose(&p, &c0, &sp0, &g0);
        bool small = s[0] * s[1] < 1500000;
        for (int cfg = 0; cfg < tf_count; cfg++)
            for (int split : {1, 2, 3, 4, 6}) {
                if (!small && split > 1) continue;
                if (tf_table[cfg].smem > dev->max_smem_optin) continue;
                double t = time_med([&] { mm_3xtf32_run_at(&p, cfg, split, 8, b.A, b.B, NULL, b.C, 0); }, reps);
                double e = (small || (cfg == c0 && split == sp0)) ? relerr(b.C, b.R, b.cn) : NAN;
                printf("  %-24s split %d: %8.1f us %6.1f TF %.2fx cuBLAS err %.2g%s\n", tf_table[cfg].name, split, t * 1e3,
                       fl / t / 1e9, tc / t, e, cfg == c0 && split == sp0 ? "  <- heuristic" : "");
            }
        fflush(stdout);
    }
    return fails != 0;
}
