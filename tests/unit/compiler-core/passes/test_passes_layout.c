/* The blocked (NCHWc) layout (passes/layout.c, codegen_nchwc.c,
 * cvrt_nchwc.c): small convolution chains compiled natively (-O1, to keep
 * the test short) with it and without it (--no-blocked-layout), run at two
 * threads and compared with the reference interpreter, and the plan's
 * counts (blocked convolutions, reorders) checked where this machine's
 * target blocks at all (AVX-512). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/cuvil.h"
#include "tests/support/numpyref.h"
#include "tests/support/tmpdir.h"

/* "param %NAME: f32[DIMS] = dense(...)" with n pseudo-random values in
 * [-amp, amp]. */
static void param_amp(cv_sb *sb, const char *name, const char *dims, int n, unsigned seed,
                      double amp)
{
    cv_sb_printf(sb, "  param %%%s: f32[%s] = dense(", name, dims);
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        cv_sb_printf(sb, "%s%.4f", i ? ", " : "",
                     ((double)(seed >> 16 & 0x7fff) / 32767.0 - 0.5) * 2 * amp);
    }
    cv_sb_puts(sb, ")\n");
}

static void param(cv_sb *sb, const char *name, const char *dims, int n, unsigned seed)
{
    param_amp(sb, name, dims, n, seed, 0.25);
}

/* A whole region: a 3x3 conv over the plain 3-channel input (read as it
 * is), max pooling, depthwise convs (+ clip), 1x1 convs (+ residual add +
 * relu) and the global average pool that ends it: nothing to reorder. */
static char *region_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @region(%x: f32[N,3,24,24]) -> (f32[N,32]) {\n");
    param(&sb, "w0", "32,3,3,3", 32 * 27, 1);
    param(&sb, "b0", "32", 32, 2);
    param(&sb, "w1", "32,1,3,3", 32 * 9, 3);
    param(&sb, "b1", "32", 32, 4);
    param(&sb, "w2", "32,32,1,1", 32 * 32, 5);
    param(&sb, "w3", "32,1,3,3", 32 * 9, 6);
    param(&sb, "w4", "32,32,1,1", 32 * 32, 7);
    cv_sb_puts(&sb,
        "  %0 = conv2d(%x, %w0, %b0) {pad=[1,1]} : f32[N,32,24,24]\n"
        "  %1 = relu(%0) : f32[N,32,24,24]\n"
        "  %2 = max_pool2d(%1) {kernel=[3,3], pad=[1,1]} : f32[N,32,24,24]\n"
        "  %3 = conv2d(%2, %w1, %b1) {pad=[1,1], groups=32} : f32[N,32,24,24]\n"
        "  %4 = clip(%3) {min=0, max=0.6} : f32[N,32,24,24]\n"
        "  %5 = conv2d(%4, %w2) : f32[N,32,24,24]\n"
        "  %6 = add(%5, %2) : f32[N,32,24,24]\n"
        "  %7 = relu(%6) : f32[N,32,24,24]\n"
        "  %8 = conv2d(%7, %w3) {pad=[1,1], stride=[2,2], groups=32} : f32[N,32,12,12]\n"
        "  %9 = conv2d(%8, %w4) : f32[N,32,12,12]\n"
        "  %10 = global_avg_pool(%9) : f32[N,32,1,1]\n"
        "  %11 = flatten(%10) {axis=1} : f32[N,32]\n"
        "  return %11\n}\n");
    return cv_sb_steal(&sb);
}

/* Six depthwise convs between plain ops: a reorder into the blocked layout
 * before them and one out of it after (their saving pays for both). */
static char *boundary_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @boundary(%x: f32[1,32,16,16]) -> (f32[1,32,16,16]) {\n");
    param(&sb, "w", "32,1,3,3", 32 * 9, 8);
    cv_sb_puts(&sb, "  %0 = conv2d(%x, %w) {pad=[1,1], groups=32} : f32[1,32,16,16]\n");
    for (int i = 1; i < 6; i++)
        cv_sb_printf(&sb, "  %%%d = conv2d(%%%d, %%w) {pad=[1,1], groups=32} : f32[1,32,16,16]\n",
                     i, i - 1);
    cv_sb_puts(&sb, "  %6 = softmax(%5) {axis=1} : f32[1,32,16,16]\n  return %6\n}\n");
    return cv_sb_steal(&sb);
}

