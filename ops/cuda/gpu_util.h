/* gpu_util.h: checks for CUDA and cuBLAS calls (the second error tier of STYLE.md: a failed
 * external call aborts with the library's own message, file and line).
 *
 * CUDA_CHECK(call)     any cudaError_t-returning runtime call
 * CUBLAS_CHECK(call)   any cublasStatus_t-returning call (include cublas_v2.h first)
 * CUDA_LAUNCH_CHECK()  after every kernel launch: the launch's own error (bad configuration,
 *                      too much shared memory); asynchronous faults surface at the next sync.
 * Usable from C and CUDA C++.
 */
#ifndef TASC_GPU_UTIL_H
#define TASC_GPU_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#define CUDA_CHECK(call) do { \
    cudaError_t _e = (call); \
    if (_e != cudaSuccess) { \
        fprintf(stderr, "%s:%d: CUDA error: %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                cudaGetErrorString(_e), cudaGetErrorName(_e)); \
        abort(); \
    } \
} while (0)

#define CUDA_LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

#ifdef CUBLAS_V2_H_
#define CUBLAS_CHECK(call) do { \
    cublasStatus_t _s = (call); \
    if (_s != CUBLAS_STATUS_SUCCESS) { \
        fprintf(stderr, "%s:%d: cuBLAS error: %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                cublasGetStatusString(_s), cublasGetStatusName(_s)); \
        abort(); \
    } \
} while (0)
#endif

#endif
