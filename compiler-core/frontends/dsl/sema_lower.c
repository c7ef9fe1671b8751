/* Building CU-IR ops through the builder.  The op's own shape function
 * (from the op table) decides whether operands fit; its diagnostics are
 * re-reported at the model source with the AST path, and weights among the
 * operands are named by their tensor in the safetensors file. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

/* The weight a value is, or is a transposed/reshaped view of; else NULL. */
static const cv_param *weight_of(const cv_value *v, bool *view)
{
    *view = false;
    for (int hops = 0; v && hops < 4; hops++) {
        if (v->kind == CV_VAL_PARAM)
            return v->param && v->param->kind == CV_PARAM_WEIGHTS ? v->param : NULL;
        const cv_op *op = v->def;
        if (v->kind != CV_VAL_RESULT || !op || !op->def || op->n_operands != 1 ||
            !((op->def->flags & CV_OPF_SHAPE_ONLY) || strcmp(op->def->name, "transpose") == 0))
            return NULL;
        *view = true;
        v = op->operands[0];
    }
    return NULL;
}

static void describe_operand(const cv_value *v, char *buf, size_t size)
{
    char t[96];
    bool view;
    const cv_param *w = weight_of(v, &view);
    cv_type_format(&v->type, t, sizeof t);
    if (w)
        snprintf(buf, size, "%sweight '%s' in %s: %s", view ? "a view of " : "", w->key, w->file, t);
    else
        snprintf(buf, size, "%s", t);
}

/* The position an op's loc names: the operator of a BinOp, else the node. */
static void op_position(const dsl_node *at, int *line, int *col)
{
    bool op_node = at->kind == DSL_N_BINOP || at->kind == DSL_N_UNARYOP ||
                   at->kind == DSL_N_AUGASSIGN || at->kind == DSL_N_COMPARE;
    *line = op_node && at->op_line ? at->op_line : at->line;
    *col = op_node && at->op_line ? at->op_col : at->col;
}

/* Moves the builder's diagnostics to the model source; returns the first id. */
static int transfer(dsl_sema *s, const dsl_node *at, const cv_op *op, const cv_diag *tmp)
{
    bool weights = false, view;
    for (int i = 0; i < op->n_operands; i++)
        weights |= weight_of(op->operands[i], &view) != NULL;
    int first = 0;
    for (int k = 0; k < tmp->n; k++) {
        const cv_diag_entry *e = &tmp->v[k];
        if (e->sev != CV_SEV_ERROR)
            continue;
        bool shape = e->code >= 3000 && e->code < 4000;
        int code = shape && weights ? CV_E_DSL_WEIGHT_SHAPE : e->code;
        /* Shape functions start their messages with the op name; we say cvl.<op>. */
        const char *msg = e->msg;
        size_t n = strlen(op->name);
        if (strncmp(msg, op->name, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
            msg += n + 2;
        int id = code == e->code
                     ? dsl_error(s, code, at, "cvl.%s: %s", op->name, msg)
                     : dsl_error(s, code, at, "a weight does not fit cvl.%s: %s (CV%04d)", op->name,
                                 msg, e->code);
        if (!id)
            continue;
        for (int j = 0; j < e->n_notes; j++)
            dsl_note(s, id, "%s", e->notes[j]);
        if (shape || e->code == CV_E_DTYPE_MISMATCH || e->code == CV_E_UNSUPPORTED_DTYPE)
            for (int i = 0; i < op->n_operands; i++) {
                char d[256];
                describe_operand(op->operands[i], d, sizeof d);
                dsl_note(s, id, "operand %d: %s", i, d);
            }
        if (!first)
            first = id;
        else
            cv_diag_set_root(s->d, id, first);
    }
    return first ? first : -1;
}

static void set_attr(cv_op *op, const dsl_attr *a)
{
    switch (a->kind) {
    case CV_ATTR_INT: cv_op_set_int(op, a->name, a->i); break;
    case CV_ATTR_FLOAT: cv_op_set_float(op, a->name, a->f); break;
    case CV_ATTR_STRING: cv_op_set_string(op, a->name, a->str); break;
    case CV_ATTR_INTS: cv_op_set_ints(op, a->name, a->ints, a->n); break;
    case CV_ATTR_FLOATS: cv_op_set_floats(op, a->name, a->floats, a->n); break;
    case CV_ATTR_DTYPE: cv_op_set_dtype(op, a->name, a->dt); break;
    default: break;
    }
}

dsl_val *dsl_emit(dsl_sema *s, const dsl_node *at, const char *opname, dsl_val **operands,
                  int n_operands, const dsl_attr *attrs, int n_attrs, int n_results)
{
    int root = dsl_v_first_error(operands, n_operands);
    if (root)
        return dsl_v_error(s, root > 0 ? root : 0);
    if (!s->f)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, at, "tensor operations can only run inside a model "
                                        "(or a helper it calls)"));
    enum { MAX_OPERANDS = 256 };
    if (n_operands > MAX_OPERANDS || n_results > MAX_OPERANDS)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TOO_LARGE, at, "more than %d operands or results", MAX_OPERANDS));
    if (++s->n_ops > DSL_MAX_OPS && !dsl_step(s, at))
        return dsl_v_error(s, s->budget_id > 0 ? s->budget_id : 0);
    cv_value *vals[MAX_OPERANDS];
    for (int i = 0; i < n_operands; i++)
        vals[i] = operands[i]->t;
    cv_op *op = cv_op_new(s->f, opname, vals, n_operands);
    int line, col;
    op_position(at, &line, &col);
    cv_op_add_loc(op, s->loc_file, line, col);
    op->span = (cv_span){s->m->path, at->line, at->col, at->end_line, at->end_col};
    for (int i = 0; i < n_attrs; i++)
        set_attr(op, &attrs[i]);
    cv_diag tmp;   /* owned here: the builder reports into it, we re-report */
    cv_diag_init(&tmp);
    int rc = cv_op_finish(op, n_results, &tmp);
    if (rc)
        root = transfer(s, at, op, &tmp);
    cv_diag_free(&tmp);
    if (rc)
        return dsl_v_error(s, root > 0 ? root : 0);
    if (n_results == 1)
        return dsl_v_tensor(s, op->results[0]);
    dsl_val **items = cv_arena_alloc_array(s->a, (size_t)n_results, sizeof *items);
    if (!items)
        return dsl_v_error(s, 0);
    for (int i = 0; i < n_results; i++)
        items[i] = dsl_v_tensor(s, op->results[i]);
    return dsl_v_seq(s, DSL_V_TUPLE, items, n_results);
}

dsl_val *dsl_scalar_tensor(dsl_sema *s, const dsl_node *at, const dsl_val *num, cv_dtype dt)
{
    if (!s->f)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, at, "tensor operations can only run inside a model"));
    if (num->kind == DSL_V_FLOAT && !cv_dtype_is_float(dt) && dt != CV_DT_INVALID)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_DTYPE_MISMATCH, at, "the float constant %g cannot combine with a "
                                        "tensor of dtype %s; use an int or cvl.cast", num->f,
                                        cv_dtype_name(dt)));
    cv_type t = {.dtype = dt};
    unsigned char buf[16] = {0};
    if (num->kind == DSL_V_FLOAT)
        cv_dtype_store(dt, buf, 0, num->f);
    else
        cv_dtype_store_i64(dt, buf, 0, num->i);
    cv_param *p = cv_func_add_dense(s->f, NULL, &t, buf, cv_dtype_size(dt));
    return dsl_v_tensor(s, p->value);
}
