/* matmul_bench.cu: `tasc kernels bench`: every version of the ladder against cuBLAS, validated,
 * then timed, then tabulated (llm.c dev/cuda style).
 *
 * Per size: random normal A and B, an fp64 reference on the GPU; every version (and cuBLAS) runs
 * once on a NaN-poisoned C and is checked (relative Frobenius error); after warm-up the versions
 * are timed interleaved in one loop (rep r runs every version once, L2 flushed before each run,
 * cudaEvents around the run), and each gets the median of reps runs. cuBLAS runs strict FP32
 * (CUBLAS_DEFAULT_MATH, NVIDIA_TF32_OVERRIDE=0: no TF32) with a 64 MiB workspace of its own.
 * A rung predicted (from its rate at the previous size) or measured (warm-up) to need more than
 * max_cell_s for its runs is skipped and the table says so. Each timed run is preceded by an
 * untimed run of the same version and the flush (see mm_time_interleaved). The fused table
 * compares our matmul+bias+relu in one kernel with cuBLAS followed by the separate bias+relu
 * kernel, both in one timed region.
 * Results: tables on stdout, markdown at out_path and the same numbers as JSON beside it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>
#include <vector>

#include <cublas_v2.h>

#include "base.h"
#include "matmul_impl.h"

#define MM_BENCH_TOL 1e-5

enum { CELL_OK, CELL_SKIPPED, CELL_FAILED };

struct mm_cell {
    int status = CELL_SKIPPED;
    double med_ms = 0, min_ms = 0, max_ms = 0, tflops = 0, err = NAN;
    std::string note;
};

static void mm_cublas_run(cublasHandle_t h, const mm_problem *p, const float *A, const float *B, float *C) {
    const float one = 1.0f, zero = 0.0f;
    /* row-major C = A B is column-major C^T = B^T A^T */
    if (p->batch == 1)
        CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)p->n, (int)p->m, (int)p->k, &one, B, (int)p->n, A,
                                 (int)p->k, &zero, C, (int)p->n));
    else
        CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)p->n, (int)p->m, (int)p->k, &one, B,
                                               (int)p->n, p->stride_b, A, (int)p->k, p->stride_a, &zero, C,
                                               (int)p->n, p->stride_c, (int)p->batch));
}

/* cuBLAS with a workspace of its own (64 MiB, set once per handle): its split-K kernels need one,
 * and without an explicit one a final run once saw cuBLAS fall back to a 3x slower kernel for one
 * shape in one section of the bench only (128x768x3072: 93 us instead of 28). */
static void mm_cublas_create(cublasHandle_t *h, void **ws) {
    const size_t bytes = (size_t)64 << 20;
    CUBLAS_CHECK(cublasCreate(h));
    CUBLAS_CHECK(cublasSetMathMode(*h, CUBLAS_DEFAULT_MATH));
    CUDA_CHECK(cudaMalloc(ws, bytes));
    CUBLAS_CHECK(cublasSetWorkspace(*h, *ws, bytes));
}

static void mm_cublas_destroy(cublasHandle_t h, void *ws) {
    CUBLAS_CHECK(cublasDestroy(h));
    CUDA_CHECK(cudaFree(ws));
}

static std::string mm_size_label(const mm_problem *p) {
    char buf[96];
    if (p->m == p->n && p->n == p->k && p->batch == 1)
        snprintf(buf, sizeof buf, "%lld", (long long)p->m);
    else if (p->batch == 1)
        snprintf(buf, sizeof buf, "%lldx%lldx%lld", (long long)p->m, (long long)p->n, (long long)p->k);
    else
        snprintf(buf, sizeof buf, "%lldx(%lldx%lldx%lld)", (long long)p->batch, (long long)p->m, (long long)p->n,
                 (long long)p->k);
    return buf;
}

static std::string mm_fmt(const char *fmt, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

static std::string mm_json_str(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            o += '\\', o += c;
        else if ((unsigned char)c < 0x20)
            o += ' ';
        else
            o += c;
    }
    return o + "\"";
}

/* JSON number or null */
static std::string mm_jnum(double v, const char *fmt = "%.6g") {
    return isfinite(v) ? mm_fmt(fmt, v) : std::string("null");
}

/* What precision 3xtf32 runs for p (mm_choose_precision: a 3xTF32 kernel, mma: or wgmma:, or the
 * FP32 kernel's configuration), as a note: the table shows the mode's real kernel. */
