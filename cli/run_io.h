/* Model inputs from .npy files, shared by `cuvil run` and `cuvil diff`. */
#ifndef CV_CLI_RUN_IO_H
#define CV_CLI_RUN_IO_H

#include "compiler-core/ir/ir.h"

/* Reads file into *t (owned by the caller: cv_tensor_free) as model input
 * %name of dtype want; float64 files are rounded to a float input.  sig:
 * the input's type as the model declares it ("f32[batch,4]"), for errors. */
int cv_cli_read_input(const char *file, const char *name, cv_dtype want, const char *sig,
                      cv_tensor *t, cv_diag *d);

struct cv_native;
/* An error (CV2024) for a --input name the artifact has no input of,
 * listing the inputs it has; 0 when every name is known. */
int cv_cli_check_input_names(const char *model, const char *const *names, int n,
                             const struct cv_native *nat, cv_diag *d);

#endif
