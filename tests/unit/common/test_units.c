/* Sizes and durations (common/units.h): one table of texts, read three ways
 * that must agree: the parser itself, a spec (workers.memoryLimit,
 * workers.jobTimeout) and the command line (cuvil worker --memory-limit,
 * --timeout, through the real binary).  A refused text names the same
 * character every way. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/units.h"
#include "spec/spec.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

#define REFUSED INT64_C(-1)

/* want: the value, or REFUSED; at: for a refused text, the 1-based
 * character the error names. */
typedef struct units_case {
    const char *text;
    int64_t want;
    int at;
} units_case;

static const units_case sizes[] = {
    {"4096", 4096, 0},
    {"512B", 512, 0},
    {"20Gi", INT64_C(20) << 30, 0},
    {"20GiB", INT64_C(20) << 30, 0},
    {"10gib", INT64_C(10) << 30, 0},
    {"2GB", INT64_C(2000000000), 0},
    {"2gb", INT64_C(2000000000), 0},
    {"500M", INT64_C(500000000), 0},
    {"64k", 64000, 0},
    {"64K", 64000, 0},
    {"2Ki", 2048, 0},
    {"1.5Ki", 1536, 0},
    {"1.5G", INT64_C(1500000000), 0},
    {"0.3K", 300, 0},
    {"1.0000001Ki", 1024, 0},   /* rounded down to whole bytes */
    {"1T", INT64_C(1000000000000), 0},
    {"1Pi", INT64_C(1) << 50, 0},
    {"9223372036854775807", INT64_MAX, 0},
    {"8388607Ti", (INT64_C(8388607) << 40), 0},
    {"9223372036854775808", REFUSED, 1},   /* one past INT64_MAX */
    {"8388608Ti", REFUSED, 1},             /* 2^63 */
    {"99999999999P", REFUSED, 1},
    {"99999999999999999999999", REFUSED, 1},
    {"G", REFUSED, 1},
    {"-1", REFUSED, 1},
    {" 1G", REFUSED, 1},
    {"1.G", REFUSED, 3},
    {"12X", REFUSED, 3},
    {"1 Gi", REFUSED, 2},
    {"1e3", REFUSED, 2},
    {"20iB", REFUSED, 3},
    {"1KiBB", REFUSED, 2},
    {"8Ei", REFUSED, 2},
    {"1m5", REFUSED, 2},
    {"000000000000000000000000000000001", REFUSED, 33},   /* 33 characters */
};

static const units_case durations[] = {
    {"60s", 60000, 0},
    {"10m", 600000, 0},
    {"1500ms", 1500, 0},
    {"1h30m", 5400000, 0},
    {"1h30m15s250ms", 5415250, 0},
    {"1s1s", 2000, 0},
    {"0ms", 0, 0},
    {"168h", INT64_C(604800000), 0},
    {"1000000000000000ms", INT64_C(1000000000000000), 0},
    {"1000000000000001ms", REFUSED, 1},
    {"277777778h", REFUSED, 1},
    {"99999999999999999h", REFUSED, 1},
    {"1s99999999999999999ms", REFUSED, 3},
    {"60", REFUSED, 3},   /* no unit: seconds or milliseconds? */
    {"1h30", REFUSED, 5},
    {"s", REFUSED, 1},
    {"1d", REFUSED, 2},
    {"1.5h", REFUSED, 2},
    {"-1s", REFUSED, 1},
    {"1 s", REFUSED, 2},
    {"1S", REFUSED, 2},
    {"000000000000000000000000000000001s", REFUSED, 33},
};

#define N(a) (sizeof a / sizeof a[0])

/* Runs check on every row of both tables. */
static void each_case(void (*check)(bool size, const units_case *c))
{
    for (size_t i = 0; i < N(sizes); i++)
        check(true, &sizes[i]);
    for (size_t i = 0; i < N(durations); i++)
        check(false, &durations[i]);
}

static int parse(bool size, const char *s, int64_t *v, cv_units_error *e)
{
    if (!size)
        return cv_units_parse_duration(s, v, e);
    uint64_t b;
    int rc = cv_units_parse_size(s, &b, e);
    *v = rc ? 0 : (int64_t)b;
    return rc;
}

static void check_direct(bool size, const units_case *c)
{
    int64_t v = -7;
    cv_units_error e = {0};
    int rc = parse(size, c->text, &v, &e);
    if (c->want == REFUSED) {
        if (rc != -1 || e.at + 1 != c->at || !e.why)
            fail_msg("'%s': rc %d, at %d (want -1, at %d)", c->text, rc, e.at + 1, c->at);
    } else if (rc != 0 || v != c->want) {
        fail_msg("'%s': rc %d, %lld (want %lld)", c->text, rc, (long long)v, (long long)c->want);
    }
}

