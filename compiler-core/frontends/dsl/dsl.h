/* The Cuvil model language front end: a strict subset of Python (files
 * named *.cvl.py) lowered to CU-IR.  See docs/dsl.md for the language and
 * its grammar.  compiler-core/cuvil.h exposes these entry points. */
#ifndef CV_DSL_H
#define CV_DSL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "compiler-core/ir/ir.h"

/* Reads and lowers a model file.  Weights files named by the models are
 * resolved relative to the file's directory (and may not leave it); their
 * tensors become weights(...) params, not loaded here.  Returns NULL after
 * reporting every error found to d (syntax errors first: the analysis only
 * runs on a file that parses). */
cv_module *cv_dsl_load(const char *path, cv_diag *d);

/* Same, for text already in memory; path names it in diagnostics and locs
 * and anchors weights files (NULL: "<input>" in the current directory). */
cv_module *cv_dsl_parse_text(const char *text, size_t len, const char *path, cv_diag *d);

/* For the front-end table (cv_frontend.matches): a file named *.cvl.py. */
bool cv_dsl_matches(const char *path, const char *head, size_t head_len);

/* The front end's version, for the L1 cache key. */
#define CV_DSL_VERSION "1"

/* The syntax tree of a model as text (S-expression with line:col spans),
 * for `--emit ast`; malloc'd, or NULL after syntax errors reported to d. */
char *cv_dsl_ast_text(const char *text, size_t len, const char *path, cv_diag *d);

#endif
