/* apply.c: graph edits (rules_apply_plan, match.h): made from a rule match here or by the built-in
 * rewrites (src/rewrite.c), checked against the indexed graph, then built on a clone.
 *
 * Invariant of a checked plan: building it yields an acyclic graph in which every reader of a
 * mapped tensor reads its replacement of the same shape, no remaining node reads an output of a
 * removed node, and pl->dead lists exactly the live nodes that disappear (removed ones first).
 * The cycle test is exact: the edit closes a cycle only if a reader of a mapped tensor reaches,
 * through unchanged nodes, the producer of a tensor the new nodes read; topological positions
 * rule most plans out without a walk. A rule's plan reuses the nodes the graph already has
 * (ra_reuse): common subexpressions stay shared while searching.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "match.h"

void rules_apply_plan_clear(rules_apply_plan *pl) {
    free(pl->dead);
    pl->dead = NULL;
    pl->n_dead = 0;
}

/* The shape of a plan tensor. */
static const ops_shape *ra_shape(const graph *g, const rules_apply_plan *pl, rules_aref r) {
    switch (r.kind) {
    case RULES_AREF_TENSOR:
        return &g->tensors[r.idx].shape;
    case RULES_AREF_NODE:
        return &pl->nodes[r.idx].out[r.out];
    case RULES_AREF_WEIGHT:
        return &pl->weights[r.idx].shape;
    case RULES_AREF_COUNT:
        break;
    }
    return NULL;
}

/* 1 if r names a tensor that exists at that point of the plan (node refs only to earlier nodes). */
static int ra_ref_ok(const graph *g, const rules_apply_plan *pl, rules_aref r, int32_t before_node) {
    switch (r.kind) {
    case RULES_AREF_TENSOR:
        return r.idx >= 0 && r.idx < g->n_tensors;
    case RULES_AREF_NODE:
        return r.idx >= 0 && r.idx < before_node && r.out >= 0 && r.out < pl->nodes[r.idx].n_out;
    case RULES_AREF_WEIGHT:
        return r.idx >= 0 && r.idx < pl->n_weights;
    case RULES_AREF_COUNT:
        break;
    }
    return 0;
}

/* Infer new node j's output shapes (its inputs exist: earlier nodes inferred). 0, or -1. */
static int ra_infer_node(const graph *g, rules_apply_plan *pl, int32_t j, char *err, size_t errlen) {
    int64_t limit = g->max_elements > 0 ? g->max_elements : GRAPH_DEFAULT_MAX_ELEMENTS;
    rules_apply_node *nd = &pl->nodes[j];
    ops_shape in[RULES_APPLY_MAX_IN];
    if (nd->n_in < 0 || nd->n_in > RULES_APPLY_MAX_IN) {
        base_fail(err, errlen, "plan: new node %d has %d inputs", (int)j, (int)nd->n_in);
        return -1;
    }
    for (int32_t k = 0; k < nd->n_in; k++) {
        if (!ra_ref_ok(g, pl, nd->in[k], j)) {
            base_fail(err, errlen, "plan: new node %d input %d names no tensor", (int)j, (int)k);
            return -1;
        }
        in[k] = *ra_shape(g, pl, nd->in[k]);
    }
    char ierr[256];
    if (ops_infer(nd->op, &nd->p, nd->n_in, in, &nd->n_out, nd->out, ierr, sizeof ierr) < 0) {
        base_fail(err, errlen, "%s", ierr);
        return -1;
    }
    for (int32_t o = 0; o < nd->n_out; o++)
        if (ops_shape_numel(&nd->out[o]) > limit) {
            base_fail(err, errlen, "%s: output %d would have more than %lld elements", ops_table[nd->op].name, (int)o,
                      (long long)limit);
            return -1;
        }
    return 0;
}

static int ra_plan_size_ok(const rules_apply_plan *pl, char *err, size_t errlen) {
    if (pl->n_nodes < 0 || pl->n_nodes > RULES_APPLY_MAX_NODES || pl->n_weights < 0 ||
        pl->n_weights > RULES_APPLY_MAX_WEIGHTS) {
        base_fail(err, errlen, "plan: too many new nodes or weights");
        return 0;
    }
    return 1;
}