static void test_parser(void **state)
{
    (void)state;
    each_case(check_direct);
    int64_t ms;
    uint64_t b;
    assert_int_equal(cv_units_parse_size("", &b, NULL), -1);   /* e may be NULL */
    assert_int_equal(cv_units_parse_duration("", &ms, NULL), -1);
}

/* ---- through a spec */

#define JOB_TIMEOUT_MIN INT64_C(1000)
#define JOB_TIMEOUT_MAX (INT64_C(7) * 86400000)

static bool names_character(const char *msg, int at)
{
    char want[48];
    snprintf(want, sizeof want, "(at character %d)", at);
    return strstr(msg, want) != NULL;
}

static void check_spec(bool size, const units_case *c)
{
    char text[512];
    snprintf(text, sizeof text,
             "apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\nmetadata: {name: edge}\n"
             "spec:\n  source: {url: https://git.example.com/ml/models.git}\n  workers:\n"
             "    jobTimeout: \"%s\"\n    memoryLimit: \"%s\"\n",
             size ? "60s" : c->text, size ? c->text : "1Gi");
    cv_diag d;
    cv_diag_init(&d);
    cv_spec_set *s = cv_spec_set_new();
    assert_non_null(s);
    cv_spec_set_add(s, text, strlen(text), "units.yaml", false, &d);
    cv_spec_set_resolve(s, &d);
    const cv_spec_cluster *cl = cv_spec_set_cluster(s);
    const cv_diag_entry *e = d.n ? cv_diag_get(&d, 1) : NULL;
    int line = size ? 8 : 7;
    if (c->want == REFUSED) {
        int code = size ? CV_E_SPEC_BAD_SIZE : CV_E_SPEC_BAD_DURATION;
        if (!e || e->code != code || e->span.line != line || !names_character(e->msg, c->at))
            fail_msg("spec '%s': %s (want CV%d at line %d, character %d)", c->text,
                     e ? e->msg : "no error", code, line, c->at);
    } else if (!size && (c->want < JOB_TIMEOUT_MIN || c->want > JOB_TIMEOUT_MAX)) {
        if (!e || e->code != CV_E_SPEC_OUT_OF_RANGE)
            fail_msg("spec '%s': %s (want CV6023)", c->text, e ? e->msg : "no error");
    } else {
        if (e || !cl)
            fail_msg("spec '%s': %s", c->text, e ? e->msg : "no cluster");
        int64_t got = size ? (int64_t)cl->workers.memory_limit : cl->workers.job_timeout_ms;
        if (got != c->want)
            fail_msg("spec '%s': %lld (want %lld)", c->text, (long long)got, (long long)c->want);
    }
    cv_spec_set_free(s);
    cv_diag_free(&d);
}

static void test_spec(void **state)
{
    (void)state;
    each_case(check_spec);
}

/* ---- through the command line */

static char *tmp;

static void check_cli(bool size, const units_case *c)
{
    const char *bin = getenv("CUVIL_BIN") ? getenv("CUVIL_BIN") : "build/asan/cuvil";
    char *errpath = cv_tmpdir_path(tmp, "stderr");
    /* no --queue: a value that parses ends in "--queue is required" */
    const char *argv[] = {bin, "worker", size ? "--memory-limit" : "--timeout", c->text, NULL};
    int rc = cv_run_argv(argv, errpath, NULL);
    size_t len;
    char *err = cv_tmpdir_read_file(errpath, &len);
    assert_non_null(err);
    const char *code = size ? "[CV1013]" : "[CV1014]";
    if (rc != 2)
        fail_msg("cli '%s': exit %d\n%s", c->text, rc, err);
    if (c->want == REFUSED && (!strstr(err, code) || !names_character(err, c->at)))
        fail_msg("cli '%s': want %s at character %d\n%s", c->text, code, c->at, err);
    if (c->want != REFUSED && strstr(err, code))
        fail_msg("cli '%s' refused\n%s", c->text, err);
    free(err);
    free(errpath);
}

static void test_cli(void **state)
{
    (void)state;
    each_case(check_cli);
}

static int setup(void **state)
{
    (void)state;
    tmp = cv_tmpdir_make("units");
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cv_tmpdir_remove(tmp);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser),
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
