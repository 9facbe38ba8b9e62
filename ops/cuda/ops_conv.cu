/* ops_conv.cu: CUDA implementations of conv2d, avgpool2d and maxpool2d.
 *
 * conv2d (groups, strides, dilation, any padding, bias, every activation) has six paths; the
 * setup run measures each that can run (once per distinct configuration and workspace limit in
 * the process; inside a CUDA graph, as the model runs: oc_conv_time) and keeps the fastest;
 * TASC_RT_CONV=cudnn|gemm|direct|3xtf32|igemm|wgmma forces one where it can run:
 *   cudnn   cuDNN's fastest strict-FP32 algorithm (cudnnFindConvolutionForwardAlgorithmEx on the
 *           node's own buffers within the bounded workspace; FMA math, no tensor-op results);
 *           bias and relu fused into the call (cudnnConvolutionBiasActivationForward) where cuDNN
 *           accepts it, gives the unfused result and is not slower; cuDNN pads symmetrically only, so an
 *           asymmetric padding ("same" with an odd total, ONNX ceil_mode) copies the input into a
 *           zero-padded buffer at the start of the workspace first;
 *   gemm    im2col into the workspace (nothing for a 1x1, stride-1, unpadded convolution) and the
 *           hand-written matmul (matmul.h) per image and group, the activation in its epilogue;
 *   direct  four adjacent outputs of a row per thread (one where rows are narrower), each summed
 *           in the CPU reference's order, bias and activation inline, 32-bit indices where they
 *           fit: for short reductions (depthwise, small groups);
 *   3xtf32  at precision 3xtf32 only, groups 1: the implicit GEMM on the tensor cores at FP32
 *           accuracy (conv_3xtf32.cu), bias and the matmul activations in its epilogue; each of
 *           its tile configurations is timed and the fastest kept;
 *   igemm   at both precisions (strict FP32), groups 1: the implicit GEMM on the FMA units
 *           (conv_fp32.cu), one kernel with bias, the fused add and the matmul activations in its
 *           epilogue (the gemm path's im2col and bias pass saved: batch-1 layers); each tile
 *           configuration and split-K timed, the fastest kept;
 *   wgmma   at precision 3xtf32 on Hopper (compute capability 9.0, the sm_90a build), groups 1:
 *           one gather kernel writes the split columns (conv_wgmma.h), then the wgmma 3xTF32
 *           matmul runs all images as one GEMM against the weight split once (the runtime's
 *           pre-split), split-K for deep layers of few tiles, bias, the fused add and the matmul
 *           activations in its epilogue; each configuration and split timed, the fastest kept.
 * The implicit GEMMs (and wgmma) add a fused residual (env->fuse_add) in their epilogue too. Where
 * the path leaves bias, add or activation over, one epilogue pass follows.
 * Pools: cuDNN where the padding is symmetric, checked once against our kernel on the setup run's
 * data (our kernel, a transcription of the CPU reference, is kept if they disagree); our kernel
 * for asymmetric padding.
 * Per-node state: descriptors and choices, owned by the node (freed by oc_*_free). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "conv_3xtf32.h"
#include "conv_fp32.h"
#include "conv_table.h"
#include "conv_wgmma.h"
#include "matmul.h"
#include "ops_cuda.h"

/* --- shared kernels ------------------------------------------------------------------------- */

/* x (NC, H, W) into xp (NC, HP, WP) with pt rows and pl columns of zeros before it. */
__global__ void oc_pad_kernel(float *__restrict__ xp, const float *__restrict__ x, int64_t total, int64_t H,
                              int64_t W, int64_t HP, int64_t WP, int64_t pt, int64_t pl) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t w = i % WP, r = i / WP, h = r % HP, c = r / HP;
        int64_t hh = h - pt, ww = w - pl;
        xp[i] = (hh >= 0 && hh < H && ww >= 0 && ww < W) ? x[(c * H + hh) * W + ww] : 0.0f;
    }
}

/* The CPU reference's pool, one thread per output: cells row by row, padded cells skipped; the
 * mean divides by kh*kw (count_pad) or the valid cells; a NaN in a window wins the max. */
__global__ void oc_pool_kernel(float *__restrict__ y, const float *__restrict__ x, int64_t total, int64_t H,
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

static size_t oc_up(size_t v) { return (v + OC_ALIGN - 1) / OC_ALIGN * OC_ALIGN; }

static int oc_fits_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

/* --- conv2d --------------------------------------------------------------------------------- */

/* col (N, C, KH, KW, OH, OW) = the input cell each kernel tap reads for each output, 0 in padding:
 * row (c, kh, kw) of group g's block is the K = C/G * KH * KW long reduction of the weight row. */
template <typename IT>
__global__ void oc_im2col_kernel(float *__restrict__ col, const float *__restrict__ x, IT total, IT C, IT H, IT W,
                                 IT KH, IT KW, IT OH, IT OW, IT sh, IT sw, IT dh, IT dw, IT pt, IT pl) {
    for (IT i = blockIdx.x * (IT)blockDim.x + threadIdx.x; i < total; i += (IT)gridDim.x * blockDim.x) {
        IT r = i, ow = r % OW;
        r /= OW;
        IT oh = r % OH;
        r /= OH;
        IT kw = r % KW;
        r /= KW;
        IT kh = r % KH;
        r /= KH; /* r = n * C + c */
        IT h = oh * sh - pt + kh * dh, w = ow * sw - pl + kw * dw;
        col[i] = (h >= 0 && h < H && w >= 0 && w < W) ? x[(r * H + h) * W + w] : 0.0f;
    }
}

/* OWB adjacent outputs of one row per thread, each the CPU reference's sum (channels, then kernel
 * rows, then columns, in float from 0), + bias, activation. For convolutions with short
 * reductions (depthwise, small groups), where a GEMM has too little to multiply. Each weight is
 * loaded once for the OWB outputs. Consecutive threads take consecutive row pieces of one
 * filter, so a warp reads the same weights (broadcast) and neighbouring inputs. IT is the index
 * type: int32_t whenever every index fits (64-bit division and remainder cost tens of
 * instructions each, more than the few dozen multiply-adds of a grouped 3x3 output). */
#define OC_CONV_OWB 4
template <typename IT, int OWB>
__global__ void oc_conv_direct_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ w,
                                      const float *__restrict__ bias, IT total, IT C, IT H, IT W, IT F, IT CG, IT FG,
                                      IT KH, IT KW, IT OH, IT OW, IT sh, IT sw, IT dh, IT dw, IT pt, IT pl, int act) {
    const IT OWQ = (OW + OWB - 1) / OWB;
    for (IT i = blockIdx.x * (IT)blockDim.x + threadIdx.x; i < total; i += (IT)gridDim.x * blockDim.x) {
        IT q = i % OWQ, r = i / OWQ, oh = r % OH;
        r /= OH;
        IT f = r % F, n = r / F, g = f / FG;
        const float *xg = x + (n * C + g * CG) * H * W;
        const float *wf = w + f * CG * KH * KW;
        const IT ow0 = q * OWB, h0 = oh * sh - pt, w0 = ow0 * sw - pl;
        float acc[OWB];
#pragma unroll
        for (int j = 0; j < OWB; j++)
            acc[j] = 0.0f;
        for (IT c = 0; c < CG; c++)
            for (IT kh = 0; kh < KH; kh++) {
                IT h = h0 + kh * dh;
                if (h < 0 || h >= H)
                    continue;
                const float *xr = xg + (c * H + h) * W;
                const float *wr = wf + (c * KH + kh) * KW;
                for (IT kw = 0; kw < KW; kw++) {
                    const float wv = __ldg(wr + kw);
#pragma unroll
                    for (int j = 0; j < OWB; j++) {
                        IT ww = w0 + j * sw + kw * dw;
                        if (ww >= 0 && ww < W)
                            acc[j] = __fmaf_rn(wv, __ldg(xr + ww), acc[j]);
                    }
                }
            }
        const float b = bias ? bias[f] : 0.0f;
        float *yr = y + ((n * F + f) * OH + oh) * OW;
#pragma unroll
        for (int j = 0; j < OWB; j++)
            if (ow0 + j < OW)
                yr[ow0 + j] = oc_act(act, bias ? acc[j] + b : acc[j]);
    }
}

