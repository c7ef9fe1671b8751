/* Model inputs from .npy files, shared by `cuvil run` and `cuvil diff`. */
#ifndef CV_CLI_RUN_IO_H
#define CV_CLI_RUN_IO_H

#include "compiler-core/ir/ir.h"

/* Reads file into *t (owned by the caller: cv_tensor_free) as model input
 * %name of dtype want; float64 files are rounded to a float input. */
int cv_cli_read_input(const char *file, const char *name, cv_dtype want, cv_tensor *t,
                      cv_diag *d);

#endif
