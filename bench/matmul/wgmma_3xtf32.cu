/* wgmma_3xtf32.cu: standalone Hopper (sm_90a) 3xTF32 GEMM probe (issue 17): C = A B at FP32 accuracy
 * from a_lo b_hi + a_hi b_lo + a_hi b_hi as wgmma.mma_async m64nNk8 TF32 products. A pre-pass splits
 * A into A_hi, A_lo (M,Kp) and B into B_hi^T, B_lo^T (N,Kp) (wgmma reads TF32 only K-major); TMA
 * (128-byte swizzle, zero fill) feeds an mbarrier ring, one producer warp, two consumer warpgroups.
 * FLUSH > 0: fresh accumulators every FLUSH k-tiles, folded by FP32 adds (the tensor core's truncate).
 * Times every variant and cuBLAS strict FP32, errors against fp64; appends the table to argv[1];
 * argv[2] timed runs (30), argv[3] one shape index, argv[4] rasterization group (8). Build:
 * bench/matmul/build_wgmma.sh. The library's version: ops/cuda/matmul_3xtf32_wgmma.cu; the PTX
 * wrappers are the library's own (ops/cuda/matmul_wgmma_ptx.cuh). The kernel itself is not: it
 * keeps the variants measured (FLUSH, PROBE, 192- and 256-wide tiles, relu-only epilogue).
 */
#include <algorithm>
#include <string>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda.h> /* CUtensorMap and the encode function's type only: no -lcuda */
#include <cuda_runtime.h>

#include "../../ops/cuda/matmul_wgmma_ptx.cuh" /* relative: build_wgmma.sh passes no -I */

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)
#define CKB(x)                                                                                         \
    do {                                                                                               \
        cublasStatus_t s_ = (x);                                                                       \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_);         \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

/* ---- the split (pre-pass) -------------------------------------------------------------------- */

/* hi = x rounded to TF32 (half away from zero), lo = x - hi rounded the same way: both exact TF32
 * bit patterns, so the tensor core's truncation of its inputs drops nothing. */
static __device__ __forceinline__ void wg_split(float x, float &hi, float &lo) {
    const uint32_t h = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    hi = __uint_as_float(h);
    lo = __uint_as_float((__float_as_uint(x - hi) + 0x1000u) & 0xffffe000u);
}

/* A (rows, K) row-major -> hi, lo (rows, Kp), zeros in columns K .. Kp-1: block (x, y) does
 * columns 1024 y .. of row x, four a thread (no 64-bit division per thread). */
__global__ void wg_split_rows(const float *__restrict__ A, float *__restrict__ hi, float *__restrict__ lo, int K,
                              int Kp) {
    const int c = (blockIdx.y * blockDim.x + threadIdx.x) * 4;
    if (c >= Kp)
        return;
    const long long r = blockIdx.x;
    float x[4];
    if (K % 4 == 0) {
        const float4 v = __ldg(reinterpret_cast<const float4 *>(A + r * K + c));
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
#pragma unroll
        for (int e = 0; e < 4; e++)
            x[e] = c + e < K ? __ldg(A + r * K + c + e) : 0.0f;
    }
    float4 h, l;
    wg_split(x[0], h.x, l.x);
    wg_split(x[1], h.y, l.y);
    wg_split(x[2], h.z, l.z);
    wg_split(x[3], h.w, l.w);
    *reinterpret_cast<float4 *>(hi + r * Kp + c) = h;
    *reinterpret_cast<float4 *>(lo + r * Kp + c) = l;
}

/* B (K, N) row-major -> hi^T, lo^T (N, Kp) through a 32x32 shared tile (coalesced both ways);
 * block (32, 8). */
__global__ void wg_split_cols(const float *__restrict__ B, float *__restrict__ hi, float *__restrict__ lo, int K,
                              int N, int Kp) {
    __shared__ float th[32][33], tl[32][33];
    const int n0 = blockIdx.x * 32, k0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        const int k = k0 + ty + j, n = n0 + tx;
        const float x = k < K && n < N ? __ldg(B + (long long)k * N + n) : 0.0f;
        wg_split(x, th[ty + j][tx], tl[ty + j][tx]);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        const int n = n0 + ty + j, k = k0 + tx;
        if (n < N && k < Kp) {
            hi[(long long)n * Kp + k] = th[tx][ty + j];
            lo[(long long)n * Kp + k] = tl[tx][ty + j];
        }
    }
}

