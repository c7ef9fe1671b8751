/* A finished job's cache files, synced in the background while the worker
 * leases and starts the next job.  The compile child stores its artifact
 * without waiting for the disk (cv_cache_batch_end_unsynced) and leaves
 * the files' paths in its scratch directory; the worker has them synced
 * and reports the job only then, so a reported artifact survives a power
 * cut as before, and the disk's latency overlaps the next compile instead
 * of adding to every job. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdio.h>

#include "common/fs.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "worker/internal.h"

enum { LIST_MAX = 1 << 20 };

/* The syncing runs in a child process, not a thread: the worker forks
 * its next compile meanwhile, and a fork while another thread holds a
 * lock (the allocator's, SQLite's) would hand the child that lock held
 * forever.  For the same reason a worker that has threads of its own (the
 * Kafka client's) starts the syncer as a fresh image of itself: the sync
 * allocates and starts threads.  The child logs what failed and exits
 * with 1. */
static int sync_now(char *const *paths, int n)
{
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_sync_files(paths, n, &d);
    if (rc != 0)
        cv_log_error("%s", d.n ? d.v[0].msg : "cannot sync");
    cv_diag_free(&d);
    return rc ? 1 : 0;
}

static pid_t spawn_syncer(const cv_wk_sync *s, char *const *self_argv)
{
    char **argv = s->list ? cv_wk_self_argv(self_argv, "--sync-child", s->list) : NULL;
    if (s->list && !argv)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (argv) {
            execv(argv[0], argv);
            _exit(127);
        }
        _exit(sync_now(s->paths, s->n));
    }
    free(argv);
    return pid;
}

static void note_status(cv_wk_sync *s, bool ok)
{
    s->running = false;
    if (!ok)
        snprintf(s->error, sizeof s->error, "cannot sync %d cache files to the disk (the "
                 "worker's log says why)", s->n);
}

static bool exited_ok(int status)
{
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The list's lines as a malloc'd array of malloc'd strings. */
static int parse_list(char *text, char ***out, int *n)
{
    int cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    char **v = calloc((size_t)cap, sizeof *v);
    if (!v)
        return -1;
    int k = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (*line && !(v[k++] = strdup(line))) {
            cv_cache_paths_free(v, k);
            return -1;
        }
    *out = v;
    *n = k;
    return 0;
}

/* Reads the list at path into s; -1 when there is none or it cannot be
 * read (s->error says so when it is there but unreadable). */
static int read_list(cv_wk_sync *s, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    cv_diag d;
    cv_diag_init(&d);
    int rc = access(path, F_OK) == 0 ? cv_fs_read_file(path, LIST_MAX, &text, &len, &d) : -1;
    if (rc != 0 && d.n) /* a list there but unreadable: its files cannot be vouched for */
        snprintf(s->error, sizeof s->error, "%s", d.v[0].msg);
    cv_diag_free(&d);
    if (rc != 0)
        return -1;
    rc = parse_list(text, &s->paths, &s->n);
    free(text);
    if (rc != 0)
        snprintf(s->error, sizeof s->error, "out of memory reading the files to sync");
    return rc;
}

/* The list moves beside dir ("<dir>.unsynced"), out of the way of dir's
 * removal, for a --sync-child to read. */
static char *move_list(const char *path, const char *dir)
{
    size_t n = strlen(dir) + sizeof ".unsynced";
    char *to = malloc(n);
    if (to)
        snprintf(to, n, "%s.unsynced", dir);
    if (to && rename(path, to) != 0) {
        free(to);
        return NULL;
    }
    return to;
}

int cv_wk_sync_start(cv_wk_sync *s, const char *dir, char *const *self_argv)
{
    memset(s, 0, sizeof *s);
    char *path = cv_fs_join(dir, CV_WK_UNSYNCED);
    int rc = path ? read_list(s, path) : -1;
    if (rc == 0 && s->n && self_argv)
        s->list = move_list(path, dir);
    free(path);
    if (rc != 0 || !s->n)
        return 0; /* no list: the child synced what it stored (or stored nothing) */
    if ((!self_argv || s->list) && (s->pid = spawn_syncer(s, self_argv)) > 0) {
        s->running = true;
        return 1;
    }
    note_status(s, sync_now(s->paths, s->n) == 0); /* no process: here and now */
    return 0;
}

int cv_worker_sync_child(const char *list)
{
    cv_wk_sync s;
    memset(&s, 0, sizeof s);
    int rc = read_list(&s, list) == 0 ? sync_now(s.paths, s.n) : 1;
    if (rc && s.error[0])
        cv_log_error("%s", s.error);
    cv_cache_paths_free(s.paths, s.n);
    return rc;
}

bool cv_wk_sync_done(cv_wk_sync *s)
{
    int status;
    if (s->running && waitpid(s->pid, &status, WNOHANG) == s->pid)
        note_status(s, exited_ok(status));
    return !s->running;
}

int cv_wk_sync_finish(cv_wk_sync *s)
{
    int status;
    pid_t got = -1;
    while (s->running && (got = waitpid(s->pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (s->running)
        note_status(s, got == s->pid && exited_ok(status));
    if (s->list)
        unlink(s->list);
    free(s->list);
    s->list = NULL;
    cv_cache_paths_free(s->paths, s->n);
    s->paths = NULL;
    s->n = 0;
    return s->error[0] ? -1 : 0;
}

int cv_wk_sync_hand_over(cv_cache *c, const char *dir)
{
    char **paths = NULL;
    int n = 0;
    cv_diag d;
    cv_diag_init(&d);
    /* Out of memory there, everything is synced already: nothing to hand over. */
    cv_cache_batch_end_unsynced(c, &paths, &n, &d);
    cv_sb sb = CV_SB_INIT;
    for (int i = 0; i < n; i++)
        cv_sb_printf(&sb, "%s\n", paths[i]);
    char *list = n ? cv_fs_join(dir, CV_WK_UNSYNCED) : NULL;
    int rc = 0;
    if (n && (!list || sb.oom || cv_fs_write_plain(list, sb.buf, sb.len, &d) != 0))
        rc = cv_cache_sync_files(paths, n, &d); /* the worker cannot take them: now */
    free(list);
    cv_sb_free(&sb);
    cv_cache_paths_free(paths, n);
    cv_diag_free(&d);
    return rc;
}
