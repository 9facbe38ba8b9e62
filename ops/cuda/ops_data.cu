/* ops_data.cu: CUDA implementations of the data-movement and constant ops -- transpose (a real
 * copy in the permuted order), concat and split (one launch for all inputs or outputs), reshape
 * (a copy when the runtime did not make it an alias), gather (an id that is not an integer in
 * [0, V) gives a row of zeros, as the CPU reference), enlarge, pad (constant, reflect, edge),
 * resize (nearest, bilinear), and the constants const_imm, const_iconv, const_ones, const_pool.
 *
 * Every kernel is indexed by output element (writes coalesced) except split, which is indexed by
 * input element. Values are copied, never computed, so results equal the CPU reference exactly;
 * bilinear resize repeats the reference's float coordinates and its double sum with explicitly
 * rounded operations (no contraction into fused multiply-adds), so it agrees bit for bit too.
 */
#include <stdint.h>

#include "ops_cuda.h"

/* --- transpose ------------------------------------------------------------------------------ */

typedef struct {
    int32_t rank;
    int64_t d[OPS_MAX_DIMS];  /* collapsed output dims */
    int64_t st[OPS_MAX_DIMS]; /* input stride of each output dim */
} oc_perm;

/* T: float, or float4 when the innermost dim stays innermost (rows move whole). */
template <typename T, typename IT>
__global__ void oc_transpose_kernel(T *__restrict__ y, const T *__restrict__ x, IT n, oc_perm p) {
    for (IT i = blockIdx.x * (IT)blockDim.x + threadIdx.x; i < n; i += (IT)gridDim.x * blockDim.x) {
        IT r = i, off = 0;
        for (int q = p.rank - 1; q >= 0; q--) {
            IT dq = (IT)p.d[q], v = r % dq;
            r /= dq;
            off += v * (IT)p.st[q];
        }
        y[i] = x[off];
    }
}

/* When the innermost dim moves (a matrix transpose inside, as attention's keys (B,S,H,D) ->
 * (B,H,D,S)), one thread per output element reads the input with a stride: every warp's loads
 * touch 32 sectors. Instead a 32x32 tile of the plane (a: the output dim that is innermost in the
 * input, b: the innermost output dim) goes through shared memory, read along a and written along b,
 * both coalesced; the other dims index the tiles. ost: output stride of each collapsed dim. */
#define OC_TT 32 /* tile side */
#define OC_TR 8  /* rows of threads per block: each thread moves OC_TT / OC_TR elements */
template <typename IT>
__global__ void oc_transpose_tiled(float *__restrict__ y, const float *__restrict__ x, oc_perm p, oc_perm o, int qa,
                                   IT n_tiles, IT tiles_a, IT tiles_b) {
    __shared__ float tile[OC_TT][OC_TT + 1]; /* +1: the column reads hit 32 banks */
    const int qb = p.rank - 1;
    const IT da = (IT)p.d[qa], db = (IT)p.d[qb], stb = (IT)p.st[qb], osa = (IT)o.st[qa];
    for (IT blk = blockIdx.x; blk < n_tiles; blk += gridDim.x) {
        IT tb = blk % tiles_b, t = blk / tiles_b, ta = t % tiles_a, r = t / tiles_a;
        IT in0 = 0, out0 = 0;
        for (int q = qb - 1; q >= 0; q--) {
            if (q == qa)
                continue;
            IT dq = (IT)p.d[q], v = r % dq;
            r /= dq;
            in0 += v * (IT)p.st[q];
            out0 += v * (IT)o.st[q];
        }
        for (int j = threadIdx.y; j < OC_TT; j += OC_TR) {
            IT ia = ta * OC_TT + threadIdx.x, ib = tb * OC_TT + j;
            if (ia < da && ib < db)
                tile[j][threadIdx.x] = x[in0 + ia + ib * stb];
        }
        __syncthreads();
        for (int j = threadIdx.y; j < OC_TT; j += OC_TR) {
            IT ib = tb * OC_TT + threadIdx.x, ia = ta * OC_TT + j;
            if (ia < da && ib < db)
                y[out0 + ia * osa + ib] = tile[threadIdx.x][j];
        }
        __syncthreads();
    }
}

