/* The per-layer diff (cli/cmd_diff.c drives it) and its ONNX Runtime reference
 * (compiler-core/diff/diff_ort.c). */
#ifndef CV_COMPILER_CORE_DIFF_H
#define CV_COMPILER_CORE_DIFF_H

#include <stdbool.h>

#include "compiler-core/ir/ir.h"

/* Named tensors: one side of the comparison, as many as the model has
 * (sized by cv_diff_side_reserve, no fixed cap). */
typedef struct cv_diff_side {
    int n, cap;
    const char **name;              /* owned array; names borrowed, or malloc'd when
                                       owns_names */
    cv_tensor *t;                   /* owned */
    bool owns_names;
    bool by_node;                   /* names are ONNX node labels, not value names */
} cv_diff_side;

/* Room for n tensors (zeroed), or CV9002 in d. */
int cv_diff_side_reserve(cv_diff_side *s, int n, cv_diag *d);
/* Frees the tensors, the names it owns and the arrays; s is empty after. */
void cv_diff_side_free(cv_diff_side *s);

/* ONNX Runtime's value of every node's first output of the ONNX model at
 * model, on inputs ins (in graph-input order), into s (by node label).
 * CV5210 when ONNX Runtime is missing or fails. */
int cv_diff_onnxruntime(const char *model, const cv_tensor *ins, int n_in, cv_diff_side *s,
                        cv_diag *d);

#endif
