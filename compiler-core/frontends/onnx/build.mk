# ONNX front end: C code for onnx.proto is generated at build time with
# protoc-c from the onnx.proto that Debian's python3-onnx ships, never
# committed.  Included by the top-level Makefile.

PROTOC_C     ?= protoc-c
ONNX_PROTO   ?= $(firstword $(shell dpkg -L python3-onnx 2>/dev/null | grep '/onnx/onnx\.proto$$') \
                  $(wildcard /usr/lib/python3/dist-packages/onnx/onnx.proto))
ONNX_GEN_DIR := $(BUILD)/gen/onnx
ONNX_GEN_H   := $(ONNX_GEN_DIR)/onnx.pb-c.h

PKGS += libprotobuf-c
EXTRA_CFLAGS += -I$(BUILD)/gen
GENERATED_SRCS_compiler_core += $(ONNX_GEN_DIR)/onnx.pb-c.c $(ONNX_GEN_DIR)/onnx_data.pb-c.c
# Test data of sequences and optionals (SequenceProto, OptionalProto).
ONNX_DATA_H  := $(ONNX_GEN_DIR)/onnx_data.pb-c.h

# A pattern rule: one protoc-c run makes both files.
$(BUILD)/gen/%/onnx.pb-c.c $(BUILD)/gen/%/onnx.pb-c.h: $(ONNX_PROTO)
	@mkdir -p $(@D)
	@test -n "$(ONNX_PROTO)" || { echo "onnx.proto not found: install python3-onnx (make deps)"; exit 1; }
	$(Q)$(PROTOC_C) --proto_path=$(dir $(ONNX_PROTO)) --c_out=$(@D) $(ONNX_PROTO)

$(ONNX_GEN_DIR)/onnx_data.pb-c.c $(ONNX_GEN_DIR)/onnx_data.pb-c.h: \
		compiler-core/frontends/onnx/onnx_data.proto $(ONNX_PROTO) | $(ONNX_GEN_H)
	@mkdir -p $(@D)
	$(Q)$(PROTOC_C) --proto_path=$(dir $(ONNX_PROTO)) --proto_path=compiler-core/frontends/onnx \
	  --c_out=$(@D) compiler-core/frontends/onnx/onnx_data.proto

# Everything that includes the generated header waits for it (order-only:
# the -MMD dependency files take over once it exists), in every flavour.
ONNX_USERS := $(wildcard compiler-core/frontends/onnx/*.c tests/unit/test_onnx_*.c \
                          tests/conformance/*.c)
$(foreach f,$(BUILD)/obj $(BUILD)/asan/obj $(BUILD)/fuzz/obj,$(patsubst %.c,$(f)/%.o,$(ONNX_USERS))): | $(ONNX_GEN_H) $(ONNX_DATA_H)

# The conformance runner (tests/conformance/run.sh builds it).  It depends on
# the cuvil binary so that it relinks whenever a library changes; the
# library list is expanded when the recipe runs (it is set after this file).
# --backend native compiles in-process: like cuvil it links every component
# object and exports its symbols for the LLVM plugin, found at
# $(BUILD)/lib/cuvil/ (<exe dir>/../lib/cuvil/).
ONNX_CONF_BIN := $(BUILD)/conformance/onnx_conformance
$(ONNX_CONF_BIN): $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/conformance/*.c)) $(BUILD)/cuvil \
                  | $(BUILD)/lib/cuvil/libcv_llvm.so
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $(filter %.o,$^) -Wl,--whole-archive $(LIBS_NORMAL) -Wl,--no-whole-archive \
	  -rdynamic $(PKG_LIBS) $(SYS_LIBS)

# Real-model test data (torchvision exports with PyTorch reference outputs):
# generated only when missing; the tests skip when PyTorch is not installed.
TEST_DATA += $(BUILD)/models/torchvision.stamp
$(BUILD)/models/%.stamp:
	@mkdir -p $(@D)
	$(Q)/usr/bin/python3 tests/tools/export_torchvision.py $(@D) && touch $@ || \
	  echo "warning: torchvision export skipped (python3-torch/torchvision missing?)"
