/* verify_model.c: the axioms' model of shapes, and the signature of each op's Z3 function (built
 * from the op table's Z3 signatures; the one thing here per op is its shape model, vm_models).
 *
 * A dim is a linear expression over integer symbols (vx); typing an op (vm_infer) produces its
 * output shapes and adds the constraints under which it is well typed to a vsys. With constant
 * inputs this is plain shape checking; with symbols it yields the hypotheses of a proof (a rule's
 * variables have symbolic dims) or the equations from which an axiom's instantiations are
 * enumerated. The model is the op table's shape inference restricted to what the axioms speak
 * about: elementwise operands of equal shape (no broadcasting), matmul of matrices, transpose of
 * matrices, convolutions and pools without dilation or explicit non-zero padding. Divisions (equal
 * split parts, strides, enlarge's centring) introduce auxiliary symbols so that every constraint
 * stays linear.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_impl.h"

/* FNV-1a over the bytes, then a final avalanche (splitmix64), so nearby inputs spread. */
uint64_t verify_hash64(const void *data, size_t n, uint64_t seed) {
    uint64_t h = base_fnv1a(BASE_FNV_INIT ^ seed, data, n);
    h ^= h >> 30;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h;
}

/* --- linear expressions ------------------------------------------------------------------------ */

vx vx_num(int64_t c) {
    vx a;
    memset(&a, 0, sizeof a);
    a.c = c;
    return a;
}

vx vx_sym(int32_t s) {
    vx a = vx_num(0);
    a.n = 1;
    a.s[0] = s;
    a.k[0] = 1;
    return a;
}

int vx_is_num(const vx *a, int64_t *c) {
    if (a->n)
        return 0;
    if (c)
        *c = a->c;
    return 1;
}

/* ka*a + kb*b, merged by symbol; *ovf set when the result has too many terms. */
static vx vx_lin(vx a, int64_t ka, vx b, int64_t kb, int *ovf) {
    vx r = vx_num(ka * a.c + kb * b.c);
    int32_t i = 0, j = 0;
    while (i < a.n || j < b.n) {
        int32_t s;
        int64_t k;
        if (j >= b.n || (i < a.n && a.s[i] < b.s[j])) {
            s = a.s[i];
            k = ka * a.k[i++];
        } else if (i >= a.n || b.s[j] < a.s[i]) {
            s = b.s[j];
            k = kb * b.k[j++];
        } else {
            s = a.s[i];
            k = ka * a.k[i++] + kb * b.k[j++];
        }
        if (k == 0)
            continue;
        if (r.n == VX_TERMS) {
            *ovf = 1;
            return r;
        }
        r.s[r.n] = s;
        r.k[r.n++] = k;
    }
    return r;
}

void vsys_init(vsys *S) {
    S->n_sym = 0;
    S->n_cons = 0;
    S->infeasible = 0;
    S->overflow = 0;
    S->solved = 0;
}

int32_t vsys_new_sym(vsys *S, vs_kind kind) {
    if (S->n_sym >= VS_MAX_SYM) {
        S->overflow = 1;
        return -1;
    }
    S->kind[S->n_sym] = kind;
    return S->n_sym++;
}

vx vsys_add(vsys *S, vx a, vx b) { return vx_lin(a, 1, b, 1, &S->overflow); }
vx vsys_sub(vsys *S, vx a, vx b) { return vx_lin(a, 1, b, -1, &S->overflow); }
vx vsys_scale(vsys *S, vx a, int64_t k) { return vx_lin(a, k, vx_num(0), 0, &S->overflow); }

static int vc_holds(vc_kind kind, int64_t c) { return kind == VC_EQ ? c == 0 : c >= 0; }

void vsys_require(vsys *S, vc_kind kind, vx e) {
    int64_t c;
    if (vx_is_num(&e, &c)) {
        if (!vc_holds(kind, c))
            S->infeasible = 1;
        return;
    }
    if (S->n_cons >= VS_MAX_CONS) {
        S->overflow = 1;
        return;
    }
    S->cons[S->n_cons].kind = kind;
    S->cons[S->n_cons++].e = e;
}

void vsys_require_eq(vsys *S, vx a, vx b) { vsys_require(S, VC_EQ, vsys_sub(S, a, b)); }

