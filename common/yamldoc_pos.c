/* Position queries over a loaded YAML document. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/yamldoc_internal.h"

static void to_span(const cv_yaml_doc *doc, cv_yspan y, cv_span *out)
{
    if (out)
        *out = (cv_span){doc->file, y.line, y.col, y.end_line, y.end_col};
}

int cv_yaml_pos(const cv_yaml_doc *doc, const json_t *node, int *line, int *col)
{
    const cv_yaml_entry *e = cv_yidx_by_node(doc->index, node);
    if (!e)
        return -1;
    *line = e->span.line;
    *col = e->span.col;
    return 0;
}

int cv_yaml_span(const cv_yaml_doc *doc, const json_t *node, cv_span *out)
{
    const cv_yaml_entry *e = cv_yidx_by_node(doc->index, node);
    if (!e)
        return -1;
    to_span(doc, e->span, out);
    return 0;
}

int cv_yaml_member_span(const cv_yaml_doc *doc, const json_t *obj, const char *key,
                        cv_span *key_span, cv_span *value_span)
{
    const cv_yaml_entry *e = cv_yidx_member(doc->index, obj, key);
    if (!e)
        return -1;
    to_span(doc, e->key_span, key_span);
    to_span(doc, e->span, value_span);
    return 0;
}

int cv_yaml_item_span(const cv_yaml_doc *doc, const json_t *arr, size_t i, cv_span *out)
{
    const cv_yaml_entry *e = cv_yidx_item(doc->index, arr, i);
    if (!e)
        return -1;
    to_span(doc, e->span, out);
    return 0;
}

/* Copies the next reference token of a JSON pointer (RFC 6901) into tok,
 * unescaping ~1 and ~0; advances *p.  Returns -1 if malformed. */
static int next_token(const char **p, char *tok, size_t cap)
{
    size_t n = 0;
    const char *s = *p + 1;   /* skip '/' */
    for (; *s && *s != '/'; s++) {
        char c = *s;
        if (c == '~') {
            if (s[1] != '0' && s[1] != '1')
                return -1;
            c = *++s == '1' ? '/' : '~';
        }
        if (n + 1 >= cap)
            return -1;
        tok[n++] = c;
    }
    tok[n] = 0;
    *p = s;
    return 0;
}

static const cv_yaml_entry *child_entry(const cv_yaml_doc *doc, const json_t *node, const char *tok)
{
    if (json_is_object(node))
        return cv_yidx_member(doc->index, node, tok);
    if (!json_is_array(node) || !tok[0] || (tok[0] == '0' && tok[1]))
        return NULL;
    char *end;
    errno = 0;
    unsigned long long i = strtoull(tok, &end, 10);
    if (*end || errno || tok[0] == '-' || tok[0] == '+')
        return NULL;
    return cv_yidx_item(doc->index, node, (size_t)i);
}

int cv_yaml_pointer_span(const cv_yaml_doc *doc, const char *pointer, bool want_key, cv_span *out)
{
    const cv_yaml_entry *e = cv_yidx_root(doc->index);
    if (!e || (pointer[0] && pointer[0] != '/'))
        return -1;
    char tok[1024];
    const char *p = pointer;
    while (*p) {
        const cv_yaml_entry *c = next_token(&p, tok, sizeof tok) ? NULL
                                                                : child_entry(doc, e->node, tok);
        if (!c) {
            to_span(doc, e->span, out);
            return 1;
        }
        e = c;
    }
    to_span(doc, want_key && e->key ? e->key_span : e->span, out);
    return 0;
}
