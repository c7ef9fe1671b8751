/* cuvil serve's protocol (issue 32): a real server on 127.0.0.1 over a
 * model repository of real compiled artifacts.  Every endpoint; JSON and
 * binary inference equal to a direct run of the same artifact; every bad
 * request answered with the protocol's error shape and a stable code while
 * the server keeps serving; /metrics through promtool; a Python client
 * (urllib + numpy) as an unmodified Open Inference Protocol client would
 * speak. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/support/pyrun.h"
#include "tests/support/serve_testlib.h"

typedef struct fixture {
    char *dir, *repo;
    cv_serve *s;
    int port;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("serve");
    f->repo = cv_tmpdir_path(f->dir, "models");
    mkdir(f->repo, 0755);
    st_add_model(f->repo, "relu4", "1", ST_RELU, "max_batch_size: 8\nmax_queue_delay_us: 0\n");
    st_add_model(f->repo, "two", "3", ST_TWO, NULL);
    cv_serve_opts o = {.model_repository = f->repo, .listen = "127.0.0.1:0",
                       .max_body = 64 << 10, .max_tensor = 16 << 10};
    f->s = st_start(&o);
    f->port = cv_serve_port(f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cv_serve_stop(f->s, 1000);
    cv_tmpdir_remove(f->dir);
    free(f->repo);
    free(f);
    return 0;
}

static json_t *body_json(const st_resp *r)
{
    json_error_t e;
    json_t *j = json_loadb(r->body, r->body_len, 0, &e);
    assert_non_null(j);
    return j;
}

static void expect_get(int port, const char *path, int status, const char *key, const char *want)
{
    st_resp r = st_http(port, "GET", path, NULL, NULL, 0);
    assert_int_equal(r.status, status);
    json_t *j = body_json(&r);
    if (key) {
        char *v = json_dumps(json_object_get(j, key), JSON_ENCODE_ANY | JSON_COMPACT);
        assert_string_equal(v, want);
        free(v);
    }
    json_decref(j);
    st_resp_free(&r);
}

static void test_endpoints(void **state)
{
    fixture *f = *state;
    expect_get(f->port, "/v2/health/live", 200, "live", "true");
    expect_get(f->port, "/v2/health/ready", 200, "ready", "true");
    expect_get(f->port, "/v2", 200, "extensions", "[\"binary_tensor_data\"]");
    expect_get(f->port, "/v2/models/relu4", 200, "inputs",
               "[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[-1,4]}]");
    expect_get(f->port, "/v2/models/two/versions/3", 200, "versions", "[\"3\"]");
    expect_get(f->port, "/v2/models/two", 200, "outputs",
               "[{\"name\":\"1\",\"datatype\":\"FP32\",\"shape\":[-1,3]},"
               "{\"name\":\"2\",\"datatype\":\"FP32\",\"shape\":[-1,3]}]");
    expect_get(f->port, "/v2/models/relu4/ready", 200, "ready", "true");
    expect_get(f->port, "/v2/models/two/versions/3/ready", 200, "ready", "true");
    expect_get(f->port, "/v2/models/two/versions/2", 404, "code", "\"CV9412\"");
    expect_get(f->port, "/v2/models/nope/ready", 404, "code", "\"CV9412\"");
    expect_get(f->port, "/v2/nothing", 404, "code", "\"CV9413\"");
    expect_get(f->port, "/v2/models/relu4/infer", 405, "code", "\"CV9413\"");
}

/* The artifact run directly, as the reference. */
static void direct_run(const fixture *f, const char *model, const char *version, cv_tensor *in,
                       int n_in, cv_tensor *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", f->repo, model, version);
    cv_native *n;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_native_open(path, 1, &n, &d), 0);
    assert_int_equal(cv_native_run(n, in, n_in, out, &d), 0);
    cv_native_close(n);
    cv_diag_free(&d);
}

static void fill(cv_tensor *t, int64_t rows, int64_t cols, float seed)
{
    int64_t dims[2] = {rows, cols};
    assert_int_equal(cv_tensor_alloc(t, CV_F32, 2, dims), 0);
    for (int64_t i = 0; i < t->numel; i++)
        ((float *)t->data)[i] = seed * (float)(i - 5) / 7.0f;
}

