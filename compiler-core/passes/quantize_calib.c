/* Calibration for the int8 pass: the fp32 function runs in the reference
 * interpreter over the calibration inputs while the values to quantize are
 * observed (made outputs for the run), and each value's range comes from
 * its minimum and maximum, a percentile of its histogram, or the
 * threshold that minimises the KL divergence between the clipped
 * distribution and its quantized form (TensorRT's entropy calibration). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "compiler-core/passes/quantize.h"

int cv_calib_method_parse(const char *s)
{
    static const char *const names[] = {"minmax", "percentile", "entropy"};
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

int cv_qcal_observe(cv_func *f, const cv_tensor *in, cv_value *const *vals, int n,
                    cv_tensor *outs, cv_diag *d)
{
    /* The interpreter hands back f's returns: observe by swapping them. */
    cv_value **saved = f->returns;
    int saved_n = f->n_returns;
    f->returns = (cv_value **)vals;
    f->n_returns = n;
    int rc = cv_interp_run(f, in, f->n_inputs, outs, d);
    f->returns = saved;
    f->n_returns = saved_n;
    return rc;
}

/* ---- observers ---------------------------------------------------------------- */

static void remove_dir(char *dir)
{
    DIR *dh = opendir(dir);
    struct dirent *e;
    while (dh && (e = readdir(dh)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        char *path = cv_fs_join(dir, e->d_name);
        if (path)
            unlink(path);
        free(path);
    }
    if (dh)
        closedir(dh);
    rmdir(dir);
}

/* vals without repeats (an artifact returns each value once). */
static int dedupe(cv_qobs *o)
{
    o->uniq = calloc((size_t)o->n + 1, sizeof *o->uniq);
    o->slot = calloc((size_t)o->n + 1, sizeof *o->slot);
    if (!o->uniq || !o->slot)
        return -1;
    for (int i = 0; i < o->n; i++) {
        int k = 0;
        while (k < o->n_uniq && o->uniq[k] != o->vals[i])
            k++;
        if (k == o->n_uniq)
            o->uniq[o->n_uniq++] = o->vals[i];
        o->slot[i] = k;
    }
    return 0;
}

/* Compiles f with vals as its outputs into a temporary directory and
 * loads it; failures leave o->nat NULL (the interpreter takes over). */
static void open_native(cv_qobs *o)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = cv_fs_join(tmp && *tmp ? tmp : "/tmp", "cuvil-calib-XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        free(dir);
        return;
    }
    cv_func *f = o->f;
    cv_type *types = cv_arena_alloc_array(&f->module->arena, (size_t)o->n, sizeof *types);
    if (dedupe(o))
        types = NULL;
    cv_compile_info *info = malloc(sizeof *info);
    cv_diag quiet;
    cv_diag_init(&quiet);
    if (types && info && f->module->n_funcs > 0 && f->module->funcs[0] == f) {
        for (int i = 0; i < o->n_uniq; i++)
            types[i] = o->uniq[i]->type;
        cv_value **rets = f->returns;
        cv_type *outs = f->out_types;
        int n_rets = f->n_returns, n_outs = f->n_outputs;
        f->returns = o->uniq;
        f->n_returns = f->n_outputs = o->n_uniq;
        f->out_types = types;
        cv_compile_opts co = {.target = "native", .opt_level = 1, .emit = CV_EMIT_SO,
                              .out_dir = dir};
        int rc = cv_compile_native(f->module, &co, info, &quiet);
        f->returns = rets;
        f->n_returns = n_rets;
        f->out_types = outs;
        f->n_outputs = n_outs;
        if (rc == 0 && cv_native_open(dir, 2, &o->nat, &quiet))
            o->nat = NULL;
    }
    free(info);
    cv_diag_free(&quiet);
    o->dir = dir;
}

int cv_qobs_open(cv_qobs *o, cv_func *f, cv_value **vals, int n, bool native)
{
    *o = (cv_qobs){.f = f, .vals = vals, .n = n};
    if (native)
        open_native(o);
    return 0;
}

