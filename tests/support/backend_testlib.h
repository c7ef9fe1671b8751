/* Shared by the backend tests: many single-op cases are built into ONE
 * model (each case with its own inputs and symbols, renamed per case), the
 * model is compiled to a native artifact, dlopened and run, and every
 * output is compared with the reference interpreter (the oracle) at
 * rtol 1e-4 / atol 1e-5 (integers and bools exactly).
 *
 * Case inputs: "DTYPE[DIMS]" with DIMS integers or SYM:N (symbolic, N at run
 * time), optionally followed by " @LO:HI" (random range) or " =V,V,..."
 * (explicit values).  Attributes: "name=value name=[1,2]", typed by the op's
 * schema. */
#ifndef CV_TEST_BACKEND_UTIL_H
#define CV_TEST_BACKEND_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/cuvil.h"
#include "tests/support/numpyref.h"
#include "tests/support/tmpdir.h"

/* Every helper may go unused in one test file or another. */
#define BK_FN static __attribute__((unused))

#define BK_MAX_IN 8
#define BK_MAX_CASES 128

typedef struct bk_case {
    const char *op;
    const char *attrs;
    const char *in[BK_MAX_IN];
    int n_results;      /* 0 means 1 */
    int result;         /* which result is compared */
} bk_case;

#define BK(op_, attrs_, ...) {.op = op_, .attrs = attrs_, .in = {__VA_ARGS__}}
/* A case comparing result `res_` of an op with n_ results. */
#define BKN(op_, attrs_, n_, res_, ...) \
    {.op = op_, .attrs = attrs_, .in = {__VA_ARGS__}, .n_results = n_, .result = res_}

typedef struct bk_input {
    cv_type type;
    int64_t dims[CV_MAX_RANK];
    double lo, hi;
    double *vals;       /* explicit values (malloc'd) or NULL */
    int n_vals;
} bk_input;

static int bk_fail(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), unused));
BK_FN int bk_fail(char *msg, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return -1;
}

/* "f32[N:2,3] @0:1" with symbols renamed <sym>_<case>. */
BK_FN int bk_parse_spec(cv_module *m, const char *s, int case_no, bk_input *in)
{
    memset(in, 0, sizeof *in);
    const char *br = strchr(s, '[');
    if (!br || !(in->type.dtype = cv_dtype_parse(s, (size_t)(br - s))))
        return -1;
    const char *p = br + 1;
    while (*p && *p != ']') {
        int r = in->type.shape.rank;
        if (r == CV_MAX_RANK)
            return -1;
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) {
            const char *colon = strchr(p, ':');
            if (!colon)
                return -1;
            char name[64];
            snprintf(name, sizeof name, "%.*s_%d", (int)(colon - p), p, case_no);
            in->type.shape.d[r].sym = cv_module_intern(m, name, strlen(name));
            p = colon + 1;
        }
        char *end;
        in->dims[r] = strtoll(p, &end, 10);
        if (!in->type.shape.d[r].sym)
            in->type.shape.d[r].n = in->dims[r];
        in->type.shape.rank++;
        p = end + (*end == ',');
        if (end == p && *end != ']')
            return -1;
    }
    bool flt = cv_dtype_is_float(in->type.dtype);
    in->lo = flt ? -3 : in->type.dtype == CV_U8 ? 0 : in->type.dtype == CV_BOOL ? 0 : -20;
    in->hi = flt ? 3 : in->type.dtype == CV_U8 ? 40 : in->type.dtype == CV_BOOL ? 1 : 20;
    const char *at = strchr(p, '@'), *eq = strchr(p, '=');
    if (at && sscanf(at + 1, "%lf:%lf", &in->lo, &in->hi) != 2)
        return -1;
    if (eq) {
        in->vals = calloc(1024, sizeof *in->vals);
        for (const char *q = eq + 1; *q && in->n_vals < 1024;) {
            char *end;
            in->vals[in->n_vals++] = strtod(q, &end);
            q = end + (*end == ',');
            if (end == q)
                break;
        }
    }
    return 0;
}

/* "[1,2]" as doubles, or as int64 when iv is given (exact at INT64_MAX). */
BK_FN int bk_parse_list(const char *v, double *out, int64_t *iv, int max)
{
    int n = 0;
    const char *p = v + (*v == '[');
    while (*p && *p != ']' && n < max) {
        char *end;
        if (iv)
            iv[n++] = strtoll(p, &end, 10);
        else
            out[n++] = strtod(p, &end);
        if (end == p)
            return -1;
        p = end + (*end == ',');
    }
    return n;
}

