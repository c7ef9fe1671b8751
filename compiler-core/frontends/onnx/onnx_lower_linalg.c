/* ONNX Det for small matrices (n <= 4): the Leibniz sum over permutations
 * of products of single elements, each a slice of the last two axes. */
#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { DET_MAX_N = 4 };

/* x[..., i, j] keeping the two axes (size 1 each). */
static cv_value *element(onnx_ctx *c, cv_value *x, int r, int64_t i, int64_t j)
{
    int64_t starts[2] = {i, j}, ends[2] = {i + 1, j + 1}, axes[2] = {r - 2, r - 1};
    return onnx_slice(c, x, 2, axes, starts, ends, NULL);
}

/* Visits the permutations of perm[k..n) by swaps (each flips the sign),
 * adding sign * prod x[i, perm[i]] into *sum. */
static void leibniz(onnx_ctx *c, cv_value *x, int r, int *perm, int k, int n, int sign,
                    cv_value **sum)
{
    if (k == n) {
        cv_value *p = element(c, x, r, 0, perm[0]);
        for (int i = 1; i < n; i++)
            p = onnx_binary(c, "mul", p, element(c, x, r, i, perm[i]));
        if (!*sum)
            *sum = sign > 0 ? p : onnx_unary(c, "neg", p);
        else
            *sum = onnx_binary(c, sign > 0 ? "add" : "sub", *sum, p);
        return;
    }
    for (int i = k; i < n; i++) {
        int t = perm[k];
        perm[k] = perm[i];
        perm[i] = t;
        leibniz(c, x, r, perm, k + 1, n, i == k ? sign : -sign, sum);
        perm[i] = perm[k];
        perm[k] = t;
    }
}

static int lower_det(onnx_ctx *c)
{
    cv_value *x = onnx_in_value(c, 0);
    if (!x)
        return -1;
    int r = x->type.shape.rank;
    int64_t n, m;
    if (r < 2 || onnx_static_extent(c, x, r - 1, &n) < 0 || onnx_static_extent(c, x, r - 2, &m) < 0)
        return r < 2 ? onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "Det needs a rank >= 2 input") : -1;
    if (n != m || n < 1 || n > DET_MAX_N)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "Det of %lldx%lld matrices is not supported "
                        "(square, at most %d)", (long long)m, (long long)n, DET_MAX_N);
    int perm[DET_MAX_N] = {0, 1, 2, 3};
    cv_value *sum = NULL;
    leibniz(c, x, r, perm, 0, (int)n, 1, &sum);
    int64_t axes[2] = {r - 2, r - 1};
    return onnx_bind_value(c, 0, onnx_op_ints(c, "squeeze", sum, "axes", axes, 2));
}

static const onnx_op_entry entries[] = {
    {"Det", 11, lower_det, "slice mul add sub neg squeeze", 0},
};

const onnx_op_family onnx_ops_linalg = {entries, sizeof entries / sizeof entries[0]};
