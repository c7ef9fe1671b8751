/* The CUDA backend without a GPU: PTX for the core ops (every group of
 * tests/gpu/cuda_cases.h compiled for cuda-sm90: .entry kernels, .target
 * sm_90, nothing left undefined), sm_80 PTX, reproducible artifacts, the
 * host library's create failing with a coded error where there is no
 * driver or no usable device, whole runs through a stand-in driver
 * (tests/gpu/fake_libcuda.c: device memory on the host, every launch's
 * pointers checked, kernels not run), L2 keys that tell SMs apart, and the
 * device math functions against libm. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <unistd.h>

#include "cache/cache.h"
#include "compiler-core/backend/targets.h"
#include "tests/gpu/cuda_cases.h"
#include "worker/internal.h"

/* The device math and the routines' kernels, compiled for this machine
 * (freestanding C; on the host one thread does every item). */
#include "compiler-core/backend/cuda/dev/cudev_math.c"
#include "compiler-core/backend/cuda/dev/cudev_rt.c"
#include "compiler-core/backend/cuda/dev/cudev_trig.c"

static char *g_dirs[CUDA_N_GROUPS];  /* each group's cuda-sm90 artifact */
static bk_model g_models[CUDA_N_GROUPS];

static char *read_in(const char *dir, const char *name)
{
    char *path = cv_tmpdir_path(dir, name);
    size_t len;
    char *s = cv_tmpdir_read_file(path, &len);
    free(path);
    return s;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static char *compile(cv_module *m, const char *target)
{
    char msg[2048] = "";
    char *dir = bk_compile(m, target, 2, CV_EMIT_SO | CV_EMIT_H, msg, sizeof msg);
    if (!dir)
        fail_msg("%s: %s", target, msg);
    return dir;
}

static int setup(void **state)
{
    char msg[1024];
    for (int g = 0; g < CUDA_N_GROUPS; g++) {
        char name[64];
        snprintf(name, sizeof name, "cuda_%s", cuda_groups[g].name);
        if (bk_build(&g_models[g], name, cuda_groups[g].cases, cuda_groups[g].n, msg, sizeof msg)) {
            fprintf(stderr, "%s: %s\n", name, msg);
            return -1;
        }
        g_dirs[g] = bk_compile(g_models[g].m, "cuda-sm90", 2, CV_EMIT_SO, msg, sizeof msg);
        if (!g_dirs[g]) {
            fprintf(stderr, "%s: %s\n", name, msg);
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    for (int g = 0; g < CUDA_N_GROUPS; g++) {
        if (g_dirs[g])
            cv_tmpdir_remove(g_dirs[g]);
        bk_model_free(&g_models[g]);
    }
    return 0;
}

/* ---- what the compiler writes ------------------------------------------------------ */

static void test_ptx_core_ops(void **state)
{
    for (int g = 0; g < CUDA_N_GROUPS; g++) {
        char name[80];
        snprintf(name, sizeof name, "cuda_%s.ptx", cuda_groups[g].name);
        char *ptx = read_in(g_dirs[g], name), *man = read_in(g_dirs[g], "manifest.json");
        assert_non_null(ptx);
        assert_non_null(man);
        assert_non_null(strstr(ptx, ".target sm_90"));
        assert_null(strstr(ptx, ".extern"));
        /* Every group has kernels of its own on the GPU. */
        if (count(ptx, ".visible .entry k") < 1)
            fail_msg("%s: no program kernel in the PTX", name);
        assert_non_null(strstr(man, "\"nvptx64-nvidia-cuda\""));
        assert_non_null(strstr(man, "\"sm_90\""));
        snprintf(name, sizeof name, "cuda_%s.ptx", cuda_groups[g].name);
        assert_non_null(strstr(man, name));
        free(ptx);
        free(man);
    }
    /* The matrix products and convolutions launch the routines' kernels. */
    char *mm = read_in(g_dirs[2], "cuda_matmul.ptx"), *cv = read_in(g_dirs[3], "cuda_conv.ptx");
    assert_non_null(strstr(mm, ".entry cvdk_sgemm("));
    assert_non_null(strstr(cv, ".entry cvdk_conv2d"));
    /* ...and their tensor-core (TF32 wmma) variants. */
    assert_non_null(strstr(cv, "_tc("));
    assert_non_null(strstr(cv, "wmma.mma.sync.aligned.col.col.m16n16k8.f32.tf32.tf32.f32"));
    free(mm);
    free(cv);
}

static void test_sm80_and_header(void **state)
{
    char *dir = compile(g_models[3].m, "cuda-sm80");
    char *ptx = read_in(dir, "cuda_conv.ptx"), *h = read_in(dir, "cuda_conv.h");
    assert_non_null(strstr(ptx, ".target sm_80"));
    assert_non_null(strstr(h, "int cv_cuda_conv_run_stream(cv_cuda_conv_ctx *ctx"));
    assert_non_null(strstr(h, "int cv_cuda_conv_last_error(const char **message);"));
    free(ptx);
    free(h);
    cv_tmpdir_remove(dir);
}

/* Two compiles of one model (each from a fresh module: compiling runs the
 * graph passes in place) give identical files. */
static void test_reproducible(void **state)
{
    char msg[1024], *man[2];
    for (int i = 0; i < 2; i++) {
        bk_model b;
        assert_int_equal(bk_build(&b, "cuda_repro", cuda_reduce, 8, msg, sizeof msg), 0);
        char *dir = bk_compile(b.m, "cuda-sm90", 2, CV_EMIT_SO, msg, sizeof msg);
        assert_non_null(dir);
        man[i] = read_in(dir, "manifest.json");     /* it lists every file's SHA-256 */
        cv_tmpdir_remove(dir);
        bk_model_free(&b);
    }
    assert_string_equal(man[0], man[1]);
    free(man[0]);
    free(man[1]);
}

static void test_unknown_target_lists_cuda(void **state)
{
    assert_true(cv_target_is_cuda("cuda-sm90"));
    assert_true(cv_target_is_cuda("cuda-sm80"));
    assert_false(cv_target_is_cuda("x86_64"));
    assert_false(cv_target_is_cuda("cuda-sm70"));
}

/* ---- the host library without a usable GPU ---------------------------------------- */

/* Opens the artifact with the driver at `driver`; returns the first error
 * code (0 when it opened). */
static int open_code(const char *dir, const char *driver, cv_native **out, char *msg, size_t size)
{
    setenv("CUVIL_CUDA_DRIVER", driver, 1);
    cv_diag d;
    cv_diag_init(&d);
    int code = cv_native_open(dir, 1, out, &d) ? (d.n ? d.v[0].code : -1) : 0;
    snprintf(msg, size, "%s", d.n ? d.v[0].msg : "");
    cv_diag_free(&d);
    unsetenv("CUVIL_CUDA_DRIVER");
    return code;
}

static const char *fake_driver(void)
{
    static char path[4096];
    const char *b = getenv("CUVIL_BUILD");
    snprintf(path, sizeof path, "%s/tools/libcuda-fake.so", b ? b : "build");
    return access(path, R_OK) == 0 ? path : NULL;
}

/* The stand-in driver loaded on its own (dlclose it), and one of its
 * inspection functions in *fn. */
static void *fake_open(const char *fake, const char *sym, void **fn)
{
    void *dl = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    *fn = dlsym(dl, sym);
    assert_non_null(*fn);
    return dl;
}

static void test_no_driver(void **state)
{
    cv_native *n = NULL;
    char msg[1024];
    assert_int_equal(open_code(g_dirs[0], "/nonexistent/libcuda.so.1", &n, msg, sizeof msg), 5060);
    assert_null(n);
    assert_non_null(strstr(msg, "no NVIDIA driver"));
}

/* A fresh artifact per driver mode: the driver is loaded once per library. */
static void check_mode(const char *mode, int want, const char *text)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    char *dir = compile(g_models[1].m, "cuda-sm90");
    setenv("CVFAKE_MODE", mode, 1);
    cv_native *n = NULL;
    char msg[1024];
    int code = open_code(dir, fake, &n, msg, sizeof msg);
    unsetenv("CVFAKE_MODE");
    if (code != want || !strstr(msg, text))
        fail_msg("mode %s: CV%04d %s", mode, code, msg);
    cv_native_close(n);
    cv_tmpdir_remove(dir);
}

static void test_no_device(void **state) { check_mode("nodevice", 5061, "CUDA_ERROR_NO_DEVICE"); }
static void test_old_device(void **state) { check_mode("sm80", 5062, "compute capability 8.0"); }

/* Every group runs through the stand-in driver: the PTX loads, every kernel
 * is found, every launch gets in-bounds device pointers, the outputs come
 * back; loops join the items of a GPU kernel (cuda_collapse.c) and a
 * batch's convolutions are one launch (host/cuhost_batch.c).  (Values are
 * not checked: nothing runs the kernels.) */
static void test_fake_runs(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    const char *(*log)(void) = NULL;
    void *dl = fake_open(fake, "cvfake_log", (void **)&log);
    for (int g = 0; g < CUDA_N_GROUPS; g++) {
        cv_native *n = NULL;
        char msg[1024];
        int code = open_code(g_dirs[g], fake, &n, msg, sizeof msg);
        if (code)
            fail_msg("%s: CV%04d %s", cuda_groups[g].name, code, msg);
        size_t at = strlen(log());
        cv_tensor got[BK_MAX_CASES] = {{0}};
        cv_diag d;
        cv_diag_init(&d);
        int rc = cv_native_run(n, g_models[g].ins, g_models[g].n_ins, got, &d);
        if (rc)
            fail_msg("%s: %s\nlog:\n%s", cuda_groups[g].name, d.n ? d.v[0].msg : "?", log() + at);
        const char *run = log() + at;
        assert_true(count(run, "launch ") >= 1);
        assert_int_equal(count(run, "bad=0"), count(run, "launch "));
        assert_int_equal(count(run, "dtoh "), cuda_groups[g].n);
        for (int i = 0; i < cuda_groups[g].n; i++)
            cv_tensor_free(&got[i]);
        cv_diag_free(&d);
        cv_native_close(n);
    }
    uint64_t (*param)(const char *, int, int) = NULL;
    *(void **)&param = dlsym(dl, "cvfake_param");
    assert_non_null(param);
    /* The layout group's first pooling (f32[2,3,8,8], 2x2 stride 2) runs one
     * item per output element (its oh/ow loops joined the 6 channel items). */
    assert_int_equal(param("k0_max_pool2d", 0, -1), 2 * 3 * 4 * 4);
    /* The conv group's batch of 2 (f32[2,3,9,8], 5 filters, 5x4 outputs) is
     * one launch: batch 2, images 3*9*8 and 5*5*4 floats apart. */
    bool batched = false;
    for (int nth = 0; nth < 32 && !batched; nth++)
        batched = param("cvdk_conv2d_t", nth, -4) == 2 && param("cvdk_conv2d_t", nth, -3) == 216 &&
                  param("cvdk_conv2d_t", nth, -2) == 100;
    assert_true(batched);
    dlclose(dl);
}

/* Every constant storage is bound to its own place in the device weights:
 * mlp's two products read w1/b1 and w2/b2 (device memory is host memory in
 * the stand-in driver, so the launch parameters can be followed). */
static void test_fake_constants(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    uint64_t (*param)(const char *, int, int) = NULL;
    void *dl = fake_open(fake, "cvfake_param", (void **)&param);
    char path[1024], msg[1024];
    snprintf(path, sizeof path, "%s/examples/cuir/mlp.cuir", cv_tmpdir_src_root());
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(path, 0, &d);
    assert_non_null(m);
    char *dir = compile(m, "cuda-sm90");
    cv_native *n = NULL;
    int code = open_code(dir, fake, &n, msg, sizeof msg);
    if (code)
        fail_msg("CV%04d %s", code, msg);
    cv_tensor x = {0}, got = {0};
    int64_t dims[2] = {2, 8};
    cv_tensor_alloc(&x, CV_F32, 2, dims);
    assert_int_equal(cv_native_run(n, &x, 1, &got, &d), 0);
    /* cvdk_sgemm_t's parameters 7 and 13: B (the weights) and the bias. */
    static const float want[2][2] = {{-0.286978275f, -0.0999211818f},
                                     {-0.0772114843f, 0.203884989f}};
    for (int k = 0; k < 2; k++) {
        const float *w = (const float *)(uintptr_t)param("cvdk_sgemm_t", 1 - k, 7);
        const float *bias = (const float *)(uintptr_t)param("cvdk_sgemm_t", 1 - k, 13);
        assert_non_null(w);
        assert_non_null(bias);
        assert_float_equal(w[0], want[k][0], 0);
        assert_float_equal(bias[0], want[k][1], 0);
    }
    cv_tensor_free(&x);
    cv_tensor_free(&got);
    cv_native_close(n);
    cv_tmpdir_remove(dir);
    cv_module_free(m);
    cv_diag_free(&d);
    dlclose(dl);
}

/* The cuda_half group compiled in precision prec (fp32: P8 weights) and
 * run on the fake driver with CUVIL_CUDA_NHWC=nhwc: its launch log, every
 * launch with in-bounds pointers (malloc'd). */
static char *half_run(const bk_model *b, const char *fake, const char *(*log)(void),
                      cv_qprec prec, const char *nhwc)
{
    char msg[1024];
    char *dir = cv_tmpdir_make("cuda-half");
    cv_quant_opts q = {.precision = prec};
    cv_compile_opts o = {.target = "cuda-sm90", .opt_level = 2, .emit = CV_EMIT_SO,
                         .out_dir = dir, .quant = prec == CV_QP_FP32 ? NULL : &q};
    cv_compile_info info;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_compile_native(b->m, &o, &info, &d))
        fail_msg("compile: %s", d.n ? d.v[0].msg : "?");
    cv_native *n = NULL;
    setenv("CUVIL_CUDA_NHWC", nhwc, 1);
    int code = open_code(dir, fake, &n, msg, sizeof msg);
    unsetenv("CUVIL_CUDA_NHWC");
    if (code)
        fail_msg("CV%04d %s", code, msg);
    size_t at = strlen(log());
    cv_tensor got[BK_MAX_CASES] = {{0}};
    if (cv_native_run(n, b->ins, b->n_ins, got, &d))
        fail_msg("run: %s\nlog:\n%s", d.n ? d.v[0].msg : "?", log() + at);
    char *run = strdup(log() + at);
    assert_non_null(run);
    assert_int_equal(count(run, "bad=0"), count(run, "launch "));
    if (getenv("CVTEST_DEBUG"))
        fprintf(stderr, "%s", run);
    for (int i = 0; i < BK_MAX_CASES; i++)
        cv_tensor_free(&got[i]);
    cv_native_close(n);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    return run;
}

/* -p fp16 and bf16 keep the weights in 16 bits on the device: the dense
 * convolutions launch the 16-bit kernels (tensor cores where deep and wide
 * enough, a batch in one launch), the fully connected layer cvdk_sgemm_h_t.
 * Every convolution on the tensor cores (a batch of 3 images in one launch,
 * the grouped one in 2; 128-row tiles for 128 and 256 channels) but the one
 * with 8 output channels (the FMA tiles); these batches are too small for
 * the channels-last kernels unless CUVIL_CUDA_NHWC=1 asks for them, which
 * then pack each input first (16-bit or fp32, channels last). */
static void test_fake_half(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    const char *(*log)(void) = NULL;
    void *dl = fake_open(fake, "cvfake_log", (void **)&log);
    static const cuda_group g = CUDA_GROUP("half", cuda_half);
    char msg[1024];
    bk_model b;
    if (bk_build(&b, "cuda_half", g.cases, g.n, msg, sizeof msg) || cuda_bake_params(&b))
        fail_msg("%s", msg);
    for (int prec = CV_QP_FP16; prec <= CV_QP_BF16; prec++) {
        char *run = half_run(&b, fake, log, (cv_qprec)prec, "");
        assert_int_equal(count(run, "launch cvdk_conv2d_p8h_tc "), 8);
        assert_int_equal(count(run, "launch cvdk_conv2d_p8h_tc2 "), 2);
        assert_int_equal(count(run, "launch cvdk_conv2d_p8h_t "), 1);
        assert_int_equal(count(run, "launch cvdk_sgemm_h_t "), 1);
        assert_int_equal(count(run, "launch cvdk_conv2d_p8_"), 0);
        assert_int_equal(count(run, "launch cvdk_nhwc_pack "), 0);
        free(run);
    }
    static const char *const nc[2][3] = {
        {"launch cvdk_conv2d_p8_nc ", "launch cvdk_conv2d_p8_nc2 ", "launch cvdk_conv2d_p8_t "},
        {"launch cvdk_conv2d_p8h_nc ", "launch cvdk_conv2d_p8h_nc2 ", "launch cvdk_conv2d_p8h_t "}};
    for (int half = 0; half < 2; half++) {
        char *run = half_run(&b, fake, log, half ? CV_QP_FP16 : CV_QP_FP32, "1");
        assert_int_equal(count(run, nc[half][0]), 8);
        assert_int_equal(count(run, nc[half][1]), 2);
        assert_int_equal(count(run, nc[half][2]), 1);
        assert_int_equal(count(run, "launch cvdk_nhwc_pack "), 10);
        assert_int_equal(count(run, "_tc "), 0);
        free(run);
    }
    bk_model_free(&b);
    dlclose(dl);
}

/* ---- cache keys ---------------------------------------------------------------------- */

static void test_l2_key_sm(void **state)
{
    char *tmp = cv_tmpdir_make("cuda-key");
    cv_cache_options co = {.dir = tmp, .remote = "", .ignore_env = true};
    cv_cache *c = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_open(&co, &c, &d), 0);
    cv_build_opts o = {.target = "cuda-sm90", .precision = CV_PRECISION_FP32};
    cv_cache_key k[3];
    const char *targets[3] = {"cuda-sm80", "cuda-sm90", "cuda-sm90"};
    for (int i = 0; i < 3; i++) {
        cv_wk_target t;
        assert_int_equal(cv_wk_target_describe(targets[i], &t, &d), 0);
        assert_string_equal(t.triple, "nvptx64-nvidia-cuda");
        cv_wk_l2_in in = {.target = targets[i], .desc = &t, .o = &o, .emit = CV_EMIT_DEFAULT};
        assert_int_equal(cv_wk_l2_key(c, &in, &k[i], &d), 0);
    }
    assert_memory_not_equal(&k[0].digest, &k[1].digest, sizeof k[0].digest);
    assert_memory_equal(&k[1].digest, &k[2].digest, sizeof k[1].digest);
    assert_non_null(strstr(k[0].manifest, "sm_80"));
    for (int i = 0; i < 3; i++)
        cv_cache_key_free(&k[i]);
    cv_cache_close(c);
    cv_diag_free(&d);
    cv_tmpdir_remove(tmp);
}

