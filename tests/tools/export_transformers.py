#!/usr/bin/python3
"""Exports the transformer / dynamic-shape corpus of issue 26 with Debian's
torch 1.13 and random weights (no download), plus reference inputs/outputs.

usage: export_transformers.py OUTDIR [small|large|NAME...]

For each model NAME it writes OUTDIR/NAME.onnx and, for each shape tried,
OUTDIR/NAME.<k>.in<i>.npy and OUTDIR/NAME.<k>.out0.npy (PyTorch's output).
"small" models are sized for `make test`; "large" ones (ViT-B/16, Swin-T)
for `make conformance`/bench.  CUVIL_EXPORT_SEED (default 0) seeds the
weights: another seed is the same model retrained (bench/cache)."""
import os
import sys

import numpy as np
import torch
from torch import nn

torch.manual_seed(int(os.environ.get("CUVIL_EXPORT_SEED", "0")))


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
    """Conv1d stem (stride 2) + LSTM (or a bidirectional GRU) over a dynamic
    number of frames."""

    def __init__(self, feats=16, hidden=24, gru=False):
        super().__init__()
        self.conv = nn.Conv1d(feats, hidden, 3, stride=2, padding=1)
        self.lstm = (nn.GRU(hidden, hidden, batch_first=True, bidirectional=True) if gru
                     else nn.LSTM(hidden, hidden, batch_first=True))
        self.out = nn.Linear(2 * hidden if gru else hidden, 10)

    def forward(self, x):              # x: [N, feats, frames]
        y = torch.relu(self.conv(x)).transpose(1, 2)
        y, _ = self.lstm(y)
        return self.out(y)


class GptBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))


class GptDecode(nn.Module):
    """One GPT-2-style decode step with a key/value cache of dynamic past
    length P: ids [N, 1], past_k/past_v [layers, N, heads, P, d/heads] ->
    logits [N, 1, vocab], present_k/present_v [layers, N, heads, P+1, d/heads].
    Positions are arange(P, P+1) into a 64-row table; attention by hand."""

    def __init__(self, vocab=100, d=32, heads=4, layers=2, max_len=64):
        super().__init__()
        self.d, self.heads = d, heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList([GptBlock(d, heads) for _ in range(layers)])
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids, past_k, past_v):
        n, t, p = ids.shape[0], ids.shape[1], past_k.shape[3]
        x = self.tok(ids) + self.pos(torch.arange(p, p + t).unsqueeze(0))
        hd = self.d // self.heads
        pk, pv = [], []
        for i, blk in enumerate(self.blocks):
            q, k, v = blk.qkv(blk.ln1(x)).split(self.d, dim=2)
            q, k, v = [z.reshape(n, t, self.heads, hd).transpose(1, 2) for z in (q, k, v)]
            k = torch.cat([past_k[i], k], dim=2)
            v = torch.cat([past_v[i], v], dim=2)
            pk.append(k)
            pv.append(v)
            att = torch.softmax(q @ k.transpose(-2, -1) / hd ** 0.5, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(n, t, self.d)
            x = x + blk.proj(y)
            x = x + blk.mlp(blk.ln2(x))
        return self.head(self.lnf(x)), torch.stack(pk), torch.stack(pv)


class CausalCache(nn.Module):
    """nanoGPT-style causal self-attention over T new tokens past a cache of
    P: the mask is the slice bias[:, :, P:P+T, :P+T] of a 64x64 lower
    triangle, applied with masked_fill (symbolic T and P)."""

    def __init__(self, d=32, heads=4, max_len=64):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        tril = torch.tril(torch.ones(max_len, max_len))
        self.register_buffer("bias", tril.view(1, 1, max_len, max_len))

    def forward(self, x, past_k, past_v):
        b, t, c = x.shape
        p = past_k.shape[2]
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = [z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v)]
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.h) ** 0.5)
        att = att.masked_fill(self.bias[:, :, p:p + t, :p + t] == 0, float("-inf"))
        y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


def causal_case(n, t, p):
    return [("x", "float", (n, t, 32)), ("past_k", "float", (n, 4, p, 8)),
            ("past_v", "float", (n, 4, p, 8))]


