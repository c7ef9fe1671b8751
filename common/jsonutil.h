/* JSON helpers over jansson: parsing with error positions, canonical text
 * (for digests and stable files), atomic file writes. */
#ifndef CV_JSONUTIL_H
#define CV_JSONUTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"

/* Parses any JSON value, refusing duplicate keys.  Errors: CV1141 at
 * name:line:col (the text is registered for caret lines).  *out is a new
 * reference owned by the caller. */
int cv_json_parse(const char *text, size_t len, const char *name, json_t **out, cv_diag *d);
/* Reads and parses a file of at most max_bytes (CV1011 beyond, CV9004 I/O). */
int cv_json_read_file(const char *path, size_t max_bytes, json_t **out, cv_diag *d);

/* Compact text with keys sorted bytewise; the same value always gives the
 * same bytes.  malloc'd; NULL if v holds something unencodable. */
char *cv_json_canonical(const json_t *v);
/* Writes v with sorted keys (indented by 2 when pretty) and a final newline,
 * atomically (readers see the old or the new file) but without fsync: it
 * writes build outputs (an artifact's manifest.json), which need not outlive
 * a power cut any more than the .o beside them (the cache syncs what it
 * keeps; a farm worker's scratch copy is removed after the upload). */
int cv_json_write_file(const char *path, const json_t *v, bool pretty, cv_diag *d);

#endif
