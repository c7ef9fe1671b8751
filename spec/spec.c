/* Spec sets: YAML files in, validated documents, then the checks that need
 * every document at once (names, the one cluster, `extends`).
 *
 * `extends` merges the base's effective spec under the pipeline's own:
 * mappings merge key by key (recursively), lists and scalars replace.  The
 * merge works on the validated JSON trees, so positions stay with each
 * document and errors still point at the file that caused them. */
#include "spec/spec_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/fs.h"

#define EXTENDS_DEPTH_MAX 32

typedef struct spec_file {
    char *name;              /* owned */
    char *text;              /* owned copy, for caret lines of later errors */
    size_t len;
    cv_yaml_doc *docs;       /* owned */
    int n_docs;
    bool context;
} spec_file;

typedef struct spec_entry {
    cv_spec_kind kind;
    const char *name;        /* borrowed from the document; NULL if invalid */
    const cv_yaml_doc *doc;  /* borrowed from its file */
    int file;
    bool valid;
    bool usable;             /* valid, not context, resolved: converted */
    int mark;                /* extends walk: 0 new, 1 on the stack, 2 done */
    json_t *effective;       /* owned: merged spec (pipelines that resolved) */
} spec_entry;

struct cv_spec_set {
    cv_arena arena;          /* the converted specs' strings and arrays */
    spec_file *files;        /* owned */
    int n_files;
    spec_entry *entries;     /* owned */
    int n_entries;
    bool resolved;
    cv_spec_cluster *cluster;            /* in the arena */
    cv_spec_pipeline *pipelines;         /* in the arena */
    int n_pipelines;
    size_t bytes, nodes_left;            /* read so far; YAML nodes still allowed */
};

cv_spec_set *cv_spec_set_new(void)
{
    cv_spec_set *s = calloc(1, sizeof *s);
    if (s) {
        cv_arena_init(&s->arena);
        s->nodes_left = CV_SPEC_NODES_MAX;
    }
    return s;
}

void cv_spec_set_free(cv_spec_set *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_entries; i++)
        json_decref(s->entries[i].effective);
    for (int i = 0; i < s->n_files; i++) {
        free(s->files[i].name);
        free(s->files[i].text);
        cv_yaml_free(s->files[i].docs, s->files[i].n_docs);
    }
    free(s->entries);
    free(s->files);
    cv_arena_free(&s->arena);
    free(s);
}

static cv_span doc_span(const cv_yaml_doc *doc)
{
    return (cv_span){.file = doc->file, .line = doc->line, .col = doc->col};
}

/* The span of a member's key (or value) of an object at a pointer, falling
 * back to the document start. */
static cv_span member_span(const cv_yaml_doc *doc, const char *pointer, bool want_key)
{
    cv_span sp = doc_span(doc);
    cv_yaml_pointer_span(doc, pointer, want_key, &sp);
    return sp;
}

static const char *str_at(const json_t *root, const char *obj, const char *key)
{
    const json_t *o = obj ? json_object_get(root, obj) : root;
    return json_string_value(json_object_get(o, key));
}

/* Picks the table by kind, which must be checked first. */
static int doc_kind(spec_walk *w, const json_t *root, cv_spec_kind *k)
{
    const json_t *kind = json_object_get(root, "kind");
    cv_span sp = member_span(w->doc, "/kind", false);
    if (!kind)
        return spec_error(w, CV_E_SPEC_MISSING_FIELD, doc_span(w->doc),
                          "the document lacks the required field 'kind' (%s or %s)",
                          spec_kind_names[0], spec_kind_names[1]);
    const char *s = json_string_value(kind);
    for (int i = 0; s && i < CV_SPEC__KINDS; i++) {
        if (strcmp(s, spec_kind_names[i]) == 0) {
            *k = (cv_spec_kind)i;
            return 0;
        }
    }
    if (!s)
        return spec_error(w, CV_E_SPEC_FIELD_TYPE, sp, "kind must be a string");
    const char *hint = cv_str_suggest(s, spec_kind_names);
    return spec_error(w, CV_E_SPEC_UNKNOWN_KIND, sp, "unknown kind '%s'%s%s%s (expected %s or %s)", s,
                      hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "",
                      spec_kind_names[0], spec_kind_names[1]);
}