/* a with symbol s replaced by e. */
static vx vx_subst(vsys *S, vx a, int32_t s, const vx *e) {
    for (int32_t i = 0; i < a.n; i++)
        if (a.s[i] == s) {
            int64_t k = a.k[i];
            vx rest = vx_lin(a, 1, vx_sym(s), -k, &S->overflow);
            return vx_lin(rest, 1, *e, k, &S->overflow);
        }
    return a;
}

void vsys_solve(vsys *S) {
    for (int32_t s = 0; s < S->n_sym; s++)
        S->sub[s] = vx_sym(s);
    for (;;) {
        /* an equation with a unit coefficient: eliminate its highest such symbol (deterministic) */
        int32_t ci = -1, ti = -1;
        for (int32_t i = 0; i < S->n_cons && ci < 0; i++) {
            if (S->cons[i].kind != VC_EQ)
                continue;
            for (int32_t t = S->cons[i].e.n - 1; t >= 0; t--)
                if (S->cons[i].e.k[t] == 1 || S->cons[i].e.k[t] == -1) {
                    ci = i;
                    ti = t;
                    break;
                }
        }
        if (ci < 0)
            break;
        vx e = S->cons[ci].e;
        int32_t s = e.s[ti];
        int64_t k = e.k[ti];
        /* k*s + rest = 0  =>  s = -rest / k = -k * rest (k = +-1) */
        vx rest = vx_lin(e, 1, vx_sym(s), -k, &S->overflow);
        vx val = vx_lin(rest, -k, vx_num(0), 0, &S->overflow);
        S->cons[ci] = S->cons[--S->n_cons];
        for (int32_t q = 0; q < S->n_sym; q++)
            S->sub[q] = vx_subst(S, S->sub[q], s, &val);
        int32_t w = 0;
        for (int32_t i = 0; i < S->n_cons; i++) {
            vx ne = vx_subst(S, S->cons[i].e, s, &val);
            int64_t c;
            if (vx_is_num(&ne, &c)) {
                if (!vc_holds(S->cons[i].kind, c))
                    S->infeasible = 1;
                continue;
            }
            S->cons[w].kind = S->cons[i].kind;
            S->cons[w++].e = ne;
        }
        S->n_cons = w;
    }
    S->solved = 1;
}

vx vsys_apply(const vsys *S, vx a) {
    if (!S->solved)
        return a;
    int ovf = 0;
    vx r = vx_num(a.c);
    for (int32_t i = 0; i < a.n; i++)
        r = vx_lin(r, 1, S->sub[a.s[i]], a.k[i], &ovf);
    return ovf ? a : r;
}

int64_t vsys_eval(const vsys *S, vx a, const int64_t *val) {
    (void)S;
    int64_t r = a.c;
    for (int32_t i = 0; i < a.n; i++)
        r += a.k[i] * val[a.s[i]];
    return r;
}

/* --- the signature table ------------------------------------------------------------------------ */

/* The rows are built before main (vsig_build, at the end of this file) from the op table's Z3
 * signatures (ops.h ops_z3_sig): one per function, in op order, the families per list length
 * last (the order and the argument counts are part of verify_opset_hash, which shipped rule files
 * record). */
#define VSIG_MAX (OP_COUNT * OPS_MAX_OUTPUTS)
static vsig vsig_rows[VSIG_MAX];
const vsig *const vsig_table = vsig_rows;
int32_t vsig_count;

/* How an integer argument is read from a node. */
static va_kind vsig_kind(ops_z3_arg_kind kind) {
    switch (kind) {
    case OPS_Z3_KEY:
        return VA_KEY;
    case OPS_Z3_PAD:
        return VA_PAD;
    case OPS_Z3_PERM:
        return VA_PERM;
    case OPS_Z3_LIST:
        return VA_LIST;
    case OPS_Z3_SIZE0:
        return VA_SIZE0;
    }
    return VA_KEY;
}

/* The values an integer argument ranges over in the axiom check: by what the parameter is. */
static vd_domain vsig_domain(ops_z3_arg_kind kind, ops_param_key key) {
    if (kind == OPS_Z3_PAD)
        return VD_PAD;
    if (kind == OPS_Z3_PERM)
        return VD_PERM;
    if (kind != OPS_Z3_KEY)
        return VD_SIZE; /* list entries (shapes) and part sizes */
    if (key == PM_STRIDE_H || key == PM_STRIDE_W)
        return VD_STRIDE;
    if (key == PM_KH || key == PM_KW)
        return VD_KSIZE;
    if (key == PM_GROUPS)
        return VD_GROUPS;
    if (key == PM_ACT)
        return VD_ACT;
    if (key == PM_AXIS)
        return VD_AXIS;
    return VD_SIZE; /* n, c: sizes */
}

