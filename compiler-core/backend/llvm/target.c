/* Targets: the -t names, their triples, CPUs and features, and LLVM target
 * machines for them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Target.h>

#include "compiler-core/backend/llvm/llvm_internal.h"
#include "compiler-core/backend/targets.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_llvm(void)
{
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
    LLVMInitializeAArch64AsmParser();
    LLVMInitializeRISCVTargetInfo();
    LLVMInitializeRISCVTarget();
    LLVMInitializeRISCVTargetMC();
    LLVMInitializeRISCVAsmPrinter();
    LLVMInitializeRISCVAsmParser();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

void cv_llvm_init_targets(void)
{
    pthread_once(&init_once, init_llvm);
}

static bool has_feature(const char *features, const char *f)
{
    size_t n = strlen(f);
    for (const char *p = features; (p = strstr(p, f)) != NULL; p += n)
        if ((p == features || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

static int lookup_native(cv_llvm_target *t, cv_diag *d)
{
    char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName();
    char *features = LLVMGetHostCPUFeatures();
    snprintf(t->triple, sizeof t->triple, "%s", triple);
    snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
    t->features = strdup(features ? features : "");
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    t->linker = "cc";
    t->host = true;
    if (strncmp(t->triple, "x86_64", 6) == 0) {
        t->rt_variant = has_feature(t->features, "+avx512f") ? "x86_64_avx512"
                      : has_feature(t->features, "+avx2") && has_feature(t->features, "+fma")
                          ? "x86_64_avx2" : "x86_64";
    } else if (strncmp(t->triple, "aarch64", 7) == 0) {
        t->rt_variant = "aarch64";
    } else if (strncmp(t->triple, "riscv64", 7) == 0) {
        t->rt_variant = "riscv64";
        t->abi = "lp64d";
    } else {
        return cv_diag_fail(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "native: this machine (%s) is not a "
                            "target Cuvil generates code for", t->triple);
    }
    return t->features ? 0 : -1;
}

static bool host_is(const char *triple)
{
    char *host = LLVMGetDefaultTargetTriple();
    bool same = strncmp(host, triple, strcspn(triple, "-")) == 0;
    LLVMDisposeMessage(host);
    return same;
}

int cv_llvm_target_lookup(const char *name, cv_llvm_target *t, cv_diag *d)
{
    cv_llvm_init_targets();
    memset(t, 0, sizeof *t);
    if (strcmp(name, "native") == 0) {
        t->name = "native";
        return lookup_native(t, d);
    }
    const cv_target_desc *g = cv_target_find(name);
    if (g) {
        t->name = g->name;
        snprintf(t->triple, sizeof t->triple, "%s", g->triple);
        snprintf(t->cpu, sizeof t->cpu, "%s", g->cpu);
        t->features = strdup(g->features);
        t->rt_variant = g->rt_variant;
        t->abi = g->abi;
        t->linker = g->linker;
        t->host = host_is(g->triple);
        return t->features ? 0 : -1;
    }
    int id = cv_diag_error(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "unknown target '%s'", name);
    char list[512];
    cv_diag_note(d, id, "known targets: %s", cv_target_names(list, sizeof list));
    return -1;
}

/* For the plugin table: "native" without building a target machine. */
int cv_llvm_plugin_describe_native(char triple[64], char cpu[64], char **features, cv_diag *d)
{
    cv_llvm_target t;
    if (cv_llvm_target_lookup("native", &t, d)) {
        cv_llvm_target_free(&t);
        return -1;
    }
    snprintf(triple, 64, "%s", t.triple);
    snprintf(cpu, 64, "%s", t.cpu);
    *features = t.features;  /* handed over */
    return 0;
}

void cv_llvm_target_free(cv_llvm_target *t)
{
    free(t->features);
    t->features = NULL;
}

LLVMTargetMachineRef cv_llvm_target_machine(const cv_llvm_target *t, int opt, cv_diag *d)
{
    cv_llvm_machine_spec s = {t->name, t->triple, t->cpu, t->features, t->abi, true};
    return cv_llvm_make_machine(&s, opt, d);
}

LLVMTargetMachineRef cv_llvm_make_machine(const cv_llvm_machine_spec *t, int opt, cv_diag *d)
{
    cv_llvm_init_targets();
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(t->triple, &target, &err)) {
        cv_diag_error(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "LLVM has no target for %s: %s", t->triple,
                      err ? err : "?");
        LLVMDisposeMessage(err);
        return NULL;
    }
    static const LLVMCodeGenOptLevel levels[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
                                                 LLVMCodeGenLevelDefault,
                                                 LLVMCodeGenLevelAggressive};
    LLVMTargetMachineOptionsRef o = LLVMCreateTargetMachineOptions();
    LLVMTargetMachineOptionsSetCPU(o, t->cpu);
    LLVMTargetMachineOptionsSetFeatures(o, t->features);
    if (t->abi)
        LLVMTargetMachineOptionsSetABI(o, t->abi);
    LLVMTargetMachineOptionsSetCodeGenOptLevel(o, levels[opt < 0 ? 0 : opt > 3 ? 3 : opt]);
    if (t->pic)
        LLVMTargetMachineOptionsSetRelocMode(o, LLVMRelocPIC);
    LLVMTargetMachineRef tm = LLVMCreateTargetMachineWithOptions(target, t->triple, o);
    LLVMDisposeTargetMachineOptions(o);
    if (!tm)
        cv_diag_error(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "LLVM cannot make a target machine for %s (%s)",
                      t->name, t->cpu);
    return tm;
}
