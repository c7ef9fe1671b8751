/* -p int8: static quantization.  Every ungrouped or depthwise conv2d with
 * constant f32 weights, and every gemm/matmul with constant weights (as a
 * 1x1 qconv2d, quantize_lin.c), becomes a qconv2d: symmetric per-output-channel int8
 * weights (scale max|w|/127), an asymmetric u8 activation (one scale and
 * zero point per tensor, from calibration), exact integer sums,
 * dequantisation and the fused bias/residual/activation in the kernel's
 * epilogue, and the output requantised to u8 in the kernel when only int8
 * layers read it (quantize_requant.c).  Other grouped convolutions and
 * every other op stay f32 (the report lists them).  The
 * quality gate runs the fp32 and the int8 function on a held-out
 * calibration input (the last file) and reports the SQNR of each output
 * and each quantized layer's output (after its fused epilogue). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/quantize.h"
#include "compiler-core/runtime/cvrt.h"

typedef struct qplan {
    cv_op **ops;                /* the convolutions and gemm/matmul ops to quantize */
    cv_op **qop;                /* each one's qconv2d once rewritten */
    cv_value **obs;             /* f's outputs, each op's result (the SQNR report), then
                                   each op's input (calibration) */
    int n, n_out;
    double (*range)[2];
    double macs;                /* multiply-adds of the ops per image */
} qplan;

/* A depthwise convolution: one filter per channel, multiplier 1. */
static bool depthwise(const cv_op *op)
{
    const cv_shape *xs = &op->operands[0]->type.shape, *ws = &op->operands[1]->type.shape;
    int64_t g = cv_op_int(op, "groups", 1);
    return g > 1 && g == xs->d[1].n && g == ws->d[0].n && ws->d[1].n == 1;
}