/* Append the row of op's function for output `out` (a per-output family) or list length `rank`
 * (a per-rank family, whose list argument becomes `rank` arguments). */
static void vsig_add(ops_type op, const char *suffix, int32_t out, int32_t rank) {
    static const char *const digits[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8"};
    BASE_ASSERT(vsig_count < VSIG_MAX);
    const ops_z3_sig *z = &ops_table[op].z3sig;
    vsig *g = &vsig_rows[vsig_count++];
    memset(g, 0, sizeof *g);
    g->op = op;
    g->suffix = suffix ? suffix : digits[rank ? rank : out];
    g->out = out;
    g->rank = rank;
    g->n_t = z->n_t;
    g->kernel_in = ops_table[op].kernel_input_mask & ((1 << z->n_t) - 1);
    for (int32_t i = 0; i < z->n_args; i++) {
        const ops_z3_arg *a = &z->args[i];
        for (int32_t k = 0; k < (a->kind == OPS_Z3_LIST ? rank : 1); k++) {
            BASE_ASSERT(g->n_int < VSIG_MAX_INT);
            g->iarg[g->n_int++] = (va_spec){vsig_kind(a->kind), a->key, k, vsig_domain(a->kind, a->key)};
        }
    }
}

const char *vsig_name(int32_t i, char *buf, size_t len) {
    const char *base = ops_table[vsig_table[i].op].z3;
    snprintf(buf, len, "%s%s", base ? base : "?", vsig_table[i].suffix);
    return buf;
}

int32_t vsig_find_name(const char *name) {
    char b[64];
    for (int32_t i = 0; i < vsig_count; i++)
        if (!strcmp(vsig_name(i, b, sizeof b), name))
            return i;
    return -1;
}

int32_t vsig_find(ops_type op, int32_t out, int32_t rank) {
    for (int32_t i = 0; i < vsig_count; i++)
        if (vsig_table[i].op == op && vsig_table[i].out == out && vsig_table[i].rank == rank)
            return i;
    return -1;
}

int64_t vsig_pad_code(const vparams *vp) {
    int64_t mode;
    if (!vx_is_num(&vp->v[PM_PAD], &mode))
        return -1;
    if (mode == OPS_PAD_SAME || mode == OPS_PAD_VALID)
        return mode;
    for (ops_param_key k = PM_PAD_T; k <= PM_PAD_R; k++) {
        int64_t v;
        if (!vx_is_num(&vp->v[k], &v) || v != 0)
            return -1;
    }
    return OPS_PAD_VALID;
}

int64_t vsig_perm_code(const vparams *vp) {
    int64_t code = 0;
    for (int32_t i = 0; i < vp->n_list; i++) {
        int64_t v;
        if (!vx_is_num(&vp->list[i], &v) || v < 0 || v > 9)
            return -1;
        code = code * 10 + v;
    }
    return code;
}

int vsig_perm_decode(int64_t code, int32_t rank, int64_t *list) {
    if (rank < 1 || rank > OPS_MAX_DIMS || code < 0)
        return -1;
    for (int32_t i = rank - 1; i >= 0; i--) {
        list[i] = code % 10;
        code /= 10;
    }
    return code == 0 ? 0 : -1;
}

/* --- typing ---------------------------------------------------------------------------------------- */

void vparams_from(vparams *vp, const ops_params *p) {
    for (int k = 0; k < PM_COUNT; k++)
        vp->v[k] = vx_num(p->v[k]);
    vp->n_list = p->n_list;
    for (int32_t i = 0; i < OPS_MAX_LIST; i++)
        vp->list[i] = vx_num(i < p->n_list ? p->list[i] : 0);
}

VERIFY_PRINTF(4, 5)
static int vm_fail(int status, char *why, size_t whylen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_vfail(why, whylen, fmt, ap);
    va_end(ap);
    return status;
}

/* A parameter that the model needs as a number. */
static int vm_num(const vparams *vp, ops_param_key key, int64_t *v, ops_type op, char *why, size_t whylen) {
    if (vx_is_num(&vp->v[key], v))
        return 0;
    return vm_fail(VM_UNSUPPORTED, why, whylen, "%s: parameter %s is not a number", ops_table[op].name,
                   ops_param_table[key].name);
}

/* Output size of one window axis: 'same' is ceil(in/s), 'valid' is (in-k)/s + 1. */
static vx vm_window(vsys *S, int64_t mode, vx in, vx k, int64_t s) {
    int64_t ci, ck;
    if (vx_is_num(&in, &ci) && vx_is_num(&k, &ck)) { /* concrete: the op table's arithmetic */
        if (mode == OPS_PAD_SAME)
            return vx_num(ci / s + (ci % s != 0));
        vsys_require(S, VC_GE, vx_num(ci - ck));
        return vx_num(ci >= ck ? (ci - ck) / s + 1 : 1);
    }
    if (mode == OPS_PAD_SAME) {
        if (s == 1)
            return in;
        vx q = vx_sym(vsys_new_sym(S, VS_AUX)); /* s*q >= in > s*(q-1) */
        vsys_require(S, VC_GE, vsys_sub(S, vsys_scale(S, q, s), in));
        vsys_require(S, VC_GE, vsys_add(S, vsys_sub(S, in, vsys_scale(S, q, s)), vx_num(s - 1)));
        return q;
    }
    vx span = vsys_sub(S, in, k);
    vsys_require(S, VC_GE, span);
    if (s == 1)
        return vsys_add(S, span, vx_num(1));
    vx q = vx_sym(vsys_new_sym(S, VS_AUX)); /* q = floor(span / s) */
    vsys_require(S, VC_GE, vsys_sub(S, span, vsys_scale(S, q, s)));
    vsys_require(S, VC_GE, vsys_sub(S, vsys_add(S, vsys_scale(S, q, s), vx_num(s - 1)), span));
    return vsys_add(S, q, vx_num(1));
}

static void vm_positive(vsys *S, vx e) { vsys_require(S, VC_GE, vsys_sub(S, e, vx_num(1))); }

static int vm_same_shape(vsys *S, ops_type op, const vshape *a, const vshape *b, char *why, size_t whylen) {
    if (a->rank != b->rank)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "%s: operands of rank %d and %d (broadcasting is outside the model)",
                       ops_table[op].name, (int)a->rank, (int)b->rank);
    for (int32_t i = 0; i < a->rank; i++)
        vsys_require_eq(S, a->d[i], b->d[i]);
    return VM_OK;
}

