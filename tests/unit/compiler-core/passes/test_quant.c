/* Reduced precision (passes/quantize*.c, runtime/cvrt_qconv.c): a small
 * residual CNN with random weights compiled natively in fp32 and int8
 * (minmax calibration on 32 random inputs, one more held out); on 200
 * further random inputs int8 must agree with fp32 on the top-1 class for
 * >= 98% and reach an SQNR >= 20 dB; fp16 (its passes, run by the
 * interpreter on 8 of them) and fp16 and bf16 compiled natively (fp16
 * weights widened inside the GEMM; bf16 computed in bf16 where the CPU has
 * AVX512_BF16) must stay within 1e-2 of the output range.
 * The int8 kernels are also checked against the interpreter's qconv2d on
 * awkward geometry (u8 values between the layers, requantised in the
 * producing kernel, and a u8 residual), QDQ convolutions must compile to
 * them with their relu fused, and the
 * --min-sqnr gate must fail with CV5110.  (resnet18 and mobilenet_v2 are
 * checked by tests/conformance/quant_models.sh under make conformance:
 * minutes, too slow for make test.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/npy.h"
#include "compiler-core/backend/c99/c99.h"
#include "compiler-core/cuvil.h"
#include "tests/support/netbuild.h"
#include "tests/support/numpyref.h"
#include "tests/support/tmpdir.h"

/* x -> conv relu -> conv + x relu -> conv/2 relu -> 1x1 conv relu ->
 * depthwise relu -> 1x1 conv to 10 -> global pool: 10 logits (no gemm: the
 * f32 GEMM engine is what LLVM takes longest over, once is enough). */
static cv_module *mini_cnn(cv_diag *d)
{
    static const int64_t p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
    cv_nb b = cv_nb_begin("quant.cuir", d, 3, 32, 32);
    cv_value *x = b.f->inputs[0];
    cv_value *a = cv_nb_unary(&b, "relu", cv_nb_conv(&b, x, 16, 3, 1, p1, 1, 1));
    cv_value *r = cv_nb_unary(&b, "relu",
                                cv_nb_binary(&b, "add", cv_nb_conv(&b, a, 16, 3, 1, p1, 1, 1), a));
    cv_value *s = cv_nb_unary(&b, "relu", cv_nb_conv(&b, r, 32, 3, 2, p1, 1, 1));
    cv_value *t = cv_nb_unary(&b, "relu", cv_nb_conv(&b, s, 32, 1, 1, p0, 1, 1));
    cv_value *u = cv_nb_unary(&b, "relu", cv_nb_conv(&b, t, 32, 3, 1, p1, 1, 32));
    cv_value *g = cv_nb_unary(&b, "global_avg_pool", cv_nb_conv(&b, u, 10, 1, 1, p0, 1, 1));
    return cv_nb_end(&b, cv_nb_unary(&b, "flatten", g));
}

/* Odd channels, rows and pads; a dilated conv with a fused residual; 1x1
 * convs; a depthwise conv. */
static cv_module *awkward(cv_diag *d)
{
    static const int64_t pa[4] = {1, 0, 2, 1}, p2[4] = {2, 2, 2, 2}, p0[4] = {0, 0, 0, 0};
    cv_nb b = cv_nb_begin("quant.cuir", d, 5, 9, 7);
    cv_value *a = cv_nb_unary(&b, "relu", cv_nb_conv(&b, b.f->inputs[0], 11, 3, 1, pa, 1, 1));
    cv_value *r = cv_nb_unary(&b, "relu",
                                cv_nb_binary(&b, "add", cv_nb_conv(&b, a, 11, 3, 1, p2, 2, 1), a));
    /* 1x1 stride-1 convs quantise their panels straight from x. */
    cv_value *t = cv_nb_conv(&b, r, 13, 1, 2, p0, 1, 1);
    /* A depthwise conv with stride 2 and uneven pads (cvrt_qdwconv2d). */
    cv_value *u = cv_nb_unary(&b, "relu", cv_nb_conv(&b, t, 13, 3, 2, pa, 1, 13));
    return cv_nb_end(&b, cv_nb_conv(&b, u, 6, 1, 1, p0, 1, 1));
}

/* u8 -> depthwise -> u8 twice (cvrt_qdwconv2d's channel-blocked path): 20
 * channels (a partial block of 16), rows of 21 (a whole 16-pixel run and
 * a tail), strides 1 and 2. */
