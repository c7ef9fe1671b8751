/* Loading shared libraries on first use (see lazylib.h). */
#include "common/lazylib.h"

#include <dlfcn.h>
#include <stdio.h>

void cv_lazylib_load(cv_lazylib *l)
{
    void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(l->why, sizeof l->why, "%s", dlerror());
        return;
    }
    for (int i = 0; i < l->n; i++) {
        /* POSIX's idiom for a function pointer from dlsym; the table is
         * read as an array of them (same size: CV_LAZYLIB_CHECK). */
        l->slots[i] = dlsym(h, l->names[i]);
        if (!l->slots[i]) {
            snprintf(l->why, sizeof l->why, "%s lacks %s", l->soname, l->names[i]);
            return; /* stays loaded: other tables may share it */
        }
    }
    l->ok = true;
    if (l->after)
        l->after(l);
}

bool cv_lazylib_get(cv_lazylib *l, void (*once_fn)(void), cv_diag *d)
{
    pthread_once(&l->once, once_fn);
    if (!l->ok)
        cv_diag_error(d, CV_E_IO_ERROR, (cv_span){0}, "cannot load %s: %s", l->soname,
                      l->why);
    return l->ok;
}
