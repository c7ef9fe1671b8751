/* The CU-IR tokenizer.  One pass, no backtracking beyond a token, every
 * loop bounded by the input: a 100 MB line costs one linear scan. */
#include "compiler-core/ir/lex.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/strutil.h"

void cv_lex_init(cv_lexer *L, const char *src, size_t len, cv_arena *scratch)
{
    L->src = src;
    L->end = src + len;
    L->p = src;
    L->line_start = src;
    L->line = 1;
    L->scratch = scratch;
    /* A UTF-8 byte-order mark written by some editors is not content. */
    if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0)
        L->p = L->line_start = src + 3;
}

/* Bytes 0x80 and above are 0: UTF-8 only appears in strings and comments. */
const unsigned char cv_lex_cc[256] = {
    8, 8, 8, 8, 8, 8, 8, 8, 8, 0, 8, 8, 8, 8, 8, 8,  /* 0x00 */
    8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,  /* 0x10 */
    0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0,  /* 0x20 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 0, 0, 0, 0, 0,  /* 0x30 */
    0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,  /* 0x40 */
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0, 8, 0, 0, 5,  /* 0x50 */
    0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,  /* 0x60 */
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0, 0, 0, 0, 0,  /* 0x70 */
};

static bool is_name_char(int c) { return c >= 0 && (cv_lex_cc[c & 0xff] & CV_CC_NAME); }

static bool is_digit(int c) { return c >= 0 && (cv_lex_cc[c & 0xff] & CV_CC_DIGIT); }

static int peek(const cv_lexer *L, size_t k)
{
    return L->p + k < L->end ? (unsigned char)L->p[k] : -1;
}

static void finish(cv_lexer *L, cv_token *t, cv_tk kind, const char *end)
{
    t->kind = kind;
    t->n = (size_t)(end - t->p);
    t->end_col = t->col + (int)t->n;
    L->p = end;
}

static void fail(cv_lexer *L, cv_token *t, int code, const char *msg, const char *end)
{
    t->err = code;
    t->msg = msg;
    finish(L, t, TK_ERROR, end);
}

/* Where a string that starts at q (after the quote) ends: the closing quote,
 * or the end of the line/input when unterminated. */
static const char *string_end(const cv_lexer *L, const char *q, bool *closed)
{
    while (q < L->end && *q != '"' && *q != '\n') {
        if (*q == '\\' && q + 1 < L->end && q[1] != '\n')
            q++;
        q++;
    }
    *closed = q < L->end && *q == '"';
    return q;
}

/* Decodes the escapes of q..e into the scratch arena.  On error returns
 * NULL with *bad at the offending byte. */
static char *decode_string(cv_lexer *L, const char *q, const char *e, size_t *len,
                           const char **bad, int *code)
{
    char *out = cv_arena_alloc(L->scratch, (size_t)(e - q) + 1), *o = out;
    if (!out) {
        *bad = q;
        *code = CV_E_OUT_OF_MEMORY;
        return NULL;
    }
    for (; q < e; q++) {
        unsigned char c = (unsigned char)*q;
        if (c != '\\') {
            if (c < 0x20 && c != '\t') {
                *bad = q;
                *code = CV_E_INVALID_CHARACTER;
                return NULL;
            }
            *o++ = (char)c;
            continue;
        }
        *bad = q;
        *code = CV_E_INVALID_ESCAPE;
        switch (q + 1 < e ? q[1] : 0) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'x': {
            int hi = q + 2 < e ? cv_hex_digit(q[2]) : -1;
            int lo = q + 3 < e ? cv_hex_digit(q[3]) : -1;
            /* \x00 would cut the name short, and \x80 and above could make
             * invalid UTF-8: escapes spell ASCII only. */
            if (hi < 0 || lo < 0 || (hi | lo) == 0 || hi >= 8)
                return NULL;
            *o++ = (char)(hi * 16 + lo);
            q += 2;
            break;
        }
        default:
            return NULL;
        }
        q++;
    }
    *o = 0;
    *len = (size_t)(o - out);
    return out;
}

/* A string without escapes or control characters (the usual kind): copied
 * as it is.  False, with nothing done, for any other. */
