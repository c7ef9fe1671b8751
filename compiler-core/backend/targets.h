/* The -t targets: names, triples, CPUs and features.  Plain data, usable
 * without loading LLVM (cache keys are computed from it on every compile,
 * including cache hits). */
#ifndef CV_TARGETS_H
#define CV_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"

typedef struct cv_target_desc {
    const char *name, *triple, *cpu, *features, *rt_variant, *abi, *linker;
} cv_target_desc;

/* NULL for an unknown name (and for "native", which only LLVM can answer). */
const cv_target_desc *cv_target_find(const char *name);
const cv_target_desc *cv_target_at(int i);   /* NULL past the end */
/* A cuda-smNN target (the CUDA backend, backend/cuda/). */
bool cv_target_is_cuda(const char *name);

/* What a cache key records about a target: its triple, and "cpu=...,features".
 * "native" loads the LLVM plugin to ask about this machine. */
int cv_target_describe(const char *name, char triple[64], char *features, size_t size, cv_diag *d);

#endif
