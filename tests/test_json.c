/* test_json.c: the JSON model format: byte-exact round trips (text, file, hash, float bits),
 * nodes in any order, defaults, and every kind of bad input, each with the message it must give
 * (file name, line:col or the node / weight / input named, and what is wrong); saving through a
 * temporary file leaves nothing behind on failure. The sidecar weights file: DATA and FILE weights
 * saved (layout, alignment, sharing, determinism), reloaded exactly, saved into other folders and
 * over themselves, and failures that leave neither file.
 */
#include <dirent.h>
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "graph.h"
#include "test.h"

static char tmpdir[] = "/tmp/tasc_test_json_XXXXXX";

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t r = fread(s, 1, (size_t)n, f);
    s[r] = '\0';
    fclose(f);
    return s;
}

static int count_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* A model with every feature of the format: both dtypes, the three initialisers, enum, float and
 * list parameters, a multi-output node with default and one with explicit output names, a graph
 * input and a weight used as outputs, an output listed twice. */
static graph *feature_graph(void) {
    graph *g = graph_new("features \"quoted\" \xc3\xa9");
    int64_t xd[4] = {2, 4, 8, 8}, wd[4] = {6, 4, 3, 3}, bd[1] = {6}, td[2] = {10, 8}, idd[2] = {2, 3};
    int32_t x = graph_input(g, "x", 4, xd);
    int32_t ids = graph_input_typed(g, "ids", GRAPH_DT_I64, 2, idd);
    int32_t w = graph_weight_he(g, "conv.w", 4, wd);
    int32_t b = graph_weight_const(g, "conv.b", 1, bd, 0.1f);
    graph_init fi = {GRAPH_INIT_FILE, 0, 0, 0, 0, "table.bin", 16, NULL};
    int32_t tab = graph_weight(g, "table", 2, td, fi);
    graph_init ri = {GRAPH_INIT_RANDOM, UINT64_C(0xFFFFFFFFFFFFFFF0), -0.0f, 1e-5f, 0, NULL, 0, NULL};
    int32_t odd = graph_weight(g, "odd", 1, bd, ri);
    int32_t pads[4] = {1, 1, 1, 1};
    int32_t c = graph_conv2d_ex(g, "conv", x, w, b, 1, 1, pads, 1, OPS_ACT_RELU);
    int32_t parts[OPS_MAX_OUTPUTS];
    int64_t sz[2] = {2, 4};
    graph_split(g, c, 1, 2, sz, parts);
    int32_t perm[4] = {0, 2, 3, 1};
    int32_t t = graph_transpose(g, parts[1], 4, perm);
    ops_params cp;
    ops_params_default(OP_CLIP, &cp);
    cp.v[PM_LO] = ops_f2p(-0.3f);
    cp.v[PM_HI] = ops_f2p(FLT_MAX);
    int32_t cl = -1;
    graph_add(g, "clip", OP_CLIP, &cp, 1, &t, &cl);
    ops_params gp;
    ops_params_default(OP_GATHER, &gp);
    int32_t gin[2] = {tab, ids}, ge = -1;
    graph_add(g, "embed", OP_GATHER, &gp, 2, gin, &ge);
    int32_t ln = graph_layernorm(g, ge, -1, -1, 2, 1e-6f);
    graph_mark_output(g, cl);
    graph_mark_output(g, ln);
    graph_mark_output(g, parts[0]);
    graph_mark_output(g, x);
    graph_mark_output(g, odd);
    graph_mark_output(g, cl);
    return g;
}

