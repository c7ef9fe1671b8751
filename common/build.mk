# common/ needs SQLite (queue_sqlite.c) and librdkafka (queue_kafka*.c) for the queue backends.
PKGS += sqlite3 rdkafka openssl   # tokens.c: OPENSSL_cleanse, base64
# netlib.c loads libcurl and libmicrohttpd with dlopen on first use: their
# headers come from the default include path and nothing links them.
