/* Key manifests read back, and "why did this miss": the fields that differ
 * between two manifests, in words a build engineer reads at a glance. */
#include "cache/cache.h"
#include "cache/internal.h"
#include "cache/keys_internal.h"
#include "common/strbuf.h"

#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_MANIFEST = 16 << 20, MAX_FIELDS = 100000, NUMTEXT = 24, SHORT_VALUE = 200 };

void cv_cache_manifest_free(cv_manifest *m)
{
    free(m->fields);
    free(m->numtext);
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}

static int parse_field(json_t *o, cv_key_field *f, char *num, cv_diag *d)
{
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *kind = json_string_value(json_object_get(o, "kind"));
    json_t *v = json_object_get(o, "value");
    if (!cv_cache_key_name_ok(name) || cv_cache_key_kind_parse(kind, &f->kind) != 0 || !v)
        return cv_cache_err(d, CV_E_CACHE_BAD_MANIFEST,
                            "key manifest: a field lacks a valid name, kind or value");
    f->name = name;
    switch (f->kind) {
    case CV_KEY_STR:
        f->text = json_string_value(v);
        break;
    case CV_KEY_INT:
        if (json_is_integer(v)) {
            snprintf(num, NUMTEXT, "%" PRId64, (int64_t)json_integer_value(v));
            f->text = num;
        }
        break;
    case CV_KEY_BOOL:
        if (json_is_boolean(v))
            f->text = json_is_true(v) ? "true" : "false";
        break;
    case CV_KEY_DIGEST:
        f->text = json_string_value(v);
        if (f->text && cv_cache_digest_parse(f->text, &f->dg) != 0)
            f->text = NULL;
        break;
    }
    if (!f->text)
        return cv_cache_err(d, CV_E_CACHE_BAD_MANIFEST,
                            "key manifest: field '%s' has a value of the wrong kind", name);
    return 0;
}

int cv_cache_manifest_parse(const char *text, cv_manifest *m, cv_diag *d)
{
    memset(m, 0, sizeof *m);
    if (!text || strlen(text) > MAX_MANIFEST)
        return cv_cache_err(d, CV_E_CACHE_BAD_MANIFEST, "key manifest missing or too large");
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return cv_cache_err(d, CV_E_CACHE_BAD_MANIFEST, "key manifest is not JSON: %s (line %d)",
                            je.text, je.line);
    m->root = root;
    m->domain = json_string_value(json_object_get(root, "domain"));
    json_t *arr = json_object_get(root, "fields");
    const char *key = json_string_value(json_object_get(root, "key"));
    if (!cv_cache_key_name_ok(m->domain) || !json_is_array(arr) ||
        json_array_size(arr) > MAX_FIELDS) {
        cv_cache_manifest_free(m);
        return cv_cache_err(d, CV_E_CACHE_BAD_MANIFEST,
                            "key manifest lacks a domain or a fields array");
    }
    if (key && cv_cache_digest_parse(key, &m->key) == 0)
        m->has_key = true;
    size_t n = json_array_size(arr);
    m->fields = calloc(n + 1, sizeof *m->fields);
    m->numtext = calloc(n + 1, NUMTEXT);
    if (!m->fields || !m->numtext) {
        cv_cache_manifest_free(m);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory reading a key manifest");
    }
    for (size_t i = 0; i < n; i++)
        if (parse_field(json_array_get(arr, i), &m->fields[i], m->numtext + i * NUMTEXT, d) != 0) {
            cv_cache_manifest_free(m);
            return -1;
        }
    m->n = (int)n;
    return 0;
}

/* ---- field matching by name (sorted pointer arrays, binary search) */

static int cmp_field_ptr(const void *a, const void *b)
{
    const cv_key_field *x = *(const cv_key_field *const *)a;
    const cv_key_field *y = *(const cv_key_field *const *)b;
    return strcmp(x->name, y->name);
}

static const cv_key_field **sorted_fields(const cv_manifest *m)
{
    const cv_key_field **v = malloc(((size_t)m->n + 1) * sizeof *v); /* caller frees */
    if (!v)
        return NULL;
    for (int i = 0; i < m->n; i++)
        v[i] = &m->fields[i];
    qsort(v, (size_t)m->n, sizeof *v, cmp_field_ptr);
    return v;
}

static const cv_key_field *find_field(const cv_key_field **sorted, int n, const char *name)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(sorted[mid]->name, name);
        if (c == 0)
            return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool same_value(const cv_key_field *a, const cv_key_field *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == CV_KEY_DIGEST)
        return cv_cache_digest_eq(&a->dg, &b->dg);
    return strcmp(a->text, b->text) == 0;
}

/* List values ("+avx2,+fma", "O2 fast-math") are compared token by token. */
#define SEPS ", \t"

