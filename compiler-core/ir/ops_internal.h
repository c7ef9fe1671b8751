/* Internal to the op table: each op family file (ops_<family>.c) defines a
 * fragment of the one op table; ops_table.c joins the fragments.  Each entry
 * carries the op's schema, shape function, reference kernel and codegen hook,
 * so no other file switches on op names. */
#ifndef CV_OPS_INTERNAL_H
#define CV_OPS_INTERNAL_H

#include "compiler-core/ir/ir.h"

typedef struct cv_op_family {
    const cv_op_def *defs;
    int count;
} cv_op_family;

extern const cv_op_family cv_ops_elementwise;  /* ops_elementwise.c */
extern const cv_op_family cv_ops_reduce;       /* ops_reduce.c: reduce_*, argmax, softmax, log_softmax */
extern const cv_op_family cv_ops_activation;   /* ops_activation.c: unary math and activations */
extern const cv_op_family cv_ops_math;         /* ops_math.c: trigonometric, hyperbolic, rounding */
extern const cv_op_family cv_ops_norm;         /* ops_norm.c: batch_norm, layer_norm */
extern const cv_op_family cv_ops_quant;        /* ops_quant.c: quantize_linear, dequantize_linear */
extern const cv_op_family cv_ops_nn;           /* ops_nn.c: conv2d, conv_transpose2d */
extern const cv_op_family cv_ops_matmul;       /* ops_matmul.c: matmul, gemm */
extern const cv_op_family cv_ops_pool;         /* ops_pool.c: max/avg/global pooling */
extern const cv_op_family cv_ops_resize;       /* ops_resize.c: resize */
extern const cv_op_family cv_ops_shape;        /* ops_shape.c: reshape, flatten, squeeze, ... constant */
extern const cv_op_family cv_ops_layout;       /* ops_layout.c: transpose, concat, split, slice, gather, pad */
extern const cv_op_family cv_ops_attention;    /* ops_attention.c: attention */
extern const cv_op_family cv_ops_rnn;          /* ops_rnn.c: rnn (LSTM/GRU over a symbolic length) */

/* Shape-function helpers (ops_shapeutil.c). */
int cv_infer_broadcast(cv_infer_ctx *c, const cv_shape *a, const cv_shape *b, cv_shape *out);
/* a op b (ir/dimexpr.c) for a shape function; CV3009 naming the op when
 * the result is not expressible. */
int cv_infer_dim(cv_infer_ctx *c, cv_dim_op op, cv_dim a, cv_dim b, cv_dim *out);
/* An INTS or DIMS attribute as dims (cv_op_dims); at run time (c->look set)
 * each symbolic entry is evaluated, CV3010 when it cannot be or is negative.
 * Returns the count, -1 when absent or after an error (c->first_diag). */
int cv_infer_attr_dims(cv_infer_ctx *c, const char *name, cv_dim *out, int max);
/* Maps a possibly negative axis into [0, rank); reports CV3006 otherwise. */
int cv_infer_axis(cv_infer_ctx *c, int64_t axis, int rank, int *out);
/* Checks operand i's dtype against a CV_DT_BIT mask; reports CV2009/4002. */
int cv_infer_dtype_in(cv_infer_ctx *c, int i, unsigned mask);
/* Requires operands i and j to share a dtype (CV2009). */
int cv_infer_same_dtype(cv_infer_ctx *c, int i, int j);

/* Run-time helpers: row-major strides, broadcast index mapping. */
void cv_strides(int rank, const int64_t *dims, int64_t *strides);
/* Index into `t` for the flat output index `i` of a broadcast result with
 * dims out_dims[out_rank]. */
int64_t cv_broadcast_index(const cv_tensor *t, int out_rank, const int64_t *out_dims, int64_t i);

#endif
