/* The shape and layout ops (reshape, flatten, transpose, concat, split,
 * slice, gather, squeeze, unsqueeze, expand, pad, shape, constant): shape
 * functions with symbolic dims and their error codes, reference kernels
 * against NumPy at test time, and byte-exact movement of integer data. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/numpyref.h"
#include "tests/support/opstest.h"

#define CASE CV_OPCASE
#define CASE_RES CV_OPCASE_RES

static const cv_npref_opcase cases[] = {
    /* reshape */
    CASE("reshape", "shape=[4,6]", "a.reshape(4,6)", "f32[2,3,4]"),
    CASE("reshape", "shape=[0,-1]", "a.reshape(2,12)", "f32[2,3,4]"),
    CASE("reshape", "shape=[-1]", "a.reshape(-1)", "i64[2,3,4]@-100000:100000"),
    CASE("reshape", "shape=[3,0,-1]", "a.reshape(3,2,2)", "bool[2,2,3]"),
    CASE("reshape", "shape=[0,-1]", "a.reshape(a.shape[0],-1)", "f32[N:3,3,4]"),
    CASE("reshape", "shape=[-1,2,6]", "a.reshape(-1,2,6)", "u8[N:2,3,4]"),
    /* flatten */
    CASE("flatten", NULL, "a.reshape(2,-1)", "f32[2,3,4,5]"),
    CASE("flatten", "axis=0", "a.reshape(1,-1)", "i32[2,3,4]"),
    CASE("flatten", "axis=-1", "a.reshape(-1,5)", "f32[2,3,4,5]"),
    CASE("flatten", "axis=3", "a.reshape(-1,1)", "i8[2,3,4]"),
    CASE("flatten", NULL, "a.reshape(a.shape[0],-1)", "f32[N:3,2,2]"),
    /* transpose */
    CASE("transpose", NULL, "np.transpose(a)", "f32[2,3,4]"),
    CASE("transpose", "perm=[0,2,3,1]", "np.transpose(a,(0,2,3,1))", "i8[2,3,4,5]"),
    CASE("transpose", "perm=[1,0]", "a.T", "i64[3,5]@-1000000:1000000"),
    CASE("transpose", "perm=[2,0,1]", "np.transpose(a,(2,0,1))", "f32[N:2,3,4]"),
    /* concat */
    CASE("concat", "axis=1", "np.concatenate([a,b,c],axis=1)", "f32[2,1,3]", "f32[2,4,3]",
         "f32[2,2,3]"),
    CASE("concat", "axis=-1", "np.concatenate([a,b],axis=-1)", "i64[2,3]", "i64[2,1]"),
    CASE("concat", "axis=0", "np.concatenate([a,b],axis=0)", "bool[1,3]", "bool[2,3]"),
    CASE("concat", "axis=1", "np.concatenate([a,b],axis=1)", "f32[N:2,3]", "f32[N:2,2]"),
    CASE("concat", "axis=0", "a.copy()", "f16[3,2]"),
    CASE("concat", "axis=0", "np.concatenate([a,b],axis=0)", "f32[0,2]", "f32[3,2]"),
    /* split */
    CASE_RES("split", "axis=1 sizes=[2,3,1]", 3, 0, "np.split(a,[2,5],axis=1)[0]", "f32[2,6,2]"),
    CASE_RES("split", "axis=1 sizes=[2,3,1]", 3, 1, "np.split(a,[2,5],axis=1)[1]", "f32[2,6,2]"),
    CASE_RES("split", "axis=1 sizes=[2,3,1]", 3, 2, "np.split(a,[2,5],axis=1)[2]", "f32[2,6,2]"),
    CASE_RES("split", "axis=-1 sizes=[1,2]", 2, 1, "a[...,1:]", "i32[N:2,3]"),
    CASE_RES("split", "sizes=[0,4]", 2, 1, "a", "u8[4,2]"),
    /* slice */
    CASE("slice", "starts=[1] ends=[3]", "a[1:3]", "f32[5,4]"),
    CASE("slice", "starts=[0,1] ends=[1000000000000,-1]", "a[0:,1:-1]", "f32[5,4]"),
    CASE("slice", "starts=[-1] ends=[-1000] steps=[-1]", "a[::-1]", "i64[5,2]"),
    CASE("slice", "starts=[1] ends=[100] axes=[1] steps=[2]", "a[:,1::2]", "f32[3,7]"),
    CASE("slice", "starts=[4] ends=[0] axes=[1] steps=[-2]", "a[:,4:0:-2]", "i8[3,6]"),
    CASE("slice", "starts=[-3,-100] ends=[-1,2] axes=[-1,0] steps=[1,1]", "a[:2,:,-3:-1]",
         "f32[3,2,5]"),
    CASE("slice", "starts=[1] ends=[5] axes=[1]", "a[:,1:5]", "f32[N:3,6]"),
    CASE("slice", "starts=[3] ends=[1]", "a[3:1]", "f32[5,4]"),
    CASE("slice", "starts=[10] ends=[-10] steps=[-3]", "a[10:-10:-3]", "bool[7]"),
    /* gather */
    CASE("gather", NULL, "np.take(a,b,axis=0)", "f32[5,3]", "i64[4]=0,4,-1,2"),
    CASE("gather", "axis=1", "np.take(a,b,axis=1)", "i64[2,4]@-1000:1000", "i32[2,2]=3,-4,0,1"),
    CASE("gather", "axis=-1", "np.take(a,b,axis=-1)", "f32[N:2,3,5]", "i64[3]=4,0,-5"),
    CASE("gather", NULL, "np.take(a,b,axis=0)", "f32[4,3]", "i64[]=2"),
    CASE("gather", "axis=1", "np.take(a,b,axis=1)", "bool[3,4]", "i32[2,1]=1,-1"),
    /* squeeze */
    CASE("squeeze", "axes=[0,2]", "np.squeeze(a,(0,2))", "f32[1,3,1,2]"),
    CASE("squeeze", NULL, "np.squeeze(a)", "i32[1,3,1,2,1]"),
    CASE("squeeze", "axes=[-2]", "np.squeeze(a,-2)", "f32[N:2,1,4]"),
    /* unsqueeze */
    CASE("unsqueeze", "axes=[0,3]", "np.expand_dims(a,(0,3))", "f32[3,4]"),
    CASE("unsqueeze", "axes=[-1]", "np.expand_dims(a,-1)", "i64[N:2,3]"),
    CASE("unsqueeze", "axes=[1,-1]", "a.reshape(3,1,4,1)", "u8[3,4]"),
    /* expand */
    CASE("expand", "shape=[2,3,4]", "np.broadcast_to(a,(2,3,4))", "f32[3,1]"),
    CASE("expand", "shape=[3,1]", "np.broadcast_to(a,(2,3,4))", "i32[2,1,4]"),
    CASE("expand", "shape=[1,1]", "a.copy()", "f32[2,3]"),
    CASE("expand", "shape=[3,4]", "np.broadcast_to(a,(a.shape[0],3,4))", "bool[N:2,1,1]"),
    /* pad */
    CASE("pad", "pads=[1,0,0,2] value=1.5", "np.pad(a,((1,0),(0,2)),constant_values=1.5)",
         "f32[2,3]"),
    CASE("pad", "pads=[2,1,1,2] mode=reflect", "np.pad(a,((2,1),(1,2)),mode='reflect')",
         "f32[4,3]"),
    CASE("pad", "pads=[0,0,1,2,0,0,2,1] mode=reflect",
         "np.pad(a,((0,0),(0,0),(1,2),(2,1)),mode='reflect')", "f32[1,2,4,4]"),
    CASE("pad", "pads=[1,3,2,0] mode=edge", "np.pad(a,((1,2),(3,0)),mode='edge')", "i64[3,2]"),
    CASE("pad", "pads=[-1,1,0,0]", "np.pad(a[1:,:],((0,0),(1,0)))", "f32[3,3]"),
    CASE("pad", "pads=[0,2,0,1] value=7", "np.pad(a,((0,0),(2,1)),constant_values=7)",
         "i32[N:2,3]"),
    CASE("pad", "pads=[3,4] mode=reflect", "np.pad(a,(3,4),mode='reflect')", "f32[3]"),
    /* shape */
    CASE("shape", NULL, "np.array(a.shape,dtype=np.int64)", "f32[2,3,4]"),
    CASE("shape", "start=1", "np.array(a.shape[1:],dtype=np.int64)", "f32[2,3,4]"),
    CASE("shape", "start=-3 end=-1", "np.array(a.shape[-3:-1],dtype=np.int64)", "i8[2,3,4,5]"),
    CASE("shape", NULL, "np.array(a.shape,dtype=np.int64)", "f32[N:5,3]"),
    /* constant */
    CASE("constant", "value=[1,2,3,4,5,6] shape=[2,3]",
         "np.arange(1,7,dtype=np.float32).reshape(2,3)", NULL),
    CASE("constant", "ints=[-5,7,300] dtype=i32", "np.array([-5,7,300],dtype=np.int32)", NULL),
    CASE("constant", "value=[0.5] shape=[2,2] dtype=f16", "np.full((2,2),0.5,dtype=np.float16)",
         NULL),
    CASE("constant", "ints=[1,0,1,1] dtype=bool shape=[2,2]",
         "np.array([[1,0],[1,1]],dtype=bool)", NULL),
    CASE("constant", "ints=[1234567890123]", "np.array([1234567890123],dtype=np.int64)", NULL),
};

