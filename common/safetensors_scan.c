/* The fast path of the safetensors reader: headers as writers produce them
 * read in one bounded pass, without building a JSON tree (building and
 * freeing one took jansson about 20 ms for a 4,000-tensor header).
 * It accepts a strict subset of JSON and hands everything else, valid or
 * not, to the general reader, so it never needs to word an error. */
#include <string.h>

#include "common/safetensors_internal.h"

enum { MAX_META_KEYS = 64 };

typedef struct scan {
    const char *p, *end;
} scan;

typedef struct span_s {         /* a string's bytes between the quotes */
    const char *s;
    size_t n;
} span_s;

static void ws(scan *S)
{
    while (S->p < S->end && (*S->p == ' ' || *S->p == '\n' || *S->p == '\r' || *S->p == '\t'))
        S->p++;
}

/* Consumes c (after blanks). */
static bool take(scan *S, char c)
{
    ws(S);
    if (S->p < S->end && *S->p == c) {
        S->p++;
        return true;
    }
    return false;
}

/* A string of printable ASCII without escapes: the form of every name and
 * dtype that writers emit.  Anything else goes to the general reader. */
static bool str(scan *S, span_s *out)
{
    if (!take(S, '"'))
        return false;
    const char *q = S->p;
    while (q < S->end && *q != '"') {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20 || c > 0x7e || c == '\\')
            return false;
        q++;
    }
    if (q == S->end)
        return false;
    out->s = S->p;
    out->n = (size_t)(q - S->p);
    S->p = q + 1;
    return true;
}

static bool str_is(const span_s *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->n == n && memcmp(s->s, lit, n) == 0;
}

/* A non-negative JSON integer that fits in int64 (no sign, no leading zero,
 * no fraction or exponent: those are reals or errors to the general reader). */
static bool int_value(scan *S, int64_t *out)
{
    ws(S);
    const char *q = S->p;
    int64_t v = 0;
    while (q < S->end && *q >= '0' && *q <= '9') {
        int d = *q - '0';
        if (v > INT64_MAX / 10 || (v == INT64_MAX / 10 && d > INT64_MAX % 10))
            return false;
        v = v * 10 + d;
        q++;
    }
    size_t n = (size_t)(q - S->p);
    if (n == 0 || (n > 1 && *S->p == '0') ||
        (q < S->end && (*q == '.' || *q == 'e' || *q == 'E')))
        return false;
    S->p = q;
    *out = v;
    return true;
}

/* [int, ...] with at most max items. */
static bool int_list(scan *S, int64_t *v, int max, int *n)
{
    *n = 0;
    if (!take(S, '['))
        return false;
    if (take(S, ']'))
        return true;
    do {
        if (*n == max || !int_value(S, &v[*n]))
            return false;
        (*n)++;
    } while (take(S, ','));
    return take(S, ']');
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}: each key once,
 * no other key. */
static bool entry(scan *S, const cv_st_ctx *c, cv_st_tensor *t)
{
    enum { DTYPE = 1, SHAPE = 2, OFFSETS = 4 };
    unsigned seen = 0;
    int64_t offs[2];
    if (!take(S, '{'))
        return false;
    do {
        span_s k, v;
        unsigned bit = 0;
        if (!str(S, &k) || !take(S, ':'))
            return false;
        if (str_is(&k, "dtype")) {
            bit = DTYPE;
            if (!str(S, &v) || (t->dtype = cv_st_dtype_of(v.s, v.n)) == CV_DT_INVALID)
                return false;
        } else if (str_is(&k, "shape")) {
            bit = SHAPE;
            if (!int_list(S, t->dims, CV_ST_MAX_RANK, &t->rank))
                return false;
        } else if (str_is(&k, "data_offsets")) {
            int n;
            bit = OFFSETS;
            if (!int_list(S, offs, 2, &n) || n != 2)
                return false;
        }
        if (!bit || (seen & bit))
            return false;
        seen |= bit;
    } while (take(S, ','));
    return take(S, '}') && seen == (DTYPE | SHAPE | OFFSETS) &&
           cv_st_place(c, NULL, offs[0], offs[1], t) == 0;
}

/* {"key": "value", ...} with distinct keys. */
static bool metadata(scan *S)
{
    span_s keys[MAX_META_KEYS];
    int n = 0;
    if (!take(S, '{'))
        return false;
    if (take(S, '}'))
        return true;
    do {
        span_s v;
        if (n == MAX_META_KEYS || !str(S, &keys[n]) || !take(S, ':') || !str(S, &v))
            return false;
        for (int i = 0; i < n; i++)
            if (keys[i].n == keys[n].n && memcmp(keys[i].s, keys[n].s, keys[n].n) == 0)
                return false;
        n++;
    } while (take(S, ','));
    return take(S, '}');
}

int cv_st_scan(const char *h, size_t len, const cv_st_ctx *c, cv_safetensors *st)
{
    scan S = {h, h + len};
    bool meta = false;
    if (!take(&S, '{'))
        return 1;
    if (!take(&S, '}')) {
        do {
            span_s k;
            if (!str(&S, &k) || !take(&S, ':'))
                return 1;
            if (str_is(&k, "__metadata__")) {
                if (meta || !metadata(&S))
                    return 1;
                meta = true;
                continue;
            }
            cv_st_tensor *t = cv_st_push(st, k.s, k.n);
            if (!t || !entry(&S, c, t))
                return 1;
        } while (take(&S, ','));
        if (!take(&S, '}'))
            return 1;
    }
    ws(&S);
    if (S.p != S.end)
        return 1;
    /* The general reader refuses a repeated name. */
    return cv_st_sort(st) ? 0 : 1;
}
