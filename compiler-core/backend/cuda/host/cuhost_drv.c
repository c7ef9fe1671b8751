/* Loading the NVIDIA driver (libcuda.so.1) and recording failures as
 * coded messages for cv_<name>_last_error. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/cuda/host/cuhost_internal.h"

static _Thread_local char last_msg[1024];
static _Thread_local int last_code;

int cvcu_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    last_code = code;
    return code == CVCU_E_DEVICE_OOM ? -2 : -3;
}

int cvcu_last_error(const char **msg)
{
    *msg = last_code ? last_msg : "";
    return last_code;
}

void cvcu_error_restore(int code, const char *msg)
{
    snprintf(last_msg, sizeof last_msg, "%s", code ? msg : "");
    last_code = code;
}

int cvcu_check(const cvcu_driver *drv, CUresult r, const char *what)
{
    if (r == 0)
        return 0;
    const char *name = NULL;
    if (!drv->GetErrorName || drv->GetErrorName(r, &name) != 0 || !name)
        name = "unknown error";
    cvcu_fail(r == CU_ERROR_OUT_OF_MEMORY ? CVCU_E_DEVICE_OOM : CVCU_E_DRIVER,
              "%s failed: %s (CUresult %d)", what, name, r);
    return -1;
}

static cvcu_driver driver;
static const cvcu_driver *loaded;
static char load_msg[512];
static int load_code;
static pthread_once_t once = PTHREAD_ONCE_INIT;

typedef struct sym_entry {
    const char *name;
    size_t off;     /* of its field in cvcu_driver */
} sym_entry;

#define SYM(field, name) {name, offsetof(cvcu_driver, field)}
static const sym_entry symbols[] = {
    SYM(Init, "cuInit"), SYM(DeviceGetCount, "cuDeviceGetCount"),
    SYM(DeviceGet, "cuDeviceGet"), SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(CtxPushCurrent, "cuCtxPushCurrent_v2"), SYM(CtxPopCurrent, "cuCtxPopCurrent_v2"),
    SYM(ModuleLoadDataEx, "cuModuleLoadDataEx"), SYM(ModuleUnload, "cuModuleUnload"),
    SYM(ModuleGetFunction, "cuModuleGetFunction"), SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"), SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"), SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    SYM(StreamCreate, "cuStreamCreate"), SYM(StreamDestroy, "cuStreamDestroy_v2"),
    SYM(StreamSynchronize, "cuStreamSynchronize"), SYM(LaunchKernel, "cuLaunchKernel"),
    SYM(GetErrorName, "cuGetErrorName"),
};

/* Graph replay's entry points (CUDA 11.4+): without any of them, graphs
 * are off and everything else works. */
static const sym_entry optional[] = {
    SYM(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    SYM(StreamEndCapture, "cuStreamEndCapture"), SYM(StreamIsCapturing, "cuStreamIsCapturing"),
    SYM(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
    SYM(GraphLaunch, "cuGraphLaunch"), SYM(GraphExecDestroy, "cuGraphExecDestroy"),
    SYM(GraphDestroy, "cuGraphDestroy"),
};

/* Binds table t's entry points from dl into the driver; the name of the
 * first one dl lacks (the table's fields then all NULL), or NULL. */
static const char *bind(void *dl, const sym_entry *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *fn = dlsym(dl, t[i].name);
        if (!fn) {
            for (size_t k = 0; k < i; k++)
                memset((char *)&driver + t[k].off, 0, sizeof fn);
            return t[i].name;
        }
        memcpy((char *)&driver + t[i].off, &fn, sizeof fn);
    }
    return NULL;
}

static void load(void)
{
    /* CUVIL_CUDA_DRIVER names another library (tests use a missing one). */
    const char *path = getenv("CUVIL_CUDA_DRIVER");
    if (!path || !*path)
        path = "libcuda.so.1";
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        load_code = CVCU_E_NO_DRIVER;
        snprintf(load_msg, sizeof load_msg, "no NVIDIA driver on this machine: %s",
                 e ? e : path);
        return;
    }
    const char *lacks = bind(dl, symbols, sizeof symbols / sizeof symbols[0]);
    if (lacks) {
        load_code = CVCU_E_NO_DRIVER;
        snprintf(load_msg, sizeof load_msg, "%s lacks %s (driver too old)", path, lacks);
        dlclose(dl);
        return;
    }
    bind(dl, optional, sizeof optional / sizeof optional[0]);
    driver.dl = dl;
    CUresult r = driver.Init(0);
    if (r != 0) {
        const char *name = NULL;
        if (driver.GetErrorName(r, &name) != 0 || !name)
            name = "unknown error";
        load_code = CVCU_E_NO_DEVICE;
        snprintf(load_msg, sizeof load_msg, "cuInit failed: %s (CUresult %d)", name, r);
        return;
    }
    loaded = &driver;
}

const cvcu_driver *cvcu_driver_get(void)
{
    pthread_once(&once, load);
    if (!loaded)
        cvcu_fail(load_code, "%s", load_msg);
    return loaded;
}