static cv_module *dw_chain(cv_diag *d)
{
    static const int64_t p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
    cv_nb b = cv_nb_begin("quant.cuir", d, 3, 19, 21);
    cv_value *a = cv_nb_unary(&b, "relu", cv_nb_conv(&b, b.f->inputs[0], 20, 1, 1, p0, 1, 1));
    cv_value *u = cv_nb_unary(&b, "relu", cv_nb_conv(&b, a, 20, 3, 1, p1, 1, 20));
    cv_value *v = cv_nb_unary(&b, "relu", cv_nb_conv(&b, u, 20, 3, 2, p1, 1, 20));
    return cv_nb_end(&b, cv_nb_conv(&b, v, 4, 1, 1, p0, 1, 1));
}

/* The channels-last u8 layout between int8 layers at awkward sizes:
 * channels 24, 20 and 13 (partial 16-channel vectors), widths 14, 7, 4, 2
 * and 1, stride 2, a 1x1 convolution reading its input in place (24
 * channels, a whole 32-pixel panel), a u8 residual; and the layouts
 * meeting: an f32 output read by a max pool (NCHW), that pool's f32 result
 * as the residual of a u8-writing conv, and a u8 residual of the f32
 * model output. */
static cv_module *nhwc_edges(cv_diag *d)
{
    static const int64_t p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
    cv_nb b = cv_nb_begin("quant.cuir", d, 3, 9, 14);
    cv_value *a = cv_nb_unary(&b, "relu", cv_nb_conv(&b, b.f->inputs[0], 24, 3, 1, p1, 1, 1));
    cv_op *pool = cv_op_new(b.f, "max_pool2d", &a, 1);
    cv_op_set_ints(pool, "kernel", (int64_t[]){3, 3}, 2);
    cv_op_set_ints(pool, "pad", p1, 4);
    cv_value *mp = cv_nb_finish(&b, pool);
    cv_value *c = cv_nb_conv(&b, mp, 24, 3, 1, p1, 1, 1);
    c = cv_nb_unary(&b, "relu", cv_nb_binary(&b, "add", c, mp));
    cv_value *u = cv_nb_unary(&b, "relu", cv_nb_conv(&b, c, 24, 3, 2, p1, 1, 24));
    cv_value *t = cv_nb_conv(&b, u, 20, 1, 1, p0, 1, 1);
    cv_value *r = cv_nb_unary(&b, "relu",
                                cv_nb_binary(&b, "add", cv_nb_conv(&b, t, 20, 1, 1, p0, 1, 1), t));
    cv_value *w = cv_nb_unary(&b, "relu", cv_nb_conv(&b, r, 20, 3, 2, p1, 1, 20));
    cv_value *v = cv_nb_unary(&b, "relu", cv_nb_conv(&b, w, 13, 3, 2, p1, 1, 1));
    cv_value *z = cv_nb_unary(&b, "relu", cv_nb_conv(&b, v, 13, 3, 2, p1, 1, 13));
    return cv_nb_end(&b, cv_nb_binary(&b, "add", cv_nb_conv(&b, z, 13, 1, 1, p0, 1, 1), z));
}

/* n random samples of shape dims[0..rank) in [-1, 1] (dims[0] set to n). */
static void random_rows(cv_tensor *t, int64_t n, int rank, const int64_t *dims, uint64_t seed)
{
    int64_t dd[CV_MAX_RANK];
    memcpy(dd, dims, (size_t)rank * sizeof *dd);
    dd[0] = n;
    assert_int_equal(cv_tensor_alloc(t, CV_F32, rank, dd), 0);
    cv_npref_fill(t, seed, -1, 1);
}

static void random_batch(cv_tensor *t, int64_t n, int64_t c, int64_t h, int64_t w, uint64_t seed)
{
    random_rows(t, n, 4, (const int64_t[]){n, c, h, w}, seed);
}

/* count single-sample .npy files prefix00.npy ... of shape dims; the glob
 * prefix*.npy. */
static char *calib_files(const char *dir, const char *prefix, int count, int rank,
                         const int64_t *dims, uint64_t seed)
{
    cv_diag d;
    cv_diag_init(&d);
    for (int i = 0; i < count; i++) {
        cv_tensor t;
        random_rows(&t, dims[0], rank, dims, seed + (uint64_t)i);
        char name[64];
        snprintf(name, sizeof name, "%s%02d.npy", prefix, i);
        char *path = cv_tmpdir_path(dir, name);
        assert_int_equal(cv_npy_write(path, CV_F32, rank, t.dims, t.data, &d), 0);
        free(path);
        cv_tensor_free(&t);
    }
    cv_diag_free(&d);
    char pat[64];
    snprintf(pat, sizeof pat, "%s*.npy", prefix);
    return cv_tmpdir_path(dir, pat);
}