static bool candidate(const cv_op *op)
{
    if (!cv_op_is(op, CV_OP_CONV2D))
        return false;
    const cv_value *x = op->operands[0], *w = op->operands[1], *y = op->results[0];
    const cv_value *b = op->n_operands > 2 ? op->operands[2] : NULL;
    const cv_shape *xs = &x->type.shape, *ws = &w->type.shape, *ys = &y->type.shape;
    if (x->type.dtype != CV_F32 || w->kind != CV_VAL_PARAM || !w->param->data ||
        w->type.dtype != CV_F32 || (b && (b->type.dtype != CV_F32)) || ws->rank != 4)
        return false;
    for (int i = 1; i < 4; i++)
        if (xs->d[i].sym || ws->d[i].sym || ys->d[i].sym)
            return false;
    if (cv_op_int(op, "groups", 1) == 1)
        return ws->d[2].n * ws->d[3].n * CVRT_QCONV_CP(ws->d[1].n) <= CVRT_QCONV_MAX_K;
    int64_t st[2] = {1, 1}, dl[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    cv_op_ints(op, "stride", st, 2);
    cv_op_ints(op, "dilation", dl, 2);
    cv_op_ints(op, "pad", pad, 4);
    return depthwise(op) && ws->d[2].n * ws->d[3].n <= 512 &&
           CVRT_QDW_FLOATS(xs->d[2].n, xs->d[3].n, ws->d[2].n, ws->d[3].n, st[0], st[1], pad[0],
                           pad[1], dl[0], dl[1], ys->d[2].n, ys->d[3].n) <= CVRT_QDW_MAX_FLOATS;
}

static void plan_free(qplan *p)
{
    free(p->ops);
    free(p->qop);
    free(p->obs);
    free(p->range);
}

static int plan(cv_func *f, qplan *p, cv_diag *d)
{
    memset(p, 0, sizeof *p);
    size_t cap = 2 * (size_t)f->n_ops + (size_t)f->n_returns + 1;
    p->ops = calloc(cap, sizeof *p->ops);
    p->qop = calloc(cap, sizeof *p->qop);
    p->obs = calloc(cap, sizeof *p->obs);
    p->range = calloc(cap, sizeof *p->range);
    if (!p->ops || !p->qop || !p->obs || !p->range)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory planning int8");
    for (int i = 0; i < f->n_returns; i++)
        p->obs[p->n_out++] = f->returns[i];
    int *uses = cv_pass_count_uses(f);
    if (!uses)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory planning int8");
    /* Each layer is observed as the value it will stand for once its
     * residual add and activation are fused (quantize_requant.c). */
    for (int i = 0; i < f->n_ops; i++)
        if (cv_qlin_candidate(f->ops[i])) {
            p->macs += cv_qlin_macs(f->ops[i]);
            p->obs[p->n_out + p->n] = cv_qlin_end(f, uses, f->ops[i]);
            p->ops[p->n++] = f->ops[i];
        } else if (candidate(f->ops[i])) {
            const cv_shape *y = &f->ops[i]->results[0]->type.shape;
            const cv_shape *w = &f->ops[i]->operands[1]->type.shape;
            cv_qchain ch;
            cv_qchain_find(f, uses, f->ops[i], &ch);
            p->macs += (double)cv_shape_numel(w) * (double)(y->d[2].n * y->d[3].n);
            p->obs[p->n_out + p->n] = ch.end;
            p->ops[p->n++] = f->ops[i];
        }
    free(uses);
    for (int i = 0; i < p->n; i++)
        p->obs[p->n_out + p->n + i] = p->ops[i]->operands[0];
    return 0;
}

int cv_qweights(cv_func *f, const cv_value *w, cv_value **wq, cv_value **ws)
{
    const cv_shape *s = &w->type.shape;
    int64_t m = s->d[0].n, dims[CV_MAX_RANK], k = cv_shape_numel(s) / (m ? m : 1);
    for (int i = 0; i < s->rank; i++)
        dims[i] = s->d[i].n;
    cv_tensor q, sc;
    if (cv_tensor_alloc(&q, CV_I8, s->rank, dims))
        return -1;
    if (cv_tensor_alloc(&sc, CV_F32, 1, &m)) {
        cv_tensor_free(&q);
        return -1;
    }
    const float *src = w->param->data;
    for (int64_t r = 0; r < m; r++) {
        float amax = 0;
        for (int64_t j = 0; j < k; j++)
            amax = fmaxf(amax, fabsf(src[r * k + j]));
        float scale = amax > 0 ? amax / 127.0f : 1.0f;
        ((float *)sc.data)[r] = scale;
        for (int64_t j = 0; j < k; j++) {
            float v = nearbyintf(src[r * k + j] / scale);
            ((int8_t *)q.data)[r * k + j] = (int8_t)fminf(fmaxf(v, -127), 127);
        }
    }
    *wq = cv_pass_add_const(f, &q);
    *ws = cv_pass_add_const(f, &sc);
    cv_tensor_free(&q);
    cv_tensor_free(&sc);
    return *wq && *ws ? 0 : -1;
}

static int rewrite(cv_func *f, cv_op *op, const double range[2], cv_op **qop, cv_diag *d)
{
    double scale = (range[1] - range[0]) / 255;
    if (!(scale > 0))
        scale = 1;
    double zp = fmin(fmax(nearbyint(-range[0] / scale), 0), 255);
    if (!cv_op_is(op, CV_OP_CONV2D))
        return cv_qlin_rewrite(f, op, (float)scale, (int64_t)zp, qop, d);
    *qop = op;
    cv_value *wq, *ws;
    cv_value **ops = cv_arena_alloc_array(&f->module->arena, 4, sizeof *ops);
    if (!ops || cv_qweights(f, op->operands[1], &wq, &ws))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory quantizing weights");
    ops[0] = op->operands[0];
    ops[1] = wq;
    ops[2] = ws;
    if (op->n_operands > 2)
        ops[3] = op->operands[2];
    op->n_operands++;
    op->operands = ops;
    op->def = cv_op_def_lookup("qconv2d");
    op->name = op->def->name;
    cv_op_set_float(op, "x_scale", (float)scale);
    cv_op_set_int(op, "x_zp", (int64_t)zp);
    return 0;
}

static const char *layer_name(const cv_op *op)
{
    return op->n_locs && op->locs[0].line == 0 && op->locs[0].file ? op->locs[0].file
                                                                   : op->results[0]->name;
}

/* Appends printf text to rep (truncating). */
static void say(char *rep, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *rep, size_t size, const char *fmt, ...)
{
    size_t at = strlen(rep);
    if (at + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep + at, size - at, fmt, ap);
    va_end(ap);
}

/* Ops left in f32, by name. */
static void list_f32(const cv_func *f, char *rep, size_t size)
{
    say(rep, size, "  ran in f32:");
    int shown = 0;
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op_def *def = f->ops[i]->def;
        bool seen = cv_op_is(f->ops[i], CV_OP_QCONV2D);
        for (int j = 0; j < i && !seen; j++)
            seen = f->ops[j]->def == def;
        if (seen)
            continue;
        int cnt = 0;
        for (int j = i; j < f->n_ops; j++)
            cnt += f->ops[j]->def == def;
        say(rep, size, "%s %s x%d", shown++ ? "," : "", def->name, cnt);
    }
    say(rep, size, "%s\n", shown ? "" : " nothing");
}

