/* The reference interpreter: runs a verified function op by op with each
 * op's reference kernel.  It is the oracle every backend is tested against,
 * so it favours obviousness over speed; intermediates are freed after their
 * last use so that real models (resnet18) fit comfortably. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/ir.h"

typedef struct interp {
    const cv_func *f;
    cv_diag *d;
    cv_tensor *vals;    /* by value id; data owned when owned[id] */
    bool *owned;
    int *last_use;      /* op index of the last use; n_ops for returned values */
    const char **sym_name;
    int64_t *sym_val;
    int n_syms;
} interp;

static cv_span func_span(const cv_func *f)
{
    cv_span s = f->span;
    if (!s.file)
        s.file = f->module->path;
    return s;
}

static int bind_dim(interp *it, const char *sym, int64_t v, const char *input)
{
    for (int i = 0; i < it->n_syms; i++)
        if (strcmp(it->sym_name[i], sym) == 0) {
            if (it->sym_val[i] == v)
                return 0;
            return cv_diag_fail(it->d, CV_E_RUNTIME_SHAPE, func_span(it->f),
                                "input %%%s binds %s = %lld but an earlier input bound %s = %lld",
                                input, sym, (long long)v, sym, (long long)it->sym_val[i]);
        }
    it->sym_name[it->n_syms] = sym;
    it->sym_val[it->n_syms++] = v;
    return 0;
}

static int bind_input(interp *it, const cv_value *v, const cv_tensor *t)
{
    char want[192];
    cv_type_format(&v->type, want, sizeof want);
    if (t->dtype != v->type.dtype)
        return cv_diag_fail(it->d, CV_E_INPUT_MISMATCH, func_span(it->f), "input %%%s must be %s, got %s data",
                            v->name, want, cv_dtype_name(t->dtype));
    if (t->rank != v->type.shape.rank)
        return cv_diag_fail(it->d, CV_E_RUNTIME_SHAPE, func_span(it->f), "input %%%s must be %s, got rank %d",
                            v->name, want, t->rank);
    for (int i = 0; i < t->rank; i++) {
        cv_dim dim = v->type.shape.d[i];
        if (cv_dim_is_symbol(dim)) {
            if (bind_dim(it, dim.sym, t->dims[i], v->name))
                return -1;
        } else if (!dim.sym && dim.n != t->dims[i]) {
            return cv_diag_fail(it->d, CV_E_RUNTIME_SHAPE, func_span(it->f),
                                "input %%%s must be %s, got %lld in dimension %d", v->name,
                                want, (long long)t->dims[i], i);
        }
    }
    it->vals[v->id] = *t;
    return 0;
}

static bool lookup_sym(void *ctx, const char *sym, int64_t *v)
{
    const interp *it = ctx;
    for (int i = 0; i < it->n_syms; i++)
        if (strcmp(it->sym_name[i], sym) == 0) {
            *v = it->sym_val[i];
            return true;
        }
    return false;
}

/* Input dims that are expressions (f32[2*N]) are checked once every bare
 * symbol is bound: each of their symbols must also appear bare somewhere. */
static int check_input_exprs(interp *it, const cv_value *v, const cv_tensor *t)
{
    for (int i = 0; i < t->rank; i++) {
        cv_dim dim = v->type.shape.d[i];
        int64_t want;
        if (!cv_dim_is_expr(dim))
            continue;
        if (cv_dim_eval(dim, lookup_sym, it, &want))
            return cv_diag_fail(it->d, CV_E_RUNTIME_SHAPE, func_span(it->f),
                                "input %%%s: dimension %d (%s) uses a symbol that no input "
                                "binds by itself", v->name, i, dim.sym);
        if (want != t->dims[i])
            return cv_diag_fail(it->d, CV_E_RUNTIME_SHAPE, func_span(it->f),
                                "input %%%s: dimension %d must be %s = %lld, got %lld", v->name,
                                i, dim.sym, (long long)want, (long long)t->dims[i]);
    }
    return 0;
}

/* A result's run-time dims must be its declared symbolic dims evaluated:
 * a shape function that disagrees with itself at run time is a bug. */
