# common/ needs SQLite (queue_sqlite.c) and librdkafka (queue_kafka*.c) for the queue backends.
PKGS += sqlite3 rdkafka
