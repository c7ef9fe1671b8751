/* YAML -> jansson, driven by libyaml's event parser.  An explicit stack of
 * open containers replaces recursion, so the depth limit is a plain check. */
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/yamldoc_internal.h"

typedef struct frame {
    json_t *node;           /* borrowed: owned by its parent or by the document */
    int entry;              /* index entry of the container, for its end position */
    char *anchor;           /* owned; NULL if none */
    size_t nodes_at_start;
    char *key;              /* owned: pending mapping key, NULL when a key is expected */
    cv_yspan key_span;
} frame;

typedef struct anchor {
    char *name;             /* owned */
    json_t *node;           /* owned reference */
    size_t nodes;           /* size of the subtree */
} anchor;

typedef struct builder {
    const char *file;
    cv_diag *d;
    cv_yaml_doc *docs;      /* owned until handed to the caller */
    int n_docs, cap_docs;
    cv_yaml_doc *doc;       /* the document being built (in docs) */
    frame stack[CV_YAML_MAX_DEPTH];
    int depth;
    anchor *anchors;        /* owned; reset per document */
    int n_anchors, cap_anchors;
    size_t nodes, alias_nodes;   /* in the document being built */
    size_t done_nodes;           /* in the stream's earlier documents */
    size_t max_nodes;            /* for the whole stream */
} builder;

