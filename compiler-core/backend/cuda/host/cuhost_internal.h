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
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_STREAM_NON_BLOCKING = 1,
    CU_ERROR_OUT_OF_MEMORY = 2,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_STATUS_NONE = 0,
};

/* Diagnostic codes (common/diag_codes.h; numbers here: this runtime is
 * built without common/). */
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
    /* Optional (graph replay, cuhost_graph.c): all NULL where the driver
     * lacks one of them. */
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*StreamIsCapturing)(CUstream, int *);
    CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
} cvcu_driver;

enum {
    CVCU_MAX_IO = 64,
    CVCU_MAX_SYMS = 128,    /* symbols and derived dims (the compiler allows 64 each) */
    CVCU_TILE_THREADS = 256,        /* a tiled kernel's block, one per tile */
    CVCU_TILE_MAX_INDEX = 1 << 30,  /* bound of the tiled kernels' 32-bit index math */
    CVCU_PACKS = 2,                 /* channels-last inputs kept (cuhost_batch.c) */
    CVCU_GRAPH_KEY_MAX = 2 * CVCU_MAX_IO + 160 + 1 + CVCU_PACKS,  /* io, syms, buf, packs */
};

/* The runtime routines' device kernels: one thread per output
 * (dev/cudev_rt.c), tiled (dev/cudev_gemm.c, one block per 64 x 64 output
 * tile), batched depthwise; names in cuhost_rt.c. */
enum {
    CVCU_RT_SGEMM, CVCU_RT_CONV2D, CVCU_RT_CONV2D_P8, CVCU_RT_DWCONV2D, CVCU_RT_SGEMM_T,
    CVCU_RT_CONV2D_T, CVCU_RT_CONV2D_P8_T, CVCU_RT_DWCONV2D_B,
    CVCU_RT_ZERO2, CVCU_RT_GEMM_EPI, CVCU_RT_CONV_EPI,     /* split K */
    CVCU_RT_CONV2D_TC, CVCU_RT_CONV2D_P8_TC,                /* _T on the tensor cores */
    CVCU_RT_SGEMM_H, CVCU_RT_SGEMM_H_T,                     /* 16-bit weights (-p fp16/bf16) */
    CVCU_RT_CONV2D_P8H, CVCU_RT_CONV2D_P8H_T, CVCU_RT_CONV2D_P8H_TC,
    CVCU_RT_DWCONV2D_BT,                                    /* _B in 32-bit index math */
    CVCU_RT_CONV2D_P8H_TC2,                                 /* _P8H_TC, 128 x 64 tiles */
    CVCU_RT_NHWC_PACK, CVCU_RT_CONV2D_P8_NC, CVCU_RT_CONV2D_P8_NC2,   /* channels-last */
    CVCU_RT_CONV2D_P8H_NC, CVCU_RT_CONV2D_P8H_NC2,
    CVCU_RT_KERNELS
};

/* A convolution routine call (cvrt_conv2d, _p8, cvrt_dwconv2d) as the host
 * runtime keeps it until it launches (host/cuhost_batch.c). */
typedef struct cvcu_conv {
    int kernel;                 /* index into the runtime kernel names */
    const float *x, *bias, *res;
    const void *w;              /* f32, or 16 bits of kind wkind (CONV2D_P8H_T) */
    float *y, *scratch;
    int64_t wkind;
    int64_t C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, act;
    float lo, hi;
    int64_t items_per_image;    /* launch items of one image */
} cvcu_conv;

/* A convolution input packed channels-last (cuhost_batch.c): the buffer
 * and, until something may have written x, whose copy it holds. */
typedef struct cvcu_packed {
    CUdeviceptr buf;            /* owned */
    int64_t cap;                /* bytes */
    const float *x;             /* NULL: nothing valid */
    int64_t C, HW, cp, batch, dx, mode;
    uint64_t used;              /* the pack clock when last used */
} cvcu_packed;

/* Calls merged into one launch: images batch.x + b*dx ... for b < n. */
typedef struct cvcu_pending {
    cvcu_conv call;             /* the first image's */
    int64_t n, dx, dy;          /* n = 0: nothing pending */
} cvcu_pending;

/* A run recorded as a CUDA graph (cuhost_graph.c): a run's launches
 * depend only on the device addresses and sizes in its key. */
