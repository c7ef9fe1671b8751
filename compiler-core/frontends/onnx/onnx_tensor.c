/* TensorProto decoding: element types, dims, raw_data and the typed fields
 * (all little-endian), and external data read only from inside the model's
 * own directory. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "compiler-core/frontends/onnx/onnx_internal.h"

cv_dtype onnx_dtype(int32_t t)
{
    switch (t) {
    case ONNX_DT_FLOAT: return CV_F32;
    case ONNX_DT_UINT8: return CV_U8;
    case ONNX_DT_INT8: return CV_I8;
    case ONNX_DT_INT32: return CV_I32;
    case ONNX_DT_INT64: return CV_I64;
    case ONNX_DT_BOOL: return CV_BOOL;
    case ONNX_DT_FLOAT16: return CV_F16;
    case ONNX_DT_DOUBLE: return CV_F64;
    case ONNX_DT_BFLOAT16: return CV_BF16;
    case ONNX_DT_INT16: return CV_I16;
    case ONNX_DT_UINT16: return CV_U16;
    case ONNX_DT_UINT32: return CV_U32;
    case ONNX_DT_UINT64: return CV_U64;
    default: return CV_DT_INVALID;
    }
}

const char *onnx_dtype_name(int32_t t)
{
    static const char *const names[] = {
        "undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string",
        "bool", "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16",
    };
    return (t >= 0 && t < (int32_t)(sizeof names / sizeof names[0])) ? names[t] : "unknown";
}

typedef struct tensor_src {
    const char *file, *what;
    cv_diag *d;
} tensor_src;

static int terr(const tensor_src *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int terr(const tensor_src *s, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cv_span sp = {.file = s->file};
    cv_diag_add(s->d, CV_SEV_ERROR, code, sp, "Graph>Tensor", "tensor '%s': %s", s->what, msg);
    return -1;
}

static int decode_dims(const Onnx__TensorProto *t, const tensor_src *s, onnx_const *out)
{
    if (t->n_dims > CV_MAX_RANK)
        return terr(s, CV_E_ONNX_RANK_LIMIT, "rank %zu exceeds the supported maximum of %d",
                    t->n_dims, CV_MAX_RANK);
    out->rank = (int)t->n_dims;
    out->numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return terr(s, CV_E_ONNX_INVALID_DIM, "dimension %zu is negative (%" PRId64 ")", i, t->dims[i]);
        out->dims[i] = t->dims[i];
        if (!cv_mul_i64(out->numel, t->dims[i], &out->numel) || out->numel > (INT64_MAX >> 4))
            return terr(s, CV_E_ONNX_INVALID_DIM, "element count overflows");
    }
    return 0;
}

/* The number of values in the typed field that matches the dtype. */
static size_t typed_count(const Onnx__TensorProto *t)
{
    switch (t->data_type) {
    case ONNX_DT_FLOAT: return t->n_float_data;
    case ONNX_DT_INT64: return t->n_int64_data;
    case ONNX_DT_DOUBLE: return t->n_double_data;
    case ONNX_DT_UINT32:
    case ONNX_DT_UINT64: return t->n_uint64_data;
    default: return t->n_int32_data;
    }
}

/* Copies the typed field matching the dtype into out->data (counts checked). */
static void decode_typed(const Onnx__TensorProto *t, onnx_const *out)
{
    for (size_t i = 0; i < (size_t)out->numel; i++) {
        switch (t->data_type) {
        case ONNX_DT_FLOAT: ((float *)out->data)[i] = t->float_data[i]; break;
        case ONNX_DT_INT64: ((int64_t *)out->data)[i] = t->int64_data[i]; break;
        case ONNX_DT_DOUBLE: ((double *)out->data)[i] = t->double_data[i]; break;
        case ONNX_DT_INT32: ((int32_t *)out->data)[i] = t->int32_data[i]; break;
        case ONNX_DT_FLOAT16: case ONNX_DT_BFLOAT16:
            ((uint16_t *)out->data)[i] = (uint16_t)t->int32_data[i];
            break;
        case ONNX_DT_BOOL: ((uint8_t *)out->data)[i] = t->int32_data[i] != 0; break;
        case ONNX_DT_INT16: ((int16_t *)out->data)[i] = (int16_t)t->int32_data[i]; break;
        case ONNX_DT_UINT16: ((uint16_t *)out->data)[i] = (uint16_t)t->int32_data[i]; break;
        case ONNX_DT_UINT32: ((uint32_t *)out->data)[i] = (uint32_t)t->uint64_data[i]; break;
        case ONNX_DT_UINT64: ((uint64_t *)out->data)[i] = t->uint64_data[i]; break;
        default: ((uint8_t *)out->data)[i] = (uint8_t)t->int32_data[i]; break;
        }
    }
}

static const char *ext_key(const Onnx__TensorProto *t, const char *key)
{
    for (size_t i = 0; i < t->n_external_data; i++)
        if (t->external_data[i]->key && strcmp(t->external_data[i]->key, key) == 0)
            return t->external_data[i]->value;
    return NULL;
}

static int parse_u64(const char *v, uint64_t *out)
{
    if (!v)
        return 1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-')
        return -1;
    *out = x;
    return 0;
}

/* Opens the external data of t, positioned at its offset, after checking
 * that the file (inside base_dir) holds all nbytes.  *fp is the caller's. */
