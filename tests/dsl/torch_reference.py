"""PyTorch reference networks for the DSL equivalence tests.

usage: torch_reference.py MODEL WEIGHTS.safetensors [DIM...]
Builds MODEL (lenet, resblock or encoder) with torch.nn, loads the
safetensors weights (the same files the .cvl.py models use), runs a seeded
random input (of shape DIM... when given) and writes the input then the
output to stdout as little-endian float32 bytes."""
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


class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.out = [torch.nn.Linear(d, d) for _ in range(4)]

    def forward(self, x):
        n, length, d = x.shape
        q, k, v = [p(x).view(n, length, self.heads, d // self.heads).transpose(1, 2)
                   for p in (self.q, self.k, self.v)]
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(n, length, d))


class Block(torch.nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.fc1, self.fc2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

    def forward(self, h):
        h = h + self.attn(self.ln1(h))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class Encoder(torch.nn.Module):
    """examples/models/encoder.cvl.py, attention written out."""

    def __init__(self, feats=16, d=32, heads=4, ff=64, out=8, layers=2):
        super().__init__()
        self.proj = torch.nn.Linear(feats, d)
        self.layers = torch.nn.ModuleList([Block(d, heads, ff) for _ in range(layers)])
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, out)

    def forward(self, x):
        h = self.proj(x)
        for blk in self.layers:
            h = blk(h)
        return self.head(self.norm(h))


def main():
    model, weights = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    net, x = {"lenet": (LeNet, (3, 1, 28, 28)), "resblock": (ResBlock, (2, 16, 8, 8)),
              "encoder": (Encoder, (2, 5, 16))}[model]
    x = tuple(int(v) for v in sys.argv[3:]) or x
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
