/* Loading libcurl and libmicrohttpd on first use (see netlib.h). */
#include "common/netlib.h"

#include <stdio.h>

#include "common/lazylib.h"

/* The sonames of the ABI the headers describe. */
#define CURL_SONAME "libcurl.so.4"
#define MHD_SONAME "libmicrohttpd.so.12"

/* ---------------------------------------------------------------- curl */

static cv_curl_fns curl_fns;
static const char *const curl_names[] = {
    "curl_global_init", "curl_easy_init", "curl_easy_setopt", "curl_easy_perform",
    "curl_easy_getinfo", "curl_easy_reset", "curl_easy_cleanup", "curl_easy_strerror",
    "curl_slist_append", "curl_slist_free_all",
};
CV_LAZYLIB_CHECK(curl_fns, curl_names);

static void init_curl(cv_lazylib *l)
{
    if (curl_fns.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        l->ok = false;
        snprintf(l->why, sizeof l->why, "curl_global_init failed");
    }
}

static cv_lazylib curl_lib = CV_LAZYLIB(CURL_SONAME, curl_fns, curl_names, init_curl);
static void load_curl(void) { cv_lazylib_load(&curl_lib); }

const cv_curl_fns *cv_netlib_curl(cv_diag *d)
{
    return cv_lazylib_get(&curl_lib, load_curl, d) ? &curl_fns : NULL;
}

/* ----------------------------------------------------------------- MHD */

static cv_mhd_fns mhd_fns;
static const char *const mhd_names[] = {
    "MHD_start_daemon", "MHD_stop_daemon", "MHD_quiesce_daemon", "MHD_get_daemon_info",
    "MHD_is_feature_supported", "MHD_lookup_connection_value",
    "MHD_get_connection_values", "MHD_get_connection_info", "MHD_queue_response",
    "MHD_create_response_from_buffer", "MHD_create_response_from_callback",
    "MHD_create_response_from_fd_at_offset64", "MHD_add_response_header",
    "MHD_destroy_response",
};
CV_LAZYLIB_CHECK(mhd_fns, mhd_names);
static cv_lazylib mhd_lib = CV_LAZYLIB(MHD_SONAME, mhd_fns, mhd_names, NULL);
static void load_mhd(void) { cv_lazylib_load(&mhd_lib); }

const cv_mhd_fns *cv_netlib_mhd(cv_diag *d)
{
    return cv_lazylib_get(&mhd_lib, load_mhd, d) ? &mhd_fns : NULL;
}
