# Test-only tools.  kafka-mock: a librdkafka mock cluster that the Kafka queue
# tests (tests/unit/queue/test_queue_kafka.c) and bench/queue start as a child.
TEST_DATA += $(BUILD)/tools/kafka-mock

$(BUILD)/tools/kafka-mock: tests/tools/kafka-mock.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(shell pkg-config --cflags rdkafka) $< -o $@ \
	  $(shell pkg-config --libs rdkafka) -lpthread

# Statically shaped transformer exports (issue 26) for test_transformer_models
# and bench/models/transformers.sh; only the small ones here (the
# BERT-base and GPT-2-small sizes are exported by the bench).
TEST_DATA += $(BUILD)/models/transformers.stamp
$(BUILD)/models/transformers.stamp: tests/tools/export_transformers_static.py
	@mkdir -p $(@D)
	$(Q)/usr/bin/python3 tests/tools/export_transformers_static.py $(@D) && touch $@ || \
	  echo "warning: transformer export skipped (python3-torch missing?)"

# The small exports with dynamic axes (issue 26: bert_small, speech_lstm,
# gpt_decode, each with reference outputs at several shapes) for
# test_dynamic_models; skipped when PyTorch is missing.
TEST_DATA += $(BUILD)/models/dynamic/dynamic.stamp
$(BUILD)/models/dynamic/dynamic.stamp: tests/tools/export_transformers.py
	@mkdir -p $(@D)
	$(Q)/usr/bin/python3 tests/tools/export_transformers.py $(@D) small >/dev/null 2>&1 && \
	  touch $@ || echo "warning: dynamic transformer export skipped (python3-torch missing?)"

# ONNX RNN / LSTM / GRU over a dynamic number of steps (plain RNN, peepholes,
# sequence_lens) with references from torch and onnx's LSTM_Helper, for
# test_rnn_models; skipped when PyTorch is missing.
TEST_DATA += $(BUILD)/models/rnn/rnn.stamp
$(BUILD)/models/rnn/rnn.stamp: tests/tools/export_rnn.py
	@mkdir -p $(@D)
	$(Q)/usr/bin/python3 tests/tools/export_rnn.py $(@D) >/dev/null 2>&1 && \
	  touch $@ || echo "warning: RNN export skipped (python3-torch missing?)"

# Two tiny PyTorch exports (tests/unit/cli/test_artifact_names.c), both graphs
# named "torch_jit"; the tests skip when PyTorch is not installed.
TEST_DATA += $(BUILD)/models/tiny/tiny.stamp
$(BUILD)/models/tiny/tiny.stamp: tests/tools/export_tiny_torch.py
	@mkdir -p $(@D)
	$(Q)/usr/bin/python3 $< $(@D) >/dev/null 2>&1 && touch $@ || \
	  echo "warning: tiny PyTorch exports skipped (python3-torch missing?)"

# The quick-tour and docs tests (tests/tour.sh, test_docs, test_artifact_names)
# run the normal build, as a user does, and the examples as `make` leaves them.
TEST_DATA += $(BUILD)/cuvil $(BUILD)/lib/cuvil/libcv_llvm.so $(EXAMPLE_WEIGHTS)
