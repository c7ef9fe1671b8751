/* numpyref, layer 3: declarative single-op tests checked against NumPy.
 * Parses input specs and attribute text (grammar in numpyref.h), builds each
 * op with the IR builder, runs it with the reference kernels and compares
 * with NumPy results computed in one Python run. */
#include "tests/support/numpyref.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 64

typedef struct spec {
    cv_type type;                 /* as declared (symbols interned in the module) */
    int64_t dims[CV_MAX_RANK];    /* at run time */
    double lo, hi;                /* random range */
    double *vals;                 /* owned; explicit values (floats) or NULL */
    int64_t *ivals;               /* owned; explicit values (integers, bool) */
    int64_t n_vals;
} spec;

static int fail(char *msg, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *msg, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return -1;
}

static void default_range(cv_dtype dt, double *lo, double *hi)
{
    *lo = dt == CV_U8 ? 0 : cv_dtype_is_int(dt) ? -20 : -3;
    *hi = dt == CV_U8 ? 40 : cv_dtype_is_int(dt) ? 20 : 3;
}

/* Integer values are parsed as integers, so that int64 data stays exact. */
static int parse_values(const char *s, spec *sp, char *msg, size_t size)
{
    bool ints = !cv_dtype_is_float(sp->type.dtype);
    int64_t n = 1;
    for (int i = 0; i < sp->type.shape.rank; i++)
        n *= sp->dims[i];
    sp->vals = calloc((size_t)(n ? n : 1), sizeof *sp->vals);
    sp->ivals = calloc((size_t)(n ? n : 1), sizeof *sp->ivals);
    for (const char *p = s; sp->vals && sp->ivals && *p;) {
        char *end;
        if (ints)
            sp->ivals[sp->n_vals] = strtoll(p, &end, 10);
        else
            sp->vals[sp->n_vals] = strtod(p, &end);
        if (end == p || sp->n_vals == n || (*end && *end != ','))
            return fail(msg, size, "bad or too many values in '%s'", s);
        sp->n_vals++;
        p = *end == ',' ? end + 1 : end;
    }
    if (!sp->vals || !sp->ivals || sp->n_vals != n)
        return fail(msg, size, "value count differs from the shape in '%s'", s);
    return 0;
}

/* DTYPE[DIMS] [@LO:HI | =V,...]; symbols are interned in m. */
static int parse_spec(const char *s, cv_module *m, spec *sp, char *msg, size_t size)
{
    memset(sp, 0, sizeof *sp);
    const char *br = strchr(s, '[');
    if (!br || !(sp->type.dtype = cv_dtype_parse(s, (size_t)(br - s))))
        return fail(msg, size, "bad dtype in spec '%s'", s);
    const char *p = br + 1;
    cv_shape *sh = &sp->type.shape;
    while (*p && *p != ']') {
        if (sh->rank == CV_MAX_RANK)
            return fail(msg, size, "rank too large in '%s'", s);
        cv_dim *d = &sh->d[sh->rank];
        char *end;
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *q = p;
            while (isalnum((unsigned char)*q) || *q == '_')
                q++;
            if (*q != ':')
                return fail(msg, size, "symbol without a run-time size in '%s'", s);
            d->sym = cv_module_intern(m, p, (size_t)(q - p));
            sp->dims[sh->rank] = strtoll(q + 1, &end, 10);
        } else {
            d->n = sp->dims[sh->rank] = strtoll(p, &end, 10);
        }
        if (end == p)
            return fail(msg, size, "bad dimension in '%s'", s);
        sh->rank++;
        p = *end == ',' ? end + 1 : end;
    }
    if (*p != ']')
        return fail(msg, size, "missing ']' in '%s'", s);
    p++;
    default_range(sp->type.dtype, &sp->lo, &sp->hi);
    if (*p == '@') {
        char *end;
        sp->lo = strtod(p + 1, &end);
        if (*end != ':')
            return fail(msg, size, "bad range in '%s'", s);
        sp->hi = strtod(end + 1, &end);
        p = end;
    } else if (*p == '=') {
        return parse_values(p + 1, sp, msg, size);
    }
    return *p ? fail(msg, size, "trailing text in spec '%s'", s) : 0;
}

