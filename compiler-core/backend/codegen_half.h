/* Internal to the backend: convolutions and fully connected layers whose
 * weights are stored in a 16-bit float type (-p fp16 / bf16,
 * passes/quantize_half.c), run by the f32 GEMM from a compile-time P8 form
 * in that type, by dot products that widen the rows, or (bf16 on a target
 * with AVX512_BF16) by the bf16 convolution (codegen_half.c). */
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

/* For the matmul and gemm hooks: when operand 1 is cast(bf16 constant) ->
 * f32, a 2-D B ([K, N], or [N, K] with tb) read into an f32 result, on a
 * CPU target through LLVM, its pair form (cvrt.h, cvrt_sgemm_bf16) as a
 * constant in *out; NULL otherwise. */
const cv_kten *cv_cg_bf16_pairs(cv_codegen_ctx *c, bool tb, cv_kten *out);

/* For the blocked (NCHWc) convolution (codegen_nchwc.c): when operand 1
 * is cast(f16 constant) -> f32 of a dense or depthwise convolution,
 * its values widened to a new f32 array (the caller frees it), which
 * the caller packs and hands back to cv_cg_half_narrow (dense ones; the
 * few depthwise weights stay f32 constants); NULL otherwise. */
float *cv_cg_half_widen(cv_codegen_ctx *c);

/* The packed f32 copy of cv_cg_half_widen's values, n of them, back in f16
 * (exact) as a constant of shape s, for cvrt_nchwc_conv2d_h. */
cv_kten cv_cg_half_narrow(cv_codegen_ctx *c, const cv_shape *s, const float *buf);

/* For the cast hook: every use of the cast's result reads the 16-bit
 * weights through cv_cg_half_packed or cv_cg_half_matrix, so the widened
 * copy is never needed and the cast emits nothing. */
bool cv_cg_cast_feeds_half_convs(const cv_codegen_ctx *c);

/* cv_kprog_build_half's half flags for a target: 16-bit weights read
 * directly except on CUDA, and bf16 convolutions computed in bf16 where
 * the target has AVX512_BF16 (a native target on such a CPU: no named
 * target promises it) and LLVM builds the code (not for --emit c); and
 * constant matmul operands packed at compile time (CV_HALF_PACKED_B) for
 * CPU targets that LLVM builds. */
unsigned cv_cg_half_mode(const char *target, bool emit_c);

/* For the conv2d hook: when the target computes in bf16 and operand 1 is
 * cast(bf16 constant) -> f32 of a static ungrouped convolution, emits it
 * as a bf16 cvrt_qconv2d (CVRT_Q_BF16) and returns 1; 0 when it does not
 * apply, -1 on error. */
int cv_cg_bf16_conv2d(cv_codegen_ctx *c);
/* codegen_quant.c: that call, with wp the packed bf16 pairs. */
int cv_cg_qconv_bf16(cv_codegen_ctx *c, const cv_kten *wp);

/* Appends to the compile report which of the -p fp16/bf16 ops ran in
 * which type (the pass's line says how the weights are stored). */
void cv_cg_half_report(const cv_kprog *p, const char *target, char *rep, size_t size);

#endif
