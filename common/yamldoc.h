/* YAML documents (specs in models repos) loaded into jansson trees, with
 * the source position of every node kept so that later checks (schema
 * validation, spec expansion) can report file:line:col.
 *
 * Scalars follow the YAML 1.2 core schema: plain null ~ true false, ints
 * (decimal, 0o octal, 0x hex) and floats become JSON values; quoted, literal
 * and folded scalars stay strings.  Mapping keys are strings.  Aliases are
 * expanded (deep copies) within a limit; tags other than the standard !!str
 * !!int !!float !!bool !!null !!map !!seq are refused, as are merge keys. */
#ifndef CV_YAMLDOC_H
#define CV_YAMLDOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"

#define CV_YAML_MAX_BYTES (4u << 20)        /* larger inputs: CV1011 */
#define CV_YAML_MAX_DEPTH 64                /* deeper nesting: CV1122 */
#define CV_YAML_MAX_ALIAS_NODES 100000      /* nodes added by aliases per document: CV1123 */
/* Nodes per stream (all its documents, aliases' copies included): CV1128.
 * Memory is about 250 bytes a node (the JSON value, its position and the
 * index), so a stream stays under about 50 MB whatever its text. */
#define CV_YAML_MAX_NODES 200000

typedef struct cv_yaml_index cv_yaml_index;

typedef struct cv_yaml_doc {
    json_t *root;           /* owned reference; JSON null for an empty document */
    char *file;             /* owned copy of the file name; may be NULL */
    int line, col;          /* where the document starts (1-based) */
    cv_yaml_index *index;   /* owned: node positions */
} cv_yaml_doc;

/* Parses every document of a YAML stream ("---" separated).  On success
 * *docs is a malloc'd array of *n_docs documents (0 for an empty stream),
 * freed with cv_yaml_free.  On error nothing is returned and the diagnostic
 * (CV1121 syntax, CV1122 depth, CV1123 alias limit, CV1124 duplicate key,
 * CV1125 unsupported feature, CV1126 undefined alias, CV1127 tag mismatch,
 * CV1004 number out of range, CV1011 too large) carries file:line:col; the
 * text is registered with the cv_diag for caret lines. */
int cv_yaml_load(const char *text, size_t len, const char *file, cv_yaml_doc **docs, int *n_docs,
                 cv_diag *d);
/* cv_yaml_load within a node budget shared by several streams: *nodes_left
 * (at most CV_YAML_MAX_NODES apply) is what this stream may make, and is
 * decreased by what it made; beyond it, CV1128. */
int cv_yaml_load_budget(const char *text, size_t len, const char *file, size_t *nodes_left,
                        cv_yaml_doc **docs, int *n_docs, cv_diag *d);
int cv_yaml_load_file(const char *path, cv_yaml_doc **docs, int *n_docs, cv_diag *d);
void cv_yaml_free(cv_yaml_doc *docs, int n_docs);

/* Start position of a node.  Returns 0, or -1 if the node is not part of the
 * document or is true/false/null (jansson shares those: use
 * cv_yaml_member_span or cv_yaml_pointer_span for them). */
int cv_yaml_pos(const cv_yaml_doc *doc, const json_t *node, int *line, int *col);
/* The node's full span (file, start and end), ready for cv_diag_error. */
int cv_yaml_span(const cv_yaml_doc *doc, const json_t *node, cv_span *out);
/* Spans of a mapping member's key and value (either out may be NULL). */
int cv_yaml_member_span(const cv_yaml_doc *doc, const json_t *obj, const char *key,
                        cv_span *key_span, cv_span *value_span);
int cv_yaml_item_span(const cv_yaml_doc *doc, const json_t *arr, size_t i, cv_span *out);
/* Span of the node at a JSON pointer ("/spec/targets/2"; "" is the root), or
 * of the key of the last member when want_key.  Returns 0 when the node
 * exists, 1 when only an ancestor does (its span is given: e.g. the object a
 * required property is missing from), -1 otherwise. */
int cv_yaml_pointer_span(const cv_yaml_doc *doc, const char *pointer, bool want_key, cv_span *out);

#endif