/* ---- device math (dev/cudev_math.c) against libm ------------------------------------- */

static double ulp_f(float want) { return (double)nextafterf(fabsf(want), INFINITY) - fabsf(want); }

static void check_f(const char *name, float got, float want, float x)
{
    if (isnan(want) ? !isnan(got) : got != want && fabs((double)got - want) > 2 * ulp_f(want))
        fail_msg("%s(%.9g) = %.9g, libm %.9g", name, x, got, want);
}

static void check_d(const char *name, double got, double want, double x, double rtol)
{
    if (isnan(want) ? !isnan(got) : got != want && fabs(got - want) > rtol * fabs(want) + 1e-300)
        fail_msg("%s(%.17g) = %.17g, libm %.17g", name, x, got, want);
}

static void test_device_math(void **state)
{
    static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
                                     1e-30f, -1e-30f, 88.7f, -103.9f, 1e-45f, 3.4e38f};
    for (int i = -20000; i <= 20000 + (int)(sizeof specials / sizeof specials[0]); i++) {
        float x = i <= 20000 ? (float)i * 0.0047f : specials[i - 20001];
        check_f("expf", cvd_expf(x), expf(x), x);
        check_f("logf", cvd_logf(fabsf(x) * 13.0f), logf(fabsf(x) * 13.0f), fabsf(x) * 13.0f);
        check_f("tanhf", cvd_tanhf(x), tanhf(x), x);
        check_f("erff", cvd_erff(x), erff(x), x);
        check_f("powf", cvd_powf(fabsf(x), 1.7f), powf(fabsf(x), 1.7f), x);
        check_f("powf", cvd_powf(x, 3.0f), powf(x, 3.0f), x);
        double y = (double)x * 7.3;
        check_d("exp", cvd_exp(y), exp(y), y, 4e-16);
        check_d("log", cvd_log(fabs(y)), log(fabs(y)), y, 4e-16);
        check_d("tanh", cvd_tanh(y), tanh(y), y, 4e-16);
        check_d("erf", cvd_erf(x), erf(x), x, 4e-15);
        check_d("pow", cvd_pow(fabs(y), 0.37), pow(fabs(y), 0.37), y, 1e-13);
    }
    static const float pw[][2] = {{-2, 3}, {-2, 0.5f}, {0, -1}, {-0.0f, -3}, {-0.0f, 2},
                                  {NAN, 0}, {1, NAN}, {-1, INFINITY}, {0.5f, INFINITY},
                                  {2, -INFINITY}, {-INFINITY, 3}, {-INFINITY, 2}};
    for (size_t i = 0; i < sizeof pw / sizeof pw[0]; i++) {
        float a = pw[i][0], b = pw[i][1], got = cvd_powf(a, b), want = powf(a, b);
        if (isnan(want) ? !isnan(got) : (got != want || signbit(got) != signbit(want)))
            fail_msg("powf(%g, %g) = %g, libm %g", a, b, got, want);
    }
}

