#include "tests/support/tmpdir.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *cv_tmpdir_make(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 32;
    char *path = malloc(n);
    if (!path)
        return NULL;
    snprintf(path, n, "%s/cuvil-%s-XXXXXX", base, tag);
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    char *real = realpath(path, NULL);   /* tests compare against resolved paths */
    free(path);
    return real;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 ? 0 : -1;
}

int cv_tmpdir_remove(char *dir)
{
    if (!dir)
        return 0;
    int rc = nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
    return rc == 0 ? 0 : -1;
}

char *cv_tmpdir_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int cv_tmpdir_write(const char *dir, const char *name, const void *data, size_t len)
{
    char *p = cv_tmpdir_path(dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    free(p);
    if (fd < 0)
        return -1;
    const char *s = data;
    while (len > 0) {
        ssize_t w = write(fd, s, len);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        s += w;
        len -= (size_t)w;
    }
    return close(fd);
}

char *cv_tmpdir_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

const char *cv_tmpdir_src_root(void)
{
    const char *s = getenv("CUVIL_SRC");
    return s && *s ? s : ".";
}
