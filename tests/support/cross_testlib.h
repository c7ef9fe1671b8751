/* Shared by the cross-target tests: a model compiled for aarch64-linux-gnu
 * or riscv64-linux-gnu (rv64gcv), its static library linked into a small
 * driver by Debian's cross gcc and run ONCE under qemu-user, however many
 * inputs and outputs it has (a test merges many cases into one model so
 * that one compile, one link and one emulator start serve them all).
 *
 * The driver reads the inputs back to back from in.bin and writes the
 * outputs back to back to out.bin; the byte sizes and the symbolic dims
 * come in sizes.txt ("n_in size... n_out size... n_syms dim..."). */
#ifndef CV_TEST_CROSS_UTIL_H
#define CV_TEST_CROSS_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "compiler-core/backend/artifact_internal.h"
#include "compiler-core/cuvil.h"
#include "tests/support/tmpdir.h"

#define XC_FN static __attribute__((unused))

typedef struct xc_target {
    const char *name, *gcc, *qemu, *sysroot, *cpu;
} xc_target;

static const xc_target xc_aarch64 = {"aarch64-linux-gnu", "aarch64-linux-gnu-gcc", "qemu-aarch64",
                                     "/usr/aarch64-linux-gnu", NULL};
static const xc_target xc_riscv64 = {"riscv64-linux-gnu", "riscv64-linux-gnu-gcc", "qemu-riscv64",
                                     "/usr/riscv64-linux-gnu", "rv64,v=true,vlen=256"};

static const char xc_driver_c[] =
    "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "void *CREATE(int); int RUN(void *, const void *const *, void *const *, const int64_t *);\n"
    "void DESTROY(void *);\n"
    "static long num(FILE *f) { long v; return fscanf(f, \"%ld\", &v) == 1 ? v : -1; }\n"
    "int main(int argc, char **argv) {\n"
    "  if (argc != 4) return 1;\n"
    "  FILE *s = fopen(argv[3], \"r\"), *f = fopen(argv[1], \"rb\");\n"
    "  if (!s || !f) return 2;\n"
    "  long ni = num(s); void **in = calloc((size_t)ni + 1, sizeof *in);\n"
    "  for (long i = 0; i < ni; i++) { long n = num(s); in[i] = malloc((size_t)n + 1);\n"
    "    if (n < 0 || fread(in[i], 1, (size_t)n, f) != (size_t)n) return 2; }\n"
    "  fclose(f);\n"
    "  long no = num(s); void **out = calloc((size_t)no + 1, sizeof *out);\n"
    "  long *osz = calloc((size_t)no + 1, sizeof *osz);\n"
    "  for (long i = 0; i < no; i++) { osz[i] = num(s); out[i] = malloc((size_t)osz[i] + 1); }\n"
    "  long ns = num(s); int64_t *sym = calloc((size_t)ns + 1, sizeof *sym);\n"
    "  for (long i = 0; i < ns; i++) sym[i] = num(s);\n"
    "  fclose(s);\n"
    "  void *ctx = CREATE(2);\n"
    "  if (!ctx || RUN(ctx, (const void *const *)in, out, sym)) return 3;\n"
    "  f = fopen(argv[2], \"wb\");\n"
    "  for (long i = 0; i < no; i++) fwrite(out[i], 1, (size_t)osz[i], f);\n"
    "  fclose(f); DESTROY(ctx); return 0;\n"
    "}\n";

XC_FN bool xc_on_path(const char *prog)
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

/* Whether t's cross gcc and qemu are installed; prints why not. */
XC_FN bool xc_available(const xc_target *t)
{
    if (xc_on_path(t->gcc) && xc_on_path(t->qemu))
        return true;
    printf("skipping %s: %s or %s is not installed (make deps installs gcc-%s and qemu-user)\n",
           t->name, t->gcc, t->qemu, t->name);
    return false;
}

static int xc_fail(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), unused));
XC_FN int xc_fail(char *msg, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return -1;
}

/* The symbolic dims in the artifact's order (first use in the inputs),
 * bound from the input tensors' shapes. */
XC_FN int xc_bind_syms(const cv_func *fn, const cv_tensor *ins, int64_t *syms, int max)
{
    const char *names[256];
    int ns = 0;
    for (int i = 0; i < fn->n_inputs; i++)
        for (int k = 0; k < fn->inputs[i]->type.shape.rank; k++) {
            cv_dim dk = fn->inputs[i]->type.shape.d[k];
            const char *s = cv_dim_is_symbol(dk) ? dk.sym : NULL;
            bool seen = false;
            for (int j = 0; s && j < ns; j++)
                seen |= strcmp(names[j], s) == 0;
            if (s && !seen && ns < max && ns < 256) {
                names[ns] = s;
                syms[ns++] = ins[i].dims[k];
            }
        }
    return ns;
}

