/* Internal to the backend: the per-op codegen hooks (one per op, grouped by
 * family in codegen_<family>.c) and the helpers they share.  A hook reads
 * its op through cv_codegen_ctx and describes the computation with the
 * kernel API (kernel.h); it never knows which backend will lower it. */
#ifndef CV_BACKEND_CODEGEN_H
#define CV_BACKEND_CODEGEN_H

#include "compiler-core/backend/kernel.h"

typedef int (*cv_codegen_fn)(cv_codegen_ctx *c);

/* The hook of an op: its table entry's codegen field. */
cv_codegen_fn cv_cg_hook_for(const cv_op_def *def);

/* Builds the kernel program of f (memory planned).  *out is owned by the
 * caller (cv_kprog_free). */
int cv_kprog_build(const cv_func *f, cv_kprog **out, cv_diag *d);
void cv_kprog_free(cv_kprog *p);

/* The same with tensors of f in the blocked NCHWc layout where
 * passes/layout.c plans them (blk channels per block; 0: none). */
int cv_kprog_build_blocked(const cv_func *f, int blk, cv_kprog **out, cv_diag *d);
/* The same, letting convolutions and fully connected layers read -p
 * fp16/bf16 weights 16-bit (cvrt_conv2d_p8h, cvrt_sgemm_h) with
 * CV_HALF_WEIGHTS in half, and bf16 convolutions compute in bf16
 * (AMX or vdpbf16ps) with CV_HALF_BF16_DOT too, for targets with AVX512_BF16
 * (codegen_half.c). */
enum { CV_HALF_WEIGHTS = 1, CV_HALF_BF16_DOT = 2, CV_HALF_PACKED_B = 4 };
int cv_kprog_build_half(const cv_func *f, int blk, unsigned half, cv_kprog **out, cv_diag *d);

/* Blocked-layout lowering (codegen_nchwc.c): the plan's block size and
 * blocked ops (by op index), and by value id the value's blocked storage
 * (-1: none yet). */
typedef struct cv_nchwc {
    int blk;
    const uint8_t *op_blocked;
    int *bstore;
} cv_nchwc;
/* Before a plain op: plain copies of the blocked operands of it and its chain. */
void cv_nchwc_prepare_plain(cv_codegen_ctx *c, cv_nchwc *nc);
/* Lowers an op that the plan runs blocked. */
int cv_nchwc_lower(cv_codegen_ctx *c, cv_nchwc *nc);

/* A tensor handle for storage `store` holding a value of type t. */
cv_kten cv_cg_tensor(cv_codegen_ctx *c, int store, const cv_type *t);
/* dst[i] = src[elem_offset + i] over all of dst (a kernel of its own). */
void cv_cg_copy(cv_codegen_ctx *c, const cv_kten *dst, const cv_kten *src,
                const cv_kexpr *elem_offset);

/* ---- shared lowering patterns (codegen_util.c) ---------------------------- */

/* Computes one result element from its operands' elements (already loaded
 * as compute types); returns the value (any compute type: stores convert). */
typedef const cv_kexpr *(*cv_cg_scalar_fn)(cv_codegen_ctx *c, const cv_kexpr *const *in, int n);

/* An operand as an elementwise loop reads it: a tensor, possibly seen
 * through a shape that broadcasts against the result (rank <= result rank,
 * numpy rules, aligned right). */
typedef struct cv_cg_operand {
    cv_kten t;
    int rank;
    const cv_kexpr *dim[CV_MAX_RANK];
    int64_t sdim[CV_MAX_RANK];
} cv_cg_operand;

/* The usual elementwise kernel: out = fn(operands) with broadcasting. */
int cv_cg_elementwise(cv_codegen_ctx *c, cv_cg_scalar_fn fn);
/* The same over explicit operand views into the result tensor `out`. */
int cv_cg_elementwise_views(cv_codegen_ctx *c, const cv_kten *out, const cv_cg_operand *ops,
                            int n, cv_cg_scalar_fn fn);
/* An operand view of t, reshaped to `rank` dims that align with dims
 * [at, at + t.rank) of a rank-`rank` result (ones elsewhere). */
cv_cg_operand cv_cg_operand_at(cv_codegen_ctx *c, const cv_kten *t, int at, int rank);
cv_cg_operand cv_cg_operand_of(const cv_kten *t);

/* Reduces x over the axes marked in red into out (whose flat order is x's
 * with the reduced axes removed).  kind: CV_CG_R*. */
enum { CV_CG_RSUM, CV_CG_RMEAN, CV_CG_RMAX, CV_CG_RMIN, CV_CG_RPROD };
void cv_cg_reduce(cv_codegen_ctx *c, const cv_kten *x, const bool *red, const cv_kten *out,
                  int kind);

/* A fused chain the runtime GEMM applies as it stores: y = act(y + res). */
typedef struct cv_cg_rt_epi {
    bool has_res;
    cv_kten res;                /* same shape as the product */
    int act;                    /* cvrt.h's CVRT_ACT_* (the op table's CV_OPF_EPI) */
    double lo, hi;
    cv_kten out;                /* where the chain's result goes (instead of result 0) */
} cv_cg_rt_epi;
/* Takes the op's planned chain when the runtime epilogue can run it. */
bool cv_cg_rt_epilogue(cv_codegen_ctx *c, cv_cg_rt_epi *e);
/* The 4 trailing runtime arguments (res, act, lo, hi); res at element off. */
void cv_cg_rt_epilogue_args(cv_codegen_ctx *c, const cv_cg_rt_epi *e, const cv_kexpr *off,
                            const cv_kexpr **args);

/* For hooks writing each element of result 0 once (cv_cg_store_result):
 * takes the planned chain when its other operands are the result's shape
 * or single elements. */
