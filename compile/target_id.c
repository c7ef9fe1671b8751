/* What the L2 key says about the target, known without loading the LLVM
 * backend (a cache hit must not pay for libLLVM).  Named targets: the
 * backend's own table (compiler-core/backend/targets.h, plain data).
 * "native": this machine as the kernel describes it (/proc/cpuinfo:
 * vendor, family, model, flags), read from the same CPUID bits LLVM's host
 * detection uses; cv_target_describe would load the LLVM plugin to ask. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "compiler-core/backend/targets.h"
#include "cv_version.h"
#include "compile/internal.h"

const char *cv_compile_llvm_version(void)
{
    return CV_LLVM_VERSION;
}

/* The value of "key : value" if line is that key's line. */
static const char *field(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0)
        return NULL;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ':')
        return NULL;
    for (p++; *p == ' '; p++)
        ;
    return p;
}

static void append(char *buf, size_t size, const char *s)
{
    size_t at = strlen(buf);
    if (at < size)
        snprintf(buf + at, size - at, "%s", s);
}

/* The first processor's identity and flags, as "cpu=host:<id>,+flag,...". */
static int host_features(char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char id[256] = "", flags[8192] = "", line[8192];
    static const char *const idkeys[] = {"vendor_id", "cpu family", "model", "CPU implementer",
                                         "CPU part", "uarch", "isa"};
    while (fgets(line, sizeof line, f) && line[0] != '\n') {
        line[strcspn(line, "\n")] = 0;
        const char *v;
        for (size_t i = 0; i < sizeof idkeys / sizeof idkeys[0]; i++)
            if ((v = field(line, idkeys[i])) != NULL) {
                append(id, sizeof id, id[0] ? "/" : "");
                append(id, sizeof id, v);
            }
        if ((v = field(line, "flags")) || (v = field(line, "Features")))
            snprintf(flags, sizeof flags, "%s", v);
    }
    fclose(f);
    snprintf(out, size, "cpu=host:%s", id);
    char *save = NULL;
    for (char *tok = strtok_r(flags, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        append(out, size, ",+");
        append(out, size, tok);
    }
    return strlen(out) + 1 < size ? 0 : -1;
}

int cv_compile_target_describe(const char *name, cv_compile_target *t, cv_diag *d)
{
    if (strcmp(name, "native") != 0)
        return cv_target_describe(name, t->triple, t->features, sizeof t->features, d);
    struct utsname u;
    if (uname(&u) != 0 || host_features(t->features, sizeof t->features) != 0)
        return cv_diag_fail(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "native: cannot describe this machine's "
                            "CPU (/proc/cpuinfo)");
    snprintf(t->triple, sizeof t->triple, "%.40s-unknown-linux-gnu", u.machine);
    return 0;
}
