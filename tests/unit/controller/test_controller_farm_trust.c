/* What a repository writer cannot do to a farm, end to end through the
 * sanitized binary ($CUVIL_BIN), a git repository made by the test and two
 * real cache servers on 127.0.0.1 (the farm's and an attacker's):
 *   - a commit whose cluster spec names the attacker's server as its remote
 *     cache and a Kafka broker list: the farm builds with the operator's
 *     remote and queue (CV6160, CV6161) and sends the attacker nothing;
 *   - action entries on the shared remote are signed by the farm's own key
 *     (made in its state directory); an entry someone else wrote there (an
 *     unsigned copy of another model's entry under mlp's key) is refused
 *     by a fresh farm, which compiles mlp itself instead of recording the
 *     other model's library as mlp's;
 *   - `cuvil artifacts get` from a remote refuses to run without the verify
 *     key (CV6165) and refuses a foreign-signed entry (CV9314). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "cache/cache.h"
#include "cache/remote.h"
#include "controller/controller.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"
#include "tests/support/farm_testlib.h"
#include "tests/support/gitrepo_testlib.h"

typedef struct fx {
    const char *bin;
    char *dir, *repo, *err;
    cv_cache_server *farm_srv, *evil_srv;
    char farm_url[64], evil_url[64];
} fx;

static cv_cache_server *serve(const char *dir, const char *name, char url[64])
{
    char *store = cv_tmpdir_path(dir, name);
    cv_cache_server_options o = {.listen = "127.0.0.1:0", .dir = store, .threads = 2};
    cv_cache_server *s = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_server_start(&o, &s, &d), 0);
    cv_diag_free(&d);
    free(store);
    snprintf(url, 64, "http://127.0.0.1:%d", cv_cache_server_port(s));
    return s;
}

static int setup(void **state)
{
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0)
        return 0;   /* *state stays NULL: every test skips */
    fx *f = calloc(1, sizeof *f);
    f->bin = bin;
    f->dir = cv_tmpdir_make("farm-trust");
    f->repo = cv_tmpdir_path(f->dir, "repo");
    f->err = cv_tmpdir_path(f->dir, "stderr.txt");
    f->farm_srv = serve(f->dir, "farm-store", f->farm_url);
    f->evil_srv = serve(f->dir, "evil-store", f->evil_url);
    unsetenv("CUVIL_REMOTE_CACHE_SIGNING_KEY");
    unsetenv("CUVIL_REMOTE_CACHE_VERIFY_KEY");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (!f)
        return 0;
    cv_cache_server_stop(f->farm_srv, 1000);
    cv_cache_server_stop(f->evil_srv, 1000);
    free(f->repo);
    free(f->err);
    cv_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

typedef struct buf {
    char *p;
    size_t n;
} buf;

static size_t collect(char *p, size_t sz, size_t n, void *ctx)
{
    buf *b = ctx;
    b->p = realloc(b->p, b->n + sz * n + 1);
    memcpy(b->p + b->n, p, sz * n);
    b->n += sz * n;
    b->p[b->n] = '\0';
    return sz * n;
}

/* Requests a cache server answered for entries (kind cas or ac), by
 * method ("" = every method), read from its /metrics. */
static long requests(const char *base, const char *method)
{
    char url[128];
    snprintf(url, sizeof url, "%s/metrics", base);
    buf b = {0};
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    assert_int_equal(curl_easy_perform(h), CURLE_OK);
    curl_easy_cleanup(h);
    assert_non_null(b.p);
    long total = 0;
    for (const char *line = b.p; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        static const char pre[] = "cuvil_cache_requests_total{kind=\"";
        if (strncmp(line, pre, sizeof pre - 1) != 0)
            continue;
        const char *kind = line + sizeof pre - 1;
        if (strncmp(kind, "cas\"", 4) != 0 && strncmp(kind, "ac\"", 3) != 0)
            continue;
        char want[32];
        snprintf(want, sizeof want, "method=\"%s\"", method);
        if (*method && !strstr(line, want))
            continue;
        total += atol(strchr(line, '}') + 1);
    }
    free(b.p);
    return total;
}

