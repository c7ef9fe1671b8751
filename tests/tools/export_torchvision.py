#!/usr/bin/python3
"""Exports torchvision resnet18 and mobilenet_v2 to ONNX for the importer tests.

    /usr/bin/python3 tests/tools/export_torchvision.py OUT_DIR

Writes OUT_DIR/<model>.onnx (opset 13, batch dimension exported as the
symbol N), OUT_DIR/<model>.input.npy and OUT_DIR/<model>.output.npy (what
PyTorch computes for that input).  Weights are random (weights=None) from a
fixed seed (CUVIL_EXPORT_SEED, default 0: another seed is the same model
retrained, for bench/cache); BatchNorm running statistics are randomised
too, so that the normalisation is not an identity.  Generated data, never
committed.
"""
import os
import sys

import numpy as np
import torch
import torchvision

MODELS = ("resnet18", "mobilenet_v2")


def randomise_bn(model, gen):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def export(name, out_dir):
    seed = int(os.environ.get("CUVIL_EXPORT_SEED", "0"))
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(1 + seed)
    model = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        randomise_bn(model, gen)
        x = torch.randn(1, 3, 224, 224, generator=gen)
        y = model(x)
    onnx_path = os.path.join(out_dir, name + ".onnx")
    tmp = onnx_path + ".tmp"
    torch.onnx.export(model, x, tmp, opset_version=13, input_names=["input"],
                      output_names=["output"],
                      dynamic_axes={"input": {0: "N"}, "output": {0: "N"}})
    np.save(os.path.join(out_dir, name + ".input.npy"), x.numpy())
    np.save(os.path.join(out_dir, name + ".output.npy"), y.numpy())
    os.replace(tmp, onnx_path)
    print("exported %s (output range %.3g..%.3g)" % (onnx_path, y.min(), y.max()))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_torchvision.py OUT_DIR")
    os.makedirs(sys.argv[1], exist_ok=True)
    for name in MODELS:
        export(name, sys.argv[1])


if __name__ == "__main__":
    main()
