/* matmul_3xtf32_wgmma.cu: the Hopper path of the 3xTF32 matmul (issue 17). A pre-pass splits A (M,K)
 * into A_hi, A_lo (M,Kp) and B (K,N) into B_hi^T, B_lo^T (N,Kp), TF32 bit patterns (Kp = K rounded up
 * to 4, zero padded) in a workspace: wgmma reads TF32 operands only K-major. TMA streams the four
 * tiles (128-byte swizzle, zeros outside: any M, N, K) through an mbarrier ring; warpgroup 0
 * produces, warpgroups 1 and 2 issue wgmma m64nBNk8, a_lo b_hi + a_hi b_lo + a_hi b_hi, into fresh
 * accumulators every k-tile, folded into the sums by FP32 adds (the tensor core's adds truncate: one
 * chain over all of K gave 2.9e-5 at 4096^3). The device code needs sm_90a (CMakeLists.txt adds it
 * for this file); elsewhere the kernel is a stub that mm_3xtf32_wgmma_available() detects.
 * An operand constant across runs (a weight) can be split once (mm_3xtf32_presplit, kept by the
 * caller) and matched by address in the node's list (mm_3xtf32_presplit_node_set): a product then
 * splits only its other operand, and smaller problems pay on wgmma (wgt_pick).
 * Numbers: bench/matmul/wgmma-h100.md, bench/matmul/README.md.
 */
#include <stdint.h>
#include <string.h>

#include <cuda.h> /* CUtensorMap and the encoder's types only: the entry point comes from the runtime */

#include "base.h"
#include "matmul_common.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WGT_STUB 1 /* device pass without wgmma (sm_90 without "a", other archs) */
#endif

/* ---- tile configurations ------------------------------------------------------------------- */

/* Block tile 128 x BN, k-tile 32 (one 128-byte swizzled row per operand row), STAGES deep: a stage
 * is A_hi, A_lo (128 x 32) and B_hi^T, B_lo^T (BN x 32), each 1024-byte aligned. */
template <int BN_, int STAGES_>
struct wgt_cfg {
    static constexpr int BM = 128, BN = BN_, BK = 32, STAGES = STAGES_, THREADS = 384;
    static constexpr int NACC = BN / 2; /* accumulators per thread of an m64 x BN warpgroup tile */
    static constexpr uint32_t A_BYTES = BM * BK * 4, B_BYTES = BN * BK * 4;
    static constexpr uint32_t STAGE_BYTES = 2 * A_BYTES + 2 * B_BYTES;
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024; /* + alignment slack */
    static_assert(B_BYTES % 1024 == 0 && SMEM <= 227 * 1024 && (BN == 64 || BN == 128), "stage layout");
};

/* The kernel's arguments: the FP32 kernels' block (C, bias, act, shape, batch0, group_m; A and B
 * unused) and the split operands' padded k and broadcast flags. */
struct wgt_args {
    mm_args a;
    int kp, bcast_a, bcast_b;
};

#ifndef WGT_STUB
/* ---- PTX wrappers: mbarrier, TMA, wgmma (sm_90a only, hence inside the guard) ---------------- */
#include "matmul_wgmma_ptx.cuh" /* shared with bench/matmul/wgmma_3xtf32.cu */

template <int BN>
static __device__ __forceinline__ void wgt_mma(float (&d)[BN / 2], uint64_t da, uint64_t db, int scale_d) {
    if constexpr (BN == 64)
        wgt_mma_n64(d, da, db, scale_d);
    else
        wgt_mma_n128(d, da, db, scale_d);
}

/* The 12 products of one k-tile (4 k-steps of 8, small terms first) into d, the first one
 * overwriting it. ah .. bl: shared addresses of this warpgroup's operand tiles. */
template <class CFG>
static __device__ __forceinline__ void wgt_ktile(float (&d)[CFG::NACC], uint32_t ah, uint32_t al, uint32_t bh,
                                                 uint32_t bl) {
#pragma unroll
    for (int k8 = 0; k8 < CFG::BK / 8; k8++) {
        const uint32_t o = 32u * k8; /* 8 TF32 = 32 bytes along the swizzled row */
        wgt_mma<CFG::BN>(d, wgt_desc(al + o), wgt_desc(bh + o), k8 == 0 ? 0 : 1);
        wgt_mma<CFG::BN>(d, wgt_desc(ah + o), wgt_desc(bl + o), 1);
        wgt_mma<CFG::BN>(d, wgt_desc(ah + o), wgt_desc(bh + o), 1);
    }
}

