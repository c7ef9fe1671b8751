/* The artifact's own CPU check: cv_<name>_create calls cvrt_cpu_check with
 * the features its target needs before anything else, so that an artifact
 * for x86_64-avx512 loaded on a CPU without AVX-512 returns NULL and says
 * why (cv_<name>_last_error: CV5036) instead of dying of SIGILL.
 *
 * The check itself must not use those features: optnone keeps the
 * optimiser (which runs with the target's features) from vectorising it,
 * and it touches only integers. */
#include "compiler-core/runtime/cvrt.h"
#include "compiler-core/runtime/cvrt_cpu_table.h"

static char message[512];
static int code;

__attribute__((optnone, noinline))
static unsigned long append(unsigned long at, const char *s, unsigned long n)
{
    for (unsigned long i = 0; i < n && s[i] && at + 1 < sizeof message; i++)
        message[at++] = s[i];
    message[at] = 0;
    return at;
}

__attribute__((optnone, noinline))
int cvrt_cpu_check(const char *required, const char *target)
{
    unsigned long at = append(0, "this CPU lacks ", 200);
    int missing = 0;
    for (const char *p = required; *p;) {
        unsigned long len = 0;
        while (p[len] && p[len] != ',')
            len++;
        const cvrt_cpu_feature *f = cvrt_cpu_feature_find(p, len);
        if (f && !cvrt_cpu_has(f)) {
            if (missing++)
                at = append(at, ", ", 200);
            at = append(at, p, len);
        }
        p += len + (p[len] == ',');
    }
    if (!missing)
        return 0;
    at = append(at, ", which the artifact (built for ", 200);
    at = append(at, target, 64);
    append(at, ") needs: compile it again with -t native", 200);
    code = 5036;
    return -1;
}

int cvrt_cpu_last_error(const char **msg)
{
    if (msg)
        *msg = code ? message : 0;
    return code;
}