/* ---- PTX wrappers: the library's (matmul_wgmma_ptx.cuh), plus the wider products ------------- */

/* m64n192k8 and m64n256k8: tile widths the library does not use, measured here as variants */
static __device__ __forceinline__ void wg_mma_n192(float (&d)[96], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
                 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
                 "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95"
                 "}, %96, %97, p, 1, 1;\n}\n"
                 : WGT_ACC32(d, 0), WGT_ACC32(d, 32), WGT_ACC32(d, 64)
                 : "l"(da), "l"(db), "r"(scale_d));
}

static __device__ __forceinline__ void wg_mma_n256(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
                 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
                 "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
                 "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
                 "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
                 "}, %128, %129, p, 1, 1;\n}\n"
                 : WGT_ACC32(d, 0), WGT_ACC32(d, 32), WGT_ACC32(d, 64), WGT_ACC32(d, 96)
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* ---- the main kernel ------------------------------------------------------------------------- */

/* Block tile 128 x BN, k-tile 32 (one 128-byte swizzled row per operand row), STAGES deep. A stage
 * holds A_hi, A_lo (128 x 32) and B_hi^T, B_lo^T (BN x 32), each 1024-byte aligned. Warpgroup 0 is
 * the producer (one thread issues the TMA copies), warpgroups 1 and 2 each own 64 rows. */
template <int BN_, int STAGES_, int FLUSH_, int PROBE_ = 0>
struct wg_cfg {
    static constexpr int BM = 128, BN = BN_, BK = 32, STAGES = STAGES_, FLUSH = FLUSH_, THREADS = 384;
    /* PROBE (measurements, wrong results): 1: every copy reads k-tile 0, so the operands stay in
     * L2 and the time is that of the pipeline and the tensor cores alone; 2: no copies and no
     * waits for them, the products on whatever shared memory holds: the tensor cores alone */
    static constexpr int PROBE = PROBE_;
    static constexpr int NACC = BN / 2; /* accumulators per thread of an m64nBN warpgroup tile */
    static constexpr uint32_t A_BYTES = BM * BK * 4, B_BYTES = BN * BK * 4;
    static constexpr uint32_t STAGE_BYTES = 2 * A_BYTES + 2 * B_BYTES;
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8;
    static_assert(B_BYTES % 1024 == 0 && SMEM <= 227 * 1024, "stage layout");
};

struct wg_args {
    float *C;
    const float *bias; /* NULL: none */
    int M, N, Kp, relu, group_m, bcast_a, bcast_b;
    long long sc; /* elements between batch items of C */
};

template <int BN>
static __device__ __forceinline__ void wg_mma(float (&d)[BN / 2], uint64_t da, uint64_t db, int scale_d) {
    if constexpr (BN == 64)
        wgt_mma_n64(d, da, db, scale_d);
    else if constexpr (BN == 128)
        wgt_mma_n128(d, da, db, scale_d);
    else if constexpr (BN == 192)
        wg_mma_n192(d, da, db, scale_d);
    else
        wg_mma_n256(d, da, db, scale_d);
}

/* The 12 products of one k-tile (4 k-steps of 8, small terms first) into d; the first one
 * overwrites d when fresh. ah .. bl: shared addresses of this warpgroup's operand tiles. */
template <class CFG>
static __device__ __forceinline__ void wg_ktile(float (&d)[CFG::NACC], uint32_t ah, uint32_t al, uint32_t bh,
                                                uint32_t bl, bool fresh) {
#pragma unroll
    for (int k8 = 0; k8 < CFG::BK / 8; k8++) {
        const uint32_t o = 32u * k8; /* 8 TF32 = 32 bytes along the swizzled row */
        wg_mma<CFG::BN>(d, wgt_desc(al + o), wgt_desc(bh + o), fresh && k8 == 0 ? 0 : 1);
        wg_mma<CFG::BN>(d, wgt_desc(ah + o), wgt_desc(bl + o), 1);
        wg_mma<CFG::BN>(d, wgt_desc(ah + o), wgt_desc(bh + o), 1);
    }
}

static __device__ __forceinline__ float wg_epi(float v, int col, const wg_args &a) {
    if (a.bias)
        v += __ldg(a.bias + col);
    return a.relu ? fmaxf(v, 0.0f) : v;
}

/* Producer: one thread keeps the ring full (a stage is refilled once the 8 consumer warps have
 * released it). */
template <class CFG>
static __device__ __forceinline__ void wg_produce(const CUtensorMap *tah, const CUtensorMap *tal,
                                                  const CUtensorMap *tbh, const CUtensorMap *tbl, uint32_t base,
                                                  uint32_t bars, int ktiles, int m0, int n0, int ba, int bb) {
    constexpr int S = CFG::STAGES;
    for (int kt = 0; kt < (CFG::PROBE == 2 ? 0 : ktiles); kt++) {
        const int s = kt % S;
        if (kt >= S)
            wgt_bar_wait(bars + 8 * (S + s), ((kt / S) + 1) & 1);
        const uint32_t st = base + s * CFG::STAGE_BYTES, full = bars + 8 * s;
        const int k = CFG::PROBE ? 0 : kt * CFG::BK;
        wgt_bar_expect(full, CFG::STAGE_BYTES);
        wgt_tma3(st, tah, full, k, m0, ba);
        wgt_tma3(st + CFG::A_BYTES, tal, full, k, m0, ba);
        wgt_tma3(st + 2 * CFG::A_BYTES, tbh, full, k, n0, bb);
        wgt_tma3(st + 2 * CFG::A_BYTES + CFG::B_BYTES, tbl, full, k, n0, bb);
    }
}

/* k-tile kt's products into d (the first overwriting it when fresh), then wait for all groups
 * (W = 0) or all but this one (W = 1) and release the stage that is done. */
template <class CFG, int W>
static __device__ __forceinline__ void wg_step(float (&d)[CFG::NACC], uint32_t base, uint32_t bars, int kt, int cw,
                                               bool fresh) {
    constexpr int S = CFG::STAGES;
    const int s = kt % S;
    if (CFG::PROBE != 2)
        wgt_bar_wait(bars + 8 * s, (kt / S) & 1);
    const uint32_t ah = base + s * CFG::STAGE_BYTES + cw * 64 * 128, al = ah + CFG::A_BYTES;
    const uint32_t bh = base + s * CFG::STAGE_BYTES + 2 * CFG::A_BYTES, bl = bh + CFG::B_BYTES;
    wgt_keep(d);
    wgt_fence();
    wg_ktile<CFG>(d, ah, al, bh, bl, fresh);
    wgt_commit();
    wgt_wait<W>();
    wgt_keep(d);
    const int done = W == 0 ? kt : kt - 1;
    if (done >= 0 && threadIdx.x % 32 == 0)
        wgt_bar_arrive(bars + 8 * (S + done % S));
}

/* Consumer warpgroup cw: FLUSH > 0: fresh accumulators every FLUSH k-tiles added to acc; 0: one
 * chain, a group left in flight (stage released a k-tile late); < 0: one chain, each k-tile
 * waited for. */
template <class CFG>
static __device__ __forceinline__ void wg_consume(float (&acc)[CFG::NACC], uint32_t base, uint32_t bars, int ktiles,
                                                  int cw) {
#pragma unroll
    for (int i = 0; i < CFG::NACC; i++)
        acc[i] = 0.0f;
    if constexpr (CFG::FLUSH > 0) {
        float part[CFG::NACC];
#pragma unroll
        for (int i = 0; i < CFG::NACC; i++)
            part[i] = 0.0f;
        for (int kt = 0; kt < ktiles; kt++) {
            wg_step<CFG, 0>(part, base, bars, kt, cw, kt % CFG::FLUSH == 0);
            if (kt % CFG::FLUSH == CFG::FLUSH - 1 || kt == ktiles - 1)
#pragma unroll
                for (int i = 0; i < CFG::NACC; i++)
                    acc[i] += part[i];
        }
    } else {
        for (int kt = 0; kt < ktiles; kt++)
            wg_step<CFG, CFG::FLUSH == 0 ? 1 : 0>(acc, base, bars, kt, cw, false);
        wgt_wait<0>();
        wgt_keep(acc);
    }
}

/* Accumulator d[4j + 2h + e] of a thread is row 16 warp + lane/4 + 8h, column 8j + 2 (lane%4) + e. */
template <class CFG>
static __device__ __forceinline__ void wg_store(const float (&acc)[CFG::NACC], const wg_args &a, float *C, int row,
                                                int n0) {
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < CFG::BN / 8; j++) {
        const int col = n0 + j * 8 + 2 * t;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = row + 8 * h;
            if (r >= a.M || col >= a.N)
                continue;
            float *q = C + (long long)r * a.N + col;
            const float v0 = wg_epi(acc[4 * j + 2 * h], col, a);
            if (col + 1 < a.N) {
                const float v1 = wg_epi(acc[4 * j + 2 * h + 1], col + 1, a);
                if (a.N % 2 == 0)
                    *reinterpret_cast<float2 *>(q) = make_float2(v0, v1);
                else
                    q[0] = v0, q[1] = v1;
            } else {
                q[0] = v0;
            }
        }
    }
}

