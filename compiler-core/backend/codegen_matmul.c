/* Codegen hooks: matrix products (ops_matmul.c).  f32 goes to the runtime's
 * packed GEMM (any strides, so transposes and broadcast biases cost
 * nothing; a matmul's bias add and residual add ride along); other dtypes use a plain triple loop (f32 or exact i64
 * accumulation). */
#include <string.h>

#include <stdlib.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/codegen_half.h"
#include "compiler-core/runtime/cvrt.h"

typedef struct gemm_args {
    const cv_kexpr *M, *N, *K, *a, *ars, *acs, *b, *brs, *bcs, *y, *ldc;
    const cv_kexpr *bias, *bias_rs, *bias_cs;
    const cv_kten *C;           /* gemm's c, for the generic loop */
    double alpha, bias_scale;
    const cv_cg_rt_epi *epi;    /* fused chain, or NULL */
    const cv_kexpr *y_off;      /* element offset of y (and of the residual) */
} gemm_args;

/* fn: CV_KRT_SGEMM, or CV_KRT_SGEMM_H with the kind in g->brs. */
static void call_sgemm(cv_codegen_ctx *c, const gemm_args *g, cv_krt fn)
{
    const cv_kexpr *z = cv_k_i64(c, 0);
    const cv_kexpr *args[] = {
        g->M, g->N, g->K, cv_k_f32(c, g->alpha), g->a, g->ars, g->acs, g->b, g->brs, g->bcs,
        g->y, g->ldc, z, g->bias ? g->bias : cv_k_null(c), g->bias ? g->bias_rs : z,
        g->bias ? g->bias_cs : z, cv_k_f32(c, g->bias_scale), NULL, g->ldc, NULL, NULL, NULL,
    };
    const cv_kexpr *epi[4];
    cv_cg_rt_epilogue_args(c, g->epi, g->y_off ? g->y_off : z, epi);
    args[17] = epi[0];
    args[19] = epi[1];
    args[20] = epi[2];
    args[21] = epi[3];
    cv_k_call(c, fn, args, (int)(sizeof args / sizeof args[0]));
}

/* Offset (in matrices) of batch item bi of operand t, whose first `tb`
 * dims are batch dims broadcasting against the result's first `yb` dims. */
static const cv_kexpr *batch_offset(cv_codegen_ctx *c, const cv_kten *t, int tb, const cv_kten *y,
                                    int yb, const cv_kexpr *bi)
{
    const cv_kexpr *off = cv_k_i64(c, 0), *stride = cv_k_i64(c, 1);
    for (int d = yb - 1; d >= 0; d--) {
        int k = d - (yb - tb);
        const cv_kexpr *coord = d ? cv_k_rem(c, bi, y->dim[d]) : bi;
        bi = cv_k_div(c, bi, y->dim[d]);
        if (k < 0 || t->sdim[k] == 1)
            continue;
        off = cv_k_add(c, off, cv_k_mul(c, coord, stride));
        stride = cv_k_mul(c, stride, t->dim[k]);
    }
    return off;
}

static bool batch_is_full(const cv_kten *t, int tb, const cv_kten *y, int yb)
{
    if (tb != yb)
        return false;
    for (int d = 0; d < yb; d++)
        if (t->sdim[d] == 1 && y->sdim[d] != 1)
            return false;
    return true;
}

