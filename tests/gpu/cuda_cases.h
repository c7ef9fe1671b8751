/* The single-op sweep for CUDA artifacts: each group is built into one
 * model (tests/support/backend_testlib.h's bk_build).  tests/unit/compiler-core/backend/test_cuda.c
 * compiles every group for cuda-sm90 and checks the PTX; the GPU bundle
 * (tests/gpu/gpu_bundle.c) runs them on the GPU against the interpreter. */
#ifndef CV_TESTS_CUDA_CASES_H
#define CV_TESTS_CUDA_CASES_H

#include "tests/support/backend_testlib.h"

static const bk_case cuda_elementwise[] = {
    BK("add", NULL, "f32[N:3,4,5]", "f32[5]"),
    BK("add", NULL, "f16[2,5]", "f16[2,5]"),
    BK("add", NULL, "bf16[3,4]", "bf16[1]"),
    BK("sub", NULL, "u8[6]", "u8[6] @0:255"),
    BK("mul", NULL, "f32[3,1]", "f32[1,4]"),
    BK("div", NULL, "f32[4,4]", "f32[4,4] @0.5:3"),
    BK("div", NULL, "i32[8]", "i32[8] =0,1,-1,3,-3,7,0,2"),
    BK("pow", NULL, "f32[6] @0.1:3", "f32[6]"),
    BK("pow", NULL, "i64[6] =2,-3,0,1,-1,5", "i64[6] =10,3,0,-2,-3,2"),
    BK("max", NULL, "f32[5] =1,nan,3,-inf,0", "f32[5] =2,0,nan,1,-0"),
    BK("min", NULL, "i32[2,3]", "i32[3]"),
    BK("equal", NULL, "f32[4] =1,nan,2,3", "f32[4] =1,nan,2.5,3"),
    BK("where", NULL, "bool[3,4]", "f32[3,4]", "f32[4]"),
    BK("cast", "to=i32", "f32[8] =1.5,-1.5,2.9,-2.9,nan,inf,-inf,3e10"),
    BK("cast", "to=u8", "f32[5] =-1,256,255.5,3.7,nan"),
    BK("cast", "to=f16", "f32[6] =1,0.1,65504,70000,-3.14159,1e-6"),
    BK("cast", "to=bf16", "f32[5] =1,0.1,3.14159,-2.71828,1e30"),
    BK("neg", NULL, "i32[4] =-2147483648,1,0,-5"),
    BK("abs", NULL, "f32[7]"),
    BK("relu", NULL, "f32[3] =nan,-1,1"),
    BK("sqrt", NULL, "f32[6] @0:9"),
    BK("exp", NULL, "f32[40] @-80:80"),
    BK("log", NULL, "f32[40] @0.0001:1000"),
    BK("tanh", NULL, "f32[40] @-12:12"),
    BK("erf", NULL, "f32[40] @-5:5"),
    BK("sigmoid", NULL, "f32[3,3] @-10:10"),
    BK("silu", NULL, "f32[10]"),
    BK("hard_swish", NULL, "f32[12] @-5:5"),
    BK("leaky_relu", NULL, "f16[8]"),
    BK("gelu", NULL, "f32[11]"),
    BK("gelu", "approximate=tanh", "f32[11]"),
    BK("clip", "min=-1 max=1.5", "f32[10]"),
    BK("add", NULL, "f32[300,513] @-1:1", "f32[513]"),
    BK("sin", NULL, "f32[40] @-100:100"),
    BK("cos", NULL, "f32[40] @-100:100"),
    BK("tan", NULL, "f32[40] @-1.5:1.5"),
    BK("asin", NULL, "f32[12] @-1:1"),
    BK("acos", NULL, "f32[12] @-1:1"),
    BK("atan", NULL, "f32[12] @-50:50"),
    BK("sinh", NULL, "f32[12] @-10:10"),
    BK("cosh", NULL, "f32[12] @-10:10"),
    BK("asinh", NULL, "f32[12] @-100:100"),
    BK("acosh", NULL, "f32[12] @1:100"),
    BK("atanh", NULL, "f32[12] @-0.99:0.99"),
    BK("sin", NULL, "f16[8] @-3:3"),
};

