/* The LLVM pipeline: module, runtime bitcode linked in and internalised,
 * target attributes on every function, verification, the new pass manager
 * at O0-O3, object emission. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "compiler-core/backend/llvm/llvm_backend.h"
#include "compiler-core/backend/llvm/llvm_internal.h"
#include "compiler-core/backend/llvm/rtbc.h"
#include "compiler-core/cuvil.h"

static const char *plugin_version(void)
{
    static char v[32];
    unsigned maj, min, patch;
    LLVMGetVersion(&maj, &min, &patch);
    snprintf(v, sizeof v, "%u.%u.%u", maj, min, patch);
    return v;
}

static int llvm_error(cv_diag *d, int code, const char *what, char *msg)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", msg ? msg : "(no message)");
    cv_diag_error(d, code, (cv_span){0}, "%s: %s", what, buf);
    return -1;
}

/* The runtime is read lazily and its definitions are made linkonce_odr, so
 * the linker materialises only what the kernels reach: a small model links
 * a few functions of the thread pool, not every GEMM and convolution, and
 * the optimiser never sees the rest (a third of the LLVM time of a small
 * compile went to parsing, linking and early passes over dead code). */
static void make_linkonce(LLVMModuleRef rt)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(rt); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage)
            LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
    for (LLVMValueRef g = LLVMGetFirstGlobal(rt); g; g = LLVMGetNextGlobal(g))
        if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage)
            LLVMSetLinkage(g, LLVMLinkOnceODRLinkage);
}

static int link_runtime(LLVMContextRef ctx, LLVMModuleRef mod, const cv_llvm_target *t,
                        cv_diag *d)
{
    size_t n;
    const unsigned char *bc = cv_rtbc_get(t->rt_variant, &n);
    if (!bc || !n)
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){0}, "no runtime bitcode for %s", t->rt_variant);
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange((const char *)bc, n, "cvrt", 0);
    LLVMModuleRef rt = NULL;
    /* On success the lazy module owns mb (it reads bodies from it later). */
    if (LLVMGetBitcodeModuleInContext2(ctx, mb, &rt))
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){0}, "the embedded runtime bitcode is unreadable");
    make_linkonce(rt);
    LLVMSetTarget(rt, LLVMGetTarget(mod));
    LLVMSetDataLayout(rt, LLVMGetDataLayoutStr(mod));
    if (LLVMLinkModules2(mod, rt))
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){0}, "linking the runtime failed");
    return 0;
}

static void set_string_attr(LLVMContextRef ctx, LLVMValueRef fn, const char *k, const char *v)
{
    LLVMRemoveStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, k, (unsigned)strlen(k));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v,
                                                      (unsigned)strlen(v)));
}

/* Whether the comma-separated list names feature f (f[0..n), with its sign). */
static bool has_feature(const char *list, const char *f, size_t n)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, f, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

static const char *features_of(LLVMValueRef fn, unsigned *len)
{
    LLVMAttributeRef a = LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                                       "target-features", 15);
    *len = 0;
    return a ? LLVMGetStringAttributeValue(a, len) : NULL;
}

/* The runtime's baseline: the feature list most of its functions carry
 * (clang wrote the variant's -march into each).  The few functions that
 * asked for more (`__attribute__((target("amx-tile")))`) differ from it by
 * exactly what they asked for.  Returns a malloc'd copy, or NULL. */
static char *runtime_baseline(LLVMModuleRef mod)
{
    enum { MAX_KINDS = 16 };
    const char *kind[MAX_KINDS];
    unsigned klen[MAX_KINDS], count[MAX_KINDS] = {0};
    int kinds = 0, best = -1;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        unsigned n;
        const char *f = LLVMIsDeclaration(fn) ? NULL : features_of(fn, &n);
        if (!f)
            continue;
        int k = 0;
        while (k < kinds && !(klen[k] == n && memcmp(kind[k], f, n) == 0))
            k++;
        if (k == kinds && kinds == MAX_KINDS)
            continue;
        if (k == kinds)
            kind[k] = f, klen[k] = n, kinds++;
        if (++count[k] > (best < 0 ? 0 : count[best]))
            best = k;
    }
    return best < 0 ? NULL : strndup(kind[best], klen[best]);
}