static int parse_list(const char *v, double *out, char *msg, size_t size)
{
    int n = 0;
    const char *p = v + 1;
    while (*p && *p != ']') {
        char *end;
        if (n == MAX_LIST)
            return fail(msg, size, "list too long: %s", v);
        out[n++] = strtod(p, &end);
        if (end == p)
            return fail(msg, size, "bad list: %s", v);
        p = *end == ',' ? end + 1 : end;
    }
    return *p == ']' ? n : fail(msg, size, "bad list: %s", v);
}

/* Attributes unknown to the schema (error tests) get a kind from their text. */
static cv_attr_kind guess_kind(const char *v)
{
    char *end;
    if (*v == '[')
        return strpbrk(v, ".eEn") ? CV_ATTR_FLOATS : CV_ATTR_INTS;
    (void)strtoll(v, &end, 10);
    if (end != v && !*end)
        return CV_ATTR_INT;
    (void)strtod(v, &end);
    if (end != v && !*end)
        return CV_ATTR_FLOAT;
    return cv_dtype_parse(v, strlen(v)) ? CV_ATTR_DTYPE : CV_ATTR_STRING;
}

static int set_attr(cv_op *op, const char *name, const char *v, char *msg, size_t size)
{
    const cv_attr_schema *s = op->def ? cv_op_def_attr(op->def, name, NULL) : NULL;
    cv_attr_kind k = s ? s->kind : guess_kind(v), g = guess_kind(v);
    if (k == CV_ATTR_DIMS)   /* integer dims (a shape) are stored as ints */
        k = CV_ATTR_INTS;
    /* Text that does not fit the schema keeps its own kind (error tests). */
    bool fits = k == g || k == CV_ATTR_STRING || (k == CV_ATTR_FLOAT && g == CV_ATTR_INT) ||
                (k == CV_ATTR_FLOATS && g == CV_ATTR_INTS);
    if (!fits)
        k = g;
    double list[MAX_LIST];
    int64_t ints[MAX_LIST];
    int n;
    switch (k) {
    case CV_ATTR_INT: cv_op_set_int(op, name, strtoll(v, NULL, 10)); break;
    case CV_ATTR_FLOAT: cv_op_set_float(op, name, strtod(v, NULL)); break;
    case CV_ATTR_DTYPE: cv_op_set_dtype(op, name, cv_dtype_parse(v, strlen(v))); break;
    case CV_ATTR_INTS:
    case CV_ATTR_FLOATS:
        if ((n = parse_list(v, list, msg, size)) < 0)
            return -1;
        if (k == CV_ATTR_FLOATS) {
            cv_op_set_floats(op, name, list, n);
            break;
        }
        for (int i = 0; i < n; i++)
            ints[i] = (int64_t)list[i];
        cv_op_set_ints(op, name, ints, n);
        break;
    default: cv_op_set_string(op, name, v); break;
    }
    return 0;
}

static int set_attrs(cv_op *op, const char *text, char *msg, size_t size)
{
    char buf[1024];
    if (!text)
        return 0;
    if (strlen(text) >= sizeof buf)
        return fail(msg, size, "attribute text too long: %s", text);
    strcpy(buf, text);
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return fail(msg, size, "attribute without '=': %s", tok);
        *eq = 0;
        if (set_attr(op, tok, eq + 1, msg, size))
            return -1;
    }
    return 0;
}

static void free_specs(spec *sp, int n)
{
    for (int i = 0; i < n; i++) {
        free(sp[i].vals);
        free(sp[i].ivals);
    }
}

/* Builds the op over inputs named a, b, ...; *rc gets cv_op_finish's result. */
static cv_op *build(cv_module *m, const char *opname, const char *attrs, const char *const *specs,
                    int n, int n_results, spec *sp, cv_diag *d, int *rc, char *msg, size_t size)
{
    if (n > CV_NPREF_MAX_IN) {
        fail(msg, size, "too many inputs for %s", opname);
        return NULL;
    }
    cv_func *f = cv_func_new(m, opname);
    cv_value *in[CV_NPREF_MAX_IN];
    for (int i = 0; i < n; i++) {
        char name[2] = {(char)('a' + i), 0};
        if (parse_spec(specs[i], m, &sp[i], msg, size)) {
            free_specs(sp, i + 1);
            return NULL;
        }
        in[i] = cv_func_add_input(f, name, &sp[i].type);
    }
    cv_op *op = cv_op_new(f, opname, in, n);
    if (set_attrs(op, attrs, msg, size)) {
        free_specs(sp, n);
        return NULL;
    }
    *rc = cv_op_finish(op, n_results, d);
    return op;
}

