/* rt.c: the GPU runtime's context -- planning a graph's memory, uploading its weights, folding
 * weight-only nodes, the eager setup run, CUDA graph capture and replay, timing, outputs.
 *
 * Planning reads each node's class as rt_classify (rt_plan.c) decides it once: dead, folded, run
 * by a scatter store or a fusion, a view, or a launch. Tensor classes (rt.h): graph inputs, the
 * weights a run reads and folded values are persistent allocations; outputs of the nodes of every
 * run are slices of one arena placed by rt_plan_arena from their lifetimes (step of the producer to
 * the step of the last reader, or the end for graph outputs); a view's outputs are aliases of its
 * input's bytes. Graph inputs are never in the arena, so repeated runs read the same inputs.
 * Nothing is allocated after setup except by a failed capture's fallback (which allocates nothing
 * either). The context owns every allocation it makes and frees them in rt_ctx_free.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "exec.h"
#include "matmul.h"
#include "rt_impl.h"

#define RT_MAX_GEN_ID 100 /* generated ids lie in [0, 100), as the CPU executor's */

/* --- process-wide --------------------------------------------------------------------------- */

static void rt_init_once(void) {
    static int done;
    if (done)
        return;
    done = 1;
    /* strict FP32: no TF32 in any NVIDIA library this process loads after this point */
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    rt_register_ops();
}

int rt_available(char *err, size_t errlen) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return base_fail(err, errlen, "no CUDA device: %s", cudaGetErrorString(e)) + 1;
    }
    if (n == 0)
        return base_fail(err, errlen, "no CUDA device") + 1;
    return 1;
}

const char *rt_device_name(void) {
    static char name[256];
    if (!name[0]) {
        int dev = 0;
        struct cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
        snprintf(name, sizeof name, "%s", prop.name);
    }
    return name;
}

const char *rt_versions(void) {
    static char buf[128];
    if (!buf[0]) {
        int rtv = 0, drv = 0;
        CUDA_CHECK(cudaRuntimeGetVersion(&rtv));
        CUDA_CHECK(cudaDriverGetVersion(&drv));
        snprintf(buf, sizeof buf, "CUDA runtime %d, driver %d, cuDNN %zu", rtv, drv, cudnnGetVersion());
    }
    return buf;
}

/* --- what the kernels get: one ops_cuda_env per node call ---------------------------------- */

int rt_register_ops(void) {
    ops_cuda_register();
    int missing = 0;
    for (int op = 0; op < OP_COUNT; op++)
        missing += ops_cuda[op] == NULL;
    return missing;
}

