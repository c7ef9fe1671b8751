/* libFuzzer target: `cuvil cache serve` on raw HTTP bytes.  The bytes reach
 * the real server (libmicrohttpd's parser, then cache/server.c's routing,
 * tokens, GET/HEAD/PUT and admin pages) through a socketpair.  The store
 * holds a few entries and the server wants tokens, so seeds can reach
 * every path.  Checks: an answer is HTTP or nothing; a 200 to a GET of
 * /cas/<sha256> carries bytes that hash to that name (nothing corrupt or
 * partial is ever served); the store directory is the only place written. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/sha.h>

#include "cache/server_internal.h"
#include "fuzz/fuzz_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static cv_cache_server *srv;
static char store[300];
static const char *scratch;

/* Blobs the seeds name (fuzz/seeds/fuzz_cache_server). */
static const char *const blobs[] = {"hello cuvil\n", "{\"format\":\"cuvil-l1/1\"}",
                                    "0123456789abcdef0123456789abcdef"};

static void hex_of(const void *p, size_t n, char out[65])
{
    unsigned char md[32];
    SHA256(p, n, md);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void put(const char *kind, const char *body)
{
    char hex[65], req[512], ans[512];
    hex_of(body, strlen(body), hex);
    int n = snprintf(req, sizeof req,
                     "PUT /%s/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer fuzz-rw-token\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     kind, hex, strlen(body), body);
    fuzz_http_exchange(cv_cache_srv_daemon(srv), req, (size_t)n, ans, sizeof ans);
    if (fuzz_http_status(ans) != 200) {
        fprintf(stderr, "fuzz: seeding PUT failed: %s\n", ans);
        abort();
    }
}

static void start(void)
{
    scratch = fuzz_scratch_dir("cachesrv");
    snprintf(store, sizeof store, "%s/store", scratch);
    char tokens[300];
    snprintf(tokens, sizeof tokens, "%s/tokens", scratch);
    FILE *f = fopen(tokens, "w");
    if (!f)
        abort();
    fputs("fuzz-rw-token rw\nfuzz-ro-token ro\n", f);
    fclose(f);
    cv_cache_server_options o = {.listen = "127.0.0.1:0", .dir = store, .tokens_file = tokens,
                                 .max_request = 1 << 16, .threads = 1, .max_size = 64 << 20};
    cv_diag d;
    cv_diag_init(&d);
    if (cv_cache_server_start(&o, &srv, &d) != 0) {
        cv_diag_print(&d, stderr, false);
        abort();
    }
    cv_diag_free(&d);
    for (size_t i = 0; i < sizeof blobs / sizeof blobs[0]; i++) {
        put("cas", blobs[i]);
        put("ac", blobs[i]);
    }
}

/* "GET <...>/cas/<hex> HTTP/1.x\r\n" (exactly three words: a line with
 * more spaces is parsed by libmicrohttpd in its own way) as the input's
 * only request: the hex. */
static bool single_cas_get(const uint8_t *data, size_t size, char hex[65])
{
    if (size < 4 || memcmp(data, "GET ", 4) != 0)
        return false;
    const uint8_t *eol = memmem(data, size, "\r\n", 2);
    const uint8_t *sp = memchr(data + 4, ' ', size - 4);
    if (!eol || !sp || sp > eol || eol - sp < 9 || memcmp(sp, " HTTP/1.", 8) != 0 ||
        memchr(sp + 1, ' ', (size_t)(eol - sp - 1)))
        return false;
    if (sp - data < 4 + 5 + 64 || memcmp(sp - 69, "/cas/", 5) != 0)
        return false;
    memcpy(hex, sp - 64, 64);
    hex[64] = '\0';
    for (int i = 0; i < 64; i++)
        if (!strchr("0123456789abcdef", hex[i]))
            return false;
    return true;
}

/* A 200 answer to a GET of /cas/<hex>: its body hashes to hex. */
static void check_served(const uint8_t *data, size_t size, const char *ans, size_t len)
{
    char want[65], got[65];
    if (fuzz_http_status(ans) != 200 || !single_cas_get(data, size, want))
        return;
    if (strstr(ans + 1, "HTTP/1."))
        return; /* several answers (pipelined requests): not checked */
    const char *body = strstr(ans, "\r\n\r\n");
    const char *cl = strstr(ans, "Content-Length: ");
    if (!body || !cl || cl > body)
        return;
    size_t n = strtoul(cl + 16, NULL, 10);
    body += 4;
    if ((size_t)(body - ans) + n != len)
        abort(); /* a partial body */
    hex_of(body, n, got);
    if (strcmp(got, want) != 0)
        abort(); /* served bytes that do not hash to the name */
}

static int outside(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    size_t n = strlen(store);
    bool in_store = strncmp(path, store, n) == 0 && (path[n] == '\0' || path[n] == '/');
    bool known = strcmp(path, scratch) == 0 || strcmp(path + strlen(scratch), "/tokens") == 0;
    if (!in_store && !known) {
        fprintf(stderr, "fuzz: the server wrote %s outside its store\n", path);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint64_t runs;
    if (!srv)
        start();
    static char ans[1 << 17]; /* answers are small: entries are at most 64 KiB */
    size_t len = fuzz_http_exchange(cv_cache_srv_daemon(srv), data, size, ans, sizeof ans);
    if (len && strncmp(ans, "HTTP/1.", 7) != 0)
        abort();
    if (len < sizeof ans)
        check_served(data, size, ans, len);
    if (++runs % 4096 == 0)
        nftw(scratch, outside, 16, FTW_PHYS);
    return 0;
}
