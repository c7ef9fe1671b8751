/* The CUDA backend's entry point (internal to compiler-core): a kernel
 * program in, PTX for the target SM and an x86-64 host object out.
 *
 * The code lives in the LLVM plugin (lib/cuvil/libcv_llvm.so) next to the
 * CPU backend and is found there under CV_CUDA_PLUGIN_SYMBOL; llvm_loader.c
 * routes cv_llvm_compile for cuda-* targets to it.  See docs/architecture.md
 * ("CUDA artifacts") for what an artifact holds and how it runs. */
#ifndef CV_CUDA_BACKEND_H
#define CV_CUDA_BACKEND_H

#include "compiler-core/backend/llvm/llvm_backend.h"

typedef struct cv_cuda_plugin {
    int abi;    /* CV_CUDA_PLUGIN_ABI */
    /* Fills out->obj (host object, PTX embedded), out->ptx and, when
     * want_ir, out->ir (the device module's LLVM IR). */
    int (*compile)(const cv_kprog *p, const char *target, int opt, bool want_ir,
                   cv_llvm_out *out, cv_diag *d);
    /* Frees what compile added to a cv_llvm_out beyond the CPU backend's
     * fields (the PTX). */
    void (*out_free)(cv_llvm_out *o);
} cv_cuda_plugin;

#define CV_CUDA_PLUGIN_SYMBOL "cv_cuda_plugin_entry"
#define CV_CUDA_PLUGIN_ABI 1

#endif
