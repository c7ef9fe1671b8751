# common/ needs SQLite (queue_sqlite.c) for the queue; librdkafka
# (queue_kafka*.c) is loaded with dlopen on first use (kafkalib.c): its
# header comes from the default include path and only the tests that drive
# it directly link it.
PKGS += sqlite3 openssl   # tokens.c: OPENSSL_cleanse, base64
TEST_PKGS += rdkafka
# netlib.c loads libcurl and libmicrohttpd with dlopen on first use: their
# headers come from the default include path and nothing links them.
