"""Shared set-up for the cuvil package tests: the cuvil program, the test
models (build/models, made by `make test`) and artifacts compiled from them
once per process."""
import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CUVIL_BUILD", os.path.join(ROOT, "build"))
MODELS = os.path.join(BUILD, "models")

try:
    import numpy as np  # noqa: F401
except ImportError:  # pragma: no cover
    np = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def cuvil_bin():
    b = os.environ.get("CUVIL_BIN") or os.path.join(BUILD, "cuvil")
    os.environ["CUVIL_BIN"] = b
    return b


_tmp = None
_artifacts = {}


def tmpdir():
    global _tmp
    if _tmp is None:
        _tmp = tempfile.mkdtemp(prefix="cuvil-pytest-")
        import atexit
        atexit.register(shutil.rmtree, _tmp, True)
    return _tmp


def model(rel):
    p = os.path.join(MODELS, rel)
    if not os.path.exists(p):
        raise unittest.SkipTest("%s missing (made by make test's model data)" % p)
    return p


def artifact(rel):
    """The artifact directory compiled from build/models/<rel> (once)."""
    if rel not in _artifacts:
        out = os.path.join(tmpdir(), rel.replace("/", "_").replace(".onnx", ""))
        subprocess.run([cuvil_bin(), "compile", model(rel), "-o", out, "-q"], check=True)
        _artifacts[rel] = out
    return _artifacts[rel]


def cuvil_run(art, inputs):
    """The outputs `cuvil run` gives for {name: array}: {name: array}."""
    d = tempfile.mkdtemp(dir=tmpdir())
    args = [cuvil_bin(), "run", art, "--output", os.path.join(d, "out")]
    for name, a in inputs.items():
        f = os.path.join(d, name + ".npy")
        np.save(f, a)
        args += ["--input", "%s=%s" % (name, f)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    outd = os.path.join(d, "out")
    return {f[:-4]: np.load(os.path.join(outd, f)) for f in os.listdir(outd)}


def torch_classifier():
    """PyTorch's own classifier: the module tests/tools/export_tiny_torch.py
    exported as classifier.onnx, with the same seeded weights."""
    if torch is None:
        raise unittest.SkipTest("torch missing")
    spec = importlib.util.spec_from_file_location(
        "export_tiny_torch", os.path.join(ROOT, "tests", "tools", "export_tiny_torch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    return mod.Classifier().eval()