/* A message for the node being set up or run, in the context's buffer (what ops_cuda_env.err is). */
static int rt_fail(rt_ctx *c, const char *fmt, ...) BASE_PRINTF(2, 3);
static int rt_fail(rt_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* The scratch at least `bytes` long; setup phase only. */
static int rt_ws_grow(rt_ctx *c, size_t bytes) {
    if (bytes <= c->ws_size)
        return 0;
    CUDA_CHECK(cudaStreamSynchronize(c->stream)); /* nothing may still use the old one */
    if (c->ws)
        CUDA_CHECK(cudaFree(c->ws));
    c->ws = NULL;
    c->ws_size = 0;
    cudaError_t e = cudaMalloc(&c->ws, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        c->ws = NULL;
        return rt_fail(c, "cannot allocate %.1f MiB of workspace: %s", (double)bytes / 1048576.0,
                       cudaGetErrorString(e));
    }
    c->ws_size = bytes;
    return 0;
}

static int rt_workspace(rt_ctx *c, size_t bytes, void **ws) {
    *ws = NULL;
    if (c->phase == RT_PHASE_SETUP) {
        if (bytes > c->ws_limit)
            return rt_fail(c, "needs %.1f MiB of workspace, over the limit of %.1f MiB (TASC_RT_WORKSPACE_MB)",
                           (double)bytes / 1048576.0, (double)c->ws_limit / 1048576.0);
        if (rt_ws_grow(c, bytes) < 0)
            return -1;
        if (bytes > c->ws_need)
            c->ws_need = bytes;
    } else if (bytes > c->ws_size) {
        return rt_fail(c, "internal error: %zu bytes of workspace asked for after setup (%zu reserved)", bytes,
                       c->ws_size);
    }
    *ws = bytes ? c->ws : NULL;
    return 0;
}

static int rt_workspace_search(rt_ctx *c, void **ws, size_t *bytes) {
    *ws = NULL;
    *bytes = 0;
    if (c->phase != RT_PHASE_SETUP)
        return rt_fail(c, "internal error: workspace search outside setup");
    if (c->ws_limit > 0 && rt_ws_grow(c, c->ws_limit) < 0)
        return -1;
    *ws = c->ws;
    *bytes = c->ws_size;
    return 0;
}

static int rt_env_workspace(ops_cuda_env *e, size_t bytes, void **ws) { return rt_workspace(e->owner, bytes, ws); }
static int rt_env_workspace_search(ops_cuda_env *e, void **ws, size_t *bytes) {
    return rt_workspace_search(e->owner, ws, bytes);
}

/* --- inputs as the CPU executor makes them -------------------------------------------------- */

static uint64_t rt_mix(uint64_t x) { /* splitmix64 finaliser, as exec.c */
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

int rt_make_inputs(const graph *g, uint64_t seed, float **in, char *err, size_t errlen) {
    for (int32_t i = 0; i < g->n_inputs; i++)
        in[i] = NULL;
    int32_t *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    uint8_t *live = calloc((size_t)g->n_nodes + 1, 1);
    int rc = -1;
    if (!order || !live) {
        base_fail(err, errlen, "out of memory making inputs");
        goto done;
    }
    if (graph_topo_order(g, order, err, errlen) < 0 || rt_live_nodes(g, order, live) < 0)
        goto done;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const graph_tensor *ts = &g->tensors[g->inputs[i]];
        int64_t n = ops_shape_numel(&ts->shape);
        in[i] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        if (!in[i]) {
            base_fail(err, errlen, "out of memory making input '%s'", ts->name);
            goto done;
        }
        uint64_t sd = seed + (uint64_t)i;
        if (ts->dtype == GRAPH_DT_I64) {
            int64_t hi = exec_id_bound(g, live, g->inputs[i]);
            if (hi > RT_MAX_GEN_ID)
                hi = RT_MAX_GEN_ID;
            uint64_t key = rt_mix(sd);
            for (int64_t k = 0; k < n; k++)
                in[i][k] = hi <= 0 ? 0.0f : (float)(int64_t)(rt_mix(key ^ rt_mix((uint64_t)k)) % (uint64_t)hi);
        } else {
            graph_fill_normal(in[i], n, sd, 0.0f, 1.0f);
        }
    }
    rc = 0;
done:
    if (rc < 0)
        for (int32_t i = 0; i < g->n_inputs; i++) {
            free(in[i]);
            in[i] = NULL;
        }
    free(order);
    free(live);
    return rc;
}

/* --- planning ------------------------------------------------------------------------------- */

static int64_t rt_tensor_bytes(const graph *g, int32_t t) {
    int64_t n = ops_shape_numel(&g->tensors[t].shape);
    return (n > 0 ? n : 1) * (int64_t)sizeof(float);
}

static int32_t rt_root(const rt_ctx *c, int32_t t) { return c->tclass[t] == RT_T_ALIAS ? c->alias_of[t] : t; }

/* The device address of tensor t's first element (an alias: its root's bytes from alias_off on). */
static float *rt_dev(const rt_ctx *c, int32_t t) {
    return c->tclass[t] == RT_T_ALIAS ? c->dev[c->alias_of[t]] + c->alias_off[t] : c->dev[t];
}

/* Bytes of tensor t's buffer: a scatter store's root holds its tree's leaves (rt_scatter). */
static int64_t rt_buf_bytes(const rt_ctx *c, int32_t t) {
    for (int32_t i = 0; i < c->n_sc; i++)
        if (c->sc[i].root == t)
            return c->sc[i].buf_elems * (int64_t)sizeof(float);
    return rt_tensor_bytes(c->g, t);
}

static int32_t rt_sc_of_node(const rt_ctx *c, int32_t id) {
    for (int32_t i = 0; i < c->n_sc; i++)
        if (c->sc[i].node == id)
            return i + 1;
    return 0;
}

/* 1 if t keeps its value for the context's life as rt_presplit.c counts it: a weight or a folded
 * value (isconst), or a view (rt_node_is_view) of one. The walk up takes each tensor's producer
 * from the graph (tensor.producer, which graph_validate in rt_ctx_new has checked against every
 * node's out[]): one step each, where a scan of every node per step made planning quadratic in
 * the graph's size. */
static int rt_sc_const(const graph *g, const uint8_t *isconst, int32_t t) {
    for (int32_t guard = 0; guard < g->n_nodes && !isconst[t]; guard++) {
        const int32_t k = g->tensors[t].producer; /* -1: an input or a weight */
        const graph_node *up = k >= 0 && g->nodes[k].n_out == 1 ? &g->nodes[k] : NULL;
        if (!up || !rt_node_is_view(g, up, 0)) /* called only with the scatter store on */
            return 0;
        t = up->in[0];
    }
    return isconst[t];
}

/* 1 if rt_presplit.c would split an operand of matmul nd for the wgmma path at 3xtf32: the same
 * question (rt_ps_matmul) on the graph's shapes, the operands' constness walked through aliases. */
static int rt_sc_presplit(const graph *g, const graph_node *nd, const uint8_t *isconst) {
    rt_ps_want w[2];
    return rt_ps_matmul(nd, &g->tensors[nd->in[0]].shape, &g->tensors[nd->in[1]].shape,
                        &g->tensors[nd->out[0]].shape, rt_sc_const(g, isconst, nd->in[0]),
                        rt_sc_const(g, isconst, nd->in[1]), w) > 0;
}

/* Precision 3xtf32: a scatter store is the FP32 kernel's, so the matmul keeps the store sc only
 * where the 3xtf32 decision (mm_choose_precision, first-use tuning as the setup run would) for the
 * product its store runs (mm_node_scatter_problem: the rows view, else the batched one) is the
 * FP32 kernel. Decided here, once: scn's view records it and every run uses it (mm_run_scatter),
 * so a table entry or tuning added later cannot change what the plan assumed. A product whose
 * weight rt_presplit.c splits for the wgmma path is a tensor-core one: no store. 1 kept (the rows
 * view dropped where only the batched one is FP32), 0 not (why), -1 error. */
static int rt_sc_decide(rt_ctx *c, const uint8_t *isconst, rt_scatter *sc, mm_scatter_node *scn, char *why,
                        size_t len, char *err, size_t errlen) {
    const graph *g = c->g;
    const graph_node *nd = &g->nodes[sc->node];
    const ops_shape *as = &g->tensors[nd->in[0]].shape, *bs = &g->tensors[nd->in[1]].shape;
    const ops_shape *os = &g->tensors[nd->out[0]].shape;
    if (rt_sc_presplit(g, nd, isconst))
        return base_fail(why, len, "a weight of its product is split for the wgmma path (3xtf32)") + 1;
    const int mact = oc_mm_act((ops_act)nd->p.v[PM_ACT]);
    mm_autotune_set(c->opts.autotune == RT_AUTOTUNE_ON && !mm_autotune_refused()); /* as the setup run */
    int rc = 0;
    for (int rows = 1; rows >= 0 && rc == 0; rows--) {
        if (rows ? sc->rows_nb == 0 : !sc->batched)
            continue;
        mm_problem p;
        mm_choice ch;
        char name[128];
        mm_node_scatter_problem(as->rank, as->dims, bs->rank, bs->dims, os->rank, os->dims, rows, sc->rows_nb,
                                sc->rows_m, nd->n_in > 2, mact < 0 ? MM_ACT_NONE : (mm_act)mact, &p);
        if (mm_choose_precision(MM_PREC_3XTF32, &p, &ch, NULL, err, errlen) < 0) {
            rc = -1;
        } else if (ch.kernel == MM_KERNEL_FP32) {
            mm_scatter *v = rows ? &scn->rows : &scn->batched;
            v->decided = 1;
            v->choice = ch;
            v->for_p = p;
            if (!rows)
                sc->rows_nb = 0; /* the node runs the batched view */
            rc = 1;
        } else {
            base_fail(why, len, "its product %lldx%lldx%lldx%lld runs %s at 3xtf32 (a tensor-core kernel)",
                      (long long)p.m, (long long)p.n, (long long)p.k, (long long)p.batch,
                      mm_choice_name(&ch, name, sizeof name));
        }
    }
    mm_autotune_stats st; /* reported with the setup run's (rt_setup_tuned) */
    mm_autotune_get_stats(&st);
    c->sc_tune.tuned += st.tuned;
    c->sc_tune.tune_s += st.tune_s;
    c->sc_tune.untuned += st.untuned;
    c->sc_tune.failed += st.failed;
    mm_autotune_set(0);
    return rc;
}

/* Records store sc of node nd (with its mm_scatter_node scn) in the context and its tree in cl
 * (rt_classes_scatter: the tree's nodes run by the store, its leaves views of the matmul's output). */
static int rt_sc_add(rt_ctx *c, const graph_node *nd, rt_scatter *sc, const mm_scatter_node *scn, rt_classes *cl,
                     char *err, size_t errlen) {
    rt_scatter *grown = realloc(c->sc, ((size_t)c->n_sc + 1) * sizeof *c->sc);
    if (grown)
        c->sc = grown;
    mm_scatter_node *sgrown = grown ? realloc(c->scn, ((size_t)c->n_sc + 1) * sizeof *c->scn) : NULL;
    if (!sgrown) {
        rt_scatter_free(sc);
        return base_fail(err, errlen, "out of memory planning the graph");
    }
    c->scn = sgrown;
    if (c->opts.check_tol <= 0) { /* only node checks read the placement back */
        free(sc->dst);
        sc->dst = NULL;
    }
    c->scn[c->n_sc] = *scn;
    c->sc[c->n_sc++] = *sc;
    rt_classes_scatter(cl, sc);
    c->n_scattered += sc->n_nodes;
    if (c->opts.verbose)
        fprintf(stderr, "tasc: node '%s': its store runs %d movement node%s (%d leaves)\n", nd->name,
                (int)sc->n_nodes, sc->n_nodes == 1 ? "" : "s", (int)sc->n_leaves);
    return 0;
}

/* Scatter stores (rt_scatter.c), rt_classify's scatter step (rt_scatter_planner; user: the
 * context): each running matmul whose output only movement nodes read (reshape, transpose, split,
 * gather by constant ids) gets a store that writes the tree's leaves itself; the tree's nodes
 * become RT_N_SCATTER (they launch nothing), its leaves views of the matmul's output at their
 * offsets, and its other tensors are never made. At 3xtf32 only where the product's 3xtf32
 * decision is the FP32 kernel (the tensor-core kernels have no scatter store): rt_sc_decide, which
 * is why this step lives here and not with the host-only steps of rt_classify. */
static int rt_plan_scatter(void *user, rt_classes *cl, char *err, size_t errlen) {
    rt_ctx *c = user;
    const graph *g = c->g;
    int rc = 0;
    for (int32_t k = 0; k < g->n_nodes && rc == 0; k++) {
        const int32_t id = cl->order[k];
        const graph_node *nd = &g->nodes[id];
        const ops_act act = (ops_act)nd->p.v[PM_ACT];
        /* the store is the matmul kernel's (mm_scatter), whose sigmoid and tanh epilogues run as a
         * pass over the packed output after the product: properties of that kernel, not of ops */
        if (cl->ncls[id] != RT_N_RUN || nd->op != OP_MATMUL || act == OPS_ACT_SIGMOID || act == OPS_ACT_TANH)
            continue;
        rt_scatter sc;
        mm_scatter_node scn;
        memset(&scn, 0, sizeof scn);
        char why[256] = "";
        int r = rt_scatter_find(g, id, cl->live, &sc, why, sizeof why, err, errlen);
        if (r > 0 && c->opts.precision == RT_PRECISION_3XTF32) {
            r = rt_sc_decide(c, cl->isconst, &sc, &scn, why, sizeof why, err, errlen);
            if (r <= 0)
                rt_scatter_free(&sc);
            if (r == 0 && c->opts.verbose)
                fprintf(stderr, "tasc: node '%s': no scatter store: %s\n", nd->name, why);
        }
        if (r < 0)
            rc = -1;
        else if (r > 0)
            rc = rt_sc_add(c, nd, &sc, &scn, cl, err, errlen);
    }
    return rc;
}

/* The tensors running node id reads besides its inputs, into t (at most 3): add, the operand a
 * fused convolution adds in its epilogue (-1 none), and the inputs of the producer it computes
 * (c->fuse_pre); their count. */
static int32_t rt_fused_reads(const rt_ctx *c, int32_t id, int32_t add, int32_t *t) {
    int32_t n = 0;
    if (add >= 0)
        t[n++] = add;
    const int32_t pre = c->fuse_pre ? c->fuse_pre[id] : -1;
    for (int32_t i = 0; pre >= 0 && i < c->g->nodes[pre].n_in && n < 3; i++)
        t[n++] = c->g->nodes[pre].in[i];
    return n;
}

/* mark[root] = 1 for what running node id's fusions read (rt_fused_reads). */
static void rt_fused_mark(const rt_ctx *c, int32_t id, int32_t add, uint8_t *mark) {
    int32_t t[3];
    for (int32_t e = rt_fused_reads(c, id, add, t) - 1; e >= 0; e--)
        mark[rt_root(c, t[e])] = 1;
}

static void rt_node_init(rt_node *rn, const rt_ctx *c, int32_t id) {
    const graph *g = c->g;
    const graph_node *nd = &g->nodes[id];
    memset(rn, 0, sizeof *rn);
    rn->id = id;
    for (int32_t k = 0; k < nd->n_in; k++)
        rn->in_sh[k] = g->tensors[nd->in[k]].shape;
    for (int32_t k = 0; k < nd->n_out; k++)
        rn->out_sh[k] = g->tensors[nd->out[k]].shape;
    rn->sig.op = nd->op;
    rn->sig.p = &nd->p;
    rn->sig.n_in = nd->n_in;
    rn->sig.n_out = nd->n_out;
    rn->sig.in = rn->in_sh;
    rn->sig.out = rn->out_sh;
    rn->fuse_add = -1;
    rn->fuse_pre = c->fuse_pre ? c->fuse_pre[id] : -1; /* a running node's (rt_fuse.c) */
}

/* What rt_plan's phases hand each other. */
typedef struct {
    int32_t *order; /* nodes in topological order */
    uint8_t *live;  /* per node: its results reach a graph output */
    rt_classes cl;  /* per node: its class (rt_classify), and its outputs' storage */
    int32_t *step;  /* per node: its launch's place in a run, -1 none */
    int32_t n_steps;
} rt_planning;

/* The nodes in order and which of them matter; a graph with a live node the device cannot run is
 * refused here, before any planning work. */
static int rt_plan_begin(rt_ctx *c, rt_planning *P, char *err, size_t errlen) {
    const graph *g = c->g;
    const int32_t nn = g->n_nodes;
    P->order = malloc(((size_t)nn + 1) * sizeof *P->order);
    P->live = calloc((size_t)nn + 1, 1);
    P->step = malloc(((size_t)nn + 1) * sizeof *P->step);
    c->dev = calloc((size_t)g->n_tensors + 1, sizeof *c->dev);
    if (!P->order || !P->live || !P->step || !c->dev)
        return base_fail(err, errlen, "out of memory planning the graph");
    if (graph_topo_order(g, P->order, err, errlen) < 0 || rt_live_nodes(g, P->order, P->live) < 0)
        return -1;
    for (int32_t k = 0; k < nn; k++) {
        const graph_node *nd = &g->nodes[P->order[k]];
        if (P->live[P->order[k]] && !ops_cuda[nd->op])
            return base_fail(err, errlen, "node '%s': op %s has no CUDA implementation", nd->name,
                             ops_table[nd->op].name);
    }
    if (rt_classes_init(&P->cl, g, P->order, P->live) < 0)
        return base_fail(err, errlen, "out of memory planning the graph");
    P->cl.no_fold = c->opts.no_fold;
    P->cl.no_scatter = c->opts.no_scatter;
    P->cl.no_fuse = c->opts.no_fuse;
    P->cl.verbose = c->opts.verbose;
    return 0;
}

/* The classification's results the context keeps for its life: every tensor's storage as far as
 * nodes decide it, the producer fusions (rt_node.fuse_pre, node checks), the counts rt_info gives. */
static void rt_plan_keep_classes(rt_ctx *c, rt_classes *cl) {
    c->tclass = cl->tclass;
    c->alias_of = cl->alias_of;
    c->alias_off = cl->alias_off;
    c->fuse_pre = cl->fuse_pre;
    cl->tclass = NULL;
    cl->alias_of = NULL;
    cl->alias_off = NULL;
    cl->fuse_pre = NULL;
    c->n_dead = cl->n_dead;
    c->n_alias = cl->n_alias;
    c->n_fused = cl->n_fused;
}

/* Each running node's step (its launch's place in a run), and the storage of the tensors no node
 * makes: graph inputs persist (repeated runs read them); a weight persists where a folded node, or
 * a node of a run (its inputs, through views, and what its fusions read), reads it, or it is a
 * graph output; the other weights are never uploaded. */
static int rt_plan_steps(rt_ctx *c, rt_planning *P, char *err, size_t errlen) {
    const graph *g = c->g;
    const uint8_t *ncls = P->cl.ncls;
    uint8_t *needed = calloc((size_t)g->n_tensors + 1, 1);
    if (!needed)
        return base_fail(err, errlen, "out of memory planning the graph");
    P->n_steps = 0;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const int32_t id = P->order[k];
        const graph_node *nd = &g->nodes[id];
        P->step[id] = -1;
        if (ncls[id] == RT_N_FOLD)
            for (int32_t i = 0; i < nd->n_in; i++)
                needed[nd->in[i]] = 1;
        if (ncls[id] != RT_N_RUN && ncls[id] != RT_N_VIEW && ncls[id] != RT_N_CVIEW)
            continue; /* folded, dead, or run by another node */
        for (int32_t i = 0; i < nd->n_in; i++)
            needed[rt_root(c, nd->in[i])] = 1;
        rt_fused_mark(c, id, P->cl.fuse_add[id], needed); /* read by a fused epilogue or for a fused producer */
        if (ncls[id] == RT_N_RUN)
            P->step[id] = P->n_steps++;
    }
    for (int32_t i = 0; i < g->n_inputs; i++)
        c->tclass[g->inputs[i]] = RT_T_PERSIST;
    for (int32_t j = 0; j < g->n_outputs; j++)
        needed[rt_root(c, g->outputs[j])] = 1;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == GRAPH_T_WEIGHT && needed[t])
            c->tclass[t] = RT_T_PERSIST;
    free(needed);
    return 0;
}

