/* Cache keys: an ordered list of named fields, hashed with a domain tag.
 *
 * key = sha256( u64(len domain) domain  u64(n fields)
 *               { u64(len name) name  u8(kind)  u64(len value) value }* )
 * with every integer little-endian, so no two field lists share a byte
 * stream.  A digest field enters as its 32 raw bytes; every other kind as its
 * text.  The manifest records each field as it entered the key, so the key
 * can be recomputed from the manifest alone (cv_cache_key_from_manifest) and
 * two manifests can be compared field by field (explain.c). */
#include "cache/cache.h"
#include "cache/internal.h"
#include "cache/keys_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NAME = 256, MAX_STR = 64 * 1024, MAX_FIELDS = 100000 };

typedef struct kb_field {
    char *name;  /* owned */
    cv_key_kind kind;
    char *text;  /* owned: the value as recorded (digest: hex) */
    cv_digest dg;
} kb_field;

struct cv_cache_keyb {
    char *domain;     /* owned */
    kb_field *v;      /* owned */
    int n, cap;
    bool failed;
    char error[320];  /* the first error, reported by finish */
};

static const char *kind_names[] = {"str", "int", "bool", "digest"};

const char *cv_cache_key_kind_name(cv_key_kind k)
{
    return kind_names[k];
}

int cv_cache_key_kind_parse(const char *s, cv_key_kind *out)
{
    for (int i = 0; i < 4; i++)
        if (s && strcmp(s, kind_names[i]) == 0) {
            *out = (cv_key_kind)i;
            return 0;
        }
    return -1;
}

bool cv_cache_key_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > MAX_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return false;
    return true;
}

cv_cache_keyb *cv_cache_keyb_new(const char *domain)
{
    cv_cache_keyb *kb = calloc(1, sizeof *kb);
    if (!kb)
        return NULL;
    kb->domain = strdup(domain ? domain : "");
    if (!kb->domain) {
        free(kb);
        return NULL;
    }
    if (!cv_cache_key_name_ok(domain)) {
        kb->failed = true;
        snprintf(kb->error, sizeof kb->error, "invalid key domain");
    }
    return kb;
}

__attribute__((format(printf, 2, 0)))
static void kb_fail(cv_cache_keyb *kb, const char *fmt, const char *name)
{
    if (!kb || kb->failed)
        return;
    kb->failed = true;
    snprintf(kb->error, sizeof kb->error, fmt, name ? name : "(null)");
}

static kb_field *kb_push(cv_cache_keyb *kb, const char *name, cv_key_kind kind)
{
    if (!kb || kb->failed)
        return NULL;
    if (!cv_cache_key_name_ok(name)) {
        kb_fail(kb, "invalid key field name '%.256s'", name);
        return NULL;
    }
    for (int i = 0; i < kb->n; i++)
        if (strcmp(kb->v[i].name, name) == 0) {
            kb_fail(kb, "key field '%s' given twice", name);
            return NULL;
        }
    if (kb->n == MAX_FIELDS) {
        kb_fail(kb, "too many key fields (at '%s')", name);
        return NULL;
    }
    if (kb->n == kb->cap) {
        int cap = kb->cap ? kb->cap * 2 : 16;
        kb_field *v = realloc(kb->v, (size_t)cap * sizeof *v);
        if (!v) {
            kb_fail(kb, "out of memory adding key field '%s'", name);
            return NULL;
        }
        kb->v = v;
        kb->cap = cap;
    }
    kb_field *f = &kb->v[kb->n];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->name = strdup(name);
    if (!f->name) {
        kb_fail(kb, "out of memory adding key field '%s'", name);
        return NULL;
    }
    kb->n++;
    return f;
}

static void kb_set_text(cv_cache_keyb *kb, kb_field *f, const char *text)
{
    f->text = strdup(text);
    if (!f->text)
        kb_fail(kb, "out of memory adding key field '%s'", f->name);
}

void cv_cache_keyb_str(cv_cache_keyb *kb, const char *name, const char *value)
{
    if (!value)
        value = "";
    if (strlen(value) > MAX_STR) {
        kb_fail(kb, "key field '%s' is too long for a string (use bytes)", name);
        return;
    }
    json_t *probe = json_string(value); /* NULL when not UTF-8 */
    if (!probe) {
        kb_fail(kb, "key field '%s' is not valid UTF-8 (use bytes)", name);
        return;
    }
    json_decref(probe);
    kb_field *f = kb_push(kb, name, CV_KEY_STR);
    if (f)
        kb_set_text(kb, f, value);
}

void cv_cache_keyb_int(cv_cache_keyb *kb, const char *name, int64_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, value);
    kb_field *f = kb_push(kb, name, CV_KEY_INT);
    if (f)
        kb_set_text(kb, f, buf);
}

void cv_cache_keyb_bool(cv_cache_keyb *kb, const char *name, bool value)
{
    kb_field *f = kb_push(kb, name, CV_KEY_BOOL);
    if (f)
        kb_set_text(kb, f, value ? "true" : "false");
}

