/* f32 <-> IEEE half and bfloat16 (round to nearest even, NaN kept quiet),
 * written once.  Each macro expands to a static function; CV_HALF_TEXT
 * turns the same expansion into the C source that the C99 backend writes
 * into artifacts.  So the interpreter (common/dtype.c), the native runtime
 * (compiler-core/runtime/cvrt_half.c) and C99 artifacts round alike, bit
 * for bit.  Freestanding: BITS(f) and FLOAT(u) are the user's bit casts. */
#ifndef CV_COMMON_HALF_ROUND_H
#define CV_COMMON_HALF_ROUND_H

#include <stdint.h>

#define CV_HALF_F32_TO_F16(NAME, BITS)                                          \
    static uint16_t NAME(float f)                                               \
    {                                                                           \
        uint32_t x = BITS(f);                                                   \
        uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu, h, rem;      \
        int e, exp = (int)((x >> 23) & 0xff);                                   \
        if (exp == 0xff)                                                        \
            return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));            \
        e = exp - 127 + 15;                                                     \
        if (e >= 0x1f)                                                          \
            return (uint16_t)(sign | 0x7c00u);                                  \
        if (e <= 0) {                                                           \
            int shift = 14 - e;                                                 \
            uint32_t half, mid;                                                 \
            if (e < -10)                                                        \
                return (uint16_t)sign;                                          \
            mant |= 0x800000u;                                                  \
            half = mant >> shift;                                               \
            rem = mant & ((1u << shift) - 1);                                   \
            mid = 1u << (shift - 1);                                            \
            if (rem > mid || (rem == mid && (half & 1)))                        \
                half++;                                                         \
            return (uint16_t)(sign | half);                                     \
        }                                                                       \
        h = sign | ((uint32_t)e << 10) | (mant >> 13);                          \
        rem = mant & 0x1fffu;                                                   \
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))                       \
            h++; /* may carry into the exponent: the right rounding */          \
        return (uint16_t)h;                                                     \
    }

#define CV_HALF_F16_TO_F32(NAME, FLOAT)                                         \
    static float NAME(uint16_t h)                                               \
    {                                                                           \
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16;                          \
        uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;                    \
        if (exp == 0) {                                                         \
            float v = (float)mant * (1.0f / 16777216.0f); /* exact */           \
            return mant == 0 ? FLOAT(sign) : sign ? -v : v;                     \
        }                                                                       \
        if (exp == 0x1f)                                                        \
            return FLOAT(sign | 0x7f800000u | (mant << 13));                    \
        return FLOAT(sign | ((exp - 15 + 127) << 23) | (mant << 13));           \
    }

#define CV_HALF_F32_TO_BF16(NAME, BITS)                                         \
    static uint16_t NAME(float f)                                               \
    {                                                                           \
        uint32_t x = BITS(f);                                                   \
        if ((x & 0x7fffffffu) > 0x7f800000u)                                    \
            return (uint16_t)((x >> 16) | 0x40u);                               \
        x += 0x7fffu + ((x >> 16) & 1u);                                        \
        return (uint16_t)(x >> 16);                                             \
    }

/* The expansion of one of the macros above as a string (one line). */
#define CV_HALF_STR_(...) #__VA_ARGS__
#define CV_HALF_TEXT(...) CV_HALF_STR_(__VA_ARGS__)

#endif
