/* api_build.c: building a model through the public API, over the graph builder (graph.h): inputs,
 * weights (values, seeded random, constant), nodes with parameters by name, outputs, and the
 * final validation (graph_validate).
 *
 * Parameters arrive as text by name and are read by the JSON model format's rules (README "JSON
 * model format"): the op's declared names, the list parameter under its own name (perm, shape,
 * sizes), activations and pad modes by name; missing ones take the op's defaults. A builder's
 * first failure is sticky (kept in the handle): every later call fails with it, so a program may
 * check only tasc_builder_finish's status.
 */
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"

#define API_NAME_OF(d) ((d)->key == PM_LIST && (d)->list_name ? (d)->list_name : ops_param_table[(d)->key].name)

TASC_API tasc_status tasc_builder_new(const char *name, tasc_builder **out) {
    if (!out)
        return api_fail(TASC_ERR_USAGE, "tasc_builder_new: out is NULL");
    tasc_builder *b = base_xcalloc(1, sizeof *b);
    b->g = graph_new(name && *name ? name : "model");
    *out = b;
    return TASC_OK;
}

TASC_API void tasc_builder_free(tasc_builder *b) {
    if (!b)
        return;
    graph_free(b->g);
    free(b->failure);
    free(b);
}

/* The builder's state before a call: TASC_OK, or the first failure again. */
static tasc_status api_builder_ready(const tasc_builder *b, const char *fn) {
    if (!b)
        return api_fail(TASC_ERR_USAGE, "%s: the builder is NULL", fn);
    if (b->failed != TASC_OK)
        return api_fail(b->failed, "%s (an earlier builder call failed)", b->failure);
    return TASC_OK;
}

/* A call's status, remembered as the builder's failure when it is the first. */
static tasc_status api_builder_done(tasc_builder *b, tasc_status s) {
    if (s != TASC_OK && b && b->failed == TASC_OK) {
        b->failed = s;
        b->failure = base_xstrdup(tasc_last_error());
    }
    return s;
}

/* The result of a graph builder call: TASC_OK, or its error. */
static tasc_status api_builder_result(tasc_builder *b, int64_t rc) {
    if (rc < 0 || !graph_ok(b->g))
        return api_fail(TASC_ERR_INPUT, "%s", graph_error(b->g)[0] ? graph_error(b->g) : "builder call failed");
    return TASC_OK;
}

static tasc_status api_check_dims(const char *name, int32_t rank, const int64_t *dims) {
    if (!name || !*name)
        return api_fail(TASC_ERR_USAGE, "a tensor needs a name");
    if (rank < 0 || rank > OPS_MAX_DIMS)
        return api_fail(TASC_ERR_INPUT, "'%s': rank %d out of range (0..%d)", name, (int)rank, OPS_MAX_DIMS);
    if (rank > 0 && !dims)
        return api_fail(TASC_ERR_USAGE, "'%s': dims is NULL", name);
    return TASC_OK;
}

static tasc_status api_builder_input_do(tasc_builder *b, const char *name, tasc_dtype dtype, int32_t rank,
                                        const int64_t *dims) {
    tasc_status s = api_builder_ready(b, "tasc_builder_input");
    if (s == TASC_OK)
        s = api_check_dims(name, rank, dims);
    if (s != TASC_OK)
        return s;
    if (dtype != TASC_FLOAT32 && dtype != TASC_INT64)
        return api_fail(TASC_ERR_USAGE, "input '%s': unknown dtype %d", name, (int)dtype);
    return api_builder_result(b, graph_input_typed(b->g, name, dtype == TASC_INT64 ? GRAPH_DT_I64 : GRAPH_DT_F32,
                                                   rank, dims));
}

static tasc_status api_weight(tasc_builder *b, const char *fn, const char *name, int32_t rank, const int64_t *dims,
                              graph_init init) {
    tasc_status s = api_builder_ready(b, fn);
    if (s == TASC_OK)
        s = api_check_dims(name, rank, dims);
    if (s != TASC_OK)
        return s;
    return api_builder_result(b, graph_weight(b->g, name, rank, dims, init));
}

