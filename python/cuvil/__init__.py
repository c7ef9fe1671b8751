"""Cuvil from Python: load a compiled artifact and run it on numpy arrays or
torch tensors, compile and validate models.

    >>> import cuvil, numpy as np
    >>> m = cuvil.load("out/")                    # or "out/libresnet18.so"
    >>> m.inputs
    (IO(name='input', dtype='float32', shape=('N', 3, 224, 224)),)
    >>> y = m(np.zeros((2, 3, 224, 224), np.float32))    # one output: an array
    >>> d = m.run({"input": x})                  # always a dict {output name: array}

See docs/python.md for the conversion rule, DLPack, threads and errors.
"""
import collections
import os
import shutil
import tempfile

import numpy as _np

from . import _cuvil

__all__ = ["load", "compile", "validate", "Module", "IO", "Diagnostic", "Error", "InputError",
           "CompileError", "host_target"]

host_target = _cuvil.host_target

IO = collections.namedtuple("IO", "name dtype shape")
IO.__doc__ = ("An input or output: name, numpy dtype name ('float32') and shape, "
              "a tuple of ints and, for symbolic dims, the symbol's name ('N').")

Diagnostic = collections.namedtuple("Diagnostic", "code severity file line column message")
Diagnostic.__doc__ = ("One compiler diagnostic: code ('CV1003'), severity ('error', 'warning', "
                      "'note'), file (or None), line and column (1-based, 0 if unknown), message.")


class Error(Exception):
    """A Cuvil error; .code is its diagnostic code ('CV5036'), .message the text."""

    def __init__(self, code, message):
        self.code = code if isinstance(code, str) else "CV%04d" % code
        self.message = message
        super().__init__("%s: %s" % (self.code, message))


class InputError(Error, ValueError):
    """An input (or out= array) that does not fit the model: .input names it,
    .expected is the model's type ('f32[N,3,224,224]'), .given what came."""

    def __init__(self, code, message, input="", expected="", given=""):
        super().__init__(code, message)
        self.input, self.expected, self.given = input, expected, given


class CompileError(Error):
    """A compile that failed; .diagnostics lists every Diagnostic."""

    def __init__(self, code, message, diagnostics=()):
        super().__init__(code, message)
        self.diagnostics = list(diagnostics)


def _convert(x, dtype, name):
    # The conversion rule (docs/python.md): __dlpack__ objects (torch tensors)
    # are viewed in place; then a float input takes any float array and an
    # integer input any integer array, cast and made C-contiguous once.
    # Other kinds are refused rather than silently cast.
    if not isinstance(x, _np.ndarray) and hasattr(x, "__dlpack__"):
        x = _np.from_dlpack(x)
    a = _np.asarray(x)
    want = _np.dtype(dtype)
    kinds = {"f": "f", "i": "i", "u": "i", "b": "b"}
    if a.dtype != want and kinds.get(a.dtype.kind, a.dtype.kind) != kinds.get(want.kind):
        raise InputError(2024, "input '%s' must be %s, got %s (only %s arrays convert)"
                         % (name, want.name, a.dtype.name,
                            {"f": "float", "i": "integer", "u": "integer", "b": "bool"}[want.kind]),
                         name, want.name, a.dtype.name)
    return _np.ascontiguousarray(a, dtype=want)


_cuvil._setup(Error, InputError, _convert, _np.empty, _np.dtype)


