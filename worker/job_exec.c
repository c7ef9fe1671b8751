/* One job in a fresh image of the worker program.  A worker with threads
 * (the Kafka client runs a dozen) cannot compile in a bare fork: the child
 * inherits only the forking thread, and a lock that another thread held at
 * that instant (the allocator's, seen with the sanitizers' allocator in the
 * farm's Kafka test) is never released there.  So the child executes the
 * worker again with its own arguments plus `--job-child DIR`; the job
 * travels in DIR, and the options are the worker's by construction.  The
 * syncer's process is started the same way (`--sync-child LIST`). */
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "worker/internal.h"

#define JOB_FILE ".cuvil-job"

int cv_wk_job_exec_argv(const cv_worker_opts *o, const cv_lease *l, const char *dir,
                        char ***argv, cv_diag *d)
{
    *argv = NULL;
    char *path = cv_fs_join(dir, JOB_FILE);
    int rc = path ? cv_fs_write_plain(path, l->msg, l->msg_len, d)
                  : cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    free(path);
    if (rc)
        return -1;
    *argv = cv_wk_self_argv(o->self_argv, "--job-child", dir);
    return *argv ? 0 : cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
}

char **cv_wk_self_argv(char *const *self_argv, const char *flag, const char *value)
{
    size_t n = 0;
    while (self_argv[n])
        n++;
    char **v = malloc((n + 3) * sizeof *v);
    if (!v)
        return NULL;
    memcpy(v, self_argv, n * sizeof *v);
    v[n] = (char *)flag;
    v[n + 1] = (char *)value;
    v[n + 2] = NULL;
    return v;
}

int cv_worker_job_child(const cv_worker_opts *o, const char *dir)
{
    cv_wk_limit_address_space(o->memory_limit);
    cv_diag d;
    cv_diag_init(&d);
    char *path = cv_fs_join(dir, JOB_FILE), *buf = NULL;
    size_t len = 0;
    cv_lease l;
    memset(&l, 0, sizeof l);
    int rc = path ? cv_fs_read_file(path, CV_MSG_MAX_BYTES, &buf, &len, &d) : -1;
    if (rc == 0)
        rc = cv_job_msg_decode(buf, len, path, &l.job, &d);
    free(buf);
    free(path);
    if (rc != 0) {   /* the parent reports a child that ends without a result */
        cv_diag_print(&d, stderr, false);
        cv_diag_free(&d);
        return 3;
    }
    cv_diag_free(&d);
    l.attempt = l.job.attempt;
    cv_wk_job_ctx jc = {.o = o, .lease = &l, .out_dir = dir};
    rc = cv_wk_job_body(&jc, CV_WORKER_REPORT_FD);
    cv_job_msg_free(&l.job);
    return rc;
}
