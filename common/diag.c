#include "common/diag.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

struct cv_diag_source {
    cv_diag_source *next;
    char *file;     /* owned */
    char *text;     /* owned copy */
    size_t len;
};

void cv_diag_init(cv_diag *d) { memset(d, 0, sizeof *d); }

static void entry_free(cv_diag_entry *e)
{
    free((char *)e->span.file);
    free(e->path);
    free(e->msg);
    for (int i = 0; i < e->n_notes; i++)
        free(e->notes[i]);
    free(e->notes);
}

void cv_diag_clear(cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        entry_free(&d->v[i]);
    d->n = 0;
    d->n_errors = d->n_warnings = 0;
    d->dropped = 0;
}

void cv_diag_free(cv_diag *d)
{
    cv_diag_clear(d);
    free(d->v);
    for (cv_diag_source *s = d->sources, *next; s; s = next) {
        next = s->next;
        free(s->file);
        free(s->text);
        free(s);
    }
    memset(d, 0, sizeof *d);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

int cv_diag_vadd(cv_diag *d, cv_severity sev, int code, cv_span span,
                 const char *path, const char *fmt, va_list ap)
{
    if (sev == CV_SEV_ERROR)
        d->n_errors++;
    else if (sev == CV_SEV_WARNING)
        d->n_warnings++;
    int limit = d->max_entries > 0 ? d->max_entries : 1000;
    if (d->n >= limit) {
        d->dropped++;
        return 0;
    }
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 16;
        cv_diag_entry *v = realloc(d->v, (size_t)cap * sizeof *v);
        if (!v) {
            d->dropped++;
            return 0;
        }
        d->v = v;
        d->cap = cap;
    }
    cv_diag_entry *e = &d->v[d->n];
    memset(e, 0, sizeof *e);
    cv_sb sb = CV_SB_INIT;
    cv_sb_vprintf(&sb, fmt, ap);
    e->id = ++d->n;
    e->code = code;
    e->sev = sev;
    e->span = span;
    e->span.file = dup_or_null(span.file);
    e->path = dup_or_null(path);
    e->msg = cv_sb_steal(&sb);
    return e->id;
}

int cv_diag_add(cv_diag *d, cv_severity sev, int code, cv_span span,
                const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int id = cv_diag_vadd(d, sev, code, span, path, fmt, ap);
    va_end(ap);
    return id;
}

int cv_diag_error(cv_diag *d, int code, cv_span span, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int id = cv_diag_vadd(d, CV_SEV_ERROR, code, span, NULL, fmt, ap);
    va_end(ap);
    return id;
}

int cv_diag_fail(cv_diag *d, int code, cv_span span, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_ERROR, code, span, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static cv_diag_entry *entry_mut(cv_diag *d, int id)
{
    return (id > 0 && id <= d->n) ? &d->v[id - 1] : NULL;
}

const cv_diag_entry *cv_diag_get(const cv_diag *d, int id)
{
    return (id > 0 && id <= d->n) ? &d->v[id - 1] : NULL;
}

void cv_diag_note(cv_diag *d, int id, const char *fmt, ...)
{
    cv_diag_entry *e = entry_mut(d, id);
    if (!e)
        return;
    char **notes = realloc(e->notes, (size_t)(e->n_notes + 1) * sizeof *notes);
    if (!notes)
        return;
    e->notes = notes;
    cv_sb sb = CV_SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    cv_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    e->notes[e->n_notes++] = cv_sb_steal(&sb);
}

void cv_diag_set_root(cv_diag *d, int id, int root_id)
{
    cv_diag_entry *e = entry_mut(d, id);
    /* A root must be an earlier entry: this keeps root chains acyclic. */
    if (e && root_id > 0 && root_id < id)
        e->root_id = root_id;
}

void cv_diag_set_path(cv_diag *d, int id, const char *path)
{
    cv_diag_entry *e = entry_mut(d, id);
    if (e) {
        free(e->path);
        e->path = dup_or_null(path);
    }
}

bool cv_diag_has_errors(const cv_diag *d) { return d->n_errors > 0; }

void cv_diag_merge(cv_diag *dst, cv_diag *src)
{
    int base = dst->n;
    for (int i = 0; i < src->n; i++) {
        cv_diag_entry *e = &src->v[i];
        int id = cv_diag_add(dst, e->sev, e->code, e->span, e->path, "%s", e->msg);
        for (int k = 0; id && k < e->n_notes; k++)
            cv_diag_note(dst, id, "%s", e->notes[k]);
        if (id && e->root_id)
            cv_diag_set_root(dst, id, base + e->root_id);
    }
    for (cv_diag_source *s = src->sources; s; s = s->next)
        cv_diag_add_source(dst, s->file, s->text, s->len);
    dst->dropped += src->dropped;
    cv_diag_clear(src);
}

void cv_diag_add_source(cv_diag *d, const char *file, const char *text, size_t len)
{
    if (!file || !text)
        return;
    for (cv_diag_source *s = d->sources; s; s = s->next)
        if (strcmp(s->file, file) == 0)
            return;
    cv_diag_source *s = calloc(1, sizeof *s);
    if (!s)
        return;
    s->file = strdup(file);
    s->text = malloc(len + 1);
    if (!s->file || !s->text) {
        free(s->file);
        free(s->text);
        free(s);
        return;
    }
    memcpy(s->text, text, len);
    s->text[len] = 0;
    s->len = len;
    s->next = d->sources;
    d->sources = s;
}

const char *cv_severity_name(cv_severity s)
{
    return s == CV_SEV_ERROR ? "error" : s == CV_SEV_WARNING ? "warning" : "note";
}

/* Finds line `line` (1-based) of a registered source; returns its length. */
static const char *source_line(const cv_diag *d, const char *file, int line, size_t *len)
{
    if (!file || line <= 0)
        return NULL;
    for (cv_diag_source *s = d->sources; s; s = s->next) {
        if (strcmp(s->file, file) != 0)
            continue;
        const char *p = s->text, *end = s->text + s->len;
        for (int l = 1; l < line && p < end; l++) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                return NULL;
            p = nl + 1;
        }
        if (p >= end && line > 1)
            return NULL;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        *len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        return p;
    }
    return NULL;
}

