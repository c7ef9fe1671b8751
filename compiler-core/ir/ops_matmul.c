/* Op family fragment: matrix products (matmul with numpy semantics, gemm). */
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

static int matmul_infer(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_NUMERIC) || cv_infer_same_dtype(c, 0, 1))
        return -1;
    const cv_shape *a = &c->in[0].shape, *b = &c->in[1].shape;
    if (a->rank < 1 || b->rank < 1)
        return cv_infer_error(c, CV_E_RANK_MISMATCH, "matmul: operands must have rank >= 1, got %d and %d",
                              a->rank, b->rank);
    /* numpy: a 1-D a is a row [1,K], a 1-D b a column [K,1]; both extra axes are dropped. */
    cv_dim ka = a->d[a->rank - 1], kb = b->d[b->rank == 1 ? 0 : b->rank - 2];
    char s1[32], s2[32];
    if (!cv_dim_equal(ka, kb))
        return cv_infer_error(c, CV_E_INNER_DIMENSION_MISMATCH, "matmul: inner dimensions differ (%s vs %s)",
                              cv_nn_dim_fmt(ka, s1, sizeof s1), cv_nn_dim_fmt(kb, s2, sizeof s2));
    cv_shape ba = {.rank = a->rank > 2 ? a->rank - 2 : 0};
    cv_shape bb = {.rank = b->rank > 2 ? b->rank - 2 : 0};
    memcpy(ba.d, a->d, (size_t)ba.rank * sizeof ba.d[0]);
    memcpy(bb.d, b->d, (size_t)bb.rank * sizeof bb.d[0]);
    cv_shape *o = &c->out[0].shape;
    if (cv_infer_broadcast(c, &ba, &bb, o))
        return -1;
    if (a->rank >= 2)
        o->d[o->rank++] = a->d[a->rank - 2];
    if (b->rank >= 2)
        o->d[o->rank++] = b->d[b->rank - 1];
    c->out[0].dtype = c->in[0].dtype;
    return 0;
}

/* Offset of batch item `bi` of the broadcast batch dims in an operand whose
 * own batch dims are the first `rank` dims of t. */
static int64_t batch_offset(const cv_tensor *t, int rank, int out_rank, const int64_t *out_dims,
                            int64_t bi)
{
    cv_tensor view = {.rank = rank};
    memcpy(view.dims, t->dims, (size_t)rank * sizeof view.dims[0]);
    return cv_broadcast_index(&view, out_rank, out_dims, bi);
}

static int matmul_eval(cv_eval_ctx *c)
{
    const cv_tensor *A = c->in[0], *B = c->in[1];
    cv_tensor *Y = &c->out[0];
    int ra = A->rank, rb = B->rank;
    int64_t m = ra >= 2 ? A->dims[ra - 2] : 1, k = A->dims[ra - 1];
    int64_t n = rb >= 2 ? B->dims[rb - 1] : 1;
    int yb = Y->rank - (ra >= 2) - (rb >= 2);  /* broadcast batch rank */
    int64_t nbatch = 1;
    for (int i = 0; i < yb; i++)
        nbatch *= Y->dims[i];
    const double *a = cv_tensor_to_f64(A, c->scratch), *b = cv_tensor_to_f64(B, c->scratch);
    double *y = cv_arena_alloc_array(c->scratch, (size_t)(Y->numel ? Y->numel : 1), sizeof *y);
    if (!a || !b || !y)
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "matmul: out of memory");
    for (int64_t bi = 0; bi < nbatch; bi++) {
        const double *ap = a + batch_offset(A, ra > 2 ? ra - 2 : 0, yb, Y->dims, bi) * m * k;
        const double *bp = b + batch_offset(B, rb > 2 ? rb - 2 : 0, yb, Y->dims, bi) * k * n;
        double *yp = y + bi * m * n;  /* zeroed by the arena */
        /* Row updates (i, q, j) walk b contiguously; each output still sums
         * over q in order. */
        for (int64_t i = 0; i < m; i++)
            for (int64_t q = 0; q < k; q++) {
                double av = ap[i * k + q];
                for (int64_t j = 0; j < n; j++)
                    yp[i * n + j] += av * bp[q * n + j];
            }
    }
    cv_tensor_from_f64(Y, y);
    return 0;
}

