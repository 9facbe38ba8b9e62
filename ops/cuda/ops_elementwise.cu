/* ops_elementwise.cu: CUDA implementations of the elementwise ops -- ewadd, ewmul, ewsub, ewdiv,
 * pow (numpy broadcasting), smul, the activations relu, sigmoid, tanh, gelu, erf, sqrt, hardswish,
 * silu, gelu_tanh, clip -- and the bias/activation epilogue other ops share (oc_launch_bias_act).
 *
 * Each output element is computed exactly as the CPU reference computes it (ops_cpu.c):
 * transcendental functions in double, rounded once; so results agree to the last bit or two.
 * Broadcasting collapses the output's dims to the fewest whose input strides stay regular, then
 * either runs flat (same shapes, or a one-element operand) or decomposes each output index.
 * Three layers per op: the kernel, a launcher doing the grid arithmetic, the op-table entry.
 */
#include <stdint.h>

#include "ops_cuda.h"

/* --- kernels -------------------------------------------------------------------------------- */

enum { OC_BIN_ADD, OC_BIN_MUL, OC_BIN_SUB, OC_BIN_DIV, OC_BIN_POW };

template <int OP> static __device__ __forceinline__ float oc_bin(float u, float v) {
    if (OP == OC_BIN_ADD)
        return u + v;
    if (OP == OC_BIN_MUL)
        return u * v;
    if (OP == OC_BIN_SUB)
        return u - v;
    if (OP == OC_BIN_DIV)
        return u / v;
    return (float)pow((double)u, (double)v);
}

/* y[i] = a[sa ? i : 0] op b[sb ? i : 0] */
template <int OP>
__global__ void oc_bin_flat_kernel(float *__restrict__ y, const float *__restrict__ a, int sa,
                                   const float *__restrict__ b, int sb, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = oc_bin<OP>(a[sa ? i : 0], b[sb ? i : 0]);
}

/* The same on float4 groups (n4 = n / 4, every pointer 16-byte aligned). */
template <int OP>
__global__ void oc_bin_flat4_kernel(float4 *__restrict__ y, const float *__restrict__ a, int sa,
                                    const float *__restrict__ b, int sb, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 u = sa ? reinterpret_cast<const float4 *>(a)[i] : make_float4(a[0], a[0], a[0], a[0]);
        float4 v = sb ? reinterpret_cast<const float4 *>(b)[i] : make_float4(b[0], b[0], b[0], b[0]);
        y[i] = make_float4(oc_bin<OP>(u.x, v.x), oc_bin<OP>(u.y, v.y), oc_bin<OP>(u.z, v.z), oc_bin<OP>(u.w, v.w));
    }
}

typedef struct {
    int32_t rank;
    int64_t d[OPS_MAX_DIMS];          /* collapsed output dims */
    int64_t sa[OPS_MAX_DIMS], sb[OPS_MAX_DIMS]; /* input strides per dim (0: broadcast) */
} oc_bcast;

template <int OP, typename IT>
__global__ void oc_bin_bcast_kernel(float *__restrict__ y, const float *__restrict__ a, const float *__restrict__ b,
                                    IT n, oc_bcast p) {
    for (IT i = blockIdx.x * (IT)blockDim.x + threadIdx.x; i < n; i += (IT)gridDim.x * blockDim.x) {
        IT r = i, oa = 0, ob = 0;
        for (int q = p.rank - 1; q >= 0; q--) {
            IT dq = (IT)p.d[q], x = r % dq;
            r /= dq;
            oa += x * (IT)p.sa[q];
            ob += x * (IT)p.sb[q];
        }
        y[i] = oc_bin<OP>(a[oa], b[ob]);
    }
}

enum { OC_UN_RELU, OC_UN_SIGMOID, OC_UN_TANH, OC_UN_GELU, OC_UN_ERF, OC_UN_SQRT, OC_UN_HARDSWISH, OC_UN_CLIP,
       OC_UN_SMUL, OC_UN_SILU, OC_UN_GELU_TANH };

typedef struct {
    float lo, hi;        /* clip */
    const float *scale;  /* smul: the one-element operand, on the device */
} oc_un_args;

