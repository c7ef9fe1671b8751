/* Shared objects: the artifact's objects (code, weights) linked with -lm and libc.
 *
 * The target's C compiler driver ("cc", "aarch64-linux-gnu-gcc") would
 * run collect2 and the linker with GCC's LTO plugin: three processes and
 * some 40 ms per link, a quarter of a small model's compile.  The same link
 * is done by running the binutils linker directly with what the driver
 * adds for a shared object that has no C++ and no constructors (build id,
 * eh_frame_hdr for unwinders, RELRO, libgcc for LLVM's helper calls); the
 * driver is still used where that linker or libgcc is not found.  Processes
 * are started with posix_spawnp and an argument vector (no shell). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler-core/backend/artifact_internal.h"

extern char **environ;

/* Reads what the child writes to the pipe (bounded) until it closes. */
static void drain(int fd, char *out, size_t size)
{
    size_t n = 0;
    char buf[512];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r && n + 1 < size; i++)
            out[n++] = buf[i];
    }
    if (size)
        out[n] = 0;
}

int cv_spawn_capture(char *const *argv, char *out, size_t out_size)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return -errno;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        return -rc;
    }
    drain(fds[0], out, out_size);
    close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* The GNU triple a driver name stands for: "cc" is this machine's
 * ("x86_64-linux-gnu"), "aarch64-linux-gnu-gcc" is "aarch64-linux-gnu";
 * false for any other name. */
static bool driver_triple(const char *driver, char *out, size_t cap, bool *cross)
{
    size_t n = strlen(driver);
    *cross = n > 4 && strcmp(driver + n - 4, "-gcc") == 0;
    if (*cross)
        return (size_t)snprintf(out, cap, "%.*s", (int)(n - 4), driver) < cap;
    struct utsname u;
    return strcmp(driver, "cc") == 0 && uname(&u) == 0 &&
           (size_t)snprintf(out, cap, "%s-linux-gnu", u.machine) < cap;
}

/* GCC's libgcc.a for triple, from the newest version directory that has
 * one (/usr/lib/gcc/<triple>/<v>/ native, /usr/lib/gcc-cross/ cross). */
static bool find_libgcc(const char *triple, bool cross, char *out, size_t cap)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "/usr/lib/%s/%s", cross ? "gcc-cross" : "gcc", triple);
    DIR *dh = opendir(dir);
    if (!dh)
        return false;
    long best = -1;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        char path[PATH_MAX];
        if (end == e->d_name || v <= best ||
            (size_t)snprintf(path, sizeof path, "%s/%s/libgcc.a", dir, e->d_name) >= sizeof path ||
            access(path, R_OK) != 0 || strlen(path) >= cap)
            continue;
        best = v;
        memcpy(out, path, strlen(path) + 1);
    }
    closedir(dh);
    return best >= 0;
}

/* argv with objs[0..n) spliced in at the slot holding OBJS. */
static void splice_objs(char **argv, int at, const char *const *objs, int n, char **out)
{
    int k = 0;
    for (int i = 0; argv[i]; i++) {
        if (i == at)
            for (int j = 0; j < n; j++)
                out[k++] = (char *)objs[j];
        else
            out[k++] = argv[i];
    }
    out[k] = NULL;
}

/* 0 linked; -ENOENT when the direct way is not available here (then the
 * driver links); else the linker's exit status, its output in out. */
static int link_direct(const char *driver, const char *const *objs, int n, const char *so,
                       const char *soname, const char *build_id, char *out, size_t cap)
{
    char triple[64], ld[80], libgcc[PATH_MAX];
    bool cross;
    if (!driver_triple(driver, triple, sizeof triple, &cross) ||
        !find_libgcc(triple, cross, libgcc, sizeof libgcc))
        return -ENOENT;
    char *argv[] = {ld, "-shared", "-o", (char *)so, "OBJS", "-soname", (char *)soname,
                    (char *)build_id, "--eh-frame-hdr", "-z", "relro", "-z", "noexecstack",
                    "--hash-style=gnu", "-lm", "-lc", libgcc, NULL};
    char *args[sizeof argv / sizeof argv[0] + 4];
    splice_objs(argv, 4, objs, n, args);
    /* gold links a small artifact in ~60% of the CPU time of ld.bfd (most
     * of a link is the linker starting up); binutils without gold (riscv64,
     * newer Debian without binutils-gold) falls back to bfd. */
    static const char *const flavours[] = {".gold", ""};
    int rc = -ENOENT;
    for (size_t i = 0; i < 2 && rc == -ENOENT; i++) {
        if (cross)
            snprintf(ld, sizeof ld, "%s-ld%s", triple, flavours[i]);
        else
            snprintf(ld, sizeof ld, "ld%s", flavours[i]);
        rc = cv_spawn_capture(args, out, cap);
    }
    return rc;
}

int cv_link_shared(const char *linker, const char *const *objs, int n, const char *so,
                   const char *soname, const char *build_id, cv_diag *d, bool *missing)
{
    char out[4096], idopt[80], wlidopt[90];
    if (build_id && strlen(build_id) > 40)
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){.file = so}, "bad build id");
    snprintf(idopt, sizeof idopt, build_id ? "--build-id=0x%s" : "--build-id", build_id ? build_id : "");
    snprintf(wlidopt, sizeof wlidopt, "-Wl,%s", idopt);
    if (n < 1 || n > 4)
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){.file = so}, "cannot link %d objects", n);
    int rc = link_direct(linker, objs, n, so, soname, idopt, out, sizeof out);
    if (rc == -ENOENT) {
        char sonameopt[300];
        snprintf(sonameopt, sizeof sonameopt, "-Wl,-soname,%s", soname);
        char *argv[] = {(char *)linker, "-shared", "-o", (char *)so, "OBJS", sonameopt,
                        wlidopt, "-Wl,-z,noexecstack", "-Wl,--hash-style=gnu", "-lm", "-lpthread", NULL};
        char *args[sizeof argv / sizeof argv[0] + 4];
        splice_objs(argv, 4, objs, n, args);
        rc = cv_spawn_capture(args, out, sizeof out);
    }
    *missing = rc == -ENOENT;
    if (rc == 0)
        return 0;
    if (*missing)
        return -1;
    if (rc < 0)
        return cv_diag_fail(d, CV_E_LINK_FAILED, (cv_span){.file = so}, "cannot start %s: %s", linker,
                            strerror(-rc));
    return cv_diag_fail(d, CV_E_LINK_FAILED, (cv_span){.file = so}, "%s -shared failed (exit %d): %s",
                        linker, rc, out);
}
