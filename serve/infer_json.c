/* The Open Inference Protocol's JSON: an infer request decoded into
 * tensors checked against the model's signature (JSON data or the binary
 * tensor extension), the answer encoded, the model's metadata. */
#include "serve/serve_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    cv_dtype dt;
} dtypes[] = {
    {"BOOL", CV_BOOL}, {"UINT8", CV_U8}, {"UINT16", CV_U16}, {"UINT32", CV_U32},
    {"UINT64", CV_U64}, {"INT8", CV_I8}, {"INT16", CV_I16}, {"INT32", CV_I32},
    {"INT64", CV_I64}, {"FP16", CV_F16}, {"FP32", CV_F32}, {"FP64", CV_F64},
    {"BF16", CV_BF16},
};

const char *sv_dtype_name(cv_dtype t)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dt == t)
            return dtypes[i].name;
    return NULL;
}

static cv_dtype dtype_of(const char *s)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, s) == 0)
            return dtypes[i].dt;
    return CV_DT_INVALID;
}

static int why_(char *why, size_t n, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int why_(char *why, size_t n, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return code;
}

/* ---------------------------------------------------------------- decode */

typedef struct flat {
    cv_tensor *t;
    int64_t at;
    bool bad_type;
} flat;

/* Row-major values of a (possibly nested) data array into t. */
static bool flatten(const json_t *v, flat *f, int depth)
{
    if (depth > CV_MAX_RANK + 1)
        return false;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!flatten(json_array_get(v, i), f, depth + 1))
                return false;
        return true;
    }
    if (f->at >= f->t->numel)
        return f->at++, true;   /* counted, then refused by the caller */
    cv_dtype dt = f->t->dtype;
    if (dt == CV_BOOL) {
        if (!json_is_boolean(v))
            return f->bad_type = true, false;
        cv_dtype_store_i64(dt, f->t->data, f->at++, json_is_true(v));
    } else if (cv_dtype_is_int(dt)) {
        int64_t lo, hi;
        cv_dtype_int_range(dt, &lo, &hi);
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
            return f->bad_type = true, false;
        cv_dtype_store_i64(dt, f->t->data, f->at++, json_integer_value(v));
    } else {
        if (!json_is_number(v))
            return f->bad_type = true, false;
        cv_dtype_store(dt, f->t->data, f->at++, json_number_value(v));
    }
    return true;
}

/* The "shape" array into t's dims, checked against the model's input io. */
static int read_shape(const sv_model *m, const sv_limits *lim, cv_native_io io,
                      const json_t *shape, cv_tensor *t, char *why, size_t wn)
{
    if (!json_is_array(shape) || json_array_size(shape) > CV_MAX_RANK)
        return why_(why, wn, CV_E_SERVE_BAD_REQUEST, "input '%s': shape is an array of at most "
                    "%d sizes", io.name, CV_MAX_RANK);
    int rank = (int)json_array_size(shape);
    if (rank != io.rank)
        return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s' takes rank %d, got %d", io.name,
                    io.rank, rank);
    int64_t numel = 1;
    bool over = false;
    uint64_t esize = cv_dtype_size(io.dtype);
    for (int k = 0; k < rank; k++) {
        const json_t *v = json_array_get(shape, (size_t)k);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > ((int64_t)1 << 53))
            return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s': shape[%d] is not a size",
                        io.name, k);
        int64_t n = json_integer_value(v);
        if (io.dims[k] >= 0 && n != io.dims[k])
            return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s': dimension %d is %lld, the "
                        "model takes %lld", io.name, k, (long long)n, (long long)io.dims[k]);
        t->dims[k] = n;
        if (n && (uint64_t)numel > lim->max_tensor / esize / (uint64_t)n)
            over = true;   /* checked before multiplying: no overflow */
        else
            numel *= n;
    }
    if (over || (uint64_t)numel * esize > lim->max_tensor)
        return why_(why, wn, CV_E_SERVE_TOO_LARGE, "input '%s' is larger than the tensor limit "
                    "(%llu bytes)", io.name, (unsigned long long)lim->max_tensor);
    if (m->cfg.max_batch_size > 0 && (t->dims[0] < 1 || t->dims[0] > m->cfg.max_batch_size))
        return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s': the batch dimension is %lld, "
                    "the model takes 1 to %d", io.name, (long long)t->dims[0],
                    m->cfg.max_batch_size);
    t->dtype = io.dtype;
    t->rank = rank;
    t->numel = numel;
    t->data = sv_pool_get(m->pool, (size_t)numel * esize);
    return t->data ? 0 : why_(why, wn, CV_E_SERVE_RUN_FAILED, "out of memory");
}

