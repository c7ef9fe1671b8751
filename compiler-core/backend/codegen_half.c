/* -p fp16 / bf16 convolutions (passes/quantize_half.c stores their weights
 * in the 16-bit type behind a cast to f32).  Widening them by that cast on
 * every run, then packing the f32 copy inside the GEMM, cost more than the
 * f32 model's whole convolution time saved; instead the 16-bit weights are
 * packed at compile time into the same P8 form as f32 constants, still 16
 * bits each, the cast emits nothing, and the GEMM widens each task's K
 * block of them into its thread's buffer (cvrt_conv2d_p8h), so the math is
 * the f32 kernel's.  fp16 convolutions the blocked (NCHWc) layout takes
 * are packed in its order, still f16, and each task widens the group of
 * output blocks it computes (cvrt_nchwc_conv2d_h, cv_cg_half_widen); the
 * few f16 depthwise weights are widened at compile time.  CUDA runs the same
 * 16-bit weights on its tensor cores.  Where the target has AVX512_BF16,
 * bf16 convolutions compute in bf16 instead: weights packed as vdpbf16ps's
 * pairs, the image rounded to bf16 once per layer, f32 sums (cvrt_qconv2d's
 * CVRT_Q_BF16).  fp16 has no such path on purpose: AVX512-FP16's (and
 * AArch64 FP16's) arithmetic accumulates in fp16, while the issue asks for
 * f32 sums; the f32 GEMM over widened weights (vcvtph2ps) is the
 * f32-accumulating form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/codegen_half.h"
#include "compiler-core/backend/targets.h"
#include "compiler-core/runtime/cvrt.h"

enum { P8 = CVRT_P8 };

void cv_cg_pack_p8(void *dst, const void *src, size_t esz, int64_t groups, int64_t ocg, int64_t k)
{
    int64_t rows = (ocg + P8 - 1) / P8 * P8;
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (int64_t gi = 0; gi < groups; gi++)
        for (int64_t i = 0; i < ocg; i++)
            for (int64_t q = 0; q < k; q++)
                memcpy(d + (size_t)(((gi * rows + i / P8 * P8) * k + q * P8) + i % P8) * esz,
                       s + (size_t)((gi * ocg + i) * k + q) * esz, esz);
}

/* The 16-bit constant that v widens (v = cast(param) -> f32), or NULL. */
static const cv_value *half_source(const cv_value *v)
{
    const cv_op *op = v->kind == CV_VAL_RESULT ? v->def : NULL;
    if (!op || !op->def || !cv_op_is(op, CV_OP_CAST) || op->n_operands != 1 ||
        v->type.dtype != CV_F32)
        return NULL;
    const cv_value *w = op->operands[0];
    if (w->kind != CV_VAL_PARAM || !w->param || !w->param->data ||
        (w->type.dtype != CV_F16 && w->type.dtype != CV_BF16) ||
        !cv_shape_is_static(&w->type.shape) ||
        w->param->nbytes < (size_t)cv_shape_numel(&w->type.shape) * 2)
        return NULL;
    return w;
}

/* Whether conv2d `op` reads v only as its weights and runs on the GEMM:
 * f32 result, static channel counts with more than one input channel per
 * group (cv_cg_conv2d's choice, which then folds OCg to a constant). */
static bool gemm_conv_of(const cv_op *op, const cv_value *v)
{
    if (!op->def || !cv_op_is(op, CV_OP_CONV2D) || op->n_operands < 2 ||
        op->operands[1] != v || op->operands[0] == v ||
        (op->n_operands > 2 && op->operands[2] == v))
        return false;
    const cv_value *x = op->operands[0], *y = op->results[0];
    int64_t groups = cv_op_int(op, "groups", 1);
    if (v->type.shape.rank != 4)
        return false;
    if (y->type.dtype != CV_F32 || x->type.shape.rank != 4 || y->type.shape.rank != 4 ||
        groups < 1)
        return false;
    const cv_dim *C = &x->type.shape.d[1], *OC = &y->type.shape.d[1];
    return !C->sym && !OC->sym && C->n % groups == 0 && C->n / groups > 1 &&
           OC->n % groups == 0 && v->type.shape.d[0].n == OC->n;
}

