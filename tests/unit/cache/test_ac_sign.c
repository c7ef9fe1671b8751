/* Signed action-cache entries (cache/ac_sign.c) through the real remote
 * client and a real `cuvil cache serve` on 127.0.0.1: a reader with the
 * verify key takes entries signed by the matching key and refuses (CV9314)
 * unsigned ones, ones signed by another key, and a signed entry replayed
 * under another key; a reader without keys strips the signature; a
 * private key given as verify key verifies with its public half (what a
 * farm does); an unusable key file is refused (CV9315). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/ac_sign.h"
#include "cache/cache.h"
#include "cache/remote.h"
#include "tests/support/tmpdir.h"

typedef struct fx {
    char *tmp;                 /* owned */
    char *priv_a, *pub_a;      /* key A's PEM files */
    char *priv_b;              /* key B: another signer */
    cv_cache_server *srv;
    char url[64];
} fx;

static char *write_key(const char *dir, const char *name, EVP_PKEY *k, int priv)
{
    char *path = cv_tmpdir_path(dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(priv ? PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL)
                          : PEM_write_PUBKEY(f, k), 1);
    fclose(f);
    return path;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->tmp = cv_tmpdir_make("acsign");
    EVP_PKEY *a = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    EVP_PKEY *b = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    f->priv_a = write_key(f->tmp, "a.pem", a, 1);
    f->pub_a = write_key(f->tmp, "a.pub", a, 0);
    f->priv_b = write_key(f->tmp, "b.pem", b, 1);
    EVP_PKEY_free(a);
    EVP_PKEY_free(b);
    char *store = cv_tmpdir_path(f->tmp, "store");
    cv_cache_server_options o = {.listen = "127.0.0.1:0", .dir = store, .threads = 1};
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_server_start(&o, &f->srv, &d);
    cv_diag_free(&d);
    free(store);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", cv_cache_server_port(f->srv));
    *state = f;
    return rc;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_cache_server_stop(f->srv, 1000);
    free(f->priv_a);
    free(f->pub_a);
    free(f->priv_b);
    cv_tmpdir_remove(f->tmp);
    free(f);
    return 0;
}

static cv_remote *client(const fx *f, const char *sign, const char *verify)
{
    cv_remote_options o = {.url = f->url, .sign_key = sign, .verify_key = verify, .retries = -1};
    cv_remote *r = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_remote_open(&o, &r, &d), 0);
    cv_diag_free(&d);
    return r;
}

static void put(cv_remote *r, const cv_digest *name, const char *s)
{
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_AC, name, s, strlen(s), &d), 0);
    cv_diag_free(&d);
}

/* GET of an action entry: the bytes (NUL-terminated, malloc'd) or NULL with
 * the error code in *code. */
static char *get(cv_remote *r, const cv_digest *name, int *code)
{
    void *data = NULL;
    size_t len = 0;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_remote_get(r, CV_CAS_AC, name, &data, &len, &d);
    *code = rc < 0 && d.n ? d.v[0].code : 0;
    cv_diag_free(&d);
    if (rc != CV_REMOTE_FOUND)
        return NULL;
    char *s = malloc(len + 1);
    memcpy(s, data, len);
    s[len] = '\0';
    free(data);
    return s;
}

static void test_signed_entries_verified(void **state)
{
    fx *f = *state;
    cv_digest n1 = {{1}}, n2 = {{2}}, n3 = {{3}}, n4 = {{4}};
    cv_remote *signer = client(f, f->priv_a, NULL), *other = client(f, f->priv_b, NULL);
    cv_remote *plain = client(f, NULL, NULL), *reader = client(f, NULL, f->pub_a);
    put(signer, &n1, "{\"l2\":\"good\"}");
    put(plain, &n2, "{\"l2\":\"unsigned\"}");
    put(other, &n3, "{\"l2\":\"other signer\"}");
    int code;
    char *s = get(reader, &n1, &code);
    assert_string_equal(s, "{\"l2\":\"good\"}");
    free(s);
    s = get(plain, &n1, &code);   /* no verify key: the signature is stripped */
    assert_string_equal(s, "{\"l2\":\"good\"}");
    free(s);
    assert_null(get(reader, &n2, &code));
    assert_int_equal(code, 9314);
    assert_null(get(reader, &n3, &code));
    assert_int_equal(code, 9314);
    /* A signed entry stored under another key: the signature binds the key. */
    cv_ac_keys *k = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_ac_keys_load(f->priv_a, NULL, &k, &d), 0);
    void *sealed = NULL;
    size_t len = 0;
    assert_int_equal(cv_ac_seal(k, &n1, "{\"l2\":\"evil\"}", 13, &sealed, &len, &d), 0);
    assert_int_equal(cv_cache_remote_put(plain, CV_CAS_AC, &n4, sealed, len, &d), 0);
    assert_null(get(reader, &n4, &code));
    assert_int_equal(code, 9314);
    /* a farm gives its signing key as verify key too: the public half is used */
    cv_remote *self = client(f, NULL, f->priv_a);
    s = get(self, &n1, &code);
    assert_string_equal(s, "{\"l2\":\"good\"}");
    free(s);
    assert_null(get(self, &n3, &code));
    assert_int_equal(code, 9314);
    cv_cache_remote_close(self);
    free(sealed);
    cv_ac_keys_free(k);
    cv_diag_free(&d);
    cv_cache_remote_close(signer);
    cv_cache_remote_close(other);
    cv_cache_remote_close(plain);
    cv_cache_remote_close(reader);
}

static void test_bad_key_file_refused(void **state)
{
    fx *f = *state;
    char *junk = cv_tmpdir_path(f->tmp, "junk.pem");
    FILE *fp = fopen(junk, "w");
    assert_non_null(fp);
    fputs("-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n", fp);
    fclose(fp);
    cv_remote_options o = {.url = f->url, .verify_key = junk};
    cv_remote *r = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_remote_open(&o, &r, &d), -1);
    assert_int_equal(d.v[0].code, 9315);
    cv_diag_free(&d);
    free(junk);
    cv_diag_init(&d);
    o.verify_key = NULL;
    o.sign_key = "/nonexistent/key.pem";
    assert_int_equal(cv_cache_remote_open(&o, &r, &d), -1);
    assert_int_equal(d.v[0].code, 9315);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_signed_entries_verified, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_key_file_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
