/* ops_conv.cu: CUDA implementations of conv2d, avgpool2d and maxpool2d on cuDNN.
 *
 * conv2d: groups, strides, dilation and the node's padding; the algorithm is chosen by
 * measurement (cudnnFindConvolutionForwardAlgorithmEx on the node's own buffers, strict FP32:
 * FMA math, no tensor-op results accepted) within the runtime's bounded workspace, once per
 * distinct configuration in the process. Bias and relu are fused into the convolution
 * (cudnnConvolutionBiasActivationForward) where cuDNN accepts it, found out in the setup run;
 * otherwise, and for the other activations, one epilogue pass follows. cuDNN pads symmetrically
 * only: an asymmetric padding ("same" with an even remainder, ONNX ceil_mode) first copies the
 * input into a zero-padded buffer at the start of the workspace.
 * Pools: cuDNN where the padding is symmetric, checked once against our kernel on the setup
 * run's data (our kernel, a transcription of the CPU reference, is kept if they disagree);
 * our kernel for asymmetric padding.
 * Per-node state: descriptors and choices, owned by the node (freed by rt_*_free).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rt_impl.h"

/* --- shared kernels ------------------------------------------------------------------------- */

/* x (NC, H, W) into xp (NC, HP, WP) with pt rows and pl columns of zeros before it. */
__global__ void rt_pad_kernel(float *__restrict__ xp, const float *__restrict__ x, int64_t total, int64_t H,
                              int64_t W, int64_t HP, int64_t WP, int64_t pt, int64_t pl) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t w = i % WP, r = i / WP, h = r % HP, c = r / HP;
        int64_t hh = h - pt, ww = w - pl;
        xp[i] = (hh >= 0 && hh < H && ww >= 0 && ww < W) ? x[(c * H + hh) * W + ww] : 0.0f;
    }
}

/* The CPU reference's pool, one thread per output: cells row by row, padded cells skipped; the
 * mean divides by kh*kw (count_pad) or the valid cells; a NaN in a window wins the max. */
__global__ void rt_pool_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t total, int64_t H,
                               int64_t W, int64_t OH, int64_t OW, ops_window win, int is_max, int count_pad) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ow = i % OW, r = i / OW, oh = r % OH, c = r / OH;
        int64_t h0 = oh * win.sh - win.pt, hs = h0 < 0 ? 0 : h0, he = h0 + win.kh < H ? h0 + win.kh : H;
        int64_t w0 = ow * win.sw - win.pl, ws = w0 < 0 ? 0 : w0, we = w0 + win.kw < W ? w0 + win.kw : W;
        const float *xc = x + c * H * W;
        float v;
        if (is_max) {
            v = hs < he && ws < we ? xc[hs * W + ws] : -INFINITY;
            for (int64_t a = hs; a < he; a++)
                for (int64_t b = ws; b < we; b++) {
                    float u = xc[a * W + b];
                    if (u > v || u != u)
                        v = u;
                }
        } else {
            float sum = 0.0f;
            for (int64_t a = hs; a < he; a++)
                for (int64_t b = ws; b < we; b++)
                    sum += xc[a * W + b];
            int64_t cnt = count_pad ? win.kh * win.kw : (he - hs) * (we - ws);
            v = sum / (float)cnt;
        }
        y[i] = v;
    }
}

