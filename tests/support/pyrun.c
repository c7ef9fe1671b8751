#include "tests/support/pyrun.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct io {
    int in_fd, out_fd;          /* parent ends; -1 once closed */
    const char *in;
    size_t in_len, in_done;
    char *out;                  /* owned until handed out */
    size_t out_len, out_cap;
} io;

/* argv = python3 -c CODE ARGS... NULL; malloc'd array of borrowed strings. */
static char **make_argv(const char *code, const char *const *args)
{
    size_t n = 0;
    while (args && args[n])
        n++;
    char **argv = calloc(n + 4, sizeof *argv);
    if (!argv)
        return NULL;
    argv[0] = (char *)CV_PYTHON;
    argv[1] = (char *)"-c";
    argv[2] = (char *)code;
    for (size_t i = 0; i < n; i++)
        argv[3 + i] = (char *)args[i];
    return argv;
}

static pid_t spawn(char **argv, int child_in, int child_out, const char *err_path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (child_in >= 0)
        posix_spawn_file_actions_adddup2(&fa, child_in, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, child_out, 1);
    if (err_path)
        posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? pid : -1;
}

static int read_some(io *s)
{
    if (s->out_cap - s->out_len < 4096) {
        size_t cap = s->out_cap ? s->out_cap * 2 : 8192;
        char *p = realloc(s->out, cap + 1);
        if (!p)
            return -1;
        s->out = p;
        s->out_cap = cap;
    }
    ssize_t r = read(s->out_fd, s->out + s->out_len, s->out_cap - s->out_len);
    if (r < 0 && errno == EINTR)
        return 0;
    if (r <= 0) {
        close(s->out_fd);
        s->out_fd = -1;
        return 0;
    }
    s->out_len += (size_t)r;
    return 0;
}

static void write_some(io *s)
{
    ssize_t w = write(s->in_fd, s->in + s->in_done, s->in_len - s->in_done);
    if (w > 0)
        s->in_done += (size_t)w;
    if ((w < 0 && errno != EINTR && errno != EAGAIN) || s->in_done == s->in_len) {
        close(s->in_fd);   /* EOF for python; also after EPIPE */
        s->in_fd = -1;
    }
}

/* Pumps stdin and stdout until python closes stdout; -1 on timeout. */
static int pump(io *s)
{
    time_t deadline = time(NULL) + CV_PYRUN_TIMEOUT_S;
    while (s->out_fd >= 0) {
        struct pollfd p[2] = {{s->out_fd, POLLIN, 0}, {s->in_fd, POLLOUT, 0}};
        int left = (int)(deadline - time(NULL));
        if (left <= 0)
            return -1;
        int n = poll(p, s->in_fd >= 0 ? 2 : 1, left * 1000);
        if (n < 0 && errno != EINTR)
            return -1;
        if (n > 0 && s->in_fd >= 0 && p[1].revents)
            write_some(s);
        if (n > 0 && p[0].revents && read_some(s))
            return -1;
    }
    return 0;
}

static int wait_status(pid_t pid, int killed)
{
    if (killed)
        kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

static void close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

static int run_argv(char **argv, const char *err_path, const void *in, size_t in_len,
                    char **out, size_t *out_len)
{
    int op[2] = {-1, -1}, ip[2] = {-1, -1};
    signal(SIGPIPE, SIG_IGN);   /* python may exit before reading all of stdin */
    if (!argv || pipe2(op, O_CLOEXEC) != 0 || (in && pipe2(ip, O_CLOEXEC) != 0)) {
        close_fd(op[0]);
        close_fd(op[1]);
        return -1;
    }
    if (in)   /* a blocking write could wait on python while python waits on us */
        fcntl(ip[1], F_SETFL, O_NONBLOCK);
    pid_t pid = spawn(argv, in ? ip[0] : -1, op[1], err_path);
    close(op[1]);
    close_fd(ip[0]);
    io s = {in ? ip[1] : -1, op[0], in, in_len, 0, NULL, 0, 0};
    int timed_out = pid > 0 ? pump(&s) : 0;
    close_fd(s.in_fd);
    close_fd(s.out_fd);
    int status = pid > 0 ? wait_status(pid, timed_out) : -1;
    if (s.out)
        s.out[s.out_len] = 0;
    if (out)
        *out = s.out ? s.out : calloc(1, 1);
    else
        free(s.out);
    if (out_len)
        *out_len = s.out_len;
    return status;
}

int cv_pyrun_io(const char *code, const char *const *args, const void *in, size_t in_len,
                char **out, size_t *out_len)
{
    char **argv = make_argv(code, args);
    int rc = run_argv(argv, NULL, in, in_len, out, out_len);
    free(argv);
    return rc;
}

int cv_run_argv(const char *const *argv, const char *err_path, char **out)
{
    return run_argv((char **)argv, err_path, NULL, 0, out, NULL);
}

int cv_pyrun(const char *code, const char *const *args, char **out)
{
    return cv_pyrun_io(code, args, NULL, 0, out, NULL);
}

bool cv_pyrun_has_module(const char *module)
{
    const char *args[] = {module, NULL};
    return cv_pyrun("import importlib, sys\n"
                    "try: importlib.import_module(sys.argv[1])\n"
                    "except ImportError: sys.exit(1)\n", args, NULL) == 0;
}
