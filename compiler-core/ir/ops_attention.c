/* Op family fragment: scaled dot-product attention (issue 26).
 *
 * attention(q, k, v, mask?) -> y
 *   q [B,H,Sq,D], k [B,H,Sk,D], v [B,H,Sk,Dv] -> y [B,H,Sq,Dv]
 *   y[b,h,i,:] = sum_j softmax_j(scale * q[b,h,i,:].k[b,h,j,:] + mask[b,h,i,j]) v[b,h,j,:]
 *   mask    additive, broadcasting (numpy rules) to [B,H,Sq,Sk]
 *   scale   FLOAT  default 1/sqrt(D)
 *   causal  INT    default 0: when nonzero, key j is seen by query i only
 *                  when j <= i + Sk - Sq (the last query sees every key)
 *   bshd    INTS   default [0,0,0,0]: for q, k, v and y in turn, 1 when the
 *                  tensor is stored [B,S,H,D] (the merged-head order a
 *                  projection writes, read in place) rather than [B,H,S,D]
 * The multi-head layout flags are what lets the fusion pass (passes/
 * attention_fuse.c) drop the transposes around the chain exporters emit. */
#include <math.h>
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

/* Logical [B,H,S,D] dims of operand/result type t stored with flag bshd. */
static void bhsd_of(const cv_shape *s, bool bshd, cv_dim out[4])
{
    out[0] = s->d[0];
    out[1] = s->d[bshd ? 2 : 1];
    out[2] = s->d[bshd ? 1 : 2];
    out[3] = s->d[3];
}

static int read_flags(cv_infer_ctx *c, int64_t f[4])
{
    static const int64_t zeros[4] = {0, 0, 0, 0};
    if (cv_nn_ints_n(c, "bshd", 4, zeros, 0, f))
        return -1;
    for (int i = 0; i < 4; i++)
        if (f[i] > 1)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "attention: bshd entries must be 0 or 1, got %lld",
                                  (long long)f[i]);
    return 0;
}

static int dim_mismatch(cv_infer_ctx *c, const char *what, cv_dim a, cv_dim b)
{
    char s1[32], s2[32];
    return cv_infer_error(c, CV_E_BROADCAST_MISMATCH, "attention: %s differ (%s vs %s)", what,
                          cv_nn_dim_fmt(a, s1, sizeof s1), cv_nn_dim_fmt(b, s2, sizeof s2));
}

static int attention_infer(cv_infer_ctx *c)
{
    int64_t f[4];
    if (cv_infer_dtype_in(c, 0, CV_DT_FLOATS) || cv_infer_same_dtype(c, 0, 1) ||
        cv_infer_same_dtype(c, 0, 2) || (c->n_in > 3 && cv_infer_same_dtype(c, 0, 3)) ||
        cv_nn_rank(c, 0, 4, "q") || cv_nn_rank(c, 1, 4, "k") || cv_nn_rank(c, 2, 4, "v") ||
        read_flags(c, f))
        return -1;
    cv_dim q[4], k[4], v[4];
    bhsd_of(&c->in[0].shape, f[0], q);
    bhsd_of(&c->in[1].shape, f[1], k);
    bhsd_of(&c->in[2].shape, f[2], v);
    for (int i = 0; i < 2; i++)
        if (!cv_dim_equal(q[i], k[i]) || !cv_dim_equal(q[i], v[i]))
            return dim_mismatch(c, i ? "head counts" : "batch sizes", q[i],
                                cv_dim_equal(q[i], k[i]) ? v[i] : k[i]);
    if (!cv_dim_equal(q[3], k[3]))
        return dim_mismatch(c, "query and key depths", q[3], k[3]);
    if (!cv_dim_equal(k[2], v[2]))
        return dim_mismatch(c, "key and value lengths", k[2], v[2]);
    if (c->n_in > 3) {
        const cv_shape *m = &c->in[3].shape;
        cv_dim want[4] = {q[0], q[1], q[2], k[2]};
        bool ok = m->rank <= 4;
        for (int i = 0; ok && i < m->rank; i++) {
            cv_dim d = m->d[m->rank - 1 - i], t = want[3 - i];
            ok = cv_dim_equal(d, t) || (!d.sym && d.n == 1);
        }
        if (!ok) {
            char ts[96];
            cv_type_format(&c->in[3], ts, sizeof ts);
            return cv_infer_error(c, CV_E_BROADCAST_MISMATCH, "attention: mask of type %s does not broadcast to "
                                  "the scores [B,H,Sq,Sk]", ts);
        }
    }
    cv_shape *o = &c->out[0].shape;
    *o = (cv_shape){.rank = 4, .d = {q[0], f[3] ? q[2] : q[1], f[3] ? q[1] : q[2], v[3]}};
    c->out[0].dtype = c->in[0].dtype;
    return 0;
}