/* Producer: one thread keeps the ring full (a stage is refilled once both consumer warpgroups'
 * 8 warps have released it). */
template <class CFG>
static __device__ __forceinline__ void wgt_produce(const CUtensorMap *tah, const CUtensorMap *tal,
                                                   const CUtensorMap *tbh, const CUtensorMap *tbl, uint32_t base,
                                                   uint32_t full, uint32_t empty, int ktiles, int m0, int n0,
                                                   int ba, int bb) {
    constexpr int S = CFG::STAGES;
    for (int kt = 0; kt < ktiles; kt++) {
        const int s = kt % S;
        if (kt >= S)
            wgt_bar_wait(empty + 8 * s, ((kt / S) + 1) & 1);
        const uint32_t st = base + s * CFG::STAGE_BYTES, f = full + 8 * s;
        wgt_bar_expect(f, CFG::STAGE_BYTES); /* zero-filled parts of a box count too */
        wgt_tma3(st, tah, f, kt * CFG::BK, m0, ba);
        wgt_tma3(st + CFG::A_BYTES, tal, f, kt * CFG::BK, m0, ba);
        wgt_tma3(st + 2 * CFG::A_BYTES, tbh, f, kt * CFG::BK, n0, bb);
        wgt_tma3(st + 2 * CFG::A_BYTES + CFG::B_BYTES, tbl, f, kt * CFG::BK, n0, bb);
    }
}

/* Consumer warpgroup cw (rows 64 cw .. 64 cw + 63 of the tile): each k-tile's products into fresh
 * accumulators, waited for, the stage released, then added to acc (round to nearest). */
template <class CFG>
static __device__ __forceinline__ void wgt_consume(float (&acc)[CFG::NACC], uint32_t base, uint32_t full,
                                                   uint32_t empty, int ktiles, int cw) {
    constexpr int S = CFG::STAGES;
    float part[CFG::NACC];
#pragma unroll
    for (int i = 0; i < CFG::NACC; i++)
        acc[i] = part[i] = 0.0f;
    for (int kt = 0; kt < ktiles; kt++) {
        const int s = kt % S;
        wgt_bar_wait(full + 8 * s, (kt / S) & 1);
        const uint32_t ah = base + s * CFG::STAGE_BYTES + cw * 64 * 128, al = ah + CFG::A_BYTES;
        const uint32_t bh = base + s * CFG::STAGE_BYTES + 2 * CFG::A_BYTES, bl = bh + CFG::B_BYTES;
        wgt_keep(part);
        wgt_fence();
        wgt_ktile<CFG>(part, ah, al, bh, bl);
        wgt_commit();
        wgt_wait<0>();
        wgt_keep(part);
        if (threadIdx.x % 32 == 0)
            wgt_bar_arrive(empty + 8 * s);
#pragma unroll
        for (int i = 0; i < CFG::NACC; i++)
            acc[i] += part[i];
    }
}

/* act(v + bias[col]) with the activation fixed at compile time (mm_epi's switch folded away) */
template <int ACT>
static __device__ __forceinline__ float wgt_epi(float v, int col, const mm_args &a) {
    if (a.has_bias)
        v += __ldg(a.bias + col);
    return mm_act_f(v, ACT);
}

/* Accumulator d[4j + 2h + e] of a thread is row 16 warp + lane/4 + 8h, column 8j + 2 (lane%4) + e.
 * One instantiation per activation (wgt_store_act): with mm_epi's run-time switch inside this
 * unrolled loop the epilogue was 15 000 instructions of jump tables, and the whole product ran
 * 7% (4096^3) to 11% (2048^3) slower than the same main loop with a plain store. */
template <class CFG, int ACT>
static __device__ __forceinline__ void wgt_store(const float (&acc)[CFG::NACC], const mm_args &a, float *C, int row,
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
            const float v0 = wgt_epi<ACT>(acc[4 * j + 2 * h], col, a);
            if (col + 1 >= a.N) {
                q[0] = v0;
                continue;
            }
            const float v1 = wgt_epi<ACT>(acc[4 * j + 2 * h + 1], col + 1, a);
            if (a.vec_c) /* N % 4 == 0, aligned rows: 8-byte aligned */
                *reinterpret_cast<float2 *>(q) = make_float2(v0, v1);
            else
                q[0] = v0, q[1] = v1;
        }
    }
}