/* Dense convolutions in the blocked kernel's row tiles: 3x3 at strides 1
 * and 2 (27 columns: tiles of 14, 7, 4 and 2; an odd width at stride 2,
 * whose last column's taps leave the image; 7 columns: one tile with both
 * ends checked), a 1x1 downsample and residual adds.  Only the input is
 * reordered. */
static char *dense_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @dense(%x: f32[N,16,27,27]) -> (f32[N,64]) {\n");
    param_amp(&sb, "w0", "32,16,3,3", 32 * 16 * 9, 21, 0.08);
    param_amp(&sb, "b0", "32", 32, 22, 0.1);
    param_amp(&sb, "w1", "32,32,3,3", 32 * 32 * 9, 23, 0.06);
    param_amp(&sb, "w2", "64,32,3,3", 64 * 32 * 9, 24, 0.06);
    param_amp(&sb, "w3", "64,32,1,1", 64 * 32, 25, 0.2);
    param_amp(&sb, "w4", "64,64,3,3", 64 * 64 * 9, 26, 0.04);
    param_amp(&sb, "b4", "64", 64, 27, 0.1);
    cv_sb_puts(&sb,
        "  %0 = conv2d(%x, %w0, %b0) {pad=[1,1]} : f32[N,32,27,27]\n"
        "  %1 = relu(%0) : f32[N,32,27,27]\n"
        "  %2 = conv2d(%1, %w1) {pad=[1,1]} : f32[N,32,27,27]\n"
        "  %3 = add(%2, %1) : f32[N,32,27,27]\n"
        "  %4 = relu(%3) : f32[N,32,27,27]\n"
        "  %5 = conv2d(%4, %w2) {pad=[1,1], stride=[2,2]} : f32[N,64,14,14]\n"
        "  %6 = conv2d(%4, %w3) {stride=[2,2]} : f32[N,64,14,14]\n"
        "  %7 = add(%5, %6) : f32[N,64,14,14]\n"
        "  %8 = relu(%7) : f32[N,64,14,14]\n"
        "  %9 = conv2d(%8, %w4, %b4) {pad=[1,1], stride=[2,2]} : f32[N,64,7,7]\n"
        "  %10 = conv2d(%9, %w4) {pad=[1,1]} : f32[N,64,7,7]\n"
        "  %11 = relu(%10) : f32[N,64,7,7]\n"
        "  %12 = global_avg_pool(%11) : f32[N,64,1,1]\n"
        "  %13 = flatten(%12) {axis=1} : f32[N,64]\n"
        "  return %13\n}\n");
    return cv_sb_steal(&sb);
}

/* A resnet stem: a 7x7 stride-2 convolution over the plain 3-channel input
 * in row tiles (two border columns on the left), max pooling, a 3x3. */
static char *stem_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @stem(%x: f32[N,3,30,30]) -> (f32[N,32]) {\n");
    param_amp(&sb, "w0", "32,3,7,7", 32 * 3 * 49, 31, 0.1);
    param_amp(&sb, "b0", "32", 32, 32, 0.1);
    param_amp(&sb, "w1", "32,32,3,3", 32 * 32 * 9, 33, 0.06);
    cv_sb_puts(&sb,
        "  %0 = conv2d(%x, %w0, %b0) {pad=[3,3], stride=[2,2]} : f32[N,32,15,15]\n"
        "  %1 = relu(%0) : f32[N,32,15,15]\n"
        "  %2 = max_pool2d(%1) {kernel=[3,3], stride=[2,2], pad=[1,1]} : f32[N,32,8,8]\n"
        "  %3 = conv2d(%2, %w1) {pad=[1,1]} : f32[N,32,8,8]\n"
        "  %4 = relu(%3) : f32[N,32,8,8]\n"
        "  %5 = global_avg_pool(%4) : f32[N,32,1,1]\n"
        "  %6 = flatten(%5) {axis=1} : f32[N,32]\n"
        "  return %6\n}\n");
    return cv_sb_steal(&sb);
}

