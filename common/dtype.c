#include "common/dtype.h"
#include "common/half_round.h"

#include <math.h>
#include <string.h>

static const struct { const char *name; size_t size; } info[CV_DT_COUNT] = {
    [CV_DT_INVALID] = {"?", 0},
    [CV_F32] = {"f32", 4}, [CV_F16] = {"f16", 2}, [CV_BF16] = {"bf16", 2},
    [CV_I8] = {"i8", 1},   [CV_U8] = {"u8", 1},   [CV_I32] = {"i32", 4},
    [CV_I64] = {"i64", 8}, [CV_BOOL] = {"bool", 1}, [CV_F64] = {"f64", 8},
    [CV_I16] = {"i16", 2}, [CV_U16] = {"u16", 2}, [CV_U32] = {"u32", 4}, [CV_U64] = {"u64", 8},
};

const char *cv_dtype_name(cv_dtype t)
{
    return (t > CV_DT_INVALID && t < CV_DT_COUNT) ? info[t].name : "?";
}

cv_dtype cv_dtype_parse(const char *s, size_t n)
{
    for (int t = CV_F32; t < CV_DT_COUNT; t++)
        if (strlen(info[t].name) == n && memcmp(info[t].name, s, n) == 0)
            return (cv_dtype)t;
    return CV_DT_INVALID;
}

size_t cv_dtype_size(cv_dtype t)
{
    return (t > CV_DT_INVALID && t < CV_DT_COUNT) ? info[t].size : 0;
}

bool cv_dtype_is_float(cv_dtype t)
{
    return t == CV_F32 || t == CV_F16 || t == CV_BF16 || t == CV_F64;
}

bool cv_dtype_is_int(cv_dtype t)
{
    return t > CV_DT_INVALID && t < CV_DT_COUNT && (CV_DT_BIT(t) & CV_DT_INTS);
}

bool cv_dtype_is_unsigned(cv_dtype t)
{
    return t == CV_U8 || t == CV_U16 || t == CV_U32 || t == CV_U64;
}

bool cv_dtype_int_range(cv_dtype t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case CV_I8: *lo = INT8_MIN, *hi = INT8_MAX; return true;
    case CV_U8: *lo = 0, *hi = UINT8_MAX; return true;
    case CV_I16: *lo = INT16_MIN, *hi = INT16_MAX; return true;
    case CV_U16: *lo = 0, *hi = UINT16_MAX; return true;
    case CV_I32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
    case CV_U32: *lo = 0, *hi = UINT32_MAX; return true;
    case CV_I64: *lo = INT64_MIN, *hi = INT64_MAX; return true;
    case CV_U64: *lo = 0, *hi = INT64_MAX; return true;
    default: return false;
    }
}

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

CV_HALF_F32_TO_F16(f32_to_f16, f32_bits)
CV_HALF_F16_TO_F32(f16_to_f32, bits_f32)
CV_HALF_F32_TO_BF16(f32_to_bf16, f32_bits)

uint16_t cv_f32_to_f16(float f) { return f32_to_f16(f); }
float cv_f16_to_f32(uint16_t h) { return f16_to_f32(h); }
uint16_t cv_f32_to_bf16(float f) { return f32_to_bf16(f); }
float cv_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

double cv_dtype_load(cv_dtype t, const void *base, int64_t i)
{
    switch (t) {
    case CV_F32: return ((const float *)base)[i];
    case CV_F16: return cv_f16_to_f32(((const uint16_t *)base)[i]);
    case CV_BF16: return cv_bf16_to_f32(((const uint16_t *)base)[i]);
    case CV_I8: return ((const int8_t *)base)[i];
    case CV_U8: return ((const uint8_t *)base)[i];
    case CV_I32: return ((const int32_t *)base)[i];
    case CV_I64: return (double)((const int64_t *)base)[i];
    case CV_BOOL: return ((const uint8_t *)base)[i] != 0;
    case CV_F64: return ((const double *)base)[i];
    case CV_I16: return ((const int16_t *)base)[i];
    case CV_U16: return ((const uint16_t *)base)[i];
    case CV_U32: return ((const uint32_t *)base)[i];
    case CV_U64: return (double)((const uint64_t *)base)[i];
    default: return 0;
    }
}