template <class CFG>
static __device__ __forceinline__ void wgt_store_act(const float (&acc)[CFG::NACC], const mm_args &a, float *C,
                                                     int row, int n0) {
    switch (a.act) {
    case MM_ACT_RELU:
        return wgt_store<CFG, MM_ACT_RELU>(acc, a, C, row, n0);
    case MM_ACT_GELU:
        return wgt_store<CFG, MM_ACT_GELU>(acc, a, C, row, n0);
    case MM_ACT_SILU:
        return wgt_store<CFG, MM_ACT_SILU>(acc, a, C, row, n0);
    case MM_ACT_GELU_TANH:
        return wgt_store<CFG, MM_ACT_GELU_TANH>(acc, a, C, row, n0);
    case MM_ACT_RELU6:
        return wgt_store<CFG, MM_ACT_RELU6>(acc, a, C, row, n0);
    case MM_ACT_HARDSWISH:
        return wgt_store<CFG, MM_ACT_HARDSWISH>(acc, a, C, row, n0);
    default:
        return wgt_store<CFG, MM_ACT_NONE>(acc, a, C, row, n0);
    }
}
#endif /* !WGT_STUB */

/* The barriers are static shared memory: a non-zero sharedSizeBytes tells the host that the loaded
 * code is the sm_90a one (wgt_loaded). */
template <class CFG>
__global__ void __launch_bounds__(384, 1)
    wgt_kernel(const __grid_constant__ CUtensorMap tah, const __grid_constant__ CUtensorMap tal,
               const __grid_constant__ CUtensorMap tbh, const __grid_constant__ CUtensorMap tbl, wgt_args w) {
#ifdef WGT_STUB
    __trap();
#else
    __shared__ __align__(8) uint64_t wgt_bars[2 * CFG::STAGES];
    extern __shared__ uint8_t wgt_raw[];
    const mm_args &a = w.a;
    const uint32_t base = (wgt_smem(wgt_raw) + 1023u) & ~1023u, full = wgt_smem(wgt_bars);
    const uint32_t empty = full + 8 * CFG::STAGES;
    const int tiles_m = (a.M + CFG::BM - 1) / CFG::BM, tiles_n = (a.N + CFG::BN - 1) / CFG::BN;
    const int pid = blockIdx.x, width = a.group_m * tiles_n, first = (pid / width) * a.group_m;
    const int gsz = min(tiles_m - first, a.group_m);
    const int m0 = (first + (pid % width) % gsz) * CFG::BM, n0 = ((pid % width) / gsz) * CFG::BN;
    const int bz = blockIdx.z + a.batch0, ktiles = (w.kp + CFG::BK - 1) / CFG::BK, wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < CFG::STAGES; s++) {
            wgt_bar_init(full + 8 * s, 1);  /* the producer's expect_tx */
            wgt_bar_init(empty + 8 * s, 8); /* one arrival per consumer warp */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) { /* the producer warpgroup gives its registers to the consumers */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0)
            wgt_produce<CFG>(&tah, &tal, &tbh, &tbl, base, full, empty, ktiles, m0, n0, w.bcast_a ? 0 : bz,
                             w.bcast_b ? 0 : bz);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    float acc[CFG::NACC];
    wgt_consume<CFG>(acc, base, full, empty, ktiles, wg - 1);
    const int row = m0 + (wg - 1) * 64 + (threadIdx.x % 128) / 32 * 16 + (threadIdx.x % 32) / 4;
    wgt_store_act<CFG>(acc, a, a.C + (long long)bz * a.sc, row, n0);
#endif
}

/* ---- the split (pre-pass) -------------------------------------------------------------------- */

/* hi = x rounded to TF32 (half away from zero), lo = x - hi rounded the same way: both exact TF32
 * bit patterns, so the tensor core's truncation of its inputs drops nothing. */
static __device__ __forceinline__ void wgt_split(float x, float &hi, float &lo) {
    const uint32_t h = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    hi = __uint_as_float(h);
    lo = __uint_as_float((__float_as_uint(x - hi) + 0x1000u) & 0xffffe000u);
}

