#include "compiler-core/backend/targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/llvm/llvm_backend.h"
#include "compiler-core/cuvil.h"

bool cv_target_is_cuda(const char *name)
{
    const cv_target_desc *t = name ? cv_target_find(name) : NULL;
    return t && strncmp(t->triple, "nvptx", 5) == 0;
}

int cv_target_describe(const char *name, char triple[64], char *features, size_t size, cv_diag *d)
{
    char cpu[64];
    char *native_features = NULL;
    const char *feat;
    const cv_target_desc *t = cv_target_find(name);
    if (t) {
        snprintf(triple, 64, "%s", t->triple);
        snprintf(cpu, sizeof cpu, "%s", t->cpu);
        feat = t->features;
    } else if (strcmp(name, "native") == 0) {
        if (cv_llvm_describe_native(triple, cpu, &native_features, d))
            return -1;
        feat = native_features;
    } else {
        char list[512];
        return cv_diag_fail(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "unknown target '%s'; the targets are %s",
                            name, cv_target_names(list, sizeof list));
    }
    int n = snprintf(features, size, "cpu=%s%s%s", cpu, *feat ? "," : "", feat);
    free(native_features);
    if (n < 0 || (size_t)n >= size)
        return cv_diag_fail(d, CV_E_RESOURCE_LIMIT, (cv_span){0}, "target %s: its feature list is too long",
                            name);
    return 0;
}