/* 33 single-image .npy files: 32 to calibrate on, the last held out. */
static char *calibration(const char *dir, int64_t c, int64_t h, int64_t w)
{
    return calib_files(dir, "cal", 33, 4, (const int64_t[]){1, c, h, w}, 1000);
}

/* Compiles m (rewritten in place by the passes) for target into dir/sub
 * and runs it on in. */
static int compile_run_for(cv_module *m, const char *target, const char *dir, const char *sub,
                           const cv_quant_opts *q, const cv_tensor *in, cv_tensor *out,
                           cv_compile_info *info, cv_diag *d)
{
    char *out_dir = cv_tmpdir_path(dir, sub);
    /* -O1: LLVM's time on the runtime dominates here; without inputs only
     * the passes matter (--emit cuir needs no LLVM). */
    cv_compile_opts o = {.target = target, .opt_level = 1,
                         .emit = in ? CV_EMIT_SO : CV_EMIT_CUIR, .out_dir = out_dir, .quant = q};
    cv_native *n = NULL;
    int rc = cv_compile_native(m, &o, info, d);
    if (rc == 0 && in)
        rc = cv_native_open(out_dir, 2, &n, d) || cv_native_run(n, in, 1, out, d) ? -1 : 0;
    if (n)
        cv_native_close(n);
    free(out_dir);
    if (rc && d->n_errors && in)
        cv_diag_print(d, stderr, false);
    return rc;
}

static int compile_run(cv_module *m, const char *dir, const char *sub, const cv_quant_opts *q,
                       const cv_tensor *in, cv_tensor *out, cv_compile_info *info, cv_diag *d)
{
    return compile_run_for(m, "native", dir, sub, q, in, out, info, d);
}

static double sqnr(const cv_tensor *ref, const cv_tensor *got)
{
    double s = 0, e = 0;
    for (int64_t i = 0; i < ref->numel; i++) {
        double r = ((const float *)ref->data)[i], x = r - ((const float *)got->data)[i];
        s += r * r;
        e += x * x;
    }
    return e > 0 ? 10 * log10(s / e) : 200;
}

static int64_t argmax_row(const float *p, int n)
{
    int64_t k = 0;
    for (int i = 1; i < n; i++)
        if (p[i] > p[k])
            k = i;
    return k;
}

static void test_int8_fp16_accuracy(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    char *dir = cv_tmpdir_make("quant");
    char *glob = calibration(dir, 3, 32, 32);
    cv_tensor in, ref = {0}, q8 = {0}, h16 = {0};
    random_batch(&in, 200, 3, 32, 32, 77);
    cv_compile_info info;
    cv_quant_opts qi = {.precision = CV_PRECISION_INT8, .calibration = glob};
    cv_quant_opts qh = {.precision = CV_PRECISION_FP16};
    cv_module *m = mini_cnn(&d);
    assert_int_equal(compile_run(m, dir, "fp32", NULL, &in, &ref, &info, &d), 0);
    cv_module_free(m);
    m = mini_cnn(&d);
    assert_int_equal(compile_run(m, dir, "int8", &qi, &in, &q8, &info, &d), 0);
    assert_non_null(strstr(info.quant_report, "6 of"));    /* the depthwise conv too */
    assert_non_null(strstr(info.quant_report, "write u8"));
    assert_non_null(strstr(info.quant_report, "output %"));
    cv_module_free(m);
    /* fp16 through the passes only (its casts and f32 kernels are the
     * fp32 path's), run by the interpreter on the first 8 inputs. */
    m = mini_cnn(&d);
    assert_int_equal(compile_run(m, dir, "fp16", &qh, NULL, NULL, &info, &d), 0);
    assert_non_null(strstr(info.quant_report, "stored as f16"));
    cv_tensor in8 = in;
    in8.dims[0] = 8;
    in8.numel = 8 * 3 * 32 * 32;
    assert_int_equal(cv_interp_run(m->funcs[0], &in8, 1, &h16, &d), 0);
    cv_module_free(m);
    /* fp16 and bf16 natively: the GEMM convolutions widen their packed
     * 16-bit weights inside the GEMM, the depthwise one reads a cast. */
    cv_tensor n16 = {0}, b16 = {0};
    m = mini_cnn(&d);
    assert_int_equal(compile_run(m, dir, "fp16n", &qh, &in8, &n16, &info, &d), 0);
    cv_module_free(m);
    cv_quant_opts qb = {.precision = CV_PRECISION_BF16};
    m = mini_cnn(&d);
    assert_int_equal(compile_run(m, dir, "bf16n", &qb, &in8, &b16, &info, &d), 0);
    assert_non_null(strstr(info.quant_report, "stored as bf16"));
    cv_module_free(m);

    int agree = 0;
    float lo = INFINITY, hi = -INFINITY, err = 0, err_n16 = 0, err_b16 = 0;
    for (int64_t i = 0; i < 200; i++) {
        const float *r = (const float *)ref.data + i * 10;
        agree += argmax_row(r, 10) == argmax_row((const float *)q8.data + i * 10, 10);
        for (int k = 0; k < 10; k++) {
            lo = fminf(lo, r[k]);
            hi = fmaxf(hi, r[k]);
            if (i >= 8)
                continue;
            err = fmaxf(err, fabsf(r[k] - ((const float *)h16.data)[i * 10 + k]));
            err_n16 = fmaxf(err_n16, fabsf(r[k] - ((const float *)n16.data)[i * 10 + k]));
            err_b16 = fmaxf(err_b16, fabsf(r[k] - ((const float *)b16.data)[i * 10 + k]));
        }
    }
    double s = sqnr(&ref, &q8);
    printf("int8: top-1 agreement %d/200, SQNR %.1f dB; fp16: max abs err %.2e of range %.3f\n",
           agree, s, (double)err, (double)(hi - lo));
    assert_true(agree >= 196);
    assert_true(s >= 20);
    assert_true(err <= 1e-2 * (hi - lo));
    printf("native: fp16 max abs err %.2e, bf16 %.2e\n", (double)err_n16, (double)err_b16);
    assert_true(err_n16 <= 1e-2 * (hi - lo));
    assert_true(err_b16 <= 1e-2 * (hi - lo));

    /* The gate: no int8 model reaches 150 dB (10 files are enough here). */
    qi.min_sqnr = 150;
    char *few = cv_tmpdir_path(dir, "cal0*.npy");
    qi.calibration = few;
    m = mini_cnn(&d);
    cv_diag g;
    cv_diag_init(&g);
    assert_int_not_equal(compile_run(m, dir, "gate", &qi, NULL, NULL, &info, &g), 0);
    assert_int_equal(g.v[0].code, 5110);
    cv_diag_free(&g);
    cv_module_free(m);
    free(few);

    cv_tensor_free(&in);
    cv_tensor_free(&ref);
    cv_tensor_free(&q8);
    cv_tensor_free(&h16);
    cv_tensor_free(&n16);
    cv_tensor_free(&b16);
    free(glob);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
}

