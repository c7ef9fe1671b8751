#include "common/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cv_sb_free(cv_sb *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    sb->oom = 0;
}

void cv_sb_reset(cv_sb *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = 0;
}

static int sb_reserve(cv_sb *sb, size_t extra)
{
    if (sb->oom)
        return -1;
    if (extra > (size_t)-1 / 2 - sb->len) {
        sb->oom = 1;
        return -1;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(sb->buf, cap);
    if (!p) {
        sb->oom = 1;
        return -1;
    }
    sb->buf = p;
    sb->cap = cap;
    return 0;
}

void cv_sb_add(cv_sb *sb, const void *data, size_t n)
{
    if (sb_reserve(sb, n))
        return;
    if (n)
        memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = 0;
}

void cv_sb_puts(cv_sb *sb, const char *s) { cv_sb_add(sb, s, strlen(s)); }
void cv_sb_putc(cv_sb *sb, char c) { cv_sb_add(sb, &c, 1); }

void cv_sb_vprintf(cv_sb *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || sb_reserve(sb, (size_t)n))
        return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void cv_sb_printf(cv_sb *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void cv_sb_put_escaped(cv_sb *sb, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': cv_sb_puts(sb, "\\\""); break;
        case '\\': cv_sb_puts(sb, "\\\\"); break;
        case '\n': cv_sb_puts(sb, "\\n"); break;
        case '\t': cv_sb_puts(sb, "\\t"); break;
        case '\r': cv_sb_puts(sb, "\\r"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                cv_sb_printf(sb, "\\x%02x", c);
            else
                cv_sb_putc(sb, (char)c);
        }
    }
}

char *cv_sb_steal(cv_sb *sb)
{
    char *p = sb->buf;
    if (!p)
        p = calloc(1, 1);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return p;
}

const char *cv_sb_str(const cv_sb *sb) { return sb->buf ? sb->buf : ""; }
