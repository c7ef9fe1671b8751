#!/usr/bin/python3
"""The model zoo benchmark (issue 30): torchvision classification models of
every family, exported with Debian's torch 1.13 (weights=None, fixed seed,
BatchNorm statistics randomised so that no normalisation is an identity),
each compiled cold by Cuvil (-O2 -t native, --no-cache), checked against
what PyTorch computes for the same input, then timed against ONNX Runtime
1.20.1 (all graph optimisations, onnxruntime-node) and PyTorch eager at 1
and 2 threads.  Each round measures the three engines one after another
(alternating, so a burst of load from elsewhere hits all of them); every
engine keeps its lowest median over the rounds.

    /usr/bin/python3 bench/models/zoo.py [--models a,b] [--rounds R] [--iters K]
        [--threads 1,2] [--precision fp32] [--json OUT] [--base CUVIL] [--engines LIST]

--base CUVIL times a second cuvil binary (an earlier build: copy build/cuvil
and build/lib/cuvil/libcv_llvm.so into DIR and DIR/lib/cuvil) in the same
rounds and adds the column cuvil/base: a change is measured against what it
replaces under the same load.  --engines picks among cuvil,base,ort,torch.

Exports are cached in $BUILD/zoo (BUILD defaults to build), so a rerun only
compiles and times.  Prints one table per thread count with the ratios
Cuvil/ORT and Cuvil/PyTorch (below 1: Cuvil is faster), their geometric
means and the load average.  Needs build/cuvil; ONNX Runtime needs
node_modules/onnxruntime-node or NODE_PATH (its columns are '-' without).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

# (model, input side).  Every family issue 30 names that torchvision 0.14
# has; inception_v3 wants 299x299 inputs.
ZOO = [
    ("resnet18", 224), ("resnet34", 224), ("resnet50", 224),
    ("resnext50_32x4d", 224), ("wide_resnet50_2", 224),
    ("mobilenet_v2", 224), ("mobilenet_v3_small", 224), ("mobilenet_v3_large", 224),
    ("efficientnet_b0", 224), ("efficientnet_b1", 240), ("efficientnet_b2", 260),
    ("efficientnet_b3", 300), ("efficientnet_v2_s", 384),
    ("mnasnet0_5", 224), ("mnasnet1_0", 224),
    ("shufflenet_v2_x0_5", 224), ("shufflenet_v2_x1_0", 224),
    ("squeezenet1_0", 224), ("squeezenet1_1", 224),
    ("densenet121", 224), ("googlenet", 224), ("inception_v3", 299),
    ("regnet_x_400mf", 224), ("regnet_y_400mf", 224),
    ("convnext_tiny", 224), ("vgg11", 224),
]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def randomise_bn(model, gen):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def load_model(name):
    torch.manual_seed(0)
    kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, name)(weights=None, **kw).eval()
    with torch.no_grad():
        randomise_bn(model, torch.Generator().manual_seed(1))
    return model


def export(name, side, zoo):
    """Writes zoo/NAME.onnx, .input.npy, .output.npy unless they exist."""
    onnx = os.path.join(zoo, name + ".onnx")
    model = load_model(name)
    if os.path.exists(onnx):
        return model
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(1, 3, side, side, generator=gen)
    with torch.no_grad():
        y = model(x)
        torch.onnx.export(model, x, onnx + ".tmp", opset_version=13, input_names=["input"],
                          output_names=["output"])
    np.save(os.path.join(zoo, name + ".input.npy"), x.numpy())
    np.save(os.path.join(zoo, name + ".output.npy"), y.numpy())
    os.replace(onnx + ".tmp", onnx)
    return model


def sh(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def compile_cuvil(cuvil, name, zoo, precision, extra, tag):
    out = os.path.join(zoo, "%s.%s.%s" % (name, precision, tag))
    t0 = time.perf_counter()
    sh([cuvil, "compile", os.path.join(zoo, name + ".onnx"), "-O2", "-t", "native", "-p", precision,
        "-o", out, "--emit", "so", "--no-cache"] + extra)
    return out, time.perf_counter() - t0


def check(cuvil, art, name, zoo):
    """Max |cuvil - torch| over the output's range (the tests' measure)."""
    odir = art + ".out"
    sh([cuvil, "run", art, "--input", "input=" + os.path.join(zoo, name + ".input.npy"),
        "--output", odir])
    got = np.load(os.path.join(odir, "output.npy")).astype(np.float64)
    want = np.load(os.path.join(zoo, name + ".output.npy")).astype(np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.abs(got - want).max() / max(1.0, want.max() - want.min()))


def time_cuvil(cuvil, art, threads, iters):
    j = json.loads(sh([cuvil, "bench", art, "--threads", str(threads), "--iters", str(iters),
                       "--warmup", "3", "--json"]))
    return j["p50_ms"]


def time_ort(onnx, side, threads, iters, env):
    try:
        return float(sh(["node", os.path.join(ROOT, "bench/models/ort_bench.js"), onnx,
                         str(threads), str(iters), str(side)], env=env))
    except (subprocess.CalledProcessError, ValueError, FileNotFoundError):
        return float("nan")


def time_torch(model, side, threads, iters):
    """At most iters runs and about 2 s after warm-up: eager PyTorch is the
    slowest engine here by far, and its median settles early."""
    torch.set_num_threads(threads)
    x = torch.randn(1, 3, side, side)
    t = []
    with torch.no_grad():
        for i in range(iters + 3):
            t0 = time.perf_counter()
            model(x)
            t.append((time.perf_counter() - t0) * 1e3)
            if i >= 5 and sum(t[3:]) > 2000:
                break
    t = sorted(t[3:])
    return t[len(t) // 2]


def geomean(v):
    v = [a for a in v if a == a and a > 0 and a != float("inf")]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def ort_env():
    env = dict(os.environ)
    for d in (os.path.join(ROOT, "node_modules"), "/work/wt/lead/node_modules"):
        if os.path.exists(os.path.join(d, "onnxruntime-node")):
            env["NODE_PATH"] = d + (":" + env["NODE_PATH"] if env.get("NODE_PATH") else "")
            return env
    return env if env.get("NODE_PATH") else None


def fmt(v, f="%.2f"):
    return f % v if v == v and v != float("inf") else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(m for m, _ in ZOO))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--json")
    ap.add_argument("--base")
    ap.add_argument("--engines", default="cuvil,base,ort,torch")
    a = ap.parse_args()
    build = os.path.join(ROOT, os.environ.get("BUILD", "build"))
    cuvil = os.environ.get("CUVIL", os.path.join(build, "cuvil"))
    engines = a.engines.split(",")
    if not a.base and "base" in engines:
        engines.remove("base")
    zoo = os.path.join(build, "zoo")
    os.makedirs(zoo, exist_ok=True)
    sides = dict(ZOO)
    names = [m for m in a.models.split(",") if m]
    threads = [int(t) for t in a.threads.split(",")]
    env = ort_env()
    load0 = open("/proc/loadavg").read().split()[:3]
    rows = {}
    for name in names:
        side = sides.get(name, 224)
        try:
            model = export(name, side, zoo)
        except Exception as e:  # a model this torch cannot export
            print("%s: cannot export: %s" % (name, str(e).splitlines()[0][:200]), file=sys.stderr)
            continue
        r = rows[name] = {"side": side}
        arts = {}
        for eng, binary in (("cuvil", cuvil), ("base", a.base)):
            if eng not in engines:
                continue
            if eng == "base":
                binary = os.path.join(binary, "cuvil")
            try:
                arts[eng], cs = compile_cuvil(binary, name, zoo, a.precision, [], eng)
                err = check(binary, arts[eng], name, zoo)
            except subprocess.CalledProcessError as e:
                print("%s: %s failed: %s" % (name, eng, e.stderr.strip()[-400:]), file=sys.stderr)
                cs, err = float("nan"), float("inf")
            r["compile_s" if eng == "cuvil" else "base_compile_s"] = cs
            r["err" if eng == "cuvil" else "base_err"] = err
        onnx = os.path.join(zoo, name + ".onnx")
        for th in threads:
            best = {e: float("inf") for e in ("cuvil", "base", "ort", "torch")}
            for _ in range(a.rounds):
                for eng in engines:
                    if eng in arts:
                        v = time_cuvil(cuvil if eng == "cuvil" else os.path.join(a.base, "cuvil"),
                                       arts[eng], th, a.iters)
                    elif eng == "ort" and env:
                        v = time_ort(onnx, side, th, a.iters, env)
                    elif eng == "torch":
                        v = time_torch(model, side, th, a.iters)
                    else:
                        v = float("nan")
                    best[eng] = min(best[eng], v) if v == v else float("nan")
            r[th] = {e: v if v != float("inf") else float("nan") for e, v in best.items()}
        print("%-20s %s  (compile %.1f s, err %.1e)" % (name, "  ".join(
            "%dt: %s" % (th, " ".join("%s %.2f" % (e, r[th][e]) for e in engines)) for th in threads),
            r.get("compile_s", float("nan")), r.get("err", float("inf"))), file=sys.stderr, flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    print("precision %s, batch 1, best of %d rounds of %d runs (median), Cuvil -O2 -t native"
          % (a.precision, a.rounds, a.iters))
    print("load average before %s, after %s" % (" ".join(load0), " ".join(load1)))
    for th in threads:
        print("\n%d thread%s" % (th, "s" if th > 1 else ""))
        print("| model | cuvil ms | base ms | ort ms | torch ms | cuvil/ort | cuvil/torch | cuvil/base "
              "| compile s | max err |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        ro, rt, rb = [], [], []
        for name, r in rows.items():
            c, b, o, t = (r[th][e] for e in ("cuvil", "base", "ort", "torch"))
            ro.append(c / o)
            rt.append(c / t)
            rb.append(c / b)
            err = r.get("err", float("inf"))
            bad = "" if err <= 1e-3 else " MISMATCH"
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1e%s |" % (
                name, fmt(c), fmt(b), fmt(o), fmt(t), fmt(ro[-1]), fmt(rt[-1]), fmt(rb[-1]),
                fmt(r.get("compile_s", float("nan")), "%.1f"), err, bad))
        print("| geometric mean | | | | | %s | %s | %s | | |" % (
            fmt(geomean(ro)), fmt(geomean(rt)), fmt(geomean(rb))))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"load_before": load0, "load_after": load1, "precision": a.precision,
                       "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
