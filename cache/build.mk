# cache/: digests, keys, local CAS + SQLite index, HTTP client and server.
# libcurl and libmicrohttpd are loaded with dlopen on first use (common/netlib.c):
# their headers come from the default include path, and the tests that drive
# the server with curl directly link libcurl themselves.
PKGS += openssl libxxhash libzstd sqlite3
TEST_PKGS += libcurl