/* Lifetimes of the arena's buffers, in steps: from the first step writing one (a concat view's
 * buffer: its first writer's) to the last reading it (through its aliases, and what fusions
 * read); a graph output's lives to the end. */
static void rt_plan_lifetimes(const rt_ctx *c, const rt_planning *P, int32_t *first, int32_t *last) {
    const graph *g = c->g;
    for (int32_t t = 0; t < g->n_tensors; t++)
        first[t] = last[t] = -1;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const int32_t id = P->order[k], s = P->step[id];
        if (s < 0)
            continue;
        const graph_node *nd = &g->nodes[id];
        for (int32_t o = 0; o < nd->n_out; o++) {
            const int32_t r = rt_root(c, nd->out[o]);
            first[r] = first[r] < 0 ? s : first[r];
            last[r] = s > last[r] ? s : last[r];
        }
        int32_t ext[3];
        const int32_t ne = rt_fused_reads(c, id, P->cl.fuse_add[id], ext);
        for (int32_t i = 0; i < nd->n_in + ne; i++) {
            const int32_t r = rt_root(c, i < nd->n_in ? nd->in[i] : ext[i - nd->n_in]);
            if (c->tclass[r] == RT_T_ARENA && s > last[r])
                last[r] = s;
        }
    }
    for (int32_t j = 0; j < g->n_outputs; j++) {
        const int32_t r = rt_root(c, g->outputs[j]);
        if (c->tclass[r] == RT_T_ARENA)
            last[r] = P->n_steps;
    }
}