/* v as f32 (a u8 value dequantised with its producer's y_scale, y_zp). */
static const float *as_f32(const cv_value *v, const cv_tensor *t, float **tmp)
{
    *tmp = NULL;
    if (t->dtype == CV_F32 || v->kind != CV_VAL_RESULT || !v->def)
        return t->data;
    *tmp = malloc((size_t)(t->numel ? t->numel : 1) * sizeof **tmp);
    float s = (float)cv_op_float(v->def, "y_scale", 1);
    int64_t zp = cv_op_int(v->def, "y_zp", 0);
    for (int64_t i = 0; *tmp && i < t->numel; i++)
        (*tmp)[i] = (float)(cv_tensor_get_i64(t, i) - zp) * s;
    return *tmp;
}

/* SQNR of every observed value: the fp32 reference ref against the int8 run. */
static int gate(cv_func *f, const qplan *p, const cv_tensor *held, cv_tensor *ref,
                const cv_quant_opts *q, char *rep, size_t size, cv_diag *d)
{
    int n = p->n_out + p->n, rc;
    cv_tensor *got = calloc((size_t)n, sizeof *got);
    cv_value **now = calloc((size_t)n, sizeof *now);
    if (!got || !now) {
        free(got);
        free(now);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory");
    }
    for (int i = 0; i < n; i++)
        now[i] = i < p->n_out ? f->returns[i] : p->ops[i - p->n_out]->results[0];
    rc = cv_qcal_observe(f, held, now, n, got, d);
    double worst = INFINITY;
    for (int i = 0; rc == 0 && i < n; i++) {
        float *tmp;
        const float *g = as_f32(now[i], &got[i], &tmp);
        double s = g ? cv_qcal_sqnr(ref[i].data, g, ref[i].numel) : 0;
        free(tmp);
        if (i < p->n_out) {
            say(rep, size, "  output %%%s: SQNR %.1f dB\n", p->obs[i]->name, s);
            worst = fmin(worst, s);
        } else {
            const cv_op *op = p->qop[i - p->n_out];
            say(rep, size, "  layer %-32s int8  SQNR %5.1f dB  (x_scale %.4g, x_zp %lld)%s%s\n",
                layer_name(p->ops[i - p->n_out]), s, cv_op_float(op, "x_scale", 0),
                (long long)cv_op_int(op, "x_zp", 0),
                op->operands[0]->type.dtype == CV_U8 ? " u8 in" : "",
                op->results[0]->type.dtype == CV_U8 ? " u8 out" : "");
        }
    }
    for (int i = 0; rc == 0 && i < n; i++)
        cv_tensor_free(&got[i]);
    free(got);
    free(now);
    if (rc == 0 && q->min_sqnr > 0 && worst < q->min_sqnr)
        rc = (cv_diag_error(d, CV_E_MIN_SQNR, f->span, "int8 output SQNR %.1f dB is below --min-sqnr "
                            "%.1f dB (see the per-layer report)", worst, q->min_sqnr), -1);
    return rc;
}

