/* Loading libcurl and libmicrohttpd on first use (see netlib.h). */
#include "common/netlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { CV_E_NETLIB_LOAD = 9004 };   /* io-error */

/* The sonames of the ABI the headers describe. */
#define CURL_SONAME "libcurl.so.4"
#define MHD_SONAME "libmicrohttpd.so.12"

typedef struct lib {
    const char *soname;
    const char *const *names; /* symbol i fills slot i of the table */
    void **slots;
    int n;
    pthread_once_t once;
    bool ok;
    char why[256];
} lib;

static void load(lib *l)
{
    void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(l->why, sizeof l->why, "%s", dlerror());
        return;
    }
    for (int i = 0; i < l->n; i++) {
        /* POSIX's idiom for a function pointer from dlsym; the table is
         * read as an array of them (same size: asserted below). */
        l->slots[i] = dlsym(h, l->names[i]);
        if (!l->slots[i]) {
            snprintf(l->why, sizeof l->why, "%s lacks %s", l->soname, l->names[i]);
            return; /* stays loaded: other tables may share it */
        }
    }
    l->ok = true;
}

static bool get(lib *l, void (*once_fn)(void), cv_diag *d)
{
    pthread_once(&l->once, once_fn);
    if (!l->ok)
        cv_diag_error(d, CV_E_NETLIB_LOAD, (cv_span){0}, "cannot load %s: %s", l->soname,
                      l->why);
    return l->ok;
}

/* ---------------------------------------------------------------- curl */

static cv_curl_fns curl_fns;
static const char *const curl_names[] = {
    "curl_global_init", "curl_easy_init", "curl_easy_setopt", "curl_easy_perform",
    "curl_easy_getinfo", "curl_easy_reset", "curl_easy_cleanup", "curl_easy_strerror",
    "curl_slist_append", "curl_slist_free_all",
};
_Static_assert(sizeof curl_fns == sizeof curl_names / sizeof curl_names[0] * sizeof(void *),
               "one name per slot of cv_curl_fns");
static lib curl_lib = {CURL_SONAME, curl_names, (void **)&curl_fns,
                       (int)(sizeof curl_names / sizeof curl_names[0]), PTHREAD_ONCE_INIT,
                       false, ""};

static void load_curl(void)
{
    load(&curl_lib);
    if (curl_lib.ok && curl_fns.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        curl_lib.ok = false;
        snprintf(curl_lib.why, sizeof curl_lib.why, "curl_global_init failed");
    }
}

const cv_curl_fns *cv_netlib_curl(cv_diag *d)
{
    return get(&curl_lib, load_curl, d) ? &curl_fns : NULL;
}

/* ----------------------------------------------------------------- MHD */

static cv_mhd_fns mhd_fns;
static const char *const mhd_names[] = {
    "MHD_start_daemon", "MHD_stop_daemon", "MHD_quiesce_daemon", "MHD_get_daemon_info",
    "MHD_is_feature_supported", "MHD_lookup_connection_value", "MHD_queue_response",
    "MHD_create_response_from_buffer", "MHD_create_response_from_callback",
    "MHD_create_response_from_fd_at_offset64", "MHD_add_response_header",
    "MHD_destroy_response",
};
_Static_assert(sizeof mhd_fns == sizeof mhd_names / sizeof mhd_names[0] * sizeof(void *),
               "one name per slot of cv_mhd_fns");
static lib mhd_lib = {MHD_SONAME, mhd_names, (void **)&mhd_fns,
                      (int)(sizeof mhd_names / sizeof mhd_names[0]), PTHREAD_ONCE_INIT,
                      false, ""};

static void load_mhd(void)
{
    load(&mhd_lib);
}

const cv_mhd_fns *cv_netlib_mhd(cv_diag *d)
{
    return get(&mhd_lib, load_mhd, d) ? &mhd_fns : NULL;
}
