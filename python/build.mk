# The Python package (python/): cuvil._cuvil, a C extension against CPython's
# stable ABI, linked with the normal-flavour libraries it needs to load,
# compile and validate in process (and a copy of the LLVM backend plugin).  `make python` builds it into $(BUILD)/python (PYTHONPATH=that);
# `pip install --no-build-isolation --no-index ./python` installs it.
# make test builds it and test_python runs python/tests with it.
PYTHON      ?= /usr/bin/python3
PY_EXT      := $(BUILD)/python/cuvil/_cuvil.abi3.so
PY_SRCS     := $(wildcard python/src/*.c python/src/*.h python/cuvil/*.py python/cuvil/*.pyi) python/setup.py
PY_LIBS     := $(foreach c,compile spec queue compiler_core cache symbols common,$(BUILD)/lib/libcv_$(c).a)

.PHONY: python
python: $(PY_EXT)

$(PY_EXT): $(PY_SRCS) $(PY_LIBS) $(BUILD)/lib/cuvil/libcv_llvm.so
	$(Q)cd python && CUVIL_BUILD=$(abspath $(BUILD)) CC="$(CC)" $(PYTHON) setup.py -q build \
	  --build-base $(abspath $(BUILD)/python-build) --build-lib $(abspath $(BUILD)/python) \
	  >$(abspath $(BUILD))/python-build.log 2>&1 || { cat $(abspath $(BUILD))/python-build.log; exit 1; }
	$(Q)touch $@

TEST_DATA += $(PY_EXT)
