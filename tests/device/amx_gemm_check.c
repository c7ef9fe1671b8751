/* The -p bf16 GEMM's paths side by side on this CPU (issue 26): the
 * runtime's cvrt_gemm_bf16.c, built for the AVX-512 variant into one static
 * program (make amx-gemm-check; tests/device/build.mk), runs random
 * products, ragged M/N/K included, through each path the CPU grants --
 * widen (bf16 B widened into the f32 micro-kernel), dot (AVX512_BF16
 * vdpbf16ps), amx (AMX tdpbf16ps tiles) -- and prints each path's max
 * error against a double-precision reference (of f32 A for widen, of A
 * rounded to bf16 for dot and amx, both relative to the reference's
 * largest magnitude) and its GFLOP/s (best of the repetitions).
 *
 *   amx_gemm_check [--quick] [--threads T] [--reps R] [M K N ...]
 *
 * Exit status 1 when a path's error is over its bound or when the
 * automatic choice is AMX on a CPU whose /proc/cpuinfo has no amx_bf16
 * (the AMX code must never run there); 0 otherwise.  On a machine without
 * AMX the amx column says "not granted". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/runtime/cvrt_gemm.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double now(void)
{
    struct cvrt_timespec ts;
    clock_gettime(CVRT_CLOCK_MONOTONIC, &ts);
    return (double)ts.sec + (double)ts.nsec * 1e-9;
}

/* Whether /proc/cpuinfo's flags name amx_bf16. */
static int cpuinfo_amx(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int have = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0 && strstr(line, " amx_bf16"))
            have = 1;
    if (f)
        fclose(f);
    return have;
}

static const char *const path_names[] = {"widen", "dot", "amx"};

/* One product through each path; 0 ok, 1 an error over its bound. */
static int check(cvrt_ctx *rt, int64_t M, int64_t K, int64_t N, int reps)
{
    int64_t k2p = cvrt_bf16_k2p(K), np = (N + CVRT_PB - 1) / CVRT_PB;
    float *a = calloc((size_t)(M * K), 4), *c = calloc((size_t)(M * N), 4);
    uint16_t *b = calloc((size_t)(K * N), 2);
    uint16_t *pairs = calloc((size_t)(np * k2p * CVRT_PB * 2), 2);
    double *ref = calloc((size_t)(M * N), 8), *refr = calloc((size_t)(M * N), 8);
    if (!a || !c || !b || !pairs || !ref || !refr) {
        printf("out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < M * K; i++)
        a[i] = frand();
    for (int64_t i = 0; i < K * N; i++)
        b[i] = to_bf16(frand());
    /* The pair form, as codegen_half.c's cv_cg_bf16_pairs packs it. */
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            pairs[(((j / CVRT_PB) * k2p + k / 2) * CVRT_PB + j % CVRT_PB) * 2 + k % 2] = b[k * N + j];
    double big = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, sr = 0;
            for (int64_t k = 0; k < K; k++) {
                double w = from_bf16(b[k * N + j]);
                s += (double)a[i * K + k] * w;
                sr += (double)from_bf16(to_bf16(a[i * K + k])) * w;
            }
            ref[i * N + j] = s;
            refr[i * N + j] = sr;
            big = fabs(s) > big ? fabs(s) : big;
        }
    int bad = 0;
    int64_t auto_path = cvrt_gemm_bf16_pick(K, -1);
    printf("M %5lld K %5lld N %5lld  auto %-5s", (long long)M, (long long)K, (long long)N,
           M < cvrt_gemm_min_rows() || M == 1 ? "rows" : path_names[auto_path]);
    for (int64_t want = CVRT_BF_WIDEN; want <= CVRT_BF_AMX; want++) {
        int64_t got = cvrt_gemm_bf16_pick(K, want);
        if (got != want) {
            printf("  %s: not granted", path_names[want]);
            continue;
        }
        cvrt_gemm_job j = {.M = M, .N = N, .K = K, .alpha = 1, .a = a, .ars = K, .acs = 1,
                           .bkind = CVRT_B_STRIDED, .bpb = (const uint32_t *)(void *)pairs,
                           .bfpath = got, .c = c, .ldc = N};
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            cvrt_gemm_bf16_run(rt, &j);
            double t = now() - t0;
            best = t < best ? t : best;
        }
        /* Few rows always widen (the dot products along the panels). */
        int rounded = got != CVRT_BF_WIDEN && !(M < cvrt_gemm_min_rows() || M == 1);
        const double *want_ref = rounded ? refr : ref;
        double err = 0;
        for (int64_t i = 0; i < M * N; i++) {
            double e = fabs((double)c[i] - want_ref[i]);
            err = e > err || e != e ? e : err;
        }
        double rel = err / (big > 0 ? big : 1);
        int over = !(rel <= 1e-5);
        bad |= over;
        printf("  %s: err %.1e %6.1f GFLOP/s%s", path_names[want], rel,
               2.0 * (double)M * (double)N * (double)K / best * 1e-9, over ? " BAD" : "");
    }
    printf("\n");
    free(a), free(c), free(b), free(pairs), free(ref), free(refr);
    return bad;
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 5, quick = 0, bad = 0;
    int64_t dims[64];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = (int)strtol(argv[++i], NULL, 10);
        else if (n < 63)
            dims[n++] = strtol(argv[i], NULL, 10);
    }
    static const int64_t full[] = {1, 768, 2304,  3, 37, 45,      13, 37, 45,   29, 131, 70,
                                   33, 17, 31,    64, 4096, 64,   200, 1000, 333,
                                   128, 768, 768, 128, 768, 3072, 128, 3072, 768, 384, 768, 768};
    static const int64_t small[] = {1, 37, 45, 3, 70, 33, 13, 37, 45, 29, 131, 70, 64, 700, 97};
    const int64_t *list = n >= 3 ? dims : quick ? small : full;
    int count = n >= 3 ? n / 3 : quick ? 5 : 11;
    if (quick)
        reps = 1;
    cvrt_ctx *rt = cvrt_create(threads);
    if (!rt) {
        printf("cvrt_create failed\n");
        return 1;
    }
    int amx_cpu = cpuinfo_amx(), auto_amx = cvrt_gemm_bf16_pick(768, -1) == CVRT_BF_AMX;
    printf("threads %d; /proc/cpuinfo amx_bf16: %s; automatic path for K=768: %s\n", threads,
           amx_cpu ? "yes" : "no", path_names[cvrt_gemm_bf16_pick(768, -1)]);
    if (auto_amx && !amx_cpu) {
        printf("BAD: AMX chosen on a CPU without amx_bf16\n");
        bad = 1;
    }
    for (int i = 0; i < count; i++)
        bad |= check(rt, list[3 * i], list[3 * i + 1], list[3 * i + 2], reps);
    cvrt_destroy(rt);
    printf("%s\n", bad ? "FAILED" : "ok");
    return bad;
}
