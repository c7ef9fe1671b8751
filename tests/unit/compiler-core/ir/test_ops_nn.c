/* The nn ops (conv2d, conv_transpose2d, matmul, gemm, max_pool2d,
 * avg_pool2d, global_avg_pool, resize): shape functions with symbolic dims,
 * their error codes, and reference kernels checked against PyTorch / NumPy /
 * ONNX's own reference code, all run at test time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/numpyref.h"
#include "tests/support/opstest.h"

/* Reference implementations.  conv and pooling go through torch in float64
 * (asymmetric pads by explicit padding); pool_np is an independent loop
 * version for what torch cannot do (integer data, asymmetric pads with
 * averaging); resize uses the interpolation code that ships with ONNX's
 * backend tests, plus torch where torch has the same semantics. */
static const char prelude[] =
    "import torch, torch.nn.functional as F\n"
    "from onnx.backend.test.case.node.resize import interpolate_nd, linear_coeffs, nearest_coeffs\n"
    "def _t(x): return torch.from_numpy(np.asarray(x, dtype=np.float64))\n"
    "def _o(x): return None if x is None else _t(x)\n"
    "def conv(x, w, b=None, stride=(1,1), pad=(0,0,0,0), dil=(1,1), groups=1):\n"
    "    xp = F.pad(_t(x), (pad[1], pad[3], pad[0], pad[2]))\n"
    "    return F.conv2d(xp, _t(w), _o(b), stride, 0, dil, groups).numpy()\n"
    "def convt(x, w, b=None, stride=(1,1), pad=(0,0,0,0), dil=(1,1), groups=1, opad=(0,0)):\n"
    "    y = F.conv_transpose2d(_t(x), _t(w), _o(b), stride, 0, opad, groups, dil).numpy()\n"
    "    return y[:, :, pad[0]:y.shape[2]-pad[2], pad[1]:y.shape[3]-pad[3]]\n"
    "def maxpool(x, k, stride=(1,1), pad=(0,0), dil=(1,1), ceil=False):\n"
    "    return F.max_pool2d(_t(x), k, stride, pad, dil, ceil_mode=ceil).numpy()\n"
    "def avgpool(x, k, stride=(1,1), pad=(0,0), ceil=False, incl=False):\n"
    "    return F.avg_pool2d(_t(x), k, stride, pad, ceil, incl).numpy()\n"
    "def pool_np(x, k, stride=(1,1), pad=(0,0,0,0), dil=(1,1), ceil=False, kind='max',\n"
    "            incl=False):\n"
    "    N, C, H, W = x.shape\n"
    "    def ext(n, i):\n"
    "        span = n + pad[i] + pad[i+2] - (dil[i]*(k[i]-1)+1)\n"
    "        o = (-(-span // stride[i]) if ceil else span // stride[i]) + 1\n"
    "        return o - 1 if ceil and (o-1)*stride[i] >= n + pad[i] else o\n"
    "    OH, OW = ext(H, 0), ext(W, 1)\n"
    "    y = np.zeros((N, C, OH, OW), dtype=np.float64 if kind == 'avg' else x.dtype)\n"
    "    for i in range(OH):\n"
    "        for j in range(OW):\n"
    "            h0, w0 = i*stride[0]-pad[0], j*stride[1]-pad[1]\n"
    "            hs = [h0+t*dil[0] for t in range(k[0])]; ws = [w0+t*dil[1] for t in range(k[1])]\n"
    "            hv = [h for h in hs if 0 <= h < H]; wv = [w for w in ws if 0 <= w < W]\n"
    "            win = x[:, :, hv][:, :, :, wv]\n"
    "            if kind == 'max':\n"
    "                y[:, :, i, j] = win.max(axis=(2, 3))\n"
    "            else:\n"
    "                cnt = len(hv) * len(wv)\n"
    "                if incl:\n"
    "                    cnt = (min(hs[-1]+1, H+pad[2]) - h0) * (min(ws[-1]+1, W+pad[3]) - w0)\n"
    "                y[:, :, i, j] = win.astype(np.float64).sum(axis=(2, 3)) / cnt\n"
    "    return y\n"
    "def rs(x, mode='nearest', scales=None, sizes=None, ct='half_pixel',\n"
    "       nm='round_prefer_floor'):\n"
    "    f = linear_coeffs if mode == 'linear' else (lambda r: nearest_coeffs(r, mode=nm))\n"
    "    if sizes is not None:\n"
    "        y = interpolate_nd(x, f, output_size=list(sizes), coordinate_transformation_mode=ct)\n"
    "    else:\n"
    "        y = interpolate_nd(x, f, scale_factors=np.array(scales, dtype=np.float64),\n"
    "                           coordinate_transformation_mode=ct)\n"
    "    return y.astype(x.dtype) if x.dtype.kind != 'f' else y\n"
    "def interp(x, size, mode, ac=None):\n"
    "    return F.interpolate(_t(x), size=size, mode=mode, align_corners=ac).numpy()\n";