static std::string mm_3xtf32_note(const mm_problem *p) {
    mm_choice ch;
    int from_table = 0;
    char nm[128];
    if (mm_choose_precision(MM_PREC_3XTF32, p, &ch, &from_table, NULL, 0))
        return "3xtf32 ?";
    return std::string("3xtf32 ") + mm_choice_name(&ch, nm, sizeof nm) + " split " + std::to_string(ch.split_k) +
           " group " + std::to_string(ch.group_m) + (from_table ? " (table)" : " (built-in rule)");
}

/* Device buffers for one problem. */
struct mm_bufs {
    float *A = nullptr, *B = nullptr, *C = nullptr, *bias = nullptr;
    double *ref = nullptr;
    long long c_el = 0;
    void alloc(const mm_problem *p) {
        long long a_el = mm_span(p->batch, p->stride_a, p->m * p->k);
        long long b_el = mm_span(p->batch, p->stride_b, p->k * p->n);
        c_el = mm_span(p->batch, p->stride_c, p->m * p->n);
        CUDA_CHECK(cudaMalloc((void **)&A, (size_t)a_el * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&B, (size_t)b_el * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&C, (size_t)c_el * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&bias, (size_t)p->n * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&ref, (size_t)(p->batch * p->m * p->n) * sizeof(double)));
        mm_fill_normal(A, a_el, 1, 0);
        mm_fill_normal(B, b_el, 2, 0);
        mm_fill_normal(bias, p->n, 3, 0);
    }
    void release() {
        CUDA_CHECK(cudaFree(A));
        CUDA_CHECK(cudaFree(B));
        CUDA_CHECK(cudaFree(C));
        CUDA_CHECK(cudaFree(bias));
        CUDA_CHECK(cudaFree(ref));
    }
};

/* Times runners interleaved: reps rounds, each running every active runner once after an L2
 * flush. run(i) enqueues runner i on stream 0. Fills med/min/max of active cells.
 * Every timed run follows the same sequence: an untimed run of the same runner, the L2 flush,
 * then the timed run. Without the untimed run, a runner's kernel followed a different kernel
 * (the previous runner of the round) and paid a cold start that depends on what ran before it
 * (`tasc kernels probe` measures it): up to ~10 us, i.e. a bias that decided the comparisons of
 * the small shapes. Now ours and cuBLAS start from the same state. */
template <class F>
static void mm_time_interleaved(std::vector<mm_cell> &cells, int reps, F run) {
    const int n = (int)cells.size();
    std::vector<cudaEvent_t> ev((size_t)2 * n * reps);
    for (auto &e : ev)
        CUDA_CHECK(cudaEventCreate(&e));
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n; i++) {
            if (cells[i].status == CELL_SKIPPED)
                continue;
            run(i); /* untimed: the timed run follows its own kernel(s) and the flush */
            mm_l2_flush(0);
            CUDA_CHECK(cudaEventRecord(ev[((size_t)r * n + i) * 2], 0));
            run(i);
            CUDA_CHECK(cudaEventRecord(ev[((size_t)r * n + i) * 2 + 1], 0));
        }
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(reps);
    for (int i = 0; i < n; i++) {
        if (cells[i].status == CELL_SKIPPED)
            continue;
        for (int r = 0; r < reps; r++)
            CUDA_CHECK(cudaEventElapsedTime(&ms[r], ev[((size_t)r * n + i) * 2], ev[((size_t)r * n + i) * 2 + 1]));
        cells[i].med_ms = mm_median(ms.data(), reps); /* sorts */
        cells[i].min_ms = ms[0];
        cells[i].max_ms = ms[reps - 1];
    }
    for (auto &e : ev)
        CUDA_CHECK(cudaEventDestroy(e));
}

/* One event-timed run, in ms (for the skip estimate). */
template <class F>
static double mm_time_once(F run) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaEventRecord(e0, 0));
    run();
    CUDA_CHECK(cudaEventRecord(e1, 0));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return ms;
}

