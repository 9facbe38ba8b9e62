/* matmul_v2_v3.cu: rungs v2 and v3 of the ladder (seed notes "V2 with partial sum" and
 * "V3 with shared memory").
 *
 * v2  register tile from outer products: each thread owns a 4x4 output tile in registers and,
 *     for each k, reads a column piece of A (4 values) and a row piece of B (4 values) once and
 *     adds their outer product. Global loads drop from 2*M*N*K to 2*M*N*K/4. 16x16 threads, a
 *     64x64 tile per block.
 * v3  shared-memory tiling with cooperative fetch: the block stages a 64x16 slice of A and a
 *     16x64 slice of B in shared memory, every thread fetching its share (4 + 4 elements, the
 *     seed's flattened-index loop), then runs the v2 outer products out of shared memory. Global
 *     traffic drops by the block tile (64) instead of the thread tile (4).
 * Edges: loads outside A or B read as 0, outputs outside C are not stored.
 */
#include "matmul_common.cuh"

#define V2_T 16 /* threads per block side */
#define V2_V 4  /* outputs per thread side */

__global__ void __launch_bounds__(V2_T *V2_T) mm_v2_kernel(mm_args a) {
    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    const int TILE = V2_T * V2_V;
    int tiles_n = (a.N + TILE - 1) / TILE;
    int row0 = (int)(blockIdx.x / tiles_n) * TILE + threadIdx.y * V2_V;
    int col0 = (int)(blockIdx.x % tiles_n) * TILE + threadIdx.x * V2_V;

    const float *arow[V2_V]; /* each (K) */
    bool rok[V2_V], cok[V2_V];
#pragma unroll
    for (int x = 0; x < V2_V; x++) {
        rok[x] = row0 + x < a.M;
        arow[x] = A + (long long)(rok[x] ? row0 + x : 0) * a.K;
        cok[x] = col0 + x < a.N;
    }
    float c[V2_V][V2_V] = {};
    const float *brow = B; /* row k of B, (N) */
    for (int k = 0; k < a.K; k++, brow += a.N) {
        float av[V2_V], bv[V2_V];
#pragma unroll
        for (int x = 0; x < V2_V; x++) {
            av[x] = rok[x] ? arow[x][k] : 0.0f;
            bv[x] = cok[x] ? brow[col0 + x] : 0.0f;
        }
#pragma unroll
        for (int x = 0; x < V2_V; x++)
#pragma unroll
            for (int y = 0; y < V2_V; y++)
                c[x][y] = fmaf(av[x], bv[y], c[x][y]);
    }
#pragma unroll
    for (int x = 0; x < V2_V; x++) {
        if (!rok[x])
            continue;
#pragma unroll
        for (int y = 0; y < V2_V; y++)
            if (cok[y])
                C[(long long)(row0 + x) * a.N + col0 + y] = mm_epi(c[x][y], col0 + y, a);
    }
}

#define V3_L 64 /* block tile side */
#define V3_S 16 /* k-step */
#define V3_T 16 /* threads per block side */
#define V3_V 4  /* outputs per thread side */

__global__ void __launch_bounds__(V3_T *V3_T) mm_v3_kernel(mm_args a) {
    __shared__ float sA[V3_L][V3_S]; /* (64 rows of A, 16 k) */
    __shared__ float sB[V3_S][V3_L]; /* (16 k, 64 columns of B) */
    const float *A, *B;
    float *C;
    mm_batch_offsets(a, A, B, C);
    int tiles_n = (a.N + V3_L - 1) / V3_L;
    int m0 = (int)(blockIdx.x / tiles_n) * V3_L;
    int n0 = (int)(blockIdx.x % tiles_n) * V3_L;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * V3_T + tx, nthreads = V3_T * V3_T;

    float c[V3_V][V3_V] = {};
    for (int k0 = 0; k0 < a.K; k0 += V3_S) {
        __syncthreads(); /* everyone is done reading the previous slices */
#pragma unroll
        for (int j = 0; j < V3_L * V3_S / nthreads; j++) {
            int idx = j * nthreads + tid;
            int y = idx / V3_S, x = idx % V3_S;
            int gm = m0 + y, gk = k0 + x;
            sA[y][x] = (gm < a.M && gk < a.K) ? A[(long long)gm * a.K + gk] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < V3_S * V3_L / nthreads; j++) {
            int idx = j * nthreads + tid;
            int y = idx / V3_L, x = idx % V3_L;
            int gk = k0 + y, gn = n0 + x;
            sB[y][x] = (gk < a.K && gn < a.N) ? B[(long long)gk * a.N + gn] : 0.0f;
        }
        __syncthreads(); /* the slices are complete */
#pragma unroll
        for (int ki = 0; ki < V3_S; ki++) {
            float av[V3_V], bv[V3_V];
#pragma unroll
            for (int x = 0; x < V3_V; x++) {
                av[x] = sA[ty * V3_V + x][ki];
                bv[x] = sB[ki][tx * V3_V + x];
            }
#pragma unroll
            for (int y = 0; y < V3_V; y++)
#pragma unroll
                for (int x = 0; x < V3_V; x++)
                    c[y][x] = fmaf(av[y], bv[x], c[y][x]);
        }
    }
#pragma unroll
    for (int y = 0; y < V3_V; y++) {
        int row = m0 + ty * V3_V + y;
        if (row >= a.M)
            continue;
#pragma unroll
        for (int x = 0; x < V3_V; x++) {
            int col = n0 + tx * V3_V + x;
            if (col < a.N)
                C[(long long)row * a.N + col] = mm_epi(c[y][x], col, a);
        }
    }
}

void mm_launch_v2(const mm_args &a, long long batch, cudaStream_t s) {
    const int TILE = V2_T * V2_V;
    long long tiles = (long long)((a.M + TILE - 1) / TILE) * ((a.N + TILE - 1) / TILE);
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        mm_v2_kernel<<<dim3((unsigned)tiles, 1, items), dim3(V2_T, V2_T), 0, s>>>(c);
        CUDA_LAUNCH_CHECK();
    });
}

void mm_launch_v3(const mm_args &a, long long batch, cudaStream_t s) {
    long long tiles = (long long)((a.M + V3_L - 1) / V3_L) * ((a.N + V3_L - 1) / V3_L);
    mm_batch_chunks(a, batch, [&](const mm_args &c, unsigned items) {
        mm_v3_kernel<<<dim3((unsigned)tiles, 1, items), dim3(V3_T, V3_T), 0, s>>>(c);
        CUDA_LAUNCH_CHECK();
    });
}
