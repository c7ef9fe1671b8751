/* Transformer block fusions (issue 26): the decomposed LayerNorm and the
 * erf and tanh GELUs that exporters write become one layer_norm / gelu op
 * (passes/norm_fuse.c), and a projection's bias add and residual add run
 * inside its GEMM, whose constant weights are packed at compile time
 * (codegen_matmul.c, cvrt_sgemm_pb).  Each model is checked against the
 * unfused function in the interpreter, natively at 1 and 2 threads, with
 * the op and kernel counts that show the fusion happened. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "compiler-core/passes/passes.h"
#include "tests/support/backend_testlib.h"

typedef struct tf_case {
    const char *text;
    const char *op;         /* the op the passes make, or NULL */
    int n_op;               /* how many */
    int kernels;            /* after fusion, natively */
} tf_case;

/* A d=48 LayerNorm over [2,5,48] (torch's opset-14 export, eps 1e-5). */
#define LN_PARAMS \
    "  param %two: f32[] = dense(2)\n  param %eps: f32[] = dense(1e-05)\n"
static const char ln_text[] =
    "cuir 1\nmodel @ln(%x: f32[2,5,48], %g: f32[48], %b: f32[48]) -> (f32[2,5,48]) {\n" LN_PARAMS
    "  %0 = reduce_mean(%x) {axes=[-1], keepdims=1} : f32[2,5,1]\n"
    "  %1 = sub(%x, %0) : f32[2,5,48]\n"
    "  %2 = pow(%1, %two) : f32[2,5,48]\n"
    "  %3 = reduce_mean(%2) {axes=[-1], keepdims=1} : f32[2,5,1]\n"
    "  %4 = add(%3, %eps) : f32[2,5,1]\n"
    "  %5 = sqrt(%4) : f32[2,5,1]\n"
    "  %6 = div(%1, %5) : f32[2,5,48]\n"
    "  %7 = mul(%6, %g) : f32[2,5,48]\n"
    "  %8 = add(%7, %b) : f32[2,5,48]\n"
    "  return %8\n}\n";

/* The same with mul(d, d), the affine ops' operands swapped, constant
 * gamma and beta. */
static const char ln_swapped[] =
    "cuir 1\nmodel @ln2(%x: f32[3,40]) -> (f32[3,40]) {\n"
    "  param %eps: f32[] = dense(1e-12)\n"
    "  param %g: f32[40] = dense(" "1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2,"
    " 1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2, 1.5, 0.5, 1, 2)\n"
    "  param %b: f32[40] = dense(" "0.1, -0.2, 0.3, 0, 0.1, -0.2, 0.3, 0, 0.1, -0.2, 0.3, 0, 0.1, -0.2,"
    " 0.3, 0, 0.1, -0.2, 0.3, 0, 0.1, -0.2, 0.3, 0, 0.1, -0.2, 0.3, 0, 0.1, -0.2, 0.3, 0, 0.1, -0.2,"
    " 0.3, 0, 0.1, -0.2, 0.3, 0)\n"
    "  %0 = reduce_mean(%x) {axes=[1], keepdims=1} : f32[3,1]\n"
    "  %1 = sub(%x, %0) : f32[3,40]\n"
    "  %2 = mul(%1, %1) : f32[3,40]\n"
    "  %3 = reduce_mean(%2) {axes=[-1], keepdims=1} : f32[3,1]\n"
    "  %4 = add(%eps, %3) : f32[3,1]\n"
    "  %5 = sqrt(%4) : f32[3,1]\n"
    "  %6 = div(%1, %5) : f32[3,40]\n"
    "  %7 = mul(%g, %6) : f32[3,40]\n"
    "  %8 = add(%b, %7) : f32[3,40]\n"
    "  return %8\n}\n";

static const char gelu_erf[] =
    "cuir 1\nmodel @ge(%x: f32[4,33]) -> (f32[4,33]) {\n"
    "  param %s: f32[] = dense(1.4142135)\n  param %one: f32[] = dense(1)\n"
    "  param %h: f32[] = dense(0.5)\n"
    "  %0 = div(%x, %s) : f32[4,33]\n  %1 = erf(%0) : f32[4,33]\n"
    "  %2 = add(%1, %one) : f32[4,33]\n  %3 = mul(%x, %2) : f32[4,33]\n"
    "  %4 = mul(%3, %h) : f32[4,33]\n  return %4\n}\n";

static const char gelu_tanh[] =
    "cuir 1\nmodel @gt(%x: f32[4,33]) -> (f32[4,33]) {\n"
    "  param %three: f32[] = dense(3)\n  param %k: f32[] = dense(0.044715)\n"
    "  param %r: f32[] = dense(0.7978846)\n  param %one: f32[] = dense(1)\n"
    "  param %h: f32[] = dense(0.5)\n"
    "  %0 = mul(%h, %x) : f32[4,33]\n  %1 = pow(%x, %three) : f32[4,33]\n"
    "  %2 = mul(%k, %1) : f32[4,33]\n  %3 = add(%x, %2) : f32[4,33]\n"
    "  %4 = mul(%r, %3) : f32[4,33]\n  %5 = tanh(%4) : f32[4,33]\n"
    "  %6 = add(%one, %5) : f32[4,33]\n  %7 = mul(%0, %6) : f32[4,33]\n  return %7\n}\n";

