"""Builds the cuvil package: cuvil._cuvil, a C extension against CPython's
stable ABI (abi3, 3.11+), linked with the repository's static libraries
(compiler-core's artifact loader and common/).  `make python` builds those
first; `pip install --no-build-isolation --no-index ./python` then needs no
network."""
import os
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("CUVIL_BUILD", os.path.join(ROOT, "build"))
LIBS = [os.path.join(BUILD, "lib", f"libcv_{c}.a") for c in ("compiler_core", "common")]
missing = [p for p in LIBS if not os.path.exists(p)]
if missing and "egg_info" not in sys.argv and "dist_info" not in sys.argv:
    sys.exit("cuvil: %s missing: run `make python` (or `make %s`) in %s first"
             % (", ".join(missing), " ".join(os.path.relpath(p, ROOT) for p in missing), ROOT))


def pkg_libs(pkg):
    try:
        return subprocess.check_output(["pkg-config", "--libs", pkg], text=True).split()
    except (OSError, subprocess.CalledProcessError):
        return ["-l" + pkg]


setup(
    name="cuvil",
    version=open(os.path.join(ROOT, "VERSION")).read().strip(),
    description="Load and run Cuvil artifacts from Python (numpy, DLPack)",
    packages=["cuvil"],
    package_data={"cuvil": ["py.typed", "*.pyi"]},
    ext_modules=[
        Extension(
            "cuvil._cuvil",
            sources=["src/cuvil_module.c"],
            include_dirs=[ROOT, os.path.join(BUILD, "gen")],
            define_macros=[("Py_LIMITED_API", "0x030B0000"), ("_GNU_SOURCE", None)],
            py_limited_api=True,
            extra_compile_args=["-std=c17", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers"],
            extra_objects=LIBS,
            extra_link_args=pkg_libs("jansson") + ["-ldl", "-lm", "-lpthread"],
            depends=LIBS,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
    zip_safe=False,
)
