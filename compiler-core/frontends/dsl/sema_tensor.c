/* Python operators and members on tensors: + - * / ** @ and comparisons
 * map to elementwise/matmul ops (numbers become constants of the tensor's
 * dtype); .T .shape .ndim .dtype; constant indexing and slicing. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

static const struct { dsl_exop op; const char *name; } binop_ops[] = {
    {DSL_X_ADD, "add"}, {DSL_X_SUB, "sub"}, {DSL_X_MUL, "mul"}, {DSL_X_DIV, "div"},
    {DSL_X_POW, "pow"}, {DSL_X_MATMUL, "matmul"}, {DSL_X_LT, "less"}, {DSL_X_GT, "greater"},
    {DSL_X_EQ, "equal"},
};

static const char *op_for(dsl_exop op)
{
    for (size_t i = 0; i < sizeof binop_ops / sizeof binop_ops[0]; i++)
        if (binop_ops[i].op == op && cv_op_def_lookup(binop_ops[i].name))
            return binop_ops[i].name;
    return NULL;
}

dsl_val *dsl_tensor_binop(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *l, dsl_val *r)
{
    const char *name = op_for(op);
    if (!name)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, at, "the operator %s is not supported on tensors",
                                        dsl_exop_text(op)));
    dsl_val *side[2] = {l, r};
    const dsl_val *tensor = l->kind == DSL_V_TENSOR ? l : r;
    for (int i = 0; i < 2; i++) {
        if (side[i]->kind == DSL_V_TENSOR)
            continue;
        if (dsl_v_is_number(side[i]) && op != DSL_X_MATMUL) {
            side[i] = dsl_scalar_tensor(s, at, side[i], tensor->t->type.dtype);
            if (side[i]->kind == DSL_V_ERROR)
                return side[i];
            continue;
        }
        char d[96];
        dsl_v_describe(side[i], d, sizeof d);
        return dsl_v_error(s, dsl_error(s, side[i]->kind == DSL_V_DIM ? CV_E_DSL_SYMBOLIC_DIM : CV_E_DSL_TYPE_ERROR, at,
                                        "the operator %s cannot combine a tensor with %s",
                                        dsl_exop_text(op), d));
    }
    return dsl_emit(s, at, name, side, 2, NULL, 0, 1);
}

dsl_val *dsl_tensor_unop(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *v)
{
    if (op == DSL_X_POS)
        return v;
    if (op == DSL_X_NEG)
        return dsl_emit(s, at, "neg", &v, 1, NULL, 0, 1);
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, at, "the operator %s is not supported on tensors",
                                    dsl_exop_text(op)));
}

dsl_val *dsl_tensor_member(dsl_sema *s, const dsl_node *at, dsl_val *t, const char *name)
{
    const cv_shape *sh = &t->t->type.shape;
    if (strcmp(name, "T") == 0) {
        if (sh->rank < 2)
            return t;
        dsl_attr perm = {.name = "perm", .kind = CV_ATTR_INTS, .n = sh->rank};
        perm.ints = cv_arena_alloc_array(s->a, (size_t)sh->rank, sizeof *perm.ints);
        if (!perm.ints)
            return dsl_v_error(s, 0);
        for (int i = 0; i < sh->rank; i++)
            perm.ints[i] = sh->rank - 1 - i;
        return dsl_emit(s, at, "transpose", &t, 1, &perm, 1, 1);
    }
    if (strcmp(name, "shape") == 0) {
        dsl_val *dims[CV_MAX_RANK];
        for (int i = 0; i < sh->rank; i++)
            dims[i] = dsl_v_dim(s, sh->d[i]);
        return dsl_v_seq(s, DSL_V_TUPLE, dims, sh->rank);
    }
    if (strcmp(name, "ndim") == 0)
        return dsl_v_int(s, sh->rank);
    if (strcmp(name, "dtype") == 0) {
        dsl_val *v = dsl_v_new(s, DSL_V_DTYPE);
        if (v->kind == DSL_V_DTYPE)
            v->dt = t->t->type.dtype;
        return v;
    }
    static const char *const members[] = {"T", "shape", "ndim", "dtype"};
    const char *hint = dsl_suggest(name, members, 4);
    if (cv_op_def_lookup(name))
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNKNOWN_MEMBER, at, "a tensor has no method '%s'; write cvl.%s(x, ...)",
                                        name, name));
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNKNOWN_MEMBER, at, "a tensor has no member '%s'%s%s%s (it has T, "
                                    "shape, ndim and dtype)", name, hint ? "; did you mean '" : "",
                                    hint ? hint : "", hint ? "'?" : ""));
}

/* ---- indexing ------------------------------------------------------------- */

