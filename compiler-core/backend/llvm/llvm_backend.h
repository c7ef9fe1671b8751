/* The LLVM backend's entry points (internal to compiler-core): a kernel
 * program in, an object file (and optionally LLVM IR text) out. */
#ifndef CV_LLVM_BACKEND_H
#define CV_LLVM_BACKEND_H

#include <llvm-c/Core.h>

#include "compiler-core/backend/kernel.h"

typedef struct cv_llvm_out {
    unsigned char *obj;         /* malloc'd object file bytes */
    size_t obj_len;
    char *ir;                   /* malloc'd LLVM IR text (when asked), else NULL */
    char triple[64];
    char cpu[64];
    const char *linker;         /* C compiler driver that links for this target */
    bool host;                  /* the target runs on this machine */
} cv_llvm_out;

/* Lowers p for target (-t name) at opt level 0-3, links the runtime,
 * optimises with the new pass manager and emits an object file. */
int cv_llvm_compile(const cv_kprog *p, const char *target, int opt, bool want_ir,
                    cv_llvm_out *out, cv_diag *d);
void cv_llvm_out_free(cv_llvm_out *o);
/* "19.1.7" */
const char *cv_llvm_version(void);

/* module.c: the whole artifact module into mod; quirks: CV_LLVM_SOFT_*
 * (llvm_internal.h). */
int cv_llvm_build_module(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p, unsigned quirks,
                         cv_diag *d);

#endif
