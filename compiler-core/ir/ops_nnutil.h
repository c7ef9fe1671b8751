/* Internal to the nn and layout op families (ops_nn.c, ops_matmul.c,
 * ops_pool.c, ops_resize.c, ops_shape.c, ops_layout.c): attribute readers
 * that validate as they read, window arithmetic shared by conv and pooling,
 * symbolic dimension products, and byte-exact strided copies. */
#ifndef CV_OPS_NNUTIL_H
#define CV_OPS_NNUTIL_H

#include "compiler-core/ir/ops_internal.h"

/* Reads INTS attribute `name` into out[n] (dflt when absent; dflt NULL makes
 * it required here).  Reports CV3007 when the count is not n or an entry is
 * below `min`. */
int cv_nn_ints_n(cv_infer_ctx *c, const char *name, int n, const int64_t *dflt, int64_t min,
                 int64_t *out);
/* The 2-D pad attribute: [top,left,bottom,right], or [h,w] for symmetric
 * padding; absent means zeros.  Entries must be >= 0 (CV3007). */
int cv_nn_pads2d(cv_infer_ctx *c, int64_t out[4]);
/* An INT attribute (dflt when absent) that must be at least `min` (CV3007). */
int cv_nn_int_min(cv_infer_ctx *c, const char *name, int64_t dflt, int64_t min, int64_t *out);

/* The output extent of a sliding window over `in`: floor (or ceil, with the
 * PyTorch rule that the last window must start inside input + begin pad) of
 * (in + pb + pe - dil*(k-1) - 1) / stride + 1.  A symbolic `in` passes
 * through only when the window maps it onto itself; otherwise CV3009. */
int cv_nn_window_dim(cv_infer_ctx *c, const char *axis, cv_dim in, int64_t k, int64_t stride,
                     int64_t pb, int64_t pe, int64_t dil, bool ceil_mode, cv_dim *out);

/* Product of n dims: an int when all are static, the symbol when exactly one
 * is symbolic and the others multiply to 1; otherwise CV3009 (CV3004 on
 * overflow). */
int cv_nn_dim_product(cv_infer_ctx *c, const cv_dim *d, int n, cv_dim *out);
/* Requires operand i to have the given rank (CV3001). */
int cv_nn_rank(cv_infer_ctx *c, int i, int rank, const char *what);
/* Requires dim d to be static and returns it in *out (CV3009 otherwise). */
int cv_nn_static_dim(cv_infer_ctx *c, cv_dim d, const char *what, int64_t *out);

/* Writes a dim ("N" or "28") into buf and returns buf. */
const char *cv_nn_dim_fmt(cv_dim d, char *buf, size_t size);

/* Reports a run-time error for the op being evaluated and returns -1. */
int cv_nn_eval_error(cv_eval_ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Copies the elements of a rank-`rank` view of `src` (element size esize,
 * first element at src_off, per-axis strides in elements, possibly 0 or
 * negative) into the dense row-major dst of the given dims. */
void cv_nn_copy_strided(void *dst, const void *src, size_t esize, int rank, const int64_t *dims,
                        const int64_t *src_strides, int64_t src_off);

/* Resize: ONNX coordinate_transformation_mode, shared by the reference
 * kernel (ops_resize.c) and the codegen hook so both map pixels alike.
 * The enum order matches ops_resize.c's ct_names table. */
enum { CV_RESIZE_HALF_PIXEL, CV_RESIZE_ASYMMETRIC, CV_RESIZE_ALIGN_CORNERS,
       CV_RESIZE_PYTORCH_HALF_PIXEL };
/* The input coordinate of output index x along an axis of in -> out. */
double cv_resize_source_coord(int mode, double scale, int64_t x, int64_t in, int64_t out);

#endif
