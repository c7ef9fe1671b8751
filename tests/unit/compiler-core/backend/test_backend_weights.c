/* --weights-file (CV_EMIT_WEIGHTS): the weights go to <name>.weights.bin
 * beside the library, which then does not hold their bytes; the artifact
 * loads through cv_native_open (which maps the file) and matches the
 * interpreter; two compiles give the same bytes in every file, the
 * weights file included; a truncated weights file is refused (CV5044);
 * the plain create of such a library returns NULL and create_weights
 * refuses a wrong size; CUDA targets refuse the option (CV5043). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/backend_testlib.h"

static cv_module *load_tinycnn(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/cuir/tinycnn.cuir", cv_tmpdir_src_root());
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(path, 0, &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    return m;
}

static long file_size(const char *dir, const char *name)
{
    char *p = cv_tmpdir_path(dir, name);
    struct stat st;
    long n = stat(p, &st) == 0 ? (long)st.st_size : -1;
    free(p);
    return n;
}

static const unsigned weights_emit = CV_EMIT_SO | CV_EMIT_H | CV_EMIT_WEIGHTS;

static void test_runs_from_the_file(void **state)
{
    cv_module *m = load_tinycnn();
    assert_non_null(m);
    char msg[2048] = "";
    char *dir = bk_compile(m, "native", 2, weights_emit, msg, sizeof msg);
    char *embedded = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (!dir || !embedded)
        fail_msg("%s", msg);
    long bin = file_size(dir, "tinycnn.weights.bin");
    long so = file_size(dir, "libtinycnn.so"), so_embedded = file_size(embedded, "libtinycnn.so");
    printf("weights file %ld bytes; library %ld bytes, %ld with the weights embedded\n", bin,
           so, so_embedded);
    assert_true(bin > 2000);
    /* The weights' bytes are in the embedded library and not in the other
     * (file sizes alone do not say: a section's page padding can hold them). */
    size_t n_bin, n_so, n_emb;
    char *p_bin = cv_tmpdir_path(dir, "tinycnn.weights.bin");
    char *p_so = cv_tmpdir_path(dir, "libtinycnn.so");
    char *p_emb = cv_tmpdir_path(embedded, "libtinycnn.so");
    char *w = cv_tmpdir_read_file(p_bin, &n_bin), *lib = cv_tmpdir_read_file(p_so, &n_so),
         *lib_emb = cv_tmpdir_read_file(p_emb, &n_emb);
    assert_true(w && lib && lib_emb && n_bin == (size_t)bin && so > 0);
    const char *chunk = w + n_bin / 2 - 64;
    assert_non_null(memmem(lib_emb, n_emb, chunk, 128));
    assert_null(memmem(lib, n_so, chunk, 128));
    free(w), free(lib), free(lib_emb), free(p_bin), free(p_so), free(p_emb);
    size_t hlen;
    char *hpath = cv_tmpdir_path(dir, "tinycnn.h");
    char *h = cv_tmpdir_read_file(hpath, &hlen);
    assert_non_null(strstr(h, "#define CV_TINYCNN_WEIGHTS_FILE \"tinycnn.weights.bin\""));
    assert_non_null(strstr(h, "cv_tinycnn_create_weights(int threads, const void *w"));
    free(h);
    free(hpath);

    const cv_func *f = m->funcs[0];
    int64_t dims[4] = {3, 1, 8, 8};
    cv_tensor in, want = {0}, got = {0};
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, 4, dims), 0);
    cv_npref_fill(&in, 7, -1, 1);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(f, &in, 1, &want, &d), 0);
    cv_native *nat = NULL;
    if (cv_native_open(dir, 2, &nat, &d) || cv_native_run(nat, &in, 1, &got, &d)) {
        cv_diag_print(&d, stderr, false);
        fail_msg("the --weights-file artifact does not run");
    }
    cv_native_close(nat);
    if (cv_npref_compare(&got, &want, 1e-4, 1e-5, msg, sizeof msg))
        fail_msg("%s", msg);

    /* The library alone: create has no weights, create_weights wants them all. */
    char *sopath = cv_tmpdir_path(dir, "libtinycnn.so");
    void *dl = dlopen(sopath, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    void *(*create)(int) = NULL;
    void *(*create_w)(int, const void *, int64_t) = NULL;
    *(void **)&create = dlsym(dl, "cv_tinycnn_create");
    *(void **)&create_w = dlsym(dl, "cv_tinycnn_create_weights");
    assert_non_null(create);
    assert_non_null(create_w);
    assert_null(create(1));
    static _Alignas(64) char zeros[8192];
    assert_null(create_w(1, zeros, bin - 4));
    assert_null(create_w(1, zeros + 4, bin));
    dlclose(dl);
    free(sopath);

    /* A truncated file is refused before anything runs. */
    char *binpath = cv_tmpdir_path(dir, "tinycnn.weights.bin");
    assert_int_equal(truncate(binpath, bin - 64), 0);
    cv_diag_free(&d);
    cv_diag_init(&d);
    assert_int_not_equal(cv_native_open(dir, 1, &nat, &d), 0);
    assert_int_equal(d.v[0].code, 5044);
    free(binpath);

    cv_tensor_free(&in);
    cv_tensor_free(&want);
    cv_tensor_free(&got);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
    cv_tmpdir_remove(embedded);
    cv_module_free(m);
}

/* Two compiles, the same bytes in every file (the weights file too). */
static void test_reproducible(void **state)
{
    cv_module *m = load_tinycnn();
    assert_non_null(m);
    char msg[2048] = "";
    char *a = bk_compile(m, "x86_64-avx2", 1, weights_emit | CV_EMIT_A, msg, sizeof msg);
    char *b = bk_compile(m, "x86_64-avx2", 1, weights_emit | CV_EMIT_A, msg, sizeof msg);
    if (!a || !b)
        fail_msg("%s", msg);
    DIR *dir = opendir(a);
    int files = 0;
    bool have_bin = false;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        char *pa = cv_tmpdir_path(a, e->d_name), *pb = cv_tmpdir_path(b, e->d_name);
        size_t la, lb;
        char *x = cv_tmpdir_read_file(pa, &la), *y = cv_tmpdir_read_file(pb, &lb);
        assert_non_null(x);
        assert_non_null(y);
        if (la != lb || memcmp(x, y, la) != 0)
            fail_msg("%s differs between two compiles", e->d_name);
        have_bin |= strcmp(e->d_name, "tinycnn.weights.bin") == 0;
        free(x);
        free(y);
        free(pa);
        free(pb);
        files++;
    }
    closedir(dir);
    assert_true(have_bin);
    assert_true(files >= 5);
    cv_tmpdir_remove(a);
    cv_tmpdir_remove(b);
    cv_module_free(m);
}

static void test_cuda_refuses(void **state)
{
    cv_module *m = load_tinycnn();
    assert_non_null(m);
    char *dir = cv_tmpdir_make("weights-cuda");
    cv_compile_opts o = {.target = "cuda-sm80", .opt_level = 2, .emit = weights_emit,
                         .out_dir = dir};
    cv_compile_info info;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_not_equal(cv_compile_native(m, &o, &info, &d), 0);
    assert_int_equal(d.v[0].code, 5043);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
    cv_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_from_the_file),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_cuda_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
