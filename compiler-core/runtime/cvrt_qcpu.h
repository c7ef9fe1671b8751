/* Internal to the int8/bf16 convolution (cvrt_qconv.c): which dot-product
 * instructions the CPU offers (cpuid, and for AMX the kernel's grant of
 * the tile state), and the AMX tile configuration the kernels share. */
#ifndef CVRT_QCPU_H
#define CVRT_QCPU_H
#include "compiler-core/runtime/cvrt_vec.h"

#if defined(__x86_64__) && defined(CVRT_AVX512)
#define QC_X86 1

/* AMX: tiles 0-3 the 2x2 sums (16 x 16 each), 4-7 the operands (16 rows
 * of 64 bytes). */
typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

__attribute__((target("amx-tile")))
static inline void amx_begin(void)
{
    amx_cfg cfg = {.palette = 1};
    for (int t = 0; t < 8; t++)
        cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
}

__attribute__((target("amx-tile")))
static inline void amx_end(void)
{
    _tile_release();
}

/* Linux hands out AMX's tile state only on request (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, once per process). */
static inline int amx_permitted(void)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(158L), "D"(0x1023L), "S"(18L)
                     : "rcx", "r11", "memory");
    return ret == 0;
}

/* CPUID leaf 7: ECX bit 11 of subleaf 0 is AVX512_VNNI, EDX bits 22, 24
 * and 25 AMX-BF16, AMX-TILE and AMX-INT8, EAX bit 5 of subleaf 1
 * AVX512_BF16 (the variant already assumes AVX-512 with OS support).  The
 * AMX bits count only when the kernel granted the tile data. */
enum { HAVE_VNNI = 1, HAVE_BF16 = 2, HAVE_AMX_BF16 = 4, HAVE_AMX_I8 = 8, KNOWN = 16 };
static inline int cpu_dots(void)
{
    static _Atomic int known;   /* 0 unknown, else KNOWN | the bits */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a = 7, b, c = 0, d;
        __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
        k = KNOWN | (int)(c >> 11 & 1);
        int tile = (int)(d >> 24 & 1), amx = (int)(d >> 22 & 1) * HAVE_AMX_BF16 |
                                             (int)(d >> 25 & 1) * HAVE_AMX_I8;
        a = 7, c = 1;
        __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
        k |= (int)(a >> 5 & 1) << 1;
        if (tile && amx && amx_permitted())
            k |= amx;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k;
}
#endif

#endif
