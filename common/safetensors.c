#include "common/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/nbytes.h"

enum { CODE_HEADER = 1111, CODE_DTYPE = 1112, CODE_OFFSETS = 1113, CODE_OOM = 9002, CODE_IO = 9004 };

struct cv_safetensors {
    void *map;              /* owned mapping, or NULL (empty file, or bytes owned by the caller) */
    size_t map_len;
    cv_st_tensor *t;        /* owned array; t[i].name owned */
    void **copies;          /* owned: aligned copies of misaligned tensors (NULL where none) */
    int n;
};

static const struct { const char *name; cv_dtype dt; } dtypes[] = {
    {"F32", CV_F32}, {"F16", CV_F16}, {"BF16", CV_BF16}, {"I8", CV_I8},  {"U8", CV_U8},
    {"I32", CV_I32}, {"I64", CV_I64}, {"BOOL", CV_BOOL}, {"F64", CV_F64},
};

static cv_dtype dtype_of(const char *s)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, s) == 0)
            return dtypes[i].dt;
    return CV_DT_INVALID;
}

static const char *dtype_name(cv_dtype dt)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dt == dt)
            return dtypes[i].name;
    return NULL;
}

static int st_error(cv_diag *d, const char *file, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int st_error(cv_diag *d, const char *file, int code, const char *fmt, ...)
{
    cv_span sp = {.file = file};
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_ERROR, code, sp, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- parsing one tensor entry */

typedef struct st_ctx {
    const char *file;
    const unsigned char *data;  /* start of the byte buffer after the header */
    size_t data_len;
    cv_diag *d;
} st_ctx;

static int parse_shape(st_ctx *c, const char *name, json_t *shape, cv_st_tensor *t)
{
    if (!json_is_array(shape) || json_array_size(shape) > CV_ST_MAX_RANK)
        return st_error(c->d, c->file, CODE_HEADER, "tensor `%s`: shape must be an array of at most "
                        "%d integers", name, CV_ST_MAX_RANK);
    t->rank = (int)json_array_size(shape);
    for (int i = 0; i < t->rank; i++) {
        json_t *v = json_array_get(shape, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return st_error(c->d, c->file, CODE_HEADER,
                            "tensor `%s`: shape[%d] is not a non-negative integer", name, i);
        t->dims[i] = json_integer_value(v);
    }
    return 0;
}

static int parse_offsets(st_ctx *c, const char *name, json_t *offs, size_t *begin, size_t *end)
{
    json_t *b = json_array_get(offs, 0), *e = json_array_get(offs, 1);
    if (!json_is_array(offs) || json_array_size(offs) != 2 || !json_is_integer(b) ||
        !json_is_integer(e))
        return st_error(c->d, c->file, CODE_HEADER,
                        "tensor `%s`: data_offsets must be [begin, end] integers", name);
    json_int_t bv = json_integer_value(b), ev = json_integer_value(e);
    if (bv < 0 || ev < bv || (uint64_t)ev > c->data_len)
        return st_error(c->d, c->file, CODE_OFFSETS, "tensor `%s`: data_offsets [%lld, %lld] are "
                        "outside the %zu data bytes", name, (long long)bv, (long long)ev, c->data_len);
    *begin = (size_t)bv;
    *end = (size_t)ev;
    return 0;
}

static int parse_dtype(st_ctx *c, const char *name, json_t *dt, cv_st_tensor *t)
{
    const char *s = json_string_value(dt);
    if (!s)
        return st_error(c->d, c->file, CODE_HEADER, "tensor `%s`: dtype must be a string", name);
    t->dtype = dtype_of(s);
    if (t->dtype == CV_DT_INVALID)
        return st_error(c->d, c->file, CODE_DTYPE, "tensor `%s`: dtype `%s` is not supported "
                        "(F32 F16 BF16 F64 I8 U8 I32 I64 BOOL are)", name, s);
    return 0;
}

static int parse_tensor(st_ctx *c, const char *name, json_t *v, cv_st_tensor *t)
{
    size_t begin = 0, end = 0, want = 0;
    int64_t numel;
    if (!json_is_object(v))
        return st_error(c->d, c->file, CODE_HEADER, "tensor `%s`: entry is not an object", name);
    if (parse_dtype(c, name, json_object_get(v, "dtype"), t) ||
        parse_shape(c, name, json_object_get(v, "shape"), t) ||
        parse_offsets(c, name, json_object_get(v, "data_offsets"), &begin, &end))
        return -1;
    if (cv_shape_nbytes(t->dtype, t->rank, t->dims, &numel, &want) != 0)
        return st_error(c->d, c->file, CODE_OFFSETS, "tensor `%s`: shape is too large", name);
    if (end - begin != want)
        return st_error(c->d, c->file, CODE_OFFSETS, "tensor `%s`: data_offsets span %zu bytes but "
                        "%s x shape needs %zu", name, end - begin, dtype_name(t->dtype), want);
    t->data = c->data + begin;
    t->nbytes = want;
    return 0;
}

/* ---- the whole file */

static void st_free(cv_safetensors *st)
{
    for (int i = 0; i < st->n; i++) {
        free((char *)st->t[i].name);
        if (st->copies)
            free(st->copies[i]);
    }
    free(st->t);
    free(st->copies);
    if (st->map)
        munmap(st->map, st->map_len);
    free(st);
}

static int cmp_tensor(const void *a, const void *b)
{
    return strcmp(((const cv_st_tensor *)a)->name, ((const cv_st_tensor *)b)->name);
}

/* Tensor data must be usable as a typed array; the header length need not be
 * a multiple of 8, so misaligned tensors get an aligned copy. */
static int align_tensors(cv_safetensors *st)
{
    for (int i = 0; i < st->n; i++) {
        cv_st_tensor *t = &st->t[i];
        size_t a = cv_dtype_size(t->dtype);
        if (t->nbytes == 0 || (uintptr_t)t->data % a == 0)
            continue;
        void *p = malloc(t->nbytes);
        if (!p)
            return -1;
        memcpy(p, t->data, t->nbytes);
        st->copies[i] = p;
        t->data = p;
    }
    return 0;
}

static int parse_entries(st_ctx *c, json_t *root, cv_safetensors *st)
{
    size_t cap = json_object_size(root);
    st->t = calloc(cap ? cap : 1, sizeof *st->t);
    st->copies = calloc(cap ? cap : 1, sizeof *st->copies);
    if (!st->t || !st->copies)
        return st_error(c->d, c->file, CODE_OOM, "out of memory");
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v) {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        cv_st_tensor *t = &st->t[st->n];
        if (!(t->name = strdup(name)))
            return st_error(c->d, c->file, CODE_OOM, "out of memory");
        st->n++;
        if (parse_tensor(c, name, v, t))
            return -1;
    }
    qsort(st->t, (size_t)st->n, sizeof *st->t, cmp_tensor);
    return align_tensors(st) ? st_error(c->d, c->file, CODE_OOM, "out of memory") : 0;
}

static uint64_t le_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static json_t *load_header(const unsigned char *b, size_t len, const char *file, size_t *hlen,
                           cv_diag *d)
{
    if (len < 8) {
        st_error(d, file, CODE_HEADER, "file is shorter than the 8-byte safetensors header length");
        return NULL;
    }
    uint64_t n = le_u64(b);
    if (n > CV_ST_MAX_HEADER || n > len - 8 || n < 2 || b[8] != '{') {
        st_error(d, file, CODE_HEADER, "safetensors header length %llu is %s", (unsigned long long)n,
                 n > CV_ST_MAX_HEADER ? "above the 100 MiB limit"
                 : n > len - 8 ? "beyond the end of the file" : "not that of a JSON object");
        return NULL;
    }
    json_error_t err;
    json_t *root = json_loadb((const char *)b + 8, (size_t)n, JSON_REJECT_DUPLICATES, &err);
    if (!root || !json_is_object(root)) {
        st_error(d, file, CODE_HEADER, "safetensors header is not a JSON object: %s (header byte %d)",
                 root ? "wrong type" : err.text, root ? 0 : err.position);
        json_decref(root);
        return NULL;
    }
    *hlen = (size_t)n;
    return root;
}

int cv_safetensors_open_mem(const void *buf, size_t len, const char *name, cv_safetensors **out,
                            cv_diag *d)
{
    *out = NULL;
    size_t hlen;
    json_t *root = load_header(buf, len, name, &hlen, d);   /* owned here */
    if (!root)
        return -1;
    cv_safetensors *st = calloc(1, sizeof *st);
    st_ctx c = {name, (const unsigned char *)buf + 8 + hlen, len - 8 - hlen, d};
    int rc = st ? parse_entries(&c, root, st) : st_error(d, name, CODE_OOM, "out of memory");
    json_decref(root);
    if (rc) {
        if (st)
            st_free(st);
        return -1;
    }
    *out = st;
    return 0;
}

int cv_safetensors_open(const char *path, cv_safetensors **out, cv_diag *d)
{
    *out = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (err) {
        if (fd >= 0)
            close(fd);
        return st_error(d, path, CODE_IO, "cannot read safetensors file: %s", strerror(err));
    }
    size_t len = (size_t)st.st_size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    err = errno;
    close(fd);
    if (map == MAP_FAILED)
        return st_error(d, path, CODE_IO, "cannot map safetensors file: %s", strerror(err));
    if (cv_safetensors_open_mem(map ? map : "", len, path, out, d)) {
        if (map)
            munmap(map, len);
        return -1;
    }
    (*out)->map = map;
    (*out)->map_len = len;
    return 0;
}

int cv_safetensors_count(const cv_safetensors *st) { return st->n; }

const cv_st_tensor *cv_safetensors_at(const cv_safetensors *st, int i)
{
    return i >= 0 && i < st->n ? &st->t[i] : NULL;
}

const cv_st_tensor *cv_safetensors_find(const cv_safetensors *st, const char *name)
{
    cv_st_tensor key = {.name = name};
    return bsearch(&key, st->t, (size_t)st->n, sizeof *st->t, cmp_tensor);
}

void cv_safetensors_close(cv_safetensors *st)
{
    if (st)
        st_free(st);
}

/* ---- writing */

static int check_tensor(const char *path, const cv_st_tensor *t, json_t *hdr, cv_diag *d)
{
    int64_t numel;
    size_t want;
    if (!t->name || !t->name[0] || strcmp(t->name, "__metadata__") == 0 ||
        json_object_get(hdr, t->name))
        return st_error(d, path, CODE_HEADER, "tensor name `%s` is empty, reserved or repeated",
                        t->name ? t->name : "(null)");
    if (!dtype_name(t->dtype))
        return st_error(d, path, CODE_DTYPE, "tensor `%s`: dtype %s cannot be written", t->name,
                        cv_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > CV_ST_MAX_RANK ||
        cv_shape_nbytes(t->dtype, t->rank, t->dims, &numel, &want) != 0 || want != t->nbytes)
        return st_error(d, path, CODE_OFFSETS, "tensor `%s`: nbytes %zu does not match its dtype "
                        "and shape", t->name, t->nbytes);
    return 0;
}

static json_t *tensor_entry(const cv_st_tensor *t, size_t begin)
{
    json_t *shape = json_array();
    for (int i = 0; i < t->rank; i++)
        json_array_append_new(shape, json_integer(t->dims[i]));
    return json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtype_name(t->dtype), "shape", shape,
                     "data_offsets", (json_int_t)begin, (json_int_t)(begin + t->nbytes));
}

/* The header JSON, padded with spaces to a multiple of 8 (as the reference
 * writer does), malloc'd; NULL after reporting an error. */
static char *build_header(const char *path, const cv_st_tensor *ts, int n, size_t *len, cv_diag *d)
{
    json_t *hdr = json_object();   /* owned here */
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (check_tensor(path, &ts[i], hdr, d)) {
            json_decref(hdr);
            return NULL;
        }
        json_object_set_new(hdr, ts[i].name, tensor_entry(&ts[i], off));
        off += ts[i].nbytes;
    }
    char *s = json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(hdr);
    size_t sl = s ? strlen(s) : 0, padded = (sl + 7) & ~(size_t)7;
    char *p = s ? realloc(s, padded + 1) : NULL;
    if (!p) {
        free(s);
        st_error(d, path, CODE_OOM, "out of memory");
        return NULL;
    }
    memset(p + sl, ' ', padded - sl);
    p[padded] = 0;
    *len = padded;
    return p;
}

int cv_safetensors_write(const char *path, const cv_st_tensor *tensors, int n, cv_diag *d)
{
    size_t hlen;
    char *hdr = build_header(path, tensors, n, &hlen, d);   /* owned here */
    cv_fs_part *parts = hdr ? calloc((size_t)n + 2, sizeof *parts) : NULL;   /* owned here */
    if (!parts) {
        free(hdr);
        return hdr ? st_error(d, path, CODE_OOM, "out of memory") : -1;
    }
    unsigned char lenbuf[8];
    for (int i = 0; i < 8; i++)
        lenbuf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    parts[0] = (cv_fs_part){lenbuf, 8};
    parts[1] = (cv_fs_part){hdr, hlen};
    for (int i = 0; i < n; i++)
        parts[i + 2] = (cv_fs_part){tensors[i].data, tensors[i].nbytes};
    int rc = cv_fs_write_atomic_parts(path, parts, n + 2, d);
    free(parts);
    free(hdr);
    return rc;
}