typedef enum {
    OC_CONV_CUDNN,
    OC_CONV_GEMM,
    OC_CONV_DIRECT,
    OC_CONV_TC,
    OC_CONV_IG,
    OC_CONV_WG,
    OC_CONV_PATHS
} oc_conv_path;
#define oc_conv_path_names ct_path_names /* the cache file names paths as --verbose does */
static_assert(OC_CONV_PATHS == CT_PATHS, "conv_table.h lists the paths in this order");
static_assert(OC_CONV_TC == 3 && OC_CONV_IG == 4 && OC_CONV_WG == 5, "conv_table.h lists the paths in this order");

/* A configuration's choice: the fastest path and each path's time, the fastest cuDNN algorithm and
 * tile configurations, the fused bias/relu decision (conv_table.h: keyed by the configuration). */
typedef ct_entry oc_conv_choice;

/* Choices of this process: measured here, or read from the per-device cache file (conv_table.h)
 * at the first convolution's setup. Configurations recur within and across graphs and processes. */
static ct_table *oc_conv_cache;
static ct_table *oc_conv_pending; /* choices made since the file was last written (NULL: none) */
static int oc_conv_cache_bad; /* the file could not be read or written: reported once, not written */
static ops_cuda_conv_stats oc_conv_stats;

static int32_t oc_cfg_count(int32_t kind) {
    return kind == CT_TC ? cv3_config_count() : kind == CT_IG ? cf_config_count() : cw_config_count();
}

static const char *oc_cfg_name(int32_t kind, int32_t cfg) {
    return kind == CT_TC ? cv3_config_name(cfg) : kind == CT_IG ? cf_config_name(cfg) : cw_config_name(cfg);
}

static int32_t oc_cfg_find(int32_t kind, const char *name) {
    for (int32_t i = 0; kind >= 0 && kind < CT_KINDS && i < oc_cfg_count(kind); i++)
        if (!strcmp(name, oc_cfg_name(kind, i)))
            return i;
    return -1;
}

static const ct_cfg_names oc_cfg_names = {oc_cfg_find, oc_cfg_name};

/* The file is read and written unless TASC_CONV_CACHE=off, or the paths are launch-timed (an
 * experiment: those times mean something else). */
static int oc_conv_cache_file_on(void) {
    const char *how = getenv("TASC_RT_CONV_TIMING");
    return !ct_cache_off() && !(how && !strcmp(how, "launch"));
}

static void oc_conv_cache_load(const ops_cuda_env *env) {
    if (oc_conv_cache)
        return;
    oc_conv_cache = ct_table_new(&oc_cfg_names);
    char path[4096], err[4400];
    if (!oc_conv_cache_file_on())
        return;
    ct_cache_path(mm_device_key(), path, sizeof path);
    if (ct_table_load(oc_conv_cache, path, 1, err, sizeof err) < 0) {
        fprintf(stderr, "tasc: %s (convolution path cache ignored: paths are measured)\n", err);
        oc_conv_cache_bad = 1;
    } else if (oc_verbose(env)) {
        fprintf(stderr, "tasc: %d convolution path choice%s read from %s\n", (int)ct_table_size(oc_conv_cache),
                ct_table_size(oc_conv_cache) == 1 ? "" : "s", path);
    }
}

/* Records e for this process and for the per-device cache, written once per setup
 * (ops_cuda_conv_cache_flush): a setup that measures many configurations locks and rewrites the
 * file once, not once per choice. */
static void oc_conv_cache_put(const oc_conv_choice *e) {
    ct_table_set(oc_conv_cache, e);
    if (!oc_conv_cache_file_on() || oc_conv_cache_bad)
        return;
    static int at_exit;
    if (!at_exit) /* what a caller outside the runtime's setup leaves pending is written at exit */
        at_exit = atexit(ops_cuda_conv_cache_flush) == 0;
    if (!oc_conv_pending)
        oc_conv_pending = ct_table_new(&oc_cfg_names);
    ct_table_set(oc_conv_pending, e);
}

extern "C" void ops_cuda_conv_cache_flush(void) {
    ct_table *add = oc_conv_pending;
    oc_conv_pending = NULL;
    if (add && ct_table_size(add) > 0 && oc_conv_cache_file_on() && !oc_conv_cache_bad) {
        char path[4096], err[4400];
        if (ct_table_update(ct_cache_path(mm_device_key(), path, sizeof path), add, err, sizeof err) < 0) {
            fprintf(stderr, "tasc: %s (convolution path choices kept for this process only)\n", err);
            oc_conv_cache_bad = 1;
        }
    }
    ct_table_free(add);
}

extern "C" void ops_cuda_conv_stats_take(ops_cuda_conv_stats *st) {
    *st = oc_conv_stats;
    memset(&oc_conv_stats, 0, sizeof oc_conv_stats);
}

extern "C" void ops_cuda_conv_cache_reset(void) {
    ops_cuda_conv_cache_flush();
    ct_table_free(oc_conv_cache);
    oc_conv_cache = NULL;
    oc_conv_cache_bad = 0;
}

extern "C" const char *ops_cuda_conv_cache_path(char *buf, size_t len) {
    if (!oc_conv_cache_file_on() || oc_conv_cache_bad)
        snprintf(buf, len, "%s", "");
    else
        ct_cache_path(mm_device_key(), buf, len);
    return buf;
}

typedef struct {
    oc_conv_path path;
    ops_window win;
    int64_t N, C, H, W, F, CG, FG, G, KH, KW, K, OHW;
    /* cuDNN */
    cudnnTensorDescriptor_t x, y, b;    /* x (N,C,HP,WP) as the convolution reads it; y (N,F,OH,OW); b (1,F,1,1) */
    cudnnFilterDescriptor_t w;          /* (F, C/groups, KH, KW) */
    cudnnConvolutionDescriptor_t conv;
    cudnnActivationDescriptor_t act;    /* relu or identity, for the fused call */
    cudnnConvolutionFwdAlgo_t algo;
    size_t algo_ws;                     /* workspace bytes the algorithm needs */
    size_t pad_bytes;                   /* > 0: the padded copy of x at the workspace's start */
    int64_t HP, WP;
    int fused;                          /* 1: bias (and relu) inside the convolution call */
    float *zero_bias;                   /* (F) zeros for a fused relu without bias (owned) */
    /* GEMM */
    int gemm_direct_b;                  /* 1x1, stride 1, no padding: x itself is the B matrix */
    size_t col_bytes;                   /* im2col buffer (N, C*KH*KW, OH*OW) otherwise */
    /* 3xtf32 implicit GEMM */
    cv3_plan *tc;                       /* its offset table; NULL where the path is not taken */
    int tc_cfg, tc_split;
    /* FP32 implicit GEMM */
    cf_plan *ig;                        /* likewise */
    int ig_cfg, ig_split;
    /* the wgmma 3xTF32 matmul on gathered, split columns */
    cw_plan *wg;                        /* likewise */
    int wg_cfg, wg_split;
} oc_conv_state;

static void oc_conv_free(void *p) {
    oc_conv_state *st = (oc_conv_state *)p;
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
    cv3_plan_free(st->tc);
    cf_plan_free(st->ig);
    cw_plan_free(st->wg);
    free(st);
}

/* Copy x into the padded buffer at ws (asymmetric padding only). */
static int oc_conv_pad(ops_cuda_env *env, const oc_conv_state *st, const float *x, float *ws) {
    const int64_t total = st->N * st->C * st->HP * st->WP;
    oc_pad_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(ws, x, total, st->H, st->W, st->HP,
                                                                                 st->WP, st->win.pt, st->win.pl);
    OC_LAUNCH_TRY(env);
    return 0;
}

/* cuDNN's convolution (fused: with bias and the activation descriptor) into y; ws holds the
 * padded input first when there is one, then the algorithm's workspace. */
