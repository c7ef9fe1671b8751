/* Trees and blobs read straight from the mirror's object database: no
 * checkout, no working directory, and each file comes with its git blob id
 * (so an unchanged file is recognised without reading it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/strutil.h"
#include "controller/gitsource_internal.h"
#include "controller/internal.h"

typedef struct skipped_entry {
    cv_gitsource_tree_entry e;
    int code;                   /* why it was left out */
} skipped_entry;

struct cv_gitsource_tree {
    cv_gitsource *g;            /* not owned; outlives the tree */
    char commit[CV_GIT_HEX + 1];
    cv_commit_info info;
    cv_arena arena;             /* the entries' paths */
    cv_gitsource_tree_entry *v;           /* owned */
    size_t n, cap;
    skipped_entry *skip;        /* owned: files left out, the first CV_TREE_SKIPPED_KEPT */
    size_t n_skip, skip_cap, skipped;   /* kept, room, and all of them */
    size_t max_entries, entries, path_bytes;
    int err;                    /* why a walk stopped: 0, CV_E_GIT_TREE_TOO_LARGE or CV_E_OUT_OF_MEMORY */
};

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 256;
    void *nv = realloc(*v, c * size);
    if (!nv)
        return false;
    *v = nv;
    *cap = c;
    return true;
}

/* root + name + suffix in the arena, cut to CV_GIT_PATH_MAX bytes. */
static char *keep_path(cv_gitsource_tree *t, const char *root, const char *name, const char *suffix)
{
    const char *parts[3] = {root, name, suffix};
    size_t len[3], total = 0;
    for (int i = 0; i < 3; i++) {
        len[i] = strlen(parts[i]);
        if (total + len[i] > CV_GIT_PATH_MAX)
            len[i] = CV_GIT_PATH_MAX - total;
        total += len[i];
    }
    char *path = cv_arena_alloc(&t->arena, total + 1);
    for (size_t i = 0, at = 0; path && i < 3; at += len[i++])
        memcpy(path + at, parts[i], len[i]);
    if (path)
        path[total] = 0;
    return path;
}

/* Lists e as left out (code says why); false when out of memory. */
static bool skip_entry(cv_gitsource_tree *t, cv_gitsource_tree_entry e, int code)
{
    if (t->skipped++ >= CV_TREE_SKIPPED_KEPT)
        return true;
    if (!grow((void **)&t->skip, &t->skip_cap, t->n_skip, sizeof *t->skip))
        return false;
    t->skip[t->n_skip++] = (skipped_entry){e, code};
    return true;
}

/* One file, or (code set) one file or directory left out. */
static int add_entry(cv_gitsource_tree *t, const char *root, const git_tree_entry *ge, int code, bool dir)
{
    cv_gitsource_tree_entry e;
    /* a directory left out is listed as "root/name/" */
    e.path = keep_path(t, root, cv_git()->tree_entry_name(ge), dir ? "/" : "");
    cv_git()->oid_tostr(e.blob_id, sizeof e.blob_id, cv_git()->tree_entry_id(ge));
    bool ok = e.path && (code ? skip_entry(t, e, code)
                              : grow((void **)&t->v, &t->cap, t->n, sizeof *t->v));
    if (!ok)
        return t->err = CV_E_OUT_OF_MEMORY, -1;
    if (!code)
        t->v[t->n++] = e;
    return 0;
}

/* Why a name under root cannot be used here (0 when it can).  root passed
 * the length and safety checks already; a directory whose name is not
 * UTF-8 is walked into, so that each model under it is named. */
static int name_problem(const char *root, const char *name, bool dir)
{
    size_t rn = strlen(root), nn = strlen(name);
    if (nn == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
        return CV_E_GIT_PATH_UNSAFE;
    if (nn > CV_GIT_NAME_MAX || rn + nn > CV_GIT_FILE_PATH_MAX)
        return CV_E_GIT_PATH_TOO_LONG;
    if (!dir && !(cv_str_is_utf8(root, rn) && cv_str_is_utf8(name, nn)))
        return CV_E_GIT_PATH_NOT_UTF8;
    return 0;
}

/* Called for every entry, parents before children (root ends in '/').  A
 * directory whose name is unsafe or too long is not walked into (which
 * also bounds the walk's depth): it is listed as left out instead. */
static int walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
    cv_gitsource_tree *t = payload;
    git_filemode_t mode = cv_git()->tree_entry_filemode(e);
    bool dir = mode == GIT_FILEMODE_TREE;
    if (!dir && mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE)
        return 0;   /* links and submodules left out */
    const char *name = cv_git()->tree_entry_name(e);
    size_t len = strlen(root) + strlen(name) + 1;
    t->path_bytes += len < CV_GIT_PATH_MAX ? len : CV_GIT_PATH_MAX;
    if (++t->entries > t->max_entries || t->path_bytes > CV_GIT_TREE_MAX_PATH_BYTES)
        return t->err = CV_E_GIT_TREE_TOO_LARGE, -1;
    int code = name_problem(root, name, dir);
    if (dir && !code)
        return 0;
    if (add_entry(t, root, e, code, dir))
        return -1;
    return dir ? 1 : 0;
}

