"""Builds the cuvil package: cuvil._cuvil, a C extension against CPython's
stable ABI (abi3, 3.11+), linked with the repository's static libraries
(compiler-core's artifact loader and common/).  `make python` builds those
first; `pip install --no-build-isolation --no-index ./python` then needs no
network."""
import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("CUVIL_BUILD", os.path.join(ROOT, "build"))
# In link order (callers first).  compiler-core and common whole: the LLVM
# backend plugin resolves some of their functions against this extension.
COMPONENTS = ("compile", "spec", "queue", "compiler_core", "cache", "symbols", "common")
LIBS = [os.path.join(BUILD, "lib", f"libcv_{c}.a") for c in COMPONENTS]
WHOLE = ("compiler_core", "common")
PLUGIN = os.path.join(BUILD, "lib", "cuvil", "libcv_llvm.so")
missing = [p for p in LIBS if not os.path.exists(p)]
if missing and "egg_info" not in sys.argv and "dist_info" not in sys.argv:
    sys.exit("cuvil: %s missing: run `make python` (or `make %s`) in %s first"
             % (", ".join(missing), " ".join(os.path.relpath(p, ROOT) for p in missing), ROOT))


def pkg_libs(pkgs):
    try:
        return subprocess.check_output(["pkg-config", "--libs"] + pkgs, text=True).split()
    except (OSError, subprocess.CalledProcessError):
        return ["-l" + p for p in pkgs]


def link_objects():
    out = []
    for c, lib in zip(COMPONENTS, LIBS):
        out += ["-Wl,--whole-archive", lib, "-Wl,--no-whole-archive"] if c in WHOLE else [lib]
    return out


class build_ext_with_plugin(build_ext):
    """Puts the LLVM backend plugin where compiler-core looks for it: next to
    the extension (cuvil/lib/cuvil/), so an installed package compiles."""

    def run(self):
        super().run()
        if os.path.exists(PLUGIN):
            dest = os.path.join(self.build_lib, "cuvil", "lib", "cuvil")
            os.makedirs(dest, exist_ok=True)
            self.copy_file(PLUGIN, os.path.join(dest, "libcv_llvm.so"))


setup(
    name="cuvil",
    version=open(os.path.join(ROOT, "VERSION")).read().strip(),
    description="Load and run Cuvil artifacts from Python (numpy, DLPack)",
    packages=["cuvil"],
    package_data={"cuvil": ["py.typed", "*.pyi"]},
    ext_modules=[
        Extension(
            "cuvil._cuvil",
            sources=["src/cuvil_module.c", "src/cuvil_compile.c"],
            include_dirs=[ROOT, os.path.join(BUILD, "gen")],
            define_macros=[("Py_LIMITED_API", "0x030B0000"), ("_GNU_SOURCE", None)],
            py_limited_api=True,
            extra_compile_args=["-std=c17", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers"],
            extra_link_args=link_objects() + pkg_libs(
                ["jansson", "yaml-0.1", "openssl", "libxxhash", "libzstd", "sqlite3",
                 "libprotobuf-c"]) + ["-ldl", "-lm", "-lpthread"],
            depends=LIBS,
        )
    ],
    cmdclass={"build_ext": build_ext_with_plugin},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
    zip_safe=False,
)
