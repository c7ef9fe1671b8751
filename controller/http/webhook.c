/* Git webhooks: a push of the tracked ref leaves a build request, so the
 * controller's next step (within a fraction of a second) fetches at once
 * instead of waiting for the poll interval.
 *
 *   GitHub  X-Hub-Signature-256: sha256=HMAC-SHA256(secret, body) in hex;
 *           X-GitHub-Event: push (ping answers pong)
 *   GitLab  X-Gitlab-Token: the secret itself; X-Gitlab-Event: Push Hook or
 *           Tag Push Hook
 *
 * Answers: 202 with {"status":"queued"} or {"status":"ignored"} (another
 * ref, another event, a deleted branch), 401 bad signature, 403 no secret
 * configured, 400 a payload without a ref, 409 a replay, 413 (server.c)
 * over 1 MB.
 *
 * Replays: a push that would queue a build is refused (409) when its
 * delivery id (X-GitHub-Delivery, X-Gitlab-Event-UUID) or its payload (by
 * SHA-256; GitHub signs only the body, so a replayer can change the id)
 * was accepted in the last 7 days (http_db.c), or when a GitHub payload's
 * repository.pushed_at is over HOOK_MAX_AGE_S old (or HOOK_MAX_SKEW_S in
 * the future).  GitLab payloads carry no push time. */
#include "controller/http/http_internal.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define SHA256_LEN 32

enum { HOOK_MAX_AGE_S = 3600, HOOK_MAX_SKEW_S = 300, HOOK_KEY_MAX = 128 };

static void outcome(cv_http *h, http_hook_host host, http_hook_outcome o)
{
    atomic_fetch_add(&h->counters.hooks[host][o], 1);
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* "sha256=<64 hex>" against HMAC-SHA256(secret, body), in constant time. */
static bool github_signature_ok(const char *secret, const http_req *rq)
{
    const char *sig = http_header(rq, "X-Hub-Signature-256");
    if (!sig || strncmp(sig, "sha256=", 7) != 0 || strlen(sig + 7) != 2 * SHA256_LEN)
        return false;
    unsigned char want[SHA256_LEN], got[EVP_MAX_MD_SIZE];
    for (int i = 0; i < SHA256_LEN; i++) {
        int hi = hex_value(sig[7 + 2 * i]), lo = hex_value(sig[8 + 2 * i]);
        if (hi < 0 || lo < 0)
            return false;
        want[i] = (unsigned char)(hi << 4 | lo);
    }
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)rq->body,
              rq->body_len, got, &len) ||
        len != SHA256_LEN)
        return false;
    return CRYPTO_memcmp(want, got, SHA256_LEN) == 0;
}

static bool gitlab_token_ok(const char *secret, const http_req *rq)
{
    const char *tok = http_header(rq, "X-Gitlab-Token");
    size_t n = strlen(secret);
    return tok && strlen(tok) == n && CRYPTO_memcmp(tok, secret, n) == 0;
}

/* The tracked ref as a push names it: "main" is refs/heads/main (or a tag
 * of that name); a full "refs/..." name must match exactly. */
static bool is_tracked(const char *tracked, const char *ref)
{
    if (strcmp(tracked, ref) == 0)
        return true;
    if (strncmp(tracked, "refs/", 5) == 0)
        return false;
    const char *prefixes[] = {"refs/heads/", "refs/tags/"};
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(ref, prefixes[i], n) == 0 && strcmp(ref + n, tracked) == 0)
            return true;
    }
    return false;
}

static void ignored(cv_http *h, http_hook_host host, http_resp *rs, const char *why)
{
    outcome(h, host, HOOK_IGNORED);
    char code[16];
    snprintf(code, sizeof code, "CV%04d", CV_E_WEBHOOK_IGNORED);
    http_json(rs, 202, json_pack("{s:s, s:s, s:s}", "status", "ignored", "code", code, "reason",
                                 why));
}

