/* The artifact's module: embedded weights, one function per kernel, and the
 * exported API (cv_<name>_create/reserve/run/destroy/arena_bytes) whose run
 * function binds every storage to a pointer and launches the kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/llvm/llvm_backend.h"
#include "compiler-core/backend/llvm/llvm_internal.h"

typedef struct modgen {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    const cv_kprog *p;
    LLVMTypeRef ptr, i64, i32, i8, vd;
    LLVMValueRef *consts;       /* by storage id: the weights global, or NULL */
    int64_t *wofs;              /* --weights-file: by storage id, the offset in the file */
    LLVMValueRef arena_fn;      /* internal: int64_t arena_bytes(const int64_t *syms) */
    const cv_llvm_cpu_check *cpu;   /* x86: what create checks first; NULL: nothing */
} modgen;

static void signext(LLVMContextRef ctx, LLVMValueRef fn, unsigned idx)
{
    unsigned kind = LLVMGetEnumAttributeKindForName("signext", 7);
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(ctx, kind, 0));
}

static LLVMValueRef api_fn(modgen *g, const char *verb, LLVMTypeRef ret, LLVMTypeRef *params,
                           int n)
{
    char name[256];
    snprintf(name, sizeof name, "cv_%s_%s", g->p->name, verb);
    return LLVMAddFunction(g->mod, name, LLVMFunctionType(ret, params, (unsigned)n, 0));
}

static void add_weights(modgen *g)
{
    const cv_kprog *p = g->p;
    if (p->weights_file) {
        cv_weights_layout(p, g->wofs);
        return;
    }
    /* Split weights: the large constants are offsets into the data
     * object's one hidden symbol, whose bytes the optimiser never sees. */
    LLVMValueRef image = NULL;
    if (p->split_weights && cv_weights_split_layout(p, g->wofs) > 0) {
        char sym[200];
        snprintf(sym, sizeof sym, "cv_%s_weights", p->name);
        image = LLVMAddGlobal(g->mod, LLVMArrayType2(g->i8, 0), sym);
        LLVMSetGlobalConstant(image, 1);
        LLVMSetVisibility(image, LLVMHiddenVisibility);
        LLVMSetAlignment(image, 64);
    }
    for (int i = 0; i < p->n_stores; i++) {
        const cv_kstore *s = &p->stores[i];
        if (s->kind != CV_KST_CONST || s->first < 0)
            continue;
        if (image && cv_weights_split_store(p, i)) {
            LLVMValueRef off = LLVMConstInt(g->i64, (unsigned long long)g->wofs[i], 0);
            g->consts[i] = LLVMConstGEP2(g->i8, image, &off, 1);
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "cv_w%d", i);
        LLVMValueRef init = LLVMConstStringInContext2(g->ctx, s->data ? s->data : "", s->nbytes, 1);
        LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), name);
        LLVMSetInitializer(gv, init);
        LLVMSetGlobalConstant(gv, 1);
        LLVMSetLinkage(gv, LLVMPrivateLinkage);
        LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
        LLVMSetAlignment(gv, 64);
        g->consts[i] = gv;
    }
}

/* ---- size classes ------------------------------------------------------------ */

static LLVMValueRef mono(LLVMBuilderRef b, modgen *g, const cv_kclass *c, LLVMValueRef *sym)
{
    LLVMValueRef v = LLVMConstInt(g->i64, 1, 0);
    for (int i = 0; i < c->degree; i++)
        v = LLVMBuildMul(b, v, sym[c->syms[i]], "");
    return v;
}

/* Loads the symbol values from a user array (NULL-safe when there are none)
 * and computes the derived dims after them (extended indices, kernel.h). */
static LLVMValueRef *load_syms(LLVMBuilderRef b, modgen *g, LLVMValueRef arr)
{
    const cv_kprog *p = g->p;
    LLVMValueRef *sym = calloc((size_t)(p->n_syms + p->n_dsyms) + 1, sizeof *sym);
    for (int i = 0; sym && i < p->n_syms; i++) {
        LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)i, 0);
        sym[i] = LLVMBuildLoad2(b, g->i64, LLVMBuildGEP2(b, g->i64, arr, &idx, 1, ""), "");
    }
    cv_llvm_fn f = {.ctx = g->ctx, .mod = g->mod, .b = b, .prog = p, .sym = sym};
    for (int j = 0; sym && j < p->n_dsyms; j++)
        sym[p->n_syms + j] = cv_llvm_expr(&f, p->dsym_expr[j]);
    return sym;
}

