#include "common/jsonutil.h"

#include <stdlib.h>
#include <string.h>

#include "common/fs.h"

int cv_json_parse(const char *text, size_t len, const char *name, json_t **out, cv_diag *d)
{
    json_error_t err;
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    if (*out)
        return 0;
    cv_span sp = {.file = name, .line = err.line > 0 ? err.line : 0,
                  .col = err.column > 0 ? err.column : 0};
    cv_diag_error(d, CV_E_JSON_SYNTAX, sp, "invalid JSON: %s", err.text);
    if (name)
        cv_diag_add_source(d, name, text, len);
    return -1;
}

int cv_json_read_file(const char *path, size_t max_bytes, json_t **out, cv_diag *d)
{
    char *text;
    size_t len;
    *out = NULL;
    if (cv_fs_read_file(path, max_bytes, &text, &len, d))
        return -1;
    int rc = cv_json_parse(text, len, path, out, d);
    free(text);
    return rc;
}

char *cv_json_canonical(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
}

int cv_json_write_file(const char *path, const json_t *v, bool pretty, cv_diag *d)
{
    size_t flags = JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17) |
                   (pretty ? JSON_INDENT(2) : JSON_COMPACT);
    char *s = json_dumps(v, flags);   /* owned here */
    if (!s) {
        cv_span sp = {.file = path};
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, sp, "cannot encode JSON");
        return -1;
    }
    cv_fs_part parts[2] = {{s, strlen(s)}, {"\n", 1}};
    int rc = cv_fs_write_replace_parts(path, parts, 2, d);
    free(s);
    return rc;
}
