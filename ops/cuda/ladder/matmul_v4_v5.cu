/* matmul_v4_v5.cu: rungs v4 and v5 of the ladder, one template (the flag says which).
 *
 * v4  over v3: a 128x128 block tile, k-step 8, 256 threads with an 8x8 thread tile (64
 *     accumulators, so 16 FMAs per shared-memory value read instead of 4); every global load is
 *     one float4 (A: one row piece of 4 k values, B: one row piece of 4 columns); A is stored
 *     transposed in shared memory (sAt[k][m]) so that the inner loop reads both operands as
 *     float4 (2+2 LDS.128 per k for 64 FMAs). Edge tiles and unaligned rows fall back to guarded
 *     scalar loads and stores.
 * v5  over v4: a bank-conflict-free layout. (1) sAt rows padded to 132 floats: the transposed
 *     store of v4 put threads 2t and 2t+1 (same m, k and k+4) in one bank, a 2-way conflict on
 *     every A store; with the pad the warp's 32 stores hit 32 banks. (2) The 8x8 thread tile is
 *     split into four 4x4 quarters 64 rows/columns apart (rows ty*4 and 64+ty*4): a quarter-warp's
 *     float4 reads of sB then cover 128 contiguous bytes instead of 256 bytes at a 32-byte stride
 *     (v4's contiguous 8-wide tile), so each LDS.128 needs the minimum number of wavefronts.
 * Both: load the next tile into registers, barrier, store to shared, barrier, compute.
 */
#include "matmul_common.cuh"

#define V4_BM 128
#define V4_BN 128
#define V4_BK 8
#define V4_THREADS 256

template <bool V5>
__global__ void __launch_bounds__(V4_THREADS) mm_v4_kernel(mm_args a) {
    constexpr int PAD = V5 ? 4 : 0;
    constexpr int LDA = V4_BM + PAD;
    __shared__ __align__(16) float sAt[V4_BK * LDA];   /* (BK, BM [+4]): A transposed */
    __shared__ __align__(16) float sB[V4_BK * V4_BN];  /* (BK, BN) */
    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    int tiles_n = (a.N + V4_BN - 1) / V4_BN;
    const int m0 = (int)(blockIdx.x / tiles_n) * V4_BM;
    const int n0 = (int)(blockIdx.x % tiles_n) * V4_BN;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;

    /* this thread's share of each tile: A row la_m, k la_k..+3; B row lb_k, columns lb_n..+3 */
    const int la_m = tid / 2, la_k = (tid % 2) * 4;
    const int lb_k = tid / 32, lb_n = (tid % 32) * 4;
    const bool a_row_ok = m0 + la_m < a.M;
    const float *a_row = A + (long long)(a_row_ok ? m0 + la_m : 0) * a.K; /* (K) */

    float acc[8][8] = {};
    for (int k0 = 0; k0 < a.K; k0 += V4_BK) {
        float ra[4], rb[4];
        int gk = k0 + la_k;
        if (a.vec_a && a_row_ok && gk + 3 < a.K) {
            float4 v = *reinterpret_cast<const float4 *>(a_row + gk);
            ra[0] = v.x; ra[1] = v.y; ra[2] = v.z; ra[3] = v.w;
        } else {
#pragma unroll
            for (int i = 0; i < 4; i++)
                ra[i] = (a_row_ok && gk + i < a.K) ? a_row[gk + i] : 0.0f;
        }
        int bk = k0 + lb_k, bn = n0 + lb_n;
        const float *b_row = B + (long long)bk * a.N; /* (N), valid when bk < K */
        if (a.vec_b && bk < a.K && bn + 3 < a.N) {
            float4 v = *reinterpret_cast<const float4 *>(b_row + bn);
            rb[0] = v.x; rb[1] = v.y; rb[2] = v.z; rb[3] = v.w;
        } else {
#pragma unroll
            for (int i = 0; i < 4; i++)
                rb[i] = (bk < a.K && bn + i < a.N) ? b_row[bn + i] : 0.0f;
        }
        __syncthreads(); /* the previous tile has been consumed */
#pragma unroll
        for (int i = 0; i < 4; i++)
            sAt[(la_k + i) * LDA + la_m] = ra[i];
        *reinterpret_cast<float4 *>(&sB[lb_k * V4_BN + lb_n]) = make_float4(rb[0], rb[1], rb[2], rb[3]);
        __syncthreads(); /* the tile is complete */
#pragma unroll
        for (int k = 0; k < V4_BK; k++) {
            float av[8], bv[8];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int mo = V5 ? h * 64 + ty * 4 : ty * 8 + h * 4;
                int no = V5 ? h * 64 + tx * 4 : tx * 8 + h * 4;
                float4 va = *reinterpret_cast<const float4 *>(&sAt[k * LDA + mo]);
                float4 vb = *reinterpret_cast<const float4 *>(&sB[k * V4_BN + no]);
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
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = m0 + (V5 ? (i / 4) * 64 + ty * 4 + i % 4 : ty * 8 + i);
        if (row >= a.M)
            continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int col = n0 + (V5 ? h * 64 + tx * 4 : tx * 8 + h * 4);
            mm_store4(C, a, row, col, acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2],
                      acc[i][h * 4 + 3]);
        }
    }
}

template <bool V5>
static void mm_launch_v45(const mm_args &a, long long batch, cudaStream_t s) {
    long long tiles = (long long)((a.M + V4_BM - 1) / V4_BM) * ((a.N + V4_BN - 1) / V4_BN);
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        mm_v4_kernel<V5><<<dim3((unsigned)tiles, 1, items), V4_THREADS, 0, s>>>(c);
        CUDA_LAUNCH_CHECK();
    });
}

void mm_launch_v4(const mm_args &a, long long batch, cudaStream_t s) { mm_launch_v45<false>(a, batch, s); }
void mm_launch_v5(const mm_args &a, long long batch, cudaStream_t s) { mm_launch_v45<true>(a, batch, s); }