int mm_bench(const mm_bench_opts *o, char *err, size_t errlen) {
    if (o->reps < 1 || o->warmup < 0 || o->n_sizes < 0 || o->n_versions < 0 || o->n_fused < 0) {
        return base_fail(err, errlen, "bench: bad options (reps >= 1, warmup >= 0)");
    }
    for (int32_t i = 0; i < o->n_sizes; i++)
        if (mm_problem_check(&o->sizes[i], err, errlen))
            return -1;
    for (int32_t i = 0; i < o->n_fused; i++)
        if (mm_problem_check(&o->fused[i], err, errlen))
            return -1;
    FILE *md = NULL, *js = NULL;
    std::string md_path, js_path;
    if (o->out_path) {
        md_path = o->out_path;
        std::string base = md_path;
        if (base.size() > 3 && base.compare(base.size() - 3, 3, ".md") == 0)
            base.resize(base.size() - 3);
        else
            md_path = base + ".md";
        js_path = base + ".json";
        md = fopen(md_path.c_str(), "w");
        js = md ? fopen(js_path.c_str(), "w") : NULL;
        if (!md || !js) {
            base_fail(err, errlen, "%s: cannot write: %s", (!md ? md_path : js_path).c_str(), strerror(errno));
            if (md)
                fclose(md);
            return -1;
        }
    }

    setenv("NVIDIA_TF32_OVERRIDE", "0", 1); /* before cuBLAS starts: no TF32 anywhere */
    const mm_precision prec_before = mm_precision_get(); /* "tuned" and "ours fused" run mm_run */
    mm_precision_set(o->precision);
    cublasHandle_t h;
    void *cublas_ws;
    mm_cublas_create(&h, &cublas_ws);
    int cublas_ver = 0, rt_ver = 0, drv_ver = 0;
    CUBLAS_CHECK(cublasGetVersion(h, &cublas_ver));
    CUDA_CHECK(cudaRuntimeGetVersion(&rt_ver));
    CUDA_CHECK(cudaDriverGetVersion(&drv_ver));
    const mm_device_info *dev = mm_device();

    const int nv = o->n_versions, ncol = nv + 1; /* our versions, then cuBLAS */
    std::vector<std::string> vname(ncol);
    for (int v = 0; v < nv; v++)
        vname[v] = mm_version_name(o->versions[v]);
    vname[nv] = "cuBLAS";
    std::vector<std::vector<mm_cell>> cells(o->n_sizes);
    std::vector<double> last_tflops(ncol, 0.0);
    int failed = 0;

    for (int32_t si = 0; si < o->n_sizes; si++) {
        const mm_problem *p = &o->sizes[si];
        const double flops = mm_problem_flops(p);
        mm_bufs b;
        b.alloc(p);
        mm_reference_f64(p, b.A, b.B, p->has_bias ? b.bias : NULL, b.ref, 0);
        std::vector<mm_cell> &row = cells[si];
        row.assign(ncol, mm_cell());
        auto run = [&](int i) {
            if (i == nv) {
                mm_cublas_run(h, p, b.A, b.B, b.C);
                if (p->has_bias || p->act != MM_ACT_NONE)
                    mm_bias_act(b.C, p->has_bias ? b.bias : NULL, p->batch * p->m, p->n, p->act, 0);
            } else {
                char e2[256];
                if (mm_run_version(o->versions[i], p, b.A, b.B, p->has_bias ? b.bias : NULL, b.C, 0, e2, sizeof e2))
                    base_die("tasc kernels bench: %s", e2); /* checked problems: a bug */
            }
        };
        for (int i = 0; i < ncol; i++) {
            mm_cell &c = row[i];
            double budget_runs = 1.0 + o->warmup + 2.0 * o->reps;
            if (last_tflops[i] > 0) {
                double pred_s = flops / (last_tflops[i] * 1e12);
                if (pred_s * budget_runs > o->max_cell_s) {
                    c.status = CELL_SKIPPED;
                    c.note = "skipped: predicted " + mm_fmt("%.2f", pred_s) + " s per run";
                    continue;
                }
            }
            CUDA_CHECK(cudaMemset(b.C, 0xff, (size_t)b.c_el * sizeof(float))); /* NaN poison */
            double first_ms = mm_time_once([&] { run(i); });
            c.err = mm_rel_error(b.C, b.ref, p->batch * p->m * p->n, 0);
            c.status = (c.err <= MM_BENCH_TOL) ? CELL_OK : CELL_FAILED;
            if (c.status == CELL_FAILED) {
                failed = 1;
                c.note = "FAILED validation";
            }
            double est = first_ms;
            for (int w = 0; w < o->warmup; w++)
                est = mm_time_once([&] { run(i); });
            if (est / 1000.0 * 2 * o->reps > o->max_cell_s) {
                c.status = CELL_SKIPPED;
                c.note = "skipped: " + mm_fmt("%.2f", est / 1000.0) + " s per run";
                last_tflops[i] = flops / (est / 1000.0) / 1e12;
            }
            if (i < nv && (o->versions[i] == MM_3XTF32 || (o->versions[i] == MM_TUNED && o->precision == MM_PREC_3XTF32))) {
                c.note = mm_3xtf32_note(p) + (c.note.empty() ? "" : "; " + c.note);
            } else if (i < nv && o->versions[i] == MM_TUNED) {
                mm_choice ch;
                int from_table = 0;
                char nm[96];
                mm_choose(p, &ch, &from_table, NULL, 0);
                c.note = std::string(mm_config_name(ch.cfg, nm, sizeof nm)) + " split " + std::to_string(ch.split_k) +
                         " group " + std::to_string(ch.group_m) + (from_table == 1 ? " (table)" : from_table == 2 ? " (TASC_MM_CHOICE)" : " (heuristic)") +
                         (c.note.empty() ? "" : "; " + c.note);
            }
        }
        mm_time_interleaved(row, o->reps, run);
        for (int i = 0; i < ncol; i++)
            if (row[i].status != CELL_SKIPPED) {
                row[i].tflops = flops / (row[i].med_ms * 1e-3) / 1e12;
                last_tflops[i] = row[i].tflops;
            }
        b.release();
        /* progress line */
        const mm_cell &cb = row[nv];
        printf("%-18s cuBLAS %8.3f ms %6.2f TF |", mm_size_label(p).c_str(), cb.med_ms, cb.tflops);
        for (int i = 0; i < nv; i++)
            if (row[i].status != CELL_SKIPPED)
                printf(" %s %.1f%%", vname[i].c_str(), 100.0 * row[i].tflops / cb.tflops);
        printf("\n");
        fflush(stdout);
    }

    /* fused epilogue: ours (one kernel) vs cuBLAS + separate bias+relu, and cuBLAS alone */
    const char *fname[3] = {o->precision == MM_PREC_3XTF32 ? "ours fused (3xtf32)" : "ours fused (tuned)",
                            "cuBLAS + bias_relu kernel", "cuBLAS matmul alone"};
    std::vector<std::vector<mm_cell>> fcells(o->n_fused);
    std::vector<std::string> fnote(o->n_fused);
    for (int32_t si = 0; si < o->n_fused; si++) {
        mm_problem p = o->fused[si];
        p.has_bias = 1;
        p.act = MM_ACT_RELU;
        mm_problem plain = p;
        plain.has_bias = 0;
        plain.act = MM_ACT_NONE;
        mm_bufs b;
        b.alloc(&p);
        mm_reference_f64(&p, b.A, b.B, b.bias, b.ref, 0);
        std::vector<mm_cell> &row = fcells[si];
        row.assign(3, mm_cell());
        auto run = [&](int i) {
            if (i == 0) {
                char e2[256];
                if (mm_run(&p, b.A, b.B, b.bias, b.C, 0, e2, sizeof e2))
                    base_die("tasc kernels bench: %s", e2); /* checked problem: a bug */
            } else {
                mm_cublas_run(h, &plain, b.A, b.B, b.C);
                if (i == 1)
                    mm_bias_act(b.C, b.bias, p.batch * p.m, p.n, MM_ACT_RELU, 0);
            }
        };
        for (int i = 0; i < 3; i++) {
            mm_cell &c = row[i];
            c.status = CELL_OK;
            CUDA_CHECK(cudaMemset(b.C, 0xff, (size_t)b.c_el * sizeof(float)));
            run(i);
            if (i < 2) {
                c.err = mm_rel_error(b.C, b.ref, p.batch * p.m * p.n, 0);
                if (!(c.err <= MM_BENCH_TOL)) {
                    c.status = CELL_FAILED;
                    c.note = "FAILED validation";
                    failed = 1;
                }
            }
            for (int w = 0; w < o->warmup; w++)
                run(i);
        }
        mm_choice ch;
        int from_table = 0;
        char nm[96];
        mm_choose(&p, &ch, &from_table, NULL, 0);
        fnote[si] = std::string(mm_config_name(ch.cfg, nm, sizeof nm)) + " split " + std::to_string(ch.split_k) +
                    " group " + std::to_string(ch.group_m) +
                    (from_table == 1 ? " (table)" : from_table == 2 ? " (TASC_MM_CHOICE)" : " (heuristic)");
        if (o->precision == MM_PREC_3XTF32)
            fnote[si] = mm_3xtf32_note(&p);
        mm_time_interleaved(row, o->reps, run);
        for (auto &c : row)
            c.tflops = mm_problem_flops(&p) / (c.med_ms * 1e-3) / 1e12;
        b.release();
    }
    mm_cublas_destroy(h, cublas_ws);
    mm_precision_set(prec_before);
    bool tc = o->precision == MM_PREC_3XTF32; /* a 3xTF32 column: say what it is */
    for (int v = 0; v < nv; v++)
        tc = tc || o->versions[v] == MM_3XTF32;

    /* ---- tables -------------------------------------------------------------------------------- */
    char when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    std::string out;
    auto line = [&](const std::string &s) { out += s + "\n"; };
    line("# tasc kernels bench: FP32 matmul ladder vs cuBLAS");
    line("");
    line(std::string("- device: ") + dev->name + " (" + std::to_string(dev->sm_count) + " SMs, L2 " +
         std::to_string(dev->l2_bytes >> 20) + " MiB)");
    line("- CUDA runtime " + std::to_string(rt_ver) + ", driver " + std::to_string(drv_ver) + ", cuBLAS " +
         std::to_string(cublas_ver) + " (CUBLAS_DEFAULT_MATH, NVIDIA_TF32_OVERRIDE=0: strict FP32)");
    line(std::string("- ") + when + (o->command_line ? std::string(", command: `") + o->command_line + "`" : ""));
    line("- each cell: median of " + std::to_string(o->reps) + " cudaEvent-timed runs after " +
         std::to_string(o->warmup) + " warm-up runs, L2 flushed (" + std::to_string(2 * (dev->l2_bytes >> 20)) +
         " MiB written) before every run and an untimed run of the same version before the flush, versions "
         "interleaved run by run; random normal inputs; error = "
         "relative Frobenius error against an fp64 GPU reference (tolerance 1e-5)");
    line("- skipped cells: the rung's runs were predicted or measured to take over " + mm_fmt("%.0f", o->max_cell_s) +
         " s");
    if (tc)
        line(std::string("- 3xtf32: tensor cores (mma.sync TF32), each FP32 operand split into a TF32 high part and "
                         "residual, 3 products with FP32 accumulation; its error column stands beside cuBLAS strict "
                         "FP32's on the same inputs; \"tuned\" and the fused table run at precision ") +
             mm_precision_name(o->precision));
    line("");
    auto header = [&](const char *first) {
        std::string h1 = std::string("| ") + first + " |", h2 = "|---|";
        for (int i = 0; i < ncol; i++) {
            h1 += " " + vname[i] + " |";
            h2 += "---:|";
        }
        line(h1);
        line(h2);
    };
    line("## TFLOP/s (median)");
    line("");
    header("size");
    for (int32_t si = 0; si < o->n_sizes; si++) {
        std::string r = "| " + mm_size_label(&o->sizes[si]) + " |";
        for (int i = 0; i < ncol; i++) {
            const mm_cell &c = cells[si][i];
            r += c.status == CELL_SKIPPED ? " skipped |" : " " + mm_fmt("%.2f", c.tflops) + (c.status == CELL_FAILED ? " FAIL" : "") + " |";
        }
        line(r);
    }
    line("");
    line("## % of cuBLAS (same harness, interleaved)");
    line("");
    header("size");
    for (int32_t si = 0; si < o->n_sizes; si++) {
        std::string r = "| " + mm_size_label(&o->sizes[si]) + " |";
        const mm_cell &cb = cells[si][nv];
        for (int i = 0; i < ncol; i++) {
            const mm_cell &c = cells[si][i];
            r += c.status == CELL_SKIPPED || cb.status == CELL_SKIPPED ? " - |" : " " + mm_fmt("%.1f%%", 100.0 * c.tflops / cb.tflops) + " |";
        }
        line(r);
    }
    line("");
    line("## Ladder: each rung's speed-up over the rung before (same size)");
    line("");
    {
        std::string h1 = "| size |", h2 = "|---|";
        for (int i = 1; i < nv; i++) {
            h1 += " " + vname[i] + " / " + vname[i - 1] + " |";
            h2 += "---:|";
        }
        line(h1);
        line(h2);
        for (int32_t si = 0; si < o->n_sizes; si++) {
            std::string r = "| " + mm_size_label(&o->sizes[si]) + " |";
            for (int i = 1; i < nv; i++) {
                const mm_cell &c = cells[si][i], &pc = cells[si][i - 1];
                r += (c.status == CELL_SKIPPED || pc.status == CELL_SKIPPED) ? " - |" : " " + mm_fmt("%.2fx", c.tflops / pc.tflops) + " |";
            }
            line(r);
        }
    }
    line("");
    line("## Relative error against fp64");
    line("");
    header("size");
    for (int32_t si = 0; si < o->n_sizes; si++) {
        std::string r = "| " + mm_size_label(&o->sizes[si]) + " |";
        for (int i = 0; i < ncol; i++) {
            const mm_cell &c = cells[si][i];
            r += isnan(c.err) ? (c.status == CELL_SKIPPED ? " - |" : " NaN |") : " " + mm_fmt("%.1e", c.err) + " |";
        }
        line(r);
    }
    line("");
    line("## Every cell");
    line("");
    line("| size | version | median ms | min ms | max ms | TFLOP/s | % cuBLAS | rel. error | note |");
    line("|---|---|---:|---:|---:|---:|---:|---:|---|");
    for (int32_t si = 0; si < o->n_sizes; si++)
        for (int i = 0; i < ncol; i++) {
            const mm_cell &c = cells[si][i], &cb = cells[si][nv];
            bool on = c.status != CELL_SKIPPED;
            line("| " + mm_size_label(&o->sizes[si]) + " | " + vname[i] + " | " + (on ? mm_fmt("%.4f", c.med_ms) : "-") +
                 " | " + (on ? mm_fmt("%.4f", c.min_ms) : "-") + " | " + (on ? mm_fmt("%.4f", c.max_ms) : "-") + " | " +
                 (on ? mm_fmt("%.2f", c.tflops) : "-") + " | " +
                 (on && cb.status != CELL_SKIPPED ? mm_fmt("%.1f%%", 100 * c.tflops / cb.tflops) : "-") + " | " +
                 (isnan(c.err) ? "-" : mm_fmt("%.2e", c.err)) + " | " + c.note + " |");
        }
    if (o->n_fused) {
        line("");
        line("## Fused epilogue: C = relu(A B + bias)");
        line("");
        line("| size | ours fused us | cuBLAS + bias_relu us | cuBLAS alone us | ours / (cuBLAS + kernel) | "
             "err ours | err cuBLAS | our choice |");
        line("|---|---:|---:|---:|---:|---:|---:|---|");
        for (int32_t si = 0; si < o->n_fused; si++) {
            const std::vector<mm_cell> &r = fcells[si];
            line("| " + mm_size_label(&o->fused[si]) + " | " + mm_fmt("%.2f", r[0].med_ms * 1e3) + " | " +
                 mm_fmt("%.2f", r[1].med_ms * 1e3) + " | " + mm_fmt("%.2f", r[2].med_ms * 1e3) + " | " +
                 mm_fmt("%.2fx faster", r[1].med_ms / r[0].med_ms) + " | " + mm_fmt("%.1e", r[0].err) + " | " +
                 mm_fmt("%.1e", r[1].err) + " | " + fnote[si] + (r[0].status == CELL_FAILED ? " FAILED" : "") + " |");
        }
    }
    fputs(out.c_str(), stdout);
    if (md) {
        fputs(out.c_str(), md);
        bool bad = ferror(md);
        if (fclose(md) != 0 || bad) {
            fclose(js);
            return base_fail(err, errlen, "%s: write error", md_path.c_str());
        }
        /* JSON */
        std::string j = "{\n  \"device\": " + mm_json_str(dev->name) + ",\n  \"sm_count\": " + std::to_string(dev->sm_count) +
                        ",\n  \"cuda_runtime\": " + std::to_string(rt_ver) + ",\n  \"driver\": " + std::to_string(drv_ver) +
                        ",\n  \"cublas\": " + std::to_string(cublas_ver) + ",\n  \"date\": " + mm_json_str(when) +
                        ",\n  \"command\": " + mm_json_str(o->command_line ? o->command_line : "") +
                        ",\n  \"reps\": " + std::to_string(o->reps) + ",\n  \"warmup\": " + std::to_string(o->warmup) +
                        ",\n  \"tolerance\": 1e-5,\n  \"sizes\": [\n";
        for (int32_t si = 0; si < o->n_sizes; si++) {
            const mm_problem *p = &o->sizes[si];
            j += "    {\"m\": " + std::to_string(p->m) + ", \"n\": " + std::to_string(p->n) + ", \"k\": " +
                 std::to_string(p->k) + ", \"batch\": " + std::to_string(p->batch) + ", \"results\": [\n";
            for (int i = 0; i < ncol; i++) {
                const mm_cell &c = cells[si][i], &cb = cells[si][nv];
                bool on = c.status != CELL_SKIPPED;
                j += "      {\"version\": " + mm_json_str(vname[i]) + ", \"status\": " +
                     mm_json_str(c.status == CELL_OK ? "ok" : c.status == CELL_FAILED ? "failed" : "skipped") +
                     ", \"median_ms\": " + (on ? mm_jnum(c.med_ms) : "null") + ", \"min_ms\": " + (on ? mm_jnum(c.min_ms) : "null") +
                     ", \"max_ms\": " + (on ? mm_jnum(c.max_ms) : "null") + ", \"tflops\": " + (on ? mm_jnum(c.tflops) : "null") +
                     ", \"pct_cublas\": " + (on && cb.status != CELL_SKIPPED ? mm_jnum(100 * c.tflops / cb.tflops) : "null") +
                     ", \"rel_err\": " + mm_jnum(c.err) + ", \"note\": " + mm_json_str(c.note) + "}" +
                     (i + 1 < ncol ? ",\n" : "\n");
            }
            j += std::string("    ]}") + (si + 1 < o->n_sizes ? ",\n" : "\n");
        }
        j += "  ],\n  \"fused\": [\n";
        for (int32_t si = 0; si < o->n_fused; si++) {
            const mm_problem *p = &o->fused[si];
            const std::vector<mm_cell> &r = fcells[si];
            j += "    {\"m\": " + std::to_string(p->m) + ", \"n\": " + std::to_string(p->n) + ", \"k\": " +
                 std::to_string(p->k) + ", \"batch\": " + std::to_string(p->batch) + ", \"epilogue\": \"bias_relu\"";
            for (int i = 0; i < 3; i++)
                j += std::string(", ") + mm_json_str(fname[i]) + ": {\"median_ms\": " + mm_jnum(r[i].med_ms) +
                     ", \"min_ms\": " + mm_jnum(r[i].min_ms) + ", \"max_ms\": " + mm_jnum(r[i].max_ms) +
                     ", \"rel_err\": " + mm_jnum(r[i].err) + "}";
            j += ", \"choice\": " + mm_json_str(fnote[si]) + "}" + (si + 1 < o->n_fused ? ",\n" : "\n");
        }
        j += "  ]\n}\n";
        fputs(j.c_str(), js);
        bad = ferror(js);
        if (fclose(js) != 0 || bad) {
            return base_fail(err, errlen, "%s: write error", js_path.c_str());
        }
        printf("\nwrote %s and %s\n", md_path.c_str(), js_path.c_str());
    }
    return failed;
}

