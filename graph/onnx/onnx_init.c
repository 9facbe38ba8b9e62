/* onnx_init.c: variance-preserving values for the weights --random-weights makes up (initializers
 * whose external data is missing). A weight's values are chosen by the role it plays in the nodes
 * that read it, so that the activations of a deep model stay of order one and a numerical
 * agreement check on it measures the executors, not an amplified rounding error:
 *   a Conv / ConvTranspose kernel, a MatMul or Gemm operand: normal, std sqrt(gain / fan_in), fan_in
 *   the number of products summed per output (Gemm's transA/transB and a Transpose in between
 *   are followed), gain 2 (He: ReLU or none) or that of the SiLU / HardSwish / Tanh applied
 *   next (the op table's ops_act_gain); BatchNormalization scale 1, bias 0, mean 0, var 1; Layer/Instance/Group normalisation
 *   scale 1, bias 0; a bias (Conv, Gemm C, Add, Sub) 0; a Mul/Div factor 1; an embedding table
 *   (Gather data) normal with std 1. Other weights keep the legacy values.
 * Residual networks: a branch added back onto its own input (x + f(x)) would double the variance
 * at every block (2^40 after 40 blocks), so the kernel that ends each such branch is scaled by
 * 1/sqrt(R), R the number of residual additions in the model (as GPT-2 scales its projections):
 * the sum of R branches then grows the variance by about (1 + 1/R)^R <= e. Two kernel-ended
 * values summed where neither is computed from the other (a projection shortcut) get 1/sqrt(2) each.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_init.h"

#define OX_ROLE_DEPTH 4     /* Transpose / Identity steps followed from a weight to its reader */
#define OX_BRANCH_DEPTH 8   /* per-element nodes followed back from an addition to a kernel */
#define OX_BRANCH_VISIT 512 /* nodes searched back from a branch for the addition's other input */

/* The node producing each value name (uthash), for walking the graph backwards. */
typedef struct {
    const char *name; /* borrowed from the model */
    int32_t node;
    UT_hash_handle hh;
} ox_prod;

typedef enum { OX_ROLE_NONE, OX_ROLE_FANIN, OX_ROLE_VALUE, OX_ROLE_STD } ox_role_kind;

typedef struct {
    ox_role_kind kind;
    double x; /* FANIN: the fan-in; VALUE: the value; STD: the standard deviation */
} ox_role;

static int64_t ox_node_int(const Onnx__NodeProto *n, const char *name, int64_t def) {
    for (size_t a = 0; a < n->n_attribute; a++)
        if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, name))
            return n->attribute[a]->i;
    return def;
}

static ox_role ox_mk(ox_role_kind kind, double x) {
    ox_role r = {kind, x};
    return r;
}

static int ox_is_initializer(const Onnx__GraphProto *gp, const char *name) {
    for (size_t k = 0; k < gp->n_initializer; k++)
        if (name && gp->initializer[k]->name && !strcmp(gp->initializer[k]->name, name))
            return 1;
    return 0;
}

/* The activation an ONNX op type is: the op-table op of that ONNX type (ops_desc.onnx) with an
 * activation (ops_desc.act), or OPS_ACT_NONE. */
static ops_act ox_onnx_act(const char *op_type) {
    for (int op = 0; op < OP_COUNT; op++)
        if (ops_table[op].act != OPS_ACT_NONE && ops_table[op].onnx.op && !strcmp(ops_table[op].onnx.op, op_type))
            return ops_table[op].act;
    return OPS_ACT_NONE;
}

/* 1 / E[act(x)^2] for x ~ N(0,1): the gain that keeps the second moment through the activation
 * applied to `name` (a kernel's output, looked at through a BatchNormalization or a constant
 * bias), the op table's ops_act_gain: an activation op by its ONNX type, SiLU as x * Sigmoid(x)
 * (a Sigmoid alone is no activation here: a gate); else He's 2 (ReLU). */
