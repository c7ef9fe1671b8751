#include "common/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


static int io_error(cv_diag *d, const char *path, const char *what, int err)
{
    cv_span sp = {.file = path};
    cv_diag_error(d, CV_E_IO_ERROR, sp, "%s: %s", what, strerror(err));
    return -1;
}

static size_t grow(size_t cap, size_t limit)
{
    return cap > limit / 2 ? limit : cap * 2;
}

/* Reads fd to the end into a malloc'd buffer (owned by the caller), failing
 * with EFBIG once more than max bytes arrive. */
static int read_all(int fd, size_t hint, size_t max, char **out, size_t *len)
{
    size_t limit = max < SIZE_MAX - 2 ? max + 1 : SIZE_MAX - 2;   /* one byte more detects EFBIG */
    size_t cap = hint < limit ? hint + 1 : limit, n = 0;
    if (cap < 256 && limit >= 256)
        cap = 256;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            char *nb = realloc(buf, (cap = grow(cap, limit)) + 1);
            if (!nb)
                break;
            buf = nb;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        int err = r < 0 ? errno : (n + (size_t)r > max ? EFBIG : 0);
        if (err) {
            free(buf);
            return err;
        }
        if (r == 0) {
            buf[n] = 0;
            *out = buf;
            *len = n;
            return 0;
        }
        n += (size_t)r;
    }
    free(buf);
    return ENOMEM;
}

int cv_fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len, cv_diag *d)
{
    *out = NULL;
    size_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_error(d, path, "cannot open", errno);
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
        close(fd);
        return io_error(d, path, "cannot read", err);
    }
    size_t hint = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
    int err = hint > max_bytes ? EFBIG : read_all(fd, hint, max_bytes, out, &n);
    close(fd);
    if (err == EFBIG) {
        cv_span sp = {.file = path};
        cv_diag_error(d, CV_E_INPUT_TOO_LARGE, sp, "file is larger than the limit of %zu bytes",
                      max_bytes);
        return -1;
    }
    if (err)
        return io_error(d, path, "cannot read", err);
    if (len)
        *len = n;
    return 0;
}

int cv_fs_view_file(const char *path, size_t max_bytes, cv_fs_view *v, cv_diag *d)
{
    memset(v, 0, sizeof *v);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= max_bytes) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            *v = (cv_fs_view){.data = p, .len = (size_t)st.st_size, .map = p};
            return 0;
        }
    }
    if (fd >= 0)
        close(fd);
    int rc = cv_fs_read_file(path, max_bytes, &v->copy, &v->len, d);
    v->data = v->copy;
    return rc;
}

void cv_fs_view_free(cv_fs_view *v)
{
    if (v->map)
        munmap(v->map, v->len);
    free(v->copy);
    memset(v, 0, sizeof *v);
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int cv_fs_write_plain(const char *path, const void *data, size_t len, cv_diag *d)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return io_error(d, path, "cannot create", errno);
    int err = write_all(fd, data, len);
    if (close(fd) != 0 && !err)
        err = errno;
    return err ? io_error(d, path, "cannot write", err) : 0;
}

/* A rename is durable only once the directory entry is on disk. */
static void fsync_parent(const char *path)
{
    char *dir = cv_fs_dirname(path);
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

typedef struct seen_by {
    cv_fs_seen_fn fn;           /* NULL: none */
    void *ctx;
} seen_by;

static int write_parts_fd(int fd, const cv_fs_part *parts, int n, bool durable, seen_by seen)
{
    if (fchmod(fd, 0644) != 0)
        return errno;
    for (int i = 0; i < n; i++) {
        const char *p = parts[i].data;
        size_t left = parts[i].len, step = seen.fn ? CV_FS_CHUNK : left;
        while (left > 0) {
            size_t k = left < step ? left : step;
            int err = write_all(fd, p, k);
            if (err)
                return err;
            if (seen.fn)
                seen.fn(seen.ctx, p, k);
            p += k;
            left -= k;
        }
    }
    return durable && fsync(fd) != 0 ? errno : 0;
}

static int write_renamed_seen(const char *path, const cv_fs_part *parts, int n, bool durable,
                              seen_by seen, cv_diag *d)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);   /* owned here */
    if (!tmp)
        return io_error(d, path, "cannot write", ENOMEM);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        free(tmp);
        return io_error(d, path, "cannot create temporary file", errno);
    }
    int err = write_parts_fd(fd, parts, n, durable, seen);
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err)
        unlink(tmp);
    free(tmp);
    if (err)
        return io_error(d, path, "cannot write", err);
    if (durable)
        fsync_parent(path);
    return 0;
}

static int write_renamed(const char *path, const cv_fs_part *parts, int n, bool durable,
                         cv_diag *d)
{
    return write_renamed_seen(path, parts, n, durable, (seen_by){0}, d);
}

int cv_fs_write_replace_parts_seen(const char *path, const cv_fs_part *parts, int n,
                                   cv_fs_seen_fn seen, void *ctx, cv_diag *d)
{
    return write_renamed_seen(path, parts, n, false, (seen_by){seen, ctx}, d);
}

