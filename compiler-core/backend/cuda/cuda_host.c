/* The host module of a CUDA artifact (x86-64): the PTX and the weights as
 * constants, the model descriptor the host runtime reads (host/cuhost.h),
 * run_dev (every storage bound to its device address, then the kernels in
 * order: a GPU kernel through cvcu_launch, a kernel that calls runtime
 * routines called in place; it runs on the host and its routine calls
 * launch device kernels), and the exported API
 *   cv_<name>_create/reserve/run/run_stream/destroy/arena_bytes/last_error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/cuda/cuda_internal.h"
#include "compiler-core/backend/kernel_internal.h"

enum { WEIGHT_ALIGN = 256 };

typedef struct hostgen {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    const cv_kprog *p;
    LLVMTypeRef ptr, i64, i32, vd;
    int64_t *const_off;         /* by storage: offset in the weights blob, -1 none */
    int64_t weights_len;        /* the blob's size */
    LLVMValueRef model;         /* the cvcu_model constant */
    LLVMValueRef frame[7];      /* run_dev: the cvcu_frame fields */
} hostgen;

/* ---- what the backend can place ------------------------------------------- */

static const bool routine_ok[CV_KRT__COUNT] = {
    [CV_KRT_SGEMM] = true, [CV_KRT_CONV2D] = true, [CV_KRT_CONV2D_P8] = true,
    [CV_KRT_DWCONV2D] = true, [CV_KRT_SGEMM_H] = true, [CV_KRT_CONV2D_P8H] = true,
};

static bool expr_reads(const cv_kexpr *e, int depth)
{
    if (!e || depth > 64)
        return false;
    return e->kind == CV_KE_LOAD || expr_reads(e->a, depth + 1) || expr_reads(e->b, depth + 1) ||
           expr_reads(e->c, depth + 1);
}

/* A host kernel may compute addresses and call routines, never touch
 * tensor elements (they live on the device). */
static int check_host_stmts(const cv_kernel *k, const cv_kstmt *s, cv_diag *d)
{
    for (; s; s = s->next) {
        bool bad = s->kind == CV_KS_STORE || expr_reads(s->a, 0) || expr_reads(s->b, 0);
        for (int i = 0; i < s->n_args; i++)
            bad = bad || expr_reads(s->args[i], 0);
        if (bad)
            return cv_diag_fail(d, CV_E_CUDA_HOST_KERNEL, (cv_span){0}, "kernel %s calls a "
                                "runtime routine and also reads or writes tensor elements; the "
                                "CUDA backend cannot place it", k->name);
        if (s->kind == CV_KS_CALL && (s->id < 0 || s->id >= CV_KRT__COUNT || !routine_ok[s->id]))
            return cv_diag_fail(d, CV_E_CUDA_NO_DEVICE_ROUTINE, (cv_span){0}, "kernel %s calls %s, which "
                                "has no CUDA device kernel yet", k->name,
                                cv_krt_get((cv_krt)s->id) ? cv_krt_get((cv_krt)s->id)->name : "?");
        if (check_host_stmts(k, s->body, d) || check_host_stmts(k, s->orelse, d))
            return -1;
    }
    return 0;
}

/* ---- constants ---------------------------------------------------------------- */

static LLVMValueRef add_const(hostgen *g, const char *name, LLVMValueRef init)
{
    LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    return gv;
}

static LLVMValueRef i64_array(hostgen *g, const char *name, const int64_t *v, int n)
{
    LLVMValueRef *c = calloc((size_t)n + 1, sizeof *c);
    if (!c)
        return NULL;
    for (int i = 0; i < n; i++)
        c[i] = LLVMConstInt(g->i64, (unsigned long long)v[i], 1);
    LLVMValueRef gv = add_const(g, name, LLVMConstArray2(g->i64, c, (uint64_t)n));
    free(c);
    return gv;
}

static LLVMValueRef cstring(hostgen *g, const char *name, const char *s, size_t len)
{
    return add_const(g, name, LLVMConstStringInContext2(g->ctx, s, len, 0));
}

/* Places every constant tensor the program uses at a WEIGHT_ALIGN offset
 * of the weights blob (g->const_off, g->weights_len).  Runs before run_dev
 * is generated: its pointers are these offsets. */
