/* The device module: every KIR kernel that runs on the GPU becomes a PTX
 * kernel
 *   kN(ptr slot0, ..., ptr slotS-1, i64 sym0, ..., i64 symY-1, i64 n)
 * whose body runs once per item p in [0, n) in a grid-stride loop over
 * blockIdx/threadIdx (a serial kernel is launched on one thread with
 * n = 1).  Statements and expressions lower through the CPU backend's code
 * (backend/llvm/lower_*.c); the math it calls that NVPTX cannot lower
 * (llvm.exp/log/pow, tanh, erf, the trigonometric functions) is renamed to
 * the device runtime's (dev/cudev_math.c, dev/cudev_trig.c), which is
 * linked in with the runtime routines' kernels (dev/cudev_rt.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/cuda/cuda_internal.h"

enum { PTX_KERNEL_CC = 71 };    /* LLVM's CallingConv::PTX_Kernel */

static LLVMValueRef sreg(cv_llvm_fn *f, const char *name)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(f->ctx);
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(f->mod, id, NULL, 0);
    LLVMValueRef v = LLVMBuildCall2(f->b, LLVMFunctionType(i32, NULL, 0, 0), fn, NULL, 0, "");
    return LLVMBuildZExt(f->b, v, LLVMInt64TypeInContext(f->ctx), "");
}

/* max(hi - lo, 0) of a collapsed loop (uniform: lowered once, up front);
 * a block loop's (cv_cuda_chunk) is its constant bound. */
static LLVMValueRef trip(cv_llvm_fn *f, const cv_kstmt *loop, int64_t chunk)
{
    if (chunk)
        return LLVMConstInt(LLVMInt64TypeInContext(f->ctx), (unsigned long long)chunk, 0);
    cv_llvm_memo_reset(f);
    LLVMValueRef d = LLVMBuildSub(f->b, cv_llvm_expr(f, loop->b), cv_llvm_expr(f, loop->a), "");
    LLVMValueRef zero = LLVMConstInt(LLVMTypeOf(d), 0, 0);
    return LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, d, zero, ""), d, zero, "");
}

/* Item i of a kernel with collapsed loops: the innermost loop's variable
 * varies fastest (consecutive threads, consecutive elements), p slowest.
 * p is stored first: a block loop's bounds depend on it. */
static void split_item(cv_llvm_fn *f, LLVMValueRef item, const cv_kstmt **loops, int n_loops,
                       LLVMValueRef *trips)
{
    LLVMBuilderRef b = f->b;
    LLVMValueRef rem[CV_CUDA_MAX_COLLAPSE];
    for (int l = n_loops - 1; l >= 0; l--) {
        rem[l] = LLVMBuildURem(b, item, trips[l], "");
        item = LLVMBuildUDiv(b, item, trips[l], "");
    }
    LLVMBuildStore(b, item, f->var[f->k->pvar]);
    for (int l = 0; l < n_loops; l++) {
        cv_llvm_memo_reset(f);
        LLVMBuildStore(b, LLVMBuildAdd(b, cv_llvm_expr(f, loops[l]->a), rem[l], ""),
                       f->var[loops[l]->id]);
    }
}

/* for (it = ctaid*ntid + tid; it < n; it += nctaid*ntid) { p = it; body },
 * or with collapsed loops, it split into p and their variables, then the
 * innermost collapsed loop's body (for a block loop, when its variable is
 * below the loop's end). */
