/* Internal to the reduced-precision passes (quantize*.c): calibration
 * data, observation of intermediate values through the reference
 * interpreter, and the range estimators. */
#ifndef CV_PASSES_QUANTIZE_H
#define CV_PASSES_QUANTIZE_H

#include "compiler-core/cuvil.h"
#include "compiler-core/passes/passes.h"

enum { CV_QCAL_MAX_FILES = 4096, CV_QCAL_BINS = 2048 };

/* The calibration samples: n of them, each one tensor per model input
 * (one .npy file each). */
typedef struct cv_qsamples {
    cv_tensor *in;              /* owned, n * n_in entries (cv_tensor_free each): sample
                                   k's inputs at in[k * n_in ..] */
    int n, n_in;
} cv_qsamples;

/* Loads the files of the --calibration specs in text (quantize_calspec.c:
 * "GLOB" for a single-input model, else "INPUT=GLOB;..." one per input),
 * sorted, as samples of f's inputs; with root set the globs are relative to
 * root and confined to it (cv_fs_glob). */
int cv_qcal_load(const cv_func *f, const char *root, const char *text, cv_qsamples *s,
                 cv_diag *d);
void cv_qcal_free(cv_qsamples *s);

/* Runs f on `in` (one tensor per input) and hands back the values
 * vals[0..n) (op results) in outs (caller frees each). */
int cv_qcal_observe(cv_func *f, const cv_tensor *in, cv_value *const *vals, int n,
                    cv_tensor *outs, cv_diag *d);

/* An observer: runs f on one input and hands back vals[0..n), natively (f
 * compiled for this machine with vals as its outputs, in a temporary
 * directory: much faster than the interpreter for real models) or, when
 * that is not possible, with the interpreter.  vals must include f's
 * returns (the build's dead-code elimination keeps what they reach). */
typedef struct cv_qobs {
    cv_func *f;
    cv_value **vals;            /* borrowed */
    int n;
    cv_native *nat;             /* owned; NULL: the interpreter */
    char *dir;                  /* owned: the temporary build, removed by close */
    cv_value **uniq;            /* owned: vals without repeats (the build's outputs) */
    int *slot;                  /* owned: vals[i] is uniq[slot[i]] */
    int n_uniq;
} cv_qobs;
int cv_qobs_open(cv_qobs *o, cv_func *f, cv_value **vals, int n, bool native);
int cv_qobs_run(cv_qobs *o, const cv_tensor *in, cv_tensor *outs, cv_diag *d);
void cv_qobs_close(cv_qobs *o);

/* The quantization range [lo, hi] of the observer's values [first,
 * first + n) over the first n_cal samples, by q->method. */
int cv_qcal_ranges(cv_qobs *o, const cv_qsamples *s, int n_cal, int first, int n,
                   const cv_quant_opts *q, double (*range)[2], cv_diag *d);

/* Signal-to-quantization-noise ratio of q against ref, in dB (f32 data of
 * n elements); 200 dB when they are equal. */
double cv_qcal_sqnr(const float *ref, const float *q, int64_t n);

/* The int8 rewrite (quantize.c) and the fp16/bf16 one (quantize_half.c);
 * each appends its report to rep. */
int cv_quantize_int8(cv_func *f, const cv_quant_opts *q, char *rep, size_t rep_size, cv_diag *d);
int cv_quantize_half(cv_func *f, const cv_quant_opts *q, char *rep, size_t rep_size, cv_diag *d);

/* The residual add and relu/clip an int8 conv takes into its epilogue
 * (quantize_requant.c): add (NULL: none) with res its other operand, act
 * (NULL: none), and end, the value the conv's result then stands for; or,
 * for an int8 gemm/matmul (quantize_lin.c), the relu/clip after the
 * squeeze/transpose views of its result (view: the last of them, whose
 * value then stands for end).  uses: cv_pass_count_uses(f). */
typedef struct cv_qchain {
    cv_op *add, *act, *view;
    cv_value *res, *end;
} cv_qchain;
void cv_qchain_find(const cv_func *f, const int *uses, const cv_op *op, cv_qchain *ch);
/* The value an int8 gemm/matmul candidate stands for once rewritten and
 * its relu/clip fused: that activation's result, else op's. */
cv_value *cv_qlin_end(const cv_func *f, const int *uses, const cv_op *op);

/* Fuses each qconv2d's chain into it, then makes it write u8 where every
 * reader is an int8 layer (u8_res: residual readers too). */
typedef struct cv_qrequant_stats {
    int layers, adds, acts, u8_out, u8_in, u8_res;
} cv_qrequant_stats;
int cv_quantize_requant(cv_func *f, bool u8_res, cv_qrequant_stats *st, cv_diag *d);

/* w (f32 [M, ...] constant) as symmetric int8 rows *wq and their scales
 * *ws [M] (quantize.c). */
int cv_qweights(cv_func *f, const cv_value *w, cv_value **wq, cv_value **ws);

/* int8 gemm/matmul (quantize_lin.c): whether op is one the pass takes
 * (constant f32 weights, x of rank 2, or 3 with a static middle dim), its
 * multiply-adds per image, and its rewrite into a qconv2d (*qop) between
 * reshaping ops, op itself becoming the last of them. */
bool cv_qlin_candidate(const cv_op *op);
double cv_qlin_macs(const cv_op *op);
int cv_qlin_rewrite(cv_func *f, cv_op *op, double x_scale, int64_t x_zp, cv_op **qop,
                    cv_diag *d);

#endif
