#!/usr/bin/python3
"""Exports the demo repository's ONNX models from small PyTorch networks.

    /usr/bin/python3 examples/models-repo/export_onnx.py OUT_DIR [--variant N]

Writes OUT_DIR/tinyconv.onnx (a small CNN classifier) and
OUT_DIR/kwsmlp.onnx (a keyword-spotting MLP), opset 13, batch dimension
exported as the symbol N.  Weights come from a fixed seed, so the files are
the same on every run; --variant changes the seed of tinyconv only (the
demo's "retrained model" commit).  Generated, never committed.
"""
import os
import sys

import torch


class TinyConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class KwsMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(40, 64)
        self.l2 = torch.nn.Linear(64, 12)

    def forward(self, x):
        return torch.softmax(self.l2(torch.tanh(self.l1(x))), dim=1)


def export(model, shape, path, seed):
    torch.manual_seed(seed)
    for p in model.parameters():
        torch.nn.init.uniform_(p, -0.3, 0.3)
    model.eval()
    x = torch.randn(*shape)
    torch.onnx.export(model, x, path, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})


def main():
    out = sys.argv[1]
    variant = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--variant" else 0
    os.makedirs(out, exist_ok=True)
    export(TinyConv(), (1, 1, 28, 28), os.path.join(out, "tinyconv.onnx"), 100 + variant)
    export(KwsMlp(), (1, 40), os.path.join(out, "kwsmlp.onnx"), 200)


if __name__ == "__main__":
    main()
