#include "common/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/nbytes.h"
#include "common/strbuf.h"

static const char magic[6] = "\x93NUMPY";

static const struct { const char *descr; cv_dtype dt; } descrs[] = {
    {"<f4", CV_F32}, {"<f8", CV_F64}, {"<f2", CV_F16}, {"<i8", CV_I64},
    {"<i4", CV_I32}, {"|i1", CV_I8},  {"|u1", CV_U8},  {"|b1", CV_BOOL},
};

static const char *descr_of(cv_dtype dt)
{
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (descrs[i].dt == dt)
            return descrs[i].descr;
    return NULL;
}

static cv_dtype dtype_of(const char *descr)
{
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (strcmp(descrs[i].descr, descr) == 0)
            return descrs[i].dt;
    return CV_DT_INVALID;
}

/* ---- header parsing: the header is a Python dict literal such as
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */

typedef struct hdr {
    const char *p, *end, *start;
    const char *name;
    cv_diag *d;
} hdr;

static int hdr_error(hdr *h, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int hdr_error(hdr *h, int code, const char *fmt, ...)
{
    cv_span sp = {.file = h->name};
    va_list ap;
    va_start(ap, fmt);
    int id = cv_diag_vadd(h->d, CV_SEV_ERROR, code, sp, NULL, fmt, ap);
    va_end(ap);
    int shown = (int)(h->end - h->start) > 200 ? 200 : (int)(h->end - h->start);
    cv_diag_note(h->d, id, "at offset %d of the header `%.*s`", (int)(h->p - h->start), shown,
                 h->start);
    return -1;
}

static void skip_ws(hdr *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static bool accept(hdr *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

static int expect(hdr *h, char c)
{
    return accept(h, c) ? 0 : hdr_error(h, CV_E_NPY_BAD_HEADER, "expected `%c` in .npy header", c);
}

/* A quoted string without escapes (NumPy never writes any), at most cap-1 bytes. */
static int parse_str(hdr *h, char *buf, size_t cap)
{
    skip_ws(h);
    char q = h->p < h->end ? *h->p : 0;
    if (q != '\'' && q != '"')
        return hdr_error(h, CV_E_NPY_BAD_HEADER, "expected a quoted string in .npy header");
    const char *s = ++h->p;
    while (h->p < h->end && *h->p != q && *h->p != '\\')
        h->p++;
    size_t n = (size_t)(h->p - s);
    if (h->p >= h->end || *h->p != q || n >= cap)
        return hdr_error(h, CV_E_NPY_BAD_HEADER, "bad or overlong string in .npy header");
    memcpy(buf, s, n);
    buf[n] = 0;
    h->p++;
    return 0;
}

static bool accept_word(hdr *h, const char *w)
{
    size_t n = strlen(w);
    skip_ws(h);
    if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n) != 0)
        return false;
    h->p += n;
    return true;
}

static int parse_bool(hdr *h, bool *v)
{
    if (accept_word(h, "True"))
        *v = true;
    else if (accept_word(h, "False"))
        *v = false;
    else
        return hdr_error(h, CV_E_NPY_BAD_HEADER, "expected True or False in .npy header");
    return 0;
}

static int parse_dim(hdr *h, int64_t *v)
{
    skip_ws(h);
    int64_t x = 0;
    const char *s = h->p;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
        if (x > (INT64_MAX - 9) / 10)
            return hdr_error(h, CV_E_NPY_BAD_HEADER, "dimension too large in .npy header");
        x = x * 10 + (*h->p++ - '0');
    }
    if (h->p == s)
        return hdr_error(h, CV_E_NPY_BAD_HEADER, "expected a dimension in .npy shape");
    if (h->p < h->end && *h->p == 'L')   /* Python 2 long */
        h->p++;
    *v = x;
    return 0;
}

/* (), (3,), (2, 3) or (2, 3,).  A rank-1 tuple needs its comma: `(3)` is
 * an int in Python, and NumPy refuses it. */
static int parse_shape(hdr *h, cv_npy *out)
{
    if (expect(h, '('))
        return -1;
    int rank = 0;
    bool comma = false;
    while (!accept(h, ')')) {
        if (rank > 0 && !comma)
            return hdr_error(h, CV_E_NPY_BAD_HEADER, "expected `,` or `)` in .npy shape");
        if (rank == CV_NPY_MAX_RANK)
            return hdr_error(h, CV_E_NPY_UNSUPPORTED_DTYPE, "arrays of rank above %d are not supported",
                             CV_NPY_MAX_RANK);
        if (parse_dim(h, &out->dims[rank++]))
            return -1;
        comma = accept(h, ',');
    }
    if (rank == 1 && !comma)
        return hdr_error(h, CV_E_NPY_BAD_HEADER, "a rank-1 shape needs a trailing comma: `(n,)`");
    out->rank = rank;
    return 0;
}

