# The Python package (python/): cuvil._cuvil, a C extension against CPython's
# stable ABI, linked with the normal-flavour compiler-core and common
# libraries.  `make python` builds it into $(BUILD)/python (PYTHONPATH=that);
# `pip install --no-build-isolation --no-index ./python` installs it.
# make test builds it and test_python runs python/tests with it.
PYTHON      ?= /usr/bin/python3
PY_EXT      := $(BUILD)/python/cuvil/_cuvil.abi3.so
PY_SRCS     := $(wildcard python/src/*.c python/cuvil/*.py python/cuvil/*.pyi) python/setup.py

.PHONY: python
python: $(PY_EXT)

$(PY_EXT): $(PY_SRCS) $(BUILD)/lib/libcv_compiler_core.a $(BUILD)/lib/libcv_common.a
	$(Q)cd python && CUVIL_BUILD=$(abspath $(BUILD)) CC="$(CC)" $(PYTHON) setup.py -q build \
	  --build-base $(abspath $(BUILD)/python-build) --build-lib $(abspath $(BUILD)/python) \
	  >$(abspath $(BUILD))/python-build.log 2>&1 || { cat $(abspath $(BUILD))/python-build.log; exit 1; }
	$(Q)touch $@

TEST_DATA += $(PY_EXT)
