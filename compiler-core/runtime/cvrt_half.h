/* Internal to the runtime: -p fp16 weights read by the f32 kernels. */
#ifndef CVRT_HALF_H
#define CVRT_HALF_H

#include "compiler-core/runtime/cvrt_internal.h"

/* dst[i] = src[i] widened from f16, n values (vcvtph2ps where the target
 * has it; cvrt_half_nchwc.c). */
void cvrt_widen_f16(float *dst, const uint16_t *src, int64_t n);

/* cvrt_nchwc_conv2d on f16 weights wh (same order as wb), each task
 * widening the group of output blocks it computes into its thread's
 * buffer (cvrt_nchwc.c); -1, nothing done, where a group's f32 weights
 * exceed that buffer (cvrt_scratch_floats). */
int cvrt_nchwc_conv2d_f16(cvrt_ctx *rt, const float *x, const uint16_t *wh, const float *bias,
                          float *y, int64_t blk, int64_t ICB, int64_t CI, int64_t H, int64_t W,
                          int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                          int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                          int64_t OW, const float *res, int64_t act, float lo, float hi);

#endif
