/* Running one job's compile in a forked child: its own process group (so
 * a timeout also kills the linker it may have started), killed if the
 * worker dies (PR_SET_PDEATHSIG), address-space and CPU-time rlimits, no
 * core files, stderr captured (its tail explains a crash), a pipe for the
 * result, and the cgroup's OOM-kill count (tells the OOM killer's SIGKILL
 * from anyone else's).  The parent watches the wall clock and runs a tick (heartbeats,
 * stop requests) while it waits.  Whatever the child does, the parent gets
 * an outcome and goes on. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "worker/internal.h"

#define MAX_REPORT ((size_t)CV_MSG_MAX_BYTES)

/* ---------------------------------------------------------------- child */

/* The address space in use now, so the limit is what the job may add
 * (a sanitized build reserves terabytes of shadow memory up front). */
static uint64_t address_space_now(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

void cv_wk_limit_address_space(uint64_t added)
{
    if (added == 0)
        return;
    uint64_t now = address_space_now();
    rlim_t lim = now + added < now ? RLIM_INFINITY : (rlim_t)(now + added);
    struct rlimit as = {lim, lim};
    setrlimit(RLIMIT_AS, &as);
}

static void set_limits(const cv_sb_spec *s)
{
    struct rlimit core = {0, 0};
    setrlimit(RLIMIT_CORE, &core);
    if (s->cpu_limit_s > 0) {   /* CPU time already spent carries over an exec */
        struct rlimit cpu = {(rlim_t)s->cpu_limit_s, (rlim_t)s->cpu_limit_s + 2};
        setrlimit(RLIMIT_CPU, &cpu);
    }
    if (!s->exec_path)
        cv_wk_limit_address_space(s->memory_limit);
}

/* Moves fd to CV_WORKER_REPORT_FD without the close-on-exec flag. */
static int report_fd_for_exec(int fd)
{
    if (fd == CV_WORKER_REPORT_FD)
        return fcntl(fd, F_SETFD, 0);
    return dup2(fd, CV_WORKER_REPORT_FD) < 0 ? -1 : 0;
}

static void reset_signals(void)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
}

static void child(const cv_sb_spec *s, pid_t parent, int rep, int err)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)        /* the worker died before the line above */
        _exit(127);
    reset_signals();
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(err, 1) < 0 || dup2(err, 2) < 0)
        _exit(126);
    set_limits(s);
    if (s->exec_path) {
        if (report_fd_for_exec(rep) != 0)
            _exit(126);
        execv(s->exec_path, s->exec_argv);
        dprintf(2, "cannot run %s: %s\n", s->exec_path, strerror(errno));
        _exit(127);
    }
    int rc = s->body(s->body_ctx, rep);
    fflush(NULL);
    _exit(rc & 0xff);
}

/* --------------------------------------------------------------- parent */

/* The OOM kills counted so far in this process's memory cgroup, or -1
 * when there is none to read: evidence, besides the child's own
 * allocation errors, that a SIGKILL was the kernel's OOM killer (a
 * container's memory limit) and not someone's kill -9.  cgroup v2 counts
 * them in memory.events, v1 in memory.oom_control. */