/* The target's features on every function, plus those a runtime function
 * asked for beyond the runtime's baseline (`__attribute__((target(...)))`):
 * they run only behind the runtime's own cpuid checks, so the target need
 * not have them, but without them LLVM cannot select their instructions (a
 * native compile on an AVX-512 host without AMX died with "Cannot select:
 * intrinsic %llvm.x86.ldtilecfg").  The baseline itself is replaced by the
 * target's list, as before: adding clang's RISC-V -march list to the
 * target's made code that qemu's rv64 refused (SIGILL). */
static void set_features(LLVMContextRef ctx, LLVMValueRef fn, const char *target,
                         const char *baseline)
{
    unsigned own_len;
    const char *own = features_of(fn, &own_len);
    size_t tlen = strlen(target);
    char *merged = malloc(tlen + own_len + 2);
    if (!merged) {
        set_string_attr(ctx, fn, "target-features", target);
        return;
    }
    memcpy(merged, target, tlen + 1);
    size_t len = tlen;
    for (unsigned i = 0; i < own_len;) {
        unsigned j = i;
        while (j < own_len && own[j] != ',')
            j++;
        if (own[i] == '+' && j - i > 1 && !(baseline && has_feature(baseline, own + i, j - i)) &&
            !has_feature(merged, own + i, j - i)) {
            if (len)
                merged[len++] = ',';
            memcpy(merged + len, own + i, j - i);
            len += j - i;
            merged[len] = 0;
        }
        i = j + 1;
    }
    set_string_attr(ctx, fn, "target-features", merged);
    free(merged);
}

/* Only the cv_<name>_* API stays visible; everything else (kernels, the
 * runtime) becomes internal, so artifacts never clash in one process. */
static void finalize(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p,
                     const cv_llvm_target *t)
{
    char prefix[160];
    snprintf(prefix, sizeof prefix, "cv_%s_", p->name);
    size_t plen = strlen(prefix);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    char *baseline = runtime_baseline(mod);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn))
            continue;
        size_t len;
        const char *name = LLVMGetValueName2(fn, &len);
        if (len < plen || strncmp(name, prefix, plen) != 0)
            LLVMSetLinkage(fn, LLVMInternalLinkage);
        set_string_attr(ctx, fn, "target-cpu", t->cpu);
        set_features(ctx, fn, t->features, baseline);
        /* x86 tuning prefers 256-bit vectors; the AVX-512 micro-kernel and
         * loops are written for 512. */
        if (strcmp(t->rt_variant, "x86_64_avx512") == 0)
            set_string_attr(ctx, fn, "prefer-vector-width", "512");
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(ctx, nounwind, 0));
    }
    free(baseline);
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
        if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage)
            LLVMSetLinkage(g, LLVMInternalLinkage);
}

static int optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt, cv_diag *d)
{
    char passes[32];
    snprintf(passes, sizeof passes, "default<O%d>", opt);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(po, opt >= 2);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, opt >= 2);
    LLVMErrorRef e = LLVMRunPasses(mod, passes, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
        char *msg = LLVMGetErrorMessage(e);
        llvm_error(d, CV_E_INTERNAL_ERROR, "LLVM optimisation failed", msg);
        LLVMDisposeErrorMessage(msg);
        return -1;
    }
    return 0;
}

static int setup_module(LLVMContextRef ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm,
                        const cv_llvm_target *t)
{
    LLVMSetTarget(mod, t->triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(mod, dl);
    LLVMDisposeMessage(dl);
    LLVMDisposeTargetData(td);
    if (t->abi) {
        LLVMMetadataRef v = LLVMMDStringInContext2(ctx, t->abi, strlen(t->abi));
        LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorError, "target-abi", 10, v);
    }
    return 0;
}

