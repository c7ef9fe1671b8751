/* Shared by the CUDA backend's unit tests (test_cuda.c, test_cuda_graph.c):
 * every group of tests/gpu/cuda_cases.h built into one model and compiled
 * for cuda-sm90 once per test binary (the group setup), and the stand-in
 * driver (tests/gpu/fake_libcuda.c, $CUVIL_BUILD/tools/libcuda-fake.so)
 * that runs artifacts without a GPU. */
#ifndef CV_TEST_CUDA_UTIL_H
#define CV_TEST_CUDA_UTIL_H

#include <dlfcn.h>
#include <unistd.h>

#include "tests/gpu/cuda_cases.h"

/* Every helper may go unused in one test file or another. */
#define CT_FN static __attribute__((unused))

/* LeakSanitizer (GCC 12) records a bogus dynamic-TLS range for the
 * artifacts these tests dlopen and dlclose by the dozen (LSAN_OPTIONS=
 * verbosity=1 shows "DTLS 10 at 0x558-0x300000165a"), and its tracer then
 * crashes at exit reading it, every run.  Leaks are still checked; only
 * thread-local storage is not scanned for pointers, which could report a
 * leak too many, never hide one. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "use_tls=0";
}

static char *g_dirs[CUDA_N_GROUPS];  /* each group's cuda-sm90 artifact */
static bk_model g_models[CUDA_N_GROUPS];

CT_FN char *read_in(const char *dir, const char *name)
{
    char *path = cv_tmpdir_path(dir, name);
    size_t len;
    char *s = cv_tmpdir_read_file(path, &len);
    free(path);
    return s;
}

CT_FN int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

CT_FN char *compile(cv_module *m, const char *target)
{
    char msg[2048] = "";
    char *dir = bk_compile(m, target, 2, CV_EMIT_SO | CV_EMIT_H, msg, sizeof msg);
    if (!dir)
        fail_msg("%s: %s", target, msg);
    return dir;
}

CT_FN int setup(void **state)
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

CT_FN int teardown(void **state)
{
    for (int g = 0; g < CUDA_N_GROUPS; g++) {
        if (g_dirs[g])
            cv_tmpdir_remove(g_dirs[g]);
        bk_model_free(&g_models[g]);
    }
    return 0;
}

/* Opens the artifact with the driver at `driver`; returns the first error
 * code (0 when it opened). */
CT_FN int open_code(const char *dir, const char *driver, cv_native **out, char *msg, size_t size)
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

CT_FN const char *fake_driver(void)
{
    static char path[4096];
    const char *b = getenv("CUVIL_BUILD");
    snprintf(path, sizeof path, "%s/tools/libcuda-fake.so", b ? b : "build");
    return access(path, R_OK) == 0 ? path : NULL;
}

/* The stand-in driver loaded on its own (dlclose it), and one of its
 * inspection functions in *fn. */
CT_FN void *fake_open(const char *fake, const char *sym, void **fn)
{
    void *dl = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    *fn = dlsym(dl, sym);
    assert_non_null(*fn);
    return dl;
}

#endif
