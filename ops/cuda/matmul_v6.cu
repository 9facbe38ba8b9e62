/* matmul_v6.cu: rung v6 of the ladder: a multi-stage cp.async pipeline.
 *
 * Over v5 (same 128x128x8 tile, 256 threads, conflict-free split 8x8 thread tile): tiles go
 * from global to shared memory with cp.async, without passing through registers, into a ring of
 * 3 shared-memory stages, so the loads of tiles kt+1 and kt+2 are in flight while tile kt is
 * computed; one barrier per k-step instead of two. A is still stored transposed: each element is
 * its own 4-byte cp.async into sAt[k][m] (mapping k = tid % 8, m = tid / 8 + 32 j, which keeps
 * the global reads in 32-byte sectors and the shared writes in 32 distinct banks); B moves in
 * 16-byte copies (4-byte copies when rows of B are not 16-byte aligned). Out-of-range elements
 * are zero-filled by the copy itself (src-size 0), so edge tiles need no other code path.
 */
#include "matmul_common.cuh"

#define V6_BM 128
#define V6_BN 128
#define V6_BK 8
#define V6_STAGES 3
#define V6_THREADS 256
#define V6_LDA (V6_BM + 4)
#define V6_STAGE_FLOATS (V6_BK * V6_LDA + V6_BK * V6_BN)

__global__ void __launch_bounds__(V6_THREADS) mm_v6_kernel(mm_args a) {
    /* each stage: sAt (BK, BM+4) = A transposed, then sB (BK, BN) */
    __shared__ __align__(16) float sm[V6_STAGES * V6_STAGE_FLOATS];
    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    int tiles_n = (a.N + V6_BN - 1) / V6_BN;
    const int m0 = (int)(blockIdx.x / tiles_n) * V6_BM;
    const int n0 = (int)(blockIdx.x % tiles_n) * V6_BN;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;

    /* A: 4 elements per thread, all at k offset la_k, rows la_m + 32 j */
    const int la_k = tid % V6_BK, la_m = tid / V6_BK;
    const float *a_src[4]; /* row bases, (K) each; A itself for rows outside */
    bool a_ok[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int gm = m0 + la_m + 32 * j;
        a_ok[j] = gm < a.M;
        a_src[j] = a_ok[j] ? A + (long long)gm * a.K : A;
    }
    const int ktiles = (a.K + V6_BK - 1) / V6_BK;

    auto load_tile = [&](int stage, int kt) {
        float *sA = sm + stage * V6_STAGE_FLOATS;
        float *sB = sA + V6_BK * V6_LDA;
        int k0 = kt * V6_BK;
        int gk = k0 + la_k;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            bool ok = a_ok[j] && gk < a.K;
            mm_cp_async4(&sA[la_k * V6_LDA + la_m + 32 * j], ok ? a_src[j] + gk : A, ok);
        }
        if (a.vec_b) {
            int kr = tid / 32, c4 = (tid % 32) * 4;
            int bk = k0 + kr, bn = n0 + c4;
            int bytes = (bk < a.K && bn < a.N) ? 4 * min(4, a.N - bn) : 0;
            mm_cp_async16(&sB[kr * V6_BN + c4], bytes ? B + (long long)bk * a.N + bn : B, bytes);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int idx = tid + j * V6_THREADS;
                int kr = idx / V6_BN, c = idx % V6_BN;
                int bk = k0 + kr, bn = n0 + c;
                bool ok = bk < a.K && bn < a.N;
                mm_cp_async4(&sB[kr * V6_BN + c], ok ? B + (long long)bk * a.N + bn : B, ok);
            }
        }
    };

#pragma unroll
    for (int st = 0; st < V6_STAGES - 1; st++) {
        if (st < ktiles)
            load_tile(st, st);
        mm_cp_async_commit(); /* empty groups keep the group count uniform */
    }

    float acc[8][8] = {};
    for (int kt = 0; kt < ktiles; kt++) {
        mm_cp_async_wait<V6_STAGES - 2>(); /* tile kt has landed (for this thread) */
        __syncthreads();                   /* ... for all threads; tile kt-1 is consumed */
        int next = kt + V6_STAGES - 1;
        if (next < ktiles)
            load_tile(next % V6_STAGES, next);
        mm_cp_async_commit();
        const float *sA = sm + (kt % V6_STAGES) * V6_STAGE_FLOATS;
        const float *sB = sA + V6_BK * V6_LDA;
#pragma unroll
        for (int k = 0; k < V6_BK; k++) {
            float av[8], bv[8];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float4 va = *reinterpret_cast<const float4 *>(&sA[k * V6_LDA + h * 64 + ty * 4]);
                float4 vb = *reinterpret_cast<const float4 *>(&sB[k * V6_BN + h * 64 + tx * 4]);
                av[h * 4 + 0] = va.x; av[h * 4 + 1] = va.y; av[h * 4 + 2] = va.z; av[h * 4 + 3] = va.w;
                bv[h * 4 + 0] = vb.x; bv[h * 4 + 1] = vb.y; bv[h * 4 + 2] = vb.z; bv[h * 4 + 3] = vb.w;
            }
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
    }
    mm_cp_async_wait<0>();
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = m0 + (i / 4) * 64 + ty * 4 + i % 4;
        if (row >= a.M)
            continue;
#pragma unroll
        for (int h = 0; h < 2; h++)
            mm_store4(C, a, row, n0 + h * 64 + tx * 4, acc[i][h * 4], acc[i][h * 4 + 1],
                      acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    }
}

void mm_launch_v6(const mm_args &a, long long batch, cudaStream_t s) {
    long long tiles = (long long)((a.M + V6_BM - 1) / V6_BM) * ((a.N + V6_BN - 1) / V6_BN);
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        mm_v6_kernel<<<dim3((unsigned)tiles, 1, items), V6_THREADS, 0, s>>>(c);
        CUDA_LAUNCH_CHECK();
    });
}