static int oc_conv_run_cudnn(ops_cuda_env *env, oc_conv_state *st, const float *x, const float *w, const float *bias,
                             float *y, char *ws, int fused) {
    const float one = 1.0f, zero = 0.0f;
    if (st->pad_bytes) {
        if (oc_conv_pad(env, st, x, (float *)ws) < 0)
            return -1;
        x = (const float *)ws;
    }
    void *cws = st->algo_ws ? ws + st->pad_bytes : NULL;
    if (fused)
        OC_CUDNN_TRY(env, cudnnConvolutionBiasActivationForward(oc_cudnn(env), &one, st->x, x, st->w, w, st->conv,
                                                                st->algo, cws, st->algo_ws, &zero, st->y, y, st->b,
                                                                bias ? bias : st->zero_bias, st->act, st->y, y));
    else
        OC_CUDNN_TRY(env, cudnnConvolutionForward(oc_cudnn(env), &one, st->x, x, st->w, w, st->conv, st->algo, cws,
                                                  st->algo_ws, &zero, st->y, y));
    return 0;
}

/* im2col (unless x is already the B matrix) and the hand-written matmul: per image and group,
 * y_g (F/G, OH*OW) = w_g (F/G, K) x col_g (K, OH*OW); act goes into the matmul's epilogue. */
static int oc_conv_run_gemm(ops_cuda_env *env, oc_conv_state *st, const float *x, const float *w, float *y, float *col,
                            ops_act act) {
    const cudaStream_t str = oc_stream(env);
    const ops_window *win = &st->win;
    const float *b = x;
    if (!st->gemm_direct_b) {
        const int64_t total = st->N * st->C * st->KH * st->KW * st->OHW;
        const int64_t oh = win->oh, ow = win->ow;
        if (total < INT32_MAX && st->N * st->C * st->H * st->W < INT32_MAX)
            oc_im2col_kernel<int32_t><<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, str>>>(
                col, x, (int32_t)total, (int32_t)st->C, (int32_t)st->H, (int32_t)st->W, (int32_t)st->KH,
                (int32_t)st->KW, (int32_t)oh, (int32_t)ow, (int32_t)win->sh, (int32_t)win->sw, (int32_t)win->dh,
                (int32_t)win->dw, (int32_t)win->pt, (int32_t)win->pl);
        else
            oc_im2col_kernel<int64_t><<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, str>>>(
                col, x, total, st->C, st->H, st->W, st->KH, st->KW, oh, ow, win->sh, win->sw, win->dh, win->dw,
                win->pt, win->pl);
        OC_LAUNCH_TRY(env);
        b = col;
    }
    mm_problem p;
    char msg[256];
    mm_problem_init(&p, st->FG, st->OHW, st->K, 1);
    const int mact = oc_mm_act(act);
    p.act = mact < 0 ? MM_ACT_NONE : (mm_act)mact;
    if (st->G == 1) { /* every image against the one weight matrix */
        p.batch = st->N;
        p.stride_a = 0;
        p.stride_b = st->K * st->OHW;
        p.stride_c = st->F * st->OHW;
        if (mm_run(&p, w, b, NULL, y, str, msg, sizeof msg) < 0)
            return oc_fail(env, "%s", msg);
        return 0;
    }
    p.batch = st->G; /* the groups of one image */
    p.stride_a = st->FG * st->K;
    p.stride_b = st->K * st->OHW;
    p.stride_c = st->FG * st->OHW;
    for (int64_t n = 0; n < st->N; n++)
        if (mm_run(&p, w, b + n * st->G * st->K * st->OHW, NULL, y + n * st->F * st->OHW, str, msg, sizeof msg) < 0)
            return oc_fail(env, "%s", msg);
    return 0;
}

/* An implicit GEMM -- path OC_CONV_TC (3xtf32, conv_3xtf32.cu), OC_CONV_IG (FP32, conv_fp32.cu) or
 * OC_CONV_WG (wgmma, conv_wgmma.h) -- at the node's chosen configuration and split, with bias, add
 * and act (an ops_act the matmul epilogue has) in its epilogue. */
static int oc_conv_run_implicit(ops_cuda_env *env, const oc_conv_state *st, oc_conv_path path, const float *x,
                                const float *w, const float *bias, const float *add, float *y, ops_act act,
                                float *ws) {
    const int mact = oc_mm_act(act), ea = mact < 0 ? MM_ACT_NONE : mact;
    const cudaStream_t str = oc_stream(env);
    char msg[256];
    if (path == OC_CONV_TC)
        cv3_run(st->tc, st->tc_cfg, st->tc_split, x, w, bias, add, y, ea, ws, str);
    else if (path == OC_CONV_IG)
        cf_run(st->ig, st->ig_cfg, st->ig_split, x, w, bias, add, y, ea, ws, str);
    else if (cw_run(st->wg, st->wg_cfg, st->wg_split, x, w, bias, add, y, ea, ws, str, msg, sizeof msg) < 0)
        return oc_fail(env, "%s", msg);
    OC_LAUNCH_TRY(env);
    return 0;
}

static int oc_conv_run_direct(ops_cuda_env *env, const oc_conv_state *st, const float *x, const float *w,
                              const float *bias, float *y, ops_act act) {
    const ops_window *v = &st->win;
    /* OC_CONV_OWB outputs per thread where rows have that many, else one */
    const int row = v->ow >= OC_CONV_OWB;
    const int64_t total = st->N * st->F * v->oh * (row ? (v->ow + OC_CONV_OWB - 1) / OC_CONV_OWB : v->ow);
    /* int32 indices where every offset the kernel forms fits: the output, input and weight sizes
     * bound them (the grid-stride step adds at most one grid to an index below total) */
    const int64_t grid = (int64_t)oc_blocks(total, OC_THREADS) * OC_THREADS;
    const int small = oc_fits_int(total + grid) && oc_fits_int(st->N * st->F * st->OHW) &&
                      oc_fits_int(st->N * st->C * st->H * st->W) && oc_fits_int(st->F * st->CG * st->KH * st->KW) &&
                      oc_fits_int(v->oh * v->sh + st->KH * v->dh) &&
                      oc_fits_int((v->ow + OC_CONV_OWB) * v->sw + st->KW * v->dw);
#define OC_CONV_DIRECT_ARGS(IT)                                                                                       \
    y, x, w, bias, (IT)total, (IT)st->C, (IT)st->H, (IT)st->W, (IT)st->F, (IT)st->CG, (IT)st->FG, (IT)st->KH,       \
        (IT)st->KW, (IT)v->oh, (IT)v->ow, (IT)v->sh, (IT)v->sw, (IT)v->dh, (IT)v->dw, (IT)v->pt, (IT)v->pl, (int)act
    const unsigned blocks = oc_blocks(total, OC_THREADS);
    cudaStream_t str = oc_stream(env);
    if (row && small)
        oc_conv_direct_kernel<int32_t, OC_CONV_OWB><<<blocks, OC_THREADS, 0, str>>>(OC_CONV_DIRECT_ARGS(int32_t));
    else if (row)
        oc_conv_direct_kernel<int64_t, OC_CONV_OWB><<<blocks, OC_THREADS, 0, str>>>(OC_CONV_DIRECT_ARGS(int64_t));
    else if (small)
        oc_conv_direct_kernel<int32_t, 1><<<blocks, OC_THREADS, 0, str>>>(OC_CONV_DIRECT_ARGS(int32_t));
    else
        oc_conv_direct_kernel<int64_t, 1><<<blocks, OC_THREADS, 0, str>>>(OC_CONV_DIRECT_ARGS(int64_t));
#undef OC_CONV_DIRECT_ARGS
    OC_LAUNCH_TRY(env);
    return 0;
}

/* What path leaves to the separate pass without a fused add: *mm_act is the activation the path's
 * own epilogue applies (the matmul's, without bias; the implicit GEMMs' (3xtf32, igemm) and
 * wgmma's, with bias: the activations of oc_mm_act); 1 if the pass follows. */
