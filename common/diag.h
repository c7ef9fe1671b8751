/* Diagnostics: every error Cuvil reports carries a stable code, a severity,
 * a source span, an AST/IR path, a message, notes and (for errors caused by
 * an earlier error) the id of that root cause.
 *
 * Codes are integers printed as CV<code>, each with a name (CV_E_<SLUG>):
 * the one list is common/diag_codes.h, which makes the enum below and the
 * registry (common/diag_codes.c).  Code passes the name, never a bare number
 * (tests/unit/common/test_diag_codes.c checks the tree). */
#ifndef CV_DIAG_H
#define CV_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/diag_codes.h"

#define CV_DIAG_CODE_ENUM_(name, num, slug, summary) name = num,
typedef enum cv_diag_code { CV_DIAG_CODES(CV_DIAG_CODE_ENUM_) } cv_diag_code;
#undef CV_DIAG_CODE_ENUM_

typedef enum { CV_SEV_NOTE, CV_SEV_WARNING, CV_SEV_ERROR } cv_severity;

typedef struct cv_span {
    const char *file;   /* not owned by the span; cv_diag copies it */
    int line, col;      /* 1-based; 0 = unknown */
    int end_line, end_col;
} cv_span;

typedef struct cv_diag_entry {
    int id;             /* 1-based, stable within one cv_diag */
    int code;
    cv_severity sev;
    cv_span span;       /* span.file owned by the cv_diag */
    char *path;         /* owned; AST or IR path, may be NULL */
    char *msg;          /* owned */
    char **notes;       /* owned */
    int n_notes;
    int root_id;        /* 0 = this is a root cause */
} cv_diag_entry;

typedef struct cv_diag_source cv_diag_source;

typedef struct cv_diag {
    cv_diag_entry *v;   /* owned */
    int n, cap;
    int n_errors, n_warnings;
    int max_entries;    /* beyond this, entries are counted but dropped (0 = 1000) */
    int dropped;
    cv_diag_source *sources;  /* owned: source texts for caret lines */
} cv_diag;

typedef struct cv_diag_code_info {
    int code;
    const char *name;     /* short identifier, e.g. "shape-mismatch" */
    const char *summary;  /* one-line explanation */
} cv_diag_code_info;

void cv_diag_init(cv_diag *d);
void cv_diag_free(cv_diag *d);
void cv_diag_clear(cv_diag *d);

/* Adds a diagnostic and returns its id (> 0), or 0 when dropped. */
int cv_diag_add(cv_diag *d, cv_severity sev, int code, cv_span span,
                const char *path, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
int cv_diag_vadd(cv_diag *d, cv_severity sev, int code, cv_span span,
                 const char *path, const char *fmt, va_list ap);
/* Shorthand for an error at a span with no path. */
int cv_diag_error(cv_diag *d, int code, cv_span span, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same, returning -1: `return cv_diag_fail(d, CV_E_..., span, ...);`
 * ends a function that fails. */
int cv_diag_fail(cv_diag *d, int code, cv_span span, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void cv_diag_note(cv_diag *d, int id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cv_diag_set_root(cv_diag *d, int id, int root_id);
void cv_diag_set_path(cv_diag *d, int id, const char *path);
const cv_diag_entry *cv_diag_get(const cv_diag *d, int id);
bool cv_diag_has_errors(const cv_diag *d);
/* Moves every entry of src into dst (ids are renumbered, roots kept). */
void cv_diag_merge(cv_diag *dst, cv_diag *src);

/* Registers the text of a file so that printed diagnostics can show the
 * source line with a caret.  The text is copied. */
void cv_diag_add_source(cv_diag *d, const char *file, const char *text, size_t len);

/* Human form: "file:line:col: error[CV3101]: message", the source line and a
 * caret, then notes. */
void cv_diag_print(const cv_diag *d, FILE *out, bool color);
void cv_diag_print_entry(const cv_diag *d, const cv_diag_entry *e, FILE *out, bool color);
/* JSON form: a jansson array (json_t *) of objects; caller owns the result. */
struct json_t;
struct json_t *cv_diag_to_json(const cv_diag *d);

/* The registry. */
const cv_diag_code_info *cv_diag_code_lookup(int code);
const cv_diag_code_info *cv_diag_codes(size_t *count);
/* Parses "CV3101" or "3101"; returns the code or -1. */
int cv_diag_parse_code(const char *s);
const char *cv_severity_name(cv_severity s);

#endif
