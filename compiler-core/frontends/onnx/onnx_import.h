/* The ONNX front end: turns an ONNX ModelProto into a CU-IR module.
 *
 * Every node becomes zero or more CU-IR ops carrying loc("<node name>")
 * (or loc("op#<index>") for unnamed nodes).  Shape arithmetic on values
 * known at import time (Shape, Gather, Concat, Constant, Range, ...) is
 * folded into constants and attributes; data-dependent shapes are refused.
 * Diagnostic codes: CV1301-1349 (protobuf/format), CV2301-2349 (names and
 * types), CV3301-3349 (shapes), CV4301-4349 (unsupported ops/features). */
#ifndef CV_ONNX_IMPORT_H
#define CV_ONNX_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "compiler-core/ir/ir.h"

/* Largest model file read without external data (protobuf's own limit). */
#define CV_ONNX_MAX_FILE ((size_t)2 << 30)

/* Reads and imports the model at path; external data is resolved inside
 * the model's directory.  Returns NULL after reporting to d. */
cv_module *cv_onnx_load(const char *path, cv_diag *d);

/* For checking only (cuvil validate): like cv_onnx_load, with the same
 * diagnostics, but the file is mapped and large initializers are neither
 * copied nor read; their params borrow the mapping (which the module owns):
 * read-only, maybe unaligned data, so the module must not be run or
 * compiled. */
cv_module *cv_onnx_load_check(const char *path, cv_diag *d);

/* Imports a model held in memory.  path names it in diagnostics and anchors
 * external data (NULL: external data is refused). */
cv_module *cv_onnx_load_mem(const void *buf, size_t len, const char *path, cv_diag *d);

/* The front-end table's recogniser: a path ending in ".onnx". */
bool cv_onnx_matches(const char *path, const char *head, size_t head_len);

/* Import options (all optional). */
typedef struct cv_onnx_options {
    /* Shape specialisation: called for each graph input that feeds an
     * operand CU-IR needs at import time (a Reshape shape, Slice starts,
     * Resize scales, ...).  Returning 0 with t filled (data malloc'd; the
     * importer frees it) folds the input into a constant, and it leaves the
     * function's signature; returning -1 keeps it a run-time input, which
     * the import then refuses (CV4305). */
    int (*bind_input)(void *user, int index, const char *name, cv_tensor *t);
    void *user;
    /* Sequence and optional graph inputs (sequences exist only at import
     * time): fills elems[0..max) (data malloc'd; the importer frees it) and
     * returns the count, setting *absent for an absent optional; -1 leaves
     * the input unsupported (CV4307).  Graph outputs of these types become
     * their tensors, flattened in order. */
    int (*bind_list)(void *user, int index, const char *name, cv_tensor *elems, int max,
                     bool *absent);
} cv_onnx_options;

/* cv_onnx_load_mem with options (opts may be NULL). */
cv_module *cv_onnx_load_opts(const void *buf, size_t len, const char *path,
                             const cv_onnx_options *opts, cv_diag *d);

/* Decodes a serialized TensorProto (an ONNX test's input_0.pb) into out
 * (data malloc'd; free with cv_tensor_free).  name labels diagnostics. */
int cv_onnx_read_tensor_pb(const void *buf, size_t len, const char *name,
                           cv_tensor *out, cv_diag *d);

/* A TypeProto's kind: 't' tensor, 's' sequence of tensors, 'o' optional
 * tensor, 'p' optional sequence of tensors, '?' anything else. */
char cv_onnx_type_kind(const void *type_proto);
/* The kinds of a model's graph inputs and outputs (0 past the last); -1
 * when buf is not a ModelProto with a graph. */
int cv_onnx_io_kinds(const void *model, size_t len, char *in, int max_in, char *out, int max_out);
/* Decodes a serialized SequenceProto (kind 's') or OptionalProto (other
 * kinds) of tensors into out[0..max): the count, with *absent set for an
 * empty optional; -1 after a report. */
int cv_onnx_read_list_pb(const void *buf, size_t len, const char *name, char kind,
                         cv_tensor *out, int max, bool *absent, cv_diag *d);
/* True when the front end can import the default-domain op (its CU-IR ops
 * are all in the op table); used by the conformance report. */
bool cv_onnx_op_supported(const char *op_type);

#endif