/* The arena: every RT_T_ARENA buffer placed by rt_plan_arena from its lifetime; c->dev holds
 * offsets until rt_alloc makes the arena. */
static int rt_plan_memory(rt_ctx *c, const rt_planning *P, char *err, size_t errlen) {
    const int32_t nt = c->g->n_tensors;
    int32_t *first = malloc(((size_t)nt + 1) * sizeof *first), *last = malloc(((size_t)nt + 1) * sizeof *last);
    rt_span *spans = malloc(((size_t)nt + 1) * sizeof *spans);
    int64_t *offs = malloc(((size_t)nt + 1) * sizeof *offs);
    int32_t *which = malloc(((size_t)nt + 1) * sizeof *which);
    int rc = 0;
    if (!first || !last || !spans || !offs || !which) {
        rc = base_fail(err, errlen, "out of memory planning the graph");
    } else {
        rt_plan_lifetimes(c, P, first, last);
        int32_t ns = 0;
        for (int32_t t = 0; t < nt; t++)
            if (c->tclass[t] == RT_T_ARENA) {
                spans[ns].bytes = rt_buf_bytes(c, t);
                spans[ns].first = first[t];
                spans[ns].last = last[t];
                c->unplanned_bytes += spans[ns].bytes;
                which[ns++] = t;
            }
        c->arena_bytes = rt_plan_arena(ns, spans, RT_ALIGN, offs);
        for (int32_t q = 0; q < ns; q++)
            c->dev[which[q]] = (float *)(uintptr_t)offs[q]; /* an offset until the arena exists */
    }
    free(first);
    free(last);
    free(spans);
    free(offs);
    free(which);
    return rc;
}

/* The launch lists: the folded nodes (run once at setup) and the nodes of every run, each in
 * topological order, with what the planner decided for each (fusions, scatter store). */
static int rt_plan_lists(rt_ctx *c, const rt_planning *P, char *err, size_t errlen) {
    c->fold = calloc((size_t)P->cl.n_fold + 1, sizeof *c->fold);
    c->run = calloc((size_t)P->n_steps + 1, sizeof *c->run);
    if (!c->fold || !c->run)
        return base_fail(err, errlen, "out of memory planning the graph");
    for (int32_t k = 0; k < c->g->n_nodes; k++) {
        const int32_t id = P->order[k];
        if (P->cl.ncls[id] == RT_N_FOLD) {
            rt_node_init(&c->fold[c->n_fold++], c, id);
        } else if (P->step[id] >= 0) {
            rt_node *rn = &c->run[c->n_run++];
            rt_node_init(rn, c, id);
            rn->fuse_add = P->cl.fuse_add[id];
            rn->fuse_act = P->cl.fuse_act[id];
            rn->sc = rt_sc_of_node(c, id);
        }
    }
    return 0;
}

/* Plans a graph's runs: each node's class, decided once (rt_classify: dead, folded, run by a
 * scatter store or a fusion, a view, or a launch), then from the classes the launch steps and
 * which inputs and weights persist (rt_plan_steps), the arena (rt_plan_memory), and the launch
 * lists (rt_plan_lists). */
static int rt_plan(rt_ctx *c, char *err, size_t errlen) {
    rt_planning P;
    memset(&P, 0, sizeof P);
    int rc = -1;
    if (rt_plan_begin(c, &P, err, errlen) < 0 || rt_classify(&P.cl, rt_plan_scatter, c, err, errlen) < 0)
        goto done;
    rt_plan_keep_classes(c, &P.cl);
    if (rt_plan_steps(c, &P, err, errlen) < 0 || rt_plan_memory(c, &P, err, errlen) < 0 ||
        rt_plan_lists(c, &P, err, errlen) < 0)
        goto done;
    rc = 0;
done:
    rt_classes_free(&P.cl);
    free(P.order);
    free(P.live);
    free(P.step);
    return rc;
}

/* --- memory --------------------------------------------------------------------------------- */

/* Host to device, ordered on the context's stream (which does not synchronise with the legacy
 * default stream that a plain cudaMemcpy uses) and complete on return. */
static void rt_upload(rt_ctx *c, void *dst, const void *src, int64_t bytes) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyHostToDevice, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
}

