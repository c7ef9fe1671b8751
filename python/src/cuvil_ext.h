/* The parts of the _cuvil extension module, for its method table
 * (cuvil_module.c). */
#ifndef CV_PY_CUVIL_EXT_H
#define CV_PY_CUVIL_EXT_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* _cuvil.compile(model, out, target=None, precision="fp32", cache=True,
 * opt_level=2, name=None) -> (diagnostics, name, compiled, cache_line) */
PyObject *cv_py_compile(PyObject *mod, PyObject *args, PyObject *kw);
/* _cuvil.validate(path, strict=False) -> diagnostics */
PyObject *cv_py_validate(PyObject *mod, PyObject *args, PyObject *kw);

#endif