typedef struct slice_plan {
    int64_t starts[CV_MAX_RANK], ends[CV_MAX_RANK], axes[CV_MAX_RANK], steps[CV_MAX_RANK];
    int n;
    int64_t squeeze[CV_MAX_RANK];
    int n_squeeze;
} slice_plan;

static int plan_int(dsl_sema *s, const dsl_index *ix, cv_dim dim, int axis, slice_plan *p)
{
    int64_t i = ix->i;
    if (!dim.sym && (i < -dim.n || i >= dim.n))
        return dsl_error(s, CV_E_DSL_INDEX_ERROR, ix->node, "index %lld is out of range for axis %d of size %lld",
                         (long long)i, axis, (long long)dim.n);
    if (!dim.sym && i < 0)
        i += dim.n;
    p->starts[p->n] = i;
    p->ends[p->n] = i == -1 ? INT64_MAX : i + 1;
    p->axes[p->n] = axis;
    p->steps[p->n++] = 1;
    p->squeeze[p->n_squeeze++] = axis;
    return 0;
}

static void plan_slice(const dsl_index *ix, int axis, slice_plan *p)
{
    if (!ix->has_lo && !ix->has_hi && ix->step == 1)
        return;  /* a full slice: nothing to do on this axis */
    p->starts[p->n] = ix->has_lo ? ix->lo : ix->step > 0 ? 0 : INT64_MAX;
    p->ends[p->n] = ix->has_hi ? ix->hi : ix->step > 0 ? INT64_MAX : INT64_MIN;
    p->axes[p->n] = axis;
    p->steps[p->n++] = ix->step;
}

static dsl_attr ints_attr(dsl_sema *s, const char *name, const int64_t *v, int n)
{
    dsl_attr a = {.name = name, .kind = CV_ATTR_INTS, .n = n};
    a.ints = cv_arena_memdup(s->a, v, (size_t)n * sizeof *v);
    return a;
}

dsl_val *dsl_tensor_index(dsl_sema *s, const dsl_node *at, dsl_val *t, const dsl_index *ix, int n)
{
    const cv_shape *sh = &t->t->type.shape;
    int real = 0, ellipses = 0;
    for (int i = 0; i < n; i++) {
        if (ix[i].kind == DSL_IX_NEWAXIS)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, ix[i].node, "None (a new axis) in an index is not "
                                            "supported; use cvl.unsqueeze"));
        real += ix[i].kind == DSL_IX_INT || ix[i].kind == DSL_IX_SLICE;
        ellipses += ix[i].kind == DSL_IX_ELLIPSIS;
    }
    if (ellipses > 1)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_INDEX_ERROR, at->b, "an index can only have one '...'"));
    if (real > sh->rank)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_INDEX_ERROR, at->b, "%d indices for a tensor of rank %d", real,
                                        sh->rank));
    slice_plan p = {.n = 0};
    int axis = 0;
    for (int i = 0; i < n; i++) {
        if (ix[i].kind == DSL_IX_ELLIPSIS) {
            axis += sh->rank - real;
        } else if (ix[i].kind == DSL_IX_INT) {
            int id = plan_int(s, &ix[i], sh->d[axis], axis, &p);
            if (id)
                return dsl_v_error(s, id);
            axis++;
        } else {
            plan_slice(&ix[i], axis++, &p);
        }
    }
    dsl_val *v = t;
    if (p.n) {
        dsl_attr a[4] = {ints_attr(s, "starts", p.starts, p.n), ints_attr(s, "ends", p.ends, p.n),
                         ints_attr(s, "axes", p.axes, p.n), ints_attr(s, "steps", p.steps, p.n)};
        v = dsl_emit(s, at, "slice", &v, 1, a, 4, 1);
    }
    if (p.n_squeeze && v->kind == DSL_V_TENSOR) {
        dsl_attr a = ints_attr(s, "axes", p.squeeze, p.n_squeeze);
        v = dsl_emit(s, at, "squeeze", &v, 1, &a, 1, 1);
    }
    return v;
}