static void test_infer_json_equals_direct_run(void **state)
{
    fixture *f = *state;
    cv_tensor in[2] = {{0}}, want[2] = {{0}};
    fill(&in[0], 2, 3, 1.5f);
    fill(&in[1], 2, 3, -0.25f);
    direct_run(f, "two", "3", in, 2, want);
    char req[2048];
    int n = snprintf(req, sizeof req, "{\"id\":\"r7\",\"inputs\":[");
    for (int k = 1; k >= 0; k--) {   /* out of signature order: matched by name */
        n += snprintf(req + n, sizeof req - (size_t)n, "{\"name\":\"%s\",\"datatype\":\"FP32\","
                      "\"shape\":[2,3],\"data\":[[", k ? "y" : "x");
        for (int i = 0; i < 6; i++)
            n += snprintf(req + n, sizeof req - (size_t)n, "%s%.9g", i == 0 ? "" : i == 3 ? "],[" : ",",
                          (double)((float *)in[k].data)[i]);
        n += snprintf(req + n, sizeof req - (size_t)n, "]]}%s", k ? "," : "");
    }
    snprintf(req + n, sizeof req - (size_t)n, "]}");
    st_resp r = st_post(f->port, "/v2/models/two/infer", req);
    assert_int_equal(r.status, 200);
    json_t *j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "id")), "r7");
    assert_string_equal(json_string_value(json_object_get(j, "model_version")), "3");
    json_t *outs = json_object_get(j, "outputs");
    assert_int_equal(json_array_size(outs), 2);
    for (int o = 0; o < 2; o++) {
        json_t *data = json_object_get(json_array_get(outs, (size_t)o), "data");
        assert_int_equal(json_array_size(data), 6);
        for (size_t i = 0; i < 6; i++)
            assert_true((float)json_number_value(json_array_get(data, i)) ==
                        ((float *)want[o].data)[i]);
    }
    json_decref(j);
    st_resp_free(&r);
    for (int k = 0; k < 2; k++)
        cv_tensor_free(&in[k]), cv_tensor_free(&want[k]);
}

/* Inputs and outputs as binary data: the bytes equal the direct run's. */
static void test_infer_binary_equals_direct_run(void **state)
{
    fixture *f = *state;
    cv_tensor in[2] = {{0}}, want[2] = {{0}};
    fill(&in[0], 5, 3, 0.75f);
    fill(&in[1], 5, 3, 2.0f);
    direct_run(f, "two", "3", in, 2, want);
    const char *hdr = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[5,3],"
                      "\"parameters\":{\"binary_data_size\":60}},{\"name\":\"y\",\"datatype\":"
                      "\"FP32\",\"shape\":[5,3],\"parameters\":{\"binary_data_size\":60}}],"
                      "\"outputs\":[{\"name\":\"2\",\"parameters\":{\"binary_data\":true}},"
                      "{\"name\":\"1\"}]}";
    size_t hl = strlen(hdr);
    char body[1024];
    memcpy(body, hdr, hl);
    memcpy(body + hl, in[0].data, 60);
    memcpy(body + hl + 60, in[1].data, 60);
    char extra[128];
    snprintf(extra, sizeof extra, "Inference-Header-Content-Length: %zu\r\n", hl);
    st_resp r = st_http(f->port, "POST", "/v2/models/two/infer", extra, body, hl + 120);
    if (r.status != 200)
        fail_msg("%d %s", r.status, r.body ? r.body : "");
    const char *rh = st_header(&r, "Inference-Header-Content-Length");
    assert_non_null(rh);
    size_t jl = (size_t)atol(rh);
    assert_int_equal(r.body_len, jl + 60);   /* only output "2" is binary */
    json_error_t e;
    json_t *j = json_loadb(r.body, jl, 0, &e);
    assert_non_null(j);
    json_t *o0 = json_array_get(json_object_get(j, "outputs"), 0);
    assert_string_equal(json_string_value(json_object_get(o0, "name")), "1");
    json_t *o1 = json_array_get(json_object_get(j, "outputs"), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o1, "parameters"),
                                                        "binary_data_size")), 60);
    assert_memory_equal(r.body + jl, want[1].data, 60);
    for (size_t i = 0; i < 15; i++)
        assert_true((float)json_number_value(json_array_get(json_object_get(o0, "data"), i)) ==
                    ((float *)want[0].data)[i]);
    json_decref(j);
    st_resp_free(&r);
    for (int k = 0; k < 2; k++)
        cv_tensor_free(&in[k]), cv_tensor_free(&want[k]);
}

