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

/* ---- runs replayed as CUDA graphs (host/cuhost_graph.c) ------------------------------ */

/* The stand-in driver's inspection and driver functions the graph tests use. */
typedef struct fake_api {
    void *dl;
    const char *(*log)(void);
    uint64_t (*param)(const char *, int, int);
    int (*live_graphs)(void);
    int (*mem_alloc)(uint64_t *, size_t);
    int (*mem_free)(uint64_t);
    int (*stream_create)(void **, unsigned);
    int (*stream_destroy)(void *);
    int (*begin_capture)(void *, int);
    int (*end_capture)(void *, void **);
    int (*instantiate)(void **, void *, unsigned long long);
    int (*graph_launch)(void *, void *);
    int (*exec_destroy)(void *);
    int (*graph_destroy)(void *);
} fake_api;

static void fake_api_open(const char *fake, fake_api *f)
{
    static const char *const names[] = {
        "cvfake_log", "cvfake_param", "cvfake_live_graphs", "cuMemAlloc_v2", "cuMemFree_v2",
        "cuStreamCreate", "cuStreamDestroy_v2", "cuStreamBeginCapture_v2", "cuStreamEndCapture",
        "cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy"};
    void **fns[] = {(void **)&f->log, (void **)&f->param, (void **)&f->live_graphs,
                    (void **)&f->mem_alloc, (void **)&f->mem_free, (void **)&f->stream_create,
                    (void **)&f->stream_destroy, (void **)&f->begin_capture, (void **)&f->end_capture,
                    (void **)&f->instantiate, (void **)&f->graph_launch,
                    (void **)&f->exec_destroy, (void **)&f->graph_destroy};
    f->dl = fake_open(fake, names[0], fns[0]);
    for (size_t i = 1; i < sizeof names / sizeof names[0]; i++) {
        *fns[i] = dlsym(f->dl, names[i]);
        assert_non_null(*fns[i]);
    }
}

enum { RUN_MAX_LAUNCHES = 256, RUN_PARAMS = 32 };

/* One run as the stand-in driver saw it: its launch lines (malloc'd) and
 * every launch's first RUN_PARAMS parameters, in order. */
typedef struct fake_run {
    char *launches;
    int n, graphs, graph_n;     /* launches; "graph N launches" lines, the last N */
    uint64_t params[RUN_MAX_LAUNCHES][RUN_PARAMS];
} fake_run;

/* The log since `at`, read right after the run (the driver keeps the last
 * 512 launches' parameters). */
static void fake_run_read(const fake_api *f, size_t at, fake_run *r)
{
    const char *seg = f->log() + at;
    size_t len = 0;
    char names[RUN_MAX_LAUNCHES][128];
    r->launches = calloc(1, strlen(seg) + 1);
    assert_non_null(r->launches);
    r->n = r->graphs = r->graph_n = 0;
    for (const char *p = seg; *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);
        if (strncmp(p, "graph ", 6) == 0 && ++r->graphs)
            r->graph_n = atoi(p + 6);
        if (strncmp(p, "launch ", 7) == 0) {
            assert_true(r->n < RUN_MAX_LAUNCHES);
            memcpy(r->launches + len, p, l);
            len += l;
            sscanf(p + 7, "%127s", names[r->n++]);
        }
        p += l;
    }
    /* Launch k is the nth newest of its kernel, n counting later ones. */
    for (int k = 0; k < r->n; k++) {
        int nth = 0;
        for (int j = k + 1; j < r->n; j++)
            nth += strcmp(names[j], names[k]) == 0;
        for (int i = 0; i < RUN_PARAMS; i++)
            r->params[k][i] = f->param(names[k], nth, i);
    }
}

/* Two runs made the same launches (params: with the same parameters). */
static void expect_same_run(const fake_run *a, const fake_run *b, bool params, const char *what)
{
    if (strcmp(a->launches, b->launches) != 0)
        fail_msg("%s: other launches:\n%s---\n%s", what, a->launches, b->launches);
    assert_int_equal(count(a->launches, "bad=0"), a->n);
    if (params && memcmp(a->params, b->params, sizeof a->params[0] * (size_t)a->n) != 0)
        fail_msg("%s: the launches' parameters differ", what);
}