/* The trigonometric functions (dev/cudev_trig.c): floats within 2 ulps of
 * libm, doubles within 1e-14 relative (near a zero of sin, cos or tan,
 * 1e-14 of the argument's size absolute). */
static void test_device_trig(void **state)
{
    typedef struct fn {
        const char *name;
        float (*df)(float);
        float (*lf)(float);
        double (*dd)(double);
        double (*ld)(double);
        float lo, hi;
    } fn;
    static const fn fns[] = {
        {"sin", cvd_sinf, sinf, cvd_sin, sin, -1e4f, 1e4f},
        {"cos", cvd_cosf, cosf, cvd_cos, cos, -1e4f, 1e4f},
        {"tan", cvd_tanf, tanf, cvd_tan, tan, -40, 40},
        {"asin", cvd_asinf, asinf, cvd_asin, asin, -1.2f, 1.2f},
        {"acos", cvd_acosf, acosf, cvd_acos, acos, -1.2f, 1.2f},
        {"atan", cvd_atanf, atanf, cvd_atan, atan, -300, 300},
        {"sinh", cvd_sinhf, sinhf, cvd_sinh, sinh, -95, 95},
        {"cosh", cvd_coshf, coshf, cvd_cosh, cosh, -95, 95},
        {"asinh", cvd_asinhf, asinhf, cvd_asinh, asinh, -1e5f, 1e5f},
        {"acosh", cvd_acoshf, acoshf, cvd_acosh, acosh, 0.5f, 1e5f},
        {"atanh", cvd_atanhf, atanhf, cvd_atanh, atanh, -1.1f, 1.1f},
    };
    static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
                                     1e-30f, -1e-30f, 1e-45f, 3.4e38f, 3.14159274f, 1.57079637f};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        const fn *t = &fns[f];
        for (int i = 0; i <= 20000 + (int)(sizeof specials / sizeof specials[0]); i++) {
            bool special = i > 20000;
            float x = special ? specials[i - 20001] : t->lo + (t->hi - t->lo) * (float)i / 20000.0f;
            bool trig = f < 3;
            /* Past 8e8 the reduction loses digits (dev/cudev_trig.c). */
            if (trig && fabsf(x) > 8e8f && isfinite(x))
                continue;
            check_f(t->name, t->df(x), t->lf(x), x);
            double y = special ? x : (double)x + 1e-9 * i;
            double got = t->dd(y), want = t->ld(y);
            double scale = trig ? fabs(y) + 1 : 0;
            if (isnan(want) ? !isnan(got) : got != want && fabs(got - want) > 1e-14 * (fabs(want) + scale) + 1e-300)
                fail_msg("%s(%.17g) = %.17g, libm %.17g", t->name, y, got, want);
        }
    }
}

