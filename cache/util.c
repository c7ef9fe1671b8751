/* Error reporting, clocks and size strings shared by the cache files. */
#include "cache/cache.h"
#include "cache/internal.h"
#include "common/clock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const cv_span no_span = {0};

int cv_cache_err(cv_diag *d, int code, const char *fmt, ...)
{
    if (d) {
        va_list ap;
        va_start(ap, fmt);
        cv_diag_vadd(d, CV_SEV_ERROR, code, no_span, NULL, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void cv_cache_warn(cv_diag *d, int code, const char *fmt, ...)
{
    if (!d)
        return;
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_WARNING, code, no_span, NULL, fmt, ap);
    va_end(ap);
}

int cv_cache_write_errcode(int err)
{
    return (err == ENOSPC || err == EDQUOT || err == EFBIG) ? CV_E_CACHE_DISK_FULL
                                                            : CV_E_CACHE_IO_ERROR;
}

int64_t cv_cache_now_us(void)
{
    return cv_clock_wall_us();
}

int64_t cv_cache_mono_us(void)
{
    return cv_clock_mono_us();
}

/* Suffixes after the number; "i" makes them binary (Kubernetes and ccache
 * both read "Gi" as 2^30 and "G" as 10^9). */
static int size_multiplier(const char *s, double *mul)
{
    static const char units[] = "KMGTP";
    *mul = 1;
    if (!*s)
        return 0;
    const char *u = strchr(units, s[0] >= 'a' ? s[0] - 32 : s[0]);
    if (!u || !*u)
        return (strcasecmp(s, "b") == 0) ? 0 : -1;
    int power = (int)(u - units) + 1;
    s++;
    double base = 1000;
    if (*s == 'i') {
        base = 1024;
        s++;
    }
    if (*s == 'B' || *s == 'b')
        s++;
    if (*s)
        return -1;
    *mul = pow(base, power);
    return 0;
}

int cv_cache_parse_size(const char *s, uint64_t *out)
{
    if (!s || strlen(s) > 32)
        return -1;
    while (*s == ' ')
        s++;
    if (!(*s >= '0' && *s <= '9'))
        return -1;
    double whole = 0, frac = 0, scale = 1;
    for (; *s >= '0' && *s <= '9'; s++)
        whole = whole * 10 + (*s - '0');
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return -1;
        for (; *s >= '0' && *s <= '9'; s++) {
            scale /= 10;
            frac += (*s - '0') * scale;
        }
    }
    while (*s == ' ')
        s++;
    double mul;
    if (size_multiplier(s, &mul) != 0)
        return -1;
    double v = (whole + frac) * mul;
    if (!(v < 18446744073709549568.0)) /* largest double below 2^64 */
        return -1;
    *out = (uint64_t)v;
    return 0;
}

char *cv_cache_format_size(uint64_t bytes, char out[32])
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, 32, "%llu B", (unsigned long long)bytes);
    else
        snprintf(out, 32, "%.1f %s", v, units[u]);
    return out;
}