/* Rules between fields of a cluster that a field table cannot say. */
static void cluster_rules(spec_walk *w, const json_t *root)
{
    const json_t *q = json_object_get(json_object_get(root, "spec"), "queue");
    const char *kind = json_string_value(json_object_get(q, "kind"));
    if (!kind)
        return;
    bool kafka = strcmp(kind, "kafka") == 0;
    if (kafka && !json_object_get(q, "brokers")) {
        snprintf(w->path, sizeof w->path, "spec.queue");
        spec_error(w, CV_E_SPEC_MISSING_FIELD, member_span(w->doc, "/spec/queue", false),
                   "spec.queue of kind kafka lacks the required field 'brokers'");
    }
    static const char *const kafka_only[] = {"brokers", "topicPrefix"};
    for (int i = 0; !kafka && i < 2; i++) {
        if (!json_object_get(q, kafka_only[i]))
            continue;
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/spec/queue/%s", kafka_only[i]);
        snprintf(w->path, sizeof w->path, "spec.queue.%s", kafka_only[i]);
        spec_error(w, CV_E_SPEC_UNKNOWN_FIELD, member_span(w->doc, ptr, true),
                   "field '%s' applies only to queue kind kafka (this queue is %s)",
                   kafka_only[i], kind);
    }
    w->path[0] = 0;
    w->path_len = 0;
}

static int add_entry(cv_spec_set *s, const spec_entry *e)
{
    spec_entry *v = realloc(s->entries, (size_t)(s->n_entries + 1) * sizeof *v);
    if (!v)
        return -1;
    s->entries = v;
    s->entries[s->n_entries++] = *e;
    return 0;
}

static int check_doc(cv_spec_set *s, int file, const cv_yaml_doc *doc, cv_diag *d)
{
    spec_walk w = {.doc = doc, .d = d};
    cv_spec_kind kind = CV_SPEC_PIPELINE;
    if (!json_is_object(doc->root))
        return spec_error(&w, CV_E_SPEC_FIELD_TYPE, doc_span(doc),
                          "a spec document must be a mapping (apiVersion, kind, metadata, spec)");
    if (doc_kind(&w, doc->root, &kind))
        return -1;
    spec_walk_object(&w, spec_root_fields(kind), doc->root, doc_span(doc));
    if (kind == CV_SPEC_CLUSTER)
        cluster_rules(&w, doc->root);
    const char *name = str_at(doc->root, "metadata", "name");
    spec_entry e = {.kind = kind, .doc = doc, .file = file, .valid = w.errors == 0,
                    .name = name && cv_str_is_dns_label(name) ? name : NULL};
    if (add_entry(s, &e))
        return spec_error(&w, CV_E_OUT_OF_MEMORY, doc_span(doc), "out of memory");
    return w.errors ? -1 : 0;
}

/* Keeps a copy of the file (its text serves caret lines of later errors). */
static spec_file *keep_file(cv_spec_set *s, const char *text, size_t len, const char *file,
                            bool context)
{
    spec_file *v = realloc(s->files, (size_t)(s->n_files + 1) * sizeof *v);
    if (!v)
        return NULL;
    s->files = v;
    spec_file *f = &v[s->n_files];
    *f = (spec_file){.name = strdup(file ? file : "<spec>"), .len = len, .context = context,
                     .text = malloc(len + 1)};
    if (!f->name || !f->text) {
        free(f->name);
        free(f->text);
        return NULL;
    }
    if (len)
        memcpy(f->text, text, len);
    f->text[len] = 0;
    s->n_files++;
    return f;
}

int cv_spec_set_add(cv_spec_set *s, const char *text, size_t len, const char *file, bool context,
                    cv_diag *d)
{
    cv_diag scratch;
    cv_diag_init(&scratch);
    cv_diag *dd = context ? &scratch : d;
    int before = dd->n_errors;
    spec_file *f = NULL;
    if (len > CV_SPEC_BYTES_MAX - s->bytes)
        cv_spec_too_large(dd, file, s->bytes + len);
    else if (!(f = keep_file(s, text, len, file, context)))
        cv_diag_error(dd, CV_E_OUT_OF_MEMORY, (cv_span){.file = file}, "out of memory");
    if (f) {
        s->bytes += len;
        if (cv_yaml_load_budget(f->text, len, f->name, &s->nodes_left, &f->docs, &f->n_docs,
                                dd) == 0)
            for (int i = 0; i < f->n_docs; i++)
                if (!json_is_null(f->docs[i].root))
                    check_doc(s, s->n_files - 1, &f->docs[i], dd);
    }
    bool failed = dd->n_errors > before;
    if (failed && f)
        cv_diag_add_source(dd, f->name, f->text, f->len);
    cv_diag_free(&scratch);
    return failed && !context ? -1 : 0;
}