static size_t rt_up(size_t v) { return (v + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN; }

static int rt_fits_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

/* --- conv2d --------------------------------------------------------------------------------- */

typedef struct {
    int64_t v[15]; /* N, C, HP, WP, F, CG, KH, KW, sh, sw, dh, dw, ph, pw, groups */
} rt_conv_key;

typedef struct {
    rt_conv_key key;
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws;
    float ms;
} rt_conv_choice;

/* Algorithms measured so far in this process (configurations recur within and across graphs). */
static rt_conv_choice *rt_conv_cache;
static int32_t rt_conv_cache_n, rt_conv_cache_cap;

static const rt_conv_choice *rt_conv_cache_find(const rt_conv_key *k) {
    for (int32_t i = 0; i < rt_conv_cache_n; i++)
        if (!memcmp(&rt_conv_cache[i].key, k, sizeof *k))
            return &rt_conv_cache[i];
    return NULL;
}

static void rt_conv_cache_add(const rt_conv_choice *c) {
    if (rt_conv_cache_n == rt_conv_cache_cap) {
        int32_t cap = rt_conv_cache_cap ? 2 * rt_conv_cache_cap : 64;
        rt_conv_choice *p = (rt_conv_choice *)realloc(rt_conv_cache, (size_t)cap * sizeof *p);
        if (!p)
            return; /* measuring again next time is correct, only slower */
        rt_conv_cache = p;
        rt_conv_cache_cap = cap;
    }
    rt_conv_cache[rt_conv_cache_n++] = *c;
}

typedef struct {
    cudnnTensorDescriptor_t x, y, b;    /* x (N,C,HP,WP) as the convolution reads it; y (N,F,OH,OW); b (1,F,1,1) */
    cudnnFilterDescriptor_t w;          /* (F, C/groups, KH, KW) */
    cudnnConvolutionDescriptor_t conv;
    cudnnActivationDescriptor_t act;    /* relu or identity, for the fused call */
    cudnnConvolutionFwdAlgo_t algo;
    size_t algo_ws;                     /* workspace bytes the algorithm needs */
    size_t pad_bytes;                   /* > 0: the padded copy of x at the workspace's start */
    int64_t H, W, HP, WP, pt, pl, NC;
    int fused;                          /* 1: bias (and relu) inside the convolution call */
    int post;                           /* 1: bias and activation in a separate pass */
    float *zero_bias;                   /* (F) zeros for a fused relu without bias (owned) */
} rt_conv_state;

static void rt_conv_free(void *p) {
    rt_conv_state *st = (rt_conv_state *)p;
    if (st->x)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->x));
    if (st->y)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->y));
    if (st->b)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->b));
    if (st->w)
        CUDNN_CHECK(cudnnDestroyFilterDescriptor(st->w));
    if (st->conv)
        CUDNN_CHECK(cudnnDestroyConvolutionDescriptor(st->conv));
    if (st->act)
        CUDNN_CHECK(cudnnDestroyActivationDescriptor(st->act));
    if (st->zero_bias)
        CUDA_CHECK(cudaFree(st->zero_bias));
    free(st);
}

static const char *rt_algo_name(cudnnConvolutionFwdAlgo_t a) {
    switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
        return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
        return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
        return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
        return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
        return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
        return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
        return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
        return "winograd_nonfused";
    default:
        return "?";
    }
}

/* Copy x into the padded buffer at ws (asymmetric padding only). */
static int rt_conv_pad(rt_ctx *ctx, const rt_conv_state *st, const float *x, float *ws) {
    const int64_t total = st->NC * st->HP * st->WP;
    rt_pad_kernel<<<rt_blocks(total, RT_THREADS), RT_THREADS, 0, rt_stream(ctx)>>>(ws, x, total, st->H, st->W, st->HP,
                                                                                 st->WP, st->pt, st->pl);
    RT_LAUNCH_TRY(ctx);
    return 0;
}

