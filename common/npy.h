/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian,
 * C-order arrays of f32 f64 f16 i64 i32 i8 u8 bool.  Used for calibration
 * data, test inputs and reference outputs. */
#ifndef CV_NPY_H
#define CV_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/dtype.h"

#define CV_NPY_MAX_RANK 8
/* The longest header accepted (NumPy itself refuses more than 10000 bytes
 * unless told otherwise). */
#define CV_NPY_MAX_HEADER (1u << 20)

typedef struct cv_npy {
    cv_dtype dtype;
    int rank;                       /* 0 for a scalar */
    int64_t dims[CV_NPY_MAX_RANK];
    void *data;                     /* malloc'd, owned; bool elements are 0 or 1 */
    size_t nbytes;
} cv_npy;

/* Errors: CV1101 bad magic, CV1102 malformed header, CV1103 unsupported
 * dtype or layout (big-endian, Fortran order, structured), CV1104 truncated,
 * CV1105 trailing bytes, CV9004 I/O.  *out is zeroed on failure. */
int  cv_npy_read(const char *path, cv_npy *out, cv_diag *d);
int  cv_npy_read_mem(const void *buf, size_t len, const char *name, cv_npy *out, cv_diag *d);
/* Writes format 1.0 with the header padded to 64 bytes, atomically.
 * bf16 has no NumPy dtype and is refused (CV1103). */
int  cv_npy_write(const char *path, cv_dtype dt, int rank, const int64_t *dims, const void *data,
                  cv_diag *d);
void cv_npy_free(cv_npy *n);
/* Number of elements (1 for a scalar). */
int64_t cv_npy_numel(const cv_npy *n);

#endif