static void grid_loop(cv_llvm_fn *f, LLVMValueRef n)
{
    const cv_kstmt *loops[CV_CUDA_MAX_COLLAPSE];
    LLVMValueRef trips[CV_CUDA_MAX_COLLAPSE];
    int n_loops = cv_cuda_collapse(f->k, loops, CV_CUDA_MAX_COLLAPSE);
    int64_t chunk = n_loops ? cv_cuda_chunk(f->k, loops[0]) : 0;
    for (int l = 0; l < n_loops; l++)
        trips[l] = trip(f, loops[l], l == 0 ? chunk : 0);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(f->ctx);
    LLVMBuilderRef b = f->b;
    LLVMValueRef ntid = sreg(f, "llvm.nvvm.read.ptx.sreg.ntid.x");
    LLVMValueRef first = LLVMBuildAdd(b, LLVMBuildMul(b, sreg(f, "llvm.nvvm.read.ptx.sreg.ctaid.x"), ntid, ""),
                                      sreg(f, "llvm.nvvm.read.ptx.sreg.tid.x"), "");
    LLVMValueRef stride = LLVMBuildMul(b, sreg(f, "llvm.nvvm.read.ptx.sreg.nctaid.x"), ntid, "");
    LLVMValueRef it = cv_llvm_entry_alloca(f, i64, "it");
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "grid");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "item");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "next");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "done");
    LLVMBuildStore(b, first, it);
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef i = LLVMBuildLoad2(b, i64, it, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i, n, ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    if (n_loops) {
        split_item(f, i, loops, n_loops, trips);
        if (chunk) {
            LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "inblock");
            cv_llvm_memo_reset(f);
            LLVMValueRef v = LLVMBuildLoad2(b, i64, f->var[loops[0]->id], "");
            LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, v, cv_llvm_expr(f, loops[0]->b), ""),
                            in, next);
            LLVMPositionBuilderAtEnd(b, in);
        }
        cv_llvm_stmts(f, loops[n_loops - 1]->body);
    } else {
        LLVMBuildStore(b, i, f->var[f->k->pvar]);
        cv_llvm_stmts(f, f->k->body);
    }
    LLVMBuildBr(b, next);
    LLVMPositionBuilderAtEnd(b, next);
    LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, i64, it, ""), stride, ""), it);
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, done);
}

static int define_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p,
                         const cv_kernel *k)
{
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
    int np = k->n_slots + p->n_syms + 1;
    LLVMTypeRef *params = calloc((size_t)np, sizeof *params);
    LLVMValueRef *syms = calloc((size_t)(p->n_syms + p->n_dsyms) + 1, sizeof *syms);
    LLVMValueRef *vars = calloc((size_t)k->n_vars + 1, sizeof *vars);
    cv_llvm_fn f = {.ctx = ctx, .mod = mod, .prog = p, .k = k, .memo_cap = 1024};
    f.memo_key = calloc((size_t)f.memo_cap, sizeof *f.memo_key);
    f.memo_val = calloc((size_t)f.memo_cap, sizeof *f.memo_val);
    LLVMValueRef slots[CV_K_MAX_SLOTS];
    int rc = -1;
    if (params && syms && vars && f.memo_key && f.memo_val) {
        for (int i = 0; i < np; i++)
            params[i] = i < k->n_slots ? ptr : i64;
        f.fn = LLVMAddFunction(mod, k->name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params,
                                                               (unsigned)np, 0));
        LLVMSetFunctionCallConv(f.fn, PTX_KERNEL_CC);
        f.b = LLVMCreateBuilderInContext(ctx);
        f.entry = LLVMAppendBasicBlockInContext(ctx, f.fn, "entry");
        LLVMPositionBuilderAtEnd(f.b, f.entry);
        for (int i = 0; i < k->n_vars; i++)
            vars[i] = LLVMBuildAlloca(f.b, cv_llvm_kty(ctx, k->var_ty[i]), "");
        for (int i = 0; i < k->n_slots; i++)
            slots[i] = LLVMGetParam(f.fn, (unsigned)i);
        for (int i = 0; i < p->n_syms; i++)
            syms[i] = LLVMGetParam(f.fn, (unsigned)(k->n_slots + i));
        f.slot = slots;
        f.sym = syms;
        f.var = vars;
        /* Derived dims (extended indices) from the symbol parameters. */
        for (int j = 0; j < p->n_dsyms; j++)
            syms[p->n_syms + j] = cv_llvm_expr(&f, p->dsym_expr[j]);
        grid_loop(&f, LLVMGetParam(f.fn, (unsigned)(np - 1)));
        LLVMBuildRetVoid(f.b);
        LLVMDisposeBuilder(f.b);
        rc = 0;
    }
    free(params);
    free(syms);
    free(vars);
    free(f.memo_key);
    free(f.memo_val);
    return rc;
}

/* What the CPU lowering calls that NVPTX has no lowering for. */
static const char *const math_renames[][2] = {
    {"llvm.exp.f32", "cvd_expf"}, {"llvm.exp.f64", "cvd_exp"},
    {"llvm.log.f32", "cvd_logf"}, {"llvm.log.f64", "cvd_log"},
    {"llvm.pow.f32", "cvd_powf"}, {"llvm.pow.f64", "cvd_pow"},
};

/* libm functions the CPU lowering calls (name, and name "f" for float),
 * each defined by the device runtime as cvd_<name> (dev/cudev_math.c,
 * dev/cudev_trig.c). */
static const char *const libm_names[] = {
    "tanh", "erf", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh",
};

