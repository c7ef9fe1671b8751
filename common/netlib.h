/* libcurl and libmicrohttpd (common/lazylib.h), loaded when a remote cache, the cache server,
 * the farm's HTTP API or an API client is first used rather than when
 * cuvil starts.  Both pull in GnuTLS
 * (through librtmp and libldap, and directly), whose load-time set-up cost
 * every `cuvil` process about 4 ms, over a whole local cache hit's own
 * work; most runs never touch the network.  The tables hold the library
 * functions cuvil calls, with the types the headers give them. */
#ifndef CV_COMMON_NETLIB_H
#define CV_COMMON_NETLIB_H

#include <curl/curl.h>
#include <microhttpd.h>

#include <stdbool.h>
#include <sys/socket.h>

#include "common/diag.h"

typedef struct cv_curl_fns {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
} cv_curl_fns;

typedef struct cv_mhd_fns {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_quiesce_daemon) *quiesce_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_is_feature_supported) *is_feature_supported;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_get_connection_values) *get_connection_values;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_create_response_from_callback) *create_response_from_callback;
    __typeof__(MHD_create_response_from_fd_at_offset64) *create_response_from_fd_at_offset64;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_destroy_response) *destroy_response;
} cv_mhd_fns;

/* The loaded library's table (loaded once per process, never unloaded),
 * or NULL with an error in d when it cannot be loaded. */
const cv_curl_fns *cv_netlib_curl(cv_diag *d);
const cv_mhd_fns *cv_netlib_mhd(cv_diag *d);

/* "host:port", "[v6]:port", ":port" (every address; port 0: any free
 * port) resolved for a listening socket: 0, or -1 with the reason in why
 * (listenaddr.c; shared by the cache server and the farm's HTTP server). */
int cv_net_listen_addr(const char *listen, struct sockaddr_storage *ss, bool *v6, char *why,
                       size_t why_len);

#endif