/* Whether some launch of the run has parameter value v. */
static bool run_uses(const fake_run *r, uint64_t v)
{
    for (int k = 0; k < r->n; k++)
        for (int i = 0; i < RUN_PARAMS; i++)
            if (r->params[k][i] == v)
                return true;
    return false;
}

/* A compiled model with its inputs: group g's, or another. */
typedef struct art {
    const char *dir;
    char name[64];              /* the artifact's: cv_<name>_run */
    const bk_model *b;
    int n_out;
} art;

static art group_art(int g)
{
    art a = {g_dirs[g], "", &g_models[g], cuda_groups[g].n};
    snprintf(a.name, sizeof a.name, "cuda_%s", cuda_groups[g].name);
    return a;
}

/* The artifact's library (dlclose it). */
static void *artifact_lib(const art *a, int flags)
{
    char file[128];
    snprintf(file, sizeof file, "lib%s.so", a->name);
    char *path = cv_tmpdir_path(a->dir, file);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
    free(path);
    assert_non_null(lib);
    return lib;
}

static void *lib_sym(void *lib, const art *a, const char *verb)
{
    char name[128];
    snprintf(name, sizeof name, "cv_%s_%s", a->name, verb);
    void *fn = dlsym(lib, name);
    assert_non_null(fn);
    return fn;
}

/* cv_native_run three times: the first runs directly, the second is
 * captured (nothing launched while capturing) and its graph launched, the
 * third launches the graph only; the graph's launches are the first run's,
 * in order, with the same parameters (cv_native_run stages through one
 * device buffer) unless the first run grew a buffer after using it
 * (grown); the replays' parameters are the same.  !graph: every run runs
 * directly.  Closing frees the graph. */
static void three_runs(const fake_api *f, const char *fake, const art *a, bool graph, bool grown)
{
    cv_native *n = NULL;
    char msg[1024];
    int code = open_code(a->dir, fake, &n, msg, sizeof msg);
    if (code)
        fail_msg("%s: CV%04d %s", a->name, code, msg);
    int live = f->live_graphs();
    cv_tensor got[BK_MAX_CASES] = {{0}};
    static fake_run runs[3];
    for (int i = 0; i < 3; i++) {
        cv_diag d;
        cv_diag_init(&d);
        size_t at = strlen(f->log());
        if (cv_native_run(n, a->b->ins, a->b->n_ins, got, &d))
            fail_msg("%s run %d: %s\nlog:\n%s", a->name, i + 1,
                     d.n ? d.v[0].msg : "?", f->log() + at);
        cv_diag_free(&d);
        fake_run_read(f, at, &runs[i]);
        assert_true(runs[i].n >= 1);
        assert_int_equal(runs[i].graphs, graph && i > 0);
        assert_int_equal(runs[i].graph_n, graph && i > 0 ? runs[0].n : 0);
        if (i > 0)
            expect_same_run(&runs[i - 1], &runs[i], !grown || i == 2, a->name);
    }
    assert_int_equal(f->live_graphs(), live + graph);
    /* A capture that failed left no error behind. */
    const char *err;
    int (*last_error)(const char **) = NULL;
    void *lib = artifact_lib(a, RTLD_NOLOAD);
    *(void **)&last_error = lib_sym(lib, a, "last_error");
    assert_int_equal(last_error(&err), 0);
    dlclose(lib);
    for (int i = 0; i < 3; i++)
        free(runs[i].launches);
    for (int i = 0; i < a->n_out; i++)
        cv_tensor_free(&got[i]);
    cv_native_close(n);
    assert_int_equal(f->live_graphs(), live);
}