/* y[i, j] = sum_q a[i*ars + q*acs] b[q*brs + j*bcs], one row per parallel item. */
static void generic_rows(cv_codegen_ctx *c, const cv_kten *A, const cv_kten *B, const cv_kten *Y,
                         const gemm_args *g, int ab, int bb, int yb)
{
    const cv_kexpr *zero = cv_k_i64(c, 0), *rows = cv_k_mul(c, cv_k_numel(c, Y, 0, yb), g->M);
    const cv_kexpr *p = cv_k_begin(c, "matmul", rows, NULL);
    const cv_kexpr *bi = cv_k_div(c, p, g->M), *i = cv_k_rem(c, p, g->M);
    const cv_kexpr *ao = cv_k_mul(c, batch_offset(c, A, ab, Y, yb, bi), cv_k_mul(c, g->M, g->K));
    const cv_kexpr *bo = cv_k_mul(c, batch_offset(c, B, bb, Y, yb, bi), cv_k_mul(c, g->K, g->N));
    cv_kty t = cv_kty_of(Y->dtype) == CV_KTY_I64 ? CV_KTY_I64 : CV_KTY_F32;
    const cv_kexpr *j = cv_k_for(c, zero, g->N, 0);
    const cv_kexpr *acc = cv_k_local(c, cv_k_const(c, t, 0));
    const cv_kexpr *q = cv_k_for(c, zero, g->K, CV_KFOR_INNER);
    const cv_kexpr *av = cv_k_load(c, A, cv_k_add(c, ao, cv_k_add(c, cv_k_mul(c, i, g->ars), cv_k_mul(c, q, g->acs))));
    const cv_kexpr *bv = cv_k_load(c, B, cv_k_add(c, bo, cv_k_add(c, cv_k_mul(c, q, g->brs), cv_k_mul(c, j, g->bcs))));
    cv_k_set(c, acc, cv_k_add(c, acc, cv_k_mul(c, cv_k_cast(c, av, t), cv_k_cast(c, bv, t))));
    cv_k_close(c);
    const cv_kexpr *r = acc;
    if (g->alpha != 1)
        r = cv_k_mul(c, r, cv_k_const(c, t, g->alpha));
    if (g->C) {
        const cv_kexpr *bix = cv_k_add(c, cv_k_mul(c, i, g->bias_rs), cv_k_mul(c, j, g->bias_cs));
        const cv_kexpr *cv = cv_k_cast(c, cv_k_load(c, g->C, bix), t);
        r = cv_k_add(c, r, cv_k_mul(c, cv_k_const(c, t, g->bias_scale), cv));
    }
    cv_k_store(c, Y, cv_k_add(c, cv_k_mul(c, p, g->N), j), r);
    cv_k_close(c);
    cv_k_end(c);
}

/* A constant B [K, N] as the runtime's PB form (cvrt.h), for products of
 * many rows (static, >= PB_MIN_ROWS: the small-row path reads B as it is);
 * NULL otherwise. */
enum { PB_MIN_ROWS = 16 };
static const cv_kten *packed_b(cv_codegen_ctx *c, const cv_kten *B, bool tb, int64_t rows,
                               cv_kten *out)
{
    const cv_kstore *s = &c->prog->stores[B->store];
    if (!c->prog->packed_b || rows < PB_MIN_ROWS || B->rank != 2 || s->kind != CV_KST_CONST ||
        !s->data || B->dtype != CV_F32 || B->sdim[0] < 0 || B->sdim[1] < 0)
        return NULL;
    /* B is [K, N], or [N, K] for gemm's trans_b (read transposed). */
    int64_t K = B->sdim[tb], N = B->sdim[!tb], np = (N + CVRT_PB - 1) / CVRT_PB, n = np * CVRT_PB * K;
    float *buf = calloc((size_t)(n ? n : 1), sizeof *buf);
    if (!buf)
        return NULL;
    const float *src = s->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            buf[((j / CVRT_PB) * K + k) * CVRT_PB + j % CVRT_PB] = tb ? src[j * K + k] : src[k * N + j];
    cv_shape shape = {.rank = 1, .d = {{.n = n}}};
    *out = cv_cg_const(c, CV_F32, &shape, buf);
    free(buf);
    return out;
}

/* A [N] (or [1,..,1,N]) f32 operand of an add chained after the product:
 * the bias of a projection (exporters write Linear as matmul + add). */
static bool bias_row(const cv_value *v, const cv_value *y)
{
    const cv_shape *s = &v->type.shape, *ys = &y->type.shape;
    if (v->type.dtype != CV_F32 || s->rank < 1 || s->rank > ys->rank ||
        !cv_dim_equal(s->d[s->rank - 1], ys->d[ys->rank - 1]))
        return false;
    for (int i = 0; i < s->rank - 1; i++)
        if (s->d[i].sym || s->d[i].n != 1)
            return false;
    return true;
}

/* Takes a chain that starts with a bias add into the GEMM's own bias
 * operand (broadcast down the rows), and what follows it into the runtime
 * epilogue when it fits; else only the add (the rest of the chain is then
 * lowered on its own, reading the add's result).  *out is the add's
 * result; g->epi is set when the rest was taken too. */