def gpt_case(n, p, layers=2, heads=4, hd=8):
    past = (layers, n, heads, p, hd)
    return [("ids", "int", (n, 1)), ("past_k", "float", past), ("past_v", "float", past)]


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
        "speech_lstm": (Speech(), [("x", "float", (1, 16, 20)), ("x", "float", (2, 16, 37)),
                                   ("x", "float", (1, 16, 1)), ("x", "float", (3, 16, 64))],
                        {"x": {0: "N", 2: "frames"}}, 14),
        "speech_gru": (Speech(gru=True), [("x", "float", (1, 16, 20)), ("x", "float", (2, 16, 37)),
                                          ("x", "float", (1, 16, 3))],
                       {"x": {0: "N", 2: "frames"}}, 14),
        "gpt_decode": (GptDecode(), [gpt_case(1, 0), gpt_case(1, 5), gpt_case(2, 17),
                                     gpt_case(1, 63)],
                       {"ids": {0: "N"}, "past_k": {1: "N", 3: "P"},
                        "past_v": {1: "N", 3: "P"}}, 14),
        "gpt_causal": (CausalCache(), [causal_case(2, 9, 3), causal_case(1, 1, 0),
                                       causal_case(1, 1, 12), causal_case(1, 30, 20)],
                       {"x": {0: "N", 1: "T"}, "past_k": {0: "N", 2: "P"},
                        "past_v": {0: "N", 2: "P"}}, 14),
    }
    large = {
        "vit_b_16": (vit_b_16(),
                     [("x", "float", (1, 3, 224, 224))], None, 14),
        "swin_t": (torchvision.models.swin_t(weights=None),
                   [("x", "float", (1, 3, 224, 224))], None, 14),
        # GPT-2-small-sized decode step over a dynamic past (cuvil bench --dim P=...).
        "gpt2_decode": (GptDecode(vocab=50257, d=768, heads=12, layers=12, max_len=1024),
                        [gpt_case(1, 128, 12, 12, 64), gpt_case(1, 16, 12, 12, 64),
                         gpt_case(1, 512, 12, 12, 64)],
                        {"ids": {0: "N"}, "past_k": {1: "N", 3: "P"},
                         "past_v": {1: "N", 3: "P"}}, 14),
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


def make_inputs(rng, case):
    """One shape case: a list of (name, kind, shape), or one such tuple."""
    if isinstance(case, tuple):
        case = [case]
    ins = []
    for (_, kind, shape) in case:
        if kind == "int":
            ins.append(torch.from_numpy(rng.integers(0, 100, size=shape).astype(np.int64)))
        else:
            ins.append(torch.from_numpy(rng.standard_normal(shape).astype(np.float32)))
    return [c[0] for c in case], ins


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (m, shapes, dyn, opset) in models(sys.argv[2:] or ["small"]).items():
        m.eval()
        rng = np.random.default_rng(1)
        cases = [make_inputs(rng, c) for c in shapes]
        names = cases[0][0]
        path = os.path.join(out, name + ".onnx")
        # Outside no_grad, and ViT in train mode (its dropouts are 0): torch's
        # fused encoder / multi-head-attention fast paths do not export.
        train = name.startswith("vit")
        m.train(train)
        # Exported from the largest case: torch 1.13 folds a zero-length past.
        big = max(range(len(cases)), key=lambda k: sum(x.numel() for x in cases[k][1]))
        outs = m(*cases[big][1])
        n_out = len(outs) if isinstance(outs, tuple) else 1
        out_names = ["y"] if n_out == 1 else ["y"] + ["out%d" % i for i in range(1, n_out)]
        torch.onnx.export(m, tuple(cases[big][1]), path, input_names=names,
                          output_names=out_names, opset_version=opset, dynamic_axes=dyn,
                          training=torch.onnx.TrainingMode.PRESERVE)
        m.eval()
        with torch.no_grad():
            for k, (_, ins) in enumerate(cases):
                for i, x in enumerate(ins):
                    np.save(os.path.join(out, "%s.%d.in%d.npy" % (name, k, i)), x.numpy())
                res = m(*ins)
                for j, y in enumerate(res if isinstance(res, tuple) else (res,)):
                    np.save(os.path.join(out, "%s.%d.out%d.npy" % (name, k, j)), y.numpy())
        print("exported", path, [[tuple(x.shape) for x in ins] for _, ins in cases])


if __name__ == "__main__":
    main()
