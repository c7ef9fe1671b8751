/* Internal to the CUDA backend: the device module (NVPTX: one PTX kernel
 * per KIR kernel that runs on the GPU, the device runtime linked in, PTX
 * out) and the host module (x86-64: the artifact's API, the launch
 * sequence, the kernels that run on the host, the host runtime). */
#ifndef CV_CUDA_INTERNAL_H
#define CV_CUDA_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "compiler-core/backend/cuda/cuda_backend.h"
#include "compiler-core/backend/llvm/llvm_internal.h"

/* A kernel runs on the host when it calls runtime routines: its loops only
 * compute addresses, and each call launches the routine's device kernel. */
static inline bool cv_cuda_on_host(const cv_kernel *k) { return k->calls_runtime; }

/* The loops of a GPU kernel that become items (cuda_collapse.c): loops[0]
 * is the body's only statement, loops[i+1] the only statement of
 * loops[i]'s body; returns how many (at most max).  The kernel runs
 * (extent, 1 if serial) * trip(loops[0]) * ... items. */
enum { CV_CUDA_MAX_COLLAPSE = 4 };
int cv_cuda_collapse(const cv_kernel *k, const cv_kstmt **loops, int max);
/* C when loop s is the kernel body's only statement, runs [a, b) with a and
 * b depending on p alone and b = min(., a + C): a block of at most C
 * iterations (an elementwise kernel's).  Collapsed, it counts C items per p
 * and an item at or past b does nothing; 0 for any other loop. */
int64_t cv_cuda_chunk(const cv_kernel *k, const cv_kstmt *s);

/* The embedded runtime bitcode ("device" or "host"; cuda/build.mk). */
const unsigned char *cv_cuda_rtbc_get(const char *which, size_t *len);

/* Links bitcode into mod (same target and data layout). */
int cv_cuda_link_bitcode(LLVMModuleRef mod, const unsigned char *bc, size_t len,
                         const char *what, cv_diag *d);
/* target-cpu and target-features on every defined function, nounwind;
 * definitions for which keep() is false become internal. */
void cv_cuda_finalize(LLVMModuleRef mod, const char *cpu, const char *features,
                      bool (*keep)(const char *name, void *arg), void *arg);
/* Verifies, then optimises at opt (default<On>). */
int cv_cuda_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt, cv_diag *d);

/* The device module for the SM in tm: PTX text (malloc'd, NUL-terminated)
 * and, when want_ir, the optimised module's IR (malloc'd). */
int cv_cuda_device(const cv_kprog *p, LLVMTargetMachineRef tm, const char *cpu,
                   const char *features, int opt, char **ptx, size_t *ptx_len, char **ir,
                   cv_diag *d);
/* The host module: an x86-64 object embedding ptx. */
int cv_cuda_host(const cv_kprog *p, const char *ptx, size_t ptx_len, int sm, int opt,
                 unsigned char **obj, size_t *obj_len, cv_diag *d);

#endif