static int oc_conv_post_for(oc_conv_path path, int has_bias, ops_act act, ops_act *mm_act) {
    const int tc = path == OC_CONV_TC || path == OC_CONV_IG || path == OC_CONV_WG,
              mm_has = act != OPS_ACT_NONE && oc_mm_act(act) > 0;
    *mm_act = ((path == OC_CONV_GEMM && !has_bias) || tc) && mm_has ? act : OPS_ACT_NONE;
    return path != OC_CONV_DIRECT && ((has_bias && !tc) || (act != OPS_ACT_NONE && *mm_act == OPS_ACT_NONE));
}

/* What a run of path does: the activation its kernel applies, then whether one pass follows and
 * what it applies (bias, added tensor, activation, in that order). */
typedef struct {
    ops_act kact;
    int post;
    const float *pbias, *padd;
    ops_act pact;
} oc_conv_plan;

/* The plan of path for the node as it runs: with the runtime's residual fusion (add, act: the
 * fused activation; the node's own is none) y = act(conv + bias + add): the implicit GEMMs
 * (3xtf32, igemm) and wgmma add in their epilogue and apply the activations the matmul epilogue has, every
 * other path leaves bias (direct: not), the add and the activation to one pass. Without: the
 * node's epilogue, the pass as oc_conv_post_for says. cudnn_fused: cuDNN's call applies bias and
 * relu itself. */
static oc_conv_plan oc_conv_plan_of(oc_conv_path path, const float *bias, const float *add, ops_act act,
                                    int cudnn_fused) {
    oc_conv_plan q = {OPS_ACT_NONE, 1, NULL, add, act};
    const int ig = path == OC_CONV_TC || path == OC_CONV_IG || path == OC_CONV_WG;
    if (add) {
        const int mm_has = oc_mm_act(act) >= 0;
        if (ig) {
            q.kact = mm_has ? act : OPS_ACT_NONE;
            q.post = !mm_has;
            q.padd = NULL;
        } else {
            q.pbias = path == OC_CONV_DIRECT ? NULL : bias;
        }
        return q;
    }
    ops_act mact;
    q.post = oc_conv_post_for(path, bias != NULL, act, &mact) && !(path == OC_CONV_CUDNN && cudnn_fused);
    q.kact = path == OC_CONV_DIRECT ? act : mact;
    q.pbias = ig || path == OC_CONV_DIRECT ? NULL : bias;
    q.pact = mact == OPS_ACT_NONE ? act : OPS_ACT_NONE;
    return q;
}

/* One run of path on the node's buffers, ws its workspace (the path's need), as the node runs
 * (oc_conv_plan_of; the residual fusion from env->fuse_add). */
static int oc_conv_run_path(ops_cuda_env *env, oc_conv_state *st, oc_conv_path path, int cudnn_fused,
                            const ops_sig *s, const float *const *in, float *const *out, void *ws) {
    const float *bias = s->n_in > 2 ? in[2] : NULL, *add = env->fuse_add;
    const ops_act act = add ? (ops_act)env->fuse_act : (ops_act)s->p->v[PM_ACT];
    const oc_conv_plan q = oc_conv_plan_of(path, bias, add, act, cudnn_fused);
    int bad;
    switch (path) {
    case OC_CONV_TC:
    case OC_CONV_IG:
    case OC_CONV_WG:
        bad = oc_conv_run_implicit(env, st, path, in[0], in[1], bias, add, out[0], q.kact, (float *)ws) < 0;
        break;
    case OC_CONV_DIRECT:
        bad = oc_conv_run_direct(env, st, in[0], in[1], bias, out[0], q.kact) < 0;
        break;
    case OC_CONV_GEMM:
        bad = oc_conv_run_gemm(env, st, in[0], in[1], out[0], (float *)ws, q.kact) < 0;
        break;
    default:
        bad = oc_conv_run_cudnn(env, st, in[0], in[1], bias, out[0], (char *)ws, cudnn_fused && !add) < 0;
        break;
    }
    if (bad)
        return -1;
    if (q.post) {
        const ops_shape *ys = &s->out[0];
        OC_CUDA_TRY(env, oc_launch_bias_act(out[0], q.pbias, q.padd, ops_shape_numel(ys), ys->dims[1], st->OHW,
                                            q.pact, oc_stream(env)));
    }
    return 0;
}

/* The workspace path needs on the node. */
static size_t oc_conv_ws_need(const oc_conv_state *st, oc_conv_path path) {
    switch (path) {
    case OC_CONV_TC:
        return cv3_workspace_bytes(st->tc, st->tc_split);
    case OC_CONV_IG:
        return cf_workspace_bytes(st->ig, st->ig_split);
    case OC_CONV_WG:
        return cw_workspace_bytes(st->wg);
    case OC_CONV_GEMM:
        return st->gemm_direct_b ? 0 : st->col_bytes;
    case OC_CONV_DIRECT:
        return 0;
    default:
        return st->pad_bytes + st->algo_ws;
    }
}

/* The node's convolution on its chosen path, with its epilogue. */
static int oc_conv_exec(ops_cuda_env *env, oc_conv_state *st, const ops_sig *s, const float *const *in, float *const *out) {
    void *ws = NULL;
    if (oc_workspace(env, oc_conv_ws_need(st, st->path), &ws) < 0)
        return -1;
    return oc_conv_run_path(env, st, st->path, st->fused, s, in, out, ws);
}

/* Runs of path timed (ms each, median of n <= 5 after one warm-up); INFINITY if a run fails.
 * graph: reps back-to-back runs captured into one CUDA graph and replayed, as the model's graph
 * replays them; else each run launched between two events (the host's launch cost inside). */
static float oc_conv_time_runs(ops_cuda_env *env, oc_conv_state *st, oc_conv_path path, const ops_sig *s,
                               const float *const *in, float *const *out, char *ws, int graph, int reps, int n) {
    cudaStream_t sm = oc_stream(env);
    cudaGraphExec_t ge = NULL;
    if (graph) {
        cudaGraph_t gr = NULL;
        int bad = cudaStreamBeginCapture(sm, cudaStreamCaptureModeRelaxed) != cudaSuccess;
        for (int r = 0; r < reps && !bad; r++)
            bad = oc_conv_run_path(env, st, path, st->fused, s, in, out, ws) < 0;
        bad = cudaStreamEndCapture(sm, &gr) != cudaSuccess || bad;
        if (bad || cudaGraphInstantiate(&ge, gr, 0) != cudaSuccess)
            ge = NULL;
        if (gr)
            CUDA_CHECK(cudaGraphDestroy(gr));
        if (!ge) {
            (void)cudaGetLastError();
            return INFINITY;
        }
    }
    cudaEvent_t e0, e1;
    float ms[5];
    n = n < 1 ? 1 : n > 5 ? 5 : n;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    int bad = 0;
    for (int r = -1; r < n && !bad; r++) {
        CUDA_CHECK(cudaEventRecord(e0, sm));
        if (ge)
            CUDA_CHECK(cudaGraphLaunch(ge, sm));
        else
            bad = oc_conv_run_path(env, st, path, st->fused, s, in, out, ws) < 0;
        CUDA_CHECK(cudaEventRecord(e1, sm));
        CUDA_CHECK(cudaEventSynchronize(e1));
        if (r >= 0)
            CUDA_CHECK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    if (ge)
        CUDA_CHECK(cudaGraphExecDestroy(ge));
    if (bad) {
        (void)cudaGetLastError();
        return INFINITY;
    }
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            float t = ms[j];
            ms[j] = ms[j - 1];
            ms[j - 1] = t;
        }
    return ms[n / 2] / (float)reps;
}

/* Device time of one run of path on the node's buffers as the node runs it, with the pass it
 * leaves over and the fused add (ms); INFINITY if it fails. ws: the whole search workspace. cuDNN
 * is timed as st->fused says: unfused while paths are chosen (its fused bias/relu is tried, and
 * timed, once the path is chosen: oc_conv_try_fused). Timed as the model
 * runs: inside a CUDA graph, back to back (10 runs per replay when a run is short, so the graph's
 * own launch is spread). Timing each run between events on the stream instead counts the host's
 * launch of every kernel: at batch 1, where a run takes 2-15 us, that overhead decided between
 * paths (a two-kernel path paid it twice) and the path chosen was up to 2 us slower in the graph.
 * The runs launched one by one first (warm-up: workspaces grown, kernel attributes set, outside
 * any capture) also stand in where a path cannot be captured. */
