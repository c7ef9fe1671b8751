#!/usr/bin/python3
"""A BERT-base-sized encoder for bench/cache/retrain.sh: 12 layers, d=768,
12 heads, FFN 3072, vocab 1000, max length 512 (tests/tools/
export_transformers.py's Bert), every parameter drawn afresh from SEED so
that no two layers share weights (nn.TransformerEncoder deep-copies one
layer, and the exporter would write one copy).  Another SEED is the same
model retrained.

    /usr/bin/python3 bench/cache/export_bert.py OUT.onnx SEED"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/tools"))
from export_transformers import Bert  # noqa: E402


def main():
    out, seed = sys.argv[1], int(sys.argv[2])
    torch.manual_seed(seed)
    m = Bert(vocab=1000, d=768, heads=12, layers=12, max_len=512)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape) * 0.02)
    m.train(False)
    ids = torch.randint(0, 1000, (1, 128))
    torch.onnx.export(m, (ids,), out, input_names=["ids"], output_names=["y"], opset_version=14,
                      dynamic_axes={"ids": {0: "N", 1: "L"}})
    print("exported", out, os.path.getsize(out), "bytes")


if __name__ == "__main__":
    main()
