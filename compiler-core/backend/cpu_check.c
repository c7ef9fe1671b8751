/* Which x86-64 features an artifact's code needs, and whether this CPU has
 * them: an artifact for x86_64-avx512 run on a CPU without AVX-512 would
 * otherwise die of SIGILL (exit 132, no message).  The manifest records
 * the list (target.requires); `cuvil run/bench/diff` check it before
 * loading the library. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/cuvil.h"
#include "compiler-core/runtime/cvrt_cpu_table.h"

/* The x86-64 micro-architecture levels of the named targets' CPUs. */
static const char *const level_v2[] = {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16"};
static const char *const level_v3[] = {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt",
                                       "movbe"};
static const char *const level_v4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                                       "avx512vl"};

static const cvrt_cpu_feature *feature(const char *name, size_t len)
{
    return cvrt_cpu_feature_find(name, len);
}

bool cv_cpu_host_has(const char *name)
{
    const cvrt_cpu_feature *f = feature(name, strlen(name));
    return f && cvrt_cpu_has(f);
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
        const cvrt_cpu_feature *f = *p == '+' ? feature(p + 1, len - 1) : NULL;
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
    return cv_diag_fail(d, CV_E_CPU_FEATURES_MISSING, (cv_span){.file = where},
                        "this CPU lacks %s, which the artifact (built for %s) needs: compile "
                        "it again with -t native or -t %s", missing, target ? target : "?",
                        cv_cpu_host_target());
}
