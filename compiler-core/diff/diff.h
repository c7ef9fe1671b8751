/* The per-layer diff (cli/cmd_diff.c drives it) and its ONNX Runtime reference
 * (compiler-core/diff/diff_ort.c). */
#ifndef CV_COMPILER_CORE_DIFF_H
#define CV_COMPILER_CORE_DIFF_H

#include <stdbool.h>

#include "compiler-core/ir/ir.h"

enum { CV_DIFF_MAX = 4096, CV_DIFF_MAX_IN = 64 };

/* Named tensors: one side of the comparison. */
typedef struct cv_diff_side {
    int n;
    const char *name[CV_DIFF_MAX];  /* borrowed, or malloc'd when owns_names */
    cv_tensor t[CV_DIFF_MAX];       /* owned */
    bool owns_names;
    bool by_node;                   /* names are ONNX node labels, not value names */
} cv_diff_side;

/* ONNX Runtime's value of every node's first output of the ONNX model at
 * model, on inputs ins (in graph-input order), into s (by node label).
 * CV5210 when ONNX Runtime is missing or fails. */
int cv_diff_onnxruntime(const char *model, const cv_tensor *ins, int n_in, cv_diff_side *s,
                        cv_diag *d);

#endif