static float oc_conv_time(ops_cuda_env *env, oc_conv_state *st, oc_conv_path path, const ops_sig *s,
                          const float *const *in, float *const *out, char *ws) {
    const float launched = oc_conv_time_runs(env, st, path, s, in, out, ws, 0, 1, 1);
    if (!isfinite(launched))
        return INFINITY;
    const char *how = getenv("TASC_RT_CONV_TIMING"); /* experiments: "launch", the timing before graphs */
    if (how && !strcmp(how, "launch"))
        return oc_conv_time_runs(env, st, path, s, in, out, ws, 0, 1, 5);
    const int reps = launched < 0.05f ? 10 : 1;
    const float graphed = oc_conv_time_runs(env, st, path, s, in, out, ws, 1, reps, 5);
    return isfinite(graphed) ? graphed : oc_conv_time_runs(env, st, path, s, in, out, ws, 0, 1, 5);
}

/* The implicit GEMMs' plan (st->tc for 3xtf32, st->ig for igemm; st->wg for wgmma) for the node's
 * shape (groups 1); a reason on env where the kernel cannot take it. */
static int oc_conv_ig_plan(ops_cuda_env *env, oc_conv_state *st, oc_conv_path path) {
    const ops_window *v = &st->win;
    const cv3_shape cs = {st->N, st->C, st->H, st->W, st->F, st->KH, st->KW, v->oh, v->ow,
                          v->sh, v->sw, v->dh, v->dw, v->pt, v->pl};
    char msg[256];
    if (path == OC_CONV_TC) {
        st->tc = cv3_plan_new(&cs, msg, sizeof msg);
        return st->tc ? 0 : oc_fail(env, "%s", msg);
    }
    if (path == OC_CONV_WG) {
        st->wg = cw_plan_new(&cs, msg, sizeof msg);
        return st->wg ? 0 : oc_fail(env, "%s", msg);
    }
    st->ig = cf_plan_new(&cs, msg, sizeof msg);
    return st->ig ? 0 : oc_fail(env, "%s", msg);
}

/* The implicit GEMMs' tile configurations alike: count, names, split-K counts worth timing, the
 * workspace of a split. */
static int oc_ig_count(oc_conv_path path) { return path == OC_CONV_TC ? cv3_config_count() : cf_config_count(); }

static const char *oc_ig_name(oc_conv_path path, int c) {
    return path == OC_CONV_TC ? cv3_config_name(c) : cf_config_name(c);
}

static int oc_ig_splits(const oc_conv_state *st, oc_conv_path path, int c, int *splits, int max) {
    return path == OC_CONV_TC ? cv3_split_candidates(st->tc, c, splits, max)
                              : cf_split_candidates(st->ig, c, splits, max);
}

static size_t oc_ig_ws(const oc_conv_state *st, oc_conv_path path, int split) {
    return path == OC_CONV_TC ? cv3_workspace_bytes(st->tc, split) : cf_workspace_bytes(st->ig, split);
}

/* An implicit-GEMM path, groups 1 (3xtf32: at precision 3xtf32 only; igemm, strict FP32: at
 * both): every tile configuration timed with each split-K worth trying that fits the search
 * workspace (ws, wbytes), the fastest into ch (ms, and tc_cfg, tc_split or ig_cfg, ig_split); the
 * path stays ineligible (INFINITY) where it cannot run. */
static void oc_conv_time_ig(ops_cuda_env *env, oc_conv_state *st, oc_conv_path path, const ops_sig *s,
                            const float *const *in, float *const *out, oc_conv_choice *ch, char *ws, size_t wbytes) {
    const int tc = path == OC_CONV_TC;
    if (st->G != 1 || (tc && mm_precision_get() != MM_PREC_3XTF32))
        return;
    if ((tc ? st->tc == NULL : st->ig == NULL) && oc_conv_ig_plan(env, st, path) < 0) {
        if (oc_verbose(env))
            fprintf(stderr, "tasc: node '%s': no %s path: %s\n", oc_node_name(env), oc_conv_path_names[path], env->err);
        return;
    }
    int *cfg = tc ? &st->tc_cfg : &st->ig_cfg, *split = tc ? &st->tc_split : &st->ig_split;
    int *best_cfg = tc ? &ch->cfg[CT_TC] : &ch->cfg[CT_IG], *best_split = tc ? &ch->split[CT_TC] : &ch->split[CT_IG];
    char line[1024] = "";
    size_t at = 0;
    for (int c = 0; c < oc_ig_count(path); c++) {
        int splits[5];
        const int ns = oc_ig_splits(st, path, c, splits, 5);
        for (int i = 0; i < ns; i++) {
            if (oc_ig_ws(st, path, splits[i]) > wbytes)
                continue;
            *cfg = c;
            *split = splits[i];
            const float ms = oc_conv_time(env, st, path, s, in, out, ws);
            if (ms < ch->ms[path]) {
                ch->ms[path] = ms;
                *best_cfg = c;
                *best_split = splits[i];
            }
            if (at < sizeof line)
                at += (size_t)snprintf(line + at, sizeof line - at, "%s %s/%d %.4f ms", at ? "," : "",
                                       oc_ig_name(path, c), splits[i], (double)ms);
        }
    }
    if (oc_verbose(env))
        fprintf(stderr, "tasc: node '%s': %s tiles:%s\n", oc_node_name(env), oc_conv_path_names[path], line);
}

/* The wgmma path (precision 3xtf32, groups 1, where its plan can be had: conv_wgmma.h): each
 * configuration with each split worth trying, when its workspace fits the search workspace (ws,
 * wbytes); the fastest into ch (ms, wg_cfg, wg_split). */
static void oc_conv_time_wg(ops_cuda_env *env, oc_conv_state *st, const ops_sig *s, const float *const *in,
                            float *const *out, oc_conv_choice *ch, char *ws, size_t wbytes) {
    if (st->G != 1 || mm_precision_get() != MM_PREC_3XTF32 || !mm_3xtf32_wgmma_available())
        return;
    if (!st->wg && oc_conv_ig_plan(env, st, OC_CONV_WG) < 0) {
        if (oc_verbose(env))
            fprintf(stderr, "tasc: node '%s': no wgmma path: %s\n", oc_node_name(env), env->err);
        return;
    }
    if (cw_workspace_bytes(st->wg) > wbytes)
        return;
    char line[1024] = "";
    size_t at = 0;
    for (int c = 0; c < cw_config_count(); c++) {
        int splits[5];
        const int ns = cw_split_candidates(st->wg, c, splits, 5);
        for (int i = 0; i < ns; i++) {
            st->wg_cfg = c;
            st->wg_split = splits[i];
            const float ms = oc_conv_time(env, st, OC_CONV_WG, s, in, out, ws);
            if (ms < ch->ms[OC_CONV_WG]) {
                ch->ms[OC_CONV_WG] = ms;
                ch->cfg[CT_WG] = c;
                ch->split[CT_WG] = splits[i];
            }
            if (at < sizeof line)
                at += (size_t)snprintf(line + at, sizeof line - at, "%s %s/%d %.4f ms", at ? "," : "",
                                       cw_config_name(c), splits[i], (double)ms);
        }
    }
    if (oc_verbose(env))
        fprintf(stderr, "tasc: node '%s': wgmma tiles:%s\n", oc_node_name(env), line);
}

/* cuDNN's descriptors of the node (x as the convolution reads it: padded when asymmetric); 1 if
 * cuDNN takes the configuration (every size in an int, its output shape ours), else 0. */
