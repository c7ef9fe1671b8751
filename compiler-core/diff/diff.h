/* The per-layer diff: both sides run and compared op by op
 * (compiler-core/diff/diff_compare.c), the ONNX Runtime reference
 * (diff_ort.c); `cuvil diff` (cli/cmd_diff.c) parses arguments and prints. */
#ifndef CV_COMPILER_CORE_DIFF_H
#define CV_COMPILER_CORE_DIFF_H

#include <stdbool.h>

#include "compiler-core/ir/ir.h"
#include "symbols/symbols.h"

struct cv_native;

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

/* Every output of the opened artifact n (a build with dump_values: each
 * kernel's result is an output) on ins, into s by value name. */
int cv_diff_native(struct cv_native *n, const cv_tensor *ins, int n_in, cv_diff_side *s,
                   cv_diag *d);
/* The reference interpreter on the model file as written, every op's results
 * returned, into s by value name; *keep owns the names (cv_module_free). */
int cv_diff_interp(const char *model, const cv_tensor *ins, int n_in, cv_diff_side *s,
                   cv_module **keep, cv_diag *d);

/* One op whose result both sides have. */
typedef struct cv_diff_row {
    int op;                 /* index in the symbol map */
    const char *value;      /* its result's name (the map's) */
    double max_abs, rel;    /* rel: max_abs over the reference's largest |value| */
    bool deviates;          /* beyond atol + rtol x |reference| (or NaN on one side) */
    bool shape_differs;     /* not compared */
} cv_diff_row;

typedef struct cv_diff_rows {
    cv_diff_row *row;       /* owned (free), in program order */
    int n;
    int first;              /* the first deviating op, or -1 */
} cv_diff_rows;

/* The rows of build against ref over the map's ops (ref by value name, or
 * by ONNX node label when ref->by_node).  CV9002 when out of memory. */
int cv_diff_compare(const cv_symmap *m, const cv_diff_side *build, const cv_diff_side *ref,
                    double atol, double rtol, cv_diff_rows *out, cv_diag *d);

#endif
