/* cvrt: the small support library linked into every artifact Cuvil builds.
 *
 * It is compiled once per target variant to LLVM bitcode when cuvil itself is
 * built (compiler-core/runtime/build.mk), embedded in the cuvil binary, and
 * linked into each model's LLVM module, where it is optimised together with
 * the generated kernels for the chosen target; its symbols are internalised,
 * so several artifacts can live in one process.
 *
 * The generated code sees a cvrt_ctx as the artifact's context: it owns the
 * thread pool (size fixed at create time), the activation arena and the
 * per-thread GEMM packing buffers.  A run allocates nothing once the arena is
 * large enough (cvrt_arena grows it only when a run needs more than any run
 * before it).
 *
 * This header is freestanding (no libc headers), so that the bitcode for
 * every target builds without that target's sysroot. */
#ifndef CVRT_H
#define CVRT_H

#include <stddef.h>
#include <stdint.h>

typedef struct cvrt_ctx cvrt_ctx;

/* A generated kernel: processes items [lo, hi) of its parallel extent. */
typedef void (*cvrt_kernel_fn)(cvrt_ctx *rt, void *const *bufs, const int64_t *syms,
                               int64_t lo, int64_t hi);

/* threads <= 0 picks 1.  Returns NULL when memory or threads run out. */
cvrt_ctx *cvrt_create(int threads);
/* The artifact's CPU check (cvrt_cpu.c): required is the comma-separated
 * features of its target ("avx2,fma,avx512f"), target its -t name.  0 when
 * this CPU has them all; else -1, and cvrt_cpu_last_error gives 5036 and a
 * message naming the missing ones. */
int cvrt_cpu_check(const char *required, const char *target);
int cvrt_cpu_last_error(const char **msg);
void cvrt_destroy(cvrt_ctx *rt);
int cvrt_threads(const cvrt_ctx *rt);

/* An artifact built with its weights in a file (--weights-file) reads them
 * at run time from the caller's copy, set once after create (64-byte
 * aligned, never written, alive until destroy). */
void cvrt_set_weights(cvrt_ctx *rt, const void *w);
const char *cvrt_weights(const cvrt_ctx *rt);

/* cuvil bench --profile: every launch of kernel k adds its wall time in
 * nanoseconds to ns[k] (k < n) until profiling is set off (ns NULL).  The
 * generated run brackets each launch with prof_begin/prof_end, which cost
 * a load and a branch while profiling is off. */
void cvrt_profile(cvrt_ctx *rt, uint64_t *ns, int64_t n);
int64_t cvrt_prof_begin(cvrt_ctx *rt);
void cvrt_prof_end(cvrt_ctx *rt, int64_t k, int64_t t0);

/* The activation arena, at least `bytes` long and 64-byte aligned; NULL when
 * it cannot grow. */
char *cvrt_arena(cvrt_ctx *rt, int64_t bytes);

/* Runs fn over [0, n) in chunks of at least `grain` items, across the pool;
 * returns when every chunk is done. */
void cvrt_launch(cvrt_ctx *rt, int64_t n, int64_t grain, cvrt_kernel_fn fn,
                 void *const *bufs, const int64_t *syms);

/* The epilogue applied to each finished element v of a product:
 * v += res[i*res_ld + j] (when res is not NULL), then act, one of
 * CVRT_ACT_*: none, relu (v < 0 ? 0 : v), clip to [lo, hi] (max first, NaN
 * stays), silu (v * sigmoid(v)), hard_swish (v * clip(v/6 + 1/2, 0, 1)).
 * The op table names the code that computes each op (CV_OPF_EPI in its flags);
 * every kernel applies them through cvrt_act.h. */
enum { CVRT_ACT_NONE, CVRT_ACT_RELU, CVRT_ACT_CLIP, CVRT_ACT_SILU, CVRT_ACT_HARD_SWISH };
typedef struct cvrt_epilogue {
    const float *res;
    int64_t res_ld, act;
    float lo, hi;
} cvrt_epilogue;