static char *read_err(const fx *f)
{
    size_t len;
    char *e = cv_tmpdir_read_file(f->err, &len);
    return e ? e : strdup("");
}

/* `cuvil farm up --once --workers 2` with extra flags; its summary goes to
 * *out, its exit status is returned. */
static int farm_up(const fx *f, const char *state, const char *const *extra, char **out)
{
    const char *argv[24] = {f->bin, "farm", "up", f->repo, "--once", "--workers", "2",
                            "--state", state};
    int n = 9;
    for (int i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    int rc = cv_run_argv(argv, f->err, out);
    if (rc != 0) {
        char *e = read_err(f);
        fprintf(stderr, "farm up exited %d:\n%s%s", rc, *out ? *out : "", e);
        free(e);
    }
    return rc;
}

static void assert_has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("no '%s' in:\n%s", want, text);
}

static void artifact_key(const char *state_dir, const char *hex, const char *model,
                         char manifest[CV_DIGEST_HEX + 1], char l2[CV_DIGEST_HEX + 1])
{
    farm_artifact_key(state_dir, hex, model, "fp32", manifest, l2);
}

/* An attacker with write access to the shared remote: copies the action
 * entry of key `from` to key `to`, unsigned or signed with sign_pem. */
static void substitute(const char *url, const char *from, const char *to, const char *sign_pem)
{
    cv_remote_options plain_o = {.url = url, .retries = -1};
    cv_remote_options signer_o = {.url = url, .retries = -1, .sign_key = sign_pem};
    cv_remote *plain = NULL, *signer = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_remote_open(&plain_o, &plain, &d), 0);
    assert_int_equal(cv_cache_remote_open(sign_pem ? &signer_o : &plain_o, &signer, &d), 0);
    cv_digest a, b;
    assert_int_equal(cv_cache_digest_parse(from, &a), 0);
    assert_int_equal(cv_cache_digest_parse(to, &b), 0);
    void *entry = NULL;
    size_t len = 0;
    assert_int_equal(cv_cache_remote_get(plain, CV_CAS_AC, &a, &entry, &len, &d),
                     CV_REMOTE_FOUND);
    assert_int_equal(cv_cache_remote_put(signer, CV_CAS_AC, &b, entry, len, &d), 0);
    free(entry);
    cv_cache_remote_close(plain);
    cv_cache_remote_close(signer);
    cv_diag_free(&d);
}