static int gemm_infer(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_NUMERIC) || cv_infer_same_dtype(c, 0, 1) ||
        (c->n_in > 2 && cv_infer_same_dtype(c, 0, 2)) || cv_nn_rank(c, 0, 2, "a") ||
        cv_nn_rank(c, 1, 2, "b"))
        return -1;
    bool ta = cv_op_int(c->op, "trans_a", 0) != 0, tb = cv_op_int(c->op, "trans_b", 0) != 0;
    const cv_dim *a = c->in[0].shape.d, *b = c->in[1].shape.d;
    cv_dim m = a[ta ? 1 : 0], ka = a[ta ? 0 : 1], kb = b[tb ? 1 : 0], n = b[tb ? 0 : 1];
    char s1[32], s2[32];
    if (!cv_dim_equal(ka, kb))
        return cv_infer_error(c, CV_E_INNER_DIMENSION_MISMATCH, "gemm: inner dimensions differ (%s vs %s)",
                              cv_nn_dim_fmt(ka, s1, sizeof s1), cv_nn_dim_fmt(kb, s2, sizeof s2));
    cv_shape *o = &c->out[0].shape;
    *o = (cv_shape){.rank = 2, .d = {m, n}};
    c->out[0].dtype = c->in[0].dtype;
    if (c->n_in < 3)
        return 0;
    /* c broadcasts one way only: each of its (right-aligned) dims is 1 or the result's. */
    const cv_shape *cs = &c->in[2].shape;
    bool ok = cs->rank <= 2;
    for (int i = 0; ok && i < cs->rank; i++) {
        cv_dim d = cs->d[i], want = o->d[2 - cs->rank + i];
        ok = (!d.sym && d.n == 1) || cv_dim_equal(d, want);
    }
    if (!ok) {
        char ts[96], s3[32];
        cv_type_format(&c->in[2], ts, sizeof ts);
        return cv_infer_error(c, CV_E_BROADCAST_MISMATCH, "gemm: c of type %s does not broadcast to [%s,%s]", ts,
                              cv_nn_dim_fmt(m, s2, sizeof s2), cv_nn_dim_fmt(n, s3, sizeof s3));
    }
    return 0;
}

static int gemm_eval(cv_eval_ctx *c)
{
    const cv_tensor *A = c->in[0], *B = c->in[1], *C = c->n_in > 2 ? c->in[2] : NULL;
    cv_tensor *Y = &c->out[0];
    bool ta = cv_op_int(c->op, "trans_a", 0) != 0, tb = cv_op_int(c->op, "trans_b", 0) != 0;
    double alpha = cv_op_float(c->op, "alpha", 1.0), beta = cv_op_float(c->op, "beta", 1.0);
    int64_t m = Y->dims[0], n = Y->dims[1], k = A->dims[ta ? 0 : 1];
    const double *a = cv_tensor_to_f64(A, c->scratch), *b = cv_tensor_to_f64(B, c->scratch);
    const double *cc = C ? cv_tensor_to_f64(C, c->scratch) : NULL;
    double *y = cv_arena_alloc_array(c->scratch, (size_t)(Y->numel ? Y->numel : 1), sizeof *y);
    if (!a || !b || !y || (C && !cc))
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "gemm: out of memory");
    /* Element (i,q) of op(A) and (q,j) of op(B), whatever the transposition. */
    int64_t as_i = ta ? 1 : k, as_q = ta ? m : 1, bs_q = tb ? 1 : n, bs_j = tb ? k : 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t q = 0; q < k; q++)
                acc += a[i * as_i + q * as_q] * b[q * bs_q + j * bs_j];
            acc *= alpha;
            if (cc)
                acc += beta * cc[cv_broadcast_index(C, 2, Y->dims, i * n + j)];
            y[i * n + j] = acc;
        }
    cv_tensor_from_f64(Y, y);
    return 0;
}

/* matmul(a, b) -> numpy matmul: a [..., M, K] @ b [..., K, N] -> [..., M, N];
 *   batch dims broadcast; a 1-D a is promoted to [1,K] and a 1-D b to [K,1],
 *   and the promoted axes are removed from the result.  No attributes.
 *
 * gemm(a: [M,K], b: [K,N], c?: broadcastable to [M,N]) -> [M,N]
 *   alpha   FLOAT  default 1.0     y = alpha * op(a) @ op(b) + beta * c
 *   beta    FLOAT  default 1.0
 *   trans_a INT    default 0       op(a) = a^T when nonzero (a is then [K,M])
 *   trans_b INT    default 0       op(b) = b^T when nonzero (b is then [N,K]) */
static const cv_attr_schema no_attrs[] = {{NULL, CV_ATTR_NONE, false}};

static const cv_attr_schema gemm_attrs[] = {
    {"alpha", CV_ATTR_FLOAT, false},
    {"beta", CV_ATTR_FLOAT, false},
    {"trans_a", CV_ATTR_INT, false},
    {"trans_b", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    {"matmul", 2, 2, 1, 1, no_attrs, matmul_infer, matmul_eval, cv_cg_matmul, 0},
    {"gemm", 2, 3, 1, 1, gemm_attrs, gemm_infer, gemm_eval, cv_cg_gemm, 0},
};

const cv_op_family cv_ops_matmul = {defs, (int)(sizeof defs / sizeof defs[0])};