static double ox_act_gain(const Onnx__GraphProto *gp, const char *name, int depth) {
    for (size_t k = 0; name && depth < 3 && k < gp->n_node; k++) {
        const Onnx__NodeProto *m = gp->node[k];
        const char *op = m->op_type ? m->op_type : "";
        if (m->n_input < 1 || !m->input[0] || m->n_output < 1 || !m->output[0])
            continue;
        int at = -1;
        for (size_t i = 0; i < m->n_input && at < 0; i++)
            if (m->input[i] && !strcmp(m->input[i], name))
                at = (int)i;
        if (at < 0)
            continue;
        ops_act act = ox_onnx_act(op);
        if (act == OPS_ACT_SIGMOID) { /* SiLU when a Mul takes both the value and its sigmoid */
            for (size_t j = 0; j < gp->n_node; j++) {
                const Onnx__NodeProto *u = gp->node[j];
                if (u->op_type && !strcmp(u->op_type, "Mul") && u->n_input == 2 && u->input[0] && u->input[1] &&
                    ((!strcmp(u->input[0], name) && !strcmp(u->input[1], m->output[0])) ||
                     (!strcmp(u->input[1], name) && !strcmp(u->input[0], m->output[0]))))
                    return ops_act_gain(OPS_ACT_SILU);
            }
        } else if (act != OPS_ACT_NONE) {
            return ops_act_gain(act);
        }
        if ((!strcmp(op, "BatchNormalization") && at == 0) ||
            (!strcmp(op, "Add") && m->n_input == 2 && ox_is_initializer(gp, m->input[1 - at])))
            return ox_act_gain(gp, m->output[0], depth + 1);
    }
    return 2.0;
}

static ox_role ox_fanin(double f) { return f >= 1.0 ? ox_mk(OX_ROLE_FANIN, f) : ox_mk(OX_ROLE_NONE, 0); }

/* A kernel of node n with fan-in f: FANIN holds 2 f / gain, so that std = sqrt(2 / x) = sqrt(gain / f). */
static ox_role ox_kernel(const Onnx__GraphProto *gp, const Onnx__NodeProto *n, double f) {
    double gain = n->n_output >= 1 ? ox_act_gain(gp, n->output[0], 0) : 2.0;
    return ox_fanin(f * 2.0 / gain);
}

static ox_role ox_role_in(const Onnx__GraphProto *gp, const char *name, const int64_t *dims, int32_t rank, int depth);