static void layout_weights(hostgen *g)
{
    const cv_kprog *p = g->p;
    int64_t at = 0;
    for (int i = 0; i < p->n_stores; i++) {
        const cv_kstore *s = &p->stores[i];
        g->const_off[i] = -1;
        if (s->kind == CV_KST_CONST && s->first >= 0) {
            g->const_off[i] = at;
            at += ((int64_t)s->nbytes + WEIGHT_ALIGN - 1) / WEIGHT_ALIGN * WEIGHT_ALIGN;
        }
    }
    g->weights_len = at;
}

/* The weights blob, laid out by layout_weights. */
static LLVMValueRef weights(hostgen *g, int64_t *len)
{
    const cv_kprog *p = g->p;
    int64_t at = g->weights_len;
    char *blob = calloc((size_t)at + 1, 1);
    if (!blob)
        return NULL;
    for (int i = 0; i < p->n_stores; i++)
        if (g->const_off[i] >= 0 && p->stores[i].data)
            memcpy(blob + g->const_off[i], p->stores[i].data, p->stores[i].nbytes);
    LLVMValueRef gv = add_const(g, "cv_weights", LLVMConstStringInContext2(g->ctx, blob, (size_t)at, 1));
    LLVMSetAlignment(gv, 64);
    free(blob);
    *len = at;
    return gv;
}

/* cvcu_model.io: element size, rank, dims (-1 - k for symbol k, extended
 * indices: derived dims after the symbols).  -1 full, -2 a dim that is an
 * expression no kernel lowered. */
static int io_table(const cv_kprog *p, int64_t *out, int max)
{
    int n = 0;
    const cv_func *f = p->f;
    for (int i = 0; i < f->n_inputs + f->n_returns; i++) {
        const cv_value *v = i < f->n_inputs ? f->inputs[i] : f->returns[i - f->n_inputs];
        const cv_shape *s = &v->type.shape;
        if (n + 2 + s->rank > max)
            return -1;
        out[n++] = (int64_t)cv_dtype_size(v->type.dtype);
        out[n++] = s->rank;
        for (int k = 0; k < s->rank; k++) {
            int64_t dim = s->d[k].n;
            for (int y = 0; s->d[k].sym && y < p->n_syms; y++)
                if (strcmp(p->sym_names[y], s->d[k].sym) == 0)
                    dim = -1 - y;
            if (s->d[k].sym && dim >= 0) {    /* an expression: a derived dim */
                int j = cv_kp_dsym_find(p, s->d[k]);
                if (j < 0)
                    return -2;
                dim = -1 - j;
            }
            out[n++] = dim;
        }
    }
    return n;
}

static int class_table(const cv_kprog *p, int64_t *out, int max)
{
    int n = 0;
    for (int c = 0; c < p->n_classes; c++) {
        const cv_kclass *k = &p->classes[c];
        if (n + 2 + k->degree > max)
            return -1;
        out[n++] = k->units;
        out[n++] = k->degree;
        for (int i = 0; i < k->degree; i++)
            out[n++] = k->syms[i];
    }
    return n;
}

/* ---- run_dev ---------------------------------------------------------------- */

enum { FR_DIN, FR_DOUT, FR_SYMS, FR_ARENA, FR_WEIGHTS, FR_CLASS_BASE, FR_CLASS_MONO };

static LLVMValueRef load_at(LLVMBuilderRef b, LLVMTypeRef t, LLVMValueRef base, int64_t i)
{
    LLVMValueRef idx = LLVMConstInt(LLVMInt64TypeInContext(LLVMGetTypeContext(t)),
                                    (unsigned long long)i, 0);
    return LLVMBuildLoad2(b, t, LLVMBuildGEP2(b, t, base, &idx, 1, ""), "");
}

static LLVMValueRef byte_gep(cv_llvm_fn *f, LLVMValueRef base, LLVMValueRef off)
{
    return LLVMBuildGEP2(f->b, LLVMInt8TypeInContext(f->ctx), base, &off, 1, "");
}