static const bk_case cuda_reduce[] = {
    BK("reduce_sum", NULL, "f32[3,4,5]"),
    BK("reduce_sum", "axes=[1]", "f32[N:2,7,5]"),
    BK("reduce_sum", "axes=[0]", "i32[6,3]"),
    BK("reduce_mean", "axes=[2,3]", "f32[N:2,3,4,5]"),
    BK("reduce_max", "axes=[1]", "f32[4,6] =1,nan,3,4,5,6"),
    BK("reduce_min", "axes=[0,1]", "u8[2,3,4]"),
    BK("argmax", "axis=1 keepdims=0", "f32[3,6,2]"),
    BK("softmax", NULL, "f32[N:3,10]"),
    BK("softmax", "axis=1", "f32[2,5,3]"),
    BK("softmax", "axis=0", "f16[4,3]"),
    BK("softmax", NULL, "f32[64,1000] @-8:8"),
    BK("log_softmax", NULL, "f32[4,7] @-20:20"),
    BK("batch_norm", NULL, "f32[2,3,4,5]", "f32[3]", "f32[3]", "f32[3]", "f32[3] @0.1:2"),
    BK("layer_norm", NULL, "f32[3,16]", "f32[16]", "f32[16]"),
    BK("layer_norm", "axis=1 epsilon=0.01", "f32[N:2,3,4]", "f32[3,4]"),
};

static const bk_case cuda_matmul[] = {
    BK("matmul", NULL, "f32[3,4]", "f32[4,5]"),
    BK("matmul", NULL, "f32[2,1,3,4]", "f32[5,4,2]"),
    BK("matmul", NULL, "f32[4]", "f32[4,3]"),
    BK("matmul", NULL, "f32[N:2,3,4]", "f32[4,5]"),
    BK("matmul", NULL, "f32[37,300] @-0.5:0.5", "f32[300,45] @-0.5:0.5"),
    BK("matmul", NULL, "f32[2,70,33]", "f32[2,33,130]"),
    BK("matmul", NULL, "i32[2,3]", "i32[3,2]"),
    BK("matmul", NULL, "f16[2,3,8]", "f16[1,8,2]"),
    BK("gemm", "alpha=0.5 beta=2", "f32[3,4]", "f32[4,5]", "f32[5]"),
    BK("gemm", "trans_a=1 trans_b=1", "f32[4,3]", "f32[5,4]", "f32[3,1]"),
    BK("gemm", NULL, "f32[N:3,6]", "f32[6,2]", "f32[1,2]"),
    BK("gemm", "trans_b=1", "f32[65,513] @-0.5:0.5", "f32[100,513] @-0.5:0.5", "f32[100]"),
    BK("gemm", NULL, "f32[256,512] @-0.5:0.5", "f32[512,384] @-0.5:0.5", "f32[384]"),
};

