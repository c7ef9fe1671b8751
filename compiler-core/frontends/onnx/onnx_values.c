/* ONNX value names during import: what each stands for (a CU-IR value, a
 * constant, or both), CU-IR identifiers and symbols derived from ONNX
 * names, node inputs and outputs, and ValueInfo types. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

onnx_val *onnx_val_get(onnx_ctx *c, const char *name)
{
    onnx_val *v = onnx_map_get(&c->vals, name);
    for (int i = c->n_outer - 1; !v && i >= 0; i--)
        v = onnx_map_get(c->outer[i], name);
    return v;
}

onnx_val *onnx_val_new(onnx_ctx *c, const char *name, int producer)
{
    onnx_val *v = cv_arena_alloc(c->a, sizeof *v);
    const char *key = v ? cv_arena_strdup(c->a, name) : NULL;
    if (!key)
        return NULL;
    v->name = key;
    v->producer = producer;
    return onnx_map_put(&c->vals, key, v) == 1 ? v : NULL;
}

int onnx_n_in(const onnx_ctx *c)
{
    return (int)c->node->n_input;
}

onnx_val *onnx_in(onnx_ctx *c, int i)
{
    if (i < 0 || (size_t)i >= c->node->n_input || !c->node->input[i][0])
        return NULL;
    return onnx_val_get(c, c->node->input[i]);
}

/* Keeps [A-Za-z0-9_.] and maps everything else to '_', so that the CU-IR
 * text form can name the value. */
static char *sanitize(onnx_ctx *c, const char *name, const char *fallback)
{
    size_t n = strlen(name);
    if (n == 0 || n > 200) {
        name = fallback;
        n = strlen(name);
    }
    char *s = cv_arena_strndup(c->a, name, n);
    for (size_t i = 0; s && i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
        if (!ok)
            s[i] = '_';
    }
    return s;
}

const char *onnx_ident(onnx_ctx *c, const char *name)
{
    const char *base = sanitize(c, name, "v");
    if (!base)
        return NULL;
    if (!cv_func_find_value(c->f, base))
        return base;
    char buf[240];
    for (int k = 1;; k++) {
        snprintf(buf, sizeof buf, "%s_%d", base, k);
        if (!cv_func_find_value(c->f, buf))
            return cv_module_intern(c->m, buf, strlen(buf));
    }
}

const char *onnx_symbol(onnx_ctx *c, const char *dim_param)
{
    if (dim_param && *dim_param) {
        const char *s = onnx_map_get(&c->syms, dim_param);
        if (s)
            return s;
    }
    char buf[64];
    const char *sym;
    if (dim_param && *dim_param) {
        char *t = sanitize(c, dim_param, "d");
        if (!t)
            return NULL;
        if (t[0] >= '0' && t[0] <= '9')
            t[0] = '_';
        sym = cv_module_intern(c->m, t, strlen(t));
    } else {
        snprintf(buf, sizeof buf, "unk%d", c->next_sym++);
        sym = cv_module_intern(c->m, buf, strlen(buf));
    }
    if (dim_param && *dim_param && sym)
        onnx_map_put(&c->syms, cv_arena_strdup(c->a, dim_param), (void *)sym);
    return sym;
}

int onnx_type_from_proto(onnx_ctx *c, const Onnx__TypeProto *tp, const char *what, cv_type *out)
{
    memset(out, 0, sizeof *out);
    if (!tp)
        return onnx_err(c, CV_E_ONNX_MISSING_TYPE, "'%s' has no type", what);
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE)
        return onnx_err(c, CV_E_ONNX_SPARSE_TENSOR, "'%s' is a sparse tensor (not supported)", what);
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return onnx_err(c, CV_E_ONNX_NON_TENSOR, "'%s' is a sequence, map or optional (only tensors "
                        "are supported)", what);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    out->dtype = onnx_dtype(tt->elem_type);
    if (out->dtype == CV_DT_INVALID)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "'%s' has element type %s, which CU-IR lacks",
                        what, onnx_dtype_name(tt->elem_type));
    if (!tt->shape)
        return onnx_err(c, CV_E_ONNX_MISSING_TYPE, "'%s' has no shape", what);
    if (tt->shape->n_dim > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_RANK_LIMIT, "'%s' has rank %zu (at most %d)", what,
                        tt->shape->n_dim, CV_MAX_RANK);
    out->shape.rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dim->dim_value < 0)
                return onnx_err(c, CV_E_ONNX_INVALID_DIM, "'%s' has a negative dimension (%" PRId64 ")",
                                what, dim->dim_value);
            out->shape.d[i].n = dim->dim_value;
        } else {
            bool named = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            const int64_t *fixed = named ? onnx_map_get(&c->sym_values, dim->dim_param) : NULL;
            if (fixed)
                out->shape.d[i].n = *fixed;
            else
                out->shape.d[i].sym = onnx_symbol(c, named ? dim->dim_param : NULL);
        }
    }
    int64_t n = 1;
    for (int i = 0; i < out->shape.rank; i++)
        if (!out->shape.d[i].sym && !cv_mul_i64(n, out->shape.d[i].n, &n))
            return onnx_err(c, CV_E_ONNX_INVALID_DIM, "'%s' has an element count that overflows", what);
    return 0;
}

