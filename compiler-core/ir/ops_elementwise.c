/* Op family fragment: elementwise ops over two or more operands (arithmetic,
 * comparisons, where, min/max) and cast.  Unary math and activations are in
 * ops_activation.c.
 *
 * Semantics follow ONNX: numpy broadcasting; float math is done in double
 * and rounded once into the result dtype; integer math is exact on int64 and
 * wraps into the result dtype like the C kernels of ONNX Runtime.  Integer
 * division truncates toward zero; division by zero gives 0 (ONNX leaves it
 * undefined; a reference must not trap). */
#include <math.h>
#include <string.h>

#include "compiler-core/ir/ops_internal.h"
#include "compiler-core/backend/codegen.h"

/* ---- shape functions ----------------------------------------------------- */

static int infer_broadcast_all(cv_infer_ctx *c, int first, cv_shape *out)
{
    *out = c->in[first].shape;
    for (int i = first + 1; i < c->n_in; i++)
        if (cv_infer_broadcast(c, out, &c->in[i].shape, out))
            return -1;
    return 0;
}

/* Operands from `first` on share one dtype from `mask`; the result is that
 * dtype (or `result` when given) with the broadcast shape of all operands. */
static int infer_same(cv_infer_ctx *c, int first, unsigned mask, cv_dtype result)
{
    if (cv_infer_dtype_in(c, first, mask))
        return -1;
    for (int i = first + 1; i < c->n_in; i++)
        if (cv_infer_same_dtype(c, first, i))
            return -1;
    if (infer_broadcast_all(c, 0, &c->out[0].shape))
        return -1;
    c->out[0].dtype = result ? result : c->in[first].dtype;
    return 0;
}

static int infer_arith(cv_infer_ctx *c) { return infer_same(c, 0, CV_DT_NUMERIC, 0); }
static int infer_compare(cv_infer_ctx *c) { return infer_same(c, 0, CV_DT_NUMERIC, CV_BOOL); }
static int infer_equal(cv_infer_ctx *c) { return infer_same(c, 0, CV_DT_ALL, CV_BOOL); }

/* pow(T, T1): the exponent may have another numeric dtype (ONNX Pow-15). */
static int infer_pow(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_NUMERIC) || cv_infer_dtype_in(c, 1, CV_DT_NUMERIC))
        return -1;
    c->out[0].dtype = c->in[0].dtype;
    return infer_broadcast_all(c, 0, &c->out[0].shape);
}

static int infer_where(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_BIT(CV_BOOL)))
        return -1;
    return infer_same(c, 1, CV_DT_ALL, 0);
}

static int infer_cast(cv_infer_ctx *c)
{
    const cv_attr *to = cv_op_attr(c->op, "to");
    if (!to || to->dt <= CV_DT_INVALID || to->dt >= CV_DT_COUNT)
        return cv_infer_error(c, CV_E_INVALID_ATTRIBUTE_VALUE, "cast: 'to' must be one of the CU-IR element types");
    c->out[0].dtype = to->dt;
    c->out[0].shape = c->in[0].shape;
    return 0;
}

/* ---- kernels ------------------------------------------------------------- */

typedef double (*f2_fn)(double, double);
typedef int64_t (*i2_fn)(int64_t, int64_t);

/* Signed overflow is undefined in C: wrap through unsigned arithmetic. */
static int64_t wrap(uint64_t v) { return (int64_t)v; }

static double f_add(double x, double y) { return x + y; }
static double f_sub(double x, double y) { return x - y; }
static double f_mul(double x, double y) { return x * y; }
static double f_div(double x, double y) { return x / y; }
static int64_t i_add(int64_t x, int64_t y) { return wrap((uint64_t)x + (uint64_t)y); }
static int64_t i_sub(int64_t x, int64_t y) { return wrap((uint64_t)x - (uint64_t)y); }
static int64_t i_mul(int64_t x, int64_t y) { return wrap((uint64_t)x * (uint64_t)y); }

static int64_t i_div(int64_t x, int64_t y)
{
    if (y == 0)
        return 0;
    if (y == -1)
        return wrap(0u - (uint64_t)x);  /* INT64_MIN / -1 wraps */
    return x / y;
}