/* ---- the routines' device kernels (dev/cudev_rt.c) against plain loops -------------- */

static uint64_t g_rng = 88172645463325252ull;

static float rnd(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *rnd_buf(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

static void expect_close(const char *what, const float *got, const double *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-5 + 1e-5 * fabs(want[i]))
            fail_msg("%s: element %lld: got %.9g, want %.9g", what, (long long)i, got[i], want[i]);
}

static double ref_epilogue(double v, const float *res, int64_t at, int64_t act, float lo, float hi)
{
    v += res ? res[at] : 0.0;
    return act == 1 ? (v < 0 ? 0 : v) : act == 2 ? (v < lo ? lo : v > hi ? hi : v) : v;
}

/* cvdk_sgemm (and cvdk_sgemm_h, B in f16) with transposed strides, a
 * broadcast bias, accumulation, a residual and each activation. */
static void test_dev_sgemm(void **state)
{
    enum { M = 19, N = 23, K = 37 };
    float *a = rnd_buf(M * K), *b = rnd_buf(K * N), *bias = rnd_buf(N), *res = rnd_buf(M * N);
    float *c = rnd_buf(M * N), *c0 = malloc(sizeof(float) * M * N);
    double *want = malloc(sizeof(double) * M * N);
    uint16_t *bh = malloc(sizeof(uint16_t) * K * N);
    assert_non_null(c0);
    assert_non_null(want);
    assert_non_null(bh);
    for (int64_t i = 0; i < K * N; i++) {
        bh[i] = cv_f32_to_f16(b[i]);
        b[i] = cv_f16_to_f32(bh[i]);
    }
    memcpy(c0, c, sizeof(float) * M * N);
    for (int act = 0; act < 3; act++) {
        memcpy(c, c0, sizeof(float) * M * N);
        /* A as given row-major (ars K, acs 1); B read transposed (brs 1, bcs K). */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += (double)a[i * K + k] * b[j * K + k];
                double v = 0.5 * s + 2.0 * bias[j] + c0[i * N + j];
                want[i * N + j] = ref_epilogue(v, res, i * N + j, act, -0.5f, 0.75f);
            }
        cvdk_sgemm(M, N, K, 0.5f, a, K, 1, b, 1, K, c, N, 1, bias, 0, 1, 2.0f, res, N, act, -0.5f,
                   0.75f);
        expect_close("cvdk_sgemm", c, want, M * N);
        /* B in f16 (-p fp16 weights; b holds f16 values exactly). */
        memcpy(c, c0, sizeof(float) * M * N);
        cvdk_sgemm_h(M, N, K, 0.5f, a, K, 1, bh, 1, K, c, N, 1, bias, 0, 1, 2.0f, res, N, act,
                     -0.5f, 0.75f);
        expect_close("cvdk_sgemm_h", c, want, M * N);
    }
    free(a), free(b), free(bh), free(bias), free(res), free(c), free(c0), free(want);
}

