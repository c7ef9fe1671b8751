/* Codegen hook: attention (ops_attention.c) as one fused kernel family.
 *
 * Two kernels: the keys are first copied transposed ([B*H][D][Sk], so that
 * the scores of a tile of keys are a contiguous, vectorisable run), then one
 * parallel item per (batch, head, block of R query rows) walks the keys in
 * tiles of T with an online softmax: for each tile it computes the scaled,
 * masked scores into a scratch row of T floats, rescales the running output
 * row by exp(old max - new max), and adds the tile's exp-weighted values.
 * No loop reduces a float into a scalar (the backends keep float sums in
 * order, so such loops would not vectorise): the score loop runs over keys
 * and the value loop over output features.  The scores of a whole row are
 * never stored when Sk > T: the scratch holds B*H*ceil(Sq/R) rows of T. */
#include <math.h>

#include "compiler-core/backend/codegen.h"

enum { ATT_ROWS = 16, ATT_TILE = 256 };

typedef struct att_ten {
    cv_kten t;
    bool bshd;
    const cv_kexpr *H, *S, *D;  /* logical heads, length, depth */
} att_ten;

static att_ten att_view(cv_kten t, bool bshd)
{
    return (att_ten){.t = t, .bshd = bshd, .H = t.dim[bshd ? 2 : 1], .S = t.dim[bshd ? 1 : 2],
                     .D = t.dim[3]};
}

/* Offset of logical element [b, h, s, 0]. */
static const cv_kexpr *row_at(cv_codegen_ctx *c, const att_ten *a, const cv_kexpr *b,
                              const cv_kexpr *h, const cv_kexpr *s)
{
    const cv_kexpr *r = a->bshd ? cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, b, a->S), s), a->H), h)
                                : cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, b, a->H), h), a->S), s);
    return cv_k_mul(c, r, a->D);
}

/* Strides (elements) of the mask along the logical score axes [B,H,Sq,Sk]:
 * 0 where it broadcasts. */
static void mask_strides(cv_codegen_ctx *c, const cv_kten *m, const cv_kexpr *st[4])
{
    const cv_kexpr *stride = cv_k_i64(c, 1);
    for (int a = 3; a >= 0; a--) {
        int k = a - (4 - m->rank);
        st[a] = cv_k_i64(c, 0);
        if (k < 0 || m->sdim[k] == 1)
            continue;
        st[a] = stride;
        stride = cv_k_mul(c, stride, m->dim[k]);
    }
}

/* kt[(bh*D + d)*Sk + j] = k[b, h, j, d]. */
static void transpose_keys(cv_codegen_ctx *c, const att_ten *k, const cv_kexpr *B,
                           const cv_kten *kt)
{
    const cv_kexpr *zero = cv_k_i64(c, 0);
    const cv_kexpr *p = cv_k_begin(c, "attention keys", cv_k_mul(c, cv_k_mul(c, B, k->H), k->D),
                                   cv_k_i64(c, 8));
    const cv_kexpr *bh = cv_k_div(c, p, k->D), *d = cv_k_rem(c, p, k->D);
    const cv_kexpr *b = cv_k_div(c, bh, k->H), *h = cv_k_rem(c, bh, k->H);
    const cv_kexpr *base = cv_k_add(c, row_at(c, k, b, h, zero), d);
    const cv_kexpr *sstride = k->bshd ? cv_k_mul(c, k->H, k->D) : k->D;
    const cv_kexpr *j = cv_k_for(c, zero, k->S, CV_KFOR_INNER);
    cv_k_store(c, kt, cv_k_add(c, cv_k_mul(c, p, k->S), j),
               cv_k_load(c, &k->t, cv_k_add(c, base, cv_k_mul(c, j, sstride))));
    cv_k_close(c);
    cv_k_end(c);
}

typedef struct att_row {
    const cv_kexpr *p, *b, *h, *i, *srow;   /* item, batch, head, query row, scratch row */
} att_row;

/* The scores of keys [j0, j0 + jn) of query row r into s[srow + t], and
 * their max (returned). */
