/* Which x86-64 features an artifact's code needs, and whether this CPU has
 * them: an artifact for x86_64-avx512 run on a CPU without AVX-512 would
 * otherwise die of SIGILL (exit 132, no message).  The manifest records
 * the list (target.requires); `cuvil run/bench/diff` check it before
 * loading the library. */
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "compiler-core/cuvil.h"

/* The features a check can see, with their cpuid bits (leaf, subleaf,
 * register: 0 eax 1 ebx 2 ecx 3 edx, bit) and the XCR0 state they need the
 * OS to save (0x6 SSE/AVX, 0xe6 AVX-512, 0x60000 AMX). */
static const struct cpu_feature {
    const char *name;
    unsigned leaf, sub, reg, bit, xcr0;
} features[] = {
    {"sse3", 1, 0, 2, 0, 0},        {"ssse3", 1, 0, 2, 9, 0},
    {"fma", 1, 0, 2, 12, 0x6},      {"cx16", 1, 0, 2, 13, 0},
    {"sse4.1", 1, 0, 2, 19, 0},     {"sse4.2", 1, 0, 2, 20, 0},
    {"movbe", 1, 0, 2, 22, 0},      {"popcnt", 1, 0, 2, 23, 0},
    {"avx", 1, 0, 2, 28, 0x6},      {"f16c", 1, 0, 2, 29, 0x6},
    {"bmi", 7, 0, 1, 3, 0},         {"avx2", 7, 0, 1, 5, 0x6},
    {"bmi2", 7, 0, 1, 8, 0},        {"avx512f", 7, 0, 1, 16, 0xe6},
    {"avx512dq", 7, 0, 1, 17, 0xe6}, {"avx512cd", 7, 0, 1, 28, 0xe6},
    {"avx512bw", 7, 0, 1, 30, 0xe6}, {"avx512vl", 7, 0, 1, 31, 0xe6},
    {"avx512vbmi", 7, 0, 2, 1, 0xe6}, {"avx512vnni", 7, 0, 2, 11, 0xe6},
    {"avx512bf16", 7, 1, 0, 5, 0xe6}, {"avx512fp16", 7, 0, 3, 23, 0xe6},
    {"amx-tile", 7, 0, 3, 24, 0x60000}, {"amx-int8", 7, 0, 3, 25, 0x60000},
    {"amx-bf16", 7, 0, 3, 22, 0x60000}, {"lzcnt", 0x80000001, 0, 2, 5, 0},
};
enum { N_FEATURES = sizeof features / sizeof features[0] };

/* The x86-64 micro-architecture levels of the named targets' CPUs. */
static const char *const level_v2[] = {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16"};
static const char *const level_v3[] = {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt",
                                       "movbe"};
static const char *const level_v4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                                       "avx512vl"};

static const struct cpu_feature *feature(const char *name, size_t len)
{
    for (size_t i = 0; i < N_FEATURES; i++)
        if (strlen(features[i].name) == len && strncmp(features[i].name, name, len) == 0)
            return &features[i];
    return NULL;
}

bool cv_cpu_host_has(const char *name)
{
#if defined(__x86_64__)
    const struct cpu_feature *f = feature(name, strlen(name));
    unsigned r[4] = {0}, max = __get_cpuid_max(f ? f->leaf & 0x80000000u : 0, NULL);
    if (!f || max < f->leaf || !__get_cpuid_count(f->leaf, f->sub, &r[0], &r[1], &r[2], &r[3]))
        return false;
    if (!(r[f->reg] >> f->bit & 1))
        return false;
    if (!f->xcr0)
        return true;
    unsigned a, b, c, d;
    __cpuid(1, a, b, c, d);
    if (!(c >> 27 & 1))     /* OSXSAVE: xgetbv is usable */
        return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)b;
    (void)d;
    (void)hi;
    return (lo & f->xcr0) == f->xcr0;
#else
    (void)name;
    return false;
#endif
}

static void add(const char **out, int *n, int max, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(out[i], name) == 0)
            return;
    if (*n < max)
        out[(*n)++] = name;
}

int cv_cpu_required(const char *cpu, const char *feats, const char **out, int max)
{
    int n = 0;
    bool v4 = strcmp(cpu, "x86-64-v4") == 0, v3 = v4 || strcmp(cpu, "x86-64-v3") == 0;
    bool v2 = v3 || strcmp(cpu, "x86-64-v2") == 0;
    for (size_t i = 0; v2 && i < sizeof level_v2 / sizeof level_v2[0]; i++)
        add(out, &n, max, level_v2[i]);
    for (size_t i = 0; v3 && i < sizeof level_v3 / sizeof level_v3[0]; i++)
        add(out, &n, max, level_v3[i]);
    for (size_t i = 0; v4 && i < sizeof level_v4 / sizeof level_v4[0]; i++)
        add(out, &n, max, level_v4[i]);
    /* "+avx2,-amx-tile,...": LLVM's list for native (and explicit ones). */
    for (const char *p = feats ? feats : ""; *p;) {
        size_t len = strcspn(p, ",");
        const struct cpu_feature *f = *p == '+' ? feature(p + 1, len - 1) : NULL;
        if (f)
            add(out, &n, max, f->name);
        p += len + (p[len] == ',');
    }
    return n;
}

static bool host_has_all(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!cv_cpu_host_has(names[i]))
            return false;
    return true;
}

const char *cv_cpu_host_target(void)
{
    bool v3 = host_has_all(level_v3, sizeof level_v3 / sizeof level_v3[0]);
    if (v3 && host_has_all(level_v4, sizeof level_v4 / sizeof level_v4[0]))
        return "x86_64-avx512";
    return v3 ? "x86_64-avx2" : "x86_64";
}

int cv_cpu_check(const char *target, const char *const *required, int n, const char *where,
                 cv_diag *d)
{
    char missing[512] = "";
    size_t at = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (feature(required[i], strlen(required[i])) && !cv_cpu_host_has(required[i])) {
            at += (size_t)snprintf(missing + at, at < sizeof missing ? sizeof missing - at : 0,
                                   "%s%s", k++ ? ", " : "", required[i]);
            at = at < sizeof missing ? at : sizeof missing - 1;
        }
    if (!k)
        return 0;
    return cv_diag_error(d, CV_E_CPU_FEATURES, (cv_span){.file = where},
                         "this CPU lacks %s, which the artifact (built for %s) needs: compile "
                         "it again with -t native or -t %s", missing, target ? target : "?",
                         cv_cpu_host_target()), -1;
}
