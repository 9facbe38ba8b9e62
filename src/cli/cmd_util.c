/* cmd_util.c: helpers shared by the tasc subcommands: loading a model file, option parsing,
 * one-line error messages, and output files written through a temporary and a rename.
 *
 * Every message a subcommand prints for bad input is exactly one line "tasc CMD: ..." on
 * stderr; messages coming from other modules are flattened to one line here.
 * The graph returned by the loaders is owned by the caller (graph_free).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "graph.h"
#include "onnx.h"

static void cmd_vline(const char *cmd, const char *fmt, va_list ap) {
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
    cmd_vline(cmd, fmt, ap);
    va_end(ap);
}

static int cmd_ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

struct graph *cmd_load_model_as(const char *cmd, const char *path) { return cmd_load_model_opts(cmd, path, NULL); }

struct graph *cmd_load_model_opts(const char *cmd, const char *path, const cmd_model_opts *mo) {
    int64_t max_el = 0; /* 0: the graph module's default */
    const char *env = getenv("TASC_MAX_ELEMENTS");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(env, &end, 10);
        if (errno || !end || *end || v <= 0) {
            cmd_error(cmd, "TASC_MAX_ELEMENTS: bad value '%s' (a positive integer)", env);
            return NULL;
        }
        max_el = v;
    }
    char err[GRAPH_ERR_LEN + 64];
    err[0] = '\0';
    graph *g;
    if (cmd_ends_with(path, ".onnx")) {
        onnx_import_opts oo;
        onnx_import_opts_default(&oo);
        int64_t dv[CMD_MAX_DIM_VALUES];
        if (mo) {
            oo.random_weights = mo->random_weights;
            oo.seed = mo->seed;
            oo.n_dims = mo->n_dims;
            oo.dim_names = mo->dim_names;
            for (int k = 0; k < mo->n_dims && k < CMD_MAX_DIM_VALUES; k++)
                dv[k] = mo->dim_values[k];
            oo.dim_values = dv;
        }
        oo.max_elements = max_el;
        g = onnx_import(path, &oo, err, sizeof err);
    } else {
        g = graph_load_json(path, max_el, err, sizeof err);
    }
    if (!g) {
        /* the loader's messages start with the file name; make sure one does */
        if (!strncmp(err, path, strlen(path)))
            cmd_error(cmd, "%s", err[0] ? err : "cannot load");
        else
            cmd_error(cmd, "%s: %s", path, err[0] ? err : "cannot load");
        return NULL;
    }
    return g;
}

struct graph *cmd_load_model(const char *path) { return cmd_load_model_as(NULL, path); }

int cmd_model_opt(const char *cmd, int argc, char **argv, int *i, cmd_model_opts *o) {
    const char *val = NULL;
    int r;
    if (!strcmp(argv[*i], "--random-weights")) {
        o->random_weights = 1;
        return 1;
    }
    if ((r = cmd_opt_value(cmd, argc, argv, i, "--weights-seed", &val)) != 0) {
        long long v;
        if (r < 0 || cmd_parse_i64(cmd, "--weights-seed", val, 0, INT64_MAX, &v) < 0)
            return -1;
        o->seed = (unsigned long long)v;
        return 1;
    }
    if ((r = cmd_opt_value(cmd, argc, argv, i, "--dim", &val)) != 0) {
        if (r < 0)
            return -1;
        const char *eq = strchr(val, '=');
        long long v;
        if (!eq || eq == val) {
            cmd_error(cmd, "bad value for --dim: '%s' (NAME=N)", val);
            return -1;
        }
        if (o->n_dims >= CMD_MAX_DIM_VALUES) {
            cmd_error(cmd, "too many --dim options (at most %d)", CMD_MAX_DIM_VALUES);
            return -1;
        }
        if (cmd_parse_i64(cmd, "--dim", eq + 1, 1, INT64_C(1) << 40, &v) < 0)
            return -1;
        /* the name is the text before '=': argv is writable, cut it there */
        argv[*i][eq - argv[*i]] = '\0';
        o->dim_names[o->n_dims] = val;
        o->dim_values[o->n_dims++] = v;
        return 1;
    }
    return 0;
}