/* MBConv glue (efficientnet, mobilenet_v3): 1x1 conv + SiLU (x *
 * sigmoid(x)), depthwise conv + hard-swish (x * hard_sigmoid(x)), 1x1 conv
 * + residual: each activation runs in its convolution's blocked kernel,
 * so only the input is reordered. */
static char *swish_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @swish(%x: f32[N,32,12,12]) -> (f32[N,32]) {\n");
    param_amp(&sb, "w0", "32,32,1,1", 32 * 32, 41, 0.6);
    param_amp(&sb, "b0", "32", 32, 42, 0.5);
    param_amp(&sb, "w1", "32,1,3,3", 32 * 9, 43, 1.5);
    param_amp(&sb, "w2", "32,32,1,1", 32 * 32, 44, 0.3);
    cv_sb_puts(&sb,
        "  %0 = conv2d(%x, %w0, %b0) : f32[N,32,12,12]\n"
        "  %1 = sigmoid(%0) : f32[N,32,12,12]\n"
        "  %2 = mul(%0, %1) : f32[N,32,12,12]\n"
        "  %3 = conv2d(%2, %w1) {pad=[1,1], groups=32} : f32[N,32,12,12]\n"
        "  %4 = hard_sigmoid(%3) {alpha=0.16666667, beta=0.5} : f32[N,32,12,12]\n"
        "  %5 = mul(%3, %4) : f32[N,32,12,12]\n"
        "  %6 = conv2d(%5, %w2) : f32[N,32,12,12]\n"
        "  %7 = add(%6, %2) : f32[N,32,12,12]\n"
        "  %8 = global_avg_pool(%7) : f32[N,32,1,1]\n"
        "  %9 = flatten(%8) {axis=1} : f32[N,32]\n"
        "  return %9\n}\n");
    return cv_sb_steal(&sb);
}

/* Channel counts that are not whole blocks (mobilenet_v2's 24,
 * efficientnet's 40, 72 = 4.5 blocks of 16): the dense convolutions (a 3x3
 * over the plain 3-channel input among them) run blocked on channels
 * padded with zeros, an odd last output block in row tiles of its own; a
 * clip with min > 0 puts nonzero values in the padding lanes, which the
 * zero weights past C must ignore; the residual is padded too. */
static char *odd_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @odd(%x: f32[N,3,10,10]) -> (f32[N,72]) {\n");
    param_amp(&sb, "wa", "24,3,3,3", 24 * 27, 50, 0.4);
    param_amp(&sb, "w0", "40,24,1,1", 40 * 24, 51, 0.4);
    param_amp(&sb, "b0", "40", 40, 52, 0.3);
    param_amp(&sb, "w1", "40,1,3,3", 40 * 9, 53, 0.5);
    param_amp(&sb, "w2", "24,40,3,3", 24 * 40 * 9, 54, 0.1);
    param_amp(&sb, "w3", "72,24,1,1", 72 * 24, 55, 0.3);
    param_amp(&sb, "b3", "72", 72, 56, 0.2);
    cv_sb_puts(&sb,
        "  %a = conv2d(%x, %wa) {pad=[1,1]} : f32[N,24,10,10]\n"
        "  %0 = conv2d(%a, %w0, %b0) : f32[N,40,10,10]\n"
        "  %1 = clip(%0) {min=0.25, max=1.5} : f32[N,40,10,10]\n"
        "  %2 = conv2d(%1, %w1) {pad=[1,1], groups=40} : f32[N,40,10,10]\n"
        "  %3 = conv2d(%2, %w2) {pad=[1,1]} : f32[N,24,10,10]\n"
        "  %4 = add(%3, %a) : f32[N,24,10,10]\n"
        "  %5 = conv2d(%4, %w3, %b3) {stride=[2,2]} : f32[N,72,5,5]\n"
        "  %6 = relu(%5) : f32[N,72,5,5]\n"
        "  %7 = global_avg_pool(%6) : f32[N,72,1,1]\n"
        "  %8 = flatten(%7) {axis=1} : f32[N,72]\n"
        "  return %8\n}\n");
    return cv_sb_steal(&sb);
}

