/* libFuzzer target: spec loading on arbitrary bytes (specs come from any
 * commit of a models repository).  Every spec error must point into the
 * file; every pipeline that loads must have its required fields; globs that
 * pass the check must be safe to match; value parsers must not overflow. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "controller/controller.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_values(const uint8_t *data, size_t size)
{
    char s[64];
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = 0;
    int64_t ms;
    uint64_t b;
    if (cv_units_parse_duration(s, &ms, NULL) == 0 && (ms < 0 || ms > CV_DURATION_MAX_MS))
        abort();
    if (cv_units_parse_size(s, &b, NULL) == 0 && b > CV_SIZE_MAX_BYTES)
        abort();
    if (cv_glob_check(s, NULL) == 0)
        cv_glob_match(s, "models/vision/a/b/c/lenet.onnx");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_values(data, size);
    cv_diag d;
    cv_diag_init(&d);
    cv_spec_set *s = cv_spec_set_new();
    if (!s)
        return 0;
    cv_spec_set_add(s, (const char *)data, size, "cuvil/fuzz.yaml", false, &d);
    cv_spec_set_resolve(s, &d);
    for (int i = 0; i < d.n; i++) {
        const cv_diag_entry *e = &d.v[i];
        if (e->code >= 6001 && e->code <= 6049 && (e->span.line < 1 || e->span.col < 1))
            abort();
    }
    for (int i = 0; i < cv_spec_set_pipeline_count(s); i++) {
        const cv_spec_pipeline *p = cv_spec_set_pipeline(s, i);
        if (!p->n_models || !p->n_targets || !p->n_precisions || !p->canonical)
            abort();
        for (int g = 0; g < p->n_models; g++)
            cv_glob_match(p->models[g], p->models[g]);
    }
    cv_spec_set_free(s);
    cv_diag_free(&d);
    return 0;
}
