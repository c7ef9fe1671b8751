/* The targets Cuvil compiles for: the one list that `cuvil compile -t`, its
 * --help, the spec loader (CuvilPipeline targets), job messages and the
 * backends read.  schemas/cuvilpipeline.schema.json repeats the names for
 * other tools; tests/unit/spec/test_spec.c checks that it equals this list.
 * Plain data, usable without loading LLVM (cache keys are computed from it
 * on every compile, including cache hits). */
#ifndef CV_COMMON_TARGETS_H
#define CV_COMMON_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cv_target_desc {
    const char *name;        /* "x86_64-avx2": the name -t and specs use */
    const char *triple;      /* LLVM target triple */
    const char *cpu, *features;
    const char *rt_variant;  /* runtime library variant (runtime/) */
    const char *abi;         /* LLVM target ABI, or NULL */
    const char *linker;      /* the C compiler that links its libraries */
} cv_target_desc;

/* Every target name, "native" (this machine's CPU, which only LLVM can
 * describe) last, then NULL. */
extern const char *const cv_target_name_list[];

/* NULL for an unknown name, and for "native". */
const cv_target_desc *cv_target_find(const char *name);
const cv_target_desc *cv_target_at(int i);   /* NULL past the end */
/* Whether name is a target ("native" included). */
bool cv_target_known(const char *name);
/* "x86_64, x86_64-avx2, ..., cuda-sm90, native": every name, into buf. */
const char *cv_target_names(char *buf, size_t size);

#endif