/* ---- probe: what a timed kernel pays for what ran before it ----------------------------------- */

/* For each size: the tuned kernel, cuBLAS and v7 timed after different predecessors and flushes,
 * interleaved like the bench, once with the driver's shared-memory carveout and once with every
 * warp-tiled kernel asking for the largest shared-memory carveout. The predecessor runs untimed
 * right before the flush; "after itself" is the bench's condition. */
int mm_bench_probe(const mm_problem *sizes, int32_t n_sizes, int32_t reps, char *err, size_t errlen) {
    if (reps < 1) {
        return base_fail(err, errlen, "probe: reps must be >= 1");
    }
    for (int32_t i = 0; i < n_sizes; i++)
        if (mm_problem_check(&sizes[i], err, errlen))
            return -1;
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    cublasHandle_t h;
    void *cublas_ws;
    mm_cublas_create(&h, &cublas_ws);
    enum { R_TUNED, R_CUBLAS, R_V7, R_V6, R_V3 };
    const char *rname[] = {"tuned", "cuBLAS", "v7", "v6", "v3"};
    enum { F_NONE, F_MEMSET, F_KERNEL };
    const char *fname[] = {"no flush", "memset flush", "kernel flush"};
    struct cond {
        int target, pred, flush;
    };
    const cond conds[] = {
        {R_TUNED, R_TUNED, F_MEMSET},  {R_TUNED, R_V7, F_MEMSET},  {R_TUNED, R_V6, F_MEMSET},
        {R_TUNED, R_V3, F_MEMSET},     {R_TUNED, R_CUBLAS, F_MEMSET}, {R_TUNED, R_TUNED, F_KERNEL},
        {R_TUNED, R_V6, F_KERNEL},     {R_TUNED, R_TUNED, F_NONE},  {R_TUNED, R_V6, F_NONE},
        {R_CUBLAS, R_CUBLAS, F_MEMSET}, {R_CUBLAS, R_TUNED, F_MEMSET}, {R_CUBLAS, R_V6, F_MEMSET},
        {R_CUBLAS, R_V3, F_MEMSET},    {R_CUBLAS, R_CUBLAS, F_KERNEL}, {R_CUBLAS, R_V6, F_KERNEL},
        {R_CUBLAS, R_CUBLAS, F_NONE},
        {R_V7, R_V7, F_MEMSET},        {R_V7, R_V6, F_MEMSET},     {R_V7, R_V3, F_MEMSET},
        {R_V7, R_V6, F_NONE},
    };
    const int nc = (int)(sizeof conds / sizeof conds[0]);
    printf("probe: median us of %d runs (min .. max); the predecessor runs untimed before the flush\n", reps);
    for (int32_t si = 0; si < n_sizes; si++) {
        const mm_problem *p = &sizes[si];
        mm_bufs b;
        b.alloc(p);
        auto run = [&](int who) {
            if (who == R_CUBLAS) {
                mm_cublas_run(h, p, b.A, b.B, b.C);
                return;
            }
            const mm_version v = who == R_TUNED ? MM_TUNED : who == R_V7 ? MM_V7 : who == R_V6 ? MM_V6 : MM_V3;
            char e2[256];
            if (mm_run_version(v, p, b.A, b.B, p->has_bias ? b.bias : NULL, b.C, 0, e2, sizeof e2))
                base_die("tasc kernels probe: %s", e2); /* checked problems: a bug */
        };
        mm_choice ch;
        int from_table = 0;
        char nm[96];
        mm_choose(p, &ch, &from_table, NULL, 0);
        printf("%s: tuned = %s split %d group %d%s\n", mm_size_label(p).c_str(), mm_config_name(ch.cfg, nm, sizeof nm),
               ch.split_k, ch.group_m, from_table == 1 ? " (table)" : from_table == 2 ? " (TASC_MM_CHOICE)" : " (heuristic)");
        for (int phase = 0; phase < 2; phase++) {
            mm_set_carveout(phase == 0 ? -1 : 100);
            for (int w = 0; w < 3; w++)
                for (int who = 0; who <= R_V3; who++)
                    run(who);
            std::vector<cudaEvent_t> ev((size_t)2 * nc * reps);
            for (auto &e : ev)
                CUDA_CHECK(cudaEventCreate(&e));
            for (int r = 0; r < reps; r++)
                for (int c = 0; c < nc; c++) {
                    run(conds[c].pred);
                    if (conds[c].flush == F_MEMSET)
                        mm_l2_flush(0);
                    else if (conds[c].flush == F_KERNEL)
                        mm_l2_flush_kernel(0);
                    CUDA_CHECK(cudaEventRecord(ev[((size_t)r * nc + c) * 2], 0));
                    run(conds[c].target);
                    CUDA_CHECK(cudaEventRecord(ev[((size_t)r * nc + c) * 2 + 1], 0));
                }
            CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<float> ms(reps);
            for (int c = 0; c < nc; c++) {
                for (int r = 0; r < reps; r++)
                    CUDA_CHECK(cudaEventElapsedTime(&ms[r], ev[((size_t)r * nc + c) * 2], ev[((size_t)r * nc + c) * 2 + 1]));
                double med = mm_median(ms.data(), reps);
                printf("  %-14s %-7s after %-7s %-13s %8.2f us (%.2f .. %.2f)\n",
                       phase == 0 ? "carveout auto" : "carveout 100", rname[conds[c].target], rname[conds[c].pred],
                       fname[conds[c].flush], 1e3 * med, 1e3 * ms[0], 1e3 * ms[reps - 1]);
            }
            for (auto &e : ev)
                CUDA_CHECK(cudaEventDestroy(e));
        }
        mm_set_carveout(-1);
        b.release();
        fflush(stdout);
    }
    mm_cublas_destroy(h, cublas_ws);
    return 0;
}
