/* ONNX Einsum and CumSum as broadcast products and sums: every operand is
 * laid out over one shared list of index labels (size-1 dims where it lacks
 * a label), the operands are multiplied and the labels the output lacks are
 * summed away.  A label repeated in one operand (a diagonal) and CumSum's
 * running sum are products with a 0/1 mask summed over one axis.  Exact for
 * integers; floats sum in the reduce kernels' order.  Shapes must be static. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { MAX_OPERANDS = 8, MAX_LABELS = 2 * CV_MAX_RANK };

/* A 0/1 mask of x's dtype with extent n at axes p and q (1 elsewhere, rank
 * r): mask[i, j] = keep(i, j, mode). */
enum { MASK_EQ, MASK_LE, MASK_LT, MASK_GE, MASK_GT };

static cv_value *mask(onnx_ctx *c, cv_dtype dt, int r, int p, int q, int64_t n, int mode)
{
    int64_t dims[CV_MAX_RANK + 1];
    for (int i = 0; i < r; i++)
        dims[i] = i == p || i == q ? n : 1;
    onnx_const *k = onnx_const_new(c, dt, r, dims);
    for (int64_t i = 0; k && i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            bool on = mode == MASK_EQ ? i == j : mode == MASK_LE ? i <= j : mode == MASK_LT ? i < j
                    : mode == MASK_GE ? i >= j : i > j;
            onnx_const_set_i64(k, i * n + j, on);
        }
    return onnx_const_value(c, k, "mask");
}

/* x with a size-1 axis inserted at `axis`. */
static cv_value *unsqueeze1(onnx_ctx *c, cv_value *x, int64_t axis)
{
    return onnx_op_ints(c, "unsqueeze", x, "axes", &axis, 1);
}

/* ---- CumSum ---------------------------------------------------------------- */

/* y[.., j, ..] = sum_i x[.., i, ..] * m[i, j]: x gets a new axis after
 * `axis` for j, the mask spans (axis, axis + 1), the sum runs over axis. */
static int lower_cumsum(onnx_ctx *c)
{
    cv_value *x = onnx_in_value(c, 0);
    const onnx_const *ak = onnx_in_const(c, 1, "axis");
    int64_t exclusive, reverse, axis, n;
    if (!x || !ak || onnx_attr_int(c, "exclusive", 0, &exclusive) < 0 ||
        onnx_attr_int(c, "reverse", 0, &reverse) < 0)
        return -1;
    if (ak->numel != 1 || !onnx_const_is_int(ak))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis must be one integer");
    int r = x->type.shape.rank, ax;
    axis = onnx_const_i64(ak, 0);
    if (r < 1 || onnx_norm_axis(c, axis, r, &ax) < 0 || onnx_static_extent(c, x, ax, &n) < 0)
        return r < 1 ? onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "CumSum needs a rank >= 1 input") : -1;
    int mode = reverse ? (exclusive ? MASK_GT : MASK_GE) : (exclusive ? MASK_LT : MASK_LE);
    cv_value *m = mask(c, x->type.dtype, r + 1, ax, ax + 1, n, mode);
    cv_value *prod = onnx_binary(c, "mul", unsqueeze1(c, x, ax + 1), m);
    return onnx_bind_value(c, 0, prod ? onnx_sum_axis(c, prod, ax, 0) : NULL);
}

/* ---- Einsum ---------------------------------------------------------------- */

/* Labels are letters; the dims an ellipsis stands for get labels 128 + k,
 * k counted from the right, so that they broadcast right-aligned. */
typedef struct term {
    int n;
    int label[CV_MAX_RANK];
} term;

typedef struct equation {
    term in[MAX_OPERANDS];
    int n_in;
    term out;
    int ell_rank;               /* the most dims an ellipsis stands for */
} equation;

/* Parses one term (spaces already removed) of an operand of rank `rank`
 * (-1 for the output, whose ellipsis takes ell_rank dims). */
static int parse_term(onnx_ctx *c, const char *s, size_t len, int rank, equation *eq, term *t)
{
    int letters = 0, ell = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.' || ell++)
                return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "malformed ellipsis in the equation");
            i += 2;
        } else if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) {
            letters++;
        } else {
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "unexpected '%c' in the equation", s[i]);
        }
    }
    int ell_dims = rank < 0 ? eq->ell_rank : rank - letters;
    if ((rank >= 0 && (ell_dims < 0 || (!ell && ell_dims))) || letters + ell_dims > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "an equation term does not match its operand's "
                        "rank %d", rank);
    if (ell_dims > eq->ell_rank)
        eq->ell_rank = ell_dims;
    t->n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int k = ell_dims - 1; k >= 0; k--)
                t->label[t->n++] = 128 + k;
            i += 2;
        } else {
            t->label[t->n++] = (unsigned char)s[i];
        }
    }
    return 0;
}

