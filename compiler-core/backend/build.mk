# The LLVM backend links the LLVM 19 C API (one shared library, -lLLVM-19).
LLVM_CONFIG ?= llvm-config-19
EXTRA_CFLAGS += -isystem $(shell $(LLVM_CONFIG) --includedir 2>/dev/null)
EXTRA_LIBS   += $(shell $(LLVM_CONFIG) --ldflags --libs 2>/dev/null)
PKGS         += openssl
