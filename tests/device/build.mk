# The bf16 GEMM check program (tests/device/amx_gemm_check.c): the runtime's
# sources built for the AVX-512 variant (as compiler-core/runtime/build.mk
# builds its bitcode) into one static x86-64 program, to be copied to a
# machine with AMX and run there:
#   make amx-gemm-check      builds $(BUILD)/tools/amx_gemm_check and runs it
#                            (--quick, then the full list at 1 thread)
# The unit test test_bf16_dispatch runs it with --quick (the dispatch must
# not pick AMX on a CPU without it).
AMX_CHECK := $(BUILD)/tools/amx_gemm_check
TEST_DATA += $(AMX_CHECK)

$(AMX_CHECK): tests/device/amx_gemm_check.c $(CVRT_SRCS) $(CVRT_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CVRT_CLANG) -std=c17 -O2 -march=x86-64-v4 -DCVRT_AVX512 -Wall -Wextra -Werror -I. \
	  -static $(CVRT_SRCS) $< -o $@ -lpthread -lm

.PHONY: amx-gemm-check
amx-gemm-check: $(AMX_CHECK)
	$(AMX_CHECK) --quick && $(AMX_CHECK) --threads 1