/* p: collapsed, the innermost output dim strided in the input. Returns 0 or the launch error. */
static int oc_transpose_plane(ops_cuda_env *env, float *y, const float *x, const oc_perm *p, int64_t n,
                              cudaStream_t str) {
    int qa = 0;
    while (qa < p->rank && p->st[qa] != 1)
        qa++;
    oc_perm o = *p; /* o.st: the output's strides */
    int64_t acc = 1;
    for (int q = p->rank - 1; q >= 0; q--) {
        o.st[q] = acc;
        acc *= p->d[q];
    }
    const int64_t ta = (p->d[qa] + OC_TT - 1) / OC_TT, tb = (p->d[p->rank - 1] + OC_TT - 1) / OC_TT;
    const int64_t tiles = n / (p->d[qa] * p->d[p->rank - 1]) * ta * tb;
    const unsigned grid = (unsigned)(tiles < 65535 * 16 ? tiles : 65535 * 16);
    const dim3 block(OC_TT, OC_TR);
    if (n < INT32_MAX)
        oc_transpose_tiled<int32_t><<<grid, block, 0, str>>>(y, x, *p, o, qa, (int32_t)tiles, (int32_t)ta,
                                                             (int32_t)tb);
    else
        oc_transpose_tiled<int64_t><<<grid, block, 0, str>>>(y, x, *p, o, qa, tiles, ta, tb);
    OC_LAUNCH_TRY(env);
    return 0;
}

OPS_CUDA_FN(transpose) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    const int64_t n = ops_shape_numel(os);
    if (n <= 0)
        return 0;
    int64_t xst[OPS_MAX_DIMS];
    int64_t acc = 1;
    for (int32_t i = xs->rank - 1; i >= 0; i--) {
        xst[i] = acc;
        acc *= xs->dims[i];
    }
    oc_perm p;
    int32_t q = 0;
    for (int32_t i = 0; i < os->rank; i++) {
        int64_t d = os->dims[i], st = xst[s->p->list[i]];
        if (d == 1)
            continue;
        if (q > 0 && p.st[q - 1] == st * d) { /* consecutive in the input too: one dim */
            p.d[q - 1] *= d;
            p.st[q - 1] = st;
            continue;
        }
        p.d[q] = d;
        p.st[q] = st;
        q++;
    }
    p.rank = q;
    const cudaStream_t str = oc_stream(env);
    if (q <= 1) { /* the permutation moves nothing */
        OC_CUDA_TRY(env, cudaMemcpyAsync(out[0], in[0], (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, str));
        return 0;
    }
    int vec = p.st[q - 1] == 1 && p.d[q - 1] % 4 == 0 && ((uintptr_t)in[0] & 15) == 0 && ((uintptr_t)out[0] & 15) == 0;
    for (int32_t i = 0; i < q - 1 && vec; i++)
        vec = p.st[i] % 4 == 0;
    if (vec) { /* whole rows move: copy float4s */
        p.d[q - 1] /= 4;
        for (int32_t i = 0; i < q - 1; i++)
            p.st[i] /= 4;
        const int64_t n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(in[0]);
        float4 *y4 = reinterpret_cast<float4 *>(out[0]);
        if (n4 < INT32_MAX)
            oc_transpose_kernel<float4, int32_t><<<oc_blocks(n4, OC_THREADS), OC_THREADS, 0, str>>>(y4, x4,
                                                                                                 (int32_t)n4, p);
        else
            oc_transpose_kernel<float4, int64_t><<<oc_blocks(n4, OC_THREADS), OC_THREADS, 0, str>>>(y4, x4, n4, p);
    } else if (p.st[q - 1] != 1) { /* the innermost dim moves: tiles through shared memory */
        return oc_transpose_plane(env, out[0], in[0], &p, n, str);
    } else if (n < INT32_MAX) {
        oc_transpose_kernel<float, int32_t><<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, str>>>(out[0], in[0],
                                                                                           (int32_t)n, p);
    } else {
        oc_transpose_kernel<float, int64_t><<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, str>>>(out[0], in[0], n, p);
    }
    OC_LAUNCH_TRY(env);
    return 0;
}

/* --- concat and split ----------------------------------------------------------------------- */

/* Rows of the joined tensor: outer rows of row elements; part k holds columns [start[k], start[k+1]). */
typedef struct {
    const float *src[OPS_MAX_INPUTS];
    int64_t start[OPS_MAX_INPUTS + 1];
    int32_t n;
    int64_t row;
} oc_cat_args;

typedef struct {
    float *dst[OPS_MAX_OUTPUTS];
    int64_t start[OPS_MAX_OUTPUTS + 1];
    int32_t n;
    int64_t row;
} oc_split_args;

/* Largest k < n with start[k] <= col. */
static __device__ __forceinline__ int oc_part(const int64_t *start, int n, int64_t col) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (start[mid] <= col)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

__global__ void oc_concat_kernel(float *__restrict__ y, int64_t total, oc_cat_args a) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = i / a.row, col = i - o * a.row;
        int k = oc_part(a.start, a.n, col);
        int64_t len = a.start[k + 1] - a.start[k];
        y[i] = a.src[k][o * len + col - a.start[k]];
    }
}