#define CASE CV_OPCASE
#define CASE_TOL CV_OPCASE_TOL

static const cv_npref_opcase cases[] = {
    /* conv2d */
    CASE("conv2d", NULL, "conv(a,b,c)",
         "f32[1,3,8,8]", "f32[4,3,3,3]", "f32[4]"),
    CASE("conv2d", "stride=[2,2] pad=[1,0,2,1]", "conv(a,b,c,stride=(2,2),pad=(1,0,2,1))",
         "f32[2,3,9,8]", "f32[5,3,3,2]", "f32[5]"),
    CASE("conv2d", "dilation=[2,1] pad=[2,1]", "conv(a,b,dil=(2,1),pad=(2,1,2,1))",
         "f32[1,2,9,7]", "f32[3,2,3,3]"),
    CASE("conv2d", "groups=2 stride=[1,2]", "conv(a,b,stride=(1,2),groups=2)",
         "f32[2,4,7,7]", "f32[6,2,3,3]"),
    CASE("conv2d", "groups=4 pad=[1,1,1,1]", "conv(a,b,c,pad=(1,1,1,1),groups=4)",
         "f32[1,4,6,6]", "f32[4,1,3,3]", "f32[4]"),  /* depthwise */
    CASE("conv2d", "groups=3 stride=[2,2] dilation=[2,2] pad=[2,2,1,1]",
         "conv(a,b,c,stride=(2,2),dil=(2,2),pad=(2,2,1,1),groups=3)",
         "f32[1,3,11,10]", "f32[6,1,3,3]", "f32[6]"),  /* depthwise, multiplier 2 */
    CASE("conv2d", "stride=[1,2]", "conv(a,b,stride=(1,2))",
         "f32[N:3,2,5,5]", "f32[3,2,2,2]"),
    CASE("conv2d", NULL, "conv(a,b,c)",
         "f32[N:2,3,H:5,W:4]", "f32[2,3,1,1]", "f32[2]"),
    CASE_TOL("conv2d", "pad=[1,1]", "conv(a,b,pad=(1,1,1,1))", 2e-3,
         "f16[1,2,5,5]", "f16[2,2,3,3]"),
    CASE("conv2d", "stride=[3,3] pad=[0,2,1,0]", "conv(a,b,c,stride=(3,3),pad=(0,2,1,0))",
         "f32[2,2,10,9]", "f32[3,2,2,2]", "f32[3]"),
    /* conv_transpose2d */
    CASE("conv_transpose2d", NULL, "convt(a,b,c)",
         "f32[1,2,4,4]", "f32[2,3,3,3]", "f32[3]"),
    CASE("conv_transpose2d", "stride=[2,2] pad=[1,1,1,1] output_padding=[1,1]",
         "convt(a,b,c,stride=(2,2),pad=(1,1,1,1),opad=(1,1))",
         "f32[2,3,4,5]", "f32[3,2,3,3]", "f32[2]"),
    CASE("conv_transpose2d", "groups=2 dilation=[2,2]", "convt(a,b,dil=(2,2),groups=2)",
         "f32[1,4,3,3]", "f32[4,1,2,2]"),
    CASE("conv_transpose2d", "stride=[2,1] pad=[0,1,1,0]", "convt(a,b,stride=(2,1),pad=(0,1,1,0))",
         "f32[1,2,3,4]", "f32[2,2,3,3]"),
    CASE("conv_transpose2d", "groups=3 stride=[3,3] output_padding=[2,1]",
         "convt(a,b,c,stride=(3,3),groups=3,opad=(2,1))",
         "f32[N:2,3,2,2]", "f32[3,2,3,3]", "f32[6]"),
    CASE("conv_transpose2d", "stride=[2,3] dilation=[2,1] pad=[1,0,0,2] output_padding=[1,2]",
         "convt(a,b,c,stride=(2,3),dil=(2,1),pad=(1,0,0,2),opad=(1,2))",
         "f32[2,2,3,4]", "f32[2,3,3,2]", "f32[3]"),
    /* matmul */
    CASE("matmul", NULL, "np.matmul(a.astype(np.float64), b)",
         "f32[3,4]", "f32[4,5]"),
    CASE("matmul", NULL, "np.matmul(a.astype(np.float64), b)",
         "f32[2,1,3,4]", "f32[5,4,2]"),
    CASE("matmul", NULL, "np.matmul(a.astype(np.float64), b)",
         "f32[4]", "f32[4,3]"),
    CASE("matmul", NULL, "np.matmul(a.astype(np.float64), b)",
         "f32[3,4]", "f32[4]"),
    CASE("matmul", NULL, "np.matmul(a.astype(np.float64), b)",
         "f32[2,3,4]", "f32[4]"),
    CASE("matmul", NULL, "np.matmul(a.astype(np.float64), b)",
         "f32[4]", "f32[2,4,3]"),
    CASE("matmul", NULL, "np.matmul(a.astype(np.float64), b)",
         "f32[N:2,3,4]", "f32[4,5]"),
    CASE("matmul", NULL, "np.matmul(a, b)",
         "i32[2,3]", "i32[3,2]"),
    CASE_TOL("matmul", NULL, "np.matmul(a.astype(np.float64), b)", 2e-3,
         "f16[2,3,8]", "f16[1,8,2]"),
    /* gemm */
    CASE("gemm", "alpha=0.5 beta=2", "0.5 * (a.astype(np.float64) @ b) + 2 * c",
         "f32[3,4]", "f32[4,5]", "f32[5]"),
    CASE("gemm", "trans_a=1 trans_b=1", "a.T.astype(np.float64) @ b.T + c",
         "f32[4,3]", "f32[5,4]", "f32[3,1]"),
    CASE("gemm", "trans_b=1 alpha=-1.5", "-1.5 * (a.astype(np.float64) @ b.T)",
         "f32[2,3]", "f32[4,3]"),
    CASE("gemm", "beta=0.25", "a.astype(np.float64) @ b + 0.25 * c",
         "f32[3,2]", "f32[2,4]", "f32[]"),
    CASE("gemm", NULL, "a.astype(np.float64) @ b + c",
         "f32[N:3,6]", "f32[6,2]", "f32[1,2]"),
    /* max_pool2d */
    CASE("max_pool2d", "kernel=[2,2] stride=[2,2]", "maxpool(a,(2,2),(2,2))",
         "f32[2,3,8,8]"),
    CASE("max_pool2d", "kernel=[3,3] pad=[1,1]", "maxpool(a,(3,3),(1,1),(1,1))",
         "f32[1,2,5,6]"),
    CASE("max_pool2d", "kernel=[2,3] dilation=[2,2] stride=[1,2]",
         "maxpool(a,(2,3),(1,2),(0,0),(2,2))",
         "f32[1,2,7,9]"),
    CASE("max_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] ceil_mode=1",
         "maxpool(a,(3,3),(2,2),(1,1),ceil=True)",
         "f32[1,2,8,7]"),
    CASE("max_pool2d", "kernel=[3,2] stride=[2,2] pad=[0,1,2,0]",
         "pool_np(a,(3,2),(2,2),(0,1,2,0))",
         "f32[1,2,7,7]"),
    CASE("max_pool2d", "kernel=[2,2] stride=[2,2] ceil_mode=1", "pool_np(a,(2,2),(2,2),ceil=True)",
         "i8[1,3,5,5]"),
    CASE("max_pool2d", "kernel=[3,3] stride=[2,2]", "maxpool(a,(3,3),(2,2))",
         "f32[N:2,3,7,7]"),
    /* avg_pool2d */
    CASE("avg_pool2d", "kernel=[2,2] stride=[2,2]", "avgpool(a,(2,2),(2,2))",
         "f32[2,3,6,6]"),
    CASE("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1]", "avgpool(a,(3,3),(2,2),(1,1))",
         "f32[1,2,7,6]"),
    CASE("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] count_include_pad=1",
         "avgpool(a,(3,3),(2,2),(1,1),incl=True)",
         "f32[1,2,7,6]"),
    CASE("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] ceil_mode=1 "
         "count_include_pad=1", "avgpool(a,(3,3),(2,2),(1,1),True,True)",
         "f32[1,2,6,8]"),
    CASE("avg_pool2d", "kernel=[2,2] stride=[2,2] ceil_mode=1", "avgpool(a,(2,2),(2,2),ceil=True)",
         "f32[1,2,5,5]"),
    CASE("avg_pool2d", "kernel=[3,2] stride=[1,2] pad=[1,0,0,1]",
         "pool_np(a,(3,2),(1,2),(1,0,0,1),kind='avg')",
         "f32[1,2,6,5]"),
    CASE("avg_pool2d", "kernel=[3,2] stride=[1,2] pad=[1,0,0,1] count_include_pad=1",
         "pool_np(a,(3,2),(1,2),(1,0,0,1),kind='avg',incl=True)",
         "f32[1,2,6,5]"),
    CASE("avg_pool2d", "kernel=[2,2]", "avgpool(a,(2,2))",
         "f32[N:2,1,4,4]"),
    /* global_avg_pool */
    CASE("global_avg_pool", NULL, "a.astype(np.float64).mean(axis=(2,3), keepdims=True)",
         "f32[2,3,4,5]"),
    CASE("global_avg_pool", NULL, "a.astype(np.float64).mean(axis=2, keepdims=True)",
         "f32[2,3,7]"),
    CASE("global_avg_pool", NULL, "a.astype(np.float64).mean(axis=(2,3,4), keepdims=True)",
         "f32[N:2,2,3,2,2]"),
    /* resize */
    CASE("resize", "scales=[1,1,2,2]", "rs(a,scales=[1,1,2,2])",
         "f32[1,2,3,3]"),
    CASE("resize", "sizes=[1,2,6,7] coordinate_transformation_mode=asymmetric "
         "nearest_mode=floor", "interp(a,(6,7),'nearest')",
         "f32[1,2,3,4]"),
    CASE("resize", "mode=linear scales=[1,1,2,2]", "rs(a,'linear',scales=[1,1,2,2])",
         "f32[1,2,3,4]"),
    CASE("resize", "mode=linear sizes=[5,7] coordinate_transformation_mode=pytorch_half_pixel",
         "interp(a,(5,7),'bilinear',False)",
         "f32[1,2,3,4]"),
    CASE("resize", "mode=linear sizes=[1,1,7,5] coordinate_transformation_mode=align_corners",
         "interp(a,(7,5),'bilinear',True)",
         "f32[1,1,4,3]"),
    CASE("resize", "mode=linear scales=[1,1,0.5,0.6] "
         "coordinate_transformation_mode=asymmetric",
         "rs(a,'linear',scales=[1,1,0.5,0.6],ct='asymmetric')",
         "f32[1,2,6,5]"),
    CASE("resize", "sizes=[1,1,3,5] coordinate_transformation_mode=pytorch_half_pixel "
         "nearest_mode=round_prefer_ceil",
         "rs(a,sizes=[1,1,3,5],ct='pytorch_half_pixel',nm='round_prefer_ceil')",
         "f32[1,1,4,4]"),
    CASE("resize", "scales=[1,1,0.6,1.7] nearest_mode=ceil", "rs(a,scales=[1,1,0.6,1.7],nm='ceil')",
         "f32[1,1,5,4]"),
    CASE("resize", "mode=linear sizes=[1,1,1,3] coordinate_transformation_mode="
         "pytorch_half_pixel", "rs(a,'linear',sizes=[1,1,1,3],ct='pytorch_half_pixel')",
         "f32[1,1,3,4]"),
    CASE("resize", "scales=[2,3]", "rs(a,scales=[1,1,2,3])",
         "f32[1,2,2,3]"),
    CASE("resize", "scales=[1,1,2,1.5] coordinate_transformation_mode=align_corners",
         "rs(a,scales=[1,1,2,1.5],ct='align_corners')",
         "i64[1,2,3,4]@-1000:1000"),
    CASE("resize", "mode=linear scales=[1,1,2,2,1.5]", "rs(a,'linear',scales=[1,1,2,2,1.5])",
         "f32[1,1,2,3,2]"),
    CASE("resize", "mode=linear scales=[1,1,2,2]", "rs(a,'linear',scales=[1,1,2,2])",
         "f32[N:2,1,3,2]"),
    CASE("resize", "scales=[3]", "rs(a,scales=[3])",
         "u8[5]"),
};

