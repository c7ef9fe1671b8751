/* Kernel IR statements to LLVM IR, and kernels to functions
 *   void kN(cvrt_ctx *rt, void *const *bufs, const int64_t *syms, int64_t lo, int64_t hi)
 * whose body runs for every p in [lo, hi).  Variables live in entry-block
 * allocas that SROA turns into SSA values. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "compiler-core/backend/llvm/llvm_internal.h"

LLVMValueRef cv_llvm_entry_alloca(cv_llvm_fn *f, LLVMTypeRef t, const char *name)
{
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(f->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(f->entry);
    if (first)
        LLVMPositionBuilderBefore(eb, first);
    else
        LLVMPositionBuilderAtEnd(eb, f->entry);
    LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
    LLVMDisposeBuilder(eb);
    return a;
}

/* Whether e converts a float to an integer (depth-bounded: kernels' DAGs
 * are shallow, and a miss only leaves a loop vectorised). */
static bool expr_ftoi(const cv_kexpr *e, int depth)
{
    if (!e || depth > 48)
        return false;
    bool from_float = e->a && (e->a->ty == CV_KTY_F32 || e->a->ty == CV_KTY_F64);
    if ((e->kind == CV_KE_CAST || e->kind == CV_KE_CONVERT) && from_float && e->ty == CV_KTY_I64)
        return true;
    return expr_ftoi(e->a, depth + 1) || expr_ftoi(e->b, depth + 1) || expr_ftoi(e->c, depth + 1);
}

static bool stmts_ftoi(const cv_kstmt *s)
{
    for (; s; s = s->next) {
        if (expr_ftoi(s->a, 0) || expr_ftoi(s->b, 0) || stmts_ftoi(s->body) || stmts_ftoi(s->orelse))
            return true;
        for (int i = 0; i < s->n_args; i++)
            if (expr_ftoi(s->args[i], 0))
                return true;
    }
    return false;
}

/* !llvm.loop !{self, !{"llvm.loop.vectorize.enable", i1 false}} on a latch. */
static void no_vectorize(cv_llvm_fn *f, LLVMValueRef latch)
{
    LLVMContextRef ctx = f->ctx;
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef opt[2] = {
        LLVMMDStringInContext2(ctx, "llvm.loop.vectorize.enable", 26),
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(ctx), 0, 0)),
    };
    LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(ctx, opt, 2)};
    LLVMMetadataRef loop = LLVMMDNodeInContext2(ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, loop);
    LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, loop));
}

static LLVMBasicBlockRef block(cv_llvm_fn *f, const char *name)
{
    return LLVMAppendBasicBlockInContext(f->ctx, f->fn, name);
}

/* for (var = lo; var < hi; var++) body */
static void emit_for(cv_llvm_fn *f, LLVMValueRef var, LLVMValueRef lo, LLVMValueRef hi,
                     const cv_kstmt *body)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(f->ctx);
    LLVMBasicBlockRef head = block(f, "for"), loop = block(f, "body"), done = block(f, "done");
    LLVMBuildStore(f->b, lo, var);
    LLVMBuildBr(f->b, head);
    LLVMPositionBuilderAtEnd(f->b, head);
    LLVMValueRef i = LLVMBuildLoad2(f->b, i64, var, "");
    LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, i, hi, ""), loop, done);
    LLVMPositionBuilderAtEnd(f->b, loop);
    cv_llvm_stmts(f, body);
    LLVMValueRef cur = LLVMBuildLoad2(f->b, i64, var, "");
    LLVMBuildStore(f->b, LLVMBuildAdd(f->b, cur, LLVMConstInt(i64, 1, 0), ""), var);
    LLVMValueRef latch = LLVMBuildBr(f->b, head);
    /* qemu 7.2 aborts on RVV float-to-int conversions (they set the rounding mode). */
    if ((f->quirks & CV_LLVM_SOFT_ROUND) && stmts_ftoi(body))
        no_vectorize(f, latch);
    LLVMPositionBuilderAtEnd(f->b, done);
}

static void emit_if(cv_llvm_fn *f, const cv_kstmt *s)
{
    LLVMBasicBlockRef yes = block(f, "then"), no = block(f, "else"), done = block(f, "endif");
    LLVMBuildCondBr(f->b, cv_llvm_expr(f, s->a), yes, no);
    LLVMPositionBuilderAtEnd(f->b, yes);
    cv_llvm_stmts(f, s->body);
    LLVMBuildBr(f->b, done);
    LLVMPositionBuilderAtEnd(f->b, no);
    cv_llvm_stmts(f, s->orelse);
    LLVMBuildBr(f->b, done);
    LLVMPositionBuilderAtEnd(f->b, done);
}

static void emit_store(cv_llvm_fn *f, const cv_kstmt *s)
{
    cv_dtype dt = f->k->slot_dtype[s->id];
    LLVMValueRef v = cv_llvm_to_storage(f, cv_llvm_expr(f, s->b), dt);
    LLVMValueRef idx = cv_llvm_expr(f, s->a);
    LLVMValueRef ptr = LLVMBuildGEP2(f->b, LLVMTypeOf(v), f->slot[s->id], &idx, 1, "");
    LLVMValueRef st = LLVMBuildStore(f->b, v, ptr);
    LLVMSetAlignment(st, (unsigned)cv_dtype_size(dt));
}

