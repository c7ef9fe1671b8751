/* Test helper (header-only, for test_k8s_*.c): the fake Kubernetes API
 * server of tests/k8s/ as a child process, and requests to it through the
 * operator's own REST client. */
#ifndef CV_TEST_K8S_TESTLIB_H
#define CV_TEST_K8S_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "k8s-operator/operator.h"
#include "tests/support/childproc.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

#define KT_NS "farm"
#define KT_CLUSTERS "/apis/cuvil.dev/v1/namespaces/" KT_NS "/cuvilbuildclusters"
#define KT_MERGE "application/merge-patch+json"

typedef struct kt_fake {
    cv_child child;
    int port;
    char url[64];               /* http(s)://127.0.0.1:PORT */
    cv_k8s_client *cl;          /* plain HTTP client (NULL for TLS servers) */
} kt_fake;

/* Starts the fake with extra arguments (NULL-terminated, may be NULL);
 * tls: the URL is https and no client is made.  0 or -1. */
static inline int kt_fake_start(kt_fake *f, const char *const *extra, bool tls)
{
    memset(f, 0, sizeof *f);
    char script[4096];
    snprintf(script, sizeof script, "%s/tests/k8s/fake_apiserver.py", cv_tmpdir_src_root());
    char *argv[16] = {(char *)CV_PYTHON, script};
    int n = 2;
    for (int i = 0; extra && extra[i] && n < 15; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    if (cv_child_spawn(&f->child, argv) != 0)
        return -1;
    const char *line = cv_child_line(&f->child, 15000);
    if (!line || sscanf(line, "listening %d", &f->port) != 1) {
        cv_child_stop_all(&f->child, 1, 9, NULL);
        return -1;
    }
    snprintf(f->url, sizeof f->url, "%s://127.0.0.1:%d", tls ? "https" : "http", f->port);
    if (tls)
        return 0;
    cv_k8s_config cfg = {.server = f->url};
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_k8s_client_open(&cfg, &f->cl, &d);
    cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    return rc;
}

static inline void kt_fake_stop(kt_fake *f)
{
    cv_k8s_client_close(f->cl);
    f->cl = NULL;
    cv_child_stop_all(&f->child, 1, 0, NULL);
}

/* One request; the body is stolen.  Returns the answer (owned by the
 * caller; NULL when empty) and its status in *status. */
static inline json_t *kt_call(kt_fake *f, const char *method, const char *path,
                              const char *ctype, json_t *body, long *status)
{
    cv_diag d;
    cv_diag_init(&d);
    json_t *out = NULL;
    long st = 0;
    int rc = cv_k8s_request(f->cl, method, path, ctype, body, &st, &out, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    json_decref(body);
    if (status)
        *status = rc ? -1 : st;
    return out;
}

/* GET; NULL when absent (404). */
static inline json_t *kt_get(kt_fake *f, const char *path)
{
    long st = 0;
    json_t *o = kt_call(f, "GET", path, NULL, NULL, &st);
    if (st != 200) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static inline json_t *kt_get_child(kt_fake *f, const char *api, const char *plural,
                                   const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/namespaces/" KT_NS "/%s/%s", api, plural, name);
    return kt_get(f, path);
}

static inline long kt_fake_stat(kt_fake *f, const char *what)
{
    json_t *s = kt_get(f, "/fake/stats");
    long v = (long)json_integer_value(json_object_get(s, what));
    json_decref(s);
    return v;
}

/* A CuvilBuildCluster in KT_NS from a JSON spec text. */
static inline json_t *kt_cluster(const char *name, const char *spec_json)
{
    json_t *spec = json_loads(spec_json, 0, NULL);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "cuvil.dev/v1", "kind",
                     "CuvilBuildCluster", "metadata", "name", name, "namespace", KT_NS, "spec",
                     spec);
}

/* The value of a named condition's field ("status", "reason", "message"). */
static inline const char *kt_condition(const json_t *obj, const char *type,
                                      const char *field)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
        if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
            return json_string_value(json_object_get(c, field));
    return NULL;
}

#endif
