/* Printing a farm's revisions (cli/farm_report.c), shared by farm,
 * controller, submit and status. */
#ifndef CV_CLI_FARM_REPORT_H
#define CV_CLI_FARM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "controller/farm.h"
#include "controller/status.h"

typedef struct cv_cli_progress_state {
    FILE *out;
    bool tty;            /* a bar redrawn in place; else a plain line every 2 s */
    double last_plain;
    char revision[CV_REVISION_MAX + 1];   /* the revision base_* refer to */
    int64_t base_done;
    double base_s;
} cv_cli_progress_state;

/* A cv_farm_opts.progress callback; ctx is a cv_cli_progress_state. */
void cv_cli_progress(void *ctx, const cv_farm_progress *p);
void cv_cli_print_summary(FILE *out, const cv_farm_summary *s);
/* The jobs of a revision that failed, with the first root error of each
 * (at most max jobs). */
int cv_cli_print_failures(FILE *out, cv_builddb *db, int64_t rev_id, int max, cv_diag *d);
/* cuvil status --watch (cli/status_watch.c): prints the revision's progress
 * whenever it changes until it is done; CV_EXIT_OK when it succeeded,
 * CV_EXIT_INPUT when it failed (or is unknown).  revision NULL: the latest. */
int cv_cli_status_watch(cv_builddb *db, const char *revision, int64_t interval_ms, cv_diag *d);

#endif