/* in.bin and sizes.txt for the driver. */
XC_FN int xc_write_inputs(const char *dir, const cv_func *fn, const cv_tensor *ins, int n_ins,
                          const cv_tensor *want, int n_out)
{
    char *inp = cv_fs_join(dir, "in.bin"), *szp = cv_fs_join(dir, "sizes.txt");
    FILE *f = fopen(inp, "wb"), *s = fopen(szp, "w");
    int rc = f && s ? 0 : -1;
    if (rc == 0) {
        fprintf(s, "%d\n", n_ins);
        for (int i = 0; i < n_ins; i++) {
            size_t nb = cv_tensor_nbytes(&ins[i]);
            fprintf(s, "%zu\n", nb);
            if (nb && fwrite(ins[i].data, 1, nb, f) != nb)
                rc = -1;
        }
        fprintf(s, "%d\n", n_out);
        for (int i = 0; i < n_out; i++)
            fprintf(s, "%zu\n", cv_tensor_nbytes(&want[i]));
        int64_t syms[256];
        int ns = xc_bind_syms(fn, ins, syms, 256);
        fprintf(s, "%d\n", ns);
        for (int i = 0; i < ns; i++)
            fprintf(s, "%lld\n", (long long)syms[i]);
    }
    if (f && fclose(f))
        rc = -1;
    if (s && fclose(s))
        rc = -1;
    free(inp);
    free(szp);
    return rc;
}

/* Reads out.bin into got[] (allocated with want[]'s dtypes and shapes). */
XC_FN int xc_read_outputs(const char *dir, const cv_tensor *want, int n_out, cv_tensor *got,
                          char *msg, size_t size)
{
    char *outp = cv_fs_join(dir, "out.bin"), *bytes = NULL;
    size_t len = 0, off = 0;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_fs_read_file(outp, 1u << 30, &bytes, &len, &d) ? -1 : 0;
    for (int i = 0; rc == 0 && i < n_out; i++) {
        size_t nb = cv_tensor_nbytes(&want[i]);
        if (cv_tensor_alloc(&got[i], want[i].dtype, want[i].rank, want[i].dims) || off + nb > len)
            rc = -1;
        else if (nb)
            memcpy(got[i].data, bytes + off, nb);
        off += nb;
    }
    if (rc == 0 && off != len)
        rc = -1;
    if (rc)
        xc_fail(msg, size, "out.bin holds %zu bytes, not the %zu the outputs need", len, off);
    free(bytes);
    free(outp);
    cv_diag_free(&d);
    return rc;
}

/* Compiles m's function for t at -Oopt into a temporary directory, links
 * its static library with the driver, runs it once under qemu on ins[] and
 * reads its n_out outputs into got[] (shapes and dtypes of want[]). */
XC_FN int xc_run(const xc_target *t, cv_module *m, int opt, const cv_tensor *ins, int n_ins,
                 const cv_tensor *want, int n_out, cv_tensor *got, char *msg, size_t size)
{
    char *dir = cv_tmpdir_make("cross");
    if (!dir)
        return xc_fail(msg, size, "mkdtemp failed");
    cv_compile_opts o = {.target = t->name, .opt_level = opt, .emit = CV_EMIT_A, .out_dir = dir};
    cv_compile_info info;
    cv_diag d;
    cv_diag_init(&d);
    int rc = 0;
    if (cv_compile_native(m, &o, &info, &d)) {
        rc = xc_fail(msg, size, "compile for %s failed: %s", t->name,
                     d.n ? d.v[0].msg : "no diagnostic");
        goto done;
    }
    char lib[160], create[192], run[192], destroy[192], out[8192];
    snprintf(lib, sizeof lib, "lib%s.a", info.name);
    snprintf(create, sizeof create, "-DCREATE=cv_%s_create", info.name);
    snprintf(run, sizeof run, "-DRUN=cv_%s_run", info.name);
    snprintf(destroy, sizeof destroy, "-DDESTROY=cv_%s_destroy", info.name);
    char *drv = cv_fs_join(dir, "driver.c"), *exe = cv_fs_join(dir, "driver");
    char *libp = cv_fs_join(dir, lib), *inp = cv_fs_join(dir, "in.bin");
    char *outp = cv_fs_join(dir, "out.bin"), *szp = cv_fs_join(dir, "sizes.txt");
    char *cc[] = {(char *)t->gcc, "-O1", create, run, destroy, drv, libp, "-lm", "-lpthread",
                  "-o", exe, NULL};
    char *qemu[12];
    int a = 0;
    qemu[a++] = (char *)t->qemu;
    qemu[a++] = "-L";
    qemu[a++] = (char *)t->sysroot;
    if (t->cpu) {
        qemu[a++] = "-cpu";
        qemu[a++] = (char *)t->cpu;
    }
    qemu[a++] = exe;
    qemu[a++] = inp;
    qemu[a++] = outp;
    qemu[a++] = szp;
    qemu[a] = NULL;
    if (cv_tmpdir_write(dir, "driver.c", xc_driver_c, strlen(xc_driver_c)))
        rc = xc_fail(msg, size, "cannot write driver.c");
    else if (cv_spawn_capture(cc, out, sizeof out) != 0)
        rc = xc_fail(msg, size, "%s failed: %s", t->gcc, out);
    else if (xc_write_inputs(dir, m->funcs[0], ins, n_ins, want, n_out))
        rc = xc_fail(msg, size, "cannot write the driver's inputs");
    else if ((rc = cv_spawn_capture(qemu, out, sizeof out)) != 0)
        rc = xc_fail(msg, size, "%s: the driver exited %d: %s", t->name, rc, out);
    else
        rc = xc_read_outputs(dir, want, n_out, got, msg, size);
    free(drv);
    free(exe);
    free(libp);
    free(inp);
    free(outp);
    free(szp);
done:
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
    return rc;
}

#endif