static bool plain_string(cv_lexer *L, cv_token *t, cv_tk kind, const char *q)
{
    const char *e = q;
    while (e < L->end && !(cv_lex_cc[(unsigned char)*e] & CV_CC_STOP))
        e++;
    if (e == L->end || *e != '"' || (size_t)(e - q) > CV_LEX_MAX_NAME ||
        (kind != TK_STRING && e == q))
        return false;
    char *s = cv_arena_alloc(L->scratch, (size_t)(e - q) + 1);
    if (!s)
        return false;
    memcpy(s, q, (size_t)(e - q));
    t->s = s;
    t->slen = (size_t)(e - q);
    t->quoted = true;
    finish(L, t, kind, e + 1);
    return true;
}

/* A quoted string starting at the quote L->p + skip. */
static void lex_quoted(cv_lexer *L, cv_token *t, cv_tk kind, size_t skip)
{
    const char *q = L->p + skip + 1;
    if (plain_string(L, t, kind, q))
        return;
    bool closed;
    const char *e = string_end(L, q, &closed);
    if (!closed) {
        if (e == L->end)
            fail(L, t, CV_E_UNEXPECTED_EOF, "input ends inside a string (truncated file?)", e);
        else
            fail(L, t, CV_E_UNTERMINATED_STRING, "unterminated string", e);
        return;
    }
    if ((size_t)(e - q) > CV_LEX_MAX_NAME) {
        fail(L, t, CV_E_TOKEN_TOO_LONG, "string is longer than 65536 bytes", e + 1);
        return;
    }
    const char *bad;
    int code;
    char *s = decode_string(L, q, e, &t->slen, &bad, &code);
    if (!s) {
        finish(L, t, TK_ERROR, e + 1);
        t->err = code;
        t->msg = code == CV_E_INVALID_ESCAPE ? "invalid escape sequence (use \\\" \\\\ \\n \\t \\r or \\x01 to \\x7f)"
                              : "control character in a string (write it as an escape)";
        t->col += (int)(bad - t->p);
        t->end_col = t->col + 1;
        return;
    }
    t->s = s;
    t->quoted = true;
    if (kind != TK_STRING && t->slen == 0) {
        fail(L, t, CV_E_UNEXPECTED_TOKEN, "a name cannot be empty", e + 1);
        return;
    }
    finish(L, t, kind, e + 1);
}

/* %name, @name or a bare identifier; skip is the sigil's length. */
static void lex_name(cv_lexer *L, cv_token *t, cv_tk kind, size_t skip)
{
    if (skip && peek(L, skip) == '"') {
        lex_quoted(L, t, kind, skip);
        return;
    }
    const char *q = L->p + skip;
    while (q < L->end && is_name_char((unsigned char)*q))
        q++;
    if (q == L->p + skip) {
        if (q == L->end)
            fail(L, t, CV_E_UNEXPECTED_EOF, "input ends after a sigil (truncated file?)", q);
        else
            fail(L, t, CV_E_INVALID_CHARACTER, "expected a name or a quoted string after the sigil", L->p + 1);
        return;
    }
    if ((size_t)(q - L->p) > CV_LEX_MAX_NAME) {
        fail(L, t, CV_E_TOKEN_TOO_LONG, "name is longer than 65536 bytes", q);
        return;
    }
    t->s = L->p + skip;
    t->slen = (size_t)(q - t->s);
    finish(L, t, kind, q);
}

/* Decimal digits of a number, collected for the exact fast conversion. */
typedef struct digits {
    uint64_t mant;      /* the significant digits as an integer */
    int n;              /* how many went into mant (at most 19) */
    bool lost;          /* more digits than mant holds */
    int scale;          /* digits after the point that went into mant */
} digits;

static void add_digit(digits *g, unsigned d, bool fraction)
{
    if (g->n == 0 && d == 0) {
        g->scale += fraction;   /* leading zeros: only the scale moves */
        return;
    }
    if (g->n == 19) {
        g->lost = true;
        return;
    }
    g->mant = g->mant * 10 + d;
    g->n++;
    g->scale += fraction;
}

/* The double nearest to the decimal, when one IEEE operation gives it
 * exactly rounded (Clinger: mantissa below 2^53, power of ten at most
 * 1e22); else strtod on the text. */
