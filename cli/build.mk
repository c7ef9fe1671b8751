# cli/diff_ort.c reads ONNX models with the protobuf-c code generated for
# the ONNX front end (compiler-core/frontends/onnx/build.mk): wait for it.
$(BUILD)/obj/cli/diff_ort.o $(BUILD)/asan/obj/cli/diff_ort.o: | $(BUILD)/gen/onnx/onnx.pb-c.h
