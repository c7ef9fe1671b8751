/* Logging to stderr.  The level comes from CUVIL_LOG
 * (off|error|warn|info|debug|trace, default warn), read once on first use.
 * Each line: "2026-11-29T12:34:56.789Z warn  cache[1234]: message", where the
 * tag is the component (the first directory of the calling source file). */
#ifndef CV_LOG_H
#define CV_LOG_H

#include <stdarg.h>
#include <stdbool.h>

typedef enum cv_log_level {
    CV_LOG_OFF, CV_LOG_ERROR, CV_LOG_WARN, CV_LOG_INFO, CV_LOG_DEBUG, CV_LOG_TRACE
} cv_log_level;

/* Parses a level name (case-insensitive); returns -1 if unknown. */
int cv_log_level_parse(const char *s);
const char *cv_log_level_name(cv_log_level l);
cv_log_level cv_log_level_get(void);
/* Overrides the environment (e.g. for `--verbose`). */
void cv_log_level_set(cv_log_level l);
bool cv_log_enabled(cv_log_level l);
/* Where lines go (default 2, stderr); for tests and daemons. */
void cv_log_set_fd(int fd);

void cv_log_write(cv_log_level l, const char *src_file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cv_log_vwrite(cv_log_level l, const char *src_file, const char *fmt, va_list ap);

#define cv_log_error(...) cv_log_write(CV_LOG_ERROR, __FILE__, __VA_ARGS__)
#define cv_log_warn(...)  cv_log_write(CV_LOG_WARN, __FILE__, __VA_ARGS__)
#define cv_log_info(...)  cv_log_write(CV_LOG_INFO, __FILE__, __VA_ARGS__)
#define cv_log_debug(...) cv_log_write(CV_LOG_DEBUG, __FILE__, __VA_ARGS__)
#define cv_log_trace(...) cv_log_write(CV_LOG_TRACE, __FILE__, __VA_ARGS__)

#endif