template <int OP> static __device__ __forceinline__ float oc_un(float v, const oc_un_args &p, float k) {
    if (OP == OC_UN_RELU)
        return v < 0.0f ? 0.0f : v;
    if (OP == OC_UN_SIGMOID)
        return oc_act(OPS_ACT_SIGMOID, v);
    if (OP == OC_UN_TANH)
        return oc_act(OPS_ACT_TANH, v);
    if (OP == OC_UN_GELU)
        return oc_act(OPS_ACT_GELU, v);
    if (OP == OC_UN_ERF)
        return (float)erf((double)v);
    if (OP == OC_UN_SQRT)
        return sqrtf(v);
    if (OP == OC_UN_HARDSWISH) /* x * max(0, min(1, x/6 + 1/2)) in double, as ops_cpu_hardswish */
        return oc_act(OPS_ACT_HARDSWISH, v);
    if (OP == OC_UN_SILU)
        return oc_act(OPS_ACT_SILU, v);
    if (OP == OC_UN_GELU_TANH)
        return oc_act(OPS_ACT_GELU_TANH, v);
    if (OP == OC_UN_CLIP) {
        v = v < p.lo ? p.lo : v;
        return v > p.hi ? p.hi : v;
    }
    return v * k;
}

template <int OP>
__global__ void oc_un_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t n, oc_un_args p) {
    const float k = OP == OC_UN_SMUL ? p.scale[0] : 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = oc_un<OP>(x[i], p, k);
}

template <int OP>
__global__ void oc_un4_kernel(float4 *__restrict__ y, const float4 *__restrict__ x, int64_t n4, oc_un_args p) {
    const float k = OP == OC_UN_SMUL ? p.scale[0] : 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = x[i];
        y[i] = make_float4(oc_un<OP>(v.x, p, k), oc_un<OP>(v.y, p, k), oc_un<OP>(v.z, p, k), oc_un<OP>(v.w, p, k));
    }
}

__global__ void oc_bias_act_kernel(float *__restrict__ y, const float *__restrict__ bias, const float *__restrict__ add,
                                   int64_t n, int64_t channels, int64_t inner, int act) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float v = y[i];
        if (bias)
            v += bias[(i / inner) % channels];
        if (add) /* after the bias: the order of conv + bias, then the add node */
            v += add[i];
        y[i] = oc_act(act, v);
    }
}

/* --- launchers ------------------------------------------------------------------------------ */

static int oc_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Output dims with each input's strides (0 where it broadcasts), size-1 dims dropped and
 * neighbours merged where both inputs stay regular across them. */
static void oc_bcast_make(const ops_shape *os, const ops_shape *as, const ops_shape *bs, oc_bcast *p) {
    int64_t sa[OPS_MAX_DIMS], sb[OPS_MAX_DIMS];
    const ops_shape *src[2] = {as, bs};
    int64_t *dst[2] = {sa, sb};
    const int32_t r = os->rank;
    for (int w = 0; w < 2; w++) {
        int64_t acc = 1;
        for (int32_t i = r - 1; i >= 0; i--) {
            int32_t k = i - (r - src[w]->rank);
            int64_t dk = k >= 0 ? src[w]->dims[k] : 1;
            dst[w][i] = dk != 1 ? acc : 0;
            acc *= dk;
        }
    }
    int32_t q = 0;
    for (int32_t i = 0; i < r; i++) {
        if (os->dims[i] == 1)
            continue;
        if (q > 0 && sa[i] * os->dims[i] == p->sa[q - 1] && sb[i] * os->dims[i] == p->sb[q - 1]) {
            p->d[q - 1] *= os->dims[i]; /* merge into the previous dim */
            p->sa[q - 1] = sa[i];
            p->sb[q - 1] = sb[i];
            continue;
        }
        p->d[q] = os->dims[i];
        p->sa[q] = sa[i];
        p->sb[q] = sb[i];
        q++;
    }
    p->rank = q;
}

