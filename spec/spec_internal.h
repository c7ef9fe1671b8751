/* Spec loading internals: the field tables (the loader's schema) and the
 * walker that checks a YAML document against them. */
#ifndef CV_SPEC_INTERNAL_H
#define CV_SPEC_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/diag.h"
#include "common/strutil.h"
#include "common/targets.h"
#include "common/units.h"
#include "common/yamldoc.h"
#include "spec/spec.h"

typedef enum { SK_STRING, SK_INT, SK_BOOL, SK_OBJECT, SK_LIST, SK_MAP } spec_type;

typedef struct spec_walk spec_walk;
typedef struct spec_field spec_field;

/* Checks a string value (already known to be clean, non-empty text);
 * reports through spec_error and returns -1 when it is bad. */
typedef int (*spec_check_fn)(spec_walk *w, const spec_field *f, const char *s, cv_span sp);

struct spec_field {
    const char *name;
    spec_type type;
    bool required;
    bool nonempty;                 /* SK_LIST: at least one item */
    const spec_field *members;     /* SK_OBJECT: {NULL}-terminated */
    const spec_field *item;        /* SK_LIST, SK_MAP: items / values */
    spec_check_fn check;           /* SK_STRING */
    const char *const *values;     /* SK_STRING: allowed values, NULL-terminated */
    int code;                      /* the code for a bad value */
    int64_t min, max;              /* SK_INT; durations (ms) */
};

struct spec_walk {
    const cv_yaml_doc *doc;
    cv_diag *d;                    /* not owned */
    char path[512];                /* "spec.targets[2]", for the diagnostic's path */
    size_t path_len;
    int errors;
};

/* Adds an error with w->path as its path; returns -1. */
int spec_error(spec_walk *w, int code, cv_span sp, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Checks obj's members against a member table.  0, or -1 with errors. */
int spec_walk_object(spec_walk *w, const spec_field *members, const json_t *obj, cv_span sp);
/* Appends ".name" or "[i]" to w->path; spec_path_pop restores. */
size_t spec_path_push(spec_walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void spec_path_pop(spec_walk *w, size_t mark);

/* The document tables (spec_fields.c). */
const spec_field *spec_root_fields(cv_spec_kind k);
extern const char *const spec_kind_names[];          /* by cv_spec_kind, NULL-terminated */
extern const char *const spec_opt_level_names[];

/* Value checks (spec_values.c): NULL when fine, else what is wrong. */
const char *spec_check_url(const char *s, bool http_only);
const char *spec_check_brokers(const char *s);
const char *spec_check_registry(const char *s);

/* Validated documents -> the public structs (spec_convert.c); strings and
 * arrays go into the arena.  0, or -1 on out-of-memory. */
int spec_convert_cluster(cv_arena *a, const cv_yaml_doc *doc, cv_spec_cluster *out);
int spec_convert_pipeline(cv_arena *a, const cv_yaml_doc *doc, const json_t *effective,
                          cv_spec_pipeline *out);

#endif
