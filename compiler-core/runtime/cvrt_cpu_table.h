/* The x86 features a CPU check can see, with their cpuid bits: one table
 * for cuvil's check before loading an artifact (backend/cpu_check.c) and
 * the artifact's own in cv_<name>_create (cvrt_cpu.c).  Freestanding. */
#ifndef CVRT_CPU_TABLE_H
#define CVRT_CPU_TABLE_H

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* leaf, subleaf, register (0 eax 1 ebx 2 ecx 3 edx), bit, and the XCR0
 * state the OS must save for it (0x6 SSE/AVX, 0xe6 AVX-512, 0x60000 AMX). */
typedef struct cvrt_cpu_feature {
    const char *name;
    unsigned leaf, sub, reg, bit, xcr0;
} cvrt_cpu_feature;

static const cvrt_cpu_feature cvrt_cpu_features[] = {
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
#define CVRT_CPU_N_FEATURES (int)(sizeof cvrt_cpu_features / sizeof cvrt_cpu_features[0])

/* The entry named name[0..len), or 0. */
static inline const cvrt_cpu_feature *cvrt_cpu_feature_find(const char *name, unsigned long len)
{
    for (int i = 0; i < CVRT_CPU_N_FEATURES; i++) {
        const char *f = cvrt_cpu_features[i].name;
        unsigned long k = 0;
        while (k < len && f[k] && f[k] == name[k])
            k++;
        if (k == len && !f[k])
            return &cvrt_cpu_features[i];
    }
    return 0;
}

/* Whether this CPU, and its OS, offer f. */
static inline int cvrt_cpu_has(const cvrt_cpu_feature *f)
{
#if defined(__x86_64__)
    unsigned r[4] = {0, 0, 0, 0};
    if (__get_cpuid_max(f->leaf & 0x80000000u, 0) < f->leaf ||
        !__get_cpuid_count(f->leaf, f->sub, &r[0], &r[1], &r[2], &r[3]) || !(r[f->reg] >> f->bit & 1))
        return 0;
    if (!f->xcr0)
        return 1;
    unsigned a, b, c, d, lo, hi;
    __cpuid(1, a, b, c, d);
    if (!(c >> 27 & 1))     /* OSXSAVE: xgetbv is usable */
        return 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)a, (void)b, (void)d, (void)hi;
    return (lo & f->xcr0) == f->xcr0;
#else
    (void)f;
    return 0;
#endif
}

#endif