/* Whether gemm `op` reads v only as its B, transposed (a fully connected
 * layer's weights: each output column is a dot product along a row of v),
 * with an f32 result (cv_cg_gemm then calls the runtime). */
static bool fc_gemm_of(const cv_op *op, const cv_value *v)
{
    return op->def && cv_op_is(op, CV_OP_GEMM) && op->n_operands >= 2 &&
           op->operands[1] == v && op->operands[0] != v &&
           (op->n_operands < 3 || op->operands[2] != v) && cv_op_int(op, "trans_b", 0) != 0 &&
           v->type.shape.rank == 2 && op->results[0]->type.dtype == CV_F32;
}

/* Whether matmul or gemm `op` reads the bf16 constant behind v only as its
 * 2-D B (matmul: [K, N]; gemm: either way round) into an f32 result, on a
 * target that reads B's pair form (cv_cg_bf16_pairs). */
static bool pair_gemm_of(const cv_kprog *p, const cv_op *op, const cv_value *v)
{
    const cv_value *w = half_source(v);
    if (!p->packed_b || !w || w->type.dtype != CV_BF16 || !op->def || op->n_operands < 2 ||
        op->operands[1] != v || op->operands[0] == v || v->type.shape.rank != 2 ||
        op->results[0]->type.dtype != CV_F32)
        return false;
    if (cv_op_is(op, CV_OP_MATMUL))
        return op->n_operands == 2;
    return cv_op_is(op, CV_OP_GEMM) && (op->n_operands < 3 || op->operands[2] != v);
}

const cv_kten *cv_cg_bf16_pairs(cv_codegen_ctx *c, bool tb, cv_kten *out)
{
    const cv_value *v = c->op->n_operands > 1 ? c->op->operands[1] : NULL;
    if (!v || !c->prog->half_weights || !pair_gemm_of(c->prog, c->op, v))
        return NULL;
    const cv_value *w = half_source(v);
    int64_t K = w->type.shape.d[tb].n, N = w->type.shape.d[!tb].n;
    int64_t k2p = ((K + 1) / 2 + 15) / 16 * 16, np = (N + CVRT_PB - 1) / CVRT_PB;
    int64_t n = np * k2p * CVRT_PB * 2;
    uint16_t *buf = calloc((size_t)(n ? n : 1), sizeof *buf);
    if (!buf) {
        c->prog->oom = true;    /* the cast emitted nothing */
        return NULL;
    }
    const uint16_t *src = w->param->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            buf[(((j / CVRT_PB) * k2p + k / 2) * CVRT_PB + j % CVRT_PB) * 2 + k % 2] =
                tb ? src[j * K + k] : src[k * N + j];
    cv_shape shape = {.rank = 1, .d = {{.n = n}}};
    *out = cv_cg_const(c, CV_BF16, &shape, buf);
    free(buf);
    c->prog->n_bf16_gemms++;
    return out;
}

bool cv_cg_cast_feeds_half_convs(const cv_codegen_ctx *c)
{
    const cv_value *v = c->op->results[0];
    if (!c->prog->half_weights || c->scalar_mode || c->op->n_results != 1 || !half_source(v))
        return false;
    const cv_func *f = c->op->func;
    for (int i = 0; i < f->n_returns; i++)
        if (f->returns[i] == v)
            return false;
    int uses = 0;
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        for (int k = 0; k < op->n_operands; k++)
            if (op->operands[k] == v) {
                if (!gemm_conv_of(op, v) && !fc_gemm_of(op, v) && !pair_gemm_of(c->prog, op, v))
                    return false;
                uses++;
                break;
            }
    }
    return uses > 0;
}

const cv_kten *cv_cg_half_matrix(cv_codegen_ctx *c, cv_kten *out, int64_t *kind)
{
    const cv_value *v = c->op->operands[1];
    const cv_value *w = c->prog->half_weights ? half_source(v) : NULL;
    if (!w || !fc_gemm_of(c->op, v))
        return NULL;
    *out = cv_cg_value(c, w);
    *kind = w->type.dtype == CV_BF16 ? CVRT_W_BF16 : CVRT_W_F16;
    c->prog->n_half_ops++;
    return out;
}

