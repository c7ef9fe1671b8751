/* Shared by the ONNX conformance runner's files: one test's outcome. */
#ifndef CV_CONFORMANCE_H
#define CV_CONFORMANCE_H

#include <stdbool.h>

enum { ST_PASS, ST_FAIL, ST_UNSUP };

typedef struct result {
    int status;
    double max_abs_err;     /* -1 when nothing was compared */
    bool specialized;       /* shape-like inputs were folded into constants */
    char msg[400];
} result;

typedef struct test {
    char *name;             /* owned */
    char op[64];
    result r;
} test;

const char *conf_status_name(int status);
/* Why a test's data cannot pass against its own model (ONNX 1.12's
 * generator), or NULL: such a test still counts as failed, with the reason. */
const char *conf_bad_test_data(const char *name);
/* Why a test of a claimed op cannot pass in any compiler (random expected
 * outputs, string data), or NULL. */
const char *conf_outside_cuvil(const char *name);
/* The per-op table with totals, on stdout. */
void conf_print_table(const test *t, int n);
/* {"total","passed","failed","unsupported","tests":[...]} into path. */
int conf_write_json(const char *path, const test *t, int n);

#endif
