/* The numeric precision a model is compiled at: one enum for job messages,
 * specs, the command line and the compiler's quantization passes
 * (cv_quant_opts), so no layer casts between two enums that must agree. */
#ifndef CV_COMMON_PRECISION_H
#define CV_COMMON_PRECISION_H

typedef enum cv_precision {
    CV_PRECISION_FP32, CV_PRECISION_FP16, CV_PRECISION_BF16, CV_PRECISION_INT8,
    CV_PRECISION__COUNT
} cv_precision;

/* "fp32" "fp16" "bf16" "int8" in enum order, then NULL: the names messages,
 * specs and --precision use. */
extern const char *const cv_precision_names[CV_PRECISION__COUNT + 1];

/* The name, or NULL out of range. */
const char *cv_precision_name(cv_precision p);
/* The precision of a name, or -1. */
int cv_precision_parse(const char *s);

#endif