/* Pointwise (1x1, stride 1) convolutions over a blocked input, which the
 * kernel runs as one row of H*W pixels in work items of whole tiles (11x11
 * = 121 pixels: items end in tiles of 7, 2 and 1 pixels at two threads):
 * one output block (16 channels), three (a pair and one alone: 48 with a
 * residual, 40 padded), then a 3x3 in row tiles. */
static char *pointwise_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @pointwise(%x: f32[N,48,11,11]) -> (f32[N,64]) {\n");
    param_amp(&sb, "w0", "16,48,1,1", 16 * 48, 61, 0.3);
    param_amp(&sb, "b0", "16", 16, 62, 0.2);
    param_amp(&sb, "w1", "48,16,1,1", 48 * 16, 63, 0.4);
    param_amp(&sb, "b1", "48", 48, 64, 0.2);
    param_amp(&sb, "w2", "40,48,1,1", 40 * 48, 65, 0.3);
    param_amp(&sb, "w3", "64,40,3,3", 64 * 40 * 9, 66, 0.08);
    cv_sb_puts(&sb,
        "  %0 = conv2d(%x, %w0, %b0) : f32[N,16,11,11]\n"
        "  %1 = relu(%0) : f32[N,16,11,11]\n"
        "  %2 = conv2d(%1, %w1, %b1) : f32[N,48,11,11]\n"
        "  %3 = add(%2, %x) : f32[N,48,11,11]\n"
        "  %4 = relu(%3) : f32[N,48,11,11]\n"
        "  %5 = conv2d(%4, %w2) : f32[N,40,11,11]\n"
        "  %6 = conv2d(%5, %w3) {pad=[1,1]} : f32[N,64,11,11]\n"
        "  %7 = relu(%6) : f32[N,64,11,11]\n"
        "  %8 = global_avg_pool(%7) : f32[N,64,1,1]\n"
        "  %9 = flatten(%8) {axis=1} : f32[N,64]\n"
        "  return %9\n}\n");
    return cv_sb_steal(&sb);
}

/* Fire modules (squeezenet) and a densenet-style concatenation: two
 * expands concatenated along channels, a ceil-mode max pool over the
 * result, then a 16-channel part concatenated with a 24-channel one (the
 * padded last part).  The concatenations run blocked, each part's blocks
 * copied to their run of the result: only the input is reordered. */
static char *concat_model(void)
{
    cv_sb sb = {0};
    cv_sb_puts(&sb, "cuir 1\nmodel @concat(%x: f32[N,32,14,14]) -> (f32[N,40]) {\n");
    param_amp(&sb, "ws", "16,32,1,1", 16 * 32, 71, 0.3);
    param_amp(&sb, "bs", "16", 16, 72, 0.2);
    param_amp(&sb, "we1", "32,16,1,1", 32 * 16, 73, 0.4);
    param_amp(&sb, "we3", "32,16,3,3", 32 * 16 * 9, 74, 0.15);
    param_amp(&sb, "ws2", "16,64,1,1", 16 * 64, 75, 0.3);
    param_amp(&sb, "wb", "24,16,3,3", 24 * 16 * 9, 76, 0.15);
    cv_sb_puts(&sb,
        "  %0 = conv2d(%x, %ws, %bs) : f32[N,16,14,14]\n"
        "  %1 = relu(%0) : f32[N,16,14,14]\n"
        "  %2 = conv2d(%1, %we1) : f32[N,32,14,14]\n"
        "  %3 = relu(%2) : f32[N,32,14,14]\n"
        "  %4 = conv2d(%1, %we3) {pad=[1,1]} : f32[N,32,14,14]\n"
        "  %5 = relu(%4) : f32[N,32,14,14]\n"
        "  %6 = concat(%3, %5) {axis=1} : f32[N,64,14,14]\n"
        "  %7 = max_pool2d(%6) {kernel=[3,3], stride=[2,2], ceil_mode=1} : f32[N,64,7,7]\n"
        "  %8 = conv2d(%7, %ws2) : f32[N,16,7,7]\n"
        "  %9 = relu(%8) : f32[N,16,7,7]\n"
        "  %10 = conv2d(%9, %wb) {pad=[1,1]} : f32[N,24,7,7]\n"
        "  %11 = concat(%9, %10) {axis=-3} : f32[N,40,7,7]\n"
        "  %12 = global_avg_pool(%11) : f32[N,40,1,1]\n"
        "  %13 = flatten(%12) {axis=1} : f32[N,40]\n"
        "  return %13\n}\n");
    return cv_sb_steal(&sb);
}