static double to_double(const digits *g, int exp10, bool neg, const char *p, size_t n)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int e = exp10 - g->scale;
    if (!g->lost && g->mant <= (1ull << 53) && e >= -22 && e <= 22) {
        double v = (double)g->mant;
        v = e < 0 ? v / pow10[-e] : v * pow10[e];
        return neg ? -v : v;
    }
    char buf[CV_LEX_MAX_NUMBER + 1];
    memcpy(buf, p, n);
    buf[n] = 0;
    return strtod(buf, NULL);
}

static void lex_number(cv_lexer *L, cv_token *t)
{
    const char *q = L->p, *e = L->end;
    bool neg = *q == '-', is_float = false;
    if (neg)
        q++;
    uint64_t v = 0;
    bool ovf = false;
    digits g = {0};
    for (; q < e && is_digit(*q); q++) {
        unsigned d = (unsigned)(*q - '0');
        add_digit(&g, d, false);
        /* v * 10 + d <= UINT64_MAX, without a division */
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            ovf = true;
        else
            v = v * 10 + d;
    }
    bool bad = false;
    int exp10 = 0;
    if (q < e && *q == '.') {
        is_float = true;
        q++;
        bad |= !(q < e && is_digit(*q));
        for (; q < e && is_digit(*q); q++)
            add_digit(&g, (unsigned)(*q - '0'), true);
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        is_float = true;
        q++;
        bool eneg = q < e && *q == '-';
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        bad |= !(q < e && is_digit(*q));
        for (; q < e && is_digit(*q); q++)
            if (exp10 < 100000)
                exp10 = exp10 * 10 + (*q - '0');
        if (eneg)
            exp10 = -exp10;
    }
    while (q < e && is_name_char((unsigned char)*q)) {  /* "12ab", "1.2.3" */
        bad = true;
        q++;
    }
    size_t n = (size_t)(q - L->p);
    if (n > CV_LEX_MAX_NUMBER) {
        fail(L, t, CV_E_TOKEN_TOO_LONG, "number is longer than 1024 characters", q);
        return;
    }
    if (bad) {
        fail(L, t, CV_E_INVALID_NUMBER, "malformed number", q);
        return;
    }
    if (!is_float) {
        uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        t->overflow = ovf || v > lim;
        t->i = t->overflow ? 0 : neg ? (int64_t)(0 - v) : (int64_t)v;
        t->f = (double)t->i;
    }
    if (is_float || t->overflow) {
        t->f = to_double(&g, exp10, neg, L->p, n);
        if (is_float)
            t->overflow = isinf(t->f);
    }
    finish(L, t, is_float ? TK_FLOAT : TK_INT, q);
}

/* "-inf" and "-nan": the unsigned forms are identifiers the parser knows. */
static bool lex_neg_special(cv_lexer *L, cv_token *t)
{
    const char *q = L->p + 1;
    if (L->end - q < 3 || (memcmp(q, "inf", 3) != 0 && memcmp(q, "nan", 3) != 0))
        return false;
    if (q + 3 < L->end && is_name_char((unsigned char)q[3]))
        return false;
    t->f = q[0] == 'i' ? -__builtin_inf() : -__builtin_nan("");
    finish(L, t, TK_FLOAT, q + 3);
    return true;
}

static void skip_blank(cv_lexer *L)
{
    const char *p = L->p, *e = L->end;
    for (;;) {
        while (p < e && (*p == ' ' || *p == '\t'))
            p++;
        if (p < e && *p == '#') {
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            p = nl ? nl : e;
        } else if (p + 1 < e && *p == '\r' && p[1] == '\n') {
            p++;
        } else {
            break;
        }
    }
    L->p = p;
}

static void lex_other(cv_lexer *L, cv_token *t, int c)
{
    if (c == '-' && is_digit(peek(L, 1)))
        lex_number(L, t);
    else if (c == '-' && peek(L, 1) == '>')
        finish(L, t, TK_ARROW, L->p + 2);
    else if (c == '-' && lex_neg_special(L, t))
        return;
    else if (c == '-' && L->p + 1 == L->end)
        fail(L, t, CV_E_UNEXPECTED_EOF, "input ends after '-' (truncated file?)", L->end);
    else if (cv_lex_cc[c] & CV_CC_IDENT)
        lex_name(L, t, TK_IDENT, 0);
    else
        fail(L, t, CV_E_INVALID_CHARACTER, c >= 0x80 ? "non-ASCII character outside a string or comment"
                                   : "character cannot start a token", L->p + 1);
}