__global__ void oc_split_kernel(const float *__restrict__ x, int64_t total, oc_split_args a) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = i / a.row, col = i - o * a.row;
        int k = oc_part(a.start, a.n, col);
        int64_t len = a.start[k + 1] - a.start[k];
        a.dst[k][o * len + col - a.start[k]] = x[i];
    }
}

/* outer = product of dims before axis, inner = after. */
static void oc_axis_split(const ops_shape *sh, int64_t axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int32_t i = 0; i < sh->rank; i++) {
        if (i < axis)
            *outer *= sh->dims[i];
        else if (i > axis)
            *inner *= sh->dims[i];
    }
}

OPS_CUDA_FN(concat) {
    const int64_t axis = s->p->v[PM_AXIS];
    int64_t outer, inner;
    oc_axis_split(&s->out[0], axis, &outer, &inner);
    oc_cat_args a;
    a.n = s->n_in;
    a.start[0] = 0;
    for (int32_t k = 0; k < s->n_in; k++) {
        a.src[k] = in[k];
        a.start[k + 1] = a.start[k] + s->in[k].dims[axis] * inner;
    }
    a.row = a.start[s->n_in];
    const int64_t total = outer * a.row;
    if (total <= 0)
        return 0;
    oc_concat_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(out[0], total, a);
    OC_LAUNCH_TRY(env);
    return 0;
}

OPS_CUDA_FN(split) {
    const int64_t axis = s->p->v[PM_AXIS];
    int64_t outer, inner;
    oc_axis_split(&s->in[0], axis, &outer, &inner);
    oc_split_args a;
    a.n = s->n_out;
    a.start[0] = 0;
    for (int32_t k = 0; k < s->n_out; k++) {
        a.dst[k] = out[k];
        a.start[k + 1] = a.start[k] + s->out[k].dims[axis] * inner;
    }
    a.row = a.start[s->n_out];
    const int64_t total = outer * a.row;
    if (total <= 0)
        return 0;
    oc_split_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(in[0], total, a);
    OC_LAUNCH_TRY(env);
    return 0;
}

/* --- reshape, gather, enlarge --------------------------------------------------------------- */

OPS_CUDA_FN(reshape) {
    const int64_t n = ops_shape_numel(&s->out[0]);
    if (out[0] != in[0] && n > 0)
        OC_CUDA_TRY(env, cudaMemcpyAsync(out[0], in[0], (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice,
                                         oc_stream(env)));
    return 0;
}

__global__ void oc_gather_kernel(float *__restrict__ y, const float *__restrict__ table, const float *__restrict__ ids,
                                 int64_t total, int64_t row, int64_t V) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / row, j = i - r * row;
        float v = ids[r];
        y[i] = (v >= 0.0f && (double)v < (double)V && v == floorf(v)) ? table[(int64_t)v * row + j] : 0.0f;
    }
}

OPS_CUDA_FN(gather) {
    const ops_shape *ts = &s->in[0];
    const int64_t V = ts->dims[0], row = ops_shape_numel(ts) / (V > 0 ? V : 1);
    const int64_t total = ops_shape_numel(&s->out[0]);
    if (total <= 0 || row <= 0)
        return 0;
    oc_gather_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(out[0], in[0], in[1], total,
                                                                                    row, V);
    OC_LAUNCH_TRY(env);
    return 0;
}

/* (FC, kh, kw) centred into (FC, KH, KW) at (oh, ow), zeros around. */
__global__ void oc_enlarge_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t total, int64_t kh,
                                  int64_t kw, int64_t KH, int64_t KW, int64_t oh, int64_t ow) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = i % KW, r = i / KW, h = r % KH, c = r / KH;
        int64_t hh = h - oh, jj = j - ow;
        y[i] = (hh >= 0 && hh < kh && jj >= 0 && jj < kw) ? x[(c * kh + hh) * kw + jj] : 0.0f;
    }
}

OPS_CUDA_FN(enlarge) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    const int64_t kh = xs->dims[2], kw = xs->dims[3], KH = os->dims[2], KW = os->dims[3];
    const int64_t total = ops_shape_numel(os);
    if (total <= 0)
        return 0;
    oc_enlarge_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(
        out[0], in[0], total, kh, kw, KH, KW, (KH - kh) / 2, (KW - kw) / 2);
    OC_LAUNCH_TRY(env);
    return 0;
}

/* --- constants ------------------------------------------------------------------------------ */

