/* Element types shared by CU-IR, tensors and the file readers (.npy,
 * safetensors).  Integers of every width load as int64 in the generic
 * kernels (u64 as its two's-complement bits: exact below 2^63). */
#ifndef CV_DTYPE_H
#define CV_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cv_dtype {
    CV_DT_INVALID = 0,
    CV_F32, CV_F16, CV_BF16, CV_I8, CV_U8, CV_I32, CV_I64, CV_BOOL,
    CV_F64, CV_I16, CV_U16, CV_U32, CV_U64,
    CV_DT_COUNT
} cv_dtype;

#define CV_DT_BIT(t) (1u << (t))
/* The ML float types: ops whose kernels are written for f32 accept these. */
#define CV_DT_FLOATS (CV_DT_BIT(CV_F32) | CV_DT_BIT(CV_F16) | CV_DT_BIT(CV_BF16))
/* ... and f64, for ops whose kernels are generic over the float type. */
#define CV_DT_REALS  (CV_DT_FLOATS | CV_DT_BIT(CV_F64))
#define CV_DT_INTS   (CV_DT_BIT(CV_I8) | CV_DT_BIT(CV_U8) | CV_DT_BIT(CV_I16) | \
                      CV_DT_BIT(CV_U16) | CV_DT_BIT(CV_I32) | CV_DT_BIT(CV_U32) | \
                      CV_DT_BIT(CV_I64) | CV_DT_BIT(CV_U64))
#define CV_DT_NUMERIC (CV_DT_REALS | CV_DT_INTS)
#define CV_DT_ALL    (CV_DT_NUMERIC | CV_DT_BIT(CV_BOOL))

const char *cv_dtype_name(cv_dtype t);                 /* "f32"; "?" if invalid */
/* Parses a CU-IR dtype name; CV_DT_INVALID if unknown. */
cv_dtype cv_dtype_parse(const char *s, size_t n);
size_t cv_dtype_size(cv_dtype t);
bool cv_dtype_is_float(cv_dtype t);                    /* f32 f16 bf16 f64 */
bool cv_dtype_is_int(cv_dtype t);                      /* i8..u64 (not bool) */
bool cv_dtype_is_unsigned(cv_dtype t);                 /* u8 u16 u32 u64 */
/* The value range of an integer dtype as int64 (u64: [0, INT64_MAX], the
 * part the int64 kernels see exactly); false for other dtypes. */
bool cv_dtype_int_range(cv_dtype t, int64_t *lo, int64_t *hi);

/* IEEE half and bfloat16 conversions (round to nearest even, NaN kept). */
uint16_t cv_f32_to_f16(float f);
float cv_f16_to_f32(uint16_t h);
uint16_t cv_f32_to_bf16(float f);
float cv_bf16_to_f32(uint16_t h);

/* Reads/writes element i of a buffer of type t as a double. Integer stores
 * truncate toward zero and saturate; bool stores v != 0. */
double cv_dtype_load(cv_dtype t, const void *base, int64_t i);
void cv_dtype_store(cv_dtype t, void *base, int64_t i, double v);
int64_t cv_dtype_load_i64(cv_dtype t, const void *base, int64_t i);
void cv_dtype_store_i64(cv_dtype t, void *base, int64_t i, int64_t v);

#endif
