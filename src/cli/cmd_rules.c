/* cmd_rules.c: `tasc rules export --egg RULES [--out FILE]`: a rule file as the S-expression
 * rewrites of Tensat/egg, one "lhs=>rhs" per line (verifier/verify.h), so other tools can
 * cross-check the rules. Written to stdout, or through a temporary and a rename to FILE.
 * `tasc rules usage --rules FILE MODEL...`: the optimizer's per-rule statistics (search.h,
 * search_opts.stats) summed over models and printed as a table, most applied first.
 * `tasc rules prune --rules FILE --out FILE`: the rules that the others derive, dropped (each
 * proved from the rest by equality saturation, eqsat.h's eqsat_joins).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cost.h"
#include "eqsat.h"
#include "graph.h"
#include "match.h"
#include "rules.h"
#include "search.h"
#include "verify.h"

typedef struct {
    int egg;
    const char *out;
} rules_args;

static const cmd_opt rules_opts[] = {
    CMD_FLAG("--egg", offsetof(rules_args, egg), "the Tensat/egg format (the only one so far)"),
    CMD_NONEMPTY("--out", "FILE", offsetof(rules_args, out), "a file name", "write to FILE instead of stdout"),
    CMD_OPT_END,
};

typedef struct {
    const char *rules, *builtins, *json;
    int64_t top;
    search_opts so;
    cmd_model_opts mo;
} usage_args;

#define USAGE_MAX_MODELS 64

static const cmd_opt usage_opts[] = {
    CMD_NONEMPTY("--rules", "FILE", offsetof(usage_args, rules), "a file", "the rule file (required)"),
    CMD_CHOICE("--builtins", "SET", offsetof(usage_args, builtins), "all|minimal",
               "built-in rewrites, as `tasc optimize --builtins` (default all)"),
    CMD_F64("--alpha", "A", offsetof(usage_args, so.alpha), 1.0, 10.0, "as tasc optimize (default %D)"),
    CMD_I64("--budget", "B", offsetof(usage_args, so.budget), 0, INT64_C(1000000000), "as tasc optimize (default %D)"),
    CMD_F64("--time-limit", "S", offsetof(usage_args, so.time_limit_s), 0.0, 1e6, "as tasc optimize (default %D)"),
    CMD_I64("--top", "N", offsetof(usage_args, top), 0, INT64_C(1000000000),
            "print the N most used rules and built-ins (default %D; 0: every one found or applied)"),
    CMD_NONEMPTY("--json", "FILE", offsetof(usage_args, json), "a file",
                 "also write the sums as JSON (the format of `tasc optimize --stats`, model \"sum\")"),
    CMD_MODEL_OPTS(offsetof(usage_args, mo)),
    CMD_OPT_END,
};

static void usage_defaults(usage_args *a) {
    memset(a, 0, sizeof *a);
    search_opts_default(&a->so);
    a->builtins = "all";
    a->top = 30;
}

typedef struct {
    const char *rules, *out, *list, *by;
    int64_t iters, nodes;
} prune_args;

static const cmd_opt prune_opts[] = {
    CMD_NONEMPTY("--rules", "FILE", offsetof(prune_args, rules), "a file", "the rule file (required)"),
    CMD_NONEMPTY("--out", "FILE", offsetof(prune_args, out), "a file", "the rules kept, as a rule file (required)"),
    CMD_NONEMPTY("--list", "FILE", offsetof(prune_args, list), "a file",
                 "also write the rules dropped, one \"ID ROUNDS\" line each, in the order tried"),
    CMD_CHOICE("--by", "HOW", offsetof(prune_args, by), "rounds|move",
               "rounds: equality saturation joins the two sides; move: one application of one other rule turns each "
               "side the search rewrites from into the other (default rounds)"),
    CMD_I64("--iters", "N", offsetof(prune_args, iters), 1, 64, "rounds of rewriting per rule at most (default %D)"),
    CMD_I64("--nodes", "N", offsetof(prune_args, nodes), 16, 1000000,
            "no round starts once the e-graph holds N e-nodes (default %D)"),
    CMD_OPT_END,
};

static void prune_defaults(prune_args *a) {
    memset(a, 0, sizeof *a);
    a->by = "rounds";
    a->iters = 3;
    a->nodes = 400;
}

static void rules_usage(const rules_args *defaults) {
    usage_args ud;
    usage_defaults(&ud);
    prune_args pd;
    prune_defaults(&pd);
    printf("usage: tasc rules export --egg RULES [--out FILE]\n"
           "       tasc rules usage --rules FILE MODEL... [--builtins all|minimal] [--alpha A] [--budget B]\n"
           "                        [--time-limit S] [--top N] [--json FILE] [ONNX options]\n"
           "       tasc rules prune --rules FILE --out FILE [--list FILE] [--by rounds|move] [--iters N] [--nodes N]\n"
           "\n"
           "Write the rules of RULES (a rule file) as Tensat/egg rewrites, one \"lhs=>rhs\" line per\n"
           "mapped output, terms in the language of verifier/axioms.smt2 (integer parameters first,\n"
           "then inputs; variables ?name). An output egg cannot take in either direction is left out\n"
           "and counted on stderr.\n"
           "\n"
           "options:\n");
    cmd_opts_help(rules_opts, defaults);
    printf("\n"
           "usage: optimize each MODEL as `tasc optimize --rules FILE --no-check` would (analytic cost\n"
           "model), collecting per rule and direction the matches found, those whose replacement\n"
           "type-checked, those queued (under alpha and the size limit), the applications on the way\n"
           "to each result and the time spent matching; print one line per model, then the sums, most\n"
           "applied first (then most found), and how many rules matched, type-checked and were applied.\n"
           "\n"
           "usage options:\n");
    cmd_opts_help(usage_opts, &ud);
    printf("\n"
           "prune: drop the rules the others derive. Rules are tried largest first (most ops on both\n"
           "sides, then the later id); those the search never uses (repeats, commutativity rules, patterns\n"
           "it cannot match) are kept untried. --by rounds: both sides of the rule become one graph over\n"
           "its variables (the shapes it was found at) and the optimizer's equality saturation rewrites it\n"
           "with every rule still kept but this one (no built-in rewrite); where each output's two sides\n"
           "end in one e-class, the rule is derived by verified rules and dropped. --by move: dropped\n"
           "where, for each direction the search uses it in, one application of one other kept rule turns\n"
           "that side's graph into the other's (the backtracking search then reaches the same graphs in as\n"
           "many moves). A rule dropped is derived from the rules kept in the end. The rest are written\n"
           "to --out in their order, with the manifest count \"derived\". Progress on stderr; a summary\n"
           "on stdout. Deterministic.\n"
           "\n"
           "prune options:\n");
    cmd_opts_help(prune_opts, &pd);
    printf("\n"
           "exit codes: 0 ok, 1 bad input, 2 bad command line\n");
}

/* The rule file at path, or NULL after its one-line message. */
static rules_set *rules_open(const char *path) {
    char err[1024];
    rules_set *rs = rules_load(path, err, sizeof err);
    if (!rs)
        cmd_error("rules", "%s", err);
    return rs;
}