static char *foreign_key(const char *dir)
{
    char *path = cv_tmpdir_path(dir, "attacker.pem");
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(PEM_write_PrivateKey(fp, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(fp);
    EVP_PKEY_free(k);
    return path;
}

static void test_commit_cannot_redirect_or_substitute(void **state)
{
    fx *f = *state;
    if (!f) {
        skip();
        return;
    }
    char *state_a = cv_tmpdir_path(f->dir, "state-a"), *cache_a = cv_tmpdir_path(f->dir, "cache-a");
    char *state_b = cv_tmpdir_path(f->dir, "state-b"), *cache_b = cv_tmpdir_path(f->dir, "cache-b");
    /* the operator's remote comes from the environment, as a deployment
     * would set it; the spec names the attacker's server and a broker */
    setenv("CUVIL_REMOTE_CACHE", f->farm_url, 1);
    setenv("CUVIL_CACHE_DIR", cache_a, 1);
    char cluster[512];
    snprintf(cluster, sizeof cluster,
             "apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\nmetadata: {name: c}\n"
             "spec:\n  source: {url: /srv/models.git}\n"
             "  queue: {kind: kafka, brokers: \"127.0.0.1:1\"}\n"
             "  cache: {remote: \"%s\"}\n", f->evil_url);
    char *mlp = farm_example("mlp.cuir"), *residual = farm_example("residual.cuir");
    git_repository *repo = trepo_init(f->repo);
    const trepo_file first[] = {{"cuvil/pipelines.yaml", FARM_PIPELINE, 0},
                                {"cuvil/cluster.yaml", cluster, 0},
                                {"models/mlp.cuir", mlp, 0},
                                {"models/residual.cuir", residual, 0}};
    char hex1[41];
    trepo_commit(repo, "exfiltrate", first, 4, hex1);
    char *out = NULL;
    assert_int_equal(farm_up(f, state_a, NULL, &out), 0);
    assert_has(out, "compiled   2\n");
    free(out);
    char *e = read_err(f);
    assert_has(e, "CV6160");   /* the remote refused */
    assert_has(e, "CV6161");   /* the queue refused */
    free(e);
    /* nothing went to the attacker; the farm's remote got the artifacts */
    assert_int_equal(requests(f->evil_url, ""), 0);
    assert_true(requests(f->farm_url, "PUT") >= 4);
    /* the farm made its key pair */
    char *sign_a = cv_tmpdir_path(state_a, "keys/ac-signing.pem");
    char *verify_a = cv_tmpdir_path(state_a, "keys/ac-verify.pem");
    assert_int_equal(access(sign_a, R_OK), 0);
    assert_int_equal(access(verify_a, R_OK), 0);

    /* A second revision plans with farm A's cache warm: both are hits at
     * planning, so the build DB records their real L2 keys. */
    const trepo_file second[] = {{"README.md", "models\n", 0}};
    char hex2[41];
    trepo_commit(repo, "readme", second, 1, hex2);
    assert_int_equal(farm_up(f, state_a, NULL, &out), 0);
    assert_has(out, "compiled   0\n");
    free(out);
    char m_mlp[CV_DIGEST_HEX + 1], l2_mlp[CV_DIGEST_HEX + 1];
    char m_res[CV_DIGEST_HEX + 1], l2_res[CV_DIGEST_HEX + 1], m_mlp1[CV_DIGEST_HEX + 1];
    artifact_key(state_a, hex1, "models/mlp.cuir", m_mlp1, l2_mlp);
    artifact_key(state_a, hex2, "models/mlp.cuir", m_mlp, l2_mlp);
    artifact_key(state_a, hex2, "models/residual.cuir", m_res, l2_res);
    assert_int_equal(strlen(m_mlp1), CV_DIGEST_HEX);
    assert_string_equal(m_mlp, "");

    /* Someone who can write to the shared cache points mlp's L2 key at
     * residual's library (an unsigned entry). */
    substitute(f->farm_url, l2_res, l2_mlp, NULL);

    /* A fresh farm (new state, empty local cache) with the same key: mlp's
     * entry is refused and mlp compiled; residual's signed entry is a hit. */
    setenv("CUVIL_CACHE_DIR", cache_b, 1);
    const trepo_file third[] = {{"README.md", "models, again\n", 0}};
    char hex3[41];
    trepo_commit(repo, "readme again", third, 1, hex3);
    const char *with_key[] = {"--signing-key", sign_a, NULL};
    assert_int_equal(farm_up(f, state_b, with_key, &out), 0);
    assert_has(out, "compiled   1\n");
    free(out);
    char m_mlp3[CV_DIGEST_HEX + 1], l2_mlp3[CV_DIGEST_HEX + 1];
    char m_res3[CV_DIGEST_HEX + 1], l2_res3[CV_DIGEST_HEX + 1];
    artifact_key(state_b, hex3, "models/mlp.cuir", m_mlp3, l2_mlp3);
    artifact_key(state_b, hex3, "models/residual.cuir", m_res3, l2_res3);
    assert_string_equal(m_mlp3, m_mlp1);   /* mlp's own library, compiled again */
    assert_string_equal(l2_res3, l2_res);
    assert_string_equal(m_res3, "");       /* a verified hit at planning */
    assert_int_equal(requests(f->evil_url, ""), 0);

    /* artifacts get of that hit, through the remote only (empty cache) */
    char *empty = cv_tmpdir_path(f->dir, "empty-cache"), *got = cv_tmpdir_path(f->dir, "got");
    char *got_manifest = cv_tmpdir_path(got, "manifest.json");
    const char *get[] = {f->bin, "artifacts", "get", hex3, "models/residual.cuir",
                         "x86_64-avx2", "-o", got, "--state", state_b, "--cache", empty,
                         "--remote-cache", f->farm_url, NULL, NULL, NULL};
    /* state B has no key pair of its own (it was given one): refused */
    assert_int_equal(cv_run_argv(get, f->err, NULL), 1);
    e = read_err(f);
    assert_has(e, "CV6165");
    free(e);
    get[14] = "--verify-key";
    get[15] = verify_a;
    assert_int_equal(cv_run_argv(get, f->err, NULL), 0);
    assert_int_equal(access(got_manifest, R_OK), 0);
    /* residual's key now points at mlp's library, signed by a stranger */
    char *evil_key = foreign_key(f->dir);
    substitute(f->farm_url, l2_mlp, l2_res, evil_key);
    char *got2 = cv_tmpdir_path(f->dir, "got2"), *got2_manifest = cv_tmpdir_path(got2, "manifest.json");
    char *empty2 = cv_tmpdir_path(f->dir, "empty-cache2");   /* the first get filled empty */
    get[7] = got2;
    get[11] = empty2;
    assert_int_equal(cv_run_argv(get, f->err, NULL), 1);
    e = read_err(f);
    assert_has(e, "CV9314");
    free(e);
    assert_int_equal(access(got2_manifest, F_OK), -1);

    free(empty2);
    free(got2_manifest);
    free(got2);
    free(evil_key);
    free(got_manifest);
    free(got);
    free(empty);
    free(sign_a);
    free(verify_a);
    free(mlp);
    free(residual);
    trepo_free(repo);
    free(state_a);
    free(cache_a);
    free(state_b);
    free(cache_b);
}

/* Limits: a spec may lower the operator's job timeout and memory limit,
 * never raise them: the revision says so (CV6162) and the farm's worker
 * runs with the ceilings (its log names its limits). */
static void test_spec_cannot_raise_limits(void **state)
{
    fx *f = *state;
    if (!f) {
        skip();
        return;
    }
    char *st = cv_tmpdir_path(f->dir, "state-l"), *cache = cv_tmpdir_path(f->dir, "cache-l");
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    setenv("CUVIL_CACHE_DIR", cache, 1);
    setenv("CUVIL_LOG", "info", 1);   /* the worker's log names its limits */
    static const char cluster[] =
        "apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\nmetadata: {name: c}\n"
        "spec:\n  source: {url: /srv/models.git}\n"
        "  workers: {jobTimeout: 48h, memoryLimit: 64Gi}\n";
    char *mlp = farm_example("mlp.cuir");
    char *repo_dir = cv_tmpdir_path(f->dir, "repo-l");
    free(f->repo);
    f->repo = repo_dir;
    git_repository *repo = trepo_init(f->repo);
    const trepo_file files[] = {{"cuvil/pipelines.yaml", FARM_PIPELINE, 0},
                                {"cuvil/cluster.yaml", cluster, 0},
                                {"models/mlp.cuir", mlp, 0}};
    trepo_commit(repo, "no limits please", files, 3, NULL);
    char *out = NULL;
    const char *flags[] = {"--job-timeout", "2m", "--memory-limit", "8Gi", NULL};
    assert_int_equal(farm_up(f, st, flags, &out), 0);
    assert_has(out, "compiled   1\n");
    free(out);
    char *e = read_err(f);
    assert_has(e, "CV6162");
    assert_has(e, "spec.workers.jobTimeout 172800s is above the operator's ceiling 120s");
    assert_has(e, "spec.workers.memoryLimit");
    free(e);
    char *log_path = cv_tmpdir_path(st, "worker-0.log");
    size_t len;
    char *log = cv_tmpdir_read_file(log_path, &len);
    assert_non_null(log);
    assert_has(log, "job timeout 120000ms, memory limit 8589934592 bytes");
    free(log);
    free(log_path);
    unsetenv("CUVIL_LOG");
    free(mlp);
    trepo_free(repo);
    free(st);
    free(cache);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_cannot_redirect_or_substitute, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spec_cannot_raise_limits, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
