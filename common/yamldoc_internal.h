/* Internal to common/yamldoc*.c: the position index and scalar typing. */
#ifndef CV_YAMLDOC_INTERNAL_H
#define CV_YAMLDOC_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <yaml.h>

#include "common/diag.h"
#include "common/yamldoc.h"

typedef struct cv_yspan { int line, col, end_line, end_col; } cv_yspan;

/* One node's position: the root (parent NULL), a mapping member (key set)
 * or a sequence item (index). */
typedef struct cv_yaml_entry {
    const json_t *parent;
    const char *key;        /* owned by the index */
    size_t index;
    const json_t *node;
    cv_yspan key_span, span;
} cv_yaml_entry;

cv_yaml_index *cv_yidx_new(void);
void cv_yidx_free(cv_yaml_index *ix);
/* Returns the entry id (>= 0) or -1 when out of memory. */
int cv_yidx_add(cv_yaml_index *ix, const json_t *parent, const char *key, size_t index,
                const json_t *node, cv_yspan key_span, cv_yspan span);
cv_yaml_entry *cv_yidx_get(cv_yaml_index *ix, int id);
const cv_yaml_entry *cv_yidx_by_node(const cv_yaml_index *ix, const json_t *node);
const cv_yaml_entry *cv_yidx_member(const cv_yaml_index *ix, const json_t *parent, const char *key);
const cv_yaml_entry *cv_yidx_item(const cv_yaml_index *ix, const json_t *parent, size_t i);
const cv_yaml_entry *cv_yidx_root(const cv_yaml_index *ix);

cv_yspan cv_yspan_of(yaml_mark_t start, yaml_mark_t end);

/* Types a scalar event's value by the core schema and its tag.  Returns a
 * new reference, or NULL after reporting at span. */
json_t *cv_yaml_scalar(const yaml_event_t *ev, const char *file, cv_diag *d);

#endif