void cv_lex_next(cv_lexer *L, cv_token *t)
{
    skip_blank(L);
    /* Field by field: a memset of the whole token was a measurable share
     * of lexing time. */
    t->s = NULL;
    t->slen = 0;
    t->quoted = false;
    t->i = 0;
    t->overflow = false;
    t->f = 0;
    t->err = 0;
    t->msg = NULL;
    t->p = L->p;
    t->line = L->line;
    t->col = (int)(L->p - L->line_start) + 1;
    if (L->p >= L->end) {
        finish(L, t, TK_EOF, L->p);
        return;
    }
    int c = (unsigned char)*L->p;
    switch (c) {
    case '\n':
        finish(L, t, TK_NEWLINE, L->p + 1);
        L->line++;
        L->line_start = L->p;
        return;
    case '(': finish(L, t, TK_LPAREN, L->p + 1); return;
    case ')': finish(L, t, TK_RPAREN, L->p + 1); return;
    case '[': finish(L, t, TK_LBRACK, L->p + 1); return;
    case ']': finish(L, t, TK_RBRACK, L->p + 1); return;
    case '{': finish(L, t, TK_LBRACE, L->p + 1); return;
    case '}': finish(L, t, TK_RBRACE, L->p + 1); return;
    case ',': finish(L, t, TK_COMMA, L->p + 1); return;
    case ':': finish(L, t, TK_COLON, L->p + 1); return;
    case '=': finish(L, t, TK_EQ, L->p + 1); return;
    case '%': lex_name(L, t, TK_VALUE, 1); return;
    case '@': lex_name(L, t, TK_GLOBAL, 1); return;
    case '"': lex_quoted(L, t, TK_STRING, 0); return;
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        lex_number(L, t);
        return;
    default:
        lex_other(L, t, c);
    }
}

void cv_lex_seek(cv_lexer *L, const char *p)
{
    if (p >= L->p && p <= L->end && !memchr(L->p, '\n', (size_t)(p - L->p)))
        L->p = p;
}

const char *cv_lex_cstr(cv_lexer *L, const cv_token *t)
{
    if (t->quoted)
        return t->s;
    return cv_arena_strndup(L->scratch, t->s, t->slen);
}

int cv_lex_skip_line(cv_lexer *L, const char *from, int limit, int *deep_col)
{
    const char *q = from, *e = L->end;
    int depth = 0, max = 0;
    *deep_col = 0;
    while (q < e && *q != '\n') {
        char c = *q;
        if (c == '(' || c == '[' || c == '{') {
            if (++depth > max)
                max = depth;
            if (depth > limit && !*deep_col)
                *deep_col = (int)(q - L->line_start) + 1;
        } else if (c == ')' || c == ']' || c == '}') {
            depth--;
        } else if (c == '"') {
            bool closed;
            q = string_end(L, q + 1, &closed);
            if (!closed)
                continue;
        } else if (c == '#') {
            const char *nl = memchr(q, '\n', (size_t)(e - q));
            q = nl ? nl : e;
            continue;
        }
        q++;
    }
    if (q < e) {  /* consume the newline */
        q++;
        L->line++;
        L->line_start = q;
    }
    L->p = q;
    return max;
}

long long cv_lex_find_nul(const char *s, size_t n)
{
    const char *z = memchr(s, 0, n);
    return z ? (long long)(z - s) : -1;
}

long long cv_lex_find_bad_utf8(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, eight bytes at a time. */
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xBF;  /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0;      /* overlong */
            else if (c == 0xED)
                hi = 0x9F;      /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;      /* above U+10FFFF */
        } else
            return (long long)i;
        if (i + len > n || s[i + 1] < lo || s[i + 1] > hi)
            return (long long)i;
        for (size_t k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return (long long)i;
        i += len;
    }
    return -1;
}

void cv_lex_line_col(const char *s, size_t off, int *line, int *col)
{
    int l = 1;
    const char *start = s, *p = s, *end = s + off;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        l++;
        start = ++p;
    }
    *line = l;
    *col = (int)(end - start) + 1;
}
