/* Tensors known at import time: creation and element access. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

onnx_const *onnx_const_new(onnx_ctx *c, cv_dtype dt, int rank, const int64_t *dims)
{
    if (rank < 0 || rank > CV_MAX_RANK) {
        onnx_err(c, CV_E_ONNX_RANK_LIMIT, "rank %d exceeds the supported maximum of %d", rank, CV_MAX_RANK);
        return NULL;
    }
    onnx_const *k = cv_arena_alloc(c->a, sizeof *k);
    if (!k)
        return NULL;
    k->dt = dt;
    k->rank = rank;
    k->numel = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || !cv_mul_i64(k->numel, dims[i], &k->numel) ||
            k->numel > ONNX_CONST_MAX_NUMEL) {
            onnx_err(c, dims[i] < 0 ? CV_E_ONNX_INVALID_DIM : CV_E_ONNX_UNSUPPORTED_FEATURE, "a tensor computed at "
                     "import time would be negative or too large (%d elements at most)",
                     ONNX_CONST_MAX_NUMEL);
            return NULL;
        }
        k->dims[i] = dims[i];
    }
    k->data = cv_arena_alloc_array(c->a, (size_t)(k->numel ? k->numel : 1), cv_dtype_size(dt));
    return k->data ? k : NULL;
}

int64_t onnx_const_i64(const onnx_const *k, int64_t i)
{
    return cv_dtype_load_i64(k->dt, k->data, i);
}

double onnx_const_f64(const onnx_const *k, int64_t i)
{
    return cv_dtype_load(k->dt, k->data, i);
}

void onnx_const_set_i64(onnx_const *k, int64_t i, int64_t v)
{
    cv_dtype_store_i64(k->dt, k->data, i, v);
}

void onnx_const_set_f64(onnx_const *k, int64_t i, double v)
{
    cv_dtype_store(k->dt, k->data, i, v);
}

bool onnx_const_is_int(const onnx_const *k)
{
    return cv_dtype_is_int(k->dt);
}

int onnx_const_ints(const onnx_const *k, int64_t *out, int max)
{
    if (k->rank > 1 || !onnx_const_is_int(k) || k->numel > max || k->mapped)
        return -1;
    for (int64_t i = 0; i < k->numel; i++) {
        if (k->syms && k->syms[i])
            return -1;
        out[i] = onnx_const_i64(k, i);
    }
    return (int)k->numel;
}

void onnx_type_of_const(const onnx_const *k, cv_type *t)
{
    memset(t, 0, sizeof *t);
    t->dtype = k->dt;
    t->shape.rank = k->rank;
    for (int i = 0; i < k->rank; i++)
        t->shape.d[i].n = k->dims[i];
}