static int check_result_dims(interp *it, const cv_op *op, int r, const cv_type *got)
{
    const cv_type *decl = &op->results[r]->type;
    for (int i = 0; i < decl->shape.rank && i < got->shape.rank; i++) {
        int64_t want;
        if (!decl->shape.d[i].sym || cv_dim_eval(decl->shape.d[i], lookup_sym, it, &want))
            continue;
        if (want != got->shape.d[i].n)
            return cv_diag_fail(it->d, CV_E_INTERNAL_ERROR, cv_op_span(op),
                                "%s: result %d dimension %d is %lld at run time, but its type "
                                "says %s = %lld", op->name, r, i, (long long)got->shape.d[i].n,
                                decl->shape.d[i].sym, (long long)want);
    }
    return 0;
}

static int bind_param(interp *it, const cv_param *p)
{
    const cv_value *v = p->value;
    cv_tensor *t = &it->vals[v->id];
    int64_t n = cv_shape_numel(&v->type.shape);
    if (!p->data || n < 0 || (size_t)n * cv_dtype_size(v->type.dtype) != p->nbytes)
        return cv_diag_fail(it->d, CV_E_WEIGHTS_MISSING, p->span.line ? p->span : func_span(it->f),
                            "param %%%s has no loaded data of its declared size", v->name);
    t->dtype = v->type.dtype;
    t->rank = v->type.shape.rank;
    for (int i = 0; i < t->rank; i++)
        t->dims[i] = v->type.shape.d[i].n;
    t->numel = n;
    t->data = p->data;
    return 0;
}

static void compute_last_use(interp *it)
{
    const cv_func *f = it->f;
    for (int i = 0; i < f->n_values; i++)
        it->last_use[i] = -1;
    for (int i = 0; i < f->n_ops; i++)
        for (int k = 0; k < f->ops[i]->n_operands; k++)
            it->last_use[f->ops[i]->operands[k]->id] = i;
    for (int i = 0; i < f->n_returns; i++)
        it->last_use[f->returns[i]->id] = f->n_ops;
}

static void tensor_type(const cv_tensor *t, cv_type *ty)
{
    memset(ty, 0, sizeof *ty);
    ty->dtype = t->dtype;
    ty->shape.rank = t->rank;
    for (int i = 0; i < t->rank; i++)
        ty->shape.d[i].n = t->dims[i];
}

static int run_op(interp *it, const cv_op *op)
{
    enum { MAXIO = 64 };
    if (op->n_operands > MAXIO || op->n_results > MAXIO)
        return cv_diag_fail(it->d, CV_E_RESOURCE_LIMIT, cv_op_span(op), "op %s has too many operands", op->name);
    cv_type in[MAXIO], out[MAXIO];
    const cv_tensor *ins[MAXIO];
    for (int k = 0; k < op->n_operands; k++) {
        ins[k] = &it->vals[op->operands[k]->id];
        tensor_type(ins[k], &in[k]);
    }
    memset(out, 0, sizeof out);
    if (cv_infer_op_bound(op, in, out, op->func->module, lookup_sym, it, it->d))
        return -1;
    for (int r = 0; r < op->n_results; r++)
        if (check_result_dims(it, op, r, &out[r]))
            return -1;
    cv_tensor res[MAXIO];
    for (int r = 0; r < op->n_results; r++) {
        int64_t dims[CV_MAX_RANK];
        for (int i = 0; i < out[r].shape.rank; i++)
            dims[i] = out[r].shape.d[i].n;
        if (!cv_shape_is_static(&out[r].shape) ||
            cv_tensor_alloc(&res[r], out[r].dtype, out[r].shape.rank, dims)) {
            for (int q = 0; q < r; q++)
                cv_tensor_free(&res[q]);
            return cv_diag_fail(it->d, CV_E_OUT_OF_MEMORY, cv_op_span(op),
                                "cannot allocate the result of %s", op->name);
        }
    }
    cv_arena scratch;
    cv_arena_init(&scratch);
    cv_eval_ctx c = {.op = op, .in = ins, .n_in = op->n_operands, .out = res,
                     .n_out = op->n_results, .scratch = &scratch, .diag = it->d,
                     .look = lookup_sym, .look_ctx = it};
    int errors_before = it->d->n_errors;
    int rc = op->def->eval ? op->def->eval(&c) : -1;
    cv_arena_free(&scratch);
    if (rc) {
        if (it->d->n_errors == errors_before) {
            char path[256];
            cv_op_path(op, path, sizeof path);
            cv_diag_add(it->d, CV_SEV_ERROR, op->def->eval ? CV_E_INTERNAL_ERROR : CV_E_UNSUPPORTED_ATTRIBUTE_VALUE, cv_op_span(op), path,
                        "%s: %s", op->name,
                        op->def->eval ? "kernel failed" : "no reference kernel for this op");
        }
        for (int r = 0; r < op->n_results; r++)
            cv_tensor_free(&res[r]);
        return -1;
    }
    for (int r = 0; r < op->n_results; r++) {
        it->vals[op->results[r]->id] = res[r];
        it->owned[op->results[r]->id] = true;
    }
    return 0;
}