static const cv_kexpr *tile_scores(cv_codegen_ctx *c, const att_ten *q, const cv_kten *kt,
                                   const cv_kten *s, const cv_kten *mask, const cv_kexpr *mst[4],
                                   const att_row *r, const cv_kexpr *j0, const cv_kexpr *jn,
                                   const cv_kexpr *scale)
{
    const cv_kexpr *zero = cv_k_i64(c, 0), *Sk = kt->dim[3];
    const cv_kexpr *qrow = row_at(c, q, r->b, r->h, r->i);
    const cv_kexpr *t = cv_k_for(c, zero, jn, CV_KFOR_INNER);
    cv_k_store(c, s, cv_k_add(c, r->srow, t), cv_k_f32(c, 0));
    cv_k_close(c);
    /* kt row of (bh, d) starts at ((b*H + h)*D + d)*Sk. */
    const cv_kexpr *bh = cv_k_add(c, cv_k_mul(c, r->b, q->H), r->h);
    const cv_kexpr *d = cv_k_for(c, zero, q->D, 0);
    const cv_kexpr *qv = cv_k_local(c, cv_k_load(c, &q->t, cv_k_add(c, qrow, d)));
    const cv_kexpr *kbase = cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, bh, q->D), d), Sk), j0);
    t = cv_k_for(c, zero, jn, CV_KFOR_INNER);
    const cv_kexpr *at = cv_k_add(c, r->srow, t);
    cv_k_store(c, s, at, cv_k_add(c, cv_k_load(c, s, at),
                                  cv_k_mul(c, qv, cv_k_load(c, kt, cv_k_add(c, kbase, t)))));
    cv_k_close(c);
    cv_k_close(c);
    const cv_kexpr *mx = cv_k_local(c, cv_k_f32(c, -INFINITY));
    t = cv_k_for(c, zero, jn, CV_KFOR_INNER);
    at = cv_k_add(c, r->srow, t);
    const cv_kexpr *v = cv_k_mul(c, cv_k_load(c, s, at), scale);
    if (mask) {
        const cv_kexpr *mo = cv_k_add(c, cv_k_add(c, cv_k_mul(c, r->b, mst[0]), cv_k_mul(c, r->h, mst[1])),
                                      cv_k_add(c, cv_k_mul(c, r->i, mst[2]),
                                               cv_k_mul(c, cv_k_add(c, j0, t), mst[3])));
        v = cv_k_add(c, v, cv_k_cast(c, cv_k_load(c, mask, mo), CV_KTY_F32));
    }
    cv_k_store(c, s, at, v);
    cv_k_set(c, mx, cv_k_bin(c, CV_KOP_FMAX, mx, v));
    cv_k_close(c);
    return mx;
}

/* Strides of logical axes b, h, s (d is contiguous). */
static void att_strides(cv_codegen_ctx *c, const att_ten *a, const cv_kexpr *st[3])
{
    const cv_kexpr *row = a->bshd ? cv_k_mul(c, a->H, a->D) : a->D;
    st[0] = cv_k_mul(c, a->S, cv_k_mul(c, a->H, a->D));
    st[1] = a->bshd ? a->D : cv_k_mul(c, a->S, a->D);
    st[2] = row;
}

/* The runtime's register-blocked kernel (runtime/cvrt_attn.c) where the
 * program may call it: CPU LLVM targets (those that read packed constant
 * matmul operands), an f32 mask, depths within its scratch. */
static bool rt_attention_fits(cv_codegen_ctx *c, const cv_kten *mask, bool has_mask,
                              const att_ten *q, const att_ten *v)
{
    int64_t D, Dv;
    return c->prog->packed_b && (!has_mask || mask->dtype == CV_F32) &&
           cv_k_is_const(q->D, &D) && cv_k_is_const(v->D, &Dv) && D > 0 && D <= 128 && Dv > 0 &&
           Dv <= 128;
}

static void rt_attention(cv_codegen_ctx *c, const att_ten *q, const att_ten *k, const att_ten *v,
                         const att_ten *y, const cv_kten *mask, const cv_kexpr *const mst[4],
                         const cv_kexpr *scale, bool causal)
{
    const cv_kexpr *z = cv_k_i64(c, 0), *qs[3], *ks[3], *vs[3], *ys[3];
    att_strides(c, q, qs);
    att_strides(c, k, ks);
    att_strides(c, v, vs);
    att_strides(c, y, ys);
    cv_k_begin(c, "attention", NULL, NULL);
    const cv_kexpr *args[] = {
        cv_k_addr(c, &q->t, z), cv_k_addr(c, &k->t, z), cv_k_addr(c, &v->t, z),
        mask ? cv_k_addr(c, mask, z) : cv_k_null(c), cv_k_addr(c, &y->t, z),
        q->t.dim[0], q->H, q->S, k->S, q->D, v->D,
        qs[0], qs[1], qs[2], ks[0], ks[1], ks[2], vs[0], vs[1], vs[2], ys[0], ys[1], ys[2],
        mask ? mst[0] : z, mask ? mst[1] : z, mask ? mst[2] : z, mask ? mst[3] : z,
        scale, cv_k_i64(c, causal),
    };
    cv_k_call(c, CV_KRT_ATTENTION, args, (int)(sizeof args / sizeof args[0]));
    cv_k_end(c);
}

