/* Cross targets: a model of many ops compiled for aarch64-linux-gnu and
 * riscv64-linux-gnu (rv64gcv), its static library linked into a small
 * driver by Debian's cross gcc and run under qemu-user; the outputs must
 * match the interpreter's.  Skipped (with the reason) where the cross
 * toolchain or qemu is missing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "common/fs.h"
#include "compiler-core/backend/artifact_internal.h"
#include "tests/unit/test_backend_util.h"

static const bk_case mix[] = {
    BK("conv2d", "pad=[1,1] stride=[2,1]", "f32[2,3,9,8] @-0.5:0.5", "f32[5,3,3,3]", "f32[5]"),
    BK("conv2d", "groups=4 pad=[1,1,1,1]", "f32[1,4,6,6]", "f32[4,1,3,3]", "f32[4]"),
    BK("gemm", "trans_b=1", "f32[N:3,40] @-0.5:0.5", "f32[20,40] @-0.5:0.5", "f32[20]"),
    BK("matmul", NULL, "f32[2,7,9]", "f32[9,5]"),
    BK("softmax", NULL, "f32[4,10]"),
    BK("log_softmax", "axis=0", "f32[6,3]"),
    BK("max_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1]", "f32[1,3,8,8]"),
    BK("avg_pool2d", "kernel=[2,2] stride=[2,2]", "f32[2,2,6,6]"),
    BK("global_avg_pool", NULL, "f32[2,3,5,5]"),
    BK("add", NULL, "f32[N:3,4,5]", "f32[5]"),
    BK("relu", NULL, "f32[33]"),
    BK("sigmoid", NULL, "f32[17]"),
    BK("tanh", NULL, "f32[9]"),
    BK("erf", NULL, "f32[9]"),
    BK("div", NULL, "i32[8]", "i32[8] =0,1,-1,3,-3,7,0,2"),
    BK("cast", "to=f16", "f32[6] =1,0.1,65504,70000,-3.14159,1e-6"),
    BK("cast", "to=u8", "f32[5] =-1,256,255.5,3.7,nan"),
    BK("reduce_mean", "axes=[1]", "f32[3,8,4]"),
    BK("argmax", "axis=1", "f32[3,6]"),
    BK("batch_norm", NULL, "f32[2,3,4,4]", "f32[3]", "f32[3]", "f32[3]", "f32[3] @0.1:2"),
    BK("layer_norm", NULL, "f32[3,16]", "f32[16]", "f32[16]"),
    BK("transpose", "perm=[0,2,1]", "f32[2,3,4]"),
    BK("concat", "axis=1", "f32[2,3]", "f32[2,5]"),
    BK("gather", "axis=1", "f32[2,6,3]", "i64[2] =5,-2"),
    BK("pad", "pads=[1,2,0,1] mode=reflect", "f32[3,4]"),
    BK("resize", "scales=[1,1,2,2] mode=linear", "f32[1,2,3,3]"),
    BK("quantize_linear", NULL, "f32[2,8] @-300:300", "f32[] =2.5"),
};

/* The driver: argv = in.bin out.bin n_in size... n_out size... n_syms dim... */
static const char driver_c[] =
    "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "void *CREATE(int); int RUN(void *, const void *const *, void *const *, const int64_t *);\n"
    "void DESTROY(void *);\n"
    "int main(int argc, char **argv) {\n"
    "  int a = 3, ni = atoi(argv[a++]); void *in[256], *out[256]; long osz[256]; int64_t sym[64];\n"
    "  FILE *f = fopen(argv[1], \"rb\");\n"
    "  for (int i = 0; i < ni; i++) { long s = atol(argv[a++]); in[i] = malloc(s + 1);\n"
    "    if (fread(in[i], 1, (size_t)s, f) != (size_t)s) return 2; }\n"
    "  fclose(f);\n"
    "  int no = atoi(argv[a++]);\n"
    "  for (int i = 0; i < no; i++) { osz[i] = atol(argv[a++]); out[i] = malloc(osz[i] + 1); }\n"
    "  int ns = atoi(argv[a++]);\n"
    "  for (int i = 0; i < ns; i++) sym[i] = atoll(argv[a++]);\n"
    "  void *ctx = CREATE(2);\n"
    "  if (!ctx || RUN(ctx, (const void *const *)in, out, sym)) return 3;\n"
    "  f = fopen(argv[2], \"wb\");\n"
    "  for (int i = 0; i < no; i++) fwrite(out[i], 1, (size_t)osz[i], f);\n"
    "  fclose(f); DESTROY(ctx); return 0;\n"
    "}\n";

