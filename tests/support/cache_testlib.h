/* Helpers shared by the cache tests. */
#ifndef CV_TEST_CACHE_UTIL_H
#define CV_TEST_CACHE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/tmpdir.h"

static inline void tcu_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

/* Deterministic pseudo-random bytes. */
static inline void tcu_fill(void *buf, size_t n, unsigned seed)
{
    unsigned char *b = buf;
    unsigned x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)x;
    }
}

#endif
