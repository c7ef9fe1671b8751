/* Reductions, softmax, norms and (de)quantization: interpreter results
 * against NumPy computed at test time (one Python run for the whole file),
 * plus the shape functions' types and error codes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "compiler-core/ir/ops_internal.h"
#include "tests/support/numpyref.h"
#include "tests/support/opstest.h"

static const char prelude[] =
    "def f64(x): return np.asarray(x).astype(np.float64)\n"
    "def sm(x, axis):\n"
    "    e = np.exp(f64(x) - f64(x).max(axis=axis, keepdims=True))\n"
    "    return e / e.sum(axis=axis, keepdims=True)\n"
    "def lsm(x, axis):\n"
    "    d = f64(x) - f64(x).max(axis=axis, keepdims=True)\n"
    "    return d - np.log(np.exp(d).sum(axis=axis, keepdims=True))\n"
    "def argmax_last(x, axis):\n"
    "    return x.shape[axis] - 1 - np.argmax(np.flip(x, axis), axis=axis, keepdims=True)\n"
    "def ch(v, x): return f64(v).reshape((1, -1) + (1,) * (x.ndim - 2))\n"
    "def bn(x, s, b, m, v, eps):\n"
    "    return (f64(x) - ch(m, x)) / np.sqrt(ch(v, x) + eps) * ch(s, x) + ch(b, x)\n"
    "def ln(x, s, b=None, axis=-1, eps=1e-5):\n"
    "    x = f64(x); ax = tuple(range(axis % x.ndim, x.ndim))\n"
    "    m = x.mean(axis=ax, keepdims=True); v = ((x - m) ** 2).mean(axis=ax, keepdims=True)\n"
    "    y = (x - m) / np.sqrt(v + eps) * f64(s)\n"
    "    return y if b is None else y + f64(b)\n"
    "def per_axis(v, x, axis):\n"
    "    if v is None or v.ndim == 0 or v.size == 1: return v\n"
    "    sh = [1] * x.ndim; sh[axis] = -1; return v.reshape(sh)\n"
    "def qz(x, s, zp=None, dt=np.uint8, axis=1):\n"
    "    s, zp = per_axis(s.astype(np.float32), x, axis), per_axis(zp, x, axis)\n"
    "    q = np.rint(x.astype(np.float32) / s).astype(np.float64)\n"
    "    if zp is not None: q = q + zp; dt = zp.dtype\n"
    "    i = np.iinfo(dt); return np.clip(q, i.min, i.max).astype(dt)\n"
    "def dq(x, s, zp=None, axis=1):\n"
    "    s, zp = per_axis(s.astype(np.float32), x, axis), per_axis(zp, x, axis)\n"
    "    d = x.astype(np.int64) - (0 if zp is None else zp.astype(np.int64))\n"
    "    return d.astype(np.float32) * s\n"
    "def qconv(x, w, ws, b=None, xs=0.05, zp=128, stride=1, pad=0):\n"
    "    q = np.clip(np.rint(x.astype(np.float32) / np.float32(xs)) + zp, 0, 255) - zp\n"
    "    q = np.pad(q.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))\n"
    "    M, _, KH, KW = w.shape; OH = (q.shape[2] - KH) // stride + 1\n"
    "    OW = (q.shape[3] - KW) // stride + 1; acc = 0\n"
    "    for kh in range(KH):\n"
    "        for kw in range(KW):\n"
    "            p = q[:, :, kh:kh + stride * OH:stride, kw:kw + stride * OW:stride]\n"
    "            acc = acc + np.einsum('nchw,mc->nmhw', p, f64(w[:, :, kh, kw]))\n"
    "    s = (np.float32(xs) * ws.astype(np.float32)).reshape(1, -1, 1, 1)\n"
    "    y = np.asarray(acc, np.float32) * s\n"
    "    return y if b is None else y + b.astype(np.float32).reshape(1, -1, 1, 1)\n";

#define CASE CV_OPCASE

static const cv_npref_opcase cases[] = {
    /* reduce_sum */
    CASE("reduce_sum", "axes=[1]", "f64(a).sum(axis=1, keepdims=True)", "f32[2,3,4]"),
    CASE("reduce_sum", "axes=[0,-1] keepdims=0", "f64(a).sum(axis=(0, 2))", "f32[N:2,3,4]"),
    CASE("reduce_sum", NULL, "f64(a).sum(keepdims=True)", "f32[2,3]"),
    CASE("reduce_sum", "axes=[] keepdims=0", "f64(a).sum()", "f32[3,2]"),
    CASE("reduce_sum", "axes=[1]", "a.sum(axis=1, keepdims=True, dtype=np.int32)",
         "i32[2,3]=2147483647,1,0,5,6,7"),
    CASE("reduce_sum", "keepdims=0", "a.sum()", "i64[3]=9007199254740993,1,1"),
    CASE("reduce_sum", "axes=[0] keepdims=0", "f64(a).sum(axis=0)", "f16[5,3]"),
    CASE("reduce_sum", "axes=[0] keepdims=0", "np.zeros(3, np.float32)", "f32[0,3]"),
    /* reduce_mean */
    CASE("reduce_mean", "axes=[-1]", "f64(a).mean(axis=-1, keepdims=True)", "f32[2,3,4]"),
    CASE("reduce_mean", "axes=[0,2] keepdims=0", "f64(a).mean(axis=(0, 2))", "bf16[2,3,2]"),
    CASE("reduce_mean", "axes=[1]", "np.trunc(f64(a).sum(axis=1, keepdims=True) / 3)",
         "i32[2,3]=-7,1,1,7,1,0"),
    CASE("reduce_mean", "axes=[0] keepdims=0", "np.full(2, np.nan)", "f32[0,2]"),
    /* reduce_max */
    CASE("reduce_max", "axes=[0,2] keepdims=0", "a.max(axis=(0, 2))", "f32[2,3,4]"),
    CASE("reduce_max", "axes=[1]", "a.max(axis=1, keepdims=True)", "f32[2,2]=nan,1,2,3"),
    CASE("reduce_max", NULL, "a.max(keepdims=True)", "i64[2]=9007199254740993,9007199254740992"),
    CASE("reduce_max", "axes=[1] keepdims=0", "a.max(axis=1)", "u8[N:3,4]"),
    CASE("reduce_max", "axes=[0] keepdims=0", "np.full(2, -2**31, np.int32)", "i32[0,2]"),
    /* reduce_min */
    CASE("reduce_min", "axes=[1]", "a.min(axis=1, keepdims=True)", "f32[3,4]"),
    CASE("reduce_min", "axes=[-2] keepdims=0", "a.min(axis=-2)", "i8[2,5,3]"),
    CASE("reduce_min", "axes=[0]", "a.min(axis=0, keepdims=True)", "f32[3]=2,nan,1"),
    CASE("reduce_min", "axes=[1] keepdims=0", "np.full(2, np.inf)", "f32[2,0]"),
    /* reduce_prod */
    CASE("reduce_prod", "axes=[1]", "f64(a).prod(axis=1, keepdims=True)", "f32[2,3,4]@0.5:1.5"),
    CASE("reduce_prod", "keepdims=0", "a.prod()", "i32[4]=3,-2,5,7"),
    CASE("reduce_prod", "axes=[0] keepdims=0", "np.ones(2, np.float32)", "f32[0,2]"),
    /* argmax */
    CASE("argmax", NULL, "np.argmax(a, axis=0, keepdims=True)", "f32[3,4]"),
    CASE("argmax", "axis=-1 keepdims=0", "np.argmax(a, axis=-1)", "f32[N:2,3,5]"),
    CASE("argmax", "axis=1", "np.argmax(a, axis=1, keepdims=True)", "i32[2,4]=1,3,3,0,5,5,5,5"),
    CASE("argmax", "axis=1 select_last_index=1", "argmax_last(a, 1)", "i32[2,4]=1,3,3,0,5,5,5,5"),
    CASE("argmax", "keepdims=0", "np.argmax(a, axis=0)", "f32[4]=1,nan,3,nan"),
    CASE("argmax", "select_last_index=1", "argmax_last(a, 0)", "f32[4]=1,nan,3,nan"),
    CASE("argmax", "axis=1 keepdims=0", "np.argmax(a, axis=1)", "i64[2,2]=9007199254740993,9007199254740992,-1,0"),
    CASE("argmax", "axis=0", "np.argmax(a, axis=0, keepdims=True)", "f16[6,2]"),
    /* softmax, log_softmax */
    CASE("softmax", NULL, "sm(a, -1)", "f32[2,5]"),
    CASE("softmax", "axis=1", "sm(a, 1)", "f32[2,3,4]"),
    CASE("softmax", "axis=0", "sm(a, 0)", "f32[N:3,2]"),
    CASE("softmax", NULL, "sm(a, -1)", "f32[3]=1000,1001,1002"),
    CASE("softmax", NULL, "sm(a, -1)", "f16[2,4]"),
    CASE("log_softmax", NULL, "lsm(a, -1)", "f32[2,5]"),
    CASE("log_softmax", "axis=-2", "lsm(a, -2)", "f32[2,3,4]"),
    CASE("log_softmax", NULL, "lsm(a, -1)", "f32[3]=1000,1001,-1000"),
    CASE("log_softmax", "axis=0", "lsm(a, 0)", "bf16[4,2]"),
    /* batch_norm */
    CASE("batch_norm", NULL, "bn(a, b, c, d, e, 1e-5)", "f32[N:2,3,4,4]", "f32[3]", "f32[3]",
         "f32[3]", "f32[3]@0.1:2"),
    CASE("batch_norm", "epsilon=0.1", "bn(a, b, c, d, e, 0.1)", "f32[4,3]", "f32[3]", "f32[3]",
         "f32[3]", "f32[3]@0:2"),
    CASE("batch_norm", NULL, "bn(a, b, c, d, e, 1e-5)", "f16[1,2,3]", "f32[2]", "f32[2]",
         "f32[2]", "f32[2]@0.5:2"),
    /* layer_norm */
    CASE("layer_norm", NULL, "ln(a, b, c)", "f32[2,3,4]", "f32[4]", "f32[4]"),
    CASE("layer_norm", "axis=1", "ln(a, b, c, axis=1)", "f32[N:2,3,4]", "f32[3,4]", "f32[3,4]"),
    CASE("layer_norm", NULL, "ln(a, b)", "f32[2,5]", "f32[5]"),
    CASE("layer_norm", "axis=1 epsilon=0.01", "ln(a, b, c, axis=1, eps=0.01)", "f32[2,3,4]",
         "f32[1,4]", "f32[]"),
    CASE("layer_norm", "axis=0", "ln(a, b, c, axis=0)", "f32[3,2]", "f32[3,2]", "f32[2]"),
    CASE("layer_norm", NULL, "ln(a, b, c)", "f16[3,8]", "f16[8]", "f16[8]"),
    /* quantize_linear */
    CASE("quantize_linear", NULL, "qz(a, b, c)", "f32[2,3]@-2:2", "f32[]=0.02", "u8[]=128"),
    CASE("quantize_linear", NULL, "qz(a, b)", "f32[6]@-1:6", "f32[]=0.05"),
    CASE("quantize_linear", NULL, "qz(a, b, c)", "f32[N:2,4]", "f32[1]=0.03", "i8[1]=-3"),
    CASE("quantize_linear", NULL, "qz(a, b, c)", "f32[2,3,4]", "f32[3]=0.1,0.2,0.05",
         "u8[3]=0,10,250"),
    CASE("quantize_linear", "axis=-1", "qz(a, b, c, axis=-1)", "f32[2,3]", "f32[3]=0.01,0.02,0.5",
         "i8[3]=0,-5,5"),
    CASE("quantize_linear", NULL, "qz(a, b, c)", "f32[6]=0.5,1.5,2.5,-0.5,-1.5,-2.5", "f32[]=1",
         "i8[]=0"),
    CASE("quantize_linear", NULL, "qz(a, b)", "f32[4]=1000,-1000,3,255.5", "f32[]=1"),
    CASE("quantize_linear", NULL, "qz(a, b, c)", "f16[5]", "f16[]=0.01", "u8[]=100"),
    /* dequantize_linear */
    CASE("dequantize_linear", NULL, "dq(a, b, c)", "u8[2,3]@0:255", "f32[]=0.02", "u8[]=128"),
    CASE("dequantize_linear", NULL, "dq(a, b, c)", "i8[2,3,2]@-128:127", "f32[3]=0.1,0.2,0.3",
         "i8[3]=0,-1,5"),
    CASE("dequantize_linear", "axis=0", "dq(a, b, c, axis=0)", "i8[2,3]@-128:127",
         "f32[2]=0.5,0.25", "i8[2]=1,2"),
    CASE("dequantize_linear", NULL, "dq(a, b)", "i32[4]=2147483647,-2147483648,0,5",
         "f32[]=0.001"),
    CASE("dequantize_linear", NULL, "dq(a, b, c)", "i32[N:3]", "f32[]=0.5", "i32[]=-7"),
    /* qconv2d (the int8 pass's convolution) */
    CASE("qconv2d", "x_scale=0.05 x_zp=128 pad=[1,1]", "qconv(a, b, c, d, 0.05, 128, 1, 1)",
         "f32[2,3,5,5]@-3:3", "i8[4,3,3,3]@-127:127", "f32[4]=0.01,0.02,0.005,0.03", "f32[4]"),
    CASE("qconv2d", "x_scale=0.02 x_zp=0 stride=[2,2]", "qconv(a, b, c, None, 0.02, 0, 2, 0)",
         "f32[N:1,5,6,6]@-1:4", "i8[3,5,1,1]@-127:127", "f32[3]=0.1,0.2,0.3"),
};

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int setup(void **state)
{
    return cv_opstest_setup(cases, N_CASES, prelude);
}

