/* libFuzzer target: the ONNX importer on arbitrary bytes (as a ModelProto
 * and as a TensorProto).  Invariants: a refused model has at least one
 * error, every code is registered, and an accepted model verifies and
 * prints.  No path is given, so external data is never read. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "compiler-core/frontends/onnx/onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_codes(const cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        if (!cv_diag_code_lookup(d->v[i].code))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_onnx_load_mem(data, size, NULL, &d);
    check_codes(&d);
    if (!m && d.n_errors == 0)
        abort();
    if (m) {
        if (d.n_errors || cv_verify(m, 0, &d) != 0)
            abort();
        free(cv_module_print(m, 0));
        cv_module_free(m);
    }
    cv_diag_clear(&d);
    cv_tensor t;
    if (cv_onnx_read_tensor_pb(data, size, "fuzz.pb", &t, &d) == 0)
        cv_tensor_free(&t);
    else if (d.n_errors == 0)
        abort();
    check_codes(&d);
    cv_diag_free(&d);
    return 0;
}
