# controller/: git source (libgit2), build DB (SQLite), specs, planner.
# http/: webhook signatures (OpenSSL HMAC); libmicrohttpd is loaded with
# dlopen by common/netlib.c, as for `cuvil cache serve`.
# libgit2 is loaded with dlopen on first use (gitlib.c); the tests that
# make git repositories link it themselves.
PKGS += sqlite3 openssl
TEST_PKGS += libgit2
