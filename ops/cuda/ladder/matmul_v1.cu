/* matmul_v1.cu: the first two rungs of the ladder (seed notes "GPU MatMul V1" and "V1.5").
 *
 * v1   one thread per output: a dot product of a row of A and a column of B straight from
 *      global memory, 32x32 threads per block (threadIdx.x runs along n, so the B and C
 *      accesses of a warp are coalesced and the A access is a broadcast). 2*M*N*K loads.
 * v1.5 thread tiling: each thread owns a 4x4 block of outputs and computes each of them as its
 *      own dot product, still from global memory (the seed's loop order: rows, columns, k).
 *      The loads per output do not change; only the cache reuse between a thread's outputs does,
 *      which is why the seed calls the gain "slight".
 * Both handle any M, N, K by guarding each output, batch through blockIdx.z, epilogue at the store.
 */
#include "matmul_common.cuh"

#define V1_TILE 32
#define V15_T 16 /* threads per block side */
#define V15_V 4  /* outputs per thread side */

/* grid.x: tiles of 32x32 outputs in row-major tile order */
__global__ void __launch_bounds__(V1_TILE *V1_TILE) mm_v1_kernel(mm_args a) {
    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    int tiles_n = (a.N + V1_TILE - 1) / V1_TILE;
    int col = (int)(blockIdx.x % tiles_n) * V1_TILE + threadIdx.x;
    int row = (int)(blockIdx.x / tiles_n) * V1_TILE + threadIdx.y;
    if (row >= a.M || col >= a.N)
        return;
    const float *ar = A + (long long)row * a.K; /* (K) */
    const float *bc = B + col;                  /* (K) at stride N */
    float acc = 0.0f;
    for (int k = 0; k < a.K; k++)
        acc = fmaf(ar[k], bc[(long long)k * a.N], acc);
    C[(long long)row * a.N + col] = mm_epi(acc, col, a);
}

__global__ void __launch_bounds__(V15_T *V15_T) mm_v1_5_kernel(mm_args a) {
    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    const int TILE = V15_T * V15_V;
    int tiles_n = (a.N + TILE - 1) / TILE;
    int row0 = (int)(blockIdx.x / tiles_n) * TILE + threadIdx.y * V15_V;
    int col0 = (int)(blockIdx.x % tiles_n) * TILE + threadIdx.x * V15_V;
    for (int x = 0; x < V15_V; x++) {
        int row = row0 + x;
        if (row >= a.M)
            break;
        const float *ar = A + (long long)row * a.K; /* (K) */
        for (int y = 0; y < V15_V; y++) {
            int col = col0 + y;
            if (col >= a.N)
                break;
            const float *bc = B + col; /* (K) at stride N */
            float acc = 0.0f;
            for (int k = 0; k < a.K; k++)
                acc = fmaf(ar[k], bc[(long long)k * a.N], acc);
            C[(long long)row * a.N + col] = mm_epi(acc, col, a);
        }
    }
}

void mm_launch_v1(const mm_args &a, long long batch, cudaStream_t s) {
    long long tiles = (long long)((a.M + V1_TILE - 1) / V1_TILE) * ((a.N + V1_TILE - 1) / V1_TILE);
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        mm_v1_kernel<<<dim3((unsigned)tiles, 1, items), dim3(V1_TILE, V1_TILE), 0, s>>>(c);
        CUDA_LAUNCH_CHECK();
    });
}

void mm_launch_v1_5(const mm_args &a, long long batch, cudaStream_t s) {
    const int TILE = V15_T * V15_V;
    long long tiles = (long long)((a.M + TILE - 1) / TILE) * ((a.N + TILE - 1) / TILE);
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        mm_v1_5_kernel<<<dim3((unsigned)tiles, 1, items), dim3(V15_T, V15_T), 0, s>>>(c);
        CUDA_LAUNCH_CHECK();
    });
}