static void test_graph_replay(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    fake_api f;
    fake_api_open(fake, &f);
    for (int g = 0; g < CUDA_N_GROUPS; g++) {
        art a = group_art(g);
        three_runs(&f, fake, &a, true, false);
    }
    dlclose(f.dl);
}

/* Channels-last convolutions (CUVIL_CUDA_NHWC=1 on the cuda_half group's
 * P8 weights): the first run grows the packed-input buffers as it goes
 * (its early launches use buffers freed since); the captured run finds
 * them large enough (a capture that regrew one would turn graphs off) and
 * every pack launch is replayed. */
static void test_graph_packs(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    fake_api f;
    fake_api_open(fake, &f);
    static const cuda_group g = CUDA_GROUP("half", cuda_half);
    char msg[1024];
    bk_model b;
    if (bk_build(&b, "cuda_half", g.cases, g.n, msg, sizeof msg) || cuda_bake_params(&b))
        fail_msg("%s", msg);
    char *dir = cv_tmpdir_make("cuda-graph");
    art a = {dir, "cuda_half", &b, g.n};
    cv_compile_opts o = {.target = "cuda-sm90", .opt_level = 2, .emit = CV_EMIT_SO,
                         .out_dir = dir};
    cv_compile_info info;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_compile_native(b.m, &o, &info, &d))
        fail_msg("compile: %s", d.n ? d.v[0].msg : "?");
    size_t at = strlen(f.log());
    setenv("CUVIL_CUDA_NHWC", "1", 1);
    three_runs(&f, fake, &a, true, true);
    unsetenv("CUVIL_CUDA_NHWC");
    assert_int_equal(count(f.log() + at, "launch cvdk_nhwc_pack "), 3 * 10);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
    bk_model_free(&b);
    dlclose(f.dl);
}

/* CUVIL_CUDA_GRAPH=0, and drivers whose graph calls fail: at the capture's
 * start, at instantiation, at the first launch captured (then the
 * capture is dropped, graphs are off for the context, nothing is recorded
 * as an error): every run launches directly, the same launches each time. */
static void test_graph_off(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    fake_api f;
    fake_api_open(fake, &f);
    art a = group_art(3);
    setenv("CUVIL_CUDA_GRAPH", "0", 1);
    three_runs(&f, fake, &a, false, false);
    unsetenv("CUVIL_CUDA_GRAPH");
    static const char *const modes[] = {"nograph", "noinstantiate", "badcapture"};
    for (int i = 0; i < 3; i++) {
        setenv("CVFAKE_MODE", modes[i], 1);
        three_runs(&f, fake, &a, false, false);
        unsetenv("CVFAKE_MODE");
    }
    dlclose(f.dl);
}

/* The conv group's artifact through its own API, for run_stream: device
 * inputs and outputs in two sets (A, B) allocated in the stand-in driver. */
typedef struct stream_fix {
    void *lib, *ctx;
    int (*run_stream)(void *, const void *const *, void *const *, const int64_t *, void *);
    int (*last_error)(const char **);
    void (*destroy)(void *);
    int n_in, n_out;
    int64_t syms[16];           /* bound from the inputs' shapes */
    uint64_t bufs[2][BK_MAX_CASES * BK_MAX_IN + BK_MAX_CASES];  /* inputs, then outputs */
} stream_fix;