typedef struct expect {
    int convs, reorders;
} expect;

/* Compiles text natively (blocked or not), runs it on random inputs with
 * N = 2 and compares every output with the interpreter. */
static void check(const char *text, bool blocked, expect want)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, strlen(text), "layout.cuir", &d);
    if (!m || cv_verify(m, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    const cv_func *f = m->funcs[0];
    cv_tensor ins[2] = {{0}}, want_out[2] = {{0}}, got[2] = {{0}};
    const cv_type *t = &f->inputs[0]->type;
    int64_t dims[CV_MAX_RANK];
    for (int k = 0; k < t->shape.rank; k++)
        dims[k] = t->shape.d[k].sym ? 2 : t->shape.d[k].n;
    assert_int_equal(cv_tensor_alloc(&ins[0], t->dtype, t->shape.rank, dims), 0);
    cv_npref_fill(&ins[0], 11, -1, 1);
    assert_int_equal(cv_interp_run(f, ins, 1, want_out, &d), 0);
    char *dir = cv_tmpdir_make("layout");
    cv_compile_opts o = {.target = "native", .opt_level = 1, .emit = CV_EMIT_SO, .out_dir = dir,
                         .no_blocked_layout = !blocked};
    cv_compile_info info;
    cv_native *n = NULL;
    if (cv_compile_native(m, &o, &info, &d) || cv_native_open(dir, 2, &n, &d) ||
        cv_native_run(n, ins, 1, got, &d)) {
        cv_diag_print(&d, stderr, false);
        fail_msg("@%s does not compile or run", f->name);
    }
    if (!blocked)
        assert_int_equal(info.nchwc_block, 0);
    if (info.nchwc_block) {
        if (info.n_blocked_convs != want.convs || info.n_reorders != want.reorders)
            fail_msg("@%s: %d blocked convs and %d reorders, want %d and %d", f->name,
                     info.n_blocked_convs, info.n_reorders, want.convs, want.reorders);
    } else {
        assert_int_equal(info.n_blocked_convs + info.n_reorders, 0);
    }
    char msg[512];
    if (cv_npref_compare(&got[0], &want_out[0], 1e-4, 1e-5, msg, sizeof msg))
        fail_msg("@%s (blocked %d): %s", f->name, blocked, msg);
    cv_tensor_free(&got[0]);
    cv_tensor_free(&want_out[0]);
    cv_tensor_free(&ins[0]);
    cv_native_close(n);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    cv_module_free(m);
}

static void test_region(void **state)
{
    (void)state;
    char *text = region_model();
    check(text, true, (expect){5, 0});
    check(text, false, (expect){0, 0});
    free(text);
}

static void test_boundary(void **state)
{
    (void)state;
    char *text = boundary_model();
    check(text, true, (expect){6, 2});
    free(text);
}

static void test_dense(void **state)
{
    (void)state;
    char *text = dense_model();
    check(text, true, (expect){6, 1});
    check(text, false, (expect){0, 0});
    free(text);
}

static void test_stem(void **state)
{
    (void)state;
    char *text = stem_model();
    check(text, true, (expect){2, 0});
    free(text);
}

static void test_swish(void **state)
{
    (void)state;
    char *text = swish_model();
    check(text, true, (expect){3, 1});
    check(text, false, (expect){0, 0});
    free(text);
}

static void test_odd_channels(void **state)
{
    (void)state;
    char *text = odd_model();
    check(text, true, (expect){5, 0});
    check(text, false, (expect){0, 0});
    free(text);
}

static void test_pointwise(void **state)
{
    (void)state;
    char *text = pointwise_model();
    check(text, true, (expect){4, 1});
    free(text);
}

static void test_concat(void **state)
{
    (void)state;
    char *text = concat_model();
    check(text, true, (expect){5, 1});
    check(text, false, (expect){0, 0});
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_region),
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_stem),
        cmocka_unit_test(test_swish),
        cmocka_unit_test(test_odd_channels),
        cmocka_unit_test(test_pointwise),
        cmocka_unit_test(test_concat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