/* Native int8 against the interpreter on the rewritten module: the same
 * integer sums, so within float rounding. */
static void assert_close(const cv_tensor *got, const cv_tensor *want, const char *what)
{
    assert_int_equal(got->numel, want->numel);
    for (int64_t i = 0; i < got->numel; i++) {
        float a = ((float *)got->data)[i], b = ((float *)want->data)[i];
        if (fabsf(a - b) > 1e-4f + 1e-4f * fabsf(b))
            fail_msg("%s element %lld: native %g, interpreter %g", what, (long long)i,
                     (double)a, (double)b);
    }
}

/* One int8-against-the-interpreter case: a temporary directory, 33
 * calibration images of c x h x w, a random batch of n images; check()
 * compiles build()'s module int8 natively, runs it and the interpreter on
 * the rewritten module, and compares them. */
typedef struct int8_case {
    cv_diag d;
    char *dir, *glob;
    cv_tensor in, got, want;
    cv_compile_info info;
    cv_quant_opts qi;
} int8_case;

static void int8_case_begin(int8_case *t, const char *tag, int64_t n, int64_t c, int64_t h,
                            int64_t w, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    cv_diag_init(&t->d);
    t->dir = cv_tmpdir_make(tag);
    t->glob = calibration(t->dir, c, h, w);
    random_batch(&t->in, n, c, h, w, seed);
    t->qi = (cv_quant_opts){.precision = CV_PRECISION_INT8, .calibration = t->glob};
}

static void int8_case_check(int8_case *t, cv_module *(*build)(cv_diag *), const char *what)
{
    cv_module *m = build(&t->d);
    assert_int_equal(compile_run(m, t->dir, "int8", &t->qi, &t->in, &t->got, &t->info, &t->d), 0);
    assert_int_equal(cv_interp_run(m->funcs[0], &t->in, 1, &t->want, &t->d), 0);
    assert_close(&t->got, &t->want, what);
    cv_module_free(m);
}

static void int8_case_end(int8_case *t)
{
    cv_tensor_free(&t->in);
    cv_tensor_free(&t->got);
    cv_tensor_free(&t->want);
    free(t->glob);
    cv_tmpdir_remove(t->dir);
    cv_diag_free(&t->d);
}