static void release_dead(interp *it, int op_index)
{
    const cv_op *op = it->f->ops[op_index];
    for (int k = 0; k < op->n_operands; k++) {
        int id = op->operands[k]->id;
        if (it->owned[id] && it->last_use[id] == op_index) {
            cv_tensor_free(&it->vals[id]);
            it->owned[id] = false;
        }
    }
    for (int r = 0; r < op->n_results; r++) {
        int id = op->results[r]->id;
        if (it->owned[id] && it->last_use[id] < 0) {
            cv_tensor_free(&it->vals[id]);
            it->owned[id] = false;
        }
    }
}

static int copy_tensor(cv_tensor *dst, const cv_tensor *src)
{
    if (cv_tensor_alloc(dst, src->dtype, src->rank, src->dims))
        return -1;
    memcpy(dst->data, src->data, cv_tensor_nbytes(src));
    return 0;
}

static int take_outputs(interp *it, cv_tensor *outputs)
{
    const cv_func *f = it->f;
    for (int i = 0; i < f->n_returns; i++) {
        int id = f->returns[i]->id;
        if (it->owned[id]) {
            outputs[i] = it->vals[id];
            it->owned[id] = false;
        } else if (copy_tensor(&outputs[i], &it->vals[id])) {
            for (int k = 0; k < i; k++)
                cv_tensor_free(&outputs[k]);
            return cv_diag_fail(it->d, CV_E_OUT_OF_MEMORY, func_span(f), "cannot allocate output %d", i);
        }
    }
    return 0;
}

static int interp_body(interp *it, const cv_tensor *inputs, int n_inputs, cv_tensor *outputs)
{
    const cv_func *f = it->f;
    if (n_inputs != f->n_inputs)
        return cv_diag_fail(it->d, CV_E_INPUT_MISMATCH, func_span(f), "model @%s takes %d inputs, got %d",
                            f->name, f->n_inputs, n_inputs);
    for (int i = 0; i < f->n_inputs; i++)
        if (bind_input(it, f->inputs[i], &inputs[i]))
            return -1;
    for (int i = 0; i < f->n_inputs; i++)
        if (check_input_exprs(it, f->inputs[i], &inputs[i]))
            return -1;
    if (cv_func_check_facts(f, lookup_sym, it, it->d))
        return -1;
    for (int i = 0; i < f->n_params; i++)
        if (bind_param(it, f->params[i]))
            return -1;
    compute_last_use(it);
    for (int i = 0; i < f->n_ops; i++) {
        if (run_op(it, f->ops[i]))
            return -1;
        release_dead(it, i);
    }
    return take_outputs(it, outputs);
}