/* C[i,j] = alpha * sum_k A[i,k] B[k,j] + bias_scale * bias[i*brs + j*bcs]
 *          (+ C[i,j] when accumulate), then the epilogue, for i < M, j < N.
 * A[i,k] is a[i*ars + k*acs], B[k,j] is b[k*brs_ + j*bcs_]: any strides, so
 * transposes and broadcasts need no copies.  bias and res may be NULL. */
void cvrt_sgemm(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                const float *a, int64_t ars, int64_t acs,
                const float *b, int64_t brs, int64_t bcs,
                float *c, int64_t ldc, int64_t accumulate,
                const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                const float *res, int64_t res_ld, int64_t act, float lo, float hi);
/* PB, the packed form of a constant B (K x N) that the compiler makes at
 * compile time: bp[((j / 32) * K + k) * 32 + j % 32] = B[k][j], with zero
 * columns making N up to a multiple of 32 (the AVX-512 micro-kernel's
 * panels; other targets repack from it).  cvrt_sgemm_pb is cvrt_sgemm
 * with b in the PB form (brs and bcs unused), for products of many rows
 * (the small-M path does not read it). */
#define CVRT_PB 32
void cvrt_sgemm_pb(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *a, int64_t ars, int64_t acs,
                   const float *b, int64_t brs, int64_t bcs,
                   float *c, int64_t ldc, int64_t accumulate,
                   const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                   const float *res, int64_t res_ld, int64_t act, float lo, float hi);
/* The bf16 pair form of a constant B (K x N, -p bf16 weights), made at
 * compile time: with K2p = ceil(ceil(K/2) / 16) * 16 rows of pairs per
 * panel of 32 columns, bp[(j / 32) * K2p * 32 + q * 32 + j % 32] holds
 * B[2q][j] in its low 16 bits and B[2q+1][j] in its high 16 bits (zero
 * past K and N).  cvrt_sgemm_bf16 is cvrt_sgemm with b in that form (brs
 * and bcs unused), computed from it directly (cvrt_gemm_bf16.c). */
void cvrt_sgemm_bf16(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *a, int64_t ars, int64_t acs,
                     const uint32_t *b, int64_t brs, int64_t bcs,
                     float *c, int64_t ldc, int64_t accumulate,
                     const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                     const float *res, int64_t res_ld, int64_t act, float lo, float hi);
/* cvrt_sgemm with B[k,j] = b[k + j*bcs] in a 16-bit type (bkind: CVRT_W_F16
 * or CVRT_W_BF16, below), widened as the dot products read it: the -p
 * fp16/bf16 weights of a fully connected layer (few rows of A). */
void cvrt_sgemm_h(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *a, int64_t ars, int64_t acs,
                  const uint16_t *b, int64_t bkind, int64_t bcs,
                  float *c, int64_t ldc, int64_t accumulate,
                  const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                  const float *res, int64_t res_ld, int64_t act, float lo, float hi);

/* One group of a 2-D convolution on one image as an implicit GEMM (the
 * im2col matrix is never stored; its panels are packed straight from x):
 * y[oc, oh*OW+ow] = sum_{c,kh,kw} w[oc, (c*KH+kh)*KW+kw] * x[c, ih, iw] + bias[oc]
 * with ih = oh*sh - pt + kh*dh, iw = ow*sw - pl + kw*dw (zero outside the
 * image).  bias and res (y's shape) may be NULL; act and lo/hi as in
 * cvrt_epilogue. */
void cvrt_conv2d(cvrt_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                 int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                 int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                 int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi);

/* P8, the packed form of a constant matrix A (M x K) that the compiler
 * makes at compile time: ap[((i / 8) * K + k) * 8 + i % 8] = A[i][k], with
 * zero rows making M up to a multiple of 8. */
#define CVRT_P8 8

/* cvrt_conv2d with the weights as the P8 form of the OC x (C*KH*KW) matrix.
 * scratch is NULL or room for CVRT_CONV_SCRATCH(...) floats that the call
 * may use (a zero-padded copy of x split by stride phase, so that every tap
 * reads plain runs). */
