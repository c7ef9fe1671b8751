#!/usr/bin/env python3
"""The other half of skeleton.py, run on the benchmark machine:

    rebuild.py DIR NAME...

Writes DIR/NAME.full.onnx with every stripped initializer back in its place,
drawn from a normal distribution with the original's mean and deviation and
clipped to its range (a variance stays positive, a constant stays constant),
and DIR/NAME.in<k>.npy for each input that did not travel.  Seeded from the
tensor's name: two runs rebuild the same model."""
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import numpy_helper


def draw(d, seed):
    rng = np.random.default_rng(seed)
    if d["std"] == 0.0:
        a = np.full(d["shape"], d["mean"])
    else:
        a = rng.standard_normal(d["shape"]) * d["std"] + d["mean"]
        a = np.clip(a, d["min"], d["max"])
    return a.astype(d["dtype"])


def main():
    out = sys.argv[1]
    for name in sys.argv[2:]:
        meta = json.load(open(os.path.join(out, name + ".json")))
        model = onnx.load(os.path.join(out, name + ".onnx"))
        inits = list(model.graph.initializer)
        for d in sorted(meta["initializers"], key=lambda d: d["index"]):
            t = numpy_helper.from_array(draw(d, zlib.crc32(d["name"].encode())), d["name"])
            inits.insert(d["index"], t)
        del model.graph.initializer[:]
        model.graph.initializer.extend(inits)
        full = os.path.join(out, name + ".full.onnx")
        big = sum(t.ByteSize() for t in inits) > 1.8e9
        onnx.save(model, full, save_as_external_data=big)
        for k, d in enumerate(meta["inputs"]):
            if "file" not in d:
                np.save(os.path.join(out, "%s.in%d.npy" % (name, k)), draw(d, 1000 + k))


if __name__ == "__main__":
    main()