cv_op *cv_npref_build_op(cv_module *m, const char *op, const char *attrs,
                         const char *const *specs, int n_specs, int n_results,
                         cv_diag *d, int *rc)
{
    spec sp[CV_NPREF_MAX_IN];
    char msg[256];
    cv_op *o = build(m, op, attrs, specs, n_specs, n_results, sp, d, rc, msg, sizeof msg);
    if (o)
        free_specs(sp, n_specs);
    else
        fprintf(stderr, "cv_npref_build_op: %s\n", msg);
    return o;
}

int cv_npref_first_code(const cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].sev == CV_SEV_ERROR)
            return d->v[i].code;
    return 0;
}

int cv_npref_infer(const char *op, const char *attrs, const char *const *specs, int n_specs,
                   char *type, size_t type_size)
{
    cv_module *m = cv_module_new("numpyref.cuir");
    cv_diag d;
    cv_diag_init(&d);
    int rc = -1, code = -1;
    cv_op *o = m ? cv_npref_build_op(m, op, attrs, specs, n_specs, 1, &d, &rc) : NULL;
    if (o) {
        code = cv_npref_first_code(&d);
        if (rc && !code)
            code = -1;  /* failed without an error: a bug worth failing on */
        if (!rc && !code && type)
            cv_type_format(&o->results[0]->type, type, type_size);
    }
    cv_diag_free(&d);
    cv_module_free(m);
    return code;
}

/* ---- the suite ----------------------------------------------------------- */

typedef struct scase {
    int np;               /* index in the numpy batch, -1 if none */
    cv_tensor got;        /* owned data if have_got */
    int have_got;
    cv_type inferred;     /* the result type at build time */
    int64_t expect_dims[CV_MAX_RANK];  /* inferred shape with symbols bound */
    char err[512];        /* why building or running failed; "" if it did not */
} scase;

struct cv_npref_suite {
    const cv_npref_opcase *cases;   /* not owned */
    scase *sc;                      /* owned */
    int n;
    cv_npref *r;                    /* owned */
};

/* The run-time size of symbol `sym` among the specs; -1 if unbound. */
static int64_t bound_size(const spec *sp, int n, const char *sym)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < sp[i].type.shape.rank; k++)
            if (sp[i].type.shape.d[k].sym && strcmp(sp[i].type.shape.d[k].sym, sym) == 0)
                return sp[i].dims[k];
    return -1;
}

static int make_inputs(const spec *sp, int n, uint64_t seed, cv_tensor *t, char *msg, size_t size)
{
    for (int i = 0; i < n; i++) {
        if (cv_tensor_alloc(&t[i], sp[i].type.dtype, sp[i].type.shape.rank, sp[i].dims))
            return fail(msg, size, "cannot allocate input %c", (char)('a' + i));
        bool ints = !cv_dtype_is_float(sp[i].type.dtype);
        if (sp[i].vals)
            for (int64_t k = 0; k < sp[i].n_vals; k++) {
                if (ints)
                    cv_tensor_set_i64(&t[i], k, sp[i].ivals[k]);
                else
                    cv_tensor_set(&t[i], k, sp[i].vals[k]);
            }
        else
            cv_npref_fill(&t[i], seed * 31 + (uint64_t)i, sp[i].lo, sp[i].hi);
    }
    return 0;
}

static void format_diag(const cv_diag *d, char *msg, size_t size)
{
    const cv_diag_entry *e = d->n ? &d->v[0] : NULL;
    snprintf(msg, size, "CV%04d %s", e ? e->code : 0, e ? e->msg : "(no diagnostic)");
}

