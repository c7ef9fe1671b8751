/* Kafka static group membership (queue/queue_kafka*.c): the URL's
 * static_membership parameter, group.instance.id owned by cuvil (a shared
 * URL would give every worker the same instance), and the instance id made
 * from a worker id.  No broker needed; the mock-cluster behaviour is
 * exercised by tests/chaos/farm_chaos.py --static. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "queue/queue_kafka_internal.h"

static int parse_code(const char *target, kq_url *u)
{
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_kq_url_parse(target, u, &d);
    int code = rc ? (d.n ? d.v[0].code : -1) : 0;
    cv_diag_free(&d);
    return code;
}

static void test_url_parameter(void **state)
{
    (void)state;
    kq_url u;
    assert_int_equal(parse_code("//b:9092?static_membership=true", &u), 0);
    assert_true(u.static_membership);
    cv_kq_url_free(&u);
    assert_int_equal(parse_code("//b:9092", &u), 0);
    assert_false(u.static_membership);
    cv_kq_url_free(&u);
    assert_int_equal(parse_code("//b:9092?static_membership=0", &u), 0);
    assert_false(u.static_membership);
    cv_kq_url_free(&u);
    assert_int_equal(parse_code("//b:9092?static_membership=maybe", &u), 9220);
    assert_int_equal(parse_code("//b:9092?group.instance.id=w0", &u), 9221);
}

static void test_instance_ids(void **state)
{
    (void)state;
    char a[KQ_INSTANCE_MAX + 1], b[KQ_INSTANCE_MAX + 1];
    cv_kq_instance_id("cuvil-workers-3", a);   /* a StatefulSet pod name: as it is */
    assert_string_equal(a, "cuvil-workers-3");
    cv_kq_instance_id("host:42", a);           /* ':' is not allowed by Kafka */
    cv_kq_instance_id("host_42", b);
    assert_non_null(strstr(a, "host_42-"));
    assert_string_not_equal(a, b);              /* never the same instance */
    char longid[300];
    memset(longid, 'w', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    cv_kq_instance_id(longid, a);
    assert_true(strlen(a) <= KQ_INSTANCE_MAX);
    longid[0] = 'x';
    cv_kq_instance_id(longid, b);
    assert_string_not_equal(a, b);
    for (const char *p = a; *p; p++)
        assert_non_null(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
                               *p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parameter),
        cmocka_unit_test(test_instance_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
