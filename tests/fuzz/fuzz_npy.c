/* fuzz_npy.c: libFuzzer harness for the .npy reader (npy_read, src/runtime/npy.c).
 *
 * npy_read takes a path, so each input is written to a scratch file first (under $TMPDIR, one per
 * process). Any bytes must give an array or one error line, never a crash or undefined behaviour;
 * an array that is read is written back (npy_write, float32) and must read again to the same
 * shape and bits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "fuzz_util.h"

static char fuzz_in[512], fuzz_out[512];

static void fuzz_paths(void) {
    if (fuzz_in[0])
        return;
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0])
        dir = "/tmp";
    snprintf(fuzz_in, sizeof fuzz_in, "%s/tasc_fuzz_npy_%ld_in.npy", dir, (long)getpid());
    snprintf(fuzz_out, sizeof fuzz_out, "%s/tasc_fuzz_npy_%ld_out.npy", dir, (long)getpid());
}

static void fuzz_cleanup(void) {
    if (fuzz_in[0]) {
        unlink(fuzz_in);
        unlink(fuzz_out);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fuzz_paths();
    atexit(fuzz_cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_paths();
    FILE *f = fopen(fuzz_in, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        fuzz_fail("cannot write the scratch file", fuzz_in);
    char err[4096];
    err[0] = '\0';
    ops_shape s;
    float *v = npy_read(fuzz_in, &s, err, sizeof err);
    if (!v) {
        fuzz_check_message(err);
        return 0;
    }
    if (npy_write(fuzz_out, &s, v, err, sizeof err) < 0)
        fuzz_fail("an array that was read cannot be written", err);
    ops_shape s2;
    float *w = npy_read(fuzz_out, &s2, err, sizeof err);
    if (!w)
        fuzz_fail("a written array does not read again", err);
    int64_t n = ops_shape_numel(&s);
    if (!ops_shape_eq(&s, &s2) || (n > 0 && memcmp(v, w, (size_t)n * sizeof *v)))
        fuzz_fail("the npy round trip changed the array", fuzz_out);
    free(w);
    free(v);
    return 0;
}