int rules_apply_infer(const graph *g, rules_apply_plan *pl, char *err, size_t errlen) {
    if (!ra_plan_size_ok(pl, err, errlen))
        return -1;
    for (int32_t j = 0; j < pl->n_nodes; j++)
        if (ra_infer_node(g, pl, j, err, errlen) < 0)
            return -1;
    return 0;
}

int rules_cut_free_split(ops_params *p, const ops_shape *in, int64_t n) {
    int64_t ax = p->v[PM_AXIS];
    if (n < 1 || ax < 0 || ax >= in->rank || in->dims[ax] - n < 1)
        return -1;
    p->n_list = 2;
    p->list[0] = n;
    p->list[1] = in->dims[ax] - n;
    return 0;
}

/* Infer the target's new nodes in order, each with its parameters at its lift (match.h): the
 * largest lift among its operands (an axis op's operands share theirs; the other ops' parameters
 * do not move), then rules_lift_op on the inferred shapes. 0, or -1 with a message. */
static int ra_infer_lifted(const graph *g, const rules_rule *r, const rules_graph *tgt, rules_side tside,
                           const rules_match *m, rules_apply_plan *pl, char *err, size_t errlen) {
    if (!ra_plan_size_ok(pl, err, errlen))
        return -1;
    for (int32_t j = 0; j < tgt->n_ops; j++) {
        const rules_op *ro = &tgt->ops[j];
        rules_apply_node *nd = &pl->nodes[j];
        int32_t rin[RULES_MAX_IN], k = 0;
        ops_shape in[RULES_MAX_IN];
        for (int32_t i = 0; i < ro->n_in && i < RULES_MAX_IN; i++) {
            rules_ref ref = ro->in[i];
            rin[i] = ref.kind == RULES_REF_VAR ? r->vars[ref.idx].shape.rank : tgt->ops[ref.idx].out_rank;
            in[i] = ref.kind == RULES_REF_VAR ? g->tensors[m->var[ref.idx]].shape : pl->nodes[ref.idx].out[ref.out];
            int32_t ki = rules_lift_of(&in[i], rin[i]);
            k = ki > k ? ki : k;
            if (ki < 0)
                return base_fail(err, errlen, "rule '%s': operand %d of %s has an unexpected rank", r->id, (int)i,
                                 ops_table[ro->op].name);
        }
        for (int32_t c = 0; c < r->n_constraints && k > 0; c++)
            if (r->constraints[c].side == tside && r->constraints[c].op == j && r->constraints[c].n_eq > 0 &&
                rules_lift_moves(ro->op, r->constraints[c].key))
                return base_fail(err, errlen, "rule '%s': %s's constrained axis cannot be lifted", r->id,
                                 ops_table[ro->op].name);
        if (rules_lift_params(ro->op, &nd->p, k, &nd->p) < 0)
            return base_fail(err, errlen, "rule '%s': %s on operands with unit dims in front is not lifted", r->id,
                             ops_table[ro->op].name);
        if (m->split_n > 0 && rules_split_is_free(r, tside, j) && rules_cut_free_split(&nd->p, &in[0], m->split_n) < 0)
            return base_fail(err, errlen, "rule '%s': a split cut at %lld does not fit its input", r->id,
                             (long long)m->split_n);
        if (ra_infer_node(g, pl, j, err, errlen) < 0)
            return -1;
        if (rules_lift_op(ro->op, ro->n_in, rin, in, ro->out_rank, nd->n_out, nd->out) < 0)
            return base_fail(err, errlen, "rule '%s': %s's operands and result do not lift alike", r->id,
                             ops_table[ro->op].name);
    }
    return 0;
}

