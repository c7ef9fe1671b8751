/* cuvil._cuvil: a compiled artifact loaded into CPython (stable ABI, 3.11+).
 *
 * The artifact is opened by compiler-core's cv_native (manifest, CPU check,
 * dlopen) and run through cv_native_run.  Inputs are read in place through
 * the buffer protocol when they are C-contiguous and of the model's dtype;
 * anything else goes once through the package's Python converter
 * (cuvil/__init__.py: _convert) and is then read in place.  Outputs are
 * numpy arrays made here (numpy.empty) or given by the caller (out=), and
 * the model writes into them directly.  The GIL is released while the model
 * runs; a per-artifact mutex keeps one run at a time on its context.
 * Compiling and validating in this process: cuvil_compile.c. */
#include "cuvil_ext.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "compiler-core/cuvil.h"

/* Set by cuvil/__init__.py (_setup): the exception classes, the converter,
 * numpy.empty and numpy.dtype. */
static PyObject *g_error, *g_input_error, *g_convert, *g_np_empty, *g_np_dtype;

typedef struct {
    PyObject_HEAD
    cv_native *n;
    pthread_mutex_t lock;   /* one cv_native_run at a time */
    int n_in, n_out;
    uintptr_t *last_in;     /* the input addresses of the last run (tests) */
    PyObject **out_dtypes;  /* numpy dtype objects of the outputs (owned) */
} NativeObject;

/* numpy's dtype name and the buffer protocol's format character. */
static const struct { const char *np; char fmt, alt; } DTYPES[CV_DT_COUNT] = {
    [CV_F32] = {"float32", 'f', 0},   [CV_F16] = {"float16", 'e', 0},
    [CV_F64] = {"float64", 'd', 0},   [CV_I8] = {"int8", 'b', 0},
    [CV_U8] = {"uint8", 'B', 0},      [CV_I16] = {"int16", 'h', 0},
    [CV_U16] = {"uint16", 'H', 0},    [CV_I32] = {"int32", 'i', 0},
    [CV_U32] = {"uint32", 'I', 0},    [CV_I64] = {"int64", 'l', 'q'},
    [CV_U64] = {"uint64", 'L', 'Q'},  [CV_BOOL] = {"bool", '?', 0},
    [CV_BF16] = {"bfloat16", 0, 0},
};

static const char *np_name(cv_dtype t)
{
    return t > 0 && t < CV_DT_COUNT && DTYPES[t].np ? DTYPES[t].np : "?";
}

/* Whether a buffer's struct format is exactly dtype t in native order. */
static int format_is(const Py_buffer *v, cv_dtype t)
{
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (!f[0] || f[1] || t <= 0 || t >= CV_DT_COUNT || !DTYPES[t].fmt)
        return 0;
    return (f[0] == DTYPES[t].fmt || f[0] == DTYPES[t].alt) &&
           (size_t)v->itemsize == cv_dtype_size(t);
}

/* Raises cls(code, message, **attrs-as-positional) via the package classes. */
static void raise_coded(PyObject *cls, int code, const char *msg, const char *io,
                        const char *want, const char *have)
{
    if (!cls)   /* _cuvil used without the package's _setup */
        cls = PyExc_RuntimeError;
    PyObject *e = io ? PyObject_CallFunction(cls, "issss", code, msg, io, want, have)
                     : PyObject_CallFunction(cls, "is", code, msg);
    if (e) {
        PyErr_SetObject(cls, e);
        Py_DECREF(e);
    }
}

static void raise_diag(const cv_diag *d, int fallback)
{
    const cv_diag_entry *e = d->n ? &d->v[d->n - 1] : NULL;
    raise_coded(g_error ? g_error : PyExc_RuntimeError, e ? e->code : fallback,
                e ? e->msg : "the artifact failed", NULL, NULL, NULL);
}

static void shape_format(cv_dtype t, int rank, const int64_t *dims, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "%s[", cv_dtype_name(t));
    for (int k = 0; k < rank && at < size; k++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", k ? "," : "", (long long)dims[k]);
    if (at < size)
        snprintf(buf + at, size - at, "]");
}

/* ---- open, close, signature ----------------------------------------- */

