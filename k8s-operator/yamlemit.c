/* JSON values as block YAML for people and linters: two-space indentation,
 * sequences indented under their key, short scalar lists in flow style,
 * strings plain only where every YAML reader (1.1 and 1.2) reads them back
 * as the same string, long text folded. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strbuf.h"
#include "k8s-operator/operator.h"

static void spaces(cv_sb *sb, int n)
{
    for (int i = 0; i < n; i++)
        cv_sb_putc(sb, ' ');
}

/* Words YAML 1.1 reads as booleans or null. */
static bool reserved(const char *s)
{
    static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false",
                                        "null", NULL};
    for (int i = 0; words[i]; i++)
        if (strcasecmp(s, words[i]) == 0)
            return true;
    return false;
}

/* Starts with a letter, '/' or '_' (never a number, an indicator or ".inf"),
 * then letters, digits and . _ / - and single inner spaces. */
static bool plain_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '/' || s[0] == '_') || s[n - 1] == ' ' ||
        reserved(s))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '.' || c == '_' || c == '/' || c == '-' ||
              (c == ' ' && s[i + 1] != ' ')))
            return false;
    }
    return true;
}

static void quoted(cv_sb *sb, const char *s)
{
    cv_sb_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            cv_sb_printf(sb, "\\%c", *p);
        else if (*p == '\n')
            cv_sb_puts(sb, "\\n");
        else if (*p == '\t')
            cv_sb_puts(sb, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            cv_sb_printf(sb, "\\x%02x", *p);
        else
            cv_sb_putc(sb, (char)*p);
    }
    cv_sb_putc(sb, '"');
}

/* Text that folds back into itself: single spaces between words, no
 * leading or trailing space, nothing but printable characters. */
static bool foldable(const char *s)
{
    size_t n = strlen(s);
    if (!n || s[0] == ' ' || s[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (s[i] == ' ' && s[i + 1] == ' '))
            return false;
    return true;
}

/* ">-" and the words wrapped at width, each line at indent. */
static void folded(cv_sb *sb, const char *s, int indent, int width)
{
    cv_sb_puts(sb, ">-");
    int col = width;   /* forces a new line before the first word */
    while (*s) {
        size_t w = strcspn(s, " ");
        if (col + 1 + (int)w > width) {
            cv_sb_putc(sb, '\n');
            spaces(sb, indent);
            col = indent;
        } else {
            cv_sb_putc(sb, ' ');
            col++;
        }
        cv_sb_add(sb, s, w);
        col += (int)w;
        s += w;
        if (*s == ' ')
            s++;
    }
}

/* A scalar starting at column col; nested text at indent. */
static void scalar(cv_sb *sb, const json_t *v, int col, int indent, int width)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        int len = (int)strlen(s);
        if (plain_ok(s) && col + len <= width)
            cv_sb_puts(sb, s);
        else if (col + len + 2 > width && foldable(s))
            folded(sb, s, indent, width);
        else
            quoted(sb, s);
    } else if (json_is_integer(v)) {
        cv_sb_printf(sb, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        cv_sb_printf(sb, "%.17g", json_real_value(v));
    } else {
        cv_sb_puts(sb, json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
    }
}

static bool is_scalar(const json_t *v) { return !json_is_object(v) && !json_is_array(v); }

/* "[a, b]" when every item is a plain-looking scalar and it fits. */
static bool flow(cv_sb *sb, const json_t *arr, int col, int width)
{
    cv_sb tmp = CV_SB_INIT;
    size_t i;
    const json_t *it;
    bool ok = true;
    cv_sb_putc(&tmp, '[');
    json_array_foreach(arr, i, it) {
        if (!is_scalar(it) || (json_is_string(it) && !plain_ok(json_string_value(it)) &&
                               strchr(json_string_value(it), '\n'))) {
            ok = false;
            break;
        }
        if (i)
            cv_sb_puts(&tmp, ", ");
        scalar(&tmp, it, 0, 0, 1 << 30);
    }
    cv_sb_putc(&tmp, ']');
    ok = ok && col + (int)tmp.len <= width;
    if (ok)
        cv_sb_add(sb, tmp.buf, tmp.len);
    cv_sb_free(&tmp);
    return ok;
}

static void mapping(cv_sb *sb, const json_t *obj, int indent, bool inline_first, int width);
static void sequence(cv_sb *sb, const json_t *arr, int indent, int width);

static void key(cv_sb *sb, const char *k)
{
    if (plain_ok(k))
        cv_sb_puts(sb, k);
    else
        quoted(sb, k);
    cv_sb_putc(sb, ':');
}

/* What follows "key:" (at column col) or "- ". */
static void value(cv_sb *sb, const json_t *v, int col, int indent, int width)
{
    if (json_is_object(v) && json_object_size(v)) {
        cv_sb_putc(sb, '\n');
        mapping(sb, v, indent + 2, false, width);
    } else if (json_is_array(v) && json_array_size(v)) {
        cv_sb_putc(sb, ' ');
        if (flow(sb, v, col + 1, width)) {
            cv_sb_putc(sb, '\n');
        } else {
            if (!sb->oom)
                sb->buf[--sb->len] = '\0';   /* the space before a flow list */
            cv_sb_putc(sb, '\n');
            sequence(sb, v, indent + 2, width);
        }
    } else {
        cv_sb_putc(sb, ' ');
        if (json_is_object(v) || json_is_array(v))
            cv_sb_puts(sb, json_is_object(v) ? "{}" : "[]");
        else
            scalar(sb, v, col + 1, indent + 2, width);
        cv_sb_putc(sb, '\n');
    }
}

static void mapping(cv_sb *sb, const json_t *obj, int indent, bool inline_first, int width)
{
    const char *k;
    const json_t *v;
    bool first = true;
    json_object_foreach((json_t *)obj, k, v) {
        if (!(first && inline_first))
            spaces(sb, indent);
        first = false;
        size_t start = sb->len;
        key(sb, k);
        /* The column: from the start of this line. */
        size_t line = start;
        while (line && sb->buf[line - 1] != '\n')
            line--;
        value(sb, v, (int)(sb->len - line), indent, width);
    }
}

static void sequence(cv_sb *sb, const json_t *arr, int indent, int width)
{
    size_t i;
    const json_t *it;
    json_array_foreach(arr, i, it) {
        spaces(sb, indent);
        cv_sb_puts(sb, "- ");
        if (json_is_object(it) && json_object_size(it)) {
            mapping(sb, it, indent + 2, true, width);
        } else if (json_is_array(it) && json_array_size(it)) {
            if (flow(sb, it, indent + 2, width)) {
                cv_sb_putc(sb, '\n');
            } else {
                cv_sb_putc(sb, '\n');
                sequence(sb, it, indent + 2, width);
            }
        } else {
            if (json_is_object(it) || json_is_array(it))
                cv_sb_puts(sb, json_is_object(it) ? "{}" : "[]");
            else
                scalar(sb, it, indent + 2, indent + 2, width);
            cv_sb_putc(sb, '\n');
        }
    }
}

char *cv_k8s_yaml_emit(const json_t *v, int width)
{
    cv_sb sb = CV_SB_INIT;
    if (json_is_object(v) && json_object_size(v)) {
        mapping(&sb, v, 0, false, width);
    } else if (json_is_array(v) && json_array_size(v)) {
        sequence(&sb, v, 0, width);
    } else {
        scalar(&sb, v, 0, 0, width);
        cv_sb_putc(&sb, '\n');
    }
    return sb.oom ? (cv_sb_free(&sb), NULL) : cv_sb_steal(&sb);
}