static int group_setup(void **state)
{
    return cv_opstest_setup(cases, (int)(sizeof cases / sizeof cases[0]), prelude);
}

static int group_teardown(void **state)
{
    cv_opstest_teardown();
    return 0;
}

static void test_conv2d(void **state) { cv_opstest_check("conv2d", 10); }
static void test_conv_transpose2d(void **state) { cv_opstest_check("conv_transpose2d", 6); }
static void test_matmul(void **state) { cv_opstest_check("matmul", 9); }
static void test_gemm(void **state) { cv_opstest_check("gemm", 5); }
static void test_max_pool2d(void **state) { cv_opstest_check("max_pool2d", 7); }
static void test_avg_pool2d(void **state) { cv_opstest_check("avg_pool2d", 8); }
static void test_global_avg_pool(void **state) { cv_opstest_check("global_avg_pool", 3); }
static void test_resize(void **state) { cv_opstest_check("resize", 14); }

/* 1-D @ 1-D is a rank-0 result, which the NumPy harness returns as [1]
 * (np.ascontiguousarray never yields 0-d), so this one is compared here. */
static void test_matmul_dot(void **state)
{
    const char *specs[2] = {"f32[5]", "f32[5]"};
    cv_module *m = cv_module_new("test");
    cv_diag d;
    cv_diag_init(&d);
    int rc = -1;
    cv_op *op = cv_npref_build_op(m, "matmul", NULL, specs, 2, 1, &d, &rc);
    assert_non_null(op);
    assert_int_equal(rc, 0);
    cv_value *res = cv_op_result(op);
    assert_int_equal(res->type.shape.rank, 0);
    cv_func_set_returns(op->func, &res, 1);
    cv_tensor in[2], out = {0}, want = {0};
    int64_t five = 5;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cv_tensor_alloc(&in[i], CV_F32, 1, &five), 0);
        cv_npref_fill(&in[i], 7 + (uint64_t)i, -3, 3);
    }
    assert_int_equal(cv_interp_run(op->func, in, 2, &out, &d), 0);
    char msg[256];
    if (cv_npref_eval("np.dot(a.astype(np.float64), b).reshape(1)", in, 2, &want, msg, sizeof msg))
        fail_msg("%s", msg);
    assert_int_equal(out.rank, 0);
    assert_int_equal(out.numel, 1);
    assert_true(fabs(cv_tensor_get(&out, 0) - cv_tensor_get(&want, 0)) < 1e-5);
    for (int i = 0; i < 2; i++)
        cv_tensor_free(&in[i]);
    cv_tensor_free(&out);
    cv_tensor_free(&want);
    cv_module_free(m);
    cv_diag_free(&d);
}