/* class_base[c] = sum over earlier classes of units * monomial. */
static void class_bases(LLVMBuilderRef b, modgen *g, LLVMValueRef *sym, LLVMValueRef *base,
                        LLVMValueRef *total)
{
    LLVMValueRef acc = LLVMConstInt(g->i64, 0, 0);
    for (int c = 0; c < g->p->n_classes; c++) {
        const cv_kclass *k = &g->p->classes[c];
        base[c] = acc;
        LLVMValueRef sz = LLVMBuildMul(b, LLVMConstInt(g->i64, (unsigned long long)k->units, 0),
                                       mono(b, g, k, sym), "");
        acc = LLVMBuildAdd(b, acc, sz, "");
    }
    *total = acc;
}

static void define_arena_bytes(modgen *g)
{
    LLVMTypeRef fty = LLVMFunctionType(g->i64, &g->ptr, 1, 0);
    g->arena_fn = LLVMAddFunction(g->mod, "cv_arena_bytes", fty);
    LLVMSetLinkage(g->arena_fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, g->arena_fn, "entry"));
    LLVMValueRef *sym = load_syms(b, g, LLVMGetParam(g->arena_fn, 0));
    LLVMValueRef *base = calloc((size_t)g->p->n_classes + 1, sizeof *base), total;
    if (sym && base) {
        class_bases(b, g, sym, base, &total);
        LLVMBuildRet(b, total);
    } else {
        LLVMBuildRet(b, LLVMConstInt(g->i64, 0, 0));
    }
    free(sym);
    free(base);
    LLVMDisposeBuilder(b);
}

static LLVMValueRef call_arena_bytes(LLVMBuilderRef b, modgen *g, LLVMValueRef syms)
{
    return LLVMBuildCall2(b, LLVMGlobalGetValueType(g->arena_fn), g->arena_fn, &syms, 1, "");
}

/* ---- run ------------------------------------------------------------------------ */

typedef struct run_state {
    modgen *g;
    LLVMValueRef inputs, outputs, arena;
    LLVMValueRef wbase;         /* --weights-file: the caller's copy of the file */
    LLVMValueRef *sym, *base;
} run_state;

static LLVMValueRef store_ptr(cv_llvm_fn *f, int id)
{
    if (f->store_ptr[id])
        return f->store_ptr[id];
    run_state *r = f->user;
    modgen *g = r->g;
    const cv_kstore *s = &f->prog->stores[id];
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)s->index, 0), v = NULL;
    switch (s->kind) {
    case CV_KST_INPUT:
    case CV_KST_OUTPUT: {
        LLVMValueRef arr = s->kind == CV_KST_INPUT ? r->inputs : r->outputs;
        v = LLVMBuildLoad2(f->b, g->ptr, LLVMBuildGEP2(f->b, g->ptr, arr, &idx, 1, ""), "");
        break;
    }
    case CV_KST_CONST:
        if (g->p->weights_file) {
            LLVMValueRef off = LLVMConstInt(g->i64, (unsigned long long)g->wofs[id], 0);
            v = LLVMBuildGEP2(f->b, g->i8, r->wbase, &off, 1, "");
        } else {
            v = g->consts[id];
        }
        break;
    case CV_KST_ARENA: {
        const cv_kclass *c = &f->prog->classes[s->cls];
        LLVMValueRef off = LLVMBuildMul(f->b, LLVMConstInt(g->i64, (unsigned long long)s->offset, 0),
                                        mono(f->b, g, c, r->sym), "");
        off = LLVMBuildAdd(f->b, r->base[s->cls], off, "");
        v = LLVMBuildGEP2(f->b, g->i8, r->arena, &off, 1, "");
        break;
    }
    case CV_KST_VIEW: {
        LLVMValueRef base = store_ptr(f, s->base);
        LLVMValueRef off = s->byte_offset ? cv_llvm_expr(f, s->byte_offset) : LLVMConstInt(g->i64, 0, 0);
        v = LLVMBuildGEP2(f->b, g->i8, base, &off, 1, "");
        break;
    }
    }
    f->store_ptr[id] = v;
    return v;
}

/* Returns -1 from the run function when a symbolic dim, or a dim computed
 * from them (L - 3 at L = 2), is negative. */
