/* The rnn op natively (backend/codegen_rnn.c, runtime/cvrt_rnn.c) against
 * the interpreter: LSTM and GRU, forward, reverse and bidirectional, GRU
 * with and without linear_before_reset (the second recurrent product),
 * clip, symbolic and static lengths and batches, every result compared.
 * The PyTorch exports (tests/unit/compiler-core/test_dynamic_models.c) cover only what
 * torch emits: forward LSTM and bidirectional GRU with the reset after. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/backend_testlib.h"

#define LSTM1(attrs, res, x, b) \
    BKN("rnn", "cell=lstm " attrs, 3, res, x, "f32[1,16,5]", "f32[1,16,4]", "f32[1,32]", \
        "f32[1," b ",4]", "f32[1," b ",4]")
#define LSTM2(attrs, res, x, b) \
    BKN("rnn", "cell=lstm direction=bidirectional " attrs, 3, res, x, "f32[2,16,5]", \
        "f32[2,16,4]", "f32[2,32]", "f32[2," b ",4]", "f32[2," b ",4]")
#define GRU1(attrs, res, x, b) \
    BKN("rnn", "cell=gru " attrs, 2, res, x, "f32[1,12,5]", "f32[1,12,4]", "f32[1,24]", \
        "f32[1," b ",4]")
#define GRU2(attrs, res, x, b) \
    BKN("rnn", "cell=gru direction=bidirectional " attrs, 2, res, x, "f32[2,12,5]", \
        "f32[2,12,4]", "f32[2,24]", "f32[2," b ",4]")

static const bk_case cases[] = {
    LSTM1("", 0, "f32[T:7,B:2,5]", "B:2"),
    LSTM1("", 1, "f32[T:7,B:2,5]", "B:2"),
    LSTM1("", 2, "f32[T:7,B:2,5]", "B:2"),
    LSTM1("direction=reverse clip=0.7", 0, "f32[T:5,3,5]", "3"),
    LSTM1("direction=reverse clip=0.7", 2, "f32[T:5,3,5]", "3"),
    LSTM1("", 0, "f32[T:1,1,5]", "1"),
    LSTM1("", 1, "f32[3,2,5]", "2"),
    LSTM2("", 0, "f32[T:6,2,5]", "2"),
    LSTM2("", 1, "f32[T:6,2,5]", "2"),
    LSTM2("", 2, "f32[T:6,2,5]", "2"),
    GRU1("", 0, "f32[T:6,3,5]", "3"),
    GRU1("", 1, "f32[T:6,3,5]", "3"),
    GRU1("linear_before_reset=1 direction=reverse clip=0.5", 0, "f32[T:4,B:2,5]", "B:2"),
    GRU1("linear_before_reset=1", 1, "f32[T:9,1,5]", "1"),
    GRU2("", 0, "f32[T:5,2,5]", "2"),
    GRU2("linear_before_reset=1", 1, "f32[T:5,2,5]", "2"),
};

static void test_native(void **state)
{
    (void)state;
    char msg[4096] = "";
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int threads = 1; threads <= 2; threads++)
        if (bk_check("rnn", cases, n, threads, msg, sizeof msg))
            fail_msg("%s", msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