static void stream_fix_open(const fake_api *f, const char *fake, stream_fix *s)
{
    int g = 3;
    /* Sizes from a host run of the same model (first: the stand-in driver
     * holds one module at a time). */
    cv_native *n = NULL;
    char msg[1024];
    assert_int_equal(open_code(g_dirs[g], fake, &n, msg, sizeof msg), 0);
    cv_tensor got[BK_MAX_CASES] = {{0}};
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_native_run(n, g_models[g].ins, g_models[g].n_ins, got, &d), 0);
    s->n_in = g_models[g].n_ins;
    s->n_out = cuda_groups[g].n;
    for (int i = 0; i < s->n_in; i++) {
        cv_native_io io = cv_native_input(n, i);
        for (int k = 0; k < io.rank; k++)
            if (io.dims[k] < 0 && -1 - io.dims[k] < 16)
                s->syms[-1 - io.dims[k]] = g_models[g].ins[i].dims[k];
    }
    for (int set = 0; set < 2; set++)
        for (int i = 0; i < s->n_in + s->n_out; i++) {
            const cv_tensor *t = i < s->n_in ? &g_models[g].ins[i] : &got[i - s->n_in];
            assert_int_equal(f->mem_alloc(&s->bufs[set][i],
                                          (size_t)t->numel * cv_dtype_size(t->dtype) + 1), 0);
        }
    for (int i = 0; i < s->n_out; i++)
        cv_tensor_free(&got[i]);
    cv_diag_free(&d);
    cv_native_close(n);
    art a = group_art(g);
    s->lib = artifact_lib(&a, 0);
    void *(*create)(int) = NULL;
    *(void **)&create = lib_sym(s->lib, &a, "create");
    *(void **)&s->run_stream = lib_sym(s->lib, &a, "run_stream");
    *(void **)&s->last_error = lib_sym(s->lib, &a, "last_error");
    *(void **)&s->destroy = lib_sym(s->lib, &a, "destroy");
    setenv("CUVIL_CUDA_DRIVER", fake, 1);
    s->ctx = create(1);
    unsetenv("CUVIL_CUDA_DRIVER");
    assert_non_null(s->ctx);
}

static void stream_fix_close(const fake_api *f, stream_fix *s)
{
    s->destroy(s->ctx);
    for (int set = 0; set < 2; set++)
        for (int i = 0; i < s->n_in + s->n_out; i++)
            f->mem_free(s->bufs[set][i]);
    dlclose(s->lib);
}

/* run_stream with buffer set `set` on stream: its result; what the driver
 * saw in *r. */
static int stream_run(const fake_api *f, stream_fix *s, int set, void *stream, fake_run *r)
{
    const void *ins[BK_MAX_CASES * BK_MAX_IN];
    void *outs[BK_MAX_CASES];
    for (int i = 0; i < s->n_in; i++)
        ins[i] = (const void *)(uintptr_t)s->bufs[set][i];
    for (int i = 0; i < s->n_out; i++)
        outs[i] = (void *)(uintptr_t)s->bufs[set][s->n_in + i];
    size_t at = strlen(f->log());
    int rc = s->run_stream(s->ctx, ins, outs, s->syms, stream);
    fake_run_read(f, at, r);
    return rc;
}

/* Other device buffers make another key: run_stream with set B after A's
 * graph launches directly (B's pointers, not the stale graph's), B's next
 * run gets a graph of its own, and A again runs directly.  Each set's
 * replays equal its direct run. */
static void test_graph_new_buffers(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    fake_api f;
    fake_api_open(fake, &f);
    stream_fix s;
    stream_fix_open(&f, fake, &s);
    static fake_run a[3], b[3], a2;
    for (int i = 0; i < 3; i++)
        assert_int_equal(stream_run(&f, &s, 0, NULL, &a[i]), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(stream_run(&f, &s, 1, NULL, &b[i]), 0);
    assert_int_equal(stream_run(&f, &s, 0, NULL, &a2), 0);
    static const int graphs[3] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a[i].graphs, graphs[i]);
        assert_int_equal(b[i].graphs, graphs[i]);
        expect_same_run(&a[0], &a[i], true, "set A");
        expect_same_run(&b[0], &b[i], true, "set B");
    }
    assert_int_equal(a2.graphs, 0);
    expect_same_run(&a[0], &a2, true, "set A again");
    /* B's runs read B's input and write B's output, never A's. */
    uint64_t a_out = s.bufs[0][s.n_in], b_out = s.bufs[1][s.n_in];
    assert_true(run_uses(&a[0], a_out) && !run_uses(&a[0], b_out));
    assert_true(run_uses(&b[0], b_out) && !run_uses(&b[0], a_out));
    assert_true(run_uses(&b[2], b_out) && !run_uses(&b[2], a_out));
    for (int i = 0; i < 3; i++)
        free(a[i].launches), free(b[i].launches);
    free(a2.launches);
    stream_fix_close(&f, &s);
    dlclose(f.dl);
}