/* The role of input i (a value of shape dims) of node n. */
static ox_role ox_role_at(const Onnx__GraphProto *gp, const Onnx__NodeProto *n, size_t i, const int64_t *dims,
                          int32_t rank, int depth) {
    const char *op = n->op_type ? n->op_type : "";
    double numel = 1.0;
    for (int32_t d = 0; d < rank; d++)
        numel *= (double)dims[d];
    if ((!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "Gemm")) && i == 2)
        return ox_mk(OX_ROLE_VALUE, 0.0); /* the bias */
    if (!strcmp(op, "Conv") && i == 1 && rank >= 2)
        return ox_kernel(gp, n, numel / (double)dims[0]);
    if (!strcmp(op, "ConvTranspose") && i == 1 && rank >= 2) { /* (C, F/group, k...): C/group * k... */
        int64_t grp = ox_node_int(n, "group", 1);
        return ox_kernel(gp, n, numel / (double)dims[1] / (double)(grp > 0 ? grp : 1));
    }
    if (!strcmp(op, "Gemm") && i <= 1 && rank == 2) { /* A (M,K) or (K,M); B (K,N) or (N,K) */
        int64_t tr = ox_node_int(n, i == 0 ? "transA" : "transB", 0);
        return ox_kernel(gp, n, (double)dims[(i == 0) == (tr == 0) ? 1 : 0]);
    }
    if (!strcmp(op, "MatMul") && rank >= 1)
        return ox_kernel(gp, n, (double)(rank == 1 ? dims[0] : i == 0 ? dims[rank - 1] : dims[rank - 2]));
    if (!strcmp(op, "BatchNormalization") && i >= 1 && i <= 4)
        return ox_mk(OX_ROLE_VALUE, i == 1 || i == 4 ? 1.0 : 0.0);
    if ((!strcmp(op, "LayerNormalization") || !strcmp(op, "InstanceNormalization") ||
         !strcmp(op, "GroupNormalization")) && (i == 1 || i == 2))
        return ox_mk(OX_ROLE_VALUE, i == 1 ? 1.0 : 0.0);
    if (!strcmp(op, "Add") || !strcmp(op, "Sub"))
        return ox_mk(OX_ROLE_VALUE, 0.0);
    if (!strcmp(op, "Mul") || !strcmp(op, "Div"))
        return ox_mk(OX_ROLE_VALUE, 1.0);
    if (!strcmp(op, "Gather") && i == 0)
        return ox_mk(OX_ROLE_STD, 1.0);
    if (!strcmp(op, "Transpose") && i == 0 && n->n_output >= 1 && rank <= OPS_MAX_DIMS) {
        int64_t t[OPS_MAX_DIMS];
        const Onnx__AttributeProto *perm = NULL;
        for (size_t a = 0; a < n->n_attribute; a++)
            if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, "perm"))
                perm = n->attribute[a];
        if (perm && perm->n_ints != (size_t)rank)
            return ox_mk(OX_ROLE_NONE, 0);
        for (int32_t d = 0; d < rank; d++) {
            int64_t p = perm ? perm->ints[d] : rank - 1 - d;
            if (p < 0 || p >= rank)
                return ox_mk(OX_ROLE_NONE, 0);
            t[d] = dims[p];
        }
        return ox_role_in(gp, n->output[0], t, rank, depth + 1);
    }
    if (!strcmp(op, "Identity") && n->n_output >= 1)
        return ox_role_in(gp, n->output[0], dims, rank, depth + 1);
    return ox_mk(OX_ROLE_NONE, 0);
}

/* The role of the value `name` over all its readers: a fan-in wins (a kernel also used elsewhere,
 * as a tied embedding, stays a kernel), else the first reader's role in node order. */
static ox_role ox_role_in(const Onnx__GraphProto *gp, const char *name, const int64_t *dims, int32_t rank,
                          int depth) {
    ox_role best = ox_mk(OX_ROLE_NONE, 0);
    if (depth > OX_ROLE_DEPTH || !name || !name[0])
        return best;
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *n = gp->node[k];
        for (size_t i = 0; i < n->n_input; i++) {
            if (!n->input[i] || strcmp(n->input[i], name))
                continue;
            ox_role r = ox_role_at(gp, n, i, dims, rank, depth);
            if (r.kind == OX_ROLE_FANIN)
                return r;
            if (best.kind == OX_ROLE_NONE)
                best = r;
        }
    }
    return best;
}

/* A made-up float weight whose values are still to be drawn, of a non-empty shape. */
static int ox_is_made_up(const ox_val *v) {
    if (!v || v->state != OX_V_CONST || !v->c.synthetic || v->c.is_int || v->c.f || v->c.src != OX_SRC_RANDOM)
        return 0;
    for (int32_t d = 0; d < v->c.shape.rank; d++)
        if (v->c.shape.dims[d] <= 0)
            return 0;
    return 1;
}

static const Onnx__NodeProto *ox_producer(const Onnx__GraphProto *gp, ox_prod *prods, const char *name) {
    ox_prod *p = NULL;
    if (name && name[0])
        HASH_FIND_STR(prods, name, p);
    return p ? gp->node[p->node] : NULL;
}

static int ox_is_op(const Onnx__NodeProto *n, const char *const *ops) {
    for (int k = 0; ops[k]; k++)
        if (n->op_type && !strcmp(n->op_type, ops[k]))
            return 1;
    return 0;
}

