/* Debug info for `cuvil compile -g`, through LLVM's DIBuilder: a compile
 * unit per model source file, a subprogram per kernel named after the ops
 * it implements, and line entries that map each kernel's instructions to
 * its op's model line (for an ONNX model, to the op's line in the
 * generated <name>.cuir listing).  The run function's instructions carry
 * the line of the kernel each launches.
 *
 * Kernels are never inlined, with or without -g: each keeps its own code
 * range, which the symbol map records and `cuvil run --trace` reports.
 * Debug info adds only metadata (no variables, no intrinsics), so the code
 * generated is the same with and without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "compiler-core/backend/debug_internal.h"
#include "compiler-core/backend/llvm/llvm_internal.h"
#include "cv_version.h"

enum { MAX_UNITS = 16 };

typedef struct unit {
    const char *file;
    LLVMDIBuilderRef dib;
    LLVMMetadataRef difile, cu, fnty;
} unit;

typedef struct dbg {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    const cv_kprog *p;
    char listing[200];
    unit units[MAX_UNITS];
    int n_units;
    int *kline;                 /* by kernel: its line */
} dbg;

static unit *unit_for(dbg *g, const char *file)
{
    for (int i = 0; i < g->n_units; i++)
        if (strcmp(g->units[i].file, file) == 0)
            return &g->units[i];
    if (g->n_units == MAX_UNITS)
        return &g->units[0];
    unit *u = &g->units[g->n_units++];
    u->file = file;
    u->dib = LLVMCreateDIBuilder(g->mod);
    /* A relative directory: artifacts never hold the build machine's paths. */
    u->difile = LLVMDIBuilderCreateFile(u->dib, file, strlen(file), ".", 1);
    static const char producer[] = "cuvil " CV_VERSION;
    u->cu = LLVMDIBuilderCreateCompileUnit(u->dib, LLVMDWARFSourceLanguageC99, u->difile, producer,
                                           sizeof producer - 1, 1, "", 0, 0, "", 0,
                                           LLVMDWARFEmissionFull, 0, 0, 0, "", 0, "", 0);
    u->fnty = LLVMDIBuilderCreateSubroutineType(u->dib, u->difile, NULL, 0, LLVMDIFlagZero);
    return u;
}

static LLVMMetadataRef subprogram(unit *u, LLVMValueRef fn, const char *name, int line)
{
    size_t len;
    const char *linkage = LLVMGetValueName2(fn, &len);
    LLVMMetadataRef sp = LLVMDIBuilderCreateFunction(
        u->dib, u->difile, name, strlen(name), linkage, len, u->difile, (unsigned)line, u->fnty,
        LLVMGetLinkage(fn) == LLVMInternalLinkage, 1, (unsigned)line, LLVMDIFlagPrototyped, 1);
    LLVMSetSubprogram(fn, sp);
    return sp;
}

static void set_all_locs(dbg *g, LLVMValueRef fn, LLVMMetadataRef sp, int line, int col)
{
    LLVMMetadataRef loc = LLVMDIBuilderCreateDebugLocation(g->ctx, (unsigned)line, (unsigned)col,
                                                           sp, NULL);
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
        for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
            LLVMInstructionSetDebugLoc(i, loc);
}

/* "k2_conv2d_relu": the kernel's name, then the ops fused into it. */
static void kernel_title(const cv_kprog *p, const cv_kernel *k, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "%s", k->name);
    for (int j = 0; j < k->n_fused && at < size; j++)
        at += (size_t)snprintf(buf + at, size - at, "_%s", p->f->ops[k->fused[j]]->name);
}

