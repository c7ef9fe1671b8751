/* The size and duration grammar of common/units.h.  Integer arithmetic
 * throughout, every step checked: the texts come from command lines, the
 * environment and specs in repositories. */
#include "common/units.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

__extension__ typedef unsigned __int128 units_u128;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int units_error(cv_units_error *e, const char *start, const char *at, const char *why)
{
    if (e) {
        e->at = (int)(at - start);
        e->why = why;
    }
    return -1;
}

/* 0, or -1 when the text is empty or over the length limit. */
static int text_ok(const char *s, cv_units_error *e)
{
    size_t n = strnlen(s, CV_UNITS_TEXT_MAX + 1);
    if (n == 0)
        return units_error(e, s, s, "it is empty");
    if (n > CV_UNITS_TEXT_MAX)
        return units_error(e, s, s + CV_UNITS_TEXT_MAX, "it is longer than 32 characters");
    return 0;
}

/* unit := "B" | prefix ["i"] ["B"]; sets the multiplier or returns -1. */
static int size_unit(const char *u, uint64_t *mul)
{
    static const char prefixes[] = "KMGTP";
    *mul = 1;
    if (!*u || strcmp(u, "B") == 0 || strcmp(u, "b") == 0)
        return 0;
    char up = (*u >= 'a' && *u <= 'z') ? (char)(*u - 'a' + 'A') : *u;
    const char *p = strchr(prefixes, up);
    if (!p || !up)
        return -1;
    u++;
    uint64_t base = 1000;
    if (*u == 'i') {
        base = 1024;
        u++;
    }
    if (*u == 'B' || *u == 'b')
        u++;
    if (*u)
        return -1;
    for (const char *q = prefixes; q <= p; q++)
        *mul *= base;
    return 0;
}

int cv_units_parse_size(const char *s, uint64_t *bytes, cv_units_error *e)
{
    if (text_ok(s, e))
        return -1;
    const char *p = s;
    if (!is_digit(*p))
        return units_error(e, s, p, "a size starts with a digit");
    uint64_t whole = 0;
    for (; is_digit(*p); p++) {
        if (whole > CV_SIZE_MAX_BYTES / 10)
            return units_error(e, s, s, "it is too large");
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    uint64_t fnum = 0, fden = 1;
    if (*p == '.') {
        if (!is_digit(*++p))
            return units_error(e, s, p, "a digit must follow '.'");
        for (; is_digit(*p); p++) {
            if (fden < UINT64_C(1000000000000000000)) {   /* later digits are below a byte */
                fnum = fnum * 10 + (uint64_t)(*p - '0');
                fden *= 10;
            }
        }
    }
    uint64_t mul;
    if (size_unit(p, &mul))
        return units_error(e, s, p, "unknown unit (use B, K, M, G, T or P, with i for powers "
                                    "of 1024: 20Gi, 500M)");
    units_u128 total = (units_u128)whole * mul + (units_u128)fnum * mul / fden;
    if (total > CV_SIZE_MAX_BYTES)
        return units_error(e, s, s, "it is too large");
    *bytes = (uint64_t)total;
    return 0;
}

int cv_units_parse_duration(const char *s, int64_t *ms, cv_units_error *e)
{
    /* "ms" before "m": the longest unit that matches wins. */
    static const struct { const char *unit; int64_t ms; } units[] = {
        {"ms", 1}, {"h", 3600000}, {"m", 60000}, {"s", 1000},
    };
    if (text_ok(s, e))
        return -1;
    int64_t total = 0;
    const char *p = s;
    while (*p) {
        const char *num = p;
        if (!is_digit(*p))
            return units_error(e, s, p, "expected a number (a duration is e.g. 90s, 10m, 1h30m)");
        int64_t v = 0;
        for (; is_digit(*p); p++) {
            if (v > CV_DURATION_MAX_MS / 10)
                return units_error(e, s, num, "it is too long a time");
            v = v * 10 + (*p - '0');
        }
        size_t u = 0;
        while (u < sizeof units / sizeof units[0] &&
               strncmp(p, units[u].unit, strlen(units[u].unit)) != 0)
            u++;
        if (u == sizeof units / sizeof units[0])
            return units_error(e, s, p, *p ? "unknown unit (use ms, s, m or h)"
                                           : "a number needs a unit (ms, s, m or h)");
        p += strlen(units[u].unit);
        if (v > (CV_DURATION_MAX_MS - total) / units[u].ms)
            return units_error(e, s, num, "it is too long a time");
        total += v * units[u].ms;
    }
    *ms = total;
    return 0;
}

void cv_units_message(char *buf, size_t cap, cv_units_kind kind, const char *what, const char *s,
                      const cv_units_error *e)
{
    bool size = kind == CV_UNITS_SIZE;
    const char *noun = size ? "a size" : "a duration";
    const char *example = size ? "20Gi, 500M, 1.5GB" : "60s, 10m, 1h30m";
    if (!e || !e->why)
        snprintf(buf, cap, "%s: '%.40s' is not %s (write e.g. %s)", what, s, noun, example);
    else
        snprintf(buf, cap, "%s: '%.40s' is not %s: %s (at character %d); write e.g. %s", what, s,
                 noun, e->why, e->at + 1, example);
}
