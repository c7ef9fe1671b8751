/* Internal to the backend: convolutions and fully connected layers whose
 * weights are stored in a 16-bit float type (-p fp16 / bf16,
 * passes/quantize_half.c), run by the f32 GEMM from a compile-time P8 form
 * in that type, or by dot products that widen the rows (codegen_half.c). */
#ifndef CV_CODEGEN_HALF_H
#define CV_CODEGEN_HALF_H

#include <stddef.h>
#include <stdint.h>

#include "compiler-core/backend/kernel.h"

/* The P8 form of each group's OCg x K matrix (rows in panels of 8, k-major
 * inside a panel, zero rows up to a multiple of 8) of src, elements of
 * esz bytes, into dst (groups * ceil(OCg/8)*8 * K elements, zeroed). */
void cv_cg_pack_p8(void *dst, const void *src, size_t esz, int64_t groups, int64_t ocg,
                   int64_t k);

/* For a conv2d hook: when operand 1 is cast(f16 or bf16 constant) -> f32
 * and the convolution runs on the GEMM (see cv_cg_conv2d), the P8 form of
 * the 16-bit weights as a constant in *out, with the runtime's CVRT_W_*
 * kind in *kind; NULL otherwise. */
const cv_kten *cv_cg_half_packed(cv_codegen_ctx *c, cv_kten *out, int64_t *kind);

/* For a gemm hook: when operand 1 is cast(f16 or bf16 constant) -> f32,
 * read transposed (trans_b) into an f32 result, that constant as stored
 * in *out (for cvrt_sgemm_h), with its CVRT_W_* kind in *kind; NULL
 * otherwise. */
const cv_kten *cv_cg_half_matrix(cv_codegen_ctx *c, cv_kten *out, int64_t *kind);

/* For the cast hook: every use of the cast's result reads the 16-bit
 * weights through cv_cg_half_packed or cv_cg_half_matrix, so the widened
 * copy is never needed and the cast emits nothing. */
bool cv_cg_cast_feeds_half_convs(const cv_codegen_ctx *c);

#endif