__global__ void oc_fill_kernel(float *__restrict__ y, int64_t n, float v) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = v;
}

/* 1 where (a, b, h, w) = (a, a, ch, cw) in a (A, A, H, W) tensor, else 0; const_imm is H = W = 1. */
__global__ void oc_eye_kernel(float *__restrict__ y, int64_t total, int64_t A, int64_t H, int64_t W, int64_t ch,
                              int64_t cw) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t w = i % W, r = i / W, h = r % H;
        r /= H;
        int64_t b = r % A, a = r / A;
        y[i] = (a == b && h == ch && w == cw) ? 1.0f : 0.0f;
    }
}

static int oc_fill(ops_cuda_env *env, float *y, int64_t n, float v) {
    if (n <= 0)
        return 0;
    oc_fill_kernel<<<oc_blocks(n, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(y, n, v);
    OC_LAUNCH_TRY(env);
    return 0;
}

static int oc_eye(ops_cuda_env *env, float *y, int64_t A, int64_t H, int64_t W) {
    const int64_t total = A * A * H * W;
    if (total <= 0)
        return 0;
    oc_eye_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(y, total, A, H, W, H / 2, W / 2);
    OC_LAUNCH_TRY(env);
    return 0;
}

OPS_CUDA_FN(const_imm) { return oc_eye(env, out[0], s->out[0].dims[0], 1, 1); }

OPS_CUDA_FN(const_iconv) {
    const ops_shape *os = &s->out[0]; /* (c, c, kh, kw) */
    return oc_eye(env, out[0], os->dims[0], os->dims[2], os->dims[3]);
}

OPS_CUDA_FN(const_ones) { return oc_fill(env, out[0], ops_shape_numel(&s->out[0]), 1.0f); }

OPS_CUDA_FN(const_pool) {
    const ops_shape *os = &s->out[0]; /* (c, 1, kh, kw) */
    return oc_fill(env, out[0], ops_shape_numel(os), (float)(1.0 / (double)(os->dims[2] * os->dims[3])));
}

/* --- pad and resize ------------------------------------------------------------------------- */

typedef struct {
    int32_t rank, mode;
    float value;
    int64_t od[OPS_MAX_DIMS], xd[OPS_MAX_DIMS], xst[OPS_MAX_DIMS], beg[OPS_MAX_DIMS];
} oc_pad_args;

/* ops_cpu.c cpu_pad_src: the input index of padded index i, or -1 for a constant cell. */
static __device__ __forceinline__ int64_t oc_pad_src(int mode, int64_t i, int64_t b, int64_t len) {
    int64_t q = i - b;
    if (q >= 0 && q < len)
        return q;
    if (mode == 0)
        return -1;
    if (mode == 2)
        return q < 0 ? 0 : len - 1;
    return q < 0 ? -q : 2 * (len - 1) - q;
}

__global__ void oc_pad_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t total, oc_pad_args a) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, off = 0;
        for (int32_t d = a.rank - 1; d >= 0 && off >= 0; d--) {
            int64_t q = oc_pad_src(a.mode, rem % a.od[d], a.beg[d], a.xd[d]);
            rem /= a.od[d];
            off = q < 0 ? -1 : off + q * a.xst[d];
        }
        y[i] = off < 0 ? a.value : x[off];
    }
}

OPS_CUDA_FN(pad) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    oc_pad_args a;
    a.rank = xs->rank;
    a.mode = (int32_t)s->p->v[PM_MODE];
    a.value = ops_p2f(s->p->v[PM_VALUE]);
    int64_t acc = 1;
    for (int32_t d = xs->rank - 1; d >= 0; d--) {
        a.od[d] = os->dims[d];
        a.xd[d] = xs->dims[d];
        a.beg[d] = s->p->list[d];
        a.xst[d] = acc;
        acc *= xs->dims[d];
    }
    const int64_t total = ops_shape_numel(os);
    if (total <= 0)
        return 0;
    oc_pad_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(out[0], in[0], total, a);
    OC_LAUNCH_TRY(env);
    return 0;
}

typedef struct {
    int64_t H, W, OH, OW;
    float sh, sw;
    int32_t coord, nearest, linear;
} oc_resize_args;

/* ops_cpu.c cpu_resize_coord: the input coordinate in float, the same operations in the same order. */
static __device__ __forceinline__ float oc_resize_coord(int coord, int64_t x, float scale, int64_t len_in,
                                                        int64_t len_out) {
    const float xr = (float)x;
    switch (coord) {
    case 1:
        return __fdiv_rn(xr, scale);
    case 2:
        return len_out == 1 ? 0.0f : __fdiv_rn(__fmul_rn(xr, (float)(len_in - 1)), (float)(len_out - 1));
    case 3:
        return len_out > 1 ? __fsub_rn(__fdiv_rn(__fadd_rn(xr, 0.5f), scale), 0.5f) : 0.0f;
    default:
        return __fsub_rn(__fdiv_rn(__fadd_rn(xr, 0.5f), scale), 0.5f);
    }
}