/* ---- shape functions: result types, with symbols ------------------------- */

typedef struct infer_case {
    const char *op, *attrs;
    const char *in[4];
    const char *want;   /* the inferred result type, or "CVnnnn" for an expected error */
} infer_case;

static const infer_case infer_cases[] = {
    {"conv2d", "stride=[2,2] pad=[1,1,1,1]", {"f32[N:1,3,32,32]", "f32[8,3,3,3]", "f32[8]"},
     "f32[N,8,16,16]"},
    {"conv2d", "groups=8", {"f32[batch:1,8,H:4,W:4]", "f32[8,1,1,1]"}, "f32[batch,8,H,W]"},
    {"conv2d", "pad=[1,1]", {"f32[N:1,3,H:5,W:5]", "f32[4,3,3,3]"}, "f32[N,4,H,W]"},
    {"conv2d", "pad=[2,2] dilation=[2,2]", {"f16[N:1,3,H:5,W:5]", "f16[4,3,3,3]"},
     "f16[N,4,H,W]"},
    {"conv_transpose2d", "stride=[2,2] pad=[1,1] output_padding=[1,1]",
     {"f32[N:1,16,7,7]", "f32[16,8,3,3]"}, "f32[N,8,14,14]"},
    {"conv_transpose2d", "pad=[1,1]", {"f32[N:1,4,H:3,W:3]", "f32[4,2,3,3]"}, "f32[N,2,H,W]"},
    {"matmul", NULL, {"f32[N:1,T:2,64]", "f32[64,10]"}, "f32[N,T,10]"},
    {"matmul", NULL, {"f32[B:1,1,K:3,4]", "f32[5,4,S:2]"}, "f32[B,5,K,S]"},
    {"matmul", NULL, {"f32[K:3]", "f32[K:3]"}, "f32[]"},
    {"gemm", "trans_b=1", {"f32[N:1,512]", "f32[1000,512]", "f32[1000]"}, "f32[N,1000]"},
    {"max_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1]", {"f32[N:1,64,112,112]"},
     "f32[N,64,56,56]"},
    {"max_pool2d", "kernel=[3,3] stride=[2,2] ceil_mode=1", {"f32[N:1,2,6,6]"}, "f32[N,2,3,3]"},
    {"max_pool2d", "kernel=[3,3] pad=[1,1]", {"f32[N:1,2,H:6,W:6]"}, "f32[N,2,H,W]"},
    {"avg_pool2d", "kernel=[2,2] stride=[2,2]", {"f32[N:1,3,7,7]"}, "f32[N,3,3,3]"},
    {"global_avg_pool", NULL, {"f32[N:1,512,7,7]"}, "f32[N,512,1,1]"},
    {"resize", "scales=[1,1,2,2]", {"f32[N:1,3,H:4,5]"}, "f32[N,3,2*H,10]"},
    {"resize", "scales=[2,1,1,1]", {"f32[N:1,1,4,4]"}, "f32[2*N,1,4,4]"},
    {"resize", "scales=[1,1,0.5,1]", {"f32[N:1,1,H:4,4]"}, "f32[N,1,H floordiv 2,4]"},
    /* Window extents over symbols are expressions (floor mode, ceil mode). */
    {"conv2d", "stride=[2,2]", {"f32[1,3,H:8,8]", "f32[4,3,3,3]"},
     "f32[1,4,(H + 1) floordiv 2 - 1,3]"},
    {"conv2d", "stride=[2,2] pad=[1,1]", {"f32[N:1,3,H:8,W:8]", "f32[4,3,3,3]"},
     "f32[N,4,(H + 1) floordiv 2,(W + 1) floordiv 2]"},
    {"conv_transpose2d", "stride=[2,2]", {"f32[1,3,H:4,4]", "f32[3,2,3,3]"},
     "f32[1,2,2*H + 1,9]"},
    {"max_pool2d", "kernel=[2,2] stride=[2,2]", {"f32[1,1,H:4,4]"}, "f32[1,1,H floordiv 2,2]"},
    {"max_pool2d", "kernel=[3,3] stride=[2,2] ceil_mode=1", {"f32[N:1,2,H:6,6]"},
     "f32[N,2,min((H + 1) floordiv 2, H floordiv 2),3]"},
    {"resize", "sizes=[1,3,8,10]", {"f32[1,3,H:4,5]"}, "f32[1,3,8,10]"},
    {"resize", "scales=[1,1,2,2]", {"f32[N:1,3,4,5]"}, "f32[N,3,8,10]"},
    {"resize", "scales=[1,1,0.5,0.34]", {"f32[1,3,5,7]"}, "f32[1,3,2,2]"},
};

