/* ONNX TfIdfVectorizer over integer tokens (pool_int64s) as elementwise
 * CU-IR: the count of an n-gram g with skip s is the sum over start
 * positions i of prod_k [x[i + k (s + 1)] == g[k]], each factor a shifted
 * slice compared with a constant.  Unigrams count once; longer grams once
 * per skip 0..max_skip_count.  N-grams never cross rows of a 2-D input.
 * The sequence length must be static. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { TFIDF_MAX_POOL = 4096, TFIDF_MAX_OUT = 1 << 16 };

typedef struct tfidf {
    int64_t min_n, max_n, max_skip, mode;   /* mode: 0 TF, 1 IDF, 2 TFIDF */
    int64_t pool[TFIDF_MAX_POOL], counts[64], indexes[TFIDF_MAX_POOL];
    double weights[TFIDF_MAX_POOL];
    int n_pool, n_counts, n_indexes, n_weights;
    int64_t n_out;
} tfidf;

static int read_tfidf(onnx_ctx *c, tfidf *t)
{
    const char *mode;
    if (onnx_attr_int(c, "min_gram_length", 0, &t->min_n) < 0 ||
        onnx_attr_int(c, "max_gram_length", 0, &t->max_n) < 0 ||
        onnx_attr_int(c, "max_skip_count", 0, &t->max_skip) < 0 ||
        onnx_attr_string(c, "mode", "", &mode) < 0)
        return -1;
    t->mode = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
    if (t->mode < 0)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "mode must be TF, IDF or TFIDF, got '%s'", mode);
    if (onnx_attr(c, "pool_strings"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "string pools are not supported");
    t->n_pool = onnx_attr_ints(c, "pool_int64s", t->pool, TFIDF_MAX_POOL);
    t->n_counts = onnx_attr_ints(c, "ngram_counts", t->counts, 64);
    t->n_indexes = onnx_attr_ints(c, "ngram_indexes", t->indexes, TFIDF_MAX_POOL);
    t->n_weights = onnx_attr_floats(c, "weights", t->weights, TFIDF_MAX_POOL);
    if (t->n_pool == -2 || t->n_counts == -2 || t->n_indexes == -2 || t->n_weights == -2)
        return -1;
    if (t->min_n < 1 || t->max_n < t->min_n || t->max_n > t->n_counts || t->max_skip < 0 ||
        t->max_skip > 64 || t->n_pool < 0 || t->n_counts < 1)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "inconsistent gram lengths, skips or ngram_counts");
    t->n_out = 0;
    for (int i = 0; i < t->n_indexes; i++) {
        if (t->indexes[i] < 0 || t->indexes[i] >= TFIDF_MAX_OUT)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "ngram_indexes[%d] is out of range", i);
        if (t->indexes[i] + 1 > t->n_out)
            t->n_out = t->indexes[i] + 1;
    }
    if (t->n_out > 64)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "more than 64 output features are not "
                        "supported");
    if (t->n_weights >= 0 && t->n_weights != t->n_indexes)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "weights and ngram_indexes differ in length");
    return 0;
}

/* x[..., from : from + len] */
static cv_value *shifted(onnx_ctx *c, cv_value *x, int64_t from, int64_t len)
{
    cv_op *o = onnx_op(c, "slice", &x, 1);
    if (o) {
        int64_t end = from + len, axis = x->type.shape.rank - 1;
        cv_op_set_ints(o, "starts", &from, 1);
        cv_op_set_ints(o, "ends", &end, 1);
        cv_op_set_ints(o, "axes", &axis, 1);
    }
    return onnx_finish(c, o);
}

