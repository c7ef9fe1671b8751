#!/usr/bin/env python3
"""Writes the example CU-IR models (deterministic: fixed seed).

Run from this folder: /usr/bin/python3 gen_examples.py
The outputs are committed; rerun only when the examples change."""
import numpy as np

rng = np.random.default_rng(20261129)


def dense(a):
    return ", ".join("%.9g" % float(v) for v in a.reshape(-1))


def param(name, a):
    dims = ",".join(str(d) for d in a.shape)
    return "  param %%%s: f32[%s] = dense(%s)\n" % (name, dims, dense(a.astype(np.float32)))


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def mlp():
    w1 = rng.normal(0, 0.5, (16, 8)); b1 = rng.normal(0, 0.1, (16,))
    w2 = rng.normal(0, 0.5, (4, 16)); b2 = rng.normal(0, 0.1, (4,))
    t = "# A two-layer perceptron with a symbolic batch dimension N.\ncuir 1\n"
    t += "model @mlp(%x: f32[N,8]) -> (f32[N,4]) {\n"
    t += param("w1", w1) + param("b1", b1) + param("w2", w2) + param("b2", b2)
    t += '  %0 = gemm(%x, %w1, %b1) {trans_b=1} : f32[N,16]  loc("mlp.py":4:9)\n'
    t += '  %1 = relu(%0) : f32[N,16]  loc("mlp.py":4:9)\n'
    t += '  %2 = gemm(%1, %w2, %b2) {trans_b=1} : f32[N,4]  loc("mlp.py":5:12)\n'
    t += '  %3 = softmax(%2) {axis=-1} : f32[N,4]  loc("mlp.py":5:12)\n'
    t += "  return %3\n}\n"
    write("mlp.cuir", t)


def tinycnn():
    w = rng.normal(0, 0.3, (4, 1, 3, 3)); b = rng.normal(0, 0.1, (4,))
    fw = rng.normal(0, 0.2, (10, 4 * 4 * 4)); fb = rng.normal(0, 0.1, (10,))
    t = "# A small convolutional classifier on 8x8 single-channel images.\ncuir 1\n"
    t += "model @tinycnn(%image: f32[N,1,8,8]) -> (f32[N,10]) {\n"
    t += param("conv_w", w) + param("conv_b", b) + param("fc_w", fw) + param("fc_b", fb)
    t += '  %0 = conv2d(%image, %conv_w, %conv_b) {stride=[1,1], pad=[1,1,1,1]} : f32[N,4,8,8]  loc("conv1")\n'
    t += '  %1 = relu(%0) : f32[N,4,8,8]  loc("relu1")\n'
    t += '  %2 = max_pool2d(%1) {kernel=[2,2], stride=[2,2]} : f32[N,4,4,4]  loc("pool1")\n'
    t += '  %3 = flatten(%2) {axis=1} : f32[N,64]  loc("flatten")\n'
    t += '  %4 = gemm(%3, %fc_w, %fc_b) {trans_b=1} : f32[N,10]  loc("fc")\n'
    t += '  %5 = log_softmax(%4) {axis=1} : f32[N,10]  loc("out")\n'
    t += "  return %5\n}\n"
    write("tinycnn.cuir", t)


def residual():
    w = rng.normal(0, 0.2, (3, 3, 3, 3))
    scale = rng.uniform(0.5, 1.5, (3,)); bias = rng.normal(0, 0.1, (3,))
    mean = rng.normal(0, 0.1, (3,)); var = rng.uniform(0.5, 1.5, (3,))
    t = "# A residual block: conv, batch norm, skip connection, relu, global pooling.\ncuir 1\n"
    t += "model @residual(%x: f32[1,3,6,6]) -> (f32[1,3,1,1]) {\n"
    t += param("w", w) + param("bn_scale", scale) + param("bn_bias", bias)
    t += param("bn_mean", mean) + param("bn_var", var)
    t += '  %0 = conv2d(%x, %w) {pad=[1,1,1,1]} : f32[1,3,6,6]  loc("block.py":3:9)\n'
    t += '  %1 = batch_norm(%0, %bn_scale, %bn_bias, %bn_mean, %bn_var) {epsilon=1e-05} : f32[1,3,6,6]  loc("block.py":4:9)\n'
    t += '  %2 = add(%1, %x) : f32[1,3,6,6]  loc("block.py":5:9)\n'
    t += '  %3 = relu(%2) : f32[1,3,6,6]  loc("block.py":5:9)\n'
    t += '  %4 = global_avg_pool(%3) : f32[1,3,1,1]  loc("block.py":6:12)\n'
    t += "  return %4\n}\n"
    write("residual.cuir", t)


mlp()
tinycnn()
residual()