typedef struct binpart {
    const char *at;
    size_t left;
} binpart;

static int read_input(const sv_model *m, const sv_limits *lim, const json_t *in, sv_req *r,
                      binpart *bin, char *why, size_t wn)
{
    const char *name = json_string_value(json_object_get(in, "name"));
    const char *dt = json_string_value(json_object_get(in, "datatype"));
    if (!json_is_object(in) || !name || !dt)
        return why_(why, wn, CV_E_SERVE_BAD_REQUEST, "an input needs \"name\", \"datatype\" and "
                    "\"shape\"");
    int idx = -1;
    for (int i = 0; i < cv_native_num_inputs(m->meta); i++)
        if (strcmp(cv_native_input(m->meta, i).name, name) == 0)
            idx = i;
    if (idx < 0)
        return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "model %s has no input '%.64s'", m->name,
                    name);
    cv_native_io io = cv_native_input(m->meta, idx);
    cv_tensor *t = &r->in[idx];
    if (t->data)
        return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s' is given twice", io.name);
    if (dtype_of(dt) != io.dtype)
        return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s' is %s, not %.16s", io.name,
                    sv_dtype_name(io.dtype) ? sv_dtype_name(io.dtype) : "?", dt);
    int code = read_shape(m, lim, io, json_object_get(in, "shape"), t, why, wn);
    if (code)
        return code;
    size_t nbytes = cv_tensor_nbytes(t);
    const json_t *bsize = json_object_get(json_object_get(in, "parameters"), "binary_data_size");
    if (bsize) {
        if (!json_is_integer(bsize) || json_integer_value(bsize) < 0 ||
            (uint64_t)json_integer_value(bsize) != nbytes)
            return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s': binary_data_size is not "
                        "the shape's %zu bytes", io.name, nbytes);
        if (bin->left < nbytes)
            return why_(why, wn, CV_E_SERVE_TRUNCATED, "input '%s': %zu bytes of binary data "
                        "left, %zu needed", io.name, bin->left, nbytes);
        memcpy(t->data, bin->at, nbytes);
        bin->at += nbytes;
        bin->left -= nbytes;
        return 0;
    }
    const json_t *data = json_object_get(in, "data");
    if (!json_is_array(data))
        return why_(why, wn, CV_E_SERVE_BAD_REQUEST, "input '%s' has no \"data\" array (nor "
                    "binary_data_size)", io.name);
    flat f = {.t = t};
    if (!flatten(data, &f, 0))
        return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s': %s", io.name,
                    f.bad_type ? "a value does not fit the datatype" : "data nested too deep");
    if (f.at != t->numel)
        return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s': %lld values for a shape of "
                    "%lld", io.name, (long long)f.at, (long long)t->numel);
    return 0;
}

static bool param_true(const json_t *obj, const char *key)
{
    return json_is_true(json_object_get(json_object_get(obj, "parameters"), key));
}

