/* cmd_kernels.c: `tasc kernels` -- the hand-written GPU matmul kernels (list, bench, tune).
 * Without CUDA compiled in, it says so and exits with TASC_EXIT_RESOURCE. */
#include <stdio.h>

#include "cmd.h"

int cmd_kernels(int argc, char **argv) {
    if (cmd_wants_help(argc, argv)) {
        printf("usage: tasc kernels list|bench|tune [options]\n"
               "  GPU matmul kernel ladder; needs a build with CUDA and an NVIDIA GPU.\n");
        return TASC_EXIT_OK;
    }
    fprintf(stderr, "tasc kernels: this tasc was built without CUDA\n");
    return TASC_EXIT_RESOURCE;
}
