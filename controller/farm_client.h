/* A client of a farm's JSON API (controller/farm_client.c), for `cuvil submit --farm`. */
#ifndef CV_CONTROLLER_FARM_CLIENT_H
#define CV_CONTROLLER_FARM_CLIENT_H

#include "common/diag.h"

struct cv_curl_fns;
struct json_t;

typedef struct cv_farm_api {
    const struct cv_curl_fns *curl;  /* the loaded libcurl's table */
    char base[1024];                 /* the URL without a trailing '/' */
    char auth[600];                  /* "Authorization: Bearer ..." or "" */
} cv_farm_api;

/* url: http(s)://host[:port][/prefix]; token may be NULL. */
int cv_farm_client_open(const char *url, const char *token, cv_farm_api *api, cv_diag *d);
/* method "GET" or "POST" (empty body) of path (starting with '/'): the JSON
 * response (caller decrefs), or NULL with the API's error (its CV code) or
 * a transport error in d.  *status is the HTTP status (0 without one). */
struct json_t *cv_farm_client_call(cv_farm_api *api, const char *method, const char *path,
                                long *status, cv_diag *d);

#endif
