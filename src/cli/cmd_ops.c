/* cmd_ops.c: `tasc ops [NAME] [--verbose]` -- the operator table as the program sees it: each
 * op's name, input and output counts, parameters with their domains and defaults, and meaning;
 * then the table's self-check (ops_table_check). Everything printed comes from ops_table, so
 * this listing cannot drift from the code. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "ops.h"

typedef struct {
    int verbose;
} ops_args;

static const cmd_opt ops_opts[] = {
    CMD_FLAG("--verbose", offsetof(ops_args, verbose),
             "also the values the rule generator draws, which inputs are normally weights, and which "
             "implementation slots are filled (cpu, cuda, z3, fp)"),
    CMD_FLAG("-v", offsetof(ops_args, verbose), NULL),
    CMD_OPT_END,
};

static void ops_usage(const ops_args *defaults) {
    printf("usage: tasc ops [NAME] [--verbose]\n"
           "\n"
           "List the operator table (or one operator): inputs, outputs, parameters with their\n"
           "domains and defaults, and what the operator computes; then run the table's self-check.\n"
           "\n"
           "options:\n");
    cmd_opts_help(ops_opts, defaults);
    printf("\n"
           "exit codes: 0 ok, 1 unknown operator NAME, 2 bad command line, 4 the self-check failed\n");
}

static void ops_print_enum_domain(const char *const *names, int64_t lo, int64_t hi, int count) {
    printf("{");
    for (int64_t v = lo; v <= hi; v++)
        printf("%s%s", v > lo ? "|" : "", (v >= 0 && v < count) ? names[v] : "?");
    printf("}");
}

static const char *ops_enum_name(const char *const *names, int64_t v, int count) {
    return (v >= 0 && v < count) ? names[v] : "?";
}

static void ops_print_param(const ops_param_desc *pd, int verbose) {
    const ops_param_info *pi = &ops_param_table[pd->key];
    printf("    %-12s ", pd->key == PM_LIST && pd->list_name ? pd->list_name : pi->name);
    switch (pi->kind) {
    case OPS_PK_INT:
        printf("int [%lld, %lld]", (long long)pd->lo, (long long)pd->hi);
        if (!pd->required)
            printf(" default %lld", (long long)pd->def);
        break;
    case OPS_PK_FLOAT:
        printf("float");
        if (!pd->required)
            printf(" default %g", (double)ops_p2f(pd->def));
        break;
    case OPS_PK_ACT:
        ops_print_enum_domain(ops_act_names, pd->lo, pd->hi, OPS_ACT_COUNT);
        if (!pd->required)
            printf(" default %s", ops_enum_name(ops_act_names, pd->def, OPS_ACT_COUNT));
        break;
    case OPS_PK_PADMODE:
        ops_print_enum_domain(ops_padmode_names, pd->lo, pd->hi, OPS_PAD_COUNT);
        if (!pd->required)
            printf(" default %s", ops_enum_name(ops_padmode_names, pd->def, OPS_PAD_COUNT));
        break;
    case OPS_PK_LIST:
        printf("list of up to %d ints in [%lld, %lld]", OPS_MAX_LIST, (long long)pd->lo, (long long)pd->hi);
        break;
    }
    if (pd->required)
        printf(" (required)");
    if (verbose && pd->n_gen > 0) {
        printf("  generator draws:");
        for (int32_t k = 0; k < pd->n_gen && k < 8; k++) {
            if (pi->kind == OPS_PK_FLOAT)
                printf(" %g", (double)ops_p2f(pd->gen[k]));
            else if (pi->kind == OPS_PK_ACT)
                printf(" %s", ops_enum_name(ops_act_names, pd->gen[k], OPS_ACT_COUNT));
            else if (pi->kind == OPS_PK_PADMODE)
                printf(" %s", ops_enum_name(ops_padmode_names, pd->gen[k], OPS_PAD_COUNT));
            else
                printf(" %lld", (long long)pd->gen[k]);
        }
    }
    printf("\n");
}

static void ops_print(int op, int verbose) {
    const ops_desc *d = &ops_table[op];
    char ins[32], outs[32];
    if (d->max_in < 0)
        snprintf(ins, sizeof ins, "%d..%d", (int)d->min_in, OPS_MAX_INPUTS);
    else if (d->max_in == d->min_in)
        snprintf(ins, sizeof ins, "%d", (int)d->min_in);
    else
        snprintf(ins, sizeof ins, "%d..%d", (int)d->min_in, (int)d->max_in);
    if (d->n_out < 0)
        snprintf(outs, sizeof outs, "parts (up to %d)", OPS_MAX_OUTPUTS);
    else
        snprintf(outs, sizeof outs, "%d", (int)d->n_out);
    printf("%s\n", d->name ? d->name : "(unnamed)");
    printf("    inputs %s, outputs %s%s\n", ins, outs, d->gen ? ", in the generation op set" : "");
    if (d->doc)
        printf("    %s\n", d->doc);
    for (int32_t k = 0; k < d->n_params && k < OPS_MAX_OP_PARAMS; k++)
        ops_print_param(&d->params[k], verbose);
    if (verbose) {
        printf("    slots: shape %s, cpu %s, flops %s, fp %s, cuda %s, z3 %s\n", d->shape ? "yes" : "-",
               d->cpu ? "yes" : "-", d->flops ? "yes" : "-", d->fp ? "yes" : "-", ops_cuda[op] ? "yes" : "-",
               d->z3 ? d->z3 : "-");
        if (d->weight_input_mask) {
            printf("    weight inputs:");
            for (int k = 0; k < 31; k++)
                if (d->weight_input_mask & (1 << k))
                    printf(" %d", k);
            printf("\n");
        }
    }
}

int cmd_ops(int argc, char **argv) {
    ops_args a = {0};
    if (cmd_wants_help(argc, argv)) {
        ops_usage(&a);
        return TASC_EXIT_OK;
    }
    const char *only = NULL;
    if (cmd_opts_parse("ops", ops_opts, &a, argc, argv, 1, &only, 1) < 0)
        return TASC_EXIT_USAGE;
    int sel = -1;
    if (only && (sel = ops_find(only)) < 0) {
        cmd_error("ops", "unknown operator '%s' (tasc ops lists them)", only);
        return TASC_EXIT_INPUT;
    }
    for (int op = 0; op < OP_COUNT; op++)
        if (sel < 0 || op == sel)
            ops_print(op, a.verbose);
    fflush(stdout);
    int problems = ops_table_check(0); /* --verbose already lists the empty slots above */
    if (problems) {
        cmd_error("ops", "op table self-check found %d problem%s", problems, problems == 1 ? "" : "s");
        return TASC_EXIT_INTERNAL;
    }
    printf("%d operators; op table self-check: ok\n", OP_COUNT);
    return TASC_EXIT_OK;
}