static void test_infer_symbolic(void **state)
{
    for (size_t i = 0; i < sizeof infer_cases / sizeof infer_cases[0]; i++) {
        const infer_case *c = &infer_cases[i];
        cv_opstest_expect_infer(i, c->op, c->attrs, c->in, 4, 1, c->want);
    }
}

/* ---- shape functions: errors --------------------------------------------- */

typedef struct error_case {
    const char *op, *attrs;
    const char *in[4];
    int code;
} error_case;

static const error_case error_cases[] = {
    {"conv2d", NULL, {"f32[1,3,8,8]", "f32[4,4,3,3]"}, 3101},
    {"conv2d", "groups=2", {"f32[1,4,8,8]", "f32[4,1,3,3]"}, 3101},
    {"conv2d", "groups=2", {"f32[1,4,8,8]", "f32[3,2,3,3]"}, 3101},
    {"conv2d", NULL, {"f32[1,3,8]", "f32[4,3,3,3]"}, 3001},
    {"conv2d", NULL, {"f32[1,3,8,8]", "f32[4,3,3,3]", "f32[5]"}, 3005},
    {"conv2d", NULL, {"f32[1,3,8,8]", "f16[4,3,3,3]"}, 2009},
    {"conv2d", NULL, {"i32[1,3,8,8]", "i32[4,3,3,3]"}, 4002},
    {"conv2d", "stride=[0,1]", {"f32[1,3,8,8]", "f32[4,3,3,3]"}, 3007},
    {"conv2d", "stride=[1,1,1]", {"f32[1,3,8,8]", "f32[4,3,3,3]"}, 3007},
    {"conv2d", "pad=[1,1,1]", {"f32[1,3,8,8]", "f32[4,3,3,3]"}, 3007},
    {"conv2d", "pad=[-1,0,0,0]", {"f32[1,3,8,8]", "f32[4,3,3,3]"}, 3007},
    {"conv2d", "groups=0", {"f32[1,3,8,8]", "f32[4,3,3,3]"}, 3007},
    {"conv2d", "pad=[4611686018427387904,0,4611686018427387904,0]",
     {"f32[1,3,8,8]", "f32[4,3,3,3]"}, 3004},
    {"conv2d", NULL, {"f32[1,3,2,8]", "f32[4,3,3,3]"}, 3005},
    {"conv2d", NULL, {"f32[1,C:3,8,8]", "f32[4,3,3,3]"}, 3101},
    {"conv2d", "strides=[1,1]", {"f32[1,3,8,8]", "f32[4,3,3,3]"}, 2004},
    {"conv_transpose2d", NULL, {"f32[1,3,4,4]", "f32[2,3,3,3]"}, 3101},
    {"conv_transpose2d", "output_padding=[1,1]", {"f32[1,3,4,4]", "f32[3,2,3,3]"}, 3007},
    {"conv_transpose2d", "pad=[3,3]", {"f32[1,3,1,1]", "f32[3,2,3,3]"}, 3005},
    {"matmul", NULL, {"f32[3,4]", "f32[5,6]"}, 3102},
    {"matmul", NULL, {"f32[2,3,4]", "f32[3,4,5]"}, 3002},
    {"matmul", NULL, {"f32[]", "f32[3]"}, 3001},
    {"matmul", NULL, {"f32[N:2,4]", "f32[M:2,4]"}, 3102},
    {"matmul", NULL, {"f32[3,4]", "i32[4,5]"}, 2009},
    {"matmul", NULL, {"bool[3,4]", "bool[4,5]"}, 4002},
    {"gemm", NULL, {"f32[3,4]", "f32[5,6]"}, 3102},
    {"gemm", NULL, {"f32[3,4,1]", "f32[4,6]"}, 3001},
    {"gemm", NULL, {"f32[3,4]", "f32[4,6]", "f32[4]"}, 3002},
    {"gemm", NULL, {"f32[3,4]", "f32[4,6]", "f32[2,3,6]"}, 3002},
    {"max_pool2d", NULL, {"f32[1,1,4,4]"}, 2006},
    {"max_pool2d", "kernel=[5,5]", {"f32[1,1,4,4]"}, 3005},
    {"max_pool2d", "kernel=[2]", {"f32[1,1,4,4]"}, 3007},
    {"max_pool2d", "kernel=[2,2] pad=[2,2]", {"f32[1,1,4,4]"}, 3007},
    {"max_pool2d", "kernel=[2,2]", {"f32[1,4,4]"}, 3001},
    {"avg_pool2d", "kernel=[2,2]", {"i32[1,1,4,4]"}, 4002},
    {"avg_pool2d", "kernel=[2,2] dilation=[2,2]", {"f32[1,1,4,4]"}, 2004},
    {"global_avg_pool", NULL, {"f32[3,4]"}, 3001},
    {"resize", NULL, {"f32[1,1,4,4]"}, 2006},
    {"resize", "scales=[1,1,2,2] sizes=[1,1,8,8]", {"f32[1,1,4,4]"}, 2017},
    {"resize", "scales=[1,2,2]", {"f32[1,1,4,4]"}, 3007},
    {"resize", "scales=[1,1,0,2]", {"f32[1,1,4,4]"}, 3007},
    {"resize", "sizes=[1,1,0,2]", {"f32[1,1,4,4]"}, 3007},
    {"resize", "mode=cubic scales=[2,2]", {"f32[1,1,4,4]"}, 4003},
    {"resize", "scales=[2,2] coordinate_transformation_mode=tf_crop_and_resize",
     {"f32[1,1,4,4]"}, 4003},
    {"resize", "scales=[2,2] nearest_mode=banker", {"f32[1,1,4,4]"}, 4003},
    {"resize", "scales=[1,1,0.3,1]", {"f32[1,1,H:4,4]"}, 3009},
    {"resize", "scales=[1,1,0.1,1]", {"f32[1,1,4,4]"}, 3005},
};