static tasc_status api_builder_weight_do(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                         const float *values) {
    tasc_status s = api_builder_ready(b, "tasc_builder_weight");
    if (s == TASC_OK)
        s = api_check_dims(name, rank, dims);
    if (s != TASC_OK)
        return s;
    ops_shape sh = ops_shape_make(rank, dims);
    int64_t n = ops_shape_numel(&sh);
    if (n < 0 || n > GRAPH_DEFAULT_MAX_ELEMENTS)
        return api_fail(TASC_ERR_INPUT, "weight '%s': too many elements", name);
    if (n > 0 && !values)
        return api_fail(TASC_ERR_USAGE, "weight '%s': values is NULL", name);
    graph_blob *blob = graph_blob_new(values, n);
    if (!blob)
        return api_fail(TASC_ERR_INTERNAL, "weight '%s': out of memory", name);
    int32_t t = graph_weight_data(b->g, name, rank, dims, blob);
    graph_blob_unref(blob); /* the graph holds its own reference */
    return api_builder_result(b, t);
}

static tasc_status api_builder_weight_random_do(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                                uint64_t seed, float mean, float std) {
    graph_init init;
    memset(&init, 0, sizeof init);
    init.kind = GRAPH_INIT_RANDOM;
    init.seed = seed;
    init.mean = mean;
    init.std = std;
    return api_weight(b, "tasc_builder_weight_random", name, rank, dims, init);
}

static tasc_status api_builder_weight_const_do(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                               float value) {
    graph_init init;
    memset(&init, 0, sizeof init);
    init.kind = GRAPH_INIT_CONSTANT;
    init.value = value;
    return api_weight(b, "tasc_builder_weight_const", name, rank, dims, init);
}

/* One enum value by name (or its index as digits) among names[count]. */
static int api_enum(const char *v, const char *const *names, int count, int64_t *out) {
    for (int i = 0; i < count; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 0;
        }
    return base_parse_int64_in(v, 0, count - 1, out);
}

/* "1,0,2" or "[1, 0, 2]" into the list. */
static int api_list(const char *v, ops_params *p) {
    char buf[256];
    size_t n = strlen(v);
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, v, n + 1);
    char *s = buf;
    if (*s == '[' && n >= 2 && s[n - 1] == ']') {
        s[n - 1] = '\0';
        s++;
    }
    p->n_list = 0;
    memset(p->list, 0, sizeof p->list);
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        size_t k = strlen(tok);
        while (k && tok[k - 1] == ' ')
            tok[--k] = '\0';
        if (p->n_list == OPS_MAX_LIST || base_parse_int64(tok, &p->list[p->n_list]) < 0)
            return -1;
        p->n_list++;
    }
    return 0;
}

