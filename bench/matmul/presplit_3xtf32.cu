/* presplit_3xtf32.cu: standalone timing of the 3xTF32 paths with and without a pre-split operand
 * (issue 17, weights split once by the runtime): the library's own kernels (ops/cuda/
 * matmul_3xtf32.cu and matmul_3xtf32_wgmma.cu, included whole), on BERT's batch-8/32 shapes and
 * two convolution GEMMs (weight = A, broadcast over the images). Per shape: cuBLAS strict FP32,
 * mma.sync at its heuristic's choice, wgmma 128x128 and 128x64 with the per-call split and with the
 * weight pre-split, the split kernels alone, and what the dispatch rule (wgt_pick) takes; each
 * checked against fp64 (relative Frobenius error) and the pre-split results against the per-call
 * ones bit for bit. Median of REPS L2-flushed runs. Appends the table to argv[1]; argv[2] REPS (20);
 * argv[3] the shapes: bert8 (default: batch 8 and 32, convolutions) or small (batch 1, 2, 4).
 * Build: bench/matmul/build_wgmma.sh presplit. Run with NVIDIA_TF32_OVERRIDE=0.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include "../../ops/cuda/matmul_3xtf32.cu"
#include "../../ops/cuda/matmul_3xtf32_wgmma.cu"

/* ---- the few library symbols the two files use (matmul.cu, base.c) ----------------------------- */

void base_die_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

int base_fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
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
        info.cc_major = prop.major;
        info.cc_minor = prop.minor;
        snprintf(info.name, sizeof info.name, "%s", prop.name);
        have = true;
    }
    return &info;
}

void mm_problem_init(mm_problem *p, int64_t m, int64_t n, int64_t k, int64_t batch) {
    memset(p, 0, sizeof *p);
    p->m = m, p->n = n, p->k = k, p->batch = batch;
    p->stride_a = m * k, p->stride_b = k * n, p->stride_c = m * n;
}

mm_args mm_args_make(const mm_problem *p, const float *A, const float *B, const float *bias, float *C) {
    mm_args a;
    memset(&a, 0, sizeof a);
    a.A = A, a.B = B, a.bias = bias, a.C = C;
    a.M = (int)p->m, a.N = (int)p->n, a.K = (int)p->k;
    a.sa = p->stride_a, a.sb = p->stride_b, a.sc = p->stride_c;
    a.has_bias = p->has_bias, a.act = (int)p->act;
    a.vec_a = p->k % 4 == 0 && (uintptr_t)A % 16 == 0 && p->stride_a % 4 == 0;
    a.vec_b = p->n % 4 == 0 && (uintptr_t)B % 16 == 0 && p->stride_b % 4 == 0;
    a.vec_c = p->n % 4 == 0 && (uintptr_t)C % 16 == 0 && p->stride_c % 4 == 0;
    a.split_k = 1, a.k_chunk = a.K, a.group_m = 1;
    return a;
}

/* ---- data, reference, timing ------------------------------------------------------------------- */

static __device__ __forceinline__ uint32_t ps_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}
__global__ void ps_fill(float *x, long long n, uint64_t seed) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float u1 = (ps_hash(seed * 0x9e3779b97f4a7c15ull + 2 * i) + 1.0f) * 2.3283064e-10f;
    const float u2 = ps_hash(seed * 0x9e3779b97f4a7c15ull + 2 * i + 1) * 2.3283064e-10f;
    x[i] = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

/* fp64 C of every batch item, one thread an output */
__global__ void ps_ref(mm_problem p, const float *A, const float *B, double *R) {
    const long long b = blockIdx.z, row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= p.m || col >= p.n)
        return;
    const float *a = A + b * p.stride_a + row * p.k, *bb = B + b * p.stride_b + col;
    double s = 0;
    for (long long k = 0; k < p.k; k++)
        s += (double)a[k] * (double)bb[k * p.n];
    R[(b * p.m + row) * p.n + col] = s;
}

static double ps_err(const std::vector<float> &c, const std::vector<double> &r) {
    double num = 0, den = 0;
    for (size_t i = 0; i < c.size(); i++) {
        if (!isfinite(c[i]))
            return NAN;
        num += (c[i] - r[i]) * (c[i] - r[i]), den += r[i] * r[i];
    }
    return sqrt(num / den);
}

static float *ps_flush;
static const size_t ps_flush_bytes = (size_t)256 << 20;