static int oc_conv_descriptors(oc_conv_state *st, const ops_sig *s, int sym) {
    const ops_window *win = &st->win;
    const ops_shape *ys = &s->out[0];
    const int64_t ph = sym ? win->pt : 0, pw = sym ? win->pl : 0;
    const int64_t dims[] = {st->N, st->C, st->HP, st->WP, st->F, st->CG, st->KH, st->KW, win->sh, win->sw, win->dh,
                            win->dw, ph, pw, st->G, ys->dims[2], ys->dims[3]};
    int cudnn_ok = 1;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        cudnn_ok = cudnn_ok && oc_fits_int(dims[i]);
    if (cudnn_ok) {
        CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->x));
        CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->y));
        CUDNN_CHECK(cudnnCreateTensorDescriptor(&st->b));
        CUDNN_CHECK(cudnnCreateFilterDescriptor(&st->w));
        CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&st->conv));
        CUDNN_CHECK(cudnnCreateActivationDescriptor(&st->act));
        CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)st->N, (int)st->C,
                                               (int)st->HP, (int)st->WP));
        CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)st->N, (int)st->F,
                                               (int)ys->dims[2], (int)ys->dims[3]));
        CUDNN_CHECK(cudnnSetTensor4dDescriptor(st->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, (int)st->F, 1, 1));
        CUDNN_CHECK(cudnnSetFilter4dDescriptor(st->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)st->F, (int)st->CG,
                                               (int)st->KH, (int)st->KW));
        int on = 0, oc = 0, oh = 0, ow = 0;
        cudnn_ok = cudnnSetConvolution2dDescriptor(st->conv, (int)ph, (int)pw, (int)win->sh, (int)win->sw,
                                                   (int)win->dh, (int)win->dw, CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS &&
                   cudnnSetConvolutionGroupCount(st->conv, (int)st->G) == CUDNN_STATUS_SUCCESS &&
                   cudnnSetConvolutionMathType(st->conv, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS &&
                   cudnnGetConvolution2dForwardOutputDim(st->conv, st->x, st->w, &on, &oc, &oh, &ow) ==
                       CUDNN_STATUS_SUCCESS &&
                   on == st->N && oc == st->F && oh == ys->dims[2] && ow == ys->dims[3];
    }
    return cudnn_ok;
}