static const char GOOD[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                           "\"data\":[1,-2,3,-4]}]}";

static void expect_serving(int port)
{
    st_resp r = st_post(port, "/v2/models/relu4/infer", GOOD);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"data\":[1.0,0.0,3.0,0.0]"));
    st_resp_free(&r);
}

typedef struct bad_case {
    const char *what, *path, *body, *extra;
    size_t len;              /* 0: strlen(body) */
    int status, code;
} bad_case;

static void test_bad_requests_get_protocol_errors(void **state)
{
    fixture *f = *state;
    static char big[80 << 10];
    memset(big, ' ', sizeof big);
    big[0] = '{';
    big[sizeof big - 1] = '}';
    /* A binary request whose data stop short of the 16 bytes announced. */
    static const char trunc[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                                "\"parameters\":{\"binary_data_size\":16}}]}\x01\x02\x03\x04\x05";
    size_t tl = strlen(trunc) - 5;
    /* ... and one with 4 bytes more than announced. */
    static char over[512];
    memcpy(over, trunc, strlen(trunc) - 5);
    memset(over + strlen(trunc) - 5, 7, 20);
    char tl_hdr[80], long_hdr[80];
    snprintf(tl_hdr, sizeof tl_hdr, "Inference-Header-Content-Length: %zu\r\n", tl);
    snprintf(long_hdr, sizeof long_hdr, "Inference-Header-Content-Length: 99999\r\n");
    const char *I = "/v2/models/relu4/infer";
    bad_case cases[] = {
        {"malformed JSON", I, "{\"inputs\": [", NULL, 0, 400, 9410},
        {"not an object", I, "[1,2]", NULL, 0, 400, 9410},
        {"no inputs", I, "{\"outputs\":[]}", NULL, 0, 400, 9410},
        {"wrong dtype", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT64\",\"shape\":[1,4],"
         "\"data\":[1,2,3,4]}]}", NULL, 0, 400, 9411},
        {"unknown dtype", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[1,4],"
         "\"data\":[1,2,3,4]}]}", NULL, 0, 400, 9411},
        {"wrong rank", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[4],"
         "\"data\":[1,2,3,4]}]}", NULL, 0, 400, 9411},
        {"wrong static dim", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,5],"
         "\"data\":[1,2,3,4,5]}]}", NULL, 0, 400, 9411},
        {"too few values", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,4],"
         "\"data\":[1,2,3,4]}]}", NULL, 0, 400, 9411},
        {"a string value", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],"
         "\"data\":[1,\"2\",3,4]}]}", NULL, 0, 400, 9411},
        {"batch over max_batch_size", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
         "\"shape\":[9,4],\"data\":[]}]}", NULL, 0, 400, 9411},
        {"unknown input", I, "{\"inputs\":[{\"name\":\"z\",\"datatype\":\"FP32\",\"shape\":[1,4],"
         "\"data\":[1,2,3,4]}]}", NULL, 0, 400, 9411},
        {"missing input", "/v2/models/two/infer", "{\"inputs\":[{\"name\":\"x\",\"datatype\":"
         "\"FP32\",\"shape\":[1,3],\"data\":[1,2,3]}]}", NULL, 0, 400, 9411},
        {"unknown output", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],"
         "\"data\":[1,2,3,4]}],\"outputs\":[{\"name\":\"nope\"}]}", NULL, 0, 400, 9410},
        {"unknown model", "/v2/models/nope/infer", GOOD, NULL, 0, 404, 9412},
        {"truncated binary data", I, trunc, tl_hdr, tl + 3, 400, 9418},
        {"binary data left over", I, over, tl_hdr, tl + 20, 400, 9418},
        {"header length past the body", I, GOOD, long_hdr, 0, 400, 9418},
        {"header length not a number", I, GOOD, "Inference-Header-Content-Length: 1x\r\n", 0,
         400, 9410},
        {"tensor over --max-tensor", I, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
         "\"shape\":[100000000000,4],\"data\":[]}]}", NULL, 0, 413, 9414},
        {"body over --max-body", I, big, NULL, sizeof big, 413, 9414},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bad_case *c = &cases[i];
        st_resp r = st_http(f->port, "POST", c->path, c->extra, c->body,
                            c->len ? c->len : strlen(c->body));
        if (r.status != c->status || st_error_code(&r) != c->code)
            fail_msg("%s: got %d %s", c->what, r.status, r.body ? r.body : "(no answer)");
        json_t *j = body_json(&r);
        assert_true(json_is_string(json_object_get(j, "error")));
        json_decref(j);
        st_resp_free(&r);
        expect_serving(f->port);
    }
    /* Counted by code, per model. */
    assert_true(st_metric(f->port, "cuvil_model_failures_total{model=\"relu4\",version=\"1\","
                                   "code=\"CV9411\"}") == 8);
    assert_true(st_metric(f->port, "cuvil_model_failures_total{model=\"relu4\",version=\"1\","
                                   "code=\"CV9418\"}") == 3);
}

