"""PyTorch reference networks for the DSL equivalence tests.

usage: torch_reference.py MODEL WEIGHTS.safetensors
Builds MODEL (lenet or resblock) with torch.nn, loads the safetensors
weights (the same files the .cvl.py models use), runs a seeded random
input and writes the input then the output to stdout as little-endian
float32 bytes."""
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load(path):
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        arr = np.frombuffer(raw[base + lo:base + hi], dtype="<f4").reshape(t["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


class LeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc = torch.nn.ModuleList([torch.nn.Linear(400, 120), torch.nn.Linear(120, 84)])
        self.out = torch.nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        for layer in self.fc:
            x = F.relu(layer(x))
        return F.softmax(self.out(x), dim=-1)


class ResBlock(torch.nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


def main():
    model, weights = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    net, x = {"lenet": (LeNet, (3, 1, 28, 28)), "resblock": (ResBlock, (2, 16, 8, 8))}[model]
    net = net()
    missing, unexpected = net.load_state_dict(load(weights), strict=False)
    assert not unexpected and all(k.endswith("num_batches_tracked") for k in missing), (missing, unexpected)
    net.eval()
    x = torch.randn(*x)
    with torch.no_grad():
        y = net(x)
    sys.stdout.buffer.write(x.numpy().astype("<f4").tobytes() + y.numpy().astype("<f4").tobytes())


if __name__ == "__main__":
    main()
