/* Files: bounded reads, atomic writes, directory creation, and resolving a
 * path named inside an input (a weights file, a calibration glob) without
 * letting it leave the directory it belongs to. */
#ifndef CV_FS_H
#define CV_FS_H

#include <glob.h>
#include <stddef.h>

#include "common/diag.h"

/* Reads a whole file into a NUL-terminated malloc'd copy (*out, owned by
 * the caller).  Files larger than max_bytes fail with CV1011; open/read
 * errors with CV9004. */
int cv_fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len, cv_diag *d);

/* A whole file's bytes to read through once (hash, copy out): a regular
 * file is mapped read-only (no copy, no page faults on fresh memory: a
 * model's weights are tens of MB), anything else read as cv_fs_read_file,
 * whose limits and diagnostics apply.  Not NUL-terminated.  A file
 * truncated while mapped faults (SIGBUS): for files this process wrote
 * or owns, not for shared input. */
typedef struct cv_fs_view {
    const char *data;
    size_t len;
    void *map;          /* owned: munmap(map, len), or NULL */
    char *copy;         /* owned: free, or NULL */
} cv_fs_view;
int  cv_fs_view_file(const char *path, size_t max_bytes, cv_fs_view *v, cv_diag *d);
void cv_fs_view_free(cv_fs_view *v);

/* Writes to a temporary file in the same directory, fsyncs it and renames
 * it over path, so readers see the old or the new contents, never a mix.
 * The file gets mode 0644. */
int cv_fs_write_atomic(const char *path, const void *data, size_t len, cv_diag *d);

/* Like cv_fs_write_atomic (readers see the old or the new contents) but
 * without fsync: for build outputs, which, as a C compiler's, need not
 * outlive a power cut (the cache syncs what it keeps), and which a farm
 * worker writes into a scratch directory it removes afterwards. */
int cv_fs_write_replace(const char *path, const void *data, size_t len, cv_diag *d);

/* Creates or truncates path and writes data, without fsync or rename: for
 * derived files whose completeness something else records (a marker file
 * written after a sync).  The file gets mode 0644. */
int cv_fs_write_plain(const char *path, const void *data, size_t len, cv_diag *d);

/* One piece of a file written by cv_fs_write_atomic_parts. */
typedef struct cv_fs_part {
    const void *data;   /* not owned */
    size_t len;
} cv_fs_part;

/* Like cv_fs_write_atomic, for a file made of several pieces in order
 * (a header and tensor data), without first copying them together. */
int cv_fs_write_atomic_parts(const char *path, const cv_fs_part *parts, int n, cv_diag *d);
/* The same without fsync, as cv_fs_write_replace: for build outputs. */
int cv_fs_write_replace_parts(const char *path, const cv_fs_part *parts, int n, cv_diag *d);
/* The same, handing each piece of at most CV_FS_CHUNK bytes to seen (ctx)
 * right after it is written, while it is still in the CPU's cache: a file
 * digested as it is written, in one pass over its bytes. */
enum { CV_FS_CHUNK = 1 << 20 };
typedef void (*cv_fs_seen_fn)(void *ctx, const void *data, size_t len);
int cv_fs_write_replace_parts_seen(const char *path, const cv_fs_part *parts, int n,
                                   cv_fs_seen_fn seen, void *ctx, cv_diag *d);

/* mkdir -p.  Returns 0, or -errno (errno is set too). */
int cv_fs_mkdirs(const char *path, int mode);

/* Resolves rel against base_dir, following symlinks, and fails with CV2016
 * if rel is absolute or the result leaves base_dir.  A path that does not
 * exist yet is checked through its deepest existing ancestor (so it may name
 * an output file); a dangling symlink is refused.  *out is malloc'd, owned by
 * the caller, and absolute. */
int cv_fs_resolve_inside(const char *base_dir, const char *rel, char **out, cv_diag *d);

/* Expands a glob pattern (common/fs_glob.c).  root NULL: as given, relative
 * to the working directory (a command-line argument).  root set: the pattern
 * is relative to root and may not leave it: an absolute pattern or a `..`
 * component is refused (CV9313), and every match must resolve inside root
 * with symbolic links followed (CV2016).  Returns the number of matches with
 * *g filled (globfree it), 0 when nothing matched (*g empty), -1 on error. */
int cv_fs_glob(const char *root, const char *pattern, glob_t *g, cv_diag *d);

/* POSIX dirname of path as a malloc'd string ("a/b" -> "a", "a" -> "."). */
char *cv_fs_dirname(const char *path);

/* Joins a directory and a name with one '/'; malloc'd. */
char *cv_fs_join(const char *dir, const char *name);

#endif
