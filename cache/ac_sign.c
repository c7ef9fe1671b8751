/* Signed action-cache entries (see ac_sign.h).  On the wire an entry is
 *   "CVACSIG1" | Ed25519 signature (64 bytes) | the entry's bytes
 * and the signature covers "cuvil-ac-sig/1\0" | the 32-byte key | the
 * entry's bytes. */
#include "cache/ac_sign.h"
#include "cache/internal.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "CVACSIG1"
#define MAGIC_LEN 8
#define SIG_LEN 64
#define DOMAIN "cuvil-ac-sig/1"

struct cv_ac_keys {
    EVP_PKEY *sign;     /* owned; NULL: entries are PUT as they are */
    EVP_PKEY *verify;   /* owned; NULL: signatures are not required */
};

/* A verify key may also be given as the private key: its public half
 * verifies (a farm that signs needs no second file). */
static EVP_PKEY *load_key(const char *path, bool priv, cv_diag *d)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k = NULL;
    if (f) {
        k = priv ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : PEM_read_PUBKEY(f, NULL, NULL, NULL);
        if (!k && !priv) {
            rewind(f);
            k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        }
        fclose(f);
    }
    if (k && EVP_PKEY_get_id(k) == EVP_PKEY_ED25519)
        return k;
    EVP_PKEY_free(k);
    cv_cache_err(d, CV_E_CACHE_AC_KEY, "action-cache %s key %.200s: %s", priv ? "signing" : "verify",
                 path, !f ? "cannot be read" : "not an Ed25519 key in PEM");
    return NULL;
}

int cv_ac_keys_load(const char *sign_pem, const char *verify_pem, cv_ac_keys **out, cv_diag *d)
{
    *out = NULL;
    bool s = sign_pem && *sign_pem, v = verify_pem && *verify_pem;
    if (!s && !v)
        return 0;
    cv_ac_keys *k = calloc(1, sizeof *k);
    if (!k)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory loading cache keys");
    if ((s && !(k->sign = load_key(sign_pem, true, d))) ||
        (v && !(k->verify = load_key(verify_pem, false, d)))) {
        cv_ac_keys_free(k);
        return -1;
    }
    *out = k;
    return 0;
}

void cv_ac_keys_free(cv_ac_keys *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->sign);
    EVP_PKEY_free(k->verify);
    free(k);
}

/* DOMAIN | name | data, malloc'd: Ed25519 signs whole messages. */
static unsigned char *message(const cv_digest *name, const void *data, size_t len, size_t *n)
{
    *n = sizeof DOMAIN + sizeof name->b + len;
    unsigned char *m = malloc(*n ? *n : 1);
    if (m) {
        memcpy(m, DOMAIN, sizeof DOMAIN);
        memcpy(m + sizeof DOMAIN, name->b, sizeof name->b);
        if (len)
            memcpy(m + sizeof DOMAIN + sizeof name->b, data, len);
    }
    return m;
}

int cv_ac_seal(const cv_ac_keys *k, const cv_digest *name, const void *data, size_t len,
               void **out, size_t *out_len, cv_diag *d)
{
    *out = NULL;
    *out_len = len;
    if (!k || !k->sign)
        return 0;
    size_t mlen, siglen = SIG_LEN;
    unsigned char *m = message(name, data, len, &mlen);
    unsigned char *env = malloc(MAGIC_LEN + SIG_LEN + len);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = m && env && ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->sign) == 1 &&
              EVP_DigestSign(ctx, env + MAGIC_LEN, &siglen, m, mlen) == 1 && siglen == SIG_LEN;
    EVP_MD_CTX_free(ctx);
    free(m);
    if (!ok) {
        free(env);
        return cv_cache_err(d, CV_E_CACHE_AC_KEY, "cannot sign an action-cache entry");
    }
    memcpy(env, MAGIC, MAGIC_LEN);
    if (len)
        memcpy(env + MAGIC_LEN + SIG_LEN, data, len);
    *out = env;
    *out_len = MAGIC_LEN + SIG_LEN + len;
    return 0;
}

static bool good_signature(EVP_PKEY *key, const cv_digest *name, const unsigned char *sig,
                           const void *data, size_t len)
{
    size_t mlen;
    unsigned char *m = message(name, data, len, &mlen);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = m && ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1 &&
              EVP_DigestVerify(ctx, sig, SIG_LEN, m, mlen) == 1;
    EVP_MD_CTX_free(ctx);
    free(m);
    return ok;
}

int cv_ac_unseal(const cv_ac_keys *k, const cv_digest *name, void *buf, size_t *len, cv_diag *d)
{
    unsigned char *b = buf;
    bool sealed = *len >= MAGIC_LEN + SIG_LEN && memcmp(b, MAGIC, MAGIC_LEN) == 0;
    char hex[CV_CACHE_HEX_LEN + 1];
    if (k && k->verify) {
        const unsigned char *sig = b + MAGIC_LEN, *data = sig + SIG_LEN;
        if (!sealed || !good_signature(k->verify, name, sig, data, *len - MAGIC_LEN - SIG_LEN)) {
            cv_cache_hex(name->b, sizeof name->b, hex);
            return cv_cache_err(d, CV_E_CACHE_AC_SIGNATURE, "remote action entry %s: %s; refused",
                                hex, sealed ? "bad signature" : "not signed");
        }
    }
    if (sealed) {
        *len -= MAGIC_LEN + SIG_LEN;
        memmove(b, b + MAGIC_LEN + SIG_LEN, *len);
    }
    return 0;
}

/* One PEM file written whole under a temporary name, then renamed. */
static bool write_pem(const char *path, EVP_PKEY *k, bool priv)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return false;
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, priv ? 0600 : 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && (priv ? PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL)
                         : PEM_write_PUBKEY(f, k)) == 1;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    free(tmp);
    return ok;
}

int cv_cache_ac_keygen(const char *sign_pem, const char *verify_pem, cv_diag *d)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    bool ok = k && write_pem(verify_pem, k, false) && write_pem(sign_pem, k, true);
    EVP_PKEY_free(k);
    return ok ? 0
              : cv_cache_err(d, CV_E_CACHE_AC_KEY, "cannot write an action-cache key pair to "
                             "%.200s and %.200s", sign_pem, verify_pem);
}