static int group_setup(void **state)
{
    return cv_opstest_setup(cases, (int)(sizeof cases / sizeof cases[0]), NULL);
}

static int group_teardown(void **state)
{
    cv_opstest_teardown();
    return 0;
}

static void test_reshape(void **state) { cv_opstest_check("reshape", 6); }
static void test_flatten(void **state) { cv_opstest_check("flatten", 5); }
static void test_transpose(void **state) { cv_opstest_check("transpose", 4); }
static void test_concat(void **state) { cv_opstest_check("concat", 6); }
static void test_split(void **state) { cv_opstest_check("split", 5); }
static void test_slice(void **state) { cv_opstest_check("slice", 9); }
static void test_gather(void **state) { cv_opstest_check("gather", 5); }
static void test_squeeze(void **state) { cv_opstest_check("squeeze", 3); }
static void test_unsqueeze(void **state) { cv_opstest_check("unsqueeze", 3); }
static void test_expand(void **state) { cv_opstest_check("expand", 4); }
static void test_pad(void **state) { cv_opstest_check("pad", 7); }
static void test_shape(void **state) { cv_opstest_check("shape", 4); }
static void test_constant(void **state) { cv_opstest_check("constant", 5); }

/* ---- shape functions: result types and error codes ----------------------- */

typedef struct infer_case {
    const char *op, *attrs;
    const char *in[4];
    int n_results;
    const char *want;   /* the inferred type of result 0, or "CVnnnn" */
} infer_case;