/* Window parameters shared by conv2d and the pools: strides and the canonical pad mode. */
static int vm_window_params(const vparams *vp, ops_type op, int64_t *sh, int64_t *sw, int64_t *mode, char *why,
                            size_t whylen) {
    int rc;
    if ((rc = vm_num(vp, PM_STRIDE_H, sh, op, why, whylen)) < 0 || (rc = vm_num(vp, PM_STRIDE_W, sw, op, why, whylen)) < 0)
        return rc;
    if (*sh < 1 || *sw < 1)
        return vm_fail(VM_ILLTYPED, why, whylen, "%s: stride < 1", ops_table[op].name);
    *mode = vsig_pad_code(vp);
    if (*mode < 0)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "%s: explicit non-zero padding is outside the model",
                       ops_table[op].name);
    return VM_OK;
}

/* One shape model per op that has axioms (vm_models below): the op table's shape inference
 * restricted to what the axioms speak about. Each sets out[0..*n_out) (*n_out is 1 on entry) and
 * returns VM_OK, or VM_ILLTYPED / VM_UNSUPPORTED with a reason. */
#define VM_MODEL(nm) \
    static int vm_##nm(vsys *S, ops_type op, const vparams *vp, int32_t n_in, const vshape *in, int32_t *n_out, \
                       vshape *out, char *why, size_t whylen)