static void rename_fn(LLVMModuleRef mod, const char *from, const char *to)
{
    LLVMValueRef fn = LLVMGetNamedFunction(mod, from);
    /* Renaming an intrinsic's declaration makes its calls plain calls. */
    if (fn && LLVMIsDeclaration(fn))
        LLVMSetValueName2(fn, to, strlen(to));
}

static void rename_math(LLVMModuleRef mod)
{
    for (size_t i = 0; i < sizeof math_renames / sizeof math_renames[0]; i++)
        rename_fn(mod, math_renames[i][0], math_renames[i][1]);
    for (size_t i = 0; i < sizeof libm_names / sizeof libm_names[0]; i++)
        for (int single = 0; single < 2; single++) {
            char from[32], to[40];
            snprintf(from, sizeof from, "%s%s", libm_names[i], single ? "f" : "");
            snprintf(to, sizeof to, "cvd_%s", from);
            rename_fn(mod, from, to);
        }
}

/* Which runtime routines the host kernels call (their cvdk_* kernels stay). */
static void mark_calls(const cv_kstmt *s, bool *used)
{
    for (; s; s = s->next) {
        if (s->kind == CV_KS_CALL && s->id >= 0 && s->id < CV_KRT__COUNT)
            used[s->id] = true;
        mark_calls(s->body, used);
        mark_calls(s->orelse, used);
    }
}

typedef struct keep_set {
    const cv_kprog *p;
    bool used[CV_KRT__COUNT];
} keep_set;

/* The split-K helpers of the tiled products (dev/cudev_gemm.c) and the
 * channels-last convolutions' packing (dev/cudev_nhwc.c). */
static const char *const tile_helpers[] = {"cvdk_zero2", "cvdk_gemm_epi", "cvdk_conv_epi",
                                            "cvdk_nhwc_pack"};

static bool keep_kernel(const char *name, void *arg)
{
    keep_set *ks = arg;
    bool any = false;
    for (int r = 0; r < CV_KRT__COUNT; r++)
        any = any || ks->used[r];
    for (size_t i = 0; any && i < sizeof tile_helpers / sizeof tile_helpers[0]; i++)
        if (strcmp(name, tile_helpers[i]) == 0)
            return true;
    for (int i = 0; i < ks->p->n_kernels; i++)
        if (!cv_cuda_on_host(ks->p->kernels[i]) && strcmp(ks->p->kernels[i]->name, name) == 0)
            return true;
    for (int r = 0; r < CV_KRT__COUNT; r++) {
        const cv_krt_info *info = cv_krt_get((cv_krt)r);
        if (!info)
            continue;
        /* cvrt_sgemm's device kernels are cvdk_sgemm, the tiled cvdk_sgemm_t
         * and (convolutions) the batched *_b and *_bt and the tensor-core
         * *_tc, *_tc2 and channels-last *_nc, *_nc2. */
        static const char *const sfx[] = {"", "_t", "_b", "_bt", "_tc", "_tc2", "_nc", "_nc2"};
        size_t n = strlen(info->name + 5);
        for (size_t i = 0; ks->used[r] && i < sizeof sfx / sizeof sfx[0]; i++)
            if (strncmp(name, "cvdk_", 5) == 0 && strncmp(name + 5, info->name + 5, n) == 0 &&
                strcmp(name + 5 + n, sfx[i]) == 0)
                return true;
    }
    return false;
}

/* The tensor-core kernels run 256 threads a block (host/cuhost_rt.c);
 * capping their registers so that `ctas` blocks fit a multiprocessor hides
 * their gathers' latency better (ptxas: .maxntid, .minnctapersm; the
 * channels-last ones spill at most 24 bytes so).  host/cuhost_batch.c
 * splits K by the same counts. */
static void occupancy(LLVMModuleRef mod, LLVMValueRef fn, const char *name)
{
    static const struct {
        const char *name;
        int ctas;
    } caps[] = {{"cvdk_conv2d_p8h_tc", 3}, {"cvdk_conv2d_p8h_tc2", 2}, {"cvdk_conv2d_p8_tc", 2},
                {"cvdk_conv2d_tc", 2},      {"cvdk_conv2d_p8h_nc", 4},  {"cvdk_conv2d_p8h_nc2", 3},
                {"cvdk_conv2d_p8_nc", 3},   {"cvdk_conv2d_p8_nc2", 2}};
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        if (strcmp(name, caps[i].name) != 0)
            continue;
        static const char *const keys[] = {"maxntidx", "minctasm"};
        int vals[] = {256, caps[i].ctas};
        for (int j = 0; j < 2; j++) {
            LLVMMetadataRef md[] = {
                LLVMValueAsMetadata(fn), LLVMMDStringInContext2(ctx, keys[j], strlen(keys[j])),
                LLVMValueAsMetadata(LLVMConstInt(i32, (unsigned long long)vals[j], 0))};
            LLVMAddNamedMetadataOperand(mod, "nvvm.annotations",
                                        LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, md, 3)));
        }
    }
}

