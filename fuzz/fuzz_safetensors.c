/* libFuzzer target: the safetensors reader on arbitrary bytes.  Every
 * tensor it accepts must lie inside the input (or in its own aligned copy),
 * match its dtype x shape, and be found again by name. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/nbytes.h"
#include "common/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_tensor(const cv_safetensors *st, const cv_st_tensor *t, const uint8_t *data,
                         size_t size)
{
    int64_t numel;
    size_t nbytes;
    if (cv_shape_nbytes(t->dtype, t->rank, t->dims, &numel, &nbytes) != 0 || nbytes != t->nbytes)
        abort();
    const uint8_t *p = t->data;
    bool inside = p >= data && p + t->nbytes <= data + size;
    if (t->nbytes && !inside && (uintptr_t)p % cv_dtype_size(t->dtype) != 0)
        abort();
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < t->nbytes; i++)   /* ASan checks every byte is readable */
        sum ^= p[i];
    if (cv_safetensors_find(st, t->name) != t)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_safetensors *st;
    if (cv_safetensors_open_mem(data, size, "fuzz.safetensors", &st, &d) == 0) {
        for (int i = 0; i < cv_safetensors_count(st); i++)
            check_tensor(st, cv_safetensors_at(st, i), data, size);
        cv_safetensors_close(st);
    } else {
        int code = d.n ? d.v[0].code : 0;
        if (st || !((code >= 1111 && code <= 1113) || code == 9002))
            abort();
    }
    cv_diag_free(&d);
    return 0;
}
