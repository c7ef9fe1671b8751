# common/: tokens.c uses OpenSSL (OPENSSL_cleanse, base64).
# common/sqldb.c: the one SQLite helper (build DB, queue, cache index).
PKGS += sqlite3
PKGS += openssl
# netlib.c loads libcurl and libmicrohttpd with dlopen on first use: their
# headers come from the default include path and nothing links them.