int cv_qobs_run(cv_qobs *o, const cv_tensor *in, cv_tensor *outs, cv_diag *d)
{
    if (o->nat) {
        cv_tensor *u = calloc((size_t)o->n_uniq, sizeof *u);
        int rc = u ? cv_native_run(o->nat, in, o->f->n_inputs, u, d)
                   : (cv_diag_error(d, CV_E_OUT_OF_MEMORY, o->f->span, "out of memory"), -1);
        bool *taken = rc == 0 ? calloc((size_t)o->n_uniq, sizeof *taken) : NULL;
        if (rc == 0 && !taken)
            rc = (cv_diag_error(d, CV_E_OUT_OF_MEMORY, o->f->span, "out of memory"), -1);
        memset(outs, 0, (size_t)o->n * sizeof *outs);
        for (int i = 0; rc == 0 && i < o->n; i++) {
            const cv_tensor *t = &u[o->slot[i]];
            if (!taken[o->slot[i]]) {       /* the first use takes the buffer */
                outs[i] = *t;
                taken[o->slot[i]] = true;
            } else if (cv_tensor_alloc(&outs[i], t->dtype, t->rank, t->dims) == 0) {
                memcpy(outs[i].data, t->data, cv_tensor_nbytes(t));
            } else {
                rc = (cv_diag_error(d, CV_E_OUT_OF_MEMORY, o->f->span, "out of memory"), -1);
            }
        }
        for (int k = 0; u && k < o->n_uniq; k++)
            if (!taken || !taken[k])
                cv_tensor_free(&u[k]);
        free(taken);
        free(u);
        return rc;
    }
    return cv_qcal_observe(o->f, in, o->vals, o->n, outs, d);
}

void cv_qobs_close(cv_qobs *o)
{
    if (o->nat)
        cv_native_close(o->nat);
    o->nat = NULL;
    if (o->dir)
        remove_dir(o->dir);
    free(o->dir);
    o->dir = NULL;
    free(o->uniq);
    free(o->slot);
    o->uniq = NULL;
    o->slot = NULL;
}

double cv_qcal_sqnr(const float *ref, const float *q, int64_t n)
{
    double s = 0, e = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = ref[i], x = r - q[i];
        s += r * r;
        e += x * x;
    }
    if (e == 0)
        return 200;
    return s == 0 ? -200 : 10 * log10(s / e);
}

/* ---- estimators over histograms ------------------------------------------ */

typedef struct vstat {
    double mn, mx;
    double zeros;               /* elements exactly 0 (entropy) */
    double *hist;               /* CV_QCAL_BINS: over [mn, mx] (percentile) or [0, amax] of |v| */
} vstat;

static void add_hist(vstat *v, const cv_tensor *t, bool absolute)
{
    double lo = absolute ? 0 : v->mn, hi = absolute ? fmax(fabs(v->mn), fabs(v->mx)) : v->mx;
    double w = (hi - lo) / CV_QCAL_BINS;
    const float *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        double x = absolute ? fabs(p[i]) : p[i];
        v->zeros += x == 0;
        int64_t b = w > 0 ? (int64_t)((x - lo) / w) : 0;
        v->hist[b < 0 ? 0 : b >= CV_QCAL_BINS ? CV_QCAL_BINS - 1 : b] += 1;
    }
}

static void percentile_range(const vstat *v, double pct, double *lo, double *hi)
{
    double total = 0, acc = 0, w = (v->mx - v->mn) / CV_QCAL_BINS;
    for (int b = 0; b < CV_QCAL_BINS; b++)
        total += v->hist[b];
    double cut = total * (100 - pct) / 100;
    int b0 = 0, b1 = CV_QCAL_BINS - 1;
    for (acc = 0; b0 < CV_QCAL_BINS - 1 && acc + v->hist[b0] <= cut; b0++)
        acc += v->hist[b0];
    for (acc = 0; b1 > 0 && acc + v->hist[b1] <= cut; b1--)
        acc += v->hist[b1];
    *lo = v->mn >= 0 ? v->mn : v->mn + b0 * w;
    *hi = v->mn + (b1 + 1) * w;
}

/* KL(P || Q): P is the first i bins with the outliers folded into bin
 * i-1 (what clipping at bin i does), Q the same bins without them merged
 * into `levels` levels and expanded back over the non-empty bins, so a
 * threshold that clips much is penalised. */
static double kl_at(const double *h, int i, int levels, double *p, double *q)
{
    double tail = 0;
    for (int b = i; b < CV_QCAL_BINS; b++)
        tail += h[b];
    memcpy(p, h, (size_t)i * sizeof *p);
    p[i - 1] += tail;
    for (int l = 0; l < levels; l++) {
        int b0 = l * i / levels, b1 = (l + 1) * i / levels;
        double sum = 0;
        int nz = 0;
        for (int b = b0; b < b1; b++) {
            sum += h[b];
            nz += h[b] != 0;
        }
        for (int b = b0; b < b1; b++)
            q[b] = h[b] != 0 ? sum / nz : 0;
    }
    double sp = 0, sq = 0, kl = 0;
    for (int b = 0; b < i; b++) {
        sp += p[b];
        sq += q[b];
    }
    for (int b = 0; b < i; b++)
        if (p[b] > 0)
            kl += (p[b] / sp) * log((p[b] / sp) / (q[b] > 0 ? q[b] / sq : 1e-12));
    return kl;
}

