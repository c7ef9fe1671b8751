#!/usr/bin/python3
"""Strips a model's weights so that it can travel to the benchmark machine
(bench/device/README.md): its carry limit is 64 MiB, a ViT-B/16 alone is 330.

    skeleton.py OUT_DIR NAME=MODEL.onnx[:INPUT.npy,...] ...

Writes OUT_DIR/NAME.onnx without its large floating-point initializers and
OUT_DIR/NAME.json with, for each one removed, where it was and what its
values look like (shape, dtype, mean, std, min, max): rebuild.py draws new
values from that on the other side.  Speed does not depend on the values of
fp32 weights, only on their range (no NaN, no denormals), so the rebuilt
model times like the original; its outputs are checked against ONNX
Runtime's there, not against PyTorch's here.  Integer tensors and small
ones travel as they are (shapes, indices, token ids).  Inputs given after
the model are described the same way, so a large cache input (GPT-2's past
keys and values) does not travel either.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

KEEP_BELOW = 4096  # elements: smaller tensors travel as they are


def describe(a):
    a64 = a.astype(np.float64)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "mean": float(a64.mean()),
            "std": float(a64.std()), "min": float(a64.min()), "max": float(a64.max())}


def strips(a):
    return a.dtype.kind == "f" and a.size >= KEEP_BELOW


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for spec in sys.argv[2:]:
        name, rest = spec.split("=", 1)
        path, _, ins = rest.partition(":")
        model = onnx.load(path)
        removed = []
        kept = []
        for i, t in enumerate(model.graph.initializer):
            a = numpy_helper.to_array(t)
            if strips(a):
                removed.append(dict(describe(a), name=t.name, index=i))
            else:
                kept.append(t)
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)
        inputs = []
        for k, f in enumerate(p for p in ins.split(",") if p):
            a = np.load(f)
            if strips(a):
                inputs.append(describe(a))
            else:
                np.save(os.path.join(out, "%s.in%d.npy" % (name, k)), a)
                inputs.append({"file": "%s.in%d.npy" % (name, k)})
        onnx.save(model, os.path.join(out, name + ".onnx"))
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump({"initializers": removed, "inputs": inputs}, f)
        print("%s: %d initializers stripped, %.1f MB left" % (
            name, len(removed), os.path.getsize(os.path.join(out, name + ".onnx")) / 1e6))


if __name__ == "__main__":
    main()