template <class F>
static double ps_time_us(F f, int reps) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int r = 0; r < reps + 3; r++) {
        CUDA_CHECK(cudaMemsetAsync(ps_flush, r & 0xff, ps_flush_bytes, 0));
        CUDA_CHECK(cudaEventRecord(e0, 0));
        f();
        CUDA_CHECK(cudaEventRecord(e1, 0));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 3)
            ts.push_back(ms);
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    std::sort(ts.begin(), ts.end());
    return 1e3 * ts[ts.size() / 2];
}

struct ps_shape {
    long long m, n, k, batch;
    int side; /* the weight: MM_OPERAND_B (BERT: activations x weight) or MM_OPERAND_A (conv: w x im2col) */
};

/* ---- one shape --------------------------------------------------------------------------------- */

struct ps_ctx {
    mm_problem p;
    float *A, *B, *C, *buf;
    mm_presplit ps;
    std::vector<double> ref;
    std::vector<float> host;
    long long cn;
};

/* runs f once into C, returns its error; host gets C */
template <class F>
static double ps_check(ps_ctx &x, F f) {
    CUDA_CHECK(cudaMemset(x.C, 0xff, (size_t)x.cn * 4)); /* NaN: every output must be written */
    f();
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(x.host.data(), x.C, (size_t)x.cn * 4, cudaMemcpyDeviceToHost));
    return ps_err(x.host, x.ref);
}

