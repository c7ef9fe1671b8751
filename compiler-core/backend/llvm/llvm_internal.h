/* Internal to the LLVM backend: lowering kernel IR to LLVM IR with the
 * LLVM 19 C API, target machines, runtime linking and object emission. */
#ifndef CV_LLVM_INTERNAL_H
#define CV_LLVM_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "compiler-core/backend/kernel.h"

/* A target Cuvil compiles for (the -t names). */
typedef struct cv_llvm_target {
    const char *name;           /* "x86_64-avx2" */
    char triple[64];
    char cpu[64];
    char *features;             /* owned (malloc'd) */
    const char *rt_variant;     /* runtime bitcode variant */
    const char *abi;            /* target-abi module flag, or NULL */
    const char *linker;         /* the C compiler driver that links .so files */
    bool host;                  /* runs on this machine */
} cv_llvm_target;

/* Resolves a -t name ("native" asks LLVM about this machine). */
int cv_llvm_target_lookup(const char *name, cv_llvm_target *t, cv_diag *d);
void cv_llvm_target_free(cv_llvm_target *t);
int cv_llvm_plugin_describe_native(char triple[64], char cpu[64], char **features, cv_diag *d);
/* A target machine for t at opt level 0-3 (PIC: artifacts are shared objects). */
LLVMTargetMachineRef cv_llvm_target_machine(const cv_llvm_target *t, int opt, cv_diag *d);

/* The LLVM set-up the CPU and CUDA backends share: every target Cuvil
 * names (X86, AArch64, RISC-V, NVPTX) registered once, and a target
 * machine made from a description (CV_E_UNKNOWN_TARGET into d when LLVM
 * has none). */
void cv_llvm_init_targets(void);
typedef struct cv_llvm_machine_spec {
    const char *name, *triple, *cpu, *features;
    const char *abi;    /* or NULL */
    bool pic;           /* position-independent code (shared objects) */
} cv_llvm_machine_spec;
LLVMTargetMachineRef cv_llvm_make_machine(const cv_llvm_machine_spec *t, int opt, cv_diag *d);

/* Lowering state for one function being generated. */
typedef struct cv_llvm_fn {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMBasicBlockRef entry;
    const cv_kprog *prog;
    const cv_kernel *k;         /* NULL in the run function */
    LLVMValueRef rt;            /* the runtime context */
    LLVMValueRef *slot;         /* kernel: buffer pointers by slot */
    LLVMValueRef *sym;          /* symbol values */
    LLVMValueRef *var;          /* allocas by variable id */
    LLVMValueRef *store_ptr;    /* run function: pointer of each storage (lazily) */
    LLVMValueRef (*store_ptr_fn)(struct cv_llvm_fn *f, int store);
    LLVMValueRef *kernel_fns;   /* by kernel index */
    LLVMValueRef bufs;          /* run function: the launch argument array */
    void *user;                 /* for store_ptr_fn */
    unsigned quirks;            /* CV_LLVM_SOFT_* for this target */
    /* Per-statement memo of lowered expressions (a DAG stays a DAG). */
    const cv_kexpr **memo_key;
    LLVMValueRef *memo_val;
    int memo_cap;
} cv_llvm_fn;

/* Target quirks the lowering works around. */
enum {
    CV_LLVM_SOFT_HALF = 1u << 0,    /* no half conversions in libgcc: call the runtime's */
    CV_LLVM_SOFT_ROUND = 1u << 1,   /* roundeven by the 2^23 trick (qemu 7.2 mis-decodes
                                       RVV code that switches the rounding mode) */
};

LLVMTypeRef cv_llvm_kty(LLVMContextRef ctx, cv_kty t);
LLVMValueRef cv_llvm_expr(cv_llvm_fn *f, const cv_kexpr *e);
void cv_llvm_memo_reset(cv_llvm_fn *f);
/* Emits a statement list at the builder's position. */
void cv_llvm_stmts(cv_llvm_fn *f, const cv_kstmt *s);
/* Converts a compute value to a tensor element of dtype dt (and back). */
LLVMValueRef cv_llvm_to_storage(cv_llvm_fn *f, LLVMValueRef v, cv_dtype dt);
/* The declaration of a named function (added on first use). */
/* f32 exp and erf as vectorizable arithmetic (lower_math.c). */
LLVMValueRef cv_llvm_expf(cv_llvm_fn *f, LLVMValueRef x);
LLVMValueRef cv_llvm_erff(cv_llvm_fn *f, LLVMValueRef x);
LLVMValueRef cv_llvm_declare(cv_llvm_fn *f, const char *name, LLVMTypeRef ret,
                             LLVMTypeRef *params, int n);
LLVMValueRef cv_llvm_call(cv_llvm_fn *f, const char *name, LLVMTypeRef ret,
                          LLVMTypeRef *params, LLVMValueRef *args, int n);
/* An alloca in the function's entry block. */
LLVMValueRef cv_llvm_entry_alloca(cv_llvm_fn *f, LLVMTypeRef t, const char *name);
/* Defines kernel k as an internal function of the module. */
LLVMValueRef cv_llvm_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p,
                            const cv_kernel *k, unsigned quirks);

/* debuginfo.c: marks the kernels noinline and, for a debug build
 * (p->debug), attaches DWARF line info that maps them to the model. */
int cv_llvm_debuginfo(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p, cv_diag *d);

/* What cv_<name>_create checks before anything else: the x86 features its
 * code needs ("avx2,fma,..."; empty elsewhere) and the -t name. */
typedef struct cv_llvm_cpu_check {
    char requires[1024];
    const char *target;
} cv_llvm_cpu_check;
/* module.c: the whole artifact module into mod; quirks: CV_LLVM_SOFT_*;
 * cpu: the create check and last_error (NULL: neither, the CUDA host). */
int cv_llvm_build_module(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p, unsigned quirks,
                         const cv_llvm_cpu_check *cpu, cv_diag *d);

#endif
