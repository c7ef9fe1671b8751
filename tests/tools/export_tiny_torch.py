#!/usr/bin/python3
"""Two tiny PyTorch exports for the artifact-naming tests (tests/unit/
test_artifact_names.c): both graphs are named "torch_jit" by the exporter,
as every PyTorch export is.  classifier.onnx names its input and output
(features -> logits, dynamic batch); encoder.onnx names neither, so its
outputs are the exporter's numbers.  Usage: export_tiny_torch.py OUTDIR"""
import os
import sys

import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)

    def forward(self, img):
        y = torch.relu(self.conv(img))
        return y.mean(dim=(2, 3)), y.amax(dim=(2, 3))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.onnx.export(Classifier().eval(), torch.randn(2, 4), os.path.join(out, "classifier.onnx"),
                      input_names=["features"], output_names=["logits"],
                      dynamic_axes={"features": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=13)
    torch.onnx.export(Encoder().eval(), torch.randn(1, 1, 8, 8), os.path.join(out, "encoder.onnx"),
                      opset_version=13)


if __name__ == "__main__":
    main()
