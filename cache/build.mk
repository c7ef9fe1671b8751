# cache/: digests, keys, local CAS + SQLite index, HTTP client and server.
PKGS += openssl libxxhash libzstd sqlite3 libcurl libmicrohttpd