static bool has_token(const char *list, const char *tok, size_t len)
{
    for (const char *q = list; *q;) {
        q += strspn(q, SEPS);
        size_t ql = strcspn(q, SEPS);
        if (ql == len && memcmp(q, tok, len) == 0)
            return true;
        q += ql;
    }
    return false;
}

/* Calls fn for each token of `from` that `in` lacks; returns how many. */
static int missing_tokens(const char *from, const char *in,
                          void (*fn)(void *ctx, const char *tok, size_t len), void *ctx)
{
    int n = 0;
    for (const char *p = from; *p;) {
        p += strspn(p, SEPS);
        size_t len = strcspn(p, SEPS);
        if (!len)
            break;
        if (!has_token(in, p, len)) {
            if (fn)
                fn(ctx, p, len);
            n++;
        }
        p += len;
    }
    return n;
}

static int token_distance(const char *a, const char *b)
{
    return missing_tokens(a, b, NULL, NULL) + missing_tokens(b, a, NULL, NULL);
}

/* Differing fields weigh 1024 each; within a changed list-valued field each
 * differing token adds 1, so "+avx2,+fma" is closer to "+avx2,+fma,+avx512f"
 * than "+sse2" is. */
int cv_cache_manifest_distance(const cv_manifest *a, const cv_manifest *b)
{
    if (strcmp(a->domain, b->domain) != 0)
        return -1;
    const cv_key_field **sa = sorted_fields(a), **sb = sorted_fields(b);
    long dist = -1;
    if (sa && sb) {
        dist = 0;
        for (int i = 0; i < b->n; i++) {
            const cv_key_field *fa = find_field(sa, a->n, b->fields[i].name);
            if (fa && same_value(fa, &b->fields[i]))
                continue;
            dist += 1024;
            if (fa && fa->kind == CV_KEY_STR && b->fields[i].kind == CV_KEY_STR) {
                int t = token_distance(fa->text, b->fields[i].text);
                dist += t < 1023 ? t : 1023;
            }
        }
        for (int i = 0; i < a->n; i++)
            if (!find_field(sb, b->n, a->fields[i].name))
                dist += 1024;
    }
    free(sa);
    free(sb);
    return dist > INT_MAX ? INT_MAX : (int)dist;
}

/* ---- human text */

static void put_plain_label(cv_sb *sb, const char *name);

/* The L1 fields a user changes, in the user's words. */
static const struct { const char *field, *label; } labels[] = {
    {"source", "source digest (the model file's bytes)"},
    {"source_name", "file name (renamed)"},
    {"weights", "weights digest of"},
};

static void put_label(cv_sb *sb, const char *name)
{
    const char *colon = strchr(name, ':');
    size_t head = colon ? (size_t)(colon - name) : strlen(name);
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        if (strlen(labels[i].field) == head && strncmp(name, labels[i].field, head) == 0) {
            cv_sb_puts(sb, labels[i].label);
            if (colon)
                cv_sb_printf(sb, " %s", colon + 1);
            return;
        }
    put_plain_label(sb, name);
}

static void put_plain_label(cv_sb *sb, const char *name)
{
    const char *colon = strchr(name, ':');
    size_t head = colon ? (size_t)(colon - name) : strlen(name);
    for (size_t i = 0; i < head; i++)
        cv_sb_putc(sb, name[i] == '_' ? ' ' : name[i]);
    if (colon) {
        cv_sb_putc(sb, ' ');
        cv_sb_puts(sb, colon + 1);
    }
}

static bool is_list(const char *s)
{
    return strpbrk(s, SEPS) != NULL;
}

typedef struct tok_out {
    cv_sb *sb;
    bool added;
    int shown;
} tok_out;

/* Added tokens read "+x" (or as they are when they carry their own sign);
 * removed ones "-x" (or "removed +x"). */
static void put_token(void *ctx, const char *p, size_t len)
{
    tok_out *o = ctx;
    bool signed_tok = p[0] == '+' || p[0] == '-';
    cv_sb_puts(o->sb, o->shown++ ? ", " : "");
    if (o->added)
        cv_sb_printf(o->sb, signed_tok ? "%.*s" : "+%.*s", (int)len, p);
    else
        cv_sb_printf(o->sb, signed_tok ? "removed %.*s" : "-%.*s", (int)len, p);
}

