/* Run-time tensors for the interpreter and the tools around it. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/ir.h"

int cv_tensor_alloc(cv_tensor *t, cv_dtype dt, int rank, const int64_t *dims)
{
    memset(t, 0, sizeof *t);
    if (rank < 0 || rank > CV_MAX_RANK || !cv_dtype_size(dt))
        return -1;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || !cv_mul_i64(n, dims[i], &n))
            return -1;
        t->dims[i] = dims[i];
    }
    int64_t bytes;
    if (!cv_mul_i64(n, (int64_t)cv_dtype_size(dt), &bytes) || (uint64_t)bytes > SIZE_MAX / 2)
        return -1;
    t->dtype = dt;
    t->rank = rank;
    t->numel = n;
    /* calloc(0) may return NULL; keep a valid pointer for empty tensors. */
    t->data = calloc(1, bytes ? (size_t)bytes : 1);
    return t->data ? 0 : -1;
}

void cv_tensor_free(cv_tensor *t)
{
    free(t->data);
    t->data = NULL;
}

size_t cv_tensor_nbytes(const cv_tensor *t)
{
    return (size_t)t->numel * cv_dtype_size(t->dtype);
}

double cv_tensor_get(const cv_tensor *t, int64_t i) { return cv_dtype_load(t->dtype, t->data, i); }
void cv_tensor_set(cv_tensor *t, int64_t i, double v) { cv_dtype_store(t->dtype, t->data, i, v); }
int64_t cv_tensor_get_i64(const cv_tensor *t, int64_t i) { return cv_dtype_load_i64(t->dtype, t->data, i); }
void cv_tensor_set_i64(cv_tensor *t, int64_t i, int64_t v) { cv_dtype_store_i64(t->dtype, t->data, i, v); }

double *cv_tensor_to_f64(const cv_tensor *t, cv_arena *a)
{
    double *v = cv_arena_alloc_array(a, (size_t)(t->numel ? t->numel : 1), sizeof *v);
    if (!v)
        return NULL;
    if (t->dtype == CV_F32) {
        const float *f = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            v[i] = f[i];
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            v[i] = cv_dtype_load(t->dtype, t->data, i);
    }
    return v;
}

void cv_tensor_from_f64(cv_tensor *t, const double *v)
{
    if (t->dtype == CV_F32) {
        float *f = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = (float)v[i];
        return;
    }
    for (int64_t i = 0; i < t->numel; i++)
        cv_dtype_store(t->dtype, t->data, i, v[i]);
}
