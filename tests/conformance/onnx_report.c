/* The conformance report: a per-op table on stdout and the JSON file. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_import.h"
#include "tests/conformance/conformance.h"

typedef struct op_row {
    const char *op;
    int n[3];
    int excused;            /* non-passing tests conf_bad_test_data/outside excuse */
} op_row;

static const char *excused(const test *t);

const char *conf_status_name(int status)
{
    static const char *const names[] = {"passed", "failed", "unsupported"};
    return status >= 0 && status <= ST_UNSUP ? names[status] : "?";
}

/* Checked by hand against the generators in onnx/backend/test/case/node/ (onnx 1.12). */
static const struct { const char *name, *why; } bad_data[] = {
    {"test_adam_multiple", "the node does not set epsilon (default 1e-6) but adam.py computed "
     "the expected outputs with epsilon = 1e-2"},
    {"test_cast_FLOAT_to_BFLOAT16", "cast.py expects truncation to the high 16 bits; Cast does "
     "not fix the rounding and Cuvil, like PyTorch, rounds to nearest even"},
    {"test_castlike_FLOAT_to_BFLOAT16", "input 'like' is declared bf16[3,4] but its data is "
     "[1]; castlike.py also expects truncation"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", "input 'like' is declared bf16[3,4] but its "
     "data is [1]; castlike.py also expects truncation"},
    {"test_castlike_BFLOAT16_to_FLOAT", "input 'like' is declared f32[3,4] but its data is [1]"},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded", "input 'like' is declared f32[3,4] but its data "
     "is [1]"},
};

const char *conf_bad_test_data(const char *name)
{
    for (size_t i = 0; i < sizeof bad_data / sizeof bad_data[0]; i++)
        if (strcmp(bad_data[i].name, name) == 0)
            return bad_data[i].why;
    return NULL;
}

/* Tests of claimed ops that fail for a reason outside Cuvil: the expected
 * outputs come from numpy's random generator where the op's spec leaves the
 * randomness free, or the data are strings, which CU-IR (a tensor IR of
 * numbers) has no element type for.  Matched by name prefix. */
static const struct { const char *prefix, *why; } outside[] = {
    {"test_training_dropout", "training-mode Dropout: the expected mask is numpy's MT19937 "
     "stream for the seed (np.random.seed + uniform), which the spec leaves free; only a copy of "
     "numpy's generator would match it"},
    {"test_cast_FLOAT_to_STRING", "string tensors: CU-IR has no string element type"},
    {"test_cast_STRING_to_FLOAT", "string tensors: CU-IR has no string element type"},
    {"test_castlike_FLOAT_to_STRING", "string tensors: CU-IR has no string element type"},
    {"test_castlike_STRING_to_FLOAT", "string tensors: CU-IR has no string element type"},
};

const char *conf_outside_cuvil(const char *name)
{
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        if (strncmp(outside[i].prefix, name, strlen(outside[i].prefix)) == 0)
            return outside[i].why;
    return NULL;
}

/* Why a non-passing test is not Cuvil's to fix, or NULL. */
static const char *excused(const test *t)
{
    if (t->r.status == ST_FAIL && conf_bad_test_data(t->name))
        return conf_bad_test_data(t->name);
    return t->r.status != ST_PASS ? conf_outside_cuvil(t->name) : NULL;
}

static int row_cmp(const void *a, const void *b)
{
    return strcmp(((const op_row *)a)->op, ((const op_row *)b)->op);
}

/* One row per op, sorted by name (malloc'd). */
static op_row *rows_by_op(const test *t, int n, int *n_rows)
{
    op_row *rows = calloc((size_t)n + 1, sizeof *rows);
    *n_rows = 0;
    for (int i = 0; rows && i < n; i++) {
        int k = 0;
        while (k < *n_rows && strcmp(rows[k].op, t[i].op) != 0)
            k++;
        if (k == *n_rows)
            rows[(*n_rows)++].op = t[i].op;
        rows[k].n[t[i].r.status]++;
        rows[k].excused += excused(&t[i]) != NULL;
    }
    if (rows)
        qsort(rows, (size_t)*n_rows, sizeof *rows, row_cmp);
    return rows;
}