static bool take_bias(cv_codegen_ctx *c, gemm_args *g, cv_kten *bt, cv_kten *out,
                      cv_cg_rt_epi *e)
{
    if (!c->n_epi || c->epi_taken || c->epi[0]->def->codegen != cv_cg_add)
        return false;
    const cv_value *y = c->op->results[0];
    const cv_value *b = c->epi[0]->operands[1 - c->epi_link[0]];
    if (b == y || !bias_row(b, y))
        return false;
    *bt = cv_cg_value(c, b);    /* its address is taken inside the kernel */
    g->bias_rs = cv_k_i64(c, 0);
    g->bias_cs = cv_k_i64(c, 1);
    g->bias_scale = 1;
    *out = cv_cg_value(c, c->epi[0]->results[0]);
    /* The rest of the chain, as if it followed the add. */
    const cv_op *epi[8];
    int link[8], n = c->n_epi;
    memcpy(epi, c->epi, sizeof epi);
    memcpy(link, c->epi_link, sizeof link);
    memmove(c->epi, c->epi + 1, sizeof c->epi[0] * (size_t)(n - 1));
    memmove(c->epi_link, c->epi_link + 1, sizeof c->epi_link[0] * (size_t)(n - 1));
    c->n_epi = n - 1;
    const cv_op *self = c->op;
    c->op = epi[0];     /* the epilogue's running value is the add's result */
    bool rest = c->n_epi > 0 && cv_cg_rt_epilogue(c, e);
    c->op = self;
    memcpy(c->epi, epi, sizeof epi);
    memcpy(c->epi_link, link, sizeof link);
    c->n_epi = rest ? n : 1;
    c->epi_taken = true;
    g->epi = rest ? e : NULL;
    return true;
}

int cv_cg_matmul(cv_codegen_ctx *c)
{
    cv_kten A = cv_cg_in(c, 0), B = cv_cg_in(c, 1), Y = cv_cg_out(c, 0);
    int ra = A.rank, rb = B.rank, ab = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    int yb = Y.rank - (ra >= 2) - (rb >= 2);
    gemm_args g = {.alpha = 1, .bias_scale = 0};
    g.M = ra >= 2 ? A.dim[ra - 2] : cv_k_i64(c, 1);
    g.K = A.dim[ra - 1];
    g.N = rb >= 2 ? B.dim[rb - 1] : cv_k_i64(c, 1);
    g.ars = g.K;
    g.acs = cv_k_i64(c, 1);
    g.brs = rb >= 2 ? g.N : cv_k_i64(c, 1);
    g.bcs = cv_k_i64(c, rb >= 2 ? 1 : 0);
    g.ldc = g.N;
    if (Y.dtype != CV_F32) {
        generic_rows(c, &A, &B, &Y, &g, ab, bb, yb);
        return 0;
    }
    const cv_kexpr *zero = cv_k_i64(c, 0), *nbatch = cv_k_numel(c, &Y, 0, yb);
    cv_cg_rt_epi e;
    cv_kten bias, biased;
    const cv_kten *dst = &Y;
    bool has_bias = take_bias(c, &g, &bias, &biased, &e);
    if (has_bias) {
        dst = g.epi ? &e.out : &biased;
    } else if (cv_cg_rt_epilogue(c, &e)) {
        g.epi = &e;
        dst = &e.out;
    }
    cv_kten Bp, Bq;
    int64_t rows;
    const cv_kten *bp = NULL, *bq = NULL;
    if (bb == 0 && batch_is_full(&A, ab, &Y, yb))
        bq = cv_cg_bf16_pairs(c, false, &Bq);   /* -p bf16 weights, 16-bit */
    if (!bq && bb == 0 && batch_is_full(&A, ab, &Y, yb) &&
        cv_k_is_const(cv_k_mul(c, nbatch, g.M), &rows))
        bp = packed_b(c, &B, false, rows, &Bp);
    cv_k_begin(c, "matmul", NULL, NULL);
    if (has_bias)
        g.bias = cv_k_addr(c, &bias, zero);
    if (bb == 0 && batch_is_full(&A, ab, &Y, yb)) {
        /* [batch..., M, K] @ [K, N]: one GEMM over batch*M rows. */
        g.M = cv_k_mul(c, nbatch, g.M);
        g.a = cv_k_addr(c, &A, zero);
        g.b = cv_k_addr(c, bq ? bq : bp ? bp : &B, zero);
        g.y = cv_k_addr(c, dst, zero);
        call_sgemm(c, &g, bq ? CV_KRT_SGEMM_BF : bp ? CV_KRT_SGEMM_PB : CV_KRT_SGEMM);
    } else {
        const cv_kexpr *bi = cv_k_for(c, zero, nbatch, 0);
        g.a = cv_k_addr(c, &A, cv_k_mul(c, batch_offset(c, &A, ab, &Y, yb, bi), cv_k_mul(c, g.M, g.K)));
        g.b = cv_k_addr(c, &B, cv_k_mul(c, batch_offset(c, &B, bb, &Y, yb, bi), cv_k_mul(c, g.K, g.N)));
        g.y_off = cv_k_mul(c, bi, cv_k_mul(c, g.M, g.N));
        g.y = cv_k_addr(c, dst, g.y_off);
        call_sgemm(c, &g, CV_KRT_SGEMM);
        cv_k_close(c);
    }
    cv_k_end(c);
    return 0;
}