void cv_cache_keyb_digest(cv_cache_keyb *kb, const char *name, const cv_digest *dg)
{
    kb_field *f = kb_push(kb, name, CV_KEY_DIGEST);
    if (!f)
        return;
    char hex[CV_CACHE_HEX_LEN + 1];
    cv_cache_digest_hex(dg, hex);
    f->dg = *dg;
    kb_set_text(kb, f, hex);
}

void cv_cache_keyb_bytes(cv_cache_keyb *kb, const char *name, const void *data, size_t len)
{
    cv_digest dg;
    cv_cache_sha256(data, len, &dg);
    cv_cache_keyb_digest(kb, name, &dg);
}

static void put_u64(cv_cache_hasher *h, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    cv_cache_hasher_update(h, b, sizeof b);
}

static void put_lp(cv_cache_hasher *h, const void *p, size_t n)
{
    put_u64(h, n);
    cv_cache_hasher_update(h, p, n);
}

int cv_cache_key_hash(const char *domain, const cv_key_field *fields, int n, cv_digest *out)
{
    cv_cache_hasher *h = cv_cache_hasher_new(); /* owned here */
    if (!h)
        return -1;
    put_lp(h, domain, strlen(domain));
    put_u64(h, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        const cv_key_field *f = &fields[i];
        uint8_t kind = (uint8_t)f->kind;
        put_lp(h, f->name, strlen(f->name));
        cv_cache_hasher_update(h, &kind, 1);
        if (f->kind == CV_KEY_DIGEST)
            put_lp(h, f->dg.b, sizeof f->dg.b);
        else
            put_lp(h, f->text, strlen(f->text));
    }
    cv_cache_hasher_final(h, out);
    cv_cache_hasher_free(h);
    return 0;
}

static json_t *field_value_json(const cv_key_field *f)
{
    switch (f->kind) {
    case CV_KEY_INT:
        return json_integer(strtoll(f->text, NULL, 10));
    case CV_KEY_BOOL:
        return json_boolean(strcmp(f->text, "true") == 0);
    default:
        return json_string(f->text);
    }
}

char *cv_cache_key_manifest(const char *domain, const cv_key_field *fields, int n,
                            const cv_digest *key)
{
    char hex[CV_CACHE_HEX_LEN + 1];
    cv_cache_digest_hex(key, hex);
    json_t *root = json_object();   /* owned here */
    json_t *arr = json_array();     /* owned by root once set */
    json_object_set_new(root, "domain", json_string(domain));
    json_object_set_new(root, "key", json_string(hex));
    json_object_set_new(root, "fields", arr);
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(fields[i].name));
        json_object_set_new(o, "kind", json_string(kind_names[fields[i].kind]));
        json_object_set_new(o, "value", field_value_json(&fields[i]));
        json_array_append_new(arr, o);
    }
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

void cv_cache_keyb_free(cv_cache_keyb *kb)
{
    if (!kb)
        return;
    for (int i = 0; i < kb->n; i++) {
        free(kb->v[i].name);
        free(kb->v[i].text);
    }
    free(kb->v);
    free(kb->domain);
    free(kb);
}

int cv_cache_keyb_finish(cv_cache_keyb *kb, cv_cache_key *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    if (!kb)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory building a cache key");
    int rc = 0;
    cv_key_field *view = NULL; /* owned here: borrowed pointers into kb */
    if (kb->failed) {
        rc = cv_cache_err(d, CV_E_CACHE_BAD_KEY, "cache key '%s': %s", kb->domain, kb->error);
        goto done;
    }
    view = calloc((size_t)kb->n + 1, sizeof *view);
    if (!view) {
        rc = cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory building a cache key");
        goto done;
    }
    for (int i = 0; i < kb->n; i++)
        view[i] = (cv_key_field){kb->v[i].name, kb->v[i].kind, kb->v[i].text, kb->v[i].dg};
    if (cv_cache_key_hash(kb->domain, view, kb->n, &out->digest) != 0 ||
        !(out->manifest = cv_cache_key_manifest(kb->domain, view, kb->n, &out->digest)))
        rc = cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory building a cache key");
done:
    free(view);
    cv_cache_keyb_free(kb);
    return rc;
}

void cv_cache_key_free(cv_cache_key *k)
{
    if (!k)
        return;
    free(k->manifest);
    k->manifest = NULL;
}

int cv_cache_key_from_manifest(const char *manifest, cv_cache_key *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    cv_manifest m;
    if (cv_cache_manifest_parse(manifest, &m, d) != 0)
        return -1;
    int rc = 0;
    if (cv_cache_key_hash(m.domain, m.fields, m.n, &out->digest) != 0 ||
        !(out->manifest = cv_cache_key_manifest(m.domain, m.fields, m.n, &out->digest)))
        rc = cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory recomputing a cache key");
    else if (m.has_key && !cv_cache_digest_eq(&m.key, &out->digest))
        rc = cv_cache_err(d, CV_E_CACHE_BAD_MANIFEST,
                          "key manifest: recorded key does not match its fields");
    cv_cache_manifest_free(&m);
    if (rc != 0)
        cv_cache_key_free(out);
    return rc;
}