static void kernel_debuginfo(dbg *g, int i)
{
    const cv_kernel *k = g->p->kernels[i];
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, k->name);
    const char *file;
    int line, col;
    /* An output copy runs where the model returns: after its last op. */
    cv_debug_op_line(g->p, k->op >= 0 ? k->op : g->p->f->n_ops - 1, g->listing, &file, &line,
                     &col);
    g->kline[i] = line;
    if (!fn || LLVMIsDeclaration(fn))
        return;
    char title[256];
    kernel_title(g->p, k, title, sizeof title);
    unit *u = unit_for(g, file);
    set_all_locs(g, fn, subprogram(u, fn, title, line), line, col);
}

/* The kernel a run-function instruction launches, or -1. */
static int launched_kernel(dbg *g, LLVMValueRef inst)
{
    if (!LLVMIsACallInst(inst))
        return -1;
    LLVMValueRef callee = LLVMGetCalledValue(inst), target = callee;
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    if (strcmp(name, "cvrt_launch") == 0 && LLVMGetNumArgOperands(inst) > 3)
        target = LLVMGetOperand(inst, 3);
    for (int k = 0; k < g->p->n_kernels; k++)
        if (target == LLVMGetNamedFunction(g->mod, g->p->kernels[k]->name))
            return k;
    return -1;
}

/* Each instruction gets the line of the next launch (what it prepares). */
static void run_debuginfo(dbg *g, unit *u, int line)
{
    char name[200];
    snprintf(name, sizeof name, "cv_%s_run", g->p->name);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn)
        return;
    LLVMMetadataRef sp = subprogram(u, fn, name, line);
    LLVMMetadataRef cur = LLVMDIBuilderCreateDebugLocation(g->ctx, (unsigned)line, 0, sp, NULL);
    for (LLVMBasicBlockRef b = LLVMGetLastBasicBlock(fn); b; b = LLVMGetPreviousBasicBlock(b))
        for (LLVMValueRef i = LLVMGetLastInstruction(b); i; i = LLVMGetPreviousInstruction(i)) {
            int k = launched_kernel(g, i);
            if (k >= 0)
                cur = LLVMDIBuilderCreateDebugLocation(g->ctx, (unsigned)g->kline[k], 0, sp, NULL);
            LLVMInstructionSetDebugLoc(i, cur);
        }
}

static void module_flags(dbg *g)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(g->ctx);
    LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                      LLVMValueAsMetadata(LLVMConstInt(i32, LLVMDebugMetadataVersion(), 0)));
    LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "Dwarf Version", 13,
                      LLVMValueAsMetadata(LLVMConstInt(i32, 4, 0)));
}

static void no_inline_kernels(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p)
{
    unsigned kind = LLVMGetEnumAttributeKindForName("noinline", 8);
    for (int i = 0; i < p->n_kernels; i++) {
        LLVMValueRef fn = LLVMGetNamedFunction(mod, p->kernels[i]->name);
        if (fn)
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(ctx, kind, 0));
    }
}

int cv_llvm_debuginfo(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p, cv_diag *d)
{
    no_inline_kernels(ctx, mod, p);
    if (!p->debug)
        return 0;
    dbg g = {.ctx = ctx, .mod = mod, .p = p};
    snprintf(g.listing, sizeof g.listing, "%s.cuir", p->name);
    int kline[1] = {0};
    g.kline = p->n_kernels ? calloc((size_t)p->n_kernels, sizeof *g.kline) : kline;
    if (!g.kline)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    module_flags(&g);
    for (int i = 0; i < p->n_kernels; i++)
        kernel_debuginfo(&g, i);
    const char *file;
    int line, col;
    cv_debug_op_line(p, p->n_kernels ? p->kernels[0]->op : -1, g.listing, &file, &line, &col);
    if (p->f->span.line > 0 && p->f->span.file && strcmp(p->f->span.file, file) == 0)
        line = p->f->span.line;
    run_debuginfo(&g, unit_for(&g, file), line);
    for (int i = 0; i < g.n_units; i++) {
        LLVMDIBuilderFinalize(g.units[i].dib);
        LLVMDisposeDIBuilder(g.units[i].dib);
    }
    if (g.kline != kline)
        free(g.kline);
    return 0;
}