/* The native int8 kernel computes what the interpreter's qconv2d does. */
static void test_qconv_native_matches_interp(void **state)
{
    (void)state;
    int8_case t;
    int8_case_begin(&t, "qconv", 3, 5, 9, 7, 5);
    t.qi.method = CV_CALIB_PERCENTILE;
    int8_case_check(&t, awkward, "awkward");
    assert_non_null(strstr(t.info.quant_report, "5 of"));
    /* Requantisation in the producing kernel: the u8 values between the
     * layers (and the residual) match the interpreter's. */
    assert_non_null(strstr(t.info.quant_report, "4 of 5 int8 layers write u8"));
    assert_non_null(strstr(t.info.quant_report, "(4 read u8, 1 u8 residuals)"));
    /* The entropy calibration runs too. */
    cv_module *m = awkward(&t.d);
    t.qi.method = CV_CALIB_ENTROPY;
    assert_int_equal(compile_run(m, t.dir, "entropy", &t.qi, NULL, NULL, &t.info, &t.d), 0);
    assert_non_null(strstr(t.info.quant_report, "entropy"));
    cv_module_free(m);
    int8_case_end(&t);
}

/* -p bf16 computed in bf16 (AMX or vdpbf16ps, cvrt_qconv2d's CVRT_Q_BF16)
 * on the awkward geometry: within 1e-2 of the output range of the
 * interpreter's f32 math on the same bf16 weights (the activations are
 * rounded to bf16 too); chosen for native on a CPU with AVX512_BF16 only,
 * never for the generic x86_64-avx512 target. */
static void test_bf16_compute_matches_interp(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    char *dir = cv_tmpdir_make("bf16");
    cv_tensor in, got = {0}, want = {0};
    random_batch(&in, 3, 5, 9, 7, 5);
    cv_compile_info info;
    cv_quant_opts qb = {.precision = CV_PRECISION_BF16};
    cv_module *m = awkward(&d);
    assert_int_equal(compile_run(m, dir, "bf16", &qb, &in, &got, &info, &d), 0);
    bool native = strstr(info.quant_report, "bf16 compute, f32 accumulation: conv2d x4") != NULL;
    printf("bf16 compute on this CPU: %s\n", native ? "yes" : "no");
    if (cv_nb_cpu_has(" avx512_bf16"))
        assert_true(native);
    assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, &want, &d), 0);
    assert_int_equal(got.numel, want.numel);
    float lo = INFINITY, hi = -INFINITY, err = 0;
    for (int64_t i = 0; i < got.numel; i++) {
        float a = ((float *)got.data)[i], b = ((float *)want.data)[i];
        lo = fminf(lo, b);
        hi = fmaxf(hi, b);
        err = fmaxf(err, fabsf(a - b));
    }
    printf("bf16 native vs interpreter: max abs err %.2e of range %.3f\n", (double)err,
           (double)(hi - lo));
    assert_true(err <= 1e-2f * (hi - lo));
    cv_module_free(m);
    m = awkward(&d);
    cv_compile_opts o = {.target = "x86_64-avx512", .opt_level = 1, .emit = CV_EMIT_CUIR,
                         .out_dir = dir, .quant = &qb};
    assert_int_equal(cv_compile_native(m, &o, &info, &d), 0);
    assert_null(strstr(info.quant_report, "bf16 compute"));
    assert_non_null(strstr(info.quant_report, "f32 compute on 16-bit weights"));
    cv_module_free(m);
    cv_tensor_free(&in);
    cv_tensor_free(&got);
    cv_tensor_free(&want);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
}

/* x -> conv relu -> global pool -> flatten -> gemm (trans_b, bias) relu
 * -> gemm (plain b); y [5,12] -> matmul relu -> matmul; z [N,4,12] ->
 * matmul. */
