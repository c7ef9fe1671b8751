/* Test helper: a private temporary directory, removed with everything in it
 * (symlinks are removed, never followed). */
#ifndef CV_TEST_TMPDIR_H
#define CV_TEST_TMPDIR_H

#include <stddef.h>

/* Makes $TMPDIR/cuvil-<tag>-XXXXXX (TMPDIR defaults to /tmp); returns its
 * malloc'd absolute path, or NULL. */
char *cv_tmpdir_make(const char *tag);
/* Removes dir recursively and frees the string; returns 0 or -1. */
int cv_tmpdir_remove(char *dir);
/* dir/name, malloc'd (aborts on out-of-memory: tests only). */
char *cv_tmpdir_path(const char *dir, const char *name);
/* Writes a file dir/name with the given bytes; returns 0 or -1. */
int cv_tmpdir_write(const char *dir, const char *name, const void *data, size_t len);
/* The whole file at path (any path, not only in a temp dir), malloc'd and
 * NUL-terminated, its length in *len; NULL when it cannot be read. */
char *cv_tmpdir_read_file(const char *path, size_t *len);
/* The repository root that test data is read from: $CUVIL_SRC when set,
 * else "." (the working directory of `make unit-test`). */
const char *cv_tmpdir_src_root(void);

#endif