/* Descriptors, the measured algorithm, and the workspace need. */
static int rt_conv_setup(rt_ctx *ctx, rt_conv_state *st, const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *ws_ = &s->in[1], *ys = &s->out[0];
    ops_window win;
    char msg[256];
    if (ops_window2d(OP_CONV2D, s->p, xs, ws_, &win, msg, sizeof msg) < 0)
        return rt_fail(ctx, "%s", msg);
    const int64_t N = xs->dims[0], C = xs->dims[1], H = xs->dims[2], W = xs->dims[3];
    const int64_t F = ws_->dims[0], CG = ws_->dims[1], KH = ws_->dims[2], KW = ws_->dims[3];
    const int64_t G = s->p->v[PM_GROUPS];
    const int sym = win.pt == win.pb && win.pl == win.pr;
    st->H = H;
    st->W = W;
    st->NC = N * C;
    st->HP = sym ? H : H + win.pt + win.pb;
    st->WP = sym ? W : W + win.pl + win.pr;
    st->pt = win.pt;
    st->pl = win.pl;
    st->pad_bytes = sym ? 0 : rt_up((size_t)(N * C * st->HP * st->WP) * sizeof(float));
    const int64_t ph = sym ? win.pt : 0, pw = sym ? win.pl : 0;
    const int64_t dims[] = {N, C, st->HP, st->WP, F, CG, KH, KW, win.sh, win.sw, win.dh, win.dw, ph, pw, G,
                            ys->dims[2], ys->dims[3]};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (!rt_fits_int(dims[i]))
            return rt_fail(ctx, "a dimension or parameter exceeds cuDNN's int range");
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->x));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->y));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->b));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&st->w));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&st->conv));
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&st->act));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)N, (int)C, (int)st->HP,
                                           (int)st->WP));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)N, (int)F,
                                           (int)ys->dims[2], (int)ys->dims[3]));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, (int)F, 1, 1));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(st->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)F, (int)CG, (int)KH,
                                           (int)KW));
    RT_CUDNN_TRY(ctx, cudnnSetConvolution2dDescriptor(st->conv, (int)ph, (int)pw, (int)win.sh, (int)win.sw,
                                                      (int)win.dh, (int)win.dw, CUDNN_CROSS_CORRELATION,
                                                      CUDNN_DATA_FLOAT));
    RT_CUDNN_TRY(ctx, cudnnSetConvolutionGroupCount(st->conv, (int)G));
    RT_CUDNN_TRY(ctx, cudnnSetConvolutionMathType(st->conv, CUDNN_FMA_MATH));
    int on, oc, oh, ow;
    RT_CUDNN_TRY(ctx, cudnnGetConvolution2dForwardOutputDim(st->conv, st->x, st->w, &on, &oc, &oh, &ow));
    if (on != N || oc != F || oh != ys->dims[2] || ow != ys->dims[3])
        return rt_fail(ctx, "cuDNN computes an output of (%d,%d,%d,%d), the graph says (%lld,%lld,%lld,%lld)", on, oc,
                       oh, ow, (long long)N, (long long)F, (long long)ys->dims[2], (long long)ys->dims[3]);

    rt_conv_key key;
    memset(&key, 0, sizeof key);
    for (int i = 0; i < 15; i++)
        key.v[i] = dims[i];
    const rt_conv_choice *known = rt_conv_cache_find(&key);
    rt_conv_choice ch;
    if (known) {
        ch = *known;
    } else {
        size_t sbytes = 0;
        char *sws = (char *)rt_workspace_search(ctx, &sbytes);
        if (!sws)
            return -1;
        if (st->pad_bytes >= sbytes)
            return rt_fail(ctx, "the padded input (%zu bytes) does not fit the workspace limit", st->pad_bytes);
        const float *x = in[0];
        if (st->pad_bytes) {
            if (rt_conv_pad(ctx, st, in[0], (float *)sws) < 0)
                return -1;
            x = (const float *)sws;
        }
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int got = 0;
        RT_CUDNN_TRY(ctx, cudnnFindConvolutionForwardAlgorithmEx(
                              rt_cudnn(ctx), st->x, x, st->w, in[1], st->conv, st->y, out[0],
                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf, sws + st->pad_bytes,
                              sbytes - st->pad_bytes));
        int pick = -1;
        for (int i = 0; i < got && pick < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
                perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
                pick = i;
        if (pick < 0)
            return rt_fail(ctx, "cuDNN found no FP32 algorithm within %.0f MiB of workspace for this convolution",
                           (double)sbytes / 1048576.0);
        ch.key = key;
        ch.algo = perf[pick].algo;
        ch.ws = perf[pick].memory;
        ch.ms = perf[pick].time;
        rt_conv_cache_add(&ch);
    }
    st->algo = ch.algo;
    st->algo_ws = ch.ws;
    if (!rt_workspace(ctx, st->pad_bytes + st->algo_ws))
        return -1;
    if (rt_verbose(ctx))
        fprintf(stderr, "tasc: node '%s': conv %lldx%lldx%lldx%lld * %lldx%lldx%lldx%lld /%lld g%lld: %s, %.1f KiB, "
                        "%.4f ms%s\n",
                rt_node_name(ctx), (long long)N, (long long)C, (long long)H, (long long)W, (long long)F,
                (long long)CG, (long long)KH, (long long)KW, (long long)win.sh, (long long)G, rt_algo_name(ch.algo),
                (double)ch.ws / 1024.0, (double)ch.ms, known ? " (cached)" : "");
    return 0;
}