static void print_caret_line(const cv_diag *d, const cv_diag_entry *e, FILE *out, bool color)
{
    size_t len;
    const char *text = source_line(d, e->span.file, e->span.line, &len);
    if (!text || e->span.col <= 0)
        return;
    /* Long lines (minified or generated input) are cut around the column. */
    size_t col = (size_t)e->span.col - 1, start = 0, shown = len;
    if (col > len)
        col = len;
    if (len > 200) {
        start = col > 80 ? col - 80 : 0;
        shown = len - start > 160 ? 160 : len - start;
    }
    fputs("  ", out);
    for (size_t i = start; i < start + shown; i++) {
        unsigned char c = (unsigned char)text[i];
        fputc(c == '\t' ? ' ' : (c < 0x20 ? '?' : c), out);
    }
    fputs("\n  ", out);
    for (size_t i = start; i < col; i++)
        fputc(' ', out);
    int width = 1;
    if (e->span.end_line == e->span.line && e->span.end_col > e->span.col)
        width = e->span.end_col - e->span.col;
    if (width > 80)
        width = 80;
    if (color)
        fputs("\033[1;32m", out);
    fputc('^', out);
    for (int i = 1; i < width; i++)
        fputc('~', out);
    if (color)
        fputs("\033[0m", out);
    fputc('\n', out);
}

void cv_diag_print_entry(const cv_diag *d, const cv_diag_entry *e, FILE *out, bool color)
{
    const char *sevcol = e->sev == CV_SEV_ERROR ? "\033[1;31m"
                       : e->sev == CV_SEV_WARNING ? "\033[1;35m" : "\033[1;36m";
    if (color)
        fputs("\033[1m", out);
    if (e->span.file) {
        fputs(e->span.file, out);
        if (e->span.line > 0) {
            fprintf(out, ":%d", e->span.line);
            if (e->span.col > 0)
                fprintf(out, ":%d", e->span.col);
        }
        fputs(": ", out);
    }
    if (color)
        fputs(sevcol, out);
    fprintf(out, "%s[CV%04d]", cv_severity_name(e->sev), e->code);
    if (color)
        fputs("\033[0;1m", out);
    fprintf(out, ": %s", e->msg);
    if (color)
        fputs("\033[0m", out);
    fputc('\n', out);
    print_caret_line(d, e, out, color);
    if (e->path)
        fprintf(out, "  = at: %s\n", e->path);
    for (int i = 0; i < e->n_notes; i++)
        fprintf(out, "  = note: %s\n", e->notes[i]);
    if (e->root_id) {
        const cv_diag_entry *r = cv_diag_get(d, e->root_id);
        if (r)
            fprintf(out, "  = caused by: CV%04d at %s:%d:%d\n", r->code,
                    r->span.file ? r->span.file : "?", r->span.line, r->span.col);
    }
}

void cv_diag_print(const cv_diag *d, FILE *out, bool color)
{
    for (int i = 0; i < d->n; i++)
        cv_diag_print_entry(d, &d->v[i], out, color);
    if (d->dropped)
        fprintf(out, "note: %d more diagnostics not shown\n", d->dropped);
}

json_t *cv_diag_to_json(const cv_diag *d)
{
    json_t *arr = json_array();
    char code[16];
    for (int i = 0; i < d->n; i++) {
        const cv_diag_entry *e = &d->v[i];
        snprintf(code, sizeof code, "CV%04d", e->code);
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(e->id));
        json_object_set_new(o, "code", json_string(code));
        json_object_set_new(o, "severity", json_string(cv_severity_name(e->sev)));
        json_object_set_new(o, "file", e->span.file ? json_string(e->span.file) : json_null());
        json_object_set_new(o, "line", json_integer(e->span.line));
        json_object_set_new(o, "col", json_integer(e->span.col));
        json_object_set_new(o, "end_line", json_integer(e->span.end_line));
        json_object_set_new(o, "end_col", json_integer(e->span.end_col));
        json_object_set_new(o, "path", e->path ? json_string(e->path) : json_null());
        /* jansson refuses invalid UTF-8; messages quote user input. */
        json_t *msg = json_string(e->msg);
        json_object_set_new(o, "message", msg ? msg : json_string("(message not valid UTF-8)"));
        json_t *notes = json_array();
        for (int k = 0; k < e->n_notes; k++) {
            json_t *n = json_string(e->notes[k]);
            if (n)
                json_array_append_new(notes, n);
        }
        json_object_set_new(o, "notes", notes);
        json_object_set_new(o, "root_id", e->root_id ? json_integer(e->root_id) : json_null());
        json_array_append_new(arr, o);
    }
    return arr;
}
