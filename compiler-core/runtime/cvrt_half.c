/* IEEE half conversions for targets whose C library has no helpers for
 * LLVM's half type (riscv64 libgcc 12 lacks __truncsfhf2): the same
 * round-to-nearest-even algorithm as the interpreter's (common/dtype.c),
 * so compiled and interpreted results agree bit for bit. */
#include "compiler-core/runtime/cvrt.h"

static uint32_t f32_bits(float f)
{
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

uint16_t cvrt_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int exp = (int)((x >> 23) & 0xff);
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int e = exp - 127 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)h;
}

float cvrt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    if (exp == 0) {
        if (mant == 0)
            return bits_f32(sign);
        float v = (float)mant * (1.0f / 16777216.0f);   /* mant * 2^-24, exact */
        return sign ? -v : v;
    }
    if (exp == 0x1f)
        return bits_f32(sign | 0x7f800000u | (mant << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}
