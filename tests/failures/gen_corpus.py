#!/usr/bin/python3
"""Writes the binary half of the failure corpus (tests/failures/README.md):
gen_corpus.py OUTDIR writes OUTDIR/dsl/w.safetensors (the weights the
model-language models read) and OUTDIR/onnx/*.onnx (broken ONNX models), and
prints one expectation line per ONNX model, in the form the model-language
and CU-IR files carry in their headers:

    onnx/conv_a.onnx: failure: CV3101 Graph>Node[Conv](input,init,init) @ -

(ONNX diagnostics have no line: the root's place is the file).  Run with
Debian's /usr/bin/python3 (numpy, onnx)."""
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(8)


def safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        data = np.ascontiguousarray(value, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(value.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def weights(out):
    shapes = {"conv1.weight": (8, 3, 3, 3), "conv1.bias": (8,),
              "conv2.weight": (16, 8, 3, 3), "conv2.bias": (16,),
              "fc.weight": (10, 64), "fc.bias": (10,),
              "head.weight": (10, 32), "head.bias": (10,)}
    safetensors(os.path.join(out, "w.safetensors"),
                {k: RNG.normal(size=s) for k, s in shapes.items()})


def init(name, shape):
    return numpy_helper.from_array(RNG.normal(size=shape).astype(np.float32), name)


def io(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


# name -> (nodes, inputs, initializers, expected pattern).  Every model has
# one root: the node named in the pattern; the nodes after it consume its
# output and stay quiet (the front end folds them under it).
MODELS = {
    # a convolution whose weight expects 4 input channels, fed 3
    "conv_a": ([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                node("Relu", ["c"], ["y"])],
               [io("x", ["N", 3, 8, 8])], [init("w", (8, 4, 3, 3)), init("b", (8,))],
               "CV3101 Graph>Node[Conv](input,init,init)"),
    "conv_b": ([node("Conv", ["image", "k", "bias"], ["f"], strides=[2, 2]),
                node("Relu", ["f"], ["g"]), node("MaxPool", ["g"], ["y"], kernel_shape=[2, 2])],
               [io("image", [1, 1, 16, 16])], [init("k", (4, 2, 3, 3)), init("bias", (4,))],
               "CV3101 Graph>Node[Conv](input,init,init)"),
    # flattened features that do not match the classifier's rows
    "mm_a": ([node("Flatten", ["x"], ["f"], axis=1), node("MatMul", ["f", "w"], ["m"]),
              node("Relu", ["m"], ["y"])],
             [io("x", ["N", 4, 4])], [init("w", (15, 10))],
             "CV3102 Graph>Node[MatMul](Flatten,init)"),
    "mm_b": ([node("Relu", ["x"], ["r"]), node("Flatten", ["r"], ["f"], axis=1),
              node("MatMul", ["f", "fc"], ["y"])],
             [io("x", ["N", 2, 3, 3])], [init("fc", (20, 5))],
             "CV3102 Graph>Node[MatMul](Flatten,init)"),
    # a bias of the wrong width after an activation
    "add_a": ([node("Relu", ["x"], ["r"]), node("Add", ["r", "b"], ["s"]),
               node("Sigmoid", ["s"], ["y"])],
              [io("x", ["N", 4])], [init("b", (5,))], "CV3002 Graph>Node[Add](Relu,init)"),
    "add_b": ([node("Relu", ["feat"], ["act"]), node("Add", ["act", "shift"], ["y"])],
              [io("feat", [2, 6, 3])], [init("shift", (4,))],
              "CV3002 Graph>Node[Add](Relu,init)"),
    # an initializer that was left out of the export
    "undef_a": ([node("Relu", ["x"], ["r"]), node("Mul", ["r", "scale"], ["y"])],
                [io("x", ["N", 4])], [], "CV2301 Graph>Node[Mul](Relu,undefined)"),
    "undef_b": ([node("Relu", ["x"], ["h"]), node("Mul", ["h", "gamma"], ["g"]),
                 node("Sigmoid", ["g"], ["y"])],
                [io("x", ["N", 8])], [], "CV2301 Graph>Node[Mul](Relu,undefined)"),
    # ops the front end does not support
    "unique_a": ([node("Unique", ["x"], ["y"])], [io("x", ["N", 4])], [], "CV4301 Graph>Node"),
    "unique_b": ([node("Relu", ["x"], ["r"]), node("Unique", ["r"], ["a"]),
                  node("Relu", ["a"], ["y"])],
                [io("x", ["N", 4])], [], "CV4301 Graph>Node"),
}


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "dsl"), exist_ok=True)
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    weights(os.path.join(out, "dsl"))
    for name, (nodes, inputs, inits, pattern) in sorted(MODELS.items()):
        last = nodes[-1].output[0]
        graph = helper.make_graph(nodes, name, inputs,
                                  [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)],
                                  inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.save(model, os.path.join(out, "onnx", name + ".onnx"))
        print("onnx/%s.onnx: failure: %s @ -" % (name, pattern))


if __name__ == "__main__":
    main()