VM_MODEL(conv2d) {
    int64_t sh = 1, sw = 1, mode = 0, dh = 1, dw = 1, g = 1, act = 0;
    int rc;
    if (n_in != 2)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "conv2d with a bias is outside the model");
    if (in[0].rank != 4 || in[1].rank != 4)
        return vm_fail(VM_ILLTYPED, why, whylen, "conv2d: ranks %d and %d, expected 4", (int)in[0].rank,
                       (int)in[1].rank);
    if ((rc = vm_num(vp, PM_DIL_H, &dh, op, why, whylen)) < 0 || (rc = vm_num(vp, PM_DIL_W, &dw, op, why, whylen)) < 0 ||
        (rc = vm_num(vp, PM_GROUPS, &g, op, why, whylen)) < 0 || (rc = vm_num(vp, PM_ACT, &act, op, why, whylen)) < 0)
        return rc;
    if (dh != 1 || dw != 1)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "conv2d: dilation is outside the model");
    if (g < 1)
        return vm_fail(VM_ILLTYPED, why, whylen, "conv2d: groups < 1");
    if ((rc = vm_window_params(vp, op, &sh, &sw, &mode, why, whylen)) < 0)
        return rc;
    const vshape *x = &in[0], *w = &in[1]; /* (N,C,H,W), (F,C/g,KH,KW) */
    vsys_require_eq(S, x->d[1], vsys_scale(S, w->d[1], g));
    if (g > 1) {
        vx q = vx_sym(vsys_new_sym(S, VS_AUX));
        vsys_require_eq(S, w->d[0], vsys_scale(S, q, g));
    }
    out[0].rank = 4;
    out[0].d[0] = x->d[0];
    out[0].d[1] = w->d[0];
    out[0].d[2] = vm_window(S, mode, x->d[2], w->d[2], sh);
    out[0].d[3] = vm_window(S, mode, x->d[3], w->d[3], sw);
    return VM_OK;
}

VM_MODEL(matmul) {
    int64_t v = 0;
    int rc;
    if (n_in != 2)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "matmul with a bias is outside the model");
    if (in[0].rank < 2 || in[1].rank < 2)
        return vm_fail(VM_ILLTYPED, why, whylen, "matmul: an operand of rank < 2");
    if (in[0].rank != 2 || in[1].rank != 2)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "matmul: batched operands are outside the model");
    if ((rc = vm_num(vp, PM_ACT, &v, op, why, whylen)) < 0)
        return rc;
    vsys_require_eq(S, in[0].d[1], in[1].d[0]);
    out[0].rank = 2;
    out[0].d[0] = in[0].d[0];
    out[0].d[1] = in[1].d[1];
    return VM_OK;
}

/* ewadd, ewmul: operands of equal shape (no broadcasting). */
VM_MODEL(same2) {
    int rc = vm_same_shape(S, op, &in[0], &in[1], why, whylen);
    if (rc < 0)
        return rc;
    out[0] = in[0];
    return VM_OK;
}

VM_MODEL(smul) {
    for (int32_t i = 0; i < in[1].rank; i++)
        vsys_require_eq(S, in[1].d[i], vx_num(1));
    out[0] = in[0];
    return VM_OK;
}

/* relu: the input's shape. */
VM_MODEL(same1) {
    out[0] = in[0];
    return VM_OK;
}

VM_MODEL(transpose) {
    int64_t code = vsig_perm_code(vp);
    if (in[0].rank != 2 || code != 10)
        return vm_fail(VM_UNSUPPORTED, why, whylen,
                       "transpose: only the matrix transpose (perm [1,0] of a rank-2 tensor) is modelled");
    out[0].rank = 2;
    out[0].d[0] = in[0].d[1];
    out[0].d[1] = in[0].d[0];
    return VM_OK;
}

VM_MODEL(concat) {
    int64_t v = 0;
    int rc;
    if ((rc = vm_num(vp, PM_AXIS, &v, op, why, whylen)) < 0)
        return rc;
    if (n_in < 1)
        return vm_fail(VM_ILLTYPED, why, whylen, "concat: no inputs");
    int32_t r = in[0].rank;
    if (v < 0 || v >= r)
        return vm_fail(VM_ILLTYPED, why, whylen, "concat: axis %lld out of range for rank %d", (long long)v, (int)r);
    out[0] = in[0];
    for (int32_t k = 1; k < n_in; k++) {
        if (in[k].rank != r)
            return vm_fail(VM_ILLTYPED, why, whylen, "concat: inputs of rank %d and %d", (int)r, (int)in[k].rank);
        for (int32_t i = 0; i < r; i++)
            if (i != v)
                vsys_require_eq(S, in[k].d[i], in[0].d[i]);
        out[0].d[v] = vsys_add(S, out[0].d[v], in[k].d[v]);
    }
    return VM_OK;
}