/* keys[0]: the delivery id (when sent, printable, not too long), keys[1]:
 * the payload's digest. */
static void delivery_keys(http_hook_host host, const http_req *rq,
                          char keys[2][HOOK_KEY_MAX])
{
    const char *name = http_hook_host_name(host);
    const char *id = http_header(rq, host == HOOK_GITHUB ? "X-GitHub-Delivery"
                                                         : "X-Gitlab-Event-UUID");
    if (host == HOOK_GITLAB && !id)
        id = http_header(rq, "X-Gitlab-Webhook-UUID");
    bool ok = id && *id && strlen(id) <= 80;
    for (const char *p = id; ok && *p; p++)
        ok = *p > ' ' && *p < 0x7f;
    if (ok)
        snprintf(keys[0], HOOK_KEY_MAX, "%s:id:%s", name, id);
    else
        keys[0][0] = '\0';
    unsigned char md[SHA256_LEN];
    unsigned int n = 0;
    EVP_Digest(rq->body, rq->body_len, md, &n, EVP_sha256(), NULL);
    int at = snprintf(keys[1], HOOK_KEY_MAX, "%s:body:", name);
    for (unsigned i = 0; i < n && at + 3 <= HOOK_KEY_MAX; i++)
        at += snprintf(keys[1] + at, 3, "%02x", md[i]);
}

/* Whether the delivery is a replay (answered 409 in rs) or cannot be
 * checked (500). */
static bool replayed(cv_http *h, http_hook_host host, const json_t *p, const http_req *rq,
                     char keys[2][HOOK_KEY_MAX], http_resp *rs)
{
    json_t *pushed = json_object_get(json_object_get(p, "repository"), "pushed_at");
    int64_t now_s = rq->now_ms / 1000;
    if (host == HOOK_GITHUB && json_is_integer(pushed)) {
        int64_t at = json_integer_value(pushed);
        if (now_s - at > HOOK_MAX_AGE_S || at - now_s > HOOK_MAX_SKEW_S) {
            outcome(h, host, HOOK_REPLAYED);
            http_error(rs, 409, CV_E_WEBHOOK_STALE, "the payload was pushed at %lld, %lld s from now "
                       "(at most %d s ago is taken): refused as a replay", (long long)at,
                       (long long)(now_s - at), HOOK_MAX_AGE_S);
            return true;
        }
    }
    cv_diag d;
    cv_diag_init(&d);
    int seen = 0;
    for (int i = 0; i < 2 && seen == 0; i++)
        if (keys[i][0])
            seen = http_db_hook_seen(h->db, keys[i], &d);
    if (seen < 0)
        http_error_diag(rs, 500, &d);
    else if (seen) {
        outcome(h, host, HOOK_REPLAYED);
        http_error(rs, 409, CV_E_WEBHOOK_REPLAYED, "this delivery (its id or its payload) was already "
                   "accepted");
    }
    cv_diag_free(&d);
    return seen != 0;
}

static void queue_build(cv_http *h, http_hook_host host, const http_req *rq, const char *after,
                        char keys[2][HOOK_KEY_MAX], http_resp *rs)
{
    cv_diag d;
    cv_diag_init(&d);
    int64_t id = 0;
    const char *const remember[] = {keys[0][0] ? keys[0] : NULL, keys[1]};
    if (cv_builddb_request_add(h->db, rq->now_ms, &id, &d) != 0 ||
        http_db_hook_remember(h->db, remember, 2, rq->now_ms, &d) != 0) {
        outcome(h, host, HOOK_FAILED);
        http_error_diag(rs, 500, &d);
    } else {
        outcome(h, host, HOOK_ACCEPTED);
        char href[64];
        snprintf(href, sizeof href, "/api/v1/requests/%lld", (long long)id);
        http_json(rs, 202, json_pack("{s:s, s:I, s:s, s:o}", "status", "queued", "request",
                                     (json_int_t)id, "href", href, "after",
                                     after ? json_string(after) : json_null()));
    }
    cv_diag_free(&d);
}

