/* The LLVM backend's entry points (internal to compiler-core): a kernel
 * program in, an object file (and optionally LLVM IR text) out.
 *
 * The code behind them lives in a plugin, lib/cuvil/libcv_llvm.so, loaded
 * on the first compile (llvm_loader.c): loading libLLVM costs tens of
 * milliseconds at start-up, which commands that never generate code
 * (validate, cache hits, the farm's controller) must not pay. */
#ifndef CV_LLVM_BACKEND_H
#define CV_LLVM_BACKEND_H

#include "compiler-core/backend/kernel.h"
#include "compiler-core/cuvil.h"

typedef struct cv_llvm_out {
    unsigned char *obj;         /* malloc'd object file bytes */
    size_t obj_len;
    char *ir;                   /* malloc'd LLVM IR text (when asked), else NULL */
    char triple[64];
    char cpu[64];
    const char *linker;         /* C compiler driver that links for this target */
    bool host;                  /* the target runs on this machine */
    char *ptx;                  /* CUDA targets: malloc'd PTX text (NUL-terminated), else NULL */
    size_t ptx_len;
} cv_llvm_out;

/* Lowers p for target (-t name) at opt level 0-3, links the runtime,
 * optimises with the new pass manager and emits an object file.  The code
 * cache is asked before this runs (artifact.c), by the program's source. */
int cv_llvm_compile(const cv_kprog *p, const char *target, int opt, bool want_ir,
                    cv_llvm_out *out, cv_diag *d);
void cv_llvm_out_free(cv_llvm_out *o);
/* "19.1.7": the LLVM the plugin was built against (no plugin load). */
const char *cv_llvm_version(void);
/* This machine's triple, CPU name and feature string (*features malloc'd). */
int cv_llvm_describe_native(char triple[64], char cpu[64], char **features, cv_diag *d);

/* What the plugin exports, under the symbol CV_LLVM_PLUGIN_SYMBOL. */
typedef struct cv_llvm_plugin {
    int abi;    /* CV_LLVM_PLUGIN_ABI */
    int (*compile)(const cv_kprog *p, const char *target, int opt, bool want_ir,
                   cv_llvm_out *out, cv_diag *d);
    void (*out_free)(cv_llvm_out *o);
    const char *(*version)(void);
    int (*describe_native)(char triple[64], char cpu[64], char **features, cv_diag *d);
} cv_llvm_plugin;

#define CV_LLVM_PLUGIN_SYMBOL "cv_llvm_plugin_entry"
#define CV_LLVM_PLUGIN_ABI 3

#endif
