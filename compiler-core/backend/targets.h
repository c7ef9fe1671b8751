/* What the backends add to the target table (common/targets.h): CUDA or
 * not, and the triple and features a cache key records. */
#ifndef CV_TARGETS_H
#define CV_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "common/targets.h"

/* A cuda-smNN target (the CUDA backend, backend/cuda/). */
bool cv_target_is_cuda(const char *name);

/* What a cache key records about a target: its triple, and "cpu=...,features".
 * "native" loads the LLVM plugin to ask about this machine. */
int cv_target_describe(const char *name, char triple[64], char *features, size_t size, cv_diag *d);

#endif