typedef struct cvcu_graph {
    int on;                     /* 0: off (CUVIL_CUDA_GRAPH=0, no driver support, a
                                   capture failed) */
    int64_t key_len;            /* 0: no run to compare with */
    uint64_t key[CVCU_GRAPH_KEY_MAX];   /* the last run's, taken after it */
    CUgraphExec exec;           /* owned: that run, once captured; NULL none */
} cvcu_graph;

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
    int naive;                  /* CUVIL_CUDA_NAIVE=1: one thread per output, no tiles */
    int64_t tc_passes;          /* dense convolutions on the tensor cores: 3 (3xTF32, the
                                   default), 1 (CUVIL_CUDA_TC=tf32), 0 (CUVIL_CUDA_TC=0) */
    int nhwc;                   /* channels-last tensor-core convolutions: 1 where they pay
                                   (default), 2 always (CUVIL_CUDA_NHWC=1), 0 never (=0) */
    cvcu_packed pack[CVCU_PACKS];   /* their packed inputs, least recently used replaced */
    uint64_t pack_clock;
    int pack_keep;              /* launches leave the packed inputs valid (cuhost_batch.c) */
    cvcu_pending pending;       /* convolutions not launched yet */
    cvcu_graph graph;           /* the last runs replayed as a CUDA graph */
};

/* The driver, loaded once per process; NULL after recording why. */
const cvcu_driver *cvcu_driver_get(void);
/* Records a failure of this thread (code, printf-style message); returns
 * -3, or -2 for CVCU_E_DEVICE_OOM. */
int cvcu_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks a driver result: 0, or records "<what>: <error name>" and returns
 * nonzero.  Out-of-memory results are recorded as CVCU_E_DEVICE_OOM. */
int cvcu_check(const cvcu_driver *drv, CUresult r, const char *what);
/* Sets this thread's last failure back (code 0: none); cuhost_graph.c
 * keeps a failed capture's errors out of it. */
void cvcu_error_restore(int code, const char *msg);
/* Binds the frame and launches the run's kernels on stream (cuhost.c). */
int cvcu_exec_direct(cvcu_ctx *ctx, void *const *din, void *const *dout, const int64_t *syms,
                     CUstream stream);
/* The same, replayed as a CUDA graph where it can be (cuhost_graph.c). */
int cvcu_exec(cvcu_ctx *ctx, void *const *din, void *const *dout, const int64_t *syms,
              CUstream stream);
/* Graph replay on unless CUVIL_CUDA_GRAPH=0 or the driver lacks it; at
 * create. */
void cvcu_graph_init(cvcu_ctx *ctx);
/* Frees the captured graph (the context is current). */
void cvcu_graph_free(cvcu_ctx *ctx);
/* Launches f over items [0, n) (n < 0: one thread) on ctx's stream unless
 * an earlier launch of this run failed; returns ctx->err. */
int cvcu_launch_fn(cvcu_ctx *ctx, CUfunction f, int64_t n, void **params, const char *what);
/* Launches runtime kernel `which` (looked up on first use); cuhost_rt.c. */
void cvcu_launch_rt(cvcu_ctx *ctx, int which, int64_t n, void **params);
/* A convolution call: merged with the pending ones when it is the next
 * image of the same layer, else they are launched first. */
void cvcu_conv_submit(cvcu_ctx *ctx, const cvcu_conv *c);
/* Launches what is pending; every other launch and the end of a run call it. */
void cvcu_flush(cvcu_ctx *ctx);
/* Forgets what the packed inputs hold: a launch may have written their
 * sources (every launch but a dense convolution's own does this). */
void cvcu_pack_forget(cvcu_ctx *ctx);
/* At a run's start: its inputs are new, and it picks the packed inputs'
 * buffers in the order every run does, so that a run captured as a graph
 * regrows none (cuhost_graph.c). */
void cvcu_pack_new_run(cvcu_ctx *ctx);
/* How many K chunks a tiled product of `blocks` output tiles (all images)
 * with inner dimension K is split into: 1 unless the tiles alone leave most
 * multiprocessors idle and K is long. */
int64_t cvcu_split_k(const cvcu_ctx *ctx, int64_t blocks, int64_t K);
/* The same for a batch (or the channels-last kernels) on a tensor-core
 * kernel of which per_sm blocks fit a multiprocessor: as few partial waves
 * of blocks as pays. */
int64_t cvcu_split_waves(const cvcu_ctx *ctx, int64_t blocks, int64_t K, int per_sm);
/* The launch items (CVCU_TILE_THREADS per block) that give an M x N
 * product one block per 64 x 64 tile (cvcu_tile_items2: 128 x 64). */
int64_t cvcu_tile_items(int64_t M, int64_t N);
int64_t cvcu_tile_items2(int64_t M, int64_t N);

#endif
