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
#include "common/safetensors_internal.h"

static const struct { const char *name; cv_dtype dt; } dtypes[] = {
    {"F32", CV_F32}, {"F16", CV_F16}, {"BF16", CV_BF16}, {"I8", CV_I8},  {"U8", CV_U8},
    {"I32", CV_I32}, {"I64", CV_I64}, {"BOOL", CV_BOOL}, {"F64", CV_F64},
};

cv_dtype cv_st_dtype_of(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strlen(dtypes[i].name) == n && memcmp(dtypes[i].name, s, n) == 0)
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
    if (!d)
        return -1;
    cv_span sp = {.file = file};
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_ERROR, code, sp, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the tensor table, shared with the fast scanner */

cv_st_tensor *cv_st_push(cv_safetensors *st, const char *s, size_t n)
{
    if (n >= st->names_cap - st->names_len)
        return NULL;
    if (st->n == st->cap) {
        int cap = st->cap ? st->cap * 2 : 64;
        cv_st_tensor *t = st->cap < INT32_MAX / 2 ? realloc(st->t, (size_t)cap * sizeof *t) : NULL;
        if (!t)
            return NULL;
        st->t = t;
        st->cap = cap;
    }
    char *name = st->names + st->names_len;
    memcpy(name, s, n);
    name[n] = 0;
    st->names_len += n + 1;
    cv_st_tensor *t = &st->t[st->n++];
    memset(t, 0, sizeof *t);
    t->name = name;
    return t;
}

static int cmp_tensor(const void *a, const void *b)
{
    return strcmp(((const cv_st_tensor *)a)->name, ((const cv_st_tensor *)b)->name);
}

bool cv_st_sort(cv_safetensors *st)
{
    int i = 1;
    while (i < st->n && strcmp(st->t[i - 1].name, st->t[i].name) < 0)
        i++;
    if (i >= st->n)
        return true;  /* writers usually sort: skip the sort */
    qsort(st->t, (size_t)st->n, sizeof *st->t, cmp_tensor);
    for (i = 1; i < st->n; i++)
        if (strcmp(st->t[i - 1].name, st->t[i].name) == 0)
            return false;
    return true;
}

int cv_st_place(const cv_st_ctx *c, const char *name, int64_t begin, int64_t end, cv_st_tensor *t)
{
    size_t want = 0;
    int64_t numel;
    if (begin < 0 || end < begin || (uint64_t)end > c->data_len)
        return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_OFFSETS, "tensor `%s`: data_offsets [%lld, %lld] are "
                        "outside the %zu data bytes", name, (long long)begin, (long long)end,
                        c->data_len);
    if (cv_shape_nbytes(t->dtype, t->rank, t->dims, &numel, &want) != 0)
        return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_OFFSETS, "tensor `%s`: shape is too large", name);
    if ((size_t)(end - begin) != want)
        return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_OFFSETS, "tensor `%s`: data_offsets span %zu bytes but "
                        "%s x shape needs %zu", name, (size_t)(end - begin), dtype_name(t->dtype),
                        want);
    t->data = c->data + begin;
    t->nbytes = want;
    return 0;
}

/* ---- the general reader: any JSON, through jansson, with its errors */

static int parse_shape(const cv_st_ctx *c, const char *name, json_t *shape, cv_st_tensor *t)
{
    if (!json_is_array(shape) || json_array_size(shape) > CV_ST_MAX_RANK)
        return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_HEADER, "tensor `%s`: shape must be an array of at "
                        "most %d integers", name, CV_ST_MAX_RANK);
    t->rank = (int)json_array_size(shape);
    for (int i = 0; i < t->rank; i++) {
        json_t *v = json_array_get(shape, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_HEADER,
                            "tensor `%s`: shape[%d] is not a non-negative integer", name, i);
        t->dims[i] = json_integer_value(v);
    }
    return 0;
}

static int parse_dtype(const cv_st_ctx *c, const char *name, json_t *dt, cv_st_tensor *t)
{
    const char *s = json_string_value(dt);
    if (!s)
        return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_HEADER, "tensor `%s`: dtype must be a string", name);
    t->dtype = cv_st_dtype_of(s, json_string_length(dt));
    if (t->dtype == CV_DT_INVALID)
        return st_error(c->d, c->file, CV_E_SAFETENSORS_UNSUPPORTED_DTYPE, "tensor `%s`: dtype `%s` is not supported "
                        "(F32 F16 BF16 F64 I8 U8 I32 I64 BOOL are)", name, s);
    return 0;
}

static int parse_tensor(const cv_st_ctx *c, const char *name, json_t *v, cv_st_tensor *t)
{
    if (!json_is_object(v))
        return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_HEADER, "tensor `%s`: entry is not an object", name);
    json_t *offs = json_object_get(v, "data_offsets");
    json_t *b = json_array_get(offs, 0), *e = json_array_get(offs, 1);
    if (parse_dtype(c, name, json_object_get(v, "dtype"), t) ||
        parse_shape(c, name, json_object_get(v, "shape"), t))
        return -1;
    if (!json_is_array(offs) || json_array_size(offs) != 2 || !json_is_integer(b) ||
        !json_is_integer(e))
        return st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_HEADER,
                        "tensor `%s`: data_offsets must be [begin, end] integers", name);
    return cv_st_place(c, name, json_integer_value(b), json_integer_value(e), t);
}