/* A push payload (both hosts): queue a build when it moved the tracked
 * ref to a commit (a deleted branch moves it to 40 zeros), unless it is a
 * replay. */
static void push(cv_http *h, http_hook_host host, const http_req *rq, http_resp *rs)
{
    json_error_t je;
    json_t *p = json_loadb(rq->body, rq->body_len, 0, &je);
    const char *ref = json_string_value(json_object_get(p, "ref"));
    const char *after = json_string_value(json_object_get(p, "after"));
    bool deleted = json_is_true(json_object_get(p, "deleted")) ||
                   (after && strspn(after, "0") == strlen(after) && *after);
    if (!ref) {
        outcome(h, host, HOOK_BAD_PAYLOAD);
        http_error(rs, 400, CV_E_WEBHOOK_BAD_PAYLOAD, "the payload is not a JSON object with a ref%s%s",
                   p ? "" : ": ", p ? "" : je.text);
    } else if (!is_tracked(h->ref, ref)) {
        char why[512];
        snprintf(why, sizeof why, "a push of %.200s; this farm builds %.200s", ref, h->ref);
        ignored(h, host, rs, why);
    } else if (deleted) {
        ignored(h, host, rs, "the tracked ref was deleted");
    } else {
        char keys[2][HOOK_KEY_MAX];
        delivery_keys(host, rq, keys);
        if (!replayed(h, host, p, rq, keys, rs))
            queue_build(h, host, rq, after, keys, rs);
    }
    json_decref(p);
}

static bool configured(cv_http *h, http_hook_host host, http_resp *rs)
{
    if (h->secret)
        return true;
    outcome(h, host, HOOK_REFUSED);
    http_error(rs, 403, CV_E_WEBHOOK_NOT_CONFIGURED, "webhooks are off: start the farm with a webhook "
               "secret (--webhook-secret-file)");
    return false;
}

static void bad_signature(cv_http *h, http_hook_host host, http_resp *rs, const char *what)
{
    outcome(h, host, HOOK_BAD_SIGNATURE);
    http_error(rs, 401, CV_E_WEBHOOK_BAD_SIGNATURE, "%s does not match the webhook secret", what);
}

void http_hook_github(cv_http *h, const http_req *rq, http_resp *rs)
{
    if (!configured(h, HOOK_GITHUB, rs))
        return;
    if (!github_signature_ok(h->secret, rq)) {
        bad_signature(h, HOOK_GITHUB, rs, "X-Hub-Signature-256");
        return;
    }
    const char *event = http_header(rq, "X-GitHub-Event");
    if (event && strcmp(event, "ping") == 0) {
        outcome(h, HOOK_GITHUB, HOOK_PING);
        http_json(rs, 200, json_pack("{s:s}", "status", "pong"));
    } else if (!event || strcmp(event, "push") != 0) {
        char why[128];
        snprintf(why, sizeof why, "a %.64s event; only pushes build", event ? event : "unnamed");
        ignored(h, HOOK_GITHUB, rs, why);
    } else {
        push(h, HOOK_GITHUB, rq, rs);
    }
}

void http_hook_gitlab(cv_http *h, const http_req *rq, http_resp *rs)
{
    if (!configured(h, HOOK_GITLAB, rs))
        return;
    if (!gitlab_token_ok(h->secret, rq)) {
        bad_signature(h, HOOK_GITLAB, rs, "X-Gitlab-Token");
        return;
    }
    const char *event = http_header(rq, "X-Gitlab-Event");
    if (!event || (strcmp(event, "Push Hook") != 0 && strcmp(event, "Tag Push Hook") != 0)) {
        char why[128];
        snprintf(why, sizeof why, "a %.64s event; only pushes build", event ? event : "unnamed");
        ignored(h, HOOK_GITLAB, rs, why);
    } else {
        push(h, HOOK_GITLAB, rq, rs);
    }
}