/* Below this many multiply-adds the interpreter calibrates faster than a
 * native build of the model would take to compile. */
#define NATIVE_CALIB_MACS 2e8

static int quantize(cv_func *f, qplan *p, const cv_qsamples *s, const cv_quant_opts *q,
                    char *rep, size_t size, cv_diag *d)
{
    /* The last file is held out for the SQNR report (unless it is the only one). */
    int n_cal = s->n > 1 ? s->n - 1 : 1;
    const cv_tensor *held = &s->in[(s->n - 1) * s->n_in];
    int n = p->n_out + p->n;
    cv_qobs o;
    cv_qobs_open(&o, f, p->obs, n + p->n, p->macs * (n_cal + 1) > NATIVE_CALIB_MACS);
    static const char *const methods[] = {"minmax", "percentile", "entropy"};
    say(rep, size, "precision int8: %d of %d ops quantized (calibration: %s over %d inputs, "
        "%s; SQNR against fp32 on 1 held-out input)\n", p->n, f->n_ops, methods[q->method],
        n_cal, o.nat ? "native" : "interpreter");
    cv_tensor *ref = calloc((size_t)(n + p->n), sizeof *ref);
    int rc = ref ? 0 : (cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory"), -1);
    if (rc == 0)
        rc = cv_qcal_ranges(&o, s, n_cal, n, p->n, q, p->range, d);
    if (rc == 0)
        rc = cv_qobs_run(&o, held, ref, d);
    bool have_ref = rc == 0;
    cv_qobs_close(&o);
    for (int i = 0; rc == 0 && i < p->n; i++)
        rc = rewrite(f, p->ops[i], p->range[i], &p->qop[i], d);
    cv_qrequant_stats rq = {0};
    if (rc == 0)
        rc = cv_quantize_requant(f, true, &rq, d);
    if (rc == 0)
        say(rep, size, "  fused into the int8 kernels: %d residual adds, %d activations; "
            "requantised in the kernel: %d of %d int8 layers write u8 for the next int8 "
            "layer (%d read u8, %d u8 residuals)\n", rq.adds, rq.acts, rq.u8_out, rq.layers,
            rq.u8_in, rq.u8_res);
    if (rc == 0)
        rc = gate(f, p, held, ref, q, rep, size, d);
    if (rc == 0)
        list_f32(f, rep, size);
    for (int i = 0; have_ref && i < n + p->n; i++)
        cv_tensor_free(&ref[i]);
    free(ref);
    return rc;
}

int cv_quantize_int8(cv_func *f, const cv_quant_opts *q, char *rep, size_t size, cv_diag *d)
{
    cv_qsamples s;
    if (cv_qcal_load(f, q->calibration_root, q->calibration, &s, d))
        return -1;
    qplan p;
    int rc = plan(f, &p, d);
    if (rc == 0)
        rc = quantize(f, &p, &s, q, rep, size, d);
    plan_free(&p);
    cv_qcal_free(&s);
    cv_pass_stats st = {0};
    if (cv_pass_dce(f, &st) && rc == 0)
        rc = (cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory removing dead code"), -1);
    return rc;
}

int cv_passes_quantize(cv_func *f, const cv_quant_opts *q, char *rep, size_t size, cv_diag *d)
{
    rep[0] = 0;
    if (!q || q->precision == CV_PRECISION_FP32)
        return 0;
    if (q->precision == CV_PRECISION_INT8)
        return cv_quantize_int8(f, q, rep, size, d);
    return cv_quantize_half(f, q, rep, size, d);
}