static void run_case(cv_npref_suite *s, int idx)
{
    const cv_npref_opcase *c = &s->cases[idx];
    scase *sc = &s->sc[idx];
    int n = 0, rc = -1, n_res = c->n_results ? c->n_results : 1, which = c->result;
    while (n < CV_NPREF_MAX_IN && c->in[n])
        n++;
    spec sp[CV_NPREF_MAX_IN];
    cv_tensor in[CV_NPREF_MAX_IN] = {0}, out[1] = {0};
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_module_new("numpyref");
    cv_op *op = build(m, c->op, c->attrs, c->in, n, n_res, sp, &d, &rc, sc->err, sizeof sc->err);
    if (!op)
        goto out_module;
    if (which < 0 || which >= n_res) {
        snprintf(sc->err, sizeof sc->err, "result %d does not exist", which);
        rc = -1;
    }
    if (rc) {
        if (!sc->err[0])
            format_diag(&d, sc->err, sizeof sc->err);
        goto out;
    }
    cv_value *res = op->results[which];
    sc->inferred = res->type;
    for (int k = 0; k < res->type.shape.rank; k++) {
        cv_dim dm = res->type.shape.d[k];
        sc->expect_dims[k] = dm.sym ? bound_size(sp, n, dm.sym) : dm.n;
    }
    cv_func_set_returns(op->func, &res, 1);
    if (make_inputs(sp, n, (uint64_t)idx + 1, in, sc->err, sizeof sc->err))
        goto out;
    if (cv_interp_run(op->func, in, n, out, &d)) {
        format_diag(&d, sc->err, sizeof sc->err);
        goto out;
    }
    sc->got = out[0];
    sc->have_got = 1;
    sc->np = cv_npref_add(s->r, c->expr, in, n);
out:
    for (int i = 0; i < n; i++)
        cv_tensor_free(&in[i]);
    free_specs(sp, n);
out_module:
    cv_module_free(m);
    cv_diag_free(&d);
}

cv_npref_suite *cv_npref_suite_run(const cv_npref_opcase *cases, int n, const char *prelude,
                                   char *msg, size_t msg_size)
{
    cv_npref_suite *s = calloc(1, sizeof *s);
    if (!s || !(s->sc = calloc((size_t)(n ? n : 1), sizeof *s->sc)) || !(s->r = cv_npref_new())) {
        snprintf(msg, msg_size, "out of memory");
        cv_npref_suite_free(s);
        return NULL;
    }
    s->cases = cases;
    s->n = n;
    if (prelude)
        cv_npref_prelude(s->r, prelude);
    for (int i = 0; i < n; i++) {
        s->sc[i].np = -1;
        run_case(s, i);
    }
    if (cv_npref_run(s->r)) {
        snprintf(msg, msg_size, "%s", cv_npref_error(s->r, -1));
        cv_npref_suite_free(s);
        return NULL;
    }
    return s;
}

static int check_case(const cv_npref_suite *s, int i, char *msg, size_t size)
{
    const cv_npref_opcase *c = &s->cases[i];
    const scase *sc = &s->sc[i];
    char what[600], why[1024];
    snprintf(what, sizeof what, "case %d (%s: %s)", i, c->op, c->expr);
    const cv_tensor *want = sc->np >= 0 ? cv_npref_result(s->r, sc->np) : NULL;
    int rc = -1;
    if (sc->err[0])
        snprintf(why, sizeof why, "%s", sc->err);
    else if (!want)
        snprintf(why, sizeof why, "numpy: %s", cv_npref_error(s->r, sc->np));
    else if (sc->got.dtype != sc->inferred.dtype)
        snprintf(why, sizeof why, "result is %s but infer said %s",
                 cv_dtype_name(sc->got.dtype), cv_dtype_name(sc->inferred.dtype));
    else if (sc->got.rank != sc->inferred.shape.rank ||
             memcmp(sc->got.dims, sc->expect_dims, (size_t)sc->got.rank * sizeof(int64_t)))
        snprintf(why, sizeof why, "result shape differs from the inferred shape");
    else {
        double rtol = c->rtol, atol = c->atol;
        if (rtol == 0 && atol == 0)
            cv_npref_default_tol(sc->got.dtype, &rtol, &atol);
        rc = cv_npref_compare(&sc->got, want, rtol, atol, why, sizeof why);
    }
    if (rc)
        snprintf(msg, size, "%s: %s", what, why);
    return rc;
}

int cv_npref_suite_check(const cv_npref_suite *s, const char *tag, char *msg, size_t msg_size)
{
    int count = 0;
    for (int i = 0; i < s->n; i++) {
        if (strcmp(s->cases[i].tag, tag) != 0)
            continue;
        if (check_case(s, i, msg, msg_size))
            return -1;
        count++;
    }
    if (!count)
        snprintf(msg, msg_size, "no case tagged '%s'", tag);
    return count;
}

void cv_npref_suite_free(cv_npref_suite *s)
{
    if (!s)
        return;
    for (int i = 0; s->sc && i < s->n; i++)
        if (s->sc[i].have_got)
            cv_tensor_free(&s->sc[i].got);
    free(s->sc);
    cv_npref_free(s->r);
    free(s);
}
