/* The farm status as JSON, shared by `cuvil status --json` and the HTTP API. */
#ifndef CV_CONTROLLER_STATUS_H
#define CV_CONTROLLER_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "controller/builddb.h"
#include "controller/farm.h"

/* The JSON that `cuvil status --json`, `cuvil failures --json` and the
 * HTTP API share (controller/status_json.c, controller/failures_json.c).
 * Each returns a new jansson json_t the caller owns. */
struct json_t;
/* A farm status value holding JSON (controller heartbeat, source); NULL
 * when unset or unreadable. */
struct json_t *cv_status_value_json(cv_builddb *db, const char *key, cv_diag *d);
/* Whether a controller heartbeat object is fresh and not stopped. */
bool cv_status_controller_alive(const struct json_t *ctl, int64_t now_ms);
/* {"revision","state","createdMs","finishedMs","jobs","hits","ok","failed","pending"} */
struct json_t *cv_status_summary_json(const cv_rev_summary *s);
/* The summary with "jobsList" (every job with its diagnostics) and the
 * revision's own "diagnostics". */
struct json_t *cv_status_revision_json(cv_builddb *db, const cv_rev_summary *s, cv_diag *d);
/* `cuvil status --json`: controller, source, last attempted and succeeded
 * revisions, rev (may be NULL) in full and the recent revisions. */
struct json_t *cv_status_json(cv_builddb *db, const cv_rev_summary *rev, int64_t now_ms,
                              cv_diag *d);

/* The controller's heartbeat in the farm status (key "controller"):
 * {"pid","host","repo","ref","queue","startedMs","heartbeatMs","stoppedMs"};
 * stoppedMs is 0 while it runs and the time it closed after. */
#define CV_STATUS_CONTROLLER "controller"

/* controller/status_formats.c: a revision's JSON view (cv_status_revision_json,
 * or the farm API's GET /api/v1/revisions/REV) as JUnit XML (one test case
 * per job) and as a Markdown job summary. */
struct json_t;
void cv_status_write_junit(FILE *out, const struct json_t *rev);
void cv_status_write_markdown(FILE *out, const struct json_t *rev);
/* The farm summary's counts from a revision's JSON view. */
void cv_status_summary_from_json(const struct json_t *rev, cv_farm_summary *s);

#endif
