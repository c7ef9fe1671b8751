"""PyTorch eager latency of a model of tests/tools/export_transformers_static.py
(the same module, seed and inputs as the export), or of torchvision's vit_b_16.

usage: torch_tbench.py NAME THREADS ITERS -> prints the median in ms
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "tools"))
import export_transformers_static as ets  # noqa: E402

name, threads, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)
if name == "vit_b_16":     # tests/tools/export_transformers.py's (torchvision, random weights)
    import torchvision
    model, inputs = torchvision.models.vit_b_16(weights=None), (torch.randn(1, 3, 224, 224),)
else:
    model, inputs, _, _ = ets.MODELS[name]()
model.eval()
with torch.no_grad():
    for _ in range(3):
        model(*inputs)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        model(*inputs)
        times.append((time.perf_counter() - t0) * 1e3)
times.sort()
print("%.3f" % times[len(times) // 2])
