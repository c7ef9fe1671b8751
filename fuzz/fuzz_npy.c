/* libFuzzer target: the .npy reader on arbitrary bytes.  On success the
 * array must be self-consistent; on failure nothing may be returned and the
 * error must carry a .npy code. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/nbytes.h"
#include "common/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_npy a;
    if (cv_npy_read_mem(data, size, "fuzz.npy", &a, &d) == 0) {
        int64_t numel;
        size_t nbytes;
        if (a.rank < 0 || a.rank > CV_NPY_MAX_RANK || !a.data ||
            cv_shape_nbytes(a.dtype, a.rank, a.dims, &numel, &nbytes) != 0 || nbytes != a.nbytes)
            abort();
        cv_npy_free(&a);
    } else {
        int code = d.n ? d.v[0].code : 0;
        if (a.data || !((code >= 1101 && code <= 1105) || code == 9002))
            abort();
    }
    cv_diag_free(&d);
    return 0;
}