static long long oom_kills_in(const char *dir, const char *rel, const char *file)
{
    char path[4400], line[256];
    long long n = -1;
    if (snprintf(path, sizeof path, "/sys/fs/cgroup%s%s/%s", dir, rel, file) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "oom_kill %lld", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

static long long cgroup_oom_kills(void)
{
    char line[4096];
    long long n = -1;
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && n < 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        const char *v1 = strstr(line, ":memory:");
        if (strncmp(line, "0::", 3) == 0) {
            n = oom_kills_in("", line + 3, "memory.events");
            if (n < 0)
                n = oom_kills_in("/unified", line + 3, "memory.events");
        } else if (v1) {
            n = oom_kills_in("/memory", v1 + 8, "memory.oom_control");
        }
    }
    if (f)
        fclose(f);
    return n;
}

/* The child's end is seen through a pidfd: its pipes close a moment
 * before it can be reaped, and a wait4 in that moment would otherwise
 * leave the worker asleep until the next tick (up to 100 ms a job, most
 * often when both cores are busy).  Without pidfds (Linux < 5.3) the
 * watch polls every millisecond once the pipes are closed. */
typedef struct watch {
    struct pollfd fd[3];        /* report, stderr (fd -1 after EOF), pidfd or -1 */
    char *report;
    size_t report_len, report_cap;
    bool report_overflow;
    char tail[2048];
    size_t tail_len;
} watch;

static void keep_tail(watch *w, const char *buf, size_t n)
{
    size_t cap = sizeof w->tail - 1;
    if (n >= cap) {
        memcpy(w->tail, buf + n - cap, cap);
        w->tail_len = cap;
    } else {
        size_t drop = w->tail_len + n > cap ? w->tail_len + n - cap : 0;
        memmove(w->tail, w->tail + drop, w->tail_len - drop);
        memcpy(w->tail + w->tail_len - drop, buf, n);
        w->tail_len += n - drop;
    }
    w->tail[w->tail_len] = 0;
}

static void keep_report(watch *w, const char *buf, size_t n)
{
    if (w->report_overflow || w->report_len + n > MAX_REPORT) {
        w->report_overflow = true;
        return;
    }
    if (w->report_len + n + 1 > w->report_cap) {
        size_t cap = w->report_cap ? w->report_cap * 2 : 4096;
        while (cap < w->report_len + n + 1)
            cap *= 2;
        char *p = realloc(w->report, cap);
        if (!p) {
            w->report_overflow = true;
            return;
        }
        w->report = p;
        w->report_cap = cap;
    }
    memcpy(w->report + w->report_len, buf, n);
    w->report_len += n;
    w->report[w->report_len] = 0;
}

/* Reads what is there without blocking; closes a pipe at EOF. */
static void drain(watch *w)
{
    char buf[65536];
    for (int i = 0; i < 2; i++) {
        while (w->fd[i].fd >= 0) {
            ssize_t n = read(w->fd[i].fd, buf, sizeof buf);
            if (n > 0) {
                (i == 0 ? keep_report : keep_tail)(w, buf, (size_t)n);
                continue;
            }
            if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(w->fd[i].fd);
                w->fd[i].fd = -1;
            }
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
    }
}

static void kill_group(pid_t pid)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

static int wait_child(const cv_sb_spec *s, pid_t pid, watch *w, cv_sb_outcome *out)
{
    int64_t start = cv_clock_mono_ms(), next_tick = start + s->tick_ms;
    int status = 0;
    struct rusage ru = {0};
    bool killed = false;
    for (;;) {
        int64_t now = cv_clock_mono_ms();
        if (!killed && s->timeout_ms > 0 && now - start >= s->timeout_ms) {
            kill_group(pid);
            killed = true;
            out->end = CV_SB_TIMEOUT;
        }
        if (!killed && s->tick && s->tick_ms > 0 && now >= next_tick) {
            next_tick = now + s->tick_ms;
            int why = s->tick(s->tick_ctx);
            if (why) {
                kill_group(pid);
                killed = true;
                out->end = CV_SB_STOPPED;
                out->stop_reason = why;
            }
        }
        int64_t wait = 100;
        if (!killed && s->timeout_ms > 0 && start + s->timeout_ms - now < wait)
            wait = start + s->timeout_ms - now;
        if (!killed && s->tick && s->tick_ms > 0 && next_tick - now < wait)
            wait = next_tick - now;
        if (w->fd[2].fd < 0 && w->fd[0].fd < 0 && w->fd[1].fd < 0 && wait > 1)
            wait = 1;
        if (poll(w->fd, 3, (int)(wait > 0 ? wait : 0)) < 0 && errno == EINTR && s->tick)
            next_tick = 0;  /* a signal: let the tick see it now */
        drain(w);
        pid_t got = wait4(pid, &status, WNOHANG, &ru);
        if (got == pid)
            break;
        if (got < 0 && errno != EINTR)
            return -1;
    }
    drain(w);
    out->wall_ms = (double)(cv_clock_mono_ms() - start);
    out->maxrss_kb = ru.ru_maxrss;
    if (!killed && WIFEXITED(status)) {
        out->end = CV_SB_EXITED;
        out->code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        out->code = WTERMSIG(status);
        if (!killed)
            out->end = out->code == SIGXCPU ? CV_SB_CPU : CV_SB_SIGNALED;
    }
    return 0;
}

int cv_wk_sandbox_run(const cv_sb_spec *s, cv_sb_outcome *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    int rep[2] = {-1, -1}, err[2] = {-1, -1};
    if (pipe2(rep, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++)
            if (rep[i] >= 0)
                close(rep[i]);
        return cv_diag_fail(d, CV_E_WORKER_SPAWN_FAILED, (cv_span){0}, "pipe: %s", strerror(e));
    }
    fflush(NULL);
    long long ooms_before = cgroup_oom_kills();
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        int e = errno;
        close(rep[0]), close(rep[1]), close(err[0]), close(err[1]);
        return cv_diag_fail(d, CV_E_WORKER_SPAWN_FAILED, (cv_span){0}, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(rep[0]);
        close(err[0]);
        child(s, parent, rep[1], err[1]);
    }
    setpgid(pid, pid);              /* also done by the child: no race either way */
    close(rep[1]);
    close(err[1]);
    fcntl(rep[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    watch w = {.fd = {{rep[0], POLLIN, 0}, {err[0], POLLIN, 0}, {pidfd_open(pid, 0), POLLIN, 0}}};
    int rc = wait_child(s, pid, &w, out);
    for (int i = 0; i < 3; i++)
        if (w.fd[i].fd >= 0)
            close(w.fd[i].fd);
    if (rc) {
        kill_group(pid);
        waitpid(pid, NULL, 0);
        free(w.report);
        return cv_diag_fail(d, CV_E_WORKER_SPAWN_FAILED, (cv_span){0}, "waiting for the compile: %s",
                            strerror(errno));
    }
    long long ooms_after = cgroup_oom_kills();
    out->cgroup_oom = ooms_before >= 0 && ooms_after > ooms_before;
    out->report = w.report_overflow ? NULL : w.report;
    out->report_len = w.report_overflow ? 0 : w.report_len;
    if (w.report_overflow)
        free(w.report);
    memcpy(out->err_tail, w.tail, w.tail_len + 1);
    return 0;
}

void cv_wk_sandbox_outcome_free(cv_sb_outcome *o)
{
    free(o->report);
    o->report = NULL;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

int cv_wk_remove_tree(const char *dir)
{
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}
