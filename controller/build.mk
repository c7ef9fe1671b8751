# controller/: git source (libgit2), build DB (SQLite), specs, planner.
# http/: webhook signatures (OpenSSL HMAC); libmicrohttpd is loaded with
# dlopen by common/netlib.c, as for `cuvil cache serve`.
PKGS += libgit2 sqlite3 openssl
