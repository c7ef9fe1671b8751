# Cuvil — top-level build.  GNU make; every library is found with pkg-config.
#
#   make            build build/cuvil (and build/lib/libcv_<component>.a)
#   make test       install missing packages, build, run every unit test under ASan+UBSan
#   make integration  real-client tests too slow for make test (Bazel against cuvil cache serve)
#   make demo       install missing packages, build, run the demo on examples/
#   make fuzz       run every libFuzzer target for FUZZ_SECONDS (default 60) each
#   make fuzz-long  each target until it used FUZZ_CPU_SECONDS of CPU, one at a time, nice 19
#   make chaos      kill -9 workers and controller mid-build, full disk, killed remote cache
#   make ci-extra   what CI adds to make test: every fuzz target for CI_FUZZ_SECONDS
#   make bench      run every benchmark under bench/
#   make bench-zoo  the model zoo: 26 torchvision models vs ONNX Runtime and PyTorch
#   make docs       regenerate docs/ops.md from the op tables
#   make amx-gemm-check  the -p bf16 GEMM paths (AMX, vdpbf16ps, widened) side by side on this CPU
#   make conformance, make install PREFIX=..., make clean
#
# Components register extra rules (generated sources, extra libraries) in
# <component>/build.mk fragments, so this file does not need to know them.

.DEFAULT_GOAL := all
BUILD      ?= build
PREFIX     ?= /usr/local
CC         ?= cc
FUZZ_CC    ?= clang-19
FUZZ_SECONDS ?= 60
FUZZ_CPU_SECONDS ?= 600
CI_FUZZ_SECONDS ?= 30
NPROC      := $(shell nproc 2>/dev/null || echo 2)
V          ?= 0

ifeq ($(V),0)
Q := @
else
Q :=
endif

# Libraries every component may use.  A component's build.mk appends to PKGS.
PKGS        := jansson yaml-0.1
TEST_PKGS   := cmocka

VERSION     := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GIT_COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
GIT_DIRTY   := $(shell test -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo +dirty)
LLVM_VERSION:= $(shell llvm-config-19 --version 2>/dev/null || echo none)
# Rewritten only when its content changes, so only cmd_version.o rebuilds.
VERSION_H   := $(BUILD)/gen/cv_version.h
$(shell mkdir -p $(BUILD)/gen && printf '#define CV_VERSION "%s"\n#define CV_GIT_COMMIT "%s"\n#define CV_LLVM_VERSION "%s"\n' \
   '$(VERSION)' '$(GIT_COMMIT)$(GIT_DIRTY)' '$(LLVM_VERSION)' > $(VERSION_H).tmp && \
   (cmp -s $(VERSION_H).tmp $(VERSION_H) && rm -f $(VERSION_H).tmp || mv $(VERSION_H).tmp $(VERSION_H)))

WARN        := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
               -Wvla -Wformat=2 -Wno-format-nonliteral
BASE_CFLAGS := -std=c17 -D_GNU_SOURCE $(WARN) -fno-strict-aliasing -fPIC -I. -I$(BUILD)/gen
OPT_CFLAGS  := -O2 -g
SAN_CFLAGS  := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# Components in dependency order (callers first, so static link order is right).
COMPONENTS  := controller worker k8s-operator serve spec compile queue compiler-core cache symbols common