#define CVRT_CDIV_(a, b) (((a) + (b) - 1) / (b))
#define CVRT_CONV_SCRATCH(C, KH, KW, sh, sw, dh, dw, OH, OW) \
    ((C) * (sh) * CVRT_CDIV_(((OH) - 1) * (sh) + ((KH) - 1) * (dh) + 1, (sh)) * \
     (sw) * CVRT_CDIV_(((OW) - 1) * (sw) + ((KW) - 1) * (dw) + 1, (sw)))
void cvrt_conv2d_p8(cvrt_ctx *rt, const float *x, const float *wp, const float *bias, float *y,
                    int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                    int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                    int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi,
                    float *scratch);
/* cvrt_conv2d_p8 with the packed weights stored in a 16-bit type (-p fp16 /
 * bf16): the GEMM widens them to f32 one K block at a time, into its
 * thread's buffer, and computes in f32. */
enum { CVRT_W_F16 = 1, CVRT_W_BF16 = 2 };
void cvrt_conv2d_p8h(cvrt_ctx *rt, const float *x, const uint16_t *wp, int64_t wkind,
                     const float *bias, float *y, int64_t C, int64_t H, int64_t W, int64_t OC,
                     int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                     int64_t dh, int64_t dw, int64_t OH, int64_t OW, const float *res,
                     int64_t act, float lo, float hi, float *scratch);

/* Depthwise 2-D convolution of one image (C channels, one filter each):
 * y[c, oh, ow] = bias[c] + sum_{kh,kw} w[(c*KH+kh)*KW+kw] * x[c, ih, iw]
 * with ih, iw as in cvrt_conv2d (zero outside), then the epilogue as in
 * cvrt_epilogue (res has y's shape; bias and res may be NULL). */
void cvrt_dwconv2d(cvrt_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                   int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                   int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi);

/* int8 convolution of one image (cvrt_qconv.c): x is quantised with scale
 * xs and zero point zp (u8) into scratch (CVRT_QCONV_SCRATCH bytes), then
 * y[oc, p] = scale[oc] * sum_k (xq - zp) * w[oc, k] + bias[oc], then the
 * epilogue as in cvrt_epilogue.  wp holds the s8 weights packed at compile
 * time as quads of k, [OCp/16][KUp][16] (quad ku of channel oc at
 * ((oc/16)*KUp + ku)*16 + oc%16), k = (kh*KW + kw)*Cp + c with Cp =
 * CVRT_QCONV_CP(C), OCp = OC rounded up to CVRT_Q_OCB, KUp = K/4 rounded up
 * to CVRT_Q_KUB (zero padding); wsum and scale hold OCp entries, wsum[oc]
 * the sum of channel oc's weights.  K*32 bytes must fit a thread's packing
 * buffer (CVRT_QCONV_MAX_K).  flags (cvrt_qepi.h) say which of x, y and res
 * are u8 rather than f32; u8 images are stored channels last ([H][W][C]),
 * f32 ones [C][H][W].  A u8 x is already quantised (xs, zp); a u8 y is
 * requantised, round_half_even(v * (1 / ys)) + yzp saturated (the
 * reciprocal rounded to f32); a u8 residual is dequantised, (r - rzp) *
 * rs, before it is added.
 * flags CVRT_Q_BF16 (alone): the same convolution in bf16 (-p bf16 where
 * the target has AVX512_BF16): x, y and res f32, x rounded to bf16 into
 * scratch (CVRT_BCONV_SCRATCH bytes), wp the bf16 weights as rows of pairs
 * [OCp][KUp] (2 bf16 each, the even k in the low half), k = (kh*KW +
 * kw)*Cp + c with Cp = CVRT_BCONV_CP(C), KUp = K/2 rounded up to
 * CVRT_Q_KUB; products summed in f32 (AMX tdpbf16ps or vdpbf16ps), then
 * bias and the epilogue; wsum, scale, xs, zp, ys, yzp, rs and rzp unused.
 * K*64 bytes (plus 2 KB) must fit a thread's packing buffer
 * (CVRT_BCONV_MAX_K). */
