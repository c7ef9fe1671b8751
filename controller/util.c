/* Small helpers: typo suggestions, clocks, digests, name checks. */
#include "controller/internal.h"

#include <string.h>
#include <time.h>

#include "cache/cache.h"
#include "common/strutil.h"

const char *cv_ctl_suggest(const char *word, const char *const *candidates)
{
    int limit = (int)strlen(word) / 3;
    if (limit < 1)
        limit = 1;
    size_t n = 0;
    while (candidates && candidates[n])
        n++;
    return cv_closest_match(word, candidates, n, limit);
}

int64_t cv_ctl_now_ms(cv_queue_clock_fn fn, void *ctx)
{
    if (fn)
        return fn(ctx);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cv_ctl_sha256_hex(const void *data, size_t len, char out[65])
{
    cv_digest dg;
    cv_cache_sha256(data, len, &dg);
    cv_cache_digest_hex(&dg, out);
}

bool cv_ctl_is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

bool cv_ctl_is_ref_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255 || s[0] == '/' || s[0] == '-' || s[n - 1] == '/' || s[n - 1] == '.' ||
        strstr(s, "..") || strstr(s, "//") || strstr(s, "@{") || strcmp(s, "@") == 0 ||
        (n >= 5 && strcmp(s + n - 5, ".lock") == 0) || strstr(s, ".lock/") || strstr(s, "/."))
        return false;
    if (s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || strchr("~^:?*[\\", c))
            return false;
    }
    return true;
}

bool cv_ctl_is_clean_text(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}