/* Paths a crafted tree can repeat (two entries of one name), or use both
 * as a file and as a directory ("a" and "a/b"): such files are left out,
 * since they cannot all be written.  v is sorted. */
static int drop_conflicts(cv_gitsource_tree *t)
{
    bool *bad = calloc(t->n + 1, sizeof *bad);
    if (!bad)
        return t->err = CV_E_OUT_OF_MEMORY, -1;
    for (size_t i = 0; i < t->n; i++) {
        const char *p = t->v[i].path;
        if (i + 1 < t->n && strcmp(p, t->v[i + 1].path) == 0)
            bad[i] = bad[i + 1] = true;
        char dir[CV_GIT_FILE_PATH_MAX + 1];
        for (const char *s = strchr(p, '/'); s && !bad[i]; s = strchr(s + 1, '/')) {
            snprintf(dir, sizeof dir, "%.*s", (int)(s - p), p);
            const cv_gitsource_tree_entry *file = cv_gitsource_tree_find(t, dir);
            if (file)
                bad[i] = bad[file - t->v] = true;
        }
    }
    size_t keep = 0;
    int rc = 0;
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        if (!bad[i])
            t->v[keep++] = t->v[i];
        else if (!skip_entry(t, t->v[i], CV_E_GIT_PATH_UNSAFE))
            rc = -1;
    }
    free(bad);
    if (rc)
        t->err = CV_E_OUT_OF_MEMORY;
    else
        t->n = keep;
    return rc;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const cv_gitsource_tree_entry *)a)->path, ((const cv_gitsource_tree_entry *)b)->path);
}

static void walk_error(const cv_gitsource_tree *t, cv_diag *d)
{
    cv_span sp = {.file = t->g->mirror};
    if (t->err == CV_E_GIT_TREE_TOO_LARGE)
        cv_diag_error(d, CV_E_GIT_TREE_TOO_LARGE, sp,
                      "the tree of commit %.12s has more than %zu entries or more than %zu "
                      "bytes of paths", t->commit, t->max_entries,
                      (size_t)CV_GIT_TREE_MAX_PATH_BYTES);
    else if (t->err == CV_E_OUT_OF_MEMORY)
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, sp, "out of memory reading the tree of commit %.12s",
                      t->commit);
    else
        cv_diag_error(d, CV_E_GIT_READ_FAILED, sp, "cannot walk the tree of commit %.12s: %s", t->commit,
                      cv_git()->error_last() ? cv_git()->error_last()->message : "?");
}

static int lookup_commit(cv_gitsource *g, const char *hex, git_commit **out, cv_diag *d)
{
    git_oid oid;
    if (!hex || strlen(hex) != CV_GIT_HEX || cv_git()->oid_fromstr(&oid, hex) ||
        cv_git()->commit_lookup(out, g->repo, &oid)) {
        cv_diag_error(d, CV_E_GIT_BAD_COMMIT, (cv_span){.file = g->mirror},
                      "commit '%.64s' is not in the mirror", hex ? hex : "(none)");
        return -1;
    }
    return 0;
}

static void commit_info(git_commit *c, cv_commit_info *info)
{
    const char *subject = cv_git()->commit_summary(c);
    const git_signature *who = cv_git()->commit_author(c);
    if (subject)
        cv_str_clean_line(subject, strlen(subject), info->subject, sizeof info->subject);
    if (who && who->name)
        cv_str_clean_line(who->name, strlen(who->name), info->author, sizeof info->author);
    info->time_ms = who ? (int64_t)who->when.time * 1000 : 0;
}

