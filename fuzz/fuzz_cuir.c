/* libFuzzer target: the CU-IR parser and verifier on arbitrary bytes.
 * Beyond "no crash, no sanitizer report, no hang", it checks the printer's
 * promise on whatever parses: the printed text parses again and prints the
 * same (a fixed point), so any accepted input has one canonical form. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_fixed_point(const cv_module *m)
{
    char *p1 = cv_module_print(m, 0);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m2 = p1 ? cv_cuir_parse(p1, strlen(p1), "printed.cuir", &d) : NULL;
    if (!m2) {
        fprintf(stderr, "printed text does not parse:\n%s\n", p1 ? p1 : "(null)");
        cv_diag_print(&d, stderr, false);
        abort();
    }
    char *p2 = cv_module_print(m2, 0);
    if (!p2 || strcmp(p1, p2) != 0) {
        fprintf(stderr, "printing is not a fixed point:\n--- first\n%s--- second\n%s", p1,
                p2 ? p2 : "(null)");
        abort();
    }
    free(p1);
    free(p2);
    cv_module_free(m2);
    cv_diag_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse((const char *)data, size, "fuzz.cuir", &d);
    if (m) {
        cv_verify(m, CV_VERIFY_STRICT, &d);
        check_fixed_point(m);
        cv_module_free(m);
    } else if (!cv_diag_has_errors(&d)) {
        abort();  /* a rejection always says why */
    }
    cv_diag_free(&d);
    return 0;
}
