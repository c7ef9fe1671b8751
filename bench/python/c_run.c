/* The C side of bench/python: calls cv_<name>_run of lib<name>.so directly
 * (the artifact's C API, docs/artifact-c.md) on one f32 input and one f32
 * output, ITERS times, and prints the mean nanoseconds per call.
 * Usage: c_run LIB.so NAME IN_FLOATS OUT_FLOATS SYM0 ITERS */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: c_run LIB.so NAME IN_FLOATS OUT_FLOATS SYM0 ITERS\n");
        return 2;
    }
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "c_run: %s\n", dlerror());
        return 1;
    }
    char fn[256];
    snprintf(fn, sizeof fn, "cv_%s_create", argv[2]);
    void *(*create)(int) = (void *(*)(int))dlsym(dl, fn);
    snprintf(fn, sizeof fn, "cv_%s_run", argv[2]);
    int (*run)(void *, const void *const *, void *const *, const int64_t *) =
        (int (*)(void *, const void *const *, void *const *, const int64_t *))dlsym(dl, fn);
    long in_n = atol(argv[3]), out_n = atol(argv[4]), iters = atol(argv[6]);
    int64_t sym[1] = {atol(argv[5])};
    float *in = calloc((size_t)in_n, sizeof *in), *out = calloc((size_t)out_n, sizeof *out);
    void *ctx = create ? create(1) : NULL;
    if (!run || !ctx || !in || !out)
        return fprintf(stderr, "c_run: cannot create %s\n", argv[2]), 1;
    for (long i = 0; i < in_n; i++)
        in[i] = (float)(i % 7) * 0.1f;
    const void *ins[1] = {in};
    void *outs[1] = {out};
    run(ctx, ins, outs, sym);
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        if (run(ctx, ins, outs, sym))
            return fprintf(stderr, "c_run: run failed\n"), 1;
    printf("%.1f\n", (now_ns() - t0) / (double)iters);
    return 0;
}