typedef struct cgeo {
    int64_t C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
} cgeo;

/* y[oc, oh, ow] of a dense (groups 1) or depthwise (dw) convolution. */
static void ref_conv(const cgeo *g, bool dw, const float *x, const float *w, const float *bias,
                     const float *res, int64_t act, double *y)
{
    for (int64_t oc = 0; oc < g->OC; oc++)
        for (int64_t oh = 0; oh < g->OH; oh++)
            for (int64_t ow = 0; ow < g->OW; ow++) {
                double s = bias ? bias[oc] : 0;
                for (int64_t c = dw ? oc : 0; c < (dw ? oc + 1 : g->C); c++)
                    for (int64_t kh = 0; kh < g->KH; kh++)
                        for (int64_t kw = 0; kw < g->KW; kw++) {
                            int64_t ih = oh * g->sh - g->pt + kh * g->dh, iw = ow * g->sw - g->pl + kw * g->dw;
                            if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
                                continue;
                            int64_t wc = dw ? 0 : c;
                            s += (double)w[((oc * (dw ? 1 : g->C) + wc) * g->KH + kh) * g->KW + kw] *
                                 x[(c * g->H + ih) * g->W + iw];
                        }
                int64_t at = (oc * g->OH + oh) * g->OW + ow;
                y[at] = ref_epilogue(s, res, at, act, 0, 0);
            }
}