VM_MODEL(split) {
    int64_t v = 0, parts = 1;
    int rc;
    if ((rc = vm_num(vp, PM_AXIS, &v, op, why, whylen)) < 0 || (rc = vm_num(vp, PM_PARTS, &parts, op, why, whylen)) < 0)
        return rc;
    if (v < 0 || v >= in[0].rank)
        return vm_fail(VM_ILLTYPED, why, whylen, "split: axis %lld out of range for rank %d", (long long)v,
                       (int)in[0].rank);
    if (parts < 1 || parts > OPS_MAX_OUTPUTS)
        return vm_fail(VM_ILLTYPED, why, whylen, "split: %lld parts", (long long)parts);
    vx sum = vx_num(0);
    for (int64_t k = 0; k < parts; k++) {
        out[k] = in[0];
        if (vp->n_list == 0) {
            if (k == 0) {
                vx q = vx_sym(vsys_new_sym(S, VS_AUX));
                vsys_require_eq(S, in[0].d[v], vsys_scale(S, q, parts));
                out[0].d[v] = q;
            } else {
                out[k].d[v] = out[0].d[v];
            }
        } else {
            if (vp->n_list != parts)
                return vm_fail(VM_ILLTYPED, why, whylen, "split: %d sizes for %lld parts", (int)vp->n_list,
                               (long long)parts);
            out[k].d[v] = vp->list[k];
            sum = vsys_add(S, sum, vp->list[k]);
        }
        vm_positive(S, out[k].d[v]);
    }
    if (vp->n_list)
        vsys_require_eq(S, sum, in[0].d[v]);
    *n_out = (int32_t)parts;
    return VM_OK;
}

/* avgpool2d, maxpool2d */
VM_MODEL(pool) {
    const char *nm = ops_table[op].name;
    int64_t v = 0, sh = 1, sw = 1, mode = 0, kh = 1, kw = 1;
    int rc;
    if (in[0].rank != 4)
        return vm_fail(VM_ILLTYPED, why, whylen, "%s: rank %d, expected 4", nm, (int)in[0].rank);
    if ((rc = vm_num(vp, PM_KH, &kh, op, why, whylen)) < 0 || (rc = vm_num(vp, PM_KW, &kw, op, why, whylen)) < 0)
        return rc;
    if (kh < 1 || kw < 1)
        return vm_fail(VM_ILLTYPED, why, whylen, "%s: window < 1", nm);
    if ((rc = vm_window_params(vp, op, &sh, &sw, &mode, why, whylen)) < 0)
        return rc;
    if (op == OP_AVGPOOL2D) {
        if ((rc = vm_num(vp, PM_COUNT_PAD, &v, op, why, whylen)) < 0)
            return rc;
        if (v != 1)
            return vm_fail(VM_UNSUPPORTED, why, whylen, "avgpool2d: count_pad 0 is outside the model");
    }
    out[0] = in[0];
    out[0].d[2] = vm_window(S, mode, in[0].d[2], vx_num(kh), sh);
    out[0].d[3] = vm_window(S, mode, in[0].d[3], vx_num(kw), sw);
    return VM_OK;
}

VM_MODEL(enlarge) {
    if (in[0].rank != 4)
        return vm_fail(VM_ILLTYPED, why, whylen, "enlarge: rank %d, expected 4", (int)in[0].rank);
    out[0] = in[0];
    for (int i = 0; i < 2; i++) {
        vx want = vp->v[i ? PM_KW : PM_KH];
        vx q = vx_sym(vsys_new_sym(S, VS_AUX)); /* want - have = 2q, q >= 0 */
        vsys_require_eq(S, vsys_sub(S, want, in[0].d[2 + i]), vsys_scale(S, q, 2));
        vsys_require(S, VC_GE, q);
        out[0].d[2 + i] = want;
    }
    return VM_OK;
}

VM_MODEL(const_imm) {
    vm_positive(S, vp->v[PM_N]);
    out[0].rank = 2;
    out[0].d[0] = out[0].d[1] = vp->v[PM_N];
    return VM_OK;
}

/* const_iconv (c,c,kh,kw) with kh, kw odd; const_pool (c,1,kh,kw). */
VM_MODEL(const_kernel) {
    vm_positive(S, vp->v[PM_C]);
    for (ops_param_key k = PM_KH; k <= PM_KW; k++) {
        vm_positive(S, vp->v[k]);
        if (op == OP_CONST_ICONV) { /* odd: k = 2q + 1 */
            vx q = vx_sym(vsys_new_sym(S, VS_AUX));
            vsys_require_eq(S, vp->v[k], vsys_add(S, vsys_scale(S, q, 2), vx_num(1)));
        }
    }
    out[0].rank = 4;
    out[0].d[0] = vp->v[PM_C];
    out[0].d[1] = op == OP_CONST_ICONV ? vp->v[PM_C] : vx_num(1);
    out[0].d[2] = vp->v[PM_KH];
    out[0].d[3] = vp->v[PM_KW];
    return VM_OK;
}