class Module:
    """A compiled model loaded into this process (see cuvil.load).

    m(x, ...) takes the inputs in order, m(**named) by name; it returns the
    output array when the model has one output, else a tuple in output order.
    m.run(inputs) takes a dict (or a sequence) and returns a dict
    {output name: array}.  out= gives arrays to write into (an array, a
    sequence, or a dict by name); they are returned.  One run at a time per
    Module: calls from several threads wait for each other (load one Module
    per thread to run in parallel; the GIL is released while a model runs).
    """

    def __init__(self, path, threads=1):
        self.path = path
        self._n = _cuvil.Native(path, threads)
        ins, outs = self._n.signature()
        self.inputs = tuple(IO(*t) for t in ins)
        self.outputs = tuple(IO(*t) for t in outs)
        self._in_index = {io.name: i for i, io in enumerate(self.inputs)}
        self._single = len(self.outputs) == 1
        self.compiled, self.cache_line, self.diagnostics = None, "", []

    def __repr__(self):
        def sig(ios):
            return ", ".join("%s: %s%s" % (io.name, io.dtype, list(io.shape)) for io in ios)
        return "<cuvil.Module %s (%s) -> (%s)>" % (self.path, sig(self.inputs), sig(self.outputs))

    def _ordered(self, named):
        args = [None] * len(self.inputs)
        for k, v in named.items():
            i = self._in_index.get(k)
            if i is None:
                raise InputError(2024, "the model has no input '%s' (inputs: %s)"
                                 % (k, ", ".join(io.name for io in self.inputs)), k, "", "")
            args[i] = v
        for i, v in enumerate(args):
            if v is None:
                io = self.inputs[i]
                raise InputError(2024, "input '%s' is missing" % io.name, io.name, "", "")
        return tuple(args)

    def _outs(self, out):
        if out is None:
            return None
        if isinstance(out, dict):
            names = [io.name for io in self.outputs]
            unknown = set(out) - set(names)
            if unknown or len(out) != len(names):
                raise InputError(2024, "out= must name every output (%s), got %s"
                                 % (", ".join(names), ", ".join(sorted(out))), "", "", "")
            return tuple(out[n] for n in names)
        if self._single and not isinstance(out, (tuple, list)):
            return (out,)
        return tuple(out)

    def __call__(self, *args, out=None, **named):
        if named:
            if args:
                raise TypeError("give the inputs either in order or by name, not both")
            args = self._ordered(named)
        r = self._n.run(args, self._outs(out))
        return r[0] if self._single else r

    def run(self, inputs, out=None):
        """Runs the model: inputs a dict {input name: array} or a sequence in
        input order; returns a dict {output name: array}."""
        args = self._ordered(inputs) if isinstance(inputs, dict) else tuple(inputs)
        r = self._n.run(args, self._outs(out))
        return {io.name: a for io, a in zip(self.outputs, r)}

    def _input_addresses(self):
        # The data address each input had in the last run (tests: zero copy).
        return self._n.input_addresses()


def _open_path(path):
    # lib<name>.so -> its own <name>.manifest.json (several artifacts may share
    # a directory), else the directory's manifest.json.
    path = os.fspath(path)
    base = os.path.basename(path)
    if base.startswith("lib") and base.endswith(".so"):
        d = os.path.dirname(path) or "."
        own = os.path.join(d, base[3:-3] + ".manifest.json")
        return own if os.path.exists(own) else d
    return path


def load(path, threads=1):
    """Loads a compiled artifact: a directory written by `cuvil compile -o DIR`,
    its lib<name>.so, or a <name>.manifest.json.  The manifest gives the
    signature; this CPU is checked against the artifact's target (Error
    CV5036 names the missing features); threads sizes the context's pool.
    Returns a Module."""
    return Module(_open_path(path), threads)


def _diagnostics(rows):
    return [Diagnostic("CV%04d" % code, sev, file or None, line, col, msg)
            for code, sev, file, line, col, msg in rows]


def compile(model_path, target="native", precision="fp32", out=None, cache=True, threads=1,
            opt_level=2, name=None):
    """Compiles a model (ONNX, CU-IR, model language) in this process, with the
    same compile-with-cache as `cuvil compile` (the same cache unless
    cache=False), into out (a temporary directory, removed after loading,
    when None) and returns the loaded Module; its .compiled says whether the
    compiler ran (False: from the cache) and .cache_line how the cache
    answered.  The GIL is released while the model compiles; compiles in one
    process take turns.  A failed compile raises CompileError with its
    diagnostics."""
    tmp = None
    if out is None:
        out = tmp = tempfile.mkdtemp(prefix="cuvil-py-")
    try:
        rows, _, compiled, line = _cuvil.compile(
            os.fspath(model_path), os.fspath(out), None if target == "native" else target,
            precision, bool(cache), opt_level, name)
        diags = _diagnostics(rows)
        first = next((d for d in diags if d.severity == "error"), None)
        if first:
            raise CompileError(first.code, first.message, diags)
        m = load(out, threads)
        m.compiled, m.cache_line, m.diagnostics = compiled, line, diags
        return m
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def validate(path, strict=False):
    """Checks a model file or a CuvilBuildCluster/CuvilPipeline spec (.yaml)
    without compiling it, as `cuvil validate` does, and returns its
    diagnostics, a list of Diagnostic (empty when the file is clean)."""
    return _diagnostics(_cuvil.validate(os.fspath(path), bool(strict)))