/* Equal declared parameters (the slots an op does not declare never matter). */
static int ra_same_params(ops_type op, const ops_params *a, const ops_params *b) {
    const ops_desc *d = &ops_table[op];
    for (int32_t i = 0; i < d->n_params; i++) {
        ops_param_key k = d->params[i].key;
        if (k == PM_LIST) {
            if (a->n_list != b->n_list)
                return 0;
            for (int32_t j = 0; j < a->n_list; j++)
                if (a->list[j] != b->list[j])
                    return 0;
        } else if (a->v[k] != b->v[k]) {
            return 0;
        }
    }
    return 1;
}

/* A new node of a rule's target equal to a live node of the graph (same op, parameters and
 * inputs, those existing tensors; not a node the match removes) is not built: its readers and
 * mapped outputs read that node instead, and a later new node reading it may then be equal to a
 * live one too. Without it every application builds its own copy of a shared operand (nasrnn:
 * one concat(x, h) per gate) and a rule that needs one operand for two ops (the pairwise merge)
 * cannot match until the greedy common-subexpression pass after the search. */
static void ra_reuse(const rules_match_index *ix, rules_apply_plan *pl) {
    const graph *g = ix->g;
    int32_t newidx[RULES_APPLY_MAX_NODES], twin[RULES_APPLY_MAX_NODES], n = 0;
    for (int32_t j = 0; j < pl->n_nodes; j++) {
        rules_apply_node *nd = &pl->nodes[j];
        twin[j] = -1;
        for (int32_t k = 0; k < nd->n_in; k++) { /* refs to earlier reused nodes become tensors */
            rules_aref *r = &nd->in[k];
            if (r->kind == RULES_AREF_NODE && twin[r->idx] >= 0)
                *r = (rules_aref){RULES_AREF_TENSOR, g->nodes[twin[r->idx]].out[r->out], 0};
            else if (r->kind == RULES_AREF_NODE)
                r->idx = newidx[r->idx];
        }
        int all = nd->n_in > 0;
        for (int32_t k = 0; k < nd->n_in; k++)
            all &= nd->in[k].kind == RULES_AREF_TENSOR;
        if (all) {
            int32_t t = nd->in[0].idx;
            for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1] && twin[j] < 0; u++) {
                int32_t m = ix->use_node[u];
                const graph_node *gn = &g->nodes[m];
                int same = ix->live[m] && gn->op == nd->op && gn->n_in == nd->n_in && gn->n_out == nd->n_out;
                for (int32_t k = 0; k < nd->n_in && same; k++)
                    same = gn->in[k] == nd->in[k].idx;
                for (int32_t i = 0; i < pl->n_removed && same; i++)
                    same = pl->removed[i] != m;
                if (same && ra_same_params(nd->op, &gn->p, &nd->p))
                    twin[j] = m;
            }
        }
        if (twin[j] >= 0) {
            newidx[j] = -1;
            continue;
        }
        newidx[j] = n;
        if (n != j)
            pl->nodes[n] = *nd;
        n++;
    }
    pl->n_nodes = n;
    for (int32_t i = 0; i < pl->n_map; i++) {
        rules_aref *r = &pl->new_t[i];
        if (r->kind != RULES_AREF_NODE)
            continue;
        int32_t j = r->idx;
        if (twin[j] >= 0)
            *r = (rules_aref){RULES_AREF_TENSOR, g->nodes[twin[j]].out[r->out], 0};
        else
            r->idx = newidx[j];
    }
}