static cv_module *fc_net(cv_diag *d)
{
    static const int64_t p1[4] = {1, 1, 1, 1};
    cv_nb b = cv_nb_begin("quant.cuir", d, 3, 8, 8);
    cv_type ty = {.dtype = CV_F32, .shape = {.rank = 2, .d = {{5, NULL}, {12, NULL}}}};
    cv_type tz = {.dtype = CV_F32, .shape = {.rank = 3, .d = {{0, cv_module_intern(b.m, "N", 1)},
                                                                {4, NULL}, {12, NULL}}}};
    cv_func_add_input(b.f, "y", &ty);
    cv_func_add_input(b.f, "z", &tz);
    cv_value *x = b.f->inputs[0], *y = b.f->inputs[1], *z = b.f->inputs[2];
    cv_value *a = cv_nb_unary(&b, "relu", cv_nb_conv(&b, x, 16, 3, 1, p1, 1, 1));
    cv_value *g = cv_nb_unary(&b, "flatten", cv_nb_unary(&b, "global_avg_pool", a));
    cv_value *o1[3] = {g, cv_nb_param(&b, 2, (const int64_t[]){10, 16}, 0.5),
                       cv_nb_param(&b, 1, (const int64_t[]){10}, 0.1)};
    cv_op *fc = cv_op_new(b.f, "gemm", o1, 3);
    cv_op_set_int(fc, "trans_b", 1);
    cv_value *h = cv_nb_unary(&b, "relu", cv_nb_finish(&b, fc));
    cv_value *o2[2] = {h, cv_nb_param(&b, 2, (const int64_t[]){10, 6}, 0.5)};
    cv_value *out1 = cv_nb_finish(&b, cv_op_new(b.f, "gemm", o2, 2));
    cv_value *w1 = cv_nb_param(&b, 2, (const int64_t[]){12, 7}, 0.5);
    cv_value *m1 = cv_nb_unary(&b, "relu", cv_nb_binary(&b, "matmul", y, w1));
    cv_value *w2 = cv_nb_param(&b, 2, (const int64_t[]){7, 4}, 0.5);
    cv_value *out2 = cv_nb_binary(&b, "matmul", m1, w2);
    cv_value *w3 = cv_nb_param(&b, 2, (const int64_t[]){12, 3}, 0.5);
    cv_value *out3 = cv_nb_binary(&b, "matmul", z, w3);
    cv_value *outs[3] = {out1, out2, out3};
    for (int i = 0; i < 3; i++)
        cv_func_add_output_type(b.f, &outs[i]->type);
    cv_func_set_returns(b.f, outs, 3);
    assert_int_equal(cv_verify(b.m, 0, b.d), 0);
    return b.m;
}

/* The channel-blocked int8 depthwise kernel computes the interpreter's
 * qconv2d: exact sums, the same requantisation. */
static void test_qdwconv_blocked_matches_interp(void **state)
{
    (void)state;
    int8_case t;
    int8_case_begin(&t, "qdw", 2, 3, 19, 21, 7);
    int8_case_check(&t, dw_chain, "depthwise");
    assert_non_null(strstr(t.info.quant_report, "3 of 4 int8 layers write u8"));
    int8_case_end(&t);
}

/* The int8 kernels on channels-last u8 values at awkward sizes compute
 * the interpreter's qconv2d (the naive reference). */
static void test_qconv_nhwc_edges_match_interp(void **state)
{
    (void)state;
    int8_case t;
    int8_case_begin(&t, "qnhwc", 2, 3, 9, 14, 17);
    int8_case_check(&t, nhwc_edges, "channels last");
    assert_non_null(strstr(t.info.quant_report, "3 residual adds"));
    assert_non_null(strstr(t.info.quant_report, "7 of 9 int8 layers write u8"));
    assert_non_null(strstr(t.info.quant_report, "(7 read u8, 2 u8 residuals)"));
    /* The portable dot products and 8-lane epilogues (AVX2 has no VNNI
     * or AMX path), on the same module. */
    cv_module *m;
    if (cv_nb_cpu_has(" avx2")) {
        cv_tensor_free(&t.got);
        m = nhwc_edges(&t.d);
        assert_int_equal(compile_run_for(m, "x86_64-avx2", t.dir, "avx2", &t.qi, &t.in, &t.got,
                                         &t.info, &t.d), 0);
        assert_close(&t.got, &t.want, "channels last, x86_64-avx2");
        cv_module_free(m);
    }
    /* The C99 backend's copies of the kernels (c99_runtime.c), built with gcc. */
    cv_tensor_free(&t.got);
    m = nhwc_edges(&t.d);
    char *cdir = cv_tmpdir_path(t.dir, "c99");
    cv_compile_opts o = {.target = "native", .opt_level = 1, .emit = CV_EMIT_C, .out_dir = cdir,
                         .quant = &t.qi};
    assert_int_equal(cv_compile_native(m, &o, &t.info, &t.d), 0);
    bool missing = false;
    static const char *const o1[] = {"-O1"};
    assert_int_equal(cv_c99_build_shared("gcc", cdir, t.info.name, o1, 1, &missing, &t.d), 0);
    if (!missing) {
        cv_native *n = NULL;
        assert_int_equal(cv_native_open(cdir, 1, &n, &t.d), 0);
        assert_int_equal(cv_native_run(n, &t.in, 1, &t.got, &t.d), 0);
        cv_native_close(n);
        assert_close(&t.got, &t.want, "channels last, C99");
    }
    cv_module_free(m);
    free(cdir);
    int8_case_end(&t);
}

