/* cmd_util.c: helpers shared by the tasc subcommands: loading a model file with the model options,
 * the options shared by several commands (--dim, --cost-set), and output files written through a
 * temporary and a rename (base_afile).
 *
 * Every message a subcommand prints for bad input is exactly one line "tasc CMD: ..." on
 * stderr; messages coming from other modules are flattened to one line by cmd_error.
 * The graph returned by the loader is owned by the caller (graph_free).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "cost.h"
#include "graph.h"
#include "onnx.h"
#ifdef TASC_HAVE_CUDA
#include "rt_cost.h"
#endif

/* TASC_MAX_ELEMENTS into *max_el (0: unset, the graph module's default); -1 after a message. */
static int cmd_max_elements(const char *cmd, int64_t *max_el) {
    const char *env = getenv("TASC_MAX_ELEMENTS");
    *max_el = 0;
    if (!env || !*env)
        return 0;
    if (base_parse_int64(env, max_el) < 0 || *max_el <= 0) {
        cmd_error(cmd, "TASC_MAX_ELEMENTS: bad value '%s' (a positive integer)", env);
        return -1;
    }
    return 0;
}

struct graph *cmd_load_model_opts(const char *cmd, const char *path, const cmd_model_opts *mo) {
    onnx_import_opts oo;
    onnx_import_opts_default(&oo);
    if (cmd_max_elements(cmd, &oo.max_elements) < 0)
        return NULL;
    if (mo) {
        oo.random_weights = mo->random_weights; /* 1: values by role; 2: the legacy ones */
        if (mo->random_weights && mo->weights_init && !strcmp(mo->weights_init, "legacy"))
            oo.random_weights = 2;
        oo.seed = (uint64_t)mo->seed;
        oo.n_dims = mo->n_dims;
        oo.dim_names = mo->dim_names;
        oo.dim_values = mo->dim_values;
        oo.allow_outside_paths = mo->allow_outside_paths;
    }
    char err[GRAPH_ERR_LEN + 4096 + 64]; /* the message, prefixed by the path */
    graph *g = onnx_load_model(path, &oo, err, sizeof err);
    if (!g)
        cmd_error(cmd, "%s", err);
    return g;
}

int cmd_opt_dim(const char *cmd, const char *name, char *val, void *field) {
    cmd_model_opts *o = field;
    char *eq = strchr(val, '=');
    int64_t v;
    if (!eq || eq == val) {
        cmd_error(cmd, "bad value for %s: '%s' (NAME=N)", name, val);
        return -1;
    }
    if (o->n_dims >= CMD_MAX_DIM_VALUES) {
        cmd_error(cmd, "too many %s options (at most %d)", name, CMD_MAX_DIM_VALUES);
        return -1;
    }
    if (cmd_parse_i64(cmd, name, eq + 1, 1, INT64_C(1) << 40, &v) < 0)
        return -1;
    *eq = '\0'; /* the name is the text before '=': argv is writable, cut it there */
    o->dim_names[o->n_dims] = val;
    o->dim_values[o->n_dims++] = v;
    return 0;
}

int cmd_opt_cost_set(const char *cmd, const char *name, char *val, void *field) {
    char why[512];
    if (cost_analytic_set(field, val, why, sizeof why) < 0) {
        cmd_error(cmd, "%s: %s", name, why);
        return -1;
    }
    return 0;
}

#ifdef TASC_HAVE_CUDA
static void cmd_cost_not_saved(const char *why, void *cmd) { cmd_error(cmd, "cost cache not saved: %s", why); }

struct cost_model *cmd_measured_model(const char *cmd) {
    char err[4200];
    cost_model *cm = rt_cost_model_new(NULL, cmd_cost_not_saved, (void *)cmd, err, sizeof err);
    if (!cm)
        cmd_error(cmd, "%s", err);
    return cm;
}
#endif

int cmd_model_out_args(const char *cmd, const cmd_opt *opts, int argc, char **argv, const char *usage,
                       const char **model, cmd_model_out *a) {
    const char **pos = base_xcalloc((size_t)argc, sizeof *pos);
    int n = cmd_opts_parse(cmd, opts, a, argc, argv, 1, pos, argc);
    int rc = TASC_EXIT_OK;
    *model = n > 0 ? pos[0] : NULL;
    if (n < 0) {
        rc = TASC_EXIT_USAGE;
    } else if (n > 1) {
        cmd_error(cmd, "more than one model given ('%s' and '%s')", pos[0], pos[1]);
        rc = TASC_EXIT_USAGE;
    } else if (!*model || !a->out) {
        cmd_error(cmd, "usage: %s (tasc %s --help)", usage, cmd);
        rc = TASC_EXIT_USAGE;
    }
    free(pos);
    return rc;
}

/* --- output files ----------------------------------------------------------------------------- */

int cmd_tmp_open(const char *cmd, const char *path, cmd_tmpfile *t) {
    struct stat st;
    char err[4200];
    memset(t, 0, sizeof *t);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        /* a device or a pipe: written directly, tmp stays NULL */
        t->path = base_xstrdup(path);
        t->f = fopen(path, "w");
        if (!t->f) {
            cmd_error(cmd, "%s: cannot write: %s", path, strerror(errno));
            cmd_tmp_abort(t);
            return -1;
        }
        return 0;
    }
    if (base_afile_open(t, path, err, sizeof err) < 0) {
        cmd_error(cmd, "%s", err);
        return -1;
    }
    return 0;
}

int cmd_tmp_commit(const char *cmd, cmd_tmpfile *t) {
    char err[4200];
    if (t->tmp) {
        if (base_afile_commit(t, err, sizeof err) < 0) {
            cmd_error(cmd, "%s", err);
            return -1;
        }
        return 0;
    }
    int bad = ferror(t->f), saved = bad ? EIO : 0;
    if (fclose(t->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    t->f = NULL;
    if (bad)
        cmd_error(cmd, "%s: cannot write: %s", t->path, strerror(saved));
    cmd_tmp_abort(t);
    return bad ? -1 : 0;
}

void cmd_tmp_abort(cmd_tmpfile *t) { base_afile_abort(t); }

int cmd_write_text(const char *cmd, const char *path, const char *text) {
    cmd_tmpfile tf;
    if (cmd_tmp_open(cmd, path, &tf) < 0)
        return -1;
    fputs(text, tf.f);
    return cmd_tmp_commit(cmd, &tf);
}