/* The egg text of the rule file in; NULL after the message. Caller frees. */
static char *rules_egg_text(const char *in, int64_t *skipped) {
    char err[1024];
    rules_set *rs = rules_open(in);
    if (!rs)
        return NULL;
    char *text = verify_export_egg(rs, skipped, err, sizeof err);
    rules_set_free(rs);
    if (!text)
        cmd_error("rules", "%s", err);
    return text;
}

/* The sums over models: res->stats summed, and per source the models that found / applied it. */
typedef struct {
    search_result sum;
    int32_t *models_applied;
    int32_t n_models;
} usage_sum;

/* Optimize one model with statistics and add them to u; an exit code. */
static int usage_model(const usage_args *a, const rules_set *rs, cost_model *cm, const char *path, usage_sum *u) {
    graph *g = cmd_load_model_opts("rules", path, &a->mo);
    if (!g)
        return TASC_EXIT_INPUT;
    search_opts so = a->so;
    so.stats = 1;
    search_opts_builtins(&so, strcmp(a->builtins, "minimal") ? SEARCH_BUILTINS_ALL : SEARCH_BUILTINS_MINIMAL);
    search_result res;
    graph *best = NULL;
    char err[1024];
    int rc = TASC_EXIT_OK;
    if (search_optimize(g, rs, cm, &so, &best, &res, err, sizeof err) < 0) {
        cmd_error("rules", "%s: %s", path, err);
        rc = TASC_EXIT_INPUT;
    } else {
        printf("%-40s nodes %4d -> %4d  predicted speedup %.3fx  search %.2f s%s\n", path, (int)res.nodes_before,
               (int)res.nodes_after, res.cost_after > 0 ? res.cost_before / res.cost_after : 1.0,
               res.search_seconds, res.time_limited ? " (time limit)" : "");
        if (!u->sum.stats) {
            u->sum.n_rules = res.n_rules;
            u->sum.n_stats = res.n_stats;
            u->sum.stats = base_xcalloc((size_t)res.n_stats + 1, sizeof *u->sum.stats);
            u->models_applied = base_xcalloc((size_t)res.n_stats + 1, sizeof *u->models_applied);
        }
        for (int32_t i = 0; i < res.n_stats; i++) {
            search_source_stat *d = &u->sum.stats[i], *s = &res.stats[i];
            d->found += s->found, d->typechecked += s->typechecked, d->queued += s->queued;
            d->applied += s->applied, d->seconds += s->seconds;
            u->models_applied[i] += s->applied > 0;
        }
        u->sum.cost_before += res.cost_before, u->sum.cost_after += res.cost_after;
        u->sum.search_seconds += res.search_seconds;
        u->n_models++;
    }
    search_result_free(&res);
    graph_free(best);
    graph_free(g);
    return rc;
}

