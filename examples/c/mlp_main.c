/* Using a compiled artifact from C: the mlp example (examples/cuir/mlp.cuir,
 * inputs f32[N,8] -> softmax f32[N,4]) on a batch of N = 3 rows.
 *
 *   build/cuvil compile examples/cuir/mlp.cuir -t native -o out/
 *   cc -O2 -I out examples/c/mlp_main.c out/libmlp.a -lm -lpthread -o mlp_main   (static)
 *   cc -O2 -I out examples/c/mlp_main.c -L out -lmlp -Wl,-rpath,$PWD/out -o mlp_main (shared)
 *   ./mlp_main
 * docs/artifact-c.md explains each call. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlp.h"

int main(void)
{
    /* One context per thread that runs the model; it owns a thread pool of
     * its own (here 2 threads) and the activation arena. */
    cv_mlp_ctx *ctx = cv_mlp_create(2);
    if (!ctx) {
        fprintf(stderr, "cv_mlp_create failed (out of memory, or a CPU without the "
                        "features the artifact was compiled for)\n");
        return 1;
    }
    /* The symbolic dims, in CV_MLP_SYMBOL_NAMES order: here N, the batch. */
    int64_t dims[CV_MLP_NUM_SYMBOLS] = {3};
    if (cv_mlp_reserve(ctx, dims) != 0) {   /* size the arena once: runs allocate nothing */
        cv_mlp_destroy(ctx);
        return 1;
    }
    float x[3][8], y[3][4];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 8; c++)
            x[r][c] = (float)(r + 1) * 0.1f * (float)c;
    const void *inputs[CV_MLP_NUM_INPUTS] = {x};
    void *outputs[CV_MLP_NUM_OUTPUTS] = {y};
    int rc = cv_mlp_run(ctx, inputs, outputs, dims);
    for (int r = 0; rc == 0 && r < 3; r++)
        printf("row %d: %.4f %.4f %.4f %.4f\n", r, y[r][0], y[r][1], y[r][2], y[r][3]);
    cv_mlp_destroy(ctx);
    return rc == 0 ? 0 : 1;
}