template <int OP> static int oc_binary(ops_cuda_env *env, const ops_sig *s, const float *const *in, float *const *out) {
    const int64_t n = ops_shape_numel(&s->out[0]);
    const int64_t na = ops_shape_numel(&s->in[0]), nb = ops_shape_numel(&s->in[1]);
    const cudaStream_t st = oc_stream(env);
    if (n <= 0)
        return 0;
    if ((na == n || na == 1) && (nb == n || nb == 1)) {
        int sa = na == n && n > 1, sb = nb == n && n > 1;
        if (n % 4 == 0 && oc_aligned16(out[0]) && oc_aligned16(in[0]) && oc_aligned16(in[1]))
            oc_bin_flat4_kernel<OP><<<oc_blocks(n / 4, OC_THREADS), OC_THREADS, 0, st>>>(
                reinterpret_cast<float4 *>(out[0]), in[0], sa, in[1], sb, n / 4);
        else
            oc_bin_flat_kernel<OP><<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, st>>>(out[0], in[0], sa, in[1], sb, n);
        OC_LAUNCH_TRY(env);
        return 0;
    }
    oc_bcast p;
    oc_bcast_make(&s->out[0], &s->in[0], &s->in[1], &p);
    if (n < INT32_MAX && na < INT32_MAX && nb < INT32_MAX)
        oc_bin_bcast_kernel<OP, int32_t><<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, st>>>(out[0], in[0], in[1],
                                                                                         (int32_t)n, p);
    else
        oc_bin_bcast_kernel<OP, int64_t><<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, st>>>(out[0], in[0], in[1], n, p);
    OC_LAUNCH_TRY(env);
    return 0;
}

template <int OP> static int oc_unary(ops_cuda_env *env, const ops_sig *s, const float *x, float *y, oc_un_args p) {
    const int64_t n = ops_shape_numel(&s->out[0]);
    const cudaStream_t st = oc_stream(env);
    if (n <= 0)
        return 0;
    if (n % 4 == 0 && oc_aligned16(x) && oc_aligned16(y))
        oc_un4_kernel<OP><<<oc_blocks(n / 4, OC_THREADS), OC_THREADS, 0, st>>>(
            reinterpret_cast<float4 *>(y), reinterpret_cast<const float4 *>(x), n / 4, p);
    else
        oc_un_kernel<OP><<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, st>>>(y, x, n, p);
    OC_LAUNCH_TRY(env);
    return 0;
}

extern "C" cudaError_t oc_launch_bias_act(float *y, const float *bias, const float *add, int64_t n, int64_t channels,
                                          int64_t inner, ops_act act, cudaStream_t s) {
    if (n <= 0 || (!bias && !add && act == OPS_ACT_NONE))
        return cudaSuccess;
    oc_bias_act_kernel<<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, s>>>(y, bias, add, n, channels > 0 ? channels : 1,
                                                                       inner > 0 ? inner : 1, (int)act);
    return cudaGetLastError();
}

/* --- op-table entries ----------------------------------------------------------------------- */

OPS_CUDA_FN(ewadd) { return oc_binary<OC_BIN_ADD>(env, s, in, out); }
OPS_CUDA_FN(ewmul) { return oc_binary<OC_BIN_MUL>(env, s, in, out); }
OPS_CUDA_FN(ewsub) { return oc_binary<OC_BIN_SUB>(env, s, in, out); }
OPS_CUDA_FN(ewdiv) { return oc_binary<OC_BIN_DIV>(env, s, in, out); }
OPS_CUDA_FN(pow) { return oc_binary<OC_BIN_POW>(env, s, in, out); }

static oc_un_args oc_un_none(void) {
    oc_un_args p = {0.0f, 0.0f, NULL};
    return p;
}

OPS_CUDA_FN(relu) { return oc_unary<OC_UN_RELU>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(sigmoid) { return oc_unary<OC_UN_SIGMOID>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(tanh) { return oc_unary<OC_UN_TANH>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(gelu) { return oc_unary<OC_UN_GELU>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(erf) { return oc_unary<OC_UN_ERF>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(sqrt) { return oc_unary<OC_UN_SQRT>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(hardswish) { return oc_unary<OC_UN_HARDSWISH>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(silu) { return oc_unary<OC_UN_SILU>(env, s, in[0], out[0], oc_un_none()); }
OPS_CUDA_FN(gelu_tanh) { return oc_unary<OC_UN_GELU_TANH>(env, s, in[0], out[0], oc_un_none()); }

OPS_CUDA_FN(clip) {
    oc_un_args p = oc_un_none();
    p.lo = ops_p2f(s->p->v[PM_LO]);
    p.hi = ops_p2f(s->p->v[PM_HI]);
    return oc_unary<OC_UN_CLIP>(env, s, in[0], out[0], p);
}

OPS_CUDA_FN(smul) {
    oc_un_args p = oc_un_none();
    p.scale = in[1];
    return oc_unary<OC_UN_SMUL>(env, s, in[0], out[0], p);
}