static int open_external(const Onnx__TensorProto *t, const char *base_dir, const tensor_src *s,
                         size_t nbytes, FILE **fp)
{
    const char *loc = ext_key(t, "location");
    *fp = NULL;
    if (!base_dir)
        return terr(s, CV_E_ONNX_EXTERNAL_DATA, "external data is not allowed for a model read from "
                    "memory");
    if (!loc || !*loc)
        return terr(s, CV_E_ONNX_EXTERNAL_DATA, "external data has no 'location'");
    uint64_t off = 0, len = nbytes;
    if (parse_u64(ext_key(t, "offset"), &off) < 0 || parse_u64(ext_key(t, "length"), &len) < 0)
        return terr(s, CV_E_ONNX_EXTERNAL_DATA, "external data has a malformed offset or length");
    if (len != nbytes)
        return terr(s, CV_E_ONNX_EXTERNAL_DATA, "external data length %" PRIu64 " differs from the %zu "
                    "bytes its dims need", len, nbytes);
    char *full = NULL;   /* owned */
    if (cv_fs_resolve_inside(base_dir, loc, &full, s->d) < 0)
        return terr(s, CV_E_ONNX_EXTERNAL_DATA, "external data location '%s' is refused", loc);
    struct stat st;
    int rc = 0;
    *fp = fopen(full, "rb");
    if (!*fp)
        rc = terr(s, CV_E_ONNX_EXTERNAL_DATA, "cannot open external data '%s': %s", loc, strerror(errno));
    else if (fstat(fileno(*fp), &st) != 0 || !S_ISREG(st.st_mode) || off > (uint64_t)st.st_size ||
             nbytes > (uint64_t)st.st_size - off || fseeko(*fp, (off_t)off, SEEK_SET) != 0)
        rc = terr(s, CV_E_ONNX_EXTERNAL_DATA, "external data '%s' is not a file holding offset %" PRIu64
                  " + %zu bytes", loc, off, nbytes);
    free(full);
    if (rc < 0 && *fp) {
        fclose(*fp);
        *fp = NULL;
    }
    return rc;
}

int onnx_tensor_decode(const Onnx__TensorProto *t, cv_arena *a, const char *base_dir,
                       const char *file, const char *what, onnx_const *out, cv_diag *d)
{
    tensor_src s = {file, what && *what ? what : "<unnamed>", d};
    memset(out, 0, sizeof *out);
    if (t->segment)
        return terr(&s, CV_E_ONNX_UNSUPPORTED_FEATURE, "segmented tensors are not supported");
    out->dt = onnx_dtype(t->data_type);
    if (out->dt == CV_DT_INVALID)
        return terr(&s, CV_E_ONNX_UNSUPPORTED_DTYPE, "element type %s (%d) is not supported",
                    onnx_dtype_name(t->data_type), (int)t->data_type);
    if (decode_dims(t, &s, out) < 0)
        return -1;
    size_t es = cv_dtype_size(out->dt), nbytes = (size_t)out->numel * es;
    bool external = t->has_data_location &&
                    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* Sizes are checked against the data present before anything is
     * allocated, so that dims cannot ask for more memory than the file holds. */
    if (!external && t->has_raw_data && t->raw_data.len != nbytes)
        return terr(&s, CV_E_ONNX_TENSOR_DATA, "raw_data holds %zu bytes but its dims need %zu",
                    t->raw_data.len, nbytes);
    if (!external && !t->has_raw_data && typed_count(t) != (size_t)out->numel)
        return terr(&s, CV_E_ONNX_TENSOR_DATA, "holds %zu values but its dims need %zu",
                    typed_count(t), (size_t)out->numel);
    if (!external && t->has_raw_data && out->dt != CV_BOOL) {
        /* Borrowed: the unpacked protobuf outlives the import that reads it,
         * so the weights are copied once, into the module. */
        out->data = nbytes ? (void *)t->raw_data.data : cv_arena_alloc(a, 1);
        return out->data ? 0 : terr(&s, CV_E_OUT_OF_MEMORY, "out of memory");
    }
    FILE *fp = NULL;   /* owned */
    if (external && open_external(t, base_dir, &s, nbytes, &fp) < 0)
        return -1;
    out->data = cv_arena_alloc(a, nbytes ? nbytes : 1);
    int rc = out->data ? 0 : terr(&s, CV_E_OUT_OF_MEMORY, "out of memory for %zu bytes", nbytes);
    if (fp) {
        if (rc == 0 && nbytes && fread(out->data, 1, nbytes, fp) != nbytes)
            rc = terr(&s, CV_E_ONNX_EXTERNAL_DATA, "cannot read %zu bytes of external data", nbytes);
        fclose(fp);
        return rc;
    }
    if (rc < 0)
        return rc;
    if (!t->has_raw_data) {
        decode_typed(t, out);
        return 0;
    }
    if (nbytes)
        memcpy(out->data, t->raw_data.data, nbytes);
    if (out->dt == CV_BOOL)
        for (size_t i = 0; i < nbytes; i++)
            ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
    return 0;
}

int cv_onnx_read_tensor_pb(const void *buf, size_t len, const char *name, cv_tensor *out,
                           cv_diag *d)
{
    memset(out, 0, sizeof *out);
    if (onnx_wire_check(buf, len, &onnx__tensor_proto__descriptor, name, d) < 0)
        return -1;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, buf);  /* owned */
    if (!t)
        return onnx_err_at(d, name, "TensorProto", CV_E_ONNX_BAD_PROTOBUF, "not a valid TensorProto");
    cv_arena a;
    cv_arena_init(&a);
    onnx_const k;
    int rc = onnx_tensor_decode(t, &a, NULL, name, t->name, &k, d);
    if (rc == 0 && cv_tensor_alloc(out, k.dt, k.rank, k.dims) < 0)
        rc = onnx_err_at(d, name, "TensorProto", CV_E_OUT_OF_MEMORY, "cannot allocate the tensor");
    if (rc == 0 && k.numel)
        memcpy(out->data, k.data, (size_t)k.numel * cv_dtype_size(k.dt));
    cv_arena_free(&a);
    onnx__tensor_proto__free_unpacked(t, NULL);
    return rc;
}
