/* The conformance runner's --backend cuda (onnx_cuda.c): step 1 compiles
 * every test for the GPU into a bundle, step 2 reads the GPU's log. */
#ifndef CV_CONFORMANCE_ONNX_CUDA_H
#define CV_CONFORMANCE_ONNX_CUDA_H

#include "compiler-core/cuvil.h"
#include "tests/conformance/conformance.h"

const char *conf_cuda_target(void);
/* Creates the bundle directory with an empty case list. */
int conf_cuda_begin(const char *bundle);
/* The data set directory the next compile and outputs belong to. */
void conf_cuda_set(const char *set_dir);
/* Compiles m for the GPU; in stays borrowed until conf_cuda_outputs. */
int conf_cuda_compile(cv_module *m, const cv_tensor *in, int n, result *r, cv_diag *d);
/* Writes the case with its expected outputs and lists it. */
int conf_cuda_outputs(const cv_tensor *want, int n, result *r);
/* Step 1's outcome per test: BUNDLE/tests.tsv. */
int conf_cuda_save(const char *bundle, const test *t, int n);
/* Step 2: the statuses of t from tests.tsv and the GPU log. */
int conf_cuda_merge(const char *bundle, const char *log, test *t, int n);

#endif