/* items x (rows, K) at stride sa -> hi, lo (items, rows, kp), zeros in columns K .. kp-1: block
 * (x, y) does columns 1024 y .. of row x over all items, four a thread (vec: 16-byte loads); no
 * 64-bit division per thread. */
__global__ void wgt_split_rows(const float *__restrict__ A, long long sa, float *__restrict__ hi,
                               float *__restrict__ lo, int rows, int K, int kp, int vec) {
    const int c = (blockIdx.y * blockDim.x + threadIdx.x) * 4;
    if (c >= kp)
        return;
    const long long r = blockIdx.x, b = blockIdx.x / (unsigned)rows; /* r: row over all items */
    const float *src = A + b * sa + (r - b * rows) * K + c;
    float x[4];
    if (vec) {
        const float4 v = __ldg(reinterpret_cast<const float4 *>(src));
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
#pragma unroll
        for (int e = 0; e < 4; e++)
            x[e] = c + e < K ? __ldg(src + e) : 0.0f;
    }
    float4 h, l;
    wgt_split(x[0], h.x, l.x);
    wgt_split(x[1], h.y, l.y);
    wgt_split(x[2], h.z, l.z);
    wgt_split(x[3], h.w, l.w);
    *reinterpret_cast<float4 *>(hi + r * kp + c) = h;
    *reinterpret_cast<float4 *>(lo + r * kp + c) = l;
}

/* item b0 + blockIdx.z of B (K, N) at stride sb -> hi^T, lo^T (N, kp) of that item, through a
 * 32 x 32 shared tile (coalesced both ways); block (32, 8). */
__global__ void wgt_split_cols(const float *__restrict__ B, long long sb, float *__restrict__ hi,
                               float *__restrict__ lo, long long b0, int K, int N, int kp) {
    __shared__ float th[32][33], tl[32][33];
    const long long b = b0 + blockIdx.z;
    const int n0 = blockIdx.x * 32, k0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
    B += b * sb;
    hi += b * N * (long long)kp;
    lo += b * N * (long long)kp;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        const int k = k0 + ty + j, n = n0 + tx;
        const float x = k < K && n < N ? __ldg(B + (long long)k * N + n) : 0.0f;
        wgt_split(x, th[ty + j][tx], tl[ty + j][tx]);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        const int n = n0 + ty + j, k = k0 + tx;
        if (n < N && k < kp) {
            hi[(long long)n * kp + k] = th[tx][ty + j];
            lo[(long long)n * kp + k] = tl[tx][ty + j];
        }
    }
}

/* ---- host: availability, workspace, tensor maps, the choice ------------------------------------ */

typedef CUresult (*wgt_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                  const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

typedef wgt_cfg<128, 3> wgt_big;  /* 1 block per SM, 192 KB of stages */
typedef wgt_cfg<64, 4> wgt_small; /* twice the tiles, for problems of about one wave */

static mm_wgmma_mode wgt_mode = MM_WGMMA_AUTO;
static long long wgt_launches;
static wgt_encode_fn wgt_encode;

/* cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda); NULL if missing */
static wgt_encode_fn wgt_encoder(void) {
    static bool tried = false;
    if (!tried) {
        tried = true;
        cudaDriverEntryPointQueryResult q;
        void *fn = NULL;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            wgt_encode = (wgt_encode_fn)fn;
        (void)cudaGetLastError();
    }
    return wgt_encode;
}

/* 1 if the loaded code of kernel CFG is the sm_90a one (static shared memory: the barriers) and the
 * device gives it the shared memory it asks for */
template <class CFG>
static int wgt_loaded(void) {
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, wgt_kernel<CFG>) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (fa.sharedSizeBytes == 0 || mm_device()->max_smem_optin < CFG::SMEM + (int)fa.sharedSizeBytes)
        return 0;
    CUDA_CHECK(cudaFuncSetAttribute(wgt_kernel<CFG>, cudaFuncAttributeMaxDynamicSharedMemorySize, CFG::SMEM));
    return 1;
}