static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    for (const char *p = path ? path : "/usr/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
        if (access(buf, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

static void add_arg(char **argv, int *n, char *store, size_t *used, long v)
{
    int len = snprintf(store + *used, 32, "%ld", v);
    argv[(*n)++] = store + *used;
    *used += (size_t)len + 1;
}

static void check_target(const char *target, const char *gcc, const char *qemu, const char *cpu)
{
    if (!on_path(gcc) || !on_path(qemu)) {
        printf("skipping %s: %s or %s is not installed (make deps installs them)\n", target, gcc, qemu);
        skip();
    }
    char msg[4096] = "";
    bk_model b;
    int n = (int)(sizeof mix / sizeof mix[0]);
    if (bk_build(&b, "mix", mix, n, msg, sizeof msg))
        fail_msg("%s", msg);
    cv_tensor want[BK_MAX_CASES] = {{0}};
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(b.m->funcs[0], b.ins, b.n_ins, want, &d), 0);
    char *dir = bk_compile(b.m, target, 2, CV_EMIT_A | CV_EMIT_H, msg, sizeof msg);
    if (!dir)
        fail_msg("%s", msg);
    char *drv = cv_fs_join(dir, "driver.c"), *exe = cv_fs_join(dir, "driver"), *lib = cv_fs_join(dir, "libmix.a");
    char *inp = cv_fs_join(dir, "in.bin"), *outp = cv_fs_join(dir, "out.bin");
    assert_int_equal(cv_tmpdir_write(dir, "driver.c", driver_c, strlen(driver_c)), 0);
    char *cc[] = {(char *)gcc, "-O1", "-DCREATE=cv_mix_create", "-DRUN=cv_mix_run", "-DDESTROY=cv_mix_destroy",
                  drv, lib, "-lm", "-lpthread", "-o", exe, NULL};
    char out[8192];
    if (cv_spawn_capture(cc, out, sizeof out) != 0)
        fail_msg("%s failed: %s", gcc, out);
    /* Inputs in order into in.bin; sizes and symbols on the command line. */
    FILE *f = fopen(inp, "wb");
    for (int i = 0; i < b.n_ins; i++)
        fwrite(b.ins[i].data, 1, cv_tensor_nbytes(&b.ins[i]), f);
    fclose(f);
    char *argv[600], store[16384];
    size_t used = 0;
    int a = 0;
    argv[a++] = (char *)qemu;
    argv[a++] = "-L";
    argv[a++] = strstr(target, "aarch64") ? "/usr/aarch64-linux-gnu" : "/usr/riscv64-linux-gnu";
    if (cpu) {
        argv[a++] = "-cpu";
        argv[a++] = (char *)cpu;
    }
    argv[a++] = exe;
    argv[a++] = inp;
    argv[a++] = outp;
    add_arg(argv, &a, store, &used, b.n_ins);
    for (int i = 0; i < b.n_ins; i++)
        add_arg(argv, &a, store, &used, (long)cv_tensor_nbytes(&b.ins[i]));
    add_arg(argv, &a, store, &used, n);
    for (int i = 0; i < n; i++)
        add_arg(argv, &a, store, &used, (long)cv_tensor_nbytes(&want[i]));
    /* The symbols in the artifact's order: first use in the inputs, here
     * one per symbolic case input, each bound to the case's size. */
    const cv_func *fn = b.m->funcs[0];
    int64_t syms[64];
    const char *names[64];
    int ns = 0;
    for (int i = 0; i < fn->n_inputs; i++)
        for (int k = 0; k < fn->inputs[i]->type.shape.rank; k++) {
            const char *s = fn->inputs[i]->type.shape.d[k].sym;
            bool seen = false;
            for (int j = 0; s && j < ns; j++)
                seen |= strcmp(names[j], s) == 0;
            if (s && !seen) {
                names[ns] = s;
                syms[ns++] = b.ins[i].dims[k];
            }
        }
    add_arg(argv, &a, store, &used, ns);
    for (int i = 0; i < ns; i++)
        add_arg(argv, &a, store, &used, (long)syms[i]);
    argv[a] = NULL;
    int rc = cv_spawn_capture(argv, out, sizeof out);
    if (rc != 0)
        fail_msg("%s driver exited %d: %s", target, rc, out);
    size_t len;
    char *bytes;
    assert_int_equal(cv_fs_read_file(outp, 1u << 28, &bytes, &len, &d), 0);
    cv_tensor got[BK_MAX_CASES];
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t nb = cv_tensor_nbytes(&want[i]);
        assert_int_equal(cv_tensor_alloc(&got[i], want[i].dtype, want[i].rank, want[i].dims), 0);
        assert_true(off + nb <= len);
        memcpy(got[i].data, bytes + off, nb);
        off += nb;
    }
    assert_int_equal(off, len);
    if (bk_compare(mix, n, got, want, msg, sizeof msg))
        fail_msg("%s: %s", target, msg);
    printf("%s: %d cases match the interpreter under %s\n", target, n, qemu);
    free(bytes);
    for (int i = 0; i < n; i++) {
        cv_tensor_free(&want[i]);
        cv_tensor_free(&got[i]);
    }
    free(drv);
    free(exe);
    free(lib);
    free(inp);
    free(outp);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    bk_model_free(&b);
}

static void test_aarch64(void **state)
{
    check_target("aarch64-linux-gnu", "aarch64-linux-gnu-gcc", "qemu-aarch64", NULL);
}

static void test_riscv64(void **state)
{
    check_target("riscv64-linux-gnu", "riscv64-linux-gnu-gcc", "qemu-riscv64",
                 "rv64,v=true,vlen=256");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aarch64),
        cmocka_unit_test(test_riscv64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
