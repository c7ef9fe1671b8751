/* Static archives written directly (GNU ar format with a symbol index,
 * zero timestamps and ids, so two archives of the same object are equal),
 * and shared objects linked by the target's C compiler driver, started
 * with posix_spawnp and an argument vector (no shell). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/strbuf.h"
#include "compiler-core/backend/artifact_internal.h"

extern char **environ;

static void ar_header(cv_sb *sb, const char *name, size_t size)
{
    char h[128];
    snprintf(h, sizeof h, "%-16.16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644", size);
    cv_sb_add(sb, h, 60);
}

static void put_be32(cv_sb *sb, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    cv_sb_add(sb, b, 4);
}

int cv_archive_write(const char *path, const char *member, const void *obj, size_t len,
                     const char *const *syms, int n_syms, cv_diag *d)
{
    /* The symbol index comes first, so its size fixes the member's offset. */
    size_t names = 0;
    for (int i = 0; i < n_syms; i++)
        names += strlen(syms[i]) + 1;
    size_t index_size = 4 + 4 * (size_t)n_syms + names;
    index_size += index_size & 1;
    size_t mlen = strlen(member);
    bool long_name = mlen > 15;
    size_t table_size = long_name ? mlen + 2 : 0;   /* "name/\n" */
    table_size += table_size & 1;
    size_t member_off = 8 + 60 + index_size + (long_name ? 60 + table_size : 0);
    cv_sb sb = CV_SB_INIT;
    cv_sb_add(&sb, "!<arch>\n", 8);
    ar_header(&sb, "/", index_size);
    put_be32(&sb, (uint32_t)n_syms);
    for (int i = 0; i < n_syms; i++)
        put_be32(&sb, (uint32_t)member_off);
    for (int i = 0; i < n_syms; i++)
        cv_sb_add(&sb, syms[i], strlen(syms[i]) + 1);
    if ((4 + 4 * (size_t)n_syms + names) & 1)
        cv_sb_putc(&sb, 0);
    char field[32];
    if (long_name) {
        ar_header(&sb, "//", table_size);
        cv_sb_add(&sb, member, mlen);
        cv_sb_add(&sb, "/\n", 2);
        if ((mlen + 2) & 1)
            cv_sb_putc(&sb, '\n');
        snprintf(field, sizeof field, "/0");
    } else {
        snprintf(field, sizeof field, "%s/", member);
    }
    ar_header(&sb, field, len);
    cv_sb_add(&sb, obj, len);
    if (len & 1)
        cv_sb_putc(&sb, '\n');
    int rc = sb.oom ? cv_diag_error(d, 9002, (cv_span){.file = path}, "out of memory"), -1
                    : cv_fs_write_replace(path, sb.buf, sb.len, d);
    cv_sb_free(&sb);
    return rc;
}

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

int cv_link_shared(const char *linker, const char *obj, const char *so, const char *soname,
                   cv_diag *d, bool *missing)
{
    char sonameopt[300];
    snprintf(sonameopt, sizeof sonameopt, "-Wl,-soname,%s", soname);
    char *argv[] = {(char *)linker, "-shared", "-o", (char *)so, (char *)obj, sonameopt,
                    "-Wl,-z,noexecstack", "-Wl,--hash-style=gnu", "-lm", "-lpthread", NULL};
    char out[4096];
    int rc = cv_spawn_capture(argv, out, sizeof out);
    *missing = rc == -ENOENT;
    if (rc == 0)
        return 0;
    if (*missing)
        return -1;
    if (rc < 0)
        return cv_diag_error(d, 5021, (cv_span){.file = so}, "cannot start %s: %s", linker,
                             strerror(-rc)), -1;
    return cv_diag_error(d, 5021, (cv_span){.file = so}, "%s -shared failed (exit %d): %s",
                         linker, rc, out), -1;
}
