#include "common/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *const names[] = {"off", "error", "warn", "info", "debug", "trace"};

static atomic_int cur_level = CV_LOG_WARN;
static atomic_int out_fd = 2;
static atomic_bool level_overridden;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

int cv_log_level_parse(const char *s)
{
    for (int i = 0; i <= CV_LOG_TRACE; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    if (strcasecmp(s, "warning") == 0)
        return CV_LOG_WARN;
    return -1;
}

const char *cv_log_level_name(cv_log_level l)
{
    return (l >= CV_LOG_OFF && l <= CV_LOG_TRACE) ? names[l] : "?";
}

static void read_env(void)
{
    const char *s = getenv("CUVIL_LOG");
    int l = s && *s ? cv_log_level_parse(s) : -1;
    if (l >= 0 && !atomic_load(&level_overridden))
        atomic_store(&cur_level, l);
    else if (s && *s && l < 0)
        dprintf(atomic_load(&out_fd), "cuvil: CUVIL_LOG=%.40s is not a level "
                "(off|error|warn|info|debug|trace); using warn\n", s);
}

cv_log_level cv_log_level_get(void)
{
    pthread_once(&env_once, read_env);
    return (cv_log_level)atomic_load(&cur_level);
}

void cv_log_level_set(cv_log_level l)
{
    pthread_once(&env_once, read_env);
    atomic_store(&level_overridden, true);
    atomic_store(&cur_level, (int)l);
}

bool cv_log_enabled(cv_log_level l)
{
    return l != CV_LOG_OFF && l <= cv_log_level_get();
}

void cv_log_set_fd(int fd) { atomic_store(&out_fd, fd); }

/* "cache/cas.c" -> "cache"; "main.c" -> "main". */
static int tag_len(const char *src)
{
    const char *slash = strchr(src, '/');
    if (slash)
        return (int)(slash - src);
    const char *dot = strrchr(src, '.');
    return dot ? (int)(dot - src) : (int)strlen(src);
}

static size_t put_prefix(char *buf, size_t cap, cv_log_level l, const char *src)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    int k = snprintf(buf + n, cap - n, ".%03ldZ %-5s %.*s[%ld]: ", ts.tv_nsec / 1000000L,
                     names[l], tag_len(src), src, (long)getpid());
    return n + (k > 0 ? (size_t)k : 0);
}

void cv_log_vwrite(cv_log_level l, const char *src_file, const char *fmt, va_list ap)
{
    if (!cv_log_enabled(l))
        return;
    /* One write() per line keeps lines whole when workers log concurrently. */
    char buf[4096];
    size_t n = put_prefix(buf, sizeof buf, l, src_file ? src_file : "?");
    int k = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    if (k < 0)
        k = 0;
    n = (size_t)k >= sizeof buf - n - 1 ? sizeof buf - 5 : n + (size_t)k;
    if (n == sizeof buf - 5)
        memcpy(buf + n - 3, "...", 3);
    buf[n++] = '\n';
    ssize_t w = write(atomic_load(&out_fd), buf, n);
    (void)w;
}

void cv_log_write(cv_log_level l, const char *src_file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_log_vwrite(l, src_file, fmt, ap);
    va_end(ap);
}