/* Exact integer power; a negative exponent truncates 1/x^n toward zero. */
static int64_t i_pow(int64_t x, int64_t y)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    for (uint64_t e = (uint64_t)y; e; e >>= 1) {
        if (e & 1)
            r *= b;
        b *= b;
    }
    return wrap(r);
}

static int eval_binary(cv_eval_ctx *c, f2_fn ff, i2_fn fi)
{
    const cv_tensor *a = c->in[0], *b = c->in[1];
    cv_tensor *o = &c->out[0];
    bool exact = fi && !cv_dtype_is_float(a->dtype) && !cv_dtype_is_float(b->dtype);
    for (int64_t i = 0; i < o->numel; i++) {
        int64_t ia = cv_broadcast_index(a, o->rank, o->dims, i);
        int64_t ib = cv_broadcast_index(b, o->rank, o->dims, i);
        if (exact)
            cv_tensor_set_i64(o, i, fi(cv_tensor_get_i64(a, ia), cv_tensor_get_i64(b, ib)));
        else
            cv_tensor_set(o, i, ff(cv_tensor_get(a, ia), cv_tensor_get(b, ib)));
    }
    return 0;
}

static int eval_add(cv_eval_ctx *c) { return eval_binary(c, f_add, i_add); }
static int eval_sub(cv_eval_ctx *c) { return eval_binary(c, f_sub, i_sub); }
static int eval_mul(cv_eval_ctx *c) { return eval_binary(c, f_mul, i_mul); }
static int eval_div(cv_eval_ctx *c) { return eval_binary(c, f_div, i_div); }
/* An integer base with a float exponent goes through pow() and truncates. */
static int eval_pow(cv_eval_ctx *c) { return eval_binary(c, pow, i_pow); }

enum { CMP_EQ, CMP_LT, CMP_GT };

static bool cmp_int(int kind, int64_t x, int64_t y)
{
    return kind == CMP_EQ ? x == y : kind == CMP_LT ? x < y : x > y;
}

static bool cmp_float(int kind, double x, double y)
{
    return kind == CMP_EQ ? x == y : kind == CMP_LT ? x < y : x > y;  /* NaN: false */
}

static int eval_compare(cv_eval_ctx *c, int kind)
{
    const cv_tensor *a = c->in[0], *b = c->in[1];
    cv_tensor *o = &c->out[0];
    bool exact = !cv_dtype_is_float(a->dtype);
    for (int64_t i = 0; i < o->numel; i++) {
        int64_t ia = cv_broadcast_index(a, o->rank, o->dims, i);
        int64_t ib = cv_broadcast_index(b, o->rank, o->dims, i);
        bool r = exact ? cmp_int(kind, cv_tensor_get_i64(a, ia), cv_tensor_get_i64(b, ib))
                       : cmp_float(kind, cv_tensor_get(a, ia), cv_tensor_get(b, ib));
        cv_tensor_set_i64(o, i, r);
    }
    return 0;
}

static int eval_equal(cv_eval_ctx *c) { return eval_compare(c, CMP_EQ); }
static int eval_less(cv_eval_ctx *c) { return eval_compare(c, CMP_LT); }
static int eval_greater(cv_eval_ctx *c) { return eval_compare(c, CMP_GT); }

/* Copies element bytes, so every dtype is exact. */
static int eval_where(cv_eval_ctx *c)
{
    const cv_tensor *cond = c->in[0];
    cv_tensor *o = &c->out[0];
    size_t es = cv_dtype_size(o->dtype);
    for (int64_t i = 0; i < o->numel; i++) {
        bool take_x = cv_tensor_get_i64(cond, cv_broadcast_index(cond, o->rank, o->dims, i)) != 0;
        const cv_tensor *src = c->in[take_x ? 1 : 2];
        int64_t k = cv_broadcast_index(src, o->rank, o->dims, i);
        memcpy((char *)o->data + (size_t)i * es, (const char *)src->data + (size_t)k * es, es);
    }
    return 0;
}