static int teardown(void **state)
{
    cv_opstest_teardown();
    return 0;
}

#define OP_TEST(op) \
    static void test_##op(void **state) { cv_opstest_check(#op, 1); }
OP_TEST(reduce_sum) OP_TEST(reduce_mean) OP_TEST(reduce_max) OP_TEST(reduce_min)
OP_TEST(argmax) OP_TEST(softmax) OP_TEST(log_softmax) OP_TEST(batch_norm) OP_TEST(layer_norm)
OP_TEST(quantize_linear) OP_TEST(dequantize_linear) OP_TEST(qconv2d)

/* Every op of the three families has at least one NumPy case. */
static void test_every_op_has_a_case(void **state)
{
    const cv_op_family *fams[] = {&cv_ops_reduce, &cv_ops_norm, &cv_ops_quant};
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < fams[f]->count; i++) {
            const char *name = fams[f]->defs[i].name;
            int found = 0;
            for (int k = 0; k < N_CASES && !found; k++)
                found = strcmp(cases[k].tag, name) == 0;
            if (!found)
                fail_msg("op %s has no numpy case", name);
            assert_ptr_equal(cv_op_def_lookup(name), &fams[f]->defs[i]);
        }
}

/* ---- shape functions: inferred types and error codes --------------------- */

typedef struct infer_case {
    const char *op, *attrs;
    const char *in[5];
    const char *want;   /* the inferred result type, or "CVnnnn" for the expected error */
} infer_case;

