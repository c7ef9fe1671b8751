/* Test helper (header-only, for tests/unit/serve/test_serve*.c): a model
 * repository made by the test (CU-IR text compiled in-process to real
 * artifacts), cuvil serve started on 127.0.0.1:0, and a raw-socket HTTP
 * client (Connection: close) so that the test sees exactly what the server
 * sends, and can send what no library client would. */
#ifndef CV_TEST_SERVE_TESTLIB_H
#define CV_TEST_SERVE_TESTLIB_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler-core/cuvil.h"
#include "serve/serve.h"
#include "tests/support/tmpdir.h"

/* relu on f32[N,4]: the batchable model most tests use. */
static const char ST_RELU[] = "cuir 1\nmodel @relu4(%x: f32[N,4]) -> (f32[N,4]) {\n"
                              "  %0 = relu(%x) : f32[N,4]\n  return %0\n}\n";
/* Two inputs, two outputs, a static second dim. */
static const char ST_TWO[] = "cuir 1\nmodel @two(%x: f32[N,3], %y: f32[N,3]) -> (f32[N,3], f32[N,3]) {\n"
                             "  %0 = add(%x, %y) : f32[N,3]\n  %1 = tanh(%0) : f32[N,3]\n"
                             "  %2 = mul(%x, %y) : f32[N,3]\n  return %1, %2\n}\n";

/* 24 chained 256x256 matmuls on f32[N,256,256] (malloc'd CU-IR text):
 * tens of milliseconds a run, long enough for clients to find its queue
 * full or a request still in flight. */
/* Starts a server with o (its listen address 127.0.0.1:0 as the tests
 * use), printing the diagnostics when it does not start. */
static inline cv_serve *st_start(const cv_serve_opts *o)
{
    cv_serve *s = NULL;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_serve_start(o, &s, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    assert_int_equal(rc, 0);
    return s;
}

static inline char *st_slow_model(void)
{
    size_t cap = 8192;
    char *t = malloc(cap);
    int n = snprintf(t, cap, "cuir 1\nmodel @slow(%%x: f32[N,256,256]) -> (f32[N,256,256]) {\n"
                     "  %%0 = matmul(%%x, %%x) : f32[N,256,256]\n");
    for (int k = 1; k < 24; k++)
        n += snprintf(t + n, cap - (size_t)n, "  %%%d = matmul(%%%d, %%x) : f32[N,256,256]\n", k,
                      k - 1);
    snprintf(t + n, cap - (size_t)n, "  return %%23\n}\n");
    return t;
}

/* Compiles CU-IR text into repo/name/version/ and writes config (NULL:
 * none) as repo/name/config.yaml. */
static inline void st_add_model(const char *repo, const char *name, const char *version,
                                const char *cuir, const char *config)
{
    char *mdir = cv_tmpdir_path(repo, name);
    mkdir(mdir, 0755);
    assert_int_equal(cv_tmpdir_write(mdir, "model.cuir", cuir, strlen(cuir)), 0);
    if (config)
        assert_int_equal(cv_tmpdir_write(mdir, "config.yaml", config, strlen(config)), 0);
    char *src = cv_tmpdir_path(mdir, "model.cuir");
    char *out = cv_tmpdir_path(mdir, version);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(src, 0, &d);
    cv_compile_opts o = {.target = "native", .opt_level = 2, .emit = CV_EMIT_SO, .out_dir = out};
    cv_compile_info info;
    int rc = m ? cv_compile_native(m, &o, &info, &d) : -1;
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    cv_module_free(m);
    cv_diag_free(&d);
    remove(src);
    free(src);
    free(out);
    free(mdir);
}

typedef struct st_resp {
    int status;
    char *head;        /* status line and headers, NUL-terminated */
    char *body;        /* NUL-terminated too */
    size_t body_len;
} st_resp;

static inline void st_resp_free(st_resp *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

static inline int st_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline void st_send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0)
            return;
        c += k;
        n -= (size_t)k;
    }
}

/* Reads the whole answer (the server closes after it). */
static inline st_resp st_read(int fd)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t k = recv(fd, buf + len, cap - len - 1, 0);
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    buf[len] = 0;
    st_resp r = {0};
    char *end = strstr(buf, "\r\n\r\n");
    if (!end || sscanf(buf, "HTTP/1.%*d %d", &r.status) != 1) {
        free(buf);
        return r;
    }
    size_t hl = (size_t)(end - buf);
    r.head = strndup(buf, hl);
    r.body_len = len - hl - 4;
    r.body = malloc(r.body_len + 1);
    memcpy(r.body, end + 4, r.body_len);
    r.body[r.body_len] = 0;
    free(buf);
    return r;
}

/* One request; extra: more header lines ("Name: v\r\n"), or NULL.  The
 * Content-Length is the body's unless extra names one. */
static inline st_resp st_http(int port, const char *method, const char *path, const char *extra,
                              const void *body, size_t len)
{
    int fd = st_connect(port);
    assert_true(fd >= 0);
    char head[2048];
    bool own_cl = extra && (strncasecmp(extra, "Content-Length:", 15) == 0 ||
                            strcasestr(extra, "\nContent-Length:"));
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n",
                     method, path);
    if (!own_cl && (body || strcmp(method, "POST") == 0))
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n", len);
    n += snprintf(head + n, sizeof head - (size_t)n, "%s\r\n", extra ? extra : "");
    st_send_all(fd, head, (size_t)n);
    if (body)
        st_send_all(fd, body, len);
    shutdown(fd, SHUT_WR);
    st_resp r = st_read(fd);
    close(fd);
    return r;
}

static inline st_resp st_post(int port, const char *path, const char *json)
{
    return st_http(port, "POST", path, NULL, json, strlen(json));
}

/* A header's value in the answer (a static copy), or NULL. */
static inline const char *st_header(const st_resp *r, const char *name)
{
    static char v[256];
    size_t n = strlen(name);
    for (const char *p = r->head; p && (p = strstr(p, "\r\n")); p += 2)
        if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
            const char *s = p + 3 + n;
            while (*s == ' ')
                s++;
            size_t l = strcspn(s, "\r");
            snprintf(v, sizeof v, "%.*s", (int)l, s);
            return v;
        }
    return NULL;
}

/* A sample's value from /metrics ("name{labels}"), -1 when absent. */
static inline double st_metric(int port, const char *sample)
{
    st_resp r = st_http(port, "GET", "/metrics", NULL, NULL, 0);
    double v = -1;
    size_t n = strlen(sample);
    for (char *p = r.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, sample, n) == 0 && p[n] == ' ')
            v = strtod(p + n + 1, NULL);
    st_resp_free(&r);
    return v;
}

/* The error code of a protocol error body ({"error": "CVnnnn: ...", "code": "CVnnnn"}). */
static inline int st_error_code(const st_resp *r)
{
    const char *e = r->body ? strstr(r->body, "{\"error\":\"CV") : NULL;
    return e ? atoi(e + 12) : 0;
}

#endif
