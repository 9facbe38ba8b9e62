/* cmd_opts.c: the option tables of the tasc subcommands (cmd.h): one parser of argv against a
 * table and one printer of the table as the options part of --help, so the two cannot drift.
 *
 * Values are parsed strictly (base_parse_*: the whole string, in range); every problem is one
 * line "tasc CMD: ..." on stderr and the caller exits with TASC_EXIT_USAGE. Fields are found by
 * offset in the command's option struct; string values point into argv.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define OPTS_WIDTH 100 /* --help lines wrap here */

static void opts_vline(const char *cmd, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    if (cmd)
        fprintf(stderr, "tasc %s: %s\n", cmd, msg);
    else
        fprintf(stderr, "tasc: %s\n", msg);
}

void cmd_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    opts_vline(cmd, fmt, ap);
    va_end(ap);
}

int cmd_bad_option(const char *cmd, const char *arg) {
    cmd_error(cmd, "unknown option '%s' (tasc %s --help)", arg, cmd);
    return TASC_EXIT_USAGE;
}

int cmd_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

int cmd_parse_i64(const char *cmd, const char *opt, const char *val, int64_t lo, int64_t hi, int64_t *out) {
    if (base_parse_int64_in(val, lo, hi, out) < 0) {
        cmd_error(cmd, "bad value for %s: '%s' (an integer in [%lld, %lld])", opt, val ? val : "", (long long)lo,
                  (long long)hi);
        return -1;
    }
    return 0;
}

/* The "(...)" of a bad F64 value: "a number in 1..10", "a number >= 0", "seconds, > 0 and <= 86400". */
static void opts_f64_range(const cmd_opt *o, char *buf, size_t len) {
    if (!o->what && !o->lo_open && isfinite(o->hi)) {
        snprintf(buf, len, "a number in %g..%g", o->lo, o->hi);
        return;
    }
    int n = snprintf(buf, len, "%s%s %s %g", o->what ? o->what : "a number", o->what ? "," : "",
                     o->lo_open ? ">" : ">=", o->lo);
    if (isfinite(o->hi) && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " and <= %g", o->hi);
}

static int opts_f64(const char *cmd, const cmd_opt *o, const char *val, double *out) {
    double v;
    if (base_parse_double(val, &v) < 0 || v > o->hi || (o->lo_open ? !(v > o->lo) : v < o->lo)) {
        char range[128];
        opts_f64_range(o, range, sizeof range);
        cmd_error(cmd, "bad value for %s: '%s' (%s)", o->name, val, range);
        return -1;
    }
    *out = v;
    return 0;
}

/* CHOICE: val must be one of the '|'-separated words of o->what; the message lists them as
 * "a, b or c". */
static int opts_choice(const char *cmd, const cmd_opt *o, const char *val) {
    size_t n = strlen(val);
    for (const char *w = o->what; w;) {
        const char *bar = strchr(w, '|');
        size_t len = bar ? (size_t)(bar - w) : strlen(w);
        if (len == n && !strncmp(w, val, n))
            return 0;
        w = bar ? bar + 1 : NULL;
    }
    char list[256] = "";
    size_t used = 0;
    for (const char *w = o->what; w && used < sizeof list;) {
        const char *bar = strchr(w, '|');
        size_t len = bar ? (size_t)(bar - w) : strlen(w);
        const char *sep = w == o->what ? "" : strchr(w, '|') ? ", " : " or ";
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%.*s", sep, (int)len, w);
        w = bar ? bar + 1 : NULL;
    }
    cmd_error(cmd, "bad value for %s: '%s' (%s)", o->name, val, list);
    return -1;
}

static int opts_list_add(cmd_list *l, const char *val) {
    l->v = base_grow(l->v, &l->cap, l->n + 1, sizeof *l->v);
    l->v[l->n++] = val;
    return 0;
}

/* Stores val (NULL for a flag) into the option's field. */
static int opts_set(const char *cmd, const cmd_opt *o, void *field, char *val) {
    switch (o->kind) {
    case CMD_OPT_FLAG:
        *(int *)field = (int)o->ilo;
        return 0;
    case CMD_OPT_STR:
        if (o->what && !*val) {
            cmd_error(cmd, "bad value for %s: '' (%s)", o->name, o->what);
            return -1;
        }
        *(const char **)field = val;
        return 0;
    case CMD_OPT_CHOICE:
        if (opts_choice(cmd, o, val) < 0)
            return -1;
        *(const char **)field = val;
        return 0;
    case CMD_OPT_I64:
        return cmd_parse_i64(cmd, o->name, val, o->ilo, o->ihi, field);
    case CMD_OPT_F64:
        return opts_f64(cmd, o, val, field);
    case CMD_OPT_LIST:
        return opts_list_add(field, val);
    case CMD_OPT_CALL:
        return o->fn(cmd, o->name, val, field);
    }
    BASE_ASSERT(!"option kind");
    return -1;
}

