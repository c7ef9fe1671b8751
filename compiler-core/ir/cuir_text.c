/* Lexical rules and float spelling shared by the CU-IR parser and printer. */
#include "compiler-core/ir/cuir_text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool name_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.';
}

bool cv_cuir_is_bare_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!name_char((unsigned char)*s))
            return false;
    return true;
}

bool cv_cuir_is_ident(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    return cv_cuir_is_bare_name(s);
}

/* The bits v has once stored as t. */
static uint64_t stored_bits(cv_dtype t, double v)
{
    unsigned char b[8] = {0};
    uint64_t u = 0;
    cv_dtype_store(t, b, 0, v);
    memcpy(&u, b, sizeof u);
    return u;
}

void cv_cuir_format_float(cv_dtype t, double v, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v < 0 ? "-inf" : "inf");
        return;
    }
    uint64_t want = stored_bits(t, v);
    int max = t == CV_F64 ? 17 : 9;
    for (int prec = 1; prec <= max; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (stored_bits(t, strtod(buf, NULL)) == want)
            break;
    }
    if (!strpbrk(buf, ".e")) {
        size_t n = strlen(buf);
        if (n + 2 < size)
            memcpy(buf + n, ".0", 3);
    }
}
