/* Repository globs (see spec/spec.h).  Patterns are checked once when a
 * spec loads, so the matcher can assume a well-formed pattern. */
#include "spec/spec.h"

#include <string.h>

#define GLOB_MAX 1024
#define GLOB_MAX_DOUBLESTAR 4    /* each `**` multiplies the matcher's work */

/* Checks one component [p, e): classes closed, escapes complete, `**` alone. */
static const char *check_component(const char *p, const char *e)
{
    if (p == e)
        return "empty path component ('//' or a trailing '/')";
    if ((e - p == 1 && p[0] == '.') || (e - p == 2 && p[0] == '.' && p[1] == '.'))
        return "'.' and '..' components are not allowed";
    if (e - p == 2 && p[0] == '*' && p[1] == '*')
        return NULL;
    for (; p < e; p++) {
        if (*p == '\\') {
            if (++p == e)
                return "'\\' at the end of a component escapes nothing";
        } else if (*p == '*' && p + 1 < e && p[1] == '*') {
            return "'**' must be a whole path component (as in 'models/**/x.onnx')";
        } else if (*p == '[') {
            const char *q = p + 1;
            if (q < e && (*q == '!' || *q == '^'))
                q++;
            if (q < e && *q == ']')
                q++;   /* a leading ']' is a literal member */
            while (q < e && *q != ']')
                q += (*q == '\\' && q + 1 < e) ? 2 : 1;
            if (q == e)
                return "'[' without a closing ']' in its component";
            p = q;
        }
    }
    return NULL;
}

int cv_glob_check(const char *pattern, const char **why)
{
    const char *w = NULL;
    size_t n = strlen(pattern);
    int doublestars = 0;
    if (n == 0)
        w = "empty pattern";
    else if (n > GLOB_MAX)
        w = "pattern longer than 1024 bytes";
    else if (pattern[0] == '/')
        w = "absolute pattern: globs are relative to the repository root";
    for (const unsigned char *c = (const unsigned char *)pattern; !w && *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            w = "control character in pattern";
    for (const char *p = pattern; !w;) {
        const char *e = strchr(p, '/');
        if (!e)
            e = p + strlen(p);
        w = check_component(p, e);
        if (!w && e - p == 2 && p[0] == '*' && p[1] == '*' && ++doublestars > GLOB_MAX_DOUBLESTAR)
            w = "more than 4 '**' components";
        if (!*e)
            break;
        p = e + 1;
    }
    if (why)
        *why = w;
    return w ? -1 : 0;
}

/* Matches one character class starting at p ('['); sets *end past ']'. */
static bool class_match(const char *p, const char *e, char c, const char **end)
{
    p++;
    bool neg = p < e && (*p == '!' || *p == '^');
    if (neg)
        p++;
    bool hit = false;
    for (bool first = true; p < e && (*p != ']' || first); first = false) {
        char lo = *p, hi = lo;
        if (lo == '\\' && p + 1 < e)
            lo = hi = *++p;
        p++;
        if (p + 1 < e && *p == '-' && p[1] != ']') {
            hi = p[1];
            if (hi == '\\' && p + 2 < e)
                hi = p[2], p++;
            p += 2;
        }
        if (c >= lo && c <= hi)
            hit = true;
    }
    *end = p < e ? p + 1 : p;
    return hit != neg;
}

/* fnmatch within one component, iterative with one star back-track point
 * (enough for '*': a later star supersedes an earlier one). */
static bool component_match(const char *p, const char *pe, const char *s, const char *se)
{
    const char *star_p = NULL, *star_s = NULL;
    while (s < se) {
        if (p < pe && *p == '*') {
            star_p = ++p;
            star_s = s;
            continue;
        }
        if (p < pe) {
            const char *next = p + 1;
            bool ok;
            if (*p == '?') {
                ok = true;
            } else if (*p == '[') {
                ok = class_match(p, pe, *s, &next);
            } else if (*p == '\\' && p + 1 < pe) {
                ok = p[1] == *s;
                next = p + 2;
            } else {
                ok = *p == *s;
            }
            if (ok) {
                p = next;
                s++;
                continue;
            }
        }
        if (!star_p)
            return false;
        p = star_p;
        s = ++star_s;
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

static const char *component_end(const char *p)
{
    const char *e = strchr(p, '/');
    return e ? e : p + strlen(p);
}

static bool match_from(const char *p, const char *s)
{
    const char *pe = component_end(p);
    if (pe - p == 2 && p[0] == '*' && p[1] == '*') {
        if (!*pe)      /* trailing `**`: one or more components */
            return *s != 0;
        for (const char *t = s;; t++) {   /* zero or more directories */
            if ((t == s || t[-1] == '/') && match_from(pe + 1, t))
                return true;
            if (!*t)
                return false;
        }
    }
    const char *se = component_end(s);
    if (!component_match(p, pe, s, se))
        return false;
    if (!*pe || !*se)
        return !*pe && !*se;
    return match_from(pe + 1, se + 1);
}

bool cv_glob_match(const char *pattern, const char *path)
{
    if (!*pattern || !*path)
        return false;
    return match_from(pattern, path);
}