static int read_outputs(const sv_model *m, const json_t *root, sv_req *r, char *why, size_t wn)
{
    int no = cv_native_num_outputs(m->meta);
    const json_t *outs = json_object_get(root, "outputs");
    bool all_binary = param_true(root, "binary_data_output");
    if (!outs) {
        for (int o = 0; o < no; o++)
            r->want[o] = true, r->binary[o] = all_binary;
        return 0;
    }
    if (!json_is_array(outs))
        return why_(why, wn, CV_E_SERVE_BAD_REQUEST, "\"outputs\" is an array");
    for (size_t i = 0; i < json_array_size(outs); i++) {
        const json_t *o = json_array_get(outs, i);
        const char *name = json_string_value(json_object_get(o, "name"));
        int idx = -1;
        for (int k = 0; name && k < no; k++)
            if (strcmp(cv_native_output(m->meta, k).name, name) == 0)
                idx = k;
        if (idx < 0)
            return why_(why, wn, CV_E_SERVE_BAD_REQUEST, "model %s has no output '%.64s'",
                        m->name, name ? name : "");
        r->want[idx] = true;
        r->binary[idx] = all_binary || param_true(o, "binary_data");
    }
    return 0;
}

static int decode_root(const sv_model *m, const sv_limits *lim, const json_t *root, sv_req *r,
                       binpart *bin, char *why, size_t wn)
{
    const json_t *inputs = json_object_get(root, "inputs");
    if (!json_is_object(root) || !json_is_array(inputs))
        return why_(why, wn, CV_E_SERVE_BAD_REQUEST, "the request is an object with an "
                    "\"inputs\" array");
    const json_t *id = json_object_get(root, "id");
    if (json_is_string(id) && !(r->id = strdup(json_string_value(id))))
        return why_(why, wn, CV_E_SERVE_RUN_FAILED, "out of memory");
    r->n_in = cv_native_num_inputs(m->meta);
    for (size_t i = 0; i < json_array_size(inputs); i++) {
        int code = read_input(m, lim, json_array_get(inputs, i), r, bin, why, wn);
        if (code)
            return code;
    }
    for (int i = 0; i < r->n_in; i++)
        if (!r->in[i].data)
            return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "input '%s' is missing",
                        cv_native_input(m->meta, i).name);
    if (bin->left)
        return why_(why, wn, CV_E_SERVE_TRUNCATED, "%zu bytes of binary data after the last "
                    "input's", bin->left);
    r->rows = m->batchable ? r->in[0].dims[0] : 1;
    for (int i = 1; m->batchable && i < r->n_in; i++)
        if (r->in[i].dims[0] != r->rows)
            return why_(why, wn, CV_E_SERVE_BAD_TENSOR, "the inputs' batch dimensions differ");
    return read_outputs(m, root, r, why, wn);
}