static void test_infer_errors(void **state)
{
    for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
        const error_case *c = &error_cases[i];
        char want[16];
        snprintf(want, sizeof want, "CV%04d", c->code);
        cv_opstest_expect_infer(i, c->op, c->attrs, c->in, 4, 1, want);
    }
}

/* ---- a small network through the real interpreter ------------------------ */

static cv_value *add_op(cv_func *f, const char *name, cv_value **in, int n, const char *ints_name,
                        const int64_t *ints, int n_ints, cv_diag *d)
{
    cv_op *op = cv_op_new(f, name, in, n);
    if (ints_name)
        cv_op_set_ints(op, ints_name, ints, n_ints);
    assert_int_equal(cv_op_finish(op, 1, d), 0);
    return cv_op_result(op);
}

/* conv -> max_pool -> flatten -> gemm(trans_b), batch N: checks that the
 * interpreter binds N, and that the chain agrees with torch end to end. */
static void test_interp_lenet_like(void **state)
{
    cv_module *m = cv_module_new("lenet.cuir");
    cv_func *f = cv_func_new(m, "tiny");
    cv_diag d;
    cv_diag_init(&d);
    const char *n_sym = cv_module_intern(m, "N", 1);
    cv_type tx = {CV_F32, {4, {{0, n_sym}, {1, NULL}, {8, NULL}, {8, NULL}}}};
    cv_type tw = {CV_F32, {4, {{4, NULL}, {1, NULL}, {3, NULL}, {3, NULL}}}};
    cv_type tb = {CV_F32, {1, {{4, NULL}}}};
    cv_type tf = {CV_F32, {2, {{5, NULL}, {64, NULL}}}};
    cv_value *in[5] = {cv_func_add_input(f, "x", &tx), cv_func_add_input(f, "w", &tw),
                       cv_func_add_input(f, "b", &tb), cv_func_add_input(f, "fc", &tf)};
    static const int64_t pad[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    cv_value *v = add_op(f, "conv2d", in, 3, "pad", pad, 4, &d);
    cv_op *pool = cv_op_new(f, "max_pool2d", &v, 1);
    cv_op_set_ints(pool, "kernel", k2, 2);
    cv_op_set_ints(pool, "stride", k2, 2);
    assert_int_equal(cv_op_finish(pool, 1, &d), 0);
    v = cv_op_result(pool);
    v = add_op(f, "flatten", &v, 1, NULL, NULL, 0, &d);
    cv_value *g_in[2] = {v, in[3]};
    cv_op *g = cv_op_new(f, "gemm", g_in, 2);
    cv_op_set_int(g, "trans_b", 1);
    assert_int_equal(cv_op_finish(g, 1, &d), 0);
    v = cv_op_result(g);
    char ty[64];
    cv_type_format(&v->type, ty, sizeof ty);
    assert_string_equal(ty, "f32[N,5]");
    cv_func_set_returns(f, &v, 1);

    cv_tensor t[4], out = {0}, want = {0};
    const cv_type *types[4] = {&tx, &tw, &tb, &tf};
    for (int i = 0; i < 4; i++) {
        int64_t dims[4];
        for (int k = 0; k < types[i]->shape.rank; k++)
            dims[k] = types[i]->shape.d[k].sym ? 3 : types[i]->shape.d[k].n;
        assert_int_equal(cv_tensor_alloc(&t[i], CV_F32, types[i]->shape.rank, dims), 0);
        cv_npref_fill(&t[i], 100 + (uint64_t)i, -1, 1);
    }
    int rc = cv_interp_run(f, t, 4, &out, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.dims[0], 3);
    char msg[512];
    rc = cv_npref_eval("(lambda torch, F: F.linear(F.max_pool2d(F.conv2d(torch.from_numpy(a)"
                       ".double(), torch.from_numpy(b).double(), torch.from_numpy(c).double(), "
                       "padding=1), 2, 2).flatten(1), torch.from_numpy(d).double()).numpy())"
                       "(__import__('torch'), __import__('torch.nn.functional').nn.functional)",
                       t, 4, &want, msg, sizeof msg);
    if (rc)
        fail_msg("%s", msg);
    if (cv_npref_compare(&out, &want, 1e-5, 1e-6, msg, sizeof msg))
        fail_msg("%s", msg);
    for (int i = 0; i < 4; i++)
        cv_tensor_free(&t[i]);
    cv_tensor_free(&out);
    cv_tensor_free(&want);
    cv_module_free(m);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv2d),
        cmocka_unit_test(test_conv_transpose2d),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul_dot),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_max_pool2d),
        cmocka_unit_test(test_avg_pool2d),
        cmocka_unit_test(test_global_avg_pool),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_infer_symbolic),
        cmocka_unit_test(test_infer_errors),
        cmocka_unit_test(test_interp_lenet_like),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
