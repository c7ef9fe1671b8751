#!/usr/bin/python3
"""Writes deterministic random weights for the example models as
safetensors files: gen_weights.py OUTDIR [MODEL...] (default: all).

Run with Debian's /usr/bin/python3 (numpy).  The tensor names follow
PyTorch's state_dict names, so the same files load into the PyTorch
reference networks used by the equivalence tests."""
import json
import os
import sys

import numpy as np


def conv(rng, cout, cin, k, bias=True):
    fan_in = cin * k * k
    t = {"weight": rng.uniform(-1, 1, (cout, cin, k, k)) / np.sqrt(fan_in)}
    if bias:
        t["bias"] = rng.uniform(-0.1, 0.1, (cout,))
    return t


def linear(rng, out, inp):
    return {"weight": rng.uniform(-1, 1, (out, inp)) / np.sqrt(inp),
            "bias": rng.uniform(-0.1, 0.1, (out,))}


def batch_norm(rng, c):
    return {"weight": rng.uniform(0.5, 1.5, (c,)), "bias": rng.uniform(-0.2, 0.2, (c,)),
            "running_mean": rng.uniform(-0.3, 0.3, (c,)),
            "running_var": rng.uniform(0.5, 2.0, (c,))}


def flatten(prefix, tree, out):
    for k, v in tree.items():
        name = prefix + "." + k if prefix else k
        if isinstance(v, dict):
            flatten(name, v, out)
        else:
            out[name] = np.ascontiguousarray(v, dtype=np.float32)
    return out


def lenet(rng):
    return {"conv1": conv(rng, 6, 1, 5), "conv2": conv(rng, 16, 6, 5),
            "fc": {"0": linear(rng, 120, 400), "1": linear(rng, 84, 120)},
            "out": linear(rng, 10, 84)}


def mlp(rng):
    return {"layers": {"0": linear(rng, 128, 64), "1": linear(rng, 64, 128)},
            "head": linear(rng, 10, 64)}


def resblock(rng):
    return {"conv1": conv(rng, 16, 16, 3, bias=False), "bn1": batch_norm(rng, 16),
            "conv2": conv(rng, 16, 16, 3, bias=False), "bn2": batch_norm(rng, 16)}


def kws(rng):
    return {"stem": conv(rng, 16, 1, 3),
            "stack": {"0": conv(rng, 16, 16, 3), "1": conv(rng, 32, 16, 3),
                      "2": conv(rng, 32, 32, 3)},
            "classifier": linear(rng, 12, 32)}


def layer_norm(rng, c):
    return {"weight": rng.uniform(0.5, 1.5, (c,)), "bias": rng.uniform(-0.2, 0.2, (c,))}


def encoder(rng, feats=16, d=32, ff=64, out=8, layers=2):
    attn = lambda: {k: linear(rng, d, d) for k in ("q", "k", "v", "out")}
    return {"proj": linear(rng, d, feats),
            "layers": {str(i): {"ln1": layer_norm(rng, d), "attn": attn(),
                                "ln2": layer_norm(rng, d), "fc1": linear(rng, ff, d),
                                "fc2": linear(rng, d, ff)} for i in range(layers)},
            "norm": layer_norm(rng, d), "head": linear(rng, out, d)}


MODELS = {"lenet": lenet, "mlp": mlp, "resblock": resblock, "kws": kws, "encoder": encoder}
# Each model's seed is its place here: new models go at the end, so the
# others keep their weights.
SEED_ORDER = ["kws", "lenet", "mlp", "resblock", "encoder"]


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        data = tensors[name].astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: gen_weights.py OUTDIR [MODEL...]")
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for i, name in enumerate(argv[2:] or sorted(MODELS)):
        rng = np.random.default_rng(1234 + SEED_ORDER.index(name))
        write_safetensors(os.path.join(out, name + ".safetensors"), flatten("", MODELS[name](rng), {}))
        print(os.path.join(out, name + ".safetensors"))


if __name__ == "__main__":
    main(sys.argv)