/* Smaller constants are copied into the arena as before. */
enum { TAKE_MIN = 4096 };

cv_value *onnx_materialize(onnx_ctx *c, onnx_val *v)
{
    if (v->kind != ONNX_VAL_TENSOR) {
        onnx_err(c, CV_E_ONNX_NON_TENSOR, "'%s' is a sequence or optional where a tensor is needed",
                 v->name);
        return NULL;
    }
    if (v->v || !v->c)
        return v->v;
    const onnx_const *k = v->c;
    if (k->syms)
        for (int64_t i = 0; i < k->numel; i++)
            if (k->syms[i]) {
                onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "'%s' depends on the symbolic dimension %s, "
                         "which CU-IR cannot use as data", v->name, k->syms[i]);
                return NULL;
            }
    cv_type t;
    onnx_type_of_const(k, &t);
    const char *id = onnx_ident(c, v->name);
    size_t nbytes = (size_t)k->numel * cv_dtype_size(k->dt);
    /* A large initializer's bytes were copied once already, by protobuf-c's
     * unpacking: the module keeps that buffer (the proto forgets it) rather
     * than a second copy, a retrain's largest copy after the file's own. */
    bool take = !k->mapped && k->own && *k->own == k->data && nbytes >= TAKE_MIN;
    cv_param *p = id ? cv_func_add_dense(c->f, id, &t, k->data, k->mapped || take ? 0 : nbytes)
                     : NULL;
    if (p && take) {
        *k->own = NULL;      /* the proto's free skips it; the module frees it */
        if (cv_module_own(c->m, free, k->data) != 0)
            p = NULL;
    }
    if (!p) {
        onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory adding constant '%s'", v->name);
        return NULL;
    }
    if (k->mapped || take) {
        p->data = k->data;   /* the module's mapping of the file, or the taken buffer */
        p->nbytes = nbytes;
    }
    v->v = p->value;
    return v->v;
}

cv_value *onnx_in_value(onnx_ctx *c, int i)
{
    onnx_val *v = onnx_in(c, i);
    if (!v) {
        onnx_err(c, CV_E_ONNX_ARITY, "input %d is required", i);
        return NULL;
    }
    return onnx_materialize(c, v);
}

/* The generic fold: a value the graph computes from constants alone
 * (shape arithmetic in whatever form an exporter wrote it: Where over
 * Equal, Mod, ConstantOfShape...) is run through the reference interpreter
 * once, and is a constant from then on. */
static onnx_const *eval_constant(onnx_ctx *c, onnx_val *v)
{
    if (!v->v)
        return NULL;
    cv_tensor t;
    if (cv_interp_eval_value(c->f, v->v, ONNX_CONST_MAX_NUMEL, &t) != 0)
        return NULL;
    onnx_const *k = onnx_const_new(c, t.dtype, t.rank, t.dims);
    if (k)
        memcpy(k->data, t.data, cv_tensor_nbytes(&t));
    cv_tensor_free(&t);
    return k;
}

const onnx_const *onnx_in_const(onnx_ctx *c, int i, const char *role)
{
    onnx_val *v = onnx_in(c, i);
    if (!v)
        return NULL;
    if (!v->c && !v->not_const && !(v->c = eval_constant(c, v)))
        v->not_const = true;
    if (!v->c && role)
        onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "input %d (%s, '%s') is computed at run time; CU-IR "
                 "needs it at import time", i, role, v->name);
    return v->c;
}

static onnx_val *out_val(onnx_ctx *c, int i)
{
    if (i < 0 || (size_t)i >= c->node->n_output || !c->node->output[i][0])
        return NULL;
    return onnx_val_get(c, c->node->output[i]);
}

int onnx_bind_value(onnx_ctx *c, int i, cv_value *v)
{
    onnx_val *o = out_val(c, i);
    if (!o)
        return 0;   /* an optional output nobody reads */
    if (!v)
        return -1;
    o->v = v;
    o->type = v->type;
    return 0;
}

int onnx_bind_const(onnx_ctx *c, int i, onnx_const *k)
{
    onnx_val *o = out_val(c, i);
    if (!o)
        return 0;
    if (!k)
        return -1;
    o->c = k;
    onnx_type_of_const(k, &o->type);
    return 0;
}

int onnx_ints_arg(onnx_ctx *c, int input, const char *attr, int input_since, int64_t *out, int max)
{
    if (c->opset < input_since)
        return onnx_attr_ints(c, attr, out, max);
    if (!onnx_in(c, input))
        return -1;
    const onnx_const *k = onnx_in_const(c, input, attr);
    if (!k)
        return -2;
    int n = onnx_const_ints(k, out, max);
    if (n < 0) {
        onnx_err(c, k->numel > max ? CV_E_ONNX_ATTRIBUTE_VALUE : CV_E_ONNX_DATA_DEPENDENT_SHAPE,
                 "'%s' must be a list of at most %d known integers", attr, max);
        return -2;
    }
    return n;
}