static int64_t sat_i64(double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    if (v <= lo)
        return (int64_t)lo;
    if (v >= hi)
        return (int64_t)hi;
    return (int64_t)v;
}

void cv_dtype_store(cv_dtype t, void *base, int64_t i, double v)
{
    switch (t) {
    case CV_F32: ((float *)base)[i] = (float)v; break;
    case CV_F16: ((uint16_t *)base)[i] = cv_f32_to_f16((float)v); break;
    case CV_BF16: ((uint16_t *)base)[i] = cv_f32_to_bf16((float)v); break;
    case CV_I8: ((int8_t *)base)[i] = (int8_t)sat_i64(v, -128, 127); break;
    case CV_U8: ((uint8_t *)base)[i] = (uint8_t)sat_i64(v, 0, 255); break;
    case CV_I32: ((int32_t *)base)[i] = (int32_t)sat_i64(v, -2147483648.0, 2147483647.0); break;
    case CV_I64:
        /* 2^63 is not representable: clamp below it. */
        ((int64_t *)base)[i] = v >= 9.2233720368547758e18 ? INT64_MAX
                             : v <= -9.2233720368547758e18 ? INT64_MIN
                             : sat_i64(v, -9.2233720368547758e18, 9.2233720368547758e18);
        break;
    case CV_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    case CV_F64: ((double *)base)[i] = v; break;
    case CV_I16: ((int16_t *)base)[i] = (int16_t)sat_i64(v, -32768, 32767); break;
    case CV_U16: ((uint16_t *)base)[i] = (uint16_t)sat_i64(v, 0, 65535); break;
    case CV_U32: ((uint32_t *)base)[i] = (uint32_t)sat_i64(v, 0, 4294967295.0); break;
    case CV_U64:
        /* 2^64 is not representable: clamp below it. */
        ((uint64_t *)base)[i] = isnan(v) || v <= 0 ? 0
                              : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
        break;
    default: break;
    }
}

int64_t cv_dtype_load_i64(cv_dtype t, const void *base, int64_t i)
{
    switch (t) {
    case CV_I64: return ((const int64_t *)base)[i];
    case CV_I32: return ((const int32_t *)base)[i];
    case CV_I8: return ((const int8_t *)base)[i];
    case CV_U8: return ((const uint8_t *)base)[i];
    case CV_I16: return ((const int16_t *)base)[i];
    case CV_U16: return ((const uint16_t *)base)[i];
    case CV_U32: return ((const uint32_t *)base)[i];
    case CV_U64: return (int64_t)((const uint64_t *)base)[i];  /* two's-complement bits */
    case CV_BOOL: return ((const uint8_t *)base)[i] != 0;
    default: {
        double v = cv_dtype_load(t, base, i);
        return v >= 9.2233720368547758e18 ? INT64_MAX
             : v <= -9.2233720368547758e18 ? INT64_MIN : (isnan(v) ? 0 : (int64_t)v);
    }
    }
}

void cv_dtype_store_i64(cv_dtype t, void *base, int64_t i, int64_t v)
{
    switch (t) {
    case CV_I64: ((int64_t *)base)[i] = v; break;
    case CV_I32: ((int32_t *)base)[i] = (int32_t)v; break;  /* wraps like a C cast */
    case CV_I8: ((int8_t *)base)[i] = (int8_t)v; break;
    case CV_U8: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case CV_I16: ((int16_t *)base)[i] = (int16_t)v; break;
    case CV_U16: ((uint16_t *)base)[i] = (uint16_t)v; break;
    case CV_U32: ((uint32_t *)base)[i] = (uint32_t)v; break;
    case CV_U64: ((uint64_t *)base)[i] = (uint64_t)v; break;
    case CV_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    default: cv_dtype_store(t, base, i, (double)v); break;
    }
}