static const usage_sum *usage_sort_u;

/* Most applied first, then most found, then source order. */
static int usage_cmp(const void *pa, const void *pb) {
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    const search_source_stat *x = &usage_sort_u->sum.stats[a], *y = &usage_sort_u->sum.stats[b];
    if (x->applied != y->applied)
        return x->applied > y->applied ? -1 : 1;
    if (x->found != y->found)
        return x->found > y->found ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The table of sums, then the counts of rules that matched, type-checked and were applied. */
static void usage_print(const usage_sum *u, const rules_set *rs, int64_t top) {
    int32_t n = 0, *order = base_xcalloc((size_t)u->sum.n_stats + 1, sizeof *order);
    int64_t rules_found = 0, rules_typed = 0, rules_applied = 0;
    for (int32_t i = 0; i < u->sum.n_stats; i++) {
        const search_source_stat *st = &u->sum.stats[i];
        if (!st->found && !st->applied)
            continue;
        order[n++] = i;
        if (i < 2 * u->sum.n_rules)
            rules_found += st->found > 0, rules_typed += st->typechecked > 0, rules_applied += st->applied > 0;
    }
    usage_sort_u = u;
    qsort(order, (size_t)n, sizeof *order, usage_cmp);
    printf("\n%-28s %-8s %10s %11s %8s %8s %6s %9s\n", "rule", "dir", "found", "typechecked", "queued", "applied",
           "models", "seconds");
    for (int32_t j = 0; j < n && (top == 0 || j < top); j++) {
        const search_source_stat *st = &u->sum.stats[order[j]];
        const char *dir, *name = search_source_name(rs, &u->sum, order[j], &dir);
        printf("%-28s %-8s %10lld %11lld %8lld %8lld %6d %9.3f\n", name, dir, (long long)st->found,
               (long long)st->typechecked, (long long)st->queued, (long long)st->applied,
               (int)u->models_applied[order[j]], st->seconds);
    }
    if (top > 0 && n > top)
        printf("(%d more; --top 0 lists them all)\n", (int)(n - top));
    printf("\n%d models, %d rules: %lld rule directions matched, %lld type-checked, %lld applied; "
           "search %.2f s in all\n", (int)u->n_models, (int)u->sum.n_rules, (long long)rules_found,
           (long long)rules_typed, (long long)rules_applied, u->sum.search_seconds);
    free(order);
}

/* --json FILE: the sums; 0, or -1 after the message. */
static int usage_write_json(const usage_args *a, const usage_sum *u, const rules_set *rs) {
    cmd_tmpfile tf;
    if (cmd_tmp_open("rules", a->json, &tf) < 0)
        return -1;
    search_stats_write_json(tf.f, rs, &u->sum, "sum", a->rules);
    return cmd_tmp_commit("rules", &tf);
}

/* `tasc rules usage`; an exit code. */
static int usage_main(int argc, char **argv) {
    usage_args a;
    usage_defaults(&a);
    const char *models[USAGE_MAX_MODELS];
    int n = cmd_opts_parse("rules", usage_opts, &a, argc, argv, 2, models, USAGE_MAX_MODELS);
    if (n < 0)
        return TASC_EXIT_USAGE;
    if (!a.rules || n == 0) {
        cmd_error("rules", "usage needs --rules FILE and at least one MODEL (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    rules_set *rs = rules_open(a.rules);
    if (!rs)
        return TASC_EXIT_INPUT;
    cost_model *cm = cost_analytic_new(NULL);
    usage_sum u;
    memset(&u, 0, sizeof u);
    int rc = TASC_EXIT_OK;
    for (int i = 0; i < n && rc == TASC_EXIT_OK; i++)
        rc = usage_model(&a, rs, cm, models[i], &u);
    if (rc == TASC_EXIT_OK) {
        usage_print(&u, rs, a.top);
        if (a.json && usage_write_json(&a, &u, rs) < 0)
            rc = TASC_EXIT_INPUT;
    }
    search_result_free(&u.sum);
    free(u.models_applied);
    cost_model_free(cm);
    rules_set_free(rs);
    return rc;
}

/* Ops on both sides of rule i. */
static int32_t prune_size(const rules_set *rs, int32_t i) {
    return rs->rules[i].src.n_ops + rs->rules[i].dst.n_ops;
}

static const rules_set *prune_sort_rs;

/* Largest first, then the later rule first (the generator numbers rules fewest ops first). */
static int prune_cmp(const void *pa, const void *pb) {
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    int32_t sa = prune_size(prune_sort_rs, a), sb = prune_size(prune_sort_rs, b);
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return (a < b) - (a > b);
}

/* Whether one move of the rules not off takes side graph a to b and, where the search uses the
 * rule that way (dirs & 2), b to a: 1, 0, or -1 with a message. */
static int prune_moves(eqsat_prover *pv, const rules_rule *r, int dirs, const uint8_t *off, char *err, size_t errlen) {
    graph *a = rules_side_graph(r, RULES_SIDE_SRC, err, errlen);
    graph *b = a ? rules_side_graph(r, RULES_SIDE_DST, err, errlen) : NULL;
    int found = 1, rc = b ? 0 : -1;
    if (rc == 0 && (dirs & 1))
        rc = eqsat_one_move(pv, a, b, off, &found, err, errlen);
    if (rc == 0 && found && (dirs & 2))
        rc = eqsat_one_move(pv, b, a, off, &found, err, errlen);
    graph_free(a);
    graph_free(b);
    return rc < 0 ? -1 : found;
}

/* Whether the rules not off derive rule i (a.by: by rounds of equality saturation, or by one
 * move in each direction the search uses it in): 1, 0, or -1 with a message. */
static int prune_derived(const prune_args *pa, eqsat_prover *pv, const rules_set *rs, int32_t i, const uint8_t *off,
                         cost_model *cm, const search_opts *so, int32_t *rounds, char *err, size_t errlen) {
    const rules_rule *r = &rs->rules[i];
    if (!strcmp(pa->by, "move")) {
        *rounds = 1;
        return prune_moves(pv, r, eqsat_prover_uses(pv, i), off, err, errlen);
    }
    int32_t a[RULES_MAX_OUTPUTS], b[RULES_MAX_OUTPUTS], n = 0;
    uint8_t joined[RULES_MAX_OUTPUTS];
    graph *g = rules_pair_graph(r, a, b, &n, err, errlen);
    if (!g)
        return -1;
    int rc = eqsat_joins(pv, g, off, cm, so, n, a, b, joined, rounds, err, errlen);
    graph_free(g);
    if (rc < 0)
        return -1;
    int all = 1;
    for (int32_t k = 0; k < n; k++)
        all &= joined[k];
    return all;
}

/* The kept rules of rs (off[i] == 0) as a set with the manifest, the command (how: its options)
 * appended to the generator, and the count "derived"; NULL with a message. */
static rules_set *prune_kept(const rules_set *rs, const uint8_t *off, int64_t derived, const char *how, char *err,
                             size_t errlen) {
    rules_set *out = rules_set_manifest_copy(rs);
    if (out) {
        char *gen = base_xmalloc(strlen(out->generator ? out->generator : "") + strlen(how) + 32);
        sprintf(gen, "%s%stasc rules prune %s", out->generator ? out->generator : "", out->generator ? "; " : "", how);
        free(out->generator);
        out->generator = gen;
    }
    if (out && rules_set_count(out, "derived", (uint64_t)derived) < 0) {
        snprintf(err, errlen, "the manifest holds %d counts already: no room for \"derived\"", RULES_MAX_COUNTS);
        rules_set_free(out);
        return NULL;
    }
    int bad = !out;
    for (int32_t i = 0; i < rs->n_rules && !bad; i++)
        if (!off[i])
            bad |= rules_set_add(out, &rs->rules[i]) < 0;
    if (bad) {
        snprintf(err, errlen, "out of memory");
        rules_set_free(out);
        return NULL;
    }
    return out;
}

/* One prune, in passes until one drops nothing (a rule the search skipped as a repeat of a rule
 * dropped since is searched in the next pass): which rules of rs are dropped (off), the rounds
 * each took, the order they went in. */
typedef struct {
    const prune_args *a;
    const rules_set *rs;
    uint8_t *off;
    int32_t *rounds;
    int32_t *dropped, n_dropped; /* rules of rs in the order dropped */
    int64_t unused;              /* rules of the result the search does not use */
    int32_t passes;
    double t0;
} prune_run;

/* One pass over sub (the rules of rs still kept; map[j]: rule j's index in rs): every rule the
 * search uses tried, largest first. The number dropped, or -1 after the message. */
static int64_t prune_pass(prune_run *p, const rules_set *sub, const int32_t *map) {
    int32_t n = sub->n_rules, *order = base_xmalloc(sizeof(int32_t) * ((size_t)n + 1));
    uint8_t *off = base_xcalloc((size_t)n + 1, 1);
    for (int32_t j = 0; j < n; j++)
        order[j] = j;
    prune_sort_rs = sub;
    qsort(order, (size_t)n, sizeof *order, prune_cmp);
    cost_model *cm = cost_analytic_new(NULL);
    search_opts so;
    search_opts_default(&so);
    so.eqsat_iters = (int32_t)p->a->iters;
    so.eqsat_nodes = (int32_t)p->a->nodes;
    so.time_limit_s = 0; /* the limits above bound each proof; a clock would make the result vary */
    eqsat_prover *pv = eqsat_prover_new(sub);
    char err[1024];
    double shown = base_now();
    int64_t derived = 0;
    p->unused = 0;
    for (int32_t k = 0; k < n && derived >= 0; k++) {
        int32_t j = order[k], i = map[j];
        if (!eqsat_prover_uses(pv, j)) { /* never searched (a commutativity rule declares its op's) */
            p->unused++;
            continue;
        }
        off[j] = 1;
        int d = prune_derived(p->a, pv, sub, j, off, cm, &so, &p->rounds[i], err, sizeof err);
        if (d < 0) {
            cmd_error("rules", "%s: %s", p->a->rules, err);
            derived = -1;
            break;
        }
        off[j] = (uint8_t)d;
        if (d) {
            p->off[i] = 1;
            p->dropped[p->n_dropped++] = i;
            derived++;
        }
        if (base_now() - shown >= 5.0 || k + 1 == n) {
            shown = base_now();
            fprintf(stderr, "tasc rules prune: pass %d: %d of %d rules tried, %lld derived, %.0f s\n", (int)p->passes,
                    (int)(k + 1), (int)n, (long long)derived, shown - p->t0);
        }
    }
    eqsat_prover_free(pv);
    cost_model_free(cm);
    free(order);
    free(off);
    return derived;
}

/* Passes until one drops nothing; an exit code. */
static int prune_passes(prune_run *p) {
    const rules_set *rs = p->rs;
    int32_t *map = base_xmalloc(sizeof(int32_t) * ((size_t)rs->n_rules + 1));
    for (int32_t i = 0; i < rs->n_rules; i++)
        map[i] = i;
    const rules_set *sub = rs;
    rules_set *kept = NULL;
    int64_t d = 0;
    do {
        p->passes++;
        d = prune_pass(p, sub, map);
        if (d <= 0)
            break;
        rules_set_free(kept); /* the rules still kept, in their order, for the next pass */
        kept = rules_set_new();
        int32_t n = 0;
        for (int32_t i = 0; i < rs->n_rules && d > 0; i++)
            if (!p->off[i]) {
                if (rules_set_add(kept, &rs->rules[i]) < 0) {
                    cmd_error("rules", "out of memory");
                    d = -1;
                }
                map[n++] = i;
            }
        sub = kept;
    } while (d > 0);
    rules_set_free(kept);
    free(map);
    return d < 0 ? TASC_EXIT_INPUT : TASC_EXIT_OK;
}

/* The kept rules to --out, the dropped ones to --list; an exit code. */
static int prune_write(const prune_run *p) {
    const prune_args *a = p->a;
    char how[64], err[1024];
    if (!strcmp(a->by, "move"))
        snprintf(how, sizeof how, "--by move");
    else
        snprintf(how, sizeof how, "--by rounds --iters %lld --nodes %lld", (long long)a->iters, (long long)a->nodes);
    rules_set *kept = prune_kept(p->rs, p->off, p->n_dropped, how, err, sizeof err);
    int rc = TASC_EXIT_OK;
    if (!kept || rules_save(kept, a->out, err, sizeof err) < 0) {
        cmd_error("rules", "%s: %s", kept ? a->out : a->rules, err);
        rc = TASC_EXIT_INPUT;
    }
    rules_set_free(kept);
    if (rc == TASC_EXIT_OK && a->list) {
        cmd_tmpfile tf;
        rc = cmd_tmp_open("rules", a->list, &tf) < 0 ? TASC_EXIT_INPUT : TASC_EXIT_OK;
        for (int32_t k = 0; k < p->n_dropped && rc == TASC_EXIT_OK; k++)
            fprintf(tf.f, "%s %d\n", p->rs->rules[p->dropped[k]].id, (int)p->rounds[p->dropped[k]]);
        if (rc == TASC_EXIT_OK && cmd_tmp_commit("rules", &tf) < 0)
            rc = TASC_EXIT_INPUT;
    }
    return rc;
}

/* The summary table on stdout: rules by ops on both sides, dropped and kept. */
static void prune_print(const prune_run *p) {
    int32_t n = p->rs->n_rules;
    int64_t by_size[2 * RULES_MAX_OPS + 1][2] = {{0}}; /* [ops][dropped?] */
    for (int32_t i = 0; i < n; i++)
        by_size[prune_size(p->rs, i)][p->off[i]]++;
    printf("%-10s %10s %10s %10s\n", "ops (both)", "rules", "derived", "kept");
    for (int32_t s = 0; s <= 2 * RULES_MAX_OPS; s++)
        if (by_size[s][0] + by_size[s][1])
            printf("%-10d %10lld %10lld %10lld\n", (int)s, (long long)(by_size[s][0] + by_size[s][1]),
                   (long long)by_size[s][1], (long long)by_size[s][0]);
    printf("%-10s %10d %10lld %10lld\n", "all", (int)n, (long long)p->n_dropped, (long long)(n - p->n_dropped));
    printf("%lld kept rules the search does not use (repeats, commutativity, unusable patterns): never tried\n",
           (long long)p->unused);
    if (!strcmp(p->a->by, "move"))
        printf("derived by one move in each direction searched; %d pass%s, %.1f s; kept rules written to %s\n",
               (int)p->passes, p->passes == 1 ? "" : "es", base_now() - p->t0, p->a->out);
    else
        printf("rounds at most %lld, e-nodes at most %lld; %d pass%s, %.1f s; kept rules written to %s\n",
               (long long)p->a->iters, (long long)p->a->nodes, (int)p->passes, p->passes == 1 ? "" : "es",
               base_now() - p->t0, p->a->out);
}

/* `tasc rules prune`; an exit code. */
static int prune_main(int argc, char **argv) {
    prune_args a;
    prune_defaults(&a);
    if (cmd_opts_parse("rules", prune_opts, &a, argc, argv, 2, NULL, 0) < 0)
        return TASC_EXIT_USAGE;
    if (!a.rules || !a.out) {
        cmd_error("rules", "prune needs --rules FILE and --out FILE (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    rules_set *rs = rules_open(a.rules);
    if (!rs)
        return TASC_EXIT_INPUT;
    prune_run p;
    memset(&p, 0, sizeof p);
    p.a = &a;
    p.rs = rs;
    int32_t n = rs->n_rules;
    p.off = base_xcalloc((size_t)n + 1, 1);
    p.rounds = base_xcalloc((size_t)n + 1, sizeof *p.rounds);
    p.dropped = base_xmalloc(sizeof(int32_t) * ((size_t)n + 1));
    p.t0 = base_now();
    int rc = prune_passes(&p);
    if (rc == TASC_EXIT_OK)
        rc = prune_write(&p);
    if (rc == TASC_EXIT_OK)
        prune_print(&p);
    free(p.off);
    free(p.rounds);
    free(p.dropped);
    rules_set_free(rs);
    return rc;
}

int cmd_rules(int argc, char **argv) {
    const char *cmd = "rules";
    rules_args a = {0};
    if (cmd_wants_help(argc, argv)) {
        rules_usage(&a);
        return TASC_EXIT_OK;
    }
    if (argc >= 2 && !strcmp(argv[1], "usage"))
        return usage_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "prune"))
        return prune_main(argc, argv);
    if (argc < 2 || strcmp(argv[1], "export") != 0) {
        cmd_error(cmd, "expected 'export', 'usage' or 'prune' (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    const char *in = NULL;
    if (cmd_opts_parse(cmd, rules_opts, &a, argc, argv, 2, &in, 1) < 0)
        return TASC_EXIT_USAGE;
    if (!a.egg) {
        cmd_error(cmd, "missing the format: --egg (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    if (!in) {
        cmd_error(cmd, "missing RULES (tasc rules --help)");
        return TASC_EXIT_USAGE;
    }
    int64_t skipped = 0;
    char *text = rules_egg_text(in, &skipped);
    if (!text)
        return TASC_EXIT_INPUT;
    int rc = TASC_EXIT_OK;
    if (a.out) {
        if (cmd_write_text(cmd, a.out, text) < 0)
            rc = TASC_EXIT_INPUT;
    } else {
        fputs(text, stdout);
        if (fflush(stdout) != 0) {
            cmd_error(cmd, "cannot write to stdout");
            rc = TASC_EXIT_INPUT;
        }
    }
    if (skipped)
        fprintf(stderr, "tasc rules: %lld outputs left out (a bare variable on the left, or a right-side variable "
                        "missing on the left)\n", (long long)skipped);
    free(text);
    return rc;
}
