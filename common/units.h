/* One grammar for sizes and one for durations, read the same way from the
 * command line, the environment and specs (memoryLimit, jobTimeout, ...).
 *
 *   size     := DIGITS [ "." DIGITS ] [ unit ]
 *   unit     := "B" | prefix [ "i" ] [ "B" ]        prefix: K M G T P, any case
 *               20Gi = 20GiB = 20 * 1024^3 bytes;  500M = 500MB = 500 * 1000^2 bytes
 *   duration := ( DIGITS ( "ms" | "s" | "m" | "h" ) )+       1h30m, 90s, 1500ms
 *
 * K without i is 1000, as Kubernetes' k and SI have it, and Ki is 1024; a
 * size with a fraction is rounded down to whole bytes (1.5Ki = 1536).  M is
 * mega in either case: a byte count has no milli.  A duration needs a unit
 * on every number ("90" is refused: seconds or milliseconds?).  Both take at
 * most CV_UNITS_TEXT_MAX characters, no spaces, and fit in an int64. */
#ifndef CV_COMMON_UNITS_H
#define CV_COMMON_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define CV_UNITS_TEXT_MAX 32
#define CV_SIZE_MAX_BYTES ((uint64_t)INT64_MAX)
#define CV_DURATION_MAX_MS INT64_C(1000000000000000)   /* about 31,700 years */

/* Where a text stops being a size or a duration, and why (static text). */
typedef struct cv_units_error {
    int at;   /* 0-based offset of the first character that is wrong */
    const char *why;
} cv_units_error;

/* 0 and *bytes / *ms set, or -1 with *e filled (e may be NULL). */
int cv_units_parse_size(const char *s, uint64_t *bytes, cv_units_error *e);
int cv_units_parse_duration(const char *s, int64_t *ms, cv_units_error *e);

typedef enum cv_units_kind { CV_UNITS_SIZE, CV_UNITS_DURATION } cv_units_kind;

/* "<what>: '<s>' is not a size: <why> (at character N); write e.g. ..." in
 * buf, for a diagnostic of the caller's code (CV6013 in a spec, CV1013 on
 * the command line); `what` names the flag or the field (--memory-limit,
 * workers.memoryLimit).  e may be NULL. */
void cv_units_message(char *buf, size_t cap, cv_units_kind kind, const char *what, const char *s,
                      const cv_units_error *e);

#endif