static int native_init(PyObject *self_, PyObject *args, PyObject *kw)
{
    NativeObject *self = (NativeObject *)self_;
    static char *kwlist[] = {"path", "threads", NULL};
    const char *path;
    int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|i", kwlist, &path, &threads))
        return -1;
    if (self->n) {
        PyErr_SetString(PyExc_RuntimeError, "already open");
        return -1;
    }
    if (threads < 1 || threads > 1024) {
        PyErr_Format(PyExc_ValueError, "threads must be 1..1024, not %d", threads);
        return -1;
    }
    cv_diag d;
    cv_diag_init(&d);
    size_t len = strlen(path);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = len >= 13 && strcmp(path + len - 13, "manifest.json") == 0
             ? cv_native_open_manifest(path, threads, &self->n, &d)
             : cv_native_open(path, threads, &self->n, &d);
    Py_END_ALLOW_THREADS
    if (rc) {
        raise_diag(&d, 5030);
        cv_diag_free(&d);
        return -1;
    }
    cv_diag_free(&d);
    self->n_in = cv_native_num_inputs(self->n);
    self->n_out = cv_native_num_outputs(self->n);
    self->last_in = calloc((size_t)self->n_in + 1, sizeof *self->last_in);
    self->out_dtypes = calloc((size_t)self->n_out + 1, sizeof *self->out_dtypes);
    if (!self->last_in || !self->out_dtypes) {
        PyErr_NoMemory();
        return -1;
    }
    /* Made once: numpy parses a dtype name far slower than an output is made. */
    for (int i = 0; i < self->n_out; i++)
        if (!(self->out_dtypes[i] = PyObject_CallFunction(
                  g_np_dtype, "s", np_name(cv_native_output(self->n, i).dtype))))
            return -1;
    return 0;
}

static void native_dealloc(PyObject *self_)
{
    NativeObject *self = (NativeObject *)self_;
    PyTypeObject *tp = Py_TYPE(self_);
    cv_native_close(self->n);
    free(self->last_in);
    for (int i = 0; self->out_dtypes && i < self->n_out; i++)
        Py_XDECREF(self->out_dtypes[i]);
    free(self->out_dtypes);
    pthread_mutex_destroy(&self->lock);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self_);
    Py_DECREF(tp);
}

static PyObject *native_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    allocfunc a = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    PyObject *o = a(tp, 0);
    if (o)
        pthread_mutex_init(&((NativeObject *)o)->lock, NULL);
    return o;
}

/* (name, dtype, shape) with symbols as their names. */
static PyObject *io_tuple(const NativeObject *self, cv_native_io io)
{
    PyObject *shape = PyTuple_New(io.rank);
    char sig[1024];
    cv_native_io_format(self->n, io, sig, sizeof sig);
    /* sig is "f32[N,3,224,224]": the symbols' names are its fields. */
    char *p = strchr(sig, '[');
    for (int k = 0; shape && k < io.rank; k++) {
        char *end = p ? p + 1 + strcspn(p + 1, ",]") : NULL;
        PyObject *v = io.dims[k] >= 0 || !p
                          ? PyLong_FromLongLong(io.dims[k])
                          : PyUnicode_FromStringAndSize(p + 1, end - p - 1);
        if (!v) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SetItem(shape, k, v);
        p = end;
    }
    if (!shape)
        return NULL;
    return Py_BuildValue("(ssN)", io.name, np_name(io.dtype), shape);
}

static PyObject *native_signature(PyObject *self_, PyObject *unused)
{
    NativeObject *self = (NativeObject *)self_;
    PyObject *ins = PyList_New(self->n_in), *outs = PyList_New(self->n_out);
    for (int i = 0; ins && outs && i < self->n_in; i++) {
        PyObject *t = io_tuple(self, cv_native_input(self->n, i));
        if (!t)
            goto fail;
        PyList_SetItem(ins, i, t);
    }
    for (int i = 0; ins && outs && i < self->n_out; i++) {
        PyObject *t = io_tuple(self, cv_native_output(self->n, i));
        if (!t)
            goto fail;
        PyList_SetItem(outs, i, t);
    }
    if (ins && outs)
        return Py_BuildValue("(NN)", ins, outs);
fail:
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    return NULL;
}

static PyObject *native_input_addresses(PyObject *self_, PyObject *unused)
{
    NativeObject *self = (NativeObject *)self_;
    PyObject *t = PyTuple_New(self->n_in);
    for (int i = 0; t && i < self->n_in; i++)
        PyTuple_SetItem(t, i, PyLong_FromVoidPtr((void *)self->last_in[i]));
    return t;
}

/* ---- run ------------------------------------------------------------- */