/* promtool, Prometheus's own checker, takes the /metrics text. */
static void test_metrics_pass_promtool(void **state)
{
    fixture *f = *state;
    expect_serving(f->port);
    assert_true(st_metric(f->port, "cuvil_runtime_up") == 1);
    assert_true(st_metric(f->port, "cuvil_model_success_total{model=\"relu4\",version=\"1\"}") >= 1);
    if (access("/usr/bin/promtool", X_OK) != 0) {
        fprintf(stderr, "promtool not installed: the text format is not checked\n");
        return;
    }
    st_resp r = st_http(f->port, "GET", "/metrics", NULL, NULL, 0);
    char *out = NULL;
    size_t len;
    int rc = cv_pyrun_io("import subprocess, sys\n"
                         "p = subprocess.run(['/usr/bin/promtool', 'check', 'metrics'],"
                         " input=sys.stdin.buffer.read(), capture_output=True)\n"
                         "sys.stdout.write(p.stdout.decode() + p.stderr.decode())\n"
                         "sys.exit(p.returncode)\n",
                         NULL, r.body, r.body_len, &out, &len);
    if (rc != 0)
        fail_msg("promtool: %s", out);
    free(out);
    st_resp_free(&r);
}

/* A client written only from the protocol: Python's urllib and numpy. */
static void test_python_client(void **state)
{
    fixture *f = *state;
    if (!cv_pyrun_has_module("numpy")) {
        fprintf(stderr, "numpy missing: skipped\n");
        return;
    }
    char port[16];
    snprintf(port, sizeof port, "%d", f->port);
    const char *args[] = {port, NULL};
    char *out = NULL;
    int rc = cv_pyrun(
        "import json, sys, urllib.request, urllib.error, numpy as np\n"
        "base = 'http://127.0.0.1:%s/v2' % sys.argv[1]\n"
        "x = (np.arange(12, dtype=np.float32).reshape(3, 4) - 6) / 3\n"
        "req = {'inputs': [{'name': 'x', 'datatype': 'FP32', 'shape': list(x.shape),"
        " 'data': x.tolist()}]}\n"
        "r = json.load(urllib.request.urlopen(base + '/models/relu4/infer', json.dumps(req).encode()))\n"
        "y = np.array(r['outputs'][0]['data'], dtype=np.float32).reshape(r['outputs'][0]['shape'])\n"
        "assert (y == np.maximum(x, 0)).all(), y\n"
        "h = json.dumps({'inputs': [{'name': 'x', 'datatype': 'FP32', 'shape': [3, 4],"
        " 'parameters': {'binary_data_size': x.nbytes}}],"
        " 'parameters': {'binary_data_output': True}}).encode()\n"
        "q = urllib.request.Request(base + '/models/relu4/infer', h + x.tobytes(),"
        " {'Inference-Header-Content-Length': str(len(h)), 'Content-Type': 'application/octet-stream'})\n"
        "a = urllib.request.urlopen(q)\n"
        "n = int(a.headers['Inference-Header-Content-Length']); b = a.read()\n"
        "meta = json.loads(b[:n])\n"
        "y = np.frombuffer(b[n:], dtype=np.float32).reshape(meta['outputs'][0]['shape'])\n"
        "assert (y == np.maximum(x, 0)).all(), y\n"
        "try:\n"
        "    urllib.request.urlopen(base + '/models/relu4/infer', b'{')\n"
        "    sys.exit('no error')\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code, json.load(e)['error'][:6])\n",
        args, &out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "400 CV9410\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_infer_json_equals_direct_run),
        cmocka_unit_test(test_infer_binary_equals_direct_run),
        cmocka_unit_test(test_bad_requests_get_protocol_errors),
        cmocka_unit_test(test_metrics_pass_promtool),
        cmocka_unit_test(test_python_client),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
