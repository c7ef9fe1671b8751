#include "common/nbytes.h"

int cv_shape_nbytes(cv_dtype dt, int rank, const int64_t *dims, int64_t *numel, size_t *nbytes)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return -1;
        if (__builtin_mul_overflow(n, dims[i], &n))
            return -2;
    }
    size_t bytes;
    if (__builtin_mul_overflow((uint64_t)n, (uint64_t)cv_dtype_size(dt), &bytes) ||
        bytes > (size_t)PTRDIFF_MAX)
        return -2;
    *numel = n;
    *nbytes = bytes;
    return 0;
}