int cmd_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

int cmd_parse_i64(const char *cmd, const char *opt, const char *val, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = (val && *val) ? strtoll(val, &end, 10) : 0;
    if (!val || !*val || errno || !end || *end || v < lo || v > hi) {
        cmd_error(cmd, "bad value for %s: '%s' (an integer in [%lld, %lld])", opt, val ? val : "", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cmd_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **val) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        cmd_error(cmd, "option %s needs a value (tasc %s --help)", name, cmd);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

int cmd_bad_option(const char *cmd, const char *arg) {
    cmd_error(cmd, "unknown option '%s' (tasc %s --help)", arg, cmd);
    return TASC_EXIT_USAGE;
}

int cmd_model_out_args(const char *cmd, int argc, char **argv, const char *usage, const char **model,
                       const char **out, cmd_model_opts *mo) {
    *model = *out = NULL;
    memset(mo, 0, sizeof *mo);
    for (int i = 1; i < argc; i++) {
        const char *val = NULL;
        int r = cmd_model_opt(cmd, argc, argv, &i, mo);
        if (r < 0)
            return TASC_EXIT_USAGE;
        if (r > 0)
            continue;
        r = cmd_opt_value(cmd, argc, argv, &i, "--out", &val);
        if (r < 0)
            return TASC_EXIT_USAGE;
        if (r > 0) {
            *out = val;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return cmd_bad_option(cmd, argv[i]);
        if (*model) {
            cmd_error(cmd, "more than one model given ('%s' and '%s')", *model, argv[i]);
            return TASC_EXIT_USAGE;
        }
        *model = argv[i];
    }
    if (!*model || !*out) {
        cmd_error(cmd, "usage: %s (tasc %s --help)", usage, cmd);
        return TASC_EXIT_USAGE;
    }
    return TASC_EXIT_OK;
}

int cmd_tmp_open(const char *cmd, const char *path, cmd_tmpfile *t) {
    memset(t, 0, sizeof *t);
    size_t n = strlen(path);
    t->tmp = malloc(n + 16);
    t->path = malloc(n + 1);
    if (!t->tmp || !t->path) {
        cmd_error(cmd, "%s: out of memory", path);
        cmd_tmp_abort(t);
        return -1;
    }
    memcpy(t->path, path, n + 1);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        /* a device or a pipe (/dev/stdout, a fifo): write to it directly; renaming a temporary
         * over it would replace the device node */
        free(t->tmp);
        t->tmp = NULL;
        t->f = fopen(path, "w");
        if (!t->f) {
            cmd_error(cmd, "%s: cannot write: %s", path, strerror(errno));
            cmd_tmp_abort(t);
            return -1;
        }
        return 0;
    }
    memcpy(t->tmp, path, n);
    memcpy(t->tmp + n, ".tmpXXXXXX", 11);
    int fd = mkstemp(t->tmp);
    if (fd < 0) {
        cmd_error(cmd, "%s: cannot create: %s", path, strerror(errno));
        free(t->tmp);
        t->tmp = NULL;
        cmd_tmp_abort(t);
        return -1;
    }
    (void)fchmod(fd, 0644); /* mkstemp makes 0600 */
    t->f = fdopen(fd, "w");
    if (!t->f) {
        cmd_error(cmd, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        cmd_tmp_abort(t);
        return -1;
    }
    return 0;
}

int cmd_tmp_commit(const char *cmd, cmd_tmpfile *t) {
    int bad = ferror(t->f);
    int saved = errno;
    if (fclose(t->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    t->f = NULL;
    if (!bad && t->tmp && rename(t->tmp, t->path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        cmd_error(cmd, "%s: cannot write: %s", t->path, strerror(saved));
        cmd_tmp_abort(t);
        return -1;
    }
    free(t->tmp);
    free(t->path);
    t->tmp = t->path = NULL;
    return 0;
}

void cmd_tmp_abort(cmd_tmpfile *t) {
    if (t->f)
        fclose(t->f);
    if (t->tmp)
        unlink(t->tmp);
    free(t->tmp);
    free(t->path);
    memset(t, 0, sizeof *t);
}