/* An algorithm Find ran, in strict FP32 (no tensor-op math). */
static bool oc_cudnn_strict(const cudnnConvolutionFwdAlgoPerf_t *p) {
    return p->status == CUDNN_STATUS_SUCCESS && p->mathType != CUDNN_TENSOR_OP_MATH &&
           p->mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* cuDNN's strict-FP32 algorithms for the node by cudnnFindConvolutionForwardAlgorithmEx in the
 * search workspace (sws, sbytes; the padded input at its start when there is one), those close to
 * the fastest timed as the other paths are; the fastest into ch (ms, algo, ws). -1 with env's error if the padding
 * copy fails. */
static int oc_conv_time_cudnn(ops_cuda_env *env, oc_conv_state *st, const ops_sig *s, const float *const *in,
                              float *const *out, char *sws, size_t sbytes, oc_conv_choice *ch) {
    const float *x = in[0];
    if (st->pad_bytes) {
        if (oc_conv_pad(env, st, in[0], (float *)sws) < 0)
            return -1;
        x = (const float *)sws;
    }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    if (cudnnFindConvolutionForwardAlgorithmEx(oc_cudnn(env), st->x, x, st->w, in[1], st->conv, st->y, out[0],
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf,
                                               sws + st->pad_bytes,
                                               sbytes - st->pad_bytes) != CUDNN_STATUS_SUCCESS)
        got = 0;
    /* Find times each algorithm once: its order between close algorithms changed from one
     * machine to the next (winograd_nonfused 0.19 ms first on one H100, fft at 0.70 ms on
     * another) and from one run to the next (squeezenet's 1x32x27x27 3x3: 15.5 us first in one
     * run, 12.6 us in the next, when only its first three were timed). Every strict-FP32 one it
     * returns within twice its fastest's time plus 20 us (Find's times, the host's launch
     * inside) is timed here as the other paths are; the far slower ones are left out, as timing
     * each 6 times more made nasnet_a's setup (depthwise and separable convolutions, where
     * cuDNN's GEMM and FFT algorithms take milliseconds) run past 120 s. */
    float find_best = INFINITY;
    for (int i = 0; i < got; i++)
        if (oc_cudnn_strict(&perf[i]) && perf[i].time < find_best)
            find_best = perf[i].time;
    for (int i = 0; i < got; i++) {
        if (!oc_cudnn_strict(&perf[i]) || !(perf[i].time <= 2.0f * find_best + 0.02f))
            continue;
        st->algo = perf[i].algo;
        st->algo_ws = perf[i].memory;
        const float ms = oc_conv_time(env, st, OC_CONV_CUDNN, s, in, out, sws);
        if (ms < ch->ms[OC_CONV_CUDNN]) {
            ch->ms[OC_CONV_CUDNN] = ms;
            ch->algo = (int32_t)perf[i].algo;
            ch->algo_ws = (int64_t)perf[i].memory;
        }
    }
    st->algo = (cudnnConvolutionFwdAlgo_t)ch->algo;
    st->algo_ws = (size_t)ch->algo_ws;
    return 0;
}

/* Every path that can run the node timed on its buffers in the search workspace, the fastest
 * into ch->path (the direct kernel, which needs nothing, when none ran). */
static int oc_conv_measure(ops_cuda_env *env, oc_conv_state *st, const ops_sig *s, const float *const *in,
                           float *const *out, int cudnn_ok, oc_conv_choice *ch) {
    for (int p = 0; p < OC_CONV_PATHS; p++)
        ch->ms[p] = INFINITY;
    void *sws_v = NULL;
    size_t sbytes = 0;
    if (oc_workspace_search(env, &sws_v, &sbytes) < 0)
        return -1;
    char *sws = (char *)sws_v;
    if (cudnn_ok && st->pad_bytes < sbytes && oc_conv_time_cudnn(env, st, s, in, out, sws, sbytes, ch) < 0)
        return -1;
    if (st->col_bytes <= sbytes)
        ch->ms[OC_CONV_GEMM] = oc_conv_time(env, st, OC_CONV_GEMM, s, in, out, sws);
    if (st->K <= 1024)
        ch->ms[OC_CONV_DIRECT] = oc_conv_time(env, st, OC_CONV_DIRECT, s, in, out, sws);
    oc_conv_time_ig(env, st, OC_CONV_TC, s, in, out, ch, sws, sbytes);
    oc_conv_time_ig(env, st, OC_CONV_IG, s, in, out, ch, sws, sbytes);
    oc_conv_time_wg(env, st, s, in, out, ch, sws, sbytes);
    ch->path = OC_CONV_DIRECT;
    float best = INFINITY;
    for (int p = 0; p < OC_CONV_PATHS; p++)
        if (ch->ms[p] < best) {
            best = ch->ms[p];
            ch->path = p;
        }
    return 0;
}

/* The node takes choice ch (TASC_RT_CONV may force another path that ran), with the plan of its
 * implicit GEMM if it takes one (no other plan is kept); --verbose prints every path's time. */
static int oc_conv_adopt(ops_cuda_env *env, oc_conv_state *st, const oc_conv_choice *ch, int cached) {
    st->path = (oc_conv_path)ch->path;
    const char *force = getenv("TASC_RT_CONV"); /* tests and experiments: a path, where it can run */
    for (int p = 0; force && p < OC_CONV_PATHS; p++)
        if (!strcmp(force, oc_conv_path_names[p]) && isfinite(ch->ms[p]))
            st->path = (oc_conv_path)p;
    st->algo = (cudnnConvolutionFwdAlgo_t)ch->algo;
    st->algo_ws = (size_t)ch->algo_ws;
    st->tc_cfg = ch->cfg[CT_TC];
    st->tc_split = ch->split[CT_TC];
    st->ig_cfg = ch->cfg[CT_IG];
    st->ig_split = ch->split[CT_IG];
    st->wg_cfg = ch->cfg[CT_WG];
    st->wg_split = ch->split[CT_WG];
    if (st->path != OC_CONV_WG) {
        cw_plan_free(st->wg);
        st->wg = NULL;
    }
    if (st->path != OC_CONV_TC) { /* a plan serves the chosen path only */
        cv3_plan_free(st->tc);
        st->tc = NULL;
    }
    if (st->path != OC_CONV_IG) {
        cf_plan_free(st->ig);
        st->ig = NULL;
    }
    if (((st->path == OC_CONV_TC && !st->tc) || (st->path == OC_CONV_IG && !st->ig) ||
         (st->path == OC_CONV_WG && !st->wg)) &&
        oc_conv_ig_plan(env, st, st->path) < 0)
        return -1;
    const ops_window *win = &st->win;
    if (oc_verbose(env))
        fprintf(stderr, "tasc: node '%s': conv %lldx%lldx%lldx%lld * %lldx%lldx%lldx%lld /%lld g%lld: %s "
                        "(cudnn %s %.4f ms, gemm %.4f ms, direct %.4f ms, 3xtf32 %s/%d %.4f ms, "
                        "igemm %s/%d %.4f ms, wgmma %s/%d %.4f ms)%s\n",
                oc_node_name(env), (long long)st->N, (long long)st->C, (long long)st->H, (long long)st->W,
                (long long)st->F, (long long)st->CG, (long long)st->KH, (long long)st->KW, (long long)win->sh,
                (long long)st->G, oc_conv_path_names[ch->path], ct_algo_name(ch->algo), (double)ch->ms[OC_CONV_CUDNN],
                (double)ch->ms[OC_CONV_GEMM], (double)ch->ms[OC_CONV_DIRECT], cv3_config_name(ch->cfg[CT_TC]),
                ch->split[CT_TC], (double)ch->ms[OC_CONV_TC], cf_config_name(ch->cfg[CT_IG]), ch->split[CT_IG],
                (double)ch->ms[OC_CONV_IG], cw_config_name(ch->cfg[CT_WG]), ch->split[CT_WG], (double)ch->ms[OC_CONV_WG],
                cached ? " (cached)" : "");
    return 0;
}

/* Shapes, cuDNN descriptors, and the path into ch: measured for a configuration neither this
 * process nor the per-device cache has seen (and then cached), else the choice made then. */
static int oc_conv_setup(ops_cuda_env *env, oc_conv_state *st, const ops_sig *s, const float *const *in,
                         float *const *out, oc_conv_choice *ch) {
    const ops_shape *xs = &s->in[0], *ws_ = &s->in[1], *ys = &s->out[0];
    ops_window *win = &st->win;
    char msg[256];
    if (ops_window2d(OP_CONV2D, s->p, xs, ws_, win, msg, sizeof msg) < 0)
        return oc_fail(env, "%s", msg);
    st->N = xs->dims[0];
    st->C = xs->dims[1];
    st->H = xs->dims[2];
    st->W = xs->dims[3];
    st->F = ws_->dims[0];
    st->CG = ws_->dims[1];
    st->KH = ws_->dims[2];
    st->KW = ws_->dims[3];
    st->G = s->p->v[PM_GROUPS];
    st->FG = st->F / st->G;
    st->K = st->CG * st->KH * st->KW;
    st->OHW = ys->dims[2] * ys->dims[3];
    const int sym = win->pt == win->pb && win->pl == win->pr;
    st->HP = sym ? st->H : st->H + win->pt + win->pb;
    st->WP = sym ? st->W : st->W + win->pl + win->pr;
    st->pad_bytes = sym ? 0 : oc_up((size_t)(st->N * st->C * st->HP * st->WP) * sizeof(float));
    st->gemm_direct_b = st->KH == 1 && st->KW == 1 && win->sh == 1 && win->sw == 1 && win->pt == 0 && win->pl == 0 &&
                        win->pb == 0 && win->pr == 0;
    st->col_bytes = st->gemm_direct_b ? 0 : oc_up((size_t)(st->N * st->C * st->KH * st->KW * st->OHW) * sizeof(float));
    const int cudnn_ok = oc_conv_descriptors(st, s, sym);

    oc_conv_cache_load(env);
    const int64_t key[CT_KEY_LEN] = {st->N,   st->C,   st->H,   st->W,   st->F,   st->CG,  st->KH,
                                     st->KW,  win->sh, win->sw, win->dh, win->dw, win->pt, win->pl,
                                     win->pb, win->pr, (int64_t)oc_workspace_limit(env), (int64_t)mm_precision_get(),
                                     env->fuse_add ? 1 + (int64_t)env->fuse_act : 0, s->n_in > 2, s->p->v[PM_ACT]};
    int known = ct_table_get(oc_conv_cache, mm_device_key(), (int32_t)cudnnGetVersion(), key, ch);
    if (known && oc_conv_adopt(env, st, ch, 1) < 0) { /* a hand-edited file, or a broken environment */
        fprintf(stderr, "tasc: node '%s': the cached convolution path %s cannot run (%s); measuring the paths\n",
                oc_node_name(env), oc_conv_path_names[ch->path], env->err);
        known = 0;
    }
    if (known) {
        oc_conv_stats.reused++;
    } else {
        const double t0 = base_now();
        memset(ch, 0, sizeof *ch);
        snprintf(ch->device, sizeof ch->device, "%s", mm_device_key());
        ch->cudnn = (int32_t)cudnnGetVersion();
        memcpy(ch->key, key, sizeof key);
        ch->fused = -1;
        if (oc_conv_measure(env, st, s, in, out, cudnn_ok, ch) < 0)
            return -1;
        oc_conv_stats.measured++;
        oc_conv_stats.measure_s += base_now() - t0;
        oc_conv_cache_put(ch);
        if (oc_conv_adopt(env, st, ch, 0) < 0)
            return -1;
    }
    void *ws = NULL;
    return oc_workspace(env, oc_conv_ws_need(st, st->path), &ws);
}

/* Host-side relative L2 difference of two device buffers of n floats (setup only); a
 * non-finite value on one side only, or NaN anywhere, counts as a mismatch (returns INFINITY). */
static double oc_dev_diff(ops_cuda_env *env, const float *a, const float *b, int64_t n) {
    const size_t bytes = (size_t)n * sizeof(float);
    float *h = (float *)malloc(2 * bytes + 1);
    if (!h)
        return INFINITY;
    CUDA_CHECK(cudaMemcpyAsync(h, a, bytes, cudaMemcpyDeviceToHost, oc_stream(env)));
    CUDA_CHECK(cudaMemcpyAsync(h + n, b, bytes, cudaMemcpyDeviceToHost, oc_stream(env)));
    CUDA_CHECK(cudaStreamSynchronize(oc_stream(env)));
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

/* cuDNN's path: bias (and relu) inside cuDNN's call (cudnnConvolutionBiasActivationForward),
 * kept only if it gives the unfused result (out[0] on entry) and is not slower than the call plus
 * our bias/activation pass (ch->ms: the call and the pass, timed when the path was chosen), both
 * timed as oc_conv_time times paths. The fused call was kept on its result alone until session 12:
 * for resnext50's grouped 3x3 convolutions (1x128x56x56, groups 32) it ran 22.6 us where the call
 * + pass run 12.8 us. A decision made before (ch->fused, from this process or the cache file) is
 * not timed again; the result is still compared. An undecided one is recorded in the cache. */
static int oc_conv_try_fused(ops_cuda_env *env, oc_conv_state *st, const ops_sig *s, const float *const *in,
                             float *const *out, oc_conv_choice *ch) {
    const ops_act act = (ops_act)s->p->v[PM_ACT];
    const int has_bias = s->n_in > 2;
    if (st->path != OC_CONV_CUDNN || env->fuse_add || !(act == OPS_ACT_RELU || (act == OPS_ACT_NONE && has_bias)) ||
        ch->fused == 0)
        return 0;
    void *sws = NULL;
    size_t sbytes = 0;
    if (oc_workspace_search(env, &sws, &sbytes) < 0)
        return -1;
    const int64_t n = ops_shape_numel(&s->out[0]);
    const size_t bytes = (size_t)n * sizeof(float);
    float *ref = NULL;
    CUDA_CHECK(cudaMalloc((void **)&ref, bytes));
    CUDA_CHECK(cudaMemcpyAsync(ref, out[0], bytes, cudaMemcpyDeviceToDevice, oc_stream(env)));
    CUDNN_CHECK(cudnnSetActivationDescriptor(st->act, act == OPS_ACT_RELU ? CUDNN_ACTIVATION_RELU
                                                                          : CUDNN_ACTIVATION_IDENTITY,
                                             CUDNN_PROPAGATE_NAN, 0.0));
    if (!has_bias) {
        const size_t b = (size_t)st->F * sizeof(float);
        CUDA_CHECK(cudaMalloc((void **)&st->zero_bias, b));
        CUDA_CHECK(cudaMemsetAsync(st->zero_bias, 0, b, oc_stream(env)));
    }
    st->fused = 1;
    const int ok = oc_conv_exec(env, st, s, in, out) == 0;
    const double rel = ok ? oc_dev_diff(env, out[0], ref, n) : 0.0;
    const int same = ok && rel <= 1e-5;
    const float unfused_ms = ch->ms[OC_CONV_CUDNN];
    const float fused_ms = same && ch->fused < 0 ? oc_conv_time(env, st, st->path, s, in, out, (char *)sws) : 0.0f;
    const int keep = same && (ch->fused == 1 || fused_ms <= unfused_ms);
    if (!ok && oc_verbose(env))
        fprintf(stderr, "tasc: node '%s': bias/relu not fused (cuDNN: %s)\n", oc_node_name(env), env->err);
    if (ok && !same)
        fprintf(stderr, "tasc: node '%s': cuDNN's fused bias/relu differs from conv + epilogue (rel L2 %.3g); "
                        "not fused\n", oc_node_name(env), rel);
    else if (same && ch->fused < 0 && oc_verbose(env))
        fprintf(stderr, "tasc: node '%s': bias/relu in cuDNN's call %.4f ms, call + pass %.4f ms: %s\n",
                oc_node_name(env), (double)fused_ms, (double)unfused_ms, keep ? "fused" : "not fused");
    else if (same && oc_verbose(env))
        fprintf(stderr, "tasc: node '%s': bias/relu in cuDNN's call (cached)\n", oc_node_name(env));
    if (!keep) {
        (void)cudaGetLastError();
        st->fused = 0;
    }
    if (same && ch->fused < 0) {
        ch->fused = keep;
        oc_conv_cache_put(ch);
    }
    /* the node's value: the reference (the fused result is within 1e-5 of it) */
    CUDA_CHECK(cudaMemcpyAsync(out[0], ref, bytes, cudaMemcpyDeviceToDevice, oc_stream(env)));
    CUDA_CHECK(cudaStreamSynchronize(oc_stream(env)));
    CUDA_CHECK(cudaFree(ref));
    return 0;
}

OPS_CUDA_FN(conv2d) {
    oc_conv_state *st = (oc_conv_state *)oc_node_state(env);
    if (st)
        return oc_conv_exec(env, st, s, in, out);
    if (!oc_setup_phase(env))
        return oc_fail(env, "internal error: no conv2d state after setup");
    st = (oc_conv_state *)calloc(1, sizeof *st);
    if (!st)
        return oc_fail(env, "out of memory");
    oc_node_state_set(env, st, oc_conv_free);
    oc_conv_choice ch;
    if (oc_conv_setup(env, st, s, in, out, &ch) < 0)
        return -1;
    if (oc_conv_exec(env, st, s, in, out) < 0) /* the unfused result, kept as the reference */
        return -1;
    return oc_conv_try_fused(env, st, s, in, out, &ch);
}

/* --- pools ---------------------------------------------------------------------------------- */

typedef struct {
    cudnnTensorDescriptor_t x, y;
    cudnnPoolingDescriptor_t pool;
    int own;                  /* 1: our kernel */
    ops_window win;
} oc_pool_state;

static void oc_pool_free(void *p) {
    oc_pool_state *st = (oc_pool_state *)p;
    if (st->x)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->x));
    if (st->y)
        CUDNN_CHECK(cudnnDestroyTensorDescriptor(st->y));
    if (st->pool)
        CUDNN_CHECK(cudnnDestroyPoolingDescriptor(st->pool));
    free(st);
}

