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