static void check_syms(cv_llvm_fn *f, run_state *r)
{
    modgen *g = r->g;
    for (int i = 0; i < g->p->n_syms + g->p->n_dsyms; i++) {
        LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, f->fn, "bad_dim");
        LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, f->fn, "dim_ok");
        LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, r->sym[i], LLVMConstInt(g->i64, 0, 0), ""),
                        bad, ok);
        LLVMPositionBuilderAtEnd(f->b, bad);
        LLVMBuildRet(f->b, LLVMConstInt(g->i32, (unsigned long long)-1, 1));
        LLVMPositionBuilderAtEnd(f->b, ok);
    }
    const int *sym = g->p->bound_sym;
    const int64_t *max = g->p->bound_max;
    for (int i = 0; i < g->p->n_bounds; i++) {  /* beyond a bound the model implies: -4 */
        LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, f->fn, "over_bound");
        LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, f->fn, "bound_ok");
        LLVMValueRef lim = LLVMConstInt(g->i64, (unsigned long long)max[i], 1);
        LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, r->sym[sym[i]], lim, ""), bad, ok);
        LLVMPositionBuilderAtEnd(f->b, bad);
        LLVMBuildRet(f->b, LLVMConstInt(g->i32, (unsigned long long)-4, 1));
        LLVMPositionBuilderAtEnd(f->b, ok);
    }
}

static void bind_all_stores(cv_llvm_fn *f)
{
    /* Every pointer is made here, before the first launch, so each one
     * dominates all its uses. */
    for (const cv_kstmt *s = f->prog->run; s; s = s->next)
        for (int i = 0; i < s->n_args; i++)
            store_ptr(f, s->args[i]->id);
}

static int max_slots(const cv_kprog *p)
{
    int m = 1;
    for (int i = 0; i < p->n_kernels; i++)
        if (p->kernels[i]->n_slots > m)
            m = p->kernels[i]->n_slots;
    return m;
}

static void define_run(modgen *g, LLVMValueRef *kernel_fns)
{
    LLVMTypeRef params[4] = {g->ptr, g->ptr, g->ptr, g->ptr};
    LLVMValueRef fn = api_fn(g, "run", g->i32, params, 4);
    signext(g->ctx, fn, LLVMAttributeReturnIndex);
    cv_llvm_fn f = {.ctx = g->ctx, .mod = g->mod, .fn = fn, .prog = g->p, .rt = LLVMGetParam(fn, 0),
                    .kernel_fns = kernel_fns, .store_ptr_fn = store_ptr};
    f.b = LLVMCreateBuilderInContext(g->ctx);
    f.entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(f.b, f.entry);
    run_state r = {.g = g, .inputs = LLVMGetParam(fn, 1), .outputs = LLVMGetParam(fn, 2)};
    r.sym = load_syms(f.b, g, LLVMGetParam(fn, 3));
    r.base = calloc((size_t)g->p->n_classes + 1, sizeof *r.base);
    f.store_ptr = calloc((size_t)g->p->n_stores + 1, sizeof *f.store_ptr);
    f.sym = r.sym;
    if (r.sym && r.base && f.store_ptr) {
        check_syms(&f, &r);
        LLVMValueRef total;
        class_bases(f.b, g, r.sym, r.base, &total);
        LLVMTypeRef ap[2] = {g->ptr, g->i64};
        LLVMValueRef aa[2] = {f.rt, total};
        r.arena = cv_llvm_call(&f, "cvrt_arena", g->ptr, ap, aa, 2);
        if (g->p->weights_file)
            r.wbase = cv_llvm_call(&f, "cvrt_weights", g->ptr, &g->ptr, &f.rt, 1);
        LLVMBasicBlockRef oom = LLVMAppendBasicBlockInContext(g->ctx, fn, "oom");
        LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(g->ctx, fn, "go");
        LLVMBuildCondBr(f.b, LLVMBuildIsNull(f.b, r.arena, ""), oom, go);
        LLVMPositionBuilderAtEnd(f.b, oom);
        LLVMBuildRet(f.b, LLVMConstInt(g->i32, (unsigned long long)-2, 1));
        LLVMPositionBuilderAtEnd(f.b, go);
        f.bufs = LLVMBuildArrayAlloca(f.b, g->ptr, LLVMConstInt(g->i64, (unsigned long long)max_slots(g->p), 0), "bufs");
        f.user = &r;
        bind_all_stores(&f);
        cv_llvm_stmts(&f, g->p->run);
    }
    LLVMBuildRet(f.b, LLVMConstInt(g->i32, 0, 0));
    LLVMDisposeBuilder(f.b);
    free(r.sym);
    free(r.base);
    free(f.store_ptr);
}

/* ---- create, reserve, destroy, arena_bytes ------------------------------------ */

static LLVMValueRef rt_call(LLVMBuilderRef b, modgen *g, const char *name, LLVMTypeRef ret,
                            LLVMTypeRef *params, LLVMValueRef *args, int n)
{
    cv_llvm_fn f = {.ctx = g->ctx, .mod = g->mod, .b = b};
    return cv_llvm_call(&f, name, ret, params, args, n);
}

