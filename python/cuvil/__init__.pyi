"""Type stubs for the cuvil package (see docs/python.md)."""
from os import PathLike
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

_Path = Union[str, "PathLike[str]"]
_Array = Any  # numpy arrays, torch tensors (__dlpack__), buffers, nested lists
_Out = Union[np.ndarray, Sequence[np.ndarray], Mapping[str, np.ndarray], None]

class IO(NamedTuple):
    name: str
    dtype: str                           # numpy dtype name: "float32"
    shape: Tuple[Union[int, str], ...]   # a symbolic dim is its name: "N"

class Diagnostic(NamedTuple):
    code: str                            # "CV2001"
    severity: str                        # "error", "warning", "note"
    file: Optional[str]
    line: int                            # 1-based, 0 if unknown
    column: int
    message: str

class Error(Exception):
    code: str                            # "CV5036"
    message: str
    def __init__(self, code: Union[int, str], message: str) -> None: ...

class InputError(Error, ValueError):
    input: str                           # the input's (or out= output's) name
    expected: str                        # "f32[N,3,224,224]"
    given: str                           # "f32[2,3,224]"
    def __init__(self, code: Union[int, str], message: str, input: str = ...,
                 expected: str = ..., given: str = ...) -> None: ...

class CompileError(Error):
    diagnostics: list[Diagnostic]
    def __init__(self, code: Union[int, str], message: str,
                 diagnostics: Sequence[Diagnostic] = ...) -> None: ...

class Module:
    path: str
    inputs: Tuple[IO, ...]
    outputs: Tuple[IO, ...]
    compiled: bool                       # set by compile(): False when from the cache
    cache_line: str                      # set by compile(): "cache: l1 hit, l2 hit"
    diagnostics: list[Diagnostic]        # set by compile(): its warnings
    def __init__(self, path: str, threads: int = ...) -> None: ...
    def __call__(self, *inputs: _Array, out: _Out = ...,
                 **named: _Array) -> Union[np.ndarray, Tuple[np.ndarray, ...]]: ...
    def run(self, inputs: Union[Mapping[str, _Array], Sequence[_Array]],
            out: _Out = ...) -> Dict[str, np.ndarray]: ...

def load(path: _Path, threads: int = ...) -> Module: ...
def compile(model_path: _Path, target: str = ..., precision: str = ...,
            out: Optional[_Path] = ..., cache: bool = ..., threads: int = ...,
            opt_level: int = ..., name: Optional[str] = ...) -> Module: ...
def validate(path: _Path, strict: bool = ...) -> list[Diagnostic]: ...
def host_target() -> str: ...