static int compile_code(cv_module *m, const char *dir, const char *spec)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_compile_info info;
    cv_quant_opts q = {.precision = CV_PRECISION_INT8, .calibration = spec};
    int rc = compile_run(m, dir, "bad", &q, NULL, NULL, &info, &d);
    int code = rc && d.n_errors ? d.v[0].code : 0;
    cv_diag_free(&d);
    return code;
}

/* int8 gemm (a fully connected layer with bias over a symbolic batch, and
 * a plain one) and matmul (x [5, 12] and [N, 4, 12]), as 1x1 qconv2d
 * (quantize_lin.c; their relus fused into the kernel), in a model with three inputs calibrated with one
 * INPUT=GLOB spec each; native = the interpreter, SQNR against fp32 >= 20
 * dB; and the spec errors. */
static void test_int8_gemm_matmul_inputs(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    char *dir = cv_tmpdir_make("qlin");
    char *gx = calib_files(dir, "cx", 17, 4, (const int64_t[]){1, 3, 8, 8}, 300);
    char *gy = calib_files(dir, "cy", 17, 2, (const int64_t[]){5, 12}, 400);
    char *gz = calib_files(dir, "cz", 17, 3, (const int64_t[]){1, 4, 12}, 500);
    char spec[1024];
    snprintf(spec, sizeof spec, "z=%s;y=%s;x=%s", gz, gy, gx);
    cv_tensor in[3], ref[3] = {{0}}, got[3] = {{0}}, want[3] = {{0}};
    random_batch(&in[0], 4, 3, 8, 8, 21);
    random_rows(&in[1], 5, 2, (const int64_t[]){5, 12}, 22);
    random_rows(&in[2], 4, 3, (const int64_t[]){4, 4, 12}, 23);
    cv_module *m = fc_net(&d);
    assert_int_equal(cv_interp_run(m->funcs[0], in, 3, ref, &d), 0);
    cv_compile_info info;
    cv_quant_opts q = {.precision = CV_PRECISION_INT8, .calibration = spec};
    char *out_dir = cv_tmpdir_path(dir, "int8");
    cv_compile_opts o = {.target = "native", .opt_level = 1, .emit = CV_EMIT_SO,
                         .out_dir = out_dir, .quant = &q};
    assert_int_equal(cv_compile_native(m, &o, &info, &d), 0);
    printf("%s", info.quant_report);
    assert_non_null(strstr(info.quant_report, "6 of"));   /* conv, 2 gemm, 3 matmul */
    assert_non_null(strstr(info.quant_report, "over 16 inputs"));
    /* The gemm's and the matmul's relu run in their int8 kernels, past
     * the views back to their shapes. */
    assert_non_null(strstr(info.quant_report, "0 residual adds, 3 activations"));
    assert_null(strstr(info.quant_report, "relu x"));
    cv_native *n = NULL;
    assert_int_equal(cv_native_open(out_dir, 2, &n, &d), 0);
    assert_int_equal(cv_native_run(n, in, 3, got, &d), 0);
    cv_native_close(n);
    assert_int_equal(cv_interp_run(m->funcs[0], in, 3, want, &d), 0);
    for (int k = 0; k < 3; k++) {
        assert_close(&got[k], &want[k], k ? "matmul" : "gemm");
        double s = sqnr(&ref[k], &got[k]);
        printf("output %d: int8 SQNR %.1f dB against fp32\n", k, s);
        assert_true(s >= 20);
    }
    cv_module_free(m);
    /* The spec errors: an unknown input, a missing one, a count mismatch,
     * an unnamed glob for several inputs, an input twice. */
    char *g16 = calib_files(dir, "short", 16, 2, (const int64_t[]){5, 12}, 600);
    const struct { const char *fmt; int code; } bad[] = {
        {"w=%s;x=%s;y=%s", 5131}, {"x=%s;y=%s", 5132}, {"x=%s;y=%s;z=%s", 5133},
        {"%s", 5135}, {"x=%s;x=%s", 5134},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        snprintf(spec, sizeof spec, bad[k].fmt, gx, k == 2 ? g16 : gy, gz);
        m = fc_net(&d);
        assert_int_equal(compile_code(m, dir, spec), bad[k].code);
        cv_module_free(m);
    }
    for (int k = 0; k < 3; k++) {
        cv_tensor_free(&in[k]);
        cv_tensor_free(&ref[k]);
        cv_tensor_free(&got[k]);
        cv_tensor_free(&want[k]);
    }
    free(g16);
    free(out_dir);
    free(gx);
    free(gy);
    free(gz);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
}