/* Variadic min/max; NaN propagates like numpy's minimum/maximum. */
static int eval_extreme(cv_eval_ctx *c, bool want_max)
{
    cv_tensor *o = &c->out[0];
    bool exact = !cv_dtype_is_float(o->dtype);
    for (int64_t i = 0; i < o->numel; i++) {
        const cv_tensor *t = c->in[0];
        int64_t k = cv_broadcast_index(t, o->rank, o->dims, i);
        int64_t bi = cv_tensor_get_i64(t, k);
        double bf = cv_tensor_get(t, k);
        for (int j = 1; j < c->n_in; j++) {
            t = c->in[j];
            k = cv_broadcast_index(t, o->rank, o->dims, i);
            if (exact) {
                int64_t v = cv_tensor_get_i64(t, k);
                if (want_max ? v > bi : v < bi)
                    bi = v;
            } else {
                double v = cv_tensor_get(t, k);
                if (!isnan(bf) && (isnan(v) || (want_max ? v > bf : v < bf)))
                    bf = v;
            }
        }
        if (exact)
            cv_tensor_set_i64(o, i, bi);
        else
            cv_tensor_set(o, i, bf);
    }
    return 0;
}

static int eval_max(cv_eval_ctx *c) { return eval_extreme(c, true); }
static int eval_min(cv_eval_ctx *c) { return eval_extreme(c, false); }

/* ONNX Cast: int->int wraps (two's complement), float->int truncates toward
 * zero (saturating out of range, NaN -> 0: ONNX leaves both undefined),
 * anything->bool is v != 0, int->float rounds to nearest. */
static int eval_cast(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    cv_tensor *o = &c->out[0];
    bool from_int = !cv_dtype_is_float(x->dtype);
    for (int64_t i = 0; i < o->numel; i++) {
        if (from_int && o->dtype == CV_F32)  /* one rounding, not two via double */
            ((float *)o->data)[i] = (float)cv_tensor_get_i64(x, i);
        else if (from_int)
            cv_tensor_set_i64(o, i, cv_tensor_get_i64(x, i));
        else
            cv_tensor_set(o, i, cv_tensor_get(x, i));
    }
    return 0;
}

/* ---- the table ----------------------------------------------------------- */

static const cv_attr_schema no_attrs[] = {{NULL, CV_ATTR_NONE, false}};

/* cast: to (dtype, required) */
static const cv_attr_schema cast_attrs[] = {
    {"to", CV_ATTR_DTYPE, true},
    {NULL, CV_ATTR_NONE, false},
};

#define EW CV_OPF_ELEMENTWISE
#define EWC (CV_OPF_ELEMENTWISE | CV_OPF_COMMUTATIVE)

static const cv_op_def defs[] = {
    /* add, sub, mul, div (a, b): same numeric dtype, broadcast; no attributes. */
    {"add", 2, 2, 1, 1, no_attrs, infer_arith, eval_add, cv_cg_add, EWC},
    {"sub", 2, 2, 1, 1, no_attrs, infer_arith, eval_sub, cv_cg_sub, EW},
    {"mul", 2, 2, 1, 1, no_attrs, infer_arith, eval_mul, cv_cg_mul, EWC},
    {"div", 2, 2, 1, 1, no_attrs, infer_arith, eval_div, cv_cg_div, EW},
    /* pow (base, exponent): exponent of any numeric dtype; result has base's. */
    {"pow", 2, 2, 1, 1, no_attrs, infer_pow, eval_pow, cv_cg_pow, EW},
    /* min, max (x, ...): one or more operands of one numeric dtype (ONNX Min/Max). */
    {"min", 1, -1, 1, 1, no_attrs, infer_arith, eval_min, cv_cg_min, EWC},
    {"max", 1, -1, 1, 1, no_attrs, infer_arith, eval_max, cv_cg_max, EWC},
    /* equal (any dtype incl. bool), less, greater (numeric) -> bool. */
    {"equal", 2, 2, 1, 1, no_attrs, infer_equal, eval_equal, cv_cg_equal, EWC},
    {"less", 2, 2, 1, 1, no_attrs, infer_compare, eval_less, cv_cg_less, EW},
    {"greater", 2, 2, 1, 1, no_attrs, infer_compare, eval_greater, cv_cg_greater, EW},
    /* where (cond: bool, x, y): x and y share a dtype; all three broadcast. */
    {"where", 3, 3, 1, 1, no_attrs, infer_where, eval_where, cv_cg_where, EW},
    /* cast {to: dtype, required} */
    {"cast", 1, 1, 1, 1, cast_attrs, infer_cast, eval_cast, cv_cg_cast, EW},
};

const cv_op_family cv_ops_elementwise = {defs, (int)(sizeof defs / sizeof defs[0])};