static int oc_pool_own(ops_cuda_env *env, const oc_pool_state *st, const ops_sig *s, const float *x, float *y) {
    const ops_shape *xs = &s->in[0], *ys = &s->out[0];
    const int64_t total = ops_shape_numel(ys);
    if (total <= 0)
        return 0;
    oc_pool_kernel<<<oc_blocks(total, OC_THREADS), OC_THREADS, 0, oc_stream(env)>>>(
        y, x, total, xs->dims[2], xs->dims[3], ys->dims[2], ys->dims[3], st->win, s->op == OP_MAXPOOL2D,
        (int)s->p->v[PM_COUNT_PAD]);
    OC_LAUNCH_TRY(env);
    return 0;
}

static int oc_pool_cudnn(ops_cuda_env *env, const oc_pool_state *st, const float *x, float *y) {
    const float one = 1.0f, zero = 0.0f;
    OC_CUDNN_TRY(env, cudnnPoolingForward(oc_cudnn(env), st->pool, &one, st->x, x, &zero, st->y, y));
    return 0;
}

/* Setup: cuDNN's descriptors when the padding is symmetric, then one run of cuDNN checked
 * against our kernel on the same data. */
static int oc_pool_setup(ops_cuda_env *env, oc_pool_state *st, const ops_sig *s, const float *const *in, float *const *out) {
    const ops_shape *xs = &s->in[0], *ys = &s->out[0];
    char msg[256];
    if (ops_window2d(s->op, s->p, xs, NULL, &st->win, msg, sizeof msg) < 0)
        return oc_fail(env, "%s", msg);
    const ops_window *w = &st->win;
    st->own = 1;
    const int64_t dims[] = {xs->dims[0], xs->dims[1], xs->dims[2], xs->dims[3], ys->dims[2], ys->dims[3],
                            w->kh,       w->kw,       w->pt,       w->pl,       w->sh,       w->sw};
    int ok = w->pt == w->pb && w->pl == w->pr;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        ok = ok && oc_fits_int(dims[i]);
    if (!ok)
        return oc_pool_own(env, st, s, in[0], out[0]);
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
        return oc_pool_own(env, st, s, in[0], out[0]);
    /* our kernel's result into a scratch buffer, cuDNN's into the output, compared */
    const int64_t n = ops_shape_numel(ys);
    float *ref = NULL;
    CUDA_CHECK(cudaMalloc((void **)&ref, (size_t)n * sizeof(float)));
    if (oc_pool_own(env, st, s, in[0], ref) < 0) {
        CUDA_CHECK(cudaFree(ref));
        return -1;
    }
    double rel = oc_pool_cudnn(env, st, in[0], out[0]) < 0 ? -1.0 : oc_dev_diff(env, out[0], ref, n);
    CUDA_CHECK(cudaStreamSynchronize(oc_stream(env)));
    CUDA_CHECK(cudaFree(ref));
    if (rel < 0.0) {
        if (oc_verbose(env))
            fprintf(stderr, "tasc: node '%s': pool on our kernel (cuDNN: %s)\n", oc_node_name(env), env->err);
        return oc_pool_own(env, st, s, in[0], out[0]);
    }
    if (!(rel <= 1e-6)) {
        fprintf(stderr, "tasc: node '%s': cuDNN pooling differs from the reference (rel L2 %.3g); using our kernel\n",
                oc_node_name(env), rel);
        return oc_pool_own(env, st, s, in[0], out[0]);
    }
    st->own = 0;
    return 0;
}

static int oc_pool(ops_cuda_env *env, const ops_sig *s, const float *const *in, float *const *out) {
    oc_pool_state *st = (oc_pool_state *)oc_node_state(env);
    if (st)
        return st->own ? oc_pool_own(env, st, s, in[0], out[0]) : oc_pool_cudnn(env, st, in[0], out[0]);
    if (!oc_setup_phase(env))
        return oc_fail(env, "internal error: no pool state after setup");
    st = (oc_pool_state *)calloc(1, sizeof *st);
    if (!st)
        return oc_fail(env, "out of memory");
    oc_node_state_set(env, st, oc_pool_free);
    return oc_pool_setup(env, st, s, in, out);
}

OPS_CUDA_FN(avgpool2d) { return oc_pool(env, s, in, out); }
OPS_CUDA_FN(maxpool2d) { return oc_pool(env, s, in, out); }