/* Not a GELU: the constant is 0.6, not 0.5. */
static const char not_gelu[] =
    "cuir 1\nmodel @ng(%x: f32[4,33]) -> (f32[4,33]) {\n"
    "  param %s: f32[] = dense(1.4142135)\n  param %one: f32[] = dense(1)\n"
    "  param %h: f32[] = dense(0.6)\n"
    "  %0 = div(%x, %s) : f32[4,33]\n  %1 = erf(%0) : f32[4,33]\n"
    "  %2 = add(%1, %one) : f32[4,33]\n  %3 = mul(%x, %2) : f32[4,33]\n"
    "  %4 = mul(%3, %h) : f32[4,33]\n  return %4\n}\n";

static const tf_case cases[] = {
    {ln_text, "layer_norm", 1, 1},
    {ln_swapped, "layer_norm", 1, 1},
    {gelu_erf, "gelu", 1, 1},
    {gelu_tanh, "gelu", 1, 1},
    {not_gelu, NULL, 0, 1},
};

static cv_module *parse(const char *text)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, strlen(text), "block.cuir", &d);
    if (!m || cv_verify(m, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
    return m;
}

static int count_ops(const cv_func *f, const char *name)
{
    int n = 0;
    for (int i = 0; i < f->n_ops; i++)
        n += f->ops[i]->def && strcmp(f->ops[i]->def->name, name) == 0;
    return n;
}

static void make_inputs(const cv_func *f, cv_tensor *ins)
{
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_type *t = &f->inputs[i]->type;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < t->shape.rank; k++)
            dims[k] = t->shape.d[k].n;
        assert_int_equal(cv_tensor_alloc(&ins[i], t->dtype, t->shape.rank, dims), 0);
        cv_npref_fill(&ins[i], (uint64_t)(i + 21), -2, 2);
    }
}

/* Passes, interpreter and native code (with the kernel count) against the
 * unfused function in the interpreter. */
static void check(const char *text, const char *op, int n_op, int kernels)
{
    cv_module *m = parse(text), *ref = parse(text);
    cv_func *f = m->funcs[0];
    cv_tensor ins[4] = {{0}}, want[2] = {{0}}, got[2] = {{0}};
    make_inputs(f, ins);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(ref->funcs[0], ins, f->n_inputs, want, &d), 0);
    cv_pass_stats st;
    assert_int_equal(cv_passes_run(f, &st, &d), 0);
    assert_int_equal(st.layer_norms_fused + st.gelus_fused, n_op);
    if (op)
        assert_int_equal(count_ops(f, op), n_op);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    assert_int_equal(cv_interp_run(f, ins, f->n_inputs, got, &d), 0);
    char msg[1024];
    if (cv_npref_compare(&got[0], &want[0], 1e-5, 1e-6, msg, sizeof msg))
        fail_msg("interpreter: %s", msg);
    cv_tensor_free(&got[0]);
    char *dir = cv_tmpdir_make("tfuse");
    cv_compile_opts o = {.target = "native", .opt_level = 2, .emit = CV_EMIT_SO, .out_dir = dir};
    cv_compile_info info;
    cv_module *fresh = parse(text);
    if (cv_compile_native(fresh, &o, &info, &d)) {
        cv_diag_print(&d, stderr, false);
        fail();
    }
    assert_int_equal(info.n_kernels, kernels);
    for (int threads = 1; threads <= 2; threads++) {
        cv_native *n = NULL;
        if (cv_native_open(dir, threads, &n, &d) || cv_native_run(n, ins, f->n_inputs, got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail();
        }
        cv_native_close(n);
        if (cv_npref_compare(&got[0], &want[0], 1e-4, 1e-5, msg, sizeof msg))
            fail_msg("native, %d thread(s): %s", threads, msg);
        cv_tensor_free(&got[0]);
    }
    cv_tmpdir_remove(dir);
    cv_tensor_free(&want[0]);
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
    cv_diag_free(&d);
    cv_module_free(m);
    cv_module_free(ref);
    cv_module_free(fresh);
}

static void test_patterns(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(cases[i].text, cases[i].op, cases[i].n_op, cases[i].kernels);
}

/* A projection as exporters write it: matmul by constant weights [K, N]
 * (N = 40, not a whole number of packed panels), bias add, residual add.
 * One GEMM kernel does all three, at 32 rows (B packed at compile time)
 * and at 2 rows (the small-row path). */
static void test_projection(void **state)
{
    (void)state;
    char text[16384];
    for (int rows = 2; rows <= 32; rows += 30) {
        int n = snprintf(text, sizeof text,
                         "cuir 1\nmodel @proj(%%x: f32[1,%d,24], %%r: f32[1,%d,40]) -> (f32[1,%d,40]) {\n"
                         "  param %%w: f32[24,40] = dense(", rows, rows, rows);
        for (int i = 0; i < 24 * 40; i++)
            n += snprintf(text + n, sizeof text - (size_t)n, "%s%.3f", i ? ", " : "",
                          ((i * 37) % 101) / 50.0 - 1.0);
        n += snprintf(text + n, sizeof text - (size_t)n, ")\n  param %%b: f32[40] = dense(");
        for (int i = 0; i < 40; i++)
            n += snprintf(text + n, sizeof text - (size_t)n, "%s%.2f", i ? ", " : "", (i % 7) / 3.0 - 1);
        snprintf(text + n, sizeof text - (size_t)n,
                 ")\n  %%0 = matmul(%%x, %%w) : f32[1,%d,40]\n  %%1 = add(%%b, %%0) : f32[1,%d,40]\n"
                 "  %%2 = add(%%r, %%1) : f32[1,%d,40]\n  return %%2\n}\n", rows, rows, rows);
        check(text, NULL, 0, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_projection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
