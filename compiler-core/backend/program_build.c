/* The driver of program construction: symbols, input/param/output storage,
 * one codegen hook per op (ops without operands are folded at compile time
 * with their reference kernel), output copies, then memory planning. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/kernel_internal.h"
#include "compiler-core/cuvil.h"
#include "compiler-core/passes/passes.h"

static cv_span func_span(const cv_func *f)
{
    cv_span s = f->span;
    if (!s.file)
        s.file = f->module->path;
    return s;
}

static int collect_syms(cv_kprog *p, const cv_func *f)
{
    p->sym_names = cv_kp_alloc(p, sizeof *p->sym_names * (size_t)(f->n_inputs * CV_MAX_RANK + 1));
    if (!p->sym_names)
        return -1;
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_shape *s = &f->inputs[i]->type.shape;
        for (int k = 0; k < s->rank; k++) {
            const char *sym = cv_dim_is_symbol(s->d[k]) ? s->d[k].sym : NULL;
            bool seen = false;
            for (int j = 0; sym && j < p->n_syms && !seen; j++)
                seen = strcmp(p->sym_names[j], sym) == 0;
            if (sym && !seen)
                p->sym_names[p->n_syms++] = sym;
        }
    }
    return 0;
}

/* An input dim may be an expression (f32[2*N + 1, 4]) when every symbol in
 * it is some input's bare dim: the caller binds those, and the expression
 * is checked (cv_native_run) rather than solved. */
static void note_sym(void *ctx, const char *name, size_t n)
{
    const void **a = ctx;
    if (!a[1] && cv_kp_sym_index(a[0], name, n) < 0)
        a[1] = name;
}

static int check_input_exprs(const cv_kprog *p, const cv_func *f, cv_diag *d)
{
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_value *v = f->inputs[i];
        for (int k = 0; k < v->type.shape.rank; k++) {
            const void *a[2] = {p, NULL};
            if (cv_dim_is_expr(v->type.shape.d[k]) &&
                (cv_dim_symbols(v->type.shape.d[k], note_sym, a) || a[1]))
                return cv_diag_fail(d, CV_E_BACKEND_DIM_EXPRESSION, func_span(f),
                                    "input %%%s has dimension %d = %s, with a symbol that no "
                                    "input has as a dimension of its own: the caller could "
                                    "not give it", v->name, k, v->type.shape.d[k].sym);
        }
    }
    return 0;
}

static int collect_bounds(cv_kprog *p)
{
    int cap = p->n_syms * 2 + 1;
    p->bound_sym = cv_kp_alloc(p, sizeof *p->bound_sym * (size_t)cap);
    p->bound_max = cv_kp_alloc(p, sizeof *p->bound_max * (size_t)cap);
    if (!p->bound_sym || !p->bound_max)
        return -1;
    p->n_bounds = cv_kp_sym_bounds(p, p->bound_sym, p->bound_max, NULL, cap);
    return 0;
}

static const char *c_identifier(cv_kprog *p, const char *name)
{
    size_t n = strlen(name) + 2;
    char *s = cv_kp_alloc(p, n);
    if (!s)
        return "model";
    cv_artifact_c_name(name, s, n);
    return s;
}

static int bind_signature(cv_kprog *p, const cv_func *f)
{
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_value *v = f->inputs[i];
        cv_kstore s = {.kind = CV_KST_INPUT, .index = i, .dtype = v->type.dtype,
                       .shape = v->type.shape};
        if ((p->value_store[v->id] = cv_kp_add_store(p, &s)) < 0)
            return -1;
    }
    for (int i = 0; i < f->n_params; i++) {
        const cv_param *prm = f->params[i];
        const cv_value *v = prm->value;
        cv_kstore s = {.kind = CV_KST_CONST, .dtype = v->type.dtype, .shape = v->type.shape,
                       .data = prm->data, .nbytes = prm->nbytes};
        if ((p->value_store[v->id] = cv_kp_add_store(p, &s)) < 0)
            return -1;
    }
    /* A returned op result is computed straight into the caller's buffer. */
    for (int i = 0; i < f->n_returns; i++) {
        const cv_value *v = f->returns[i];
        if (v->kind != CV_VAL_RESULT || p->value_store[v->id] >= 0)
            continue;
        cv_kstore s = {.kind = CV_KST_OUTPUT, .index = i, .dtype = v->type.dtype,
                       .shape = v->type.shape};
        if ((p->value_store[v->id] = cv_kp_add_store(p, &s)) < 0)
            return -1;
    }
    return 0;
}

/* An op without operands (constant) is evaluated now and embedded; one
 * that depends on the symbols runs its hook instead (known_now). */