int rules_apply_plan_rule(const rules_set *rs, const rules_match *m, const rules_match_index *ix,
                          rules_apply_plan *pl, char *err, size_t errlen) {
    const graph *g = ix->g;
    const rules_rule *r = &rs->rules[m->rule];
    const int fwd = m->dir == RULES_DIR_FWD;
    const rules_graph *tgt = fwd ? &r->dst : &r->src;
    const rules_side tside = fwd ? RULES_SIDE_DST : RULES_SIDE_SRC;
    rules_apply_plan_clear(pl);
    memset(pl, 0, sizeof *pl);
    pl->n_nodes = tgt->n_ops;
    for (int32_t j = 0; j < tgt->n_ops; j++) {
        const rules_op *ro = &tgt->ops[j];
        rules_apply_node *nd = &pl->nodes[j];
        nd->op = ro->op;
        nd->p = ro->p;
        nd->n_in = ro->n_in;
        for (int32_t k = 0; k < ro->n_in; k++) {
            rules_ref ref = ro->in[k];
            if (ref.kind == RULES_REF_VAR) {
                if (m->var[ref.idx] < 0) {
                    base_fail(err, errlen, "rule '%s': variable '%s' is not bound", r->id, r->vars[ref.idx].name);
                    return -1;
                }
                nd->in[k] = (rules_aref){RULES_AREF_TENSOR, m->var[ref.idx], 0};
            } else {
                nd->in[k] = (rules_aref){RULES_AREF_NODE, ref.idx, ref.out};
            }
        }
    }
    /* constrained parameters of the target: from the bound shapes */
    for (int32_t i = 0; i < r->n_constraints; i++) {
        const rules_constraint *c = &r->constraints[i];
        if (c->side != tside || c->n_eq == 0)
            continue;
        int64_t val = -1;
        for (int32_t e = 0; e < c->n_eq; e++) {
            int32_t t = m->var[c->eq[e].var];
            /* dim d of a variable of lift k is dim d + k of its tensor */
            int32_t at = t < 0 ? -1 : c->eq[e].dim + g->tensors[t].shape.rank - r->vars[c->eq[e].var].shape.rank;
            if (t < 0 || c->eq[e].dim < 0 || at < 0 || at >= g->tensors[t].shape.rank) {
                base_fail(err, errlen, "rule '%s': a constraint names an unbound variable", r->id);
                return -1;
            }
            int64_t d = g->tensors[t].shape.dims[at];
            if (e > 0 && d != val) {
                base_fail(err, errlen, "rule '%s': constrained dims differ (%lld vs %lld)", r->id, (long long)val,
                          (long long)d);
                return -1;
            }
            val = d;
        }
        ops_params *p = &pl->nodes[c->op].p;
        if (c->key == PM_LIST) {
            if (c->list_index < 0 || c->list_index >= p->n_list)
                return base_fail(err, errlen, "rule '%s': constraint on a missing list entry", r->id);
            p->list[c->list_index] = val;
        } else {
            p->v[c->key] = val;
        }
    }
    if (ra_infer_lifted(g, r, tgt, tside, m, pl, err, errlen) < 0)
        return -1;
    for (int32_t j = 0; j < pl->n_nodes; j++) {
        const rules_apply_node *nd = &pl->nodes[j];
        if (!rules_match_broadcasts(nd->op))
            continue;
        for (int32_t k = 0; k < nd->n_in; k++)
            if (!ops_shape_eq(ra_shape(g, pl, nd->in[k]), &nd->out[0]))
                return base_fail(err, errlen, "rule '%s': %s would broadcast, outside the model the rule was proved in",
                                 r->id, ops_table[nd->op].name);
    }
    pl->n_removed = m->n_nodes;
    for (int32_t i = 0; i < m->n_nodes; i++)
        pl->removed[i] = m->node[i];
    for (int32_t i = 0; i < r->n_outputs; i++) {
        rules_ref ps = fwd ? r->outputs[i].src : r->outputs[i].dst;
        rules_ref ts = fwd ? r->outputs[i].dst : r->outputs[i].src;
        if (ps.kind == RULES_REF_VAR)
            continue; /* the pattern passes a variable through: nothing to move */
        int32_t old_t = g->nodes[m->node[ps.idx]].out[ps.out];
        int dup = 0;
        for (int32_t j = 0; j < pl->n_map; j++)
            dup |= pl->old_t[j] == old_t;
        if (dup)
            continue;
        rules_aref nt;
        if (ts.kind == RULES_REF_VAR) {
            if (m->var[ts.idx] < 0)
                return base_fail(err, errlen, "rule '%s': output variable '%s' is not bound", r->id,
                                 r->vars[ts.idx].name);
            nt = (rules_aref){RULES_AREF_TENSOR, m->var[ts.idx], 0};
        } else {
            nt = (rules_aref){RULES_AREF_NODE, ts.idx, ts.out};
        }
        pl->old_t[pl->n_map] = old_t;
        pl->new_t[pl->n_map] = nt;
        pl->n_map++;
    }
    ra_reuse(ix, pl);
    return 0;
}

