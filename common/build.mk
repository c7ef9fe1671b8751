# common/ needs SQLite for the embedded queue backend (queue_sqlite.c).
PKGS += sqlite3
