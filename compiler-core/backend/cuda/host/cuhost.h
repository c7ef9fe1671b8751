/* The host runtime of CUDA artifacts (compiler-core/backend/cuda/host/):
 * C compiled with clang-19 to x86-64 LLVM bitcode when cuvil is built,
 * embedded in the LLVM plugin and linked into each CUDA artifact's host
 * module, where its symbols are internalised (only cv_<name>_* stay
 * visible).
 *
 * It loads the NVIDIA driver with dlopen("libcuda.so.1") at create time
 * (no CUDA toolkit anywhere, no link-time dependency: on a machine without
 * a driver create returns NULL and cv_<name>_last_error says why), uses the
 * device's primary context, JIT-loads the artifact's PTX, uploads the
 * weights once and keeps one device buffer for the activation arena and
 * the staging copies of the inputs and outputs.
 *
 * The generated code describes the model in a constant cvcu_model and
 * supplies run_dev, which binds every storage to a device address and
 * launches the kernels in order through cvcu_launch; kernels that call a
 * runtime routine run on the host and reach the cvrt_* functions below,
 * which launch that routine's device kernel (dev/cudev_rt.c). */
#ifndef CVCU_HOST_H
#define CVCU_HOST_H

#include <stdint.h>

typedef struct cvcu_ctx cvcu_ctx;

/* Device addresses of one run, as run_dev reads them (7 pointers); syms
 * holds the symbols, then the derived dims. */
typedef struct cvcu_frame {
    void *const *din;           /* input i's device address */
    void *const *dout;
    const int64_t *syms;
    char *arena;
    char *weights;
    const int64_t *class_base;  /* byte offset of each arena size class */
    const int64_t *class_mono;  /* the value of each class's monomial */
} cvcu_frame;

/* Every integer is an int64_t, so the generated LLVM struct (pointers and
 * i64 only) has this layout without padding rules. */
typedef struct cvcu_model {
    const char *name;
    const char *ptx;            /* NUL-terminated PTX text */
    const unsigned char *weights;   /* every constant tensor, each at its offset */
    int64_t weights_len;
    int64_t sm;                 /* least compute capability, major*10+minor */
    int64_t n_kernels;
    const char *const *kernel_names;    /* by kernel index; NULL: runs on the host */
    int64_t n_inputs, n_outputs, n_syms;
    /* For each input, then each output: element size, rank, then rank dims
     * (>= 0, or -1 - k for symbol k; k >= n_syms: derived dim k - n_syms). */
    const int64_t *io;
    int64_t n_classes;
    /* For each arena size class: bytes per unit, degree, then degree symbols
     * (extended indices, as in io). */
    const int64_t *classes;
    void (*run_dev)(cvcu_ctx *ctx, const cvcu_frame *fr);
    /* Dims that are expressions of the symbols ((L + 1) floordiv 2): derive
     * fills ext[n_syms + j] from ext[0..n_syms); NULL when n_dsyms is 0. */
    int64_t n_dsyms;
    void (*derive)(int64_t *ext);
} cvcu_model;

/* Launches program kernel `kernel` over items [0, n) (n < 0: a serial
 * kernel, one thread) with parameters ptrs[0..n_ptrs), syms, n.  Errors are
 * kept in ctx (the first one wins) and reported when the run ends. */
void cvcu_launch(cvcu_ctx *ctx, int64_t kernel, int64_t n, void *const *ptrs, int64_t n_ptrs,
                 const int64_t *syms);

cvcu_ctx *cvcu_create(const cvcu_model *m);
void cvcu_destroy(cvcu_ctx *ctx);
/* 0, -1 for a negative dim, -2 when device memory runs out, -3 on a
 * driver error (see cvcu_last_error). */
int cvcu_reserve(cvcu_ctx *ctx, const int64_t *syms);
int cvcu_run(cvcu_ctx *ctx, const void *const *inputs, void *const *outputs,
             const int64_t *syms);
/* inputs and outputs are device addresses; the work is queued on stream
 * (a CUstream; NULL: the context's own) and not waited for. */
int cvcu_run_stream(cvcu_ctx *ctx, const void *const *inputs, void *const *outputs,
                    const int64_t *syms, void *stream);
int64_t cvcu_arena_bytes(const cvcu_model *m, const int64_t *syms);
/* The diagnostic code (CV50xx) of this thread's last failure and its
 * message; 0 when nothing failed. */
int cvcu_last_error(const char **msg);

#endif