static const infer_case infer_cases[] = {
    {"reshape", "shape=[-1,12]", {"f32[N:1,3,4]"}, 1, "f32[N,12]"},
    {"reshape", "shape=[0,-1]", {"f32[N:1,3,4]"}, 1, "f32[N,12]"},
    {"reshape", "shape=[2,-1,12]", {"f32[2,N:1,3,4]"}, 1, "f32[2,N,12]"},
    {"reshape", "shape=[2,-1,6]", {"f32[2,N:1,3,4]"}, 1, "f32[2,2*N,6]"},
    {"reshape", "shape=[0,0,-1]", {"f32[N:1,T:1,4,4]"}, 1, "f32[N,T,16]"},
    {"reshape", "shape=[-1,6]", {"f32[N:1,3,4]"}, 1, "f32[2*N,6]"},
    {"reshape", "shape=[-1,4]", {"f32[N:1,M:1,4]"}, 1, "f32[M*N,4]"},
    {"reshape", "shape=[-1,5]", {"f32[N:1,3,4]"}, 1, "CV3009"},
    {"reshape", "shape=[0,0,-1]", {"f32[N:1,L:2,12]"}, 1, "f32[N,L,12]"},
    {"reshape", "shape=[2,-1]", {"f32[N:1,3,4]"}, 1, "f32[2,6*N]"},
    {"reshape", "shape=[12,2]", {"f32[N:1,3,4]"}, 1, "CV3009"},
    {"reshape", "shape=[5,5]", {"f32[2,3,4]"}, 1, "CV3008"},
    {"reshape", "shape=[4611686018427387904,4]", {"f32[2]"}, 1, "CV3004"},
    {"reshape", "shape=[-1,5]", {"f32[2,3,4]"}, 1, "CV3008"},
    {"reshape", "shape=[-1,-1]", {"f32[2,3,4]"}, 1, "CV3007"},
    {"reshape", "shape=[-2,12]", {"f32[2,3,4]"}, 1, "CV3007"},
    {"reshape", "shape=[0,0,0,0]", {"f32[2,3,4]"}, 1, "CV3007"},
    {"reshape", NULL, {"f32[2,3,4]"}, 1, "CV2006"},
    {"reshape", "shape=[]", {"f16[1,1]"}, 1, "f16[]"},
    {"flatten", NULL, {"f32[N:1,3,4,4]"}, 1, "f32[N,48]"},
    {"flatten", "axis=4", {"f32[2,3,4,4]"}, 1, "f32[96,1]"},
    {"flatten", "axis=1", {"f32[1,N:1,4]"}, 1, "f32[1,4*N]"},
    {"flatten", "axis=2", {"f32[1,N:1,4]"}, 1, "f32[N,4]"},
    {"flatten", "axis=0", {"f32[N:1,3]"}, 1, "f32[1,3*N]"},
    {"flatten", "axis=5", {"f32[2,3,4,4]"}, 1, "CV3006"},
    {"flatten", "axis=-5", {"f32[2,3,4,4]"}, 1, "CV3006"},
    {"transpose", "perm=[1,0,2]", {"f32[N:1,S:2,4]"}, 1, "f32[S,N,4]"},
    {"transpose", "perm=[0,0,1]", {"f32[2,3,4]"}, 1, "CV3007"},
    {"transpose", "perm=[0,1]", {"f32[2,3,4]"}, 1, "CV3007"},
    {"transpose", "perm=[0,1,3]", {"f32[2,3,4]"}, 1, "CV3007"},
    {"concat", "axis=1", {"f32[N:1,3]", "f32[N:1,5]"}, 1, "f32[N,8]"},
    {"concat", "axis=0", {"f32[N:1,3]", "f32[0,3]"}, 1, "f32[N,3]"},
    {"concat", "axis=0", {"f32[N:1,3]", "f32[2,3]"}, 1, "f32[N + 2,3]"},
    {"concat", "axis=0", {"f32[N:1,3]", "f32[M:2,3]", "f32[N:1,3]"}, 1, "f32[M + 2*N,3]"},
    {"concat", "axis=2", {"f32[2,3]", "f32[2,3]"}, 1, "CV3006"},
    {"concat", "axis=0", {"f32[2,3]", "f32[2,4]"}, 1, "CV3005"},
    {"concat", "axis=0", {"f32[2,3]", "f32[2,3,1]"}, 1, "CV3001"},
    {"concat", "axis=0", {"f32[2,3]", "i32[2,3]"}, 1, "CV2009"},
    {"concat", NULL, {"f32[2,3]", "f32[2,3]"}, 1, "CV2006"},
    {"split", "axis=1 sizes=[1,2]", {"f32[N:1,3]"}, 2, "f32[N,1]"},
    {"split", "sizes=[2,2]", {"f32[5]"}, 2, "CV3005"},
    {"split", "sizes=[2,3]", {"f32[5]"}, 3, "CV2008"},
    {"split", "sizes=[1,-1]", {"f32[5]"}, 2, "CV3007"},
    {"split", "sizes=[1,1]", {"f32[N:2]"}, 2, "CV3009"},
    {"split", "axis=3 sizes=[1,1]", {"f32[2,2]"}, 2, "CV3006"},
    {"slice", "starts=[0] ends=[2147483647] axes=[0]", {"f32[N:1,4]"}, 1, "f32[N,4]"},
    {"slice", "starts=[1] ends=[3] axes=[0]", {"f32[N:1,4]"}, 1, "f32[max(-min(1, N) + min(3, N), 0),4]"},
    {"slice", "starts=[0] ends=[-1] axes=[0]", {"f32[N:1,4]"}, 1, "f32[max(0, N - 1),4]"},
    {"slice", "starts=[0] ends=[2] steps=[0]", {"f32[4]"}, 1, "CV3007"},
    {"slice", "starts=[0,1] ends=[2]", {"f32[4,4]"}, 1, "CV3007"},
    {"slice", "starts=[0,1] ends=[2,3] axes=[1,-1]", {"f32[4,4]"}, 1, "CV3007"},
    {"slice", "starts=[0] ends=[2] axes=[2]", {"f32[4,4]"}, 1, "CV3006"},
    {"slice", "starts=[0] ends=[2] axes=[0] steps=[1,1]", {"f32[4,4]"}, 1, "CV3007"},
    {"gather", "axis=1", {"f32[N:1,5,3]", "i64[K:2,2]"}, 1, "f32[N,K,2,3]"},
    {"gather", NULL, {"f32[5,3]", "f32[2]"}, 1, "CV4002"},
    {"gather", "axis=2", {"f32[5,3]", "i64[2]"}, 1, "CV3006"},
    {"squeeze", NULL, {"f32[N:1,1,3,1]"}, 1, "f32[N,3]"},
    {"squeeze", "axes=[1]", {"f32[2,3]"}, 1, "CV3005"},
    {"squeeze", "axes=[0]", {"f32[N:1,3]"}, 1, "CV3009"},
    {"squeeze", "axes=[2]", {"f32[1,1]"}, 1, "CV3006"},
    {"squeeze", "axes=[0,-2]", {"f32[1,1]"}, 1, "CV3007"},
    {"unsqueeze", "axes=[0,-1]", {"f32[N:1,3]"}, 1, "f32[1,N,3,1]"},
    {"unsqueeze", "axes=[0,0]", {"f32[2,3]"}, 1, "CV3007"},
    {"unsqueeze", "axes=[3]", {"f32[2,3]"}, 1, "CV3006"},
    {"unsqueeze", "axes=[0,1,2,3,4,5,6]", {"f32[2,3]"}, 1, "CV3007"},
    {"unsqueeze", NULL, {"f32[2,3]"}, 1, "CV2006"},
    {"expand", "shape=[2,1,1,4]", {"f32[N:1,3,1]"}, 1, "f32[2,N,3,4]"},
    {"expand", "shape=[2,1,4]", {"f32[N:1,3,1]"}, 1, "CV3002"},
    {"expand", "shape=[3,4]", {"f32[2,4]"}, 1, "CV3002"},
    {"expand", "shape=[-1,4]", {"f32[2,4]"}, 1, "CV3007"},
    {"pad", "pads=[0,1,0,1]", {"f32[N:1,3]"}, 1, "f32[N,5]"},
    {"pad", "pads=[1,0,2,0]", {"f32[N:1,3]"}, 1, "f32[N + 3,3]"},
    {"pad", "pads=[1,1]", {"f32[2,3]"}, 1, "CV3007"},
    {"pad", "pads=[0,0,0,0] mode=wrap", {"f32[2,3]"}, 1, "CV4003"},
    {"pad", "pads=[-2,0,-1,0]", {"f32[2,3]"}, 1, "CV3005"},
    {"pad", "pads=[1,1] mode=edge", {"f32[0]"}, 1, "CV3005"},
    {"shape", NULL, {"f32[N:1,3,H:2,2]"}, 1, "i64[4]"},
    {"shape", "start=-2 end=100", {"f32[2,3,4]"}, 1, "i64[2]"},
    {"shape", "start=2 end=1", {"f32[2,3,4]"}, 1, "i64[0]"},
    {"constant", "value=[1,2,3]", {NULL}, 1, "f32[3]"},
    {"constant", "value=[2.5] shape=[]", {NULL}, 1, "f32[]"},
    {"constant", "ints=[1,2,3,4] shape=[2,2] dtype=i8", {NULL}, 1, "i8[2,2]"},
    {"constant", "dtype=f32", {NULL}, 1, "CV2006"},
    {"constant", "value=[1] ints=[1]", {NULL}, 1, "CV2017"},
    {"constant", "value=[1,2,3] shape=[2,2]", {NULL}, 1, "CV3008"},
    {"constant", "value=[1] shape=[-1]", {NULL}, 1, "CV3007"},
    {"constant", "value=[1]", {"f32[2]"}, 1, "CV2007"},
};

