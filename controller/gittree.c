/* Trees and blobs read straight from the mirror's object database: no
 * checkout, no working directory, and each file comes with its git blob id
 * (so an unchanged file is recognised without reading it). */
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "controller/gitsource_internal.h"
#include "controller/internal.h"

struct cv_tree {
    cv_gitsource *g;            /* not owned; outlives the tree */
    char commit[CV_GIT_HEX + 1];
    cv_arena arena;             /* the entries' paths */
    cv_tree_entry *v;           /* owned */
    size_t n, cap;
    int err;                    /* why a walk stopped: 0, CV_E_GIT_TREE_SIZE or CV_E_OOM */
};

static int walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
    cv_tree *t = payload;
    git_filemode_t mode = cv_git()->tree_entry_filemode(e);
    if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE)
        return 0;   /* subtrees are walked into; links and submodules left out */
    size_t rn = strlen(root), nn = strlen(cv_git()->tree_entry_name(e));
    if (rn + nn > CV_GIT_PATH_MAX || t->n >= CV_GIT_TREE_MAX_ENTRIES) {
        t->err = CV_E_GIT_TREE_SIZE;
        return -1;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        cv_tree_entry *v = realloc(t->v, cap * sizeof *v);
        if (!v) {
            t->err = CV_E_OOM;
            return -1;
        }
        t->v = v;
        t->cap = cap;
    }
    char *path = cv_arena_alloc(&t->arena, rn + nn + 1);
    if (!path) {
        t->err = CV_E_OOM;
        return -1;
    }
    memcpy(path, root, rn);
    memcpy(path + rn, cv_git()->tree_entry_name(e), nn + 1);
    cv_tree_entry *te = &t->v[t->n++];
    te->path = path;
    cv_git()->oid_tostr(te->blob_id, sizeof te->blob_id, cv_git()->tree_entry_id(e));
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const cv_tree_entry *)a)->path, ((const cv_tree_entry *)b)->path);
}

static int lookup_commit(cv_gitsource *g, const char *hex, git_commit **out, cv_diag *d)
{
    git_oid oid;
    if (!hex || strlen(hex) != CV_GIT_HEX || cv_git()->oid_fromstr(&oid, hex) ||
        cv_git()->commit_lookup(out, g->repo, &oid)) {
        cv_diag_error(d, CV_E_GIT_COMMIT, (cv_span){.file = g->mirror},
                      "commit '%.64s' is not in the mirror", hex ? hex : "(none)");
        return -1;
    }
    return 0;
}

int cv_gitsource_tree(cv_gitsource *g, const char *commit, cv_tree **out, cv_diag *d)
{
    *out = NULL;
    if (!commit && !g->st.commit[0]) {
        cv_diag_error(d, CV_E_GIT_COMMIT, (cv_span){.file = g->mirror},
                      "the git source has no head yet (poll it first)");
        return -1;
    }
    git_commit *c = NULL;
    git_tree *tree = NULL;
    if (lookup_commit(g, commit ? commit : g->st.commit, &c, d))
        return -1;
    cv_tree *t = calloc(1, sizeof *t);
    int rc = t ? cv_git()->commit_tree(&tree, c) : -1;
    if (t && rc) {
        cv_diag_error(d, CV_E_GIT_READ, (cv_span){.file = g->mirror}, "cannot read the tree: %s",
                      cv_git()->error_last() ? cv_git()->error_last()->message : "?");
    } else if (t) {
        t->g = g;
        cv_git()->oid_tostr(t->commit, sizeof t->commit, cv_git()->commit_id(c));
        cv_arena_init(&t->arena);
        rc = cv_git()->tree_walk(tree, GIT_TREEWALK_PRE, walk_cb, t);
        if (rc)
            cv_diag_error(d, t->err ? t->err : CV_E_GIT_READ, (cv_span){.file = g->mirror},
                          t->err == CV_E_GIT_TREE_SIZE
                              ? "the tree has more than %d files or a path longer than %d bytes"
                              : "cannot walk the tree (%d)",
                          CV_GIT_TREE_MAX_ENTRIES, CV_GIT_PATH_MAX);
    } else {
        cv_diag_error(d, CV_E_OOM, (cv_span){0}, "out of memory");
    }
    cv_git()->tree_free(tree);
    cv_git()->commit_free(c);
    if (rc) {
        cv_tree_free(t);
        return -1;
    }
    qsort(t->v, t->n, sizeof *t->v, cmp_entry);
    *out = t;
    return 0;
}

void cv_tree_free(cv_tree *t)
{
    if (!t)
        return;
    cv_arena_free(&t->arena);
    free(t->v);
    free(t);
}

const char *cv_tree_commit(const cv_tree *t) { return t->commit; }
size_t cv_tree_count(const cv_tree *t) { return t->n; }

const cv_tree_entry *cv_tree_at(const cv_tree *t, size_t i) { return i < t->n ? &t->v[i] : NULL; }

const cv_tree_entry *cv_tree_find(const cv_tree *t, const char *path)
{
    cv_tree_entry key = {.path = path};
    return t->n ? bsearch(&key, t->v, t->n, sizeof *t->v, cmp_entry) : NULL;
}

int cv_tree_read(const cv_tree *t, const cv_tree_entry *e, size_t max_bytes, char **data,
                 size_t *len, cv_diag *d)
{
    *data = NULL;
    *len = 0;
    git_oid oid;
    git_blob *b = NULL;
    cv_span sp = {.file = e->path};
    if (cv_git()->oid_fromstr(&oid, e->blob_id) || cv_git()->blob_lookup(&b, t->g->repo, &oid)) {
        cv_diag_error(d, CV_E_GIT_READ, sp, "cannot read blob %s: %s", e->blob_id,
                      cv_git()->error_last() ? cv_git()->error_last()->message : "?");
        return -1;
    }
    git_object_size_t n = cv_git()->blob_rawsize(b);
    if (n > max_bytes) {
        cv_diag_error(d, CV_E_GIT_BLOB_SIZE, sp, "%s is %llu bytes; the limit here is %zu",
                      e->path, (unsigned long long)n, max_bytes);
        cv_git()->blob_free(b);
        return -1;
    }
    *data = malloc((size_t)n + 1);
    if (!*data) {
        cv_git()->blob_free(b);
        cv_diag_error(d, CV_E_OOM, sp, "out of memory reading %s", e->path);
        return -1;
    }
    memcpy(*data, cv_git()->blob_rawcontent(b), (size_t)n);
    (*data)[n] = 0;
    *len = (size_t)n;
    cv_git()->blob_free(b);
    return 0;
}
