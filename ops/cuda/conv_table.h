/* conv_table.h: the per-device cache of convolution path choices (ops_conv.cu), plain C without
 * CUDA so that its file logic is testable on any machine (tests/test_conv_table.c).
 *
 * ops_conv.cu times every path that can run a convolution configuration and keeps the fastest.
 * Near-equal paths swap from one process to the next, and with them the node's bits and a few
 * percent of a model's latency. The first process to measure a configuration on a device writes its
 * choice here; every later one reads it and runs the same kernels (same bits, run after run), with
 * no measuring at setup. Entries are keyed by the device key (matmul_table.h: name, compute
 * capability, SMs, clock), the cuDNN version, and the configuration (conv shape, window, workspace
 * limit, precision, fused add, bias and activation). The file is
 * $TASC_CACHE_DIR/conv-DEVICE.txt (the matmul cache's folder); TASC_CONV_CACHE=off neither reads
 * nor writes it. Its lines name paths, cuDNN algorithms and tile configurations by name, so a file
 * from another build fails loudly (and is then ignored) instead of picking another kernel.
 */
#ifndef TASC_CONV_TABLE_H
#define TASC_CONV_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "matmul_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The paths of ops_conv.cu, in its order (oc_conv_path). */
#define CT_PATHS 6
extern const char *const ct_path_names[CT_PATHS]; /* cudnn gemm direct 3xtf32 igemm wgmma */

/* The implicit GEMMs with tile configurations and split-K: their index in ct_entry.cfg/split. */
enum { CT_TC, CT_IG, CT_WG, CT_KINDS };

/* cuDNN's forward algorithms by their enum value (cudnnConvolutionFwdAlgo_t, 0..7): the name, "?"
 * out of range; the value of a name, -1 if unknown. */
const char *ct_algo_name(int32_t algo);
int32_t ct_algo_find(const char *name);

/* The tile configurations of this build by kind (CT_TC, CT_IG, CT_WG): index of a name (-1 if
 * unknown) and name of an index. */
typedef struct {
    int32_t (*find)(int32_t kind, const char *name);
    const char *(*name)(int32_t kind, int32_t cfg);
} ct_cfg_names;

/* Configuration key: N, C, H, W, F, C/groups, KH, KW, stride h w, dilation h w, padding t l b r,
 * workspace limit, matmul precision, fused add (0, else 1 + its activation), bias (0/1), activation. */
#define CT_KEY_LEN 21

typedef struct {
    char device[MM_DEVKEY_LEN];
    int32_t cudnn;              /* cudnnGetVersion() */
    int64_t key[CT_KEY_LEN];
    int32_t path;               /* the fastest measured: index in ct_path_names */
    int32_t algo;               /* cuDNN's fastest strict-FP32 algorithm */
    int64_t algo_ws;            /* its workspace bytes */
    int32_t cfg[CT_KINDS];      /* the implicit GEMMs' fastest tile configuration */
    int32_t split[CT_KINDS];    /* and split-K; 0 where the kind was not measured */
    float ms[CT_PATHS];         /* measured per path (ms); INFINITY where the path cannot run */
    int32_t fused;              /* cuDNN's fused bias/relu kept on the cuDNN path: 1, 0, or -1 not decided */
} ct_entry;

typedef struct ct_table ct_table;

ct_table *ct_table_new(const ct_cfg_names *names); /* names must outlive the table */
void ct_table_free(ct_table *t);
int32_t ct_table_size(const ct_table *t);
/* The entry of exactly (device, cudnn, key), copied into *e: 1, else 0. */
int ct_table_get(const ct_table *t, const char *device, int32_t cudnn, const int64_t *key, ct_entry *e);
/* Adds e, replacing an entry of the same device, cuDNN version and key. */
void ct_table_set(ct_table *t, const ct_entry *e);
/* Adds the entries of a file (later lines replace earlier ones of the same key). A missing file is
 * not an error when missing_ok. -1 with "PATH:LINE: reason" for a malformed file; nothing is added. */
int ct_table_load(ct_table *t, const char *path, int missing_ok, char *err, size_t errlen);
/* Writes every entry sorted by key (same entries, same bytes) through a temporary and a rename. */
int ct_table_save(const ct_table *t, const char *path, char *err, size_t errlen);
/* Under an exclusive lock on PATH.lock: loads the file (missing is fine), adds add's entries and
 * saves it. A malformed file is left alone: -1 with its message. */
int ct_table_update(const char *path, const ct_table *add, char *err, size_t errlen);

/* The cache of device devkey: the matmul cache's folder (TASC_CACHE_DIR, else
 * $HOME/.cache/tasc, else ./.tasc-cache) + "/conv-" + mm_devkey_file(devkey) + ".txt"; returns buf. */
const char *ct_cache_path(const char *devkey, char *buf, size_t len);
/* 1 when TASC_CONV_CACHE is "off" or "0": choices are measured in every process, none is written. */
int ct_cache_off(void);

#ifdef __cplusplus
}
#endif

#endif
