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

/* How one problem is run by the tuned kernel. */
typedef struct {
    int32_t cfg;      /* index into the configuration list */
    int32_t split_k;  /* >= 1: k split over this many blocks, reduced in a fixed order */
    int32_t group_m;  /* >= 1: block rasterization group height (1 = row-major block order) */
} mm_choice;

/* What an entry is keyed by besides the device. */
typedef struct {
    int64_t m, n, k, batch;
    int32_t epi;
} mm_table_key;

#define MM_DEVKEY_LEN 192
/* The key of a device into buf (see above); returns buf. */
const char *mm_devkey_make(char *buf, size_t len, const char *name, int cc_major, int cc_minor, int sms, int mhz);
/* The key as a file name: characters other than letters, digits, '.', '-' become '_'; returns buf. */
const char *mm_devkey_file(const char *key, char *buf, size_t len);

/* The configuration list, by name (the table names configurations, so a table from another build
 * fails loudly instead of silently picking another kernel). */
typedef struct {
    int32_t (*find)(const char *name);                     /* index, or -1 if unknown */
    const char *(*name)(int32_t i, char *buf, size_t len); /* the name of index i */
} mm_cfg_names;

typedef struct mm_table mm_table; /* entries keyed by (device key or name, m, n, k, batch, epilogue) */

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
