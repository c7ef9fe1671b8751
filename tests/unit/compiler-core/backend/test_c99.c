/* The C99 backend (--emit c): models and a sweep of single-op cases are
 * emitted as C, built with gcc and clang-19 (when installed) under
 * -std=c99 -pedantic -Wall -Wextra -Werror into shared objects, loaded like
 * native artifacts and compared with the reference interpreter at the
 * native backend's tolerances.  The LLVM plugin is made unloadable for the
 * whole binary: the C path must not need it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>

#include "compiler-core/backend/c99/c99_internal.h"
#include "compiler-core/frontends/dsl/dsl.h"
#include "tests/support/pyrun.h"
#include "tests/support/c99_testlib.h"

#define MAX_IO 8

static const char *g_cc[2];     /* the C compilers found */
static int g_n_cc;

/* ---- whole models ------------------------------------------------------------------ */

/* Random inputs with every symbolic dim = batch. */
static void make_inputs(const cv_func *f, int64_t batch, cv_tensor *ins)
{
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_type *t = &f->inputs[i]->type;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < t->shape.rank; k++)
            dims[k] = t->shape.d[k].sym ? batch : t->shape.d[k].n;
        assert_int_equal(cv_tensor_alloc(&ins[i], t->dtype, t->shape.rank, dims), 0);
        cv_npref_fill(&ins[i], (uint64_t)(i + 11), -1, 1);
    }
}

/* got[0..n) against want with the native tests' tolerances; frees got. */
static void compare_outputs(const char *what, const char *how, cv_tensor *got,
                            const cv_tensor *want, int n)
{
    char msg[1024];
    for (int i = 0; i < n; i++) {
        double rtol = 1e-4, atol = 1e-5;
        if (want[i].dtype == CV_F16 || want[i].dtype == CV_BF16)
            cv_npref_default_tol(want[i].dtype, &rtol, &atol);
        if (cv_npref_compare(&got[i], &want[i], rtol, atol, msg, sizeof msg))
            fail_msg("%s (%s) output %d: %s", what, how, i, msg);
        cv_tensor_free(&got[i]);
    }
}

/* The model against the interpreter, built by each compiler; with
 * threads > 1 also by gcc with OpenMP (clang-19 has no OpenMP runtime here). */