-include $(wildcard */build.mk */*/build.mk */*/*/build.mk)

PKG_CFLAGS  = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS    = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS   = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)
SYS_LIBS    = $(EXTRA_LIBS) -lpthread -ldl -lm

libname     = libcv_$(subst -,_,$(1)).a
comp_srcs   = $(filter-out $(COMPONENT_EXCLUDE),$(shell find $(1) -name '*.c' -not -path '*/deploy/*' 2>/dev/null | LC_ALL=C sort)) $(GENERATED_SRCS_$(subst -,_,$(1)))
PRESENT     := $(foreach c,$(COMPONENTS),$(if $(strip $(call comp_srcs,$(c))),$(c)))

# ---- one set of rules per flavour: normal ($(BUILD)) and sanitized ($(BUILD)/asan)
# A library also depends on the list of its objects (rewritten only when
# it changes), so that a file moved to another component leaves the old one.
define flavour
$(1)_OBJS_$(2) := $$(patsubst %.c,$(1)/obj/%.o,$$(call comp_srcs,$(2)))
$$(shell mkdir -p $(1)/lib && echo '$$($(1)_OBJS_$(2))' > $(1)/lib/$(2).objs.tmp && \
   (cmp -s $(1)/lib/$(2).objs.tmp $(1)/lib/$(2).objs && rm -f $(1)/lib/$(2).objs.tmp || \
    mv $(1)/lib/$(2).objs.tmp $(1)/lib/$(2).objs))
$(1)/lib/$(call libname,$(2)): $$($(1)_OBJS_$(2)) $(1)/lib/$(2).objs
	@mkdir -p $$(@D)
	$$(Q)rm -f $$@ && ar rcs $$@ $$(filter %.o,$$^)
endef

LIBS_NORMAL := $(foreach c,$(PRESENT),$(BUILD)/lib/$(call libname,$(c)))
LIBS_ASAN   := $(foreach c,$(PRESENT),$(BUILD)/asan/lib/$(call libname,$(c)))
$(foreach c,$(PRESENT),$(eval $(call flavour,$(BUILD),$(c))))
$(foreach c,$(PRESENT),$(eval $(call flavour,$(BUILD)/asan,$(c))))

CLI_SRCS    := $(sort $(wildcard cli/*.c))
# Unit tests live in one folder per component (tests/unit/<component>/,
# compiler-core by stage); each test_<name>.c becomes build/asan/tests/test_<name>,
# so test names are unique across folders.
TEST_SRCS   := $(sort $(shell find tests/unit -name 'test_*.c'))
TEST_SUPPORT:= $(sort $(wildcard tests/support/*.c))
test_bin     = $(BUILD)/asan/tests/$(basename $(notdir $(1)))
TEST_BINS   := $(foreach t,$(TEST_SRCS),$(call test_bin,$(t)))
ifneq ($(words $(TEST_BINS)),$(words $(sort $(TEST_BINS))))
  $(error two unit tests share a name: $(sort $(foreach b,$(TEST_BINS),$(if $(filter 1,$(words $(filter $(b),$(TEST_BINS)))),,$(notdir $(b))))))
endif

# Test objects come from a chain of pattern rules; keep them between runs
# (a bare .SECONDARY: would also stop new component sources being compiled).
.SECONDARY: $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(TEST_SRCS) $(TEST_SUPPORT))
.PHONY: all deps test unit-test integration demo bench bench-zoo fuzz conformance install clean help
.PHONY: fuzz-long chaos ci-extra docs
# The model-language examples validate and compile where they stand: their
# (small, deterministic) weights are generated next to them, not shipped.
EXAMPLE_WEIGHTS := $(patsubst %.cvl.py,%.safetensors,$(wildcard examples/models/*.cvl.py))
examples/models/%.safetensors: examples/models/gen_weights.py
	$(Q)/usr/bin/python3 $< $(@D) $* >/dev/null || \
	  echo "warning: $@ not generated (python3-numpy missing?)"

all: $(BUILD)/cuvil $(BUILD)/lib/cuvil/libcv_llvm.so $(EXAMPLE_WEIGHTS)

# docs/ops.md: the ONNX ops and model-language functions, from the op tables
# (test_docs checks that the file matches).
docs: $(BUILD)/cuvil
	$(Q)$(BUILD)/cuvil help ops > docs/ops.md

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(PKG_CFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/asan/obj/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c $< -o $@

# Programs link every component object (--whole-archive) and export their
# symbols (-rdynamic): the LLVM plugin calls back into the kernel API and
# diagnostics of the program that loads it.
link_all = -Wl,--whole-archive $(filter %.a,$^) -Wl,--no-whole-archive -rdynamic

# The release cuvil links the libraries that every command loads (SQLite,
# OpenSSL's libcrypto, zstd, ...) statically, with their symbols kept out of
# its exports so that a library dlopen'd later (librdkafka's libssl) binds
# to its own copy: loading and relocating them cost each process ~2 ms, as
# much as a local cache hit's own work.  The sanitized builds link them as
# shared libraries.
empty :=
space := $(empty) $(empty)
STATIC_LINK = -Wl,-Bstatic $(PKG_LIBS) -Wl,-Bdynamic \
              -Wl,--exclude-libs,$(subst $(space),:,$(strip $(patsubst -l%,lib%.a,$(filter -l%,$(PKG_LIBS)))))

$(BUILD)/cuvil: $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS)) $(LIBS_NORMAL) | $(BUILD)/lib/cuvil/libcv_llvm.so
	$(Q)$(CC) -o $@ $(filter %.o,$^) $(link_all) $(STATIC_LINK) $(SYS_LIBS)
	@echo "built $@"

$(BUILD)/asan/cuvil: $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(CLI_SRCS)) $(LIBS_ASAN) | $(BUILD)/asan/lib/cuvil/libcv_llvm.so
	$(Q)$(CC) $(SAN_CFLAGS) -o $@ $(filter %.o,$^) $(link_all) $(PKG_LIBS) $(SYS_LIBS)

define test_rule
$(call test_bin,$(1)): $(BUILD)/asan/obj/$(1:.c=.o) $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(TEST_SUPPORT)) $(LIBS_ASAN) | $(BUILD)/asan/lib/cuvil/libcv_llvm.so
	@mkdir -p $$(@D)
	$$(Q)$$(CC) $$(SAN_CFLAGS) -o $$@ $$(filter %.o,$$^) $$(link_all) $$(PKG_LIBS) $$(TEST_LIBS) $$(SYS_LIBS)
endef
$(foreach t,$(TEST_SRCS),$(eval $(call test_rule,$(t))))

# test_cli_options drives the commands' option tables: it links cli/ but main.
$(BUILD)/asan/tests/test_cli_options: $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(filter-out cli/main.c,$(CLI_SRCS)))

# The LLVM backend plugin, one per flavour.
$(BUILD)/lib/cuvil/libcv_llvm.so: $(patsubst %.c,$(BUILD)/obj/%.o,$(LLVM_PLUGIN_SRCS))
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -o $@ $^ $(LLVM_LIBS)

$(BUILD)/asan/lib/cuvil/libcv_llvm.so: $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(LLVM_PLUGIN_SRCS))
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_CFLAGS) -shared -o $@ $^ $(LLVM_LIBS)

deps:
	$(Q)scripts/deps.sh

# Unit tests run under ASan+UBSan; the CLI tests drive the sanitized binary.
test: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) unit-test

unit-test: $(TEST_BINS) $(BUILD)/asan/cuvil $(TEST_DATA)
	$(Q)CUVIL_BIN=$(abspath $(BUILD)/asan/cuvil) CUVIL_BUILD=$(abspath $(BUILD)) \
	  tests/run-unit.sh $(TEST_BINS)

# Real-client tests too slow for `make test` (each Bazel command starts a JVM).
integration: all
	$(Q)for t in tests/integration/*.sh; do echo "== $$t"; \
	  CUVIL_BIN=$(abspath $(BUILD)/cuvil) $$t || exit 1; done

demo: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) all
	$(Q)scripts/demo.sh $(BUILD)

bench: all
	$(Q)for b in bench/*/run.sh; do echo "== $$b"; BUILD=$(BUILD) $$b || exit 1; done

# The model zoo (issue 30): Cuvil vs ONNX Runtime vs PyTorch on 26 torchvision
# models at 1 and 2 threads; ZOO_ARGS="--models a,b --rounds 5" narrows it.
bench-zoo: all
	$(Q)BUILD=$(BUILD) bench/models/run.sh --zoo $(ZOO_ARGS)

# ---- fuzzing: clang libFuzzer, every fuzz/fuzz_*.c against the sources it names
FUZZ_SRCS   := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BINS   := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
FUZZ_LIB_SRCS = $(foreach c,$(PRESENT),$(call comp_srcs,$(c)))
FUZZ_OBJS   = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_LIB_SRCS))
FUZZ_FLAGS  := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1
.SECONDARY: $(FUZZ_OBJS)   # pattern-rule prerequisites: keep them when a link fails

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_FLAGS) $(PKG_CFLAGS) $(EXTRA_CFLAGS) -DCV_FUZZING -MMD -MP -c $< -o $@