static void describe_change(cv_sb *sb, const cv_key_field *a, const cv_key_field *b)
{
    put_label(sb, b->name);
    if (a->kind != b->kind) {
        cv_sb_printf(sb, ": changed kind %s -> %s", cv_cache_key_kind_name(a->kind),
                     cv_cache_key_kind_name(b->kind));
        return;
    }
    if (a->kind == CV_KEY_DIGEST) {
        cv_sb_printf(sb, " changed (%s -> %s)", a->text, b->text);
        return;
    }
    size_t la = strlen(a->text), lb = strlen(b->text);
    if (a->kind == CV_KEY_STR && (is_list(a->text) || is_list(b->text)) &&
        la <= 4 * SHORT_VALUE && lb <= 4 * SHORT_VALUE) {
        cv_sb toks = CV_SB_INIT;
        tok_out o = {&toks, true, 0};
        missing_tokens(b->text, a->text, put_token, &o);
        o.added = false;
        missing_tokens(a->text, b->text, put_token, &o);
        int shown = o.shown;
        if (shown) {
            cv_sb_puts(sb, ": ");
            cv_sb_puts(sb, cv_sb_str(&toks));
        }
        cv_sb_free(&toks);
        if (shown)
            return;
        /* same tokens in another order: say old -> new below */
    }
    if (la <= SHORT_VALUE && lb <= SHORT_VALUE) {
        cv_sb_printf(sb, ": %s -> %s", la ? a->text : "(empty)", lb ? b->text : "(empty)");
        return;
    }
    char ha[CV_CACHE_HEX_LEN + 1], hb[CV_CACHE_HEX_LEN + 1];
    cv_digest da, db;
    cv_cache_sha256(a->text, la, &da);
    cv_cache_sha256(b->text, lb, &db);
    cv_cache_digest_hex(&da, ha);
    cv_cache_digest_hex(&db, hb);
    cv_sb_printf(sb, " changed (text sha256 %s -> %s)", ha, hb);
}

static int push_diff(cv_cache_diffs *out, const char *field, cv_sb *text)
{
    if (text->oom)
        return -1;
    cv_cache_diff *v = realloc(out->v, ((size_t)out->n + 1) * sizeof *v);
    if (!v)
        return -1;
    out->v = v;
    char *f = strdup(field), *t = cv_sb_steal(text);
    if (!f || !t) {
        free(f);
        free(t);
        return -1;
    }
    v[out->n++] = (cv_cache_diff){f, t};
    return 0;
}

static int diff_fields(const cv_manifest *a, const cv_manifest *b, cv_cache_diffs *out)
{
    const cv_key_field **sa = sorted_fields(a), **sb_ = sorted_fields(b);
    int rc = (sa && sb_) ? 0 : -1;
    for (int i = 0; rc == 0 && i < b->n; i++) {
        const cv_key_field *fb = &b->fields[i], *fa = find_field(sa, a->n, fb->name);
        if (fa && same_value(fa, fb))
            continue;
        cv_sb t = CV_SB_INIT;
        if (fa) {
            describe_change(&t, fa, fb);
        } else {
            put_label(&t, fb->name);
            cv_sb_printf(&t, ": added (%.*s)", SHORT_VALUE, fb->text);
        }
        rc = push_diff(out, fb->name, &t);
        cv_sb_free(&t);
    }
    for (int i = 0; rc == 0 && i < a->n; i++) {
        if (find_field(sb_, b->n, a->fields[i].name))
            continue;
        cv_sb t = CV_SB_INIT;
        put_label(&t, a->fields[i].name);
        cv_sb_puts(&t, ": removed");
        rc = push_diff(out, a->fields[i].name, &t);
        cv_sb_free(&t);
    }
    free(sa);
    free(sb_);
    return rc;
}

int cv_cache_explain(const char *manifest_a, const char *manifest_b, cv_cache_diffs *out,
                     cv_diag *d)
{
    memset(out, 0, sizeof *out);
    cv_manifest a, b;
    if (cv_cache_manifest_parse(manifest_a, &a, d) != 0)
        return -1;
    if (cv_cache_manifest_parse(manifest_b, &b, d) != 0) {
        cv_cache_manifest_free(&a);
        return -1;
    }
    int rc;
    if (strcmp(a.domain, b.domain) != 0) {
        cv_sb t = CV_SB_INIT;
        cv_sb_printf(&t, "domain: %s -> %s (different key spaces)", a.domain, b.domain);
        rc = push_diff(out, "domain", &t);
        cv_sb_free(&t);
    } else {
        rc = diff_fields(&a, &b, out);
    }
    cv_cache_manifest_free(&a);
    cv_cache_manifest_free(&b);
    if (rc != 0) {
        cv_cache_diffs_free(out);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory explaining a cache miss");
    }
    return 0;
}

void cv_cache_diffs_free(cv_cache_diffs *ds)
{
    if (!ds)
        return;
    for (int i = 0; i < ds->n; i++) {
        free(ds->v[i].field);
        free(ds->v[i].text);
    }
    free(ds->v);
    ds->v = NULL;
    ds->n = 0;
}
