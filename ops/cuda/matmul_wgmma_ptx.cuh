/* matmul_wgmma_ptx.cuh: the PTX wrappers of the Hopper (sm_90a) 3xTF32 wgmma kernel: mbarrier,
 * TMA (cp.async.bulk.tensor), the shared-memory matrix descriptor, wgmma fence / commit / wait and
 * the m64n64k8 and m64n128k8 TF32 products. Shared by the library's kernel (matmul_3xtf32_wgmma.cu)
 * and the standalone probe bench/matmul/wgmma_3xtf32.cu, so that the probe's variants are built
 * from the very instructions the library issues. Static inline device code only; include it only
 * where the device pass targets sm_90a (the library's WGT_STUB guard).
 */
#ifndef TASC_MATMUL_WGMMA_PTX_CUH
#define TASC_MATMUL_WGMMA_PTX_CUH

#include <stdint.h>

#include <cuda.h> /* CUtensorMap */

static __device__ __forceinline__ uint32_t wgt_smem(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ void wgt_bar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void wgt_bar_expect(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void wgt_bar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
static __device__ __forceinline__ void wgt_bar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
/* box of tensor map tm at (c0 innermost, c1, c2) into shared dst, completing on bar */
static __device__ __forceinline__ void wgt_tma3(uint32_t dst, const CUtensorMap *tm, uint32_t bar, int c0, int c1,
                                               int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, "
                 "%5}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(tm)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
/* shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart */
static __device__ __forceinline__ uint64_t wgt_desc(uint32_t addr) {
    return (uint64_t)((addr & 0x3ffff) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}
static __device__ __forceinline__ void wgt_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void wgt_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
static __device__ __forceinline__ void wgt_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* keeps the compiler from moving accesses of r across the asynchronous wgmma */
template <int R>
static __device__ __forceinline__ void wgt_keep(float (&r)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++)
        asm volatile("" : "+f"(r[i])::"memory");
}

/* The "+f" operands d[i] .. d[i + 31] of a wgmma wrapper's accumulators (32 registers a thread
 * for each 64 columns of the m64nN tile), written once for every width. */
#define WGT_ACC8(d, i)                                                                                     \
    "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), \
        "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define WGT_ACC32(d, i) WGT_ACC8(d, i), WGT_ACC8(d, (i) + 8), WGT_ACC8(d, (i) + 16), WGT_ACC8(d, (i) + 24)

static __device__ __forceinline__ void wgt_mma_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
                 "}, %32, %33, p, 1, 1;\n}\n"
                 : WGT_ACC32(d, 0)
                 : "l"(da), "l"(db), "r"(scale_d));
}

static __device__ __forceinline__ void wgt_mma_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
                 "}, %64, %65, p, 1, 1;\n}\n"
                 : WGT_ACC32(d, 0), WGT_ACC32(d, 32)
                 : "l"(da), "l"(db), "r"(scale_d));
}

#endif