/* Readers of t after the edit that keep its producer alive: readers not gone, a graph-output
 * slot, new nodes reading it. Mapped tensors lose their readers and output slots. */
static int32_t ra_uses_left(const rules_match_index *ix, const rules_apply_plan *pl, int32_t t, uint32_t removed,
                            uint32_t dead) {
    int32_t n = 0;
    int mapped = 0;
    for (int32_t i = 0; i < pl->n_map; i++)
        mapped |= pl->old_t[i] == t;
    if (!mapped) {
        n += ix->is_output[t];
        for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1]; u++) {
            uint32_t s = ix->stamp[ix->use_node[u]];
            if (s != removed && s != dead)
                n++;
        }
    }
    for (int32_t j = 0; j < pl->n_nodes; j++)
        for (int32_t k = 0; k < pl->nodes[j].n_in; k++)
            n += pl->nodes[j].in[k].kind == RULES_AREF_TENSOR && pl->nodes[j].in[k].idx == t;
    return n;
}

int rules_apply_check(rules_match_index *ix, rules_apply_plan *pl, char *err, size_t errlen) {
    const graph *g = ix->g;
    rules_apply_plan_clear(pl);
    if (ix->cur > UINT32_MAX - 8) { /* stamps wrap: start over */
        memset(ix->stamp, 0, (size_t)g->n_nodes * sizeof *ix->stamp);
        ix->cur = 0;
    }
    const uint32_t REMOVED = ix->cur + 1, TARGET = ix->cur + 2, SEEN = ix->cur + 3, DEAD = ix->cur + 4;
    ix->cur += 4;
    for (int32_t i = 0; i < pl->n_removed; i++) {
        int32_t n = pl->removed[i];
        if (n < 0 || n >= g->n_nodes || !ix->live[n])
            return base_fail(err, errlen, "plan: removed node %d is not a live node", (int)n);
        ix->stamp[n] = REMOVED;
    }
    for (int32_t i = 0; i < pl->n_map; i++) {
        int32_t t = pl->old_t[i];
        if (t < 0 || t >= g->n_tensors || !ra_ref_ok(g, pl, pl->new_t[i], pl->n_nodes))
            return base_fail(err, errlen, "plan: mapped tensor %d out of range", (int)i);
        const ops_shape *a = &g->tensors[t].shape, *b = ra_shape(g, pl, pl->new_t[i]);
        if (!ops_shape_eq(a, b)) {
            char s1[96], s2[96];
            return base_fail(err, errlen, "tensor '%s' would change shape from %s to %s", g->tensors[t].name,
                             ops_shape_str(a, s1, sizeof s1), ops_shape_str(b, s2, sizeof s2));
        }
        if (pl->new_t[i].kind == RULES_AREF_TENSOR && g->tensors[pl->new_t[i].idx].dtype != g->tensors[t].dtype)
            return base_fail(err, errlen, "tensor '%s' would change type", g->tensors[t].name);
    }
    /* new nodes read no output of a removed node; collect the producers they read (targets) */
    int32_t max_target = -1;
    for (int32_t j = 0; j < pl->n_nodes; j++)
        for (int32_t k = 0; k < pl->nodes[j].n_in; k++) {
            rules_aref r = pl->nodes[j].in[k];
            if (r.kind != RULES_AREF_TENSOR)
                continue;
            int32_t p = g->tensors[r.idx].producer;
            if (p < 0)
                continue;
            if (ix->stamp[p] == REMOVED)
                return base_fail(err, errlen, "plan: a new node reads '%s', an output of a replaced node",
                                 g->tensors[r.idx].name);
            ix->stamp[p] = TARGET;
            if (ix->topo_pos[p] > max_target)
                max_target = ix->topo_pos[p];
        }
    /* outputs of removed nodes: mapped, or read only by removed nodes and not graph outputs */
    for (int32_t i = 0; i < pl->n_removed; i++) {
        const graph_node *nd = &g->nodes[pl->removed[i]];
        for (int32_t o = 0; o < nd->n_out; o++) {
            int32_t t = nd->out[o];
            int mapped = 0;
            for (int32_t j = 0; j < pl->n_map; j++)
                mapped |= pl->old_t[j] == t;
            if (mapped)
                continue;
            if (ix->is_output[t])
                return base_fail(err, errlen, "graph output '%s' would be dropped", g->tensors[t].name);
            for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1]; u++)
                if (ix->stamp[ix->use_node[u]] != REMOVED)
                    return base_fail(err, errlen, "'%s' is read outside the replaced nodes", g->tensors[t].name);
        }
    }
    /* cycles: from the readers of mapped tensors forwards, looking for a target */
    int32_t sp = 0;
    for (int32_t i = 0; i < pl->n_map; i++) {
        int32_t t = pl->old_t[i];
        for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1]; u++) {
            int32_t n = ix->use_node[u];
            if (ix->stamp[n] == REMOVED || ix->stamp[n] == SEEN || ix->topo_pos[n] > max_target)
                continue;
            if (ix->stamp[n] == TARGET)
                return base_fail(err, errlen, "the rewrite would create a cycle");
            ix->stamp[n] = SEEN;
            ix->stack[sp++] = n;
        }
    }
    while (sp) {
        const graph_node *nd = &g->nodes[ix->stack[--sp]];
        for (int32_t o = 0; o < nd->n_out; o++) {
            int32_t t = nd->out[o];
            for (int32_t u = ix->use_start[t]; u < ix->use_start[t + 1]; u++) {
                int32_t n = ix->use_node[u];
                if (ix->stamp[n] == REMOVED || ix->stamp[n] == SEEN || ix->topo_pos[n] > max_target)
                    continue;
                if (ix->stamp[n] == TARGET)
                    return base_fail(err, errlen, "the rewrite would create a cycle");
                ix->stamp[n] = SEEN;
                ix->stack[sp++] = n;
            }
        }
    }
    /* dead nodes: removed ones, then producers left without readers, transitively */
    int32_t cap = pl->n_removed + 16, n_dead = 0;
    int32_t *dead = base_xmalloc((size_t)cap * sizeof *dead);
    for (int32_t i = 0; i < pl->n_removed; i++)
        dead[n_dead++] = pl->removed[i];
    /* the stamp of a dead node is REMOVED (given) or DEAD (found); ra_uses_left counts both as gone */
    sp = 0;
    for (int32_t i = 0; i < pl->n_removed; i++) {
        const graph_node *nd = &g->nodes[pl->removed[i]];
        for (int32_t k = 0; k < nd->n_in; k++)
            ix->stack[sp++] = g->tensors[nd->in[k]].producer;
    }
    for (int32_t i = 0; i < pl->n_map; i++)
        ix->stack[sp++] = g->tensors[pl->old_t[i]].producer;
    while (sp) {
        int32_t p = ix->stack[--sp];
        if (p < 0 || ix->stamp[p] == REMOVED || ix->stamp[p] == DEAD || !ix->live[p])
            continue;
        const graph_node *nd = &g->nodes[p];
        int used = 0;
        for (int32_t o = 0; o < nd->n_out && !used; o++)
            used = ra_uses_left(ix, pl, nd->out[o], REMOVED, DEAD) > 0;
        if (used)
            continue;
        ix->stamp[p] = DEAD;
        if (n_dead == cap) {
            cap *= 2;
            dead = base_xrealloc(dead, (size_t)cap * sizeof *dead);
        }
        dead[n_dead++] = p;
        for (int32_t k = 0; k < nd->n_in; k++)
            ix->stack[sp++] = g->tensors[nd->in[k]].producer;
    }
    pl->dead = dead;
    pl->n_dead = n_dead;
    return 0;
}

