/* Test helper: runs Debian's /usr/bin/python3 -c CODE [ARGS...] without a
 * shell (posix_spawn), capturing its standard output.  Its standard error
 * goes to the test's, so a failing script explains itself in the test log. */
#ifndef CV_TEST_PYRUN_H
#define CV_TEST_PYRUN_H

#include <stdbool.h>
#include <stddef.h>

#define CV_PYTHON "/usr/bin/python3"
#define CV_PYRUN_TIMEOUT_S 120

/* args is NULL-terminated (or NULL); inside the script they are
 * sys.argv[1:].  Returns the exit status (0..255), 128 + signal number if
 * python died of a signal (SIGKILL after CV_PYRUN_TIMEOUT_S), or -1 if it
 * could not be started.  If out is not NULL it receives stdout, malloc'd and
 * NUL-terminated (owned by the caller). */
int cv_pyrun(const char *code, const char *const *args, char **out);
/* Same, feeding in[0..in_len) to python's stdin and giving stdout's length. */
int cv_pyrun_io(const char *code, const char *const *args, const void *in, size_t in_len,
                char **out, size_t *out_len);
/* Runs any program (argv[0] is its path; argv NULL-terminated) the same way:
 * stdout captured into *out, stderr written to err_path (or inherited when
 * NULL).  Returns the exit status as cv_pyrun does. */
int cv_run_argv(const char *const *argv, const char *err_path, char **out);

/* Whether `import module` works (e.g. "numpy"), so tests can skip cleanly. */
bool cv_pyrun_has_module(const char *module);

#endif
