# queue/ needs SQLite (queue_sqlite.c); librdkafka (queue_kafka*.c) is
# loaded with dlopen on first use (kafkalib.c): its header comes from the
# default include path and only the tests that drive it directly link it.
PKGS += sqlite3
TEST_PKGS += rdkafka