void conf_print_table(const test *t, int n)
{
    int n_rows, tot[3] = {0}, claimed = 0, claimed_full = 0, claimed_excused = 0;
    op_row *rows = rows_by_op(t, n, &n_rows);
    if (!rows)
        return;
    printf("%-34s %6s %6s %6s %11s\n", "op (* = importer claims it)", "tests", "passed", "failed",
           "unsupported");
    for (int i = 0; i < n_rows; i++) {
        const op_row *r = &rows[i];
        bool claims = cv_onnx_op_supported(r->op);
        claimed += claims;
        claimed_full += claims && r->n[ST_FAIL] == 0 && r->n[ST_UNSUP] == 0;
        claimed_excused += claims && r->n[ST_FAIL] + r->n[ST_UNSUP] == r->excused;
        printf("%c %-32s %6d %6d %6d %11d\n", claims ? '*' : ' ', r->op,
               r->n[0] + r->n[1] + r->n[2], r->n[ST_PASS], r->n[ST_FAIL], r->n[ST_UNSUP]);
        for (int s = 0; s < 3; s++)
            tot[s] += r->n[s];
    }
    printf("%-34s %6d %6d %6d %11d\n", "total", n, tot[ST_PASS], tot[ST_FAIL], tot[ST_UNSUP]);
    printf("claimed ops: %d, with every node test passing: %d, with every test passing except "
           "those outside Cuvil (listed below): %d\n", claimed, claimed_full, claimed_excused);
    for (int i = 0; i < n; i++)
        if (t[i].r.status == ST_FAIL && conf_bad_test_data(t[i].name))
            printf("  failed on its own test data: %s: %s\n", t[i].name,
                   conf_bad_test_data(t[i].name));
        else if (t[i].r.status != ST_PASS && conf_outside_cuvil(t[i].name))
            printf("  outside Cuvil: %s: %s\n", t[i].name, conf_outside_cuvil(t[i].name));
    for (int i = 0; i < n_rows; i++)
        if (cv_onnx_op_supported(rows[i].op) && rows[i].n[ST_FAIL] + rows[i].n[ST_UNSUP] >
                                                    rows[i].excused)
            printf("  claimed but not complete: %s (%d failed, %d unsupported)\n", rows[i].op,
                   rows[i].n[ST_FAIL], rows[i].n[ST_UNSUP]);
    free(rows);
}

int conf_write_json(const char *path, const test *t, int n)
{
    int tot[3] = {0};
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        tot[t[i].r.status]++;
        json_t *o = json_pack("{s:s, s:s, s:s}", "name", t[i].name, "op", t[i].op, "status",
                              conf_status_name(t[i].r.status));
        json_object_set_new(o, "max_abs_err", t[i].r.max_abs_err >= 0
                                                  ? json_real(t[i].r.max_abs_err) : json_null());
        if (t[i].r.specialized)
            json_object_set_new(o, "specialized", json_true());
        if (t[i].r.msg[0])
            json_object_set_new(o, "message", json_string(t[i].r.msg));
        if (t[i].r.status == ST_FAIL && conf_bad_test_data(t[i].name))
            json_object_set_new(o, "test_data_error", json_string(conf_bad_test_data(t[i].name)));
        else if (t[i].r.status != ST_PASS && conf_outside_cuvil(t[i].name))
            json_object_set_new(o, "outside_cuvil", json_string(conf_outside_cuvil(t[i].name)));
        json_array_append_new(arr, o);
    }
    json_t *root = json_pack("{s:i, s:i, s:i, s:i, s:o}", "total", n, "passed", tot[ST_PASS],
                             "failed", tot[ST_FAIL], "unsupported", tot[ST_UNSUP], "tests", arr);
    int rc = root ? json_dump_file(root, path, JSON_INDENT(1)) : -1;
    if (rc < 0)
        fprintf(stderr, "onnx_conformance: cannot write %s\n", path);
    json_decref(root);
    return rc;
}