typedef struct run_state {
    int n_in, n_out;
    Py_buffer *in, *out;    /* views; .obj set once acquired */
    PyObject **keep;        /* converted inputs and made outputs (owned) */
    cv_tensor *tin, *tout;
    int64_t syms[64];
    bool bound[64];
} run_state;

static void state_free(run_state *s)
{
    for (int i = 0; s->in && i < s->n_in; i++)
        if (s->in[i].obj)
            PyBuffer_Release(&s->in[i]);
    for (int i = 0; s->out && i < s->n_out; i++)
        if (s->out[i].obj)
            PyBuffer_Release(&s->out[i]);
    for (int i = 0; s->keep && i < s->n_in + s->n_out; i++)
        Py_XDECREF(s->keep[i]);
    free(s->in);
}

static int state_alloc(run_state *s, int n_in, int n_out)
{
    memset(s, 0, sizeof *s);
    s->n_in = n_in;
    s->n_out = n_out;
    size_t n = (size_t)n_in + (size_t)n_out + 1;
    /* One block: the views, the kept objects, the tensors. */
    char *p = calloc(1, n * (sizeof(Py_buffer) + sizeof(PyObject *) + sizeof(cv_tensor)));
    if (!p)
        return PyErr_NoMemory(), -1;
    s->in = (Py_buffer *)p;
    s->out = s->in + n_in;
    s->keep = (PyObject **)(p + n * sizeof(Py_buffer));
    s->tin = (cv_tensor *)(p + n * (sizeof(Py_buffer) + sizeof(PyObject *)));
    s->tout = s->tin + n_in;
    return 0;
}

static int input_error(NativeObject *self, int i, const cv_tensor *got, const char *why)
{
    char want[512], have[512], msg[1400];
    cv_native_io io = cv_native_input(self->n, i);
    cv_native_io_format(self->n, io, want, sizeof want);
    shape_format(got->dtype, got->rank, got->dims, have, sizeof have);
    snprintf(msg, sizeof msg, "input '%s' must be %s, got %s%s", io.name, want, have, why);
    raise_coded(g_input_error, CV_E_INPUT_MISMATCH, msg, io.name, want, have);
    return -1;
}

/* Input i as a C-contiguous buffer of its dtype: in place, or through the
 * package's converter (one copy at most). */