static double entropy_threshold(const vstat *v, int levels)
{
    double amax = fmax(fabs(v->mn), fabs(v->mx)), best = INFINITY;
    double *p = malloc(CV_QCAL_BINS * sizeof *p), *q = malloc(CV_QCAL_BINS * sizeof *q);
    int best_i = CV_QCAL_BINS;
    /* The exact zeros (after a relu, often most values) are exact at any
     * threshold: left in, their spike hides the tail that clipping loses. */
    double *h = malloc(CV_QCAL_BINS * sizeof *h);
    if (h) {
        memcpy(h, v->hist, CV_QCAL_BINS * sizeof *h);
        h[0] = v->zeros < h[0] ? h[0] - v->zeros : 0;
    }
    for (int i = levels; h && p && q && i <= CV_QCAL_BINS; i += 8) {
        double kl = kl_at(h, i, levels, p, q);
        if (kl < best) {
            best = kl;
            best_i = i;
        }
    }
    free(h);
    free(p);
    free(q);
    return amax * best_i / CV_QCAL_BINS;
}

/* ---- the calibration runs --------------------------------------------------- */

static int run_all(cv_qobs *o, const cv_qsamples *s, int n_cal, int first, int n, vstat *st,
                   int pass, cv_diag *d)
{
    cv_tensor *outs = calloc((size_t)o->n, sizeof *outs);
    if (!outs)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, o->f->span, "out of memory calibrating");
    int rc = 0;
    for (int k = 0; rc == 0 && k < n_cal; k++) {
        rc = cv_qobs_run(o, &s->in[k * s->n_in], outs, d);
        for (int i = 0; rc == 0 && i < n; i++) {
            const cv_tensor *t = &outs[first + i];
            const float *p = t->data;
            if (pass == 0)
                for (int64_t e = 0; e < t->numel; e++) {
                    st[i].mn = fmin(st[i].mn, p[e]);
                    st[i].mx = fmax(st[i].mx, p[e]);
                }
            else
                add_hist(&st[i], t, pass == 2);
        }
        for (int i = 0; rc == 0 && i < o->n; i++)
            cv_tensor_free(&outs[i]);
    }
    free(outs);
    return rc;
}

int cv_qcal_ranges(cv_qobs *o, const cv_qsamples *s, int n_cal, int first, int n,
                   const cv_quant_opts *q, double (*range)[2], cv_diag *d)
{
    vstat *st = calloc((size_t)n + 1, sizeof *st);
    double *hist = q->method != CV_CALIB_MINMAX
                       ? calloc((size_t)n * CV_QCAL_BINS + 1, sizeof *hist) : NULL;
    if (!st || (q->method != CV_CALIB_MINMAX && !hist)) {
        free(st);
        free(hist);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, o->f->span, "out of memory calibrating");
    }
    for (int i = 0; i < n; i++) {
        st[i] = (vstat){INFINITY, -INFINITY, 0, hist ? hist + (size_t)i * CV_QCAL_BINS : NULL};
    }
    int rc = run_all(o, s, n_cal, first, n, st, 0, d);
    if (rc == 0 && q->method != CV_CALIB_MINMAX)
        rc = run_all(o, s, n_cal, first, n, st, q->method == CV_CALIB_ENTROPY ? 2 : 1, d);
    for (int i = 0; rc == 0 && i < n; i++) {
        double lo = st[i].mn, hi = st[i].mx;
        if (q->method == CV_CALIB_PERCENTILE) {
            percentile_range(&st[i], q->percentile > 0 ? q->percentile : 99.99, &lo, &hi);
        } else if (q->method == CV_CALIB_ENTROPY) {
            double t = entropy_threshold(&st[i], st[i].mn >= 0 ? 255 : 128);
            lo = st[i].mn >= 0 ? 0 : -t;
            hi = t;
        }
        range[i][0] = fmin(lo, 0);
        range[i][1] = fmax(hi, 0);
    }
    free(st);
    free(hist);
    return rc;
}