static const infer_case infer_cases[] = {
    {"reduce_sum", "axes=[1] keepdims=0", {"f32[N:1,3,4]"}, "f32[N,4]"},
    {"reduce_sum", "axes=[1]", {"f32[N:1,3,4]"}, "f32[N,1,4]"},
    {"reduce_max", NULL, {"i8[N:1,3,4]"}, "i8[1,1,1]"},
    {"reduce_mean", "axes=[-1] keepdims=0", {"f32[N:1]"}, "f32[]"},
    {"reduce_min", "axes=[0,2] keepdims=0", {"u8[N:1,M:1,2]"}, "u8[M]"},
    {"argmax", "axis=1 keepdims=0", {"f32[N:1,5]"}, "i64[N]"},
    {"argmax", NULL, {"u8[3,N:1]"}, "i64[1,N]"},
    {"softmax", NULL, {"f16[N:1,10]"}, "f16[N,10]"},
    {"batch_norm", NULL, {"f32[N:1,C:3,4]", "f32[C:3]", "f32[C:3]", "f32[C:3]", "f32[C:3]"},
     "f32[N,C,4]"},
    {"layer_norm", "axis=1", {"f32[N:1,T:2,8]", "f32[8]"}, "f32[N,T,8]"},
    {"quantize_linear", NULL, {"f32[N:1,3]", "f32[]"}, "u8[N,3]"},
    {"quantize_linear", NULL, {"f32[N:1,3]", "f32[3]", "i8[3]"}, "i8[N,3]"},
    {"quantize_linear", "axis=0", {"f32[N:1,3]", "f32[N:1]"}, "u8[N,3]"},
    {"dequantize_linear", NULL, {"i32[N:1,3]", "f32[3]", "i32[3]"}, "f32[N,3]"},
    /* axes and attributes */
    {"reduce_sum", "axes=[2]", {"f32[2,3]"}, "CV3006"},
    {"reduce_sum", "axes=[-3]", {"f32[2,3]"}, "CV3006"},
    {"reduce_sum", "axes=[0,0]", {"f32[2,3]"}, "CV2017"},
    {"reduce_sum", "axes=[1,-1]", {"f32[2,3]"}, "CV2017"},
    {"reduce_sum", "axes=[0,1,0]", {"f32[2,3]"}, "CV2017"},
    {"reduce_sum", "keepdims=2", {"f32[2,3]"}, "CV2017"},
    {"reduce_sum", "axes=1", {"f32[2,3]"}, "CV2005"},
    {"reduce_sum", "axis=1", {"f32[2,3]"}, "CV2004"},
    {"argmax", "axis=2", {"f32[2,3]"}, "CV3006"},
    {"argmax", "select_last_index=3", {"f32[2,3]"}, "CV2017"},
    {"argmax", NULL, {"f32[0,3]"}, "CV3005"},
    {"softmax", "axis=-3", {"f32[2,3]"}, "CV3006"},
    {"log_softmax", "axis=1", {"f32[]"}, "CV3006"},
    {"layer_norm", "axis=2", {"f32[2,3]", "f32[3]"}, "CV3006"},
    /* dtypes */
    {"reduce_sum", NULL, {"bool[3]"}, "CV4002"},
    {"argmax", NULL, {"bool[3]"}, "CV4002"},
    {"softmax", NULL, {"i32[3]"}, "CV4002"},
    {"batch_norm", NULL, {"i32[1,2]", "f32[2]", "f32[2]", "f32[2]", "f32[2]"}, "CV4002"},
    {"layer_norm", NULL, {"f32[2,3]", "f16[3]"}, "CV2009"},
    {"quantize_linear", NULL, {"i32[3]", "f32[]"}, "CV4002"},
    {"quantize_linear", NULL, {"f32[3]", "i32[]"}, "CV4002"},
    {"quantize_linear", NULL, {"f32[3]", "f32[]", "f32[]"}, "CV4002"},
    {"dequantize_linear", NULL, {"f32[3]", "f32[]"}, "CV4002"},
    {"dequantize_linear", NULL, {"i8[3]", "f32[]", "u8[]"}, "CV2009"},
    /* shapes */
    {"batch_norm", NULL, {"f32[4]", "f32[4]", "f32[4]", "f32[4]", "f32[4]"}, "CV3001"},
    {"batch_norm", NULL, {"f32[1,3,2]", "f32[4]", "f32[3]", "f32[3]", "f32[3]"}, "CV3002"},
    {"batch_norm", NULL, {"f32[1,3,2]", "f32[3]", "f32[3]", "f32[1,3]", "f32[3]"}, "CV3001"},
    {"batch_norm", NULL, {"f32[1,C:3,2]", "f32[3]", "f32[3]", "f32[3]", "f32[3]"}, "CV3002"},
    {"layer_norm", NULL, {"f32[2,4]", "f32[5]"}, "CV3002"},
    {"layer_norm", NULL, {"f32[2,4]", "f32[2,4]"}, "CV3002"},
    {"layer_norm", "axis=0", {"f32[2,4]", "f32[4]", "f32[3]"}, "CV3002"},
    {"quantize_linear", NULL, {"f32[2,3]", "f32[3,1]"}, "CV3001"},
    {"quantize_linear", NULL, {"f32[2,3]", "f32[2]"}, "CV3002"},
    {"quantize_linear", "axis=5", {"f32[2,3]", "f32[3]"}, "CV3006"},
    {"quantize_linear", NULL, {"f32[2,3]", "f32[]", "u8[3]"}, "CV3002"},
    {"dequantize_linear", NULL, {"u8[2,3]", "f32[3]", "u8[2]"}, "CV3002"},
    /* operand counts */
    {"batch_norm", NULL, {"f32[1,3]", "f32[3]", "f32[3]", "f32[3]"}, "CV2007"},
    {"layer_norm", NULL, {"f32[3]"}, "CV2007"},
    {"quantize_linear", NULL, {"f32[3]"}, "CV2007"},
};