/* cvdk_conv2d, cvdk_conv2d_p8 (weights packed as cvrt.h's P8),
 * cvdk_conv2d_p8h (P8 in f16 or bf16) and cvdk_dwconv2d: strides,
 * padding, dilation, bias, residual, relu. */
static void test_dev_conv(void **state)
{
    static const cgeo geos[] = {
        {3, 9, 8, 5, 3, 2, 2, 2, 1, 0, 1, 1, 5, 4},
        {4, 7, 7, 13, 3, 3, 1, 1, 2, 1, 2, 1, 7, 7},
        {16, 5, 5, 9, 1, 1, 1, 1, 0, 0, 1, 1, 5, 5},
    };
    for (size_t gi = 0; gi < sizeof geos / sizeof geos[0]; gi++) {
        const cgeo *g = &geos[gi];
        int64_t K = g->C * g->KH * g->KW, ny = g->OC * g->OH * g->OW, mp = (g->OC + 7) / 8 * 8;
        int64_t most = (g->OC > g->C ? g->OC : g->C) * g->OH * g->OW;   /* dense or depthwise */
        float *x = rnd_buf(g->C * g->H * g->W), *w = rnd_buf(g->OC * K), *bias = rnd_buf(g->OC);
        float *res = rnd_buf(ny), *y = rnd_buf(most), *wp = calloc((size_t)(mp * K), sizeof *wp);
        double *want = malloc(sizeof(double) * (size_t)most);
        assert_non_null(wp);
        assert_non_null(want);
        /* Weights that f16 holds exactly, so the 16-bit P8 form (-p fp16)
         * computes the same; bf16 of the same bits widened is checked too. */
        uint16_t *wh = calloc((size_t)(mp * K), sizeof *wh);
        assert_non_null(wh);
        for (int64_t i = 0; i < g->OC * K; i++)
            w[i] = cv_f16_to_f32(cv_f32_to_f16(w[i]));
        for (int64_t i = 0; i < g->OC; i++)
            for (int64_t k = 0; k < K; k++) {
                wp[((i / 8) * K + k) * 8 + i % 8] = w[i * K + k];
                wh[((i / 8) * K + k) * 8 + i % 8] = cv_f32_to_f16(w[i * K + k]);
            }
        ref_conv(g, false, x, w, bias, res, 1, want);
        memset(y, 0, sizeof(float) * (size_t)ny);
        cvdk_conv2d_p8h(x, wh, 1, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw,
                        g->pt, g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0, NULL);
        expect_close("cvdk_conv2d_p8h", y, want, ny);
        /* The same weights as bf16 (truncated) against their own reference. */
        float *wb = malloc(sizeof(float) * (size_t)(g->OC * K));
        double *wantb = malloc(sizeof(double) * (size_t)ny);
        assert_non_null(wb);
        assert_non_null(wantb);
        for (int64_t i = 0; i < g->OC; i++)
            for (int64_t k = 0; k < K; k++) {
                uint16_t b = cv_f32_to_bf16(w[i * K + k]);
                wb[i * K + k] = cv_bf16_to_f32(b);
                wh[((i / 8) * K + k) * 8 + i % 8] = b;
            }
        ref_conv(g, false, x, wb, bias, res, 1, wantb);
        cvdk_conv2d_p8h(x, wh, 2, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw,
                        g->pt, g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0, NULL);
        expect_close("cvdk_conv2d_p8h bf16", y, wantb, ny);
        free(wh), free(wb), free(wantb);
        cvdk_conv2d(x, w, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw, g->pt,
                    g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0);
        expect_close("cvdk_conv2d", y, want, ny);
        memset(y, 0, sizeof(float) * (size_t)ny);
        cvdk_conv2d_p8(x, wp, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw,
                       g->pt, g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0, NULL);
        expect_close("cvdk_conv2d_p8", y, want, ny);
        /* Depthwise: C = OC channels, one KH x KW filter each. */
        cgeo d = *g;
        d.OC = d.C;
        int64_t nd = d.C * d.OH * d.OW;
        ref_conv(&d, true, x, w, NULL, NULL, 0, want);
        cvdk_dwconv2d(x, w, NULL, y, d.C, d.H, d.W, d.KH, d.KW, d.sh, d.sw, d.pt, d.pl, d.dh, d.dw,
                      d.OH, d.OW, NULL, 0, 0, 0);
        expect_close("cvdk_dwconv2d", y, want, nd);
        /* Two images in one call (the batched launch the host runtime makes). */
        int64_t nx = d.C * d.H * d.W;
        float *x2 = rnd_buf(2 * nx), *y2 = rnd_buf(2 * nd);
        cvdk_dwconv2d_b(x2, w, NULL, y2, d.C, d.H, d.W, d.KH, d.KW, d.sh, d.sw, d.pt, d.pl, d.dh,
                        d.dw, d.OH, d.OW, NULL, 0, 0, 0, 2, nx, nd);
        for (int b = 0; b < 2; b++) {
            ref_conv(&d, true, x2 + b * nx, w, NULL, NULL, 0, want);
            expect_close("cvdk_dwconv2d_b", y2 + b * nd, want, nd);
        }
        free(x2), free(y2);
        free(x), free(w), free(bias), free(res), free(y), free(wp), free(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_target_lists_cuda),
        cmocka_unit_test(test_device_math),
        cmocka_unit_test(test_device_trig),
        cmocka_unit_test(test_dev_sgemm),
        cmocka_unit_test(test_dev_conv),
        cmocka_unit_test(test_l2_key_sm),
        cmocka_unit_test(test_ptx_core_ops),
        cmocka_unit_test(test_sm80_and_header),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_no_device),
        cmocka_unit_test(test_old_device),
        cmocka_unit_test(test_fake_runs),
        cmocka_unit_test(test_fake_constants),
        cmocka_unit_test(test_fake_half),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
