/* Finds and loads the LLVM backend plugin on the first compile.  Search
 * order: $CUVIL_LLVM_PLUGIN; next to the image that holds compiler-core
 * (the cuvil executable, or the Python extension): <dir>/lib/cuvil/, as in
 * build/ and the Python package; then the installed layout
 * (<dir>/../lib/cuvil/, which also serves build/asan/tests/).
 *
 * The plugin resolves a few kernel and diagnostic functions against the
 * image that loads it: an executable exports them (-rdynamic); a shared
 * library loaded RTLD_LOCAL (Python's extensions) promotes itself to the
 * global scope first (promote_host). */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler-core/backend/cuda/cuda_backend.h"
#include "compiler-core/backend/llvm/llvm_backend.h"
#include "compiler-core/backend/targets.h"
#include "compiler-core/cuvil.h"
#include "cv_version.h"  /* generated: CV_LLVM_VERSION */

#define PLUGIN_NAME "libcv_llvm.so"

static const cv_llvm_plugin *plugin;
static const cv_cuda_plugin *cuda_plugin;   /* the same plugin's CUDA backend, if built in */
static char load_error[PATH_MAX + 256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static const cv_llvm_plugin *try_open(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "%s", dlerror());
        return NULL;
    }
    const cv_llvm_plugin *p = dlsym(h, CV_LLVM_PLUGIN_SYMBOL);
    if (!p || p->abi != CV_LLVM_PLUGIN_ABI) {
        snprintf(load_error, sizeof load_error, "%s is not a Cuvil %d LLVM plugin", path,
                 CV_LLVM_PLUGIN_ABI);
        dlclose(h);
        return NULL;
    }
    const cv_cuda_plugin *cu = dlsym(h, CV_CUDA_PLUGIN_SYMBOL);
    cuda_plugin = cu && cu->abi == CV_CUDA_PLUGIN_ABI ? cu : NULL;
    return p;  /* stays loaded for the life of the process */
}

/* The main program's link map has an empty name (its dladdr name is only
 * argv[0]); a shared library's is the path it was loaded from. */
int cv_self_image(char *buf, size_t size)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1((void *)cv_self_image, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
        lm->l_name && lm->l_name[0]) {
        char full[PATH_MAX];
        const char *name = realpath(lm->l_name, full) ? full : lm->l_name;
        int n = snprintf(buf, size, "%s", name);
        return n > 0 && (size_t)n < size ? 0 : -1;
    }
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    return 0;
}

int cv_backend_plugin_path(char *buf, size_t size)
{
    const char *env = getenv("CUVIL_LLVM_PLUGIN");
    if (env && *env) {
        int n = snprintf(buf, size, "%s", env);
        return n > 0 && (size_t)n < size ? 0 : -1;
    }
    char dir[PATH_MAX];
    if (cv_self_image(dir, sizeof dir))
        return -1;
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    static const char *const rel[] = {"/lib/cuvil/" PLUGIN_NAME, "/../lib/cuvil/" PLUGIN_NAME};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        int n = snprintf(buf, size, "%s%s", dir, rel[i]);
        if (n > 0 && (size_t)n < size && access(buf, R_OK) == 0)
            return 0;
    }
    snprintf(buf, size, "%s/lib/cuvil/%s", dir, PLUGIN_NAME);
    return -1;
}

/* Inside an executable the image is the program (already global); inside a
 * shared library, RTLD_NOLOAD | RTLD_GLOBAL re-opens the loaded copy and makes
 * its symbols visible to libraries loaded after it. */
static void promote_host(void)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)promote_host, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm ||
        !lm->l_name || !lm->l_name[0])
        return;  /* the main program: -rdynamic already exports it */
    void *self = dlopen(lm->l_name, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    (void)self;  /* the reference lives as long as the process: never closed */
}

static void load(void)
{
    char path[PATH_MAX + 64];
    if (cv_backend_plugin_path(path, sizeof path)) {
        if (!load_error[0])
            snprintf(load_error, sizeof load_error, "%s not found (looked for %s; set "
                     "CUVIL_LLVM_PLUGIN)", PLUGIN_NAME, path);
        return;
    }
    promote_host();
    plugin = try_open(path);
}

static const cv_llvm_plugin *get_plugin(cv_diag *d)
{
    pthread_once(&load_once, load);
    if (!plugin)
        cv_diag_error(d, CV_E_BACKEND_UNAVAILABLE, (cv_span){0}, "cannot load the LLVM backend: %s", load_error);
    return plugin;
}

int cv_llvm_compile(const cv_kprog *p, const char *target, int opt, bool want_ir,
                    cv_llvm_out *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    const cv_llvm_plugin *pl = get_plugin(d);
    if (pl && target && cv_target_is_cuda(target)) {
        if (!cuda_plugin)
            return cv_diag_fail(d, CV_E_BACKEND_UNAVAILABLE, (cv_span){0}, "the LLVM backend plugin has no CUDA "
                                "backend");
        return cuda_plugin->compile(p, target, opt, want_ir, out, d);
    }
    return pl ? pl->compile(p, target, opt, want_ir, out, d) : -1;
}

void cv_llvm_out_free(cv_llvm_out *o)
{
    /* Allocated by the plugin with the same malloc: freeing here is fine,
     * but go through the plugin so ownership stays in one place. */
    if (plugin)
        plugin->out_free(o);
    if (cuda_plugin)
        cuda_plugin->out_free(o);
}

const char *cv_llvm_version(void) { return CV_LLVM_VERSION; }

int cv_llvm_describe_native(char triple[64], char cpu[64], char **features, cv_diag *d)
{
    const cv_llvm_plugin *pl = get_plugin(d);
    return pl ? pl->describe_native(triple, cpu, features, d) : -1;
}

int cv_backend_preload(cv_diag *d)
{
    char triple[64], cpu[64], *features = NULL;
    int rc = cv_llvm_describe_native(triple, cpu, &features, d);
    free(features);
    return rc;
}