static void test_infer(void **state)
{
    for (size_t i = 0; i < sizeof infer_cases / sizeof infer_cases[0]; i++) {
        const infer_case *c = &infer_cases[i];
        cv_opstest_expect_infer(i, c->op, c->attrs, c->in, 5, 1, c->want);
    }
}

/* The schemas the front ends are written against. */
static void test_schemas(void **state)
{
    const cv_op_def *d = cv_op_def_lookup("reduce_mean");
    assert_int_equal(cv_op_def_attr(d, "axes", NULL)->kind, CV_ATTR_INTS);
    assert_false(cv_op_def_attr(d, "axes", NULL)->required);
    assert_int_equal(cv_op_def_attr(d, "keepdims", NULL)->kind, CV_ATTR_INT);
    d = cv_op_def_lookup("argmax");
    assert_non_null(cv_op_def_attr(d, "select_last_index", NULL));
    d = cv_op_def_lookup("layer_norm");
    assert_int_equal(d->min_operands, 2);
    assert_int_equal(d->max_operands, 3);
    assert_int_equal(cv_op_def_attr(d, "epsilon", NULL)->kind, CV_ATTR_FLOAT);
    assert_int_equal(cv_op_def_lookup("batch_norm")->min_operands, 5);
    assert_int_equal(cv_op_def_attr(cv_op_def_lookup("quantize_linear"), "axis", NULL)->kind,
                     CV_ATTR_INT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_sum), cmocka_unit_test(test_reduce_mean),
        cmocka_unit_test(test_reduce_max), cmocka_unit_test(test_reduce_min),
        cmocka_unit_test(test_argmax), cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_log_softmax), cmocka_unit_test(test_batch_norm),
        cmocka_unit_test(test_layer_norm), cmocka_unit_test(test_quantize_linear),
        cmocka_unit_test(test_dequantize_linear), cmocka_unit_test(test_qconv2d),
        cmocka_unit_test(test_every_op_has_a_case),
        cmocka_unit_test(test_infer), cmocka_unit_test(test_schemas),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
