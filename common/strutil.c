#include "common/strutil.h"

#include <stdio.h>
#include <string.h>

#define EDIT_MAX_LEN 64

int cv_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int cv_edit_distance(const char *a, const char *b, int limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > EDIT_MAX_LEN || lb > EDIT_MAX_LEN)
        return limit + 1;
    int row[EDIT_MAX_LEN + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0], best = row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best)
                best = v;
        }
        /* Each row's minimum never decreases, so the cap is already exceeded. */
        if (best > limit)
            return limit + 1;
    }
    return row[lb];
}

const char *cv_closest_match(const char *word, const char *const *cands, size_t n, int limit)
{
    const char *best = NULL;
    int best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i] || strcmp(cands[i], word) == 0)
            continue;
        int dist = cv_edit_distance(word, cands[i], limit);
        if (dist < best_d) {
            best_d = dist;
            best = cands[i];
        }
    }
    return best;
}

const char *cv_str_suggest(const char *word, const char *const *candidates)
{
    int limit = (int)strlen(word) / 3;
    if (limit < 1)
        limit = 1;
    size_t n = 0;
    while (candidates && candidates[n])
        n++;
    return cv_closest_match(word, candidates, n, limit);
}

bool cv_str_is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

bool cv_str_is_ref_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255 || s[0] == '/' || s[0] == '-' || s[n - 1] == '/' || s[n - 1] == '.' ||
        strstr(s, "..") || strstr(s, "//") || strstr(s, "@{") || strcmp(s, "@") == 0 ||
        (n >= 5 && strcmp(s + n - 5, ".lock") == 0) || strstr(s, ".lock/") || strstr(s, "/."))
        return false;
    if (s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || strchr("~^:?*[\\", c))
            return false;
    }
    return true;
}

bool cv_str_is_clean_text(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return cv_str_is_utf8(s, strlen(s));
}

/* Length of the UTF-8 sequence at p (at most n bytes), 0 if malformed. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t k = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
             : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    if (!k || k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* overlong three- and four-byte forms, surrogates, past U+10FFFF */
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    return k;
}

bool cv_str_is_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_len(p + i, n - i)))
            return false;
    return true;
}

void cv_str_clean_line(const char *s, size_t n, char *out, size_t size)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0;
    for (size_t i = 0, k; i < n && p[i] != '\n'; i += k) {
        k = utf8_len(p + i, n - i);
        bool bad = k == 0 || (k == 1 && (p[i] < 0x20 || p[i] == 0x7f));
        if (bad)
            k = 1;
        size_t w = bad ? 1 : k;
        if (at + w > size - 1)
            break;
        if (bad)
            out[at++] = '?';
        else
            for (size_t j = 0; j < k; j++)
                out[at++] = (char)p[i + j];
    }
    out[at] = 0;
}

void cv_str_printable(const char *s, size_t max, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, k;
    char *o = out;
    for (; i < n && i < max; i += k) {
        k = utf8_len(p + i, n - i);
        if (k > 1 && i + k <= max) {
            memcpy(o, p + i, k);
            o += k;
        } else if (k == 1 && p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\\') {
            *o++ = (char)p[i];
        } else {
            o += sprintf(o, "\\x%02x", p[i]);
            k = 1;
        }
    }
    strcpy(o, i < n ? "..." : "");
}
