/* A client of a farm's JSON API (controller/http/, schemas/api.yaml), for
 * `cuvil submit --farm URL`: libcurl, loaded on first use like the remote
 * cache's, a bearer token, bounded responses, JSON bodies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/netlib.h"
#include "controller/farm_client.h"

#define MAX_RESPONSE (64u << 20)
#define TIMEOUT_S 60L

typedef struct body {
    char *p;
    size_t n;
    bool too_big;
} body;

static size_t on_data(char *data, size_t size, size_t nmemb, void *ctx)
{
    body *b = ctx;
    size_t n = size * nmemb;
    if (b->n + n > MAX_RESPONSE) {
        b->too_big = true;
        return 0;
    }
    char *grown = realloc(b->p, b->n + n + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->n, data, n);
    b->p = grown;
    b->n += n;
    b->p[b->n] = '\0';
    return n;
}

int cv_farm_client_open(const char *url, const char *token, cv_farm_api *api, cv_diag *d)
{
    memset(api, 0, sizeof *api);
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        cv_diag_error(d, CV_E_HTTP_BAD_REQUEST, (cv_span){0}, "--farm takes an http:// or https:// URL, got '%.200s'",
                      url);
        return -1;
    }
    if (n >= sizeof api->base || (token && strlen(token) > 512)) {
        cv_diag_error(d, CV_E_HTTP_BAD_REQUEST, (cv_span){0}, "the farm URL or token is too long");
        return -1;
    }
    memcpy(api->base, url, n);
    api->base[n] = '\0';
    if (token && *token)
        snprintf(api->auth, sizeof api->auth, "Authorization: Bearer %s", token);
    api->curl = cv_netlib_curl(d);
    return api->curl ? 0 : -1;
}

/* The message of an API error body {"error": {"code", "message"}}. */
static void api_error(const json_t *o, long status, const char *method, const char *path,
                      cv_diag *d)
{
    const json_t *e = json_object_get(o, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    int c = code ? atoi(code + 2) : 0;
    cv_diag_error(d, c > 0 ? c : CV_E_HTTP_INTERNAL, (cv_span){0}, "%s %s: HTTP %ld: %s", method, path, status,
                  msg ? msg : "no JSON error in the response");
}

json_t *cv_farm_client_call(cv_farm_api *api, const char *method, const char *path, long *status,
                         cv_diag *d)
{
    const cv_curl_fns *c = api->curl;
    CURL *h = c->easy_init();
    if (!h) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "cannot start an HTTP request");
        return NULL;
    }
    char url[2048];
    snprintf(url, sizeof url, "%s%s", api->base, path);
    body b = {0};
    struct curl_slist *headers = c->slist_append(NULL, "Accept: application/json");
    if (api->auth[0])
        headers = c->slist_append(headers, api->auth);
    if (strcmp(method, "POST") == 0)   /* the server refuses form types (cross-site requests) */
        headers = c->slist_append(headers, "Content-Type: application/json");
    c->easy_setopt(h, CURLOPT_URL, url);
    c->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    c->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    c->easy_setopt(h, CURLOPT_WRITEDATA, &b);
    c->easy_setopt(h, CURLOPT_TIMEOUT, TIMEOUT_S);
    c->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(method, "POST") == 0) {
        c->easy_setopt(h, CURLOPT_POST, 1L);
        c->easy_setopt(h, CURLOPT_POSTFIELDS, "");
        c->easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
    }
    CURLcode rc = c->easy_perform(h);
    *status = 0;
    c->easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    c->slist_free_all(headers);
    c->easy_cleanup(h);
    json_t *o = NULL;
    if (rc != CURLE_OK) {
        cv_diag_error(d, CV_E_CACHE_REMOTE_UNREACHABLE, (cv_span){0}, "%s %s: %s", method, url,
                      b.too_big ? "the response is too large" : c->easy_strerror(rc));
    } else if (!(o = b.p ? json_loadb(b.p, b.n, 0, NULL) : NULL)) {
        cv_diag_error(d, CV_E_HTTP_INTERNAL, (cv_span){0}, "%s %s: HTTP %ld without a JSON body", method, url,
                      *status);
    } else if (*status >= 400) {
        api_error(o, *status, method, path, d);
        json_decref(o);
        o = NULL;
    }
    free(b.p);
    return o;
}
