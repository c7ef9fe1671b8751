/* cuvil.compile and cuvil.validate in this process: the same compile-with-
 * cache (compile/build.h) and the same checks as `cuvil compile` and
 * `cuvil validate`, with the diagnostics handed back as tuples rather than
 * printed.  The GIL is released while a model compiles; compiles in one
 * process take turns (compile_mu): the compiler's caches and LLVM set-up are
 * shared state, and a second compile would only compete for the same cores. */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "cuvil_ext.h"

#include "cache/cache.h"
#include "common/diag.h"
#include "common/precision.h"
#include "compile/build.h"
#include "compiler-core/backend/targets.h"
#include "compiler-core/cuvil.h"
#include "spec/spec.h"

static pthread_mutex_t compile_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *severity_name(cv_severity s)
{
    return s == CV_SEV_ERROR ? "error" : s == CV_SEV_WARNING ? "warning" : "note";
}

/* [(code, severity, file, line, column, message), ...] */
static PyObject *diag_list(const cv_diag *d)
{
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < d->n; i++) {
        const cv_diag_entry *e = &d->v[i];
        PyObject *t = Py_BuildValue("(issiis)", e->code, severity_name(e->sev),
                                    e->span.file ? e->span.file : "", e->span.line,
                                    e->span.col, e->msg ? e->msg : "");
        if (!t || PyList_Append(list, t)) {
            Py_XDECREF(t);
            Py_CLEAR(list);
        }
        Py_XDECREF(t);
    }
    return list;
}

/* A usage mistake caught before the compiler runs, as a diagnostic like
 * the compiler's own (no file: it is an argument). */
static bool check_args(const char *target, const char *precision, const char *name, cv_diag *d)
{
    char list[512];
    if (target && !cv_target_known(target))
        cv_diag_error(d, CV_E_UNKNOWN_TARGET, (cv_span){0}, "unknown target '%.80s'; the targets "
                      "are %s", target, cv_target_names(list, sizeof list));
    else if (cv_precision_parse(precision) < 0)
        cv_diag_error(d, CV_E_UNSUPPORTED_PRECISION, (cv_span){0}, "unknown precision '%.40s' (fp32, "
                      "fp16, bf16 or int8)", precision);
    else if (name && !cv_artifact_name_ok(name))
        cv_diag_error(d, CV_E_BAD_ARTIFACT_NAME, (cv_span){0}, "name '%.80s' is not a C "
                      "identifier of at most 64 characters", name);
    return !cv_diag_has_errors(d);
}

PyObject *cv_py_compile(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"model", "out", "target", "precision", "cache", "opt_level",
                             "name", NULL};
    const char *model, *out, *target = NULL, *precision = "fp32", *name = NULL;
    int use_cache = 1, opt_level = 2;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|zspiz", kwlist, &model, &out, &target,
                                     &precision, &use_cache, &opt_level, &name))
        return NULL;
    if (opt_level < 0 || opt_level > 3) {
        PyErr_SetString(PyExc_ValueError, "opt_level is 0..3");
        return NULL;
    }
    cv_diag d;
    cv_diag_init(&d);
    cv_build_result r;
    memset(&r, 0, sizeof r);
    int rc = -1;
    Py_BEGIN_ALLOW_THREADS
    if (check_args(target, precision, name, &d)) {
        pthread_mutex_lock(&compile_mu);
        cv_cache *cache = NULL;
        cv_cache_options co = {.disabled = !use_cache};
        if (cv_cache_open(&co, &cache, &d))
            cache = NULL;  /* a broken cache is a warning, as in the CLI */
        cv_build_opts bo = {
            .model = model, .target = target,
            .precision = (cv_precision)cv_precision_parse(precision),
            .opt_level = (cv_opt_level)opt_level, .out_dir = out, .name = name,
        };
        rc = cv_build(cache, &bo, &r, &d);
        cv_cache_close(cache);
        pthread_mutex_unlock(&compile_mu);
    }
    Py_END_ALLOW_THREADS
    PyObject *diags = diag_list(&d);
    cv_diag_free(&d);
    if (!diags)
        return NULL;
    char line[600];
    line[0] = 0;
    if (rc == 0)
        cv_build_cache_line(&r, line, sizeof line);
    return Py_BuildValue("(NsOs)", diags, rc == 0 ? r.name : "", rc == 0 && r.compiled
                         ? Py_True : Py_False, line);
}

PyObject *cv_py_validate(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "strict", NULL};
    const char *path;
    int strict = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p", kwlist, &path, &strict))
        return NULL;
    cv_diag d;
    cv_diag_init(&d);
    Py_BEGIN_ALLOW_THREADS
    if (cv_spec_is_yaml_file(path)) {
        cv_spec_validate_file(path, &d);
    } else {
        cv_module *m = cv_model_load(path, CV_LOAD_CHECK_ONLY | (strict ? CV_LOAD_STRICT : 0), &d);
        cv_module_free(m);
    }
    Py_END_ALLOW_THREADS
    PyObject *diags = diag_list(&d);
    cv_diag_free(&d);
    return diags;
}