static int emit(LLVMModuleRef mod, LLVMTargetMachineRef tm, bool want_ir, cv_llvm_out *out,
                cv_diag *d)
{
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &buf)) {
        llvm_error(d, CV_E_LLVM_CODEGEN_FAILED, "LLVM code generation failed", err);
        LLVMDisposeMessage(err);
        return -1;
    }
    out->obj_len = LLVMGetBufferSize(buf);
    out->obj = malloc(out->obj_len ? out->obj_len : 1);
    if (out->obj)
        memcpy(out->obj, LLVMGetBufferStart(buf), out->obj_len);
    LLVMDisposeMemoryBuffer(buf);
    if (want_ir) {
        char *s = LLVMPrintModuleToString(mod);
        out->ir = strdup(s);
        LLVMDisposeMessage(s);
    }
    if (!out->obj || (want_ir && !out->ir))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    return 0;
}

static int pipeline(LLVMContextRef ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm,
                    const cv_kprog *p, const cv_llvm_target *t, int opt, bool want_ir,
                    cv_llvm_out *out, cv_diag *d)
{
    /* Half conversions would be libcalls that Debian's libgcc 12 lacks. */
    bool riscv = strcmp(t->rt_variant, "riscv64") == 0;
    unsigned quirks = (riscv || strcmp(t->rt_variant, "x86_64") == 0 ? CV_LLVM_SOFT_HALF : 0) |
                      (riscv ? CV_LLVM_SOFT_ROUND : 0);
    cv_llvm_cpu_check cpu = {.target = t->name};
    bool x86 = strncmp(t->rt_variant, "x86_64", 6) == 0;
    const char *req[64];
    int n = x86 ? cv_cpu_required(t->cpu, t->features, req, 64) : 0;
    for (int i = 0, at = 0; i < n && at < (int)sizeof cpu.requires; i++)
        at += snprintf(cpu.requires + at, sizeof cpu.requires - (size_t)at, "%s%s", i ? "," : "",
                       req[i]);
    if (setup_module(ctx, mod, tm, t) ||
        cv_llvm_build_module(ctx, mod, p, quirks, strcmp(t->rt_variant, "cuda") ? &cpu : NULL, d) ||
        link_runtime(ctx, mod, t, d) || cv_llvm_debuginfo(ctx, mod, p, d))
        return -1;
    finalize(ctx, mod, p, t);
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        llvm_error(d, CV_E_INTERNAL_ERROR, "internal error: generated LLVM IR is invalid", msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMDisposeMessage(msg);
    return optimize(mod, tm, opt, d) || emit(mod, tm, want_ir, out, d) ? -1 : 0;
}

static void plugin_out_free(cv_llvm_out *o);

static int plugin_compile(const cv_kprog *p, const char *target, int opt, bool want_ir,
                          cv_llvm_out *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    cv_llvm_target t;
    if (cv_llvm_target_lookup(target, &t, d))
        return -1;
    LLVMTargetMachineRef tm = cv_llvm_target_machine(&t, opt, d);
    if (!tm) {
        cv_llvm_target_free(&t);
        return -1;
    }
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(p->name, ctx);
    LLVMSetSourceFileName(mod, p->name, strlen(p->name));
    int rc = pipeline(ctx, mod, tm, p, &t, opt, want_ir, out, d);
    snprintf(out->triple, sizeof out->triple, "%s", t.triple);
    snprintf(out->cpu, sizeof out->cpu, "%s", t.cpu);
    out->linker = t.linker;
    out->host = t.host;
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    cv_llvm_target_free(&t);
    if (rc)
        plugin_out_free(out);
    return rc;
}

static void plugin_out_free(cv_llvm_out *o)
{
    free(o->obj);
    free(o->ir);
    o->obj = NULL;
    o->ir = NULL;
}

/* The plugin's one export (see llvm_backend.h). */
const cv_llvm_plugin cv_llvm_plugin_entry = {
    CV_LLVM_PLUGIN_ABI, plugin_compile, plugin_out_free, plugin_version,
    cv_llvm_plugin_describe_native,
};