/* --weights-file: create gives NULL (the weights are not in the library);
 * create_weights(threads, w, len) refuses a len other than the file's size
 * or a w not 64-byte aligned, then creates through impl and binds w. */
static void define_create_weights(modgen *g, LLVMValueRef impl)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMValueRef fn = api_fn(g, "create", g->ptr, &g->i32, 1);
    signext(g->ctx, fn, 1);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMBuildRet(b, LLVMConstNull(g->ptr));
    LLVMTypeRef params[3] = {g->i32, g->ptr, g->i64};
    fn = api_fn(g, "create_weights", g->ptr, params, 3);
    signext(g->ctx, fn, 1);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMValueRef w = LLVMGetParam(fn, 1), zero = LLVMConstInt(g->i64, 0, 0);
    int64_t total = cv_weights_layout(g->p, NULL);
    LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntNE, LLVMGetParam(fn, 2),
                                     LLVMConstInt(g->i64, (unsigned long long)total, 0), "");
    LLVMValueRef low = LLVMBuildAnd(b, LLVMBuildPtrToInt(b, w, g->i64, ""),
                                    LLVMConstInt(g->i64, 63, 0), "");
    bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntNE, low, zero, ""), "");
    if (total > 0)
        bad = LLVMBuildOr(b, bad, LLVMBuildIsNull(b, w, ""), "");
    LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(g->ctx, fn, "refuse");
    LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(g->ctx, fn, "create");
    LLVMBasicBlockRef bind = LLVMAppendBasicBlockInContext(g->ctx, fn, "bind");
    LLVMBuildCondBr(b, bad, no, go);
    LLVMPositionBuilderAtEnd(b, no);
    LLVMBuildRet(b, LLVMConstNull(g->ptr));
    LLVMPositionBuilderAtEnd(b, go);
    LLVMValueRef th = LLVMGetParam(fn, 0);
    LLVMValueRef rt = LLVMBuildCall2(b, LLVMGlobalGetValueType(impl), impl, &th, 1, "");
    LLVMBuildCondBr(b, LLVMBuildIsNull(b, rt, ""), no, bind);
    LLVMPositionBuilderAtEnd(b, bind);
    LLVMTypeRef sp[2] = {g->ptr, g->ptr};
    LLVMValueRef sa[2] = {rt, w};
    rt_call(b, g, "cvrt_set_weights", g->vd, sp, sa, 2);
    LLVMBuildRet(b, rt);
    LLVMDisposeBuilder(b);
}

static void define_create(modgen *g)
{
    LLVMValueRef fn = g->p->weights_file
        ? LLVMAddFunction(g->mod, "cv_create_impl", LLVMFunctionType(g->ptr, &g->i32, 1, 0))
        : api_fn(g, "create", g->ptr, &g->i32, 1);
    signext(g->ctx, fn, 1);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    if (g->cpu && g->cpu->requires[0]) {    /* before code that needs the target's features */
        LLVMTypeRef cp[2] = {g->ptr, g->ptr};
        LLVMValueRef ca[2] = {LLVMBuildGlobalStringPtr(b, g->cpu->requires, "cv_requires"),
                              LLVMBuildGlobalStringPtr(b, g->cpu->target, "cv_target")};
        LLVMValueRef bad = rt_call(b, g, "cvrt_cpu_check", g->i32, cp, ca, 2);
        LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(g->ctx, fn, "no_cpu");
        LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, fn, "cpu_ok");
        LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, bad, LLVMConstInt(g->i32, 0, 0), ""), no, ok);
        LLVMPositionBuilderAtEnd(b, no);
        LLVMBuildRet(b, LLVMConstNull(g->ptr));
        LLVMPositionBuilderAtEnd(b, ok);
    }
    LLVMValueRef th = LLVMGetParam(fn, 0);
    LLVMValueRef rt = rt_call(b, g, "cvrt_create", g->ptr, &g->i32, &th, 1);
    if (g->p->n_syms == 0) {
        /* Static shapes: size the arena now so that no run allocates. */
        LLVMBasicBlockRef sized = LLVMAppendBasicBlockInContext(g->ctx, fn, "size");
        LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->ctx, fn, "fail");
        LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, fn, "done");
        LLVMBuildCondBr(b, LLVMBuildIsNull(b, rt, ""), done, sized);
        LLVMPositionBuilderAtEnd(b, sized);
        LLVMTypeRef ap[2] = {g->ptr, g->i64};
        LLVMValueRef aa[2] = {rt, call_arena_bytes(b, g, LLVMConstNull(g->ptr))};
        LLVMValueRef a = rt_call(b, g, "cvrt_arena", g->ptr, ap, aa, 2);
        LLVMBuildCondBr(b, LLVMBuildIsNull(b, a, ""), fail, done);
        LLVMPositionBuilderAtEnd(b, fail);
        rt_call(b, g, "cvrt_destroy", g->vd, &g->ptr, &rt, 1);
        LLVMBuildRet(b, LLVMConstNull(g->ptr));
        LLVMPositionBuilderAtEnd(b, done);
    }
    LLVMBuildRet(b, rt);
    LLVMDisposeBuilder(b);
    if (g->p->weights_file) {
        LLVMSetLinkage(fn, LLVMInternalLinkage);
        define_create_weights(g, fn);
    }
}

