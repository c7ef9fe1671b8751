/* Codegen hook: rnn (ops_rnn.c), a plain RNN, LSTM or GRU whose number of
 * steps may be a symbol.  One serial kernel calls the runtime's cvrt_rnn
 * (runtime/cvrt_rnn.c), which reads the length from the bound dimension at
 * run time and computes the gates with the runtime GEMM (itself parallel);
 * the recurrence is sequential, so the kernel is not split.  Peepholes and
 * sequence_lens, when the op has them, are its operands after the states. */
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/runtime/cvrt.h"

int cv_cg_rnn(cv_codegen_ctx *c)
{
    const cv_op *op = c->op;
    const char *cell = cv_op_string(op, "cell", ""), *dir = cv_op_string(op, "direction", "forward");
    int64_t g = !strcmp(cell, "lstm") ? 4 : !strcmp(cell, "gru") ? 3 : 1;
    int64_t dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    const cv_shape *xs = &op->operands[0]->type.shape;
    int64_t hid = op->operands[2]->type.shape.d[2].n;
    int next = g == 4 ? 6 : 5;  /* the first optional operand */
    bool peep = cv_op_int(op, "peepholes", 0) != 0, lens = cv_op_int(op, "lengths", 0) != 0;
    cv_kten x = cv_cg_in(c, 0), w = cv_cg_in(c, 1), r = cv_cg_in(c, 2), b = cv_cg_in(c, 3);
    cv_kten h0 = cv_cg_in(c, 4), y = cv_cg_out(c, 0), yh = cv_cg_out(c, 1);
    cv_kten c0 = g == 4 ? cv_cg_in(c, 5) : (cv_kten){0}, yc = g == 4 ? cv_cg_out(c, 2) : (cv_kten){0};
    cv_kten p = peep ? cv_cg_in(c, next) : (cv_kten){0};
    cv_kten sl = lens ? cv_cg_in(c, next + peep) : (cv_kten){0};
    cv_shape xgs = {.rank = 3, .d = {xs->d[0], xs->d[1], {.n = g * hid}}};
    cv_shape hgs = {.rank = 2, .d = {xs->d[1], {.n = (g + 1) * hid}}};
    cv_kten xg = cv_cg_scratch(c, CV_F32, &xgs), hg = cv_cg_scratch(c, CV_F32, &hgs);
    int64_t flags = (!strcmp(dir, "reverse") ? CVRT_RNN_REVERSE : 0) |
                    (cv_op_int(op, "linear_before_reset", 0) ? CVRT_RNN_LBR : 0) |
                    (!strcmp(cv_op_string(op, "activation", "tanh"), "relu") ? CVRT_RNN_RELU : 0);
    const cv_kexpr *z = cv_k_i64(c, 0);
    cv_k_begin(c, "rnn", NULL, NULL);
    const cv_kexpr *args[] = {
        cv_k_addr(c, &x, z), cv_k_addr(c, &w, z), cv_k_addr(c, &r, z), cv_k_addr(c, &b, z),
        cv_k_addr(c, &h0, z), g == 4 ? cv_k_addr(c, &c0, z) : cv_k_null(c),
        peep ? cv_k_addr(c, &p, z) : cv_k_null(c), lens ? cv_k_addr(c, &sl, z) : cv_k_null(c),
        cv_k_addr(c, &y, z), cv_k_addr(c, &yh, z), g == 4 ? cv_k_addr(c, &yc, z) : cv_k_null(c),
        cv_k_addr(c, &xg, z), cv_k_addr(c, &hg, z), x.dim[0], x.dim[1], x.dim[2],
        cv_k_i64(c, hid), cv_k_i64(c, g), cv_k_i64(c, dirs), cv_k_i64(c, flags),
        cv_k_f32(c, cv_op_float(op, "clip", 0)),
    };
    cv_k_call(c, CV_KRT_RNN, args, (int)(sizeof args / sizeof args[0]));
    cv_k_end(c);
    return 0;
}