template <class CFG>
__global__ void __launch_bounds__(384, 1)
    wg_kernel(const __grid_constant__ CUtensorMap tah, const __grid_constant__ CUtensorMap tal,
              const __grid_constant__ CUtensorMap tbh, const __grid_constant__ CUtensorMap tbl, wg_args a) {
    extern __shared__ uint8_t wg_raw[];
    constexpr int S = CFG::STAGES;
    const uint32_t base = (wgt_smem(wg_raw) + 1023u) & ~1023u, bars = base + S * CFG::STAGE_BYTES;
    const int tiles_m = (a.M + CFG::BM - 1) / CFG::BM, tiles_n = (a.N + CFG::BN - 1) / CFG::BN;
    const int pid = blockIdx.x, width = a.group_m * tiles_n, first = (pid / width) * a.group_m;
    const int gsz = min(tiles_m - first, a.group_m);
    const int m0 = (first + (pid % width) % gsz) * CFG::BM, n0 = ((pid % width) / gsz) * CFG::BN;
    const int bz = blockIdx.z, ktiles = (a.Kp + CFG::BK - 1) / CFG::BK, wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            wgt_bar_init(bars + 8 * s, 1);       /* full: the producer's expect_tx */
            wgt_bar_init(bars + 8 * (S + s), 8); /* empty: one arrival per consumer warp */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) { /* the producer warpgroup gives its registers to the consumers */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0)
            wg_produce<CFG>(&tah, &tal, &tbh, &tbl, base, bars, ktiles, m0, n0, a.bcast_a ? 0 : bz,
                            a.bcast_b ? 0 : bz);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    float acc[CFG::NACC];
    wg_consume<CFG>(acc, base, bars, ktiles, wg - 1);
    const int row = m0 + (wg - 1) * 64 + (threadIdx.x % 128) / 32 * 16 + (threadIdx.x % 32) / 4;
    wg_store<CFG>(acc, a, a.C + bz * a.sc, row, n0);
}

