/* Bearer tokens with read-only or read-write rights, for `cuvil cache
 * serve` and the farm's HTTP API (see tokens.h). */
#include "common/tokens.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

enum { MAX_TOKENS = 10000, MAX_TOKEN = 512, MAX_LINE = 1024 };

/* Reports a bad tokens file; returns -1. */
__attribute__((format(printf, 2, 3))) static int tokens_error(cv_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_ERROR, CV_E_TOKENS_FILE, (cv_span){0}, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

typedef struct token {
    char *text; /* owned */
    size_t len;
    unsigned char sha[32]; /* compared instead of the text: no length or prefix leaks */
    cv_token_right right;
} token;

struct cv_tokens {
    token *v; /* owned */
    int n;
};

void cv_tokens_free(cv_tokens *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++) {
        OPENSSL_cleanse(t->v[i].sha, sizeof t->v[i].sha);
        OPENSSL_cleanse(t->v[i].text, t->v[i].len);
        free(t->v[i].text);
    }
    free(t->v);
    free(t);
}

static bool token_chars_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return n > 0 && n <= MAX_TOKEN;
}

/* One line: "TOKEN RIGHT"; returns 1 added, 0 blank, -1 malformed. */
static int parse_line(cv_tokens *t, char *line)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *save = NULL;
    char *tok = strtok_r(line, " \t\r\n", &save);
    if (!tok)
        return 0;
    char *right = strtok_r(NULL, " \t\r\n", &save);
    if (!right || strtok_r(NULL, " \t\r\n", &save) || !token_chars_ok(tok, strlen(tok)))
        return -1;
    cv_token_right r;
    if (strcmp(right, "rw") == 0 || strcmp(right, "read-write") == 0)
        r = CV_TOKEN_WRITE;
    else if (strcmp(right, "ro") == 0 || strcmp(right, "read-only") == 0)
        r = CV_TOKEN_READ;
    else
        return -1;
    if (t->n == MAX_TOKENS)
        return -1;
    unsigned char sha[32];
    if (!EVP_Digest(tok, strlen(tok), sha, NULL, EVP_sha256(), NULL))
        return -1;
    token *v = realloc(t->v, ((size_t)t->n + 1) * sizeof *v);
    if (!v)
        return -1;
    t->v = v;
    v[t->n] = (token){strdup(tok), strlen(tok), {0}, r};
    memcpy(v[t->n].sha, sha, sizeof sha);
    OPENSSL_cleanse(sha, sizeof sha);
    if (!v[t->n].text)
        return -1;
    t->n++;
    return 1;
}

int cv_tokens_load(const char *path, cv_tokens **out, cv_diag *d)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return tokens_error(d, "cannot open tokens file %s", path);
    cv_tokens *t = calloc(1, sizeof *t);
    char line[MAX_LINE + 2];
    int lineno = 0, rc = t ? 0 : -1;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f))
            rc = -1; /* over-long line */
        else if (parse_line(t, line) < 0)
            rc = -1;
    }
    OPENSSL_cleanse(line, sizeof line);
    fclose(f);
    if (rc == 0 && t->n == 0) {
        cv_tokens_free(t);
        return tokens_error(d, "tokens file %s holds no token", path);
    }
    if (rc != 0) {
        cv_tokens_free(t);
        return tokens_error(d, "tokens file %s:%d: expected 'TOKEN rw' or 'TOKEN ro'", path,
                            lineno);
    }
    *out = t;
    return 0;
}

/* Compares the SHA-256 of the presented token with every token's, so the
 * time taken depends neither on where a token matches nor on its length
 * (a plain comparison of equal-length strings would tell a caller, by its
 * timing, how long the tokens are). */
static cv_token_right lookup(const cv_tokens *t, const char *s, size_t n)
{
    unsigned char sha[32];
    if (n > MAX_TOKEN || !EVP_Digest(s, n, sha, NULL, EVP_sha256(), NULL))
        return CV_TOKEN_NONE;
    cv_token_right found = CV_TOKEN_NONE;
    for (int i = 0; i < t->n; i++)
        if (CRYPTO_memcmp(t->v[i].sha, sha, sizeof sha) == 0)
            found = t->v[i].right;
    OPENSSL_cleanse(sha, sizeof sha);
    return found;
}

cv_token_right cv_tokens_check(const cv_tokens *t, const char *auth)
{
    if (!auth)
        return CV_TOKEN_NONE;
    size_t n = strlen(auth);
    if (n > 7 && strncasecmp(auth, "Bearer ", 7) == 0)
        return lookup(t, auth + 7, n - 7);
    if (n <= 6 || strncasecmp(auth, "Basic ", 6) != 0 || n - 6 > 4 * MAX_TOKEN)
        return CV_TOKEN_NONE;
    /* ccache 4.7 and Bazel send user:password in the URL as Basic auth; the
     * password is the token. */
    unsigned char dec[3 * MAX_TOKEN + 4];
    int len = EVP_DecodeBlock(dec, (const unsigned char *)auth + 6, (int)(n - 6));
    if (len <= 0)
        return CV_TOKEN_NONE;
    while (len > 0 && auth[n - 1] == '=' && dec[len - 1] == '\0') {
        len--; /* EVP_DecodeBlock counts the padding */
        n--;
    }
    dec[len] = '\0';
    char *colon = memchr(dec, ':', (size_t)len);
    cv_token_right r = colon ? lookup(t, colon + 1, (size_t)len - (size_t)(colon + 1 - (char *)dec))
                           : CV_TOKEN_NONE;
    OPENSSL_cleanse(dec, sizeof dec);
    return r;
}