const char *rules_apply_prefix(const graph *g, char *buf, size_t len) {
    for (int32_t k = 0;; k++) {
        if (k == 0)
            snprintf(buf, len, "opt");
        else
            snprintf(buf, len, "opt%d", (int)k);
        size_t n = strlen(buf);
        int taken = 0;
        for (int32_t i = 0; i < g->n_nodes && !taken; i++)
            taken = !strncmp(g->nodes[i].name, buf, n) && g->nodes[i].name[n] == '.';
        for (int32_t i = 0; i < g->n_tensors && !taken; i++)
            taken = !strncmp(g->tensors[i].name, buf, n) && g->tensors[i].name[n] == '.';
        if (!taken)
            return buf;
    }
}

int rules_apply_run(const rules_match_index *ix, const rules_apply_plan *pl, const char *prefix, int64_t *counter,
                    graph **out, char *err, size_t errlen) {
    const graph *g = ix->g;
    *out = NULL;
    graph *c = graph_clone(g);
    int32_t wid[RULES_APPLY_MAX_WEIGHTS];
    int32_t nout[RULES_APPLY_MAX_NODES][OPS_MAX_OUTPUTS];
    char name[256];
    for (int32_t i = 0; i < pl->n_weights; i++) {
        snprintf(name, sizeof name, "%s.%lld.const", prefix, (long long)(*counter)++);
        const rules_apply_weight *w = &pl->weights[i];
        wid[i] = graph_weight_const(c, name, w->shape.rank, w->shape.dims, w->value);
    }
    for (int32_t j = 0; j < pl->n_nodes && graph_ok(c); j++) {
        const rules_apply_node *nd = &pl->nodes[j];
        int32_t in[RULES_APPLY_MAX_IN];
        for (int32_t k = 0; k < nd->n_in; k++) {
            rules_aref r = nd->in[k];
            in[k] = r.kind == RULES_AREF_TENSOR ? r.idx : r.kind == RULES_AREF_NODE ? nout[r.idx][r.out] : wid[r.idx];
        }
        snprintf(name, sizeof name, "%s.%lld.%s", prefix, (long long)(*counter)++, ops_table[nd->op].name);
        int32_t n = graph_add(c, name, nd->op, &nd->p, nd->n_in, in, nout[j]);
        if (n >= 0)
            c->nodes[c->n_nodes - 1].tag = 1;
    }
    if (!graph_ok(c)) {
        base_fail(err, errlen, "%s", graph_error(c));
        graph_free(c);
        return -1;
    }
    int32_t swapped[RULES_APPLY_MAX_MAP], n_swapped = 0;
    for (int32_t i = 0; i < pl->n_map; i++) {
        int32_t t_old = pl->old_t[i];
        rules_aref r = pl->new_t[i];
        int32_t t_new = r.kind == RULES_AREF_TENSOR ? r.idx : r.kind == RULES_AREF_NODE ? nout[r.idx][r.out] : wid[r.idx];
        for (int32_t u = ix->use_start[t_old]; u < ix->use_start[t_old + 1]; u++) {
            graph_node *nd = &c->nodes[ix->use_node[u]];
            for (int32_t k = 0; k < nd->n_in; k++)
                if (nd->in[k] == t_old)
                    nd->in[k] = t_new;
        }
        int is_out = 0;
        for (int32_t o = 0; o < c->n_outputs; o++)
            if (c->outputs[o] == t_old) {
                c->outputs[o] = t_new;
                is_out = 1;
            }
        /* a new tensor takes over a graph output's name (once); the old one, now dead, takes its */
        int fresh = is_out && r.kind != RULES_AREF_TENSOR;
        for (int32_t j = 0; j < n_swapped && fresh; j++)
            fresh = swapped[j] != t_new;
        if (fresh) {
            char *tmp = c->tensors[t_old].name;
            c->tensors[t_old].name = c->tensors[t_new].name;
            c->tensors[t_new].name = tmp;
            swapped[n_swapped++] = t_new;
        }
    }
    graph_compact(c);
    *out = c;
    return 0;
}