/* The convolution with whatever epilogue the state says; fused -1 tries the fused call. */
static int rt_conv_exec(rt_ctx *ctx, rt_conv_state *st, const ops_sig *s, const float *const *in, float *const *out) {
    const float one = 1.0f, zero = 0.0f;
    char *ws = (char *)rt_workspace(ctx, st->pad_bytes + st->algo_ws);
    if (!ws && st->pad_bytes + st->algo_ws > 0)
        return -1;
    const float *x = in[0];
    if (st->pad_bytes) {
        if (rt_conv_pad(ctx, st, in[0], (float *)ws) < 0)
            return -1;
        x = (const float *)ws;
    }
    void *cws = st->algo_ws ? ws + st->pad_bytes : NULL;
    const float *bias = s->n_in > 2 ? in[2] : NULL;
    const ops_act act = (ops_act)s->p->v[PM_ACT];
    if (st->fused) {
        RT_CUDNN_TRY(ctx, cudnnConvolutionBiasActivationForward(
                              rt_cudnn(ctx), &one, st->x, x, st->w, in[1], st->conv, st->algo, cws, st->algo_ws,
                              &zero, st->y, out[0], st->b, bias ? bias : st->zero_bias, st->act, st->y, out[0]));
        return 0;
    }
    RT_CUDNN_TRY(ctx, cudnnConvolutionForward(rt_cudnn(ctx), &one, st->x, x, st->w, in[1], st->conv, st->algo, cws,
                                              st->algo_ws, &zero, st->y, out[0]));
    if (st->post) {
        const ops_shape *ys = &s->out[0];
        RT_CUDA_TRY(ctx, rt_launch_bias_act(out[0], bias, ops_shape_numel(ys), ys->dims[1], ys->dims[2] * ys->dims[3],
                                            act, rt_stream(ctx)));
    }
    return 0;
}

/* Host-side relative L2 difference of two device buffers of n floats (setup only); a
 * non-finite value on one side only, or NaN anywhere, counts as a mismatch (returns INFINITY). */
static double rt_dev_diff(rt_ctx *ctx, const float *a, const float *b, int64_t n) {
    const size_t bytes = (size_t)n * sizeof(float);
    float *h = (float *)malloc(2 * bytes + 1);
    if (!h)
        return INFINITY;
    CUDA_CHECK(cudaMemcpyAsync(h, a, bytes, cudaMemcpyDeviceToHost, rt_stream(ctx)));
    CUDA_CHECK(cudaMemcpyAsync(h + n, b, bytes, cudaMemcpyDeviceToHost, rt_stream(ctx)));
    CUDA_CHECK(cudaStreamSynchronize(rt_stream(ctx)));
    double num = 0.0, den = 0.0;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = h[i], y = h[n + i];
        if (isfinite(x) && isfinite(y)) {
            num += (x - y) * (x - y);
            den += y * y;
        } else if (!(x == y)) {
            bad = 1;
        }
    }
    free(h);
    return bad ? INFINITY : sqrt(num) / fmax(sqrt(den), 1e-30);
}

