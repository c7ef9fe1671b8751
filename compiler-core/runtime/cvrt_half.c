/* IEEE half conversions for targets whose C library has no helpers for
 * LLVM's half type (riscv64 libgcc 12 lacks __truncsfhf2): the rounding of
 * common/half_round.h, the interpreter's and the C99 backend's, so compiled
 * and interpreted results agree bit for bit. */
#include "common/half_round.h"
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

CV_HALF_F32_TO_F16(f32_to_f16, f32_bits)
CV_HALF_F16_TO_F32(f16_to_f32, bits_f32)

uint16_t cvrt_f32_to_f16(float f) { return f32_to_f16(f); }
float cvrt_f16_to_f32(uint16_t h) { return f16_to_f32(h); }