static int report(builder *b, int code, cv_yspan y, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int report(builder *b, int code, cv_yspan y, const char *fmt, ...)
{
    cv_span sp = {b->file, y.line, y.col, y.end_line, y.end_col};
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(b->d, CV_SEV_ERROR, code, sp, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(builder *b, cv_yspan y) { return report(b, CV_E_OUT_OF_MEMORY, y, "out of memory"); }

static cv_yspan ev_span(const yaml_event_t *ev) { return cv_yspan_of(ev->start_mark, ev->end_mark); }

/* ---- anchors */

static void anchors_clear(builder *b)
{
    for (int i = 0; i < b->n_anchors; i++) {
        free(b->anchors[i].name);
        json_decref(b->anchors[i].node);
    }
    b->n_anchors = 0;
}

static const anchor *anchor_find(const builder *b, const char *name)
{
    for (int i = b->n_anchors - 1; i >= 0; i--)   /* a redefined anchor: the latest wins */
        if (strcmp(b->anchors[i].name, name) == 0)
            return &b->anchors[i];
    return NULL;
}

/* Takes ownership of name. */
static int anchor_add(builder *b, char *name, json_t *node, size_t nodes)
{
    if (b->n_anchors == b->cap_anchors) {
        int cap = b->cap_anchors ? b->cap_anchors * 2 : 16;
        anchor *a = realloc(b->anchors, (size_t)cap * sizeof *a);
        if (!a) {
            free(name);
            return -1;
        }
        b->anchors = a;
        b->cap_anchors = cap;
    }
    b->anchors[b->n_anchors++] = (anchor){name, json_incref(node), nodes};
    return 0;
}

static char *dup_anchor(const yaml_char_t *a) { return a ? strdup((const char *)a) : NULL; }

/* ---- placing nodes */

static int add_entry(builder *b, const json_t *parent, const char *key, size_t index,
                     const json_t *node, cv_yspan ks, cv_yspan vs)
{
    int id = cv_yidx_add(b->doc->index, parent, key, index, node, ks, vs);
    return id < 0 ? oom(b, vs) : id;
}

static int too_many_nodes(builder *b, cv_yspan vs)
{
    if (b->max_nodes < CV_YAML_MAX_NODES)
        return report(b, CV_E_YAML_TOO_MANY_NODES, vs, "more YAML nodes than the files read before this one "
                      "left of the budget they share (%zu)", b->max_nodes);
    return report(b, CV_E_YAML_TOO_MANY_NODES, vs, "the YAML stream has more than %zu nodes (the limit)",
                  b->max_nodes);
}

/* Adds value (a new reference, consumed) to the open container or as the
 * root.  Returns the index entry id, or -1. */
static int place(builder *b, json_t *value, cv_yspan vs)
{
    cv_yspan none = {0};
    if (b->done_nodes + ++b->nodes > b->max_nodes) {
        json_decref(value);
        return too_many_nodes(b, vs);
    }
    if (b->depth == 0) {
        json_decref(b->doc->root);
        b->doc->root = value;
        return add_entry(b, NULL, NULL, 0, value, none, vs);
    }
    frame *f = &b->stack[b->depth - 1];
    if (json_is_array(f->node)) {
        size_t i = json_array_size(f->node);
        if (json_array_append_new(f->node, value))
            return oom(b, vs);
        return add_entry(b, f->node, NULL, i, value, none, vs);
    }
    char *key = f->key;
    f->key = NULL;
    int rc = json_object_set_new(f->node, key, value) ? oom(b, vs)
           : add_entry(b, f->node, key, 0, value, f->key_span, vs);
    free(key);
    return rc;
}

static int check_key(builder *b, frame *f, const yaml_event_t *ev)
{
    cv_yspan ks = ev_span(ev);
    const char *k = (const char *)ev->data.scalar.value;
    if (strlen(k) != ev->data.scalar.length)
        return report(b, CV_E_YAML_UNSUPPORTED, ks, "mapping keys may not contain NUL characters");
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(k, "<<") == 0)
        return report(b, CV_E_YAML_UNSUPPORTED, ks, "merge keys (`<<`) are not supported");
    if (json_object_get(f->node, k)) {
        const cv_yaml_entry *e = cv_yidx_member(b->doc->index, f->node, k);
        report(b, CV_E_YAML_DUPLICATE_KEY, ks, "duplicate key `%.80s`", k);
        if (e)
            cv_diag_note(b->d, b->d->n, "first defined at line %d, column %d", e->key_span.line,
                         e->key_span.col);
        return -1;
    }
    return 0;
}

/* True when the open container is a mapping waiting for a key. */
static frame *key_expected(builder *b)
{
    frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
    return f && json_is_object(f->node) && !f->key ? f : NULL;
}

static int on_scalar(builder *b, const yaml_event_t *ev)
{
    frame *f = key_expected(b);
    if (f) {
        if (check_key(b, f, ev))
            return -1;
        f->key = strdup((const char *)ev->data.scalar.value);
        f->key_span = ev_span(ev);
        return f->key ? 0 : oom(b, ev_span(ev));
    }
    int before = b->d->n_errors;
    json_t *v = cv_yaml_scalar(ev, b->file, b->d);
    if (!v)
        return b->d->n_errors > before ? -1 : report(b, CV_E_YAML_SYNTAX, ev_span(ev), "invalid scalar");
    if (place(b, v, ev_span(ev)) < 0)
        return -1;
    char *aname = dup_anchor(ev->data.scalar.anchor);
    if (ev->data.scalar.anchor && (!aname || anchor_add(b, aname, v, 1)))
        return oom(b, ev_span(ev));
    return 0;
}

static int container_tag_ok(builder *b, const yaml_event_t *ev, const yaml_char_t *tag, bool map)
{
    const char *want = map ? "tag:yaml.org,2002:map" : "tag:yaml.org,2002:seq";
    if (!tag || strcmp((const char *)tag, want) == 0 || strcmp((const char *)tag, "!") == 0)
        return 0;
    return report(b, CV_E_YAML_UNSUPPORTED, ev_span(ev), "tag `%.80s` is not supported",
                  (const char *)tag);
}

static int on_start(builder *b, const yaml_event_t *ev, bool map)
{
    const yaml_char_t *tag = map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
    const yaml_char_t *anch = map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
    if (key_expected(b))
        return report(b, CV_E_YAML_UNSUPPORTED, ev_span(ev), "mapping keys must be scalars");
    if (container_tag_ok(b, ev, tag, map))
        return -1;
    if (b->depth == CV_YAML_MAX_DEPTH)
        return report(b, CV_E_YAML_TOO_DEEP, ev_span(ev), "nesting is deeper than %d levels",
                      CV_YAML_MAX_DEPTH);
    size_t nodes_at_start = b->nodes;
    char *aname = dup_anchor(anch);
    json_t *node = map ? json_object() : json_array();
    if (!node || (anch && !aname)) {
        free(aname);
        json_decref(node);
        return oom(b, ev_span(ev));
    }
    int id = place(b, node, ev_span(ev));
    if (id < 0) {
        free(aname);
        return -1;
    }
    b->stack[b->depth++] = (frame){node, id, aname, nodes_at_start, NULL, {0}};
    return 0;
}

static int on_end(builder *b, const yaml_event_t *ev)
{
    frame *f = &b->stack[--b->depth];
    cv_yaml_entry *e = cv_yidx_get(b->doc->index, f->entry);
    e->span.end_line = (int)ev->end_mark.line + 1;
    e->span.end_col = (int)ev->end_mark.column + 1;
    free(f->key);
    if (!f->anchor)
        return 0;
    int rc = anchor_add(b, f->anchor, f->node, b->nodes - f->nodes_at_start);
    f->anchor = NULL;
    return rc ? oom(b, ev_span(ev)) : 0;
}

/* ---- aliases: deep copies whose positions are those of the anchored node */

static int copy_children(builder *b, const json_t *src, json_t *dst);

static json_t *copy_node(builder *b, const json_t *src)
{
    if (++b->alias_nodes > CV_YAML_MAX_ALIAS_NODES)
        return NULL;
    b->nodes++;
    if (!json_is_object(src) && !json_is_array(src))
        return json_copy((json_t *)src);
    json_t *dst = json_is_object(src) ? json_object() : json_array();
    if (dst && copy_children(b, src, dst)) {
        json_decref(dst);
        return NULL;
    }
    return dst;
}

static int copy_child(builder *b, const json_t *src, json_t *dst, const char *key, size_t i,
                      json_t *child)
{
    const cv_yaml_entry *e = key ? cv_yidx_member(b->doc->index, src, key)
                                 : cv_yidx_item(b->doc->index, src, i);
    if (!e)
        return -1;
    cv_yspan ks = e->key_span, vs = e->span;   /* copy_node adds entries: e may move */
    json_t *c = copy_node(b, child);
    if (!c)
        return -1;
    if (key ? json_object_set_new(dst, key, c) : json_array_append_new(dst, c))
        return -1;
    return cv_yidx_add(b->doc->index, dst, key, i, c, ks, vs) < 0 ? -1 : 0;
}

static int copy_children(builder *b, const json_t *src, json_t *dst)
{
    const char *key;
    json_t *child;
    size_t i;
    if (json_is_object(src)) {
        json_object_foreach((json_t *)src, key, child)
            if (copy_child(b, src, dst, key, 0, child))
                return -1;
        return 0;
    }
    json_array_foreach(src, i, child)
        if (copy_child(b, src, dst, NULL, i, child))
            return -1;
    return 0;
}

static bool anchor_open(const builder *b, const char *name)
{
    for (int i = 0; i < b->depth; i++)
        if (b->stack[i].anchor && strcmp(b->stack[i].anchor, name) == 0)
            return true;
    return false;
}

static int on_alias(builder *b, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    if (key_expected(b))
        return report(b, CV_E_YAML_UNSUPPORTED, ev_span(ev), "aliases may not be used as mapping keys");
    const anchor *a = anchor_find(b, name);
    if (!a)
        return report(b, CV_E_YAML_UNDEFINED_ALIAS, ev_span(ev), "alias `*%.80s` %s", name,
                      anchor_open(b, name) ? "refers to a node that contains it"
                                           : "names no earlier anchor");
    if (b->alias_nodes + a->nodes > CV_YAML_MAX_ALIAS_NODES)
        return report(b, CV_E_YAML_ALIAS_LIMIT, ev_span(ev), "aliases expand to more than %d nodes",
                      CV_YAML_MAX_ALIAS_NODES);
    if (b->done_nodes + b->nodes + a->nodes > b->max_nodes)
        return too_many_nodes(b, ev_span(ev));
    b->nodes--;   /* place() counts the copy's root again */
    json_t *c = copy_node(b, a->node);
    if (!c)
        return oom(b, ev_span(ev));
    return place(b, c, ev_span(ev)) < 0 ? -1 : 0;
}

/* ---- documents */

static int on_doc_start(builder *b, const yaml_event_t *ev)
{
    if (b->n_docs == b->cap_docs) {
        int cap = b->cap_docs ? b->cap_docs * 2 : 4;
        cv_yaml_doc *v = realloc(b->docs, (size_t)cap * sizeof *v);
        if (!v)
            return oom(b, ev_span(ev));
        b->docs = v;
        b->cap_docs = cap;
    }
    cv_yaml_doc *doc = &b->docs[b->n_docs];
    *doc = (cv_yaml_doc){json_null(), b->file ? strdup(b->file) : NULL,
                         (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                         cv_yidx_new()};
    b->n_docs++;
    b->doc = doc;
    anchors_clear(b);
    b->done_nodes += b->nodes;
    b->nodes = b->alias_nodes = 0;
    return doc->index && (doc->file || !b->file) ? 0 : oom(b, ev_span(ev));
}

static int on_event(builder *b, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT: return on_doc_start(b, ev);
    case YAML_SCALAR_EVENT: return on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT: return on_start(b, ev, false);
    case YAML_MAPPING_START_EVENT: return on_start(b, ev, true);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return on_end(b, ev);
    case YAML_ALIAS_EVENT: return on_alias(b, ev);
    default: return 0;
    }
}

static int syntax_error(builder *b, const yaml_parser_t *p)
{
    cv_yspan y = {(int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1, 0, 0};
    report(b, CV_E_YAML_SYNTAX, y, "%s", p->problem ? p->problem : "invalid YAML");
    if (p->context)
        cv_diag_note(b->d, b->d->n, "%s (line %d, column %d)", p->context,
                     (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    return -1;
}

static int run_parser(builder *b, const char *text, size_t len)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return oom(b, (cv_yspan){0});
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = 0;
    for (bool done = false; !done && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = syntax_error(b, &p);
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(b, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

void cv_yaml_free(cv_yaml_doc *docs, int n_docs)
{
    for (int i = 0; i < n_docs; i++) {
        json_decref(docs[i].root);
        free(docs[i].file);
        cv_yidx_free(docs[i].index);
    }
    free(docs);
}

static void builder_free(builder *b)
{
    while (b->depth > 0) {
        frame *f = &b->stack[--b->depth];
        free(f->anchor);
        free(f->key);
    }
    anchors_clear(b);
    free(b->anchors);
}

int cv_yaml_load(const char *text, size_t len, const char *file, cv_yaml_doc **docs, int *n_docs,
                 cv_diag *d)
{
    size_t left = CV_YAML_MAX_NODES;
    return cv_yaml_load_budget(text, len, file, &left, docs, n_docs, d);
}

int cv_yaml_load_budget(const char *text, size_t len, const char *file, size_t *nodes_left,
                        cv_yaml_doc **docs, int *n_docs, cv_diag *d)
{
    *docs = NULL;
    *n_docs = 0;
    builder b = {.file = file, .d = d,
                 .max_nodes = *nodes_left < CV_YAML_MAX_NODES ? *nodes_left : CV_YAML_MAX_NODES};
    int rc = len > CV_YAML_MAX_BYTES
        ? report(&b, CV_E_INPUT_TOO_LARGE, (cv_yspan){0}, "YAML input is %zu bytes; the limit is %u",
                 len, CV_YAML_MAX_BYTES)
        : run_parser(&b, text, len);
    builder_free(&b);
    size_t made = b.done_nodes + b.nodes;
    *nodes_left -= made < *nodes_left ? made : *nodes_left;
    if (rc) {
        if (file && len <= CV_YAML_MAX_BYTES)
            cv_diag_add_source(d, file, text, len);
        cv_yaml_free(b.docs, b.n_docs);
        return -1;
    }
    *docs = b.docs;
    *n_docs = b.n_docs;
    return 0;
}

int cv_yaml_load_file(const char *path, cv_yaml_doc **docs, int *n_docs, cv_diag *d)
{
    char *text;
    size_t len;
    *docs = NULL;
    *n_docs = 0;
    if (cv_fs_read_file(path, CV_YAML_MAX_BYTES, &text, &len, d))
        return -1;
    int rc = cv_yaml_load(text, len, path, docs, n_docs, d);
    free(text);
    return rc;
}