/* ---- host: tensor maps, launches ------------------------------------------------------------- */

typedef CUresult (*wg_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                 const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static wg_encode_fn wg_encoder(void) {
    static wg_encode_fn fn;
    if (!fn) {
        cudaDriverEntryPointQueryResult q;
        void *p = NULL;
        CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !p) {
            fprintf(stderr, "cuTensorMapEncodeTiled not found in the driver\n");
            exit(1);
        }
        fn = (wg_encode_fn)p;
    }
    return fn;
}

/* (batch, rows, Kp) TF32 operand, boxes of (1, box_rows, 32), 128-byte swizzle, zeros outside */
static CUtensorMap wg_map(const float *p, long long rows, int Kp, long long batch, int box_rows) {
    CUtensorMap m;
    const cuuint64_t dims[3] = {(cuuint64_t)Kp, (cuuint64_t)rows, (cuuint64_t)batch};
    const cuuint64_t strides[2] = {(cuuint64_t)Kp * 4, (cuuint64_t)rows * Kp * 4};
    const cuuint32_t box[3] = {32, (cuuint32_t)box_rows, 1}, estr[3] = {1, 1, 1};
    CUresult r = wg_encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, (void *)p, dims, strides, box, estr,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed (%d) for rows %lld Kp %d\n", (int)r, rows, Kp);
        exit(1);
    }
    return m;
}