int sv_infer_decode(const sv_model *m, const sv_limits *lim, const char *body, size_t len,
                    int64_t hdr_len, sv_req *r, char *why, size_t wn)
{
    size_t jlen = len;
    if (hdr_len >= 0) {
        if ((uint64_t)hdr_len > len)
            return why_(why, wn, CV_E_SERVE_TRUNCATED, "Inference-Header-Content-Length is %lld, "
                        "the body %zu bytes", (long long)hdr_len, len);
        jlen = (size_t)hdr_len;
    }
    json_error_t err;
    json_t *root = json_loadb(body, jlen, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return why_(why, wn, CV_E_SERVE_BAD_REQUEST, "the request is not JSON: %s (line %d, "
                    "column %d)", err.text, err.line, err.column);
    binpart bin = {.at = body + jlen, .left = len - jlen};
    int code = decode_root(m, lim, root, r, &bin, why, wn);
    json_decref(root);
    return code;
}

/* ---------------------------------------------------------------- encode */

static json_t *shape_json(const cv_tensor *t)
{
    json_t *a = json_array();
    for (int k = 0; k < t->rank; k++)
        json_array_append_new(a, json_integer(t->dims[k]));
    return a;
}

static json_t *data_json(const cv_tensor *t)
{
    json_t *a = json_array();
    for (int64_t i = 0; i < t->numel; i++) {
        json_t *v;
        if (t->dtype == CV_BOOL)
            v = json_boolean(cv_dtype_load_i64(t->dtype, t->data, i));
        else if (cv_dtype_is_int(t->dtype))
            v = json_integer(cv_dtype_load_i64(t->dtype, t->data, i));
        else {
            double x = cv_dtype_load(t->dtype, t->data, i);
            v = isfinite(x) ? json_real(x) : json_null();   /* JSON has no NaN or Inf */
        }
        json_array_append_new(a, v);
    }
    return a;
}

int sv_infer_encode(const sv_model *m, const sv_req *r, char **body, size_t *len,
                    int64_t *hdr_len)
{
    json_t *root = json_object();
    json_t *outs = json_array();
    json_object_set_new(root, "model_name", json_string(m->name));
    json_object_set_new(root, "model_version", json_string(m->version));
    if (r->id)
        json_object_set_new(root, "id", json_string(r->id));
    size_t bin_total = 0;
    for (int o = 0; o < cv_native_num_outputs(m->meta); o++) {
        if (!r->want[o])
            continue;
        const cv_tensor *t = &r->out[o];
        json_t *jo = json_object();
        json_object_set_new(jo, "name", json_string(cv_native_output(m->meta, o).name));
        json_object_set_new(jo, "datatype", json_string(sv_dtype_name(t->dtype)));
        json_object_set_new(jo, "shape", shape_json(t));
        if (r->binary[o]) {
            json_object_set_new(jo, "parameters", json_pack("{sI}", "binary_data_size",
                                                            (json_int_t)cv_tensor_nbytes(t)));
            bin_total += cv_tensor_nbytes(t);
        } else {
            json_object_set_new(jo, "data", data_json(t));
        }
        json_array_append_new(outs, jo);
    }
    json_object_set_new(root, "outputs", outs);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text)
        return -1;
    size_t tl = strlen(text);
    *hdr_len = -1;
    if (bin_total == 0) {
        *body = text;
        *len = tl;
        return 0;
    }
    char *b = malloc(tl + bin_total);
    if (!b) {
        free(text);
        return -1;
    }
    memcpy(b, text, tl);
    free(text);
    size_t at = tl;
    for (int o = 0; o < cv_native_num_outputs(m->meta); o++)
        if (r->want[o] && r->binary[o]) {
            memcpy(b + at, r->out[o].data, cv_tensor_nbytes(&r->out[o]));
            at += cv_tensor_nbytes(&r->out[o]);
        }
    *body = b;
    *len = at;
    *hdr_len = (int64_t)tl;
    return 0;
}

/* ---------------------------------------------------------------- metadata */

static json_t *io_json(const sv_model *m, cv_native_io io)
{
    json_t *shape = json_array();
    for (int k = 0; k < io.rank; k++)
        json_array_append_new(shape, json_integer(io.dims[k] >= 0 ? io.dims[k] : -1));
    return json_pack("{s:s, s:s, s:o}", "name", io.name, "datatype",
                     sv_dtype_name(io.dtype) ? sv_dtype_name(io.dtype) : "?", "shape", shape);
}

json_t *sv_model_metadata(const sv_model *m)
{
    json_t *ins = json_array(), *outs = json_array();
    for (int i = 0; i < cv_native_num_inputs(m->meta); i++)
        json_array_append_new(ins, io_json(m, cv_native_input(m->meta, i)));
    for (int i = 0; i < cv_native_num_outputs(m->meta); i++)
        json_array_append_new(outs, io_json(m, cv_native_output(m->meta, i)));
    return json_pack("{s:s, s:[s], s:s, s:o, s:o, s:i}", "name", m->name, "versions",
                     m->version, "platform", "cuvil_native", "inputs", ins, "outputs", outs,
                     "max_batch_size", m->cfg.max_batch_size);
}
