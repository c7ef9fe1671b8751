#include "compiler-core/backend/targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/llvm/llvm_backend.h"
#include "compiler-core/cuvil.h"

static const cv_target_desc targets[] = {
    {"x86_64", "x86_64-unknown-linux-gnu", "x86-64", "", "x86_64", NULL, "cc"},
    {"x86_64-avx2", "x86_64-unknown-linux-gnu", "x86-64-v3", "", "x86_64_avx2", NULL, "cc"},
    {"x86_64-avx512", "x86_64-unknown-linux-gnu", "x86-64-v4", "", "x86_64_avx512", NULL, "cc"},
    {"aarch64-linux-gnu", "aarch64-unknown-linux-gnu", "generic", "+neon", "aarch64", NULL,
     "aarch64-linux-gnu-gcc"},
    {"riscv64-linux-gnu", "riscv64-unknown-linux-gnu", "generic-rv64", "+m,+a,+f,+d,+c,+v",
     "riscv64", "lp64d", "riscv64-linux-gnu-gcc"},
    /* CUDA (backend/cuda/): PTX for the SM, in an x86-64 host library. */
    {"cuda-sm80", "nvptx64-nvidia-cuda", "sm_80", "+ptx70", "cuda", NULL, "cc"},
    {"cuda-sm89", "nvptx64-nvidia-cuda", "sm_89", "+ptx78", "cuda", NULL, "cc"},
    {"cuda-sm90", "nvptx64-nvidia-cuda", "sm_90", "+ptx78", "cuda", NULL, "cc"},
};

const cv_target_desc *cv_target_at(int i)
{
    return (i >= 0 && (size_t)i < sizeof targets / sizeof targets[0]) ? &targets[i] : NULL;
}

const cv_target_desc *cv_target_find(const char *name)
{
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (strcmp(targets[i].name, name) == 0)
            return &targets[i];
    return NULL;
}

bool cv_target_known(const char *name)
{
    return strcmp(name, "native") == 0 || cv_target_find(name) != NULL;
}

const char *cv_target_names(char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof targets / sizeof targets[0] && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s, ", targets[i].name);
    if (at < size)
        snprintf(buf + at, size - at, "native");
    return buf;
}

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
