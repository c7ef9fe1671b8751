/* Growable byte string.  Owns its buffer; cv_sb_free releases it. */
#ifndef CV_STRBUF_H
#define CV_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct cv_sb {
    char *buf;      /* owned; always NUL-terminated once anything is added */
    size_t len, cap;
    int oom;        /* set when an allocation failed; later appends are no-ops */
} cv_sb;

#define CV_SB_INIT {0}

void cv_sb_free(cv_sb *sb);
void cv_sb_reset(cv_sb *sb);
void cv_sb_add(cv_sb *sb, const void *data, size_t n);
void cv_sb_puts(cv_sb *sb, const char *s);
void cv_sb_putc(cv_sb *sb, char c);
void cv_sb_printf(cv_sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cv_sb_vprintf(cv_sb *sb, const char *fmt, va_list ap);
/* Appends s as a JSON/CU-IR string literal body with escapes (no quotes). */
void cv_sb_put_escaped(cv_sb *sb, const char *s, size_t n);
/* Hands the buffer to the caller (who frees it); the builder is emptied. */
char *cv_sb_steal(cv_sb *sb);
/* The contents, never NULL. */
const char *cv_sb_str(const cv_sb *sb);

#endif