/* The entry argument a names, and its inline value after '=' (or NULL). */
static const cmd_opt *opts_find(const cmd_opt *opts, char *a, char **inline_val) {
    *inline_val = NULL;
    for (const cmd_opt *o = opts; o->name; o++) {
        size_t n = strlen(o->name);
        if (strncmp(a, o->name, n) != 0)
            continue;
        if (a[n] == '\0')
            return o;
        if (a[n] == '=' && o->arg) {
            *inline_val = a + n + 1;
            return o;
        }
    }
    return NULL;
}

int cmd_opts_parse(const char *cmd, const cmd_opt *opts, void *args, int argc, char **argv, int first,
                   const char **pos, int max_pos) {
    int n_pos = 0;
    for (int i = first; i < argc; i++) {
        char *a = argv[i], *val = NULL;
        if ((a[0] != '-' || !a[1]) && max_pos >= 0) {
            if (n_pos == max_pos) {
                cmd_error(cmd, "unexpected argument '%s' (tasc %s --help)", a, cmd);
                return -1;
            }
            pos[n_pos++] = a;
            continue;
        }
        const cmd_opt *o = opts_find(opts, a, &val);
        if (!o) {
            cmd_bad_option(cmd, a);
            return -1;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                cmd_error(cmd, "option %s needs a value (tasc %s --help)", o->name, cmd);
                return -1;
            }
            val = argv[++i];
        }
        if (opts_set(cmd, o, (char *)args + o->off, val) < 0)
            return -1;
    }
    return n_pos;
}

/* --- --help ----------------------------------------------------------------------------------- */

/* The help text with %D, %L and %H replaced (the default, the range) into buf. */
static void opts_expand(const cmd_opt *o, const void *defaults, char *buf, size_t len) {
    size_t n = 0;
    for (const char *h = o->help; *h && n + 1 < len; h++) {
        char c = h[1];
        int num = o->kind == CMD_OPT_I64 || o->kind == CMD_OPT_F64;
        if (h[0] != '%' || !(c == 'D' || c == 'L' || c == 'H') || !num) {
            buf[n++] = *h;
            continue;
        }
        const void *field = (const char *)defaults + o->off;
        h++;
        if (o->kind == CMD_OPT_I64)
            n += (size_t)snprintf(buf + n, len - n, "%lld",
                                  (long long)(c == 'D' ? *(const int64_t *)field : c == 'L' ? o->ilo : o->ihi));
        else
            n += (size_t)snprintf(buf + n, len - n, "%g", c == 'D' ? *(const double *)field : c == 'L' ? o->lo : o->hi);
        if (n >= len)
            n = len - 1;
    }
    buf[n] = '\0';
}

/* "  NAME ARG" padded to the text column 2 + col, then text wrapped at OPTS_WIDTH; '\n' in text
 * starts a new line. */
static void opts_print_entry(const char *name, const char *arg, const char *text, int col) {
    int at = printf("  %s%s%s", name, arg ? " " : "", arg ? arg : ""), tc = 2 + col, room = OPTS_WIDTH - tc;
    for (const char *w = text; *w; at = 0) {
        if (w != text)
            printf("\n");
        printf("%*s", tc - at, "");
        size_t len = strcspn(w, "\n");
        if ((int)len > room) { /* break at the last space or after the last comma that fits */
            size_t cut = (size_t)room;
            while (cut > 0 && w[cut] != ' ' && w[cut - 1] != ',')
                cut--;
            len = cut ? cut : strcspn(w, " \n"); /* an overlong word: on a line of its own */
        }
        printf("%.*s", (int)len, w);
        w += len;
        if (*w == ' ' || *w == '\n')
            w++;
    }
    printf("\n");
}

/* 1 if an earlier table (or an earlier entry) already lists this option. */
static int opts_listed_before(const cmd_opt *const *tables, int t, const cmd_opt *o) {
    for (int k = 0; k <= t; k++)
        for (const cmd_opt *p = tables[k]; p->name && p != o; p++)
            if (p->help && !strcmp(p->name, o->name))
                return 1;
    return 0;
}

void cmd_opts_help_n(const cmd_opt *const *tables, const void *const *defaults) {
    int col = (int)strlen("-h, --help");
    for (int t = 0; tables[t]; t++)
        for (const cmd_opt *o = tables[t]; o->name; o++) {
            int w = (int)strlen(o->name) + (o->arg ? 1 + (int)strlen(o->arg) : 0);
            if (o->help && w > col)
                col = w;
        }
    col += 2;
    for (int t = 0; tables[t]; t++)
        for (const cmd_opt *o = tables[t]; o->name; o++) {
            if (!o->help || opts_listed_before(tables, t, o))
                continue;
            char text[1024];
            opts_expand(o, defaults[t], text, sizeof text);
            opts_print_entry(o->name, o->arg, text, col);
        }
    opts_print_entry("-h, --help", NULL, "this text", col);
}

void cmd_opts_help(const cmd_opt *opts, const void *defaults) {
    const cmd_opt *tables[2] = {opts, NULL};
    const void *defs[1] = {defaults};
    cmd_opts_help_n(tables, defs);
}