static const bk_case cuda_conv[] = {
    BK("conv2d", NULL, "f32[1,3,8,8]", "f32[4,3,3,3]", "f32[4]"),
    BK("conv2d", "stride=[2,2] pad=[1,0,2,1]", "f32[2,3,9,8]", "f32[5,3,3,2]", "f32[5]"),
    BK("conv2d", "dilation=[2,1] pad=[2,1]", "f32[1,2,9,7]", "f32[3,2,3,3]"),
    BK("conv2d", "groups=2 stride=[1,2]", "f32[2,4,7,7]", "f32[6,2,3,3]"),
    BK("conv2d", "groups=4 pad=[1,1,1,1]", "f32[1,4,6,6]", "f32[4,1,3,3]", "f32[4]"),
    BK("conv2d", "stride=[1,2]", "f32[N:3,2,5,5]", "f32[3,2,2,2]"),
    BK("conv2d", "pad=[1,1]", "f16[1,2,5,5]", "f16[2,2,3,3]"),
    BK("conv2d", "pad=[3,3] stride=[2,2]", "f32[1,3,30,30] @-0.5:0.5", "f32[70,3,7,7] @-0.5:0.5"),
    BK("conv2d", NULL, "f32[1,300,7,7] @-0.5:0.5", "f32[20,300,1,1] @-0.5:0.5", "f32[20]"),
    BK("conv2d", "pad=[1,1,1,1]", "f32[4,64,28,28] @-0.5:0.5", "f32[64,64,3,3] @-0.1:0.1", "f32[64]"),
    BK("conv_transpose2d", "stride=[2,2] pad=[1,1,1,1] output_padding=[1,1]", "f32[2,3,4,5]",
       "f32[3,2,3,3]"),
};

static const bk_case cuda_layout[] = {
    BK("max_pool2d", "kernel=[2,2] stride=[2,2]", "f32[2,3,8,8]"),
    BK("max_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] ceil_mode=1", "f32[1,2,8,7]"),
    BK("max_pool2d", "kernel=[3,3] stride=[2,2]", "f32[N:2,3,7,7]"),
    BK("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1]", "f32[1,2,7,6]"),
    BK("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] count_include_pad=1", "f32[1,2,7,6]"),
    BK("global_avg_pool", NULL, "f32[2,3,4,5]"),
    BK("resize", "scales=[1,1,2,2] mode=linear", "f32[1,2,3,3]"),
    BK("reshape", "shape=[0,-1]", "f32[N:2,3,4]"),
    BK("transpose", "perm=[0,2,3,1]", "f32[N:2,3,4,5]"),
    BK("slice", "starts=[-1] ends=[-100] steps=[-2] axes=[1]", "f32[2,7]"),
    BKN("split", "axis=1 sizes=[2,2,1]", 3, 1, "f32[3,5]"),
    BK("concat", "axis=1", "f32[2,3]", "f32[2,1]", "f32[2,4]"),
    BK("gather", "axis=1", "f32[2,6,3]", "i32[2,2] =5,0,-6,3"),
    BK("pad", "pads=[2,3,2,3] mode=reflect", "f32[4,5]"),
    BK("expand", "shape=[2,3,4]", "f32[3,1]"),
    BK("transpose", NULL, "f32[70000,3] @-1:1"),
};

/* With constant weights (cuda_bake_params), compiled in f32 (weights
 * packed as P8 at compile time) and with -p fp16 and -p bf16 (16-bit
 * weights; cvrt_conv2d_p8h and cvrt_sgemm_h): the tensor-core tiles (a
 * stem-like 7 x 7, a batched 3 x 3, a 1 x 1 that leaves a partial tile of
 * rows, grouped, a deep 1 x 1 split along K, shallow ones; 128-row tiles
 * for 128 and 256 channels), the FMA tiles (8 channels) and the fully
 * connected product. */