const cv_kten *cv_cg_half_packed(cv_codegen_ctx *c, cv_kten *out, int64_t *kind)
{
    const cv_value *v = c->op->operands[1];
    const cv_value *w = c->prog->half_weights ? half_source(v) : NULL;
    if (!w || !gemm_conv_of(c->op, v))
        return NULL;
    const cv_shape *s = &w->type.shape;
    int64_t groups = cv_op_int(c->op, "groups", 1);
    int64_t ocg = c->op->results[0]->type.shape.d[1].n / groups;
    int64_t k = s->d[1].n * s->d[2].n * s->d[3].n;
    int64_t n = groups * ((ocg + P8 - 1) / P8 * P8) * k;
    uint16_t *buf = calloc((size_t)(n ? n : 1), sizeof *buf);
    if (!buf) {
        /* The cast emitted nothing: there is no f32 copy to fall back on. */
        c->prog->oom = true;
        return NULL;
    }
    cv_cg_pack_p8(buf, w->param->data, sizeof *buf, groups, ocg, k);
    cv_shape shape = {.rank = 1, .d = {{.n = n}}};
    *out = cv_cg_const(c, w->type.dtype, &shape, buf);
    free(buf);
    *kind = w->type.dtype == CV_BF16 ? CVRT_W_BF16 : CVRT_W_F16;
    c->prog->n_half_ops++;
    return out;
}

float *cv_cg_half_widen(cv_codegen_ctx *c)
{
    const cv_value *v = c->op->n_operands > 1 ? c->op->operands[1] : NULL;
    const cv_value *w = v ? half_source(v) : NULL;
    int64_t groups = c->op->n_operands > 1 ? cv_op_int(c->op, "groups", 1) : 0;
    if (!w || w->type.dtype != CV_F16 || !c->op->def || !cv_op_is(c->op, CV_OP_CONV2D) ||
        (groups != 1 && w->type.shape.d[1].n != 1))
        return NULL;
    int64_t n = cv_shape_numel(&w->type.shape);
    float *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) {
        c->prog->oom = true;
        return NULL;
    }
    const uint16_t *src = w->param->data;
    for (int64_t i = 0; i < n; i++)
        out[i] = cv_f16_to_f32(src[i]);
    c->prog->n_half_ops++;
    return out;
}

cv_kten cv_cg_half_narrow(cv_codegen_ctx *c, const cv_shape *s, const float *buf)
{
    int64_t n = cv_shape_numel(s);
    uint16_t *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    if (!h) {
        c->prog->oom = true;
        return cv_cg_const(c, CV_F32, s, buf);
    }
    for (int64_t i = 0; i < n; i++)
        h[i] = cv_f32_to_f16(buf[i]);
    cv_kten t = cv_cg_const(c, CV_F16, s, h);
    free(h);
    return t;
}

unsigned cv_cg_half_mode(const char *target, bool emit_c)
{
    if (cv_target_is_cuda(target))
        return CV_HALF_WEIGHTS;     /* cuda/host/cuhost_rt.c: cvrt_conv2d_p8h, cvrt_sgemm_h */
    if (emit_c)
        return CV_HALF_WEIGHTS;
    if (cv_target_find(target))
        return CV_HALF_WEIGHTS | CV_HALF_PACKED_B;
    char triple[64], features[4096];
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = cv_target_describe(target, triple, features, sizeof features, &quiet);
    cv_diag_free(&quiet);
    bool dot = rc == 0 && strncmp(triple, "x86_64", 6) == 0 && strstr(features, "+avx512bf16");

    return CV_HALF_WEIGHTS | CV_HALF_PACKED_B | (dot ? CV_HALF_BF16_DOT : 0);
}

/* The bf16 weights w [OC][C][KH][KW] as cvrt_qconv2d's CVRT_Q_BF16 rows of pairs. */
static int pack_bf16_pairs(cv_codegen_ctx *c, const cv_value *w, int64_t Cp, cv_kten *out)
{
    const cv_shape *s = &w->type.shape;
    int64_t OC = s->d[0].n, C = s->d[1].n, taps = s->d[2].n * s->d[3].n;
    int64_t KUp = (taps * Cp / 2 + CVRT_Q_KUB - 1) / CVRT_Q_KUB * CVRT_Q_KUB;
    int64_t OCp = (OC + CVRT_Q_OCB - 1) / CVRT_Q_OCB * CVRT_Q_OCB;
    uint16_t *buf = calloc((size_t)(OCp * KUp * 2), sizeof *buf);
    if (!buf)
        return cv_diag_fail(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "out of memory packing bf16 "
                            "weights");
    const uint16_t *src = w->param->data;
    for (int64_t oc = 0; oc < OC; oc++)
        for (int64_t ci = 0; ci < C; ci++)
            for (int64_t t = 0; t < taps; t++)
                buf[oc * KUp * 2 + t * Cp + ci] = src[(oc * C + ci) * taps + t];
    cv_shape shape = {.rank = 1, .d = {{.n = OCp * KUp * 2}}};
    *out = cv_cg_const(c, CV_BF16, &shape, buf);
    free(buf);
    return 0;
}

