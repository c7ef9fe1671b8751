/* The target table of common/targets.h.  One X-macro row a target makes
 * both the descriptions and the list of names. */
#include "common/targets.h"

#include <stdio.h>
#include <string.h>

/* name, triple, cpu, features, runtime variant, abi, linker */
#define CV_TARGETS(X) \
    X("x86_64", "x86_64-unknown-linux-gnu", "x86-64", "", "x86_64", NULL, "cc") \
    X("x86_64-avx2", "x86_64-unknown-linux-gnu", "x86-64-v3", "", "x86_64_avx2", NULL, "cc") \
    X("x86_64-avx512", "x86_64-unknown-linux-gnu", "x86-64-v4", "", "x86_64_avx512", NULL, "cc") \
    X("aarch64-linux-gnu", "aarch64-unknown-linux-gnu", "generic", "+neon", "aarch64", NULL, \
      "aarch64-linux-gnu-gcc") \
    X("riscv64-linux-gnu", "riscv64-unknown-linux-gnu", "generic-rv64", "+m,+a,+f,+d,+c,+v", \
      "riscv64", "lp64d", "riscv64-linux-gnu-gcc") \
    /* CUDA (compiler-core/backend/cuda/): PTX for the SM, in an x86-64 host library. */ \
    X("cuda-sm80", "nvptx64-nvidia-cuda", "sm_80", "+ptx70", "cuda", NULL, "cc") \
    X("cuda-sm89", "nvptx64-nvidia-cuda", "sm_89", "+ptx78", "cuda", NULL, "cc") \
    X("cuda-sm90", "nvptx64-nvidia-cuda", "sm_90", "+ptx78", "cuda", NULL, "cc")

#define CV_TARGET_DESC_(name, triple, cpu, features, rt, abi, linker) \
    {name, triple, cpu, features, rt, abi, linker},
#define CV_TARGET_NAME_(name, ...) name,
static const cv_target_desc targets[] = {CV_TARGETS(CV_TARGET_DESC_)};
const char *const cv_target_name_list[] = {CV_TARGETS(CV_TARGET_NAME_) "native", NULL};

#define N_TARGETS (sizeof targets / sizeof targets[0])

const cv_target_desc *cv_target_at(int i)
{
    return (i >= 0 && (size_t)i < N_TARGETS) ? &targets[i] : NULL;
}

const cv_target_desc *cv_target_find(const char *name)
{
    for (size_t i = 0; name && i < N_TARGETS; i++)
        if (strcmp(targets[i].name, name) == 0)
            return &targets[i];
    return NULL;
}

bool cv_target_known(const char *name)
{
    return name && (strcmp(name, "native") == 0 || cv_target_find(name) != NULL);
}

const char *cv_target_names(char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; cv_target_name_list[i] && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? ", " : "",
                               cv_target_name_list[i]);
    return buf;
}
