/* matmul_table.h: the tuning table of the tuned matmul kernel, and the device key it is keyed by.
 * Plain C without CUDA (matmul.h builds on it), so the table logic is testable on any machine
 * (tests/test_matmul_table.c).
 *
 * Device key: "NAME|cc MAJOR.MINOR|SMS SMs|MHZ MHz", e.g. "NVIDIA H200|cc 9.0|132 SMs|1980 MHz":
 * the device name, compute capability, SM count and maximum SM clock (cudaDevAttrClockRate, MHz)
 * of the GPU; two GPUs of one name that differ in any of them (another SKU, a clock-capped part)
 * do not share entries. A table line whose device field is a name without '|' (the format before
 * device keys) matches every device of that name, below an entry of the exact key.
 * Files of the runtime (matmul.h, mm_choose): the shipped tables, the user table, the per-device
 * cache; this header gives their paths and the locked read-merge-write of a cache file.
 * Entries are also keyed by precision (issue 17): fp32, or 3xtf32 (lines "EPILOGUE@3xtf32", whose
 * config may name a 3xTF32 kernel, "mma:NAME" or "wgmma:NAME"; the file format: matmul_table.c).
 */
#ifndef TASC_MATMUL_TABLE_H
#define TASC_MATMUL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Epilogues: an activation (mm_act: none, relu, gelu, silu, gelu_tanh, relu6, hardswish), alone
 * or after a bias ("bias", "bias_relu", ...). Indices: the first six are none, relu, gelu, bias,
 * bias_relu, bias_gelu (has_bias * 3 + act), as before the later activations were added; those
 * follow (6 + has_bias * 4 + act - 3). Tables key entries by the name. */
#define MM_EPI_ACTS 7
#define MM_EPI_COUNT (2 * MM_EPI_ACTS)
const char *mm_epi_name(int32_t epi);     /* "?" if out of range */
int32_t mm_epi_find(const char *name);    /* -1 if unknown */
int32_t mm_epi_index(int32_t has_bias, int32_t act);         /* -1 if act is not in 0..MM_EPI_ACTS-1 */
void mm_epi_split(int32_t epi, int32_t *has_bias, int32_t *act); /* epi in 0..MM_EPI_COUNT-1 */

/* The kernels a choice can name. Every entry of precision fp32 names the FP32 tuned kernel; one of
 * precision 3xtf32 (the FP32-accurate tensor-core mode) any of the three, since each is at least
 * as accurate as strict FP32: the mode runs whichever is fastest for the shape. */
typedef enum {
    MM_KERNEL_FP32,  /* the FP32 tuned kernel (warp-tiled SIMT): cfg indexes its configuration list */
    MM_KERNEL_MMA,   /* 3xTF32 on mma.sync (matmul_3xtf32.cu): cfg indexes its configurations */
    MM_KERNEL_WGMMA, /* 3xTF32 on wgmma with TMA (matmul_3xtf32_wgmma.cu, Hopper): cfg 0 128x128, 1 128x64 */
    MM_KERNEL_COUNT
} mm_kernel;

#define MM_TABLE_WGMMA_MAX_SPLIT 16

/* How one problem is run. */
typedef struct {
    int32_t cfg;      /* index into the configuration list of the kernel */
    int32_t split_k;  /* >= 1: k split over this many blocks, reduced in a fixed order (wgmma: at most
                         MM_TABLE_WGMMA_MAX_SPLIT, matmul.h's MM_WGMMA_MAX_SPLIT) */
    int32_t group_m;  /* >= 1: block rasterization group height (1 = row-major block order) */
    int32_t kernel;   /* mm_kernel; 0 (MM_KERNEL_FP32) where an initializer leaves it out */
} mm_choice;

/* Precisions of table entries (matmul.h's mm_precision, same numbers): a line's epilogue field
 * carries it as a suffix "@3xtf32"; no suffix (every line written before it existed) is fp32. */
#define MM_TABLE_PRECS 2
const char *mm_table_prec_name(int32_t prec); /* "fp32", "3xtf32"; "?" if out of range */

/* What an entry is keyed by besides the device. */
typedef struct {
    int64_t m, n, k, batch;
    int32_t epi;
    int32_t prec;     /* 0 fp32 (where an initializer leaves it out), 1 3xtf32 */
} mm_table_key;

