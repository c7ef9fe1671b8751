/* 3-D MaxPool and AveragePool as two 2-D pools: a box window is the
 * product of its axes' windows, so pooling H and W of [N, C*D, H, W] and
 * then D of [N, C, D, H'*W'] visits the same elements.  For the average
 * the element counts (with or without padding) multiply the same way, so
 * the two divisions give the 3-D one.  Shapes must be static. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct pool3 {
    int64_t k[3], stride[3], pads[6], dil[3], ceil_mode, include_pad;
    bool max;
} pool3;

static int read_pool3(onnx_ctx *c, pool3 *p)
{
    const char *auto_pad;
    p->max = strcmp(c->node->op_type, "MaxPool") == 0;
    if (!onnx_attr(c, "kernel_shape"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "attribute 'kernel_shape' is required");
    if (onnx_attr_ints_n(c, "kernel_shape", 3, 1, p->k) < 0 ||
        onnx_attr_ints_n(c, "strides", 3, 1, p->stride) < 0 ||
        onnx_attr_ints_n(c, "pads", 6, 0, p->pads) < 0 ||
        onnx_attr_ints_n(c, "dilations", 3, 1, p->dil) < 0 ||
        onnx_attr_int(c, "ceil_mode", 0, &p->ceil_mode) < 0 ||
        onnx_attr_int(c, "count_include_pad", 0, &p->include_pad) < 0 ||
        onnx_attr_string(c, "auto_pad", "NOTSET", &auto_pad) < 0)
        return -1;
    if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "auto_pad %s is not supported for 3-D "
                        "pooling", auto_pad);
    if (!p->max && (p->dil[0] != 1 || p->dil[1] != 1 || p->dil[2] != 1))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "dilated average pooling is not supported");
    if (p->max && c->node->n_output > 1 && c->node->output[1][0])
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "the Indices output is not supported");
    return 0;
}

/* One 2-D pool over axes (a, b) of the 3-D geometry; b < 0 is a size-1 axis. */
static cv_value *pool2(onnx_ctx *c, const pool3 *p, cv_value *x, int a, int b)
{
    int64_t k[2] = {p->k[a], b < 0 ? 1 : p->k[b]};
    int64_t stride[2] = {p->stride[a], b < 0 ? 1 : p->stride[b]};
    int64_t dil[2] = {p->dil[a], b < 0 ? 1 : p->dil[b]};
    int64_t pad[4] = {p->pads[a], b < 0 ? 0 : p->pads[b], p->pads[a + 3], b < 0 ? 0 : p->pads[b + 3]};
    cv_op *o = onnx_op(c, p->max ? "max_pool2d" : "avg_pool2d", &x, 1);
    if (o) {
        cv_op_set_ints(o, "kernel", k, 2);
        cv_op_set_ints(o, "stride", stride, 2);
        cv_op_set_ints(o, "pad", pad, 4);
        cv_op_set_int(o, "ceil_mode", p->ceil_mode);
        if (p->max)
            cv_op_set_ints(o, "dilation", dil, 2);
        else
            cv_op_set_int(o, "count_include_pad", p->include_pad);
    }
    return onnx_finish(c, o);
}

static cv_value *reshape(onnx_ctx *c, cv_value *x, const int64_t *dims, int n)
{
    return x ? onnx_op_ints(c, "reshape", x, "shape", dims, n) : NULL;
}

int onnx_lower_pool3d(onnx_ctx *c)
{
    pool3 p;
    cv_value *x = onnx_in_value(c, 0);
    int64_t d[5];
    if (!x || read_pool3(c, &p) < 0)
        return -1;
    for (int i = 0; i < 5; i++)
        if (onnx_static_extent(c, x, i, &d[i]) < 0)
            return -1;
    int64_t s1[4] = {d[0], d[1] * d[2], d[3], d[4]};
    cv_value *y1 = pool2(c, &p, reshape(c, x, s1, 4), 1, 2);
    if (!y1)
        return -1;
    int64_t h = y1->type.shape.d[2].n, w = y1->type.shape.d[3].n;
    int64_t s2[4] = {d[0], d[1], d[2], h * w};
    cv_value *y2 = pool2(c, &p, reshape(c, y1, s2, 4), 0, -1);
    if (!y2)
        return -1;
    int64_t s3[5] = {d[0], d[1], y2->type.shape.d[2].n, h, w};
    return onnx_bind_value(c, 0, reshape(c, y2, s3, 5));
}