static int parse_descr(hdr *h, cv_npy *out)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == '[')
        return hdr_error(h, CV_E_NPY_UNSUPPORTED_DTYPE, "structured dtypes are not supported");
    char descr[32];
    if (parse_str(h, descr, sizeof descr))
        return -1;
    out->dtype = dtype_of(descr);
    if (out->dtype != CV_DT_INVALID)
        return 0;
    return hdr_error(h, CV_E_NPY_UNSUPPORTED_DTYPE, "dtype `%s` is not supported%s", descr,
                     descr[0] == '>' ? " (big-endian; save with a little-endian dtype)"
                                     : " (use f4 f8 f2 i8 i4 i1 u1 or bool)");
}

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };

static int parse_entry(hdr *h, cv_npy *out, unsigned *seen)
{
    char key[32];
    if (parse_str(h, key, sizeof key) || expect(h, ':'))
        return -1;
    unsigned k = strcmp(key, "descr") == 0 ? KEY_DESCR
               : strcmp(key, "fortran_order") == 0 ? KEY_FORTRAN
               : strcmp(key, "shape") == 0 ? KEY_SHAPE : 0;
    if (!k || (*seen & k))
        return hdr_error(h, CV_E_NPY_BAD_HEADER, "%s key `%s` in .npy header",
                         k ? "duplicate" : "unexpected", key);
    *seen |= k;
    if (k == KEY_DESCR)
        return parse_descr(h, out);
    if (k == KEY_SHAPE)
        return parse_shape(h, out);
    bool fortran = false;
    if (parse_bool(h, &fortran))
        return -1;
    return fortran ? hdr_error(h, CV_E_NPY_UNSUPPORTED_DTYPE, "Fortran-order arrays are not supported "
                               "(save np.ascontiguousarray(a))") : 0;
}

static int parse_header(hdr *h, cv_npy *out)
{
    unsigned seen = 0;
    if (expect(h, '{'))
        return -1;
    while (!accept(h, '}')) {
        if (parse_entry(h, out, &seen))
            return -1;
        if (!accept(h, ',')) {
            if (expect(h, '}'))
                return -1;
            break;
        }
    }
    skip_ws(h);
    if (h->p != h->end)
        return hdr_error(h, CV_E_NPY_BAD_HEADER, "unexpected text after the .npy header dict");
    if (seen != (KEY_DESCR | KEY_FORTRAN | KEY_SHAPE))
        return hdr_error(h, CV_E_NPY_BAD_HEADER, ".npy header lacks one of descr, fortran_order, shape");
    return 0;
}

/* ---- reading */