int cv_fs_write_atomic_parts(const char *path, const cv_fs_part *parts, int n, cv_diag *d)
{
    return write_renamed(path, parts, n, true, d);
}

int cv_fs_write_replace_parts(const char *path, const cv_fs_part *parts, int n, cv_diag *d)
{
    return write_renamed(path, parts, n, false, d);
}

int cv_fs_write_atomic(const char *path, const void *data, size_t len, cv_diag *d)
{
    cv_fs_part part = {data, len};
    return write_renamed(path, &part, 1, true, d);
}

int cv_fs_write_replace(const char *path, const void *data, size_t len, cv_diag *d)
{
    cv_fs_part part = {data, len};
    return write_renamed(path, &part, 1, false, d);
}

static int mkdir_one(const char *path, int mode)
{
    if (mkdir(path, (mode_t)mode) == 0)
        return 0;
    int err = errno;
    struct stat st;
    if (err == EEXIST && stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    return err;
}

int cv_fs_mkdirs(const char *path, int mode)
{
    char *p = strdup(path);   /* owned here */
    if (!p) {
        errno = ENOMEM;
        return -ENOMEM;
    }
    int err = 0;
    for (char *s = p + 1; *s && !err; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        err = mkdir_one(p, mode);
        *s = '/';
    }
    if (!err && p[0])
        err = mkdir_one(p, mode);
    free(p);
    errno = err;
    return -err;
}

char *cv_fs_dirname(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    char *res = strdup(dirname(copy));   /* dirname may return static "." */
    free(copy);
    return res;
}

char *cv_fs_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    bool slash = a > 0 && dir[a - 1] != '/';
    char *s = malloc(a + b + 2);
    if (!s)
        return NULL;
    memcpy(s, dir, a);
    if (slash)
        s[a++] = '/';
    memcpy(s + a, name, b + 1);
    return s;
}

static bool is_inside(const char *base, const char *p)
{
    size_t n = strlen(base);
    if (strncmp(base, p, n) != 0)
        return false;
    return p[n] == 0 || p[n] == '/' || (n == 1 && base[0] == '/');
}

/* Appends the components of tail (which do not exist) to the resolved
 * ancestor *res.  Returns 0, or an errno-like code: ELOOP for a dangling
 * symlink (the first component exists but does not resolve), ENOENT for
 * `..` after a missing directory. */
static int append_missing(char **res, char *tail)
{
    bool first = true;
    for (char *save = NULL, *c = strtok_r(tail, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0)
            return ENOENT;
        char *next = cv_fs_join(*res, c);
        if (!next)
            return ENOMEM;
        struct stat st;
        if (first && lstat(next, &st) == 0) {
            free(next);
            return ELOOP;
        }
        first = false;
        free(*res);
        *res = next;
    }
    return 0;
}

/* realpath() that accepts a missing tail: resolves the deepest existing
 * ancestor of path and appends the rest.  Returns 0 or an errno code. */
static int resolve_partial(char *path, char **out)
{
    *out = realpath(path, NULL);
    if (*out)
        return 0;
    if (errno != ENOENT)
        return errno;
    for (size_t n = strlen(path); n > 0; ) {
        char *slash = memrchr(path, '/', n);
        if (!slash)
            break;
        *slash = 0;
        char *anc = realpath(slash == path ? "/" : path, NULL);
        *slash = '/';
        if (anc) {
            int err = append_missing(&anc, slash + 1);
            if (err)
                free(anc);
            else
                *out = anc;
            return err;
        }
        if (errno != ENOENT)
            return errno;
        n = (size_t)(slash - path);
    }
    return ENOENT;
}

static int escape_error(cv_diag *d, const char *fmt, const char *rel, const char *base)
{
    cv_span sp = {0};
    cv_diag_error(d, CV_E_PATH_ESCAPE, sp, fmt, rel, base);
    return -1;
}

int cv_fs_resolve_inside(const char *base_dir, const char *rel, char **out, cv_diag *d)
{
    *out = NULL;
    if (!rel[0])
        return escape_error(d, "path `%s` is empty; name a file inside `%s`", rel, base_dir);
    if (rel[0] == '/')
        return escape_error(d, "path `%s` is absolute; name a file relative to `%s`", rel, base_dir);
    char *base = realpath(base_dir, NULL);   /* owned here */
    if (!base)
        return io_error(d, base_dir, "cannot resolve directory", errno);
    char *joined = cv_fs_join(base, rel), *res = NULL;   /* both owned here */
    int err = joined ? resolve_partial(joined, &res) : ENOMEM;
    int rc = 0;
    if (err == ELOOP)
        rc = escape_error(d, "path `%s` goes through a symbolic link in `%s` whose target does not "
                          "exist, so where it leads cannot be checked", rel, base);
    else if (err)
        rc = io_error(d, rel, "cannot resolve path", err);
    else if (!is_inside(base, res)) {
        cv_span sp = {0};
        cv_diag_error(d, CV_E_PATH_ESCAPE, sp,
                      "path `%s` resolves to `%s`, which is outside `%s`", rel, res, base);
        rc = -1;
    }
    free(base);
    free(joined);
    if (rc)
        free(res);
    else
        *out = res;
    return rc;
}