#define MM_DEVKEY_LEN 192
/* The key of a device into buf (see above); returns buf. */
const char *mm_devkey_make(char *buf, size_t len, const char *name, int cc_major, int cc_minor, int sms, int mhz);
/* The key as a file name: characters other than letters, digits, '.', '-' become '_'; returns buf. */
const char *mm_devkey_file(const char *key, char *buf, size_t len);

/* The configuration lists, by name (the table names configurations, so a table from another build
 * fails loudly instead of silently picking another kernel). find and name: the FP32 kernel's;
 * find_tf and name_tf (NULL: none known, such lines are refused): the 3xTF32 kernels' (kind
 * MM_KERNEL_MMA or MM_KERNEL_WGMMA), written in tables as "mma:NAME" and "wgmma:NAME". */
typedef struct {
    int32_t (*find)(const char *name);                     /* index, or -1 if unknown */
    const char *(*name)(int32_t i, char *buf, size_t len); /* the name of index i */
    int32_t (*find_tf)(int32_t kind, const char *name);
    const char *(*name_tf)(int32_t kind, int32_t i, char *buf, size_t len);
} mm_cfg_names;
/* c's configuration as a table names it ("128x128x16_w..." FP32, "mma:...", "wgmma:128x64"); returns buf. */
const char *mm_choice_name_with(const mm_cfg_names *names, const mm_choice *c, char *buf, size_t len);

typedef struct mm_table mm_table; /* entries keyed by (device key or name, m, n, k, batch, epilogue, precision) */

mm_table *mm_table_new_names(const mm_cfg_names *names); /* names must outlive the table */
void mm_table_free(mm_table *t);
int32_t mm_table_size(const mm_table *t);
/* Adds the entries of a table file (later entries replace earlier ones with the same key).
 * A missing file is not an error when missing_ok (returns 0, nothing added). -1 with
 * "PATH:LINE: reason" for a malformed file; nothing is added then. */
int mm_table_load(mm_table *t, const char *path, int missing_ok, char *err, size_t errlen);
/* Writes all entries sorted by key (same entries, same bytes), creating the parent folder.
 * Written through a temporary and a rename (base_afile). */
int mm_table_save(const mm_table *t, const char *path, char *err, size_t errlen);
/* 1 and *c (and *us when not NULL) for the entry of exactly devkey, else of a name-only line of
 * devkey's name; 0 if neither. */
int mm_table_find(const mm_table *t, const char *devkey, const mm_table_key *k, mm_choice *c, double *us);
void mm_table_set(mm_table *t, const char *devkey, const mm_table_key *k, const mm_choice *c, double us);
/* Every entry of src into dst (replacing entries of the same key). */
void mm_table_merge(mm_table *dst, const mm_table *src);
/* The cache update: under an exclusive lock on PATH.lock (fcntl; concurrent processes wait), loads
 * the file at path (missing is fine), merges add into it and saves it (atomic rename). A malformed
 * file is left alone: -1 with its message. */
int mm_table_update(const char *path, const mm_table *add, char *err, size_t errlen);

/* The folder of the per-device caches: $TASC_CACHE_DIR, else $HOME/.cache/tasc, else .tasc-cache
 * (relative: no home to put it in); returns buf. */
const char *mm_cache_dir(char *buf, size_t len);
/* The per-device cache: $TASC_CACHE_DIR, else $HOME/.cache/tasc, else ./.tasc-cache, then
 * "/matmul-" + mm_devkey_file(key) + ".txt"; returns buf. */
const char *mm_table_cache_path(const char *devkey, char *buf, size_t len);
/* The user table of before device keys: $TASC_TUNE_TABLE, else $HOME/.cache/tasc/matmul_tune.txt
 * (empty string without HOME); returns buf. */
const char *mm_table_user_path(char *buf, size_t len);
/* The shipped tables: every matmul_tune*.txt in $TASC_TUNE_DIR, else in the repository's
 * bench/runtime (found from this source file's path at build time), sorted by name; at most max
 * paths of len bytes each into paths; returns the count. */
int mm_table_shipped(char (*paths)[4096], int max);
/* 1 when TASC_NO_AUTOTUNE is set to a value other than "" and "0": first-use tuning refused. */
int mm_autotune_refused(void);

#ifdef __cplusplus
}
#endif

#endif