static int file_error(cv_diag *d, const char *name, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int file_error(cv_diag *d, const char *name, int code, const char *fmt, ...)
{
    cv_span sp = {.file = name};
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_ERROR, code, sp, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static uint32_t le_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Checks magic and version; sets the header's offset and length. */
static int read_preamble(const unsigned char *b, size_t len, const char *name, size_t *hoff,
                         size_t *hlen, cv_diag *d)
{
    size_t m = len < 6 ? len : 6;
    if (memcmp(b, magic, m) != 0)
        return file_error(d, name, CV_E_NPY_BAD_MAGIC, "not a .npy file (bad magic)");
    if (len < 8)
        return file_error(d, name, CV_E_NPY_TRUNCATED, ".npy file ends inside its preamble");
    int major = b[6], minor = b[7];
    if ((major < 1 || major > 3) || minor != 0)
        return file_error(d, name, CV_E_NPY_BAD_HEADER, "unsupported .npy format version %d.%d",
                          major, minor);
    *hoff = major == 1 ? 10 : 12;
    if (len < *hoff)
        return file_error(d, name, CV_E_NPY_TRUNCATED, ".npy file ends inside its preamble");
    *hlen = major == 1 ? (size_t)(b[8] | b[9] << 8) : le_u32(b + 8);
    if (*hlen > CV_NPY_MAX_HEADER)
        return file_error(d, name, CV_E_NPY_BAD_HEADER, ".npy header length %zu exceeds the limit of %u",
                          *hlen, CV_NPY_MAX_HEADER);
    if (*hlen > len - *hoff)
        return file_error(d, name, CV_E_NPY_TRUNCATED, ".npy file ends inside its header");
    return 0;
}

static int check_size(const cv_npy *n, size_t have, const char *name, size_t *nbytes, cv_diag *d)
{
    int64_t numel;
    if (cv_shape_nbytes(n->dtype, n->rank, n->dims, &numel, nbytes) != 0)
        return file_error(d, name, CV_E_NPY_BAD_HEADER, ".npy shape is too large (byte size overflows)");
    if (have < *nbytes)
        return file_error(d, name, CV_E_NPY_TRUNCATED, ".npy data has %zu bytes; the header promises %zu",
                          have, *nbytes);
    if (have > *nbytes)
        return file_error(d, name, CV_E_NPY_TRAILING_DATA, ".npy file has %zu bytes after its data",
                          have - *nbytes);
    return 0;
}

int cv_npy_read_mem(const void *buf, size_t len, const char *name, cv_npy *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    const unsigned char *b = buf;
    size_t hoff = 0, hlen = 0, nbytes = 0;
    if (read_preamble(b, len, name, &hoff, &hlen, d))
        return -1;
    hdr h = {(const char *)b + hoff, (const char *)b + hoff + hlen, (const char *)b + hoff, name, d};
    cv_npy tmp = {0};
    if (parse_header(&h, &tmp) || check_size(&tmp, len - hoff - hlen, name, &nbytes, d))
        return -1;
    tmp.data = malloc(nbytes ? nbytes : 1);
    if (!tmp.data)
        return file_error(d, name, CV_E_OUT_OF_MEMORY, "out of memory reading %zu bytes", nbytes);
    if (nbytes)
        memcpy(tmp.data, b + hoff + hlen, nbytes);
    tmp.nbytes = nbytes;
    if (tmp.dtype == CV_BOOL)
        for (size_t i = 0; i < nbytes; i++)
            ((unsigned char *)tmp.data)[i] = ((unsigned char *)tmp.data)[i] != 0;
    *out = tmp;
    return 0;
}

/* Opens a regular file; returns 0 or an errno code. */
static int open_regular(const char *path, int *fd, size_t *len)
{
    struct stat st;
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return errno;
    int err = fstat(*fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (err)
        close(*fd);
    else
        *len = (size_t)st.st_size;
    return err;
}

int cv_npy_read(const char *path, cv_npy *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    int fd;
    size_t len = 0;
    int err = open_regular(path, &fd, &len);
    if (err)
        return file_error(d, path, CV_E_IO_ERROR, "cannot read .npy file: %s", strerror(err));
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    err = errno;
    close(fd);
    if (map == MAP_FAILED)
        return file_error(d, path, CV_E_IO_ERROR, "cannot map .npy file: %s", strerror(err));
    int rc = cv_npy_read_mem(map ? map : "", len, path, out, d);
    if (map)
        munmap(map, len);
    return rc;
}

void cv_npy_free(cv_npy *n)
{
    free(n->data);
    memset(n, 0, sizeof *n);
}

int64_t cv_npy_numel(const cv_npy *n)
{
    int64_t e = 1;
    for (int i = 0; i < n->rank; i++)
        e *= n->dims[i];
    return e;
}

/* ---- writing */

static void format_header(cv_sb *sb, const char *descr, int rank, const int64_t *dims)
{
    cv_sb_add(sb, magic, 6);
    cv_sb_add(sb, "\x01\x00\x00\x00", 4);   /* version 1.0; length patched below */
    cv_sb_printf(sb, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < rank; i++)
        cv_sb_printf(sb, "%s%lld", i ? ", " : "", (long long)dims[i]);
    cv_sb_puts(sb, rank == 1 ? ",), }" : "), }");
    while ((sb->len + 1) % 64)
        cv_sb_putc(sb, ' ');
    cv_sb_putc(sb, '\n');
}

static int write_checks(const char *path, cv_dtype dt, int rank, const int64_t *dims, size_t *nbytes,
                        cv_diag *d)
{
    int64_t numel;
    if (!descr_of(dt))
        return file_error(d, path, CV_E_NPY_UNSUPPORTED_DTYPE, "dtype %s cannot be written to .npy",
                          cv_dtype_name(dt));
    if (rank < 0 || rank > CV_NPY_MAX_RANK)
        return file_error(d, path, CV_E_INVALID_DIMENSION, "rank %d is outside 0..%d", rank, CV_NPY_MAX_RANK);
    int rc = cv_shape_nbytes(dt, rank, dims, &numel, nbytes);
    if (rc == -1)
        return file_error(d, path, CV_E_INVALID_DIMENSION, "negative dimension");
    if (rc)
        return file_error(d, path, CV_E_DIMENSION_OVERFLOW, "the array's byte size overflows");
    return 0;
}

int cv_npy_write(const char *path, cv_dtype dt, int rank, const int64_t *dims, const void *data,
                 cv_diag *d)
{
    size_t nbytes;
    if (write_checks(path, dt, rank, dims, &nbytes, d))
        return -1;
    cv_sb sb = CV_SB_INIT;   /* owned here: preamble + header */
    format_header(&sb, descr_of(dt), rank, dims);
    if (sb.oom || sb.len - 10 > 0xffff) {
        cv_sb_free(&sb);
        return file_error(d, path, CV_E_IO_ERROR, "cannot format the .npy header");
    }
    sb.buf[8] = (char)((sb.len - 10) & 0xff);
    sb.buf[9] = (char)((sb.len - 10) >> 8);
    cv_fs_part parts[2] = {{sb.buf, sb.len}, {data, nbytes}};
    int rc = cv_fs_write_atomic_parts(path, parts, 2, d);
    cv_sb_free(&sb);
    return rc;
}