static void test_round_trip(void) {
    graph *g = feature_graph();
    CHECK(graph_ok(g));
    if (!graph_ok(g)) {
        fprintf(stderr, "  %s\n", graph_error(g));
        graph_free(g);
        return;
    }
    /* rename the split's outputs so that the file must carry them */
    int32_t s0 = graph_find_tensor(g, "split_0:0");
    CHECK(s0 >= 0);
    if (s0 >= 0) {
        free(g->tensors[s0].name);
        g->tensors[s0].name = strdup("left");
    }
    char *a = graph_to_json_string(g);
    CHECK(a != NULL);
    if (!a) {
        graph_free(g);
        return;
    }
    CHECK(a[strlen(a) - 1] == '\n');
    CHECK(!strncmp(a, "{\n  \"format\": \"tasc-model\",\n  \"version\": 1,\n  \"name\": \"features \\\"quoted\\\" \xc3\xa9\",\n", 80));
    CHECK_STR_CONTAINS(a, "{\"name\": \"ids\", \"shape\": [2, 3], \"dtype\": \"int64\"}");
    CHECK_STR_CONTAINS(a, "\"init\": {\"kind\": \"constant\", \"value\": 0.1}");
    CHECK_STR_CONTAINS(a, "\"init\": {\"kind\": \"file\", \"path\": \"table.bin\", \"offset\": 16}");
    CHECK_STR_CONTAINS(a, "\"init\": {\"kind\": \"random\", \"seed\": -16, \"mean\": -0.0, \"std\": 1e-05}");
    CHECK_STR_CONTAINS(a, "\"act\": \"relu\"");
    CHECK_STR_CONTAINS(a, "\"pad\": \"explicit\"");
    CHECK_STR_CONTAINS(a, "\"perm\": [0, 2, 3, 1]");
    CHECK_STR_CONTAINS(a, "\"sizes\": [2, 4]");
    CHECK_STR_CONTAINS(a, "\"lo\": -0.3");
    CHECK_STR_CONTAINS(a, "\"hi\": 3.4028235e+38");
    CHECK_STR_CONTAINS(a, "\"eps\": 1e-06");
    CHECK_STR_CONTAINS(a, "\"outputs\": [\"left\", \"split_0:1\"]");
    CHECK_STR_CONTAINS(a, "\"outputs\": [\"clip\", \"layernorm_0\", \"left\", \"x\", \"odd\", \"clip\"]\n}\n");
    CHECK(!strstr(a, "\"outputs\": [\"conv\"]")); /* default names are not written */

    char err[GRAPH_ERR_LEN] = "";
    graph *h = graph_load_json_string(a, "mem.json", 0, err, sizeof err);
    CHECK(h != NULL);
    if (!h) {
        fprintf(stderr, "  %s\n", err);
        free(a);
        graph_free(g);
        return;
    }
    char *b = graph_to_json_string(h);
    CHECK(b && !strcmp(a, b));
    CHECK(graph_hash(h) == graph_hash(g));
    CHECK(graph_hash(h) != 0);
    CHECK(!strcmp(h->name, g->name));
    /* floats come back bit for bit */
    int32_t o = graph_find_tensor(h, "odd");
    CHECK(o >= 0 && h->tensors[o].init.seed == UINT64_C(0xFFFFFFFFFFFFFFF0));
    float m = o >= 0 ? h->tensors[o].init.mean : 1.0f, sd = o >= 0 ? h->tensors[o].init.std : 0.0f;
    CHECK(!memcmp(&m, &g->tensors[graph_find_tensor(g, "odd")].init.mean, 4) && signbit(m));
    CHECK(sd == 1e-5f);
    int32_t cn = h->tensors[graph_find_tensor(h, "clip")].producer;
    CHECK(ops_p2f(h->nodes[cn].p.v[PM_HI]) == FLT_MAX);
    CHECK(ops_p2f(h->nodes[cn].p.v[PM_LO]) == -0.3f);
    CHECK_EQ_INT(h->tensors[graph_find_tensor(h, "ids")].dtype, GRAPH_DT_I64);
    CHECK(!strcmp(h->tensors[graph_find_tensor(h, "table")].init.path, "table.bin"));
    CHECK_EQ_INT(h->n_outputs, 6);
    CHECK_EQ_INT(h->outputs[0], h->outputs[5]);

    /* through a file: the FILE weight's values are copied into the sidecar weights file, so the
     * saved model does not depend on where table.bin was (h reads it from the folder "src"); the
     * JSON differs from the text only in that weight's init, and the file's folder becomes the
     * base of weight paths when loading */
    char path[600], side[600], srcdir[600], bin[640];
    snprintf(path, sizeof path, "%s/model.json", tmpdir);
    snprintf(side, sizeof side, "%s/model.weights.bin", tmpdir);
    snprintf(srcdir, sizeof srcdir, "%s/src", tmpdir);
    snprintf(bin, sizeof bin, "%s/table.bin", srcdir);
    CHECK_EQ_INT(mkdir(srcdir, 0755), 0);
    free(h->base_dir);
    h->base_dir = strdup(srcdir);
    /* the data file is missing: an error naming it, and nothing written */
    int before = count_dir_entries(tmpdir);
    CHECK_EQ_INT(graph_save_json(h, path, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "weight 'table'");
    CHECK_STR_CONTAINS(err, "table.bin");
    CHECK_EQ_INT(count_dir_entries(tmpdir), before);
    FILE *f = fopen(bin, "wb");
    float vals[16 / 4 + 80];
    for (int i = 0; i < 84; i++)
        vals[i] = (float)i * 0.5f;
    fwrite(vals, 4, 84, f); /* little-endian host */
    fclose(f);
    CHECK_EQ_INT(graph_save_json(h, path, err, sizeof err), 0);
    char *c = read_file(path);
    const char *from = "\"init\": {\"kind\": \"file\", \"path\": \"table.bin\", \"offset\": 16}";
    const char *to = "\"init\": {\"kind\": \"file\", \"path\": \"model.weights.bin\", \"offset\": 0}";
    char *want = malloc(strlen(a) + 64);
    const char *at = strstr(a, from);
    CHECK(at != NULL);
    if (at)
        sprintf(want, "%.*s%s%s", (int)(at - a), a, to, at + strlen(from));
    CHECK(c && at && !strcmp(c, want));
    struct stat st;
    CHECK(stat(side, &st) == 0 && st.st_size == 80 * 4);
    char *sb = read_file(side);
    CHECK(sb && !memcmp(sb, vals + 4, 80 * 4)); /* little-endian host */
    free(sb);
    unlink(bin);
    rmdir(srcdir);
    graph *k = graph_load_json(path, 0, err, sizeof err);
    CHECK(k != NULL);
    if (k) {
        CHECK(k->base_dir && !strcmp(k->base_dir, tmpdir));
        char *d = graph_to_json_string(k);
        CHECK(d && c && !strcmp(d, c));
        free(d);
        float tv[80];
        CHECK_EQ_INT(graph_weight_values(k, graph_find_tensor(k, "table"), tv, err, sizeof err), 0);
        CHECK(tv[0] == 2.0f && tv[79] == 83 * 0.5f);
        /* saving the reloaded model over itself reads the old sidecar before replacing it */
        CHECK_EQ_INT(graph_save_json(k, path, err, sizeof err), 0);
        char *c2 = read_file(path);
        CHECK(c2 && c && !strcmp(c2, c));
        free(c2);
        CHECK_EQ_INT(graph_weight_values(k, graph_find_tensor(k, "table"), tv, err, sizeof err), 0);
        CHECK(tv[0] == 2.0f && tv[79] == 83 * 0.5f);
        graph_free(k);
    }
    free(want);
    unlink(path);
    unlink(side);
    /* the model name defaults to the file's stem */
    snprintf(path, sizeof path, "%s/stem.v2.json", tmpdir);
    test_write_file(path, "{\"format\":\"tasc-model\",\"version\":1,\"inputs\":[{\"name\":\"x\",\"shape\":[3]}],"
                     "\"nodes\":[{\"op\":\"relu\",\"inputs\":[\"x\"]}],\"outputs\":[\"relu_0\"]}");
    k = graph_load_json(path, 0, err, sizeof err);
    CHECK(k && !strcmp(k->name, "stem.v2"));
    graph_free(k);
    unlink(path);
    free(c);
    free(b);
    free(a);
    graph_free(h);
    graph_free(g);
}

/* Nodes in any order, names and outputs by default, parameters by default, enums as ints. */
static void test_any_order(void) {
    const char *fwd =
        "{\"format\": \"tasc-model\", \"version\": 1, \"name\": \"m\",\n"
        " \"inputs\": [{\"name\": \"x\", \"shape\": [2, 3, 8, 8]}],\n"
        " \"weights\": [{\"name\": \"w\", \"shape\": [4, 3, 3, 3], \"init\": {\"kind\": \"random\", \"seed\": 5}}],\n"
        " \"nodes\": [\n"
        "  {\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"pad\": \"same\", \"act\": \"relu\"}},\n"
        "  {\"name\": \"r\", \"op\": \"sigmoid\", \"inputs\": [\"c\"]},\n"
        "  {\"op\": \"ewadd\", \"inputs\": [\"r\", \"c\"]},\n"
        "  {\"name\": \"p\", \"op\": \"globalavgpool\", \"inputs\": [\"ewadd_0\"]}],\n"
        " \"outputs\": [\"p\"]}\n";
    const char *rev =
        "{\"format\": \"tasc-model\", \"version\": 1, \"name\": \"m\",\n"
        " \"nodes\": [\n"
        "  {\"name\": \"p\", \"op\": \"globalavgpool\", \"inputs\": [\"ewadd_0\"]},\n"
        "  {\"op\": \"ewadd\", \"inputs\": [\"r\", \"c\"]},\n"
        "  {\"name\": \"r\", \"op\": \"sigmoid\", \"inputs\": [\"c\"]},\n"
        "  {\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"pad\": \"same\", \"act\": \"relu\"}}],\n"
        " \"weights\": [{\"name\": \"w\", \"shape\": [4, 3, 3, 3], \"init\": {\"std\": 1, \"kind\": \"random\", \"seed\": 5, \"mean\": 0}}],\n"
        " \"outputs\": [\"p\"],\n"
        " \"inputs\": [{\"name\": \"x\", \"shape\": [2, 3, 8, 8], \"dtype\": \"float32\"}]}\n";
    char err[GRAPH_ERR_LEN] = "";
    graph *a = graph_load_json_string(fwd, "fwd.json", 0, err, sizeof err);
    CHECK(a != NULL);
    if (!a)
        fprintf(stderr, "  %s\n", err);
    graph *b = graph_load_json_string(rev, "rev.json", 0, err, sizeof err);
    CHECK(b != NULL);
    if (!b)
        fprintf(stderr, "  %s\n", err);
    if (a && b) {
        CHECK(graph_hash(a) == graph_hash(b));
        char *ta = graph_to_json_string(a), *tb = graph_to_json_string(b);
        CHECK(ta && tb && !strcmp(ta, tb));
        free(ta);
        free(tb);
        /* nodes were added in topological order, ties by file position */
        CHECK(!strcmp(b->nodes[0].name, "c") && !strcmp(b->nodes[1].name, "r"));
        CHECK(!strcmp(b->nodes[2].name, "ewadd_0") && !strcmp(b->nodes[3].name, "p"));
        CHECK_EQ_INT(b->nodes[0].p.v[PM_PAD], OPS_PAD_SAME);
        CHECK_EQ_INT(b->nodes[0].p.v[PM_ACT], OPS_ACT_RELU);
        CHECK_EQ_INT(b->nodes[0].p.v[PM_STRIDE_H], 1); /* default */
        CHECK(b->tensors[graph_find_tensor(b, "w")].init.std == 1.0f); /* default std */
        int64_t want[4] = {2, 4, 1, 1};
        const ops_shape *s = &b->tensors[b->outputs[0]].shape;
        CHECK(s->rank == 4 && !memcmp(s->dims, want, sizeof want));
        CHECK(b->base_dir == NULL);
    }
    graph_free(a);
    graph_free(b);
}

/* ---- bad inputs --------------------------------------------------------------------------- */
#define HEAD "{\"format\": \"tasc-model\", \"version\": 1, \"name\": \"bad\",\n"
#define XIN " \"inputs\": [{\"name\": \"x\", \"shape\": [1, 3, 8, 8]}],\n"
#define WCONV " \"weights\": [{\"name\": \"w\", \"shape\": [4, 3, 3, 3], \"init\": {\"kind\": \"constant\", \"value\": 1}}],\n"
#define NODES(...) " \"nodes\": [" __VA_ARGS__ "],\n"
#define OUTS(...) " \"outputs\": [" __VA_ARGS__ "]}\n"
#define RELU "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}"

typedef struct {
    const char *text;
    const char *want[3]; /* substrings the message must contain */
} bad_case;

static const bad_case bad_cases[] = {
    /* syntax, with line:col */
    {"{\"format\": \"tasc-model\",\n \"version\": 1,\n oops\n}\n", {"bad.json:3:5: ", "string or '}' expected near 'oops'"}},
    {"{\"format\": \"tasc-model\", \"format\": \"x\"}", {"bad.json:1:", "duplicate object key"}},
    {"", {"bad.json:1:", "end of file"}},
    {"{\"a\": [1, 2}\n", {"bad.json:1:"}},
    {"{\"a\": 99999999999999999999999}", {"bad.json:1:", "too big integer"}},
    /* wrong top level */
    {"[1, 2]", {"bad.json: the top level must be an object, got an array"}},
    {"{\"version\": 1}", {"bad.json: missing \"format\""}},
    {"{\"format\": \"tasc-rules\", \"version\": 1}", {"bad.json: \"format\" is 'tasc-rules', expected 'tasc-model'"}},
    {"{\"format\": \"tasc-model\", \"version\": 2}", {"bad.json: unsupported version 2"}},
    {"{\"format\": \"tasc-model\", \"version\": \"1\"}", {"bad.json: \"version\" must be an integer, got a string"}},
    {"{\"format\": \"tasc-model\"}", {"bad.json: missing \"version\""}},
    {HEAD XIN NODES(RELU) OUTS("\"r\"") , {NULL}}, /* the good base: loads */
    {HEAD " \"inputs\": {},\n" NODES(RELU) OUTS("\"r\""), {"bad.json: \"inputs\" must be an array, got an object"}},
    {HEAD XIN " \"nodes\": 3,\n" OUTS("\"r\""), {"bad.json: \"nodes\" must be an array, got an integer"}},
    {HEAD XIN NODES(RELU) " \"outputs\": \"r\"}", {"bad.json: \"outputs\" must be an array, got a string"}},
    {HEAD XIN NODES(RELU) OUTS("\"r\"") "", {NULL}},
    {HEAD XIN " \"extra\": 1,\n" NODES(RELU) OUTS("\"r\""), {"bad.json: unknown key 'extra'", "expected format, version"}},
    {HEAD " \"name2\": 1}", {"bad.json: unknown key 'name2'"}},
    {HEAD " \"inputs\": []}", {"bad.json: missing \"nodes\""}},
    {HEAD " \"name\": 5}", {"bad.json:"}}, /* duplicate key: syntax */
    /* empty graph */
    {HEAD XIN NODES() OUTS("\"x\""), {"bad.json: \"nodes\" is empty: a model needs at least one node"}},
    {HEAD XIN NODES(RELU) OUTS(), {"bad.json: \"outputs\" is empty: a model needs at least one output"}},
    {HEAD XIN " \"nodes\": [" RELU "]}", {"bad.json: missing \"outputs\""}},
    /* inputs */
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [1, 3, 8, 8]}, 7],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: inputs[1]: must be an object, got an integer"}},
    {HEAD " \"inputs\": [{\"shape\": [1]}],\n" NODES(RELU) OUTS("\"r\""), {"bad.json: inputs[0]: missing \"name\""}},
    {HEAD " \"inputs\": [{\"name\": \"x\"}],\n" NODES(RELU) OUTS("\"r\""), {"bad.json: input 'x': missing \"shape\""}},
    {HEAD " \"inputs\": [{\"name\": \"\", \"shape\": [1]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: inputs[0]: \"name\": the name is empty"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [1, 0, 8]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': shape[1] is 0 (dims must be positive)"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [-3]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': shape[0] is -3"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [2.5]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': shape[0] must be a positive integer, got a real"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": \"1,3\"}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': \"shape\" must be an array of positive integers, got a string"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [1, 1, 1, 1, 1, 1, 1]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': \"shape\" has 7 dims, more than the limit of 6"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [4611686018427387904, 4]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': shape (4611686018427387904,4) has more elements than int64 can count"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [65536, 65536]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': shape (65536,65536) has 4294967296 elements, over the limit of 2147483648"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [1], \"dtype\": \"float16\"}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': unknown dtype 'float16'"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [1], \"dims\": [1]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': unknown key 'dims' (expected name, shape, dtype)"}},
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [1]}, {\"name\": \"x\", \"shape\": [2]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: input 'x': duplicate tensor name 'x' (also input 'x')"}},
    /* weights */
    {HEAD XIN " \"weights\": [{\"name\": \"x\", \"shape\": [1], \"init\": {\"kind\": \"constant\", \"value\": 0}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'x': duplicate tensor name 'x' (also input 'x')"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1]}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: weight 'w': missing \"init\""}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"zeros\"}}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: weight 'w': init: unknown kind 'zeros' (expected random, constant or file)"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"random\"}}],\n" NODES(RELU) OUTS("\"r\""),
     {"bad.json: weight 'w': init: missing \"seed\""}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"random\", \"seed\": 1, \"std\": -1}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'w': init: random init needs", "std >= 0"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"random\", \"seed\": 1, \"value\": 1}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'w': init: unknown key 'value' (expected kind, seed, mean, std)"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"constant\", \"value\": \"1\"}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'w': init: \"value\" must be a number, got a string"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"constant\", \"value\": 1e39}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'w': init: \"value\" is 1e+39, outside the float32 range"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"file\", \"offset\": 0}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'w': init: missing \"path\""}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [1], \"init\": {\"kind\": \"file\", \"path\": \"a\", \"offset\": -8}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'w': init: \"offset\" must be a non-negative integer"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [0], \"init\": {\"kind\": \"constant\", \"value\": 0}}],\n"
     NODES(RELU) OUTS("\"r\""), {"bad.json: weight 'w': shape[0] is 0"}},
    {HEAD XIN " \"weights\": [[1]],\n" NODES(RELU) OUTS("\"r\""), {"bad.json: weights[0]: must be an object, got an array"}},
    /* nodes */
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"conv3d\", \"inputs\": [\"x\"]}") OUTS("\"c\""),
     {"bad.json: node 'c': unknown op 'conv3d'"}},
    {HEAD XIN NODES("{\"name\": \"c\", \"inputs\": [\"x\"]}") OUTS("\"c\""), {"bad.json: node 'c': missing \"op\""}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"relu\"}") OUTS("\"c\""), {"bad.json: node 'c': missing \"inputs\""}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": 7, \"inputs\": [\"x\"]}") OUTS("\"c\""),
     {"bad.json: node 'c': \"op\" must be a string, got an integer"}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"relu\", \"inputs\": \"x\"}") OUTS("\"c\""),
     {"bad.json: node 'c': \"inputs\" must be an array of tensor names, got a string"}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"relu\", \"inputs\": [0]}") OUTS("\"c\""),
     {"bad.json: node 'c': inputs[0] must be a tensor name, got an integer"}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"relu\", \"inputs\": [\"x\", \"x\"]}") OUTS("\"c\""),
     {"bad.json: node 'c': op 'relu' takes 1 input, got 2"}},
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\"]}") OUTS("\"c\""),
     {"bad.json: node 'c': op 'conv2d' takes 2 to 3 inputs, got 1"}},
    {HEAD XIN NODES("{\"op\": \"relu\", \"inputs\": [\"x\"], \"param\": {}}") OUTS("\"relu_0\""),
     {"bad.json: nodes[0]: unknown key 'param' (expected name, op, inputs, params, outputs)"}},
    {HEAD XIN NODES(RELU ", 5") OUTS("\"r\""), {"bad.json: nodes[1]: must be an object, got an integer"}},
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"strid_h\": 2}}")
     OUTS("\"c\""), {"bad.json: node 'c': unknown parameter 'strid_h' for op 'conv2d' (it takes: ", "stride_h"}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"relu\", \"inputs\": [\"x\"], \"params\": {\"axis\": 1}}") OUTS("\"c\""),
     {"bad.json: node 'c': unknown parameter 'axis' for op 'relu' (it takes: none)"}},
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"stride_h\": \"2\"}}")
     OUTS("\"c\""), {"bad.json: node 'c': parameter 'stride_h' must be an integer, got a string"}},
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"stride_h\": 0}}")
     OUTS("\"c\""), {"bad.json: node 'c': ", "'stride_h'", "out of range"}},
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"act\": \"swish\"}}")
     OUTS("\"c\""), {"bad.json: node 'c': parameter 'act': unknown value 'swish' (one of: none, relu, sigmoid, tanh, gelu, silu, gelu_tanh, relu6, hardswish)"}},
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"pad\": 1}}")
     OUTS("\"c\""), {"bad.json: node 'c': parameter 'pad' must be a name, got an integer (one of: explicit, same, valid)"}},
    /* integer codes are not part of the format: names only */
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"act\": 3}}")
     OUTS("\"c\""), {"bad.json: node 'c': parameter 'act' must be a name, got an integer (one of: none, relu, sigmoid, tanh, gelu, silu, gelu_tanh, relu6, hardswish)"}},
    {HEAD XIN WCONV NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"params\": {\"act\": true}}")
     OUTS("\"c\""), {"bad.json: node 'c': parameter 'act' must be a name, got a boolean"}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"clip\", \"inputs\": [\"x\"], \"params\": {\"lo\": \"0\"}}") OUTS("\"c\""),
     {"bad.json: node 'c': parameter 'lo' must be a number, got a string"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"x\"]}") OUTS("\"t\""),
     {"bad.json: node 't': missing required parameter 'perm' for op 'transpose'"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"x\"], \"params\": {\"perm\": 3}}") OUTS("\"t\""),
     {"bad.json: node 't': parameter 'perm' must be an array of integers, got an integer"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"x\"], \"params\": {\"perm\": [0, 1, \"2\", 3]}}")
     OUTS("\"t\""), {"bad.json: node 't': parameter 'perm': element 2 must be an integer, got a string"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"x\"], \"params\": {\"perm\": [0,1,2,3,4,5,6,7,8]}}")
     OUTS("\"t\""), {"bad.json: node 't': parameter 'perm' has 9 values, more than the limit of 8"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"x\"], \"params\": {\"list\": [0, 1, 2, 3]}}")
     OUTS("\"t\""), {"bad.json: node 't': unknown parameter 'list' for op 'transpose' (it takes: perm)"}},
    {HEAD XIN " \"weights\": [{\"name\": \"w\", \"shape\": [4, 5, 3, 3], \"init\": {\"kind\": \"constant\", \"value\": 1}}],\n"
     NODES("{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"]}") OUTS("\"c\""),
     {"bad.json: node 'c': ", "5 channels"}},
    {HEAD XIN NODES("{\"name\": \"c\", \"op\": \"relu\", \"inputs\": [\"y\"]}") OUTS("\"c\""),
     {"bad.json: node 'c': input 'y' names no tensor"}},
    {HEAD XIN NODES(RELU ", {\"name\": \"r\", \"op\": \"tanh\", \"inputs\": [\"x\"]}") OUTS("\"r\""),
     {"bad.json: node 'r': duplicate node name (also nodes[0])"}},
    {HEAD XIN NODES(RELU ", {\"name\": \"t\", \"op\": \"tanh\", \"inputs\": [\"x\"], \"outputs\": [\"r\"]}") OUTS("\"r\""),
     {"bad.json: node 't': duplicate tensor name 'r' (also an output of node 'r')"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"tanh\", \"inputs\": [\"x\"], \"outputs\": [\"x\"]}") OUTS("\"x\""),
     {"bad.json: node 't': duplicate tensor name 'x' (also input 'x')"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"tanh\", \"inputs\": [\"x\"], \"outputs\": [\"a\", \"b\"]}") OUTS("\"a\""),
     {"bad.json: node 't': \"outputs\" has 2 names, the node makes 1 output"}},
    {HEAD XIN NODES("{\"name\": \"t\", \"op\": \"tanh\", \"inputs\": [\"x\"], \"outputs\": [\"\"]}") OUTS("\"x\""),
     {"bad.json: node 't': outputs[0]: the name is empty"}},
    {HEAD XIN NODES("{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"b\"]}, {\"name\": \"b\", \"op\": \"tanh\", \"inputs\": [\"a\"]}")
     OUTS("\"b\""), {"bad.json: node 'a': the nodes form a cycle: a -> b -> a"}},
    {HEAD XIN NODES("{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"a\"]}") OUTS("\"a\""),
     {"bad.json: node 'a': the nodes form a cycle: a -> a"}},
    {HEAD XIN NODES("{\"name\": \"s\", \"op\": \"split\", \"inputs\": [\"x\"], \"params\": {\"axis\": 1, \"parts\": 3}}")
     OUTS("\"s:0\", \"s:3\""), {"bad.json: outputs[1]: 's:3' names no tensor"}},
    {HEAD XIN NODES(RELU) OUTS("\"r\", 3"), {"bad.json: outputs[1]: must be a tensor name, got an integer"}},
    {HEAD XIN NODES("{\"name\": \"r\\nx\", \"op\": \"relu\", \"inputs\": [\"x\"]}") OUTS("\"r\""),
     {"bad.json: nodes[0]: \"name\": the name contains a control character (0x0a)"}},
    /* element limit on a node output */
    {HEAD " \"inputs\": [{\"name\": \"x\", \"shape\": [40000, 40000]}],\n"
     NODES("{\"name\": \"c\", \"op\": \"concat\", \"inputs\": [\"x\", \"x\"], \"params\": {\"axis\": 0}}") OUTS("\"c\""),
     {"bad.json: node 'c': output 'c': shape (80000,40000) has 3200000000 elements, over the limit of 2147483648"}},
};

