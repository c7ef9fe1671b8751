/* The rnn op natively (backend/codegen_rnn.c, runtime/cvrt_rnn.c) against
 * the interpreter: LSTM, GRU and the plain RNN (tanh, relu), forward,
 * reverse and bidirectional, GRU with and without linear_before_reset (the
 * second recurrent product), LSTM peepholes, sequence_lens (rows of their
 * own lengths, one past T, one 0), clip, symbolic and static lengths and
 * batches, every result compared.
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

#define RNN1(attrs, res, x, b) \
    BKN("rnn", "cell=rnn " attrs, 2, res, x, "f32[1,4,5]", "f32[1,4,4]", "f32[1,8]", \
        "f32[1," b ",4]")
#define RNN2(attrs, res, x, b) \
    BKN("rnn", "cell=rnn direction=bidirectional " attrs, 2, res, x, "f32[2,4,5]", \
        "f32[2,4,4]", "f32[2,8]", "f32[2," b ",4]")
#define PEEP1(attrs, res, x, b, p) \
    BKN("rnn", "cell=lstm peepholes=1 " attrs, 3, res, x, "f32[1,16,5]", "f32[1,16,4]", \
        "f32[1,32]", "f32[1," b ",4]", "f32[1," b ",4]", p)
#define PEEP2(attrs, res, x, b, p) \
    BKN("rnn", "cell=lstm peepholes=1 " attrs, 3, res, x, "f32[2,16,5]", "f32[2,16,4]", \
        "f32[2,32]", "f32[2," b ",4]", "f32[2," b ",4]", p)
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
    /* the plain RNN (tanh, relu) */
    RNN1("", 0, "f32[T:6,B:3,5]", "B:3"),
    RNN1("activation=relu direction=reverse clip=0.8", 0, "f32[T:6,3,5]", "3"),
    RNN1("activation=relu", 1, "f32[T:6,3,5]", "3"),
    RNN2("", 0, "f32[T:4,2,5]", "2"),
    RNN2("activation=relu", 1, "f32[T:4,2,5]", "2"),
    /* LSTM peepholes */
    PEEP1("", 0, "f32[T:6,2,5]", "2", "f32[1,12]"),
    PEEP1("clip=0.6", 2, "f32[T:6,2,5]", "2", "f32[1,12]"),
    PEEP2("direction=bidirectional", 1, "f32[T:5,2,5]", "2", "f32[2,12]"),
    /* sequence_lens: zeros past each row's length, states at its last step
     * (a length past T is clamped, 0 keeps h0) */
    BKN("rnn", "cell=rnn lengths=1", 2, 0, "f32[T:5,4,5]", "f32[1,4,5]", "f32[1,4,4]",
        "f32[1,8]", "f32[1,4,4]", "i32[4] =5,2,0,9"),
    BKN("rnn", "cell=rnn activation=relu direction=bidirectional lengths=1", 2, 1,
        "f32[T:5,4,5]", "f32[2,4,5]", "f32[2,4,4]", "f32[2,8]", "f32[2,4,4]", "i32[4] =5,2,0,9"),
    BKN("rnn", "cell=gru direction=bidirectional lengths=1", 2, 0, "f32[T:6,3,5]",
        "f32[2,12,5]", "f32[2,12,4]", "f32[2,24]", "f32[2,3,4]", "i32[3] =1,6,3"),
    BKN("rnn", "cell=gru linear_before_reset=1 direction=reverse lengths=1", 2, 1,
        "f32[T:6,3,5]", "f32[1,12,5]", "f32[1,12,4]", "f32[1,24]", "f32[1,3,4]", "i32[3] =4,6,2"),
    BKN("rnn", "cell=lstm peepholes=1 lengths=1", 3, 0, "f32[T:6,3,5]", "f32[1,16,5]",
        "f32[1,16,4]", "f32[1,32]", "f32[1,3,4]", "f32[1,3,4]", "f32[1,12]", "i32[3] =3,6,1"),
    BKN("rnn", "cell=lstm peepholes=1 lengths=1 direction=bidirectional", 3, 1, "f32[T:6,3,5]",
        "f32[2,16,5]", "f32[2,16,4]", "f32[2,32]", "f32[2,3,4]", "f32[2,3,4]", "f32[2,12]",
        "i32[3] =2,5,6"),
    BKN("rnn", "cell=lstm lengths=1 direction=reverse", 3, 2, "f32[T:6,3,5]", "f32[1,16,5]",
        "f32[1,16,4]", "f32[1,32]", "f32[1,3,4]", "f32[1,3,4]", "i32[3] =2,5,6"),
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