static int parse_equation(onnx_ctx *c, const char *text, cv_value *const *x, int n, equation *eq)
{
    char s[256];
    size_t len = 0;
    for (const char *p = text; *p; p++)
        if (*p != ' ') {
            if (len + 1 >= sizeof s)
                return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "the equation is too long");
            s[len++] = *p;
        }
    s[len] = 0;
    memset(eq, 0, sizeof *eq);
    const char *arrow = strstr(s, "->");
    size_t lhs = arrow ? (size_t)(arrow - s) : len;
    for (size_t at = 0; at <= lhs;) {
        size_t e = at;
        while (e < lhs && s[e] != ',')
            e++;
        if (eq->n_in >= n || parse_term(c, s + at, e - at, x[eq->n_in]->type.shape.rank, eq,
                                        &eq->in[eq->n_in]) < 0)
            return eq->n_in >= n ? onnx_err(c, CV_E_ONNX_ARITY, "the equation has more terms than "
                                            "the %d inputs", n) : -1;
        eq->n_in++;
        at = e + 1;
    }
    if (eq->n_in != n)
        return onnx_err(c, CV_E_ONNX_ARITY, "the equation has %d terms for %d inputs", eq->n_in, n);
    if (arrow)
        return parse_term(c, arrow + 2, len - lhs - 2, -1, eq, &eq->out);
    /* Implicit output: the ellipsis dims, then the letters used once, sorted. */
    int count[256] = {0};
    for (int i = 0; i < eq->n_in; i++)
        for (int k = 0; k < eq->in[i].n; k++)
            count[eq->in[i].label[k]]++;
    for (int k = eq->ell_rank - 1; k >= 0; k--)
        eq->out.label[eq->out.n++] = 128 + k;
    for (int l = 'A'; l <= 'z'; l++)
        if (count[l] == 1 && eq->out.n < CV_MAX_RANK)
            eq->out.label[eq->out.n++] = l;
    return 0;
}

/* Sums a label repeated in one operand down to its diagonal. */
static cv_value *take_diagonals(onnx_ctx *c, cv_value *x, term *t)
{
    for (int p = 0; x && p < t->n; p++)
        for (int q = p + 1; x && q < t->n; q++) {
            if (t->label[p] != t->label[q])
                continue;
            int64_t n;
            if (onnx_static_extent(c, x, p, &n) < 0)
                return NULL;
            cv_value *m = mask(c, x->type.dtype, t->n, p, q, n, MASK_EQ);
            x = onnx_sum_axis(c, onnx_binary(c, "mul", x, m), q, 0);
            memmove(&t->label[q], &t->label[q + 1], sizeof t->label[0] * (size_t)(t->n - q - 1));
            t->n--;
            q--;
        }
    return x;
}

/* x (labels t) transposed into the order of `all` and reshaped to rank
 * n_all with 1 for each label it lacks. */
static cv_value *align(onnx_ctx *c, cv_value *x, const term *t, const int *all, int n_all)
{
    int64_t perm[CV_MAX_RANK], dims[MAX_LABELS];
    int np = 0;
    for (int a = 0; a < n_all; a++) {
        dims[a] = 1;
        for (int k = 0; k < t->n; k++)
            if (t->label[k] == all[a]) {
                perm[np++] = k;
                if (onnx_static_extent(c, x, k, &dims[a]) < 0)
                    return NULL;
            }
    }
    bool identity = true;
    for (int k = 0; k < np; k++)
        identity &= perm[k] == k;
    if (!identity)
        x = onnx_op_ints(c, "transpose", x, "perm", perm, np);
    return x && n_all != t->n ? onnx_op_ints(c, "reshape", x, "shape", dims, n_all) : x;
}

static int lower_einsum(onnx_ctx *c)
{
    const char *text = NULL;
    int n = onnx_n_in(c);
    cv_value *x[MAX_OPERANDS];
    if (n < 1 || n > MAX_OPERANDS)
        return onnx_err(c, CV_E_ONNX_ARITY, "Einsum takes 1 to %d inputs, got %d", MAX_OPERANDS, n);
    for (int i = 0; i < n; i++)
        if (!(x[i] = onnx_in_value(c, i)))
            return -1;
    equation eq;
    if (onnx_attr_string(c, "equation", NULL, &text) < 0)
        return -1;
    if (!text)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "attribute 'equation' is required");
    if (parse_equation(c, text, x, n, &eq) < 0)
        return -1;
    int all[MAX_LABELS], n_all = 0;
    for (int k = 0; k < eq.out.n; k++)
        all[n_all++] = eq.out.label[k];
    for (int i = 0; i < n; i++) {
        if (!(x[i] = take_diagonals(c, x[i], &eq.in[i])))
            return -1;
        for (int k = 0; k < eq.in[i].n; k++) {
            bool seen = false;
            for (int a = 0; a < n_all; a++)
                seen |= all[a] == eq.in[i].label[k];
            if (!seen && n_all == CV_MAX_RANK)
                return onnx_err(c, CV_E_ONNX_RANK_LIMIT, "the equation uses more than %d labels",
                                CV_MAX_RANK);
            if (!seen)
                all[n_all++] = eq.in[i].label[k];
        }
    }
    cv_value *prod = NULL;
    for (int i = 0; i < n; i++) {
        cv_value *a = align(c, x[i], &eq.in[i], all, n_all);
        prod = !a ? NULL : prod ? onnx_binary(c, "mul", prod, a) : a;
        if (!prod)
            return -1;
    }
    if (n_all > eq.out.n) {  /* the summed labels follow the output's */
        int64_t axes[CV_MAX_RANK];
        for (int a = eq.out.n; a < n_all; a++)
            axes[a - eq.out.n] = a;
        cv_op *o = onnx_op(c, "reduce_sum", &prod, 1);
        if (o) {
            cv_op_set_ints(o, "axes", axes, n_all - eq.out.n);
            cv_op_set_int(o, "keepdims", 0);
        }
        prod = onnx_finish(c, o);
    }
    return onnx_bind_value(c, 0, prod);
}

static const onnx_op_entry entries[] = {
    {"CumSum", 11, lower_cumsum, "mul reduce_sum unsqueeze", 0x2u},
    {"Einsum", 12, lower_einsum, "mul reduce_sum transpose reshape", 0},
};

const onnx_op_family onnx_ops_einsum = {entries, sizeof entries / sizeof entries[0]};