VM_MODEL(const_ones) {
    if (vp->n_list < 1 || vp->n_list > 4)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "const_ones of rank %d is outside the model", (int)vp->n_list);
    out[0].rank = vp->n_list;
    for (int32_t i = 0; i < vp->n_list; i++) {
        vm_positive(S, vp->list[i]);
        out[0].d[i] = vp->list[i];
    }
    return VM_OK;
}

/* The shape model of each op with axioms (ops_desc.z3); the others are outside the model. An op
 * given a Z3 symbol in the op table needs its model here (vsig_build checks it at start-up). */
typedef int (*vm_model_fn)(vsys *S, ops_type op, const vparams *vp, int32_t n_in, const vshape *in, int32_t *n_out,
                           vshape *out, char *why, size_t whylen);
static const vm_model_fn vm_models[OP_COUNT] = {
    [OP_CONV2D] = vm_conv2d,
    [OP_MATMUL] = vm_matmul,
    [OP_EWADD] = vm_same2,
    [OP_EWMUL] = vm_same2,
    [OP_SMUL] = vm_smul,
    [OP_RELU] = vm_same1,
    [OP_TRANSPOSE] = vm_transpose,
    [OP_CONCAT] = vm_concat,
    [OP_SPLIT] = vm_split,
    [OP_AVGPOOL2D] = vm_pool,
    [OP_MAXPOOL2D] = vm_pool,
    [OP_ENLARGE] = vm_enlarge,
    [OP_CONST_IMM] = vm_const_imm,
    [OP_CONST_ICONV] = vm_const_kernel,
    [OP_CONST_POOL] = vm_const_kernel,
    [OP_CONST_ONES] = vm_const_ones,
};

static int vm_infer_op(vsys *S, ops_type op, const vparams *vp, int32_t n_in, const vshape *in, int32_t *n_out,
                       vshape *out, char *why, size_t whylen) {
    *n_out = 1;
    if (!ops_table[op].z3 || !vm_models[op])
        return vm_fail(VM_UNSUPPORTED, why, whylen, "%s has no axioms", ops_table[op].name);
    return vm_models[op](S, op, vp, n_in, in, n_out, out, why, whylen);
}

int vm_infer(vsys *S, ops_type op, const vparams *vp, int32_t n_in, const vshape *in, int32_t *n_out, vshape *out,
             char *why, size_t whylen) {
    if ((int)op < 0 || op >= OP_COUNT)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "unknown op %d", (int)op);
    if (n_in < ops_table[op].min_in || (ops_table[op].max_in >= 0 && n_in > ops_table[op].max_in))
        return vm_fail(VM_ILLTYPED, why, whylen, "%s: %d inputs", ops_table[op].name, (int)n_in);
    int rc = vm_infer_op(S, op, vp, n_in, in, n_out, out, why, whylen);
    if (rc != VM_OK)
        return rc;
    if (S->overflow)
        return vm_fail(VM_UNSUPPORTED, why, whylen, "%s: shape expressions too large", ops_table[op].name);
    if (S->infeasible)
        return vm_fail(VM_ILLTYPED, why, whylen, "%s: shapes do not fit", ops_table[op].name);
    return VM_OK;
}

/* The signature rows, from the op table (see "the signature table" above); every op with a Z3
 * symbol has a shape model, and only those. */
__attribute__((constructor)) static void vsig_build(void) {
    for (int pass = 0; pass < 2; pass++)
        for (int op = 0; op < OP_COUNT; op++) {
            const ops_desc *d = &ops_table[op];
            BASE_ASSERT(!d->z3 == !vm_models[op]);
            if (!d->z3 || (d->z3sig.per_rank > 0) != pass)
                continue;
            for (int32_t k = 0; k < d->z3sig.per_output; k++)
                vsig_add((ops_type)op, NULL, k, 0);
            for (int32_t r = 1; r <= d->z3sig.per_rank; r++)
                vsig_add((ops_type)op, NULL, 0, r);
            if (!d->z3sig.per_output && !d->z3sig.per_rank)
                vsig_add((ops_type)op, "", 0, 0);
        }
}