RT_OP_FN(conv2d) {
    rt_conv_state *st = (rt_conv_state *)rt_node_state(ctx);
    if (st)
        return rt_conv_exec(ctx, st, s, in, out);
    if (!rt_setup_phase(ctx))
        return rt_fail(ctx, "internal error: no conv2d state after setup");
    st = (rt_conv_state *)calloc(1, sizeof *st);
    if (!st)
        return rt_fail(ctx, "out of memory");
    rt_node_state_set(ctx, st, rt_conv_free);
    if (rt_conv_setup(ctx, st, s, in, out) < 0)
        return -1;
    const ops_act act = (ops_act)s->p->v[PM_ACT];
    const int has_bias = s->n_in > 2;
    st->post = has_bias || act != OPS_ACT_NONE;
    if (rt_conv_exec(ctx, st, s, in, out) < 0) /* the unfused result, kept as the reference */
        return -1;
    if (!(act == OPS_ACT_RELU || (act == OPS_ACT_NONE && has_bias)))
        return 0;
    /* try bias (and relu) inside the convolution; keep it only if it gives the same result */
    const int64_t n = ops_shape_numel(&s->out[0]);
    const size_t bytes = (size_t)n * sizeof(float);
    float *ref = NULL;
    CUDA_CHECK(cudaMalloc((void **)&ref, bytes));
    CUDA_CHECK(cudaMemcpyAsync(ref, out[0], bytes, cudaMemcpyDeviceToDevice, rt_stream(ctx)));
    CUDNN_CHECK(cudnnSetActivationDescriptor(st->act, act == OPS_ACT_RELU ? CUDNN_ACTIVATION_RELU
                                                                          : CUDNN_ACTIVATION_IDENTITY,
                                             CUDNN_PROPAGATE_NAN, 0.0));
    if (!has_bias) {
        const size_t b = (size_t)s->in[1].dims[0] * sizeof(float);
        CUDA_CHECK(cudaMalloc((void **)&st->zero_bias, b));
        CUDA_CHECK(cudaMemsetAsync(st->zero_bias, 0, b, rt_stream(ctx)));
    }
    st->fused = 1;
    int ok = rt_conv_exec(ctx, st, s, in, out) == 0;
    double rel = ok ? rt_dev_diff(ctx, out[0], ref, n) : 0.0;
    if (!ok || !(rel <= 1e-5)) {
        if (!ok && rt_verbose(ctx))
            fprintf(stderr, "tasc: node '%s': bias/relu not fused (cuDNN: %s)\n", rt_node_name(ctx), ctx->err);
        if (ok)
            fprintf(stderr, "tasc: node '%s': cuDNN's fused bias/relu differs from conv + epilogue (rel L2 %.3g); "
                            "not fused\n", rt_node_name(ctx), rel);
        (void)cudaGetLastError();
        st->fused = 0;
        CUDA_CHECK(cudaMemcpyAsync(out[0], ref, bytes, cudaMemcpyDeviceToDevice, rt_stream(ctx)));
    } else {
        st->post = 0;
    }
    CUDA_CHECK(cudaStreamSynchronize(rt_stream(ctx)));
    CUDA_CHECK(cudaFree(ref));
    return 0;
}

/* --- pools ---------------------------------------------------------------------------------- */

typedef struct {
    cudnnTensorDescriptor_t x, y;
    cudnnPoolingDescriptor_t pool;
    int own;                  /* 1: our kernel */
    ops_window win;
} rt_pool_state;

static void rt_pool_free(void *p) {
    rt_pool_state *st = (rt_pool_state *)p;
    if (st->x)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->x));
    if (st->y)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->y));
    if (st->pool)
        CUDNN_CHECK(cudnnDestroyPoolingDescriptor(st->pool));
    free(st);
}

static int rt_pool_own(rt_ctx *ctx, const rt_pool_state *st, const ops_sig *s, const float *x, float *y) {
    const ops_shape *xs = &s->in[0], *ys = &s->out[0];
    const int64_t total = ops_shape_numel(ys);
    if (total <= 0)
        return 0;
    rt_pool_kernel<<<rt_blocks(total, RT_THREADS), RT_THREADS, 0, rt_stream(ctx)>>>(
        y, x, total, xs->dims[2], xs->dims[3], ys->dims[2], ys->dims[3], st->win, s->op == OP_MAXPOOL2D,
        (int)s->p->v[PM_COUNT_PAD]);
    RT_LAUNCH_TRY(ctx);
    return 0;
}

static int rt_pool_cudnn(rt_ctx *ctx, const rt_pool_state *st, const float *x, float *y) {
    const float one = 1.0f, zero = 0.0f;
    RT_CUDNN_TRY(ctx, cudnnPoolingForward(rt_cudnn(ctx), st->pool, &one, st->x, x, &zero, st->y, y));
    return 0;
}

/* Setup: cuDNN's descriptors when the padding is symmetric, then one run of cuDNN checked
 * against our kernel on the same data. */