static int take_input(NativeObject *self, run_state *s, int i, PyObject *obj)
{
    cv_native_io io = cv_native_input(self->n, i);
    Py_buffer *v = &s->in[i];
    if (PyObject_CheckBuffer(obj) &&
        PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        if (format_is(v, io.dtype))
            goto done;
        PyBuffer_Release(v);
        v->obj = NULL;
    }
    PyErr_Clear();
    s->keep[i] = PyObject_CallFunction(g_convert, "Oss", obj, np_name(io.dtype), io.name);
    if (!s->keep[i])
        return -1;
    if (PyObject_GetBuffer(s->keep[i], v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
        return -1;
    if (!format_is(v, io.dtype)) {
        PyErr_SetString(PyExc_TypeError, "cuvil._convert returned another dtype");
        return -1;
    }
done:
    if (v->ndim > CV_MAX_RANK) {
        char msg[400];
        snprintf(msg, sizeof msg, "input '%s' has rank %d, more than any model takes (%d)",
                 io.name, v->ndim, CV_MAX_RANK);
        raise_coded(g_input_error, CV_E_INPUT_MISMATCH, msg, io.name, "", "");
        return -1;
    }
    cv_tensor *t = &s->tin[i];
    t->dtype = io.dtype;
    t->rank = v->ndim;
    t->numel = 1;
    for (int k = 0; k < v->ndim; k++) {
        t->dims[k] = v->shape ? v->shape[k] : (int64_t)(v->len / v->itemsize);
        t->numel *= t->dims[k];
    }
    t->data = v->buf;
    return 0;
}

/* The symbols' values from the inputs' shapes, every dim checked. */
static int bind_symbols(NativeObject *self, run_state *s)
{
    char why[300];
    for (int i = 0; i < s->n_in; i++) {
        cv_native_io io = cv_native_input(self->n, i);
        const cv_tensor *t = &s->tin[i];
        if (t->rank != io.rank)
            return input_error(self, i, t, "");
        for (int k = 0; k < io.rank; k++) {
            int64_t want = io.dims[k], got = t->dims[k];
            int sym = (int)(-1 - want);
            if (want >= 0 && want != got)
                return input_error(self, i, t, "");
            if (want >= 0)
                continue;
            if (sym >= 64)
                return input_error(self, i, t, " (more than 64 symbols)");
            if (s->bound[sym] && s->syms[sym] != got) {
                snprintf(why, sizeof why, " (that dim is %lld in an earlier input)",
                         (long long)s->syms[sym]);
                return input_error(self, i, t, why);
            }
            s->syms[sym] = got;
            s->bound[sym] = true;
        }
    }
    return 0;
}

/* Output i: the caller's array (checked) or a new numpy array. */
static int take_output(NativeObject *self, run_state *s, int i, PyObject *given)
{
    cv_native_io io = cv_native_output(self->n, i);
    cv_tensor *t = &s->tout[i];
    t->dtype = io.dtype;
    t->rank = io.rank;
    t->numel = 1;
    for (int k = 0; k < io.rank; k++) {
        t->dims[k] = io.dims[k] >= 0 ? io.dims[k] : s->syms[-1 - io.dims[k]];
        t->numel *= t->dims[k];
    }
    PyObject *arr = given;
    if (arr) {
        Py_INCREF(arr);
    } else {
        PyObject *shape = PyTuple_New(io.rank);
        for (int k = 0; shape && k < io.rank; k++)
            PyTuple_SetItem(shape, k, PyLong_FromLongLong(t->dims[k]));
        arr = shape ? PyObject_CallFunctionObjArgs(g_np_empty, shape, self->out_dtypes[i], NULL)
                    : NULL;
        Py_XDECREF(shape);
        if (!arr)
            return -1;
    }
    s->keep[s->n_in + i] = arr;
    Py_buffer *v = &s->out[i];
    if (PyObject_GetBuffer(arr, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)) {
        v->obj = NULL;
        PyErr_Clear();
    }
    bool ok = v->obj && format_is(v, io.dtype) && v->ndim == io.rank;
    for (int k = 0; ok && k < io.rank; k++)
        ok = v->shape[k] == t->dims[k];
    if (!ok) {
        char want[512], msg[800];
        shape_format(io.dtype, io.rank, t->dims, want, sizeof want);
        snprintf(msg, sizeof msg,
                 "out= for output '%s' must be a writable C-contiguous %s array", io.name, want);
        raise_coded(g_input_error, CV_E_INPUT_MISMATCH, msg, io.name, want, "");
        return -1;
    }
    t->data = v->buf;
    return 0;
}

static bool overlaps(const Py_buffer *a, const Py_buffer *b)
{
    uintptr_t a0 = (uintptr_t)a->buf, b0 = (uintptr_t)b->buf;
    return a->len > 0 && b->len > 0 && a0 < b0 + (uintptr_t)b->len &&
           b0 < a0 + (uintptr_t)a->len;
}

/* The model reads its inputs while it writes its outputs: an out= array
 * sharing memory with an input or another output would give garbage. */
static int check_overlap(NativeObject *self, const run_state *s, int i)
{
    for (int j = 0; j < s->n_in + i; j++) {
        const Py_buffer *other = j < s->n_in ? &s->in[j] : &s->out[j - s->n_in];
        if (!overlaps(&s->out[i], other))
            continue;
        char msg[600];
        const char *oname = cv_native_output(self->n, i).name;
        snprintf(msg, sizeof msg, "out= for output '%s' shares memory with %s '%s'", oname,
                 j < s->n_in ? "input" : "output",
                 j < s->n_in ? cv_native_input(self->n, j).name
                             : cv_native_output(self->n, j - s->n_in).name);
        raise_coded(g_input_error, CV_E_INPUT_MISMATCH, msg, oname, "", "");
        return -1;
    }
    return 0;
}

static PyObject *native_run(PyObject *self_, PyObject *args)
{
    NativeObject *self = (NativeObject *)self_;
    PyObject *ins, *outs = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &ins, &outs))
        return NULL;
    if (!PyTuple_Check(ins) || (outs != Py_None && !PyTuple_Check(outs))) {
        PyErr_SetString(PyExc_TypeError, "run(inputs: tuple, outputs: tuple | None)");
        return NULL;
    }
    if (PyTuple_Size(ins) != self->n_in ||
        (outs != Py_None && PyTuple_Size(outs) != self->n_out)) {
        char msg[200];
        snprintf(msg, sizeof msg, "the model takes %d inputs and %d outputs, got %zd%s",
                 self->n_in, self->n_out, PyTuple_Size(ins),
                 outs != Py_None ? " and out=" : " inputs");
        raise_coded(g_input_error, CV_E_INPUT_MISMATCH, msg, "", "", "");
        return NULL;
    }
    run_state s;
    if (state_alloc(&s, self->n_in, self->n_out))
        return NULL;
    PyObject *result = NULL;
    for (int i = 0; i < s.n_in; i++)
        if (take_input(self, &s, i, PyTuple_GetItem(ins, i)))
            goto out;
    if (bind_symbols(self, &s))
        goto out;
    for (int i = 0; i < s.n_out; i++)
        if (take_output(self, &s, i, outs == Py_None ? NULL : PyTuple_GetItem(outs, i)) ||
            (outs != Py_None && check_overlap(self, &s, i)))
            goto out;
    for (int i = 0; i < s.n_in; i++)
        self->last_in[i] = (uintptr_t)s.tin[i].data;
    cv_diag d;
    cv_diag_init(&d);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->lock);
    rc = cv_native_run(self->n, s.tin, s.n_in, s.tout, &d);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    if (rc) {
        raise_diag(&d, 3010);
    } else if ((result = PyTuple_New(s.n_out))) {
        for (int i = 0; i < s.n_out; i++) {
            Py_INCREF(s.keep[s.n_in + i]);
            PyTuple_SetItem(result, i, s.keep[s.n_in + i]);
        }
    }
    cv_diag_free(&d);
