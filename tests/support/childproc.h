/* Test helper: child processes with a pipe on stdin (closing it asks the
 * child to stop) and a pipe on stdout read line by line. */
#ifndef CV_TEST_CHILDPROC_H
#define CV_TEST_CHILDPROC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct cv_child {
    pid_t pid;
    int in;           /* write end of its stdin */
    int out;          /* read end of its stdout (non-blocking) */
    char buf[16384];  /* output not yet returned as lines */
    size_t len;
    char line[1024];  /* the last line returned */
} cv_child;

/* Starts argv[0] (a path) with argv; returns 0 or -1. */
int cv_child_spawn(cv_child *c, char *const argv[]);
/* The next complete line of its output, waiting up to ms; NULL if none
 * came in time.  Valid until the next call. */
const char *cv_child_line(cv_child *c, int ms);
/* Stops n children together: sends sig (0 = none), closes their stdin and
 * reaps them.  Returns 0 if each exited with status 0 (sig == 0) or was
 * killed by sig; statuses get the wait statuses (may be NULL). */
int cv_child_stop_all(cv_child *c, int n, int sig, int *statuses);

#endif
