# Test-only tools.  kafka-mock: a librdkafka mock cluster that the Kafka queue
# tests (tests/unit/test_queue_kafka.c) and bench/queue start as a child.
TEST_DATA += $(BUILD)/tools/kafka-mock

$(BUILD)/tools/kafka-mock: tests/tools/kafka-mock.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(shell pkg-config --cflags rdkafka) $< -o $@ \
	  $(shell pkg-config --libs rdkafka) -lpthread
