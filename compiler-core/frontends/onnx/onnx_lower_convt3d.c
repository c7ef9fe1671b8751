/* 3-D ConvTranspose as 2-D ones: depth folds into the batch, and each
 * kernel depth slice kd gives a 2-D transposed convolution whose result
 * lands at output depth d*stride + kd*dilation.  Spreading the D input
 * slices stride apart (zero rows between them), shifting by kd*dilation
 * and summing over kd gives the 3-D result before cropping the depth pads.
 * Shapes must be static; output_shape and SAME auto_pad are refused here. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct convt3 {
    int64_t stride[3], pads[6], dil[3], outpad[3], groups;
    int64_t x[5], w[5];     /* input [N,C,D,H,W] and weight [C,M/g,KD,KH,KW] */
} convt3;

static int read_convt3(onnx_ctx *c, cv_value *x, cv_value *w, convt3 *g)
{
    const char *auto_pad;
    if (onnx_attr_ints_n(c, "strides", 3, 1, g->stride) < 0 ||
        onnx_attr_ints_n(c, "pads", 6, 0, g->pads) < 0 ||
        onnx_attr_ints_n(c, "dilations", 3, 1, g->dil) < 0 ||
        onnx_attr_ints_n(c, "output_padding", 3, 0, g->outpad) < 0 ||
        onnx_attr_int(c, "group", 1, &g->groups) < 0 ||
        onnx_attr_string(c, "auto_pad", "NOTSET", &auto_pad) < 0)
        return -1;
    if (onnx_attr(c, "output_shape") || (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID")))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "output_shape and SAME auto_pad are not "
                        "supported for 3-D ConvTranspose");
    if (!strcmp(auto_pad, "VALID"))
        memset(g->pads, 0, sizeof g->pads);
    if (w->type.shape.rank != 5)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the weight must have rank 5");
    for (int i = 0; i < 5; i++)
        if (onnx_static_extent(c, x, i, &g->x[i]) < 0 || onnx_static_extent(c, w, i, &g->w[i]) < 0)
            return -1;
    return 0;
}

static cv_value *pad_axis(onnx_ctx *c, cv_value *v, int axis, int64_t before, int64_t after)
{
    int r = v ? v->type.shape.rank : 0;
    int64_t pads[2 * CV_MAX_RANK] = {0};
    if (!v || (before == 0 && after == 0))
        return v;
    pads[axis] = before;
    pads[axis + r] = after;
    return onnx_op_ints(c, "pad", v, "pads", pads, 2 * r);
}

static cv_value *reshape(onnx_ctx *c, cv_value *v, const int64_t *dims, int n)
{
    return v ? onnx_op_ints(c, "reshape", v, "shape", dims, n) : NULL;
}

/* The 2-D transposed convolution of the folded input with kernel depth kd,
 * as [N, D, M*H'*W'] (hw receives H', W'). */
static cv_value *plane(onnx_ctx *c, const convt3 *g, cv_value *x2, cv_value *w, int64_t kd,
                       int64_t *hw)
{
    int64_t wd[4] = {g->w[0], g->w[1], g->w[3], g->w[4]};
    cv_value *ops[2] = {x2, reshape(c, onnx_slice1(c, w, 2, kd, kd + 1), wd, 4)};
    int64_t stride[2] = {g->stride[1], g->stride[2]}, dil[2] = {g->dil[1], g->dil[2]};
    int64_t pad[4] = {g->pads[1], g->pads[2], g->pads[4], g->pads[5]};
    int64_t outpad[2] = {g->outpad[1], g->outpad[2]};
    cv_op *o = onnx_op(c, "conv_transpose2d", ops, 2);
    if (o) {
        cv_op_set_ints(o, "stride", stride, 2);
        cv_op_set_ints(o, "pad", pad, 4);
        cv_op_set_ints(o, "dilation", dil, 2);
        cv_op_set_ints(o, "output_padding", outpad, 2);
        cv_op_set_int(o, "groups", g->groups);
    }
    cv_value *y = onnx_finish(c, o);
    if (!y)
        return NULL;
    hw[0] = y->type.shape.d[2].n;
    hw[1] = y->type.shape.d[3].n;
    int64_t flat[3] = {g->x[0], g->x[2], y->type.shape.d[1].n * hw[0] * hw[1]};
    return reshape(c, y, flat, 3);
}

/* z [N, D, F] spread to depth positions d*stride + shift within len. */
static cv_value *place(onnx_ctx *c, const convt3 *g, cv_value *z, int64_t shift, int64_t len)
{
    int64_t n = g->x[0], d = g->x[2], s = g->stride[0], f = z ? z->type.shape.d[2].n : 0;
    if (z && s > 1) {
        int64_t d4[4] = {n, d, 1, f}, d3[3] = {n, d * s, f};
        z = reshape(c, pad_axis(c, reshape(c, z, d4, 4), 2, 0, s - 1), d3, 3);
    }
    int64_t have = z ? z->type.shape.d[1].n : 0, after = len - shift - have;
    z = pad_axis(c, z, 1, shift, after > 0 ? after : 0);
    return after < 0 ? onnx_slice1(c, z, 1, 0, len) : z;
}

int onnx_lower_conv_transpose3d(onnx_ctx *c)
{
    cv_value *x = onnx_in_value(c, 0), *w = onnx_in_value(c, 1);
    convt3 g;
    if (!x || !w || read_convt3(c, x, w, &g) < 0)
        return -1;
    int64_t len = g.stride[0] * (g.x[2] - 1) + (g.w[2] - 1) * g.dil[0] + 1 + g.outpad[0];
    int64_t out_d = len - g.pads[0] - g.pads[3], m = g.w[1] * g.groups, hw[2] = {0, 0};
    if (out_d < 1)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the output depth would be %lld", (long long)out_d);
    int64_t perm[5] = {0, 2, 1, 3, 4}, fold[4] = {g.x[0] * g.x[2], g.x[1], g.x[3], g.x[4]};
    cv_value *x2 = reshape(c, onnx_op_ints(c, "transpose", x, "perm", perm, 5), fold, 4);
    cv_value *sum = NULL;
    for (int64_t kd = 0; kd < g.w[2]; kd++) {
        cv_value *z = place(c, &g, plane(c, &g, x2, w, kd, hw), kd * g.dil[0], len);
        sum = !z ? NULL : sum ? onnx_binary(c, "add", sum, z) : z;
        if (!sum)
            return -1;
    }
    int64_t out5[5] = {g.x[0], out_d, m, hw[0], hw[1]};
    cv_value *cropped = onnx_slice1(c, sum, 1, g.pads[0], len - g.pads[3]);
    cv_value *y = onnx_op_ints(c, "transpose", reshape(c, cropped, out5, 5), "perm", perm, 5);
    if (y && onnx_in(c, 2)) {
        int64_t bd[4] = {m, 1, 1, 1};
        y = onnx_binary(c, "add", y, reshape(c, onnx_in_value(c, 2), bd, 4));
    }
    return onnx_bind_value(c, 0, y);
}
