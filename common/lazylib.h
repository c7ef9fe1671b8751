/* Shared libraries loaded on first use rather than when cuvil starts.
 *
 * Each library linked into cuvil costs every process its load and
 * relocation time, whether or not the command uses it; a local cache hit
 * is only a few milliseconds of its own work, so libraries that only some
 * commands need (libcurl, libmicrohttpd, libgit2, librdkafka) are loaded
 * with dlopen by the code that needs them.  A table lists the functions
 * one caller uses, with the types the library's own header gives them
 * (__typeof__), so a call through the table is checked like a direct one. */
#ifndef CV_COMMON_LAZYLIB_H
#define CV_COMMON_LAZYLIB_H

#include <pthread.h>
#include <stdbool.h>

#include "common/diag.h"

typedef struct cv_lazylib {
    const char *soname;
    const char *const *names; /* symbol i fills slot i of the table */
    void **slots;
    int n;
    void (*after)(struct cv_lazylib *); /* optional set-up once loaded, may clear ok */
    pthread_once_t once;
    bool ok;
    char why[256];
} cv_lazylib;

/* A static table's loader: TABLE is a struct of function pointers, NAMES
 * the symbol of each field in order (checked: one name per field). */
#define CV_LAZYLIB(soname, table, names, after)                                            \
    {(soname), (names), (void **)&(table), (int)(sizeof(names) / sizeof((names)[0])),     \
     (after), PTHREAD_ONCE_INIT, false, ""}
#define CV_LAZYLIB_CHECK(table, names)                                                     \
    _Static_assert(sizeof(table) == sizeof(names) / sizeof((names)[0]) * sizeof(void *),  \
                   "one name per slot of " #table)

/* Loads the library once per process and never unloads it: ONCE_FN, run
 * through L's pthread_once, calls cv_lazylib_load(L).  False with error
 * 9004 in d when the library or one of its symbols is missing. */
bool cv_lazylib_get(cv_lazylib *l, void (*once_fn)(void), cv_diag *d);
void cv_lazylib_load(cv_lazylib *l);

#endif
