#!/usr/bin/python3
"""Exports statically shaped transformers to ONNX (opset 14) for the tests
and bench/models (issue 26).

    /usr/bin/python3 tests/tools/export_transformers_static.py OUT_DIR [NAME...]

Models (random weights from a fixed seed, batch 1):
  bert_tiny   2 layers, d=64, 4 heads, sequence 16 (make test)
  gpt_tiny    2 layers, d=64, 4 heads, decode step with an 8-token past (make test)
  gptc_tiny   2 layers, d=64, 4 heads, causal full sequence of 16 (make test)
  bert_base   12 layers, d=768, 12 heads, sequence 128 (bench/models)
  gpt2_step   12 layers, d=768, 12 heads, vocabulary 50257, one decode step
              with a 128-token past key/value cache as inputs (bench/models)
Attention is written by hand (MatMul / Div / Add / Softmax / MatMul over the
[B, H, S, Dh] multi-head layout) as exporters emit it for BERT and GPT-2;
LayerNorm exports decomposed at opset 14; BERT's GELU is the erf form and
GPT-2's the tanh form.  Writes OUT_DIR/<name>.onnx, <name>.in<i>.npy for
each input and <name>.out<i>.npy for each output (what PyTorch computes);
tests/unit/compiler-core/test_transformer_models.c and bench/models/transformers.sh check
Cuvil against those.
Generated data, never committed.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.bias = nn.Parameter(0.1 * torch.randn(d))

    def forward(self, x):
        return nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, 1e-5)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def split_heads(x, h):
    b, s, d = x.shape
    return x.view(b, s, h, d // h).permute(0, 2, 1, 3)


def merge_heads(x):
    b, h, s, dh = x.shape
    return x.permute(0, 2, 1, 3).reshape(b, s, h * dh)


class BertLayer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = LayerNorm(d), LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, mask):
        q, k, v = (split_heads(f(x), self.h) for f in (self.q, self.k, self.v))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        p = torch.softmax(s + mask, dim=-1)
        x = self.ln1(x + self.o(merge_heads(torch.matmul(p, v))))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Bert(nn.Module):
    def __init__(self, layers, d, h, vocab=1000, max_pos=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.ln = LayerNorm(d)
        self.layers = nn.ModuleList(BertLayer(d, h) for _ in range(layers))

    def forward(self, ids, attention_mask):
        s = ids.shape[1]
        x = self.ln(self.tok(ids) + self.pos.weight[:s].unsqueeze(0))
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class GptBlock(nn.Module):
    def __init__(self, d, h, causal_len=0):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = LayerNorm(d), LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        if causal_len:
            self.register_buffer("bias", torch.tril(torch.ones(causal_len, causal_len, dtype=torch.bool))
                                 .view(1, 1, causal_len, causal_len))

    def forward(self, x, past_k=None, past_v=None):
        d = x.shape[-1]
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (split_heads(t, self.h) for t in (q, k, v))
        if past_k is not None:
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if past_k is None:
            s = q.shape[-2]
            w = torch.where(self.bias[:, :, :s, :s], w, torch.tensor(-10000.0))
        a = merge_heads(torch.matmul(torch.softmax(w, dim=-1), v))
        x = x + self.o(a)
        x = x + self.ff2(gelu_tanh(self.ff1(self.ln2(x))))
        return x, k, v


class GptStep(nn.Module):
    """One decode step: a token at position `past` with every layer's past keys and values."""

    def __init__(self, layers, d, h, vocab, past):
        super().__init__()
        self.past = past
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(1024, d)
        self.blocks = nn.ModuleList(GptBlock(d, h) for _ in range(layers))
        self.ln_f = LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids, *past):
        x = self.wte(ids) + self.wpe.weight[self.past:self.past + 1].unsqueeze(0)
        present = []
        for i, blk in enumerate(self.blocks):
            x, k, v = blk(x, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.head(self.ln_f(x)),) + tuple(present)


class GptCausal(nn.Module):
    """The full-sequence (prefill) form: causal self-attention, no cache."""

    def __init__(self, layers, d, h, vocab, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(1024, d)
        self.blocks = nn.ModuleList(GptBlock(d, h, seq) for _ in range(layers))
        self.ln_f = LayerNorm(d)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe.weight[:ids.shape[1]].unsqueeze(0)
        for blk in self.blocks:
            x = blk(x)[0]
        return self.ln_f(x)


def bert(layers, d, h, seq):
    model = Bert(layers, d, h)
    ids = torch.randint(0, 1000, (1, seq))
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, seq - seq // 4:] = 0      # padded tail: the additive mask matters
    return model, (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"]


def gpt_step(layers, d, h, vocab, past):
    model = GptStep(layers, d, h, vocab, past)
    ids = torch.randint(0, vocab, (1, 1))
    pk = [torch.randn(1, h, past, d // h) for _ in range(2 * layers)]
    names = ["input_ids"] + ["past_%s_%d" % (kv, i) for i in range(layers) for kv in ("key", "value")]
    outs = ["logits"] + ["present_%s_%d" % (kv, i) for i in range(layers) for kv in ("key", "value")]
    return model, tuple([ids] + pk), names, outs


def gpt_causal(layers, d, h, vocab, seq):
    model = GptCausal(layers, d, h, vocab, seq)
    return model, (torch.randint(0, vocab, (1, seq)),), ["input_ids"], ["last_hidden_state"]


MODELS = {
    "bert_tiny": lambda: bert(2, 64, 4, 16),
    "gpt_tiny": lambda: gpt_step(2, 64, 4, 500, 8),
    "gptc_tiny": lambda: gpt_causal(2, 64, 4, 500, 16),
    "bert_base": lambda: bert(12, 768, 12, 128),
    "gpt2_step": lambda: gpt_step(12, 768, 12, 50257, 128),
}
SMALL = ("bert_tiny", "gpt_tiny", "gptc_tiny")


def export(name, out_dir):
    torch.manual_seed(0)
    model, inputs, in_names, out_names = MODELS[name]()
    model.eval()
    with torch.no_grad():
        outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    path = os.path.join(out_dir, name + ".onnx")
    tmp = path + ".tmp"
    torch.onnx.export(model, inputs, tmp, opset_version=14, input_names=in_names,
                      output_names=out_names, do_constant_folding=True)
    for i, x in enumerate(inputs):
        np.save(os.path.join(out_dir, "%s.in%d.npy" % (name, i)), x.numpy())
    for i, y in enumerate(outputs):
        np.save(os.path.join(out_dir, "%s.out%d.npy" % (name, i)), y.numpy())
    os.replace(tmp, path)
    y = outputs[0]
    print("exported %s (%d inputs, %d outputs, output 0 range %.3g..%.3g)"
          % (path, len(inputs), len(outputs), y.min(), y.max()))


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: export_transformers_static.py OUT_DIR [NAME...]")
    names = sys.argv[2:] or list(SMALL)
    for n in names:
        if n not in MODELS:
            sys.exit("unknown model %s (one of %s)" % (n, ", ".join(MODELS)))
    os.makedirs(sys.argv[1], exist_ok=True)
    for n in names:
        export(n, sys.argv[1])


if __name__ == "__main__":
    main()