static void check_model(const char *what, cv_module *m, int threads)
{
    const cv_func *f = m->funcs[0];
    assert_true(f->n_inputs <= MAX_IO && f->n_returns <= MAX_IO);
    cv_tensor ins[MAX_IO] = {{0}}, want[MAX_IO] = {{0}};
    make_inputs(f, 3, ins);
    cv_diag d;
    cv_diag_init(&d);
    if (cv_interp_run(f, ins, f->n_inputs, want, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    for (int c = 0; c < g_n_cc + (threads > 1); c++) {
        const char *cc = c < g_n_cc ? g_cc[c] : "gcc";
        int th = c < g_n_cc ? 1 : threads;
        cv_tensor got[MAX_IO] = {{0}};
        char msg[4096] = "", how[64];
        if (run_c(m, cc, ins, f->n_inputs, th, got, msg, sizeof msg))
            fail_msg("%s: %s", what, msg);
        snprintf(how, sizeof how, "%s, %d thread(s)", cc, th);
        compare_outputs(what, how, got, want, f->n_returns);
    }
    for (int i = 0; i < f->n_returns; i++)
        cv_tensor_free(&want[i]);
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
    cv_diag_free(&d);
}

static cv_module *load(const char *path)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(path, 0, &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    return m;
}

static void check_file(const char *dir, const char *file, int threads)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", cv_tmpdir_src_root(), dir, file);
    cv_module *m = load(path);
    assert_non_null(m);
    check_model(file, m, threads);
    cv_module_free(m);
}

static void check_text(const char *name, const char *text)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, strlen(text), name, &d);
    if (!m || cv_verify(m, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    check_model(name, m, 2);
    cv_module_free(m);
    cv_diag_free(&d);
}

static void test_examples(void **state)
{
    (void)state;
    check_file("examples/cuir", "mlp.cuir", 2);
    check_file("examples/cuir", "tinycnn.cuir", 2);
    check_file("examples/cuir", "residual.cuir", 2);
}

/* The CU-IR corpus that must verify (the files whose weights are inline):
 * weights of every dtype, extreme floats, odd names. */
static void test_corpus(void **state)
{
    (void)state;
    static const char *const files[] = {"dtypes.cuir", "floats.cuir", "names.cuir",
                                        "split_locs.cuir"};
    for (int i = 0; i < N_OF(files); i++)
        check_file("tests/cuir/accept", files[i], 1);
}

/* Fused chains (the runtime GEMM's epilogue, direct loops), views, a
 * returned input, a value returned twice, an OpenMP-style parallel extent. */
static const struct { const char *name, *text; } texts[] = {
    {"fused_res",
     "cuir 1\nmodel @res(%x: f32[1,4,6,6], %w: f32[4,4,3,3], %b: f32[4]) -> (f32[1,4,6,6]) {\n"
     "  %0 = conv2d(%x, %w, %b) {pad=[1,1]} : f32[1,4,6,6]\n  %1 = add(%0, %x) : f32[1,4,6,6]\n"
     "  %2 = relu(%1) : f32[1,4,6,6]\n  return %2\n}\n"},
    {"fused_mm",
     "cuir 1\nmodel @mm(%a: f32[N,6], %w: f32[5,6], %c: f32[3,4,6], %d: f32[6,7], %e: f32[3,4,7])"
     " -> (f32[N,5], f32[3,4,7]) {\n"
     "  %0 = gemm(%a, %w) {trans_b=1} : f32[N,5]\n  %1 = relu(%0) : f32[N,5]\n"
     "  %2 = matmul(%c, %d) : f32[3,4,7]\n  %3 = add(%e, %2) : f32[3,4,7]\n"
     "  %4 = clip(%3) {min=-0.5, max=0.5} : f32[3,4,7]\n  return %1, %4\n}\n"},
    {"fused_dw",
     "cuir 1\nmodel @dw(%x: f32[N,3,5,5], %w: f32[3,1,3,3]) -> (f32[N,3,5,5]) {\n"
     "  %0 = conv2d(%x, %w) {pad=[1,1], groups=3} : f32[N,3,5,5]\n"
     "  %1 = clip(%0) {min=0, max=0.5} : f32[N,3,5,5]\n  return %1\n}\n"},
    {"views",
     "cuir 1\nmodel @views(%x: f32[N,4,6], %y: f32[6], %z: f32[5,6]) -> "
     "(f32[N,2,6], f32[N,24], f32[N,24], f32[6], f32[N,1,6], f32[2,6], f32[2,6]) {\n"
     "  %a = slice(%x) {starts=[1], ends=[3], axes=[1]} : f32[N,2,6]\n"
     "  %b = relu(%a) : f32[N,2,6]\n  %c = reshape(%x) {shape=[0,-1]} : f32[N,24]\n"
     "  %d = mul(%c, %c) : f32[N,24]\n"
     "  %p0, %p1 = split(%x) {axis=1, sizes=[3,1]} : f32[N,3,6], f32[N,1,6]\n"
     "  %e = add(%p1, %y) : f32[N,1,6]\n  %s = slice(%z) {starts=[1], ends=[3]} : f32[2,6]\n"
     "  %q0, %q1 = split(%z) {sizes=[3,2]} : f32[3,6], f32[2,6]\n"
     "  %f = sub(%s, %q1) : f32[2,6]\n  %g = exp(%s) : f32[2,6]\n"
     "  return %b, %d, %d, %y, %e, %f, %g\n}\n"},
    {"big_conv",
     "cuir 1\nmodel @big(%x: f32[N,3,20,20], %w: f32[40,3,5,5], %b: f32[40], %v: f32[10,40])"
     " -> (f32[N,10]) {\n"
     "  %0 = conv2d(%x, %w, %b) {stride=[2,2], pad=[2,2]} : f32[N,40,10,10]\n"
     "  %1 = relu(%0) : f32[N,40,10,10]\n  %2 = global_avg_pool(%1) : f32[N,40,1,1]\n"
     "  %3 = flatten(%2) {axis=1} : f32[N,40]\n  %4 = gemm(%3, %v) {trans_b=1} : f32[N,10]\n"
     "  %5 = softmax(%4) : f32[N,10]\n  return %5\n}\n"},
};

static void test_texts(void **state)
{
    (void)state;
    for (int i = 0; i < N_OF(texts); i++)
        check_text(texts[i].name, texts[i].text);
}

/* The DSL examples, with the weights examples/models/gen_weights.py writes. */
static void test_dsl_models(void **state)
{
    (void)state;
    if (!cv_pyrun_has_module("numpy"))
        skip();
    char *dir = cv_tmpdir_make("c99-dsl");
    char script[1024];
    snprintf(script, sizeof script, "%s/examples/models/gen_weights.py", cv_tmpdir_src_root());
    const char *args[] = {script, dir, NULL};
    assert_int_equal(cv_pyrun("import runpy, sys\npath = sys.argv[1]\nsys.argv = [path] + "
                              "sys.argv[2:]\nrunpy.run_path(path, run_name='__main__')\n",
                              args, NULL), 0);
    static const char *const models[] = {"lenet", "mlp", "resblock", "kws"};
    for (int i = 0; i < N_OF(models); i++) {
        char file[64], src[1024];
        snprintf(file, sizeof file, "%s.cvl.py", models[i]);
        snprintf(src, sizeof src, "%s/examples/models/%s", cv_tmpdir_src_root(), file);
        size_t len;
        char *text = cv_tmpdir_read_file(src, &len);
        assert_non_null(text);
        assert_int_equal(cv_tmpdir_write(dir, file, text, len), 0);
        free(text);
        char *path = cv_tmpdir_path(dir, file);
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = cv_dsl_load(path, &d);
        if (!m || cv_verify(m, 0, &d) || cv_module_load_weights(m, dir, &d))
            cv_diag_print(&d, stderr, false);
        assert_int_equal(d.n_errors, 0);
        check_model(file, m, 1);
        cv_module_free(m);
        cv_diag_free(&d);
        free(path);
    }
    cv_tmpdir_remove(dir);
}

/* ---- the single-op sweep ------------------------------------------------------------ */

static const bk_case sweep_act[] = {
    BK("neg", NULL, "i32[4] =-2147483648,1,0,-5"),
    BK("neg", NULL, "f32[3,4]"),
    BK("abs", NULL, "i8[5] =-128,-1,0,5,127"),
    BK("abs", NULL, "f32[7]"),
    BK("relu", NULL, "f32[3] =nan,-1,1"),
    BK("sqrt", NULL, "f32[6] @0:9"),
    BK("exp", NULL, "f32[2,5]"),
    BK("log", NULL, "f32[8] @0.01:10"),
    BK("tanh", NULL, "f32[9]"),
    BK("erf", NULL, "f32[9]"),
    BK("sigmoid", NULL, "f32[3,3] @-10:10"),
    BK("silu", NULL, "f32[10]"),
    BK("hard_swish", NULL, "f32[12] @-5:5"),
    BK("leaky_relu", NULL, "f16[8]"),
    BK("hard_sigmoid", NULL, "f32[3] =nan,10,-10"),
    BK("gelu", NULL, "f32[11]"),
    BK("gelu", "approximate=tanh", "f32[11]"),
    BK("clip", "min=2", "f32[3] =nan,1,3"),
    BK("clip", "min=-2.5 max=3.5", "i32[9]"),
};

static const bk_case sweep_nn[] = {
    BK("matmul", NULL, "f32[2,1,3,4]", "f32[5,4,2]"),
    BK("matmul", NULL, "f32[4]", "f32[4,3]"),
    BK("matmul", NULL, "f32[N:2,3,4]", "f32[4,5]"),
    BK("matmul", NULL, "f32[37,300] @-0.5:0.5", "f32[300,45] @-0.5:0.5"),
    BK("matmul", NULL, "i32[2,3]", "i32[3,2]"),
    BK("matmul", NULL, "f16[2,3,8]", "f16[1,8,2]"),
    BK("gemm", "alpha=0.5 beta=2", "f32[3,4]", "f32[4,5]", "f32[5]"),
    BK("gemm", "trans_a=1 trans_b=1", "f32[4,3]", "f32[5,4]", "f32[3,1]"),
    BK("gemm", "trans_b=1", "f32[65,130] @-0.5:0.5", "f32[70,130] @-0.5:0.5", "f32[70]"),
    BK("conv2d", NULL, "f32[1,3,8,8]", "f32[4,3,3,3]", "f32[4]"),
    BK("conv2d", "stride=[2,2] pad=[1,0,2,1]", "f32[2,3,9,8]", "f32[5,3,3,2]", "f32[5]"),
    BK("conv2d", "dilation=[2,1] pad=[2,1]", "f32[1,2,9,7]", "f32[3,2,3,3]"),
    BK("conv2d", "groups=2 stride=[1,2]", "f32[2,4,7,7]", "f32[6,2,3,3]"),
    BK("conv2d", "groups=4 pad=[1,1,1,1]", "f32[1,4,6,6]", "f32[4,1,3,3]", "f32[4]"),
    BK("conv2d", "groups=3 stride=[2,2] dilation=[2,2] pad=[2,2,1,1]", "f32[1,3,11,10]",
       "f32[3,1,3,3]", "f32[3]"),
    BK("conv2d", "groups=3 stride=[2,2] dilation=[2,2] pad=[2,2,1,1]", "f32[1,3,11,10]",
       "f32[6,1,3,3]", "f32[6]"),
    BK("conv2d", NULL, "f32[N:2,3,H:5,W:4]", "f32[2,3,1,1]", "f32[2]"),
    BK("conv2d", "pad=[3,3] stride=[2,2]", "f32[1,3,30,30] @-0.5:0.5", "f32[70,3,7,7] @-0.5:0.5",
       "f32[70]"),
    BK("conv2d", "stride=[3,3] pad=[0,2,1,0]", "f32[2,2,10,9]", "f32[3,2,2,2]", "f32[3]"),
    BK("conv_transpose2d", "stride=[2,2] pad=[1,1,1,1] output_padding=[1,1]", "f32[2,3,4,5]",
       "f32[3,2,3,3]", "f32[2]"),
    BK("max_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] ceil_mode=1", "f32[1,2,8,7]"),
    BK("max_pool2d", "kernel=[2,2] stride=[2,2] ceil_mode=1", "i8[1,3,5,5]"),
    BK("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] count_include_pad=1", "f32[1,2,7,6]"),
    BK("global_avg_pool", NULL, "f32[N:2,2,3,2,2]"),
    BK("resize", "scales=[1,1,2,2] mode=linear", "f32[1,2,3,3]"),
    BK("resize", "scales=[2,3] nearest_mode=round_prefer_ceil", "i32[3,2]"),
    BKN("rnn", "cell=lstm direction=bidirectional clip=0.9", 3, 2, "f32[T:4,2,3]", "f32[2,8,3]",
        "f32[2,8,2]", "f32[2,16]", "f32[2,2,2]", "f32[2,2,2]"),
    BKN("rnn", "cell=gru", 2, 0, "f32[T:5,2,3]", "f32[1,6,3]", "f32[1,6,2]", "f32[1,12]",
        "f32[1,2,2]"),
    BKN("rnn", "cell=gru linear_before_reset=1 direction=reverse", 2, 1, "f32[3,1,3]",
        "f32[1,6,3]", "f32[1,6,2]", "f32[1,12]", "f32[1,1,2]"),
    /* the plain RNN, peepholes and sequence_lens (rows of their own lengths) */
    BKN("rnn", "cell=rnn activation=relu direction=bidirectional lengths=1", 2, 0, "f32[T:4,3,3]",
        "f32[2,2,3]", "f32[2,2,2]", "f32[2,4]", "f32[2,3,2]", "i32[3] =4,1,2"),
    BKN("rnn", "cell=lstm peepholes=1 lengths=1 direction=reverse", 3, 2, "f32[T:5,3,3]",
        "f32[1,8,3]", "f32[1,8,2]", "f32[1,16]", "f32[1,3,2]", "f32[1,3,2]", "f32[1,6]",
        "i32[3] =2,0,5"),
    BKN("rnn", "cell=gru lengths=1", 2, 0, "f32[T:4,2,3]", "f32[1,6,3]", "f32[1,6,2]",
        "f32[1,12]", "f32[1,2,2]", "i32[2] =3,1"),
};

static const bk_case sweep_red[] = {
    BK("reduce_sum", "axes=[1]", "f32[N:2,7,5]"),
    BK("reduce_sum", "axes=[0]", "i32[6,3]"),
    BK("reduce_sum", "axes=[1]", "f16[3,6,2]"),
    BK("reduce_mean", "axes=[0]", "i64[4,3] =7,-7,1,2,3,4,5,6,7,8,9,10"),
    BK("reduce_max", "axes=[1]", "f32[4,6] =1,nan,3,4,5,6"),
    BK("reduce_min", "axes=[0,1]", "u8[2,3,4]"),
    BK("reduce_max", "axes=[1]", "f32[2,0]"),
    BK("argmax", "axis=1 select_last_index=1", "f32[2,4] =1,nan,3,nan,2,2,1,0"),
    BK("argmax", "axis=-1", "i32[4,5] @0:3"),
    BK("softmax", NULL, "f32[2,4] =1,2,nan,4,-inf,0,1,2"),
    BK("softmax", "axis=0", "f16[4,3]"),
    BK("log_softmax", NULL, "f32[4,7] @-20:20"),
    BK("batch_norm", NULL, "f32[2,3,4,5]", "f32[3]", "f32[3]", "f32[3]", "f32[3] @0.1:2"),
    BK("layer_norm", "axis=1 epsilon=0.01", "f32[N:2,3,4]", "f32[3,4]"),
    BK("quantize_linear", NULL, "f32[8] =0.5,1.5,2.5,-0.5,-1.5,nan,1000,-1000", "f32[1] =1",
       "i8[1] =3"),
    BK("quantize_linear", "axis=1", "f32[2,3,4] @-10:10", "f32[3] =0.5,1,0.25", "u8[3] =10,128,0"),
    BK("dequantize_linear", "axis=0", "i8[3,4] @-128:127", "f32[3] =1,0.5,2", "i8[3] =-1,0,5"),
};

static const bk_case sweep_shape[] = {
    BK("reshape", "shape=[0,-1]", "f32[N:2,3,4]"),
    BK("unsqueeze", "axes=[0,3]", "u8[2,3]"),
    BK("expand", "shape=[2,3,4]", "f32[3,1]"),
    BK("shape", NULL, "f32[N:5,3,2]"),
    BK("transpose", "perm=[0,2,3,1]", "f32[N:2,3,4,5]"),
    BK("transpose", "perm=[1,0]", "i8[5,7]"),
    BK("slice", "starts=[-1] ends=[-100] steps=[-2] axes=[1]", "f32[2,7]"),
    BK("slice", "starts=[1,0] ends=[2,9223372036854775807] axes=[1,0]", "f32[N:3,4,2]"),
    BKN("split", "axis=1 sizes=[1,2]", 2, 1, "f32[2,3,4]"),
    BK("concat", "axis=1", "f32[2,3]", "f32[2,1]", "f32[2,4]"),
    BK("concat", "axis=-1", "bool[2,2,1]", "bool[2,2,2]"),
    BK("gather", NULL, "f32[5,3]", "i64[4] =0,4,-1,2"),
    BK("gather", "axis=1", "f32[2,6,3]", "i32[2,2] =5,0,-6,3"),
    BK("pad", "pads=[0,1,2,0,1,0] value=-2.5", "f32[2,3,4]"),
    BK("pad", "pads=[2,3,2,3] mode=reflect", "f32[4,5]"),
    BK("pad", "pads=[1,2,3,1] mode=edge", "i32[3,2]"),
    BK("constant", "value=[1.5,2,-3] shape=[3,1]"),
    BK("constant", "ints=[7,-8] dtype=i32"),
    BK("slice", "starts=[10] ends=[20] axes=[0]", "f32[5,5]"),
};

static void check_sweep(const char *name, const bk_case *cases, int n)
{
    bk_model b;
    cv_tensor want[BK_MAX_CASES] = {{0}};
    char msg[4096] = "";
    cv_diag d;
    cv_diag_init(&d);
    if (bk_build(&b, name, cases, n, msg, sizeof msg))
        fail_msg("%s", msg);
    if (cv_interp_run(b.m->funcs[0], b.ins, b.n_ins, want, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    for (int c = 0; c < g_n_cc; c++) {
        cv_tensor got[BK_MAX_CASES] = {{0}};
        int rc = run_c(b.m, g_cc[c], b.ins, b.n_ins, 1, got, msg, sizeof msg);
        if (rc == 0)
            rc = bk_compare(cases, n, got, want, msg, sizeof msg);
        for (int i = 0; i < n; i++)
            cv_tensor_free(&got[i]);
        if (rc)
            fail_msg("%s (%s): %s", name, g_cc[c], msg);
    }
    for (int i = 0; i < n; i++)
        cv_tensor_free(&want[i]);
    bk_model_free(&b);
    cv_diag_free(&d);
}

static void test_sweep_ew(void **state) { check_sweep("sw_ew", sweep_ew, N_OF(sweep_ew)); }
static void test_sweep_act(void **state) { check_sweep("sw_act", sweep_act, N_OF(sweep_act)); }
static void test_sweep_nn(void **state) { check_sweep("sw_nn", sweep_nn, N_OF(sweep_nn)); }
static void test_sweep_red(void **state) { check_sweep("sw_red", sweep_red, N_OF(sweep_red)); }
static void test_sweep_shape(void **state)
{
    check_sweep("sw_shape", sweep_shape, N_OF(sweep_shape));
}

/* Each case as a model of its own: the helpers one op needs alone (and
 * nothing more) pass the strict flags.  Syntax only, with clang-19 when
 * installed: it reports unused static functions in its front end. */
static void test_each_case_alone(void **state)
{
    (void)state;
    static const struct { const bk_case *c; int n; } lists[] = {
        {sweep_ew, N_OF(sweep_ew)}, {sweep_act, N_OF(sweep_act)}, {sweep_nn, N_OF(sweep_nn)},
        {sweep_red, N_OF(sweep_red)}, {sweep_shape, N_OF(sweep_shape)},
    };
    static const char *const syntax[] = {"-fsyntax-only", "-Wno-unused-command-line-argument"};
    const char *cc = g_cc[g_n_cc - 1];
    int n_flags = strstr(cc, "clang") ? 2 : 1;
    int n = 0;
    for (int l = 0; l < N_OF(lists); l++)
        for (int i = 0; i < lists[l].n; i++, n++) {
            bk_model b;
            char msg[4096] = "", name[128];
            if (bk_build(&b, "one", &lists[l].c[i], 1, msg, sizeof msg))
                fail_msg("%s", msg);
            char *dir = emit_c(b.m, CV_EMIT_C, name, sizeof name, msg, sizeof msg);
            if (!dir)
                fail_msg("%s %s: %s", lists[l].c[i].op, lists[l].c[i].attrs, msg);
            cv_diag d;
            cv_diag_init(&d);
            bool missing;
            if (cv_c99_build_shared(cc, dir, name, syntax, n_flags, &missing, &d)) {
                bk_diag_msg(&d, msg, sizeof msg);
                fail_msg("%s %s: %s", lists[l].c[i].op, lists[l].c[i].attrs, msg);
            }
            cv_diag_free(&d);
            cv_tmpdir_remove(dir);
            bk_model_free(&b);
        }
    printf("%d single-op models pass %s -fsyntax-only\n", n, cc);
}

/* ---- artifacts ---------------------------------------------------------------------- */

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char *p = cv_tmpdir_path(dir, name), *data = cv_tmpdir_read_file(p, len);
    free(p);
    return data;
}

/* Two emits of one model give the same bytes in every file; the C files
 * are listed in the manifest. */
static void test_reproducible(void **state)
{
    (void)state;
    char path[1024], name[128], msg[1024] = "";
    snprintf(path, sizeof path, "%s/tests/cuir/accept/dtypes.cuir", cv_tmpdir_src_root());
    cv_module *m = load(path);
    assert_non_null(m);
    char *a = emit_c(m, CV_EMIT_C | CV_EMIT_CUIR, name, sizeof name, msg, sizeof msg);
    char *b = emit_c(m, CV_EMIT_C | CV_EMIT_CUIR, name, sizeof name, msg, sizeof msg);
    assert_non_null(a);
    assert_non_null(b);
    DIR *dir = opendir(a);
    int files = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        size_t la, lb;
        char *x = slurp(a, e->d_name, &la), *y = slurp(b, e->d_name, &lb);
        assert_non_null(x);
        assert_non_null(y);
        if (la != lb || memcmp(x, y, la) != 0)
            fail_msg("%s differs between two emits", e->d_name);
        free(x);
        free(y);
        files++;
    }
    closedir(dir);
    assert_int_equal(files, 6);  /* .c _weights.c .h .cuir .cvsym manifest.json */
    size_t len;
    /* The only allocations: the context (create) and the arena's growth. */
    char *src = slurp(a, "dtypes.c", &len);
    int mallocs = 0;
    for (const char *p = src; (p = strstr(p, "malloc(")); p++)
        mallocs++;
    assert_int_equal(mallocs, 2);
    free(src);
    char *man = slurp(a, "manifest.json", &len);
    assert_non_null(strstr(man, "\"dtypes.c\""));
    assert_non_null(strstr(man, "\"dtypes_weights.c\""));
    assert_non_null(strstr(man, "\"dtypes.h\""));
    free(man);
    cv_tmpdir_remove(a);
    cv_tmpdir_remove(b);
    cv_module_free(m);
}

/* The plugin is unloadable here: native emits fail (CV5040), C emits work. */
static void test_no_llvm(void **state)
{
    (void)state;
    char path[1024], name[128], msg[1024] = "";
    snprintf(path, sizeof path, "%s/examples/cuir/mlp.cuir", cv_tmpdir_src_root());
    cv_module *m = load(path);
    assert_non_null(m);
    char *dir = emit_c(m, CV_EMIT_SO, name, sizeof name, msg, sizeof msg);
    assert_null(dir);
    assert_non_null(strstr(msg, "CV5040"));
    dir = emit_c(m, CV_EMIT_C, name, sizeof name, msg, sizeof msg);
    assert_non_null(dir);
    cv_tmpdir_remove(dir);
    cv_module_free(m);
}

/* Every runtime routine a kernel may call has a C99 version. */
static void test_runtime_complete(void **state)
{
    (void)state;
    bool need[CV_C99_H__COUNT] = {false};
    for (int fn = 0; fn < CV_KRT__COUNT; fn++)
        if (!cv_c99_rt_name((cv_krt)fn, need))
            fail_msg("no C99 version of %s", cv_krt_get((cv_krt)fn)->name);
}

static void test_emit_parse(void **state)
{
    (void)state;
    unsigned e = 0;
    assert_int_equal(cv_emit_parse("c", &e), 0);
    assert_int_equal(e, CV_EMIT_C);
    assert_int_equal(cv_emit_parse("so,c,h", &e), 0);
    assert_int_equal(e, CV_EMIT_SO | CV_EMIT_C | CV_EMIT_H);
    assert_int_not_equal(cv_emit_parse("c99", &e), 0);
}

/* A broken compiler command is reported with the compiler's output. */
static void test_build_errors(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_make("c99-bad");
    assert_int_equal(cv_tmpdir_write(dir, "bad.c", "int x = ;\n", 10), 0);
    assert_int_equal(cv_tmpdir_write(dir, "bad_weights.c", "int y;\n", 7), 0);
    cv_diag d;
    cv_diag_init(&d);
    bool missing = false;
    assert_int_equal(cv_c99_build_shared(g_cc[0], dir, "bad", NULL, 0, &missing, &d), -1);
    assert_false(missing);
    assert_int_equal(d.n_errors, 1);
    assert_int_equal(d.v[0].code, 5042);
    cv_diag_free(&d);
    cv_diag_init(&d);
    assert_int_equal(cv_c99_build_shared("no-such-cc-xyz", dir, "bad", NULL, 0, &missing, &d), -1);
    assert_true(missing);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    /* Nothing here may load the LLVM backend. */
    setenv("CUVIL_LLVM_PLUGIN", "/nonexistent/libcv_llvm.so", 1);
    g_cc[g_n_cc++] = "gcc";
    if (have_program("clang-19"))
        g_cc[g_n_cc++] = "clang-19";
    else
        fprintf(stderr, "test_c99: clang-19 not installed, building with gcc only\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emit_parse),
        cmocka_unit_test(test_runtime_complete),
        cmocka_unit_test(test_no_llvm),
        cmocka_unit_test(test_build_errors),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_texts),
        cmocka_unit_test(test_dsl_models),
        cmocka_unit_test(test_sweep_ew),
        cmocka_unit_test(test_sweep_act),
        cmocka_unit_test(test_sweep_nn),
        cmocka_unit_test(test_sweep_red),
        cmocka_unit_test(test_sweep_shape),
        cmocka_unit_test(test_each_case_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