/* Strides of gemm's c broadcast to [M, N] (0 along broadcast dims). */
static void bias_strides(cv_codegen_ctx *c, const cv_kten *C, const cv_kexpr **rs,
                         const cv_kexpr **cs)
{
    *rs = *cs = cv_k_i64(c, 0);
    if (C->rank >= 1 && C->sdim[C->rank - 1] != 1)
        *cs = cv_k_i64(c, 1);
    if (C->rank == 2 && C->sdim[0] != 1)
        *rs = C->dim[1];
}

int cv_cg_gemm(cv_codegen_ctx *c)
{
    cv_kten A = cv_cg_in(c, 0), B = cv_cg_in(c, 1), Y = cv_cg_out(c, 0), C;
    bool ta = cv_op_int(c->op, "trans_a", 0) != 0, tb = cv_op_int(c->op, "trans_b", 0) != 0;
    const cv_kexpr *one = cv_k_i64(c, 1), *zero = cv_k_i64(c, 0);
    gemm_args g = {.alpha = cv_op_float(c->op, "alpha", 1.0),
                   .bias_scale = cv_op_float(c->op, "beta", 1.0)};
    g.M = Y.dim[0];
    g.N = Y.dim[1];
    g.K = A.dim[ta ? 0 : 1];
    g.ars = ta ? one : g.K;
    g.acs = ta ? g.M : one;
    g.brs = tb ? one : g.N;
    g.bcs = tb ? g.K : one;
    g.ldc = g.N;
    bool has_c = c->op->n_operands > 2;
    if (has_c) {
        C = cv_cg_in(c, 2);
        bias_strides(c, &C, &g.bias_rs, &g.bias_cs);
    }
    if (Y.dtype != CV_F32) {
        g.C = has_c ? &C : NULL;
        generic_rows(c, &A, &B, &Y, &g, 0, 0, 0);
        return 0;
    }
    cv_cg_rt_epi e;
    const cv_kten *dst = &Y;
    if (cv_cg_rt_epilogue(c, &e)) {
        g.epi = &e;
        dst = &e.out;
    }
    /* -p fp16/bf16 weights: read 16-bit (trans_b, so brs is 1 and its
     * slot carries the kind). */
    cv_kten Bh, Bq;
    int64_t hkind = 0;
    const cv_kten *bq = cv_cg_bf16_pairs(c, tb, &Bq);  /* -p bf16: B's pair form */
    const cv_kten *bh = bq ? NULL : cv_cg_half_matrix(c, &Bh, &hkind);
    if (bh)
        g.brs = cv_k_i64(c, hkind);
    /* A constant B (a projection's weights, trans_b or not) in the PB
     * form made here, as matmul's. */
    cv_kten Bp;
    int64_t rows;
    const cv_kten *bp = !bh && !bq && cv_k_is_const(g.M, &rows) ? packed_b(c, &B, tb, rows, &Bp)
                                                                 : NULL;
    cv_k_begin(c, "gemm", NULL, NULL);
    g.a = cv_k_addr(c, &A, zero);
    g.b = cv_k_addr(c, bq ? bq : bh ? bh : bp ? bp : &B, zero);
    g.y = cv_k_addr(c, dst, zero);
    g.bias = has_c ? cv_k_addr(c, &C, zero) : NULL;
    call_sgemm(c, &g, bq   ? CV_KRT_SGEMM_BF
                      : bh ? CV_KRT_SGEMM_H
                      : bp ? CV_KRT_SGEMM_PB
                           : CV_KRT_SGEMM);
    cv_k_end(c);
    return 0;
}