/* ops_cpu.c cpu_resize_nearest. */
static __device__ __forceinline__ int64_t oc_resize_nearest(int nearest, float c, int64_t len_in) {
    int64_t i;
    if (nearest == 2)
        i = (int64_t)floorf(c);
    else if (nearest == 3)
        i = (int64_t)ceilf(c);
    else if (nearest == 0 && c == __fadd_rn((float)(int64_t)c, 0.5f))
        i = (int64_t)floorf(c);
    else
        i = (int64_t)roundf(c);
    return i < 0 ? 0 : i >= len_in ? len_in - 1 : i;
}

/* ops_cpu.c cpu_resize_linear. */
static __device__ __forceinline__ void oc_resize_linear(float c, int64_t len_in, int64_t *i1, int64_t *i2, float *w1,
                                                        float *w2) {
    c = c < 0.0f ? 0.0f : c > (float)(len_in - 1) ? (float)(len_in - 1) : c;
    *i1 = (int64_t)c < len_in - 1 ? (int64_t)c : len_in - 1;
    *i2 = *i1 + 1 < len_in - 1 ? *i1 + 1 : len_in - 1;
    float d1 = fabsf(__fsub_rn(c, (float)*i1)), d2 = fabsf(__fsub_rn(c, (float)*i2));
    if (*i1 == *i2)
        d1 = d2 = 0.5f;
    *w1 = d2;
    *w2 = d1;
}

/* a * b * v in double, each product rounded (the CPU's left-to-right evaluation). */
static __device__ __forceinline__ double oc_w3(float a, float b, float v) {
    return __dmul_rn(__dmul_rn((double)a, (double)b), (double)v);
}

__global__ void oc_resize_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t total, oc_resize_args a) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t ox = i % a.OW, r = i / a.OW, oy = r % a.OH, pl = r / a.OH;
        const float *xp = x + pl * a.H * a.W;
        const float cy = oc_resize_coord(a.coord, oy, a.sh, a.H, a.OH);
        const float cx = oc_resize_coord(a.coord, ox, a.sw, a.W, a.OW);
        if (!a.linear) {
            y[i] = xp[oc_resize_nearest(a.nearest, cy, a.H) * a.W + oc_resize_nearest(a.nearest, cx, a.W)];
            continue;
        }
        int64_t y1, y2, x1, x2;
        float wy1, wy2, wx1, wx2;
        oc_resize_linear(cy, a.H, &y1, &y2, &wy1, &wy2);
        oc_resize_linear(cx, a.W, &x1, &x2, &wx1, &wx2);
        double v = __dadd_rn(oc_w3(wy1, wx1, xp[y1 * a.W + x1]), oc_w3(wy1, wx2, xp[y1 * a.W + x2]));
        v = __dadd_rn(v, oc_w3(wy2, wx1, xp[y2 * a.W + x1]));
        v = __dadd_rn(v, oc_w3(wy2, wx2, xp[y2 * a.W + x2]));
        y[i] = (float)v;
    }
}

/* ops_cpu.c cpu_resize_scale: the parameter, or out / in in float. */
static float oc_resize_scale(int64_t bits, int64_t len_in, int64_t len_out) {
    float f = ops_p2f(bits);
    return f > 0.0f ? f : (float)len_out / (float)len_in;
}

OPS_CUDA_FN(resize) {
    const ops_shape *xs = &s->in[0], *os = &s->out[0];
    const int32_t r = xs->rank;
    oc_resize_args a;
    a.H = xs->dims[r - 2];
    a.W = xs->dims[r - 1];
    a.OH = os->dims[r - 2];
    a.OW = os->dims[r - 1];
    a.sh = oc_resize_scale(s->p->v[PM_SCALE_H], a.H, a.OH);
    a.sw = oc_resize_scale(s->p->v[PM_SCALE_W], a.W, a.OW);
    a.coord = (int32_t)s->p->v[PM_COORD];
    a.nearest = (int32_t)s->p->v[PM_NEAREST];
    a.linear = s->p->v[PM_MODE] == 1;
    const int64_t total = ops_shape_numel(os);
    if (total <= 0)
        return 0;
    oc_resize_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(out[0], in[0], total, a);
    OC_LAUNCH_TRY(env);
    return 0;
}
