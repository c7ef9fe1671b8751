/* Scalar typing by the YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1023-core-schema). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/yamldoc_internal.h"

typedef enum { K_AUTO, K_STR, K_INT, K_FLOAT, K_BOOL, K_NULL, K_BAD } kind;

#define CORE_TAG "tag:yaml.org,2002:"

static kind tag_kind(const char *tag, bool plain)
{
    static const struct { const char *name; kind k; } tags[] = {
        {"str", K_STR}, {"int", K_INT}, {"float", K_FLOAT}, {"bool", K_BOOL}, {"null", K_NULL},
    };
    if (!tag)
        return plain ? K_AUTO : K_STR;
    if (strcmp(tag, "!") == 0)   /* the non-specific tag of a quoted scalar */
        return K_STR;
    if (strncmp(tag, CORE_TAG, strlen(CORE_TAG)) != 0)
        return K_BAD;
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (strcmp(tag + strlen(CORE_TAG), tags[i].name) == 0)
            return tags[i].k;
    return K_BAD;
}

static bool is_null(const char *s, size_t n)
{
    return n == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

static bool is_bool(const char *s, bool *v)
{
    *v = strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0;
    return *v || strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0;
}

static size_t span_of(const char *s, size_t n, const char *set)
{
    size_t i = 0;
    while (i < n && s[i] && strchr(set, s[i]))
        i++;
    return i;
}

#define DIGITS "0123456789"

/* 0 = int, 1 = not an int, 2 = an int out of range. */
static int parse_int(const char *s, size_t n, json_int_t *v)
{
    int base = 10;
    size_t start = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        base = s[1] == 'o' ? 8 : 16;
        start = 2;
    } else if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        start = 1;
    }
    const char *set = base == 8 ? "01234567" : base == 16 ? DIGITS "abcdefABCDEF" : DIGITS;
    size_t k = span_of(s + start, n - start, set);
    if (k == 0 || start + k != n)
        return 1;
    errno = 0;
    if (base == 10) {
        long long x = strtoll(s, NULL, 10);
        *v = x;
        return errno == ERANGE ? 2 : 0;
    }
    unsigned long long u = strtoull(s + start, NULL, base);
    *v = (json_int_t)u;
    return errno == ERANGE || u > (unsigned long long)INT64_MAX ? 2 : 0;
}

/* [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static bool float_syntax(const char *s, size_t n)
{
    size_t i = (n > 0 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    size_t whole = span_of(s + i, n - i, DIGITS);
    i += whole;
    size_t frac = 0;
    if (i < n && s[i] == '.') {
        i++;
        frac = span_of(s + i, n - i, DIGITS);
        i += frac;
    }
    if (whole == 0 && frac == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        i += (i < n && (s[i] == '-' || s[i] == '+')) ? 1 : 0;
        size_t e = span_of(s + i, n - i, DIGITS);
        if (e == 0)
            return false;
        i += e;
    }
    return i == n;
}

static bool is_special_float(const char *s)
{
    const char *p = (*s == '-' || *s == '+') ? s + 1 : s;
    return strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0 ||
           strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 || strcmp(s, ".NAN") == 0;
}

static json_t *scalar_error(const yaml_event_t *ev, const char *file, cv_diag *d, int code,
                            const char *what)
{
    cv_yspan y = cv_yspan_of(ev->start_mark, ev->end_mark);
    cv_span sp = {file, y.line, y.col, y.end_line, y.end_col};
    const char *v = (const char *)ev->data.scalar.value;
    cv_diag_error(d, code, sp, "%s: `%.60s`", what, v);
    return NULL;
}

/* A number (int or float), or NULL with *bad set when it looks like one but
 * cannot be represented. */
static json_t *number(const char *s, size_t n, bool ints, bool *bad)
{
    json_int_t iv;
    int r = parse_int(s, n, &iv);
    *bad = r == 2 || is_special_float(s);
    if (r == 0)
        return ints ? json_integer(iv) : json_real((double)iv);
    if (r == 2 || !float_syntax(s, n))
        return NULL;
    double x = strtod(s, NULL);
    *bad = !isfinite(x);
    return *bad ? NULL : json_real(x);
}

static json_t *typed(const yaml_event_t *ev, kind k, const char *file, cv_diag *d)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    bool b, bad = false;
    json_t *v = NULL;
    if ((k == K_AUTO || k == K_NULL) && is_null(s, n))
        return json_null();
    if ((k == K_AUTO || k == K_BOOL) && is_bool(s, &b))
        return json_boolean(b);
    if (k == K_AUTO || k == K_INT || k == K_FLOAT)
        v = number(s, n, k != K_FLOAT, &bad);
    if (v && k == K_INT && json_is_real(v)) {
        json_decref(v);
        v = NULL;
    }
    if (v || k == K_AUTO) {
        if (bad)
            return scalar_error(ev, file, d, CV_E_INVALID_NUMBER,
                                "number out of range or not representable in JSON");
        return v ? v : json_stringn(s, n);
    }
    if (bad)
        return scalar_error(ev, file, d, CV_E_INVALID_NUMBER, "number out of range or not representable");
    return scalar_error(ev, file, d, CV_E_YAML_TAG_MISMATCH, "scalar does not match its tag");
}

json_t *cv_yaml_scalar(const yaml_event_t *ev, const char *file, cv_diag *d)
{
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    kind k = tag_kind((const char *)ev->data.scalar.tag, plain);
    if (k == K_BAD) {
        cv_yspan y = cv_yspan_of(ev->start_mark, ev->end_mark);
        cv_span sp = {file, y.line, y.col, y.end_line, y.end_col};
        cv_diag_error(d, CV_E_YAML_UNSUPPORTED, sp, "tag `%.80s` is not supported",
                      (const char *)ev->data.scalar.tag);
        return NULL;
    }
    if (k == K_STR)
        return json_stringn((const char *)ev->data.scalar.value, ev->data.scalar.length);
    return typed(ev, k, file, d);
}