/* A value known before run time: an initializer or a Constant node's output. */
static int ox_is_fixed(ox_ctx *c, const Onnx__GraphProto *gp, ox_prod *prods, const char *name) {
    const Onnx__NodeProto *n = ox_producer(gp, prods, name);
    ox_val *v = ox_find(c, name);
    return (v && v->state == OX_V_CONST) || (n && n->op_type && !strcmp(n->op_type, "Constant"));
}

/* The made-up kernel of the Conv / MatMul / Gemm that computes `name`, looking back through
 * per-element nodes (normalisation, activation, reshapes, a constant bias or factor), or NULL. */
static ox_val *ox_branch_kernel(ox_ctx *c, const Onnx__GraphProto *gp, ox_prod *prods, const char *name) {
    static const char *const kernels[] = {"Conv", "ConvTranspose", "MatMul", "Gemm", NULL};
    static const char *const unary[] = {"BatchNormalization", "Relu", "Identity", "Dropout", "Reshape", "Transpose",
                                        "Flatten", "Squeeze", "Unsqueeze", NULL};
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", NULL};
    for (int depth = 0; depth < OX_BRANCH_DEPTH; depth++) {
        const Onnx__NodeProto *n = ox_producer(gp, prods, name);
        if (!n || n->n_input < 1)
            return NULL;
        if (ox_is_op(n, kernels)) {
            for (size_t i = 0; i < 2; i++) { /* the weight slot (input 1) first, then input 0 */
                if (1 - i >= n->n_input)      /* a kernel node with one input: no slot 1 */
                    continue;
                const char *w = n->input[1 - i];
                const Onnx__NodeProto *t = ox_producer(gp, prods, w); /* a Transpose of the weight */
                if (t && t->n_input >= 1 && t->op_type && !strcmp(t->op_type, "Transpose"))
                    w = t->input[0];
                ox_val *v = w ? ox_find(c, w) : NULL;
                if (ox_is_made_up(v))
                    return v;
            }
            return NULL;
        }
        if (ox_is_op(n, unary)) {
            name = n->input[0];
        } else if (ox_is_op(n, binary) && n->n_input == 2 && ox_is_fixed(c, gp, prods, n->input[1])) {
            name = n->input[0];
        } else if (ox_is_op(n, binary) && n->n_input == 2 && ox_is_fixed(c, gp, prods, n->input[0])) {
            name = n->input[1];
        } else {
            return NULL;
        }
    }
    return NULL;
}

/* 1 if computing `from` reads `target` within OX_BRANCH_VISIT nodes searched back (breadth first). */
static int ox_reads(const Onnx__GraphProto *gp, ox_prod *prods, const char *from, const char *target) {
    const Onnx__NodeProto *queue[OX_BRANCH_VISIT];
    int32_t head = 0, tail = 0;
    const Onnx__NodeProto *n = ox_producer(gp, prods, from);
    if (n)
        queue[tail++] = n;
    while (head < tail) {
        n = queue[head++];
        for (size_t i = 0; i < n->n_input; i++) {
            if (!n->input[i] || !n->input[i][0])
                continue;
            if (!strcmp(n->input[i], target))
                return 1;
            const Onnx__NodeProto *p = ox_producer(gp, prods, n->input[i]);
            int seen = !p;
            for (int32_t q = 0; q < tail && !seen; q++)
                seen = queue[q] == p;
            if (!seen && tail < OX_BRANCH_VISIT)
                queue[tail++] = p;
        }
    }
    return 0;
}

/* A kernel ending a branch that an addition sums. */
typedef struct {
    ox_val *v;
    int residual; /* 1: f of x + f(x); 0: one of two kernel-ended values, neither computed from the other */
} ox_branch;

static void ox_branch_add(ox_branch **ks, int32_t *n, int32_t *cap, ox_val *v, int residual) {
    for (int32_t j = 0; j < *n; j++)
        if ((*ks)[j].v == v)
            return; /* a kernel counted once */
    if (*n == *cap)
        *ks = base_grow(*ks, cap, *n + 1, sizeof **ks);
    (*ks)[*n].v = v;
    (*ks)[(*n)++].residual = residual;
}

