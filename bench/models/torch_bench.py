"""PyTorch eager latency of a torchvision model (random weights, batch 1).

usage: torch_bench.py MODEL THREADS ITERS -> prints the median in ms
"""
import sys
import time

import torch
import torchvision

name, threads, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
model = getattr(torchvision.models, name)(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
with torch.no_grad():
    for _ in range(5):
        model(x)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        model(x)
        times.append((time.perf_counter() - t0) * 1e3)
times.sort()
print("%.3f" % times[len(times) // 2])
