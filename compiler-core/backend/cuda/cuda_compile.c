/* The CUDA backend's pipeline: the NVPTX target machine for the SM of the
 * cuda-smNN target, the device module to PTX, the host module (PTX
 * embedded) to an x86-64 object that the artifact links into lib<name>.so
 * like a CPU artifact's.  Shared steps: linking embedded runtime bitcode,
 * internalising, optimising. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "compiler-core/backend/cuda/cuda_internal.h"
#include "compiler-core/backend/targets.h"

int cv_cuda_link_bitcode(LLVMModuleRef mod, const unsigned char *bc, size_t len,
                         const char *what, cv_diag *d)
{
    if (!bc || !len)
        return cv_diag_fail(d, CV_E_CUDA_RUNTIME_BITCODE, (cv_span){0}, "no %s bitcode in this "
                            "build", what);
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange((const char *)bc, len, what, 0);
    LLVMModuleRef rt = NULL;
    int bad = LLVMParseBitcodeInContext2(ctx, mb, &rt);
    LLVMDisposeMemoryBuffer(mb);
    if (bad)
        return cv_diag_fail(d, CV_E_CUDA_RUNTIME_BITCODE, (cv_span){0}, "the embedded %s bitcode "
                            "is unreadable", what);
    LLVMSetTarget(rt, LLVMGetTarget(mod));
    LLVMSetDataLayout(rt, LLVMGetDataLayoutStr(mod));
    if (LLVMLinkModules2(mod, rt))
        return cv_diag_fail(d, CV_E_CUDA_RUNTIME_BITCODE, (cv_span){0}, "linking the %s failed",
                            what);
    return 0;
}

static void set_string_attr(LLVMContextRef ctx, LLVMValueRef fn, const char *k, const char *v)
{
    LLVMRemoveStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, k, (unsigned)strlen(k));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v,
                                                      (unsigned)strlen(v)));
}

void cv_cuda_finalize(LLVMModuleRef mod, const char *cpu, const char *features,
                      bool (*keep)(const char *name, void *arg), void *arg)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn))
            continue;
        size_t len;
        const char *name = LLVMGetValueName2(fn, &len);
        if (!keep(name, arg))
            LLVMSetLinkage(fn, LLVMInternalLinkage);
        /* The runtime bitcode was compiled for a baseline CPU. */
        set_string_attr(ctx, fn, "target-cpu", cpu);
        set_string_attr(ctx, fn, "target-features", features);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(ctx, nounwind, 0));
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
        if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage)
            LLVMSetLinkage(g, LLVMInternalLinkage);
}

int cv_cuda_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt, cv_diag *d)
{
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        cv_diag_error(d, CV_E_INTERNAL_ERROR, (cv_span){0}, "internal error: generated LLVM IR is invalid: %s",
                      msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMDisposeMessage(msg);
    char passes[32];
    snprintf(passes, sizeof passes, "default<O%d>", opt < 0 ? 0 : opt > 3 ? 3 : opt);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, opt >= 2);
    LLVMErrorRef e = LLVMRunPasses(mod, passes, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
        char *m = LLVMGetErrorMessage(e);
        cv_diag_error(d, CV_E_INTERNAL_ERROR, (cv_span){0}, "LLVM optimisation failed: %s", m);
        LLVMDisposeErrorMessage(m);
        return -1;
    }
    return 0;
}

/* PTX: not position-independent code, the driver loads it. */
static LLVMTargetMachineRef nvptx_machine(const cv_target_desc *t, int opt, cv_diag *d)
{
    cv_llvm_machine_spec s = {t->name, t->triple, t->cpu, t->features, NULL, false};
    return cv_llvm_make_machine(&s, opt, d);
}

static void cuda_out_free(cv_llvm_out *o)
{
    free(o->ptx);
    o->ptx = NULL;
}

static int cuda_compile(const cv_kprog *p, const char *target, int opt, bool want_ir,
                        cv_llvm_out *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    const cv_target_desc *t = cv_target_find(target);
    int sm = 0;
    if (!t || strncmp(t->triple, "nvptx", 5) != 0 || sscanf(t->cpu, "sm_%d", &sm) != 1)
        return cv_diag_fail(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "'%s' is not a CUDA target", target);
    LLVMTargetMachineRef tm = nvptx_machine(t, opt, d);
    if (!tm)
        return -1;
    int rc = cv_cuda_device(p, tm, t->cpu, t->features, opt, &out->ptx, &out->ptx_len,
                            want_ir ? &out->ir : NULL, d);
    LLVMDisposeTargetMachine(tm);
    if (rc == 0)
        rc = cv_cuda_host(p, out->ptx, out->ptx_len, sm, opt, &out->obj, &out->obj_len, d);
    snprintf(out->triple, sizeof out->triple, "%s", t->triple);
    snprintf(out->cpu, sizeof out->cpu, "%s", t->cpu);
    out->linker = t->linker;
#if defined(__x86_64__)
    out->host = true;       /* the host library runs here; its create needs a GPU */
#endif
    if (rc) {
        free(out->obj);
        free(out->ir);
        out->obj = NULL;
        out->ir = NULL;
        cuda_out_free(out);
    }
    return rc;
}

/* The plugin's CUDA export (see cuda_backend.h). */
const cv_cuda_plugin cv_cuda_plugin_entry = {CV_CUDA_PLUGIN_ABI, cuda_compile, cuda_out_free};