int32_t mm_3xtf32_wgmma_available(void) {
    static int have = -1;
    if (have < 0) {
        const mm_device_info *d = mm_device();
        have = d->cc_major == 9 && d->cc_minor == 0 && wgt_encoder() && wgt_loaded<wgt_big>() &&
               wgt_loaded<wgt_small>();
    }
    return have;
}

void mm_3xtf32_wgmma_set(mm_wgmma_mode m) { wgt_mode = m; }

mm_wgmma_mode mm_3xtf32_wgmma_get(void) { return wgt_mode; }

/* MM_KERNEL_WGMMA choices name the configurations by their tile (cfg i is wgt_pick's i + 1) */
static const char *const wgt_names[MM_WGMMA_CONFIGS] = {"128x128", "128x64"};

const char *mm_3xtf32_wgmma_config_name(int32_t cfg) {
    return cfg >= 0 && cfg < MM_WGMMA_CONFIGS ? wgt_names[cfg] : "?";
}

int mm_3xtf32_wgmma_config_find(const char *name) {
    for (int i = 0; name && i < MM_WGMMA_CONFIGS; i++)
        if (!strcmp(name, wgt_names[i]))
            return i;
    return -1;
}

int64_t mm_3xtf32_wgmma_launches(void) { return wgt_launches; }

