/* Numeric and string literals, with Python's rules: 0x/0o/0b prefixes,
 * underscores between digits, exponents, imaginary suffixes, string
 * prefixes, triple quotes and escape sequences. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/strutil.h"
#include "compiler-core/frontends/dsl/lex_internal.h"

/* A digit's value, or 99 (above every base) for a non-digit. */
static int digit_val(int c)
{
    int v = cv_hex_digit(c);
    return v < 0 ? 99 : v;
}

/* Consumes digits of `base`, single underscores allowed between digits (and
 * right after a base prefix when lead_us).  Returns the number of digits. */
static int scan_digits(dsl_lexer *lx, int base, bool lead_us, bool *bad)
{
    int n = 0;
    for (;;) {
        int c = dsl_lx_peek(lx, 0);
        if (c == '_') {
            int next = dsl_lx_peek(lx, 1);
            if ((n == 0 && !lead_us) || next < 0 || digit_val(next) >= base) {
                *bad = true;
                return n;
            }
            dsl_lx_adv(lx);
        } else if (c >= 0 && digit_val(c) < base) {
            dsl_lx_adv(lx);
            n++;
        } else {
            return n;
        }
        lead_us = false;
    }
}

/* Digits of [p, p+n) in `base`, skipping underscores; false on overflow. */
static bool int_value(const char *p, size_t n, int base, int64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '_')
            continue;
        unsigned dv = (unsigned)digit_val((unsigned char)p[i]);
        if (v > (UINT64_C(0x7fffffffffffffff) - dv) / (unsigned)base)
            return false;
        v = v * (unsigned)base + dv;
    }
    *out = (int64_t)v;
    return true;
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* Scans a decimal literal: integer part, fraction, exponent, 'j'. */
static void scan_decimal(dsl_lexer *lx, bool *is_float, bool *imag, bool *bad)
{
    if (dsl_lx_peek(lx, 0) != '.')
        scan_digits(lx, 10, false, bad);
    if (dsl_lx_peek(lx, 0) == '.' && !*bad) {
        dsl_lx_adv(lx);
        *is_float = true;
        if (dsl_lx_peek(lx, 0) == '_')
            *bad = true;
        else
            scan_digits(lx, 10, false, bad);
    }
    int e = dsl_lx_peek(lx, 0), s = dsl_lx_peek(lx, 1);
    if (!*bad && (e == 'e' || e == 'E') &&
        (is_digit(s) || ((s == '+' || s == '-') && is_digit(dsl_lx_peek(lx, 2))))) {
        dsl_lx_adv(lx);
        if (s == '+' || s == '-')
            dsl_lx_adv(lx);
        *is_float = true;
        scan_digits(lx, 10, false, bad);
    }
    if (!*bad && (dsl_lx_peek(lx, 0) == 'j' || dsl_lx_peek(lx, 0) == 'J')) {
        dsl_lx_adv(lx);
        *imag = true;
    }
}

static bool has_leading_zeros(const char *p, size_t n)
{
    if (n < 2 || p[0] != '0')
        return false;
    for (size_t i = 1; i < n; i++)
        if (p[i] != '0' && p[i] != '_')
            return true;
    return false;
}

static double float_value(dsl_lexer *lx, const char *p, size_t n)
{
    char *buf = cv_arena_alloc(lx->a, n + 1);
    if (!buf)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != '_' && p[i] != 'j' && p[i] != 'J')
            buf[k++] = p[i];
    buf[k] = 0;
    return strtod(buf, NULL);
}