int cv_cg_bf16_conv2d(cv_codegen_ctx *c)
{
    const cv_op *op = c->op;
    const cv_value *v = op->n_operands > 1 ? op->operands[1] : NULL;
    const cv_value *w = v && c->prog->bf16_dot && !c->scalar_mode ? half_source(v) : NULL;
    if (!w || w->type.dtype != CV_BF16 || !gemm_conv_of(op, v) || cv_op_int(op, "groups", 1) != 1)
        return 0;
    const cv_value *x = op->operands[0], *y = op->results[0];
    if (x->type.dtype != CV_F32 || x->type.shape.rank != 4 || y->type.shape.rank != 4)
        return 0;
    for (int i = 1; i < 4; i++)     /* the batch may be symbolic */
        if (x->type.shape.d[i].sym || y->type.shape.d[i].sym)
            return 0;
    int64_t Cp = CVRT_BCONV_CP(x->type.shape.d[1].n);
    if (w->type.shape.d[2].n * w->type.shape.d[3].n * Cp > CVRT_BCONV_MAX_K)
        return 0;
    cv_kten wp;
    if (pack_bf16_pairs(c, w, Cp, &wp) || cv_cg_qconv_bf16(c, &wp))
        return -1;
    c->prog->n_bf16_ops++;
    return 1;
}

void cv_cg_half_report(const cv_kprog *p, const char *target, char *rep, size_t size)
{
    size_t at = strlen(rep);
    if (p->n_half_ops && cv_target_is_cuda(target) && at + 1 < size) {
        snprintf(rep + at, size - at, "codegen: f16/bf16 tensor-core compute (wmma m16n16k16), "
                 "f32 accumulation: %d ops (16-bit weights on the device, activations rounded "
                 "to 16 bits as they are loaded)\n", p->n_half_ops);
        return;
    }
    if (p->n_bf16_ops && at + 1 < size)
        at += (size_t)snprintf(rep + at, size - at, "codegen: bf16 compute, f32 accumulation: "
                               "conv2d x%d (bf16 activations x bf16 weights: AMX tdpbf16ps "
                               "where the CPU and kernel grant the tile state, else AVX512_BF16 "
                               "vdpbf16ps)\n", p->n_bf16_ops);
    if (p->n_bf16_gemms && at + 1 < size)
        at += (size_t)snprintf(rep + at, size - at, "codegen: matmul/gemm x%d read their bf16 "
                               "weights as packed at compile time (16 bits, no cast kernel, no "
                               "run-time packing), f32 sums: AMX tdpbf16ps where the CPU and "
                               "kernel grant the tile state, else AVX512_BF16 vdpbf16ps (both "
                               "with the activations rounded to bf16), else f32 FMAs on the "
                               "weights widened one K block at a time\n", p->n_bf16_gemms);
    if (p->n_half_ops && at + 1 < size)
        snprintf(rep + at, size - at, "codegen: f32 compute on 16-bit weights widened one GEMM "
                 "block, blocked-layout group of output channels (f16 depthwise: at compile "
                 "time) or dot-product chunk at a time: %d ops (f16 is never summed in f16: "
                 "AVX512-FP16 and AArch64 FP16 arithmetic would accumulate in f16); any others "
                 "through a cast to f32\n", p->n_half_ops);
    else if (!p->n_bf16_ops && !p->n_bf16_gemms && strstr(rep, " stored as ") && at + 1 < size)
        snprintf(rep + at, size - at, "codegen: f32 compute everywhere, the 16-bit weights "
                 "widened by a cast to f32\n");
}
