/* Small helpers: clocks, digests. */
#include "controller/internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"

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