static void *rt_dmalloc(int64_t bytes, const char *what, char *err, size_t errlen) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)(bytes > 0 ? bytes : 1));
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        base_fail(err, errlen, "cannot allocate %.1f MiB of device memory for %s: %s", (double)bytes / 1048576.0, what,
               cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void rt_resolve(rt_ctx *c, rt_node *rn) {
    const graph_node *nd = &c->g->nodes[rn->id];
    for (int32_t k = 0; k < nd->n_in; k++)
        rn->in[k] = rt_dev(c, nd->in[k]);
    if (rn->fuse_pre >= 0) /* input 0 is never made: the producer's input 0 instead */
        rn->in[0] = rt_dev(c, c->g->nodes[rn->fuse_pre].in[0]);
    for (int32_t k = 0; k < nd->n_out; k++)
        rn->out[k] = rt_dev(c, nd->out[k]);
}

/* A view's device tables at d (its 3xtf32 decision, set when planned, is kept). */
static void rt_sc_view(mm_scatter *v, const int64_t *d, int64_t nb, int64_t m, int64_t n, int vec4) {
    v->off_b = d;
    v->off_m = d + nb;
    v->mul = d + nb + m;
    v->off_n = d + nb + m + n;
    v->vec4 = vec4;
}

/* The scatter stores' tables, in one device allocation (persistent), into their mm_scatter_node. */
static int rt_upload_scatter(rt_ctx *c, char *err, size_t errlen) {
    int64_t total = 0;
    for (int32_t i = 0; i < c->n_sc; i++) {
        const rt_scatter *sc = &c->sc[i];
        total += (sc->batched ? sc->nb + sc->m + 2 * sc->n : 0) +
                 (sc->rows_nb ? sc->rows_nb + sc->rows_m + 2 * sc->n : 0);
    }
    if (c->n_sc == 0)
        return 0;
    if (!(c->sc_dev = rt_dmalloc(total * (int64_t)sizeof(int64_t), "the scatter tables", err, errlen)))
        return -1;
    c->persist_bytes += total * (int64_t)sizeof(int64_t);
    int64_t *d = c->sc_dev;
    for (int32_t i = 0; i < c->n_sc; i++) {
        const rt_scatter *sc = &c->sc[i];
        const int64_t n = sc->n, *h = sc->tab;
        if (sc->batched) {
            const int64_t nb = sc->nb, m = sc->m, len = nb + m + 2 * n;
            rt_upload(c, d, h, len * (int64_t)sizeof(int64_t));
            rt_sc_view(&c->scn[i].batched, d, nb, m, n, sc->vec4);
            d += len;
            h += len;
        }
        if (sc->rows_nb) {
            const int64_t nb = sc->rows_nb, m = sc->rows_m, len = nb + m + 2 * n;
            rt_upload(c, d, h, len * (int64_t)sizeof(int64_t));
            rt_sc_view(&c->scn[i].rows, d, nb, m, n, sc->rows_vec4);
            c->scn[i].rows_nb = nb;
            c->scn[i].rows_m = m;
            d += len;
        }
    }
    return 0;
}

/* Allocate the arena and the persistent tensors, upload weights and the default inputs. */
static int rt_alloc(rt_ctx *c, char *err, size_t errlen) {
    graph *g = c->g;
    if (c->arena_bytes > 0 && !(c->arena = rt_dmalloc(c->arena_bytes, "the activation arena", err, errlen)))
        return -1;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (c->tclass[t] == RT_T_ARENA) {
            c->dev[t] = (float *)(c->arena + (uintptr_t)c->dev[t]);
        } else if (c->tclass[t] == RT_T_PERSIST) {
            int64_t b = rt_tensor_bytes(g, t);
            if (!(c->dev[t] = rt_dmalloc(b, g->tensors[t].name, err, errlen)))
                return -1;
            if (g->tensors[t].kind == GRAPH_T_INPUT)
                c->input_bytes += b;
            else
                c->persist_bytes += b;
        }
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (c->tclass[t] == RT_T_ALIAS)
            c->dev[t] = c->dev[c->alias_of[t]] + c->alias_off[t];
    if (rt_upload_scatter(c, err, errlen) < 0)
        return -1;
    /* weights, through one host buffer of the largest */
    int64_t maxb = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (c->tclass[t] == RT_T_PERSIST && g->tensors[t].kind == GRAPH_T_WEIGHT && rt_tensor_bytes(g, t) > maxb)
            maxb = rt_tensor_bytes(g, t);
    if (maxb > 0) {
        float *host = malloc((size_t)maxb);
        if (!host)
            return base_fail(err, errlen, "out of memory staging weights");
        for (int32_t t = 0; t < g->n_tensors; t++) {
            if (c->tclass[t] != RT_T_PERSIST || g->tensors[t].kind != GRAPH_T_WEIGHT)
                continue;
            if (graph_weight_values(g, t, host, err, errlen) < 0) {
                free(host);
                return -1;
            }
            rt_upload(c, c->dev[t], host, rt_tensor_bytes(g, t));
        }
        free(host);
    }
    float **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    if (!in)
        return base_fail(err, errlen, "out of memory making inputs");
    int rc = rt_make_inputs(g, 0, in, err, errlen);
    for (int32_t i = 0; rc == 0 && i < g->n_inputs; i++)
        if (c->dev[g->inputs[i]])
            rt_upload(c, c->dev[g->inputs[i]], in[i], rt_tensor_bytes(g, g->inputs[i]));
    for (int32_t i = 0; i < g->n_inputs; i++)
        free(in[i]);
    free(in);
    if (rc < 0)
        return -1;
    for (int32_t k = 0; k < c->n_fold; k++)
        rt_resolve(c, &c->fold[k]);
    for (int32_t k = 0; k < c->n_run; k++)
        rt_resolve(c, &c->run[k]);
    return 0;
}

/* --- running nodes -------------------------------------------------------------------------- */

/* The product of a scatter store's matmul, in its own layout, from the buffer its store wrote. */
static int rt_check_gather(rt_ctx *c, const rt_scatter *sc, const float *buf, float *host) {
    float *raw = malloc((size_t)sc->buf_elems * sizeof(float));
    if (!raw)
        return -1;
    CUDA_CHECK(cudaMemcpyAsync(raw, buf, (size_t)sc->buf_elems * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    const int64_t n = sc->nb * sc->m * sc->n;
    for (int64_t e = 0; e < n; e++)
        host[e] = raw[sc->dst[e]];
    free(raw);
    return 0;
}

/* A fused convolution's reference (rt_fuse.c): ref = act(ref + the added tensor), as the add
 * and relu nodes compute it. -1 when out of memory. */
static int rt_check_fused(rt_ctx *c, const rt_node *rn, float *ref) {
    const int64_t n = ops_shape_numel(&rn->out_sh[0]);
    float *add = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!add)
        return -1;
    CUDA_CHECK(cudaMemcpyAsync(add, rt_dev(c, rn->fuse_add), (size_t)n * sizeof(float), cudaMemcpyDeviceToHost,
                               c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    for (int64_t i = 0; i < n; i++)
        ref[i] = ops_act_apply((ops_act)rn->fuse_act, ref[i] + add[i]);
    free(add);
    return 0;
}

/* A node computing its producer (rt_fuse.c): *x, the producer's input 0 as downloaded,
 * becomes the producer's CPU result over it and its other input, the value the unfused pair
 * gives the node. -1 when out of memory. */
static int rt_check_prefused(rt_ctx *c, const rt_node *rn, const float **x) {
    const graph *g = c->g;
    const graph_node *pn = &g->nodes[rn->fuse_pre];
    ops_shape sh[2] = {g->tensors[pn->in[0]].shape, g->tensors[pn->in[1]].shape};
    const ops_shape *os = &g->tensors[pn->out[0]].shape;
    const int64_t nb = ops_shape_numel(&sh[1]), ny = ops_shape_numel(os);
    float *b = malloc((size_t)(nb > 0 ? nb : 1) * sizeof(float));
    float *y = malloc((size_t)(ny > 0 ? ny : 1) * sizeof(float));
    if (!b || !y) {
        free(b);
        free(y);
        return -1;
    }
    CUDA_CHECK(cudaMemcpyAsync(b, rt_dev(c, pn->in[1]), (size_t)nb * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    const ops_sig sig = {.op = pn->op, .p = &pn->p, .n_in = 2, .n_out = 1, .in = sh, .out = os};
    const float *pin[2] = {*x, b};
    ops_table[pn->op].cpu(&sig, pin, &y);
    free(b);
    free((void *)*x);
    *x = y;
    return 0;
}

/* Setup-phase check of one node against its CPU reference on the same (downloaded) inputs. */
static int rt_check_node(rt_ctx *c, const rt_node *rn, char *err, size_t errlen) {
    const graph_node *nd = &c->g->nodes[rn->id];
    const float *hin[OPS_MAX_INPUTS] = {0};
    float *hgpu[OPS_MAX_OUTPUTS] = {0}, *href[OPS_MAX_OUTPUTS] = {0};
    int rc = -1;
    for (int32_t k = 0; k < nd->n_in; k++) {
        int64_t n = ops_shape_numel(&rn->in_sh[k]);
        float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        hin[k] = h;
        if (!h)
            goto oom;
        CUDA_CHECK(cudaMemcpyAsync(h, rn->in[k], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
    }
    for (int32_t k = 0; k < nd->n_out; k++) {
        int64_t n = ops_shape_numel(&rn->out_sh[k]);
        hgpu[k] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        href[k] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        if (!hgpu[k] || !href[k])
            goto oom;
        if (rn->sc) /* scattered: the product is read back through the placement */
            continue;
        CUDA_CHECK(cudaMemcpyAsync(hgpu[k], rn->out[k], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
    }
    if (rn->sc && rt_check_gather(c, &c->sc[rn->sc - 1], rn->out[0], hgpu[0]) < 0)
        goto oom;
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    if (rn->fuse_pre >= 0 && rt_check_prefused(c, rn, &hin[0]) < 0)
        goto oom;
    ops_table[nd->op].cpu(&rn->sig, hin, href);
    if (rn->fuse_add >= 0 && rt_check_fused(c, rn, href[0]) < 0)
        goto oom;
    for (int32_t k = 0; k < nd->n_out; k++) {
        exec_diff d = exec_compare(hgpu[k], href[k], ops_shape_numel(&rn->out_sh[k]));
        if (d.rel_l2 > c->check_worst || (isnan(d.rel_l2) && !isnan(c->check_worst))) {
            c->check_worst = d.rel_l2;
            snprintf(c->check_worst_node, sizeof c->check_worst_node, "%s", nd->name);
        }
        if (!(d.rel_l2 <= c->opts.check_tol)) {
            c->check_failed++;
            fprintf(stderr, "tasc: node check: '%s' (%s) output %d: rel L2 %.3g, max abs %.3g over tolerance %g\n",
                    nd->name, ops_table[nd->op].name, (int)k, d.rel_l2, d.max_abs, c->opts.check_tol);
        }
    }
    rc = 0;
    goto done;
oom:
    base_fail(err, errlen, "out of memory checking node '%s'", nd->name);
done:
    for (int32_t k = 0; k < nd->n_in; k++)
        free((void *)hin[k]);
    for (int32_t k = 0; k < nd->n_out; k++) {
        free(hgpu[k]);
        free(href[k]);
    }
    return rc;
}

static int rt_exec_node(rt_ctx *c, rt_node *rn, char *err, size_t errlen) {
    /* the kernels read the precision process-wide (mm_precision_get): set it per node, so that
     * contexts of different precisions can run side by side (a captured graph keeps its kernels) */
    mm_precision_set(c->opts.precision == RT_PRECISION_3XTF32 ? MM_PREC_3XTF32 : MM_PREC_FP32);
    const graph_node *nd = &c->g->nodes[rn->id];
    c->err[0] = '\0';
    ops_cuda_env env = {.stream = c->stream, .cudnn = c->cudnn, .setup = c->phase == RT_PHASE_SETUP,
                        .verbose = c->opts.verbose, .node = nd->name, .state = rn->state,
                        .state_free = rn->state_free, .ws_limit = c->ws_limit, .workspace = rt_env_workspace,
                        .workspace_search = rt_env_workspace_search, .owner = c, .err = c->err,
                        .errlen = sizeof c->err, .fuse_add = rn->fuse_add >= 0 ? rt_dev(c, rn->fuse_add) : NULL,
                        .fuse_act = rn->fuse_act};
    if (rn->fuse_pre >= 0) { /* the producer's other operand: smul's scale, or the add's other term */
        const graph_node *pn = &c->g->nodes[rn->fuse_pre];
        if (ops_table[pn->op].epi == OPS_EPI_SCALE)
            env.fuse_scale = rt_dev(c, pn->in[1]);
        else
            env.fuse_in2 = rt_dev(c, pn->in[1]);
    }
    mm_scatter_node_set(rn->sc ? &c->scn[rn->sc - 1] : NULL); /* read by the matmul node, as the precision */
    rt_presplit_node(c, rn); /* 3xtf32: its weights' TF32 parts, split once (rt_presplit.c) */
    int r = ops_cuda[nd->op](&env, &rn->sig, rn->in, rn->out);
    mm_scatter_node_set(NULL);
    rt_presplit_node(c, NULL);
    rn->state = env.state;
    rn->state_free = env.state_free;
    if (r < 0)
        return base_fail(err, errlen, "node '%s' (%s): %s", nd->name, ops_table[nd->op].name, c->err);
    if (c->phase == RT_PHASE_SETUP) {
        /* attribute any device fault to this node */
        cudaError_t e = cudaStreamSynchronize(c->stream);
        if (e == cudaSuccess)
            e = cudaGetLastError();
        if (e != cudaSuccess) {
            base_die("node '%s' (%s): CUDA error: %s (%s)", nd->name, ops_table[nd->op].name, cudaGetErrorString(e),
                     cudaGetErrorName(e));
        }
        if (c->opts.check_tol > 0 && rt_check_node(c, rn, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Free persistent tensors that only folded nodes read (weights folded into others). */
static void rt_drop_folded_inputs(rt_ctx *c) {
    graph *g = c->g;
    uint8_t *keep = calloc((size_t)g->n_tensors + 1, 1);
    if (!keep)
        return; /* keeping them is always correct */
    for (int32_t k = 0; k < c->n_run; k++) {
        const graph_node *nd = &g->nodes[c->run[k].id];
        for (int32_t i = 0; i < nd->n_in; i++)
            keep[rt_root(c, nd->in[i])] = 1;
        rt_fused_mark(c, c->run[k].id, c->run[k].fuse_add, keep); /* and what its fusions read: a scale */
    }
    for (int32_t j = 0; j < g->n_outputs; j++)
        keep[rt_root(c, g->outputs[j])] = 1;
    for (int32_t i = 0; i < g->n_inputs; i++)
        keep[g->inputs[i]] = 1;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (c->tclass[t] == RT_T_PERSIST && !keep[t] && c->dev[t]) {
            CUDA_CHECK(cudaFree(c->dev[t]));
            c->persist_bytes -= rt_tensor_bytes(g, t);
            c->dev[t] = NULL;
            c->tclass[t] = RT_T_NONE;
        }
    free(keep);
}

/* Every node of a run launched on the context's stream, in order, then waited for; 0, or -1. */
static int rt_exec_run(rt_ctx *c, char *err, size_t errlen) {
    for (int32_t k = 0; k < c->n_run; k++)
        if (rt_exec_node(c, &c->run[k], err, errlen) < 0)
            return -1;
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return 0;
}

static int rt_setup(rt_ctx *c, char *err, size_t errlen) {
    c->phase = RT_PHASE_SETUP;
    for (int32_t k = 0; k < c->n_fold; k++)
        if (rt_exec_node(c, &c->fold[k], err, errlen) < 0)
            return -1;
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    rt_drop_folded_inputs(c);
    if (rt_presplit_setup(c, err, errlen) < 0) /* folded values exist now; the setup run uses the parts */
        return -1;
    if (rt_exec_run(c, err, errlen) < 0)
        return -1;
    if (c->ws_size > c->ws_need) { /* searches used more than any chosen algorithm needs */
        CUDA_CHECK(cudaFree(c->ws));
        c->ws = NULL;
        c->ws_size = 0;
        if (c->ws_need > 0) {
            if (!(c->ws = rt_dmalloc((int64_t)c->ws_need, "the workspace", err, errlen)))
                return -1;
            c->ws_size = c->ws_need;
        }
    }
    c->phase = RT_PHASE_RUN;
    if (c->opts.no_graph) {
        c->graph_state = -1;
        snprintf(c->graph_note, sizeof c->graph_note, "off by option");
    }
    return 0;
}

/* Capture every node of a run into one CUDA graph; on failure, note why and run by launches. */
static void rt_capture(rt_ctx *c) {
    cudaGraph_t gr = NULL;
    char why[RT_ERR_LEN] = "";
    /* Held from before the first captured launch: a workspace that grows during the capture then
     * keeps its old memory, which the nodes captured before it point into (mm_dbuf_drop). */
    mm_workspace_hold();
    cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        snprintf(why, sizeof why, "begin capture: %s", cudaGetErrorString(e));
        goto fail;
    }
    int32_t reps = c->opts.capture_repeat > 1 ? c->opts.capture_repeat : 1;
    for (int32_t r = 0; r < reps && !why[0]; r++)
        for (int32_t k = 0; k < c->n_run; k++)
            if (rt_exec_node(c, &c->run[k], why, sizeof why) < 0)
                break;
    e = cudaStreamEndCapture(c->stream, &gr);
    if (!why[0] && e != cudaSuccess)
        snprintf(why, sizeof why, "end capture: %s", cudaGetErrorString(e));
    if (why[0])
        goto fail;
    e = cudaGraphInstantiate(&c->exec, gr, 0);
    CUDA_CHECK(cudaGraphDestroy(gr));
    gr = NULL;
    if (e != cudaSuccess) {
        snprintf(why, sizeof why, "instantiate: %s", cudaGetErrorString(e));
        c->exec = NULL;
        goto fail;
    }
    CUDA_CHECK(cudaGraphUpload(c->exec, c->stream));
    c->graph_state = 1; /* the hold stays while the graph exists: another context must not free its workspaces */
    return;
fail:
    if (gr)
        cudaGraphDestroy(gr);
    (void)cudaGetLastError();
    mm_workspace_unhold();
    c->graph_state = -1;
    snprintf(c->graph_note, sizeof c->graph_note, "capture failed: %.140s", why);
    if (c->opts.verbose)
        fprintf(stderr, "tasc: CUDA graph %s; running node by node\n", c->graph_note);
}

/* The setup run, with first-use tuning of the hand-written matmul as opts.autotune asks (rt.h);
 * tuning happens here and only here, since a tuning run cannot be captured into a CUDA graph. */
static int rt_setup_tuned(rt_ctx *c, char *err, size_t errlen) {
    const int mode = c->opts.autotune;
    const int on = mode == RT_AUTOTUNE_ON && !mm_autotune_refused();
    mm_autotune_set(on);
    ops_cuda_conv_stats *cs = &c->conv;
    ops_cuda_conv_stats_take(cs); /* from zero */
    int rc = rt_setup(c, err, errlen);
    ops_cuda_conv_cache_flush(); /* this setup's new convolution choices, one write of the file */
    mm_autotune_stats st;
    mm_autotune_get_stats(&st);
    mm_autotune_set(0);
    /* Every tuning let go of the matmul workspaces (mm_workspace_release), so they hold only what
     * the nodes after the last tuned one needed. One more run, without tuning, grows them to what
     * every node needs, as a setup without tuning leaves them, before the capture records their
     * addresses. */
    if (rc == 0 && st.tuned)
        rc = rt_exec_run(c, err, errlen);
    ops_cuda_conv_stats_take(cs);
    char path[4096];
    if (rc == 0 && cs->measured)
        fprintf(stderr, "tasc: measured the paths of %d convolution configuration%s in %.1f s (%s%s)\n",
                (int)cs->measured, cs->measured == 1 ? "" : "s", cs->measure_s,
                ops_cuda_conv_cache_path(path, sizeof path)[0] ? "choices cached in " : "not cached",
                path);
    st.tuned += c->sc_tune.tuned; /* the scatter stores' 3xtf32 decisions, made when planned */
    st.tune_s += c->sc_tune.tune_s;
    st.untuned += c->sc_tune.untuned;
    if (rc < 0 || mode == RT_AUTOTUNE_OFF)
        return rc;
    if (st.tuned)
        fprintf(stderr, "tasc: tuned %d matmul shape%s on first use in %.1f s (cache %s)\n", (int)st.tuned,
                st.tuned == 1 ? "" : "s", st.tune_s, mm_table_cache_path(mm_device_key(), path, sizeof path));
    if (!on && st.untuned)
        fprintf(stderr,
                "tasc: %d matmul shape%s without a tuning entry for %s ran on the heuristic (autotuning off: "
                "--no-autotune or TASC_NO_AUTOTUNE=1); run without it to tune them on first use, or list them with "
                "TASC_MM_MISSES=FILE for `tasc kernels tune`\n",
                (int)st.untuned, st.untuned == 1 ? "" : "s", mm_device_name());
    return rc;
}

/* --- public --------------------------------------------------------------------------------- */

rt_ctx *rt_ctx_new(const graph *g, const rt_opts *o, char *err, size_t errlen) {
    rt_init_once();
    if (err && errlen)
        err[0] = '\0';
    if (!rt_available(err, errlen))
        return NULL;
    if (graph_validate(g, err, errlen) < 0)
        return NULL;
    rt_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        base_fail(err, errlen, "out of memory");
        return NULL;
    }
    if (o)
        c->opts = *o;
    if (c->opts.precision != RT_PRECISION_FP32 && c->opts.precision != RT_PRECISION_3XTF32) {
        base_fail(err, errlen, "unknown precision %d (0: fp32, 1: 3xtf32)", c->opts.precision);
        free(c);
        return NULL;
    }
    int64_t lim = c->opts.workspace_limit;
    if (lim <= 0) {
        const char *env = getenv("TASC_RT_WORKSPACE_MB");
        char *end = NULL;
        long long mb = env && *env ? strtoll(env, &end, 10) : RT_DEFAULT_WORKSPACE_MB;
        if (env && *env && (*end || mb < 0 || mb > (1LL << 20))) {
            base_fail(err, errlen, "TASC_RT_WORKSPACE_MB='%s' is not a number of MiB in [0, 1048576]", env);
            free(c);
            return NULL;
        }
        lim = (int64_t)mb << 20;
    }
    c->ws_limit = (size_t)lim;
    const char *nosc = getenv("TASC_NO_SCATTER"), *nofu = getenv("TASC_NO_FUSE");
    if (nosc && *nosc && strcmp(nosc, "0") != 0)
        c->opts.no_scatter = 1;
    if (nofu && *nofu && strcmp(nofu, "0") != 0)
        c->opts.no_fuse = 1;
    c->check_worst = 0.0;
    if (!(c->g = graph_clone(g))) {
        base_fail(err, errlen, "out of memory copying the graph");
        free(c);
        return NULL;
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CUDNN_CHECK(cudnnCreate(&c->cudnn));
    CUDNN_CHECK(cudnnSetStream(c->cudnn, c->stream));
    CUDA_CHECK(cudaEventCreate(&c->ev0));
    CUDA_CHECK(cudaEventCreate(&c->ev1));
    if (rt_plan(c, err, errlen) < 0 || rt_alloc(c, err, errlen) < 0 || rt_setup_tuned(c, err, errlen) < 0) {
        rt_ctx_free(c);
        return NULL;
    }
    return c;
}

static void rt_nodes_free(rt_node *nodes, int32_t n) {
    for (int32_t k = 0; k < n; k++)
        if (nodes[k].state && nodes[k].state_free)
            nodes[k].state_free(nodes[k].state);
    free(nodes);
}

void rt_ctx_free(rt_ctx *c) {
    if (!c)
        return;
    if (c->stream)
        CUDA_CHECK(cudaStreamSynchronize(c->stream));
    rt_nodes_free(c->fold, c->n_fold);
    rt_nodes_free(c->run, c->n_run);
    rt_presplit_free(c);
    if (c->exec) {
        CUDA_CHECK(cudaGraphExecDestroy(c->exec));
        mm_workspace_unhold();
    }
    if (c->dev && c->tclass)
        for (int32_t t = 0; t < c->g->n_tensors; t++)
            if (c->tclass[t] == RT_T_PERSIST && c->dev[t])
                CUDA_CHECK(cudaFree(c->dev[t]));
    if (c->arena)
        CUDA_CHECK(cudaFree(c->arena));
    if (c->ws)
        CUDA_CHECK(cudaFree(c->ws));
    if (c->sc_dev)
        CUDA_CHECK(cudaFree(c->sc_dev));
    for (int32_t i = 0; i < c->n_sc; i++)
        rt_scatter_free(&c->sc[i]);
    free(c->sc);
    free(c->scn);
    if (c->ev0)
        CUDA_CHECK(cudaEventDestroy(c->ev0));
    if (c->ev1)
        CUDA_CHECK(cudaEventDestroy(c->ev1));
    if (c->cudnn)
        CUDNN_CHECK(cudnnDestroy(c->cudnn));
    if (c->stream)
        CUDA_CHECK(cudaStreamDestroy(c->stream));
    free(c->fuse_pre);
    free(c->tclass);
    free(c->alias_of);
    free(c->alias_off);
    free(c->dev);
    graph_free(c->g);
    free(c);
}

int rt_set_input(rt_ctx *c, int32_t i, const float *host, char *err, size_t errlen) {
    if (i < 0 || i >= c->g->n_inputs)
        return base_fail(err, errlen, "no graph input %d (the graph has %d)", (int)i, (int)c->g->n_inputs);
    int32_t t = c->g->inputs[i];
    if (!c->dev[t])
        return 0; /* no output depends on it */
    rt_upload(c, c->dev[t], host, rt_tensor_bytes(c->g, t));
    return 0;
}

int rt_run(rt_ctx *c, char *err, size_t errlen) {
    if (c->graph_state == 0)
        rt_capture(c);
    if (c->graph_state == 1) {
        cudaError_t e = cudaGraphLaunch(c->exec, c->stream);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return base_fail(err, errlen, "graph launch: %s", cudaGetErrorString(e));
        }
        return 0;
    }
    for (int32_t k = 0; k < c->n_run; k++)
        if (rt_exec_node(c, &c->run[k], err, errlen) < 0)
            return -1;
    return 0;
}

int rt_get_output(rt_ctx *c, int32_t j, float *host, char *err, size_t errlen) {
    if (j < 0 || j >= c->g->n_outputs)
        return base_fail(err, errlen, "no graph output %d (the graph has %d)", (int)j, (int)c->g->n_outputs);
    int32_t t = c->g->outputs[j];
    CUDA_CHECK(cudaMemcpyAsync(host, rt_dev(c, t), (size_t)rt_tensor_bytes(c->g, t), cudaMemcpyDeviceToHost,
                               c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return 0;
}

int rt_time(rt_ctx *c, int32_t warmup, int32_t reps, double *ms, char *err, size_t errlen) {
    for (int32_t r = 0; r < warmup; r++)
        if (rt_run(c, err, errlen) < 0)
            return -1;
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    for (int32_t r = 0; r < reps; r++) {
        CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
        if (rt_run(c, err, errlen) < 0)
            return -1;
        CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
        CUDA_CHECK(cudaEventSynchronize(c->ev1));
        float t = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&t, c->ev0, c->ev1));
        ms[r] = t;
    }
    return 0;
}

static int rt_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The nodes of a run captured into one CUDA graph: node `only` repeated `repeat` times (only >= 0),
 * or every node but `skip` once; the median of reps replays after one warm-up, in ms (ms: reps
 * doubles of scratch). NAN where the capture fails (the node then runs by launches elsewhere). */
static double rt_graph_median(rt_ctx *c, int32_t only, int32_t skip, int32_t repeat, int32_t reps, double *ms) {
    cudaGraph_t gr = NULL;
    cudaGraphExec_t ex = NULL;
    char why[RT_ERR_LEN] = "";
    if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
        (void)cudaGetLastError();
        return NAN;
    }
    if (only >= 0)
        for (int32_t r = 0; r < repeat && !why[0]; r++)
            rt_exec_node(c, &c->run[only], why, sizeof why);
    else
        for (int32_t k = 0; k < c->n_run && !why[0]; k++)
            if (k != skip)
                rt_exec_node(c, &c->run[k], why, sizeof why);
    cudaError_t e = cudaStreamEndCapture(c->stream, &gr);
    if (why[0] || e != cudaSuccess || cudaGraphInstantiate(&ex, gr, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        if (gr)
            cudaGraphDestroy(gr);
        return NAN;
    }
    CUDA_CHECK(cudaGraphDestroy(gr));
    CUDA_CHECK(cudaGraphLaunch(ex, c->stream)); /* warm-up */
    for (int32_t r = 0; r < reps; r++) {
        float t = 0.0f;
        CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
        CUDA_CHECK(cudaGraphLaunch(ex, c->stream));
        CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
        CUDA_CHECK(cudaEventSynchronize(c->ev1));
        CUDA_CHECK(cudaEventElapsedTime(&t, c->ev0, c->ev1));
        ms[r] = t;
    }
    CUDA_CHECK(cudaGraphExecDestroy(ex));
    qsort(ms, (size_t)reps, sizeof *ms, rt_cmp_d);
    return ms[reps / 2];
}

/* The profiles' start: reps at least 1, their scratch (NULL after a message), the stream idle. */
static double *rt_profile_begin(rt_ctx *c, int32_t *reps, char *err, size_t errlen) {
    if (*reps < 1)
        *reps = 1;
    double *ms = malloc((size_t)*reps * sizeof *ms);
    if (!ms) {
        base_fail(err, errlen, "out of memory profiling");
        return NULL;
    }
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return ms;
}

int rt_profile(rt_ctx *c, int32_t reps, int32_t *node_id, double *us, char *err, size_t errlen) {
    enum { REPEAT = 10 };
    double *ms = rt_profile_begin(c, &reps, err, errlen);
    if (!ms)
        return -1;
    for (int32_t k = 0; k < c->n_run; k++) {
        node_id[k] = c->run[k].id;
        us[k] = rt_graph_median(c, k, -1, REPEAT, reps, ms) * 1000.0 / REPEAT;
    }
    free(ms);
    return 0;
}

int rt_profile_in_run(rt_ctx *c, int32_t reps, double *us, double *whole_us, char *err, size_t errlen) {
    double *ms = rt_profile_begin(c, &reps, err, errlen);
    if (!ms)
        return -1;
    const double whole = rt_graph_median(c, -1, -1, 1, reps, ms);
    *whole_us = whole * 1000.0;
    for (int32_t k = 0; k < c->n_run; k++)
        us[k] = (whole - rt_graph_median(c, -1, k, 1, reps, ms)) * 1000.0;
    free(ms);
    return 0;
}

void rt_get_info(const rt_ctx *c, rt_info *info) {
    memset(info, 0, sizeof *info);
    info->arena_bytes = c->arena_bytes;
    info->unplanned_bytes = c->unplanned_bytes;
    info->weight_bytes = c->persist_bytes;
    info->input_bytes = c->input_bytes;
    info->workspace_bytes = (int64_t)c->ws_size;
    info->device_bytes = info->arena_bytes + info->weight_bytes + info->input_bytes + info->workspace_bytes;
    info->nodes_run = c->n_run;
    info->nodes_folded = c->n_fold;
    info->nodes_aliased = c->n_alias;
    info->nodes_scattered = c->n_scattered;
    info->nodes_fused = c->n_fused;
    info->scatter_stores = c->n_sc;
    info->nodes_dead = c->n_dead;
    info->graph = c->graph_state == 1;
    snprintf(info->graph_note, sizeof info->graph_note, "%s",
             c->graph_state == 0 ? "not captured yet (first rt_run captures)" : c->graph_note);
    info->check_worst = c->check_worst;
    snprintf(info->check_worst_node, sizeof info->check_worst_node, "%s", c->check_worst_node);
    info->check_failed = c->check_failed;
    info->conv_measured = c->conv.measured;
    info->conv_reused = c->conv.reused;
}