static void ps_shape_run(const ps_shape &sh, cublasHandle_t h, int reps, std::string &table) {
    ps_ctx x;
    mm_problem &p = x.p;
    mm_problem_init(&p, sh.m, sh.n, sh.k, sh.batch);
    if (sh.side == MM_OPERAND_A) /* conv: one weight for every image */
        p.stride_a = 0;
    else /* BERT: one weight, the batch folded into m by the matmul node */
        p.stride_b = 0;
    const long long an = (p.stride_a ? p.batch : 1) * p.m * p.k, bn = (p.stride_b ? p.batch : 1) * p.k * p.n;
    x.cn = p.batch * p.m * p.n;
    CUDA_CHECK(cudaMalloc((void **)&x.A, an * 4));
    CUDA_CHECK(cudaMalloc((void **)&x.B, bn * 4));
    CUDA_CHECK(cudaMalloc((void **)&x.C, x.cn * 4));
    ps_fill<<<(unsigned)((an + 255) / 256), 256>>>(x.A, an, 11 + p.m + p.k);
    ps_fill<<<(unsigned)((bn + 255) / 256), 256>>>(x.B, bn, 29 + p.n + p.k);
    double *dref;
    CUDA_CHECK(cudaMalloc((void **)&dref, x.cn * 8));
    ps_ref<<<dim3((unsigned)((p.n + 15) / 16), (unsigned)((p.m + 15) / 16), (unsigned)p.batch), dim3(16, 16)>>>(
        p, x.A, x.B, dref);
    CUDA_CHECK(cudaGetLastError());
    x.ref.resize(x.cn);
    x.host.resize(x.cn);
    CUDA_CHECK(cudaMemcpy(x.ref.data(), dref, x.cn * 8, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(dref));
    /* the weight, split once */
    const bool wa = sh.side == MM_OPERAND_A;
    const long long rows = wa ? p.m : p.n;
    char err[256];
    CUDA_CHECK(cudaMalloc((void **)&x.buf, mm_3xtf32_presplit_floats(rows, p.k, 1) * 4));
    if (mm_3xtf32_presplit(&x.ps, (mm_operand)sh.side, wa ? x.A : x.B, rows, p.k, 1, 0, x.buf, 0, err, sizeof err) <
        0) {
        fprintf(stderr, "presplit: %s\n", err);
        exit(1);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    const long long kp = (p.k + 3) / 4 * 4;
    const long long ia = p.stride_a ? p.batch : 1, ib = p.stride_b ? p.batch : 1;
    const double flops = 2.0 * p.m * p.n * p.k * p.batch;
    /* the split kernels alone (into the library's workspace) */
    CUDA_CHECK(mm_dbuf_grow(&wgt_ws, 2 * (size_t)(ia * p.m * kp + ib * p.n * kp) * sizeof(float), false, 0));
    float *ws = (float *)wgt_ws.p;
    const double us_sa = ps_time_us([&] { wgt_split_a(&p, x.A, (int)kp, ia, ws, ws + ia * p.m * kp, 0); }, reps);
    const double us_sb = ps_time_us([&] { wgt_split_b(&p, x.B, (int)kp, ib, ws, ws + ib * p.n * kp, 0); }, reps);
    /* cuBLAS strict FP32 (row-major C = A B as C^T = B^T A^T) */
    const float one = 1.0f, zero = 0.0f;
    auto blas = [&] {
        if (p.batch == 1)
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)p.n, (int)p.m, (int)p.k, &one, x.B, (int)p.n, x.A, (int)p.k,
                        &zero, x.C, (int)p.n);
        else
            cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)p.n, (int)p.m, (int)p.k, &one, x.B, (int)p.n,
                                      p.stride_b, x.A, (int)p.k, p.stride_a, &zero, x.C, (int)p.n, p.stride_c,
                                      (int)p.batch);
    };
    int cfg, split, group;
    mm_3xtf32_choose(&p, &cfg, &split, &group);
    auto mma = [&] { mm_3xtf32_run_at(&p, cfg, split, group, x.A, x.B, NULL, x.C, 0); };
    mm_presplit *pa = wa ? &x.ps : NULL, *pb = wa ? NULL : &x.ps;
    struct variant {
        const char *name;
        int cfg;
        bool pre;
    } vs[] = {{"wgmma 128x128 split", 1, false}, {"wgmma 128x64 split", 2, false},
              {"wgmma 128x128 presplit", 1, true}, {"wgmma 128x64 presplit", 2, true}};
    std::vector<float> per_call[3];
    char line[640];
    const double blas_err = ps_check(x, blas), blas_us = ps_time_us(blas, reps);
    const double mma_err = ps_check(x, mma), mma_us = ps_time_us(mma, reps);
    char shape[96];
    if (p.batch > 1)
        snprintf(shape, sizeof shape, "%lldx%lldx%lld b%lld (A bcast)", p.m, p.n, p.k, p.batch);
    else
        snprintf(shape, sizeof shape, "%lldx%lldx%lld", p.m, p.n, p.k);
    snprintf(line, sizeof line, "| %s | cuBLAS strict | %.1f | %.1f | %.2e | 1.00 | |\n", shape, blas_us,
             flops / blas_us * 1e-6, blas_err);
    table += line;
    snprintf(line, sizeof line, "| %s | mma.sync %s s%d | %.1f | %.1f | %.2e | %.2f | |\n", shape,
             mm_3xtf32_config_name(cfg), split, mma_us, flops / mma_us * 1e-6, mma_err, blas_us / mma_us);
    table += line;
    for (const variant &v : vs) {
        auto f = [&] {
            if (!wgt_run_sk(&p, x.A, x.B, NULL, x.C, v.cfg, 1, v.pre ? pa : NULL, 0, v.pre ? pb : NULL, 0, 0)) {
                fprintf(stderr, "wgt_run_sk refused %s\n", v.name);
                exit(1);
            }
        };
        const double e = ps_check(x, f);
        const char *same = "";
        if (!v.pre)
            per_call[v.cfg] = x.host;
        else
            same = memcmp(per_call[v.cfg].data(), x.host.data(), (size_t)x.cn * 4) ? "DIFFERENT BITS" : "same bits";
        const double us = ps_time_us(f, reps);
        snprintf(line, sizeof line, "| %s | %s | %.1f | %.1f | %.2e | %.2f | %s |\n", shape, v.name, us,
                 flops / us * 1e-6, e, blas_us / us, same);
        table += line;
    }
    /* the rule, through the node list as the runtime sets it */
    mm_3xtf32_presplit_node_set(&x.ps, 1);
    const long long l0 = wgt_launches, u0 = wgt_ps_uses;
    auto rule = [&] { mm_3xtf32_run(&p, x.A, x.B, NULL, x.C, 0); };
    const double re = ps_check(x, rule);
    const bool took = wgt_launches > l0, used = wgt_ps_uses > u0;
    const double rus = ps_time_us(rule, reps);
    mm_3xtf32_presplit_node_set(NULL, 0);
    snprintf(line, sizeof line, "| %s | rule with presplit: %s | %.1f | %.1f | %.2e | %.2f | split A %.1f us, B %.1f us |\n",
             shape, took ? (used ? "wgmma, pre-split read" : "wgmma, NOT using the pre-split") : "mma.sync", rus,
             flops / rus * 1e-6, re, blas_us / rus, us_sa, us_sb);
    table += line;
    printf("%s", table.c_str());
    fflush(stdout);
    for (float *q : {x.A, x.B, x.C, x.buf})
        CUDA_CHECK(cudaFree(q));
}