static void test_bad_inputs(void) {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *bc = &bad_cases[i];
        char err[GRAPH_ERR_LEN];
        snprintf(err, sizeof err, "untouched");
        graph *g = graph_load_json_string(bc->text, "bad.json", 0, err, sizeof err);
        if (!bc->want[0]) { /* a good control case */
            CHECK(g != NULL);
            if (!g)
                fprintf(stderr, "  case %zu: %s\n", i, err);
            graph_free(g);
            continue;
        }
        CHECK(g == NULL);
        int ok = 1;
        for (int k = 0; k < 3 && bc->want[k]; k++)
            ok &= strstr(err, bc->want[k]) != NULL;
        ok &= !strncmp(err, "bad.json:", 9);
        ok &= strchr(err, '\n') == NULL;
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "  case %zu: got \"%s\", want \"%s\"\n", i, err, bc->want[0]);
        graph_free(g);
    }
}

static void test_file_errors(void) {
    char err[GRAPH_ERR_LEN], path[600];
    snprintf(path, sizeof path, "%s/missing.json", tmpdir);
    CHECK(graph_load_json(path, 0, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, path);
    CHECK_STR_CONTAINS(err, "cannot open: No such file or directory");
    CHECK(graph_load_json(tmpdir, 0, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, tmpdir);
    CHECK_STR_CONTAINS(err, "is a directory");
    /* a syntax error in a file names the file, line and column */
    snprintf(path, sizeof path, "%s/syntax.json", tmpdir);
    test_write_file(path, "{\n  \"format\": \"tasc-model\",\n  \"version\": 1,\n  \"nodes\": [,]\n}\n");
    CHECK(graph_load_json(path, 0, err, sizeof err) == NULL);
    char want[700];
    snprintf(want, sizeof want, "%s:4:", path);
    CHECK_STR_CONTAINS(err, want);
    unlink(path);
    /* the element limit passed by the caller */
    const char *small = "{\"format\": \"tasc-model\", \"version\": 1, \"inputs\": [{\"name\": \"x\", \"shape\": [10, 11]}],"
                        " \"nodes\": [{\"op\": \"relu\", \"inputs\": [\"x\"]}], \"outputs\": [\"relu_0\"]}";
    graph *g = graph_load_json_string(small, "lim.json", 100, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "lim.json: input 'x': shape (10,11) has 110 elements, over the limit of 100");
    g = graph_load_json_string(small, "lim.json", 110, err, sizeof err);
    CHECK(g != NULL && g->max_elements == 110);
    graph_free(g);
    /* and from the environment when the caller passes 0 */
    setenv("TASC_MAX_ELEMENTS", "109", 1);
    g = graph_load_json_string(small, "lim.json", 0, err, sizeof err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err, "limit of 109");
    unsetenv("TASC_MAX_ELEMENTS");
    /* a file over the size limit is refused before it is read (a sparse file: no disk used) */
    snprintf(path, sizeof path, "%s/huge.json", tmpdir);
    FILE *hf = fopen(path, "wb");
    if (hf) {
        fclose(hf);
        CHECK_EQ_INT(truncate(path, (off_t)(INT64_C(1) << 30) + 1), 0);
        CHECK(graph_load_json(path, 0, err, sizeof err) == NULL);
        CHECK_STR_CONTAINS(err, "huge.json: 1073741825 bytes, larger than the limit");
        unlink(path);
    }
    /* a NUL inside the file is a syntax error, not a truncation */
    snprintf(path, sizeof path, "%s/nul.json", tmpdir);
    FILE *f = fopen(path, "wb");
    fwrite("{\"a\": \"b\0c\"}", 1, 12, f);
    fclose(f);
    CHECK(graph_load_json(path, 0, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, ":1:");
    unlink(path);
}

static void test_save_failures(void) {
    graph *g = graph_new("s");
    int64_t d[1] = {3};
    int32_t x = graph_input(g, "x", 1, d);
    graph_mark_output(g, graph_unary(g, OP_RELU, x));
    char err[GRAPH_ERR_LEN];
    /* a folder that does not exist */
    CHECK_EQ_INT(graph_save_json(g, "/nonexistent-tasc-dir/m.json", err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "/nonexistent-tasc-dir/m.json: cannot create");
    /* the target is a directory: refused before anything is written */
    char sub[600];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    mkdir(sub, 0755);
    int before = count_dir_entries(tmpdir);
    CHECK_EQ_INT(graph_save_json(g, sub, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, sub);
    CHECK_STR_CONTAINS(err, "is a folder");
    CHECK_EQ_INT(count_dir_entries(tmpdir), before);
    CHECK_EQ_INT(count_dir_entries(sub), 0);
    rmdir(sub);
    /* an invalid graph is not written, and an old file stays as it was */
    char path[600];
    snprintf(path, sizeof path, "%s/keep.json", tmpdir);
    test_write_file(path, "old");
    graph_unary(g, OP_RELU, 77);
    CHECK(!graph_ok(g));
    CHECK_EQ_INT(graph_save_json(g, path, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "not saved");
    char *old = read_file(path);
    CHECK(old && !strcmp(old, "old"));
    free(old);
    unlink(path);
    graph_free(g);

    /* values JSON cannot hold */
    g = graph_new("nan");
    graph_init nanw = {GRAPH_INIT_CONSTANT, 0, 0, 0, 1.0f, NULL, 0, NULL};
    x = graph_input(g, "x", 1, d);
    int32_t w = graph_weight(g, "w", 1, d, nanw);
    graph_mark_output(g, graph_ewadd(g, x, w));
    g->tensors[w].init.value = NAN; /* past the builder's check */
    CHECK(graph_to_json_string(g) == NULL);
    CHECK_EQ_INT(graph_save_json(g, path, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "weight 'w'");
    CHECK(access(path, F_OK) != 0);
    graph_free(g);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(p, 1, n, f);
    fclose(f);
}

/* The whole file, *n bytes (caller frees), NULL if unreadable. */
static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

/* The float at byte offset off of a little-endian buffer. */
static float le_float(const unsigned char *b, size_t off) {
    uint32_t u = (uint32_t)b[off] | (uint32_t)b[off + 1] << 8 | (uint32_t)b[off + 2] << 16 | (uint32_t)b[off + 3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int weight_equals(const graph *g, const char *name, const float *want, int64_t n) {
    int32_t t = graph_find_tensor(g, name);
    if (t < 0 || ops_shape_numel(&g->tensors[t].shape) != n)
        return 0;
    float *v = malloc((size_t)n * sizeof *v);
    char err[GRAPH_ERR_LEN];
    int ok = graph_weight_values(g, t, v, err, sizeof err) == 0 && !memcmp(v, want, (size_t)n * sizeof *v);
    if (!ok)
        fprintf(stderr, "  weight '%s' differs (%s)\n", name, err);
    free(v);
    return ok;
}

static int64_t weight_offset(const graph *g, const char *name) {
    int32_t t = graph_find_tensor(g, name);
    return t >= 0 && g->tensors[t].init.kind == GRAPH_INIT_FILE ? g->tensors[t].init.offset : -1;
}

/* DATA weights (two sharing a blob), a FILE weight in another folder, a RANDOM and a CONSTANT
 * weight: the sidecar's layout and bytes, reloading, determinism, moving and re-saving. */
static void test_sidecar(void) {
    char a_dir[600], b_dir[600], c_dir[600], ext[640], json[640], side[640], json2[640], side2[640];
    snprintf(a_dir, sizeof a_dir, "%s/a", tmpdir);
    snprintf(b_dir, sizeof b_dir, "%s/b", tmpdir);
    snprintf(c_dir, sizeof c_dir, "%s/c", tmpdir);
    snprintf(ext, sizeof ext, "%s/ext.bin", a_dir);
    snprintf(json, sizeof json, "%s/m.json", b_dir);
    snprintf(side, sizeof side, "%s/m.weights.bin", b_dir);
    CHECK_EQ_INT(mkdir(a_dir, 0755), 0);
    CHECK_EQ_INT(mkdir(b_dir, 0755), 0);
    CHECK_EQ_INT(mkdir(c_dir, 0755), 0);
    /* ext.bin: 1 float of filler, then the 6 values of "fw" (little-endian host) */
    float ext_vals[7] = {99.0f, 0.25f, -1.5f, 2.0f, 1e-30f, -3.0f, 4.5f};
    write_bytes(ext, ext_vals, sizeof ext_vals);
    float v1[6] = {1.0f, -2.0f, 0.5f, 3.0f, -0.0f, 7.25f}, v5[17];
    for (int i = 0; i < 17; i++)
        v5[i] = (float)i / 3.0f - 2.0f;
    graph_blob *b1 = graph_blob_new(v1, 6), *b5 = graph_blob_new(v5, 17);

    graph *g = graph_new("side");
    g->base_dir = strdup(a_dir);
    int64_t d[2] = {2, 3}, d17[1] = {17};
    int32_t x = graph_input(g, "x", 2, d);
    int32_t w1 = graph_weight_data(g, "w1", 2, d, b1);
    int32_t wr = graph_weight_he(g, "wr", 2, d);
    int32_t w3 = graph_weight_data(g, "w3", 2, d, b1); /* the same blob: stored once */
    graph_init fi = {.kind = GRAPH_INIT_FILE, .path = "ext.bin", .offset = 4};
    int32_t fw = graph_weight(g, "fw", 2, d, fi);
    int32_t wc = graph_weight_const(g, "wc", 2, d, 0.5f);
    int32_t w5 = graph_weight_data(g, "w5", 1, d17, b5);
    int32_t t = graph_ewadd(g, x, w1);
    t = graph_ewmul(g, t, wr);
    t = graph_ewadd(g, t, w3);
    t = graph_ewmul(g, t, fw);
    t = graph_ewadd(g, t, wc);
    graph_mark_output(g, t);
    graph_mark_output(g, w5);
    CHECK(graph_ok(g));
    CHECK_EQ_INT(graph_has_sidecar_weights(g), 1);
    char *sp = graph_sidecar_path(json);
    CHECK(!strcmp(sp, side));
    free(sp);
    sp = graph_sidecar_path("dir.v1/model");
    CHECK(!strcmp(sp, "dir.v1/model.weights.bin"));
    free(sp);

    char err[GRAPH_ERR_LEN];
    CHECK_EQ_INT(graph_save_json(g, json, err, sizeof err), 0);
    char *text = read_file(json);
    CHECK(text != NULL);
    CHECK_STR_CONTAINS(text, "{\"name\": \"w1\", \"shape\": [2, 3], \"init\": {\"kind\": \"file\", \"path\": \"m.weights.bin\", \"offset\": 0}}");
    CHECK_STR_CONTAINS(text, "{\"name\": \"w3\", \"shape\": [2, 3], \"init\": {\"kind\": \"file\", \"path\": \"m.weights.bin\", \"offset\": 0}}");
    CHECK_STR_CONTAINS(text, "{\"name\": \"fw\", \"shape\": [2, 3], \"init\": {\"kind\": \"file\", \"path\": \"m.weights.bin\", \"offset\": 64}}");
    CHECK_STR_CONTAINS(text, "{\"name\": \"w5\", \"shape\": [17], \"init\": {\"kind\": \"file\", \"path\": \"m.weights.bin\", \"offset\": 128}}");
    CHECK_STR_CONTAINS(text, "{\"name\": \"wc\", \"shape\": [2, 3], \"init\": {\"kind\": \"constant\", \"value\": 0.5}}");
    CHECK_STR_CONTAINS(text, "\"name\": \"wr\", \"shape\": [2, 3], \"init\": {\"kind\": \"random\"");
    /* the sidecar: values little-endian at their offsets, zero filler, nothing after the last */
    size_t n = 0;
    unsigned char *bytes = read_bytes(side, &n);
    CHECK(bytes != NULL);
    CHECK_EQ_INT(n, 128 + 17 * 4);
    if (bytes && n == 128 + 17 * 4) {
        int ok = 1;
        for (int i = 0; i < 6; i++)
            ok &= !memcmp(&v1[i], &(float){le_float(bytes, 4 * (size_t)i)}, 4);
        for (int i = 0; i < 6; i++)
            ok &= le_float(bytes, 64 + 4 * (size_t)i) == ext_vals[i + 1];
        for (int i = 0; i < 17; i++)
            ok &= le_float(bytes, 128 + 4 * (size_t)i) == v5[i];
        for (size_t i = 24; i < 64; i++)
            ok &= bytes[i] == 0;
        for (size_t i = 88; i < 128; i++)
            ok &= bytes[i] == 0;
        CHECK(ok);
    }
    free(bytes);
    /* deterministic: a second save gives the same bytes */
    snprintf(json2, sizeof json2, "%s/m2.json", b_dir);
    snprintf(side2, sizeof side2, "%s/m2.weights.bin", b_dir);
    CHECK_EQ_INT(graph_save_json(g, json2, err, sizeof err), 0);
    size_t n2 = 0;
    unsigned char *s1 = read_bytes(side, &n), *s2 = read_bytes(side2, &n2);
    CHECK(s1 && s2 && n == n2 && !memcmp(s1, s2, n));
    free(s1);
    free(s2);
    char *text2 = read_file(json2);
    CHECK(text2 && strstr(text2, "m2.weights.bin"));
    unlink(json2);
    unlink(side2);
    free(text2);

    /* the saved model is self-contained: the FILE weight's own file can go */
    unlink(ext);
    graph *k = graph_load_json(json, 0, err, sizeof err);
    CHECK(k != NULL);
    if (k) {
        CHECK(weight_equals(k, "w1", v1, 6));
        CHECK(weight_equals(k, "w3", v1, 6));
        CHECK(weight_equals(k, "fw", ext_vals + 1, 6));
        CHECK(weight_equals(k, "w5", v5, 17));
        CHECK_EQ_INT(weight_offset(k, "w5"), 128);
        CHECK_EQ_INT(k->tensors[graph_find_tensor(k, "wc")].init.kind, GRAPH_INIT_CONSTANT);
        /* over itself, with a new DATA weight: the old sidecar is read before it is replaced */
        float v6[3] = {-1.0f, 0.0f, 1.0f};
        graph_blob *b6 = graph_blob_new(v6, 3);
        int64_t d3[1] = {3};
        graph_mark_output(k, graph_weight_data(k, "w6", 1, d3, b6));
        graph_blob_unref(b6);
        CHECK_EQ_INT(graph_save_json(k, json, err, sizeof err), 0);
        graph_free(k);
        k = graph_load_json(json, 0, err, sizeof err);
        CHECK(k != NULL);
        CHECK(k && weight_equals(k, "w1", v1, 6) && weight_equals(k, "fw", ext_vals + 1, 6) &&
              weight_equals(k, "w5", v5, 17) && weight_equals(k, "w6", v6, 3));
        CHECK_EQ_INT(weight_offset(k, "w6"), 128 + 17 * 4 + 60);
        /* the two files moved together into another folder still load */
        char json3[640], side3[640];
        snprintf(json3, sizeof json3, "%s/moved.json", c_dir);
        snprintf(side3, sizeof side3, "%s/m.weights.bin", c_dir);
        CHECK_EQ_INT(rename(json, json3), 0);
        CHECK_EQ_INT(rename(side, side3), 0);
        graph *mv = graph_load_json(json3, 0, err, sizeof err);
        CHECK(mv && weight_equals(mv, "w6", v6, 3) && weight_equals(mv, "w1", v1, 6));
        /* a loaded model saved into another folder takes its values along */
        CHECK_EQ_INT(graph_save_json(mv, json, err, sizeof err), 0);
        unlink(json3);
        unlink(side3);
        graph_free(mv);
        mv = graph_load_json(json, 0, err, sizeof err);
        CHECK(mv && weight_equals(mv, "w6", v6, 3) && weight_equals(mv, "fw", ext_vals + 1, 6));
        graph_free(mv);
        graph_free(k);
    }
    unlink(json);
    unlink(side);
    free(text);

    /* failures leave neither file, and files already there as they were */
    int before = count_dir_entries(b_dir);
    CHECK_EQ_INT(before, 0);
    test_write_file(json, "old json");
    test_write_file(side, "old weights");
    CHECK_EQ_INT(graph_save_json(g, json, err, sizeof err), -1); /* ext.bin is gone */
    CHECK_STR_CONTAINS(err, "weight 'fw'");
    CHECK_STR_CONTAINS(err, "ext.bin");
    CHECK(strchr(err, '\n') == NULL);
    char *o1 = read_file(json), *o2 = read_file(side);
    CHECK(o1 && o2 && !strcmp(o1, "old json") && !strcmp(o2, "old weights"));
    free(o1);
    free(o2);
    CHECK_EQ_INT(count_dir_entries(b_dir), 2);
    unlink(json);
    unlink(side);
    write_bytes(ext, ext_vals, sizeof ext_vals);
    /* the JSON cannot be written (a value JSON cannot hold): no sidecar either */
    g->tensors[wc].init.value = NAN; /* past the builder's check */
    CHECK_EQ_INT(graph_save_json(g, json, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "weight 'wc'");
    CHECK_EQ_INT(count_dir_entries(b_dir), 0);
    g->tensors[wc].init.value = 0.5f;
    /* the sidecar's path is a folder */
    CHECK_EQ_INT(mkdir(side, 0755), 0);
    CHECK_EQ_INT(graph_save_json(g, json, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "is a folder");
    CHECK_EQ_INT(count_dir_entries(b_dir), 1);
    rmdir(side);
    /* a folder that does not exist */
    char nope[700];
    snprintf(nope, sizeof nope, "%s/nope/m.json", b_dir);
    CHECK_EQ_INT(graph_save_json(g, nope, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "nope/m.weights.bin: cannot create");
    CHECK_EQ_INT(count_dir_entries(b_dir), 0);
    /* and it works again once the data is back */
    CHECK_EQ_INT(graph_save_json(g, json, err, sizeof err), 0);
    CHECK_EQ_INT(count_dir_entries(b_dir), 2);
    unlink(json);
    unlink(side);

    graph_free(g);
    CHECK_EQ_INT(graph_blob_refs(b1), 1);
    graph_blob_unref(b1);
    graph_blob_unref(b5);
    unlink(ext);
    rmdir(a_dir);
    rmdir(b_dir);
    rmdir(c_dir);
}

/* Load text: either a graph that validates, or NULL with one line that starts with the file name. */
static int load_is_clean(const char *text, size_t *n_ok) {
    char err[GRAPH_ERR_LEN];
    err[0] = '\0';
    graph *g = graph_load_json_string(text, "sweep.json", 0, err, sizeof err);
    int ok;
    if (g) {
        char verr[GRAPH_ERR_LEN];
        ok = graph_validate(g, verr, sizeof verr) == 0;
        /* whatever is accepted round-trips exactly */
        char *t1 = graph_to_json_string(g);
        graph *g2 = t1 ? graph_load_json_string(t1, "again.json", 0, verr, sizeof verr) : NULL;
        char *t2 = g2 ? graph_to_json_string(g2) : NULL;
        ok &= t1 && t2 && !strcmp(t1, t2) && graph_hash(g) == graph_hash(g2);
        free(t1);
        free(t2);
        graph_free(g2);
        (*n_ok)++;
    } else {
        ok = !strncmp(err, "sweep.json:", 11) && !strchr(err, '\n') && strlen(err) > 12;
    }
    if (!ok)
        fprintf(stderr, "  unclean result for: %.200s\n  message: %s\n", text, err);
    graph_free(g);
    return ok;
}

static void collect_values(json_t *v, json_t **all, size_t *n, size_t cap) {
    if (*n < cap)
        all[(*n)++] = v;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) collect_values(x, all, n, cap);
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            collect_values(json_array_get(v, i), all, n, cap);
    }
}

/* Every prefix, every byte replaced by a few others, and every value of the JSON tree replaced by
 * values of other types: no crash, no sanitizer report, always a graph or a clean message. */
static void test_sweep(void) {
    graph *g = feature_graph();
    char *text = graph_to_json_string(g);
    graph_free(g);
    CHECK(text != NULL);
    if (!text)
        return;
    size_t len = strlen(text), n_ok = 0, bad = 0, runs = 0;
    char *buf = malloc(len + 1);
    for (size_t cut = 0; cut < len; cut += 7) {
        memcpy(buf, text, cut);
        buf[cut] = '\0';
        bad += !load_is_clean(buf, &n_ok);
        runs++;
    }
    const char subs[] = {'0', '9', '-', '"', '{', ']', ' ', 'x', '\x01', '\xff'};
    for (size_t i = 0; i < len; i += 3)
        for (size_t k = 0; k < sizeof subs; k++) {
            memcpy(buf, text, len + 1);
            buf[i] = subs[k];
            bad += !load_is_clean(buf, &n_ok);
            runs++;
        }
    free(buf);

    const char *repl[] = {"null", "0", "-1", "2", "1e300", "0.5", "\"\"", "\"x\"", "\"relu\"", "[]", "[0]", "[1, 2]", "{}",
                          "true", "9223372036854775807", "[-9223372036854775807, 9223372036854775807]"};
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    CHECK(root != NULL);
    json_t *all[4096];
    size_t n = 0;
    if (root)
        collect_values(root, all, &n, 4096);
    for (size_t i = 0; i < n; i++) {
        for (size_t r = 0; r < sizeof repl / sizeof repl[0]; r++) {
            json_t *copy = json_deep_copy(root), *call[4096];
            size_t m = 0;
            collect_values(copy, call, &m, 4096);
            json_t *target = call[i], *parent = NULL;
            /* find the parent of target and replace it there */
            for (size_t j = 0; j < m && !parent; j++) {
                if (json_is_object(call[j])) {
                    const char *k;
                    json_t *x;
                    json_object_foreach(call[j], k, x) if (x == target) {
                        parent = call[j];
                        json_object_set_new(parent, k, json_loads(repl[r], JSON_DECODE_ANY, &je));
                        break;
                    }
                } else if (json_is_array(call[j])) {
                    for (size_t q = 0; q < json_array_size(call[j]) && !parent; q++)
                        if (json_array_get(call[j], q) == target) {
                            parent = call[j];
                            json_array_set_new(parent, q, json_loads(repl[r], JSON_DECODE_ANY, &je));
                        }
                }
            }
            char *t = parent ? json_dumps(copy, 0) : NULL;
            if (t) {
                bad += !load_is_clean(t, &n_ok);
                runs++;
            }
            free(t);
            json_decref(copy);
        }
    }
    json_decref(root);
    CHECK_EQ_INT(bad, 0);
    CHECK(runs > 3000);
    CHECK(n_ok > 10); /* some mutations are harmless: the sweep reaches the semantic checks */
    printf("sweep: %zu loads, %zu loaded, %zu unclean\n", runs, n_ok, bad);
    free(text);
}

int main(void) {
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_any_order();
    test_bad_inputs();
    test_file_errors();
    test_save_failures();
    test_sidecar();
    test_sweep();
    int rc = TEST_REPORT();
    rmdir(tmpdir);
    return rc;
}