static int rt_pool_setup(rt_ctx *ctx, rt_pool_state *st, const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *ys = &s->out[0];
    char msg[256];
    if (ops_window2d(s->op, s->p, xs, NULL, &st->win, msg, sizeof msg) < 0)
        return rt_fail(ctx, "%s", msg);
    const ops_window *w = &st->win;
    st->own = 1;
    const int64_t dims[] = {xs->dims[0], xs->dims[1], xs->dims[2], xs->dims[3], ys->dims[2], ys->dims[3],
                            w->kh,       w->kw,       w->pt,       w->pl,       w->sh,       w->sw};
    int ok = w->pt == w->pb && w->pl == w->pr;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        ok = ok && rt_fits_int(dims[i]);
    if (!ok)
        return rt_pool_own(ctx, st, s, in[0], out[0]);
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->x));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->y));
    CUDNN_CHECK(cudnnCreatePoolingDescriptor(&st->pool));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)dims[0], (int)dims[1],
                                           (int)dims[2], (int)dims[3]));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)dims[0], (int)dims[1],
                                           (int)dims[4], (int)dims[5]));
    cudnnPoolingMode_t mode = s->op == OP_MAXPOOL2D ? CUDNN_POOLING_MAX
                              : s->p->v[PM_COUNT_PAD] ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                      : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    int on = 0, oc = 0, oh = 0, ow = 0;
    if (cudnnSetPooling2dDescriptor(st->pool, mode, CUDNN_PROPAGATE_NAN, (int)w->kh, (int)w->kw, (int)w->pt,
                                    (int)w->pl, (int)w->sh, (int)w->sw) != CUDNN_STATUS_SUCCESS ||
        cudnnGetPooling2dForwardOutputDim(st->pool, st->x, &on, &oc, &oh, &ow) != CUDNN_STATUS_SUCCESS ||
        oh != ys->dims[2] || ow != ys->dims[3])
        return rt_pool_own(ctx, st, s, in[0], out[0]);
    /* our kernel's result into a scratch buffer, cuDNN's into the output, compared */
    const int64_t n = ops_shape_numel(ys);
    float *ref = NULL;
    CUDA_CHECK(cudaMalloc((void **)&ref, (size_t)n * sizeof(float)));
    if (rt_pool_own(ctx, st, s, in[0], ref) < 0) {
        CUDA_CHECK(cudaFree(ref));
        return -1;
    }
    double rel = rt_pool_cudnn(ctx, st, in[0], out[0]) < 0 ? -1.0 : rt_dev_diff(ctx, out[0], ref, n);
    CUDA_CHECK(cudaStreamSynchronize(rt_stream(ctx)));
    CUDA_CHECK(cudaFree(ref));
    if (rel < 0.0) {
        if (rt_verbose(ctx))
            fprintf(stderr, "tasc: node '%s': pool on our kernel (cuDNN: %s)\n", rt_node_name(ctx), ctx->err);
        return rt_pool_own(ctx, st, s, in[0], out[0]);
    }
    if (!(rel <= 1e-6)) {
        fprintf(stderr, "tasc: node '%s': cuDNN pooling differs from the reference (rel L2 %.3g); using our kernel\n",
                rt_node_name(ctx), rel);
        return rt_pool_own(ctx, st, s, in[0], out[0]);
    }
    st->own = 0;
    return 0;
}

static int rt_pool(rt_ctx *ctx, const ops_sig *s, const float *const *in, float *const *out) {
    rt_pool_state *st = (rt_pool_state *)rt_node_state(ctx);
    if (st)
        return st->own ? rt_pool_own(ctx, st, s, in[0], out[0]) : rt_pool_cudnn(ctx, st, in[0], out[0]);
    if (!rt_setup_phase(ctx))
        return rt_fail(ctx, "internal error: no pool state after setup");
    st = (rt_pool_state *)calloc(1, sizeof *st);
    if (!st)
        return rt_fail(ctx, "out of memory");
    rt_node_state_set(ctx, st, rt_pool_free);
    return rt_pool_setup(ctx, st, s, in, out);
}

RT_OP_FN(avgpool2d) { return rt_pool(ctx, s, in, out); }
RT_OP_FN(maxpool2d) { return rt_pool(ctx, s, in, out); }