int cv_gitsource_tree_open(cv_gitsource *g, const char *commit, cv_gitsource_tree **out, cv_diag *d)
{
    *out = NULL;
    if (!commit && !g->st.commit[0]) {
        cv_diag_error(d, CV_E_GIT_BAD_COMMIT, (cv_span){.file = g->mirror},
                      "the git source has no head yet (poll it first)");
        return -1;
    }
    git_commit *c = NULL;
    git_tree *tree = NULL;
    if (lookup_commit(g, commit ? commit : g->st.commit, &c, d))
        return -1;
    cv_gitsource_tree *t = calloc(1, sizeof *t);
    int rc = t ? cv_git()->commit_tree(&tree, c) : -1;
    if (t && rc) {
        cv_diag_error(d, CV_E_GIT_READ_FAILED, (cv_span){.file = g->mirror}, "cannot read the tree: %s",
                      cv_git()->error_last() ? cv_git()->error_last()->message : "?");
    } else if (t) {
        t->g = g;
        cv_git()->oid_tostr(t->commit, sizeof t->commit, cv_git()->commit_id(c));
        commit_info(c, &t->info);
        cv_arena_init(&t->arena);
        t->max_entries = g->opts.max_tree_entries;
        rc = cv_git()->tree_walk(tree, GIT_TREEWALK_PRE, walk_cb, t);
        if (rc == 0) {
            qsort(t->v, t->n, sizeof *t->v, cmp_entry);
            rc = drop_conflicts(t);
        }
        if (rc)
            walk_error(t, d);
    } else {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    cv_git()->tree_free(tree);
    cv_git()->commit_free(c);
    if (rc) {
        cv_gitsource_tree_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void cv_gitsource_tree_free(cv_gitsource_tree *t)
{
    if (!t)
        return;
    cv_arena_free(&t->arena);
    free(t->v);
    free(t->skip);
    free(t);
}

const char *cv_gitsource_tree_commit(const cv_gitsource_tree *t) { return t->commit; }
const cv_commit_info *cv_gitsource_tree_commit_info(const cv_gitsource_tree *t) { return &t->info; }
size_t cv_gitsource_tree_count(const cv_gitsource_tree *t) { return t->n; }

const cv_gitsource_tree_entry *cv_gitsource_tree_at(const cv_gitsource_tree *t, size_t i) { return i < t->n ? &t->v[i] : NULL; }

const cv_gitsource_tree_entry *cv_gitsource_tree_find(const cv_gitsource_tree *t, const char *path)
{
    cv_gitsource_tree_entry key = {.path = path};
    return t->n ? bsearch(&key, t->v, t->n, sizeof *t->v, cmp_entry) : NULL;
}

size_t cv_gitsource_tree_skipped_count(const cv_gitsource_tree *t, size_t *total)
{
    if (total)
        *total = t->skipped;
    return t->n_skip;
}

const cv_gitsource_tree_entry *cv_gitsource_tree_skipped_at(const cv_gitsource_tree *t, size_t i, int *code)
{
    if (i >= t->n_skip)
        return NULL;
    *code = t->skip[i].code;
    return &t->skip[i].e;
}

static int read_error(const cv_gitsource_tree_entry *e, cv_diag *d)
{
    cv_diag_error(d, CV_E_GIT_READ_FAILED, (cv_span){.file = e->path}, "cannot read blob %s: %s",
                  e->blob_id, cv_git()->error_last() ? cv_git()->error_last()->message : "?");
    return -1;
}

int cv_gitsource_tree_size(const cv_gitsource_tree *t, const cv_gitsource_tree_entry *e, size_t *size, cv_diag *d)
{
    git_oid oid;
    git_odb *odb = NULL;
    size_t n = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    /* the header only: a loose object inflates its first bytes, a packed
     * one reads its delta's header; the contents stay compressed */
    int rc = cv_git()->oid_fromstr(&oid, e->blob_id) || cv_git()->repository_odb(&odb, t->g->repo) ||
             cv_git()->odb_read_header(&n, &type, odb, &oid) || type != GIT_OBJECT_BLOB;
    cv_git()->odb_free(odb);
    if (rc)
        return read_error(e, d);
    *size = n;
    return 0;
}

int cv_gitsource_tree_read(const cv_gitsource_tree *t, const cv_gitsource_tree_entry *e, size_t max_bytes, char **data,
                 size_t *len, cv_diag *d)
{
    *data = NULL;
    *len = 0;
    git_oid oid;
    git_blob *b = NULL;
    cv_span sp = {.file = e->path};
    size_t size;
    if (cv_gitsource_tree_size(t, e, &size, d))
        return -1;
    if (size > max_bytes) {
        cv_diag_error(d, CV_E_GIT_BLOB_TOO_LARGE, sp, "%s is %zu bytes; the limit here is %zu",
                      e->path, size, max_bytes);
        return -1;
    }
    if (cv_git()->oid_fromstr(&oid, e->blob_id) || cv_git()->blob_lookup(&b, t->g->repo, &oid))
        return read_error(e, d);
    git_object_size_t n = cv_git()->blob_rawsize(b);
    if (n != size) {
        cv_git()->blob_free(b);
        cv_diag_error(d, CV_E_GIT_READ_FAILED, sp, "blob %s of %s is %llu bytes, its header said %zu",
                      e->blob_id, e->path, (unsigned long long)n, size);
        return -1;
    }
    *data = malloc((size_t)n + 1);
    if (!*data) {
        cv_git()->blob_free(b);
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, sp, "out of memory reading %s", e->path);
        return -1;
    }
    memcpy(*data, cv_git()->blob_rawcontent(b), (size_t)n);
    (*data)[n] = 0;
    *len = (size_t)n;
    cv_git()->blob_free(b);
    return 0;
}