static const bk_case cuda_half[] = {
    BK("conv2d", "pad=[3,3] stride=[2,2]", "f32[1,3,30,30] @-1:1", "f32[64,3,7,7] @-0.5:0.5",
       "f32[64]"),
    BK("conv2d", "pad=[1,1,1,1]", "f32[N:3,32,14,14] @-1:1", "f32[64,32,3,3] @-0.2:0.2",
       "f32[64]"),
    BK("conv2d", NULL, "f32[N:3,96,7,7] @-1:1", "f32[40,96,1,1] @-0.2:0.2"),
    BK("conv2d", "groups=2 stride=[2,2] pad=[1,1,1,1]", "f32[1,64,9,9] @-1:1",
       "f32[64,32,3,3] @-0.2:0.2", "f32[64]"),
    BK("conv2d", "pad=[1,1,1,1]", "f32[N:3,4,9,8] @-1:1", "f32[8,4,3,3] @-0.5:0.5", "f32[8]"),
    BK("conv2d", NULL, "f32[N:2,32,10,10] @-1:1", "f32[96,32,1,1] @-0.5:0.5", "f32[96]"),
    BK("conv2d", NULL, "f32[1,960,7,7] @-1:1", "f32[160,960,1,1] @-0.1:0.1"),
    BK("conv2d", "pad=[1,1,1,1] stride=[2,2]", "f32[N:2,3,33,33] @-1:1", "f32[32,3,3,3] @-0.5:0.5"),
    BK("conv2d", "pad=[1,1,1,1]", "f32[N:2,32,12,12] @-1:1", "f32[128,32,3,3] @-0.2:0.2",
       "f32[128]"),
    BK("conv2d", "stride=[2,2]", "f32[1,512,8,8] @-1:1", "f32[256,512,1,1] @-0.1:0.1"),
    BK("gemm", "trans_b=1", "f32[N:3,200] @-1:1", "f32[10,200] @-0.2:0.2", "f32[10]"),
};

/* Dims that are expressions of the symbols: a strided window over a
 * symbolic extent gives (H - 2) floordiv 2 + 1 and the like, which the host
 * runtime derives (cvcu_model.derive) before it sizes buffers and which
 * every kernel derives from its symbol parameters. */
static const bk_case cuda_dims[] = {
    BK("max_pool2d", "kernel=[2,2] stride=[2,2]", "f32[N:2,3,H:9,W:8]"),
    BK("conv2d", "pad=[1,1] stride=[2,2]", "f32[1,2,L:11,6] @-1:1", "f32[4,2,3,3] @-0.5:0.5",
       "f32[4]"),
    BK("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1]", "f32[1,2,T:7,6]"),
};

typedef struct cuda_group {
    const char *name;
    const bk_case *cases;
    int n;
} cuda_group;

#define CUDA_GROUP(name, arr) {name, arr, (int)(sizeof arr / sizeof arr[0])}
static const cuda_group cuda_groups[] __attribute__((unused)) = {
    CUDA_GROUP("elementwise", cuda_elementwise), CUDA_GROUP("reduce", cuda_reduce),
    CUDA_GROUP("matmul", cuda_matmul), CUDA_GROUP("conv", cuda_conv),
    CUDA_GROUP("layout", cuda_layout), CUDA_GROUP("dims", cuda_dims),
};
#define CUDA_N_GROUPS ((int)(sizeof cuda_groups / sizeof cuda_groups[0]))

/* Makes every operand but the first of each op a constant (weights, bias)
 * holding its input's data, as a model's weights are: what -p fp16/bf16
 * stores in 16 bits.  The model keeps the first operands as inputs. */
static inline int cuda_bake_params(bk_model *b)
{
    cv_func *f = b->m->funcs[0];
    bool keep[BK_MAX_CASES * BK_MAX_IN] = {false};
    for (int i = 0; i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        for (int k = 0; k < op->n_operands; k++) {
            cv_value *v = op->operands[k];
            if (v->kind != CV_VAL_INPUT)
                continue;
            if (k == 0) {
                keep[v->def_index] = true;
                continue;
            }
            char name[48];
            snprintf(name, sizeof name, "%s_const", v->name);
            const cv_tensor *t = &b->ins[v->def_index];
            cv_param *p = cv_func_add_dense(f, name, &v->type, t->data, cv_tensor_nbytes(t));
            if (!p)
                return -1;
            op->operands[k] = p->value;
        }
    }
    int n = 0;
    for (int i = 0; i < f->n_inputs; i++) {
        if (!keep[i]) {
            cv_tensor_free(&b->ins[i]);
            continue;
        }
        f->inputs[n] = f->inputs[i];
        f->inputs[n]->def_index = n;
        b->ins[n++] = b->ins[i];
    }
    f->n_inputs = b->n_ins = n;
    return 0;
}

#endif
