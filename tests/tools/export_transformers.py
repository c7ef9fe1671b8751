#!/usr/bin/python3
"""Exports the transformer / dynamic-shape corpus of issue 26 with Debian's
torch 1.13 and random weights (no download), plus reference inputs/outputs.

usage: export_transformers.py OUTDIR [small|large|NAME...]

For each model NAME it writes OUTDIR/NAME.onnx and, for each shape tried,
OUTDIR/NAME.<k>.in<i>.npy and OUTDIR/NAME.<k>.out0.npy (PyTorch's output).
"small" models are sized for `make test`; "large" ones (ViT-B/16, Swin-T)
for `make conformance`/bench."""
import os
import sys

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)


class Bert(nn.Module):
    """BERT-style encoder: token + positional embeddings (positions from
    arange over the symbolic length), nn.TransformerEncoder, batch first."""

    def __init__(self, vocab=100, d=32, heads=4, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        return self.enc(self.tok(ids) + self.pos(pos))


class Speech(nn.Module):
    """Conv1d stem (stride 2) + LSTM over a dynamic number of frames."""

    def __init__(self, feats=16, hidden=24):
        super().__init__()
        self.conv = nn.Conv1d(feats, hidden, 3, stride=2, padding=1)
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):              # x: [N, feats, frames]
        y = torch.relu(self.conv(x)).transpose(1, 2)
        y, _ = self.lstm(y)
        return self.out(y)


def vit_b_16():
    import torchvision
    m = torchvision.models.vit_b_16(weights=None)
    nn.init.normal_(m.heads.head.weight, std=0.02)   # zero-initialised by torchvision
    return m


def models(kind):
    import torchvision
    small = {
        "bert_small": (Bert(), [("ids", "int", (1, 8)), ("ids", "int", (4, 8)),
                                ("ids", "int", (2, 33))],
                       {"ids": {0: "N", 1: "L"}}, 14),
        "speech_lstm": (Speech(), [("x", "float", (1, 16, 20)), ("x", "float", (2, 16, 37))],
                        {"x": {0: "N", 2: "frames"}}, 14),
    }
    large = {
        "vit_b_16": (vit_b_16(),
                     [("x", "float", (1, 3, 224, 224))], None, 14),
        "swin_t": (torchvision.models.swin_t(weights=None),
                   [("x", "float", (1, 3, 224, 224))], None, 14),
        "bert_base": (Bert(vocab=1000, d=768, heads=12, layers=12, max_len=512),
                      [("ids", "int", (1, 8)), ("ids", "int", (1, 128)), ("ids", "int", (4, 128))],
                      {"ids": {0: "N", 1: "L"}}, 14),
    }
    table = dict(small, **large)
    if kind == ["small"]:
        return small
    if kind == ["large"]:
        return large
    return {k: table[k] for k in kind}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (m, shapes, dyn, opset) in models(sys.argv[2:] or ["small"]).items():
        m.eval()
        rng = np.random.default_rng(1)
        ins = []
        for (iname, kind, shape) in shapes:
            if kind == "int":
                ins.append(torch.from_numpy(rng.integers(0, 100, size=shape).astype(np.int64)))
            else:
                ins.append(torch.from_numpy(rng.standard_normal(shape).astype(np.float32)))
        path = os.path.join(out, name + ".onnx")
        # Outside no_grad, and ViT in train mode (its dropouts are 0): torch's
        # fused encoder / multi-head-attention fast paths do not export.
        train = name.startswith("vit")
        m.train(train)
        torch.onnx.export(m, (ins[0],), path, input_names=[shapes[0][0]],
                          output_names=["y"], opset_version=opset, dynamic_axes=dyn,
                          training=torch.onnx.TrainingMode.PRESERVE)
        m.eval()
        with torch.no_grad():
            for k, x in enumerate(ins):
                np.save(os.path.join(out, "%s.%d.in0.npy" % (name, k)), x.numpy())
                np.save(os.path.join(out, "%s.%d.out0.npy" % (name, k)), m(x).numpy())
        print("exported", path, [tuple(x.shape) for x in ins])


if __name__ == "__main__":
    main()
