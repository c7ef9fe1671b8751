#!/usr/bin/env python3
"""PyTorch on the GPU for a GPU test bundle (make gpu-bundle GPU_TORCHVISION=...).

    python3 bench/gpu/torch_ref.py BUNDLE_DIR [--iters N]

For each torchvision case NAME of the bundle that has a NAME_b32 case:
rebuilds the model the way tests/tools/export_torchvision.py does (same
seeds), checks that on this GPU it reproduces the exported batch-1 input and
PyTorch's batch-1 output (so the weights are the artifact's), writes
NAME_b32/in0.bin (a fixed random batch of 32) and NAME_b32/want0.bin
(PyTorch's fp32 output on the GPU, TF32 off), and times PyTorch eager at
batch 1 and 32: lines 'torch NAME bB fp32 MS' (TF32 off, the artifact's
precision), 'torch NAME bB tf32 MS' (cuDNN's default TF32 convolutions) and
'torch NAME bB fp16 MS' (the model and input in half precision, tensor
cores), medians of CUDA-event timings after warm-up.  NAME_fp16 cases (fp16
weights) use NAME_b32's data.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "tools"))
import export_torchvision  # noqa: E402  (randomise_bn, the export's seeds)


def build(name):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    import torchvision
    model = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        export_torchvision.randomise_bn(model, gen)
        x = torch.randn(1, 3, 224, 224, generator=gen)
    return model, x


def median_ms(model, x, iters):
    with torch.no_grad():
        for _ in range(5):
            model(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            model(x)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def one(bundle, name, iters):
    d1, d32 = os.path.join(bundle, name), os.path.join(bundle, name + "_b32")
    model, x = build(name)
    x_saved = np.fromfile(os.path.join(d1, "in0.bin"), dtype=np.float32).reshape(1, 3, 224, 224)
    y_saved = np.fromfile(os.path.join(d1, "want0.bin"), dtype=np.float32)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = model.to(dev)
    with torch.no_grad():
        y1 = model(torch.from_numpy(x_saved).to(dev)).float().cpu().numpy().ravel()
    same_x = np.array_equal(x.numpy(), x_saved)
    err1 = float(np.abs(y1 - y_saved).max())
    print("torchref %s: batch-1 input %s the export's; GPU output vs the export's CPU output: "
          "max abs error %.3g" % (name, "equals" if same_x else "DIFFERS FROM", err1))
    if err1 > 1e-3:
        print("torchref %s: this torchvision builds other weights; no batch-32 reference" % name)
        return
    gen = torch.Generator().manual_seed(32)
    x32 = torch.randn(32, 3, 224, 224, generator=gen)
    with torch.no_grad():
        y32 = model(x32.to(dev)).float().cpu().numpy()
    x32.numpy().astype(np.float32).tofile(os.path.join(d32, "in0.bin"))
    y32.astype(np.float32).tofile(os.path.join(d32, "want0.bin"))
    for batch, inp in ((1, torch.from_numpy(x_saved)), (32, x32)):
        inp = inp.to(dev)
        for mode, tf32 in (("fp32", False), ("tf32", True)):
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            print("torch %s b%d %s %.4f" % (name, batch, mode, median_ms(model, inp, iters)))
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    half = model.half()
    for batch, inp in ((1, torch.from_numpy(x_saved)), (32, x32)):
        print("torch %s b%d fp16 %.4f" % (name, batch, median_ms(half, inp.to(dev).half(), iters)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torchref: no CUDA device for PyTorch")
    print("torchref: torch %s on %s" % (torch.__version__, torch.cuda.get_device_name(0)))
    with open(os.path.join(a.bundle, "cases.txt")) as f:
        cases = [c.strip() for c in f if c.strip()]
    for c in cases:
        if c + "_b32" in cases and not c.endswith("_fp16"):
            one(a.bundle, c, a.iters)


if __name__ == "__main__":
    main()
