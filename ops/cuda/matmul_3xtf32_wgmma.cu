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
 * Split-K (a choice's split_k, up to MM_WGMMA_MAX_SPLIT): block y of the grid sums a run of
 * k-tiles; the partial tiles meet in a workspace and the block that arrives last at a tile sums them
 * in slice order (wgt_reduce: the same bits for any arrival order), then applies the epilogue.
 * The convolution of conv_wgmma.h runs here too: a gather kernel writes the split columns of all
 * images (wgt_gather_cols), the weight is the B operand, and the store puts each row of C back into
 * its image (wgt_store's CONV).
 * Numbers: bench/matmul/wgmma-h100.md, bench/matmul/README.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* CUtensorMap and the encoder's types only: the entry point comes from the runtime */

#include "base.h"
#include "conv_wgmma.h"
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

/* The kernel's arguments: the FP32 kernels' block (C, bias, act, shape, batch0, group_m; split-K:
 * split_k slices of k_chunk k-tiles each, ws, counters; A and B unused), the split operands'
 * padded k and broadcast flags, and the convolution store (ohw > 0, wgt_store's CONV): C's row r,
 * column c is y[r / ohw][c][r % ohw] of y (images, N, ohw), with add (y's shape, may be NULL)
 * added before the activation. */
struct wgt_args {
    mm_args a;
    int kp, bcast_a, bcast_b;
    int ohw;
    const float *add;
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
                                                   uint32_t full, uint32_t empty, int kb, int ktiles, int m0,
                                                   int n0, int ba, int bb) {
    constexpr int S = CFG::STAGES;
    for (int kt = 0; kt < ktiles; kt++) {
        const int s = kt % S;
        if (kt >= S)
            wgt_bar_wait(empty + 8 * s, ((kt / S) + 1) & 1);
        const uint32_t st = base + s * CFG::STAGE_BYTES, f = full + 8 * s;
        wgt_bar_expect(f, CFG::STAGE_BYTES); /* zero-filled parts of a box count too */
        const int k0 = (kb + kt) * CFG::BK;
        wgt_tma3(st, tah, f, k0, m0, ba);
        wgt_tma3(st + CFG::A_BYTES, tal, f, k0, m0, ba);
        wgt_tma3(st + 2 * CFG::A_BYTES, tbh, f, k0, n0, bb);
        wgt_tma3(st + 2 * CFG::A_BYTES + CFG::B_BYTES, tbl, f, k0, n0, bb);
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

/* act(v + bias[col] (+ add[off])) with the activation fixed at compile time (mm_epi's switch
 * folded away): bias, then the added tensor, then the activation, as the CPU reference. */
template <int ACT, bool CONV>
static __device__ __forceinline__ float wgt_epi(float v, int col, const wgt_args &w, long long off) {
    if (w.a.has_bias)
        v += __ldg(w.a.bias + col);
    if (CONV && w.add)
        v += __ldg(w.add + off);
    return mm_act_f(v, ACT);
}

/* Accumulator d[4j + 2h + e] of a thread is row 16 warp + lane/4 + 8h, column 8j + 2 (lane%4) + e.
 * One instantiation per activation (wgt_store_act): with mm_epi's run-time switch inside this
 * unrolled loop the epilogue was 15 000 instructions of jump tables, and the whole product ran
 * 7% (4096^3) to 11% (2048^3) slower than the same main loop with a plain store. CONV: the
 * convolution store of wgt_args (row r of C is output pixel r % ohw of image r / ohw, column c
 * its channel: y + (r / ohw) N ohw + c ohw + r % ohw), with the added tensor at the same offset. */
template <class CFG, int ACT, bool CONV>
static __device__ __forceinline__ void wgt_store(const float (&acc)[CFG::NACC], const wgt_args &w, float *C, int row,
                                                 int n0) {
    const mm_args &a = w.a;
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = row + 8 * h;
        if (r >= a.M)
            continue;
        long long rb = (long long)r * a.N; /* offset of (r, 0); column c at rb + c * cs */
        int cs = 1;
        if constexpr (CONV) {
            const int img = r / w.ohw;
            rb = (long long)img * a.N * w.ohw + (r - img * w.ohw);
            cs = w.ohw;
        }
#pragma unroll
        for (int j = 0; j < CFG::BN / 8; j++) {
            const int col = n0 + j * 8 + 2 * t;
            if (col >= a.N)
                continue;
            const long long o = rb + (long long)col * cs;
            const float v0 = wgt_epi<ACT, CONV>(acc[4 * j + 2 * h], col, w, o);
            if (col + 1 >= a.N) {
                C[o] = v0;
                continue;
            }
            const float v1 = wgt_epi<ACT, CONV>(acc[4 * j + 2 * h + 1], col + 1, w, o + cs);
            if (!CONV && a.vec_c) /* N % 4 == 0, aligned rows: 8-byte aligned */
                *reinterpret_cast<float2 *>(C + o) = make_float2(v0, v1);
            else
                C[o] = v0, C[o + cs] = v1;
        }
    }
}

template <class CFG, bool CONV>
static __device__ __forceinline__ void wgt_store_act(const float (&acc)[CFG::NACC], const wgt_args &w, float *C,
                                                     int row, int n0) {
    switch (w.a.act) {
    case MM_ACT_RELU:
        return wgt_store<CFG, MM_ACT_RELU, CONV>(acc, w, C, row, n0);
    case MM_ACT_GELU:
        return wgt_store<CFG, MM_ACT_GELU, CONV>(acc, w, C, row, n0);
    case MM_ACT_SILU:
        return wgt_store<CFG, MM_ACT_SILU, CONV>(acc, w, C, row, n0);
    case MM_ACT_GELU_TANH:
        return wgt_store<CFG, MM_ACT_GELU_TANH, CONV>(acc, w, C, row, n0);
    case MM_ACT_RELU6:
        return wgt_store<CFG, MM_ACT_RELU6, CONV>(acc, w, C, row, n0);
    case MM_ACT_HARDSWISH:
        return wgt_store<CFG, MM_ACT_HARDSWISH, CONV>(acc, w, C, row, n0);
    default:
        return wgt_store<CFG, MM_ACT_NONE, CONV>(acc, w, C, row, n0);
    }
}

/* Split-K, the last-block kind of matmul_wt_epilogue.cuh: the consumer warpgroups write their raw
 * partial tile to slice blockIdx.y of the tile's part of the workspace (tile-major: (batch, tile,
 * slice, 256 threads' float4 runs), coalesced), count the arrival, and the block that arrives
 * last at the tile sums the split_k partials in slice order from 0.0f (its own read back too:
 * the same bits whichever block is last), resets the counter and returns true with the sum in acc
 * for the one epilogue; the others return false. Consumer threads only (bar.sync 1 of 256). */
template <class CFG>
static __device__ __forceinline__ bool wgt_reduce(float (&acc)[CFG::NACC], const mm_args &a, long long tile,
                                                  int &last) {
    constexpr int TILE = CFG::BM * CFG::BN, V = CFG::NACC / 4;
    const int t = threadIdx.x - 128;
    float4 *mine = reinterpret_cast<float4 *>(a.ws + (tile * a.split_k + blockIdx.y) * TILE) + t;
#pragma unroll
    for (int i = 0; i < V; i++)
        __stcg(mine + 256 * i, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
    __threadfence(); /* the partial before the arrival */
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    if (t == 0)
        last = atomicAdd(a.counters + tile, 1) == a.split_k - 1;
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    if (!last)
        return false;
    __threadfence(); /* the other slices' partials after their arrivals */
#pragma unroll
    for (int i = 0; i < CFG::NACC; i++)
        acc[i] = 0.0f;
    for (int sp = 0; sp < a.split_k; sp++) {
        const float4 *src = reinterpret_cast<const float4 *>(a.ws + (tile * a.split_k + sp) * TILE) + t;
#pragma unroll
        for (int i = 0; i < V; i++) {
            const float4 v = __ldcg(src + 256 * i);
            acc[4 * i] += v.x, acc[4 * i + 1] += v.y, acc[4 * i + 2] += v.z, acc[4 * i + 3] += v.w;
        }
    }
    if (t == 0)
        a.counters[tile] = 0; /* every slice has arrived: ready for the next launch */
    return true;
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
    __shared__ int wgt_last; /* split-K: this block arrived last at its tile */
    extern __shared__ uint8_t wgt_raw[];
    const mm_args &a = w.a;
    const uint32_t base = (wgt_smem(wgt_raw) + 1023u) & ~1023u, full = wgt_smem(wgt_bars);
    const uint32_t empty = full + 8 * CFG::STAGES;
    const int tiles_m = (a.M + CFG::BM - 1) / CFG::BM, tiles_n = (a.N + CFG::BN - 1) / CFG::BN;
    const int pid = blockIdx.x, width = a.group_m * tiles_n, first = (pid / width) * a.group_m;
    const int gsz = min(tiles_m - first, a.group_m);
    const int m0 = (first + (pid % width) % gsz) * CFG::BM, n0 = ((pid % width) / gsz) * CFG::BN;
    const int bz = blockIdx.z + a.batch0, kt_all = (w.kp + CFG::BK - 1) / CFG::BK, wg = threadIdx.x / 128;
    const int kb = a.split_k > 1 ? blockIdx.y * a.k_chunk : 0; /* this block's k-tiles [kb, kb + ktiles) */
    const int ktiles = a.split_k > 1 ? min(kt_all - kb, a.k_chunk) : kt_all;
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
            wgt_produce<CFG>(&tah, &tal, &tbh, &tbl, base, full, empty, kb, ktiles, m0, n0, w.bcast_a ? 0 : bz,
                             w.bcast_b ? 0 : bz);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    float acc[CFG::NACC];
    wgt_consume<CFG>(acc, base, full, empty, ktiles, wg - 1);
    if (a.split_k > 1 && !wgt_reduce<CFG>(acc, a, (long long)bz * (tiles_m * tiles_n) + pid, wgt_last))
        return;
    const int row = m0 + (wg - 1) * 64 + (threadIdx.x % 128) / 32 * 16 + (threadIdx.x % 32) / 4;
    if (w.ohw > 0)
        wgt_store_act<CFG, true>(acc, w, a.C, row, n0);
    else
        wgt_store_act<CFG, false>(acc, w, a.C + (long long)bz * a.sc, row, n0);
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

/* The workspaces (mm_dbuf, matmul_impl.h), launches that share them ordered (one stream) as the
 * other kernels' are: the split operands (A_hi, A_lo, B_hi^T, B_lo^T back to back, floats), and
 * split-K's partials (floats) and per-tile arrival counters (ints, zero between launches: the last
 * block of a tile resets its counter). Out of memory is no error here: the product is left to the
 * mma.sync path, which needs no workspace. */
static mm_dbuf wgt_ws, wgt_pws, wgt_cnt;

/* The k-tiles a slice of a split into `split` takes (*chunk) and the slices that are not empty. */
static int wgt_slices(long long kp, int split, int *chunk) {
    const int kt = (int)((kp + 31) / 32);
    *chunk = (kt + split - 1) / split;
    return (kt + *chunk - 1) / *chunk;
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
 * 242 us against 269), else 128x64 (1024x2304x768: 53.5 us against 61.4).
 * Split-K (wgt_pick_split): where the tiles do not fill the SMs, k is cut into 2, 4, 8 or 16
 * slices of at least WGT_MIN_SLICE_KT k-tiles, the grid at most two waves, when the model's time
 * (waves x k-tiles a slice, plus the reduction: a partial tile written and the last block reading
 * every slice's, WGT_RED_PCT percent of a k-tile each) beats the unsplit choice by 5%; the
 * percentages above then count blocks (tiles x slices). The model's constants are estimates
 * (L2 bandwidth per SM against a k-tile's 3 x 4 wgmma), not measured: tables
 * (`tasc kernels tune --precision 3xtf32`) time every split where it matters. */
#define WGT_MIN_PCT 50
#define WGT_MIN_PCT_PRESPLIT 25
#define WGT_SMALL_COST 66
#define WGT_MIN_SLICE_KT 8
#define WGT_RED_PCT 60
#define WGT_MAX_SPLIT MM_WGMMA_MAX_SPLIT

/* The modelled time of configuration cfg (1 big, 2 small) at split `split` (units: a 128x128
 * k-tile = 100 x 100). */
static long long wgt_model(const mm_problem *p, int cfg, int split) {
    const long long sms = mm_device()->sm_count;
    const long long tiles = ((p->m + 127) / 128) * ((p->n + (cfg == 1 ? 127 : 63)) / (cfg == 1 ? 128 : 64)) * p->batch;
    int chunk;
    const int slices = wgt_slices((p->k + 3) / 4 * 4, split, &chunk);
    const long long waves = (tiles * slices + sms - 1) / sms;
    const long long red = slices > 1 ? (long long)WGT_RED_PCT * (slices + 1) : 0;
    return (cfg == 1 ? 100 : WGT_SMALL_COST) * (100 * waves * chunk + red);
}

/* The split for cfg (1 big, 2 small) where its tiles do not fill the SMs: the fastest by the
 * model among 1, 2, 4, 8, 16 within the limits, 1 unless another beats it by 5%; its time in *t. */
static int wgt_pick_split(const mm_problem *p, int cfg, long long *t) {
    const long long sms = mm_device()->sm_count, kp = (p->k + 3) / 4 * 4;
    const long long tiles = ((p->m + 127) / 128) * ((p->n + (cfg == 1 ? 127 : 63)) / (cfg == 1 ? 128 : 64)) * p->batch;
    int best = 1;
    long long bt = wgt_model(p, cfg, 1);
    const long long t1 = bt;
    for (int sp = 2; tiles < sms && sp <= WGT_MAX_SPLIT; sp *= 2) {
        int chunk;
        const int slices = wgt_slices(kp, sp, &chunk);
        if (chunk < WGT_MIN_SLICE_KT || tiles * slices > 2 * sms)
            break;
        const long long ts = wgt_model(p, cfg, sp);
        if (20 * ts < 19 * t1 && ts < bt) {
            bt = ts;
            best = sp;
        }
    }
    *t = bt;
    return best;
}

/* The configuration for p: 1 big (128x128), 2 small (128x64), 0 none (left to mma.sync), and its
 * split in *split. */
static int wgt_pick(const mm_problem *p, int presplit, int *split) {
    const long long sms = mm_device()->sm_count;
    const long long big = ((p->m + 127) / 128) * ((p->n + 127) / 128) * p->batch;
    const long long small = ((p->m + 127) / 128) * ((p->n + 63) / 64) * p->batch;
    const long long min_pct = presplit ? WGT_MIN_PCT_PRESPLIT : WGT_MIN_PCT;
    *split = 1;
    int cfg;
    const long long t_big = (big + sms - 1) / sms * 100, t_small = (small + sms - 1) / sms * WGT_SMALL_COST;
    if (20 * t_big < 19 * t_small)
        cfg = 1;
    else if (20 * t_small < 19 * t_big)
        cfg = 2;
    else
        cfg = p->m > p->n ? 1 : 2;
    long long tb, ts, tc = wgt_model(p, cfg, 1);
    const int sb = wgt_pick_split(p, 1, &tb), ss = wgt_pick_split(p, 2, &ts);
    if ((sb > 1 || ss > 1) && 20 * (tb < ts ? tb : ts) < 19 * tc) {
        cfg = tb < ts ? 1 : 2;
        *split = tb < ts ? sb : ss;
    }
    int chunk;
    const long long blocks = (cfg == 1 ? big : small) * wgt_slices((p->k + 3) / 4 * 4, *split, &chunk);
    if (100 * blocks < min_pct * sms && wgt_mode != MM_WGMMA_FORCE)
        return 0;
    return cfg;
}

template <class CFG>
static void wgt_launch(const CUtensorMap (&tm)[4], const wgt_args &w, long long batch, cudaStream_t s) {
    const unsigned tiles = (unsigned)(((w.a.M + CFG::BM - 1) / CFG::BM) * ((w.a.N + CFG::BN - 1) / CFG::BN));
    mm_batch_chunks(w.a, batch, [&](const mm_args &c, unsigned items) {
        wgt_args wc = w;
        wc.a = c;
        wgt_kernel<CFG><<<dim3(tiles, (unsigned)w.a.split_k, items), CFG::THREADS, CFG::SMEM, s>>>(tm[0], tm[1], tm[2],
                                                                                                 tm[3], wc);
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
    int split;
    return kernel >= 0 ? kernel == MM_KERNEL_WGMMA : wgt_pick(p, 1, &split) != 0;
}

/* A launch of p at configuration cfg (1, 2) and split on operand parts already in place: ah, al
 * (ia items of (m, kp)) and bh, bl (ib items of (n, kp)): its tensor maps and arguments (the
 * split-K workspace, group_m 8). false (nothing may be launched) when the maps or the workspace
 * cannot be had. */
struct wgt_plan {
    CUtensorMap tm[4];
    wgt_args w;
    int cfg;
    long long batch;
};

static bool wgt_prepare(const mm_problem *p, const float *ah, const float *al, const float *bh, const float *bl,
                        const float *bias, float *C, int cfg, int split, wgt_plan *pl, cudaStream_t s) {
    const int kp = (int)((p->k + 3) / 4 * 4), bn = cfg == 1 ? wgt_big::BN : wgt_small::BN;
    const long long ia = p->stride_a == 0 ? 1 : p->batch, ib = p->stride_b == 0 ? 1 : p->batch;
    if (!wgt_map(&pl->tm[0], ah, p->m, kp, ia, 128) || !wgt_map(&pl->tm[1], al, p->m, kp, ia, 128) ||
        !wgt_map(&pl->tm[2], bh, p->n, kp, ib, bn) || !wgt_map(&pl->tm[3], bl, p->n, kp, ib, bn))
        return false;
    memset(&pl->w, 0, sizeof pl->w);
    pl->w.a = mm_args_make(p, NULL, NULL, bias, C);
    pl->w.a.group_m = 8;
    pl->w.kp = kp;
    pl->w.bcast_a = p->stride_a == 0;
    pl->w.bcast_b = p->stride_b == 0;
    pl->cfg = cfg;
    pl->batch = p->batch;
    int chunk;
    const int slices = wgt_slices(kp, split < 1 ? 1 : split, &chunk);
    if (slices > 1) {
        const long long tiles = ((p->m + 127) / 128) * ((p->n + bn - 1) / bn) * p->batch;
        if (mm_dbuf_grow(&wgt_pws, (size_t)(tiles * slices * 128 * bn) * sizeof(float), false, s) != cudaSuccess ||
            mm_dbuf_grow(&wgt_cnt, (size_t)tiles * sizeof(int), true, s) != cudaSuccess)
            return false;
        pl->w.a.split_k = slices;
        pl->w.a.k_chunk = chunk;
        pl->w.a.ws = (float *)wgt_pws.p;
        pl->w.a.counters = (int *)wgt_cnt.p;
    }
    return true;
}

static void wgt_go(const wgt_plan *pl, cudaStream_t s) {
    if (pl->cfg == 1)
        wgt_launch<wgt_big>(pl->tm, pl->w, pl->batch, s);
    else
        wgt_launch<wgt_small>(pl->tm, pl->w, pl->batch, s);
    wgt_launches++;
}

/* p on the wgmma path at configuration cfg (1, 2) and split (k-slices, 1: none), the operands
 * pa / pb read from their pre-split parts (items ja / jb on) where not NULL, the others split into
 * the workspace; 0 (nothing launched) when the split's grids or the workspaces rule it out. */
static int wgt_run_sk(const mm_problem *p, const float *A, const float *B, const float *bias, float *C, int cfg,
                      int split, mm_presplit *pa, long long ja, mm_presplit *pb, long long jb, cudaStream_t s) {
    const int kp = (int)((p->k + 3) / 4 * 4);
    const long long ia = p->stride_a == 0 ? 1 : p->batch, ib = p->stride_b == 0 ? 1 : p->batch;
    if ((!pa && ia * p->m >= (1ll << 31)) || kp > 32 * 65535) /* the split's grids */
        return 0;
    const size_t na = pa ? 0 : (size_t)(ia * p->m * kp), nb = pb ? 0 : (size_t)(ib * p->n * kp);
    if (na + nb > 0 && mm_dbuf_grow(&wgt_ws, 2 * (na + nb) * sizeof(float), false, s) != cudaSuccess)
        return 0;
    float *ws = (float *)wgt_ws.p;
    float *ah = pa ? pa->hi + ja * p->m * kp : ws, *al = pa ? pa->lo + ja * p->m * kp : ah + na;
    float *bh = pb ? pb->hi + jb * p->n * kp : ws + 2 * na, *bl = pb ? pb->lo + jb * p->n * kp : bh + nb;
    wgt_plan pl;
    if (!wgt_prepare(p, ah, al, bh, bl, bias, C, cfg, split, &pl, s))
        return 0;
    if (!pa)
        wgt_split_a(p, A, kp, ia, ah, al, s);
    if (!pb)
        wgt_split_b(p, B, kp, ib, bh, bl, s);
    wgt_go(&pl, s);
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

int mm_3xtf32_wgmma_pick(const mm_problem *p, int presplit, int *split) {
    const long long kp = (p->k + 3) / 4 * 4;
    *split = 1;
    if (wgt_mode == MM_WGMMA_OFF || !mm_3xtf32_wgmma_available() || kp > 32 * 65535)
        return -1;
    return wgt_pick(p, presplit != 0, split) - 1;
}

/* Operands the node's pre-split list holds are not split again. */
int mm_3xtf32_wgmma_run_cfg(const mm_problem *p, const float *A, const float *B, const float *bias, float *C, int cfg,
                            int split, cudaStream_t s) {
    if (cfg < 0 || cfg >= MM_WGMMA_CONFIGS || split < 1 || split > MM_WGMMA_MAX_SPLIT ||
        !mm_3xtf32_wgmma_available())
        return 0;
    const long long ia = p->stride_a == 0 ? 1 : p->batch, ib = p->stride_b == 0 ? 1 : p->batch;
    long long ja = 0, jb = 0;
    mm_presplit *pa = wgt_find(MM_OPERAND_A, A, p->m, p->k, p->stride_a, ia, &ja);
    mm_presplit *pb = wgt_find(MM_OPERAND_B, B, p->n, p->k, p->stride_b, ib, &jb);
    return wgt_run_sk(p, A, B, bias, C, cfg + 1, split, pa, ja, pb, jb, s);
}

/* Runs p on the wgmma path and returns 1, or returns 0 (nothing launched) when the mode, the
 * device, the build, the problem's size or the workspace rule it out (the rule of before choices
 * came from tables: bench probes call it). */
int mm_3xtf32_wgmma_try(const mm_problem *p, const float *A, const float *B, const float *bias, float *C,
                        cudaStream_t s) {
    int split;
    const int cfg = mm_3xtf32_wgmma_pick(p, mm_3xtf32_presplit_mask(p, A, B), &split);
    return cfg >= 0 ? mm_3xtf32_wgmma_run_cfg(p, A, B, bias, C, cfg, split, s) : 0;
}

/* ---- the convolution on the matmul (conv_wgmma.h) ---------------------------------------------- */

/* The convolution's dimensions as the gather reads them (cw_plan_new checked that each fits 32
 * bits; x's offsets are formed in 64). M = N OH OW rows of the columns, KHW = KH KW. */
struct wgt_conv_dims {
    int M, K, kp, C, H, W, OW, OHW, KH, KW, KHW, sh, sw, dh, dw, pt, pl;
};

/* x (N, C, H, W) -> hi, lo (M, kp): row m = output (n, oh, ow), column k = (c, kh, kw) the input
 * that tap reads (0 in the padding and past K), split as wgt_split: the im2col and the split of
 * the A operand in one pass, no FP32 column buffer. A 32 x 32 tile per block (32, 8) through shared
 * memory, as wgt_split_cols: x read along m (neighbouring outputs), the parts written along k. */
__global__ void wgt_gather_cols(const float *__restrict__ x, float *__restrict__ hi, float *__restrict__ lo,
                                wgt_conv_dims d) {
    __shared__ float th[32][33], tl[32][33];
    const int m0 = blockIdx.x * 32, k0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y, m = m0 + tx;
    int img = 0, oh = 0, ow = 0;
    if (m < d.M) {
        img = m / d.OHW;
        const int r = m - img * d.OHW;
        oh = r / d.OW;
        ow = r - oh * d.OW;
    }
    const float *xi = x + (long long)img * d.C * d.H * d.W;
    const int h0 = oh * d.sh - d.pt, w0 = ow * d.sw - d.pl;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        const int k = k0 + ty + j;
        float v = 0.0f;
        if (m < d.M && k < d.K) {
            const int c = k / d.KHW, r = k - c * d.KHW, kh = r / d.KW, kw = r - kh * d.KW;
            const int h = h0 + kh * d.dh, w = w0 + kw * d.dw;
            if (h >= 0 && h < d.H && w >= 0 && w < d.W)
                v = __ldg(xi + ((long long)c * d.H + h) * d.W + w);
        }
        wgt_split(v, th[ty + j][tx], tl[ty + j][tx]);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        const int r = m0 + ty + j, k = k0 + tx;
        if (r < d.M && k < d.kp) {
            hi[(long long)r * d.kp + k] = th[tx][ty + j];
            lo[(long long)r * d.kp + k] = tl[tx][ty + j];
        }
    }
}

struct cw_plan {
    cv3_shape s;
    wgt_conv_dims d;
};

cw_plan *cw_plan_new(const cv3_shape *s, char *err, size_t errlen) {
    if (!mm_3xtf32_wgmma_available()) {
        base_fail(err, errlen, "conv wgmma: the wgmma path is not available on this device or build");
        return NULL;
    }
    const long long M = s->N * s->OH * s->OW, K = s->C * s->KH * s->KW, kp = (K + 3) / 4 * 4;
    const long long v[] = {M,     K,         s->C,  s->H,  s->W,  s->OW, s->OH * s->OW, s->KH, s->KW, s->sh,
                           s->sw, s->dh,     s->dw, s->pt, s->pl, s->F,  s->OH * s->sh + s->KH * s->dh,
                           s->OW * s->sw + s->KW * s->dw};
    bool ok = M >= 1 && K >= 1 && s->F >= 1 && kp <= 32 * 65535 && s->F <= MM_MAX_DIM;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ok = ok && v[i] >= 0 && v[i] < (1ll << 31);
    if (!ok) {
        base_fail(err, errlen, "conv wgmma: %lldx%lldx%lldx%lld * %lldx%lldx%lldx%lld is beyond its 32-bit indices",
                  (long long)s->N, (long long)s->C, (long long)s->H, (long long)s->W, (long long)s->F, (long long)s->C,
                  (long long)s->KH, (long long)s->KW);
        return NULL;
    }
    cw_plan *p = (cw_plan *)calloc(1, sizeof *p);
    if (!p) {
        base_fail(err, errlen, "conv wgmma: out of memory");
        return NULL;
    }
    p->s = *s;
    p->d = wgt_conv_dims{(int)M,     (int)K,     (int)kp,    (int)s->C,  (int)s->H,  (int)s->W,
                         (int)s->OW, (int)(s->OH * s->OW), (int)s->KH, (int)s->KW, (int)(s->KH * s->KW),
                         (int)s->sh, (int)s->sw, (int)s->dh, (int)s->dw, (int)s->pt, (int)s->pl};
    return p;
}

void cw_plan_free(cw_plan *p) { free(p); }

int cw_config_count(void) { return MM_WGMMA_CONFIGS; }

const char *cw_config_name(int cfg) { return mm_3xtf32_wgmma_config_name(cfg); }

int cw_split_candidates(const cw_plan *p, int cfg, int *splits, int max) {
    const long long sms = mm_device()->sm_count, bn = cfg == 0 ? wgt_big::BN : wgt_small::BN;
    const long long tiles = ((p->d.M + 127) / 128) * ((p->s.F + bn - 1) / bn), kt = (p->d.kp + 31) / 32;
    int n = 0;
    if (n < max)
        splits[n++] = 1;
    for (int sp = 2; sp <= MM_WGMMA_MAX_SPLIT && n < max; sp *= 2)
        if (tiles < sms && kt >= 4LL * sp && tiles * sp <= 2 * sms)
            splits[n++] = sp;
    return n;
}

/* The parts of the workspace: the columns' hi, lo ((M, kp) each), then the weight's ((F, kp) each),
 * 256-byte aligned. */
static size_t cw_cols_floats(const cw_plan *p) { return ((size_t)2 * p->d.M * p->d.kp + 63) / 64 * 64; }

size_t cw_workspace_bytes(const cw_plan *p) {
    return (cw_cols_floats(p) + ((size_t)2 * p->s.F * p->d.kp + 63) / 64 * 64) * sizeof(float);
}

int cw_run(const cw_plan *p, int cfg, int split, const float *x, const float *w, const float *bias, const float *add,
           float *y, int act, float *ws, cudaStream_t s, char *err, size_t errlen) {
    if (cfg < 0 || cfg >= MM_WGMMA_CONFIGS || split < 1 || split > MM_WGMMA_MAX_SPLIT || act < 0 ||
        act >= MM_ACT_COUNT)
        return base_fail(err, errlen, "conv wgmma: no configuration %d, split %d, activation %d", cfg, split, act);
    const long long M = p->d.M, kp = p->d.kp, F = p->s.F, K = p->d.K;
    mm_problem pr; /* the images side by side: (M, K) x (K, F), the weight as B (its B^T is w) */
    mm_problem_init(&pr, M, F, K, 1);
    pr.has_bias = bias != NULL;
    pr.act = (mm_act)act;
    long long j = 0;
    mm_presplit *pw = wgt_find(MM_OPERAND_A, w, F, K, 0, 1, &j); /* the runtime's split of the weight */
    float *ah = ws, *al = ws + M * kp, *wh = ws + cw_cols_floats(p), *wl = wh + F * kp;
    const float *bh = pw ? pw->hi + j * F * kp : wh, *bl = pw ? pw->lo + j * F * kp : wl;
    wgt_plan pl;
    if (!wgt_prepare(&pr, ah, al, bh, bl, bias, y, cfg + 1, split, &pl, s))
        return base_fail(err, errlen, "conv wgmma: the matmul's tensor maps or split-K workspace could not be had");
    pl.w.ohw = p->d.OHW;
    pl.w.add = add;
    wgt_gather_cols<<<dim3((unsigned)((M + 31) / 32), (unsigned)((kp + 31) / 32)), dim3(32, 8), 0, s>>>(x, ah, al,
                                                                                                      p->d);
    CUDA_LAUNCH_CHECK();
    if (!pw) {
        mm_problem wp; /* the weight (F, K) as an A operand: (F, kp) hi, lo */
        mm_problem_init(&wp, F, F, K, 1);
        wgt_split_a(&wp, w, (int)kp, 1, wh, wl, s);
    } else {
        wgt_ps_uses++;
        pw->uses++;
    }
    wgt_go(&pl, s);
    return 0;
}
