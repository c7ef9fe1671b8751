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
/* The per-op table with totals, on stdout. */
void conf_print_table(const test *t, int n);
/* {"total","passed","failed","unsupported","tests":[...]} into path. */
int conf_write_json(const char *path, const test *t, int n);

#endif