/* --- a rule as a graph ---------------------------------------------------------------------------- */

/* The graph tensor of ref on one side: vars[idx] for a variable, else the op's output. */
static int32_t ra_pair_tensor(const int32_t *vars, const int32_t (*outs)[OPS_MAX_OUTPUTS], rules_ref ref) {
    return ref.kind == RULES_REF_VAR ? vars[ref.idx] : outs[ref.idx][ref.out];
}

/* The ops of one side into g, named "<side>.K"; outs[k] their output tensors. 0, or -1. */
static int ra_pair_side(graph *g, const rules_graph *sg, const char *side, const int32_t *vars,
                        int32_t (*outs)[OPS_MAX_OUTPUTS]) {
    for (int32_t k = 0; k < sg->n_ops; k++) {
        const rules_op *o = &sg->ops[k];
        int32_t in[RULES_MAX_IN];
        char name[32];
        for (int32_t i = 0; i < o->n_in; i++)
            in[i] = ra_pair_tensor(vars, (const int32_t(*)[OPS_MAX_OUTPUTS])outs, o->in[i]);
        snprintf(name, sizeof name, "%s.%d", side, (int)k);
        if (graph_add(g, name, o->op, &o->p, o->n_in, in, outs[k]) < 0)
            return -1;
    }
    return 0;
}