static LLVMValueRef store_ptr(cv_llvm_fn *f, int id)
{
    if (f->store_ptr[id])
        return f->store_ptr[id];
    hostgen *g = f->user;
    const cv_kstore *s = &f->prog->stores[id];
    LLVMValueRef v = NULL;
    switch (s->kind) {
    case CV_KST_INPUT: v = load_at(f->b, g->ptr, g->frame[FR_DIN], s->index); break;
    case CV_KST_OUTPUT: v = load_at(f->b, g->ptr, g->frame[FR_DOUT], s->index); break;
    case CV_KST_CONST:
        v = byte_gep(f, g->frame[FR_WEIGHTS], LLVMConstInt(g->i64, (unsigned long long)g->const_off[id], 0));
        break;
    case CV_KST_ARENA: {
        LLVMValueRef base = load_at(f->b, g->i64, g->frame[FR_CLASS_BASE], s->cls);
        LLVMValueRef mono = load_at(f->b, g->i64, g->frame[FR_CLASS_MONO], s->cls);
        LLVMValueRef off = LLVMBuildMul(f->b, LLVMConstInt(g->i64, (unsigned long long)s->offset, 0), mono, "");
        v = byte_gep(f, g->frame[FR_ARENA], LLVMBuildAdd(f->b, base, off, ""));
        break;
    }
    case CV_KST_VIEW:
        v = byte_gep(f, store_ptr(f, s->base),
                     s->byte_offset ? cv_llvm_expr(f, s->byte_offset) : LLVMConstInt(g->i64, 0, 0));
        break;
    }
    f->store_ptr[id] = v;
    return v;
}

/* A GPU kernel's item count: its extent (-1: serial, one thread) times the
 * trip counts of the loops it collapses (cuda_collapse.c). */
static LLVMValueRef launch_items(cv_llvm_fn *f, const cv_kstmt *s, const cv_kernel *k)
{
    hostgen *g = f->user;
    const cv_kstmt *loops[CV_CUDA_MAX_COLLAPSE];
    int n_loops = cv_cuda_collapse(k, loops, CV_CUDA_MAX_COLLAPSE);
    if (!n_loops)
        return s->a ? cv_llvm_expr(f, s->a) : LLVMConstInt(g->i64, (unsigned long long)-1, 1);
    LLVMValueRef n = s->a ? cv_llvm_expr(f, s->a) : LLVMConstInt(g->i64, 1, 0);
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0);
    int64_t chunk = cv_cuda_chunk(k, loops[0]);
    if (chunk)   /* a block loop: chunk items per p */
        return LLVMBuildMul(f->b, n, LLVMConstInt(g->i64, (unsigned long long)chunk, 0), "");
    for (int l = 0; l < n_loops; l++) {
        LLVMValueRef d = LLVMBuildSub(f->b, cv_llvm_expr(f, loops[l]->b), cv_llvm_expr(f, loops[l]->a), "");
        d = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, d, zero, ""), d, zero, "");
        n = LLVMBuildMul(f->b, n, d, "");
    }
    return n;
}

static void emit_launch(cv_llvm_fn *f, const cv_kstmt *s, LLVMValueRef *host_fns)
{
    hostgen *g = f->user;
    const cv_kernel *k = f->prog->kernels[s->id];
    for (int i = 0; i < s->n_args; i++) {
        LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)i, 0);
        LLVMBuildStore(f->b, store_ptr(f, s->args[i]->id), LLVMBuildGEP2(f->b, g->ptr, f->bufs, &idx, 1, ""));
    }
    LLVMValueRef syms = g->frame[FR_SYMS];
    if (cv_cuda_on_host(k)) {
        LLVMValueRef fn = host_fns[s->id];
        LLVMValueRef args[5] = {f->rt, f->bufs, syms, LLVMConstInt(g->i64, 0, 0),
                                s->a ? cv_llvm_expr(f, s->a) : LLVMConstInt(g->i64, 1, 0)};
        LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 5, "");
        return;
    }
    LLVMTypeRef params[6] = {g->ptr, g->i64, g->i64, g->ptr, g->i64, g->ptr};
    LLVMValueRef args[6] = {f->rt, LLVMConstInt(g->i64, (unsigned long long)s->id, 0),
                            launch_items(f, s, k), f->bufs,
                            LLVMConstInt(g->i64, (unsigned long long)s->n_args, 0), syms};
    cv_llvm_call(f, "cvcu_launch", g->vd, params, args, 6);
}

static int max_slots(const cv_kprog *p)
{
    int m = 1;
    for (int i = 0; i < p->n_kernels; i++)
        if (p->kernels[i]->n_slots > m)
            m = p->kernels[i]->n_slots;
    return m;
}

