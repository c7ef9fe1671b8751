/* The C99 backend's output on other architectures: the elementwise sweep
 * (wrap-around, saturation, NaN, f16/bf16) is emitted as C, built by
 * Debian's aarch64 and riscv64 cross gcc under -std=c99 -pedantic -Wall
 * -Wextra -Werror with a small driver, run under qemu-user and compared
 * with the interpreter.  Skipped, with a message, where the cross
 * toolchain or qemu is missing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "compiler-core/backend/artifact_internal.h"
#include "tests/support/c99_testlib.h"

/* Runs a C artifact built for another machine: in.bin holds the inputs
 * back to back, out.bin receives the outputs; sizes and symbols come on
 * the command line.  NAME is the artifact's C name (-D). */
static const char driver_c[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include HEADER\n"
    "#define CAT2(a, b) a##b\n#define CAT(a, b) CAT2(a, b)\n"
    "#define API(verb) CAT(CAT(CAT(cv_, NAME), _), verb)\n"
    "int main(int argc, char **argv)\n{\n"
    "    void *in[64], *out[256];\n    long osz[256];\n    int64_t sym[64];\n"
    "    int a = 3, ni, no, ns, i;\n    FILE *f = fopen(argv[1], \"rb\");\n"
    "    void *ctx;\n    (void)argc;\n"
    "    ni = atoi(argv[a++]);\n"
    "    for (i = 0; i < ni; i++) {\n        long n = atol(argv[a++]);\n"
    "        in[i] = malloc((size_t)n + 1);\n"
    "        if (fread(in[i], 1, (size_t)n, f) != (size_t)n)\n            return 2;\n    }\n"
    "    fclose(f);\n    no = atoi(argv[a++]);\n"
    "    for (i = 0; i < no; i++) {\n        osz[i] = atol(argv[a++]);\n"
    "        out[i] = malloc((size_t)osz[i] + 1);\n    }\n"
    "    ns = atoi(argv[a++]);\n"
    "    for (i = 0; i < ns; i++)\n        sym[i] = (int64_t)atoll(argv[a++]);\n"
    "    ctx = API(create)(1);\n"
    "    if (!ctx || API(run)(ctx, (const void *const *)in, out, sym))\n"
    "        return 3;\n"
    "    f = fopen(argv[2], \"wb\");\n"
    "    for (i = 0; i < no; i++)\n        fwrite(out[i], 1, (size_t)osz[i], f);\n"
    "    fclose(f);\n    API(destroy)(ctx);\n    return 0;\n}\n";

static void add_arg(const char **argv, int *n, char *store, size_t *used, long long v)
{
    int len = snprintf(store + *used, 32, "%lld", v);
    argv[(*n)++] = store + *used;
    *used += (size_t)len + 1;
}

/* The symbols in the artifact's order (first use in the inputs), bound from
 * the input tensors. */
static int bind_syms(const cv_func *fn, const cv_tensor *ins, int64_t *syms)
{
    const char *names[64];
    int ns = 0;
    for (int i = 0; i < fn->n_inputs; i++)
        for (int k = 0; k < fn->inputs[i]->type.shape.rank; k++) {
            const char *s = fn->inputs[i]->type.shape.d[k].sym;
            bool seen = false;
            for (int j = 0; s && j < ns; j++)
                seen |= strcmp(names[j], s) == 0;
            if (s && !seen && ns < 64) {
                names[ns] = s;
                syms[ns++] = ins[i].dims[k];
            }
        }
    return ns;
}

/* The elementwise sweep (wrap-around, saturation, NaN, f16/bf16), built
 * by the cross gcc with the strict flags and run under qemu-user. */
static void check_arch(const char *gcc, const char *qemu, const char *sysroot)
{
    if (!have_program(gcc) || !have_program(qemu)) {
        printf("skipping: %s or %s is not installed (make deps installs them)\n", gcc, qemu);
        skip();
    }
    char msg[4096] = "", name[128];
    bk_model b;
    int n = N_OF(sweep_ew);
    if (bk_build(&b, "sw_ew", sweep_ew, n, msg, sizeof msg))
        fail_msg("%s", msg);
    cv_tensor want[BK_MAX_CASES] = {{0}}, got[BK_MAX_CASES] = {{0}};
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(b.m->funcs[0], b.ins, b.n_ins, want, &d), 0);
    char *dir = emit_c(b.m, CV_EMIT_C, name, sizeof name, msg, sizeof msg);
    if (!dir)
        fail_msg("%s", msg);
    assert_int_equal(cv_tmpdir_write(dir, "driver.c", driver_c, strlen(driver_c)), 0);
    char *src = cv_tmpdir_path(dir, "sw_ew.c"), *wts = cv_tmpdir_path(dir, "sw_ew_weights.c");
    char *drv = cv_tmpdir_path(dir, "driver.c"), *exe = cv_tmpdir_path(dir, "driver");
    char *inp = cv_tmpdir_path(dir, "in.bin"), *outp = cv_tmpdir_path(dir, "out.bin");
    char *cc[] = {(char *)gcc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O1",
                  "-DHEADER=\"sw_ew.h\"", "-DNAME=sw_ew", src, wts, drv, "-lm", "-o", exe, NULL};
    char out[8192];
    if (cv_spawn_capture(cc, out, sizeof out) != 0)
        fail_msg("%s failed: %s", gcc, out);
    FILE *f = fopen(inp, "wb");
    for (int i = 0; i < b.n_ins; i++)
        fwrite(b.ins[i].data, 1, cv_tensor_nbytes(&b.ins[i]), f);
    fclose(f);
    const char *argv[600];
    char store[16384];
    size_t used = 0;
    int a = 0;
    argv[a++] = qemu;
    argv[a++] = "-L";
    argv[a++] = sysroot;
    argv[a++] = exe;
    argv[a++] = inp;
    argv[a++] = outp;
    add_arg(argv, &a, store, &used, b.n_ins);
    for (int i = 0; i < b.n_ins; i++)
        add_arg(argv, &a, store, &used, (long long)cv_tensor_nbytes(&b.ins[i]));
    add_arg(argv, &a, store, &used, n);
    for (int i = 0; i < n; i++)
        add_arg(argv, &a, store, &used, (long long)cv_tensor_nbytes(&want[i]));
    int64_t syms[64];
    int ns = bind_syms(b.m->funcs[0], b.ins, syms);
    add_arg(argv, &a, store, &used, ns);
    for (int i = 0; i < ns; i++)
        add_arg(argv, &a, store, &used, syms[i]);
    argv[a] = NULL;
    int rc = cv_spawn_capture((char *const *)argv, out, sizeof out);
    if (rc != 0)
        fail_msg("%s: the driver exited %d: %s", qemu, rc, out);
    size_t len, off = 0;
    char *bytes = cv_tmpdir_read_file(outp, &len);
    assert_non_null(bytes);
    for (int i = 0; i < n; i++) {
        size_t nb = cv_tensor_nbytes(&want[i]);
        assert_int_equal(cv_tensor_alloc(&got[i], want[i].dtype, want[i].rank, want[i].dims), 0);
        assert_true(off + nb <= len);
        memcpy(got[i].data, bytes + off, nb);
        off += nb;
    }
    assert_int_equal(off, len);
    if (bk_compare(sweep_ew, n, got, want, msg, sizeof msg))
        fail_msg("%s: %s", qemu, msg);
    printf("%s: %d cases match the interpreter\n", qemu, n);
    for (int i = 0; i < n; i++) {
        cv_tensor_free(&want[i]);
        cv_tensor_free(&got[i]);
    }
    free(bytes);
    free(src);
    free(wts);
    free(drv);
    free(exe);
    free(inp);
    free(outp);
    cv_tmpdir_remove(dir);
    bk_model_free(&b);
    cv_diag_free(&d);
}

static void test_aarch64(void **state)
{
    (void)state;
    check_arch("aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu");
}

static void test_riscv64(void **state)
{
    (void)state;
    check_arch("riscv64-linux-gnu-gcc", "qemu-riscv64", "/usr/riscv64-linux-gnu");
}

int main(void)
{
    /* Nothing here may load the LLVM backend. */
    setenv("CUVIL_LLVM_PLUGIN", "/nonexistent/libcv_llvm.so", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aarch64),
        cmocka_unit_test(test_riscv64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