/* Occurrences of gram[0..n) in x (f32, the last axis kept as 1). */
static cv_value *gram_count(onnx_ctx *c, const tfidf *t, cv_value *x, int64_t len,
                            const int64_t *gram, int n)
{
    cv_value *sum = NULL;
    int64_t last = x->type.shape.rank - 1;
    for (int64_t s = 0; s <= (n > 1 ? t->max_skip : 0); s++) {
        int64_t span = (n - 1) * (s + 1), starts = len - span;
        if (starts <= 0)
            break;
        cv_value *hit = NULL;
        for (int k = 0; k < n; k++) {
            cv_value *eq = onnx_binary(c, "equal", shifted(c, x, k * (s + 1), starts),
                                       onnx_scalar(c, x->type.dtype, (double)gram[k]));
            cv_op *o = eq ? onnx_op(c, "cast", &eq, 1) : NULL;
            if (o)
                cv_op_set_dtype(o, "to", CV_F32);
            cv_value *f = onnx_finish(c, o);
            hit = hit ? onnx_binary(c, "mul", hit, f) : f;
        }
        cv_value *cnt = hit ? onnx_sum_axis(c, hit, last, 1) : NULL;
        sum = sum ? onnx_binary(c, "add", sum, cnt) : cnt;
        if (!sum)
            return NULL;
    }
    if (sum)
        return sum;
    int64_t dims[CV_MAX_RANK];   /* no start position fits: zero */
    for (int i = 0; i < x->type.shape.rank; i++)
        dims[i] = x->type.shape.d[i].n;
    dims[last] = 1;
    return onnx_const_value(c, onnx_const_new(c, CV_F32, (int)last + 1, dims), "zeros");
}

static int lower_tfidf(onnx_ctx *c)
{
    tfidf *tp = cv_arena_alloc(c->a, sizeof *tp);   /* large: not on the stack */
    cv_value *x = onnx_in_value(c, 0);
    if (!tp || !x || read_tfidf(c, tp) < 0)
        return -1;
    int r = x->type.shape.rank;
    int64_t len;
    if ((r != 1 && r != 2) || !cv_dtype_is_int(x->type.dtype))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "the input must be a 1-D or 2-D integer "
                        "tensor");
    int64_t rows = 1;
    if (onnx_static_extent(c, x, r - 1, &len) < 0 || (r == 2 && onnx_static_extent(c, x, 0,
                                                                                  &rows) < 0))
        return -1;
    cv_value **col = cv_arena_alloc_array(c->a, (size_t)tp->n_out + 1, sizeof *col);
    if (!col)
        return onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    int g = 0;   /* gram number = position in ngram_indexes */
    for (int n = 1; n <= tp->n_counts; n++) {
        int64_t from = tp->counts[n - 1], to = n < tp->n_counts ? tp->counts[n] : tp->n_pool;
        if (from < 0 || to < from || to > tp->n_pool || (to - from) % n)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "ngram_counts does not split the pool");
        for (int64_t at = from; at < to; at += n, g++) {
            if (g >= tp->n_indexes)
                return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "ngram_indexes is shorter than the pool");
            if (n < tp->min_n || n > tp->max_n)
                continue;
            cv_value *v = gram_count(c, tp, x, len, &tp->pool[at], n);
            /* weights are indexed like the output (ONNX Runtime's reading) */
            int64_t out_at = tp->indexes[g];
            if (tp->n_weights > 0 && out_at >= tp->n_weights)
                return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "no weight for output %lld",
                                (long long)out_at);
            double w = tp->n_weights > 0 ? tp->weights[out_at] : 1;
            if (v && tp->mode == 1) {   /* IDF: 1 where present (counts are whole) */
                cv_op *o = onnx_op(c, "clip", &v, 1);
                if (o)
                    cv_op_set_float(o, "max", 1);
                v = onnx_finish(c, o);
            }
            if (v && tp->mode != 0 && w != 1)
                v = onnx_binary(c, "mul", v, onnx_scalar(c, CV_F32, w));
            if (!v)
                return -1;
            col[out_at] = v;
        }
    }
    for (int64_t i = 0; i < tp->n_out; i++)
        if (!col[i]) {
            int64_t dims[2] = {rows, 1};
            col[i] = onnx_const_value(c, onnx_const_new(c, CV_F32, r, r == 2 ? dims : &dims[1]),
                                      "zeros");
            if (!col[i])
                return -1;
        }
    cv_value *y = col[0];
    if (tp->n_out > 1) {
        cv_op *o = onnx_op(c, "concat", col, (int)tp->n_out);
        if (o)
            cv_op_set_int(o, "axis", r - 1);
        y = onnx_finish(c, o);
    }
    return onnx_bind_value(c, 0, y);
}

static const onnx_op_entry entries[] = {
    {"TfIdfVectorizer", 9, lower_tfidf, "slice equal cast mul add reduce_sum concat", 0},
};

const onnx_op_family onnx_ops_tfidf = {entries, sizeof entries / sizeof entries[0]};