static int fold_op(cv_kprog *p, const cv_op *op, cv_diag *d)
{
    const cv_value *v = op->results[0];
    int64_t dims[CV_MAX_RANK];
    for (int i = 0; i < v->type.shape.rank; i++)
        dims[i] = v->type.shape.d[i].n;
    cv_tensor t;
    if (op->n_results != 1 || !cv_shape_is_static(&v->type.shape) ||
        cv_tensor_alloc(&t, v->type.dtype, v->type.shape.rank, dims))
        return cv_diag_fail(d, CV_E_CODEGEN_FOLD_FAILED, cv_op_span(op), "%s: cannot evaluate at compile time",
                            op->name);
    cv_arena scratch;
    cv_arena_init(&scratch);
    cv_eval_ctx ec = {.op = op, .n_out = 1, .out = &t, .scratch = &scratch, .diag = d};
    int rc = op->def->eval(&ec);
    cv_arena_free(&scratch);
    size_t nb = cv_tensor_nbytes(&t);
    void *data = rc ? NULL : cv_kp_alloc(p, nb ? nb : 1);
    if (data)
        memcpy(data, t.data, nb);
    cv_tensor_free(&t);
    if (!data)
        return -1;
    cv_kstore s = {.kind = CV_KST_CONST, .dtype = v->type.dtype, .shape = v->type.shape,
                   .data = data, .nbytes = nb};
    int id = cv_kp_add_store(p, &s);
    if (id < 0)
        return -1;
    p->value_store[v->id] = id;     /* if returned, copy_outputs copies it */
    return 0;
}

/* Fills the epilogue chain planned after op `index`. */
static void set_chain(cv_codegen_ctx *c, const cv_func *f, const int *next, const int *link,
                      int index)
{
    for (int i = index; next[i] >= 0 && c->n_epi < 8; i = next[i]) {
        c->epi[c->n_epi] = f->ops[next[i]];
        c->epi_link[c->n_epi++] = link[i];
    }
}

/* An op without operands is known at compile time unless its result or a
 * dim-list attribute (arange's start, constant's shape) names a symbol. */
static bool known_now(const cv_op *op)
{
    for (int r = 0; r < op->n_results; r++)
        if (!cv_shape_is_static(&op->results[r]->type.shape))
            return false;
    for (int i = 0; i < op->n_attrs; i++)
        if (op->attrs[i].kind == CV_ATTR_DIMS)
            return false;   /* all-integer lists are stored as INTS */
    return true;
}

static int lower_op(cv_kprog *p, const cv_op *op, int index, const int *next, const int *link,
                    bool *done, cv_nchwc *nc, cv_diag *d)
{
    if (op->n_operands == 0 && op->def && op->def->eval &&
        (known_now(op) || !cv_cg_hook_for(op->def)))
        return fold_op(p, op, d);
    cv_codegen_fn hook = op->def ? cv_cg_hook_for(op->def) : NULL;
    if (!hook) {
        char path[256];
        cv_op_path(op, path, sizeof path);
        cv_diag_add(d, CV_SEV_ERROR, CV_E_CODEGEN_UNSUPPORTED_OP, cv_op_span(op), path,
                    "%s: no native code generation for this op yet", op->name);
        return -1;
    }
    cv_codegen_ctx c = {.prog = p, .op = op, .diag = d, .op_index = index};
    set_chain(&c, op->func, next, link, index);
    int errors = d->n_errors;
    bool blocked = nc && nc->op_blocked[index];
    if (nc && !blocked)
        cv_nchwc_prepare_plain(&c, nc);
    int rc = blocked ? cv_nchwc_lower(&c, nc) : hook(&c);
    /* The chain ran inside this op's kernel: its ops are done. */
    /* (Only the ops set_chain handed over: a longer chain's tail stays.) */
    int k = 0;
    int *fused = c.epi_taken ? cv_kp_alloc(p, sizeof *fused * (size_t)c.n_epi) : NULL;
    for (int i = index; c.epi_taken && next[i] >= 0 && k < c.n_epi; i = next[i], k++) {
        done[next[i]] = true;
        p->n_fused++;
        if (fused)
            fused[k] = next[i];
    }
    /* The chain ran in the op's last kernel (the one writing its result). */
    if (fused && c.n_kernels_op > 0) {
        p->kernels[p->n_kernels - 1]->fused = fused;
        p->kernels[p->n_kernels - 1]->n_fused = k;
    }
    if (c.k) {
        cv_kp_bug(&c, "a hook returned with a kernel open");
        c.k = NULL;
    }
    if (rc && d->n_errors == errors)
        cv_cg_error(&c, CV_E_CODEGEN_FAILED, "code generation failed");
    return rc ? -1 : 0;
}