void dsl_lx_number(dsl_lexer *lx)
{
    size_t start = lx->pos;
    int line = lx->line, col = lx->col;
    bool is_float = false, imag = false, bad = false, overflow = false;
    int base = 10;
    int p1 = dsl_lx_peek(lx, 1) | 0x20;
    int64_t iv = 0;
    if (dsl_lx_peek(lx, 0) == '0' && (p1 == 'x' || p1 == 'o' || p1 == 'b')) {
        base = p1 == 'x' ? 16 : p1 == 'o' ? 8 : 2;
        dsl_lx_adv(lx);
        dsl_lx_adv(lx);
        if (scan_digits(lx, base, true, &bad) == 0)
            bad = true;
    } else {
        scan_decimal(lx, &is_float, &imag, &bad);
    }
    bool trailing = false;
    while (dsl_lx_is_name_char(dsl_lx_peek(lx, 0))) {
        dsl_lx_adv(lx);
        trailing = true;
    }
    const char *p = lx->src + start;
    size_t n = lx->pos - start;
    if (n > DSL_MAX_TOKEN_BYTES) {
        dsl_lx_error(lx, CV_E_TOKEN_TOO_LONG, "Token[number]", line, col, "number is %zu bytes long (limit %d)",
                     n, DSL_MAX_TOKEN_BYTES);
        bad = true;
    } else if (bad || trailing) {
        dsl_lx_error(lx, CV_E_INVALID_NUMBER, "Token[number]", line, col, "invalid %s literal '%.*s'",
                     base == 16 ? "hexadecimal" : base == 8 ? "octal" : base == 2 ? "binary" : "number",
                     (int)(n > 40 ? 40 : n), p);
        bad = true;
    } else if (!is_float && !imag && base == 10 && has_leading_zeros(p, n)) {
        dsl_lx_error(lx, CV_E_INVALID_NUMBER, "Token[number]", line, col,
                     "leading zeros in decimal integer literals are not permitted; use 0o for octal");
        bad = true;
    } else if (!is_float && !imag) {
        size_t skip = base == 10 ? 0 : 2;
        if (!int_value(p + skip, n - skip, base, &iv)) {
            dsl_lx_error(lx, CV_E_INVALID_NUMBER, "Token[number]", line, col,
                         "integer literal '%.*s' does not fit in 64 bits", (int)(n > 40 ? 40 : n), p);
            overflow = true;
        }
    }
    dsl_tok_kind kind = imag ? DSL_T_IMAG : is_float ? DSL_T_FLOAT : DSL_T_INT;
    dsl_tok *t = dsl_lx_push(lx, bad ? DSL_T_INT : kind, start, line, col);
    if (!bad && !overflow) {
        t->ival = iv;
        if (is_float || imag)
            t->fval = float_value(lx, p, n);
    }
}

/* ---- strings -------------------------------------------------------------- */