static void emit_call(cv_llvm_fn *f, const cv_kstmt *s)
{
    const cv_krt_info *info = cv_krt_get((cv_krt)s->id);
    LLVMTypeRef params[40];
    LLVMValueRef args[40];
    params[0] = LLVMPointerTypeInContext(f->ctx, 0);
    args[0] = f->rt;
    for (int i = 0; i < s->n_args && i < 39; i++) {
        params[i + 1] = cv_llvm_kty(f->ctx, (cv_kty)info->args[i]);
        args[i + 1] = cv_llvm_expr(f, s->args[i]);
    }
    cv_llvm_call(f, info->name, LLVMVoidTypeInContext(f->ctx), params, args, s->n_args + 1);
}

static void emit_launch(cv_llvm_fn *f, const cv_kstmt *s)
{
    LLVMContextRef ctx = f->ctx;
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
    for (int i = 0; i < s->n_args; i++) {
        LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)i, 0);
        LLVMValueRef slot = LLVMBuildGEP2(f->b, ptr, f->bufs, &idx, 1, "");
        LLVMBuildStore(f->b, cv_llvm_expr(f, s->args[i]), slot);
    }
    LLVMValueRef kfn = f->kernel_fns[s->id];
    LLVMValueRef syms = LLVMGetParam(f->fn, 3);
    /* cuvil bench --profile (cvrt_profile): a load and a branch when off. */
    LLVMValueRef t0 = cv_llvm_call(f, "cvrt_prof_begin", i64, &ptr, &f->rt, 1);
    if (!s->a) {
        LLVMValueRef args[5] = {f->rt, f->bufs, syms, LLVMConstInt(i64, 0, 0),
                                LLVMConstInt(i64, 1, 0)};
        LLVMBuildCall2(f->b, LLVMGlobalGetValueType(kfn), kfn, args, 5, "");
    } else {
        LLVMTypeRef params[6] = {ptr, i64, i64, ptr, ptr, ptr};
        LLVMValueRef args[6] = {f->rt, cv_llvm_expr(f, s->a), cv_llvm_expr(f, s->b), kfn, f->bufs,
                                syms};
        cv_llvm_call(f, "cvrt_launch", LLVMVoidTypeInContext(ctx), params, args, 6);
    }
    LLVMTypeRef pp[3] = {ptr, i64, i64};
    LLVMValueRef pa[3] = {f->rt, LLVMConstInt(i64, (unsigned long long)s->id, 0), t0};
    cv_llvm_call(f, "cvrt_prof_end", LLVMVoidTypeInContext(ctx), pp, pa, 3);
}

void cv_llvm_stmts(cv_llvm_fn *f, const cv_kstmt *s)
{
    for (; s; s = s->next) {
        cv_llvm_memo_reset(f);
        switch ((cv_kstmt_kind)s->kind) {
        case CV_KS_FOR:
            emit_for(f, f->var[s->id], cv_llvm_expr(f, s->a), cv_llvm_expr(f, s->b), s->body);
            break;
        case CV_KS_IF: emit_if(f, s); break;
        case CV_KS_STORE: emit_store(f, s); break;
        case CV_KS_SET: LLVMBuildStore(f->b, cv_llvm_expr(f, s->a), f->var[s->id]); break;
        case CV_KS_CALL: emit_call(f, s); break;
        case CV_KS_LAUNCH: emit_launch(f, s); break;
        }
    }
}

LLVMValueRef cv_llvm_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const cv_kprog *p,
                            const cv_kernel *k, unsigned quirks)
{
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
    LLVMTypeRef params[5] = {ptr, ptr, ptr, i64, i64};
    LLVMValueRef fn = LLVMAddFunction(mod, k->name,
                                      LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 5, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cv_llvm_fn f = {.ctx = ctx, .mod = mod, .fn = fn, .prog = p, .k = k, .rt = LLVMGetParam(fn, 0),
                    .quirks = quirks};
    f.b = LLVMCreateBuilderInContext(ctx);
    f.entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(f.b, f.entry);
    LLVMValueRef slots[CV_K_MAX_SLOTS];
    LLVMValueRef *syms = calloc((size_t)p->n_syms + 1, sizeof *syms);
    LLVMValueRef *vars = calloc((size_t)k->n_vars + 1, sizeof *vars);
    f.memo_cap = 1024;
    f.memo_key = calloc((size_t)f.memo_cap, sizeof *f.memo_key);
    f.memo_val = calloc((size_t)f.memo_cap, sizeof *f.memo_val);
    if (!syms || !vars || !f.memo_key || !f.memo_val) {
        f.memo_cap = 0;
    } else {
        for (int i = 0; i < k->n_vars; i++)
            vars[i] = LLVMBuildAlloca(f.b, cv_llvm_kty(ctx, k->var_ty[i]), "");
        for (int i = 0; i < k->n_slots; i++) {
            LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)i, 0);
            slots[i] = LLVMBuildLoad2(f.b, ptr, LLVMBuildGEP2(f.b, ptr, LLVMGetParam(fn, 1), &idx, 1, ""), "");
        }
        for (int i = 0; i < p->n_syms; i++) {
            LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)i, 0);
            syms[i] = LLVMBuildLoad2(f.b, i64, LLVMBuildGEP2(f.b, i64, LLVMGetParam(fn, 2), &idx, 1, ""), "");
        }
        f.slot = slots;
        f.sym = syms;
        f.var = vars;
        emit_for(&f, vars[k->pvar], LLVMGetParam(fn, 3), LLVMGetParam(fn, 4), k->body);
    }
    LLVMBuildRetVoid(f.b);
    LLVMDisposeBuilder(f.b);
    free(syms);
    free(vars);
    free(f.memo_key);
    free(f.memo_val);
    return fn;
}