void cv_spec_too_large(cv_diag *d, const char *file, size_t total)
{
    cv_diag_error(d, CV_E_SPEC_FILES_TOO_LARGE, (cv_span){.file = file},
                  "the spec files come to %zu bytes with %s; the limit is %zu in all", total,
                  file ? file : "this one", CV_SPEC_BYTES_MAX);
}

/* ---- cross-document checks */

/* An error about entry e (only reported for non-context files). */
static int entry_error(cv_spec_set *s, const spec_entry *e, int code, cv_span sp, const char *path,
                       cv_diag *d, const char *msg)
{
    const spec_file *f = &s->files[e->file];
    if (f->context)
        return -1;
    cv_diag_add(d, CV_SEV_ERROR, code, sp, path, "%s", msg);
    cv_diag_add_source(d, f->name, f->text, f->len);
    return -1;
}

static int cmp_entry_name(const void *a, const void *b)
{
    const spec_entry *x = *(spec_entry *const *)a, *y = *(spec_entry *const *)b;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

static int check_names(cv_spec_set *s, cv_diag *d)
{
    spec_entry **v = calloc((size_t)s->n_entries + 1, sizeof *v);
    int n = 0, rc = 0, clusters = 0;
    if (!v)
        return -1;
    for (int i = 0; i < s->n_entries; i++) {
        spec_entry *e = &s->entries[i];
        if (e->name)
            v[n++] = e;
        if (e->kind == CV_SPEC_CLUSTER && !s->files[e->file].context && ++clusters > 1) {
            char msg[160];
            snprintf(msg, sizeof msg, "a repository defines one CuvilBuildCluster; this is #%d",
                     clusters);
            rc = entry_error(s, e, CV_E_SPEC_MULTIPLE_CLUSTERS, member_span(e->doc, "/kind", false), "kind",
                             d, msg);
        }
    }
    qsort(v, (size_t)n, sizeof *v, cmp_entry_name);
    for (int i = 1; i < n; i++) {
        if (v[i]->kind != v[i - 1]->kind || strcmp(v[i]->name, v[i - 1]->name) != 0)
            continue;
        /* report at the non-context one of the pair */
        spec_entry *dup = s->files[v[i]->file].context ? v[i - 1] : v[i];
        spec_entry *other = dup == v[i] ? v[i - 1] : v[i];
        char msg[256];
        snprintf(msg, sizeof msg, "%s '%s' is defined twice", spec_kind_names[dup->kind], dup->name);
        if (entry_error(s, dup, CV_E_SPEC_DUPLICATE_NAME, member_span(dup->doc, "/metadata/name", false),
                        "metadata.name", d, msg) && !s->files[dup->file].context) {
            cv_diag_note(d, d->n, "also defined at %s:%d:%d", other->doc->file, other->doc->line,
                         other->doc->col);
        }
        rc = -1;
    }
    free(v);
    return rc;
}

static spec_entry *find_pipeline(cv_spec_set *s, const char *name)
{
    for (int i = 0; i < s->n_entries; i++)
        if (s->entries[i].kind == CV_SPEC_PIPELINE && s->entries[i].name &&
            strcmp(s->entries[i].name, name) == 0)
            return &s->entries[i];
    return NULL;
}

/* Mappings merge key by key; anything else in `over` replaces. */
static json_t *merge(const json_t *base, const json_t *over)
{
    if (!json_is_object(base) || !json_is_object(over))
        return json_deep_copy(over);
    json_t *out = json_deep_copy(base);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)over, key, v) {
        json_t *m = merge(json_object_get(base, key), v);
        if (!m || json_object_set_new(out, key, m)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static void missing_base(cv_spec_set *s, spec_entry *e, const char *ext, cv_diag *d)
{
    const char *names[256];
    int n = 0;
    for (int i = 0; i < s->n_entries && n < 255; i++)
        if (s->entries[i].kind == CV_SPEC_PIPELINE && s->entries[i].name)
            names[n++] = s->entries[i].name;
    names[n] = NULL;
    const char *hint = cv_str_suggest(ext, names);
    char msg[256];
    snprintf(msg, sizeof msg, "pipeline '%s' extends '%s', which is not defined%s%s%s", e->name,
             ext, hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "");
    entry_error(s, e, CV_E_SPEC_EXTENDS_MISSING, member_span(e->doc, "/spec/extends", false),
                "spec.extends", d, msg);
}

static void cycle_error(cv_spec_set *s, spec_entry *e, spec_entry **stack, int depth, cv_diag *d)
{
    char chain[512] = "";
    int from = 0;
    while (from < depth && stack[from] != find_pipeline(s, str_at(e->doc->root, "spec", "extends")))
        from++;
    for (int i = from; i < depth; i++)
        snprintf(chain + strlen(chain), sizeof chain - strlen(chain), "%s -> ", stack[i]->name);
    snprintf(chain + strlen(chain), sizeof chain - strlen(chain), "%s",
             from < depth ? stack[from]->name : "...");
    char msg[640];
    if (depth >= EXTENDS_DEPTH_MAX)
        snprintf(msg, sizeof msg, "pipeline '%s': extends chain deeper than %d", e->name,
                 EXTENDS_DEPTH_MAX);
    else
        snprintf(msg, sizeof msg, "pipelines extend each other in a cycle: %s", chain);
    entry_error(s, e, CV_E_SPEC_EXTENDS_CYCLE, member_span(e->doc, "/spec/extends", false),
                "spec.extends", d, msg);
}

/* Resolves e's effective spec; 0, or -1 (reported here, or a root cause
 * reported elsewhere). */
static int resolve_pipeline(cv_spec_set *s, spec_entry *e, spec_entry **stack, int depth,
                            cv_diag *d)
{
    if (e->mark == 2)
        return e->effective ? 0 : -1;
    e->mark = 1;
    stack[depth] = e;
    const json_t *spec = json_object_get(e->doc->root, "spec");
    const char *ext = json_string_value(json_object_get(spec, "extends"));
    const json_t *base_eff = NULL;
    int rc = e->valid ? 0 : -1;
    if (rc == 0 && ext) {
        spec_entry *b = find_pipeline(s, ext);
        if (!b) {
            missing_base(s, e, ext, d);
            rc = -1;
        } else if (b->mark == 1 || depth + 1 >= EXTENDS_DEPTH_MAX) {
            cycle_error(s, e, stack, depth + 1, d);
            rc = -1;
        } else {
            rc = resolve_pipeline(s, b, stack, depth + 1, d);
            base_eff = b->effective;
        }
    }
    if (rc == 0) {
        e->effective = merge(base_eff, spec);
        if (e->effective)
            json_object_del(e->effective, "extends");
        else
            rc = -1;
    }
    e->mark = 2;
    return rc;
}

static int check_merged(cv_spec_set *s, spec_entry *e, cv_diag *d)
{
    static const char *const needed[] = {"models", "targets", "precisions"};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        if (json_object_get(e->effective, needed[i]))
            continue;
        char msg[256];
        snprintf(msg, sizeof msg, "pipeline '%s' has no '%s'%s", e->name, needed[i],
                 str_at(e->doc->root, "spec", "extends") ? " (nor do its bases)" : "");
        rc = entry_error(s, e, CV_E_SPEC_MISSING_FIELD, member_span(e->doc, "/spec", true), "spec", d,
                         msg);
    }
    return rc;
}

static int cmp_pipeline(const void *a, const void *b)
{
    return strcmp(((const cv_spec_pipeline *)a)->name, ((const cv_spec_pipeline *)b)->name);
}

/* Converts the usable documents into the structs the accessors hand out. */
static int convert(cv_spec_set *s, cv_diag *d)
{
    int n = 0;
    for (int i = 0; i < s->n_entries; i++)
        n += s->entries[i].usable && s->entries[i].kind == CV_SPEC_PIPELINE;
    s->pipelines = cv_arena_alloc_array(&s->arena, (size_t)n + 1, sizeof *s->pipelines);
    if (!s->pipelines)
        goto oom;
    for (int i = 0; i < s->n_entries; i++) {
        spec_entry *e = &s->entries[i];
        if (!e->usable)
            continue;
        if (e->kind == CV_SPEC_PIPELINE) {
            if (spec_convert_pipeline(&s->arena, e->doc, e->effective,
                                      &s->pipelines[s->n_pipelines++]))
                goto oom;
        } else if (!s->cluster) {
            s->cluster = cv_arena_alloc(&s->arena, sizeof *s->cluster);
            if (!s->cluster || spec_convert_cluster(&s->arena, e->doc, s->cluster))
                goto oom;
        }
    }
    qsort(s->pipelines, (size_t)s->n_pipelines, sizeof *s->pipelines, cmp_pipeline);
    return 0;
oom:
    cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory converting specs");
    return -1;
}

int cv_spec_set_resolve(cv_spec_set *s, cv_diag *d)
{
    int before = d->n_errors;
    if (s->resolved)
        return 0;
    s->resolved = true;
    check_names(s, d);
    spec_entry *stack[EXTENDS_DEPTH_MAX + 1];
    for (int i = 0; i < s->n_entries; i++) {
        spec_entry *e = &s->entries[i];
        if (s->files[e->file].context || !e->valid)
            continue;
        if (e->kind == CV_SPEC_CLUSTER)
            e->usable = true;
        else if (e->name && resolve_pipeline(s, e, stack, 0, d) == 0)
            e->usable = check_merged(s, e, d) == 0;
    }
    if (convert(s, d))
        return -1;
    return d->n_errors > before ? -1 : 0;
}

const cv_spec_cluster *cv_spec_set_cluster(const cv_spec_set *s) { return s->cluster; }

int cv_spec_set_pipeline_count(const cv_spec_set *s) { return s->n_pipelines; }

const cv_spec_pipeline *cv_spec_set_pipeline(const cv_spec_set *s, int i)
{
    return i >= 0 && i < s->n_pipelines ? &s->pipelines[i] : NULL;
}

const cv_spec_pipeline *cv_spec_set_find(const cv_spec_set *s, const char *name)
{
    cv_spec_pipeline key = {.name = name};
    return s->n_pipelines ? bsearch(&key, s->pipelines, (size_t)s->n_pipelines,
                                    sizeof *s->pipelines, cmp_pipeline)
                          : NULL;
}

/* ---- files */

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

bool cv_spec_is_spec_path(const char *path)
{
    size_t k = strlen(CV_SPEC_DIR);
    if (strncmp(path, CV_SPEC_DIR "/", k + 1) != 0 || strchr(path + k + 1, '/'))
        return false;
    return has_suffix(path + k + 1, ".yaml") || has_suffix(path + k + 1, ".yml");
}

bool cv_spec_is_yaml_file(const char *path)
{
    return has_suffix(path, ".yaml") || has_suffix(path, ".yml");
}

static int add_file(cv_spec_set *s, const char *path, bool context, cv_diag *d)
{
    cv_diag scratch;
    cv_diag_init(&scratch);
    char *text = NULL;
    size_t len = 0;
    int rc = cv_fs_read_file(path, CV_YAML_MAX_BYTES, &text, &len, context ? &scratch : d);
    if (rc == 0)
        rc = cv_spec_set_add(s, text, len, path, context, d);
    free(text);
    cv_diag_free(&scratch);
    return rc;
}

/* The other spec files beside path, as context for `extends`. */
static void add_siblings(cv_spec_set *s, const char *path, cv_diag *d)
{
    char *dir = cv_fs_dirname(path);
    DIR *dh = dir ? opendir(dir) : NULL;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int n = 0;
    for (struct dirent *de; dh && (de = readdir(dh)) && n < CV_SPEC_FILES_MAX;) {
        if (strcmp(de->d_name, base) == 0 || de->d_name[0] == '.' ||
            !(has_suffix(de->d_name, ".yaml") || has_suffix(de->d_name, ".yml")))
            continue;
        char *sib = cv_fs_join(dir, de->d_name);
        if (sib)
            add_file(s, sib, true, d);
        free(sib);
        n++;
    }
    if (dh)
        closedir(dh);
    free(dir);
}

int cv_spec_validate_file(const char *path, cv_diag *d)
{
    cv_spec_set *s = cv_spec_set_new();
    if (!s) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = path}, "out of memory");
        return -1;
    }
    add_siblings(s, path, d);
    int rc = add_file(s, path, false, d);
    rc |= cv_spec_set_resolve(s, d);
    cv_spec_set_free(s);
    return rc ? -1 : 0;
}

void cv_spec_cluster_queue_url(const cv_spec_cluster *cl, char *out, size_t size)
{
    out[0] = '\0';
    if (cl && cl->queue.kind == CV_SPEC_QUEUE_KAFKA && cl->queue.brokers)
        snprintf(out, size, "kafka://%s?topic_prefix=%s", cl->queue.brokers,
                 cl->queue.topic_prefix ? cl->queue.topic_prefix : "cuvil");
}
