/* The CUDA backend without a GPU: PTX for the core ops (every group of
 * tests/gpu/cuda_cases.h compiled for cuda-sm90: .entry kernels, .target
 * sm_90, nothing left undefined), sm_80 PTX, reproducible artifacts, the
 * host library's create failing with a coded error where there is no
 * driver or no usable device, whole runs through a stand-in driver
 * (tests/gpu/fake_libcuda.c: device memory on the host, every launch's
 * pointers checked, kernels not run) and L2 keys that tell SMs apart.
 * Graph replay: test_cuda_graph.c; the device code on the host:
 * test_cuda_dev.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "compiler-core/backend/targets.h"
#include "tests/support/cuda_testlib.h"
#include "compile/internal.h"

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
                      cv_precision prec, const char *nhwc)
{
    char msg[1024];
    char *dir = cv_tmpdir_make("cuda-half");
    cv_quant_opts q = {.precision = prec};
    cv_compile_opts o = {.target = "cuda-sm90", .opt_level = 2, .emit = CV_EMIT_SO,
                         .out_dir = dir, .quant = prec == CV_PRECISION_FP32 ? NULL : &q};
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
    for (int prec = CV_PRECISION_FP16; prec <= CV_PRECISION_BF16; prec++) {
        char *run = half_run(&b, fake, log, (cv_precision)prec, "");
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
        char *run = half_run(&b, fake, log, half ? CV_PRECISION_FP16 : CV_PRECISION_FP32, "1");
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

/* ---- packed inputs shared by convolutions ------------------------------------------ */

/* CU-IR of a batch of 4 (32 channels, 8 x 8) through a 3 x 3 and a 1 x 1
 * convolution, both stride 2, the second adding the first: resnet's
 * downsampling, whose 1 x 1 reads its block's input. */
static char *write_shared_input_model(const char *dir)
{
    char *path = cv_tmpdir_path(dir, "shared.cuir");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "cuir 1\nmodel @shared(%%x: f32[4,32,8,8]) -> (f32[4,32,4,4]) {\n");
    static const int taps[2] = {9, 1};
    for (int w = 0; w < 2; w++) {
        int side = w == 0 ? 3 : 1, n = 32 * 32 * taps[w];
        fprintf(f, "  param %%w%d: f32[32,32,%d,%d] = dense(", w, side, side);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s%g", i ? ", " : "", (double)((i * 7919 % 201) - 100) / 1000.0);
        fprintf(f, ")\n");
    }
    fprintf(f, "  %%0 = conv2d(%%x, %%w0) {stride=[2,2], pad=[1,1,1,1]} : f32[4,32,4,4]\n"
               "  %%1 = conv2d(%%x, %%w1) {stride=[2,2]} : f32[4,32,4,4]\n"
               "  %%2 = add(%%1, %%0) : f32[4,32,4,4]\n  return %%2\n}\n");
    assert_int_equal(fclose(f), 0);
    return path;
}

/* Two runs of that model on the stand-in driver (CUVIL_CUDA_NHWC as
 * `nhwc`, graphs off): their launch log. */
static char *shared_input_runs(const char *fake, const char *(*log)(void), const char *nhwc)
{
    char *tmp = cv_tmpdir_make("cuda-shared");
    char *path = write_shared_input_model(tmp), msg[1024];
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(path, 0, &d);
    if (!m)
        fail_msg("load: %s", d.n ? d.v[0].msg : "?");
    char *dir = compile(m, "cuda-sm90");
    cv_native *n = NULL;
    setenv("CUVIL_CUDA_NHWC", nhwc, 1);
    setenv("CUVIL_CUDA_GRAPH", "0", 1);
    int code = open_code(dir, fake, &n, msg, sizeof msg);
    unsetenv("CUVIL_CUDA_NHWC");
    unsetenv("CUVIL_CUDA_GRAPH");
    if (code)
        fail_msg("CV%04d %s", code, msg);
    cv_tensor x = {0}, got = {0};
    int64_t dims[4] = {4, 32, 8, 8};
    cv_tensor_alloc(&x, CV_F32, 4, dims);
    size_t at = strlen(log());
    for (int run = 0; run < 2; run++) {
        assert_int_equal(cv_native_run(n, &x, 1, &got, &d), 0);
        cv_tensor_free(&got);
    }
    char *runs = strdup(log() + at);
    assert_non_null(runs);
    assert_int_equal(count(runs, "bad=0"), count(runs, "launch "));
    cv_tensor_free(&x);
    cv_native_close(n);
    cv_module_free(m);
    cv_tmpdir_remove(dir);
    free(path);
    cv_tmpdir_remove(tmp);
    cv_diag_free(&d);
    return runs;
}

/* The input packed for the 3 x 3 convolution is the 1 x 1 one's too: one
 * pack a run (a new run's input is new), both convolutions channels-last
 * on the same packed buffer; CUVIL_CUDA_NHWC=0 packs nothing. */
static void test_fake_shared_pack(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    const char *(*log)(void) = NULL;
    uint64_t (*param)(const char *, int, int) = NULL;
    void *dl = fake_open(fake, "cvfake_log", (void **)&log);
    *(void **)&param = dlsym(dl, "cvfake_param");
    assert_non_null(param);
    char *runs = shared_input_runs(fake, log, "");
    if (getenv("CVTEST_DEBUG"))
        fprintf(stderr, "%s", runs);
    assert_int_equal(count(runs, "launch cvdk_nhwc_pack "), 2);
    assert_int_equal(count(runs, "launch cvdk_conv2d_p8_nc "), 4);
    assert_int_equal(count(runs, "launch cvdk_conv2d_p8_tc "), 0);
    /* The last run's two convolutions read the buffer its pack wrote. */
    uint64_t packed = param("cvdk_nhwc_pack", 0, 1);
    assert_true(packed != 0);
    assert_true(param("cvdk_conv2d_p8_nc", 0, 0) == packed);
    assert_true(param("cvdk_conv2d_p8_nc", 1, 0) == packed);
    free(runs);
    runs = shared_input_runs(fake, log, "0");
    assert_int_equal(count(runs, "launch cvdk_nhwc_pack "), 0);
    assert_int_equal(count(runs, "launch cvdk_conv2d_p8_nc "), 0);
    free(runs);
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
        cv_compile_target t;
        assert_int_equal(cv_compile_target_describe(targets[i], &t, &d), 0);
        assert_string_equal(t.triple, "nvptx64-nvidia-cuda");
        cv_compile_l2_in in = {.target = targets[i], .desc = &t, .o = &o, .emit = CV_EMIT_DEFAULT};
        assert_int_equal(cv_compile_l2_key(c, &in, &k[i], &d), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_target_lists_cuda),
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
        cmocka_unit_test(test_fake_shared_pack),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
