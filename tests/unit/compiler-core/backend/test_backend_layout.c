/* Native code for shape and layout ops (views, strided copies, gathers,
 * padding), checked against the interpreter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/backend_testlib.h"

/* LeakSanitizer (GCC 12) crashes at exit in this binary, after every test
 * passed ("Tracer caught signal 11"), every run since the artifacts it
 * dlopens grew thread-local state: the same bogus dynamic-TLS range as in
 * test_cuda_util.h.  Leaks are still checked; TLS is only not scanned for
 * pointers, which could report a leak too many, never hide one. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "use_tls=0";
}

static const bk_case shapes[] = {
    BK("reshape", "shape=[4,-1]", "f32[2,3,4]"),
    BK("reshape", "shape=[0,-1]", "f32[N:2,3,4]"),
    BK("flatten", "axis=1", "f32[N:3,2,2]"),
    BK("squeeze", "axes=[1]", "i64[3,1,2]"),
    BK("unsqueeze", "axes=[0,3]", "u8[2,3]"),
    BK("expand", "shape=[2,3,4]", "f32[3,1]"),
    BK("expand", "shape=[3,1]", "bool[4]"),
    BK("shape", NULL, "f32[N:5,3,2]"),
    BK("shape", "start=1 end=-1", "f32[4,3,2,7]"),
    BK("transpose", NULL, "f32[2,3,4]"),
    BK("transpose", "perm=[0,2,3,1]", "f32[N:2,3,4,5]"),
    BK("transpose", "perm=[1,0]", "i8[5,7]"),
    BK("slice", "starts=[1] ends=[3]", "f32[4,5]"),
    BK("slice", "starts=[0,1] ends=[2,-1] axes=[0,2]", "f32[3,4,6]"),
    BK("slice", "starts=[-1] ends=[-100] steps=[-2] axes=[1]", "f32[2,7]"),
    BK("slice", "starts=[1,0] ends=[2,9223372036854775807] axes=[1,0]", "f32[N:3,4,2]"),
    BK("slice", "starts=[2] ends=[1000] axes=[0]", "i32[5,3]"),
    BKN("split", "axis=1 sizes=[1,2]", 2, 1, "f32[2,3,4]"),
    BKN("split", "axis=0 sizes=[2,3]", 2, 1, "f32[5,2]"),
    BKN("split", "axis=-1 sizes=[3,1]", 2, 0, "i64[2,4]"),
    BKN("split", "axis=1 sizes=[2,2,1]", 3, 1, "f32[3,5]"),
    BK("concat", "axis=1", "f32[2,3]", "f32[2,1]", "f32[2,4]"),
    BK("concat", "axis=0", "f32[N:2,3]", "f32[0,3]"),
    BK("concat", "axis=-1", "bool[2,2,1]", "bool[2,2,2]"),
    BK("gather", NULL, "f32[5,3]", "i64[4] =0,4,-1,2"),
    BK("gather", "axis=1", "f32[2,6,3]", "i32[2,2] =5,0,-6,3"),
    BK("gather", "axis=0", "i64[4]", "i64[] =3"),
    BK("pad", "pads=[1,2,0,1]", "f32[2,3]"),
    BK("pad", "pads=[0,1,2,0,1,0] value=-2.5", "f32[2,3,4]"),
    BK("pad", "pads=[2,3,2,3] mode=reflect", "f32[4,5]"),
    BK("pad", "pads=[1,2,3,1] mode=edge", "i32[3,2]"),
    BK("pad", "pads=[0,-1,0,2]", "f32[2,4]"),
    BK("constant", "value=[1.5,2,-3] shape=[3,1]"),
    BK("constant", "ints=[7,-8] dtype=i32"),
};

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

static void test_shapes(void **state)
{
    char msg[2048] = "";
    if (bk_check("layout", shapes, N_OF(shapes), 2, msg, sizeof msg))
        fail_msg("%s", msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
