/* Byte size of a dense tensor, with every multiplication checked: file
 * readers take shapes from untrusted headers. */
#ifndef CV_NBYTES_H
#define CV_NBYTES_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"

/* Returns 0 and sets *numel and *nbytes; -1 if a dimension is negative,
 * -2 if the element count or byte size overflows. */
int cv_shape_nbytes(cv_dtype dt, int rank, const int64_t *dims, int64_t *numel, size_t *nbytes);

#endif