/* A graph named after r with each variable as an input; vars[v] their tensors. */
static graph *ra_vars_graph(const rules_rule *r, int32_t *vars) {
    graph *g = graph_new(r->id);
    for (int32_t v = 0; v < r->n_vars && graph_ok(g); v++)
        vars[v] = graph_input(g, r->vars[v].name, r->vars[v].shape.rank, r->vars[v].shape.dims);
    return g;
}

/* NULL with the message of g's first error (g freed), else g. */
static graph *ra_graph_done(graph *g, const rules_rule *r, char *err, size_t errlen) {
    if (graph_ok(g))
        return g;
    snprintf(err, errlen, "rule '%s' as a graph: %s", r->id, graph_error(g));
    graph_free(g);
    return NULL;
}

graph *rules_pair_graph(const rules_rule *r, int32_t *a, int32_t *b, int32_t *n, char *err, size_t errlen) {
    int32_t vars[RULES_MAX_VARS];
    int32_t src[RULES_MAX_OPS][OPS_MAX_OUTPUTS], dst[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    graph *g = ra_vars_graph(r, vars);
    if (graph_ok(g) && ra_pair_side(g, &r->src, "src", vars, src) == 0)
        ra_pair_side(g, &r->dst, "dst", vars, dst);
    *n = 0;
    for (int32_t i = 0; i < r->n_outputs && graph_ok(g); i++) {
        a[i] = ra_pair_tensor(vars, (const int32_t(*)[OPS_MAX_OUTPUTS])src, r->outputs[i].src);
        b[i] = ra_pair_tensor(vars, (const int32_t(*)[OPS_MAX_OUTPUTS])dst, r->outputs[i].dst);
        for (int32_t s = 0; s < 2; s++) {
            int32_t t = s ? b[i] : a[i];
            int marked = g->tensors[t].kind == GRAPH_T_INPUT;
            for (int32_t j = 0; j < g->n_outputs && !marked; j++)
                marked = g->outputs[j] == t;
            if (!marked)
                graph_mark_output(g, t);
        }
        *n = i + 1;
    }
    return ra_graph_done(g, r, err, errlen);
}

graph *rules_side_graph(const rules_rule *r, rules_side side, char *err, size_t errlen) {
    int32_t vars[RULES_MAX_VARS], outs[RULES_MAX_OPS][OPS_MAX_OUTPUTS];
    const int src = side == RULES_SIDE_SRC;
    graph *g = ra_vars_graph(r, vars);
    if (graph_ok(g))
        ra_pair_side(g, src ? &r->src : &r->dst, src ? "src" : "dst", vars, outs);
    for (int32_t i = 0; i < r->n_outputs && graph_ok(g); i++)
        graph_mark_output(g, ra_pair_tensor(vars, (const int32_t(*)[OPS_MAX_OUTPUTS])outs,
                                            src ? r->outputs[i].src : r->outputs[i].dst));
    return ra_graph_done(g, r, err, errlen);
}
