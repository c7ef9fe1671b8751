/* safetensors files: an 8-byte little-endian header length, a JSON header
 * {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
 * {...}}, then the tensor bytes.  Files are mapped read-only. */
#ifndef CV_SAFETENSORS_H
#define CV_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/dtype.h"

#define CV_ST_MAX_RANK 8
#define CV_ST_MAX_HEADER (100u << 20)

typedef struct cv_st_tensor {
    const char *name;
    cv_dtype dtype;
    int rank;
    int64_t dims[CV_ST_MAX_RANK];
    const void *data;   /* aligned to the dtype's size (copied if the file's bytes are not) */
    size_t nbytes;
} cv_st_tensor;

typedef struct cv_safetensors cv_safetensors;   /* opaque; owns the mapping and names */

/* Errors: CV1111 malformed header (length, JSON, fields), CV1112 unsupported
 * dtype, CV1113 offsets out of the file or not matching dtype x shape,
 * CV9004 I/O.  Offsets may overlap or come in any order. */
int  cv_safetensors_open(const char *path, cv_safetensors **out, cv_diag *d);
/* Same, over bytes the caller keeps alive until close (name is for messages). */
int  cv_safetensors_open_mem(const void *buf, size_t len, const char *name, cv_safetensors **out,
                             cv_diag *d);
int  cv_safetensors_count(const cv_safetensors *st);
/* Tensors are ordered by name (bytewise). */
const cv_st_tensor *cv_safetensors_at(const cv_safetensors *st, int i);
const cv_st_tensor *cv_safetensors_find(const cv_safetensors *st, const char *name);
void cv_safetensors_close(cv_safetensors *st);
/* Writes tensors in the given order, header keys sorted and padded to 8
 * bytes; nbytes must equal dtype size x shape (CV1113). */
int  cv_safetensors_write(const char *path, const cv_st_tensor *tensors, int n, cv_diag *d);

#endif