/* One parameter by name and text value into p. */
static tasc_status api_param(ops_type op, const char *name, const char *value, ops_params *p, uint8_t *given) {
    const ops_desc *od = &ops_table[op];
    int32_t i = 0;
    while (i < od->n_params && strcmp(API_NAME_OF(&od->params[i]), name))
        i++;
    if (i == od->n_params) {
        char list[256] = "";
        for (int32_t k = 0; k < od->n_params; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", API_NAME_OF(&od->params[k]));
        return api_fail(TASC_ERR_INPUT, "unknown parameter '%s' for op '%s' (it takes: %s)", name, od->name,
                        od->n_params ? list : "none");
    }
    given[i] = 1;
    ops_param_key k = od->params[i].key;
    double d;
    int rc = -1;
    switch (ops_param_table[k].kind) {
    case OPS_PK_INT:
        rc = base_parse_int64(value, &p->v[k]);
        break;
    case OPS_PK_FLOAT:
        rc = base_parse_double(value, &d);
        if (rc == 0)
            p->v[k] = ops_f2p((float)d);
        break;
    case OPS_PK_ACT:
        rc = api_enum(value, ops_act_names, OPS_ACT_COUNT, &p->v[k]);
        break;
    case OPS_PK_PADMODE:
        rc = api_enum(value, ops_padmode_names, OPS_PAD_COUNT, &p->v[k]);
        break;
    case OPS_PK_LIST:
        rc = api_list(value, p);
        break;
    }
    if (rc < 0)
        return api_fail(TASC_ERR_INPUT, "op '%s': parameter '%s': bad value '%s'", od->name, name, value);
    return TASC_OK;
}

/* The op's parameters from the name/value pairs, defaults for the rest. */
static tasc_status api_params(ops_type op, int32_t n, const char *const *names, const char *const *values,
                              ops_params *p) {
    const ops_desc *od = &ops_table[op];
    uint8_t given[OPS_MAX_OP_PARAMS] = {0};
    ops_params_default(op, p);
    if (n < 0 || (n > 0 && (!names || !values)))
        return api_fail(TASC_ERR_USAGE, "op '%s': %d parameters without the name and value arrays", od->name, (int)n);
    for (int32_t k = 0; k < n; k++) {
        if (!names[k] || !values[k])
            return api_fail(TASC_ERR_USAGE, "op '%s': parameter %d: NULL name or value", od->name, (int)k);
        tasc_status s = api_param(op, names[k], values[k], p, given);
        if (s != TASC_OK)
            return s;
    }
    for (int32_t i = 0; i < od->n_params; i++)
        if (od->params[i].required && !given[i])
            return api_fail(TASC_ERR_INPUT, "missing required parameter '%s' for op '%s'", API_NAME_OF(&od->params[i]),
                            od->name);
    return TASC_OK;
}

static tasc_status api_builder_node_do(tasc_builder *b, const char *name, const char *op, int32_t n_inputs,
                                       const char *const *inputs, int32_t n_params, const char *const *param_names,
                                       const char *const *param_values) {
    tasc_status s = api_builder_ready(b, "tasc_builder_node");
    if (s != TASC_OK)
        return s;
    int opi = op ? ops_find(op) : -1;
    if (opi < 0)
        return api_fail(TASC_ERR_INPUT, "unknown op '%s'", op ? op : "(NULL)");
    if (n_inputs < 0 || n_inputs > OPS_MAX_INPUTS || (n_inputs > 0 && !inputs))
        return api_fail(TASC_ERR_USAGE, "op '%s': %d inputs (at most %d, and the array)", op, (int)n_inputs,
                        OPS_MAX_INPUTS);
    int32_t in[OPS_MAX_INPUTS], out[OPS_MAX_OUTPUTS];
    for (int32_t i = 0; i < n_inputs; i++) {
        in[i] = inputs[i] ? graph_find_tensor(b->g, inputs[i]) : -1;
        if (in[i] < 0)
            return api_fail(TASC_ERR_INPUT, "node '%s': input %d: no tensor named '%s'", name ? name : op, (int)i,
                            inputs[i] ? inputs[i] : "(NULL)");
    }
    ops_params p;
    if ((s = api_params((ops_type)opi, n_params, param_names, param_values, &p)) != TASC_OK)
        return s;
    return api_builder_result(b, graph_add(b->g, name, (ops_type)opi, &p, n_inputs, in, out));
}

static tasc_status api_builder_output_do(tasc_builder *b, const char *tensor) {
    tasc_status s = api_builder_ready(b, "tasc_builder_output");
    if (s != TASC_OK)
        return s;
    int32_t t = tensor ? graph_find_tensor(b->g, tensor) : -1;
    if (t < 0)
        return api_fail(TASC_ERR_INPUT, "output: no tensor named '%s'", tensor ? tensor : "(NULL)");
    return api_builder_result(b, graph_mark_output(b->g, t));
}

TASC_API tasc_status tasc_builder_input(tasc_builder *b, const char *name, tasc_dtype dtype, int32_t rank,
                                        const int64_t *dims) {
    return api_builder_done(b, api_builder_input_do(b, name, dtype, rank, dims));
}

TASC_API tasc_status tasc_builder_weight(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                         const float *values) {
    return api_builder_done(b, api_builder_weight_do(b, name, rank, dims, values));
}

TASC_API tasc_status tasc_builder_weight_random(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                                uint64_t seed, float mean, float std) {
    return api_builder_done(b, api_builder_weight_random_do(b, name, rank, dims, seed, mean, std));
}

TASC_API tasc_status tasc_builder_weight_const(tasc_builder *b, const char *name, int32_t rank, const int64_t *dims,
                                               float value) {
    return api_builder_done(b, api_builder_weight_const_do(b, name, rank, dims, value));
}

TASC_API tasc_status tasc_builder_node(tasc_builder *b, const char *name, const char *op, int32_t n_inputs,
                                       const char *const *inputs, int32_t n_params, const char *const *param_names,
                                       const char *const *param_values) {
    return api_builder_done(b, api_builder_node_do(b, name, op, n_inputs, inputs, n_params, param_names, param_values));
}

TASC_API tasc_status tasc_builder_output(tasc_builder *b, const char *tensor) {
    return api_builder_done(b, api_builder_output_do(b, tensor));
}

TASC_API tasc_status tasc_builder_finish(tasc_builder *b, tasc_model **out) {
    tasc_status s = api_builder_ready(b, "tasc_builder_finish");
    if (s == TASC_OK && !out)
        s = api_fail(TASC_ERR_USAGE, "tasc_builder_finish: out is NULL");
    char err[API_ERR_LEN];
    if (s == TASC_OK && graph_validate(b->g, err, sizeof err) < 0)
        s = api_fail(TASC_ERR_INPUT, "%s: %s", b->g->name, err);
    if (s == TASC_OK) {
        *out = api_model_wrap(b->g);
        b->g = NULL;
    }
    tasc_builder_free(b);
    return s;
}