bool cv_cg_take_pointwise_chain(cv_codegen_ctx *c);
/* Stores result-0 element idx, through the chain when it was taken. */
void cv_cg_store_result(cv_codegen_ctx *c, const cv_kten *out, const cv_kexpr *idx,
                        const cv_kexpr *v);

/* ---- the hooks ------------------------------------------------------------ */

/* codegen_elementwise.c */
int cv_cg_add(cv_codegen_ctx *c);
int cv_cg_sub(cv_codegen_ctx *c);
int cv_cg_mul(cv_codegen_ctx *c);
int cv_cg_div(cv_codegen_ctx *c);
int cv_cg_pow(cv_codegen_ctx *c);
int cv_cg_min(cv_codegen_ctx *c);
int cv_cg_max(cv_codegen_ctx *c);
int cv_cg_equal(cv_codegen_ctx *c);
int cv_cg_less(cv_codegen_ctx *c);
int cv_cg_greater(cv_codegen_ctx *c);
int cv_cg_where(cv_codegen_ctx *c);
int cv_cg_cast(cv_codegen_ctx *c);

/* codegen_math.c */
int cv_cg_sin(cv_codegen_ctx *c);
int cv_cg_cos(cv_codegen_ctx *c);
int cv_cg_tan(cv_codegen_ctx *c);
int cv_cg_asin(cv_codegen_ctx *c);
int cv_cg_acos(cv_codegen_ctx *c);
int cv_cg_atan(cv_codegen_ctx *c);
int cv_cg_sinh(cv_codegen_ctx *c);
int cv_cg_cosh(cv_codegen_ctx *c);
int cv_cg_asinh(cv_codegen_ctx *c);
int cv_cg_acosh(cv_codegen_ctx *c);
int cv_cg_atanh(cv_codegen_ctx *c);
int cv_cg_floor(cv_codegen_ctx *c);
int cv_cg_ceil(cv_codegen_ctx *c);
int cv_cg_round(cv_codegen_ctx *c);

/* codegen_activation.c */
int cv_cg_neg(cv_codegen_ctx *c);
int cv_cg_abs(cv_codegen_ctx *c);
int cv_cg_relu(cv_codegen_ctx *c);
int cv_cg_sqrt(cv_codegen_ctx *c);
int cv_cg_exp(cv_codegen_ctx *c);
int cv_cg_log(cv_codegen_ctx *c);
int cv_cg_tanh(cv_codegen_ctx *c);
int cv_cg_erf(cv_codegen_ctx *c);
int cv_cg_sigmoid(cv_codegen_ctx *c);
int cv_cg_silu(cv_codegen_ctx *c);
int cv_cg_hard_swish(cv_codegen_ctx *c);
int cv_cg_leaky_relu(cv_codegen_ctx *c);
int cv_cg_hard_sigmoid(cv_codegen_ctx *c);
int cv_cg_gelu(cv_codegen_ctx *c);
int cv_cg_clip(cv_codegen_ctx *c);

/* codegen_reduce.c */
int cv_cg_reduce_sum(cv_codegen_ctx *c);
int cv_cg_reduce_mean(cv_codegen_ctx *c);
int cv_cg_reduce_max(cv_codegen_ctx *c);
int cv_cg_reduce_min(cv_codegen_ctx *c);
int cv_cg_reduce_prod(cv_codegen_ctx *c);
int cv_cg_argmax(cv_codegen_ctx *c);
int cv_cg_softmax(cv_codegen_ctx *c);
int cv_cg_log_softmax(cv_codegen_ctx *c);

/* codegen_norm.c */
int cv_cg_batch_norm(cv_codegen_ctx *c);
int cv_cg_layer_norm(cv_codegen_ctx *c);
int cv_cg_quantize_linear(cv_codegen_ctx *c);
int cv_cg_dequantize_linear(cv_codegen_ctx *c);
/* codegen_quant.c */
int cv_cg_qconv2d(cv_codegen_ctx *c);

/* codegen_matmul.c, codegen_nn.c, codegen_pool.c */
int cv_cg_matmul(cv_codegen_ctx *c);
int cv_cg_gemm(cv_codegen_ctx *c);
int cv_cg_attention(cv_codegen_ctx *c);    /* codegen_attention.c */
int cv_cg_rnn(cv_codegen_ctx *c);          /* codegen_rnn.c */
int cv_cg_conv2d(cv_codegen_ctx *c);
int cv_cg_conv_transpose2d(cv_codegen_ctx *c);
int cv_cg_max_pool2d(cv_codegen_ctx *c);
int cv_cg_avg_pool2d(cv_codegen_ctx *c);
int cv_cg_global_avg_pool(cv_codegen_ctx *c);
/* The 2-D pad attribute as [top,left,bottom,right] ([h,w] means both sides). */
void cv_cg_pads2d(const cv_op *op, int64_t out[4]);

/* codegen_shape.c, codegen_layout.c */
int cv_cg_reshape(cv_codegen_ctx *c);   /* also flatten, squeeze, unsqueeze */
int cv_cg_expand(cv_codegen_ctx *c);
int cv_cg_shape(cv_codegen_ctx *c);
int cv_cg_arange(cv_codegen_ctx *c);
int cv_cg_constant(cv_codegen_ctx *c);
int cv_cg_transpose(cv_codegen_ctx *c);
int cv_cg_slice(cv_codegen_ctx *c);
int cv_cg_split(cv_codegen_ctx *c);
int cv_cg_concat(cv_codegen_ctx *c);
int cv_cg_gather(cv_codegen_ctx *c);
int cv_cg_pad(cv_codegen_ctx *c);

/* codegen_resize.c */
int cv_cg_resize(cv_codegen_ctx *c);

#endif