/* The kernels ending the branches of additions of two run-time values: for x + f(x) (one computed
 * from the other) the kernel ending f; for f(x) + g(x) (a projection shortcut: both end in a
 * kernel, neither computed from the other) both kernels. Returns their count in *out (caller frees). */
static int32_t ox_branch_kernels(ox_ctx *c, const Onnx__GraphProto *gp, ox_branch **out) {
    ox_prod *prods = NULL, *p, *tmp;
    for (size_t k = 0; k < gp->n_node; k++)
        for (size_t o = 0; o < gp->node[k]->n_output; o++) {
            const char *name = gp->node[k]->output[o];
            if (!name || !name[0])
                continue;
            HASH_FIND_STR(prods, name, p);
            if (p)
                continue;
            p = base_xcalloc(1, sizeof *p);
            p->name = name;
            p->node = (int32_t)k;
            HASH_ADD_KEYPTR(hh, prods, p->name, strlen(p->name), p);
        }
    ox_branch *ks = NULL;
    int32_t n = 0, cap = 0;
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *a = gp->node[k];
        if (!a->op_type || strcmp(a->op_type, "Add") || a->n_input != 2 || !a->input[0] || !a->input[1] ||
            ox_is_fixed(c, gp, prods, a->input[0]) || ox_is_fixed(c, gp, prods, a->input[1]))
            continue;
        ox_val *kv[2] = {ox_branch_kernel(c, gp, prods, a->input[0]), ox_branch_kernel(c, gp, prods, a->input[1])};
        int reads[2] = {kv[0] && ox_reads(gp, prods, a->input[0], a->input[1]),
                        kv[1] && ox_reads(gp, prods, a->input[1], a->input[0])};
        if (reads[0] || reads[1]) {
            ox_branch_add(&ks, &n, &cap, kv[reads[0] ? 0 : 1], 1);
        } else if (kv[0] && kv[1]) {
            ox_branch_add(&ks, &n, &cap, kv[0], 0);
            ox_branch_add(&ks, &n, &cap, kv[1], 0);
        }
    }
    HASH_ITER(hh, prods, p, tmp) {
        HASH_DEL(prods, p);
        free(p);
    }
    *out = ks;
    return n;
}

void ox_init_random_roles(ox_ctx *c, const Onnx__GraphProto *gp) {
    if (c->o.random_weights != 1)
        return; /* none made up, or the legacy values (random_weights 2) */
    ox_branch *br = NULL;
    int32_t n_br = ox_branch_kernels(c, gp, &br), n_res = 0;
    for (int32_t j = 0; j < n_br; j++)
        n_res += br[j].residual;
    for (size_t k = 0; k < gp->n_initializer; k++) {
        ox_val *v = ox_find(c, gp->initializer[k]->name);
        if (!ox_is_made_up(v))
            continue;
        ox_role r = ox_role_in(gp, v->name, v->c.shape.dims, v->c.shape.rank, 0);
        double gain = 1.0; /* a residual branch: 1/sqrt(R); one of two summed: 1/sqrt(2) */
        for (int32_t j = 0; j < n_br; j++)
            if (br[j].v == v)
                gain = br[j].residual ? 1.0 / sqrt((double)n_res) : sqrt(0.5);
        if (r.kind == OX_ROLE_FANIN) {
            v->c.std = (float)(sqrt(2.0 / r.x) * gain);
        } else if (r.kind == OX_ROLE_STD) {
            v->c.std = (float)r.x;
        } else if (r.kind == OX_ROLE_VALUE) { /* all one value: becomes a CONSTANT weight */
            int64_t n = ox_numel(&v->c.shape);
            v->c.f = base_xmalloc((size_t)n * sizeof *v->c.f);
            for (int64_t j = 0; j < n; j++)
                v->c.f[j] = (float)r.x;
            v->c.src = OX_SRC_MEM;
        }
    }
    free(br);
}