/* A failed graph launch is the run's failure, as a coded driver error: a
 * replay whose output buffer the caller freed (the stand-in driver checks
 * the replayed launches' pointers).  The graph is dropped: the next run
 * runs directly. */
static void test_graph_launch_error(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    fake_api f;
    fake_api_open(fake, &f);
    stream_fix s;
    stream_fix_open(&f, fake, &s);
    static fake_run r[4];
    for (int i = 0; i < 2; i++)
        assert_int_equal(stream_run(&f, &s, 0, NULL, &r[i]), 0);
    assert_int_equal(f.mem_free(s.bufs[0][s.n_in]), 0);
    assert_int_equal(stream_run(&f, &s, 0, NULL, &r[2]), -3);
    assert_int_equal(r[2].graphs, 1);
    assert_true(count(r[2].launches, "bad=0") < r[2].n);
    const char *msg;
    assert_int_equal(s.last_error(&msg), 5063);
    assert_non_null(strstr(msg, "cuGraphLaunch failed: CUDA_ERROR_ILLEGAL_ADDRESS"));
    assert_int_equal(f.mem_alloc(&s.bufs[0][s.n_in], 1 << 20), 0);
    assert_int_equal(stream_run(&f, &s, 0, NULL, &r[3]), 0);
    assert_int_equal(r[3].graphs, 0);
    for (int i = 0; i < 4; i++)
        free(r[i].launches);
    stream_fix_close(&f, &s);
    dlclose(f.dl);
}

/* A run on a stream the caller is capturing goes into the caller's graph
 * (the context captures nothing of its own: one graph alive) and leaves no
 * error; launching the caller's graph makes both runs' launches. */
static void test_graph_caller_capture(void **state)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    fake_api f;
    fake_api_open(fake, &f);
    stream_fix s;
    stream_fix_open(&f, fake, &s);
    void *stream = NULL, *graph = NULL, *exec = NULL;
    assert_int_equal(f.stream_create(&stream, 1), 0);
    static fake_run direct, inside, replay;
    assert_int_equal(stream_run(&f, &s, 0, stream, &direct), 0);
    int live = f.live_graphs();
    assert_int_equal(f.begin_capture(stream, 1), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(stream_run(&f, &s, 0, stream, &inside), 0);
        assert_int_equal(inside.n + inside.graphs, 0);
        free(inside.launches);
    }
    assert_int_equal(f.live_graphs(), live + 1);
    assert_int_equal(f.end_capture(stream, &graph), 0);
    assert_int_equal(f.instantiate(&exec, graph, 0), 0);
    size_t at = strlen(f.log());
    assert_int_equal(f.graph_launch(exec, stream), 0);
    fake_run_read(&f, at, &replay);
    assert_int_equal(replay.n, 2 * direct.n);
    assert_int_equal(count(replay.launches, "bad=0"), replay.n);
    char *twice = malloc(2 * strlen(direct.launches) + 1);
    assert_non_null(twice);
    sprintf(twice, "%s%s", direct.launches, direct.launches);
    assert_string_equal(replay.launches, twice);
    const char *msg;
    assert_int_equal(s.last_error(&msg), 0);
    free(twice), free(direct.launches), free(replay.launches);
    f.exec_destroy(exec);
    f.graph_destroy(graph);
    assert_int_equal(f.stream_destroy(stream), 0);
    stream_fix_close(&f, &s);
    dlclose(f.dl);
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
        cmocka_unit_test(test_fake_shared_pack),
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_graph_packs),
        cmocka_unit_test(test_graph_off),
        cmocka_unit_test(test_graph_new_buffers),
        cmocka_unit_test(test_graph_launch_error),
        cmocka_unit_test(test_graph_caller_capture),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