static void define_small_api(modgen *g)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMTypeRef two[2] = {g->ptr, g->ptr}, ap[2] = {g->ptr, g->i64};
    /* int reserve(ctx, dims): 0, or -2 when the arena cannot grow */
    LLVMValueRef fn = api_fn(g, "reserve", g->i32, two, 2);
    signext(g->ctx, fn, LLVMAttributeReturnIndex);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMValueRef aa[2] = {LLVMGetParam(fn, 0), call_arena_bytes(b, g, LLVMGetParam(fn, 1))};
    LLVMValueRef a = rt_call(b, g, "cvrt_arena", g->ptr, ap, aa, 2);
    LLVMBuildRet(b, LLVMBuildSelect(b, LLVMBuildIsNull(b, a, ""),
                                    LLVMConstInt(g->i32, (unsigned long long)-2, 1),
                                    LLVMConstInt(g->i32, 0, 0), ""));
    /* void destroy(ctx) */
    fn = api_fn(g, "destroy", g->vd, &g->ptr, 1);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMValueRef ctx = LLVMGetParam(fn, 0);
    rt_call(b, g, "cvrt_destroy", g->vd, &g->ptr, &ctx, 1);
    LLVMBuildRetVoid(b);
    /* int64_t arena_bytes(dims) */
    fn = api_fn(g, "arena_bytes", g->i64, &g->ptr, 1);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMBuildRet(b, call_arena_bytes(b, g, LLVMGetParam(fn, 0)));
    /* void profile(ctx, uint64_t *ns, int64_t n): cuvil bench --profile */
    LLVMTypeRef pp[3] = {g->ptr, g->ptr, g->i64};
    fn = api_fn(g, "profile", g->vd, pp, 3);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
    LLVMValueRef pa[3] = {LLVMGetParam(fn, 0), LLVMGetParam(fn, 1), LLVMGetParam(fn, 2)};
    rt_call(b, g, "cvrt_profile", g->vd, pp, pa, 3);
    LLVMBuildRetVoid(b);
    if (g->cpu) {   /* int last_error(const char **message): why create refused */
        fn = api_fn(g, "last_error", g->i32, &g->ptr, 1);
        signext(g->ctx, fn, LLVMAttributeReturnIndex);
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
        LLVMValueRef m = LLVMGetParam(fn, 0);
        LLVMBuildRet(b, rt_call(b, g, "cvrt_cpu_last_error", g->i32, &g->ptr, &m, 1));
    }
    LLVMDisposeBuilder(b);
}

int cv_llvm_build_module(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p, unsigned quirks,
                         const cv_llvm_cpu_check *cpu, cv_diag *d)
{
    modgen g = {.ctx = ctx, .mod = mod, .p = p, .cpu = cpu};
    g.ptr = LLVMPointerTypeInContext(ctx, 0);
    g.i64 = LLVMInt64TypeInContext(ctx);
    g.i32 = LLVMInt32TypeInContext(ctx);
    g.i8 = LLVMInt8TypeInContext(ctx);
    g.vd = LLVMVoidTypeInContext(ctx);
    g.consts = calloc((size_t)p->n_stores + 1, sizeof *g.consts);
    g.wofs = calloc((size_t)p->n_stores + 1, sizeof *g.wofs);
    LLVMValueRef *kfns = calloc((size_t)p->n_kernels + 1, sizeof *kfns);
    if (!g.consts || !g.wofs || !kfns) {
        free(g.consts);
        free(g.wofs);
        free(kfns);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    add_weights(&g);
    for (int i = 0; i < p->n_kernels; i++)
        kfns[i] = cv_llvm_kernel(ctx, mod, p, p->kernels[i], quirks);
    define_arena_bytes(&g);
    define_run(&g, kfns);
    define_create(&g);
    define_small_api(&g);
    free(g.consts);
    free(g.wofs);
    free(kfns);
    return 0;
}