$(BUILD)/fuzz/%: fuzz/%.c $(FUZZ_OBJS) $(wildcard fuzz/*.h)
	$(Q)$(FUZZ_CC) $(BASE_CFLAGS) -fsanitize=fuzzer,address,undefined -g -O1 $(PKG_CFLAGS) $(filter-out %.h,$^) -o $@ $(PKG_LIBS) $(SYS_LIBS)

fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS)
	$(Q)scripts/fuzz.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_BINS)

fuzz-long: deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS)
	$(Q)fuzz/run-long.sh $(BUILD) $(FUZZ_CPU_SECONDS) $(FUZZ_BINS)

# The short chaos tests are unit tests (tests/unit/*/test_chaos_*.c); this runs
# the long ones (tests/chaos/run.sh; the disk-full case needs root).
chaos: all $(BUILD)/asan/tests/test_chaos_cache $(BUILD)/tools/kafka-mock
	$(Q)tests/chaos/run.sh $(BUILD)

# CI after `make test`: a short run of every fuzz target.
ci-extra: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) $(FUZZ_BINS)
	$(Q)scripts/fuzz.sh $(BUILD) $(CI_FUZZ_SECONDS) $(FUZZ_BINS)

conformance: all $(BUILD)/models/torchvision.stamp
	$(Q)if [ -x tests/conformance/run.sh ]; then BUILD=$(BUILD) tests/conformance/run.sh $(if $(CONFORMANCE_BACKEND),--backend $(CONFORMANCE_BACKEND)); \
	  else echo "conformance: no conformance suite yet (arrives with the ONNX front end)"; fi
	@# int8/fp16 accuracy on resnet18 and mobilenet_v2 (issue 14; a few minutes)
	$(Q)BUILD=$(BUILD) tests/conformance/quant_models.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/cuvil $(DESTDIR)$(PREFIX)/lib/cuvil
	install -m 755 $(BUILD)/cuvil $(DESTDIR)$(PREFIX)/bin/cuvil
	install -m 755 $(BUILD)/lib/cuvil/libcv_llvm.so $(DESTDIR)$(PREFIX)/lib/cuvil/libcv_llvm.so
	for h in $$(grep -v '^#' scripts/public-headers.txt); do \
	  install -D -m 644 $$h $(DESTDIR)$(PREFIX)/include/cuvil/$$h; done

clean:
	rm -rf $(BUILD)

help:
	@sed -n '1,15p' Makefile

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