static int wg_group_m = 8; /* rasterization: tile rows per group (argv[4]) */

/* split operands of one problem (batch 1 here) */
struct wg_ops {
    float *ah, *al, *bh, *bl;
    int M, N, K, Kp;
};

static void wg_prepass(const float *A, const float *B, const wg_ops &o, cudaStream_t s) {
    wg_split_rows<<<dim3((unsigned)o.M, (unsigned)((o.Kp + 1023) / 1024)), 256, 0, s>>>(A, o.ah, o.al, o.K, o.Kp);
    CK(cudaGetLastError());
    wg_split_cols<<<dim3((o.N + 31) / 32, (o.Kp + 31) / 32), dim3(32, 8), 0, s>>>(B, o.bh, o.bl, o.K, o.N, o.Kp);
    CK(cudaGetLastError());
}

template <class CFG>
static void wg_launch(const wg_ops &o, float *C, const float *bias, int relu, cudaStream_t s) {
    static bool attr = false;
    if (!attr) {
        CK(cudaFuncSetAttribute(wg_kernel<CFG>, cudaFuncAttributeMaxDynamicSharedMemorySize, CFG::SMEM));
        attr = true;
    }
    const CUtensorMap tah = wg_map(o.ah, o.M, o.Kp, 1, CFG::BM), tal = wg_map(o.al, o.M, o.Kp, 1, CFG::BM);
    const CUtensorMap tbh = wg_map(o.bh, o.N, o.Kp, 1, CFG::BN), tbl = wg_map(o.bl, o.N, o.Kp, 1, CFG::BN);
    wg_args a;
    a.C = C, a.bias = bias, a.M = o.M, a.N = o.N, a.Kp = o.Kp, a.relu = relu, a.group_m = wg_group_m;
    a.bcast_a = a.bcast_b = 0, a.sc = (long long)o.M * o.N;
    const unsigned tiles = (unsigned)(((o.M + CFG::BM - 1) / CFG::BM) * ((o.N + CFG::BN - 1) / CFG::BN));
    wg_kernel<CFG><<<dim3(tiles, 1, 1), CFG::THREADS, CFG::SMEM, s>>>(tah, tal, tbh, tbl, a);
    CK(cudaGetLastError());
}

struct wg_variant {
    const char *name;
    void (*launch)(const wg_ops &, float *, const float *, int, cudaStream_t);
};
/* _f1: fresh accumulators every k-tile (the kept design); _f4: every 4; _f0: one chain, a group
 * left in flight (stage released a k-tile late); _f-1: one chain, each k-tile waited for; _probe:
 * _f1 reading k-tile 0 only (operands L2-resident; wrong results, time only); _mmaonly: _f1 without
 * copies (the tensor cores alone; wrong results, time only) */
#define WG_V(BN, ST, FL) {"128x" #BN "_s" #ST "_f" #FL, wg_launch<wg_cfg<BN, ST, FL>>}
static const wg_variant wg_variants[] = {
    WG_V(128, 3, 1), WG_V(128, 3, 4), WG_V(128, 3, 0), WG_V(128, 3, -1),
    {"128x128_s3_f1_probe", wg_launch<wg_cfg<128, 3, 1, 1>>}, {"128x128_s3_f1_mmaonly", wg_launch<wg_cfg<128, 3, 1, 2>>}, WG_V(192, 2, 1), WG_V(256, 2, 0), WG_V(64, 4, 1),
};
static const int wg_nvar = (int)(sizeof wg_variants / sizeof wg_variants[0]);