static void mark_rt_kernels(LLVMModuleRef mod, keep_set *ks)
{
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        size_t len;
        const char *name = LLVMGetValueName2(fn, &len);
        if (!LLVMIsDeclaration(fn) && strncmp(name, "cvdk_", 5) == 0 && keep_kernel(name, ks)) {
            LLVMSetFunctionCallConv(fn, PTX_KERNEL_CC);
            occupancy(mod, fn, name);
        }
    }
}

/* NVPTX numbers call sequences in comments ("{ // callseq 12, 0") from a
 * counter that lives as long as the process; dropping the comments keeps
 * two compiles in one process (a worker) byte-identical. */
static size_t drop_callseq_comments(char *s, size_t len)
{
    static const char tag[] = " // callseq ";
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        if (s[i] == ' ' && len - i >= sizeof tag - 1 && memcmp(s + i, tag, sizeof tag - 1) == 0) {
            while (i < len && s[i] != '\n')
                i++;
            continue;
        }
        s[out++] = s[i++];
    }
    s[out] = 0;
    return out;
}

static int emit_ptx(LLVMModuleRef mod, LLVMTargetMachineRef tm, char **ptx, size_t *len,
                    cv_diag *d)
{
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
        cv_diag_error(d, CV_E_CUDA_CODEGEN_FAILED, (cv_span){0}, "NVPTX code generation failed: %s",
                      err ? err : "(no message)");
        LLVMDisposeMessage(err);
        return -1;
    }
    *len = LLVMGetBufferSize(buf);
    *ptx = malloc(*len + 1);
    if (*ptx) {
        memcpy(*ptx, LLVMGetBufferStart(buf), *len);
        (*ptx)[*len] = 0;
    }
    LLVMDisposeMemoryBuffer(buf);
    if (!*ptx)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    *len = drop_callseq_comments(*ptx, *len);
    /* The driver's JIT cannot resolve a function the module only declares. */
    const char *ext = strstr(*ptx, ".extern .func");
    if (ext) {
        const char *eol = strchr(ext, '\n');
        cv_diag_error(d, CV_E_CUDA_CODEGEN_FAILED, (cv_span){0}, "the PTX calls a function no "
                      "device code defines: %.*s", (int)(eol ? eol - ext : 80), ext);
        return -1;
    }
    return 0;
}

int cv_cuda_device(const cv_kprog *p, LLVMTargetMachineRef tm, const char *cpu,
                   const char *features, int opt, char **ptx, size_t *ptx_len, char **ir,
                   cv_diag *d)
{
    *ptx = NULL;
    if (ir)
        *ir = NULL;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(p->name, ctx);
    LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(mod, dl);
    LLVMDisposeMessage(dl);
    LLVMDisposeTargetData(td);
    keep_set ks = {.p = p};
    int rc = 0;
    for (int i = 0; rc == 0 && i < p->n_kernels; i++) {
        const cv_kernel *k = p->kernels[i];
        if (cv_cuda_on_host(k))
            mark_calls(k->body, ks.used);
        else if (define_kernel(ctx, mod, p, k))
            rc = cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    size_t bc_len;
    const unsigned char *bc = cv_cuda_rtbc_get("device", &bc_len);
    if (rc == 0) {
        rename_math(mod);
        rc = cv_cuda_link_bitcode(mod, bc, bc_len, "device runtime", d);
    }
    if (rc == 0) {
        mark_rt_kernels(mod, &ks);
        cv_cuda_finalize(mod, cpu, features, keep_kernel, &ks);
        rc = cv_cuda_optimize(mod, tm, opt, d);
    }
    if (rc == 0)
        rc = emit_ptx(mod, tm, ptx, ptx_len, d);
    if (rc == 0 && ir) {
        char *s = LLVMPrintModuleToString(mod);
        *ir = strdup(s);
        LLVMDisposeMessage(s);
        if (!*ir)
            rc = cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    if (rc) {
        free(*ptx);
        *ptx = NULL;
    }
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return rc;
}
