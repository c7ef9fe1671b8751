#include "tests/support/childproc.h"

#include <fcntl.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cv_child_spawn(cv_child *c, char *const argv[])
{
    int in[2], out[2];
    memset(c, 0, sizeof *c);
    if (pipe(in))
        return -1;
    if (pipe(out)) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    c->pid = fork();
    if (c->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        for (int fd = 3; fd < 256; fd++)
            close(fd);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->in = in[1];
    c->out = out[0];
    if (c->pid < 0) {
        close(c->in);
        close(c->out);
        return -1;
    }
    fcntl(c->out, F_SETFL, fcntl(c->out, F_GETFL) | O_NONBLOCK);
    return 0;
}

const char *cv_child_line(cv_child *c, int ms)
{
    long long end = mono_ms() + ms;
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            size_t n = (size_t)(nl - c->buf);
            snprintf(c->line, sizeof c->line, "%.*s", (int)n, c->buf);
            memmove(c->buf, nl + 1, c->len - n - 1);
            c->len -= n + 1;
            return c->line;
        }
        long long left = end - mono_ms();
        struct pollfd p = {.fd = c->out, .events = POLLIN};
        if (left <= 0 || c->len >= sizeof c->buf - 1 || poll(&p, 1, (int)left) <= 0)
            return NULL;
        ssize_t r = read(c->out, c->buf + c->len, sizeof c->buf - c->len - 1);
        if (r <= 0)
            return NULL;
        c->len += (size_t)r;
    }
}

int cv_child_stop_all(cv_child *c, int n, int sig, int *statuses)
{
    for (int i = 0; i < n; i++) {
        if (sig)
            kill(c[i].pid, sig);
        close(c[i].in);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        int st = 0;
        if (waitpid(c[i].pid, &st, 0) != c[i].pid)
            rc = -1;
        close(c[i].out);
        if (statuses)
            statuses[i] = st;
        bool ok = sig ? (WIFSIGNALED(st) && WTERMSIG(st) == sig) || (WIFEXITED(st) && !WEXITSTATUS(st))
                      : WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok)
            rc = -1;
    }
    return rc;
}
