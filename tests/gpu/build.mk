# CUDA artifacts.  Unit tests (make test, no GPU): libcuda-fake.so stands in
# for the NVIDIA driver (tests/gpu/fake_libcuda.c).  On a GPU machine:
#   make test-gpu        builds the bundle below and runs it (tests/gpu/run.sh)
#   make gpu-bundle      only builds it: $(BUILD)/gpu-bundle, self-contained
#                        (artifacts for cuda-sm90, inputs, the interpreter's
#                        outputs, a runner needing only libc), to be copied to
#                        a GPU machine that has no compiler toolchain;
#                        GPU_TORCHVISION=mobilenet_v2[,resnet18] adds the
#                        torchvision exports (python3-torch) against PyTorch
#                        at batch 1 and 32 (bench/gpu/torch_ref.py),
#                        GPU_FP16=1 adds them compiled with fp16 weights,
#                        GPU_TARGET=cuda-sm80 another SM, GPU_CORE=0 leaves
#                        the examples and single-op groups out, GPU_BUNDLE=DIR
#                        puts it elsewhere (a bundle travels whole: resnet18
#                        alone is 46 MB)
TEST_DATA += $(BUILD)/tools/libcuda-fake.so

$(BUILD)/tools/libcuda-fake.so: tests/gpu/fake_libcuda.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -O1 -g -fPIC -shared $< -o $@

GPU_BUNDLE     ?= $(BUILD)/gpu-bundle
GPU_BUNDLE_GEN := $(BUILD)/tools/gpu_bundle
GPU_SUPPORT_O  := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/support/*.c))

# LIBS_NORMAL and link_all are defined after the build.mk fragments.
.SECONDEXPANSION:
$(GPU_BUNDLE_GEN): $(BUILD)/obj/tests/gpu/gpu_bundle.o $(GPU_SUPPORT_O) $$(LIBS_NORMAL) | $(BUILD)/lib/cuvil/libcv_llvm.so
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $(filter %.o,$^) $(link_all) $(PKG_LIBS) $(TEST_LIBS) $(SYS_LIBS)

$(BUILD)/obj/tests/gpu/gpu_bundle.o $(GPU_SUPPORT_O): EXTRA_CFLAGS += $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)

.PHONY: gpu-bundle test-gpu
# The bundle runner needs only libc (a GPU machine may have no toolchain).
$(BUILD)/tools/gpu_runner: tests/gpu/gpu_runner.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=c17 -D_GNU_SOURCE -O2 $(WARN) $< -o $@ -ldl -lm

gpu-bundle: $(GPU_BUNDLE_GEN) $(BUILD)/lib/cuvil/libcv_llvm.so $(BUILD)/tools/gpu_runner
	$(Q)rm -rf $(GPU_BUNDLE) && mkdir -p $(GPU_BUNDLE)
	$(Q)if [ -n "$(GPU_TORCHVISION)" ] && [ ! -f $(BUILD)/torchvision/.complete ]; then \
	  mkdir -p $(BUILD)/torchvision && /usr/bin/python3 tests/tools/export_torchvision.py $(BUILD)/torchvision \
	  && touch $(BUILD)/torchvision/.complete; fi
	$(Q)$(GPU_BUNDLE_GEN) $(GPU_BUNDLE) $(or $(GPU_TARGET),cuda-sm90) \
	  $(if $(GPU_TORCHVISION),--torchvision $(BUILD)/torchvision --models $(GPU_TORCHVISION)) \
	  $(if $(GPU_FP16),--fp16) \
	  $(if $(filter 0,$(GPU_CORE)),--no-core)
	$(Q)cp $(BUILD)/tools/gpu_runner $(GPU_BUNDLE)/gpu_runner
	$(Q)cp tests/gpu/run.sh $(GPU_BUNDLE)/run.sh
	@echo "gpu-bundle: $(GPU_BUNDLE) ($$(du -sh $(GPU_BUNDLE) | cut -f1)); on the GPU machine: $(GPU_BUNDLE)/run.sh"

# The torchvision models' batch-32 cases take their input and PyTorch's
# output from bench/gpu/torch_ref.py on the GPU machine (its python3 has
# PyTorch with CUDA); bench/gpu/run.sh also prints Cuvil vs PyTorch times.
test-gpu: gpu-bundle
	$(Q)if [ -n "$(GPU_TORCHVISION)" ]; then python3 bench/gpu/torch_ref.py $(GPU_BUNDLE) --iters 5; fi
	$(Q)tests/gpu/run.sh $(GPU_BUNDLE)