int cv_interp_run(const cv_func *f, const cv_tensor *inputs, int n_inputs,
                  cv_tensor *outputs, cv_diag *d)
{
    interp it = {.f = f, .d = d};
    size_t nv = (size_t)f->n_values + 1, ns = (size_t)f->n_inputs * CV_MAX_RANK + 1;
    it.vals = calloc(nv, sizeof *it.vals);
    it.owned = calloc(nv, sizeof *it.owned);
    it.last_use = calloc(nv, sizeof *it.last_use);
    it.sym_name = calloc(ns, sizeof *it.sym_name);
    it.sym_val = calloc(ns, sizeof *it.sym_val);
    int rc = -1;
    if (it.vals && it.owned && it.last_use && it.sym_name && it.sym_val)
        rc = interp_body(&it, inputs, n_inputs, outputs);
    else
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, func_span(f), "out of memory starting the interpreter");
    for (int i = 0; it.owned && i < f->n_values; i++)
        if (it.owned[i])
            cv_tensor_free(&it.vals[i]);
    free(it.vals);
    free(it.owned);
    free(it.last_use);
    free(it.sym_name);
    free(it.sym_val);
    return rc;
}

/* ---- import-time evaluation ------------------------------------------------ */

/* Marks the ops v depends on; false when that cone reaches a function input
 * or a value whose shape is not static (then v is not a constant). */
static bool mark_cone(const cv_func *f, const cv_value *v, bool *need, int *budget)
{
    if (v->kind == CV_VAL_INPUT || !cv_shape_is_static(&v->type.shape))
        return false;
    if (v->kind == CV_VAL_PARAM)
        return v->param && (v->param->data || v->param->kind == CV_PARAM_DENSE);
    const cv_op *op = v->def;
    if (!op || !op->def || !op->def->eval || --*budget < 0)
        return false;
    for (int i = 0; i < op->n_attrs; i++)   /* range(P, P + 1): static, yet symbolic */
        if (op->attrs[i].kind == CV_ATTR_DIMS)
            return false;
    if (need[op->id])
        return true;
    need[op->id] = true;
    for (int k = 0; k < op->n_operands; k++)
        if (!mark_cone(f, op->operands[k], need, budget))
            return false;
    return true;
}

int cv_interp_eval_value(const cv_func *f, const cv_value *v, int64_t max_numel, cv_tensor *out)
{
    enum { CONE_MAX_OPS = 4096 };
    int budget = CONE_MAX_OPS;
    bool *need = calloc((size_t)f->n_ops + 1, sizeof *need);
    if (!need)
        return -1;
    int rc = 1;
    if (!mark_cone(f, v, need, &budget)) {
        free(need);
        return 1;
    }
    cv_diag d;
    cv_diag_init(&d);
    interp it = {.f = f, .d = &d};
    size_t nv = (size_t)f->n_values + 1;
    it.vals = calloc(nv, sizeof *it.vals);
    it.owned = calloc(nv, sizeof *it.owned);
    it.last_use = calloc(nv, sizeof *it.last_use);
    rc = (it.vals && it.owned && it.last_use) ? 0 : -1;
    for (int i = 0; rc == 0 && i < f->n_params; i++) {
        const cv_value *pv = f->params[i]->value;
        bool used = false;
        for (int o = 0; o < f->n_ops && !used; o++)
            for (int k = 0; need[o] && k < f->ops[o]->n_operands && !used; k++)
                used = f->ops[o]->operands[k] == pv;
        if ((used || pv == v) && bind_param(&it, f->params[i]))
            rc = -1;
    }
    for (int i = 0; rc == 0 && i < f->n_ops; i++) {
        if (!need[i])
            continue;
        for (int r = 0; r < f->ops[i]->n_results; r++)
            if (cv_shape_numel(&f->ops[i]->results[r]->type.shape) > max_numel)
                rc = 1;
        if (rc == 0 && run_op(&it, f->ops[i]))
            rc = -1;
    }
    if (rc == 0 && copy_tensor(out, &it.vals[v->id]))
        rc = -1;
    for (int i = 0; it.owned && i < f->n_values; i++)
        if (it.owned[i])
            cv_tensor_free(&it.vals[i]);
    free(it.vals);
    free(it.owned);
    free(it.last_use);
    free(need);
    cv_diag_free(&d);
    return rc;
}