/* Element offset of logical [b,h,s,d] in a tensor of dims `dims` stored
 * with flag bshd. */
static int64_t at(const int64_t *dims, bool bshd, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return bshd ? ((b * dims[1] + s) * dims[2] + h) * dims[3] + d
                : ((b * dims[1] + h) * dims[2] + s) * dims[3] + d;
}

static int attention_eval(cv_eval_ctx *c)
{
    const cv_tensor *Q = c->in[0], *K = c->in[1], *V = c->in[2], *M = c->n_in > 3 ? c->in[3] : NULL;
    int64_t f[4] = {0, 0, 0, 0};
    cv_op_ints(c->op, "bshd", f, 4);
    int64_t B = Q->dims[0], H = Q->dims[f[0] ? 2 : 1], Sq = Q->dims[f[0] ? 1 : 2], D = Q->dims[3];
    int64_t Sk = K->dims[f[1] ? 1 : 2], Dv = V->dims[3];
    double scale = cv_op_float(c->op, "scale", D > 0 ? 1.0 / sqrt((double)D) : 1.0);
    bool causal = cv_op_int(c->op, "causal", 0) != 0;
    const double *q = cv_tensor_to_f64(Q, c->scratch), *k = cv_tensor_to_f64(K, c->scratch);
    const double *v = cv_tensor_to_f64(V, c->scratch), *m = M ? cv_tensor_to_f64(M, c->scratch) : NULL;
    cv_tensor *Y = &c->out[0];
    double *y = cv_arena_alloc_array(c->scratch, (size_t)(Y->numel ? Y->numel : 1), sizeof *y);
    double *s = cv_arena_alloc_array(c->scratch, (size_t)(Sk ? Sk : 1), sizeof *s);
    if (!q || !k || !v || (M && !m) || !y || !s)
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "attention: out of memory");
    const int64_t sdims[4] = {B, H, Sq, Sk};
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < Sq; i++) {
                int64_t n = causal ? i + Sk - Sq + 1 : Sk;
                n = n < 0 ? 0 : n > Sk ? Sk : n;
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < n; j++) {
                    double acc = 0;
                    for (int64_t d = 0; d < D; d++)
                        acc += q[at(Q->dims, f[0], b, h, i, d)] * k[at(K->dims, f[1], b, h, j, d)];
                    acc *= scale;
                    if (m)
                        acc += m[cv_broadcast_index(M, 4, sdims, ((b * H + h) * Sq + i) * Sk + j)];
                    s[j] = acc;
                    mx = acc > mx ? acc : mx;
                }
                for (int64_t j = 0; j < n; j++)
                    sum += (s[j] = exp(s[j] - mx));
                for (int64_t d = 0; d < Dv; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < n; j++)
                        acc += s[j] * v[at(V->dims, f[2], b, h, j, d)];
                    /* No visible key (causal with Sq > Sk): zeros, not 0/0. */
                    y[at(Y->dims, f[3], b, h, i, d)] = n ? acc / sum : 0;
                }
            }
    cv_tensor_from_f64(Y, y);
    return 0;
}

static const cv_attr_schema attention_attrs[] = {
    {"scale", CV_ATTR_FLOAT, false},
    {"causal", CV_ATTR_INT, false},
    {"bshd", CV_ATTR_INTS, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    {"attention", 3, 4, 1, 1, attention_attrs, attention_infer, attention_eval, cv_cg_attention, 0},
};

const cv_op_family cv_ops_attention = {defs, (int)(sizeof defs / sizeof defs[0])};