BK_FN int bk_set_attr(cv_op *op, const char *name, const char *v)
{
    const cv_attr_schema *a = cv_op_def_attr(op->def, name, NULL);
    double d[32];
    int64_t iv[32];
    int n;
    switch (a ? a->kind : CV_ATTR_NONE) {
    case CV_ATTR_INT: cv_op_set_int(op, name, strtoll(v, NULL, 10)); return 0;
    case CV_ATTR_FLOAT: cv_op_set_float(op, name, strtod(v, NULL)); return 0;
    case CV_ATTR_STRING: cv_op_set_string(op, name, v); return 0;
    case CV_ATTR_DTYPE: cv_op_set_dtype(op, name, cv_dtype_parse(v, strlen(v))); return 0;
    case CV_ATTR_INTS:
    case CV_ATTR_DIMS:   /* integer dims (a shape) are stored as ints */
        if ((n = bk_parse_list(v, NULL, iv, 32)) < 0)
            return -1;
        cv_op_set_ints(op, name, iv, n);
        return 0;
    case CV_ATTR_FLOATS:
        if ((n = bk_parse_list(v, d, NULL, 32)) < 0)
            return -1;
        cv_op_set_floats(op, name, d, n);
        return 0;
    default: return -1;
    }
}

BK_FN int bk_set_attrs(cv_op *op, const char *text)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text ? text : "");
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(t, '=');
        if (!eq)
            return -1;
        *eq = 0;
        if (bk_set_attr(op, t, eq + 1))
            return -1;
    }
    return 0;
}

typedef struct bk_model {
    cv_module *m;
    cv_tensor ins[BK_MAX_CASES * BK_MAX_IN];
    int n_ins;
    int n_cases;
} bk_model;

BK_FN void bk_model_free(bk_model *b)
{
    for (int i = 0; i < b->n_ins; i++)
        cv_tensor_free(&b->ins[i]);
    cv_module_free(b->m);
}

BK_FN int bk_add_case(bk_model *b, cv_func *f, const bk_case *c, int i, cv_value **ret,
                       cv_diag *d, char *msg, size_t size)
{
    cv_value *ops[BK_MAX_IN];
    int n = 0;
    for (; n < BK_MAX_IN && c->in[n]; n++) {
        bk_input in;
        char name[32];
        if (bk_parse_spec(b->m, c->in[n], i, &in))
            return bk_fail(msg, size, "case %d (%s): bad input spec '%s'", i, c->op, c->in[n]);
        snprintf(name, sizeof name, "c%d_%d", i, n);
        ops[n] = cv_func_add_input(f, name, &in.type);
        cv_tensor *t = &b->ins[b->n_ins++];
        cv_tensor_alloc(t, in.type.dtype, in.type.shape.rank, in.dims);
        if (in.vals)
            for (int64_t k = 0; k < t->numel; k++)
                cv_tensor_set(t, k, in.vals[k % in.n_vals]);
        else
            cv_npref_fill(t, (uint64_t)(i * 131 + n * 7 + 1), in.lo, in.hi);
        free(in.vals);
    }
    cv_op *op = cv_op_new(f, c->op, ops, n);
    if (!op->def || bk_set_attrs(op, c->attrs))
        return bk_fail(msg, size, "case %d (%s): unknown op or bad attributes", i, c->op);
    if (cv_op_finish(op, c->n_results ? c->n_results : 1, d))
        return bk_fail(msg, size, "case %d (%s): the op does not build", i, c->op);
    *ret = op->results[c->result];
    return 0;
}

/* Builds every case into one model @name. */
BK_FN int bk_build(bk_model *b, const char *name, const bk_case *cases, int n, char *msg,
                    size_t size)
{
    memset(b, 0, sizeof *b);
    b->m = cv_module_new("backend-test.cuir");
    cv_func *f = cv_func_new(b->m, name);
    cv_value *rets[BK_MAX_CASES];
    cv_diag d;
    cv_diag_init(&d);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = bk_add_case(b, f, &cases[i], i, &rets[i], &d, msg, size);
    if (rc == 0) {
        cv_func_set_returns(f, rets, n);
        for (int i = 0; i < n; i++)
            cv_func_add_output_type(f, &rets[i]->type);
        if (cv_verify(b->m, 0, &d))
            rc = bk_fail(msg, size, "the test model does not verify: %s",
                         d.n ? d.v[0].msg : "?");
    }
    b->n_cases = n;
    cv_diag_free(&d);
    return rc;
}

