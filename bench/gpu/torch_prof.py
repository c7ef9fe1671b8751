#!/usr/bin/env python3
"""Where PyTorch eager spends a torchvision model's GPU time, kernel by kernel.

    python3 bench/gpu/torch_prof.py [--model resnet18] [--batch 32] [--iters 10]

For fp32 (TF32 off: the precision of Cuvil's fp32 artifacts), TF32 (cuDNN's
default) and fp16, prints the median eager time (CUDA events), the sum of
the kernels' device time per run (torch.profiler), and the kernels with the
largest share: the figures bench/gpu/ncu_top.py gives for Cuvil's runs.
"""
import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ref import build, median_ms  # noqa: E402


def kernel_times(model, x, iters):
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                model(x)
            torch.cuda.synchronize()
    totals = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            dur = e.device_time if hasattr(e, "device_time") else e.cuda_time
            name = e.name[:90]
            n, t = totals.get(name, (0, 0.0))
            totals[name] = (n + 1, t + dur)
    return totals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    model, _ = build(a.model)
    dev = torch.device("cuda")
    model = model.to(dev)
    x = torch.randn(a.batch, 3, 224, 224, generator=torch.Generator().manual_seed(32)).to(dev)
    for mode in ("fp32", "tf32", "fp16"):
        torch.backends.cudnn.allow_tf32 = mode == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        m, inp = (model.half(), x.half()) if mode == "fp16" else (model.float(), x.float())
        ms = median_ms(m, inp, 40)
        totals = kernel_times(m, inp, a.iters)
        all_us = sum(t for _, t in totals.values()) / a.iters
        print("torchprof %s b%d %s: eager %.3f ms, kernels %.3f ms a run (%d launches)" %
              (a.model, a.batch, mode, ms, all_us / 1000,
               sum(n for n, _ in totals.values()) // a.iters))
        for name in sorted(totals, key=lambda k: totals[k][1], reverse=True)[:a.top]:
            n, t = totals[name]
            print("  %6.1f us %5.1f%% %3d  %s" % (t / a.iters, 100 * t / a.iters / all_us,
                                                n // a.iters, name))


if __name__ == "__main__":
    main()
