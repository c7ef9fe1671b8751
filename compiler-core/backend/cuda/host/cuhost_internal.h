/* Internal to the CUDA host runtime: the driver API it uses (declared
 * here: no CUDA headers on the build machine; the types and values are
 * the driver's stable ABI), the context, and error recording. */
#ifndef CVCU_HOST_INTERNAL_H
#define CVCU_HOST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "compiler-core/backend/cuda/host/cuhost.h"

typedef int CUresult;           /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

enum {
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_STREAM_NON_BLOCKING = 1,
    CU_ERROR_OUT_OF_MEMORY = 2,
};

/* Diagnostic codes (common/diag_codes.c). */
enum {
    CVCU_E_NO_DRIVER = 5060, CVCU_E_NO_DEVICE = 5061, CVCU_E_OLD_DEVICE = 5062,
    CVCU_E_DRIVER = 5063, CVCU_E_DEVICE_OOM = 5064,
};

/* The driver entry points, from dlsym (the _v2 names where the driver
 * versions them). */
typedef struct cvcu_driver {
    void *dl;
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cvcu_driver;

enum { CVCU_RT_KERNELS = 4, CVCU_MAX_IO = 64 };

struct cvcu_ctx {
    const cvcu_model *m;
    const cvcu_driver *drv;
    CUdevice dev;
    CUcontext cu;               /* the device's primary context (retained) */
    CUmodule mod;               /* owned */
    CUstream own_stream;        /* owned */
    CUstream stream;            /* where work goes now */
    CUfunction *kernels;        /* owned array: by program kernel, NULL for host ones */
    CUfunction rt_kernels[CVCU_RT_KERNELS];     /* looked up on first use */
    unsigned max_blocks;
    CUdeviceptr weights;        /* owned */
    CUdeviceptr buf;            /* owned: arena, then input and output staging */
    int64_t buf_cap;
    int err;                    /* first error of this run: a CVCU_E_* code, 0 none */
};

/* The driver, loaded once per process; NULL after recording why. */
const cvcu_driver *cvcu_driver_get(void);
/* Records a failure of this thread (code, printf-style message); returns
 * -3, or -2 for CVCU_E_DEVICE_OOM. */
int cvcu_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks a driver result: 0, or records "<what>: <error name>" and returns
 * nonzero.  Out-of-memory results are recorded as CVCU_E_DEVICE_OOM. */
int cvcu_check(const cvcu_driver *drv, CUresult r, const char *what);
/* Launches f over items [0, n) (n < 0: one thread) on ctx's stream unless
 * an earlier launch of this run failed; returns ctx->err. */
int cvcu_launch_fn(cvcu_ctx *ctx, CUfunction f, int64_t n, void **params, const char *what);

#endif