static void test_infer(void **state)
{
    for (size_t i = 0; i < sizeof infer_cases / sizeof infer_cases[0]; i++) {
        const infer_case *c = &infer_cases[i];
        cv_opstest_expect_infer(i, c->op, c->attrs, c->in, 4, c->n_results, c->want);
    }
}

/* ---- exact movement of i64 data and extreme slice bounds ------------------ */

static cv_value *op1(cv_func *f, const char *name, cv_value *x, const char *attr,
                     const int64_t *v, int n, cv_diag *d)
{
    cv_op *op = cv_op_new(f, name, &x, 1);
    if (attr)
        cv_op_set_ints(op, attr, v, n);
    assert_int_equal(cv_op_finish(op, 1, d), 0);
    return cv_op_result(op);
}

/* Values above 2^53 do not survive a trip through double: transpose, slice
 * with INT64_MAX / INT64_MIN bounds and negative steps, pad, expand, concat
 * and gather must move them bit for bit. */
static void test_i64_exact(void **state)
{
    cv_module *m = cv_module_new("exact");
    cv_func *f = cv_func_new(m, "exact");
    cv_diag d;
    cv_diag_init(&d);
    cv_type tx = {CV_I64, {2, {{2, NULL}, {3, NULL}}}};
    cv_value *x = cv_func_add_input(f, "x", &tx);
    static const int64_t perm[2] = {1, 0};
    static const int64_t starts[2] = {INT64_MAX, 0}, ends[2] = {INT64_MIN, INT64_MAX};
    static const int64_t steps[2] = {-1, 1}, pads[4] = {0, 1, 0, 0};
    cv_value *t = op1(f, "transpose", x, "perm", perm, 2, &d);          /* [3,2] */
    cv_op *sl = cv_op_new(f, "slice", &t, 1);
    cv_op_set_ints(sl, "starts", starts, 2);
    cv_op_set_ints(sl, "ends", ends, 2);
    cv_op_set_ints(sl, "steps", steps, 2);
    assert_int_equal(cv_op_finish(sl, 1, &d), 0);                       /* rows reversed */
    cv_value *s = cv_op_result(sl);
    cv_value *p = op1(f, "pad", s, "pads", pads, 4, &d);                /* [3,3], col 0 = 0 */
    cv_value *cat_in[2] = {p, p};
    cv_op *cat = cv_op_new(f, "concat", cat_in, 2);
    cv_op_set_int(cat, "axis", 0);
    assert_int_equal(cv_op_finish(cat, 1, &d), 0);                      /* [6,3] */
    cv_type ti = {CV_I64, {1, {{2, NULL}}}};
    cv_value *idx = cv_func_add_input(f, "i", &ti);
    cv_value *g_in[2] = {cv_op_result(cat), idx};
    cv_op *g = cv_op_new(f, "gather", g_in, 2);
    assert_int_equal(cv_op_finish(g, 1, &d), 0);                        /* [2,3] */
    cv_value *r = cv_op_result(g);
    cv_func_set_returns(f, &r, 1);

    const int64_t base = INT64_C(1) << 62;
    cv_tensor in[2], out = {0};
    assert_int_equal(cv_tensor_alloc(&in[0], CV_I64, 2, (int64_t[]){2, 3}), 0);
    assert_int_equal(cv_tensor_alloc(&in[1], CV_I64, 1, (int64_t[]){2}), 0);
    int64_t *xv = in[0].data, *iv = in[1].data;
    for (int i = 0; i < 6; i++)
        xv[i] = base + 2 * i + 1;   /* odd and above 2^53: a double would round them */
    iv[0] = -1;                     /* last row of the concat */
    iv[1] = 1;
    int rc = cv_interp_run(f, in, 2, &out, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    /* transpose -> t[j][i] = x[i][j]; reversed rows -> s[k] = t[2-k]; pad col 0. */
    const int64_t *ov = out.data;
    int64_t want[6];
    for (int row = 0; row < 2; row++) {
        int k = row == 0 ? 2 : 1;   /* concat row 5 is p row 2, row 1 is p row 1 */
        want[row * 3] = 0;
        for (int i = 0; i < 2; i++)
            want[row * 3 + 1 + i] = xv[i * 3 + (2 - k)];
    }
    assert_int_equal(out.rank, 2);
    assert_memory_equal(ov, want, sizeof want);
    for (int i = 0; i < 2; i++)
        cv_tensor_free(&in[i]);
    cv_tensor_free(&out);
    cv_module_free(m);
    cv_diag_free(&d);
}

/* An index outside its axis is a run-time error with its own code. */
static void test_gather_out_of_range(void **state)
{
    static const char *const specs[2] = {"f32[3,2]", "i64[2]"};
    static const int64_t bad[3] = {3, -4, 2};
    static const int expect_fail[3] = {1, 1, 0};
    for (int k = 0; k < 3; k++) {
        cv_module *m = cv_module_new("test");
        cv_diag d;
        cv_diag_init(&d);
        int rc = -1;
        cv_op *op = cv_npref_build_op(m, "gather", NULL, specs, 2, 1, &d, &rc);
        assert_non_null(op);
        assert_int_equal(rc, 0);
        cv_value *res = cv_op_result(op);
        cv_func_set_returns(op->func, &res, 1);
        cv_tensor in[2], out = {0};
        assert_int_equal(cv_tensor_alloc(&in[0], CV_F32, 2, (int64_t[]){3, 2}), 0);
        assert_int_equal(cv_tensor_alloc(&in[1], CV_I64, 1, (int64_t[]){2}), 0);
        ((int64_t *)in[1].data)[0] = 0;
        ((int64_t *)in[1].data)[1] = bad[k];
        rc = cv_interp_run(op->func, in, 2, &out, &d);
        if (expect_fail[k]) {
            assert_int_not_equal(rc, 0);
            assert_int_equal(cv_npref_first_code(&d), 3012);
        } else {
            assert_int_equal(rc, 0);
            cv_tensor_free(&out);
        }
        cv_tensor_free(&in[0]);
        cv_tensor_free(&in[1]);
        cv_module_free(m);
        cv_diag_free(&d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape),   cmocka_unit_test(test_flatten),
        cmocka_unit_test(test_transpose), cmocka_unit_test(test_concat),
        cmocka_unit_test(test_split),     cmocka_unit_test(test_slice),
        cmocka_unit_test(test_gather),    cmocka_unit_test(test_squeeze),
        cmocka_unit_test(test_unsqueeze), cmocka_unit_test(test_expand),
        cmocka_unit_test(test_pad),       cmocka_unit_test(test_shape),
        cmocka_unit_test(test_constant),  cmocka_unit_test(test_infer),
        cmocka_unit_test(test_i64_exact), cmocka_unit_test(test_gather_out_of_range),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
