/* search_stats.c: naming the move sources of a search and writing their statistics
 * (search_result.stats, filled when search_opts.stats is set) as JSON, for `tasc optimize
 * --stats` and `tasc rules usage` (search.h). Keys come in a fixed order and sources in source
 * order, so two runs differ only in the times.
 */
#include <stdio.h>
#include <string.h>

#include "search.h"

const char *search_source_name(const rules_set *rs, const search_result *res, int32_t i, const char **dir) {
    int32_t n_rule_src = 2 * res->n_rules;
    if (i < n_rule_src && rs) {
        *dir = i % 2 ? "dst->src" : "src->dst";
        return rs->rules[i / 2].id;
    }
    *dir = "builtin";
    int32_t k = i - n_rule_src;
    return k >= 0 && k < REWRITE_COUNT ? rewrite_names[k] : "?";
}

/* s as a JSON string (control characters, quotes and backslashes escaped), or null. */
static void ss_string(FILE *f, const char *s) {
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void search_stats_write_json(FILE *f, const rules_set *rs, const search_result *res, const char *model,
                             const char *rules) {
    fputs("{\n  \"model\": ", f);
    ss_string(f, model);
    fputs(",\n  \"rules\": ", f);
    ss_string(f, rules);
    fprintf(f, ",\n  \"n_rules\": %d,\n  \"cost_before_us\": %.6f,\n  \"cost_after_us\": %.6f,\n"
               "  \"search_seconds\": %.6f,\n  \"sources\": [",
            (int)res->n_rules, res->cost_before, res->cost_after, res->search_seconds);
    int first = 1;
    for (int32_t i = 0; i < res->n_stats; i++) {
        const search_source_stat *st = &res->stats[i];
        if (!st->found && !st->applied)
            continue;
        const char *dir;
        const char *name = search_source_name(rs, res, i, &dir);
        fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", f);
        first = 0;
        ss_string(f, name);
        fprintf(f, ", \"dir\": \"%s\", \"found\": %lld, \"typechecked\": %lld, \"queued\": %lld, \"applied\": %lld, "
                   "\"seconds\": %.6f}",
                dir, (long long)st->found, (long long)st->typechecked, (long long)st->queued, (long long)st->applied,
                st->seconds);
    }
    fputs(first ? "]\n}\n" : "\n  ]\n}\n", f);
}