/* (items, rows, kp) split operand, boxes of (1, box_rows, 32), 128-byte swizzle, zeros outside */
static bool wgt_map(CUtensorMap *m, const float *p, long long rows, int kp, long long items, int box_rows) {
    const cuuint64_t dims[3] = {(cuuint64_t)kp, (cuuint64_t)rows, (cuuint64_t)items};
    const cuuint64_t strides[2] = {(cuuint64_t)kp * 4, (cuuint64_t)rows * kp * 4};
    const cuuint32_t box[3] = {32, (cuuint32_t)box_rows, 1}, estr[3] = {1, 1, 1};
    return wgt_encoder()(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, (void *)p, dims, strides, box, estr,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* The split operands (A_hi, A_lo, B_hi^T, B_lo^T back to back), grown on demand; launches that share
 * it are ordered (one stream), as the other kernels' workspaces. false if it cannot be had. */
static float *wgt_ws;
static size_t wgt_ws_floats;

static bool wgt_workspace(size_t floats) {
    if (floats <= wgt_ws_floats)
        return true;
    if (wgt_ws)
        CUDA_CHECK(cudaFree(wgt_ws)); /* synchronizes: no launch still uses it */
    wgt_ws = NULL;
    wgt_ws_floats = 0;
    if (cudaMalloc((void **)&wgt_ws, floats * sizeof(float)) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory: the mma.sync path needs no workspace */
        wgt_ws = NULL;
        return false;
    }
    wgt_ws_floats = floats;
    return true;
}

/* The dispatch rule, in tiles (measured on an H100: bench/matmul/README.md, "Weights split once").
 * A problem goes to wgmma when its 128x64 tiles fill at least WGT_MIN_PCT percent of the SMs, or
 * WGT_MIN_PCT_PRESPLIT percent when one operand is pre-split; otherwise mma.sync runs it (it has
 * split-K: few tiles over a long k are its ground). With B pre-split (BERT, m = 128 x batch):
 * 36 tiles (27%) 128x2304x768 22.5 us against 26.3, 48 tiles 512x768x3072 58.1 against 88.7,
 * but 24 tiles 256x768x3072 54.8 against 51.3 and 12 tiles 128x768x768 20.2 against 19.1. With
 * the per-call split (6-14 us more): 96 tiles 1024x768x768 27.9 against 46.6, 72 tiles
 * 256x2304x768 32.6 against 45.5, but 48 tiles 128x3072x768 34.6 against 30.9. Between the two
 * tile shapes (both one block per SM) it takes the fewer waves weighed by a tile's time, a 128x64
 * tile costing WGT_SMALL_COST percent of a 128x128 one (0.63-0.66 measured at k = 768-3072);
 * within 5% (1.45 waves of 128x128 against 2.9 of 128x64) 128x128 where m > n (4096x768x3072:
 * 242 us against 269), else 128x64 (1024x2304x768: 53.5 us against 61.4). */
#define WGT_MIN_PCT 50
#define WGT_MIN_PCT_PRESPLIT 25
#define WGT_SMALL_COST 66

/* The configuration for p: 1 big (128x128), 2 small (128x64), 0 none (left to mma.sync). */
static int wgt_pick(const mm_problem *p, int presplit) {
    const long long sms = mm_device()->sm_count;
    const long long big = ((p->m + 127) / 128) * ((p->n + 127) / 128) * p->batch;
    const long long small = ((p->m + 127) / 128) * ((p->n + 63) / 64) * p->batch;
    const long long min_pct = presplit ? WGT_MIN_PCT_PRESPLIT : WGT_MIN_PCT;
    if (100 * small < min_pct * sms && wgt_mode != MM_WGMMA_FORCE)
        return 0;
    const long long t_big = (big + sms - 1) / sms * 100, t_small = (small + sms - 1) / sms * WGT_SMALL_COST;
    if (20 * t_big < 19 * t_small)
        return 1;
    if (20 * t_small < 19 * t_big)
        return 2;
    return p->m > p->n ? 1 : 2;
}

template <class CFG>
static void wgt_launch(const CUtensorMap (&tm)[4], const wgt_args &w, long long batch, cudaStream_t s) {
    const unsigned tiles = (unsigned)(((w.a.M + CFG::BM - 1) / CFG::BM) * ((w.a.N + CFG::BN - 1) / CFG::BN));
    mm_batch_chunks(w.a, batch, [&](const mm_args &c, unsigned items) {
        wgt_args wc = w;
        wc.a = c;
        wgt_kernel<CFG><<<dim3(tiles, 1, items), CFG::THREADS, CFG::SMEM, s>>>(tm[0], tm[1], tm[2], tm[3], wc);
        CUDA_LAUNCH_CHECK();
    });
}

/* The split of A (ia items) into ah, al and of B (ib items) into bh, bl (transposed). */
static void wgt_split_a(const mm_problem *p, const float *A, int kp, long long ia, float *ah, float *al,
                        cudaStream_t s) {
    const int vec = p->k % 4 == 0 && (uintptr_t)A % 16 == 0 && p->stride_a % 4 == 0;
    wgt_split_rows<<<dim3((unsigned)(ia * p->m), (unsigned)((kp + 1023) / 1024)), 256, 0, s>>>(
        A, p->stride_a, ah, al, (int)p->m, (int)p->k, kp, vec);
    CUDA_LAUNCH_CHECK();
}

static void wgt_split_b(const mm_problem *p, const float *B, int kp, long long ib, float *bh, float *bl,
                        cudaStream_t s) {
    for (long long b0 = 0; b0 < ib; b0 += 65535) {
        const unsigned items = (unsigned)(ib - b0 < 65535 ? ib - b0 : 65535);
        wgt_split_cols<<<dim3((unsigned)((p->n + 31) / 32), (unsigned)((kp + 31) / 32), items), dim3(32, 8), 0,
                         s>>>(B, p->stride_b, bh, bl, b0, (int)p->k, (int)p->n, kp);
        CUDA_LAUNCH_CHECK();
    }
}

/* ---- pre-split operands (matmul.h) ------------------------------------------------------------ */

static mm_presplit *wgt_node_ps; /* the node's pre-split operands (mm_3xtf32_presplit_node_set) */
static int32_t wgt_node_n;
static long long wgt_ps_uses;

void mm_3xtf32_presplit_node_set(mm_presplit *ps, int32_t n) {
    wgt_node_ps = n > 0 ? ps : NULL;
    wgt_node_n = n > 0 && ps ? n : 0;
}

int64_t mm_3xtf32_presplit_uses(void) { return wgt_ps_uses; }

size_t mm_3xtf32_presplit_floats(int64_t rows, int64_t k, int64_t items) {
    return 2 * (size_t)items * (size_t)rows * (size_t)((k + 3) / 4 * 4);
}

int mm_3xtf32_presplit(mm_presplit *ps, mm_operand side, const float *src, int64_t rows, int64_t k, int64_t items,
                       int64_t stride, float *buf, cudaStream_t s, char *err, size_t errlen) {
    memset(ps, 0, sizeof *ps);
    if (!mm_3xtf32_wgmma_available())
        return base_fail(err, errlen, "3xtf32 pre-split: the wgmma path is not available on this device or build");
    const long long kp = (k + 3) / 4 * 4;
    if (rows < 1 || k < 1 || items < 1 || rows > MM_MAX_DIM || k > MM_MAX_DIM || stride < 0 ||
        (items > 1 && stride < rows * k) || (side != MM_OPERAND_A && side != MM_OPERAND_B))
        return base_fail(err, errlen, "3xtf32 pre-split: bad operand (rows %lld, k %lld, items %lld, stride %lld)",
                         (long long)rows, (long long)k, (long long)items, (long long)stride);
    if (kp > 32 * 65535 || (side == MM_OPERAND_A && items * rows >= (1ll << 31)) || (uintptr_t)buf % 16 != 0 ||
        (uintptr_t)src % 4 != 0)
        return base_fail(err, errlen, "3xtf32 pre-split: %lld x %lld x %lld is beyond the split's grids or unaligned",
                         (long long)items, (long long)rows, (long long)k);
    mm_problem p;
    mm_problem_init(&p, rows, rows, k, items); /* the split reads m (A) or n (B), k and a stride */
    p.stride_a = p.stride_b = items > 1 ? stride : 0;
    float *hi = buf, *lo = buf + (size_t)items * rows * kp;
    if (side == MM_OPERAND_A)
        wgt_split_a(&p, src, (int)kp, items, hi, lo, s);
    else
        wgt_split_b(&p, src, (int)kp, items, hi, lo, s);
    ps->src = src;
    ps->side = side;
    ps->rows = rows;
    ps->k = k;
    ps->items = items;
    ps->stride = items > 1 ? stride : 0;
    ps->kp = kp;
    ps->hi = hi;
    ps->lo = lo;
    return 0;
}

/* The node's pre-split operand that x (items items of rows x k at stride elements) reads, with the
 * index of x's first item in it; NULL if none. */
static mm_presplit *wgt_find(int side, const float *x, long long rows, long long k, long long stride,
                             long long items, long long *item0) {
    for (int32_t i = 0; i < wgt_node_n; i++) {
        mm_presplit *ps = &wgt_node_ps[i];
        if (ps->side != side || ps->rows != rows || ps->k != k || (uintptr_t)x < (uintptr_t)ps->src)
            continue;
        const unsigned long long d = ((uintptr_t)x - (uintptr_t)ps->src) / sizeof(float);
        if (((uintptr_t)x - (uintptr_t)ps->src) % sizeof(float) != 0)
            continue;
        long long j = -1;
        if (d == 0)
            j = 0;
        else if (ps->items > 1 && d % (unsigned long long)ps->stride == 0)
            j = (long long)(d / (unsigned long long)ps->stride);
        if (j < 0 || j + items > ps->items || (items > 1 && stride != ps->stride))
            continue;
        *item0 = j;
        return ps;
    }
    return NULL;
}

/* A 3xtf32 table entry decides (a split for a product that another kernel runs is only memory);
 * without one, the rule. */
int mm_3xtf32_presplit_wanted(const mm_problem *p, mm_operand side) {
    (void)side;
    const long long kp = (p->k + 3) / 4 * 4;
    if (wgt_mode == MM_WGMMA_OFF || !mm_3xtf32_wgmma_available() || kp > 32 * 65535)
        return 0;
    const int kernel = wgt_mode == MM_WGMMA_AUTO ? mm_3xtf32_table_kernel(p) : -1;
    return kernel >= 0 ? kernel == MM_KERNEL_WGMMA : wgt_pick(p, 1) != 0;
}

/* p on the wgmma path at configuration cfg (1, 2), the operands pa / pb read from their pre-split
 * parts (items ja / jb on) where not NULL, the others split into the workspace; 0 (nothing
 * launched) when the split's grids or the workspace rule it out. */
static int wgt_run(const mm_problem *p, const float *A, const float *B, const float *bias, float *C, int cfg,
                   mm_presplit *pa, long long ja, mm_presplit *pb, long long jb, cudaStream_t s) {
    const int kp = (int)((p->k + 3) / 4 * 4), bn = cfg == 1 ? wgt_big::BN : wgt_small::BN;
    const long long ia = p->stride_a == 0 ? 1 : p->batch, ib = p->stride_b == 0 ? 1 : p->batch;
    if ((!pa && ia * p->m >= (1ll << 31)) || kp > 32 * 65535) /* the split's grids */
        return 0;
    const size_t na = pa ? 0 : (size_t)(ia * p->m * kp), nb = pb ? 0 : (size_t)(ib * p->n * kp);
    if (na + nb > 0 && !wgt_workspace(2 * (na + nb)))
        return 0;
    float *ah = pa ? pa->hi + ja * p->m * kp : wgt_ws, *al = pa ? pa->lo + ja * p->m * kp : ah + na;
    float *bh = pb ? pb->hi + jb * p->n * kp : wgt_ws + 2 * na, *bl = pb ? pb->lo + jb * p->n * kp : bh + nb;
    CUtensorMap tm[4];
    if (!wgt_map(&tm[0], ah, p->m, kp, ia, 128) || !wgt_map(&tm[1], al, p->m, kp, ia, 128) ||
        !wgt_map(&tm[2], bh, p->n, kp, ib, bn) || !wgt_map(&tm[3], bl, p->n, kp, ib, bn))
        return 0;
    if (!pa)
        wgt_split_a(p, A, kp, ia, ah, al, s);
    if (!pb)
        wgt_split_b(p, B, kp, ib, bh, bl, s);
    wgt_args w;
    memset(&w, 0, sizeof w);
    w.a = mm_args_make(p, A, B, bias, C);
    w.a.group_m = 8;
    w.kp = kp;
    w.bcast_a = p->stride_a == 0;
    w.bcast_b = p->stride_b == 0;
    if (cfg == 1)
        wgt_launch<wgt_big>(tm, w, p->batch, s);
    else
        wgt_launch<wgt_small>(tm, w, p->batch, s);
    wgt_launches++;
    if (pa || pb)
        wgt_ps_uses++;
    if (pa)
        pa->uses++;
    if (pb)
        pb->uses++;
    return 1;
}

void mm_3xtf32_presplit_node_get(mm_presplit **ps, int32_t *n) {
    *ps = wgt_node_ps;
    *n = wgt_node_n;
}

int mm_3xtf32_presplit_mask(const mm_problem *p, const float *A, const float *B) {
    const long long ia = p->stride_a == 0 ? 1 : p->batch, ib = p->stride_b == 0 ? 1 : p->batch;
    long long j = 0;
    return (wgt_find(MM_OPERAND_A, A, p->m, p->k, p->stride_a, ia, &j) ? 1 : 0) |
           (wgt_find(MM_OPERAND_B, B, p->n, p->k, p->stride_b, ib, &j) ? 2 : 0);
}

int mm_3xtf32_wgmma_pick(const mm_problem *p, int presplit) {
    const long long kp = (p->k + 3) / 4 * 4;
    if (wgt_mode == MM_WGMMA_OFF || !mm_3xtf32_wgmma_available() || kp > 32 * 65535)
        return -1;
    return wgt_pick(p, presplit != 0) - 1;
}

/* Operands the node's pre-split list holds are not split again. */
int mm_3xtf32_wgmma_run_cfg(const mm_problem *p, const float *A, const float *B, const float *bias, float *C, int cfg,
                            cudaStream_t s) {
    if (cfg < 0 || cfg >= MM_WGMMA_CONFIGS || !mm_3xtf32_wgmma_available())
        return 0;
    const long long ia = p->stride_a == 0 ? 1 : p->batch, ib = p->stride_b == 0 ? 1 : p->batch;
    long long ja = 0, jb = 0;
    mm_presplit *pa = wgt_find(MM_OPERAND_A, A, p->m, p->k, p->stride_a, ia, &ja);
    mm_presplit *pb = wgt_find(MM_OPERAND_B, B, p->n, p->k, p->stride_b, ib, &jb);
    return wgt_run(p, A, B, bias, C, cfg + 1, pa, ja, pb, jb, s);
}

/* Runs p on the wgmma path and returns 1, or returns 0 (nothing launched) when the mode, the
 * device, the build, the problem's size or the workspace rule it out (the rule of before choices
 * came from tables: bench probes call it). */
int mm_3xtf32_wgmma_try(const mm_problem *p, const float *A, const float *B, const float *bias, float *C,
                        cudaStream_t s) {
    const int cfg = mm_3xtf32_wgmma_pick(p, mm_3xtf32_presplit_mask(p, A, B));
    return cfg >= 0 ? mm_3xtf32_wgmma_run_cfg(p, A, B, bias, C, cfg, s) : 0;
}