#define CVRT_Q_OCB 32
#define CVRT_Q_KUB 16
enum { CVRT_Q_XU8 = 1, CVRT_Q_YU8 = 2, CVRT_Q_RU8 = 4, CVRT_Q_BF16 = 8 };  /* the flags */
#define CVRT_QCONV_MAX_K 20480
#define CVRT_QCONV_CP(C) (((C) + 3) / 4 * 4)
#define CVRT_BCONV_MAX_K 10176
#define CVRT_BCONV_CP(C) (((C) + 1) / 2 * 2)
#define CVRT_QCONV_EXT(in, pb, out, s, k, d) \
    (((in) + (pb)) > (((out) - 1) * (s) + ((k) - 1) * (d) + 1) ? ((in) + (pb)) \
                                                              : (((out) - 1) * (s) + ((k) - 1) * (d) + 1))
#define CVRT_QCONV_SCRATCH(C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW) \
    (CVRT_QCONV_EXT(H, pt, OH, sh, KH, dh) * CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw) * \
     CVRT_QCONV_CP(C))
#define CVRT_BCONV_SCRATCH(C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW) \
    (CVRT_QCONV_EXT(H, pt, OH, sh, KH, dh) * CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw) * \
     CVRT_BCONV_CP(C) * 2)
void cvrt_qconv2d(cvrt_ctx *rt, const void *x, const int32_t *wp, const int32_t *wsum,
                  const float *scale, const float *bias, void *y,
                  int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                  int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                  int64_t OH, int64_t OW, const void *res, int64_t act, float lo, float hi,
                  float xs, int64_t zp, uint8_t *scratch, int64_t flags, float ys, int64_t yzp,
                  float rs, int64_t rzp);

/* int8 depthwise convolution of one image (cvrt_qdwconv.c): w holds the
 * s8 weights as floats, [C][KH*KW]; scale[c] = xs * w_scale[c]; otherwise
 * as cvrt_qconv2d.  Exact sums need KH*KW <= 512; a thread's scratch must
 * hold the channel's phase planes (CVRT_QDW_FLOATS). */
#define CVRT_QDW_FLOATS(H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW) \
    ((sh) * (sw) * (((CVRT_QCONV_EXT(H, pt, OH, sh, KH, dh) + (sh) - 1) / (sh)) * \
                    ((CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw) + (sw) - 1) / (sw)) + 128) + \
     (OH) * ((CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw) + (sw) - 1) / (sw)) + 128 + (W))
#define CVRT_QDW_MAX_FLOATS 160000
void cvrt_qdwconv2d(cvrt_ctx *rt, const void *x, const float *w, const float *scale,
                    const float *bias, void *y, int64_t C, int64_t H, int64_t W, int64_t KH,
                    int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                    int64_t dw, int64_t OH, int64_t OW, const void *res, int64_t act, float lo,
                    float hi, float xs, int64_t zp, int64_t flags, float ys, int64_t yzp,
                    float rs, int64_t rzp);

/* The blocked (NCHWc) layout (cvrt_nchwc.c): an image of C channels is
 * [ceil(C/blk)][H][W][blk], the channels past C zero.  blk must be the
 * target's vector width (the routines do nothing otherwise: the compiler
 * blocks by it).  Convolution of one image: x is blocked (ICB blocks, CI =
 * blk) or, for ICB = 1 and CI != blk, a plain [CI][H][W] image; wb holds the
 * weights as [OCB][ICB][KH][KW][CI][blk] (zero for padded channels), bias
 * OCB*blk floats (or NULL), y and res (or NULL) are blocked, OCB blocks;
 * then the epilogue as in cvrt_epilogue. */
void cvrt_nchwc_conv2d(cvrt_ctx *rt, const float *x, const float *wb, const float *bias,
                       float *y, int64_t blk, int64_t ICB, int64_t CI, int64_t H, int64_t W,
                       int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt,
                       int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                       const float *res, int64_t act, float lo, float hi);