/* ---- checking and timing --------------------------------------------------------------------- */

/* normal(0,1) from a counter hash (Box-Muller): the same (seed, i) gives the same value */
static __device__ __forceinline__ uint32_t wg_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}
__global__ void wg_fill(float *x, long long n, uint64_t seed) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float u1 = (wg_hash(seed * 0x9e3779b97f4a7c15ull + 2 * i) + 1.0f) * 2.3283064e-10f;
    const float u2 = wg_hash(seed * 0x9e3779b97f4a7c15ull + 2 * i + 1) * 2.3283064e-10f;
    x[i] = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

/* fp64 reference of rows rows[0 .. nr-1] of A B into ref (nr, N): 16 rows x 128 columns a block */
__global__ void wg_ref(const float *A, const float *B, const int *rows, int nr, int N, int K, double *ref) {
    __shared__ double sa[16][64];
    const int r0 = blockIdx.y * 16, col = blockIdx.x * 128 + threadIdx.x;
    double s[16] = {0};
    for (int k0 = 0; k0 < K; k0 += 64) {
        __syncthreads();
        for (int q = threadIdx.x; q < 16 * 64; q += 128) {
            const int i = q / 64, k = k0 + q % 64;
            sa[i][q % 64] = r0 + i < nr && k < K ? (double)A[(long long)rows[r0 + i] * K + k] : 0.0;
        }
        __syncthreads();
        if (col < N)
            for (int kk = 0; kk < 64 && k0 + kk < K; kk++) {
                const double b = B[(long long)(k0 + kk) * N + col];
#pragma unroll
                for (int i = 0; i < 16; i++)
                    s[i] += sa[i][kk] * b;
            }
    }
    if (col < N)
        for (int i = 0; i < 16 && r0 + i < nr; i++)
            ref[(long long)(r0 + i) * N + col] = s[i];
}

__global__ void wg_count_bad(const float *c, long long n, unsigned long long *bad) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && !isfinite(c[i]))
        atomicAdd(bad, 1ull);
}

struct wg_check {
    std::vector<int> rows;
    std::vector<double> ref; /* (rows, N), with bias and relu when asked */
    int N;
};

/* relative Frobenius error over the sampled rows; NaN if any is not finite */
static double wg_error(const wg_check &ck, const float *C) {
    const int N = ck.N;
    std::vector<float> row(N);
    double num = 0, den = 0;
    for (size_t i = 0; i < ck.rows.size(); i++) {
        CK(cudaMemcpy(row.data(), C + (long long)ck.rows[i] * N, N * sizeof(float), cudaMemcpyDeviceToHost));
        for (int j = 0; j < N; j++) {
            const double r = ck.ref[i * N + j], d = (double)row[j] - r;
            if (!std::isfinite(row[j]))
                return NAN;
            num += d * d, den += r * r;
        }
    }
    return std::sqrt(num / den);
}

static unsigned long long wg_bad(const float *C, long long n) {
    static unsigned long long *bad;
    if (!bad)
        CK(cudaMalloc((void **)&bad, sizeof *bad));
    CK(cudaMemset(bad, 0, sizeof *bad));
    wg_count_bad<<<(unsigned)((n + 255) / 256), 256>>>(C, n, bad);
    CK(cudaGetLastError());
    unsigned long long h;
    CK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
    return h;
}

static float *wg_flush_buf;
static const size_t wg_flush_bytes = (size_t)256 << 20;

/* median of reps timed runs of f after warm runs, L2 flushed (256 MiB memset) before each */
template <class F>
static double wg_time_us(F f, int reps, int warm) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int r = 0; r < warm + reps; r++) {
        CK(cudaMemsetAsync(wg_flush_buf, r & 0xff, wg_flush_bytes, 0));
        CK(cudaEventRecord(e0, 0));
        f();
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= warm)
            ts.push_back(ms);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(ts.begin(), ts.end());
    return 1e3 * ts[ts.size() / 2];
}

struct wg_shape {
    int M, N, K, relu, bias;
};