int main(int argc, char **argv) {
    const char *out_path = argc > 1 ? argv[1] : NULL;
    const int reps = argc > 2 ? atoi(argv[2]) : 20;
    const char *set = argc > 3 ? argv[3] : "bert8";
    if (reps < 1 || (strcmp(set, "bert8") && strcmp(set, "small"))) {
        fprintf(stderr, "usage: presplit_3xtf32 OUT.md [REPS >= 1] [bert8|small]\n");
        return 2;
    }
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    if (!mm_3xtf32_wgmma_available()) {
        fprintf(stderr, "the wgmma path is not available (%s, cc %d.%d)\n", prop.name, prop.major, prop.minor);
        return 1;
    }
    FILE *out = out_path ? fopen(out_path, "a") : NULL;
    if (out_path && !out) {
        fprintf(stderr, "%s: cannot open for writing\n", out_path);
        return 1;
    }
    CUDA_CHECK(cudaMalloc((void **)&ps_flush, ps_flush_bytes));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetMathMode(h, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cuBLAS setup failed\n");
        return 1;
    }
    const ps_shape shapes[] = {
        {1024, 768, 768, 1, MM_OPERAND_B},  {1024, 3072, 768, 1, MM_OPERAND_B}, {1024, 768, 3072, 1, MM_OPERAND_B},
        {1024, 2304, 768, 1, MM_OPERAND_B}, {4096, 768, 768, 1, MM_OPERAND_B},  {4096, 3072, 768, 1, MM_OPERAND_B},
        {4096, 768, 3072, 1, MM_OPERAND_B}, {128, 768, 768, 1, MM_OPERAND_B},   {64, 3136, 576, 8, MM_OPERAND_A},
        {256, 196, 2304, 32, MM_OPERAND_A}, {512, 49, 4608, 32, MM_OPERAND_A},
    };
    /* BERT at batch 1, 2, 4 (m = 128 x batch): where the thresholds lie; and two ties of the rule */
    const ps_shape small_shapes[] = {
        {128, 768, 768, 1, MM_OPERAND_B},   {128, 2304, 768, 1, MM_OPERAND_B},  {128, 3072, 768, 1, MM_OPERAND_B},
        {128, 768, 3072, 1, MM_OPERAND_B},  {256, 768, 768, 1, MM_OPERAND_B},   {256, 2304, 768, 1, MM_OPERAND_B},
        {256, 3072, 768, 1, MM_OPERAND_B},  {256, 768, 3072, 1, MM_OPERAND_B},  {512, 768, 768, 1, MM_OPERAND_B},
        {512, 3072, 768, 1, MM_OPERAND_B},  {512, 768, 3072, 1, MM_OPERAND_B},  {4096, 768, 3072, 1, MM_OPERAND_B},
        {1024, 2304, 768, 1, MM_OPERAND_B},
    };
    const bool small = !strcmp(set, "small");
    const ps_shape *list = small ? small_shapes : shapes;
    const size_t nlist = small ? sizeof small_shapes / sizeof small_shapes[0] : sizeof shapes / sizeof shapes[0];
    std::string all;
    char head[512];
    snprintf(head, sizeof head,
             "device: %s, %d SMs, cc %d.%d; median of %d L2-flushed runs; rule: WGT_MIN_PCT %d, "
             "WGT_MIN_PCT_PRESPLIT %d, WGT_SMALL_COST %d\n\n| shape | path | us | TF | rel err | x cuBLAS | note |\n"
             "|---|---|---:|---:|---:|---:|---|\n",
             prop.name, prop.multiProcessorCount, prop.major, prop.minor, reps, WGT_MIN_PCT, WGT_MIN_PCT_PRESPLIT,
             WGT_SMALL_COST);
    printf("%s", head);
    all += head;
    for (size_t i = 0; i < nlist; i++) {
        std::string t;
        ps_shape_run(list[i], h, reps, t);
        all += t;
    }
    if (out) {
        fputs(all.c_str(), out);
        fclose(out);
    }
    cublasDestroy(h);
    return 0;
}