/* Returns that are not computed in place (inputs, params, views, a value
 * returned twice) are copied into their output at the end. */
static void copy_outputs(cv_kprog *p, const cv_func *f, cv_diag *d)
{
    for (int i = 0; i < f->n_returns; i++) {
        const cv_value *v = f->returns[i];
        int s = p->value_store[v->id];
        if (s >= 0 && p->stores[s].kind == CV_KST_OUTPUT && p->stores[s].index == i)
            continue;
        cv_kstore out = {.kind = CV_KST_OUTPUT, .index = i, .dtype = v->type.dtype,
                         .shape = v->type.shape};
        int o = cv_kp_add_store(p, &out);
        if (o < 0 || s < 0)
            continue;
        cv_op fake = {.func = (cv_func *)f, .name = "return", .id = -1};
        cv_codegen_ctx c = {.prog = p, .op = &fake, .diag = d, .op_index = f->n_ops};
        cv_kten src = cv_cg_tensor(&c, s, &v->type), dst = cv_cg_tensor(&c, o, &v->type);
        cv_cg_copy(&c, &dst, &src, NULL);
    }
}

static int build_body(cv_kprog *p, const cv_func *f, int blk, cv_diag *d)
{
    p->value_store = cv_kp_alloc(p, sizeof *p->value_store * (size_t)(f->n_values + 1));
    if (!p->value_store)
        return -1;
    for (int i = 0; i < f->n_values; i++)
        p->value_store[i] = -1;
    if (collect_syms(p, f) || collect_bounds(p) || check_input_exprs(p, f, d) ||
        bind_signature(p, f))
        return -1;
    int *next = cv_kp_alloc(p, sizeof *next * (size_t)(f->n_ops + 1));
    int *link = cv_kp_alloc(p, sizeof *link * (size_t)(f->n_ops + 1));
    bool *done = cv_kp_alloc(p, sizeof *done * (size_t)(f->n_ops + 1));
    if (!next || !link || !done || cv_fusion_plan(f, next, link))
        return -1;
    /* The blocked layout (passes/layout.c, codegen_nchwc.c), when planned. */
    cv_layout_plan lp;
    if (cv_layout_plan_make(f, blk, next, &lp))
        return -1;
    cv_nchwc nc = {blk, lp.op_blocked,
                   cv_kp_alloc(p, sizeof *nc.bstore * (size_t)(f->n_values + 1))};
    if (!nc.bstore) {
        cv_layout_plan_free(&lp);
        return -1;
    }
    for (int i = 0; i < f->n_values; i++)
        nc.bstore[i] = -1;
    int rc = 0;
    for (int i = 0; i < f->n_ops; i++)
        if (!done[i] && lower_op(p, f->ops[i], i, next, link, done, blk > 1 ? &nc : NULL, d))
            rc = -1;
    cv_layout_plan_free(&lp);
    if (rc == 0)
        copy_outputs(p, f, d);
    return rc;
}

int cv_kprog_build(const cv_func *f, cv_kprog **out, cv_diag *d)
{
    return cv_kprog_build_blocked(f, 0, out, d);
}

int cv_kprog_build_blocked(const cv_func *f, int blk, cv_kprog **out, cv_diag *d)
{
    return cv_kprog_build_half(f, blk, 0, out, d);
}

int cv_kprog_build_half(const cv_func *f, int blk, unsigned half, cv_kprog **out, cv_diag *d)
{
    *out = NULL;
    cv_kprog *p = calloc(1, sizeof *p);
    if (!p)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, func_span(f), "out of memory");
    cv_arena_init(&p->arena);
    p->f = f;
    p->run_tail = &p->run;
    p->name = c_identifier(p, f->name);
    p->half_weights = (half & CV_HALF_WEIGHTS) != 0;
    p->bf16_dot = p->half_weights && (half & CV_HALF_BF16_DOT);
    p->packed_b = (half & CV_HALF_PACKED_B) != 0;
    int rc = build_body(p, f, blk, d);
    if (p->oom)
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, func_span(f), "out of memory while generating code");
    else if (p->bug)
        cv_diag_error(d, CV_E_INTERNAL_ERROR, func_span(f), "internal error in code generation: %s", p->bug);
    if (rc || p->oom || p->bug || cv_memplan(p, d)) {
        cv_kprog_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void cv_kprog_free(cv_kprog *p)
{
    if (!p)
        return;
    cv_arena_free(&p->arena);
    free(p);
}