BK_FN void bk_diag_msg(const cv_diag *d, char *msg, size_t size)
{
    size_t o = strlen(msg);
    for (int i = 0; i < d->n && o + 1 < size; i++)
        o += (size_t)snprintf(msg + o, size - o, " [CV%04d %s%s%s]", d->v[i].code,
                              d->v[i].path ? d->v[i].path : "", d->v[i].path ? ": " : "",
                              d->v[i].msg);
}

BK_FN int bk_compare(const bk_case *cases, int n, const cv_tensor *got, const cv_tensor *want,
                      char *msg, size_t size)
{
    for (int i = 0; i < n; i++) {
        double rtol = 1e-4, atol = 1e-5, r2, a2;
        cv_npref_default_tol(want[i].dtype, &r2, &a2);
        if (want[i].dtype == CV_F16 || want[i].dtype == CV_BF16) {
            rtol = r2;
            atol = a2;
        }
        char why[512];
        if (got[i].dtype != want[i].dtype)
            return bk_fail(msg, size, "case %d (%s %s): dtype %s, want %s", i, cases[i].op,
                           cases[i].attrs ? cases[i].attrs : "", cv_dtype_name(got[i].dtype),
                           cv_dtype_name(want[i].dtype));
        if (cv_npref_compare(&got[i], &want[i], rtol, atol, why, sizeof why))
            return bk_fail(msg, size, "case %d (%s %s): %s", i, cases[i].op,
                           cases[i].attrs ? cases[i].attrs : "", why);
    }
    return 0;
}

/* Compiles the model for `target` into a temp dir (returned, malloc'd). */
BK_FN char *bk_compile(cv_module *m, const char *target, int opt, unsigned emit, char *msg,
                        size_t size)
{
    char *dir = cv_tmpdir_make("backend");
    cv_compile_opts o = {.target = target, .opt_level = opt, .emit = emit, .out_dir = dir};
    cv_compile_info info;
    cv_diag d;
    cv_diag_init(&d);
    if (!dir || cv_compile_native(m, &o, &info, &d)) {
        snprintf(msg, size, "compile failed:");
        bk_diag_msg(&d, msg, size);
        cv_tmpdir_remove(dir);
        dir = NULL;
    }
    cv_diag_free(&d);
    return dir;
}

/* Compiles m natively and runs it once on ins (outputs into got[]). */
BK_FN int bk_run_native(cv_module *m, const cv_tensor *ins, int n_ins, int threads,
                         cv_tensor *got, char *msg, size_t size)
{
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, size);
    cv_native *nat = NULL;
    cv_diag d;
    cv_diag_init(&d);
    int rc = dir ? 0 : -1;
    if (rc == 0 && (cv_native_open(dir, threads, &nat, &d) ||
                    cv_native_run(nat, ins, n_ins, got, &d))) {
        rc = bk_fail(msg, size, "native run failed:");
        bk_diag_msg(&d, msg, size);
    }
    cv_native_close(nat);
    if (dir)
        cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    return rc;
}

/* Builds, interprets, compiles, runs natively with `threads` and compares. */
BK_FN int bk_check(const char *name, const bk_case *cases, int n, int threads, char *msg,
                    size_t size)
{
    bk_model b;
    cv_tensor want[BK_MAX_CASES] = {{0}}, got[BK_MAX_CASES] = {{0}};
    cv_native *nat = NULL;
    char *dir = NULL;
    cv_diag d;
    cv_diag_init(&d);
    int rc = bk_build(&b, name, cases, n, msg, size);
    if (rc == 0 && cv_interp_run(b.m->funcs[0], b.ins, b.n_ins, want, &d)) {
        rc = bk_fail(msg, size, "the interpreter failed:");
        bk_diag_msg(&d, msg, size);
        memset(want, 0, sizeof want);
    }
    if (rc == 0 && !(dir = bk_compile(b.m, "native", 2, CV_EMIT_SO, msg, size)))
        rc = -1;
    if (rc == 0 && (cv_native_open(dir, threads, &nat, &d) ||
                    cv_native_run(nat, b.ins, b.n_ins, got, &d))) {
        rc = bk_fail(msg, size, "native run failed:");
        bk_diag_msg(&d, msg, size);
    }
    if (rc == 0)
        rc = bk_compare(cases, n, got, want, msg, size);
    cv_native_close(nat);
    for (int i = 0; i < n; i++) {
        cv_tensor_free(&want[i]);
        cv_tensor_free(&got[i]);
    }
    if (dir)
        cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    bk_model_free(&b);
    return rc;
}

#endif