out:
    state_free(&s);
    return result;
}

/* ---- module ---------------------------------------------------------- */

static PyObject *mod_setup(PyObject *mod, PyObject *args)
{
    PyObject *err, *ierr, *conv, *empty, *dtype;
    if (!PyArg_ParseTuple(args, "OOOOO", &err, &ierr, &conv, &empty, &dtype))
        return NULL;
    PyObject **slots[] = {&g_error, &g_input_error, &g_convert, &g_np_empty, &g_np_dtype};
    PyObject *vals[] = {err, ierr, conv, empty, dtype};
    for (int i = 0; i < 5; i++) {
        PyObject *old = *slots[i];
        *slots[i] = Py_NewRef(vals[i]);
        Py_XDECREF(old);
    }
    Py_RETURN_NONE;
}

static PyObject *mod_host_target(PyObject *mod, PyObject *unused)
{
    return PyUnicode_FromString(cv_cpu_host_target());
}

static PyMethodDef native_methods[] = {
    {"run", native_run, METH_VARARGS,
     "run(inputs, outputs=None) -> tuple: inputs in signature order; outputs None or arrays"},
    {"signature", native_signature, METH_NOARGS,
     "signature() -> (inputs, outputs): lists of (name, dtype, shape)"},
    {"input_addresses", native_input_addresses, METH_NOARGS,
     "input_addresses() -> tuple: the data address each input had in the last run"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot native_slots[] = {
    {Py_tp_doc, "A loaded artifact (use cuvil.load)."},
    {Py_tp_new, native_new},
    {Py_tp_init, native_init},
    {Py_tp_dealloc, native_dealloc},
    {Py_tp_methods, native_methods},
    {0, NULL},
};

static PyType_Spec native_spec = {
    "cuvil._cuvil.Native", sizeof(NativeObject), 0, Py_TPFLAGS_DEFAULT, native_slots,
};

static PyMethodDef mod_methods[] = {
    {"_setup", mod_setup, METH_VARARGS, "_setup(Error, InputError, convert, numpy.empty, numpy.dtype)"},
    {"host_target", mod_host_target, METH_NOARGS,
     "host_target() -> str: the best named target this CPU runs (x86_64-avx512...)"},
    {"compile", (PyCFunction)(void (*)(void))cv_py_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(model, out, target=None, precision='fp32', cache=True, opt_level=2, name=None)"
     " -> (diagnostics, name, compiled, cache_line)"},
    {"validate", (PyCFunction)(void (*)(void))cv_py_validate, METH_VARARGS | METH_KEYWORDS,
     "validate(path, strict=False) -> diagnostics: (code, severity, file, line, column, message)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_cuvil", "Cuvil artifacts in this process (see the cuvil package).",
    -1, mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cuvil(void);
PyMODINIT_FUNC PyInit__cuvil(void)
{
    PyObject *m = PyModule_Create(&module_def);
    PyObject *tp = m ? PyType_FromSpec(&native_spec) : NULL;
    if (!tp || PyModule_AddObject(m, "Native", tp)) {
        Py_XDECREF(tp);
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