/* void run_dev(cvcu_ctx *ctx, const cvcu_frame *fr) */
static LLVMValueRef define_run_dev(hostgen *g, LLVMValueRef *host_fns)
{
    const cv_kprog *p = g->p;
    LLVMTypeRef params[2] = {g->ptr, g->ptr};
    LLVMValueRef fn = LLVMAddFunction(g->mod, "cv_run_dev", LLVMFunctionType(g->vd, params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cv_llvm_fn f = {.ctx = g->ctx, .mod = g->mod, .fn = fn, .prog = p, .rt = LLVMGetParam(fn, 0),
                    .store_ptr_fn = store_ptr, .user = g};
    f.b = LLVMCreateBuilderInContext(g->ctx);
    f.entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(f.b, f.entry);
    f.sym = calloc((size_t)(p->n_syms + p->n_dsyms) + 1, sizeof *f.sym);
    f.store_ptr = calloc((size_t)p->n_stores + 1, sizeof *f.store_ptr);
    if (f.sym && f.store_ptr) {
        for (int i = 0; i < 7; i++)
            g->frame[i] = load_at(f.b, g->ptr, LLVMGetParam(fn, 1), i);
        /* The host runtime hands over the derived dims too (cv_derive). */
        for (int i = 0; i < p->n_syms + p->n_dsyms; i++)
            f.sym[i] = load_at(f.b, g->i64, g->frame[FR_SYMS], i);
        f.bufs = LLVMBuildArrayAlloca(f.b, g->ptr, LLVMConstInt(g->i64, (unsigned long long)max_slots(p), 0), "bufs");
        /* One block, no branches: every value dominates its later uses. */
        for (const cv_kstmt *s = p->run; s; s = s->next)
            if (s->kind == CV_KS_LAUNCH)
                emit_launch(&f, s, host_fns);
    }
    LLVMBuildRetVoid(f.b);
    LLVMDisposeBuilder(f.b);
    bool ok = f.sym && f.store_ptr;
    free(f.sym);
    free(f.store_ptr);
    return ok ? fn : NULL;
}

/* void derive(int64_t *ext): ext[n_syms + j] = derived dim j of ext[0..n_syms);
 * the host runtime calls it before it sizes buffers or runs (host/cuhost.c). */
static LLVMValueRef define_derive(hostgen *g)
{
    const cv_kprog *p = g->p;
    if (!p->n_dsyms)
        return LLVMConstNull(g->ptr);
    LLVMTypeRef params[1] = {g->ptr};
    LLVMValueRef fn = LLVMAddFunction(g->mod, "cv_derive", LLVMFunctionType(g->vd, params, 1, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cv_llvm_fn f = {.ctx = g->ctx, .mod = g->mod, .fn = fn, .prog = p, .user = g};
    f.b = LLVMCreateBuilderInContext(g->ctx);
    f.entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(f.b, f.entry);
    f.sym = calloc((size_t)(p->n_syms + p->n_dsyms) + 1, sizeof *f.sym);
    LLVMValueRef ext = LLVMGetParam(fn, 0);
    for (int i = 0; f.sym && i < p->n_syms; i++)
        f.sym[i] = load_at(f.b, g->i64, ext, i);
    for (int j = 0; f.sym && j < p->n_dsyms; j++) {
        f.sym[p->n_syms + j] = cv_llvm_expr(&f, p->dsym_expr[j]);
        LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)(p->n_syms + j), 0);
        LLVMBuildStore(f.b, f.sym[p->n_syms + j], LLVMBuildGEP2(f.b, g->i64, ext, &idx, 1, ""));
    }
    LLVMBuildRetVoid(f.b);
    LLVMDisposeBuilder(f.b);
    bool ok = f.sym != NULL;
    free(f.sym);
    return ok ? fn : NULL;
}

/* ---- the descriptor and the API --------------------------------------------- */

static LLVMValueRef kernel_names(hostgen *g)
{
    const cv_kprog *p = g->p;
    LLVMValueRef *v = calloc((size_t)p->n_kernels + 1, sizeof *v);
    if (!v)
        return NULL;
    for (int i = 0; i < p->n_kernels; i++) {
        const cv_kernel *k = p->kernels[i];
        v[i] = cv_cuda_on_host(k) ? LLVMConstNull(g->ptr)
                                  : cstring(g, "cv_kname", k->name, strlen(k->name));
    }
    LLVMValueRef gv = add_const(g, "cv_knames", LLVMConstArray2(g->ptr, v, (uint64_t)p->n_kernels));
    free(v);
    return gv;
}

static int define_model(hostgen *g, const char *ptx, size_t ptx_len, int sm, LLVMValueRef run_dev,
                        cv_diag *d)
{
    const cv_kprog *p = g->p;
    int64_t io[1024], cls[1024], wlen = 0;
    int n_io = io_table(p, io, 1024), n_cls = class_table(p, cls, 1024);
    if (n_io == -2)
        return cv_diag_fail(d, CV_E_BACKEND_DIM_EXPRESSION, (cv_span){0}, "%s: an input or output "
                            "dimension is an expression of the symbols that no kernel computes",
                            p->name);
    if (n_io < 0 || n_cls < 0 || p->f->n_inputs > 64 || p->f->n_returns > 64 || p->n_syms > 64 ||
        p->n_dsyms > 64)
        return cv_diag_fail(d, CV_E_CUDA_CODEGEN_FAILED, (cv_span){0}, "%s: too many inputs, outputs, "
                            "symbols or arena classes for the CUDA host runtime", p->name);
    LLVMValueRef w = weights(g, &wlen), names = kernel_names(g), derive = define_derive(g);
    LLVMValueRef io_g = i64_array(g, "cv_io", io, n_io), cls_g = i64_array(g, "cv_classes", cls, n_cls);
    if (!w || !names || !io_g || !cls_g || !derive)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    LLVMValueRef fields[] = {
        cstring(g, "cv_name", p->name, strlen(p->name)), cstring(g, "cv_ptx", ptx, ptx_len), w,
        LLVMConstInt(g->i64, (unsigned long long)wlen, 0), LLVMConstInt(g->i64, (unsigned long long)sm, 0),
        LLVMConstInt(g->i64, (unsigned long long)p->n_kernels, 0), names,
        LLVMConstInt(g->i64, (unsigned long long)p->f->n_inputs, 0),
        LLVMConstInt(g->i64, (unsigned long long)p->f->n_returns, 0),
        LLVMConstInt(g->i64, (unsigned long long)p->n_syms, 0), io_g,
        LLVMConstInt(g->i64, (unsigned long long)p->n_classes, 0), cls_g, run_dev,
        LLVMConstInt(g->i64, (unsigned long long)p->n_dsyms, 0), derive,
    };
    g->model = add_const(g, "cv_model", LLVMConstStructInContext(g->ctx, fields,
                                                                 sizeof fields / sizeof fields[0], 0));
    return 0;
}

/* cv_<name>_<verb>(params...) { return callee([&model,] the first `pass` params); } */
static void wrap(hostgen *g, const char *verb, LLVMTypeRef ret, LLVMTypeRef *params, int n,
                 const char *callee, bool with_model, int pass)
{
    char name[256];
    snprintf(name, sizeof name, "cv_%s_%s", g->p->name, verb);
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(ret, params, (unsigned)n, 0));
    if (ret == g->i32) {
        unsigned kind = LLVMGetEnumAttributeKindForName("signext", 7);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeReturnIndex, LLVMCreateEnumAttribute(g->ctx, kind, 0));
    }
    cv_llvm_fn f = {.ctx = g->ctx, .mod = g->mod, .fn = fn};
    f.b = LLVMCreateBuilderInContext(g->ctx);
    LLVMPositionBuilderAtEnd(f.b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMTypeRef cp[6];
    LLVMValueRef ca[6];
    int m = 0;
    if (with_model) {
        cp[m] = g->ptr;
        ca[m++] = g->model;
    }
    for (int i = 0; i < pass; i++) {
        cp[m] = params[i];
        ca[m++] = LLVMGetParam(fn, (unsigned)i);
    }
    LLVMValueRef r = cv_llvm_call(&f, callee, ret, cp, ca, m);
    if (ret == g->vd)
        LLVMBuildRetVoid(f.b);
    else
        LLVMBuildRet(f.b, r);
    LLVMDisposeBuilder(f.b);
}

static void define_api(hostgen *g)
{
    LLVMTypeRef P = g->ptr, five[5] = {P, P, P, P, P};
    wrap(g, "create", P, &g->i32, 1, "cvcu_create", true, 0);  /* the thread count is unused */
    wrap(g, "reserve", g->i32, five, 2, "cvcu_reserve", false, 2);
    wrap(g, "run", g->i32, five, 4, "cvcu_run", false, 4);
    wrap(g, "run_stream", g->i32, five, 5, "cvcu_run_stream", false, 5);
    wrap(g, "destroy", g->vd, five, 1, "cvcu_destroy", false, 1);
    wrap(g, "arena_bytes", g->i64, five, 1, "cvcu_arena_bytes", true, 1);
    wrap(g, "last_error", g->i32, five, 1, "cvcu_last_error", false, 1);
}

/* ---- the module --------------------------------------------------------------- */

static int build(hostgen *g, const char *ptx, size_t ptx_len, int sm, cv_diag *d)
{
    const cv_kprog *p = g->p;
    for (int i = 0; i < p->n_kernels; i++)
        if (cv_cuda_on_host(p->kernels[i]) && check_host_stmts(p->kernels[i], p->kernels[i]->body, d))
            return -1;
    LLVMValueRef *host_fns = calloc((size_t)p->n_kernels + 1, sizeof *host_fns);
    g->const_off = calloc((size_t)p->n_stores + 1, sizeof *g->const_off);
    int rc = -1;
    if (host_fns && g->const_off) {
        layout_weights(g);
        for (int i = 0; i < p->n_kernels; i++)
            if (cv_cuda_on_host(p->kernels[i]))
                host_fns[i] = cv_llvm_kernel(g->ctx, g->mod, p, p->kernels[i], CV_LLVM_SOFT_HALF);
        LLVMValueRef run_dev = define_run_dev(g, host_fns);
        rc = run_dev ? define_model(g, ptx, ptx_len, sm, run_dev, d)
                     : cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        if (rc == 0)
            define_api(g);
    } else {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    free(host_fns);
    free(g->const_off);
    return rc;
}

static bool keep_api(const char *name, void *arg)
{
    const char *prefix = arg;
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

int cv_cuda_host(const cv_kprog *p, const char *ptx, size_t ptx_len, int sm, int opt,
                 unsigned char **obj, size_t *obj_len, cv_diag *d)
{
    *obj = NULL;
    cv_llvm_target t;
    if (cv_llvm_target_lookup("x86_64", &t, d))
        return -1;
    LLVMTargetMachineRef tm = cv_llvm_target_machine(&t, opt, d);
    if (!tm) {
        cv_llvm_target_free(&t);
        return -1;
    }
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(p->name, ctx);
    LLVMSetTarget(mod, t.triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(mod, dl);
    LLVMDisposeMessage(dl);
    LLVMDisposeTargetData(td);
    hostgen g = {.ctx = ctx, .mod = mod, .p = p};
    g.ptr = LLVMPointerTypeInContext(ctx, 0);
    g.i64 = LLVMInt64TypeInContext(ctx);
    g.i32 = LLVMInt32TypeInContext(ctx);
    g.vd = LLVMVoidTypeInContext(ctx);
    size_t bc_len;
    const unsigned char *bc = cv_cuda_rtbc_get("host", &bc_len);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "cv_%s_", p->name);
    int rc = build(&g, ptx, ptx_len, sm, d);
    if (rc == 0)
        rc = cv_cuda_link_bitcode(mod, bc, bc_len, "host runtime", d);
    if (rc == 0) {
        cv_cuda_finalize(mod, t.cpu, t.features, keep_api, prefix);
        rc = cv_cuda_optimize(mod, tm, opt, d);
    }
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (rc == 0 && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &buf)) {
        rc = cv_diag_error(d, CV_E_LLVM_CODEGEN_FAILED, (cv_span){0}, "LLVM code generation failed (CUDA host "
                           "module): %s", err ? err : "(no message)");
        LLVMDisposeMessage(err);
    } else if (rc == 0) {
        *obj_len = LLVMGetBufferSize(buf);
        *obj = malloc(*obj_len ? *obj_len : 1);
        if (*obj)
            memcpy(*obj, LLVMGetBufferStart(buf), *obj_len);
        else
            rc = cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        LLVMDisposeMemoryBuffer(buf);
    }
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    cv_llvm_target_free(&t);
    return rc;
}
