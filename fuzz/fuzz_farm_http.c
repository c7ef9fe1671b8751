/* libFuzzer target: the farm's HTTP face on raw HTTP bytes: webhooks
 * (/hooks/github, /hooks/gitlab), the JSON API and the dashboard, through
 * the real server (controller/http/server.c) over a socketpair.  The farm
 * has a webhook secret and tokens, so seeds carry them.  GitHub signatures
 * cannot be guessed by a fuzzer: a request whose header reads
 * "X-Hub-Signature-256: sha256=auto" is signed here (HMAC over the bytes
 * after the blank line) before it is sent, so payload parsing is reached;
 * any other signature is sent as it is and must be refused.  Checks: an
 * answer is HTTP or nothing; an unsigned or badly signed hook is never
 * accepted (verification comes before parsing). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "controller/http/http_internal.h"
#include "fuzz/fuzz_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "fuzz-webhook-secret"
#define AUTO "X-Hub-Signature-256: sha256=auto"

static cv_http *farm;

static void start(void)
{
    const char *dir = fuzz_scratch_dir("farmhttp");
    char tokens[300], state[300], cache[300];
    snprintf(tokens, sizeof tokens, "%s/tokens", dir);
    snprintf(state, sizeof state, "%s/state", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    FILE *f = fopen(tokens, "w");
    if (!f)
        abort();
    fputs("fuzz-rw-token rw\nfuzz-ro-token ro\n", f);
    fclose(f);
    cv_http_opts o = {.listen = "127.0.0.1:0", .state_dir = state, .cache_dir = cache,
                      .tokens_file = tokens, .webhook_secret = SECRET, .ref = "main"};
    cv_diag d;
    cv_diag_init(&d);
    if (cv_http_start(&o, &farm, &d) != 0) {
        cv_diag_print(&d, stderr, false);
        abort();
    }
    cv_diag_free(&d);
}

static const uint8_t *find(const uint8_t *h, size_t n, const char *needle)
{
    return memmem(h, n, needle, strlen(needle));
}

/* A copy of the request with "sha256=auto" replaced by the body's HMAC;
 * NULL when the request asks for no signing (malloc'd). */
static uint8_t *signed_copy(const uint8_t *data, size_t size, size_t *out_len)
{
    const uint8_t *at = find(data, size, AUTO), *blank = find(data, size, "\r\n\r\n");
    if (!at || !blank || at > blank)
        return NULL;
    size_t head = (size_t)(at - data) + strlen(AUTO) - 4, tail = size - (head + 4);
    uint8_t *out = malloc(size + 64);
    if (!out)
        return NULL;
    const uint8_t *body = blank + 4;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    HMAC(EVP_sha256(), SECRET, (int)strlen(SECRET), body, (size_t)(data + size - body), md,
         &mdlen);
    memcpy(out, data, head);
    for (unsigned i = 0; i < mdlen; i++)
        snprintf((char *)out + head + 2 * i, 3, "%02x", md[i]);
    memcpy(out + head + 64, data + head + 4, tail);
    *out_len = size + 60;
    return out;
}

/* A hook answer that says the push was queued. */
static bool accepted(const char *ans)
{
    return fuzz_http_status(ans) == 202 && strstr(ans, "\"queued\"") != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!farm)
        start();
    static char ans[1 << 16];
    size_t len = 0;
    uint8_t *copy = signed_copy(data, size, &len);
    if (copy) {
        fuzz_http_exchange(farm->daemon, copy, len, ans, sizeof ans);
        free(copy);
    } else {
        len = fuzz_http_exchange(farm->daemon, data, size, ans, sizeof ans);
        /* Unsigned GitHub hooks and GitLab hooks without the secret never
         * queue a build (a signature a fuzzer forged is not a finding). */
        bool gitlab_secret = find(data, size, SECRET) != NULL;
        bool hook = find(data, size, "/hooks/") != NULL, api = find(data, size, "/api/") != NULL;
        bool github = find(data, size, "/hooks/github") != NULL;
        if (hook && !api && accepted(ans) && !gitlab_secret &&
            !(github && find(data, size, "sha256=")))
            abort();
    }
    if (ans[0] && strncmp(ans, "HTTP/1.", 7) != 0)
        abort();
    return 0;
}