/* A typed constant (scalar when rank 0) from doubles. */
static cv_value *constant(cv_nb *b, cv_dtype dt, int rank, const int64_t *dims, const double *v)
{
    cv_tensor t;
    assert_int_equal(cv_tensor_alloc(&t, dt, rank, dims), 0);
    for (int64_t i = 0; i < t.numel; i++)
        cv_tensor_set(&t, i, v ? v[i] : (double)((int64_t)(i * 37 % 255) - 127));
    cv_type ty = {.dtype = dt, .shape = {.rank = rank}};
    for (int i = 0; i < rank; i++)
        ty.shape.d[i].n = dims[i];
    char name[32];
    snprintf(name, sizeof name, "k%llu", (unsigned long long)b->seed++);
    cv_value *r = cv_func_add_dense(b->f, name, &ty, t.data, cv_tensor_nbytes(&t))->value;
    cv_tensor_free(&t);
    return r;
}

/* QDQ import: conv2d(dq(q(x)), dq(w_i8)) compiles to the int8 kernel and
 * computes what the f32 QDQ graph does (i8 activations included). */
static void test_qdq_conv_runs_int8(void **state)
{
    (void)state;
    for (int i8 = 0; i8 < 2; i8++) {
        cv_diag d;
        cv_diag_init(&d);
        cv_nb b = cv_nb_begin("quant.cuir", &d, 4, 6, 6);
        double sv = 0.02, zv = i8 ? -3 : 128, ws[8];
        for (int k = 0; k < 8; k++)
            ws[k] = 0.001 * (k + 1);
        int64_t wd[4] = {8, 4, 3, 3}, md[1] = {8};
        cv_value *s = constant(&b, CV_F32, 0, NULL, &sv);
        cv_value *z = constant(&b, i8 ? CV_I8 : CV_U8, 0, NULL, &zv);
        cv_value *qo[3] = {b.f->inputs[0], s, z};
        cv_value *q = cv_nb_finish(&b, cv_op_new(b.f, "quantize_linear", qo, 3));
        cv_value *dqo[3] = {q, s, z};
        cv_value *dx = cv_nb_finish(&b, cv_op_new(b.f, "dequantize_linear", dqo, 3));
        cv_value *wo[2] = {constant(&b, CV_I8, 4, wd, NULL), constant(&b, CV_F32, 1, md, ws)};
        cv_op *wdq = cv_op_new(b.f, "dequantize_linear", wo, 2);
        cv_op_set_int(wdq, "axis", 0);
        cv_value *co[3] = {dx, cv_nb_finish(&b, wdq), cv_nb_param(&b, 1, md, 0.1)};
        cv_op *cop = cv_op_new(b.f, "conv2d", co, 3);
        cv_op_set_ints(cop, "pad", (int64_t[]){1, 1}, 2);
        cv_module *m = cv_nb_end(&b, cv_nb_unary(&b, "relu", cv_nb_finish(&b, cop)));
        cv_tensor in, want = {0}, got = {0};
        random_batch(&in, 2, 4, 6, 6, 9);
        assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, &want, &d), 0);
        char *dir = cv_tmpdir_make("qdq");
        cv_compile_info info;
        assert_int_equal(compile_run(m, dir, "qdq", NULL, &in, &got, &info, &d), 0);
        int nq = 0;
        for (int k = 0; k < m->funcs[0]->n_ops; k++)
            nq += strcmp(m->funcs[0]->ops[k]->def->name, "qconv2d") == 0;
        assert_int_equal(nq, 1);
        /* The Q/DQ ops are gone and the relu runs in the int8 kernel. */
        assert_int_equal(m->funcs[0]->n_ops, 1);
        assert_int_equal(cv_op_int(m->funcs[0]->ops[0], "act", 0), 1);
        for (int64_t k = 0; k < got.numel; k++) {
            float x = ((float *)got.data)[k], y = ((float *)want.data)[k];
            if (fabsf(x - y) > 1e-5f + 1e-5f * fabsf(y))
                fail_msg("i8=%d element %lld: native %g, f32 QDQ %g", i8, (long long)k,
                         (double)x, (double)y);
        }
        cv_tensor_free(&in);
        cv_tensor_free(&want);
        cv_tensor_free(&got);
        cv_module_free(m);
        cv_tmpdir_remove(dir);
        cv_diag_free(&d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int8_fp16_accuracy),
        cmocka_unit_test(test_qconv_native_matches_interp),
        cmocka_unit_test(test_qdwconv_blocked_matches_interp),
        cmocka_unit_test(test_qconv_nhwc_edges_match_interp),
        cmocka_unit_test(test_bf16_compute_matches_interp),
        cmocka_unit_test(test_int8_gemm_matmul_inputs),
        cmocka_unit_test(test_qdq_conv_runs_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