/* Depthwise, CB blocks of blk channels; wb is [CB][KH][KW][blk]. */
void cvrt_nchwc_dwconv2d(cvrt_ctx *rt, const float *x, const float *wb, const float *bias,
                         float *y, int64_t blk, int64_t CB, int64_t H, int64_t W, int64_t KH,
                         int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                         int64_t dw, int64_t OH, int64_t OW, const float *res, int64_t act,
                         float lo, float hi);
/* Pooling of one blocked image: kind 0 max, 1 average over the taps
 * inside the image, 2 average over all KH*KW taps. */
void cvrt_nchwc_pool2d(cvrt_ctx *rt, const float *x, float *y, int64_t blk, int64_t CB,
                       int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                       int64_t pt, int64_t pl, int64_t OH, int64_t OW, int64_t kind);
/* cvrt_nchwc_conv2d with f16 weights (-p fp16), each task widening the
 * group of output blocks it computes (cvrt_half_nchwc.c). */
void cvrt_nchwc_conv2d_h(cvrt_ctx *rt, const float *x, const uint16_t *wh, const float *bias,
                         float *y, int64_t blk, int64_t ICB, int64_t CI, int64_t H, int64_t W,
                         int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt,
                         int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                         const float *res, int64_t act, float lo, float hi);

/* A plain RNN (gates 1), LSTM (gates 4: i o f c) or GRU (gates 3: z r h)
 * over T steps, the rnn op of CU-IR (cvrt_rnn.c): x [T,B,I], w
 * [dirs,G*H,I], r [dirs,G*H,H], bias [dirs,2*G*H] (W's then R's), h0 and
 * c0 [dirs,B,H] (c0 NULL but for an LSTM), p [dirs,3*H] (LSTM peepholes i
 * o f, or NULL), lens [B] (sequence_lens, or NULL: every row T steps) ->
 * y [T,dirs,B,H], yh and yc [dirs,B,H] (yc NULL but for an LSTM).  flags:
 * CVRT_RNN_REVERSE, CVRT_RNN_LBR (GRU linear_before_reset), CVRT_RNN_RELU
 * (the plain RNN's activation; else tanh); clip > 0 clips the gate
 * pre-activations.  Scratch: xg holds T*B*G*H floats, hg B*(G+1)*H. */
enum { CVRT_RNN_REVERSE = 1, CVRT_RNN_LBR = 2, CVRT_RNN_RELU = 4 };
void cvrt_rnn(cvrt_ctx *rt, const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, const float *p, const int32_t *lens, float *y,
              float *yh, float *yc, float *xg, float *hg, int64_t T, int64_t B, int64_t I,
              int64_t H, int64_t gates,
              int64_t dirs, int64_t flags, float clip);

/* The attention op (cvrt_attn.c): y = softmax(scale * q k^T + mask) v per
 * (batch, head), over q [B,H,Sq,D], k [B,H,Sk,D], v [B,H,Sk,Dv] and y
 * [B,H,Sq,Dv] given by their strides (elements) along batch, head and
 * sequence (the last axis contiguous), so that both multi-head layouts
 * are read in place.  mask (f32, or NULL) is added at
 * b*msb + h*msh + i*mss + j*msk (0 strides broadcast); causal hides key j
 * from query row i when j > Sk - Sq + i (a row that sees no key is 0).
 * Uses the threads' GEMM scratch: D and Dv must be at most 128. */
void cvrt_attention(cvrt_ctx *rt, const float *q, const float *k, const float *v,
                    const float *mask, float *y, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                    int64_t D, int64_t Dv, int64_t qsb, int64_t qsh, int64_t qss, int64_t ksb,
                    int64_t ksh, int64_t kss, int64_t vsb, int64_t vsh, int64_t vss, int64_t ysb,
                    int64_t ysh, int64_t yss, int64_t msb, int64_t msh, int64_t mss, int64_t msk,
                    float scale, int64_t causal);

/* IEEE half <-> float, round to nearest even (for targets without native
 * conversions; cvrt_half.c). */
uint16_t cvrt_f32_to_f16(float f);
float cvrt_f16_to_f32(uint16_t h);

#endif
