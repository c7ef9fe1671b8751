# The LLVM backend (backend/llvm/*.c and the embedded runtime bitcode) is a
# plugin, lib/cuvil/libcv_llvm.so, the only thing linked against the LLVM 19
# C API; the rest of cuvil finds it on the first compile (llvm_loader.c).
LLVM_CONFIG ?= llvm-config-19
EXTRA_CFLAGS += -isystem $(shell $(LLVM_CONFIG) --includedir 2>/dev/null)
LLVM_LIBS    := $(shell $(LLVM_CONFIG) --ldflags --libs 2>/dev/null)
LLVM_PLUGIN_SRCS += $(sort $(wildcard compiler-core/backend/llvm/*.c))
COMPONENT_EXCLUDE += $(sort $(wildcard compiler-core/backend/llvm/*.c))
PKGS         += openssl