int cv_cg_attention(cv_codegen_ctx *c)
{
    int64_t f[4] = {0, 0, 0, 0};
    cv_op_ints(c->op, "bshd", f, 4);
    att_ten q = att_view(cv_cg_in(c, 0), f[0]), k = att_view(cv_cg_in(c, 1), f[1]);
    att_ten v = att_view(cv_cg_in(c, 2), f[2]), y = att_view(cv_cg_out(c, 0), f[3]);
    bool has_mask = c->op->n_operands > 3, causal = cv_op_int(c->op, "causal", 0) != 0;
    cv_kten mask = has_mask ? cv_cg_in(c, 3) : (cv_kten){0};
    if (q.t.dtype != CV_F32)
        return cv_cg_error(c, CV_E_CODEGEN_UNSUPPORTED_OP, "attention: only f32 is lowered natively, not %s",
                           cv_dtype_name(q.t.dtype));
    /* The default scale 1/sqrt(D), computed at run time for a symbolic D. */
    const cv_kexpr *scale = cv_op_attr(c->op, "scale") ? cv_k_f32(c, cv_op_float(c->op, "scale", 1))
        : cv_k_bin(c, CV_KOP_DIV, cv_k_f32(c, 1), cv_k_un(c, CV_KOP_SQRT, cv_k_cast(c, q.D, CV_KTY_F32)));
    const cv_kexpr *zero = cv_k_i64(c, 0), *one = cv_k_i64(c, 1), *B = q.t.dim[0];
    const cv_value *qv = c->op->operands[0], *kv = c->op->operands[1];
    const cv_dim *qd = qv->type.shape.d, *kd = kv->type.shape.d;
    if (rt_attention_fits(c, &mask, has_mask, &q, &v)) {
        const cv_kexpr *mst[4] = {0};
        if (has_mask)
            mask_strides(c, &mask, mst);
        rt_attention(c, &q, &k, &v, &y, has_mask ? &mask : NULL, mst, scale, causal);
        return 0;
    }
    cv_dim Bd = qd[0], Hd = qd[f[0] ? 2 : 1], Sqd = qd[f[0] ? 1 : 2], Skd = kd[f[1] ? 1 : 2];
    /* Static lengths: blocks of R rows share a scratch row, and a key tile
     * is the whole row when it is short (the exact softmax in one pass). */
    bool stat = !Bd.sym && !Hd.sym && !Sqd.sym && !Skd.sym;
    int64_t R = stat ? ATT_ROWS : 1, T = ATT_TILE;
    if (!Skd.sym && Skd.n <= 2 * ATT_TILE)
        T = Skd.n > 0 ? Skd.n : 1;
    cv_shape kts = {.rank = 4, .d = {Bd, Hd, qd[3], Skd}};
    cv_kten kt = cv_cg_scratch(c, CV_F32, &kts);
    cv_shape ss;
    if (stat)
        ss = (cv_shape){.rank = 2, .d = {{.n = Bd.n * Hd.n * ((Sqd.n + R - 1) / R)}, {.n = T}}};
    else
        ss = (cv_shape){.rank = 4, .d = {Bd, Hd, Sqd, {.n = T}}};
    cv_kten s = cv_cg_scratch(c, CV_F32, &ss);
    const cv_kexpr *mst[4];
    if (has_mask)
        mask_strides(c, &mask, mst);
    transpose_keys(c, &k, B, &kt);

    const cv_kexpr *Rk = cv_k_i64(c, R), *Tk = cv_k_i64(c, T);
    const cv_kexpr *nqb = cv_k_div(c, cv_k_add(c, q.S, cv_k_i64(c, R - 1)), Rk);
    att_row r;
    r.p = cv_k_begin(c, "attention", cv_k_mul(c, cv_k_mul(c, B, q.H), nqb), one);
    const cv_kexpr *bh = cv_k_div(c, r.p, nqb), *i0 = cv_k_mul(c, cv_k_rem(c, r.p, nqb), Rk);
    r.b = cv_k_div(c, bh, q.H);
    r.h = cv_k_rem(c, bh, q.H);
    r.srow = cv_k_mul(c, r.p, Tk);
    r.i = cv_k_for(c, i0, cv_k_min(c, cv_k_add(c, i0, Rk), q.S), 0);
    const cv_kexpr *hi = k.S;
    if (causal)
        hi = cv_k_max(c, zero, cv_k_min(c, k.S, cv_k_add(c, cv_k_sub(c, k.S, q.S), cv_k_add(c, r.i, one))));
    const cv_kexpr *yrow = row_at(c, &y, r.b, r.h, r.i);
    const cv_kexpr *dv = cv_k_for(c, zero, v.D, CV_KFOR_INNER);
    cv_k_store(c, &y.t, cv_k_add(c, yrow, dv), cv_k_f32(c, 0));
    cv_k_close(c);
    const cv_kexpr *m = cv_k_local(c, cv_k_f32(c, -INFINITY)), *l = cv_k_local(c, cv_k_f32(c, 0));
    const cv_kexpr *jt = cv_k_for(c, zero, cv_k_div(c, cv_k_add(c, hi, cv_k_i64(c, T - 1)), Tk), 0);
    const cv_kexpr *j0 = cv_k_mul(c, jt, Tk), *jn = cv_k_min(c, Tk, cv_k_sub(c, hi, j0));
    const cv_kexpr *tmax = tile_scores(c, &q, &kt, &s, has_mask ? &mask : NULL, mst, &r, j0, jn, scale);
    const cv_kexpr *mnew = cv_k_local(c, cv_k_bin(c, CV_KOP_FMAX, m, tmax));
    const cv_kexpr *alpha = cv_k_local(c, cv_k_un(c, CV_KOP_EXP, cv_k_sub(c, m, mnew)));
    const cv_kexpr *ts = cv_k_local(c, cv_k_f32(c, 0));
    const cv_kexpr *t = cv_k_for(c, zero, jn, CV_KFOR_INNER);
    const cv_kexpr *at = cv_k_add(c, r.srow, t);
    const cv_kexpr *e = cv_k_un(c, CV_KOP_EXP, cv_k_sub(c, cv_k_load(c, &s, at), mnew));
    cv_k_store(c, &s, at, e);
    cv_k_set(c, ts, cv_k_add(c, ts, cv_k_load(c, &s, at)));
    cv_k_close(c);
    cv_k_set(c, l, cv_k_add(c, cv_k_mul(c, l, alpha), ts));
    cv_k_set(c, m, mnew);
    dv = cv_k_for(c, zero, v.D, CV_KFOR_INNER);
    at = cv_k_add(c, yrow, dv);
    cv_k_store(c, &y.t, at, cv_k_mul(c, cv_k_load(c, &y.t, at), alpha));
    cv_k_close(c);
    t = cv_k_for(c, zero, jn, 0);
    const cv_kexpr *pt = cv_k_local(c, cv_k_load(c, &s, cv_k_add(c, r.srow, t)));
    const cv_kexpr *vrow = row_at(c, &v, r.b, r.h, cv_k_add(c, j0, t));
    dv = cv_k_for(c, zero, v.D, CV_KFOR_INNER);
    at = cv_k_add(c, yrow, dv);
    cv_k_store(c, &y.t, at, cv_k_add(c, cv_k_load(c, &y.t, at),
                                     cv_k_mul(c, pt, cv_k_load(c, &v.t, cv_k_add(c, vrow, dv)))));
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);      /* key tiles */
    /* No visible key (causal, Sq > Sk): zeros, as the reference kernel. */
    const cv_kexpr *inv = cv_k_local(c, cv_k_select(c, cv_k_cmp(c, CV_KOP_GT, l, cv_k_f32(c, 0)),
                                                    cv_k_bin(c, CV_KOP_DIV, cv_k_f32(c, 1), l),
                                                    cv_k_f32(c, 0)));
    dv = cv_k_for(c, zero, v.D, CV_KFOR_INNER);
    at = cv_k_add(c, yrow, dv);
    cv_k_store(c, &y.t, at, cv_k_mul(c, cv_k_load(c, &y.t, at), inv));
    cv_k_close(c);
    cv_k_close(c);      /* query rows */
    cv_k_end(c);
    return 0;
}
