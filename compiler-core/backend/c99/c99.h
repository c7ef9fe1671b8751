/* The C99 backend's entry points (internal to compiler-core; artifact.c,
 * the tests and the conformance runner use them): a kernel program in,
 * portable C99 source out, for targets LLVM does not serve.
 *
 * What `cuvil compile --emit c` writes (artifact.c):
 *   <name>.h          the artifact's API, the same header as the native one
 *   <name>.c          the kernels, the run function, create/reserve/destroy
 *                     and the few runtime routines the kernels call, all in
 *                     one translation unit (only cv_<name>_* is exported)
 *   <name>_weights.c  the weights as typed const arrays (cv_<name>_w<k>)
 * Build: cc -std=c99 -O2 -c <name>.c <name>_weights.c, link with -lm.  No
 * part of the cuvil tree is needed.  Threads: kernels run serially unless
 * the files are compiled with OpenMP (-fopenmp), which spreads the items of
 * each parallel kernel over the threads given to create (the GEMM and
 * convolution routines themselves stay serial); a shared object built so
 * must never be unloaded (libgomp's idle threads outlive it: link with
 * -Wl,-z,nodelete).  A run allocates nothing once the arena is reserved
 * (create reserves it for static shapes).  Float semantics follow the
 * interpreter provided the code is compiled without -ffast-math and runs in
 * the default rounding mode; integer wrap-around relies on the usual
 * two's-complement conversion of out-of-range unsigned values. */
#ifndef CV_C99_H
#define CV_C99_H

#include <stddef.h>

#include "compiler-core/backend/kernel.h"

typedef struct cv_c99_out {
    char *source;               /* malloc'd: <name>.c */
    size_t source_len;
    char *weights;              /* malloc'd: <name>_weights.c */
    size_t weights_len;
} cv_c99_out;

/* Lowers p (memory planned) to C99 source. */
int cv_c99_generate(const cv_kprog *p, cv_c99_out *out, cv_diag *d);
void cv_c99_out_free(cv_c99_out *o);

/* Compiles <name>.c and <name>_weights.c in dir with the C compiler cc
 * (PATH lookup, no shell) into dir/lib<name>.so with
 *   -std=c99 -Wall -Wextra -Werror -pedantic -O2 -fPIC -shared
 * plus flags[0..n_flags), so that cv_native_open can load it.  *missing is
 * set (nothing reported) when cc is not installed. */
int cv_c99_build_shared(const char *cc, const char *dir, const char *name,
                        const char *const *flags, int n_flags, bool *missing, cv_diag *d);

#endif
