/* Revisions' files on disk, for the workers of one machine.
 *
 * The git source reads trees without a checkout, but compilers read model
 * files (and the weights and external data beside them), so the controller
 * writes each planned revision once under trees/<commit>/; a marker file
 * says the copy is complete, so a crash mid-copy is redone.  A tree is
 * removed once no job of its commit is pending and it is not the head. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "controller/ctl_internal.h"

#define TREE_MARKER ".cuvil-tree-complete"

static int fs_error(cv_diag *d, const char *path, const char *what)
{
    cv_diag_error(d, CV_E_FARM_TREE_WRITE_FAILED, (cv_span){.file = path}, "cannot %s %s: %s", what, path,
                  strerror(errno));
    return -1;
}

/* Makes the tree's files durable before the marker says it is complete. */
static int sync_tree(const char *dir, cv_diag *d)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fs_error(d, dir, "open");
    int rc = syncfs(fd);
    close(fd);
    return rc == 0 ? 0 : fs_error(d, dir, "sync");
}

static int write_entry(const cv_gitsource_tree *tree, const char *dir, const cv_gitsource_tree_entry *e,
                       size_t max_blob, cv_diag *d)
{
    char *path = NULL, *data = NULL;
    size_t len = 0;
    int rc = cv_fs_resolve_inside(dir, e->path, &path, d);
    if (rc == 0)
        rc = cv_gitsource_tree_read(tree, e, max_blob, &data, &len, d);
    char *parent = rc == 0 ? cv_fs_dirname(path) : NULL;
    if (rc == 0 && !parent) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        rc = -1;
    }
    if (rc == 0 && cv_fs_mkdirs(parent, 0755) != 0)
        rc = fs_error(d, parent, "create");
    if (rc == 0)
        rc = cv_fs_write_plain(path, data, len, d);   /* synced once, with the tree */
    free(parent);
    free(data);
    free(path);
    return rc;
}

/* A file over max_blob is left out (its size read from the object header,
 * nothing inflated): the farm still builds what does not need it, and a
 * model that does is refused by the planner with the same code.  A
 * complete copy is not written again, but what it left out is told again
 * (a revision is planned from scratch after a crash). */
int cv_ctl_tree_write(const cv_gitsource_tree *tree, const char *dir, size_t max_blob, cv_diag *skipped,
                      cv_diag *d)
{
    char *marker = cv_fs_join(dir, TREE_MARKER);
    if (!marker) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    int rc = 0;
    bool complete = access(marker, F_OK) == 0;
    if (!complete && cv_fs_mkdirs(dir, 0755) != 0)
        rc = fs_error(d, dir, "create");
    for (size_t i = 0; rc == 0 && i < cv_gitsource_tree_count(tree); i++) {
        const cv_gitsource_tree_entry *e = cv_gitsource_tree_at(tree, i);
        size_t size;
        rc = cv_gitsource_tree_size(tree, e, &size, d);
        if (rc == 0 && size > max_blob)
            cv_diag_add(skipped, CV_SEV_WARNING, CV_E_GIT_BLOB_TOO_LARGE, (cv_span){.file = e->path},
                        NULL, "%s is %zu bytes, over the limit of %zu for a file: left out of "
                        "the revision's files", e->path, size, max_blob);
        else if (rc == 0 && !complete)
            rc = write_entry(tree, dir, e, max_blob, d);
    }
    if (rc == 0 && !complete)
        rc = sync_tree(dir, d);
    if (rc == 0 && !complete)
        rc = cv_fs_write_atomic(marker, "", 0, d);
    free(marker);
    return rc;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static bool is_commit_name(const char *s)
{
    if (strlen(s) != CV_GIT_HEX)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static const char SQL_COMMIT_PENDING[] =
    "SELECT COUNT(*) FROM jobs j JOIN revisions r ON r.id = j.revision_id"
    " WHERE j.state = 'queued' AND substr(r.revision, -40) = ?";

int cv_ctl_trees_gc(cv_builddb *db, const char *trees_dir, const char *keep_commit, int *removed,
                    cv_diag *d)
{
    *removed = 0;
    DIR *dir = opendir(trees_dir);
    if (!dir)
        return errno == ENOENT ? 0 : fs_error(d, trees_dir, "read");
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(dir)) != NULL) {
        if (!is_commit_name(e->d_name) || (keep_commit && strcmp(e->d_name, keep_commit) == 0))
            continue;
        int64_t pending = 0;
        if (cv_sqldb_int(&db->db, d, &pending, SQL_COMMIT_PENDING, "t", e->d_name) < 0) {
            rc = -1;
            break;
        }
        if (pending)
            continue;
        char *path = cv_fs_join(trees_dir, e->d_name);
        if (path && nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0)
            ++*removed;
        else if (path)
            cv_diag_add(d, CV_SEV_WARNING, CV_E_FARM_TREE_WRITE_FAILED, (cv_span){.file = path}, NULL,
                        "cannot remove the finished revision's files: %s", strerror(errno));
        free(path);
    }
    closedir(dir);
    return rc;
}
