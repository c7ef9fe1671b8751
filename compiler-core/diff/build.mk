# compiler-core/diff/diff_ort.c reads ONNX models with the protobuf-c code
# generated for the ONNX front end (compiler-core/frontends/onnx/build.mk):
# wait for it, in every flavour.
$(foreach f,$(BUILD)/obj $(BUILD)/asan/obj $(BUILD)/fuzz/obj,$(f)/compiler-core/diff/diff_ort.o): | $(BUILD)/gen/onnx/onnx.pb-c.h