/* The fp64 reference of the sampled rows (all up to M = 1024, else 256 evenly spaced), with bias
 * and relu as the shape asks. */
static wg_check wg_reference(const wg_shape &sh, const float *A, const float *B, const float *bias) {
    const int M = sh.M, N = sh.N, K = sh.K, nr = M <= 1024 ? M : 256;
    wg_check ck;
    ck.N = N;
    for (int i = 0; i < nr; i++)
        ck.rows.push_back((int)((long long)i * M / nr));
    int *drows;
    double *dref;
    CK(cudaMalloc((void **)&drows, nr * sizeof(int)));
    CK(cudaMalloc((void **)&dref, (size_t)nr * N * sizeof(double)));
    CK(cudaMemcpy(drows, ck.rows.data(), nr * sizeof(int), cudaMemcpyHostToDevice));
    wg_ref<<<dim3((N + 127) / 128, (nr + 15) / 16), 128>>>(A, B, drows, nr, N, K, dref);
    CK(cudaGetLastError());
    ck.ref.resize((size_t)nr * N);
    CK(cudaMemcpy(ck.ref.data(), dref, ck.ref.size() * sizeof(double), cudaMemcpyDeviceToHost));
    std::vector<float> hb(N);
    if (bias)
        CK(cudaMemcpy(hb.data(), bias, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < N; j++) {
            double &r = ck.ref[(size_t)i * N + j];
            r += bias ? hb[j] : 0.0;
            r = sh.relu && r < 0 ? 0.0 : r;
        }
    CK(cudaFree(drows));
    CK(cudaFree(dref));
    return ck;
}

/* One shape: cuBLAS (no epilogue shapes only), the split, every variant; a table row each. */
static void wg_run_shape(const wg_shape &sh, cublasHandle_t h, int reps, std::string &table) {
    const int M = sh.M, N = sh.N, K = sh.K, Kp = (K + 3) / 4 * 4;
    float *A, *B, *C, *bias = NULL;
    wg_ops o;
    o.M = M, o.N = N, o.K = K, o.Kp = Kp;
    CK(cudaMalloc((void **)&A, (size_t)M * K * 4));
    CK(cudaMalloc((void **)&B, (size_t)K * N * 4));
    CK(cudaMalloc((void **)&C, (size_t)M * N * 4));
    for (float **q : {&o.ah, &o.al})
        CK(cudaMalloc((void **)q, (size_t)M * Kp * 4));
    for (float **q : {&o.bh, &o.bl})
        CK(cudaMalloc((void **)q, (size_t)N * Kp * 4));
    wg_fill<<<(unsigned)(((long long)M * K + 255) / 256), 256>>>(A, (long long)M * K, 11 + M + K);
    wg_fill<<<(unsigned)(((long long)K * N + 255) / 256), 256>>>(B, (long long)K * N, 29 + N + K);
    if (sh.bias) {
        CK(cudaMalloc((void **)&bias, (size_t)N * 4));
        wg_fill<<<(N + 255) / 256, 256>>>(bias, N, 5);
    }
    CK(cudaGetLastError());
    const wg_check ck = wg_reference(sh, A, B, bias);
    const double flops = 2.0 * M * N * K;
    /* cuBLAS strict FP32 (row-major C = A B as column-major C^T = B^T A^T), no epilogue */
    const float one = 1.0f, zero = 0.0f;
    auto blas = [&]() { CKB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N)); };
    char blas_cells[160] = "- | - | - | - | -"; /* no cuBLAS run with an epilogue */
    double blas_err = NAN, blas_us = NAN;
    if (!sh.bias && !sh.relu) {
        CK(cudaMemset(C, 0xff, (size_t)M * N * 4));
        blas();
        CK(cudaDeviceSynchronize());
        blas_err = wg_error(ck, C);
        blas_us = wg_time_us(blas, reps, 3);
    }
    const double split_us = wg_time_us([&]() { wg_prepass(A, B, o, 0); }, reps, 3);
    for (int v = 0; v < wg_nvar; v++) {
        CK(cudaMemset(C, 0xff, (size_t)M * N * 4)); /* NaN: every output must be written */
        CK(cudaMemset(o.ah, 0xff, (size_t)M * Kp * 4));
        CK(cudaMemset(o.bl, 0xff, (size_t)N * Kp * 4));
        wg_prepass(A, B, o, 0);
        wg_variants[v].launch(o, C, bias, sh.relu, 0);
        CK(cudaDeviceSynchronize());
        const unsigned long long nbad = wg_bad(C, (long long)M * N);
        const double err = wg_error(ck, C);
        const double us = wg_time_us([&]() { wg_variants[v].launch(o, C, bias, sh.relu, 0); }, reps, 3);
        if (!std::isnan(blas_us))
            snprintf(blas_cells, sizeof blas_cells, "%.1f | %.1f | %.2e | %.2f | %.2f", blas_us,
                     flops / blas_us * 1e-6, blas_err, blas_us / us, blas_us / (us + split_us));
        char line[512];
        snprintf(line, sizeof line, "| %dx%dx%d%s | %s | %.1f | %.1f | %.1f | %.1f | %.2e%s | %s |\n", M, N, K,
                 sh.bias ? " bias_relu" : "", wg_variants[v].name, us, flops / us * 1e-6, split_us,
                 flops / (us + split_us) * 1e-6, err, nbad ? " NOT WRITTEN" : "", blas_cells);
        table += line;
        printf("%s", line);
        fflush(stdout);
    }
    for (float *q : {A, B, C, o.ah, o.al, o.bh, o.bl})
        CK(cudaFree(q));
    if (bias)
        CK(cudaFree(bias));
}

