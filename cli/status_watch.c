/* cuvil status --watch: a revision's progress as it happens, one line each
 * time its counts change, until it is done; then its failures, as `cuvil
 * status` prints them.  It reads the build DB every interval, the same
 * figures the dashboard's pages refresh (a terminal and a CI log alike:
 * lines, no cursor movement).  Following "latest", it moves to a newer
 * revision when one is planned and says so. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "cli/cli.h"
#include "cli/farm_report.h"

static bool same_counts(const cv_rev_summary *a, const cv_rev_summary *b)
{
    return a->state == b->state && a->jobs == b->jobs && a->hits == b->hits && a->ok == b->ok &&
           a->failed == b->failed && a->pending == b->pending;
}

static void stamp(void)
{
    time_t t = (time_t)(cv_clock_wall_ms() / 1000);
    struct tm tm;
    char buf[16];
    localtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    printf("%s ", buf);
}

static void progress(const cv_rev_summary *s)
{
    stamp();
    printf("%s %s: %lld of %lld jobs done (%lld from the cache, %lld compiled, %lld failed)\n",
           s->revision, cv_rev_state_name(s->state), (long long)(s->jobs - s->pending),
           (long long)s->jobs, (long long)s->hits, (long long)s->ok, (long long)s->failed);
    fflush(stdout);
}

static bool finished(const cv_rev_summary *s)
{
    return s->state == CV_REV_SUCCEEDED || s->state == CV_REV_FAILED;
}

/* 1: *s is the revision to show; 0: none planned yet; -1: error. */
static int current(cv_builddb *db, const char *revision, cv_rev_summary *s, cv_diag *d)
{
    char name[CV_REVISION_MAX + 1];
    int found = cv_builddb_revision_resolve(db, revision ? revision : "latest", name, d);
    if (found == 1 && cv_builddb_revision_summary(db, name, s, d) != 1)
        found = -1;
    if (found == 0 && revision) {
        cv_diag_error(d, CV_E_BUILDDB_UNKNOWN_REVISION, (cv_span){0}, "no revision '%s'",
                      revision);
        found = -1;
    }
    return found;
}

int cv_cli_status_watch(cv_builddb *db, const char *revision, int64_t interval_ms, cv_diag *d)
{
    cv_rev_summary last = {0}, s;
    bool waiting_said = false;
    for (;;) {
        int found = current(db, revision, &s, d);
        if (found < 0)
            return CV_EXIT_INPUT;
        if (found == 0 && !waiting_said) {
            stamp();
            printf("no revision planned yet; waiting\n");
            fflush(stdout);
            waiting_said = true;
        }
        if (found == 1 && last.id && s.id != last.id) {
            stamp();
            printf("a newer revision: %s\n", s.revision);
        }
        if (found == 1 && (s.id != last.id || !same_counts(&s, &last)))
            progress(&s);
        if (found == 1 && finished(&s)) {
            if (s.failed) {
                printf("failed jobs:\n");
                cv_cli_print_failures(stdout, db, s.id, 50, d);
            }
            fflush(stdout);
            return s.state == CV_REV_SUCCEEDED ? CV_EXIT_OK : CV_EXIT_INPUT;
        }
        if (found == 1)
            last = s;
        struct timespec ts = {(time_t)(interval_ms / 1000), (long)(interval_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}