static int parse_entries(const cv_st_ctx *c, json_t *root, cv_safetensors *st)
{
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v) {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        cv_st_tensor *t = cv_st_push(st, name, strlen(name));
        if (!t)
            return st_error(c->d, c->file, CV_E_OUT_OF_MEMORY, "out of memory");
        if (parse_tensor(c, name, v, t))
            return -1;
    }
    cv_st_sort(st);  /* jansson refused repeated names */
    return 0;
}

int cv_st_read_json(const cv_st_ctx *c, const char *h, size_t hlen, cv_safetensors *st)
{
    json_error_t err;
    json_t *root = json_loadb(h, hlen, JSON_REJECT_DUPLICATES, &err);   /* owned here */
    if (!root || !json_is_object(root)) {
        st_error(c->d, c->file, CV_E_SAFETENSORS_BAD_HEADER, "safetensors header is not a JSON object: %s "
                 "(header byte %d)", root ? "wrong type" : err.text, root ? 0 : err.position);
        json_decref(root);
        return -1;
    }
    int rc = parse_entries(c, root, st);
    json_decref(root);
    return rc;
}

/* ---- the whole file */

static void st_free(cv_safetensors *st)
{
    for (int i = 0; st->copies && i < st->n; i++)
        free(st->copies[i]);
    free(st->copies);
    free(st->t);
    free(st->names);
    if (st->map)
        munmap(st->map, st->map_len);
    free(st);
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
        if (!st->copies && !(st->copies = calloc((size_t)st->n, sizeof *st->copies)))
            return -1;
        void *p = malloc(t->nbytes);
        if (!p)
            return -1;
        memcpy(p, t->data, t->nbytes);
        st->copies[i] = p;
        t->data = p;
    }
    return 0;
}

static uint64_t le_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The header's length, checked against the file. */
static int header_len(const unsigned char *b, size_t len, const char *file, size_t *hlen,
                      cv_diag *d)
{
    if (len < 8)
        return st_error(d, file, CV_E_SAFETENSORS_BAD_HEADER,
                        "file is shorter than the 8-byte safetensors header length");
    uint64_t n = le_u64(b);
    if (n > CV_ST_MAX_HEADER || n > len - 8 || n < 2 || b[8] != '{')
        return st_error(d, file, CV_E_SAFETENSORS_BAD_HEADER, "safetensors header length %llu is %s",
                        (unsigned long long)n, n > CV_ST_MAX_HEADER ? "above the 100 MiB limit"
                        : n > len - 8 ? "beyond the end of the file" : "not that of a JSON object");
    *hlen = (size_t)n;
    return 0;
}

/* Every name fits in the header's own length: a key takes its bytes plus
 * two quotes there, and escapes only shrink. */
static int read_header(const cv_st_ctx *c, const char *h, size_t hlen, cv_safetensors *st)
{
    st->names_cap = hlen + 1;
    if (!(st->names = malloc(st->names_cap)))
        return st_error(c->d, c->file, CV_E_OUT_OF_MEMORY, "out of memory");
    cv_st_ctx quiet = *c;
    quiet.d = NULL;
    if (cv_st_scan(h, hlen, &quiet, st) != 0) {
        st->n = 0;
        st->names_len = 0;
        if (cv_st_read_json(c, h, hlen, st))
            return -1;
    }
    return align_tensors(st) ? st_error(c->d, c->file, CV_E_OUT_OF_MEMORY, "out of memory") : 0;
}

int cv_safetensors_open_mem(const void *buf, size_t len, const char *name, cv_safetensors **out,
                            cv_diag *d)
{
    *out = NULL;
    const unsigned char *b = buf;
    size_t hlen = 0;
    if (header_len(b, len, name, &hlen, d))
        return -1;
    cv_safetensors *st = calloc(1, sizeof *st);
    if (!st)
        return st_error(d, name, CV_E_OUT_OF_MEMORY, "out of memory");
    cv_st_ctx c = {name, b + 8 + hlen, len - 8 - hlen, d};
    if (read_header(&c, (const char *)b + 8, hlen, st)) {
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
        return st_error(d, path, CV_E_IO_ERROR, "cannot read safetensors file: %s", strerror(err));
    }
    size_t len = (size_t)st.st_size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    err = errno;
    close(fd);
    if (map == MAP_FAILED)
        return st_error(d, path, CV_E_IO_ERROR, "cannot map safetensors file: %s", strerror(err));
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
        return st_error(d, path, CV_E_SAFETENSORS_BAD_HEADER, "tensor name `%s` is empty, reserved or repeated",
                        t->name ? t->name : "(null)");
    if (!dtype_name(t->dtype))
        return st_error(d, path, CV_E_SAFETENSORS_UNSUPPORTED_DTYPE, "tensor `%s`: dtype %s cannot be written", t->name,
                        cv_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > CV_ST_MAX_RANK ||
        cv_shape_nbytes(t->dtype, t->rank, t->dims, &numel, &want) != 0 || want != t->nbytes)
        return st_error(d, path, CV_E_SAFETENSORS_BAD_OFFSETS, "tensor `%s`: nbytes %zu does not match its dtype "
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
        st_error(d, path, CV_E_OUT_OF_MEMORY, "out of memory");
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
        return hdr ? st_error(d, path, CV_E_OUT_OF_MEMORY, "out of memory") : -1;
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