int main(int argc, char **argv) {
    const char *out_path = argc > 1 ? argv[1] : NULL;
    const int reps = argc > 2 ? atoi(argv[2]) : 30;
    const int only = argc > 3 ? atoi(argv[3]) : -1; /* one shape of the list (a hung kernel stops only it) */
    wg_group_m = argc > 4 ? atoi(argv[4]) : 8;
    if (reps < 1 || wg_group_m < 1) {
        fprintf(stderr, "usage: wgmma_3xtf32 OUT.md [REPS >= 1] [SHAPE_INDEX] [GROUP_M >= 1]\n");
        return 2;
    }
    int dev;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    if (prop.major != 9) {
        fprintf(stderr, "needs a compute capability 9.x GPU (this is %d.%d, %s)\n", prop.major, prop.minor, prop.name);
        return 1;
    }
    FILE *out = out_path ? fopen(out_path, "a") : NULL;
    if (out_path && !out) {
        fprintf(stderr, "%s: cannot open for writing\n", out_path);
        return 1;
    }
    char head[512];
    snprintf(head, sizeof head, "device: %s, %d SMs, cc %d.%d; median of %d L2-flushed runs; group_m %d\n",
             prop.name, prop.multiProcessorCount, prop.major, prop.minor, reps, wg_group_m);
    printf("%s", head);
    if (out)
        fputs(head, out);
    CK(cudaMalloc((void **)&wg_flush_buf, wg_flush_bytes));
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    CKB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH)); /* strict FP32: no TF32 */
    const wg_shape shapes[] = {
        {1000, 1001, 999, 1, 1}, {256, 256, 64, 0, 0},   {128, 768, 768, 0, 0}, {128, 3072, 768, 0, 0},
        {128, 768, 3072, 0, 0},  {1024, 1024, 1024, 0, 0}, {2048, 2048, 2048, 0, 0}, {4096, 4096, 4096, 0, 0},
        {8192, 8192, 8192, 0, 0},
    };
    std::string table = "| M x N x K | kernel | main us | main TF | split us | with split TF | rel err | "
                        "cuBLAS us | cuBLAS TF | cuBLAS err | main / cuBLAS | with split / cuBLAS |\n"
                        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++)
        if (only < 0 || si == only)
            wg_run_shape(shapes[si], h, reps, table);
    printf("\n%s", table.c_str());
    if (out) {
        fputs(table.c_str(), out);
        fclose(out);
    }
    CKB(cublasDestroy(h));
    return 0;
}
