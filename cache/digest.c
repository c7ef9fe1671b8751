/* SHA-256 (OpenSSL) names everything; XXH3 is the cheap content check.
 *
 * OpenSSL's low-level SHA256_* functions, not EVP: they are the same code
 * (SHA-NI where the CPU has it), but EVP's first call sets up OpenSSL's
 * provider machinery, reading openssl.cnf and registering every cipher:
 * 1.5 ms measured here, more than the rest of a cache hit's own work.  The
 * low-level calls need no set-up and touch no process-wide OpenSSL state
 * (other components may want the system configuration for their TLS). */
#define OPENSSL_SUPPRESS_DEPRECATED

#include "cache/cache.h"
#include "cache/internal.h"
#include "common/strutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/sha.h>
#include <xxhash.h>

struct cv_cache_hasher {
    SHA256_CTX ctx;
};

/* Not SHA256(): in OpenSSL 3 that one-shot goes through EVP. */
void cv_cache_sha256(const void *data, size_t len, cv_digest *out)
{
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, data, len);
    SHA256_Final(out->b, &ctx);
}

cv_cache_hasher *cv_cache_hasher_new(void)
{
    cv_cache_hasher *h = calloc(1, sizeof *h);
    if (h)
        SHA256_Init(&h->ctx);
    return h;
}

void cv_cache_hasher_update(cv_cache_hasher *h, const void *data, size_t len)
{
    if (len)
        SHA256_Update(&h->ctx, data, len);
}

void cv_cache_hasher_final(cv_cache_hasher *h, cv_digest *out)
{
    SHA256_Final(out->b, &h->ctx);
    SHA256_Init(&h->ctx);
}

void cv_cache_hasher_free(cv_cache_hasher *h)
{
    free(h);
}

static const char hexdig[] = "0123456789abcdef";

void cv_cache_hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdig[b[i] >> 4];
        out[2 * i + 1] = hexdig[b[i] & 15];
    }
    out[2 * n] = '\0';
}

void cv_cache_digest_hex(const cv_digest *dg, char out[CV_CACHE_HEX_LEN + 1])
{
    cv_cache_hex(dg->b, sizeof dg->b, out);
}

int cv_cache_digest_parse(const char *hex, cv_digest *out)
{
    if (!hex)
        return -1;
    for (int i = 0; i < 32; i++) {
        int hi = cv_hex_digit(hex[2 * i]);
        if (hi < 0)
            return -1;
        int lo = cv_hex_digit(hex[2 * i + 1]);
        if (lo < 0)
            return -1;
        out->b[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[CV_CACHE_HEX_LEN] == '\0' ? 0 : -1;
}

bool cv_cache_digest_eq(const cv_digest *a, const cv_digest *b)
{
    return memcmp(a->b, b->b, sizeof a->b) == 0;
}

uint64_t cv_cache_xxh3_64(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

cv_xxh128 cv_cache_xxh3_128(const void *data, size_t len)
{
    XXH128_hash_t h = XXH3_128bits(data, len);
    return (cv_xxh128){.lo = h.low64, .hi = h.high64};
}

void cv_cache_xxh128_hex(cv_xxh128 h, char out[33])
{
    uint8_t b[16];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(h.hi >> (56 - 8 * i));
        b[8 + i] = (uint8_t)(h.lo >> (56 - 8 * i));
    }
    cv_cache_hex(b, sizeof b, out);
}

enum { HASH_CHUNK = 1 << 20 };

/* Reads fd to the end, feeding each chunk to the hashers that are wanted. */
static int hash_fd(int fd, const char *path, cv_cache_hasher *sha, XXH3_state_t *xs,
                   uint64_t *size, cv_diag *d)
{
    uint8_t *buf = malloc(HASH_CHUNK); /* owned here */
    if (!buf)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory hashing %s", path);
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, HASH_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot read %s: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        if (sha)
            cv_cache_hasher_update(sha, buf, (size_t)n);
        if (xs)
            XXH3_64bits_update(xs, buf, (size_t)n);
        total += (uint64_t)n;
    }
    free(buf);
    if (size)
        *size = total;
    return 0;
}

int cv_cache_hash_file(const char *path, cv_digest *sha, uint64_t *xxh3, uint64_t *size,
                       cv_diag *d)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot open %s: %s", path, strerror(errno));
    cv_cache_hasher *h = sha ? cv_cache_hasher_new() : NULL; /* owned here */
    XXH3_state_t *xs = xxh3 ? XXH3_createState() : NULL;      /* owned here */
    int rc;
    if ((sha && !h) || (xxh3 && !xs)) {
        rc = cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory hashing %s", path);
    } else {
        if (xs)
            XXH3_64bits_reset(xs);
        rc = hash_fd(fd, path, h, xs, size, d);
        if (rc == 0 && h)
            cv_cache_hasher_final(h, sha);
        if (rc == 0 && xs)
            *xxh3 = XXH3_64bits_digest(xs);
    }
    cv_cache_hasher_free(h);
    if (xs)
        XXH3_freeState(xs);
    close(fd);
    return rc;
}

int cv_cache_xxh3_file(const char *path, uint64_t *xxh3, cv_diag *d)
{
    return cv_cache_hash_file(path, NULL, xxh3, NULL, d);
}
