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

__global__ void __launch_bounds__(V6_THREADS, 2) mm_v6_kernel(mm_args a) {
    /* each stage: sAt (BK, BM+4) = A transposed, then sB (BK, BN) */
    __shared__ __align__(16) float sm[V6_STAGES * V6_STAGE_FLOATS];
    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    int tiles_n = (a.N + V6_BN - 1) / V6_BN;
    const int m0 = (int)(blockIdx.x / tiles_n) * V6_BM;
    const int n0 = (int)(blockIdx.x % tiles_n) * V6_BN;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;

    /* A: 4 elements per thread at k offset la_k, rows la_m + 32 j; source pointers and byte
     * counts (0 outside the matrix: the copy writes zeros) are fixed, pointers advance by BK */
    const int la_k = tid % V6_BK, la_m = tid / V6_BK;
    const float *a_src[4]; /* (K) rows of A at k = la_k of the next tile */
    int a_bytes[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int gm = m0 + la_m + 32 * j;
        a_bytes[j] = gm < a.M ? 4 : 0;
        a_src[j] = A + (long long)min(gm, a.M - 1) * a.K + la_k;
    }
    /* B: 16-byte copies (row tid/32, columns (tid%32)*4..+3) or 4 4-byte copies (rows idx/128) */
    const int b_c = a.vec_b ? (tid % 32) * 4 : tid % V6_BN;
    const int b_kr = a.vec_b ? tid / 32 : tid / V6_BN;
    const int b_left = a.N - (n0 + b_c);
    const int b_bytes = a.vec_b ? (b_left >= 4 ? 16 : (b_left > 0 ? 4 * b_left : 0)) : (b_left > 0 ? 4 : 0);
    const float *b_src = B + (long long)b_kr * a.N + (b_left > 0 ? n0 + b_c : 0);
    const unsigned s_base = (unsigned)__cvta_generic_to_shared(sm);
    const int ktiles = (a.K + V6_BK - 1) / V6_BK, kfull = a.K / V6_BK;

    auto load_tile = [&](int stage, int kt) {
        const unsigned sa = s_base + 4u * (stage * V6_STAGE_FLOATS);
        const unsigned sb = sa + 4u * V6_BK * V6_LDA;
        const int klim = kt < kfull ? V6_BK : a.K - kt * V6_BK;
        const long long k0 = (long long)kt * V6_BK;
#pragma unroll
        for (int j = 0; j < 4; j++)
            mm_cp_async4_u(sa + 4u * (la_k * V6_LDA + la_m + 32 * j), a_src[j] + k0, la_k < klim ? a_bytes[j] : 0);
        if (a.vec_b) {
            mm_cp_async16_u(sb + 4u * (b_kr * V6_BN + b_c), b_src + k0 * a.N, b_kr < klim ? b_bytes : 0);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
                mm_cp_async4_u(sb + 4u * ((b_kr + 2 * j) * V6_BN + b_c), b_src + (k0 + 2 * j) * a.N,
                               b_kr + 2 * j < klim ? b_bytes : 0);
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