static void put_utf8(cv_sb *sb, uint32_t cp)
{
    char b[4];
    int n;
    if (cp < 0x80) { b[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xC0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    cv_sb_add(sb, b, (size_t)n);
}

/* Reads exactly `count` hex digits; false (cursor after what was read) if fewer. */
static bool read_hex(dsl_lexer *lx, int count, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < count; i++) {
        int dv = digit_val(dsl_lx_peek(lx, 0));
        if (dv >= 16)
            return false;
        v = v * 16 + (uint32_t)dv;
        dsl_lx_adv(lx);
    }
    *out = v;
    return true;
}

static const char *simple_escape(int c)
{
    switch (c) {
    case '\\': return "\\";
    case '\'': return "'";
    case '"': return "\"";
    case 'a': return "\a";
    case 'b': return "\b";
    case 'f': return "\f";
    case 'n': return "\n";
    case 'r': return "\r";
    case 't': return "\t";
    case 'v': return "\v";
    default: return NULL;
    }
}

static void code_point(dsl_lexer *lx, cv_sb *sb, uint32_t v, bool bytes, int line, int col)
{
    if (bytes && v > 0xFF)
        dsl_lx_error(lx, CV_E_INVALID_ESCAPE, "Token[string]", line, col, "escape value %u does not fit in a byte", v);
    else if (bytes)
        cv_sb_putc(sb, (char)v);
    else if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        dsl_lx_error(lx, CV_E_INVALID_ESCAPE, "Token[string]", line, col, "escape U+%X is not a valid character", v);
    else
        put_utf8(sb, v);
}

/* The cursor is on a backslash inside a string. */
static void escape(dsl_lexer *lx, cv_sb *sb, unsigned flags)
{
    int line = lx->line, col = lx->col;
    bool bytes = flags & DSL_STR_BYTES;
    dsl_lx_adv(lx);
    int c = dsl_lx_peek(lx, 0);
    if (c < 0)
        return;
    if (flags & DSL_STR_RAW) {
        /* A raw string keeps the backslash, and the escaped quote does not end it. */
        cv_sb_putc(sb, '\\');
        if (c == '\r' && dsl_lx_peek(lx, 1) == '\n') {
            cv_sb_putc(sb, '\r');
            dsl_lx_adv(lx);
            c = '\n';
        }
        if (c == '\n' || c == '\r' || c == '\\' || c == '\'' || c == '"') {
            cv_sb_putc(sb, (char)c);
            dsl_lx_adv(lx);
        }
        return;
    }
    const char *simple = simple_escape(c);
    uint32_t v = 0;
    if (c == '\n' || c == '\r') {
        if (c == '\r' && dsl_lx_peek(lx, 1) == '\n')
            dsl_lx_adv(lx);
        dsl_lx_adv(lx);
    } else if (simple) {
        cv_sb_putc(sb, simple[0]);
        dsl_lx_adv(lx);
    } else if (c >= '0' && c <= '7') {
        for (int i = 0; i < 3 && dsl_lx_peek(lx, 0) >= '0' && dsl_lx_peek(lx, 0) <= '7'; i++) {
            v = v * 8 + (uint32_t)(dsl_lx_peek(lx, 0) - '0');
            dsl_lx_adv(lx);
        }
        code_point(lx, sb, v, bytes, line, col);
    } else if (c == 'x' || (!bytes && (c == 'u' || c == 'U'))) {
        dsl_lx_adv(lx);
        int count = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        if (!read_hex(lx, count, &v))
            dsl_lx_error(lx, CV_E_INVALID_ESCAPE, "Token[string]", line, col, "truncated \\%c escape: needs %d hex digits",
                         c, count);
        else
            code_point(lx, sb, v, bytes, line, col);
    } else if (c == 'N' && !bytes) {
        dsl_lx_adv(lx);
        dsl_lx_error(lx, CV_E_INVALID_ESCAPE, "Token[string]", line, col, "\\N{...} escapes are not supported");
    } else {
        dsl_lx_error(lx, CV_E_INVALID_ESCAPE, "Token[string]", line, col, "invalid escape sequence '\\%c'",
                     c >= 0x20 && c < 0x7f ? c : '?');
        dsl_lx_adv(lx);
    }
}

void dsl_lx_string(dsl_lexer *lx, size_t start, int line, int col, unsigned flags)
{
    int q = dsl_lx_peek(lx, 0);
    bool triple = dsl_lx_peek(lx, 1) == q && dsl_lx_peek(lx, 2) == q;
    for (int i = 0; i < (triple ? 3 : 1); i++)
        dsl_lx_adv(lx);
    cv_sb sb = CV_SB_INIT;  /* owned here; copied into the arena below */
    bool closed = false, long_reported = false, ascii_reported = false;
    while (lx->pos < lx->len) {
        int c = dsl_lx_peek(lx, 0);
        if (!triple && (c == '\n' || c == '\r'))
            break;
        if (lx->pos - start > DSL_MAX_TOKEN_BYTES && !long_reported) {
            dsl_lx_error(lx, CV_E_TOKEN_TOO_LONG, "Token[string]", line, col, "string literal longer than %d bytes",
                         DSL_MAX_TOKEN_BYTES);
            long_reported = true;
        }
        if (c == q && (!triple || (dsl_lx_peek(lx, 1) == q && dsl_lx_peek(lx, 2) == q))) {
            for (int i = 0; i < (triple ? 3 : 1); i++)
                dsl_lx_adv(lx);
            closed = true;
            break;
        }
        if (c == '\\') {
            escape(lx, &sb, flags);
            continue;
        }
        if (c >= 0x80 && (flags & DSL_STR_BYTES) && !ascii_reported) {
            dsl_lx_error(lx, CV_E_INVALID_CHARACTER, "Token[string]", lx->line, lx->col,
                         "bytes literals can only contain ASCII characters");
            ascii_reported = true;
        }
        cv_sb_putc(&sb, (char)c);
        dsl_lx_adv(lx);
    }
    if (!closed)
        dsl_lx_error(lx, CV_E_UNTERMINATED_STRING, "Token[string]", line, col,
                     triple ? "triple-quoted string literal is never closed"
                            : "string literal is not closed before the end of the line");
    dsl_tok *t = dsl_lx_push(lx, DSL_T_STRING, start, line, col);
    t->slen = sb.len;
    t->sval = sb.oom ? "" : cv_arena_memdup(lx->a, sb.len ? sb.buf : "", sb.len + 1);
    if (!t->sval)
        t->sval = "";
    t->sflags = flags;
    cv_sb_free(&sb);
}
